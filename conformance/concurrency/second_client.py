"""A second, independent S3 client: the MinIO Python SDK (``minio``).

The reference implementation talks to S3 through boto3 (``reference_impl.io.s3``). A store
that only works with the client that wrote to it is a trap for readers in other languages,
so the store qualification (:mod:`conformance.concurrency.store_check`) and the portability tests read
back what boto3 wrote with a client that shares no code with it: its own HTTP stack
(urllib3), its own request signing, its own XML parsing of listings.

This module turns pylance-style storage options into a ``minio.Minio`` client
(:func:`minio_client`), counts the HTTP requests it sends (to prove that a listing really
was paginated), and copies a dataset root between buckets or servers with that client
(:func:`copy_prefix`).

The SDK's ``put_object`` cannot send ``If-None-Match`` (ENVIRONMENT.md: the header becomes
user metadata and the object is overwritten), so this client is never used to commit; it
reads, and it copies whole trees that nobody else writes to at the time.

Storage options read here (the same names and environment fallbacks as the boto3 store):
``aws_endpoint``, ``aws_region``, ``aws_access_key_id``, ``aws_secret_access_key``,
``aws_session_token``, ``allow_http``. Without an endpoint the client talks to AWS itself.
"""

from __future__ import annotations

import io
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from reference_impl.errors import InvalidInput, StoreError
from reference_impl.io.s3 import _flag, _option

CONNECT_TIMEOUT_S = 3.0
READ_TIMEOUT_S = 30.0


def available() -> str | None:
    """None when the ``minio`` package can be imported, else the reason it cannot."""
    try:
        import minio  # noqa: F401
    except ImportError as exc:
        return f"the minio package is not installed ({exc})"
    return None


@dataclass
class RequestLog:
    """The requests a client sent, as ``(method, url)``, in order (thread-safe)."""

    requests: list[tuple[str, str]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, method: str, url: str) -> None:
        with self.lock:
            self.requests.append((method, url))

    def count(self, method: str, contains: str = "") -> int:
        with self.lock:
            return sum(1 for m, u in self.requests if m == method and contains in u)


def _pool(log: RequestLog):
    """A urllib3 pool manager with short timeouts and few retries that logs each request."""
    import urllib3

    class _LoggingPool(urllib3.PoolManager):
        def urlopen(self, method, url, *args, **kwargs):  # noqa: D401 - urllib3's signature
            log.add(method, url)
            return super().urlopen(method, url, *args, **kwargs)

    return _LoggingPool(
        timeout=urllib3.Timeout(connect=CONNECT_TIMEOUT_S, read=READ_TIMEOUT_S),
        retries=urllib3.Retry(total=2, backoff_factor=0.2, status_forcelist=[500, 502, 503, 504]),
        maxsize=8,
    )


@dataclass
class SecondClient:
    """A ``minio.Minio`` client and the log of the requests it sent."""

    client: Any
    log: RequestLog
    endpoint: str


