"""``Flat{bits_per_value}``: a plain vector of fixed-width values (FILE-ENCODINGS §4.1).

In a mini-block chunk the single value buffer holds the chunk's values back to back
(booleans as an LSB-first bitmap; chunks of a multiple of 8 values keep bit
boundaries on bytes). Chunks hold the largest power of two n <= 4096 values with
``n * bytes_per_value < 8186`` (pylance 14.0.2's choice; any power of two decodes).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from ....proto import encodings_v2_1_pb2 as pb
from ..arrow_data import fixed_bits, fixed_values

MAX_CHUNK_VALUES = 4096
CHUNK_BYTE_TARGET = 8186


def flat_encoding(bits: int) -> pb.CompressiveEncoding:
    enc = pb.CompressiveEncoding()
    enc.flat.bits_per_value = bits
    return enc


def chunk_values_for_width(bits: int) -> int:
    if bits == 1:
        return MAX_CHUNK_VALUES
    n = MAX_CHUNK_VALUES
    while n > 1 and n * bits / 8 >= CHUNK_BYTE_TARGET:
        n //= 2
    return n


class FlatValues:
    """Mini-block values stored flat."""

    num_buffers = 1

    def __init__(self, values: pa.Array) -> None:
        self.bits = fixed_bits(values.type)
        self.data = fixed_values(values)
        self.max_chunk_values = chunk_values_for_width(self.bits)

    def encoding(self) -> pb.CompressiveEncoding:
        return flat_encoding(self.bits)

    def cost(self, start: int, count: int) -> int:
        return (count * self.bits + 7) // 8

    def chunk(self, start: int, count: int) -> list[bytes]:
        if self.bits == 1:
            bits = np.unpackbits(self.data, bitorder="little")[start : start + count]
            return [np.packbits(bits, bitorder="little").tobytes()]
        w = self.bits // 8
        return [self.data[start * w : (start + count) * w].tobytes()]

    def chunk_pieces(self, starts: np.ndarray, counts: np.ndarray):
        """``mini_block.batched_chunks``: memoryviews into the values (booleans per chunk)."""
        if self.bits == 1:
            pieces = [
                tuple(self.chunk(s, c))
                for s, c in zip(starts.tolist(), counts.tolist(), strict=True)
            ]
            return [(np.array([len(p[0]) for p in pieces], np.int64), pieces)]
        w = self.bits // 8
        mv = memoryview(self.data)
        pieces = [
            (mv[s * w : (s + c) * w],)
            for s, c in zip(starts.tolist(), counts.tolist(), strict=True)
        ]
        return [(counts * w, pieces)]
