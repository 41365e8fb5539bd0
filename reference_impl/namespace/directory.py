"""``DirectoryNamespace``: a Lance directory namespace on any object store (spec 002).

One class serves the three configurations of the spec:

=====================  =====================  ==============================================
``manifest_enabled``   ``dir_listing_enabled``  behaviour
=====================  =====================  ==============================================
true                   true (default)         compatibility mode (:mod:`.compat`): manifest
                                              first, ``<name>.lance`` root tables also found
true                   false                  V2 only (:mod:`.v2`): every table in
                                              ``<hash>_<object_id>``
false                  true                   V1 only (:mod:`.v1`): root tables in
                                              ``<name>.lance``, no child namespaces
=====================  =====================  ==============================================

Ids are lists of names (``["ns1", "ns2", "t"]``); the root namespace is ``[]``. Every
refused request (a bad name, a missing namespace, a non-empty namespace, an existing
table) is refused *before* anything is written: the ``__manifest`` version does not move
and no directory appears.

Creating a table:

* in a ``<hash>_<object_id>`` directory (unique per attempt) the data is written first and
  the row committed afterwards; a loser of a concurrent create of the same id removes its
  own directory and raises :class:`TableAlreadyExists` (pylance leaves it behind);
* in a shared ``<name>.lance`` directory the row is committed first (the ``__manifest``
  commit decides the one winner), then the data is written; if that fails the row is
  taken back.

Differences from pylance 14.0.2 (REFS §9.6), all on the side of the spec: names with
``/``, ``$``, ``..`` or empty are refused; ``create_table`` requires the parent namespace;
``rename_table`` is implemented (pylance raises ``NotImplementedError``); a table found
only by directory listing can be dropped and renamed.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import pyarrow as pa

from ..errors import AlreadyExists, FormatError, InvalidInput
from ..io.uri import open_store
from . import compat, ids, v1, v2
from .config import NamespaceConfig, split_storage_options
from .errors import (
    NamespaceAlreadyExists,
    NamespaceNotEmpty,
    NamespaceNotFound,
    TableAlreadyExists,
    TableNotFound,
    UnsupportedOperation,
)

CREATE_MODES = ("create", "exist_ok", "overwrite")


@dataclass(frozen=True)
class TableDescription:
    """Where a table is: ``location`` relative to the root, ``table_uri`` absolute."""

    id: list[str]
    location: str
    table_uri: str
    declared_only: bool = False
    properties: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class NamespaceDescription:
    id: list[str]
    properties: dict[str, str] = field(default_factory=dict)


class DirectoryNamespace:
    """A directory namespace rooted at ``root`` (URI, absolute or relative path).

    ``storage_options`` may use plain keys or the spec's ``storage.`` prefix; other keyword
    properties (``commit_retries``, ``inline_optimization_enabled`` ...) are accepted as
    pylance accepts them (see :class:`.config.NamespaceConfig`).
    """

    def __init__(self, root, *, manifest_enabled=True, dir_listing_enabled=True,
                 storage_options: dict | None = None, **properties) -> None:
        props = dict(properties)
        props.update({"root": root, "manifest_enabled": manifest_enabled,
                      "dir_listing_enabled": dir_listing_enabled})
        for k, v in split_storage_options(storage_options).items():
            props[f"storage.{k}"] = v
        self.config = NamespaceConfig.from_properties(props)
        self.store = open_store(self.config.root, self.config.storage_options)
        self.manifest = (v2.ManifestTable(self.store, commit_retries=self.config.commit_retries)
                         if self.config.manifest_enabled else None)

    @classmethod
    def from_properties(cls, properties: dict) -> DirectoryNamespace:
        """Build from spec-named properties: ``{"root": ..., "storage.region": ...}``."""
        props = dict(properties)
        if "root" not in props:
            raise InvalidInput("the 'root' property is required")
        return cls(props.pop("root"), **props)

    def __repr__(self) -> str:
        c = self.config
        return (f"DirectoryNamespace({c.root!r}, manifest_enabled={c.manifest_enabled}, "
                f"dir_listing_enabled={c.dir_listing_enabled})")

    # -- helpers ----------------------------------------------------------------------------
    @property
    def root(self) -> str:
        return self.config.root

    @property
    def storage_options(self) -> dict[str, str]:
        return dict(self.config.storage_options)

    def table_uri(self, location: str) -> str:
        """The absolute URI (or path) of a root-relative ``location``."""
        if "://" in self.root:
            return f"{self.root.rstrip('/')}/{location}"
        return os.path.join(self.root, location)

    def _rows(self) -> pa.Table:
        return self.manifest.read()[1] if self.manifest is not None else v2.empty_rows()

    def _need_manifest(self, what: str) -> None:
        if self.manifest is None:
            raise UnsupportedOperation(
                f"{what} requires manifest_enabled=true (child namespaces and multi-level "
                "ids are only supported with the __manifest table)")

    def _require_namespace(self, parts: list[str], rows: pa.Table) -> None:
        """NamespaceNotFound unless the namespace ``parts`` exists (the root always does)."""
        if not parts:
            return
        self._need_manifest("a child namespace")
        row = v2.find(rows, ids.object_id(parts))
        if row is None or row.object_type != v2.NAMESPACE:
            raise NamespaceNotFound(f"namespace {parts} does not exist")

    def _check_parent(self, parts: list[str], rows: pa.Table) -> None:
        """NamespaceNotFound unless the namespace holding the object ``parts`` exists."""
        self._require_namespace(parts[:-1], rows)

    def _listed(self, parts: list[str]) -> bool:
        """True when the root table ``parts`` exists by directory listing."""
        return (len(parts) == 1 and self.config.dir_listing_enabled
                and v1.table_exists(self.store, parts[0]))

    def _find_table(self, parts: list[str], rows: pa.Table) -> tuple[str, v2.Row | None] | None:
        """``(location, row)`` of an existing table (row None when found by listing only)."""
        row = v2.find(rows, ids.object_id(parts)) if self.manifest is not None else None
        if row is not None:
            if row.object_type != v2.TABLE:
                return None
            try:  # a hostile row must not lead a reader or a drop outside the root
                ids.check_relative_location(row.location)
            except InvalidInput as exc:
                raise FormatError(f"table {parts}: {exc}", rule="NS-008",
                                  path=ids.MANIFEST_TABLE) from None
            return row.location.rstrip("/"), row
        if self._listed(parts):
            return ids.v1_directory(parts[0]), None
        return None

    def _describe(self, parts: list[str], location: str, row: v2.Row | None) -> TableDescription:
        props = v2.decode_metadata(row.metadata) if row is not None else {}
        return TableDescription(list(parts), location, self.table_uri(location),
                                v1.is_declared_only(self.store, location), props)

    def _table_parts(self, table_id) -> list[str]:
        parts = ids.validate_id(table_id, what="table id")
        if len(parts) > 1:
            self._need_manifest("a table in a child namespace")
        return parts

    def _add_table_row(self, parts: list[str], location: str, metadata: str | None) -> None:
        oid = ids.object_id(parts)

        def change(rows: pa.Table) -> pa.Table:
            self._check_parent(parts, rows)
            if v2.find(rows, oid) is not None:
                raise TableAlreadyExists(f"table {parts} already exists "
                                         "(or was concurrently created by another writer)")
            if (len(parts) == 1 and self.config.dir_listing_enabled
                    and location != ids.v1_directory(parts[0])
                    and v1.table_exists(self.store, parts[0])):
                raise TableAlreadyExists(f"table {parts} exists as a V1 directory")
            return v2.with_row(rows, v2.Row(oid, v2.TABLE, location, metadata))

        self.manifest.commit(change)

    def _remove_row(self, oid: str, location: str | None) -> None:
        def change(rows: pa.Table):
            row = v2.find(rows, oid)
            if row is None or (location is not None and row.location != location):
                return None
            return v2.without(rows, oid)

        self.manifest.commit(change)

    def _write(self, location: str, data, mode: str) -> None:
        from ..write import write_dataset

        try:
            write_dataset(data, self.store.child(location), mode=mode)
        except AlreadyExists as exc:
            raise TableAlreadyExists(f"a dataset already exists at {location!r}: {exc}") from None

    # -- namespaces -------------------------------------------------------------------------
    def create_namespace(self, namespace_id, properties: dict | None = None) -> NamespaceDescription:
        """Create a child namespace (its parent must exist). NamespaceAlreadyExists if the
        id is taken."""
        parts = ids.validate_id(namespace_id, what="namespace id")
        self._need_manifest("create_namespace")
        metadata = v2.encode_metadata(properties)
        oid = ids.object_id(parts)

        def change(rows: pa.Table) -> pa.Table:
            self._check_parent(parts, rows)
            existing = v2.find(rows, oid)
            if existing is not None:
                raise NamespaceAlreadyExists(f"{existing.object_type} {parts} already exists")
            return v2.with_row(rows, v2.Row(oid, v2.NAMESPACE, None, metadata))

        self.manifest.commit(change)
        return NamespaceDescription(parts, dict(properties or {}))

    def list_namespaces(self, namespace_id=()) -> list[str]:
        """Names of the direct child namespaces of ``namespace_id``, sorted."""
        parts = ids.validate_id(namespace_id, allow_root=True, what="namespace id")
        if self.manifest is None:
            if parts:
                self._need_manifest("a child namespace")
            return []
        rows = self._rows()
        self._require_namespace(parts, rows)
        return v2.leaf_names(v2.children(rows, ids.object_id(parts), v2.NAMESPACE))

    def namespace_exists(self, namespace_id) -> bool:
        try:
            self.describe_namespace(namespace_id)
            return True
        except NamespaceNotFound:
            return False

    def describe_namespace(self, namespace_id) -> NamespaceDescription:
        parts = ids.validate_id(namespace_id, allow_root=True, what="namespace id")
        if not parts:
            return NamespaceDescription([], {})
        self._need_manifest("a child namespace")
        row = v2.find(self._rows(), ids.object_id(parts))
        if row is None or row.object_type != v2.NAMESPACE:
            raise NamespaceNotFound(f"namespace {parts} does not exist")
        return NamespaceDescription(parts, v2.decode_metadata(row.metadata))

    def drop_namespace(self, namespace_id) -> None:
        """Drop an empty namespace; NamespaceNotEmpty when it holds anything."""
        parts = ids.validate_id(namespace_id, what="namespace id")
        self._need_manifest("drop_namespace")
        oid = ids.object_id(parts)

        def change(rows: pa.Table) -> pa.Table:
            row = v2.find(rows, oid)
            if row is None or row.object_type != v2.NAMESPACE:
                raise NamespaceNotFound(f"namespace {parts} does not exist")
            inside = v2.descendants(rows, oid)
            if inside.num_rows:
                raise NamespaceNotEmpty(
                    f"namespace {parts} is not empty: it holds {inside.num_rows} objects")
            return v2.without(rows, oid)

        self.manifest.commit(change)

    # -- tables -----------------------------------------------------------------------------
    def create_table(self, table_id, data, mode: str = "create",
                     properties: dict | None = None) -> TableDescription:
        """Write ``data`` (anything :func:`reference_impl.write.write_dataset` takes) as a
        new table. ``mode``: ``create`` (TableAlreadyExists if it exists), ``exist_ok``
        (return the existing table untouched) or ``overwrite`` (new version in place)."""
        if mode not in CREATE_MODES:
            raise InvalidInput(f"mode must be one of {CREATE_MODES}, got {mode!r}")
        parts = self._table_parts(table_id)
        if properties and self.manifest is None:
            raise UnsupportedOperation("table properties require manifest_enabled=true")
        metadata = v2.encode_metadata(properties)
        rows = self._rows()
        self._check_parent(parts, rows)
        found = self._find_table(parts, rows)
        if found is None and self.manifest is not None and v2.find(rows, ids.object_id(parts)):
            raise TableAlreadyExists(f"the id {parts} is taken by a namespace")
        if found is not None:
            location, row = found
            if mode != "exist_ok" and v1.is_reserved(self.store, location):
                self._write(location, data, "create")  # a declared table gets its data
                return self._describe(parts, location, row)
            if mode == "create":
                raise TableAlreadyExists(f"table {parts} already exists")
            if mode == "overwrite":
                self._write(location, data, "overwrite")
            return self._describe(parts, location, row)
        location = compat.new_table_location(parts, self.config)
        if self.manifest is None:
            if v1.directory_has_files(self.store, location):
                raise TableAlreadyExists(f"directory {location!r} is in use")
            self._write(location, data, "create")
            return self._describe(parts, location, None)
        if ids.V2_DIR_PATTERN.match(location) and not location.endswith(ids.V1_SUFFIX):
            self._write(location, data, "create")
            try:
                self._add_table_row(parts, location, metadata)
            except BaseException:
                v1.delete_directory(self.store, location)
                raise
        else:
            if v1.directory_has_files(self.store, location):
                raise TableAlreadyExists(f"directory {location!r} is in use")
            self._add_table_row(parts, location, metadata)
            try:
                self._write(location, data, "create")
            except BaseException:
                self._remove_row(ids.object_id(parts), location)
                raise
        row = v2.Row(ids.object_id(parts), v2.TABLE, location, metadata)
        return self._describe(parts, location, row)

    def declare_table(self, table_id, properties: dict | None = None) -> TableDescription:
        """Reserve a table: its row and a directory holding only ``.lance-reserved``."""
        parts = self._table_parts(table_id)
        metadata = v2.encode_metadata(properties)
        rows = self._rows()
        self._check_parent(parts, rows)
        if self._find_table(parts, rows) is not None or (
                self.manifest is not None and v2.find(rows, ids.object_id(parts))):
            raise TableAlreadyExists(f"table {parts} already exists")
        location = compat.new_table_location(parts, self.config)
        if v1.directory_has_files(self.store, location):
            raise TableAlreadyExists(f"directory {location!r} is in use")
        if self.manifest is None:
            v1.mark(self.store, location, ids.RESERVED_MARKER)
        elif location.endswith(ids.V1_SUFFIX):
            self._add_table_row(parts, location, metadata)
            v1.mark(self.store, location, ids.RESERVED_MARKER)
        else:
            v1.mark(self.store, location, ids.RESERVED_MARKER)
            try:
                self._add_table_row(parts, location, metadata)
            except BaseException:
                v1.delete_directory(self.store, location)
                raise
        return TableDescription(parts, location, self.table_uri(location), True,
                                dict(properties or {}))

    def register_table(self, table_id, location: str,
                       properties: dict | None = None) -> TableDescription:
        """Add an existing directory (``location`` relative to the root) as a table."""
        parts = self._table_parts(table_id)
        self._need_manifest("register_table")
        location = ids.check_relative_location(location)
        metadata = v2.encode_metadata(properties)
        self._add_table_row(parts, location, metadata)
        return self._describe(parts, location, v2.Row(ids.object_id(parts), v2.TABLE,
                                                      location, metadata))

    def deregister_table(self, table_id) -> TableDescription:
        """Forget a table, keep its directory. A ``<name>.lance`` root directory gets
        ``.lance-deregistered`` so that directory listing forgets it too."""
        parts = self._table_parts(table_id)
        rows = self._rows()
        found = self._find_table(parts, rows)
        if found is None:
            raise TableNotFound(f"table {parts} does not exist")
        location, row = found
        desc = self._describe(parts, location, row)
        if row is not None:
            self._remove_row(row.object_id, row.location)
        if self.config.dir_listing_enabled and location == ids.v1_directory(parts[-1]) \
                and len(parts) == 1:
            v1.mark(self.store, location, ids.DEREGISTERED_MARKER)
        return desc

    def list_tables(self, namespace_id=(), include_declared: bool = True) -> list[str]:
        """Names of the tables directly in ``namespace_id``, sorted. At the root in
        compatibility mode: manifest and directory listing merged (manifest first)."""
        parts = ids.validate_id(namespace_id, allow_root=True, what="namespace id")
        if parts:
            self._need_manifest("a child namespace")
        pairs: list[tuple[str, str | None]] = []
        if self.manifest is not None:
            rows = self._rows()
            self._require_namespace(parts, rows)
            tables = v2.children(rows, ids.object_id(parts), v2.TABLE)
            pairs = [(ids.split_object_id(o)[-1], loc) for o, loc in
                     zip(tables["object_id"].to_pylist(), tables["location"].to_pylist(), strict=True)]
        names = sorted(n for n, _ in pairs)
        if not parts and self.config.dir_listing_enabled:
            names = compat.merge_root_tables(pairs, v1.list_tables(self.store))
        if not include_declared:
            where = dict(pairs)
            names = [n for n in names if not v1.is_declared_only(
                self.store, where.get(n) or ids.v1_directory(n))]
        return names

    def table_exists(self, table_id) -> bool:
        try:
            self.describe_table(table_id)
            return True
        except (TableNotFound, NamespaceNotFound):
            return False

    def describe_table(self, table_id) -> TableDescription:
        parts = self._table_parts(table_id)
        rows = self._rows()
        self._check_parent(parts, rows)
        found = self._find_table(parts, rows)
        if found is None:
            raise TableNotFound(f"table {parts} does not exist")
        return self._describe(parts, *found)

    def open_table(self, table_id, version=None):
        """The table as a :class:`reference_impl.dataset.Dataset`."""
        from ..dataset import open_dataset

        desc = self.describe_table(table_id)
        return open_dataset(desc.table_uri, version, storage_options=self.storage_options)

    def drop_table(self, table_id) -> TableDescription:
        """Remove the table's row and delete its directory."""
        parts = self._table_parts(table_id)
        rows = self._rows()
        self._check_parent(parts, rows)
        found = self._find_table(parts, rows)
        if found is None:
            raise TableNotFound(f"table {parts} does not exist")
        location, row = found
        desc = self._describe(parts, location, row)
        if row is not None:
            self._remove_row(row.object_id, row.location)
        if location:
            ids.check_relative_location(location)
            v1.delete_directory(self.store, location)
        return desc

    def rename_table(self, table_id, new_table_id) -> TableDescription:
        """Give a table a new id (possibly in another namespace). A ``<name>.lance`` root
        table moves to a V2 directory; a V2 directory stays (a manifest-only change).
        pylance 14.0.2 does not implement this (``NotImplementedError``)."""
        parts = self._table_parts(table_id)
        new_parts = self._table_parts(new_table_id)
        self._need_manifest("rename_table")
        rows = self._rows()
        self._check_parent(parts, rows)
        self._check_parent(new_parts, rows)
        found = self._find_table(parts, rows)
        if found is None:
            raise TableNotFound(f"table {parts} does not exist")
        if self._find_table(new_parts, rows) is not None or v2.find(rows, ids.object_id(new_parts)):
            raise TableAlreadyExists(f"table {new_parts} already exists")
        location, row = found
        metadata = row.metadata if row is not None else None
        new_location = compat.renamed_table_location(location, new_parts)
        old_oid, new_oid = ids.object_id(parts), ids.object_id(new_parts)
        moved = new_location != location
        if moved:
            prefix = location.rstrip("/") + "/"
            for info in list(self.store.list(prefix)):
                self.store.copy(info.key, f"{new_location}/{info.key[len(prefix):]}")

        def change(rows: pa.Table) -> pa.Table:
            self._check_parent(new_parts, rows)
            current = v2.find(rows, old_oid)
            if row is not None and (current is None or current.location != location):
                raise TableNotFound(f"table {parts} was concurrently dropped or changed")
            if v2.find(rows, new_oid) is not None:
                raise TableAlreadyExists(f"table {new_parts} already exists")
            return v2.with_row(v2.without(rows, old_oid),
                               v2.Row(new_oid, v2.TABLE, new_location, metadata))

        try:
            self.manifest.commit(change)
        except BaseException:
            if moved:
                v1.delete_directory(self.store, new_location)
            raise
        if moved:
            v1.delete_directory(self.store, location)
        return self._describe(new_parts, new_location,
                              v2.Row(new_oid, v2.TABLE, new_location, metadata))

    # -- migration --------------------------------------------------------------------------
    def migrate(self) -> list[str]:
        """Add every V1 ``<name>.lance`` root table the manifest lacks to the manifest
        (spec "Migration from V1 to V2"). Returns the names added."""
        self._need_manifest("migrate")
        added: list[str] = []

        def change(rows: pa.Table):
            tables = v2.children(rows, "", v2.TABLE)
            pairs = list(zip(tables["object_id"].to_pylist(), tables["location"].to_pylist(), strict=True))
            todo = [n for n in compat.unregistered_v1_tables(pairs, v1.list_tables(self.store))
                    if v2.find(rows, n) is None]
            added[:] = todo
            if not todo:
                return None
            new = v2.make_rows([(n, v2.TABLE, ids.v1_directory(n), None) for n in todo])
            return pa.concat_tables([rows, new])

        self.manifest.commit(change)
        return list(added)
