"""Schema: the flat ``lance.file.Field`` list of a manifest, and its pyarrow form.

A Lance schema is stored as a flat, depth-first list of ``lance.file.Field`` messages
(``Manifest.fields`` = 1, ``Transaction.Overwrite.schema``, ``FileDescriptor.schema``):

====  ==================  ===========================================================
 no.  field               meaning
====  ==================  ===========================================================
  1   type                ``PARENT``/``REPEATED``/``LEAF``; pylance 14 always writes 0
  2   name                the column (or child) name
  3   id                  the field id, unique in the schema; data files refer to it
  4   parent_id           the id of the parent field, ``-1`` for a top-level column
  5   logical_type        the type as a string (table below)
  6   nullable            whether the values may be null
  7   encoding            legacy-file encoding: 1 PLAIN (fixed width, lists,
                          fixed-size lists, maps), 2 VAR_BINARY (strings, binary),
                          3 DICTIONARY; absent for structs and ``null``
  8   dictionary          ``Dictionary{offset, length}``; present (often empty) on
                          dictionary fields
  9   extension_name      Arrow extension name (``arrow.uuid``, ``lance.json`` ...)
 10   metadata            the Arrow field metadata, ``string -> bytes``
 12   unenforced_primary_key
====  ==================  ===========================================================

Nesting: a field's children are the fields whose ``parent_id`` is its id, in list order.
``list``/``large_list`` have exactly one child (named as the Arrow child, normally
``item``); ``struct`` one child per member; ``map`` one non-nullable ``struct`` child
``entries`` with ``key`` (non-null) and ``value``. A fixed-size list is ONE field: its
item type is spelled inside the logical type. Ids are assigned depth first (a parent
before its children, children in order); dropped columns leave gaps and a rename keeps
the id.

Logical types written by pylance 14.0.2 (observed by writing every Arrow type with data
storage versions legacy, 2.0, 2.1, 2.2 and 2.3 and decoding the manifests; the strings
are the same for every version; what a version refuses is noted):

=========================================  ===========================================
Arrow type                                 ``logical_type``
=========================================  ===========================================
null                                       ``null`` (no encoding)
bool                                       ``bool``
int8 .. int64, uint8 .. uint64             ``int8`` .. ``int64``, ``uint8`` .. ``uint64``
float16 / float32 / float64                ``halffloat`` / ``float`` / ``double``
decimal128(p, s) / decimal256(p, s)        ``decimal:128:p:s`` / ``decimal:256:p:s``
date32 / date64                            ``date32:day`` / ``date64:ms``
time32(s|ms) / time64(us|ns)               ``time32:s`` ``time32:ms`` ``time64:us`` ``time64:ns``
timestamp(unit) / timestamp(unit, tz)      ``timestamp:unit:-`` / ``timestamp:unit:tz``
                                           (e.g. ``timestamp:ns:America/New_York``)
duration(unit)                             ``duration:s|ms|us|ns``
binary / large_binary                      ``binary`` / ``large_binary``
string / large_string                      ``string`` / ``large_string``
string_view / binary_view                  stored as ``string`` / ``binary`` (read back
                                           without the view)
fixed_size_binary(n)                       ``fixed_size_binary:n``
list<T>                                    ``list`` + child (``list.struct`` when T is a
                                           struct)
large_list<T>                              ``large_list`` (``large_list.struct``)
fixed_size_list<T>[n]                      ``fixed_size_list:<T>:n``, one field; T may
                                           itself be ``fixed_size_list:float:2``;
                                           legacy panics on non-fixed-width T;
                                           ``fixed_size_list:lance.bfloat16:n`` for
                                           bfloat16 items
fixed_size_list<struct>[n]                 ``fixed_size_list:struct:n`` + one child (the
                                           struct item) and its children; 2.2+ only
struct<...>                                ``struct`` + children
map<K, V> (keys unsorted)                  ``map`` + ``entries: struct`` + ``key``,
                                           ``value``; only 2.2+ (legacy, 2.0, 2.1 refuse;
                                           ``keys_sorted=True`` is refused everywhere)
dictionary<V, I, ordered>                  ``dict:<V>:<I>:<true|false>``, encoding
                                           DICTIONARY, field 8 present
extension<arrow.uuid>                      ``fixed_size_binary:16`` + extension_name
extension<arrow.fixed_shape_tensor>        ``fixed_size_list:float:4`` + extension_name
extension<arrow.opaque>, ``arrow.bool8``,  the storage's logical type + extension_name;
``lance.bfloat16``                         an extension over a struct
(``arrow.variable_shape_tensor``) keeps    the struct's children
extension<arrow.json>                      ``json``, extension_name ``lance.json``
                                           (stored as JSONB; pylance shows arrow.json)
struct<> (no children)                     ``struct`` without children (a column of its
                                           own in every file version)
list_view, unions, run-end encoded,        refused by pylance
decimal32/64, intervals
=========================================  ===========================================

Extension types keep ``ARROW:extension:name`` and ``ARROW:extension:metadata`` in the
field metadata (field 10) beside ``extension_name``.

In the pyarrow form every field (children included) carries its id in the Arrow field
metadata under the key ``b"lance:field_id"`` (decimal ASCII), so a round trip
``arrow_to_fields(fields_to_arrow(f))`` keeps the ids. Schema metadata
(``Manifest.schema_metadata`` = 5) becomes the Arrow schema metadata.

Errors carry the catalog id of the rule they break: SCHEMA-004 an unknown logical type
(``UnsupportedFeature``) or a malformed logical-type parameter; SCHEMA-001 a duplicate
field id; SCHEMA-008 a negative id; SCHEMA-002 a parent id that names no field, a parent
cycle, or nesting too deep; SCHEMA-005 children that do not fit the logical type.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence

import pyarrow as pa

from ..errors import FormatError, InvalidInput, UnsupportedFeature
from ..proto import file_pb2

FIELD_ID_KEY = b"lance:field_id"
EXTENSION_NAME_KEY = b"ARROW:extension:name"
EXTENSION_METADATA_KEY = b"ARROW:extension:metadata"
MAX_DEPTH = 64  # deeper nesting is refused rather than recursed into
BFLOAT16 = "lance.bfloat16"

_PRIMITIVES: dict[str, pa.DataType] = {
    "null": pa.null(), "bool": pa.bool_(),
    "int8": pa.int8(), "int16": pa.int16(), "int32": pa.int32(), "int64": pa.int64(),
    "uint8": pa.uint8(), "uint16": pa.uint16(), "uint32": pa.uint32(), "uint64": pa.uint64(),
    "halffloat": pa.float16(), "float": pa.float32(), "double": pa.float64(),
    "string": pa.string(), "large_string": pa.large_string(),
    "binary": pa.binary(), "large_binary": pa.large_binary(),
    "date32:day": pa.date32(), "date64:ms": pa.date64(),
    "time32:s": pa.time32("s"), "time32:ms": pa.time32("ms"),
    "time64:us": pa.time64("us"), "time64:ns": pa.time64("ns"),
    "duration:s": pa.duration("s"), "duration:ms": pa.duration("ms"),
    "duration:us": pa.duration("us"), "duration:ns": pa.duration("ns"),
}
_PRIMITIVE_NAMES = {t: name for name, t in _PRIMITIVES.items()}
_UNITS = ("s", "ms", "us", "ns")
_NESTED = ("list", "large_list", "list.struct", "large_list.struct", "struct", "map")
_JSON_STORAGE = pa.large_binary()

# Writer-side encoding values of lance.file.Encoding
_PLAIN, _VAR_BINARY, _DICTIONARY = 1, 2, 3


# --------------------------------------------------------------------------- logical types

def _bad(msg: str, rule: str = "SCHEMA-004") -> FormatError:
    return FormatError(msg, rule=rule)


def _int_param(text: str, what: str, lo: int, hi: int, lt: str) -> int:
    if not text.isdigit():
        raise _bad(f"logical type {lt!r}: {what} {text!r} is not a number")
    value = int(text)
    if not lo <= value <= hi:
        raise _bad(f"logical type {lt!r}: {what} {value} outside [{lo}, {hi}]")
    return value


def parse_logical_type(lt: str) -> pa.DataType:
    """The Arrow type of a logical type that has no child fields (every type except
    ``list``, ``large_list``, ``struct`` and ``map``). Raises ``UnsupportedFeature``
    (SCHEMA-004) for an unknown spelling, ``FormatError`` (SCHEMA-004) for bad numbers."""
    if not isinstance(lt, str) or len(lt) > 4096:
        raise _bad("logical type is not a short string")
    if lt in _PRIMITIVES:
        return _PRIMITIVES[lt]
    if lt == "json":
        return _JSON_STORAGE
    if lt == BFLOAT16:
        # the item type of a fixed-size list of lance.bfloat16 is spelled by the extension's
        # name (``fixed_size_list:lance.bfloat16:8``): 2-byte values, which pylance reads
        # back as lance.bfloat16 items (fixed_size_binary(2) where that type is unknown)
        return pa.binary(2)
    head, _, rest = lt.partition(":")
    if head == "decimal":
        parts = rest.split(":")
        if len(parts) != 3 or parts[0] not in ("128", "256"):
            raise _bad(f"malformed decimal logical type {lt!r}")
        width = int(parts[0])
        precision = _int_param(parts[1], "precision", 1, 38 if width == 128 else 76, lt)
        scale_text = parts[2]
        negative = scale_text.startswith("-")
        scale = _int_param(scale_text.lstrip("-"), "scale", 0, 76, lt)
        scale = -scale if negative else scale
        return (pa.decimal128 if width == 128 else pa.decimal256)(precision, scale)
    if head == "timestamp":
        unit, sep, tz = rest.partition(":")
        if unit not in _UNITS or not sep or not tz:
            raise _bad(f"malformed timestamp logical type {lt!r}")
        try:
            return pa.timestamp(unit, None if tz == "-" else tz)
        except (pa.ArrowException, ValueError) as exc:
            raise _bad(f"timestamp logical type {lt!r}: {exc}") from None
    if head == "fixed_size_binary":
        return pa.binary(_int_param(rest, "byte width", 1, 2**31 - 1, lt))
    if head == "fixed_size_list":
        inner, sep, size = rest.rpartition(":")
        if not sep or not inner:
            raise _bad(f"malformed fixed_size_list logical type {lt!r}")
        n = _int_param(size, "list size", 1, 2**31 - 1, lt)
        item = parse_logical_type(inner)
        if inner == BFLOAT16:  # the item keeps its extension, as pylance reads it back
            return pa.list_(pa.field("item", item, metadata={
                EXTENSION_NAME_KEY: BFLOAT16.encode(), EXTENSION_METADATA_KEY: b""}), n)
        return pa.list_(pa.field("item", item), n)
    if head == "dict":
        parts = rest.split(":")
        if len(parts) < 3 or parts[-1] not in ("true", "false"):
            raise _bad(f"malformed dictionary logical type {lt!r}")
        index = parse_logical_type(parts[-2])
        if not pa.types.is_integer(index):
            raise _bad(f"dictionary logical type {lt!r}: index type is not an integer")
        value = parse_logical_type(":".join(parts[:-2]))
        return pa.dictionary(index, value, ordered=parts[-1] == "true")
    if lt in _NESTED:
        raise FormatError(f"logical type {lt!r} needs child fields", rule="SCHEMA-005")
    raise UnsupportedFeature(f"unknown logical type {lt!r}", rule="SCHEMA-004")


def logical_type_of(t: pa.DataType) -> str:
    """The ``logical_type`` string pylance 14 writes for the Arrow type ``t``. Nested
    types give their parent spelling (``list``, ``list.struct``, ``struct``, ``map``)."""
    if isinstance(t, pa.BaseExtensionType):
        if _is_json(t):
            return "json"
        return logical_type_of(t.storage_type)
    if t in _PRIMITIVE_NAMES:
        return _PRIMITIVE_NAMES[t]
    if t == pa.string_view():
        return "string"
    if t == pa.binary_view():
        return "binary"
    if pa.types.is_decimal(t):
        if pa.types.is_decimal128(t):
            width = 128
        elif pa.types.is_decimal256(t):
            width = 256
        else:
            raise InvalidInput(f"decimal type {t} is not supported (only 128 and 256 bits)")
        return f"decimal:{width}:{t.precision}:{t.scale}"
    if pa.types.is_timestamp(t):
        return f"timestamp:{t.unit}:{t.tz if t.tz else '-'}"
    if pa.types.is_fixed_size_binary(t):
        return f"fixed_size_binary:{t.byte_width}"
    if pa.types.is_fixed_size_list(t):
        value = t.value_type
        if isinstance(value, pa.BaseExtensionType) and value.extension_name == BFLOAT16:
            return f"fixed_size_list:{BFLOAT16}:{t.list_size}"  # as pylance spells it
        return f"fixed_size_list:{logical_type_of(value)}:{t.list_size}"
    if pa.types.is_dictionary(t):
        return (f"dict:{logical_type_of(t.value_type)}:{logical_type_of(t.index_type)}:"
                f"{'true' if t.ordered else 'false'}")
    if pa.types.is_map(t):
        return "map"
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        base = "list" if pa.types.is_list(t) else "large_list"
        return base + (".struct" if pa.types.is_struct(t.value_type) else "")
    if pa.types.is_struct(t):
        return "struct"
    raise InvalidInput(f"Arrow type {t} has no Lance logical type (pylance refuses it too)")


def _nested(t: pa.DataType) -> bool:
    """A type whose Lance field has children (a struct, list or map; an extension over one)."""
    if isinstance(t, pa.BaseExtensionType):
        return not _is_json(t) and _nested(t.storage_type)
    return (pa.types.is_struct(t) or pa.types.is_list(t) or pa.types.is_large_list(t)
            or pa.types.is_map(t) or (pa.types.is_fixed_size_list(t) and _nested(t.value_type)))


def _is_json(t: pa.DataType) -> bool:
    return isinstance(t, pa.BaseExtensionType) and t.extension_name in ("arrow.json", "lance.json")


def _encoding_of(t: pa.DataType) -> int | None:
    """The legacy ``encoding`` value pylance writes for a field of type ``t``."""
    if isinstance(t, pa.BaseExtensionType):
        return _VAR_BINARY if _is_json(t) else _encoding_of(t.storage_type)
    if pa.types.is_dictionary(t):
        return _DICTIONARY
    if pa.types.is_struct(t) or pa.types.is_null(t):
        return None
    if (pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t)
            or pa.types.is_large_binary(t) or t in (pa.string_view(), pa.binary_view())):
        return _VAR_BINARY
    return _PLAIN


def _extension_metadata(t: pa.BaseExtensionType) -> bytes:
    """Serialized parameters of an extension type, as Arrow IPC (and pylance, which takes
    them through the C data interface) writes them: ``{"type_name":...}`` of an
    ``arrow.opaque``, ``{"shape":[2,2]}`` of a tensor, ``b""`` of ``arrow.uuid``."""
    exported = _c_schema_metadata(t)
    if EXTENSION_METADATA_KEY in exported:
        return exported[EXTENSION_METADATA_KEY]
    if hasattr(t, "__arrow_ext_serialize__"):
        try:
            return t.__arrow_ext_serialize__()
        except Exception:
            pass
    if t.extension_name == "arrow.fixed_shape_tensor":
        doc: dict = {"shape": list(t.shape)}
        if t.dim_names:
            doc["dim_names"] = list(t.dim_names)
        if t.permutation:
            doc["permutation"] = list(t.permutation)
        return json.dumps(doc, separators=(",", ":")).encode()
    return b""


def _c_schema_metadata(t: pa.DataType) -> dict[bytes, bytes]:
    """The metadata the Arrow C data interface exports with ``t`` (an extension type's name
    and serialized parameters): the one place pyarrow gives every extension type's
    serialization, the C++ canonical types' included. ``{}`` when it cannot be had."""
    import ctypes

    class ArrowSchema(ctypes.Structure):
        pass

    release = ctypes.CFUNCTYPE(None, ctypes.POINTER(ArrowSchema))
    ArrowSchema._fields_ = [
        ("format", ctypes.c_char_p), ("name", ctypes.c_char_p), ("metadata", ctypes.c_void_p),
        ("flags", ctypes.c_int64), ("n_children", ctypes.c_int64),
        ("children", ctypes.c_void_p), ("dictionary", ctypes.c_void_p),
        ("release", release), ("private_data", ctypes.c_void_p)]
    c = ArrowSchema()
    try:
        t._export_to_c(ctypes.addressof(c))
    except Exception:  # noqa: BLE001 - an old pyarrow without the C data interface
        return {}
    out: dict[bytes, bytes] = {}
    try:
        if c.metadata:  # int32 count, then (int32 length, bytes) per key and value
            pos = c.metadata + 4
            for _ in range(ctypes.c_int32.from_address(c.metadata).value):
                key_len = ctypes.c_int32.from_address(pos).value
                key = ctypes.string_at(pos + 4, key_len)
                pos += 4 + key_len
                value_len = ctypes.c_int32.from_address(pos).value
                out[key] = ctypes.string_at(pos + 4, value_len)
                pos += 4 + value_len
    finally:
        if c.release:
            c.release(ctypes.byref(c))
    return out


