"""STATS-001..020: legacy page statistics (spec 001 "Statistics"); STATS-007 warns on
statistics fields the spec does not describe.

Legacy (0.1) files written by pylance 14.0.2 still carry page statistics: one struct per
data field named by its id, with ``null_count`` (i64), ``min_value`` and ``max_value`` (the
field's type), one value per page (batch). These deep checks decode them with
:func:`reference_impl.table.stats.read_page_stats`, read each page with the legacy
reader, and check the bounds of the spec.

Legacy plain pages keep no validity: a null slot reads back as whatever placeholder the
writer's Arrow buffer held there (often 0, but pylance 14.0.2 keeps any stale value), and
a var-binary page cannot tell a null from an empty value. So the value-based checks allow
up to ``null_count`` slots per page outside the bounds, and ``null_count`` is only checked
to lie in ``0..page rows``.
"""

from __future__ import annotations

from reference_impl.errors import FormatError, LanceError, NotFound

from .file_v2_0 import _arrow_errors, version_dictionaries
from .registry import Finding, Scope, rule

_SEC = "Statistic values"


def _stats_and_pages(ctx):
    """(stats by field id, pages by field id, error) for a legacy data file, cached. Running
    out of memory is no finding: the MemoryError is kept and raised to every rule that asks
    (the engine reports ENGINE-003), so the pages are read once."""
    if "legacy_stats" in ctx.cache:
        cached = ctx.cache["legacy_stats"]
        if isinstance(cached, MemoryError):
            raise MemoryError(str(cached))
        return cached
    from conformance.rules.file_v2_0 import file_kind

    result = ({}, {}, None)
    if file_kind(ctx.data_file) == "legacy":
        try:
            result = _compute(ctx)
        except FormatError as exc:
            result = ({}, {}, exc)
        except MemoryError as exc:
            ctx.cache["legacy_stats"] = MemoryError(str(exc))  # without the read's frames
            raise MemoryError(str(exc)) from None
        except NotFound:
            pass  # no data file to hold statistics: DATAFILE-001 reports it
        except LanceError as exc:
            result = ({}, {}, FormatError(str(exc), rule="STATS-001", path=ctx.file_key))
        except _arrow_errors() as exc:
            # a data page that pyarrow refuses (invalid UTF-8, wrong length) is the page's
            # fault, reported by FILE-063; the statistics cannot be compared with it
            result = ({}, {}, FormatError(f"data page not readable: {exc}", rule="FILE-063",
                                          path=ctx.file_key))
    ctx.cache["legacy_stats"] = result
    return result


def _compute(ctx):
    import pyarrow as pa

    from reference_impl.file.legacy import _ColumnReader, open_legacy
    from reference_impl.table.schema import fields_to_arrow, project
    from reference_impl.table.stats import read_page_stats

    lf = open_legacy(store=ctx.file_store, key=ctx.file_key)
    stats = read_page_stats(lf)
    if not stats:
        return {}, {}, None
    ids = [i for i in ctx.data_file.fields if i >= 0]
    known = {f.id for f in ctx.version.manifest.fields}
    fields = project(list(ctx.version.manifest.fields), [i for i in ids if i in known])
    by_id = {}

    def walk(f):
        by_id[int(f.metadata[b"lance:field_id"])] = f
        t = f.type
        if pa.types.is_struct(t):
            for c in t:
                walk(c)
        elif pa.types.is_list(t) or pa.types.is_large_list(t):
            walk(t.value_field)

    for f in fields_to_arrow(fields, extensions=False):  # statistics hold storage values
        walk(f)
    lo = min(ids) if ids else 0
    reader = _ColumnReader(
        lf,
        lf.page_table(max(ids) - lo + 1 if ids else 0),
        {fid: fid - lo for fid in ids},
        {f.id: f for f in fields},
        version_dictionaries(ctx.version),
    )
    pages = {}
    for fid in stats:
        af = by_id.get(fid)
        if af is None and lf.own_field(fid) is not None:
            # a field the file holds but this version no longer reads (dropped, or left
            # behind by a column rewrite): its statistics describe pages nobody reads
            continue
        if af is None:
            raise FormatError(
                f"statistics for field {fid}, which the file does not hold",
                rule="STATS-001",
                path=ctx.file_key,
            )
        if (
            pa.types.is_struct(af.type)
            or pa.types.is_list(af.type)
            or pa.types.is_large_list(af.type)
        ):
            continue
        pages[fid] = [reader.read(af, b, n) for b, n in enumerate(lf.batch_sizes())]
        st = stats[fid]
        for name, arr in (("min_value", st.min_value), ("max_value", st.max_value)):
            if arr is not None and arr.type != af.type:
                raise FormatError(
                    f"{name} of field {fid} is {arr.type}, the field is {af.type}",
                    rule="STATS-006",
                    path=ctx.file_key,
                )
            if arr is not None and len(arr) != lf.num_batches:
                raise FormatError(
                    f"{name} of field {fid} has {len(arr)} values for {lf.num_batches} pages",
                    rule="STATS-001",
                    path=ctx.file_key,
                )
    return stats, pages, None


