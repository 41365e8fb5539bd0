"""Deletion files (spec 001, "Deletion Files"; FACTS "Fragments, data files, deletion files").

A fragment with deleted rows names one deletion file in ``DataFragment.deletion_file``
(3), a ``DeletionFile`` message: ``file_type`` (1: ``ARROW_ARRAY`` = 0, ``BITMAP`` = 1),
``read_version`` (2: the version the deletion was based on), ``id`` (3: a random u64),
``num_deleted_rows`` (4), ``base_id`` (7, optional: the base path holding the file).
The file's key is

    ``_deletions/{fragment_id}-{read_version}-{id}.{arrow|bin}``

relative to the table root (or to base ``base_id``). Its content is the set of deleted
*row offsets* within the fragment (0-based positions in the fragment's data files):

* ``.arrow`` (``ARROW_ARRAY``): an Arrow IPC **file** (``ARROW1`` magic at both ends)
  with one record batch of one column. The spec text calls it an Int32 array; pylance
  14.0.2 writes ``row_id: uint32 not null`` with ZSTD body compression, offsets in no
  particular order. Readers here accept both Int32 (non-negative) and UInt32.
* ``.bin`` (``BITMAP``): a 32-bit Roaring bitmap in the portable serialization.

pylance writes ``.arrow`` up to 5000 deleted rows and ``.bin`` above; that threshold is
a writer's choice, not a rule. A later delete writes a new file holding the union; the
old file stays for older versions.

Bytes are untrusted: a file larger than ``max_size`` is refused, the number of offsets is
checked against the fragment's ``physical_rows`` (or ``max_rows``) before a large array
is built (for ``.arrow`` files the IPC footer and batch metadata are read first, so a
batch or a ZSTD buffer claiming a huge size is refused before pyarrow allocates), and
every decoding problem is a ``FormatError`` with a DELETION rule id:
DELETION-001 (file missing), DELETION-003 (content is not the format its type names),
DELETION-004 (an offset at or beyond ``physical_rows``), DELETION-007 (the Arrow column
is not one Int32/UInt32 column without nulls or negatives).
"""

from __future__ import annotations

import io
import secrets
from dataclasses import dataclass

import numpy as np

from ..errors import FormatError, InvalidInput, NotFound
from ..proto import table_pb2

ARROW_ARRAY = table_pb2.DeletionFile.ARROW_ARRAY
BITMAP = table_pb2.DeletionFile.BITMAP
EXTENSIONS = {ARROW_ARRAY: "arrow", BITMAP: "bin"}
DELETIONS_DIR = "_deletions"

DEFAULT_MAX_SIZE = 256 << 20   # bytes of one deletion file
DEFAULT_MAX_ROWS = 1 << 28     # offsets decoded when physical_rows is not known
PYLANCE_THRESHOLD = 5000       # pylance 14 switches from .arrow to .bin above this


def deletion_file_name(fragment_id: int, read_version: int, id: int, file_type: int) -> str:
    if file_type not in EXTENSIONS:
        raise FormatError(f"unknown deletion file type {file_type}", rule="DELETION-002")
    return f"{fragment_id}-{read_version}-{id}.{EXTENSIONS[file_type]}"


def deletion_file_key(fragment_id: int, deletion_file_pb) -> str:
    """The key ``_deletions/{fragment_id}-{read_version}-{id}.{ext}`` relative to the root
    of the base that holds the file (the table root unless ``base_id`` says otherwise)."""
    d = deletion_file_pb
    return f"{DELETIONS_DIR}/{deletion_file_name(fragment_id, d.read_version, d.id, d.file_type)}"


@dataclass(frozen=True)
class ArrowDeletionInfo:
    """What an ``.arrow`` deletion file declares, for the rules that compare it with
    the spec (Int32) and with pylance (``row_id: uint32 not null``, one batch)."""

    column_names: list[str]
    column_types: list[str]
    nullable: list[bool]
    num_batches: int
    null_count: int


