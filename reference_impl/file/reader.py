"""``LanceFileReader``: reading Lance v2.x data files (spec 003, FILE-ENCODINGS).

Usage::

    r = LanceFileReader(store, "data/abc.lance")
    r.version        # "0.1" (legacy), "2.0", "2.1", "2.2" or "2.3"
    r.num_rows       # FileDescriptor.length
    r.schema         # pyarrow schema from FileDescriptor.schema (with lance:field_id metadata)
    r.fields         # the lance.file.Field list
    r.read_all()     # pa.Table
    r.read_columns(["a", "b"])   # or field ids
    r.read_range(start, stop)
    r.take([3, 17, 99])
    r.reads          # ranged store reads issued so far (footer/metadata included)

**Field -> column mapping** (FILE-ENCODINGS §1.1). Columns follow the schema's pre-order walk.
In 2.1+ only *leaves* own a column: primitives, strings/binary, fixed-size lists, packed
structs and blobs; structs, lists and maps have no column, their validity and offsets come
from the leaves' rep/def levels. In 2.0 structs (header column) and lists (offsets column) own
columns too, so the number of columns a field takes is decided by the 2.0 decoder.

**Decoder registry.** Version families are dispatched through :func:`register_decoder`.
A decoder has the signature::

    decode_column(container, column_index, field, page_range) -> (pa.Array, next_column_index)

* ``container`` -- the :class:`~reference_impl.file.container.FileContainer` (``.columns`` are
  the parsed ``ColumnMetadata`` messages, ``.read_buffer(pos, size)`` reads bytes with bounds
  checks and read counting, ``.version_name``, ``.num_rows``, ``.path``);
* ``column_index`` -- index of the first column of ``field`` in ``container.columns``;
* ``field`` -- the top-level ``pa.Field`` to decode (from :attr:`LanceFileReader.schema`);
* ``page_range`` -- ``None`` for all rows, or ``(start, stop)`` top-level rows; a decoder may
  return more rows than asked as long as the result starts at the first row of the first page
  it decoded, and then returns ``(array, next_column_index, first_row)``; returning exactly
  ``stop-start`` rows with a 2-tuple is also fine;
* returns the decoded array and the index of the column after the field's last one.

Both families are registered here: ``"2.1"`` (2.1/2.2) with this module's decoder and
``"2.0"`` with :func:`reference_impl.file.encodings.v2_0.column.decode_column_2_0` (the 2.0
package never imports this module).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from reference_impl.errors import FormatError, UnsupportedFeature

from . import arrow_types, parallel
from .container import FileContainer, read_container
from .encodings.v2_0.column import decode_column_2_0
from .encodings.v2_1 import blob as blob_layout
from .encodings.v2_1 import constant as constant_layout
from .encodings.v2_1 import full_zip, mini_block, repdef
from .encodings.v2_1.values import Fixed, Fsl, Var, concat
from .encodings.v2_3 import planar
from .page import column_encoding, page_layout, read_page_buffers
from .random_access import chunk_runs, load_page_index, read_run

DECODERS: dict[str, Callable] = {}
RULE_SCHEMA = "FILE-009"
RULE_PAGES = "FILE-010"
RULE_FIELD_IDS = "DATAFILE-008"  # DataFile.fields against the file's own field ids


def register_decoder(version_family: str, fn: Callable) -> None:
    """Register the column decoder of a version family ("2.0" or "2.1")."""
    DECODERS[version_family] = fn


def family(version: str) -> str:
    return "2.0" if version == "2.0" else "2.1"


# --------------------------------------------------------------------------- 2.1/2.2 decoding

@dataclass
class Node:
    """A decoded (partial) field: ``kind`` is "leaf", "struct" or "list"."""

    kind: str
    length: int
    validity: np.ndarray | None = None
    offsets: np.ndarray | None = None
    children: dict = field(default_factory=dict)  # struct: name -> Node; list: "" -> Node
    values: object = None  # leaf value stream
    weak: bool = False  # a struct's validity read from an empty struct's column (see _chain)


_items_per_row = arrow_types.items_per_row


def _leaf_paths(f: pa.Field, container: FileContainer | None = None):
    """:func:`arrow_types.leaf_paths` of ``f`` as ``container`` maps fields to columns
    (structs without children own a column unless the reader found the file otherwise)."""
    return arrow_types.leaf_paths(
        f, empty_struct_columns=getattr(container, "empty_struct_columns", True))


def _chain(path, layers, values, leaf_valid, version: str = "2.2") -> Node:
    """Build the single-leaf node chain along ``path`` from unravelled layers.

    The column of a struct without children (it owns one, FILE-ENCODINGS §1.1) holds levels
    that pylance 14.0.2 does not read as validity: such a struct reads back valid whatever
    its levels say, so does a fixed-size list of them (2.3), and so do the structs around it
    when their first child is the empty struct -- in 2.3 unless another child of theirs has
    a column of its own (:func:`_merge`). Observed by the type census
    (``docs/census-types.md``).
    """
    empty = arrow_types.is_empty_struct(path[-1].type)
    node = Node("leaf", layers[-1].length, None if empty else leaf_valid, values=values)
    per = 1  # slots of this column per value of the layer (fixed-size lists of structs below)
    for i in range(len(path) - 2, -1, -1):
        layer = layers[i]
        t = path[i].type
        if layer.is_list:
            offsets = layer.offsets
            if per > 1:  # a list of fixed-size lists of structs: offsets count their items
                if np.any(offsets % per):
                    raise FormatError(f"list offsets split a fixed-size list of {per} items",
                                      rule="ENC-040")
                offsets = offsets // per
            node = Node("list", layer.length, layer.validity, offsets, {"": node})
            per = 1
            continue
        if arrow_types.is_struct_fsl(t):
            per *= t.list_size
        length, validity = layer.length, layer.validity
        if per > 1:  # one level per item: every item of a value repeats the value's level
            if length % per:
                raise FormatError(f"{length} slots do not fill fixed-size lists of {per} items",
                                  rule="ENC-040")
            length //= per
            validity = None if validity is None else validity[::per]
        if arrow_types.is_struct_fsl(t):
            node = Node("fsl", length, None if empty else validity, children={"": node})
        else:
            node = Node("struct", length, None if empty else validity,
                        children={path[i + 1].name: node}, weak=empty and version == "2.3")
    return node


def _layout(container: FileContainer, page):
    """A page's layout: 2.2's ``PageLayout``; 2.3 planar pages re-expressed by ``encodings.v2_3``."""
    if container.version_name == "2.3":
        return planar.page_layout(page, path=container.path)
    return page_layout(page, path=container.path)


def _decode_page_2_1(container: FileContainer, page, path, field_: pa.Field, *, layout=None,
                     buffers=None, rows=None) -> Node:
    """Decode one page of one leaf column into a node chain; an error the page's decoders
    raise names the file and, when it names no offset, the page's first buffer.

    ``layout``/``buffers``/``rows`` override the page's own (random access decodes a run of
    mini-block chunks as a small page, see :mod:`.random_access`).
    """
    try:
        return _decode_page_nodes(container, page, path, field_, layout, buffers, rows)
    except FormatError as exc:
        first = int(page.buffer_offsets[0]) if len(page.buffer_offsets) else None
        raise naming(exc, container.path, first) from None


def _decode_page_nodes(container: FileContainer, page, path, field_: pa.Field, layout, buffers,
                       rows) -> Node:
    if layout is None:
        layout = _layout(container, page)
    if buffers is None:
        buffers = read_page_buffers(container, page)
    if rows is None:
        rows = int(page.length)
    leaf = path[-1]
    kind = layout.WhichOneof("layout")
    version = container.version_name
    shape, bits = arrow_types.value_shape(leaf)
    if shape == "null" and _has_values(layout, kind):
        raise FormatError(f"null-typed field {leaf.name!r} stored in a {kind} with values; only all-null "
                          "constant pages fit it", rule=arrow_types.RULE, path=container.path)
    if kind == "mini_block_layout":
        lay = layout.mini_block_layout
        layers = list(lay.layers)
        rep, dfn, values = mini_block.decode(lay, buffers, version, rows)
        n_slots = len(rep) if rep is not None else (len(dfn) if dfn is not None else rows)
        spans = None
    elif kind == "full_zip_layout":
        lay = layout.full_zip_layout
        layers = list(lay.layers)
        repdef.check_layers(layers)
        rep, dfn, spans = full_zip.decode(lay, buffers, rows, _max_visible(layers))
        n_slots = len(spans[0])
        values = None
    elif kind == "constant_layout":
        lay = layout.constant_layout
        layers = list(lay.layers)
        rep, dfn, value = constant_layout.decode(lay, buffers, version, rows, "var" if shape == "var" else "fixed", bits)
        if shape == "null" and value is not None:
            raise FormatError(f"null-typed field {leaf.name!r} has a constant value", rule=arrow_types.RULE,
                              path=container.path)
        n_slots = len(rep) if rep is not None else (len(dfn) if dfn is not None else rows)
        if value is None and dfn is None:
            # simple all-null page: every slot is null at the innermost nullable layer
            if repdef.max_def(layers) < 1:
                raise FormatError("all-null constant page without a nullable layer", rule="ENC-044",
                                  path=container.path)
            dfn = np.ones(n_slots, np.uint16)
        values = value
        spans = "constant"
    elif kind == planar.SPARSE:  # 2.3: validity/offsets from slot sets; chunked, constant or no values
        # the outermost domain is the page's rows: its items under fixed-size lists of structs
        per = _items_per_row(path)
        if rows % per:
            raise FormatError(f"page of {rows} items splits fixed-size lists of {per}",
                              rule="ENC-040", path=container.path)
        layers_out, values, per_slot = planar.decode_sparse(layout, buffers, rows // per,
                                                            "var" if shape == "var" else "fixed", bits)
        n_vis = layers_out[-1].length
        if not per_slot:  # one constant value, or none
            values = _placeholder(shape, bits, n_vis) if values is None else values.take(np.zeros(n_vis, np.int64))
        layers_out = _outer_struct_layers(path, layers_out)
        if len(layers_out) != len(path):
            raise FormatError(f"page has {len(layers_out)} layers, field path {len(path)}",
                              rule="ENC-040", path=container.path)
        return _chain(path, layers_out, values, layers_out[-1].validity, container.version_name)
    elif kind == "blob_layout":
        if len(path) != 1:
            raise UnsupportedFeature("nested blob columns are not supported")
        values, valid = blob_layout.decode(container, layout.blob_layout, buffers, rows)
        return Node("leaf", rows, valid, values=values)
    else:
        raise UnsupportedFeature(f"page layout {kind!r} is not supported")
    return _levels_to_node(container, path, lay, layers, rep, dfn, values, spans, n_slots, rows, shape, bits)


def _levels_to_node(container: FileContainer, path, lay, layers, rep, dfn, values, spans, n_slots: int,
                    rows: int, shape, bits) -> Node:
    """The node chain of decoded levels and values: unravel the levels, check the values
    match the visible slots, and hang the values on the innermost layer."""
    layers, dfn = _packed_struct_layers(path, layers, dfn)
    layers_out, visible = repdef.unravel(layers, rep, dfn, n_slots, rows)
    n_vis = int(np.count_nonzero(visible))
    if spans is None:
        if values is None:
            values = _empty_values(shape, bits)
        if values.n != n_vis:
            raise FormatError(f"page decodes {values.n} values for {n_vis} visible slots",
                              rule="ENC-046", path=container.path)
    elif isinstance(spans, str):
        if values is None:
            values = _placeholder(shape, bits, n_vis)
        else:
            values = values.take(np.zeros(n_vis, np.int64))
    elif lay.value_compression.WhichOneof("compression") == "constant" and not spans[2] \
            and spans[1] is None:
        # values of no bytes (bits_per_value 0, a constant{} node): placeholders under
        # nulls, as pylance 1.0.4 writes an all-null fixed-size list page, or items of the
        # null type (its fixed_size_list<null> pages)
        t, dims = path[-1].type, []
        while pa.types.is_fixed_size_list(t):
            dims.append(t.list_size)
            t = t.value_type
        if pa.types.is_null(arrow_types.storage(t)) and dims:
            size = int(np.prod(dims))
            values = Fsl(size, Fixed(np.zeros(n_vis * size, bool), 1), dims=dims)
        elif dims and dfn is not None:
            # a fixed-size list whose every element is null, under a layer of nulls: its
            # values are stored as no bytes at all. Rust lance 6.0.0 (DuckDB's Lance
            # extension 1.5.5) writes fixed_size_list<int8>[1] rows of [null] and nulls so,
            # and fixed_size_list<fixed_size_list<int8>[k]>[1] rows of [null] (a null inner
            # list) and nulls; pylance 14.0.2 and DuckDB read each valid row as a list of
            # null elements (null items, or null inner lists)
            values = Fsl(dims[0], Fixed(np.zeros(n_vis * dims[0], bool), 1),
                         [np.zeros(n_vis * dims[0], bool)], dims[:1], [0], b"")
        else:
            if np.count_nonzero(dfn[visible] == 0 if dfn is not None else visible):
                raise FormatError("a full-zip page of values without bytes has valid values",
                                  rule="ENC-043", path=container.path)
            values = _placeholder(shape, bits, n_vis)
    else:
        values = full_zip.slot_values(lay, spans, visible)
    layers_out = _outer_struct_layers(path, layers_out)
    if len(layers_out) != len(path):
        raise FormatError(f"page has {len(layers_out)} layers, field path {len(path)}",
                          rule="ENC-040", path=container.path)
    return _chain(path, layers_out, values, layers_out[-1].validity, container.version_name)


def _outer_struct_layers(path, layers_out: list) -> list:
    """The unravelled layers of an empty struct's column, one per field of its path.

    The column of a struct without children (FILE-ENCODINGS §1.1: it owns one) nested in
    structs is written by pylance 14.0.2 (2.1 and 2.2) with one layer, the empty struct's
    own, and none for the structs around it (``struct<a: struct<>>``: a constant page of one
    ``NULLABLE_ITEM`` layer). pylance refuses to write an empty struct under a null or in a
    list, and reads the structs around it as valid. So when an empty struct's column has
    fewer layers than its path and every missing field is a struct, the missing outer
    layers are all valid, one slot per slot of the layer below them. Anything else is left
    to the caller's layer count check (ENC-040)."""
    missing = len(path) - len(layers_out)
    if missing <= 0 or not layers_out or not arrow_types.is_empty_struct(path[-1].type):
        return layers_out
    if not all(pa.types.is_struct(f.type) for f in path[:missing]):
        return layers_out
    n = layers_out[0].length
    return [repdef.Layer(False, None, None, n) for _ in range(missing)] + list(layers_out)


