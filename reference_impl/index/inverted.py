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

**Partitioned layout** (0.3x releases up to 14.0.2)::

    metadata.lance          schema metadata "params" (tokenizer settings as JSON),
                            "partitions" (JSON list of partition ids), "token_set_format"
                            ("fst"); from 4.x "posting_tail_codec"; from 9.0.1
                            "format_version" "2", "posting_block_size" "128" and, with
                            positions, "positions_codec" / "positions_layout"
    part_N_tokens.lance     one row: _token_fst_bytes (an FST of token -> token id, see
                            :mod:`reference_impl.index.fst`), _token_next_id (token count)
    part_N_invert.lance     row i = token i: _posting (list of compressed blocks), _length
                            (documents), _max_score, [_impacts], and with positions either
                            _position (per document) or _compressed_position +
                            _position_block_offset (see :mod:`.inverted_postings`)
    part_N_docs.lance       _rowid uint64, _num_tokens uint32   one row per document; a
                            posting names a document by its row number here

This reader decodes, for both layouts, the documents (row ids and token counts) and the
postings; for the partitioned layout also the positions. A layout setting it does not know
(a codec, a block size, a token set format) and an unknown file set are refused
(UnsupportedIndex naming them).

``entries`` has one row per document: ``row_id`` uint64, ``num_tokens`` uint32,
``partition`` int32. ``extra["postings"]`` is a table of (``token`` string, ``row_id``
uint64, ``frequency`` float32) and, for the partitioned layout, ``positions``
list<uint32> (null without positions) and ``partition`` int32; ``extra["params"]`` the
tokenizer settings the metadata records (dict, or None). The tokenizer those settings
describe is modelled in :mod:`reference_impl.index.inverted_tokens`.
"""

from __future__ import annotations

import dataclasses
import json
import re

import numpy as np
import pyarrow as pa

from reference_impl.errors import FormatError, UnsupportedIndex
from reference_impl.index import fst, need_columns
from reference_impl.index.inverted_postings import (
    BLOCK,
    TAIL_CODECS,
    positions_per_doc,
    positions_shared,
    posting_list,
)
from reference_impl.index.inverted_tokens import (  # noqa: F401  (the model's names, re-exported)
    ENGLISH_STOP_WORDS,
    SNOWBALL_2,
    SNOWBALL_2_OR_3,
    SNOWBALL_3,
    STOP_LISTS,
    exact_tokens,
    model,
    split_simple,
    split_whitespace,
)

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
                               "postings_layout": "legacy", "stop_list": "lucene",
                               "stemmer": SNOWBALL_2})


#: metadata.lance settings of the partitioned layout and the values this reader decodes
#: (None: the setting is absent, as 0.3x releases write it)
KNOWN_LAYOUT = {
    "token_set_format": (None, "fst"),
    "format_version": (None, "1", "2"),
    "posting_tail_codec": (None, *TAIL_CODECS),
    "posting_block_size": (None, str(BLOCK)),
    "positions_codec": (None, "packed_delta_v1"),
    "positions_layout": (None, "shared_stream_v2"),
}


def _layout(meta: dict, path: str) -> dict:
    """The partitioned layout's settings from metadata.lance; a value this reader does not
    decode is refused (UnsupportedIndex naming the setting)."""
    layout = {k: (meta[k.encode()].decode(errors="replace") if k.encode() in meta else None)
              for k in KNOWN_LAYOUT}
    for k, allowed in KNOWN_LAYOUT.items():
        if layout[k] not in allowed:
            raise UnsupportedIndex(f"INVERTED metadata.lance {k}={layout[k]!r}: this reader "
                                   f"decodes {[a for a in allowed if a]}", kind=KIND,
                                   version=f"{k}={layout[k]}", path=path)
    return layout


def _partition_tokens(files, p: int) -> list[str]:
    """The tokens of partition ``p`` by token id, from ``part_p_tokens.lance``: one row whose
    ``_token_fst_bytes`` is an FST of token -> token id (:mod:`reference_impl.index.fst`),
    the ids 0..n-1, each once; ``_token_next_id`` the next id to hand out (n, or more after
    a compaction dropped a token)."""
    name = f"part_{p}_tokens.lance"
    path = files.key(name)
    reader = files.lance_file(name)
    need_columns(reader.schema.names, ["_token_fst_bytes"], what=f"INVERTED {name}",
                 kind=KIND, version="inverted-partitioned")
    t = reader.read_all()
    if t.num_rows != 1:
        raise FormatError(f"INVERTED {name} has {t.num_rows} rows, not 1", path=path)
    pairs = fst.entries(t.column("_token_fst_bytes")[0].as_py() or b"", path)
    tokens: list[str | None] = [None] * len(pairs)
    for key, tid in pairs:
        if tid >= len(pairs) or tokens[tid] is not None:
            raise FormatError(f"INVERTED {name}: token ids are not 0..{len(pairs) - 1}, "
                              "each once", path=path)
        try:
            tokens[tid] = key.decode("utf-8")
        except UnicodeDecodeError:
            raise FormatError(f"INVERTED {name}: token {key!r} is not UTF-8",
                              path=path) from None
    # the next id to hand out: a compaction that drops a token keeps it (0.38.3, 4.0.2)
    next_id = t.column("_token_next_id")[0].as_py() if "_token_next_id" in t.column_names \
        else None
    if next_id is not None and next_id < len(tokens):
        raise FormatError(f"INVERTED {name}: _token_next_id is {next_id}, below the "
                          f"{len(tokens)} tokens the FST holds", path=path)
    return tokens


def _partition_postings(files, p: int, tokens: list[str], row_ids: np.ndarray,
                        layout: dict) -> pa.Table:
    """The postings of partition ``p`` in logical form, from ``part_p_invert.lance``: row i
    is token i, ``_length`` its number of documents, ``_posting`` its blocks, and with
    positions either ``_position`` (per document) or ``_compressed_position`` +
    ``_position_block_offset`` (one stream per token); see
    :mod:`reference_impl.index.inverted_postings`. Doc ids are positions in
    ``part_p_docs.lance`` and become its row ids here."""
    name = f"part_{p}_invert.lance"
    path = files.key(name)
    reader = files.lance_file(name)
    cols = reader.schema.names
    need_columns(cols, ["_posting", "_length"], what=f"INVERTED {name}", kind=KIND,
                 version="inverted-partitioned")
    if reader.num_rows != len(tokens):
        raise FormatError(f"INVERTED {name} has {reader.num_rows} rows for {len(tokens)} "
                          "tokens", path=path)
    shared = "_compressed_position" in cols
    per_doc = "_position" in cols
    wanted = ["_posting", "_length"] + (["_compressed_position", "_position_block_offset"]
                                        if shared else ["_position"] if per_doc else [])
    t = reader.read_columns(wanted)
    codec = layout["posting_tail_codec"] or "fixed32_v1"
    tok_col, row_col, freq_col, pos_col = [], [], [], []
    total = 0
    for tid, (blocks, length) in enumerate(zip(t.column("_posting").to_pylist(),
                                               t.column("_length").to_pylist(), strict=True)):
        total += length
        if total > MAX_ROWS:
            raise FormatError(f"INVERTED {name} holds more than {MAX_ROWS} postings", path=path)
        docs, freqs = posting_list(blocks, length, codec, path)
        if len(docs) and docs[-1] >= len(row_ids):
            raise FormatError(f"INVERTED {name}: token {tokens[tid]!r} names doc "
                              f"{int(docs[-1])} of {len(row_ids)}", path=path)
        if shared:
            pos = positions_shared(t.column("_compressed_position")[tid].as_py(),
                                   t.column("_position_block_offset")[tid].as_py(), freqs,
                                   path)
        elif per_doc:
            pos = [positions_per_doc(chunks, path)
                   for chunks in t.column("_position")[tid].as_py()]
            if [len(x) for x in pos] != freqs.tolist():
                raise FormatError(f"INVERTED {name}: token {tokens[tid]!r}: positions per "
                                  "document differ from its frequencies", path=path)
        else:
            pos = [None] * len(docs)
        tok_col.extend([tokens[tid]] * len(docs))
        row_col.append(row_ids[docs])
        freq_col.append(freqs)
        pos_col.extend(pos)
    rows = np.concatenate(row_col) if row_col else np.zeros(0, np.uint64)
    freq = np.concatenate(freq_col) if freq_col else np.zeros(0, np.int64)
    return pa.table({"token": pa.array(tok_col, pa.string()),
                     "row_id": pa.array(rows.astype(np.uint64), pa.uint64()),
                     "frequency": pa.array(freq.astype(np.float32), pa.float32()),
                     "positions": pa.array(pos_col, pa.list_(pa.uint32())),
                     "partition": pa.array(np.full(len(rows), p, np.int32))})


def _partitioned(files, index):
    """The partitioned layout: metadata.lance (settings) and, per partition, its documents,
    its token FST and its postings, each decoded by its own function above."""
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
    layout = _layout(meta, path)
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
    doc_tables, posting_tables = [], []
    for p in parts:
        docs = _docs(files, f"part_{p}_docs.lance", p)
        doc_tables.append(docs)
        row_ids = docs.column("row_id").to_numpy().astype(np.uint64)
        posting_tables.append(_partition_postings(files, p, _partition_tokens(files, p),
                                                  row_ids, layout))
    docs = pa.concat_tables(doc_tables) if parts else \
        pa.table({"row_id": pa.array([], pa.uint64()), "num_tokens": pa.array([], pa.uint32()),
                  "partition": pa.array([], pa.int32())})
    postings = pa.concat_tables(posting_tables) if parts else None
    shown = {k: v for k, v in layout.items() if v is not None}
    summary = {"layout": "partitioned", "partitions": parts, "documents": docs.num_rows,
               "postings_decoded": True,
               "postings": postings.num_rows if postings is not None else 0, **shown}
    version = "inverted-partitioned/" + (layout.get("token_set_format") or "?") + "/v" + \
        (layout.get("format_version") or "1")
    return IndexContent(kind=KIND, version=version, entries=docs, summary=summary,
                        extra={"postings": postings, "params": params,
                               "postings_layout": shown, **_generation(layout)})


def _generation(layout: dict) -> dict:
    """Which writer generation's English stop list and stemmer the index was built with, as
    far as its files tell: format_version "2" (9.0.1 on) has the longer stop list and is
    written by releases of either stemmer (10.0.0: Snowball 2, 11.0.0 on: Snowball 3, the
    same keys); earlier layouts stem with Snowball 2."""
    v2 = layout["format_version"] == "2"
    return {"stop_list": "v2" if v2 else "lucene",
            "stemmer": SNOWBALL_2_OR_3 if v2 else SNOWBALL_2}


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


def count_bounds(text: str, params: dict | None, stop_list: str = "lucene",
                 stemmer: str = SNOWBALL_3) -> tuple[int, int] | None:
    """``(least, most)`` tokens the writer can count for ``text`` under ``params`` (the
    settings recorded in the index metadata), or None when they cannot be bounded here.
    Where the tokenizer model reproduces the tokens (:mod:`.inverted_tokens`) the count is
    exact but for tokens the writer may or may not drop as stop words (counted in ``most``
    only); with stemming but no stemmer installed, a token whose stem might be a stop word
    (one starting like a stop word) is counted in ``most`` only."""
    if params is None:
        return None
    try:
        tokenizer = model(params, stop_list, stemmer)
    except UnsupportedIndex:
        tokenizer = None
    if tokenizer is not None:
        # folding comes last and drops no token: the count does not depend on it
        pairs = dataclasses.replace(tokenizer, ascii_folding=False).stream(text)
        if pairs is None:
            return None
        unsure = sum(1 for t, _ in pairs if t in tokenizer.unsure)
        return len(pairs) - unsure, len(pairs)
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
    kept = [t for t in tokens if t not in STOP_LISTS[stop_list][0]]
    if not params.get("stem", False):
        return len(kept), len(kept)
    if stop_list != "lucene":
        return None
    unsure = sum(1 for t in kept if _may_stem_to_stop_word(t))
    return len(kept) - unsure, len(kept)


RULE_DOCUMENTS = "INDEX-125"
RULE_POSTINGS = "INDEX-126"
RULE_CONSISTENT = "INDEX-127"
RULE_OUTSIDE = "INDEX-124"


def check(content, index, data, remap=None):
    """Yield a :class:`Disagreement` for each way the index disagrees with the rows it covers
    (see :func:`_disagreements`). When the postings are decoded but the recorded tokenizer
    settings are not modelled (:func:`reference_impl.index.inverted_tokens.model`), the
    postings cannot be held against the text: if nothing else disagrees the index is refused
    (UnsupportedIndex naming the setting: "not judged"), else what disagrees is reported."""
    refusal = None
    params = content.extra.get("params")
    stemmer = content.extra.get("stemmer", SNOWBALL_3)
    if content.extra.get("postings") is not None and params is not None:
        try:
            model(params, content.extra.get("stop_list", "lucene"), stemmer)
        except UnsupportedIndex as exc:
            refusal = exc
    found = list(_disagreements(content, index, data, remap))
    if refusal is not None and not found:
        raise refusal
    yield from found


def _disagreements(content, index, data, remap=None):
    """The documents against the rows they cover (INDEX-125): a row with tokens that is not
    a document (a search through the index never finds it), a document whose token count is
    outside what its text gives under the recorded settings, a null row listed with tokens;
    a document outside the covered fragments (INDEX-124); postings that disagree with the
    documents (INDEX-127) or with the tokens of the text (INDEX-126)."""
    if remap is None:
        from reference_impl.index.remapped import Remap

        remap = Remap.of_moves(getattr(data, "moves", None))
    from reference_impl.index import Disagreement
    from reference_impl.index.ngram import members, sorted_unique

    name = index.name
    docs = content.entries
    params = content.extra.get("params")
    stop_list = content.extra.get("stop_list", "lucene")
    stemmer = content.extra.get("stemmer", SNOWBALL_3)
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
        bounds = count_bounds(text, params, stop_list, stemmer)
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
    yield from _postings_against_text(postings, name, data, params, stop_list, stemmer)
    rows, inv = np.unique(prow, return_inverse=True)
    sums = np.rint(np.bincount(inv, weights=freq)).astype(np.int64)
    by_doc = dict(zip(doc_ids.tolist(), counts.tolist(), strict=True))
    for r, s in zip(rows.tolist(), sums.tolist(), strict=True):
        if r in by_doc and s != by_doc[r]:
            yield Disagreement(RULE_CONSISTENT, f"INVERTED index {name!r}: row {r}: its "
                               f"postings' frequencies sum to {s}, its document counts "
                               f"{by_doc[r]} tokens", r)


def _postings_against_text(postings: pa.Table, name: str, data, params, stop_list: str,
                           stemmer: str):
    """INDEX-126: where the tokens are reproduced exactly (:mod:`.inverted_tokens`), each
    covered row is listed under exactly the tokens of its text (a search for a token finds
    the rows holding it, and only them), and where positions are stored, with the positions
    the token has in the text (a phrase search answers from them)."""
    from reference_impl.index import Disagreement

    try:
        tokenizer = model(params, stop_list, stemmer)
    except UnsupportedIndex:
        return                                  # check() refuses or reports the rest
    prow = postings.column("row_id").to_numpy().astype(np.uint64)
    live = data.classify(prow) == data.LIVE
    at = data.positions(prow[live])
    has_positions = "positions" in postings.column_names
    tokens = np.asarray(postings.column("token").to_pylist(), dtype=object)[live]
    positions = (np.asarray(postings.column("positions").to_pylist() + [None],
                            dtype=object)[:-1][live] if has_positions
                 else [None] * len(tokens))
    listed: dict[int, dict[str, list | None]] = {}
    for i, tok, pos in zip(at.tolist(), tokens.tolist(), list(positions), strict=True):
        listed.setdefault(i, {})[tok] = pos
    for i, text in enumerate(data.values.to_pylist()):
        if text is None:
            continue
        pairs = tokenizer.stream(text)
        if pairs is None:
            continue
        want: dict[str, list[int]] = {}
        for tok, pos in pairs:
            if not tokenizer.is_unsure(tok):
                want.setdefault(tok, []).append(pos)
        have = {t: p for t, p in listed.get(i, {}).items() if not tokenizer.is_unsure(t)}
        rid = int(data.row_ids[i])
        for tok in sorted(set(want) - set(have)):
            yield Disagreement(RULE_POSTINGS, f"INVERTED index {name!r}: row {rid} holds "
                               f"{text!r} but is not listed under its token {tok!r}", rid,
                               text, {"token": tok})
        for tok in sorted(set(have) - set(want)):
            yield Disagreement(RULE_POSTINGS, f"INVERTED index {name!r}: row {rid} holds "
                               f"{text!r} but is listed under the token {tok!r}", rid, text,
                               {"token": tok})
        for tok in sorted(set(have) & set(want)):
            if have[tok] is not None and list(have[tok]) != want[tok]:
                yield Disagreement(RULE_POSTINGS, f"INVERTED index {name!r}: row {rid} holds "
                                   f"{text!r}: its token {tok!r} is at positions "
                                   f"{want[tok]}, the index lists {list(have[tok])}", rid,
                                   text, {"token": tok})


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


def classify(data, rows: np.ndarray, remap=None) -> np.ndarray:
    """As :func:`reference_impl.index.ngram.classify`."""
    from reference_impl.index.ngram import classify as by_ngram

    return by_ngram(data, rows, remap)
