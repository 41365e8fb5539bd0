"""The 2.3 page layout: ``PlanarLayout {1 structure, 2 values}`` (``protos/encodings_v2_3.proto``).

Every page of a 2.3 file (footer 2/3) carries a ``direct`` Any of type
``/lance.encodings23.PlanarLayout``; both planes must be present. What pylance 14.0.2 writes,
by case (checked by decoding against its input tables):

==========================  ===============  =====================================================
structure                   values           written for
==========================  ===============  =====================================================
dense (levels)              chunked          narrow values: the 2.2 mini-block page
dense                       zipped           wide values (long strings, vectors, blob v2
                                             descriptors): the 2.1/2.2 full-zip page
dense, all-valid layers     constant         a constant column without nulls (no buffers)
sparse (slot sets)          constant / none  constant or all-null values under nullable or nested
                                             structure (:mod:`.sparse`)
sparse                      chunked/zipped   list pages of more than 65,535 levels, e.g. 50,000
                                             rows of ``list<int64>`` (:func:`decode_sparse`)
==========================  ===============  =====================================================

Dense pages are byte-identical to 2.2 pages, so :func:`page_layout` re-expresses them as the
2.2 message (``lance.encodings21.PageLayout``) and the shared v2_1 decoders read them:

* chunked -> ``MiniBlockLayout``: compression, levels' rep/def compression and
  ``repetition_index_depth``, dictionary, counts; chunk words are u32 (``has_large_chunk``);
* zipped -> ``FullZipLayout``: the same fields under their 2.1 numbers;
* an empty dense layer list (14.0.2 writes it for top-level leaves of some files, e.g. every
  column of a ``write_dataset`` file and blob v2 descriptor pages) stands for one item layer:
  nullable when the page has definition levels (def bits 1 / a def compression), else all-valid;
* constant -> ``ConstantLayout`` with ``inline_value``; none -> an all-null ``ConstantLayout``.

Three pages of one 14.0.2 file, as ``protoc --decode_raw`` prints the Any's value
(field numbers of ``protos/encodings_v2_3.proto``)::

    int64, no nulls     1 {1 {1: "\\001"}}  2 {1 {1 {5 {1: 64}}  2: ""  5: 1  6: 10000}}
                        dense [ALL_VALID_ITEM] x chunked(inline bit-packing 64, empty levels,
                        1 buffer per chunk, 10000 level items); buffers: chunk words, chunks
    int64 constant 7    1 {1 {1: "\\001"}}  2 {3 {1: "\\007\\0\\0\\0\\0\\0\\0\\0"}}     no buffers
    int32, all null     1 {2 {1 {1 {1: 2  2 {3: ""}}}}}  2 {4: ""}
                        sparse [item: valid positions = {} (empty Constant)] x none; no buffers

A sparse page comes back as a :class:`SparsePage`, which answers ``WhichOneof("layout")`` with
``"sparse_layout"`` so that callers branching on the 2.2 layout kinds treat it as a whole-page
layout.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from reference_impl.errors import FormatError
from reference_impl.proto import encodings_v2_1_pb2 as pb21
from reference_impl.proto import encodings_v2_3_pb2 as pb23

from ...page import unpack_any
from ..v2_1 import constant, full_zip, mini_block, repdef
from . import sparse

PLANAR_URL = "/lance.encodings23.PlanarLayout"
SPARSE = "sparse_layout"
RULE = "FILE-015"


@dataclass
class SparsePage:
    """A page with a sparse structural plane and its value plane."""

    structure: pb23.SparseStructure
    values: pb23.ValuePlane

    def WhichOneof(self, name: str):  # noqa: N802  (mirrors the protobuf API)
        return SPARSE if name == "layout" else None


def parse(page, *, path: str) -> pb23.PlanarLayout:
    first = page.buffer_offsets[0] if len(page.buffer_offsets) else None
    planar = unpack_any(page.encoding, PLANAR_URL, pb23.PlanarLayout(), path=path, offset=first)
    if not planar.HasField("structure") or planar.structure.WhichOneof("codec") is None:
        raise FormatError("planar page without a structural plane", rule=RULE, path=path, offset=first)
    if not planar.HasField("values") or planar.values.WhichOneof("codec") is None:
        raise FormatError("planar page without a value plane", rule=RULE, path=path, offset=first)
    return planar


def page_layout(page, *, path: str):
    """The page as a 2.2 ``PageLayout`` (dense structure) or a :class:`SparsePage`."""
    planar = parse(page, path=path)
    values = planar.values
    vkind = values.WhichOneof("codec")
    if planar.structure.WhichOneof("codec") == "sparse":
        return SparsePage(planar.structure.sparse, values)
    layers = list(planar.structure.dense.layers)
    out = pb21.PageLayout()
    if vkind == "chunked":
        _chunked(out.mini_block_layout, values.chunked, layers)
    elif vkind == "zipped":
        _zipped(out.full_zip_layout, values.zipped, layers, path)
    else:
        if any(k != repdef.ALL_VALID_ITEM for k in layers):
            raise FormatError(f"dense {vkind} page with layers {layers}: nullable or nested constant pages "
                              "need a sparse structure", rule="ENC-044", path=path)
        c = out.constant_layout
        c.layers.extend(layers or [repdef.ALL_VALID_ITEM])
        if vkind == "constant":
            c.inline_value = values.constant.value
    return out


def _chunked(mb, ch, layers) -> None:
    if ch.HasField("compression"):
        mb.value_compression.CopyFrom(ch.compression)
    lv = ch.levels
    if lv.HasField("rep_compression"):
        mb.rep_compression.CopyFrom(lv.rep_compression)
    if lv.HasField("def_compression"):
        mb.def_compression.CopyFrom(lv.def_compression)
    mb.repetition_index_depth = lv.repetition_index_depth
    if ch.HasField("dictionary"):
        mb.dictionary.CopyFrom(ch.dictionary)
    mb.num_dictionary_items = ch.num_dictionary_items
    mb.num_buffers = ch.num_buffers
    mb.num_items = ch.num_items
    if not layers:  # written for top-level leaves; levels tell which single layer is meant
        if lv.HasField("rep_compression"):
            raise FormatError("chunked page without layers has repetition levels", rule=repdef.RULE)
        layers = [repdef.NULLABLE_ITEM if lv.HasField("def_compression") else repdef.ALL_VALID_ITEM]
    mb.layers.extend(layers)
    mb.has_large_chunk = True  # 2.3 chunks use the 2.2 (u32) chunk grammar


def _zipped(fz, zp, layers, path) -> None:
    bits_rep, bits_def = int(zp.levels.bits_rep), int(zp.levels.bits_def)
    fz.bits_rep, fz.bits_def = bits_rep, bits_def
    detail = zp.WhichOneof("details")
    if detail == "bits_per_value":
        fz.bits_per_value = zp.bits_per_value
    elif detail == "bits_per_offset":
        fz.bits_per_offset = zp.bits_per_offset
    if zp.num_items >= 1 << 32 or zp.num_visible_items >= 1 << 32:
        raise FormatError("zipped page counts exceed 32 bits", rule="ENC-043", path=path)
    fz.num_items, fz.num_visible_items = zp.num_items, zp.num_visible_items
    if zp.HasField("compression"):
        fz.value_compression.CopyFrom(zp.compression)
    if not layers:
        if bits_rep or bits_def > 1:
            raise FormatError(f"zipped page without layers has levels (rep {bits_rep}, def {bits_def} bits)",
                              rule=repdef.RULE, path=path)
        layers = [repdef.NULLABLE_ITEM if bits_def else repdef.ALL_VALID_ITEM]
    fz.layers.extend(layers)


def constant_value(page: SparsePage, value_kind: str, value_bits: int):
    """The one-element value stream of a sparse page's constant plane (``None``: no values)."""
    if page.values.WhichOneof("codec") != "constant":
        return None
    return constant.inline_scalar(bytes(page.values.constant.value), value_kind, value_bits)


