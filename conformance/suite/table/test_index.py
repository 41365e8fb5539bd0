"""Index metadata (spec 004 ``IndexMetadata`` / ``IndexSection``): decoding every index type
pylance 14.0.2 builds, the INDEX-* rules (positive on pylance's datasets, negative on the
cases of ``conformance/fixtures/invalid_index.py``), and hostile bytes."""

from __future__ import annotations

import shutil
import uuid as uuid_mod

import numpy as np
import pyarrow as pa
import pytest

from conformance.engine import validate
from conformance.fixtures.invalid import CORRUPTIONS
from conformance.fixtures.invalid_index import inject, valid_entry
from reference_impl.dataset import open_dataset
from reference_impl.errors import FormatError
from reference_impl.proto import index_pb2, table_pb2
from reference_impl.table import index as ix

N_ROWS = 300
DIM = 8

# pylance index type -> (index name, kind decoded, type URL pylance writes)
EXPECTED = {
    "BTREE": ("id_idx", "btree", "/lance.table.BTreeIndexDetails"),
    "BITMAP": ("cat_idx", "bitmap", "/lance.table.BitmapIndexDetails"),
    "LABEL_LIST": ("tags_idx", "label_list", "/lance.table.LabelListIndexDetails"),
    "NGRAM": ("text_idx", "ngram", "/lance.table.NGramIndexDetails"),
    "ZONEMAP": ("id_zm", "zonemap", "/lance.table.ZoneMapIndexDetails"),
    "BLOOMFILTER": ("cat_bf", "bloomfilter", "/lance.index.pb.BloomFilterIndexDetails"),
    "INVERTED": ("text_fts", "inverted", "/lance.table.InvertedIndexDetails"),
    "IVF_PQ": ("vec_idx", "vector", "/lance.index.pb.VectorIndexDetails"),
    "IVF_HNSW_SQ": ("vec2_idx", "vector", "/lance.index.pb.VectorIndexDetails"),
}


def _table(n=N_ROWS):
    rng = np.random.default_rng(0)
    vec = rng.random((n, DIM), dtype=np.float32)
    return pa.table({
        "id": pa.array(np.arange(n, dtype=np.int64)),
        "cat": pa.array([["a", "b", "c"][i % 3] for i in range(n)]),
        "tags": pa.array([["x", "y"][: (i % 2) + 1] for i in range(n)], pa.list_(pa.string())),
        "text": pa.array([f"hello world doc {i} lance" for i in range(n)]),
        "vec": pa.FixedSizeListArray.from_arrays(pa.array(vec.ravel()), DIM),
        "vec2": pa.FixedSizeListArray.from_arrays(pa.array(vec.ravel()), DIM),
    })


@pytest.fixture(scope="module")
def all_indexes(tmp_path_factory, pylance):
    """Every index type pylance 14.0.2 builds, on three fragments of 100 rows."""
    root = str(tmp_path_factory.mktemp("idx") / "all")
    ds = pylance.write_dataset(_table(), root, max_rows_per_file=100)
    ds.create_scalar_index("id", "BTREE")
    ds.create_scalar_index("cat", "BITMAP")
    ds.create_scalar_index("tags", "LABEL_LIST")
    ds.create_scalar_index("text", "NGRAM")
    ds.create_scalar_index("id", "ZONEMAP", name="id_zm")
    ds.create_scalar_index("cat", "BLOOMFILTER", name="cat_bf")
    ds.create_scalar_index("text", "INVERTED", name="text_fts")
    ds.create_index("vec", "IVF_PQ", num_partitions=2, num_sub_vectors=2)
    ds.create_index("vec2", "IVF_HNSW_SQ", num_partitions=2)
    return root


def _decoded(root):
    ds = open_dataset(root)
    return {i.name: i for i in ix.decode_index_section(ds.manifest_file.index_section)}


