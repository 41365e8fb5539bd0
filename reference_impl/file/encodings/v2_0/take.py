"""Random access into 2.0 files: ``take`` reads only the pages that hold the requested rows.

2.0 pages carry no first-row number (``priority`` is 0), so a page's rows are found from the
running sum of page lengths (FILE-ENCODINGS §1.2). Page bytes are read lazily
(:class:`~.column.LazyPageBuffers`, one ranged read per page), so decoding a page reads it and
nothing else:

* a leaf field (primitive, string, dictionary, fixed-size list, packed struct, blob): the pages
  of its column that hold the rows;
* a list of a leaf: the offsets pages holding the rows give, per row, a page-relative item
  range; the offsets page's item base is the sum of ``List.num_items`` over earlier pages
  (read from the page encodings, not from data), and the items are taken from the item column
  the same way as a leaf;
* anything else (structs, nested lists) is decoded whole and then taken.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from reference_impl.errors import FormatError

from ._common import RULE_NODE, RULE_OFFSETS
from ._common import decode as decode_node
from .column import Column, _blob_page, container_columns, count_columns, decode_field
from .list import decode_list_page


def _is_leaf(t: pa.DataType) -> bool:
    return not (pa.types.is_struct(t) or pa.types.is_list(t) or pa.types.is_large_list(t)
                or pa.types.is_map(t))


def _page_starts(column: Column) -> np.ndarray:
    return np.concatenate([[0], np.cumsum([p.length for p in column.pages])]).astype(np.int64)


def take_leaf(t: pa.DataType, column: Column, idx: np.ndarray) -> pa.Array:
    """Values ``idx`` of a leaf column, decoding only the pages that hold them."""
    starts = _page_starts(column)
    if len(idx) and (idx.min() < 0 or idx.max() >= starts[-1]):
        raise FormatError("row outside the column's pages", rule=RULE_NODE)
    page_of = np.searchsorted(starts, idx, side="right") - 1
    pieces = []
    for pg in np.unique(page_of).tolist():
        page = column.pages[pg]
        if column.is_blob:
            arr = _blob_page(page, t)
        else:
            arr = decode_node(page.encoding, page.ctx, page.length, t)
        if len(arr) != page.length:
            raise FormatError(f"page decodes {len(arr)} values, length {page.length}", rule=RULE_NODE)
        pieces.append((int(starts[pg]), arr))
    return _gather(t, pieces, idx)


def _gather(t, pieces, idx):
    if not pieces:
        return pa.array([], t)
    firsts = np.array([p[0] for p in pieces], np.int64)
    base = np.concatenate([[0], np.cumsum([len(p[1]) for p in pieces])[:-1]]).astype(np.int64)
    k = np.searchsorted(firsts, idx, side="right") - 1
    whole = pa.concat_arrays([p[1] for p in pieces]) if len(pieces) > 1 else pieces[0][1]
    return whole.take(pa.array(idx - firsts[k] + base[k]))


def take_list(field: pa.Field, columns, index: int, idx: np.ndarray) -> pa.Array:
    """Rows ``idx`` of a ``list<leaf>`` field (offsets column ``index``, items ``index+1``)."""
    t = field.type
    offsets_col, items_col = columns[index], columns[index + 1]
    starts = _page_starts(offsets_col)
    item_base = np.concatenate([[0], np.cumsum([int(p.encoding.list.num_items) if p.length else 0
                                                for p in offsets_col.pages])]).astype(np.int64)
    page_of = np.searchsorted(starts, idx, side="right") - 1
    lo = np.zeros(len(idx), np.int64)
    hi = np.zeros(len(idx), np.int64)
    null = np.zeros(len(idx), bool)
    for pg in np.unique(page_of).tolist():
        page = offsets_col.pages[pg]
        if page.encoding.WhichOneof("array_encoding") != "list":
            raise page.ctx.error("a list field's first column must hold List pages", RULE_NODE)
        lp = decode_list_page(page.encoding.list, page.ctx, page.length)
        ends = lp.ends.astype(np.int64)
        begins = np.concatenate([[0], ends[:-1]])
        sel = page_of == pg
        j = idx[sel] - starts[pg]
        lo[sel] = begins[j] + item_base[pg]
        hi[sel] = ends[j] + item_base[pg]
        null[sel] = lp.is_null[j]
    lens = hi - lo
    n_items = int(_page_starts(items_col)[-1])
    if len(idx) and (hi.max() > n_items):
        raise FormatError(f"list offsets reference item {int(hi.max())}, item column holds {n_items}",
                          rule=RULE_OFFSETS)
    item_idx = np.repeat(lo - np.concatenate([[0], np.cumsum(lens)[:-1]]), lens) + np.arange(int(lens.sum()))
    items = take_leaf(t.value_type, items_col, item_idx)
    large = pa.types.is_large_list(t)
    offs = pa.array(np.concatenate([[0], np.cumsum(lens)]), pa.int64() if large else pa.int32())
    cls = pa.LargeListArray if large else pa.ListArray
    return cls.from_arrays(offs, items, type=t, mask=pa.array(null) if null.any() else None)


def take(reader, idx: np.ndarray, names: list) -> pa.Table:
    """``reader.take`` for 2.0 files (``reader`` is a ``LanceFileReader``)."""
    columns = container_columns(reader.container)
    starts, index = {}, 0
    for f in reader.decode_schema:
        starts[f.name] = index
        index += count_columns(f, columns, index)
    arrays, fields = [], []
    for name in names:
        f = reader.decode_schema.field(name)
        col = starts[name]
        t = f.type
        try:
            if _is_leaf(t) and col < len(columns):
                arr = take_leaf(t, columns[col], idx)
            elif (pa.types.is_list(t) or pa.types.is_large_list(t)) and _is_leaf(t.value_type) \
                    and col + 1 < len(columns):
                arr = take_list(f, columns, col, idx)
            else:
                whole, _ = decode_field(f, columns, col)
                arr = whole.take(pa.array(idx))
        except (pa.ArrowException, ValueError, OverflowError) as exc:
            if isinstance(exc, FormatError):
                raise
            raise FormatError(f"pages do not form valid Arrow data: {exc}", rule=RULE_NODE,
                              path=reader.key) from None
        arrays.append(arr)
        fields.append(f.remove_metadata())
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))
