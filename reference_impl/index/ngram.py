"""NGRAM index: for each trigram of a text column, the rows whose text contains it.

Layout (one Lance file, ``ngram_postings.lance``, one row per trigram), as pylance writes it
from the release that introduced the kind up to 14.0.2::

    tokens        uint32   the trigram's number (0: the rows whose text is null)
    posting_list  binary   the rows holding it: a 64-bit Roaring bitmap ("treemap")
                           of row ids (row addresses, or stable row ids when the table
                           uses them)

The 64-bit Roaring serialization is ``u64-LE count`` then, per bucket, ``u32-LE high 32
bits`` and a portable 32-bit Roaring bitmap of the low 32 bits.

Tokenisation (the same in every release that writes the kind): the text is lower-cased and
ASCII-folded as a whole, cut into every window of three consecutive *characters*, and only
windows whose three characters are ASCII letters or digits are kept. A trigram ``c1 c2 c3``
is numbered ``p(c1) * 37**2 + p(c2) * 37 + p(c3)`` where ``p`` is 1..10 for ``0``..``9`` and
11..36 for ``a``..``z`` (0 is left for null). A ``contains`` query is answered by the
intersection of the query's trigrams' rows (then rechecked), so a row must be listed under
every trigram its text holds.

``entries`` has one row per (trigram, row): ``token`` uint32, ``ngram`` string (null for the
null token) and ``row_id`` uint64.
"""

from __future__ import annotations

import re
import unicodedata

import numpy as np
import pyarrow as pa

from reference_impl.errors import FormatError, UnsupportedIndex

KIND = "ngram"
FILE = "ngram_postings.lance"
VERSION = "ngram-v0"
SPAN = 37
NULL_TOKEN = 0
#: Largest posting list (serialized bytes) decoded, and most row ids materialised overall.
MAX_POSTING_BYTES = 256 << 20
MAX_ROWS = 1 << 28
_ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz"


def token_of(trigram: str) -> int:
    """The number of a trigram of ASCII lower-case letters and digits."""
    out = 0
    for i, ch in enumerate(trigram):
        out += (_ALPHABET.index(ch) + 1) * SPAN ** (2 - i)
    return out


