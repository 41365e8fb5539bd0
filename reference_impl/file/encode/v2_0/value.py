"""2.0 "Value" encoding: ``Flat{bits_per_value, buffer}``, one packed vector of fixed-width values.

``bits_per_value`` is 1 for booleans and validity bitmaps (LSB first), otherwise the
value width in bits (8/16/32/64/128, or ``8 * byte_width`` for fixed-size binary). The
buffer holds one slot per value, null slots included. ``Flat.buffer`` must be present
even for buffer index 0 (proto3 presence), hence ``SetInParent``.
"""

from __future__ import annotations

from ....proto import encodings_v2_0_pb2 as pb


def flat_node(bits_per_value: int, buffers: list, data) -> pb.ArrayEncoding:
    """A Flat node over a new page buffer holding ``data`` (bytes or a contiguous array, kept
    as a byte view without a copy: the file writer copies it once into the file); appends
    the buffer."""
    node = pb.ArrayEncoding()
    node.flat.bits_per_value = bits_per_value
    node.flat.buffer.SetInParent()
    node.flat.buffer.buffer_index = len(buffers)
    node.flat.buffer.buffer_type = pb.Buffer.page
    buffers.append(data if isinstance(data, bytes) else memoryview(data).cast("B"))
    return node