class _Flat:
    """Just enough of a FlatBuffers reader to look at Arrow IPC metadata before pyarrow
    decodes (and decompresses) anything. Every read is bounds-checked."""

    def __init__(self, buf: bytes, path: str | None):
        self.buf, self.path = buf, path

    def _need(self, pos: int, n: int) -> None:
        if pos < 0 or pos + n > len(self.buf):
            raise FormatError("Arrow IPC metadata points outside its buffer", rule="DELETION-003",
                              path=self.path, offset=pos)

    def u(self, fmt: str, pos: int) -> int:
        import struct

        self._need(pos, struct.calcsize(fmt))
        return struct.unpack_from("<" + fmt, self.buf, pos)[0]

    def root(self) -> int:
        return self.u("I", 0)

    def field(self, table: int, index: int) -> int | None:
        """Absolute position of field ``index`` of the table at ``table``, or None."""
        vtable = table - self.u("i", table)
        vsize = self.u("H", vtable)
        slot = 4 + 2 * index
        if slot + 2 > vsize:
            return None
        off = self.u("H", vtable + slot)
        return table + off if off else None

    def ref(self, pos: int) -> int:
        return pos + self.u("I", pos)

    def vector(self, pos: int, item: int) -> tuple[int, int]:
        """``(start, count)`` of a vector of ``item``-byte structs referenced at ``pos``."""
        vec = self.ref(pos)
        count = self.u("I", vec)
        self._need(vec + 4, count * item)
        return vec + 4, count


_RECORD_BATCH = 3  # MessageHeader.RecordBatch


def _check_ipc_sizes(data: bytes, path: str | None, limit: int) -> None:
    """Refuse an Arrow IPC file whose record batches claim more than ``limit`` rows, or
    whose compressed buffers claim an uncompressed size beyond what ``limit`` 8-byte
    values need, before pyarrow allocates for them."""
    f = _Flat(data, path)
    footer_len = f.u("i", len(data) - 10)
    start = len(data) - 10 - footer_len
    if footer_len <= 0 or start < 8:
        raise FormatError("Arrow IPC footer length is out of range", rule="DELETION-003",
                          path=path, offset=len(data) - 10)
    footer = _Flat(data[start:len(data) - 10], path)
    batches_at = footer.field(footer.root(), 3)
    if batches_at is None:
        return
    first, count = footer.vector(batches_at, 24)
    byte_limit = 8 * limit + 4096
    for i in range(count):
        block = first + 24 * i
        offset, meta_len, body_len = (footer.u("q", block), footer.u("i", block + 8),
                                      footer.u("q", block + 16))
        if offset < 8 or meta_len < 8 or body_len < 0 or offset + meta_len + body_len > len(data):
            raise FormatError("Arrow IPC record batch block lies outside the file",
                              rule="DELETION-003", path=path, offset=offset)
        fb_at = offset + 8 if f.u("I", offset) == 0xFFFFFFFF else offset + 4
        msg = _Flat(data[fb_at:offset + meta_len], path)
        root = msg.root()
        kind_at = msg.field(root, 1)
        header_at = msg.field(root, 2)
        if kind_at is None or msg.u("B", kind_at) != _RECORD_BATCH or header_at is None:
            raise FormatError("Arrow IPC block is not a record batch", rule="DELETION-003",
                              path=path, offset=offset)
        batch = msg.ref(header_at)
        length_at = msg.field(batch, 0)
        rows = msg.u("q", length_at) if length_at is not None else 0
        if rows < 0 or rows > limit:
            raise FormatError(f"Arrow deletion batch claims {rows} rows, more than {limit}",
                              rule="DELETION-004", path=path, offset=offset)
        buffers_at = msg.field(batch, 2)
        if buffers_at is None or msg.field(batch, 3) is None:
            continue  # no buffers, or no body compression: sizes are the body's own
        body = offset + meta_len
        bstart, bcount = msg.vector(buffers_at, 16)
        for j in range(bcount):
            b_off, b_len = msg.u("q", bstart + 16 * j), msg.u("q", bstart + 16 * j + 8)
            if b_len >= 8:
                declared = f.u("q", body + b_off)
                if declared < -1:  # Arrow's framing: -1 marks a buffer stored uncompressed
                    raise FormatError(f"Arrow deletion buffer claims an uncompressed length of "
                                      f"{declared}", rule="DELETION-003", path=path,
                                      offset=body + b_off)
                if declared > byte_limit:
                    raise FormatError(f"Arrow deletion buffer claims {declared} uncompressed "
                                      f"bytes", rule="DELETION-003", path=path, offset=body + b_off)


