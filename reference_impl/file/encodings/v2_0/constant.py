"""``Constant{value}``: one value's bytes repeated for every slot.

pylance 14.0.2 never writes it in 2.0 (FILE-ENCODINGS §4.13); it is decoded for
fixed-width types, where ``value`` must be exactly one value wide.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from ._common import RULE_NODE, PageContext, fixed_width_bits, register


@register("constant")
def decode(node, ctx: PageContext, num_rows: int, data_type: pa.DataType) -> pa.Array:
    bits = fixed_width_bits(data_type)
    if bits is None or bits % 8:
        raise ctx.error(f"constant node cannot decode {data_type}", RULE_NODE)
    value = bytes(node.value)
    if len(value) != bits // 8:
        raise ctx.error(
            f"constant value is {len(value)} bytes, {data_type} needs {bits // 8}", RULE_NODE
        )
    data = np.tile(np.frombuffer(value, np.uint8), num_rows)
    return pa.Array.from_buffers(data_type, num_rows, [None, pa.py_buffer(data.tobytes())])
