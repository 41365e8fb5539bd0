"""``ByteStreamSplit{values: flat 32|64}`` mini-block values (FILE-ENCODINGS §4.8).

Within a chunk of n values of B = T/8 bytes each, the single value buffer holds B planes
of n bytes: plane j is byte j of every value, in value order (``values.reshape(n, B).T``).
pylance 14.0.2 writes it only under ``general`` when the field metadata asks for
compression (``lance-encoding:compression``, with ``lance-encoding:bss`` not ``off``):
grouping the bytes by significance is what makes the general compressor effective.
Chunks hold 1024 (32-bit) or 512 (64-bit) values, as pylance's.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from ....proto import encodings_v2_1_pb2 as pb
from ..arrow_data import fixed_bits, fixed_values

CHUNK_VALUES = {32: 1024, 64: 512}


class ByteStreamSplitValues:
    """Mini-block values split into byte planes per chunk."""

    num_buffers = 1

    @staticmethod
    def applicable(values: pa.Array) -> bool:
        t = values.type
        return not pa.types.is_boolean(t) and not pa.types.is_fixed_size_list(t) and (
            fixed_bits(t) in CHUNK_VALUES
        )

    def __init__(self, values: pa.Array) -> None:
        self.bits = fixed_bits(values.type)
        self.width = self.bits // 8
        self.data = fixed_values(values)
        self.max_chunk_values = CHUNK_VALUES[self.bits]

    def encoding(self) -> pb.CompressiveEncoding:
        enc = pb.CompressiveEncoding()
        enc.byte_stream_split.values.flat.bits_per_value = self.bits
        return enc

    def cost(self, start: int, count: int) -> int:
        return count * self.width

    def chunk(self, start: int, count: int) -> list[bytes]:
        w = self.width
        rows = self.data[start * w : (start + count) * w].reshape(count, w)
        return [np.ascontiguousarray(rows.T).tobytes()]