# --------------------------------------------------------------------------- fields -> arrow

class SchemaTree:
    """The parent/child structure of a flat field list, checked once.

    Raises ``FormatError`` for duplicate ids (SCHEMA-001), for fields whose parent
    does not exist or that nest deeper than ``MAX_DEPTH`` (SCHEMA-002) and for two siblings
    of one name (SCHEMA-007)."""

    def __init__(self, fields: Iterable[file_pb2.Field]):
        self.fields: list[file_pb2.Field] = list(fields)
        self._by_id: dict[int, file_pb2.Field] = {}
        self._children: dict[int, list[file_pb2.Field]] = {-1: []}
        for f in self.fields:
            if f.id in self._by_id:
                raise FormatError(f"field id {f.id} is used twice ({self._by_id[f.id].name!r}, "
                                  f"{f.name!r})", rule="SCHEMA-001")
            if f.id < 0:
                raise FormatError(f"field {f.name!r} has a negative id {f.id}", rule="SCHEMA-008")
            self._by_id[f.id] = f
            self._children.setdefault(f.id, [])
        names: set[tuple[int, str]] = set()
        for f in self.fields:
            if f.parent_id != -1 and f.parent_id not in self._by_id:
                raise FormatError(f"field {f.name!r} (id {f.id}) names parent {f.parent_id}, "
                                  f"which is not in the schema", rule="SCHEMA-002")
            if (f.parent_id, f.name) in names:
                # columns are looked up by name: two siblings of one name cannot both be read
                raise FormatError(f"two fields named {f.name!r} under parent {f.parent_id}",
                                  rule="SCHEMA-007")
            names.add((f.parent_id, f.name))
            self._children[f.parent_id].append(f)
        # every field must be reachable from the top level within MAX_DEPTH
        seen = 0
        level = [f.id for f in self._children[-1]]
        depth = 0
        while level:
            depth += 1
            if depth > MAX_DEPTH:
                raise FormatError(f"schema nests deeper than {MAX_DEPTH} levels", rule="SCHEMA-002")
            seen += len(level)
            level = [c.id for fid in level for c in self._children[fid]]
        if seen != len(self.fields):
            raise FormatError("schema has fields that form a parent cycle", rule="SCHEMA-002")

    def field_by_id(self, field_id: int) -> file_pb2.Field:
        try:
            return self._by_id[field_id]
        except KeyError:
            raise FormatError(f"no field with id {field_id}", rule="SCHEMA-002") from None

    def has(self, field_id: int) -> bool:
        return field_id in self._by_id

    def children_of(self, field_id: int) -> list[file_pb2.Field]:
        """Children of ``field_id`` in list order (``-1`` gives the top-level fields)."""
        return list(self._children.get(field_id, ()))

    def top_level_fields(self) -> list[file_pb2.Field]:
        return list(self._children[-1])

    def leaf_ids(self) -> list[int]:
        """Ids of fields without children, depth-first (these carry values in 2.1+ files)."""
        return [f.id for f in self.depth_first() if not self._children[f.id]]

    def depth_first(self) -> list[file_pb2.Field]:
        out: list[file_pb2.Field] = []
        stack = list(reversed(self._children[-1]))
        while stack:
            f = stack.pop()
            out.append(f)
            stack.extend(reversed(self._children[f.id]))
        return out

    def max_field_id(self) -> int:
        """The largest id, or -1 for an empty schema."""
        return max(self._by_id, default=-1)

    def ancestors(self, field_id: int) -> list[int]:
        out = []
        f = self.field_by_id(field_id)
        while f.parent_id != -1:
            out.append(f.parent_id)
            f = self._by_id[f.parent_id]
        return out


