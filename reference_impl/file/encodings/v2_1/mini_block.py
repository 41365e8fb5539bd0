"""The mini-block layout (``PageLayout.mini_block_layout``, FILE-ENCODINGS §3.2).

Page buffers: ``[0]`` chunk metadata, ``[1]`` chunk data, ``[2]`` dictionary (if ``dictionary``
is set), ``[last]`` repetition index (if ``repetition_index_depth > 0``).

Chunk metadata: one word per chunk, u16 in 2.1, u32 in 2.2 (``has_large_chunk``)::

    chunk_bytes     = ((word >> 4) + 1) * 8
    values_in_chunk = 1 << (word & 0xF)      # every chunk but the last, whose count is
                                             # num_items minus the others

Chunk layout (offsets from the chunk start; chunks are back to back in buffer 1)::

    u16 num_levels
    u16 rep_size                 if rep_compression is set
    u16 def_size                 if def_compression is set
    u16 (2.1) / u32 (2.2) size[k] for each of num_buffers value buffers
    pad to 8; rep bytes, pad to 8; def bytes, pad to 8; value buffers, each padded to 8

Levels are block-decompressed per chunk (count = num_levels); values are mini-block
decompressed (count = values in the chunk, i.e. visible items). The repetition index holds
``depth+1`` u64 per chunk; a full scan does not need it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from reference_impl.errors import FormatError

from . import compressive, dictionary
from .chunks import ChunkSet

RULE = "ENC-041"
#: most values a chunk can hold (the 4-bit log2 count of a chunk word gives at most 2**15)
MAX_CHUNK_VALUES = 1 << 15


def _pad8(x: int) -> int:
    return (x + 7) & ~7


def chunk_table(layout, meta, version: str):
    """``(byte offsets, byte sizes, value counts)`` of every chunk, vectorised."""
    large = bool(layout.has_large_chunk)
    if version == "2.1" and large:
        raise FormatError("has_large_chunk is set in a 2.1 file", rule="ENC-042")
    if version != "2.1" and not large:
        raise FormatError(f"a {version} mini-block page must set has_large_chunk", rule="ENC-042")
    dt = np.dtype("<u4") if large else np.dtype("<u2")
    if len(meta) % dt.itemsize:
        raise FormatError("chunk metadata is not a whole number of words", rule=RULE)
    words = np.frombuffer(meta, dt).astype(np.int64)
    sizes = ((words >> 4) + 1) * 8
    logs = words & 0xF
    counts = np.left_shift(1, logs)
    n_items = int(layout.num_items)
    if len(words):
        if len(words) > 1 and np.any(logs[:-1] == 0):
            raise FormatError("a non-last chunk has a log2 value count of 0", rule=RULE)
        before = int(counts[:-1].sum())
        last = n_items - before
        if last < 0:
            raise FormatError(f"chunks hold more than num_items={n_items} values", rule=RULE)
        if last > MAX_CHUNK_VALUES:  # a hostile num_items: no chunk holds that many values
            raise FormatError(f"num_items={n_items} leaves {last} values for the last chunk", rule=RULE)
        counts[-1] = last
    elif n_items:
        raise FormatError(f"num_items={n_items} but no chunks", rule=RULE)
    offsets = np.zeros(len(words), np.int64)
    if len(words):
        np.cumsum(sizes[:-1], out=offsets[1:])
    return offsets, sizes, counts


@dataclass
class Chunks:
    """Where the parts of every chunk of one or more mini-block pages lie in ``data``: per chunk
    the level count and the value count, and per level kind / value buffer the start and size."""

    data: np.ndarray  # uint8: the chunk-data buffer(s)
    n_levels: np.ndarray
    counts: np.ndarray
    level_starts: list
    level_sizes: list
    value_starts: list
    value_sizes: list

    @property
    def n_chunks(self) -> int:
        return len(self.counts)


def _check_layout(layout, version: str) -> None:
    compressive.check_version(layout, version)
    if not layout.HasField("value_compression"):
        raise FormatError("mini-block page without value_compression", rule=RULE)
    nb = int(layout.num_buffers)
    expect_nb = compressive.mini_block_buffers(layout.value_compression)
    if nb != expect_nb:
        raise FormatError(f"num_buffers={nb}, value encoding needs {expect_nb}", rule=RULE)


def page_chunks(layout, buffers: list, version: str) -> Chunks:
    """Read a page's chunk table and every chunk's header; check that each part lies in its chunk."""
    _check_layout(layout, version)
    nb = int(layout.num_buffers)
    has_rep = layout.HasField("rep_compression")
    has_def = layout.HasField("def_compression")
    need = 2 + (1 if layout.HasField("dictionary") else 0) + (1 if layout.repetition_index_depth else 0)
    if len(buffers) < need:
        raise FormatError(f"mini-block page has {len(buffers)} buffers, needs {need}", rule=RULE)
    meta, data = buffers[0], buffers[1]
    offs, sizes, counts = chunk_table(layout, meta, version)
    if len(offs) and int(offs[-1] + sizes[-1]) != len(data):
        raise FormatError(f"chunk sizes add up to {int(offs[-1] + sizes[-1])}, data buffer has {len(data)}",
                          rule=RULE)
    large = bool(layout.has_large_chunk)
    vsz = 4 if large else 2
    hdr_words = 1 + has_rep + has_def
    hdr_len = 2 * hdr_words + vsz * nb
    d = np.frombuffer(data, np.uint8)
    n_chunks = len(offs)
    if n_chunks and np.any(sizes < hdr_len):
        raise FormatError("a chunk is shorter than its header", rule=RULE)

    def u(rel, width):
        pos = offs + rel
        out = np.zeros(n_chunks, np.int64)
        for b in range(width):
            out |= d[pos + b].astype(np.int64) << (8 * b)
        return out

    n_levels = u(0, 2)
    level_sizes = [u(2 * (1 + i), 2) for i in range(has_rep + has_def)]
    value_sizes = [u(2 * hdr_words + vsz * k, vsz) for k in range(nb)]
    pos = offs + _pad8(hdr_len)
    level_starts = []
    for sz in level_sizes:
        level_starts.append(pos)
        pos = (pos + sz + 7) & ~7
    value_starts = []
    for sz in value_sizes:
        value_starts.append(pos)
        pos = (pos + sz + 7) & ~7
    ends = [st + sz for st, sz in zip(level_starts + value_starts, level_sizes + value_sizes, strict=False)]
    if n_chunks and ends and np.any(np.max(np.stack(ends), axis=0) > offs + sizes):
        raise FormatError("chunk buffers run past their chunk", rule=RULE)
    return Chunks(d, n_levels, counts, level_starts, level_sizes, value_starts, value_sizes)


def decode_chunks(layout, ch: Chunks, buffers: list | None):
    """Decode the levels and values of the chunks ``ch`` -> ``(rep, def, values)``.

    ``buffers`` (the page's) supplies the dictionary when the layout has one."""
    has_rep = layout.HasField("rep_compression")
    has_def = layout.HasField("def_compression")
    n_chunks = ch.n_chunks
    decoded = []
    for k, node in enumerate([n for n, has in ((layout.rep_compression, has_rep),
                                               (layout.def_compression, has_def)) if has]):
        decoded.append(compressive.levels_chunk_set(node, ch.data, ch.level_starts[k], ch.level_sizes[k],
                                                    ch.n_levels))
    rep = decoded[0] if has_rep and n_chunks else None
    dfn = decoded[-1] if has_def and n_chunks else None
    chunk_set = ChunkSet(ch.data, ch.value_starts, ch.value_sizes)
    if n_chunks:
        values = compressive.decode_mini_block(layout.value_compression, chunk_set, ch.counts)
    else:
        values = None
    if layout.HasField("dictionary"):
        items = compressive.decode_block(layout.dictionary, buffers[2], int(layout.num_dictionary_items))
        values = dictionary.resolve(values, items)
    return rep, dfn, values


def decode(layout, buffers: list, version: str, rows: int):
    """Decode a mini-block page -> ``(rep, def, values)`` (levels may be None)."""
    return decode_chunks(layout, page_chunks(layout, buffers, version), buffers)


def same_shape(a, b) -> bool:
    """Whether two pages' mini-block layouts differ at most in ``num_items`` (so their chunks
    decode alike, see :func:`decode_pages`)."""
    if a.num_items == b.num_items:
        return a == b
    c = type(a)()
    c.CopyFrom(b)
    c.num_items = a.num_items
    return a == c


def decode_pages(layouts: list, buffers_list: list, version: str, extents: list | None = None):
    """:func:`decode` of consecutive pages of one column as one: ``(rep, def, values)`` of the
    pages concatenated (the same as decoding them one by one and joining the results).

    A speed-up beside the page-at-a-time path: the chunks of all pages are decoded by the same
    few numpy steps, so a column of many small pages costs what one large page costs. The pages'
    layouts must be alike (:func:`same_shape`) and carry no dictionary. ``extents``, when
    given, receives ``(levels, values)`` of each page, for the caller to check each page as
    decoding it alone would.
    """
    first = layouts[0]
    if first.HasField("dictionary") or not all(same_shape(first, lay) for lay in layouts[1:]):
        raise ValueError("pages of different shapes are decoded one by one")
    parts = [page_chunks(lay, bufs, version) for lay, bufs in zip(layouts, buffers_list, strict=True)]
    if extents is not None:
        extents.extend((int(p.n_levels.sum()), int(p.counts.sum())) for p in parts)
    if len(parts) == 1:
        return decode_chunks(first, parts[0], buffers_list[0])
    base = np.cumsum([0] + [len(p.data) for p in parts[:-1]])  # each page's data in the joined data

    def joined(get, shift: bool) -> list:
        """Per level kind / value buffer, the pages' arrays ``get(page)[k]`` concatenated;
        positions (``shift``) moved to where their page's data lands."""
        return [np.concatenate([get(p)[k] + (b if shift else 0) for p, b in zip(parts, base, strict=True)])
                for k in range(len(get(parts[0])))]

    ch = Chunks(
        np.concatenate([p.data for p in parts]),
        np.concatenate([p.n_levels for p in parts]),
        np.concatenate([p.counts for p in parts]),
        joined(lambda p: p.level_starts, True),
        joined(lambda p: p.level_sizes, False),
        joined(lambda p: p.value_starts, True),
        joined(lambda p: p.value_sizes, False),
    )
    return decode_chunks(first, ch, None)