def test_every_pylance_index_decodes(all_indexes, pylance):
    got = _decoded(all_indexes)
    theirs = {d.name: d for d in pylance.dataset(all_indexes).describe_indices()}
    assert set(got) == {name for name, _k, _u in EXPECTED.values()} == set(theirs)
    for name, kind, url in EXPECTED.values():
        i = got[name]
        assert i.kind == kind and i.type_url == url and i.details.known
        assert i.type_url == theirs[name].type_url
        assert list(i.fields) == list(theirs[name].fields)
        assert i.fragment_ids.tolist() == [0, 1, 2]
        assert i.files and all(f.size_bytes > 0 for f in i.files)
        assert sum(f.size_bytes for f in i.files) == theirs[name].total_size_bytes
        assert len(i.uuid) == 36 and uuid_mod.UUID(i.uuid).bytes == i.uuid_bytes
        assert i.created_at and i.created_at > 1_600_000_000_000
        assert i.base_id is None and 1 <= i.dataset_version <= 10


def test_vector_and_fts_details_decoded(all_indexes):
    got = _decoded(all_indexes)
    pq = got["vec_idx"].details.message
    assert isinstance(pq, index_pb2.VectorIndexDetails)
    assert pq.WhichOneof("compression") == "pq"
    assert (pq.pq.num_bits, pq.pq.num_sub_vectors) == (8, 2)
    assert pq.build_params["lance.ivf.max_iters"] == "50"
    hnsw = got["vec2_idx"].details.message
    assert hnsw.WhichOneof("compression") == "sq" and hnsw.HasField("hnsw_index_config")
    assert hnsw.hnsw_index_config.max_connections == 20
    fts = got["text_fts"].details.message
    assert fts.base_tokenizer == "simple" and fts.lower_case and fts.with_position is False
    assert got["id_zm"].details.message.rows_per_zone == 8192
    # fields pylance writes beyond our messages are kept and reported, not lost
    assert {n for items in got["text_fts"].details.unknown_fields.values()
            for n, _wt, _raw in items} == {12, 15}
    assert {n for items in got["id_zm"].details.unknown_fields.values()
            for n, _wt, _raw in items} == {2, 3}


def test_pylance_indexes_pass_the_rules(all_indexes):
    report = validate(all_indexes, versions="all", deep=True)
    assert report.conforms, report.render("text")
    mine = {r for r in report.rules_violated(None) if r.startswith(("INDEX", "MEMWAL"))}
    assert not mine, report.render("text")


def test_a_damaged_index_file_is_index_015(all_indexes, pylance, tmp_path):
    """INDEX-015 (deep): the btree's page_data.lance keeps its size and footer, but its
    first column metadata no longer parses. pylance 14.0.2 still scans the table, and fails
    the query that uses the index; the kit names the index and the file."""
    import struct

    copy = tmp_path / "all"
    shutil.copytree(all_indexes, copy)
    btree = _decoded(str(copy))["id_idx"]
    path = copy / "_indices" / btree.uuid / "page_data.lance"
    raw = bytearray(path.read_bytes())
    column_meta_start = struct.unpack("<Q", raw[-40:-32])[0]
    raw[column_meta_start:column_meta_start + 8] = b"\xff" * 8
    path.write_bytes(bytes(raw))
    ds = pylance.dataset(str(copy))
    assert ds.to_table().num_rows == N_ROWS
    with pytest.raises(Exception):  # noqa: B017 - the oracle: the index cannot be loaded
        ds.to_table(filter="id = 7")
    report = validate(str(copy), deep=True)
    found = [v for v in report.violations if v.rule == "INDEX-015"]
    assert [(v.location["index"], v.location["file"]) for v in found] == [("id_idx", "page_data.lance")]
    assert not (report.rules_violated("error") - {"INDEX-015"}), report.render("text")
    assert not validate(str(copy)).rules_violated("error")  # a deep rule only


