"""``FixedSizeList{items_per_value, has_validity, values}`` (FILE-ENCODINGS §4.10, §3.3).

Block (2.3 dictionaries of fixed-size lists, seen inside ``General``): ``n`` rows in the
full-zip value layout below, back to back (:func:`decode_block`).

Mini-block: the chunk's value buffers are one item-validity bitmap per nested FSL layer with
``has_validity`` (outermost first, each ``rows * cumulative_dim`` bits, LSB first), then the
flat items. Full-zip (per value): each value is ``ceil(dim/8)`` validity bytes per such layer
followed by the item bytes. Row nulls are a def layer, not part of this node.
"""

from __future__ import annotations

import numpy as np

from reference_impl.errors import FormatError

from .values import Fixed, Fsl

RULE = "ENC-014"


def layers(node):
    """Flatten nested FSL nodes: ``(dims, has_validity flags, innermost flat bits)``."""
    dims, flags = [], []
    while node.WhichOneof("compression") == "fixed_size_list":
        f = node.fixed_size_list
        if f.items_per_value == 0 or f.items_per_value > 1 << 24:
            raise FormatError(f"fixed-size list of {f.items_per_value} items", rule=RULE)
        dims.append(int(f.items_per_value))
        flags.append(bool(f.has_validity))
        node = f.values
        if len(dims) > 16:
            raise FormatError("fixed-size lists nested too deeply", rule=RULE)
    if node.WhichOneof("compression") == "constant":
        return dims, flags, 0  # constant items (the per-value writer's all-null FSL)
    if node.WhichOneof("compression") != "flat":
        raise FormatError("fixed-size list items must be flat", rule=RULE)
    return dims, flags, int(node.flat.bits_per_value)


def _constant_of(node) -> bytes:
    while node.WhichOneof("compression") == "fixed_size_list":
        node = node.fixed_size_list.values
    return bytes(node.constant.value)


def num_buffers(node) -> int:
    dims, flags, _ = layers(node)
    return sum(flags) + 1


def decode_chunks(node, bufs: list, counts: list) -> Fsl:
    from . import flat

    dims, flags, bits = layers(node)
    if bits == 0:
        raise FormatError("constant fixed-size list items in a mini-block page", rule=RULE)
    flat.check_bits(bits)
    dim = int(np.prod(dims))
    cum = np.cumprod(dims)
    val_parts = [[] for _ in range(sum(flags))]
    item_bufs, item_counts = [], []
    for chunk, rows in zip(bufs, counts, strict=False):
        k = 0
        for li, f in enumerate(flags):
            if f:
                nbits = rows * int(cum[li])
                val_parts[k].append(flat.decode(chunk[k], nbits, 1).data)
                k += 1
        item_bufs.append(chunk[k])
        item_counts.append(rows * dim)
    items = flat.decode_chunks(item_bufs, item_counts, bits)
    validity = [np.concatenate(p) for p in val_parts]
    return Fsl(dim, items, validity, dims, [i for i, f in enumerate(flags) if f])


def decode_block(node, buf, n: int) -> Fsl:
    """``n`` rows laid out as full-zip values (validity bytes, then items), back to back."""
    dims, flags, bits = layers(node)
    if bits == 0 or bits % 8:
        raise FormatError("a fixed-size list block must hold whole-byte flat items", rule=RULE)
    cum = np.cumprod(dims)
    width = sum((int(cum[i]) + 7) // 8 for i, f in enumerate(flags) if f) + int(cum[-1]) * bits // 8
    if len(buf) < n * width:
        raise FormatError(f"fixed-size list block of {len(buf)} bytes for {n} rows of {width}", rule=RULE)
    return decode_pv(node, Fixed(np.frombuffer(buf, np.uint8, n * width), 8 * width))


def decode_pv(node, raw: Fixed) -> Fsl:
    """Full-zip values: each ``raw`` value is validity bytes then items."""
    dims, flags, bits = layers(node)
    dim = int(np.prod(dims))
    cum = np.cumprod(dims)
    W = raw.bits // 8
    n = raw.n
    mat = raw.data.reshape(n, W) if n else raw.data.reshape(0, max(W, 1))
    pos = 0
    validity = []
    for li, f in enumerate(flags):
        if f:
            nb = (int(cum[li]) + 7) // 8
            bits_ = np.unpackbits(np.ascontiguousarray(mat[:, pos:pos + nb]), axis=1, bitorder="little")[:, :int(cum[li])]
            validity.append(bits_.reshape(-1).astype(bool))
            pos += nb
    ib = (bits // 8) * dim
    if pos + ib != W:
        raise FormatError(f"full-zip FSL value of {W} bytes, expected {pos + ib}", rule=RULE)
    vl = [i for i, f in enumerate(flags) if f]
    if bits == 0:
        return Fsl(dim, Fixed(np.zeros(n * dim, bool), 1), validity, dims, vl, _constant_of(node))
    items = Fixed(np.ascontiguousarray(mat[:, pos:]).reshape(-1), bits)
    return Fsl(dim, items, validity, dims, vl)
