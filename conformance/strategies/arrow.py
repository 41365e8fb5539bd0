"""Random Arrow columns for the 2.0 and legacy file tests (hypothesis-driven).

``arrow_tables(types, ...)`` draws tables whose columns mix every null pattern the
readers must handle: no nulls, some nulls, all nulls, empty lists, nulls inside lists,
low-cardinality strings (which 2.0 dictionary-encodes from 100 rows on).
"""

from __future__ import annotations

import decimal

import numpy as np
import pyarrow as pa
from hypothesis import strategies as st

PRIMITIVES = {
    "int8": pa.int8(),
    "int16": pa.int16(),
    "int32": pa.int32(),
    "int64": pa.int64(),
    "uint8": pa.uint8(),
    "uint16": pa.uint16(),
    "uint32": pa.uint32(),
    "uint64": pa.uint64(),
    "float16": pa.float16(),
    "float32": pa.float32(),
    "float64": pa.float64(),
    "bool": pa.bool_(),
    "date32": pa.date32(),
    "date64": pa.date64(),
    "time32": pa.time32("ms"),
    "time64": pa.time64("us"),
    "timestamp": pa.timestamp("us"),
    "timestamp_tz": pa.timestamp("ns", tz="UTC"),
    "duration": pa.duration("ms"),
    "decimal128": pa.decimal128(12, 3),
    "decimal256": pa.decimal256(40, 5),
    "fixed_size_binary": pa.binary(6),
    "utf8": pa.string(),
    "large_utf8": pa.large_string(),
    "binary": pa.binary(),
    "large_binary": pa.large_binary(),
}


def column(data_type: pa.DataType, n: int, seed: int, null_mode: str) -> pa.Array:
    """A deterministic pseudo-random column of ``n`` values; ``null_mode`` none/some/all."""
    rng = np.random.default_rng(seed)
    if null_mode == "all":
        if pa.types.is_struct(data_type):  # null structs are refused by 2.0: null children
            return pa.StructArray.from_arrays(
                [pa.nulls(n, f.type) for f in data_type], fields=list(data_type)
            )
        return pa.nulls(n, data_type)
    mask = rng.random(n) < 0.3 if null_mode == "some" else np.zeros(n, bool)
    return _values(data_type, n, rng, mask)


