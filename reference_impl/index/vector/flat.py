"""FLAT storage of an IVF partition: the vectors themselves.

Lance-file layout: column ``flat`` (fixed_size_list<float>[D], or the column's own float type)
of ``auxiliary.idx`` in row order beside ``_rowid``, ``storage_metadata`` ``{"dim": D}``. A
stored vector must equal the row's vector (cosine indexes of some releases store the vector
scaled to unit length; both are accepted for cosine).
"""

from __future__ import annotations

import numpy as np

from reference_impl.index.vector.ivf import normalize


def wrong_vectors(x: np.ndarray, stored: np.ndarray, metric: str, *, rtol: float = 1e-5,
                  atol: float = 1e-6) -> np.ndarray:
    """Positions of rows whose stored vector differs from the row's vector (or, for cosine,
    from its unit-length scaling too)."""
    x = np.asarray(x, dtype=np.float64)
    s = np.asarray(stored, dtype=np.float64)
    same = np.isclose(s, x, rtol=rtol, atol=atol, equal_nan=True).all(1)
    if metric == "cosine":
        same |= np.isclose(s, normalize(x), rtol=rtol, atol=atol, equal_nan=True).all(1)
    return np.nonzero(~same)[0]
