"""How the validator reaches the bytes: the version list, manifests, transaction files and
data-file tails, all read through the reference implementation so every rule judges the same
decoded bytes a reader would see.

* versions: ``reference_impl.table.versions.scan_versions`` (every name in ``_versions/``,
  detached ones and mixed V1/V2 naming included: the rules judge them, where the reference
  ``list_versions`` refuses mixed names outright);
* manifests: ``reference_impl.table.manifest.read_manifest_file``;
* ``.txn`` files: ``reference_impl.table.transaction.parse_transaction``;
* data-file tails: ``reference_impl.file.container.read_container`` (footer, offset tables,
  FileDescriptor; legacy tail and Metadata block).

Every decoding problem is a :class:`~reference_impl.errors.FormatError` naming a rule.
"""

from __future__ import annotations

from dataclasses import dataclass

from reference_impl.errors import FormatError, NotFound
from reference_impl.file import container as ref_container
from reference_impl.table import manifest as ref_manifest
from reference_impl.table import transaction as ref_transaction
from reference_impl.table import versions as ref_versions
from reference_impl.table.versions import VersionEntry

MAX_MANIFEST_BYTES = 512 << 20


def list_versions(store, prefix: str = "_versions") -> list[VersionEntry]:
    """Every manifest directly under ``prefix`` (``_versions`` or ``tree/{branch}/_versions``),
    sorted by (version, key); keys are relative to ``store``."""
    if prefix == "_versions":
        entries = ref_versions.scan_versions(store)
    else:
        base = prefix[: -len("/_versions")] if prefix.endswith("/_versions") else prefix
        entries = [VersionEntry(e.version, f"{base}/{e.key}", e.scheme, e.size)
                   for e in ref_versions.scan_versions(store.child(base))]
    return sorted(entries, key=lambda e: (e.version, e.key))


def read_manifest_file(store, key: str):
    """The decoded manifest file at ``key``; FormatError (MANIFEST-00x, including a broken
    index or transaction section) or NotFound."""
    return ref_manifest.read_manifest_file(store, key)


def read_transaction_file(store, key: str):
    """``(Transaction, raw bytes)`` of a ``.txn`` file; FormatError (TXN-002) if it does
    not parse, NotFound if missing."""
    try:
        raw = store.get(key, max_size=MAX_MANIFEST_BYTES)
    except FormatError as exc:
        raise FormatError(str(exc.message), rule="TXN-002", path=key) from None
    return ref_transaction.parse_transaction(raw, path=key), raw


@dataclass(frozen=True)
class ContainerInfo:
    """What a data file's tail says: version, row count, column count and size."""

    major: int
    minor: int
    num_rows: int
    num_columns: int | None
    size: int


def read_container_info(store, key: str, size: int | None = None,
                        tails: Tails | None = None) -> ContainerInfo:
    """Read only a data file's footer and FileDescriptor (or legacy Metadata).

    Raises the container's FormatError (FILE-0xx) when the tail is not valid, NotFound when
    the file is missing; DATAFILE-003 reports either. ``tails`` (under ``--deep``) keeps
    the tail window read, for the deep check of the same file (:class:`Tails`)."""
    if tails is not None and size is not None:
        store = _TailKeeper(store, key, size, tails)
    c = ref_container.read_container(store, key, size=size)
    major, minor = c.version
    return ContainerInfo(int(major), int(minor), int(c.num_rows),
                         None if c.is_legacy else int(c.num_columns),
                         int(size if size is not None else store.size(key)))


#: the tail window ``read_container`` reads first (the whole file when it is smaller)
TAIL_WINDOW = 1 << 16


class Tails:
    """The tail windows of data files that the metadata checks of a ``--deep`` run read,
    kept (up to ``budget`` bytes in all) for the deep check of the same file, so that check
    fetches neither the file's size nor its footer again (:class:`PrimedStore`)."""

    def __init__(self, budget: int = 32 << 20) -> None:
        self.budget = budget
        self.kept = 0
        self.windows: dict[tuple[str, str], tuple[int, int, bytes]] = {}

    def keep(self, uri: str, key: str, size: int, start: int, data: bytes) -> None:
        if (uri, key) in self.windows or self.kept + len(data) > self.budget:
            return
        self.kept += len(data)
        self.windows[(uri, key)] = (size, start, bytes(data))

    def get(self, uri: str, key: str) -> tuple[int, int, bytes] | None:
        """``(file size, window start, window bytes)`` of ``key`` under the root ``uri``."""
        return self.windows.get((str(uri), key))


class _TailKeeper:
    """``store`` as ``read_container`` sees it, keeping the tail window it reads of ``key``
    (a read that ends at the file's end, no longer than :data:`TAIL_WINDOW`)."""

    def __init__(self, store, key: str, size: int, tails: Tails) -> None:
        self._store, self._key, self._size, self._tails = store, key, size, tails

    def __getattr__(self, name: str):
        return getattr(self._store, name)

    def size(self, key: str) -> int:
        return self._size if key == self._key else self._store.size(key)

    def get_range(self, key: str, start: int, length: int) -> bytes:
        data = self._store.get_range(key, start, length)
        if key == self._key and start + length == self._size and length <= TAIL_WINDOW \
                and len(data) == length:
            self._tails.keep(str(self._store.uri), key, self._size, start, data)
        return data


class PrimedStore:
    """``inner`` with one data file's size and tail window already in hand (read by the
    metadata checks of the same run): the deep check of that file asks the store for
    neither again, and a file no longer than the window is not read at all. Every other
    request goes to ``inner``."""

    def __init__(self, inner, key: str, size: int, start: int, window: bytes) -> None:
        self.inner, self.key, self._size, self._start, self._window = (
            inner, key, size, start, window)
        self.uri = inner.uri

    def __getattr__(self, name: str):
        return getattr(self.inner, name)

    def size(self, key: str) -> int:
        return self._size if key == self.key else self.inner.size(key)

    def exists(self, key: str) -> bool:
        return True if key == self.key else self.inner.exists(key)

    def get_range(self, key: str, start: int, length: int) -> bytes:
        if key == self.key and self._start <= start and 0 <= length \
                and start + length <= self._size:
            at = start - self._start
            return self._window[at:at + length]
        return self.inner.get_range(key, start, length)

    def get(self, key: str, **kw) -> bytes:
        if key == self.key and self._start == 0:
            from reference_impl.io.base import DEFAULT_MAX_READ

            if self._size <= kw.get("max_size", DEFAULT_MAX_READ):
                return self._window
        return self.inner.get(key, **kw)  # (above the bound: the store raises its error)


__all__ = ["ContainerInfo", "NotFound", "PrimedStore", "TAIL_WINDOW", "Tails", "VersionEntry",
           "list_versions", "read_container_info", "read_manifest_file",
           "read_transaction_file"]