def _values(t: pa.DataType, n: int, rng, mask) -> pa.Array:
    m = np.asarray(mask, bool) if mask.any() else None
    if pa.types.is_boolean(t):
        return pa.array(rng.random(n) < 0.5, t, mask=m)
    if pa.types.is_integer(t):
        info = np.iinfo(t.to_pandas_dtype())
        v = rng.integers(info.min, info.max, n, dtype=t.to_pandas_dtype(), endpoint=True)
        return pa.array(v, t, mask=m)
    if pa.types.is_floating(t):
        v = rng.normal(0, 1e3, n)
        v[rng.random(n) < 0.05] = np.nan
        return pa.array(v.astype(t.to_pandas_dtype()), t, mask=m)
    if pa.types.is_date32(t) or pa.types.is_time32(t):
        return pa.array(rng.integers(0, 80000, n).astype(np.int32), pa.int32(), mask=m).cast(t)
    if pa.types.is_date64(t):
        return pa.array(
            rng.integers(0, 80000, n).astype(np.int64) * 86400000, pa.int64(), mask=m
        ).cast(t)
    if pa.types.is_time64(t) or pa.types.is_timestamp(t) or pa.types.is_duration(t):
        return pa.array(rng.integers(0, 2**40, n).astype(np.int64), pa.int64(), mask=m).cast(t)
    if pa.types.is_decimal(t):
        vals = [
            None
            if mask[i]
            else decimal.Decimal(int(rng.integers(-(10**9), 10**9))).scaleb(-t.scale)
            for i in range(n)
        ]
        return pa.array(vals, t)
    if pa.types.is_fixed_size_binary(t):
        return pa.array([None if mask[i] else rng.bytes(t.byte_width) for i in range(n)], t)
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        pool = ["", "a", "bb", "héllo", "zzz", "x" * 40] if rng.random() < 0.5 else None
        vals = [
            None
            if mask[i]
            else (pool[rng.integers(len(pool))] if pool else f"s{rng.integers(1 << 30)}")
            for i in range(n)
        ]
        return pa.array(vals, t)
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return pa.array(
            [None if mask[i] else rng.bytes(int(rng.integers(0, 12))) for i in range(n)], t
        )
    if pa.types.is_fixed_size_list(t):
        inner_mask = rng.random(n * t.list_size) < (0.2 if mask.any() else 0)
        items = _values(t.value_type, n * t.list_size, rng, inner_mask)
        return pa.FixedSizeListArray.from_arrays(
            items, type=t, mask=pa.array(mask) if m is not None else None
        )
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        lengths = rng.integers(0, 4, n)
        lengths[mask] = 0
        offsets = np.concatenate([[0], np.cumsum(lengths)])
        inner_mask = rng.random(int(offsets[-1])) < (0.2 if mask.any() else 0)
        items = _values(t.value_type, int(offsets[-1]), rng, inner_mask)
        cls = pa.LargeListArray if pa.types.is_large_list(t) else pa.ListArray
        return cls.from_arrays(
            pa.array(offsets, pa.int64() if pa.types.is_large_list(t) else pa.int32()),
            items,
            type=t,
            mask=pa.array(mask) if m is not None else None,
        )
    if pa.types.is_struct(t):
        children = [_values(f.type, n, rng, rng.random(n) < (0.2 if mask.any() else 0)) for f in t]
        return pa.StructArray.from_arrays(children, fields=list(t))
    raise NotImplementedError(str(t))


def nested_types(allow_struct_nulls: bool = False):
    """A strategy over the Arrow types to test: primitives and one level of nesting."""
    prim = st.sampled_from(sorted(PRIMITIVES)).map(PRIMITIVES.__getitem__)
    return st.one_of(
        prim,
        prim.map(pa.list_),
        prim.map(pa.large_list),
        st.sampled_from(["int32", "float32", "float64", "int64"]).map(
            lambda k: pa.list_(PRIMITIVES[k], 4)
        ),
        st.lists(prim, min_size=1, max_size=3).map(
            lambda ts: pa.struct([(f"f{i}", x) for i, x in enumerate(ts)])
        ),
        prim.map(lambda x: pa.list_(pa.struct([("v", x)]))),
        prim.map(lambda x: pa.list_(pa.list_(x))),
    )


@st.composite
def arrow_tables(draw, max_rows: int = 300, max_cols: int = 4):
    """(table, batches) with 1-4 columns of random types, null patterns and lengths."""
    n = draw(st.one_of(st.just(0), st.integers(1, max_rows), st.just(150)))
    ncols = draw(st.integers(1, max_cols))
    cols = {}
    for i in range(ncols):
        t = draw(nested_types())
        mode = draw(st.sampled_from(["none", "some", "all"]))
        seed = draw(st.integers(0, 2**31))
        cols[f"c{i}"] = column(t, n, seed, mode)
    return pa.table(cols)


def _norm(v):
    if isinstance(v, float) and v != v:
        return "NaN"
    if isinstance(v, list):
        return [_norm(x) for x in v]
    if isinstance(v, tuple):
        return tuple(_norm(x) for x in v)
    if isinstance(v, dict):
        return {k: _norm(x) for k, x in v.items()}
    return v


def same_table(a: pa.Table, b: pa.Table) -> bool:
    """Equal schemas and values, with NaN equal to NaN (``Table.equals`` says NaN != NaN)."""
    if a.schema != b.schema or a.num_rows != b.num_rows:
        return False
    if a.equals(b):
        return True
    from conformance.engine.compare import plain

    return all(
        _norm(plain(a.column(i)).to_pylist()) == _norm(plain(b.column(i)).to_pylist())
        for i in range(a.num_columns)
    )
