"""The external manifest store: a key-value store with put-if-not-exists.

Spec 001, "External Manifest Store": *"An external manifest store is a KV store that
supports put-if-not-exists operation. The external manifest store supplements but does
not replace the manifests in object storage."* The commit protocol using it lives in
:mod:`.commit`; this module is only the KV interface and two backends.

A row is keyed by ``(base_uri, version)`` and holds the manifest ``path`` (first the
staging path ``…/_versions/{final}-{uuid}``, then the final one), a ``committer`` and the
manifest ``size``. ``base_uri`` is the dataset's object-store path without scheme or
bucket, as pylance writes it (REFS-NAMESPACE-COMMIT.md §8.4).

Backends:

* :class:`SQLiteManifestStore`: embedded, the default; one table
  ``manifests(base_uri TEXT, version INTEGER, path TEXT, committer TEXT, size INTEGER,
  PRIMARY KEY(base_uri, version))``; put-if-not-exists is an ``INSERT`` that fails on the
  primary key.
* :class:`DynamoDBManifestStore`: the table pylance's ``s3+ddb://`` uses: HASH key
  ``base_uri`` (S), RANGE key ``version`` (N), attributes ``path`` (S), ``committer``
  (S, ``"lancedb"``), ``size`` (N). Put-if-not-exists is a ``PutItem`` with
  ``attribute_not_exists(base_uri) AND attribute_not_exists(version)``; the repoint uses
  ``attribute_exists(...)``; latest is a consistent ``Query`` newest-first with ``Limit=1``.

URIs (REFS-NAMESPACE-COMMIT.md §8.4): ``s3+ddb://bucket/path?ddbTableName=T`` is the
dataset ``s3://bucket/path`` whose commits go through the DynamoDB table ``T``. The URI
carries exactly one query parameter, ``ddbTableName``, non-empty; the storage option
``dynamodb_endpoint`` (else the environment variable ``DYNAMODB_ENDPOINT``) names the
DynamoDB endpoint, the ``aws_*`` options give region and credentials. The dataset keeps
the ``s3+ddb://`` form as its URI. :func:`split_s3_ddb_uri` and :func:`store_for_s3_ddb`
turn such a URI into the object store and the KV store.
"""

from __future__ import annotations

import abc
import os
import sqlite3
import threading
from urllib.parse import parse_qsl, urlsplit

from ..errors import AlreadyExists, InvalidInput, NotFound, StoreError

COMMITTER = "lancedb"
S3_DDB_SCHEME = "s3+ddb"
TABLE_PARAM = "ddbTableName"


def is_s3_ddb_uri(uri) -> bool:
    """True for a ``s3+ddb://`` URI (case-insensitive scheme)."""
    return isinstance(uri, str) and uri[:9].lower() == S3_DDB_SCHEME + "://"


def split_s3_ddb_uri(uri: str) -> tuple[str, str]:
    """``(s3 URI, DynamoDB table name)`` of ``s3+ddb://bucket/path?ddbTableName=T``.
    Raises InvalidInput unless the query is exactly one non-empty ``ddbTableName``."""
    if not is_s3_ddb_uri(uri):
        raise InvalidInput(f"not an s3+ddb URI: {uri!r}")
    parts = urlsplit(uri)
    params = parse_qsl(parts.query, keep_blank_values=True)
    if len(params) != 1 or params[0][0] != TABLE_PARAM or not params[0][1]:
        raise InvalidInput(f"{uri!r}: an s3+ddb URI needs exactly one query parameter "
                           f"{TABLE_PARAM}=<table>")
    if not parts.netloc:
        raise InvalidInput(f"{uri!r}: an s3+ddb URI needs a bucket")
    return f"s3://{parts.netloc}{parts.path}", params[0][1]


