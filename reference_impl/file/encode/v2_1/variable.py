"""``Variable{offsets: flat 32|64}`` for strings and binary (FILE-ENCODINGS §4.7).

* Mini-block chunk: one buffer of ``n + 1`` offsets (4 or 8 bytes) measured from the
  start of this buffer (the first offset is ``(n + 1) * width``), then the value bytes,
  then 0x48 padding to a multiple of the offset width. Null values are empty.
* Block (a dictionary): ``u32 32 | u32 data_start | (n + 1) u32 offsets from 0 | bytes``
  (or the u64 form with 64 / u64 / u64 offsets), ``data_start`` being where the bytes
  begin.
* Per value (full-zip): no buffer of its own; each value is length-prefixed in the
  zipped stream.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from ....proto import encodings_v2_1_pb2 as pb
from ..arrow_data import is_large_variable, variable_parts

CHUNK_BYTE_BUDGET = 4096
MAX_CHUNK_VALUES = 4096
FILLER = 0x48


def variable_encoding(offset_bits: int) -> pb.CompressiveEncoding:
    enc = pb.CompressiveEncoding()
    enc.variable.offsets.flat.bits_per_value = offset_bits
    return enc


class VariableValues:
    """Mini-block values as per-chunk offsets + bytes."""

    num_buffers = 1
    max_chunk_values = MAX_CHUNK_VALUES

    def __init__(self, values: pa.Array) -> None:
        self.offset_bits = 64 if is_large_variable(values.type) else 32
        self.offsets, self.data = variable_parts(values)

    def encoding(self) -> pb.CompressiveEncoding:
        return variable_encoding(self.offset_bits)

    def cost(self, start: int, count: int) -> int:
        w = self.offset_bits // 8
        return (count + 1) * w + int(self.offsets[start + count] - self.offsets[start]) + w

    def chunk(self, start: int, count: int) -> list[bytes]:
        w = self.offset_bits // 8
        offs = self.offsets[start : start + count + 1]
        rel = offs - offs[0] + (count + 1) * w
        body = self.data[offs[0] : offs[-1]].tobytes()
        head = rel.astype("<u8" if w == 8 else "<u4").tobytes()
        out = head + body
        pad = (-len(out)) % w
        return [out + bytes([FILLER]) * pad]

    def chunk_pieces(self, starts: np.ndarray, counts: np.ndarray):
        """``mini_block.batched_chunks``: every chunk's offsets rebased in one numpy pass;
        a chunk is (its offsets, a memoryview of its bytes, the filler)."""
        w = self.offset_bits // 8
        starts = np.asarray(starts, np.int64)
        counts = np.asarray(counts, np.int64)
        n_off = counts + 1
        first = np.cumsum(n_off) - n_off  # where each chunk's offsets begin in ``rel``
        total = int(n_off.sum())
        pos = np.arange(total, dtype=np.int64) + np.repeat(starts - first, n_off)
        base = self.offsets[starts] - n_off * w  # rel = offset - first offset + (count + 1) w
        rel = self.offsets[pos] - np.repeat(base, n_off)
        head = memoryview(rel.astype("<u8" if w == 8 else "<u4").tobytes())
        lo = self.offsets[starts]
        hi = self.offsets[starts + counts]
        nbytes = hi - lo
        pad = (-(n_off * w + nbytes)) % w
        data = memoryview(np.ascontiguousarray(self.data))
        fill = [bytes([FILLER]) * k for k in range(w)]
        pieces = [
            (head[f * w : (f + k) * w], data[a:b], fill[p])
            for f, k, a, b, p in zip(
                first.tolist(), n_off.tolist(), lo.tolist(), hi.tolist(), pad.tolist(), strict=True
            )
        ]
        return [(n_off * w + nbytes + pad, pieces)]


def variable_block(values: pa.Array) -> tuple[bytes, pb.CompressiveEncoding]:
    """A whole array as one Variable block (used for dictionaries)."""
    offsets, data = variable_parts(values)
    if is_large_variable(values.type) or (len(offsets) and offsets[-1] >= 2**32 - 1):
        head = np.array([64, 16 + 8 * len(offsets)], "<u8").tobytes()
        return head + offsets.astype("<u8").tobytes() + data.tobytes(), variable_encoding(64)
    head = np.array([32, 8 + 4 * len(offsets)], "<u4").tobytes()
    return head + offsets.astype("<u4").tobytes() + data.tobytes(), variable_encoding(32)
