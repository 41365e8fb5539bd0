"""The index census's program for lancedb: the same rows, queries and ``case.json`` as
``index_program.py``, through lancedb's own Python API.

lancedb bundles its own Lance core and has no ``lance`` module, so this program drives what a
lancedb user calls: ``lancedb.connect``, ``create_table`` / ``add``, ``create_scalar_index``,
``create_fts_index``, ``create_index``, ``delete``, ``update`` and ``optimize`` (which
compacts the table and optimizes its indexes at once: lancedb has no compaction of its own,
no ``defer_index_remap`` and no ``optimize_indices`` alone, so the scenarios that need them are
``skipped`` with that reason). A table lives at ``<case>/table.lance`` (lancedb's name for
table ``table`` of the database ``<case>``) and ``<case>/table`` links to it, where the kit
reads it.

Queries: a filter through lancedb's query (``search().where``), a full-text search
(``query_type="fts"``) and k nearest vectors (``nprobes`` every partition; without the index:
``bypass_vector_index``). lancedb has no switch that turns a scalar index off, so a filter's
``scan`` is that error and its truth is ``data``, the rows the program reads in full.

Usage (with a lancedb release's Python)::

    python index_program_lancedb.py kinds
    python index_program_lancedb.py build OUT KIND [SCENARIO,...]
    python index_program_lancedb.py ask CASE_DIR
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import traceback

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import index_program as base  # noqa: E402  (the sibling program: rows, queries, kinds)

lancedb = None  # imported by main()

#: The kinds lancedb builds with its own calls (a kind its release refuses is ``skipped``).
KINDS = {k: base.KINDS[k] for k in (
    "BTREE", "BTREE-nulls", "BITMAP", "LABEL_LIST", "NGRAM", "FM", "ZONEMAP", "BLOOMFILTER",
    "INVERTED", "INVERTED-positions", "IVF_FLAT", "IVF_PQ", "IVF_SQ", "IVF_HNSW_SQ",
    "IVF_HNSW_PQ", "IVF_RQ")}

#: scenario -> (stable row ids, operations). ``optimize`` is lancedb's ``Table.optimize()``.
SCENARIOS = {
    "plain": (False, []),
    "append": (False, ["append"]),
    "delete": (False, ["delete"]),
    "update": (False, ["update"]),
    "stable-update": (True, ["update"]),
    "optimize": (False, ["append", "delete", "optimize"]),
    "swap": (False, ["swap"]),
}

NO_SUCH = ("lancedb has no compaction of its own, no defer_index_remap and no "
           "optimize_indices alone (its Table.optimize() does all at once)")


def _connect(case_dir):
    return lancedb.connect(case_dir)


def write(case_dir, name, ids, stable=False):
    """Table ``name`` of the database ``case_dir`` holding ``ids`` in fragments of
    ``PER_FILE`` rows (one ``create_table`` and an ``add`` per further fragment: lancedb
    writes one fragment per call), and the link ``<case_dir>/<name>`` to it."""
    ids = list(ids)
    db = _connect(case_dir)
    kw = {}
    if stable:
        kw["storage_options"] = {"new_table_enable_stable_row_ids": "true"}
    try:
        t = db.create_table(name, base.table_of(ids[:base.PER_FILE]), **kw)
    except TypeError as e:
        raise base.Unsupported(f"create_table takes no storage options: {e}") from None
    for at in range(base.PER_FILE, len(ids), base.PER_FILE):
        t.add(base.table_of(ids[at:at + base.PER_FILE]))
    link = os.path.join(case_dir, name)
    if not os.path.lexists(link):
        os.symlink(f"{name}.lance", link)
    return t


def build_index(t, kind):
    family, column, index_type, params = KINDS[kind]
    if family == "vector":
        t.create_index(metric="l2", vector_column_name=column, index_type=index_type,
                       **params)
    elif family == "fts":
        t.create_fts_index(column, use_tantivy=False, **params)
    elif index_type == "FM":  # only through create_index(config=Fm()), from lancedb 0.40
        from lancedb import index as lancedb_index

        if not hasattr(lancedb_index, "Fm"):
            raise base.Unsupported("this lancedb has no FM index (lancedb.index.Fm)")
        t.create_index(column, config=lancedb_index.Fm())
    else:
        t.create_scalar_index(column, index_type=index_type, **params)


def apply(t, op, log):
    if op == "append":
        t.add(base.table_of(range(base.N, base.N + base.APPEND)))
        log.append(f"add ids {base.N}..{base.N + base.APPEND - 1} (a new fragment, not "
                   "indexed)")
    elif op == "delete":
        t.delete("id % 10 = 3")
        log.append("delete id % 10 = 3")
    elif op == "update":
        t.update(where="id < 60", values_sql={"num": "num"})
        log.append("update num = num where id < 60 (the rows move to a new fragment)")
    elif op == "optimize":
        t.optimize()
        log.append("optimize() (compaction and index optimization)")
    else:  # pragma: no cover
        raise ValueError(op)


# -- asking -----------------------------------------------------------------------------------


def _plan_uses_index(query):
    try:
        plan = query.explain_plan()
    except Exception:  # releases without explain_plan
        return None
    return any(w in plan for w in ("ScalarIndexQuery", "MaterializeIndex", "ANNSubIndex",
                                   "ANNIvfPartition", "ScalarIndex", "IndexedLookup",
                                   "MatchQuery", "FlatMatchQuery"))


def ask(case_dir, kind):
    t = _connect(case_dir).open_table("table")
    family, column, _t, _p = KINDS[kind]
    every = t.to_arrow()
    cols = [c for c in ("id", "num", "cat", "tags", "text", "vec") if c in every.column_names]
    rows = every.select(cols).to_pylist()
    limit = base.N + base.APPEND + 64
    answers = []
    if family == "scalar":
        for sql, pred in base.SCALAR_QUERIES[column]:
            q = {"query": sql, "kind": "filter"}
            q["indexed"] = base._answer(lambda sql=sql: sorted(base._ids(
                t.search().where(sql).select(["id"]).limit(limit).to_arrow())))
            q["used_index"] = _plan_uses_index(t.search().where(sql).select(["id"])
                                               .limit(limit))
            q["scan"] = {"error": "lancedb has no switch that turns a scalar index off"}
            q["data"] = sorted(r["id"] for r in rows if pred(r))
            answers.append(q)
    elif family == "fts":
        for term in base.FTS_QUERIES:
            q = {"query": f"full_text_query {term!r}", "kind": "fts"}
            q["indexed"] = base._answer(lambda term=term: sorted(base._ids(
                t.search(term, query_type="fts").select(["id"]).limit(limit).to_arrow())))
            q["scan"] = {"error": "the release answers a full-text query only through an "
                                  "index"}
            q["data"] = sorted(r["id"] for r in rows
                               if r["text"] is not None and term in r["text"].split())
            answers.append(q)
    else:
        by_id = {r["id"]: r for r in rows}
        mat = np.array([r["vec"] for r in rows], dtype=np.float32)
        ids = np.array([r["id"] for r in rows])
        for rid, k in base.KNN_QUERIES:
            vec = base._VECTORS[rid]
            q = {"query": f"{k} nearest to the vector of id {rid}", "kind": "nearest",
                 "k": k, "of": rid, "present": rid in by_id}

            def near(vec=vec, k=k):
                return (t.search(vec, vector_column_name=column).limit(k)
                        .nprobes(base.PARTITIONS).select(["id"]))

            q["indexed"] = base._answer(lambda near=near: base._ids(near().to_arrow()))
            q["used_index"] = _plan_uses_index(near())
            q["scan"] = base._answer(lambda near=near: base._ids(
                near().bypass_vector_index().to_arrow()))
            d = ((mat - vec) ** 2).sum(axis=1)
            q["data"] = [int(i) for i in ids[np.argsort(d, kind="stable")[:k]]]
            answers.append(q)
    return answers


def _describe(case_dir):
    t = _connect(case_dir).open_table("table")
    info = {"version": t.version}
    try:
        info["indices"] = json.loads(json.dumps(t.list_indices(), default=str))
    except Exception as e:
        info["indices"] = f"{type(e).__name__}: {e}"
    return info


def build_case(out, kind, scenario):
    case_dir = os.path.join(out, kind, scenario)
    if os.path.exists(case_dir):
        shutil.rmtree(case_dir)
    os.makedirs(case_dir)
    family, column, index_type, params = KINDS[kind]
    case = {"release": f"lancedb=={lancedb.__version__}", "kind": kind, "family": family,
            "column": column, "index_type": index_type, "parameters": params,
            "scenario": scenario,
            "stable_row_ids": SCENARIOS.get(scenario, (False, []))[0],
            "expected": "wrong" if scenario == "swap" else "right", "operations": []}
    base._save(case_dir, dict(case, status="started"))
    if scenario not in SCENARIOS:
        case.update(status="skipped", why=NO_SUCH)
        base._save(case_dir, case)
        return case
    stable, ops = SCENARIOS[scenario]
    try:
        if scenario == "swap":
            build_index(write(case_dir, "table", range(base.N)), kind)
            build_index(write(case_dir, "reversed", reversed(range(base.N))), kind)
            case["operations"].append(
                f"write ids 0..{base.N - 1} to table/ and ids {base.N - 1}..0 to reversed/, "
                f"{base.N // base.PER_FILE} fragments each; the same {index_type} index on "
                "both")
            case["status"] = "to-swap"
            base._save(case_dir, case)
            return case
        t = write(case_dir, "table", range(base.N), stable=stable)
        build_index(t, kind)
        case["operations"].append(
            f"create_table and add: ids 0..{base.N - 1} in {base.N // base.PER_FILE} "
            "fragments" + (" with stable row ids" if stable else "")
            + f"; the {index_type} index on {column}")
        for op in ops:
            apply(t, op, case["operations"])
    except Exception as e:
        case["status"] = "skipped"
        case["why"] = f"{type(e).__name__}: {str(e)[:400]}"
        case["trace"] = traceback.format_exc()[-1500:]
        base._save(case_dir, case)
        return case
    return ask_case(case_dir, case)


def ask_case(case_dir, case):
    try:
        case["table"] = _describe(case_dir)
        case["queries"] = ask(case_dir, case["kind"])
    except Exception as e:
        case["status"] = "unreadable"
        case["why"] = f"{type(e).__name__}: {str(e)[:400]}"
        base._save(case_dir, case)
        return case
    case["status"] = "built"
    base._save(case_dir, case)
    return case


def main(argv):
    global lancedb
    import lancedb as release_lancedb

    lancedb = release_lancedb
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
    if len(argv) >= 3 and argv[0] == "build":
        out, kind = argv[1], argv[2]
        scenarios = argv[3].split(",") if len(argv) > 3 and argv[3] else list(SCENARIOS)
        for s in scenarios:
            if kind not in KINDS:
                case = {"release": f"lancedb=={lancedb.__version__}", "kind": kind,
                        "scenario": s, "status": "skipped",
                        "why": "not one of the kinds lancedb's census builds"}
                os.makedirs(os.path.join(out, kind, s), exist_ok=True)
                base._save(os.path.join(out, kind, s), case)
            else:
                case = build_case(out, kind, s)
            print(json.dumps({"kind": kind, "scenario": s, "status": case["status"],
                              "why": case.get("why", "")}), flush=True)
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    code = main(sys.argv[1:])
    sys.stdout.flush()
    os._exit(code)
