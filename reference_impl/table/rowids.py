"""Row id sequences and row version sequences (spec 001, "Feature: Move-Stable Row IDs").

With stable row ids (reader/writer feature flag 2) every fragment stores, in row order,

* its **row ids** -- a ``RowIdSequence`` protobuf, inline in ``DataFragment.inline_row_ids``
  (5) or in an ``ExternalFile`` (6: ``path`` relative to the table root, ``offset``,
  ``size``);
* the dataset version each row was **last updated** at (7 inline / 8 external) and was
  **created** at (9 inline / 10 external) -- ``RowDatasetVersionSequence`` protobufs.

``Manifest.next_row_id`` (14) is the first unused row id; new rows get ids from there.

``RowIdSequence`` = ``repeated U64Segment segments = 1``; the sequence is the
concatenation of its segments. A ``U64Segment`` is one of:

====================  =====================================================================
``range`` (1)         ``start, start+1, ..., end-1``
``range_with_holes``  the range ``[start, end)`` without the sorted values of ``holes``
(2)                   (an ``EncodedU64Array``)
``range_with_bitmap`` ``start + i`` for every ``i < end - start`` whose bit ``i`` is set in
(3)                   ``bitmap`` (byte ``i // 8``, bit ``i % 8``, least significant first;
                      ``ceil((end - start) / 8)`` bytes)
``sorted_array`` (4)  an ``EncodedU64Array`` whose values increase
``array`` (5)         an ``EncodedU64Array`` in any order
====================  =====================================================================

``EncodedU64Array`` is one of ``u16_array {base, offsets}`` / ``u32_array {base, offsets}``
(value = base + little-endian u16/u32 offset) or ``u64_array {values}`` (little-endian u64).

``RowDatasetVersionSequence`` = ``repeated RowDatasetVersionRun runs = 1`` with
``RowDatasetVersionRun {U64Segment span = 1; uint64 version = 2}``: the next
``len(span)`` rows carry ``version``. Only the span's *length* matters; pylance 14 writes
row-offset ranges (``[0, 50)``) for fresh fragments and copies the row-id segment shape
after compaction.

Bytes are untrusted. Every length is computed from the protobuf before any array is
built, and the total must fit the fragment's ``physical_rows`` (or ``max_rows``): a Range
claiming ``2**63`` rows raises ``FormatError`` (rule ROWID-002) without allocating.
Rule ids used here: ROWID-001 (a sequence that does not decode or whose segments are
malformed), ROWID-002 (more values than the fragment has rows), ROWID-009 (an external
sequence that does not fit its file).
"""

from __future__ import annotations

import numpy as np
from google.protobuf.message import DecodeError

from ..errors import FormatError
from ..proto import rowids_pb2

# Without physical_rows, at most this many values are decoded from one sequence.
DEFAULT_MAX_ROWS = 1 << 28

_U16 = np.dtype("<u2")
_U32 = np.dtype("<u4")
_U64 = np.dtype("<u8")


def _err(msg: str, path: str | None, rule: str = "ROWID-001") -> FormatError:
    return FormatError(msg, rule=rule, path=path)


# --------------------------------------------------------------------------- EncodedU64Array

def _encoded_len(arr: rowids_pb2.EncodedU64Array, path: str | None) -> int:
    kind = arr.WhichOneof("array")
    if kind == "u16_array":
        raw, width = arr.u16_array.offsets, 2
    elif kind == "u32_array":
        raw, width = arr.u32_array.offsets, 4
    elif kind == "u64_array":
        raw, width = arr.u64_array.values, 8
    else:
        return 0  # an empty (unset) array holds no values
    if len(raw) % width:
        raise _err(f"{kind} byte length {len(raw)} is not a multiple of {width}", path)
    return len(raw) // width


def decode_encoded_array(arr: rowids_pb2.EncodedU64Array, path: str | None = None) -> np.ndarray:
    """The uint64 values of an ``EncodedU64Array`` (bounded by its own byte length)."""
    kind = arr.WhichOneof("array")
    _encoded_len(arr, path)
    if kind == "u16_array":
        offs, base = np.frombuffer(arr.u16_array.offsets, _U16), arr.u16_array.base
    elif kind == "u32_array":
        offs, base = np.frombuffer(arr.u32_array.offsets, _U32), arr.u32_array.base
    elif kind == "u64_array":
        return np.frombuffer(arr.u64_array.values, _U64).astype(np.uint64)
    else:
        return np.empty(0, np.uint64)
    if offs.size and int(base) + int(offs.max()) >= 1 << 64:
        raise _err(f"{kind} base {base} plus offset overflows u64", path)
    return offs.astype(np.uint64) + np.uint64(base)


