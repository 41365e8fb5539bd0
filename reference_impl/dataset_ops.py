"""The mutating operations of a dataset, each one transaction (FACTS §A "Transactions
observed"), as functions taking a :class:`reference_impl.dataset.Dataset`:

==========================  =============================================================
``delete(ds, predicate)``   Delete (101): a new deletion file per touched fragment holding
                            the union of old and new deleted offsets; a fragment left with
                            no row goes to ``deleted_fragment_ids``
``update(ds, values, where)``  Update (108): the matching rows are deleted from their
                            fragments and written again, changed, as new fragments
``add_columns(ds, data)``   Merge (105): one new data file per fragment with the new
                            columns only (new field ids); ``data`` is a table aligned to
                            the visible rows, or a schema (all-null columns)
``merge(ds, table, on)``    Merge (105): the new columns of ``table`` joined on ``on``
``merge_insert(ds, source, on, ...)``  Update (108): rows of ``source`` matched on ``on``
                            update, insert or delete rows (:mod:`reference_impl.merge_insert`)
``drop_columns(ds, cols)``  Project (109)
``alter_columns(ds, ...)``  Project (109): renames keep the field id
``compact_files(ds, n)``    ReserveFragments (107) then Rewrite (104)
``restore(ds, version)``    Restore (106)
``update_config`` / ``update_metadata`` / ``update_schema_metadata``  UpdateConfig (110)
``create_tag`` / ``update_tag`` / ``delete_tag``  ``_refs/tags/{name}.json`` (no commit)
``create_branch(ds, name)`` Clone (113) into ``tree/{name}``, then the branch file
``shallow_clone(ds, target, ref)``  Clone (113) at a new root with ``base_paths``
==========================  =============================================================

Every function takes ``commit_message=`` (stored under ``__lance_commit_message``) and
returns the dataset opened at the committed version. This module builds on
:mod:`reference_impl.dataset` and :mod:`reference_impl.write` and registers its functions as
the Dataset's methods (``ds.delete(...)``; ``reference_impl.dataset.register_operations``). A predicate is a
``pyarrow.compute.Expression`` or the text of a filter (:mod:`reference_impl.predicate`); a
predicate naming a missing column raises ``InvalidInput`` before anything is written.
"""

from __future__ import annotations

import secrets
import time
import uuid as uuid_mod

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from . import scan
from .dataset import open_dataset, register_operations
from .errors import AlreadyExists, InvalidInput, NotFound
from .predicate import parse_predicate
from .proto import rowids_pb2, table_pb2
from .table import blob as blob_mod
from .write import new_data_file_name, write_fragments

DELETION_ARROW_MAX = 5000  # at most this many deleted rows go to an Arrow file, more to Roaring


def _expression(pred, schema: pa.Schema) -> tuple[pc.Expression, str]:
    if isinstance(pred, pc.Expression):
        problem = _missing_fields(pred, schema)
        if problem:
            raise InvalidInput(f"predicate {pred} cannot be evaluated on this dataset: {problem[0]}")
        return pred, str(pred)
    if not isinstance(pred, str) or not pred.strip():
        raise InvalidInput("a predicate must be a non-empty string or a pyarrow Expression")
    return parse_predicate(pred, schema), pred


def _missing_fields(expr: pc.Expression, schema: pa.Schema) -> list[str]:
    """Evaluate ``expr`` on an empty table of ``schema``: a missing column fails there."""
    try:
        schema.empty_table().filter(expr)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, KeyError) as exc:
        return [str(exc).splitlines()[0]]
    return []


# -- helpers ------------------------------------------------------------------------------
def _reopen(ds, version: int):
    return open_dataset(ds.uri, version=version, branch=ds.branch, storage_options=ds.storage_options)


def _external_store(ds):
    """The DynamoDB manifest store of an ``s3+ddb://`` dataset (REFS §8.4), else None."""
    from .table.external_store import dynamodb_store_for, is_s3_ddb_uri, split_s3_ddb_uri

    if not is_s3_ddb_uri(ds.uri) or ds.branch:
        return None
    return dynamodb_store_for(split_s3_ddb_uri(ds.uri)[1], ds.storage_options)


def _commit(ds, txn, **kw):
    from .table.commit import commit_transaction

    kw.setdefault("external_store", _external_store(ds))
    result = commit_transaction(ds.store, txn, data_format=(ds.manifest.data_format.file_format or "lance",
                                                           ds.manifest.data_format.version or "2.2"), **kw)
    return _reopen(ds, result.version)


def _file_version(ds) -> str:
    v = ds.manifest.data_format.version or "2.2"
    if v not in ("2.0", "2.1", "2.2", "2.3"):
        raise InvalidInput(f"this writer cannot write data storage version {v!r}")
    return v


