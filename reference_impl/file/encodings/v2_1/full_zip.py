"""The full-zip layout (``PageLayout.full_zip_layout``, FILE-ENCODINGS §3.3).

Buffer 0 holds, per level slot in order::

    [control word]  absent if bits_rep == bits_def == 0; else 1, 2 or 4 bytes LE
                    (bits_rep + bits_def <= 8, <= 16, else), word = (rep << bits_def) | def
    fixed width (bits_per_value):  visible slot -> bits_per_value/8 bytes (placeholders too)
    variable (bits_per_offset):    def == 0 -> length (bits_per_offset/8 bytes) then bytes

Buffer 1 (repetition index, when present) holds ``rows+1`` unsigned entries of width
``size/(rows+1)``: the byte offset of every row's first control word, then buffer 0's length.
Without it (fixed width, no repetition) row ``r`` lives at ``r * (cw + bits_per_value/8)``.

Decoding walks all rows in parallel, one numpy step per slot index within a row, so the
number of steps is the largest number of slots in one row.
"""

from __future__ import annotations

import numpy as np

from reference_impl.errors import FormatError

from . import compressive
from .chunks import gather_ranges
from .values import Fixed, Spans

RULE = "ENC-043"


def _cw_bytes(bits: int) -> int:
    if bits == 0:
        return 0
    if bits <= 8:
        return 1
    if bits <= 16:
        return 2
    if bits <= 32:
        return 4
    raise FormatError(f"control word of {bits} bits", rule=RULE)


def _read_le(data: np.ndarray, pos: np.ndarray, width: int) -> np.ndarray:
    out = np.zeros(len(pos), np.int64)
    for b in range(width):
        out |= data[pos + b].astype(np.int64) << (8 * b)
    return out


