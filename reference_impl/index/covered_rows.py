"""The rows an index covers, as the data holds them: what an index is held against.

An index covers the fragments of its ``fragment_bitmap`` (spec 004, ``IndexMetadata``). Its
rows are the live rows of those fragments that the version still has (a fragment the
bitmap names but the version lost, by deletion or compaction, has no live row; its rows
may remain in the index, as deleted rows may).

``row_ids`` are what value indexes key rows by: the stable row ids when the table uses them,
else the row addresses; ``addresses`` are ``fragment_id << 32 | offset`` (what zone-based
indexes answer with); ``values`` the indexed column at those rows, in the same order.
``all_addresses``/``all_row_ids`` hold every live row of the version (covered or not), so
that an index entry naming a row outside its fragments can be told from a deleted row.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa


@dataclass
class CoveredRows:
    column: str
    values: pa.Array
    row_ids: np.ndarray
    addresses: np.ndarray
    covered_fragments: np.ndarray
    stable_row_ids: bool
    all_row_ids: np.ndarray
    all_addresses: np.ndarray

    @classmethod
    def of(cls, table: pa.Table, column: str, covered_fragments, stable_row_ids: bool):
        """From a scan of the version with ``column``, ``_rowid`` and ``_rowaddr``."""
        addrs = table.column("_rowaddr").to_numpy().astype(np.uint64)
        ids = table.column("_rowid").to_numpy().astype(np.uint64)
        covered = np.asarray(sorted(int(f) for f in covered_fragments), dtype=np.uint64)
        keep = np.isin(addrs >> np.uint64(32), covered)
        values = table.column(column).combine_chunks() if table.num_rows else \
            pa.array([], table.schema.field(column).type)
        return cls(column=column, values=values.filter(pa.array(keep)), row_ids=ids[keep],
                   addresses=addrs[keep], covered_fragments=covered,
                   stable_row_ids=stable_row_ids, all_row_ids=ids, all_addresses=addrs)

    def fragment_of_row_id(self, row_ids: np.ndarray) -> np.ndarray:
        """The fragment of each row id among the version's live rows (-1: no live row)."""
        row_ids = np.asarray(row_ids, dtype=np.uint64)
        if not self.stable_row_ids:
            frag = (row_ids >> np.uint64(32)).astype(np.int64)
            live = np.isin(row_ids, self.all_addresses)
            return np.where(live, frag, -1)
        order = np.argsort(self.all_row_ids, kind="stable")
        sorted_ids = self.all_row_ids[order]
        pos = np.clip(np.searchsorted(sorted_ids, row_ids), 0, max(len(sorted_ids) - 1, 0))
        found = (sorted_ids[pos] == row_ids) if len(sorted_ids) else np.zeros(len(row_ids), bool)
        frag = (self.all_addresses[order][pos] >> np.uint64(32)).astype(np.int64) \
            if len(sorted_ids) else np.zeros(len(row_ids), np.int64)
        return np.where(found, frag, -1)
