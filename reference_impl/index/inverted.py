"""INVERTED (full-text search) index: tokens of a text column, their postings and documents.

Two layouts are known.

**Single-file-set layout** (pylance up to the 0.1x releases, e.g. 0.18.2; no
``metadata.lance``)::

    tokens.lance   _token string, _token_id uint32           one row per distinct token
                   schema metadata "tokenizer": the settings as JSON (0.2x releases;
                   absent in 0.18.2, whose index also has no details message)
    invert.lance   _rowid uint64, _frequency float32,        one row per (token, row),
                   _position list<int32> (with positions)    grouped by token id
                   schema metadata "offsets": JSON list, the first invert row of each
                   token id; "max_scores": JSON list
    docs.lance     _rowid uint64, _num_tokens uint32          one row per document (row)

**Partitioned layout** (later releases up to 14.0.2)::

    metadata.lance          schema metadata "params" (tokenizer settings as JSON),
                            "partitions" (JSON list of partition ids), "token_set_format"
                            ("fst"), "format_version", posting/position codecs
    part_N_tokens.lance     the partition's token set (an FST of token -> token id)
    part_N_invert.lance     per token id: compressed posting blocks, max score, length,
                            positions (codec named in the metadata)
    part_N_docs.lance       _rowid uint64, _num_tokens uint32   one row per document

This reader decodes, for every layout, the documents (row ids and token counts), and for
the single-file-set layout the postings too. The partitioned layout's token FST is **not
decoded** here: ``extra["postings"]`` is None and ``extra["postings_layout"]`` names the
layout (its token set format and codecs). Its posting blocks are decoded when the layout is
the one :mod:`reference_impl.index.postings` reads (format_version 2, 128-document blocks,
``varint_delta_v1`` tail): ``extra["token_postings"]`` is then a table of (``token`` uint64,
partition << 32 | token id; ``row_id``; ``frequency``), else None. With tokens known by id
only, the check holds the postings to what holds whatever the stemmer does: a document's
frequencies sum to its token count, and the rows of a partition that hold one word are
listed under one common token. An unknown file set is refused.

``entries`` has one row per document: ``row_id`` uint64, ``num_tokens`` uint32,
``partition`` int32. ``extra["postings"]`` (when decoded) is a table of (``token`` string,
``row_id`` uint64, ``frequency`` float32); ``extra["params"]`` the tokenizer settings the
metadata records (dict, or None).
"""

from __future__ import annotations

import json
import re

import numpy as np
import pyarrow as pa

from reference_impl.errors import FormatError, UnsupportedIndex

KIND = "inverted"
#: Most documents and postings materialised.
MAX_ROWS = 1 << 28
_PART = re.compile(r"^part_(\d+)_(docs|invert|tokens)\.lance$")


def _docs(files, name: str, partition: int) -> pa.Table:
    reader = files.lance_file(name)
    if "_rowid" not in reader.schema.names or "_num_tokens" not in reader.schema.names:
        raise UnsupportedIndex(f"INVERTED documents file {name} has columns "
                               f"{reader.schema.names}, not _rowid and _num_tokens",
                               kind=KIND, version=",".join(reader.schema.names))
    if reader.num_rows > MAX_ROWS:
        raise FormatError(f"INVERTED {name} holds {reader.num_rows} documents, above "
                          f"{MAX_ROWS}", path=files.key(name))
    t = reader.read_columns(["_rowid", "_num_tokens"])
    return pa.table({"row_id": t.column("_rowid").cast(pa.uint64()),
                     "num_tokens": t.column("_num_tokens").cast(pa.uint32()),
                     "partition": pa.array(np.full(t.num_rows, partition, dtype=np.int32))})


def _json_list(raw: bytes | None, what: str, path: str) -> list:
    try:
        value = json.loads(raw) if raw is not None else None
    except (ValueError, UnicodeDecodeError):
        value = None
    if not isinstance(value, list):
        raise FormatError(f"INVERTED {what} metadata is not a JSON list", path=path)
    return value