def _check_writable(ds) -> None:
    from .table.flags import check_writer_flags

    check_writer_flags(ds.manifest, path=ds.manifest_file.key)


def _stable(ds) -> bool:
    return bool(ds.manifest.reader_feature_flags & 2)


def _rows_with_addresses(ds, columns=None) -> pa.Table:
    t = ds.to_table(columns=columns, with_row_address=True)
    return t


def _encode_u64_sequence(values: np.ndarray) -> bytes:
    """A RowIdSequence: one range when contiguous, else a plain u64 array (the row-id
    module's compact segments when it is present)."""
    try:
        from .table.rowids import encode_row_id_sequence
        return encode_row_id_sequence(np.asarray(values, dtype=np.uint64))
    except ImportError:
        pass
    seq = rowids_pb2.RowIdSequence()
    seg = seq.segments.add()
    v = np.asarray(values, dtype=np.uint64)
    if len(v) and np.all(np.diff(v.astype(np.int64)) == 1):
        seg.range.start = int(v[0])
        seg.range.end = int(v[-1]) + 1
    elif len(v) == 0:
        seg.range.start = 0
        seg.range.end = 0
    else:
        seg.array.u64_array.values = v.astype("<u8").tobytes()
    return seq.SerializeToString()


def _row_versions(ds, frag_of: np.ndarray, off_of: np.ndarray):
    """``(created_at, last_updated_at)`` versions (``uint64``) of the rows at fragment ids
    ``frag_of`` and offsets ``off_of``, read from their fragments' version sequences;
    None when one of those fragments has no sequences (a writer that did not record them)."""
    from .table.rowids import fragment_versions

    created = np.zeros(len(frag_of), dtype=np.uint64)
    updated = np.zeros(len(frag_of), dtype=np.uint64)
    by_id = {f.id: f for f in ds.manifest.fragments}
    for fid in np.unique(frag_of).tolist():
        frag = by_id[fid]
        c = fragment_versions(ds.store, frag, "created")
        u = fragment_versions(ds.store, frag, "last_updated")
        if c is None or u is None:
            return None
        sel = frag_of == fid
        created[sel] = c[off_of[sel]]
        updated[sel] = u[off_of[sel]]
    return created, updated


def _carry_row_meta(new_frags, row_ids=None, created=None, updated=None) -> None:
    """Give the new fragments (rows in order, ``physical_rows`` each) the row ids and
    version sequences of the rows they hold. A sequence left unset is filled at commit by
    the manifest builder (fresh row ids; the committed version)."""
    from .table.rowids import encode_version_sequence

    start = 0
    for f in new_frags:
        end = start + f.physical_rows
        if row_ids is not None:
            f.inline_row_ids = _encode_u64_sequence(row_ids[start:end])
        if created is not None:
            f.inline_created_at_versions = encode_version_sequence(created[start:end])
        if updated is not None:
            f.inline_last_updated_at_versions = encode_version_sequence(updated[start:end])
        start = end


def _write_deletion(ds, fragment_id: int, offsets: np.ndarray) -> table_pb2.DeletionFile:
    """A deletion file for ``offsets`` (sorted, unique): Arrow up to DELETION_ARROW_MAX rows,
    Roaring above; ``_deletions/{fragment_id}-{read_version}-{id}.{arrow|bin}``."""
    from .table.layout import deletion_file_name

    read_version = ds.version
    file_id = secrets.randbits(63)
    offsets = np.asarray(offsets, dtype=np.uint32)
    try:
        from .table.deletion import write_deletion_file
        return write_deletion_file(ds.store, fragment_id, read_version, offsets)
    except ImportError:
        pass
    if len(offsets) <= DELETION_ARROW_MAX:
        kind = 0
        table = pa.table({"row_id": pa.array(offsets, pa.uint32())},
                         schema=pa.schema([pa.field("row_id", pa.uint32(), nullable=False)]))
        sink = pa.BufferOutputStream()
        with pa.ipc.new_file(sink, table.schema,
                             options=pa.ipc.IpcWriteOptions(compression="zstd")) as w:
            w.write_table(table)
        data = sink.getvalue().to_pybytes()
    else:
        from pyroaring import BitMap
        kind = 1
        data = BitMap(offsets.tolist()).serialize()
    name = deletion_file_name(fragment_id, read_version, file_id, kind)
    ds.store.put(f"_deletions/{name}", data)
    return table_pb2.DeletionFile(file_type=kind, read_version=read_version, id=file_id,
                                  num_deleted_rows=len(offsets))


