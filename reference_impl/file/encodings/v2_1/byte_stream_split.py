"""``ByteStreamSplit{values: flat 32|64}`` (FILE-ENCODINGS §4.8).

A chunk of ``n`` values of ``B`` bytes holds ``B`` planes of ``n`` bytes; plane ``j`` is byte
``j`` of every value. Decoding transposes ``buf.reshape(B, n)``.
"""

from __future__ import annotations

import numpy as np

from reference_impl.errors import FormatError

from .values import Fixed

RULE = "ENC-013"


def decode_chunks(bufs: list, counts: list, T: int) -> Fixed:
    if T not in (16, 32, 64):
        raise FormatError(f"byte-stream-split of {T}-bit values", rule=RULE)
    B = T // 8
    parts = []
    for b, n in zip(bufs, counts, strict=False):
        if len(b) < n * B:
            raise FormatError(f"byte-stream-split chunk of {len(b)} bytes for {n} values", rule=RULE)
        parts.append(np.frombuffer(b, np.uint8, n * B).reshape(B, n).T.reshape(-1))
    return Fixed(np.concatenate(parts) if parts else np.zeros(0, np.uint8), T)