def test_which_index_files_index_015_reads(tmp_path):
    """A ``.lance`` file must be a Lance file; other files are read only when they end in
    the magic ``LANC``; a version 0.1 file (the old vector index.idx layout) is left alone."""
    from conformance.rules.index import _decode_index_file
    from reference_impl.file.writer import write_lance_file
    from reference_impl.io.local import LocalStore

    store = LocalStore(tmp_path)
    write_lance_file(store, "good.lance", pa.table({"x": pa.array([1, 2, 3])}), version="2.2")
    good = (tmp_path / "good.lance").read_bytes()
    (tmp_path / "custom.bin").write_bytes(b"an index plugin's own bytes")
    (tmp_path / "cut.lance").write_bytes(good[:-3])
    (tmp_path / "cut.idx").write_bytes(good[:-3])
    (tmp_path / "old.idx").write_bytes(b"\x00" * 32 + (0).to_bytes(8, "little")
                                      + b"\x00\x00\x01\x00" + b"LANC")
    (tmp_path / "bad.idx").write_bytes(good[:8] + b"\xff" * (len(good) - 24) + good[-16:])
    assert _decode_index_file(store, "good.lance") is None
    assert _decode_index_file(store, "custom.bin") is None
    assert "magic" in _decode_index_file(store, "cut.lance")
    assert _decode_index_file(store, "cut.idx") is None  # no magic: not read as a Lance file
    assert _decode_index_file(store, "old.idx") is None
    assert _decode_index_file(store, "bad.idx").startswith("[FILE-")


def test_inspect_shows_decoded_indexes(all_indexes):
    from conformance.cli.inspect import inspect_dataset, render_tree

    r = inspect_dataset(all_indexes)
    kinds = {e["name"]: e["details"]["kind"] for e in r["index_details"]}
    assert kinds == {name: kind for name, kind, _u in EXPECTED.values()}
    text = render_tree(r)
    assert "index details" in text and "hnsw_index_config" in text and "rows_per_zone" in text


def test_segments_after_optimize_indices(tmp_path, pylance):
    root = str(tmp_path / "seg")
    t = pa.table({"id": np.arange(20, dtype=np.int64)})
    ds = pylance.write_dataset(t, root, max_rows_per_file=10)
    ds.create_scalar_index("id", "BTREE")
    pylance.write_dataset(t, root, mode="append")
    pylance.dataset(root).optimize.optimize_indices(num_indices_to_merge=0)
    segs = ix.segments(ix.decode_index_section(open_dataset(root).manifest_file.index_section))
    assert [s.fragment_ids.tolist() for s in segs["id_idx"]] == [[0, 1], [2]]
    assert len(ix.overlapping_fragments(segs["id_idx"])) == 0
    report = validate(root, versions="all")
    assert report.conforms and "INDEX-003" not in report.rules_violated(None)
    with pytest.raises(Exception, match="already exists"):
        pylance.dataset(root).create_scalar_index("id", "BTREE", replace=False)


@pytest.mark.parametrize(("second_url", "flagged"), [
    ("/lance.index.pb.BTreeIndexDetails", False),  # pylance 0.36's package for the same message
    ("/LANCE.TABLE.BTREEINDEXDETAILS", False),
    ("/lance.table.BitmapIndexDetails", True),      # another kind of index
    ("/example.CustomIndexDetails", True),
])
def test_segments_agree_on_the_details_message_not_its_spelling(tmp_path, pylance, second_url,
                                                                 flagged):
    """pylance up to 6.1 names vector details ``lance.table``, 7.1 and later ``lance.index.pb``:
    when an older release optimizes a newer release's index, its segments spell one message
    two ways and both releases use the index. Segments of two kinds of index are INDEX-003."""
    from conformance.fixtures.corruption import encode_manifest, latest_manifest, split_manifest

    root = tmp_path / "seg"
    t = pa.table({"id": np.arange(20, dtype=np.int64)})
    pylance.write_dataset(t, str(root), max_rows_per_file=10).create_scalar_index("id", "BTREE")
    pylance.write_dataset(t, str(root), mode="append")
    pylance.dataset(str(root)).optimize.optimize_indices(num_indices_to_merge=0)

    path = latest_manifest(root)
    m, idx, txn = split_manifest(path.read_bytes())
    section = table_pb2.IndexSection.FromString(idx)
    assert [i.name for i in section.indices] == ["id_idx", "id_idx"]
    section.indices[1].index_details.type_url = second_url
    path.write_bytes(encode_manifest(m, index=section.SerializeToString(), txn=txn))
    found = [v for v in validate(str(root)).violations if v.rule == "INDEX-003"]
    assert bool(found) == flagged, found
    if flagged:
        assert "different types" in found[0].message


