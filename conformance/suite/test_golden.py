"""Golden fixtures (fixtures/golden): their case.json, their portability, their coverage,
and ``fixtures verify`` catching a changed expectation or a changed byte."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pyarrow as pa
import pytest

from conformance import golden
from conformance.cli import main
from conformance.suite.parts import spec_dir, unavailable

SPEC_DIR = spec_dir() or Path("/nonexistent/shared/spec")
ROOT = golden.DEFAULT_DIR


def _case_dirs():
    return sorted(p for p in ROOT.iterdir() if (p / "case.json").exists())


def _norm(text: str) -> str:
    text = text.replace("\u2019", "'").replace("\u201c", '"').replace("\u201d", '"')
    return re.sub(r"\s+", " ", text)


def test_every_case_is_shipped_under_its_id():
    assert sorted(p.name for p in _case_dirs()) == sorted(golden.CASES)
    for cdir in _case_dirs():
        assert golden.load_case(cdir)["id"] == cdir.name


@pytest.mark.parametrize("cid", sorted(golden.CASES))
def test_case_json_matches_its_schema(cid):
    assert golden.check_case_json(golden.load_case(ROOT / cid)) == []


def test_schema_rejects_bad_case_documents():
    good = golden.load_case(ROOT / "deletion-arrow")
    assert golden.check_case_json(good) == []
    for broken in (
        {k: v for k, v in good.items() if k != "id"},
        good | {"producer": "someone 1.0"},
        good | {"reads": [dict(good["reads"][0], path="/abs/path")]},
        good | {"table": {"shipped": False}},  # no reason
        good | {"expected": {"outcome": "reject", "when": "commit", "error": "CommitConflict"}},
    ):
        assert golden.check_case_json(broken), broken


def test_spec_clauses_are_quoted_from_the_spec():
    if not SPEC_DIR.is_dir():
        unavailable("spec texts", "shared/spec is not beside the repository")
    texts = {p.name: _norm(p.read_text()) for p in SPEC_DIR.glob("00*.txt")}
    for case in golden.CASES.values():
        for ref in case.spec:
            assert ref["file"] in texts, ref
            assert _norm(ref["clause"]) in texts[ref["file"]], (case.id, ref["clause"])
            assert _norm(ref["section"]) in texts[ref["file"]], (case.id, ref["section"])


def test_cases_cover_every_spec_file_and_the_required_features():
    files = {ref["file"] for c in golden.CASES.values() for ref in c.spec}
    assert files == {golden.SPEC_000, golden.SPEC_001, golden.SPEC_002, golden.SPEC_003, golden.SPEC_004}
    features = {f for c in golden.CASES.values() for f in c.features}
    for needed in ("data_storage_version=2.0", "data_storage_version=2.1", "data_storage_version=2.2",
                   "data_storage_version=legacy", "deletion-arrow", "deletion-roaring",
                   "stable_row_ids", "add_columns", "drop_columns", "overwrite", "restore", "config",
                   "tags", "branches", "v1-names", "legacy", "shallow_clone", "namespace", "indices",
                   "base_paths", "is_dataset_root=true", "is_dataset_root=false", "hot-cold",
                   "multi-region", "external_manifest_store", "statistics", "namespace-v2",
                   "nested-namespaces", "bitmap", "label_list", "inverted", "ivf_pq", "mem_wal"):
        assert needed in features, needed
    rejects = {c.id: c.expected for c in golden.CASES.values() if c.expected["outcome"] == "reject"}
    assert {e["error"] for e in rejects.values()} == {"UnsupportedFeature", "FormatError", "CommitConflict"}


def test_deletion_cases_hold_both_deletion_file_kinds():
    assert list((ROOT / "deletion-arrow" / "table" / "_deletions").glob("*.arrow"))
    assert not list((ROOT / "deletion-arrow" / "table" / "_deletions").glob("*.bin"))
    assert list((ROOT / "deletion-roaring" / "table" / "_deletions").glob("*.bin"))


def test_v1_names_and_legacy_cases_are_what_they_say():
    names = [p.name for p in (ROOT / "v1-manifest-names" / "table" / "_versions").glob("*.manifest")]
    assert sorted(names) == ["1.manifest", "2.manifest"]
    data = next((ROOT / "legacy-file" / "table" / "data").glob("*.lance")).read_bytes()
    assert data[-4:] == b"LANC" and data[-8:-4] == b"\x00\x00\x02\x00"  # version 0.2 tail
    assert golden.load_case(ROOT / "legacy-file")["producer"] == "pylance 14.0.2"


def test_stable_row_id_expectations_carry_rowid():
    doc = golden.load_case(ROOT / "stable-row-ids")
    for r in doc["reads"]:
        t = golden.read_arrow(ROOT / "stable-row-ids" / "expected" / r["rows"])
        assert "_rowid" in t.column_names and r["row_ids"]
    last = golden.read_arrow(ROOT / "stable-row-ids" / "expected" / doc["reads"][-1]["rows"])
    ids = dict(zip(last.column("id").to_pylist(), last.column("_rowid").to_pylist(), strict=True))
    assert 1 not in ids and ids[0] == 0 and ids[5] == 5  # untouched rows keep their ids
    # pylance 14 keeps the row id of an updated row (the spec's "typically assigned a new
    # row id" is not what it does); the reference writer follows it
    assert ids[4] == 4


def test_shipped_tables_store_no_absolute_path():
    for cdir in _case_dirs():
        doc = golden.load_case(cdir)
        if not doc["table"]["shipped"]:
            assert not (cdir / "table").exists()
            assert "absolute" in doc["table"]["reason"]
            continue
        assert golden.absolute_paths_in(cdir / "table", ["/work/", "/tmp/", "file://"]) == [], cdir.name


def test_fixtures_are_small():
    total = sum(p.stat().st_size for p in ROOT.rglob("*") if p.is_file())
    assert total < 5 * 1024 * 1024


def test_fixtures_verify_passes(capsys):
    assert main(["fixtures", "verify"]) == 0
    out = capsys.readouterr().out
    assert f"{len(golden.CASES)} of {len(golden.CASES)} cases verify" in out


def _copy_case(tmp_path, cid) -> Path:
    root = tmp_path / "golden"
    shutil.copytree(ROOT / cid, root / cid)
    return root


def test_verify_fails_when_expected_rows_change(tmp_path, capsys):
    root = _copy_case(tmp_path, "deletion-arrow")
    path = root / "deletion-arrow" / "expected" / "v2.arrow"
    t = golden.read_arrow(path)
    golden._write_arrow(path, t.slice(0, t.num_rows - 1))
    problems = golden.verify_case(root / "deletion-arrow")
    assert any("v2" in p and "rows" in p for p in problems), problems
    assert main(["fixtures", "verify", "--dir", str(root), "--case", "deletion-arrow"]) == 1
    assert "FAIL deletion-arrow" in capsys.readouterr().out


def test_verify_fails_when_a_value_changes(tmp_path):
    root = _copy_case(tmp_path, "update")
    path = root / "update" / "expected" / "v1.arrow"
    t = golden.read_arrow(path)
    cats = t.column("category").to_pylist()
    cats[0] = "tampered"
    golden._write_arrow(path, t.set_column(1, "category", pa.array(cats)))
    assert any("values differ" in p for p in golden.verify_case(root / "update", regenerate=False))


def test_verify_fails_when_one_data_byte_changes(tmp_path):
    root = _copy_case(tmp_path, "types-2.1")
    data = next((root / "types-2.1" / "table" / "data").glob("*.lance"))
    raw = bytearray(data.read_bytes())
    raw[len(raw) // 2] ^= 0x01
    data.write_bytes(bytes(raw))
    problems = golden.verify_case(root / "types-2.1", regenerate=False)
    assert any("content differs" in p for p in problems), problems


def test_verify_fails_when_a_manifest_byte_changes(tmp_path):
    root = _copy_case(tmp_path, "tags")
    manifest = sorted((root / "tags" / "table" / "_versions").glob("*.manifest"))[0]
    raw = bytearray(manifest.read_bytes())
    raw[-20] ^= 0xFF
    manifest.write_bytes(bytes(raw))
    assert golden.verify_case(root / "tags", regenerate=False)


def test_verify_reports_a_missing_case(tmp_path):
    root = _copy_case(tmp_path, "config")
    results = golden.verify_all(root, regenerate=False)
    assert results["config"] == []
    assert results["tags"] == ["case missing from the fixtures folder"]


def test_generate_is_logically_reproducible(tmp_path, capsys):
    assert main(["fixtures", "generate", "--out", str(tmp_path), "--case", "schema-evolution",
                 "--case", "branches"]) == 0
    for cid in ("schema-evolution", "branches"):
        assert golden.compare_expected(ROOT / cid / "expected", tmp_path / cid / "expected") == []
    assert main(["fixtures", "generate", "--out", str(tmp_path), "--case", "nope"]) == 2


def test_pylance_producer_gives_the_same_logical_contents(pylance, tmp_path):
    for cid in ("deletion-arrow", "schema-evolution", "tags", "overwrite", "stable-row-ids"):
        golden.generate_case(golden.CASES[cid], tmp_path, "pylance")
        assert golden.load_case(tmp_path / cid)["producer"] == "pylance 14.0.2"
        assert golden.compare_expected(ROOT / cid / "expected", tmp_path / cid / "expected") == []


def test_reject_cases_refuse_with_the_expected_error():
    from conformance.harness.reference import ReferenceAdapter

    for cid in ("reject-unknown-reader-flag", "reject-unknown-encoding", "reject-unknown-txn-operation",
                "reject-unknown-writer-flag", "reject-datafile-version"):
        doc = golden.load_case(ROOT / cid)
        assert golden.reject_error(doc["expected"], ROOT / cid / "table", ReferenceAdapter()) == \
            doc["expected"]["error"]
    # and the same tables without the corruption are accepted
    ok = golden.load_case(ROOT / "config")
    assert golden.reject_error({"when": "read"}, ROOT / "config" / "table", ReferenceAdapter()) is None
    assert ok["expected"] == {"outcome": "read"}


def test_expected_versions_json_lists_every_read():
    for cdir in _case_dirs():
        doc = golden.load_case(cdir)
        versions = json.loads((cdir / "expected" / "versions.json").read_text())
        if doc["expected"]["outcome"] == "read":
            assert [r["id"] for r in versions["reads"]] == [r["id"] for r in doc["reads"]]
            for r in doc["reads"]:
                assert (cdir / "expected" / r["rows"]).is_file()
    doc = json.loads((ROOT / "tags" / "expected" / "versions.json").read_text())
    assert doc["tags"] == {"v-one": 1, "two": 2}
    assert [(r["id"], r["tags"], r["num_rows"]) for r in doc["reads"]] == [
        ("v1", ["v-one"], 5), ("v2", ["two"], 10)]


# -- second round: base paths, external store, statistics, namespace V2, indices -------------

def _materialize(cid: str, tmp_path: Path) -> Path:
    return golden.materialize(ROOT / cid, tmp_path)


def _manifest(table: Path):
    from reference_impl.dataset import open_dataset

    return open_dataset(str(table)).manifest


def test_hot_cold_case_writes_into_two_dataset_roots(pylance, tmp_path):
    table = _materialize("base-paths-hot-cold", tmp_path)
    m = _manifest(table)
    assert sorted((bp.name, bp.is_dataset_root) for bp in m.base_paths) == [("cold", True), ("hot", True)]
    by_id = {bp.id: bp.name for bp in m.base_paths}
    assert sorted(by_id[df.base_id] for f in m.fragments for df in f.files) == ["cold", "hot"]
    for name in ("hot", "cold"):
        assert len(list((table.parent / name / "data").glob("*.lance"))) == 1
    assert not list(table.glob("data/*.lance"))
    doc = golden.load_case(ROOT / "base-paths-hot-cold")
    assert not doc["table"]["shipped"] and "absolute" in doc["table"]["reason"]
    # the expectation holds only with the base folders where the manifest says they are
    from reference_impl.dataset import open_dataset
    assert open_dataset(str(table)).to_table().num_rows == 8
    shutil.move(str(table.parent / "cold"), str(table.parent / "cold-moved"))
    with pytest.raises(Exception) as err:
        open_dataset(str(table)).to_table()
    assert type(err.value).__name__ in ("NotFound", "FormatError", "StoreError")


def test_multi_region_and_not_root_cases(pylance, tmp_path):
    table = _materialize("base-paths-multi-region", tmp_path)
    m = _manifest(table)
    assert len(m.base_paths) == 3 and all(bp.is_dataset_root for bp in m.base_paths)
    assert len({df.base_id for f in m.fragments for df in f.files}) == 3
    table = _materialize("base-paths-not-root", tmp_path)
    m = _manifest(table)
    assert [bp.is_dataset_root for bp in m.base_paths] == [False, False]
    for name in ("files-a", "files-b"):  # files directly in the folder, no data/
        assert len(list((table.parent / name).glob("*.lance"))) == 1
        assert not (table.parent / name / "data").exists()


def test_external_store_case_records_both_expectations(tmp_path):
    from conformance.harness.reference import ReferenceAdapter
    from reference_impl.dataset import open_dataset

    doc = golden.load_case(ROOT / "external-manifest-store")
    assert doc["external_store"] == {"kind": "sqlite", "file": "external-store.sqlite",
                                     "latest_with_store": 3, "latest_without_store": 2}
    assert [r["id"] for r in doc["reads"]] == ["v1", "v2", "v3+store"]
    table = _materialize("external-manifest-store", tmp_path)
    assert (table.parent / "external-store.sqlite").is_file()
    assert list(table.glob("_versions/*.manifest-*"))  # the staged manifest is still staged
    assert open_dataset(str(table)).versions() == [1, 2]  # a reader without the store
    got = golden.external_store_read(ReferenceAdapter(), table, 3)
    want = golden.read_arrow(ROOT / "external-manifest-store" / "expected" / "v3.arrow")
    assert got.num_rows == want.num_rows == 10
    assert open_dataset(str(table)).versions() == [1, 2]  # the store read worked on a copy
    # the store names a staged manifest that is gone: a reader with the store must refuse
    from reference_impl.errors import FormatError

    for staged in table.glob("_versions/*.manifest-*"):
        staged.unlink()
    with pytest.raises(FormatError) as err:
        golden.external_store_read(ReferenceAdapter(), table, 3)
    assert err.value.rule == "COMMIT-001"


def test_external_store_read_case_in_the_harness(pylance, tmp_path):
    from conformance.harness import runner
    from conformance.harness.pylance_adapter import PylanceAdapter
    from conformance.harness.reference import ReferenceAdapter

    ref = runner.run_read_case(ReferenceAdapter(), ROOT / "external-manifest-store", tmp_path / "r")
    assert ref.outcome == "PASS" and ref.message == "3 reads match", ref
    theirs = runner.run_read_case(PylanceAdapter(), ROOT / "external-manifest-store", tmp_path / "p")
    assert theirs.outcome == "PASS" and "v3+store not read" in theirs.message, theirs
    # a wrong expectation for the reader without the store fails the case
    bad = tmp_path / "bad" / "external-manifest-store"
    shutil.copytree(ROOT / "external-manifest-store", bad)
    doc = golden.load_case(bad)
    doc["external_store"]["latest_without_store"] = 3
    (bad / "case.json").write_text(json.dumps(doc))
    assert runner.run_read_case(ReferenceAdapter(), bad, tmp_path / "b").outcome == "FAIL"


def test_page_statistics_case_has_several_pages_of_statistics():
    from reference_impl.dataset import open_dataset
    from reference_impl.file.legacy import open_legacy
    from reference_impl.table.stats import read_page_stats

    table = ROOT / "page-statistics" / "table"
    frags = open_dataset(str(table)).get_fragments()
    path = table / "data" / frags[0].data_files()[0].path
    stats = read_page_stats(open_legacy(path.read_bytes(), path=str(path)))
    assert sorted(stats) == [0, 1, 2]
    assert stats[0].min_value.to_pylist() == [0, 8, 16] and stats[0].max_value.to_pylist() == [7, 15, 19]
    assert stats[1].null_count.tolist() == [1, 2, 1]
    assert stats[2].min_value.to_pylist() == ["n000", "n008", "n016"]
    assert golden.load_case(ROOT / "page-statistics")["producer"] == "pylance 14.0.2"


def test_namespace_v2_case_lists_nested_namespaces(tmp_path):
    from reference_impl.namespace.directory import DirectoryNamespace

    moved = tmp_path / "ns"
    shutil.copytree(ROOT / "namespace-dir-v2" / "table", moved)
    assert (moved / "__manifest" / "_versions").is_dir()
    ns = DirectoryNamespace(str(moved))
    assert ns.list_namespaces([]) == ["ns1"] and ns.list_namespaces(["ns1"]) == ["ns2"]
    doc = golden.load_case(ROOT / "namespace-dir-v2")
    assert sorted(r["id"] for r in doc["reads"]) == ["ns1$ns2$t2@v1", "ns1$t1@v1", "t0@v1"]
    for r in doc["reads"]:
        tid = r["id"].split("@")[0].split("$")
        assert ns.describe_table(tid).location == r["path"]
    assert next(r for r in doc["reads"] if r["id"] == "t0@v1")["path"] == "t0.lance"
    assert not ns.namespace_exists(["ns2"])


def test_index_cases_hold_every_index_type():
    from reference_impl.dataset import open_dataset

    urls = {i.name: i.index_details.type_url
            for i in open_dataset(str(ROOT / "index-types" / "table")).list_indices()}
    assert urls == {"category_idx": "/lance.table.BitmapIndexDetails",
                    "labels_idx": "/lance.table.LabelListIndexDetails",
                    "text_idx": "/lance.table.InvertedIndexDetails",
                    "vec_idx": "/lance.index.pb.VectorIndexDetails"}
    names = [i.name for i in open_dataset(str(ROOT / "mem-wal" / "table")).list_indices()]
    assert sorted(names) == ["__lance_mem_wal", "id_idx"]
    assert list((ROOT / "mem-wal" / "table" / "_mem_wal").rglob("*"))


def test_datafile_version_case_disagrees_only_in_the_manifest(tmp_path):
    from conformance.harness.reference import ReferenceAdapter
    from conformance.invalid import latest_manifest, rewrite_manifest

    table = ROOT / "reject-datafile-version" / "table"
    m = _manifest(table)
    df = m.fragments[0].files[0]
    assert (df.file_major_version, df.file_minor_version) == (2, 0)
    tail = (table / "data" / df.path).read_bytes()[-8:]
    assert tail[-4:] == b"LANC" and (tail[0], tail[2]) == (2, 1)  # the footer says 2.1
    # put the right version back: the same table reads
    copy = tmp_path / "t"
    shutil.copytree(table, copy)

    def fix(mm):
        for f in mm.fragments:
            for d in f.files:
                d.file_major_version, d.file_minor_version = 2, 1

    rewrite_manifest(latest_manifest(copy), fix)
    assert golden.reject_error({"when": "read"}, copy, ReferenceAdapter()) is None


def test_writer_flag_case_reads_but_refuses_an_append(tmp_path):
    from conformance.harness import runner
    from conformance.harness.reference import ReferenceAdapter

    doc = golden.load_case(ROOT / "reject-unknown-writer-flag")
    table = ROOT / "reject-unknown-writer-flag" / "table"
    assert _manifest(table).writer_feature_flags & (1 << 20)
    assert ReferenceAdapter().read(str(table)).num_rows == 5  # readers are not concerned
    res = runner.run_commit_reject_case(ReferenceAdapter(), ROOT / "reject-unknown-writer-flag", tmp_path)
    assert res.outcome == "PASS" and "UnsupportedFeature" in res.message
    assert doc["expected"]["error"] == "UnsupportedFeature"


def test_readme_lists_every_case():
    text = (ROOT / "README.md").read_text()
    assert golden.cases_table_markdown() in text
    for cid in golden.CASES:
        assert f"| `{cid}` |" in text


def test_types_2_2_holds_the_null_type_and_a_tensor():
    t = golden.read_arrow(ROOT / "types-2.2" / "expected" / "v1.arrow")
    assert t.schema.field("nothing").type == pa.null() and t.num_rows == 30
    assert t.column("nothing").null_count == 30
    tensor = t.schema.field("tensor").type
    assert isinstance(tensor, pa.FixedShapeTensorType) and tensor.shape == [2, 2]
