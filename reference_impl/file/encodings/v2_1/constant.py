"""The constant / all-null layout (``PageLayout.constant_layout``, FILE-ENCODINGS §3.4).

Fields: 5 ``layers``, 6 ``inline_value`` (optional bytes), 7 ``rep_compression``,
8 ``def_compression``, 9 ``num_rep_values``, 10 ``num_def_values``.

* all-null, simple: layers ``[NULLABLE_ITEM]``, no buffers;
* all-null, complex: buffers ``[rep, def]``; raw u16 levels (size 0 when absent), or in 2.2
  block-compressed with ``num_rep_values`` / ``num_def_values``;
* constant value (2.2 only): ``inline_value`` (ints/floats LE, bool as one byte) with 0 or 2
  level buffers, or a scalar value buffer first (1 or 3 buffers). The scalar buffer is
  ``u32 n_buffers, u32 len[n], then the Arrow buffers of a 1-element array``; utf8/binary are
  (offsets ``[0, len]`` of 4 or 8 bytes, data).

Def 0 is the constant; other levels are nulls/empties as in :mod:`.repdef`.
"""

from __future__ import annotations

import numpy as np

from reference_impl.errors import FormatError

from . import compressive
from .values import Fixed, Var

RULE = "ENC-044"


def _levels(buf, node_present, node, count):
    if len(buf) == 0:
        return None
    if node_present:
        return compressive.levels(node, buf, count)
    if len(buf) % 2:
        raise FormatError("raw u16 levels of odd length", rule=RULE)
    return np.frombuffer(buf, "<u2")


def scalar(buf):
    """Parse a scalar value buffer -> list of its Arrow buffers (bytes)."""
    b = bytes(buf)
    if len(b) < 4:
        raise FormatError("scalar value buffer shorter than its count", rule=RULE)
    n = int.from_bytes(b[:4], "little")
    if n > 8 or 4 + 4 * n > len(b):
        raise FormatError(f"scalar value buffer declares {n} buffers", rule=RULE)
    lens = [int.from_bytes(b[4 + 4 * i: 8 + 4 * i], "little") for i in range(n)]
    pos = 4 + 4 * n
    out = []
    for ln in lens:
        if pos + ln > len(b):
            raise FormatError("scalar value buffers run past their bytes", rule=RULE)
        out.append(b[pos:pos + ln])
        pos += ln
    return out


def inline_scalar(v: bytes, value_kind: str, value_bits: int) -> Fixed:
    """The one-element value stream of an inline constant (fixed-width types only)."""
    if value_kind != "fixed":
        raise FormatError("inline constant for a variable-width type", rule=RULE)
    if value_bits == 1:
        return Fixed(np.array([bool(v[0]) if v else False]), 1)
    if len(v) != value_bits // 8:
        raise FormatError(f"inline constant of {len(v)} bytes for a {value_bits}-bit type", rule=RULE)
    return Fixed(np.frombuffer(v, np.uint8), value_bits)


def decode(layout, buffers: list, version: str, rows: int, value_kind: str, value_bits: int):
    """-> ``(rep, def, value or None, is_constant)``; ``value`` is a one-element value stream.

    ``value_kind`` is "fixed" or "var" (from the Arrow type), ``value_bits`` the fixed width.
    """
    compressive.check_version(layout, version)
    inline = layout.HasField("inline_value")
    nbuf = len(buffers)
    value = None
    lv = buffers
    if inline:
        if version == "2.1":
            raise FormatError("Lance 2.1 only accepts the all-null constant layout", rule=RULE)
        value = inline_scalar(bytes(layout.inline_value), value_kind, value_bits)
    elif nbuf in (1, 3):
        if version == "2.1":
            raise FormatError("Lance 2.1 only accepts the all-null constant layout", rule=RULE)
        parts = scalar(buffers[0])
        lv = buffers[1:]
        if value_kind == "var":
            if len(parts) < 2:
                raise FormatError("variable scalar without offsets and data", rule=RULE)
            ob = parts[-2]
            w = len(ob) // 2
            if w not in (4, 8) or len(ob) != 2 * w:
                raise FormatError("scalar offsets are not two 4- or 8-byte values", rule=RULE)
            o = np.frombuffer(ob, f"<u{w}").astype(np.int64)
            data = np.frombuffer(parts[-1], np.uint8)
            if o[0] > o[1] or o[1] > len(data):
                raise FormatError("scalar offsets outside its data", rule=RULE)
            value = Var(np.array([0, o[1] - o[0]], np.int64), data[o[0]:o[1]])
        else:
            d = parts[-1]
            if value_bits == 1:
                value = Fixed(np.array([bool(d[0] & 1) if d else False]), 1)
            else:
                if len(d) < value_bits // 8:
                    raise FormatError("scalar value shorter than its type", rule=RULE)
                value = Fixed(np.frombuffer(d, np.uint8, value_bits // 8), value_bits)
    if len(lv) not in (0, 2):
        raise FormatError(f"constant layout with {nbuf} buffers", rule=RULE)
    rep = dfn = None
    if len(lv) == 2:
        rep = _levels(lv[0], layout.HasField("rep_compression"), layout.rep_compression, int(layout.num_rep_values))
        dfn = _levels(lv[1], layout.HasField("def_compression"), layout.def_compression, int(layout.num_def_values))
    return rep, dfn, value
