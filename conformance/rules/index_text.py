"""INDEX-120..139: text and zone indexes held against the data they index (deep).

For every NGRAM, ZONEMAP, BLOOMFILTER and INVERTED index of a version, the index files are
decoded (``reference_impl.index``) and compared with the live rows of the fragments its
``fragment_bitmap`` names (spec 004, ``IndexMetadata``: "A bitmap of the included fragment
ids" and "The version of the dataset this index was built from"): an index that would answer
a query with rows other than the data's is an error. Inexact indexes (zones, filters, n-grams)
are rechecked by readers, so only a row the index *loses* makes an answer wrong; a row listed
where it does not belong is a warning.

An index this implementation cannot decode (an unknown layout or version) is reported as
the warning INDEX-139 naming it, never guessed at. Findings of one index are capped at
:data:`MAX_FINDINGS` per rule, the last one counting the rest.
"""

from __future__ import annotations

import importlib

from reference_impl.errors import FormatError, LanceError, UnsupportedIndex

from .index import indices
from .registry import Finding, rule

_SEC = "IndexMetadata"
_BITMAP = ("A bitmap of the included fragment ids. This may by used to determine how much of "
           "the dataset is covered by the index.")
_CACHE = "index_text.judged"
KINDS = ("ngram", "zonemap", "bloomfilter", "inverted")
MAX_FINDINGS = 20

#: disagreement kind of each module -> rule id
_RULE_OF = {
    ("zonemap", "unzoned"): "INDEX-120", ("zonemap", "unbounded"): "INDEX-120",
    ("zonemap", "outside"): "INDEX-124",
    ("bloomfilter", "unzoned"): "INDEX-121", ("bloomfilter", "false_negative"): "INDEX-121",
    ("bloomfilter", "outside"): "INDEX-124", ("bloomfilter", "unchecked"): "INDEX-139",
    ("ngram", "missing"): "INDEX-122", ("ngram", "extra"): "INDEX-123",
    ("ngram", "outside"): "INDEX-124",
    ("inverted", "undocumented"): "INDEX-125", ("inverted", "miscounted"): "INDEX-125",
    ("inverted", "null"): "INDEX-125", ("inverted", "outside"): "INDEX-124",
    ("inverted", "postings"): "INDEX-127",
}


def _column_name(ctx, field_id: int) -> str | None:
    """The top-level column of a schema field id (None for a nested or unknown field)."""
    for f in ctx.manifest.fields:
        if int(f.id) == int(field_id):
            return f.name if int(f.parent_id) == -1 else None
    return None


def _files(ctx, idx):
    from reference_impl.index import IndexFiles

    names = [f.path for f in idx.files]
    store, key = ctx.location("index", f"{idx.uuid}/x", idx.base_id)
    prefix = key[:-1]  # the index directory, as a key prefix
    if not names:  # releases before IndexMetadata.files: list the directory
        names = [o.key[len(prefix):] for o in store.list(prefix)]
    return IndexFiles(store, {n: prefix + n for n in names})


def _scan(ctx, column: str):
    key = ("index_text.scan", column)
    if key not in ctx.cache:
        from reference_impl.dataset import Dataset
        from reference_impl.scan import to_table

        ds = Dataset(ctx.store.uri, ctx.store, ctx.store, None, ctx.mf)
        ctx.cache[key] = to_table(ds, columns=[column], with_row_id=True, with_row_address=True)
    return ctx.cache[key]