def _legacy(files, index):
    from reference_impl.index import IndexContent

    docs = _docs(files, "docs.lance", 0)
    tokens_reader = files.lance_file("tokens.lance")
    tokens = tokens_reader.read_all()
    raw_params = (tokens_reader.schema.metadata or {}).get(b"tokenizer")
    try:
        params = json.loads(raw_params) if raw_params is not None else None
    except ValueError:
        raise FormatError("INVERTED tokenizer metadata is not JSON",
                          path=files.key("tokens.lance")) from None
    invert_reader = files.lance_file("invert.lance")
    if not {"_token", "_token_id"} <= set(tokens.column_names):
        raise UnsupportedIndex(f"INVERTED tokens.lance has columns {tokens.column_names}",
                               kind=KIND, version="legacy")
    if not {"_rowid", "_frequency"} <= set(invert_reader.schema.names):
        raise UnsupportedIndex(f"INVERTED invert.lance has columns "
                               f"{invert_reader.schema.names}", kind=KIND, version="legacy")
    path = files.key("invert.lance")
    if invert_reader.num_rows > MAX_ROWS:
        raise FormatError(f"INVERTED invert.lance holds {invert_reader.num_rows} postings",
                          path=path)
    offsets = _json_list((invert_reader.schema.metadata or {}).get(b"offsets"), "offsets", path)
    invert = invert_reader.read_columns(["_rowid", "_frequency"])
    n = invert.num_rows
    ids = tokens.column("_token_id").to_numpy(zero_copy_only=False).astype(np.int64)
    if len(offsets) != len(ids) or any(not isinstance(o, int) for o in offsets):
        raise FormatError(f"INVERTED offsets list {len(offsets)} entries for {len(ids)} tokens",
                          path=path)
    ends = offsets[1:] + [n]
    if any(not 0 <= a <= b <= n for a, b in zip(offsets, ends, strict=True)):
        raise FormatError("INVERTED offsets are not ascending within invert.lance", path=path)
    by_id = dict(zip(ids.tolist(), tokens.column("_token").to_pylist(), strict=True))
    if len(by_id) != len(ids) or set(by_id) != set(range(len(ids))):
        raise FormatError("INVERTED token ids are not 0..n-1, each once",
                          path=files.key("tokens.lance"))
    token_of_row = np.empty(n, dtype=object)
    for tid, (a, b) in enumerate(zip(offsets, ends, strict=True)):
        token_of_row[a:b] = by_id[tid]
    postings = pa.table({"token": pa.array(token_of_row.tolist(), pa.string()),
                         "row_id": invert.column("_rowid").cast(pa.uint64()),
                         "frequency": invert.column("_frequency").cast(pa.float32())})
    summary = {"layout": "legacy", "documents": docs.num_rows, "tokens": len(ids),
               "postings": n}
    return IndexContent(kind=KIND, version="inverted-legacy", entries=docs, summary=summary,
                        extra={"postings": postings, "params": params,
                               "postings_layout": "legacy"})


def _partitioned(files, index):
    from reference_impl.index import IndexContent

    meta_reader = files.lance_file("metadata.lance")
    meta = meta_reader.schema.metadata or {}
    path = files.key("metadata.lance")
    params = None
    if b"params" in meta:
        try:
            params = json.loads(meta[b"params"])
        except ValueError:
            raise FormatError("INVERTED params metadata is not JSON", path=path) from None
    found: dict[int, set[str]] = {}
    for name in files.names():
        m = _PART.match(name)
        if m:
            found.setdefault(int(m.group(1)), set()).add(m.group(2))
    if b"partitions" in meta:
        parts = _json_list(meta[b"partitions"], "partitions", path)
    else:
        parts = sorted(found)
    incomplete = [p for p in parts if found.get(p) != {"docs", "invert", "tokens"}]
    if incomplete:
        raise FormatError(f"INVERTED partitions {incomplete} lack some of their files "
                          "(docs, invert, tokens)", path=path)
    docs = pa.concat_tables([_docs(files, f"part_{p}_docs.lance", p) for p in parts]) if parts \
        else pa.table({"row_id": pa.array([], pa.uint64()), "num_tokens": pa.array([], pa.uint32()),
                       "partition": pa.array([], pa.int32())})
    layout = {k.decode(): v.decode(errors="replace") for k, v in meta.items()
              if k in (b"token_set_format", b"format_version", b"posting_tail_codec",
                       b"positions_codec", b"positions_layout", b"posting_block_size")}
    token_postings = _token_postings(files, parts, layout, path)
    summary = {"layout": "partitioned", "partitions": parts, "documents": docs.num_rows,
               "postings_decoded": token_postings is not None,
               **{k: v for k, v in layout.items()}}
    version = "inverted-partitioned/" + (layout.get("token_set_format") or "?") + "/v" + \
        (layout.get("format_version") or "1")
    return IndexContent(kind=KIND, version=version, entries=docs, summary=summary,
                        extra={"postings": None, "params": params, "postings_layout": layout,
                               "token_postings": token_postings})