def _packed_struct_layers(path, layers, dfn) -> tuple:
    """The layers (and definition levels) of a packed struct's page as its path reads them.

    A packed struct (``lance-encoding:packed``, a blob v2 column's descriptors too) is one
    leaf, and 14.0.2 gives its page the path's layers. Some writers add a layer for the
    struct right outside its item layer: pylance 8.0.1 (compacting a 14.0.2 blob v2
    column) two ``ALL_VALID_ITEM`` layers; lancedb 0.30.2 and 0.34.0 an ``ALL_VALID_ITEM``
    item inside a ``NULLABLE_ITEM`` struct layer (a blob v2 column with a null). The
    releases read the leaf from its item layer and the path's layers, not from that struct
    layer: a row its levels call null there reads as a valid struct of the values stored
    for it (zeros; lancedb 0.30.2 and pylance 14.0.2 read such a blob as a descriptor of
    zeros). So the surplus layer is dropped, its null levels read as valid and the levels
    of the layers outside it move down by its count. Any other surplus is left for the
    caller's layer count check (ENC-040)."""
    layers = list(layers)
    meta = path[-1].metadata or {} if path else {}
    if len(layers) != len(path) + 1 or b"lance-encoding:packed" not in meta or \
            layers[1] not in (repdef.ALL_VALID_ITEM, repdef.NULLABLE_ITEM):
        return layers, dfn
    own = repdef.NUM_DEF[layers[1]]
    if own and dfn is not None:
        inside = repdef.NUM_DEF[layers[0]]
        dfn = np.asarray(dfn)
        at_struct = (dfn > inside) & (dfn <= inside + own)
        dfn = np.where(at_struct, 0, np.where(dfn > inside + own, dfn - own, dfn)).astype(
            dfn.dtype)
    return [layers[0]] + layers[2:], dfn


