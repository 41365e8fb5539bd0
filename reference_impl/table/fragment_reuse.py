"""The fragment reuse index: how a compaction moved rows (spec 004,
``FragmentReuseIndexDetails``).

A compaction that defers index remapping (pylance: ``compact_files(...,
defer_index_remap=True)``) leaves the other indexes pointing at old row addresses and
records, in an index named ``__lance_frag_reuse`` (type URL
``/lance.table.FragmentReuseIndexDetails``, no fields, fragment bitmap = the new
fragments), enough to translate them::

    FragmentReuseIndexDetails { oneof content {
        1 inline: InlineContent                  when small (< 200 KB)
        2 external: ExternalFile {path, offset, size}   the InlineContent bytes in a file } }
    InlineContent  { 1 versions: repeated Version }
    Version        { 1 dataset_version: uint64   the version when the entry was added
                     3 groups: repeated Group }
    Group          { 1 changed_row_addrs: bytes  a 64-bit Roaring treemap
                     2 old_fragments: repeated FragmentDigest
                     3 new_fragments: repeated FragmentDigest }
    FragmentDigest { 1 id, 2 physical_rows, 3 num_deleted_rows }

The treemap is the portable 64-bit format: ``u64-LE`` number of buckets, then per bucket
a ``u32-LE`` high key (the upper 32 bits, here the fragment id) and a 32-bit Roaring bitmap
in the portable format of the low 32 bits (``pyroaring.BitMap64.serialize`` writes the
same bytes as pylance, checked byte for byte).

The mapping. A row address is ``fragment_id << 32 | offset``. pylance 14.0.2 puts in
``changed_row_addrs`` the old addresses of the rows that *survived* the rewrite (deleted rows
are absent). Walking the old fragments in order and their rows by offset, the i-th
surviving row moves to the i-th row of the new fragments (in order, by offset); a row of an
old fragment that is not in the set was dropped and maps to None. So the number of set
addresses equals the new fragments' physical rows, and within each old fragment
``physical_rows - num_deleted_rows`` of its rows are set.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np

from reference_impl.errors import FormatError, UnsupportedFeature
from reference_impl.proto import table_pb2
from reference_impl.table.fragment_bitmap import encode_fragment_bitmap

#: The name pylance gives the fragment reuse index (a system index).
FRAG_REUSE_INDEX_NAME = "__lance_frag_reuse"

RULE = "INDEX-020"
#: Largest external content read, and largest number of row addresses materialised.
MAX_EXTERNAL_BYTES = 256 << 20
MAX_ROW_ADDRS = 1 << 27
_NONE = np.uint64((1 << 64) - 1)


@dataclass(frozen=True)
class FragmentDigest:
    id: int
    physical_rows: int
    num_deleted_rows: int


@dataclass(frozen=True)
class ReuseGroup:
    """One rewrite group: the surviving old addresses (sorted ``uint64``) and the digests."""

    changed_row_addrs: np.ndarray
    old_fragments: tuple[FragmentDigest, ...]
    new_fragments: tuple[FragmentDigest, ...]


@dataclass(frozen=True)
class ReuseVersion:
    dataset_version: int
    groups: tuple[ReuseGroup, ...]


def decode_treemap(raw: bytes, *, max_count: int = MAX_ROW_ADDRS,
                   path: str | None = None) -> np.ndarray:
    """The sorted ``uint64`` values of a portable 64-bit Roaring treemap. Empty bytes are
    the empty set. The bucket count is checked against the bytes present and the value count
    against ``max_count`` before anything is materialised."""
    if not raw:
        return np.zeros(0, dtype=np.uint64)
    raw = bytes(raw)
    if len(raw) < 8:
        raise FormatError(f"row address treemap of {len(raw)} bytes is shorter than its "
                          f"8-byte bucket count", rule=RULE, path=path, offset=0)
    (buckets,) = struct.unpack_from("<Q", raw, 0)
    # Each bucket takes at least a 4-byte key and an 8-byte empty bitmap header.
    if buckets > (len(raw) - 8) // 12:
        raise FormatError(f"row address treemap claims {buckets} buckets in {len(raw)} bytes",
                          rule=RULE, path=path, offset=0)
    try:
        from pyroaring import BitMap64
    except ImportError:  # pragma: no cover - pyroaring < 1.0
        raise UnsupportedFeature("decoding a 64-bit Roaring treemap needs pyroaring.BitMap64",
                                 rule=RULE, path=path) from None
    try:
        bm = BitMap64.deserialize(raw)
    except Exception as exc:  # noqa: BLE001 - pyroaring raises ValueError on bad bytes
        raise FormatError(f"row address treemap does not decode: {exc}", rule=RULE,
                          path=path) from None
    n = len(bm)
    if n > max_count:
        raise FormatError(f"row address treemap holds {n} addresses, above the bound "
                          f"{max_count}", rule=RULE, path=path)
    return np.asarray(bm.to_array(), dtype=np.uint64) if n else np.zeros(0, dtype=np.uint64)


def encode_treemap(addrs) -> bytes:
    """The portable 64-bit Roaring treemap of ``addrs``."""
    from pyroaring import BitMap64

    return BitMap64(np.asarray(addrs, dtype=np.uint64).tolist()).serialize()


def load_content(details, *, store=None, path: str | None = None):
    """The ``InlineContent`` of ``details``: the inline message, or the bytes of the
    ``external`` range read from ``store`` (rooted at the table root), bounds-checked."""
    which = details.WhichOneof("content")
    if which == "inline":
        return details.inline
    if which is None:
        return table_pb2.FragmentReuseIndexDetails.InlineContent()
    ext = details.external
    if store is None:
        raise FormatError(f"fragment reuse content is external ({ext.path}) and no store was "
                          f"given", rule=RULE, path=path)
    if ext.size > MAX_EXTERNAL_BYTES:
        raise FormatError(f"external fragment reuse content of {ext.size} bytes exceeds "
                          f"{MAX_EXTERNAL_BYTES}", rule=RULE, path=ext.path)
    size = store.size(ext.path)
    if ext.offset + ext.size > size:
        raise FormatError(f"external range {ext.offset}+{ext.size} runs past the end of "
                          f"{ext.path} ({size} bytes)", rule=RULE, path=ext.path,
                          offset=ext.offset)
    data = store.get_range(ext.path, ext.offset, ext.size)
    content = table_pb2.FragmentReuseIndexDetails.InlineContent()
    try:
        content.ParseFromString(data)
    except Exception as exc:  # noqa: BLE001
        raise FormatError(f"external fragment reuse content does not parse: {exc}",
                          rule=RULE, path=ext.path, offset=ext.offset) from None
    return content


def _digests(items) -> tuple[FragmentDigest, ...]:
    return tuple(FragmentDigest(int(d.id), int(d.physical_rows), int(d.num_deleted_rows))
                 for d in items)


def decode_versions(details, *, store=None, path: str | None = None) -> list[ReuseVersion]:
    """Every version entry of ``details`` with its groups' treemaps decoded."""
    content = load_content(details, store=store, path=path)
    out = []
    for v in content.versions:
        groups = tuple(ReuseGroup(decode_treemap(g.changed_row_addrs, path=path),
                                  _digests(g.old_fragments), _digests(g.new_fragments))
                       for g in v.groups)
        out.append(ReuseVersion(int(v.dataset_version), groups))
    return out


