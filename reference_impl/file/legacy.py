"""The legacy Lance file format (version 0.1, spec 001 "File Structure").

Layout, as pylance 14.0.2 writes it::

    data pages ...                          from offset 0, no alignment
    [dictionary value pages]                var-binary pages of dictionary fields
    page table                              i64 (position, length) per field x batch
    [statistics pages + statistics page table]
    [u32 LE length | lance.table.Manifest]  optional, at Metadata.manifest_position
    u32 LE length | lance.file.Metadata     at the tail's position
    u64 LE metadata position | u16 major=0 | u16 minor=2 | b"LANC"   (16-byte tail)

``Metadata.batch_offsets`` holds the first row of every batch plus the total (``[0, 3, 4]``
is two batches of 3 and 1 rows). The page table is an ``N x M x 2`` matrix of i64 with
``N`` = one row per field id from the smallest to the largest id of the file's
``DataFile.fields`` (struct parents included with an empty run; row = ``id - min id``, as
pylance 14.0.2 writes it: a compacted file without dropped field 1 still has an empty
row 1) and ``M`` = batches; cell ``[f][b]`` is ``(position, length)`` where ``length``
counts **values** (not bytes).

Legacy encodings, per field and batch:

* **plain** (fixed width): ``length`` values back to back; booleans are an LSB-first
  bitmap. Nulls are not encoded: the slot holds the writer's placeholder,
  read back as a value (0 / 0.0 / false for arrays built from Python lists, which is
  what FACTS §A observed; any stale value the Arrow buffer held otherwise, as pylance
  14.0.2 shows).
* **var-binary** (utf8, binary and their large variants): the page position points at
  ``length + 1`` i64 **absolute file positions**; value *i* is the bytes between offsets
  *i* and *i+1*. "If offsets[i] == offsets[i + 1], we treat the i-th value as Null", so
  an empty string reads back as null -- in a nullable field. A field that is not nullable
  (a struct's ``not null`` child, a non-nullable column) reads it back as ``''``, as
  pylance 14.0.2 and 0.20.0 do (the type census, ``docs/census-types.md``); so do the
  values of a dictionary.
* **lists**: a plain page of ``rows + 1`` offsets (i32 for ``list``, i64 for
  ``large_list``) relative to the batch's item page; a null list reads back empty.
* **fixed_size_list**: one plain page of ``rows * dimension`` items.
* **struct**: no data of its own; a null struct reads back as a struct of zeroed children.
  A child page may hold more values than the batch has rows (pylance 0.10 writes the
  whole child array of a sliced struct); readers take the first ``rows`` values.
* **dictionary**: plain indices; the values are one page at
  ``Field.dictionary{offset, length}``: var-binary for strings and binary (``length``
  values, the page's ``length + 1`` positions at ``offset``), plain for numbers
  (``length`` values at ``offset``). A null index is 0, so it reads back as item 0. *Which* file
  that position is in depends on whose schema it comes from: the dataset manifest's fields
  locate the values in the **manifest file** (every release writes them there, ahead of
  the manifest, and every release reads a dataset's dictionaries from there:
  :func:`manifest_dictionaries`); a data file's embedded schema locates them in that data
  file, for reading the file on its own.

Statistics (``Metadata.statistics``) use the same machinery: a field list of their own, a
one-batch page table of ``len(fields)`` rows whose batch has one value per data batch;
see :mod:`reference_impl.table.stats`.
"""

from __future__ import annotations

import struct as _struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute  # noqa: F401  (pa.compute)

from reference_impl.errors import FormatError
from reference_impl.proto import file_pb2, table_pb2

TAIL = _struct.Struct("<QHH4s")
MAGIC = b"LANC"
#: bound on a protobuf block at the tail (Metadata, embedded Manifest)
MAX_BLOCK = 64 << 20
#: stored files up to this size are fetched whole by :func:`open_legacy`
WHOLE_FILE_LIMIT = 256 << 20

