"""``Variable{offsets: flat 32|64}``: variable-width values (FILE-ENCODINGS §4.7).

* mini-block chunk: ``(n+1)`` offsets of 4 or 8 bytes measured from the start of the chunk
  buffer (so the first is ``(n+1)*width``), then the bytes, then padding (0x48) to the width;
* block (dictionaries): ``u32 32 | u32 data_start | (n+1) u32 offsets from 0 | bytes`` or the
  same with u64 fields. Releases before pylance 0.38 (observed: 0.34.0) wrote an older header
  that pylance 14.0.2 still reads: ``u8 bits | uN n | uN data_start | (n+1) uN offsets | bytes``
  with N = bits (a 9-byte header for 32-bit offsets); it is accepted only when it is
  self-consistent (its count is the page's and its data starts right after the offsets);
* per value (full-zip): no own buffer, the value bytes come from the zipped stream;
* 2.3 only (pylance 14.0.2 refuses it in 2.1/2.2 as "generic variable offsets"): the offsets
  are a sequence tree decoding to ``n + 1`` offsets into the value bytes -- ``Delta{bits, base,
  deltas}`` whose deltas (out-of-line bit-packed, in the chunk's first buffer) are the value
  lengths, or ``Range{bits, start, step}`` for values of one length (no offsets buffer); the
  value bytes are the chunk's last buffer (:func:`decode_chunks_generic`).

Offsets must be monotonic and stay inside the buffer.
"""

from __future__ import annotations

import struct

import numpy as np

from reference_impl.errors import FormatError
from reference_impl.file import kernels

from .chunks import gather_ranges
from .values import Var

RULE = "ENC-003"
DTYPES = {32: np.dtype("<u4"), 64: np.dtype("<u8")}


def generic_offsets(node) -> bool:
    """Whether a ``Variable`` node's offsets are not flat (the 2.3 form)."""
    return node.offsets.WhichOneof("compression") != "flat"


def decode_chunks_generic(node, bufs: list, counts: list, decode_tree) -> Var:
    """2.3 mini-block chunks whose offsets are a sequence tree: each chunk holds the tree's
    bytes (when it needs any) and then the value bytes; the tree decodes to ``n + 1`` offsets
    into the value bytes. ``decode_tree(node, buf, n)`` is :func:`..v2_3.sequence.decode_tree`
    (passed in to keep the imports one-way)."""
    off = node.offsets
    lens_parts, data_parts = [], []
    for parts, c in zip(bufs, counts, strict=True):
        vb = parts[-1]
        offs = decode_tree(off, parts[0] if len(parts) == 2 else None, c + 1).astype(np.int64)
        _check(offs, 0, len(vb), "variable chunk")
        lens_parts.append(np.diff(offs))
        data_parts.append(np.frombuffer(vb, np.uint8, int(offs[-1] - offs[0]), int(offs[0])))
    lens = np.concatenate(lens_parts) if lens_parts else np.zeros(0, np.int64)
    out = np.zeros(len(lens) + 1, np.int64)
    np.cumsum(lens, out=out[1:])
    return Var(out, np.concatenate(data_parts) if data_parts else np.zeros(0, np.uint8))


def offset_bits(node) -> int:
    if node.offsets.WhichOneof("compression") != "flat":
        raise FormatError("variable offsets must be flat in 2.1/2.2", rule=RULE)
    bits = int(node.offsets.flat.bits_per_value)
    if bits not in DTYPES:
        raise FormatError(f"variable offsets of {bits} bits", rule=RULE)
    return bits


def _check(offs: np.ndarray, lo: int, hi: int, what: str) -> None:
    if len(offs) and (offs[0] < lo or offs[-1] > hi or np.any(offs[1:] < offs[:-1])):
        raise FormatError(f"{what} offsets are not monotonic inside [{lo}, {hi}]", rule=RULE)


