"""``write_dataset``: create, append to or overwrite a dataset, named as pylance names it.

The write of spec 001 "Dataset Update and Schema Evolution": *"Appending is done by
appending new Fragment to the dataset ... Overwrite a dataset can be done by resetting
the Fragment list of the Manifest."* Rows are cut into data files of at most
``max_rows_per_file`` rows, one fragment per file, each written under
``data/{name}.lance`` (spec 000 naming: 24 binary digits of the first three uuid bytes,
then 26 hex digits of the other thirteen). Then one transaction is committed:
``Overwrite`` for ``create``/``overwrite`` (and for ``append`` to a missing dataset, as
pylance does), ``Append`` otherwise (:mod:`.table.commit`).

Checks made **before** any file is written, so a refused write leaves nothing behind:
the target's writer feature flags are all known (spec 001, "Feature Flags"), ``create``
finds no dataset, and an ``append`` brings exactly the existing columns with the same
types (an incompatible schema is ``InvalidInput``).
"""

from __future__ import annotations

import os
import uuid as uuid_mod
from collections.abc import Iterable

import pyarrow as pa

from .dataset import _open, open_dataset
from .errors import AlreadyExists, InvalidInput
from .proto import table_pb2

STORAGE_VERSIONS = {"2.0": "2.0", "2.1": "2.1", "2.2": "2.2", "2.3": "2.3", "stable": "2.2", "next": "2.3"}
DEFAULT_MAX_ROWS_PER_FILE = 1024 * 1024


def _as_table(data) -> pa.Table:
    if isinstance(data, pa.Table):
        return data
    if isinstance(data, pa.RecordBatch):
        return pa.Table.from_batches([data])
    if isinstance(data, pa.RecordBatchReader):
        return data.read_all()
    if isinstance(data, dict):
        return pa.table(data)
    if isinstance(data, Iterable):
        batches = list(data)
        if batches and isinstance(batches[0], pa.RecordBatch):
            return pa.Table.from_batches(batches)
    raise InvalidInput(f"cannot write data of type {type(data).__name__}")


def _types_match(a: pa.DataType, b: pa.DataType) -> bool:
    if a == b:
        return True
    small_big = {(pa.string(), pa.large_string()), (pa.binary(), pa.large_binary())}
    return (a, b) in small_big or (b, a) in small_big


def _adopt_field_metadata(incoming: pa.Field, existing: pa.Field) -> pa.Field:
    """``incoming`` (same name, compatible type) carrying ``existing``'s field metadata at every
    level, so appended files are encoded as the dataset's fields say (``lance-encoding:*``
    hints such as a packed struct change the file's columns)."""
    t_in, t_ex = incoming.type, existing.type
    if pa.types.is_struct(t_in) and pa.types.is_struct(t_ex):
        by_name = {t_ex.field(i).name: t_ex.field(i) for i in range(t_ex.num_fields)}
        t_in = pa.struct([
            _adopt_field_metadata(c, by_name[c.name]) if c.name in by_name else c
            for c in (t_in.field(i) for i in range(t_in.num_fields))
        ])
    elif pa.types.is_list(t_in) and pa.types.is_list(t_ex):
        t_in = pa.list_(_adopt_field_metadata(t_in.value_field, t_ex.value_field))
    elif pa.types.is_large_list(t_in) and pa.types.is_large_list(t_ex):
        t_in = pa.large_list(_adopt_field_metadata(t_in.value_field, t_ex.value_field))
    return pa.field(incoming.name, t_in, incoming.nullable, metadata=existing.metadata)


def with_dataset_field_metadata(table: pa.Table, existing: pa.Schema) -> pa.Table:
    """``table`` with the field metadata of the dataset schema ``existing`` (same columns)."""
    schema = pa.schema(
        [_adopt_field_metadata(f, existing.field(f.name)) for f in table.schema],
        metadata=table.schema.metadata,
    )
    return pa.Table.from_arrays(table.columns, schema=schema)


