"""``struct {}`` (SimpleStruct): the 2.0 struct header column.

A struct field takes one header column holding a single page that covers every row, with
encoding ``struct {}``, no buffers and ``length`` = rows; its children follow as their own
columns in pre-order. 2.0 does not encode struct validity (pylance refuses null structs),
so every struct slot is valid. This node only yields the row count.
"""

from __future__ import annotations

import pyarrow as pa

from ._common import PageContext, register


@register("struct")
def decode(node, ctx: PageContext, num_rows: int, data_type: pa.DataType) -> pa.Array:
    """A header page decodes to ``num_rows`` placeholders; the field assembler fills children."""
    return pa.nulls(num_rows)
