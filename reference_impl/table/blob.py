"""Blob v2 columns: descriptors in the data file, bytes wherever the descriptor says
(FILE-ENCODINGS §3.5 "Blob layouts", 2.2; extended by what pylance 14.0.2 writes); and how a
scan returns blob v1 columns (their descriptions; see "blob v1" below).

**Declaration.** In the manifest a blob v2 column is a top-level ``struct`` field whose
extension name is ``lance.blob.v2`` (``Field.extension_name`` and the Arrow metadata key
``ARROW:extension:name``). Its children describe what a *writer* accepts: ``data:
large_binary, uri: string`` (optionally ``position, size: uint64`` for a range of an external
object). Blob v2 needs file version 2.2 or later. A ``large_binary`` field with
``lance-encoding:blob`` metadata written to a 2.2 dataset by pylance becomes such a field.
The writer's thresholds travel in the field metadata: ``lance-encoding:blob-inline-size-threshold``,
``lance-encoding:blob-dedicated-size-threshold`` and ``lance-encoding:blob-pack-file-size-threshold``.

**Stored form.** ``DataFile.fields`` lists only the struct's id; the data file holds one column
for it: one *descriptor* per row, encoded as a full-zip ``variable_packed_struct``::

    kind     u8    0 inline, 1 packed, 2 dedicated, 3 external
    position u64   first byte of the blob in the file the kind names
    size     u64   length of the blob in bytes
    blob_id  u32   kinds 1/2: the sidecar file's id; kind 3: a base path id (0 = none)
    blob_uri utf8  kind 3 only: where the bytes are

A null blob is a null descriptor row; an empty one is kind 0 with size 0.

=========  ==================================================================================
kind       where the bytes are
=========  ==================================================================================
0 inline   ``[position, position + size)`` of the data file itself (64-aligned buffers ahead of
           the column's pages, like blob v1)
1 packed   ``[position, position + size)`` of sidecar ``blob_id`` (several blobs back to back)
2 dedicated  the whole sidecar ``blob_id`` (position 0, size = the sidecar's length)
3 external ``blob_uri``: an absolute URI when ``blob_id`` is 0, else a key relative to the
           base path whose id is ``blob_id``; position/size 0/0 is the whole object, otherwise
           the range ``[position, position + size)``
=========  ==================================================================================

A sidecar lives in a directory named after its data file, beside it:
``<dir of data file>/<data file name without ".lance">/<blob_id>.blob`` where ``<blob_id>`` is
written as 32 binary digits, least significant bit first (id 1 -> ``1000...0``, id 2 ->
``0100...0``), the bit-reversed naming of data files (spec 000).

**pylance's file schema (recorded, accepted).** The data file's own schema lists the struct
(metadata ``lance-encoding:blob`` and ``lance-encoding:packed``, *no* children) followed by the
five descriptor fields with **id -1 and parent -1**, all non-nullable. The spec's field ids are
non-negative and every child names its parent (spec 004, SCHEMA-008); pylance 14.0.2 writes
this form and its own file reader cannot read it back (it sees seven top-level fields). We
enforce pylance's form exactly where it occurs and nowhere else: :func:`split_file_fields`
re-attaches the five fields to the struct and refuses id -1 anywhere else (BLOB-001).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from ..errors import FormatError, InvalidInput, NotFound, PathEscape

EXTENSION_NAME = "lance.blob.v2"
EXTENSION_KEY = b"ARROW:extension:name"
BLOB_KEY = b"lance-encoding:blob"
PACKED_KEY = b"lance-encoding:packed"
SIDECAR_SUFFIX = ".blob"
#: blob v2 needs a data file of at least this version
MIN_FILE_VERSION = (2, 2)
#: bound on one blob read into memory (a descriptor's size is untrusted)
MAX_BLOB_BYTES = 1 << 34

RULE_SCHEMA = "BLOB-001"
RULE_KIND = "BLOB-002"
RULE_INLINE = "BLOB-003"
RULE_SIDECAR = "BLOB-004"
RULE_EXTERNAL = "BLOB-005"


class BlobKind(enum.IntEnum):
    """Where a blob v2 descriptor's bytes live."""

    INLINE = 0
    PACKED = 1
    DEDICATED = 2
    EXTERNAL = 3


