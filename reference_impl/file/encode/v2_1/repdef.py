"""Repetition and definition levels ("rep/def", FILE-ENCODINGS §3.1) for one leaf column.

A leaf's page is a sequence of *level slots*. Each slot has a u16 definition level
(present when anything on the path can be null or empty) and a u16 repetition level
(present when a list is on the path).

* ``layers`` lists the path innermost first: the leaf item, then the enclosing struct
  (item) layers and list layers going outward. Layers describe the page's data:
  ``ALL_VALID_ITEM`` for a layer without nulls, ``NULLABLE_ITEM``; for lists
  ``ALL_VALID_LIST``, ``NULLABLE_LIST``, ``EMPTYABLE_LIST`` or ``NULL_AND_EMPTY_LIST``.
* Def numbering: 0 = valid at every layer; walking the layers innermost first with a
  counter from 1, nullable items, nullable lists and emptyable lists take one level
  each, a null-and-empty list takes two (null the lower, empty the higher), all-valid
  layers none. A slot gets the level of the *outermost* layer that is null or empty.
* Rep numbering: ``max_rep`` = number of list layers, innermost 1; a slot with rep r
  starts the lists of layers 1..r; ``rep == max_rep`` starts a top-level row. An empty
  or null list occupies one slot.
* A list layer below a null ancestor (a null struct above the list) is written as
  nullable even when none of its own lists is null, as pylance 14.0.2 does.
* Visibility: a slot owns a position in the value stream iff it is not below a null
  or empty list (nor below a null ancestor of a list); null items and null structs
  below the innermost list keep a placeholder value.

:func:`shred` computes all of this with numpy, one list layer at a time.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from ....proto import encodings_v2_1_pb2 as pb
from ..arrow_data import list_offsets, valid_mask

ITEM = "item"
LIST = "list"
FSL = "fsl"  # a fixed-size list of structs: ``(FSL, size)``, an item layer of ``size`` slots


def is_struct_fsl(t: pa.DataType) -> bool:
    """A fixed-size list of structs (written 2.2+): a layer of its struct's leaves, whose
    slots are its items (FILE-ENCODINGS §1.1; pages count items, as pylance 14.0.2 writes)."""
    return pa.types.is_fixed_size_list(t) and (pa.types.is_struct(t.value_type)
                                              or is_struct_fsl(t.value_type))


def is_empty_struct(t: pa.DataType) -> bool:
    """A struct without children: a leaf whose column holds levels only, every slot null at
    its own layer (a constant all-null page), as pylance 14.0.2 writes it."""
    return pa.types.is_struct(t) and t.num_fields == 0


@dataclass
class Shredded:
    """A leaf's levels and visible values for a run of top-level rows."""

    rep: np.ndarray | None  # uint16 per slot, or None
    deff: np.ndarray | None  # uint16 per slot, or None
    layers: list[int]  # RepDefLayer values, innermost first
    values: pa.Array  # visible values, placeholders under null items
    visible: np.ndarray  # bool per slot
    num_rows: int
    max_rep: int
    max_visible_def: int

    @property
    def num_levels(self) -> int:
        return len(self.visible)


def leaf_paths(t: pa.DataType, path=()) -> list[tuple]:
    """Every leaf under ``t`` as a tuple of steps ``(ITEM, child_index | None)`` / ``(LIST,)``.

    Struct layers are item layers whose ``child_index`` selects the child; the last step
    of every path is the leaf's own item layer (``child_index`` None).
    """
    if pa.types.is_struct(t) and t.num_fields:
        out = []
        for i in range(t.num_fields):
            out.extend(leaf_paths(t.field(i).type, path + ((ITEM, i),)))
        return out
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return leaf_paths(t.value_type, path + ((LIST,),))
    if is_struct_fsl(t):
        return leaf_paths(t.value_type, path + ((FSL, t.list_size),))
    return [path + ((ITEM, None),)]


def items_per_row(path: tuple) -> int:
    """Slots per top-level row of a leaf under fixed-size lists of structs (1 otherwise)."""
    n = 1
    for step in path:
        if step[0] == FSL:
            n *= step[1]
    return n