def _with_deletions(ds, frag, deleted: np.ndarray) -> table_pb2.DataFragment:
    out = table_pb2.DataFragment()
    out.CopyFrom(frag)
    out.deletion_file.CopyFrom(_write_deletion(ds, frag.id, deleted))
    return out


def _deleted_after(frag, alive: np.ndarray, removed: np.ndarray) -> np.ndarray:
    """Offsets deleted once ``removed`` goes: everything not alive now, plus ``removed``."""
    mask = np.ones(frag.physical_rows, dtype=bool)
    mask[alive] = False
    mask[removed] = True
    return np.flatnonzero(mask).astype(np.uint32)


def _split_addresses(addr) -> tuple[np.ndarray, np.ndarray]:
    a = np.asarray(addr, dtype=np.uint64)
    return (a >> np.uint64(32)).astype(np.int64), (a & np.uint64(0xFFFFFFFF)).astype(np.int64)


# -- delete / update ----------------------------------------------------------------------
def _remove_rows(ds, t: pa.Table, hit: pa.Table):
    """Mark the rows of ``hit`` (a subset of the scan ``t``, both with ``_rowaddr``) deleted:
    fragments left with no live row are removed whole, the others get a new deletion file
    holding the union of old and new deletions. Returns ``(updated_fragments, removed_ids)``."""
    frag_of, off_of = _split_addresses(t["_rowaddr"].to_numpy())
    hfrag, hoff = _split_addresses(hit["_rowaddr"].to_numpy())
    updated, gone = [], []
    for frag in ds.manifest.fragments:
        removed = hoff[hfrag == frag.id]
        if len(removed) == 0:
            continue
        alive = off_of[frag_of == frag.id]
        deleted = _deleted_after(frag, alive, removed)
        if len(deleted) == frag.physical_rows:
            gone.append(frag.id)
        else:
            updated.append(_with_deletions(ds, frag, deleted))
    return updated, gone


def delete(ds, predicate, *, commit_message: str | None = None):
    """Delete the rows matching ``predicate``; returns the dataset at the new version."""
    from .table import operations

    _check_writable(ds)
    expr, text = _expression(predicate, ds.schema)
    t = _rows_with_addresses(ds)
    hit = t.filter(expr)
    updated, gone = _remove_rows(ds, t, hit)
    txn = operations.delete(ds.version, updated, gone, text, commit_message=commit_message)
    return _commit(ds, txn)


def _value_expr(v, columns):
    if isinstance(v, pc.Expression):
        return v
    if isinstance(v, str):
        return parse_predicate(v, columns)
    return pc.scalar(v)


def update(ds, values: dict, where=None, *, commit_message: str | None = None):
    """Set ``values`` (column -> literal or SQL-subset expression) on the rows matching
    ``where`` (all rows when None): Update (108) with the rows rewritten as new fragments.
    Under stable row ids a rewritten row keeps its row id and created-at version; its
    last-updated-at version is the committed one (pylance 14.0.2)."""
    from .table import operations

    _check_writable(ds)
    names = ds.schema.names
    if not values:
        raise InvalidInput("update needs at least one column to set")
    for col in values:
        if col not in names:
            raise InvalidInput(f"update sets column {col!r}, which the dataset does not have")
    exprs = {c: _value_expr(v, names) for c, v in values.items()}
    expr, _text = _expression(where, ds.schema) if where is not None else (None, "")
    t = ds.to_table(with_row_address=True, with_row_id=_stable(ds))
    hit = t.filter(expr) if expr is not None else t
    hit = scan.with_blob_bytes(ds, hit)  # rewritten rows carry their blob bytes
    if hit.num_rows == 0:
        txn = operations.update(ds.version, commit_message=commit_message)
        return _commit(ds, txn)
    import pyarrow.dataset as pads

    # blob v2 columns travel as their bytes (with_blob_bytes above), not as the manifest's struct
    schema = pa.schema([hit.schema.field(f.name) if blob_mod.is_blob_v2(f) else f for f in ds.schema],
                       metadata=ds.schema.metadata)
    current = hit.select(names)
    projection = {n: exprs.get(n, pc.field(n)) for n in names}
    computed = pads.dataset(current).to_table(columns=projection)
    new_cols = [pc.cast(computed.column(n), schema.field(n).type) for n in names]
    changed = pa.table(new_cols, schema=schema)
    updated, removed_ids = _remove_rows(ds, t, hit)
    new = write_fragments(ds.store, changed, list(ds.manifest.fields), file_version=_file_version(ds))
    if _stable(ds):
        # the rows keep their ids and created-at versions; last-updated-at becomes the
        # committed version (filled by the manifest builder), as pylance 14.0.2 does
        meta = _row_versions(ds, *_split_addresses(hit["_rowaddr"].to_numpy()))
        _carry_row_meta(new, hit["_rowid"].to_numpy(), meta[0] if meta else None)
    field_ids = [f.id for f in ds.manifest.fields if f.name in values and f.parent_id == -1]
    txn = operations.update(ds.version, removed_ids=removed_ids, updated=updated, new=new,
                            fields_modified=field_ids, commit_message=commit_message)
    return _commit(ds, txn)


