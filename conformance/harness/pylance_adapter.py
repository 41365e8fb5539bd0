"""The ``pylance`` adapter: PyPI ``pylance`` (``import lance``), the upstream implementation.

Only this module (and the tests) import ``lance``; when it cannot be imported the adapter
declares no capabilities and every case is UNSUPPORTED with the import error as reason.
An ``append`` with ``read_version`` writes fragments with ``lance.fragment.write_fragments``
and commits ``LanceOperation.Append`` with that read version, as a concurrent writer would.
"""

from __future__ import annotations

import pyarrow as pa

from .adapter import ALL_OPS, Adapter, Capabilities, Unsupported
from .scenarios import ROW_ID


def _lance():
    try:
        import lance
    except Exception as exc:  # noqa: BLE001 - any import failure means "not available"
        raise Unsupported(f"pylance cannot be imported: {exc!r}") from None
    return lance


#: What the writer accepts, as ``lance-conformance compat`` names it (``PROTOCOL.md``).
WRITER_FEATURES = ("storage:legacy", "storage:2.0", "storage:2.1", "storage:2.2",
                   "stable-row-ids", "v2-manifest-paths", "tags", "index:btree", "config",
                   "stale-append")


class PylanceAdapter(Adapter):
    name = "pylance"

    def __init__(self) -> None:
        try:
            lance = _lance()
            self.version = lance.__version__
            self.capabilities = Capabilities(
                read=True, write=True, ops=(*ALL_OPS, "create_index"), row_ids=True,
                features=("legacy", "v1-names", "branches", "blobs", *WRITER_FEATURES))
        except Unsupported:
            self.version = None
            self.capabilities = Capabilities(read=False, write=False)

    def read(self, uri: str, version: int | None = None, *, with_row_id: bool = False) -> pa.Table:
        lance = _lance()
        ds = lance.dataset(uri, version=version)
        t = ds.to_table(with_row_id=with_row_id)
        if with_row_id and ROW_ID not in t.column_names:
            raise Unsupported("no _rowid column returned")
        return t

    def take_blobs(self, uri: str, version: int | None, column: str, indices: list[int]) -> list:
        ds = _lance().dataset(uri, version=version)
        return [None if b is None else b.readall()
                for b in ds.take_blobs(column, indices=list(indices))]

    def versions(self, uri: str) -> list[int]:
        return sorted(int(v["version"]) for v in _lance().dataset(uri).versions())

    def apply(self, uri: str, op: dict, data: pa.Table | None = None) -> None:
        lance = _lance()
        kind = op["op"]
        if kind == "create":
            lance.write_dataset(data, uri, mode="create",
                                data_storage_version=op.get("data_storage_version", "2.2"),
                                enable_stable_row_ids=bool(op.get("stable_row_ids", False)),
                                enable_v2_manifest_paths=bool(op.get("v2_manifest_paths", True)),
                                max_rows_per_file=int(op.get("max_rows_per_file", 1024 * 1024)))
            return
        if kind == "append" and op.get("read_version") is not None:
            rv = int(op["read_version"])
            old = lance.dataset(uri, version=rv)
            frags = lance.fragment.write_fragments(
                data.select(old.schema.names), uri, data_storage_version=old.data_storage_version)
            lance.LanceDataset.commit(uri, lance.LanceOperation.Append(frags), read_version=rv)
            return
        if kind in ("append", "overwrite"):
            lance.write_dataset(data, uri, mode=kind)
            return
        ds = lance.dataset(uri)
        if kind == "delete":
            ds.delete(op["where"])
        elif kind == "update":
            ds.update(dict(op["set"]), where=op.get("where"))
        elif kind == "add_columns":
            ds.add_columns([pa.field(n, pa.type_for_alias(t)) for n, t in op["columns"]])
        elif kind == "merge":
            ds.merge(data, op["on"])
        elif kind == "drop_columns":
            ds.drop_columns(list(op["columns"]))
        elif kind == "compact":
            ds.optimize.compact_files(
                target_rows_per_fragment=int(op.get("target_rows_per_fragment", 1024 * 1024)))
        elif kind == "tag":
            action = op.get("action", "create")
            if action == "create":
                ds.tags.create(op["name"], int(op.get("version") or ds.version))
            elif action == "update":
                ds.tags.update(op["name"], int(op["version"]))
            else:
                ds.tags.delete(op["name"])
        elif kind == "restore":
            lance.dataset(uri, version=int(op["version"])).restore()
        elif kind == "update_config":
            ds.update_config(dict(op["values"]))
        elif kind == "create_index":
            ds.create_scalar_index(op["column"], index_type=op.get("index_type", "BTREE"))
        else:
            raise Unsupported(f"operation {kind!r}")
