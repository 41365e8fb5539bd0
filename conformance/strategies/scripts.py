"""Hypothesis strategies for operation scripts (:mod:`conformance.harness.scenarios`) whose
every step is legal for the state the steps before it lead to.

The model of ``scenarios.py`` is the oracle: :func:`scripts` applies each drawn step to a
:class:`~conformance.harness.scenarios.Model` and draws the next one from the rows,
columns, versions and tags the model holds, so that

* an ``append`` carries rows of the current schema with fresh, unique ``id`` values; with
  ``read_version`` only when every version since that one was an append of that schema
  (so the commit must rebase and cannot conflict);
* ``delete``/``update`` predicates are filters as users write them over the columns that
  exist (:mod:`conformance.strategies.predicates`: arithmetic and modulo, functions,
  ``LIKE``, ``IN``, ``BETWEEN``, ``IS [NOT] NULL``, nested fields, ``NOT``/``AND``/``OR``
  over nullable columns), and ``update`` sets a column whose type has a SQL literal to a
  literal of that type, or an integer column to ``id % k``;
* ``merge`` brings one new column of a primitive kind keyed on existing (and a few unknown)
  ids, never empty (pylance 14 refuses an empty one: "HashJoiner: No data");
* ``merge_insert`` brings rows of the current schema keyed on ``id`` (one or more ids the
  table holds, when it holds any, and one or two new ones, unique), with a drawn set of clauses (never a set that changes no row:
  then the new rows are inserted): ``when_matched_update_all`` with or without a
  condition over ``target.``/``source.`` columns, ``when_not_matched_insert_all``,
  ``when_not_matched_by_source_delete`` with or without a filter;
* ``read`` is a filtered read of the latest version (a filter, sometimes ``columns``);
* ``compact`` is drawn only when at least two fragments hold rows (it then commits two
  versions, as the model says; with nothing to compact a writer commits nothing);
* ``tag``/``restore`` name versions that exist, tags that exist (update, delete) or not
  (create).

Rows travel inline (``{"gen": "ipc", ...}``) so a script is self-contained. A
:class:`ScriptOptions` restricts what is drawn to what an implementation declares:
operations, column kinds, storage versions, V1 manifest names.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pyarrow as pa
from hypothesis import strategies as st

from conformance.harness import scenarios as sc

from . import schemas as S
from .predicates import predicates

# Simplest first: hypothesis shrinks a sampled choice toward the front of its list.
SCRIPT_OPS = ("append", "delete", "update", "overwrite", "add_columns", "merge", "drop_columns",
              "compact", "tag", "restore", "update_config", "merge_insert", "read")
ADD_COLUMN_ALIASES = ("int32", "int8", "int64", "float32", "float64", "string", "large_string",
                      "bool", "binary", "date32")
_ALIAS_KIND = {"int32": "int32", "int8": "int8", "int64": "int64", "float32": "float32",
               "float64": "float64", "string": "string", "large_string": "large_string",
               "bool": "bool", "binary": "binary", "date32": "date32"}


@dataclass(frozen=True)
class ScriptOptions:
    """What a script may contain."""

    ops: tuple[str, ...] = SCRIPT_OPS
    kinds: tuple[str, ...] = S.KINDS
    storage_versions: tuple[str, ...] = S.STORAGE_VERSIONS
    v1_names: bool = True          # create may ask for V1 manifest names
    stable_row_ids: bool = True    # create may turn stable row ids on
    max_ops: int = 5               # operations after the create
    max_rows: int = 8              # rows per written table
    max_columns: int = 3


@dataclass
class _State:
    """What the strategy tracks beside the model: fragments (as id sets) per version, the
    operation that made each version, the schema, names used."""

    model: sc.Model
    storage_version: str
    max_rows_per_file: int
    fragments: dict[int, list[set[int]]] = field(default_factory=dict)
    made_by: dict[int, str] = field(default_factory=dict)
    next_id: int = 0
    next_name: int = 0

    @property
    def latest(self) -> int:
        return self.model.latest

    def schema(self) -> pa.Schema:
        t = self.model.rows(self.latest)
        return t.schema

    def ids(self) -> list[int]:
        return self.model.rows(self.latest).column(S.ID).to_pylist()

    def fresh_name(self) -> str:
        self.next_name += 1
        return f"n{self.next_name}"

    def new_ids(self, n: int) -> list[int]:
        out = list(range(self.next_id, self.next_id + n))
        self.next_id += n
        return out


def _row_count(opts: ScriptOptions):
    """A number of rows, uniform over 0..max_rows (shrinking toward 0)."""
    return st.sampled_from(range(opts.max_rows + 1))


def _split(ids: list[int], per_file: int) -> list[set[int]]:
    return [set(ids[i:i + per_file]) for i in range(0, len(ids), per_file)]


def _record(state: _State, op: dict, frags: list[set[int]]) -> None:
    """Apply ``op`` to the model and note the fragments of the versions it made."""
    before = state.latest
    state.model.apply(op)
    for v in range(before + 1, state.latest + 1):
        state.fragments[v] = [set(f) for f in frags if f]
        state.made_by[v] = op["op"] if not op.get("read_version") else "append"


def _literal(kind: str, draw) -> tuple[str, object]:
    if kind == "bool":
        v = draw(st.booleans())
        return ("true" if v else "false"), v
    if kind in ("string", "large_string"):
        v = draw(st.sampled_from(["", "x", "é ✓", "it's"]))
        return "'" + v.replace("'", "''") + "'", v
    if kind in ("float32", "float64"):
        v = draw(st.sampled_from([0.5, -2.25, 100.0]))
        return repr(v), v
    lo = 0 if kind.startswith("uint") else -100
    v = draw(st.integers(lo, 100))
    return str(v), v


def _predicate(draw, state: _State) -> str:
    """A filter over the latest rows (:mod:`conformance.strategies.predicates`)."""
    return draw(predicates(state.model.rows(state.latest)))


def _data_table(draw, state: _State, schema: pa.Schema, ids: list[int]) -> pa.Table:
    return draw(S.tables(schema, ids=ids, storage_version=state.storage_version))


def _legal_read_versions(state: _State) -> list[int]:
    """Versions a stale append may have read: every later version an append of the same
    schema (nothing to conflict with)."""
    out = []
    cur = state.schema()
    for rv in range(state.latest - 1, 0, -1):
        if state.made_by.get(rv + 1) != "append" or state.model.rows(rv).schema != cur:
            break
        out.append(rv)
    return sorted(out)


def _legal_ops(state: _State, opts: ScriptOptions) -> list[str]:
    schema = state.schema()
    user_cols = [f for f in schema if f.name != S.ID]
    legal = []
    for op in opts.ops:
        if op == "update" and not [f for f in user_cols if S.kind_of(f.type, f)
                                   in S.LITERAL_KINDS]:
            continue
        if op == "drop_columns" and not user_cols:
            continue
        if op == "merge" and not state.ids():
            continue
        if op == "compact" and len(state.fragments.get(state.latest, [])) < 2:
            continue
        if op == "restore" and state.latest < 2:
            continue
        if op == "add_columns" and not [a for a in ADD_COLUMN_ALIASES
                                        if _ALIAS_KIND[a] in opts.kinds]:
            continue
        if op == "merge_insert" and _blob_columns(schema):
            continue
        legal.append(op)
    return legal


def _draw_op(draw, state: _State, opts: ScriptOptions) -> tuple[dict, list[set[int]]]:
    """One legal operation and the fragments of the version it makes."""
    legal = _legal_ops(state, opts)
    # appends are drawn more often: several in a row make stale appends possible
    kind = draw(st.sampled_from((["append"] * 2 if "append" in legal else []) + legal))
    frags = [set(f) for f in state.fragments.get(state.latest, [])]
    schema = state.schema()
    user = pa.schema([f for f in schema if f.name != sc.ROW_ID])
    if kind == "append":
        ids = state.new_ids(draw(_row_count(opts)))
        op = {"op": "append", "data": sc.inline_data(_data_table(draw, state, user, ids))}
        stale = _legal_read_versions(state)
        if stale and draw(st.booleans()):
            op["read_version"] = draw(st.sampled_from(stale))
        return op, frags + ([set(ids)] if ids else [])
    if kind == "overwrite":
        if draw(st.booleans()):
            user = draw(S.schemas(opts.kinds, max_columns=opts.max_columns,
                                  prefix=state.fresh_name() + "_"))
        ids = state.new_ids(draw(_row_count(opts)))
        return ({"op": "overwrite", "data": sc.inline_data(_data_table(draw, state, user, ids))},
                [set(ids)] if ids else [])
    if kind == "delete":
        where = _predicate(draw, state)
        keep = _surviving(state, where)
        return {"op": "delete", "where": where}, [f & keep for f in frags]
    if kind == "update":
        cols = [f for f in user if f.name != S.ID and S.kind_of(f.type, f) in S.LITERAL_KINDS]
        target = draw(st.sampled_from(cols))
        text, _ = _literal(S.kind_of(target.type), draw)
        if pa.types.is_integer(target.type) and draw(st.booleans()):
            text = f"{S.ID} % {draw(st.integers(2, 7))}"  # an expression of the row
        op = {"op": "update", "set": {target.name: text}}
        moved = set(state.ids())
        if draw(st.booleans()):
            op["where"] = _predicate(draw, state)
            moved -= _surviving(state, op["where"])
        return op, [f - moved for f in frags] + ([moved] if moved else [])
    if kind == "add_columns":
        aliases = [a for a in ADD_COLUMN_ALIASES if _ALIAS_KIND[a] in opts.kinds]
        return ({"op": "add_columns", "columns": [[state.fresh_name(),
                                                   draw(st.sampled_from(aliases))]]}, frags)
    if kind == "merge":
        ids = state.ids()
        keys = draw(st.lists(st.sampled_from(ids), min_size=1, max_size=len(ids), unique=True))
        keys += state.new_ids(draw(st.integers(0, 1)))  # an id the dataset does not hold
        other = pa.schema([pa.field(S.ID, pa.int64(), nullable=False),
                           draw(S.fields(state.fresh_name(), _mergeable(opts.kinds)))])
        table = _data_table(draw, state, other, keys)
        return {"op": "merge", "data": sc.inline_data(table), "on": S.ID}, frags
    if kind == "merge_insert":
        return _draw_merge_insert(draw, state, user, frags)
    if kind == "read":
        return _draw_read(draw, state, user), frags
    if kind == "drop_columns":
        name = draw(st.sampled_from([f.name for f in user if f.name != S.ID]))
        return {"op": "drop_columns", "columns": [name]}, frags
    if kind == "compact":
        return ({"op": "compact", "target_rows_per_fragment": 1000},
                [set().union(*frags)])
    if kind == "tag":
        return _draw_tag(draw, state), frags
    if kind == "restore":
        v = draw(st.integers(1, state.latest - 1))
        return {"op": "restore", "version": v}, [set(f) for f in state.fragments[v]]
    key = draw(st.sampled_from(["lance.fuzz.a", "lance.fuzz.b", "other"]))
    return ({"op": "update_config", "values": {key: draw(st.sampled_from(["1", "x", "é"]))}},
            frags)


def _blob_columns(schema: pa.Schema) -> list[str]:
    return [f.name for f in schema if f.metadata and f.metadata.get(b"lance-encoding:blob") == b"true"]


def _draw_merge_insert(draw, state: _State, user: pa.Schema, frags: list[set[int]]):
    """A ``merge_insert`` on ``id``: source rows of the table's columns keyed on some ids the
    table holds and a few new ones (unique keys), and at least one clause, each condition
    drawn from the predicate strategies (the matched one over ``target.``/``source.``)."""
    from reference_impl import merge_insert as mi

    ids = state.ids()
    keys = draw(st.lists(st.sampled_from(ids), min_size=1, max_size=len(ids), unique=True)) \
        if ids else []  # one matched row at least: the clauses of matched rows do something
    keys += state.new_ids(draw(st.integers(1, 2)))  # one new key at least (see below)
    source = _data_table(draw, state, user, keys)
    target = state.model.rows(state.latest)
    op = {"op": "merge_insert", "data": sc.inline_data(source), "on": [S.ID]}
    clauses = draw(st.sampled_from(["update", "insert", "delete", "update+insert",
                                    "update+insert+delete", "insert+delete", "update+delete"]))
    if "update" in clauses:
        op["when_matched_update_all"] = (
            {"condition": draw(predicates(target, qualifiers=("target", "source")))}
            if draw(st.booleans()) else {})
    if "insert" in clauses:
        op["when_not_matched_insert_all"] = True
    if "delete" in clauses:
        op["when_not_matched_by_source_delete"] = (
            {"where": _predicate(draw, state)} if draw(st.booleans()) else {})
    # fragments: the updated and deleted rows leave theirs; updated and inserted rows are
    # counted as one new fragment (a writer writes one or more: compact is drawn only when
    # the fewest count allows it)
    p = mi.plan(target.select(user.names), source, [S.ID], **sc.merge_insert_clauses(op))
    if not (p.updated or p.inserted or p.deleted):
        # a merge that changes no row is never sent (Lance commits a version for it, DuckDB's
        # MERGE none): the new key is inserted instead
        op["when_not_matched_insert_all"] = True
        p = mi.plan(target.select(user.names), source, [S.ID], **sc.merge_insert_clauses(op))
    tid, sid = target.column(S.ID).to_pylist(), source.column(S.ID).to_pylist()
    moved = {tid[t] for t, _ in p.updated} | {tid[t] for t in p.deleted}
    written = {sid[s] for _, s in p.updated} | {sid[s] for s in p.inserted}
    return op, [f - moved for f in frags] + ([written] if written else [])


def _draw_read(draw, state: _State, user: pa.Schema) -> dict:
    """A filtered ``read`` of the latest version; with ``columns`` (``id`` and a drawn part
    of the others, in a drawn order) sometimes, and always when the table has blob columns
    (which read as descriptors: left out)."""
    op = {"op": "read", "filter": _predicate(draw, state)}
    blobs = _blob_columns(user)
    if blobs or draw(st.booleans()):
        others = [n for n in user.names if n != S.ID and n not in blobs]
        chosen = [S.ID] + draw(st.lists(st.sampled_from(others), unique=True)) if others else [S.ID]
        op["columns"] = list(draw(st.permutations(chosen)))
    return op


def _mergeable(kinds) -> tuple[str, ...]:
    """Kinds a merged column may take: primitive ones (the reference writer joins with
    pyarrow, which takes no nested or dictionary non-key column)."""
    out = tuple(k for k in kinds if k in S.PRIMITIVE_KINDS)
    return out or ("int64",)


def _surviving(state: _State, where: str) -> set[int]:
    """The ids at the latest version that ``where`` does not match."""
    t = state.model.rows(state.latest)
    if not t.num_rows:
        return set()
    import pyarrow.compute as pc

    mask = sc._mask(t, where)
    return set(t.filter(pc.invert(mask)).column(S.ID).to_pylist())


def _draw_tag(draw, state: _State) -> dict:
    tags = state.model.tags
    actions = ["create"] + (["update", "delete"] if tags else [])
    action = draw(st.sampled_from(actions))
    if action == "create":
        name = f"t{len(tags)}_{state.next_name}"
        state.next_name += 1
        return {"op": "tag", "action": "create", "name": name,
                "version": draw(st.integers(1, state.latest))}
    name = draw(st.sampled_from(sorted(tags)))
    if action == "update":
        return {"op": "tag", "action": "update", "name": name,
                "version": draw(st.integers(1, state.latest))}
    return {"op": "tag", "action": "delete", "name": name}


@st.composite
def create_ops(draw, opts: ScriptOptions = ScriptOptions()):
    """A ``create`` step (its options and rows) and the state it leads to."""
    version = draw(st.sampled_from(opts.storage_versions))
    op = {"op": "create", "data_storage_version": version}
    if opts.stable_row_ids and draw(st.booleans()):
        op["stable_row_ids"] = True
    if opts.v1_names and draw(st.integers(0, 3)) == 3:
        op["v2_manifest_paths"] = False
    per_file = draw(st.sampled_from([1024 * 1024, 3, 5]))
    if per_file != 1024 * 1024:
        op["max_rows_per_file"] = per_file
    schema = draw(S.schemas(tuple(opts.kinds), max_columns=opts.max_columns))
    state = _State(sc.Model(), version, per_file)
    ids = state.new_ids(draw(_row_count(opts)))
    op["data"] = sc.inline_data(draw(S.tables(schema, ids=ids, storage_version=version)))
    _record(state, op, _split(ids, per_file))
    return op, state


@st.composite
def scripts(draw, opts: ScriptOptions = ScriptOptions()):
    """An operation script: a ``create``, then up to ``opts.max_ops`` legal operations."""
    first, state = draw(create_ops(opts))
    script = [first]
    # a uniform choice of length (integers() would favour the ends), shrinking toward 0
    for _ in range(draw(st.sampled_from(range(opts.max_ops + 1)))):
        if not _legal_ops(state, opts):
            break
        op, frags = _draw_op(draw, state, opts)
        _record(state, op, frags)
        script.append(op)
    return script
