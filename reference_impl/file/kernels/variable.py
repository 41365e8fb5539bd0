"""Compiled twin of :func:`reference_impl.file.encodings.v2_1.variable.decode_chunk_set`: the
``variable`` values of every mini-block chunk of a page, as one ``(offsets, bytes)`` pair.

The readable function reads every chunk's offsets with a gather, widens them, takes their
differences, masks out the chunk boundaries, sums them up again and gathers the chunks'
value bytes: eight passes over the values, each a new array. Here one loop walks the chunks:
it checks a chunk's first and last offset (where the values start and end), then turns its
offsets into the page's (value lengths summed from 0, each length checked not negative)
and copies its value bytes. The checks are the readable function's; any chunk that fails one
makes the wrapper return ``None``, and the readable function then refuses the page with its
own error, as it always has. When every chunk starts at a multiple of the offset width (as
in every file pylance writes) the offsets are read as words (:func:`_chunks_aligned`),
otherwise byte by byte (:func:`_chunks`).
"""

from __future__ import annotations

import numpy as np

from ._jit import jit


@jit
def _copy_values(data, starts, los, counts, out_offs, out):
    """The value bytes of every chunk, one after another, into ``out``: chunk ``c``'s values
    start ``los[c]`` bytes into it and take the bytes ``out_offs`` gives them (both kernels
    below checked every range: lo <= hi <= size)."""
    o = 0
    v = 0
    for c in range(len(starts)):
        lo = los[c]
        n = out_offs[v + counts[c]] - out_offs[v]
        out[o:o + n] = data[starts[c] + lo:starts[c] + lo + n]
        o += n
        v += counts[c]


@jit
def _chunks(data, starts, sizes, counts, w, out_offs, out):
    """Fill ``out_offs`` (values + 1, from 0) and ``out`` (the value bytes) from every chunk.
    Returns 0, or 1 when a chunk's offsets do not start right after themselves or end past
    the chunk, 2 when a chunk's offsets go backwards (the readable function's two checks, in
    its order: the first over every chunk before the second). An offset is the ``w``-byte
    (4 or 8) little-endian word at its place, as int64 (8-byte offsets of 2^63 or more wrap
    negative, as the readable ``astype`` does); the loads are written out in each loop (a call
    per offset costs more than the load)."""
    nc = len(starts)
    los = np.empty(nc, np.int64)
    for c in range(nc):
        n_off = counts[c] + 1
        at = starts[c]
        lo = np.uint64(0)
        for b in range(w):
            lo |= np.uint64(data[at + b]) << np.uint64(8 * b)
        at = starts[c] + counts[c] * w
        hi = np.uint64(0)
        for b in range(w):
            hi |= np.uint64(data[at + b]) << np.uint64(8 * b)
        if np.int64(lo) != n_off * w or np.int64(hi) > sizes[c]:
            return 1
        los[c] = np.int64(lo)
    v = 0
    o = 0
    for c in range(nc):
        s = starts[c]
        prev = los[c]
        for j in range(1, counts[c] + 1):
            at = s + j * w
            x = np.uint64(0)
            for b in range(w):
                x |= np.uint64(data[at + b]) << np.uint64(8 * b)
            cur = np.int64(x)
            if cur < prev:
                return 2
            o += cur - prev
            v += 1
            out_offs[v] = o
            prev = cur
    # the value bytes, chunk by chunk (every range checked above: lo <= hi <= size)
    _copy_values(data, starts, los, counts, out_offs, out)
    return 0


@jit
def _chunks_aligned(data, words, starts, sizes, counts, w, out_offs, out):
    """:func:`_chunks` for chunks that start at multiples of ``w`` in ``data``: the offsets
    are read as the words they are (``words``: ``data`` seen as little-endian ``w``-byte
    words, as int64 after the same wrap)."""
    nc = len(starts)
    los = np.empty(nc, np.int64)
    for c in range(nc):
        at = starts[c] // w
        lo = np.int64(words[at])
        hi = np.int64(words[at + counts[c]])
        if lo != (counts[c] + 1) * w or hi > sizes[c]:
            return 1
        los[c] = lo
    v = 0
    o = 0
    for c in range(nc):
        at = starts[c] // w
        prev = los[c]
        for j in range(1, counts[c] + 1):
            cur = np.int64(words[at + j])
            if cur < prev:
                return 2
            o += cur - prev
            v += 1
            out_offs[v] = o
            prev = cur
    _copy_values(data, starts, los, counts, out_offs, out)
    return 0


def decode_chunk_set(data: np.ndarray, starts: np.ndarray, sizes: np.ndarray, counts: np.ndarray,
                     w: int):
    """``(offsets int64[n+1], bytes uint8)`` of the chunks, or ``None`` for anything the
    readable function would refuse (or could not be sure of: it is then the one to say)."""
    starts = np.ascontiguousarray(starts, np.int64)
    sizes = np.ascontiguousarray(sizes, np.int64)
    counts = np.ascontiguousarray(counts, np.int64)
    if w not in (4, 8) or len(starts) != len(counts) or len(sizes) != len(counts):
        return None
    if len(counts) == 0 or counts.min() < 0 or bool(np.any(sizes < (counts + 1) * w)) \
            or int(starts.min()) < 0 or int((starts + sizes).max()) > len(data):
        return None
    n = int(counts.sum())
    out_offs = np.empty(n + 1, np.int64)
    out_offs[0] = 0
    # the value bytes are at most the chunks' sizes less their offsets
    room = int((sizes - (counts + 1) * w).sum())
    out = np.empty(room, np.uint8)
    data = np.ascontiguousarray(data, np.uint8)
    if not bool(np.any(starts % w)):  # (pylance's chunks: every buffer starts 8-aligned)
        words = data[:len(data) - len(data) % w].view("<u4" if w == 4 else "<u8")
        if _chunks_aligned(data, words, starts, sizes, counts, int(w), out_offs, out):
            return None
    elif _chunks(data, starts, sizes, counts, int(w), out_offs, out):
        return None
    return out_offs, out[:int(out_offs[-1])]
