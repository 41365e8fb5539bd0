"""The object-store contract (``reference_impl.io``) on every store, and S3 interop.

Every store -- local file system, memory, S3 on moto, S3 on SeaweedFS -- must behave
the same for everything the commit protocols use (REFS-NAMESPACE-COMMIT.md section 8):
whole and ranged reads (bounded, out-of-range reads are ``FormatError``), recursive
listing, plain writes, one atomic create-if-absent with exactly one winner, copy,
idempotent delete, and keys that cannot escape the store's root.
"""

from __future__ import annotations

import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from conformance.servers import free_port
from reference_impl.errors import (
    AlreadyExists,
    FormatError,
    InvalidInput,
    NotFound,
    PathEscape,
    StoreError,
)
from reference_impl.io.base import ObjectInfo
from reference_impl.io.s3 import S3Store
from reference_impl.io.uri import open_store

PAYLOAD = bytes(range(256)) * 4 + b"tail"  # 1028 bytes, every byte value


def _listing(store, prefix=""):
    return {info.key: info.size for info in store.list(prefix)}


# -- reads and writes ----------------------------------------------------------------

def test_put_get_size_exists(any_store):
    any_store.put("a/b/c.bin", PAYLOAD)
    assert any_store.get("a/b/c.bin") == PAYLOAD
    assert any_store.size("a/b/c.bin") == len(PAYLOAD)
    assert any_store.exists("a/b/c.bin")
    assert not any_store.exists("a/b/missing.bin")


def test_put_overwrites(any_store):
    any_store.put("k", b"first")
    any_store.put("k", b"second, longer")
    assert any_store.get("k") == b"second, longer"


def test_empty_object(any_store):
    any_store.put("empty", b"")
    assert any_store.get("empty") == b""
    assert any_store.size("empty") == 0
    assert any_store.get_range("empty", 0, 0) == b""


def test_missing_object_is_not_found(any_store):
    with pytest.raises(NotFound):
        any_store.get("nope/x")
    with pytest.raises(NotFound):
        any_store.size("nope/x")
    with pytest.raises(NotFound):
        any_store.get_range("nope/x", 0, 1)


INSIDE = [(0, 1028), (0, 1), (1027, 1), (100, 500), (1028, 0), (5, 0)]
OUTSIDE = [(1028, 1), (1000, 100), (0, 1029), (5000, 10), (-1, 4), (0, -1), (1029, 0)]


def test_get_range_inside(any_store):
    any_store.put("obj", PAYLOAD)
    for start, length in INSIDE:
        assert any_store.get_range("obj", start, length) == PAYLOAD[start:start + length], (start, length)


def test_get_range_out_of_bounds_is_format_error(any_store):
    any_store.put("obj", PAYLOAD)
    for start, length in OUTSIDE:
        with pytest.raises(FormatError) as info:
            any_store.get_range("obj", start, length)
        assert info.value.path == "obj", (start, length)


def test_bounded_get(any_store):
    any_store.put("big", PAYLOAD)
    assert any_store.get("big", max_size=len(PAYLOAD)) == PAYLOAD
    with pytest.raises(FormatError) as info:
        any_store.get("big", max_size=len(PAYLOAD) - 1)
    assert info.value.path == "big"


def test_list_is_recursive_with_sizes(any_store):
    objects = {"_versions/1.manifest": b"m1", "_versions/2.manifest": b"m22",
               "data/x.lance": b"xxxx", "data/sub/y.lance": b"y", "top": b"t"}
    for key, data in objects.items():
        any_store.put(key, data)
    assert _listing(any_store) == {k: len(v) for k, v in objects.items()}
    assert _listing(any_store, "data/") == {"data/x.lance": 4, "data/sub/y.lance": 1}
    assert _listing(any_store, "_versions/2") == {"_versions/2.manifest": 3}
    assert _listing(any_store, "nothing/") == {}
    files, dirs = any_store.list_dir("data")
    assert files == [ObjectInfo("data/x.lance", 4)] and dirs == ["sub"]


def test_list_after_delete(any_store):
    any_store.put("d/1", b"1")
    any_store.put("d/2", b"2")
    any_store.delete("d/1")
    assert _listing(any_store, "d/") == {"d/2": 1}


def test_delete_is_idempotent(any_store):
    any_store.put("gone", b"x")
    any_store.delete("gone")
    any_store.delete("gone")
    assert not any_store.exists("gone")


