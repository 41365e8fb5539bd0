"""Holding an index against its data: the comparisons every value index shares.

A value index (BTREE, BITMAP, LABEL_LIST, ...) says, in the end, a set of ``(value, row)``
pairs: "row r holds value v". The data says the same kind of set for the rows the index covers
(:class:`reference_impl.index.IndexedData`). This module compares the two sets, all at once
with numpy (sort and merge, never a Python loop over rows), and yields a
:class:`reference_impl.index.Disagreement` for each difference:

* ``ROW_OUTSIDE``: the index names a row that is not a row of the fragments it covers (a live
  row of another fragment, or a place where no row was). Rows of a covered fragment that a
  deletion removed, and rows of fragments the version no longer holds, may remain.
* ``ROW_MISSING``: a live row of the covered fragments that the index does not name at all
  (for kinds that index every row; LABEL_LIST names only rows with labels).
* ``VALUE_DIFFERS``: the index names a live row under a value the data does not hold there,
  or does not name it under a value the data holds there.

Values are compared as Arrow values (nulls equal nulls: an index of nulls keeps them as a
value of their own); index values of another type than the column's are cast to it first.
At most :data:`MAX_PER_RULE` disagreements of one rule are itemised per index, then one more
that counts the rest, so a thoroughly wrong index of a million rows stays a short report.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from . import Disagreement, IndexedData

ROW_MISSING = "INDEX-101"
VALUE_DIFFERS = "INDEX-102"
ROW_OUTSIDE = "INDEX-103"

#: itemised disagreements of one rule for one index; the rest are counted in one more
MAX_PER_RULE = 10


def value_text(v) -> str:
    """A short printable form of a value for a message."""
    text = "null" if v is None else repr(v)
    return text if len(text) <= 80 else text[:77] + "..."


def codes(index_values: pa.Array, data_values: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """Integer codes for two arrays of values: equal values (nulls included) get equal codes.
    The index's values are cast to the data's type first (an index may store a wider or
    narrower type, or a string type of another width)."""
    index_values = _plain(index_values)
    data_values = _plain(data_values)
    if index_values.type != data_values.type:
        index_values = index_values.cast(data_values.type)
    both = pa.chunked_array([data_values, index_values], type=data_values.type).combine_chunks()
    enc = pc.dictionary_encode(both)
    ids = pc.fill_null(enc.indices.cast(pa.int64()), -1).to_numpy(zero_copy_only=False)
    return ids[len(data_values):], ids[:len(data_values)]


def _plain(a) -> pa.Array:
    if isinstance(a, pa.ChunkedArray):
        a = a.combine_chunks()
    if pa.types.is_dictionary(a.type):
        a = a.dictionary_decode()
    return a


def _unmatched(rows_a, codes_a, rows_b, codes_b) -> tuple[np.ndarray, np.ndarray]:
    """Masks over the pairs of side a and side b: True where a pair of one side has no equal
    pair on the other (duplicates within one side count once)."""
    na = len(rows_a)
    rows = np.concatenate([rows_a, rows_b]).astype(np.uint64)
    cds = np.concatenate([codes_a, codes_b]).astype(np.int64)
    side = np.concatenate([np.zeros(na, np.int8), np.ones(len(rows_b), np.int8)])
    order = np.lexsort((side, cds, rows))
    r, c, s = rows[order], cds[order], side[order]
    same_pair = (r[1:] == r[:-1]) & (c[1:] == c[:-1])
    matched = np.zeros(len(r), bool)
    both = same_pair & (s[1:] != s[:-1])
    matched[1:] |= both
    matched[:-1] |= both
    # a duplicate on one side is matched when its group is (it sorts next to its twin)
    dup = same_pair & (s[1:] == s[:-1])
    if dup.any():
        grp = np.concatenate([[0], np.cumsum(~same_pair)])
        hit = np.zeros(grp[-1] + 1, bool)
        np.logical_or.at(hit, grp, matched)
        matched = hit[grp]
    out = np.empty(len(r), bool)
    out[order] = ~matched
    return out[:na], out[na:]


def hold_pairs(index_name: str, data: IndexedData, rows, values: pa.Array, *,
               data_rows=None, data_values: pa.Array | None = None, every_row: bool = True,
               where=None) -> Iterator[Disagreement]:
    """Compare the index's ``(rows[i], values[i])`` pairs with the data's.

    ``data_rows``/``data_values`` are the data's pairs (default: one per live covered row,
    ``data.row_ids``/``data.values``; a multi-valued kind passes its exploded labels).
    ``every_row``: the index names every live covered row (BTREE, BITMAP), so a row it does
    not name at all is ``ROW_MISSING``. ``where(i)`` gives the place in the index of pair i
    (a page, a key) for the messages."""
    rows = np.asarray(rows, np.uint64)
    if data_rows is None:
        data_rows, data_values = data.row_ids, data.values
    data_rows = np.asarray(data_rows, np.uint64)
    kind = data.classify(rows)
    yield from _outside(index_name, data, rows, values, kind, where)
    live = np.nonzero(kind == IndexedData.LIVE)[0]
    try:
        icodes, dcodes = codes(values.take(pa.array(live, pa.int64())), data_values)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
        yield Disagreement(VALUE_DIFFERS, f"index {index_name!r} holds values of type "
                           f"{values.type}, which do not compare with the column "
                           f"{data.field_name!r} of type {data_values.type}: {exc}")
        return
    extra, missing = _unmatched(rows[live], icodes, data_rows, dcodes)
    named = np.unique(rows[live])
    if every_row:
        absent = np.ones(len(data.row_ids), bool)
        absent[data.positions(named)] = False
        yield from _missing(index_name, data, np.nonzero(absent)[0])
    else:
        absent = np.zeros(len(data.row_ids), bool)
    # the pairs of the data the index lacks, on rows it names (or on rows with labels)
    lacking = np.nonzero(missing)[0]
    if every_row:
        lacking = lacking[~absent[data.positions(data_rows[lacking])]]
    yield from _differs(index_name, data, rows[live], values.take(pa.array(live, pa.int64())),
                        np.nonzero(extra)[0], data_rows, data_values, lacking,
                        None if where is None else (lambda j: where(int(live[j]))))


def _capped(items: list, rule: str, what: str, index_name: str) -> Iterator[Disagreement]:
    yield from items[:MAX_PER_RULE]
    if len(items) > MAX_PER_RULE:
        yield Disagreement(rule, f"index {index_name!r}: {len(items) - MAX_PER_RULE} more "
                           f"{what} ({len(items)} in all)")


def _outside(index_name, data, rows, values, kind, where) -> Iterator[Disagreement]:
    bad = np.nonzero(kind == IndexedData.OUTSIDE)[0]
    if not len(bad):
        return
    cover = _fragments_text(data.fragment_ids)
    out = []
    for i in bad[:MAX_PER_RULE + 1]:
        r = int(rows[i])
        v = values[int(i)].as_py()
        out.append(Disagreement(
            ROW_OUTSIDE, f"index {index_name!r} names row {_row_text(r, data)} under value "
            f"{value_text(v)}, which is not a row of the fragments it covers ({cover})",
            row_id=r, value=v, where=dict(where(int(i))) if where else {}))
    out += [None] * (len(bad) - len(out))
    yield from _capped(out, ROW_OUTSIDE, "rows outside the covered fragments", index_name)


def _missing(index_name, data, positions) -> Iterator[Disagreement]:
    if not len(positions):
        return
    out = []
    for p in positions[:MAX_PER_RULE + 1]:
        r = int(data.row_ids[p])
        v = data.values[int(p)].as_py()
        out.append(Disagreement(
            ROW_MISSING, f"index {index_name!r} does not name row {_row_text(r, data)}, a live "
            f"row of a fragment it covers, where {data.field_name!r} is {value_text(v)}",
            row_id=r, value=v))
    out += [None] * (len(positions) - len(out))
    yield from _capped(out, ROW_MISSING, "live rows not in the index", index_name)


def _differs(index_name, data, rows, values, extra, data_rows, data_values, lacking,
             where) -> Iterator[Disagreement]:
    out = []
    for j in extra[:MAX_PER_RULE + 1]:
        r = int(rows[j])
        v = values[int(j)].as_py()
        held = data.values[int(data.positions([r])[0])].as_py()
        out.append(Disagreement(
            VALUE_DIFFERS, f"index {index_name!r} names row {_row_text(r, data)} under value "
            f"{value_text(v)}, but {data.field_name!r} holds {value_text(held)} there",
            row_id=r, value=v, where=dict(where(int(j))) if where else {}))
    budget = max(0, MAX_PER_RULE + 1 - len(out))
    for j in lacking[:budget]:
        r = int(data_rows[j])
        v = data_values[int(j)].as_py()
        out.append(Disagreement(
            VALUE_DIFFERS, f"index {index_name!r} does not name row {_row_text(r, data)} under "
            f"value {value_text(v)}, which {data.field_name!r} holds there", row_id=r,
            value=v))
    out += [None] * (len(extra) + len(lacking) - len(out))
    yield from _capped(out, VALUE_DIFFERS, "(row, value) pairs where the index and the data differ",
                       index_name)


def _row_text(r: int, data: IndexedData) -> str:
    if data.stable_row_ids:
        return f"id {r}"
    return f"{r} (fragment {r >> 32}, offset {r & 0xFFFFFFFF})"


def _fragments_text(ids) -> str:
    ids = [int(i) for i in ids]
    if not ids:
        return "none"
    shown = ", ".join(map(str, ids[:8]))
    return f"fragments {shown}" + (f" and {len(ids) - 8} more" if len(ids) > 8 else "")