def _arrow_table(data: bytes, path: str | None, limit: int = DEFAULT_MAX_ROWS):
    import pyarrow as pa

    if len(data) < 12 or data[:6] != b"ARROW1" or data[-6:] != b"ARROW1":
        raise FormatError("not an Arrow IPC file (ARROW1 magic missing)", rule="DELETION-003",
                          path=path, offset=0)
    _check_ipc_sizes(data, path, limit)
    try:
        reader = pa.ipc.open_file(pa.BufferReader(data))
        batches = [reader.get_batch(i) for i in range(reader.num_record_batches)]
        schema = reader.schema
    except (pa.ArrowException, OSError, ValueError, IndexError) as exc:
        raise FormatError(f"Arrow IPC file does not decode: {exc}", rule="DELETION-003",
                          path=path) from None
    return schema, batches


def inspect_arrow_deletion_file(data: bytes, path: str | None = None) -> ArrowDeletionInfo:
    schema, batches = _arrow_table(data, path)
    return ArrowDeletionInfo(
        column_names=list(schema.names),
        column_types=[str(f.type) for f in schema],
        nullable=[f.nullable for f in schema],
        num_batches=len(batches),
        null_count=sum(b.column(i).null_count for b in batches for i in range(b.num_columns)),
    )


def _decode_arrow(data: bytes, path: str | None, limit: int) -> np.ndarray:
    import pyarrow as pa

    schema, batches = _arrow_table(data, path, limit)
    if len(schema) != 1 or schema[0].type not in (pa.int32(), pa.uint32()):
        raise FormatError(f"deletion array must be one Int32/UInt32 column, found {schema}",
                          rule="DELETION-007", path=path)
    total = sum(b.num_rows for b in batches)
    if total > limit:
        raise FormatError(f"deletion file lists {total} offsets, more than {limit}",
                          rule="DELETION-004", path=path)
    parts = []
    for b in batches:
        col = b.column(0)
        if col.null_count:
            raise FormatError("deletion array holds nulls", rule="DELETION-007", path=path)
        values = col.to_numpy(zero_copy_only=False)
        if values.dtype == np.int32 and values.size and values.min() < 0:
            raise FormatError("deletion array holds negative offsets", rule="DELETION-007", path=path)
        parts.append(values.astype(np.uint32))
    if not parts:
        return np.empty(0, np.uint32)
    return np.unique(np.concatenate(parts))


def _decode_bitmap(data: bytes, path: str | None, limit: int) -> np.ndarray:
    from pyroaring import BitMap

    try:
        bm = BitMap.deserialize(data)
    except (ValueError, IndexError, OverflowError, MemoryError, TypeError) as exc:
        raise FormatError(f"Roaring bitmap does not decode: {exc}", rule="DELETION-003",
                          path=path) from None
    n = len(bm)
    if n > limit:
        raise FormatError(f"deletion bitmap holds {n} offsets, more than {limit}",
                          rule="DELETION-004", path=path)
    return np.frombuffer(bm.to_array(), dtype=np.uint32).copy() if n else np.empty(0, np.uint32)


def decode_deletion_file(data: bytes, file_type: int, *, physical_rows: int | None = None,
                         max_rows: int = DEFAULT_MAX_ROWS, path: str | None = None) -> np.ndarray:
    """Sorted, distinct deleted offsets (uint32) of a deletion file's bytes. With
    ``physical_rows`` every offset must be below it (DELETION-004)."""
    limit = physical_rows if physical_rows is not None else max_rows
    if file_type == ARROW_ARRAY:
        offsets = _decode_arrow(data, path, limit)
    elif file_type == BITMAP:
        offsets = _decode_bitmap(data, path, limit)
    else:
        raise FormatError(f"unknown deletion file type {file_type}", rule="DELETION-002", path=path)
    if physical_rows is not None and offsets.size and int(offsets[-1]) >= physical_rows:
        raise FormatError(f"deleted offset {int(offsets[-1])} is not below the fragment's "
                          f"{physical_rows} rows", rule="DELETION-004", path=path)
    return offsets


