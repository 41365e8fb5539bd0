"""Write one long, randomized history with one release of pylance or lancedb, and read it back.

Like :mod:`release_program` (which it imports as a sibling), this runs inside a release's own
virtualenv and imports only that release and pyarrow. A history is a seeded random walk over
the operations the release exposes: appends, deletes (some emptying a fragment), updates,
merge_insert, columns added, renamed, dropped and merged in, compaction (deletions
materialized or not), overwrites (some with another schema), restores, tags, branches,
indexes (scalar, and a small vector one) and their optimization, config and metadata updates,
each step one commit when it succeeds. A step the release lacks is ``missing``; one it
refuses or crashes on is ``failed``; neither ends the history.

The walk can stop and resume (``--stop``), so that a history can be judged half-grown and
then grown to its end: the generator's state and the step counter are kept in
``OUT/state.json`` after every step, and a step during which the process died is recorded
as ``crashed`` on resumption.

``read`` stores, for every version of the table (and of each branch), the rows the release
reads back (``OUT/expected/v{N}.arrows``, as :mod:`release_program` does), and
``OUT/scenario.json`` lists the steps, the versions and those the release could not read.

Usage (with the release's Python)::

    python history_program.py write OUT SPEC.json   # SPEC: seed, steps, storage, stable,
                                                    # stop (optional), writer
    python history_program.py read OUT
"""

from __future__ import annotations

import base64
import json
import os
import pickle
import random
import shutil
import sys
import traceback

import pyarrow as pa

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import release_program as rp  # noqa: E402

lance = rp.lance
lancedb = rp.lancedb

#: The columns a history starts with (those the release writes at its storage version), and
#: the other schema an overwrite may switch to.
FIRST_COLUMNS = ["i32", "s", "vec"]
OTHER_COLUMNS = ["f64", "li", "st"]

#: Operation -> weight of the walk (an unavailable operation is never drawn).
WEIGHTS = {
    "append": 24, "delete": 8, "delete_fragment": 4, "update": 7, "merge_insert": 6,
    "add_column": 3, "rename_column": 2, "drop_column": 2, "merge_column": 2,
    "compact": 5, "overwrite": 1, "overwrite_schema": 1, "restore": 3,
    "tag_create": 3, "tag_update": 2, "tag_delete": 2, "branch_create": 1, "branch_append": 2,
    "scalar_index": 2, "vector_index": 1, "optimize_indices": 2, "config": 2,
    "delete_config": 1, "schema_metadata": 1, "table_metadata": 1,
}


class Walk:
    """The state of one history between steps (all of it JSON, the generator pickled)."""

    def __init__(self, out, spec):
        self.out = out
        self.uri = os.path.join(out, "table")
        self.spec = spec
        path = os.path.join(out, "state.json")
        if os.path.exists(path):
            with open(path) as f:
                self.state = json.load(f)
            self.rng = pickle.loads(base64.b64decode(self.state.pop("rng")))
        else:
            self.state = {"step": 0, "next_id": 0, "tags": [], "branches": [],
                          "extra": 0, "pending": None, "columns": None, "spec": spec}
            self.rng = random.Random(spec["seed"])
        info_path = os.path.join(out, "scenario.json")
        if os.path.exists(info_path):
            with open(info_path) as f:
                self.info = json.load(f)
        else:
            self.info = {"scenario": spec["name"], "writer": spec["writer"],
                         "storage": spec["storage"], "stable_row_ids": spec["stable"],
                         "seed": spec["seed"], "steps": [], "refused_columns": {},
                         "unreadable_versions": {}, "versions": [], "long_history": True,
                         "table_path": self.uri}
        if self.state["pending"] is not None:  # the process died inside this step
            self.info["steps"].append(dict(self.state["pending"], outcome="crashed"))
            self.state["pending"] = None
            self.state["step"] += 1

    def save(self):
        state = dict(self.state, rng=base64.b64encode(pickle.dumps(self.rng)).decode())
        with open(os.path.join(self.out, "state.json.tmp"), "w") as f:
            json.dump(state, f)
        os.replace(os.path.join(self.out, "state.json.tmp"),
                   os.path.join(self.out, "state.json"))
        with open(os.path.join(self.out, "scenario.json"), "w") as f:
            json.dump(self.info, f, indent=1, sort_keys=True)

    def ids(self, n):
        start = self.state["next_id"]
        self.state["next_id"] += n
        return start


