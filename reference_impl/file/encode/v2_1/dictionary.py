"""Structural dictionary in a mini-block page (FILE-ENCODINGS §3.2 "Buffer 2, dictionary").

``MiniBlockLayout.dictionary`` describes page buffer 2, the whole dictionary as one
block: ``variable{offsets flat 32}`` for strings (§4.7 block form) or ``flat 128`` /
``flat 64`` for fixed width; in 2.2 that block is wrapped in ``general{LZ4}`` (or the
scheme ``lance-encoding:dict-values-compression`` names; ``none``: no wrapper).
``num_dictionary_items`` counts the items. The chunk values are then 0-based i32
indices into the items, bit-packed like any 32-bit integers; null slots carry index 0
(their def level marks them null).
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from ....proto import encodings_v2_1_pb2 as pb
from ..arrow_data import fixed_bits, fixed_values, is_variable_width
from .flat import flat_encoding
from .general import LZ4, ZSTD, compress, general_encoding
from .variable import variable_block


def build_dictionary(
    values: pa.Array, version: str, items_compression: str | None = None
) -> tuple[pa.Array, bytes, pb.CompressiveEncoding, int]:
    """``(indices int32 array, dictionary buffer, its encoding, item count)``.

    ``items_compression`` (2.2 only, as pylance 14.0.2): None or ``lz4`` -> LZ4,
    ``zstd`` -> ZSTD, ``none`` -> the block stays raw."""
    encoded = pc.dictionary_encode(values)
    items = encoded.dictionary
    if len(items) == 0:  # a dictionary page always has a valid value; guard anyway
        raise ValueError("cannot build a dictionary over a page without valid values")
    indices = encoded.indices.fill_null(0).cast(pa.int32())
    if is_variable_width(values.type):
        block, enc = variable_block(items)
    else:
        block = fixed_values(items).tobytes()
        enc = flat_encoding(fixed_bits(values.type))
    if version != "2.1" and items_compression != "none":
        scheme = ZSTD if items_compression == "zstd" else LZ4
        block = compress(block, scheme)
        enc = general_encoding(scheme, enc)
    return indices, block, enc, len(items)
