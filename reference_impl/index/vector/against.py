"""A vector index held against the rows it covers.

What each IVF index says of a row, and what the data must then give (every release seen
from pylance 0.8.14's legacy layout to 14.0.2's Lance-file layout; see the modules):

* the row is in the index once, if it is a live row of a covered fragment, never if it is a
  row outside them (rows a deletion removed, and rows of fragments the version no longer
  holds, may remain);
* its partition is the one whose centroid is nearest to the row's vector. The vector is first
  prepared by the metric: ``cosine`` scales it to unit length and then uses L2 to the
  (not unit) centroids (0.2x-0.36, 13.0.0, 14.0.2) or the cosine to them (1.0.4 to 11.0.0;
  a row is misplaced only under both); ``l2`` uses it as is with L2; ``dot`` uses it as is
  with the negative inner product (pylance 14.0.2 trains unit-length centroids for dot);
* FLAT: the stored vector is the prepared vector;
* PQ: the code is the nearest codewords of the prepared vector minus its partition's centroid
  (``l2``, ``cosine``: the residual) or of the prepared vector itself (``dot``, pylance 0.20.0
  to 14.0.2; 0.10.18's legacy IVF_PQ encodes the residual of the rows it builds with, and
  gives the rows optimize_indices adds the codeword of largest inner product with the vector,
  so a dot code is wrong only when it is wrong under all three readings);
* SQ: the code is the quantisation of the prepared vector with the index's bounds;
* HNSW: each partition's graph is consistent over the partition's rows;
* RQ: the sign code is the signs of the rotated residual (the prepared vector minus its
  partition's centroid), the extended code is the residual's magnitudes under one rescaling,
  and the factors are the residual's (:mod:`.rq`).

Ties within the float tolerance are no finding; a partition, code or value is wrong only when
another is strictly better by more than the tolerance.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pyarrow as pa

from reference_impl.errors import UnsupportedIndex
from reference_impl.index.vector import flat as flat_mod
from reference_impl.index.vector import hnsw as hnsw_mod
from reference_impl.index.vector import ivf as ivf_mod

PARTITION_SIZES = "INDEX-140"
ROW_OUTSIDE = "INDEX-103"  # the shared rules of reference_impl.index.against
ROW_MISSING = "INDEX-101"
ROW_TWICE = "INDEX-141"
FLAT_DIFFERS = "INDEX-142"
PQ_CODE_WRONG = "INDEX-143"
SQ_CODE_WRONG = "INDEX-144"
WRONG_PARTITION = "INDEX-145"
HNSW_GRAPH = "INDEX-146"
HNSW_DISTANCES = "INDEX-147"
RQ_CODE_WRONG = "INDEX-148"
RQ_FACTOR_WRONG = "INDEX-149"
RQ_WIDE_CODES = "INDEX-150"

#: itemised disagreements of one rule for one index; the rest are counted in one more
MAX_PER_RULE = 10

#: metric -> (scale to unit length first, metric of the assignment, residual PQ)
PREPARATION = {"l2": (False, "l2", True), "cosine": (True, "l2", True),
               "dot": (False, "dot", False)}


def row_text(r: int, stable: bool) -> str:
    if stable:
        return f"id {r}"
    return f"{r >> 32}:{r & 0xFFFFFFFF} (address {r})"


def vectors_of(values) -> tuple[np.ndarray, np.ndarray]:
    """(N, D) float64 vectors of a fixed-size-list column and a mask of non-null rows."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    n = len(values)
    if not pa.types.is_fixed_size_list(values.type):
        raise TypeError(f"vector column of type {values.type} is not a fixed-size list")
    width = values.type.list_size
    valid = ~np.asarray(values.is_null().to_numpy(zero_copy_only=False), dtype=bool)
    flat = values.flatten() if values.offset == 0 and values.null_count == 0 else None
    if flat is None:
        # nulls: take the child values slot by slot (null slots read as zeros)
        child = values.values.slice(values.offset * width, n * width)
        flat = child
    x = np.asarray(flat.to_numpy(zero_copy_only=False), dtype=np.float64).reshape(n, width)
    return x, valid


