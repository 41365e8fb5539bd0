"""The Lance v2.x file container: footer, offset tables, column metadata, global buffers.

Byte layout (spec 003 "File Structure", FACTS §A "Lance data files v2.x")::

    data buffers (page buffers, blob bytes), each 64-byte aligned, from offset 0
    global buffer 0   = lance.file.FileDescriptor {1 schema, 2 length (rows)}, 64-aligned
    column metadatas  = one ``lance.file.v2.ColumnMetadata`` protobuf per column, no prefix
    CMO table         = (u64 position, u64 size) per column
    GBO table         = (u64 position, u64 size) per global buffer
    footer (40 bytes) = <QQQIIHH  column-meta-0 offset, CMO offset, GBO offset,
                                  number of global buffers, number of columns,
                                  major, minor;  then b"LANC"

Version pairs: (0,0),(0,1),(0,2) are legacy 0.1 files, which end with a 16-byte tail
(u64 metadata position, u16 0?, u16 major, u16 minor, "LANC"); (0,3) and (2,0) mean 2.0;
then (2,1), (2,2), (2,3).

Every position and size read from the file is checked against the file size before any
read or allocation; a violation raises :class:`FormatError` with a ``FILE-0NN`` rule id,
the path and the offending offset.

Rule ids used here: FILE-001 footer (size, magic), FILE-002 footer offsets/tables out of
bounds, FILE-003 unknown version, FILE-004 global buffer out of bounds, FILE-005
FileDescriptor does not parse / missing, FILE-006 column metadata out of bounds or does
not parse, FILE-011 page buffer out of bounds.
"""

from __future__ import annotations

import struct
import threading
from dataclasses import dataclass, field

from google.protobuf.message import DecodeError

from reference_impl.errors import FormatError, UnsupportedFeature
from reference_impl.proto import file2_pb2, file_pb2

MAGIC = b"LANC"
FOOTER = struct.Struct("<QQQIIHH4s")
FOOTER_SIZE = FOOTER.size  # 40
LEGACY_TAIL_SIZE = 16
#: Upper bound on metadata blocks we agree to load (column metadata, FileDescriptor).
MAX_METADATA_BYTES = 1 << 30

RULE_FOOTER = "FILE-001"
RULE_TABLES = "FILE-002"
RULE_VERSION = "FILE-003"
RULE_GLOBAL = "FILE-004"
RULE_DESCRIPTOR = "FILE-005"
RULE_COLMETA = "FILE-006"
RULE_PAGE_BUFFER = "FILE-011"  # page buffers lie inside the file

VERSION_NAMES = {(0, 3): "2.0", (2, 0): "2.0", (2, 1): "2.1", (2, 2): "2.2", (2, 3): "2.3"}


def version_name(major: int, minor: int) -> str:
    """The format version a footer pair announces: ``"0.1"`` (legacy), ``"2.0"`` ... ``"2.3"``."""
    if major == 0 and minor < 3:
        return "0.1"
    try:
        return VERSION_NAMES[(major, minor)]
    except KeyError:
        raise UnsupportedFeature(f"unknown Lance file version {major}.{minor}") from None


class CountingReader:
    """Ranged reads of one object, counted (``reads``, ``bytes_read``), bounds-checked."""

    def __init__(self, store, key: str, size: int) -> None:
        self.store, self.key, self.size = store, key, size
        self.reads = 0
        self.bytes_read = 0
        self._count_lock = threading.Lock()  # pages may be read from several decode threads
        self._map = None  # memoryview of the mapped file (local files only), made on first use
        self._map_tried = False

    def _mapped(self):
        """The whole file memory-mapped read-only, when the store is a plain local directory
        and the file still has the size the reader was opened with; else None."""
        if self._map_tried:
            return self._map
        with self._count_lock:
            if not self._map_tried:
                self._map = _map_local(self.store, self.key, self.size)
                self._map_tried = True
        return self._map

    def read_view(self, pos: int, length: int, *, rule: str = RULE_PAGE_BUFFER,
                  what: str = "range"):
        """Like :meth:`read`, but may return a zero-copy ``memoryview`` of a memory-mapped
        local file instead of a copy (page buffers: decoders only ever view them)."""
        view = self._mapped() if length >= MAP_MIN_BYTES else None
        if view is None:
            return self.read(pos, length, rule=rule, what=what)
        if pos < 0 or length < 0 or pos + length > self.size:
            raise FormatError(f"{what} {pos}+{length} lies outside the file ({self.size} bytes)",
                              rule=rule, path=self.key, offset=pos)
        with self._count_lock:
            self.reads += 1
            self.bytes_read += length
        return view[pos:pos + length]

    def read(self, pos: int, length: int, *, rule: str = RULE_PAGE_BUFFER, what: str = "range") -> bytes:
        """Bytes ``[pos, pos+length)``; FormatError when the range leaves the file."""
        if pos < 0 or length < 0 or pos + length > self.size:
            raise FormatError(f"{what} {pos}+{length} lies outside the file ({self.size} bytes)",
                              rule=rule, path=self.key, offset=pos)
        if length == 0:
            return b""
        with self._count_lock:
            self.reads += 1
            self.bytes_read += length
        data = self.store.get_range(self.key, pos, length)
        if len(data) != length:
            raise FormatError(f"short read of {what}: {len(data)} of {length} bytes", rule=rule,
                              path=self.key, offset=pos)
        return data


