"""Table scans: reading one version of a dataset as pylance's ``to_table`` returns it.

For every fragment, in manifest order (spec 001 "Fragments", "Schema Evolution",
"Deletion Files", "Feature: Move-Stable Row IDs"):

1. every data file of the fragment holds the fields listed in ``DataFile.fields``
   (``column_indices`` maps them to columns in 2.0+; -2 marks a tombstoned field);
   each wanted field is read from the file that holds it, through the base path its
   ``base_id`` names;
2. a schema field that no data file of the fragment holds reads as nulls (a column added
   to the schema after the fragment was written);
3. columns are assembled in schema order (or in the order of ``columns``), one row per
   physical row of the fragment;
4. the deletion file, if any, removes its row offsets;
5. ``_rowaddr`` = ``(fragment_id << 32) | offset``; ``_rowid`` equals it unless the
   dataset uses stable row ids, in which case it comes from the fragment's row id
   sequence. Both are ``uint64`` and appended after the data columns, ``_rowid`` first.

A ``filter`` (a ``pyarrow.compute.Expression``, or the text of a filter of
:mod:`reference_impl.predicate`: a row is kept only where it is true) is applied to the
assembled rows before the projection, like pylance does.

Data files are read by version: legacy 0.1 by :mod:`reference_impl.file.legacy`, 2.0 and 2.1+
by :class:`reference_impl.file.reader.LanceFileReader` (one read path for scans, ``take``,
``dump`` and the deep validator). Fragments are read on the decode threads
(:mod:`reference_impl.file.parallel`) and joined in manifest order.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from reference_impl.errors import FormatError, InvalidInput, UnsupportedFeature

TOMBSTONE = -2
ROW_ID = "_rowid"
ROW_ADDR = "_rowaddr"
_OFFSET = "__scan_offset"


def to_table(
    dataset,
    columns: Sequence[str] | None = None,
    filter=None,
    with_row_id: bool = False,  # noqa: A002
    with_row_address: bool = False,
    limit: int | None = None,
    offset: int | None = None,
    **_ignored,
) -> pa.Table:
    """Scan ``dataset`` (a :class:`reference_impl.dataset.Dataset`) into one Arrow table.

    ``limit``/``offset`` keep rows ``[offset, offset + limit)`` of the filtered result.
    Other keyword arguments of pylance's scanner (``batch_size``, ``io_buffer_size`` ...)
    change nothing in the result and are ignored.
    """
    from reference_impl.file.encodings.v2_0.column import strip_field_ids
    from reference_impl.table import blob

    full = dataset.schema
    wanted = _wanted_fields(full, columns, filter)
    # a blob v2 column scans as its descriptors (reference_impl/table/blob.py)
    out_schema = blob.scan_schema(
        strip_field_ids(pa.schema([full.field(n) for n in wanted], metadata=full.metadata)))
    for name in plainly_stored_blob_v1(dataset, wanted):
        # (an older release's blob v1 column, stored and read back as plain bytes)
        i = out_schema.get_field_index(name)
        out_schema = out_schema.set(i, strip_field_ids(pa.schema([full.field(name)])).field(0))
    stable = _stable_row_ids(dataset.manifest)
    from reference_impl.file.parallel import map_ordered

    # fragments are independent: read on the decode threads (each file then spreads its
    # fields and pages over the same pool), put back in manifest order
    parts = map_ordered(
        lambda frag: _fragment_table(
            dataset,
            frag,
            wanted,
            out_schema,
            stable,
            with_row_id or filter is not None,
            with_row_address or filter is not None,
        ),
        list(dataset.manifest.fragments),
    )
    extra = []
    if with_row_id or filter is not None:
        extra.append(pa.field(ROW_ID, pa.uint64()))
    if with_row_address or filter is not None:
        extra.append(pa.field(ROW_ADDR, pa.uint64()))
    keeper = [] if len(out_schema) else [pa.field(_OFFSET, pa.uint64())]  # see _fragment_table
    schema = pa.schema(list(out_schema) + keeper + extra, metadata=out_schema.metadata)
    table = (
        pa.concat_tables([p.cast(schema) if p.schema != schema else p for p in parts])
        if parts
        else schema.empty_table()
    )
    # JSON columns are stored as binary JSON and scan as JSON text (reference_impl/table/jsonb.py)
    from reference_impl.table.jsonb import decode_json_columns

    table = decode_json_columns(table)
    if isinstance(filter, str):  # a filter as users write it (reference_impl/predicate.py)
        from reference_impl.predicate import matches

        table = table.filter(matches(table, filter))
    elif filter is not None:
        table = table.filter(filter)
    names = list(columns) if columns is not None else [f.name for f in full]
    if with_row_id:
        names.append(ROW_ID)
    if with_row_address:
        names.append(ROW_ADDR)
    table = table.select(names)
    if offset or limit is not None:
        start = int(offset or 0)
        if start < 0 or (limit is not None and int(limit) < 0):
            raise InvalidInput("limit and offset must not be negative")
        table = table.slice(start, None if limit is None else int(limit))
    return table


def take(dataset, indices, columns: Sequence[str] | None = None, **_ignored) -> pa.Table:
    """Rows at ``indices`` of the scan order (deleted rows excluded), like ``Dataset.take``."""
    idx = np.asarray(indices, dtype=np.int64)
    table = to_table(dataset, columns=columns)
    if len(idx) and (idx.min() < 0 or idx.max() >= table.num_rows):
        raise InvalidInput(f"take indices must lie in [0, {table.num_rows})")
    return table.take(pa.array(idx, pa.int64()))


def take_blobs(dataset, blob_column: str, ids=None, addresses=None, indices=None) -> list:
    """The bytes of ``blob_column`` at the given rows, like pylance's ``take_blobs``: one of
    ``ids`` (row ids), ``addresses`` (row addresses) or ``indices`` (positions in the scan
    order); ``None`` for a null blob, results in the order asked.

    A blob v2 column's descriptors are resolved through :mod:`reference_impl.table.blob`
    (inline, packed or dedicated sidecars, external objects); a blob v1 column's (a
    ``large_binary`` field with ``lance-encoding:blob``) name a range of the data file that
    holds the field (a null reads as ``None``, an empty one as ``b""``)."""
    from reference_impl.table import blob

    asked = [(name, v) for name, v in (("ids", ids), ("addresses", addresses), ("indices", indices))
             if v is not None]
    if len(asked) != 1:
        raise InvalidInput("take_blobs needs exactly one of ids, addresses or indices")
    path = _blob_path(dataset.schema, blob_column)
    top = path[0].name
    how, values = asked[0]
    wanted = np.asarray(values.to_pylist() if isinstance(values, pa.Array) else list(values),
                        dtype=np.uint64 if how != "indices" else np.int64)
    table = to_table(dataset, columns=[top], with_row_id=True, with_row_address=True)
    if how == "indices":
        if len(wanted) and (wanted.min() < 0 or wanted.max() >= table.num_rows):
            raise InvalidInput(f"take_blobs indices must lie in [0, {table.num_rows})")
        rows = wanted
    else:
        keys = table.column(ROW_ID if how == "ids" else ROW_ADDR).to_numpy()
        where = {int(k): i for i, k in enumerate(keys)}
        missing = [int(k) for k in wanted if int(k) not in where]
        if missing:
            raise InvalidInput(f"take_blobs: {how} {missing[:5]} name no live row")
        rows = np.asarray([where[int(k)] for k in wanted], np.int64)
    picked = table.take(pa.array(rows, pa.int64()))
    column = picked.column(top).combine_chunks()
    if len(path) > 1:  # a null struct row is a null blob (pc.struct_field keeps its nulls)
        import pyarrow.compute as pc

        column = pc.struct_field(column, [f.name for f in path[1:]])
    field = path[-1]
    addresses = picked.column(ROW_ADDR).to_numpy()
    if blob.is_blob_v1(field) and not pa.types.is_large_binary(column.type):
        return _blob_v1_bytes(dataset, blob_column, column, addresses)
    if not blob.is_blob_v2(field):
        return [None if v is None else bytes(v) for v in column.to_pylist()]
    return _blob_bytes(dataset, field, column, addresses)


def plainly_stored_blob_v1(dataset, names) -> set[str]:
    """The blob v1 fields among ``names`` whose data files store the bytes as a plain
    ``large_binary`` column: pylance 0.12 to 0.15 keep the ``lance-encoding:blob`` key but
    encode no blob column, and read the bytes back, so a scan returns the bytes, not
    descriptions. Judged from the first data file that holds the field (a table whose files
    disagree is refused by the fragment that differs, ENC-047)."""
    from reference_impl.file.reader import LanceFileReader
    from reference_impl.table.blob import is_blob_v1

    out = set()
    for name in names:
        f = dataset.schema.field(name)
        if not is_blob_v1(f):
            continue
        fid = _field_id(f)
        df = next((d for frag in dataset.manifest.fragments for d in frag.files
                   if fid in set(d.fields)), None)
        if df is None:
            continue
        store, key = dataset.data_file_location(df)
        try:
            reader = LanceFileReader(store, key)
            if reader.legacy is None and not reader.is_blob_column(
                    file_field_of(df, reader, f, key)):
                out.add(name)
        except (FormatError, UnsupportedFeature):
            pass  # the scan reads that file and says why it cannot
    return out


def _blob_path(schema: pa.Schema, blob_column: str) -> list[pa.Field]:
    """The fields from the top-level one down to ``blob_column``: a top-level name, or a
    dotted path through structs to a blob v2 field in one (``info.blob``), as pylance 14.0.2
    accepts it. Raises ``InvalidInput`` for a name the schema lacks, a path through a list
    (pylance refuses it too: a list holds many blobs per row), or a field that holds no
    bytes (a nested field that is not a blob, a top-level column of another type)."""
    if blob_column in schema.names:
        path = [schema.field(blob_column)]
    else:
        first, _, rest = blob_column.partition(".")
        if not rest or first not in schema.names:
            raise InvalidInput(f"column {blob_column!r} is not in the schema")
        path = [schema.field(first)]
        for name in rest.split("."):
            t = path[-1].type
            if not pa.types.is_struct(t):
                raise InvalidInput(f"blob column path {blob_column!r} passes through "
                                   f"{path[-1].name!r} ({t}), not a struct: take_blobs reads one "
                                   "blob per row, in a top-level column or a struct's field")
            if t.get_field_index(name) < 0:
                raise InvalidInput(f"column {blob_column!r} is not in the schema")
            path.append(t.field(name))
    from reference_impl.table import blob

    field = path[-1]
    t = field.type.storage_type if isinstance(field.type, pa.BaseExtensionType) else field.type
    holds_bytes = pa.types.is_binary(t) or pa.types.is_large_binary(t) or \
        pa.types.is_fixed_size_binary(t)
    if not (blob.is_blob_v2(field) or blob.is_blob_v1(field)) and \
            (len(path) > 1 or not holds_bytes):
        raise InvalidInput(f"column {blob_column!r} ({field.type}) is not a blob column")
    return path


def _blob_v1_bytes(dataset, blob_column: str, descriptions, addresses) -> list:
    """The bytes behind blob v1 ``descriptions`` (position, size in the data file holding
    the field) of rows at ``addresses``: ``None`` for a null blob (a null row, or 2.0's
    ``(d, 0)`` with ``d > 0``), ``b""`` for an empty one, as pylance 14.0.2 returns them
    (1.0.4 returned ``b""`` for a null too)."""
    from reference_impl.table import blob

    field_id = _field_id(dataset.schema.field(blob_column))
    fragments = {int(f.id): f for f in dataset.manifest.fragments}
    pos = descriptions.field("position").fill_null(1).to_numpy(zero_copy_only=False)
    size = descriptions.field("size").fill_null(0).to_numpy(zero_copy_only=False)
    out = []
    for i, addr in enumerate(addresses):
        if int(size[i]) == 0:
            out.append(None if int(pos[i]) != 0 else b"")
            continue
        frag = fragments[int(addr) >> 32]
        df = next(d for d in frag.files if field_id in set(d.fields))
        store, key = dataset.data_file_location(df)
        loc = blob.Location(store, key, int(pos[i]), int(size[i]), "ENC-047")
        out.append(blob.read_range(loc, path=key))
    return out


def _blob_bytes(dataset, field: pa.Field, descriptors, addresses) -> list:
    """The bytes behind blob v2 ``descriptors`` (of the schema's ``field``, top-level or
    nested) of rows at ``addresses``."""
    from reference_impl.table import blob

    field_id = _field_id(field)
    fragments = {int(f.id): f for f in dataset.manifest.fragments}
    out = []
    for desc, addr in zip(blob.descriptors_of(descriptors), addresses, strict=True):
        if desc is None:
            out.append(None)
            continue
        frag = fragments[int(addr) >> 32]
        df = next(d for d in frag.files if field_id in set(d.fields))
        store, key = dataset.data_file_location(df)
        loc = blob.locate(desc, data_store=store, data_file_key=key, manifest=dataset.manifest,
                          storage_options=dataset.storage_options, path=key)
        out.append(blob.read_range(loc, path=key))
    return out


def with_blob_bytes(dataset, table: pa.Table) -> pa.Table:
    """``table`` (scanned from ``dataset`` with ``_rowaddr``) with every blob column's
    descriptors replaced by the blob bytes (``large_binary``, field metadata
    ``lance-encoding:blob``): the rows as a writer takes them back, for operations that
    rewrite data files (update, compaction). A blob v1 null stays a null."""
    from reference_impl.table import blob

    for name in list(table.column_names):
        if name not in dataset.schema.names:
            continue
        field = dataset.schema.field(name)
        if blob.is_blob_v2(field) or (blob.is_blob_v1(field) and not pa.types.is_large_binary(
                table.schema.field(name).type)):
            column = table.column(name).combine_chunks()
            addresses = table.column(ROW_ADDR).to_numpy()
            if blob.is_blob_v2(field):
                values = _blob_bytes(dataset, field, column, addresses)
            else:
                values = _blob_v1_bytes(dataset, name, column, addresses)
            i = table.column_names.index(name)
            field = pa.field(name, pa.large_binary(), table.schema.field(i).nullable,
                             metadata={b"lance-encoding:blob": b"true"})
            table = table.set_column(i, field, pa.array(values, pa.large_binary()))
    return table


# -- one fragment ----------------------------------------------------------------------------


def _wanted_fields(schema: pa.Schema, columns, filter) -> list[str]:
    names = [f.name for f in schema]
    if columns is None:
        return names
    missing = [c for c in columns if c not in names]
    if missing:
        raise InvalidInput(f"columns {missing} are not in the schema")
    wanted = list(columns)
    if filter is not None:  # the filter may name columns outside the projection
        wanted += [n for n in names if n not in wanted]
    return wanted


def _stable_row_ids(manifest) -> bool:
    try:
        from reference_impl.table.flags import reads_stable_row_ids

        return bool(reads_stable_row_ids(manifest))
    except ImportError:  # pragma: no cover - the flags module ships with the kit
        return bool(manifest.reader_feature_flags & 2)


def _blob_descriptor_type() -> pa.DataType:
    from reference_impl.table.blob import DESCRIPTOR_TYPE

    return DESCRIPTOR_TYPE


def _field_id(f: pa.Field) -> int:
    return int((f.metadata or {})[b"lance:field_id"])


def _id_or_none(f: pa.Field) -> int | None:
    """The field id ``f`` carries, or None (a fixed-size list's item, a blob descriptor)."""
    raw = (f.metadata or {}).get(b"lance:field_id")
    return int(raw) if raw is not None else None


def _subtree_ids(f: pa.Field) -> set[int]:
    """The field ids of ``f`` and every nested child that has one (a fixed-size list is one
    Lance field, so its item carries no id)."""
    fid = _id_or_none(f)
    out = {fid} if fid is not None else set()
    t = f.type
    if pa.types.is_map(t):
        children = [t.key_field, t.item_field]
    elif pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        children = [t.value_field]
    elif pa.types.is_struct(t):
        children = list(t)
    else:
        children = []
    for child in children:
        out |= _subtree_ids(child)
    return out


def storage_schema(dataset) -> pa.Schema:
    """The dataset's schema with every field in its storage type (every nested field with
    its id), built once per opened dataset."""
    cached = getattr(dataset, "_storage_schema", None)
    if cached is not None:
        return cached
    from reference_impl.table.schema import fields_to_arrow

    out = fields_to_arrow(dataset.manifest.fields, extensions=False)
    try:
        dataset._storage_schema = out
    except AttributeError:
        pass
    return out


def _fragment_table(
    dataset,
    frag,
    wanted: list[str],
    out_schema: pa.Schema,
    stable: bool,
    with_row_id: bool,
    with_row_address: bool,
) -> pa.Table:
    full = dataset.schema
    # the fields under an extension type (arrow.variable_shape_tensor's struct) carry their
    # ids in the storage schema only
    storage = storage_schema(dataset)
    # Releases before 0.8 wrote no writer_version and no (or wrong) physical_rows; every
    # later release counts such a fragment's rows from its data files instead.
    n = int(frag.physical_rows) if dataset.manifest.HasField("writer_version") else 0
    columns: dict[str, pa.Array] = {}
    for df in frag.files:
        ids = [i for i in df.fields]
        idset = set(ids)
        # 2.1+ files list leaf ids only: a field is held when it or any descendant is listed
        present = [name for name in wanted if idset & _subtree_ids(storage.field(name))]
        if not present:
            continue
        got = _read_data_file(dataset, df, [full.field(nm) for nm in present])
        for nm, arr in zip(present, got, strict=False):
            if len(arr) != n and n:
                raise FormatError(
                    f"data file {df.path} holds {len(arr)} rows, fragment {frag.id} has {n}",
                    rule="FRAG-003",
                    path=df.path,
                )
            columns.setdefault(nm, arr)
    if n == 0 and columns:
        n = len(next(iter(columns.values())))
    arrays = []
    for f in out_schema:
        arr = columns.get(f.name)
        if arr is None:
            arr = pa.nulls(n, f.type)  # schema evolution: the fragment predates this field
        elif arr.type != f.type:
            if pa.types.is_large_binary(arr.type) != pa.types.is_large_binary(f.type) and \
                    b"lance-encoding:blob" in (f.metadata or {}):
                raise FormatError(f"blob v1 field {f.name!r} is stored as {arr.type} in "
                                  f"fragment {frag.id} and as {f.type} in the table's first "
                                  "file holding it", rule="ENC-047")
            if f.type == _blob_descriptor_type():
                raise FormatError(f"blob v2 field {f.name!r} is stored as {arr.type} in fragment "
                                  f"{frag.id}, not as blob descriptors", rule="BLOB-001")
            arr = arr.cast(f.type)
        arrays.append(arr)
    # a helper column keeps the row count when no data column is projected; dropped below
    offsets = np.arange(n, dtype=np.uint64)
    table = pa.Table.from_arrays(
        arrays + [pa.array(offsets)], schema=out_schema.append(pa.field(_OFFSET, pa.uint64()))
    )
    keep = _live_offsets(dataset, frag, n)
    if keep is not None:
        table = table.take(pa.array(keep, pa.int64()))
        offsets = offsets[keep]
    table = table.drop_columns([_OFFSET]) if table.num_columns > 1 else table
    if with_row_id:
        if stable:
            from reference_impl.table.rowids import fragment_row_ids

            ids = fragment_row_ids(dataset.store, frag)
            if ids is None or len(ids) != n:
                raise FormatError(
                    f"fragment {frag.id} has no row id sequence of {n} rows", rule="ROWID-001"
                )
            row_ids = np.asarray(ids, np.uint64)[offsets.astype(np.int64)]
        else:
            row_ids = (np.uint64(frag.id) << np.uint64(32)) | offsets
        table = table.append_column(pa.field(ROW_ID, pa.uint64()), pa.array(row_ids, pa.uint64()))
    if with_row_address:
        addr = (np.uint64(frag.id) << np.uint64(32)) | offsets
        table = table.append_column(pa.field(ROW_ADDR, pa.uint64()), pa.array(addr, pa.uint64()))
    return table


def _live_offsets(dataset, frag, n: int) -> np.ndarray | None:
    """Offsets that survive the deletion file, or None when nothing is deleted."""
    if not frag.HasField("deletion_file"):
        return None
    from reference_impl.table.deletion import read_deletion_file

    loc = dataset.deletion_file_location(frag)
    if loc is None:
        return None
    store, key = loc
    deleted = read_deletion_file(store, key, frag.deletion_file.file_type, physical_rows=n)
    mask = np.ones(n, bool)
    deleted = np.asarray(deleted, np.int64)
    if len(deleted) and (deleted.max() >= n or deleted.min() < 0):
        raise FormatError(
            f"deletion file of fragment {frag.id} names offsets past {n} rows",
            rule="DELETION-002",
            path=key,
        )
    mask[deleted] = False
    return np.nonzero(mask)[0]


# -- one data file ---------------------------------------------------------------------------


def _read_data_file(dataset, df, fields: list[pa.Field]) -> list[pa.Array]:
    """The arrays of the top-level ``fields`` held by data file ``df``."""
    store, key = dataset.data_file_location(df)
    major, minor = df.file_major_version, df.file_minor_version
    if major == 0 and minor < 3:
        return _read_legacy(dataset, df, store, key, fields)
    if (major, minor) in ((0, 3), (2, 0)) and len(df.column_indices):
        ids = list(df.fields)
        for f in fields:
            fid = _field_id(f)
            if fid in ids and ids.index(fid) < len(df.column_indices) \
                    and df.column_indices[ids.index(fid)] < 0:
                raise FormatError(
                    f"field {f.name!r} has no column in {df.path}", rule="DATAFILE-006", path=key
                )
    return _read_v2_x(df, store, key, fields)


def one_array(column: pa.ChunkedArray) -> pa.Array:
    """``column`` as one array: its only chunk as it is, else the chunks joined.

    (pyarrow's ``combine_chunks`` copies even a single chunk: 80 MB for the int64 column of
    10M rows.)"""
    return column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()


def _check_footer_version(df, key: str, footer: str, family: str | None) -> None:
    """A reader must not decode a file as a version other than the one its footer states:
    the ``DataFile`` entry and the footer must name the same file version (DATAFILE-004)."""
    major, minor = df.file_major_version, df.file_minor_version
    declared = "2.0" if (major, minor) in ((0, 3), (2, 0)) else f"{major}.{minor}"
    if family != declared:
        raise FormatError(
            f"DataFile {df.path} says file version {declared}, its footer says {footer}",
            rule="DATAFILE-004", path=key,
        )


def _read_legacy(dataset, df, store, key, fields):
    from reference_impl.file.legacy import open_legacy
    from reference_impl.table.blob import RULE_V1_LEGACY, is_blob_v1
    from reference_impl.table.schema import project

    for f in fields:
        if is_blob_v1(f):
            raise FormatError(f"blob column {f.name!r} (lance-encoding:blob) is in a legacy (0.1) "
                              "data file, which stores no blob descriptions: no release reads it",
                              rule=RULE_V1_LEGACY, path=key)

    lf = open_legacy(store=store, key=key)
    ids = list(df.fields)
    known = {f.id for f in dataset.manifest.fields}
    # dropped fields keep their page-table rows but leave the schema
    lance_fields = project(list(dataset.manifest.fields), [i for i in ids if i in known])
    table = lf.read(lance_fields, ids, columns=[f.name for f in fields],
                    dictionaries=legacy_dictionaries(dataset))
    return [one_array(table.column(i)) for i in range(table.num_columns)]


def legacy_dictionaries(dataset) -> dict:
    """Dictionary values of a legacy dataset's fields, read once from its manifest file
    (where every release writes them; see :func:`reference_impl.file.legacy.manifest_dictionaries`)."""
    cached = getattr(dataset, "_legacy_dictionaries", None)
    if cached is not None:
        return cached
    from reference_impl.file.legacy import manifest_dictionaries

    fields = [f for f in dataset.manifest.fields if f.HasField("dictionary")]
    out = {}
    if fields:
        mf = dataset.manifest_file
        store = getattr(dataset, "manifest_store", None) or dataset.store
        out = manifest_dictionaries(lambda pos, n: store.get_range(mf.key, pos, n), mf.size,
                                    fields, path=mf.key)
    try:
        dataset._legacy_dictionaries = out
    except AttributeError:
        pass
    return out


def _read_v2_x(df, store, key, fields):
    """2.0, 2.1 and 2.2 files go through the shared reader
    (:class:`reference_impl.file.reader.LanceFileReader`: ranged reads of the wanted columns'
    pages only, fields and pages decoded on the decode threads), selecting the top-level fields
    by id (the file's own names may predate a rename)."""
    try:
        from reference_impl.file.reader import LanceFileReader
    except ImportError:
        raise UnsupportedFeature(
            f"no reader for file version {df.file_major_version}.{df.file_minor_version} "
            "(reference_impl.file.reader is missing)",
            path=key,
        ) from None
    from reference_impl.table.blob import is_blob_v1, is_blob_v2, stored_field

    reader = LanceFileReader(store, key)
    _check_footer_version(df, key, reader.version, reader.version)
    positions = [file_field_of(df, reader, f, key) for f in fields]
    # a blob v2 column (also one nested in a struct or list) is stored as its descriptors:
    # the file's field is judged and named against the field's scanned form
    for f, p in zip(fields, positions, strict=True):
        if not is_blob_v2(f):  # (a top-level one is BLOB-001's, _fragment_table)
            check_same_shape(reader.schema.field(p), stored_field(f), key)
    # a blob v1 column scans as its descriptions, which are read instead of its bytes (where
    # the file stores it blob-encoded; an older release's plain column reads as its bytes)
    blobs = {i for i, f in enumerate(fields)
             if is_blob_v1(f) and reader.is_blob_column(positions[i])}
    fields = [f if i in blobs else stored_field(f) for i, f in enumerate(fields)]
    decoded = [p for i, p in enumerate(positions) if i not in blobs]
    table = reader.read_fields(decoded)
    out = []
    for i, f in enumerate(fields):
        if i in blobs:
            out.append(reader.blob_descriptions(positions[i]))
            continue
        arr = one_array(table.column(decoded.index(positions[i])))
        stored = reader.schema.field(positions[i])
        if _id_or_none(stored) == _field_id(f):
            out.append(nested_by_id(arr, stored, f))
        else:  # a file numbered on its own (LanceFileWriter + DataReplacement): by position
            out.append(by_position(arr, stored, f, key))
    return out


def column_of(df, field: pa.Field) -> int | None:
    """The first column of ``field`` in data file ``df``, from ``DataFile.column_indices``
    (spec 004 DataFile: "To determine column indices the column_indices property should be
    used instead"): the column of the field itself (2.0 lists every field) or of its first
    listed descendant (2.1+ lists leaves). None when ``df`` has no column indices (legacy
    files, and 2.0 files of releases before 0.16) or lists no column for the field."""
    ids, indices = list(df.fields), list(df.column_indices)
    if not indices or len(indices) != len(ids):
        return None
    subtree = _subtree_ids(field)
    cols = [c for i, c in zip(ids, indices, strict=True) if i in subtree and c >= 0]
    return min(cols) if cols else None


def file_field_of(df, reader, field: pa.Field, key: str) -> int:
    """The position, in the data file's own schema, of the top-level field that holds the
    dataset's ``field``: the one whose first column is :func:`column_of`. The file's own
    field ids decide only where ``df`` names no column indices. Raises ``FormatError``
    DATAFILE-008 when the column index starts no field of the file, or the file holds no
    field of that id."""
    from reference_impl.file.reader import RULE_FIELD_IDS

    col = column_of(df, field)
    if col is None:
        return reader._select([_field_id(field)])[0]
    pos = reader.field_starting_at(col)
    if pos is None:
        raise FormatError(f"DataFile.column_indices puts field {field.name!r} at column {col}, "
                          f"where no field of the file starts", rule=RULE_FIELD_IDS, path=key)
    return pos


def _shape(t: pa.DataType):
    """``t`` without names, metadata and nullability: what decides how its columns decode."""
    if pa.types.is_struct(t):
        return ("struct", tuple(_shape(c.type) for c in t))
    if pa.types.is_fixed_size_list(t):
        return ("fsl", t.list_size, _shape(t.value_type))
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return (str(t.id), _shape(t.value_type))
    if pa.types.is_map(t):
        return ("map", _shape(t.key_type), _shape(t.item_type))
    if pa.types.is_dictionary(t):
        return _shape(t.value_type)
    if isinstance(t, pa.BaseExtensionType):
        return _shape(t.storage_type)
    return str(t)


def by_position(arr: pa.Array, stored: pa.Field, wanted: pa.Field, key: str) -> pa.Array:
    """``arr``, read under the data file's own field ``stored`` whose ids are not the
    dataset's (a file written on its own numbers its fields from 0), given the nested names
    of the dataset's field ``wanted`` child by child in order (the caller checked that the
    two have one shape: :func:`check_same_shape`)."""
    return _renamed(arr, wanted.type)


def check_same_shape(stored: pa.Field, wanted: pa.Field, key: str) -> None:
    """Raise ``FormatError`` DATAFILE-008 unless the data file's field ``stored`` (which
    ``column_indices`` maps the dataset's ``wanted`` to) has the shape of ``wanted``: a
    reader decodes the column as ``wanted`` and cannot when it holds another type. (pylance
    14.0.2 appends a blob v1 column's scanned descriptions, a struct, under the blob's own
    id when asked to, and then cannot read the table: "there were more fields in the schema
    than provided column indices".) A blob v2 field is not judged here: its file column is
    its descriptors by design. Where the file uses the dataset's field ids, a struct child
    the file does not hold is no mismatch (:func:`_fits_by_id`)."""
    from reference_impl.file.reader import RULE_FIELD_IDS

    by_id = _id_or_none(stored) is not None and _id_or_none(stored) == _id_or_none(wanted)
    if not (_fits_by_id(stored, wanted) if by_id else _shape(stored.type) == _shape(wanted.type)):
        raise FormatError(f"field {wanted.name!r} ({wanted.type}) is mapped to a column of "
                          f"{key} that holds {stored.name!r} ({stored.type})",
                          rule=RULE_FIELD_IDS, path=key)


def _fits_by_id(stored: pa.Field, wanted: pa.Field) -> bool:
    """Whether the file's field ``stored`` reads as the dataset's ``wanted`` when their
    children are matched by field id (:func:`nested_by_id`): a struct child the file does
    not hold reads as nulls (lancedb 0.38.0 appends ``{"b": 4}`` to a ``struct<b, a>`` column
    as a file holding ``stuff.b`` alone, and reads ``a`` as null, as pylance does), one the
    dataset no longer has is not read; every child both hold, and every other node, must
    have the shape the dataset gives it."""
    st, wt = stored.type, wanted.type
    if pa.types.is_struct(st) and pa.types.is_struct(wt):
        if any(_id_or_none(c) is None for c in list(st) + list(wt)):
            return _shape(st) == _shape(wt)  # children without ids: matched by position
        held = {_id_or_none(c): c for c in st}
        return all(_fits_by_id(held[_id_or_none(c)], c) for c in wt if _id_or_none(c) in held)
    if (pa.types.is_list(st) and pa.types.is_list(wt)) or \
            (pa.types.is_large_list(st) and pa.types.is_large_list(wt)) or \
            (pa.types.is_fixed_size_list(st) and pa.types.is_fixed_size_list(wt)
             and st.list_size == wt.list_size):
        return _fits_by_id(st.value_field, wt.value_field)
    return _shape(st) == _shape(wt)


def _renamed(arr: pa.Array, want: pa.DataType) -> pa.Array:
    """``arr`` with the nested field names of ``want`` (same shape), values untouched."""
    import pyarrow.compute as pc

    t = arr.type
    if t == want:
        return arr
    mask = arr.is_null() if arr.null_count else None
    if pa.types.is_struct(t) and pa.types.is_struct(want):
        children = [_renamed(arr.field(j), want.field(j).type) for j in range(t.num_fields)]
        return pa.StructArray.from_arrays(children, fields=list(want), mask=mask)
    if pa.types.is_fixed_size_list(t) and pa.types.is_fixed_size_list(want):
        size = t.list_size
        values = _renamed(arr.values.slice(arr.offset * size, len(arr) * size),
                          want.value_type)
        return pa.FixedSizeListArray.from_arrays(values, type=pa.list_(want.value_field, size),
                                                 mask=mask)
    same_list = (pa.types.is_list(t) and pa.types.is_list(want)) or \
        (pa.types.is_large_list(t) and pa.types.is_large_list(want))
    if not same_list:
        return arr  # a leaf: the caller casts it
    offsets = arr.offsets  # this slice's: they need not start at 0
    start, end = offsets[0].as_py(), offsets[-1].as_py()
    values = _renamed(arr.values.slice(start, end - start), want.value_type)
    offsets = pc.subtract(offsets, pa.scalar(start, offsets.type))
    if pa.types.is_list(want):
        return pa.ListArray.from_arrays(offsets, values, type=pa.list_(want.value_field),
                                        mask=mask)
    return pa.LargeListArray.from_arrays(offsets, values, type=pa.large_list(want.value_field),
                                         mask=mask)


def nested_by_id(arr: pa.Array, stored: pa.Field, wanted: pa.Field) -> pa.Array:
    """``arr``, read under the data file's own field ``stored``, with the nested names of the
    dataset's field ``wanted``: children are matched by field id, not by name.

    A file keeps the names its fields had when it was written; renaming a nested field
    (``alter_columns`` on ``s.a``) changes only the manifest. The dataset's names win, and a
    child the file does not hold (added later) reads as nulls. Types are left to the caller's
    cast. A field whose nested names already agree comes back as it is, and so does a struct
    whose children carry no field ids (a blob v2 column's descriptors)."""
    if stored.type == wanted.type or arr.type == wanted.type or arr.type != stored.type:
        return arr
    st, wt = stored.type, wanted.type
    mask = arr.is_null() if arr.null_count else None
    if pa.types.is_struct(st) and pa.types.is_struct(wt):
        if any(_id_or_none(c) is None for c in st):
            return arr  # not a schema's struct (a blob v2 column's descriptors): left as read
        by_id = {_id_or_none(c): j for j, c in enumerate(st)}
        children = []
        for c in wt:
            j = by_id.get(_id_or_none(c))
            children.append(pa.nulls(len(arr), c.type) if j is None
                            else nested_by_id(arr.field(j), st.field(j), c))
        return pa.StructArray.from_arrays(children, fields=list(wt), mask=mask)
    if (pa.types.is_list(st) and pa.types.is_list(wt)) or \
            (pa.types.is_large_list(st) and pa.types.is_large_list(wt)):
        import pyarrow.compute as pc

        offsets = arr.offsets  # this slice's: they need not start at 0
        start, end = offsets[0].as_py(), offsets[-1].as_py()
        values = nested_by_id(arr.values.slice(start, end - start), st.value_field, wt.value_field)
        offsets = pc.subtract(offsets, pa.scalar(start, offsets.type))
        cls = pa.ListArray if pa.types.is_list(wt) else pa.LargeListArray
        return cls.from_arrays(offsets, values, type=pa.list_(wt.value_field)
                               if pa.types.is_list(wt) else pa.large_list(wt.value_field), mask=mask)
    if pa.types.is_fixed_size_list(st) and pa.types.is_fixed_size_list(wt) \
            and st.list_size == wt.list_size:
        size = st.list_size
        values = arr.values.slice(arr.offset * size, len(arr) * size)
        values = nested_by_id(values, st.value_field, wt.value_field)
        return pa.FixedSizeListArray.from_arrays(values, type=pa.list_(wt.value_field, size),
                                                 mask=mask)
    return arr

