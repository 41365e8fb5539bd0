"""Operations as transactions, and the rules that turn (previous manifest, transaction)
into the next manifest.

A commit never edits a manifest in place: it records *what it did* as a
``lance.table.Transaction`` (spec 001, "Conflict resolution": the transaction file is
used "to detect conflicts, and to re-build the manifest during retries") and builds the
new manifest from the newest committed manifest plus that transaction. Because fragment
ids and row ids are handed out here, a transaction rebased over concurrent commits gets
fresh ids simply by being applied again.

Manifest-building rules, per operation (``Transaction`` oneof field numbers in brackets):

=================  ==========================================================================
append (100)       new fragments get ids ``max_fragment_id+1 ..``; schema unchanged
delete (101)       ``updated_fragments`` replace the fragments with their id;
                   ``deleted_fragment_ids`` are dropped
overwrite (102)    fragments, schema and schema metadata replaced; config upserted; indices
                   dropped; fragment ids and row ids keep counting from the previous version
create_index (103) indices added / removed in the index section
rewrite (104)      each group's old fragments are replaced by its new fragments (new ids, or
                   ids reserved earlier); the list stays sorted by id, as pylance 14.0.2
                   validates; row ids move with the rows
merge (105)        the fragment list and schema are replaced by the transaction's
restore (106)      the content of the restored version, under the new version number
reserve (107)      ``max_fragment_id`` grows by ``num_fragments``
update (108)       removed ids dropped, updated fragments replaced, new fragments appended
project (109)      schema replaced (dropped fields disappear, renamed ones keep their id);
                   data files left with no field of the schema are dropped from fragments
update_config(110) config / table metadata / schema metadata / field metadata edited
=================  ==========================================================================

Move-stable row ids (spec 001, "Move-Stable Row IDs"): ``next_row_id`` starts at 0; a
fragment without ``inline_row_ids`` gets the range ``[next_row_id, next_row_id+rows)``
and ``next_row_id`` advances; its created-at and last-updated-at version sequences are one
run of the committing version. Fragments that already carry row ids (rows moved by a
rewrite) keep them. Updated rows come back as new fragments without ids, so they get new
ids, as the spec says ("typically assigned a new row id"); pylance 14.0.2 instead keeps
the old row id of an updated row (observed). Both read back consistently.

``max_fragment_id`` is written only when the dataset has (or had) fragments; feature flags
are recomputed from content (deletion files -> 1, stable row ids -> 2, config -> writer 8,
base paths -> 16), carrying bits of the previous manifest that we do not derive.
"""

from __future__ import annotations

import time
import uuid as uuid_mod
from collections.abc import Callable, Iterable

from ..errors import InvalidInput, UnsupportedFeature
from ..proto import rowids_pb2, table_pb2, transaction_pb2

COMMIT_MESSAGE_KEY = "__lance_commit_message"
WRITER_LIBRARY = "lance-conformance"
WRITER_VERSION = "0.1.0"

FLAG_DELETION_FILES = 1
FLAG_STABLE_ROW_IDS = 2
FLAG_USE_V2_MANIFEST_PATHS = 4   # never written by pylance 14; kept when present
FLAG_TABLE_CONFIG = 8
FLAG_BASE_PATHS = 16
KNOWN_WRITER_FLAGS = 1 | 2 | 4 | 8 | 16 | 32


# -- building transactions ------------------------------------------------------------
def new_transaction(read_version: int, *, commit_message: str | None = None,
                    properties: dict[str, str] | None = None) -> transaction_pb2.Transaction:
    """An empty Transaction with a fresh uuid (hyphenated, as pylance writes it)."""
    txn = transaction_pb2.Transaction(read_version=read_version, uuid=str(uuid_mod.uuid4()))
    for k, v in (properties or {}).items():
        txn.transaction_properties[k] = v
    if commit_message is not None:
        txn.transaction_properties[COMMIT_MESSAGE_KEY] = commit_message
    return txn


def append(read_version: int, fragments: Iterable, **kw) -> transaction_pb2.Transaction:
    txn = new_transaction(read_version, **kw)
    txn.append.fragments.extend(fragments)
    return txn