def check(content, index, data) -> Iterator:
    """Yield a :class:`reference_impl.index.Disagreement` for each place the vector index
    ``content`` (of metadata ``index``) says other than ``data`` (an ``IndexedData``)."""
    from reference_impl.index import Disagreement

    name = getattr(index, "name", "?")
    stable = bool(data.stable_row_ids)
    ex = content.extra
    rows = content.entries.column("row_id").to_numpy().astype(np.uint64)
    if getattr(data, "moves", None):
        # a compaction whose index remap was deferred: the rows are named as they were
        # before it, and readers translate them through the fragment reuse index
        rows = data.translate(rows)
    part = content.entries.column("partition").to_numpy().astype(np.int64)
    out: dict[str, list] = {}

    def add(rule, message, row=None, **where):
        out.setdefault(rule, []).append(Disagreement(rule, f"index {name!r}: {message}",
                                                     row_id=row, where=where))

    # partition sizes
    declared = np.asarray(ex.get("declared_lengths", ex["lengths"]), dtype=np.int64)
    if int(declared.sum()) != len(rows):
        add(PARTITION_SIZES, f"its partition sizes sum to {int(declared.sum())}, but it "
            f"holds {len(rows)} rows")
    centroids = ex.get("centroids")
    if centroids is not None and len(declared) != centroids.shape[0]:
        add(PARTITION_SIZES, f"it has {centroids.shape[0]} centroids and {len(declared)} "
            "partitions")

    # coverage: live rows once, nothing outside
    kind = data.classify(rows)
    for i in np.nonzero(kind == data.OUTSIDE)[0][:MAX_PER_RULE + 1]:
        r = int(rows[i])
        where = "" if stable else f" of fragment {r >> 32}"
        add(ROW_OUTSIDE, f"partition {int(part[i])} holds row {row_text(r, stable)}{where}, "
            f"which is not a row of the fragments its fragment_bitmap names "
            f"({_ids_text(data.fragment_ids)})", row=r, partition=int(part[i]))
    live_at = np.nonzero(kind == data.LIVE)[0]
    uniq, first, counts = np.unique(rows[live_at], return_index=True, return_counts=True)
    for r, c in list(zip(uniq[counts > 1].tolist(), counts[counts > 1].tolist(), strict=False))[:MAX_PER_RULE + 1]:
        add(ROW_TWICE, f"it holds row {row_text(int(r), stable)} {c} times", row=int(r))
    try:
        x_all, valid = vectors_of(data.values)
    except TypeError as exc:
        raise UnsupportedIndex(f"vector index {name!r} over {data.field_name!r}: {exc}",
                               kind="vector", version=content.version) from None
    present = np.zeros(len(data.row_ids), dtype=bool)
    present[data.positions(uniq)] = True
    missing = np.nonzero(~present & valid)[0]
    for p in missing[:MAX_PER_RULE + 1]:
        r = int(data.row_ids[p])
        add(ROW_MISSING, f"it does not hold row {row_text(r, stable)}, a live row of a "
            f"fragment it covers with a vector in {data.field_name!r}", row=r)

    # content of each live, non-null row the index holds
    pos = data.positions(rows[live_at])
    keep = valid[pos]
    at, pos = live_at[keep], pos[keep]
    metric = ex.get("metric", "l2")
    unit, assign_metric, residual = PREPARATION.get(metric, (False, metric, True))
    x = x_all[pos]
    if unit:
        x = ivf_mod.normalize(x)
    p = part[at]
    if centroids is not None and len(at) and metric in PREPARATION:
        ncent = centroids.shape[0]
        ok = (p >= 0) & (p < ncent)
        for i in np.nonzero(~ok)[0][:MAX_PER_RULE + 1]:
            add(WRONG_PARTITION, f"row {row_text(int(rows[at[i]]), stable)} is in partition "
                f"{int(p[i])} of {ncent}", row=int(rows[at[i]]), partition=int(p[i]))
        idx = np.nonzero(ok)[0]
        bad = ivf_mod.misassigned(x[idx], p[idx], centroids, assign_metric)
        if metric == "cosine" and len(bad):
            # cosine: pylance 0.2x-0.36 and 13.0.0-14.0.2 assign the unit vector by L2 to the
            # centroids; 1.0.4-11.0.0 by cosine to them (the inner product with the unit
            # centroids). A row is misplaced only when it is under both rules
            unit_c = ivf_mod.normalize(np.asarray(centroids, dtype=np.float64))
            again = ivf_mod.misassigned(x[idx[bad]], p[idx[bad]], unit_c, "dot")
            bad = bad[again]
        if len(bad):
            d = ivf_mod.distances(x[idx[bad[:MAX_PER_RULE + 1]]], centroids, assign_metric)
            for k, b in enumerate(bad[:MAX_PER_RULE + 1]):
                i = idx[b]
                r = int(rows[at[i]])
                add(WRONG_PARTITION, f"row {row_text(r, stable)} is in partition {int(p[i])} "
                    f"(distance {d[k, p[i]]:.6g} to its centroid), but centroid "
                    f"{int(d[k].argmin())} is nearer ({d[k].min():.6g}) by the {metric} rule",
                    row=r, partition=int(p[i]))
        if "vector" in content.entries.column_names:
            stored, _ = vectors_of(content.entries.column("vector").combine_chunks())
            bad = flat_mod.wrong_vectors(x_all[pos], stored[at], metric)
            for i in bad[:MAX_PER_RULE + 1]:
                r = int(rows[at[i]])
                add(FLAT_DIFFERS, f"partition {int(p[i])} stores for row {row_text(r, stable)} "
                    f"a vector other than the row's (first values {stored[at[i]][:3].tolist()} "
                    f"against {x_all[pos[i]][:3].tolist()})", row=r, partition=int(p[i]))
        if "pq" in ex or "sq" in ex or "rq" in ex:
            codes = (content.entries.column("code").combine_chunks().flatten()
                     .to_numpy(zero_copy_only=False).reshape(len(rows), -1)[at])
        if "pq" in ex and len(at):
            q = ex["pq"]
            resid = x - centroids[np.clip(p, 0, len(centroids) - 1)]
            target = resid if residual else x
            bad = q.wrong_codes(target, codes)
            if metric == "dot" and len(bad):
                # dot-product indexes: 0.20.0 and later encode the vector itself; pylance
                # 0.10.18 encodes the residual when it builds the index, and gives the rows
                # optimize_indices adds the codeword of largest inner product with the vector,
                # in one index. A code is wrong only when it is wrong under every reading
                bad = np.intersect1d(bad, q.wrong_codes(resid, codes))
                if len(bad):
                    bad = bad[q.wrong_codes_by_inner_product(x[bad], codes[bad])]
            for i in bad[:MAX_PER_RULE + 1]:
                r = int(rows[at[i]])
                want = q.encode(target[i:i + 1])[0].tolist()
                add(PQ_CODE_WRONG, f"partition {int(p[i])} holds code {codes[i].tolist()} for "
                    f"row {row_text(r, stable)}, but its codebook encodes the row's "
                    f"{'residual' if residual else 'vector'} as {want}", row=r,
                    partition=int(p[i]))
        if "sq" in ex and len(at):
            q = ex["sq"]
            bad = q.wrong_codes(x, codes)
            for i in bad[:MAX_PER_RULE + 1]:
                r = int(rows[at[i]])
                want = q.quantize(x[i:i + 1])[0]
                j = int(np.abs(want - codes[i]).argmax())
                add(SQ_CODE_WRONG, f"partition {int(p[i])} holds scaled value {int(codes[i][j])} "
                    f"at dimension {j} of row {row_text(r, stable)}, but the bounds "
                    f"[{q.start:.6g}, {q.end:.6g}] give {int(want[j])}", row=r,
                    partition=int(p[i]))
        q = ex.get("rq")
        if q is not None and q.query_estimator == "residual_query" and q.num_bits > 1:
            add(RQ_WIDE_CODES, f"it is an IVF_RQ of {q.num_bits} bits in the layout of pylance "
                "1.0.4 to 4.0.2 and DuckDB's Lance extension 1.5.5 (a vector of "
                f"{centroids.shape[1]} dimensions rotated in {q.code_dim}, one sign bit each, no "
                "__blocked_ex_codes): pylance 9.0.1, 11.0.0 and 14.0.2 refuse to search it "
                "('requires __blocked_ex_codes'); rebuild it, or build it with one bit")
        if q is not None and q.judges_codes and len(at):
            for rule, message, i in _rabit_disagreements(content, q, x, p, at, codes,
                                                          centroids, metric,
                                                          _float_type(data.values)):
                r = int(rows[at[i]])
                add(rule, f"partition {int(p[i])} holds for row {row_text(r, stable)} "
                    f"{message}", row=r, partition=int(p[i]))
    graphs = ex.get("hnsw") or []
    for pi, graph in enumerate(graphs):
        size = int(declared[pi]) if pi < len(declared) else 0
        for problem in hnsw_mod.problems(graph, size)[:MAX_PER_RULE]:
            add(HNSW_GRAPH, f"the HNSW graph of partition {pi}: {problem}", partition=pi)
    if graphs and getattr(data, "moves", None):
        # a compaction whose index remap was deferred dropped rows (deleted before it) that a
        # partition's storage still holds: a reader translating the storage through the
        # fragment reuse index keeps fewer vectors than the graph has nodes, and its walk
        # scores nodes that have no vector, or another row's
        for pi, (dropped, size) in enumerate(dropped_under_graphs(rows, part, data.DROPPED,
                                                                  len(graphs))):
            if dropped:
                add(HNSW_GRAPH, f"the HNSW graph of partition {pi} has {size} nodes, but "
                    f"{dropped} of the partition's rows were dropped by a compaction whose "
                    "index remap was deferred (the fragment reuse index maps them to no "
                    f"row): read through the remap, the storage keeps {size - dropped} "
                    "vectors for a graph of "
                    f"{size} nodes, so a search scores nodes without their vector (pylance "
                    "4.0.2 aborts a nearest search through such an index, 11.0.0 answers no "
                    "row, 14.0.2 refuses it)",
                    partition=pi)
    coded, distance = _graph_vectors(content, metric)
    if graphs and coded is not None and int(declared.sum()) == len(rows):
        # each edge's recorded distance is the distance of the two nodes' vectors as the
        # storage gives them: the stored vectors (IVF_HNSW_FLAT), the decoded scaled values
        # (IVF_HNSW_SQ) or the decoded codewords (IVF_HNSW_PQ)
        starts = np.concatenate([[0], np.cumsum(declared)[:-1]]).astype(np.int64)
        # the rows' own vectors, prepared by the metric (NaN for rows the data does not hold
        # live): the vectors pylance 0.20.0 builds its IVF_HNSW_SQ/PQ graphs over
        raw = np.full((len(rows), coded.shape[1]), np.nan)
        if len(at) and x.shape[1] == coded.shape[1]:
            raw[at] = x
        # pylance 0.38.3 and 4.0.2 record an IVF_HNSW_SQ graph under dot over the scaled
        # values themselves, (1 - codes . codes') / 1024
        codes_read = None
        if "sq" in ex and metric == "dot" and "code" in content.entries.column_names:
            codes_read = (content.entries.column("code").combine_chunks().flatten()
                          .to_numpy(zero_copy_only=False).reshape(len(rows), -1)
                          .astype(np.float64))
        for pi, graph in enumerate(graphs[:len(declared)]):
            a, size = int(starts[pi]), int(declared[pi])
            others = [(raw[a:a + size], distance)]
            if codes_read is not None:
                others.append((codes_read[a:a + size], "dot/1024"))
            for node, nb, rec, real in hnsw_mod.wrong_distances(
                    graph, coded[a:a + size], distance, others)[:MAX_PER_RULE + 1]:
                r, o = int(rows[a + node]), int(rows[a + nb])
                add(HNSW_DISTANCES, f"the HNSW graph of partition {pi} records distance "
                    f"{rec:.6g} from row {row_text(r, stable)} to its neighbour row "
                    f"{row_text(o, stable)}, but their vectors lie {real:.6g} apart: "
                    "a search walks this graph towards other rows than the nearest",
                    row=r, partition=pi)
    for rule, items in out.items():
        yield from items[:MAX_PER_RULE]
        if len(items) > MAX_PER_RULE:
            yield Disagreement(rule, f"index {name!r}: more disagreements of {rule} "
                               f"(only the first {MAX_PER_RULE} are listed)")


