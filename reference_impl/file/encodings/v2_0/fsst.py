"""``Fsst{binary, symbol_table}``: FSST-compressed strings (older 2.0 writers).

``binary`` decodes as the compressed values; ``symbol_table`` (in the protobuf) is
``u64 header | n x u64 symbols | n x u8 lengths``, the header's low byte giving n and bit
24 saying whether the data is coded at all. A compressed value is read code by code:
255 escapes the next byte (a literal), any other code c emits ``symbols[c][:len[c]]``.
Decoding is vectorised: codes map to symbol byte runs through one gather.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from ._common import RULE_NODE, PageContext, register
from ._common import decode as decode_node

ESCAPE = 255


def parse_symbol_table(table: bytes, ctx: PageContext) -> tuple[np.ndarray, np.ndarray, bool]:
    if len(table) < 8:
        raise ctx.error("FSST symbol table shorter than its header", RULE_NODE)
    header = int.from_bytes(table[:8], "little")
    n = header & 0xFF
    coded = bool(header >> 24 & 1)
    if len(table) < 8 + 9 * n:
        raise ctx.error("FSST symbol table truncated", RULE_NODE)
    symbols = np.frombuffer(table, np.uint8, count=8 * n, offset=8).reshape(n, 8)
    lengths = np.frombuffer(table, np.uint8, count=n, offset=8 + 8 * n).astype(np.int64)
    if np.any((lengths < 1) | (lengths > 8)):
        raise ctx.error("FSST symbol length outside 1..8", RULE_NODE)
    return symbols, lengths, coded


def fsst_decode(
    data: np.ndarray,
    offsets: np.ndarray,
    symbols: np.ndarray,
    lengths: np.ndarray,
    ctx: PageContext,
) -> tuple[np.ndarray, np.ndarray]:
    """Decode every value at once; returns (bytes, offsets) of the decompressed values."""
    n = len(data)
    # A byte is a literal iff it sits at an odd position in a run of bytes that all follow
    # an escape: counted from the run's start (a value start or a byte after a non-escape).
    is_esc = data == ESCAPE
    literal = np.zeros(n, bool)
    if n:
        idx = np.arange(n)
        boundary = np.zeros(n, bool)
        boundary[0] = True
        boundary[1:] = ~is_esc[:-1]
        starts = offsets[:-1][offsets[:-1] < n]
        boundary[starts] = True
        run_start = np.maximum.accumulate(np.where(boundary, idx, 0))
        literal = (idx - run_start) % 2 == 1
    code = (~literal) & ~is_esc  # a code byte that emits a symbol
    escape_marker = (~literal) & is_esc  # escape bytes themselves emit nothing
    emit_len = np.where(literal, 1, 0)
    if code.any():
        if int(data[code].max()) >= len(lengths):
            raise ctx.error("FSST code beyond the symbol table", RULE_NODE)
        emit_len[code] = lengths[data[code]]
    emit_len[escape_marker] = 0
    out_pos = np.concatenate([[0], np.cumsum(emit_len)])
    total = int(out_pos[-1])
    out = np.empty(total, np.uint8)
    lit_idx = np.nonzero(literal)[0]
    out[out_pos[lit_idx]] = data[lit_idx]
    code_idx = np.nonzero(code)[0]
    for j in range(8):  # write byte j of every emitted symbol that is long enough
        sel = code_idx[lengths[data[code_idx]] > j]
        out[out_pos[sel] + j] = symbols[data[sel], j]
    new_offsets = out_pos[np.minimum(offsets, n)]
    return out, new_offsets


@register("fsst")
def decode(node, ctx: PageContext, num_rows: int, data_type: pa.DataType) -> pa.Array:
    symbols, lengths, coded = parse_symbol_table(bytes(node.symbol_table), ctx)
    inner = decode_node(node.binary, ctx, num_rows, pa.large_binary())
    if not coded:
        return inner.cast(data_type)
    offsets = np.frombuffer(inner.buffers()[1], np.int64, count=num_rows + 1)
    data = (
        np.frombuffer(inner.buffers()[2], np.uint8, count=int(offsets[-1]))
        if num_rows
        else np.zeros(0, np.uint8)
    )
    out, new_offsets = fsst_decode(data, offsets, symbols, lengths, ctx)
    arr = pa.Array.from_buffers(
        pa.large_binary(),
        num_rows,
        [
            inner.buffers()[0],
            pa.py_buffer(new_offsets.astype(np.int64).tobytes()),
            pa.py_buffer(out.tobytes()),
        ],
    )
    return arr.cast(data_type)