#: the descriptor fields in stored order: (name, Arrow type); all non-nullable
DESCRIPTOR_FIELDS: tuple[tuple[str, pa.DataType], ...] = (
    ("kind", pa.uint8()),
    ("position", pa.uint64()),
    ("size", pa.uint64()),
    ("blob_id", pa.uint32()),
    ("blob_uri", pa.utf8()),
)
DESCRIPTOR_TYPE = pa.struct([pa.field(n, t, nullable=False) for n, t in DESCRIPTOR_FIELDS])
_DESCRIPTOR_LOGICAL = ("uint8", "uint64", "uint64", "uint32", "string")


# -- recognising blob v2 fields ------------------------------------------------------------

def is_blob_v2(field) -> bool:
    """True for a blob v2 field: a Lance ``Field`` or a ``pa.Field`` (plain struct with the
    extension key in its metadata, or a registered ``lance.blob.v2`` extension type)."""
    if isinstance(field, pa.Field):
        t = field.type
        if isinstance(t, pa.BaseExtensionType):
            return t.extension_name == EXTENSION_NAME
        return (field.metadata or {}).get(EXTENSION_KEY) == EXTENSION_NAME.encode()
    if getattr(field, "extension_name", "") == EXTENSION_NAME:
        return True
    meta = getattr(field, "metadata", None) or {}
    return bytes(meta.get(EXTENSION_KEY.decode(), b"")) == EXTENSION_NAME.encode()


def descriptor_field(field: pa.Field) -> pa.Field:
    """The field a scan returns for blob v2 ``field``: the descriptor struct, as pylance's
    ``to_table`` returns it (same name and nullability, the two encoding keys as metadata)."""
    return pa.field(field.name, DESCRIPTOR_TYPE, nullable=field.nullable,
                    metadata={BLOB_KEY: b"true", PACKED_KEY: b"true"})


def scan_schema(schema: pa.Schema) -> pa.Schema:
    """``schema`` with every blob field replaced by what a scan returns for it: a blob v2
    field's :func:`descriptor_field` (also where it is nested, :func:`stored_field`), a blob
    v1 field's :func:`v1_description_field`."""
    if not any(is_blob_v2(f) or is_blob_v1(f) or has_nested_blob_v2(f) for f in schema):
        return schema
    return pa.schema([v1_description_field(f) if is_blob_v1(f) and not is_blob_v2(f)
                      else stored_field(f) for f in schema], metadata=schema.metadata)


# -- blob v1: lance-encoding:blob large_binary in 2.0 and 2.1 files ------------------------
#
# A top-level ``large_binary`` field with the metadata key ``lance-encoding:blob`` (any value)
# is a *blob v1* column in 2.0 and 2.1 datasets (FILE-ENCODINGS §2.2, §3.5): the data file
# keeps one (u64 position, u64 size) descriptor per row and the bytes elsewhere in the file.
# pylance's dataset scan (``to_table``, ``take``, filters, ``_rowid``) returns the
# descriptors, ``struct<position: uint64, size: uint64>`` with the key as field metadata, not
# the bytes (observed on pylance 0.20.0, 1.0.4 and 14.0.2; 0.20.0 marks the two children
# non-nullable). A null is a null row in 2.1 files; 2.0 stores no validity and its null reads
# as ``(1, 0)``; an empty value is ``(0, 0)``. The bytes are ``take_blobs``'s
# (``reference_impl.scan.take_blobs``: ``None`` for a null, ``b""`` for an empty blob, as
# pylance 14.0.2 returns them; 1.0.4 returned ``b""`` for a null), and pylance's *file*
# reader returns the bytes too.
#
# A legacy (0.1) data file stores no descriptors: every release that writes such a column
# there refuses to read it back (0.20.0, 1.0.4: "Attempt to project incompatible fields";
# 14.0.2 panics), and so does the reference reader (BLOB-007). In 2.2+ datasets the same key
# makes a blob v2 column (below).

