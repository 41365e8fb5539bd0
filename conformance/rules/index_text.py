"""INDEX-120..127: text and zone indexes held against the data they index (deep).

For every NGRAM, ZONEMAP, BLOOMFILTER, INVERTED and FM index of a version, the index files are
decoded (``reference_impl.index``) and compared with the live rows of the fragments its
``fragment_bitmap`` names (spec 004, ``IndexMetadata``: "A bitmap of the included fragment
ids"), by the kind module's ``check``; the machinery (one decode per index, one scan per
column, findings naming the index and the row) is :mod:`conformance.rules.index_content`'s.
An index that would answer a query with rows other than the data's is an error. Inexact
indexes (zones, filters, n-grams) are rechecked by readers, so only a row the index *loses*
makes an answer wrong; a row listed where it does not belong is a warning. Entries outside
the covered fragments are INDEX-124, undecodable files INDEX-100, and an index the kit cannot
read is named on the report ("not judged"), as for every kind. When the version has a
fragment reuse index (a compaction whose index remap was deferred), the checks translate
the index's row addresses through it, as a reader does.
"""

from __future__ import annotations

import importlib

from reference_impl.errors import LanceError, UnsupportedIndex

from .index import indices
from .index_content import findings as content_findings
from .index_content import first_disagreements, indexed_data
from .registry import rule

_SEC = "IndexMetadata"
_BITMAP = "A bitmap of the included fragment ids."
KINDS = ("ngram", "zonemap", "bloomfilter", "inverted")
_REMAP = "index_text.remap"
_HELD = "index_text.held"


def _remap(ctx):
    """The version's fragment reuse index as a :class:`Remap` (None without one, or when
    it does not decode: INDEX-020 reports that)."""
    if _REMAP not in ctx.cache:
        from reference_impl.errors import FormatError
        from reference_impl.index.remapped import Remap

        found = None
        for i in indices(ctx):
            if i.kind == "fragment_reuse" and i.details is not None and i.details.message:
                try:
                    found = Remap.of(i.details.message, store=ctx.store, path=ctx.manifest_key)
                except (FormatError, LanceError):
                    found = None
        ctx.cache[_REMAP] = found
    return ctx.cache[_REMAP]


def _held(ctx, i, o) -> tuple[list, dict]:
    """The disagreements of index ``i`` (outcome ``o`` of the shared machinery) and the count
    beyond those kept, by rule; when the version has a fragment reuse index, the kind's check
    runs again with its translation, as a reader answers through it."""
    remap = _remap(ctx)
    if remap is None or not o.disagreements or o.content is None or i.kind not in KINDS:
        return o.disagreements, o.more
    key = (_HELD, i.uuid, ctx.version)
    if key not in ctx.cache:
        module = importlib.import_module(f"reference_impl.index.{i.kind}")
        try:
            data = indexed_data(ctx, i, addresses=bool(o.content.extra.get("row_addresses")))
            ctx.cache[key] = first_disagreements(module.check(o.content, i, data, remap=remap))
        except (UnsupportedIndex, LanceError):
            ctx.cache[key] = o.disagreements, o.more
    return ctx.cache[key]


def findings(ctx, rule_id: str):
    """The findings of rule ``rule_id``: the shared ones, through :func:`_held`."""
    return content_findings(ctx, rule_id, held=_held)


@rule("INDEX-120", title="ZONEMAP zones bound every row they cover", severity="error",
      spec="004", section=_SEC, clause=_BITMAP, deep=True,
      releases="every release that writes ZONEMAP (0.3x to 14.0.2) writes zonemap.lance with "
               "min, max, null_count, nan_count, fragment_id, zone_start, zone_length; a "
               "reader keeps the row addresses of each zone whose statistics admit the value. "
               "pylance 0.38.3's optimize_indices after deletes and an append leaves the "
               "appended fragment's last rows in no zone (it answers wrong through the index: "
               "an expected finding of its census-indices and index-zonemap roots)")
