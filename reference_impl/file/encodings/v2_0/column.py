"""Assembling 2.0 fields from their columns (FILE-ENCODINGS §1.1, §1.2, §2).

In 2.0 every field takes columns in the schema's pre-order walk:

* a primitive, string/binary, decimal, fixed_size_binary or ``fixed_size_list<primitive>``
  field takes **one** column, each page holding ``Page.length`` values of it;
* a ``struct`` takes a **header column** (one page, ``struct {}``, ``length`` = rows)
  followed by its children's columns;
* a ``list``/``large_list`` takes an **offsets column** (``List`` pages, ``length`` = lists)
  followed by the item field's columns, whose pages are cut independently;
* a blob field (``ColumnEncoding.blob``) takes one column of ``packed_struct``
  (u64 position, u64 size) descriptors pointing at absolute file ranges.

The earliest 2.0 writer (pylance 0.13, file version 0.3) stored a string or binary field as
a list of bytes: an offsets column of ``List`` pages followed by a column of u8 items.
Every later release still reads it, so a string/binary field whose pages are ``List``
nodes takes those **two** columns (:func:`_bytes_as_list`).

``Page.priority`` is always 0 in 2.0; a page's first value is the running sum of the
previous pages' lengths. Pages of length 0 carry no data and are skipped.
"""

from __future__ import annotations

import struct as _struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from reference_impl.errors import FormatError
from reference_impl.file.page import COLUMN_ENCODING_URL
from reference_impl.proto import encodings_v2_0_pb2 as enc_pb
from reference_impl.proto import file2_pb2

from . import packed_struct as packed_node
from ._common import RULE_BUFFER, RULE_NODE, RULE_OFFSETS, PageContext
from ._common import decode as decode_node
from .list import decode_list_page

ARRAY_ENCODING_URL = "/lance.encodings.ArrayEncoding"
#: bound on one page's value count: an all-null page has no buffer to check it against
MAX_PAGE_VALUES = (1 << 31) - 1


@dataclass
class Page:
    """One 2.0 page: its value count, its decoded encoding tree and where its buffers are."""

    length: int
    encoding: enc_pb.ArrayEncoding
    ctx: PageContext


@dataclass
class Column:
    """One column: its pages in row order and whether it is a blob column."""

    pages: list[Page]
    is_blob: bool = False


def unpack_any(raw: bytes, expected_url: str, message, *, path=None, offset=None, rule="FILE-050"):
    """Parse a serialized ``google.protobuf.Any`` holding ``message`` at ``expected_url``."""
    from google.protobuf import any_pb2
    from google.protobuf.message import DecodeError

    wrapper = any_pb2.Any()
    try:
        wrapper.ParseFromString(raw)
        if wrapper.type_url != expected_url:
            raise FormatError(
                f"encoding type {wrapper.type_url!r}, expected {expected_url!r}",
                rule=rule,
                path=path,
                offset=offset,
            )
        message.ParseFromString(wrapper.value)
    except DecodeError as exc:
        raise FormatError(
            f"encoding protobuf does not parse: {exc}", rule=rule, path=path, offset=offset
        ) from None
    return message


class LazyPageBuffers(Sequence):
    """A page's buffers, read on first use with one ranged read covering all of them.

    A 2.0 ``take`` decodes only the pages holding the requested rows, so page bytes are not
    read when the column is set up but the first time a decoder asks for one of them.
    """

    def __init__(self, offsets, sizes, read_range: Callable[[int, int], bytes]) -> None:
        self._spans = [(int(o), int(s)) for o, s in zip(offsets, sizes, strict=False)]
        self._read_range = read_range
        self._views = None

    def __len__(self) -> int:
        return len(self._spans)

    def _load(self) -> list:
        live = [(o, s) for o, s in self._spans if s]
        if not live:
            return [memoryview(b"") for _ in self._spans]
        lo = min(o for o, _ in live)
        hi = max(o + s for o, s in live)
        if hi - lo > MAX_PAGE_SPAN:  # far-apart buffers: read them one by one
            return [memoryview(self._read_range(o, s)) if s else memoryview(b"") for o, s in self._spans]
        block = memoryview(self._read_range(lo, hi - lo))
        return [block[o - lo:o - lo + s] if s else memoryview(b"") for o, s in self._spans]

    def __getitem__(self, i):
        if self._views is None:
            self._views = self._load()
        return self._views[i]


