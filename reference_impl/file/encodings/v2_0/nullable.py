"""``Nullable``: the 2.0 validity node.

* ``no_nulls{values}``: decode ``values``; every slot is valid.
* ``some_nulls{validity, values}``: ``validity`` is a ``Flat{bits_per_value: 1}`` bitmap
  (``ceil(n/8)`` bytes, LSB first, 1 = valid); ``values`` holds a slot for every row, null
  slots carry placeholder bytes that are never data.
* ``all_nulls{}``: no buffers, every slot is null.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from . import flat as flat_node
from ._common import RULE_NODE, PageContext, register, with_validity
from ._common import decode as decode_node


@register("nullable")
def decode(node, ctx: PageContext, num_rows: int, data_type: pa.DataType) -> pa.Array:
    case = node.WhichOneof("nullability")
    if case == "all_nulls":
        return pa.nulls(num_rows, data_type)
    if case == "no_nulls":
        return decode_node(node.no_nulls.values, ctx, num_rows, data_type)
    if case == "some_nulls":
        validity = node.some_nulls.validity
        if validity.WhichOneof("array_encoding") != "flat":
            raise ctx.error("some_nulls validity must be a flat bitmap", RULE_NODE)
        bitmap = flat_node.validity_bitmap(validity.flat, ctx, num_rows)
        values = decode_node(node.some_nulls.values, ctx, num_rows, data_type)
        return with_validity(values, bitmap)
    raise ctx.error("Nullable with no nullability case set", RULE_NODE)


def unsigned_values(node, ctx: PageContext, num_rows: int) -> np.ndarray:
    """Offsets/indices: a ``nullable{no_nulls{...}}`` or bare integer node as numpy uint64.

    Accepts ``flat`` and the legacy ``bitpacked``/``bitpacked_for_non_neg`` leaves.
    """
    case = node.WhichOneof("array_encoding")
    if case == "nullable":
        inner = node.nullable
        which = inner.WhichOneof("nullability")
        if which != "no_nulls":
            raise ctx.error(f"offsets/indices must not be nullable ({which})", RULE_NODE)
        return unsigned_values(inner.no_nulls.values, ctx, num_rows)
    if case == "flat":
        return flat_node.unsigned(node.flat, ctx, num_rows).astype(np.uint64, copy=False)
    if case in ("bitpacked", "bitpacked_for_non_neg"):
        from . import bitpacked

        return bitpacked.unsigned(case, getattr(node, case), ctx, num_rows)
    raise ctx.error(f"offsets/indices encoded as {case}, expected flat integers", RULE_NODE)
