"""Answer the index census's queries from an index the kit decoded.

The census (:mod:`conformance.census.index_census`) asks each release a fixed set of queries
(``conformance/census/index_program.py``): equality, range, IN, IS NULL, ``array_has_any`` /
``array_has_all``, ``contains``, a JSON path, a full-text term and k nearest vectors. This
module answers the same queries from :func:`reference_impl.index.read_index`'s content of
the table's index, as a reader that trusts the index would:

* the rows of the fragments the index covers come from the index: every ``(value, row)``
  pair of a value index whose value satisfies the filter; the rows holding every n-gram of a
  ``contains`` string; the rows of a zone or bloom filter that may hold the value; a
  full-text term's posting list; the k stored vectors nearest the query;
* an inexact index (NGRAM, ZONEMAP, BLOOMFILTER) yields candidates, which a reader rechecks
  against the data: here, intersected with the release's scan answer (so what it can lose is
  rows, never gain them);
* rows of fragments the index does not cover come from the data (the release's scan rows
  that live there), as every reader scans unindexed fragments.

Rows are named by the index as row addresses or stable row ids (:class:`RowMap` maps them to
the table's ``id`` column; rows the data no longer holds are dropped, as readers drop
deleted rows). A content whose layout this module does not know is :class:`CannotAnswer`,
never a guess.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


class CannotAnswer(Exception):
    """The decoded content does not have a form these answers know (the message says why)."""


@dataclass(frozen=True)
class Query:
    """A parsed census query: ``op`` on ``column`` with ``args``."""

    text: str
    op: str  # eq gt range in is_null has_any has_all contains json_eq json_gt fts nearest
    #        intersects (args: the query box xmin, ymin, xmax, ymax)
    column: str
    args: tuple = ()

    def holds(self, value) -> bool:
        """Whether a value (a label, for the list operations) satisfies a value query."""
        op, a = self.op, self.args
        if op == "is_null":
            return value is None
        if value is None:
            return False
        if op in ("eq", "json_eq"):
            return value == a[0]
        if op in ("gt", "json_gt"):
            return value > a[0]
        if op == "range":
            return a[0] <= value < a[1]
        if op in ("in", "has_any"):
            return value in a
        raise CannotAnswer(f"{op} is not a value predicate")


_LIT = r"(-?\d+|'[^']*')"


def _lit(text: str):
    return text[1:-1] if text.startswith("'") else int(text)


def _lits(text: str) -> tuple:
    return tuple(_lit(t) for t in re.findall(_LIT, text))


def parse(text: str) -> Query:
    """Parse one of the census's query texts."""
    m = re.fullmatch(r"(\w+) = " + _LIT, text)
    if m:
        return Query(text, "eq", m.group(1), (_lit(m.group(2)),))
    m = re.fullmatch(r"(\w+) > " + _LIT, text)
    if m:
        return Query(text, "gt", m.group(1), (_lit(m.group(2)),))
    m = re.fullmatch(r"(\w+) >= " + _LIT + r" AND \1 < " + _LIT, text)
    if m:
        return Query(text, "range", m.group(1), (_lit(m.group(2)), _lit(m.group(3))))
    m = re.fullmatch(r"(\w+) IN \((.*)\)", text)
    if m:
        return Query(text, "in", m.group(1), _lits(m.group(2)))
    m = re.fullmatch(r"(\w+) IS NULL", text)
    if m:
        return Query(text, "is_null", m.group(1))
    m = re.fullmatch(r"array_has_(any|all)\((\w+), \[(.*)\]\)", text)
    if m:
        return Query(text, f"has_{m.group(1)}", m.group(2), _lits(m.group(3)))
    m = re.fullmatch(r"contains\((\w+), '([^']*)'\)", text)
    if m:
        return Query(text, "contains", m.group(1), (m.group(2),))
    m = re.fullmatch(r"json_get_int\((\w+), '(\w+)'\) (=|>) (-?\d+)", text)
    if m:
        return Query(text, "json_eq" if m.group(3) == "=" else "json_gt", m.group(1),
                     (int(m.group(4)), m.group(2)))
    m = re.fullmatch(r"st_intersects\((\w+), st_geomfromtext\('(POLYGON \(\(.*\)\))'\)\)", text)
    if m:
        from reference_impl.index.geometry import boxes

        _state, box = boxes(pa.array([m.group(2)]))
        return Query(text, "intersects", m.group(1), tuple(float(v) for v in box[0]))
    m = re.fullmatch(r"full_text_query '([^']*)'", text)
    if m:
        return Query(text, "fts", "text", (m.group(1),))
    m = re.fullmatch(r"(\d+) nearest to the text of id (\d+)", text)
    if m:
        return Query(text, "minhash", "text", (int(m.group(1)), int(m.group(2))))
    m = re.fullmatch(r"(\d+) nearest to the vector of id (\d+)", text)
    if m:
        return Query(text, "nearest", "vec", (int(m.group(1)), int(m.group(2))))
    raise CannotAnswer(f"query {text!r} is not one the census asks")


