"""The fragment reuse index (spec 004 ``FragmentReuseIndexDetails``): what pylance 14.0.2
writes on ``compact_files(defer_index_remap=True)``, the row address mapping against
``ds.remap_row_addrs``, the treemap bytes, external content, and hostile input."""

from __future__ import annotations

import shutil
import struct

import numpy as np
import pyarrow as pa
import pytest

from conformance.engine import validate
from conformance.fixtures.invalid import CORRUPTIONS
from conformance.fixtures.invalid_index import inject, reuse_details, reuse_entry
from reference_impl.dataset import open_dataset
from reference_impl.errors import FormatError
from reference_impl.io.memory import MemoryStore
from reference_impl.proto import table_pb2
from reference_impl.table import fragment_reuse as fr
from reference_impl.table import index as ix


@pytest.fixture(scope="module")
def compacted(tmp_path_factory, pylance):
    """4 fragments of 10 rows, rows with id % 7 == 3 deleted, a BTree index, then compacted
    into one fragment with the index remap deferred."""
    root = str(tmp_path_factory.mktemp("reuse") / "ds")
    t = pa.table({"id": np.arange(40, dtype=np.int64), "v": np.arange(40, dtype=np.int64) * 2})
    ds = pylance.write_dataset(t, root, max_rows_per_file=10)
    ds.create_scalar_index("id", "BTREE")
    ds.delete("id % 7 = 3")
    pylance.dataset(root).optimize.compact_files(target_rows_per_fragment=25,
                                                 defer_index_remap=True)
    return root


def _reuse_index(root):
    got = [i for i in ix.decode_index_section(open_dataset(root).manifest_file.index_section)
           if i.kind == "fragment_reuse"]
    assert len(got) == 1
    return got[0]


def test_pylance_writes_fragment_reuse_details(compacted):
    i = _reuse_index(compacted)
    assert i.name == ix.FRAG_REUSE_INDEX_NAME and i.fields == ()
    assert i.type_url == "/lance.table.FragmentReuseIndexDetails"
    assert i.fragment_ids.tolist() == [4]  # the new fragment
    (version,) = fr.decode_versions(i.details.message)
    (group,) = version.groups
    assert [d.id for d in group.old_fragments] == [0, 1, 2, 3]
    assert [(d.physical_rows, d.num_deleted_rows) for d in group.old_fragments] == \
        [(10, 1), (10, 2), (10, 1), (10, 2)]
    assert [(d.id, d.physical_rows) for d in group.new_fragments] == [(4, 34)]
    # the treemap holds the surviving old addresses only
    assert len(group.changed_row_addrs) == 34
    assert (3 in group.changed_row_addrs.tolist()) is False


def test_treemap_bytes_match_pylance(compacted):
    i = _reuse_index(compacted)
    raw = i.details.message.inline.versions[0].groups[0].changed_row_addrs
    assert struct.unpack_from("<Q", raw)[0] == 4  # one bucket per old fragment
    assert fr.encode_treemap(fr.decode_treemap(raw)) == raw


def test_mapping_agrees_with_pylance_remap(compacted, pylance):
    i = _reuse_index(compacted)
    mapping = fr.row_address_mapping(i.details.message)
    old = sorted(mapping)
    assert len(old) == 40
    theirs = pylance.dataset(compacted).remap_row_addrs(pa.array(old, pa.uint64())).to_pylist()
    assert [mapping[a] for a in old] == theirs
    assert fr.remap(i.details.message, old) == theirs
    # survivors land, in order, on the new fragment's rows 0..33
    new = [mapping[a] for a in old if mapping[a] is not None]
    assert new == [(4 << 32) + k for k in range(34)]


def test_pylance_compaction_passes_the_rules(compacted):
    report = validate(compacted, versions="all")
    assert report.conforms, report.render("text")
    assert not {r for r in report.rules_violated(None) if r.startswith("INDEX")}


