"""``PackedStruct{inner[], buffer}``: fixed-width struct children packed row-major.

One buffer holds every row as the concatenation of its children's values, child *i*
taking ``inner[i].flat.bits_per_value`` bits (whole bytes), so an (int32, float64) struct
has 12-byte rows. Decoding is a strided numpy view per child. Blob columns
(``ColumnEncoding.blob``) use this node for their (u64 position, u64 size) descriptors.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from ._common import RULE_NODE, PageContext, fixed_width_bits, need, register


def child_widths(node, ctx: PageContext) -> list[int]:
    widths = []
    for inner in node.inner:
        while (
            inner.WhichOneof("array_encoding") == "nullable"
            and inner.nullable.WhichOneof("nullability") == "no_nulls"
        ):
            inner = inner.nullable.no_nulls.values
        if inner.WhichOneof("array_encoding") != "flat" or inner.flat.bits_per_value % 8:
            raise ctx.error("packed_struct children must be byte-wide flat nodes", RULE_NODE)
        widths.append(int(inner.flat.bits_per_value) // 8)
    return widths


def rows_matrix(node, ctx: PageContext, num_rows: int) -> tuple[np.ndarray, list[int]]:
    """The buffer as a ``(num_rows, row_bytes)`` uint8 matrix, and the children's widths."""
    widths = child_widths(node, ctx)
    row = sum(widths)
    buf = ctx.buffer(node.buffer)
    need(buf, row * num_rows, ctx, "packed_struct rows")
    mat = np.frombuffer(buf, dtype=np.uint8, count=row * num_rows).reshape(num_rows, row)
    return mat, widths


@register("packed_struct")
def decode(node, ctx: PageContext, num_rows: int, data_type: pa.DataType) -> pa.Array:
    if not pa.types.is_struct(data_type) or data_type.num_fields != len(node.inner):
        raise ctx.error(
            f"packed_struct with {len(node.inner)} children cannot be {data_type}", RULE_NODE
        )
    mat, widths = rows_matrix(node, ctx, num_rows)
    children, start = [], 0
    for field, width in zip(data_type, widths, strict=False):
        if fixed_width_bits(field.type) != width * 8:
            raise ctx.error(
                f"packed child {field.name} width {width * 8} != {field.type}", RULE_NODE
            )
        column = np.ascontiguousarray(mat[:, start : start + width])
        children.append(
            pa.Array.from_buffers(field.type, num_rows, [None, pa.py_buffer(column.tobytes())])
        )
        start += width
    return pa.StructArray.from_arrays(children, fields=list(data_type))
