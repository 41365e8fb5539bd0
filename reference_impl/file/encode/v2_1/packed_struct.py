"""Packed struct pages for 2.1 / 2.2 (spec 003 "Packed struct"; FILE-ENCODINGS §1.1, §4.11,
§4.12): a struct field with ``lance-encoding:packed`` (or ``packed``) = ``true`` is **one
leaf column** at the struct itself; its children keep their field ids but get no column.

Fixed-width children (2.1 and 2.2) -> mini-block with
``packed_struct{bits_per_value: [w_0 .. w_k], values: flat{Σ w}}``. A chunk's single value
buffer holds the chunk's rows back to back, each row the children's little-endian values
in field order (FILE-ENCODINGS §4.11: (i32, f64) gives 12-byte rows). Struct nulls are a
``NULLABLE_ITEM`` def layer like any leaf's; a null row keeps placeholder bytes in the
value stream. Children must not carry nulls of their own.

Variable-width children (2.2 only; 2.1 is refused as pylance 14.0.2 refuses it: "Variable
packed struct encoding is not enabled by the selected file format") -> full-zip with
``bits_per_offset 32`` and ``variable_packed_struct{fields}`` (FILE-ENCODINGS §4.12). Each
non-null row is one variable-length value::

    u32 total length | per child: fixed -> its w/8 bytes; variable -> length, bytes

where a variable child's length (``bits_per_length``, also its ``variable`` offsets width)
is a u64 for large_utf8/large_binary and a u32 otherwise, as pylance 14.0.2 writes it.

(the outer length is the full-zip value length prefix). Null rows carry nothing.

Which children can be packed is decided in :func:`..v2_0.packed_struct.child_layout`;
refusals are :class:`~reference_impl.errors.InvalidInput` naming the field.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from ....errors import InvalidInput
from ....proto import encodings_v2_1_pb2 as pb
from ..arrow_data import fixed_values, is_large_variable, is_variable_width, variable_parts
from ..hints import parse_hints
from ..v2_0.packed_struct import check_children_valid, child_layout, packed_rows
from .flat import chunk_values_for_width
from .full_zip import _ragged_copy, encode_full_zip
from .mini_block import encode_mini_block_fast
from .repdef import FSL, ITEM, LIST, Shredded, is_struct_fsl


def leaf_fields(f: pa.Field, path: tuple = ()) -> list[tuple[tuple, pa.Field]]:
    """Every column of ``f`` as ``(path, leaf field)``; a packed struct is one leaf.

    Paths use the steps of :func:`.repdef.leaf_paths`: ``(ITEM, child_index)`` into a
    struct, ``(LIST,)`` into a list, and a final ``(ITEM, None)`` for the leaf itself.
    """
    t = f.type
    if pa.types.is_struct(t) and t.num_fields and not parse_hints(f).packed:
        out = []
        for i in range(t.num_fields):
            out.extend(leaf_fields(t.field(i), path + ((ITEM, i),)))
        return out
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return leaf_fields(t.value_field, path + ((LIST,),))
    if is_struct_fsl(t):
        return leaf_fields(t.value_field, path + ((FSL, t.list_size),))
    return [(path + ((ITEM, None),), f)]


class PackedStructValues:
    """Mini-block values: fixed-width packed rows, one value buffer per chunk."""

    num_buffers = 1

    def __init__(self, values: pa.StructArray, widths: list[int]) -> None:
        self.widths = widths
        self.bits = sum(widths)
        self.row_bytes = self.bits // 8
        self.data = packed_rows(values, widths).reshape(-1)
        self.max_chunk_values = chunk_values_for_width(self.bits)

    def encoding(self) -> pb.CompressiveEncoding:
        enc = pb.CompressiveEncoding()
        enc.packed_struct.bits_per_value.extend(self.widths)
        enc.packed_struct.values.flat.bits_per_value = self.bits
        return enc

    def cost(self, start: int, count: int) -> int:
        return count * self.row_bytes

    def chunk(self, start: int, count: int) -> list[bytes]:
        w = self.row_bytes
        return [self.data[start * w : (start + count) * w].tobytes()]


def length_bits(t: pa.DataType) -> int:
    """Length prefix (and offset) width of a variable child: 64 for large types, else 32."""
    return 64 if is_large_variable(t) else 32


def variable_rows(values: pa.StructArray, layout: list[int | None]) -> pa.Array:
    """Each row's packed bytes (fixed children raw, variable ones u32-length-prefixed)
    as a binary array; the full-zip writer adds the outer length prefix."""
    n = len(values)
    pieces = []  # (per-row lengths, flat source bytes, per-row source starts)
    for i, bits in enumerate(layout):
        child = values.field(i)
        if bits is not None:
            w = bits // 8
            src = fixed_values(child)
            pieces.append((np.full(n, w, np.int64), src, np.arange(n, dtype=np.int64) * w))
            continue
        offsets, data = variable_parts(child)
        lengths = np.diff(offsets)
        w = length_bits(child.type) // 8
        if w == 4 and n and int(lengths.max()) >= 2**32:
            raise InvalidInput(f"packed struct child {values.type.field(i).name!r}: value too long")
        prefix = lengths.astype(f"<u{w}").view(np.uint8)
        pieces.append((np.full(n, w, np.int64), prefix, np.arange(n, dtype=np.int64) * w))
        pieces.append((lengths, data, offsets[:-1]))
    row_len = np.zeros(n, np.int64)
    for lengths, _, _ in pieces:
        row_len += lengths
    row_offsets = np.concatenate([[0], np.cumsum(row_len)]).astype(np.int64)
    out = np.empty(int(row_offsets[-1]), np.uint8)
    at = row_offsets[:-1].copy()
    for lengths, src, starts in pieces:
        _ragged_copy(out, at, src, starts, lengths)
        at += lengths
    large = int(row_offsets[-1]) >= 2**31
    typ = pa.large_binary() if large else pa.binary()
    offs = row_offsets if large else row_offsets.astype(np.int32)
    return pa.Array.from_buffers(
        typ, n, [None, pa.py_buffer(offs.tobytes()), pa.py_buffer(out.tobytes())]
    )


def variable_packed_struct_encoding(values_type: pa.DataType, layout) -> pb.CompressiveEncoding:
    enc = pb.CompressiveEncoding()
    for i, bits in enumerate(layout):
        field = enc.variable_packed_struct.fields.add()
        if bits is not None:
            field.value.flat.bits_per_value = bits
            field.bits_per_value = bits
        else:
            width = length_bits(values_type.field(i).type)
            field.value.variable.offsets.flat.bits_per_value = width
            field.bits_per_length = width
    return enc


def encode_packed_struct_page(sh: Shredded, version: str, name: str):
    """``(buffers, PageLayout)`` for a page of a packed struct column (not all-null)."""
    values = sh.values
    layout = child_layout(values.type, name, allow_variable=version != "2.1")
    check_children_valid(values, name)
    if all(bits is not None for bits in layout):
        return encode_mini_block_fast(sh, PackedStructValues(values, [int(b) for b in layout]), version)
    rows = variable_rows(values, layout)
    page = Shredded(
        sh.rep, sh.deff, sh.layers, rows, sh.visible, sh.num_rows, sh.max_rep, sh.max_visible_def
    )
    buffers, page_layout = encode_full_zip(page, compression="none")
    fz = page_layout.full_zip_layout
    fz.value_compression.CopyFrom(variable_packed_struct_encoding(values.type, layout))
    return buffers, page_layout


def check_packable(f: pa.Field, version: str) -> None:
    """Refuse, before writing, a packed struct whose children cannot be packed in ``version``."""
    if version == "2.1":
        for c in (f.type.field(i) for i in range(f.type.num_fields)):
            if is_variable_width(c.type):
                raise InvalidInput(
                    f"packed struct {f.name!r}: child {c.name!r} is variable width; variable "
                    "packed structs need file version 2.2 or later"
                )
    child_layout(f.type, f.name, allow_variable=version not in ("2.0", "2.1"))