RULE_V1_LEGACY = "BLOB-007"
V1_DESCRIPTION_TYPE = pa.struct([pa.field("position", pa.uint64()),
                                 pa.field("size", pa.uint64())])


def is_blob_v1(field) -> bool:
    """True for a blob v1 field: a top-level ``large_binary`` ``pa.Field`` whose metadata has
    ``lance-encoding:blob`` (a blob v2 struct is not one)."""
    return (isinstance(field, pa.Field) and pa.types.is_large_binary(field.type)
            and BLOB_KEY in (field.metadata or {}))


def v1_description_field(field: pa.Field) -> pa.Field:
    """The field a scan returns for blob v1 ``field``: its descriptions, named and nullable
    as the field, with the ``lance-encoding:blob`` key."""
    return pa.field(field.name, V1_DESCRIPTION_TYPE, nullable=field.nullable,
                    metadata={BLOB_KEY: (field.metadata or {})[BLOB_KEY]})


# -- the data file's field list ------------------------------------------------------------

def _is_descriptor_struct(f) -> bool:
    meta = dict(f.metadata)
    return (f.logical_type == "struct" and bytes(meta.get("lance-encoding:blob", b"")) == b"true"
            and bytes(meta.get("lance-encoding:packed", b"")) == b"true")


def split_file_fields(fields, *, path: str | None = None):
    """Separate pylance's detached descriptor fields from a data file's field list.

    Returns ``(fields, descriptors)``: the list without the id -1 fields, and
    ``{struct field id: DESCRIPTOR_TYPE}`` for every blob v2 struct whose five descriptor
    fields followed it. Raises ``FormatError`` BLOB-001 for an id -1 field anywhere else or
    descriptor fields other than the five of :data:`DESCRIPTOR_FIELDS`."""
    fields = list(fields)
    if not any(f.id == -1 for f in fields):
        return fields, {}
    kept, descriptors = [], {}
    i = 0
    while i < len(fields):
        f = fields[i]
        if f.id == -1:
            raise FormatError(f"field {f.name!r} has id -1 outside a blob v2 descriptor",
                              rule=RULE_SCHEMA, path=path)
        kept.append(f)
        i += 1
        if _is_descriptor_struct(f) and i < len(fields) and fields[i].id == -1:
            run = fields[i:i + len(DESCRIPTOR_FIELDS)]
            got = [(c.name, c.logical_type, c.parent_id, c.nullable) for c in run]
            want = [(n, lt, -1, False) for (n, _t), lt in zip(DESCRIPTOR_FIELDS, _DESCRIPTOR_LOGICAL,
                                                                 strict=True)]
            if got != want:
                raise FormatError(f"blob v2 field {f.name!r} is followed by descriptor fields "
                                  f"{got}, expected {want}", rule=RULE_SCHEMA, path=path)
            if any(c.parent_id == f.id for c in fields):
                raise FormatError(f"blob v2 field {f.name!r} has both children and detached "
                                  "descriptor fields", rule=RULE_SCHEMA, path=path)
            descriptors[f.id] = DESCRIPTOR_TYPE
            i += len(DESCRIPTOR_FIELDS)
    return kept, descriptors


def with_descriptor_types(schema: pa.Schema, descriptors: dict[int, pa.DataType]) -> pa.Schema:
    """The file schema with each blob v2 struct given its descriptor type (field ids kept),
    wherever it sits: a top-level field, a struct's child or a list's item (pylance 14.0.2
    writes all three)."""
    if not descriptors:
        return schema

    def field(f: pa.Field) -> pa.Field:
        fid = int((f.metadata or {}).get(b"lance:field_id", b"-1"))
        if fid in descriptors:
            return f.with_type(descriptors[fid])
        return f.with_type(_map_children(f.type, field))

    return pa.schema([field(f) for f in schema], metadata=schema.metadata)


