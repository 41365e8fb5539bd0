"""LABEL_LIST index content: for each label (a list item's value), the rows whose list holds it.

The files are a BITMAP index's (:mod:`reference_impl.index.bitmap`) over the list items:
``bitmap_page_lookup.lance`` with ``keys`` (the item type) and ``bitmaps`` (row-address tree
maps). A row appears under every distinct label of its list; a row whose list is null or empty
appears under none. The schema metadata ``lance:label_list_nulls`` (``"1"``, written by later
releases) says null *items* are kept under a null key; without it a null item is not indexed.

Logical form: the BITMAP's ``value``/``row_id``/``key`` entries, one per (label, row).

Checks: the (label, row) pairs equal the data's (each live covered row under exactly the
distinct labels of its list), no row outside the covered fragments, keys distinct.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from . import Disagreement, IndexContent, IndexedData, IndexFiles
from .against import hold_pairs
from .bitmap import FILE, distinct_keys, expand_full, read_postings, summarize

KIND = "label_list"
NULLS_KEY = b"lance:label_list_nulls"


def read(files: IndexFiles, index) -> IndexContent:
    entries, full, meta, n_keys = read_postings(files, KIND)
    keys = files.read_table(FILE).column("keys").combine_chunks() if full else None
    version = "label_list-v1" if NULLS_KEY in meta else "label_list-v0"
    return IndexContent(KIND, version, entries, summarize(KIND, version, entries, n_keys, meta),
                        {"full": full, "keys": keys, "metadata": meta, "n_keys": n_keys,
                         "null_items": meta.get(NULLS_KEY, b"0") not in (b"0", b"false")})


def labels(data: IndexedData, *, null_items: bool) -> tuple[np.ndarray, pa.Array]:
    """The data's (row, label) pairs: each live covered row with each item of its list."""
    lists = data.values
    if isinstance(lists, pa.ChunkedArray):
        lists = lists.combine_chunks()
    if pa.types.is_dictionary(lists.type):
        lists = lists.dictionary_decode()
    parent = pc.list_parent_indices(lists).to_numpy(zero_copy_only=False)
    items = pc.list_flatten(lists)
    if not null_items and items.null_count:
        keep = items.is_valid()
        parent = parent[keep.to_numpy(zero_copy_only=False)]
        items = items.filter(keep)
    return data.row_ids[parent], items


def check(content: IndexContent, index, data: IndexedData) -> Iterator[Disagreement]:
    e = expand_full(content.entries, content.extra["full"], content.extra["keys"], data)
    keys = e.column("key").to_numpy()
    rows, items = labels(data, null_items=content.extra.get("null_items", False))
    yield from hold_pairs(index.name, data, e.column("row_id").to_numpy(),
                          e.column("value").combine_chunks(), data_rows=rows,
                          data_values=items, every_row=False,
                          where=lambda i: {"key": int(keys[i])})
    yield from distinct_keys(index.name, e, content.extra["n_keys"])
