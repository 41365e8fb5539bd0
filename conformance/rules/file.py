"""FILE-*: the Lance v2.x file container (spec 003 "File Structure", FACTS §A, FILE-ENCODINGS §0-§1).

Footer ``<QQQIIHH`` + ``LANC`` (40 bytes): column-meta-0 offset, CMO table offset, GBO table
offset, number of global buffers, number of columns, major, minor. CMO/GBO tables are
(u64 position, u64 size) pairs; global buffer 0 is the ``FileDescriptor``; every page buffer
and global buffer 0 is 64-byte aligned; in 2.1+ page lengths are top-level rows and page
priorities the running first row. These are deep, per-data-file checks run through
:mod:`reference_impl.file.checks`.
"""

from __future__ import annotations

from reference_impl.errors import FormatError, LanceError, NotFound, UnsupportedFeature

from .registry import Finding, rule

_SEC = "File Structure"


def container_of(ctx):
    """``(container, error)`` of the context's data file, cached on the context."""
    if "file_container" not in ctx.cache:
        from reference_impl.file.container import read_container

        try:
            ctx.cache["file_container"] = (read_container(ctx.file_store, ctx.file_key), None)
        except (FormatError, UnsupportedFeature, NotFound, LanceError) as exc:
            ctx.cache["file_container"] = (None, exc)
    return ctx.cache["file_container"]


def reader_of(ctx):
    if "file_reader" not in ctx.cache:
        from reference_impl.file.reader import LanceFileReader

        try:
            ctx.cache["file_reader"] = (LanceFileReader(ctx.file_store, ctx.file_key), None)
        except (FormatError, UnsupportedFeature, NotFound, LanceError) as exc:
            ctx.cache["file_reader"] = (None, exc)
    return ctx.cache["file_reader"]


def decode_outcome(ctx):
    """Every column of the context's v2.x data file decoded once by the shared reader,
    cached: ``(rows, None)``, ``(None, decoder error)``, or None when no reader opens it.
    The FILE/ENC rules and the 2.0 rules (``file_v2_0``) all judge this one decode."""
    if "file_decode_outcome" not in ctx.cache:
        r, _err = reader_of(ctx)
        if r is None:
            ctx.cache["file_decode_outcome"] = None
        else:
            from reference_impl.file import checks

            ctx.cache["file_decode_outcome"] = checks.decode_outcome(r)
    return ctx.cache["file_decode_outcome"]


def decode_findings(ctx) -> list:
    """``checks.decode_all`` over the context's data file (any v2.x version), cached."""
    if "file_decode_findings" not in ctx.cache:
        c, _err = container_of(ctx)
        if c is None or c.is_legacy:
            ctx.cache["file_decode_findings"] = []
        else:
            from reference_impl.file import checks

            r, err = reader_of(ctx)
            if r is None:
                ctx.cache["file_decode_findings"] = [checks.error_finding(err)]
            else:
                ctx.cache["file_decode_findings"] = checks.outcome_findings(decode_outcome(ctx),
                                                                            r.num_rows)
    return ctx.cache["file_decode_findings"]


def _from_decode(ctx, rule_id):
    for rid, msg, off in decode_findings(ctx):
        if rid == rule_id:
            yield Finding(msg, _loc(ctx, off))


def _loc(ctx, offset=None):
    loc = {"path": ctx.file_key}
    if offset is not None:
        loc["offset"] = int(offset)
    return loc


def _tail_rule(ctx, rule_id):
    _c, err = container_of(ctx)
    if isinstance(err, FormatError) and getattr(err, "rule", None) == rule_id:
        yield Finding(str(err), _loc(ctx, getattr(err, "offset", None)))


def _check(ctx, fn, rule_id):
    c, _err = container_of(ctx)
    if c is None or c.is_legacy:
        return
    for rid, msg, off in fn(c):
        if rid == rule_id:
            yield Finding(msg, _loc(ctx, off))


@rule("FILE-001", title="the file ends with a 40-byte footer and magic LANC", severity="error", spec="003",
      section=_SEC, clause='u16: Major version | u16: Minor version | "LANC"', scope="data_file", deep=True)
def footer(ctx):
    yield from _tail_rule(ctx, "FILE-001")


@rule("FILE-002", title="CMO and GBO tables lie before the footer", severity="error", spec="003",
      section=_SEC, clause="B u64: Offset to CMO table | C u64: Offset to GBO table", scope="data_file", deep=True)
def offset_tables(ctx):
    yield from _tail_rule(ctx, "FILE-002")


@rule("FILE-003", title="the footer version is a known Lance file version", severity="error", spec="FACTS",
      section="Lance data files v2.x",
      clause="Version pairs: (0,0),(0,1),(0,2) legacy; (0,3) and (2,0) mean 2.0; then (2,1),(2,2),(2,3).",
      scope="data_file", deep=True,
      refusal='a reader cannot know the layout of a file version it does not know; every release refuses it')
