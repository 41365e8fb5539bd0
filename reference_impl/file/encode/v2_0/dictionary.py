"""2.0 "Dictionary" encoding for low-cardinality strings.

``Dictionary{indices, items, num_dictionary_items}``: ``indices`` is
``nullable{no_nulls{flat 8}}`` with u8 codes where **0 means null** and ``k >= 1`` means
``items[k-1]``; ``items`` is a :mod:`binary <.binary>` node over the distinct values (its
two buffers follow the indices buffer). A page whose values are all null gets a single
item that is itself null, with every code 0 (as pylance 14.0.2 writes it).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ....proto import encodings_v2_0_pb2 as pb
from .binary import binary_node
from .value import flat_node


def dictionary_node(arr: pa.Array, buffers: list[bytes]) -> pb.ArrayEncoding:
    encoded = pc.dictionary_encode(arr)
    items = encoded.dictionary
    codes = encoded.indices.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64) + 1
    if len(items) == 0:
        items = pa.array([None], type=arr.type)
    if len(items) > 255:
        raise ValueError("2.0 dictionary pages hold at most 255 items (u8 codes, 0 = null)")
    node = pb.ArrayEncoding()
    node.dictionary.indices.nullable.no_nulls.values.CopyFrom(
        flat_node(8, buffers, codes.astype(np.uint8).tobytes())
    )
    node.dictionary.items.CopyFrom(binary_node(items, buffers))
    node.dictionary.num_dictionary_items = len(items)
    return node
