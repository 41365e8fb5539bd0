"""Committing a transaction: the commit loop and its handlers.

Spec 001, "Committing Datasets" and "Conflict resolution", with the order of work pylance
14.0.2 follows on every store (REFS-NAMESPACE-COMMIT.md §8.1):

1. data, deletion and index files are already written by the caller;
2. ``_transactions/{read_version}-{uuid}.txn`` gets the raw ``Transaction`` protobuf;
3. every transaction committed since ``read_version`` is loaded (the copy inline in its
   manifest, field 23, else its ``.txn`` file) and checked against ours with
   :mod:`.conflicts`; a missing or unknown one is a conflict;
4. the manifest of ``latest+1`` is built from the latest manifest plus our transaction
   (:func:`.operations.build_manifest`) and created **if absent** (the commit point):
   ``ObjectStore.put_if_not_exists`` (local: temp file + ``link``; S3: ``If-None-Match: *``;
   memory: a locked dict), or the external manifest store protocol below. Losing the race
   (``AlreadyExists``) goes back to step 3 after an exponential backoff with jitter, at
   most ``max_retries`` (20) times;
5. on the local file system ``_versions/latest_version_hint.json`` = ``{"version":N}``
   is written afterwards, best effort (never on S3).

A commit that stops in step 3 or 4 removes its ``.txn`` file (pylance leaves none); its
data files stay behind as unverified orphans. The ``.txn`` name and ``read_version`` keep
the caller's read version even when the commit lands later.

Detached commits (REFS-NAMESPACE-COMMIT.md §6; :func:`commit_detached`): the manifest is
built on the ``read_version`` manifest alone (no conflict check: nothing can race with a
version nobody else can name), numbered with a random u64 whose bit 63 is set, created if
absent as ``_versions/d{v}.manifest`` (a clash draws a new number). It never becomes
latest, is left out of the version list, and no hint is written; it opens by number only.

External manifest store (spec 001, "External Manifest Store"): the manifest is staged as
``{final key}-{uuid}``, ``put_if_not_exists(base_uri, version, staging path)`` in the KV
store is the commit point, then the staging object is copied to the final key, the KV row
repointed to it, and the staging object deleted. :func:`resolve_latest_with_external_store`
is the reader's repair of a commit that stopped after the commit point.
"""

from __future__ import annotations

import json
import random
import secrets
import time
import uuid as uuid_mod
from collections.abc import Callable
from dataclasses import dataclass

from ..errors import AlreadyExists, CommitConflict, FormatError, InvalidInput, NotFound
from ..io.base import ObjectStore
from ..proto import table_pb2, transaction_pb2
from . import conflicts, layout, operations

DEFAULT_MAX_RETRIES = 20
BACKOFF_BASE_S = 0.005
BACKOFF_CAP_S = 1.0


@dataclass
class CommitResult:
    """What a successful commit produced."""

    version: int
    manifest_key: str
    manifest: table_pb2.Manifest
    indices: list
    transaction: transaction_pb2.Transaction
    attempts: int


# -- reading what is already committed ---------------------------------------------------
def _versions(store: ObjectStore):
    from .versions import list_versions
    return list_versions(store)


def naming_scheme(store: ObjectStore, *, enable_v2_manifest_paths: bool = True) -> str:
    """The scheme of the existing versions; for a new dataset V2 unless disabled.
    (REFS §7: the choice made at creation sticks.)"""
    entries = _versions(store)
    if entries:
        return entries[-1].scheme
    return layout.SCHEME_V2 if enable_v2_manifest_paths else layout.SCHEME_V1


def latest_version_or_zero(store: ObjectStore) -> int:
    entries = _versions(store)
    return entries[-1].version if entries else 0


def load_version(store: ObjectStore, version: int):
    """``(ManifestFile)`` of ``version``. Raises NotFound."""
    from .manifest import read_manifest_file
    from .versions import manifest_key_for

    return read_manifest_file(store, manifest_key_for(store, version))


