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
    def __init__(self, values: pa.Array) -> None:
        t = values.type
        if pa.types.is_fixed_size_list(t.value_type) or pa.types.is_boolean(t.value_type):
            raise UnsupportedFeature(
                f"2.1+ writer supports fixed_size_list of byte-wide primitives, not {t}"
            )
        self.dim = t.list_size
        self.item_bits = fixed_bits(t.value_type)
        items = _items(values)
        self.item_bytes = fixed_values(items)
        self.has_validity = items.null_count > 0
        self.item_valid = (
            items.is_valid().to_numpy(zero_copy_only=False) if self.has_validity else None
        )
        self.num_buffers = 2 if self.has_validity else 1
        self.row_bytes = self.dim * self.item_bits // 8
        self.max_chunk_values = chunk_values_for_width(self.dim * self.item_bits)

    def encoding(self) -> pb.CompressiveEncoding:
        enc = pb.CompressiveEncoding()
        enc.fixed_size_list.items_per_value = self.dim
        enc.fixed_size_list.has_validity = self.has_validity
        enc.fixed_size_list.values.flat.bits_per_value = self.item_bits
        return enc

    def cost(self, start: int, count: int) -> int:
        return count * self.row_bytes + (count * self.dim + 7) // 8 + 8

    def chunk(self, start: int, count: int) -> list[bytes]:
        data = self.item_bytes[start * self.row_bytes : (start + count) * self.row_bytes].tobytes()
        if not self.has_validity:
            return [data]
        bits = self.item_valid[start * self.dim : (start + count) * self.dim]
        return [np.packbits(bits, bitorder="little").tobytes(), data]

    # full-zip: one fixed-size value per row
    def per_value_bits(self) -> int:
        extra = ((self.dim + 7) // 8) * 8 if self.has_validity else 0
        return self.dim * self.item_bits + extra

    def per_value_bytes(self) -> np.ndarray:
        rows = (
            self.item_bytes.reshape(-1, self.row_bytes)
            if self.row_bytes
            else np.zeros((0, 0), np.uint8)
        )
        if not self.has_validity:
            return rows
        vb = np.packbits(self.item_valid.reshape(-1, self.dim), axis=1, bitorder="little")
        return np.concatenate([vb, rows], axis=1)