class RowMap:
    """The live rows of a table: row address or stable row id -> the ``id`` column, the
    fragment of each, and the vectors (for nearest-neighbour answers).

    ``moves`` are the row moves of compactions whose index remap was deferred (the fragment
    reuse index: ``(old, new)`` address arrays sorted by old, oldest first; ``2**64 - 1`` for a
    dropped row): an index built before them names rows by their old addresses, which a
    reader translates."""

    def __init__(self, table: pa.Table, stable: bool, moves=()) -> None:
        self.stable = stable
        self.moves = list(moves)
        self.table = table
        self.ids = np.asarray(table.column("id").to_numpy(zero_copy_only=False), np.int64)
        addr = np.asarray(table.column("_rowaddr").to_numpy(zero_copy_only=False), np.uint64)
        self.fragments = (addr >> np.uint64(32)).astype(np.int64)
        keys = np.asarray(table.column("_rowid").to_numpy(zero_copy_only=False), np.uint64) \
            if stable else addr
        order = np.argsort(keys, kind="stable")
        self._keys = keys[order]
        self._ids = self.ids[order]
        self.vectors = None
        if "vec" in table.column_names:
            flat = table.column("vec").combine_chunks()
            self.vectors = np.asarray(flat.flatten().to_numpy(zero_copy_only=False),
                                      np.float32).reshape(len(flat), -1)

    def by_address(self) -> RowMap:
        """The same rows named by their addresses (an index that names rows by address
        whatever the table's flags: pylance 14.0.2's BTREE of index version 1)."""
        return self if not self.stable else RowMap(self.table, False, self.moves)

    def translate(self, rows: np.ndarray) -> np.ndarray:
        """Addresses after the deferred remaps (rows named by address only)."""
        if self.stable or not self.moves:
            return rows
        rows = rows.copy()
        for old, new in self.moves:
            if not len(old):
                continue
            at = np.searchsorted(old, rows)
            at[at == len(old)] = 0
            hit = old[at] == rows
            rows[hit] = new[at[hit]]
        return rows

    def ids_of(self, rows) -> set[int]:
        """The ``id`` of each live row among ``rows`` (others are dropped)."""
        rows = self.translate(np.asarray(rows, np.uint64))
        if not len(rows) or not len(self._keys):
            return set()
        at = np.searchsorted(self._keys, rows)
        at[at == len(self._keys)] = 0
        hit = self._keys[at] == rows
        return {int(i) for i in self._ids[at[hit]]}

    def ids_outside(self, covered: set[int]) -> set[int]:
        """The ``id`` of every live row of a fragment not in ``covered``."""
        mask = ~np.isin(self.fragments, np.asarray(sorted(covered), np.int64))
        return {int(i) for i in self.ids[mask]}


def _col(entries: pa.Table, *names):
    for n in names:
        if n in entries.column_names:
            return entries.column(n).combine_chunks()
    return None