def merge_insert(ds, source: pa.Table, on, *, when_matched_update_all=False, condition=None,
                 when_not_matched_insert_all=False, when_not_matched_by_source_delete=False,
                 where=None, commit_message: str | None = None):
    """Merge the rows of ``source`` (the dataset's columns) into the dataset on the key
    columns ``on``, with the clauses asked (:mod:`reference_impl.merge_insert`): Update (108),
    the updated and deleted rows marked deleted in their fragments, the updated and the
    inserted rows written as new fragments. One new version, even when no row changes (as
    pylance 14.0.2 commits). Under stable row ids an updated row keeps its row id and
    created-at version; an inserted row takes a fresh id."""
    from . import merge_insert as mi
    from .table import operations

    _check_writable(ds)
    names = ds.schema.names
    source = pa.table(source) if isinstance(source, pa.RecordBatch) else source
    if sorted(source.column_names) != sorted(names):
        raise InvalidInput(f"merge_insert source columns {source.column_names} are not the "
                           f"dataset's {names}")
    source = source.select(names)
    t = ds.to_table(with_row_address=True, with_row_id=_stable(ds))
    t = scan.with_blob_bytes(ds, t)  # rows that stay keep their bytes; rows written carry them
    target = t.select(names)
    p = mi.plan(target, source, on, update=bool(when_matched_update_all), condition=condition,
                insert=bool(when_not_matched_insert_all),
                delete_by_source=bool(when_not_matched_by_source_delete), where=where)
    gone = sorted([tp for tp, _ in p.updated] + list(p.deleted))
    updated, removed_ids = _remove_rows(ds, t, t.take(pa.array(gone, pa.int64())))
    schema = pa.schema([t.schema.field(f.name) if blob_mod.is_blob_v2(f) else f for f in ds.schema],
                       metadata=ds.schema.metadata)

    def rows(positions):
        return source.take(pa.array(positions, pa.int64())).cast(schema)

    fields, version = list(ds.manifest.fields), _file_version(ds)
    new = []
    if p.updated:
        new_upd = write_fragments(ds.store, rows([s for _, s in p.updated]), fields, file_version=version)
        if _stable(ds):
            hit = t.take(pa.array([tp for tp, _ in p.updated], pa.int64()))
            meta = _row_versions(ds, *_split_addresses(hit["_rowaddr"].to_numpy()))
            _carry_row_meta(new_upd, hit["_rowid"].to_numpy(), meta[0] if meta else None)
        new += new_upd
    if p.inserted:  # fresh row ids and versions: filled at commit
        new += write_fragments(ds.store, rows(p.inserted), fields, file_version=version)
    txn = operations.update(ds.version, removed_ids=removed_ids, updated=updated, new=new,
                            commit_message=commit_message)
    return _commit(ds, txn)


# -- schema evolution ---------------------------------------------------------------------
def next_field_id(manifest) -> int:
    """The id a new field gets: one above every id the schema *and the data files* use.

    A dropped field leaves the schema but its id stays in the data files' ``fields`` (pylance
    writes no tombstone); giving that id to a new field would make every reader take the old
    column's pages for it. pylance numbers new fields the same way.
    """
    from .table.schema import max_field_id

    top = max_field_id(manifest.fields)
    for frag in manifest.fragments:
        for df in frag.files:
            if len(df.fields):
                top = max(top, max(df.fields))
    return top + 1


