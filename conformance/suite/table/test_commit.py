"""The commit protocol of the reference writer (spec 001 "Committing Datasets",
REFS-NAMESPACE-COMMIT.md §8): files in order, the atomic manifest create, the version
hint, V1/V2 naming, retries under contention, and refusals that commit nothing."""

from __future__ import annotations

import threading

import numpy as np
import pyarrow as pa
import pytest

from reference_impl.errors import (
    AlreadyExists,
    CommitConflict,
    InvalidInput,
    NotFound,
    UnsupportedFeature,
)
from reference_impl.io.local import LocalStore
from reference_impl.io.uri import open_store
from reference_impl.proto import transaction_pb2
from reference_impl.table import commit, layout, operations
from reference_impl.table.manifest import encode_manifest_file, read_manifest_file
from reference_impl.write import write_dataset, write_fragments


def file_version() -> str:
    """The newest data storage version the file writer can write today (2.2, else 2.0):
    these tests are about commits, not encodings."""
    from reference_impl.file.writer import write_lance_file
    from reference_impl.io.memory import MemoryStore

    try:
        write_lance_file(MemoryStore(), "probe.lance", pa.table({"a": [1]}), version="2.2")
        return "2.2"
    except (ImportError, NotImplementedError):
        return "2.0"


FV = file_version()


def table(n: int, start: int = 0) -> pa.Table:
    ids = np.arange(start, start + n, dtype=np.int64)
    return pa.table({"id": ids, "s": pa.array([f"r{i}" for i in ids])})


def manifests(root) -> list[str]:
    return sorted(p.name for p in (root / "_versions").glob("*.manifest"))


def txns(root) -> list[str]:
    d = root / "_transactions"
    return sorted(p.name for p in d.glob("*.txn")) if d.exists() else []


def test_create_writes_data_txn_manifest_and_hint(tmp_path, pylance):
    root = tmp_path / "ds"
    write_dataset(table(10), str(root), max_rows_per_file=4, data_storage_version=FV, commit_message="first")
    assert manifests(root) == [layout.manifest_name_v2(1)]
    [txn_name] = txns(root)
    assert txn_name.startswith("0-") and txn_name.endswith(".txn")
    store = LocalStore(root)
    mf = read_manifest_file(store, f"_versions/{layout.manifest_name_v2(1)}")
    raw = (root / "_transactions" / txn_name).read_bytes()
    assert mf.transaction_bytes == raw, "inline transaction must equal the .txn file"
    assert mf.manifest.transaction_file == txn_name
    assert mf.transaction.WhichOneof("operation") == "overwrite"
    assert mf.transaction.transaction_properties["__lance_commit_message"] == "first"
    assert [f.id for f in mf.manifest.fragments] == [0, 1, 2]
    assert mf.manifest.max_fragment_id == 2
    assert (root / "_versions" / "latest_version_hint.json").read_bytes() == b'{"version":1}'
    ds = pylance.dataset(str(root))
    assert ds.to_table().equals(table(10))
    ds.validate()


def test_v1_names_stay_v1(tmp_path, pylance):
    root = tmp_path / "ds"
    write_dataset(table(3), str(root), enable_v2_manifest_paths=False, data_storage_version=FV)
    write_dataset(table(3, 3), str(root), mode="append", enable_v2_manifest_paths=True)
    assert manifests(root) == ["1.manifest", "2.manifest"]
    assert pylance.dataset(str(root)).to_table().equals(table(6))


def test_append_continues_fragment_ids_and_pylance_reads(tmp_path, pylance):
    root = tmp_path / "ds"
    write_dataset(table(5), str(root), max_rows_per_file=2, data_storage_version=FV)
    write_dataset(table(5, 5), str(root), mode="append", max_rows_per_file=2)
    ds = pylance.dataset(str(root))
    assert ds.version == 2
    assert [f.fragment_id for f in ds.get_fragments()] == [0, 1, 2, 3, 4, 5]
    assert ds.to_table().equals(table(10))
    ds.validate()


def _assert_nothing_committed(root, before_manifests, before_txns):
    assert manifests(root) == before_manifests
    assert txns(root) == before_txns


