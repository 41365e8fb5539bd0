"""FSST string decompression ``Fsst{symbol_table, values}`` (FILE-ENCODINGS §4.6).

The symbol table (one per page, in the protobuf) is 2,312 bytes::

    u64 header  bits 0-7 n_symbols, 8-15 terminator, 16-23 suffix_lim,
                bit 24 = 1 if the data is FSST-coded (0: verbatim), bits 32-63 "FSST" magic
    n_symbols x u64   symbol bytes (zero padded, first byte lowest)
    n_symbols x u8    symbol lengths (1..8)

A compressed value is a sequence of tokens: code ``c < 255`` emits the first ``len[c]`` bytes of
symbol ``c``; code 255 (escape) emits the next byte literally.

Two decoders live here and must agree (a test checks it):

* :func:`decode_value` follows the sentence above literally, one token at a time, on one value;
  it is the readable definition.
* :func:`decode` is the page decoder used by the reader, vectorised over all values of a page.
  Every token becomes a row id into a list of 512 byte strings (rows 0..255 the symbols, each
  cut to its length; rows 256..511 the literal bytes; the escape code 255 the empty string).
  The decoded bytes of a page are then the concatenation of ``rows[id]`` over its tokens: a
  *take* from that list (see :func:`_expand`), whose offsets, sampled at the compressed value
  boundaries, are the string offsets. Escape and literal bytes are told apart by their parity
  inside each run of 255 bytes of a value. A large page is decoded in pieces of about
  :data:`PIECE_TOKENS` bytes cut where a token starts (:func:`_piece_cuts`), so the arrays of
  each step (about 20 bytes per compressed byte) stay bounded.
"""

from __future__ import annotations

import struct

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from reference_impl.errors import FormatError
from reference_impl.file import kernels

from .values import Spans, Var

RULE = "ENC-030"
ESCAPE = 255
TABLE_SIZE = 8 + 256 * 8 + 256


def parse_symbol_table(table: bytes):
    """``(coded, symbols(512x8 uint8), lengths(512), n_symbols)`` or FormatError.

    Rows 256..511 are the literal bytes (length 1); row 255 (the escape code) has length 0.
    """
    if len(table) < 8:
        raise FormatError(f"FSST symbol table of {len(table)} bytes is too short", rule=RULE)
    (header,) = struct.unpack_from("<Q", table)
    n = header & 0xFF
    coded = bool((header >> 24) & 1)
    if len(table) < 8 + 9 * n:
        raise FormatError(f"FSST symbol table of {len(table)} bytes cannot hold {n} symbols", rule=RULE)
    sym = np.zeros((512, 8), np.uint8)
    lens = np.zeros(512, np.int64)
    sym[:n] = np.frombuffer(table, np.uint8, 8 * n, 8).reshape(n, 8)
    lens[:n] = np.frombuffer(table, np.uint8, n, 8 + 8 * n)
    if n and (lens[:n].min() < 1 or lens[:n].max() > 8):
        raise FormatError("FSST symbol length outside 1..8", rule=RULE)
    sym[256:, 0] = np.arange(256, dtype=np.uint8)
    lens[256:] = 1
    lens[ESCAPE] = 0
    # bytes past a symbol's length are ignored by the decoders, zero them for determinism
    sym[:256][np.arange(8)[None, :] >= lens[:256, None]] = 0
    return coded, sym, lens, n


def decode_value(table: bytes, compressed: bytes) -> bytes:
    """Decode one value token by token, exactly as the spec states it (readable reference)."""
    coded, sym, lens, n = parse_symbol_table(table)
    if not coded:
        return bytes(compressed)
    out = bytearray()
    i = 0
    while i < len(compressed):
        c = compressed[i]
        if c == ESCAPE:
            if i + 1 >= len(compressed):
                raise FormatError("FSST escape code at the end of a value", rule=RULE)
            out.append(compressed[i + 1])
            i += 2
        else:
            if c >= n:
                raise FormatError(f"FSST code {c} outside the {n}-symbol table", rule=RULE)
            out += bytes(sym[c, :lens[c]])
            i += 1
    return bytes(out)


