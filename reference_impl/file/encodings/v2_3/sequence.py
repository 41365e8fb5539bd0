"""Integer sequences of the 2.3 sparse structure: slot positions and list counts.

A sequence is a ``CompressiveEncoding`` tree (2.1 field numbers) decoded in block context to
``n`` unsigned integers. What pylance 14.0.2 writes (decoded and checked against the input
tables):

* ``Range {1 bits, 2 start, 3 step}`` -- ``start + i * step``; no bytes. Written for
  arithmetic positions (every k-th row null, all rows non-empty).
* ``Delta {1 bits, 2 base, 3 deltas}`` -- a non-decreasing sequence: the first value is
  ``base``, value ``i+1`` is value ``i`` plus ``deltas[i]``. ``deltas`` is a block tree (here
  out-of-line bit-packing of ``bits``-wide words) whose buffer holds at least ``n - 1``
  values (pylance pads the last FastLanes block).
* ``Dictionary {1 indices, 2 items, 3 num_dictionary_items}`` -- ``items[indices[i]]``. When
  either child needs bytes, its one buffer starts with two u64 little-endian sizes (indices
  bytes, items bytes) followed by those bytes in that order. Written for list counts that take
  a few distinct values, with ``Range`` items.
* ``Rle {1 values, 2 run_lengths}``: run ``j`` repeats ``values[j]`` ``run_lengths[j]``
  times. Written as variable offsets with many nulls/empties: either both children ``Range``
  (no bytes; runs are taken until they cover ``n``: ``[0, 7, 7]`` is values 0, 7 step 7 with
  run lengths 1, 2 step 1), or ``Range`` values and flat u32 run lengths in the 2.1 RLE block
  (``u64`` values byte count -- here 0 --, value bytes, run-length bytes).
* ``Constant {1 value}`` -- the value repeated; an empty ``Constant`` stands for an empty
  sequence (``n == 0``).
* any other block tree (flat, bit-packed) -- decoded by :func:`..v2_1.block.decode_block`.

A tree that needs bytes takes the page's next buffer (:class:`Buffers`); trees without bytes
(range, constant, a dictionary of two such) take none.
"""

from __future__ import annotations

import struct

import numpy as np

from reference_impl.errors import FormatError

from ..v2_1 import block
from ..v2_1.values import Fixed

RULE = "ENC-001"
WIDTHS = (8, 16, 32, 64)


class Buffers:
    """The page's buffers, handed out in order to the sequences that need bytes."""

    def __init__(self, buffers: list) -> None:
        self.buffers, self.next = buffers, 0

    def take(self):
        if self.next >= len(self.buffers):
            raise FormatError(f"sparse structure needs more than the page's {len(self.buffers)} buffers",
                              rule=RULE)
        buf = self.buffers[self.next]
        self.next += 1
        return buf

    def check_used(self) -> None:
        if self.next != len(self.buffers):
            raise FormatError(f"page has {len(self.buffers)} buffers, its sparse structure uses {self.next}",
                              rule=RULE)


needs_bytes = block.needs_bytes


def _width(bits: int) -> int:
    if bits not in WIDTHS:
        raise FormatError(f"sequence of {bits}-bit values", rule=RULE)
    return bits


def decode(node, buffers: Buffers, n: int) -> np.ndarray:
    """``n`` values of the tree ``node`` as ``uint64``, reading its buffer from ``buffers``."""
    return _decode(node, buffers.take() if needs_bytes(node) else None, n)


def decode_tree(node, buf, n: int) -> np.ndarray:
    """``n`` values of the tree ``node`` whose bytes (if it needs any) are ``buf``."""
    return _decode(node, buf if needs_bytes(node) else None, n)


def _decode(node, buf, n: int) -> np.ndarray:
    k = block.kind(node)
    if k == "range":
        r = node.range
        _width(int(r.uncompressed_bits_per_value))
        start, step = int(r.start), int(r.step)
        if n and start + step * (n - 1) >= 1 << 64:
            raise FormatError(f"range {start} + {n - 1} x {step} overflows 64 bits", rule=RULE)
        return np.uint64(start) + np.uint64(step) * np.arange(n, dtype=np.uint64)
    if k == "delta":
        d = node.delta
        _width(int(d.uncompressed_bits_per_value))
        out = np.empty(n, np.uint64)
        if n:
            deltas = _decode(d.deltas, buf, n - 1) if n > 1 else np.zeros(0, np.uint64)
            out[0] = np.uint64(int(d.base))
            np.cumsum(deltas, out=out[1:])
            out[1:] += np.uint64(int(d.base))
            if n > 1 and (out[1:] < out[:-1]).any():
                raise FormatError("delta sequence overflows 64 bits", rule=RULE)
        return out
    if k == "dictionary":
        return _dictionary(node.dictionary, buf, n)
    if k == "rle":
        return _rle(node.rle, buf, n)
    if k == "constant":
        v = bytes(node.constant.value)
        if not v:
            if n:
                raise FormatError(f"empty constant for a sequence of {n} values", rule=RULE)
            return np.zeros(0, np.uint64)
        return np.full(n, _scalar(v), np.uint64)
    if buf is None:
        raise FormatError(f"{k} sequence without a buffer", rule=RULE)
    return _unsigned(block.decode_block(node, buf, n), n)


