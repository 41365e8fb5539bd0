"""Spec 000 "File Metadata Base References": reference_impl.table.basepath."""

from __future__ import annotations

import os

import pyarrow as pa
import pytest

from reference_impl import open_dataset
from reference_impl.errors import FormatError, PathEscape
from reference_impl.io.memory import MemoryStore
from reference_impl.io.uri import open_store
from reference_impl.proto import table_pb2
from reference_impl.table import basepath


def _manifest(tmp_path):
    m = table_pb2.Manifest()
    # deliberately out of id order: readers look entries up by id
    m.base_paths.add(id=2, is_dataset_root=False, path=str(tmp_path / "flat"))
    m.base_paths.add(id=0, is_dataset_root=True, path=str(tmp_path / "root0"), name="v1.0")
    return m


def test_absent_base_id_is_the_dataset_root(tmp_path):
    store = MemoryStore("bp-absent")
    m = _manifest(tmp_path)
    for kind, sub in (("data", "data"), ("deletion", "_deletions"), ("index", "_indices")):
        s, key = basepath.resolve(store, m, kind, "x.lance", None)
        assert s is store and key == f"{sub}/x.lance"


def test_present_base_id_zero_differs_from_absent(tmp_path):
    store = MemoryStore("bp-zero")
    m = _manifest(tmp_path)
    s, key = basepath.resolve(store, m, "data", "f.lance", 0)
    assert s is not store and s.uri == open_store(str(tmp_path / "root0")).uri
    assert key == "data/f.lance"
    s, key = basepath.resolve(store, m, "deletion", "1-2-3.arrow", 2)
    assert s.uri == open_store(str(tmp_path / "flat")).uri and key == "1-2-3.arrow"
    s, key = basepath.resolve(store, m, "index", "uuid/index.idx", 0)
    assert key == "_indices/uuid/index.idx"


def test_unknown_base_id_is_a_format_error(tmp_path):
    with pytest.raises(FormatError) as e:
        basepath.resolve(MemoryStore("bp-unknown"), _manifest(tmp_path), "data", "f.lance", 7)
    assert e.value.rule == "BASEPATH-002"


@pytest.mark.parametrize("name", ["../x.lance", "a/../../x", "/etc/passwd", "", "a\x00b"])
def test_traversal_in_file_name_refused(tmp_path, name):
    with pytest.raises(PathEscape):
        basepath.resolve(MemoryStore("bp-esc"), _manifest(tmp_path), "data", name, None)


@pytest.mark.parametrize("path", ["/data/../etc", "s3://bucket/../x", "", "rel/../../x"])
def test_traversal_in_base_path_refused(path):
    m = table_pb2.Manifest()
    m.base_paths.add(id=1, is_dataset_root=True, path=path)
    with pytest.raises(FormatError):  # PathEscape is a FormatError
        basepath.resolve(MemoryStore("bp-esc2"), m, "data", "f.lance", 1)


def test_unknown_kind_refused(tmp_path):
    with pytest.raises(ValueError):
        basepath.resolve(MemoryStore("bp-kind"), _manifest(tmp_path), "blob", "f", None)


def _check_all_files_resolve(ds):
    n = 0
    for frag in ds.get_fragments():
        for df in frag.data_files():
            store, key = ds.data_file_location(df)
            assert store.size(key) == df.file_size_bytes
            n += 1
        loc = ds.deletion_file_location(frag.metadata)
        if loc is not None:
            assert loc[0].exists(loc[1])
    return n


def test_shallow_clone_files_resolve(pylance_scenarios):
    info = pylance_scenarios.info("shallow_clone")
    clone = open_dataset(info["clone"]["path"])
    assert len(clone.manifest.base_paths) >= 1
    inherited = [df for f in clone.get_fragments() for df in f.data_files() if df.HasField("base_id")]
    assert inherited, "a shallow clone's inherited files carry base_id"
    assert _check_all_files_resolve(clone) >= 1
    for v in info["clone"]["versions"]:
        _check_all_files_resolve(open_dataset(info["clone"]["path"], v))


def test_branch_inherited_and_own_files(pylance, tmp_path):
    uri = str(tmp_path / "ds")
    ds = pylance.write_dataset(pa.table({"a": [1, 2, 3]}), uri)
    ds.delete("a = 2")
    ds.create_branch("dev", 2)
    pylance.write_dataset(pa.table({"a": [9]}), os.path.join(uri, "tree", "dev"), mode="append")
    ours = open_dataset(uri, branch="dev")
    frags = ours.get_fragments()
    own = [df for f in frags for df in f.data_files() if not df.HasField("base_id")]
    inherited = [df for f in frags for df in f.data_files() if df.HasField("base_id")]
    assert len(own) == 1 and len(inherited) == 1 and inherited[0].base_id == 0
    store, key = ours.data_file_location(own[0])
    assert store.uri == open_store(os.path.join(uri, "tree", "dev")).uri
    store, key = ours.data_file_location(inherited[0])
    assert store.uri == open_store(uri).uri and key.startswith("data/")
    assert _check_all_files_resolve(ours) == 2
    assert ours.count_rows() == pylance.dataset(uri).checkout_version(("dev", None)).count_rows() == 3
