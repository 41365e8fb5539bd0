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

from ..parts import unavailable
from ..table.test_commit import FV


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


@pytest.mark.parametrize("fv", [FV, "2.3"])
@pytest.mark.parametrize("stable", [False, True], ids=["addr-ids", "stable-ids"])
def test_every_operation_reads_alike_at_every_version(tmp_path, pylance, our_reader, stable, fv):
    """Every operation of the script on a table we write (at the default storage version,
    and at 2.3: pylance 14.0.2 reads our 2.3 files too), each version read alike by pylance."""
    uri = str(tmp_path / "ds")
    ds = write_dataset(base(), uri, max_rows_per_file=5, enable_stable_row_ids=stable, data_storage_version=fv)
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
    """A BTree index pylance built stays listed, used and answers correctly after our
    append, delete, update and compaction; an Overwrite drops it (as pylance does)."""
    uri = str(tmp_path / "ds")
    ds = write_dataset(base(), uri, max_rows_per_file=4, data_storage_version=FV)
    pylance.dataset(uri).create_scalar_index("id", "BTREE")
    ds = write_dataset(base(3).set_column(0, "id", pa.array([50, 51, 52], pa.int64())), uri, mode="append")
    ds = ops.delete(our_reader(uri), "id = 2")
    ds = ops.update(ds, {"s": "'u'"}, where="id = 5")
    ds = ops.compact_files(ds, 64)
    # fragments under the index are not merged with the appended/updated ones (pylance
    # 14.0.2 compacts the same dataset into 10 + 4 rows as well)
    assert [f.physical_rows for f in ds.manifest.fragments] == [10, 4]
    lds = pylance.dataset(uri)
    lds.validate()
    # the compaction deferred the remap: pylance lists the fragment reuse index too, as
    # after its own compact_files(defer_index_remap=True)
    assert sorted(i["name"] for i in lds.list_indices()) == ["__lance_frag_reuse", "id_idx"]
    assert "ScalarIndexQuery" in lds.scanner(filter="id = 7").explain_plan()
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


# -- row version sequences through update, delete and compaction ----------------------------
_VCOLS = ["a", "_row_created_at_version", "_row_last_updated_at_version"]


def _row_meta(lance_ds):
    t = lance_ds.to_table(with_row_id=True, columns=_VCOLS)
    return sorted(zip(*(t[c].to_pylist() for c in ["_rowid", *_VCOLS]), strict=True))


def test_row_versions_move_with_rows_like_pylance(tmp_path, pylance, our_reader):
    """The same script (create 2 files, append, update one row, delete one, compact) run by
    pylance and by us under stable row ids: every row has the same row id, created-at and
    last-updated-at version afterwards, read by pylance from both datasets."""
    ours_p, theirs_p = str(tmp_path / "ours"), str(tmp_path / "theirs")
    first, second = pa.table({"a": pa.array(range(6), pa.int64())}), pa.table({"a": pa.array([6, 7, 8], pa.int64())})
    pylance.write_dataset(first, theirs_p, enable_stable_row_ids=True, max_rows_per_file=3,
                          data_storage_version=FV)
    pylance.write_dataset(second, theirs_p, mode="append")
    t = pylance.dataset(theirs_p)
    t.update({"a": "a + 100"}, where="a = 1")
    pylance.dataset(theirs_p).delete("a = 4")
    before_theirs = _row_meta(pylance.dataset(theirs_p))
    pylance.dataset(theirs_p).optimize.compact_files(target_rows_per_fragment=100)

    write_dataset(first, ours_p, enable_stable_row_ids=True, max_rows_per_file=3, data_storage_version=FV)
    ds = write_dataset(second, ours_p, mode="append")
    ds = ops.update(ds, {"a": "a + 100"}, "a = 1")
    ds = ops.delete(ds, "a = 4")
    before_ours = _row_meta(pylance.dataset(ours_p))
    assert before_ours == before_theirs
    assert (1, 101, 1, 3) in before_ours  # the updated row: same id, created v1, updated v3
    ds = ops.compact_files(ds, 100)
    assert len(ds.manifest.fragments) == 1
    after_ours, after_theirs = _row_meta(pylance.dataset(ours_p)), _row_meta(pylance.dataset(theirs_p))
    assert after_ours == after_theirs == before_ours
    pylance.dataset(ours_p).validate()
    # and the sequences are what our own decoder reads from the compacted fragment
    from reference_impl.table.rowids import fragment_versions

    frag = ds.manifest.fragments[0]
    got = ds.to_table(with_row_id=True)
    created = fragment_versions(ds.store, frag, "created").tolist()
    assert sorted(zip(got["_rowid"].to_pylist(), got["a"].to_pylist(), created,
                      fragment_versions(ds.store, frag, "last_updated").tolist(), strict=True)) == after_ours


