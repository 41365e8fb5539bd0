"""FSST string compression for the 2.1/2.2 writer: ``Fsst{symbol_table, values}``
(FILE-ENCODINGS §4.6; spec 003: "Used on string pages that are not dictionary encoded").

Symbol table (one per page, carried in the protobuf), always 2,312 bytes::

    bytes 0..7     u64 LE header: bits 0-7 n_symbols (<= 255), 8-15 terminator (0),
                   16-23 suffix_lim (0), bit 24 = 1 (the data is FSST-coded),
                   bits 32-63 = 0x46535354 (bytes 4..7 read "TSSF")
    next n x 8     symbol i (i < n_symbols) as its bytes in order, zero-padded to 8 (u64 LE)
    next n x 1     length of symbol i (1..8)
    rest           zero up to 2,312 bytes (= 8 + 256 x 8 + 256, the size of a full table)

Token rule: a compressed value is a sequence of tokens. Code ``c < n_symbols`` stands for
the first ``len[c]`` bytes of symbol ``c``; code 255 (escape) is followed by one literal
byte. Codes therefore stay below ``n_symbols`` and a table has at most 255 symbols.

The whole page is compressed with one table; the compressed values then go through the
inner ``values`` node: ``variable{offsets flat 32|64}`` mini-block chunks with offsets over
the *compressed* bytes, or (full-zip) per-value ``variable`` whose length prefix counts
the compressed bytes.

How this encoder works (and where it is simpler than pylance's):

* :func:`build_symbol_table` follows the FSST paper's construction: a few generations over
  a bounded, evenly spaced sample of the page (at most :data:`SAMPLE_BYTES`). Each
  generation tokenises the sample with the current table, counts how often every symbol
  (and every escaped byte) occurs and how often every pair of adjacent tokens occurs,
  turns both into candidate symbols (a pair becomes the concatenation cut to 8 bytes),
  and keeps the 255 candidates with the highest gain = count x length (single bytes are
  weighted up, since leaving a byte out of the table costs an escape). Deterministic:
  no randomness anywhere.
* Simpler than pylance: at most :data:`LONG_PER_PREFIX` symbols of 3..8 bytes share
  their first two bytes (lower-gain candidates are dropped), and there is no
  suffix/terminator optimisation (both header fields are 0). The sample is
  deterministic rather than random.
* :func:`encode` tokenises greedily but not globally: values are cut into segments of at
  most :data:`SEGMENT_BYTES` bytes, and all segments advance one token per numpy step (at
  most :data:`SEGMENT_BYTES` steps). The token at a position is the longest symbol
  starting there that ends inside the segment, found by table look-ups: a 65,536-entry
  table indexed by the next two bytes gives the best 1- or 2-byte symbol (for a table
  without longer symbols this is done for every byte of the block at once, so a step is
  a single gather), then the few long symbols with that 2-byte prefix are compared. A
  byte no symbol covers becomes an escape and the literal byte. Pages are processed in
  blocks of about :data:`BLOCK_BYTES` (whole values). :func:`longest_symbol_at` states
  the same choice of token in plain Python; the tests hold the look-up tables to it.

Any tokenisation that follows the token rule decodes to the same bytes, so every output of
this encoder is conforming even where pylance would have picked other tokens. The caller
keeps FSST for a page only when the compressed bytes are smaller than the raw bytes.
"""

from __future__ import annotations

import struct

import numpy as np
import pyarrow as pa

from ....errors import InvalidInput
from ....proto import encodings_v2_1_pb2 as pb
from ... import kernels
from ...parallel import map_ordered
from ..arrow_data import is_large_variable, variable_parts
from .variable import VariableValues, variable_encoding

TABLE_SIZE = 8 + 256 * 8 + 256
MAX_SYMBOLS = 255
ESCAPE = 255
MAGIC = 0x46535354
CODED_BIT = 1 << 24

BLOCK_BYTES = 512 * 1024  # the page is encoded in blocks of about this many bytes
SEGMENT_BYTES = 64  # a tokenisation segment never spans more bytes (nor two values)
SAMPLE_BYTES = 16 * 1024  # bytes of the page the symbol table is trained on
SAMPLE_PIECE_BYTES = 512  # at most this many bytes of one value go into the sample
GENERATIONS = 5
SINGLE_BYTE_WEIGHT = 8  # gain multiplier of 1-byte candidates (an escape costs 2 bytes)
LONG_PER_PREFIX = 4  # symbols of 3..8 bytes kept per first-two-bytes prefix