RULE_TAIL = "FILE-060"  # tail, magic, version and Metadata framing
RULE_TABLE = "FILE-061"  # page table shape and cells inside the file
RULE_BATCHES = "FILE-062"  # batch_offsets start at 0 and never decrease
RULE_VALUES = "FILE-063"  # page contents: offsets monotone, inside the file


@dataclass
class LegacyFile:
    """An opened legacy file: its Metadata, batches, page table and optional manifest."""

    read_range: Callable[[int, int], bytes]
    size: int
    metadata: file_pb2.Metadata
    manifest: table_pb2.Manifest | None = None
    path: str | None = None
    _tables: dict = field(default_factory=dict)

    # -- structure ---------------------------------------------------------------------------

    @property
    def batch_offsets(self) -> list[int]:
        return list(self.metadata.batch_offsets)

    @property
    def num_batches(self) -> int:
        return max(len(self.metadata.batch_offsets) - 1, 0)

    @property
    def num_rows(self) -> int:
        return self.metadata.batch_offsets[-1] if self.metadata.batch_offsets else 0

    def batch_sizes(self) -> list[int]:
        offs = self.batch_offsets
        return [offs[i + 1] - offs[i] for i in range(len(offs) - 1)]

    def error(self, message: str, rule: str, offset: int | None = None) -> FormatError:
        return FormatError(message, rule=rule, path=self.path, offset=offset)

    def page_table(
        self, num_fields: int, position: int | None = None, num_batches: int | None = None
    ) -> np.ndarray:
        """The ``(num_fields, num_batches, 2)`` i64 page table at ``position``."""
        position = self.metadata.page_table_position if position is None else position
        num_batches = self.num_batches if num_batches is None else num_batches
        key = (position, num_fields, num_batches)
        if key not in self._tables:
            nbytes = 16 * num_fields * num_batches
            if position + nbytes > self.size:
                raise self.error(
                    f"page table of {num_fields}x{num_batches} runs past the file",
                    RULE_TABLE,
                    position,
                )
            raw = self.read_range(position, nbytes)
            table = np.frombuffer(raw, "<i8").reshape(num_fields, num_batches, 2)
            if (table < 0).any():
                raise self.error("negative page position or length", RULE_TABLE, position)
            self._tables[key] = table
        return self._tables[key]

    # -- reading -----------------------------------------------------------------------------

    def own_field(self, field_id: int) -> file_pb2.Field | None:
        """The field ``field_id`` of the manifest embedded in this file, if it has one.

        A dictionary's values are a page of *this* file, so the ``Field.dictionary``
        position that locates them is the one this file's own schema records. The
        dataset manifest's copy of the field carries the position in whichever file the
        writer saw first (pylance 0.10 to 12.x leave it there), which names other bytes
        in every other file; readers of every release take the file's own.
        """
        if self.manifest is None:
            return None
        by_id = self._tables.get("own_fields")
        if by_id is None:
            by_id = self._tables["own_fields"] = {f.id: f for f in self.manifest.fields}
        return by_id.get(field_id)

    def schema_fields(self) -> list[file_pb2.Field]:
        """The field list of the embedded manifest (the file's own schema)."""
        if self.manifest is None:
            raise self.error("file has no embedded manifest; pass the fields", RULE_TAIL)
        return list(self.manifest.fields)

    def read(
        self,
        fields: Sequence[file_pb2.Field] | None = None,
        file_field_ids: Sequence[int] | None = None,
        *,
        columns: Sequence[str] | None = None,
        dictionaries: dict[int, pa.Array] | None = None,
    ) -> pa.Table:
        """Read the whole file as pylance reads it.

        ``fields`` is the Lance field list describing the columns (default: the embedded
        manifest's), ``file_field_ids`` the file's ``DataFile.fields`` (page table row order;
        default: every id of ``fields`` in order). ``columns`` selects top-level fields.
        ``dictionaries`` maps field ids to dictionary values read from the dataset's manifest
        file (:func:`manifest_dictionaries`); without it a dictionary field takes the values
        this file's own schema locates.
        """
        from reference_impl.table.schema import fields_to_arrow

        fields = list(fields) if fields is not None else self.schema_fields()
        ids = [
            i
            for i in (file_field_ids if file_field_ids is not None else [f.id for f in fields])
            if i >= 0
        ]
        # decoded under the storage types, then wrapped in the extension types the schema
        # names (an extension's storage fields carry no field ids of their own)
        schema = fields_to_arrow(fields, extensions=False)
        typed = fields_to_arrow(fields)
        if columns is not None:
            schema = pa.schema([schema.field(c) for c in columns])
            typed = pa.schema([typed.field(c) for c in columns])
        lo = min(ids) if ids else 0
        table = self.page_table(max(ids) - lo + 1 if ids else 0)
        reader = _ColumnReader(
            self, table, {fid: fid - lo for fid in ids}, {f.id: f for f in fields},
            dictionaries,
        )
        sizes = self.batch_sizes()
        arrays = []
        try:
            for af, want in zip(schema, typed, strict=True):
                parts = [reader.read(af, b, n) for b, n in enumerate(sizes)]
                arr = pa.concat_arrays(parts) if parts else pa.array([], af.type)
                arrays.append(arr.cast(want.type) if arr.type != want.type else arr)
            return pa.Table.from_arrays(arrays, schema=typed)
        except (pa.ArrowException, ValueError, OverflowError) as exc:
            raise self.error(
                f"page contents do not form valid Arrow data: {exc}", RULE_VALUES
            ) from None