def check_parents_listed_first(fields: Sequence[file_pb2.Field]) -> None:
    """Raise SCHEMA-003 for a field listed before its parent.

    "Fields are listed in depth first order": a parent comes before its children. pylance
    refuses a field list that breaks this at load ("references parent id 0, which must
    appear earlier in the protobuf field list"). :class:`SchemaTree` does not need the
    order, so it does not check it; parents that are missing altogether are its SCHEMA-002.
    """
    seen: set[int] = set()
    for f in fields:
        if f.parent_id != -1 and f.parent_id not in seen:
            raise FormatError(f"field {f.name!r} (id {f.id}) is listed before its parent "
                              f"{f.parent_id}", rule="SCHEMA-003")
        seen.add(f.id)


def field_by_id(fields: Sequence[file_pb2.Field], field_id: int) -> file_pb2.Field:
    return SchemaTree(fields).field_by_id(field_id)


def children_of(fields: Sequence[file_pb2.Field], field_id: int) -> list[file_pb2.Field]:
    return SchemaTree(fields).children_of(field_id)


def top_level_fields(fields: Sequence[file_pb2.Field]) -> list[file_pb2.Field]:
    return SchemaTree(fields).top_level_fields()


def leaf_ids(fields: Sequence[file_pb2.Field]) -> list[int]:
    return SchemaTree(fields).leaf_ids()


