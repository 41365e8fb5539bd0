"""Fragments and data files (spec 001 "Fragments", "Data Files"; FACTS §A).

A ``DataFragment`` has an id, ``physical_rows`` (rows in its data files, deleted ones
included), its data files (each covering some field ids) and an optional deletion file
whose ``num_deleted_rows`` counts the deleted offsets. The rows a reader sees are
``physical_rows - num_deleted_rows``.

A row address is ``(fragment_id << 32) | offset``, ``offset`` the row's position in the
fragment. Without stable row ids the row id equals the row address.

``DataFile.file_major_version``/``file_minor_version`` name the file format:
(0,0), (0,1), (0,2) are the legacy format "0.1"; (0,3) and (2,0) are "2.0"; then
(2,1) "2.1", (2,2) "2.2", (2,3) "2.3".
"""

from __future__ import annotations

import numpy as np

ROW_OFFSET_BITS = 32
ROW_OFFSET_MASK = (1 << 32) - 1


def num_deleted_rows(frag) -> int:
    """Rows the fragment's deletion file removes (0 without one)."""
    return frag.deletion_file.num_deleted_rows if frag.HasField("deletion_file") else 0


def logical_rows(frag) -> int:
    """Rows a reader sees: physical rows minus deleted rows."""
    return frag.physical_rows - num_deleted_rows(frag)


def row_address(fragment_id: int, offset: int) -> int:
    """``(fragment_id << 32) | offset``."""
    return (int(fragment_id) << ROW_OFFSET_BITS) | int(offset)


def row_addresses(fragment_id: int, offsets) -> np.ndarray:
    """Vectorised :func:`row_address` over an array of offsets (uint64)."""
    offs = np.asarray(offsets, dtype=np.uint64)
    return (np.uint64(fragment_id) << np.uint64(ROW_OFFSET_BITS)) | offs


def split_row_address(addr: int) -> tuple[int, int]:
    """``(fragment_id, offset)`` of a row address."""
    return int(addr) >> ROW_OFFSET_BITS, int(addr) & ROW_OFFSET_MASK


def data_file_version(df) -> str:
    """The file-format version a DataFile's major/minor pair names ("0.1", "2.0", "2.1"...)."""
    pair = (df.file_major_version, df.file_minor_version)
    if pair in ((0, 0), (0, 1), (0, 2)):
        return "0.1"
    if pair in ((0, 3), (2, 0)):
        return "2.0"
    return f"{pair[0]}.{pair[1]}"


def is_legacy_data_file(df) -> bool:
    return data_file_version(df) == "0.1"