def shred(arr: pa.Array, path: tuple, fast: bool = True) -> Shredded:
    """Levels and visible values of the leaf reached by ``path`` in ``arr`` (top-level rows).

    Walks the path outermost first keeping, per level slot, its rep level, the step at
    which it became null or empty (``code``) and its index in the current array (-1 once
    it has no value). A list step expands every live slot into one slot per item; a
    null or empty list, or a slot already null above, stays one slot without a value.
    The codes become def levels once all steps are known (layers are data-dependent).
    ``fast`` takes the shortcuts beside this walk, which give the same Shredded:
    :func:`_shred_items` for a path without lists, :func:`_expand` instead of
    :func:`_expand_readable` for a list step, :func:`_expand_last` for the last list when
    nothing below it has nulls.
    """
    if fast and all(step[0] == ITEM for step in path):
        return _shred_items(arr, path)
    n = len(arr) * items_per_row(path)  # rows: slots of the outermost layer
    max_rep = sum(1 for s in path if s[0] == LIST)
    m = len(arr)
    rep = np.full(m, max_rep, np.uint16) if max_rep else None
    code = np.zeros(m, np.int32)  # 0 valid, 2p+1 null at step p, 2p+2 empty at step p
    idx = np.arange(m, dtype=np.int64)
    cur = arr
    depth = max_rep
    seen_null = [False] * len(path)
    seen_empty = [False] * len(path)
    done = None  # (visible, values) once the fast path has finished the walk early
    for p, step in enumerate(path):
        live = code == 0
        if step[0] == FSL:
            rep, code, idx, cur = _expand_fsl(cur, step[1], rep, code, idx, live, p, depth,
                                              seen_null)
            continue
        if step[0] == ITEM:
            valid = valid_mask(cur)
            if step[1] is None and is_empty_struct(cur.type):
                valid = np.zeros(len(cur), bool)  # every slot null at its own layer
            if valid is not None and len(idx):
                safe = np.where(idx >= 0, idx, 0)
                nul = live & ~valid[safe] & (idx >= 0)
                if nul.any():
                    seen_null[p] = True
                    code[nul] = 2 * p + 1
            if step[1] is not None:
                cur = cur.field(step[1])
            continue
        # list layer
        safe = np.where(idx >= 0, idx, 0)
        offs = list_offsets(cur)
        lens = offs[1:] - offs[:-1]
        valid = valid_mask(cur)
        slot_len = lens[safe] if len(lens) else np.zeros(len(idx), np.int64)
        nul = live & (idx >= 0)
        if valid is not None and len(idx):
            nul &= ~valid[safe]
        else:
            nul &= False
        empty = live & (idx >= 0) & ~nul & (slot_len == 0)
        if nul.any() or not live.all():
            # A list under a null ancestor is written as nullable even when none of its
            # own slots is null: pylance 14.0.2 does so (Arrow pushes struct nulls into
            # the child list) and its reader miscounts visible items otherwise.
            seen_null[p] = True
            code[nul] = 2 * p + 1
        if empty.any():
            seen_empty[p] = True
            code[empty] = 2 * p + 2
        expand = live & (idx >= 0) & ~nul & ~empty
        counts = np.where(expand, slot_len, 1)
        leaf = _valid_tail(cur.values, path[p + 1 :]) if fast and len(idx) else None
        if leaf is not None:
            # nothing below this list can be null: the walk ends here (see _expand_last)
            rep, code, done = _expand_last(expand, counts, rep, code, offs, safe, depth, leaf)
            cur = leaf
            break
        rep, code, idx = (
            _expand(expand, counts, rep, code, offs, safe, depth)
            if fast
            else _expand_readable(expand, counts, rep, code, offs, safe, depth)
        )
        depth -= 1
        cur = cur.values

    layers, table, level, max_visible = _layers(path, seen_null, seen_empty)
    deff = table[code] if level > 1 else None
    if done is not None:
        visible, values = done
        return Shredded(rep, deff, layers, values, visible, n, max_rep, max_visible)
    visible = idx >= 0
    take = idx[visible]
    if len(take) == len(cur) and np.array_equal(take, np.arange(len(cur))):
        values = cur  # every leaf slot is visible, in order: no copy
    else:
        values = cur.take(pa.array(take, pa.int64()))
    return Shredded(rep, deff, layers, values, visible, n, max_rep, max_visible)