def max_field_id(fields: Sequence[file_pb2.Field]) -> int:
    return SchemaTree(fields).max_field_id()


def project(fields: Sequence[file_pb2.Field], field_ids: Iterable[int]) -> list[file_pb2.Field]:
    """The fields named by ``field_ids`` with their ancestors and (for a named parent) all
    its descendants, in the original order: a valid schema again."""
    tree = SchemaTree(fields)
    keep: set[int] = set()
    for fid in field_ids:
        tree.field_by_id(fid)
        keep.add(fid)
        keep.update(tree.ancestors(fid))
        stack = [fid]
        while stack:
            for c in tree.children_of(stack.pop()):
                keep.add(c.id)
                stack.append(c.id)
    out = []
    for f in tree.fields:
        if f.id in keep:
            copy = file_pb2.Field()
            copy.CopyFrom(f)
            out.append(copy)
    return out


def _arrow_metadata(f: file_pb2.Field) -> dict[bytes, bytes]:
    meta = {k.encode(): bytes(v) for k, v in f.metadata.items()}
    if f.extension_name and EXTENSION_NAME_KEY not in meta:
        meta[EXTENSION_NAME_KEY] = f.extension_name.encode()
        meta.setdefault(EXTENSION_METADATA_KEY, b"")
    meta[FIELD_ID_KEY] = str(f.id).encode()
    return meta


