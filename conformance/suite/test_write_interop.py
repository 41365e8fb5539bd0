"""Datasets written and changed by our writer against pylance 14.0.2, both ways.

* Every operation of ``reference_impl.dataset_ops`` applied in turn by our writer: at
  every version pylance opens the dataset, ``validate()`` passes, and its ``to_table()``
  equals our reader's (with ``_rowid`` under stable row ids).
* pylance then appends, deletes and compacts the dataset, and our reader reads it alike.
* The reverse: we continue datasets pylance wrote.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from reference_impl import dataset_ops as ops
from reference_impl.errors import InvalidInput
from reference_impl.io.local import LocalStore
from reference_impl.table import commit
from reference_impl.write import write_dataset

from .parts import unavailable
from .test_commit import FV


@pytest.fixture
def our_reader():
    """Our scan (``reference_impl.scan``): the operations read rows through it."""
    try:
        import reference_impl.scan  # noqa: F401
    except ImportError as exc:
        unavailable("reference_impl.scan (our reader)", repr(exc))
    from reference_impl.dataset import open_dataset

    return open_dataset


def base(n=12):
    ids = np.arange(n, dtype=np.int64)
    return pa.table({"id": ids, "s": pa.array([f"v{i}" for i in ids]), "x": pa.array(ids * 1.5)})


def same(our_open, lance, uri, version, stable):
    ours = our_open(uri, version=version).to_table(with_row_id=stable)
    theirs_ds = lance.dataset(uri, version=version)
    theirs_ds.validate()
    theirs = theirs_ds.to_table(with_row_id=stable)
    assert ours.schema.names == theirs.schema.names
    assert ours.to_pylist() == theirs.to_pylist(), f"version {version} differs"
    return theirs


SCRIPT = [
    ("append", lambda ds: write_dataset(base(5).set_column(0, "id", pa.array(np.arange(100, 105))), ds.uri,
                                        mode="append", max_rows_per_file=3)),
    ("delete-sql", lambda ds: ops.delete(ds, "id = 3 OR id IN (5, 101) OR s = 'v7'", commit_message="d1")),
    ("delete-expr", lambda ds: ops.delete(ds, pc.field("x") > 15.5)),
    ("update", lambda ds: ops.update(ds, {"x": "x * 2", "s": "'changed'"}, where="id < 2")),
    ("add-columns", lambda ds: ops.add_columns(ds, pa.table({"k": pa.array(np.arange(ds.count_rows()), pa.int32())}))),
    ("add-null-columns", lambda ds: ops.add_columns(ds, pa.schema([("n", pa.string())]))),
    ("merge", lambda ds: ops.merge(ds, pa.table({"id": pa.array([0, 2, 100], pa.int64()), "w": ["a", "b", "c"]}), "id")),
    ("drop", lambda ds: ops.drop_columns(ds, ["k"])),
    ("rename", lambda ds: ops.alter_columns(ds, {"path": "s", "name": "label"})),
    ("compact", lambda ds: ops.compact_files(ds, 64)),
    ("config", lambda ds: ops.update_config(ds, {"lance.test": "1"})),
    ("metadata", lambda ds: ops.update_metadata(ds, {"owner": "me"})),
    ("schema-metadata", lambda ds: ops.update_schema_metadata(ds, {"note": "x"})),
    ("restore", lambda ds: ops.restore(ds, 3)),
]


@pytest.mark.parametrize("stable", [False, True], ids=["addr-ids", "stable-ids"])
def test_every_operation_reads_alike_at_every_version(tmp_path, pylance, our_reader, stable):
    uri = str(tmp_path / "ds")
    ds = write_dataset(base(), uri, max_rows_per_file=5, enable_stable_row_ids=stable, data_storage_version=FV)
    for _name, step in SCRIPT:
        ds = step(ds)
        ds = our_reader(uri)
        same(our_reader, pylance, uri, ds.version, stable)
    for v in range(1, ds.version + 1):
        same(our_reader, pylance, uri, v, stable)
    txn = pylance.dataset(uri).read_transaction(3)
    assert txn.transaction_properties["__lance_commit_message"] == "d1"


def test_pylance_continues_what_we_changed(tmp_path, pylance, our_reader):
    uri = str(tmp_path / "ds")
    ds = write_dataset(base(), uri, max_rows_per_file=4, data_storage_version=FV)
    ds = ops.delete(ds, "id = 1")
    ds = ops.update(ds, {"x": 0.0}, where="id = 2")
    lds = pylance.dataset(uri)
    pylance.write_dataset(base(3), uri, mode="append")
    lds = pylance.dataset(uri)
    lds.delete("id = 0")
    lds.optimize.compact_files(target_rows_per_fragment=64)
    lds = pylance.dataset(uri)
    theirs = same(our_reader, pylance, uri, lds.version, False)
    assert theirs.num_rows == 12 - 1 + 3 - 2


def test_we_continue_what_pylance_wrote(tmp_path, pylance, our_reader):
    uri = str(tmp_path / "ds")
    pylance.write_dataset(base(), uri, max_rows_per_file=4, data_storage_version=FV, enable_stable_row_ids=True)
    pylance.dataset(uri).delete("id = 4")
    ds = our_reader(uri)
    ds = write_dataset(base(2), uri, mode="append")
    ds = ops.delete(our_reader(uri), "id = 5")
    ds = ops.update(ds, {"s": "'u'"}, where="id = 6")
    ds = ops.compact_files(ds, 100)
    for v in range(1, ds.version + 1):
        same(our_reader, pylance, uri, v, True)


def test_bad_predicates_commit_nothing(tmp_path, our_reader):
    uri = str(tmp_path / "ds")
    ds = write_dataset(base(), uri, data_storage_version=FV)
    store = LocalStore(tmp_path / "ds")
    for bad in ("nope = 1", "id = ", pc.field("nope") == 1, "id === 2"):
        with pytest.raises(InvalidInput):
            ops.delete(ds, bad)
    with pytest.raises(InvalidInput):
        ops.update(ds, {"nope": 1})
    with pytest.raises(InvalidInput):
        ops.update(ds, {"x": 1.0}, where="missing IS NULL")
    assert commit.latest_version_or_zero(store) == 1
    assert len(list((tmp_path / "ds" / "_versions").glob("*.manifest"))) == 1
    assert not (tmp_path / "ds" / "_deletions").exists()


def test_clone_and_branch_open_in_pylance(tmp_path, pylance, our_reader):
    uri = str(tmp_path / "src")
    ds = write_dataset(base(), uri, max_rows_per_file=5, data_storage_version=FV)
    ds = ops.delete(ds, "id = 1")
    ops.create_tag(ds, "t2", 2)
    clone = ops.shallow_clone(ds, str(tmp_path / "clone"), "t2")
    assert clone.version == 2
    c = pylance.dataset(str(tmp_path / "clone"))
    c.validate()
    assert c.to_table().equals(pylance.dataset(uri).to_table())
    ops.create_branch(ds, "dev")
    b = pylance.dataset(uri).checkout_version(("dev", None))
    b.validate()
    assert b.version == 2 and b.to_table().equals(c.to_table())
    assert "dev" in pylance.dataset(uri).branches.list()
    assert pylance.dataset(uri).tags.list()["t2"]["version"] == 2
    # a branch of the branch, after a commit on it
    write_dataset(base(1).set_column(0, "id", pa.array([500], pa.int64())), f"{uri}/tree/dev", mode="append")
    dev = our_reader(uri, branch="dev")
    assert dev.version == 3
    ops.create_branch(dev, "dev/sub")
    sub = pylance.dataset(uri).checkout_version(("dev/sub", None))
    sub.validate()
    assert sub.version == 3 and 500 in sub.to_table()["id"].to_pylist()
    assert pylance.dataset(uri).branches.list()["dev/sub"]["parent_branch"] == "dev"


def test_index_metadata_is_carried_through_operations(tmp_path, pylance, our_reader):
    """A BTree index pylance built stays listed and answers correctly after our
    append, delete, update and compaction; an Overwrite drops it (as pylance does)."""
    uri = str(tmp_path / "ds")
    ds = write_dataset(base(), uri, max_rows_per_file=4, data_storage_version=FV)
    pylance.dataset(uri).create_scalar_index("id", "BTREE")
    ds = write_dataset(base(3).set_column(0, "id", pa.array([50, 51, 52], pa.int64())), uri, mode="append")
    ds = ops.delete(our_reader(uri), "id = 2")
    ds = ops.update(ds, {"s": "'u'"}, where="id = 5")
    ds = ops.compact_files(ds, 64)
    lds = pylance.dataset(uri)
    lds.validate()
    assert [i["name"] for i in lds.list_indices()] == ["id_idx"]
    for probe, expected in ((2, []), (5, ["u"]), (51, ["v1"]), (7, ["v7"])):
        assert lds.to_table(filter=f"id = {probe}")["s"].to_pylist() == expected
    write_dataset(base(2), uri, mode="overwrite")
    assert pylance.dataset(uri).list_indices() == []


def test_tags_create_update_delete(tmp_path, pylance):
    from reference_impl.dataset import open_dataset
    from reference_impl.errors import AlreadyExists, NotFound

    uri = str(tmp_path / "ds")
    write_dataset(base(3), uri, data_storage_version=FV)
    write_dataset(base(2), uri, mode="append")
    ds = open_dataset(uri)
    ops.create_tag(ds, "v-one", 1)
    with pytest.raises(AlreadyExists):
        ops.create_tag(ds, "v-one", 2)
    with pytest.raises(InvalidInput):
        ops.create_tag(ds, "bad name", 1)
    tags = pylance.dataset(uri).tags.list()
    assert tags["v-one"]["version"] == 1
    created = tags["v-one"]["created_at"]
    ops.update_tag(ds, "v-one", 2)
    tags = pylance.dataset(uri).tags.list()
    assert tags["v-one"]["version"] == 2 and tags["v-one"]["created_at"] == created
    assert pylance.dataset(uri, version="v-one").count_rows() == 5
    ops.delete_tag(ds, "v-one")
    assert pylance.dataset(uri).tags.list() == {}
    with pytest.raises(NotFound):
        ops.delete_tag(ds, "v-one")


def test_large_deletions_use_roaring_small_ones_arrow(tmp_path, pylance, our_reader):
    uri = str(tmp_path / "ds")
    n = 12_000
    t = pa.table({"id": pa.array(np.arange(n), pa.int64())})
    ds = write_dataset(t, uri, max_rows_per_file=6_000, data_storage_version=FV)
    ds = ops.delete(ds, "id < 5500")          # fragment 0: 5500 rows -> Roaring (.bin)
    ds = ops.delete(ds, "id >= 11990")        # fragment 1: 10 rows -> Arrow (.arrow)
    names = sorted(p.suffix for p in (tmp_path / "ds" / "_deletions").iterdir())
    assert names == [".arrow", ".bin"]
    theirs = same(our_reader, pylance, uri, ds.version, False)
    assert theirs.num_rows == n - 5500 - 10
