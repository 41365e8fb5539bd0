"""The ``reference`` adapter: the project's own reader and writer (``reference_impl``).

Every operation of an operation script maps onto one ``reference_impl`` call:
``write_dataset`` for create/append/overwrite, the Dataset methods (delegating to
``reference_impl.dataset_ops``) for the rest. An ``append`` with ``read_version`` writes its
fragments and commits an Append transaction read at that version, so the commit loop must
check the versions committed since and rebase (spec 001, "Conflict resolution").
"""

from __future__ import annotations

import pyarrow as pa

from .. import __version__
from .adapter import ALL_OPS, Adapter, Capabilities, Unsupported
from .scenarios import ROW_ID


class ReferenceAdapter(Adapter):
    name = "reference"
    version = __version__
    capabilities = Capabilities(read=True, write=True, ops=ALL_OPS, row_ids=True,
                                features=("legacy", "v1-names", "branches", "blobs", "query", "full-text", "filtered-read",
                                          "storage:2.0", "storage:2.1", "storage:2.2",
                                          "stable-row-ids", "v2-manifest-paths", "tags",
                                          "config", "stale-append"))

    # -- read ---------------------------------------------------------------------------
    def read(self, uri: str, version: int | None = None, *, with_row_id: bool = False) -> pa.Table:
        from reference_impl.dataset import open_dataset

        ds = open_dataset(uri, version=version)
        t = ds.to_table(with_row_id=with_row_id)
        if with_row_id and ROW_ID not in t.column_names:
            raise Unsupported("no _rowid column returned")
        return t

    def query(self, uri: str, version: int | None, query: dict) -> pa.Table:
        """A query answered by a scan (the reference reader keeps no index in use)."""
        from .queries import scan_answer

        return scan_answer(self.read(uri, version), query)

    def read_filtered(self, uri: str, version: int | None, filter: str | None,  # noqa: A002
                      columns: list[str] | None = None) -> pa.Table:
        """A scan with the filter (:mod:`reference_impl.predicate`) and the columns asked."""
        from reference_impl.dataset import open_dataset

        return open_dataset(uri, version=version).to_table(columns=columns, filter=filter)

    def take_blobs(self, uri: str, version: int | None, column: str, indices: list[int]) -> list:
        from reference_impl.dataset import open_dataset

        return open_dataset(uri, version=version).take_blobs(column, indices=list(indices))

    def read_with_external_store(self, uri: str, version: int | None, store_file: str, *,
                                 with_row_id: bool = False) -> pa.Table:
        """Read with the SQLite external manifest store ``store_file``: the latest version
        the store names is made readable first (a staged commit is finished), as a reader
        aware of the store does (spec 001, "External Manifest Store"). The store's rows keep
        the location the table was written at; that key is taken from the store."""
        import sqlite3

        from reference_impl.io.uri import open_store
        from reference_impl.table.commit import resolve_latest_with_external_store
        from reference_impl.table.external_store import SQLiteManifestStore

        con = sqlite3.connect(store_file)
        try:
            keys = [r[0] for r in con.execute("SELECT DISTINCT base_uri FROM manifests")]
        finally:
            con.close()
        if len(keys) != 1:
            raise Unsupported(f"the external store holds {len(keys)} datasets, expected one")
        kv = SQLiteManifestStore(store_file)
        try:
            resolve_latest_with_external_store(open_store(uri), kv, keys[0])
        finally:
            kv.close()
        return self.read(uri, version, with_row_id=with_row_id)

    def versions(self, uri: str) -> list[int]:
        from reference_impl.dataset import open_dataset

        return list(open_dataset(uri).versions())

    # -- write --------------------------------------------------------------------------
    def apply(self, uri: str, op: dict, data: pa.Table | None = None) -> None:
        from reference_impl.dataset import open_dataset
        from reference_impl.write import write_dataset

        kind = op["op"]
        if kind == "create":
            write_dataset(data, uri, mode="create",
                          data_storage_version=op.get("data_storage_version", "2.2"),
                          enable_stable_row_ids=bool(op.get("stable_row_ids", False)),
                          enable_v2_manifest_paths=bool(op.get("v2_manifest_paths", True)),
                          max_rows_per_file=int(op.get("max_rows_per_file", 1024 * 1024)))
            return
        if kind == "append" and op.get("read_version") is not None:
            self._stale_append(uri, int(op["read_version"]), data)
            return
        if kind in ("append", "overwrite"):
            write_dataset(data, uri, mode=kind)
            return
        ds = open_dataset(uri)
        if kind == "delete":
            ds.delete(op["where"])
        elif kind == "update":
            ds.update(dict(op["set"]), op.get("where"))
        elif kind == "add_columns":
            ds.add_columns(pa.schema([pa.field(n, pa.type_for_alias(t)) for n, t in op["columns"]]))
        elif kind == "merge":
            ds.merge(data, op["on"])
        elif kind == "merge_insert":
            self._merge_insert(ds, op, data)
        elif kind == "drop_columns":
            ds.drop_columns(list(op["columns"]))
        elif kind == "compact":
            ds.compact_files(int(op.get("target_rows_per_fragment", 1024 * 1024)))
        elif kind == "tag":
            action = op.get("action", "create")
            if action == "create":
                ds.tags.create(op["name"], op.get("version"))
            elif action == "update":
                ds.tags.update(op["name"], int(op["version"]))
            else:
                ds.tags.delete(op["name"])
        elif kind == "restore":
            ds.restore(int(op["version"]))
        elif kind == "update_config":
            ds.update_config(dict(op["values"]))
        else:
            raise Unsupported(f"operation {kind!r}")

    def _merge_insert(self, ds, op: dict, data: pa.Table) -> None:
        """``merge_insert`` with the step's clauses (the known-bad adapters replace it)."""
        from .scenarios import merge_insert_clauses

        c = merge_insert_clauses(op)
        ds.merge_insert(data, op["on"], when_matched_update_all=c["update"], condition=c["condition"],
                        when_not_matched_insert_all=c["insert"],
                        when_not_matched_by_source_delete=c["delete_by_source"], where=c["where"])

    def _stale_append(self, uri: str, read_version: int, data: pa.Table) -> None:
        from reference_impl.dataset import open_dataset
        from reference_impl.table import operations
        from reference_impl.write import write_fragments

        ds = open_dataset(uri, version=read_version)
        m = ds.manifest
        version = m.data_format.version or "2.2"
        frags = write_fragments(ds.store, data.select(ds.schema.names), list(m.fields),
                                file_version=version)
        self.commit(ds.store, operations.append(read_version, frags),
                    stable_row_ids=bool(m.reader_feature_flags & 2), data_format=("lance", version))

    def commit(self, store, txn, **kw):
        """The commit step (known-bad adapters replace it)."""
        from reference_impl.table import commit as commit_mod

        return commit_mod.commit_transaction(store, txn, **kw)
