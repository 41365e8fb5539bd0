"""What a check function receives. The engine (``conformance/engine/``) builds these.

Checks read through these objects only, so every rule sees the same decoded bytes and
the same caches. All attributes are filled by the engine before checks run; lazy
helpers decode on first use and cache the result in ``cache``.

Scopes (see ``registry.Scope``):

* ``TableContext`` for ``Scope.TABLE``: the dataset as a whole (version list, refs), or one
  branch of it (``ref`` = ``"branch:NAME"``, ``store`` rooted at ``tree/NAME/``): the engine
  runs the same table- and version-scope rules on main and on every branch.
* ``VersionContext`` for ``Scope.VERSION``: one manifest and what it references.
* ``DataFileContext`` for ``Scope.DATA_FILE``: one data file of one fragment (deep checks).
* ``NamespaceContext`` for ``Scope.NAMESPACE``: a directory namespace root.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from reference_impl.io import ObjectStore


@dataclass
class TableContext:
    """The dataset: ``store`` is rooted at the dataset root, ``uri`` its URI."""

    uri: str
    store: ObjectStore
    storage_options: dict[str, str] = field(default_factory=dict)
    deep: bool = False
    # Every manifest key in _versions/ that parses as a version, as the engine listed it:
    # list of reference_impl.table.versions.VersionEntry
    version_entries: list[Any] = field(default_factory=list)
    cache: dict[str, Any] = field(default_factory=dict)
    # The versions whose manifests the run checks (the version-scope rules run on these).
    selected_versions: list[int] = field(default_factory=list)
    # manifest key -> the FormatError/NotFound met when reading it (MANIFEST-00x report it)
    load_errors: dict[str, Any] = field(default_factory=dict)
    # Which ref of the table this context judges: "main", or "branch:NAME" when ``store``
    # is rooted at ``tree/NAME/`` of the main root ``main_store`` (findings carry it).
    ref: str = "main"
    # The branch name when ``ref`` is a branch, else None.
    branch: str | None = None
    # The main dataset root (``_refs/`` lives there); ``store`` itself for main.
    main_store: ObjectStore | None = None
    # Sub-directories of this root that belong to nested branches (``b`` in ``tree/a`` for
    # branch ``a/b``): not unknown directories of the root.
    nested_dirs: frozenset[str] = frozenset()

    def manifest_file(self, version: int):
        """The decoded ``ManifestFile`` of ``version`` (cached), or None when it cannot be
        read (the reading rule reports that)."""
        return self._loader(version)

    _loader: Any = None  # set by the engine: Callable[[int], ManifestFile | None]

    def entry(self, version: int):
        """The ``VersionEntry`` of ``version`` (the first by key when names collide)."""
        for e in self.version_entries:
            if e.version == version:
                return e
        return None

    def selected_entries(self) -> list[Any]:
        wanted = set(self.selected_versions)
        return [e for e in self.version_entries if e.version in wanted]


@dataclass
class VersionContext:
    """One version. ``mf`` is a ``reference_impl.table.manifest.ManifestFile``."""

    table: TableContext
    version: int
    manifest_key: str
    mf: Any
    cache: dict[str, Any] = field(default_factory=dict)

    @property
    def store(self) -> ObjectStore:
        return self.table.store

    @property
    def manifest(self):
        return self.mf.manifest

    @property
    def deep(self) -> bool:
        return self.table.deep

    def location(self, kind: str, name: str, base_id: int | None):
        """Resolve a file named in the manifest through the base-path rules of spec 000:
        ``kind`` is ``"data"``, ``"deletion"`` or ``"index"``. Returns ``(store, key)``;
        raises ``FormatError`` (rule BASEPATH-*) for an unknown base id or an escaping path."""
        from reference_impl.errors import FormatError
        from reference_impl.table.basepath import find_base_path, resolve

        if base_id is None:
            return resolve(self.table.store, self.manifest, kind, name, None,
                           storage_options=self.table.storage_options)
        try:
            path = find_base_path(self.manifest, base_id).path
        except FormatError:
            path = None  # resolve raises BASEPATH-002 below
        # one store per base path for the whole table (an S3 client is costly to make);
        # the cache is keyed by path, since a base id may name another path in another version
        stores = self.table.cache.setdefault("base-stores", {})
        known = _known_base_store(stores, path)
        per_call = {base_id: known} if known is not None else {}
        found = resolve(self.table.store, self.manifest, kind, name, base_id,
                        storage_options=self.table.storage_options, base_cache=per_call)
        if path is not None and base_id in per_call:
            stores.setdefault(path.rstrip("/"), per_call[base_id])
        return found


def _known_base_store(stores: dict, path: str | None):
    """The store already open for base path ``path``: the same path, or a branch root
    (``{root}/tree/...``) below a root the table opened; None when there is none."""
    if not path:
        return None
    key = path.rstrip("/")
    if key in stores:
        return stores[key]
    if "\x00" in key or ".." in key.replace("\\", "/").split("/"):
        return None  # resolve refuses it (BASEPATH-003)
    for root, store in list(stores.items()):
        rest = key[len(root):]
        if key.startswith(root + "/") and rest.startswith("/tree/"):
            stores[key] = store.child(rest[1:])
            return stores[key]
    return None


@dataclass
class DataFileContext:
    """One data file of one fragment: ``fragment`` and ``data_file`` are protobuf messages."""

    version: VersionContext
    fragment: Any
    data_file: Any
    file_store: ObjectStore
    file_key: str
    cache: dict[str, Any] = field(default_factory=dict)


@dataclass
class NamespaceContext:
    """A directory namespace: ``store`` is rooted at the namespace root."""

    uri: str
    store: ObjectStore
    config: dict[str, str] = field(default_factory=dict)
    cache: dict[str, Any] = field(default_factory=dict)