def _to_arrow_field(tree: SchemaTree, f: file_pb2.Field) -> pa.Field:
    lt = f.logical_type
    kids = tree.children_of(f.id)
    if lt in ("list", "large_list", "list.struct", "large_list.struct"):
        if len(kids) != 1:
            raise FormatError(f"{lt} field {f.name!r} (id {f.id}) has {len(kids)} children, "
                              f"needs 1", rule="SCHEMA-005")
        item = _to_arrow_field(tree, kids[0])
        if lt.endswith(".struct") and not pa.types.is_struct(item.type):
            raise FormatError(f"{lt} field {f.name!r}: child is not a struct", rule="SCHEMA-005")
        t = pa.list_(item) if lt.startswith("list") else pa.large_list(item)
    elif lt == "struct":
        t = pa.struct([_to_arrow_field(tree, c) for c in kids])
    elif lt == "map":
        if len(kids) != 1 or kids[0].logical_type != "struct":
            raise FormatError(f"map field {f.name!r} (id {f.id}) needs one struct child",
                              rule="SCHEMA-005")
        kv = tree.children_of(kids[0].id)
        if len(kv) != 2:
            raise FormatError(f"map field {f.name!r}: entries has {len(kv)} children, needs 2",
                              rule="SCHEMA-005")
        key, value = (_to_arrow_field(tree, c) for c in kv)
        try:
            t = pa.map_(key.with_nullable(False), value)
        except (pa.ArrowException, ValueError, TypeError) as exc:
            raise FormatError(f"map field {f.name!r}: {exc}", rule="SCHEMA-005") from None
    elif lt.startswith("fixed_size_list:") and kids:
        # a fixed-size list of a nested type (pylance 2.2+: ``fixed_size_list:struct:2``)
        # spells its item's logical type and has the item as its one child
        inner, _, size = lt[len("fixed_size_list:"):].rpartition(":")
        if len(kids) != 1 or kids[0].logical_type != inner:
            raise FormatError(f"{lt} field {f.name!r} (id {f.id}) needs one child of type "
                              f"{inner!r}", rule="SCHEMA-005")
        n = _int_param(size, "list size", 1, 2**31 - 1, lt)
        t = pa.list_(_to_arrow_field(tree, kids[0]), n)
    else:
        if kids:
            raise FormatError(f"field {f.name!r} (id {f.id}) of type {lt!r} has children",
                              rule="SCHEMA-005")
        t = parse_logical_type(lt)
    return pa.field(f.name, t, nullable=f.nullable, metadata=_arrow_metadata(f))


