"""Lance logical types <-> Arrow types for decoding, and decoded value streams -> Arrow arrays.

The file's schema (``FileDescriptor.schema``, a ``lance.file.Field`` list) is turned into a
pyarrow schema by :func:`reference_impl.table.schema.fields_to_arrow`; this module adds what
the page decoders need from a type:

* :func:`value_shape` -- is a leaf fixed width (and how many bits per value: 1 for bool) or
  variable width;
* :func:`leaf_array` -- builds the Arrow array of a leaf from a value stream
  (:class:`~reference_impl.file.encodings.v2_1.values.Fixed` / ``Var`` / ``Fsl``) and a
  validity mask, checking that the decoded widths match the type;
* :func:`is_leaf` -- which fields own a column in 2.1+ (FILE-ENCODINGS §1.1): everything but
  struct (unless packed, or without children), list, large_list and map.

Dictionary-typed fields are decoded to their value type and re-encoded with the declared
index type.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from reference_impl.errors import FormatError

from .encodings.v2_1 import packed_struct as packed_node
from .encodings.v2_1.values import Fixed, Fsl, Var

RULE = "ENC-045"
PACKED_KEYS = (b"lance-encoding:packed", b"packed")


def is_packed(field: pa.Field) -> bool:
    md = field.metadata or {}
    return pa.types.is_struct(field.type) and any(md.get(k, b"").lower() == b"true" for k in PACKED_KEYS)


def is_empty_struct(t: pa.DataType) -> bool:
    """A struct without children: it owns a column of its own (pylance writes one, whose
    pages hold levels and no values), as a leaf does."""
    return pa.types.is_struct(t) and t.num_fields == 0


def is_struct_fsl(t: pa.DataType) -> bool:
    """A fixed-size list of structs (2.2+): no leaf of its own; the struct's leaves carry it
    as a layer of their levels, one slot per item (FILE-ENCODINGS §1.1)."""
    if not pa.types.is_fixed_size_list(t):
        return False
    inner = t.value_type
    return pa.types.is_struct(inner) or is_struct_fsl(inner)


def is_leaf(field: pa.Field) -> bool:
    t = field.type
    if pa.types.is_struct(t):
        return is_packed(field) or is_empty_struct(t)
    if is_struct_fsl(t):
        return False
    return not (pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_map(t))


def leaf_paths(f: pa.Field, prefix=(), empty_struct_columns: bool = True):
    """Pre-order leaves of ``f`` (each a tuple of fields from the top-level field down): the
    fields that own a column in 2.1+ (:func:`is_leaf`). ``empty_struct_columns=False``: a
    struct without children owns none (pylance 0.20.0's 2.1 files; every reader then reads
    it as null)."""
    path = prefix + (f,)
    t = f.type
    if is_empty_struct(t) and not empty_struct_columns:
        return
    if is_leaf(f):
        yield path
    elif pa.types.is_struct(t):
        for c in t:
            yield from leaf_paths(c, path, empty_struct_columns)
    elif pa.types.is_map(t):
        entries = pa.field("entries", pa.struct([t.key_field, t.item_field]), nullable=False)
        yield from leaf_paths(entries, path, empty_struct_columns)
    else:  # list / large_list, a fixed-size list of structs
        yield from leaf_paths(t.value_field, path, empty_struct_columns)


def items_per_row(path) -> int:
    """Slots per row in the column of leaf ``path``: the product of the sizes of the
    fixed-size lists of structs along it. pylance 14.0.2 counts a page of such a column in
    items (``Page.length`` = rows x size), as the type census observed."""
    n = 1
    for f in path:
        if is_struct_fsl(f.type):
            n *= f.type.list_size
    return n


def column_scales(fields) -> list[int]:
    """:func:`items_per_row` of every 2.1+ column of a file's Lance field list, in column
    order (an empty list when the fields do not form a schema)."""
    from reference_impl.table.schema import fields_to_arrow

    try:
        schema = fields_to_arrow(fields, extensions=False)
    except Exception:  # noqa: BLE001 - the schema rules report a schema that does not convert
        return []
    return [items_per_row(p) for f in schema for p in leaf_paths(f)]


def storage(t: pa.DataType) -> pa.DataType:
    # BaseExtensionType covers Python extension types and the C++ canonical ones
    # (arrow.fixed_shape_tensor, arrow.uuid, ...), which are not pa.ExtensionType.
    if isinstance(t, pa.BaseExtensionType):
        return storage(t.storage_type)
    if pa.types.is_dictionary(t):
        return t.value_type
    return t


def is_variable(t: pa.DataType) -> bool:
    t = storage(t)
    return (pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t)
            or pa.types.is_large_binary(t) or pa.types.is_string_view(t) or pa.types.is_binary_view(t))


def value_shape(field: pa.Field) -> tuple[str, int]:
    """("fixed", bits), ("var", 0), ("fsl", 0) or ("null", 0) for a leaf's values."""
    t = storage(field.type)
    if is_variable(t):
        return "var", 0
    if pa.types.is_boolean(t):
        return "fixed", 1
    if pa.types.is_null(t) or is_empty_struct(t):
        return "null", 0  # only pages without values can hold it: no value bytes
    if pa.types.is_fixed_size_list(t):
        return "fsl", 0
    if pa.types.is_struct(t):
        if any(is_variable(c.type) for c in t):
            return "var", 0  # 2.2 variable packed struct: one variable-length value per row
        try:
            return "fixed", sum(storage(c.type).bit_width for c in t)
        except ValueError:
            raise FormatError(f"packed struct {t} has a child of no fixed width", rule=RULE) from None
    try:
        return "fixed", t.bit_width
    except ValueError:
        raise FormatError(f"type {t} has no fixed width", rule=RULE) from None


