"""Constant / all-null layout (``PageLayout`` field 2, FILE-ENCODINGS §3.4).

All-null form, written when a page holds no valid value (2.1 and 2.2):

* Simple all-null: no repetition and the only def layer is the leaf item
  (``layers [NULLABLE_ITEM]``): no buffers at all.
* Complex all-null (null structs, null or empty lists...): the full layer list and two
  buffers ``[rep, def]`` of raw u16 levels; a kind that is absent is a size-0 buffer.

2.1 accepts only this all-null form with raw levels.

Constant form (2.2 only), written when every valid value of the page is equal; def
levels (0 = the constant) still mark nulls and empties:

* a value whose Arrow form is one buffer of at most 32 bytes is stored in
  ``inline_value`` (integers, floats, dates, decimals as little-endian bytes; a boolean
  as one byte 0x00/0x01); the page has no buffers without levels, or ``[rep, def]``;
* otherwise (strings, binary) buffer 0 is a scalar: ``u32 n_buffers, u32 len[n]``, then
  the Arrow buffers of a one-element array (offsets ``[0, len]`` of 4 or 8 bytes, then
  the bytes); then ``[rep, def]`` when there are levels.
"""

from __future__ import annotations

import numpy as np

from ....proto import encodings_v2_1_pb2 as pb
from ..arrow_data import (
    fixed_bits,
    fixed_values,
    is_large_variable,
    is_variable_width,
    variable_parts,
)
from .repdef import Shredded

INLINE_MAX_BYTES = 32
SAMPLE = 64


def encode_all_null(sh: Shredded) -> tuple[list[bytes], pb.PageLayout]:
    layout = pb.PageLayout()
    layout.constant_layout.SetInParent()
    layout.constant_layout.layers.extend(sh.layers)
    simple = sh.rep is None and list(sh.layers) == [pb.REPDEF_NULLABLE_ITEM]
    if simple:
        return [], layout
    rep = sh.rep.astype("<u2").tobytes() if sh.rep is not None else b""
    deff = sh.deff.astype("<u2").tobytes() if sh.deff is not None else b""
    return [rep, deff], layout


def constant_value(values) -> bytes | None:
    """The bytes of the single distinct valid value, or None if the valid values differ.

    Only for plain fixed-width types (not fixed-size lists) and strings/binary.
    """
    import pyarrow as pa

    t = values.type
    if pa.types.is_fixed_size_list(t) or len(values) == values.null_count:
        return None
    valid = (
        np.ones(len(values), bool)
        if values.null_count == 0
        else values.is_valid().to_numpy(zero_copy_only=False)
    )
    pos = np.flatnonzero(valid)
    if is_variable_width(t):
        offsets, data = variable_parts(values)
        starts, lens = offsets[:-1][pos], np.diff(offsets)[pos]
        if not np.all(lens == lens[0]):
            return None
        first = data[starts[0] : starts[0] + lens[0]]
        if lens[0] and not np.array_equal(
            data[starts[:, None] + np.arange(lens[0])],
            np.broadcast_to(first, (len(pos), int(lens[0]))),
        ):
            return None
        return first.tobytes()
    if pa.types.is_boolean(t):
        bits = values.fill_null(False).to_numpy(zero_copy_only=False)[pos]
        return bytes([int(bits[0])]) if np.all(bits == bits[0]) else None
    width = fixed_bits(t) // 8
    rows = fixed_values(values).reshape(-1, width)[pos]
    return rows[0].tobytes() if np.all(rows == rows[0]) else None


def encode_constant(sh: Shredded, value: bytes) -> tuple[list[bytes], pb.PageLayout]:
    """A 2.2 constant page for ``value`` (as returned by :func:`constant_value`)."""
    layout = pb.PageLayout()
    c = layout.constant_layout
    c.SetInParent()
    c.layers.extend(sh.layers)
    buffers: list[bytes] = []
    t = sh.values.type
    if is_variable_width(t):
        fmt = "<u8" if is_large_variable(t) else "<u4"
        offsets = np.array([0, len(value)], fmt).tobytes()
        buffers.append(np.array([2, len(offsets), len(value)], "<u4").tobytes() + offsets + value)
    elif len(value) <= INLINE_MAX_BYTES:
        c.inline_value = value
    else:
        buffers.append(np.array([1, len(value)], "<u4").tobytes() + value)
    if sh.rep is not None or sh.deff is not None:
        buffers.append(sh.rep.astype("<u2").tobytes() if sh.rep is not None else b"")
        buffers.append(sh.deff.astype("<u2").tobytes() if sh.deff is not None else b"")
    return buffers, layout
