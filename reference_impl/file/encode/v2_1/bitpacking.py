"""``InlineBitpacking{uncompressed_bits_per_value: T}`` with the FastLanes layout (FILE-ENCODINGS §4.2, §4.3).

A mini-block chunk holds one 1024-value block: word 0 (T bits, LE) is the packed width
W of the block, then ``W * 1024 / T`` T-bit words of FastLanes-packed values. Fewer
than 1024 values are zero-padded to 1024. Values are packed as their raw unsigned bits
(no zig-zag, no frame of reference).

FastLanes order: with ``LANES = 1024 / T`` the packed words form a ``W x LANES`` matrix.
For row r in 0..T-1 and each lane, the value at index
``FL_ORDER[r // 8] * 16 + (r % 8) * 128 + lane`` (``FL_ORDER = 0 4 2 6 1 5 3 7``)
occupies bits ``r*W .. r*W+W-1`` of that lane's column, straddling two words when
needed. Packing is vectorised over lanes and over all blocks that share a width.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from ....proto import encodings_v2_1_pb2 as pb
from ... import kernels
from ..arrow_data import fixed_bits, fixed_values

BLOCK = 1024
FL_ORDER = (0, 4, 2, 6, 1, 5, 3, 7)
UINT = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}


def integer_like(values: pa.Array) -> bool:
    """True for values stored as 8/16/32/64-bit words (integers, dates, times, ...), the
    inputs of bit-packing and RLE; booleans and fixed-size lists/binaries are not."""
    t = values.type
    if pa.types.is_boolean(t) or pa.types.is_fixed_size_list(t) or pa.types.is_fixed_size_binary(t):
        return False
    try:
        return fixed_bits(t) in UINT
    except Exception:  # noqa: BLE001 - a type without a fixed width
        return False


_ROW_INDEX = {
    T: [FL_ORDER[row // 8] * 16 + (row % 8) * 128 + np.arange(BLOCK // T) for row in range(T)]
    for T in (8, 16, 32, 64)
}


def fastlanes_pack(blocks: np.ndarray, T: int, W: int) -> np.ndarray:
    """Pack ``blocks`` (shape (B, 1024), dtype uint T) at width W: returns (B, W * LANES) words."""
    dt = UINT[T]
    lanes = BLOCK // T
    out = np.zeros((blocks.shape[0], W, lanes), dtype=dt)
    if W == 0:
        return out.reshape(blocks.shape[0], 0)
    mask = dt((1 << W) - 1)
    for row in range(T):
        v = blocks[:, _ROW_INDEX[T][row]] & mask
        bit = row * W
        w, s = divmod(bit, T)
        out[:, w, :] |= v << dt(s)
        if s + W > T:
            out[:, w + 1, :] |= v >> dt(T - s)
    return out.reshape(blocks.shape[0], W * lanes)


def fastlanes_pack_fast(blocks: np.ndarray, T: int, W: int) -> np.ndarray:
    """:func:`fastlanes_pack` (the same words) in a fixed number of passes: the rows of
    every block gathered by strided copies (not one fancy index per row) into a row-major
    (row, block, lane) array, so that each shift-and-or step works on one contiguous row of
    all blocks, shifting into a reused buffer."""
    fast = kernels.kernel("fastlanes_pack", blocks.nbytes)  # the compiled twin, when installed
    if fast is not None and (got := fast(blocks, T, W)) is not None:
        return got
    dt = UINT[T]
    lanes = BLOCK // T
    B = blocks.shape[0]
    if W == 0:
        return np.zeros((B, 0), dtype=dt)
    # the rows (T, B, lanes) in one strided pass, masked on the way (a new array: the
    # caller's blocks are never written): blocks seen as (B, 8 a, 8 o, 16 l), row
    # r = 8 h + a takes the k = LANES / 16 consecutive o from FL_ORDER[h] (_ROW_INDEX)
    k = lanes // 16
    src = blocks.reshape(B, 8, 8, 16)
    v = np.empty((T // 8, 8, B, k, 16), dtype=dt)
    mask = dt((1 << W) - 1) if W < T else None
    for h in range(T // 8):
        part = src[:, :, FL_ORDER[h] : FL_ORDER[h] + k, :].transpose(1, 0, 2, 3)
        if mask is None:
            v[h] = part
        else:
            np.bitwise_and(part, mask, out=v[h])
    v = v.reshape(T, B, lanes)
    out = np.zeros((W, B, lanes), dtype=dt)
    tmp = np.empty((B, lanes), dtype=dt)
    for row in range(T):
        x = v[row]
        w, s = divmod(row * W, T)
        if s:
            np.left_shift(x, dt(s), out=tmp)
            out[w] |= tmp
        else:
            out[w] |= x
        if s + W > T:
            np.right_shift(x, dt(T - s), out=tmp)
            out[w + 1] |= tmp
    return out.transpose(1, 0, 2).reshape(B, W * lanes)


def bit_widths(blocks: np.ndarray) -> np.ndarray:
    """Bits needed for the largest value of every block (rows of ``blocks``)."""
    ors = (
        np.bitwise_or.reduce(blocks, axis=1).astype(np.uint64)
        if blocks.shape[1]
        else np.zeros(blocks.shape[0], np.uint64)
    )
    widths = np.zeros(len(ors), np.int64)
    for shift in (32, 16, 8, 4, 2, 1):  # binary search for the highest set bit, over blocks
        high = (ors >> np.uint64(shift)) != 0
        widths[high] += shift
        ors[high] >>= np.uint64(shift)
    return widths + (ors != 0)  # ors is now 1 where the value was not 0


def inline_bitpacking_encoding(T: int) -> pb.CompressiveEncoding:
    enc = pb.CompressiveEncoding()
    enc.inline_bitpacking.uncompressed_bits_per_value = T
    return enc


class InlineBitpackedValues:
    """Mini-block values as one inline bit-packed 1024-value block per chunk."""

    num_buffers = 1
    max_chunk_values = BLOCK

    def __init__(self, values: pa.Array) -> None:
        self.T = fixed_bits(values.type)
        dt = UINT[self.T]
        raw = fixed_values(values).view(dt) if len(values) else np.zeros(0, dt)
        self.n = len(raw)
        nblocks = (self.n + BLOCK - 1) // BLOCK
        padded = np.zeros(nblocks * BLOCK, dt)
        padded[: self.n] = raw
        self.blocks = padded.reshape(nblocks, BLOCK)
        self.widths = bit_widths(self.blocks)
        self._packed: dict[int, bytes] = {}

    def _pack_all(self) -> None:
        """Pack every full-page block at once, grouped by width (vectorised across blocks)."""
        dt = np.dtype(UINT[self.T]).newbyteorder("<")
        for W in np.unique(self.widths):
            which = np.flatnonzero(self.widths == W)
            packed = fastlanes_pack(self.blocks[which], self.T, int(W))
            head = np.full((len(which), 1), W, dtype=dt)
            rows = np.concatenate([head, packed.astype(dt)], axis=1)
            for b, row in zip(which, rows, strict=True):
                self._packed[int(b)] = row.tobytes()

    def chunk_pieces(self, starts: np.ndarray, counts: np.ndarray):
        """``mini_block.batched_chunks`` for these values: the chunks that are whole blocks
        of the page are packed at once, grouped by width with :func:`fastlanes_pack_fast`,
        and handed out as memoryviews; any other chunk goes through :meth:`chunk`."""
        dt = np.dtype(UINT[self.T]).newbyteorder("<")
        whole = (starts % BLOCK == 0) & (counts == np.minimum(BLOCK, self.n - starts))
        views: dict[int, memoryview] = {}
        if whole.any():
            which_blocks = starts[whole] // BLOCK
            widths = self.widths[which_blocks]
            for W in np.unique(widths).tolist():
                which = which_blocks[widths == W]
                rows = np.empty((len(which), 1 + W * (BLOCK // self.T)), dt)
                rows[:, 0] = W
                rows[:, 1:] = fastlanes_pack_fast(self.blocks[which], self.T, int(W))
                row_bytes = rows.shape[1] * dt.itemsize
                mv = memoryview(rows.tobytes())
                for k, b in enumerate(which.tolist()):
                    views[b] = mv[k * row_bytes : (k + 1) * row_bytes]
        pieces = []
        for s, c, w in zip(starts.tolist(), counts.tolist(), whole.tolist(), strict=True):
            pieces.append((views[s // BLOCK],) if w else (self.chunk(s, c)[0],))
        sizes = np.array([len(p[0]) for p in pieces], np.int64)
        return [(sizes, pieces)]

    @staticmethod
    def applicable(values: pa.Array) -> bool:
        return integer_like(values)

    def saves_space(self) -> bool:
        return bool(len(self.widths)) and int(self.widths.max()) < self.T

    def encoding(self) -> pb.CompressiveEncoding:
        return inline_bitpacking_encoding(self.T)

    def cost(self, start: int, count: int) -> int:
        return (1 + BLOCK) * self.T // 8

    def chunk(self, start: int, count: int) -> list[bytes]:
        dt = UINT[self.T]
        if start % BLOCK == 0 and count == min(BLOCK, self.n - start):
            if not self._packed:
                self._pack_all()
            return [self._packed[start // BLOCK]]
        block = np.zeros((1, BLOCK), dt)
        block[0, :count] = self.blocks.reshape(-1)[start : start + count]
        W = int(bit_widths(block)[0])
        packed = fastlanes_pack(block, self.T, W)
        return [
            np.concatenate([np.array([W], dt), packed[0]])
            .astype(np.dtype(dt).newbyteorder("<"))
            .tobytes()
        ]


# --------------------------------------------------------------------------- out-of-line
#
# ``OutOfLineBitpacking{uncompressed_bits_per_value: T, values: flat{bits_per_value: W}}``
# (FILE-ENCODINGS §4.4), used here for rep/def levels (T = 16): one width W for the
# whole page, ``n // 1024`` FastLanes blocks of ``1024 * W / T`` words with no header,
# then the ``r = n % 1024`` remaining values either as one more zero-padded block or as
# r raw T-bit words. A reader tells the two apart by the buffer length (raw iff it is
# exactly ``full * 1024 * W / T + r`` words), so the writer pads only when that is
# strictly smaller: ``W * (1024 - r) < (T - W) * r``; on a tie the lengths coincide and
# the tail must be raw.


def out_of_line_bitpacking_encoding(T: int, W: int) -> pb.CompressiveEncoding:
    enc = pb.CompressiveEncoding()
    enc.out_of_line_bitpacking.uncompressed_bits_per_value = T
    enc.out_of_line_bitpacking.values.flat.bits_per_value = W
    return enc


def _ranges_in_blocks(values: np.ndarray, bounds, T: int, W: int):
    """The block plan of out-of-line packing for each range ``[a, b)`` of ``bounds``:
    ``(values as little-endian T-bit words, dt, a, n, full, r, padded, nblocks, total)`` where
    a range of ``n`` values has ``full`` whole blocks and a tail of ``r`` values, padded to a
    block when that is shorter than raw (see above); ``nblocks`` blocks each, ``total`` in all."""
    dt = np.dtype(UINT[T]).newbyteorder("<")
    values = values.astype(dt, copy=False)
    bounds = np.asarray(bounds, np.int64).reshape(-1, 2)
    a, n = bounds[:, 0], bounds[:, 1] - bounds[:, 0]
    full, r = np.divmod(n, BLOCK)
    padded = (r > 0) & (W * (BLOCK - r) < (T - W) * r)
    nblocks = full + padded
    return values, dt, a, n, full, r, padded, nblocks, int(nblocks.sum())


def out_of_line_pack_many(values: np.ndarray, bounds, T: int, W: int) -> list[bytes]:
    """``[out_of_line_pack(values[a:b], T, W) for a, b in bounds]`` with one
    :func:`fastlanes_pack` call for the blocks of every range (the rep/def levels of all
    chunks of a page), so the same bytes."""
    values, dt, a, n, full, r, padded, nblocks, total = _ranges_in_blocks(values, bounds, T, W)
    packed = b""
    if total:
        owner = np.repeat(np.arange(len(n)), nblocks)
        j = np.arange(total) - np.repeat(np.cumsum(nblocks) - nblocks, nblocks)
        take = np.where(j < full[owner], BLOCK, r[owner])
        keep = np.arange(BLOCK)[None, :] < take[:, None]
        src = (a[owner] + j * BLOCK)[:, None] + np.arange(BLOCK)[None, :]
        blocks = np.zeros((total, BLOCK), dt)
        blocks[keep] = values[src[keep]]
        packed = fastlanes_pack(blocks, T, W).astype(dt).tobytes()
    size = W * (BLOCK // T) * (T // 8)  # bytes of one packed block
    first = np.concatenate([[0], np.cumsum(nblocks)]).tolist()
    out = []
    for c in range(len(n)):
        piece = packed[first[c] * size : first[c + 1] * size]
        if r[c] and not padded[c]:
            lo = int(a[c] + full[c] * BLOCK)
            piece += values[lo : lo + int(r[c])].tobytes()
        out.append(piece)
    return out


def out_of_line_pack_many_fast(values: np.ndarray, bounds, T: int, W: int):
    """:func:`out_of_line_pack_many` as ``(sizes, pieces)``: ``pieces[i]`` bytes-like
    objects whose concatenation is range ``i``'s bytes (``sizes[i]`` of them). The blocks
    are built from a sliding-window view of the zero-extended values (one row gather, then
    the tails past each range's end zeroed) and packed with :func:`fastlanes_pack_fast`;
    the pieces are memoryviews into that packed buffer and into the raw values."""
    values, dt, a, n, full, r, padded, nblocks, total = _ranges_in_blocks(values, bounds, T, W)
    size = W * (BLOCK // T) * (T // 8)  # bytes of one packed block
    packed = memoryview(b"")
    if total:
        ext = np.zeros(len(values) + BLOCK, dt)
        ext[: len(values)] = values
        ends_blk = np.cumsum(nblocks)
        owner = np.repeat(np.arange(len(n)), nblocks)
        j = np.arange(total) - (ends_blk - nblocks)[owner]
        src = a[owner] + j * BLOCK
        blocks = np.lib.stride_tricks.sliding_window_view(ext, BLOCK)[src]
        take = np.where(j < full[owner], BLOCK, r[owner])
        short = np.flatnonzero(take < BLOCK)
        if len(short):
            blocks[short] *= (np.arange(BLOCK)[None, :] < take[short, None]).astype(dt)
        packed = memoryview(fastlanes_pack_fast(blocks, T, W).astype(dt, copy=False).tobytes())
    raw = (r > 0) & ~padded  # ranges whose last values are stored raw
    item = dt.itemsize
    first = ((np.cumsum(nblocks) - nblocks) * size).tolist()
    last = (np.cumsum(nblocks) * size).tolist()
    tail_lo = ((a + full * BLOCK) * item).tolist()
    tail_hi = ((a + full * BLOCK + np.where(raw, r, 0)) * item).tolist()
    vb = memoryview(np.ascontiguousarray(values)).cast("B") if len(values) else memoryview(b"")
    pieces = [
        (packed[f:e], vb[lo:hi]) for f, e, lo, hi in zip(first, last, tail_lo, tail_hi, strict=True)
    ]
    sizes = nblocks * size + np.where(raw, r, 0) * item
    return sizes, pieces


def out_of_line_pack(values: np.ndarray, T: int, W: int) -> bytes:
    dt = np.dtype(UINT[T]).newbyteorder("<")
    values = values.astype(dt, copy=False)
    n = len(values)
    full, r = divmod(n, BLOCK)
    parts = []
    if full:
        parts.append(
            fastlanes_pack(values[: full * BLOCK].reshape(full, BLOCK), T, W).astype(dt).tobytes()
        )
    if r:
        if W * (BLOCK - r) < (T - W) * r:
            tail = np.zeros((1, BLOCK), dt)
            tail[0, :r] = values[full * BLOCK :]
            parts.append(fastlanes_pack(tail, T, W).astype(dt).tobytes())
        else:
            parts.append(values[full * BLOCK :].tobytes())
    return b"".join(parts)
