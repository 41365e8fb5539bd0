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
from conformance.invalid import CORRUPTIONS
from conformance.invalid_index import inject, reuse_details, reuse_entry
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
    from conformance.invalid import write_base

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