def encode_array(values: np.ndarray) -> rowids_pb2.EncodedU64Array:
    """The narrowest ``EncodedU64Array`` for ``values`` (u16/u32 offsets from the minimum,
    else raw u64)."""
    values = np.asarray(values, dtype=np.uint64)
    out = rowids_pb2.EncodedU64Array()
    if values.size == 0:
        out.u16_array.base = 0
        out.u16_array.offsets = b""
        return out
    base = values.min()
    span = int(values.max()) - int(base)
    if span < 1 << 16:
        out.u16_array.base = int(base)
        out.u16_array.offsets = (values - base).astype(_U16).tobytes()
    elif span < 1 << 32:
        out.u32_array.base = int(base)
        out.u32_array.offsets = (values - base).astype(_U32).tobytes()
    else:
        out.u64_array.values = values.astype(_U64).tobytes()
    return out


# --------------------------------------------------------------------------- U64Segment

def segment_len(seg: rowids_pb2.U64Segment, path: str | None = None) -> int:
    """How many values ``seg`` holds, computed without materialising them; raises
    ``FormatError`` (ROWID-001) for a malformed segment."""
    kind = seg.WhichOneof("segment")
    if kind == "range":
        r = seg.range
        if r.end < r.start:
            raise _err(f"range end {r.end} below start {r.start}", path)
        return r.end - r.start
    if kind == "range_with_holes":
        r = seg.range_with_holes
        if r.end < r.start:
            raise _err(f"range_with_holes end {r.end} below start {r.start}", path)
        holes = _encoded_len(r.holes, path)
        if holes > r.end - r.start:
            raise _err(f"range_with_holes has {holes} holes in a range of {r.end - r.start}", path)
        return r.end - r.start - holes
    if kind == "range_with_bitmap":
        r = seg.range_with_bitmap
        if r.end < r.start:
            raise _err(f"range_with_bitmap end {r.end} below start {r.start}", path)
        n = r.end - r.start
        if len(r.bitmap) != (n + 7) // 8:
            raise _err(f"range_with_bitmap over {n} values has {len(r.bitmap)} bitmap bytes, "
                       f"needs {(n + 7) // 8}", path)
        bits = np.unpackbits(np.frombuffer(r.bitmap, np.uint8), bitorder="little")[:n]
        return int(np.count_nonzero(bits))
    if kind in ("sorted_array", "array"):
        return _encoded_len(getattr(seg, kind), path)
    raise _err("U64Segment has no segment kind set", path)


def decode_segment(seg: rowids_pb2.U64Segment, path: str | None = None) -> np.ndarray:
    """The values of one segment (call :func:`segment_len` first to bound its size)."""
    kind = seg.WhichOneof("segment")
    if kind == "range":
        return np.arange(seg.range.end - seg.range.start, dtype=np.uint64) + np.uint64(seg.range.start)
    if kind == "range_with_holes":
        r = seg.range_with_holes
        holes = decode_encoded_array(r.holes, path)
        if holes.size:
            if np.any(holes[1:] <= holes[:-1]):
                raise _err("range_with_holes: holes are not strictly increasing", path)
            if holes[0] < r.start or holes[-1] >= r.end:
                raise _err(f"range_with_holes: a hole lies outside [{r.start}, {r.end})", path)
        full = np.arange(r.end - r.start, dtype=np.uint64) + np.uint64(r.start)
        keep = np.ones(full.size, dtype=bool)
        keep[(holes - np.uint64(r.start)).astype(np.int64)] = False
        return full[keep]
    if kind == "range_with_bitmap":
        r = seg.range_with_bitmap
        n = r.end - r.start
        bits = np.unpackbits(np.frombuffer(r.bitmap, np.uint8), bitorder="little")[:n]
        return np.flatnonzero(bits).astype(np.uint64) + np.uint64(r.start)
    if kind == "sorted_array":
        values = decode_encoded_array(seg.sorted_array, path)
        if values.size > 1 and np.any(values[1:] < values[:-1]):
            raise _err("sorted_array values are not sorted", path)
        return values
    if kind == "array":
        return decode_encoded_array(seg.array, path)
    raise _err("U64Segment has no segment kind set", path)


def _bound(total: int, physical_rows: int | None, max_rows: int, path: str | None, what: str):
    limit = physical_rows if physical_rows is not None else max_rows
    if total > limit:
        raise FormatError(f"{what} holds {total} values, more than the "
                          f"{'fragment has rows' if physical_rows is not None else 'decode limit'}"
                          f" ({limit})", rule="ROWID-002", path=path)


