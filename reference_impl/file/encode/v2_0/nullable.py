"""2.0 "Basic Primitive" nullability: ``Nullable{no_nulls | some_nulls | all_nulls}``.

* ``no_nulls{values}``: every slot valid.
* ``some_nulls{validity, values}``: ``validity`` is a ``Flat{bits_per_value: 1}`` bitmap
  (LSB first, 1 = valid, ``ceil(n/8)`` bytes), taking its buffer index before the values;
  ``values`` still has a slot for every row.
* ``all_nulls{}``: no buffers at all.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ....proto import encodings_v2_0_pb2 as pb
from ..arrow_data import bitmap
from .value import flat_node


def nullable_node(
    valid: np.ndarray | None,
    n: int,
    buffers: list[bytes],
    values: Callable[[list[bytes]], pb.ArrayEncoding],
) -> pb.ArrayEncoding:
    """Wrap the node built by ``values(buffers)`` according to the validity mask ``valid``."""
    node = pb.ArrayEncoding()
    if valid is None:
        node.nullable.no_nulls.values.CopyFrom(values(buffers))
    elif n > 0 and not valid.any():
        node.nullable.all_nulls.SetInParent()
    else:
        node.nullable.some_nulls.validity.CopyFrom(flat_node(1, buffers, bitmap(valid)))
        node.nullable.some_nulls.values.CopyFrom(values(buffers))
    return node
