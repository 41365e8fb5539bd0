"""External manifest store (spec 001 "External Manifest Store"; REFS-NAMESPACE-COMMIT.md
§8.4): the KV backends (SQLite, DynamoDB on moto), the four-step commit with a crash
injected after each step, reader repair, and pylance reading what we committed."""

from __future__ import annotations

import uuid

import numpy as np
import pyarrow as pa
import pytest

from reference_impl.errors import AlreadyExists, NotFound
from reference_impl.io.local import LocalStore
from reference_impl.table import commit, layout
from reference_impl.table.external_store import DynamoDBManifestStore, SQLiteManifestStore
from reference_impl.write import write_dataset

from .test_commit import FV

STEPS = ["stage", "commit", "copy", "repoint"]


class Crash(Exception):
    """Stands for the writer process dying."""


def table(n, start=0):
    return pa.table({"id": pa.array(np.arange(start, start + n), pa.int64())})


@pytest.fixture
def ddb(moto_server):
    name = moto_server.create_dynamodb_table(f"t{uuid.uuid4().hex[:12]}")
    opts = moto_server.storage_options()
    return DynamoDBManifestStore(name, endpoint_url=moto_server.endpoint, region=opts["aws_region"],
                                 aws_access_key_id=opts["aws_access_key_id"],
                                 aws_secret_access_key=opts["aws_secret_access_key"])


@pytest.fixture(params=["sqlite", "dynamodb"])
def kv(request, tmp_path):
    if request.param == "sqlite":
        return SQLiteManifestStore(str(tmp_path / "kv.sqlite"))
    return request.getfixturevalue("ddb")


def test_kv_semantics(kv):
    assert kv.latest("a/ds") is None
    kv.put_if_not_exists("a/ds", 1, "a/ds/_versions/x-1", size=10)
    with pytest.raises(AlreadyExists):
        kv.put_if_not_exists("a/ds", 1, "other", size=1)
    with pytest.raises(NotFound):
        kv.put("a/ds", 2, "nope", size=1)
    kv.put("a/ds", 1, "a/ds/_versions/1.manifest", size=10)
    kv.put_if_not_exists("a/ds", 2, "a/ds/_versions/2.manifest", size=10)
    kv.put_if_not_exists("b/ds", 9, "b/ds/_versions/9.manifest", size=10)
    assert kv.get("a/ds", 1) == "a/ds/_versions/1.manifest"
    assert kv.latest("a/ds") == (2, "a/ds/_versions/2.manifest")
    with pytest.raises(NotFound):
        kv.get("a/ds", 3)


def test_dynamodb_rows_look_like_pylance_rows(ddb, moto_server, tmp_path):
    root = tmp_path / "ds"
    write_dataset(table(3), str(root), data_storage_version=FV, external_store=ddb)
    base = commit.base_uri_of(LocalStore(root))
    items = moto_server.client("dynamodb").scan(TableName=ddb.table_name)["Items"]
    [item] = items
    assert item["base_uri"]["S"] == base
    assert item["version"]["N"] == "1"
    assert item["path"]["S"] == f"{base}/_versions/{layout.manifest_name_v2(1)}"
    assert item["committer"]["S"] == "lancedb"
    assert int(item["size"]["N"]) == (root / "_versions" / layout.manifest_name_v2(1)).stat().st_size


def test_dynamodb_refuses_wrong_key_schema(moto_server):
    client = moto_server.client("dynamodb")
    name = f"bad{uuid.uuid4().hex[:8]}"
    client.create_table(TableName=name, KeySchema=[{"AttributeName": "k", "KeyType": "HASH"}],
                        AttributeDefinitions=[{"AttributeName": "k", "AttributeType": "S"}],
                        BillingMode="PAY_PER_REQUEST")
    from reference_impl.errors import StoreError

    opts = moto_server.storage_options()
    with pytest.raises(StoreError):
        DynamoDBManifestStore(name, endpoint_url=moto_server.endpoint, region=opts["aws_region"],
                              aws_access_key_id=opts["aws_access_key_id"],
                              aws_secret_access_key=opts["aws_secret_access_key"])


