"""The index section of a manifest: ``IndexSection`` and ``IndexMetadata`` (spec 004).

Where it lives. A manifest file may carry, before the manifest, an ``IndexSection``
framed as ``u32-LE length | protobuf``; ``Manifest.index_section`` (field 6) holds its
offset (``reference_impl.table.manifest`` finds and parses it). The section is::

    IndexSection  { 1 indices: repeated IndexMetadata }
    IndexMetadata { 1 uuid: UUID{1 bytes(16)}   the index directory is _indices/{uuid}/
                    2 fields: repeated int32    Field.id of the indexed columns
                    3 name: string              unique per version, except segments
                    4 dataset_version: uint64   the version the index was built from
                    5 fragment_bitmap: bytes    32-bit Roaring bitmap (portable format)
                                                of the fragment ids the index covers
                    6 index_details: google.protobuf.Any   type-specific, a plugin's
                    7 index_version: int32?     minimum index format version
                    8 created_at: uint64?       UTC milliseconds since the epoch
                    9 base_id: uint32?          Manifest.base_paths id of the index files
                   10 files: repeated IndexFile {1 path (relative to the index
                                                directory), 2 size_bytes} }

Rules the spec states: the uuid is unique across all versions; the name is unique within
a version; type URLs compare **case-insensitively**, and indexes are plugins, so a reader
keeps a details message it does not know (here: its type URL and raw bytes).

Segments. pylance 14.0.2 keeps an index as several *segments*: entries with the same name
and different uuids. ``optimize_indices`` after an append adds a segment covering only the
new fragments (e.g. ``id_idx`` {0, 1} and ``id_idx`` {2}); their fragment bitmaps do not
overlap. ``create_index(..., replace=False)`` on an existing name is refused
("Index name 'id_idx' already exists").

Type URLs pylance 14.0.2 writes (``create_scalar_index`` / ``create_index`` index types),
all with the prefix ``/`` and no host; files are those listed in ``IndexMetadata.files``:

==========================  ==========================================  ===========  ==========================================
pylance index type           type URL                                   index_version files
==========================  ==========================================  ===========  ==========================================
BTREE                        /lance.table.BTreeIndexDetails              0            page_data.lance, page_lookup.lance
BITMAP                       /lance.table.BitmapIndexDetails             0            bitmap_page_lookup.lance
LABEL_LIST (list<string>)    /lance.table.LabelListIndexDetails          1            bitmap_page_lookup.lance
NGRAM                        /lance.table.NGramIndexDetails              0            ngram_postings.lance
ZONEMAP                      /lance.table.ZoneMapIndexDetails            0            zonemap.lance
BLOOMFILTER                  /lance.index.pb.BloomFilterIndexDetails     0            bloomfilter.lance
INVERTED / FTS               /lance.table.InvertedIndexDetails           2            metadata.lance, part_0_{invert,tokens,docs}.lance
RTREE (WKT, WKB, geoarrow)   /lance.index.pb.RTreeIndexDetails           0            page_data.lance, nulls.lance
MINHASHLSH (strings)         /lance.index.pb.MinHashLshIndexDetails      1            signatures.lance, bands.lance
IVF_PQ, IVF_HNSW_SQ,         /lance.index.pb.VectorIndexDetails          1            index.idx, auxiliary.idx
IVF_FLAT, IVF_SQ
(fragment reuse, compaction  /lance.table.FragmentReuseIndexDetails      0            (none; name ``__lance_frag_reuse``)
with defer_index_remap)
(initialize_mem_wal)         /lance.table.MemWalIndexDetails             0            (none; name ``__lance_mem_wal``)
==========================  ==========================================  ===========  ==========================================

Differences from the spec's messages seen in pylance 14.0.2 (decoded into the messages of
``protos/index.proto`` / ``index_details.proto``; unknown fields are kept and reported):

* vector indexes use ``lance.index.pb.VectorIndexDetails`` (metric, HNSW config, PQ/SQ/flat
  compression, build parameters), not the spec's empty ``lance.table.VectorIndexDetails``;
* ``ZoneMapIndexDetails`` carries fields 1-3 (1 = rows per zone, 8192);
* ``InvertedIndexDetails`` carries fields 12 and 15 beyond the upstream table, and writes
  ``language`` as the JSON string ``"English"`` (with the quotes);
* the system indexes ``__lance_frag_reuse`` and ``__lance_mem_wal`` have no fields and,
  for MemWAL, an empty fragment bitmap.
"""

from __future__ import annotations

