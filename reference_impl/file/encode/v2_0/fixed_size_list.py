"""2.0 "FixedSizeList" encoding: ``FixedSizeList{dimension, items}`` inside the row ``Nullable``.

The page is ``nullable{...values fixed_size_list{dimension N, items ...}}``: the outer
Nullable carries row validity (its bitmap takes the first buffer index), and ``items``
decodes ``n * N`` item slots, itself usually ``nullable{...flat W}`` with its own item
validity. Items under null rows are placeholders.
"""

from __future__ import annotations

import pyarrow as pa

from ....proto import encodings_v2_0_pb2 as pb


def fixed_size_list_node(arr: pa.Array, buffers: list[bytes], items_node) -> pb.ArrayEncoding:
    """``items_node(child_array, buffers)`` builds the items' tree."""
    node = pb.ArrayEncoding()
    node.fixed_size_list.dimension = arr.type.list_size
    size = arr.type.list_size
    child = arr.values.slice(arr.offset * size, len(arr) * size)
    node.fixed_size_list.items.CopyFrom(items_node(child, buffers))
    return node