def trigram_of(token: int) -> str | None:
    """The trigram numbered ``token`` (None for 0, the null token, or a number that no
    trigram has)."""
    if token <= 0 or token >= SPAN ** 3:
        return None
    digits = [token // SPAN ** 2, token // SPAN % SPAN, token % SPAN]
    if 0 in digits:
        return None
    return "".join(_ALPHABET[d - 1] for d in digits)


def read(files, index):
    """Decode ``ngram_postings.lance`` of ``index`` into an :class:`IndexContent`."""
    from pyroaring import BitMap64

    from reference_impl.index import IndexContent

    if not files.has(FILE):
        raise UnsupportedIndex(f"NGRAM index {index.name!r} has no {FILE} (files: "
                               f"{files.names()}); no other layout is known", kind=KIND)
    reader = files.lance_file(FILE)
    if "tokens" not in reader.schema.names or "posting_list" not in reader.schema.names:
        raise UnsupportedIndex(f"NGRAM file {FILE} has columns {reader.schema.names}, not "
                               "tokens and posting_list: an unknown layout", kind=KIND,
                               version=",".join(reader.schema.names))
    table = reader.read_columns(["tokens", "posting_list"])
    path = files.key(FILE)
    tokens = table.column("tokens").to_pylist()
    tok_out, row_out = [], []
    total = 0
    for i, (token, raw) in enumerate(zip(tokens, table.column("posting_list").to_pylist(),
                                               strict=True)):
        if token is None or raw is None:
            raise FormatError(f"NGRAM row {i}: null token or posting list", path=path)
        if len(raw) > MAX_POSTING_BYTES:
            raise FormatError(f"NGRAM token {token}: posting list of {len(raw)} bytes exceeds "
                              f"{MAX_POSTING_BYTES}", path=path)
        try:
            rows = BitMap64.deserialize(raw)
        except Exception as exc:  # noqa: BLE001 - pyroaring raises ValueError on bad bytes
            raise FormatError(f"NGRAM token {token}: posting list is not a 64-bit Roaring "
                              f"bitmap: {exc}", path=path) from None
        total += len(rows)
        if total > MAX_ROWS:
            raise FormatError(f"NGRAM postings hold more than {MAX_ROWS} rows", path=path)
        ids = np.fromiter(rows, dtype=np.uint64, count=len(rows))
        row_out.append(ids)
        tok_out.append(np.full(len(ids), token, dtype=np.uint32))
    if len(set(tokens)) != len(tokens):
        raise FormatError("NGRAM tokens repeat", path=path)
    tok = np.concatenate(tok_out) if tok_out else np.zeros(0, dtype=np.uint32)
    rows = np.concatenate(row_out) if row_out else np.zeros(0, dtype=np.uint64)
    names = {t: trigram_of(t) for t in tokens}
    entries = pa.table({"token": pa.array(tok, pa.uint32()),
                        "ngram": pa.array([names[t] for t in tok.tolist()], pa.string()),
                        "row_id": pa.array(rows, pa.uint64())})
    bad = [t for t in tokens if t != NULL_TOKEN and names[t] is None]
    summary = {"ngrams": len(tokens), "postings": int(len(rows)),
               "rows": int(len(sorted_unique(rows)))}
    return IndexContent(kind=KIND, version=VERSION, entries=entries, summary=summary,
                        extra={"invalid_tokens": bad})


def sorted_unique(values: np.ndarray) -> np.ndarray:
    """The distinct values, ascending (by a sort: numpy's hash-based ``unique`` is slow on
    millions of uint64)."""
    a = np.sort(np.asarray(values))
    if len(a) < 2:
        return a
    return a[np.concatenate(([True], a[1:] != a[:-1]))]


def members(values: np.ndarray, sorted_set: np.ndarray) -> np.ndarray:
    """``values[i] in sorted_set`` for each i (``sorted_set`` ascending), by binary search."""
    values = np.asarray(values)
    if not len(sorted_set) or not len(values):
        return np.zeros(len(values), bool)
    at = np.minimum(np.searchsorted(sorted_set, values), len(sorted_set) - 1)
    return sorted_set[at] == values


# ---- tokenisation ----

_ASCII_ALNUM = re.compile(r"[0-9a-z]")


def fold(text: str) -> tuple[str, bool]:
    """``(folded, exact)``: ``text`` lower-cased and ASCII-folded, and whether the folding is
    known exact. ASCII text folds exactly (lower-casing only); for other text the Unicode
    decomposition without its combining marks stands in for the writer's folding table,
    which differs for some characters (``exact`` False: then only trigrams of original ASCII
    characters are certain, see :func:`trigrams`)."""
    lower = text.lower()
    if lower.isascii():
        return lower, True
    decomposed = unicodedata.normalize("NFKD", lower)
    return "".join(c for c in decomposed if not unicodedata.combining(c)), False


def trigrams(text: str) -> tuple[set[str], bool]:
    """``(trigrams, exact)``: the trigrams a writer lists ``text`` under. When ``exact`` is
    False (non-ASCII text) the set holds only the trigrams certain under any folding: the
    windows of three ASCII letters or digits that were adjacent in the original text."""
    folded, exact = fold(text)
    if exact:
        return _windows(folded), True
    return _windows_ascii_runs(text.lower()), False


def _windows(s: str) -> set[str]:
    return {s[i:i + 3] for i in range(len(s) - 2)
            if all(c in _ALPHABET for c in s[i:i + 3])}


def _windows_ascii_runs(s: str) -> set[str]:
    # a non-ASCII character may fold to ASCII letters, so only windows of three original
    # ASCII characters are certain; they stay adjacent after folding
    return _windows(s)


# ---- holding the postings against the data ----

RULE_COMPLETE = "INDEX-122"
RULE_EXACT = "INDEX-123"
RULE_OUTSIDE = "INDEX-124"


def expected_postings(values: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(position, token, exact)``: for each row (by position in ``values``) the tokens it
    must be listed under (null rows: the null token), and per row whether that set is exact
    (ASCII or null text) or only certain (non-ASCII text). The readable form:
    :func:`expected_postings_readable`; this one does the ASCII rows with numpy."""
    texts = values.to_pylist()
    n = len(texts)
    exact = np.ones(n, dtype=bool)
    is_ascii = np.fromiter((t is not None and t.isascii() for t in texts), bool, count=n)
    pos_parts, tok_parts = [], []
    ascii_rows = np.flatnonzero(is_ascii)
    if len(ascii_rows):
        encoded = [texts[i].encode("ascii") for i in ascii_rows]
        lengths = np.fromiter((len(b) for b in encoded), np.int64, count=len(encoded))
        # rows joined by one separator byte, which no trigram spans
        flat = np.frombuffer(b"\x00".join(encoded), np.uint8)
        codes = _CODES[flat].astype(np.uint64)
        row_of = np.repeat(ascii_rows, lengths + 1)[:len(flat)]
        if len(flat) >= 3:
            a, b, c = codes[:-2], codes[1:-1], codes[2:]
            keep = (a > 0) & (b > 0) & (c > 0)
            tok = (a * SPAN * SPAN + b * SPAN + c)[keep]
            pos = row_of[:-2][keep].astype(np.uint64)
            pair = sorted_unique((pos << np.uint64(16)) | tok)
            pos_parts.append(pair >> np.uint64(16))
            tok_parts.append(pair & np.uint64(0xFFFF))
    for i, text in enumerate(texts):
        if is_ascii[i]:
            continue
        if text is None:
            pos_parts.append(np.array([i], np.uint64))
            tok_parts.append(np.array([NULL_TOKEN], np.uint64))
            continue
        grams, ok = trigrams(text)
        exact[i] = ok
        pos_parts.append(np.full(len(grams), i, np.uint64))
        tok_parts.append(np.array([token_of(g) for g in grams], np.uint64))
    if not pos_parts:
        return np.zeros(0, np.uint64), np.zeros(0, np.uint64), exact
    return np.concatenate(pos_parts), np.concatenate(tok_parts), exact


def expected_postings_readable(values: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The readable form of :func:`expected_postings` (one row at a time)."""
    pos_out, tok_out = [], []
    exact = np.ones(len(values), dtype=bool)
    for i, text in enumerate(values.to_pylist()):
        if text is None:
            pos_out.append(i)
            tok_out.append(NULL_TOKEN)
            continue
        grams, ok = trigrams(text)
        exact[i] = ok
        for g in grams:
            pos_out.append(i)
            tok_out.append(token_of(g))
    return (np.asarray(pos_out, dtype=np.uint64), np.asarray(tok_out, dtype=np.uint64), exact)


#: byte -> its trigram digit (1..36 for ASCII digits and letters of either case, 0 otherwise)
_CODES = np.zeros(256, np.uint8)
for _i, _ch in enumerate(_ALPHABET):
    _CODES[ord(_ch)] = _i + 1
    _CODES[ord(_ch.upper())] = _i + 1


def check(content, index, data, remap=None):
    """Yield a :class:`Disagreement` for each way the postings disagree with the rows they
    cover: a row not listed under a trigram its text holds (INDEX-122: ``contains`` through
    the index loses it), a row of ASCII text listed under a trigram it lacks or a null row
    not under the null token (INDEX-123: answers stay right after the recheck), a row of a
    fragment the index does not cover (INDEX-124). ``remap`` translates row addresses
    through a deferred compaction."""
    if remap is None:
        from reference_impl.index.remapped import Remap

        remap = Remap.of_moves(getattr(data, "moves", None))
    from reference_impl.index import Disagreement

    entries = content.entries
    name = index.name
    idx_rows = entries.column("row_id").to_numpy().astype(np.uint64)
    idx_tok = entries.column("token").to_numpy().astype(np.uint64)
    state = classify(data, idx_rows, remap)
    if remap is not None:
        idx_rows = remap.forward(idx_rows)[0]
    live = state == data.LIVE
    have = sorted_unique((data.positions(idx_rows[live]).astype(np.uint64) << np.uint64(16))
                     | idx_tok[live])
    pos, tok, exact = expected_postings(data.values)
    want = (pos << np.uint64(16)) | tok
    missing = ~members(want, have)
    values, rows = data.values, data.row_ids
    for k in np.flatnonzero(missing):
        i = int(pos[k])
        if tok[k] == NULL_TOKEN:
            yield Disagreement(RULE_EXACT, f"NGRAM index {name!r}: null row {int(rows[i])} is "
                               "not listed under the null token", int(rows[i]), None)
        else:
            gram = trigram_of(int(tok[k]))
            yield Disagreement(RULE_COMPLETE, f"NGRAM index {name!r}: row {int(rows[i])} "
                               f"holds {values[i].as_py()!r} but is not listed under its "
                               f"trigram {gram!r}", int(rows[i]), values[i].as_py(),
                               {"ngram": gram})
    for key in have[~members(have, sorted_unique(want))]:
        i, t = int(key >> np.uint64(16)), int(key & np.uint64(0xFFFF))
        if not exact[i]:
            continue  # non-ASCII text: the writer's folding may make the trigram
        what = "the null token" if t == NULL_TOKEN else f"trigram {trigram_of(t) or t!r}"
        yield Disagreement(RULE_EXACT, f"NGRAM index {name!r}: row {int(rows[i])} holds "
                           f"{values[i].as_py()!r} but is listed under {what}", int(rows[i]),
                           values[i].as_py(), {"ngram": trigram_of(t)})
    # under stable row ids an updated row keeps its id in a new fragment: the entry of its
    # old value is a deleted row's (pylance drops it), not a row outside the index
    outside = (state == data.OUTSIDE) & (not data.stable_row_ids)
    for r in sorted_unique(idx_rows[outside]):
        yield Disagreement(RULE_OUTSIDE, f"NGRAM index {name!r}: row {int(r)} is listed but "
                           "is no row of the fragments the index covers", int(r), None)


def classify(data, rows: np.ndarray, remap=None) -> np.ndarray:
    """``data.classify`` of the rows an index names; with ``remap``, rows a deferred
    compaction moved are classified where they went, and rows it dropped are deleted."""
    if remap is None:
        return data.classify(rows)
    moved, dropped = remap.forward(rows)
    state = data.classify(moved)
    state[dropped] = data.DELETED
    return state