def _need(entries: pa.Table, *names):
    col = _col(entries, *names)
    if col is None:
        raise CannotAnswer(f"decoded entries have no column {' or '.join(names)} "
                           f"(columns: {', '.join(entries.column_names)})")
    return col


def _rows_where(entries: pa.Table, q: Query, value_names=("value", "key", "label")) -> list:
    values = _need(entries, *value_names).to_pylist()
    rows = _need(entries, "row_id", "row_ids", "row_address").to_pylist()
    out = []
    for v, r in zip(values, rows, strict=True):
        if q.holds(v):
            out.extend(r if isinstance(r, list) else [r])
    return out


def candidates(content, q: Query, *, rowmap: RowMap, scan_ids: set[int]) -> tuple[set, bool]:
    """The rows (as ``id`` values) the decoded ``content`` names for ``q`` and whether the
    content answers exactly (otherwise they are candidates a reader rechecks)."""
    kind = content.kind
    e = content.entries
    if content.extra.get("row_addresses"):
        rowmap = rowmap.by_address()
    if kind in ("btree", "bitmap") and q.op in ("eq", "gt", "range", "in", "is_null"):
        return rowmap.ids_of(_rows_where(e, q)), True
    if kind == "label_list" and q.op in ("has_any", "has_all"):
        if q.op == "has_any":
            return rowmap.ids_of(_rows_where(e, q)), True
        sets = [rowmap.ids_of(_rows_where(e, Query(q.text, "eq", q.column, (a,))))
                for a in q.args]
        return set.intersection(*sets) if sets else set(), True
    if kind == "json" and q.op in ("json_eq", "json_gt"):
        return rowmap.ids_of(_rows_where(e, q)), True
    if kind == "ngram" and q.op == "contains":
        from reference_impl.index.ngram import trigrams

        grams = _need(e, "ngram").to_pylist()
        rows = _need(e, "row_id", "row_ids").to_pylist()
        posting: dict = {}
        for g, r in zip(grams, rows, strict=True):
            posting.setdefault(g, []).extend(r if isinstance(r, list) else [r])
        want, _exact = trigrams(q.args[0])
        if not want:
            raise CannotAnswer("the string holds no n-gram")
        found = None
        for g in want:
            hit = rowmap.ids_of(posting.get(g, []))
            found = hit if found is None else found & hit
        return found, False
    if kind == "fm" and q.op == "contains":
        # the documents the BWT spells: a substring search through the index finds exactly
        # the rows whose document holds it
        texts = _need(e, "text").to_pylist()
        rows = _need(e, "row_id").to_pylist()
        return rowmap.ids_of([r for t, r in zip(texts, rows, strict=True)
                              if t is not None and q.args[0] in t]), True
    if kind == "inverted" and q.op == "fts":
        postings = content.extra.get("postings")
        if postings is None:
            raise CannotAnswer(f"the kit does not decode the postings of this inverted index "
                               f"({content.version}) yet")
        from reference_impl.errors import UnsupportedIndex
        from reference_impl.index.inverted_tokens import model

        # the query term goes through the tokenizer the index records, as the reader's
        # does; its tokens' rows are the answer (a match query ORs its tokens)
        want = {q.args[0]}
        params = content.extra.get("params")
        if params is not None:
            try:
                tokenizer = model(params, content.extra.get("stop_list", "lucene"),
                                  content.extra.get("stemmer", "snowball2or3"))
            except UnsupportedIndex as exc:
                raise CannotAnswer(f"the index's tokenizer is not modelled: {exc}") from None
            pairs = tokenizer.stream(q.args[0])
            if not pairs or any(tokenizer.is_unsure(t) for t, _ in pairs):
                raise CannotAnswer("the query term holds no token the kit reproduces")
            want = {t for t, _ in pairs}
        tokens = _need(postings, "token").to_pylist()
        rows = _need(postings, "row_id").to_pylist()
        out = []
        for t, r in zip(tokens, rows, strict=True):
            if t in want:
                out.extend(r if isinstance(r, list) else [r])
        return rowmap.ids_of(out), True
    if kind == "rtree" and q.op == "is_null":
        full = content.extra.get("full_null_fragments") or []
        whole = {int(i) for i, f in zip(rowmap.ids, rowmap.fragments, strict=True) if f in full}
        return rowmap.ids_of(content.extra["nulls"]) | whole, True
    if kind == "rtree" and q.op == "intersects":
        # the leaves whose box meets the query's box: candidates a reader rechecks
        x0, y0, x1, y1 = q.args
        meet = (pc.less_equal(e.column("xmin"), x1).to_numpy(zero_copy_only=False)
                & pc.greater_equal(e.column("xmax"), x0).to_numpy(zero_copy_only=False)
                & pc.less_equal(e.column("ymin"), y1).to_numpy(zero_copy_only=False)
                & pc.greater_equal(e.column("ymax"), y0).to_numpy(zero_copy_only=False))
        rows = e.column("row_id").to_numpy()[meet]
        return rowmap.ids_of(rows), False
    if kind == "bloomfilter" and q.op not in ("eq", "in"):
        # a bloom filter answers equality only: a reader scans for anything else
        return {int(i) for i in rowmap.ids}, False
    if kind in ("zonemap", "bloomfilter"):
        return _zones(content, q, rowmap), False
    raise CannotAnswer(f"the kit does not answer {q.op} from a decoded {kind} index "
                       f"({content.version}) yet")


