"""What a ``merge_insert`` does to the rows of a table: which target rows are replaced by
which source rows, which source rows are inserted and which target rows are deleted.

``merge_insert(on)`` joins the *source* rows (the rows the writer brings, with the table's
columns) to the *target* rows (the table's rows at the version it read) on the key columns
``on``, and then, as pylance 14.0.2's ``merge_insert`` builder does:

* ``when_matched_update_all(condition)``: a target row matched by a source row becomes that
  source row (every column), when ``condition`` is true for the pair; without a condition,
  every matched row. The condition is a filter (:mod:`reference_impl.predicate`) whose
  columns are qualified: ``target.x`` is the target row's ``x``, ``source.x`` the source
  row's (``target.x < source.x``); null counts as false. Without the clause a matched target
  row stays as it is;
* ``when_not_matched_insert_all()``: a source row no target row matches is inserted;
* ``when_not_matched_by_source_delete(where)``: a target row no source row matches is
  deleted, when ``where`` (a filter over the target's columns, unqualified: ``x > 3``) is
  true for it; without ``where``, every such row.

Keys match by equality: a null key matches nothing. A source holding two rows with the same
key that both match a target row is ambiguous, and refused (``InvalidInput``), as Lance
refuses it. Rows no clause names stay as they are.

:func:`plan` answers with positions only; :mod:`reference_impl.dataset_ops` writes them and
the kit's model of writer scripts (``conformance.harness.scenarios``) applies them to plain
tables.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from .errors import InvalidInput


@dataclass(frozen=True)
class MergePlan:
    """Positions in the target and source tables: ``updated`` pairs ``(target, source)``
    (the target row becomes the source row), ``inserted`` source rows, ``deleted`` target
    rows. Every target row not in ``updated`` or ``deleted`` stays."""

    updated: list[tuple[int, int]]
    inserted: list[int]
    deleted: list[int]


def _keys(table: pa.Table, on: list[str]) -> list[tuple | None]:
    """Each row's key tuple, None when a key column is null (it matches nothing)."""
    cols = [table.column(k).to_pylist() for k in on]
    return [None if any(v is None for v in row) else tuple(row) for row in zip(*cols, strict=True)] \
        if cols else []


def _pairs_table(target: pa.Table, source: pa.Table, pairs: list[tuple[int, int]]) -> pa.Table:
    """One row per matched pair: a struct column ``target`` and a struct column ``source``
    holding the pair's rows, so that ``target.x`` names the target row's ``x``."""
    ti = pa.array([t for t, _ in pairs], pa.int64())
    si = pa.array([s for _, s in pairs], pa.int64())

    def struct(t: pa.Table, idx) -> pa.StructArray:
        taken = t.take(idx).combine_chunks()
        return pa.StructArray.from_arrays([taken.column(i).combine_chunks() for i in range(taken.num_columns)],
                                          fields=list(taken.schema))

    return pa.table({"target": struct(target, ti), "source": struct(source, si)})


def plan(target: pa.Table, source: pa.Table, on, *, update: bool = False,
         condition: str | None = None, insert: bool = False, delete_by_source: bool = False,
         where: str | None = None) -> MergePlan:
    """The :class:`MergePlan` of a merge_insert of ``source`` into ``target`` on the key
    columns ``on`` (a name or a list), with the clauses asked (module docstring)."""
    from .predicate import matches

    on = [on] if isinstance(on, str) else list(on)
    if not on:
        raise InvalidInput("merge_insert needs at least one key column")
    for k in on:
        if k not in target.column_names or k not in source.column_names:
            raise InvalidInput(f"merge_insert key {k!r} must be a column of the table and of the source")
    by_key: dict[tuple, list[int]] = {}
    for i, key in enumerate(_keys(source, on)):
        if key is not None:
            by_key.setdefault(key, []).append(i)
    pairs: list[tuple[int, int]] = []
    unmatched_target: list[int] = []
    matched_source: set[int] = set()
    for t, key in enumerate(_keys(target, on)):
        hits = by_key.get(key, []) if key is not None else []
        if len(hits) > 1:
            raise InvalidInput(f"merge_insert: {len(hits)} source rows match one target row "
                               f"(key {key}); the merge is ambiguous")
        if hits:
            pairs.append((t, hits[0]))
            matched_source.add(hits[0])
        else:
            unmatched_target.append(t)
    updated: list[tuple[int, int]] = []
    if update and pairs:
        if condition is None:
            updated = list(pairs)
        else:
            hit = matches(_pairs_table(target, source, pairs), condition).to_numpy(zero_copy_only=False)
            updated = [p for p, h in zip(pairs, hit, strict=True) if h]
    inserted = [s for s in range(source.num_rows) if s not in matched_source] if insert else []
    deleted: list[int] = []
    if delete_by_source and unmatched_target:
        if where is None:
            deleted = list(unmatched_target)
        else:
            mask = matches(target, where).to_numpy(zero_copy_only=False)
            deleted = [t for t in unmatched_target if mask[t]]
    return MergePlan(updated, inserted, deleted)


def apply_plan(target: pa.Table, source: pa.Table, p: MergePlan) -> pa.Table:
    """The rows after the merge as one table of the target's columns: the target rows that
    stay, then the updated rows (source values), then the inserted rows. (A writer may place
    them anywhere: rows are compared as multisets.)"""
    gone = np.zeros(target.num_rows, dtype=bool)
    for t, _ in p.updated:
        gone[t] = True
    gone[p.deleted] = True
    stay = target.filter(pa.array(~gone))
    src = source.select(target.column_names).cast(target.schema)
    upd = src.take(pa.array([s for _, s in p.updated], pa.int64()))
    ins = src.take(pa.array(p.inserted, pa.int64()))
    return pa.concat_tables([stay, upd, ins])
