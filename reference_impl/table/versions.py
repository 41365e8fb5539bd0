"""Version discovery (spec 001 "Manifest"; REFS-NAMESPACE-COMMIT §6-7).

The versions of a dataset (or of a branch, whose root is ``tree/{branch}/``) are the
manifest files of its ``_versions/`` directory whose names parse (see ``layout.py``).
One listing of ``_versions/`` finds them all; the latest version is the largest number.

* Detached versions (``d{v}.manifest``, bit 63 set) are never listed and never latest;
  they open only by their number.
* ``latest_version_hint.json`` is not used to find the latest version: pylance 14 ignores
  a stale, past-the-end or garbage hint when opening, and so do we. :func:`read_version_hint`
  only reports it.
* A directory holding both V1 and V2 names is refused (``MANIFEST-006``): pylance 14 fails
  with "Found multiple manifest naming schemes in the same directory".
* A specific version is found under its V2 name first, then its V1 name.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

from ..errors import FormatError, NotFound, StoreError
from ..io.base import ObjectStore
from . import layout


@dataclass(frozen=True)
class VersionEntry:
    """One listed version: its number, key (relative to the listed store), naming scheme
    (``"v1"``, ``"v2"`` or ``"detached"``) and file size."""

    version: int
    key: str
    scheme: str
    size: int


def branch_store(store: ObjectStore, branch: str | None) -> ObjectStore:
    """The store of ``branch`` below the main root ``store`` (itself for main)."""
    prefix = layout.branch_prefix(branch)
    return store.child(prefix) if prefix else store


def _scan_local(root: str) -> list[VersionEntry] | None:
    """One ``readdir`` of a local ``_versions`` and a ``stat`` of the manifests only (the
    generic listing stats every file it walks)."""
    found = []
    try:
        with os.scandir(os.path.join(root, layout.VERSIONS_DIR)) as it:
            for entry in it:
                parsed = layout.parse_manifest_name(entry.name)
                if parsed is None:
                    continue
                try:
                    if not entry.is_file():
                        continue
                    size = entry.stat().st_size
                except FileNotFoundError:  # removed while listing
                    continue
                found.append(VersionEntry(parsed[0], f"{layout.VERSIONS_DIR}/{entry.name}",
                                          parsed[1], size))
    except (FileNotFoundError, NotADirectoryError):
        return []
    except PermissionError as exc:
        raise StoreError(f"cannot list {root}/{layout.VERSIONS_DIR}: {exc}") from exc
    return found


def scan_versions(store: ObjectStore) -> list[VersionEntry]:
    """Every manifest named in ``_versions/`` (detached included), unsorted and unchecked."""
    from ..io.local import LocalStore

    if isinstance(store, LocalStore):
        return _scan_local(str(store.root))
    files, _dirs = store.list_dir(layout.VERSIONS_DIR)
    found = []
    for info in files:
        name = info.key.rsplit("/", 1)[-1]
        parsed = layout.parse_manifest_name(name)
        if parsed is None:
            continue
        found.append(VersionEntry(parsed[0], info.key, parsed[1], info.size))
    return found


def list_versions(store: ObjectStore, *, branch: str | None = None) -> list[VersionEntry]:
    """The attached versions of the dataset at ``store`` (or of ``branch``), oldest first.

    Raises FormatError ``MANIFEST-006`` when V1 and V2 names are mixed.
    """
    store = branch_store(store, branch)
    entries = [e for e in scan_versions(store) if e.scheme != layout.SCHEME_DETACHED]
    schemes = {e.scheme for e in entries}
    if len(schemes) > 1:
        raise FormatError(
            "found multiple manifest naming schemes (V1 and V2) in the same directory",
            rule="MANIFEST-006", path=f"{store.uri}/{layout.VERSIONS_DIR}")
    entries.sort(key=lambda e: e.version)
    return entries


def latest_entry(store: ObjectStore, *, branch: str | None = None) -> VersionEntry:
    """The entry of the latest attached version. Raises NotFound when there is none."""
    entries = list_versions(store, branch=branch)
    if not entries:
        target = branch_store(store, branch)
        raise NotFound(f"Dataset at path {target.uri} was not found: no manifest in _versions",
                       path=layout.VERSIONS_DIR)
    return entries[-1]


def latest_version(store: ObjectStore, *, branch: str | None = None) -> int:
    """The latest attached version number."""
    return latest_entry(store, branch=branch).version


def manifest_key_for(store: ObjectStore, version: int, *, branch: str | None = None) -> str:
    """The key of ``version``'s manifest (relative to the branch store): V2 name, then V1;
    a detached number maps to ``d{v}.manifest``. Raises NotFound."""
    store = branch_store(store, branch)
    if layout.is_detached_version(version):
        key = layout.manifest_key(version, layout.SCHEME_DETACHED)
        if store.exists(key):
            return key
    else:
        for scheme in (layout.SCHEME_V2, layout.SCHEME_V1):
            key = layout.manifest_key(version, scheme)
            if store.exists(key):
                return key
    raise NotFound(f"Dataset version {version} was not found under {store.uri}", path=key)


def read_version_hint(store: ObjectStore, *, branch: str | None = None) -> int | None:
    """The version in ``_versions/latest_version_hint.json``, or None when it is missing or
    not ``{"version": <u64>}``. Only a hint: never trusted for the latest version."""
    store = branch_store(store, branch)
    try:
        raw = store.get(layout.VERSION_HINT_KEY, max_size=4096)
    except (NotFound, FormatError):
        return None
    try:
        doc = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    v = doc.get("version") if isinstance(doc, dict) else None
    if isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= layout.U64_MAX:
        return v
    return None
