"""``Flat{bits_per_value}``: a packed array of fixed-width values (FILE-ENCODINGS §4.1).

Widths that are a multiple of 8 are little-endian values back to back; width 1 is an
LSB-first bitmap. Mini-block chunks hold ``count`` values each; a block holds ``n``.
"""

from __future__ import annotations

import numpy as np

from reference_impl.errors import FormatError

from .values import Fixed

RULE = "ENC-002"


def check_bits(bits: int) -> None:
    if bits != 1 and (bits <= 0 or bits % 8):
        raise FormatError(f"flat width of {bits} bits is not supported", rule=RULE)


def decode(buf, n: int, bits: int) -> Fixed:
    """``n`` values of ``bits`` bits from the start of ``buf``."""
    check_bits(bits)
    if bits == 1:
        need = (n + 7) // 8
        if len(buf) < need:
            raise FormatError(f"bitmap of {n} bits needs {need} bytes, has {len(buf)}", rule=RULE)
        raw = np.frombuffer(buf, np.uint8, need)
        return Fixed(np.unpackbits(raw, bitorder="little", count=n).astype(bool), 1)
    need = n * (bits // 8)
    if len(buf) < need:
        raise FormatError(f"{n} flat values of {bits} bits need {need} bytes, has {len(buf)}", rule=RULE)
    return Fixed(np.frombuffer(buf, np.uint8, need), bits)


def decode_chunks(bufs: list, counts: list, bits: int) -> Fixed:
    check_bits(bits)
    if bits == 1:
        return Fixed(np.concatenate([decode(b, c, 1).data for b, c in zip(bufs, counts, strict=False)]) if bufs
                     else np.zeros(0, bool), 1)
    w = bits // 8
    parts = []
    for b, c in zip(bufs, counts, strict=False):
        if len(b) < c * w:
            raise FormatError(f"chunk of {c} values of {bits} bits needs {c * w} bytes, has {len(b)}", rule=RULE)
        parts.append(np.frombuffer(b, np.uint8, c * w))
    return Fixed(np.concatenate(parts) if parts else np.zeros(0, np.uint8), bits)


def decode_chunk_set(cs, counts, bits: int) -> Fixed:
    """Flat values of every chunk of a :class:`~.chunks.ChunkSet` (buffer 0)."""
    check_bits(bits)
    if bits == 1:
        return decode_chunks(cs.buffers(0), counts.tolist(), 1)
    need = counts * (bits // 8)
    if np.any(cs.sizes[0] < need):
        raise FormatError(f"a chunk's flat buffer is shorter than its {bits}-bit values", rule=RULE)
    return Fixed(cs.gather(0, need), bits)
