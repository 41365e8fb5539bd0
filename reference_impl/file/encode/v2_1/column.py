"""2.1 / 2.2 columns of one top-level field: one column per leaf, pages per leaf.

Field ids are handed out to every field in pre-order (parents too), but only leaves
(primitives, strings, fixed-size lists) get columns. For each flushed run of rows
every leaf is shredded into rep/def levels and visible values (:mod:`.repdef`), cut
into pages of at most :data:`MAX_LEVELS_PER_PAGE` level slots at row boundaries, and
each page is encoded with the layout :mod:`reference_impl.file.selection` picks. Page
``length`` is the number of top-level rows and ``priority`` the first row.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pyarrow as pa

from ....errors import UnsupportedFeature
from ... import selection
from ..arrow_data import fixed_bits, is_variable_width, variable_parts
from ..page import EncodedPage, pack_any
from .bitpacking import InlineBitpackedValues
from .constant import constant_value, encode_all_null, encode_constant
from .dictionary import build_dictionary
from .fixed_size_list import FixedSizeListValues
from .flat import FlatValues
from .full_zip import encode_full_zip
from .mini_block import encode_mini_block
from .repdef import Shredded, leaf_paths, row_starts, shred, slice_levels
from .rle import RleValues, run_count
from .variable import VariableValues

# Pages carrying levels are cut at row boundaries to at most this many level slots, so
# raw u16 levels of a chunk stay well inside a 32 KiB mini-block chunk (pylance cuts at
# 65,535 levels; any cut at row boundaries decodes).
MAX_LEVELS_PER_PAGE = 4096


def _assign_ids(f: pa.Field, ids: Iterator[int], leaves: list[int]) -> None:
    fid = next(ids)
    t = f.type
    if pa.types.is_struct(t):
        for i in range(t.num_fields):
            _assign_ids(t.field(i), ids, leaves)
    elif pa.types.is_list(t) or pa.types.is_large_list(t):
        _assign_ids(t.value_field, ids, leaves)
    else:
        if pa.types.is_null(t):
            raise UnsupportedFeature("the null type is not written by this writer")
        if pa.types.is_fixed_size_list(t) and not (
            pa.types.is_integer(t.value_type) or pa.types.is_floating(t.value_type)
        ):
            raise UnsupportedFeature(
                f"2.1+ writer supports fixed_size_list of numbers only, not {t}"
            )
        leaves.append(fid)


def value_encoder(values: pa.Array):
    """The mini-block value encoder for a page's visible values (selection rule 3/4)."""
    t = values.type
    if is_variable_width(t):
        return VariableValues(values)
    if pa.types.is_fixed_size_list(t):
        return FixedSizeListValues(values)
    if RleValues.applicable(values) and run_count(values) < selection.RLE_MAX_RUN_RATIO * len(
        values
    ):
        return RleValues(values)
    if InlineBitpackedValues.applicable(values):
        packed = InlineBitpackedValues(values)
        if packed.saves_space():
            return packed
    return FlatValues(values)


def max_value_bytes(values: pa.Array) -> int:
    if is_variable_width(values.type):
        offsets, _ = variable_parts(values)
        return int(np.diff(offsets).max()) if len(values) else 0
    return (fixed_bits(values.type) + 7) // 8


def encode_leaf_page(sh: Shredded, version: str) -> tuple[list[bytes], object]:
    values = sh.values
    if len(values) == values.null_count:
        return encode_all_null(sh)
    if version != "2.1":
        value = constant_value(values) if selection.maybe_constant(values) else None
        if value is not None:
            return encode_constant(sh, value)
    if max_value_bytes(values) >= selection.FULL_ZIP_MIN_VALUE_BYTES:
        return encode_full_zip(sh)
    raw = (
        variable_parts(values)[1].nbytes
        if is_variable_width(values.type)
        else len(values) * max_value_bytes(values)
    )
    if selection.use_dictionary_v2_1(values, version, raw):
        indices, block, enc, n_items = build_dictionary(values, version)
        return encode_mini_block(sh, value_encoder(indices), version, (block, enc, n_items))
    return encode_mini_block(sh, value_encoder(values), version)


class FieldEncoder21:
    """Encodes pages for the leaf columns of one top-level field (2.1 / 2.2)."""

    def __init__(self, f: pa.Field, ids: Iterator[int], version: str) -> None:
        self.version = version
        self.column_field_ids: list[int] = []
        _assign_ids(f, ids, self.column_field_ids)
        self.paths = leaf_paths(f.type)
        self.first_column = 0

    def encode(self, arr: pa.Array, first_row: int) -> list[tuple[int, EncodedPage]]:
        out = []
        for col, path in enumerate(self.paths):
            sh = shred(arr, path)
            for page_sh, row0 in self._pages(sh):
                buffers, layout = encode_leaf_page(page_sh, self.version)
                out.append(
                    (
                        col,
                        EncodedPage(
                            buffers, page_sh.num_rows, pack_any(layout), first_row + row0, layout
                        ),
                    )
                )
        return out

    def _pages(self, sh: Shredded):
        """Cut a shredded run of rows into pages of at most MAX_LEVELS_PER_PAGE level slots
        (at least one row each), at row boundaries."""
        if (sh.rep is None and sh.deff is None) or sh.num_levels <= MAX_LEVELS_PER_PAGE:
            yield sh, 0
            return
        starts = row_starts(sh)
        ends = np.append(starts[1:], sh.num_levels)  # level after each row's last slot
        visible_before = np.concatenate([[0], np.cumsum(sh.visible, dtype=np.int64)])
        nrows = len(starts)
        row = 0
        while row < nrows:
            lo = int(starts[row])
            end_row = int(np.searchsorted(ends, lo + MAX_LEVELS_PER_PAGE, side="right"))
            end_row = min(max(end_row, row + 1), nrows)
            hi = int(ends[end_row - 1])
            yield slice_levels(sh, lo, hi, row, end_row, int(visible_before[lo])), row
            row = end_row

    def finish(self, num_rows: int) -> list[tuple[int, EncodedPage]]:
        return []
