"""Hypothesis strategies for the Arrow schemas and tables Lance stores.

Every column type is named by a *kind* (:data:`KINDS`), the word an adapter uses to declare
the types it handles (``Capabilities.types``) and the fuzzer uses to leave others out:

* integers of every width, signed and unsigned; ``float16``/``float32``/``float64`` with NaN,
  infinities and -0.0 among the values drawn; ``decimal128``/``decimal256``; ``bool``;
* ``date32``/``date64``, ``time32``/``time64``, ``timestamp`` (with and without a zone),
  ``duration``;
* ``string``/``large_string`` (empty and non-ASCII values), ``binary``/``large_binary``
  (empty values), ``fixed_size_binary``;
* ``list``/``large_list``/``struct`` around any of these, ``fixed_size_list`` of numbers
  (the reference writer stores no other; nesting depth 2 at most), ``dictionary`` (int32 indices over strings);
* ``blob``: a ``large_binary`` column with the field metadata ``lance-encoding:blob``.

Nulls are drawn at every level (a null list, a null item, a null struct, a null field of
a struct), except where a storage version cannot hold them: file version 2.0 refuses null
structs (:func:`null_structs_allowed`). Tables may be empty.

A table for the fuzzer always starts with ``id`` (int64, never null, unique): predicates,
merges and row comparisons are keyed on it.
"""

from __future__ import annotations

import decimal

import numpy as np
import pyarrow as pa
from hypothesis import strategies as st

ID = "id"
BLOB_META = {b"lance-encoding:blob": b"true"}

INTS = {"int8": pa.int8(), "int16": pa.int16(), "int32": pa.int32(), "int64": pa.int64(),
        "uint8": pa.uint8(), "uint16": pa.uint16(), "uint32": pa.uint32(), "uint64": pa.uint64()}
FLOATS = {"float16": pa.float16(), "float32": pa.float32(), "float64": pa.float64()}
TEMPORAL = ("date32", "date64", "time32", "time64", "timestamp", "timestamp_tz", "duration")
BYTES = ("string", "large_string", "binary", "large_binary", "fixed_size_binary")
PRIMITIVE_KINDS = (*INTS, *FLOATS, "decimal128", "decimal256", "bool", *TEMPORAL, *BYTES)
NESTED_KINDS = ("list", "large_list", "fixed_size_list", "struct")
KINDS = (*PRIMITIVE_KINDS, *NESTED_KINDS, "dictionary", "blob")

# The kinds an ``update`` can set with a SQL literal (see conformance.strategies.scripts).
LITERAL_KINDS = (*INTS, "float32", "float64", "bool", "string", "large_string")

STORAGE_VERSIONS = ("2.0", "2.1", "2.2")

# Non-ASCII text on purpose: accents, CJK, an emoji (4-byte UTF-8), a NUL.
_ALPHABET = st.sampled_from(list("ab z") + ["é", "ß", "日", "本", "✓", "😀", "\x00"])


def null_structs_allowed(storage_version: str) -> bool:
    """Whether a file of ``storage_version`` can hold a null struct value."""
    return storage_version != "2.0"


def kind_of(t: pa.DataType, field: pa.Field | None = None) -> str:
    """The kind of an Arrow type (the outermost one for nested types)."""
    if field is not None and field.metadata and field.metadata.get(b"lance-encoding:blob"):
        return "blob"
    for name, it in (*INTS.items(), *FLOATS.items()):
        if t == it:
            return name
    checks = [
        ("decimal128", pa.types.is_decimal128), ("decimal256", pa.types.is_decimal256),
        ("bool", pa.types.is_boolean), ("date32", pa.types.is_date32),
        ("date64", pa.types.is_date64), ("time32", pa.types.is_time32),
        ("time64", pa.types.is_time64), ("duration", pa.types.is_duration),
        ("string", pa.types.is_string), ("large_string", pa.types.is_large_string),
        ("binary", pa.types.is_binary), ("large_binary", pa.types.is_large_binary),
        ("fixed_size_binary", pa.types.is_fixed_size_binary), ("list", pa.types.is_list),
        ("large_list", pa.types.is_large_list), ("fixed_size_list", pa.types.is_fixed_size_list),
        ("struct", pa.types.is_struct), ("dictionary", pa.types.is_dictionary),
    ]
    if pa.types.is_timestamp(t):
        return "timestamp_tz" if t.tz else "timestamp"
    for name, check in checks:
        if check(t):
            return name
    raise ValueError(f"no kind for {t}")


