"""MINHASHLSH index: a MinHash signature of each row's text, cut into bands for lookup.

A near-duplicate search (``MinHashQuery``) signs the query text as the rows were signed,
takes as candidates the rows that share at least one *band key* with it, and ranks them by
the fraction of equal signature values (``_distance`` = 1 - that fraction). A row's stored
signature is therefore its answer: a signature that is not its text's ranks it wrong, and a
band key the bands table lacks hides it from every query that shares only that band.

pylance 14.0.2 writes the kind (``create_scalar_index(column, "MINHASHLSH")``, string
columns only); earlier releases do not. Details: ``MinHashLshIndexDetails`` (num_hashes,
num_bands, shingle_size, the tokenizer as an ``InvertedIndexDetails``, signature_version).

Signing a text (signature_version 0; arithmetic on unsigned 64-bit integers modulo 2**64):

1. tokens: the tokenizer the details record (:mod:`reference_impl.index.inverted_tokens`);
2. shingles: every run of ``shingle_size`` consecutive tokens, their UTF-8 bytes joined with
   the byte 0x1F; a text with fewer tokens has one shingle of all of them, a text with none
   (null, empty, every token dropped) has no signature and is not indexed;
3. ``x = XXH64(shingle, seed=42)`` for every shingle;
4. coefficients from SplitMix64 seeded 42 (:func:`coefficients`): ``a_i = draw | 1``,
   ``b_i = draw`` for each i in turn, then ``c_i = draw | 1`` for each i;
5. ``m_i = min over the shingles of (a_i * x + b_i)``, ``signature[i] = (c_i * m_i) >> 48``.

Band ``j`` is ``signature[j*r:(j+1)*r]`` with ``r = num_hashes / num_bands``; its key is
``(j << 56) | (XXH64(the band's values as 2-byte little-endian, seed=42) & (2**56 - 1))``.

Layout, one segment (:data:`FILES`)::

    signatures.lance   _rowid uint64, signature fixed_size_list<uint16>[num_hashes]
                       row i is document i of the segment
    bands.lance        band_key uint64, doc_id uint32 (document = row of signatures.lance),
                       sorted by (band_key, doc_id); cut into logical pages of
                       ``minhash_lsh_page_rows`` rows; a global buffer (number
                       ``minhash_lsh_page_table_buffer``) holds the last key of each page as
                       little-endian uint64 (the page table a lookup binary-searches)

Both files carry ``minhash_lsh_details`` (the details, serialized, lower-case hex) and
``minhash_lsh_index_version`` ("0") in their schema metadata; bands.lance also
``minhash_lsh_num_docs`` (rows of signatures.lance).

``entries``: ``row_id`` uint64 and ``signature`` (the stored list) per document.
``extra``: ``bands`` (the bands table), ``page_rows``, ``page_table`` (uint64 array) and
``params`` (:class:`Params`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from reference_impl.errors import FormatError, UnsupportedIndex

KIND = "minhash_lsh"
SIGNATURES = "signatures.lance"
BANDS = "bands.lance"
FILES = (SIGNATURES, BANDS)
VERSION = "minhash_lsh-v0"
SEED = 42
SHINGLE_JOIN = b"\x1f"
#: the bounds the details are held to before anything is allocated
MAX_HASHES, MAX_BANDS = 4096, 256
#: signature procedures this reader implements
SIGNATURE_VERSIONS = (0,)
FILE_VERSIONS = ("0",)

RULE_SIGNATURE = "INDEX-128"
RULE_BANDS = "INDEX-129"

_MASK = (1 << 64) - 1
_KEY_BITS = (1 << 56) - 1


@dataclass(frozen=True)
class Params:
    """The details that decide a signature, validated (:func:`params_of`)."""

    num_hashes: int
    num_bands: int
    shingle_size: int
    signature_version: int
    #: the tokenizer settings as :func:`reference_impl.index.inverted_tokens.model` takes them
    tokenizer: dict

    @property
    def rows_per_band(self) -> int:
        return self.num_hashes // self.num_bands


def params_of(details, *, path: str | None = None) -> Params:
    """The :class:`Params` of a ``MinHashLshIndexDetails`` message: FormatError (INDEX-100)
    for a value out of its range, UnsupportedIndex for a signature procedure not
    implemented here."""
    k, b, s = int(details.num_hashes), int(details.num_bands), int(details.shingle_size)
    if not 1 <= b <= MAX_BANDS or not 1 <= k <= MAX_HASHES or k % b or s < 1:
        raise FormatError(f"MINHASHLSH details num_hashes={k}, num_bands={b}, "
                          f"shingle_size={s} are out of range (num_hashes 1..{MAX_HASHES}, a "
                          f"multiple of num_bands 1..{MAX_BANDS}; shingle_size at least 1)",
                          rule="INDEX-100", path=path)
    if int(details.signature_version) not in SIGNATURE_VERSIONS:
        raise UnsupportedIndex(f"MINHASHLSH signature_version {details.signature_version} is "
                               f"not implemented (only {SIGNATURE_VERSIONS})", kind=KIND,
                               version=f"signature_version={details.signature_version}")
    if not details.HasField("tokenizer"):
        raise FormatError("MINHASHLSH details record no tokenizer", rule="INDEX-100",
                          path=path)
    t = details.tokenizer
    tokenizer = {
        "base_tokenizer": t.base_tokenizer if t.HasField("base_tokenizer") else "simple",
        "language": t.language or "English",
        "max_token_length": t.max_token_length if t.HasField("max_token_length") else None,
        "lower_case": t.lower_case, "stem": t.stem, "remove_stop_words": t.remove_stop_words,
        "ascii_folding": t.ascii_folding,
    }
    return Params(k, b, s, int(details.signature_version), tokenizer)


def coefficients(num_hashes: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(a, b, c)``, uint64 arrays of ``num_hashes``: the SplitMix64 draws (state seeded
    42) in the order the procedure takes them."""
    state = SEED

    def draw() -> int:
        nonlocal state
        state = (state + 0x9E3779B97F4A7C15) & _MASK
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
        return z ^ (z >> 31)

    a, b = [], []
    for _ in range(num_hashes):
        a.append(draw() | 1)
        b.append(draw())
    c = [draw() | 1 for _ in range(num_hashes)]
    return tuple(np.array(v, dtype=np.uint64) for v in (a, b, c))