@pytest.mark.parametrize("step", STEPS)
def test_crash_after_each_step(kv, tmp_path, pylance, step):
    root = tmp_path / "ds"
    write_dataset(table(3), str(root), data_storage_version=FV, external_store=kv)
    store = LocalStore(root)

    def crash(at):
        if at == step:
            raise Crash(at)

    from reference_impl.table import operations
    from reference_impl.write import write_fragments

    fields = list(commit.load_version(store, 1).manifest.fields)
    txn = operations.append(1, write_fragments(store, table(2, 3), fields, file_version=FV))
    with pytest.raises(Crash):
        commit.commit_transaction(store, txn, external_store=kv, crash_after=crash)

    committed = 1 if step == "stage" else 2     # the KV put is the commit point
    on_disk = 2 if step in ("copy", "repoint") else 1
    # a reader unaware of the store is at most one version behind
    assert commit.latest_version_or_zero(store) == on_disk
    assert pylance.dataset(str(root)).version == on_disk >= committed - 1
    # our reader with the store repairs and sees the committed version
    version, key = commit.resolve_latest_with_external_store(store, kv)
    assert version == committed
    assert key == layout.manifest_key(committed, layout.SCHEME_V2)
    assert kv.latest(commit.base_uri_of(store))[1].endswith(".manifest")
    leftovers = [p for p in (root / "_versions").iterdir() if "-" in p.name]
    # a staging object not yet cleaned up stays behind, ignored by readers (as pylance's)
    assert len(leftovers) == (step in ("stage", "repoint"))
    ds = pylance.dataset(str(root))
    assert ds.version == committed
    assert ds.count_rows() == 3 + 2 * (committed == 2)
    ds.validate()
    # and the next commit goes on from there
    write_dataset(table(1, 10), str(root), mode="append", external_store=kv)
    assert pylance.dataset(str(root)).version == committed + 1


def test_commit_point_is_the_kv_put(tmp_path):
    """Two writers racing on the KV store: the loser retries at the next version."""
    kv = SQLiteManifestStore()
    root = tmp_path / "ds"
    write_dataset(table(1), str(root), data_storage_version=FV, external_store=kv)
    store = LocalStore(root)
    base = commit.base_uri_of(store)
    kv.put_if_not_exists(base, 2, f"{base}/_versions/{layout.manifest_name_v2(2)}-taken", size=1)
    # the row for v2 points at a staging object that does not exist and no final: refuse
    from reference_impl.errors import FormatError

    with pytest.raises(FormatError):
        commit.resolve_latest_with_external_store(store, kv)


def test_pylance_reads_our_s3_ddb_commits(moto_server, ddb, pylance):
    bucket = moto_server.create_bucket(f"lc-ext-{uuid.uuid4().hex[:12]}")
    opts = moto_server.storage_options()
    uri = f"s3://{bucket}/ds"
    write_dataset(table(3), uri, storage_options=opts, data_storage_version=FV, external_store=ddb)
    write_dataset(table(2, 3), uri, mode="append", storage_options=opts, external_store=ddb)
    ds = pylance.dataset(f"s3+ddb://{bucket}/ds?ddbTableName={ddb.table_name}", storage_options=opts)
    assert ds.version == 2 and ds.to_table().equals(table(5))
    # pylance appends through the same table; we continue after it
    pylance.write_dataset(table(1, 5), f"s3+ddb://{bucket}/ds?ddbTableName={ddb.table_name}",
                          mode="append", storage_options=opts)
    assert ddb.latest("ds")[0] == 3
    write_dataset(table(1, 6), uri, mode="append", storage_options=opts, external_store=ddb)
    ds = pylance.dataset(f"s3+ddb://{bucket}/ds?ddbTableName={ddb.table_name}", storage_options=opts)
    assert ds.version == 4 and ds.to_table().equals(table(7))


# -- s3+ddb:// URIs (REFS-NAMESPACE-COMMIT.md §8.4) ------------------------------------------
def test_s3_ddb_uri_needs_exactly_one_table_parameter():
    from reference_impl.errors import InvalidInput
    from reference_impl.table.external_store import is_s3_ddb_uri, split_s3_ddb_uri

    assert split_s3_ddb_uri("s3+ddb://bkt/deep/ds?ddbTableName=T") == ("s3://bkt/deep/ds", "T")
    assert is_s3_ddb_uri("S3+DDB://bkt/ds?ddbTableName=T") and not is_s3_ddb_uri("s3://bkt/ds")
    for bad in ("s3+ddb://bkt/ds", "s3+ddb://bkt/ds?ddbTableName=", "s3+ddb://bkt/ds?other=T",
                "s3+ddb://bkt/ds?ddbTableName=T&x=1", "s3+ddb:///ds?ddbTableName=T"):
        with pytest.raises(InvalidInput):
            split_s3_ddb_uri(bad)
    with pytest.raises(InvalidInput):
        write_dataset(table(1), "s3+ddb://bkt/ds?ddbTableName=T&x=1")


