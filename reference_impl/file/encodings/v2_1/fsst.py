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
  256..511 the literal bytes; escape tokens have length 0). Token ``t`` outputs
  ``len[id[t]]`` bytes; the running sum ``cum`` of those lengths is each token's output
  position, byte plane ``j`` of every token is scattered to ``cum[t] + j`` (see
  :func:`_expand`), and the string offsets are ``cum`` sampled at the compressed value
  boundaries. Escape and literal bytes are told apart by their parity inside each run of 255
  bytes of a value.
"""

from __future__ import annotations

import struct

import numpy as np

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

    Byte plane ``j`` (byte ``j`` of every token) is written at ``cum[t] + j``, planes from the
    last to the first. A plane may be written for *every* token, even those shorter than
    ``j + 1``: the stray byte lands inside a later token at a smaller offset, whose plane is
    written afterwards and overwrites it. Planes that few tokens reach are written for those only.
    """
    code = ids.astype(np.intp)
    m = len(code)
    # lengths as intp: a same-type cumulative sum is several times faster than uint8 -> intp
    tl = np.take(tok_len.astype(np.intp), code)
    cum = np.zeros(m + 1, np.intp)
    np.cumsum(tl, out=cum[1:])
    total = int(cum[-1])
    out = np.empty(total + 8, np.uint8)
    if total == 0:
        return out[:0], cum
    top = int(tok_len.max())
    # share of tokens reaching each plane, estimated on a sample
    sample = np.bincount(tl[::61], minlength=9)[::-1].cumsum()[::-1]
    pos = cum[:-1]
    for j in range(top - 1, -1, -1):
        plane = np.ascontiguousarray(table[:, j])
        shifted = out[j:]  # writing at pos into a view shifted by j writes at pos + j
        if sample[j + 1] * 20 > sample[0]:
            shifted[pos] = np.take(plane, code)
        else:
            sel = np.flatnonzero(tl > j)
            shifted[pos[sel]] = np.take(plane, code[sel])
    return out[:total], cum


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
