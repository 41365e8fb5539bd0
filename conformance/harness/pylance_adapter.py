"""The ``pylance`` adapter: PyPI ``pylance`` (``import lance``), the upstream implementation.

Only this module (and the tests) import ``lance``; when it cannot be imported the adapter
declares no capabilities and every case is UNSUPPORTED with the import error as reason.
An ``append`` with ``read_version`` writes fragments with ``lance.fragment.write_fragments``
and commits ``LanceOperation.Append`` with that read version, as a concurrent writer would.

pylance raises ``ValueError``, ``OSError`` or ``ArrowInvalid`` for every refusal; the text
names Lance's own error kind (``Not supported: ...``, ``Invalid user input: ...``). The
adapter reports each as an :class:`~.adapter.ImplementationError` of the protocol's class
for that kind (:func:`lance_error_class`), as a program speaking ``PROTOCOL.md`` would; a
Rust panic (``PanicException``) goes through unchanged: the harness counts it as a crash.
"""

from __future__ import annotations

import contextlib
import re

import pyarrow as pa

from .adapter import ALL_OPS, Adapter, Capabilities, ImplementationError, Unsupported
from .scenarios import ROW_ID

#: Lance's error kinds as its messages print them, and the protocol's class for each; the
#: kind named first in a message is its kind (``External error: Invalid user input: ...``).
LANCE_KINDS = (
    (re.compile(r"Not supported:", re.I), "UnsupportedFeature"),
    (re.compile(r"corrupt file", re.I), "FormatError"),
    (re.compile(r"Commit conflict|Incompatible transaction|Retryable commit conflict", re.I),
     "CommitConflict"),
    (re.compile(r"was not found|Not found:|No such file or directory", re.I), "NotFound"),
    (re.compile(r"Invalid user input:", re.I), "InvalidInput"),
)


def lance_error_class(exc: BaseException) -> str | None:
    """The protocol's error class of an error pylance raised: ``CommitConflict`` for its
    ``CommitConflictError``, else the kind its message names first; None when it names none."""
    if type(exc).__name__ == "CommitConflictError":
        return "CommitConflict"
    text = str(exc)
    found = [(m.start(), cls) for pattern, cls in LANCE_KINDS if (m := pattern.search(text))]
    return min(found)[1] if found else None


@contextlib.contextmanager
def _refusals():
    """Errors of pylance as :class:`ImplementationError` of their protocol class."""
    try:
        yield
    except (Unsupported, ImplementationError):
        raise
    except Exception as exc:  # noqa: BLE001 - classified, or passed on as it is
        cls = lance_error_class(exc)
        if cls is None:
            raise
        raise ImplementationError(cls, f"{type(exc).__name__}: {exc}") from exc


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
                features=("legacy", "v1-names", "branches", "blobs", "query", "full-text", "filtered-read",
                          *WRITER_FEATURES))
        except Unsupported:
            self.version = None
            self.capabilities = Capabilities(read=False, write=False)

    def read(self, uri: str, version: int | None = None, *, with_row_id: bool = False) -> pa.Table:
        lance = _lance()
        with _refusals():
            ds = lance.dataset(uri, version=version)
            t = ds.to_table(with_row_id=with_row_id)
        if with_row_id and ROW_ID not in t.column_names:
            raise Unsupported("no _rowid column returned")
        return t

    def query(self, uri: str, version: int | None, query: dict) -> pa.Table:
        """``to_table`` with the filter, the nearest search or the full-text match
        (``full_text_query`` on the one column), through the table's indexes when
        ``use_index`` (``_distance`` and ``_score`` dropped); a filter with a search filters
        first (``prefilter``): the ``k`` nearest, or the matches, among the rows it matches."""
        use = bool(query.get("use_index", True))
        kw: dict = {"filter": query.get("filter"), "use_scalar_index": use}
        near = query.get("nearest")
        if near is not None:
            kw["nearest"] = {"column": near["column"], "q": near["q"], "k": int(near["k"]),
                             "use_index": use}
            kw["prefilter"] = True
        match = query.get("match")
        if match is not None:
            kw["full_text_query"] = {"query": match["query"], "columns": [match["column"]]}
            kw["prefilter"] = True
        with _refusals():
            t = _lance().dataset(uri, version=version).to_table(**kw)
        return t.drop_columns([c for c in ("_distance", "_score") if c in t.column_names])

    def read_filtered(self, uri: str, version: int | None, filter: str | None,  # noqa: A002
                      columns: list[str] | None = None) -> pa.Table:
        """``to_table(filter=..., columns=...)``."""
        with _refusals():
            return _lance().dataset(uri, version=version).to_table(
                filter=filter, columns=list(columns) if columns else None)

    def take_blobs(self, uri: str, version: int | None, column: str, indices: list[int]) -> list:
        with _refusals():
            ds = _lance().dataset(uri, version=version)
            return [None if b is None else b.readall()
                    for b in ds.take_blobs(column, indices=list(indices))]

    def versions(self, uri: str) -> list[int]:
        with _refusals():
            return sorted(int(v["version"]) for v in _lance().dataset(uri).versions())

    def apply(self, uri: str, op: dict, data: pa.Table | None = None) -> None:
        with _refusals():
            self._apply(uri, op, data)

    def _apply(self, uri: str, op: dict, data: pa.Table | None) -> None:
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
        elif kind == "merge_insert":
            self._merge_insert(ds, op, data)
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

    @staticmethod
    def _merge_insert(ds, op: dict, data: pa.Table) -> None:
        """``merge_insert(on)`` with the step's clauses, one commit."""
        from .scenarios import merge_insert_clauses

        c = merge_insert_clauses(op)
        builder = ds.merge_insert(list(op["on"]) if not isinstance(op["on"], str) else op["on"])
        if c["update"]:
            builder = builder.when_matched_update_all(condition=c["condition"])
        if c["insert"]:
            builder = builder.when_not_matched_insert_all()
        if c["delete_by_source"]:
            builder = builder.when_not_matched_by_source_delete(c["where"])
        builder.execute(data.select(ds.schema.names))