def test_s3_ddb_uris_interoperate_with_pylance(moto_server, pylance):
    from reference_impl.dataset import open_dataset

    bucket = moto_server.create_bucket(f"lc-ddb-{uuid.uuid4().hex[:12]}")
    tname = moto_server.create_dynamodb_table(f"t{uuid.uuid4().hex[:12]}")
    opts = moto_server.storage_options()
    uri = f"s3+ddb://{bucket}/deep/ds?ddbTableName={tname}"
    ds = write_dataset(table(3), uri, storage_options=opts, data_storage_version=FV)
    assert ds.uri == uri and ds.version == 1
    items = moto_server.client("dynamodb").scan(TableName=tname)["Items"]
    [item] = items
    final = f"deep/ds/_versions/{layout.manifest_name_v2(1)}"
    assert item["base_uri"]["S"] == "deep/ds" and item["version"]["N"] == "1"
    assert item["path"]["S"] == final and item["committer"]["S"] == "lancedb"
    s3 = moto_server.client("s3")
    assert int(item["size"]["N"]) == s3.head_object(Bucket=bucket, Key=final)["ContentLength"]
    # pylance reads ours, appends; we read pylance's commit and go on (a delete, through the table)
    theirs = pylance.dataset(uri, storage_options=opts)
    assert theirs.version == 1 and theirs.to_table().equals(table(3))
    pylance.write_dataset(table(2, 3), uri, mode="append", storage_options=opts)
    ours = open_dataset(uri, storage_options=opts)
    assert ours.version == 2 and ours.to_table().equals(table(5))
    ours = ours.delete("id = 0")
    assert ours.version == 3 and ours.uri == uri
    rows = moto_server.client("dynamodb").scan(TableName=tname)["Items"]
    assert sorted(int(r["version"]["N"]) for r in rows) == [1, 2, 3]
    assert all(r["path"]["S"].endswith(".manifest") for r in rows)
    theirs = pylance.dataset(uri, storage_options=opts)
    assert theirs.version == 3 and theirs.to_table()["id"].to_pylist() == [1, 2, 3, 4]
    # the DynamoDB row is what counts: a row that names v4 is seen before any listing does
    ds4 = write_dataset(table(1, 9), uri, mode="append", storage_options=opts)
    assert ds4.version == 4 and pylance.dataset(uri, storage_options=opts).count_rows() == 5


def test_s3_ddb_reader_repairs_a_commit_stopped_after_its_commit_point(moto_server, pylance):
    from reference_impl.dataset import open_dataset
    from reference_impl.table import operations
    from reference_impl.table.external_store import store_for_s3_ddb
    from reference_impl.write import write_fragments

    bucket = moto_server.create_bucket(f"lc-ddb-{uuid.uuid4().hex[:12]}")
    tname = moto_server.create_dynamodb_table(f"t{uuid.uuid4().hex[:12]}")
    opts = moto_server.storage_options()
    uri = f"s3+ddb://{bucket}/ds?ddbTableName={tname}"
    write_dataset(table(3), uri, storage_options=opts, data_storage_version=FV)
    store, kv = store_for_s3_ddb(uri, opts)

    def crash(at):
        if at == "commit":
            raise Crash(at)

    fields = list(commit.load_version(store, 1).manifest.fields)
    txn = operations.append(1, write_fragments(store, table(2, 3), fields, file_version=FV))
    with pytest.raises(Crash):
        commit.commit_transaction(store, txn, external_store=kv, crash_after=crash)
    assert "-" in kv.latest("ds")[1].rsplit("/", 1)[1]  # the row names the staging object
    assert pylance.dataset(f"s3://{bucket}/ds", storage_options=opts).version == 1
    ds = open_dataset(uri, storage_options=opts)  # our reader repairs
    assert ds.version == 2 and ds.count_rows() == 5
    assert kv.latest("ds") == (2, f"ds/_versions/{layout.manifest_name_v2(2)}")
    keys = [o["Key"] for o in moto_server.client("s3").list_objects_v2(
        Bucket=bucket, Prefix="ds/_versions/")["Contents"]]
    assert not [k for k in keys if "manifest-" in k]
    assert pylance.dataset(f"s3://{bucket}/ds", storage_options=opts).version == 2