def test_copy(any_store):
    any_store.put("src/a", PAYLOAD)
    any_store.copy("src/a", "dst/b")
    assert any_store.get("dst/b") == PAYLOAD
    assert any_store.get("src/a") == PAYLOAD
    with pytest.raises(NotFound):
        any_store.copy("src/missing", "dst/c")


def test_child_shares_objects(any_store):
    child = any_store.child("ds")
    child.put("_versions/1.manifest", b"abc")
    assert any_store.get("ds/_versions/1.manifest") == b"abc"
    assert _listing(child) == {"_versions/1.manifest": 3}
    assert child.child("_versions").get("1.manifest") == b"abc"
    assert child.uri.rstrip("/").endswith("/ds")


def test_rename_if_not_exists(any_store):
    any_store.put("staging", b"s")
    any_store.rename_if_not_exists("staging", "final")
    assert any_store.get("final") == b"s" and not any_store.exists("staging")
    any_store.put("staging2", b"t")
    with pytest.raises(AlreadyExists):
        any_store.rename_if_not_exists("staging2", "final")
    assert any_store.get("final") == b"s"


# -- the commit point ------------------------------------------------------------------

def test_put_if_not_exists_creates_then_refuses(any_store):
    any_store.put_if_not_exists("_versions/1.manifest", b"winner")
    with pytest.raises(AlreadyExists):
        any_store.put_if_not_exists("_versions/1.manifest", b"loser")
    assert any_store.get("_versions/1.manifest") == b"winner"


def race(store, key: str, writers: int) -> tuple[list[int], list[BaseException]]:
    """``writers`` threads call ``put_if_not_exists(key)`` at once; returns winners and errors."""
    barrier = threading.Barrier(writers)
    winners: list[int] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def attempt(i: int) -> None:
        barrier.wait(timeout=30)
        try:
            store.put_if_not_exists(key, f"writer-{i}".encode())
        except AlreadyExists:
            return
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            with lock:
                errors.append(exc)
            return
        with lock:
            winners.append(i)

    with ThreadPoolExecutor(writers) as pool:
        list(pool.map(attempt, range(writers)))
    return winners, errors


# moto is left out: its create-if-absent checks and writes without a lock (ENVIRONMENT.md),
# so whether two writers win a round is up to the scheduler, and a test must not be.
# The unsafe side is forced deterministically in test_check_store and test_stress.
@pytest.mark.parametrize("any_store", ["local", "memory", pytest.param("seaweedfs", marks=pytest.mark.s3)],
                         indirect=True)
def test_put_if_not_exists_race_has_one_winner(any_store):
    writers = 6
    for round_no in range(2):
        key = f"_versions/{round_no}.manifest"
        winners, errors = race(any_store, key, writers)
        assert errors == []
        assert len(winners) == 1, f"round {round_no}: winners {winners}"
        assert any_store.get(key) == f"writer-{winners[0]}".encode()


def test_concurrent_puts_of_distinct_keys(any_store):
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda i: any_store.put(f"data/{i}.lance", bytes([i]) * (i + 1)), range(32)))
    assert _listing(any_store, "data/") == {f"data/{i}.lance": i + 1 for i in range(32)}


# -- keys cannot escape the root ------------------------------------------------------

BAD_KEYS = ["../outside", "a/../../b", "/etc/passwd", "a\x00b", "", "a//b", "./a", "a\\b"]


def test_path_escape_on_every_operation(any_store):
    any_store.put("ok", b"x")
    for key in BAD_KEYS:
        operations = {
            "get": lambda k: any_store.get(k),
            "get_range": lambda k: any_store.get_range(k, 0, 1),
            "size": lambda k: any_store.size(k),
            "exists": lambda k: any_store.exists(k),
            "put": lambda k: any_store.put(k, b"x"),
            "put_if_not_exists": lambda k: any_store.put_if_not_exists(k, b"x"),
            "copy to": lambda k: any_store.copy("ok", k),
            "copy from": lambda k: any_store.copy(k, "ok2"),
            "delete": lambda k: any_store.delete(k),
            "child": lambda k: any_store.child(k),
        }
        for name, op in operations.items():
            with pytest.raises(PathEscape):
                op(key)
                pytest.fail(f"{name}({key!r}) did not raise PathEscape")
    assert _listing(any_store) == {"ok": 1}


