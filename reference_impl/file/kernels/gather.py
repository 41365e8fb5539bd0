"""Compiled twin of :func:`reference_impl.file.encodings.v2_1.chunks.gather_ranges`: the
byte ranges ``data[s:s+n]``, concatenated. The wrapper checks every range against ``data``
before the loop runs, with the readable function's ``ValueError``."""

from __future__ import annotations

import numpy as np

from ._jit import jit


@jit
def _gather(data, starts, lengths, out):
    o = 0
    for j in range(len(starts)):
        s = starts[j]
        n = lengths[j]
        out[o:o + n] = data[s:s + n]
        o += n


def gather_ranges(data: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
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
    out = np.empty(total, data.dtype)
    _gather(np.ascontiguousarray(data), np.where(live, starts, 0), lengths, out)
    return out