#: page reads at least this large come from a memory map of a local file (no copy)
MAP_MIN_BYTES = 1 << 16


def _map_local(store, key: str, size: int):
    """A read-only memory map of ``key`` as a memoryview, for a plain :class:`LocalStore`
    (not a wrapper that injects faults or counts calls), or None."""
    import mmap
    import os

    from reference_impl.io.local import LocalStore

    if type(store) is not LocalStore or size == 0:
        return None
    try:
        with open(store._path(key), "rb") as fh:
            if os.fstat(fh.fileno()).st_size != size:
                return None
            return memoryview(mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ))
    except (OSError, ValueError):
        return None


@dataclass
class FileContainer:
    """A parsed file tail.

    ``version`` is the footer's ``(major, minor)``; ``version_name`` the format version
    (``"0.1"``, ``"2.0"`` ... ``"2.3"``). For legacy files only ``version``, ``size`` and
    ``legacy_metadata_position`` are filled.
    """

    path: str
    size: int
    version: tuple[int, int]
    version_name: str
    num_rows: int = 0
    num_columns: int = 0
    num_global_buffers: int = 0
    column_meta_start: int = 0
    cmo_offset: int = 0
    gbo_offset: int = 0
    column_positions: list[tuple[int, int]] = field(default_factory=list)
    global_buffers: list[tuple[int, int]] = field(default_factory=list)
    columns: list[file2_pb2.ColumnMetadata] = field(default_factory=list)
    descriptor: file_pb2.FileDescriptor | None = None
    legacy_metadata_position: int | None = None
    legacy_metadata: object = None
    reader: CountingReader | None = None

    @property
    def is_legacy(self) -> bool:
        return self.version_name == "0.1"

    @property
    def fields(self) -> list:
        return list(self.descriptor.schema.fields) if self.descriptor is not None else []

    def read_global_buffer(self, index: int) -> bytes:
        """Bytes of global buffer ``index`` (bounds already checked at parse time)."""
        if not 0 <= index < len(self.global_buffers):
            raise FormatError(f"no global buffer {index}", rule=RULE_GLOBAL, path=self.path)
        pos, size = self.global_buffers[index]
        return self.reader.read(pos, size, rule=RULE_GLOBAL, what=f"global buffer {index}")

    def read_buffer(self, pos: int, size: int) -> bytes:
        """Bytes of a page/column buffer (a ``bytes`` or a read-only ``memoryview``),
        bounds-checked and counted."""
        return self.reader.read_view(pos, size, rule=RULE_PAGE_BUFFER, what="buffer")


def _parse(message, raw: bytes, *, rule: str, path: str, offset: int, what: str):
    try:
        message.ParseFromString(raw)
    except (DecodeError, RuntimeError, ValueError, TypeError) as exc:
        raise FormatError(f"{what} does not parse: {exc}", rule=rule, path=path, offset=offset) from None
    return message


def parse_footer(tail: bytes, size: int, *, path: str = "") -> tuple:
    """Unpack the 40-byte footer; returns the 7 integers. Checks magic only."""
    if len(tail) < FOOTER_SIZE:
        raise FormatError(f"file of {size} bytes is too small for the 40-byte footer",
                          rule=RULE_FOOTER, path=path, offset=0)
    *vals, magic = FOOTER.unpack_from(tail, len(tail) - FOOTER_SIZE)
    if magic != MAGIC:
        raise FormatError("file does not end with magic 'LANC'", rule=RULE_FOOTER, path=path,
                          offset=size - 4)
    return tuple(vals)


def _legacy(reader: CountingReader, key: str, size: int, major: int, minor: int, pos: int) -> FileContainer:
    """A legacy (0.1) tail: the Metadata block at ``pos`` is a u32-LE length and a
    ``lance.file.Metadata`` protobuf; the row count is its last ``batch_offsets`` entry."""
    c = FileContainer(path=key, size=size, version=(major, minor), version_name="0.1",
                      legacy_metadata_position=pos, reader=reader)
    avail = size - LEGACY_TAIL_SIZE - pos
    if avail < 4 or avail > MAX_METADATA_BYTES:
        return c
    raw = reader.read(pos, avail, rule=RULE_TABLES, what="legacy metadata")
    (length,) = struct.unpack_from("<I", raw)
    if length > avail - 4:
        raise FormatError(f"legacy Metadata length {length} runs past the tail", rule=RULE_TABLES,
                          path=key, offset=pos)
    meta = _parse(file_pb2.Metadata(), raw[4:4 + length], rule=RULE_DESCRIPTOR, path=key, offset=pos,
                  what="legacy Metadata")
    c.legacy_metadata = meta
    c.num_rows = int(meta.batch_offsets[-1]) if len(meta.batch_offsets) else 0
    return c


