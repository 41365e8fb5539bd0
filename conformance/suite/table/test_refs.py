"""Tags and branches (REFS-NAMESPACE-COMMIT §1-3): reference_impl.table.refs and the
Dataset's ``tags``/``branches``, compared with pylance 14.0.2."""

from __future__ import annotations

import json
import os

import pyarrow as pa
import pytest

from reference_impl import open_dataset
from reference_impl.errors import FormatError, NotFound
from reference_impl.io.uri import open_store
from reference_impl.table import layout, refs


@pytest.fixture
def refs_ds(pylance, tmp_path):
    uri = str(tmp_path / "ds")
    ds = pylance.write_dataset(pa.table({"a": [1, 2, 3]}), uri)
    ds = pylance.write_dataset(pa.table({"a": [4]}), uri, mode="append")
    ds.tags.create("t1", 1)
    ds.tags.create("v2.0", 2)
    dev = ds.create_branch("dev", 2)
    pylance.write_dataset(pa.table({"a": [5, 6]}), os.path.join(uri, "tree", "dev"), mode="append")
    dev = pylance.dataset(uri).checkout_version(("dev", None))
    dev.create_branch("feature/x/y", 3)
    ds.tags.create("ondev", ("dev", 3))
    ds.tags.replace_metadata("t1", {"k": "v"})
    return uri


def test_tags_and_branches_equal_pylance(pylance, refs_ds):
    pl = pylance.dataset(refs_ds)
    ours = open_dataset(refs_ds)
    ptags, otags = pl.tags.list(), ours.tags.list()
    assert set(ptags) == set(otags) == {"t1", "v2.0", "ondev"}
    for name, t in ptags.items():
        o = otags[name]
        assert (o["branch"], o["version"], o["manifest_size"], o["metadata"]) == (
            t["branch"], t["version"], t["manifest_size"], t["metadata"])
        assert refs.parse_timestamp(o["created_at"]) // 1000 == int(
            t["created_at"].timestamp() * 1_000_000) or abs(
            refs.parse_timestamp(o["created_at"]) / 1e9 - t["created_at"].timestamp()) < 1e-5
    pbr, obr = pl.branches.list(), ours.branches.list()
    assert set(pbr) == set(obr) == {"dev", "feature/x/y"}
    for name, b in pbr.items():
        o = obr[name]
        assert o["parent_branch"] == b["parent_branch"]
        assert o["parent_version"] == b["parent_version"]
        assert o["branch_identifier"] == [tuple(p) for p in b["branch_identifier"]]
        assert (o["create_at"], o["manifest_size"], o["metadata"]) == (
            b["create_at"], b["manifest_size"], b["metadata"])
    assert os.path.exists(os.path.join(refs_ds, "_refs", "branches", "feature%2Fx%2Fy.json"))


def test_non_ascii_tag(pylance, tmp_path):
    """pylance 14.0.2 writes ``_refs/tags/%C3%BC.json`` for tag ``ü`` but its own
    ``tags.list()`` then fails (it percent-encodes the listed name a second time); the
    reference reader decodes the name once and lists the tag."""
    uri = str(tmp_path / "ds")
    ds = pylance.write_dataset(pa.table({"a": [1, 2]}), uri)
    ds.tags.create("ünï", 1)
    assert os.listdir(os.path.join(uri, "_refs", "tags")) == ["%C3%BCn%C3%AF.json"]
    assert set(refs.list_tags(open_store(uri))) == {"ünï"}
    assert open_dataset(uri, "ünï").version == 1
    with pytest.raises(ValueError, match="Not found"):
        pylance.dataset(uri).tags.list()


def test_open_by_tag_including_a_tag_on_a_branch(pylance, refs_ds):
    assert open_dataset(refs_ds, "t1").version == 1
    on_dev = open_dataset(refs_ds, "ondev")
    pl = pylance.dataset(refs_ds, version="ondev")
    assert (on_dev.branch, on_dev.version) == ("dev", 3)
    assert on_dev.count_rows() == pl.count_rows() == 6
    # the tags of the main root are seen from a branch opened directly
    direct = open_dataset(os.path.join(refs_ds, "tree", "feature", "x", "y"))
    assert direct.branch == "feature/x/y" and "ondev" in direct.tags.list()
    assert direct.checkout_version("t1").version == 1
    with pytest.raises(NotFound):
        open_dataset(refs_ds, "nope")