def add_columns(ds, data, *, commit_message: str | None = None):
    """Add columns: ``data`` is a pyarrow Table with one row per visible row (in scan
    order), or a pyarrow Schema whose columns are added all-null. Merge (105)."""
    from .file.writer import write_lance_file
    from .table import operations
    from .table.schema import arrow_to_fields

    _check_writable(ds)
    if isinstance(data, pa.Schema):
        schema = data
        data = None
    elif isinstance(data, (pa.Table, pa.RecordBatch)):
        data = pa.table(data) if isinstance(data, pa.RecordBatch) else data
        schema = data.schema
    else:
        raise InvalidInput("add_columns takes a pyarrow Table or Schema")
    clash = [n for n in schema.names if n in ds.schema.names]
    if clash:
        raise InvalidInput(f"columns {clash} already exist")
    new_fields = arrow_to_fields(schema, start_id=next_field_id(ds.manifest))
    t = _rows_with_addresses(ds, columns=[]) if data is not None else None
    if data is not None and data.num_rows != t.num_rows:
        raise InvalidInput(f"add_columns data has {data.num_rows} rows, the dataset {t.num_rows}")
    if t is not None:
        frag_of, off_of = _split_addresses(t["_rowaddr"].to_numpy())
    fragments = []
    for frag in ds.manifest.fragments:
        if data is None:
            part = pa.table({f.name: pa.nulls(frag.physical_rows, f.type) for f in schema}, schema=schema)
        else:
            sel = np.flatnonzero(frag_of == frag.id)
            # place the values at their physical offsets; deleted rows get nulls
            positions = np.full(frag.physical_rows, -1, dtype=np.int64)
            positions[off_of[sel]] = sel
            idx = pa.array(positions, mask=positions < 0)
            part = data.take(idx)
        name = new_data_file_name()
        wf = write_lance_file(ds.store, f"data/{name}", part, version=_file_version(ds),
                              schema_fields=new_fields)
        nf = table_pb2.DataFragment()
        nf.CopyFrom(frag)
        nf.files.add(path=name, fields=wf.fields, column_indices=wf.column_indices,
                     file_major_version=wf.major, file_minor_version=wf.minor, file_size_bytes=wf.size)
        fragments.append(nf)
    fields = list(ds.manifest.fields) + list(new_fields)
    txn = operations.merge(ds.version, fragments, fields, dict(ds.manifest.schema_metadata),
                           commit_message=commit_message)
    return _commit(ds, txn)


def merge(ds, table: pa.Table, on: str, *, commit_message: str | None = None):
    """Add the columns of ``table`` matched to the dataset's rows on column ``on``
    (left join: unmatched rows get nulls). Merge (105)."""
    if on not in ds.schema.names or on not in table.column_names:
        raise InvalidInput(f"join column {on!r} must exist in both the dataset and the table")
    keys = ds.to_table(columns=[on])
    left = keys.append_column("__pos", pa.array(np.arange(keys.num_rows)))
    joined = left.join(table, on, join_type="left outer").sort_by("__pos")
    new = joined.drop_columns([on, "__pos"])
    return add_columns(ds, new, commit_message=commit_message)


def _descendants(fields, ids: set[int]) -> set[int]:
    out = set(ids)
    changed = True
    while changed:
        changed = False
        for f in fields:
            if f.parent_id in out and f.id not in out:
                out.add(f.id)
                changed = True
    return out


def drop_columns(ds, columns: list[str], *, commit_message: str | None = None):
    """Remove top-level columns (their field ids are not reused). Project (109)."""
    from .table import operations

    _check_writable(ds)
    top = {f.name: f.id for f in ds.manifest.fields if f.parent_id == -1}
    missing = [c for c in columns if c not in top]
    if missing:
        raise InvalidInput(f"cannot drop missing columns {missing}")
    gone = _descendants(ds.manifest.fields, {top[c] for c in columns})
    keep = [f for f in ds.manifest.fields if f.id not in gone]
    if not [f for f in keep if f.parent_id == -1]:
        raise InvalidInput("cannot drop every column")
    return _commit(ds, operations.project(ds.version, keep, commit_message=commit_message))


def alter_columns(ds, *alterations, commit_message: str | None = None):
    """Rename columns: each alteration is ``{"path": old, "name": new}`` (pylance's form)
    or a mapping ``{old: new}``. The field keeps its id. Project (109)."""
    from .table import operations

    _check_writable(ds)
    renames: dict[str, str] = {}
    for alt in alterations:
        if "path" in alt:
            renames[alt["path"]] = alt.get("name", alt["path"])
        else:
            renames.update(alt)
    from .proto import file_pb2

    fields = [file_pb2.Field.FromString(f.SerializeToString()) for f in ds.manifest.fields]
    top = {f.name: f for f in fields if f.parent_id == -1}
    for old, new in renames.items():
        if old not in top:
            raise InvalidInput(f"cannot rename missing column {old!r}")
        if new in top and new != old:
            raise InvalidInput(f"column {new!r} already exists")
        top[old].name = new
    return _commit(ds, operations.project(ds.version, fields, commit_message=commit_message))


# -- compaction ---------------------------------------------------------------------------
def _index_coverage(ds) -> dict[int, frozenset]:
    """Fragment id -> the uuids of the indexes whose fragment bitmap names it (the
    fragment reuse index left out)."""
    from .table.index import FRAG_REUSE_INDEX_NAME, decode_fragment_bitmap

    cover: dict[int, set] = {}
    for im in ds.list_indices():
        if im.name == FRAG_REUSE_INDEX_NAME:
            continue
        for fid in decode_fragment_bitmap(im.fragment_bitmap, path=ds.manifest_file.key).tolist():
            cover.setdefault(fid, set()).add(bytes(im.uuid.uuid))
    return {k: frozenset(v) for k, v in cover.items()}