def overwrite(read_version: int, fragments: Iterable, fields: Iterable, *,
              schema_metadata: dict[str, bytes] | None = None,
              config_upsert: dict[str, str] | None = None, **kw) -> transaction_pb2.Transaction:
    txn = new_transaction(read_version, **kw)
    op = txn.overwrite
    op.fragments.extend(fragments)
    op.schema.extend(fields)
    for k, v in (schema_metadata or {}).items():
        op.schema_metadata[k] = v
    for k, v in (config_upsert or {}).items():
        op.config_upsert_values[k] = v
    return txn


def delete(read_version: int, updated: Iterable, deleted_ids: Iterable[int], predicate: str, **kw):
    txn = new_transaction(read_version, **kw)
    txn.delete.updated_fragments.extend(updated)
    txn.delete.deleted_fragment_ids.extend(deleted_ids)
    txn.delete.predicate = predicate
    return txn


def update(read_version: int, *, removed_ids=(), updated=(), new=(), fields_modified=(), **kw):
    txn = new_transaction(read_version, **kw)
    op = txn.update
    op.removed_fragment_ids.extend(removed_ids)
    op.updated_fragments.extend(updated)
    op.new_fragments.extend(new)
    op.fields_modified.extend(fields_modified)
    return txn


def merge(read_version: int, fragments: Iterable, fields: Iterable, schema_metadata=None, **kw):
    txn = new_transaction(read_version, **kw)
    txn.merge.fragments.extend(fragments)
    txn.merge.schema.extend(fields)
    for k, v in (schema_metadata or {}).items():
        txn.merge.schema_metadata[k] = v
    return txn


def project(read_version: int, fields: Iterable, **kw):
    txn = new_transaction(read_version, **kw)
    txn.project.schema.extend(fields)
    return txn


def rewrite(read_version: int, groups: Iterable[tuple[list, list]], **kw):
    txn = new_transaction(read_version, **kw)
    for old, new in groups:
        g = txn.rewrite.groups.add()
        g.old_fragments.extend(old)
        g.new_fragments.extend(new)
    return txn


def restore(read_version: int, version: int, **kw):
    txn = new_transaction(read_version, **kw)
    txn.restore.version = version
    return txn


def reserve_fragments(read_version: int, num_fragments: int, **kw):
    txn = new_transaction(read_version, **kw)
    txn.reserve_fragments.num_fragments = num_fragments
    return txn


def update_config(read_version: int, *, config: dict[str, str | None] | None = None,
                  table_metadata: dict[str, str | None] | None = None,
                  schema_metadata: dict[str, str | None] | None = None,
                  replace: bool = False, **kw):
    """UpdateConfig with UpdateMaps; a value of None deletes the key."""
    txn = new_transaction(read_version, **kw)
    op = txn.update_config
    for umap, values in ((op.config_updates, config), (op.table_metadata_updates, table_metadata),
                         (op.schema_metadata_updates, schema_metadata)):
        if values is None:
            continue
        umap.replace = replace
        for k, v in values.items():
            entry = umap.update_entries.add(key=k)
            if v is not None:
                entry.value = v
    return txn


def clone(read_version: int, *, ref_path: str, ref_version: int, ref_name: str | None = None,
          branch_name: str | None = None, is_shallow: bool = True, **kw):
    txn = new_transaction(read_version, **kw)
    op = txn.clone
    op.is_shallow = is_shallow
    op.ref_version = ref_version
    op.ref_path = ref_path
    if ref_name is not None:
        op.ref_name = ref_name
    if branch_name is not None:
        op.branch_name = branch_name
    return txn


# -- applying transactions ---------------------------------------------------------------
def _next_fragment_id(manifest: table_pb2.Manifest) -> int:
    if manifest.HasField("max_fragment_id"):
        return manifest.max_fragment_id + 1
    return max((f.id for f in manifest.fragments), default=-1) + 1


def _range_sequence(start: int, end: int) -> bytes:
    seq = rowids_pb2.RowIdSequence()
    seg = seq.segments.add()
    seg.range.start = start
    seg.range.end = end
    return seq.SerializeToString()