def _token_postings(files, parts, layout, path) -> pa.Table | None:
    """The decoded posting lists of the partitioned layout, as (``token``: partition << 32 |
    token id, ``row_id``, ``frequency``), when the layout is the one
    :mod:`reference_impl.index.postings` reads (else None). The token set (an FST) is not
    decoded: tokens are known by id only."""
    from reference_impl.index import postings as codec

    if any(layout.get(k, "1" if k == "format_version" else None) != v
           for k, v in codec.KNOWN.items()):
        return None
    tokens, rows, freqs = [], [], []
    total = 0
    for p in parts:
        name = f"part_{p}_invert.lance"
        reader = files.lance_file(name)
        if not {"_posting", "_length"} <= set(reader.schema.names):
            return None
        doc_rows = files.lance_file(f"part_{p}_docs.lance").read_columns(["_rowid"]) \
            .column("_rowid").to_numpy().astype(np.uint64)
        inv = reader.read_columns(["_posting", "_length"])
        for tid, (blocks, length) in enumerate(zip(inv.column("_posting").to_pylist(),
                                                   inv.column("_length").to_pylist(),
                                                   strict=True)):
            if blocks is None or length is None:
                raise FormatError(f"INVERTED {name} row {tid}: null posting list",
                                  path=files.key(name))
            total += int(length)
            if total > MAX_ROWS:
                raise FormatError(f"INVERTED postings hold more than {MAX_ROWS} entries",
                                  path=path)
            docs, f = codec.decode(blocks, length, path=files.key(name))
            if len(docs) and int(docs.max()) >= len(doc_rows):
                raise FormatError(f"INVERTED {name} token {tid}: document {int(docs.max())} "
                                  f"of {len(doc_rows)}", path=files.key(name))
            tokens.append(np.full(len(docs), (int(p) << 32) | tid, np.uint64))
            rows.append(doc_rows[docs.astype(np.int64)])
            freqs.append(f.astype(np.float32))
    if not tokens:
        return pa.table({"token": pa.array([], pa.uint64()),
                         "row_id": pa.array([], pa.uint64()),
                         "frequency": pa.array([], pa.float32())})
    return pa.table({"token": pa.array(np.concatenate(tokens)),
                     "row_id": pa.array(np.concatenate(rows)),
                     "frequency": pa.array(np.concatenate(freqs))})


def read(files, index):
    """Decode the documents (and, when known, the postings) of an INVERTED index."""
    names = set(files.names())
    if "metadata.lance" in names:
        return _partitioned(files, index)
    if {"tokens.lance", "invert.lance", "docs.lance"} <= names:
        return _legacy(files, index)
    raise UnsupportedIndex(f"INVERTED index {index.name!r} has files {sorted(names)}: no "
                           "known layout (metadata.lance + part_N_*, or tokens/invert/docs)",
                           kind=KIND)


# ---- holding the documents against the data ----

#: The English stop words the writers remove when ``remove_stop_words`` is set (tantivy's
#: list for English, the same as Lucene's English analyzer).
ENGLISH_STOP_WORDS = frozenset((
    "a an and are as at be but by for if in into is it no not of on or such that the their "
    "then there these they this to was will with").split())
_TOKEN_CHARS = ("Lu", "Ll", "Lt", "Lm", "Lo", "Nd")
_ALNUM_RUNS = re.compile(r"[^\W_]+")
#: the stop words' stems' possible beginnings (a token starting so may stem to a stop word)
_STOP_PREFIXES = tuple(sorted({w[:-1] for w in ENGLISH_STOP_WORDS if len(w) > 1}))
_unsure_cache: dict[str, bool] = {}


def _may_stem_to_stop_word(token: str) -> bool:
    hit = _unsure_cache.get(token)
    if hit is None:
        hit = len(token) <= 8 and token.startswith(_STOP_PREFIXES)
        if len(_unsure_cache) < 1 << 20:
            _unsure_cache[token] = hit
    return hit


def split_simple(text: str) -> list[str] | None:
    """Tokens of the ``simple`` base tokenizer (maximal runs of alphanumeric characters), or
    None when ``text`` holds a character whose class may differ between Python's and the
    writer's notion of alphanumeric (then the text is not judged)."""
    import unicodedata

    if text.isascii():
        return _ALNUM_RUNS.findall(text)
    for c in text:
        if not c.isascii() and not c.isspace() and unicodedata.category(c) not in _TOKEN_CHARS:
            if c.isalnum() or unicodedata.category(c).startswith(("M", "N")):
                return None
    return _ALNUM_RUNS.findall(text)


