"""Structural dictionary in a mini-block page (FILE-ENCODINGS §3.2 "Buffer 2, dictionary").

``MiniBlockLayout.dictionary`` describes page buffer 2, the whole dictionary as one
block: ``variable{offsets flat 32}`` for strings (§4.7 block form) or ``flat 128`` /
``flat 64`` for fixed width; in 2.2 that block is wrapped in ``general{LZ4}`` (or the
scheme ``lance-encoding:dict-values-compression`` names; ``none``: no wrapper).
``num_dictionary_items`` counts the items. The chunk values are then 0-based i32
indices into the items, bit-packed like any 32-bit integers; null slots carry index 0
(their def level marks them null). An Arrow ``dictionary<...>`` field's pages use
:func:`arrow_dictionary`: its own dictionary and indices of its key width.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ....proto import encodings_v2_1_pb2 as pb
from ..arrow_data import fixed_bits, fixed_values, is_variable_width
from .flat import flat_encoding
from .general import LZ4, ZSTD, compress, general_encoding
from .variable import variable_block


def build_dictionary(
    values: pa.Array, version: str, items_compression: str | None = None
) -> tuple[pa.Array, bytes, pb.CompressiveEncoding, int]:
    """``(indices int32 array, dictionary buffer, its encoding, item count)``.

    ``items_compression`` (2.2 only, as pylance 14.0.2): None or ``lz4`` -> LZ4,
    ``zstd`` -> ZSTD, ``none`` -> the block stays raw."""
    encoded = pc.dictionary_encode(values)
    items = encoded.dictionary
    if len(items) == 0:  # a dictionary page always has a valid value; guard anyway
        raise ValueError("cannot build a dictionary over a page without valid values")
    indices = encoded.indices.fill_null(0).cast(pa.int32())
    if is_variable_width(values.type):
        block, enc = variable_block(items)
    else:
        block = fixed_values(items).tobytes()
        enc = flat_encoding(fixed_bits(values.type))
    if version != "2.1" and items_compression != "none":
        scheme = ZSTD if items_compression == "zstd" else LZ4
        block = compress(block, scheme)
        enc = general_encoding(scheme, enc)
    return indices, block, enc, len(items)


def rows_null_through_items(arr: pa.DictionaryArray) -> pa.DictionaryArray:
    """``arr`` with its null dictionary entries removed and the rows pointing at them made
    null (indices remapped), so that def levels carry every null as pylance 14.0.2 writes
    it; the other entries keep their order, unused ones included."""
    items = arr.dictionary
    if items.null_count == 0:
        return arr
    keep = items.is_valid().to_numpy(zero_copy_only=False)
    remap = np.cumsum(keep) - 1
    codes = arr.indices.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
    row_valid = arr.is_valid().to_numpy(zero_copy_only=False)
    if len(codes):
        row_valid &= keep[codes]
    new_codes = np.where(row_valid, remap[codes] if len(codes) else codes, 0)
    indices = pa.array(new_codes, arr.type.index_type, mask=~row_valid)
    return pa.DictionaryArray.from_arrays(indices, items.filter(pa.array(keep)))


def arrow_dictionary(
    values: pa.DictionaryArray, version: str, items_compression: str | None = None
) -> tuple[pa.Array, bytes, pb.CompressiveEncoding, int]:
    """Like :func:`build_dictionary` for a page of an Arrow dictionary field: the items are
    the field's dictionary as given (unused entries kept, no null entry, see
    :func:`rows_null_through_items`) and the indices keep the Arrow key type (null slots
    carry 0), compressed like any integers of that width, as pylance 14.0.2 writes them."""
    items = values.dictionary
    if is_variable_width(items.type):
        block, enc = variable_block(items)
    else:  # numbers: one flat block of the items (pylance 14.0.2: flat 64 for int64 values)
        block = fixed_values(items).tobytes()
        enc = flat_encoding(fixed_bits(items.type))
    if version != "2.1" and items_compression != "none":
        scheme = ZSTD if items_compression == "zstd" else LZ4
        block = compress(block, scheme)
        enc = general_encoding(scheme, enc)
    return values.indices.fill_null(0), block, enc, len(items)


def has_dictionary(t: pa.DataType) -> bool:
    """Whether ``t`` is, or holds (in a struct or a list), a dictionary type."""
    if pa.types.is_dictionary(t):
        return True
    if pa.types.is_struct(t):
        return any(has_dictionary(t.field(i).type) for i in range(t.num_fields))
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return has_dictionary(t.value_type)
    return False


def null_items_to_rows(arr: pa.Array) -> pa.Array:
    """:func:`rows_null_through_items` applied to every dictionary in ``arr`` (top level, in
    structs and in lists); other arrays are returned as they are."""
    t = arr.type
    if not has_dictionary(t):
        return arr
    if pa.types.is_dictionary(t):
        return rows_null_through_items(arr)
    mask = arr.is_null() if arr.null_count else None
    if pa.types.is_struct(t):
        children = [null_items_to_rows(arr.field(i)) for i in range(t.num_fields)]
        return pa.StructArray.from_arrays(
            children, fields=[t.field(i) for i in range(t.num_fields)], mask=mask
        )
    cls = pa.LargeListArray if pa.types.is_large_list(t) else pa.ListArray
    offsets = arr.offsets  # rebased so that they index ``arr.values`` from its start
    first = offsets[0].as_py()
    values = null_items_to_rows(arr.values.slice(first, offsets[-1].as_py() - first))
    rebased = pc.subtract(offsets, pa.scalar(first, offsets.type))
    return cls.from_arrays(rebased, values, type=t, mask=mask)
