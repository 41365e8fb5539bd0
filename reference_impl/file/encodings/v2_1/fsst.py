"""FSST string decompression ``Fsst{symbol_table, values}`` (FILE-ENCODINGS §4.6).

The symbol table (one per page, in the protobuf) is 2,312 bytes::

    u64 header  bits 0-7 n_symbols, 8-15 terminator, 16-23 suffix_lim,
                bit 24 = 1 if the data is FSST-coded (0: verbatim), bits 32-63 "FSST" magic
    n_symbols x u64   symbol bytes (zero padded, first byte lowest)
    n_symbols x u8    symbol lengths (1..8)

A compressed value is a sequence of tokens: code ``c < 255`` emits the first ``len[c]`` bytes of
symbol ``c``; code 255 (escape) emits the next byte literally. Decoding here is vectorised over
all values: escape/literal positions come from the parity inside each run of 255 bytes; output
positions are the running sum of token lengths, and the output is filled one byte plane at a
time (plane ``j`` = byte ``j`` of every token longer than ``j``) from a 512 x 8 table whose rows
256.. are the literal bytes.
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
    """``(coded, symbols(512x8 uint8), lengths(512))`` or FormatError."""
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
    return coded, sym, lens, n


def decode(table: bytes, comp: Var) -> Var:
    """FSST-decode every value of ``comp``."""
    coded, sym, lens, nsym = parse_symbol_table(table)
    if not coded:
        return comp
    data = comp.data[comp.offsets[0]:comp.offsets[-1]]
    offs = comp.offsets - comp.offsets[0]
    m = len(data)
    nvals = len(offs) - 1
    if m == 0:
        return Var(np.zeros(nvals + 1, np.int64), np.zeros(0, np.uint8))
    is_esc_byte = data == ESCAPE
    if is_esc_byte.any():
        pos = np.arange(m, dtype=np.int64)
        value_start = np.zeros(m, bool)
        value_start[offs[:-1][offs[:-1] < m]] = True
        prev255 = np.concatenate([[False], is_esc_byte[:-1]])
        run_start = is_esc_byte & (~prev255 | value_start)
        last_start = np.maximum.accumulate(np.where(run_start, pos, 0))
        escape = is_esc_byte & (((pos - last_start) & 1) == 0)
        literal = np.concatenate([[False], escape[:-1]])
        if escape[-1] or literal[value_start].any():
            raise FormatError("FSST escape code at the end of a value", rule=RULE)
    else:
        escape = literal = None
    code = data
    if literal is not None:
        bad = ~literal & ~escape & (code >= nsym)
    else:
        bad = code >= nsym
    if bad.any():
        raise FormatError(f"FSST code {int(code[bad][0])} outside the {nsym}-symbol table", rule=RULE)
    lens8 = lens.astype(np.uint8)
    if literal is not None:
        code = code.astype(np.uint16) + np.where(literal, 256, 0).astype(np.uint16)
        tok_len = np.where(escape, 0, lens8[code]).astype(np.uint8)
    else:
        tok_len = lens8[code]
    cum = np.zeros(m + 1, np.int64)
    np.cumsum(tok_len, dtype=np.int64, out=cum[1:])
    # byte plane j: every token longer than j writes its symbol's byte j at cum[token] + j
    out = np.empty(int(cum[-1]), np.uint8)
    first = np.flatnonzero(tok_len) if literal is not None else None
    if first is None:
        out[cum[:-1]] = sym[:, 0][code]
    else:
        out[cum[first]] = sym[:, 0][code[first]]
    for j in range(1, 8):
        sel = np.flatnonzero(tok_len > j)
        if not len(sel):
            break
        out[cum[sel] + j] = sym[:, j][code[sel]]
    return Var(cum[offs], out)
