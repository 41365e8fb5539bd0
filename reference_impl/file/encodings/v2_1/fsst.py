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
  Every token becomes a row id into a table of 8-byte rows (rows 0..255 the symbols, rows
  256..511 the literal bytes, escape tokens have length 0). The output length of token ``t`` is
  ``len[id[t]]``; its running sum gives each token's output position. The gather index of output
  byte ``p`` inside token ``t`` is ``8*id[t] + (p - pos[t])``: an array of ones with, at each
  token start, the jump from the previous token's last byte to this token's first byte, turned
  into indices by one cumulative sum. When a page has no escape bytes, tokens are taken two at a
  time (a table of ``n_symbols**2`` 16-byte symbol pairs, row ``c0 * n_symbols + c1``), which halves the per-token work.
  The string offsets are the running sum sampled at the compressed value boundaries.
"""

from __future__ import annotations

import struct

import numpy as np

from reference_impl.errors import FormatError

from .values import Var

RULE = "ENC-030"
ESCAPE = 255
TABLE_SIZE = 8 + 256 * 8 + 256
# pages with fewer compressed bytes than this do not pay for building the pair table
PAIR_THRESHOLD = 1 << 16


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
    ``table`` and every length be <= its width (the callers validate codes first).
    """
    width = table.shape[1]
    tl = tok_len[ids]
    idx_t = np.int32 if len(ids) * width < (1 << 31) - 1 else np.int64
    cum = np.zeros(len(ids) + 1, idx_t)
    np.cumsum(tl, dtype=idx_t, out=cum[1:])
    total = int(cum[-1])
    if total == 0:
        return np.zeros(0, np.uint8), cum
    live = tl > 0
    if live.all():
        lid, ltl, lpos = ids, tl, cum[:-1]
    else:
        lid, ltl, lpos = ids[live], tl[live], cum[:-1][live]
    base = lid.astype(idx_t) * width
    jump = np.empty(len(base), idx_t)
    jump[0] = base[0]
    # from the last byte of the previous token (base + len - 1) to this token's first byte
    np.subtract(base[1:], base[:-1], out=jump[1:])
    np.subtract(jump[1:], ltl[:-1], out=jump[1:], casting="unsafe")
    jump[1:] += 1
    gather = np.ones(total, idx_t)
    gather[lpos] = jump
    np.cumsum(gather, out=gather)
    return np.take(table.reshape(-1), gather), cum


def _pair_table(sym: np.ndarray, lens: np.ndarray, n: int):
    """Row ``c0 * n + c1``: symbol c0 then symbol c1 (16 bytes); and their summed length."""
    ids = np.arange(n * n)
    c0, c1 = ids // n, ids % n
    l0 = lens[c0]
    pair = np.zeros((n * n, 17), np.uint8)  # one spare column: symbol bytes past 16 are zeros
    pair[:, :8] = sym[c0]
    pair[ids[:, None], l0[:, None] + np.arange(8)] = sym[c1]
    return pair[:, :16].copy(), (l0 + lens[c1]).astype(np.uint8)


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
        if m >= PAIR_THRESHOLD:
            k = m // 2
            pair_sym, pair_len = _pair_table(sym, lens, nsym)
            pairs = data[0:2 * k:2].astype(np.int32)
            pairs *= nsym
            pairs += data[1:2 * k:2]
            out, pcum = _expand(pairs, pair_len, pair_sym)
            if m & 1:
                out = np.concatenate([out, sym[data[-1], :lens[data[-1]]]])
            odd = (offs & 1).astype(bool)
            new_off = pcum[offs >> 1].astype(np.int64)
            new_off[odd] += lens8[data[offs[odd] - 1]]
            return Var(new_off, out)
        out, cum = _expand(data, lens8, sym)
        return Var(cum[offs].astype(np.int64), out)
    escape, literal = _escape_masks(data, offs)
    bad = ~literal & ~escape & (data >= nsym)
    if bad.any():
        raise FormatError(f"FSST code {int(data[bad][0])} outside the {nsym}-symbol table", rule=RULE)
    ids = data.astype(np.uint16)
    ids[literal] += 256
    out, cum = _expand(ids, lens8, sym)
    return Var(cum[offs].astype(np.int64), out)