class LazyList(Sequence):
    """``n`` items produced by ``fetch(i)`` on first use (global buffers of a 2.0 file)."""

    def __init__(self, n: int, fetch: Callable[[int], bytes]) -> None:
        self._n, self._fetch, self._cache = n, fetch, {}

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, i):
        if not 0 <= i < self._n:
            raise IndexError(i)
        if i not in self._cache:
            self._cache[i] = memoryview(self._fetch(i))
        return self._cache[i]


#: page buffers further apart than this are read separately rather than as one span
MAX_PAGE_SPAN = 1 << 30


def column_from_metadata(
    meta: file2_pb2.ColumnMetadata,
    read_range: Callable[[int, int], bytes],
    *,
    path: str | None = None,
    file_buffers: Sequence = (),
) -> Column:
    """Build a :class:`Column` from a parsed ``ColumnMetadata`` and a ranged reader."""
    # always a direct Any of ColumnEncoding: pylance refuses a file whose column encoding is
    # missing or empty as it refuses one of another type (FILE-ENCODINGS §0)
    if meta.encoding.WhichOneof("location") != "direct":
        raise FormatError("2.0 column encodings must be direct", rule="FILE-050", path=path)
    col_enc = unpack_any(
        meta.encoding.direct.encoding, COLUMN_ENCODING_URL, enc_pb.ColumnEncoding(), path=path
    )
    is_blob = col_enc.WhichOneof("column_encoding") == "blob"
    column_buffers = [
        read_range(o, s) for o, s in zip(meta.buffer_offsets, meta.buffer_sizes, strict=False)
    ]
    pages = []
    for page in meta.pages:
        if len(page.buffer_offsets) != len(page.buffer_sizes):
            raise FormatError(
                "page buffer_offsets and buffer_sizes differ in length", rule=RULE_BUFFER, path=path
            )
        first = page.buffer_offsets[0] if page.buffer_offsets else None
        if page.encoding.WhichOneof("location") != "direct":
            raise FormatError(
                "2.0 page encodings must be direct", rule="FILE-050", path=path, offset=first
            )
        if page.length > MAX_PAGE_VALUES:
            raise FormatError(
                f"page claims {page.length} values, more than {MAX_PAGE_VALUES} allowed",
                rule="FILE-051",
                path=path,
                offset=first,
            )
        array = unpack_any(
            page.encoding.direct.encoding,
            ARRAY_ENCODING_URL,
            enc_pb.ArrayEncoding(),
            path=path,
            offset=first,
        )
        buffers = LazyPageBuffers(page.buffer_offsets, page.buffer_sizes, read_range)
        ctx = PageContext(
            buffers, column_buffers, file_buffers, path=path, offset=first, read_range=read_range
        )
        pages.append(Page(int(page.length), array, ctx))
    return Column(pages, is_blob)


def _packed_by_metadata(field: pa.Field) -> bool:
    md = field.metadata or {}
    return any(md.get(k, b"").lower() == b"true" for k in (b"lance-encoding:packed", b"packed"))


def count_columns(field: pa.Field, columns: Sequence[Column], index: int = 0) -> int:
    """How many columns ``field`` takes when it starts at ``columns[index]``, by the walk
    :func:`decode_field` follows, reading only page encodings (no page bytes)."""
    if index >= len(columns):
        raise FormatError(f"field {field.name!r} has no column {index}", rule="FILE-051")
    t = field.type
    if pa.types.is_struct(t):
        if _packed_by_metadata(field) or any(
            p.length and p.encoding.WhichOneof("array_encoding") != "struct"
            for p in columns[index].pages
        ):
            return 1  # a packed struct is a single leaf column
        n = 1
        for child in t:
            n += count_columns(child, columns, index + n)
        return n
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return 1 + count_columns(t.value_field, columns, index + 1)
    if _bytes_as_list(field, columns[index]):
        return 2
    return 1


def _is_bytes(t: pa.DataType) -> bool:
    return (pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t)
            or pa.types.is_large_binary(t))


def _bytes_as_list(field: pa.Field, column: Column) -> bool:
    """A string/binary field written as ``list<u8>`` (pylance 0.13's 2.0 writer): its pages
    are ``List`` nodes and the next column holds the bytes."""
    return _is_bytes(field.type) and any(
        p.length and p.encoding.WhichOneof("array_encoding") == "list" for p in column.pages)