_MASKS = np.array([0] + [(1 << (8 * k)) - 1 for k in range(1, 8)] + [2**64 - 1], np.uint64)


# --------------------------------------------------------------------------- the table


def table_bytes(symbols: np.ndarray, lengths: np.ndarray) -> bytes:
    """Serialise ``symbols`` (u64, bytes in order from the lowest) and ``lengths`` (1..8)
    as the 2,312-byte table described in the module docstring."""
    n = len(symbols)
    if n > MAX_SYMBOLS:
        raise InvalidInput(f"an FSST table holds at most {MAX_SYMBOLS} symbols, not {n}")
    sym = (np.asarray(symbols, np.uint64) & _MASKS[np.asarray(lengths, np.int64)]).astype("<u8")
    lens = np.asarray(lengths, np.uint8)
    header = n | CODED_BIT | (MAGIC << 32)
    body = struct.pack("<Q", header) + sym.tobytes() + lens.tobytes()
    return body + bytes(TABLE_SIZE - len(body))


def parse_table(table: bytes) -> tuple[np.ndarray, np.ndarray]:
    """``(symbols u64[n], lengths u8[n])`` of a table made by :func:`table_bytes` (or any
    table of the same layout)."""
    if len(table) < 8:
        raise InvalidInput("FSST symbol table shorter than its header")
    n = table[0]
    if len(table) < 8 + 9 * n:
        raise InvalidInput("FSST symbol table too short")
    symbols = np.frombuffer(table, "<u8", n, 8).astype(np.uint64)
    lengths = np.frombuffer(table, np.uint8, n, 8 + 8 * n).copy()
    if n and (lengths.min() < 1 or lengths.max() > 8):
        raise InvalidInput("FSST symbol length outside 1..8")
    return symbols & _MASKS[lengths.astype(np.int64)], lengths


NO_SYMBOL = 255  # in the matcher's look-up tables: "no long symbol here" (never a code)


