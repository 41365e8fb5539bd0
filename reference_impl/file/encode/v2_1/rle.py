"""``Rle{values: flat T, run_lengths: flat 8}`` in mini-block chunks (FILE-ENCODINGS §4.5).

Each chunk has two value buffers (``num_buffers 2``): the run values as T-bit
little-endian integers, then one u8 length per run (1..255; longer runs are split
into runs of 255). A chunk decodes as ``repeat(values, lengths)``. Runs are computed per
chunk, so a run crossing a chunk boundary is simply cut there. Chunks hold up to
4,096 values.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from ....proto import encodings_v2_1_pb2 as pb
from ..arrow_data import fixed_bits, fixed_values
from .bitpacking import UINT, integer_like

MAX_CHUNK_VALUES = 4096
MAX_RUN = 255


def run_count(values: pa.Array) -> int:
    """Number of runs of equal raw values in the whole array (nulls count as their placeholder)."""
    raw = _raw(values)
    return int(np.count_nonzero(raw[1:] != raw[:-1])) + 1 if len(raw) else 0


def _raw(values: pa.Array) -> np.ndarray:
    dt = UINT[fixed_bits(values.type)]
    return fixed_values(values).view(dt) if len(values) else np.zeros(0, dt)


class RleValues:
    num_buffers = 2
    max_chunk_values = MAX_CHUNK_VALUES

    def __init__(self, values: pa.Array) -> None:
        self.T = fixed_bits(values.type)
        self.raw = _raw(values)
        # starts[i] = 1 when a run starts at value i (value 0 always starts one)
        starts = np.ones(len(self.raw), np.int64)
        if len(self.raw) > 1:
            starts[1:] = self.raw[1:] != self.raw[:-1]
        self.run_prefix = np.concatenate([[0], np.cumsum(starts)])

    @staticmethod
    def applicable(values: pa.Array) -> bool:
        return integer_like(values)

    def encoding(self) -> pb.CompressiveEncoding:
        enc = pb.CompressiveEncoding()
        enc.rle.values.flat.bits_per_value = self.T
        enc.rle.run_lengths.flat.bits_per_value = 8
        return enc

    def cost(self, start: int, count: int) -> int:
        runs = int(self.run_prefix[start + count] - self.run_prefix[start]) + 1 + count // MAX_RUN
        return runs * (self.T // 8 + 1) + 16

    def chunk(self, start: int, count: int) -> list[bytes]:
        v = self.raw[start : start + count]
        begin = np.flatnonzero(np.concatenate([[True], v[1:] != v[:-1]]))
        lengths = np.diff(np.append(begin, count))
        # split runs longer than 255 into pieces of at most 255
        pieces = (lengths + MAX_RUN - 1) // MAX_RUN
        run_values = np.repeat(v[begin], pieces)
        piece_lengths = np.full(int(pieces.sum()), MAX_RUN, np.int64)
        last_piece = np.cumsum(pieces) - 1
        piece_lengths[last_piece] = lengths - (pieces - 1) * MAX_RUN
        dt = np.dtype(UINT[self.T]).newbyteorder("<")
        return [run_values.astype(dt).tobytes(), piece_lengths.astype(np.uint8).tobytes()]