def _decode_bytes_as_list(field: pa.Field, columns: Sequence[Column], index: int):
    """Decode a list-of-bytes field as the string/binary values it stands for."""
    t = field.type
    large = pa.types.is_large_string(t) or pa.types.is_large_binary(t)
    as_list = pa.field(field.name, (pa.large_list if large else pa.list_)(pa.uint8()))
    arr, nxt = _list(as_list, columns, index)
    raw = pa.large_binary() if large else pa.binary()
    validity, offsets = arr.buffers()[0], arr.buffers()[1]
    values = arr.values
    if values.offset:
        values = pa.concat_arrays([values])  # a zero-offset copy, so its buffer starts at 0
    out = pa.Array.from_buffers(raw, len(arr), [validity, offsets, values.buffers()[1]],
                                offset=arr.offset)
    return (out.cast(t) if raw != t else out), nxt


def field_starts(schema: pa.Schema, columns: Sequence[Column]) -> tuple[list[int], int]:
    """The first column of every top-level field of ``schema`` and the number of columns the
    schema takes (FILE-051 when a field runs out of columns)."""
    starts, index = [], 0
    for f in schema:
        starts.append(index)
        index += count_columns(f, columns, index)
    return starts, index


def decode_field(
    field: pa.Field, columns: Sequence[Column], index: int = 0
) -> tuple[pa.Array, int]:
    """Decode ``field`` starting at ``columns[index]``; return the array and the next index."""
    if index >= len(columns):
        raise FormatError(f"field {field.name!r} has no column {index}", rule="FILE-051")
    t = field.type
    column = columns[index]
    if pa.types.is_struct(t):
        rows = sum(p.length for p in column.pages)
        if _packed_by_metadata(field):
            # spec 003: packed when the field metadata says "packed" = "true"; this also
            # covers a column with no pages (an empty file), where no page can tell
            return _leaf(field, column), index + 1
        for p in column.pages:
            if p.length and p.encoding.WhichOneof("array_encoding") != "struct":
                # a packed struct is a single leaf column
                return _leaf(field, column), index + 1
        nxt, children = index + 1, []
        for child in t:
            arr, nxt = decode_field(child, columns, nxt)
            if len(arr) != rows:
                raise FormatError(
                    f"struct child {child.name!r} has {len(arr)} rows, header says {rows}",
                    rule="FILE-051",
                )
            children.append(arr)
        if not children:  # a struct without children: its header column gives the rows
            return pa.Array.from_buffers(t, rows, [None], children=[]), nxt
        return pa.StructArray.from_arrays(children, fields=list(t)), nxt
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return _list(field, columns, index)
    if _bytes_as_list(field, column):
        return _decode_bytes_as_list(field, columns, index)
    return _leaf(field, column), index + 1


def _leaf(field: pa.Field, column: Column) -> pa.Array:
    """A leaf column's pages, decoded independently (on the decode threads) and joined."""
    from reference_impl.file.parallel import map_ordered

    def one(page: Page) -> pa.Array:
        if column.is_blob:
            return _blob_page(page, field.type)
        return decode_node(page.encoding, page.ctx, page.length, field.type)

    parts = map_ordered(one, [p for p in column.pages if p.length])
    if not parts:
        return pa.array([], field.type)
    return pa.concat_arrays(parts) if len(parts) > 1 else parts[0]


def blob_descriptors(page: Page) -> np.ndarray:
    """A blob page's rows: ``(n, 2)`` u64 of (position, size), as stored."""
    node = page.encoding
    if node.WhichOneof("array_encoding") != "packed_struct":
        raise page.ctx.error("blob pages must be packed_struct descriptors", RULE_NODE)
    mat, widths = packed_node.rows_matrix(node.packed_struct, page.ctx, page.length)
    if widths != [8, 8]:
        raise page.ctx.error("blob descriptors must be (u64 position, u64 size)", RULE_NODE)
    return np.ascontiguousarray(mat).view("<u8").reshape(page.length, 2)


def _blob_page(page: Page, data_type: pa.DataType) -> pa.Array:
    """A blob page: (u64 position, u64 size) rows pointing at absolute file ranges; a row of
    size 0 is empty when its position is 0 and null otherwise."""
    desc = blob_descriptors(page)
    # (position, 0) with position != 0 is a null (the position holds its def level); (0, 0) is empty
    is_null = (desc[:, 1] == 0) & (desc[:, 0] != 0)
    try:
        pieces = [page.ctx.read_range(int(pos), int(size)) for pos, size in desc[desc[:, 1] > 0]]
    except FormatError as exc:  # a descriptor naming bytes outside the file
        raise page.ctx.error(f"blob descriptor range: {exc.message}", RULE_BUFFER) from None
    offsets = np.concatenate([[0], np.cumsum(desc[:, 1].astype(np.int64))])
    validity = (
        pa.py_buffer(np.packbits(~is_null, bitorder="little").tobytes()) if is_null.any() else None
    )
    arr = pa.Array.from_buffers(
        pa.large_binary(),
        page.length,
        [validity, pa.py_buffer(offsets.tobytes()), pa.py_buffer(b"".join(pieces))],
    )
    return arr.cast(data_type)