def _shred_items(arr: pa.Array, path: tuple) -> Shredded:
    """:func:`shred` for a path without lists (a top-level leaf or struct fields): one slot
    per row, every slot visible and holding its own row's value, so there is no item index
    to carry; only the codes of the nulls (the outermost null wins) are kept, and only once
    some step has a null."""
    n = len(arr)
    code = None  # all zero until a null is seen
    cur = arr
    seen_null = [False] * len(path)
    for p, step in enumerate(path):
        valid = valid_mask(cur)
        if step[1] is None and is_empty_struct(cur.type):
            valid = np.zeros(n, bool)  # every slot null at its own layer
        if valid is not None and n:
            nul = ~valid if code is None else ~valid & (code == 0)
            if nul.any():
                seen_null[p] = True
                if code is None:
                    code = np.zeros(n, np.int32)
                code[nul] = 2 * p + 1
        if step[1] is not None:
            cur = cur.field(step[1])
    layers, table, level, max_visible = _layers(path, seen_null, [False] * len(path))
    deff = table[code] if level > 1 else None
    values = cur if len(cur) == n else cur.take(pa.array(np.arange(n), pa.int64()))
    return Shredded(None, deff, layers, values, np.ones(n, bool), n, 0, max_visible)


def _layers(path: tuple, seen_null: list[bool], seen_empty: list[bool]):
    """The layers (innermost first), the code -> def level table, the next free def level
    and the def levels of visible nulls, from the steps at which nulls / empties were seen."""
    layers: list[int] = []
    table = np.zeros(2 * len(path) + 3, np.uint16)
    level = 1
    max_visible = 0
    last_list = max((p for p, s in enumerate(path) if s[0] == LIST), default=-1)
    for p in reversed(range(len(path))):
        if path[p][0] in (ITEM, FSL):
            if seen_null[p]:
                layers.append(pb.REPDEF_NULLABLE_ITEM)
                table[2 * p + 1] = level
                level += 1
                if p > last_list:
                    max_visible += 1
            else:
                layers.append(pb.REPDEF_ALL_VALID_ITEM)
        else:
            if seen_null[p] and seen_empty[p]:
                layers.append(pb.REPDEF_NULL_AND_EMPTY_LIST)
                table[2 * p + 1] = level
                table[2 * p + 2] = level + 1
                level += 2
            elif seen_null[p]:
                layers.append(pb.REPDEF_NULLABLE_LIST)
                table[2 * p + 1] = level
                level += 1
            elif seen_empty[p]:
                layers.append(pb.REPDEF_EMPTYABLE_LIST)
                table[2 * p + 2] = level
                level += 1
            else:
                layers.append(pb.REPDEF_ALL_VALID_LIST)
    return layers, table, level, max_visible


def _expand_fsl(cur, size, rep, code, idx, live, p, depth, seen_null):
    """A fixed-size list of structs step: its nulls as an item layer's (code ``2p+1``), then
    every slot holding a value becomes ``size`` slots, one per item (placeholders under a
    null list row too, as item slots are); the first keeps the rep, the others start only
    the lists below (``depth``). Returns ``(rep, code, idx, items)``."""
    valid = valid_mask(cur)
    has = idx >= 0
    if valid is not None and len(idx):
        nul = live & has & ~valid[np.where(has, idx, 0)]
        if nul.any():
            seen_null[p] = True
            code = code.copy()
            code[nul] = 2 * p + 1
    counts = np.where(has, size, 1).astype(np.int64)
    ends = np.cumsum(counts)
    firsts = ends - counts
    total = int(ends[-1]) if len(ends) else 0
    owner = np.repeat(np.arange(len(counts)), counts)
    within = np.arange(total, dtype=np.int64) - firsts[owner]
    base = (idx + cur.offset) * size
    new_idx = np.where(has[owner], base[owner] + within, -1)
    new_rep = None
    if rep is not None:
        new_rep = np.full(total, depth, np.uint16)
        new_rep[firsts] = rep
    return new_rep, code[owner], new_idx, cur.values


def _valid_tail(values: pa.Array, rest: tuple) -> pa.Array | None:
    """The leaf array below a list whose remaining ``rest`` steps are item (struct) steps
    without any null, or None (another list follows, or some array on the way has nulls)."""
    cur = values
    for step in rest:
        if step[0] != ITEM or cur.null_count:
            return None
        if step[1] is not None:
            cur = cur.field(step[1])
    return cur