def zonemap_bounds(ctx):
    """Every live row of a covered fragment lies in a zone whose min..max holds its value
    (a null: null_count > 0; NaN: nan_count > 0), else a filter through the index loses it."""
    yield from findings(ctx, "INDEX-120")


@rule("INDEX-121", title="BLOOMFILTER filters hold every value of their zone",
      severity="error", spec="004", section=_SEC, clause=_BITMAP, deep=True,
      releases="every release that writes BLOOMFILTER writes bloomfilter.lance (split-block "
               "filters of XXH64 hashes, seed 0); a reader keeps each zone whose filter may "
               "hold the value. pylance 0.38.3's optimize_indices after deletes and an "
               "append leaves the appended fragment's last rows in no zone (an expected "
               "finding of its census-indices and index-bloomfilter roots)")
def bloomfilter_no_false_negative(ctx):
    yield from findings(ctx, "INDEX-121")


@rule("INDEX-122", title="NGRAM postings list every row under every trigram its text holds",
      severity="error", spec="004", section=_SEC, clause=_BITMAP, deep=True,
      releases="every release that writes NGRAM: lower-case and ASCII-fold the text, keep the "
               "windows of three ASCII letters/digits; the kit checks the trigrams of ASCII "
               "text exactly and, for other text, those of three original ASCII characters")
def ngram_complete(ctx):
    yield from findings(ctx, "INDEX-122")


@rule("INDEX-123", title="NGRAM postings list a row only under trigrams its text holds",
      severity="warning", spec="004", section=_SEC, clause=_BITMAP, deep=True,
      releases="contains() rechecks the rows the index gives, so an extra row changes no "
               "answer; text with non-ASCII characters is not judged (the writer's folding "
               "table is not reproduced)")
def ngram_exact(ctx):
    yield from findings(ctx, "INDEX-123")


@rule("INDEX-124", title="text and zone indexes name no row or zone outside the fragments "
      "they cover", severity="error", spec="004", section=_SEC, clause=_BITMAP, deep=True,
      pylance="pylance answers from the index for the fragments of its bitmap and scans the "
              "others: an entry on another fragment answers for rows it was not built from, "
              "or twice",
      releases="entries of fragments the version no longer has may remain (deleted rows); "
               "after compact_files(defer_index_remap=True) entries name the old fragments "
               "and readers translate them through the fragment reuse index, as the kit does; "
               "under stable row ids an updated row keeps its id in a new fragment and the "
               "entry of its old value is a deleted row's")
def outside_bitmap(ctx):
    yield from findings(ctx, "INDEX-124")


@rule("INDEX-125", title="INVERTED documents are the covered rows with their token counts",
      severity="error", spec="004", section=_SEC, clause=_BITMAP, deep=True,
      releases="pylance up to the 0.2x releases write tokens/invert/docs.lance; later ones "
               "metadata.lance and part_N_{tokens,invert,docs}.lance (the token set an FST, "
               "postings in blocks of 128, bit-packed; the kit decodes both). 14.0.2 leaves "
               "rows without tokens out of the documents, 0.38.3 lists them with 0. Counts "
               "are checked under the settings the index records (simple/whitespace, "
               "max_token_length, lower_case, Snowball English stemming with the optional "
               "snowballstemmer package, English or custom stop words: Lucene's list up to "
               "8.x, a longer one for format_version 2, 9.0.1 on, whose negations and "
               "clitics 14.0.2 keeps and earlier ones drop, allowed either way); stems are "
               "Snowball 2's up to 10.0.0 and Snowball 3's from 11.0.0, and where a writer "
               "may stem with Snowball 2 a token starting like a stem the two differ on is "
               "allowed either way")
def inverted_documents(ctx):
    yield from findings(ctx, "INDEX-125")