def decode_sparse(page: SparsePage, buffers: list, rows: int, value_kind: str, value_bits: int):
    """``(layers, values, per_slot)`` of a sparse page: the per-layer validity/offsets
    (:func:`.sparse.decode`), and either one value stream per leaf slot (``per_slot``, chunked
    values) or a one-element constant / ``None`` to spread over the leaf slots.

    Chunked values under a sparse structure (14.0.2 writes them for list pages whose dense
    form would need more than 65,535 levels) are 2.2 mini-blocks without levels: the page's buffers are
    the chunk metadata, the chunks and the dictionary if any, then the structure's sequence
    buffers; the chunks hold one value per leaf slot (the leaf domain's size, since the
    page's ``num_items`` is not written)."""
    vkind = page.values.WhichOneof("codec")
    if vkind == "zipped":
        return _sparse_zipped(page.structure, page.values.zipped, buffers, rows)
    if vkind != "chunked":
        layers = sparse.decode(page.structure, buffers, rows)
        return layers, constant_value(page, value_kind, value_bits), False
    ch = page.values.chunked
    lv = ch.levels
    if lv.HasField("rep_compression") or lv.HasField("def_compression") or lv.repetition_index_depth:
        raise FormatError("chunked values of a sparse page carry levels", rule=repdef.RULE)
    n_mb = 2 + ch.HasField("dictionary")
    if len(buffers) < n_mb:
        raise FormatError(f"sparse chunked page has {len(buffers)} buffers, needs {n_mb}", rule=mini_block.RULE)
    layers = sparse.decode(page.structure, buffers[n_mb:], rows)
    n_leaf = layers[-1].length
    mb = pb21.MiniBlockLayout()
    _chunked(mb, ch, [repdef.ALL_VALID_ITEM])
    mb.num_items = n_leaf
    _, _, values = mini_block.decode(mb, buffers[:n_mb], "2.3", n_leaf)
    if values is None:
        return layers, None, False
    if values.n != n_leaf:
        raise FormatError(f"chunks hold {values.n} values for {n_leaf} leaf slots", rule="ENC-046")
    return layers, values, True


def _sparse_zipped(structure, zp, buffers: list, rows: int):
    """Zipped values under a sparse structure (14.0.2: large pages of lists of wide values,
    e.g. ``list<fixed_size_list<float32, 64>>``): a full-zip page without levels holding one
    value per leaf slot; its buffers (zipped data, then the repetition index when values are
    variable) come before the structure's sequence buffers."""
    if zp.levels.bits_rep or zp.levels.bits_def:
        raise FormatError("zipped values of a sparse page carry levels", rule=repdef.RULE)
    n_fz = 1 + (zp.WhichOneof("details") == "bits_per_offset")
    if len(buffers) < n_fz:
        raise FormatError(f"sparse zipped page has {len(buffers)} buffers, needs {n_fz}", rule="ENC-043")
    layers = sparse.decode(structure, buffers[n_fz:], rows)
    n_leaf = layers[-1].length
    fz = pb21.FullZipLayout()
    _zipped(fz, zp, [repdef.ALL_VALID_ITEM], path=None)
    _, _, spans = full_zip.decode(fz, buffers[:n_fz], n_leaf, 1 << 30)
    if len(spans[0]) != n_leaf:
        raise FormatError(f"zipped data holds {len(spans[0])} values for {n_leaf} leaf slots", rule="ENC-046")
    return layers, full_zip.slot_values(fz, spans, np.ones(n_leaf, bool)), True