def split_whitespace(text: str) -> list[str]:
    """Tokens of the ``whitespace`` base tokenizer (split on ASCII whitespace)."""
    return [t for t in re.split(r"[ \t\n\x0c\r]+", text) if t]


def exact_tokens(text: str, params: dict | None) -> list[str] | None:
    """The tokens the writer makes of ``text`` under ``params`` when this implementation
    reproduces them exactly (no stemming; ASCII folding only of ASCII text), else None."""
    if params is None or params.get("stem") or count_bounds(text, params) is None:
        return None
    if params.get("ascii_folding") and not text.isascii():
        return None
    base = params.get("base_tokenizer") or "simple"
    tokens = split_simple(text) if base == "simple" else split_whitespace(text)
    limit = params.get("max_token_length")
    if limit:
        tokens = [t for t in tokens if len(t.encode("utf-8")) < int(limit)]
    if params.get("lower_case", True):
        tokens = [t.lower() for t in tokens]
    if params.get("remove_stop_words", False):
        tokens = [t for t in tokens if t not in ENGLISH_STOP_WORDS]
    return tokens


def count_bounds(text: str, params: dict | None) -> tuple[int, int] | None:
    """``(least, most)`` tokens the writer can count for ``text`` under ``params`` (the
    settings recorded in the index metadata), or None when they cannot be bounded here.
    Without stemming the count is exact; with it, a token whose stem might be a stop word
    (one starting like a stop word) is counted in ``most`` only."""
    if params is None:
        return None
    base = params.get("base_tokenizer") or "simple"
    if params.get("lance_tokenizer") not in (None, "text") or base not in ("simple", "whitespace"):
        return None
    if params.get("custom_stop_words") or params.get("split_identifiers") or \
            params.get("split_on_numerics") or params.get("preserve_original"):
        return None
    tokens = split_simple(text) if base == "simple" else split_whitespace(text)
    if tokens is None:
        return None
    limit = params.get("max_token_length")
    if limit:
        tokens = [t for t in tokens if len(t.encode("utf-8")) < int(limit)]
    if params.get("lower_case", True):
        tokens = [t.lower() for t in tokens]
    if not params.get("remove_stop_words", False):
        return len(tokens), len(tokens)
    if (params.get("language") or "English").strip('"') != "English" or \
            not params.get("lower_case", True):
        return None
    kept = [t for t in tokens if t not in ENGLISH_STOP_WORDS]
    if not params.get("stem", False):
        return len(kept), len(kept)
    unsure = sum(1 for t in kept if _may_stem_to_stop_word(t))
    return len(kept) - unsure, len(kept)


RULE_DOCUMENTS = "INDEX-125"
RULE_POSTINGS = "INDEX-126"
RULE_CONSISTENT = "INDEX-127"
RULE_OUTSIDE = "INDEX-124"


