"""Blob columns: a ``large_binary`` field whose metadata carries ``lance-encoding:blob``.

FILE-ENCODINGS §2.2 (2.0), §3.5 (2.1 "blob v1") and the "what pylance chooses" table. A
blob column keeps its values out of the pages: every non-empty value is written as its
own buffer in the data region, each starting on a 64-byte boundary (the gaps filled with
the writer's filler byte), directly **ahead of** the buffers of the page that describes
them. The page itself only holds one 16-byte *descriptor* per row::

    u64 position   absolute file offset of the value's bytes
    u64 size       number of bytes

The descriptor page, by version:

2.0
    ``ColumnMetadata.encoding`` is ``ColumnEncoding{blob{inner{values{}}}}`` (instead of
    ``values{}``) and each page is a packed struct of the two u64 fields::

        packed_struct {
          inner { nullable { no_nulls { values { flat { bits_per_value: 64  buffer {} } } } } }
          inner { nullable { no_nulls { values { flat { bits_per_value: 64  buffer {} } } } } }
          buffer {}              # page buffer 0: n rows of (position, size)
        }

2.1 and 2.2 (blob v1)
    ``ColumnEncoding{values{}}`` as for any column, and the page layout is::

        blob_layout {
          inner_layout { mini_block_layout {
              value_compression { packed_struct { bits_per_value: [64, 64]
                                                  values { flat { bits_per_value: 128 } } } }
              layers: [REPDEF_ALL_VALID_ITEM]  num_buffers: 1  num_items: n } }
          layers: [REPDEF_NULLABLE_ITEM]  if the page holds a null, else [REPDEF_ALL_VALID_ITEM]
        }

    The inner mini-block page has no levels: nulls live in the descriptors. Its chunk
    metadata words are u16 in 2.1 and u32 (``has_large_chunk``) in 2.2, like any
    mini-block page of that version.

Nulls and empty values (FILE-ENCODINGS lists them as an open question; observed on
pylance 14.0.2 ``lance.file.LanceFileWriter`` output and written the same way here):

* an empty value is ``(0, 0)`` and writes no bytes;
* a null is ``(d, 0)`` with ``d`` the null's def level in the version's own terms:
  ``1`` in 2.0 and ``1 << 16 = 65536`` in 2.1 and 2.2; a null's bytes in the Arrow
  array, if any, are not written;
* a non-null value's position is absolute even for the first blob of a file (0 when
  the column's first page is the first thing in the file).

What else pylance 14.0.2 does, and this writer with it:

* the key's presence decides, whatever its value (``"false"`` writes a blob column too);
* only ``large_binary`` can be a blob ("Expected LargeBinary array, got Binary"; utf8
  types: "Blob encoding is not available for field ..."): other types with the key are
  refused with :class:`~reference_impl.errors.InvalidInput`;
* version 2.2 writes blob v1 for this key as well (pylance's file writer refuses the
  ``lance.blob.v2`` extension type: "Blob v2 encoder expected prepared array layout").

Blob v2 (FILE-ENCODINGS §3.5) is what pylance 14.0.2's **dataset** writer makes of the
same key at 2.2: the manifest field turns into the ``lance.blob.v2`` extension struct
``{data: large_binary, uri: utf8}`` and the data file's column is a packed struct of
descriptors, one full-zip page with ``bits_per_offset 32``, ``layers [NULLABLE_ITEM]``
and ``variable_packed_struct{kind flat 8, position flat 64, size flat 64, blob_id flat 32,
blob_uri variable (u32 lengths)}``; each non-null row is ``u8 kind | u64 position | u64
size | u32 blob_id | u32 uri_len | uri``. For bytes stored in the data file (observed):
``kind 0``, ``blob_id 0``, empty uri, the blob 64-aligned ahead of the page as in v1; an
**empty** value has size 0 and the position the next blob would take (the aligned write
offset), and a **null** is a null row (def level 1) with no descriptor bytes.
:func:`blob_v2_page` builds that page from plain values (every blob inline);
:class:`BlobV2Page` from the rows a 2.2 dataset write planned
(:func:`reference_impl.table.blob.plan_column`: packed and dedicated blobs already sent to
sidecar files, external ones referenced), handed to :class:`~reference_impl.file.writer.LanceFileWriter`
as a field marked :data:`reference_impl.table.blob.PLAN_KEY`.

This writer only takes the key on a top-level field (a nested one is refused with
:class:`~reference_impl.errors.UnsupportedFeature`; the reader does not decode nested
blob columns either). Memory: each value is copied once, from the Arrow data buffer into
the output; positions come from one pass over the values.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from ...errors import InvalidInput, UnsupportedFeature
from ...proto import encodings_v2_0_pb2, encodings_v2_1_pb2
from .arrow_data import variable_parts
from .hints import child_fields
from .page import EncodedPage, pack_any

BLOB = "lance-encoding:blob"

#: the position a null row's descriptor carries (its def level as each version counts it)
NULL_POSITION = {"2.0": 1, "2.1": 1 << 16, "2.2": 1 << 16}

DESCRIPTOR_TYPE = pa.struct([pa.field("position", pa.uint64()), pa.field("size", pa.uint64())])


def is_blob_field(f: pa.Field) -> bool:
    """True when ``f``'s metadata has the ``lance-encoding:blob`` key (any value)."""
    md = f.metadata or {}
    return BLOB.encode() in md or BLOB in md