import uuid as _uuid
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from reference_impl.errors import FormatError
from reference_impl.proto import index_details_pb2, index_pb2, table_pb2
from reference_impl.table.fragment_bitmap import (  # noqa: F401  (part of this module's API)
    MAX_BITMAP_BYTES,
    MAX_BITMAP_IDS,
    RULE_BITMAP,
    decode_fragment_bitmap,
    encode_fragment_bitmap,
)
from reference_impl.table.fragment_reuse import FRAG_REUSE_INDEX_NAME  # noqa: F401
from reference_impl.table.fragment_reuse import summarize as summarize_fragment_reuse

RULE_DETAILS = "INDEX-009"

#: Lower-cased full message name -> (short kind, message class). Type URLs are matched by the
#: part after the last "/", case-insensitively (spec 004, IndexMetadata.index_details).
KNOWN_DETAILS: dict[str, tuple[str, type]] = {
    "lance.table.btreeindexdetails": ("btree", index_details_pb2.BTreeIndexDetails),
    "lance.table.bitmapindexdetails": ("bitmap", index_details_pb2.BitmapIndexDetails),
    "lance.table.labellistindexdetails": ("label_list", index_details_pb2.LabelListIndexDetails),
    "lance.table.ngramindexdetails": ("ngram", index_details_pb2.NGramIndexDetails),
    "lance.table.zonemapindexdetails": ("zonemap", index_details_pb2.ZoneMapIndexDetails),
    "lance.table.invertedindexdetails": ("inverted", index_details_pb2.InvertedIndexDetails),
    "lance.index.pb.bloomfilterindexdetails": ("bloomfilter", index_pb2.BloomFilterIndexDetails),
    "lance.index.pb.jsonindexdetails": ("json", index_pb2.JsonIndexDetails),
    "lance.index.pb.rtreeindexdetails": ("rtree", index_pb2.RTreeIndexDetails),
    "lance.index.pb.minhashlshindexdetails": ("minhash_lsh", index_pb2.MinHashLshIndexDetails),
    "lance.index.pb.fmindexdetails": ("fm", index_pb2.FMIndexDetails),
    "lance.index.pb.vectorindexdetails": ("vector", index_pb2.VectorIndexDetails),
    "lance.table.vectorindexdetails": ("vector", table_pb2.VectorIndexDetails),
    "lance.table.fragmentreuseindexdetails": ("fragment_reuse",
                                              table_pb2.FragmentReuseIndexDetails),
    "lance.table.memwalindexdetails": ("mem_wal", table_pb2.MemWalIndexDetails),
}
# pylance 0.36.0 (only) named the scalar index details of table.proto in the package of
# index.proto (``/lance.index.pb.BTreeIndexDetails`` ...); the next release moved them back,
# and every later release reads both names, as the same messages
for _name in ("btree", "bitmap", "labellist", "ngram", "zonemap", "inverted"):
    KNOWN_DETAILS.setdefault(f"lance.index.pb.{_name}indexdetails",
                             KNOWN_DETAILS[f"lance.table.{_name}indexdetails"])

#: Names pylance gives its system indexes (the fragment reuse index names its own).
MEM_WAL_INDEX_NAME = "__lance_mem_wal"


def type_name(type_url: str) -> str:
    """The message name of a type URL: the text after its last ``/``."""
    return type_url.rsplit("/", 1)[-1]


def details_class(type_url: str) -> tuple[str, type] | None:
    """``(kind, message class)`` of a type URL, compared case-insensitively, or None."""
    return KNOWN_DETAILS.get(type_name(type_url).lower())


@dataclass(frozen=True)
class IndexDetails:
    """A decoded ``index_details`` Any. ``message`` is None for unknown types (then only
    ``type_url`` and ``raw`` say anything); ``unknown_fields`` lists fields the message
    class lacks, as ``{path: [(number, wire_type, bytes)]}``."""

    type_url: str
    raw: bytes
    kind: str | None = None
    message: Any = None
    unknown_fields: dict = field(default_factory=dict)

    @property
    def known(self) -> bool:
        return self.message is not None