def dynamodb_store_for(table_name: str, storage_options: dict | None = None) -> DynamoDBManifestStore:
    """The DynamoDB manifest store of ``table_name`` with pylance's storage option names."""
    opts = {k.lower(): v for k, v in (storage_options or {}).items()}
    endpoint = opts.get("dynamodb_endpoint") or os.environ.get("DYNAMODB_ENDPOINT") or None
    region = (opts.get("aws_region") or opts.get("region") or os.environ.get("AWS_REGION")
              or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1")
    return DynamoDBManifestStore(
        table_name, endpoint_url=endpoint, region=region,
        aws_access_key_id=opts.get("aws_access_key_id") or opts.get("access_key_id"),
        aws_secret_access_key=opts.get("aws_secret_access_key") or opts.get("secret_access_key"))


def store_for_s3_ddb(uri: str, storage_options: dict | None = None):
    """``(ObjectStore, DynamoDBManifestStore)`` of an ``s3+ddb://`` URI."""
    from ..io.uri import open_store

    s3_uri, table_name = split_s3_ddb_uri(uri)
    return open_store(s3_uri, storage_options), dynamodb_store_for(table_name, storage_options)


class ExternalManifestStore(abc.ABC):
    """``(base_uri, version) -> path`` with an atomic create."""

    @abc.abstractmethod
    def put_if_not_exists(self, base_uri: str, version: int, path: str, *, size: int | None = None) -> None:
        """Create the row; raise AlreadyExists when the version is taken (the commit point)."""

    @abc.abstractmethod
    def put(self, base_uri: str, version: int, path: str, *, size: int | None = None) -> None:
        """Repoint an existing row (raise NotFound if there is none)."""

    @abc.abstractmethod
    def get(self, base_uri: str, version: int) -> str:
        """The path of ``version``. Raises NotFound."""

    @abc.abstractmethod
    def latest(self, base_uri: str) -> tuple[int, str] | None:
        """``(version, path)`` of the highest version, or None."""


class SQLiteManifestStore(ExternalManifestStore):
    """Rows in an SQLite database file (``":memory:"`` for a private in-process store)."""

    def __init__(self, path: str = ":memory:") -> None:
        self.path = path
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None, timeout=30)
        self._conn.execute(
            "CREATE TABLE IF NOT EXISTS manifests (base_uri TEXT NOT NULL, version INTEGER NOT NULL,"
            " path TEXT NOT NULL, committer TEXT, size INTEGER, PRIMARY KEY (base_uri, version))")

    def put_if_not_exists(self, base_uri, version, path, *, size=None):
        with self._lock:
            try:
                self._conn.execute("INSERT INTO manifests VALUES (?, ?, ?, ?, ?)",
                                   (base_uri, int(version), path, COMMITTER, size))
            except sqlite3.IntegrityError:
                raise AlreadyExists(f"version {version} of {base_uri!r} already exists") from None

    def put(self, base_uri, version, path, *, size=None):
        with self._lock:
            cur = self._conn.execute(
                "UPDATE manifests SET path = ?, size = ? WHERE base_uri = ? AND version = ?",
                (path, size, base_uri, int(version)))
            if cur.rowcount == 0:
                raise NotFound(f"no row for version {version} of {base_uri!r}")

    def get(self, base_uri, version):
        with self._lock:
            row = self._conn.execute("SELECT path FROM manifests WHERE base_uri = ? AND version = ?",
                                     (base_uri, int(version))).fetchone()
        if row is None:
            raise NotFound(f"no row for version {version} of {base_uri!r}")
        return row[0]

    def latest(self, base_uri):
        with self._lock:
            row = self._conn.execute(
                "SELECT version, path FROM manifests WHERE base_uri = ? ORDER BY version DESC LIMIT 1",
                (base_uri,)).fetchone()
        return None if row is None else (int(row[0]), row[1])

    def close(self) -> None:
        self._conn.close()


class DynamoDBManifestStore(ExternalManifestStore):
    """Rows in an existing DynamoDB table laid out as pylance's ``s3+ddb`` expects."""

    def __init__(self, table_name: str, *, endpoint_url: str | None = None, region: str = "us-east-1",
                 aws_access_key_id: str | None = None, aws_secret_access_key: str | None = None,
                 client=None) -> None:
        import boto3

        self.table_name = table_name
        self._client = client or boto3.client(
            "dynamodb", endpoint_url=endpoint_url, region_name=region,
            aws_access_key_id=aws_access_key_id, aws_secret_access_key=aws_secret_access_key)
        self._check_schema()

    def _call(self, fn, **kw):
        try:
            return fn(**kw)
        except self._client.exceptions.ConditionalCheckFailedException:
            raise
        except Exception as exc:
            raise StoreError(f"DynamoDB {fn.__name__} failed: {exc}") from exc

    def _check_schema(self) -> None:
        desc = self._call(self._client.describe_table, TableName=self.table_name)["Table"]
        keys = {k["AttributeName"]: k["KeyType"] for k in desc["KeySchema"]}
        if keys != {"base_uri": "HASH", "version": "RANGE"}:
            raise StoreError(f"table {self.table_name} must have HASH base_uri (S), RANGE version (N); "
                             f"it has {keys}")

    def _item(self, base_uri, version, path, size):
        item = {"base_uri": {"S": base_uri}, "version": {"N": str(int(version))},
                "path": {"S": path}, "committer": {"S": COMMITTER}}
        if size is not None:
            item["size"] = {"N": str(int(size))}
        return item

    def put_if_not_exists(self, base_uri, version, path, *, size=None):
        try:
            self._call(self._client.put_item, TableName=self.table_name,
                       Item=self._item(base_uri, version, path, size),
                       ConditionExpression="attribute_not_exists(base_uri) AND attribute_not_exists(version)")
        except self._client.exceptions.ConditionalCheckFailedException:
            raise AlreadyExists(f"version {version} of {base_uri!r} already exists") from None

    def put(self, base_uri, version, path, *, size=None):
        try:
            self._call(self._client.put_item, TableName=self.table_name,
                       Item=self._item(base_uri, version, path, size),
                       ConditionExpression="attribute_exists(base_uri) AND attribute_exists(version)")
        except self._client.exceptions.ConditionalCheckFailedException:
            raise NotFound(f"no row for version {version} of {base_uri!r}") from None

    def get(self, base_uri, version):
        out = self._call(self._client.get_item, TableName=self.table_name, ConsistentRead=True,
                         Key={"base_uri": {"S": base_uri}, "version": {"N": str(int(version))}})
        if "Item" not in out:
            raise NotFound(f"no row for version {version} of {base_uri!r}")
        return out["Item"]["path"]["S"]

    def latest(self, base_uri):
        out = self._call(self._client.query, TableName=self.table_name,
                         KeyConditionExpression="base_uri = :base_uri",
                         ExpressionAttributeValues={":base_uri": {"S": base_uri}},
                         ScanIndexForward=False, Limit=1, ConsistentRead=True)
        items = out.get("Items", [])
        if not items:
            return None
        return int(items[0]["version"]["N"]), items[0]["path"]["S"]