def check(content, index, data, remap=None):
    """Yield a :class:`Disagreement` for each way the documents disagree with the rows they
    cover (INDEX-125): a row with tokens that is not a document (a search through the index
    never finds it), a document whose token count is outside what its text gives under the
    recorded settings, a null row listed with tokens; a document outside the covered
    fragments (INDEX-124); postings that disagree with the documents (INDEX-127)."""
    if remap is None:
        from reference_impl.index.remapped import Remap

        remap = Remap.of_moves(getattr(data, "moves", None))
    from reference_impl.index import Disagreement
    from reference_impl.index.ngram import members, sorted_unique

    name = index.name
    docs = content.entries
    params = content.extra.get("params")
    doc_ids = docs.column("row_id").to_numpy().astype(np.uint64)
    counts = docs.column("num_tokens").to_numpy().astype(np.int64)
    state = classify(data, doc_ids, remap)
    if remap is not None:
        doc_ids = remap.forward(doc_ids)[0]
    live = state == data.LIVE
    count_at = np.full(len(data.row_ids), -1, np.int64)
    count_at[data.positions(doc_ids[live])] = counts[live]
    for i, text in enumerate(data.values.to_pylist()):
        rid, n = int(data.row_ids[i]), int(count_at[i])
        if text is None:
            if n > 0:
                yield Disagreement(RULE_DOCUMENTS, f"INVERTED index {name!r}: row {rid} is "
                                   f"null but is a document of {n} tokens", rid, None)
            continue
        bounds = count_bounds(text, params)
        if bounds is None:
            continue
        if n < 0:
            if bounds[0] > 0:
                yield Disagreement(RULE_DOCUMENTS, f"INVERTED index {name!r}: row {rid} holds "
                                   f"{text!r} ({bounds[0]} tokens or more) but is not a "
                                   "document of the index", rid, text)
        elif not bounds[0] <= n <= bounds[1]:
            want = bounds[0] if bounds[0] == bounds[1] else f"{bounds[0]}..{bounds[1]}"
            yield Disagreement(RULE_DOCUMENTS, f"INVERTED index {name!r}: row {rid} holds "
                               f"{text!r} ({want} tokens) but its document counts {n}", rid,
                               text, {"num_tokens": n})
    # under stable row ids an updated row keeps its id in a new fragment: the entry of its
    # old value is a deleted row's (pylance drops it), not a row outside the index
    outside = (state == data.OUTSIDE) & (not data.stable_row_ids)
    for r in sorted_unique(doc_ids[outside]):
        yield Disagreement(RULE_OUTSIDE, f"INVERTED index {name!r}: document {int(r)} is no "
                           "row of the fragments the index covers", int(r), None)
    uniq = sorted_unique(doc_ids)
    if len(uniq) != len(doc_ids):
        yield Disagreement(RULE_CONSISTENT, f"INVERTED index {name!r}: "
                           f"{len(doc_ids) - len(uniq)} rows are documents more than once")
    by_id = content.extra.get("token_postings")
    if by_id is not None and by_id.num_rows:
        yield from _token_postings_against_text(by_id, name, data, params, remap, doc_ids,
                                                counts)
    postings = content.extra.get("postings")
    if postings is None or not postings.num_rows:
        return
    prow = postings.column("row_id").to_numpy().astype(np.uint64)
    if remap is not None:
        prow = remap.forward(prow)[0]
        postings = postings.set_column(postings.schema.get_field_index("row_id"), "row_id",
                                       pa.array(prow, pa.uint64()))
    freq = postings.column("frequency").to_numpy().astype(np.float64)
    stray = ~members(prow, uniq)
    if stray.any():
        yield Disagreement(RULE_CONSISTENT, f"INVERTED index {name!r}: {int(stray.sum())} "
                           "postings name rows that are not documents", int(prow[stray][0]))
    yield from _postings_against_text(postings, name, data, params)
    rows, inv = np.unique(prow, return_inverse=True)
    sums = np.rint(np.bincount(inv, weights=freq)).astype(np.int64)
    by_doc = dict(zip(doc_ids.tolist(), counts.tolist(), strict=True))
    for r, s in zip(rows.tolist(), sums.tolist(), strict=True):
        if r in by_doc and s != by_doc[r]:
            yield Disagreement(RULE_CONSISTENT, f"INVERTED index {name!r}: row {r}: its "
                               f"postings' frequencies sum to {s}, its document counts "
                               f"{by_doc[r]} tokens", r)


def _postings_against_text(postings: pa.Table, name: str, data, params):
    """INDEX-126: where the tokens are reproduced exactly, each covered row is listed under
    exactly the tokens of its text (a search for a token finds the rows holding it, and only
    them)."""
    from reference_impl.index import Disagreement

    prow = postings.column("row_id").to_numpy().astype(np.uint64)
    live = data.classify(prow) == data.LIVE
    at = data.positions(prow[live])
    listed: dict[int, set[str]] = {}
    for i, tok in zip(at.tolist(), np.asarray(postings.column("token").to_pylist(),
                                              dtype=object)[live].tolist(), strict=True):
        listed.setdefault(i, set()).add(tok)
    for i, text in enumerate(data.values.to_pylist()):
        if text is None:
            continue
        want = exact_tokens(text, params)
        if want is None:
            continue
        want_set, have = set(want), listed.get(i, set())
        rid = int(data.row_ids[i])
        for tok in sorted(want_set - have):
            yield Disagreement(RULE_POSTINGS, f"INVERTED index {name!r}: row {rid} holds "
                               f"{text!r} but is not listed under its token {tok!r}", rid,
                               text, {"token": tok})
        for tok in sorted(have - want_set):
            yield Disagreement(RULE_POSTINGS, f"INVERTED index {name!r}: row {rid} holds "
                               f"{text!r} but is listed under the token {tok!r}", rid, text,
                               {"token": tok})