def _expand_last(expand, counts, rep, code, offs, safe, depth, leaf):
    """The last list step of a path with nothing nullable below it: :func:`_expand`'s rep
    and code, but no per-slot item index. Only live slots expand (their code is 0), so the
    new codes are 0 but at the single slot a null or empty list keeps, and a slot is
    visible iff its list slot expanded. The visible values are the expanded lists' item
    ranges, in order: the leaf itself when they run back to back over all of it, a slice
    of it when they run back to back over part of it, else a ``take`` of those ranges.
    Returns ``(rep, code, (visible, values))``, as the readable walk ends."""
    counts = counts.astype(np.int64, copy=False)
    ends = np.cumsum(counts)
    firsts = ends - counts
    total = int(ends[-1])
    new_rep = np.full(total, depth - 1, np.uint16)
    new_rep[firsts] = rep
    stay = np.flatnonzero(~expand)  # null or empty lists, or slots null above: one slot
    new_code = np.zeros(total, code.dtype)
    new_code[firsts[stay]] = code[stay]
    visible = np.ones(total, bool)
    visible[firsts[stay]] = False
    starts = offs[:-1][safe][expand] if len(offs) > 1 else np.zeros(0, np.int64)
    sizes = counts[expand]
    if len(starts) == 0:  # no visible value (as the readable end: the leaf itself if empty)
        values = leaf if len(leaf) == 0 else leaf.take(pa.array([], pa.int64()))
        return new_rep, new_code, (visible, values)
    stops = starts + sizes
    if np.array_equal(starts[1:], stops[:-1]):  # back to back
        if starts[0] == 0 and stops[-1] == len(leaf):
            values = leaf  # every leaf slot is visible, in order: no copy
        else:
            values = leaf.slice(int(starts[0]), int(stops[-1] - starts[0]))
    else:
        seen = np.cumsum(sizes) - sizes
        take = np.arange(int(sizes.sum()), dtype=np.int64) + np.repeat(starts - seen, sizes)
        values = leaf.take(pa.array(take, pa.int64()))
    return new_rep, new_code, (visible, values)


def _expand_readable(expand, counts, rep, code, offs, safe, depth):
    """One list step, slot by item: every slot ``i`` becomes ``counts[i]`` slots (its items
    when ``expand[i]``, else itself). Returns the new ``(rep, code, idx)``: the first slot
    of a list keeps the old rep, the others get ``depth - 1``; codes are inherited; an
    expanded slot's index is its item's index in the list's values, other slots -1."""
    owner = np.repeat(np.arange(len(counts)), counts)
    firsts = np.cumsum(counts) - counts
    within = np.arange(len(owner), dtype=np.int64) - firsts[owner]
    exp_o = expand[owner]
    new_idx = np.where(exp_o, offs[:-1][safe][owner] + within if len(offs) > 1 else 0, -1)
    new_rep = np.where(within == 0, rep[owner], depth - 1).astype(np.uint16)
    return new_rep, code[owner], new_idx


def _expand(expand, counts, rep, code, offs, safe, depth):
    """:func:`_expand_readable` with fewer passes over the new slots: the new index is
    ``arange + base`` with the per-slot ``base`` repeated (``start - first`` for an
    expanded slot, ``-1 - first`` for one that stays: its single slot then reads -1), the
    rep a fill of ``depth - 1`` with the old reps scattered at each list's first slot."""
    counts = counts.astype(np.int64, copy=False)
    ends = np.cumsum(counts)
    firsts = ends - counts
    total = int(ends[-1]) if len(ends) else 0
    starts = offs[:-1][safe] if len(offs) > 1 else np.zeros(len(counts), np.int64)
    base = np.where(expand, starts - firsts, -1 - firsts)
    new_idx = np.arange(total, dtype=np.int64)
    new_idx += np.repeat(base, counts)
    new_rep = np.full(total, depth - 1, np.uint16)
    new_rep[firsts] = rep  # every slot has at least one new slot (counts >= 1)
    return new_rep, np.repeat(code, counts), new_idx


def row_starts(sh: Shredded) -> np.ndarray:
    """Level index at which each top-level row starts."""
    if sh.rep is None:
        return np.arange(sh.num_levels, dtype=np.int64)
    return np.flatnonzero(sh.rep == sh.max_rep).astype(np.int64)


def slice_levels(
    sh: Shredded, lo: int, hi: int, row_lo: int, row_hi: int, vis_before: int
) -> Shredded:
    """The slots ``[lo, hi)`` covering rows ``[row_lo, row_hi)`` as their own Shredded;
    ``vis_before`` = visible slots before ``lo`` (where this page's values start)."""
    vis = sh.visible[lo:hi]
    nvis = int(np.count_nonzero(vis))
    return Shredded(
        None if sh.rep is None else sh.rep[lo:hi],
        None if sh.deff is None else sh.deff[lo:hi],
        sh.layers,
        sh.values.slice(vis_before, nvis),
        vis,
        row_hi - row_lo,
        sh.max_rep,
        sh.max_visible_def,
    )