def read_container(store, key: str, *, size: int | None = None,
                   load_columns: bool = True) -> FileContainer:
    """Read and validate a file's tail: footer, CMO/GBO tables, FileDescriptor, column metadata.

    Uses at most four store reads (footer + tables + metadata are usually in the last
    64 KiB, which is read at once). Raises FormatError (FILE-001..007) or
    UnsupportedFeature for unknown versions.
    """
    if size is None:
        size = store.size(key)
    reader = CountingReader(store, key, size)
    if size < LEGACY_TAIL_SIZE:
        raise FormatError(f"file of {size} bytes is too small for a footer", rule=RULE_FOOTER,
                          path=key, offset=0)
    # Read the tail speculatively: a 64 KiB window normally holds all metadata.
    window = min(size, 1 << 16)
    tail_start = size - window
    tail = reader.read(tail_start, window, rule=RULE_FOOTER, what="file tail")
    if tail[-4:] != MAGIC:
        raise FormatError("file does not end with magic 'LANC'", rule=RULE_FOOTER, path=key,
                          offset=size - 4)
    major, minor = struct.unpack_from("<HH", tail, len(tail) - 8)
    if major == 0 and minor < 3:
        (pos,) = struct.unpack_from("<Q", tail, len(tail) - 16)
        if pos > size - LEGACY_TAIL_SIZE:
            raise FormatError(f"legacy metadata position {pos} lies past the tail", rule=RULE_TABLES,
                              path=key, offset=size - LEGACY_TAIL_SIZE)
        return _legacy(reader, key, size, major, minor, pos)
    name = version_name(major, minor)
    cm0, cmo, gbo, n_gb, n_cols, major, minor = parse_footer(tail, size, path=key)
    foot = size - FOOTER_SIZE
    if not (cmo <= foot and gbo <= foot and cmo + 16 * n_cols <= foot and gbo + 16 * n_gb <= foot):
        raise FormatError(f"offset tables (CMO {cmo} x{n_cols}, GBO {gbo} x{n_gb}) run past the "
                          f"footer at {foot}", rule=RULE_TABLES, path=key, offset=foot)
    if cm0 > foot:
        raise FormatError(f"column metadata start {cm0} lies past the footer", rule=RULE_TABLES,
                          path=key, offset=foot)
    if n_gb < 1:
        raise FormatError("file has no global buffer 0 (FileDescriptor)", rule=RULE_DESCRIPTOR,
                          path=key, offset=gbo)

    def grab(pos: int, length: int, rule: str, what: str) -> bytes:
        if pos < 0 or length < 0 or pos + length > size:
            raise FormatError(f"{what} {pos}+{length} lies outside the file ({size} bytes)",
                              rule=rule, path=key, offset=pos)
        if pos >= tail_start:
            return tail[pos - tail_start: pos - tail_start + length]
        return reader.read(pos, length, rule=rule, what=what)

    gtab = grab(gbo, 16 * n_gb, RULE_TABLES, "global buffer offset table")
    ctab = grab(cmo, 16 * n_cols, RULE_TABLES, "column metadata offset table")
    gbufs = [struct.unpack_from("<QQ", gtab, 16 * i) for i in range(n_gb)]
    cols = [struct.unpack_from("<QQ", ctab, 16 * i) for i in range(n_cols)]
    for i, (p, s) in enumerate(gbufs):
        if p + s > size:
            raise FormatError(f"global buffer {i} ({p}+{s}) lies outside the file", rule=RULE_GLOBAL,
                              path=key, offset=gbo + 16 * i)
    for i, (p, s) in enumerate(cols):
        if p + s > size:
            raise FormatError(f"column metadata {i} ({p}+{s}) lies outside the file",
                              rule=RULE_COLMETA, path=key, offset=cmo + 16 * i)
    gpos, glen = gbufs[0]
    if glen > MAX_METADATA_BYTES:
        raise FormatError(f"global buffer 0 of {glen} bytes is too large", rule=RULE_GLOBAL,
                          path=key, offset=gbo)
    desc = _parse(file_pb2.FileDescriptor(), grab(gpos, glen, RULE_GLOBAL, "global buffer 0"),
                  rule=RULE_DESCRIPTOR, path=key, offset=gpos, what="FileDescriptor")
    container = FileContainer(path=key, size=size, version=(major, minor), version_name=name,
                              num_rows=int(desc.length), num_columns=n_cols,
                              num_global_buffers=n_gb, column_meta_start=cm0, cmo_offset=cmo,
                              gbo_offset=gbo, column_positions=cols, global_buffers=gbufs,
                              descriptor=desc, reader=reader)
    if load_columns and cols:
        lo = min(p for p, _ in cols)
        hi = max(p + s for p, s in cols)
        block = grab(lo, hi - lo, RULE_COLMETA, "column metadata")
        for i, (p, s) in enumerate(cols):
            container.columns.append(_parse(file2_pb2.ColumnMetadata(), block[p - lo: p - lo + s],
                                            rule=RULE_COLMETA, path=key, offset=p,
                                            what=f"column metadata {i}"))
    return container


__all__ = ["CountingReader", "FileContainer", "FOOTER", "FOOTER_SIZE", "MAGIC", "parse_footer",
           "read_container", "version_name"]
