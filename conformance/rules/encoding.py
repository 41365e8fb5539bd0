"""ENC-*: page encodings of 2.1/2.2 files (FILE-ENCODINGS §3-§4).

The deep check decodes every column of the data file once with
:class:`reference_impl.file.reader.LanceFileReader` (cached on the context); each rule reports
the decoder failures that carry its id. ``ENC-042`` (2.1 vs 2.2 gating) reads only the page
layouts.
"""

from __future__ import annotations

from .file import _check, _loc, container_of, decode_findings
from .registry import DECODE_REFUSAL, Finding, get_rule, rule

_DEC = {}


def _decoded(ctx):
    c, _err = container_of(ctx)
    if c is None or c.is_legacy or c.version_name not in ("2.1", "2.2"):
        return []
    return decode_findings(ctx)


def _registered(rule_id) -> bool:
    try:
        get_rule(rule_id)
    except KeyError:
        return False
    return True


def _from_decode(ctx, rule_id):
    for rid, msg, off in _decoded(ctx):
        # ENC-046 also reports decoder ids the catalog does not know (none should remain)
        mine = rid == rule_id or (rule_id == "ENC-046" and not _registered(rid))
        if mine:
            yield Finding(f"[{rid}] {msg}" if rid != rule_id else msg, _loc(ctx, off))


def _decode_rule(rule_id, title, section, clause):
    def check(ctx):
        yield from _from_decode(ctx, rule_id)

    check.__name__ = "check_" + rule_id.replace("-", "_").lower()
    _DEC[rule_id] = rule(rule_id, title=title, severity="error", spec="FILE-ENCODINGS", section=section,
                         clause=clause, scope="data_file", deep=True,
                         refusal=DECODE_REFUSAL)(check)


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
_decode_rule("ENC-002", "flat buffers hold count x bits_per_value bits", "4.1 Flat",
             "A buffer of `bits_per_value`-bit values [E]. Sub-byte widths (bool, 1 bit) are packed LSB first")
_decode_rule("ENC-013", "byte-stream-split chunks hold B planes of n bytes", "4.8 ByteStreamSplit `{values: flat 32|64}` [E]",
             "Within each chunk of n values and B = T/8 bytes per value, the buffer holds B planes of n bytes")
_decode_rule("ENC-014", "fixed-size list values carry their validity bitmaps and dim x rows flat items",
             "4.10 FixedSizeList `{items_per_value, has_validity, values}`",
             "value buffers = one bitmap per nested FSL layer with `has_validity` (outermost first), then the flat items")
_decode_rule("ENC-015", "packed struct rows are flat values of the summed whole-byte child widths",
             "4.11 PackedStruct `{bits_per_value[], values: flat(Σ)}` [E]",
             "Field *i* occupies `bits_per_value[i]` bits at a fixed byte position in each row")
_decode_rule("ENC-016", "variable packed struct fields stay inside their value",
             "4.12 VariablePackedStruct `{fields[{value, bits_per_value | bits_per_length}]}` (2.2+ only) [E][B]",
             "variable fields contribute a `bits_per_length`-bit length followed by the bytes")
_decode_rule("ENC-017", "dictionary indices are integers inside the dictionary", "3.2 Mini-block layout",
             "The chunk values are then **i32 dictionary indices**, 0-based.")
_decode_rule("ENC-045", "decoded values fit the field's Arrow type", "1.1 Field to column mapping",
             "primitive, string/binary, decimal, fixed_size_binary, `fixed_size_list<primitive>` | 1 column")
_decode_rule("ENC-047", "blob descriptors are (u64 position, u64 size) rows inside the file", "3.5 Blob layouts",
             "Each row is (u64 absolute file position, u64 size).")
_decode_rule("ENC-046", "decoded value counts match the declared lengths", "6. Known traps",
             "`MiniBlockLayout.num_items` = visible values")


@rule("ENC-042", title="has_large_chunk is set exactly in 2.2 mini-block pages; 2.1 constants are all-null",
      severity="error", spec="FILE-ENCODINGS", section="6. Known traps",
      clause="a 2.2 MB page must set `has_large_chunk`, and a 2.1 page must not", scope="data_file", deep=True,
      refusal="pylance 14.0.2 refuses a 2.2 mini-block page without the u32 chunk words "
              "('Lance v2.2 miniblock pages require the u32 chunk grammar'): read with u16 words "
              "its chunks would decode to other values",
      releases="pylance 0.38.x and earlier accepted data_storage_version='2.2' while 2.2 was "
               "unstable and wrote its mini-block pages with u16 chunk words; those releases "
               "read them back, 14.0.2 refuses them, and so does the kit")
def chunk_grammar(ctx):
    from reference_impl.file import checks

    yield from _check(ctx, checks.layout_grammar, "ENC-042")
