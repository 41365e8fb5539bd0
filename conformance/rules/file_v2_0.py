"""FILE-050..099 / ENC-050..099: deep checks of 2.0 and legacy (0.1) data files.

Each data file is decoded once per run by the reference readers
(:mod:`reference_impl.file.encodings.v2_0` for 2.0 files, footer 0.3 or 2.0;
:mod:`reference_impl.file.legacy` for 0.1 files, footer 0.0-0.2). A decode error is a
``FormatError`` naming the rule it breaks; each rule below reports the errors carrying
its id, so one malformed page gives one finding under the right rule.

2.0 (FILE-ENCODINGS §2): buffers referenced by ``Buffer{index, type}`` must exist and
hold the bytes a node needs (ENC-050); each node must fit the field's Arrow type
(ENC-051); offsets/ends of ``Binary``/``List``/``Dictionary`` must be monotone and stay
inside their data (ENC-052); compressed ``Flat`` buffers use the lz4/zstd framing
(ENC-053); page encodings are direct ``/lance.encodings.ArrayEncoding`` ``Any`` messages
(FILE-050); the columns follow the schema's 2.0 column mapping (FILE-051).

Legacy (spec 001 "File Structure"): the 16-byte tail, magic and ``Metadata`` block
(FILE-060), the page table (FILE-061), ``batch_offsets`` (FILE-062) and page contents
(FILE-063).
"""

from __future__ import annotations

from reference_impl.errors import FormatError, LanceError

from .registry import DECODE_REFUSAL, SPEC_TEXTS, Finding, Scope, rule

_ENC = "2.2 Node semantics"
_LEGACY = "File Structure"


def file_kind(df) -> str | None:
    """'legacy', '2.0' or None (another version) from the DataFile's version pair."""
    major, minor = df.file_major_version, df.file_minor_version
    if major == 0 and minor < 3:
        return "legacy"
    if (major, minor) in ((0, 3), (2, 0)):
        return "2.0"
    return None


# The rule a pyarrow error met while assembling decoded pages is reported under: for 2.0
# the columns did not follow the field's mapping (FILE-051), for legacy the page contents
# were not what their encoding promises (FILE-063).
ARROW_ERROR_RULE = {"2.0": "FILE-051", "legacy": "FILE-063", None: None}


def _arrow_errors() -> tuple[type[BaseException], ...]:
    import pyarrow as pa

    return (pa.ArrowException,)


def decode_result(ctx) -> FormatError | None:
    """Decode the context's data file once (cached); the FormatError met, or None. Running
    out of memory is no finding: the MemoryError is kept (so no other rule decodes again)
    and raised to every rule that asks (the engine reports ENGINE-003)."""
    if "v2_0_legacy_decode" in ctx.cache:
        cached = ctx.cache["v2_0_legacy_decode"]
        if isinstance(cached, MemoryError):
            raise MemoryError(str(cached))
        return cached
    err = None
    kind = file_kind(ctx.data_file)
    try:
        if kind == "2.0":
            _decode_2_0(ctx)
        elif kind == "legacy":
            from reference_impl.file.legacy import open_legacy
            from reference_impl.table.schema import project

            lf = open_legacy(store=ctx.file_store, key=ctx.file_key)
            ids = [i for i in ctx.data_file.fields if i >= 0]
            known = {f.id for f in ctx.version.manifest.fields}
            fields = project(list(ctx.version.manifest.fields), [i for i in ids if i in known])
            lf.read(fields, ids, dictionaries=version_dictionaries(ctx.version))
    except FormatError as exc:
        err = exc
    except LanceError as exc:
        err = FormatError(str(exc), rule=None, path=ctx.file_key)
    except MemoryError as exc:
        ctx.cache["v2_0_legacy_decode"] = MemoryError(str(exc))  # without the decode's frames
        raise MemoryError(str(exc)) from None
    except _arrow_errors() as exc:
        # pyarrow refused the decoded buffers (a column of the wrong length, invalid UTF-8):
        # the pages do not hold what the schema and the column mapping say.
        err = FormatError(f"decoded pages are not valid Arrow data: {exc}",
                          rule=ARROW_ERROR_RULE[kind], path=ctx.file_key)
    ctx.cache["v2_0_legacy_decode"] = err
    return err


#: container rules whose failure, in a 2.0 file, is this module's FILE-052
_CONTAINER_RULES = ("FILE-001", "FILE-002", "FILE-003", "FILE-004", "FILE-005", "FILE-006")


def _decode_2_0(ctx) -> None:
    """Raise what decoding the 2.0 file found, from the one decode every deep rule shares
    (:func:`conformance.rules.file.decode_outcome`, through the shared reader): a footer,
    offset table, FileDescriptor or column metadata the reader cannot take is FILE-052;
    columns that do not tile the schema's mapping are FILE-051; a column decoding to another
    row count than the FileDescriptor's is left to FILE-010."""
    from reference_impl.file.encodings.v2_0.column import container_columns, field_starts

    from .file import decode_outcome, reader_of

    reader, err = reader_of(ctx)
    if reader is None:
        if isinstance(err, FormatError) and err.rule in _CONTAINER_RULES:
            raise FormatError(f"{err.message}", rule="FILE-052", path=ctx.file_key,
                              offset=err.offset)
        raise err
    _rows, exc = decode_outcome(ctx)
    if isinstance(exc, FormatError) and exc.rule == "FILE-010":
        return  # a column of another row count than the FileDescriptor's: FILE-010 reports it
    if exc is not None:
        raise exc
    columns = container_columns(reader.container)
    _starts, used = field_starts(reader.decode_schema, columns)
    if used != len(columns):
        raise FormatError(f"schema uses {used} columns, file has {len(columns)}", rule="FILE-051",
                          path=ctx.file_key)