def version(ctx):
    _c, err = container_of(ctx)
    if isinstance(err, UnsupportedFeature):
        yield Finding(str(err), _loc(ctx))


@rule("FILE-004", title="global buffers lie inside the file", severity="error", spec="003", section=_SEC,
      clause="Global Buffers Offset Table | Global Buffer 0 Position* | Global Buffer 0 Size",
      scope="data_file", deep=True)
def global_buffers(ctx):
    yield from _tail_rule(ctx, "FILE-004")


@rule("FILE-005", title="global buffer 0 is a FileDescriptor", severity="error", spec="FACTS",
      section="Lance data files v2.x",
      clause="global buffer 0 (a `lance.file.FileDescriptor` {1 schema, 2 row count})", scope="data_file", deep=True,
      refusal='the schema and row count of a 2.x file are in its FileDescriptor; without it no column can be read')
def descriptor(ctx):
    yield from _tail_rule(ctx, "FILE-005")


@rule("FILE-006", title="column metadata lies inside the file and parses", severity="error", spec="003",
      section=_SEC, clause="Column Metadata Offset Table | Column 0 Metadata Position* | Column 0 Metadata Size",
      scope="data_file", deep=True)
def column_metadata(ctx):
    yield from _tail_rule(ctx, "FILE-006")


@rule("FILE-011", title="page buffers lie inside the data region", severity="error", spec="003", section=_SEC,
      clause="The file offsets for each of the page buffers", scope="data_file", deep=True)
def buffers_in_file(ctx):
    from reference_impl.file import checks

    yield from _check(ctx, checks.buffers_in_file, "FILE-011")


@rule("FILE-012", title="page buffers and global buffer 0 are 64-byte aligned", severity="warning",
      spec="FILE-ENCODINGS", section="0. Conventions that hold in every version",
      clause="Every page buffer and global buffer 0 starts on a 64-byte boundary.",
      pylance='14.0.2 rejects a misaligned page or global buffer ("... is not aligned to 64 bytes")',
      enforces="pylance", scope="data_file", deep=True,
      releases='pylance 14.0.2 aligns page buffers and global buffer 0 to 64 bytes; spec 003 only says 64-byte alignment is common and readers should assume optional padding')
def aligned(ctx):
    from reference_impl.file import checks

    yield from _check(ctx, checks.alignment, "FILE-012")


@rule("FILE-013", title="2.1+: each column's page lengths sum to the row count", severity="error",
      spec="FILE-ENCODINGS", section="1.2 Page metadata",
      clause="Number of **top-level rows** the page covers, even for list leaves.", scope="data_file", deep=True,
      refusal='a file whose columns, pages or metadata break this cannot be mapped to the rows it holds',
      releases='pylance 14.0.2 writes fixed_size_list<struct> at 2.2 and 2.3 and counts the pages of the '
               "struct's columns in items (rows x list size); they are held to that count (type census, "
               'docs/census-types.md)')
def page_lengths(ctx):
    from reference_impl.file import checks

    yield from _check(ctx, checks.page_lengths, "FILE-013")


@rule("FILE-014", title="2.1+: page priority is the page's first row", severity="error", spec="003",
      section=_SEC, clause="For tabular data this will be the top-level row number of the first row in the page",
      scope="data_file", deep=True)
def priorities(ctx):
    from reference_impl.file import checks

    yield from _check(ctx, checks.priorities, "FILE-014")


@rule("FILE-015", title="page and column encodings are direct Anys of the version's types", severity="error",
      spec="FILE-ENCODINGS", section="0. Conventions that hold in every version",
      clause="`Page.encoding` and `ColumnMetadata.encoding` are always `direct`. The `DirectEncoding.encoding` "
             "bytes are a serialized `google.protobuf.Any`", scope="data_file", deep=True,
      refusal='a file whose columns, pages or metadata break this cannot be mapped to the rows it holds')
def page_encodings(ctx):
    from reference_impl.file import checks

    yield from _check(ctx, checks.encodings, "FILE-015")
    yield from _check(ctx, checks.layout_grammar, "FILE-015")


@rule("FILE-009", title="the schema maps onto the file's columns", severity="error", spec="FILE-ENCODINGS",
      section="1.1 Field to column mapping",
      clause="Column order follows the schema's pre-order walk; `DataFile.column_indices` records it",
      scope="data_file", deep=True,
      refusal='a file whose columns, pages or metadata break this cannot be mapped to the rows it holds')
def schema_columns(ctx):
    yield from _from_decode(ctx, "FILE-009")


@rule("FILE-010", title="every field decodes to the file's row count, its columns paged alike", severity="error",
      spec="FILE-ENCODINGS", section="1.2 Page metadata",
      clause="Within a column, pages appear in row order and cover contiguous, non-overlapping row ranges",
      scope="data_file", deep=True,
      refusal='a file whose columns, pages or metadata break this cannot be mapped to the rows it holds')
def field_rows(ctx):
    yield from _from_decode(ctx, "FILE-010")
