"""Fragment bitmaps of ``IndexMetadata.fragment_bitmap`` (spec 004, "IndexMetadata"): the
fragments an index covers, as a portable 32-bit Roaring bitmap.

Shared by :mod:`reference_impl.table.index` (which re-exports these names) and the system
indexes built on it (:mod:`reference_impl.table.fragment_reuse`).
"""

from __future__ import annotations

import numpy as np

from reference_impl.errors import FormatError

#: Largest fragment bitmap (serialized bytes) decoded; a manifest's bitmap of even a million
#: fragments stays far below this.
MAX_BITMAP_BYTES = 64 << 20
#: Largest number of fragment ids materialised from one bitmap.
MAX_BITMAP_IDS = 1 << 26

RULE_BITMAP = "INDEX-006"


def decode_fragment_bitmap(raw: bytes, *, max_ids: int = MAX_BITMAP_IDS,
                           path: str | None = None) -> np.ndarray:
    """The fragment ids of a 32-bit Roaring bitmap in the portable format, sorted, as a
    ``uint32`` array. Empty bytes mean no fragments. Bounded: at most ``MAX_BITMAP_BYTES``
    bytes and ``max_ids`` ids are decoded; anything else raises ``FormatError``
    (INDEX-006)."""
    if not raw:
        return np.zeros(0, dtype=np.uint32)
    if len(raw) > MAX_BITMAP_BYTES:
        raise FormatError(f"fragment bitmap of {len(raw)} bytes exceeds {MAX_BITMAP_BYTES}",
                          rule=RULE_BITMAP, path=path)
    from pyroaring import BitMap

    try:
        bm = BitMap.deserialize(bytes(raw))
    except Exception as exc:  # noqa: BLE001 - pyroaring raises ValueError on bad bytes
        raise FormatError(f"fragment bitmap is not a portable 32-bit Roaring bitmap: {exc}",
                          rule=RULE_BITMAP, path=path) from None
    n = len(bm)
    if n > max_ids:
        raise FormatError(f"fragment bitmap holds {n} ids, above the bound {max_ids}",
                          rule=RULE_BITMAP, path=path)
    return np.asarray(bm.to_array(), dtype=np.uint32) if n else np.zeros(0, dtype=np.uint32)


def encode_fragment_bitmap(ids) -> bytes:
    """The portable 32-bit Roaring serialization of ``ids`` (pyroaring, run-optimised as
    pylance writes after compaction)."""
    from pyroaring import BitMap

    bm = BitMap(np.asarray(ids, dtype=np.uint32).tolist())
    bm.run_optimize()
    return bm.serialize()