# -- details type URLs ------------------------------------------------------------------------

def test_type_urls_match_ignoring_case():
    a = table_pb2.IndexMetadata()
    a.index_details.type_url = "/LANCE.TABLE.btreeINDEXdetails"
    d = ix.parse_index_details(a.index_details)
    assert d.kind == "btree" and d.known
    a.index_details.type_url = "type.googleapis.com/lance.index.pb.VectorIndexDetails"
    assert ix.parse_index_details(a.index_details).kind == "vector"


def test_unknown_details_are_kept_raw():
    a = table_pb2.IndexMetadata()
    a.index_details.type_url = "/example.CustomIndexDetails"
    a.index_details.value = b"\x08\x2a"
    d = ix.parse_index_details(a.index_details)
    assert not d.known and d.raw == b"\x08\x2a" and d.type_url == "/example.CustomIndexDetails"


def test_every_kind_is_read_by_its_module_and_an_unknown_one_refused_by_name():
    from reference_impl.errors import UnsupportedIndex
    from reference_impl.index import reader_module

    a = table_pb2.IndexMetadata()
    for url, kind in (("/lance.index.pb.FMIndexDetails", "fm"),
                      ("/lance.index.pb.RTreeIndexDetails", "rtree"),
                      ("/lance.index.pb.MinHashLshIndexDetails", "minhash_lsh")):
        a.index_details.type_url = url
        d = ix.parse_index_details(a.index_details)
        assert d.known and reader_module(d.kind).KIND == kind
    with pytest.raises(UnsupportedIndex, match="index kind 'custom' is not read"):
        reader_module("custom")


def test_known_details_that_do_not_parse_raise_typed_error():
    a = table_pb2.IndexMetadata()
    a.index_details.type_url = "/lance.table.InvertedIndexDetails"
    a.index_details.value = b"\x0a\xff\xff\xff\xff\x0f"
    with pytest.raises(FormatError) as e:
        ix.parse_index_details(a.index_details)
    assert e.value.rule == "INDEX-009"


# -- fragment bitmaps: bounded, typed errors ----------------------------------------------------

def test_fragment_bitmap_roundtrip_and_run_containers():
    ids = np.array([0, 1, 2, 3, 7, 1000, 70000], dtype=np.uint32)
    assert ix.decode_fragment_bitmap(ix.encode_fragment_bitmap(ids)).tolist() == ids.tolist()
    assert ix.decode_fragment_bitmap(b"").tolist() == []
    # pylance writes run containers after compaction (cookie 12347)
    raw = bytes.fromhex("3b3000000100000300010000000300")
    assert ix.decode_fragment_bitmap(raw).tolist() == [0, 1, 2, 3]


@pytest.mark.parametrize("raw", [b"\x00", b"\x3a\x30\x00\x00\xff\xff\xff\x7f", b"\xff" * 40,
                                 bytes.fromhex("3b3000000100000300010000000300")[:-3]])
def test_bad_fragment_bitmaps_raise_format_error(raw):
    with pytest.raises(FormatError) as e:
        ix.decode_fragment_bitmap(raw)
    assert e.value.rule == "INDEX-006"


def test_fragment_bitmap_count_is_bounded():
    from pyroaring import BitMap

    bm = BitMap()
    bm.add_range(0, 1 << 32)  # 4 billion ids in a few bytes
    bm.run_optimize()
    with pytest.raises(FormatError, match="above the bound"):
        ix.decode_fragment_bitmap(bm.serialize())


def test_index_section_bytes_that_do_not_parse():
    with pytest.raises(FormatError):
        ix.decode_index_section(b"\x0a\xff\xff\xff\xff\x0f")


def test_one_bad_entry_does_not_hide_the_others():
    good = valid_entry()
    bad = valid_entry("b", uuid=str(uuid_mod.UUID(int=3)))
    bad.fragment_bitmap = b"\xff\xff"
    got = ix.decode_index_section(table_pb2.IndexSection(indices=[good, bad]))
    assert got[0].fragment_ids.tolist() == [0, 1] and got[1].fragment_ids is None
    assert got[1].bitmap_error