def _addresses(digests: tuple[FragmentDigest, ...], limit: int, path) -> np.ndarray:
    total = sum(d.physical_rows for d in digests)
    if total > limit:
        raise FormatError(f"fragments of a reuse group hold {total} rows, above the bound "
                          f"{limit}", rule=RULE, path=path)
    if not digests:
        return np.zeros(0, dtype=np.uint64)
    return np.concatenate([
        (np.uint64(d.id) << np.uint64(32)) + np.arange(d.physical_rows, dtype=np.uint64)
        for d in digests])


def group_mapping(group: ReuseGroup, *, path: str | None = None,
                  max_rows: int = MAX_ROW_ADDRS) -> tuple[np.ndarray, np.ndarray]:
    """``(old_addrs, new_addrs)`` of one group, both ``uint64`` of the same length: every
    row address of the old fragments and where it went, ``2**64 - 1`` for dropped rows.
    Raises ``FormatError`` (INDEX-020) when the set addresses and the new rows disagree."""
    old = _addresses(group.old_fragments, max_rows, path)
    new = _addresses(group.new_fragments, max_rows, path)
    changed = group.changed_row_addrs
    kept = np.isin(old, changed, assume_unique=True)
    n_kept = int(kept.sum())
    if n_kept != len(changed):
        raise FormatError(f"{len(changed) - n_kept} changed row addresses lie outside the "
                          f"group's old fragments", rule=RULE, path=path)
    if n_kept != len(new):
        raise FormatError(f"{n_kept} surviving old rows but the new fragments hold "
                          f"{len(new)} rows", rule=RULE, path=path)
    mapped = np.full(len(old), _NONE, dtype=np.uint64)
    mapped[kept] = new
    return old, mapped


def row_address_mapping(details, *, store=None, path: str | None = None) -> dict:
    """``{old_address: new_address | None}`` over every version and group of ``details``
    (a ``FragmentReuseIndexDetails``). A row moved twice appears under both old addresses;
    :func:`remap` follows such chains."""
    out: dict[int, int | None] = {}
    for v in decode_versions(details, store=store, path=path):
        for g in v.groups:
            old, new = group_mapping(g, path=path)
            out.update((int(o), None if n == _NONE else int(n))
                       for o, n in zip(old.tolist(), new.tolist(), strict=True))
    return out