def check_blob_fields(schema: pa.Schema) -> None:
    """Refuse blob keys this writer (and pylance 14.0.2) cannot write, before any data."""
    for f in schema:
        if is_blob_field(f) and not pa.types.is_large_binary(f.type):
            raise InvalidInput(f"field {f.name!r}: {BLOB} needs a large_binary field, not {f.type}")
        stack = list(child_fields(f.type))
        while stack:
            child = stack.pop()
            if is_blob_field(child):
                raise UnsupportedFeature(
                    f"field {f.name!r}: nested blob field {child.name!r} is not written"
                )
            stack.extend(child_fields(child.type))


@dataclass
class BlobPage:
    """A blob column's page before placement: the values and where the page belongs.

    The file writer calls :meth:`place` with its output and padding function when the
    page's turn comes; only then are the absolute positions known.
    """

    values: pa.Array  # large_binary
    version: str
    priority: int = 0

    def place(self, out: bytearray, pad: Callable[[], None]) -> EncodedPage:
        """Append every non-empty, non-null value to ``out`` on a 64-byte boundary (``pad``
        aligns ``out``) and return the descriptor page."""
        values = self.values
        n = len(values)
        offsets, data = variable_parts(values)
        sizes = np.diff(offsets).astype(np.uint64)
        positions = np.zeros(n, np.uint64)
        if values.null_count:
            null = ~values.is_valid().to_numpy(zero_copy_only=False)
            sizes[null] = 0
            positions[null] = NULL_POSITION[self.version]
        raw = memoryview(data)
        for i in np.flatnonzero(sizes):
            pad()
            positions[i] = len(out)
            out += raw[offsets[i] : offsets[i + 1]]
        return descriptor_page(positions, sizes, self.version, self.priority)


def descriptor_page(
    positions: np.ndarray, sizes: np.ndarray, version: str, priority: int = 0
) -> EncodedPage:
    """The page of (position, size) descriptors for ``version`` (see the module docstring)."""
    n = len(positions)
    rows = pa.StructArray.from_arrays(
        [pa.array(positions, pa.uint64()), pa.array(sizes, pa.uint64())],
        fields=list(DESCRIPTOR_TYPE),
    )
    buffers: list[bytes] = []
    if version == "2.0":
        from .v2_0.packed_struct import packed_struct_node

        tree = packed_struct_node(rows, buffers, "blob descriptors")
        return EncodedPage(buffers, n, pack_any(tree), 0, tree)
    from .v2_1.mini_block import encode_mini_block_fast as encode_mini_block
    from .v2_1.packed_struct import PackedStructValues
    from .v2_1.repdef import Shredded

    sh = Shredded(
        rep=None,
        deff=None,
        layers=[encodings_v2_1_pb2.REPDEF_ALL_VALID_ITEM],
        values=rows,
        visible=np.ones(n, bool),
        num_rows=n,
        max_rep=0,
        max_visible_def=0,
    )
    buffers, inner = encode_mini_block(sh, PackedStructValues(rows, [64, 64]), version)
    layout = encodings_v2_1_pb2.PageLayout()
    layout.blob_layout.inner_layout.CopyFrom(inner)
    has_null = bool(np.any((sizes == 0) & (positions != 0)))
    layout.blob_layout.layers.append(
        encodings_v2_1_pb2.REPDEF_NULLABLE_ITEM
        if has_null
        else encodings_v2_1_pb2.REPDEF_ALL_VALID_ITEM
    )
    return EncodedPage(buffers, n, pack_any(layout), priority, layout)


