"""Portability: a dataset is a directory of relative paths, so it moves by copying.

Spec 000/001 "Base Paths" and the layout rules: every path inside a manifest is relative
to the dataset root, except ``base_paths``, which name other roots. Hence (a) copying a
dataset root between local disk and S3, or between buckets, must read identically at
every version, in our reader and in pylance 14.0.2; (b) a shallow clone may live on
another store than its source; and (c) a multi-base dataset moves by rewriting only
``base_paths`` in its manifests -- nothing else needs to change.
"""

from __future__ import annotations

import shutil

import pyarrow as pa
import pytest

from reference_impl import dataset_ops
from reference_impl.dataset import open_dataset
from reference_impl.io.uri import open_store
from reference_impl.table.manifest import encode_manifest_file, read_manifest_file
from reference_impl.table.versions import list_versions
from reference_impl.write import write_dataset

pytestmark = pytest.mark.s3


def _copy_tree(src, dst) -> int:
    n = 0
    for info in src.list(""):
        dst.put(info.key, src.get(info.key))
        n += 1
    return n


def _history(uri: str, opts: dict | None = None) -> str:
    """A dataset with five versions: create, append, delete, update, add a column."""
    write_dataset(pa.table({"id": pa.array(range(6), pa.int64()), "s": [f"r{i}" for i in range(6)]}),
                  uri, mode="create", storage_options=opts)
    write_dataset(pa.table({"id": pa.array(range(6, 10), pa.int64()), "s": ["a", "b", "c", "d"]}),
                  uri, mode="append", storage_options=opts)
    ds = open_dataset(uri, storage_options=opts)
    ds = dataset_ops.delete(ds, "id < 2")
    ds = dataset_ops.update(ds, {"s": "'changed'"}, where="id = 7")
    dataset_ops.add_columns(ds, pa.schema([("extra", pa.int32())]))
    return uri


def _snapshot(uri: str, opts: dict | None = None) -> dict[int, pa.Table]:
    out = {}
    for e in list_versions(open_store(uri, opts)):
        t = open_dataset(uri, version=e.version, storage_options=opts).to_table()
        out[e.version] = t.sort_by("id")
    return out


def _pylance_snapshot(lance, uri: str, opts: dict | None = None) -> dict[int, pa.Table]:
    ds = lance.dataset(uri, storage_options=opts or None)
    return {v["version"]: lance.dataset(uri, version=v["version"], storage_options=opts or None)
            .to_table().sort_by("id") for v in ds.versions()}


def _assert_same(a: dict[int, pa.Table], b: dict[int, pa.Table]) -> None:
    assert sorted(a) == sorted(b)
    for v in a:
        assert a[v].equals(b[v]), f"version {v} differs"


def test_copy_local_to_s3_and_back(tmp_path, s3_bucket, pylance):
    src = _history(str(tmp_path / "src"))
    before = _snapshot(src)
    assert len(before) == 5
    opts = s3_bucket.storage_options
    s3_uri = f"{s3_bucket.uri}/moved/ds"
    assert _copy_tree(open_store(src), open_store(s3_uri, opts)) > 5
    _assert_same(before, _snapshot(s3_uri, opts))
    _assert_same(before, _pylance_snapshot(pylance, s3_uri, opts))
    back = str(tmp_path / "back")
    _copy_tree(open_store(s3_uri, opts), open_store(back))
    _assert_same(before, _snapshot(back))
    _assert_same(before, _pylance_snapshot(pylance, back))
    # the copy is a dataset in its own right: it takes a commit
    write_dataset(pa.table({"id": pa.array([99], pa.int64()), "s": ["z"], "extra": pa.array([1], pa.int32())}),
                  s3_uri, mode="append", storage_options=opts)
    assert pylance.dataset(s3_uri, storage_options=opts).count_rows() == before[5].num_rows + 1


@pytest.mark.slow
def test_copy_between_buckets(request, pylance):
    from conformance.suite.servers import _new_bucket

    a, b = _new_bucket(request, "moto"), _new_bucket(request, "moto")
    src = _history(f"{a.uri}/ds", a.storage_options)
    before = _snapshot(src, a.storage_options)
    dst = f"{b.uri}/elsewhere/deeper/ds"
    _copy_tree(open_store(src, a.storage_options), open_store(dst, b.storage_options))
    _assert_same(before, _snapshot(dst, b.storage_options))
    _assert_same(before, _pylance_snapshot(pylance, dst, b.storage_options))


# -- copies made by a second, independent S3 client (the MinIO SDK) ------------------------

@pytest.fixture(scope="module")
def local_history(tmp_path_factory):
    """The five-version dataset on local disk, and what our reader reads at each version."""
    uri = _history(str(tmp_path_factory.mktemp("history") / "ds"))
    before = _snapshot(uri)
    assert len(before) == 5
    return uri, before