def test_local_store_writes_nothing_outside_its_root(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    store = open_store(str(root))
    with pytest.raises(PathEscape):
        store.put("../escaped", b"x")
    assert not (tmp_path / "escaped").exists()


# -- S3 specifics ----------------------------------------------------------------------

def test_s3_store_uri_and_open_store(s3_bucket):
    store = open_store(f"s3://{s3_bucket.name}/deep/ds/", s3_bucket.storage_options)
    assert isinstance(store, S3Store)
    assert store.uri == f"s3://{s3_bucket.name}/deep/ds"
    store.put("x", b"1")
    assert _listing(s3_bucket.store()) == {"deep/ds/x": 1}
    assert S3Store(s3_bucket.name, "", s3_bucket.storage_options).uri == f"s3://{s3_bucket.name}"


def test_s3_unreachable_endpoint_is_a_fast_store_error():
    port = free_port()  # nothing listens there
    options = {"aws_endpoint": f"http://127.0.0.1:{port}", "aws_access_key_id": "a",
               "aws_secret_access_key": "b", "allow_http": "true"}
    store = S3Store("bucket", "ds", options)
    # "fast" is a property of the configuration (short connect timeout, few retries), not a
    # wall-clock measurement that a loaded machine could break
    config = store._client.meta.config
    assert config.connect_timeout <= 3 and config.retries["total_max_attempts"] <= 3
    for op in (lambda: store.get("x"), lambda: store.put_if_not_exists("x", b"1")):
        with pytest.raises(StoreError):
            op()


def test_s3_http_endpoint_needs_allow_http(moto_server):
    options = dict(moto_server.storage_options())
    options.pop("allow_http")
    with pytest.raises(InvalidInput, match="allow_http"):
        S3Store("bucket", "", options)


@pytest.mark.parametrize("bucket", ["", "UPPER", "a", "has/slash", "x" * 300])
def test_s3_bad_bucket_name(bucket):
    with pytest.raises(InvalidInput):
        S3Store(bucket, "", {"aws_endpoint": "http://127.0.0.1:1", "allow_http": "true"})


def test_s3_missing_bucket_is_store_error(moto_server):
    store = S3Store("lc-no-such-bucket", "", moto_server.storage_options())
    with pytest.raises(StoreError, match="does not exist"):
        list(store.list())
    with pytest.raises(StoreError):
        store.put("x", b"1")


def test_s3_options_fall_back_to_environment(moto_server, monkeypatch):
    bucket = moto_server.create_bucket("lc-env-fallback")
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto_server.endpoint)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", moto_server.access_key)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", moto_server.secret_key)
    monkeypatch.setenv("AWS_ALLOW_HTTP", "true")
    store = open_store(f"s3://{bucket}/p")
    store.put("k", b"v")
    assert store.get("k") == b"v"
    # the endpoint alias "endpoint" is accepted too
    aliased = S3Store(bucket, "p", {"endpoint": moto_server.endpoint, "allow_http": "true"})
    assert aliased.get("k") == b"v"


def test_s3_wrong_credentials_on_seaweedfs_are_store_errors(seaweedfs_server):
    bucket = seaweedfs_server.create_bucket("lc-creds")
    options = {**seaweedfs_server.storage_options(), "aws_secret_access_key": "wrong"}
    store = S3Store(bucket, "", options)
    with pytest.raises(StoreError):
        store.put("k", b"v")


@pytest.mark.slow  # (one bucket per 1 GB of free disk: 80 buckets, two minutes, on a roomy disk)
def test_seaweedfs_takes_more_buckets_than_it_has_volumes_when_each_is_deleted(
        seaweedfs_server):
    """SeaweedFS gives every bucket volumes of its own and has as many as its free disk space
    holds 1 GB volumes (13 with 14 GB free): the suite's buckets are deleted after each test
    (``delete_bucket``), so a session may write to more buckets than that. Forced here: as
    many buckets as the server has volume slots, and two more, each written and deleted."""
    import json
    import urllib.request

    master = seaweedfs_server._ports["master.port"]
    with urllib.request.urlopen(f"http://127.0.0.1:{master}/dir/status", timeout=10) as r:
        slots = int(json.load(r)["Topology"]["Max"])
    for i in range(slots + 2):
        bucket = seaweedfs_server.create_bucket(f"lc-slots-{i:04d}-{time.monotonic_ns()}")
        store = S3Store(bucket, "", seaweedfs_server.storage_options())
        store.put("k", b"v")
        assert store.get("k") == b"v"
        seaweedfs_server.delete_bucket(bucket)