def _scalar(v: bytes) -> int:
    if len(v) * 8 not in WIDTHS:
        raise FormatError(f"constant of {len(v)} bytes in a sequence", rule=RULE)
    return int.from_bytes(v, "little")


def _unsigned(v, n: int) -> np.ndarray:
    if not isinstance(v, Fixed) or v.bits not in WIDTHS:
        raise FormatError("sequence values must be 8..64-bit integers", rule=RULE)
    arr = np.frombuffer(v.data.tobytes(), f"<u{v.bits // 8}")
    if len(arr) < n:
        raise FormatError(f"sequence decodes {len(arr)} of {n} values", rule="ENC-046")
    return arr[:n].astype(np.uint64)


def _dictionary(d, buf, n: int) -> np.ndarray:
    m = int(d.num_dictionary_items)
    if m > max(n, 1) * 64 + 1024:  # more items than the sequence could use: refuse before allocating
        raise FormatError(f"dictionary of {m} items for {n} values", rule="ENC-017")
    ib = tb = None
    if buf is not None:
        b = bytes(buf)
        if len(b) < 16:
            raise FormatError("dictionary sequence buffer shorter than its two sizes", rule=RULE)
        si, st = struct.unpack_from("<QQ", b)
        if 16 + si + st != len(b):
            raise FormatError(f"dictionary sequence sizes {si} + {st} disagree with {len(b) - 16} bytes",
                              rule=RULE)
        ib, tb = b[16:16 + si], b[16 + si:]
    indices = _decode(d.indices, ib if needs_bytes(d.indices) else None, n)
    items = _decode(d.items, tb if needs_bytes(d.items) else None, m)
    if n and int(indices.max()) >= m:
        raise FormatError(f"dictionary index {int(indices.max())} outside {m} items", rule="ENC-017")
    return items[indices.astype(np.int64)]


def _flat_count(node, buf) -> int:
    """How many values of a flat tree fill ``buf`` exactly."""
    if block.kind(node) != "flat" or int(node.flat.bits_per_value) not in WIDTHS:
        raise FormatError("an RLE child sharing its buffer must be flat 8..64-bit", rule="ENC-012")
    width = int(node.flat.bits_per_value) // 8
    if len(buf) % width:
        raise FormatError(f"RLE child buffer of {len(buf)} bytes for {width}-byte values", rule="ENC-012")
    return len(buf) // width


def _rle(r, buf, n: int) -> np.ndarray:
    """RLE of sequences. With bytes, ``buf`` is the 2.1 RLE block (``u64`` size of the values'
    bytes, those bytes, then the run lengths' bytes), a byte-free child taking no bytes; a
    flat child's byte count gives the number of runs. Otherwise runs are taken until they
    cover ``n`` (at most ``n`` runs, every run covering at least one value)."""
    if not n:
        return np.zeros(0, np.uint64)
    vbuf = lbuf = None
    if buf is not None:
        b = bytes(buf)
        if len(b) < 8:
            raise FormatError("RLE block shorter than its u64 header", rule="ENC-012")
        (nv,) = struct.unpack_from("<Q", b)
        if 8 + nv > len(b):
            raise FormatError(f"RLE block declares {nv} value bytes in {len(b)} bytes", rule="ENC-012")
        vbuf, lbuf = b[8:8 + nv], b[8 + nv:]
    if needs_bytes(r.run_lengths):
        lengths = _decode(r.run_lengths, lbuf, _flat_count(r.run_lengths, lbuf)).astype(np.int64)
    else:
        lengths = _decode(r.run_lengths, None, n).astype(np.int64)
    if len(lengths) and (lengths < 1).any():
        raise FormatError("RLE run of length 0", rule="ENC-012")
    ends = np.cumsum(lengths)
    runs = int(np.searchsorted(ends, n)) + 1
    if runs > len(lengths):
        raise FormatError(f"RLE runs cover {int(ends[-1]) if len(ends) else 0} of {n} values", rule="ENC-012")
    if needs_bytes(r.values):
        if _flat_count(r.values, vbuf) < runs:
            raise FormatError(f"RLE holds fewer values than its {runs} runs", rule="ENC-012")
        values = _decode(r.values, vbuf, runs)
    else:
        values = _decode(r.values, None, runs)
    return np.repeat(values, lengths[:runs])[:n]
