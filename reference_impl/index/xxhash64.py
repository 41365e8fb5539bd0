"""XXH64, the 64-bit xxHash (seed 0 unless given), as the BLOOMFILTER index hashes values.

The algorithm, over a byte string of length ``n`` (all arithmetic modulo 2**64, words read
little-endian)::

    P1..P5 = 0x9E3779B185EBCA87, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9,
             0x85EBCA77C2B2AE63, 0x27D4EB2F165667C5
    round(acc, lane) = rotl(acc + lane * P2, 31) * P1
    if n >= 32:  four accumulators (seed+P1+P2, seed+P2, seed, seed-P1) each take
                 round(acc, lane) over their 8-byte lane of every full 32-byte stripe;
                 h = rotl(v1,1) + rotl(v2,7) + rotl(v3,12) + rotl(v4,18), then for each v:
                 h = (h ^ round(0, v)) * P1 + P4
    else:        h = seed + P5
    h += n
    each remaining 8-byte word k:  h = rotl(h ^ round(0, k), 27) * P1 + P4
    a remaining 4-byte word k:     h = rotl(h ^ (k * P1), 23) * P2 + P3
    each remaining byte b:         h = rotl(h ^ (b * P5), 11) * P1
    avalanche: h ^= h >> 33; h *= P2; h ^= h >> 29; h *= P3; h ^= h >> 32

:func:`xxh64` is the readable one-value form; :func:`xxh64_rows` hashes many values of the
same length at once with numpy (tested equal to :func:`xxh64`), and :func:`xxh64_many`
groups values of any lengths by length to use it.
"""

from __future__ import annotations

import numpy as np

MASK = (1 << 64) - 1
P1 = 0x9E3779B185EBCA87
P2 = 0xC2B2AE3D27D4EB4F
P3 = 0x165667B19E3779F9
P4 = 0x85EBCA77C2B2AE63
P5 = 0x27D4EB2F165667C5


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (64 - r))) & MASK


def _round(acc: int, lane: int) -> int:
    return (_rotl((acc + lane * P2) & MASK, 31) * P1) & MASK


def xxh64(data: bytes, seed: int = 0) -> int:
    """XXH64 of one byte string (the readable form)."""
    n = len(data)
    pos = 0
    if n >= 32:
        v = [(seed + P1 + P2) & MASK, (seed + P2) & MASK, seed & MASK, (seed - P1) & MASK]
        while pos + 32 <= n:
            for i in range(4):
                v[i] = _round(v[i], int.from_bytes(data[pos + 8 * i:pos + 8 * i + 8], "little"))
            pos += 32
        h = (_rotl(v[0], 1) + _rotl(v[1], 7) + _rotl(v[2], 12) + _rotl(v[3], 18)) & MASK
        for acc in v:
            h = (((h ^ _round(0, acc)) * P1) + P4) & MASK
    else:
        h = (seed + P5) & MASK
    h = (h + n) & MASK
    while pos + 8 <= n:
        h = (_rotl(h ^ _round(0, int.from_bytes(data[pos:pos + 8], "little")), 27) * P1 + P4) & MASK
        pos += 8
    if pos + 4 <= n:
        h = (_rotl(h ^ ((int.from_bytes(data[pos:pos + 4], "little") * P1) & MASK), 23) * P2
             + P3) & MASK
        pos += 4
    while pos < n:
        h = (_rotl(h ^ ((data[pos] * P5) & MASK), 11) * P1) & MASK
        pos += 1
    h ^= h >> 33
    h = (h * P2) & MASK
    h ^= h >> 29
    h = (h * P3) & MASK
    h ^= h >> 32
    return h


# ---- numpy form: many values of one length at once ----

_U = np.uint64


def _vrotl(x: np.ndarray, r: int) -> np.ndarray:
    return (x << _U(r)) | (x >> _U(64 - r))


def _vround(acc: np.ndarray, lane: np.ndarray) -> np.ndarray:
    return _vrotl(acc + lane * _U(P2), 31) * _U(P1)


def xxh64_rows(rows: np.ndarray, seed: int = 0) -> np.ndarray:
    """XXH64 of each row of a 2-D ``uint8`` array (all values of the same length)."""
    rows = np.ascontiguousarray(rows, dtype=np.uint8)
    count, n = rows.shape
    with np.errstate(over="ignore"):
        def word64(pos):
            return rows[:, pos:pos + 8].copy().view("<u8").reshape(count).astype(np.uint64)

        pos = 0
        if n >= 32:
            v = [np.full(count, (seed + P1 + P2) & MASK, dtype=np.uint64),
                 np.full(count, (seed + P2) & MASK, dtype=np.uint64),
                 np.full(count, seed & MASK, dtype=np.uint64),
                 np.full(count, (seed - P1) & MASK, dtype=np.uint64)]
            while pos + 32 <= n:
                for i in range(4):
                    v[i] = _vround(v[i], word64(pos + 8 * i))
                pos += 32
            h = _vrotl(v[0], 1) + _vrotl(v[1], 7) + _vrotl(v[2], 12) + _vrotl(v[3], 18)
            zero = np.zeros(count, dtype=np.uint64)
            for acc in v:
                h = (h ^ _vround(zero, acc)) * _U(P1) + _U(P4)
        else:
            h = np.full(count, (seed + P5) & MASK, dtype=np.uint64)
        h = h + _U(n)
        zero = np.zeros(count, dtype=np.uint64)
        while pos + 8 <= n:
            h = _vrotl(h ^ _vround(zero, word64(pos)), 27) * _U(P1) + _U(P4)
            pos += 8
        if pos + 4 <= n:
            k = rows[:, pos:pos + 4].copy().view("<u4").reshape(count).astype(np.uint64)
            h = _vrotl(h ^ (k * _U(P1)), 23) * _U(P2) + _U(P3)
            pos += 4
        while pos < n:
            h = _vrotl(h ^ (rows[:, pos].astype(np.uint64) * _U(P5)), 11) * _U(P1)
            pos += 1
        h ^= h >> _U(33)
        h = h * _U(P2)
        h ^= h >> _U(29)
        h = h * _U(P3)
        h ^= h >> _U(32)
    return h


def xxh64_many(values: list[bytes], seed: int = 0) -> np.ndarray:
    """XXH64 of each byte string of ``values`` (any lengths), grouped by length."""
    out = np.zeros(len(values), dtype=np.uint64)
    if not values:
        return out
    lengths = np.fromiter(map(len, values), dtype=np.int64, count=len(values))
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    joined = np.frombuffer(b"".join(values), dtype=np.uint8)
    for n in np.unique(lengths).tolist():
        idx = np.flatnonzero(lengths == n)
        if n == 0:
            out[idx] = xxh64(b"", seed)
            continue
        rows = joined[starts[idx][:, None] + np.arange(n)[None, :]]
        out[idx] = xxh64_rows(rows, seed)
    return out