def _rabit_disagreements(content, q, x: np.ndarray, p: np.ndarray, at: np.ndarray,
                         codes: np.ndarray, centroids: np.ndarray, metric: str,
                         dtype=np.float64) -> Iterator[tuple[str, str, int]]:
    """``(rule, message, i)`` for the RaBitQ codes and factors of the live rows ``at`` (their
    prepared vectors ``x``, partitions ``p``, sign codes ``codes``) that are not their rows'
    (see :mod:`.rq`).

    Under cosine, pylance 11.0.0's optimize_indices files a row by the cosine to the
    centroids but encodes its residual from the centroid nearest by L2 (seen on 8 of 1,050
    rows; 11.0.0 still finds each of them first or second for its own vector): a row's codes
    and factors are wrong only when they are neither its partition's residual's nor that
    one's."""
    ex = content.extra
    inside = np.nonzero((p >= 0) & (p < centroids.shape[0]))[0]
    if not len(inside) or not 0 < centroids.shape[1] <= q.code_dim:
        return
    cent = np.asarray(centroids, dtype=np.float64)
    codes = codes[inside]
    stored = {k: np.asarray(v)[at[inside]] for k, v in (ex.get("rq_factors") or {}).items()}
    ex_values = ex["rq_ex"][at[inside]] if "rq_ex" in ex else None
    found = _rabit_found(q, x[inside], p[inside], cent, codes, ex_values, stored, metric,
                         dtype)
    if found and metric == "cosine":
        suspects = np.asarray(sorted(found))
        nearest = ivf_mod.distances(x[inside[suspects]], cent, "l2").argmin(1)
        other = nearest != p[inside[suspects]]
        again = _rabit_found(q, x[inside[suspects[other]]], nearest[other], cent,
                             codes[suspects[other]],
                             None if ex_values is None else ex_values[suspects[other]],
                             {k: v[suspects[other]] for k, v in stored.items()}, metric,
                             dtype)
        for j, k in enumerate(suspects[other].tolist()):
            if j not in again:
                del found[k]
    for k in sorted(found):
        for rule, message in found[k]:
            yield rule, message, int(inside[k])


