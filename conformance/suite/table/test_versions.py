"""Version discovery (spec 001 "Manifest"; REFS-NAMESPACE-COMMIT §6-7) and opening every
version with reference_impl.open_dataset, compared with pylance 14.0.2."""

from __future__ import annotations

import os
import shutil

import pyarrow as pa
import pytest

from conformance.suite.scenarios import SCENARIOS
from reference_impl import open_dataset
from reference_impl.errors import FormatError, NotFound
from reference_impl.io.uri import open_store
from reference_impl.table import layout, versions

U64 = (1 << 64) - 1


def _table(n, start=0):
    return pa.table({"id": pa.array(range(start, start + n), pa.int64())})


def _make(pylance, uri, n_versions=3, **kw):
    pylance.write_dataset(_table(4), uri, **kw)
    for i in range(1, n_versions):
        pylance.write_dataset(_table(2, 10 * i), uri, mode="append")
    return pylance.dataset(uri)


def _pl_versions(ds):
    return [v["version"] for v in ds.versions()]


def test_v2_names_by_default(pylance, tmp_path):
    uri = str(tmp_path / "ds")
    ds = _make(pylance, uri)
    entries = versions.list_versions(open_store(uri))
    assert [e.version for e in entries] == _pl_versions(ds) == [1, 2, 3]
    assert {e.scheme for e in entries} == {"v2"}
    assert entries[0].key == "_versions/18446744073709551614.manifest"
    assert all(e.size == os.path.getsize(os.path.join(uri, e.key)) for e in entries)


def test_v1_names_and_migration(pylance, tmp_path):
    uri = str(tmp_path / "ds")
    ds = _make(pylance, uri, enable_v2_manifest_paths=False)
    store = open_store(uri)
    entries = versions.list_versions(store)
    assert [(e.version, e.scheme) for e in entries] == [(1, "v1"), (2, "v1"), (3, "v1")]
    assert versions.manifest_key_for(store, 2) == "_versions/2.manifest"
    before = {e.version: store.get(e.key) for e in entries}
    assert open_dataset(uri).version == 3
    ds.migrate_manifest_paths_v2()
    entries = versions.list_versions(store)
    assert [(e.version, e.scheme) for e in entries] == [(1, "v2"), (2, "v2"), (3, "v2")]
    assert {e.version: store.get(e.key) for e in entries} == before  # plain renames
    assert versions.manifest_key_for(store, 2) == "_versions/" + layout.manifest_name_v2(2)
    assert open_dataset(uri, 2).count_rows() == pylance.dataset(uri, version=2).count_rows()


def test_mixed_naming_refused_like_pylance(pylance, tmp_path):
    uri = str(tmp_path / "ds")
    _make(pylance, uri, n_versions=2)
    vdir = os.path.join(uri, "_versions")
    shutil.copy(os.path.join(vdir, layout.manifest_name_v2(2)), os.path.join(vdir, "3.manifest"))
    with pytest.raises(FormatError) as e:
        versions.list_versions(open_store(uri))
    assert e.value.rule == "MANIFEST-006"
    with pytest.raises(FormatError):
        open_dataset(uri)
    with pytest.raises(Exception, match="multiple manifest naming schemes"):
        pylance.dataset(uri)  # pylance 14 refuses it too


def test_detached_versions(pylance, tmp_path):
    uri = str(tmp_path / "ds")
    _make(pylance, uri, n_versions=2)
    frag = pylance.fragment.LanceFragment.create(uri, _table(5, 100))
    det = pylance.LanceDataset.commit(uri, pylance.LanceOperation.Append([frag]), read_version=1,
                                      detached=True)
    dv = det.version
    assert layout.is_detached_version(dv)
    store = open_store(uri)
    assert [e.version for e in versions.list_versions(store)] == [1, 2]
    assert versions.latest_version(store) == 2
    assert [e.scheme for e in versions.scan_versions(store)].count("detached") == 1
    assert versions.manifest_key_for(store, dv) == f"_versions/d{dv}.manifest"
    ours = open_dataset(uri, dv)
    assert ours.version == dv and ours.count_rows() == det.count_rows()
    assert ours.count_rows() in (9, 11)  # on v1 or rebased onto v2
    assert open_dataset(uri).version == 2
    assert versions.read_version_hint(store) == 2  # detached commits leave the hint alone


@pytest.mark.parametrize("hint", [b'{"version":2}', b'{"version":9}', b"garbage", b"",
                                  b'{"version":"4"}', b'[4]', None])