def _violations(ctx):
    if "legacy_stats_violations" in ctx.cache:
        return ctx.cache["legacy_stats_violations"]
    from reference_impl.table.stats import check_page_bounds

    stats, pages, _ = _stats_and_pages(ctx)
    out = []
    for fid, vals in pages.items():
        out.extend(check_page_bounds(stats[fid], vals))
    ctx.cache["legacy_stats_violations"] = out
    return out


def _by_rule(ctx, rule_id):
    _, _, err = _stats_and_pages(ctx)
    if err is not None:
        if err.rule == rule_id:
            yield Finding(err.message, {"file": ctx.file_key, "offset": err.offset})
        return
    for v in _violations(ctx):
        if v.rule == rule_id:
            yield Finding(v.message, {"file": ctx.file_key, "field_id": v.field_id, "page": v.page})


@rule(
    "STATS-001",
    title="legacy statistics are readable and have one value per page",
    severity="error",
    spec="001",
    section="Page-level statistics format",
    scope=Scope.DATA_FILE,
    deep=True,
    clause="Page-level statistics are stored as arrays within the Lance file. Each array contains "
    "one page long and is num_pages long.",
)
def check_stats_001(ctx):
    yield from _by_rule(ctx, "STATS-001")


@rule(
    "STATS-002",
    title="null_count is a possible null count of its page",
    severity="error",
    spec="001",
    section=_SEC,
    scope=Scope.DATA_FILE,
    deep=True,
    clause="Three types of statistics are stored per column: null count, min value, max value.",
)
def check_stats_002(ctx):
    yield from _by_rule(ctx, "STATS-002")


@rule(
    "STATS-003",
    title="min <= every non-null value <= max (NaN ignored)",
    severity="error",
    spec="001",
    section=_SEC,
    scope=Scope.DATA_FILE,
    deep=True,
    clause="The min and max values are not guaranteed to be within the array; they are simply "
    "upper and lower bounds. ... NaN values should be ignored for the purpose of min and "
    "max statistics.",
)
def check_stats_003(ctx):
    yield from _by_rule(ctx, "STATS-003")


@rule(
    "STATS-004",
    title="all-null pages use the representable extremes (-Inf/+Inf for floats)",
    severity="error",
    spec="001",
    section=_SEC,
    scope=Scope.DATA_FILE,
    deep=True,
    clause="if the min and max are unknown (all values are null), then the minimum/maximum "
    "representable values should be used instead. For float data types, if the min and "
    "max are unknown, then use -Inf and +Inf, respectively.",
)
def check_stats_004(ctx):
    yield from _by_rule(ctx, "STATS-004")


@rule(
    "STATS-005",
    title="a zero float max is +0.0 and a zero float min is -0.0",
    severity="warning",
    spec="001",
    section=_SEC,
    scope=Scope.DATA_FILE,
    deep=True,
    clause="If the max value is zero (negative or positive), the max value should be recorded as "
    "+0.0. Likewise, if the min value is zero (positive or negative), it should be recorded "
    "as -0.0.",
)
def check_stats_005(ctx):
    yield from _by_rule(ctx, "STATS-005")


@rule(
    "STATS-006",
    title="min_value and max_value have the field's data type",
    severity="error",
    spec="001",
    section=_SEC,
    scope=Scope.DATA_FILE,
    deep=True,
    clause="The min and max values are stored as their native data types in arrays.",
)
def check_stats_006(ctx):
    yield from _by_rule(ctx, "STATS-006")


_STAT_NAMES = ("null_count", "min_value", "max_value")


@rule(
    "STATS-007",
    title="statistics hold only the described fields",
    severity="warning",
    spec="001",
    section="Page-level statistics format",
    scope=Scope.DATA_FILE,
    deep=True,
    clause="However, writers should not write extra fields that aren't described in this "
    "document.",
)
def check_stats_007(ctx):
    """The statistics schema is one struct per data field, named by the field id, with the
    children ``null_count``, ``min_value`` and ``max_value`` only. Readers ignore anything
    else, so an extra field is a writer's mistake (a warning), not unreadable data."""
    from conformance.rules.file_v2_0 import file_kind

    if file_kind(ctx.data_file) != "legacy":
        return
    try:
        from reference_impl.file.legacy import open_legacy

        lf = open_legacy(store=ctx.file_store, key=ctx.file_key)
    except LanceError:
        return  # the FILE-06x rules report an unreadable legacy file
    meta = lf.metadata
    if not meta.HasField("statistics"):
        return
    schema = list(meta.statistics.schema)
    tops = {f.id for f in schema if f.parent_id == -1}
    for f in schema:
        if f.parent_id == -1 and not f.name.isdigit():
            yield Finding(f"statistics field {f.name!r} is not named by a field id",
                          {"file": ctx.file_key, "field": f.name})
        elif f.parent_id in tops and f.name not in _STAT_NAMES:
            yield Finding(f"statistics field {f.name!r} is not one of {', '.join(_STAT_NAMES)}",
                          {"file": ctx.file_key, "field": f.name})