def load_transaction(store: ObjectStore, version: int) -> transaction_pb2.Transaction | None:
    """The transaction that produced ``version``: the inline copy, else the ``.txn`` file,
    else None (the caller treats None as a conflict)."""
    mf = load_version(store, version)
    if mf.transaction is not None:
        return mf.transaction
    name = mf.manifest.transaction_file
    if not name:
        return None
    key = f"{layout.TRANSACTIONS_DIR}/{name}"
    try:
        raw = store.get(key, max_size=256 << 20)
    except NotFound:
        return None
    txn = transaction_pb2.Transaction()
    try:
        txn.ParseFromString(raw)
    except Exception as exc:  # protobuf DecodeError and friends
        raise FormatError(f"transaction file does not parse: {exc}", rule="TXN-001",
                          path=key, offset=0) from None
    return txn


# -- the commit loop ----------------------------------------------------------------------
def _sleep_backoff(attempt: int) -> None:
    delay = min(BACKOFF_CAP_S, BACKOFF_BASE_S * (2 ** attempt))
    time.sleep(random.uniform(0, delay))


def _is_local(store: ObjectStore) -> bool:
    return store.uri.startswith("file://")


def write_version_hint(store: ObjectStore, version: int) -> None:
    """``{"version":N}``, compact, no newline (pylance's local hint). Best effort."""
    try:
        store.put(layout.VERSION_HINT_KEY, json.dumps({"version": version}, separators=(",", ":")).encode())
    except Exception:  # a hint is only a hint
        pass


def commit_transaction(
    store: ObjectStore,
    txn: transaction_pb2.Transaction,
    *,
    enable_v2_manifest_paths: bool = True,
    stable_row_ids: bool | None = None,
    data_format: tuple[str, str] = ("lance", "2.2"),
    max_retries: int = DEFAULT_MAX_RETRIES,
    external_store=None,
    prepared: Callable[[int], tuple[table_pb2.Manifest, list]] | None = None,
    crash_after: Callable[[str], None] | None = None,
    detached: bool = False,
    remap_indices: Callable[[list, int], list] | None = None,
) -> CommitResult:
    """Commit ``txn`` (its ``read_version`` is where the caller started) to ``store``.

    ``detached=True`` makes a detached version instead (:func:`commit_detached`).
    ``remap_indices(indices, version)`` gives a Rewrite's index list from the latest
    version's (see :func:`.operations.build_manifest`); called again on every retry.

    ``prepared(version)`` replaces manifest building (clones build theirs from the source).
    ``external_store`` is an :class:`.external_store.ExternalManifestStore`.
    ``crash_after(step)`` is a test hook called after each external-store step.
    Raises CommitConflict, AlreadyExists (retries exhausted), NotFound (read_version ahead).
    """
    from . import flags
    from .manifest import encode_manifest_file

    if detached:
        return commit_detached(store, txn, stable_row_ids=stable_row_ids, data_format=data_format,
                               max_retries=max_retries)
    latest = latest_version_or_zero(store)
    if external_store is not None:
        kv_latest = external_store.latest(base_uri_of(store))
        if kv_latest is not None:
            latest = max(latest, kv_latest[0])
    rv = txn.read_version
    if rv > latest:
        raise NotFound(f"read_version {rv} is past the latest version {latest}")
    scheme = naming_scheme(store, enable_v2_manifest_paths=enable_v2_manifest_paths)

    txn_bytes = txn.SerializeToString()
    txn_name = layout.transaction_file_name(rv, txn.uuid)
    txn_key = f"{layout.TRANSACTIONS_DIR}/{txn_name}"
    store.put(txn_key, txn_bytes)

    checked = rv if rv > 0 else latest  # rv 0 is accepted without checks (pylance, REFS §8.6)
    attempt = 0
    try:
        while True:
            if external_store is not None:
                resolve_latest_with_external_store(store, external_store)
            latest = latest_version_or_zero(store)
            for v in range(checked + 1, latest + 1):
                try:
                    theirs = load_transaction(store, v)
                except NotFound:
                    theirs = None  # a removed version: we cannot know what it did
                conflicts.raise_for(conflicts.check(txn, theirs, v))
                checked = v
            previous = None
            indices = []
            if latest > 0:
                mf = load_version(store, latest)
                previous = mf.manifest
                flags.check_writer_flags(previous, path=mf.key)
                indices = list(mf.index_section.indices) if mf.index_section is not None else []
            version = latest + 1
            if prepared is not None:
                manifest, indices = prepared(version)
                manifest.transaction_file = txn_name
            else:
                manifest, indices = operations.build_manifest(
                    previous, txn, version, indices=indices,
                    load_version=lambda v: _manifest_and_indices(store, v),
                    stable_row_ids=stable_row_ids, data_format=data_format,
                    transaction_file=txn_name, remap_indices=remap_indices)
            index_section = table_pb2.IndexSection(indices=indices) if indices else None
            data = encode_manifest_file(manifest, transaction=txn_bytes, index_section=index_section)
            key = layout.manifest_key(version, scheme)
            try:
                if external_store is None:
                    store.put_if_not_exists(key, data)
                else:
                    _commit_external(store, external_store, key, version, data, crash_after)
            except AlreadyExists:
                if attempt >= max_retries:
                    raise AlreadyExists(
                        f"too much write contention: version {version} was taken "
                        f"{attempt + 1} times", path=key) from None
                attempt += 1
                _sleep_backoff(attempt)
                continue
            break
    except (CommitConflict, AlreadyExists, InvalidInput, FormatError, NotFound):
        store.delete(txn_key)
        raise
    if _is_local(store) and external_store is None:
        write_version_hint(store, version)
    return CommitResult(version, key, manifest, indices, txn, attempt + 1)