def sure_words(text: str, params: dict | None) -> set[str] | None:
    """The words of ``text`` that each become a token under ``params`` whatever the
    stemmer makes of them (split, length limit, lower case and English stop words
    reproduced; with stemming, a word that might stem to a stop word is left out), or None
    when the text's tokens are not reproduced here."""
    if count_bounds(text, params) is None:
        return None
    base = params.get("base_tokenizer") or "simple"
    words = split_simple(text) if base == "simple" else split_whitespace(text)
    limit = params.get("max_token_length")
    if limit:
        words = [t for t in words if len(t.encode("utf-8")) < int(limit)]
    if params.get("lower_case", True):
        words = [t.lower() for t in words]
    if params.get("remove_stop_words", False):
        words = [t for t in words if t not in ENGLISH_STOP_WORDS]
        if params.get("stem", False):
            words = [t for t in words if not _may_stem_to_stop_word(t)]
    return set(words)


def _token_postings_against_text(by_id: pa.Table, name: str, data, params, remap, doc_ids,
                                 counts):
    """The decoded posting lists of the partitioned layout, whose tokens are known by id
    only: each document's frequencies sum to its token count (INDEX-127), and the rows
    holding one word are all listed under one token (INDEX-126: a word becomes the same
    token in every row, whatever the stemmer makes of it, so a search for it must find the
    rows together; a row listed under no token at all is never found)."""
    from reference_impl.index import Disagreement

    rows = by_id.column("row_id").to_numpy().astype(np.uint64)
    if remap is not None:
        rows = remap.forward(rows)[0]
    toks = by_id.column("token").to_numpy().astype(np.uint64)
    freq = by_id.column("frequency").to_numpy().astype(np.float64)
    uniq, inv = np.unique(rows, return_inverse=True)
    sums = np.rint(np.bincount(inv, weights=freq)).astype(np.int64)
    by_doc = dict(zip(doc_ids.tolist(), counts.tolist(), strict=True))
    bad = [(r, s) for r, s in zip(uniq.tolist(), sums.tolist(), strict=True)
           if r in by_doc and s != by_doc[r]]
    for r, s in bad[:10]:
        yield Disagreement(RULE_CONSISTENT, f"INVERTED index {name!r}: row {r}: its "
                           f"postings' frequencies sum to {s}, its document counts "
                           f"{by_doc[r]} tokens", r)
    if len(bad) > 10:
        yield Disagreement(RULE_CONSISTENT, f"INVERTED index {name!r}: {len(bad) - 10} more "
                           "rows whose postings' frequencies do not sum to their count")
    if params is None:
        return
    live = data.classify(rows) == data.LIVE
    listed: dict[int, set[int]] = {}
    for i, t in zip(data.positions(rows[live]).tolist(), toks[live].tolist(), strict=True):
        listed.setdefault(i, set()).add(t)
    # each partition numbers its own tokens: rows are compared within their partition. A
    # row listed under no token is not compared (INDEX-125 says when it should be a document)
    holding: dict[tuple[str, int], list[int]] = {}
    for i, text in enumerate(data.values.to_pylist()):
        if i not in listed or text is None:
            continue
        part = next(iter(listed[i])) >> 32
        for w in sure_words(text, params) or ():
            holding.setdefault((w, part), []).append(i)
    found = 0
    for (w, _part), at in holding.items():
        first = at[0]
        common = set(listed[first])
        lost = None
        for i in at[1:]:
            common &= listed[i]
            if not common:
                lost = i
                break
        if lost is None:
            continue
        found += 1
        if found > 10:
            continue
        rid, text = int(data.row_ids[lost]), data.values[lost].as_py()
        yield Disagreement(RULE_POSTINGS, f"INVERTED index {name!r}: row {rid} holds {text!r} "
                           f"and row {int(data.row_ids[first])} the word {w!r} too, but no "
                           "token of the index lists both (a search for it misses one)", rid,
                           text, {"word": w})
    if found > 10:
        yield Disagreement(RULE_POSTINGS, f"INVERTED index {name!r}: {found - 10} more words "
                           "whose rows no one token lists together")


def classify(data, rows: np.ndarray, remap=None) -> np.ndarray:
    """As :func:`reference_impl.index.ngram.classify`."""
    from reference_impl.index.ngram import classify as by_ngram

    return by_ngram(data, rows, remap)