def parse_index_details(any_msg, *, path: str | None = None) -> IndexDetails:
    """Decode an ``index_details`` Any. Unknown type URLs are kept, not refused (indexes are
    plugins); a known type whose bytes do not parse raises ``FormatError`` (INDEX-009)."""
    type_url, raw = any_msg.type_url, bytes(any_msg.value)
    found = details_class(type_url)
    if found is None:
        return IndexDetails(type_url=type_url, raw=raw)
    kind, cls = found
    msg = cls()
    try:
        msg.ParseFromString(raw)
    except Exception as exc:  # noqa: BLE001 - DecodeError and friends
        raise FormatError(f"index details of type {type_url!r} do not parse: {exc}",
                          rule=RULE_DETAILS, path=path) from None
    from reference_impl.table.manifest import collect_unknown_fields

    unknown = collect_unknown_fields(msg, type_name(type_url), {})
    return IndexDetails(type_url=type_url, raw=raw, kind=kind, message=msg,
                        unknown_fields=unknown)


def uuid_text(raw: bytes) -> str:
    """The hyphenated text of a 16-byte UUID; other lengths as hex (a rule reports them)."""
    return str(_uuid.UUID(bytes=bytes(raw))) if len(raw) == 16 else bytes(raw).hex()


@dataclass(frozen=True)
class IndexFile:
    """One file of an index: ``path`` relative to ``_indices/{uuid}/``."""

    path: str
    size_bytes: int


@dataclass(frozen=True)
class Index:
    """One decoded ``IndexMetadata`` (one index, or one segment of an index).

    ``fragment_ids`` is None when the bitmap could not be decoded (``bitmap_error`` says
    why); ``details`` is None when the Any is absent, and ``details_error`` is set when a
    known details type did not parse."""

    uuid: str
    uuid_bytes: bytes
    name: str
    fields: tuple[int, ...]
    dataset_version: int
    fragment_ids: np.ndarray | None
    details: IndexDetails | None
    index_version: int | None
    created_at: int | None
    base_id: int | None
    files: tuple[IndexFile, ...]
    bitmap_error: str | None = None
    details_error: str | None = None
    position: int = 0

    @property
    def type_url(self) -> str | None:
        return self.details.type_url if self.details is not None else None

    @property
    def kind(self) -> str | None:
        return self.details.kind if self.details is not None else None

    @property
    def directory(self) -> str:
        """The index directory relative to ``_indices/`` of its base: the uuid."""
        return self.uuid

    def file_names(self) -> list[str]:
        """``{uuid}/{path}`` of every listed file, for ``VersionContext.location("index", ...)``."""
        return [f"{self.uuid}/{f.path}" for f in self.files]


def decode_index_metadata(im, *, position: int = 0, path: str | None = None,
                          max_ids: int = MAX_BITMAP_IDS) -> Index:
    """Decode one ``IndexMetadata`` message. Problems with the bitmap or the details are
    recorded on the result (``bitmap_error``/``details_error``), not raised, so one bad
    entry does not hide the others."""
    raw_uuid = bytes(im.uuid.uuid) if im.HasField("uuid") else b""
    bitmap_error = details_error = None
    try:
        frag_ids = decode_fragment_bitmap(im.fragment_bitmap, max_ids=max_ids, path=path)
    except FormatError as exc:
        frag_ids, bitmap_error = None, exc.message
    details = None
    if im.HasField("index_details"):
        try:
            details = parse_index_details(im.index_details, path=path)
        except FormatError as exc:
            details_error = exc.message
            details = IndexDetails(type_url=im.index_details.type_url,
                                   raw=bytes(im.index_details.value),
                                   kind=(details_class(im.index_details.type_url) or (None,))[0])
    return Index(
        uuid=uuid_text(raw_uuid), uuid_bytes=raw_uuid, name=im.name, fields=tuple(im.fields),
        dataset_version=int(im.dataset_version), fragment_ids=frag_ids, details=details,
        index_version=im.index_version if im.HasField("index_version") else None,
        created_at=im.created_at if im.HasField("created_at") else None,
        base_id=im.base_id if im.HasField("base_id") else None,
        files=tuple(IndexFile(f.path, int(f.size_bytes)) for f in im.files),
        bitmap_error=bitmap_error, details_error=details_error, position=position)


def decode_index_section(section, *, path: str | None = None,
                         max_ids: int = MAX_BITMAP_IDS) -> list[Index]:
    """Decode an ``IndexSection`` (message, bytes, or None for no section) into
    :class:`Index` objects in section order. Bytes that do not parse raise ``FormatError``
    (MANIFEST-004, the rule of the section's framing)."""
    if section is None:
        return []
    if isinstance(section, (bytes, bytearray, memoryview)):
        msg = table_pb2.IndexSection()
        try:
            msg.ParseFromString(bytes(section))
        except Exception as exc:  # noqa: BLE001
            raise FormatError(f"IndexSection does not parse: {exc}", rule="MANIFEST-004",
                              path=path) from None
        section = msg
    return [decode_index_metadata(im, position=i, path=path, max_ids=max_ids)
            for i, im in enumerate(section.indices)]


