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
  inside each run of 255 bytes of a value.
"""

from __future__ import annotations

import struct

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from reference_impl.errors import FormatError

from .values import Var

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
    pos = np.arange(m, dtype=np.int64)
    value_start = np.zeros(m, bool)
    value_start[offs[:-1][offs[:-1] < m]] = True
    prev255 = np.concatenate([[False], is255[:-1]])
    # within a run of 255 bytes inside one value, tokens alternate escape, literal, ...
    run_start = is255 & (~prev255 | value_start)
    last_start = np.maximum.accumulate(np.where(run_start, pos, 0))
    escape = is255 & (((pos - last_start) & 1) == 0)
    literal = np.concatenate([[False], escape[:-1]])
    ends = offs[1:][offs[1:] > offs[:-1]] - 1
    if escape[ends].any() or literal[value_start].any():
        raise FormatError("FSST escape code at the end of a value", rule=RULE)
    return escape, literal


def decode(table: bytes, comp: Var) -> Var:
    """FSST-decode every value of ``comp`` (vectorised page decoder)."""
    coded, sym, lens, nsym = parse_symbol_table(table)
    if not coded:
        return comp
    data = comp.data[comp.offsets[0]:comp.offsets[-1]]
    offs = comp.offsets - comp.offsets[0]
    m = len(data)
    if m == 0:
        return Var(np.zeros(len(offs), np.int64), np.zeros(0, np.uint8))
    lens8 = lens.astype(np.uint8)
    if not (data == ESCAPE).any():
        hi = int(data.max())
        if hi >= nsym:
            raise FormatError(f"FSST code {hi} outside the {nsym}-symbol table", rule=RULE)
        return _expand_values(data, offs, lens8, sym)
    escape, literal = _escape_masks(data, offs)
    bad = ~literal & ~escape & (data >= nsym)
    if bad.any():
        raise FormatError(f"FSST code {int(data[bad][0])} outside the {nsym}-symbol table", rule=RULE)
    ids = data.astype(np.uint16)
    ids[literal] += 256
    return _expand_values(ids, offs, lens8, sym)


#: a page with more tokens than this is expanded in pieces of about this many, on threads
PIECE_TOKENS = 1 << 22


def _expand_values(ids: np.ndarray, offs: np.ndarray, lens8: np.ndarray, sym: np.ndarray,
                   piece: int | None = None, saturated: bool | None = None) -> Var:
    """The decoded values whose tokens ``ids`` are cut at ``offs`` (starting at 0).

    Tokens decode independently of their neighbours, so a large page is cut at value
    boundaries into pieces of about ``piece`` tokens, each expanded by :func:`_expand` on the
    decode threads (:mod:`reference_impl.file.parallel`), and the pieces are joined: the same
    bytes and offsets as one expansion of the whole page. Joining copies the bytes, so a page
    is expanded whole where no thread would be idle: one decode thread, or the threads busy
    with other items (:func:`reference_impl.file.parallel.saturated`). ``saturated``
    overrides that test (tests compare both paths)."""
    from reference_impl.file import parallel

    piece = PIECE_TOKENS if piece is None else max(1, int(piece))
    m = len(ids)
    if saturated is None:
        saturated = parallel.saturated()
    if m <= piece or saturated:
        out, cum = _expand(ids, lens8, sym)
        return Var(cum[offs].astype(np.int64), out)
    cuts = np.searchsorted(offs, np.arange(piece, m, piece), side="left")
    cuts = np.unique(np.concatenate([[0], cuts, [len(offs) - 1]]))
    spans = list(zip(cuts[:-1].tolist(), cuts[1:].tolist(), strict=True))

    def one(span):
        a, b = span
        lo, hi = int(offs[a]), int(offs[b])
        out, cum = _expand(ids[lo:hi], lens8, sym)
        return out, cum[offs[a:b + 1] - lo]

    parts = parallel.map_ordered(one, spans)
    value_offs = np.zeros(len(offs), np.int64)
    base = 0
    for (a, b), (out, cum) in zip(spans, parts, strict=True):
        value_offs[a:b + 1] = cum + base
        base += len(out)
    data = np.concatenate([p[0] for p in parts]) if parts else np.zeros(0, np.uint8)
    return Var(value_offs, data)