def _compaction_groups(ds, target_rows_per_fragment: int) -> list[list]:
    """Runs of adjacent candidate fragments (fewer rows than the target, or with
    deletions) that the same indexes cover; a run of one fragment without deletions is
    left alone. pylance 14.0.2 plans the same way: fragments under an index are never
    merged with fragments outside it."""
    coverage = _index_coverage(ds)
    runs, cur, key = [], [], None
    for f in ds.manifest.fragments:
        candidate = f.physical_rows < target_rows_per_fragment or f.HasField("deletion_file")
        k = coverage.get(f.id, frozenset())
        if cur and (not candidate or k != key):
            runs.append(cur)
            cur = []
        if candidate:
            cur.append(f)
            key = k
    if cur:
        runs.append(cur)
    return [r for r in runs if len(r) >= 2 or r[0].HasField("deletion_file")]


def compact_files(ds, target_rows_per_fragment: int = 1024 * 1024, *, commit_message: str | None = None):
    """Rewrite small fragments (fewer rows than the target) and fragments with deletions:
    each run of adjacent such fragments covered by the same indexes
    (:func:`_compaction_groups`) becomes as few fragments as the target allows.
    ReserveFragments (107) for the new ids, then one Rewrite (104) with a group per run.
    Under stable row ids the row ids and the created-at / last-updated-at version
    sequences move with their rows (as pylance 14.0.2 keeps them).

    Indexes: like pylance's ``compact_files(defer_index_remap=True)`` (not its default,
    which rewrites every index's files under a new uuid), the index files are left alone.
    Each index keeps its fragment bitmap, still naming the old fragments, and the
    ``__lance_frag_reuse`` index gains a version whose groups map the surviving old row
    addresses to the new fragments (:func:`.table.fragment_reuse.defer_index_remap`,
    ``dataset_version`` = the version the Rewrite is built on). pylance keeps planning with
    such an index. A dataset without indexes gets no fragment reuse index.

    The Rewrite's ``read_version`` is the version ``ds`` is at, where the fragments were
    chosen (pylance 14.0.2 does the same): a delete or update of those fragments committed
    meanwhile makes the Rewrite a retryable CommitConflict instead of being undone."""
    from .table import operations
    from .table.fragment_reuse import defer_index_remap, reuse_group

    _check_writable(ds)
    runs = _compaction_groups(ds, target_rows_per_fragment)
    if not runs:
        return ds
    t = scan.with_blob_bytes(ds, ds.to_table(with_row_address=True, with_row_id=_stable(ds)))
    frag_of, _ = _split_addresses(t["_rowaddr"].to_numpy())
    planned = []  # (old fragments, new fragments, surviving old row addresses)
    for old in runs:
        rows = t.filter(pa.array(np.isin(frag_of, [f.id for f in old])))
        data = rows.select(ds.schema.names)
        new = write_fragments(ds.store, data, list(ds.manifest.fields), file_version=_file_version(ds),
                              max_rows_per_file=target_rows_per_fragment) if data.num_rows else []
        if _stable(ds):  # ids and both version sequences move with the rows
            rfrag, roff = _split_addresses(rows["_rowaddr"].to_numpy())
            meta = _row_versions(ds, rfrag, roff) or (None, None)
            _carry_row_meta(new, rows["_rowid"].to_numpy(), *meta)
        planned.append((old, new, rows["_rowaddr"].to_numpy()))
    total = sum(len(new) for _, new, _ in planned)
    reserved = _commit(ds, operations.reserve_fragments(ds.version, total))
    next_id = reserved.manifest.max_fragment_id - total + 1
    for _, new, _ in planned:
        for f in new:
            f.id = next_id
            next_id += 1
    # the Rewrite reads the version its fragments were chosen at (as pylance's does), so a
    # delete or update committed since then on the same fragments is a conflict, not undone
    txn = operations.rewrite(ds.version, [(old, new) for old, new, _ in planned],
                             commit_message=commit_message)
    reuse = [reuse_group(old, new, addrs) for old, new, addrs in planned if new]

    def remap(indices, version):
        # no index, nothing to translate (pylance then adds no fragment reuse index either)
        if not indices or not reuse:
            return indices
        return defer_index_remap(indices, reuse, version - 1)

    return _commit(reserved, txn, remap_indices=remap)


