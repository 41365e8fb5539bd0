"""Mini-block layout (FILE-ENCODINGS §3.2): small values in independently decodable chunks.

Page buffers: ``[0]`` chunk metadata, ``[1]`` chunk data, ``[2]`` dictionary (only with
``dictionary``), ``[last]`` repetition index (only when ``repetition_index_depth > 0``).

Chunk metadata: one word per chunk, u16 in 2.1 and u32 in 2.2 (``has_large_chunk``)::

    word = ((chunk_bytes / 8 - 1) << 4) | log2(values_in_chunk)

Every chunk but the last holds a power-of-two number (>= 2) of values; the last holds
the rest (its log nibble is written as 0). Chunks sit back to back in buffer 1, each a
multiple of 8 bytes::

    u16 num_levels        (0 when the page has neither rep nor def)
    u16 rep_size          (only with rep_compression)
    u16 def_size          (only with def_compression)
    u16|u32 size[k]       per value buffer (u32 in 2.2), then 0xFE pad to 8
    rep bytes, pad to 8;  def bytes, pad to 8;  each value buffer, pad to 8

Levels are compressed per chunk with out-of-line bit-packing (``T = 16``, one width per
page and kind: the bit length of the page's largest level). A chunk takes the levels from the end of the
previous chunk up to (not including) the slot of the next chunk's first value; the
last chunk takes the rest. Repetition index (depth 1): per chunk two u64, the rows
whose last level lies in the chunk and the number of trailing levels that belong to a
row finished in a later chunk.
"""

from __future__ import annotations

import struct
from collections.abc import Callable

import numpy as np

from ....errors import UnsupportedFeature
from ....proto import encodings_v2_1_pb2 as pb
from .bitpacking import (
    out_of_line_bitpacking_encoding,
    out_of_line_pack_many,
    out_of_line_pack_many_fast,
)
from .repdef import Shredded, row_starts

PAD = 0xFE
MAX_CHUNK_BYTES = 32 * 1024  # 12-bit word count in the 2.1 metadata word
CHUNK_BYTE_BUDGET = 24 * 1024
MAX_CHUNK_LEVELS = 0xFFFF


def _pad8(b: bytes) -> bytes:
    return b + bytes([PAD]) * ((-len(b)) % 8)


def _log2_exact(n: int) -> int:
    return n.bit_length() - 1


def plan_chunks(
    values, nvis: int, level_end_of: Callable[[int], int], level_bytes: int
) -> list[int]:
    """Chunk value counts: powers of two (>= 2) except the last, within the byte budget."""
    counts: list[int] = []
    start = 0
    level_start = 0
    while start < nvis:
        n = values.max_chunk_values
        while True:
            last = start + n >= nvis
            count = nvis - start if last else n
            lend = level_end_of(start + count)
            levels = lend - level_start
            size = values.cost(start, count) + levels * level_bytes + 32
            if (size <= CHUNK_BYTE_BUDGET and levels <= MAX_CHUNK_LEVELS) or n <= 2:
                break
            n //= 2
        if size > MAX_CHUNK_BYTES - 64 or levels > MAX_CHUNK_LEVELS:
            raise UnsupportedFeature(
                "a mini-block chunk would exceed 32 KiB (too many levels between two values)"
            )
        counts.append(count)
        start += count
        level_start = lend
    return counts


