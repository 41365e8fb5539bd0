"""BLOB-*: blob v2 columns of 2.2+ datasets (FILE-ENCODINGS §3.5 "Blob layouts").

A blob v2 column (manifest field with extension ``lance.blob.v2``) stores one descriptor per
row in the data file -- ``kind u8, position u64, size u64, blob_id u32, blob_uri utf8`` -- and
the bytes inline in the data file (kind 0), in sidecar ``.blob`` files beside it (1 packed,
2 dedicated) or in an external object (3). :mod:`reference_impl.table.blob` restates the
layout; these deep, per-data-file checks decode the descriptor column once (through the
data file's cached reader) and follow every descriptor to its bytes without reading them:
sizes come from the object store. A blob v2 field nested in a struct or a list (pylance
14.0.2 writes both) is followed too, named by its path (``info.blob``, ``l.item``); under a
list each descriptor is an item and its ``row`` the item's index.

The facts sheet explored kind 0 only (its open question 1); kinds 1-3, the sidecar naming,
the base-relative external form and the null/empty conventions were established by probing
pylance 14.0.2 and are recorded in each rule's ``pylance`` note.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from reference_impl.errors import LanceError, NotFound
from reference_impl.table import blob

from .file import _from_decode, _loc, container_of, reader_of
from .registry import Finding, rule

_SPEC = "FILE-ENCODINGS"
_SEC = "3.5 Blob layouts"
_CLAUSE_V2 = ("2.2 (blob v2): a full_zip_layout with bits_per_offset 32 and variable_packed_struct"
              "{kind: flat 8, position: flat 64, size: flat 64, blob_id: flat 32, blob_uri: variable}")


def _blob_fields(ctx) -> list:
    """The manifest's blob v2 fields this data file holds, top-level or nested in a struct
    or a list (pylance 14.0.2 writes both), each named by its path (``info.blob``)."""
    held = set(ctx.data_file.fields)
    fields = list(ctx.version.manifest.fields)
    by_id = {f.id: f for f in fields}
    out = []
    for f in fields:
        if f.id not in held or not blob.is_blob_v2(f):
            continue
        chain = [f]
        while chain[0].parent_id != -1 and chain[0].parent_id in by_id:
            chain.insert(0, by_id[chain[0].parent_id])
        if chain[0].parent_id != -1:
            continue  # an orphan is the SCHEMA rules'
        out.append(_Held(".".join(c.name for c in chain), f.id, [c.id for c in chain]))
    return out


@dataclass(frozen=True)
class _Held:
    """A blob v2 field a data file holds: its path of names, its id, the ids from the
    top-level field down to it."""

    name: str
    id: int
    chain: list


def _descend(arr, ftype, chain):
    """The descriptors below the top-level column ``arr`` (of the file's type ``ftype``, whose
    nested fields carry their ids) along the field ids ``chain`` (its first is the top-level
    field): a struct's child (a null parent row makes a null descriptor) or a list's items
    (flattened: each descriptor is then an item, not a row). None when the file's type has
    no such child."""
    import pyarrow as pa
    import pyarrow.compute as pc

    for fid in chain[1:]:
        if isinstance(arr, pa.ChunkedArray):
            arr = arr.combine_chunks()
        if pa.types.is_list(ftype) or pa.types.is_large_list(ftype):
            if _field_id(ftype.value_field) != fid:
                return None
            arr, ftype = arr.flatten(), ftype.value_type
        elif pa.types.is_struct(ftype):
            j = next((i for i, c in enumerate(ftype) if _field_id(c) == fid), None)
            if j is None:
                return None
            arr, ftype = pc.struct_field(arr, [j]), ftype.field(j).type
        else:
            return None
    return arr.combine_chunks() if isinstance(arr, pa.ChunkedArray) else arr


def _field_id(f) -> int | None:
    raw = (f.metadata or {}).get(b"lance:field_id")
    return int(raw) if raw is not None else None


def _descriptor_columns(ctx):
    """``[(field, descriptor struct array | None, error message | None)]``, cached; a field
    nested in a list has one descriptor per item."""
    if "blob_descriptors" in ctx.cache:
        return ctx.cache["blob_descriptors"]
    out = []
    fields = _blob_fields(ctx)
    if fields:
        reader, err = reader_of(ctx)
        for f in fields:
            if reader is None:
                out.append((f, None, None))  # the reader's own error is BLOB-001/ENC-046's
                continue
            try:
                (pos,) = reader._select([f.id])
                top = reader.read_fields([pos]).column(0)
                arr = _descend(top, reader.schema.field(pos).type, f.chain)
            except (LanceError, KeyError, ValueError, TypeError) as exc:
                out.append((f, None, f"blob v2 field {f.name!r} cannot be decoded: {exc}"))
                continue
            if arr is None:
                out.append((f, None, f"blob v2 field {f.name!r} is not where the manifest puts "
                                     "it in the data file's schema"))
                continue
            if arr.type != blob.DESCRIPTOR_TYPE:
                out.append((f, None, f"blob v2 field {f.name!r} is stored as {arr.type}, not as "
                                     f"blob descriptors {blob.DESCRIPTOR_TYPE}"))
                continue
            out.append((f, arr, None))
    ctx.cache["blob_descriptors"] = out
    return out


def _columns(arr):
    """numpy views of a descriptor array's non-null rows: (row, kind, position, size, id,
    uri length)."""
    import pyarrow.compute as pc

    valid = np.ones(len(arr), bool) if arr.null_count == 0 else \
        np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), bool)
    rows = np.nonzero(valid)[0]
    kind, pos, size, bid = (arr.field(i).to_numpy(zero_copy_only=False)[rows].astype(np.uint64)
                            for i in range(4))
    uri_len = pc.binary_length(arr.field(4)).fill_null(0).to_numpy(zero_copy_only=False)[rows]
    return rows, kind, pos, size, bid, uri_len


def _row_loc(ctx, f, row):
    loc = _loc(ctx)
    loc.update(field=f.name, row=int(row))
    return loc


@rule("BLOB-001", title="a blob v2 column is stored as one descriptor struct per row", severity="error",
      spec=_SPEC, section=_SEC, clause=_CLAUSE_V2,
      pylance="pylance 14.0.2 writes the descriptor's five fields into the data file's schema with "
              "field id -1 and parent -1, right after the childless blob struct; spec 004 wants "
              "non-negative ids and children that name their parent (SCHEMA-008). pylance's own file "
              "reader cannot read such a file back",
      enforces="pylance", scope="data_file", deep=True,
      refusal="a reader finds blob v2 bytes only through descriptor structs of this form; pylance 14.0.2 take_blobs fails on any other")
def stored_as_descriptors(ctx):
    """The file form of pylance (and only there: id -1 anywhere else is refused), a 2.2+ data
    file, and a column that decodes to the descriptor struct."""
    yield from _from_decode(ctx, "BLOB-001")
    fields = _blob_fields(ctx)
    if not fields:
        return
    df = ctx.data_file
    if (df.file_major_version, df.file_minor_version) < blob.MIN_FILE_VERSION:
        yield Finding(f"blob v2 field(s) {[f.name for f in fields]} in a "
                      f"{df.file_major_version}.{df.file_minor_version} data file; blob v2 needs "
                      "file version 2.2 or later", _loc(ctx))
        return
    for _f, _arr, msg in _descriptor_columns(ctx):
        if msg:
            yield Finding(msg, _loc(ctx))


@rule("BLOB-002", title="every blob descriptor's fields fit its kind", severity="error",
      spec=_SPEC, section=_SEC,
      clause="Each value is u8 kind | u64 position | u64 size | u32 blob_id | u32 uri_len | uri bytes",
      pylance="pylance 14.0.2 writes kind 0 inline (blob_id 0, empty uri), 1 packed and 2 dedicated "
              "(blob_id >= 1 names the sidecar, empty uri; dedicated: position 0), 3 external "
              "(non-empty uri; blob_id 0 or a base path id; position/size 0/0 or a non-empty range); "
              "the facts sheet saw kind 0 only (open question 1)",
      enforces="pylance", scope="data_file", deep=True,
      refusal='a descriptor whose fields do not fit its kind names no bytes a reader could return')
def descriptor_kinds(ctx):
    for f, arr, _msg in _descriptor_columns(ctx):
        if arr is None or len(arr) == 0:
            continue
        rows, kind, pos, size, bid, uri_len = _columns(arr)
        has_uri = uri_len > 0
        problems = [
            (kind > 3, "kind {k} is not 0 (inline), 1 (packed), 2 (dedicated) or 3 (external)"),
            ((kind == 0) & ((bid != 0) | has_uri), "an inline descriptor (kind 0) has blob_id {b} or a uri"),
            (((kind == 1) | (kind == 2)) & ((bid == 0) | has_uri),
             "a sidecar descriptor (kind {k}) needs blob_id >= 1 and no uri (blob_id {b})"),
            ((kind == 2) & (pos != 0), "a dedicated descriptor (kind 2) starts at {p}, not 0"),
            ((kind == 3) & ~has_uri, "an external descriptor (kind 3) has an empty uri"),
            ((kind == 3) & (pos != 0) & (size == 0),
             "an external descriptor (kind 3) names position {p} with size 0"),
        ]
        for mask, text in problems:
            for i in np.nonzero(mask)[0][:20]:
                yield Finding(text.format(k=int(kind[i]), b=int(bid[i]), p=int(pos[i])),
                              _row_loc(ctx, f, rows[i]))


@rule("BLOB-003", title="inline blobs lie inside their data file", severity="error",
      spec=_SPEC, section=_SEC,
      clause="For small in-file blobs the observed values were kind 0, position/size absolute in the "
             "same file",
      scope="data_file", deep=True,
      refusal='an inline blob range outside its data file cannot be read')
def inline_in_file(ctx):
    c, _err = container_of(ctx)
    if c is None:
        return
    total = np.uint64(c.size)
    for f, arr, _msg in _descriptor_columns(ctx):
        if arr is None or len(arr) == 0:
            continue
        rows, kind, pos, size, _bid, _uri = _columns(arr)
        # compare without u64 overflow: position > total or size > total - position
        bad = (kind == 0) & ((pos > total) | (size > total - np.minimum(pos, total)))
        for i in np.nonzero(bad)[0][:20]:
            yield Finding(f"inline blob [{int(pos[i])}, +{int(size[i])}) lies outside the "
                          f"{int(total)}-byte data file", _row_loc(ctx, f, rows[i]))


@rule("BLOB-004", title="packed and dedicated blobs lie inside their sidecar files", severity="error",
      spec=_SPEC, section=_SEC, clause=_CLAUSE_V2,
      pylance="pylance 14.0.2 writes sidecar blob_id to <data file stem>/<blob_id as 32 binary digits, "
              "least significant first>.blob beside the data file; a dedicated sidecar holds exactly "
              "one blob (position 0, size = its length); not in the spec or the facts sheet",
      enforces="pylance", scope="data_file", deep=True,
      refusal='a packed or dedicated blob whose sidecar is missing or too short cannot be read')
def sidecars(ctx):
    for f, arr, _msg in _descriptor_columns(ctx):
        if arr is None or len(arr) == 0:
            continue
        rows, kind, pos, size, bid, _uri = _columns(arr)
        side = ((kind == 1) | (kind == 2)) & (bid > 0)
        if not side.any():
            continue
        ids, first = np.unique(bid[side], return_index=True)
        have = np.zeros(len(ids), np.uint64)
        exists = np.ones(len(ids), bool)
        side_rows = np.nonzero(side)[0]
        for j, b in enumerate(ids.tolist()):  # one size request per sidecar
            key = blob.sidecar_key(ctx.file_key, int(b))
            try:
                have[j] = ctx.file_store.size(key)
            except NotFound:
                exists[j] = False
                yield Finding(f"sidecar {key!r} of blob_id {b} does not exist",
                              _row_loc(ctx, f, rows[side_rows[first[j]]]))
        slot = np.searchsorted(ids, bid[side])
        cap = have[slot]
        p, s = pos[side], size[side]
        # end > cap without u64 overflow: position > cap or size > cap - position
        outside = exists[slot] & ((p > cap) | (s > cap - np.minimum(p, cap)))
        not_whole = exists[slot] & ~outside & (kind[side] == 2) & ((p != 0) | (s != cap))
        for i in np.nonzero(outside)[0][:20]:
            b = int(bid[side][i])
            yield Finding(f"blob [{int(p[i])}, +{int(s[i])}) lies outside sidecar {b} "
                          f"({int(cap[i])} bytes)", _row_loc(ctx, f, rows[side_rows[i]]))
        for i in np.nonzero(not_whole)[0][:20]:
            b = int(bid[side][i])
            yield Finding(f"dedicated blob [{int(p[i])}, +{int(s[i])}) is not the whole sidecar {b} "
                          f"({int(cap[i])} bytes)", _row_loc(ctx, f, rows[side_rows[i]]))


def _externals(ctx, f, arr):
    rows, kind, pos, size, bid, uri_len = _columns(arr)
    ext = np.nonzero((kind == 3) & (uri_len > 0))[0]
    if not len(ext):
        return
    uris = arr.field(4).take(rows[ext]).to_pylist()
    for j, i in enumerate(ext):
        yield rows[i], blob.Descriptor(3, int(pos[i]), int(size[i]), int(bid[i]), uris[j])


@rule("BLOB-005", title="external blob references are absolute URIs or keys under a listed base path",
      severity="error", spec=_SPEC, section=_SEC, clause=_CLAUSE_V2,
      pylance="pylance 14.0.2 writes an external blob (kind 3) as its absolute URI with blob_id 0 "
              "(allow_external_blob_outside_bases), or as a key relative to a registered base path "
              "with blob_id = that base's id; not in the spec or the facts sheet",
      enforces="pylance", scope="data_file", deep=True,
      refusal='an external reference that is neither an absolute URI nor under a listed base path cannot be resolved')
def external_references(ctx):
    opts = dict(ctx.version.table.storage_options or {})
    for f, arr, _msg in _descriptor_columns(ctx):
        if arr is None:
            continue
        for row, desc in _externals(ctx, f, arr):
            if desc.blob_id == 0 and "://" not in desc.blob_uri and not desc.blob_uri.startswith("/"):
                yield Finding(f"external blob uri {desc.blob_uri!r} with blob_id 0 is not absolute",
                              _row_loc(ctx, f, row))
                continue
            try:
                _external_target(ctx, desc, opts)
            except LanceError as exc:
                if getattr(exc, "rule", None) in (blob.RULE_EXTERNAL, "BASEPATH-003"):
                    yield Finding(str(exc), _row_loc(ctx, f, row))


def _external_target(ctx, desc, opts):
    key = (desc.blob_id, desc.blob_uri)
    cache = ctx.cache.setdefault("blob_external", {})
    if key not in cache:
        cache[key] = blob.external_location(desc, manifest=ctx.version.manifest,
                                            storage_options=opts, path=ctx.file_key)
    return cache[key]


@rule("BLOB-006", title="external blob objects exist and hold the referenced range", severity="warning",
      spec=_SPEC, section=_SEC, clause=_CLAUSE_V2,
      pylance="pylance 14.0.2 stores external references without checking the object exists (reference "
              "mode); a missing object fails only when the blob is read. A warning: the object lies "
              "outside the dataset",
      enforces="pylance", scope="data_file", deep=True)
def external_objects(ctx):
    opts = dict(ctx.version.table.storage_options or {})
    for f, arr, _msg in _descriptor_columns(ctx):
        if arr is None:
            continue
        for row, desc in _externals(ctx, f, arr):
            try:
                store, key = _external_target(ctx, desc, opts)
                have = store.size(key)
            except NotFound:
                yield Finding(f"external blob object {desc.blob_uri!r} does not exist",
                              _row_loc(ctx, f, row))
                continue
            except LanceError:
                continue  # a malformed reference is BLOB-005's
            end = desc.position + desc.size
            if end > have:
                yield Finding(f"external blob range [{desc.position}, {end}) lies outside "
                              f"{desc.blob_uri!r} ({have} bytes)", _row_loc(ctx, f, row))


@rule("BLOB-007", title="a blob v1 column is stored in 2.0 or later data files", severity="error",
      spec=_SPEC, section="1.1 Field to column mapping",
      clause="blob (field metadata `lance-encoding:blob`) | 1 column | 1 column",
      releases="pylance 0.20.0 to 14.0.2 write a lance-encoding:blob large_binary column to a "
               "legacy (0.1) dataset and none reads it back (0.20.0, 1.0.4: 'Attempt to project "
               "incompatible fields'; 14.0.2 panics); releases before blob columns (before 0.19) "
               "ignore the key and read the bytes, but 14.0.2 refuses those tables too",
      refusal="a scan returns a blob v1 column as its (position, size) descriptions, which a "
              "legacy (0.1) data file does not store: no release reads such a column")
def v1_not_in_legacy_files(ctx):
    """A top-level ``large_binary`` field with ``lance-encoding:blob`` held by a legacy data
    file (the reader refuses it with this rule id too)."""
    fields = {f.id: f for f in ctx.manifest.fields if f.parent_id == -1
              and f.logical_type == "large_binary" and "lance-encoding:blob" in f.metadata}
    if not fields:
        return
    for frag in ctx.manifest.fragments:
        for df in frag.files:
            if (df.file_major_version, df.file_minor_version) >= (0, 3):
                continue
            for fid in sorted(set(df.fields) & set(fields)):
                yield Finding(f"blob column {fields[fid].name!r} is stored in legacy (0.1) data "
                              f"file {df.path}, which holds no blob descriptions",
                              {"path": df.path, "fragment": int(frag.id), "field": fields[fid].name})