def new_detached_version() -> int:
    """A random u64 with bit 63 set (REFS §6)."""
    return secrets.randbits(63) | layout.DETACHED_BIT


def commit_detached(
    store: ObjectStore,
    txn: transaction_pb2.Transaction,
    *,
    stable_row_ids: bool | None = None,
    data_format: tuple[str, str] | None = None,
    max_retries: int = DEFAULT_MAX_RETRIES,
) -> CommitResult:
    """Commit ``txn`` as a detached version built on ``txn.read_version`` (which may itself
    be detached). The ``.txn`` file is named by the read version, as for any commit.
    Raises InvalidInput for ``read_version`` 0, NotFound when it does not exist."""
    from . import flags
    from .manifest import encode_manifest_file

    rv = txn.read_version
    if rv == 0:
        raise InvalidInput("a detached commit starts from an existing version; read_version is 0")
    base = load_version(store, rv)
    flags.check_writer_flags(base.manifest, path=base.key)
    base_indices = list(base.index_section.indices) if base.index_section is not None else []
    if data_format is None:
        df = base.manifest.data_format
        data_format = (df.file_format or "lance", df.version or "2.2")
    txn_bytes = txn.SerializeToString()
    txn_name = layout.transaction_file_name(rv, txn.uuid)
    txn_key = f"{layout.TRANSACTIONS_DIR}/{txn_name}"
    store.put(txn_key, txn_bytes)
    try:
        for attempt in range(max_retries + 1):
            version = new_detached_version()
            manifest, indices = operations.build_manifest(
                base.manifest, txn, version, indices=base_indices,
                load_version=lambda v: _manifest_and_indices(store, v),
                stable_row_ids=stable_row_ids, data_format=data_format, transaction_file=txn_name)
            index_section = table_pb2.IndexSection(indices=indices) if indices else None
            data = encode_manifest_file(manifest, transaction=txn_bytes, index_section=index_section)
            key = layout.manifest_key(version, layout.SCHEME_DETACHED)
            try:
                store.put_if_not_exists(key, data)
            except AlreadyExists:
                continue  # another detached version drew the same number: draw again
            return CommitResult(version, key, manifest, indices, txn, attempt + 1)
        raise AlreadyExists(f"no free detached version number after {max_retries + 1} draws")
    except (AlreadyExists, InvalidInput, FormatError, NotFound):
        store.delete(txn_key)
        raise