def check_append_schema(existing: pa.Schema, incoming: pa.Schema) -> None:
    """InvalidInput unless ``incoming`` has exactly the columns of ``existing``, same types
    (a blob v2 column takes any blob input: large_binary or the ``lance.blob.v2`` struct)."""
    from .table import blob

    names_e, names_i = existing.names, incoming.names
    if sorted(names_e) != sorted(names_i):
        raise InvalidInput(
            f"Append with different schema: dataset has columns {names_e}, data has {names_i}")
    for name in names_e:
        if blob.is_blob_v2(existing.field(name)) and (
                blob.is_blob_input(incoming.field(name))
                or pa.types.is_large_binary(incoming.field(name).type)):
            continue
        te, ti = existing.field(name).type, incoming.field(name).type
        if not _types_match(te, ti):
            raise InvalidInput(f"Append with different schema: column {name!r} is {te} in the "
                               f"dataset and {ti} in the data")


def new_data_file_name() -> str:
    """A fresh data file name, spec 000 style."""
    from .table.layout import data_file_name

    return data_file_name(uuid_mod.uuid4().bytes)


def write_fragments(store, table: pa.Table, fields, *, file_version: str,
                    max_rows_per_file: int = DEFAULT_MAX_ROWS_PER_FILE,
                    allow_external_blobs: bool = False, base_paths=(),
                    folder: str = "data") -> list[table_pb2.DataFragment]:
    """Write ``table`` as data files of at most ``max_rows_per_file`` rows; one
    ``DataFragment`` (id 0, assigned at commit) per file. Blob v2 columns (manifest fields
    ``lance.blob.v2``) are planned per data file (:func:`reference_impl.table.blob.plan_column`):
    inline bytes go into the data file, the others into its sidecar files.

    The files go under ``folder`` of ``store``: ``data/`` of a dataset root, or ``""`` for
    the files of a base path that is not a dataset root (spec 000 "Base Path System":
    ``is_dataset_root`` false puts them directly in the base folder)."""
    from .file.writer import write_lance_file
    from .table import blob

    blob_fields = {f.name: f for f in fields if f.parent_id == -1 and blob.is_blob_v2(f)}
    nested = [f.name for f in fields if f.parent_id != -1 and blob.is_blob_v2(f)]
    if nested or any(blob.has_nested_blob_v2(f) for f in table.schema):
        from .errors import UnsupportedFeature

        raise UnsupportedFeature(
            f"blob v2 field {nested[0] if nested else 'input'!r} is nested in a struct or list: "
            "the reference writer writes blob v2 columns at the top level only (it reads "
            "nested ones, which pylance 14.0.2 writes)")
    schema_fields = blob.file_fields(fields) if blob_fields else list(fields)

    if max_rows_per_file <= 0:
        raise InvalidInput("max_rows_per_file must be positive")
    from .file.parallel import map_ordered, threads

    def one_file(start: int) -> table_pb2.DataFragment:
        chunk = table.slice(start, max_rows_per_file)
        name = new_data_file_name()
        key = f"{folder}/{name}" if folder else name
        sidecars = blob.Sidecars()
        if blob_fields:
            cols, schema = [], []
            for f, col in zip(chunk.schema, chunk.columns, strict=True):
                if f.name in blob_fields:
                    lf = blob_fields[f.name]
                    col = blob.plan_column(col, dict(lf.metadata), sidecars,
                                           allow_external=allow_external_blobs, bases=base_paths)
                    f = blob.plan_field(f.name, lf.nullable)
                cols.append(col)
                schema.append(f)
            chunk = pa.Table.from_arrays(cols, schema=pa.schema(schema, metadata=chunk.schema.metadata))
            sidecars.write(store, key)
        wf = write_lance_file(store, key, chunk, version=file_version,
                              schema_fields=schema_fields)
        df = table_pb2.DataFile(path=name, fields=wf.fields, column_indices=wf.column_indices,
                                file_major_version=wf.major, file_minor_version=wf.minor,
                                file_size_bytes=wf.size)
        return table_pb2.DataFragment(id=0, files=[df], physical_rows=wf.num_rows)

    # the files are independent: written on the decode threads, listed in row order, a few at
    # a time. One map over every file would let each idle thread start another file while the
    # ones begun wait for their fields (a 10M-row, 20-column table then held ten files' pages
    # at once: 5.5 GB more than the table, and half the CPU time went to page faults).
    starts = list(range(0, table.num_rows, max_rows_per_file))
    at_once = max(1, threads())
    fragments: list[table_pb2.DataFragment] = []
    for i in range(0, len(starts), at_once):
        fragments.extend(map_ordered(one_file, starts[i:i + at_once]))
    return fragments