def open_legacy(
    data: bytes | memoryview | None = None,
    *,
    store=None,
    key: str | None = None,
    path: str | None = None,
) -> LegacyFile:
    """Open a legacy file from its bytes, or from ``store``/``key``.

    A stored file up to :data:`WHOLE_FILE_LIMIT` bytes is fetched in one read (legacy pages
    are small and many); a larger one is read range by range.
    """
    if data is None and store is not None:
        size = store.size(key)
        if size <= WHOLE_FILE_LIMIT:
            data, path = store.get(key, max_size=WHOLE_FILE_LIMIT), path or key
    if data is not None:
        view = memoryview(data)
        size = len(view)

        def read_range(pos: int, length: int) -> bytes:
            if pos < 0 or length < 0 or pos + length > size:
                raise FormatError(
                    f"read {pos}+{length} past end of file ({size})",
                    rule=RULE_VALUES,
                    path=path,
                    offset=pos,
                )
            return bytes(view[pos : pos + length])
    else:
        size = store.size(key)
        path = path or key

        def read_range(pos: int, length: int) -> bytes:
            if pos < 0 or length < 0 or pos + length > size:
                raise FormatError(
                    f"read {pos}+{length} past end of file ({size})",
                    rule=RULE_VALUES,
                    path=path,
                    offset=pos,
                )
            return store.get_range(key, pos, length) if length else b""

    if size < TAIL.size:
        raise FormatError("file shorter than the 16-byte tail", rule=RULE_TAIL, path=path, offset=0)
    pos, major, minor, magic = TAIL.unpack(read_range(size - TAIL.size, TAIL.size))
    if magic != MAGIC:
        raise FormatError(
            f"tail magic is {magic!r}, not LANC", rule=RULE_TAIL, path=path, offset=size - 4
        )
    if (major, minor) not in ((0, 1), (0, 2), (0, 0)):
        raise FormatError(
            f"version {major}.{minor} is not a legacy file",
            rule=RULE_TAIL,
            path=path,
            offset=size - 8,
        )
    metadata = file_pb2.Metadata()
    _parse_block(read_range, pos, size - TAIL.size, metadata, path, "Metadata")
    offsets = list(metadata.batch_offsets)
    if offsets and (
        offsets[0] != 0 or any(b < a for a, b in zip(offsets, offsets[1:], strict=False))
    ):
        raise FormatError(
            f"batch_offsets {offsets[:8]} must start at 0 and never decrease",
            rule=RULE_BATCHES,
            path=path,
            offset=pos,
        )
    manifest = None
    if metadata.manifest_position:
        manifest = table_pb2.Manifest()
        _parse_block(read_range, metadata.manifest_position, pos, manifest, path, "Manifest")
    return LegacyFile(read_range, size, metadata, manifest, path)


