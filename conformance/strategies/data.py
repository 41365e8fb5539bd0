"""Deterministic tables the writer scenarios, the golden cases and the pylance scenario
factory are built from (no randomness: the same arguments give the same rows).

``small_table``, ``mixed_table``, ``nested_table`` and ``all_types_table`` are named by the
``gen`` key of an operation script's ``DATA`` object (:mod:`conformance.harness.scenarios`).
"""

from __future__ import annotations


def mixed_table(n: int, start: int = 0):
    """A table of every common column kind: ints, floats, bool, strings, binary, time,
    a list and a fixed-size list. No nulls in nested values (2.0 refuses null structs)."""
    import numpy as np
    import pyarrow as pa

    ids = np.arange(start, start + n, dtype=np.int64)
    strings = pa.array([None if i % 7 == 3 else f"s{i}" for i in ids], pa.string())
    return pa.table({
        "id": pa.array(ids),
        "i32": pa.array((ids % 1000).astype(np.int32)),
        "f64": pa.array(ids.astype(np.float64) / 3.0),
        "flag": pa.array(ids % 2 == 0),
        "name": strings,
        "blob": pa.array([bytes([i % 256]) * (i % 5) for i in ids], pa.binary()),
        "ts": pa.array(ids * 1_000_000, pa.timestamp("us")),
        "tags": pa.array([[int(i), int(i) + 1] for i in ids], pa.list_(pa.int32())),
        "vec": pa.FixedSizeListArray.from_arrays(
            pa.array(np.repeat(ids, 4).astype(np.float32)), 4),
    })


def small_table(n: int, start: int = 0):
    """Two columns only: ``id`` int64 and ``category`` string (10 distinct values)."""
    import numpy as np
    import pyarrow as pa

    ids = np.arange(start, start + n, dtype=np.int64)
    return pa.table({"id": pa.array(ids),
                     "category": pa.array([f"c{i % 10}" for i in ids], pa.string())})


def nested_table(n: int, start: int = 0):
    import numpy as np
    import pyarrow as pa

    ids = np.arange(start, start + n, dtype=np.int64)
    point = pa.StructArray.from_arrays(
        [pa.array(ids.astype(np.float64)), pa.array([f"p{i}" for i in ids])], ["x", "label"])
    items = pa.array([[{"k": int(i), "v": f"v{i}"}] * int(i % 3) for i in ids],
                     pa.list_(pa.struct([("k", pa.int64()), ("v", pa.string())])))
    return pa.table({
        "id": pa.array(ids),
        "point": point,
        "nums": pa.array([list(range(int(i % 4))) for i in ids], pa.list_(pa.int64())),
        "items": items,
        "emb": pa.FixedSizeListArray.from_arrays(
            pa.array(np.repeat(ids, 3).astype(np.float32)), 3),
        "big": pa.array([[int(i)] for i in ids], pa.large_list(pa.int16())),
    })


def all_types_table(n: int):
    """One column per Arrow type pylance 14 stores (data storage version 2.2+), a third
    of each column null: decimals, dates, times, time zones, durations, large and
    fixed-size binary, map, dictionary, list of struct, float16, uuid, tensor, null."""
    import datetime as dt
    import decimal

    import numpy as np
    import pyarrow as pa

    ids = list(range(n))
    valid = [i % 3 != 1 for i in ids]

    def col(values, t):
        return pa.array([v if ok else None for v, ok in zip(values, valid, strict=True)], t)

    uuid_storage = pa.array([bytes([i % 256]) * 16 for i in ids], pa.binary(16))
    tensor_storage = pa.FixedSizeListArray.from_arrays(
        pa.array(np.arange(4 * n, dtype=np.float32)), 4)
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "i8": col([i % 100 for i in ids], pa.int8()),
        "u64": col([2**63 + i for i in ids], pa.uint64()),
        "f16": col([np.float16(i / 4) for i in ids], pa.float16()),
        "dec": col([decimal.Decimal(i) / 1000 for i in ids], pa.decimal128(10, 3)),
        "dec256": col([decimal.Decimal(i) for i in ids], pa.decimal256(40, 5)),
        "d32": col([dt.date(2020, 1, 1) + dt.timedelta(days=i) for i in ids], pa.date32()),
        "d64": col([dt.date(2020, 1, 1) + dt.timedelta(days=i) for i in ids], pa.date64()),
        "t32": col([i for i in ids], pa.time32("ms")),
        "t64": col([i for i in ids], pa.time64("ns")),
        "ts_tz": col([i for i in ids], pa.timestamp("ns", "America/New_York")),
        "ts_utc": col([i for i in ids], pa.timestamp("s", "UTC")),
        "dur": col([i for i in ids], pa.duration("us")),
        "lbin": col([b"x" * (i % 4) for i in ids], pa.large_binary()),
        "lstr": col([f"L{i}" for i in ids], pa.large_string()),
        "fsb": col([bytes([i % 256]) * 8 for i in ids], pa.binary(8)),
        "map": col([[("k", i), ("j", -i)] for i in ids], pa.map_(pa.string(), pa.int64())),
        "dict": pa.array([f"c{i % 3}" for i in ids]).dictionary_encode(),
        "structs": col([[{"a": i, "b": f"b{i}"}] for i in ids],
                       pa.list_(pa.struct([("a", pa.int32()), ("b", pa.string())]))),
        "fsl_i": col([[i, i + 1] for i in ids], pa.list_(pa.int64(), 2)),
        "nothing": pa.nulls(n),
        "uuid": pa.ExtensionArray.from_storage(pa.uuid(), uuid_storage),
        "tensor": pa.ExtensionArray.from_storage(pa.fixed_shape_tensor(pa.float32(), [2, 2]),
                                                 tensor_storage),
    })