def _zones(content, q: Query, rowmap: RowMap) -> set:
    """Rows of the zones whose statistics (ZONEMAP min/max/null count) or filter (BLOOMFILTER,
    as decoded: ``may_contain``) admit the query's values."""
    e = content.entries
    frag = _need(e, "fragment_id").to_pylist()
    start = _need(e, "zone_start", "local_row_offset", "start").to_pylist()
    length = _need(e, "zone_length", "num_rows", "length").to_pylist()
    keep = []
    if content.kind == "zonemap":
        lo = _need(e, "min").to_pylist()
        hi = _need(e, "max").to_pylist()
        nulls = _need(e, "null_count").to_pylist()
        for i in range(len(frag)):
            if q.op == "is_null":
                keep.append(nulls[i] > 0)
            elif lo[i] is None or hi[i] is None:
                keep.append(False)
            elif q.op == "eq":
                keep.append(lo[i] <= q.args[0] <= hi[i])
            elif q.op == "gt":
                keep.append(hi[i] > q.args[0])
            elif q.op == "range":
                keep.append(hi[i] >= q.args[0] and lo[i] < q.args[1])
            elif q.op == "in":
                keep.append(any(lo[i] <= a <= hi[i] for a in q.args))
            else:
                raise CannotAnswer(f"{q.op} from a zone map")
    else:
        from reference_impl.index.bloomfilter import may_contain, value_hashes

        if q.op not in ("eq", "in"):
            raise CannotAnswer(f"{q.op} from a bloom filter")
        typ = pa.string() if isinstance(q.args[0], str) else pa.int64()
        hashed = value_hashes(pa.array(list(q.args), typ))
        if hashed is None:
            raise CannotAnswer(f"the kit does not hash {typ} values as a bloom filter does")
        hashes = hashed[0]
        data = _need(e, "bloom_filter_data").to_pylist()
        keep = [bool(may_contain(data[i], hashes).any()) for i in range(len(frag))]
    rows = []
    for i, k in enumerate(keep):
        if k:
            base = int(frag[i]) << 32
            rows.extend(range(base + int(start[i]), base + int(start[i]) + int(length[i])))
    return rowmap.by_address().ids_of(rows)  # a zone names rows by fragment and offset


