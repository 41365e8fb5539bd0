"""The 2.3 sparse structural plane: nesting as slot sets instead of rep/def levels.

pylance 14.0.2 writes it for pages whose values are all null or one constant but whose
structure is not trivial (nullable items, lists, null structs); a dense constant page would
need level buffers. Facts (decoded from 14.0.2 output and checked against its input tables):

* ``layers`` run outermost first; the outermost domain has one slot per page row.
* An ``item`` layer (a struct or the leaf) keeps its parent's domain and gives its validity as
  a slot set: ``kind`` 1 lists the null slots, 2 the valid ones; ``count`` positions decoded
  from ``positions`` (:mod:`.sequence`), ascending. An empty set is an empty ``Constant``.
* A ``fixed_size_list`` layer (a fixed-size list of structs) maps each parent slot to
  ``dimension`` child slots, with the parent slots' validity as a slot set. Dense levels count
  such a list's slots per item, so :func:`decode` re-expresses it that way (:func:`per_slot`).
* A ``list`` layer maps its parent domain to a child domain of ``num_child_slots`` slots:
  ``num_non_empty`` ascending parent positions (``non_empty_positions``) hold lists of
  ``counts`` (>= 1) children each, in order; every other parent slot is an empty or, per the
  layer's ``validity`` set, a null list.
* The last layer is the leaf's item layer; its domain is the leaf value slots. A ``constant``
  value plane fills them with one value, a ``none`` plane leaves them null.
* Sequences that need bytes take the page's buffers in layer order (positions, then counts,
  then validity).

:func:`decode` returns the same per-layer validity/offsets the dense path computes from
levels (:class:`..v2_1.repdef.Layer`, outermost first), so the reader builds the Arrow
arrays the same way.
"""

from __future__ import annotations

import numpy as np

from reference_impl.errors import FormatError

from ..v2_1.repdef import Layer
from . import sequence

RULE = "ENC-040"
NULL_POSITIONS, VALID_POSITIONS = 1, 2
#: most slots a sparse layer may declare; larger domains are refused before allocating
MAX_SLOTS = 1 << 26


def _positions(node, count: int, domain: int, buffers, what: str) -> np.ndarray:
    if count > domain:
        raise FormatError(f"{what}: {count} positions in a domain of {domain} slots", rule=RULE)
    pos = sequence.decode(node, buffers, count).astype(np.int64)
    if count and (pos[0] < 0 or pos[-1] >= domain or (count > 1 and (np.diff(pos) <= 0).any())):
        raise FormatError(f"{what}: positions are not ascending inside 0..{domain}", rule=RULE)
    return pos


def validity(slot_set, domain: int, buffers, what: str):
    """Bool validity of ``domain`` slots from a slot set, or ``None`` when all are valid."""
    kind = int(slot_set.kind)
    if kind not in (NULL_POSITIONS, VALID_POSITIONS):
        raise FormatError(f"{what}: unknown slot set kind {kind}", rule=RULE)
    pos = _positions(slot_set.positions, int(slot_set.count), domain, buffers, what)
    if kind == NULL_POSITIONS:
        if not len(pos):
            return None
        valid = np.ones(domain, bool)
        valid[pos] = False
        return valid
    valid = np.zeros(domain, bool)
    valid[pos] = True
    return None if len(pos) == domain else valid


def _list_layer(lay, domain: int, buffers, what: str) -> tuple[Layer, int]:
    n_children = int(lay.num_child_slots)
    if n_children > MAX_SLOTS:
        raise FormatError(f"{what}: {n_children} child slots", rule=RULE)
    n = int(lay.num_non_empty)
    pos = _positions(lay.non_empty_positions, n, domain, buffers, what)
    counts = sequence.decode(lay.counts, buffers, n).astype(np.int64) if n else np.zeros(0, np.int64)
    if n and (counts.min() < 1 or counts.max() > n_children or int(counts.sum()) != n_children):
        raise FormatError(f"{what}: list counts sum to {int(counts.sum())}, the layer declares "
                          f"{n_children} child slots", rule=RULE)
    if not n and n_children:
        raise FormatError(f"{what}: {n_children} child slots but no non-empty list", rule=RULE)
    valid = validity(lay.validity, domain, buffers, what)
    if valid is not None and n and not valid[pos].all():
        raise FormatError(f"{what}: a null list has children", rule=RULE)
    lengths = np.zeros(domain, np.int64)
    lengths[pos] = counts
    offsets = np.zeros(domain + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return Layer(True, valid, offsets, domain), n_children


def decode(structure, buffers: list, rows: int) -> list[Layer]:
    """Per-layer validity and offsets of a sparse page of ``rows`` rows, outermost first."""
    if rows > MAX_SLOTS:
        raise FormatError(f"sparse page of {rows} rows", rule=RULE)
    bufs = sequence.Buffers(buffers)
    out, domain = [], rows
    for i, layer in enumerate(structure.layers):
        what = f"sparse layer {i}"
        kind = layer.WhichOneof("layer")
        if kind == "item":
            out.append(Layer(False, validity(layer.item, domain, bufs, what), None, domain))
        elif kind == "list":
            lay, domain = _list_layer(layer.list, domain, bufs, what)
            out.append(lay)
        elif kind == "fixed_size_list":
            dim = int(layer.fixed_size_list.dimension)
            if dim < 1 or domain * dim > MAX_SLOTS:
                raise FormatError(f"{what}: fixed-size list of dimension {dim}", rule=RULE)
            valid = validity(layer.fixed_size_list.validity, domain, bufs, what)
            out.append(Layer(False, valid, None, domain, dim))
            domain *= dim
        else:
            raise FormatError(f"{what} is {kind or 'empty'}, not an item or list layer", rule=RULE)
    if not out or out[-1].is_list:
        raise FormatError("sparse structure does not end with the leaf's item layer", rule=RULE)
    bufs.check_used()
    return per_slot(out)


def per_slot(layers: list[Layer]) -> list[Layer]:
    """Layers over domains re-expressed as the dense levels give them: a fixed-size list of
    structs and the item layers around it up to the next list count one entry per item
    below (their validity repeated), and a list above them counts those items."""
    out, factor = [], 1
    for lay in reversed(layers):
        if lay.is_list:
            offsets = lay.offsets * factor if factor > 1 else lay.offsets
            out.append(Layer(True, lay.validity, offsets, lay.length))
            factor = 1
            continue
        factor *= lay.dim
        if factor > 1:
            valid = None if lay.validity is None else np.repeat(lay.validity, factor)
            lay = Layer(False, valid, None, lay.length * factor)
        out.append(lay)
    out.reverse()
    return out