def shingles(tokens: list[str], size: int) -> list[bytes]:
    """The shingles of a token stream (none for no tokens)."""
    if not tokens:
        return []
    join = SHINGLE_JOIN.decode()  # (0x1F is one byte in UTF-8: join, then encode once)
    if len(tokens) < size:
        return [join.join(tokens).encode("utf-8")]
    return [join.join(tokens[i:i + size]).encode("utf-8")
            for i in range(len(tokens) - size + 1)]


def sign_hashes(groups: list[np.ndarray], num_hashes: int) -> np.ndarray:
    """The signatures (uint16, one row per group) of groups of shingle hashes, each group
    non-empty: the readable form of steps 4 and 5, one group at a time."""
    a, b, c = coefficients(num_hashes)
    out = np.zeros((len(groups), num_hashes), np.uint16)
    with np.errstate(over="ignore"):
        for row, x in enumerate(groups):
            minima = (a[:, None] * np.asarray(x, np.uint64)[None, :] + b[:, None]).min(axis=1)
            out[row] = ((c * minima) >> np.uint64(48)).astype(np.uint16)
    return out


#: bytes of one block of permuted hashes :func:`sign_hash_groups` holds at once
BLOCK_BYTES = 32 << 20


def sign_hash_groups(hashes: np.ndarray, sizes: np.ndarray, num_hashes: int) -> np.ndarray:
    """:func:`sign_hashes` of the groups ``hashes[0:sizes[0]]``, ``hashes[sizes[0]:...]``, ...
    (every size at least 1) computed over blocks of groups at once (a minimum per group by
    ``np.minimum.reduceat``); tested equal to it."""
    a, b, c = coefficients(num_hashes)
    sizes = np.asarray(sizes, np.int64)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    out = np.zeros((len(sizes), num_hashes), np.uint16)
    per_block = max(1, BLOCK_BYTES // (8 * num_hashes))
    g = 0
    with np.errstate(over="ignore"):
        while g < len(sizes):
            end = g + 1
            while end < len(sizes) and starts[end] + sizes[end] - starts[g] <= per_block:
                end += 1
            lo, hi = int(starts[g]), int(starts[end - 1] + sizes[end - 1])
            x = np.asarray(hashes[lo:hi], np.uint64)
            permuted = a[:, None] * x[None, :] + b[:, None]
            minima = np.minimum.reduceat(permuted, starts[g:end] - lo, axis=1)
            out[g:end] = ((c[:, None] * minima) >> np.uint64(48)).T.astype(np.uint16)
            g = end
    return out


def band_keys(signatures: np.ndarray, num_bands: int) -> np.ndarray:
    """The band keys (uint64, shape ``(rows, num_bands)``) of signatures (uint16 rows)."""
    from reference_impl.index.xxhash64 import xxh64_rows

    signatures = np.ascontiguousarray(signatures, dtype="<u2")
    rows, k = signatures.shape
    r = k // num_bands
    out = np.zeros((rows, num_bands), np.uint64)
    for j in range(num_bands):
        band = np.ascontiguousarray(signatures[:, j * r:(j + 1) * r]).view(np.uint8)
        h = xxh64_rows(band.reshape(rows, 2 * r), SEED) if rows else np.zeros(0, np.uint64)
        out[:, j] = (np.uint64(j) << np.uint64(56)) | (h & np.uint64(_KEY_BITS))
    return out


def text_signatures(texts: pa.Array, params: Params) -> tuple[np.ndarray, np.ndarray]:
    """``(state, signatures)`` for each text: ``state`` is 1 where the text has a signature
    (its row of ``signatures``), 0 where it has none (null, or no tokens: not indexed) and
    -1 where the tokenizer model cannot reproduce the writer's tokens for it (not judged).
    UnsupportedIndex when the recorded tokenizer is not modelled."""
    from reference_impl.index.inverted_tokens import model
    from reference_impl.index.xxhash64 import xxh64_many

    m = model(params.tokenizer, stop_list="v2")
    quick = ascii_tokens(m)
    state = np.zeros(len(texts), np.int8)
    groups, flat = [], []
    for i, text in enumerate(texts.to_pylist()):
        if text is None:
            continue
        tokens = quick(text) if quick is not None and text.isascii() else None
        if tokens is None:
            pairs = m.stream(text)
            if pairs is None or any(m.is_unsure(t) for t, _ in pairs):
                state[i] = -1
                continue
            tokens = [t for t, _ in pairs]
        sh = shingles(tokens, params.shingle_size)
        if sh:
            state[i] = 1
            groups.append(len(sh))
            flat.extend(sh)
    hashes = xxh64_many(flat, SEED) if flat else np.zeros(0, np.uint64)
    return state, sign_hash_groups(hashes, np.asarray(groups, np.int64), params.num_hashes)


def ascii_tokens(m):
    """For a tokenizer model without stemming or stop words, a function giving the tokens
    of an ASCII text in one regular-expression pass (``Model.stream``'s tokens of the same
    text, tested equal); None for other models."""
    from reference_impl.index.inverted_tokens import _ALNUM_RUNS, _ASCII_SPACE

    if m.stem is not None or m.stop_words is not None or m.base not in ("simple",
                                                                         "whitespace"):
        return None
    limit, lower = m.max_bytes, m.lower_case
    if m.base == "simple":
        def split(text: str) -> list[str]:
            return _ALNUM_RUNS.findall(text)
    else:
        def split(text: str) -> list[str]:
            return [t for t in _ASCII_SPACE.split(text) if t]

    def tokens(text: str) -> list[str]:
        found = split(text.lower() if lower else text)
        return found if limit is None else [t for t in found if len(t) < limit]

    return tokens


# ---- reading ----

def _meta(reader, key: bytes, path: str) -> str:
    meta = reader.schema.metadata or {}
    if key not in meta:
        raise FormatError(f"MINHASHLSH file lacks schema metadata {key.decode()!r}",
                          rule="INDEX-100", path=path)
    return meta[key].decode("utf-8", "replace")


def _same_details(reader, index, path: str) -> None:
    """The file's ``minhash_lsh_details`` must be the index's own details."""
    from reference_impl.proto import index_pb2

    raw = _meta(reader, b"minhash_lsh_details", path)
    try:
        msg = index_pb2.MinHashLshIndexDetails.FromString(bytes.fromhex(raw))
    except Exception as exc:  # noqa: BLE001 - bad hex or protobuf bytes
        raise FormatError(f"MINHASHLSH minhash_lsh_details does not decode: {exc}",
                          rule="INDEX-100", path=path) from None
    own = index.details.message if index.details is not None else None
    if own is not None and msg != own:
        raise FormatError("MINHASHLSH minhash_lsh_details of the file differ from the "
                          "index's details: the file does not belong to this index",
                          rule="INDEX-100", path=path)
    version = _meta(reader, b"minhash_lsh_index_version", path)
    if version not in FILE_VERSIONS:
        raise UnsupportedIndex(f"MINHASHLSH file layout version {version!r} is not read "
                               f"(only {FILE_VERSIONS})", kind=KIND,
                               version=f"index_version={version}")


def _positive_int(text: str, what: str, path: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise FormatError(f"MINHASHLSH {what} {text!r} is not a non-negative integer",
                          rule="INDEX-100", path=path)
    return value


def read(files, index):
    """Decode the two files of a MINHASHLSH segment into an :class:`IndexContent`."""
    from reference_impl.index import IndexContent, need_columns

    missing = [f for f in FILES if not files.has(f)]
    if missing:
        raise UnsupportedIndex(f"MINHASHLSH index {index.name!r} lacks {missing} (files: "
                               f"{files.names()}); no other layout is known", kind=KIND)
    if index.details is None or index.details.message is None:
        raise UnsupportedIndex(f"MINHASHLSH index {index.name!r} has no decoded details",
                               kind=KIND)
    params = params_of(index.details.message, path=files.key(SIGNATURES))
    sig_reader = files.lance_file(SIGNATURES)
    sig_path = files.key(SIGNATURES)
    need_columns(sig_reader.schema.names, ("_rowid", "signature"), what=SIGNATURES,
                 kind=KIND)
    _same_details(sig_reader, index, sig_path)
    sig_type = sig_reader.schema.field("signature").type
    if (not pa.types.is_fixed_size_list(sig_type) or sig_type.list_size != params.num_hashes
            or sig_type.value_type != pa.uint16()):
        raise FormatError(f"MINHASHLSH signature column is {sig_type}, not "
                          f"fixed_size_list<uint16>[{params.num_hashes}]", rule="INDEX-100",
                          path=sig_path)
    sigs = sig_reader.read_all().select(["_rowid", "signature"])
    rowid = sigs.column("_rowid").combine_chunks()
    signature = sigs.column("signature").combine_chunks()
    if rowid.type != pa.uint64() or rowid.null_count or signature.null_count:
        raise FormatError(f"MINHASHLSH {SIGNATURES} holds nulls or a _rowid of type "
                          f"{rowid.type}", rule="INDEX-100", path=sig_path)
    band_reader = files.lance_file(BANDS)
    band_path = files.key(BANDS)
    need_columns(band_reader.schema.names, ("band_key", "doc_id"), what=BANDS, kind=KIND)
    _same_details(band_reader, index, band_path)
    bands = band_reader.read_all().select(["band_key", "doc_id"])
    for name, want in (("band_key", pa.uint64()), ("doc_id", pa.uint32())):
        col = bands.column(name)
        if col.type != want or col.null_count:
            raise FormatError(f"MINHASHLSH {BANDS} column {name} is {col.type} with "
                              f"{col.null_count} nulls, not non-null {want}",
                              rule="INDEX-100", path=band_path)
    num_docs = _positive_int(_meta(band_reader, b"minhash_lsh_num_docs", band_path),
                             "minhash_lsh_num_docs", band_path)
    if num_docs != sigs.num_rows:
        raise FormatError(f"MINHASHLSH minhash_lsh_num_docs is {num_docs}, but "
                          f"{SIGNATURES} holds {sigs.num_rows} documents", rule="INDEX-100",
                          path=band_path)
    docs = bands.column("doc_id").to_numpy()
    if len(docs) and int(docs.max()) >= num_docs:
        raise FormatError(f"MINHASHLSH {BANDS} names document {int(docs.max())} of "
                          f"{num_docs}", rule="INDEX-100", path=band_path)
    page_rows = _positive_int(_meta(band_reader, b"minhash_lsh_page_rows", band_path),
                              "minhash_lsh_page_rows", band_path)
    buffer = _positive_int(_meta(band_reader, b"minhash_lsh_page_table_buffer", band_path),
                           "minhash_lsh_page_table_buffer", band_path)
    if page_rows == 0:
        raise FormatError("MINHASHLSH minhash_lsh_page_rows is 0", rule="INDEX-100",
                          path=band_path)
    raw = band_reader.container.read_global_buffer(buffer)
    pages = math.ceil(bands.num_rows / page_rows)
    if len(raw) != 8 * pages:
        raise FormatError(f"MINHASHLSH page table holds {len(raw)} bytes, not {pages} uint64 "
                          f"for {bands.num_rows} rows in pages of {page_rows}",
                          rule="INDEX-100", path=band_path)
    entries = pa.table({"row_id": rowid, "signature": signature})
    summary = {"documents": sigs.num_rows, "band_rows": bands.num_rows,
               "num_hashes": params.num_hashes, "num_bands": params.num_bands,
               "shingle_size": params.shingle_size}
    return IndexContent(kind=KIND, version=VERSION, entries=entries, summary=summary,
                        extra={"bands": bands, "page_rows": page_rows, "params": params,
                               "page_table": np.frombuffer(raw, "<u8").astype(np.uint64)})


# ---- holding the index against its data ----

def stored_signatures(content) -> np.ndarray:
    """The stored signatures of a decoded segment, one uint16 row per document."""
    k = content.extra["params"].num_hashes
    values = content.entries.column("signature").combine_chunks().flatten()
    return values.to_numpy(zero_copy_only=False).astype(np.uint16).reshape(-1, k)


def check(content, index, data, remap=None):
    """Yield a :class:`Disagreement` for each way the segment disagrees with its rows
    (INDEX-128: a stored signature that is not its row's text's, a row without tokens
    indexed; INDEX-101/103: a row with a signature left out, a row outside the
    covered fragments) and with itself (INDEX-129: the bands table is not the band keys of
    the stored signatures in order, or its page table does not bound its pages)."""
    from reference_impl.index import Disagreement, IndexedData
    from reference_impl.index.against import ROW_MISSING, ROW_OUTSIDE, _capped, _row_text

    params = content.extra["params"]
    name = index.name
    stored = stored_signatures(content)
    named = np.asarray(content.entries.column("row_id").to_numpy(), np.uint64)
    rows = data.translate(named) if data.moves else named
    kind = data.classify(rows)
    state, expected = text_signatures(data.values, params)
    at = np.full(len(data.row_ids), -1, np.int64)
    at[np.flatnonzero(state == 1)] = np.arange(int((state == 1).sum()))
    outside, wrong = [], []
    live = np.flatnonzero(kind == IndexedData.LIVE)
    pos = data.positions(rows[live]).astype(np.int64)
    seen = np.zeros(len(data.row_ids), bool)
    seen[pos] = True
    # the usual document, judged at once: its row's only one, under the row's signature (or
    # of a text not reproduced); every other document is judged below, row by row
    once = np.bincount(pos, minlength=len(data.row_ids))[pos] == 1
    signed = state[pos] == 1
    same = np.zeros(len(live), bool)
    same[signed] = np.all(stored[live[signed]] == expected[at[pos[signed]]], axis=1)
    plain = once & (same | (state[pos] == -1))
    docs_of: dict[int, list[int]] = {}
    for doc, p in zip(live[~plain].tolist(), pos[~plain].tolist(), strict=True):
        docs_of.setdefault(p, []).append(doc)
    for p, docs in docs_of.items():
        r = int(data.row_ids[p])
        doc = docs[0]
        if state[p] == 0:
            wrong.append(Disagreement(
                RULE_SIGNATURE, f"MINHASHLSH index {name!r} holds a signature for row "
                f"{_row_text(r, data)} (document {doc}), whose {data.field_name!r} has no "
                "tokens: a text without tokens has no signature and is never an answer", r,
                None, {"document": doc}))
        elif state[p] == 1:
            # a row may be a document twice (with stable row ids an updated row keeps its id
            # beside its old document): its own signature must be among them
            differ = min(int((stored[d] != expected[at[p]]).sum()) for d in docs)
            if differ:
                wrong.append(Disagreement(
                    RULE_SIGNATURE, f"MINHASHLSH index {name!r}: the signature of row "
                    f"{_row_text(r, data)} (document {doc}) differs from its text's in "
                    f"{differ} of {params.num_hashes} values, so a near-duplicate search "
                    f"ranks it {differ / params.num_hashes:.2f} too far from itself", r,
                    None, {"document": doc, "values_differ": differ}))
    for doc in np.flatnonzero(kind == IndexedData.OUTSIDE).tolist():
        r = int(rows[doc])
        outside.append(Disagreement(ROW_OUTSIDE, f"index {name!r} names row "
                                    f"{_row_text(r, data)} (document {doc}), which is not a "
                                    "row of the fragments it covers", r, None,
                                    {"document": doc}))
    missing = [Disagreement(ROW_MISSING, f"index {name!r} does not name row "
                            f"{_row_text(int(data.row_ids[p]), data)}, a live row of a "
                            f"fragment it covers whose {data.field_name!r} has tokens",
                            int(data.row_ids[p]), None)
               for p in np.flatnonzero((state == 1) & ~seen).tolist()]
    yield from _capped(outside, ROW_OUTSIDE, "rows outside the covered fragments", name)
    yield from _capped(missing, ROW_MISSING, "rows with tokens not in the index", name)
    yield from _capped(wrong, RULE_SIGNATURE, "rows whose signature is not their text's",
                       name)
    yield from _capped(list(bands_disagreements(content, name)), RULE_BANDS,
                       "band table disagreements", name)


def bands_disagreements(content, name: str):
    """The bands table against the band keys of the stored signatures: every (key,
    document) pair present, no other, sorted; each page table entry the last key of its
    page."""
    from reference_impl.index import Disagreement

    params = content.extra["params"]
    bands = content.extra["bands"]
    keys = bands.column("band_key").to_numpy().astype(np.uint64)
    docs = bands.column("doc_id").to_numpy().astype(np.uint64)
    stored = stored_signatures(content)
    want = band_keys(stored, params.num_bands)
    want_docs = np.repeat(np.arange(len(stored), dtype=np.uint64), params.num_bands)
    want_keys = want.reshape(-1)
    order = np.lexsort((want_docs, want_keys))
    want_keys, want_docs = want_keys[order], want_docs[order]
    unsorted = np.flatnonzero((keys[1:] < keys[:-1])
                              | ((keys[1:] == keys[:-1]) & (docs[1:] < docs[:-1])))
    for i in unsorted[:3].tolist():
        yield Disagreement(RULE_BANDS, f"MINHASHLSH index {name!r}: bands row {i + 1} (key "
                           f"{int(keys[i + 1]):#018x}, document {int(docs[i + 1])}) sorts "
                           "before the row above it, so a lookup by key can miss it", None,
                           None, {"band_row": i + 1})
    if len(keys) != len(want_keys) or not (np.array_equal(keys, want_keys)
                                          and np.array_equal(docs, want_docs)):
        pairs = np.dtype([("key", "<u8"), ("doc", "<u8")])
        have, expect = np.zeros(len(keys), pairs), np.zeros(len(want_keys), pairs)
        have["key"], have["doc"] = keys, docs
        expect["key"], expect["doc"] = want_keys, want_docs
        r = params.rows_per_band
        for key, doc in expect[~np.isin(expect, have)][:11].tolist():
            band = key >> 56
            yield Disagreement(RULE_BANDS, f"MINHASHLSH index {name!r}: document {doc} is "
                               f"not under the key {key:#018x} of its band {band} (signature "
                               f"values {band * r}..{band * r + r - 1}), so a query sharing "
                               "that band does not find it", None, None,
                               {"document": doc, "band": band})
        for key, doc in have[~np.isin(have, expect)][:11].tolist():
            yield Disagreement(RULE_BANDS, f"MINHASHLSH index {name!r}: document {doc} is "
                               f"under the key {key:#018x}, which no band of its signature "
                               "has", None, None, {"document": doc})
    page_rows, table = content.extra["page_rows"], content.extra["page_table"]
    for p in range(len(table)):
        last = min((p + 1) * page_rows, len(keys)) - 1
        if int(table[p]) != int(keys[last]):
            yield Disagreement(RULE_BANDS, f"MINHASHLSH index {name!r}: page table entry {p} "
                               f"is {int(table[p]):#018x}, not the last key of its page "
                               f"({int(keys[last]):#018x}), so a lookup reads the wrong "
                               "pages", None, None, {"page": p})