def test_moto_dynamodb_table_for_external_manifest_store(moto_server):
    name = moto_server.create_dynamodb_table(f"lc-ddb-{os.getpid()}-{time.monotonic_ns()}")
    table = moto_server.client("dynamodb").describe_table(TableName=name)["Table"]
    assert {(k["AttributeName"], k["KeyType"]) for k in table["KeySchema"]} == {
        ("base_uri", "HASH"), ("version", "RANGE")}
    assert {(a["AttributeName"], a["AttributeType"]) for a in table["AttributeDefinitions"]} == {
        ("base_uri", "S"), ("version", "N")}
    assert moto_server.storage_options()["dynamodb_endpoint"] == moto_server.endpoint


# -- interop: pylance writes to S3, we read -------------------------------------------

@pytest.mark.interop
@pytest.mark.s3
@pytest.mark.parametrize("s3_bucket", ["moto", "seaweedfs"], indirect=True)
def test_pylance_dataset_on_s3_is_listed_and_read(pylance, s3_bucket):
    import pyarrow as pa

    uri = f"{s3_bucket.uri}/ds"
    table = pa.table({"id": pa.array(range(100), pa.int64()), "name": [f"n{i}" for i in range(100)]})
    pylance.write_dataset(table, uri, storage_options=s3_bucket.storage_options)
    pylance.write_dataset(table.slice(0, 10), uri, mode="append", storage_options=s3_bucket.storage_options)

    store = open_store(uri, s3_bucket.storage_options)
    listing = _listing(store)
    manifests = {k: v for k, v in listing.items() if k.startswith("_versions/") and k.endswith(".manifest")}
    data_files = {k: v for k, v in listing.items() if k.startswith("data/") and k.endswith(".lance")}
    assert len(manifests) == 2
    assert len(data_files) == 2
    for key, size in {**manifests, **data_files}.items():
        assert size > 0
        assert store.size(key) == size
    for key, size in manifests.items():
        data = store.get(key)
        assert len(data) == size
        # a manifest ends with the Lance magic, and its last 16 bytes hold the metadata position
        assert data[-4:] == b"LANC"
        assert store.get_range(key, size - 4, 4) == b"LANC"
    # the oracle reads back what it wrote through the same options
    ds = pylance.dataset(uri, storage_options=s3_bucket.storage_options)
    assert ds.count_rows() == 110 and ds.version == 2


@pytest.mark.s3
def test_s3_store_factory_gives_fresh_buckets(s3_store_factory):
    first = s3_store_factory("moto")
    second = s3_store_factory("moto", prefix="p/q")
    assert isinstance(first, S3Store) and isinstance(second, S3Store)
    assert first.bucket != second.bucket and second.prefix == "p/q"
    first.put("x", b"1")
    assert _listing(first) == {"x": 1} and _listing(second) == {}
    with pytest.raises(ValueError):
        s3_store_factory("no-such-server")


@pytest.mark.interop
@pytest.mark.s3
def test_pylance_external_manifest_store_rows_point_at_listed_manifests(pylance, moto_server):
    import pyarrow as pa

    bucket = moto_server.create_bucket(f"lc-ddb-{time.monotonic_ns()}")
    table = moto_server.create_dynamodb_table(f"lc-manifests-{time.monotonic_ns()}")
    options = moto_server.storage_options()
    uri = f"s3+ddb://{bucket}/ds?ddbTableName={table}"
    pylance.write_dataset(pa.table({"a": [1, 2, 3]}), uri, storage_options=options)
    pylance.write_dataset(pa.table({"a": [4]}), uri, mode="append", storage_options=options)
    rows = moto_server.client("dynamodb").scan(TableName=table, ConsistentRead=True)["Items"]
    store = S3Store(bucket, "", options)
    assert sorted(int(r["version"]["N"]) for r in rows) == [1, 2]
    for row in rows:
        assert row["base_uri"]["S"] == "ds"
        assert store.size(row["path"]["S"]) == int(row["size"]["N"])


# -- a hostile S3 endpoint: typed errors, bounded reads, no hang ------------------------

