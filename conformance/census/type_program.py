"""Write one small table per Arrow type, variant and storage version with one release; read back.

This program runs inside a release's own virtualenv (``conformance/releases/venvs.py``): it
imports only that release's ``lance`` and pyarrow, never the kit, so the census can ask any
release from 0.10 on. Its catalogue is every Arrow type and canonical extension type (plus
``lance.bfloat16``), each in several variants: values with nulls and empties, not nullable,
all null, no rows, many rows, and inside a list, a struct, a map and a fixed-size list.

For every (storage version, type, variant) it records in ``OUT/<storage>/<case>/case.json``:

* ``inexpressible``: this pyarrow cannot build the type (an old release's era);
* ``refused-write``: the release refused to write it (error class and message);
* ``refused-read``: the release wrote it but could not read it back;
* ``identical``: it read back exactly what it was given (type and values);
* ``other-type``: it read back another type (``read_type`` says which);
* ``other-values``: the same type with other values (a writer bug).

beside ``input.arrows`` (what it was given), ``table/`` (its dataset) and ``read.arrows``
(what it read back), all Arrow IPC streams. A case that crashes the process is marked
``crashed`` when the program is run again (``case.json`` is written with ``started`` first).

Usage (with the release's Python)::

    python type_program.py write OUT STORAGE [ROWS]  # every case at one storage version
                                                     # (ROWS: a JSON list of type names)
    python type_program.py storages               # the storage versions this release writes
    python type_program.py read-ours OUT STORAGE  # read each OUT/STORAGE/<case>/ours/ table
    python type_program.py read-tables OUT STORAGE   # read each case's table/ (newest-read.*)
"""

from __future__ import annotations

import datetime
import decimal
import importlib.util
import json
import os
import sys
import traceback

import pyarrow as pa
import pyarrow.ipc as ipc

try:
    import lance
except ImportError:  # pragma: no cover - the census runs pylance releases only
    lance = None

_RELEASE_PROGRAM = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "releases", "release_program.py")
_spec = importlib.util.spec_from_file_location("release_program", _RELEASE_PROGRAM)
release_program = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(release_program)

N = 24        # rows of a small table
MANY = 3000   # rows of the ``many`` variant: enough for the compressive encodings


class Inexpressible(Exception):
    """This pyarrow cannot build the type."""


def _need(name):
    if not hasattr(pa, name):
        raise Inexpressible(f"pyarrow {pa.__version__} has no pa.{name}")
    return getattr(pa, name)


def _null_at(i):
    return i % 5 == 4


# -- the catalogue ------------------------------------------------------------------------------
#
# Each entry: (row name, family, builder). A builder takes (n, nulls) and returns a pa.Array of
# n values, with nulls where _null_at(i) when ``nulls`` is true and none otherwise; empties
# (empty strings, lists, maps, structs without children) and extreme values are mixed in.


def _from_list(type_fn, value):
    def build(n, nulls):
        t = type_fn()
        return pa.array([None if nulls and _null_at(i) else value(i) for i in range(n)], t)
    return build


def _ints(bits, signed):
    lo, hi = (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) if signed else (0, 2 ** bits - 1)
    extremes = [lo, hi, 0, 1, -1 if signed else 2]
    name = f"{'int' if signed else 'uint'}{bits}"
    return _from_list(lambda: getattr(pa, name)(),
                      lambda i: extremes[i % 5] if i % 3 == 0 else (i * 37) % (hi + 1))


def _floats(name):
    special = [float("nan"), float("inf"), float("-inf"), -0.0, 0.0]

    def build(n, nulls):
        vals = [special[i % 5] if i % 4 == 1 else i * 0.25 - 3
                for i in range(n)]
        vals = [None if nulls and _null_at(i) else v for i, v in enumerate(vals)]
        if name == "float16":  # pyarrow builds halfs from numpy only: cast from float32
            return pa.array(vals, pa.float32()).cast(pa.float16())
        return pa.array(vals, getattr(pa, name)())
    return build