def test_hint_never_decides_the_latest(pylance, tmp_path, hint):
    uri = str(tmp_path / "ds")
    _make(pylance, uri, n_versions=4)
    path = os.path.join(uri, "_versions", "latest_version_hint.json")
    if hint is None:
        os.unlink(path)
    else:
        with open(path, "wb") as fh:
            fh.write(hint)
    assert open_dataset(uri).version == 4 == pylance.dataset(uri).version
    got = versions.read_version_hint(open_store(uri))
    assert got == {b'{"version":2}': 2, b'{"version":9}': 9}.get(hint)


def test_real_hint_is_read(pylance, tmp_path):
    uri = str(tmp_path / "ds")
    _make(pylance, uri, n_versions=2)
    assert versions.read_version_hint(open_store(uri)) == 2


def test_stray_files_ignored(pylance, tmp_path):
    uri = str(tmp_path / "ds")
    _make(pylance, uri, n_versions=2)
    vdir = os.path.join(uri, "_versions")
    v2 = os.path.join(vdir, layout.manifest_name_v2(2))
    for name in ["foo.txt", "zzz.manifest", "99999999999999999999.manifest",
                 layout.manifest_name_v2(3) + "#1",
                 layout.manifest_name_v2(3) + "-0b1e4f7a-1111-2222-3333-444455556666"]:
        shutil.copy(v2, os.path.join(vdir, name))
    assert [e.version for e in versions.list_versions(open_store(uri))] == [1, 2]
    assert open_dataset(uri).version == pylance.dataset(uri).version == 2


def test_empty_versions_is_not_found(tmp_path):
    os.makedirs(tmp_path / "ds" / "_versions")
    with pytest.raises(NotFound):
        open_dataset(str(tmp_path / "ds"))
    with pytest.raises(NotFound):
        versions.latest_version(open_store(str(tmp_path / "ds")))


def test_missing_version_is_not_found(pylance, tmp_path):
    uri = str(tmp_path / "ds")
    _make(pylance, uri, n_versions=2)
    with pytest.raises(NotFound):
        open_dataset(uri, 5)
    with pytest.raises(NotFound):
        open_dataset(uri, 1 << 63)


def test_gaps_after_cleanup(pylance, tmp_path):
    uri = str(tmp_path / "ds")
    ds = _make(pylance, uri, n_versions=4)
    ds.tags.create("keep2", 2)
    from datetime import timedelta

    ds.cleanup_old_versions(older_than=timedelta(0), error_if_tagged_old_versions=False)
    assert _pl_versions(pylance.dataset(uri)) == [2, 4]
    ours = open_dataset(uri)
    assert ours.versions() == [2, 4]
    assert ours.checkout_version("keep2").version == 2
    with pytest.raises(NotFound):
        ours.checkout_version(3)


def test_branch_versions_and_hint(pylance, tmp_path):
    uri = str(tmp_path / "ds")
    ds = _make(pylance, uri, n_versions=2)
    b = ds.create_branch("dev", 2)
    pylance.write_dataset(_table(1, 50), b.uri if hasattr(b, "uri") else os.path.join(uri, "tree", "dev"),
                          mode="append")
    store = open_store(uri)
    assert [e.version for e in versions.list_versions(store, branch="dev")] == [2, 3]
    assert versions.read_version_hint(store, branch="dev") == 3
    assert versions.latest_version(store) == 2


def _compare_track(track: dict, open_version):
    assert track["versions"], "pylance recorded no versions"
    for v in track["versions"]:
        exp = track["per_version"][str(v)]
        ours = open_version(v)
        assert ours.version == v
        assert ours.count_rows() == exp["count_rows"], v
        assert ours.data_storage_version == exp["data_storage_version"], v
        assert [f.id for f in ours.lance_schema] == exp["field_ids"], v
        got = [{"id": f.fragment_id, "physical_rows": f.physical_rows,
                "num_deletions": f.num_deletions} for f in ours.get_fragments()]
        want = [{k: f[k] for k in ("id", "physical_rows", "num_deletions")}
                for f in exp["fragments"]]
        assert got == want, v
        assert ours.branch == exp.get("branch"), v
        assert bool(ours.reader_feature_flags & 2) == exp["stable_row_ids"]


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_every_version_matches_pylance(pylance_scenarios, scenario):
    path = pylance_scenarios[scenario]
    info = pylance_scenarios.info(scenario)
    ds = open_dataset(path)
    assert ds.versions() == info["versions"]
    assert ds.latest_version == info["versions"][-1] == ds.version
    _compare_track(info, lambda v: open_dataset(path, v))
    for branch, track in info["branch_versions"].items():
        assert open_dataset(path, branch=branch).versions() == track["versions"]
        _compare_track(track, lambda v, b=branch: open_dataset(path, v, branch=b))
        # opening tree/{branch} directly works through Manifest.branch
        direct = open_dataset(track["path"])
        assert direct.branch == branch and direct.root_store.uri == open_store(path).uri
    if info.get("clone"):
        clone = info["clone"]
        _compare_track(clone, lambda v: open_dataset(clone["path"], v))
    assert {k: v["version"] for k, v in ds.tags.list().items()} == {
        k: v["version"] for k, v in info["tags"].items()}