def _version_sequence(rows: int, version: int) -> bytes:
    seq = rowids_pb2.RowDatasetVersionSequence()
    run = seq.runs.add()
    run.span.range.start = 0
    run.span.range.end = rows
    run.version = version
    return seq.SerializeToString()


class _Builder:
    """Mutable state while one transaction is applied to one manifest."""

    def __init__(self, manifest: table_pb2.Manifest, version: int, stable_row_ids: bool) -> None:
        self.m = manifest
        self.version = version
        self.stable = stable_row_ids
        self.next_id = _next_fragment_id(manifest)

    def add(self, frag: table_pb2.DataFragment, *, keep_id: bool = False) -> table_pb2.DataFragment:
        frag = table_pb2.DataFragment.FromString(frag.SerializeToString())
        if not keep_id:
            frag.id = self.next_id
            self.next_id += 1
        else:
            self.next_id = max(self.next_id, frag.id + 1)
        if self.stable:
            if not frag.HasField("inline_row_ids") and not frag.HasField("external_row_ids"):
                start = self.m.next_row_id
                frag.inline_row_ids = _range_sequence(start, start + frag.physical_rows)
                self.m.next_row_id = start + frag.physical_rows
            if not frag.HasField("inline_created_at_versions") and not frag.HasField("external_created_at_versions"):
                frag.inline_created_at_versions = _version_sequence(frag.physical_rows, self.version)
            if not frag.HasField("inline_last_updated_at_versions") and not frag.HasField("external_last_updated_at_versions"):
                frag.inline_last_updated_at_versions = _version_sequence(frag.physical_rows, self.version)
        return frag


def _replace_by_id(fragments, replacements) -> list:
    by_id = {f.id: f for f in replacements}
    return [by_id.pop(f.id, f) for f in fragments]


def _apply_update_map(target, umap) -> None:
    if umap.replace:
        target.clear()
    for entry in umap.update_entries:
        if entry.HasField("value"):
            target[entry.key] = entry.value
        else:
            target.pop(entry.key, None)


