"""Row addresses an index names from before a compaction whose remap was deferred.

``compact_files(defer_index_remap=True)`` rewrites fragments without touching the indexes;
the fragment reuse index (``__lance_frag_reuse``, ``FragmentReuseIndexDetails``) records, per
compaction, which old row addresses went to which new ones, and a reader translates what an
index answers through it. Later, ``optimize_indices`` may give the index a fragment bitmap of
the new fragments while its content still names old addresses (kinds that cannot remap keep
their zones on the old fragments). :class:`Remap` makes the same translation so that such an
index is held against its data as a reader uses it.

``forward`` maps old addresses to new ones (chains of compactions followed in version
order); ``backward`` maps a new address to the old address it came from (the last
compaction first).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

NONE = np.uint64(2**64 - 1)


@dataclass
class Remap:
    #: per compaction (in version order): old addresses sorted, and where each went
    steps: list[tuple[np.ndarray, np.ndarray]]
    old_fragments: frozenset[int]

    @classmethod
    def of(cls, details, *, store=None, path: str | None = None) -> Remap:
        """From a ``FragmentReuseIndexDetails`` message."""
        from reference_impl.table.fragment_reuse import decode_versions, group_mapping

        steps, frags = [], set()
        for v in sorted(decode_versions(details, store=store, path=path),
                        key=lambda v: v.dataset_version):
            olds, news = [], []
            for g in v.groups:
                old, new = group_mapping(g, path=path)
                olds.append(old)
                news.append(new)
                frags.update(int(d.id) for d in g.old_fragments)
            if olds:
                old, new = np.concatenate(olds), np.concatenate(news)
                order = np.argsort(old, kind="stable")
                steps.append((old[order], new[order]))
        return cls(steps, frozenset(frags))

    @classmethod
    def of_moves(cls, moves) -> Remap | None:
        """From ``IndexedData.moves`` (``(old, new)`` arrays sorted by old, oldest first);
        None when there are none."""
        steps = [(np.asarray(o, np.uint64), np.asarray(n, np.uint64)) for o, n in moves or ()]
        if not steps:
            return None
        frags = set()
        for old, _new in steps:
            frags.update(np.unique(old >> np.uint64(32)).astype(np.int64).tolist())
        return cls(steps, frozenset(frags))

    def forward(self, addrs) -> tuple[np.ndarray, np.ndarray]:
        """``(addresses, dropped)``: each address after every compaction (unchanged when no
        compaction moved it), and whether a compaction dropped it (a deleted row)."""
        out = np.asarray(addrs, np.uint64).copy()
        dropped = np.zeros(len(out), bool)
        for old, new in self.steps:
            if not len(old):
                continue
            pos = np.minimum(np.searchsorted(old, out), len(old) - 1)
            hit = (old[pos] == out) & ~dropped
            moved = new[pos]
            dropped |= hit & (moved == NONE)
            out = np.where(hit & (moved != NONE), moved, out)
        return out, dropped

    def backward(self, addrs) -> tuple[np.ndarray, np.ndarray]:
        """``(addresses, moved)``: the address each row had before the compactions, and
        whether a compaction moved it at all."""
        out = np.asarray(addrs, np.uint64).copy()
        moved = np.zeros(len(out), bool)
        for old, new in reversed(self.steps):
            keep = new != NONE
            by_new = np.argsort(new[keep], kind="stable")
            new_sorted, old_of = new[keep][by_new], old[keep][by_new]
            if not len(new_sorted):
                continue
            pos = np.minimum(np.searchsorted(new_sorted, out), len(new_sorted) - 1)
            hit = new_sorted[pos] == out
            out = np.where(hit, old_of[pos], out)
            moved |= hit
        return out, moved
