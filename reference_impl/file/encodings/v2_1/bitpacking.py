"""Bit-packing in the FastLanes transposed layout (FILE-ENCODINGS §4.2-§4.4).

A block packs 1024 values of ``T`` bits (8, 16, 32, 64) into ``1024*W/T`` words of ``T`` bits,
``W`` being the packed width. Viewing the words as ``P[W][LANES]`` with ``LANES = 1024/T``,
for each row ``r`` in ``0..T-1`` and lane ``l``::

    out[FL_ORDER[r // 8] * 16 + (r % 8) * 128 + l] = bits [r*W, r*W + W) of lane l's words
    FL_ORDER = [0, 4, 2, 6, 1, 5, 3, 7]

so value 0 is lane 0 row 0 and value 1 lane 1 row 0: not a sequential bit stream.

* ``InlineBitpacking{T}``: one block per buffer, prefixed by one ``T``-bit word holding ``W``;
  fewer than 1024 values are zero padded. Size = ``(1 + 1024*W/T) * T/8`` bytes.
* ``OutOfLineBitpacking{T, values: flat W}``: one width for the whole buffer, ``n // 1024``
  blocks without header, then a tail of ``n % 1024`` values that is either one more padded
  block or the raw ``T``-bit values (raw iff the buffer has exactly ``full*1024*W/T + r`` words).

Signed integers and floats are packed as their raw unsigned bits.
Decoding is vectorised over blocks: one numpy step per row, ``T`` steps in all.
"""

from __future__ import annotations

import numpy as np

from reference_impl.errors import FormatError
from reference_impl.file import kernels

from .chunks import gather_ranges

FL_ORDER = (0, 4, 2, 6, 1, 5, 3, 7)
UINT = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}
RULE = "ENC-010"