def build_manifest(
    previous: table_pb2.Manifest | None,
    txn: transaction_pb2.Transaction,
    version: int,
    *,
    indices: list | None = None,
    load_version: Callable[[int], tuple[table_pb2.Manifest, list]] | None = None,
    stable_row_ids: bool | None = None,
    data_format: tuple[str, str] = ("lance", "2.2"),
    transaction_file: str = "",
    remap_indices: Callable[[list, int], list] | None = None,
) -> tuple[table_pb2.Manifest, list]:
    """Apply ``txn`` to ``previous`` (None for a new dataset) as version ``version``.

    Returns the new manifest and its index metadata list. ``load_version`` loads an older
    (manifest, indices) pair; only Restore needs it. ``remap_indices(indices, version)``,
    for a Rewrite only, gives the new index list in place of pruning the rewritten fragments
    from each index's bitmap (compaction with deferred index remap: the indexes keep
    naming the old fragments and the fragment reuse index translates). The caller's
    ``IndexMetadata`` messages are never changed in place. Raises InvalidInput for an
    operation that cannot apply and UnsupportedFeature for one this writer does not build.
    """
    op = txn.WhichOneof("operation")
    m = table_pb2.Manifest()
    if previous is not None:
        m.CopyFrom(previous)
        m.ClearField("transaction_section")
        m.ClearField("transaction_section_spec")
        m.ClearField("index_section")
    else:
        m.data_format.file_format, m.data_format.version = data_format
        if op not in ("overwrite", "clone"):
            raise InvalidInput(f"a new dataset must start with an Overwrite, not {op}")
    indices = list(indices or [])
    if stable_row_ids is None:
        stable_row_ids = bool(m.reader_feature_flags & FLAG_STABLE_ROW_IDS)
    b = _Builder(m, version, stable_row_ids)
    body = getattr(txn, op) if op else None

    if op == "append":
        m.fragments.extend(b.add(f) for f in body.fragments)
    elif op == "overwrite":
        new = [b.add(f) for f in body.fragments]
        del m.fragments[:]
        m.fragments.extend(new)
        del m.fields[:]
        m.fields.extend(body.schema)
        m.schema_metadata.clear()
        m.schema_metadata.update(body.schema_metadata)
        m.config.update(body.config_upsert_values)
        m.data_format.file_format, m.data_format.version = data_format
        if body.initial_bases:
            m.base_paths.extend(body.initial_bases)
        indices = []
    elif op == "delete":
        gone = set(body.deleted_fragment_ids)
        kept = [f for f in _replace_by_id(m.fragments, body.updated_fragments) if f.id not in gone]
        del m.fragments[:]
        m.fragments.extend(kept)
    elif op == "update":
        gone = set(body.removed_fragment_ids)
        kept = [f for f in _replace_by_id(m.fragments, body.updated_fragments) if f.id not in gone]
        kept += [b.add(f) for f in body.new_fragments]
        del m.fragments[:]
        m.fragments.extend(kept)
    elif op == "rewrite":
        groups = [(list(g.old_fragments), list(g.new_fragments)) for g in body.groups]
        if body.old_fragments or body.new_fragments:
            groups.append((list(body.old_fragments), list(body.new_fragments)))
        out = list(m.fragments)
        reserved_top = previous.max_fragment_id if previous is not None and previous.HasField("max_fragment_id") else -1
        live_ids = {f.id for f in out}

        def place(f):  # ids reserved by an earlier ReserveFragments are kept
            keep = 0 < f.id <= reserved_top and f.id not in live_ids
            return b.add(f, keep_id=keep)

        for old, new in groups:
            old_ids = {f.id for f in old}
            present = [i for i, f in enumerate(out) if f.id in old_ids]
            if len(present) != len(old_ids):
                raise InvalidInput(f"rewrite of fragments {sorted(old_ids)} that are not all present")
            at = present[0]
            out = [f for f in out if f.id not in old_ids]
            out[at:at] = [place(f) for f in new]
        out.sort(key=lambda f: f.id)  # pylance validates increasing fragment ids
        del m.fragments[:]
        m.fragments.extend(out)
    elif op == "merge":
        del m.fragments[:]
        m.fragments.extend(b.add(f, keep_id=True) for f in body.fragments)
        del m.fields[:]
        m.fields.extend(body.schema)
        if body.schema_metadata:
            m.schema_metadata.clear()
            m.schema_metadata.update(body.schema_metadata)
    elif op == "project":
        keep = {f.id for f in body.schema}
        del m.fields[:]
        m.fields.extend(body.schema)
        for frag in m.fragments:  # a data file left with no field of the schema goes
            files = [df for df in frag.files if any(fid in keep for fid in df.fields)]
            if len(files) != len(frag.files):
                del frag.files[:]
                frag.files.extend(files)
        indices = [i for i in indices if all(fid in keep for fid in i.fields)]
    elif op == "restore":
        if load_version is None:
            raise InvalidInput("restore needs access to the older version")
        old, old_indices = load_version(body.version)
        m.CopyFrom(old)
        m.ClearField("transaction_section")
        m.ClearField("transaction_section_spec")
        m.ClearField("index_section")
        # ids already handed out must never be reused
        if previous is not None:
            top = max(_next_fragment_id(previous), _next_fragment_id(m)) - 1
            if top >= 0:
                m.max_fragment_id = top
            m.next_row_id = max(m.next_row_id, previous.next_row_id)
        indices = list(old_indices)
    elif op == "reserve_fragments":
        b.next_id += body.num_fragments
    elif op == "update_config":
        for k, v in body.upsert_values.items():
            m.config[k] = v
        for k in body.delete_keys:
            m.config.pop(k, None)
        for k, v in body.schema_metadata.items():
            m.schema_metadata[k] = v.encode()
        _apply_update_map(m.config, body.config_updates)
        _apply_update_map(m.table_metadata, body.table_metadata_updates)
        if body.HasField("schema_metadata_updates"):
            as_str = {k: v.decode("utf-8", "replace") for k, v in m.schema_metadata.items()}
            _apply_update_map(as_str, body.schema_metadata_updates)
            m.schema_metadata.clear()
            m.schema_metadata.update({k: v.encode() for k, v in as_str.items()})
    elif op == "create_index":
        removed = {bytes(i.uuid.uuid) for i in body.removed_indices}
        indices = [i for i in indices if bytes(i.uuid.uuid) not in removed] + list(body.new_indices)
    elif op == "clone":
        pass  # the clone's manifest is prepared by the caller from the source manifest
    else:
        raise UnsupportedFeature(f"this writer cannot build a manifest for operation {op!r}",
                                 rule=None)

    if op == "rewrite" and remap_indices is not None:
        indices = list(remap_indices(indices, version))
    elif op in ("delete", "update", "rewrite", "overwrite", "merge"):
        live = {f.id for f in m.fragments}
        # drop fragments that are gone from each index's coverage
        indices = [_prune_bitmap(idx, live) for idx in indices]

    m.version = version
    ts_ns = time.time_ns()
    m.timestamp.seconds, m.timestamp.nanos = divmod(ts_ns, 1_000_000_000)
    m.writer_version.library = WRITER_LIBRARY
    m.writer_version.version = WRITER_VERSION
    m.transaction_file = transaction_file
    if b.next_id > 0 and (m.fragments or m.HasField("max_fragment_id") or op == "reserve_fragments"):
        m.max_fragment_id = b.next_id - 1
    _set_flags(m, previous, stable_row_ids)
    return m, indices