def segments(indices: list[Index]) -> dict[str, list[Index]]:
    """Indices grouped by name, in section order: the segments of each logical index."""
    out: dict[str, list[Index]] = {}
    for idx in indices:
        out.setdefault(idx.name, []).append(idx)
    return out


def overlapping_fragments(segs: list[Index]) -> np.ndarray:
    """Fragment ids covered by more than one of ``segs`` (sorted, unique)."""
    arrays = [s.fragment_ids for s in segs if s.fragment_ids is not None and len(s.fragment_ids)]
    if len(arrays) < 2:
        return np.zeros(0, dtype=np.uint32)
    ids, counts = np.unique(np.concatenate(arrays), return_counts=True)
    return ids[counts > 1]


def _jsonable(msg) -> dict:
    from google.protobuf.json_format import MessageToDict

    return MessageToDict(msg, preserving_proto_field_name=True)


def describe(idx: Index, *, list_limit: int = 64) -> dict:
    """A JSON-able description of one index, for ``lance-conformance inspect``."""
    frag: Any
    if idx.fragment_ids is None:
        frag = {"error": idx.bitmap_error}
    elif len(idx.fragment_ids) <= list_limit:
        frag = idx.fragment_ids.tolist()
    else:
        frag = {"count": int(len(idx.fragment_ids)), "min": int(idx.fragment_ids[0]),
                "max": int(idx.fragment_ids[-1])}
    out: dict = {"name": idx.name, "uuid": idx.uuid, "fields": list(idx.fields),
                 "dataset_version": idx.dataset_version, "fragment_ids": frag,
                 "index_version": idx.index_version, "created_at": idx.created_at,
                 "base_id": idx.base_id,
                 "files": [{"path": f.path, "size_bytes": f.size_bytes} for f in idx.files]}
    d = idx.details
    if d is None:
        out["details"] = None
    else:
        dd: dict = {"type_url": d.type_url, "kind": d.kind or "unknown"}
        if idx.details_error:
            dd["error"] = idx.details_error
        elif d.message is None:
            dd["raw_bytes"] = len(d.raw)
        elif d.kind == "fragment_reuse":
            dd["content"] = summarize_fragment_reuse(d.message)
        elif d.kind == "mem_wal":
            from reference_impl.table.mem_wal import summarize

            dd["content"] = summarize(d.message)
        else:
            dd["content"] = _jsonable(d.message)
        if d.unknown_fields:
            dd["unknown_fields"] = [{"where": w, "field": n, "wire_type": wt, "length": len(r)}
                                    for w, items in d.unknown_fields.items()
                                    for n, wt, r in items]
        out["details"] = dd
    return out


def index_report(index_section, *, path: str | None = None) -> list[dict]:
    """The decoded-index section of the inspect report: one :func:`describe` per entry,
    with ``segment`` numbering entries that share a name."""
    try:
        indices = decode_index_section(index_section, path=path)
    except FormatError as exc:
        return [{"error": str(exc)}]
    seen: dict[str, int] = {}
    out = []
    for idx in indices:
        d = describe(idx)
        d["segment"] = seen.get(idx.name, 0)
        seen[idx.name] = d["segment"] + 1
        out.append(d)
    return out


def render_report(entries: list[dict]) -> list[str]:
    """Tree lines (without the leading bar) for :func:`index_report` output."""
    lines = []
    for e in entries:
        if "error" in e:
            lines.append(f"error: {e['error']}")
            continue
        d = e["details"] or {}
        lines.append(f"{e['name']} [segment {e['segment']}] {d.get('kind', 'none')} "
                     f"{d.get('type_url', '')} uuid={e['uuid']} fields={e['fields']} "
                     f"v{e['dataset_version']} fragments={e['fragment_ids']} "
                     f"index_version={e['index_version']}")
        for f in e["files"]:
            lines.append(f"  file {f['path']} {f['size_bytes']} B")
        if "content" in d and d["content"]:
            lines.append(f"  details {d['content']}")
        if "error" in d:
            lines.append(f"  details error: {d['error']}")
        for u in d.get("unknown_fields", []):
            lines.append(f"  unknown field {u['where']}.{u['field']} (wire {u['wire_type']}, "
                         f"{u['length']} B)")
    return lines