# -- the rules: positive on the base, negative on every INDEX case ------------------------------

@pytest.fixture(scope="module")
def base(tmp_path_factory, pylance):
    from conformance.fixtures.invalid import write_base

    return write_base(tmp_path_factory.mktemp("ibase") / "ds")


def test_valid_injected_index_is_clean(base, tmp_path):
    copy = tmp_path / "ok"
    shutil.copytree(base, copy)
    inject(copy, valid_entry(), valid_entry("s_idx", uuid=str(uuid_mod.UUID(int=5)),
                                            fields=(1,), frags=(1,)))
    report = validate(str(copy), versions="all")
    assert report.conforms and not report.rules_violated(None), report.render("text")


INDEX_CASES = sorted(k for k in CORRUPTIONS if k.startswith("INDEX-"))


@pytest.mark.parametrize("rule_id", INDEX_CASES)
def test_each_index_rule_catches_its_case(base, tmp_path, rule_id):
    from conformance.rules import get_rule

    copy = tmp_path / "case"
    shutil.copytree(base, copy)
    CORRUPTIONS[rule_id](copy)
    report = validate(str(copy), versions="all", deep=get_rule(rule_id).deep)
    assert rule_id in report.rules_violated(None), report.render("text")
    assert not (report.rules_violated("error") - {rule_id}), report.render("text")


def test_every_index_rule_has_a_case():
    """Every INDEX rule has a corruption case here, but those the catalog coverage test
    exempts with the test that breaks them (the content rules of text and vector indexes,
    broken by building indexes with pylance: conformance/suite/index/)."""
    from conformance.rules import all_rules
    from conformance.suite.rules.test_catalog_coverage import EXEMPT

    ids = {r.id for r in all_rules() if r.id.startswith("INDEX-")}
    assert ids - set(EXEMPT) == set(INDEX_CASES)


def test_index_files_found_through_base_paths(tmp_path, pylance):
    """A shallow clone's indexes live under the source: INDEX-008 resolves them by base_id."""
    src = str(tmp_path / "src")
    ds = pylance.write_dataset(pa.table({"id": np.arange(10, dtype=np.int64)}), src)
    ds.create_scalar_index("id", "BTREE")
    clone = str(tmp_path / "clone")
    pylance.dataset(src).shallow_clone(clone, 2)
    got = ix.decode_index_section(open_dataset(clone).manifest_file.index_section)
    assert got and got[0].base_id is not None
    report = validate(clone, versions="all")
    assert "INDEX-008" not in report.rules_violated(None), report.render("text")
    shutil.rmtree(src + "/_indices")
    assert "INDEX-008" in validate(clone, versions="all").rules_violated(None)


# -- index metadata through the reference writer ------------------------------------------------

def _uses_index(lance_ds, flt, name):
    plan = lance_ds.scanner(filter=flt).explain_plan()
    return "ScalarIndexQuery" in plan and name in plan


def test_index_metadata_survives_reference_writer(tmp_path, pylance):
    """pylance builds a BTree and a Bitmap index; our writer appends, deletes, updates and
    compacts. After append/delete/update pylance still plans with the indexes, answers
    correctly and validates. Our compaction defers the index remap as pylance does with
    ``defer_index_remap=True``: the index keeps its fragment bitmap, a fragment-reuse index
    records where the rows moved, and pylance still plans with the index afterwards."""
    from reference_impl import dataset_ops as ops
    from reference_impl.write import write_dataset

    root = str(tmp_path / "ds")
    t = pa.table({"id": np.arange(30, dtype=np.int64), "c": [["a", "b"][i % 2] for i in range(30)]})
    ds = pylance.write_dataset(t, root, max_rows_per_file=10)
    ds.create_scalar_index("id", "BTREE")
    ds.create_scalar_index("c", "BITMAP")
    uuids = {i.name: i.uuid for i in _decoded(root).values()}

    def check(expect_ids, expect_a):
        lds = pylance.dataset(root)
        lds.validate()
        assert lds.to_table(filter="id = 13")["id"].to_pylist() == expect_ids
        assert lds.count_rows("c = 'a'") == expect_a
        assert validate(root, versions="all").conforms
        return lds

    write_dataset(pa.table({"id": np.arange(30, 40, dtype=np.int64), "c": ["a"] * 10}), root,
                  mode="append")
    lds = check([13], 25)
    assert _uses_index(lds, "id = 13", "id_idx") and _uses_index(lds, "c = 'a'", "c_idx")
    ops.delete(open_dataset(root), "id = 5")
    lds = check([13], 25)
    assert _uses_index(lds, "id = 13", "id_idx")
    ops.update(open_dataset(root), {"c": "'a'"}, "id = 13")
    lds = check([13], 26)
    assert _uses_index(lds, "id = 13", "id_idx") and _uses_index(lds, "c = 'a'", "c_idx")
    got = _decoded(root)
    assert {n: i.uuid for n, i in got.items()} == uuids  # same indexes, not rebuilt
    assert got["id_idx"].fragment_ids.tolist() == [0, 1, 2]
    ops.compact_files(open_dataset(root), 100)
    lds = check([13], 26)
    assert _decoded(root)["id_idx"].fragment_ids.tolist() == [0, 1, 2]
    assert _uses_index(lds, "id = 13", "id_idx")