def _list(field: pa.Field, columns: Sequence[Column], index: int) -> tuple[pa.Array, int]:
    t = field.type
    list_pages = []
    for page in columns[index].pages:
        if page.length == 0:
            continue
        if page.encoding.WhichOneof("array_encoding") != "list":
            raise page.ctx.error("a list field's first column must hold List pages", RULE_NODE)
        list_pages.append(decode_list_page(page.encoding.list, page.ctx, page.length))
    items, nxt = decode_field(t.value_field, columns, index + 1)
    ends, nulls, base = [np.zeros(1, np.int64)], [], 0
    for lp in list_pages:
        ends.append(lp.ends.astype(np.int64) + base)
        nulls.append(lp.is_null)
        base += lp.num_items
    if base != len(items):
        raise FormatError(
            f"list offsets reference {base} items, item column holds {len(items)}",
            rule=RULE_OFFSETS,
        )
    offsets = np.concatenate(ends)
    is_null = np.concatenate(nulls) if nulls else np.zeros(0, bool)
    large = pa.types.is_large_list(t)
    if not large and base >= 2**31:
        raise FormatError("list items exceed 32-bit offsets", rule=RULE_OFFSETS)
    offsets_arr = pa.array(offsets, pa.int64() if large else pa.int32())
    cls = pa.LargeListArray if large else pa.ListArray
    mask = pa.array(is_null) if is_null.any() else None
    return cls.from_arrays(offsets_arr, items, type=t, mask=mask), nxt


def decode_columns(schema: pa.Schema, columns: Sequence[Column]) -> pa.Table:
    """Decode every field of ``schema`` from ``columns`` (pre-order) into a table."""
    arrays, index = [], 0
    try:
        for field in schema:
            arr, index = decode_field(field, columns, index)
            arrays.append(arr)
    except (pa.ArrowException, ValueError, OverflowError) as exc:
        if isinstance(exc, FormatError):
            raise
        raise FormatError(f"pages do not form valid Arrow data: {exc}", rule=RULE_NODE) from None
    if index != len(columns):
        raise FormatError(f"schema uses {index} columns, file has {len(columns)}", rule="FILE-051")
    return pa.Table.from_arrays(arrays, schema=schema)


# -- a minimal footer walk, used when the shared container reader is not available -----------

FOOTER = _struct.Struct("<QQQIIHH4s")


def read_columns(
    data: bytes | memoryview, *, path: str | None = None
) -> tuple[list[Column], int, int]:
    """Parse a 2.x file's footer and column metadata from its bytes.

    Returns the columns and the footer's (major, minor) version.
    """
    data = memoryview(data)
    size = len(data)
    if size < FOOTER.size:
        raise FormatError(
            "file shorter than the 40-byte footer", rule="FILE-052", path=path, offset=0
        )
    cm0, cmo, gbo, n_global, n_cols, major, minor, magic = FOOTER.unpack_from(
        data, size - FOOTER.size
    )
    if magic != b"LANC":
        raise FormatError("footer magic is not LANC", rule="FILE-052", path=path, offset=size - 4)
    if cmo + 16 * n_cols > size - FOOTER.size or gbo + 16 * n_global > size - FOOTER.size:
        raise FormatError(
            "offset tables run past the footer",
            rule="FILE-052",
            path=path,
            offset=size - FOOTER.size,
        )

    def read_range(pos: int, length: int) -> bytes:
        if pos + length > size:
            raise FormatError(
                f"range {pos}+{length} past end of file ({size})",
                rule=RULE_BUFFER,
                path=path,
                offset=pos,
            )
        return bytes(data[pos : pos + length])

    gbufs = []
    for i in range(n_global):
        pos, length = _struct.unpack_from("<QQ", data, gbo + 16 * i)
        gbufs.append(memoryview(read_range(pos, length)))
    columns = []
    for i in range(n_cols):
        pos, length = _struct.unpack_from("<QQ", data, cmo + 16 * i)
        meta = file2_pb2.ColumnMetadata()
        try:
            meta.ParseFromString(read_range(pos, length))
        except Exception as exc:
            raise FormatError(
                f"column metadata {i} does not parse: {exc}", rule="FILE-052", path=path, offset=pos
            ) from None
        columns.append(column_from_metadata(meta, read_range, path=path, file_buffers=gbufs))
    return columns, major, minor