# -- restore, config ----------------------------------------------------------------------
def restore(ds, version: int | None = None, *, commit_message: str | None = None):
    """Make ``version`` (default: the one ``ds`` is at) the latest again. Restore (106)."""
    from .table import operations
    from .table.commit import latest_version_or_zero

    target = ds.version if version is None else version
    latest = latest_version_or_zero(ds.store)
    _reopen(ds, target)  # NotFound when it does not exist
    return _commit(_reopen(ds, latest), operations.restore(latest, target, commit_message=commit_message))


def _latest(ds):
    from .table.commit import latest_version_or_zero

    v = latest_version_or_zero(ds.store)
    return ds if v == ds.version else _reopen(ds, v)


def update_config(ds, values: dict, *, commit_message: str | None = None):
    """Upsert (value) or delete (None) keys of ``Manifest.config``. UpdateConfig (110)."""
    from .table import operations

    ds = _latest(ds)
    _check_writable(ds)
    return _commit(ds, operations.update_config(ds.version, config=values, commit_message=commit_message))


def update_metadata(ds, values: dict, *, replace: bool = False, commit_message: str | None = None):
    """Edit ``Manifest.table_metadata``. UpdateConfig (110)."""
    from .table import operations

    ds = _latest(ds)
    _check_writable(ds)
    return _commit(ds, operations.update_config(ds.version, table_metadata=values, replace=replace,
                                                commit_message=commit_message))


def update_schema_metadata(ds, values: dict, *, replace: bool = False, commit_message: str | None = None):
    """Edit ``Manifest.schema_metadata``. UpdateConfig (110)."""
    from .table import operations

    ds = _latest(ds)
    _check_writable(ds)
    return _commit(ds, operations.update_config(ds.version, schema_metadata=values, replace=replace,
                                                commit_message=commit_message))


# -- tags ---------------------------------------------------------------------------------
def _manifest_size(store, version: int) -> int:
    from .table.versions import manifest_key_for

    return store.size(manifest_key_for(store, version))


def create_tag(ds, name: str, version: int | None = None):
    """``_refs/tags/{name}.json`` for ``version`` (default latest), create-if-absent."""
    from .table import layout, refs
    from .table.commit import latest_version_or_zero

    layout.validate_tag_name(name)
    v = latest_version_or_zero(ds.store) if version is None else int(version)
    size = _manifest_size(ds.store, v)
    now = time.time_ns()
    data = refs.tag_json(version=v, manifest_size=size, branch=ds.branch, created_at=now, updated_at=now)
    try:
        ds.root_store.put_if_not_exists(layout.tag_key(name), data)
    except AlreadyExists:
        raise AlreadyExists(f"Ref conflict error: tag {name} already exists", path=layout.tag_key(name)) from None


def update_tag(ds, name: str, version: int):
    from .table import layout, refs

    key = layout.tag_key(name)
    old = refs.resolve_tag(ds.root_store, name)
    created = getattr(old, "created_at", None)
    data = refs.tag_json(version=int(version), manifest_size=_manifest_size(ds.store, int(version)),
                         branch=ds.branch, created_at=created, updated_at=time.time_ns(),
                         metadata=getattr(old, "metadata", None))
    ds.root_store.put(key, data)


def delete_tag(ds, name: str):
    from .table import layout

    key = layout.tag_key(name)
    if not ds.root_store.exists(key):
        raise NotFound(f"Ref not found error: tag {name} does not exist", path=key)
    ds.root_store.delete(key)


# -- clones and branches ------------------------------------------------------------------
def _clone_manifest(src_manifest, src_indices, version: int, src_path: str,
                    branch_name: str | None, source_branch: str | None):
    """The first manifest of a shallow clone: the source's, with the source root added to
    ``base_paths`` and every inherited file given an explicit ``base_id``."""
    m = table_pb2.Manifest()
    m.CopyFrom(src_manifest)
    m.ClearField("transaction_section")
    m.ClearField("transaction_section_spec")
    m.ClearField("index_section")
    new_id = max((b.id for b in m.base_paths), default=-1) + 1
    bp = m.base_paths.add(id=new_id, is_dataset_root=True, path=src_path)
    if source_branch:
        bp.name = source_branch
    for frag in m.fragments:
        for df in frag.files:
            if not df.HasField("base_id"):
                df.base_id = new_id
        if frag.HasField("deletion_file") and not frag.deletion_file.HasField("base_id"):
            frag.deletion_file.base_id = new_id
    indices = []
    for idx in src_indices:
        i = type(idx)()
        i.CopyFrom(idx)
        if not i.HasField("base_id"):
            i.base_id = new_id
        indices.append(i)
    if branch_name:
        m.branch = branch_name
    else:
        m.ClearField("branch")
    m.reader_feature_flags |= 16
    m.writer_feature_flags |= 16
    m.version = version
    ts = time.time_ns()
    m.timestamp.seconds, m.timestamp.nanos = divmod(ts, 1_000_000_000)
    return m, indices