def _old_header(buf, n: int) -> tuple[int, int, np.dtype]:
    """``(header size, data start, offset dtype)`` of the pre-0.38 block header."""
    bits = bytes(buf[:1])[0]
    if bits not in DTYPES:
        raise FormatError(f"variable block offsets of {bits} bits", rule=RULE)
    dt = DTYPES[bits]
    word = "<I" if bits == 32 else "<Q"
    hdr = 1 + 2 * dt.itemsize
    if len(buf) < hdr:
        raise FormatError("variable block shorter than its header", rule=RULE)
    count = struct.unpack_from(word, buf, 1)[0]
    start = struct.unpack_from(word, buf, 1 + dt.itemsize)[0]
    if count != n or start != hdr + (n + 1) * dt.itemsize:
        raise FormatError(f"variable block header (old form) says {count} values starting at "
                          f"{start}; the page has {n}", rule=RULE)
    return hdr, start, dt


def decode_block(buf, n: int) -> Var:
    if len(buf) < 8:
        raise FormatError("variable block shorter than its header", rule=RULE)
    b0 = bytes(buf[:4])
    bits = b0[0]
    if b0[1:4] != b"\0\0\0":
        hdr, start, dt = _old_header(buf, n)
    elif bits == 32:
        _, start = struct.unpack_from("<II", buf)
        hdr, dt = 8, DTYPES[32]
    elif bits == 64:
        if len(buf) < 16:
            raise FormatError("variable block shorter than its header", rule=RULE)
        _, start = struct.unpack_from("<QQ", buf)
        hdr, dt = 16, DTYPES[64]
    else:
        raise FormatError(f"variable block offsets of {bits} bits", rule=RULE)
    if hdr + (n + 1) * dt.itemsize > len(buf) or start > len(buf):
        raise FormatError(f"variable block of {len(buf)} bytes cannot hold {n + 1} offsets", rule=RULE)
    offs = np.frombuffer(buf, dt, n + 1, hdr).astype(np.int64)
    _check(offs, 0, len(buf) - start, "variable block")
    data = np.frombuffer(buf, np.uint8, len(buf) - start, start)
    return Var(offs - offs[0], data[offs[0]:offs[-1]] if n else data[:0])


def decode_chunk_set(cs, counts, bits: int) -> Var:
    """Variable values of every chunk of a :class:`~.chunks.ChunkSet`, vectorised over chunks."""
    w = bits // 8
    counts = np.asarray(counts, np.int64)
    fast = kernels.kernel("variable_chunks", len(cs.data))  # the compiled twin, when installed
    if fast is not None and (got := fast(cs.data, cs.starts[0], cs.sizes[0], counts, w)) is not None:
        return Var(*got)
    n_chunks = cs.n_chunks
    starts, sizes = cs.starts[0], cs.sizes[0]
    if np.any(sizes < (counts + 1) * w):
        raise FormatError("a variable chunk cannot hold its offsets", rule=RULE)
    n_off = counts + 1
    first = np.zeros(n_chunks + 1, np.int64)
    np.cumsum(n_off, out=first[1:])
    total = int(first[-1])
    # every chunk's offsets are its first (n+1)*w bytes: gather them all, read as words
    raw = gather_ranges(cs.data, starts, n_off * w)
    offs = raw.view("<u4" if w == 4 else "<u8").astype(np.int64)
    lo = offs[first[:-1]]
    hi = offs[first[1:] - 1]
    if np.any(lo != n_off * w) or np.any(hi > sizes):
        raise FormatError("variable chunk offsets do not start after the offsets or run past the chunk", rule=RULE)
    d = np.diff(offs)
    is_boundary = np.zeros(max(total - 1, 0), bool)
    is_boundary[first[1:-1] - 1] = True
    if np.any((d < 0) & ~is_boundary):
        raise FormatError("variable chunk offsets are not monotonic", rule=RULE)
    lens = d[~is_boundary]
    out = np.zeros(len(lens) + 1, np.int64)
    np.cumsum(lens, out=out[1:])
    data = gather_ranges(cs.data, starts + lo, hi - lo)
    return Var(out, data)