def _resolve_store(uri, storage_options):
    from .io.base import ObjectStore
    from .io.uri import open_store

    if isinstance(uri, ObjectStore):
        return uri
    return open_store(os.fspath(uri), storage_options)


def write_dataset(
    data,
    uri,
    mode: str = "create",
    *,
    data_storage_version: str = "2.2",
    enable_stable_row_ids: bool = False,
    enable_v2_manifest_paths: bool = True,
    max_rows_per_file: int = DEFAULT_MAX_ROWS_PER_FILE,
    storage_options: dict[str, str] | None = None,
    commit_message: str | None = None,
    external_store=None,
    allow_external_blob_outside_bases: bool = False,
):
    """Write ``data`` (a pyarrow Table, RecordBatch, reader, or dict of columns) to ``uri``.

    ``mode``: ``"create"`` (the dataset must not exist), ``"append"`` (creates it when
    missing) or ``"overwrite"``. ``uri`` is a path, a URI (``s3+ddb://bucket/path?ddbTableName=T``
    commits through that DynamoDB table, REFS §8.4) or an ``ObjectStore``. Always returns
    the written version opened as a :class:`reference_impl.dataset.Dataset`.

    At 2.2 a blob column (``lance-encoding:blob`` large_binary, or the ``lance.blob.v2``
    struct) is written as blob v2 (:mod:`reference_impl.table.blob`); external blob URIs need
    ``allow_external_blob_outside_bases=True``, as in pylance.
    """
    from .table import commit as commit_mod
    from .table import flags, operations
    from .table.schema import fields_to_arrow, schema_metadata_of

    if mode not in ("create", "append", "overwrite"):
        raise InvalidInput(f"mode must be create, append or overwrite, not {mode!r}")
    if data_storage_version not in STORAGE_VERSIONS:
        raise InvalidInput(f"unsupported data_storage_version {data_storage_version!r}")
    table = _as_table(data)
    from .table.external_store import is_s3_ddb_uri, store_for_s3_ddb

    if is_s3_ddb_uri(uri):  # REFS §8.4: commits go through the DynamoDB table of the URI
        store, ddb = store_for_s3_ddb(uri, storage_options)
        external_store = external_store or ddb
    else:
        store = _resolve_store(uri, storage_options)

    latest = commit_mod.latest_version_or_zero(store)
    if external_store is not None:
        row = commit_mod.resolve_latest_with_external_store(store, external_store)
        if row is not None:
            latest = max(latest, row[0])
    previous = None
    if latest > 0:
        mf = commit_mod.load_version(store, latest)
        previous = mf.manifest
        flags.check_writer_flags(previous, path=mf.key)
        if mode == "create":
            raise AlreadyExists(f"Dataset already exists: {store.uri}", path=store.uri)
    if previous is not None and mode == "append":
        existing = fields_to_arrow(previous.fields)
        check_append_schema(existing, table.schema)
        table = with_dataset_field_metadata(table.select(existing.names), existing)
        fields = list(previous.fields)
        file_version = previous.data_format.version or "2.2"
        stable = bool(previous.reader_feature_flags & operations.FLAG_STABLE_ROW_IDS)
    else:
        file_version = STORAGE_VERSIONS[data_storage_version]
        fields = _new_fields(table.schema, file_version)
        stable = enable_stable_row_ids if previous is None else bool(
            previous.reader_feature_flags & operations.FLAG_STABLE_ROW_IDS)
    if file_version not in ("2.0", "2.1", "2.2", "2.3"):
        raise InvalidInput(f"this writer cannot write data storage version {file_version!r}")
    frags = write_fragments(store, table, fields, file_version=file_version,
                            max_rows_per_file=max_rows_per_file,
                            allow_external_blobs=allow_external_blob_outside_bases,
                            base_paths=list(previous.base_paths) if previous is not None else [])
    if previous is None or mode in ("create", "overwrite"):
        txn = operations.overwrite(latest, frags, fields, schema_metadata=schema_metadata_of(table.schema),
                                   commit_message=commit_message)
    else:
        txn = operations.append(latest, frags, commit_message=commit_message)
    result = commit_mod.commit_transaction(
        store, txn, enable_v2_manifest_paths=enable_v2_manifest_paths, stable_row_ids=stable,
        data_format=("lance", file_version), external_store=external_store)
    return _open_written(uri, store, storage_options, result)