def _bfloat16(n, nulls):
    """lance.bfloat16 values: the top 16 bits of float32 values (storage fixed_size_binary(2),
    the extension named in the field's metadata: :data:`FIELD_METADATA`). Built without
    ``lance.arrow``, which needs pandas in some releases."""
    import struct

    vals = [None if nulls and _null_at(i) else (i * 0.5 - 3 if i % 4 != 1 else float("inf"))
            for i in range(n)]
    return pa.array([None if v is None else struct.pack("<f", v)[2:] for v in vals],
                    pa.binary(2))


def _decimals(fn_name, precision, scale):
    def build(n, nulls):
        t = _need(fn_name)(precision, scale)
        big = decimal.Decimal(f"{'9' * (precision - scale)}.{'9' * scale}")
        small = decimal.Decimal(f"0.{'0' * (scale - 1)}1")
        vals = [big if i % 7 == 0 else big.copy_negate() if i % 7 == 1 else small * (i * 12345 % 10 ** 7)
                for i in range(n)]
        return pa.array([None if nulls and _null_at(i) else v for i, v in enumerate(vals)], t)
    return build


_EPOCH = datetime.date(1970, 1, 1)


def _strings(type_name):
    pool = ["", "a", "lance", "héllo", "日本語", "x" * 40, "tab\tnl\n", "emoji-🙂"]

    def build(n, nulls):
        t = _need(type_name)()
        vals = [pool[i % len(pool)] + (str(i) if i % 3 == 1 else "") for i in range(n)]
        vals = [None if nulls and _null_at(i) else v for i, v in enumerate(vals)]
        if type_name in ("binary", "large_binary", "binary_view"):
            vals = [None if v is None else v.encode() for v in vals]
        return pa.array(vals, t)
    return build


def _fixed_binary(width):
    return _from_list(lambda: pa.binary(width),
                      lambda i: bytes([(i * 7 + k) % 256 for k in range(width)]))


def _intervals(n, nulls):
    t = _need("month_day_nano_interval")()
    vals = [(i - 3, i * 2 - 10, i * 1_000_000_007 - 5) for i in range(n)]
    return pa.array([None if nulls and _null_at(i) else v for i, v in enumerate(vals)], t)


def _int32s(n, nulls):
    return pa.array([None if nulls and _null_at(i) else i * 3 - 20 for i in range(n)], pa.int32())


def _lists(kind):
    def build(n, nulls):
        vals = [[j if j % 3 else None for j in range(i % 4)] for i in range(n)]
        vals = [None if nulls and _null_at(i) else v for i, v in enumerate(vals)]
        if kind == "fixed_size_list":
            vals = [None if v is None else [i, None, -i] for i, v in enumerate(vals)]
            return pa.array(vals, pa.list_(pa.int32(), 3))
        return pa.array(vals, _need(kind)(pa.int32()))
    return build


def _struct(n, nulls):
    t = pa.struct([("a", pa.int32()), ("b", pa.string())])
    vals = [{"a": None if i % 4 == 1 else i, "b": "" if i % 3 == 0 else f"s{i}"} for i in range(n)]
    return pa.array([None if nulls and _null_at(i) else v for i, v in enumerate(vals)], t)


def _empty_struct(n, nulls):
    return pa.array([None if nulls and _null_at(i) else {} for i in range(n)], pa.struct([]))


def _struct_of_empty_struct(n, nulls):
    t = pa.struct([("e", pa.struct([])), ("x", pa.int32())])
    vals = [{"e": None if i % 3 == 1 else {}, "x": i} for i in range(n)]
    return pa.array([None if nulls and _null_at(i) else v for i, v in enumerate(vals)], t)


def _nested_struct(n, nulls):
    t = pa.struct([("s", pa.struct([("a", pa.int64()), ("b", pa.string())])), ("c", pa.bool_())])
    vals = [{"s": None if i % 3 == 1 else {"a": i, "b": None if i % 4 == 2 else f"v{i}"},
             "c": i % 2 == 0} for i in range(n)]
    return pa.array([None if nulls and _null_at(i) else v for i, v in enumerate(vals)], t)


def _maps(keys_sorted):
    def build(n, nulls):
        t = pa.map_(pa.string(), pa.int32(), keys_sorted=keys_sorted) if keys_sorted else \
            pa.map_(pa.string(), pa.int32())
        vals = [[(f"k{j}", None if j == 1 else i + j) for j in range(i % 3)] for i in range(n)]
        return pa.array([None if nulls and _null_at(i) else v for i, v in enumerate(vals)], t)
    return build


