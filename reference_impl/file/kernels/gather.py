"""Compiled twin of :func:`reference_impl.file.encodings.v2_1.chunks.gather_ranges`: the
byte ranges ``data[s:s+n]``, concatenated. The wrapper checks every range against ``data``
before the loop runs, with the readable function's ``ValueError``. It pays for many short
ranges (one value each: the readable function builds an index of every byte for them); for
long ones the readable function's one ``memcpy`` a range is as fast, so it is left to it."""

from __future__ import annotations

import numpy as np

from ._jit import jit

#: ranges averaging more bytes than this are left to the readable function (``None``)
LONG_RANGE = 48


@jit
def _gather(data, starts, lengths, out):
    o = 0
    for j in range(len(starts)):
        s = starts[j]
        n = lengths[j]
        if n > 32:
            out[o:o + n] = data[s:s + n]
        else:
            for k in range(n):
                out[o + k] = data[s + k]
        o += n


def gather_ranges(data: np.ndarray, starts: np.ndarray, lengths: np.ndarray):
    """The concatenated ranges, as the readable twin gives them (the same ``ValueError`` for
    a range outside ``data``), or ``None`` when the ranges are long (the readable copy wins)."""
    starts = np.ascontiguousarray(starts, np.int64).reshape(-1)
    lengths = np.ascontiguousarray(lengths, np.int64).reshape(-1)
    if len(starts) != len(lengths):
        raise ValueError("gather_ranges: starts and lengths differ in length")
    if len(starts) == 0:
        return np.zeros(0, data.dtype)
    size = len(data)
    live = lengths != 0
    if live.any():
        s, n = starts[live], lengths[live]
        if min(n.min(), s.min()) < 0 or max(n.max(), s.max()) > size or int((s + n).max()) > size:
            raise ValueError("gather_ranges: a range lies outside the data")
    elif lengths.min() < 0:
        raise ValueError("gather_ranges: a range lies outside the data")
    total = int(lengths[live].sum())
    if total > LONG_RANGE * len(starts):
        return None  # long ranges: the readable function's one memcpy a range is as fast
    out = np.empty(total, data.dtype)
    _gather(np.ascontiguousarray(data), np.where(live, starts, 0), lengths, out)
    return out
