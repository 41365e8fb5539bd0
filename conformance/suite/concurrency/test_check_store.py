"""Store qualification (``conformance.concurrency.store_check`` and ``lance-conformance check-store``).

Positive controls: the local file system, the memory store and SeaweedFS are SAFE.
Negative controls: moto with conditional writes switched off and s3rver (npm), which
both ignore ``If-None-Match``, must be called UNSAFE; in-process stores that break one
property each (conditional writes, listing, ranged reads) fail exactly that check.
"""

from __future__ import annotations

import json
import os
import re

import pytest

from conformance.cli import main as cli_main
from conformance.concurrency.store_check import (
    CHECK_PREFIX,
    LISTING_OBJECTS,
    LISTING_PAGE,
    SAFE,
    SECOND_CLIENT_CHECKS,
    UNREACHABLE,
    UNSAFE,
    check_store,
)
from conformance.servers import free_port
from conformance.suite.servers import fresh_bucket_name
from reference_impl.io.memory import MemoryStore


def _failed(report) -> set[str]:
    return {c.name for c in report.checks if not c.passed}


# -- positive controls -------------------------------------------------------------------

def test_local_store_is_safe_and_cleaned_up(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    (root / "keep.txt").write_bytes(b"user data")
    report = check_store(str(root), clients=4, rounds=3)
    assert report.verdict == SAFE, report.render()
    assert report.exit_code == 0 and report.reasons == []
    assert [c.name for c in report.checks] == [
        "reachable", "refuses-existing", "atomic-create", "list-after-write", "ranged-reads",
        "second-client"]
    second = report.checks[-1]
    assert second.skipped and "not an S3 store" in second.detail
    assert "[skip] second-client" in report.render()
    assert sorted(p.name for p in root.iterdir()) == ["keep.txt"]  # no leftovers


def test_memory_store_is_safe():
    report = check_store(MemoryStore("check"), clients=4, rounds=3)
    assert report.verdict == SAFE, report.render()


@pytest.mark.s3
def test_seaweedfs_is_safe(s3_bucket_seaweedfs):
    bucket = s3_bucket_seaweedfs
    report = check_store(f"{bucket.uri}/ds", bucket.storage_options, clients=4, rounds=2)
    assert report.verdict == SAFE, report.render()
    _assert_second_client_passed(report)
    assert report.leftover_keys == 0
    assert list(bucket.store().list(CHECK_PREFIX)) == []


# -- the second client (the MinIO SDK reads back what boto3 wrote) -----------------------

def _assert_second_client_passed(report) -> None:
    seen = {c.name: c for c in report.checks if c.name.startswith("second-client")}
    assert sorted(seen) == sorted(SECOND_CLIENT_CHECKS), report.render()
    for c in seen.values():
        assert c.passed and not c.skipped, report.render()
    assert "MinIO SDK" in seen["second-client-listing"].detail
    # more keys than one page: the listing really was paginated
    pages = int(re.search(r"in (\d+) pages", seen["second-client-listing"].detail).group(1))
    assert pages >= -(-LISTING_OBJECTS // LISTING_PAGE) >= 2


@pytest.mark.s3
@pytest.mark.parametrize("server", ["moto", "seaweedfs"])
def test_cli_reports_the_second_client(server, request, capsys):
    """``check-store`` on moto and SeaweedFS: the second client's read-back is reported as
    checks of its own, in text and in JSON. (moto's verdict itself is not asserted: its
    create-if-absent is checked without a lock, see ENVIRONMENT.md.)"""
    from conformance.suite.servers import _new_bucket

    bucket = _new_bucket(request, server)
    args = ["check-store", f"{bucket.uri}/ds", "--clients", "2", "--rounds", "1"]
    for key, value in bucket.storage_options.items():
        args += ["-o", f"{key}={value}"]
    cli_main(args)
    text = capsys.readouterr().out
    for name in SECOND_CLIENT_CHECKS:
        assert f"[pass] {name}: " in text, text
    cli_main([*args, "--json"])
    out = json.loads(capsys.readouterr().out)
    checks = {c["name"]: c for c in out["checks"]}
    assert all(checks[n]["passed"] and not checks[n]["skipped"] for n in SECOND_CLIENT_CHECKS)
    if server == "seaweedfs":
        assert out["verdict"] == SAFE and out["exit_code"] == 0


@pytest.mark.s3
def test_cli_endpoint_flag(s3_bucket_seaweedfs, capsys):
    """``--endpoint URL`` stands for ``-o aws_endpoint=URL -o allow_http=true``."""
    bucket = s3_bucket_seaweedfs
    opts = bucket.storage_options
    args = ["check-store", bucket.uri, "--endpoint", opts["aws_endpoint"], "--clients", "2",
            "--rounds", "1", "-o", f"aws_access_key_id={opts['aws_access_key_id']}",
            "-o", f"aws_secret_access_key={opts['aws_secret_access_key']}"]
    assert cli_main(args) == 0
    assert "[pass] second-client-metadata" in capsys.readouterr().out


class _TruncatingS3Store:
    """Wraps an S3 store so that what boto3 writes under ``second-client/`` loses its last
    byte: what the second client reads back then differs from what the check wrote."""

    @staticmethod
    def wrap(store):
        from reference_impl.io.s3 import S3Store

        class Truncating(S3Store):
            def put(self, key, data):
                if key.startswith("second-client/") and len(data) > 1:
                    data = bytes(data)[:-1]
                super().put(key, data)

            def child(self, prefix):
                return Truncating(self.bucket, self._key(prefix), self.storage_options,
                                  _client=self._client)

        return Truncating(store.bucket, store.prefix, store.storage_options, _client=store._client)


@pytest.mark.s3
def test_second_client_catches_a_wrong_read_back(s3_bucket):
    store = _TruncatingS3Store.wrap(s3_bucket.store("ds"))
    report = check_store(store, clients=2, rounds=1)
    assert report.verdict == UNSAFE
    assert _failed(report) >= {"second-client-listing", "second-client-ranged-reads",
                               "second-client-metadata"}
    detail = {c.name: c.detail for c in report.checks}
    assert "wrong sizes" in detail["second-client-listing"]
    assert "the whole object differs" in detail["second-client-ranged-reads"]


@pytest.mark.s3
def test_second_client_catches_a_listing_without_pages(s3_bucket, monkeypatch):
    """A lister that ignores the page size (one page for everything) fails the listing check."""
    from conformance.concurrency import second_client

    real = second_client.list_prefix

    def one_page(sc, bucket, prefix, *, page_size=1000):
        return real(sc, bucket, prefix, page_size=1000)

    monkeypatch.setattr(second_client, "list_prefix", one_page)
    report = check_store(f"{s3_bucket.uri}/ds", s3_bucket.storage_options, clients=2, rounds=1)
    assert "second-client-listing" in _failed(report)
    assert "pagination was not exercised" in next(
        c.detail for c in report.checks if c.name == "second-client-listing")


def test_second_client_refuses_plain_http_without_allow_http():
    from conformance.concurrency.second_client import minio_client
    from reference_impl.errors import InvalidInput

    with pytest.raises(InvalidInput):
        minio_client({"aws_endpoint": "http://127.0.0.1:1"})
    sc = minio_client({"aws_endpoint": "http://127.0.0.1:1", "allow_http": "true",
                       "aws_access_key_id": "a", "aws_secret_access_key": "b"})
    assert sc.endpoint == "http://127.0.0.1:1"


# -- a MinIO server given by endpoint (none can be installed here) ---------------------------

@pytest.fixture(scope="module")
def minio_endpoint(request):
    """An S3 server given by endpoint: ``$LANCE_CONFORMANCE_MINIO_ENDPOINT`` (a MinIO server)
    when set, else the suite's SeaweedFS given by its URL (see ``given_endpoint``)."""
    from conformance.suite.servers import given_endpoint

    return given_endpoint(request)


@pytest.mark.s3
def test_minio_endpoint_is_safe_and_reads_back(minio_endpoint, capsys):
    bucket = minio_endpoint.create_bucket(fresh_bucket_name("minio"))
    report = check_store(f"s3://{bucket}/ds", minio_endpoint.storage_options(), clients=4, rounds=2)
    assert report.verdict == SAFE, report.render()
    _assert_second_client_passed(report)
    args = ["check-store", f"s3://{bucket}", "--endpoint", minio_endpoint.endpoint,
            "-o", f"aws_access_key_id={minio_endpoint.access_key}",
            "-o", f"aws_secret_access_key={minio_endpoint.secret_key}",
            "-o", f"aws_region={minio_endpoint.region}", "--clients", "2", "--rounds", "1"]
    assert cli_main(args) == 0
    assert "[pass] second-client-listing" in capsys.readouterr().out


def test_minio_endpoint_from_env(monkeypatch):
    from conformance.servers import ServerUnavailable, minio_from_env
    from conformance.servers.minio_endpoint import ENV_ACCESS_KEY, ENV_ENDPOINT

    monkeypatch.delenv(ENV_ENDPOINT, raising=False)
    assert minio_from_env() is None
    monkeypatch.setenv(ENV_ENDPOINT, "http://127.0.0.1:9000/")
    monkeypatch.setenv(ENV_ACCESS_KEY, "me")
    server = minio_from_env()
    assert server.endpoint == "http://127.0.0.1:9000"
    assert server.storage_options()["aws_access_key_id"] == "me"
    assert server.storage_options()["allow_http"] == "true"
    monkeypatch.setenv(ENV_ENDPOINT, "127.0.0.1:9000")
    with pytest.raises(ServerUnavailable):
        minio_from_env()


# -- negative controls on real servers ---------------------------------------------------

@pytest.mark.s3
def test_moto_ignoring_conditional_writes_is_unsafe(moto_unsafe_server):
    bucket = moto_unsafe_server.create_bucket("lc-unsafe")
    report = check_store(f"s3://{bucket}/ds", moto_unsafe_server.storage_options(), clients=4, rounds=2)
    assert report.verdict == UNSAFE
    assert report.exit_code == 1
    assert _failed(report) == {"refuses-existing", "atomic-create"}
    race = next(c for c in report.checks if c.name == "atomic-create")
    assert "more than one writer" in race.detail


@pytest.mark.s3
def test_s3rver_is_unsafe(s3rver_server):
    bucket = s3rver_server.create_bucket("lc-s3rver")
    report = check_store(f"s3://{bucket}", s3rver_server.storage_options(), clients=4, rounds=2)
    assert report.verdict == UNSAFE, report.render()
    assert {"refuses-existing", "atomic-create"} <= _failed(report)


def test_unreachable_store():
    options = {"aws_endpoint": f"http://127.0.0.1:{free_port()}", "allow_http": "true",
               "aws_access_key_id": "a", "aws_secret_access_key": "b"}
    report = check_store("s3://bucket/ds", options, clients=2, rounds=1)
    assert report.verdict == UNREACHABLE and report.exit_code == 2
    assert _failed(report) == {"reachable"}


# -- negative controls in process: one broken property each -----------------------------

class IgnoresConditionalWrites(MemoryStore):
    """put_if_not_exists overwrites, like s3rver."""

    def put_if_not_exists(self, key, data):
        self.put(key, data)

    def child(self, prefix):
        return IgnoresConditionalWrites(self._name, _bucket=self._bucket, _prefix=self._k(prefix) + "/")


class LaggingListing(MemoryStore):
    """Listings miss the most recently written object."""

    def list(self, prefix=""):
        items = sorted(super().list(prefix), key=lambda i: i.key)
        return iter(items[:-1])

    def child(self, prefix):
        return LaggingListing(self._name, _bucket=self._bucket, _prefix=self._k(prefix) + "/")


class ShortRanges(MemoryStore):
    """Ranged reads past the end are cut short instead of refused."""

    def get_range(self, key, start, length):
        return self.get(key)[start:start + length]

    def child(self, prefix):
        return ShortRanges(self._name, _bucket=self._bucket, _prefix=self._k(prefix) + "/")


class CorruptRanges(MemoryStore):
    """Ranged reads return the wrong bytes (an off-by-one in the Range header)."""

    def get_range(self, key, start, length):
        data = self.get(key)
        return data[start + 1:start + 1 + length] if start + length < len(data) else super().get_range(
            key, start, length)

    def child(self, prefix):
        return CorruptRanges(self._name, _bucket=self._bucket, _prefix=self._k(prefix) + "/")


@pytest.mark.parametrize(("store_cls", "broken"), [
    (IgnoresConditionalWrites, {"refuses-existing", "atomic-create"}),
    (LaggingListing, {"list-after-write"}),
    (ShortRanges, {"ranged-reads"}),
    (CorruptRanges, {"ranged-reads"}),
])
def test_each_broken_property_is_caught(store_cls, broken):
    report = check_store(store_cls("broken"), clients=4, rounds=2)
    assert report.verdict == UNSAFE
    assert _failed(report) == broken


def test_check_arguments_are_validated():
    with pytest.raises(ValueError):
        check_store(MemoryStore(), clients=1)
    with pytest.raises(ValueError):
        check_store(MemoryStore(), rounds=0)


# -- the command ---------------------------------------------------------------------------

def test_cli_safe_json(tmp_path, capsys):
    code = cli_main(["check-store", str(tmp_path), "--clients", "3", "--rounds", "2", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    assert out["verdict"] == SAFE and out["exit_code"] == 0 and out["clients"] == 3
    assert os.listdir(tmp_path) == []


def test_cli_text_output(tmp_path, capsys):
    assert cli_main(["check-store", f"file://{tmp_path}", "--clients", "2", "--rounds", "1"]) == 0
    out = capsys.readouterr().out
    assert out.strip().splitlines()[-1] == "verdict: SAFE"


@pytest.mark.s3
def test_cli_unsafe_exit_1(moto_unsafe_server, capsys):
    bucket = moto_unsafe_server.create_bucket("lc-unsafe-cli")
    args = ["check-store", f"s3://{bucket}", "--clients", "3", "--rounds", "1"]
    for key, value in moto_unsafe_server.storage_options().items():
        args += ["-o", f"{key}={value}"]
    assert cli_main(args) == 1
    out = capsys.readouterr().out
    assert "verdict: UNSAFE" in out and "reason: refuses-existing" in out


@pytest.mark.parametrize("args", [
    ["check-store", "/tmp", "-o", "no-equals-sign"],
    ["check-store", "/tmp", "--clients", "1"],
    ["check-store", "/tmp", "--rounds", "0"],
    ["check-store", "ftp://host/x"],
    ["check-store", "s3://bucket", "-o", "aws_endpoint=http://127.0.0.1:1"],  # http without allow_http
])
def test_cli_usage_errors_exit_2(args, capsys):
    assert cli_main(args) == 2


def test_cli_unreachable_exit_2(capsys):
    args = ["check-store", "s3://bucket/x", "-o", f"aws_endpoint=http://127.0.0.1:{free_port()}",
            "-o", "allow_http=true", "-o", "aws_access_key_id=a", "-o", "aws_secret_access_key=b",
            "--clients", "2", "--rounds", "1"]
    assert cli_main(args) == 2
    assert "UNREACHABLE" in capsys.readouterr().out


# -- long runs -------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.s3
def test_seaweedfs_is_safe_long(s3_bucket_seaweedfs):
    bucket = s3_bucket_seaweedfs
    report = check_store(bucket.uri, bucket.storage_options, clients=8, rounds=30)
    assert report.verdict == SAFE, report.render()


@pytest.mark.slow
@pytest.mark.s3
def test_moto_unsafe_long(moto_unsafe_server):
    bucket = moto_unsafe_server.create_bucket("lc-unsafe-long")
    report = check_store(f"s3://{bucket}", moto_unsafe_server.storage_options(), clients=8, rounds=30)
    assert report.verdict == UNSAFE
    assert "30 of 30 rounds" in next(c for c in report.checks if c.name == "atomic-create").detail
