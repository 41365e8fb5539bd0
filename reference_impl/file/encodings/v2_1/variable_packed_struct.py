"""``VariablePackedStruct{fields[{value, bits_per_value | bits_per_length}]}`` (2.2+, §4.12).

Used per value in full-zip: each value is the fields in order, a fixed field contributing
``bits_per_value/8`` bytes, a variable field a ``bits_per_length``-bit length then its bytes.
Decoding walks the fields once over all values at the same time (one numpy step per field).
"""

from __future__ import annotations

import numpy as np

from reference_impl.errors import FormatError

from .chunks import gather_ranges
from .values import Fixed, Var

RULE = "ENC-016"


def decode_pv(node, raw: Var) -> list:
    """One decoded stream per field. A slot with no bytes at all is a null struct (full-zip
    writes nothing for it): it decodes to placeholder zeros / an empty value."""
    lengths = np.diff(raw.offsets)
    present = lengths > 0
    if present.all():
        return _decode_present(node, raw)
    base = int(raw.offsets[0])
    sub_offsets = np.concatenate([[0], np.cumsum(lengths[present])]).astype(np.int64)
    sub = Var(sub_offsets, raw.data[base : base + int(sub_offsets[-1])])
    rows = np.flatnonzero(present)
    n = len(lengths)
    out = []
    for part in _decode_present(node, sub):
        if isinstance(part, Fixed):
            width = part.bits // 8
            data = np.zeros((n, width), np.uint8)
            data[rows] = part.data.reshape(-1, width)
            out.append(Fixed(data.reshape(-1), part.bits))
        else:
            lens = np.zeros(n, np.int64)
            lens[rows] = np.diff(part.offsets)
            off = np.zeros(n + 1, np.int64)
            np.cumsum(lens, out=off[1:])
            out.append(Var(off, part.data))
    return out


def _decode_present(node, raw: Var) -> list:
    n = raw.n
    starts = raw.offsets[:-1].copy()
    ends = raw.offsets[1:]
    data = raw.data
    out = []
    for f in node.fields:
        kind = f.WhichOneof("layout")
        if kind == "bits_per_value":
            B = int(f.bits_per_value) // 8
            if f.bits_per_value % 8 or B == 0 or np.any(starts + B > ends):
                raise FormatError("variable packed struct field runs past its value", rule=RULE)
            idx = (starts[:, None] + np.arange(B)).reshape(-1)
            out.append(Fixed(data[idx], B * 8))
            starts = starts + B
        elif kind == "bits_per_length":
            L = int(f.bits_per_length) // 8
            if L not in (1, 2, 4, 8) or np.any(starts + L > ends):
                raise FormatError("variable packed struct length runs past its value", rule=RULE)
            idx = (starts[:, None] + np.arange(L)).reshape(-1)
            lens = data[idx].reshape(n, L).copy().view(f"<u{L}").reshape(-1).astype(np.int64)
            starts = starts + L
            if np.any(starts + lens > ends):
                raise FormatError("variable packed struct bytes run past their value", rule=RULE)
            off = np.zeros(n + 1, np.int64)
            np.cumsum(lens, out=off[1:])
            out.append(Var(off, gather_ranges(data, starts, lens)))
            starts = starts + lens
        else:
            raise FormatError("variable packed struct field without a width", rule=RULE)
    return out