def test_writers_are_byte_identical(refs_ds):
    store = open_store(refs_ds)
    for name, tag in refs.list_tags(store).items():
        if len(tag.metadata) > 1:
            continue  # HashMap order is random with two keys or more
        raw = store.get(layout.tag_key(name))
        assert refs.tag_json(branch=tag.branch if name != "ondev" else "dev", version=tag.version,
                             created_at=tag.created_at, updated_at=tag.updated_at,
                             manifest_size=tag.manifest_size, metadata=tag.metadata) == raw
        assert not raw.endswith(b"\n")
    for name, b in refs.list_branches(store).items():
        raw = store.get(layout.branch_key(name))
        assert refs.branch_json(parent_branch=b.parent_branch, identifier=b.identifier,
                                parent_version=b.parent_version, create_at=b.create_at,
                                manifest_size=b.manifest_size, metadata=b.metadata) == raw


def test_tag_json_exact_bytes():
    expected = (b'{\n  "branch": null,\n  "version": 3,\n  "createdAt": '
                b'"2026-11-22T04:00:46.737678605Z",\n  "updatedAt": '
                b'"2026-11-22T04:00:46.737678605Z",\n  "manifestSize": 503,\n  "metadata": {}\n}')
    assert refs.tag_json(version=3, created_at="2026-11-22T04:00:46.737678605Z",
                         updated_at=1795320046737678605, manifest_size=503) == expected


@pytest.mark.parametrize("text,expected", [
    ("2009-02-13T23:31:30.123Z", "2009-02-13T23:31:30.123Z"),
    ("2009-02-13T23:31:30Z", "2009-02-13T23:31:30Z"),
    ("2009-02-13T23:31:30.000001Z", "2009-02-13T23:31:30.000001Z"),
    ("2009-02-13T23:31:30.123400+02:00", "2009-02-13T21:31:30.123400Z"),
    ("2009-02-13T23:31:30.100000000Z", "2009-02-13T23:31:30.100Z"),
    ("2009-02-13T23:31:30.000000001Z", "2009-02-13T23:31:30.000000001Z"),
])
def test_autosi_timestamps(text, expected):
    assert refs.normalize_timestamp(text) == expected


def test_bad_timestamp_refused():
    with pytest.raises(ValueError):
        refs.parse_timestamp("yesterday")


def test_legacy_branch_identifier(pylance, tmp_path):
    uri = str(tmp_path / "ds")
    ds = pylance.write_dataset(pa.table({"a": [1]}), uri)
    ds.create_branch("leg", 1)
    path = os.path.join(uri, "_refs", "branches", "leg.json")
    doc = json.loads(open(path).read())
    del doc["identifier"]
    doc["createAt"] = 1234567890
    with open(path, "w") as fh:
        fh.write(json.dumps(doc))
    ours = refs.list_branches(open_store(uri))["leg"]
    assert ours.legacy_identifier
    assert ours.identifier == [(0, "f1b34bec695d74a7e36da6648e2a9492")]
    theirs = pylance.dataset(uri).branches.list()["leg"]
    assert [tuple(p) for p in theirs["branch_identifier"]] == ours.identifier


def _write_tag(uri, name, doc):
    d = os.path.join(uri, "_refs", "tags")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, layout.encode_ref_name(name) + ".json"), "w") as fh:
        fh.write(json.dumps(doc))


@pytest.mark.parametrize("doc", [
    {"branch": None, "version": 1},                            # no manifestSize
    {"branch": None, "manifestSize": 1},                       # no version
    {"branch": None, "version": "1", "manifestSize": 1},       # a string version
    {"branch": 3, "version": 1, "manifestSize": 1},            # a number branch
])
def test_invalid_tag_files_refused_like_pylance(pylance, tmp_path, doc):
    uri = str(tmp_path / "ds")
    pylance.write_dataset(pa.table({"a": [1]}), uri)
    _write_tag(uri, "bad", doc)
    with pytest.raises(FormatError) as e:
        refs.list_tags(open_store(uri))
    assert e.value.rule == "REFS-001"
    with pytest.raises(Exception):  # noqa: B017 - pylance fails the whole list
        pylance.dataset(uri).tags.list()


def test_tolerant_tag_reading(pylance, tmp_path):
    uri = str(tmp_path / "ds")
    pylance.write_dataset(pa.table({"a": [1]}), uri)
    _write_tag(uri, "min", {"version": 1, "manifestSize": 5, "extra": [1]})
    _write_tag(uri, "onmain", {"branch": "main", "version": 1, "manifestSize": 5})
    with open(os.path.join(uri, "_refs", "tags", "notes.txt"), "w") as fh:
        fh.write("ignored")
    tags = refs.list_tags(open_store(uri))
    assert set(tags) == {"min", "onmain"}
    assert tags["onmain"].branch is None and tags["min"].created_at is None
    assert set(pylance.dataset(uri).tags.list()) == {"min", "onmain"}
    assert open_dataset(uri, "min").version == 1


def test_no_refs_directory_means_no_refs(pylance, tmp_path):
    uri = str(tmp_path / "ds")
    pylance.write_dataset(pa.table({"a": [1]}), uri)
    ds = open_dataset(uri)
    assert ds.tags.list() == {} and ds.branches.list() == {}
