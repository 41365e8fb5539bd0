"""The value buffers of a mini-block page's chunks, kept as positions into one byte array.

Mini-block chunks (FILE-ENCODINGS §3.2) each carry ``num_buffers`` value buffers. Rather than
one Python object per chunk and buffer, a :class:`ChunkSet` stores the page's chunk-data bytes
once plus, for every buffer index ``k``, numpy arrays of the start offsets and sizes of that
buffer in every chunk, so decoders can work on all chunks with a handful of numpy operations.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def gather_ranges(data: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """``concatenate(data[s:s+n] for s, n in zip(starts, lengths))`` without a Python loop.

    For many short ranges the source index of every output byte is built by one cumulative sum
    over an array of ones holding, at the first byte of each range, the jump from the previous
    range's last byte; long ranges are sliced and concatenated. Callers have checked that every
    range lies inside ``data``.
    """
    starts = np.asarray(starts, np.int64)
    lengths = np.asarray(lengths, np.int64)
    live = lengths > 0
    if not live.all():
        starts, lengths = starts[live], lengths[live]
    if len(starts) == 0:
        return np.zeros(0, data.dtype)
    pos = np.zeros(len(starts), np.int64)
    np.cumsum(lengths[:-1], out=pos[1:])
    total = int(pos[-1] + lengths[-1])
    if total > 48 * len(starts):
        # long ranges: one memcpy per range beats three passes per byte over an index
        return np.concatenate([data[s:s + n] for s, n in zip(starts.tolist(), lengths.tolist(), strict=False)])
    idx_t = np.int32 if len(data) < (1 << 31) - 1 else np.int64
    jump = np.empty(len(starts), idx_t)
    jump[0] = starts[0]
    jump[1:] = starts[1:] - (starts[:-1] + lengths[:-1] - 1)
    src = np.ones(total, idx_t)
    src[pos] = jump
    np.cumsum(src, out=src)
    return np.take(data, src)


@dataclass
class ChunkSet:
    data: np.ndarray  # uint8
    starts: list  # per buffer index: int64 array (one entry per chunk)
    sizes: list  # per buffer index: int64 array

    @property
    def n_chunks(self) -> int:
        return len(self.starts[0]) if self.starts else 0

    @property
    def n_buffers(self) -> int:
        return len(self.starts)

    def buffers(self, k: int) -> list:
        """Buffer ``k`` of every chunk, as numpy byte views."""
        d = self.data
        return [d[s:s + n] for s, n in zip(self.starts[k].tolist(), self.sizes[k].tolist(), strict=False)]

    def gather(self, k: int, lengths: np.ndarray) -> np.ndarray:
        """The first ``lengths[c]`` bytes of buffer ``k`` of every chunk, concatenated."""
        return gather_ranges(self.data, self.starts[k], lengths)

    def read_uint(self, k: int, rel: np.ndarray, width: int) -> np.ndarray:
        """Little-endian ``width``-byte integers at ``starts[k] + rel`` (vectorised)."""
        pos = self.starts[k] + rel
        out = np.zeros(len(pos), np.uint64)
        for b in range(width):
            out |= self.data[pos + b].astype(np.uint64) << np.uint64(8 * b)
        return out

    def with_buffer(self, k: int, new: list) -> ChunkSet:
        """A copy in which buffer ``k`` of chunk ``c`` is replaced by ``new[c]`` (bytes)."""
        lists = [self.buffers(j) for j in range(self.n_buffers)]
        lists[k] = [np.frombuffer(b, np.uint8) for b in new]
        return ChunkSet.from_lists([list(x) for x in zip(*lists, strict=False)])

    @staticmethod
    def from_lists(chunks: list) -> ChunkSet:
        """Build from ``chunks[c][k]`` byte buffers."""
        if not chunks:
            return ChunkSet(np.zeros(0, np.uint8), [np.zeros(0, np.int64)], [np.zeros(0, np.int64)])
        nb = len(chunks[0])
        parts, starts, sizes, pos = [], [[] for _ in range(nb)], [[] for _ in range(nb)], 0
        for c in chunks:
            for k in range(nb):
                b = np.frombuffer(c[k], np.uint8) if not isinstance(c[k], np.ndarray) else c[k]
                parts.append(b)
                starts[k].append(pos)
                sizes[k].append(len(b))
                pos += len(b)
        data = np.concatenate(parts) if parts else np.zeros(0, np.uint8)
        return ChunkSet(data, [np.array(s, np.int64) for s in starts], [np.array(s, np.int64) for s in sizes])