def _new_fields(schema: pa.Schema, file_version: str) -> list:
    """The Lance field list of a new dataset. At 2.2 a blob column (``lance-encoding:blob``
    large_binary, or the ``lance.blob.v2`` struct) becomes a blob v2 field, as pylance 14.0.2
    makes it; below 2.2 a ``lance-encoding:blob`` large_binary stays a blob v1 column and the
    ``lance.blob.v2`` struct is refused."""
    from .table import blob
    from .table.schema import arrow_to_fields

    if not any(blob.is_blob_input(f) for f in schema):
        return arrow_to_fields(schema)
    if file_version in ("2.0", "2.1"):
        if any(blob.is_blob_v2(f) for f in schema):
            raise InvalidInput(f"Blob v2 requires file version >= 2.2 (got {file_version})")
        return arrow_to_fields(schema)
    fields = arrow_to_fields(blob.manifest_schema(schema))
    blob.mark_extension(fields)
    return fields


def _open_written(uri, store, storage_options, result):
    """The written version, opened as a :class:`reference_impl.dataset.Dataset` (by URI when
    given one, so an ``s3+ddb://`` dataset keeps its URI; else on the store object)."""
    if isinstance(uri, (str, os.PathLike)):
        return open_dataset(os.fspath(uri), version=result.version, storage_options=storage_options)
    return _open(store.uri, store, None, None, result.version, storage_options)


def commit(
    uri,
    transaction,
    *,
    read_version: int | None = None,
    detached: bool = False,
    storage_options: dict[str, str] | None = None,
    external_store=None,
    enable_v2_manifest_paths: bool = True,
):
    """Commit an already built ``transaction`` (a ``Transaction`` message from
    :mod:`reference_impl.table.operations`, its data files already written) to the dataset
    at ``uri`` (path, URI or ``ObjectStore``), as pylance's ``LanceDataset.commit`` does.

    ``read_version`` replaces the transaction's own. ``detached=True`` makes a detached
    version (REFS §6: random u64 with bit 63 set, ``_versions/d{v}.manifest``, never latest,
    no hint); open it again with ``open_dataset(uri, version=v)``. Returns the committed
    version opened as a :class:`reference_impl.dataset.Dataset`.
    """
    from .proto import transaction_pb2
    from .table import commit as commit_mod
    from .table.external_store import is_s3_ddb_uri, store_for_s3_ddb

    if not isinstance(transaction, transaction_pb2.Transaction):
        raise InvalidInput(f"commit takes a Transaction message, not {type(transaction).__name__}")
    txn = transaction
    if read_version is not None:
        txn = transaction_pb2.Transaction()
        txn.CopyFrom(transaction)
        txn.read_version = int(read_version)
    if is_s3_ddb_uri(uri):
        store, ddb = store_for_s3_ddb(uri, storage_options)
        external_store = external_store or ddb
    else:
        store = _resolve_store(uri, storage_options)
    result = commit_mod.commit_transaction(
        store, txn, enable_v2_manifest_paths=enable_v2_manifest_paths, detached=detached,
        external_store=None if detached else external_store)
    return _open_written(uri, store, storage_options, result)