def rows(start, n, schema):
    """``n`` rows with ids from ``start`` in ``schema``: the columns of ``release_program``
    by name, any other column (one a step added or renamed) null."""
    builders = rp.column_builders()
    arrays = []
    for f in schema:
        if f.name == "id":
            arr = pa.array(range(start, start + n), pa.int64())
        elif f.name in builders:
            arr = builders[f.name](start, n)
        else:
            arr = pa.nulls(n)
        try:
            arr = arr.cast(f.type)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            arr = pa.nulls(n, f.type)
        arrays.append(arr)
    return pa.Table.from_arrays(arrays, schema=schema)


# -- pylance --------------------------------------------------------------------------------


class Pylance:
    """The operations of a pylance release on the history's table."""

    def __init__(self, walk):
        self.w = walk
        self.storage = walk.spec["storage"]

    def ds(self):
        return lance.dataset(self.w.uri)

    def version(self):
        try:
            return self.ds().version
        except BaseException as e:  # noqa: BLE001 - no table yet, or one it cannot open
            if isinstance(e, KeyboardInterrupt):
                raise
            return None

    def has(self, op):
        d = lance.LanceDataset
        needs = {
            "merge_insert": hasattr(d, "merge_insert"), "update": hasattr(d, "update"),
            "add_column": hasattr(d, "add_columns"),
            "rename_column": hasattr(d, "alter_columns"),
            "drop_column": hasattr(d, "drop_columns"), "merge_column": hasattr(d, "merge"),
            "restore": hasattr(d, "restore"), "tag_create": hasattr(d, "tags"),
            "tag_update": hasattr(d, "tags"), "tag_delete": hasattr(d, "tags"),
            "branch_create": hasattr(d, "create_branch"),
            "branch_append": hasattr(d, "create_branch"),
            "scalar_index": hasattr(d, "create_scalar_index"),
            "config": hasattr(d, "update_config"),
            "delete_config": hasattr(d, "delete_config_keys"),
            "schema_metadata": hasattr(d, "replace_schema_metadata"),
            "table_metadata": hasattr(d, "update_metadata"),
        }
        return needs.get(op, True)

    def columns(self):
        return [f.name for f in self.ds().schema]

    def data(self, n, schema=None):
        """``n`` new rows in the table's current schema (``schema``: another one, a
        branch's); a column the walk made up reads as nulls."""
        return rows(self.w.ids(n), n, schema or self.ds().schema)

    def create(self):
        cols = self.w.state["columns"]
        extra = {}
        if self.w.spec["stable"]:
            fn = lance.write_dataset
            flag = ("enable_stable_row_ids" if rp._accepts(fn, "enable_stable_row_ids") else
                    "enable_move_stable_row_ids" if rp._accepts(fn, "enable_move_stable_row_ids")
                    else None)
            if flag is None:  # this release has none: the history goes without
                self.w.info["stable_row_ids"] = False
            else:
                extra[flag] = True
        n = 300
        start = self.w.ids(n)
        t = rp.make_table(cols, start, n)
        rp.write(t, self.w.uri, self.storage, max_rows_per_file=100, **extra)

    # each operation: (description for the log, the function doing it)
    def op(self, name):
        r = self.w.rng
        w = self.w
        if name == "append":
            n = r.choice([1, 5, 20, 80, 250])
            per_file = r.choice([None, None, 40, 100])
            kw = {"max_rows_per_file": per_file} if per_file else {}
            t = self.data(n)
            return f"{n} rows", lambda: rp.write(t, w.uri, self.storage, mode="append", **kw)
        if name == "delete":
            k = r.choice([2, 3, 5, 7, 11])
            rest = r.randrange(k)
            pred = f"id % {k} = {rest}"
            if r.random() < 0.5:
                hi = w.state["next_id"]
                lo = r.randrange(max(1, hi))
                pred = f"({pred}) AND id >= {lo}"
            return pred, lambda: self.ds().delete(pred)
        if name == "delete_fragment":
            frags = self.ds().get_fragments()
            if not frags:
                return "no fragment", None
            frag = r.choice(frags)
            ids = frag.to_table(columns=["id"]).column("id").to_pylist()
            if not ids:
                return "an empty fragment", None
            pred = f"id >= {min(ids)} AND id <= {max(ids)}"
            return f"fragment {frag.fragment_id}: {pred}", lambda: self.ds().delete(pred)
        if name == "update":
            cols = self.columns()
            hi = max(1, w.state["next_id"])
            lo = r.randrange(hi)
            where = f"id >= {lo} AND id < {lo + r.choice([3, 30, 300])}"
            if "i32" in cols:
                values = {"i32": "i32 + 1"}
            elif "f64" in cols:
                values = {"f64": "f64 * 2"}
            else:
                values = {"id": "id"}
            if "s" in cols and r.random() < 0.5:
                values["s"] = f"'upd-{w.state['step']}'"
            return f"{values} where {where}", lambda: self.ds().update(values, where=where)
        if name == "merge_insert":
            hi = max(1, w.state["next_id"])
            n_old = r.choice([0, 5, 40])
            n_new = r.choice([0, 5, 40])
            old = self.data(n_old) if n_old else None
            if old is not None:  # existing ids, other values
                lo = r.randrange(hi)
                old = old.set_column(0, old.schema.field(0),
                                     pa.array(range(lo, lo + n_old), pa.int64()))
            new = self.data(n_new) if n_new else None
            src = pa.concat_tables([t for t in (old, new) if t is not None]) \
                if (old is not None or new is not None) else self.data(1)
            kind = r.choice(["upsert", "upsert", "insert_only", "update_only"])

            def run():
                b = self.ds().merge_insert("id")
                if kind in ("upsert", "update_only"):
                    b = b.when_matched_update_all()
                if kind in ("upsert", "insert_only"):
                    b = b.when_not_matched_insert_all()
                b.execute(src)
            return f"{kind} of {src.num_rows} rows", run
        if name == "add_column":
            w.state["extra"] += 1
            col = f"x{w.state['extra']}"
            if r.random() < 0.5:
                return f"{col} = id * 2", lambda: self.ds().add_columns({col: "id * 2"})
            return f"{col} null", lambda: self.ds().add_columns(pa.field(col, pa.string()))
        if name == "rename_column":
            cols = [c for c in self.columns() if c != "id"]
            if not cols:
                return "no column", None
            c = r.choice(cols)
            new = f"{c}_r" if not c.endswith("_r") else c[:-2]
            if new in self.columns():
                return f"{new} exists", None
            return f"{c} -> {new}", lambda: self.ds().alter_columns({"path": c, "name": new})
        if name == "drop_column":
            cols = [c for c in self.columns() if c != "id"]
            if len(cols) < 2:
                return "too few columns", None
            c = r.choice(cols)
            return c, lambda: self.ds().drop_columns([c])
        if name == "merge_column":
            w.state["extra"] += 1
            col = f"m{w.state['extra']}"
            hi = max(1, w.state["next_id"])
            keys = list(range(0, hi, r.choice([1, 2, 3])))
            t = pa.table({"id": pa.array(keys, pa.int64()),
                          col: pa.array([f"m{i}" for i in keys])})
            return col, lambda: self.ds().merge(t, "id")
        if name == "compact":
            kw = {"target_rows_per_fragment": r.choice([100, 400, 2000]),
                  "materialize_deletions": r.random() < 0.7,
                  "materialize_deletions_threshold": r.choice([0.0, 0.1, 0.5])}
            return repr(kw), lambda: self.ds().optimize.compact_files(
                **rp._kwargs_for(self.ds().optimize.compact_files, **kw))
        if name == "overwrite":
            t = self.data(r.choice([10, 150]))
            return f"{t.num_rows} rows", lambda: self.overwrite(t)
        if name == "overwrite_schema":
            cols = self.columns()
            other = OTHER_COLUMNS if "i32" in cols or "i32_r" in cols else FIRST_COLUMNS
            other = [c for c in other if c in w.state["accepted"]]
            n = r.choice([20, 150])
            t = rp.make_table(other, w.ids(n), n)
            return f"columns {other}", lambda: self.overwrite(t)
        if name == "restore":
            v = self.version()
            if not v or v < 2:
                return "nothing to restore", None
            to = r.randrange(1, v)
            return f"to {to}", lambda: lance.dataset(w.uri, version=to).restore()
        if name in self.TAG_OPS:
            return self.tag_op(name, lambda: self.ds().tags)
        if name == "branch_create":
            b = f"b{w.state['step']}"

            def run():
                self.ds().create_branch(b)
                w.state["branches"].append(b)
            return b, run
        if name == "branch_append":
            if not w.state["branches"]:
                return "no branch", None
            b = r.choice(w.state["branches"])
            n = r.choice([3, 30])

            def run():
                at = rp.census()._branch(w.uri, b)
                lance.write_dataset(self.data(n, at.schema), at, mode="append")
            return f"{n} rows to {b}", run
        if name == "scalar_index":
            return "BTREE on id", lambda: self.ds().create_scalar_index(
                "id", "BTREE", **rp._kwargs_for(self.ds().create_scalar_index, replace=True))
        if name == "vector_index":
            if "vec" not in self.columns() or self.ds().count_rows() < 256:
                return "no vector column or too few rows", None
            return "IVF_PQ on vec", lambda: self.ds().create_index(
                "vec", "IVF_PQ", num_partitions=2, num_sub_vectors=2,
                **rp._kwargs_for(self.ds().create_index, replace=True))
        if name == "optimize_indices":
            return "", lambda: self.ds().optimize.optimize_indices()
        if name == "config":
            k = f"walk.k{r.randrange(4)}"
            val = str(w.state["step"])
            return f"{k}={val}", lambda: self.ds().update_config({k: val})
        if name == "delete_config":
            k = f"walk.k{r.randrange(4)}"
            return k, lambda: self.ds().delete_config_keys([k])
        if name == "schema_metadata":
            val = str(w.state["step"])
            return val, lambda: self.ds().replace_schema_metadata({"walk": val})
        if name == "table_metadata":
            val = str(w.state["step"])
            return val, lambda: self.ds().update_metadata({"walk": val})
        raise ValueError(name)

    TAG_OPS = ("tag_create", "tag_update", "tag_delete")

    def tag_op(self, name, tags):
        """A tag step (``TAG_OPS``) on the tags ``tags()`` gives (pylance's and lancedb's
        tag APIs are alike): create one named after the step, or update or delete one."""
        r = self.w.rng
        w = self.w
        if name == "tag_create":
            tag = f"t{w.state['step']}"
            to = r.randrange(1, (self.version() or 1) + 1)

            def run():
                tags().create(tag, to)
                w.state["tags"].append(tag)
            return f"{tag} -> {to}", run
        if not w.state["tags"]:
            return "no tag", None
        tag = r.choice(w.state["tags"])
        if name == "tag_delete":
            def run():
                tags().delete(tag)
                w.state["tags"].remove(tag)
            return tag, run
        to = r.randrange(1, (self.version() or 1) + 1)
        return f"{tag} -> {to}", lambda: tags().update(tag, to)

    def overwrite(self, t):
        """Overwrite at the history's storage version (without it, releases before 0.17
        overwrite a 2.0 table with a legacy one), keeping stable row ids as they are."""
        kw = rp._kwargs_for(lance.write_dataset, **rp.write_kwargs(self.storage))
        lance.write_dataset(t, self.w.uri, mode="overwrite", **kw)

    def read_back(self, rec):
        rp.read_back(rec)
        if os.path.isdir(os.path.join(self.w.uri, "tree")):
            rp.census().read_back_branches(rec)