@pytest.mark.parametrize("storage_version", ["legacy", "2.0", "2.1", "2.2", "2.3"])
def test_data_storage_versions(pylance, tmp_path, storage_version):
    uri = str(tmp_path / "ds")
    ds = _make(pylance, uri, n_versions=2, data_storage_version=storage_version)
    ours = open_dataset(uri)
    assert ours.data_storage_version == ds.data_storage_version
    assert ours.count_rows() == ds.count_rows() == 6
    assert [f.fragment_id for f in ours.get_fragments()] == [f.fragment_id for f in ds.get_fragments()]


# -- fragment helpers and the Dataset's delegation -------------------------------------------

def test_fragment_helpers():
    import numpy as np

    from reference_impl.proto import table_pb2
    from reference_impl.table import fragment as F

    frag = table_pb2.DataFragment(id=3, physical_rows=10)
    assert F.num_deleted_rows(frag) == 0 and F.logical_rows(frag) == 10
    frag.deletion_file.num_deleted_rows = 4
    assert F.num_deleted_rows(frag) == 4 and F.logical_rows(frag) == 6
    assert F.row_address(3, 7) == (3 << 32) | 7 and F.split_row_address((3 << 32) | 7) == (3, 7)
    assert F.row_addresses(2, np.array([0, 5])).tolist() == [2 << 32, (2 << 32) | 5]
    for pair, name in [((0, 0), "0.1"), ((0, 1), "0.1"), ((0, 2), "0.1"), ((0, 3), "2.0"),
                       ((2, 0), "2.0"), ((2, 1), "2.1"), ((2, 2), "2.2"), ((2, 3), "2.3")]:
        df = table_pb2.DataFile(file_major_version=pair[0], file_minor_version=pair[1])
        assert F.data_file_version(df) == name


def test_to_table_and_take_delegate_to_scan(monkeypatch, pylance_scenarios):
    import reference_impl.scan as scan

    calls = []
    monkeypatch.setattr(scan, "to_table", lambda ds, **kw: calls.append(("to_table", ds, kw)) or "T")
    monkeypatch.setattr(scan, "take", lambda ds, idx, **kw: calls.append(("take", ds, idx, kw)) or "K")
    ds = open_dataset(pylance_scenarios["append"])
    assert ds.to_table(columns=["id"], filter="id > 1", with_row_id=True) == "T"
    assert ds.take([1, 2], columns=["id"]) == "K"
    assert calls[0] == ("to_table", ds, {"columns": ["id"], "filter": "id > 1", "with_row_id": True,
                                         "with_row_address": False})
    assert calls[1] == ("take", ds, [1, 2], {"columns": ["id"]})


def test_to_table_matches_pylance(pylance, pylance_scenarios):
    path = pylance_scenarios["delete_few"]
    ours = open_dataset(path).to_table()
    theirs = pylance.dataset(path).to_table()
    assert ours.num_rows == theirs.num_rows == open_dataset(path).count_rows()
    assert ours.column_names == theirs.column_names
    assert sorted(ours.column("id").to_pylist()) == sorted(theirs.column("id").to_pylist())


def test_dataset_surface(pylance_scenarios):
    path = pylance_scenarios["scalar_index"]
    ds = open_dataset(path)
    assert ds.uri == path and ds.store.uri == open_store(path).uri
    assert [e.version for e in ds.version_entries()] == ds.versions()
    assert ds.manifest is ds.manifest_file.manifest
    assert ds.schema.names == [f.name for f in ds.lance_schema if f.parent_id == -1]
    assert ds.list_indices() and ds.index_section is ds.manifest_file.index_section
    frag = ds.get_fragments()[0]
    assert frag.count_rows() == frag.physical_rows - frag.num_deletions
    assert frag.data_files() == list(frag.metadata.files)
    assert ds.get_fragment(frag.fragment_id).fragment_id == frag.fragment_id
    assert ds.checkout_version(1).version == 1 and ds.checkout_version(1).list_indices() == []
    with pytest.raises(Exception):  # noqa: B017 - not an int nor a tag name
        open_dataset(path, 1.5)