def _local_path(store) -> str:
    uri = store.uri
    return uri[len("file://"):] if uri.startswith("file://") else uri


def shallow_clone(ds, target: str, ref=None, *, storage_options=None, commit_message: str | None = None):
    """A new dataset at ``target`` whose first version (numbered as the source version)
    references the source's files through ``base_paths``. ``ref``: int, tag name or None."""
    from .io.uri import open_store
    from .table import operations

    src = ds if ref is None else _reopen(ds, ref) if isinstance(ref, int) else _by_tag(ds, ref)
    dst = open_store(target, storage_options)
    from .table.commit import latest_version_or_zero
    if latest_version_or_zero(dst) > 0:
        raise AlreadyExists(f"Clone operation should not enter build_manifest: {target} exists")
    v = src.version
    src_path = _local_path(src.store)
    txn = operations.clone(v, ref_path=src_path, ref_version=v, ref_name=src.branch,
                           commit_message=commit_message)
    prepared = lambda version: _clone_manifest(src.manifest, src.list_indices(), v, src_path, None, src.branch)  # noqa: E731
    commit_at(dst, txn, v, prepared)
    return open_dataset(target, version=v, storage_options=storage_options)


def commit_at(store, txn, version: int, prepared) -> None:
    """Commit a Clone's first manifest under ``version`` (not latest+1)."""
    from .table import layout
    from .table.manifest import encode_manifest_file

    txn_bytes = txn.SerializeToString()
    name = layout.transaction_file_name(txn.read_version, txn.uuid)
    store.put(f"{layout.TRANSACTIONS_DIR}/{name}", txn_bytes)
    manifest, indices = prepared(version)
    manifest.transaction_file = name
    index_section = table_pb2.IndexSection(indices=indices) if indices else None
    data = encode_manifest_file(manifest, transaction=txn_bytes, index_section=index_section)
    try:
        store.put_if_not_exists(layout.manifest_key(version, layout.SCHEME_V2), data)
    except AlreadyExists:
        raise AlreadyExists("Clone operation should not enter build_manifest: version exists") from None
    if store.uri.startswith("file://"):
        from .table.commit import write_version_hint
        write_version_hint(store, version)


def _by_tag(ds, name: str):
    from .table import refs

    tag = refs.resolve_tag(ds.root_store, name)
    return open_dataset(ds.uri if not ds.branch else _local_path(ds.root_store), version=tag.version,
                        branch=tag.branch, storage_options=ds.storage_options)


def create_branch(ds, name: str, ref=None, *, commit_message: str | None = None):
    """Branch ``name`` from ``ref`` (default: the version ``ds`` is at): a Clone commit into
    ``tree/{name}`` numbered as the parent version, then ``_refs/branches/{name}.json``."""
    from .table import layout, operations, refs

    layout.validate_branch_name(name)
    src = ds if ref is None else _reopen(ds, ref)
    root = ds.root_store
    bstore = root.child(layout.branch_prefix(name))
    v = src.version
    root_path = _local_path(root)
    txn = operations.clone(v, ref_path=_local_path(src.store), ref_version=v, ref_name=src.branch,
                           branch_name=name, commit_message=commit_message)

    # files the source holds without base_id live in its own directory: the main root,
    # or tree/{parent branch} (added under the parent branch's name)
    src_dir = root_path if not src.branch else f"{root_path}/{layout.branch_prefix(src.branch)}"

    def prepared(version):
        return _clone_manifest(src.manifest, src.list_indices(), v, src_dir, name, src.branch)

    commit_at(bstore, txn, v, prepared)
    parent_mapping = []
    if src.branch:
        parent_mapping = list(refs.get_branch(root, src.branch).identifier or [])
    identifier = parent_mapping + [[v, uuid_mod.uuid4().hex]]
    data = refs.branch_json(parent_version=v, manifest_size=_manifest_size(src.store, v),
                            create_at=int(time.time()), parent_branch=src.branch, identifier=identifier)
    root.put_if_not_exists(layout.branch_key(name), data)
    return open_dataset(_local_path(root) if root.uri.startswith("file://") else root.uri,
                        branch=name, storage_options=ds.storage_options)


register_operations(delete, update, merge_insert, add_columns, merge, drop_columns, alter_columns,
                    compact_files, restore, update_config, update_metadata,
                    update_schema_metadata, create_tag, update_tag, delete_tag,
                    create_branch, shallow_clone)