def test_append_with_incompatible_schema_commits_nothing(tmp_path):
    root = tmp_path / "ds"
    write_dataset(table(3), str(root), data_storage_version=FV)
    m, t = manifests(root), txns(root)
    with pytest.raises(InvalidInput):
        write_dataset(pa.table({"id": pa.array([1.5])}), str(root), mode="append")
    with pytest.raises(InvalidInput):
        write_dataset(pa.table({"id": pa.array(["x"]), "s": pa.array(["y"])}), str(root), mode="append")
    _assert_nothing_committed(root, m, t)
    assert len(list((root / "data").glob("*.lance"))) == 1, "refused before any data file was written"


def test_unknown_writer_flag_is_refused(tmp_path):
    root = tmp_path / "ds"
    write_dataset(table(3), str(root), data_storage_version=FV)
    store = LocalStore(root)
    key = f"_versions/{layout.manifest_name_v2(1)}"
    mf = read_manifest_file(store, key)
    mf.manifest.writer_feature_flags |= 1 << 40
    (root / key).write_bytes(encode_manifest_file(mf.manifest, transaction=mf.transaction_bytes))
    m, t = manifests(root), txns(root)
    with pytest.raises(UnsupportedFeature):
        write_dataset(table(1), str(root), mode="append")
    with pytest.raises(UnsupportedFeature):
        write_dataset(table(1), str(root), mode="overwrite")
    _assert_nothing_committed(root, m, t)


def test_create_on_existing_dataset_fails(tmp_path):
    root = tmp_path / "ds"
    write_dataset(table(1), str(root), data_storage_version=FV)
    with pytest.raises(AlreadyExists):
        write_dataset(table(1), str(root), mode="create")
    assert manifests(root) == [layout.manifest_name_v2(1)]


def test_memory_store_commits_without_hint():
    uri = "memory://commit-test/ds"
    write_dataset(table(4), uri, data_storage_version=FV)
    write_dataset(table(4, 4), uri, mode="append")
    store = open_store(uri)
    assert commit.latest_version_or_zero(store) == 2
    assert not store.exists(layout.VERSION_HINT_KEY)


def _append_txn(store, rv, rows, start):
    frags = write_fragments(store, table(rows, start), _fields(store), file_version=FV)
    return operations.append(rv, frags)


def _fields(store):
    latest = commit.latest_version_or_zero(store)
    return list(commit.load_version(store, latest).manifest.fields)


def test_stale_append_is_rebased_and_keeps_its_read_version(tmp_path, pylance):
    root = tmp_path / "ds"
    write_dataset(table(2), str(root), data_storage_version=FV)
    store = LocalStore(root)
    a = _append_txn(store, 1, 2, 100)
    b = _append_txn(store, 1, 2, 200)
    ra = commit.commit_transaction(store, a)
    rb = commit.commit_transaction(store, b)
    assert (ra.version, rb.version) == (2, 3)
    assert sum(n.startswith("1-") for n in txns(root)) == 2
    ds = pylance.dataset(str(root))
    assert [f.fragment_id for f in ds.get_fragments()] == [0, 1, 2]
    assert ds.read_transaction(3).read_version == 1
    assert sorted(ds.to_table()["id"].to_pylist()) == [0, 1, 100, 101, 200, 201]


def test_read_version_ahead_is_not_found(tmp_path):
    root = tmp_path / "ds"
    write_dataset(table(2), str(root), data_storage_version=FV)
    store = LocalStore(root)
    with pytest.raises(NotFound):
        commit.commit_transaction(store, _append_txn(store, 7, 1, 9))


def test_missing_transaction_is_a_conflict(tmp_path):
    root = tmp_path / "ds"
    write_dataset(table(2), str(root), data_storage_version=FV)
    write_dataset(table(2, 2), str(root), mode="append")
    store = LocalStore(root)
    key = f"_versions/{layout.manifest_name_v2(2)}"
    mf = read_manifest_file(store, key)
    mf.manifest.transaction_file = ""
    (root / key).write_bytes(encode_manifest_file(mf.manifest))  # neither inline nor .txn
    m, t = manifests(root), txns(root)
    with pytest.raises(CommitConflict) as exc:
        commit.commit_transaction(store, _append_txn(store, 1, 1, 50))
    assert exc.value.retryable is False
    _assert_nothing_committed(root, m, t)


