"""Write small tables carrying one index each with one release, and ask it queries.

This program runs inside a release's own virtualenv (``conformance/releases/venvs.py``): it
imports only that release's ``lance``, pyarrow and numpy, never the kit, so the index census
can ask any release from 0.10 on.

Every table holds the same kind of rows (``id`` int64, ``num`` int64 with nulls, ``cat`` a
low-cardinality string with nulls, ``tags`` a list of strings, ``text`` a few words, ``vec``
a 16-dimensional float32 vector; the JSON kind adds ``meta``, an ``arrow.json`` column, the
RTREE kind ``geo``, a WKT point on a grid of 50 columns, null in every 29th row) in
four fragments of 500 rows, and one index of one :data:`KINDS` entry. Each *scenario* then
applies the operations users apply after building an index (:data:`SCENARIOS`): appends,
deletions, updates, compaction (with and without ``defer_index_remap``, with and without
stable row ids) and ``optimize_indices``. The ``swap`` scenario builds the issue's wrong
index on purpose: two tables of the same 2,000 rows, the second in reverse order, the same
index on both (``to-swap``); the kit then copies the second's index files over the first's
(same names, the manifest's recorded sizes kept true) and runs ``ask``.

For every (kind, scenario) it writes ``OUT/<kind>/<scenario>/table/`` and ``case.json``:
the release, kind, column and parameters, the operations applied, the table's storage
version and flags, the index metadata the release lists, ``expected`` (``right`` or
``wrong``: only ``swap`` is built wrong), and each query's answers as ``id`` values (sorted
for filters, in distance order for nearest-neighbour queries):

* ``indexed``: the release's answer with its index (``used_index``: whether its plan names
  the index, when the release can say);
* ``scan``: the release's answer without the index (``use_scalar_index=False`` or
  ``use_index=False``), or why it cannot give one;
* ``data``: this program's own answer from the table's rows (read in full by the release),
  for the queries a release answers only through an index (full-text search).

A kind or operation the release lacks is recorded with the error it raised (``skipped``).

Usage (with the release's Python)::

    python index_program.py kinds                 # the index kinds this program knows
    python index_program.py build OUT KIND [SCENARIO,...]
    python index_program.py ask CASE_DIR          # (again) describe and ask a built case
    python index_program.py reread CASE_DIR OUT   # another release asks a built case's
                                                  # table; its answers to OUT (a JSON file)

``reread`` lets a second release (the newest) answer the same queries on a table another
release built, through the same index files and without the index, so the census can tell a
release that misreads a right index from an index that answers other than its data. It only
reads the table.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import traceback

import numpy as np
import pyarrow as pa

lance = None  # the release's module, imported by main() (so the kit may read the catalogue)

N = 2000           # rows of every table
APPEND = 200       # rows an append adds
PER_FILE = 500     # rows per fragment
DIM = 16           # vector dimension
PARTITIONS = 4     # IVF partitions
SUB_VECTORS = 4    # PQ sub-vectors
WORDS = ("alpha", "bravo", "delta", "echo", "golf", "hotel", "india", "kilo", "lima",
         "oscar", "papa", "romeo", "tango")

_VECTORS = np.random.default_rng(35).standard_normal((N + APPEND + 64, DIM)).astype(np.float32)


# -- the rows ---------------------------------------------------------------------------------


def row_values(i):
    """The values of the row whose ``id`` is ``i`` (every table agrees on them)."""
    return {
        "id": i,
        "num": None if i % 13 == 12 else (i * 7919) % 1009,
        "cat": None if i % 11 == 10 else f"c{i % 7}",
        "tags": None if i % 17 == 16 else [] if i % 19 == 18 else [f"t{i % 5}", f"t{5 + i % 3}"],
        "text": None if i % 23 == 22 else f"{WORDS[i % 13]} {WORDS[(i * 7) % 11]} lance{i % 10}",
        "meta": json.dumps({"x": i % 5, "s": f"v{i % 3}"}),
        "geo": None if i % 29 == 28 else f"POINT ({i % 50} {i // 50})",
        "vec": _VECTORS[i],
    }


def table_of(ids, kind=None):
    """The rows of ``ids``; ``kind`` "JSON" adds ``meta``, "RTREE" adds ``geo``."""
    rows = [row_values(i) for i in ids]
    cols = {
        "id": pa.array([r["id"] for r in rows], pa.int64()),
        "num": pa.array([r["num"] for r in rows], pa.int64()),
        "cat": pa.array([r["cat"] for r in rows], pa.string()),
        "tags": pa.array([r["tags"] for r in rows], pa.list_(pa.string())),
        "text": pa.array([r["text"] for r in rows], pa.string()),
        "vec": pa.FixedSizeListArray.from_arrays(
            pa.array(np.stack([r["vec"] for r in rows]).reshape(-1), pa.float32()), DIM),
    }
    if kind == "RTREE":
        cols["geo"] = pa.array([r["geo"] for r in rows], pa.string())
    if kind == "JSON":
        if not hasattr(pa, "json_"):
            raise Unsupported(f"pyarrow {pa.__version__} has no JSON type")
        cols["meta"] = pa.array([r["meta"] for r in rows], pa.json_())
    return pa.table(cols)


class Unsupported(Exception):
    """The release (or its pyarrow) cannot build this case."""


# -- the queries --------------------------------------------------------------------------------


def _in(col, values):
    return lambda r: r[col] is not None and r[col] in values


SCALAR_QUERIES = {
    "id": [
        ("id = 5", lambda r: r["id"] == 5),
        ("id >= 100 AND id < 120", lambda r: 100 <= r["id"] < 120),
        ("id IN (1, 7, 1999, 2100)", _in("id", (1, 7, 1999, 2100))),
        ("id > 1990", lambda r: r["id"] > 1990),
    ],
    "num": [
        ("num = 5", lambda r: r["num"] == 5),
        ("num >= 100 AND num < 120", lambda r: r["num"] is not None and 100 <= r["num"] < 120),
        ("num IN (1, 7, 500)", _in("num", (1, 7, 500))),
        ("num IS NULL", lambda r: r["num"] is None),
    ],
    "cat": [
        ("cat = 'c3'", lambda r: r["cat"] == "c3"),
        ("cat IN ('c1', 'c5')", _in("cat", ("c1", "c5"))),
        ("cat IS NULL", lambda r: r["cat"] is None),
        ("cat = 'c9'", lambda r: r["cat"] == "c9"),
    ],
    "tags": [
        ("array_has_any(tags, ['t1'])", lambda r: bool(r["tags"]) and "t1" in r["tags"]),
        ("array_has_all(tags, ['t2', 't6'])",
         lambda r: bool(r["tags"]) and "t2" in r["tags"] and "t6" in r["tags"]),
        ("array_has_any(tags, ['t3', 't7'])",
         lambda r: bool(r["tags"]) and ("t3" in r["tags"] or "t7" in r["tags"])),
    ],
    "text": [
        ("contains(text, 'ance3')", lambda r: r["text"] is not None and "ance3" in r["text"]),
        ("contains(text, 'ravo')", lambda r: r["text"] is not None and "ravo" in r["text"]),
        ("contains(text, 'golf lance')",
         lambda r: r["text"] is not None and "golf lance" in r["text"]),
    ],
    "meta": [
        ("json_get_int(meta, 'x') = 3", lambda r: json.loads(r["meta"])["x"] == 3),
        ("json_get_int(meta, 'x') > 2", lambda r: json.loads(r["meta"])["x"] > 2),
    ],
    "geo": [
        ("st_intersects(geo, st_geomfromtext('POLYGON ((9.5 3.5, 12.5 3.5, 12.5 6.5, 9.5 6.5, "
         "9.5 3.5))'))", lambda r: _in_box(r["geo"], 9.5, 3.5, 12.5, 6.5)),
        ("st_intersects(geo, st_geomfromtext('POLYGON ((-1 30.5, 3.5 30.5, 3.5 45, -1 45, "
         "-1 30.5))'))", lambda r: _in_box(r["geo"], -1, 30.5, 3.5, 45)),
        ("geo IS NULL", lambda r: r["geo"] is None),
    ],
}


def _in_box(wkt, x0, y0, x1, y1):
    """Whether the WKT point ``wkt`` lies in the box (boundary included)."""
    if wkt is None:
        return False
    x, y = (float(v) for v in wkt[wkt.index("(") + 1:wkt.index(")")].split())
    return x0 <= x <= x1 and y0 <= y <= y1

FTS_QUERIES = ("bravo", "lance3", "romeo")
KNN_QUERIES = ((5, 3), (1000, 3), (17, 10))  # (row id whose vector is asked, k)
#: (row id whose text is asked, k) of the MinHash near-duplicate searches: a text repeats
#: every 1,430 rows, so at most two rows are at distance 0 from it
MINHASH_QUERIES = ((5, 3), (1000, 3), (17, 5))


# -- the kinds ------------------------------------------------------------------------------------
#
# name -> (family, column, index type, parameters). A scalar kind is built by
# create_scalar_index(column, index_type, **parameters), a vector kind by
# create_index(column, index_type, **parameters).

KINDS = {
    "BTREE": ("scalar", "id", "BTREE", {}),
    "BTREE-nulls": ("scalar", "num", "BTREE", {}),
    "BITMAP": ("scalar", "cat", "BITMAP", {}),
    "LABEL_LIST": ("scalar", "tags", "LABEL_LIST", {}),
    "NGRAM": ("scalar", "text", "NGRAM", {}),
    "FM": ("scalar", "text", "FM", {}),
    "ZONEMAP": ("scalar", "num", "ZONEMAP", {}),
    "BLOOMFILTER": ("scalar", "id", "BLOOMFILTER", {}),
    "INVERTED": ("fts", "text", "INVERTED", {}),
    "INVERTED-positions": ("fts", "text", "INVERTED", {"with_position": True}),
    "JSON": ("scalar", "meta", "JSON", {"target_index_type": "btree", "path": "x"}),
    "RTREE": ("scalar", "geo", "RTREE", {}),
    "MINHASHLSH": ("minhash", "text", "MINHASHLSH", {}),
    "IVF_FLAT": ("vector", "vec", "IVF_FLAT", {"num_partitions": PARTITIONS}),
    "IVF_PQ": ("vector", "vec", "IVF_PQ", {"num_partitions": PARTITIONS,
                                           "num_sub_vectors": SUB_VECTORS}),
    "IVF_SQ": ("vector", "vec", "IVF_SQ", {"num_partitions": PARTITIONS}),
    "IVF_HNSW_FLAT": ("vector", "vec", "IVF_HNSW_FLAT", {"num_partitions": PARTITIONS}),
    "IVF_HNSW_SQ": ("vector", "vec", "IVF_HNSW_SQ", {"num_partitions": PARTITIONS}),
    "IVF_HNSW_PQ": ("vector", "vec", "IVF_HNSW_PQ", {"num_partitions": PARTITIONS,
                                                     "num_sub_vectors": SUB_VECTORS}),
    "IVF_RQ": ("vector", "vec", "IVF_RQ", {"num_partitions": PARTITIONS}),
}

#: scenario -> (stable row ids, operations after the index is built). ``swap`` is special.
SCENARIOS = {
    "plain": (False, []),
    "append": (False, ["append"]),
    "delete": (False, ["delete"]),
    "update": (False, ["update"]),
    "compact": (False, ["delete", "compact"]),
    "compact-deferred": (False, ["delete", "compact-deferred"]),
    "stable-update": (True, ["update"]),
    "stable-compact": (True, ["delete", "compact"]),
    "stable-compact-deferred": (True, ["delete", "compact-deferred"]),
    "optimize": (False, ["append", "delete", "optimize"]),
    "compact-deferred-optimize": (False, ["delete", "compact-deferred", "append", "optimize"]),
    "swap": (False, ["swap"]),
}


# -- the release's API, era by era ------------------------------------------------------------------


def write(table, path, stable=False, mode="create"):
    kwargs = {"max_rows_per_file": PER_FILE, "mode": mode}
    if stable and mode == "create":
        for name in ("enable_stable_row_ids", "enable_move_stable_row_ids"):
            try:
                return lance.write_dataset(table, path, **kwargs, **{name: True})
            except TypeError:
                continue
        raise Unsupported("write_dataset takes no stable row id flag")
    return lance.write_dataset(table, path, **kwargs)


def build_index(ds, kind):
    family, column, index_type, params = KINDS[kind]
    if family == "vector":
        ds.create_index(column, index_type=index_type, metric="L2", **params)
    elif index_type == "JSON":
        from lance.indices import IndexConfig

        ds.create_scalar_index(column, index_type=IndexConfig(index_type="json",
                                                              parameters=params))
    else:
        ds.create_scalar_index(column, index_type=index_type, **params)
    return lance.dataset(ds.uri)


def apply(path, op, kind, log):
    ds = lance.dataset(path)
    if op == "append":
        write(table_of(range(N, N + APPEND), kind), path, mode="append")
        log.append(f"append ids {N}..{N + APPEND - 1} (a new fragment, not indexed)")
    elif op == "delete":
        ds.delete("id % 10 = 3")
        log.append("delete id % 10 = 3")
    elif op == "update":
        # the values of the indexed columns do not change; the rows move to a new fragment
        ds.update({"num": "num"}, where="id < 60")
        log.append("update num = num where id < 60 (the rows move to a new fragment)")
    elif op in ("compact", "compact-deferred"):
        from lance.optimize import Compaction  # noqa: F401  (absent in the oldest releases)

        kwargs = {"target_rows_per_fragment": 4 * N}
        if op == "compact-deferred":
            kwargs["defer_index_remap"] = True
        try:
            metrics = ds.optimize.compact_files(**kwargs)
        except TypeError as e:
            raise Unsupported(f"compact_files({', '.join(kwargs)}): {e}") from None
        log.append(f"compact_files({', '.join(f'{k}={v}' for k, v in kwargs.items())}): "
                   f"{getattr(metrics, 'fragments_removed', '?')} fragments removed, "
                   f"{getattr(metrics, 'fragments_added', '?')} added")
    elif op == "optimize":
        ds.optimize.optimize_indices()
        log.append("optimize_indices()")
    else:  # pragma: no cover
        raise ValueError(op)


def swap_tables(case_dir, kind, log):
    """The two tables of the issue's wrong index: the same rows, the second in reverse
    order, the same index on both. The kit copies the second's index files over the first's
    (``conformance/census/index_files.py``, which keeps the manifest's sizes true) and then
    asks the queries (``ask``)."""
    a = os.path.join(case_dir, "table")
    b = os.path.join(case_dir, "reversed")
    build_index(write(table_of(range(N), kind), a), kind)
    build_index(write(table_of(reversed(range(N)), kind), b), kind)
    log.append(f"write ids 0..{N - 1} to table/ and ids {N - 1}..0 to reversed/, "
               f"{N // PER_FILE} fragments each; the same {KINDS[kind][2]} index on both")


# -- asking -----------------------------------------------------------------------------------------


def _ids(table):
    return table.column("id").to_pylist()


#: words of a plan that reads an index (some releases name a flat search KNNVectorDistance too)
INDEX_WORDS = ("ScalarIndexQuery", "MaterializeIndex", "ANNSubIndex", "ANNIvfPartition",
               "KNNVectorDistance: metric", "ScalarIndex", "IndexedLookup")
#: words of a plan that searches a vector index (and no flat search names)
ANN_WORDS = ("ANNSubIndex", "ANNIvfPartition")


def _plan_uses_index(ds, words=INDEX_WORDS, **scan):
    try:
        plan = ds.scanner(columns=["id"], **scan).explain_plan()
    except Exception:  # the oldest releases have no explain_plan
        return None
    return any(w in plan for w in words)


def _answer(fn):
    try:
        return {"ids": fn()}
    except Exception as e:
        return {"error": f"{type(e).__name__}: {str(e)[:300]}"}


def ask(path, kind):
    ds = lance.dataset(path)
    family, column, _t, _p = KINDS[kind]
    cols = [c for c in ("id", "num", "cat", "tags", "text", "meta", "geo", "vec")
            if c in ds.schema.names]
    rows = ds.to_table(columns=cols).to_pylist()
    answers = []
    if family == "scalar":
        for sql, pred in SCALAR_QUERIES[column]:
            q = {"query": sql, "kind": "filter"}
            q["indexed"] = _answer(lambda sql=sql: sorted(_ids(ds.to_table(columns=["id"],
                                                                          filter=sql))))
            q["used_index"] = _plan_uses_index(ds, filter=sql)
            q["scan"] = _answer(lambda sql=sql: sorted(_ids(ds.to_table(
                columns=["id"], filter=sql, use_scalar_index=False))))
            q["data"] = sorted(r["id"] for r in rows if pred(r))
            answers.append(q)
    elif family == "minhash":
        from lance.query import MinHashQuery

        by_id = {r["id"]: r for r in rows}
        for rid, k in MINHASH_QUERIES:
            text = row_values(rid)["text"]
            q = {"query": f"{k} nearest to the text of id {rid}", "kind": "nearest", "k": k,
                 "of": rid, "present": rid in by_id and by_id[rid]["text"] is not None}
            q["indexed"] = _answer(lambda text=text, k=k: _ids(ds.to_table(
                columns=["id"], nearest=MinHashQuery(text, column), limit=k)))
            q["used_index"] = True  # the release has no MinHash search without the index
            q["scan"] = {"error": "the release answers a MinHash query only through an index"}
            q["data"] = sorted(r["id"] for r in rows if r["text"] == text)
            answers.append(q)
    elif family == "fts":
        for term in FTS_QUERIES:
            q = {"query": f"full_text_query {term!r}", "kind": "fts"}
            q["indexed"] = _answer(lambda term=term: sorted(_ids(ds.to_table(
                columns=["id"], full_text_query=term, limit=N + APPEND))))
            q["scan"] = {"error": "the release answers a full-text query only through an "
                                  "index"}
            q["data"] = sorted(r["id"] for r in rows
                               if r["text"] is not None and term in r["text"].split())
            answers.append(q)
    else:
        by_id = {r["id"]: r for r in rows}
        mat = np.array([r["vec"] for r in rows], dtype=np.float32)
        ids = np.array([r["id"] for r in rows])
        for rid, k in KNN_QUERIES:
            vec = _VECTORS[rid]
            q = {"query": f"{k} nearest to the vector of id {rid}", "kind": "nearest",
                 "k": k, "of": rid, "present": rid in by_id}
            near = {"column": column, "q": vec, "k": k, "nprobes": PARTITIONS}
            q["indexed"] = _answer(lambda near=near: _ids(ds.to_table(columns=["id"], nearest=near)))
            q["used_index"] = _plan_uses_index(ds, nearest=near)
            q["ann"] = _plan_uses_index(ds, ANN_WORDS, nearest=near)
            flat = dict(near, use_index=False)
            q["scan"] = _answer(lambda flat=flat: _ids(ds.to_table(columns=["id"], nearest=flat)))
            d = ((mat - vec) ** 2).sum(axis=1)
            q["data"] = [int(i) for i in ids[np.argsort(d, kind="stable")[:k]]]
            answers.append(q)
    return answers


def _describe(ds):
    info = {"version": ds.version, "fragments": len(ds.get_fragments())}
    for attr in ("data_storage_version",):
        try:
            info[attr] = str(getattr(ds, attr))
        except Exception:
            pass
    try:
        info["indices"] = json.loads(json.dumps(ds.list_indices(), default=str))
    except Exception as e:
        info["indices"] = f"{type(e).__name__}: {e}"
    try:
        info["stable_row_ids"] = bool(ds.manifest.uses_stable_row_ids)  # type: ignore[attr-defined]
    except Exception:
        pass
    return info


def build_case(out, kind, scenario):
    case_dir = os.path.join(out, kind, scenario)
    if os.path.exists(case_dir):
        shutil.rmtree(case_dir)
    os.makedirs(case_dir)
    family, column, index_type, params = KINDS[kind]
    stable, ops = SCENARIOS[scenario]
    case = {"release": f"pylance=={lance.__version__}", "kind": kind, "family": family,
            "column": column, "index_type": index_type, "parameters": params,
            "scenario": scenario, "stable_row_ids": stable,
            "expected": "wrong" if scenario == "swap" else "right", "operations": []}
    path = os.path.join(case_dir, "table")
    _save(case_dir, dict(case, status="started"))
    try:
        if scenario == "swap":
            swap_tables(case_dir, kind, case["operations"])
            case["status"] = "to-swap"
            _save(case_dir, case)
            return case
        else:
            ds = write(table_of(range(N), kind), path, stable=stable)
            build_index(ds, kind)
            case["operations"].append(f"write ids 0..{N - 1} in {N // PER_FILE} fragments"
                                      + (" with stable row ids" if stable else "")
                                      + f"; create the {index_type} index on {column}")
            for op in ops:
                apply(path, op, kind, case["operations"])
    except Exception as e:
        case["status"] = "skipped"
        case["why"] = f"{type(e).__name__}: {str(e)[:400]}"
        case["trace"] = traceback.format_exc()[-1500:]
        _save(case_dir, case)
        return case
    return ask_case(case_dir, case)


def ask_case(case_dir, case):
    """Describe the case's table and ask its queries; the case is then ``built``."""
    path = os.path.join(case_dir, "table")
    try:
        case["table"] = _describe(lance.dataset(path))
        case["queries"] = ask(path, case["kind"])
    except Exception as e:
        case["status"] = "unreadable"
        case["why"] = f"{type(e).__name__}: {str(e)[:400]}"
        _save(case_dir, case)
        return case
    case["status"] = "built"
    _save(case_dir, case)
    return case


def reread(case_dir, out):
    """This release's answers to a built case's queries on its table (read only), to
    ``out``: ``{release, queries}`` with each query's ``indexed``, ``used_index`` and
    ``scan`` as ``ask`` gives them, or ``error``."""
    with open(os.path.join(case_dir, "case.json")) as fh:
        case = json.load(fh)
    result = {"release": f"pylance=={lance.__version__}"}
    try:
        result["queries"] = ask(os.path.join(case_dir, "table"), case["kind"])
    except Exception as e:
        result["error"] = f"{type(e).__name__}: {str(e)[:400]}"
    with open(out, "w") as fh:
        json.dump(result, fh, indent=1, default=str)
    return result


def _save(case_dir, case):
    with open(os.path.join(case_dir, "case.json"), "w") as fh:
        json.dump(case, fh, indent=1, default=str)


def main(argv):
    global lance
    import lance as release_lance

    lance = release_lance
    if argv[:1] == ["kinds"]:
        print(json.dumps({"kinds": list(KINDS), "scenarios": list(SCENARIOS)}))
        return 0
    if len(argv) == 2 and argv[0] == "ask":
        with open(os.path.join(argv[1], "case.json")) as fh:
            case = json.load(fh)
        case = ask_case(argv[1], case)
        print(json.dumps({"kind": case["kind"], "scenario": case["scenario"],
                          "status": case["status"], "why": case.get("why", "")}), flush=True)
        return 0
    if len(argv) == 3 and argv[0] == "reread":
        result = reread(argv[1], argv[2])
        print(json.dumps({"release": result["release"], "error": result.get("error", "")}),
              flush=True)
        return 0
    if len(argv) >= 3 and argv[0] == "build":
        out, kind = argv[1], argv[2]
        scenarios = argv[3].split(",") if len(argv) > 3 and argv[3] else list(SCENARIOS)
        if kind not in KINDS:
            print(f"unknown kind {kind}", file=sys.stderr)
            return 2
        for s in scenarios:
            case = build_case(out, kind, s)
            print(json.dumps({"kind": kind, "scenario": s, "status": case["status"],
                              "why": case.get("why", "")}), flush=True)
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    code = main(sys.argv[1:])
    sys.stdout.flush()
    os._exit(code)  # some releases crash while the interpreter finalizes
