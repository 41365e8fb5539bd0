"""INDEX-*: the index section of a manifest (spec 004 ``IndexMetadata`` / ``IndexSection``,
``FragmentReuseIndexDetails``).

``IndexMetadata`` = {1 uuid, 2 fields, 3 name, 4 dataset_version, 5 fragment_bitmap (32-bit
Roaring, portable), 6 index_details (Any), 7 index_version?, 8 created_at?, 9 base_id?,
10 files [{path, size_bytes}]}. The uuid names ``_indices/{uuid}/`` and is unique across
versions; the name is unique in a version except for the segments of one index (same name,
disjoint fragment bitmaps, as pylance 14.0.2's ``optimize_indices`` writes them); fields
are schema field ids; the bitmap names fragment ids that were used (<= max_fragment_id);
details are a plugin's message, compared by type URL ignoring case, and an unknown type is
only a warning. Decoding is in ``reference_impl.table.index``.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from reference_impl.errors import FormatError, LanceError
from reference_impl.table import fragment_reuse
from reference_impl.table import index as ix

from .context import fragment_count
from .registry import Finding, rule

_SEC = "IndexMetadata"
_CACHE = "index.decoded"


def indices(ctx) -> list[ix.Index]:
    """The decoded index entries of a version (cached on the context)."""
    if _CACHE not in ctx.cache:
        sec = getattr(ctx.mf, "index_section", None)
        ctx.cache[_CACHE] = ix.decode_index_section(sec, path=ctx.manifest_key)
    return ctx.cache[_CACHE]


def _relative(path: str) -> bool:
    """True for a non-empty relative path that does not climb with ``..``."""
    parts = path.replace("\\", "/").split("/")
    return bool(path) and not path.startswith("/") and ".." not in parts and "\x00" not in path


def _loc(ctx, idx: ix.Index, **kw) -> dict:
    return dict({"path": ctx.manifest_key, "index": idx.name, "uuid": idx.uuid,
                 "entry": idx.position}, **kw)


@rule("INDEX-001", title="index uuids are unique within a version", severity="error",
      spec="004", section=_SEC,
      clause="Unique ID of an index. It is unique across all the dataset versions.")
def unique_uuids(ctx):
    counts = Counter(i.uuid for i in indices(ctx))
    for u, n in sorted(counts.items()):
        if n > 1:
            yield Finding(f"index uuid {u} is used by {n} entries",
                          {"path": ctx.manifest_key, "uuid": u})


@rule("INDEX-002", title="index uuids are 16 bytes", severity="error", spec="004",
      section="UUID", clause="UUID type. encoded as 16 bytes.")
def uuid_length(ctx):
    for i in indices(ctx):
        if len(i.uuid_bytes) != 16:
            yield Finding(f"index {i.name!r} has a uuid of {len(i.uuid_bytes)} bytes",
                          _loc(ctx, i))


def _details_kind(type_url: str | None) -> str:
    """What an index's details are, for comparing segments: the kind of a known details
    message (its package differs between releases), else the type URL ignoring case."""
    known = ix.details_class(type_url) if type_url else None
    return known[0] if known else (type_url or "").lower()


@rule("INDEX-003", title="index names are unique per version (segments excepted)",
      severity="error", spec="004", section=_SEC,
      clause="Index name. Must be unique within one dataset version.",
      pylance="pylance 14.0.2 stores an index as segments: entries sharing a name, with the "
              "same fields and details type and disjoint fragment bitmaps (optimize_indices "
              "adds one per batch of new fragments); create_index(replace=False) on a used "
              "name is refused. Entries sharing a name are accepted as segments when they "
              "agree on fields and type and their bitmaps do not overlap",
      enforces="pylance",
      releases="pylance up to 6.1 names vector index details /lance.table.VectorIndexDetails, "
               "7.1 and later /lance.index.pb.VectorIndexDetails (and 0.36 alone puts the "
               "scalar details in lance.index.pb); every release reads both. A table one "
               "release indexed and another optimized holds segments of both spellings, so "
               "segments agree on type when their details are the same known message")
def unique_names(ctx):
    for name, segs in ix.segments(indices(ctx)).items():
        if len(segs) < 2:
            continue
        first = segs[0]
        for s in segs[1:]:
            if s.fields != first.fields:
                yield Finding(f"index {name!r}: entries cover different fields "
                              f"{list(first.fields)} and {list(s.fields)}", _loc(ctx, s))
            if _details_kind(s.type_url) != _details_kind(first.type_url):
                yield Finding(f"index {name!r}: entries have different types "
                              f"{first.type_url!r} and {s.type_url!r}", _loc(ctx, s))
        both = ix.overlapping_fragments(segs)
        if len(both):
            yield Finding(f"index {name!r}: {len(segs)} entries share the name and their "
                          f"fragment bitmaps overlap on fragments {both[:16].tolist()}",
                          {"path": ctx.manifest_key, "index": name})


@rule("INDEX-004", title="index fields are schema field ids", severity="error", spec="004",
      section=_SEC, clause="The columns to build the index. These refer to file.Field.id.")
def fields_exist(ctx):
    ids = {int(f.id) for f in ctx.manifest.fields}
    for i in indices(ctx):
        missing = [f for f in i.fields if f not in ids]
        if missing:
            yield Finding(f"index {i.name!r} names field ids {missing} that are not in the "
                          f"schema", _loc(ctx, i))


@rule("INDEX-005", title="fragment bitmaps name only fragment ids that were used",
      severity="error", spec="004", section=_SEC,
      clause="A bitmap of the included fragment ids.",
      pylance="pylance 14.0.2 keeps ids of fragments removed later (by delete or compaction) "
              "in the bitmap of an index that was not rebuilt, so ids need not be present in "
              "the version; they must not be above max_fragment_id",
      enforces="pylance")
def bitmap_ids_used(ctx):
    m = ctx.manifest
    if m.HasField("max_fragment_id"):
        top = int(m.max_fragment_id)
    elif fragment_count(ctx):
        return  # FRAG-003 reports the missing max_fragment_id
    else:
        top = -1
    for i in indices(ctx):
        if i.fragment_ids is None or not len(i.fragment_ids):
            continue
        above = i.fragment_ids[i.fragment_ids.astype(np.int64) > top]
        if len(above):
            yield Finding(f"index {i.name!r} covers fragment ids {above[:16].tolist()} above "
                          f"max_fragment_id {top if top >= 0 else '(none)'}", _loc(ctx, i))


@rule("INDEX-006", title="fragment bitmaps are portable 32-bit Roaring bitmaps",
      severity="error", spec="004", section=_SEC,
      clause="The bitmap is stored as a 32-bit Roaring bitmap.")
def bitmap_decodes(ctx):
    for i in indices(ctx):
        if i.bitmap_error:
            yield Finding(f"index {i.name!r}: {i.bitmap_error}", _loc(ctx, i))


@rule("INDEX-007", title="dataset_version is not above the manifest version", severity="error",
      spec="004", section=_SEC, clause="The version of the dataset this index was built from.")
def built_from_past(ctx):
    v = int(ctx.manifest.version)
    for i in indices(ctx):
        if i.dataset_version > v:
            yield Finding(f"index {i.name!r} was built from version {i.dataset_version}, "
                          f"after this version {v}", _loc(ctx, i))


def _size(ctx, store, key: str) -> int:
    """The size of an index file, asked of the store once per run (the versions that list an
    index share its files); NotFound and other store errors are raised each time."""
    sizes = ctx.table.cache.setdefault("index.sizes", {})
    ck = (store.uri, key)
    if ck not in sizes:
        sizes[ck] = store.size(key)
    return sizes[ck]


@rule("INDEX-008", title="listed index files exist with their sizes", severity="error",
      spec="004", section="IndexFile",
      clause="List of files and their sizes for this index segment. This enables skipping "
             "HEAD calls when opening indices",
      pylance="pylance 14.0.2 lists every file of scalar and vector indexes (field 10); the "
              "system indexes __lance_frag_reuse and __lance_mem_wal list none")
def files_exist(ctx):
    for i in indices(ctx):
        for f in i.files:
            if not _relative(f.path):
                continue  # INDEX-013
            name = f"{i.uuid}/{f.path}"
            try:
                store, key = ctx.location("index", name, i.base_id)
                size = _size(ctx, store, key)
            except FormatError as exc:
                yield Finding(f"index {i.name!r} file {f.path!r}: {exc.message}",
                              _loc(ctx, i, file=f.path))
                continue
            except LanceError as exc:
                yield Finding(f"index {i.name!r} file {f.path!r} is missing: {exc}",
                              _loc(ctx, i, file=f.path))
                continue
            if size != f.size_bytes:
                yield Finding(f"index {i.name!r} file {f.path!r} is {size} bytes, the "
                              f"manifest says {f.size_bytes}", _loc(ctx, i, file=f.path))


@rule("INDEX-009", title="known index details parse", severity="error", spec="004",
      section=_SEC,
      clause="Details, specific to the index type, which are needed to load / interpret the "
             "index")
def details_parse(ctx):
    for i in indices(ctx):
        if i.details_error:
            yield Finding(f"index {i.name!r}: {i.details_error}", _loc(ctx, i))


@rule("INDEX-010", title="index details of unknown type", severity="warning", spec="004",
      section=_SEC,
      clause="Indexes are plugins, and so the format of the details message is flexible and "
             "not fully defined by the table format.")
def unknown_details(ctx):
    for i in indices(ctx):
        if i.details is not None and not i.details.known and not i.details_error:
            yield Finding(f"index {i.name!r} has details of unknown type "
                          f"{i.details.type_url!r} ({len(i.details.raw)} bytes, kept as is)",
                          _loc(ctx, i))


@rule("INDEX-011", title="type URLs that differ only in case name one type", severity="error",
      spec="004", section=_SEC,
      clause="Type URLs comparisons are case-insensitive. Thereform an index must have a "
             "unique type URL ignoring case.")
def type_url_case(ctx):
    spellings: dict[str, set[str]] = {}
    for i in indices(ctx):
        if i.type_url is not None:
            spellings.setdefault(i.type_url.lower(), set()).add(i.type_url)
    for _low, seen in sorted(spellings.items()):
        if len(seen) > 1:
            yield Finding(f"type URL spelled {sorted(seen)} in one version; readers compare "
                          f"them ignoring case", {"path": ctx.manifest_key})


@rule("INDEX-012", title="an index uuid means the same index in every version",
      severity="error", spec="004", section=_SEC,
      clause="Unique ID of an index. It is unique across all the dataset versions.",
      scope="table")
def uuid_stable(ctx):
    seen: dict[str, tuple] = {}
    for v in ctx.selected_versions:
        facts = ctx.version_facts(v)
        if facts is None or not facts.indices:
            continue
        here: dict[str, tuple] = {}
        # the details' type is not part of the identity (facts.indices holds name, fields and
        # dataset_version): releases from 1.x on fill it in when they rewrite the metadata of
        # an index an older release made without it
        for u, key, pos in facts.indices:
            if u in here:
                continue  # a duplicate inside one version is INDEX-001's
            here[u] = key
            if u in seen and seen[u][0] != key:
                name, fields, built = key
                yield Finding(f"index uuid {u} is {seen[u][0][0]!r} (fields "
                              f"{list(seen[u][0][1])}, built from v{seen[u][0][2]}) in version "
                              f"{seen[u][1]} but {name!r} (fields {list(fields)}, built "
                              f"from v{built}) in version {v}",
                              {"version": v, "uuid": u, "entry": pos})
        for u, key in here.items():
            seen.setdefault(u, (key, v))


@rule("INDEX-013", title="index file paths stay inside the index directory",
      severity="error", spec="004", section="IndexFile",
      clause='Path relative to the index directory (e.g., "index.idx", "auxiliary.idx")')
def file_paths_relative(ctx):
    for i in indices(ctx):
        for f in i.files:
            if not _relative(f.path):
                yield Finding(f"index {i.name!r} lists file {f.path!r}, which is not a "
                              f"relative path inside _indices/{i.uuid}/", _loc(ctx, i))


@rule("INDEX-014", title="index entries carry index_details", severity="warning", spec="004",
      section=_SEC,
      clause="When Lance APIs refer to indexes they will use the type URL of the index details "
             "as the identifier for the index type.",
      pylance="pylance 14.0.2 writes index_details for every index type it builds; entries "
              "from old writers without details are read as vector indexes",
      releases="pylance up to 0.18 writes no index_details for vector and btree indexes")
def details_present(ctx):
    for i in indices(ctx):
        if i.details is None:
            yield Finding(f"index {i.name!r} has no index_details: its type is unknown",
                          _loc(ctx, i))


# -- index files ---------------------------------------------------------------------------

_FILES_CACHE = "index.files_decoded"  # table cache: (id of store, key) -> why it fails | None


def _index_files(ctx, i: ix.Index):
    """``(store, [(name, key)])`` of the files of index ``i``: those its entry lists (field
    10), or every file under its directory for entries that list none (pylance before
    0.36 lists none). Raises FormatError/LanceError when the directory cannot be resolved."""
    if i.files:
        named = [f.path for f in i.files if _relative(f.path)]  # others: INDEX-013
        out = []
        store = None
        for name in named:
            store, key = ctx.location("index", f"{i.uuid}/{name}", i.base_id)
            out.append((name, key))
        return store, out
    store, probe = ctx.location("index", f"{i.uuid}/index.idx", i.base_id)
    folder = probe.rsplit("/", 1)[0] + "/"
    return store, sorted((o.key[len(folder):], o.key) for o in store.list(folder))


def _decode_index_file(store, key: str) -> str | None:
    """Why the index file at ``key`` does not decode as a Lance file, or None when it does
    or is not one this check reads. A ``.lance`` file must be a Lance file; any other file
    is read only when it ends in the ``LANC`` footer magic (an index plugin may store
    anything else), and a version 0.1 file is left alone: its metadata is the old vector
    index's ``Index`` message rather than a data file's."""
    from reference_impl.file.container import MAGIC
    from reference_impl.file.legacy import TAIL
    from reference_impl.file.reader import LanceFileReader

    from .file_v2_0 import _arrow_errors

    size = store.size(key)
    tail = store.get_range(key, max(0, size - TAIL.size), min(size, TAIL.size))
    if len(tail) < TAIL.size or tail[-4:] != MAGIC:
        return "it ends without the Lance footer magic LANC" if key.endswith(".lance") else None
    _pos, major, minor, _magic = TAIL.unpack(tail)
    if (major, minor) == (0, 1):
        return None
    try:
        LanceFileReader(store, key, size=size).read_all()
    except LanceError as exc:
        return str(exc)
    except _arrow_errors() as exc:
        # pyarrow refused the decoded buffers: the pages do not hold what they claim
        return f"decoded pages are not valid Arrow data: {exc}"
    return None


@rule("INDEX-015", title="index files in the Lance file format decode", severity="error",
      spec="001", section="Dataset Directory", deep=True,
      clause="_indices/{UUID-*}/index.idx -- Secondary index, each index per directory.",
      refusal="an index file in the Lance format (named .lance, or ending in the magic "
              "LANC) whose footer, metadata or pages do not decode cannot be loaded by any "
              "reader of the index: queries that use the index fail or read wrong rows",
      releases="every release from 0.10 writes index files as Lance files (btree "
               "page_data/page_lookup.lance, bitmap, inverted, ngram, zonemap, bloom filter, "
               "vector index.idx/auxiliary.idx) at file version 0.2, 0.3 (2.0), 2.1, 2.2 or "
               "the table's storage version; vector indexes of releases up to 0.22 write "
               "index.idx at version 0.1, an older layout this check does not read")
def index_files_decode(ctx):
    """Every Lance-format file of every index decodes in full (checked once per index
    directory per table, since an index is shared by the versions that list it)."""
    done = ctx.table.cache.setdefault(_FILES_CACHE, {})
    for i in indices(ctx):
        if i.kind == "fragment_reuse" or i.kind == "mem_wal":
            continue  # system indexes: their details are the index, no files
        try:
            store, files = _index_files(ctx, i)
        except LanceError:
            continue  # an unresolvable base path or location: BASEPATH / INDEX-008 report it
        for name, key in files:
            cache_key = (id(store), key)
            if cache_key not in done:
                try:
                    done[cache_key] = _decode_index_file(store, key)
                except LanceError:
                    done[cache_key] = None  # missing or unreadable: INDEX-008 reports it
            if done[cache_key]:
                yield Finding(f"index {i.name!r} file {name!r} does not decode: {done[cache_key]}",
                              _loc(ctx, i, file=name))


# -- fragment reuse -----------------------------------------------------------------------

def _reuse(ctx):
    for i in indices(ctx):
        if i.kind == "fragment_reuse" and i.details is not None and i.details.known:
            yield i


@rule("INDEX-020", title="fragment reuse groups map old rows onto the new fragments",
      severity="error", spec="004", section="FragmentReuseIndexDetails",
      clause="When combined with the old fragment IDs and new fragment IDs, it can recover "
             "the full mapping of old row addresses to either new row addresses or deleted.",
      pylance="pylance 14.0.2 (compact_files with defer_index_remap=True) stores the old "
              "addresses of the surviving rows; the i-th of them moves to the i-th row of the "
              "new fragments, so their count equals the new fragments' physical rows; "
              "ds.remap_row_addrs agrees with this reading")
def reuse_groups(ctx):
    for i in _reuse(ctx):
        try:
            versions = fragment_reuse.decode_versions(i.details.message, store=ctx.store,
                                                      path=ctx.manifest_key)
            for v in versions:
                for gi, g in enumerate(v.groups):
                    try:
                        fragment_reuse.group_mapping(g, path=ctx.manifest_key)
                    except FormatError as exc:
                        yield Finding(f"index {i.name!r} version {v.dataset_version} group "
                                      f"{gi}: {exc.message}", _loc(ctx, i))
                        continue
                    for d in g.old_fragments:
                        if d.num_deleted_rows > d.physical_rows:
                            yield Finding(f"index {i.name!r}: old fragment {d.id} has "
                                          f"{d.num_deleted_rows} deleted of {d.physical_rows} "
                                          f"rows", _loc(ctx, i))
        except FormatError as exc:
            yield Finding(f"index {i.name!r}: {exc.message}", _loc(ctx, i))


@rule("INDEX-021", title="fragment reuse versions are in order and not in the future",
      severity="error", spec="004", section="FragmentReuseIndexDetails",
      clause="The dataset_version at the time the index adds this version entry")
def reuse_versions(ctx):
    v_now = int(ctx.manifest.version)
    for i in _reuse(ctx):
        if i.details.message.WhichOneof("content") != "inline":
            continue
        vs = [int(v.dataset_version) for v in i.details.message.inline.versions]
        if any(b < a for a, b in zip(vs, vs[1:], strict=False)):
            yield Finding(f"index {i.name!r}: version entries out of order {vs}", _loc(ctx, i))
        late = [v for v in vs if v > v_now]
        if late:
            yield Finding(f"index {i.name!r}: version entries {late} are after this version "
                          f"{v_now}", _loc(ctx, i))