def kinds_in(t: pa.DataType) -> set[str]:
    """Every kind a type uses, its children's included."""
    out = {kind_of(t)}
    if pa.types.is_struct(t):
        for f in t:
            out |= kinds_in(f.type)
    elif pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        out |= kinds_in(t.value_type)
    return out


def _primitive_type(kind: str):
    if kind in INTS:
        return st.just(INTS[kind])
    if kind in FLOATS:
        return st.just(FLOATS[kind])
    simple = {"bool": pa.bool_(), "date32": pa.date32(), "date64": pa.date64(),
              "string": pa.string(), "large_string": pa.large_string(), "binary": pa.binary(),
              "large_binary": pa.large_binary()}
    if kind in simple:
        return st.just(simple[kind])
    if kind == "decimal128":
        return st.sampled_from([pa.decimal128(5, 2), pa.decimal128(18, 0), pa.decimal128(38, 10)])
    if kind == "decimal256":
        return st.sampled_from([pa.decimal256(40, 5), pa.decimal256(76, 20)])
    if kind == "time32":
        return st.sampled_from([pa.time32("s"), pa.time32("ms")])
    if kind == "time64":
        return st.sampled_from([pa.time64("us"), pa.time64("ns")])
    if kind == "timestamp":
        return st.sampled_from([pa.timestamp(u) for u in ("s", "ms", "us", "ns")])
    if kind == "timestamp_tz":
        return st.sampled_from([pa.timestamp("us", "UTC"), pa.timestamp("ns", "America/New_York"),
                                pa.timestamp("ms", "+05:30")])
    if kind == "duration":
        return st.sampled_from([pa.duration(u) for u in ("s", "ms", "us", "ns")])
    if kind == "fixed_size_binary":
        return st.integers(1, 5).map(pa.binary)
    raise ValueError(kind)


def arrow_types(kinds=KINDS, *, depth: int = 2):
    """A strategy over Arrow types built from ``kinds`` (nested at most ``depth`` deep).
    ``blob`` is a field property, not a type: :func:`fields` draws it."""
    prims = [k for k in kinds if k in PRIMITIVE_KINDS]
    if not prims:
        raise ValueError("at least one primitive kind is needed")
    leaf = st.sampled_from(prims).flatmap(_primitive_type)
    nested = [k for k in kinds if k in NESTED_KINDS] if depth > 0 else []
    options = [leaf]
    if "dictionary" in kinds:
        options.append(st.just(pa.dictionary(pa.int32(), pa.string())))
    if nested:
        inner = arrow_types([k for k in kinds if k != "dictionary"], depth=depth - 1)
        numeric = [k for k in prims if k in INTS or k in FLOATS] or ["int32"]
        numbers = st.sampled_from(numeric).flatmap(_primitive_type)

        def wrap(kind):
            if kind == "list":
                return inner.map(pa.list_)
            if kind == "large_list":
                return inner.map(pa.large_list)
            if kind == "fixed_size_list":  # of numbers: what every writer here stores
                return st.tuples(numbers, st.integers(1, 3)).map(lambda a: pa.list_(a[0], a[1]))
            return st.lists(inner, min_size=1, max_size=3).map(
                lambda ts: pa.struct([(f"f{i}", t) for i, t in enumerate(ts)]))

        options.append(st.sampled_from(nested).flatmap(wrap))
    return st.one_of(*options)


def fields(name: str, kinds=KINDS):
    """A nullable Arrow field named ``name`` of a type drawn from ``kinds`` (or a blob)."""
    plain = arrow_types(kinds).map(lambda t: pa.field(name, t))
    if "blob" not in kinds:
        return plain
    blob = st.just(pa.field(name, pa.large_binary(), metadata=BLOB_META))
    return st.one_of(plain, blob)


@st.composite
def schemas(draw, kinds=KINDS, *, max_columns: int = 4, prefix: str = "c"):
    """``id`` (int64, not null) and 0..``max_columns`` nullable columns ``c0``, ``c1``...
    of types drawn from ``kinds``."""
    n = draw(st.integers(0, max_columns))
    cols = [draw(fields(f"{prefix}{i}", kinds)) for i in range(n)]
    return pa.schema([pa.field(ID, pa.int64(), nullable=False), *cols])


# -- values --------------------------------------------------------------------------------

def _int_values(t: pa.DataType):
    info = np.iinfo(t.to_pandas_dtype())
    lo, hi = int(info.min), int(info.max)
    edges = sorted({lo, hi, 0, 1} | ({-1} if lo < 0 else set()))
    return st.one_of(st.sampled_from(edges), st.integers(lo, hi))