def test_external_content_is_read_bounded():
    content = reuse_details().inline
    data = content.SerializeToString()
    store = MemoryStore("reuse-ext-test")
    store.put("_indices/x/content.bin", b"\0" * 5 + data)
    d = table_pb2.FragmentReuseIndexDetails()
    d.external.path, d.external.offset, d.external.size = "_indices/x/content.bin", 5, len(data)
    assert fr.row_address_mapping(d, store=store) == {0: 1 << 32, 1: None, 2: (1 << 32) + 1}
    d.external.size = len(data) + 100
    with pytest.raises(FormatError, match="past the end"):
        fr.load_content(d, store=store)
    with pytest.raises(FormatError, match="no store"):
        fr.load_content(d)


@pytest.mark.parametrize("raw", [b"\x01", struct.pack("<Q", 1 << 40) + b"\0" * 16,
                                 struct.pack("<Q", 1) + b"\0\0\0\0" + b"\xff" * 12])
def test_hostile_treemaps_raise_format_error(raw):
    with pytest.raises(FormatError) as e:
        fr.decode_treemap(raw)
    assert e.value.rule == "INDEX-020"


def test_mismatched_group_raises():
    g = fr.decode_versions(reuse_details(new_rows=5))[0].groups[0]
    with pytest.raises(FormatError, match="new fragments hold 5 rows"):
        fr.group_mapping(g)
    d = reuse_details()
    d.inline.versions[0].groups[0].changed_row_addrs = fr.encode_treemap([0, 2, 9 << 32])
    with pytest.raises(FormatError, match="outside the group's old fragments"):
        fr.group_mapping(fr.decode_versions(d)[0].groups[0])


@pytest.fixture(scope="module")
def base(tmp_path_factory, pylance):
    from conformance.fixtures.invalid import write_base

    return write_base(tmp_path_factory.mktemp("rbase") / "ds")


def test_valid_reuse_entry_is_clean(base, tmp_path):
    copy = tmp_path / "ok"
    shutil.copytree(base, copy)
    inject(copy, reuse_entry(reuse_details()))
    report = validate(str(copy), versions="all")
    assert not report.rules_violated(None), report.render("text")


@pytest.mark.parametrize("rule_id", ["INDEX-020", "INDEX-021"])
def test_reuse_rules_catch_their_cases(base, tmp_path, rule_id):
    copy = tmp_path / "case"
    shutil.copytree(base, copy)
    CORRUPTIONS[rule_id](copy)
    assert rule_id in validate(str(copy), versions="all").rules_violated("error")


# -- writing: a reference-writer compaction that defers the index remap ----------------------

def _compact_deferring_remap(ds):
    """Compact every fragment of ``ds`` into one with the reference writer, recording the
    move in the fragment reuse index (fragment_reuse.defer_index_remap) instead of dropping
    the rewritten fragments from the other indexes."""
    from reference_impl import dataset_ops as ops
    from reference_impl.table import operations
    from reference_impl.table.commit import commit_transaction, load_version
    from reference_impl.write import write_fragments

    old = list(ds.manifest.fragments)
    t = ds.to_table(with_row_address=True)
    new = write_fragments(ds.store, t.select(ds.schema.names), list(ds.manifest.fields),
                          file_version="2.2", max_rows_per_file=1 << 20)
    reserved = ops._commit(ds, operations.reserve_fragments(ds.version, len(new)))
    first = reserved.manifest.max_fragment_id - len(new) + 1
    for k, f in enumerate(new):
        f.id = first + k
    txn = operations.rewrite(reserved.version, [(old, new)])
    group = fr.reuse_group(old, new, t["_rowaddr"].to_numpy())

    def prepared(version):
        mf = load_version(reserved.store, version - 1)
        prev = list(mf.index_section.indices)
        copies = [type(i).FromString(i.SerializeToString()) for i in prev]
        m, _ = operations.build_manifest(mf.manifest, txn, version, indices=copies)
        return m, fr.defer_index_remap(prev, [group], version)

    commit_transaction(reserved.store, txn, prepared=prepared, data_format=("lance", "2.2"))