def _parse_block(read_range, pos: int, limit: int, message, path, what: str) -> None:
    """Parse ``u32 LE length | protobuf`` at ``pos``, which must end by ``limit``."""
    from google.protobuf.message import DecodeError

    if pos + 4 > limit:
        raise FormatError(
            f"{what} position {pos} outside the file", rule=RULE_TAIL, path=path, offset=pos
        )
    (length,) = _struct.unpack("<I", read_range(pos, 4))
    if pos + 4 + length > limit or length > MAX_BLOCK:
        raise FormatError(
            f"{what} of {length} bytes runs past its end", rule=RULE_TAIL, path=path, offset=pos
        )
    try:
        message.ParseFromString(read_range(pos + 4, length))
    except DecodeError as exc:
        raise FormatError(
            f"{what} does not parse: {exc}", rule=RULE_TAIL, path=path, offset=pos
        ) from None


class _ColumnReader:
    """Decodes one field's page(s) of one batch, following the legacy encodings."""

    def __init__(
        self,
        file: LegacyFile,
        table: np.ndarray,
        row_of: dict[int, int],
        fields: dict[int, file_pb2.Field],
        dictionaries: dict[int, pa.Array] | None = None,
    ):
        self.file, self.table, self.row_of, self.fields = file, table, row_of, fields
        self.dictionaries = dictionaries or {}

    def cell(self, af: pa.Field, batch: int) -> tuple[int, int, int]:
        fid = _field_id(af)
        if fid not in self.row_of:
            raise self.file.error(f"field {af.name!r} (id {fid}) is not in the file", RULE_TABLE)
        pos, length = (int(x) for x in self.table[self.row_of[fid], batch])
        return fid, pos, length

    def read(self, af: pa.Field, batch: int, n: int) -> pa.Array:
        t = af.type
        if pa.types.is_struct(t):
            children = [self.read(c, batch, n) for c in t]
            return pa.StructArray.from_arrays(children, fields=list(t))
        if pa.types.is_null(t):
            return pa.nulls(n)  # the null type stores nothing
        fid, pos, length = self.cell(af, batch)
        if pa.types.is_list(t) or pa.types.is_large_list(t):
            width = 8 if pa.types.is_large_list(t) else 4
            if length != n + 1 and not (n == 0 and length == 0):
                raise self.file.error(
                    f"list {af.name!r} offsets page has {length} values for {n} rows",
                    RULE_TABLE,
                    pos,
                )
            offsets = (
                self._plain(pos, n + 1, width, af.name).view("<i8" if width == 8 else "<i4")
                if n
                else np.zeros(1, np.int64)
            )
            offsets = offsets.astype(np.int64) - (int(offsets[0]) if n else 0)
            if n and np.any(np.diff(offsets) < 0):
                raise self.file.error(f"list {af.name!r} offsets decrease", RULE_VALUES, pos)
            items = self.read(t.value_field, batch, int(offsets[-1]))
            cls = pa.LargeListArray if width == 8 else pa.ListArray
            return cls.from_arrays(
                pa.array(offsets.astype(np.int64 if width == 8 else np.int32)), items, type=t
            )
        if length < n:
            raise self.file.error(
                f"field {af.name!r} page holds {length} values, batch has {n} rows", RULE_TABLE, pos
            )
        # A page may hold more values than its batch has rows: pylance 0.10 writes the whole
        # child of a sliced struct array. Every release reads the batch's first n values.
        if pa.types.is_dictionary(t):
            values = self.dictionaries.get(fid)
            if values is None:
                lf = self.file.own_field(fid) or self.fields.get(fid)
                if lf is None or not lf.HasField("dictionary"):
                    raise self.file.error(
                        f"dictionary field {af.name!r} has no dictionary page", RULE_TABLE
                    )
                offset, count = int(lf.dictionary.offset), int(lf.dictionary.length)
                values = self._var_binary(offset, count, t.value_type, af.name, af.nullable) \
                    if _is_var_binary(t.value_type) else \
                    self._fixed(offset, count, t.value_type, af.name)
            elif values.type != t.value_type:
                values = values.cast(t.value_type)
            idx = self._fixed(pos, n, t.index_type, af.name)
            if n and (
                int(pa.compute.max(idx).as_py()) >= len(values)
                or int(pa.compute.min(idx).as_py()) < 0
            ):
                raise self.file.error(
                    f"dictionary index of {af.name!r} out of range", RULE_VALUES, pos
                )
            return pa.DictionaryArray.from_arrays(idx, values)
        if _is_var_binary(t):
            return self._var_binary(pos, n, t, af.name, af.nullable)
        return self._fixed(pos, n, t, af.name)

    def _plain(self, pos: int, count: int, width: int, name: str) -> np.ndarray:
        nbytes = count * width
        if pos + nbytes > self.file.size:
            raise self.file.error(
                f"page of {name!r} ({nbytes} bytes at {pos}) runs past the file", RULE_TABLE, pos
            )
        return np.frombuffer(self.file.read_range(pos, nbytes), np.uint8)

    def _fixed(self, pos: int, n: int, t: pa.DataType, name: str) -> pa.Array:
        if pa.types.is_fixed_size_list(t):
            items = self._fixed(pos, n * t.list_size, t.value_type, name)
            return pa.FixedSizeListArray.from_arrays(items, type=t)
        bits = _bit_width(t)
        if bits is None:
            raise self.file.error(
                f"field {name!r} of type {t} has no legacy plain encoding", RULE_VALUES, pos
            )
        raw = self._plain(pos, 1, (n * bits + 7) // 8, name) if n else np.zeros(0, np.uint8)
        return pa.Array.from_buffers(t, n, [None, pa.py_buffer(raw.tobytes())])

    def _var_binary(self, pos: int, n: int, t: pa.DataType, name: str,
                    nullable: bool = True) -> pa.Array:
        """``n`` var-binary values at ``pos``; an empty value is null where the field is
        nullable and ``''`` where it is not (as every release reads them back)."""
        if n == 0:
            return pa.array([], t)
        offsets = self._plain(pos, n + 1, 8, name).view("<i8").astype(np.int64)
        start, end = int(offsets[0]), int(offsets[-1])
        if np.any(np.diff(offsets) < 0) or start < 0 or end > self.file.size:
            raise self.file.error(
                f"var-binary offsets of {name!r} decrease or leave the file", RULE_VALUES, pos
            )
        data = self.file.read_range(start, end - start)
        rel = offsets - start
        is_null = rel[1:] == rel[:-1] if nullable else np.zeros(n, bool)
        validity = (
            pa.py_buffer(np.packbits(~is_null, bitorder="little").tobytes())
            if is_null.any()
            else None
        )
        arr = pa.Array.from_buffers(
            pa.large_binary(), n, [validity, pa.py_buffer(rel.tobytes()), pa.py_buffer(data)]
        )
        if pa.types.is_string(t) or pa.types.is_large_string(t):
            arr = arr.cast(pa.large_string())
        return arr.cast(t) if arr.type != t else arr


def manifest_dictionaries(
    read_range: Callable[[int, int], bytes], size: int, fields: Sequence[file_pb2.Field],
    *, path: str | None = None,
) -> dict[int, pa.Array]:
    """The dictionary values of a legacy dataset's fields, from its manifest file.

    Each field with ``Field.dictionary`` names a var-binary page of the manifest file:
    ``length + 1`` i64 positions at ``offset``, the values between consecutive positions.
    ``read_range(pos, n)`` reads the manifest file; ``size`` is its length. A page that
    leaves the file or whose positions decrease is FILE-063.
    """
    from reference_impl.table.schema import parse_logical_type

    out: dict[int, pa.Array] = {}
    for f in fields:
        if not f.HasField("dictionary") or f.dictionary.length <= 0:
            continue
        d = f.dictionary
        n = int(d.length)
        value_type = pa.string()
        try:
            t = parse_logical_type(f.logical_type)
            if pa.types.is_dictionary(t):
                value_type = t.value_type
        except Exception:  # noqa: BLE001 - the schema rules report a bad logical type
            pass
        if not _is_var_binary(value_type):
            # numeric values are one plain page of ``length`` values (pylance writes only
            # numbers and binary-like values as dictionaries)
            width = _bit_width(value_type)
            if width is None or width % 8 or d.offset < 0 or n > size or \
                    d.offset + n * width // 8 > size:
                raise FormatError(f"dictionary of field {f.name!r} ({n} {value_type} values at "
                                  f"{d.offset}) leaves the manifest file", rule=RULE_VALUES,
                                  path=path, offset=int(d.offset))
            raw = read_range(int(d.offset), n * width // 8)
            out[f.id] = pa.Array.from_buffers(value_type, n, [None, pa.py_buffer(raw)])
            continue
        if d.offset < 0 or n > size // 8 or d.offset + 8 * (n + 1) > size:
            raise FormatError(f"dictionary of field {f.name!r} ({n} values at {d.offset}) "
                              f"leaves the manifest file", rule=RULE_VALUES, path=path,
                              offset=int(d.offset))
        offsets = np.frombuffer(read_range(int(d.offset), 8 * (n + 1)), "<i8").astype(np.int64)
        start, end = int(offsets[0]), int(offsets[-1])
        if np.any(np.diff(offsets) < 0) or start < 0 or end > size:
            raise FormatError(f"dictionary of field {f.name!r}: positions decrease or leave "
                              f"the manifest file", rule=RULE_VALUES, path=path,
                              offset=int(d.offset))
        data = read_range(start, end - start)
        rel = offsets - start
        # an empty value is null, as in any var-binary page, unless the field is not nullable
        empty = (rel[1:] == rel[:-1]) if f.nullable else np.zeros(n, bool)
        validity = pa.py_buffer(np.packbits(~empty, bitorder="little").tobytes()) \
            if empty.any() else None
        arr = pa.Array.from_buffers(pa.large_binary(), n, [
            validity, pa.py_buffer(rel.tobytes()), pa.py_buffer(data)])
        try:
            out[f.id] = arr.cast(pa.large_string()).cast(value_type) \
                if pa.types.is_string(value_type) or pa.types.is_large_string(value_type) \
                else arr.cast(value_type)
        except (pa.ArrowException, ValueError) as exc:
            raise FormatError(f"dictionary of field {f.name!r} is not valid {value_type}: "
                              f"{exc}", rule=RULE_VALUES, path=path, offset=start) from None
    return out


def _field_id(af: pa.Field) -> int:
    meta = af.metadata or {}
    raw = meta.get(b"lance:field_id")
    if raw is None:
        raise FormatError(f"arrow field {af.name!r} carries no lance:field_id", rule=RULE_TABLE)
    return int(raw)


def _is_var_binary(t: pa.DataType) -> bool:
    return (
        pa.types.is_string(t)
        or pa.types.is_large_string(t)
        or pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
    )


def _bit_width(t: pa.DataType) -> int | None:
    if pa.types.is_boolean(t):
        return 1
    if pa.types.is_fixed_size_binary(t):
        return 8 * t.byte_width
    try:
        return t.bit_width
    except ValueError:
        return None