def _map_children(t: pa.DataType, fn) -> pa.DataType:
    """``t`` with ``fn`` applied to each direct child field (struct children, list and
    fixed-size list items, map keys and items); other types as they are."""
    if pa.types.is_struct(t):
        return pa.struct([fn(c) for c in t])
    if pa.types.is_list(t):
        return pa.list_(fn(t.value_field))
    if pa.types.is_large_list(t):
        return pa.large_list(fn(t.value_field))
    if pa.types.is_fixed_size_list(t):
        return pa.list_(fn(t.value_field), t.list_size)
    if pa.types.is_map(t):
        return pa.map_(fn(t.key_field), fn(t.item_field), keys_sorted=t.keys_sorted)
    return t


def stored_field(field: pa.Field) -> pa.Field:
    """``field`` in the form a data file stores it and a scan returns it: every blob v2
    field in it (``field`` itself, a struct's child, a list's item) becomes its descriptor
    struct, where pylance 14.0.2 returns it; the field ids of the rest (and of a nested
    descriptor field) are kept. A blob v1 field stays as it is (its descriptions are a
    scan's, :func:`v1_description_field`)."""
    def one(f: pa.Field) -> pa.Field:
        if is_blob_v2(f):
            d = descriptor_field(f)
            fid = (f.metadata or {}).get(b"lance:field_id")
            return d if fid is None else d.with_metadata({**d.metadata, b"lance:field_id": fid})
        return f.with_type(_map_children(f.type, one))

    return one(field)


def has_nested_blob_v2(field: pa.Field) -> bool:
    """True when a blob v2 field sits anywhere below ``field`` (not ``field`` itself)."""
    found = []

    def walk(f: pa.Field) -> pa.Field:
        if is_blob_v2(f):
            found.append(f)
            return f
        _map_children(f.type, walk)
        return f

    _map_children(field.type, walk)
    return bool(found)


# -- where the bytes are -------------------------------------------------------------------

def sidecar_name(blob_id: int) -> str:
    """``<32 binary digits of blob_id, least significant first>.blob``."""
    if not 0 <= blob_id < 1 << 32:
        raise InvalidInput(f"blob id {blob_id} is not a u32")
    return format(blob_id, "032b")[::-1] + SIDECAR_SUFFIX


def sidecar_key(data_file_key: str, blob_id: int) -> str:
    """Key of sidecar ``blob_id`` of the data file at ``data_file_key`` (same store)."""
    stem = data_file_key[:-len(".lance")] if data_file_key.endswith(".lance") else data_file_key
    return f"{stem}/{sidecar_name(blob_id)}"


@dataclass(frozen=True)
class Descriptor:
    """One non-null descriptor row."""

    kind: int
    position: int
    size: int
    blob_id: int
    blob_uri: str


def descriptors_of(array: pa.Array) -> list[Descriptor | None]:
    """The rows of a descriptor struct array (None for a null row)."""
    array = array.combine_chunks() if isinstance(array, pa.ChunkedArray) else array
    if len(array) == 0:
        return []
    valid = np.ones(len(array), bool) if array.null_count == 0 else \
        np.asarray(array.is_valid().to_numpy(zero_copy_only=False), bool)
    cols = [array.field(i) for i in range(len(DESCRIPTOR_FIELDS))]
    kind, pos, size, bid = (c.fill_null(0).to_numpy(zero_copy_only=False) for c in cols[:4])
    uri = cols[4].fill_null("").to_pylist()
    return [Descriptor(int(kind[i]), int(pos[i]), int(size[i]), int(bid[i]), uri[i])
            if valid[i] else None for i in range(len(array))]


@dataclass(frozen=True)
class Location:
    """Where one blob's bytes are: ``(store, key)`` and the byte range; ``size`` None means
    the whole object (an external descriptor with position and size 0)."""

    store: object
    key: str
    position: int
    size: int | None
    rule: str