def _bitmap(valid: np.ndarray | None):
    if valid is None or valid.all():
        return None
    return pa.py_buffer(np.packbits(valid, bitorder="little").tobytes())


def _fixed_array(t: pa.DataType, v: Fixed, valid) -> pa.Array:
    n = v.n
    if pa.types.is_boolean(t):
        if v.bits != 1:
            raise FormatError(f"bool column decoded as {v.bits}-bit values", rule=RULE)
        data = pa.py_buffer(np.packbits(v.data, bitorder="little").tobytes())
    else:
        if v.bits != t.bit_width:
            raise FormatError(f"{t} column decoded as {v.bits}-bit values", rule=RULE)
        data = pa.py_buffer(np.ascontiguousarray(v.data))
    return pa.Array.from_buffers(t, n, [_bitmap(valid), data])


def invalid_utf8(arr: pa.Array, data) -> str | None:
    """Why the values of a utf8 array are not valid UTF-8 (Arrow requires it of the type, and
    pylance refuses such a page), or None. Bytes all below 0x80 are valid UTF-8 whatever the
    offsets, so the full check (several times slower) runs only on other bytes."""
    view = np.frombuffer(data, np.uint8)
    if not len(view) or int(view.max()) < 0x80:
        return None
    try:
        arr.validate(full=True)
    except pa.ArrowInvalid as exc:
        return str(exc)
    return None


def _var_array(t: pa.DataType, v: Var, valid) -> pa.Array:
    large = pa.types.is_large_string(t) or pa.types.is_large_binary(t)
    if not large and len(v.data) >= 2 ** 31:
        raise FormatError("values exceed 32-bit offsets", rule=RULE)
    offs = v.offsets.astype(np.int64 if large else np.int32)
    view = pa.types.is_string_view(t) or pa.types.is_binary_view(t)
    base = (pa.string() if pa.types.is_string_view(t) else pa.binary()) if view else t
    data = np.ascontiguousarray(v.data)
    arr = pa.Array.from_buffers(base, v.n, [_bitmap(valid), pa.py_buffer(offs), pa.py_buffer(data)])
    if pa.types.is_string(base) or pa.types.is_large_string(base):
        problem = invalid_utf8(arr, data)
        if problem:
            raise FormatError(f"string values are not valid UTF-8: {problem}", rule=RULE)
    return arr.cast(t) if view else arr


def _fsl_array(t: pa.DataType, v: Fsl, valid) -> pa.Array:
    """Nested FSL arrays bottom-up: layer ``li``'s bitmap is the validity of its items."""
    types, inner = [], t
    while pa.types.is_fixed_size_list(inner):
        types.append(inner)
        inner = inner.value_type
    v = v.with_dims([x.list_size for x in types])
    if [x.list_size for x in types] != list(v.dims):
        raise FormatError(f"fixed-size list dims {v.dims} do not match the type {t}", rule=RULE)
    by_layer = dict(zip(v.vlayers, v.validity, strict=False))
    last = len(types) - 1
    items = v.items
    if pa.types.is_null(storage(inner)):
        # items of the null type hold no bytes: whatever the page says, they are nulls
        arr = pa.nulls(v.items.n)
        return _fsl_layers(types, arr, v, valid, by_layer, last)
    if v.const_items == b"":
        # a constant of no value stores no item: each one is null, of any item type
        # (pylance 14.0.2 writes fixed_size_list<string> of null items so; DuckDB 1.5.5
        # nested fixed-size lists of null items, see Fsl.with_null_items)
        arr = pa.nulls(v.items.n, storage(inner))
        return _fsl_layers(types, arr, v, valid, by_layer, last)
    if v.const_items is not None:
        it = storage(inner)
        try:
            width = 1 if pa.types.is_boolean(it) else it.bit_width // 8
        except ValueError:  # a constant value of a type without a fixed width
            raise FormatError(f"constant fixed-size list item of {it}", rule=RULE) from None
        const = v.const_items or bytes(width)
        if len(const) != width and not pa.types.is_boolean(it):
            raise FormatError(f"constant item of {len(const)} bytes for {it}", rule=RULE)
        k = v.items.n
        items = (Fixed(np.full(k, bool(const[0] & 1)), 1) if pa.types.is_boolean(it)
                 else Fixed(np.tile(np.frombuffer(const, np.uint8), k), width * 8))
    arr = _fixed_array(storage(inner), items, by_layer.get(last))
    return _fsl_layers(types, arr, v, valid, by_layer, last)


