"""Block context of the ``CompressiveEncoding`` tree (FILE-ENCODINGS §4): a whole buffer
holding ``n`` values (levels, dictionary items, constant-page levels, 2.3 sequences).

:func:`kind` names a node's compression, :func:`needs_bytes` tells whether a block tree
reads a buffer at all and :func:`decode_block` decodes one. :mod:`.compressive` (mini-block
and per-value contexts) and :mod:`..v2_3.sequence` both build on this module.
"""

from __future__ import annotations

import numpy as np

from reference_impl.errors import FormatError

from . import bitpacking, fixed_size_list, flat, general, rle, variable
from .values import Fixed

RULE = "ENC-001"


def kind(node) -> str:
    k = node.WhichOneof("compression")
    if k is None:
        raise FormatError("compressive encoding is empty", rule=RULE)
    return k


def needs_bytes(node) -> bool:
    """Whether a block tree reads a buffer (2.3 ``Range``/``Constant`` sequences need none)."""
    k = kind(node)
    if k in ("range", "constant"):
        return False
    if k == "delta":
        return needs_bytes(node.delta.deltas)
    if k == "dictionary":
        return needs_bytes(node.dictionary.indices) or needs_bytes(node.dictionary.items)
    if k == "rle":
        return needs_bytes(node.rle.values) or needs_bytes(node.rle.run_lengths)
    return True


def decode_block(node, buf, n: int):
    """Decode a whole buffer holding ``n`` values."""
    k = kind(node)
    if k == "flat":
        return flat.decode(buf, n, int(node.flat.bits_per_value))
    if k == "inline_bitpacking":
        T = int(node.inline_bitpacking.uncompressed_bits_per_value)
        if n > 1024:
            raise FormatError(f"an inline bit-packed block holds at most 1024 values, not {n}", rule=bitpacking.RULE)
        return Fixed(bitpacking.decode_inline([buf], [n], T).view(np.uint8), T)
    if k == "out_of_line_bitpacking":
        o = node.out_of_line_bitpacking
        if kind(o.values) != "flat":
            raise FormatError("out-of-line bit-packed values must be flat", rule=bitpacking.RULE)
        T = int(o.uncompressed_bits_per_value)
        return Fixed(bitpacking.decode_out_of_line(buf, n, T, int(o.values.flat.bits_per_value)).view(np.uint8), T)
    if k == "variable":
        return variable.decode_block(buf, n)
    if k == "rle":
        return rle.decode_block(buf, n, rle.widths(node.rle))
    if k == "general":
        raw = general.decompress(int(node.general.compression.scheme), buf)
        return decode_block(node.general.values, raw, n)
    if k == "fixed_size_list":
        return fixed_size_list.decode_block(node, buf, n)
    if k == "constant":
        v = bytes(node.constant.value)
        if not v:
            raise FormatError("constant encoding without a value", rule=RULE)
        return Fixed(np.tile(np.frombuffer(v, np.uint8), n), 8 * len(v))
    raise FormatError(f"{k} is not a block encoding", rule=RULE)
