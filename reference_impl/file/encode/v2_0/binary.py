"""2.0 "Binary" encoding for strings and binary: ``Binary{indices, bytes, null_adjustment}``.

``indices`` (buffer first) is ``nullable{no_nulls{flat 64}}``: one u64 *end* offset per
row, no leading zero, relative to the page's bytes. ``bytes`` is ``Flat 8`` holding the
concatenated values. ``null_adjustment`` = total bytes + 1; a null row stores
``end + null_adjustment``, so nulls need no validity buffer. Row *i* spans from the
previous row's end (0 for row 0) to its own end.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from ....proto import encodings_v2_0_pb2 as pb
from ..arrow_data import valid_mask, variable_parts
from .value import flat_node


def binary_node(arr: pa.Array, buffers: list[bytes]) -> pb.ArrayEncoding:
    offsets, data = variable_parts(arr)
    adjustment = len(data) + 1
    ends = offsets[1:].astype(np.uint64)
    valid = valid_mask(arr)
    if valid is not None:
        ends = np.where(valid, ends, ends + np.uint64(adjustment))
    node = pb.ArrayEncoding()
    node.binary.indices.nullable.no_nulls.values.CopyFrom(
        flat_node(64, buffers, np.ascontiguousarray(ends, "<u8"))
    )
    node.binary.bytes.CopyFrom(flat_node(8, buffers, np.ascontiguousarray(data)))
    node.binary.null_adjustment = adjustment
    return node