def reconstruct(content) -> np.ndarray:
    """The vectors a coded index's rows stand for: PQ, each sub-vector's codeword (plus the
    row's partition centroid where the index encodes residuals: L2 and cosine); SQ, each
    code's bucket middle over the index's bounds; RQ, the code vector scaled by the row's
    factors, turned back and added to its centroid (:func:`reference_impl.index.vector.rq.
    reconstruct`)."""
    e = content.entries
    codes = _need(e, "code")
    m = codes.type.list_size
    codes = np.asarray(codes.flatten().to_numpy(zero_copy_only=False), np.int64).reshape(-1, m)
    pq, sq, rq = content.extra.get("pq"), content.extra.get("sq"), content.extra.get("rq")
    if rq is not None:
        from reference_impl.index.vector import rq as rq_mod

        if not rq.judges_factors or content.extra.get("centroids") is None or (
                rq.matrix() is None):
            raise CannotAnswer(f"a RaBitQ index of rotation {rq.rotation_type!r} over "
                               f"{rq.code_dim} dimensions and query estimator "
                               f"{rq.query_estimator!r}")

        part = _need(e, "partition").to_numpy(zero_copy_only=False).astype(np.int64)
        return rq_mod.reconstruct(rq, codes.astype(np.uint8), part,
                                  content.extra["centroids"], content.extra.get("metric", "l2"),
                                  content.extra.get("rq_factors") or {},
                                  content.extra.get("rq_ex")).astype(np.float32)
    if pq is not None:
        cb = np.asarray(pq.codebook, np.float32)  # (m, 2**nbits, D/m)
        mat = np.concatenate([cb[j][codes[:, j]] for j in range(m)], axis=1)
        if content.extra.get("metric", "l2") in ("l2", "cosine"):
            cent = content.extra.get("centroids")
            if cent is None:
                raise CannotAnswer("a PQ index without centroids")
            part = _need(e, "partition").to_numpy(zero_copy_only=False).astype(np.int64)
            mat = mat + np.asarray(cent, np.float32)[part]
        return mat
    if sq is not None:
        top = (1 << sq.num_bits) - 1
        return (sq.start + (codes + 0.5) / top * (sq.end - sq.start)).astype(np.float32)
    raise CannotAnswer(f"the decoded {content.kind} index ({content.version}) holds no vectors "
                       "and no quantizer to reconstruct them")


def nearest(content, q: Query, *, rowmap: RowMap, covered: set[int]) -> list[int]:
    """The k nearest rows by the decoded index's stored vectors (IVF_FLAT and the HNSW flat
    storage: exact), or by the vectors its codes reconstruct (PQ, SQ: approximate), or, for
    an IVF_RQ under l2 or cosine, among the ``RABIT_POOL * k`` rows of the smallest distance
    estimates by their vectors, merged with the data's vectors of the live rows outside the
    ``covered`` fragments."""
    e = content.entries
    rows = _need(e, "row_id").to_numpy(zero_copy_only=False)
    vec = _col(e, "vector")
    k, of = q.args
    if rowmap.vectors is None:
        raise CannotAnswer("the table has no vector column")
    where = np.nonzero(rowmap.ids == of)[0]
    if not len(where):
        raise CannotAnswer(f"the row of id {of} is not live")
    target = rowmap.vectors[where[0]]
    scored = []
    refine = _rabit_l2(content)
    if refine:
        d = _rabit_distances(content, target)
    else:
        if vec is None:
            mat = reconstruct(content)
        else:
            mat = np.asarray(vec.flatten().to_numpy(zero_copy_only=False),
                             np.float32).reshape(len(vec), -1)
        d = ((mat - target) ** 2).sum(axis=1)
    for j in np.argsort(d, kind="stable")[: (RABIT_POOL * k if refine else 4 * k + 64)]:
        got = rowmap.ids_of([rows[j]])
        if got:
            rid = next(iter(got))
            if refine:
                # RaBitQ's estimates pick the candidates; the rows' vectors rank them
                at = np.nonzero(rowmap.ids == rid)[0]
                if not len(at):
                    continue
                scored.append((float(((rowmap.vectors[at[0]] - target) ** 2).sum()), rid))
            else:
                scored.append((float(d[j]), rid))
    outside = ~np.isin(rowmap.fragments, np.asarray(sorted(covered), np.int64))
    for j in np.nonzero(outside)[0]:
        scored.append((float(((rowmap.vectors[j] - target) ** 2).sum()), int(rowmap.ids[j])))
    return _nearest_ids(scored, k)


