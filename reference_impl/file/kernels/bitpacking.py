"""Compiled twin of FastLanes bit-unpacking
(:func:`reference_impl.file.encodings.v2_1.bitpacking.unpack_blocks`).

A block of 1024 values of ``T`` bits is ``W * LANES`` words (``LANES = 1024 / T``); row ``r``
of lane ``l`` is bits ``[r*W, r*W + W)`` of lane ``l``'s words and goes to output position
``FL_ORDER[r // 8] * 16 + (r % 8) * 128 + l``. The readable function does one numpy step per
row over all blocks; this loop does the same arithmetic block by block, one row's run of
``LANES`` contiguous words at a time in the words' own type (a loop LLVM vectorises). The wrappers check the shapes every index relies on (``W <=
T``, words exactly ``(k, W * LANES)``, blocks ``(B, 1024)``) and leave anything else to the
readable functions (``None``), which refuse it as they always have.
"""

from __future__ import annotations

import numpy as np

from ._jit import jit

FL_ORDER = (0, 4, 2, 6, 1, 5, 3, 7)
UINT = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}


@jit
def _unpack_block(wb, T, W, rows, ob):
    # One block: ``wb`` its W * LANES words, ``ob`` its 1024 values (W >= 1). Row r of every
    # lane is one contiguous run of LANES words in and LANES values out, so the inner loops
    # are straight copies with one shift (two when the row straddles a word) over 1-D
    # slices, in the words' own type: LLVM turns them into vector instructions (about 10x
    # the earlier loop that widened every word to 64 bits inside a 2-D index).
    lanes = 1024 // T
    mask = wb.dtype.type(np.uint64(0xFFFFFFFFFFFFFFFF) if W >= 64 else
                         (np.uint64(1) << np.uint64(W)) - np.uint64(1))
    for r in range(T):
        bit = r * W
        lo = (bit // T) * lanes
        s = bit % T
        src = wb[lo:lo + lanes]
        dst = ob[rows[r]:rows[r] + lanes]
        sh = wb.dtype.type(s)
        if s + W > T:  # the row's bits continue in the next word of the lane (0 < s)
            nxt = wb[lo + lanes:lo + 2 * lanes]
            sh2 = wb.dtype.type(T - s)
            for lane in range(lanes):
                dst[lane] = ((src[lane] >> sh) | (nxt[lane] << sh2)) & mask
        else:
            for lane in range(lanes):
                dst[lane] = (src[lane] >> sh) & mask


@jit
def _unpack(words, T, W, rows, out):
    for b in range(words.shape[0]):
        _unpack_block(words[b], T, W, rows, out[b])


@jit
def _out_of_line(data, starts, full, tail, r, offsets, T, W, rows, out, tmp):
    # chunk c: full[c] blocks, then (tail[c] == 1) r[c] raw words or (tail[c] == 2) a padded
    # block of which r[c] values count; its values go to out[offsets[c]:]
    B = T // 8
    nbytes = (1024 * W // T) * B
    for c in range(len(starts)):
        p = starts[c]
        o = offsets[c]
        for _ in range(full[c]):
            _unpack_block(data[p:p + nbytes].view(out.dtype), T, W, rows, out[o:o + 1024])
            p += nbytes
            o += 1024
        if tail[c] == 1:
            out[o:o + r[c]] = data[p:p + r[c] * B].view(out.dtype)
        elif tail[c] == 2:
            _unpack_block(data[p:p + nbytes].view(out.dtype), T, W, rows, tmp)
            out[o:o + r[c]] = tmp[:r[c]]


@jit
def _inline(data, starts, widths, counts, offsets, T, rows, out, tmp):
    # chunk c: a width word, then one block of 1024 values at that width, counts[c] of them kept
    B = T // 8
    for c in range(len(starts)):
        W = widths[c]
        o = offsets[c]
        n = counts[c]
        if W == 0:
            out[o:o + n] = 0
            continue
        p = starts[c] + B
        words = data[p:p + (1024 * W // T) * B].view(out.dtype)
        if n == 1024:
            _unpack_block(words, T, W, rows, out[o:o + 1024])
        else:
            _unpack_block(words, T, W, rows, tmp)
            out[o:o + n] = tmp[:n]


def _rows(T: int) -> np.ndarray:
    return np.array([FL_ORDER[r // 8] * 16 + (r % 8) * 128 for r in range(T)], np.int64)


def out_of_line_chunks(data, starts, sizes, counts, T: int, W: int):
    """The twin of the readable ``decode_out_of_line_chunks``: the same values, or ``None``
    wherever it returns ``None`` (and for width 0, left to it)."""
    if T not in UINT or not 0 < W <= T or not isinstance(data, np.ndarray) or data.dtype != np.uint8:
        return None
    dt = UINT[T]
    B = T // 8
    starts, sizes, counts = (np.ascontiguousarray(x, np.int64).reshape(-1) for x in (starts, sizes, counts))
    if not len(starts) == len(sizes) == len(counts):
        return None
    if np.any(sizes % B) or np.any(counts < 0) or np.any(starts < 0) or np.any(sizes < 0) \
            or (len(starts) and int((starts + sizes).max()) > len(data)):
        return None
    words = sizes // B
    full, r = np.divmod(counts, 1024)
    per = 1024 * W // T
    tail_words = words - full * per
    raw_tail = (r > 0) & (tail_words == r)
    block_tail = (r > 0) & ~raw_tail
    if np.any(tail_words < 0) or np.any(block_tail & (tail_words < per)):
        return None
    offsets = np.zeros(len(counts) + 1, np.int64)
    np.cumsum(counts, out=offsets[1:])
    out = np.empty(int(offsets[-1]), dt)
    tail = np.where(raw_tail, 1, np.where(block_tail, 2, 0)).astype(np.int64)
    _out_of_line(np.ascontiguousarray(data), starts, full, tail, r, offsets, int(T), int(W), _rows(T),
                 out, np.empty(1024, dt))
    return out


def inline_chunks(data, starts, sizes, widths, counts, T: int):
    """The twin of the readable ``decode_inline_set`` once it has checked the chunks (every
    chunk's width at most ``T``, its block within its buffer, at most 1024 values): the
    chunks' kept values, concatenated."""
    dt = UINT[T]
    B = T // 8
    starts, sizes, widths, counts = (np.ascontiguousarray(x, np.int64).reshape(-1)
                                     for x in (starts, sizes, widths, counts))
    if not isinstance(data, np.ndarray) or data.dtype != np.uint8 or np.any(widths < 0) \
            or np.any(widths > T) or np.any(counts < 0) or np.any(counts > 1024) \
            or np.any(starts < 0) or np.any(sizes < (1 + 1024 * widths // T) * B) \
            or (len(starts) and int((starts + sizes).max()) > len(data)):
        return None
    offsets = np.zeros(len(counts) + 1, np.int64)
    np.cumsum(counts, out=offsets[1:])
    out = np.empty(int(offsets[-1]), dt)
    _inline(np.ascontiguousarray(data), starts, widths, counts, offsets, int(T), _rows(T), out,
            np.empty(1024, dt))
    return out


def unpack_blocks(words: np.ndarray, T: int, W: int) -> np.ndarray:
    """``(k, W*LANES)`` words of ``T`` bits -> ``(k, 1024)`` values, as the readable twin."""
    dt = UINT[T]
    k = words.shape[0]
    if not 0 <= W <= T or words.ndim != 2 or words.shape[1] != W * (1024 // T):
        return None  # not a block shape: the readable function says what is wrong
    if W == 0 or k == 0:
        return np.zeros((k, 1024), dt)
    out = np.empty((k, 1024), dt)  # (every position is written: T rows of 1024 / T lanes)
    rows = _rows(T)
    src = words if words.dtype == dt and words.ndim == 2 else np.asarray(words, dt).reshape(k, -1)
    _unpack(src, int(T), int(W), rows, out)  # (a strided view is read where it lies)
    return out


@jit
def _pack(blocks, T, W, rows, out):
    # the inverse of _unpack, laid out the same way (1-D runs of LANES, the words' own type)
    k = blocks.shape[0]
    lanes = 1024 // T
    mask = out.dtype.type(np.uint64(0xFFFFFFFFFFFFFFFF) if W >= 64 else
                          (np.uint64(1) << np.uint64(W)) - np.uint64(1))
    for b in range(k):
        bb = blocks[b]
        ob = out[b]
        for r in range(T):
            bit = r * W
            lo = (bit // T) * lanes
            s = bit % T
            src = bb[rows[r]:rows[r] + lanes]
            dst = ob[lo:lo + lanes]
            sh = out.dtype.type(s)
            for lane in range(lanes):
                dst[lane] = dst[lane] | ((src[lane] & mask) << sh)
            if s + W > T:  # the value's high bits start the next word of the lane
                nxt = ob[lo + lanes:lo + 2 * lanes]
                sh2 = out.dtype.type(T - s)
                for lane in range(lanes):
                    nxt[lane] = nxt[lane] | ((src[lane] & mask) >> sh2)


def fastlanes_pack(blocks: np.ndarray, T: int, W: int) -> np.ndarray:
    """``(B, 1024)`` values of ``T`` bits -> ``(B, W*LANES)`` words at width ``W``, as the
    writer's readable ``fastlanes_pack`` (only the low ``W`` bits of each value are kept)."""
    dt = UINT[T]
    B = blocks.shape[0]
    if not 0 <= W <= T or blocks.ndim != 2 or blocks.shape[1] != 1024:
        return None  # not a block shape: the readable function says what is wrong
    out = np.zeros((B, W * (1024 // T)), dt)
    if W == 0 or B == 0:
        return out
    rows = np.array([FL_ORDER[r // 8] * 16 + (r % 8) * 128 for r in range(T)], np.int64)
    _pack(np.ascontiguousarray(blocks, dt), int(T), int(W), rows, out)
    return out