def fields_to_arrow(fields: Iterable[file_pb2.Field],
                    schema_metadata: dict[str, bytes] | None = None, *,
                    extensions: bool = True) -> pa.Schema:
    """The pyarrow schema of a Lance field list; every field (children included) holds its
    id under ``b"lance:field_id"``. Extension types known to pyarrow (``arrow.uuid``,
    ``arrow.fixed_shape_tensor`` ...) come back as extension types; unknown ones (such as
    ``lance.json``) as their storage type with the extension keys in the field metadata.

    With ``extensions=False`` every field keeps its storage type (the extension keys stay in
    its metadata): the schema a decoder walks, whose nested fields all carry their ids, as
    the fields of an extension type's storage do not."""
    tree = SchemaTree(fields)
    arrow_fields = [_to_arrow_field(tree, f) for f in tree.top_level_fields()]
    meta = None
    if schema_metadata:
        meta = {(k.encode() if isinstance(k, str) else k): bytes(v) for k, v in schema_metadata.items()}
    schema = pa.schema(arrow_fields, metadata=meta)
    if extensions and any(f.extension_name or EXTENSION_NAME_KEY.decode() in f.metadata
                          or BFLOAT16 in f.logical_type for f in tree.fields):
        # IPC import turns ARROW:extension:* metadata into registered extension types; an
        # extension registered in this process may refuse the stored type (its own checks),
        # and then the field stays its storage type with the extension keys as metadata
        try:
            schema = pa.ipc.read_schema(pa.py_buffer(schema.serialize()))
        except (TypeError, ValueError, pa.ArrowException):
            pass
    return schema


