"""``FixedSizeList{items_per_value, has_validity, values}`` for ``fixed_size_list<primitive>``.

Mini-block (FILE-ENCODINGS §4.10): the chunk's value buffers are, when
``has_validity``, one LSB-first bitmap of item validity covering
``rows_in_chunk * dimension`` bits, then the flat items. Row nulls are a def layer,
not part of this node; items under null rows are placeholders. Per value (full-zip):
each row is ``ceil(dimension / 8)`` validity bytes (when ``has_validity``) then the item
bytes, and ``bits_per_value`` counts both.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from ....errors import UnsupportedFeature
from ....proto import encodings_v2_1_pb2 as pb
from ..arrow_data import fixed_bits, fixed_values
from .flat import chunk_values_for_width


def _items(values: pa.Array) -> pa.Array:
    size = values.type.list_size
    return values.values.slice(values.offset * size, len(values) * size)


class FixedSizeListValues:
    """A page's fixed-size list values; nested fixed-size lists (``fixed_size_list<
    fixed_size_list<int32, 3>, 2>``) nest the node, and each layer with nulls among its
    items carries one LSB-first bitmap of them, outermost layer first (FILE-ENCODINGS
    §4.10 "one bitmap per nested FSL layer with has_validity"), as pylance 14.0.2 writes."""

    def __init__(self, values: pa.Array) -> None:
        t = values.type
        self.dims: list[int] = []
        layer = values
        validity: list[np.ndarray | None] = []
        while pa.types.is_fixed_size_list(layer.type):
            self.dims.append(layer.type.list_size)
            layer = _items(layer)
            validity.append(layer.is_valid().to_numpy(zero_copy_only=False)
                            if layer.null_count else None)
        items = layer
        self.dim = int(np.prod(self.dims))  # leaf items per row
        # items of the null type: no bytes, every item null (``constant{}`` under the list,
        # full-zip with the validity bytes alone, as pylance 14.0.2 writes them)
        self.null_items = pa.types.is_null(items.type)
        if self.null_items:
            if len(self.dims) > 1:
                raise UnsupportedFeature(f"2.1+ writer does not write {t} (nested, of nulls)")
            self.item_bits = 0
            self.item_bools = None
            self.item_bytes = np.zeros(0, np.uint8)
            self.layers = [(self.dims[0], np.zeros(len(items), bool))]
            self.has_validity = True
            self.item_valid = self.layers[0][1]
            self.num_buffers = 2
            self.row_bytes = 0
            self.max_chunk_values = chunk_values_for_width(8)
            return
        self.item_bits = fixed_bits(items.type)
        if len(self.dims) > 1 and self.item_bits == 1:
            raise UnsupportedFeature(f"2.1+ writer does not write {t} (nested, of booleans)")
        # booleans: one bit per item, LSB first (``flat 1``, as pylance 14.0.2 writes them)
        self.item_bools = (items.fill_null(False).to_numpy(zero_copy_only=False)
                           if self.item_bits == 1 else None)
        self.item_bytes = fixed_values(items)
        # per layer: (entries per row, validity of those entries or None)
        per_row = np.cumprod(self.dims).tolist()
        self.layers = list(zip(per_row, validity, strict=True))
        self.has_validity = validity[-1] is not None
        self.item_valid = validity[-1]
        self.num_buffers = 1 + sum(v is not None for v in validity)
        self.row_bytes = self.dim * self.item_bits // 8  # (bools: per_value_bits below)
        self.max_chunk_values = chunk_values_for_width(self.dim * self.item_bits)

    def encoding(self) -> pb.CompressiveEncoding:
        enc = pb.CompressiveEncoding()
        node = enc
        for size, (_, valid) in zip(self.dims, self.layers, strict=True):
            node.fixed_size_list.items_per_value = size
            node.fixed_size_list.has_validity = valid is not None
            node = node.fixed_size_list.values
        if self.null_items:
            node.constant.SetInParent()
        else:
            node.flat.bits_per_value = self.item_bits
        return enc

    def cost(self, start: int, count: int) -> int:
        data = (count * self.dim * self.item_bits + 7) // 8
        return data + sum((count * n + 7) // 8 for n, _ in self.layers) + 8

    def chunk(self, start: int, count: int) -> list[bytes]:
        if self.item_bools is not None:
            bits = self.item_bools[start * self.dim : (start + count) * self.dim]
            data = np.packbits(bits, bitorder="little").tobytes()
        else:
            data = self.item_bytes[start * self.row_bytes : (start + count) * self.row_bytes].tobytes()
        out = [np.packbits(valid[start * n : (start + count) * n], bitorder="little").tobytes()
               for n, valid in self.layers if valid is not None]
        return out + [data]

    # full-zip: one fixed-size value per row
    def per_value_bits(self) -> int:
        extra = ((self.dim + 7) // 8) * 8 if self.has_validity else 0
        return self.dim * self.item_bits + extra

    def per_value_bytes(self) -> np.ndarray:
        if self.null_items:  # the item validity bytes alone
            return np.packbits(self.item_valid.reshape(-1, self.dim), axis=1,
                               bitorder="little")
        if self.item_bools is not None or len(self.dims) > 1:
            raise UnsupportedFeature("a full-zip page of fixed-size lists of booleans or of "
                                     "nested fixed-size lists is not written by this writer")
        rows = (
            self.item_bytes.reshape(-1, self.row_bytes)
            if self.row_bytes
            else np.zeros((0, 0), np.uint8)
        )
        if not self.has_validity:
            return rows
        vb = np.packbits(self.item_valid.reshape(-1, self.dim), axis=1, bitorder="little")
        return np.concatenate([vb, rows], axis=1)