def _expand(ids: np.ndarray, tok_len: np.ndarray, table: np.ndarray):
    """Concatenate ``table[id][:tok_len[id]]`` over ``ids`` -> ``(bytes, cum)``.

    ``cum`` (len(ids)+1) is the running output length before each token. Every id must index
    ``table`` and every length be <= 8 (the callers validate codes first).

    This is exactly a *take* from the symbol list viewed as a binary array (row ``r`` is the
    first ``tok_len[r]`` bytes of ``table[r]``): the taken array's data buffer is the decoded
    byte stream and its offsets are ``cum``. Arrow's take kernel does it in one pass.
    """
    lens = tok_len.astype(np.int64)
    sym_offsets = np.zeros(len(lens) + 1, np.int64)
    np.cumsum(lens, out=sym_offsets[1:])
    sym_bytes = table[np.arange(table.shape[1])[None, :] < lens[:, None]]  # row-major: symbols in order
    symbols = pa.Array.from_buffers(pa.large_binary(), len(lens),
                                    [None, pa.py_buffer(sym_offsets), pa.py_buffer(sym_bytes)])
    taken = pc.take(symbols, pa.array(ids))
    _, offs_buf, data_buf = taken.buffers()
    cum = np.frombuffer(offs_buf, np.int64, len(ids) + 1, taken.offset * 8)
    total = int(cum[-1])
    if data_buf is None or total == 0:
        return np.zeros(0, np.uint8), cum
    return np.frombuffer(data_buf, np.uint8, total), cum


def _escape_masks(data: np.ndarray, offs: np.ndarray):
    """``(escape, literal)`` masks over ``data``: an escape byte starts a 2-byte token."""
    m = len(data)
    is255 = data == ESCAPE
    starts = offs[:-1][offs[:-1] < m]
    # a 255 byte right after another within a value (the literal 255, or a run of escaped
    # 255 bytes) is rare: without one, every 255 byte is an escape
    follows = is255[1:] & is255[:-1]  # follows[i - 1]: bytes i - 1 and i are 255
    follows[starts[starts > 0] - 1] = False
    if not follows.any():
        escape = is255
    else:
        # within a run of 255 bytes inside one value, tokens alternate escape, literal, ...
        value_start = np.zeros(m, bool)
        value_start[starts] = True
        prev255 = np.concatenate([[False], is255[:-1]])
        pos = np.arange(m, dtype=np.int32 if m < (1 << 31) else np.int64)
        run_start = is255 & (~prev255 | value_start)
        last_start = np.maximum.accumulate(np.where(run_start, pos, 0))
        escape = is255 & (((pos - last_start) & 1) == 0)
    literal = np.concatenate([[False], escape[:-1]])
    ends = offs[1:][offs[1:] > offs[:-1]] - 1
    if escape[ends].any() or literal[starts].any():
        raise FormatError("FSST escape code at the end of a value", rule=RULE)
    return escape, literal


def _token_ids(data: np.ndarray, offs: np.ndarray, nsym: int) -> np.ndarray:
    """The row of the 512-row symbol list (:func:`parse_symbol_table`) each byte of ``data``
    (values cut at ``offs``, starting at 0) reads: the byte itself for codes and escapes (row
    255 is empty), 256 + the byte for literals. Codes outside the table are refused."""
    if not (data == ESCAPE).any():
        hi = int(data.max()) if len(data) else 0
        if hi >= nsym:
            raise FormatError(f"FSST code {hi} outside the {nsym}-symbol table", rule=RULE)
        return data
    escape, literal = _escape_masks(data, offs)
    bad = (data >= nsym) & ~escape & ~literal
    if bad.any():
        raise FormatError(f"FSST code {int(data[bad][0])} outside the {nsym}-symbol table", rule=RULE)
    ids = literal.view(np.uint8).astype(np.uint16)
    ids <<= 8
    ids |= data
    return ids


def decode(table: bytes, comp: Var | Spans, *, piece: int | None = None,
           saturated: bool | None = None) -> Var:
    """FSST-decode every value of ``comp`` (a :class:`Var`, or :class:`Spans` of a full-zip
    page's values) -- the vectorised page decoder.

    A page of more than ``piece`` (:data:`PIECE_TOKENS`) compressed bytes is decoded in
    pieces of about that many, cut where a token starts (:func:`_piece_cuts`), so its
    temporary arrays (escape masks, token rows, Arrow's offsets of every token) stay bounded
    whatever the size of the page, and the compressed bytes are read a piece at a time.
    ``saturated`` overrides :func:`reference_impl.file.parallel.saturated` (tests compare
    both paths)."""
    coded, sym, lens, nsym = parse_symbol_table(table)
    if not coded:
        return comp.to_var()
    offs = comp.offsets - comp.offsets[0]
    if int(offs[-1]) == 0:
        return Var(np.zeros(len(offs), np.int64), np.zeros(0, np.uint8))
    fast = kernels.kernel("fsst_decode", int(offs[-1]))  # the compiled twin, when installed
    if fast is not None and piece is None and (
            got := fast(comp, offs, sym, lens.astype(np.uint8), nsym, saturated)):
        return Var(*got)
    return _decode_pieces(comp, offs, sym, lens.astype(np.uint8), nsym, piece, saturated)


#: a page of more compressed bytes than this is decoded in pieces of about this many (each
#: piece's temporaries take some 20 bytes a byte), on the decode threads when some are idle
PIECE_TOKENS = 1 << 21