def _float_values(t: pa.DataType):
    width = {pa.float16(): 16, pa.float32(): 32, pa.float64(): 64}[t]
    edges = [0.0, -0.0, float("nan"), float("inf"), float("-inf"), 1.5]
    return st.one_of(st.sampled_from(edges), st.floats(width=width))


def _decimal_values(t: pa.DataType):
    digits = t.precision - t.scale
    bound = decimal.Decimal(10) ** min(digits, 30) - 1
    return st.decimals(min_value=-bound, max_value=bound, places=t.scale,
                       allow_nan=False, allow_infinity=False)


def _temporal_values(t: pa.DataType):
    if pa.types.is_date32(t):
        return st.integers(-(2**20), 2**20)
    if pa.types.is_date64(t):
        return st.integers(-(2**20), 2**20).map(lambda d: d * 86_400_000)
    if pa.types.is_time32(t):
        day = 86_400 if t.unit == "s" else 86_400_000
        return st.integers(0, day - 1)
    if pa.types.is_time64(t):
        day = 86_400 * (10**6 if t.unit == "us" else 10**9)
        return st.integers(0, day - 1)
    return st.one_of(st.sampled_from([0, -1, 2**62]), st.integers(-(2**62), 2**62))


def values(t: pa.DataType, *, nulls: bool = True, null_structs: bool = True):
    """A strategy over Python values of type ``t`` for ``pa.array`` (``None`` for null, at
    every nesting level when ``nulls``; never a null struct unless ``null_structs``)."""
    inner_nulls = nulls
    if pa.types.is_integer(t):
        v = _int_values(t)
    elif pa.types.is_floating(t):
        v = _float_values(t)
    elif pa.types.is_decimal(t):
        v = _decimal_values(t)
    elif pa.types.is_boolean(t):
        v = st.booleans()
    elif pa.types.is_temporal(t):
        v = _temporal_values(t)
    elif pa.types.is_string(t) or pa.types.is_large_string(t):
        v = st.text(_ALPHABET, max_size=6)
    elif pa.types.is_fixed_size_binary(t):
        v = st.binary(min_size=t.byte_width, max_size=t.byte_width)
    elif pa.types.is_binary(t) or pa.types.is_large_binary(t):
        v = st.binary(max_size=8)
    elif pa.types.is_dictionary(t):
        v = st.sampled_from(["", "a", "b", "é", "longer value"])
    elif pa.types.is_fixed_size_list(t):
        v = st.lists(values(t.value_type, nulls=inner_nulls, null_structs=null_structs),
                     min_size=t.list_size, max_size=t.list_size)
    elif pa.types.is_list(t) or pa.types.is_large_list(t):
        v = st.lists(values(t.value_type, nulls=inner_nulls, null_structs=null_structs),
                     max_size=3)
    elif pa.types.is_struct(t):
        v = st.fixed_dictionaries({f.name: values(f.type, nulls=inner_nulls,
                                                  null_structs=null_structs) for f in t})
        if not null_structs:
            return v
    else:
        raise ValueError(f"no values for {t}")
    return st.one_of(st.none(), v) if nulls else v


def column_array(values_list: list, t: pa.DataType) -> pa.Array:
    """``pa.array`` of drawn values, for every type :func:`values` draws for."""
    if pa.types.is_dictionary(t):
        return pa.array(values_list, t.value_type).dictionary_encode().cast(t)
    if t == pa.float16():
        mask = np.array([v is None for v in values_list], dtype=bool)
        arr = np.array([0.0 if v is None else v for v in values_list], dtype=np.float16)
        return pa.array(arr, t, mask=mask if mask.any() else None)
    return pa.array(values_list, t)


@st.composite
def tables(draw, schema: pa.Schema, *, ids: list[int] | None = None, min_rows: int = 0,
           max_rows: int = 8, storage_version: str = "2.2"):
    """A table of ``schema``; ``id`` holds ``ids`` when given (else 0, 1, ...). Each other
    column is drawn with no nulls, some nulls or only nulls."""
    n = len(ids) if ids is not None else draw(st.sampled_from(range(min_rows, max_rows + 1)))
    id_values = list(ids) if ids is not None else list(range(n))
    cols = []
    structs = null_structs_allowed(storage_version)
    for f in schema:
        if f.name == ID:
            cols.append(pa.array(id_values, pa.int64()))
            continue
        mode = draw(st.sampled_from(["some", "none", "all"]))
        if mode == "all" and (structs or not pa.types.is_struct(f.type)):
            vals = [None] * n
        else:
            vals = draw(st.lists(values(f.type, nulls=(mode == "some"), null_structs=structs),
                                 min_size=n, max_size=n))
        cols.append(column_array(vals, f.type))
    return pa.Table.from_arrays(cols, schema=schema)