def locate(desc: Descriptor, *, data_store, data_file_key: str, manifest=None,
           storage_options=None, path: str | None = None) -> Location:
    """Where ``desc``'s bytes are. Raises ``FormatError`` (BLOB-002 an unknown kind, BLOB-005 a
    malformed external reference) -- nothing is read here."""
    if desc.kind == BlobKind.INLINE:
        return Location(data_store, data_file_key, desc.position, desc.size, RULE_INLINE)
    if desc.kind in (BlobKind.PACKED, BlobKind.DEDICATED):
        return Location(data_store, sidecar_key(data_file_key, desc.blob_id), desc.position,
                        desc.size, RULE_SIDECAR)
    if desc.kind == BlobKind.EXTERNAL:
        store, key = external_location(desc, manifest=manifest, storage_options=storage_options,
                                       path=path)
        whole = desc.position == 0 and desc.size == 0
        return Location(store, key, desc.position, None if whole else desc.size, RULE_EXTERNAL)
    raise FormatError(f"blob descriptor kind {desc.kind} is not 0-3", rule=RULE_KIND, path=path)


def external_location(desc: Descriptor, *, manifest=None, storage_options=None, path=None):
    """``(store, key)`` of an external descriptor: ``blob_uri`` itself when ``blob_id`` is 0,
    else the key ``blob_uri`` under the base path ``blob_id``."""
    from ..io.base import check_key
    from ..io.uri import open_store
    from .basepath import find_base_path, open_base

    uri = desc.blob_uri
    if not uri or "\x00" in uri:
        raise FormatError("external blob descriptor has an empty uri", rule=RULE_EXTERNAL, path=path)
    if desc.blob_id == 0:
        parent, _, name = uri.rstrip("/").rpartition("/")
        if not name or not parent:
            raise FormatError(f"external blob uri {uri!r} names no object", rule=RULE_EXTERNAL,
                              path=path)
        try:
            return open_store(parent or "/", storage_options), name
        except InvalidInput as exc:
            raise FormatError(f"external blob uri {uri!r} cannot be opened: {exc}",
                              rule=RULE_EXTERNAL, path=path) from None
    if manifest is None:
        raise FormatError(f"external blob names base path {desc.blob_id} without a manifest",
                          rule=RULE_EXTERNAL, path=path)
    try:
        bp = find_base_path(manifest, desc.blob_id)
    except FormatError:
        raise FormatError(f"external blob names base path {desc.blob_id}, which the manifest "
                          "does not list", rule=RULE_EXTERNAL, path=path) from None
    try:
        key = check_key(uri)
    except PathEscape:
        raise PathEscape(f"external blob key {uri!r} escapes its base path", rule=RULE_EXTERNAL,
                         path=path) from None
    return open_base(bp, storage_options), key


def read_range(loc: Location, *, path: str | None = None, max_bytes: int = MAX_BLOB_BYTES) -> bytes:
    """The bytes ``loc`` names, bounds-checked against the object's size."""
    try:
        total = loc.store.size(loc.key)
    except NotFound:
        raise FormatError(f"blob bytes are in {loc.key!r}, which does not exist", rule=loc.rule,
                          path=path) from None
    start = loc.position
    size = total - start if loc.size is None else loc.size
    if start < 0 or size < 0 or start + size > total:
        raise FormatError(f"blob range [{start}, {start + size}) lies outside {loc.key!r} "
                          f"({total} bytes)", rule=loc.rule, path=path)
    if size > max_bytes:
        raise FormatError(f"blob of {size} bytes is over the {max_bytes}-byte read bound",
                          rule=loc.rule, path=path)
    return loc.store.get_range(loc.key, start, size) if size else b""


# -- writing (a 2.2+ dataset's blob columns) -----------------------------------------------
#
# Placement, as pylance 14.0.2 decides it (defaults probed; the field metadata overrides them):
#
#   null                          a null descriptor row
#   size <= inline threshold      kind 0, bytes in the data file (64-aligned, ahead of pages);
#                                 an empty value too (size 0, position = the aligned offset)
#   size <= dedicated threshold   kind 1, appended to the current pack sidecar (a new one
#                                 is started when it would pass the pack-file threshold)
#   larger                        kind 2, a sidecar of its own
#   an external uri               kind 3, blob_id 0 and the absolute uri (position/size of
#                                 the range, 0/0 for the whole object)
#
# Sidecar ids count from 1 per data file in the order the rows first need them.

