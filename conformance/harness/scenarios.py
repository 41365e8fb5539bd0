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
    {"op": "drop_columns", "columns": ["name"]}
    {"op": "compact", "target_rows_per_fragment": N}
    {"op": "tag", "action": "create"|"update"|"delete", "name": "t", "version": N}
    {"op": "restore", "version": N}
    {"op": "update_config", "values": {"key": "value"}}

``DATA`` is ``{"gen": "small"|"mixed"|"all_types"|"nested"|"ids"|"keyed", "n": rows,
"start": first id, "drop": [columns]}``:
the rows are made by a deterministic generator, so a script is small, JSON and gives the
same rows every time. :func:`table_for` turns it into a pyarrow Table.

Every operation but ``tag`` commits one new version, ``compact`` two (ReserveFragments,
then Rewrite). :class:`Model` applies a script to
plain Arrow tables and returns the logical rows expected at every version; rows are
compared as multisets (sorted on every column, ``id`` first), since writers may place
updated rows in new fragments at the end.
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


def _generate(data: dict) -> pa.Table:
    from conformance.suite import scenarios as gen

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
    if kind == "keyed":  # for merge: id plus a derived column
        ids = np.arange(start, start + n, dtype=np.int64)
        return pa.table({"id": pa.array(ids), "score": pa.array(ids.astype(np.float64) * 1.5)})
    raise ValueError(f"unknown data generator {kind!r}")


def commits(op: dict) -> bool:
    """Whether ``op`` makes a new version."""
    return op["op"] != "tag"


# -- the model -------------------------------------------------------------------------------

def _eval(table: pa.Table, expr: pc.Expression) -> pa.Array:
    import pyarrow.dataset as pds

    out = pds.dataset(table).to_table(columns={"v": expr})
    return out.column("v").combine_chunks()


def _mask(table: pa.Table, where: str | None) -> pa.Array:
    from reference_impl.dataset_ops import parse_predicate

    if where is None:
        return pa.array(np.ones(table.num_rows, dtype=bool))
    m = _eval(table, parse_predicate(where, set(table.column_names)))
    return pc.fill_null(m, False)


@dataclass
class Model:
    """The logical state a script leads to: rows per version and the tags."""

    versions: dict[int, pa.Table] = field(default_factory=dict)
    tags: dict[str, int] = field(default_factory=dict)
    config: dict[str, str] = field(default_factory=dict)

    @property
    def latest(self) -> int:
        return max(self.versions) if self.versions else 0

    def apply(self, op: dict) -> None:
        kind = op["op"]
        cur = self.versions.get(self.latest)
        if kind == "tag":
            if op.get("action", "create") == "delete":
                self.tags.pop(op["name"], None)
            else:
                self.tags[op["name"]] = int(op.get("version") or self.latest)
            return
        if kind in ("create", "overwrite"):
            new = table_for(op["data"])
        elif kind == "append":
            new = pa.concat_tables([cur, table_for(op["data"]).select(cur.column_names)])
        elif kind == "delete":
            new = cur.filter(pc.invert(_mask(cur, op["where"])))
        elif kind == "update":
            from reference_impl.dataset_ops import parse_predicate

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
        elif kind == "drop_columns":
            new = cur.drop_columns(op["columns"])
        elif kind == "compact":
            # ReserveFragments (ids for the new fragments), then Rewrite: two versions,
            # as both pylance 14 and the reference writer commit a compaction
            self.versions[self.latest + 1] = cur
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
    keys = [n for n in table.column_names if _sortable(table.schema.field(n).type)]
    keys.sort(key=lambda n: (n != "id", n != ROW_ID))
    if keys and table.num_rows:
        table = table.sort_by([(k, "ascending") for k in keys])
    return table.combine_chunks()


def difference(actual: pa.Table, expected: pa.Table, *, keep_row_id: bool = False) -> str | None:
    """None when ``actual`` holds the rows of ``expected`` (as multisets, same columns in
    the same order, same types); else a short description of the first difference."""
    a = normalize(actual, keep_row_id=keep_row_id)
    e = normalize(expected, keep_row_id=keep_row_id)
    if a.column_names != e.column_names:
        return f"columns {a.column_names} != expected {e.column_names}"
    if a.num_rows != e.num_rows:
        return f"{a.num_rows} rows != expected {e.num_rows}"
    for name in e.column_names:
        ca, ce = a.column(name), e.column(name)
        if ca.type != ce.type:
            return f"column {name!r}: type {ca.type} != expected {ce.type}"
        if not ca.equals(ce):
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
    "write.delete": {"title": "delete a few rows (Arrow deletion file)", "script": [
        _create(), {"op": "delete", "where": "id < 3"}, {"op": "delete", "where": "id = 10"}]},
    "write.delete-fragment": {"title": "delete every row of a fragment", "script": [
        _create(_small(10)), {"op": "append", "data": _small(10, 10)},
        {"op": "delete", "where": "id >= 10"}]},
    "write.update": {"title": "update rows", "script": [
        _create(), {"op": "update", "set": {"category": "'changed'"}, "where": "id > 15"}]},
    "write.add-columns": {"title": "add an all-null column", "script": [
        _create(), {"op": "add_columns", "columns": [["extra", "int32"]]}]},
    "write.merge": {"title": "merge a column on id", "script": [
        _create(), {"op": "merge", "data": {"gen": "keyed", "n": 20}, "on": "id"}]},
    "write.drop-columns": {"title": "drop a column", "script": [
        _create(), {"op": "drop_columns", "columns": ["category"]}]},
    "write.compact": {"title": "compact small fragments", "script": [
        _create(_small(5)), {"op": "append", "data": _small(5, 5)},
        {"op": "append", "data": _small(5, 10)}, {"op": "delete", "where": "id = 7"},
        {"op": "compact", "target_rows_per_fragment": 1000}]},
    "write.tag": {"title": "create, move and delete tags", "script": [
        _create(), {"op": "append", "data": _small(2, 20)},
        {"op": "tag", "action": "create", "name": "first", "version": 1},
        {"op": "tag", "action": "create", "name": "moving", "version": 1},
        {"op": "tag", "action": "update", "name": "moving", "version": 2},
        {"op": "tag", "action": "delete", "name": "first"}]},
    "write.restore": {"title": "restore an old version", "script": [
        _create(), {"op": "delete", "where": "id < 10"}, {"op": "restore", "version": 1}]},
    "write.config": {"title": "set table config", "script": [
        _create(), {"op": "update_config", "values": {"lance.test.key": "value"}}]},
    "write.stale-append": {"title": "append by a writer that read an older version "
                                   "(must rebase, never overwrite a manifest)", "script": [
        _create(), {"op": "append", "data": _small(2, 20)},
        {"op": "append", "data": _small(3, 30), "read_version": 1}]},
    "write.stable-row-ids": {"title": "stable row ids through delete and update", "script": [
        _create(stable_row_ids=True), {"op": "delete", "where": "id < 2"},
        {"op": "update", "set": {"category": "'u'"}, "where": "id = 5"}]},
}
