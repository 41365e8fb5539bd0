"""Writing Lance data files, versions 2.0, 2.1, 2.2 and 2.3 (spec 003, "File Structure").

A file is laid out front to back as::

    data buffers           every page buffer, each starting on a 64-byte boundary;
                           the gaps are filled with byte 0x48 ('H')
    global buffer 0        lance.file.FileDescriptor {1 schema, 2 length}, 64-aligned
    global buffers 1..     optional (``global_buffers``), each 64-aligned
    column metadata        one lance.file.v2.ColumnMetadata protobuf per column, back to
                           back, no length prefix and no alignment
    CMO table              per column: u64 position, u64 size of its metadata
    GBO table              per global buffer: u64 position, u64 size
    footer (40 bytes)      u64 column-meta-0 offset | u64 CMO offset | u64 GBO offset |
                           u32 global buffers | u32 columns | u16 major | u16 minor | "LANC"

All integers are little-endian. The footer of a 2.0 file says ``0.3``; 2.1, 2.2 and 2.3 say
``2.1``, ``2.2`` and ``2.3``. Every column's ``ColumnMetadata.encoding`` is a direct encoding
holding ``Any(/lance.encodings.ColumnEncoding, values {})``; page encodings hold an
``ArrayEncoding`` (2.0), a ``PageLayout`` (2.1, 2.2) or a ``PlanarLayout`` (2.3: the 2.2
page's buffers, its layout regrouped, :mod:`.encode.v2_3.planar`), see :mod:`.encode`.

Columns (``FACTS.md`` "Fragments, data files"): in 2.0 every field has a column, list and
struct parents included, in pre-order; in 2.1+ only leaf fields have columns. The
``WrittenFile`` returned by :func:`write_lance_file` carries what a ``DataFile`` needs:
the field ids of the columns and their indices.

Streaming: :class:`LanceFileWriter` keeps at most one pending page worth of Arrow data
per top-level field (bounded by ``max_page_bytes`` / ``max_rows_per_page``); once a field
goes over, that field alone is encoded and its buffers are appended to the output, so
pages of different columns interleave in the data region as in pylance's files. The finished bytes
are handed to the object store in one ``put`` (the store protocol has no streaming put).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute  # noqa: F401  (pa.compute)

from ..errors import InvalidInput
from ..io.base import ObjectStore
from ..proto import encodings_v2_0_pb2, file2_pb2, file_pb2
from .encode.arrow_data import (
    check_empty_structs,
    check_struct_nulls_2_0,
    check_version_types,
    check_writable,
    holds_empty_struct,
    is_variable_width,
)
from .encode.blob import (
    BlobPage,
    BlobV2Encoder,
    BlobV2Page,
    blob_column_encoding,
    check_blob_fields,
)
from .encode.hints import check_schema_hints
from .encode.page import EncodedPage, pack_any
from .parallel import map_ordered

MAGIC = b"LANC"
FOOTER_FORMAT = "<QQQIIHH"
FOOTER_SIZE = struct.calcsize(FOOTER_FORMAT) + len(MAGIC)  # 40
ALIGNMENT = 64
FILLER = b"\x48"

# footer (major, minor) per requested version; 2.0 files say 0.3 (FACTS.md §A)
VERSIONS = {"2.0": (0, 3), "2.1": (2, 1), "2.2": (2, 2), "2.3": (2, 3)}
# what DataFile.file_major_version / file_minor_version say (pylance 14.0.2 writes 2/0 for
# a 2.0 file whose footer says 0.3)
DATA_FILE_VERSIONS = {"2.0": (2, 0), "2.1": (2, 1), "2.2": (2, 2), "2.3": (2, 3)}

# Page flushing: pylance accumulates about 8 MiB of Arrow data per column (FILE-ENCODINGS §1.2).
DEFAULT_MAX_PAGE_BYTES = 8 * 1024 * 1024
DEFAULT_MAX_ROWS_PER_PAGE = 1 << 20


@dataclass(frozen=True)
class WrittenFile:
    """What a ``DataFile`` protobuf needs to reference the written file.

    ``major``/``minor`` are the ``DataFile.file_major_version``/``file_minor_version``
    values (2.0 for a 2.0 file); ``footer_version`` is what the file's footer says
    ((0, 3) for 2.0).
    """

    key: str
    size: int
    num_rows: int
    major: int
    minor: int
    fields: list[int] = field(default_factory=list)
    column_indices: list[int] = field(default_factory=list)
    footer_version: tuple[int, int] = (0, 0)


# ----------------------------------------------------------------------------- schema


def schema_fields_for(schema: pa.Schema) -> list[file_pb2.Field]:
    """Field list (with depth-first ids) for ``schema``, as the table format assigns them
    (:func:`reference_impl.table.schema.arrow_to_fields`)."""
    from ..table.schema import arrow_to_fields

    return list(arrow_to_fields(schema))


def _normalise_type(t: pa.DataType) -> pa.DataType:
    """The Arrow type a column of type ``t`` is encoded as (documented normalisation, as
    pylance 14.0.2 stores them; the schema keeps the logical type and extension name):

    * an extension type: its storage (``arrow.json`` text: ``lance.json`` binary JSON);
    * ``string_view`` / ``binary_view``: ``string`` / ``binary`` (pylance reads them back so);
    * a map: the list of ``entries`` structs it is (2.2+; :func:`check_writable_map`);
    * dictionary arrays other than :func:`keeps_dictionary` ones: their value type.
    """
    if isinstance(t, pa.BaseExtensionType):
        if t.extension_name in ("arrow.json", "lance.json"):
            return pa.large_binary()
        return _normalise_type(t.storage_type)
    if t == pa.string_view():
        return pa.string()
    if t == pa.binary_view():
        return pa.binary()
    if keeps_dictionary(t):
        return t
    if pa.types.is_dictionary(t):
        return _normalise_type(t.value_type)
    if pa.types.is_map(t):
        entries = pa.struct([t.key_field.with_type(_normalise_type(t.key_type)),
                             t.item_field.with_type(_normalise_type(t.item_type))])
        return pa.list_(pa.field("entries", entries, nullable=False))
    if pa.types.is_fixed_size_list(t):
        return pa.list_(
            pa.field(t.value_field.name, _normalise_type(t.value_type), t.value_field.nullable),
            t.list_size,
        )
    if pa.types.is_large_list(t):
        return pa.large_list(t.value_field.with_type(_normalise_type(t.value_type)))
    if pa.types.is_list(t):
        return pa.list_(t.value_field.with_type(_normalise_type(t.value_type)))
    if pa.types.is_struct(t):
        return pa.struct(
            [t.field(i).with_type(_normalise_type(t.field(i).type)) for i in range(t.num_fields)]
        )
    return t


def normalise_array(arr: pa.Array, t: pa.DataType) -> pa.Array:
    """``arr`` as an array of its :func:`_normalise_type` ``t``: extension arrays as their
    storage (JSON text as binary JSON), views as plain strings, maps as lists of entries,
    at any depth; a plain cast where nothing of that kind is inside."""
    if arr.type == t:
        return arr
    src = arr.type
    if isinstance(src, pa.BaseExtensionType):
        if src.extension_name in ("arrow.json", "lance.json"):
            from ..table.jsonb import encode_array

            return encode_array(arr)
        return normalise_array(arr.storage, t)
    if not _holds_special(src):
        return arr.cast(t)
    mask = arr.is_null() if arr.null_count else None
    if pa.types.is_map(src):
        start, end = arr.offsets[0].as_py(), arr.offsets[-1].as_py()
        entries_t = t.value_type
        keys = normalise_array(arr.keys.slice(start, end - start), entries_t.field(0).type)
        items = normalise_array(arr.items.slice(start, end - start), entries_t.field(1).type)
        entries = pa.StructArray.from_arrays([keys, items], fields=list(entries_t))
        offsets = pa.compute.subtract(arr.offsets, pa.scalar(start, arr.offsets.type))
        return pa.ListArray.from_arrays(offsets, entries, type=t, mask=mask)
    if pa.types.is_struct(src):
        kids = [normalise_array(arr.field(i), t.field(i).type) for i in range(src.num_fields)]
        return pa.StructArray.from_arrays(kids, fields=list(t), mask=mask)
    if pa.types.is_fixed_size_list(src):
        size = src.list_size
        values = normalise_array(arr.values.slice(arr.offset * size, len(arr) * size),
                                 t.value_type)
        return pa.FixedSizeListArray.from_arrays(values, type=t, mask=mask)
    if pa.types.is_list(src) or pa.types.is_large_list(src):
        start, end = arr.offsets[0].as_py(), arr.offsets[-1].as_py()
        values = normalise_array(arr.values.slice(start, end - start), t.value_type)
        offsets = pa.compute.subtract(arr.offsets, pa.scalar(start, arr.offsets.type))
        cls = pa.LargeListArray if pa.types.is_large_list(src) else pa.ListArray
        return cls.from_arrays(offsets, values, type=t, mask=mask)
    return arr.cast(t)


def _holds_special(t: pa.DataType) -> bool:
    """Whether ``t`` is or holds an extension type, a map or a view (what a cast cannot turn
    into its written form)."""
    if isinstance(t, pa.BaseExtensionType) or pa.types.is_map(t):
        return True
    if t in (pa.string_view(), pa.binary_view()):
        return True
    if pa.types.is_dictionary(t):
        return False
    return any(_holds_special(t.field(i).type) for i in range(t.num_fields))


def keeps_dictionary(t: pa.DataType) -> bool:
    """An Arrow ``dictionary<integer, V>`` field (top level, in a struct or a list) whose
    values ``V`` are strings, binary or fixed-width numbers is written as a dictionary column
    (2.0 ``dictionary`` pages, 2.1+ mini-block dictionaries), as pylance 14.0.2 writes it;
    other dictionary types are written decoded."""
    if not (pa.types.is_dictionary(t) and pa.types.is_integer(t.index_type)):
        return False
    v = t.value_type
    return is_variable_width(v) or pa.types.is_integer(v) or pa.types.is_floating(v)


def normalise_schema(schema: pa.Schema) -> pa.Schema:
    """The schema actually written (:func:`_normalise_type` of every field)."""
    return pa.schema(
        [f.with_type(_normalise_type(f.type)) for f in schema], metadata=schema.metadata
    )


# ----------------------------------------------------------------------------- writer


class LanceFileWriter:
    """Streams record batches into one Lance data file.

    ``write_batch`` buffers each top-level field's data until that field exceeds
    ``max_page_bytes`` (Arrow memory) or ``max_rows_per_page`` rows, then encodes it into
    pages whose buffers are appended to the file at once. ``finish`` flushes the rest,
    writes global buffer 0, the column metadata, the offset tables and the footer, and
    stores the file under ``key``.
    """

    def __init__(
        self,
        store: ObjectStore,
        key: str,
        schema: pa.Schema,
        *,
        version: str = "2.1",
        schema_fields: Sequence[file_pb2.Field] | None = None,
        max_page_bytes: int = DEFAULT_MAX_PAGE_BYTES,
        max_rows_per_page: int = DEFAULT_MAX_ROWS_PER_PAGE,
        global_buffers: Sequence[bytes] = (),
    ) -> None:
        if version not in VERSIONS:
            raise InvalidInput(
                f"unsupported file version {version!r}; expected one of {sorted(VERSIONS)}"
            )
        if max_page_bytes <= 0 or max_rows_per_page <= 0:
            raise InvalidInput("max_page_bytes and max_rows_per_page must be positive")
        self.store = store
        self.key = key
        self.version = version
        self.major, self.minor = VERSIONS[version]
        self.input_schema = schema
        for f in schema:
            check_version_types(f.type, version, f.name)
        self.schema = normalise_schema(schema)
        for f in self.schema:
            check_writable(f.type, f.name)
        check_schema_hints(self.schema)  # lance-encoding:* field metadata (encode/hints.py)
        check_blob_fields(self.schema)  # lance-encoding:blob (encode/blob.py)
        self.fields = (
            list(schema_fields) if schema_fields is not None else schema_fields_for(schema)
        )
        self.max_page_bytes = max_page_bytes
        self.max_rows_per_page = max_rows_per_page
        # global buffers 1.. after the FileDescriptor (index files keep protobufs there and
        # name them by position in their schema metadata, e.g. ``lance:ivf``)
        self.extra_global_buffers = [bytes(b) for b in global_buffers]
        self._out = _Output()
        self._num_rows = 0
        self._finished = False
        self._encoders, self._column_field_ids = self._make_encoders()
        self._pages: list[list[file2_pb2.ColumnMetadata.Page]] = [
            [] for _ in self._column_field_ids
        ]
        # per top-level field: pending arrays, their rows and Arrow bytes, rows already paged
        self._pending: list[list[pa.Array]] = [[] for _ in self.schema]
        self._pending_rows = [0] * len(self.schema)
        self._pending_bytes = [0] * len(self.schema)
        self._field_rows = [0] * len(self.schema)

    # -- column plan ---------------------------------------------------------------
    def _make_encoders(self):
        """One field encoder per top-level field; field ids are consumed in pre-order."""
        if len(self.fields) != self._count_fields(self.schema):
            raise InvalidInput(
                f"schema_fields has {len(self.fields)} fields, the schema {self._count_fields(self.schema)} (pre-order)"
            )
        ids = iter([f.id for f in self.fields])
        encoders = []
        column_field_ids: list[int] = []
        if self.version == "2.0":
            from .encode.v2_0.column import FieldEncoder20 as Encoder
        else:
            from .encode.v2_1.column import FieldEncoder21 as Encoder
        from ..table.blob import is_plan_field

        for f in self.schema:
            # a planned blob v2 column (table/blob.py): one column, descriptors
            enc = (
                BlobV2Encoder(f, ids, self.version)
                if is_plan_field(f)
                else Encoder(f, ids, self.version)
            )
            enc.first_column = len(column_field_ids)
            column_field_ids.extend(enc.column_field_ids)
            encoders.append(enc)
        return encoders, column_field_ids

    @staticmethod
    def _count_fields(schema) -> int:
        from ..table.blob import DESCRIPTOR_FIELDS, is_plan_field

        def count(t: pa.DataType) -> int:
            if pa.types.is_list(t) or pa.types.is_large_list(t):
                return 1 + count(t.value_type)
            if pa.types.is_fixed_size_list(t) and (
                pa.types.is_struct(t.value_type) or pa.types.is_list(t.value_type)
                or pa.types.is_large_list(t.value_type)
            ):
                return 1 + count(t.value_type)  # fixed_size_list:struct:N has its item
            if pa.types.is_struct(t):
                return 1 + sum(count(t.field(i).type) for i in range(t.num_fields))
            return 1

        # a planned blob v2 field is the struct plus its five detached descriptor fields
        return sum(
            1 + len(DESCRIPTOR_FIELDS) if is_plan_field(f) else count(f.type) for f in schema
        )

    # -- streaming -----------------------------------------------------------------
    def write_batch(self, batch: pa.RecordBatch | pa.Table) -> None:
        if self._finished:
            raise InvalidInput("writer already finished")
        if isinstance(batch, pa.Table):
            for b in batch.to_batches():
                self.write_batch(b)
            return
        if batch.schema.names != self.input_schema.names:
            raise InvalidInput(
                f"batch columns {batch.schema.names} differ from the schema {self.input_schema.names}"
            )
        if batch.num_rows == 0:
            return
        due = []
        for i, f in enumerate(self.schema):
            arr = batch.column(i)
            if self.version != "2.0" and holds_empty_struct(arr.type):
                check_empty_structs(arr, f.name)
            if self.version == "2.0" and isinstance(arr, pa.ExtensionArray):
                check_struct_nulls_2_0(arr, f.name)
            if arr.type != f.type:
                arr = normalise_array(arr, f.type)
            self._pending[i].append(arr)
            self._pending_rows[i] += len(arr)
            self._pending_bytes[i] += arr.nbytes
            if (
                self._pending_bytes[i] > self.max_page_bytes
                or self._pending_rows[i] >= self.max_rows_per_page
            ):
                due.append(i)
        self._flush_fields(due)
        self._num_rows += batch.num_rows

    def _flush_field(self, i: int) -> None:
        """Encode field ``i``'s pending rows into pages and append their buffers."""
        self._flush_fields([i])

    def _flush_fields(self, indices: list[int]) -> None:
        """Encode the pending rows of fields ``indices`` (independent of each other, so on the
        decode threads of :mod:`.parallel`), then append their pages in ``indices`` order:
        the file's bytes do not depend on the threads."""
        for pages in map_ordered(self._encode_pending, indices):
            for column, page in pages:
                self._add_page(column, page)

    def _encode_pending(self, i: int) -> list:
        """``(column, page)`` of field ``i``'s pending rows; touches only field ``i``'s state."""
        if self._pending_rows[i] == 0:
            return []
        enc = self._encoders[i]
        arr = (
            pa.concat_arrays(self._pending[i]) if len(self._pending[i]) > 1 else self._pending[i][0]
        )
        first_row = self._field_rows[i]
        # one flush can hold a single huge batch: cut it into pages of about max_page_bytes
        bytes_per_row = max(arr.nbytes / max(len(arr), 1), 1.0)
        rows_per_page = max(
            1, min(self.max_rows_per_page, int(self.max_page_bytes // bytes_per_row))
        )
        starts = list(range(0, len(arr), rows_per_page))

        def encode_part(start: int) -> list:
            return enc.encode(arr.slice(start, rows_per_page), first_row + start)

        # an encoder whose encode() keeps no state between calls may take the runs at once
        # (on the decode threads; the pages are still appended in row order)
        if getattr(enc, "stateless", False):
            parts = map_ordered(encode_part, starts)
        else:
            parts = [encode_part(start) for start in starts]
        pages = []
        for part_pages in parts:
            for col_offset, page in part_pages:
                pages.append((enc.first_column + col_offset, page))
        self._field_rows[i] += len(arr)
        self._pending[i] = []
        self._pending_rows[i] = 0
        self._pending_bytes[i] = 0
        return pages

    def _pad(self) -> None:
        rem = len(self._out) % ALIGNMENT
        if rem:
            self._out += FILLER * (ALIGNMENT - rem)

    def _add_page(self, column: int, page: EncodedPage | BlobPage) -> None:
        if isinstance(page, (BlobPage, BlobV2Page)):  # blob bytes go ahead of their descriptor page
            page = page.place(self._out, self._pad)
        pb = file2_pb2.ColumnMetadata.Page(length=page.length, priority=page.priority)
        for buf in page.buffers:
            self._pad()
            pb.buffer_offsets.append(len(self._out))
            pb.buffer_sizes.append(memoryview(buf).nbytes)
            self._out += buf
        pb.encoding.direct.encoding = page.encoding
        self._pages[column].append(pb)

    def finish(self) -> WrittenFile:
        """Write everything after the data buffers and store the file."""
        if self._finished:
            raise InvalidInput("writer already finished")
        # blob v2 columns first, as pylance: their inline bytes open the file
        blob_first = sorted(
            range(len(self._encoders)),
            key=lambda i: not isinstance(self._encoders[i], BlobV2Encoder),
        )
        self._flush_fields(blob_first)
        for enc in self._encoders:
            for col_offset, page in enc.finish(self._num_rows):
                self._add_page(enc.first_column + col_offset, page)
        self._finished = True

        descriptor = file_pb2.FileDescriptor(length=self._num_rows)
        descriptor.schema.SetInParent()
        descriptor.schema.fields.extend(self.fields)
        for k, v in (self.input_schema.metadata or {}).items():
            descriptor.schema.metadata[k.decode() if isinstance(k, bytes) else k] = v
        if self._out:
            self._pad()
        gb0_pos = len(self._out)
        # deterministic: the schema metadata is a protobuf map, whose order would otherwise
        # vary from run to run (the same table would be written as other bytes)
        gb0 = descriptor.SerializeToString(deterministic=True)
        self._out += gb0
        gbs = [(gb0_pos, len(gb0))]
        for extra in self.extra_global_buffers:
            self._pad()
            gbs.append((len(self._out), len(extra)))
            self._out += extra

        column_encoding = encodings_v2_0_pb2.ColumnEncoding()
        column_encoding.values.SetInParent()
        column_encoding_bytes = pack_any(column_encoding)
        blob_columns = {
            enc.first_column + off
            for enc in self._encoders
            for off in getattr(enc, "blob_columns", ())
        }
        cmo: list[tuple[int, int]] = []
        column_meta_start = len(self._out)
        for column, pages in enumerate(self._pages):
            meta = file2_pb2.ColumnMetadata()
            meta.encoding.direct.encoding = (
                blob_column_encoding() if column in blob_columns else column_encoding_bytes
            )
            meta.pages.extend(pages)
            blob = meta.SerializeToString()
            cmo.append((len(self._out), len(blob)))
            self._out += blob
        cmo_pos = len(self._out)
        for pos, size in cmo:
            self._out += struct.pack("<QQ", pos, size)
        gbo_pos = len(self._out)
        for pos, size in gbs:
            self._out += struct.pack("<QQ", pos, size)
        self._out += struct.pack(
            FOOTER_FORMAT,
            column_meta_start,
            cmo_pos,
            gbo_pos,
            len(gbs),
            len(self._pages),
            self.major,
            self.minor,
        )
        self._out += MAGIC
        size = len(self._out)
        put_pieces = getattr(self.store, "put_pieces", None)
        if put_pieces is not None:
            put_pieces(self.key, self._out.pieces())
        else:  # a duck-typed store with put only
            self.store.put(self.key, b"".join(self._out.pieces()))
        self._out = _Output()
        return WrittenFile(
            key=self.key,
            size=size,
            num_rows=self._num_rows,
            major=DATA_FILE_VERSIONS[self.version][0],
            minor=DATA_FILE_VERSIONS[self.version][1],
            footer_version=(self.major, self.minor),
            fields=list(self._column_field_ids),
            column_indices=list(range(len(self._column_field_ids))),
        )


class _Output:
    """The bytes of the file being written, kept as a list of pieces and joined once at the
    end (appending to one ``bytearray`` copies every buffer again as it grows). Supports the
    two things the writer and the blob encoders do with it: ``len(out)`` (the next buffer's
    position) and ``out += piece`` (a bytes-like object, kept by reference)."""

    __slots__ = ("_pieces", "_size")

    def __init__(self) -> None:
        self._pieces: list = []
        self._size = 0

    def __len__(self) -> int:
        return self._size

    def __bool__(self) -> bool:
        return self._size > 0

    def __iadd__(self, piece) -> _Output:
        n = memoryview(piece).nbytes
        if n:
            self._pieces.append(piece)
            self._size += n
        return self

    def pieces(self) -> list:
        return list(self._pieces)


def write_lance_file(
    store: ObjectStore,
    key: str,
    table: pa.Table | Iterable[pa.RecordBatch],
    *,
    version: str = "2.1",
    schema_fields: Sequence[file_pb2.Field] | None = None,
    max_page_bytes: int = DEFAULT_MAX_PAGE_BYTES,
    max_rows_per_page: int = DEFAULT_MAX_ROWS_PER_PAGE,
    schema: pa.Schema | None = None,
    global_buffers: Sequence[bytes] = (),
) -> WrittenFile:
    """Write ``table`` (or a stream of batches sharing one schema) as one Lance data file.

    ``version`` is ``"2.0"``, ``"2.1"``, ``"2.2"`` or ``"2.3"`` (unstable in pylance 14.0.2). For an iterable of batches with no
    batch at all, pass ``schema``. ``global_buffers`` are written after the FileDescriptor
    (global buffer 0), as global buffers 1, 2, ... each on a 64-byte boundary.
    """
    if isinstance(table, pa.Table):
        batches: Iterable[pa.RecordBatch] = table.to_batches()
        schema = table.schema
    else:
        batches = iter(table)
        if schema is None:
            try:
                first = next(batches)
            except StopIteration:
                raise InvalidInput("an empty batch stream needs an explicit schema") from None
            schema = first.schema
            batches = _chain(first, batches)
    writer = LanceFileWriter(
        store,
        key,
        schema,
        version=version,
        schema_fields=schema_fields,
        max_page_bytes=max_page_bytes,
        max_rows_per_page=max_rows_per_page,
        global_buffers=global_buffers,
    )
    for b in batches:
        writer.write_batch(b)
    return writer.finish()


def _chain(first, rest):
    yield first
    yield from rest