def remap(details, addrs, *, store=None) -> list[int | None]:
    """Translate row addresses through every recorded compaction, in version order;
    addresses no group touched come back unchanged, dropped rows as None (vectorised: one
    sorted lookup per group)."""
    result = np.asarray(list(addrs), dtype=np.uint64)
    dropped = np.zeros(len(result), dtype=bool)
    for v in sorted(decode_versions(details, store=store), key=lambda v: v.dataset_version):
        for g in v.groups:
            old, new = group_mapping(g)
            if not len(old):
                continue
            order = np.argsort(old, kind="stable")
            old_sorted, new_sorted = old[order], new[order]
            pos = np.minimum(np.searchsorted(old_sorted, result), len(old_sorted) - 1)
            hit = (old_sorted[pos] == result) & ~dropped
            mapped = new_sorted[pos]
            dropped |= hit & (mapped == _NONE)
            result = np.where(hit & (mapped != _NONE), mapped, result)
    return [None if d else int(x) for x, d in zip(result.tolist(), dropped.tolist(), strict=True)]


# -- writing: recording a compaction whose index remap is deferred ------------------------------

def reuse_group(old_fragments, new_fragments, surviving_addrs) -> table_pb2.FragmentReuseIndexDetails.Group:
    """The ``Group`` of one rewrite group: ``old_fragments`` / ``new_fragments`` are
    ``DataFragment`` messages, ``surviving_addrs`` the old row addresses of the rows that were
    rewritten (any order; they must lie in the old fragments and number as many as the new
    fragments' rows)."""
    g = table_pb2.FragmentReuseIndexDetails.Group(
        changed_row_addrs=encode_treemap(np.unique(np.asarray(surviving_addrs, dtype=np.uint64))))
    for f in old_fragments:
        deleted = f.deletion_file.num_deleted_rows if f.HasField("deletion_file") else 0
        g.old_fragments.add(id=f.id, physical_rows=f.physical_rows, num_deleted_rows=deleted)
    for f in new_fragments:
        g.new_fragments.add(id=f.id, physical_rows=f.physical_rows)
    group_mapping(ReuseGroup(decode_treemap(g.changed_row_addrs), _digests(g.old_fragments),
                             _digests(g.new_fragments)))  # refuse an inconsistent group
    return g


def defer_index_remap(indices, groups, dataset_version: int, *, created_at_ms: int | None = None):
    """The index list of a version that rewrote fragments without remapping its indexes, as
    pylance 14.0.2 commits ``compact_files(defer_index_remap=True)``: every index keeps its
    fragment bitmap (naming the old fragments), and the ``__lance_frag_reuse`` entry gains a
    ``Version`` with ``groups`` (from :func:`reuse_group`), under a new uuid, its bitmap being
    the new fragments of all recorded versions. ``indices`` are the previous version's
    ``IndexMetadata`` messages; returns new messages."""
    import time
    import uuid as uuid_mod

    out, details = [], table_pb2.FragmentReuseIndexDetails()
    for im in indices:
        if im.name == FRAG_REUSE_INDEX_NAME:
            details.ParseFromString(im.index_details.value)
            continue
        copy = table_pb2.IndexMetadata()
        copy.CopyFrom(im)
        out.append(copy)
    if details.WhichOneof("content") == "external":
        raise UnsupportedFeature("appending to external fragment reuse content is not "
                                 "supported", rule=RULE)
    version = details.inline.versions.add(dataset_version=dataset_version)
    version.groups.extend(groups)
    new_ids = sorted({d.id for v in details.inline.versions for g in v.groups
                      for d in g.new_fragments})
    reuse = table_pb2.IndexMetadata(name=FRAG_REUSE_INDEX_NAME, dataset_version=dataset_version,
                                    fragment_bitmap=encode_fragment_bitmap(new_ids),
                                    index_version=0,
                                    created_at=created_at_ms or int(time.time() * 1000))
    reuse.uuid.uuid = uuid_mod.uuid4().bytes
    reuse.index_details.type_url = "/lance.table.FragmentReuseIndexDetails"
    reuse.index_details.value = details.SerializeToString()
    out.append(reuse)
    return out


def summarize(details) -> dict:
    """A short JSON-able account of ``details`` (no store access: external content is named,
    not read)."""
    which = details.WhichOneof("content")
    if which == "external":
        e = details.external
        return {"external": {"path": e.path, "offset": e.offset, "size": e.size}}
    versions = []
    for v in details.inline.versions:
        groups = []
        for g in v.groups:
            item = {"old_fragments": [d.id for d in g.old_fragments],
                    "new_fragments": [d.id for d in g.new_fragments],
                    "changed_row_addrs_bytes": len(g.changed_row_addrs)}
            try:
                item["changed_rows"] = int(len(decode_treemap(g.changed_row_addrs)))
            except FormatError as exc:
                item["error"] = exc.message
            groups.append(item)
        versions.append({"dataset_version": v.dataset_version, "groups": groups})
    return {"inline": {"versions": versions}}
