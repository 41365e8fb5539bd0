"""SQ: scalar quantisation of the vectors of an IVF partition.

Every value of every vector is mapped to ``num_bits`` bits (8 in every release seen) over one
range ``[start, end]`` shared by the whole index (``bounds``; the range of the training
values)::

    code = floor((value - start) / (end - start) * (2**num_bits - 1)), clamped to the bit range

pylance 14.0.2 quantises the vector itself (no residual), truncating (seen: every stored code
equals the floor). A code is judged wrong when it differs from this by more than 1 (the
rounding of another release's formula is no finding).

Lance-file layout: column ``__sq_code`` (fixed_size_list<uint8>[D]) of ``auxiliary.idx`` in row
order, and ``storage_metadata`` (schema metadata, a JSON list of one JSON text per partition
group) ``{"dim", "num_bits", "bounds": {"start", "end"}}``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class ScalarQuantizer:
    num_bits: int
    start: float
    end: float

    def quantize(self, x: np.ndarray) -> np.ndarray:
        top = (1 << self.num_bits) - 1
        span = self.end - self.start
        if span <= 0:
            return np.zeros(np.shape(x), dtype=np.int64)
        q = np.floor((np.asarray(x, dtype=np.float64) - self.start) / span * top)
        return np.clip(q, 0, top).astype(np.int64)

    def quantize_readable(self, v) -> list[int]:
        top = (1 << self.num_bits) - 1
        span = self.end - self.start
        out = []
        for value in v:
            q = int(np.floor((float(value) - self.start) / span * top)) if span > 0 else 0
            out.append(min(max(q, 0), top))
        return out

    def decode(self, codes: np.ndarray) -> np.ndarray:
        """The values the codes stand for, ``start + code / (2**num_bits - 1) * (end - start)``
        (the bottom of each code's bucket: pylance 14.0.2's IVF_HNSW_SQ graph records the
        distances of these, measured exact for the inner product)."""
        top = (1 << self.num_bits) - 1
        return self.start + np.asarray(codes, dtype=np.float64) / top * (self.end - self.start)

    def wrong_codes(self, x: np.ndarray, codes: np.ndarray, *, slack: int = 1) -> np.ndarray:
        """Positions of rows with a value whose code is more than ``slack`` from its
        quantisation."""
        diff = np.abs(self.quantize(x) - np.asarray(codes, dtype=np.int64))
        return np.nonzero((diff > slack).any(1))[0]