def read_deletion_file(store, key: str, file_type: int, *, physical_rows: int | None = None,
                       max_size: int = DEFAULT_MAX_SIZE, max_rows: int = DEFAULT_MAX_ROWS) -> np.ndarray:
    """Read ``key`` through ``store`` and decode it (see :func:`decode_deletion_file`).
    A missing file is ``FormatError`` DELETION-001; a file above ``max_size`` bytes is
    refused with DELETION-003."""
    try:
        size = store.size(key)
    except NotFound:
        raise FormatError("deletion file is missing", rule="DELETION-001", path=key) from None
    if size > max_size:
        raise FormatError(f"deletion file of {size} bytes exceeds the {max_size}-byte limit",
                          rule="DELETION-003", path=key)
    data = store.get(key, max_size=max_size)
    return decode_deletion_file(data, file_type, physical_rows=physical_rows, max_rows=max_rows,
                                path=key)


def encode_deletion_file(offsets, file_type: int) -> bytes:
    """The bytes of a deletion file holding ``offsets`` (as pylance writes them: Arrow IPC
    file with one ZSTD-compressed batch of ``row_id: uint32 not null``, or portable Roaring)."""
    values = np.unique(np.asarray(offsets, dtype=np.int64))
    if values.size and (values[0] < 0 or values[-1] >= 1 << 32):
        raise InvalidInput("deletion offsets must be in [0, 2**32)")
    values = values.astype(np.uint32)
    if file_type == ARROW_ARRAY:
        import pyarrow as pa

        schema = pa.schema([pa.field("row_id", pa.uint32(), nullable=False)])
        sink = io.BytesIO()
        options = pa.ipc.IpcWriteOptions(compression="zstd")
        with pa.ipc.new_file(sink, schema, options=options) as writer:
            writer.write_batch(pa.record_batch([pa.array(values, pa.uint32())], schema=schema))
        return sink.getvalue()
    if file_type == BITMAP:
        from pyroaring import BitMap

        return BitMap(values).serialize()
    raise InvalidInput(f"unknown deletion file type {file_type}")


def write_deletion_file(store, fragment_id: int, read_version: int, offsets, *,
                        file_type: int | None = None, id: int | None = None,
                        threshold: int = PYLANCE_THRESHOLD) -> table_pb2.DeletionFile:
    """Write a deletion file for ``fragment_id`` under ``_deletions/`` of ``store`` and
    return its ``DeletionFile`` message. Without ``file_type`` the type is chosen by
    ``threshold`` (``.arrow`` up to it, ``.bin`` above, as pylance 14 does); without
    ``id`` a random u64 is drawn."""
    values = np.unique(np.asarray(offsets, dtype=np.int64))
    if values.size == 0:
        raise InvalidInput("a deletion file must delete at least one row")
    if file_type is None:
        file_type = ARROW_ARRAY if values.size <= threshold else BITMAP
    if id is None:
        id = secrets.randbits(64)
    pb = table_pb2.DeletionFile(file_type=file_type, read_version=read_version, id=id,
                                num_deleted_rows=int(values.size))
    store.put(deletion_file_key(fragment_id, pb), encode_deletion_file(values, file_type))
    return pb


def merge_deletions(a, b) -> np.ndarray:
    """The union of two offset sets, sorted and distinct (uint32)."""
    parts = [np.asarray(x, dtype=np.uint32).ravel() for x in (a, b) if x is not None]
    if not parts:
        return np.empty(0, np.uint32)
    return np.union1d(*parts) if len(parts) == 2 else np.unique(parts[0])
