"""The 2.1 blob layout (blob v1, ``PageLayout.blob_layout``, FILE-ENCODINGS §3.5).

``blob_layout{inner_layout: mini_block{packed_struct{bits [64, 64], flat 128}}, layers}``: each
row is a descriptor (u64 absolute file position, u64 size) of blob bytes stored as separate
64-aligned buffers elsewhere in the file. A null is size 0 with a non-zero position (14.0.2 writes
65536 = def level 1 << 16); an empty value is (0, 0). Decoding reads every described range (bounds-checked, counted).
"""

from __future__ import annotations

import numpy as np

from reference_impl.errors import FormatError

from . import mini_block
from .values import Var

RULE = "ENC-047"


def descriptors(container, layout, buffers, rows: int):
    """-> ``((rows, 2) u64 of (position, size) as stored, validity or None)``: a row of size
    0 and a non-zero position is a null when the page's layers are nullable."""
    inner = layout.inner_layout
    if inner.WhichOneof("layout") != "mini_block_layout":
        raise FormatError("blob inner layout must be mini-block", rule=RULE)
    _rep, _dfn, values = mini_block.decode(inner.mini_block_layout, buffers, container.version_name, rows)
    if values is None or values.bits != 128 or values.n != rows:
        raise FormatError("blob descriptors must be one (u64, u64) per row", rule=RULE)
    desc = values.data.view("<u8").reshape(rows, 2)
    valid = None
    if any(k in (3,) for k in layout.layers):
        valid = ~((desc[:, 1] == 0) & (desc[:, 0] > 0))
    return desc, valid


def decode(container, layout, buffers, rows: int):
    """-> ``(Var of blob bytes, validity or None)``."""
    raw, valid = descriptors(container, layout, buffers, rows)
    desc = raw.astype(np.int64)
    pos, size = desc[:, 0], desc[:, 1]
    live = size > 0
    # (u64 values of 2^63 or more read as negative; compare without adding, which could wrap)
    if np.any(size < 0) or np.any(pos[live] < 0) or np.any(size[live] > container.size - pos[live]):
        raise FormatError("blob descriptor points outside the file", rule=RULE, path=container.path)
    parts = [np.frombuffer(container.read_buffer(int(p), int(s)), np.uint8) for p, s in zip(pos, size, strict=False) if s]
    off = np.zeros(rows + 1, np.int64)
    np.cumsum(size, out=off[1:])
    data = np.concatenate(parts) if parts else np.zeros(0, np.uint8)
    return Var(off, data), valid