def test_unknown_operation_is_a_conflict(tmp_path):
    root = tmp_path / "ds"
    write_dataset(table(2), str(root), data_storage_version=FV)
    store = LocalStore(root)
    theirs = transaction_pb2.Transaction(read_version=1, uuid="x")
    theirs.update_mem_wal_state.SetInParent()
    # commit v2 with an operation this writer does not rebase over
    prev = commit.load_version(store, 1)
    v2 = type(prev.manifest)()
    v2.CopyFrom(prev.manifest)
    v2.version = 2
    store.put_if_not_exists(layout.manifest_key(2, layout.SCHEME_V2),
                            encode_manifest_file(v2, transaction=theirs))
    with pytest.raises(CommitConflict) as exc:
        commit.commit_transaction(store, _append_txn(store, 1, 1, 50))
    assert exc.value.retryable is False


class AlwaysTaken(LocalStore):
    """A store whose manifest create always loses (to test the retry bound)."""

    calls = 0

    def put_if_not_exists(self, key, data):
        if key.startswith("_versions/"):
            type(self).calls += 1
            raise AlreadyExists(key)
        super().put_if_not_exists(key, data)


def test_retries_are_bounded_and_leave_no_txn(tmp_path, monkeypatch):
    root = tmp_path / "ds"
    write_dataset(table(2), str(root), data_storage_version=FV)
    monkeypatch.setattr(commit, "BACKOFF_BASE_S", 0.0)
    store = AlwaysTaken(root)
    t = txns(root)
    with pytest.raises(AlreadyExists):
        commit.commit_transaction(store, _append_txn(store, 1, 1, 5), max_retries=3)
    assert AlwaysTaken.calls == 4
    assert txns(root) == t


def test_four_contending_writers_all_land(tmp_path, pylance):
    root = tmp_path / "ds"
    write_dataset(table(1), str(root), data_storage_version=FV)
    errors = []

    def worker(w):
        try:
            for i in range(3):
                store = LocalStore(root)
                rv = commit.latest_version_or_zero(store)
                commit.commit_transaction(store, _append_txn(store, rv, 1, 1000 * (w + 1) + i))
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(w,)) for w in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(120)
    assert not errors
    ds = pylance.dataset(str(root))
    assert ds.version == 13
    assert len(manifests(root)) == 13
    assert ds.count_rows() == 13
    ids = [f.fragment_id for f in ds.get_fragments()]
    assert len(set(ids)) == 13
    ds.validate()


def test_stable_row_ids_are_assigned_from_next_row_id(tmp_path, pylance):
    root = tmp_path / "ds"
    write_dataset(table(5), str(root), max_rows_per_file=2, enable_stable_row_ids=True, data_storage_version=FV)
    write_dataset(table(3, 5), str(root), mode="append")
    store = LocalStore(root)
    m = commit.load_version(store, 2).manifest
    assert m.next_row_id == 8
    assert m.reader_feature_flags & 2 and m.writer_feature_flags & 2
    ds = pylance.dataset(str(root))
    t = ds.to_table(with_row_id=True)
    assert t["_rowid"].to_pylist() == list(range(8))
    ds.validate()


def test_pylance_continues_our_dataset_and_we_continue_theirs(tmp_path, pylance):
    ours = tmp_path / "ours"
    write_dataset(table(4), str(ours), data_storage_version=FV)
    pylance.write_dataset(table(2, 4), str(ours), mode="append")
    write_dataset(table(2, 6), str(ours), mode="append")
    ds = pylance.dataset(str(ours))
    assert ds.version == 3 and ds.to_table().equals(table(8))
    theirs = tmp_path / "theirs"
    pylance.write_dataset(table(4), str(theirs), data_storage_version=FV)
    write_dataset(table(2, 4), str(theirs), mode="append")
    ds = pylance.dataset(str(theirs))
    assert ds.version == 2 and ds.to_table().equals(table(6))
    ds.validate()


