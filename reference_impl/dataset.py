"""The Dataset: one version of a Lance table, opened from its manifest (spec 000, 001).

Opening a dataset:

1. open the store of the URI (``tree/{branch}`` below it for a branch);
2. list ``_versions/`` once to find the latest attached version, or find the asked version's
   manifest under its V2 name, then its V1 name (``d{v}.manifest`` for a detached number);
   a tag name resolves to the branch and version the tag names;
3. read the manifest file (tail, manifest, index section, inline transaction);
4. refuse unknown reader feature flags (UnsupportedFeature naming them).

A dataset opened at ``.../tree/{branch}`` directly knows its branch from
``Manifest.branch`` and finds the main root, where tags and branches live, above it.

Everything here is metadata; scanning rows is delegated to :mod:`reference_impl.scan`.
"""

from __future__ import annotations

from collections.abc import Callable

from .errors import InvalidInput, NotFound
from .io.base import ObjectStore
from .io.uri import open_store
from .table import basepath, flags, layout, refs, versions
from .table import fragment as fragmod
from .table.manifest import ManifestFile, read_manifest_file
from .table.transaction import read_transaction_file

#: The operations that commit a new version (``delete``, ``update``, ... ``create_branch``)
#: and the tag operations, by function name. :mod:`reference_impl.dataset_ops` builds them on
#: this module and on the writer and registers them here when imported (the package
#: ``reference_impl`` imports it), so a Dataset offers them as methods, as pylance's does,
#: without this module importing them.
OPERATIONS: dict[str, Callable] = {}


def register_operations(*fns: Callable) -> None:
    """Make ``fns`` the Dataset's operations of their names (see :data:`OPERATIONS`)."""
    for fn in fns:
        OPERATIONS[fn.__name__] = fn


def _op(name: str) -> Callable:
    try:
        return OPERATIONS[name]
    except KeyError:
        raise RuntimeError(f"dataset operation {name!r} is not registered: "
                           "import reference_impl.dataset_ops") from None


def _parent_store(store: ObjectStore, branch: str) -> ObjectStore | None:
    """The main root above a branch store rooted at ``.../tree/{branch}``, if recognisable."""
    from .io.local import LocalStore

    depth = len(branch.split("/")) + 1
    if isinstance(store, LocalStore):
        parts = store.root.parts
        if len(parts) > depth and "/".join(parts[-depth:]) == f"{layout.TREE_DIR}/{branch}":
            return LocalStore(store.root.parents[depth - 1])
        return None
    suffix = f"/{layout.TREE_DIR}/{branch}"
    uri = store.uri.rstrip("/")
    if uri.endswith(suffix):
        return open_store(uri[: -len(suffix)], getattr(store, "storage_options", None))
    return None


class Fragment:
    """A lightweight view of one ``DataFragment`` of a version."""

    def __init__(self, dataset: Dataset, metadata) -> None:
        self._dataset = dataset
        self.metadata = metadata

    @property
    def fragment_id(self) -> int:
        return self.metadata.id

    @property
    def physical_rows(self) -> int:
        return self.metadata.physical_rows

    @property
    def num_deletions(self) -> int:
        return fragmod.num_deleted_rows(self.metadata)

    def count_rows(self) -> int:
        return fragmod.logical_rows(self.metadata)

    def data_files(self) -> list:
        return list(self.metadata.files)

    def deletion_file(self):
        return self.metadata.deletion_file if self.metadata.HasField("deletion_file") else None

    def __repr__(self) -> str:
        return f"Fragment(id={self.fragment_id}, physical_rows={self.physical_rows})"


class _Tags:
    def __init__(self, dataset: Dataset) -> None:
        self._ds = dataset

    def list(self) -> dict[str, dict]:
        return {n: t.to_dict() for n, t in refs.list_tags(self._ds.root_store).items()}

    def get_version(self, name: str) -> int:
        return refs.resolve_tag(self._ds.root_store, name).version

    def create(self, name: str, version: int | None = None) -> None:
        """Create tag ``name`` at ``version`` (latest when None); create-if-absent."""
        _op("create_tag")(self._ds, name, version)

    def update(self, name: str, version: int) -> None:
        _op("update_tag")(self._ds, name, version)

    def delete(self, name: str) -> None:
        _op("delete_tag")(self._ds, name)


class _Branches:
    def __init__(self, dataset: Dataset) -> None:
        self._ds = dataset

    def list(self) -> dict[str, dict]:
        return {n: b.to_dict() for n, b in refs.list_branches(self._ds.root_store).items()}