def _bucket(request, kind: str):
    """A fresh bucket on ``kind``: a server the suite starts, or the MinIO server given by
    ``$LANCE_CONFORMANCE_MINIO_ENDPOINT`` (skipped with the reason when none is given)."""
    from conformance.suite.servers import _new_bucket, fresh_bucket_name

    if kind != "minio":
        return _new_bucket(request, kind)
    from conformance.suite.servers import S3Bucket, given_endpoint

    server = given_endpoint(request)
    name = server.create_bucket(fresh_bucket_name("minio"))
    return S3Bucket(server, name, server.storage_options())


@pytest.mark.parametrize(("src_kind", "dst_kind"), [
    ("moto", "moto"),            # between buckets of one server: server-side CopyObject
    ("moto", "seaweedfs"),       # between stores: downloaded and uploaded
    ("seaweedfs", "moto"),
    ("moto", "minio"),           # a MinIO server, when one is given by endpoint
    ("minio", "seaweedfs"),
])
def test_copy_with_the_second_client(src_kind, dst_kind, request, pylance, local_history):
    """A dataset written by boto3 (our writer), copied object by object by the MinIO SDK to
    another bucket or server, reads identically at every version in both readers."""
    from conformance.concurrency.second_client import copy_prefix

    local, before = local_history
    a, b = _bucket(request, src_kind), _bucket(request, dst_kind)
    src = f"{a.uri}/ds"
    written = _copy_tree(open_store(local), open_store(src, a.storage_options))  # boto3
    dst = f"{b.uri}/copied/by-minio/ds"
    n = copy_prefix(src, a.storage_options, dst, b.storage_options, page_size=4)
    assert n == written > 5
    _assert_same(before, _snapshot(dst, b.storage_options))
    _assert_same(before, _pylance_snapshot(pylance, dst, b.storage_options))


def test_shallow_clone_on_another_store(tmp_path, s3_bucket, pylance):
    """The source on local disk, the clone on S3: the clone's base path names the local
    root, and both readers follow it."""
    src = _history(str(tmp_path / "src"))
    ds = open_dataset(src, version=4)
    clone_uri = f"{s3_bucket.uri}/clone"
    opts = s3_bucket.storage_options
    clone = dataset_ops.shallow_clone(ds, clone_uri, storage_options=opts)
    assert clone.version == 4
    assert [b.path for b in clone.manifest.base_paths] == [str(tmp_path / "src")]
    expected = ds.to_table().sort_by("id")
    assert clone.to_table().sort_by("id").equals(expected)
    assert pylance.dataset(clone_uri, storage_options=opts).to_table().sort_by("id").equals(expected)
    # nothing of the source was copied: the clone holds no data file
    assert not [i for i in open_store(clone_uri, opts).list("data/")]


def _move_bases(uri: str, old: str, new: str) -> int:
    """Rewrite ``base_paths`` entries equal to ``old`` in every manifest; nothing else."""
    store = open_store(uri)
    changed = 0
    for e in list_versions(store):
        mf = read_manifest_file(store, e.key)
        edited = False
        for bp in mf.manifest.base_paths:
            if bp.path == old:
                bp.path = new
                edited = True
        if edited:
            store.put(e.key, encode_manifest_file(mf.manifest, transaction=mf.transaction_bytes,
                                                  index_section=mf.index_section))
            changed += 1
    return changed


def test_move_a_multi_base_dataset_by_rewriting_base_paths(tmp_path, pylance):
    src = _history(str(tmp_path / "src"))
    clone_uri = str(tmp_path / "clone")
    dataset_ops.shallow_clone(open_dataset(src), clone_uri)
    # the clone gets versions of its own: its own files next to the source's
    write_dataset(pa.table({"id": pa.array([50, 51], pa.int64()), "s": ["x", "y"],
                            "extra": pa.array([5, 6], pa.int32())}), clone_uri, mode="append")
    before = _snapshot(clone_uri)
    pl_before = _pylance_snapshot(pylance, clone_uri)
    _assert_same(before, pl_before)
    moved = str(tmp_path / "moved-src")
    shutil.copytree(src, moved)
    shutil.rmtree(src)
    # negative: without the rewrite the clone no longer reads
    with pytest.raises(Exception):  # noqa: B017 - NotFound from us; anything from a failed read
        open_dataset(clone_uri).to_table()
    assert _move_bases(clone_uri, str(tmp_path / "src"), moved) == len(before)
    _assert_same(before, _snapshot(clone_uri))
    _assert_same(before, _pylance_snapshot(pylance, clone_uri))
    from conformance.engine.local import validate

    rep = validate(clone_uri, versions="all")
    assert not rep.violations, [f"{f.rule}: {f.message}" for f in rep.violations]
