"""2.3 pages: the 2.2 page's buffers under a ``PlanarLayout`` (``protos/encodings_v2_3.proto``).

A 2.3 page says how rows map to leaf slots (the structural plane) apart from how slots map to
bytes (the value plane). Its dense form carries the 2.2 page unchanged: the same buffers, the
same chunk grammar (u32 chunk words), with the 2.2 ``PageLayout`` fields regrouped
(FILE-ENCODINGS §7; the reader's :mod:`reference_impl.file.encodings.v2_3.planar` maps them
back). So this writer encodes a page as for 2.2 and re-expresses its layout:

* mini-block -> dense layers x ``chunked`` (compression, the levels' rep/def compression and
  repetition-index depth, dictionary, counts);
* full-zip -> dense layers x ``zipped`` (bits of rep and def, bits per value or per offset,
  item counts, compression);
* a constant page of all-valid layers -> dense layers x ``constant``.

What the dense form cannot say, the sparse one must: a dense ``constant`` or ``none`` page is
only allowed when every layer is all-valid (the reader refuses others, ENC-044). This writer
writes the sparse form for one case, a page whose leaf holds no value (all null, or an
empty struct): its layers' slot sets and lists (:func:`all_null_items`) and a ``none`` value
plane, as pylance 14.0.2 writes it. Nullable constants, and constants a 2.3 scalar cannot hold
(1 to 32 bytes, fixed width), are left to the other encodings
(:func:`..v2_1.column.encode_leaf_page` does not pick a constant for them at 2.3); blob
pages are refused with :class:`~reference_impl.errors.UnsupportedFeature`.
"""

from __future__ import annotations

import numpy as np

from reference_impl.errors import UnsupportedFeature
from reference_impl.proto import encodings_v2_1_pb2 as pb21
from reference_impl.proto import encodings_v2_3_pb2 as pb23

ALL_VALID_ITEM, NULLABLE_ITEM = pb21.REPDEF_ALL_VALID_ITEM, pb21.REPDEF_NULLABLE_ITEM
#: what a 2.3 constant scalar may hold (pylance 14.0.2 refuses other sizes on reading)
MAX_SCALAR_BYTES = 32
NULL_POSITIONS, VALID_POSITIONS = pb23.SPARSE_SET_NULL_POSITIONS, pb23.SPARSE_SET_VALID_POSITIONS


def planar_layout(layout: pb21.PageLayout) -> pb23.PlanarLayout:
    """The 2.3 message of a dense 2.2 page (its buffers stay as they are)."""
    out = pb23.PlanarLayout()
    kind = layout.WhichOneof("layout")
    if kind == "mini_block_layout":
        mb = layout.mini_block_layout
        out.structure.dense.layers.extend(mb.layers)
        ch = out.values.chunked
        if mb.HasField("value_compression"):
            ch.compression.CopyFrom(mb.value_compression)
        ch.levels.SetInParent()
        if mb.HasField("rep_compression"):
            ch.levels.rep_compression.CopyFrom(mb.rep_compression)
        if mb.HasField("def_compression"):
            ch.levels.def_compression.CopyFrom(mb.def_compression)
        ch.levels.repetition_index_depth = mb.repetition_index_depth
        if mb.HasField("dictionary"):
            ch.dictionary.CopyFrom(mb.dictionary)
        ch.num_dictionary_items = mb.num_dictionary_items
        ch.num_buffers = mb.num_buffers
        ch.num_items = mb.num_items
        if not mb.has_large_chunk and mb.num_items:
            raise UnsupportedFeature("2.3 pages use the u32 chunk words of 2.2: this page has u16 ones")
    elif kind == "full_zip_layout":
        fz = layout.full_zip_layout
        out.structure.dense.layers.extend(fz.layers)
        zp = out.values.zipped
        zp.levels.bits_rep, zp.levels.bits_def = fz.bits_rep, fz.bits_def
        detail = fz.WhichOneof("details")
        if detail == "bits_per_value":
            zp.bits_per_value = fz.bits_per_value
        elif detail == "bits_per_offset":
            zp.bits_per_offset = fz.bits_per_offset
        zp.num_items, zp.num_visible_items = fz.num_items, fz.num_visible_items
        if fz.HasField("value_compression"):
            zp.compression.CopyFrom(fz.value_compression)
    elif kind == "constant_layout":
        c = layout.constant_layout
        if any(k != ALL_VALID_ITEM for k in c.layers):
            raise UnsupportedFeature(f"2.3: a constant page with layers {list(c.layers)} needs the "
                                     "sparse form, which this writer writes only for all-null items")
        out.structure.dense.layers.extend(c.layers)
        out.values.constant.value = c.inline_value
    else:
        raise UnsupportedFeature(f"2.3: {kind or 'an empty layout'} pages are not written")
    return out


def all_null_items(layers, rep, deff, rows: int) -> tuple[list[bytes], pb23.PlanarLayout]:
    """The sparse page of ``rows`` rows whose leaf has no value (null wherever it exists, or
    an empty struct, whose rows hold no bytes), from the page's levels (``layers`` innermost
    first, ``rep``/``deff`` per level slot or ``None``).

    The levels are unravelled as a reader unravels them (:func:`..v2_1.repdef.unravel`) into
    each layer's elements, validity and offsets, which the sparse layers state directly,
    outermost first: an item layer as the slot set of its null elements, a list layer as its
    non-empty lists' positions and child counts, its child slots and the slot set of its null
    lists; the leaf, null in every slot, as an empty set of valid slots (as pylance 14.0.2
    writes it). Each sequence that needs bytes is flat 64-bit words in the page's next
    buffer; an empty one is an empty ``Constant``. The value plane is ``none``."""
    from reference_impl.file.encodings.v2_1 import repdef as levels

    n_slots = len(deff) if deff is not None else (len(rep) if rep is not None else rows)
    unravelled, _ = levels.unravel([int(k) for k in layers], rep, deff, n_slots, rows)
    out = pb23.PlanarLayout()
    sparse = out.structure.sparse
    buffers: list[bytes] = []

    def sequence(node, values: np.ndarray) -> None:
        if len(values):
            node.flat.bits_per_value = 64
            buffers.append(np.asarray(values, "<u8").tobytes())
        else:
            node.constant.SetInParent()

    def slot_set(s, valid, domain: int, leaf: bool) -> None:
        if leaf and domain and (valid is not None and not valid.any()):
            s.kind, s.count = VALID_POSITIONS, 0  # null everywhere: no valid slot
            s.positions.constant.SetInParent()
            return
        null = np.zeros(0, np.int64) if valid is None else np.flatnonzero(~valid)
        s.kind, s.count = NULL_POSITIONS, len(null)
        sequence(s.positions, null)

    for i, lay in enumerate(unravelled):
        leaf = i == len(unravelled) - 1
        if not lay.is_list:
            slot_set(sparse.layers.add().item, lay.validity, lay.length, leaf)
            continue
        lst = sparse.layers.add().list
        sizes = np.diff(lay.offsets)
        non_empty = np.flatnonzero(sizes)
        lst.num_child_slots = int(lay.offsets[-1] - lay.offsets[0])
        lst.num_non_empty = len(non_empty)
        sequence(lst.non_empty_positions, non_empty)
        sequence(lst.counts, sizes[non_empty])
        slot_set(lst.validity, lay.validity, lay.length, False)
    out.values.none.SetInParent()
    return buffers, out
