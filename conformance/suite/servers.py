"""Fixtures for object stores and the local S3 servers behind them (a pytest plugin).

Run a test on every store
-------------------------
Ask for ``any_store`` and the test runs four times, on a fresh, empty store each time
(a new directory, a new memory name, or a new prefix in a per-session bucket)::

    def test_roundtrip(any_store):               # an reference_impl.io ObjectStore
        any_store.put("a/b", b"x")
        assert any_store.get("a/b") == b"x"

The ids are ``local``, ``memory``, ``moto`` and ``seaweedfs`` (select one with
``-k seaweedfs``). ``any_store_location`` gives the same stores as a
:class:`StoreLocation` (``kind``, ``uri``, ``storage_options``, ``store``) for tests
that also hand the URI to pylance (``lance.write_dataset(t, loc.uri,
storage_options=loc.storage_options)``). To run on a subset, parametrize indirectly::

    @pytest.mark.parametrize("any_store", ["local", "seaweedfs"], indirect=True)

Servers
-------
``moto_server`` and ``seaweedfs_server`` are session-scoped and started lazily, only
when a test asks for them (about a second each). ``moto_unsafe_server`` (moto with
conditional writes switched off) and ``s3rver_server`` (npm s3rver, installed into
``/tmp/lance-conformance-tools`` on first use; skipped with the reason when npm cannot
install it) are the UNSAFE negative controls of the store qualification. A server that
cannot start is ``unavailable(...)``: a skip with the reason locally, a failure under CI.

``s3_store_factory(server="moto", prefix="")`` returns an ``S3Store`` on a new bucket
of the named server; ``s3_bucket`` is one such fresh bucket on moto (parametrize it
indirectly with ``"seaweedfs"`` for the other server), as an :class:`S3Bucket` with
``server``, ``name``, ``uri``, ``storage_options`` and ``store()``.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

import pytest

from conformance.servers import (
    LocalServer,
    MotoServer,
    S3rverServer,
    SeaweedFSServer,
    ServerUnavailable,
    find_s3rver,
    install_s3rver,
)
from conformance.suite.parts import unavailable
from reference_impl.io.base import ObjectStore
from reference_impl.io.uri import open_store

STORE_KINDS = ("local", "memory", "moto", "seaweedfs")
S3_SERVERS = ("moto", "seaweedfs")


def _server_fixture(part: str, make, *, optional: bool = False):
    """A lazily started, session-scoped server.

    A server that cannot start is ``unavailable`` (a skip locally, a failure under CI);
    an ``optional`` one (a second negative control) is a plain skip with its reason.
    """

    @pytest.fixture(scope="session")
    def fixture():
        server: LocalServer | None = None
        try:
            server = make()
            server.start()
        except ServerUnavailable as exc:
            if server is not None:
                server.stop()
            if optional:
                pytest.skip(f"{part} unavailable: {exc}")
            unavailable(part, str(exc))
        try:
            yield server
        finally:
            server.stop()

    fixture.__doc__ = f"A running {part} server for the whole session (started on first use)."
    return fixture


moto_server = _server_fixture("moto", MotoServer)
seaweedfs_server = _server_fixture("SeaweedFS", SeaweedFSServer)
moto_unsafe_server = _server_fixture("moto (conditional writes ignored)",
                                     lambda: MotoServer(ignore_conditional_writes=True))


def _s3rver() -> S3rverServer:
    # npm's s3rver is a second UNSAFE control next to moto_unsafe_server; install it on
    # first use when it is not installed yet, and skip (not fail) when npm cannot.
    return S3rverServer(find_s3rver() or install_s3rver())


s3rver_server = _server_fixture("s3rver", _s3rver, optional=True)


def fresh_bucket_name(tag: str = "t") -> str:
    """A bucket name no other test uses (S3 rules: 3-63 lowercase letters, digits, '-')."""
    return f"lc-{tag}-{uuid.uuid4().hex[:16]}"


@dataclass
class S3Bucket:
    """A bucket created for one test on one server."""

    server: LocalServer
    name: str
    storage_options: dict[str, str] = field(default_factory=dict)
    _root: ObjectStore | None = field(default=None, repr=False)

    @property
    def uri(self) -> str:
        return f"s3://{self.name}"

    def store(self, prefix: str = "") -> ObjectStore:
        """A new store (with a client of its own) on this bucket, rooted at ``prefix``."""
        return open_store(f"{self.uri}/{prefix}" if prefix else self.uri, self.storage_options)

    def shared_root(self) -> ObjectStore:
        """One store on the bucket's root, made once; its children share its client."""
        if self._root is None:
            self._root = self.store()
        return self._root


def _server(request: pytest.FixtureRequest, name: str) -> LocalServer:
    fixtures = {"moto": "moto_server", "seaweedfs": "seaweedfs_server",
                "moto_unsafe": "moto_unsafe_server", "s3rver": "s3rver_server"}
    if name not in fixtures:
        raise ValueError(f"unknown S3 server {name!r}; one of {sorted(fixtures)}")
    return request.getfixturevalue(fixtures[name])