def _float_type(values):
    """The numpy float type of a vector column's values (float64 where not a float)."""
    t = values.type
    while hasattr(t, "value_type"):
        t = t.value_type
    return {pa.float16(): np.float16, pa.float32(): np.float32}.get(t, np.float64)


def _rabit_found(q, x: np.ndarray, p: np.ndarray, cent: np.ndarray, codes: np.ndarray,
                 ex_values, stored: dict, metric: str, dtype=np.float64
                 ) -> dict[int, list[tuple[str, str]]]:
    """Row -> ``(rule, message)`` of the RaBitQ codes and factors of rows with prepared
    vectors ``x`` that are not those of their residuals from centroids ``p``."""
    from reference_impl.index.vector import rq as rq_mod

    found: dict[int, list[tuple[str, str]]] = {}
    # the residual in the vectors' own float type, as the writer takes it (float16 vectors:
    # float16 arithmetic, whose rounding moves the factors by more than float32's)
    residual = (x.astype(dtype) - cent[p].astype(dtype)).astype(np.float64)
    rotated = q.rotate(residual)
    positive = rq_mod.stored_signs(codes, q.code_dim)
    bad, first = rq_mod.wrong_sign_bits(rotated, codes)
    for k, d in zip(bad.tolist(), first.tolist(), strict=True):
        found.setdefault(k, []).append((RQ_CODE_WRONG, (
            f"a RaBitQ sign code whose bit {d} is {int(np.signbit(rotated[k, d]))}, but "
            f"dimension {d} of the row's rotated residual is {rotated[k, d]:.6g}")))
    magnitudes = None
    if ex_values is not None:
        magnitudes = rq_mod.ex_magnitudes(rotated, ex_values, q.ex_bits, positive)
        rows, da, db = rq_mod.wrong_ex_codes(rotated, magnitudes, q.ex_bits)
        low, high = rq_mod.rescaling_bounds(rotated[rows], magnitudes[rows], q.ex_bits)
        for j, (k, a, b) in enumerate(zip(rows.tolist(), da.tolist(), db.tolist(),
                                          strict=True)):
            found.setdefault(k, []).append((RQ_CODE_WRONG, (
                f"a {q.ex_bits}-bit extended RaBitQ code that no one rescaling of the row's "
                f"rotated residual gives: its magnitude {int(magnitudes[k, a])} at dimension "
                f"{a} needs a rescaling of at least {low[j, a]:.6g}, its magnitude "
                f"{int(magnitudes[k, b])} at dimension {b} one below {high[j, b]:.6g}")))
    if q.judges_factors and stored:
        # (the factors of a row whose code is wrong are not judged again: they are given
        # the stored code)
        for k, name, have, want in rq_mod.wrong_factors(
                stored, rotated, q.rotate(cent)[p], (residual * residual).sum(1), metric,
                magnitudes, q.query_estimator, positive):
            if k in found:
                continue
            found.setdefault(k, []).append((RQ_FACTOR_WRONG, (
                f"{name} {have:.6g}, but the row's residual gives {want:.6g} under {metric}")))
    return found