def _union(mode):
    def build(n, nulls):
        codes = pa.array([i % 2 for i in range(n)], pa.int8())
        ints = [None if nulls and _null_at(i) else i for i in range(n)]
        strs = [None if nulls and _null_at(i) else f"u{i}" for i in range(n)]
        if mode == "sparse":
            return pa.UnionArray.from_sparse(codes, [pa.array(ints, pa.int32()),
                                                     pa.array(strs, pa.string())], ["i", "s"])
        offsets = pa.array([i // 2 for i in range(n)], pa.int32())
        return pa.UnionArray.from_dense(
            codes, offsets, [pa.array(ints[0::2], pa.int32()), pa.array(strs[1::2], pa.string())],
            ["i", "s"])
    return build


def _dictionary(index, value):
    def build(n, nulls):
        pool = {"string": ["red", "", "grün", "blue"], "int64": [7, -1, 2 ** 40, 0]}[value]
        vals = [None if nulls and _null_at(i) else pool[(i * 3) % 4] for i in range(n)]
        return pa.array(vals, getattr(pa, value)()).dictionary_encode().cast(
            pa.dictionary(getattr(pa, index)(), getattr(pa, value)()))
    return build


def _run_end_encoded(run_type, value):
    def build(n, nulls):
        if not hasattr(pa, "RunEndEncodedArray"):
            raise Inexpressible(f"pyarrow {pa.__version__} has no run-end encoded arrays")
        ends, vals, i = [], [], 0
        while i < n:
            i = min(n, i + 1 + len(vals) % 3)
            ends.append(i)
            k = len(vals)
            v = f"r{k}" if value == "string" else k * 11
            vals.append(None if nulls and k % 4 == 3 else v)
        return pa.RunEndEncodedArray.from_arrays(pa.array(ends, getattr(pa, run_type)()),
                                                 pa.array(vals, getattr(pa, value)()))
    return build


def _extension(factory, storage_build):
    """An extension array: ``factory()`` the type, ``storage_build`` its storage values."""
    def build(n, nulls):
        t = factory()
        storage = storage_build(n, nulls)
        return pa.ExtensionArray.from_storage(t, storage.cast(t.storage_type))
    return build


def _uuid_storage(n, nulls):
    return pa.array([None if nulls and _null_at(i) else bytes([(i * 13 + k) % 256
                                                               for k in range(16)])
                     for i in range(n)], pa.binary(16))


def _json_storage(n, nulls):
    # the text pylance gives back: binary JSON keeps no spacing and sorts the keys
    docs = [json.dumps({"i": i, "s": "é" * (i % 3), "l": [i, None]}, separators=(",", ":"),
                       sort_keys=True, ensure_ascii=False) if i % 4 else "[]"
            for i in range(n)]
    return pa.array([None if nulls and _null_at(i) else d for i, d in enumerate(docs)],
                    pa.string())


def _tensor(n, nulls):
    t = _need("fixed_shape_tensor")(pa.float32(), [2, 2])
    vals = [None if nulls and _null_at(i) else [i + 0.5 * k for k in range(4)] for i in range(n)]
    return pa.ExtensionArray.from_storage(t, pa.array(vals, pa.list_(pa.float32(), 4)))


#: arrow.variable_shape_tensor has no pyarrow factory: its storage carries the extension name
#: in the field metadata, as IPC carries any extension a library does not know.
VARIABLE_TENSOR = pa.struct([("data", pa.list_(pa.float32())),
                             ("shape", pa.list_(pa.int32(), 2))])
VARIABLE_TENSOR_METADATA = {b"ARROW:extension:name": b"arrow.variable_shape_tensor",
                            b"ARROW:extension:metadata": b'{}'}


def _variable_tensor(n, nulls):
    vals = [None if nulls and _null_at(i) else
            {"data": [float(k) for k in range((i % 3) * 2)], "shape": [i % 3, 2]}
            for i in range(n)]
    return pa.array(vals, VARIABLE_TENSOR)


def _ext(name):
    def factory():
        if name == "uuid":
            return _need("uuid")()
        if name == "json":
            return _need("json_")()
        if name == "opaque":
            return _need("opaque")(pa.binary(), "geometry", "example.org")
        if name == "bool8":
            return _need("bool8")()
        raise AssertionError(name)
    return factory


CATALOGUE = [
    ("null", "null", lambda n, nulls: pa.nulls(n)),
    ("bool", "primitive", _from_list(pa.bool_, lambda i: i % 3 == 0)),
    *[(f"{'int' if s else 'uint'}{b}", "primitive", _ints(b, s))
      for s in (True, False) for b in (8, 16, 32, 64)],
    ("float16", "float", _floats("float16")),
    ("float32", "float", _floats("float32")),
    ("float64", "float", _floats("float64")),
    ("lance.bfloat16", "extension", _bfloat16),
    ("decimal32(7,2)", "decimal", _decimals("decimal32", 7, 2)),
    ("decimal64(15,3)", "decimal", _decimals("decimal64", 15, 3)),
    ("decimal128(38,10)", "decimal", _decimals("decimal128", 38, 10)),
    ("decimal256(76,20)", "decimal", _decimals("decimal256", 76, 20)),
    ("date32", "temporal", _from_list(pa.date32,
                                      lambda i: _EPOCH + datetime.timedelta(days=i * 997 % 2_000_000 - 7e5))),
    ("date64", "temporal", _from_list(pa.date64,
                                      lambda i: _EPOCH + datetime.timedelta(days=i * 991 % 2_000_000 - 7e5))),
    ("time32[s]", "temporal", _from_list(lambda: pa.time32("s"), lambda i: (i * 3607) % 86400)),
    ("time32[ms]", "temporal", _from_list(lambda: pa.time32("ms"),
                                          lambda i: (i * 3_600_007) % 86_400_000)),
    ("time64[us]", "temporal", _from_list(lambda: pa.time64("us"),
                                          lambda i: (i * 3_600_000_007) % 86_400_000_000)),
    ("time64[ns]", "temporal", _from_list(lambda: pa.time64("ns"),
                                          lambda i: (i * 3_600_000_000_007) % 86_400 * 10 ** 9)),
    *[(f"timestamp[{u}]", "temporal", _from_list(lambda u=u: pa.timestamp(u),
                                                 lambda i: i * 1_000_003 - 5_000_000))
      for u in ("s", "ms", "us", "ns")],
    ("timestamp[us, tz=UTC]", "temporal", _from_list(lambda: pa.timestamp("us", "UTC"),
                                                     lambda i: i * 999_983)),
    ("timestamp[ns, tz=America/New_York]", "temporal",
     _from_list(lambda: pa.timestamp("ns", "America/New_York"), lambda i: i * 10 ** 12 + 7)),
    *[(f"duration[{u}]", "temporal", _from_list(lambda u=u: pa.duration(u),
                                                lambda i: i * 7919 - 40_000))
      for u in ("s", "ms", "us", "ns")],
    ("interval[month_day_nano]", "temporal", _intervals),
    ("fixed_size_binary(4)", "binary", _fixed_binary(4)),
    ("fixed_size_binary(16)", "binary", _fixed_binary(16)),
    ("binary", "binary", _strings("binary")),
    ("large_binary", "binary", _strings("large_binary")),
    ("binary_view", "binary", _strings("binary_view")),
    ("string", "binary", _strings("string")),
    ("large_string", "binary", _strings("large_string")),
    ("string_view", "binary", _strings("string_view")),
    ("list<int32>", "list", _lists("list_")),
    ("large_list<int32>", "list", _lists("large_list")),
    ("fixed_size_list<int32, 3>", "list", _lists("fixed_size_list")),
    ("list_view<int32>", "list", _lists("list_view")),
    ("large_list_view<int32>", "list", _lists("large_list_view")),
    ("struct<a: int32, b: string>", "struct", _struct),
    ("struct<> (empty)", "struct", _empty_struct),
    ("struct<e: struct<>, x: int32>", "struct", _struct_of_empty_struct),
    ("struct<s: struct<a, b>, c: bool>", "struct", _nested_struct),
    ("map<string, int32>", "map", _maps(False)),
    ("map<string, int32> (keys sorted)", "map", _maps(True)),
    ("dense_union<int32, string>", "union", _union("dense")),
    ("sparse_union<int32, string>", "union", _union("sparse")),
    ("dictionary<int8, string>", "dictionary", _dictionary("int8", "string")),
    ("dictionary<int32, string>", "dictionary", _dictionary("int32", "string")),
    ("dictionary<uint16, int64>", "dictionary", _dictionary("uint16", "int64")),
    ("run_end_encoded<int32, string>", "run-end encoded", _run_end_encoded("int32", "string")),
    ("run_end_encoded<int16, int64>", "run-end encoded", _run_end_encoded("int16", "int64")),
    ("arrow.uuid", "extension", _extension(_ext("uuid"), _uuid_storage)),
    ("arrow.json", "extension", _extension(_ext("json"), _json_storage)),
    ("arrow.opaque", "extension", _extension(_ext("opaque"), _strings("binary"))),
    ("arrow.bool8", "extension", _extension(_ext("bool8"), _ints(8, True))),
    ("arrow.fixed_shape_tensor", "extension", _tensor),
    ("arrow.variable_shape_tensor", "extension", _variable_tensor),
]

#: Rows whose values are all null whatever is asked (no non-nullable variant of them).
ALWAYS_NULL = {"null"}
#: Rows whose field carries extension metadata instead of a registered extension type.
FIELD_METADATA = {"arrow.variable_shape_tensor": VARIABLE_TENSOR_METADATA,
                  "lance.bfloat16": {b"ARROW:extension:name": b"lance.bfloat16",
                                     b"ARROW:extension:metadata": b""}}


def row_names():
    return [name for name, _, _ in CATALOGUE]


# -- variants -----------------------------------------------------------------------------------


def _mask(n):
    return pa.array([i % 6 == 5 for i in range(n)], pa.bool_())


def _offsets(n):
    """Offsets of n lists of 0..3 items, and how many items they hold."""
    offs, total = [0], 0
    for i in range(n):
        total += 0 if i % 6 == 5 else i % 4
        offs.append(total)
    return offs, total


def _list_of(values_fn, n):
    offs, total = _offsets(n)
    return pa.ListArray.from_arrays(pa.array(offs, pa.int32()), values_fn(total, True),
                                    mask=_mask(n))


def _map_of(values_fn, n):
    offs, total = _offsets(n)
    keys = pa.array([f"k{j}" for j in range(total)], pa.string())
    try:
        return pa.MapArray.from_arrays(pa.array(offs, pa.int32()), keys, values_fn(total, True),
                                       mask=_mask(n))
    except TypeError:  # old pyarrow: no mask, no null maps
        return pa.MapArray.from_arrays(pa.array(offs, pa.int32()), keys, values_fn(total, True))


def _fsl_of(values_fn, n):
    try:
        return pa.FixedSizeListArray.from_arrays(values_fn(2 * n, True), 2, mask=_mask(n))
    except TypeError:
        return pa.FixedSizeListArray.from_arrays(values_fn(2 * n, True), 2)


def _field(name, row, arr, nullable=True):
    return pa.field(name, arr.type, nullable=nullable, metadata=FIELD_METADATA.get(row))


def _struct_of(row, values_fn, n):
    """struct<v: T, nn: T not null> with null structs: children of a null struct are kept."""
    v = values_fn(n, True)
    children = [v]
    fields = [_field("v", row, v)]
    if row not in ALWAYS_NULL:
        nn = values_fn(n, False)
        children.append(nn)
        fields.append(_field("nn", row, nn, nullable=False))
    return pa.StructArray.from_arrays(children, fields=fields, mask=_mask(n))


#: (variant, how to build the column from a row's builder): each gives (field, array).
VARIANTS = ("values", "not-null", "all-null", "no-rows", "many", "in-list", "in-struct",
            "in-map", "in-fixed-size-list")


def build_case(row, values_fn, variant):
    """The one-column table ``{"v": ...}`` of ``row`` in ``variant``."""
    if variant == "values":
        arr = values_fn(N, True)
        fld = _field("v", row, arr)
    elif variant == "not-null":
        if row in ALWAYS_NULL:
            raise Inexpressible("a null column has no non-nullable form")
        arr = values_fn(N, False)
        fld = _field("v", row, arr, nullable=False)
    elif variant == "all-null":
        template = values_fn(N, True)
        arr = pa.nulls(N, template.type)
        if arr.null_count != N:  # types without a validity bitmap (unions): not expressible
            raise Inexpressible(f"{template.type} has no null values of its own")
        fld = _field("v", row, arr)
    elif variant == "no-rows":
        arr = values_fn(N, True).slice(0, 0)
        fld = _field("v", row, arr)
    elif variant == "many":
        arr = values_fn(MANY, True)
        fld = _field("v", row, arr)
    elif variant == "in-list":
        arr = _list_of(values_fn, N)
        fld = pa.field("v", pa.list_(_field("item", row, arr.values)))
        arr = arr.cast(fld.type) if FIELD_METADATA.get(row) else arr
    elif variant == "in-struct":
        arr = _struct_of(row, values_fn, N)
        fld = pa.field("v", arr.type)
    elif variant == "in-map":
        arr = _map_of(values_fn, N)
        fld = pa.field("v", arr.type)
    elif variant == "in-fixed-size-list":
        arr = _fsl_of(values_fn, N)
        fld = pa.field("v", pa.list_(_field("item", row, arr.values), 2))
        arr = arr.cast(fld.type) if FIELD_METADATA.get(row) else arr
    else:
        raise AssertionError(variant)
    table = pa.Table.from_arrays([arr], schema=pa.schema([fld]))
    # as Arrow IPC carries it: extension metadata this pyarrow knows becomes its type
    sink = pa.BufferOutputStream()
    with ipc.new_stream(sink, table.schema) as w:
        w.write_table(table)
    return ipc.open_stream(sink.getvalue()).read_all()


def case_name(index, row, variant):
    safe = "".join(c if c.isalnum() or c in "._-" else "_" for c in row).strip("_")
    return f"{index:02d}-{safe}--{variant}"


# -- running ------------------------------------------------------------------------------------


def _short(e):
    text = f"{type(e).__name__}: {e}"
    return text if len(text) < 800 else text[:800] + "..."


def save_table(path, table):
    with ipc.new_stream(path, table.schema) as w:
        w.write_table(table)


def _same(a, b):
    """'' when ``b`` holds exactly ``a``'s type and values (NaN equal to NaN), else why not."""
    if a.schema.types != b.schema.types:
        return "type"
    if a.num_rows != b.num_rows:
        return "values"
    for x, y in zip(a.columns, b.columns, strict=True):
        x, y = x.combine_chunks(), y.combine_chunks()
        if x.equals(y):
            continue
        try:  # floats: NaN != NaN in Arrow's equality; compare the bits instead
            if x.to_pylist().__repr__() == y.to_pylist().__repr__():
                continue
        except Exception:  # noqa: BLE001
            pass
        return "values"
    return ""


def _write_kwargs(storage):
    kw = release_program.write_kwargs(storage)
    return release_program._kwargs_for(lance.write_dataset, **kw)


def _read(uri):
    ds = lance.dataset(uri)
    table = ds.to_table()
    count = ds.count_rows()
    if count != table.num_rows:
        raise RuntimeError(f"count_rows {count} but the scan gave {table.num_rows}")
    return table


def _finish(folder, info):
    with open(os.path.join(folder, "case.json"), "w") as f:
        json.dump(info, f, indent=1, sort_keys=True)


def _started(folder):
    """The case's record when it was already run (a crash is recorded as such), else None."""
    path = os.path.join(folder, "case.json")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        info = json.load(f)
    if info.get("outcome") == "started":
        info["outcome"] = "crashed"
        info["error"] = f"the release's process died while {info.get('stage', 'writing')}"
        _finish(folder, info)
    return info


def write_cases(out, storage, release, rows=None):
    base = os.path.join(out, storage)
    os.makedirs(base, exist_ok=True)
    for index, (row, family, values_fn) in enumerate(CATALOGUE):
        if rows is not None and row not in rows:
            continue
        for variant in VARIANTS:
            folder = os.path.join(base, case_name(index, row, variant))
            if _started(folder) is not None:
                continue
            os.makedirs(folder, exist_ok=True)
            info = {"row": row, "family": family, "variant": variant, "order": index,
                    "storage": storage, "release": release, "pyarrow": pa.__version__}
            try:
                table = build_case(row, values_fn, variant)
            except BaseException as e:  # noqa: BLE001 - an old pyarrow lacks the type
                if isinstance(e, KeyboardInterrupt):
                    raise
                info.update(outcome="inexpressible", error=_short(e))
                _finish(folder, info)
                continue
            save_table(os.path.join(folder, "input.arrows"), table)
            info.update(input_type=str(table.schema.field("v").type), outcome="started",
                        stage="writing")
            _finish(folder, info)
            uri = os.path.join(folder, "table")
            try:
                lance.write_dataset(table, uri, **_write_kwargs(storage))
            except BaseException as e:  # noqa: BLE001 - a refusal (or a panic) is the finding
                if isinstance(e, KeyboardInterrupt):
                    raise
                info.update(outcome="refused-write", error=_short(e))
                info.pop("stage")
                _finish(folder, info)
                continue
            info["stage"] = "reading"
            _finish(folder, info)
            try:
                got = _read(uri)
            except BaseException as e:  # noqa: BLE001
                if isinstance(e, KeyboardInterrupt):
                    raise
                info.update(outcome="refused-read", error=_short(e))
                info.pop("stage")
                _finish(folder, info)
                continue
            save_table(os.path.join(folder, "read.arrows"), got)
            why = _same(table, got)
            info.pop("stage")
            info.update(outcome={"": "identical", "type": "other-type",
                                 "values": "other-values"}[why],
                        read_type=str(got.schema.field("v").type) if got.num_columns else "")
            _finish(folder, info)


def read_ours(out, storage, which="ours", prefix="ours-read"):
    """Read every ``ours/`` table the kit wrote beside a case into ``ours-read.arrows``, with
    ``ours-read.json`` saying ``read`` or ``refused-read`` (and the error), or ``crashed``.
    (``which``/``prefix``: another table of each case, such as an older release's ``table/``
    read by the newest release into ``newest-read.*``.)"""
    base = os.path.join(out, storage)
    for name in sorted(os.listdir(base)):
        folder = os.path.join(base, name)
        uri = os.path.join(folder, which)
        record = os.path.join(folder, prefix + ".json")
        marker = os.path.join(folder, prefix + ".started")
        if not os.path.isdir(uri) or os.path.exists(record):
            continue
        if os.path.exists(marker):
            _write_json(record, {"outcome": "crashed",
                                 "error": "the release's process died reading it"})
            continue
        open(marker, "w").close()
        try:
            got = _read(uri)
        except BaseException as e:  # noqa: BLE001
            if isinstance(e, KeyboardInterrupt):
                raise
            info = {"outcome": "refused-read", "error": _short(e)}
        else:
            save_table(os.path.join(folder, prefix + ".arrows"), got)
            info = {"outcome": "read"}
        _write_json(record, info)
        os.remove(marker)


def _write_json(path, doc):
    with open(path, "w") as f:
        json.dump(doc, f, indent=1, sort_keys=True)


def main(argv):
    release = f"pylance=={getattr(lance, '__version__', '?')}"
    if argv[1:2] == ["storages"]:
        print(json.dumps([s for s in release_program.storage_versions() if s]))
        return 0
    if argv[1:2] == ["write"]:
        rows = json.loads(argv[4]) if len(argv) > 4 else None  # a JSON list of row names
        write_cases(argv[2], argv[3], release, rows)
        return 0
    if argv[1:2] == ["read-ours"]:
        read_ours(argv[2], argv[3])
        return 0
    if argv[1:2] == ["read-tables"]:  # another release's tables, as the newest reads them
        read_ours(argv[2], argv[3], "table", "newest-read")
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    try:
        code = main(sys.argv)
    except Exception:
        traceback.print_exc()
        code = 3
    sys.stdout.flush()
    os._exit(code)  # some releases crash while the interpreter finalizes
