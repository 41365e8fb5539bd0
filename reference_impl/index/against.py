"""Holding an index against its data: the comparisons every value index shares.

Rows an index names are first translated through the moves of a deferred remap
(:meth:`IndexedData.translate`), as readers translate them.

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


def _unmatched(pos_a, codes_a, pos_b, codes_b) -> tuple[np.ndarray, np.ndarray]:
    """Masks over the pairs of side a and side b: True where a pair of one side has no equal
    pair on the other (duplicates within one side count once). A pair is ``(position of the
    row among the data's live rows, value code)``; both are small non-negative integers, so
    each pair is one int64 key and the whole comparison is one sort."""
    na = len(pos_a)
    width = np.int64(max(int(codes_a.max(initial=-1)), int(codes_b.max(initial=-1))) + 2)
    key = np.concatenate([pos_a.astype(np.int64) * width + (codes_a + 1),
                          pos_b.astype(np.int64) * width + (codes_b + 1)])
    tagged = key * 2 + np.concatenate([np.zeros(na, np.int64), np.ones(len(pos_b), np.int64)])
    order = np.argsort(tagged)
    t = tagged[order]
    pair = t >> 1
    # a pair is matched when its run of equal keys holds both sides
    start = np.concatenate([[True], pair[1:] != pair[:-1]]) if len(t) else np.zeros(0, bool)
    run = np.cumsum(start) - 1
    n_runs = int(run[-1]) + 1 if len(t) else 0
    has_a = np.zeros(n_runs, bool)
    has_b = np.zeros(n_runs, bool)
    side = (t & 1).astype(bool)
    has_a[run[~side]] = True
    has_b[run[side]] = True
    matched = has_a[run] & has_b[run]
    out = np.empty(len(t), bool)
    out[order] = ~matched
    return out[:na], out[na:]


def hold_pairs(index_name: str, data: IndexedData, rows, values: pa.Array, *,
               data_rows=None, data_values: pa.Array | None = None, every_row: bool = True,
               where=None, must_name: np.ndarray | None = None) -> Iterator[Disagreement]:
    """Compare the index's ``(rows[i], values[i])`` pairs with the data's.

    ``data_rows``/``data_values`` are the data's pairs (default: one per live covered row,
    ``data.row_ids``/``data.values``; a multi-valued kind passes its exploded labels).
    ``every_row``: the index names every live covered row (BTREE, BITMAP), so a row it does
    not name at all is ``ROW_MISSING``; ``must_name`` (a mask over ``data.row_ids``) narrows
    that to the rows the kind indexes (an FM index has no document for a null). ``where(i)``
    gives the place in the index of pair i (a page, a key) for the messages."""
    rows = data.translate(rows) if data.moves else np.asarray(rows, np.uint64)
    values = _plain(values)
    # work in row order: every membership test below is then a merge of sorted arrays
    order = np.argsort(rows, kind="stable")
    rows = rows[order]
    values = values.take(pa.array(order, pa.int64()))
    place = None if where is None else (lambda j: where(int(order[j])))
    if data_rows is None:
        data_pos = np.arange(len(data.row_ids), dtype=np.int64)
        data_values = data.values
    else:
        data_pos = data.positions(np.asarray(data_rows, np.uint64)).astype(np.int64)
    kind = data.classify(rows)
    yield from _outside(index_name, data, rows, values, kind, place)
    live = np.nonzero(kind == IndexedData.LIVE)[0]
    live_values = values.take(pa.array(live, pa.int64()))
    place_live = None if place is None else (lambda j: place(int(live[j])))
    if every_row and data_rows is None:
        # one value per row: compare each named row's value with the data's, in place
        yield from _hold_one_value(index_name, data, rows[live], live_values, place_live)
        return
    try:
        icodes, dcodes = codes(live_values, data_values)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
        yield Disagreement(VALUE_DIFFERS, f"index {index_name!r} holds values of type "
                           f"{values.type}, which do not compare with the column "
                           f"{data.field_name!r} of type {data_values.type}: {exc}")
        return
    live_pos = data.positions(rows[live]).astype(np.int64)
    extra, missing = _unmatched(live_pos, icodes, data_pos, dcodes)
    named = np.zeros(len(data.row_ids), bool)
    named[live_pos] = True
    if every_row:
        unnamed = ~named if must_name is None else ~named & must_name
        yield from _missing(index_name, data, np.nonzero(unnamed)[0])
    # the data's pairs the index lacks, on rows it names (a row it names nowhere is missing)
    lacking = np.nonzero(missing)[0]
    if every_row:
        # one value per row: a row named under a wrong value is said once, by that value
        wrong = np.zeros(len(data.row_ids), bool)
        wrong[live_pos[extra]] = True
        keep = named[data_pos[lacking]] & ~wrong[data_pos[lacking]]
        lacking = lacking[keep]
    data_rows_all = data.row_ids[data_pos]
    yield from _differs(index_name, data, rows[live], live_values, np.nonzero(extra)[0],
                        data_rows_all, data_values, lacking, place_live)


def _hold_one_value(index_name: str, data: IndexedData, rows: np.ndarray, values: pa.Array,
                    place) -> Iterator[Disagreement]:
    """The index names live rows ``rows`` under ``values``; the data holds one value per row.
    Each named value is compared with the value at its row (nulls equal nulls, NaN equals
    NaN); every live row must be named."""
    pos = data.positions(rows).astype(np.int64)
    held = _plain(data.values).take(pa.array(pos, pa.int64()))
    try:
        if values.type != held.type:
            values = values.cast(held.type)
        same = pc.fill_null(pc.equal(values, held), False)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
        yield Disagreement(VALUE_DIFFERS, f"index {index_name!r} holds values of type "
                           f"{values.type}, which do not compare with the column "
                           f"{data.field_name!r} of type {held.type}: {exc}")
        return
    same = pc.or_(same, pc.and_(values.is_null(), held.is_null()))
    if pa.types.is_floating(held.type):
        same = pc.or_(same, pc.fill_null(pc.and_(pc.is_nan(values), pc.is_nan(held)), False))
    named = np.zeros(len(data.row_ids), bool)
    named[pos] = True
    yield from _missing(index_name, data, np.nonzero(~named)[0])
    wrong = np.nonzero(~same.to_numpy(zero_copy_only=False))[0]
    yield from _differs(index_name, data, rows, values, wrong, data.row_ids, data.values,
                        np.zeros(0, np.int64), place)


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