class _HostileHandler:
    """Builds an HTTP handler class whose every response misbehaves in one way."""

    @staticmethod
    def make(mode: str):
        from http.server import BaseHTTPRequestHandler

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            release = threading.Event()  # set at teardown: stalled answers end then

            def log_message(self, *args):  # keep test output clean
                pass

            def _drain(self):
                length = int(self.headers.get("Content-Length") or 0)
                if length:
                    self.rfile.read(length)

            def do_PUT(self):
                self._drain()
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def do_HEAD(self):
                self.send_response(200)
                self.send_header("Content-Length", "1000")
                self.end_headers()

            def do_GET(self):
                if mode == "stall":  # never answers until the test is over
                    Handler.release.wait(120)
                    return
                if mode == "huge-length":
                    self.send_response(200)
                    self.send_header("Content-Length", str(10**12))
                    self.end_headers()
                    self.wfile.write(b"x" * 100)
                    return
                if mode == "short-body":
                    self.send_response(200)
                    self.send_header("Content-Length", "1000")
                    self.end_headers()
                    self.wfile.write(b"x" * 10)
                    self.wfile.flush()
                    self.close_connection = True
                    return
                if mode == "ignore-range":
                    body = b"y" * 1000
                    self.send_response(200)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                    return
                if mode == "garbage":
                    body = b"\x00\xffnot xml at all<<<"
                    self.send_response(200)
                    self.send_header("Content-Type", "application/xml")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                    return
                raise AssertionError(mode)

        return Handler


@pytest.fixture
def hostile_endpoint(request):
    from http.server import ThreadingHTTPServer

    handler = _HostileHandler.make(request.param)
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    options = {"aws_endpoint": f"http://127.0.0.1:{server.server_address[1]}", "allow_http": "true",
               "aws_access_key_id": "a", "aws_secret_access_key": "b", "timeout": "1"}
    yield S3Store("bucket", "ds", options)
    handler.release.set()
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize("hostile_endpoint", ["huge-length"], indirect=True)
def test_hostile_content_length_is_bounded(hostile_endpoint):
    with pytest.raises(FormatError):
        hostile_endpoint.get("x")  # 10**12 announced: refused before reading


@pytest.mark.parametrize("hostile_endpoint", ["short-body"], indirect=True)
def test_hostile_short_body_is_store_error(hostile_endpoint):
    with pytest.raises(StoreError):  # a hang would be ended by the test timeout: a failure
        hostile_endpoint.get("x")


@pytest.mark.parametrize("hostile_endpoint", ["ignore-range"], indirect=True)
def test_hostile_server_ignoring_range_is_store_error(hostile_endpoint):
    with pytest.raises(StoreError, match="ignored the Range"):
        hostile_endpoint.get_range("x", 10, 20)


@pytest.mark.parametrize("hostile_endpoint", ["stall"], indirect=True)
def test_hostile_stalled_server_times_out(hostile_endpoint):
    """The server never answers (until teardown), so only the client's read timeout can end
    the call: a StoreError proves it fired, without measuring any time."""
    with pytest.raises(StoreError, match="(?i)timed? ?out|timeout"):
        hostile_endpoint.get("x")


@pytest.mark.parametrize("hostile_endpoint", ["garbage"], indirect=True)
def test_hostile_garbage_listing_is_store_error(hostile_endpoint):
    with pytest.raises(StoreError):
        list(hostile_endpoint.list())


# -- the test servers themselves ---------------------------------------------------------

def test_server_with_missing_binary_is_unavailable():
    from conformance.servers import SeaweedFSServer, ServerUnavailable

    server = SeaweedFSServer()
    server.binary = "/nonexistent/weed"
    with pytest.raises(ServerUnavailable, match="not found"):
        server.start()
    server.stop()
    assert server.workdir is None and not server.running


def test_server_that_exits_while_starting_is_unavailable():
    import sys

    from conformance.servers import MotoServer, ServerUnavailable

    class Crashing(MotoServer):
        def _command(self):
            return [sys.executable, "-c", "import sys; print('boom: bad flag'); sys.exit(3)"]

    server = Crashing()
    with pytest.raises(ServerUnavailable) as info:
        server.start()
    assert "exited with code 3" in str(info.value) and "boom: bad flag" in str(info.value)
    server.stop()
    assert not server.running


def test_server_stop_ends_process_and_removes_its_directory(moto_server):
    from conformance.servers import MotoServer

    server = MotoServer().start()
    workdir, port = server.workdir, server.port
    assert server.running and workdir.is_dir()
    server.create_bucket("lc-stop")
    server.stop()
    assert not server.running and not workdir.exists()
    from conformance.servers._process import port_accepts

    assert not port_accepts(port)
    assert moto_server.running  # the session's server is a different process


def test_local_store_on_a_missing_root_lists_nothing(tmp_path):
    """A store whose root directory does not exist yet lists nothing (and never walks
    the parent directory)."""
    from reference_impl.io.local import LocalStore

    (tmp_path / "sibling.txt").write_bytes(b"x")
    store = LocalStore(tmp_path / "missing")
    assert list(store.list("")) == []
    assert list(store.list("_versions/")) == []
