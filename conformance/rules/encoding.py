"""ENC-*: page encodings of 2.1/2.2 files (FILE-ENCODINGS §3-§4).

The deep check decodes every column of the data file once with
:class:`reference_impl.file.reader.LanceFileReader` (cached on the context); each rule reports
the decoder failures that carry its id. ``ENC-042`` (2.1 vs 2.2 gating) reads only the page
layouts.
"""

from __future__ import annotations

from .file import _check, _loc, container_of, reader_of
from .registry import Finding, rule

_DEC = {}


def _decoded(ctx):
    if "enc_findings" not in ctx.cache:
        c, _err = container_of(ctx)
        if c is None or c.is_legacy or c.version_name not in ("2.1", "2.2"):
            ctx.cache["enc_findings"] = []
        else:
            from reference_impl.file import checks

            r, err = reader_of(ctx)
            if r is None:
                ctx.cache["enc_findings"] = [(getattr(err, "rule", None) or "ENC-046", str(err), None)]
            else:
                ctx.cache["enc_findings"] = checks.decode_all(r)
    return ctx.cache["enc_findings"]


def _from_decode(ctx, rule_id):
    for rid, msg, off in _decoded(ctx):
        mine = rid == rule_id or (rule_id == "ENC-046" and rid not in _DEC)
        if mine:
            yield Finding(f"[{rid}] {msg}" if rid != rule_id else msg, _loc(ctx, off))


def _decode_rule(rule_id, title, section, clause):
    def check(ctx):
        yield from _from_decode(ctx, rule_id)

    check.__name__ = "check_" + rule_id.replace("-", "_").lower()
    _DEC[rule_id] = rule(rule_id, title=title, severity="error", spec="FILE-ENCODINGS", section=section,
                         clause=clause, scope="data_file", deep=True)(check)


_decode_rule("ENC-001", "every compressive encoding node is known and well formed",
             "4. `CompressiveEncoding` catalogue (2.1/2.2)", "Each node can appear in three contexts")
_decode_rule("ENC-003", "variable offsets are flat, monotonic and inside their buffer", "4.7 Variable",
             "(n+1) offsets of 4 or 8 bytes, measured from the start of this buffer")
_decode_rule("ENC-010", "bit-packed blocks hold their declared width", "4.2 InlineBitpacking",
             "Buffer size = `(1 + 1024*W/T) * T/8`")
_decode_rule("ENC-012", "RLE runs cover the chunk's values", "4.5 RLE",
             "Decode with `np.repeat(values, lengths)[:count]`")
_decode_rule("ENC-020", "general compression frames decompress to their declared length", "4.9 General",
             "LZ4  (scheme 1): u32 LE uncompressed_len | LZ4 *block* (not frame format)")
_decode_rule("ENC-030", "FSST codes stay inside the symbol table", "4.6 FSST",
             "Codes index the table slots directly.")
_decode_rule("ENC-040", "rep/def levels are consistent with the layers", "3.1 Repetition/definition levels and `layers`",
             "`rep == max_rep` starts a new top-level row")
_decode_rule("ENC-041", "mini-block chunks fill the data buffer exactly", "3.2 Mini-block layout",
             "Chunks sit back to back from offset 0 of buffer 1, and their byte sizes add up to buffer 1's size exactly")
_decode_rule("ENC-043", "full-zip rows fill the zipped buffer as the repetition index says", "3.3 Full-zip layout",
             "entry *r* is the byte offset of row *r*'s first control word in buffer 0, and the last entry is buffer 0's length")
_decode_rule("ENC-044", "constant pages carry a value of the field's width", "3.4 Constant / all-null layout (`PageLayout` field 2)",
             "present if the Arrow value is a single buffer of ≤ 32 bytes")
_decode_rule("ENC-046", "decoded value counts match the declared lengths", "6. Known traps",
             "`MiniBlockLayout.num_items` = visible values")


@rule("ENC-042", title="has_large_chunk is set exactly in 2.2 mini-block pages; 2.1 constants are all-null",
      severity="error", spec="FILE-ENCODINGS", section="6. Known traps",
      clause="a 2.2 MB page must set `has_large_chunk`, and a 2.1 page must not", scope="data_file", deep=True)
def chunk_grammar(ctx):
    from reference_impl.file import checks

    yield from _check(ctx, checks.layout_grammar, "ENC-042")