class Dataset:
    """One version of a Lance dataset. Build it with :func:`open_dataset`."""

    def __init__(self, uri: str, store: ObjectStore, root_store: ObjectStore, branch: str | None,
                 manifest_file: ManifestFile, storage_options=None) -> None:
        self.uri = uri
        self.store = store
        self.root_store = root_store
        self.branch = branch
        self.manifest_file = manifest_file
        self.storage_options = storage_options
        self._base_cache: dict[int, ObjectStore] = {}
        self.tags = _Tags(self)
        self.branches = _Branches(self)

    # -- version --------------------------------------------------------------------
    @property
    def manifest(self):
        return self.manifest_file.manifest

    @property
    def version(self) -> int:
        return self.manifest.version

    def version_entries(self) -> list[versions.VersionEntry]:
        return versions.list_versions(self.store)

    def versions(self) -> list[int]:
        """The attached version numbers of this dataset's branch, oldest first."""
        return [e.version for e in self.version_entries()]

    @property
    def latest_version(self) -> int:
        return versions.latest_version(self.store)

    def checkout_version(self, version) -> Dataset:
        """Another version: an int (this branch), a tag name, or ``(branch, version)``."""
        if isinstance(version, tuple):
            branch, v = version
            return open_dataset(self.root_store.uri, v, branch=branch,
                                storage_options=self.storage_options)
        if isinstance(version, str):
            return open_dataset(self.root_store.uri, version, storage_options=self.storage_options)
        return _open(self.uri, self.store, self.root_store, self.branch, version,
                     self.storage_options)

    # -- schema and config ----------------------------------------------------------
    @property
    def lance_schema(self) -> list:
        return list(self.manifest.fields)

    @property
    def schema(self):
        from .table.schema import fields_to_arrow

        return fields_to_arrow(self.manifest.fields, dict(self.manifest.schema_metadata))

    @property
    def data_storage_version(self) -> str:
        v = self.manifest.data_format.version
        if v in ("legacy",):
            return "0.1"
        if v:
            return v
        # no data_format: the first data file's version decides, else legacy
        for frag in self.manifest.fragments:
            for df in frag.files:
                return fragmod.data_file_version(df)
        return "0.1"

    @property
    def config(self) -> dict[str, str]:
        return dict(self.manifest.config)

    @property
    def table_metadata(self) -> dict[str, str]:
        return dict(self.manifest.table_metadata)

    @property
    def reader_feature_flags(self) -> int:
        return self.manifest.reader_feature_flags

    @property
    def writer_feature_flags(self) -> int:
        return self.manifest.writer_feature_flags

    # -- fragments ------------------------------------------------------------------
    def get_fragments(self) -> list[Fragment]:
        return [Fragment(self, f) for f in self.manifest.fragments]

    def get_fragment(self, fragment_id: int) -> Fragment | None:
        for f in self.manifest.fragments:
            if f.id == fragment_id:
                return Fragment(self, f)
        return None

    def count_rows(self, filter=None) -> int:  # noqa: A002 - pylance's name
        """Rows of this version: physical minus deleted, from metadata alone; with a
        ``filter`` the rows are scanned."""
        if filter is not None:
            return self.to_table(columns=[], filter=filter).num_rows
        return sum(fragmod.logical_rows(f) for f in self.manifest.fragments)

    def resolve(self, kind: str, name: str, base_id: int | None) -> tuple[ObjectStore, str]:
        """``(store, key)`` of a data ("data"), deletion ("deletion") or index ("index") file."""
        return basepath.resolve(self.store, self.manifest, kind, name, base_id,
                                storage_options=self.storage_options, base_cache=self._base_cache)

    def data_file_location(self, df) -> tuple[ObjectStore, str]:
        return self.resolve("data", df.path, basepath.optional_base_id(df))

    def deletion_file_location(self, frag) -> tuple[ObjectStore, str] | None:
        if not frag.HasField("deletion_file"):
            return None
        dfile = frag.deletion_file
        name = layout.deletion_file_name(frag.id, dfile.read_version, dfile.id, dfile.file_type)
        return self.resolve("deletion", name, basepath.optional_base_id(dfile))

    # -- indices and transactions ---------------------------------------------------
    @property
    def index_section(self):
        return self.manifest_file.index_section

    def list_indices(self) -> list:
        sec = self.manifest_file.index_section
        return list(sec.indices) if sec is not None else []

    def transaction(self, version: int | None = None):
        """The transaction of ``version`` (default this one): the inline copy, else the
        ``.txn`` file the manifest names; None when neither exists."""
        mf = self.manifest_file if version is None or version == self.version \
            else self.checkout_version(version).manifest_file
        if mf.transaction is not None:
            return mf.transaction
        name = mf.manifest.transaction_file
        if not name:
            return None
        return read_transaction_file(self.store, name)

    read_transaction = transaction

    # -- data -----------------------------------------------------------------------
    def to_table(self, columns=None, filter=None, with_row_id=False,  # noqa: A002
                 with_row_address=False, **kwargs):
        from . import scan

        return scan.to_table(self, columns=columns, filter=filter, with_row_id=with_row_id,
                             with_row_address=with_row_address, **kwargs)

    def take(self, indices, columns=None, **kwargs):
        from . import scan

        return scan.take(self, indices, columns=columns, **kwargs)

    def take_blobs(self, blob_column: str, ids=None, addresses=None, indices=None) -> list:
        """Blob bytes (``None`` for nulls) at row ids, row addresses or scan positions."""
        from . import scan

        return scan.take_blobs(self, blob_column, ids=ids, addresses=addresses, indices=indices)

    # -- operations (each commits a new version; registered by dataset_ops.py) -------
    # The names mirror pylance's. Each returns the dataset at the new version.
    def delete(self, predicate, **kw) -> Dataset:
        return _op("delete")(self, predicate, **kw)

    def update(self, values: dict, where=None, **kw) -> Dataset:
        return _op("update")(self, values, where, **kw)

    def add_columns(self, data, **kw) -> Dataset:
        return _op("add_columns")(self, data, **kw)

    def merge(self, table, on: str, **kw) -> Dataset:
        return _op("merge")(self, table, on, **kw)

    def merge_insert(self, source, on, **kw) -> Dataset:
        return _op("merge_insert")(self, source, on, **kw)

    def drop_columns(self, columns: list[str], **kw) -> Dataset:
        return _op("drop_columns")(self, columns, **kw)

    def alter_columns(self, *alterations, **kw) -> Dataset:
        return _op("alter_columns")(self, *alterations, **kw)

    def compact_files(self, target_rows_per_fragment: int = 1024 * 1024, **kw) -> Dataset:
        return _op("compact_files")(self, target_rows_per_fragment, **kw)

    def restore(self, version: int | None = None, **kw) -> Dataset:
        return _op("restore")(self, version, **kw)

    def update_config(self, values: dict, **kw) -> Dataset:
        return _op("update_config")(self, values, **kw)

    def update_metadata(self, values: dict, **kw) -> Dataset:
        return _op("update_metadata")(self, values, **kw)

    def update_schema_metadata(self, values: dict, **kw) -> Dataset:
        return _op("update_schema_metadata")(self, values, **kw)

    def create_branch(self, name: str, ref=None, **kw) -> Dataset:
        return _op("create_branch")(self, name, ref, **kw)

    def shallow_clone(self, target: str, ref=None, **kw) -> Dataset:
        return _op("shallow_clone")(self, target, ref, **kw)

    def __repr__(self) -> str:
        b = f", branch={self.branch!r}" if self.branch else ""
        return f"Dataset({self.uri!r}, version={self.version}{b})"


