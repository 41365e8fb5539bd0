"""Compiled twin of FastLanes bit-unpacking
(:func:`reference_impl.file.encodings.v2_1.bitpacking.unpack_blocks`).

A block of 1024 values of ``T`` bits is ``W * LANES`` words (``LANES = 1024 / T``); row ``r``
of lane ``l`` is bits ``[r*W, r*W + W)`` of lane ``l``'s words and goes to output position
``FL_ORDER[r // 8] * 16 + (r % 8) * 128 + l``. The readable function does one numpy step per
row over all blocks; this loop does the same arithmetic block by block, in 64-bit registers,
and stores the low ``T`` bits. The wrappers check the shapes every index relies on (``W <=
T``, words exactly ``(k, W * LANES)``, blocks ``(B, 1024)``) and leave anything else to the
readable functions (``None``), which refuse it as they always have.
"""

from __future__ import annotations

import numpy as np

from ._jit import jit

FL_ORDER = (0, 4, 2, 6, 1, 5, 3, 7)
UINT = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}


@jit
def _unpack(words, T, W, rows, out):
    k = words.shape[0]
    lanes = 1024 // T
    mask = np.uint64(0xFFFFFFFFFFFFFFFF) if W >= 64 else (np.uint64(1) << np.uint64(W)) - np.uint64(1)
    for b in range(k):
        for r in range(T):
            bit = r * W
            w = bit // T
            s = bit % T
            base = rows[r]
            two = s + W > T
            for lane in range(lanes):
                v = np.uint64(words[b, w * lanes + lane]) >> np.uint64(s)
                if two:
                    v |= np.uint64(words[b, (w + 1) * lanes + lane]) << np.uint64(T - s)
                out[b, base + lane] = v & mask


def unpack_blocks(words: np.ndarray, T: int, W: int) -> np.ndarray:
    """``(k, W*LANES)`` words of ``T`` bits -> ``(k, 1024)`` values, as the readable twin."""
    dt = UINT[T]
    k = words.shape[0]
    if not 0 <= W <= T or words.ndim != 2 or words.shape[1] != W * (1024 // T):
        return None  # not a block shape: the readable function says what is wrong
    if W == 0 or k == 0:
        return np.zeros((k, 1024), dt)
    out = np.empty((k, 1024), dt)  # (every position is written: T rows of 1024 / T lanes)
    rows = np.array([FL_ORDER[r // 8] * 16 + (r % 8) * 128 for r in range(T)], np.int64)
    src = words if words.dtype == dt and words.ndim == 2 else np.asarray(words, dt).reshape(k, -1)
    _unpack(src, int(T), int(W), rows, out)  # (a strided view is read where it lies)
    return out


@jit
def _pack(blocks, T, W, rows, out):
    k = blocks.shape[0]
    lanes = 1024 // T
    mask = np.uint64(0xFFFFFFFFFFFFFFFF) if W >= 64 else (np.uint64(1) << np.uint64(W)) - np.uint64(1)
    for b in range(k):
        for r in range(T):
            bit = r * W
            w = bit // T
            s = bit % T
            base = rows[r]
            two = s + W > T
            for lane in range(lanes):
                v = np.uint64(blocks[b, base + lane]) & mask
                i = w * lanes + lane
                out[b, i] = np.uint64(out[b, i]) | (v << np.uint64(s))
                if two:
                    j = i + lanes
                    out[b, j] = np.uint64(out[b, j]) | (v >> np.uint64(T - s))


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
