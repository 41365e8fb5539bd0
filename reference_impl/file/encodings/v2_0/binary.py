"""``Binary{indices, bytes, null_adjustment}``: 2.0 variable-width values.

``indices`` holds one u64 **end** offset per row, without a leading 0. ``bytes`` is a
``Flat 8`` buffer of the concatenated values. ``null_adjustment`` is the total byte count
plus one; row *i* with ``e = indices[i] >= null_adjustment`` is null and ends at
``e - null_adjustment``, otherwise it is valid and ends at ``e``. A row starts where the
previous one ends (0 for row 0). Nulls live only here: there is no validity buffer.
Ends must be non-decreasing and stay inside the bytes buffer.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from reference_impl.file.arrow_types import invalid_utf8

from ._common import RULE_NODE, RULE_OFFSETS, PageContext, bitmap_from_bools, need, register
from .nullable import unsigned_values

LARGE = (pa.large_string(), pa.large_binary())


@register("binary")
def decode(node, ctx: PageContext, num_rows: int, data_type: pa.DataType) -> pa.Array:
    if not (
        pa.types.is_string(data_type)
        or pa.types.is_binary(data_type)
        or pa.types.is_large_string(data_type)
        or pa.types.is_large_binary(data_type)
    ):
        raise ctx.error(f"binary node cannot decode {data_type}", RULE_NODE)
    ends_raw = unsigned_values(node.indices, ctx, num_rows)
    adj = int(node.null_adjustment)
    if adj == 0:
        raise ctx.error("binary null_adjustment is 0", RULE_OFFSETS)
    is_null = ends_raw >= np.uint64(adj)
    any_null = bool(is_null.any())
    ends = np.where(is_null, ends_raw - np.uint64(adj), ends_raw) if any_null else ends_raw
    total = int(ends[-1]) if num_rows else 0
    if num_rows > 1 and bool((ends[1:] < ends[:-1]).any()):
        raise ctx.error("binary end offsets decrease", RULE_OFFSETS)
    if total > adj - 1:
        raise ctx.error(
            f"binary ends reach {total}, past null_adjustment-1 = {adj - 1}", RULE_OFFSETS
        )
    data = _bytes(node.bytes, ctx, total)
    large = data_type in LARGE
    if not large and total >= 2**31:
        raise ctx.error("binary data exceeds 2 GiB for a 32-bit offset type", RULE_OFFSETS)
    offsets = np.empty(num_rows + 1, np.int64 if large else np.int32)
    offsets[0] = 0
    offsets[1:] = ends  # ends are bounded by total above, so the cast is exact
    validity = bitmap_from_bools(~is_null) if any_null else None
    arr = pa.Array.from_buffers(
        data_type, num_rows, [validity, pa.py_buffer(offsets), pa.py_buffer(data)]
    )
    if pa.types.is_string(data_type) or pa.types.is_large_string(data_type):
        problem = invalid_utf8(arr, data)
        if problem:
            raise ctx.error(f"string values are not valid UTF-8: {problem}", RULE_OFFSETS)
    return arr


def _bytes(node, ctx: PageContext, total: int) -> memoryview:
    case = node.WhichOneof("array_encoding")
    if case == "nullable" and node.nullable.WhichOneof("nullability") == "no_nulls":
        return _bytes(node.nullable.no_nulls.values, ctx, total)
    if case != "flat" or node.flat.bits_per_value != 8:
        raise ctx.error(f"binary bytes must be flat 8-bit, found {case}", RULE_NODE)
    from .flat import flat_bytes

    buf = flat_bytes(node.flat, ctx, total)
    need(buf, total, ctx, "binary bytes")
    return buf[:total]
