"""``FixedSizeList{dimension, items, has_validity}``: 2.0 fixed-size lists.

``items`` decodes as ``num_rows * dimension`` slots of the value type (usually a
``nullable`` node, which carries item nulls). Row nulls sit in the enclosing
``Nullable`` node, not here.
"""

from __future__ import annotations

import pyarrow as pa

from ._common import RULE_NODE, PageContext, register
from ._common import decode as decode_node

MAX_SLOTS = 1 << 36


@register("fixed_size_list")
def decode(node, ctx: PageContext, num_rows: int, data_type: pa.DataType) -> pa.Array:
    if not pa.types.is_fixed_size_list(data_type):
        raise ctx.error(f"fixed_size_list node cannot decode {data_type}", RULE_NODE)
    if node.dimension != data_type.list_size:
        raise ctx.error(
            f"fixed_size_list dimension {node.dimension} != schema {data_type.list_size}", RULE_NODE
        )
    slots = num_rows * node.dimension
    if slots > MAX_SLOTS:
        raise ctx.error("fixed_size_list page too large", RULE_NODE)
    items = decode_node(node.items, ctx, slots, data_type.value_type)
    return pa.FixedSizeListArray.from_arrays(items, type=data_type)