#: (storage, metric) -> the distance an IVF_HNSW graph records between two of its nodes'
#: vectors as the storage gives them: ``l2`` (squared Euclidean) or ``dot`` (one minus the
#: inner product). Measured on pylance 14.0.2 (relative error below 1e-4) and checked on
#: 0.38.3's own indexes. IVF_HNSW_SQ under dot: 11.0.0 and 14.0.2 record the decoded values'
#: distance; 0.38.3 and 4.0.2 ``(1 - codes . codes') / 1024`` of the scaled values
#: themselves (e.g. -283; error below 3e-5); 0.20.0 the rows' own vectors' (see
#: :func:`.hnsw.wrong_distances`).
GRAPH_DISTANCES = {("flat", "l2"): "l2", ("flat", "cosine"): "dot", ("flat", "dot"): "dot",
                   ("sq", "l2"): "l2", ("sq", "cosine"): "l2", ("sq", "dot"): "dot",
                   ("pq", "l2"): "l2", ("pq", "cosine"): "l2", ("pq", "dot"): "dot"}


def _graph_vectors(content, metric: str) -> tuple[np.ndarray | None, str | None]:
    """``(vectors, distance)``: the vectors an IVF_HNSW graph's recorded distances are of, one
    per storage row (the stored vectors; the SQ values decoded; the PQ codewords
    concatenated), and the distance (:data:`GRAPH_DISTANCES`); ``(None, None)`` where that
    is not known."""
    ex = content.extra
    names = content.entries.column_names
    storage = "flat" if "vector" in names else "sq" if "sq" in ex else "pq" if "pq" in ex \
        else None
    distance = GRAPH_DISTANCES.get((storage, metric))
    if distance is None:
        return None, None
    if storage == "flat":
        return vectors_of(content.entries.column("vector").combine_chunks())[0], distance
    if "code" not in names:
        return None, None
    n = content.entries.num_rows
    codes = (content.entries.column("code").combine_chunks().flatten()
             .to_numpy(zero_copy_only=False).reshape(n, -1))
    return (ex["sq"] if storage == "sq" else ex["pq"]).decode(codes), distance


def dropped_under_graphs(rows: np.ndarray, part: np.ndarray, dropped_mark, partitions: int
                         ) -> list[tuple[int, int]]:
    """Per partition ``(rows a deferred remap dropped, rows the storage holds)``: ``rows``
    are the storage's rows translated through the moves (``dropped_mark`` where dropped),
    ``part`` each row's partition. Rows of no partition (``part >= partitions``) are left to
    INDEX-140."""
    part = np.asarray(part, np.int64)
    inside = (part >= 0) & (part < partitions)
    sizes = np.bincount(part[inside], minlength=partitions)
    gone = np.bincount(part[inside & (np.asarray(rows, np.uint64) == dropped_mark)],
                       minlength=partitions)
    return [(int(g), int(n)) for g, n in zip(gone.tolist(), sizes.tolist(), strict=True)]


def _ids_text(ids) -> str:
    ids = [int(i) for i in np.asarray(ids).tolist()]
    if not ids:
        return "none"
    text = ", ".join(str(i) for i in ids[:8])
    return "{" + text + (f", ... {len(ids)} in all" if len(ids) > 8 else "") + "}"