INLINE_THRESHOLD_KEY = "lance-encoding:blob-inline-size-threshold"
DEDICATED_THRESHOLD_KEY = "lance-encoding:blob-dedicated-size-threshold"
PACK_FILE_THRESHOLD_KEY = "lance-encoding:blob-pack-file-size-threshold"
DEFAULT_INLINE_THRESHOLD = 64 * 1024
DEFAULT_DEDICATED_THRESHOLD = 4 * 1024 * 1024
DEFAULT_PACK_FILE_THRESHOLD = 1 << 30
_THRESHOLD_KEYS = (INLINE_THRESHOLD_KEY, DEDICATED_THRESHOLD_KEY, PACK_FILE_THRESHOLD_KEY)
#: the internal marker of a planned blob v2 column handed to the file writer (never stored)
PLAN_KEY = b"lance-conformance:blob-v2-plan"
PLAN_TYPE = pa.struct([pa.field(n, t, nullable=False) for n, t in DESCRIPTOR_FIELDS]
                      + [pa.field("inline", pa.large_binary())])


def is_blob_input(field: pa.Field) -> bool:
    """A column a 2.2+ dataset stores as blob v2: a ``lance-encoding:blob`` large_binary, or a
    ``lance.blob.v2`` struct (extension type or metadata) with a ``data`` child."""
    md = field.metadata or {}
    if BLOB_KEY in md and pa.types.is_large_binary(field.type):
        return True
    return is_blob_v2(field)


def _storage(field: pa.Field) -> pa.DataType:
    t = field.type
    return t.storage_type if isinstance(t, pa.BaseExtensionType) else t


def manifest_field(field: pa.Field) -> pa.Field:
    """The manifest's form of blob input ``field``: a ``lance.blob.v2`` struct ``{data, uri}``
    (or the input's own four-child storage), threshold keys kept, ``lance-encoding:blob``
    dropped -- what pylance records."""
    md = {k: v for k, v in (field.metadata or {}).items()
          if (k.decode() if isinstance(k, bytes) else k) in _THRESHOLD_KEYS}
    md[EXTENSION_KEY] = EXTENSION_NAME.encode()
    if isinstance(field.type, pa.BaseExtensionType) or b"ARROW:extension:metadata" in (field.metadata or {}):
        md[b"ARROW:extension:metadata"] = b""  # an extension input keeps its (empty) metadata
    if pa.types.is_large_binary(field.type):
        t = pa.struct([pa.field("data", pa.large_binary()), pa.field("uri", pa.utf8())])
    else:
        t = _storage(field)
    return pa.field(field.name, t, nullable=field.nullable, metadata=md)


def manifest_schema(schema: pa.Schema) -> pa.Schema:
    """``schema`` with every blob input field in its manifest form."""
    return pa.schema([manifest_field(f) if is_blob_input(f) else f for f in schema],
                     metadata=schema.metadata)


def mark_extension(fields) -> None:
    """Set ``Field.extension_name`` on the top-level blob v2 fields of a Lance field list."""
    for f in fields:
        if f.parent_id == -1 and bytes(f.metadata.get(EXTENSION_KEY.decode(), b"")) == EXTENSION_NAME.encode():
            f.extension_name = EXTENSION_NAME


