"""2.0 "List" field encoding: an offsets column, then the item column(s).

The offsets page is ``List{offsets, null_offset_adjustment, num_items}`` whose
``offsets`` is ``nullable{no_nulls{flat 64}}``: one u64 end offset per list, no leading
zero, restarting at 0 in every page. ``num_items`` = items referenced by the page (left
out when 0) and ``null_offset_adjustment`` = ``num_items + 1``; a null list stores
``end + adjustment``. The page's ``length`` is the number of lists. The items the page
references are written as the child column's next page(s), in the same order.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from ....proto import encodings_v2_0_pb2 as pb
from ..arrow_data import list_offsets, valid_mask
from .value import flat_node


def list_offsets_node(arr: pa.Array, buffers: list[bytes]) -> tuple[pb.ArrayEncoding, pa.Array]:
    """The offsets page's tree and the slice of items it references."""
    offs = list_offsets(arr)
    start, end = int(offs[0]), int(offs[-1])
    num_items = end - start
    adjustment = num_items + 1
    ends = (offs[1:] - start).astype(np.uint64)
    valid = valid_mask(arr)
    if valid is not None:
        ends = np.where(valid, ends, ends + np.uint64(adjustment))
    node = pb.ArrayEncoding()
    node.list.offsets.nullable.no_nulls.values.CopyFrom(
        flat_node(64, buffers, ends.astype("<u8").tobytes())
    )
    node.list.null_offset_adjustment = adjustment
    node.list.num_items = num_items
    return node, arr.values.slice(start, num_items)
