"""Random access into 2.1/2.2 pages: the rows a ``take`` needs, read chunk by chunk.

A mini-block page (FILE-ENCODINGS §3.2) can be searched without reading its data: the chunk
metadata buffer gives every chunk's byte offset, byte size and value count, and for pages with
repetition the repetition index gives, per chunk, ``v0`` = rows whose final level lies in the
chunk and ``v1`` = levels at the chunk's end that belong to a row finished later. These small
"search" buffers (and the dictionary, when there is one) are read once per page and kept in a
:class:`PageIndex`; after that a data point costs **one** ranged read: the run of chunks holding
its row. That is within the spec's claim of at most two reads per data point (full-zip pages
need the repetition-index entry and then the row; here they are read whole, see
:func:`rows_plan`).

The run of chunks decoded for row ``r``:

* without repetition every level is one row, so chunk ``c`` holds rows
  ``[sum(counts[:c]), sum(counts[:c+1]))``;
* with repetition, row ``r`` *ends* in the first chunk whose running ``v0`` sum exceeds ``r``.
  The run is widened backwards while the chunk before it ends inside a row (``v1 > 0``) and
  forwards while the run's last chunk does, so it starts and ends on row boundaries and
  decodes like a small page of ``sum(v0)`` rows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from reference_impl.errors import FormatError

from .encodings.v2_1 import mini_block

RULE = "ENC-041"


@dataclass
class PageIndex:
    """The search buffers of one mini-block page and the chunk table derived from them."""

    offsets: np.ndarray  # byte offset of each chunk in buffer 1
    sizes: np.ndarray  # byte size of each chunk
    counts: np.ndarray  # values in each chunk
    first_row: np.ndarray  # rows before each chunk starts (n_chunks + 1 entries, run-aligned)
    row_end: np.ndarray  # rows ended by the end of each chunk (cumulative v0, or cumulative counts)
    straddles: np.ndarray  # bool: chunk ends inside a row (v1 > 0)
    meta: bytes
    dictionary: bytes | None
    rep_index: bytes | None


def load_page_index(container, page, layout, version: str) -> PageIndex:
    """Read the chunk metadata, dictionary and repetition index of a mini-block page."""
    offs, sizes = list(page.buffer_offsets), list(page.buffer_sizes)
    nbuf = 2 + bool(layout.HasField("dictionary")) + bool(layout.repetition_index_depth)
    if len(offs) < nbuf or len(sizes) != len(offs):
        raise FormatError(f"mini-block page has {len(offs)} buffers, needs {nbuf}", rule=RULE,
                          path=container.path)

    def buf(i):
        o, s = int(offs[i]), int(sizes[i])
        if o + s > container.size:
            raise FormatError(f"page buffer {o}+{s} lies outside the file", rule="FILE-006",
                              path=container.path, offset=o)
        return bytes(container.read_buffer(o, s)) if s else b""

    meta = buf(0)
    c_off, c_size, counts = mini_block.chunk_table(layout, meta, version)
    if len(c_off) and int(c_off[-1] + c_size[-1]) != int(sizes[1]):
        raise FormatError("chunk sizes do not add up to the chunk data buffer", rule=RULE,
                          path=container.path)
    dictionary = buf(2) if layout.HasField("dictionary") else None
    rep_index = None
    n = len(c_off)
    if layout.repetition_index_depth:
        rep_index = buf(nbuf - 1)
        depth = int(layout.repetition_index_depth)
        if depth > 64 or len(rep_index) != 8 * (depth + 1) * n:
            raise FormatError(f"repetition index of {len(rep_index)} bytes for {n} chunks at depth "
                              f"{depth}", rule=RULE, path=container.path)
        words = np.frombuffer(rep_index, "<u8").reshape(n, depth + 1).astype(np.int64)
        v0, v1 = words[:, 0], words[:, 1]
        if int(v0.sum()) != int(page.length) or np.any(v0 < 0):
            raise FormatError(f"repetition index counts {int(v0.sum())} rows, page has {page.length}",
                              rule=RULE, path=container.path)
        row_end = np.cumsum(v0)
        straddles = v1 > 0
    else:
        row_end = np.cumsum(counts)
        straddles = np.zeros(n, bool)
        if n and int(row_end[-1]) != int(page.length):
            raise FormatError(f"chunks hold {int(row_end[-1])} values, page has {page.length} rows",
                              rule=RULE, path=container.path)
    first_row = np.concatenate([[0], row_end]).astype(np.int64)
    return PageIndex(c_off, c_size, counts, first_row, row_end, straddles, meta, dictionary, rep_index)


def chunk_runs(index: PageIndex, rows: np.ndarray) -> list:
    """Disjoint runs ``(c0, c1)`` (inclusive) of chunks, on row boundaries, covering ``rows``."""
    n = len(index.offsets)
    ends = np.searchsorted(index.row_end, rows, side="right")  # chunk where each row ends
    runs = []
    for c in np.unique(ends).tolist():
        c0 = c1 = c
        while c0 > 0 and index.straddles[c0 - 1]:
            c0 -= 1
        while c1 < n - 1 and index.straddles[c1]:
            c1 += 1
        if runs and c0 <= runs[-1][1]:
            runs[-1] = (runs[-1][0], max(runs[-1][1], c1))
        else:
            runs.append((c0, c1))
    return runs


def read_run(container, page, layout, index: PageIndex, c0: int, c1: int):
    """``(sub_layout, buffers, rows, first_row)`` of chunks ``c0..c1`` as a small page."""
    word = 4 if layout.has_large_chunk else 2
    meta = index.meta[c0 * word:(c1 + 1) * word]
    start = int(page.buffer_offsets[1]) + int(index.offsets[c0])
    size = int(index.offsets[c1] + index.sizes[c1] - index.offsets[c0])
    data = memoryview(container.read_buffer(start, size))
    sub = type(layout)()
    sub.CopyFrom(layout)
    sub.num_items = int(index.counts[c0:c1 + 1].sum())
    buffers = [memoryview(meta), data]
    if index.dictionary is not None:
        buffers.append(memoryview(index.dictionary))
    if index.rep_index is not None:
        depth = int(layout.repetition_index_depth)
        buffers.append(memoryview(index.rep_index)[c0 * 8 * (depth + 1):(c1 + 1) * 8 * (depth + 1)])
    first = int(index.first_row[c0])
    rows = int(index.row_end[c1]) - first
    return sub, buffers, rows, first