def file_fields(fields) -> list:
    """The data file's field list for manifest ``fields``: each blob v2 struct without its
    children, flagged ``lance-encoding:blob`` and ``lance-encoding:packed``, followed by the
    five detached descriptor fields (id -1, parent -1), as pylance writes it."""
    from ..proto import file_pb2

    blob_ids = {f.id for f in fields if f.parent_id == -1 and is_blob_v2(f)}
    out = []
    for f in fields:
        if f.parent_id in blob_ids:
            continue
        if f.id not in blob_ids:
            out.append(f)
            continue
        g = file_pb2.Field(id=f.id, parent_id=-1, name=f.name, logical_type="struct",
                           nullable=f.nullable)
        g.metadata["lance-encoding:blob"] = b"true"
        g.metadata["lance-encoding:packed"] = b"true"
        out.append(g)
        for (name, _t), lt in zip(DESCRIPTOR_FIELDS, _DESCRIPTOR_LOGICAL, strict=True):
            out.append(file_pb2.Field(id=-1, parent_id=-1, name=name, logical_type=lt,
                                      nullable=False))
    return out


def _threshold(meta, key: str, default: int) -> int:
    raw = (meta or {}).get(key.encode(), (meta or {}).get(key))
    if raw is None:
        return default
    try:
        value = int(bytes(raw).decode() if isinstance(raw, (bytes, bytearray)) else raw)
    except ValueError:
        raise InvalidInput(f"{key} must be an integer, not {raw!r}") from None
    if value < 0:
        raise InvalidInput(f"{key} must not be negative")
    return value


@dataclass
class Sidecars:
    """The sidecar files one data file's blob columns fill: ``files[blob_id]`` = parts."""

    pack_limit: int = DEFAULT_PACK_FILE_THRESHOLD
    files: dict = None
    _pack: int | None = None

    def __post_init__(self):
        self.files = {}

    def _new(self) -> int:
        bid = len(self.files) + 1
        self.files[bid] = []
        return bid

    def pack(self, value: memoryview) -> tuple[int, int]:
        """Append ``value`` to the current pack file; ``(blob_id, position)``."""
        if self._pack is not None:
            used = sum(len(p) for p in self.files[self._pack])
            if used + len(value) > self.pack_limit and used:
                self._pack = None
        if self._pack is None:
            self._pack = self._new()
        pos = sum(len(p) for p in self.files[self._pack])
        self.files[self._pack].append(value)
        return self._pack, pos

    def dedicated(self, value: memoryview) -> int:
        bid = self._new()
        self.files[bid].append(value)
        return bid

    def write(self, store, data_file_key: str) -> None:
        for bid, parts in self.files.items():
            store.put(sidecar_key(data_file_key, bid), b"".join(parts))


def _under_base(u: str, bases) -> tuple[int, str] | None:
    """``(base id, key)`` when uri ``u`` lies under one of ``bases`` (BasePath messages that
    are not dataset roots), as pylance stores such an external blob."""
    from urllib.parse import unquote, urlparse

    def norm(x: str) -> str:
        if x.startswith("file://"):
            return unquote(urlparse(x).path)
        return x

    target = norm(u)
    for bp in bases or ():
        if bp.is_dataset_root:
            continue
        root = norm(bp.path).rstrip("/") + "/"
        if target.startswith(root) and len(target) > len(root):
            return int(bp.id), target[len(root):]
    return None


