"""``FixedSizeBinary{bytes, byte_width}``: variable-width values that all have one width.

``bytes`` decodes as ``num_rows * byte_width`` u8 values; row *i* is
``bytes[i*w:(i+1)*w]``. Not written by pylance 14.0.2 (an older writer's node); decoded
into the field's utf8/binary type.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from ._common import RULE_NODE, PageContext, register
from ._common import decode as decode_node


@register("fixed_size_binary")
def decode(node, ctx: PageContext, num_rows: int, data_type: pa.DataType) -> pa.Array:
    if not (
        pa.types.is_string(data_type)
        or pa.types.is_binary(data_type)
        or pa.types.is_large_string(data_type)
        or pa.types.is_large_binary(data_type)
    ):
        raise ctx.error(f"fixed_size_binary node cannot decode {data_type}", RULE_NODE)
    width = int(node.byte_width)
    raw = decode_node(node.bytes, ctx, num_rows * width, pa.uint8())
    large = pa.types.is_large_string(data_type) or pa.types.is_large_binary(data_type)
    offsets = (np.arange(num_rows + 1, dtype=np.int64) * width).astype(
        np.int64 if large else np.int32
    )
    return pa.Array.from_buffers(
        data_type, num_rows, [None, pa.py_buffer(offsets.tobytes()), raw.buffers()[1]]
    )