@pytest.mark.parametrize("scenario", ["scalar_index", "vector_index"])
def test_shared_index_scenarios_decode_and_pass(pylance_scenarios, pylance, scenario):
    path = pylance_scenarios[scenario]
    got = ix.decode_index_section(open_dataset(path).manifest_file.index_section)
    theirs = {(d.name, d.type_url) for d in pylance.dataset(path).describe_indices()}
    assert got and {(i.name, i.type_url) for i in got} == theirs
    assert all(i.details.known and i.fragment_ids is not None for i in got)
    report = validate(path, versions="all")
    assert not {r for r in report.rules_violated(None) if r.startswith("INDEX")}, \
        report.render("text")


def test_mutated_index_sections_fail_only_with_format_errors(all_indexes):
    """Random byte flips in a real index section: decoding and describing either work or
    raise FormatError; nothing else escapes."""
    raw = open_dataset(all_indexes).manifest_file.index_section.SerializeToString()
    rng = np.random.default_rng(7)
    outcomes = set()
    for _ in range(200):
        data = bytearray(raw)
        for pos in rng.integers(0, len(data), size=int(rng.integers(1, 6))):
            data[pos] = int(rng.integers(0, 256))
        try:
            for i in ix.decode_index_section(bytes(data)):
                ix.describe(i)
            outcomes.add("ok")
        except FormatError:
            outcomes.add("format_error")
    assert outcomes == {"ok", "format_error"}  # seed 7 meets both; nothing else escaped


def test_namespace_manifest_indexes(tmp_path, pylance):
    """REFS-NAMESPACE-COMMIT §9.5: with inline optimisation a directory namespace's
    ``__manifest`` carries a BTree, a Bitmap and a LabelList index; they decode and pass."""
    import io

    try:
        from lance.namespace import DirectoryNamespace
        from lance_namespace import CreateNamespaceRequest, CreateTableRequest
    except ImportError as exc:
        from conformance.suite.parts import unavailable

        unavailable("lance_namespace", repr(exc))

    sink = io.BytesIO()
    t = pa.table({"a": [1]})
    with pa.ipc.new_stream(sink, t.schema) as w:
        w.write_table(t)
    root = tmp_path / "ns"
    root.mkdir()
    ns = DirectoryNamespace(root=str(root), inline_optimization_enabled="true")
    ns.create_namespace(CreateNamespaceRequest(id=["sales"]))
    ns.create_table(CreateTableRequest(id=["sales", "orders"]), sink.getvalue())
    got = {i.name: i for i in ix.decode_index_section(
        open_dataset(str(root / "__manifest")).manifest_file.index_section)}
    assert {n: (i.kind, i.fields) for n, i in got.items()} == {
        "object_id_btree": ("btree", (0,)), "object_type_bitmap": ("bitmap", (1,)),
        "base_objects_label_list": ("label_list", (4,))}
    report = validate(str(root / "__manifest"), versions="all")
    assert report.conforms and not report.rules_violated(None), report.render("text")
