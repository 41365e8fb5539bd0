"""The conflict matrix (``reference_impl.table.conflicts``) against real commits.

Every case: a dataset at v1 with fragments 0 and 1 (4 rows each); two writers build a
transaction at ``read_version=1``; *theirs* commits first (v2), then *ours* commits from
the stale read version. The outcome (``ok``, ``retry`` = CommitConflict retryable,
``incompat`` = CommitConflict not retryable) must match :data:`OBSERVED`, the table
recorded with pylance 14.0.2 (both commits through ``lance.LanceDataset.commit``).
Each cell is run three ways: both writers ours; pylance commits theirs and we commit
ours; we commit theirs and pylance commits ours (pylance then reads our transaction).
The default run has every cell with our writers and, against pylance, one cell per
verdict class (:data:`REPRESENTATIVES`); ``-m slow`` runs every cell against pylance.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from reference_impl.errors import CommitConflict
from reference_impl.io.local import LocalStore
from reference_impl.table import commit, conflicts, operations
from reference_impl.table.deletion import write_deletion_file
from reference_impl.table.schema import arrow_to_fields, max_field_id
from reference_impl.write import write_dataset, write_fragments

from .test_commit import FV

NAMES = ["Append", "Delete0", "Delete1", "DelAll0", "Update0", "Update1", "Overwrite",
         "Rewrite0", "Rewrite1", "Merge", "Restore", "Config1", "Config2"]

# Observed with pylance 14.0.2: row = ours (committed second, stale), column = theirs.
# ours \ theirs:  Append   Delete0   Delete1   DelAll0   Update0   Update1 Overwrite  Rewrite0  Rewrite1     Merge   Restore   Config1   Config2
_OBSERVED_ROWS = {
    "Append":    "      ok        ok        ok        ok        ok        ok  incompat        ok        ok     retry  incompat        ok        ok",
    "Delete0":   "      ok     retry        ok     retry     retry        ok  incompat     retry        ok     retry  incompat        ok        ok",
    "Delete1":   "      ok        ok     retry        ok        ok     retry  incompat        ok     retry     retry  incompat        ok        ok",
    "DelAll0":   "      ok     retry        ok     retry     retry        ok  incompat     retry        ok     retry  incompat        ok        ok",
    "Update0":   "      ok     retry        ok     retry     retry        ok  incompat     retry        ok     retry  incompat        ok        ok",
    "Update1":   "      ok        ok     retry        ok        ok     retry  incompat        ok     retry     retry  incompat        ok        ok",
    "Overwrite": "      ok        ok        ok        ok        ok        ok     retry        ok        ok        ok        ok        ok        ok",
    "Rewrite0":  "      ok     retry        ok     retry     retry        ok  incompat     retry        ok     retry  incompat        ok        ok",
    "Rewrite1":  "      ok        ok     retry        ok        ok     retry  incompat        ok     retry     retry  incompat        ok        ok",
    "Merge":     "   retry     retry     retry     retry     retry     retry  incompat     retry     retry     retry  incompat        ok        ok",
    "Restore":   "      ok        ok        ok        ok        ok        ok        ok        ok        ok        ok        ok        ok        ok",
    "Config1":   "      ok        ok        ok        ok        ok        ok        ok        ok        ok        ok        ok  incompat        ok",
    "Config2":   "      ok        ok        ok        ok        ok        ok        ok        ok        ok        ok        ok        ok  incompat",
}
OBSERVED = {(ours, theirs): cell for ours, row in _OBSERVED_ROWS.items()
            for theirs, cell in zip(NAMES, row.split(), strict=True)}
CASES = sorted(OBSERVED)

#: The pylance cross-runs of the default run: one cell per verdict class. Every other cell
#: runs against pylance under ``-m slow``; our own writers run every cell by default.
REPRESENTATIVES = {"ok": ("Append", "Delete1"), "retry": ("Delete0", "Update0"),
                   "incompat": ("Append", "Overwrite")}


def _cross_cases():
    keep = set(REPRESENTATIVES.values())
    return [pytest.param(o, t, id=f"{o}-after-{t}",
                         marks=() if (o, t) in keep else pytest.mark.slow) for o, t in CASES]


def base_table() -> pa.Table:
    return pa.table({"id": pa.array(np.arange(8), pa.int64()), "x": pa.array(np.arange(8), pa.int64())})


def make_base(root) -> LocalStore:
    write_dataset(base_table(), str(root), max_rows_per_file=4, data_storage_version=FV)
    return LocalStore(root)


# -- our transactions ---------------------------------------------------------------------
def ours_txn(name: str, store: LocalStore):
    mf = commit.load_version(store, 1)
    m = mf.manifest
    frags = {f.id: f for f in m.fragments}
    fields = list(m.fields)

    def rows(ids, x=None):
        ids = np.asarray(ids, dtype=np.int64)
        return pa.table({"id": ids, "x": ids if x is None else np.full(len(ids), x, np.int64)})

    def with_deletion(i, offsets):
        f = type(frags[i])()
        f.CopyFrom(frags[i])
        f.deletion_file.CopyFrom(write_deletion_file(store, i, 1, offsets))
        return f

    if name == "Append":
        return operations.append(1, write_fragments(store, rows([100]), fields, file_version=FV))
    if name.startswith("Delete"):
        i = int(name[-1])
        return operations.delete(1, [with_deletion(i, [0])], [], f"id = {4 * i}")
    if name.startswith("DelAll"):
        return operations.delete(1, [], [int(name[-1])], "x < 4")
    if name.startswith("Update"):
        i = int(name[-1])
        new = write_fragments(store, rows([4 * i + 1], 99), fields, file_version=FV)
        return operations.update(1, updated=[with_deletion(i, [1])], new=new, fields_modified=[1])
    if name == "Overwrite":
        return operations.overwrite(1, write_fragments(store, rows([7], 7), fields, file_version=FV), fields)
    if name.startswith("Rewrite"):
        i = int(name[-1])
        new = write_fragments(store, rows(range(4 * i, 4 * i + 4)), fields, file_version=FV)
        return operations.rewrite(1, [([frags[i]], new)])
    if name == "Merge":
        from reference_impl.file.writer import write_lance_file
        from reference_impl.write import new_data_file_name

        y = arrow_to_fields(pa.schema([("y", pa.int64())]), start_id=max_field_id(fields) + 1)
        out = []
        for f in m.fragments:
            nm = new_data_file_name()
            wf = write_lance_file(store, f"data/{nm}", pa.table({"y": pa.array([1] * f.physical_rows, pa.int64())}),
                                  version=FV, schema_fields=y)
            g = type(f)()
            g.CopyFrom(f)
            g.files.add(path=nm, fields=wf.fields, column_indices=wf.column_indices,
                        file_major_version=wf.major, file_minor_version=wf.minor, file_size_bytes=wf.size)
            out.append(g)
        return operations.merge(1, out, fields + y)
    if name == "Restore":
        return operations.restore(1, 1)
    if name.startswith("Config"):
        return operations.update_config(1, config={"k" + name[-1]: "v"})
    raise KeyError(name)


def ours_commit(store, txn) -> str:
    try:
        commit.commit_transaction(store, txn)
        return "ok"
    except CommitConflict as exc:
        return "retry" if exc.retryable else "incompat"


# -- pylance's transactions ---------------------------------------------------------------
def pylance_op(lance, name: str, uri: str):
    from lance.fragment import LanceFragment

    LO = lance.LanceOperation
    ds = lance.dataset(uri, version=1)
    frags = ds.get_fragments()

    def new(ids, x=None):
        ids = np.asarray(ids, dtype=np.int64)
        t = pa.table({"id": ids, "x": ids if x is None else np.full(len(ids), x, np.int64)})
        return LanceFragment.create(uri, t, data_storage_version=FV)

    if name == "Append":
        return LO.Append([new([100])])
    if name.startswith("Delete"):
        i = int(name[-1])
        return LO.Delete([frags[i].delete(f"id = {4 * i}")], [], f"id = {4 * i}")
    if name.startswith("DelAll"):
        return LO.Delete([], [int(name[-1])], "x < 4")
    if name.startswith("Update"):
        i = int(name[-1])
        return LO.Update(removed_fragment_ids=[], updated_fragments=[frags[i].delete(f"id = {4 * i + 1}")],
                         new_fragments=[new([4 * i + 1], 99)], fields_modified=[1])
    if name == "Overwrite":
        return LO.Overwrite(ds.schema, [new([7], 7)])
    if name.startswith("Rewrite"):
        i = int(name[-1])
        return LO.Rewrite([LO.RewriteGroup([frags[i].metadata], [new(range(4 * i, 4 * i + 4))])], [])
    if name == "Merge":
        out, schema = [], None
        for f in frags:
            md, schema = f.merge_columns(
                lambda b: pa.record_batch([pa.array([1] * b.num_rows, pa.int64())], ["y"]), columns=["id"])
            out.append(md)
        return LO.Merge(out, schema)
    if name == "Restore":
        return LO.Restore(1)
    if name.startswith("Config"):
        return LO.UpdateConfig(config_updates=LO.UpdateMap({"k" + name[-1]: "v"}, replace=False))
    raise KeyError(name)


def pylance_commit(lance, uri, op) -> str:
    try:
        lance.LanceDataset.commit(uri, op, read_version=1)
        return "ok"
    except OSError as exc:
        if type(exc).__name__ == "CommitConflictError" or hasattr(exc, "retryable"):
            return "retry" if exc.retryable else "incompat"
        raise


# -- the tests ------------------------------------------------------------------------------
def test_representatives_cover_each_verdict():
    assert {OBSERVED[cell] for cell in REPRESENTATIVES.values()} == set(OBSERVED.values())
    for verdict, cell in REPRESENTATIVES.items():
        assert OBSERVED[cell] == verdict


def test_matrix_is_one_total_table():
    for ours in conflicts.OPERATIONS:
        assert set(conflicts.MATRIX[ours]) == set(conflicts.OPERATIONS)
        for cell in conflicts.MATRIX[ours].values():
            assert cell in (conflicts.COMPATIBLE, conflicts.REBASE, conflicts.DISJOINT,
                            conflicts.RETRYABLE, conflicts.INCOMPATIBLE, conflicts.CONFIG)


@pytest.mark.parametrize("ours,theirs", CASES, ids=[f"{o}-after-{t}" for o, t in CASES])
def test_our_writers(tmp_path, ours, theirs):
    store = make_base(tmp_path / "ds")
    a, b = ours_txn(theirs, store), ours_txn(ours, store)
    assert ours_commit(store, a) == "ok"
    before = commit.latest_version_or_zero(store)
    outcome = ours_commit(store, b)
    assert outcome == OBSERVED[(ours, theirs)]
    assert commit.latest_version_or_zero(store) == before + (outcome == "ok")


@pytest.mark.parametrize("ours,theirs", _cross_cases())
def test_pylance_first_then_us(tmp_path, pylance, ours, theirs):
    root = tmp_path / "ds"
    store = make_base(root)
    theirs_op = pylance_op(pylance, theirs, str(root))
    our_txn = ours_txn(ours, store)
    assert pylance_commit(pylance, str(root), theirs_op) == "ok"
    outcome = ours_commit(store, our_txn)
    assert outcome == OBSERVED[(ours, theirs)]
    if outcome == "ok":
        pylance.dataset(str(root)).validate()


@pytest.mark.parametrize("ours,theirs", _cross_cases())
def test_us_first_then_pylance(tmp_path, pylance, ours, theirs):
    root = tmp_path / "ds"
    store = make_base(root)
    their_txn = ours_txn(theirs, store)
    pylance_ours = pylance_op(pylance, ours, str(root))
    assert ours_commit(store, their_txn) == "ok"
    assert pylance_commit(pylance, str(root), pylance_ours) == OBSERVED[(ours, theirs)]


def test_same_fragment_delete_is_retryable_and_caller_can_redo(tmp_path, pylance):
    """pylance 14.0.2 does not merge two deletion vectors: the loser is told to retry,
    and redoing the delete on the new version then succeeds with both deletions."""
    root = tmp_path / "ds"
    store = make_base(root)
    a = ours_txn("Delete0", store)
    assert ours_commit(store, a) == "ok"
    b = operations.delete(1, [], [], "id = 1")
    b.delete.updated_fragments.add().CopyFrom(commit.load_version(store, 1).manifest.fragments[0])
    b.delete.updated_fragments[0].deletion_file.CopyFrom(write_deletion_file(store, 0, 1, [1]))
    assert ours_commit(store, b) == "retry"
    redo = operations.delete(2, [], [], "id = 1")
    f = redo.delete.updated_fragments.add()
    f.CopyFrom(commit.load_version(store, 2).manifest.fragments[0])
    f.deletion_file.CopyFrom(write_deletion_file(store, 0, 2, [0, 1]))
    assert ours_commit(store, redo) == "ok"
    assert pylance.dataset(str(root)).to_table()["id"].to_pylist() == [2, 3, 4, 5, 6, 7]


def test_config_keys_decide_update_config_pairs():
    a = operations.update_config(1, config={"a": "1"})
    b = operations.update_config(1, config={"b": "1"})
    c = operations.update_config(1, config={"a": None})
    assert conflicts.check(a, b, 2).ok
    assert conflicts.check(a, c, 2).cell == conflicts.INCOMPATIBLE
    meta = operations.update_config(1, table_metadata={"a": "1"})
    assert conflicts.check(a, meta, 2).ok  # same name, different map


def test_missing_or_unknown_transactions_conflict():
    ours = operations.append(1, [])
    assert conflicts.check(ours, None, 2).cell == conflicts.INCOMPATIBLE
    from reference_impl.proto import transaction_pb2

    assert conflicts.check(ours, transaction_pb2.Transaction(), 2).cell == conflicts.INCOMPATIBLE
    with pytest.raises(CommitConflict) as exc:
        conflicts.raise_for(conflicts.check(ours, None, 2))
    assert exc.value.retryable is False and exc.value.other_version == 2
