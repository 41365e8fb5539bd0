"""``Bitpacked`` and ``BitpackedForNonNeg``: older 2.0 integer packings.

* ``Bitpacked{compressed_bits_per_value: W, uncompressed_bits_per_value: T, buffer, signed}``:
  a plain LSB-first bit stream, value *i* occupying bits ``[i*W, (i+1)*W)``; sign-extended
  from W bits when ``signed``.
* ``BitpackedForNonNeg{W, T, buffer}``: FastLanes blocks of 1024 values (the transposed
  layout of FILE-ENCODINGS §4.3), ``1024*W/T`` T-bit words per block, the last block
  zero-padded.

pylance 14.0.2 never writes either (FILE-ENCODINGS §2.2); both decode vectorised.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from ._common import RULE_NODE, PageContext, fixed_width_bits, need, register

FL_ORDER = np.array([0, 4, 2, 6, 1, 5, 3, 7])
_UINT = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}


def _sequential(node, ctx: PageContext, num_rows: int) -> np.ndarray:
    w, t = int(node.compressed_bits_per_value), int(node.uncompressed_bits_per_value)
    if t not in _UINT or w > t:
        raise ctx.error(f"bitpacked widths W={w}, T={t} invalid", RULE_NODE)
    buf = ctx.buffer(node.buffer)
    need(buf, (num_rows * w + 7) // 8, ctx, "bitpacked stream")
    out = np.zeros(num_rows, np.uint64)
    if w and num_rows:
        bits = np.unpackbits(
            np.frombuffer(buf, np.uint8, count=(num_rows * w + 7) // 8), bitorder="little"
        )
        bits = bits[: num_rows * w].reshape(num_rows, w).astype(np.uint64)
        out = (bits << np.arange(w, dtype=np.uint64)).sum(axis=1, dtype=np.uint64)
        if getattr(node, "signed", False) and w < 64:
            sign = np.uint64(1) << np.uint64(w - 1)
            out = (out ^ sign) - sign  # two's-complement sign extension, wraps in uint64
    return out


def fastlanes_unpack(words: np.ndarray, t: int, w: int) -> np.ndarray:
    """Unpack one 1024-value FastLanes block of ``w``-bit values from ``t``-bit words."""
    lanes = 1024 // t
    out = np.zeros(1024, np.uint64)
    if w == 0:
        return out
    p = words.astype(np.uint64).reshape(w, lanes)
    mask = np.uint64((1 << w) - 1) if w < 64 else np.uint64(0xFFFFFFFFFFFFFFFF)
    lane = np.arange(lanes)
    for row in range(t):
        bit = row * w
        k, s = divmod(bit, t)
        v = p[k] >> np.uint64(s)
        if s + w > t:
            v = v | (p[k + 1] << np.uint64(t - s))
        if t < 64:
            v = v & np.uint64((1 << t) - 1)
        idx = FL_ORDER[row // 8] * 16 + (row % 8) * 128 + lane
        out[idx] = v & mask
    return out


def _fastlanes(node, ctx: PageContext, num_rows: int) -> np.ndarray:
    w, t = int(node.compressed_bits_per_value), int(node.uncompressed_bits_per_value)
    if t not in _UINT or w > t:
        raise ctx.error(f"bitpacked_for_non_neg widths W={w}, T={t} invalid", RULE_NODE)
    blocks = (num_rows + 1023) // 1024
    per_block = 1024 * w // t
    buf = ctx.buffer(node.buffer)
    need(buf, blocks * per_block * t // 8, ctx, "FastLanes blocks")
    words = np.frombuffer(buf, np.dtype(_UINT[t]).newbyteorder("<"), count=blocks * per_block)
    parts = [
        fastlanes_unpack(words[b * per_block : (b + 1) * per_block], t, w) for b in range(blocks)
    ]
    return (np.concatenate(parts) if parts else np.zeros(0, np.uint64))[:num_rows]


def unsigned(case: str, node, ctx: PageContext, num_rows: int) -> np.ndarray:
    return (
        _sequential(node, ctx, num_rows) if case == "bitpacked" else _fastlanes(node, ctx, num_rows)
    )


def _to_arrow(values: np.ndarray, t: int, data_type: pa.DataType, ctx: PageContext) -> pa.Array:
    bits = fixed_width_bits(data_type)
    if bits != t or not pa.types.is_integer(data_type):
        raise ctx.error(f"bit-packed {t}-bit integers cannot be {data_type}", RULE_NODE)
    raw = values.astype(_UINT[t])
    return pa.Array.from_buffers(data_type, len(values), [None, pa.py_buffer(raw.tobytes())])


@register("bitpacked")
def decode_bitpacked(node, ctx: PageContext, num_rows: int, data_type: pa.DataType) -> pa.Array:
    return _to_arrow(
        _sequential(node, ctx, num_rows), int(node.uncompressed_bits_per_value), data_type, ctx
    )


@register("bitpacked_for_non_neg")
def decode_fastlanes(node, ctx: PageContext, num_rows: int, data_type: pa.DataType) -> pa.Array:
    return _to_arrow(
        _fastlanes(node, ctx, num_rows), int(node.uncompressed_bits_per_value), data_type, ctx
    )