def _manifest_and_indices(store: ObjectStore, version: int):
    mf = load_version(store, version)
    return mf.manifest, (list(mf.index_section.indices) if mf.index_section is not None else [])


# -- external manifest store --------------------------------------------------------------
def base_uri_of(store: ObjectStore) -> str:
    """The KV key of a dataset, as pylance writes it: the object-store path of the dataset
    root without scheme or bucket (``s3://bkt/deep/ds`` -> ``deep/ds``;
    ``file:///tmp/ds`` -> ``tmp/ds``)."""
    uri = store.uri
    scheme, _, rest = uri.partition("://")
    if not _:
        return uri.strip("/")
    if scheme in ("s3", "s3+ddb", "gs", "az", "memory"):
        rest = rest.split("/", 1)[1] if "/" in rest else ""
    from urllib.parse import unquote
    return unquote(rest).strip("/")


def _kv_path(base_uri: str, key: str) -> str:
    return f"{base_uri}/{key}" if base_uri else key


def _key_of(base_uri: str, path: str) -> str:
    prefix = base_uri + "/" if base_uri else ""
    if not path.startswith(prefix):
        raise FormatError(f"external store path {path!r} is not under {base_uri!r}",
                          rule="COMMIT-001", path=path)
    return path[len(prefix):]


def _commit_external(store, kv, final_key: str, version: int, data: bytes, crash_after) -> None:
    base = base_uri_of(store)
    staging = f"{final_key}-{uuid_mod.uuid4()}"
    store.put(staging, data)                                          # 1. stage
    if crash_after:
        crash_after("stage")
    try:
        kv.put_if_not_exists(base, version, _kv_path(base, staging), size=len(data))  # 2. commit point
    except AlreadyExists:
        store.delete(staging)
        raise
    if crash_after:
        crash_after("commit")
    store.copy(staging, final_key)                                    # 3. copy to final
    if crash_after:
        crash_after("copy")
    kv.put(base, version, _kv_path(base, final_key), size=len(data))  # 4. repoint
    if crash_after:
        crash_after("repoint")
    store.delete(staging)


def resolve_latest_with_external_store(store: ObjectStore, kv, base_uri: str | None = None):
    """The reader side of the protocol: ``(version, final key)`` of the latest version the
    KV store knows, repairing a commit that stopped after its commit point (copy staging to
    final when the final is missing, repoint the row, delete the staging object).
    Returns None when the KV store has no row for the dataset. Raises FormatError when the
    repair is impossible (staging object gone and final missing): the spec says the reader
    must then refuse to load."""
    base = base_uri_of(store) if base_uri is None else base_uri
    row = kv.latest(base)
    if row is None:
        return None
    version, path = row[0], row[1]
    key = _key_of(base, path)
    if key.endswith(layout.MANIFEST_SUFFIX):
        return version, key
    marker = layout.MANIFEST_SUFFIX + "-"
    final = key.split(marker, 1)[0] + layout.MANIFEST_SUFFIX if marker in key else ""
    if not final:
        raise FormatError(f"external store row points at {path!r}, not a staged manifest",
                          rule="COMMIT-001", path=path)
    if not store.exists(final):
        try:
            data = store.get(key)
        except NotFound:
            raise FormatError(f"version {version}: staged manifest {key} and final {final} are "
                              "both missing; refusing to load", rule="COMMIT-001", path=key) from None
        try:
            store.put_if_not_exists(final, data)
        except AlreadyExists:
            pass
    size = store.size(final)
    kv.put(base, version, _kv_path(base, final), size=size)
    store.delete(key)
    return version, final
