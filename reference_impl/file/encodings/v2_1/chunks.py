"""The value buffers of a mini-block page's chunks, kept as positions into one byte array.

Mini-block chunks (FILE-ENCODINGS §3.2) each carry ``num_buffers`` value buffers. Rather than
one Python object per chunk and buffer, a :class:`ChunkSet` stores the page's chunk-data bytes
once plus, for every buffer index ``k``, numpy arrays of the start offsets and sizes of that
buffer in every chunk, so decoders can work on all chunks with a handful of numpy operations.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from reference_impl.file import kernels

#: output bytes gathered per step: bounds the index arrays of short ranges (see
#: :func:`gather_ranges`) to a few MB whatever the size of the page
GATHER_PIECE = 1 << 21
#: a piece whose ranges average more than this many bytes is copied range by range (one
#: memcpy each) rather than through an index of its bytes
LONG_RANGE = 48


def gather_ranges_readable(data: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The definition of :func:`gather_ranges`: the ranges ``data[s:s+n]``, concatenated."""
    parts = [data[s:s + n] for s, n in zip(np.asarray(starts).tolist(), np.asarray(lengths).tolist(),
                                           strict=True)]
    return np.concatenate(parts) if parts else np.zeros(0, data.dtype)


def gather_ranges(data: np.ndarray, starts: np.ndarray, lengths: np.ndarray, *,
                  piece: int | None = None) -> np.ndarray:
    """``concatenate(data[s:s+n] for s, n in zip(starts, lengths))``
    (:func:`gather_ranges_readable`), in memory proportional to the output.

    The output is allocated once and filled piece by piece, each piece a run of consecutive
    ranges of about ``piece`` bytes (:data:`GATHER_PIECE`; a range longer than that is a piece
    of its own). A piece of long ranges is copied range by range; a piece of short ones
    through the source index of each of its bytes, built by one cumulative sum over an array
    of ones holding, at the first byte of each range, the jump from the previous range's last
    byte. So no index array ever exceeds a few MB, however large the page (a page of 670 MB
    of 1-5 KiB strings took 5 GiB of int64 indices before). Ranges may overlap and come in
    any order; a range outside ``data`` raises ValueError (callers check them first)."""
    fast = kernels.kernel("gather_ranges", 16 * len(starts)) if piece is None else None
    if fast is not None and (got := fast(data, starts, lengths)) is not None:
        return got  # the compiled twin, when installed (one pass, no index arrays)
    piece = GATHER_PIECE if piece is None else max(1, int(piece))
    starts = np.asarray(starts, np.int64).reshape(-1)
    lengths = np.asarray(lengths, np.int64).reshape(-1)
    if len(starts) != len(lengths):
        raise ValueError("gather_ranges: starts and lengths differ in length")
    live = lengths != 0
    if not live.all():
        starts, lengths = starts[live], lengths[live]
    if len(starts) == 0:
        return np.zeros(0, data.dtype)
    size = len(data)
    if min(lengths.min(), starts.min()) < 0 or max(lengths.max(), starts.max()) > size \
            or int((starts + lengths).max()) > size:  # (no sum overflows: both are <= size)
        raise ValueError("gather_ranges: a range lies outside the data")
    pos = np.zeros(len(starts) + 1, np.int64)  # where each range goes in the output
    np.cumsum(lengths, out=pos[1:])
    total = int(pos[-1])
    out = np.empty(total, data.dtype)
    # cut at every multiple of ``piece`` output bytes, and around each range longer than it
    cuts = np.searchsorted(pos, np.arange(piece, total, piece, dtype=np.int64), side="right") - 1
    long_ranges = np.flatnonzero(lengths >= piece)
    cuts = np.unique(np.concatenate([[0, len(starts)], cuts, long_ranges, long_ranges + 1]))
    idx_t = np.int32 if size < (1 << 31) - 1 else np.int64
    for a, b in zip(cuts[:-1].tolist(), cuts[1:].tolist(), strict=True):
        lo, hi = int(pos[a]), int(pos[b])
        if hi - lo > LONG_RANGE * (b - a):
            # long ranges: one memcpy per range beats three passes per byte over an index
            np.concatenate([data[s:s + n] for s, n in zip(starts[a:b].tolist(),
                                                           lengths[a:b].tolist(), strict=True)],
                           out=out[lo:hi])
            continue
        s, n = starts[a:b], lengths[a:b]
        jump = np.empty(b - a, idx_t)
        jump[0] = s[0]
        jump[1:] = s[1:] - (s[:-1] + n[:-1] - 1)
        src = np.ones(hi - lo, idx_t)
        src[pos[a:b] - lo] = jump
        np.cumsum(src, out=src)
        np.take(data, src, out=out[lo:hi], mode="clip")  # in range: checked above
    return out


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