# -- lancedb --------------------------------------------------------------------------------


class Lancedb(Pylance):
    """The same walk through a lancedb table (``<out>/db/t.lance``, moved to ``table/`` by
    ``read``); operations lancedb lacks are never drawn."""

    LACKS = {"branch_create", "branch_append", "delete_config", "table_metadata",
             "schema_metadata", "config", "overwrite_schema"}

    def __init__(self, walk):
        super().__init__(walk)
        self.db_dir = os.path.join(walk.out, "db")
        self.w.uri = os.path.join(self.db_dir, "t.lance")
        self.w.info["table_path"] = self.w.uri

    def table(self):
        return lancedb.connect(self.db_dir).open_table("t")

    def ds(self):
        raise AttributeError("lancedb has no pylance dataset")

    def version(self):
        try:
            return self.table().version
        except BaseException as e:  # noqa: BLE001
            if isinstance(e, KeyboardInterrupt):
                raise
            return None

    def has(self, op):
        return op not in self.LACKS

    def columns(self):
        return [f.name for f in self.table().schema]

    def data(self, n, schema=None):
        return rows(self.w.ids(n), n, schema or self.table().schema)

    def create(self):
        kw = {}
        opts = {}
        if self.storage is not None:
            opts["new_table_data_storage_version"] = self.storage
        if self.w.spec["stable"]:
            opts["new_table_enable_stable_row_ids"] = "true"
        if opts:
            kw["storage_options"] = opts
        n = 300
        t = rp.make_table(self.w.state["columns"], self.w.ids(n), n)
        lancedb.connect(self.db_dir).create_table("t", t, **kw)

    def op(self, name):
        r = self.w.rng
        w = self.w
        t = self.table()
        if name == "append":
            n = r.choice([1, 5, 20, 80, 250])
            data = self.data(n)
            return f"{n} rows", lambda: t.add(data)
        if name == "delete":
            k = r.choice([2, 3, 5, 7, 11])
            pred = f"id % {k} = {r.randrange(k)}"
            return pred, lambda: t.delete(pred)
        if name == "delete_fragment":
            hi = max(1, w.state["next_id"])
            lo = r.randrange(hi)
            pred = f"id >= {lo} AND id < {lo + r.choice([50, 100, 300])}"
            return pred, lambda: t.delete(pred)
        if name == "update":
            cols = self.columns()
            hi = max(1, w.state["next_id"])
            lo = r.randrange(hi)
            where = f"id >= {lo} AND id < {lo + r.choice([3, 30, 300])}"
            values = {"i32": "i32 + 1"} if "i32" in cols else {"id": "id"}
            return f"{values} where {where}", lambda: t.update(where=where, values_sql=values)
        if name == "merge_insert":
            n = r.choice([5, 40])
            hi = max(1, w.state["next_id"])
            src = self.data(n)
            if r.random() < 0.5:
                lo = r.randrange(hi)
                src = src.set_column(0, src.schema.field(0),
                                     pa.array(range(lo, lo + n), pa.int64()))
            return f"upsert of {n} rows", lambda: t.merge_insert("id") \
                .when_matched_update_all().when_not_matched_insert_all().execute(src)
        if name == "add_column":
            w.state["extra"] += 1
            col = f"x{w.state['extra']}"
            return f"{col} = id * 2", lambda: t.add_columns({col: "id * 2"})
        if name == "rename_column":
            cols = [c for c in self.columns() if c != "id"]
            if not cols:
                return "no column", None
            c = r.choice(cols)
            new = f"{c}_r" if not c.endswith("_r") else c[:-2]
            if new in cols:
                return f"{new} exists", None
            return f"{c} -> {new}", lambda: t.alter_columns({"path": c, "rename": new})
        if name == "drop_column":
            cols = [c for c in self.columns() if c != "id"]
            if len(cols) < 2:
                return "too few columns", None
            c = r.choice(cols)
            return c, lambda: t.drop_columns([c])
        if name == "merge_column":
            w.state["extra"] += 1
            col = f"m{w.state['extra']}"
            hi = max(1, w.state["next_id"])
            keys = list(range(0, hi, 2))
            data = pa.table({"id": pa.array(keys, pa.int64()),
                             col: pa.array([f"m{i}" for i in keys])})
            return col, lambda: t.merge(data, left_on="id")
        if name == "compact":
            # (lancedb's compact_files needs pylance beside it; optimize compacts, then
            # optimizes the indexes)
            return "optimize", lambda: t.optimize()
        if name == "overwrite":
            data = self.data(r.choice([10, 150]))
            return f"{data.num_rows} rows", lambda: t.add(data, mode="overwrite")
        if name == "restore":
            v = self.version()
            if not v or v < 2:
                return "nothing to restore", None
            to = r.randrange(1, v)
            return f"to {to}", lambda: (t.checkout(to), t.restore())
        if name in self.TAG_OPS:
            return self.tag_op(name, lambda: t.tags)
        if name == "scalar_index":
            return "BTREE on id", lambda: t.create_scalar_index("id", replace=True)
        if name == "vector_index":
            if "vec" not in self.columns() or t.count_rows() < 256:
                return "no vector column or too few rows", None
            return "IVF_PQ on vec", lambda: t.create_index(**rp._kwargs_for(
                t.create_index, metric="l2", vector_column_name="vec", num_partitions=2,
                num_sub_vectors=2, replace=True))
        if name == "optimize_indices":
            return "optimize", lambda: t.optimize()
        raise ValueError(name)

    def read_back(self, rec):
        rp._read_back_lancedb(rec, self.db_dir)