def decode(layout, buffers: list, rows: int, max_visible: int):
    """Decode a full-zip page -> ``(rep, def, spans)``; slots with ``def <= max_visible``
    carry a fixed-width value."""
    bits_rep, bits_def = int(layout.bits_rep), int(layout.bits_def)
    if bits_rep > 16 or bits_def > 16:
        raise FormatError("full-zip level widths above 16 bits", rule=RULE)
    cw = _cw_bytes(bits_rep + bits_def)
    detail = layout.WhichOneof("details")
    if detail == "bits_per_value":
        # 0 bits: values of no bytes, a constant{} node (pylance 1.0.4 writes all-null
        # fixed-size list pages so, and 14.0.2 reads them)
        zero_ok = layout.bits_per_value == 0 and \
            layout.value_compression.WhichOneof("compression") == "constant"
        if layout.bits_per_value % 8 or (layout.bits_per_value == 0 and not zero_ok):
            raise FormatError(f"full-zip bits_per_value {layout.bits_per_value}", rule=RULE)
        vw, lw = int(layout.bits_per_value) // 8, 0
    elif detail == "bits_per_offset":
        if layout.bits_per_offset not in (32, 64):
            raise FormatError(f"full-zip bits_per_offset {layout.bits_per_offset}", rule=RULE)
        vw, lw = 0, int(layout.bits_per_offset) // 8
    else:
        raise FormatError("full-zip page without bits_per_value/bits_per_offset", rule=RULE)
    if not buffers:
        raise FormatError("full-zip page without a data buffer", rule=RULE)
    data = np.frombuffer(buffers[0], np.uint8)
    size = len(data)
    if len(buffers) > 1 and len(buffers[1]):
        idx_buf = buffers[1]
        if len(idx_buf) % (rows + 1):
            raise FormatError(f"repetition index of {len(idx_buf)} bytes for {rows} rows", rule=RULE)
        w = len(idx_buf) // (rows + 1)
        if w not in (1, 2, 4, 8):
            raise FormatError(f"repetition index entries of {w} bytes", rule=RULE)
        row_start = np.frombuffer(idx_buf, f"<u{w}").astype(np.int64)
        if row_start[-1] != size or np.any(np.diff(row_start) < 0) or row_start[0] != 0:
            raise FormatError("repetition index is not monotonic up to the data length", rule=RULE)
    else:
        if lw or bits_rep:
            raise FormatError("variable or repeated full-zip page without repetition index", rule=RULE)
        stride = cw + vw
        if rows * stride != size:
            raise FormatError(f"{rows} rows of {stride} bytes do not fill {size} bytes", rule=RULE)
        row_start = np.arange(rows + 1, dtype=np.int64) * stride
    cur = row_start[:-1].copy()
    end = row_start[1:]
    slot_rows, slot_pos, reps, defs, vstart, vlen = [], [], [], [], [], []
    active = np.nonzero(cur < end)[0] if rows else np.zeros(0, np.int64)
    step = 0
    max_def = (1 << bits_def) - 1
    while len(active):
        step += 1
        if step > size + 1:
            raise FormatError("full-zip walk does not terminate", rule=RULE)
        p = cur[active]
        if np.any(p + cw > end[active]):
            raise FormatError("full-zip control word runs past its row", rule=RULE)
        word = _read_le(data, p, cw) if cw else np.zeros(len(p), np.int64)
        dd = word & max_def if bits_def else np.zeros(len(p), np.int64)
        rr = word >> bits_def if bits_rep else np.zeros(len(p), np.int64)
        p = p + cw
        if lw:
            has = dd == 0
            ln = np.zeros(len(p), np.int64)
            if has.any():
                if np.any(p[has] + lw > end[active][has]):
                    raise FormatError("full-zip length runs past its row", rule=RULE)
                ln[has] = _read_le(data, p[has], lw)
                p = p + np.where(has, lw, 0)
                # a u64 length of 2^63 or more reads as negative: it must not move the walk
                # backwards (numpy would index from the end) any more than past the row
                if np.any((ln < 0) | (ln > end[active] - p)):
                    raise FormatError("full-zip value length runs past its row", rule=RULE)
            vstart.append(np.where(has, p, 0))
            vlen.append(ln)
            p = p + ln
        else:
            vstart.append(p)
            vlen.append(None)
            p = p + np.where(dd <= max_visible, vw, 0)
        slot_rows.append(active)
        slot_pos.append(cur[active])
        reps.append(rr)
        defs.append(dd)
        cur[active] = p
        if np.any(cur[active] > end[active]):
            raise FormatError("full-zip value runs past its row", rule=RULE)
        active = active[cur[active] < end[active]]
    if slot_pos:
        pos_all = np.concatenate(slot_pos)
        order = np.argsort(pos_all, kind="stable")
        rep = np.concatenate(reps)[order]
        dfn = np.concatenate(defs)[order]
        vs = np.concatenate(vstart)[order]
        vl = np.concatenate(vlen)[order] if lw else None
    else:
        rep = dfn = np.zeros(0, np.int64)
        vs = np.zeros(0, np.int64)
        vl = np.zeros(0, np.int64) if lw else None
    n_slots = len(rep)
    if layout.num_items and int(layout.num_items) != n_slots and bits_rep:
        raise FormatError(f"full-zip num_items={layout.num_items}, {n_slots} slots found", rule=RULE)
    rep_out = rep.astype(np.uint16) if bits_rep else None
    def_out = dfn.astype(np.uint16) if bits_def else None
    return rep_out, def_out, (vs, vl, vw, data)


def slot_values(layout, spans, visible: np.ndarray):
    """Cut the visible slots' values out of the zipped stream and decode them.

    Fixed-width values are gathered at once; variable-width ones are handed on as
    :class:`.values.Spans` (where each value lies in the stream), which the FSST decoder
    reads piece by piece: a full-zip page holds large values and is often the whole column,
    and neither its bytes nor an index of them need be copied whole."""
    vs, vl, vw, data = spans
    starts = vs[visible]
    if vl is None:
        if len(starts) and np.any(starts + vw > len(data)):
            raise FormatError("full-zip fixed value past the data", rule=RULE)
        raw = Fixed(gather_ranges(data, starts, np.full(len(starts), vw, np.int64)), vw * 8)
    else:
        lens = vl[visible]
        off = np.zeros(len(lens) + 1, np.int64)
        np.cumsum(lens, out=off[1:])
        raw = Spans(off, starts, data)
    return compressive.decode_per_value(layout.value_compression, raw)