def test_reference_compaction_with_deferred_remap_keeps_index_in_use(tmp_path, pylance):
    from reference_impl import dataset_ops as ops

    root = str(tmp_path / "ds")
    ds = pylance.write_dataset(pa.table({"id": np.arange(30, dtype=np.int64)}), root,
                               max_rows_per_file=10)
    ds.create_scalar_index("id", "BTREE")
    ops.delete(open_dataset(root), "id = 5 or id = 12")
    _compact_deferring_remap(open_dataset(root))
    lds = pylance.dataset(root)
    lds.validate()
    plan = lds.scanner(filter="id = 13").explain_plan()
    assert "ScalarIndexQuery" in plan and "id_idx" in plan
    assert lds.to_table(filter="id = 13")["id"].to_pylist() == [13]
    assert lds.count_rows("id > 3") == 24
    i = _reuse_index(root)
    mapping = fr.row_address_mapping(i.details.message)
    old = sorted(mapping)
    assert lds.remap_row_addrs(pa.array(old, pa.uint64())).to_pylist() == [mapping[a] for a in old]
    assert validate(root, versions="all").conforms


def test_reuse_group_refuses_inconsistent_input():
    f_old = table_pb2.DataFragment(id=0, physical_rows=3)
    f_new = table_pb2.DataFragment(id=1, physical_rows=3)
    with pytest.raises(FormatError):
        fr.reuse_group([f_old], [f_new], [0, 1])
    g = fr.reuse_group([f_old], [f_new], [2, 0, 1])
    assert fr.decode_treemap(g.changed_row_addrs).tolist() == [0, 1, 2]


def test_remap_follows_two_compactions():
    """v3: fragment 0 (3 rows, row 1 deleted) -> fragment 1; v4: fragment 1 -> fragment 2."""
    d = reuse_details()
    v = d.inline.versions.add(dataset_version=4)
    g = v.groups.add(changed_row_addrs=fr.encode_treemap([1 << 32, (1 << 32) + 1]))
    g.old_fragments.add(id=1, physical_rows=2)
    g.new_fragments.add(id=2, physical_rows=2)
    assert fr.remap(d, [0, 1, 2, 7 << 32]) == [2 << 32, None, (2 << 32) + 1, 7 << 32]
    flat = fr.row_address_mapping(d)
    assert flat == {0: 1 << 32, 1: None, 2: (1 << 32) + 1,
                    1 << 32: 2 << 32, (1 << 32) + 1: (2 << 32) + 1}


def _property_case(sizes, deleted_masks, new_sizes_seed):
    """Old fragments 0..n-1 with ``sizes`` rows and deletions; survivors split over new
    fragments 100.. in chunks derived from ``new_sizes_seed``."""
    old, survivors = [], []
    for fid, (n, mask) in enumerate(zip(sizes, deleted_masks, strict=True)):
        dead = [k for k in range(n) if mask >> k & 1]
        f = table_pb2.DataFragment(id=fid, physical_rows=n)
        if dead:
            f.deletion_file.num_deleted_rows = len(dead)
        old.append(f)
        survivors += [(fid << 32) + k for k in range(n) if k not in dead]
    new, left, fid = [], len(survivors), 100
    while left:
        take = min(left, 1 + new_sizes_seed % 7)
        new.append(table_pb2.DataFragment(id=fid, physical_rows=take))
        left, fid = left - take, fid + 1
    return old, new, survivors


def test_mapping_properties():
    from hypothesis import given, settings
    from hypothesis import strategies as st

    @settings(max_examples=60, deadline=None)
    @given(st.lists(st.integers(1, 20), min_size=1, max_size=5).flatmap(
        lambda sizes: st.tuples(st.just(sizes),
                                st.lists(st.integers(0, (1 << 20) - 1), min_size=len(sizes),
                                         max_size=len(sizes)),
                                st.integers(0, 1000))))
    def check(case):
        sizes, masks, seed = case
        old, new, survivors = _property_case(sizes, masks, seed)
        g = fr.reuse_group(old, new, survivors)
        d = table_pb2.FragmentReuseIndexDetails()
        d.inline.versions.add(dataset_version=2).groups.append(g)
        mapping = fr.row_address_mapping(d)
        assert len(mapping) == sum(sizes)
        moved = [mapping[a] for a in sorted(mapping) if mapping[a] is not None]
        targets = [(f.id << 32) + k for f in new for k in range(f.physical_rows)]
        assert moved == targets  # survivors land in order on the new rows
        assert sorted(a for a, b in mapping.items() if b is not None) == survivors
        assert fr.remap(d, sorted(mapping)) == [mapping[a] for a in sorted(mapping)]

    check()