def encode_mini_block(
    sh: Shredded,
    values,
    version: str,
    dictionary: tuple[bytes, pb.CompressiveEncoding, int] | None = None,
):
    """``(buffers, PageLayout)`` for one page. ``values`` is a mini-block value encoder."""
    large = version != "2.1"
    nvis = len(sh.values)
    has_levels = sh.rep is not None or sh.deff is not None
    vis_pos = np.flatnonzero(sh.visible)
    total_levels = sh.num_levels

    def level_end_of(value_end: int) -> int:
        return int(vis_pos[value_end]) if value_end < nvis else total_levels

    level_bytes = 2 * ((sh.rep is not None) + (sh.deff is not None))  # raw upper bound
    rep_w = int(sh.rep.max()).bit_length() if sh.rep is not None else 0
    def_w = int(sh.deff.max()).bit_length() if sh.deff is not None else 0
    counts = plan_chunks(values, nvis, level_end_of, level_bytes)

    words = []
    chunks = []
    rep_index = []
    starts = row_starts(sh) if sh.rep is not None else None
    row_end_levels = None
    if starts is not None:
        row_end_levels = np.append(starts[1:], total_levels) - 1  # last level of each row
    # the level range of every chunk, and its rep/def levels packed for all chunks at once
    level_bounds, start, level_start = [], 0, 0
    for count in counts:
        lend = level_end_of(start + count)
        level_bounds.append((level_start, lend))
        start, level_start = start + count, lend
    reps = out_of_line_pack_many(sh.rep, level_bounds, 16, rep_w) if sh.rep is not None else None
    defs = out_of_line_pack_many(sh.deff, level_bounds, 16, def_w) if sh.deff is not None else None
    start = 0
    level_start = 0
    for i, count in enumerate(counts):
        lend = level_end_of(start + count)
        bufs = values.chunk(start, count)
        size_fmt = "<I" if large else "<H"
        head = struct.pack("<H", (lend - level_start) if has_levels else 0)
        rep = reps[i] if reps is not None else None
        deff = defs[i] if defs is not None else None
        if rep is not None:
            head += struct.pack("<H", len(rep))
        if deff is not None:
            head += struct.pack("<H", len(deff))
        for b in bufs:
            head += struct.pack(size_fmt, len(b))
        body = _pad8(head)
        if rep is not None:
            body += _pad8(rep)
        if deff is not None:
            body += _pad8(deff)
        for b in bufs:
            body += _pad8(b)
        if len(body) > (MAX_CHUNK_BYTES if not large else 1 << 31):
            raise UnsupportedFeature(f"mini-block chunk of {len(body)} bytes is too large")
        last = i == len(counts) - 1
        log = 0 if last else _log2_exact(count)
        words.append(((len(body) // 8 - 1) << 4) | log)
        chunks.append(body)
        if starts is not None:
            ended = int(np.count_nonzero((row_end_levels >= level_start) & (row_end_levels < lend)))
            if lend < total_levels and lend > level_start:
                # the row holding level lend-1 continues into a later chunk?
                row = int(np.searchsorted(starts, lend - 1, side="right")) - 1
                open_levels = (
                    0 if row_end_levels[row] < lend else lend - max(int(starts[row]), level_start)
                )
            else:
                open_levels = 0
            rep_index.append((ended, open_levels))
        start += count
        level_start = lend

    meta = np.array(words, "<u4" if large else "<u2").tobytes()
    rep_index_bytes = np.array(rep_index, "<u8").reshape(-1).tobytes() if starts is not None else None
    return _page(sh, values, large, rep_w, def_w, meta, b"".join(chunks), dictionary, rep_index_bytes)


def _page(sh: Shredded, values, large: bool, rep_w: int, def_w: int, meta: bytes, chunk_data: bytes,
          dictionary, rep_index: bytes | None):
    """``(buffers, PageLayout)`` of a mini-block page from its chunk metadata, chunk data, the
    optional dictionary and the repetition index (present iff the page has rep levels)."""
    layout = pb.PageLayout()
    mb = layout.mini_block_layout
    mb.SetInParent()
    if sh.rep is not None:
        mb.rep_compression.CopyFrom(out_of_line_bitpacking_encoding(16, rep_w))
    if sh.deff is not None:
        mb.def_compression.CopyFrom(out_of_line_bitpacking_encoding(16, def_w))
    mb.value_compression.CopyFrom(values.encoding())
    mb.layers.extend(sh.layers)
    mb.num_buffers = values.num_buffers
    mb.num_items = len(sh.values)
    if large:
        mb.has_large_chunk = True
    buffers = [meta, chunk_data]
    if dictionary is not None:
        block, enc, n_items = dictionary
        mb.dictionary.CopyFrom(enc)
        mb.num_dictionary_items = n_items
        buffers.append(block)
    if rep_index is not None:
        mb.repetition_index_depth = 1
        buffers.append(rep_index)
    return buffers, layout


# --------------------------------------------------------------------------- fast path
#
# encode_mini_block_fast: the same bytes as encode_mini_block (conformance/suite/file/
# test_writer_fast_paths.py checks it on generated pages), with the per-chunk work done
# for all chunks at once: level ranges, chunk sizes, metadata words and the repetition
# index are numpy arrays; headers are one byte matrix; value buffers come as pieces of a
# few large buffers (``values.chunk_pieces``, see batched_chunks); the page's chunk bytes
# are one ``b"".join`` of those pieces and the padding between them.

_PADS = [bytes([PAD]) * k for k in range(8)]


def batched_chunks(values, starts: np.ndarray, counts: np.ndarray):
    """Per value buffer ``(sizes, pieces)``: ``sizes[i]`` the byte length of chunk ``i``'s
    buffer and ``pieces[i]`` bytes-like objects whose concatenation is that buffer, i.e.
    ``values.chunk(starts[i], counts[i])[k]``. Uses ``values.chunk_pieces`` when the value
    encoder has it, else calls ``chunk`` per chunk."""
    fast = getattr(values, "chunk_pieces", None)
    if fast is not None:
        return fast(starts, counts)
    per_chunk = [values.chunk(int(s), int(c)) for s, c in zip(starts, counts, strict=True)]
    out = []
    for k in range(values.num_buffers):
        bufs = [bufs[k] for bufs in per_chunk]
        out.append((np.array([len(b) for b in bufs], np.int64), [(b,) for b in bufs]))
    return out


def _pad_lengths(sizes: np.ndarray) -> np.ndarray:
    return (-sizes) % 8


def encode_mini_block_fast(
    sh: Shredded,
    values,
    version: str,
    dictionary: tuple[bytes, pb.CompressiveEncoding, int] | None = None,
):
    """:func:`encode_mini_block`, vectorised over the chunks (the same buffers and layout)."""
    large = version != "2.1"
    nvis = len(sh.values)
    has_levels = sh.rep is not None or sh.deff is not None
    total_levels = sh.num_levels
    # every slot visible (no list layer: the usual column) -> value i is level i, and the
    # index of visible slots is not built (a pass over the page for nothing)
    vis_pos = None if nvis == total_levels else np.flatnonzero(sh.visible)

    def level_end_of(value_end: int) -> int:
        if value_end >= nvis:
            return total_levels
        return value_end if vis_pos is None else int(vis_pos[value_end])

    level_bytes = 2 * ((sh.rep is not None) + (sh.deff is not None))
    rep_w = int(sh.rep.max()).bit_length() if sh.rep is not None else 0
    def_w = int(sh.deff.max()).bit_length() if sh.deff is not None else 0
    counts = np.array(plan_chunks(values, nvis, level_end_of, level_bytes), np.int64)
    nchunks = len(counts)
    ends = np.cumsum(counts)
    starts = ends - counts
    lend = np.full(nchunks, total_levels, np.int64)
    inner = ends < nvis
    lend[inner] = ends[inner] if vis_pos is None else vis_pos[ends[inner]]
    lstart = np.zeros(nchunks, np.int64)
    lstart[1:] = lend[:-1]
    bounds = np.stack([lstart, lend], axis=1)

    sections = []  # per section: (sizes, pieces per chunk) in chunk order
    if sh.rep is not None:
        sections.append(out_of_line_pack_many_fast(sh.rep, bounds, 16, rep_w))
    if sh.deff is not None:
        sections.append(out_of_line_pack_many_fast(sh.deff, bounds, 16, def_w))
    n_level_sections = len(sections)
    value_sections = batched_chunks(values, starts, counts)
    sections.extend(value_sections)

    # headers: u16 levels, u16 rep/def sizes, u16|u32 value buffer sizes, 0xFE pad to 8
    size_dt = np.dtype("<u4" if large else "<u2")
    head_raw = 2 + 2 * n_level_sections + size_dt.itemsize * len(value_sections)
    head_len = head_raw + (-head_raw) % 8
    heads = np.full((nchunks, head_len), PAD, np.uint8)
    nlev = (lend - lstart) if has_levels else np.zeros(nchunks, np.int64)
    heads[:, 0:2] = nlev.astype("<u2").view(np.uint8).reshape(nchunks, 2)
    col = 2
    for sizes, _ in sections[:n_level_sections]:
        heads[:, col : col + 2] = sizes.astype("<u2").view(np.uint8).reshape(nchunks, 2)
        col += 2
    w = size_dt.itemsize
    for sizes, _ in value_sections:
        heads[:, col : col + w] = sizes.astype(size_dt).view(np.uint8).reshape(nchunks, w)
        col += w
    head_bytes = heads.tobytes()
    body = np.full(nchunks, head_len, np.int64)
    for sizes, _ in sections:
        body += sizes + _pad_lengths(sizes)
    limit = MAX_CHUNK_BYTES if not large else 1 << 31
    too_large = np.flatnonzero(body > limit)
    if len(too_large):
        raise UnsupportedFeature(
            f"mini-block chunk of {int(body[too_large[0]])} bytes is too large"
        )
    logs = np.zeros(nchunks, np.int64)
    if nchunks > 1:
        logs[:-1] = np.log2(counts[:-1]).astype(np.int64)
    words = ((body // 8 - 1) << 4) | logs

    # the chunk bytes: header, then each section's pieces and its pad, chunk after chunk
    hv = memoryview(head_bytes)
    per_section = [
        (pieces, [_PADS[p] for p in _pad_lengths(sizes).tolist()]) for sizes, pieces in sections
    ]
    parts: list = []
    append, extend = parts.append, parts.extend
    for i in range(nchunks):
        append(hv[i * head_len : (i + 1) * head_len])
        for pieces, pads in per_section:
            extend(pieces[i])
            append(pads[i])

    rep_index = _repetition_index(sh, lstart, lend).tobytes() if sh.rep is not None else None
    meta = words.astype("<u4" if large else "<u2").tobytes()
    return _page(sh, values, large, rep_w, def_w, meta, b"".join(parts), dictionary, rep_index)


def _repetition_index(sh: Shredded, lstart: np.ndarray, lend: np.ndarray) -> np.ndarray:
    """The ``(ended, open_levels)`` u64 pairs of every chunk (see the module docstring), as
    the readable loop computes them chunk by chunk."""
    total_levels = sh.num_levels
    starts = row_starts(sh)
    row_end_levels = np.append(starts[1:], total_levels) - 1
    ended = np.searchsorted(row_end_levels, lend, "left") - np.searchsorted(
        row_end_levels, lstart, "left"
    )
    open_levels = np.zeros(len(lend), np.int64)
    mid = np.flatnonzero((lend < total_levels) & (lend > lstart))
    if len(mid) and len(starts):
        row = np.searchsorted(starts, lend[mid] - 1, "right") - 1
        still_open = row_end_levels[row] >= lend[mid]
        open_levels[mid] = np.where(still_open, lend[mid] - np.maximum(starts[row], lstart[mid]), 0)
    return np.stack([ended, open_levels], axis=1).astype("<u8").reshape(-1)