# -- detached commits (REFS-NAMESPACE-COMMIT.md §6) ----------------------------------------
def test_detached_commit_is_never_latest_and_pylance_opens_it(tmp_path, pylance):
    from reference_impl.dataset import open_dataset
    from reference_impl.write import commit as commit_txn

    root = tmp_path / "ds"
    write_dataset(pa.table({"a": pa.array([1, 2, 3], pa.int64())}), str(root), data_storage_version=FV)
    store = LocalStore(root)
    hint = (root / layout.VERSION_HINT_KEY).read_bytes()
    frags = write_fragments(store, pa.table({"a": pa.array([9], pa.int64())}),
                            list(commit.load_version(store, 1).manifest.fields), file_version=FV)
    ds = commit_txn(str(root), operations.append(1, frags), detached=True)
    v = ds.version
    assert v >> 63 == 1 and layout.is_detached_version(v)
    assert (root / "_versions" / f"d{v}.manifest").exists()
    assert ds.to_table()["a"].to_pylist() == [1, 2, 3, 9]
    assert (root / layout.VERSION_HINT_KEY).read_bytes() == hint  # no hint for a detached commit
    assert open_dataset(str(root)).version == 1 and open_dataset(str(root)).versions() == [1]
    assert len(list((root / "_transactions").glob("1-*.txn"))) == 1  # named by read_version
    theirs = pylance.dataset(str(root), version=v)
    assert theirs.version == v and theirs.to_table()["a"].to_pylist() == [1, 2, 3, 9]
    assert pylance.dataset(str(root)).version == 1
    # ordinary commits continue from the highest attached version
    assert write_dataset(pa.table({"a": pa.array([4], pa.int64())}), str(root), mode="append").version == 2
    # a detached commit on top of a detached version names its txn by the full number
    frags = write_fragments(store, pa.table({"a": pa.array([10], pa.int64())}),
                            list(commit.load_version(store, 1).manifest.fields), file_version=FV)
    ds2 = commit_txn(str(root), operations.append(v, frags), detached=True)
    assert ds2.version != v and ds2.to_table()["a"].to_pylist() == [1, 2, 3, 9, 10]
    assert list((root / "_transactions").glob(f"{v}-*.txn"))
    assert pylance.dataset(str(root), version=ds2.version).count_rows() == 5


def test_we_open_pylance_detached_versions(tmp_path, pylance):
    from lance.fragment import LanceFragment

    from reference_impl.dataset import open_dataset

    root = str(tmp_path / "ds")
    pylance.write_dataset(pa.table({"a": pa.array([1, 2], pa.int64())}), root)
    frag = LanceFragment.create(root, pa.table({"a": pa.array([5], pa.int64())}))
    d = pylance.LanceDataset.commit(root, pylance.LanceOperation.Append([frag]), read_version=1,
                                    detached=True)
    ours = open_dataset(root, version=d.version)
    assert ours.version == d.version and ours.to_table()["a"].to_pylist() == [1, 2, 5]
    assert open_dataset(root).version == 1
    assert [e.version for e in ours.version_entries()] == [1]


def test_detached_commit_refusals(tmp_path):
    from reference_impl.write import commit as commit_txn

    root = tmp_path / "ds"
    write_dataset(pa.table({"a": pa.array([1], pa.int64())}), str(root), data_storage_version=FV)
    with pytest.raises(InvalidInput):
        commit_txn(str(root), operations.append(0, []), detached=True)
    with pytest.raises(NotFound):
        commit_txn(str(root), operations.append((1 << 63) | 5, []), detached=True)
    assert sorted(p.name for p in (root / "_versions").iterdir() if p.name.endswith(".manifest")) \
        == [layout.manifest_name_v2(1)]
    assert len(list((root / "_transactions").iterdir())) == 1  # refused commits leave no .txn


def test_write_dataset_on_a_store_object_returns_a_dataset(tmp_path):
    from reference_impl.dataset import Dataset
    from reference_impl.io.memory import MemoryStore

    for target in (LocalStore(tmp_path / "ds"), MemoryStore()):
        ds = write_dataset(pa.table({"a": pa.array([1, 2], pa.int64())}), target, data_storage_version=FV)
        assert isinstance(ds, Dataset) and ds.version == 1 and ds.count_rows() == 2
        ds = write_dataset(pa.table({"a": pa.array([3], pa.int64())}), target, mode="append")
        assert isinstance(ds, Dataset) and ds.version == 2
        assert ds.to_table()["a"].to_pylist() == [1, 2, 3]