def minio_client(storage_options: Mapping[str, str] | None = None) -> SecondClient:
    """A MinIO SDK client for the S3 server the storage options name.

    Raises ``InvalidInput`` for an unusable endpoint (plain HTTP without ``allow_http``,
    a path in the endpoint) and ``StoreError`` when the SDK is not installed."""
    reason = available()
    if reason is not None:
        raise StoreError(reason)
    from minio import Minio

    opts = dict(storage_options or {})
    endpoint = _option(opts, ("aws_endpoint", "endpoint", "aws_endpoint_url", "endpoint_url"),
                       ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL", "AWS_ENDPOINT"))
    region = _option(opts, ("aws_region", "region"), ("AWS_REGION", "AWS_DEFAULT_REGION")) or "us-east-1"
    if endpoint:
        parts = urlsplit(endpoint if "://" in endpoint else f"https://{endpoint}")
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise InvalidInput(f"not an S3 endpoint URL: {endpoint!r}")
        if parts.path not in ("", "/"):
            raise InvalidInput(f"the second client takes an endpoint without a path: {endpoint!r}")
        secure = parts.scheme == "https"
        if not secure and not _flag(_option(opts, ("allow_http", "aws_allow_http"), ("AWS_ALLOW_HTTP",))):
            raise InvalidInput(f"endpoint {endpoint} is plain HTTP: set allow_http=true to use it")
        host = parts.netloc
    else:
        host, secure = "s3.amazonaws.com", True
    log = RequestLog()
    client = Minio(
        host,
        access_key=_option(opts, ("aws_access_key_id", "access_key_id"), ("AWS_ACCESS_KEY_ID",)),
        secret_key=_option(opts, ("aws_secret_access_key", "secret_access_key"),
                           ("AWS_SECRET_ACCESS_KEY",)),
        session_token=_option(opts, ("aws_session_token", "session_token", "aws_token", "token"),
                              ("AWS_SESSION_TOKEN",)),
        secure=secure,
        region=region,
        http_client=_pool(log),
    )
    return SecondClient(client, log, f"{'https' if secure else 'http'}://{host}")


@dataclass
class Listed:
    """One object as the second client lists it."""

    key: str
    size: int
    etag: str


def list_prefix(sc: SecondClient, bucket: str, prefix: str, *, page_size: int = 1000
                ) -> Iterator[Listed]:
    """Every object under ``prefix`` (recursive), through ``ListObjectsV2`` pages of at most
    ``page_size`` keys. The SDK's public ``list_objects`` always asks for 1000 keys a page;
    its lower-level lister takes the page size, so that one is used when present."""
    lister = getattr(sc.client, "_list_objects", None)
    if lister is not None:
        objects = lister(bucket, prefix=prefix, max_keys=page_size)
    else:  # an SDK without the lower-level lister: one page of up to 1000 keys
        objects = sc.client.list_objects(bucket, prefix=prefix, recursive=True)
    for obj in objects:
        if obj.is_dir or obj.object_name.endswith("/"):
            continue
        yield Listed(obj.object_name, int(obj.size or 0), (obj.etag or "").strip('"'))


def get_bytes(sc: SecondClient, bucket: str, key: str, offset: int = 0, length: int = 0) -> bytes:
    """The object's bytes (``length`` 0: to the end) as the second client reads them."""
    response = sc.client.get_object(bucket, key, offset=offset, length=length)
    try:
        return response.read()
    finally:
        response.close()
        response.release_conn()


def split_s3_uri(uri: str) -> tuple[str, str]:
    """``s3://bucket/some/prefix`` -> ``("bucket", "some/prefix")``."""
    parts = urlsplit(uri)
    if parts.scheme not in ("s3", "s3a") or not parts.netloc:
        raise InvalidInput(f"not an s3:// URI: {uri!r}")
    return parts.netloc, parts.path.strip("/")


def copy_prefix(src_uri: str, src_options: Mapping[str, str] | None, dst_uri: str,
                dst_options: Mapping[str, str] | None, *, page_size: int = 1000) -> int:
    """Copy every object below ``src_uri`` to the same relative key below ``dst_uri`` with
    the second client; returns the number of objects copied.

    Within one server (same endpoint) objects are copied server-side (``CopyObject``);
    between servers each is downloaded and uploaded. Each object is checked afterwards by
    size against the source listing."""
    from minio.commonconfig import CopySource

    src_bucket, src_prefix = split_s3_uri(src_uri)
    dst_bucket, dst_prefix = split_s3_uri(dst_uri)
    src = minio_client(src_options)
    dst = minio_client(dst_options)
    same_server = src.endpoint == dst.endpoint
    base = f"{src_prefix}/" if src_prefix else ""
    n = 0
    for obj in list(list_prefix(src, src_bucket, base, page_size=page_size)):
        rel = obj.key[len(base):]
        target = f"{dst_prefix}/{rel}" if dst_prefix else rel
        if same_server:
            dst.client.copy_object(dst_bucket, target, CopySource(src_bucket, obj.key))
        else:
            data = get_bytes(src, src_bucket, obj.key)
            dst.client.put_object(dst_bucket, target, io.BytesIO(data), len(data))
        copied = dst.client.stat_object(dst_bucket, target)
        if int(copied.size) != obj.size:
            raise StoreError(f"copy of {obj.key} has {copied.size} bytes, the source {obj.size}")
        n += 1
    return n