#: an IVF_RQ's candidates per answer row: the rows of the smallest distance estimates, which
#: the rows' own vectors then rank (a row's own vector is estimated at 0, but with one bit a
#: few other rows' estimates fall below it)
RABIT_POOL = 8


def _rabit_l2(content) -> bool:
    """Whether ``content`` is an IVF_RQ whose distances the factors estimate (l2, cosine; a
    rotation that turns back)."""
    rq = content.extra.get("rq")
    return (rq is not None and rq.judges_factors and rq.matrix() is not None
            and content.extra.get("metric", "l2") in ("l2", "cosine")
            and content.extra.get("centroids") is not None)


def _rabit_distances(content, target) -> np.ndarray:
    """An IVF_RQ's distance estimates for ``target`` (what a reader ranks its rows by; a row's
    own vector at 0): :func:`reference_impl.index.vector.rq.estimated_distances`."""
    from reference_impl.index.vector import rq as rq_mod

    e = content.entries
    codes = _need(e, "code")
    codes = np.asarray(codes.flatten().to_numpy(zero_copy_only=False),
                       np.uint8).reshape(-1, codes.type.list_size)
    part = _need(e, "partition").to_numpy(zero_copy_only=False).astype(np.int64)
    t = np.asarray(target, np.float64)
    if content.extra.get("metric") == "cosine":
        t = t / max(float(np.linalg.norm(t)), 1e-30)
    return rq_mod.estimated_distances(content.extra["rq"], codes, part,
                                      content.extra["centroids"],
                                      content.extra.get("rq_factors") or {}, t,
                                      content.extra.get("rq_ex"))


def _nearest_ids(scored: list, k: int) -> list[int]:
    """The first ``k`` distinct ids of ``(distance, id)`` pairs, nearest first (ties by id)."""
    out: list[int] = []
    for _d, i in sorted(scored):
        if i not in out:
            out.append(i)
        if len(out) == k:
            break
    return out


def minhash_nearest(contents, q: Query, *, rowmap: RowMap, covered: set[int]) -> list[int]:
    """The k rows nearest the text of row ``q.args[1]`` by the decoded MINHASHLSH segments'
    stored signatures (one minus the fraction of equal values; ties by ``id``), merged with
    the live rows outside the ``covered`` fragments signed from their text, as a reader signs
    unindexed rows."""
    from reference_impl.index import minhash_lsh

    k, of = q.args
    if "text" not in rowmap.table.column_names:
        raise CannotAnswer("the table has no text column")
    texts = rowmap.table.column("text").combine_chunks()
    where = np.nonzero(rowmap.ids == of)[0]
    if not len(where) or texts[int(where[0])].as_py() is None:
        raise CannotAnswer(f"the row of id {of} is not live or has no text")
    params = contents[0][1].extra["params"]
    state, sig = minhash_lsh.text_signatures(pa.array([texts[int(where[0])].as_py()]), params)
    if state[0] != 1:
        raise CannotAnswer("the query text has no signature the kit reproduces")
    target = sig[0]
    scored = []
    for _i, content in contents:
        mat = minhash_lsh.stored_signatures(content)
        rows = content.entries.column("row_id").to_numpy()
        dist = 1.0 - (mat == target).mean(axis=1)
        for j in np.argsort(dist, kind="stable")[: 4 * k + 64]:
            got = rowmap.ids_of([rows[j]])
            if got:
                scored.append((float(dist[j]), next(iter(got))))
    outside = np.nonzero(~np.isin(rowmap.fragments, np.asarray(sorted(covered), np.int64)))[0]
    if len(outside):
        state, sigs = minhash_lsh.text_signatures(texts.take(pa.array(outside)), params)
        for n, j in enumerate(np.flatnonzero(state == 1)):
            d = 1.0 - float((sigs[n] == target).mean())
            scored.append((d, int(rowmap.ids[outside[j]])))
    return _nearest_ids(scored, k)