# -- indexes through our compaction -----------------------------------------------------------
def _index_shape(path):
    from pyroaring import BitMap

    from reference_impl.dataset import open_dataset
    from reference_impl.table.fragment_reuse import summarize

    out = {}
    for im in open_dataset(path).list_indices():
        entry = {"bitmap": list(BitMap.deserialize(im.fragment_bitmap)), "dataset_version": im.dataset_version}
        if im.name == "__lance_frag_reuse":
            from reference_impl.proto import table_pb2

            d = table_pb2.FragmentReuseIndexDetails.FromString(im.index_details.value)
            entry["summary"] = summarize(d)
        out[im.name] = entry
    return out


def test_compaction_defers_index_remap_like_pylance(tmp_path, pylance, our_reader):
    """A BTREE index pylance built survives our compaction as it survives pylance's
    ``compact_files(defer_index_remap=True)``: same index list, bitmaps and fragment reuse
    groups; pylance still plans with the index and finds the right rows."""
    t = pa.table({"a": pa.array(range(9), pa.int64()), "b": pa.array(range(9), pa.int64())})
    ours_p, theirs_p = str(tmp_path / "ours"), str(tmp_path / "theirs")
    pylance.write_dataset(t, theirs_p, max_rows_per_file=3, data_storage_version=FV)
    pylance.dataset(theirs_p).create_scalar_index("a", "BTREE")
    pylance.dataset(theirs_p).delete("a = 4")
    pylance.dataset(theirs_p).optimize.compact_files(target_rows_per_fragment=100, defer_index_remap=True)

    write_dataset(t, ours_p, max_rows_per_file=3, data_storage_version=FV)
    pylance.dataset(ours_p).create_scalar_index("a", "BTREE")
    ds = ops.delete(our_reader(ours_p), "a = 4")
    indices_before = [im.SerializeToString() for im in ds.list_indices()]
    ds = ops.compact_files(ds, 100)
    assert [im.SerializeToString() for im in ops._reopen(ds, ds.version - 2).list_indices()] == indices_before

    ours, theirs = _index_shape(ours_p), _index_shape(theirs_p)
    assert ours == theirs
    assert ours["a_idx"]["bitmap"] == [0, 1, 2] and ours["__lance_frag_reuse"]["bitmap"] == [3]
    lds = pylance.dataset(ours_p)
    lds.validate()
    assert "ScalarIndexQuery" in lds.scanner(filter="a = 5").explain_plan()
    for v in (0, 4, 5, 8):
        assert lds.to_table(filter=f"a = {v}")["b"].to_pylist() == ([] if v == 4 else [v])
    # pylance goes on from our compacted version (another delete, then remapping the index)
    lds.delete("a = 5")
    lds = pylance.dataset(ours_p)
    lds.optimize.optimize_indices()
    assert pylance.dataset(ours_p).to_table(filter="a = 6")["b"].to_pylist() == [6]


def test_compaction_without_indexes_adds_no_reuse_index(tmp_path, our_reader):
    p = str(tmp_path / "ds")
    write_dataset(base(), p, max_rows_per_file=4, data_storage_version=FV)
    ds = ops.compact_files(our_reader(p), 100)
    assert len(ds.manifest.fragments) == 1 and ds.list_indices() == []


def test_index_pruning_leaves_callers_messages_alone():
    from pyroaring import BitMap

    from reference_impl.proto import table_pb2
    from reference_impl.table import operations

    prev = table_pb2.Manifest(version=1)
    for i in range(2):
        prev.fragments.add(id=i, physical_rows=1)
    idx = table_pb2.IndexMetadata(name="i", fields=[0], fragment_bitmap=BitMap([0, 1]).serialize())
    before = idx.SerializeToString()
    txn = operations.delete(1, [], [1], "x")
    _, out = operations.build_manifest(prev, txn, 2, indices=[idx])
    assert idx.SerializeToString() == before
    assert list(BitMap.deserialize(out[0].fragment_bitmap)) == [0]
    # a Rewrite with a remap hook takes the hook's list instead of pruning
    rw = operations.rewrite(1, [([prev.fragments[1]], [table_pb2.DataFragment(physical_rows=1)])])
    _, out = operations.build_manifest(prev, rw, 2, indices=[idx], remap_indices=lambda ixs, v: [*ixs, "x"])
    assert out == [idx, "x"] and idx.SerializeToString() == before


