"""``lance-conformance dump``: write one version of a dataset, as the reference reader
scans it, to an Arrow IPC file or to JSON lines.

Usage::

    lance-conformance dump URI [--version N|TAG] [--branch NAME] [--columns a,b]
                           [--with-row-id] [--with-row-address] --out FILE.arrow|FILE.jsonl
    lance-conformance dump URI [--version N|TAG] [--branch NAME] --index NAME --out FILE

``--index NAME`` writes the logical content of that index instead of the rows, as
:mod:`reference_impl.index` decodes it: one row per entry, a leading ``segment`` column (the
uuid of the segment holding it) and the kind's columns (BTREE: ``value``, ``row_id``,
``page``; BITMAP and LABEL_LIST: ``value``, ``row_id``, ``key``). An index kind or layout
the reader does not know is refused (exit 1) with what it is.

``.arrow`` (or ``.ipc``/``.feather``) writes an Arrow IPC **file** with the exact scan
schema. ``.jsonl``/``.json`` writes one JSON object per row, keys in column order, with
this language-neutral value encoding (stable across runs and implementations):

==============================  =============================================================
Arrow type                      JSON value
==============================  =============================================================
null (any type)                 ``null``
bool                            ``true`` / ``false``
integers (8-64 bit)             an exact JSON integer (no rounding, also above 2**53)
float16/32/64                   a JSON number (shortest round-trip form); ``"NaN"``,
                                ``"Infinity"``, ``"-Infinity"`` as strings; ``-0.0`` kept
decimal128/256                  a string, e.g. ``"-12.340"`` (scale digits kept)
utf8, large_utf8                a string
binary, large_binary,           standard base64 (RFC 4648, with padding) of the bytes
fixed_size_binary
date32/date64                   ``"YYYY-MM-DD"`` (date64 truncated to the day)
timestamp[unit, tz]             ISO 8601 with the unit's digits, ``"2024-01-02T03:04:05.123456"``;
                                a ``"Z"`` suffix when the type has a time zone (values are UTC)
time32/time64                   ``"HH:MM:SS"`` plus the unit's fraction digits
duration[unit]                  an integer count of the unit
list, large_list,               a JSON array
fixed_size_list
struct                          a JSON object (child names as keys, in order)
dictionary                      the decoded value
map                             a JSON array of ``[key, value]`` pairs
==============================  =============================================================

Exit codes: 0 written, 1 the dataset could not be read (a format error), 2 usage error or
an unreachable store.
"""

from __future__ import annotations

import base64
import json
import math
import sys

import numpy as np
import pyarrow as pa


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "dump",
        help="write a dataset version's rows to Arrow IPC or JSON lines",
        description=__doc__.split("\n\n")[0],
    )
    p.add_argument("uri", help="dataset URI (a path, file://, s3://, memory://)")
    p.add_argument("--version", default=None, help="version number or tag (default: latest)")
    p.add_argument("--branch", default=None, help="branch name (default: main)")
    p.add_argument(
        "--columns", default=None, help="comma-separated top-level columns (default: all)"
    )
    p.add_argument("--with-row-id", action="store_true", help="add the _rowid column")
    p.add_argument("--with-row-address", action="store_true", help="add the _rowaddr column")
    p.add_argument("--index", default=None, metavar="NAME",
                   help="write the logical content of index NAME instead of the rows")
    p.add_argument("--out", required=True, help="output file: *.arrow (IPC file) or *.jsonl")
    p.set_defaults(func=run)