def plan_column(array: pa.Array, meta, sidecars: Sidecars, *,
                allow_external: bool = False, bases=()) -> pa.StructArray:
    """The :data:`PLAN_TYPE` rows of one blob column chunk: descriptors with kinds, sidecar
    ids and positions decided (bytes queued on ``sidecars``), inline bytes in ``inline``
    (their positions are set when the file writer places them). An external uri under one of
    ``bases`` (the manifest's base paths) is stored relative to it with the base's id; any
    other external uri needs ``allow_external`` and is stored absolute with id 0."""
    import pyarrow.compute as pc

    from ..file.encode.arrow_data import variable_parts

    inline_max = _threshold(meta, INLINE_THRESHOLD_KEY, DEFAULT_INLINE_THRESHOLD)
    dedicated_max = _threshold(meta, DEDICATED_THRESHOLD_KEY, DEFAULT_DEDICATED_THRESHOLD)
    sidecars.pack_limit = max(1, _threshold(meta, PACK_FILE_THRESHOLD_KEY, DEFAULT_PACK_FILE_THRESHOLD))
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    if isinstance(array, pa.ExtensionArray):
        array = array.storage
    n = len(array)
    uri = rng_pos = rng_size = None
    if pa.types.is_large_binary(array.type) or pa.types.is_binary(array.type):
        data = array.cast(pa.large_binary())
    else:
        names = [array.type.field(i).name for i in range(array.type.num_fields)]
        if "data" not in names or "uri" not in names:
            raise InvalidInput(f"blob v2 values must be a struct with data and uri, not {array.type}")
        data = array.field(names.index("data")).cast(pa.large_binary())
        uri = array.field(names.index("uri")).cast(pa.utf8())
        rng_pos = array.field(names.index("position")) if "position" in names else None
        rng_size = array.field(names.index("size")) if "size" in names else None
    valid = np.asarray(array.is_valid().to_numpy(zero_copy_only=False), bool)
    has_data = valid & np.asarray(data.is_valid().to_numpy(zero_copy_only=False), bool)
    has_uri = np.zeros(n, bool) if uri is None else \
        valid & ~has_data & np.asarray(uri.is_valid().to_numpy(zero_copy_only=False), bool)
    if np.any(valid & ~has_data & ~has_uri) and uri is not None:
        i = int(np.flatnonzero(valid & ~has_data & ~has_uri)[0])
        raise InvalidInput(f"blob row {i} sets neither data nor uri (use a null for a null blob)")
    offsets, raw = variable_parts(data)
    lengths = np.diff(offsets)
    lengths[~has_data] = 0
    # where each value goes, by size (the module's placement table)
    kind = np.zeros(n, np.uint8)
    kind[has_data & (lengths > inline_max) & (lengths <= dedicated_max)] = BlobKind.PACKED
    kind[has_data & (lengths > dedicated_max)] = BlobKind.DEDICATED
    kind[has_uri] = BlobKind.EXTERNAL
    pos = np.zeros(n, np.uint64)
    size = lengths.astype(np.uint64)
    bid = np.zeros(n, np.uint32)
    view = memoryview(raw)
    for i in np.flatnonzero((kind == BlobKind.PACKED) | (kind == BlobKind.DEDICATED)):
        value = view[offsets[i]:offsets[i + 1]]  # sidecar ids follow the rows' order
        if kind[i] == BlobKind.PACKED:
            bid[i], pos[i] = sidecars.pack(value)
        else:
            bid[i] = sidecars.dedicated(value)
    stored = [""] * n
    for i in np.flatnonzero(has_uri):
        u = uri[int(i)].as_py()
        if not u or ("://" not in u and not u.startswith("/")):
            raise InvalidInput(f"external blob uri {u!r} must be absolute")
        hit = _under_base(u, bases)
        if hit is not None:
            bid[i], stored[i] = hit
        elif allow_external:
            stored[i] = u
        else:
            raise InvalidInput(f"external blob {u!r} lies under no registered base path; pass "
                               "allow_external_blob_outside_bases=True to reference it")
        if rng_pos is not None and rng_pos[int(i)].is_valid:
            pos[i], size[i] = rng_pos[int(i)].as_py(), rng_size[int(i)].as_py()
    uris = pa.array(stored, pa.utf8())
    inline = pc.if_else(pa.array(has_data & (kind == BlobKind.INLINE)), data,
                        pa.scalar(None, pa.large_binary()))
    return pa.StructArray.from_arrays(
        [pa.array(kind), pa.array(pos), pa.array(size), pa.array(bid), uris, inline],
        fields=list(PLAN_TYPE), mask=pa.array(~valid))


def plan_field(name: str, nullable: bool) -> pa.Field:
    """The field that hands a planned blob v2 column to the file writer."""
    return pa.field(name, PLAN_TYPE, nullable=nullable, metadata={PLAN_KEY: b"1"})


def is_plan_field(field: pa.Field) -> bool:
    return PLAN_KEY in (field.metadata or {})