def read_file_v2_0(
    data: bytes | memoryview, schema: pa.Schema, *, path: str | None = None
) -> pa.Table:
    """Read a whole 2.0 file (footer 0.3 or 2.0) given its bytes and Arrow schema."""
    columns, major, minor = read_columns(data, path=path)
    if (major, minor) not in ((0, 3), (2, 0)):
        raise FormatError(f"file version {major}.{minor} is not 2.0", rule="FILE-052", path=path)
    return decode_columns(schema, columns)


def file_schema(data: bytes | memoryview, *, path: str | None = None) -> pa.Schema:
    """The Arrow schema of a 2.x file, from the ``FileDescriptor`` in global buffer 0."""
    from reference_impl.proto import file_pb2
    from reference_impl.table.schema import fields_to_arrow

    data = memoryview(data)
    size = len(data)
    if size < FOOTER.size:
        raise FormatError(
            "file shorter than the 40-byte footer", rule="FILE-052", path=path, offset=0
        )
    _, _, gbo, n_global, _, _, _, magic = FOOTER.unpack_from(data, size - FOOTER.size)
    if magic != b"LANC" or n_global < 1 or gbo + 16 > size:
        raise FormatError(
            "no global buffer 0 (FileDescriptor)",
            rule="FILE-052",
            path=path,
            offset=size - FOOTER.size,
        )
    pos, length = _struct.unpack_from("<QQ", data, gbo)
    if pos + length > size:
        raise FormatError(
            "global buffer 0 runs past the file", rule="FILE-052", path=path, offset=gbo
        )
    desc = file_pb2.FileDescriptor()
    try:
        desc.ParseFromString(bytes(data[pos : pos + length]))
    except Exception as exc:
        raise FormatError(
            f"FileDescriptor does not parse: {exc}", rule="FILE-052", path=path, offset=pos
        ) from None
    return fields_to_arrow(list(desc.schema.fields))


def strip_field_ids(schema: pa.Schema) -> pa.Schema:
    """``schema`` without the ``lance:field_id`` field metadata (as pylance returns it)."""

    def clean(f: pa.Field) -> pa.Field:
        t = f.type
        if pa.types.is_struct(t):
            t = pa.struct([clean(c) for c in t])
        elif pa.types.is_list(t):
            t = pa.list_(clean(t.value_field))
        elif pa.types.is_large_list(t):
            t = pa.large_list(clean(t.value_field))
        elif pa.types.is_fixed_size_list(t):
            t = pa.list_(clean(t.value_field), t.list_size)
        meta = {k: v for k, v in (f.metadata or {}).items() if k != b"lance:field_id"}
        return pa.field(f.name, t, f.nullable, metadata=meta or None)

    return pa.schema([clean(f) for f in schema], metadata=schema.metadata)


# -- the shared reader's decoder hook ----------------------------------------------------------


def container_columns(container) -> list[Column]:
    """The container's columns as :class:`Column` objects, built once (page bytes stay unread
    until a decoder needs them) and kept on the container."""
    columns = getattr(container, "_v2_0_columns", None)
    if columns is None:
        gbufs = LazyList(container.num_global_buffers, container.read_global_buffer)
        columns = [
            column_from_metadata(m, container.read_buffer, path=container.path, file_buffers=gbufs)
            for m in container.columns
        ]
        try:
            container._v2_0_columns = columns
        except (AttributeError, TypeError):  # a frozen or slotted container: no cache
            pass
    return columns


def decode_column_2_0(container, column_index: int, field: pa.Field, page_range=None):
    """``reference_impl.file.reader`` decoder for 2.0 files: ``(array, next_column_index)``.

    ``container`` is a ``FileContainer``; its columns are parsed into :class:`Column`
    objects once and kept on the container. ``page_range`` is ignored: the whole field
    is decoded and the reader slices it.
    """
    columns = container_columns(container)
    try:
        return decode_field(field, columns, column_index)
    except (pa.ArrowException, ValueError, OverflowError) as exc:
        if isinstance(exc, FormatError):
            raise
        raise FormatError(
            f"pages do not form valid Arrow data: {exc}", rule=RULE_NODE, path=container.path
        ) from None