def parse_row_id_sequence(data: bytes, path: str | None = None) -> rowids_pb2.RowIdSequence:
    seq = rowids_pb2.RowIdSequence()
    try:
        seq.ParseFromString(bytes(data))
    except (DecodeError, ValueError, RuntimeError) as exc:
        raise _err(f"row id sequence does not decode: {exc}", path) from None
    return seq


def row_id_sequence_len(data: bytes, path: str | None = None) -> int:
    """Number of row ids in a serialized ``RowIdSequence``, without decoding them."""
    seq = parse_row_id_sequence(data, path)
    return sum(segment_len(s, path) for s in seq.segments)


def decode_row_id_sequence(data: bytes, *, physical_rows: int | None = None,
                           max_rows: int = DEFAULT_MAX_ROWS, path: str | None = None) -> np.ndarray:
    """The row ids (uint64, row order) of a serialized ``RowIdSequence``.

    The total length is checked against ``physical_rows`` (or ``max_rows``) before any
    value is materialised; a longer sequence raises ``FormatError`` rule ROWID-002. A
    shorter one is returned as is (the ROWID rules compare lengths)."""
    seq = parse_row_id_sequence(data, path)
    lengths = [segment_len(s, path) for s in seq.segments]
    _bound(sum(lengths), physical_rows, max_rows, path, "row id sequence")
    if not lengths:
        return np.empty(0, np.uint64)
    return np.concatenate([decode_segment(s, path) for s in seq.segments]).astype(np.uint64, copy=False)


def _segment_for_sorted_run(run: np.ndarray) -> rowids_pb2.U64Segment:
    """The smallest segment for a strictly increasing run of values."""
    seg = rowids_pb2.U64Segment()
    first, last = int(run[0]), int(run[-1])
    span = last - first + 1
    holes_count = span - run.size
    if last == (1 << 64) - 1:  # [first, last + 1) cannot be written as u64 bounds
        seg.sorted_array.CopyFrom(encode_array(run))
        return seg
    if holes_count == 0:
        seg.range.start, seg.range.end = first, last + 1
        return seg

    def width(span_values: int) -> int:
        return 2 if span_values < 1 << 16 else 4 if span_values < 1 << 32 else 8

    costs = {
        "holes": holes_count * width(span),
        "bitmap": (span + 7) // 8,
        "sorted": run.size * width(span),
    }
    choice = min(costs, key=lambda k: (costs[k], k != "holes"))
    if choice == "holes":
        present = np.zeros(span, dtype=bool)
        present[(run - np.uint64(first)).astype(np.int64)] = True
        holes = np.flatnonzero(~present).astype(np.uint64) + np.uint64(first)
        seg.range_with_holes.start, seg.range_with_holes.end = first, last + 1
        seg.range_with_holes.holes.CopyFrom(encode_array(holes))
    elif choice == "bitmap":
        bits = np.zeros(span, dtype=np.uint8)
        bits[(run - np.uint64(first)).astype(np.int64)] = 1
        seg.range_with_bitmap.start, seg.range_with_bitmap.end = first, last + 1
        seg.range_with_bitmap.bitmap = np.packbits(bits, bitorder="little").tobytes()
    else:
        seg.sorted_array.CopyFrom(encode_array(run))
    return seg


def _loose_segment(values: np.ndarray) -> rowids_pb2.U64Segment:
    seg = rowids_pb2.U64Segment()
    kind = "sorted_array" if values.size < 2 or bool(np.all(values[1:] > values[:-1])) else "array"
    getattr(seg, kind).CopyFrom(encode_array(values))
    return seg


def encode_segments(ids: np.ndarray, *, min_run: int = 8,
                    max_gap: int = 256) -> list[rowids_pb2.U64Segment]:
    """Compact segments for ``ids``: strictly increasing runs (split where the next value
    jumps by more than ``max_gap``) of at least ``min_run`` values become a Range /
    RangeWithHoles / RangeWithBitmap / SortedArray, whichever is smallest; the values
    between such runs become one ``sorted_array`` (if increasing) or ``array`` segment."""
    ids = np.asarray(ids, dtype=np.uint64)
    if ids.size == 0:
        return []
    up = ids[1:] > ids[:-1]
    gap = np.where(up, ids[1:] - np.where(up, ids[:-1], 0), 0)
    breaks = np.flatnonzero(~up | (gap > max_gap)) + 1
    starts = np.concatenate(([0], breaks))
    ends = np.concatenate((breaks, [ids.size]))
    segments: list[rowids_pb2.U64Segment] = []
    pending_from: int | None = None
    for s, e in zip(starts.tolist(), ends.tolist(), strict=True):
        if e - s >= min_run or (s == 0 and e == ids.size):
            if pending_from is not None:
                segments.append(_loose_segment(ids[pending_from:s]))
                pending_from = None
            segments.append(_segment_for_sorted_run(ids[s:e]))
        elif pending_from is None:
            pending_from = s
    if pending_from is not None:
        segments.append(_loose_segment(ids[pending_from:]))
    return segments


