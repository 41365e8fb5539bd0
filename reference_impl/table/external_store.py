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
"""

from __future__ import annotations

import abc
import sqlite3
import threading

from ..errors import AlreadyExists, NotFound, StoreError

COMMITTER = "lancedb"


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
