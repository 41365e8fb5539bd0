"""``Dictionary{indices, items, num_dictionary_items}``: 2.0 dictionary pages.

Two flavours occur (FILE-ENCODINGS §2.2):

* the writer's automatic dictionary for low-cardinality utf8: ``indices`` are u8 codes in
  ``nullable{no_nulls{flat 8}}``, **0 = null, k >= 1 = items[k-1]**; ``items`` is a
  ``Binary`` node of ``num_dictionary_items`` values. The field type is plain utf8.
* an Arrow ``dictionary<...>`` input: indices keep the key width and are 0-based; nulls
  point at an extra null item appended to ``items``. The field type is a dictionary type.
  The decoded page has no null item: its rows are null through the indices' validity.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from ._common import RULE_OFFSETS, PageContext, bitmap_from_bools, register
from ._common import decode as decode_node
from .nullable import unsigned_values

MAX_ITEMS = 1 << 32


@register("dictionary")
def decode(node, ctx: PageContext, num_rows: int, data_type: pa.DataType) -> pa.Array:
    n_items = int(node.num_dictionary_items)
    if n_items > MAX_ITEMS:
        raise ctx.error("dictionary too large", RULE_OFFSETS)
    codes = unsigned_values(node.indices, ctx, num_rows)
    if pa.types.is_dictionary(data_type):
        items = decode_node(node.items, ctx, n_items, data_type.value_type)
        if num_rows and int(codes.max()) >= n_items:
            raise ctx.error("dictionary index out of range", RULE_OFFSETS)
        item_null = np.asarray(items.is_null().to_numpy(zero_copy_only=False), dtype=bool)
        row_null = item_null[codes.astype(np.int64)] if num_rows else np.zeros(0, bool)
        if item_null.any():
            # null items are dropped and their rows made null, so that pages concatenate
            # (Arrow cannot unify dictionaries holding nulls)
            remap = np.cumsum(~item_null) - 1
            codes = np.where(row_null, 0, remap[codes.astype(np.int64)]) if num_rows else codes
            items = items.filter(pa.array(~item_null))
        index_np = codes.astype(data_type.index_type.to_pandas_dtype())
        validity = bitmap_from_bools(~row_null) if row_null.any() else None
        indices = pa.Array.from_buffers(
            data_type.index_type, num_rows, [validity, pa.py_buffer(index_np.tobytes())]
        )
        return pa.DictionaryArray.from_arrays(indices, items)
    items = decode_node(node.items, ctx, n_items, data_type)
    if num_rows and int(codes.max()) > n_items:
        raise ctx.error(f"dictionary code {int(codes.max())} > {n_items} items", RULE_OFFSETS)
    is_null = codes == 0
    take = np.where(is_null, 0, codes.astype(np.int64) - 1)
    if n_items == 0:
        return pa.nulls(num_rows, data_type)
    mask = pa.array(is_null) if is_null.any() else None
    return _take(items, take, mask)


def _take(items: pa.Array, take: np.ndarray, mask) -> pa.Array:
    out = items.take(pa.array(take, pa.int64()))
    if mask is None:
        return out
    import pyarrow.compute as pc

    return pc.if_else(mask, pa.scalar(None, out.type), out)