# --------------------------------------------------------------------------- arrow -> fields

def arrow_to_fields(schema: pa.Schema, *, start_id: int = 0) -> list[file_pb2.Field]:
    """The Lance field list of a pyarrow schema, ids assigned depth first from
    ``start_id`` as pylance assigns them. Raises ``InvalidInput`` for types pylance refuses
    (``list_view``, maps with sorted keys, decimals of other widths)."""
    out: list[file_pb2.Field] = []
    next_id = [start_id]

    def add(af: pa.Field, parent: int, depth: int) -> None:
        if depth > MAX_DEPTH:
            raise InvalidInput(f"schema nests deeper than {MAX_DEPTH} levels")
        t = af.type
        f = file_pb2.Field()
        f.name = af.name
        f.id = next_id[0]
        next_id[0] += 1
        f.parent_id = parent
        f.logical_type = logical_type_of(t)
        f.nullable = af.nullable
        enc = _encoding_of(t)
        if enc is not None:
            f.encoding = enc
        if pa.types.is_dictionary(t):
            f.dictionary.SetInParent()
        for k, v in (af.metadata or {}).items():
            if k == FIELD_ID_KEY:
                continue
            f.metadata[k.decode("utf-8", "surrogateescape")] = v
        if isinstance(t, pa.BaseExtensionType):
            name = "lance.json" if _is_json(t) else t.extension_name
            f.extension_name = name
            f.metadata[EXTENSION_NAME_KEY.decode()] = name.encode()
            f.metadata[EXTENSION_METADATA_KEY.decode()] = b"" if _is_json(t) else _extension_metadata(t)
            if _is_json(t):
                out.append(f)
                return
            # a nested storage keeps its children (arrow.variable_shape_tensor's struct)
            t = t.storage_type
        out.append(f)
        if pa.types.is_map(t):
            if t.keys_sorted:
                raise InvalidInput(f"map field {af.name!r}: keys_sorted=True is not supported")
            entries = pa.field("entries", pa.struct([t.key_field, t.item_field]), nullable=False)
            add(entries, f.id, depth + 1)
        elif pa.types.is_list(t) or pa.types.is_large_list(t):
            add(t.value_field, f.id, depth + 1)
        elif pa.types.is_fixed_size_list(t) and _nested(t.value_type):
            add(t.value_field, f.id, depth + 1)  # fixed_size_list:struct:N has its item
        elif pa.types.is_struct(t):
            for i in range(t.num_fields):
                add(t.field(i), f.id, depth + 1)

    for af in schema:
        add(af, -1, 0)
    return out


def schema_metadata_of(schema: pa.Schema) -> dict[str, bytes]:
    """Arrow schema metadata as ``Manifest.schema_metadata`` holds it (str -> bytes)."""
    return {k.decode("utf-8", "surrogateescape"): v for k, v in (schema.metadata or {}).items()}


def field_ids_of(schema: pa.Schema) -> list[int]:
    """The ``lance:field_id`` of every top-level Arrow field (``-1`` where absent)."""
    out = []
    for f in schema:
        raw = (f.metadata or {}).get(FIELD_ID_KEY)
        out.append(int(raw) if raw is not None and raw.isdigit() else -1)
    return out