def _new_bucket(request: pytest.FixtureRequest, server_name: str, *,
                delete_after: bool = True) -> S3Bucket:
    """A fresh bucket on that server, deleted when ``request`` ends (unless ``delete_after``
    is false: a bucket the session shares): SeaweedFS gives every bucket volumes of its own,
    and a session that kept them all would run out of volumes."""
    server = _server(request, server_name)
    name = server.create_bucket(fresh_bucket_name(server_name.replace("_", "")[:8]))
    if delete_after and hasattr(server, "delete_bucket"):
        request.addfinalizer(lambda: server.delete_bucket(name))
    return S3Bucket(server, name, server.storage_options())


@pytest.fixture
def s3_store_factory(request: pytest.FixtureRequest):
    """``make(server="moto", prefix="") -> S3Store`` on a fresh bucket of that server."""

    def make(server: str = "moto", prefix: str = "") -> ObjectStore:
        return _new_bucket(request, server).store(prefix)

    return make


@pytest.fixture
def s3_bucket(request: pytest.FixtureRequest) -> S3Bucket:
    """A fresh bucket on moto, or on the server named by indirect parametrization."""
    return _new_bucket(request, getattr(request, "param", "moto"))


@dataclass
class StoreLocation:
    """Where a test's fresh store lives, in the forms both we and pylance take."""

    kind: str
    uri: str
    storage_options: dict[str, str]
    store: ObjectStore


def _location(request: pytest.FixtureRequest, kind: str, tmp_path) -> StoreLocation:
    if kind == "local":
        root = tmp_path / "store"
        root.mkdir()
        return StoreLocation(kind, str(root), {}, open_store(str(root)))
    if kind == "memory":
        uri = f"memory://{uuid.uuid4().hex}"
        return StoreLocation(kind, uri, {}, open_store(uri))
    if kind in S3_SERVERS:
        # One bucket and one client per server and session; each test gets a fresh prefix.
        shared: dict[str, S3Bucket] = request.getfixturevalue("_s3_session_buckets")
        if kind not in shared:
            shared[kind] = _new_bucket(request, kind, delete_after=False)
        bucket = shared[kind]
        prefix = f"t-{uuid.uuid4().hex[:16]}"
        return StoreLocation(kind, f"{bucket.uri}/{prefix}", bucket.storage_options,
                             bucket.shared_root().child(prefix))
    raise ValueError(f"unknown store kind {kind!r}; one of {STORE_KINDS}")


@pytest.fixture(scope="session")
def _s3_session_buckets() -> dict[str, S3Bucket]:
    """The bucket per server under which ``any_store`` hands out fresh prefixes."""
    return {}


def _kind_params() -> list[Any]:
    return [pytest.param(k, id=k, marks=[pytest.mark.s3] if k in S3_SERVERS else []) for k in STORE_KINDS]


@pytest.fixture(params=_kind_params())
def any_store_location(request: pytest.FixtureRequest, tmp_path) -> StoreLocation:
    """A fresh, empty store of every kind in turn (``local``, ``memory``, ``moto``, ``seaweedfs``)."""
    return _location(request, request.param, tmp_path)


@pytest.fixture(params=_kind_params())
def any_store(request: pytest.FixtureRequest, tmp_path) -> ObjectStore:
    """A fresh, empty ObjectStore of every kind in turn; see the module docstring."""
    return _location(request, request.param, tmp_path).store


@pytest.fixture
def s3_bucket_seaweedfs(request: pytest.FixtureRequest) -> S3Bucket:
    """A fresh bucket on SeaweedFS (the server whose conditional writes are atomic)."""
    return _new_bucket(request, "seaweedfs")


def given_endpoint(request: pytest.FixtureRequest):
    """An S3 server *given by its endpoint URL*, as a user passes ``--endpoint``: the MinIO
    server of ``$LANCE_CONFORMANCE_MINIO_ENDPOINT`` when one is set, otherwise the suite's
    own SeaweedFS addressed the same way (no registry here ships a MinIO server, and CI
    skips nothing). A given server that does not answer is unavailable (a CI failure)."""
    from conformance.servers import ServerUnavailable, minio_from_env
    from conformance.servers.minio_endpoint import MinioEndpoint
    from conformance.suite.parts import unavailable

    try:
        server = minio_from_env()
    except ServerUnavailable as exc:
        unavailable("MinIO", str(exc))
    if server is None:
        seaweed = request.getfixturevalue("seaweedfs_server")
        opts = seaweed.storage_options()
        server = MinioEndpoint(seaweed.endpoint, opts["aws_access_key_id"],
                               opts["aws_secret_access_key"], opts.get("aws_region", "us-east-1"))
    try:
        return server.start()
    except ServerUnavailable as exc:
        unavailable("S3 endpoint", str(exc))
