"""Structural dictionaries of mini-block pages (FILE-ENCODINGS §3.2 "Buffer 2").

The dictionary buffer is block-decoded (``MiniBlockLayout.dictionary``, count
``num_dictionary_items``); the chunk values are then 0-based dictionary indices (decoded as
32-bit integers, in 14.0.2 ``inline_bitpacking{32}``). Null slots carry arbitrary indices that
still point inside the dictionary. The ``Dictionary`` CompressiveEncoding node (message 7) is
not used by 14.0.2.
"""

from __future__ import annotations

import numpy as np

from reference_impl.errors import FormatError

from .values import Fixed

RULE = "ENC-017"


def resolve(indices, items):
    """Replace integer ``indices`` (a :class:`Fixed`) by the dictionary entries."""
    if indices is None:
        return items.take(np.zeros(0, np.int64))
    if not isinstance(indices, Fixed) or indices.bits not in (8, 16, 32, 64):
        raise FormatError("dictionary indices must be integers", rule=RULE)
    idx = indices.data.view(f"<u{indices.bits // 8}").astype(np.int64)
    n_items = items.n
    if len(idx) and (idx.max(initial=0) >= n_items or idx.min(initial=0) < 0):
        raise FormatError(f"dictionary index {int(idx.max())} outside {n_items} items", rule=RULE)
    return items.take(idx)
