"""``Flat{bits_per_value, buffer, compression?}``: the 2.0 value node.

A packed array of ``bits_per_value``-bit little-endian values in one buffer: 1 bit
(booleans and validity bitmaps, LSB first, 1 = true/valid), or 8/16/32/64/128 bits, or
``8 * byte_width`` for ``fixed_size_binary``. When ``compression.scheme`` is ``lz4`` or
``zstd`` the whole buffer is first decompressed with the framing of FILE-ENCODINGS §4.9;
``bits_per_value`` describes the uncompressed bytes. The buffer must hold at least
``ceil(num_rows * bits_per_value / 8)`` bytes.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from ._common import RULE_NODE, PageContext, fixed_width_bits, need, register
from .compression import decompress

#: the largest decompressed buffer a Flat node may claim (bounds allocations)
MAX_DECOMPRESSED = 1 << 34


def flat_bytes(node, ctx: PageContext, num_rows: int) -> memoryview:
    """The node's (decompressed) buffer, checked to hold ``num_rows`` values."""
    buf = ctx.buffer(node.buffer)
    if node.HasField("compression") and node.compression.scheme:
        limit = min(MAX_DECOMPRESSED, max(64, (num_rows * node.bits_per_value + 7) // 8 + 64))
        buf = memoryview(
            decompress(node.compression.scheme, buf, limit=limit, path=ctx.path, offset=ctx.offset)
        )
    need(
        buf,
        (num_rows * node.bits_per_value + 7) // 8,
        ctx,
        f"flat {node.bits_per_value}-bit x {num_rows}",
    )
    return buf


@register("flat")
def decode(node, ctx: PageContext, num_rows: int, data_type: pa.DataType) -> pa.Array:
    """Decode ``num_rows`` values of ``data_type`` (no nulls: validity lives in ``Nullable``)."""
    bits = fixed_width_bits(data_type)
    if bits is None or bits != node.bits_per_value:
        raise ctx.error(f"flat {node.bits_per_value}-bit values cannot be {data_type}", RULE_NODE)
    buf = flat_bytes(node, ctx, num_rows)
    nbytes = (num_rows * bits + 7) // 8
    # zero-copy: the Arrow buffer views the page bytes (which it keeps alive)
    return pa.Array.from_buffers(data_type, num_rows, [None, pa.py_buffer(buf[:nbytes])])


def validity_bitmap(node, ctx: PageContext, num_rows: int) -> pa.Buffer:
    """A ``Flat{bits_per_value: 1}`` validity node as an Arrow bitmap buffer."""
    if node.bits_per_value != 1:
        raise ctx.error(f"validity must be flat 1-bit, found {node.bits_per_value}", RULE_NODE)
    buf = flat_bytes(node, ctx, num_rows)
    return pa.py_buffer(buf[: (num_rows + 7) // 8])


def unsigned(node, ctx: PageContext, num_rows: int) -> np.ndarray:
    """A flat node of 8/16/32/64-bit unsigned integers as numpy (offsets, indices)."""
    widths = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}
    if node.bits_per_value not in widths:
        raise ctx.error(f"integer flat width {node.bits_per_value} is not 8/16/32/64", RULE_NODE)
    buf = flat_bytes(node, ctx, num_rows)
    return np.frombuffer(
        buf, dtype=np.dtype(widths[node.bits_per_value]).newbyteorder("<"), count=num_rows
    )