def _out_rows(T: int) -> np.ndarray:
    return np.array([FL_ORDER[r // 8] * 16 + (r % 8) * 128 for r in range(T)], np.int64)


def unpack_blocks(words: np.ndarray, T: int, W: int) -> np.ndarray:
    """Unpack ``k`` blocks given as a ``(k, W*LANES)`` array of ``T``-bit words -> ``(k, 1024)``."""
    fast = kernels.kernel("unpack_blocks", words.nbytes)  # the compiled twin, when installed
    if fast is not None and (got := fast(words, T, W)) is not None:
        return got
    dt = UINT[T]
    k = words.shape[0]
    lanes = 1024 // T
    out = np.zeros((k, 1024), dt)
    if W == 0 or k == 0:
        return out
    P = words.reshape(k, W, lanes)
    mask = dt((1 << W) - 1) if W < T else dt(np.iinfo(dt).max)
    rows = _out_rows(T)
    view = out.reshape(k, 1024)
    for r in range(T):
        bit = r * W
        w, s = divmod(bit, T)
        v = P[:, w, :] >> dt(s)
        if s + W > T:
            v = v | (P[:, w + 1, :] << dt(T - s))
        base = rows[r]
        view[:, base:base + lanes] = v & mask
    return out


def check_width(T: int) -> None:
    if T not in UINT:
        raise FormatError(f"bit-packing of {T}-bit values is not defined", rule=RULE)


def decode_inline(buffers: list, counts: list, T: int) -> np.ndarray:
    """Decode inline-bitpacked chunks (one block each) into one ``uint{T}`` array."""
    check_width(T)
    dt = UINT[T]
    B = T // 8
    by_width: dict[int, list[int]] = {}
    widths = []
    for i, buf in enumerate(buffers):
        if len(buf) < B:
            raise FormatError("inline bit-packed buffer has no width word", rule=RULE)
        W = int(np.frombuffer(buf, dt, 1)[0])
        if W > T:
            raise FormatError(f"packed width {W} exceeds {T} bits", rule=RULE)
        if len(buf) < (1 + 1024 * W // T) * B:
            raise FormatError(f"inline bit-packed block of width {W} needs "
                              f"{(1 + 1024 * W // T) * B} bytes, has {len(buf)}", rule=RULE)
        if counts[i] > 1024:
            raise FormatError(f"an inline bit-packed block holds at most 1024 values, not {counts[i]}",
                              rule=RULE)
        widths.append(W)
        by_width.setdefault(W, []).append(i)
    blocks = np.zeros((len(buffers), 1024), dt)
    for W, idx in by_width.items():
        nw = 1024 * W // T
        words = np.stack([np.frombuffer(buffers[i], dt, nw, B) for i in idx]) if nw else np.zeros((len(idx), 0), dt)
        blocks[idx] = unpack_blocks(words, T, W)
    if all(c == 1024 for c in counts):
        return blocks.reshape(-1)
    sel = np.concatenate([np.arange(c) + 1024 * i for i, c in enumerate(counts)]) if counts else np.zeros(0, np.int64)
    return blocks.reshape(-1)[sel]


def decode_out_of_line(buf, n: int, T: int, W: int) -> np.ndarray:
    """Decode an out-of-line bit-packed buffer of ``n`` values."""
    check_width(T)
    if W > T:
        raise FormatError(f"packed width {W} exceeds {T} bits", rule=RULE)
    dt = UINT[T]
    B = T // 8
    if len(buf) % B:
        raise FormatError("out-of-line bit-packed buffer is not a whole number of words", rule=RULE)
    words = np.frombuffer(buf, dt)
    full, r = divmod(n, 1024)
    per = 1024 * W // T
    need_full = full * per
    if len(words) < need_full:
        raise FormatError(f"out-of-line bit-packed buffer holds {len(words)} words, "
                          f"{need_full} needed for {full} blocks", rule=RULE)
    out = unpack_blocks(words[:need_full].reshape(full, per), T, W).reshape(-1)
    if r == 0:
        return out
    tail = words[need_full:]
    if len(tail) == r:
        return np.concatenate([out, tail.astype(dt)])
    if len(tail) < per:
        raise FormatError(f"out-of-line tail of {len(tail)} words is neither raw ({r}) nor a "
                          f"padded block ({per})", rule=RULE)
    last = unpack_blocks(tail[:per].reshape(1, per), T, W).reshape(-1)[:r]
    return np.concatenate([out, last])


def decode_out_of_line_many(raw: np.ndarray, n: int, T: int, W: int) -> np.ndarray:
    """:func:`decode_out_of_line` over ``g`` equal buffers at once: ``raw`` is a ``(g, size)``
    byte array (one buffer of ``n`` values per row) -> ``(g, n)`` ``uint{T}`` values."""
    check_width(T)
    if W > T:
        raise FormatError(f"packed width {W} exceeds {T} bits", rule=RULE)
    dt = UINT[T]
    B = T // 8
    g, size = raw.shape
    if size % B:
        raise FormatError("out-of-line bit-packed buffer is not a whole number of words", rule=RULE)
    words = np.ascontiguousarray(raw).view(dt).reshape(g, size // B)
    full, r = divmod(n, 1024)
    per = 1024 * W // T
    need_full = full * per
    if words.shape[1] < need_full:
        raise FormatError(f"out-of-line bit-packed buffer holds {words.shape[1]} words, "
                          f"{need_full} needed for {full} blocks", rule=RULE)
    body = np.ascontiguousarray(words[:, :need_full]).reshape(g * full, per)
    out = unpack_blocks(body, T, W).reshape(g, full * 1024)
    if r == 0:
        return out
    tail = words[:, need_full:]
    if tail.shape[1] == r:
        return np.concatenate([out, tail], axis=1)
    if tail.shape[1] < per:
        raise FormatError(f"out-of-line tail of {tail.shape[1]} words is neither raw ({r}) nor a "
                          f"padded block ({per})", rule=RULE)
    last = unpack_blocks(np.ascontiguousarray(tail[:, :per]), T, W)[:, :r]
    return np.concatenate([out, last], axis=1)


def decode_out_of_line_chunks(data: np.ndarray, starts: np.ndarray, sizes: np.ndarray,
                              counts: np.ndarray, T: int, W: int) -> np.ndarray | None:
    """:func:`decode_out_of_line` of many buffers of one width at once, concatenated: buffer
    ``c`` is ``data[starts[c]:starts[c]+sizes[c]]`` holding ``counts[c]`` values (the rep/def
    levels of a page's mini-block chunks, whose counts all differ).

    Every full block and every padded tail block of every buffer is unpacked by one
    :func:`unpack_blocks` call into a pool, the raw tails are appended to it, and the output is
    the pool's ranges in chunk order (chunk ``c``: its blocks' first ``counts[c]`` values when
    its tail is a padded block, else its full blocks then its raw tail). Returns None for
    anything :func:`decode_out_of_line` would refuse (the caller then decodes buffer by buffer
    and reports the error as that function does). Callers have checked the ranges lie in ``data``.
    """
    fast = kernels.kernel("out_of_line_chunks", int(np.sum(sizes)))  # the compiled twin
    if fast is not None and (got := fast(data, starts, sizes, counts, T, W)) is not None:
        return got
    if T not in UINT or W > T:
        return None
    dt = UINT[T]
    B = T // 8
    starts, sizes, counts = (np.asarray(x, np.int64) for x in (starts, sizes, counts))
    if np.any(sizes % B) or np.any(counts < 0):
        return None
    words = sizes // B
    full, r = np.divmod(counts, BLOCK_VALUES)
    per = BLOCK_VALUES * W // T
    need_full = full * per
    tail_words = words - need_full
    raw_tail = (r > 0) & (tail_words == r)
    block_tail = (r > 0) & ~raw_tail
    if np.any(tail_words < 0) or np.any(block_tail & (tail_words < per)):
        return None
    # the pool: every unpacked block (chunk c's blocks are consecutive), then every raw tail
    nblocks = full + block_tail
    total = int(nblocks.sum())
    first_block = np.cumsum(nblocks) - nblocks
    if total and per:
        owner = np.repeat(np.arange(len(counts)), nblocks)
        j = np.arange(total) - first_block[owner]
        raw = gather_ranges(data, starts[owner] + j * per * B, np.full(total, per * B))
        blocks = unpack_blocks(raw.view(dt).reshape(total, per), T, W).reshape(-1)
    else:
        blocks = np.zeros(total * BLOCK_VALUES, dt)
    tail_len = np.where(raw_tail, r, 0)
    tails = gather_ranges(data, starts + need_full * B, tail_len * B).view(dt)
    pool = np.concatenate([blocks, tails]) if len(tails) else blocks
    # chunk c's output: [its block values][its raw tail]
    block_len = full * BLOCK_VALUES + np.where(block_tail, r, 0)
    tail_start = len(blocks) + np.cumsum(tail_len) - tail_len
    range_starts = np.stack([first_block * BLOCK_VALUES, tail_start], axis=1).reshape(-1)
    range_lens = np.stack([block_len, tail_len], axis=1).reshape(-1)
    return gather_ranges(pool, range_starts, range_lens)


BLOCK_VALUES = 1024


def decode_inline_set(cs, counts, T: int) -> np.ndarray:
    """Inline bit-packed chunks of a :class:`~.chunks.ChunkSet` (one 1024-value block each)."""
    check_width(T)
    dt = UINT[T]
    B = T // 8
    counts = np.asarray(counts, np.int64)
    n = cs.n_chunks
    starts, sizes = cs.starts[0], cs.sizes[0]
    if np.any(sizes < B):
        raise FormatError("inline bit-packed buffer has no width word", rule=RULE)
    if np.any(counts > 1024):
        raise FormatError("an inline bit-packed block holds at most 1024 values", rule=RULE)
    widths = cs.read_uint(0, np.zeros(n, np.int64), B).astype(np.int64)
    if np.any(widths > T):
        raise FormatError(f"packed width above {T} bits", rule=RULE)
    if np.any(sizes < (1 + 1024 * widths // T) * B):
        raise FormatError("inline bit-packed block shorter than its width needs", rule=RULE)
    fast = kernels.kernel("inline_chunks", int(np.sum(sizes)))  # the compiled twin, once checked
    if fast is not None and (got := fast(cs.data, starts, sizes, widths, counts, T)) is not None:
        return got
    uniq = np.unique(widths).tolist()
    if len(uniq) == 1:  # one width for the page (the usual case): unpack straight into place
        W = uniq[0]
        nw = 1024 * W // T
        blocks = unpack_blocks(_block_words(cs.data, starts + B, nw, dt), T, W) if nw else \
            np.zeros((n, 1024), dt)
    else:
        blocks = np.zeros((n, 1024), dt)
        for W in uniq:
            idx = np.nonzero(widths == W)[0]
            nw = 1024 * W // T
            if nw == 0:
                continue
            blocks[idx] = unpack_blocks(_block_words(cs.data, starts[idx] + B, nw, dt), T, W)
    if np.all(counts == 1024):
        return blocks.reshape(-1)
    if n and np.all(counts[:-1] == 1024):  # only the last block is short: a prefix of the blocks
        return blocks.reshape(-1)[:1024 * (n - 1) + int(counts[-1])]
    keep = np.arange(1024)[None, :] < counts[:, None]
    return blocks[keep]


def _block_words(data: np.ndarray, starts: np.ndarray, nw: int, dt) -> np.ndarray:
    """``nw`` words of type ``dt`` at each of ``starts`` in ``data``, as a ``(len(starts), nw)``
    array: a strided view of ``data`` when the starts are equally spaced (chunks of one size,
    back to back), else a gathered copy. Callers have checked every range lies in ``data``."""
    k = len(starts)
    size = np.dtype(dt).itemsize
    if k > 1:
        step = int(starts[1] - starts[0])
        if step >= nw * size and bool(np.all(np.diff(starts) == step)):
            return np.ndarray((k, nw), dt, buffer=data, offset=int(starts[0]), strides=(step, size))
    raw = gather_ranges(data, starts, np.full(k, nw * size))
    return raw.view(dt).reshape(k, nw)