def run(args) -> int:
    from reference_impl.dataset import open_dataset
    from reference_impl.errors import LanceError, NotFound, StoreError
    from reference_impl.scan import to_table

    out = args.out
    kind = (
        "jsonl"
        if out.endswith((".jsonl", ".json"))
        else "arrow"
        if out.endswith((".arrow", ".ipc", ".feather"))
        else None
    )
    if kind is None:
        print(
            "lance-conformance dump: --out must end in .arrow, .ipc, .feather, .jsonl or .json",
            file=sys.stderr,
        )
        return 2
    version = args.version
    if version is not None and version.isdigit():
        version = int(version)
    columns = [c for c in args.columns.split(",") if c] if args.columns is not None else None
    try:
        ds = open_dataset(args.uri, version, branch=args.branch)
        if getattr(args, "index", None):
            from reference_impl.index.of_dataset import entries

            table = entries(ds, args.index)
        else:
            table = to_table(
                ds,
                columns=columns,
                with_row_id=args.with_row_id,
                with_row_address=args.with_row_address,
            )
    except (NotFound, StoreError) as exc:
        print(f"lance-conformance dump: {exc}", file=sys.stderr)
        return 2
    except LanceError as exc:
        print(f"lance-conformance dump: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2 if isinstance(exc, ValueError) else 1
    if kind == "arrow":
        with pa.OSFile(out, "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
            writer.write_table(table)
    else:
        with open(out, "w", encoding="utf-8") as fh:
            write_jsonl(table, fh)
    print(f"wrote {table.num_rows} rows x {table.num_columns} columns to {out}", file=sys.stderr)
    return 0


# -- JSON lines --------------------------------------------------------------------------------


def write_jsonl(table: pa.Table, fh) -> None:
    """Write ``table`` to ``fh`` as JSON lines with the encoding of the module docstring."""
    names = table.column_names
    cols = [encode_array(table.column(i).combine_chunks()) for i in range(table.num_columns)]
    for row in range(table.num_rows):
        obj = {name: col[row] for name, col in zip(names, cols, strict=False)}
        fh.write(json.dumps(obj, ensure_ascii=False, allow_nan=False, separators=(",", ":")))
        fh.write("\n")


def encode_array(arr: pa.Array) -> list:
    """The JSON values of every slot of ``arr`` (vectorised per leaf, recursive for nesting)."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    t = arr.type
    valid = (
        np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), bool)
        if len(arr)
        else np.zeros(0, bool)
    )
    if pa.types.is_dictionary(t):
        return encode_array(arr.dictionary_decode())
    if isinstance(t, pa.BaseExtensionType):
        return encode_array(arr.storage)
    if pa.types.is_map(t):
        keys = encode_array(arr.keys)
        items = encode_array(arr.items)
        offs = np.asarray(arr.offsets.to_numpy(zero_copy_only=False))
        pairs = [[k, v] for k, v in zip(keys, items, strict=False)]
        return [pairs[offs[i] : offs[i + 1]] if valid[i] else None for i in range(len(arr))]
    if pa.types.is_struct(t):
        children = [encode_array(arr.field(i)) for i in range(t.num_fields)]
        names = [t.field(i).name for i in range(t.num_fields)]
        return (
            [
                dict(zip(names, vals, strict=False)) if ok else None
                for ok, vals in zip(valid, zip(*children, strict=False), strict=False)
            ]
            if children
            else [({} if ok else None) for ok in valid]
        )
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        if pa.types.is_fixed_size_list(t):
            values = encode_array(
                arr.values.slice(arr.offset * t.list_size, len(arr) * t.list_size)
            )
            offs = np.arange(len(arr) + 1) * t.list_size
        else:
            offs = np.asarray(arr.offsets.to_numpy(zero_copy_only=False), np.int64)
            base = int(offs[0]) if len(offs) else 0
            values = encode_array(arr.values.slice(base, int(offs[-1]) - base if len(offs) else 0))
            offs = offs - base
        return [values[offs[i] : offs[i + 1]] if valid[i] else None for i in range(len(arr))]
    return _leaf(arr, t, valid)


def _leaf(arr: pa.Array, t: pa.DataType, valid: np.ndarray) -> list:
    if pa.types.is_null(t):
        return [None] * len(arr)
    if pa.types.is_boolean(t) or pa.types.is_integer(t):
        vals = arr.to_pylist()
        return vals
    if pa.types.is_floating(t):
        vals = np.asarray(
            arr.cast(pa.float64()).fill_null(0).to_numpy(zero_copy_only=False), np.float64
        )
        return [_float(v) if ok else None for v, ok in zip(vals.tolist(), valid, strict=False)]
    if pa.types.is_decimal(t):
        return [None if v is None else format(v, "f") for v in arr.to_pylist()]
    if (
        pa.types.is_string(t)
        or pa.types.is_large_string(t)
        or getattr(pa.types, "is_string_view", lambda _: False)(t)
    ):
        return arr.to_pylist()
    if (
        pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
        or pa.types.is_fixed_size_binary(t)
        or getattr(pa.types, "is_binary_view", lambda _: False)(t)
    ):
        return [None if v is None else base64.b64encode(v).decode("ascii") for v in arr.to_pylist()]
    if pa.types.is_date(t):
        days = np.asarray(
            arr.cast(pa.date32()).cast(pa.int32()).fill_null(0).to_numpy(zero_copy_only=False)
        ).astype("datetime64[D]")
        text = np.datetime_as_string(days, unit="D")
        return [s if ok else None for s, ok in zip(text.tolist(), valid, strict=False)]
    if pa.types.is_timestamp(t):
        raw = np.asarray(arr.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False)).astype(
            f"datetime64[{t.unit}]"
        )
        text = np.datetime_as_string(raw, unit=t.unit)
        suffix = "Z" if t.tz else ""
        return [s + suffix if ok else None for s, ok in zip(text.tolist(), valid, strict=False)]
    if pa.types.is_time(t):
        width = {"s": 0, "ms": 3, "us": 6, "ns": 9}[t.unit]
        raw = np.asarray(
            arr.cast(pa.int64() if t.bit_width == 64 else pa.int32())
            .fill_null(0)
            .to_numpy(zero_copy_only=False)
        ).astype(np.int64)
        per_sec = 10**width
        secs, frac = np.divmod(raw, per_sec)
        out = []
        for s, f, ok in zip(secs.tolist(), frac.tolist(), valid, strict=False):
            if not ok:
                out.append(None)
                continue
            text = f"{s // 3600:02d}:{s // 60 % 60:02d}:{s % 60:02d}"
            out.append(text + (f".{f:0{width}d}" if width else ""))
        return out
    if pa.types.is_duration(t):
        return arr.cast(pa.int64()).to_pylist()
    if pa.types.is_interval(t):
        return [None if v is None else [v.months, v.days, v.nanoseconds] for v in arr.to_pylist()]
    raise TypeError(f"no JSON encoding for {t}")


def _float(v: float):
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "Infinity" if v > 0 else "-Infinity"
    return v