def encode_row_id_sequence(ids) -> bytes:
    """A serialized ``RowIdSequence`` holding ``ids`` in order, with compact segments."""
    seq = rowids_pb2.RowIdSequence()
    seq.segments.extend(encode_segments(np.asarray(ids, dtype=np.uint64)))
    return seq.SerializeToString()


# --------------------------------------------------------------------------- version sequences

def parse_version_sequence(data: bytes, path: str | None = None) -> rowids_pb2.RowDatasetVersionSequence:
    seq = rowids_pb2.RowDatasetVersionSequence()
    try:
        seq.ParseFromString(bytes(data))
    except (DecodeError, ValueError, RuntimeError) as exc:
        raise _err(f"row version sequence does not decode: {exc}", path) from None
    return seq


def decode_version_sequence(data: bytes, *, physical_rows: int | None = None,
                            max_rows: int = DEFAULT_MAX_ROWS, path: str | None = None) -> np.ndarray:
    """Per-row dataset versions (uint64) of a serialized ``RowDatasetVersionSequence``:
    run ``i`` repeats its version ``len(span)`` times. Bounded like
    :func:`decode_row_id_sequence` (ROWID-002)."""
    seq = parse_version_sequence(data, path)
    lengths = np.array([segment_len(r.span, path) for r in seq.runs], dtype=np.uint64)
    _bound(int(lengths.sum()) if lengths.size else 0, physical_rows, max_rows, path,
           "row version sequence")
    versions = np.array([r.version for r in seq.runs], dtype=np.uint64)
    return np.repeat(versions, lengths.astype(np.int64))


def encode_version_sequence(versions) -> bytes:
    """A serialized ``RowDatasetVersionSequence``: one run per stretch of equal versions,
    its span the row-offset range ``[first, end)`` as pylance writes for new fragments."""
    versions = np.asarray(versions, dtype=np.uint64)
    seq = rowids_pb2.RowDatasetVersionSequence()
    if versions.size:
        change = np.flatnonzero(versions[1:] != versions[:-1]) + 1
        starts = np.concatenate(([0], change))
        ends = np.concatenate((change, [versions.size]))
        for s, e in zip(starts.tolist(), ends.tolist(), strict=True):
            run = seq.runs.add()
            run.span.range.start, run.span.range.end = s, e
            run.version = int(versions[s])
    return seq.SerializeToString()


# --------------------------------------------------------------------------- external files

def read_external(store, ext, *, max_size: int = 1 << 30) -> bytes:
    """The bytes an ``ExternalFile`` (``path`` relative to the table root, ``offset``,
    ``size``) points at, read through ``store``; FormatError ROWID-009 when the range
    does not fit the file or is larger than ``max_size``."""
    from ..errors import NotFound
    from ..io.base import check_key

    key = check_key(ext.path)
    if ext.size > max_size:
        raise FormatError(f"external sequence of {ext.size} bytes exceeds {max_size}",
                          rule="ROWID-009", path=key, offset=ext.offset)
    try:
        total = store.size(key)
    except NotFound:
        raise FormatError("external sequence file is missing", rule="ROWID-009", path=key) from None
    if ext.offset + ext.size > total:
        raise FormatError(f"external sequence [{ext.offset}, {ext.offset + ext.size}) exceeds "
                          f"the file size {total}", rule="ROWID-009", path=key, offset=ext.offset)
    return store.get_range(key, ext.offset, ext.size)


def fragment_row_ids(store, fragment, *, path: str | None = None) -> np.ndarray | None:
    """The row ids of a ``DataFragment`` (inline or external), or None when it has none."""
    kind = fragment.WhichOneof("row_id_sequence")
    if kind is None:
        return None
    data = fragment.inline_row_ids if kind == "inline_row_ids" else read_external(store, fragment.external_row_ids)
    return decode_row_id_sequence(data, physical_rows=fragment.physical_rows, path=path)


def fragment_versions(store, fragment, which: str, *, path: str | None = None) -> np.ndarray | None:
    """``which`` = ``"created"`` or ``"last_updated"``: that version sequence of a
    ``DataFragment``, or None when absent."""
    group = {"created": "created_at_version_sequence",
             "last_updated": "last_updated_at_version_sequence"}[which]
    kind = fragment.WhichOneof(group)
    if kind is None:
        return None
    data = getattr(fragment, kind)
    if kind.startswith("external"):
        data = read_external(store, data)
    return decode_version_sequence(data, physical_rows=fragment.physical_rows, path=path)