def test_stale_compaction_does_not_undo_a_concurrent_delete(tmp_path, our_reader):
    """The Rewrite reads the version its fragments were chosen at: a delete committed
    meanwhile on those fragments is a retryable conflict (nothing rewritten), and a
    compaction planned afresh keeps the deletion."""
    from reference_impl.errors import CommitConflict

    p = str(tmp_path / "ds")
    write_dataset(base(), p, max_rows_per_file=4, data_storage_version=FV)
    stale = our_reader(p)
    ops.delete(our_reader(p), "id = 1")
    with pytest.raises(CommitConflict) as exc:
        ops.compact_files(stale, 100)
    assert exc.value.retryable
    assert our_reader(p).count_rows() == 11
    ds = ops.compact_files(our_reader(p), 100)
    assert ds.count_rows() == 11 and 1 not in ds.to_table()["id"].to_pylist()
    # a concurrent append, on the other hand, is rebased over
    ops.delete(ds, "id = 0")
    stale = our_reader(p)
    write_dataset(base(2), p, mode="append")
    out = ops.compact_files(stale, 100)
    assert out.count_rows() == 12 and len(out.manifest.fragments) == 2


@pytest.mark.parametrize("storage", ["2.0", "2.2"])
def test_a_column_added_after_a_drop_gets_a_fresh_field_id(pylance, tmp_path, storage):
    """Found by ``lance-conformance fuzz``: create, drop c0, add n1. The dropped id stays in
    the data files' ``fields``, so the new column must not reuse it (it would read the old
    column's pages); pylance numbers it above every id the files use."""
    import reference_impl as ri
    from conformance.engine import local

    root = str(tmp_path / "t")
    ds = ri.write_dataset(pa.table({"k": pa.array([1, 2], pa.int64()),
                                    "c0": pa.array([10, 20], pa.int64())}), root,
                          data_storage_version=storage)
    ds = ds.drop_columns(["c0"])
    ds = ds.add_columns(pa.table({"n1": pa.array([None, None], pa.int32())}))
    ids = {f.name: f.id for f in ds.manifest.fields}
    assert ids["n1"] > 1
    want = pa.table({"k": pa.array([1, 2], pa.int64()), "n1": pa.array([None, None], pa.int32())})
    assert ri.open_dataset(root).to_table().equals(want)
    assert pylance.dataset(root).to_table().equals(want)
    assert not local.validate(root, versions="all", deep=True).violations


# ----------------------------------------------------------------------------- Arrow dictionaries


def _dict_column(values, index_type, value_type):
    if pa.types.is_binary(value_type) or pa.types.is_large_binary(value_type):
        values = [None if v is None else v.encode() for v in values]
    return pa.array(values, value_type).dictionary_encode().cast(
        pa.dictionary(index_type, value_type))


def _reads_alike_everywhere(pylance, our_reader, root, want):
    """pylance 14.0.2 and our reader both read ``want`` (dictionaries compared by value, the
    dictionary type kept), pylance's validate() passes and ``validate --deep`` reports no
    errors."""
    from conformance.engine import local
    from conformance.releases.corpus import table_difference

    theirs_ds = pylance.dataset(root)
    theirs_ds.validate()
    theirs = theirs_ds.to_table()
    ours = our_reader(root).to_table()
    assert theirs.schema == want.schema and ours.schema == want.schema
    assert table_difference(want, theirs) == ""
    assert table_difference(want, ours) == ""
    assert not local.validate(root, versions="all", deep=True).violations


DICT_CASES = {
    "int8-utf8": (pa.int8(), pa.string(), ["a", "bb", None, "a"]),
    "int16-large-utf8": (pa.int16(), pa.large_string(), ["x", None, "", "x", "yy"]),
    "int32-binary": (pa.int32(), pa.binary(), ["a", "bb", None, "a"]),
    "int64-large-binary": (pa.int64(), pa.large_binary(), ["q", "q", None, "r"]),
    "uint8-utf8": (pa.uint8(), pa.string(), ["a", "b", "a"]),
    "all-null": (pa.int32(), pa.string(), [None, None, None]),
}