def _trailing_run(src: Var | Spans, lo: int, hi: int) -> int:
    """How many bytes equal to 255 end bytes ``lo`` to ``hi`` of ``src`` (looked at
    backwards, in growing steps)."""
    run, end, step = 0, hi, 64
    while end > lo:
        start = max(lo, end - step)
        other = np.flatnonzero(src.bytes(start, end) != ESCAPE)
        if len(other):
            return run + (end - start - 1 - int(other[-1]))
        run += end - start
        end, step = start, step * 2
    return run


def _piece_cuts(src: Var | Spans, offs: np.ndarray, piece: int) -> list:
    """Positions ``0 = c0 < c1 < ... = offs[-1]`` about ``piece`` bytes apart where a token
    starts, so each piece decodes on its own. A position ``t`` inside a value starts a token
    exactly when the run of 255 bytes just before it (within the value, and after the last
    cut) is of even length: what precedes the run (the value start, the cut, a code or a
    literal other than 255) ends a token, so the run starts one and alternates escape,
    literal; after an odd run the byte at ``t`` is the last escape's literal and ``t + 1``
    starts a token."""
    m = int(offs[-1])
    cuts = [0]
    for t in range(piece, m, piece):
        v = int(np.searchsorted(offs, t, side="right")) - 1
        first = max(int(offs[v]), cuts[-1])
        c = t + (_trailing_run(src, first, t) & 1)
        if cuts[-1] < c < m:
            cuts.append(c)
    cuts.append(m)
    return cuts


def _decode_piece(src: Var | Spans, offs: np.ndarray, lens8: np.ndarray, sym: np.ndarray, nsym: int,
                  a: int, b: int):
    """Decode bytes ``a`` to ``b`` of ``src`` (both start tokens) -> ``(bytes, out)`` where
    ``out`` is the output position, within the piece, of each value starting in ``[a, b)``."""
    j0 = int(np.searchsorted(offs, a, side="left"))
    j1 = int(np.searchsorted(offs, b, side="left"))
    local = np.concatenate([[0], offs[j0:j1] - a, [b - a]]).astype(np.int64)
    ids = _token_ids(src.bytes(a, b), local, nsym)
    out, cum = _expand(ids, lens8, sym)
    return out, cum[local[1:-1]]


class _Output:
    """A byte array filled piece by piece and grown in place: numpy's ``resize`` reallocates,
    which moves a large block's pages rather than copying them, and untouched capacity takes
    no memory."""

    def __init__(self, capacity: int) -> None:
        self.buf = np.empty(max(int(capacity), 1), np.uint8)
        self.size = 0

    def append(self, part: np.ndarray) -> None:
        need = self.size + len(part)
        if need > len(self.buf):
            self.buf.resize(max(need, 2 * len(self.buf)), refcheck=False)
        self.buf[self.size:need] = part
        self.size = need

    def array(self) -> np.ndarray:
        self.buf.resize(self.size, refcheck=False)
        return self.buf


def _decode_pieces(src: Var | Spans, offs: np.ndarray, sym: np.ndarray, lens8: np.ndarray, nsym: int,
                   piece: int | None = None, saturated: bool | None = None) -> Var:
    """The decoded values of ``src`` (values cut at ``offs``, starting at 0), piece by piece.

    Tokens decode independently of their neighbours, so the pieces of :func:`_piece_cuts`
    give the same bytes and offsets as one expansion of the whole page. Each piece's bytes
    go into the output as soon as it is decoded; pieces run a few at a time on the decode
    threads (:mod:`reference_impl.file.parallel`), one by one when the threads are busy
    with other items already (:func:`reference_impl.file.parallel.saturated`)."""
    from reference_impl.file import parallel

    piece = PIECE_TOKENS if piece is None else max(1, int(piece))
    m = int(offs[-1])
    if m <= piece:
        ids = _token_ids(src.bytes(0, m), offs, nsym)
        out, cum = _expand(ids, lens8, sym)
        return Var(cum[offs].astype(np.int64), out)
    cuts = _piece_cuts(src, offs, piece)
    spans = list(zip(cuts[:-1], cuts[1:], strict=True))
    if saturated is None:
        saturated = parallel.saturated()
    width = 1 if saturated else parallel.threads()

    def one(span):
        return _decode_piece(src, offs, lens8, sym, nsym, *span)

    value_offs = np.zeros(len(offs), np.int64)
    out = _Output(m)
    for i in range(0, len(spans), width):
        batch = spans[i:i + width]
        results = [one(s) for s in batch] if width == 1 else parallel.map_ordered(one, batch)
        for (a, _b), (part, starts) in zip(batch, results, strict=True):
            j0 = int(np.searchsorted(offs, a, side="left"))
            value_offs[j0:j0 + len(starts)] = starts + out.size
            out.append(part)
        del results, part
    value_offs[int(np.searchsorted(offs, m, side="left")):] = out.size
    return Var(value_offs, out.array())
