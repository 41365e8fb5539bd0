"""On S3 (moto), validating every version fetches each manifest, footer, transaction file and
deletion file at most once, counted twice: by the engine's counting store and by moto's own
request log (its recorder); with ``--cache`` on the bucket the second run fetches none of
the manifests again."""

from __future__ import annotations

import json
from collections import Counter
from urllib.parse import unquote, urlparse

import pyarrow as pa
import pytest

from conformance.engine import local, validate
from conformance.suite.servers import fresh_bucket_name

pytestmark = pytest.mark.s3


def _recorder(server, action: str) -> str:
    import requests

    method = requests.get if action == "download-recording" else requests.post
    resp = method(f"{server.endpoint}/moto-api/recorder/{action}", timeout=30)
    resp.raise_for_status()
    return resp.text


def _gets(server, bucket: str) -> Counter:
    """GET requests per object key of ``bucket`` in moto's recording."""
    out: Counter = Counter()
    for line in _recorder(server, "download-recording").splitlines():
        if not line.strip():
            continue
        entry = json.loads(line)
        path = unquote(urlparse(entry["url"]).path)
        if entry["method"] == "GET" and path.startswith(f"/{bucket}/") and \
                path != f"/{bucket}/":
            out[path[len(bucket) + 2:]] += 1
    return out


@pytest.fixture(scope="module")
def table(moto_server, pylance):
    """20 appends, a delete (a deletion file), a new column (every fragment judged again in
    the new schema, the deletion file named again), 3 more appends: on moto."""
    bucket = moto_server.create_bucket(fresh_bucket_name("once"))
    opts = moto_server.storage_options()
    uri = f"s3://{bucket}/t"
    for i in range(20):
        pylance.write_dataset(pa.table({"a": pa.array([2 * i, 2 * i + 1], pa.int64())}), uri,
                              mode="create" if i == 0 else "append", storage_options=opts)
    ds = pylance.dataset(uri, storage_options=opts)
    ds.delete("a = 3")
    pylance.dataset(uri, storage_options=opts).add_columns({"b": "a * 2"})
    for i in range(20, 23):
        pylance.write_dataset(pa.table({"a": pa.array([2 * i, 2 * i + 1], pa.int64()),
                                        "b": pa.array([4 * i, 4 * i + 2], pa.int64())}), uri,
                              mode="append", storage_options=opts)
    return bucket, uri, opts


def test_each_object_is_fetched_at_most_once(moto_server, table):
    bucket, uri, opts = table
    _recorder(moto_server, "reset-recording")
    _recorder(moto_server, "start-recording")
    try:
        p = local.plan(uri, versions="all", storage_options=opts)
    finally:
        _recorder(moto_server, "stop-recording")
    report = local.merge(p, [])
    assert report.conforms, report.render("text")
    logged = _gets(moto_server, bucket)
    counted = Counter({f"t/{k}": n for k, n in p.counts.gets_per_key.items()})
    assert counted == logged
    assert max(logged.values()) == 1, [k for k, n in logged.items() if n > 1]
    kinds = Counter(k.split("/")[1] for k in logged if not k.endswith("_hint.json"))
    assert kinds["_versions"] == 25 and kinds["_transactions"] == 25
    listed = moto_server.client("s3").list_objects_v2(Bucket=bucket, Prefix="t/data/")
    assert kinds["_deletions"] == 1 and kinds["data"] == listed["KeyCount"] == 43
    assert report.stats["objects_read_again"] == 0


def test_deep_fetches_no_footer_again(moto_server, table):
    """``--deep``: the deep checks read through the run's counting store too, and take each
    data file's size and footer from what the metadata checks fetched: still at most one
    GET per object, counted as moto logged them (these small files are whole in the tail
    window: the deep checks send no request)."""
    bucket, uri, opts = table
    metadata = validate(uri, versions="all", storage_options=opts)
    _recorder(moto_server, "reset-recording")
    _recorder(moto_server, "start-recording")
    try:
        report = validate(uri, versions="all", deep=True, storage_options=opts)
    finally:
        _recorder(moto_server, "stop-recording")
    assert report.conforms, report.render("text")
    stats = report.stats
    # (the files of the first 21 versions are judged again in the new schema: 63 checks)
    assert stats["data_files_decoded"] == stats["data_file_tails_kept"] == 63
    assert stats["objects_read_again"] == 0 and "data_files_read_directly" not in stats
    logged = _gets(moto_server, bucket)
    assert max(logged.values()) == 1, [k for k, n in logged.items() if n > 1]
    assert sum(logged.values()) == stats["store_gets"] == metadata.stats["store_gets"]


def test_the_cache_on_the_bucket_spares_the_manifests(moto_server, table):
    bucket, uri, opts = table
    cache = f"s3://{bucket}/cache/"
    first = validate(uri, versions="all", storage_options=opts, cache=cache)
    _recorder(moto_server, "reset-recording")
    _recorder(moto_server, "start-recording")
    try:
        again = validate(uri, versions="all", storage_options=opts, cache=cache)
    finally:
        _recorder(moto_server, "stop-recording")
    assert again.stats["versions_from_cache"] == 25
    logged = _gets(moto_server, bucket)
    assert not [k for k in logged if k.endswith(".manifest") or k.startswith(
        ("t/data/", "t/_deletions/", "t/_transactions/"))]
    assert [k for k in logged if k.startswith("cache/")]
    da, db = first.as_dict(), again.as_dict()
    for d in (da, db):
        d.pop("elapsed_s")
        d.pop("stats")
    assert da == db
