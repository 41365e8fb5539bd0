"""Writer scenarios as operation scripts, and the logical model they are judged against.

An *operation script* is a JSON list of operations, each one object with an ``op`` key::

    {"op": "create", "data": DATA, "data_storage_version": "2.1",
     "stable_row_ids": false, "v2_manifest_paths": true, "max_rows_per_file": 1000}
    {"op": "append", "data": DATA [, "read_version": N]}   # N: a writer that read version N
    {"op": "overwrite", "data": DATA}
    {"op": "delete", "where": "<SQL predicate>"}
    {"op": "update", "set": {"col": "<SQL expression>"}, "where": "<SQL predicate>"}
    {"op": "add_columns", "columns": [["name", "<arrow type alias>"]]}   # all-null columns
    {"op": "merge", "data": DATA, "on": "id"}                            # left join on a key
    {"op": "merge_insert", "data": DATA, "on": ["id"],                   # rows matched on keys
     "when_matched_update_all": {"condition": "target.x < source.x"},    # (condition optional)
     "when_not_matched_insert_all": true,
     "when_not_matched_by_source_delete": {"where": "x > 3"}}            # (where optional)
    {"op": "read", "filter": "<SQL predicate>", "columns": ["id", "x"]}  # a filtered read
    {"op": "drop_columns", "columns": ["name"]}
    {"op": "compact", "target_rows_per_fragment": N}
    {"op": "tag", "action": "create"|"update"|"delete", "name": "t", "version": N}
    {"op": "restore", "version": N}
    {"op": "update_config", "values": {"key": "value"}}
    {"op": "create_index", "column": "id", "index_type": "BTREE"}    # a scalar index

``DATA`` is ``{"gen": "small"|"mixed"|"all_types"|"nested"|"ids"|"keyed"|"upsert", "n": rows,
"start": first id, "drop": [columns]}``:
the rows are made by a deterministic generator, so a script is small, JSON and gives the
same rows every time. :func:`table_for` turns it into a pyarrow Table. Generated scripts
(``lance-conformance fuzz``) carry their rows inline instead: ``{"gen": "ipc", "b64":
"<base64 of an Arrow IPC stream>"}`` (:func:`inline_data` makes one).

Every operation but ``tag`` and ``read`` commits one new version, ``compact`` two
(ReserveFragments, then Rewrite). (A ``merge_insert`` that changes no row is never
sent: Lance commits a version for it, DuckDB's ``MERGE`` none.) A
``read`` step is a filtered read of the latest version by the implementation under test
(``columns`` optional, in the order listed), judged against the model's rows at that
version that the filter holds for (:meth:`Model.read_answer`, three-valued logic: a null
answer is no match). :class:`Model` applies a script to
plain Arrow tables and returns the logical rows expected at every version; rows are
compared as multisets (sorted on every column, ``id`` first), since writers may place
updated rows in new fragments at the end. With stable row ids (``create`` with
``stable_row_ids``) the model also carries each row's ``_rowid``: every row written by
create, append or overwrite takes the next id of a counter that never goes back (not even
on restore), and delete, update, merge, schema changes and compaction keep the ids.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

ROW_ID = "_rowid"


# -- data ------------------------------------------------------------------------------------

def _ids_table(n: int, start: int = 0) -> pa.Table:
    return pa.table({"id": pa.array(np.arange(start, start + n, dtype=np.int64))})


def table_for(data: dict) -> pa.Table:
    """The rows a ``DATA`` object names (without the columns listed in its ``drop``)."""
    t = _generate(data)
    return t.drop_columns(list(data["drop"])) if data.get("drop") else t


def inline_data(table: pa.Table) -> dict:
    """A ``DATA`` object holding ``table`` itself (an Arrow IPC stream, base64)."""
    import base64

    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as w:
        w.write_table(table)
    return {"gen": "ipc", "b64": base64.b64encode(sink.getvalue().to_pybytes()).decode()}


def _generate(data: dict) -> pa.Table:
    from conformance.strategies import data as gen

    if data.get("gen") == "ipc":
        import base64

        t = pa.ipc.open_stream(pa.py_buffer(base64.b64decode(data["b64"]))).read_all()
        # fresh buffers: IPC bodies are only 8-byte aligned, and pylance 14 panics on a
        # decimal128 buffer that is not 16-byte aligned
        return t.take(pa.array(np.arange(t.num_rows, dtype=np.int64)))
    kind, n, start = data.get("gen", "small"), int(data.get("n", 10)), int(data.get("start", 0))
    if kind == "small":
        return gen.small_table(n, start)
    if kind == "mixed":
        return gen.mixed_table(n, start)
    if kind == "nested":
        return gen.nested_table(n, start)
    if kind == "all_types":
        return gen.all_types_table(n)
    if kind == "ids":
        return _ids_table(n, start)
    if kind == "upsert":  # for merge_insert: small's columns with other values, some null
        ids = np.arange(start, start + n, dtype=np.int64)
        return pa.table({"id": pa.array(ids), "category": pa.array(
            [None if i % 5 == 0 else f"u{i % 4}" for i in ids], pa.string())})
    if kind == "keyed":  # for merge: id plus a derived column
        ids = np.arange(start, start + n, dtype=np.int64)
        return pa.table({"id": pa.array(ids), "score": pa.array(ids.astype(np.float64) * 1.5)})
    raise ValueError(f"unknown data generator {kind!r}")


def commits(op: dict) -> bool:
    """Whether ``op`` makes a new version."""
    return op["op"] not in ("tag", "read")


def merge_insert_clauses(op: dict) -> dict:
    """The keyword arguments of a ``merge_insert`` step for
    :func:`reference_impl.merge_insert.plan` (and ``Dataset.merge_insert``)."""
    matched = op.get("when_matched_update_all")
    by_source = op.get("when_not_matched_by_source_delete")
    return {"update": matched is not None and matched is not False,
            "condition": matched.get("condition") if isinstance(matched, dict) else None,
            "insert": bool(op.get("when_not_matched_insert_all")),
            "delete_by_source": by_source is not None and by_source is not False,
            "where": by_source.get("where") if isinstance(by_source, dict) else None}


# -- the model -------------------------------------------------------------------------------

def _eval(table: pa.Table, expr: pc.Expression) -> pa.Array:
    import pyarrow.dataset as pds

    out = pds.dataset(table).to_table(columns={"v": expr})
    return out.column("v").combine_chunks()


def _mask(table: pa.Table, where: str | None) -> pa.Array:
    """The rows a ``where`` predicate matches (true only where it is true: SQL's
    three-valued logic, :mod:`reference_impl.predicate`); every row when None."""
    from reference_impl.predicate import matches

    if where is None:
        return pa.array(np.ones(table.num_rows, dtype=bool))
    return matches(table, where)


@dataclass
class Model:
    """The logical state a script leads to: rows per version and the tags."""

    versions: dict[int, pa.Table] = field(default_factory=dict)
    tags: dict[str, int] = field(default_factory=dict)
    config: dict[str, str] = field(default_factory=dict)
    stable_row_ids: bool = False  # the tables of ``versions`` then carry ``_rowid``
    next_row_id: int = 0
    reads: list[tuple[int, dict]] = field(default_factory=list)  # (version, read step)
    storage_version: str | None = None  # the data storage version ``create`` asked for

    @property
    def latest(self) -> int:
        return max(self.versions) if self.versions else 0

    def rows(self, version: int, *, with_row_id: bool = False) -> pa.Table:
        """The rows expected at ``version``; ``_rowid`` last when asked (stable row ids)."""
        t = self.versions[version]
        if ROW_ID not in t.column_names:
            return t
        rest = t.drop_columns([ROW_ID])
        return rest.append_column(t.schema.field(ROW_ID), t.column(ROW_ID)) if with_row_id else rest

    def _new_rows(self, t: pa.Table) -> pa.Table:
        """``t`` with fresh stable row ids (when the table has them)."""
        if not self.stable_row_ids:
            return t
        ids = np.arange(self.next_row_id, self.next_row_id + t.num_rows, dtype=np.uint64)
        self.next_row_id += t.num_rows
        return t.append_column(pa.field(ROW_ID, pa.uint64()), pa.array(ids, pa.uint64()))

    def read_answer(self, op: dict, version: int | None = None) -> pa.Table:
        """The rows a filtered ``read`` step must return at ``version`` (the latest when
        None): the rows the filter is true for, the columns listed (all when none)."""
        t = self.rows(self.latest if version is None else version)
        if op.get("filter") is not None:
            t = t.filter(_mask(t, op["filter"]))
        return t.select(list(op["columns"])) if op.get("columns") else t

    def _merge_insert(self, cur: pa.Table, op: dict) -> pa.Table:
        from reference_impl import merge_insert as mi

        source = table_for(op["data"])
        user = [n for n in cur.column_names if n != ROW_ID]
        target = cur.select(user)
        p = mi.plan(target, source, op["on"], **merge_insert_clauses(op))
        new = mi.apply_plan(target, source, p)
        if ROW_ID not in cur.column_names:
            return new
        # the rows that stay and the updated ones keep their ids; inserted rows take fresh ids
        ids = cur.column(ROW_ID).to_numpy()
        gone = {t for t, _ in p.updated} | set(p.deleted)
        kept = [i for i in range(cur.num_rows) if i not in gone]
        fresh = np.arange(self.next_row_id, self.next_row_id + len(p.inserted), dtype=np.uint64)
        self.next_row_id += len(p.inserted)
        column = np.concatenate([ids[kept], ids[[t for t, _ in p.updated]], fresh]).astype(np.uint64)
        return new.append_column(pa.field(ROW_ID, pa.uint64()), pa.array(column, pa.uint64()))

    def apply(self, op: dict) -> None:
        kind = op["op"]
        cur = self.versions.get(self.latest)
        if kind == "read":
            self.reads.append((self.latest, op))
            return
        if kind == "tag":
            if op.get("action", "create") == "delete":
                self.tags.pop(op["name"], None)
            else:
                self.tags[op["name"]] = int(op.get("version") or self.latest)
            return
        if kind == "create":
            self.stable_row_ids = bool(op.get("stable_row_ids", False))
            self.storage_version = op.get("data_storage_version")
            new = self._new_rows(table_for(op["data"]))
        elif kind == "overwrite":
            new = self._new_rows(table_for(op["data"]))
        elif kind == "append":
            user = [n for n in cur.column_names if n != ROW_ID]
            added = self._new_rows(table_for(op["data"]).select(user))
            new = pa.concat_tables([cur, added.select(cur.column_names)])
        elif kind == "delete":
            new = cur.filter(pc.invert(_mask(cur, op["where"])))
        elif kind == "update":
            from reference_impl.predicate import parse_predicate

            mask = _mask(cur, op.get("where"))
            cols = {}
            for name in cur.column_names:
                col = cur.column(name).combine_chunks()
                if name in op["set"]:
                    value = _eval(cur, parse_predicate(op["set"][name], set(cur.column_names)))
                    col = pc.if_else(mask, value.cast(col.type), col)
                cols[name] = col
            new = pa.table(cols, schema=cur.schema)
        elif kind == "add_columns":
            new = cur
            for name, alias in op["columns"]:
                t = pa.type_for_alias(alias)
                new = new.append_column(pa.field(name, t), pa.nulls(new.num_rows, t))
        elif kind == "merge":
            other = table_for(op["data"])
            key = op["on"]
            idx = pc.index_in(cur.column(key), value_set=other.column(key))
            new = cur
            for name in other.column_names:
                if name != key:
                    new = new.append_column(other.schema.field(name), other.column(name).take(idx))
        elif kind == "merge_insert":
            new = self._merge_insert(cur, op)
        elif kind == "drop_columns":
            new = cur.drop_columns(op["columns"])
        elif kind == "compact":
            # ReserveFragments (ids for the new fragments), then Rewrite: two versions,
            # as both pylance 14 and the reference writer commit a compaction
            self.versions[self.latest + 1] = cur
            new = cur
        elif kind == "create_index":  # an index changes no rows
            new = cur
        elif kind == "restore":
            new = self.versions[int(op["version"])]
        elif kind == "update_config":
            self.config.update(op["values"])
            new = cur
        else:
            raise ValueError(f"unknown operation {kind!r}")
        self.versions[self.latest + 1] = new


def run_model(script: list[dict]) -> Model:
    m = Model()
    for op in script:
        m.apply(op)
    return m


# -- comparing rows --------------------------------------------------------------------------

def _sortable(t: pa.DataType) -> bool:
    return (pa.types.is_integer(t) or pa.types.is_floating(t) and t != pa.float16()
            or pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_boolean(t)
            or pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_temporal(t))


def normalize(table: pa.Table, *, keep_row_id: bool = False) -> pa.Table:
    """``table`` in a canonical row order (sorted on ``id``, then on every other sortable
    column), one chunk, without ``_rowid`` unless asked."""
    if not keep_row_id and ROW_ID in table.column_names:
        table = table.drop_columns([ROW_ID])
    for i, f in enumerate(table.schema):
        if pa.types.is_dictionary(f.type):
            table = table.set_column(i, f, _without_null_items(table.column(i)))
    keys = [n for n in table.column_names if _sortable(table.schema.field(n).type)]
    keys.sort(key=lambda n: (n != "id", n != ROW_ID))
    if keys and table.num_rows:
        table = table.sort_by([(k, "ascending") for k in keys])
    return table.combine_chunks()


def _without_null_items(col: pa.ChunkedArray) -> pa.ChunkedArray:
    """Dictionary chunks whose dictionary holds a null (pylance's 2.0 null item) re-encoded
    with null indices instead: Arrow cannot unify dictionaries holding nulls."""
    t = col.type
    return pa.chunked_array(
        [c.cast(t.value_type).dictionary_encode().cast(t) if c.dictionary.null_count else c
         for c in col.chunks], t)


def _row_id_last(t: pa.Table) -> pa.Table:
    if ROW_ID not in t.column_names or t.column_names[-1] == ROW_ID:
        return t
    return t.select([n for n in t.column_names if n != ROW_ID] + [ROW_ID])


def _plain(v):
    """A Python value with NaN replaced by a marker, so that NaN equals NaN."""
    if isinstance(v, float) and v != v:
        return "<NaN>"
    if isinstance(v, list | tuple):
        return [_plain(x) for x in v]
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    return v


def _same_values(a: pa.ChunkedArray, e: pa.ChunkedArray) -> bool:
    """Equal values (dictionaries by their values and temporal values by their stored
    integers, at any depth: :mod:`conformance.engine.compare`; NaN equal to NaN)."""
    from conformance.engine.compare import plain

    a, e = plain(a), plain(e)
    if a.equals(e):
        return True
    return _plain(a.to_pylist()) == _plain(e.to_pylist())


def difference(actual: pa.Table, expected: pa.Table, *, keep_row_id: bool = False) -> str | None:
    """None when ``actual`` holds the rows of ``expected`` (as multisets, same columns in
    the same order, ``_rowid`` last, same types; dictionary columns by their values, NaN
    equal to NaN); else a short description of the first difference."""
    a = normalize(_row_id_last(actual), keep_row_id=keep_row_id)
    e = normalize(_row_id_last(expected), keep_row_id=keep_row_id)
    if a.column_names != e.column_names:
        return f"columns {a.column_names} != expected {e.column_names}"
    if a.num_rows != e.num_rows:
        return f"{a.num_rows} rows != expected {e.num_rows}"
    for name in e.column_names:
        ca, ce = a.column(name), e.column(name)
        if ca.type != ce.type:
            return f"column {name!r}: type {ca.type} != expected {ce.type}"
        if not _same_values(ca, ce):
            return f"column {name!r}: values differ"
    return None


# -- the writer scenarios --------------------------------------------------------------------

def _small(n: int, start: int = 0) -> dict:
    return {"gen": "small", "n": n, "start": start}


def _create(data: dict | None = None, **kw) -> dict:
    return {"op": "create", "data": data or _small(20), **kw}


WRITER_SCENARIOS: dict[str, dict] = {
    "write.create": {"title": "create a dataset", "script": [_create()]},
    "write.create-2.0": {"title": "create with data storage version 2.0",
                         "script": [_create({"gen": "mixed", "n": 12}, data_storage_version="2.0")]},
    "write.create-2.1": {"title": "create with data storage version 2.1",
                         "script": [_create({"gen": "mixed", "n": 12}, data_storage_version="2.1")]},
    "write.create-v1-names": {"title": "create with V1 manifest names",
                              "script": [_create(v2_manifest_paths=False),
                                         {"op": "append", "data": _small(5, 20)}]},
    "write.append": {"title": "append twice", "script": [
        _create(), {"op": "append", "data": _small(7, 20)}, {"op": "append", "data": _small(3, 27)}]},
    "write.overwrite": {"title": "overwrite with other rows", "script": [
        _create(), {"op": "overwrite", "data": _small(5, 100)}]},
    "write.delete": {"title": "delete a few rows (Arrow deletion file) with filters as users "
                              "write them", "script": [
        _create(), {"op": "delete", "where": "id % 7 = 0"},
        {"op": "delete", "where": "abs(id - 10) < 2"}]},
    "write.delete-fragment": {"title": "delete every row of a fragment", "script": [
        _create(_small(10)), {"op": "append", "data": _small(10, 10)},
        {"op": "delete", "where": "id >= 10"}]},
    "write.update": {"title": "update rows", "script": [
        _create(), {"op": "update", "set": {"category": "'changed'"},
                    "where": "id > 15 AND category NOT IN ('c7', 'c9')"}]},
    "write.add-columns": {"title": "add an all-null column", "script": [
        _create(), {"op": "add_columns", "columns": [["extra", "int32"]]}]},
    "write.merge": {"title": "merge a column on id", "script": [
        _create(), {"op": "merge", "data": {"gen": "keyed", "n": 20}, "on": "id"}]},
    "write.merge-insert": {"title": "merge_insert: update matched rows where a condition over "
                                    "target and source holds, insert the others, delete rows "
                                    "the source lacks where a filter holds", "script": [
        _create(), {"op": "merge_insert", "data": {"gen": "upsert", "n": 10, "start": 15}, "on": ["id"],
                    "when_matched_update_all": {"condition": "source.id % 2 = 1 OR "
                                                             "target.category = 'c8' OR "
                                                             "source.category IS NULL"},
                    "when_not_matched_insert_all": True,
                    "when_not_matched_by_source_delete": {"where": "id % 3 = 0"}},
        {"op": "merge_insert", "data": _small(5, 22), "on": ["id"],
         "when_matched_update_all": {}, "when_not_matched_insert_all": True}]},
    "write.filtered-read": {"title": "filtered reads of the latest version, with and without "
                                     "a projection", "script": [
        _create(), {"op": "read", "filter": "id % 3 = 0 AND category NOT IN ('c3')"},
        {"op": "delete", "where": "id < 4"},
        {"op": "read", "filter": "category LIKE 'c1%' OR abs(id - 10) < 3",
         "columns": ["category", "id"]}]},
    "write.drop-columns": {"title": "drop a column", "script": [
        _create(), {"op": "drop_columns", "columns": ["category"]}]},
    "write.compact": {"title": "compact small fragments", "script": [
        _create(_small(5)), {"op": "append", "data": _small(5, 5)},
        {"op": "append", "data": _small(5, 10)}, {"op": "delete", "where": "id BETWEEN 7 AND 7"},
        {"op": "compact", "target_rows_per_fragment": 1000}]},
    "write.tag": {"title": "create, move and delete tags", "script": [
        _create(), {"op": "append", "data": _small(2, 20)},
        {"op": "tag", "action": "create", "name": "first", "version": 1},
        {"op": "tag", "action": "create", "name": "moving", "version": 1},
        {"op": "tag", "action": "update", "name": "moving", "version": 2},
        {"op": "tag", "action": "delete", "name": "first"}]},
    "write.restore": {"title": "restore an old version", "script": [
        _create(), {"op": "delete", "where": "NOT (id >= 10)"}, {"op": "restore", "version": 1}]},
    "write.config": {"title": "set table config", "script": [
        _create(), {"op": "update_config", "values": {"lance.test.key": "value"}}]},
    "write.stale-append": {"title": "append by a writer that read an older version "
                                   "(must rebase, never overwrite a manifest)", "script": [
        _create(), {"op": "append", "data": _small(2, 20)},
        {"op": "append", "data": _small(3, 30), "read_version": 1}]},
    "write.stable-row-ids": {"title": "stable row ids through delete and update", "script": [
        _create(stable_row_ids=True), {"op": "delete", "where": "id IN (0, 1)"},
        {"op": "update", "set": {"category": "'u'"}, "where": "id = 5"}]},
}