def version_dictionaries(vctx) -> dict:
    """The dictionary values of a legacy version, read once from its manifest file, where
    every release keeps them (:func:`reference_impl.file.legacy.manifest_dictionaries`)."""
    if "legacy_dictionaries" not in vctx.cache:
        from reference_impl.file.legacy import manifest_dictionaries

        fields = [f for f in vctx.manifest.fields if f.HasField("dictionary")]
        vctx.cache["legacy_dictionaries"] = manifest_dictionaries(
            lambda pos, n: vctx.store.get_range(vctx.manifest_key, pos, n), vctx.mf.size,
            fields, path=vctx.manifest_key) if fields else {}
    return vctx.cache["legacy_dictionaries"]


def _report(ctx, rule_id: str, kind: str):
    if file_kind(ctx.data_file) != kind:
        return
    err = decode_result(ctx)
    if err is not None and err.rule == rule_id:
        yield Finding(err.message, {"file": ctx.file_key, "offset": err.offset})


def _common(rid, title, clause, kind, section=_ENC, spec="FILE-ENCODINGS", severity="error"):
    def check(ctx):
        yield from _report(ctx, rid, kind)

    check.__name__ = f"check_{rid.replace('-', '_').lower()}"
    check.__doc__ = title
    return rule(
        rid,
        title=title,
        severity=severity,
        spec=spec,
        section=section,
        clause=clause,
        scope=Scope.DATA_FILE,
        deep=True,
        refusal=DECODE_REFUSAL if severity == "error" and spec not in SPEC_TEXTS else None,
    )(check)


check_enc_050 = _common(
    "ENC-050",
    "2.0 buffer references resolve and hold the bytes their node needs",
    "`Buffer{buffer_index, buffer_type}`: `page` (0) indexes this page's `buffer_offsets/sizes`, "
    "`column` (1) indexes the column metadata's buffers, and `file` (2) indexes the global buffers",
    "2.0",
    section="2.1 Buffers",
)
check_enc_051 = _common(
    "ENC-051",
    "every 2.0 encoding node is known and fits the field's Arrow type",
    "`Flat{bits_per_value, buffer, compression?}` | A packed array of `bits_per_value`-bit values "
    "(1 = bitmap; 8/16/32/64/128, or 48 for `fixed_size_binary(6)`)",
    "2.0",
)
check_enc_052 = _common(
    "ENC-052",
    "2.0 Binary/List/Dictionary offsets are monotone and inside their data",
    "`null_adjustment` = total bytes + 1. For row *i*: `e = idx[i]`. If `e >= null_adjustment` the "
    "row is null and its end is `e - null_adjustment`, otherwise the end is `e`.",
    "2.0",
)
check_enc_053 = _common(
    "ENC-053",
    "2.0 compressed Flat buffers use the lz4/zstd framing",
    'If `compression.scheme` is `"lz4"` or `"zstd"`, decompress the whole buffer with the framing '
    "of §4.9 first",
    "2.0",
)
check_file_050 = _common(
    "FILE-050",
    "2.0 page encodings are direct /lance.encodings.ArrayEncoding messages",
    "`Page.encoding` and `ColumnMetadata.encoding` are always `direct`. The `DirectEncoding.encoding` "
    "bytes are a serialized `google.protobuf.Any`",
    "2.0",
    section="0. Conventions that hold in every version",
)
check_file_051 = _common(
    "FILE-051",
    "2.0 columns follow the schema's column mapping",
    '`struct` | 1 "header" column, then the children\'s columns in pre-order. ... `list` / '
    "`large_list` | 1 offsets column (`List` encoding), then the child's column(s)",
    "2.0",
    section="1.1 Field to column mapping",
)
check_file_052 = _common(
    "FILE-052",
    "a 2.0 file's footer, offset tables and FileDescriptor are readable",
    "40-byte footer `<QQQIIHH` + `LANC`: column-meta-0 offset, CMO table offset, GBO table offset, "
    "number of global buffers, number of columns, major, minor.",
    "2.0",
    spec="FACTS",
    section="Lance data files v2.x",
)
check_file_060 = _common(
    "FILE-060",
    "a legacy file ends in the 16-byte tail pointing at a Metadata block",
    "In the end of the file, a Footer is written to indicate the closure of a file: metadata "
    'position (uint64) | major version | minor version | Magic number "LANC"',
    "legacy",
    spec="001",
    section=_LEGACY,
)
check_file_061 = _common(
    "FILE-061",
    "the legacy page table covers every field and batch inside the file",
    "A page table is a matrix of N x M x 2, where N = num_fields, and M = num_batches. Each cell "
    "in the table is a pair of <position:int64, length:int64> of the page.",
    "legacy",
    spec="001",
    section=_LEGACY,
)
check_file_062 = _common(
    "FILE-062",
    "legacy batch_offsets start at 0 and never decrease",
    "Logical offsets of each chunk group, i.e., number of the rows in each chunk.",
    "legacy",
    spec="001",
    section=_LEGACY,
)
check_file_063 = _common(
    "FILE-063",
    "legacy var-binary offsets are monotone and inside the file",
    "The offset array contains the absolute offset of each value appears in the file.",
    "legacy",
    spec="001",
    section="Variable-Length Binary Encoding",
)