#: the descriptor struct of a blob v2 column (FILE-ENCODINGS §3.5)
DESCRIPTOR_V2_TYPE = pa.struct(
    [
        pa.field("kind", pa.uint8(), nullable=False),
        pa.field("position", pa.uint64(), nullable=False),
        pa.field("size", pa.uint64(), nullable=False),
        pa.field("blob_id", pa.uint32(), nullable=False),
        pa.field("blob_uri", pa.utf8(), nullable=False),
    ]
)
KIND_INLINE = 0  # bytes stored in the data file itself


def blob_v2_page(
    values: pa.Array, out: bytearray, pad: Callable[[], None], priority: int = 0
) -> EncodedPage:
    """Append ``values``' bytes to ``out`` as for v1 and return the 2.2 blob v2 page
    (full-zip ``variable_packed_struct`` descriptors, see the module docstring)."""
    n = len(values)
    offsets, data = variable_parts(values)
    sizes = np.diff(offsets).astype(np.uint64)
    valid = None
    if values.null_count:
        valid = values.is_valid().to_numpy(zero_copy_only=False)
        sizes[~valid] = 0
    positions = np.zeros(n, np.uint64)
    raw = memoryview(data)
    for i in range(n):  # one step per row; each non-null row takes the aligned offset
        if valid is not None and not valid[i]:
            continue
        pad()
        positions[i] = len(out)
        if sizes[i]:
            out += raw[offsets[i] : offsets[i + 1]]
    mask = None if valid is None else pa.array(~valid)
    rows = pa.StructArray.from_arrays(
        [
            pa.array(np.full(n, KIND_INLINE, np.uint8)),
            pa.array(positions, pa.uint64()),
            pa.array(sizes, pa.uint64()),
            pa.array(np.zeros(n, np.uint32)),
            pa.array([""] * n, pa.utf8()),
        ],
        fields=list(DESCRIPTOR_V2_TYPE),
        mask=mask,
    )
    return _v2_descriptor_page(rows, priority)


def _v2_descriptor_page(rows: pa.StructArray, priority: int) -> EncodedPage:
    """The full-zip variable packed struct page of blob v2 descriptor ``rows``."""
    from .v2_1.packed_struct import encode_packed_struct_page
    from .v2_1.repdef import ITEM, shred

    n = len(rows)
    sh = shred(rows, ((ITEM, None),))
    buffers, layout = encode_packed_struct_page(sh, "2.2", "blob descriptors")
    return EncodedPage(buffers, n, pack_any(layout), priority, layout)


@dataclass
class BlobV2Page:
    """A planned blob v2 page before placement: rows of ``PLAN_TYPE`` (descriptor fields plus
    the ``inline`` bytes). :meth:`place` writes each inline value (empty ones included: they
    take the aligned offset as position) 64-aligned into the data file, then encodes the
    descriptors."""

    plan: pa.StructArray
    priority: int = 0

    def place(self, out: bytearray, pad: Callable[[], None]) -> EncodedPage:
        plan = self.plan
        valid = np.asarray(plan.is_valid().to_numpy(zero_copy_only=False), bool)
        kind = plan.field(0).to_numpy(zero_copy_only=False)
        positions = plan.field(1).to_numpy(zero_copy_only=False).astype(np.uint64)
        offsets, data = variable_parts(plan.field(5))
        raw = memoryview(data)
        for i in np.flatnonzero(valid & (kind == KIND_INLINE)):
            pad()
            positions[i] = len(out)
            out += raw[offsets[i] : offsets[i + 1]]
        rows = pa.StructArray.from_arrays(
            [
                plan.field(0),
                pa.array(positions, pa.uint64()),
                plan.field(2),
                plan.field(3),
                plan.field(4),
            ],
            fields=list(DESCRIPTOR_V2_TYPE),
            mask=pa.array(~valid) if not valid.all() else None,
        )
        return _v2_descriptor_page(rows, self.priority)


class BlobV2Encoder:
    """The column encoder of a planned blob v2 field: one column, the struct's id."""

    def __init__(self, f: pa.Field, ids, version: str) -> None:
        if version not in ("2.2",):
            raise InvalidInput(f"blob v2 needs file version 2.2 or later, not {version}")
        self.column_field_ids = [next(ids)]
        for _ in DESCRIPTOR_V2_TYPE:  # the detached descriptor fields (id -1) own no column
            next(ids)
        self.first_column = 0

    def encode(self, arr: pa.Array, first_row: int):
        return [(0, BlobV2Page(arr, first_row))]

    def finish(self, num_rows: int):
        return []


def blob_column_encoding() -> bytes:
    """2.0 ``ColumnMetadata.encoding`` bytes of a blob column: ``blob{inner{values{}}}``."""
    enc = encodings_v2_0_pb2.ColumnEncoding()
    enc.blob.inner.values.SetInParent()
    return pack_any(enc)
