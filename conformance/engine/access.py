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


def read_container_info(store, key: str, size: int | None = None) -> ContainerInfo:
    """Read only a data file's footer and FileDescriptor (or legacy Metadata).

    Raises the container's FormatError (FILE-0xx) when the tail is not valid, NotFound when
    the file is missing; DATAFILE-003 reports either."""
    c = ref_container.read_container(store, key, size=size)
    major, minor = c.version
    return ContainerInfo(int(major), int(minor), int(c.num_rows),
                         None if c.is_legacy else int(c.num_columns),
                         int(size if size is not None else store.size(key)))


__all__ = ["ContainerInfo", "NotFound", "VersionEntry", "list_versions", "read_container_info",
           "read_manifest_file", "read_transaction_file"]