@pytest.mark.parametrize("storage", ["2.0", "2.1", "2.2"])
def test_arrow_dictionary_columns_read_alike(pylance, our_reader, tmp_path, storage):
    """Found by ``lance-conformance fuzz``: a ``dictionary<...>`` column written by
    ``reference_impl.write_dataset`` was refused by our reader (2.0, ENC-051) and by pylance
    (every version). Key widths 8 to 64 bits, string and binary values, nulls, all-null,
    null dictionary items, several fragments and an append with another dictionary."""
    for name, (it, vt, values) in DICT_CASES.items():
        root = str(tmp_path / name)
        want = pa.table({"id": pa.array(range(len(values)), pa.int32()),
                         "d": _dict_column(values, it, vt)})
        write_dataset(want, root, data_storage_version=storage, max_rows_per_file=2)
        more = pa.table({"id": pa.array([100, 101, 102], pa.int32()),
                         "d": _dict_column(["new", None, values[0]], it, vt)})
        write_dataset(more, root, mode="append", data_storage_version=storage)
        _reads_alike_everywhere(pylance, our_reader, root, pa.concat_tables([want, more]))
    root = str(tmp_path / "null-item")
    items = pa.DictionaryArray.from_arrays(pa.array([0, 1, 2, 0, None], pa.int32()),
                                           pa.array(["a", None, "c"]))
    want = pa.table({"d": items})
    write_dataset(want, root, data_storage_version=storage)
    _reads_alike_everywhere(pylance, our_reader, root, want)


def _small_dict_tables():
    from hypothesis import strategies as st

    keys = st.sampled_from([pa.int8(), pa.int16(), pa.int32(), pa.int64()])
    values = st.sampled_from([pa.string(), pa.large_string(), pa.binary()])
    words = st.lists(st.one_of(st.none(), st.sampled_from(["", "a", "bb", "ccc"])),
                     min_size=1, max_size=12)
    return st.tuples(keys, values, words, st.sampled_from(["2.0", "2.1", "2.2"]))


def test_arrow_dictionaries_read_alike_both_ways(pylance, our_reader, tmp_path_factory):
    """Small random dictionary columns: written by us, read alike by pylance and by us;
    written by pylance, read alike by us (its 2.0 null item, its 2.1+ def-level nulls)."""
    from hypothesis import HealthCheck, given, settings

    from conformance.releases.corpus import table_difference

    @settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(case=_small_dict_tables())
    def check(case):
        it, vt, words, storage = case
        want = pa.table({"d": _dict_column(words, it, vt)})
        tmp = tmp_path_factory.mktemp("dict")
        ours_root, theirs_root = str(tmp / "ours"), str(tmp / "theirs")
        write_dataset(want, ours_root, data_storage_version=storage, max_rows_per_file=5)
        assert table_difference(want, pylance.dataset(ours_root).to_table()) == ""
        assert table_difference(want, our_reader(ours_root).to_table()) == ""
        pylance.write_dataset(want, theirs_root, data_storage_version=storage,
                              max_rows_per_file=5)
        got = our_reader(theirs_root).to_table()
        assert got.schema == want.schema
        assert table_difference(want, got) == ""

    check()


@pytest.mark.parametrize("storage", ["2.0", "2.1", "2.2"])
def test_arrow_dictionaries_in_structs_and_lists_read_alike(pylance, our_reader, tmp_path, storage):
    """A dictionary field inside a struct, a list and a large list is a dictionary column
    too (2.0: its own column of dictionary pages; 2.1+: a mini-block dictionary leaf), null
    items included."""
    d = pa.DictionaryArray.from_arrays(pa.array([0, 1, None, 0, 2, 1], pa.int16()),
                                       pa.array(["a", "bb", None]))
    list_mask = pa.array([False, True, False])
    want = pa.table({
        "s": pa.StructArray.from_arrays([d, pa.array(range(6))], ["d", "i"]),
        "l": pa.ListArray.from_arrays(pa.array([0, 2, 2, 6], pa.int32()), d, mask=list_mask)
        .take(pa.array([0, 1, 2, 0, 1, 2])),
        "ll": pa.LargeListArray.from_arrays(pa.array([0, 1, 1, 2, 4, 5, 6], pa.int64()), d),
    })
    root = str(tmp_path / "nested")
    write_dataset(want, root, data_storage_version=storage, max_rows_per_file=4)
    theirs, ours = pylance.dataset(root).to_table(), our_reader(root).to_table()
    assert theirs.schema == want.schema and ours.schema == want.schema
    assert theirs.to_pylist() == want.to_pylist() and ours.to_pylist() == want.to_pylist()
    from conformance.engine import local

    assert not local.validate(root, versions="all", deep=True).violations
