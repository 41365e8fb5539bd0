"""2.0 columns of one top-level field, in pre-order, and the pages written for them.

Every field has a column (FACTS.md: "2.0 one column per field incl. list/struct
parents"): a primitive, string or fixed-size-list field is one column; a list field is
an offsets column followed by its item's columns; a struct is a header column followed
by its children's columns, except a packed struct (``lance-encoding:packed``), which is
one ``packed_struct`` column (:mod:`.packed_struct`). A string/binary column's
``lance-encoding:compression`` compresses its Binary bytes (:mod:`..hints`). In 2.0 a
page's ``length`` is the number of values in that column's page and ``priority`` is
always 0.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pyarrow as pa

from ....errors import UnsupportedFeature
from ....proto import encodings_v2_0_pb2 as pb
from ... import selection
from ..arrow_data import fixed_bits, fixed_values, is_variable_width, valid_mask
from ..blob import BlobPage, is_blob_field
from ..hints import parse_hints
from ..page import EncodedPage, pack_any
from .binary import binary_node
from .dictionary import arrow_dictionary_node, dictionary_node
from .fixed_size_list import fixed_size_list_node
from .list import list_offsets_node
from .nullable import nullable_node
from .packed_struct import child_layout, packed_struct_node
from .struct import check_struct_validity, struct_header_node
from .value import flat_node


def _page(node: pb.ArrayEncoding, buffers: list[bytes], length: int) -> EncodedPage:
    return EncodedPage(
        buffers=buffers, length=length, encoding=pack_any(node), priority=0, description=node
    )


def _empty_page() -> EncodedPage:
    node = pb.ArrayEncoding()
    node.nullable.all_nulls.SetInParent()
    return _page(node, [], 0)


def values_node(arr: pa.Array, buffers: list[bytes]) -> pb.ArrayEncoding:
    """Tree for a fixed-width or fixed-size-list array (no list or struct inside)."""
    t = arr.type
    if pa.types.is_fixed_size_list(t):
        if not (pa.types.is_fixed_size_list(t.value_type) or _is_fixed(t.value_type)):
            raise UnsupportedFeature(
                f"2.0 fixed_size_list items must be fixed width, not {t.value_type}"
            )
        return nullable_node(
            valid_mask(arr), len(arr), buffers, lambda b: fixed_size_list_node(arr, b, values_node)
        )
    return nullable_node(
        valid_mask(arr),
        len(arr),
        buffers,
        lambda b: flat_node(fixed_bits(t), b, np.ascontiguousarray(fixed_values(arr))),
    )


def _is_fixed(t: pa.DataType) -> bool:
    return not (
        is_variable_width(t)
        or pa.types.is_list(t)
        or pa.types.is_large_list(t)
        or pa.types.is_struct(t)
    )


def _skip_ids(t: pa.DataType, ids: Iterator[int]) -> None:
    """Consume the pre-order field ids of every field nested in ``t``."""
    if pa.types.is_struct(t):
        children = [t.field(i).type for i in range(t.num_fields)]
    elif pa.types.is_list(t) or pa.types.is_large_list(t):
        children = [t.value_type]
    else:
        children = []
    for child in children:
        next(ids)
        _skip_ids(child, ids)


def _compress_bytes(tree: pb.ArrayEncoding, buffers: list[bytes], hints) -> None:
    """2.0 ``lance-encoding:compression``: the Binary bytes Flat carries
    ``compression{scheme, level?}`` and its buffer is framed as FILE-ENCODINGS §4.9
    (``none`` is recorded and the bytes stay raw), as pylance 14.0.2 writes it."""
    from ..v2_1.general import LZ4, ZSTD, compress

    flat = tree.binary.bytes.flat
    flat.compression.scheme = hints.compression
    if hints.compression_level is not None:
        flat.compression.level = hints.compression_level
    if hints.compresses:
        index = flat.buffer.buffer_index
        scheme = LZ4 if hints.compression == "lz4" else ZSTD
        buffers[index] = compress(buffers[index], scheme, hints.compression_level)


class _Node:
    """One column of the field tree; ``children`` only for lists and structs."""

    def __init__(self, f: pa.Field, ids: Iterator[int]) -> None:
        self.field = f
        self.field_id = next(ids)
        t = f.type
        self.children: list[_Node] = []
        self.hints = parse_hints(f)
        if self.hints.packed:
            # one column for the whole struct; its children keep their field ids
            self.kind = "packed"
            child_layout(t, f.name, allow_variable=False)
            _skip_ids(t, ids)
        elif pa.types.is_list(t) or pa.types.is_large_list(t):
            self.kind = "list"
            self.children = [_Node(t.value_field, ids)]
        elif pa.types.is_struct(t):
            self.kind = "struct"
            self.children = [_Node(t.field(i), ids) for i in range(t.num_fields)]
        elif pa.types.is_dictionary(t):
            self.kind = "dictionary"  # Arrow dictionary<I, string|binary> (top level only)
        elif is_blob_field(f):
            self.kind = "blob"  # ColumnEncoding.blob, descriptor pages (encode/blob.py)
        elif is_variable_width(t):
            self.kind = "binary"
        elif pa.types.is_null(t):
            self.kind = "null"  # every page all_nulls{}, as pylance 14.0.2 writes it
        else:
            self.kind = "value"
        self.struct_values = 0

    def columns(self) -> list[_Node]:
        out = [self]
        for c in self.children:
            out.extend(c.columns())
        return out


class FieldEncoder20:
    """Encodes pages for all columns of one top-level field (file version 2.0)."""

    def __init__(self, f: pa.Field, ids: Iterator[int], version: str = "2.0") -> None:
        self.root = _Node(f, ids)
        self._columns = self.root.columns()
        self._index = {id(n): i for i, n in enumerate(self._columns)}
        self.column_field_ids = [n.field_id for n in self._columns]
        self.blob_columns = [i for i, n in enumerate(self._columns) if n.kind == "blob"]
        self.first_column = 0

    def encode(self, arr: pa.Array, first_row: int) -> list[tuple[int, EncodedPage]]:
        out: list[tuple[int, EncodedPage]] = []
        self._encode(self.root, arr, out)
        return out

    def _encode(self, node: _Node, arr: pa.Array, out: list) -> None:
        col = self._index[id(node)]
        if len(arr) == 0:
            # pylance writes a length-0 all-null page for item columns with no items
            for n in node.columns():
                if n.kind == "packed":  # pylance's reader wants a packed_struct page here
                    empty: list[bytes] = []
                    tree = packed_struct_node(pa.array([], n.field.type), empty, n.field.name)
                    out.append((self._index[id(n)], _page(tree, empty, 0)))
                elif n.kind != "struct":
                    out.append((self._index[id(n)], _empty_page()))
            return
        if node.kind == "struct":
            check_struct_validity(arr, node.field.name)
            node.struct_values += len(arr)
            for i, child in enumerate(node.children):
                self._encode(child, arr.field(i), out)
            return
        if node.kind == "blob":
            out.append((col, BlobPage(arr, "2.0")))
            return
        buffers: list[bytes] = []
        if node.kind == "list":
            tree, items = list_offsets_node(arr, buffers)
            out.append((col, _page(tree, buffers, len(arr))))
            self._encode(node.children[0], items, out)
            return
        if node.kind == "binary":
            if selection.use_dictionary_v2_0(arr):
                tree = dictionary_node(arr, buffers)
            else:
                tree = binary_node(arr, buffers)
                if node.hints.compression is not None:
                    _compress_bytes(tree, buffers, node.hints)
        elif node.kind == "dictionary":
            tree = arrow_dictionary_node(arr, buffers)
        elif node.kind == "packed":
            tree = packed_struct_node(arr, buffers, node.field.name)
        elif node.kind == "null":
            tree = pb.ArrayEncoding()
            tree.nullable.all_nulls.SetInParent()
        else:
            tree = values_node(arr, buffers)
        out.append((col, _page(tree, buffers, len(arr))))

    def finish(self, num_rows: int) -> list[tuple[int, EncodedPage]]:
        """Struct header pages: exactly one per struct column, covering all its values
        (length 0 for a struct under lists that are all empty or null; none in an empty file)."""
        out = []
        for i, n in enumerate(self._columns):
            if n.kind == "struct" and num_rows > 0:
                out.append((i, _page(struct_header_node(), [], n.struct_values)))
        return out