def _prune_bitmap(idx, live: set[int]):
    """``idx`` when its fragment bitmap names only live fragments (or cannot be read), else
    a copy whose bitmap keeps only the live ones; ``idx`` itself is never changed."""
    if not idx.fragment_bitmap:
        return idx
    try:
        from pyroaring import BitMap
        bm = BitMap.deserialize(bytes(idx.fragment_bitmap))
    except Exception:  # leave a bitmap we cannot read untouched
        return idx
    pruned = BitMap(i for i in bm if i in live)
    if pruned == bm:
        return idx
    out = type(idx)()
    out.CopyFrom(idx)
    out.fragment_bitmap = pruned.serialize()
    return out


def _set_flags(m: table_pb2.Manifest, previous, stable_row_ids: bool) -> None:
    try:
        from .flags import expected_flags  # the flags engineer's rules, when present
    except ImportError:
        expected_flags = None
    if expected_flags is not None:
        try:
            reader, writer = expected_flags(m)
            m.reader_feature_flags, m.writer_feature_flags = reader, writer
            if stable_row_ids:
                m.reader_feature_flags |= FLAG_STABLE_ROW_IDS
                m.writer_feature_flags |= FLAG_STABLE_ROW_IDS
            return
        except Exception:  # fall back to our own derivation
            pass
    reader = writer = 0
    if any(f.HasField("deletion_file") for f in m.fragments):
        reader |= FLAG_DELETION_FILES
        writer |= FLAG_DELETION_FILES
    if stable_row_ids:
        reader |= FLAG_STABLE_ROW_IDS
        writer |= FLAG_STABLE_ROW_IDS
    if m.config:
        writer |= FLAG_TABLE_CONFIG
    if m.base_paths:
        reader |= FLAG_BASE_PATHS
        writer |= FLAG_BASE_PATHS
    if previous is not None:
        writer |= previous.writer_feature_flags & FLAG_USE_V2_MANIFEST_PATHS
        reader |= previous.reader_feature_flags & FLAG_USE_V2_MANIFEST_PATHS
    m.reader_feature_flags, m.writer_feature_flags = reader, writer


def check_writer_flags(manifest: table_pb2.Manifest, path: str | None = None) -> None:
    """Spec 001, "Feature Flags": a writer seeing an unknown writer flag must refuse."""
    unknown = manifest.writer_feature_flags & ~KNOWN_WRITER_FLAGS
    if unknown:
        raise UnsupportedFeature(
            f"writer feature flags {manifest.writer_feature_flags:#x} include unknown bits "
            f"{unknown:#x}; refusing to write", rule="FLAGS-002", path=path)