class _Matcher:
    """Look-up tables that find the longest symbol starting at a byte position: the fast
    path of :func:`longest_symbol_at`, which says the same in plain Python.

    Every position is looked up by its first two bytes ``b0 | b1 << 8`` in one table of
    65,536 entries holding, packed in a u16, the code and length of the best short symbol
    there (the 2-byte symbol ``b0 b1``, else the 1-byte symbol ``b0``, else the escape
    with length 1) and, in the upper half of a u32 when the table has symbols of 3..8
    bytes, the code of the longest such symbol starting with ``b0 b1`` (:data:`NO_SYMBOL`
    if none). Up to :data:`LONG_PER_PREFIX` long symbols per 2-byte prefix are tried,
    longest first, the later ones through one u8 table each; a table with more (not one
    :func:`build_symbol_table` makes) still encodes correctly, the extra symbols are just
    never used. Code :data:`NO_SYMBOL` has mask 0 and symbol 1, so it never matches and
    the first long symbol is tried at every position without first picking out the
    positions that have one.
    """

    def __init__(self, symbols: np.ndarray, lengths: np.ndarray) -> None:
        n = len(symbols)
        self.symbols = np.zeros(256, np.uint64)
        self.lengths = np.zeros(256, np.uint8)
        self.symbols[:n] = symbols
        self.lengths[:n] = lengths
        codes = np.arange(n, dtype=np.uint16)
        single = np.full(256, ESCAPE, np.uint16)
        one = codes[lengths == 1]
        single[(symbols[one] & np.uint64(0xFF)).astype(np.intp)[::-1]] = one[::-1]
        self.single = single | np.uint16(1 << 8)
        short = np.tile(self.single, 256)  # entry b0 | b1 << 8 starts as single[b0]
        two = codes[lengths == 2]
        short[(symbols[two] & np.uint64(0xFFFF)).astype(np.intp)[::-1]] = two[::-1] | np.uint16(
            2 << 8
        )
        self.short = short
        # long symbols grouped by their first two bytes, longest first, at most
        # LONG_PER_PREFIX per group: slots[k][prefix] = code of the k-th one (or NO_SYMBOL)
        long_ = np.flatnonzero(lengths >= 3)
        prefix = (symbols[long_] & np.uint64(0xFFFF)).astype(np.intp)
        order = np.lexsort((long_, -lengths[long_].astype(np.int64), prefix))
        long_, prefix = long_[order], prefix[order]
        group_start = np.ones(len(prefix), bool)
        group_start[1:] = prefix[1:] != prefix[:-1]
        first = np.maximum.accumulate(np.where(group_start, np.arange(len(prefix)), 0))
        rank = np.arange(len(prefix)) - first
        keep = rank < LONG_PER_PREFIX
        self.slots = np.full((int(rank[keep].max(initial=-1)) + 1, 65536), NO_SYMBOL, np.uint8)
        self.slots[rank[keep], prefix[keep]] = long_[keep]
        if len(self.slots):
            self.combined = self.short.astype(np.uint32) | (self.slots[0].astype(np.uint32) << 16)
        self.masks = _MASKS[self.lengths.astype(np.intp)]
        self.long_tokens = np.arange(256, dtype=np.uint16) | (self.lengths.astype(np.uint16) << 8)
        self.symbols[NO_SYMBOL], self.masks[NO_SYMBOL] = 1, 0

    def at(self, words: np.ndarray, pos: np.ndarray, room: np.ndarray) -> np.ndarray:
        """u16 per position: ``code | length << 8`` of the longest symbol starting at
        byte ``pos`` no longer than ``room`` (>= 1) bytes; an escape has length 1.
        ``words[p]`` holds the 8 bytes from ``p`` on as a little-endian u64 (a contiguous
        copy: a gather from it is several times faster than from an unaligned view)."""
        word = words.take(pos)
        pair = word.astype(np.uint16)  # the first two bytes (the cast keeps the low bits)
        if not len(self.slots):
            tok = self.short.take(pair)
        else:
            both = self.combined.take(pair)
            tok = both.astype(np.uint16)
            code = both >> np.uint32(16)
            ok = (word & self.masks.take(code)) == self.symbols.take(code)
            ok &= self.lengths.take(code) <= room
            np.copyto(tok, self.long_tokens.take(code), where=ok)
            tried = None  # positions (indices into pos) still without a long symbol
            for slot in self.slots[1:]:
                tried = np.flatnonzero(~ok) if tried is None else tried[~ok]
                code = slot.take(pair[tried])
                has = code != NO_SYMBOL
                tried, code = tried[has], code[has]
                if not len(tried):
                    break
                ok = (word[tried] & self.masks.take(code)) == self.symbols.take(code)
                ok &= self.lengths.take(code) <= room[tried]
                tok[tried[ok]] = self.long_tokens.take(code[ok])
        # with one byte left only a 1-byte symbol or an escape fits
        last = np.flatnonzero(room == 1)
        tok[last] = self.single.take(word[last].astype(np.uint8))
        return tok


def longest_symbol_at(symbols, lengths, data: bytes, pos: int, end: int) -> tuple[int, int]:
    """The readable rule :class:`_Matcher` implements: ``(code, length)`` of the token
    the encoder emits at ``data[pos]`` when its segment ends at ``end`` (code
    :data:`ESCAPE` with length 1 for an escaped byte).

    1. Of the symbols of 3..8 bytes whose first two bytes are ``data[pos:pos+2]``, take
       the first :data:`LONG_PER_PREFIX` in (length descending, code ascending) order,
       and of those the first that is ``data[pos:pos+length]`` and ends by ``end``.
    2. Else the 2-byte symbol ``data[pos:pos+2]`` (lowest code), if it ends by ``end``.
    3. Else the 1-byte symbol ``data[pos]`` (lowest code).
    4. Else an escape.
    """
    table = [
        (int(v).to_bytes(8, "little")[: int(k)], code)
        for code, (v, k) in enumerate(zip(symbols, lengths, strict=True))
    ]
    head = data[pos : pos + 2]
    long_ = sorted((-len(s), code, s) for s, code in table if len(s) >= 3 and s[:2] == head)
    for _, code, s in long_[:LONG_PER_PREFIX]:
        if pos + len(s) <= end and data[pos : pos + len(s)] == s:
            return code, len(s)
    for want in (2, 1):
        if pos + want <= end:
            for s, code in table:
                if s == data[pos : pos + want]:
                    return code, want
    return ESCAPE, 1