def _fsl_layers(types, arr, v: Fsl, valid, by_layer, last) -> pa.Array:
    """The fixed-size list layers around the item array ``arr``, innermost first."""
    rows = v.n
    for depth in range(last, -1, -1):
        length = rows * int(np.prod(v.dims[:depth])) if depth else rows
        bitmap = _bitmap(valid) if depth == 0 else _bitmap(by_layer.get(depth - 1))
        arr = pa.Array.from_buffers(types[depth], length, [bitmap], children=[arr])
    return arr


def leaf_array(field: pa.Field, values, valid: np.ndarray | None) -> pa.Array:
    """Arrow array of a leaf field from a decoded value stream and its validity."""
    t = field.type
    st = storage(t)
    if values is None:
        raise FormatError(f"no values decoded for {field.name!r}", rule=RULE)
    if pa.types.is_null(st):
        raise FormatError(f"null-typed column {field.name!r} has value bytes; only all-null pages fit it",
                          rule=RULE)
    if pa.types.is_fixed_size_list(st):
        if not isinstance(values, Fsl):
            raise FormatError(f"fixed-size list {field.name!r} decoded as {type(values).__name__}", rule=RULE)
        arr = _fsl_array(st, values, valid)
    elif pa.types.is_struct(st) and isinstance(values, Var) and not len(values.data):
        # an all-null page of a variable packed struct: placeholder rows only
        arr = pa.Array.from_buffers(st, values.n, [_bitmap(valid)],
                                    children=[pa.nulls(values.n, c.type) for c in st])
    elif pa.types.is_struct(st) and isinstance(values, list):
        # variable packed struct: one decoded stream per child (FILE-ENCODINGS §4.12)
        if len(values) != st.num_fields:
            raise FormatError(f"packed struct {field.name!r} decoded {len(values)} of {st.num_fields} children",
                              rule=RULE)
        kids = [leaf_array(c, part, None) for c, part in zip(st, values, strict=False)]
        n = len(kids[0]) if kids else 0
        if any(len(k) != n for k in kids):
            raise FormatError(f"packed struct {field.name!r} children differ in length", rule=RULE)
        arr = pa.Array.from_buffers(st, n, [_bitmap(valid)], children=kids)
    elif pa.types.is_struct(st):
        if not isinstance(values, Fixed):
            raise FormatError(f"packed struct {field.name!r} not fixed width", rule=RULE)
        widths = [storage(c.type).bit_width for c in st]
        kids = [_fixed_array(storage(c.type), part, None)
                for c, part in zip(st, packed_node.split(values, widths), strict=False)]
        kids = [k.cast(c.type) if k.type != c.type else k for k, c in zip(kids, st, strict=False)]
        arr = pa.Array.from_buffers(st, values.n if kids else 0, [_bitmap(valid)], children=kids)
    elif is_variable(st):
        if not isinstance(values, Var):
            raise FormatError(f"variable-width {field.name!r} decoded as {type(values).__name__}", rule=RULE)
        arr = _var_array(st, values, valid)
    else:
        if not isinstance(values, Fixed):
            raise FormatError(f"fixed-width {field.name!r} decoded as {type(values).__name__}", rule=RULE)
        arr = _fixed_array(st, values, valid)
    if pa.types.is_dictionary(t):
        arr = pc.dictionary_encode(arr)
        if arr.type.index_type != t.index_type:
            arr = pa.DictionaryArray.from_arrays(arr.indices.cast(t.index_type), arr.dictionary)
    elif isinstance(t, pa.ExtensionType):
        arr = pa.ExtensionArray.from_storage(t, arr)
    return arr