def _read_version(store: ObjectStore, version: int | None) -> ManifestFile:
    if version is None:
        entry = versions.latest_entry(store)
        return read_manifest_file(store, entry.key, size=entry.size)
    if not isinstance(version, int) or isinstance(version, bool) or version < 0:
        raise InvalidInput(f"version must be an int or a tag name, got {version!r}")
    key = versions.manifest_key_for(store, version)
    return read_manifest_file(store, key)


def _open(uri, store, root_store, branch, version, storage_options) -> Dataset:
    mf = _read_version(store, version)
    flags.check_reader_flags(mf.manifest, path=mf.key)
    mbranch = mf.manifest.branch if mf.manifest.HasField("branch") else None
    if mbranch and root_store is None:
        root_store = _parent_store(store, mbranch)
    if root_store is None:
        root_store = store
    return Dataset(uri, store, root_store, branch or mbranch, mf, storage_options)


def open_dataset(uri: str, version=None, *, branch: str | None = None,
                 storage_options: dict | None = None) -> Dataset:
    """Open the dataset at ``uri``.

    ``version``: None (latest), an int, or a tag name. ``branch``: a branch name (its files
    are under ``{uri}/tree/{branch}``); None or ``"main"`` is the main branch.
    """
    # -- s3+ddb:// (REFS-NAMESPACE-COMMIT.md §8.4): the DynamoDB table names the latest
    # version; reading it repairs a commit that stopped after its commit point ------------
    from .table.external_store import is_s3_ddb_uri

    if is_s3_ddb_uri(uri):
        from .table.commit import resolve_latest_with_external_store
        from .table.external_store import store_for_s3_ddb

        store, kv = store_for_s3_ddb(uri, storage_options)
        if version is None and branch in (None, "main"):
            row = resolve_latest_with_external_store(store, kv)
            version = row[0] if row is not None else None
    else:
        store = open_store(uri, storage_options)
    # -- end s3+ddb ------------------------------------------------------------------------
    root_store: ObjectStore | None = None
    if branch not in (None, "main"):
        root_store = store
        store = versions.branch_store(store, branch)
    elif branch == "main":
        root_store, branch = store, None
    if isinstance(version, str):
        if root_store is None:
            # the URI may itself be a branch directory: its manifest names the branch
            try:
                probe = _read_version(store, None)
                pb = probe.manifest.branch if probe.manifest.HasField("branch") else None
            except NotFound:
                pb = None
            root_store = (_parent_store(store, pb) if pb else None) or store
        tag = refs.resolve_tag(root_store, version)
        branch = tag.branch
        store = versions.branch_store(root_store, branch)
        version = tag.version
    return _open(uri, store, root_store, branch, version, storage_options)