# -- the walk -------------------------------------------------------------------------------


def write(out, spec):
    os.makedirs(out, exist_ok=True)
    w = Walk(out, spec)
    kit = Lancedb(w) if spec["writer"].startswith("lancedb") else Pylance(w)
    if w.state["columns"] is None:  # a new history: the columns this storage version takes
        probe = type("R", (), {})()
        probe.dir, probe.info = out, {"refused_columns": {}}
        if lance is not None:
            accepted = rp.accepted_columns(probe, w.spec["storage"],
                                           FIRST_COLUMNS + OTHER_COLUMNS)
        else:
            accepted = FIRST_COLUMNS
        w.info["refused_columns"] = probe.info["refused_columns"]
        w.state["accepted"] = accepted
        w.state["columns"] = [c for c in FIRST_COLUMNS if c in accepted]
        w.state["pending"] = {"step": 0, "op": "create"}
        w.save()
        try:
            kit.create()
        except BaseException as e:  # noqa: BLE001
            if isinstance(e, KeyboardInterrupt):
                raise
            w.info["steps"].append({"step": 0, "op": "create", "outcome": "failed",
                                    "error": rp._short(e)})
            w.state["pending"] = None
            w.save()
            return
        w.info["steps"].append({"step": 0, "op": "create", "outcome": "done",
                                "version_after": kit.version()})
        w.state["pending"] = None
        w.state["step"] = 1
        w.save()
    ops = [op for op in WEIGHTS if kit.has(op)]
    weights = [WEIGHTS[op] for op in ops]
    stop = min(spec.get("stop") or spec["steps"], spec["steps"])
    while w.state["step"] < stop:
        name = w.rng.choices(ops, weights)[0]
        entry = {"step": w.state["step"], "op": name}
        try:
            what, fn = kit.op(name)
        except BaseException as e:  # noqa: BLE001 - drawing the step read the table
            if isinstance(e, KeyboardInterrupt):
                raise
            what, fn = f"could not plan: {rp._short(e)}", None
        entry["what"] = what
        if fn is None:
            entry["outcome"] = "skipped"
        else:
            entry["version_before"] = kit.version()
            w.state["pending"] = entry
            w.save()
            try:
                fn()
            except (AttributeError, TypeError, NotImplementedError, ImportError) as e:
                entry.update(outcome="missing", error=rp._short(e))
            except BaseException as e:  # noqa: BLE001 - a release's panic ends no history
                if isinstance(e, KeyboardInterrupt):
                    raise
                entry.update(outcome="failed", error=rp._short(e))
            else:
                entry["outcome"] = "done"
            entry["version_after"] = kit.version()
            w.state["pending"] = None
        w.info["steps"].append(entry)
        w.state["step"] += 1
        w.save()


def read(out):
    with open(os.path.join(out, "state.json")) as f:
        spec = json.load(f)["spec"]
    w = Walk(out, spec)
    kit = Lancedb(w) if spec["writer"].startswith("lancedb") else Pylance(w)
    rec = type("R", (), {})()
    rec.dir, rec.info, rec.uri = out, w.info, w.uri
    shutil.rmtree(os.path.join(out, "expected"), ignore_errors=True)
    os.makedirs(os.path.join(out, "expected"))
    rec.info["versions"], rec.info["unreadable_versions"] = [], {}
    rec.info.pop("branches", None)
    rec.info.pop("unreadable_branch_versions", None)
    kit.read_back(rec)
    with open(os.path.join(out, "scenario.json"), "w") as f:
        json.dump(rec.info, f, indent=1, sort_keys=True)


def main(argv):
    if len(argv) == 4 and argv[1] == "write":
        with open(argv[3]) as f:
            spec = json.load(f)
        write(argv[2], spec)
        return 0
    if len(argv) == 3 and argv[1] == "read":
        read(argv[2])
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    try:
        code = main(sys.argv)
    except Exception:
        traceback.print_exc()
        code = 3
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # some releases crash while the interpreter finalizes
