"""``List{offsets, null_offset_adjustment, num_items}``: a 2.0 list offsets page.

A list field takes an *offsets column* followed by its item column(s). Each offsets page
holds one u64 offset per list (``nullable{no_nulls{flat 64}}``), without a leading 0, and
offsets restart at 0 in every page. With ``adj = null_offset_adjustment`` (the page's item
count + 1): list *i* is null iff ``offsets[i] >= adj``; its end is ``offsets[i] % adj``
and its start the previous list's end (0 for the first). ``num_items`` counts the items
this page references (absent when 0); page *k* covers the items that start at the sum of
``num_items`` over pages ``< k`` in the item column, whose pages are cut independently.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._common import RULE_OFFSETS, PageContext
from .nullable import unsigned_values


@dataclass
class ListPage:
    """One decoded offsets page: per-list ends (page-relative), null mask, item count."""

    ends: np.ndarray  # uint64, page-relative end of every list
    is_null: np.ndarray  # bool
    num_items: int


def decode_list_page(node, ctx: PageContext, num_rows: int) -> ListPage:
    raw = unsigned_values(node.offsets, ctx, num_rows)
    adj = int(node.null_offset_adjustment)
    if adj == 0:
        raise ctx.error("list null_offset_adjustment is 0", RULE_OFFSETS)
    is_null = raw >= np.uint64(adj)
    ends = raw % np.uint64(adj)
    if num_rows and np.any(np.diff(ends.astype(np.int64)) < 0):
        raise ctx.error("list offsets decrease", RULE_OFFSETS)
    last = int(ends[-1]) if num_rows else 0
    if last != int(node.num_items):
        raise ctx.error(
            f"list offsets end at {last} but num_items is {node.num_items}", RULE_OFFSETS
        )
    if last > adj - 1:
        raise ctx.error(
            f"list offsets reach {last}, past null_offset_adjustment-1 = {adj - 1}", RULE_OFFSETS
        )
    return ListPage(ends, is_null, last)
