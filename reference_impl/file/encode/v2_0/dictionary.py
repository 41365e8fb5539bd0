"""2.0 "Dictionary" encoding for low-cardinality strings and Arrow dictionary fields.

``Dictionary{indices, items, num_dictionary_items}``: ``indices`` is
``nullable{no_nulls{flat 8}}`` with u8 codes where **0 means null** and ``k >= 1`` means
``items[k-1]``; ``items`` is a :mod:`binary <.binary>` node over the distinct values (its
two buffers follow the indices buffer). A page whose values are all null gets a single
item that is itself null, with every code 0 (as pylance 14.0.2 writes it). A field whose
Arrow type is ``dictionary<...>`` is written by :func:`arrow_dictionary_node` instead
(0-based indices of the key width, a null item for null rows).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ....errors import InvalidInput
from ....proto import encodings_v2_0_pb2 as pb
from .binary import binary_node
from .value import flat_node


def dictionary_node(arr: pa.Array, buffers: list[bytes]) -> pb.ArrayEncoding:
    encoded = pc.dictionary_encode(arr)
    items = encoded.dictionary
    codes = encoded.indices.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64) + 1
    if len(items) == 0:
        items = pa.array([None], type=arr.type)
    if len(items) > 255:
        raise ValueError("2.0 dictionary pages hold at most 255 items (u8 codes, 0 = null)")
    node = pb.ArrayEncoding()
    node.dictionary.indices.nullable.no_nulls.values.CopyFrom(
        flat_node(8, buffers, codes.astype(np.uint8).tobytes())
    )
    node.dictionary.items.CopyFrom(binary_node(items, buffers))
    node.dictionary.num_dictionary_items = len(items)
    return node


def arrow_dictionary_node(arr: pa.DictionaryArray, buffers: list[bytes]) -> pb.ArrayEncoding:
    """A page of an Arrow ``dictionary<I, string|binary>`` field, as pylance 14.0.2 writes it.

    ``indices`` keep the Arrow key width (``nullable{no_nulls{flat 8/16/32/64}}``, buffer 0)
    and are 0-based; ``items`` is a Binary node over the page's whole dictionary (unused
    entries kept). A null row points at a null item: the dictionary's first null entry if it
    has one, else a null item appended at the end (so a page with no dictionary entries and
    only nulls has the single item null)."""
    items = arr.dictionary
    bits = arr.type.index_type.bit_width
    codes = arr.indices.to_numpy(zero_copy_only=False) if arr.null_count == 0 else None
    if arr.null_count:
        item_nulls = np.flatnonzero(
            items.is_null().to_numpy(zero_copy_only=False)) if items.null_count else []
        if len(item_nulls):
            null_index = int(item_nulls[0])
        else:
            null_index = len(items)
            items = pa.concat_arrays([items, pa.nulls(1, items.type)])
        if null_index >= 1 << (bits - pa.types.is_signed_integer(arr.type.index_type)):
            raise InvalidInput(
                f"a null row needs dictionary index {null_index}, beyond {arr.type.index_type}"
            )
        codes = arr.indices.fill_null(null_index).to_numpy(zero_copy_only=False)
    unsigned = np.dtype(f"<u{bits // 8}")
    node = pb.ArrayEncoding()
    node.dictionary.indices.nullable.no_nulls.values.CopyFrom(
        flat_node(bits, buffers, np.ascontiguousarray(codes).view(unsigned).tobytes())
    )
    if pa.types.is_integer(items.type) or pa.types.is_floating(items.type):
        # numbers: a nullable flat node of the items (validity, then values), as pylance
        # 14.0.2 writes them
        from ..arrow_data import fixed_bits, fixed_values
        from .nullable import nullable_node

        valid = items.is_valid().to_numpy(zero_copy_only=False) if items.null_count else None
        node.dictionary.items.CopyFrom(nullable_node(
            valid, len(items), buffers,
            lambda b: flat_node(fixed_bits(items.type), b, fixed_values(items).tobytes())))
    else:
        node.dictionary.items.CopyFrom(binary_node(items, buffers))
    node.dictionary.num_dictionary_items = len(items)
    return node
