"""Legacy page statistics (spec 001 "Statistics").

A legacy (0.1) file may carry per-page statistics: ``Metadata.statistics`` holds their
own field list (``schema``), the ids of its fields in page table order (``fields``) and
the position of a page table with one batch. The statistics schema is one top-level
struct per data field, named by the field id::

    <field_id>: struct
        null_count: i64
        min_value:  <the field's type>
        max_value:  <the field's type>

Each statistics column holds one value per data page (batch). Any member may be
missing and unknown members are ignored.

Bounds (checked by :func:`check_page_bounds`):

* ``min <= every non-null value <= max``; the bounds need not occur in the page;
* integers, dates and timestamps with only nulls use the type's representable extremes;
* floats: NaN is ignored; an all-null page uses -Inf/+Inf; a zero max is recorded as
  +0.0 and a zero min as -0.0;
* binary/string: unknown or unrepresentable bounds are null; bounds may be truncated
  (a truncated min sorts at or below every value, a truncated max at or above).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from reference_impl.errors import FormatError

RULE_STATS_LAYOUT = "STATS-001"


@dataclass
class PageStats:
    """The statistics of one data field: one entry per page (batch)."""

    field_id: int
    null_count: np.ndarray | None  # int64 per page, or None when absent
    min_value: pa.Array | None
    max_value: pa.Array | None


def read_page_stats(legacy_file) -> dict[int, PageStats]:
    """Decode the statistics of a :class:`reference_impl.file.legacy.LegacyFile`.

    Returns ``{data field id: PageStats}``; an empty dict when the file has none. The
    statistics schema's ``logical_type`` strings give the types (the STATS-006 check
    compares them with the data fields').

    Statistics that cannot be read are STATS-001, whatever part of them is broken: a
    statistics schema that is not a sound field list (a parent id naming no field or listed
    after its child, an id used twice, an unknown type: what SCHEMA-001..004 report in a
    manifest), or a statistics page that lies outside the file. The message keeps the
    underlying rule. pylance 14.0.2 refuses a file whose statistics schema has an unknown
    type or a parent it has not yet seen ("Field '0' (id=0) references parent id -17") when
    it opens it; it reads one with an id used twice (it never reads the statistics), but
    then "each of these field ids corresponds to a field in the stats_schema" cannot hold.
    """
    try:
        return _read_page_stats(legacy_file)
    except FormatError as exc:
        if exc.rule == RULE_STATS_LAYOUT:
            raise
        raise FormatError(f"statistics not readable: {exc.message}"
                          + (f" ({exc.rule})" if exc.rule else ""),
                          rule=RULE_STATS_LAYOUT, path=exc.path or legacy_file.path,
                          offset=exc.offset) from exc


def _read_page_stats(legacy_file) -> dict[int, PageStats]:
    from reference_impl.table.schema import check_parents_listed_first, fields_to_arrow

    meta = legacy_file.metadata
    if not meta.HasField("statistics") or not meta.statistics.schema:
        return {}
    st = meta.statistics
    schema_fields = list(st.schema)
    ids = list(st.fields)
    known = {f.id for f in schema_fields}
    if any(i not in known for i in ids):
        raise FormatError(
            "statistics fields name ids missing from the statistics schema",
            rule=RULE_STATS_LAYOUT,
            path=legacy_file.path,
        )
    table = legacy_file.page_table(len(ids), st.page_table_position, 1)
    pages = legacy_file.num_batches
    from reference_impl.file.legacy import _ColumnReader

    reader = _ColumnReader(
        legacy_file, table, {fid: i for i, fid in enumerate(ids)}, {f.id: f for f in schema_fields}
    )
    schema = fields_to_arrow(schema_fields)
    check_parents_listed_first(schema_fields)
    out: dict[int, PageStats] = {}
    for top in schema:
        try:
            field_id = int(top.name)
        except ValueError:
            continue  # not a statistics struct: ignored, as the spec asks
        if not pa.types.is_struct(top.type):
            continue
        members = {}
        for child in top.type:
            if child.name in ("null_count", "min_value", "max_value"):
                members[child.name] = reader.read(child, 0, pages)
        nc = members.get("null_count")
        out[field_id] = PageStats(
            field_id,
            None if nc is None else np.asarray(nc.to_numpy(zero_copy_only=False), np.int64),
            members.get("min_value"),
            members.get("max_value"),
        )
    return out


# -- bounds ----------------------------------------------------------------------------------


@dataclass
class BoundViolation:
    field_id: int
    page: int
    rule: str
    message: str


def _extremes(t: pa.DataType):
    if pa.types.is_integer(t):
        info = np.iinfo(t.to_pandas_dtype())
        return int(info.min), int(info.max)
    if pa.types.is_date32(t) or pa.types.is_time32(t):
        return -(2**31), 2**31 - 1
    if (
        pa.types.is_date64(t)
        or pa.types.is_timestamp(t)
        or pa.types.is_time64(t)
        or pa.types.is_duration(t)
    ):
        return -(2**63), 2**63 - 1
    return None


def _as_int(arr: pa.Array) -> np.ndarray:
    t = arr.type
    if pa.types.is_integer(t):
        return np.asarray(arr.to_numpy(zero_copy_only=False))
    width = t.bit_width
    return np.asarray(
        arr.view(pa.int32() if width == 32 else pa.int64()).to_numpy(zero_copy_only=False)
    )


def check_page_bounds(
    stats: PageStats, page_values: list[pa.Array], *, nulls_unmarked: bool = True
) -> list[BoundViolation]:
    """Check one field's statistics against the pages' values.

    ``page_values[i]`` is page *i* as read. With ``nulls_unmarked`` (legacy plain pages keep
    no validity: a null slot reads back as whatever placeholder the writer's buffer held,
    often 0), up to ``null_count`` values per page may lie outside the bounds, since they
    may be those placeholders.
    """
    out: list[BoundViolation] = []
    fid = stats.field_id
    for page, values in enumerate(page_values):
        n = len(values)
        nc = None if stats.null_count is None else int(stats.null_count[page])
        if nc is not None and not 0 <= nc <= n:
            out.append(BoundViolation(fid, page, "STATS-002", f"null_count {nc} outside 0..{n}"))
        elif nc is not None and not nulls_unmarked and values.null_count > nc:
            msg = f"page has {values.null_count} nulls, null_count says {nc}"
            out.append(BoundViolation(fid, page, "STATS-002", msg))
        # one-slot slices, not scalars: a date bound at the type's extreme has no Python value
        lo = None if stats.min_value is None else stats.min_value.slice(page, 1)
        hi = None if stats.max_value is None else stats.max_value.slice(page, 1)
        out.extend(_check_one(fid, page, values, lo, hi, nc, nulls_unmarked))
    return out


def _fixed(t: pa.DataType) -> bool:
    return (
        pa.types.is_integer(t)
        or pa.types.is_floating(t)
        or pa.types.is_temporal(t)
        or pa.types.is_boolean(t)
    )


def _var(t: pa.DataType) -> bool:
    return (
        pa.types.is_string(t)
        or pa.types.is_large_string(t)
        or pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
    )


def _check_one(fid, page, values: pa.Array, lo, hi, nc, nulls_unmarked) -> list[BoundViolation]:
    t = values.type
    n = len(values)
    all_null = nc is not None and nc == n and n > 0
    out = []
    if pa.types.is_floating(t):
        lo_v = None if not _valid(lo) else float(lo.cast(pa.float64())[0].as_py())
        hi_v = None if not _valid(hi) else float(hi.cast(pa.float64())[0].as_py())
        if all_null:
            if lo_v is not None and lo_v != -np.inf or hi_v is not None and hi_v != np.inf:
                out.append(
                    BoundViolation(
                        fid,
                        page,
                        "STATS-004",
                        f"all-null float page: min/max must be -Inf/+Inf, found {lo_v}/{hi_v}",
                    )
                )
            return out
        if hi_v == 0.0 and np.signbit(hi_v):
            out.append(
                BoundViolation(
                    fid, page, "STATS-005", "a zero max must be recorded as +0.0, found -0.0"
                )
            )
        if lo_v == 0.0 and not np.signbit(lo_v):
            out.append(
                BoundViolation(
                    fid, page, "STATS-005", "a zero min must be recorded as -0.0, found +0.0"
                )
            )
        v = np.asarray(values.to_numpy(zero_copy_only=False), np.float64)
        v = v[~np.isnan(v)]
        out.extend(_outside(fid, page, v, lo_v, hi_v, nc if nulls_unmarked else 0))
        return out
    ext = _extremes(t)
    if ext is not None:
        lo_v = None if not _valid(lo) else int(_as_int(lo)[0])
        hi_v = None if not _valid(hi) else int(_as_int(hi)[0])
        if all_null:
            if (lo_v, hi_v) != ext and not (lo_v is None and hi_v is None):
                out.append(
                    BoundViolation(
                        fid,
                        page,
                        "STATS-004",
                        f"all-null page: min/max must be {ext}, found {(lo_v, hi_v)}",
                    )
                )
            return out
        v = _as_int(values.fill_null(0)) if nulls_unmarked else _as_int(values.drop_null())
        out.extend(_outside(fid, page, v, lo_v, hi_v, nc if nulls_unmarked else 0))
        return out
    if _var(t):
        lo_b = None if not _valid(lo) else _bytes(lo[0].as_py())
        hi_b = None if not _valid(hi) else _bytes(hi[0].as_py())
        vals = [_bytes(x) for x in values.drop_null().to_pylist()]
        bad = [
            x for x in vals if (lo_b is not None and x < lo_b) or (hi_b is not None and x > hi_b)
        ]
        if bad:
            out.append(
                BoundViolation(
                    fid,
                    page,
                    "STATS-003",
                    f"{len(bad)} values outside [{lo_b!r}, {hi_b!r}], e.g. {bad[0]!r}",
                )
            )
        return out
    if pa.types.is_boolean(t):
        lo_v = None if not _valid(lo) else bool(lo[0].as_py())
        hi_v = None if not _valid(hi) else bool(hi[0].as_py())
        v = np.asarray(values.fill_null(False).to_numpy(zero_copy_only=False), np.int64)
        out.extend(
            _outside(
                fid,
                page,
                v,
                None if lo_v is None else int(lo_v),
                None if hi_v is None else int(hi_v),
                nc if nulls_unmarked else 0,
            )
        )
    return out


def _valid(bound: pa.Array | None) -> bool:
    return bound is not None and len(bound) == 1 and bound.null_count == 0


def _bytes(x) -> bytes:
    return x.encode() if isinstance(x, str) else bytes(x)


def _outside(fid, page, v: np.ndarray, lo, hi, allowance) -> list[BoundViolation]:
    bad = np.zeros(len(v), bool)
    if lo is not None:
        bad |= v < lo
    if hi is not None:
        bad |= v > hi
    if not bad.any():
        return []
    if int(bad.sum()) <= (allowance or 0):
        return []  # no more than null_count slots, which may be null placeholders
    first = v[bad][0]
    return [
        BoundViolation(
            fid, page, "STATS-003", f"{int(bad.sum())} values outside [{lo}, {hi}], e.g. {first}"
        )
    ]