@rule("INDEX-126", title="INVERTED postings list each row under the tokens of its text",
      severity="error", spec="004", section=_SEC, clause=_BITMAP, deep=True,
      pylance="a full-text search answers from the postings alone: a row missing from a "
              "token's postings is never found, a row listed under a token it lacks is found "
              "for it",
      releases="checked for both layouts (tokens/invert/docs.lance up to the 0.2x releases; "
               "the partitioned layout of 0.3x to 14.0.2, its fixed32 and varint tails, per-"
               "document and shared-stream positions) where the settings are modelled "
               "(reference_impl.index.inverted_tokens); an index whose settings are not "
               "(another base tokenizer or language, identifier splitting, stemming without "
               "the snowballstemmer package) is not judged, naming the setting, unless "
               "something else already disagrees; where a writer may stem with Snowball 2 "
               "(layouts before format_version 2; 9.0.1 and 10.0.0 of format_version 2) a "
               "token starting like a stem Snowball 2 and 3 differ on is judged neither "
               "way. Text the model cannot reproduce exactly "
               "(non-ASCII text under ASCII folding; characters whose alphanumeric class may "
               "differ) is not judged. 0.18.2 records no settings. Where positions are "
               "stored they are held against the text too (a phrase search answers from "
               "them); a dropped token (stop word, too long) leaves a gap")
def inverted_postings(ctx):
    yield from findings(ctx, "INDEX-126")


@rule("INDEX-127", title="text and zone index files decode into self-consistent content",
      severity="error", spec="004", section=_SEC, clause=_BITMAP, deep=True,
      releases="INVERTED, checked for both layouts: every posting names a document, and a "
               "document's token count is the sum of its postings' frequencies; in the "
               "partitioned layout a posting's doc id lies within its partition's "
               "documents, and a token FST, posting block or position stream that does not "
               "decode is INDEX-100. FM (built by Lance 8.0 through the LanceDB Node SDK "
               "0.31.0's Index.fm(); no pylance release builds it): each partition's C "
               "table counts its BWT, its suffix-array samples are SA[k x rate] of the text "
               "the BWT spells, its document starts follow the separators, its Huffman "
               "codes are the wavelet tree's leaf paths, a node's blocks' prefix ranks "
               "count their 1-bits, and no row is two documents; the documents themselves "
               "are held against the rows by INDEX-101..103 (a null is no document)")
def undecodable(ctx):
    yield from findings(ctx, "INDEX-127")


@rule("INDEX-128", title="MINHASHLSH signatures are the signatures of their rows' text",
      severity="error", spec="004", section=_SEC, clause=_BITMAP, deep=True,
      pylance="a near-duplicate search (MinHashQuery) ranks the candidates by their stored "
              "signatures: a signature that is not its text's ranks the row wrong, and a row "
              "indexed without tokens is answered though no query can match it",
      releases="pylance 14.0.2 writes the kind (string columns; earlier releases refuse "
               "MINHASHLSH); signature_version 0, the kit signs each row's text as the "
               "details say (tokenizer, shingles joined by 0x1F, XXH64 seed 42, SplitMix64 "
               "coefficients, 16-bit compression). A tokenizer the kit does not model (other "
               "base tokenizers, stemming without snowballstemmer) is not judged, naming the "
               "setting; text the model cannot reproduce exactly (non-ASCII under ASCII "
               "folding) is not judged")
def minhash_signatures(ctx):
    """Each document of a segment is a live covered row with tokens, once, under the
    signature of its text; every such row is a document (INDEX-101/103 otherwise)."""
    yield from findings(ctx, "INDEX-128")


@rule("INDEX-129", title="MINHASHLSH bands hold every document under its band keys, in "
      "key order, with a page table that bounds its pages", severity="error", spec="004",
      section=_SEC, clause=_BITMAP, deep=True,
      pylance="candidates are the documents under the query's band keys, found through the "
              "page table: a (key, document) pair missing, out of order or behind a wrong "
              "page table entry hides the document from every query sharing only that band",
      releases="pylance 14.0.2: bands.lance sorted by (band_key, doc_id), pages of 4096 rows, "
               "the page table in a global buffer; the keys are recomputed from the stored "
               "signatures")
def minhash_bands(ctx):
    yield from findings(ctx, "INDEX-129")