def _has_values(layout, kind) -> bool:
    """Whether a page stores values (a null-typed field fits only pages without)."""
    if kind == "constant_layout":
        return layout.constant_layout.HasField("inline_value")
    if kind == planar.SPARSE:
        return layout.values.WhichOneof("codec") != "none"
    return True


def _max_visible(layers) -> int:
    total = 0
    for k in layers:
        if k in repdef.LIST_KINDS:
            return total
        total += repdef.NUM_DEF.get(k, 0)
    return 1 << 30


def _empty_values(shape, bits):
    if shape == "var":
        return Var(np.zeros(1, np.int64), np.zeros(0, np.uint8))
    if shape == "fsl":
        raise FormatError("fixed-size list page without values", rule="ENC-046")
    return Fixed(np.zeros(0, bool if bits == 1 else np.uint8), bits)


def _placeholder(shape, bits, n):
    if shape == "null":
        return None  # a null-typed leaf: the Arrow array is pa.nulls
    if shape == "var":
        return Var(np.zeros(n + 1, np.int64), np.zeros(0, np.uint8))
    if shape == "fsl":
        return None
    return Fixed(np.zeros(n, bool) if bits == 1 else np.zeros(n * (bits // 8), np.uint8), bits)


def _concat_nodes(nodes: list) -> Node:
    first = nodes[0]
    if len(nodes) == 1:
        return first
    length = sum(n.length for n in nodes)
    if any(n.validity is not None for n in nodes):
        validity = np.concatenate([n.validity if n.validity is not None else np.ones(n.length, bool) for n in nodes])
    else:
        validity = None
    if first.kind == "leaf":
        vals = [n.values for n in nodes]
        if any(v is None for v in vals):
            from .encodings.v2_1.values import Fsl  # all-null FSL pages
            proto = next((v for v in vals if v is not None), None)
            if proto is None:
                return Node("leaf", length, validity, values=None)
            vals = [v if v is not None else Fsl.placeholder(proto, n.length) for v, n in zip(vals, nodes, strict=False)]
        return Node("leaf", length, validity, values=concat(vals))
    if first.kind == "fsl":
        return Node("fsl", length, validity, children={"": _concat_nodes([n.children[""] for n in nodes])})
    if first.kind == "list":
        offs, base = [np.zeros(1, np.int64)], 0
        for n in nodes:
            o = n.offsets - n.offsets[0]
            offs.append(o[1:] + base)
            base += int(o[-1])
        child = _concat_nodes([n.children[""] for n in nodes])
        return Node("list", length, validity, np.concatenate(offs), {"": child})
    kids = {k: _concat_nodes([n.children[k] for n in nodes]) for k in first.children}
    return Node("struct", length, validity, children=kids, weak=first.weak)


def _merge(a: Node, b: Node) -> Node:
    """Merge two single-leaf trees of the same field (struct children union)."""
    if a.kind == "struct" and b.kind == "struct":
        kids = dict(a.children)
        for k, v in b.children.items():
            kids[k] = _merge(kids[k], v) if k in kids else v
        if a.weak and not b.weak:  # 2.3: a child with values of its own says the validity
            return Node("struct", a.length, b.validity, children=kids)
        return Node("struct", a.length, a.validity, children=kids, weak=a.weak)
    if a.kind == "list" and b.kind == "list":
        return Node("list", a.length, a.validity, a.offsets, {"": _merge(a.children[""], b.children[""])})
    if a.kind == "fsl" and b.kind == "fsl":
        return Node("fsl", a.length, a.validity, children={"": _merge(a.children[""], b.children[""])})
    return a


def _bitmap(valid):
    if valid is None or valid.all():
        return None
    return pa.py_buffer(np.packbits(valid, bitorder="little").tobytes())


def _to_arrow(f: pa.Field, node: Node) -> pa.Array:
    t = f.type
    if node.kind == "leaf":
        if arrow_types.is_empty_struct(t):
            return pa.Array.from_buffers(t, node.length, [_bitmap(node.validity)], children=[])
        if node.values is None:
            return pa.nulls(node.length, t)
        return arrow_types.leaf_array(f, node.values, node.validity)
    if node.kind == "struct":
        kids = [_to_arrow(c, node.children[c.name]) if c.name in node.children else pa.nulls(node.length, c.type)
                for c in t]
        for c, k in zip(t, kids, strict=False):
            if len(k) != node.length:
                raise FormatError(f"struct child {c.name!r} has {len(k)} rows, struct {node.length}", rule="ENC-046")
        return pa.Array.from_buffers(t, node.length, [_bitmap(node.validity)], children=kids)
    if node.kind == "fsl":
        child = _to_arrow(t.value_field, node.children[""])
        if len(child) != node.length * t.list_size:
            raise FormatError(f"fixed-size list of {node.length} rows has {len(child)} items, "
                              f"not {t.list_size} each", rule="ENC-046")
        return pa.Array.from_buffers(t, node.length, [_bitmap(node.validity)], children=[child])
    # lists and maps
    if pa.types.is_map(t):
        entries = pa.field("entries", pa.struct([t.key_field, t.item_field]), nullable=False)
        child = _to_arrow(entries, node.children[""])
        offs = node.offsets.astype(np.int32)
        return pa.Array.from_buffers(t, node.length, [_bitmap(node.validity), pa.py_buffer(offs.tobytes())],
                                     children=[child])
    child = _to_arrow(t.value_field, node.children[""])
    large = pa.types.is_large_list(t)
    offs = node.offsets - node.offsets[0]
    if len(offs) and offs[-1] != len(child):
        raise FormatError(f"list offsets end at {offs[-1]}, child holds {len(child)}", rule="ENC-046")
    offs = offs.astype(np.int64 if large else np.int32)
    return pa.Array.from_buffers(t, node.length, [_bitmap(node.validity), pa.py_buffer(offs.tobytes())],
                                 children=[child])


def _page_rows(container: FileContainer, col: int):
    """``(first_row, length)`` of each page of a 2.1+ column (from priority)."""
    return [(int(p.priority), int(p.length)) for p in container.columns[col].pages]


MAX_PAGE_ROWS = 1 << 31


def _check_pages(container: FileContainer, col: int, pages, per_row: int = 1) -> None:
    """Page lengths/priorities must tile ``[0, num_rows)`` before anything is allocated
    (``[0, num_rows * per_row)`` in a column under fixed-size lists of structs, whose pages
    count items)."""
    row = 0
    for i, p in enumerate(pages):
        if int(p.length) > MAX_PAGE_ROWS or int(p.priority) != row:
            raise FormatError(f"column {col} page {i}: priority {p.priority}, length {p.length}, "
                              f"expected first row {row}", rule="FILE-014" if int(p.priority) != row else "FILE-013",
                              path=container.path)
        row += int(p.length)
    if row != container.num_rows * per_row:
        raise FormatError(f"column {col} pages hold {row} rows, the file {container.num_rows}"
                          + (f" of {per_row} items" if per_row > 1 else ""),
                          rule="FILE-013", path=container.path)


#: a mini-block page of more than twice this many rows is decoded in runs of about this many
#: rows on the decode threads. At 1M-row pages (pylance's usual) splitting gained nothing
#: measurable on 2 shared cores, where fields and fragments already keep both busy, so only
#: larger pages are split.
SPLIT_ROWS = 1 << 20


def _decode_page_split(container: FileContainer, page, path, field_: pa.Field) -> Node:
    """:func:`_decode_page_2_1` of a whole page, a large 2.1/2.2 mini-block page being decoded
    as runs of chunks on the decode threads.

    Chunks are independent (random access decodes a run of them as a small page, see
    :mod:`.random_access`), so the runs, cut where no row straddles two chunks, decode to the
    pieces of the whole page's node, joined in order. Any error on this path sends the page
    to the one-piece decode, which reports it as it always does."""
    rows = int(page.length)
    if rows <= 2 * SPLIT_ROWS or container.version_name not in ("2.1", "2.2"):
        return _decode_page_2_1(container, page, path, field_)
    try:
        layout = page_layout(page, path=container.path)
        if layout.WhichOneof("layout") != "mini_block_layout":
            return _decode_page_2_1(container, page, path, field_, layout=layout)
        mb = layout.mini_block_layout
        index = load_page_index(container, page, mb, container.version_name)
        runs = _row_aligned_runs(index, SPLIT_ROWS)
        if len(runs) < 2:
            return _decode_page_2_1(container, page, path, field_, layout=layout)

        def one(run):
            sub, bufs, n, _first = read_run(container, page, mb, index, run[0], run[1])
            sub_layout = type(layout)()
            sub_layout.mini_block_layout.CopyFrom(sub)
            return _decode_page_2_1(container, page, path, field_, layout=sub_layout, buffers=bufs, rows=n)

        node = _concat_nodes(parallel.map_ordered(one, runs))
        if node.length != rows:
            raise FormatError("runs do not add up to the page", rule="ENC-041")
        return node
    except (FormatError, UnsupportedFeature, ValueError, IndexError):
        return _decode_page_2_1(container, page, path, field_)


#: consecutive small mini-block pages of one column are decoded together, up to this many
#: rows per group (:func:`_decode_page_group`)
GROUP_ROWS = 1 << 18


def _page_groups(container: FileContainer, pages: list) -> list:
    """Cut a column's pages into runs decoded as one: consecutive 2.1/2.2 mini-block pages
    without a dictionary whose layouts differ at most in ``num_items``, up to
    :data:`GROUP_ROWS` rows. Any other page is a run of its own. Returns ``(pages, layouts)``
    per run (``layouts`` None for a page decoded on its own)."""
    if container.version_name not in ("2.1", "2.2"):
        return [([p], None) for p in pages]
    groups: list = []
    cur: list = []
    cur_layouts: list = []
    cur_rows = 0

    def close():
        nonlocal cur, cur_layouts, cur_rows
        if cur:
            groups.append((cur, cur_layouts if len(cur) > 1 else None))
        cur, cur_layouts, cur_rows = [], [], 0

    for p in pages:
        rows = int(p.length)
        try:
            layout = page_layout(p, path=container.path)
        except (FormatError, UnsupportedFeature, ValueError):
            layout = None
        mb = layout.mini_block_layout if layout is not None and \
            layout.WhichOneof("layout") == "mini_block_layout" else None
        if mb is None or mb.HasField("dictionary") or rows > GROUP_ROWS:
            close()
            groups.append(([p], None))
            continue
        if cur and (cur_rows + rows > GROUP_ROWS or not mini_block.same_shape(cur_layouts[0], mb)):
            close()
        cur.append(p)
        cur_layouts.append(mb)
        cur_rows += rows
    close()
    return groups


def _decode_page_group(container: FileContainer, group, path, field_: pa.Field) -> Node:
    """The node of a run of pages (:func:`_page_groups`): decoded as one when they are alike,
    which gives the node their one-by-one decodes would join to; any error sends the run to
    the page-by-page decode, which reports it as it always does."""
    pages, layouts = group
    if layouts is None:
        return _decode_page_split(container, pages[0], path, field_)
    try:
        shape, bits = arrow_types.value_shape(path[-1])
        if shape != "null":  # a null-typed leaf's pages are checked page by page
            rows = sum(int(p.length) for p in pages)
            extents: list = []
            rep, dfn, values = mini_block.decode_pages(
                layouts, [read_page_buffers(container, p) for p in pages], container.version_name,
                extents)
            n_slots = len(rep) if rep is not None else (len(dfn) if dfn is not None else rows)
            _check_group_pages(layouts[0], pages, rep, dfn, extents)
            return _levels_to_node(container, path, layouts[0], list(layouts[0].layers), rep, dfn,
                                   values, None, n_slots, rows, shape, bits)
    except (FormatError, UnsupportedFeature, ValueError, IndexError):
        pass
    return _concat_nodes([_decode_page_split(container, p, path, field_) for p in pages])


def _check_group_pages(layout, pages, rep, dfn, extents) -> None:
    """Each page of a group decoded together must hold what decoding it alone accepts: levels
    that begin a row and describe exactly its rows, and one value per visible slot. (The
    group's totals can agree while a damaged page gives a row to its neighbour.) Raises
    ValueError, which sends the group to the page-by-page decode and its own refusal."""
    layers = list(layout.layers)
    at = 0
    for page, (n_levels, n_values) in zip(pages, extents, strict=True):
        rows = int(page.length)
        if rep is None and dfn is None:
            n_slots = rows
            got_rows, visible, starts = rows, rows, True
        else:
            n_slots = n_levels
            sl = slice(at, at + n_slots)
            got_rows, visible, starts = repdef.rows_and_visible(
                layers, None if rep is None else rep[sl], None if dfn is None else dfn[sl], n_slots)
            at += n_slots
        if got_rows != rows or visible != n_values or not starts:
            raise ValueError("a page of the group does not hold its own rows")
    if rep is not None and at != len(rep) or dfn is not None and at != len(dfn):
        raise ValueError("the pages' levels do not add up")


def _row_aligned_runs(index, rows_per_run: int) -> list:
    """Runs ``(c0, c1)`` (inclusive) of about ``rows_per_run`` rows covering every chunk of a
    page, each ending on a chunk that no row straddles."""
    n = len(index.offsets)
    runs, c0 = [], 0
    while c0 < n:
        target = int(index.first_row[c0]) + rows_per_run
        c1 = max(c0, int(np.searchsorted(index.row_end, target, side="left")))
        c1 = min(c1, n - 1)
        while c1 < n - 1 and index.straddles[c1]:
            c1 += 1
        runs.append((c0, c1))
        c0 = c1 + 1
    return runs


def decode_column_2_1(container: FileContainer, column_index: int, field_: pa.Field, page_range=None):
    """Decode one top-level field of a 2.1/2.2 file (the ``"2.1"`` family decoder).

    Returns ``(array, next_column_index, first_row)`` where ``first_row`` is the first row of
    the pages decoded (the array may extend beyond ``page_range``).
    """
    leaves = list(_leaf_paths(field_, container))
    if not leaves:
        return pa.nulls(container.num_rows if page_range is None else page_range[1] - page_range[0], field_.type), column_index, (page_range[0] if page_range else 0)
    tree = None
    first_row = None
    for li, path in enumerate(leaves):
        col = column_index + li
        if col >= len(container.columns):
            raise FormatError(f"field {field_.name!r} needs column {col}, file has {len(container.columns)}",
                              rule=RULE_SCHEMA, path=container.path)
        pages = list(container.columns[col].pages)
        per = _items_per_row(path)
        _check_pages(container, col, pages, per)
        if page_range is not None:
            start, stop = page_range[0] * per, page_range[1] * per
            sel = [p for p in pages if int(p.priority) < stop and int(p.priority) + int(p.length) > start]
        else:
            sel = pages
        if per > 1 and any(int(p.priority) % per or int(p.length) % per for p in sel):
            raise FormatError(f"a page of column {col} splits a fixed-size list of {per} items",
                              rule=RULE_PAGES, path=container.path)
        fr = int(sel[0].priority) // per if sel else (page_range[0] if page_range else 0)
        if first_row is None:
            first_row = fr
        elif fr != first_row:
            raise FormatError(f"columns of {field_.name!r} cut pages at different rows", rule=RULE_PAGES,
                              path=container.path)
        nodes = parallel.map_ordered(lambda g, path=path: _decode_page_group(container, g, path, field_),
                                     _page_groups(container, [p for p in sel if int(p.length)]))
        if not nodes:
            arr = pa.array([], field_.type)
            return arr, column_index + len(leaves), fr
        node = _concat_nodes(nodes)
        tree = node if tree is None else _merge(tree, node)
    return _field_array(container, field_, tree), column_index + len(leaves), first_row


def _field_array(container: FileContainer, f: pa.Field, node: Node) -> pa.Array:
    """:func:`_to_arrow`, its errors naming the file."""
    try:
        return _to_arrow(f, node)
    except FormatError as exc:
        raise naming(exc, container.path) from None


def naming(exc: FormatError, path: str, offset: int | None = None) -> FormatError:
    """``exc`` (of whatever FormatError class) made to name the file ``path``, and ``offset``
    where it names no offset, if it named no file."""
    if exc.path is None:
        exc.path = path
        if exc.offset is None:
            exc.offset = offset
        exc.args = (str(exc),)
    return exc


register_decoder("2.1", decode_column_2_1)
register_decoder("2.0", decode_column_2_0)


# --------------------------------------------------------------------------- public reader

class LanceFileReader:
    """Reads a Lance data file of any version from an object store: 0.1 (legacy, through
    :mod:`reference_impl.file.legacy`), 2.0, 2.1, 2.2 and 2.3 (see module docstring)."""

    def __init__(self, store, key: str, *, size: int | None = None, fields=None) -> None:
        """``fields`` (a Lance field list) describes a legacy 0.1 file that carries no embedded
        manifest; v2 files and pylance's legacy files describe themselves."""
        self.store, self.key = store, key
        self.container = read_container(store, key, size=size)
        self.version = self.container.version_name
        self._page_index: dict = {}  # (column, page) -> random_access.PageIndex
        self.legacy = None
        from reference_impl.table.schema import fields_to_arrow

        if self.container.is_legacy:
            self._open_legacy(fields, fields_to_arrow)
            return
        from reference_impl.table import blob

        if family(self.version) != "2.0":  # (2.0 checks them as it builds its columns)
            for i, meta in enumerate(self.container.columns):
                column_encoding(meta, path=key, column=i)
        # pylance writes a blob v2 column's descriptor fields detached, with id -1 (BLOB-001)
        self.fields, descriptors = blob.split_file_fields(self.container.fields, path=key)
        try:
            meta = dict(self.container.descriptor.schema.metadata)
            self.schema = blob.with_descriptor_types(fields_to_arrow(self.fields, meta), descriptors)
            self.decode_schema = blob.with_descriptor_types(
                fields_to_arrow(self.fields, meta, extensions=False), descriptors)
        except FormatError as exc:
            raise naming(exc, key) from None
        except (ValueError, TypeError, KeyError, pa.ArrowException) as exc:
            raise FormatError(f"file schema cannot be converted: {exc}", rule=RULE_SCHEMA, path=key) from None

    def _open_legacy(self, fields, fields_to_arrow) -> None:
        """Legacy 0.1 files are decoded by :mod:`reference_impl.file.legacy`; the schema is the
        file's embedded manifest (or ``fields``)."""
        from .legacy import open_legacy

        self.legacy = open_legacy(store=self.store, key=self.key)
        self.fields = list(fields) if fields is not None else self.legacy.schema_fields()
        try:
            self.schema = fields_to_arrow(self.fields)
            self.decode_schema = fields_to_arrow(self.fields, extensions=False)
        except FormatError as exc:
            raise naming(exc, self.key) from None
        except (ValueError, TypeError, KeyError, pa.ArrowException) as exc:
            raise FormatError(f"file schema cannot be converted: {exc}", rule=RULE_SCHEMA, path=self.key) from None

    def _read_legacy(self, columns) -> pa.Table:
        names = self._names(columns)
        return self.legacy.read(self.fields, columns=names)

    @property
    def num_rows(self) -> int:
        return self.container.num_rows

    @property
    def reads(self) -> int:
        return self.container.reader.reads

    @property
    def bytes_read(self) -> int:
        return self.container.reader.bytes_read

    def _decoder(self):
        fam = family(self.version)
        return DECODERS[fam]

    def _column_starts(self):
        """Column index of every top-level field. In 2.1+ a field takes one column per leaf;
        in 2.0 structs and lists own columns too, and the walk reads the page encodings
        (:func:`~reference_impl.file.encodings.v2_0.column.count_columns`), never page bytes."""
        if family(self.version) == "2.0":
            from .encodings.v2_0.column import container_columns, field_starts

            starts, _total = field_starts(self.decode_schema, container_columns(self.container))
            return starts
        starts, idx = [], 0
        for f in self.decode_schema:
            starts.append(idx)
            idx += len(list(_leaf_paths(f, self.container)))
        if idx != len(self.container.columns) and \
                getattr(self.container, "empty_struct_columns", True) and \
                any(arrow_types.is_empty_struct(p[-1].type)
                    for f in self.decode_schema for p in _leaf_paths(f)):
            # structs without children and no column of their own (pylance 0.20.0's 2.1)
            self.container.empty_struct_columns = False
            return self._column_starts()
        if idx != len(self.container.columns):
            raise FormatError(f"schema needs {idx} columns, file has {len(self.container.columns)}",
                              rule=RULE_SCHEMA, path=self.key)
        return starts

    def _select(self, columns) -> list[int]:
        names = [f.name for f in self.schema]
        if columns is None:
            return list(range(len(names)))
        out = []
        ids = {int(f.id): f for f in self.fields}
        for c in columns:
            if isinstance(c, str):
                if c not in names:
                    raise KeyError(c)
                out.append(names.index(c))
            else:
                f = ids.get(int(c))
                if f is None:  # the manifest names a field the file does not store
                    raise FormatError(f"field id {int(c)} is not in the file's schema (it has "
                                      f"{sorted(ids)[:20]})", rule=RULE_FIELD_IDS, path=self.key)
                while f.parent_id != -1 and f.parent_id in ids:
                    f = ids[f.parent_id]
                out.append(names.index(f.name))
        return out

    def field_starting_at(self, column: int) -> int | None:
        """The position (in the file's schema) of the top-level field whose first column is
        ``column``, or None. ``DataFile.column_indices`` name columns so: "To determine column
        indices the column_indices property should be used" (spec 004, DataFile)."""
        if self.legacy is not None:
            return None
        starts = self._column_starts()
        return starts.index(column) if column in starts else None

    def is_blob_column(self, position: int) -> bool:
        """Whether the top-level field at ``position`` is stored blob-encoded (2.0: a blob
        column; 2.1+: its first page of rows has a blob layout), so that its descriptions can
        be read. Releases before blob encoding (pylance 0.12-0.15) store a ``lance-encoding:
        blob`` field as plain ``large_binary`` and read its bytes back."""
        if self.legacy is not None:
            return False
        col = self._column_starts()[position]
        if family(self.version) == "2.0":
            from .encodings.v2_0.column import container_columns

            return bool(container_columns(self.container)[col].is_blob)
        for page in self.container.columns[col].pages:
            if page.length:
                return _layout(self.container, page).WhichOneof("layout") == "blob_layout"
        return False

    def blob_descriptions(self, position: int) -> pa.StructArray:
        """The descriptors of the blob v1 column at ``position`` (a top-level ``large_binary``
        field with ``lance-encoding:blob``): ``struct<position: uint64, size: uint64>``, one
        row per row of the file, as stored. pylance's dataset scan returns these, not the
        bytes (its file reader returns the bytes, as :meth:`read_fields` does). A null is a
        null row in 2.1+; 2.0 stores no validity, and its null reads as ``(1, 0)``."""
        from reference_impl.table.blob import V1_DESCRIPTION_TYPE

        col = self._column_starts()[position]
        parts, valids = [], []
        if family(self.version) == "2.0":
            from .encodings.v2_0.column import blob_descriptors, container_columns

            column = container_columns(self.container)[col]
            if not column.is_blob:
                raise FormatError(f"column {col} is not a blob column", rule="ENC-047",
                                  path=self.key)
            for page in column.pages:
                if page.length:
                    parts.append(blob_descriptors(page))
                    valids.append(None)
        else:
            for page in self.container.columns[col].pages:
                if not page.length:
                    continue
                layout = _layout(self.container, page)
                if layout.WhichOneof("layout") != "blob_layout":
                    raise FormatError(f"column {col} is not a blob column", rule="ENC-047",
                                      path=self.key)
                try:
                    desc, valid = blob_layout.descriptors(
                        self.container, layout.blob_layout,
                        read_page_buffers(self.container, page), int(page.length))
                except FormatError as exc:
                    raise naming(exc, self.key) from None
                parts.append(desc)
                valids.append(valid)
        desc = np.concatenate(parts) if parts else np.zeros((0, 2), np.uint64)
        if len(desc) != self.num_rows:
            raise FormatError(f"blob column decodes {len(desc)} rows, file has {self.num_rows}",
                              rule=RULE_PAGES, path=self.key)
        mask = None
        if any(v is not None for v in valids):
            valid = np.concatenate([np.ones(len(p), bool) if v is None else v
                                    for p, v in zip(parts, valids, strict=True)])
            mask = pa.array(~valid)
        children = [pa.array(desc[:, 0].astype(np.uint64)), pa.array(desc[:, 1].astype(np.uint64))]
        if mask is not None:  # a null row's children read as nulls too
            children = [pa.array(c.to_numpy(), mask=~valid) for c in children]
        return pa.StructArray.from_arrays(children, fields=list(V1_DESCRIPTION_TYPE), mask=mask)

    def read_fields(self, positions: Sequence[int]) -> pa.Table:
        """The top-level fields at ``positions`` of the file's schema, decoded."""
        return self._read(None, None, sel=list(positions))

    def _read(self, columns, page_range, sel=None) -> pa.Table:
        if self.legacy is not None:
            table = self._read_legacy(columns)
            if table.num_rows != self.num_rows:
                raise FormatError(f"legacy batches hold {table.num_rows} rows, batch_offsets say "
                                  f"{self.num_rows}", rule=RULE_PAGES, path=self.key)
            return table if page_range is None else table.slice(page_range[0], page_range[1] - page_range[0])
        if sel is None:
            sel = self._select(columns)
        dec = self._decoder()
        starts = self._column_starts()

        def one(i: int) -> pa.Array:
            res = dec(self.container, starts[i], self.decode_schema.field(i), page_range)
            return self.typed(i, self._cut(res[0], res, page_range))

        # fields are independent: decoded on the decode threads, each spreading its pages
        arrays = parallel.map_ordered(one, sel)
        fields = [self.schema.field(i) for i in sel]
        return pa.Table.from_arrays(arrays,
                                    schema=pa.schema([f.remove_metadata() if f.metadata else f for f in fields]))

    def _cut(self, arr, res, page_range):
        first = res[2] if len(res) > 2 else (page_range[0] if page_range else 0)
        if page_range is None:
            if len(arr) != self.num_rows:
                raise FormatError(f"column decodes {len(arr)} rows, file has {self.num_rows}",
                                  rule=RULE_PAGES, path=self.key)
            return arr
        start, stop = page_range
        if len(res) == 2 and page_range is not None and family(self.version) == "2.0":
            return arr.slice(start, stop - start)
        return arr.slice(start - first, stop - start)

    def read_all(self) -> pa.Table:
        return self._read(None, None)

    def read_columns(self, columns: Sequence) -> pa.Table:
        return self._read(list(columns), None)

    def read_range(self, start: int, stop: int, columns: Sequence | None = None) -> pa.Table:
        if not 0 <= start <= stop <= self.num_rows:
            raise IndexError(f"range [{start}, {stop}) outside 0..{self.num_rows}")
        return self._read(columns, (start, stop))

    def take(self, indices: Iterable[int], columns: Sequence | None = None) -> pa.Table:
        """Rows at ``indices`` (any order, repeats allowed); reads only the pages that hold them."""
        idx = np.asarray(list(indices) if not isinstance(indices, np.ndarray) else indices, np.int64)
        if len(idx) and (idx.min() < 0 or idx.max() >= self.num_rows):
            raise IndexError("take index outside the file")
        if self.legacy is not None:
            return self._read_legacy(columns).take(pa.array(idx))
        if family(self.version) == "2.0":
            return self._take_2_0(idx, columns)
        sel = self._select(columns)
        starts = self._column_starts()
        arrays = []
        for i in sel:
            f = self.decode_schema.field(i)
            leaves = list(_leaf_paths(f, self.container))
            if any(_items_per_row(p) > 1 for p in leaves):
                # pages of fixed-size lists of structs count items: take from the whole field
                whole = self._decoder()(self.container, starts[i], f, None)[0]
                arrays.append(self.typed(i, whole.take(pa.array(idx))))
            elif len(leaves) == 1:
                arrays.append(self.typed(i, self._take_single_leaf(f, starts[i], leaves[0], idx)))
            else:
                arrays.append(self.typed(i, self._take_pages(f, starts[i], idx)))
        fields = [self.schema.field(i).remove_metadata() for i in sel]
        return pa.Table.from_arrays(arrays, schema=pa.schema(fields))

    def load_page_index(self, columns: Sequence | None = None) -> int:
        """Read the search buffers (chunk metadata, dictionary, repetition index) of every
        mini-block page of ``columns`` (all by default) into the page index, as a reader does
        once before serving random access; returns the number of pages indexed. After this a
        ``take`` of one row costs one read per mini-block column."""
        if self.legacy is not None or family(self.version) == "2.0":
            return 0
        starts = self._column_starts()
        n = 0
        for i in self._select(columns):
            leaves = list(_leaf_paths(self.decode_schema.field(i), self.container))
            if len(leaves) != 1:
                continue
            col = starts[i]
            for pg, page in enumerate(self.container.columns[col].pages):
                layout = _layout(self.container, page)
                if layout.WhichOneof("layout") == "mini_block_layout" and (col, pg) not in self._page_index:
                    self._page_index[(col, pg)] = load_page_index(self.container, page, layout.mini_block_layout,
                                                                  self.version)
                    n += 1
        return n

    def _take_pages(self, f: pa.Field, col: int, idx: np.ndarray) -> pa.Array:
        """Take through whole pages: every page holding a requested row is decoded."""
        pages = _page_rows(self.container, col)
        bounds = np.array([p[0] for p in pages] + [self.num_rows], np.int64)
        page_of = np.searchsorted(bounds, idx, side="right") - 1
        pieces = []
        for pg in np.unique(page_of).tolist():
            s, ln = pages[pg]
            res = self._decoder()(self.container, col, f, (s, s + ln))
            first = res[2] if len(res) > 2 else s
            pieces.append((s, res[0].slice(s - first, ln)))
        return _take_from_pieces(f, pieces, idx)

    def _take_single_leaf(self, f: pa.Field, col: int, path, idx: np.ndarray) -> pa.Array:
        """Take for a field with one leaf column: mini-block pages are read chunk run by chunk
        run through the cached page index (one read per run), other layouts page by page."""
        if not len(idx):
            return pa.array([], f.type)
        c = self.container
        pages = list(c.columns[col].pages)
        _check_pages(c, col, pages)
        bounds = np.array([int(p.priority) for p in pages] + [self.num_rows], np.int64)
        page_of = np.searchsorted(bounds, idx, side="right") - 1
        pieces = []
        for pg in np.unique(page_of).tolist():
            page = pages[pg]
            base = int(page.priority)
            layout = _layout(c, page)
            if layout.WhichOneof("layout") != "mini_block_layout":
                res = decode_column_2_1(c, col, f, (base, base + int(page.length)))
                pieces.append((base, res[0].slice(base - res[2], int(page.length))))
                continue
            key = (col, pg)
            index = self._page_index.get(key)
            if index is None:
                index = self._page_index[key] = load_page_index(c, page, layout.mini_block_layout, self.version)
            wanted = np.unique(idx[page_of == pg]) - base
            for c0, c1 in chunk_runs(index, wanted):
                sub, bufs, rows, first = read_run(c, page, layout.mini_block_layout, index, c0, c1)
                sub_layout = type(layout)()
                sub_layout.mini_block_layout.CopyFrom(sub)
                node = _decode_page_2_1(c, page, path, f, layout=sub_layout, buffers=bufs, rows=rows)
                arr = _field_array(c, f, node)
                if len(arr) != rows:
                    raise FormatError(f"chunks {c0}..{c1} decode {len(arr)} rows, index says {rows}",
                                      rule="ENC-041", path=c.path)
                pieces.append((base + first, arr))
        return _take_from_pieces(f, pieces, idx)

    def _take_2_0(self, idx: np.ndarray, columns) -> pa.Table:
        """2.0 take: decode only the row range spanned by each needed page group."""
        from .encodings.v2_0 import take as take20

        sel = self._select(columns)
        table = take20.take(self, idx, self._names(columns))
        arrays = [self.typed(i, table.column(k).combine_chunks()) for k, i in enumerate(sel)]
        fields = [self.schema.field(i).remove_metadata() for i in sel]
        return pa.Table.from_arrays(arrays, schema=pa.schema(fields))

    def typed(self, i: int, arr: pa.Array) -> pa.Array:
        """``arr``, decoded under the storage types of field ``i``
        (:attr:`decode_schema`), as an array of the field's type: extension types, at any
        depth, wrap the storage they hold."""
        want = self.schema.field(i).type
        if arr.type == want:
            return arr
        try:
            return arr.cast(want)
        except (pa.ArrowException, ValueError, TypeError) as exc:
            raise FormatError(f"field {self.schema.field(i).name!r}: values decoded as "
                              f"{arr.type} do not fit {want}: {exc}", rule=RULE_SCHEMA,
                              path=self.key) from None

    def _names(self, columns):
        return [self.schema.field(i).name for i in self._select(columns)]


def _take_from_pieces(f: pa.Field, pieces: list, idx: np.ndarray) -> pa.Array:
    """Rows ``idx`` out of decoded pieces ``(first_row, array)`` that together cover them."""
    if not pieces:
        return pa.array([], f.type)
    pieces.sort(key=lambda p: p[0])
    firsts = np.array([p[0] for p in pieces], np.int64)
    lens = np.array([len(p[1]) for p in pieces], np.int64)
    base = np.concatenate([[0], np.cumsum(lens)[:-1]])
    k = np.searchsorted(firsts, idx, side="right") - 1
    local = idx - firsts[k]
    if np.any(k < 0) or np.any(local >= lens[k]):
        raise FormatError("decoded pages do not cover the requested rows", rule=RULE_PAGES)
    whole = pa.concat_arrays([p[1] for p in pieces]) if len(pieces) > 1 else pieces[0][1]
    return whole.take(pa.array(local + base[k]))


def open_file(store, key: str, *, size: int | None = None) -> LanceFileReader:
    return LanceFileReader(store, key, size=size)


__all__ = ["DECODERS", "LanceFileReader", "decode_column_2_1", "family", "open_file", "register_decoder"]