# --------------------------------------------------------------------------- tokenising


def _segments(offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Starts and ends of the segments: every value cut into pieces of at most
    SEGMENT_BYTES bytes (empty values have none)."""
    lengths = np.diff(offsets)
    pieces = -(-lengths // SEGMENT_BYTES)
    if len(pieces) == 0 or int(pieces.max(initial=0)) <= 1:
        keep = lengths > 0
        return offsets[:-1][keep], offsets[1:][keep]
    total = int(pieces.sum())
    first = np.cumsum(pieces) - pieces
    within = np.arange(total, dtype=np.int64) - np.repeat(first, pieces)
    starts = np.repeat(offsets[:-1], pieces) + within * SEGMENT_BYTES
    ends = np.minimum(starts + SEGMENT_BYTES, np.repeat(offsets[1:], pieces))
    return starts, ends


def _walk(matcher: _Matcher, padded: np.ndarray, starts: np.ndarray, ends: np.ndarray):
    """Tokenise every segment greedily from its start: ``(is_start bool[n], tokens u16[n])``
    where ``is_start`` marks the byte positions where tokens start and ``tokens`` holds,
    at those positions only, ``code | length << 8``.

    All segments advance one token per step (at most SEGMENT_BYTES steps), each step a
    few numpy operations over the segments still open.
    """
    n = len(padded) - 8
    if not len(matcher.slots):
        return _walk_short(matcher, padded, starts, ends)
    words = np.ascontiguousarray(np.ndarray((n,), "<u8", padded, 0, (1,)))
    is_start = np.zeros(n, bool)
    tokens = np.zeros(n, np.uint16)
    pos = starts.astype(np.intp)  # numpy indexes fastest with intp (no index conversion)
    end = ends.astype(np.intp)
    while len(pos):
        tok = matcher.at(words, pos, end - pos)
        is_start[pos] = True
        tokens[pos] = tok
        pos += tok >> np.uint16(8)
        live = pos < end
        if not live.all():
            pos, end = pos[live], end[live]
    return is_start, tokens


def _walk_short(matcher: _Matcher, padded: np.ndarray, starts: np.ndarray, ends: np.ndarray):
    """:func:`_walk` for a table without symbols longer than 2 bytes: the token at every
    position is one look-up, done for the whole page at once, so a step is just
    ``pos += length[pos]``. A walker that reaches its segment's end stands on the next
    segment's start and would only retrace that segment's own path, so finished walkers
    are dropped every few steps rather than after each one."""
    n = len(padded) - 8
    # (np.take with the u16 keys as they are: twice as fast as indexing with them as intp)
    tokens = np.take(matcher.short, np.ndarray((n,), "<u2", padded, 0, (1,)))
    last = ends - 1  # the last byte of a segment: a 1-byte symbol or an escape
    tokens[last] = matcher.single[padded[last]]
    step = np.zeros(n + 1, np.uint8)  # step[n] = 0 parks walkers that ran off the data
    step[:n] = tokens >> np.uint16(8)
    is_start = np.zeros(n + 1, bool)
    pos = starts.astype(np.intp)
    end = ends.astype(np.intp)
    i = 0
    while len(pos):
        is_start[pos] = True
        pos += step[pos]
        i += 1
        if i % 4 == 0:
            live = pos < end
            if not live.all():
                pos, end = pos[live], end[live]
    return is_start[:n], tokens


def _pad(data: np.ndarray) -> np.ndarray:
    padded = np.zeros(len(data) + 8, np.uint8)
    padded[: len(data)] = data
    return padded


def _tokenise(matcher: _Matcher, offsets: np.ndarray, data: np.ndarray):
    """Greedy tokens of every value: ``(positions, codes, seg_first)`` with the byte
    positions where tokens start (ascending), their codes (255 = escape of
    ``data[position]``) and whether each token opens a segment."""
    starts, ends = _segments(offsets)
    is_start, tokens = _walk(matcher, _pad(data), starts, ends)
    positions = np.flatnonzero(is_start)
    seg_first = np.zeros(len(data), bool)
    seg_first[starts] = True
    return positions, tokens.view(np.uint8)[0::2][positions], seg_first[positions]


def _encode_block(matcher: _Matcher, offsets: np.ndarray, data: np.ndarray):
    """``(compressed length per value, compressed bytes)`` of the values ``offsets``
    (starting at 0) index in ``data``."""
    fast = kernels.kernel("fsst_encode_block", len(data))  # the compiled twin, when installed
    if fast is not None:
        return fast(matcher, offsets, data, SEGMENT_BYTES)
    starts, ends = _segments(offsets)
    padded = _pad(data)
    is_start, packed = _walk(matcher, padded, starts, ends)
    # every token emits its code; an escape is followed by the literal byte
    positions = np.flatnonzero(is_start)
    codes = packed[positions].astype(np.uint8)
    escapes = np.flatnonzero(codes == ESCAPE)
    # output bytes of each value = its tokens + its escapes; the tokens of the non-empty
    # values are sums of is_start between their starts (reduceat: no cumsum over every byte)
    lengths = np.zeros(len(offsets) - 1, np.int64)
    nonempty = np.flatnonzero(offsets[1:] > offsets[:-1])
    if len(nonempty):
        lengths[nonempty] = np.add.reduceat(
            is_start.view(np.uint8), offsets[nonempty], dtype=np.int64
        )
    if len(escapes):
        out = np.insert(codes, escapes + 1, data[positions[escapes]])
        lengths += np.diff(np.searchsorted(positions[escapes], offsets))
    else:
        out = codes
    return lengths, out


def encode(table: bytes, offsets, data) -> tuple[np.ndarray, np.ndarray]:
    """FSST-compress every value: ``(compressed_offsets int64[n+1], compressed_bytes u8)``.

    ``offsets`` (n+1, any start) index ``data``; the result's offsets start at 0. The
    page is worked on in blocks of about :data:`BLOCK_BYTES` (whole values), which keeps
    the per-byte arrays in cache and lets blocks run on the threads of
    :mod:`reference_impl.file.parallel`.
    """
    offsets = np.asarray(offsets, np.int64)
    data = np.asarray(data, np.uint8)
    if len(offsets) <= 1:
        return np.zeros(1, np.int64), np.zeros(0, np.uint8)
    matcher = _Matcher(*parse_table(table))
    total = int(offsets[-1] - offsets[0])
    cuts = np.searchsorted(offsets, offsets[0] + np.arange(BLOCK_BYTES, total, BLOCK_BYTES))
    cuts = np.unique(np.concatenate([[0], cuts, [len(offsets) - 1]]))

    def block(bounds):
        off = offsets[bounds[0] : bounds[1] + 1]
        return _encode_block(matcher, off - off[0], data[off[0] : off[-1]])

    # blocks are independent and numpy releases the GIL, so they may run on threads
    results = map_ordered(block, list(zip(cuts[:-1], cuts[1:], strict=True)))
    lengths = [r[0] for r in results]
    outs = [r[1] for r in results]
    c_off = np.zeros(len(offsets), np.int64)
    np.cumsum(np.concatenate(lengths), out=c_off[1:])
    return c_off, np.concatenate(outs)


# --------------------------------------------------------------------------- training


def _sample(offsets: np.ndarray, data: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A deterministic sample of at most SAMPLE_BYTES bytes: evenly spaced values, each
    cut to SAMPLE_PIECE_BYTES bytes."""
    total = int(offsets[-1] - offsets[0])
    if total <= SAMPLE_BYTES:
        return offsets - offsets[0], data[int(offsets[0]) : int(offsets[-1])]
    n = len(offsets) - 1
    lengths = np.minimum(np.diff(offsets), SAMPLE_PIECE_BYTES)
    avg = max(1.0, float(lengths.mean()))
    want = min(n, int(SAMPLE_BYTES / avg) + 1)
    idx = np.unique(np.linspace(0, n - 1, want).astype(np.int64))
    lens = lengths[idx]
    keep = np.cumsum(lens) <= SAMPLE_BYTES
    keep[0] = True
    idx, lens = idx[keep], lens[keep]
    new_off = np.concatenate([[0], np.cumsum(lens)])
    src = np.repeat(offsets[idx] - new_off[:-1], lens) + np.arange(int(new_off[-1]))
    return new_off, data[src]


def _candidates(symbols, lengths, positions, codes, seg_first, sample):
    """Candidate symbols ``(value u64, length, gain)`` from one tokenisation of the sample."""
    n_sym = len(symbols)
    # token ids: 0..n_sym-1 the symbols, 256 + b the escaped byte b
    ids = codes.astype(np.int64)
    first_byte = sample[positions].astype(np.int64)
    escaped = codes == ESCAPE
    ids[escaped] = 256 + first_byte[escaped]
    id_val = np.zeros(512, np.uint64)
    id_len = np.zeros(512, np.int64)
    id_val[:n_sym] = symbols
    id_len[:n_sym] = lengths
    id_val[256:] = np.arange(256, dtype=np.uint64)
    id_len[256:] = 1
    count1 = np.bincount(ids, minlength=512)
    used = np.flatnonzero(count1)  # the ids that occur, ascending
    # the first byte of a longer symbol counts towards that byte as a candidate too
    multi = ~escaped & (id_len[ids] > 1)
    count1 += np.bincount(256 + first_byte[multi], minlength=512)
    # adjacent token pairs inside one segment, counted over the ids that occur (ranked
    # in id order, so the pairs come out in (first id, second id) order as over all 512)
    follows = ~seg_first[1:]
    m = len(used)
    rank = np.zeros(512, np.int64)
    rank[used] = np.arange(m)
    pair = rank[ids[:-1][follows]] * m + rank[ids[1:][follows]]
    count2 = np.bincount(pair, minlength=m * m)
    one = np.flatnonzero(count1)
    two = np.flatnonzero(count2.astype(bool))  # (a bool scan is ~4x faster)
    a, b = used[two // m], used[two % m]
    la, lb = id_len[a], id_len[b]
    ok = la < 8
    a, b, la, lb, cnt2 = a[ok], b[ok], la[ok], lb[ok], count2[two][ok]
    merged_len = np.minimum(la + lb, 8)
    merged = (id_val[a] | (id_val[b] << (8 * la).astype(np.uint64))) & _MASKS[merged_len]
    value = np.concatenate([id_val[one], merged])
    length = np.concatenate([id_len[one], merged_len])
    gain = np.concatenate([count1[one] * id_len[one], cnt2 * merged_len])
    gain = np.where(length == 1, gain * SINGLE_BYTE_WEIGHT, gain)
    return value, length, gain


def _select(value, length, gain, fast: bool = True):
    """The best (at most MAX_SYMBOLS) distinct candidates, keeping at most LONG_PER_PREFIX
    symbols of 3..8 bytes per 2-byte prefix. ``fast`` merges duplicates with a one-key
    sort when it can (the same result as the two-key lexsort)."""
    if len(value) == 0:
        return np.zeros(0, np.uint64), np.zeros(0, np.uint8)
    # merge duplicates (the same symbol reached in different ways): sum their gains
    if fast and int(length.max()) < 8:
        # values of at most 7 bytes leave room for the length below them: one u64 key in
        # (value, length) order, sorted faster than lexsort's two keys (equal keys are
        # equal candidates, so the unstable sort merges the same groups)
        order = np.argsort((value << np.uint64(3)) | (length - 1).astype(np.uint64))
    else:
        order = np.lexsort((length, value))
    value, length, gain = value[order], length[order], gain[order]
    new = np.ones(len(value), bool)
    new[1:] = (value[1:] != value[:-1]) | (length[1:] != length[:-1])
    first = np.flatnonzero(new)
    value, length, gain = value[first], length[first], np.add.reduceat(gain, first)
    # best first; ties broken by (length desc, value) so the result is deterministic
    order = np.lexsort((value, -length, -gain))
    value, length = value[order], length[order]
    long_ = np.flatnonzero(length >= 3)
    keep = length < 3
    if len(long_):
        # rank of each long candidate among those with the same first two bytes
        prefix = (value[long_] & np.uint64(0xFFFF)).astype(np.int64)
        # stable: keeps best-first order inside a prefix (u16 keys: a radix sort)
        order = np.argsort(prefix.astype(np.uint16), kind="stable")
        sorted_prefix = prefix[order]
        group_start = np.ones(len(order), bool)
        group_start[1:] = sorted_prefix[1:] != sorted_prefix[:-1]
        first = np.maximum.accumulate(np.where(group_start, np.arange(len(order)), 0))
        keep[long_[order[np.arange(len(order)) - first < LONG_PER_PREFIX]]] = True
    value, length = value[keep][:MAX_SYMBOLS], length[keep][:MAX_SYMBOLS]
    return value, length.astype(np.uint8)


def _as_parts(values) -> tuple[np.ndarray, np.ndarray]:
    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        if isinstance(values, pa.ChunkedArray):
            values = values.combine_chunks()
        return variable_parts(values)
    if hasattr(values, "offsets") and hasattr(values, "data"):
        return np.asarray(values.offsets, np.int64), np.asarray(values.data, np.uint8)
    offsets, data = values
    return np.asarray(offsets, np.int64), np.asarray(data, np.uint8)


def build_symbol_table(values) -> bytes:
    """Train a symbol table on a page's values and return its 2,312 bytes.

    ``values`` is a string/binary Arrow array, a ``Var``-like object (``offsets``,
    ``data``) or an ``(offsets, data)`` pair.
    """
    offsets, data = _as_parts(values)
    if len(offsets) == 0:
        return table_bytes(np.zeros(0, np.uint64), np.zeros(0, np.uint8))
    s_off, s_data = _sample(offsets, data)
    symbols = np.zeros(0, np.uint64)
    lengths = np.zeros(0, np.uint8)
    if len(s_data) == 0:
        return table_bytes(symbols, lengths)
    for _ in range(GENERATIONS):
        positions, codes, seg_first = _tokenise(_Matcher(symbols, lengths), s_off, s_data)
        cand = _candidates(symbols, lengths, positions, codes, seg_first, s_data)
        new_symbols, new_lengths = _select(*cand)
        if np.array_equal(new_symbols, symbols) and np.array_equal(new_lengths, lengths):
            # a generation depends only on the table it starts from (and the sample): a
            # table it returns unchanged is what every further generation returns too
            break
        symbols, lengths = new_symbols, new_lengths
    return table_bytes(symbols, lengths)


# --------------------------------------------------------------------------- page encoders


def fsst_encoding(table: bytes, offset_bits: int) -> pb.CompressiveEncoding:
    """``fsst{symbol_table, values: variable{offsets flat 32|64}}``, the node pylance 14.0.2
    writes for mini-block chunks and for full-zip values alike."""
    enc = pb.CompressiveEncoding()
    enc.fsst.symbol_table = table
    enc.fsst.values.CopyFrom(variable_encoding(offset_bits))
    return enc


def compress_page(offsets: np.ndarray, data: np.ndarray):
    """``(table, compressed_offsets, compressed_bytes)``, or None when FSST would not
    make the page's bytes smaller."""
    raw = int(offsets[-1] - offsets[0])
    table = build_symbol_table((offsets, data))
    c_off, c_data = encode(table, offsets, data)
    if len(c_data) >= raw:
        return None
    return table, c_off, c_data


class FsstValues(VariableValues):
    """Mini-block values: the page's strings FSST-compressed with one table, then cut into
    ``variable`` chunks over the compressed bytes (offsets 32-bit, 64 for large_utf8)."""

    def __init__(self, table: bytes, offsets: np.ndarray, data: np.ndarray, large: bool) -> None:
        self.table = table
        self.offset_bits = 64 if large else 32
        self.offsets, self.data = offsets, data

    @classmethod
    def try_encode(cls, values: pa.Array) -> FsstValues | None:
        offsets, data = variable_parts(values)
        packed = compress_page(offsets, data)
        if packed is None:
            return None
        return cls(*packed, large=is_large_variable(values.type))

    def encoding(self) -> pb.CompressiveEncoding:
        return fsst_encoding(self.table, self.offset_bits)
