"""Repetition/definition levels and ``layers`` -> Arrow validity and offsets (FILE-ENCODINGS §3.1).

``layers`` lists a leaf's nesting innermost first (entry 0 = the leaf item). Layer kinds:
1 ALL_VALID_ITEM, 2 ALL_VALID_LIST, 3 NULLABLE_ITEM, 4 NULLABLE_LIST, 5 EMPTYABLE_LIST,
6 NULL_AND_EMPTY_LIST.

*Def levels*: 0 = valid at every layer; walking the layers innermost first with a counter from
1, NULLABLE_ITEM / NULLABLE_LIST / EMPTYABLE_LIST take one level (null, null, empty),
NULL_AND_EMPTY_LIST two (null = lower, empty = higher), ALL_VALID_* none. A slot whose def is
layer *j*'s level is null/empty at *j*, valid outside *j* and absent inside *j*.

*Rep levels*: list layers are numbered 1 (innermost) .. ``max_rep`` (outermost); rep ``r`` at a
slot means the lists of layers 1..r begin there; ``rep == max_rep`` starts a top-level row.

*Visibility*: a slot owns a value iff ``def <= inner(first list layer)``, i.e. the nearest list
around the leaf is valid and non-empty there. More generally a layer *exists* at a slot (it is an
element of its parent, possibly null) iff the nearest list layer outside it is valid and
non-empty there; an element begins at a slot when the layer exists and ``rep`` reaches the
number of list layers at or inside it. All of this is computed with whole-array numpy masks.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from reference_impl.errors import FormatError

ALL_VALID_ITEM, ALL_VALID_LIST, NULLABLE_ITEM, NULLABLE_LIST, EMPTYABLE_LIST, NULL_AND_EMPTY_LIST = range(1, 7)
LIST_KINDS = {ALL_VALID_LIST, NULLABLE_LIST, EMPTYABLE_LIST, NULL_AND_EMPTY_LIST}
NUM_DEF = {ALL_VALID_ITEM: 0, ALL_VALID_LIST: 0, NULLABLE_ITEM: 1, NULLABLE_LIST: 1,
           EMPTYABLE_LIST: 1, NULL_AND_EMPTY_LIST: 2}
RULE = "ENC-040"


@dataclass
class Layer:
    """One unravelled layer (outermost first in :func:`unravel`'s result)."""

    is_list: bool
    validity: np.ndarray | None  # bool per element, None = all valid
    offsets: np.ndarray | None  # int64, len = elements + 1 (lists only)
    length: int
    dim: int = 1  # a 2.3 sparse fixed-size list layer: child slots per element


def max_rep(layers) -> int:
    return sum(1 for k in layers if k in LIST_KINDS)


def max_def(layers) -> int:
    return sum(NUM_DEF.get(k, 0) for k in layers)


def check_layers(layers) -> None:
    if not layers:
        raise FormatError("page has no rep/def layers", rule=RULE)
    for k in layers:
        if k not in NUM_DEF:
            raise FormatError(f"unknown rep/def layer kind {k}", rule=RULE)


def unravel(layers, rep, dfn, n_slots: int, rows: int):
    """Turn levels into per-layer validity/offsets.

    Returns ``(layers_outermost_first, visible_mask)``; ``visible_mask`` marks the slots that own
    a value. Raises FormatError when levels exceed their maxima or the row count disagrees.
    """
    check_layers(layers)
    layers = [int(k) for k in layers]
    mr, md = max_rep(layers), max_def(layers)
    if rep is not None and len(rep) != n_slots or dfn is not None and len(dfn) != n_slots:
        raise FormatError(f"rep/def levels ({None if rep is None else len(rep)}, "
                          f"{None if dfn is None else len(dfn)}) disagree with {n_slots} slots", rule=RULE)
    if rep is None and dfn is None and not mr:
        # no levels and no lists: every slot is one valid row of every layer (the general
        # walk below gives the same, with a few passes over the slots)
        if n_slots != rows:
            raise FormatError(f"levels describe {n_slots} rows, the page has {rows}", rule=RULE)
        return [Layer(False, None, None, n_slots) for _ in layers], np.ones(n_slots, bool)
    # levels are compared with small numbers only, so they keep their decoded integer type
    d = np.zeros(n_slots, np.uint16) if dfn is None else _levels(dfn)
    if n_slots and d.max(initial=0) > md:
        raise FormatError(f"def level {int(d.max())} exceeds the maximum {md}", rule=RULE)
    if rep is None:
        if mr:
            if n_slots:
                raise FormatError("list layers without repetition levels", rule=RULE)
        r = np.full(n_slots, mr, np.uint16)
    else:
        r = _levels(rep)
        if n_slots and r.max(initial=0) > mr:
            raise FormatError(f"rep level {int(r.max())} exceeds the maximum {mr}", rule=RULE)
    n = len(layers)
    inner = np.cumsum([0] + [NUM_DEF[k] for k in layers])  # inner[i] = levels strictly inside i
    list_no = []  # list number (1 = innermost) or 0 for items; lists inside count for items
    cnt = 0
    for k in layers:
        if k in LIST_KINDS:
            cnt += 1
            list_no.append(cnt)
        else:
            list_no.append(-cnt)  # negative: number of lists inside this item layer
    exists, starts = [], []
    for i in range(len(layers)):
        outer_lists = [j for j in range(i + 1, n) if layers[j] in LIST_KINDS]
        ex = d <= int(inner[outer_lists[0]]) if outer_lists else None  # None: every slot
        need = list_no[i] if list_no[i] > 0 else -list_no[i]
        if need:
            st = r >= need if ex is None else ex & (r >= need)
        else:
            st = np.ones(n_slots, bool) if ex is None else ex
        exists.append(ex)
        starts.append(st)
    if rep is not None and n_slots and mr and r[0] != mr:
        raise FormatError("the first level slot does not start a row", rule=RULE)
    # slots are picked by index (``take``), not by boolean mask: on levels that alternate at
    # random, numpy's masked indexing mispredicts its way to several times the cost
    idx = np.int32 if n_slots < (1 << 31) - 1 else np.int64
    out = []
    for i, k in enumerate(layers):
        if k not in LIST_KINDS:
            # an item layer: valid where def does not reach its own levels; elements are only
            # picked out when some of them are null
            st = starts[i]
            length = int(np.count_nonzero(st))
            null = d > int(inner[i])
            null &= st
            valid = None
            if null.any():
                valid = ~null.take(np.flatnonzero(st))
            out.append(Layer(False, valid, None, length))
            continue
        at = np.flatnonzero(starts[i])  # the slots where list layer i's elements begin
        ds = d.take(at)
        length = len(at)
        valid = ds <= int(inner[i])
        if k == EMPTYABLE_LIST:
            valid |= ds == int(inner[i]) + 1
        elif k == NULL_AND_EMPTY_LIST:
            valid |= ds == int(inner[i]) + 2
        cs = starts[i - 1] if i > 0 else None
        if cs is None:
            raise FormatError("a list layer cannot be the leaf", rule=RULE)
        # offsets: the child elements begun before each list's first slot, then all of them
        before = np.cumsum(cs, dtype=idx)  # inclusive: child elements begun up to each slot
        offsets = np.empty(length + 1, np.int64)
        offsets[:-1] = before.take(at) - cs.take(at)
        offsets[-1] = before[-1] if n_slots else 0
        out.append(Layer(True, None if valid.all() else valid, offsets, length))
    out.reverse()
    if out[0].length != rows:
        raise FormatError(f"levels describe {out[0].length} rows, the page has {rows}", rule=RULE)
    return out, np.ones(n_slots, bool) if exists[0] is None else exists[0]


def rows_and_visible(layers, rep, dfn, n_slots: int) -> tuple[int, int, bool]:
    """``(rows, visible slots, starts a row)`` of ``n_slots`` levels, as :func:`unravel`
    counts them (its outermost layer's length and its visible mask), without unravelling:
    what a page decoded together with others must show to read as it reads alone."""
    layers = [int(k) for k in layers]
    mr = max_rep(layers)
    if rep is None and dfn is None and not mr:
        return n_slots, n_slots, True
    d = np.zeros(n_slots, np.uint16) if dfn is None else _levels(dfn)
    first_list = next((j for j, k in enumerate(layers) if k in LIST_KINDS), None)
    if first_list is None:
        visible = n_slots
    else:
        inner = int(np.cumsum([0] + [NUM_DEF[k] for k in layers])[first_list])
        visible = int(np.count_nonzero(d <= inner))
    if not mr:
        return n_slots, visible, True
    if rep is None:  # list layers without repetition levels: unravel refuses any slot
        return 0, visible, not n_slots
    r = _levels(rep)
    rows = int(np.count_nonzero(r >= mr))
    return rows, visible, not n_slots or int(r[0]) == mr


def _levels(levels: np.ndarray) -> np.ndarray:
    """Levels as an integer array: the decoders' ``uint16`` as it is, anything else cast."""
    return levels if levels.dtype == np.uint16 else levels.astype(np.int64)
