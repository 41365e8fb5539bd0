"""An S3 bucket (or any S3-compatible server) as an object store.

Objects of the store rooted at ``s3://bucket/prefix`` are the S3 objects whose key
starts with ``prefix/``; the store key ``_versions/1.manifest`` is the S3 key
``prefix/_versions/1.manifest``.

The commit point on S3 (REFS-NAMESPACE-COMMIT.md, section 8.3): pylance writes every
manifest with ``PUT`` and the header ``If-None-Match: *``; the server answers 412
Precondition Failed when the key already exists, and the writer retries at the next
version. Data files and ``.txn`` files are plain PUTs. This store does the same:

=========================  ===================================================
operation                  S3 request
=========================  ===================================================
``get``                    ``GetObject``; ``ContentLength`` is checked against
                           ``max_size`` before the body is read
``get_range(k, a, n)``     ``GetObject`` with ``Range: bytes=a-(a+n-1)``; a short
                           or refused (416) range is a ``FormatError``
``size``                   ``HeadObject``
``list``                   ``ListObjectsV2`` through its paginator (recursive)
``put``                    ``PutObject``
``put_if_not_exists``      ``PutObject`` with ``If-None-Match: *``; 412, and 409
                           ``ConditionalRequestConflict``, become ``AlreadyExists``
``copy``                   ``CopyObject`` (no conditional header)
``delete``                 ``DeleteObject`` (deleting a missing key succeeds)
=========================  ===================================================

Why boto3. boto3 sends ``IfNoneMatch='*'`` on ``put_object`` since 1.35, which is all
the conditional-write support the commit protocol needs; it is already installed as a
dependency of moto, the test server; and a store written on it stays short and
readable, each operation one documented API call. obstore (the Python binding of the
Rust ``object_store`` crate pylance itself uses) would add a compiled Rust wheel for a
speed a reference implementation does not need.

Storage options use pylance's names, falling back to the usual environment variables:

=========================  ===========================================  ===============
option                     environment fallback                         default
=========================  ===========================================  ===============
``aws_endpoint``           ``AWS_ENDPOINT_URL_S3``, ``AWS_ENDPOINT_URL``,  AWS itself
(also ``endpoint``)        ``AWS_ENDPOINT``
``aws_region``             ``AWS_REGION``, ``AWS_DEFAULT_REGION``        ``us-east-1``
(also ``region``)
``aws_access_key_id``      ``AWS_ACCESS_KEY_ID``                        boto3's chain
``aws_secret_access_key``  ``AWS_SECRET_ACCESS_KEY``                    boto3's chain
``aws_session_token``      ``AWS_SESSION_TOKEN``
``allow_http``             ``AWS_ALLOW_HTTP``                           ``false``
``aws_skip_signature``     ``AWS_SKIP_SIGNATURE``                       ``false``
``connect_timeout``                                                     ``3`` (seconds)
``timeout``                                                             ``30`` (seconds)
=========================  ===========================================  ===============

As in pylance, an ``http://`` endpoint is refused unless ``allow_http`` is true.
Requests use path-style addressing (``http://host/bucket/key``), which every local
S3-compatible server (moto, SeaweedFS, s3rver, MinIO) understands. Timeouts are short
and retries few, so an unreachable endpoint fails with ``StoreError`` within seconds
instead of hanging.

One caveat holds for every S3 client, pylance's included: when a conditional ``PUT``
succeeded on the server but its answer was lost and the retry then gets 412, the writer
sees ``AlreadyExists`` for an object it created itself. A commit loop that then reads
the manifest it "lost" against finds its own transaction there.

One boto3 client is made per store and shared with its children; boto3 clients are
thread-safe, so one store may be used from many threads at once.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterator, Mapping
from typing import Any

from ..errors import AlreadyExists, FormatError, InvalidInput, NotFound, StoreError
from .base import DEFAULT_MAX_READ, ObjectInfo, ObjectStore, check_key

_TRUE = ("1", "true", "yes", "on")

# S3 error codes meaning "no such key" and "the create-if-absent lost".
_NOT_FOUND_CODES = {"NoSuchKey", "404", "NotFound"}
_EXISTS_CODES = {"PreconditionFailed", "412", "ConditionalRequestConflict", "409"}

_BUCKET_RE = re.compile(r"^[a-z0-9][a-z0-9.\-_]{1,254}$")

_client_lock = threading.Lock()


def _option(options: Mapping[str, str], names: tuple[str, ...], env: tuple[str, ...]) -> str | None:
    """The first storage option among ``names`` (case-insensitive), else the first env var set."""
    lowered = {str(k).lower(): v for k, v in options.items()}
    for name in names:
        value = lowered.get(name)
        if value is not None and str(value) != "":
            return str(value)
    for var in env:
        value = os.environ.get(var)
        if value:
            return value
    return None


def _flag(value: str | None) -> bool:
    return value is not None and value.strip().lower() in _TRUE


def _seconds(value: str | None, default: float) -> float:
    if value is None:
        return default
    try:
        text = value.strip().lower()
        if text.endswith("ms"):
            return float(text[:-2]) / 1000.0
        return float(text.rstrip("s"))
    except ValueError as exc:
        raise InvalidInput(f"not a duration in seconds: {value!r}") from exc


def make_s3_client(storage_options: Mapping[str, str] | None = None, *, pool_size: int = 32) -> Any:
    """A boto3 S3 client configured from pylance-style storage options (see the module doc)."""
    import boto3
    from botocore import UNSIGNED
    from botocore.config import Config

    opts = dict(storage_options or {})
    endpoint = _option(
        opts, ("aws_endpoint", "endpoint", "aws_endpoint_url", "endpoint_url"),
        ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL", "AWS_ENDPOINT"),
    )
    region = _option(opts, ("aws_region", "region"), ("AWS_REGION", "AWS_DEFAULT_REGION")) or "us-east-1"
    allow_http = _flag(_option(opts, ("allow_http", "aws_allow_http"), ("AWS_ALLOW_HTTP",)))
    if endpoint and endpoint.lower().startswith("http://") and not allow_http:
        raise InvalidInput(
            f"endpoint {endpoint} is plain HTTP: set the storage option allow_http=true to use it"
        )
    skip_signature = _flag(_option(opts, ("aws_skip_signature", "skip_signature"), ("AWS_SKIP_SIGNATURE",)))
    config = Config(
        region_name=region,
        connect_timeout=_seconds(_option(opts, ("connect_timeout",), ()), 3.0),
        read_timeout=_seconds(_option(opts, ("timeout", "read_timeout"), ()), 30.0),
        retries={"max_attempts": 2, "mode": "standard"},
        s3={"addressing_style": "path"},
        max_pool_connections=pool_size,
        signature_version=UNSIGNED if skip_signature else None,
        # Send checksums only when S3 requires one: older S3-compatible servers reject
        # the trailing-checksum chunked encoding newer botocore sends by default.
        request_checksum_calculation="when_required",
        response_checksum_validation="when_required",
    )
    with _client_lock:  # boto3 sessions are not thread-safe; clients made from them are
        session = boto3.session.Session(
            aws_access_key_id=_option(opts, ("aws_access_key_id", "access_key_id"), ("AWS_ACCESS_KEY_ID",)),
            aws_secret_access_key=_option(
                opts, ("aws_secret_access_key", "secret_access_key"), ("AWS_SECRET_ACCESS_KEY",)
            ),
            aws_session_token=_option(opts, ("aws_session_token", "session_token", "aws_token", "token"),
                                      ("AWS_SESSION_TOKEN",)),
            region_name=region,
        )
        return session.client("s3", endpoint_url=endpoint, config=config)


def _error_code(exc: Exception) -> tuple[str, int]:
    """The S3 error code and HTTP status of a botocore ClientError."""
    response = getattr(exc, "response", None) or {}
    code = str(response.get("Error", {}).get("Code", ""))
    status = int(response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) or 0)
    return code, status


class S3Store(ObjectStore):
    """Objects below ``s3://bucket/prefix``; see the module docstring for the mapping."""

    def __init__(
        self,
        bucket: str,
        prefix: str = "",
        storage_options: Mapping[str, str] | None = None,
        *,
        _client: Any = None,
    ) -> None:
        if not isinstance(bucket, str) or not _BUCKET_RE.match(bucket):
            raise InvalidInput(f"not an S3 bucket name: {bucket!r}")
        prefix = (prefix or "").strip("/")
        if prefix:
            check_key(prefix)
        self.bucket = bucket
        self.prefix = prefix
        self.storage_options = dict(storage_options or {})
        self.uri = f"s3://{bucket}/{prefix}" if prefix else f"s3://{bucket}"
        self._client = _client if _client is not None else make_s3_client(self.storage_options)

    # -- helpers ---------------------------------------------------------------
    def _key(self, key: str) -> str:
        check_key(key)
        return f"{self.prefix}/{key}" if self.prefix else key

    def _fail(self, exc: Exception, op: str, key: str | None) -> Exception:
        """Translate a botocore exception into this package's error types."""
        from botocore.exceptions import ClientError

        where = f"{self.uri}/{key}" if key else self.uri
        if isinstance(exc, ClientError):
            code, status = _error_code(exc)
            if code in _NOT_FOUND_CODES or (status == 404 and code != "NoSuchBucket"):
                return NotFound(f"{key} not found under {self.uri}", path=key)
            if code == "NoSuchBucket":
                return StoreError(f"{op} {where}: bucket {self.bucket!r} does not exist")
            return StoreError(f"{op} {where}: S3 error {code or status}: {exc}")
        return StoreError(f"{op} {where}: {type(exc).__name__}: {exc}")

    def _call(self, op: str, key: str | None, fn, **kwargs):
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            return fn(**kwargs)
        except (ClientError, BotoCoreError) as exc:
            raise self._fail(exc, op, key) from exc
        except (OSError, ValueError) as exc:  # urllib3 / socket errors that slipped through
            raise StoreError(f"{op} {self.uri}/{key}: {type(exc).__name__}: {exc}") from exc

    @staticmethod
    def _read_body(body, expected: int, key: str, op: str) -> bytes:
        """Read exactly ``expected`` bytes from a streaming body, never more."""
        try:
            data = body.read(expected + 1) if expected >= 0 else b""
        except Exception as exc:  # connection dropped mid-body
            raise StoreError(f"{op} {key}: body read failed: {exc}") from exc
        finally:
            body.close()
        if len(data) != expected:
            raise StoreError(f"{op} {key}: server sent {len(data)} bytes, announced {expected}")
        return data

    # -- reads -----------------------------------------------------------------
    def get(self, key: str, *, max_size: int = DEFAULT_MAX_READ) -> bytes:
        full = self._key(key)
        resp = self._call("get", key, self._client.get_object, Bucket=self.bucket, Key=full)
        length = int(resp.get("ContentLength", -1))
        if length < 0:
            resp["Body"].close()
            raise StoreError(f"get {key}: the server sent no Content-Length")
        if length > max_size:
            resp["Body"].close()
            raise FormatError(f"object is {length} bytes, above the read bound of {max_size}", path=key)
        return self._read_body(resp["Body"], length, key, "get")

    def get_range(self, key: str, start: int, length: int) -> bytes:
        full = self._key(key)
        if start < 0 or length < 0:
            raise FormatError(f"negative range {start}+{length}", path=key, offset=start)
        if length == 0:
            size = self.size(key)
            if start > size:
                raise FormatError(
                    f"range {start}+0 starts past the end of the {size}-byte object", path=key, offset=start
                )
            return b""
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            resp = self._client.get_object(
                Bucket=self.bucket, Key=full, Range=f"bytes={start}-{start + length - 1}"
            )
        except ClientError as exc:
            code, status = _error_code(exc)
            if status == 416 or code == "InvalidRange":
                raise FormatError(
                    f"range {start}+{length} lies outside the object", path=key, offset=start
                ) from exc
            raise self._fail(exc, "get_range", key) from exc
        except (BotoCoreError, OSError) as exc:
            raise self._fail(exc, "get_range", key) from exc
        got = int(resp.get("ContentLength", -1))
        content_range = resp.get("ContentRange")
        if content_range is None and got > length:
            # The server ignored Range and sent the whole object; refuse, don't read it.
            resp["Body"].close()
            raise StoreError(f"get_range {key}: the server ignored the Range header")
        if got < length:
            resp["Body"].close()
            raise FormatError(
                f"range {start}+{length} ends past the end of the object ({got} bytes available)",
                path=key, offset=start,
            )
        return self._read_body(resp["Body"], length, key, "get_range")

    def size(self, key: str) -> int:
        resp = self._call("size", key, self._client.head_object, Bucket=self.bucket, Key=self._key(key))
        return int(resp["ContentLength"])

    def list(self, prefix: str = "") -> Iterator[ObjectInfo]:
        base = f"{self.prefix}/" if self.prefix else ""
        full = base + prefix
        paginator = self._client.get_paginator("list_objects_v2")
        pages = paginator.paginate(Bucket=self.bucket, Prefix=full)
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            for page in pages:
                for item in page.get("Contents", ()):
                    s3_key = item["Key"]
                    if not s3_key.startswith(full) or s3_key.endswith("/"):
                        continue  # directory markers some servers list
                    yield ObjectInfo(s3_key[len(base):], int(item.get("Size", 0)),
                                     item.get("ETag"))
        except (ClientError, BotoCoreError) as exc:
            raise self._fail(exc, "list", prefix or None) from exc

    # -- writes ----------------------------------------------------------------
    def put(self, key: str, data: bytes) -> None:
        self._call("put", key, self._client.put_object, Bucket=self.bucket, Key=self._key(key), Body=bytes(data))

    def put_if_not_exists(self, key: str, data: bytes) -> None:
        from botocore.exceptions import BotoCoreError, ClientError

        full = self._key(key)
        try:
            self._client.put_object(Bucket=self.bucket, Key=full, Body=bytes(data), IfNoneMatch="*")
        except ClientError as exc:
            code, status = _error_code(exc)
            if code in _EXISTS_CODES or status in (409, 412):
                raise AlreadyExists(f"{key} already exists under {self.uri}", path=key) from exc
            raise self._fail(exc, "put_if_not_exists", key) from exc
        except (BotoCoreError, OSError) as exc:
            raise self._fail(exc, "put_if_not_exists", key) from exc

    def copy(self, src: str, dst: str) -> None:
        self._call(
            "copy", src, self._client.copy_object,
            Bucket=self.bucket, Key=self._key(dst), CopySource={"Bucket": self.bucket, "Key": self._key(src)},
        )

    def delete(self, key: str) -> None:
        self._call("delete", key, self._client.delete_object, Bucket=self.bucket, Key=self._key(key))

    # -- navigation ------------------------------------------------------------
    def child(self, prefix: str) -> S3Store:
        return S3Store(self.bucket, self._key(prefix), self.storage_options, _client=self._client)
