"""Run-length encoding ``Rle{values: flat T, run_lengths: flat 8}`` (FILE-ENCODINGS §4.5).

* mini-block: two buffers per chunk, the run values (T-bit LE) and u8 run lengths (1..255);
* block (2.2 constant-page levels): ``u64 nbytes_values | values | u8 run lengths``.

2.3 pages written by pylance 14.0.2 also use wider run lengths: ``flat 16`` for mini-block
levels and ``flat 32`` for variable offsets (:func:`widths` accepts 8, 16 and 32), and
bit-packed ones in mini-block chunks: ``run_lengths: out_of_line_bitpacking{8, flat W}`` holds
one run length per flat value of the chunk's value buffer (:func:`decode_chunks_tree`). 2.1/2.2
pages keep flat u8 (see ``compressive.only_in_2_3``).

Decoding is ``np.repeat(values, lengths)[:count]``; the runs must cover ``count`` values.
"""

from __future__ import annotations

import struct

import numpy as np

from reference_impl.errors import FormatError

from .values import Fixed

RULE = "ENC-012"


def widths(node) -> tuple[int, int]:
    """``(value bits, run-length bits)`` of an RLE node."""
    if node.values.WhichOneof("compression") != "flat" or node.run_lengths.WhichOneof("compression") != "flat" \
            or node.run_lengths.flat.bits_per_value not in (8, 16, 32):
        raise FormatError("RLE needs flat values and flat u8, u16 or u32 run lengths", rule=RULE)
    T = int(node.values.flat.bits_per_value)
    if T not in (8, 16, 32, 64, 128):
        raise FormatError(f"RLE over {T}-bit values", rule=RULE)
    return T, int(node.run_lengths.flat.bits_per_value)


def expand(values: np.ndarray, lengths: np.ndarray, count: int, B: int) -> np.ndarray:
    """Byte view of ``count`` values: ``values`` is (runs, B) uint8, ``lengths`` u8."""
    if len(lengths) != len(values):
        raise FormatError(f"RLE has {len(values)} values but {len(lengths)} run lengths", rule=RULE)
    if int(lengths.sum(dtype=np.int64)) < count:
        raise FormatError(f"RLE runs cover {int(lengths.sum())} values, {count} needed", rule=RULE)
    return np.repeat(values, lengths.astype(np.int64), axis=0)[:count].reshape(-1)


def decode_chunks(bufs: list, counts: list, widths_: tuple[int, int]) -> Fixed:
    T, L = widths_
    B = T // 8
    parts = []
    for (vb, lb), c in zip(bufs, counts, strict=False):
        if len(vb) // B < len(lb) and len(vb) % B:
            raise FormatError("RLE value buffer is not a whole number of values", rule=RULE)
        nruns = len(vb) // B
        vals = np.frombuffer(vb, np.uint8, nruns * B).reshape(nruns, B)
        lens = np.frombuffer(lb, f"<u{L // 8}", len(lb) // (L // 8))
        if len(lens) > nruns:
            lens = lens[:nruns]
        elif len(lens) < nruns:
            vals = vals[:len(lens)]
        parts.append(expand(vals, lens, c, B))
    return Fixed(np.concatenate(parts) if parts else np.zeros(0, np.uint8), T)


def decode_chunks_tree(node, bufs: list, counts: list, decode_block_) -> Fixed:
    """Mini-block chunks whose run lengths are a block tree (2.3): the value buffer's flat
    values give the number of runs, ``decode_block_`` (:func:`.compressive.decode_block`,
    passed in to keep the imports one-way) decodes that many run lengths."""
    if node.values.WhichOneof("compression") != "flat":
        raise FormatError("RLE with bit-packed run lengths needs flat values", rule=RULE)
    T = int(node.values.flat.bits_per_value)
    if T not in (8, 16, 32, 64, 128):
        raise FormatError(f"RLE over {T}-bit values", rule=RULE)
    B = T // 8
    parts = []
    for (vb, lb), c in zip(bufs, counts, strict=False):
        if len(vb) % B:
            raise FormatError("RLE value buffer is not a whole number of values", rule=RULE)
        nruns = len(vb) // B
        lens = decode_block_(node.run_lengths, lb, nruns)
        if not isinstance(lens, Fixed) or lens.bits not in (8, 16, 32, 64):
            raise FormatError("RLE run lengths must be integers", rule=RULE)
        lens = np.frombuffer(lens.data.tobytes(), f"<u{lens.bits // 8}", nruns)
        parts.append(expand(np.frombuffer(vb, np.uint8).reshape(nruns, B), lens, c, B))
    return Fixed(np.concatenate(parts) if parts else np.zeros(0, np.uint8), T)


def decode_block(buf, n: int, widths_: tuple[int, int]) -> Fixed:
    T, L = widths_
    B, LB = T // 8, L // 8
    if len(buf) < 8:
        raise FormatError("RLE block shorter than its u64 header", rule=RULE)
    (nbytes,) = struct.unpack_from("<Q", buf)
    if nbytes % B or 8 + nbytes > len(buf):
        raise FormatError(f"RLE block declares {nbytes} value bytes in {len(buf)} bytes", rule=RULE)
    runs = nbytes // B
    vals = np.frombuffer(buf, np.uint8, nbytes, 8).reshape(runs, B)
    lens = np.frombuffer(buf, f"<u{LB}", min(runs, (len(buf) - 8 - nbytes) // LB), 8 + nbytes)
    return Fixed(expand(vals[:len(lens)], lens, n, B), T)