def judged(ctx) -> list[tuple[str, object, str, str, int | None]]:
    """``(rule id, index, what, message, row)`` of every text/zone index of the version."""
    if _CACHE in ctx.cache:
        return ctx.cache[_CACHE]
    from reference_impl.index.covered_rows import CoveredRows
    from reference_impl.scan import _stable_row_ids

    out = []
    for idx in indices(ctx):
        if idx.kind not in KINDS or idx.fragment_ids is None or len(idx.fields) != 1:
            continue
        column = _column_name(ctx, idx.fields[0])
        if column is None:
            out.append(("INDEX-139", idx, "unsupported", f"index {idx.name!r} is on a nested "
                        f"field {idx.fields[0]}: not checked", None))
            continue
        module = importlib.import_module(f"reference_impl.index.{idx.kind}")
        try:
            content = module.read(_files(ctx, idx), idx)
            rows = CoveredRows.of(_scan(ctx, column), column, idx.fragment_ids,
                                  _stable_row_ids(ctx.manifest))
            found = list(module.check(content, rows))
        except UnsupportedIndex as exc:
            out.append(("INDEX-139", idx, "unsupported", f"index {idx.name!r} ({idx.kind}) is "
                        f"not read: {exc.message}", None))
            continue
        except (FormatError, LanceError) as exc:
            out.append(("INDEX-127", idx, "undecodable", f"index {idx.name!r} ({idx.kind}) "
                        f"does not decode: {exc}", None))
            continue
        counts: dict[str, int] = {}
        for what, message, row, _value in found:
            rid = _RULE_OF[(idx.kind, what)]
            counts[rid] = counts.get(rid, 0) + 1
            if counts[rid] <= MAX_FINDINGS:
                out.append((rid, idx, what, f"{idx.kind.upper()} index {idx.name!r}: {message}",
                            row))
        for rid, n in counts.items():
            if n > MAX_FINDINGS:
                out.append((rid, idx, "more", f"{idx.kind.upper()} index {idx.name!r}: "
                            f"{n - MAX_FINDINGS} more disagreements of this rule", None))
    ctx.cache[_CACHE] = out
    return out


def findings(ctx, rule_id: str):
    if not ctx.deep:
        return
    for rid, idx, what, message, row in judged(ctx):
        if rid == rule_id:
            loc = {"path": ctx.manifest_key, "index": idx.name, "uuid": idx.uuid, "kind": what}
            if row is not None:
                loc["row"] = row
            yield Finding(message, loc)


@rule("INDEX-120", title="ZONEMAP zones bound every row they cover", severity="error",
      spec="004", section=_SEC, clause=_BITMAP, deep=True,
      releases="every release that writes ZONEMAP (0.3x to 14.0.2) writes zonemap.lance with "
               "min, max, null_count, nan_count, fragment_id, zone_start, zone_length; a "
               "reader keeps the row addresses of each zone whose statistics admit the value")
def zonemap_bounds(ctx):
    """Every live row of a covered fragment lies in a zone whose min..max holds its value
    (a null: null_count > 0; NaN: nan_count > 0), else a filter through the index loses it."""
    yield from findings(ctx, "INDEX-120")


@rule("INDEX-121", title="BLOOMFILTER filters hold every value of their zone",
      severity="error", spec="004", section=_SEC, clause=_BITMAP, deep=True,
      releases="every release that writes BLOOMFILTER writes bloomfilter.lance (split-block "
               "filters of XXH64 hashes, seed 0); a reader keeps each zone whose filter may "
               "hold the value")
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


@rule("INDEX-124", title="text and zone indexes name no row outside the fragments they cover",
      severity="error", spec="004", section=_SEC, clause=_BITMAP, deep=True,
      releases="rows of fragments the version no longer has may remain (deleted rows)")
def outside_bitmap(ctx):
    yield from findings(ctx, "INDEX-124")


@rule("INDEX-125", title="INVERTED documents are the covered rows with their token counts",
      severity="error", spec="004", section=_SEC, clause=_BITMAP, deep=True,
      releases="pylance up to the 0.1x releases write tokens/invert/docs.lance; later ones "
               "metadata.lance and part_N_{tokens,invert,docs}.lance (the token set an FST, "
               "postings compressed: not decoded by the kit, so only the documents are held "
               "against the data). 14.0.2 leaves rows without tokens out of the documents, "
               "0.38.3 lists them with 0. Counts are checked under the settings metadata.lance "
               "records (simple/whitespace, max_token_length, lower_case, English stop words); "
               "with stemming a token that may stem to a stop word is allowed either way")
def inverted_documents(ctx):
    yield from findings(ctx, "INDEX-125")


@rule("INDEX-127", title="text and zone index files decode into self-consistent content",
      severity="error", spec="004", section=_SEC, clause=_BITMAP, deep=True,
      releases="self-consistency is checked where postings are decoded (the tokens/invert/docs "
               "layout of the 0.1x releases): every posting names a document, and a "
               "document's token count is the sum of its postings' frequencies")
def undecodable(ctx):
    yield from findings(ctx, "INDEX-127")


@rule("INDEX-139", title="text and zone indexes the kit cannot read are named",
      severity="warning", spec="004", section=_SEC, clause=_BITMAP, deep=True)
def unsupported(ctx):
    yield from findings(ctx, "INDEX-139")
