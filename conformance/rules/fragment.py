"""FRAG-*: fragments of a manifest (spec 004 ``DataFragment``, ``DataFile``).

``DataFragment`` = {1 id, 2 files, 3 deletion_file, 4 physical_rows, 5/6 row ids, ...}.
Fragment ids are unique and never above ``Manifest.max_fragment_id`` (11, the highest id
ever used). ``physical_rows`` counts every row of the fragment's files, deleted or not, so
it equals each data file's row count. ``DataFile.fields`` names schema field ids (or -2,
a tombstone); ``column_indices`` is empty for legacy files and has one entry per field
otherwise; a field lives in at most one data file of a fragment.
"""

from __future__ import annotations

from collections import Counter

from .context import fragment_count
from .datafile import data_files, file_info, normalize_version
from .registry import Finding, rule

_SEC = "DataFragment"


def _loc(frag, **kw) -> dict:
    return dict({"fragment": int(frag.id)}, **kw)


@rule("FRAG-001", title="fragment ids are unique", severity="error", spec="004",
      section=_SEC, clause="The ID of a DataFragment is unique within a dataset.",
      releases="pylance 0.16.1 wrote two fragments with id 1 in one version (upstream "
               "lance's test data v0.16.0/wrong_data_version_no_fix.lance, the one that "
               "mixes 2.0 and legacy files, DATAFILE-005), which 0.20.0 and 0.38.3 read")
def unique_ids(ctx):
    stats = ctx.fragment_stats
    if stats is not None:  # the engine counted the ids as fragments came and went
        counts = {fid: stats.ids.counts[fid] for fid in stats.duplicate_ids}
    else:
        counts = Counter(int(f.id) for f in ctx.manifest.fragments)
    for fid, n in sorted(counts.items()):
        if n > 1:
            yield Finding(f"fragment id {fid} is used by {n} fragments", {"fragment": fid})


@rule("FRAG-002", title="no fragment id above max_fragment_id", severity="error",
      spec="004", section="Manifest",
      clause="The highest fragment ID that has been used so far.")
def below_max(ctx):
    m = ctx.manifest
    if not m.HasField("max_fragment_id"):
        return  # FRAG-003
    stats = ctx.fragment_stats
    if stats is not None and (stats.max_id is None or stats.max_id <= m.max_fragment_id):
        return  # no fragment id is above it
    for f in m.fragments:
        if f.id > m.max_fragment_id:
            yield Finding(f"fragment id {f.id} is above max_fragment_id {m.max_fragment_id}",
                          _loc(f))


@rule("FRAG-003", title="max_fragment_id is set when there are fragments", severity="warning",
      spec="004", section="Manifest",
      clause="The highest fragment ID that has been used so far. This ID is not guaranteed to "
             "be present in the current version",
      pylance="pylance 14.0.2 leaves max_fragment_id out while no fragment was ever written, "
              "and keeps it after every fragment is deleted", enforces="pylance",
      releases="spec 001 declares the field without 'optional' (releases that wrote it so "
               "leave a 0 off the wire: absent with only fragment 0 is max_fragment_id 0, "
               "no finding); releases before the field existed (0.10.x and earlier) leave it "
               "out with any fragments, and every later release computes the next id from "
               "the fragments")
def max_present(ctx):
    m = ctx.manifest
    n = fragment_count(ctx)
    if m.HasField("max_fragment_id") or not n:
        return
    stats = ctx.fragment_stats
    top = stats.max_id if stats is not None else max(int(f.id) for f in m.fragments)
    if top == 0:
        return  # a non-optional 0 is not written: this is max_fragment_id 0
    yield Finding(f"{n} fragments but no max_fragment_id",
                  {"path": ctx.manifest_key})


def stats_recorded(manifest) -> bool:
    """Whether readers trust the fragment statistics (``physical_rows``, ``num_deleted_rows``)
    of this manifest. Releases before 0.8 wrote no ``writer_version`` and either no statistics
    (pylance 0.7) or wrong ones (pylance 0.8.0's migration filled ``physical_rows`` with the
    live row count); every later release recounts them from the files for such a manifest."""
    return manifest.HasField("writer_version")


@rule("FRAG-004", title="physical_rows equals each data file's row count", severity="error",
      spec="004", section=_SEC,
      clause="Number of original rows in the fragment, this includes rows that are now marked "
             "with deletion tombstones.",
      releases="manifests without writer_version (pylance before 0.8) carry no or wrong "
               "statistics, which every later release recounts from the data files: not checked "
               "there", scope="fragment")
def physical_rows(ctx):
    if not stats_recorded(ctx.manifest):
        return
    for frag, df in data_files(ctx):
        _s, key, info, _err = file_info(ctx, df)
        if info is not None and info.num_rows != frag.physical_rows:
            yield Finding(f"data file has {info.num_rows} rows, fragment physical_rows is "
                          f"{frag.physical_rows}", _loc(frag, path=key or df.path))


@rule("FRAG-005", title="data-file field ids are never -1 (nor below -2)", severity="error",
      spec="004", section="DataFile",
      clause="An object with a value in fields of -1 must not be stored to disk. -2 is used "
             "for \"tombstoned\", meaning a field that is no longer in use.", scope="fragment")
def no_unassigned_ids(ctx):
    for frag, df in data_files(ctx):
        bad = sorted({i for i in df.fields if i == -1 or i < -2})
        if bad:
            yield Finding(f"DataFile.fields holds {bad} (-1 must not be stored; -2 is the only "
                          f"negative id allowed)", _loc(frag, path=df.path))


@rule("FRAG-010", title="data-file field ids exist in the schema or are tombstones (-2)",
      severity="warning", spec="004", section="DataFile",
      clause="-2 is used for \"tombstoned\", meaning a field that is no longer in use.",
      pylance="pylance 14.0.2 drop_columns (Project) leaves the dropped field ids in "
              "DataFile.fields instead of writing -2; readers ignore ids missing from the "
              "schema, so this is a warning", enforces="pylance",
      releases="every pylance release from 0.16 on leaves dropped field ids in DataFile.fields",
      scope="fragment")
def field_ids_known(ctx):
    ids = {f.id for f in ctx.manifest.fields}
    for frag, df in data_files(ctx):
        bad = sorted({i for i in df.fields if i >= 0 and i not in ids})
        if bad:
            yield Finding(f"DataFile.fields names ids {bad} that are not in the schema",
                          _loc(frag, path=df.path))


@rule("FRAG-013", title="data-file field ids were held by some schema of the table",
      severity="error", spec="004", section="DataFile",
      clause="The ids of the fields/columns in this file.",
      pylance="pylance 14.0.2 reads a field whose id no data file of a fragment names as "
              "nulls, and ignores the column an unknown id names: a column relabelled with "
              "an id no field ever had is data read as nulls without an error",
      releases="no release writes it: the ids a release leaves in DataFile.fields that the "
               "schema no longer holds are those of dropped fields (FRAG-010), which an "
               "earlier version's schema held")
def field_ids_ever_held(ctx):
    """``DataFile.fields`` names the dataset fields a data file stores: ids are assigned from
    the table's schema ("offset by the max existing field id in the table"), and an id the
    schema no longer holds is a dropped field's (FRAG-010's warning; -2 is the tombstone).
    An id that no schema of the table ever held names no field at all: the column it points
    at belongs to none, and the field whose column it was reads as nulls.

    Judged on every version the run checks whose whole history up to it the run checked too
    (from version 1, every manifest read: ``--all-versions``), against the schemas of those
    versions: with fewer versions, after ``cleanup_old_versions``, or in a shallow clone or a
    branch whose first versions live elsewhere, a dropped field's schema may be unseen, and
    nothing is said. The schemas come from the facts the engine records of each version and
    the ids from the fragment summaries, so nothing is read again."""
    table = ctx.table
    history = [e.version for e in table.version_entries
               if e.scheme != "detached" and e.version <= ctx.version]
    if not history or min(history) != 1 or any(table.facts.get(v) is None for v in history):
        return
    if ctx.fragment_stats is not None:
        candidates = set(ctx.fragment_stats.unheld_field_ids)
    else:
        candidates = {i for frag in ctx.manifest.fragments
                      for i in unheld_field_ids(ctx.manifest.fields, frag)}
    if not candidates:
        return
    unknown = candidates - _ids_held_up_to(table, history)
    if not unknown:
        return
    m = ctx.manifest  # only a table that breaks the rule decodes its fragments here
    for frag in m.fragments:
        stored = {int(i) for f in frag.files for i in f.fields}
        for df in frag.files:
            for fid in sorted(unknown & {int(i) for i in df.fields}):
                lost = [f.name for f in m.fields if f.parent_id == -1 and int(f.id) not in stored]
                tail = f"; the fragment stores no column of {lost} (read as nulls)" if lost else ""
                yield Finding(f"DataFile.fields names id {fid}, which no schema of the table "
                              f"ever held{tail}",
                              {"path": ctx.manifest_key, "fragment": int(frag.id),
                               "file": df.path})


_HELD = "frag.ids_held"  # table cache: (versions folded in, the ids their schemas hold)


def _ids_held_up_to(table, history: list[int]) -> set[int]:
    """The field ids the schemas of the versions ``history`` hold (ascending versions, whose
    facts are all recorded), folded in as the engine moves up the history."""
    seen, held = table.cache.get(_HELD, ((), set()))
    if list(seen) != history[:len(seen)]:
        seen, held = (), set()
    held = set(held)
    for v in history[len(seen):]:
        held |= table.facts[v].field_ids
    table.cache[_HELD] = (tuple(history), held)
    return held


def unheld_field_ids(schema_fields, frag) -> tuple:
    """The field ids (not the -2 tombstone) the data files of ``frag`` name that the schema
    ``schema_fields`` does not hold, ascending."""
    held = {int(f.id) for f in schema_fields}
    return tuple(sorted({int(i) for df in frag.files for i in df.fields
                         if int(i) >= 0 and int(i) not in held}))


def data_files_of(manifest):
    """Every (fragment, data file) of ``manifest``."""
    for frag in manifest.fragments:
        for df in frag.files:
            yield frag, df


@rule("FRAG-006", title="column_indices is shaped as the file version requires",
      severity="error", spec="004", section="DataFile",
      clause="If the data file is version 1 then this property will be empty. Otherwise there "
             "must be one entry for each field in `fields`.", scope="fragment")
def column_indices_shape(ctx):
    for frag, df in data_files(ctx):
        legacy = normalize_version(df.file_major_version, df.file_minor_version) == "legacy"
        n, k = len(df.fields), len(df.column_indices)
        if legacy and k:
            yield Finding(f"legacy data file has {k} column_indices (must be empty)",
                          _loc(frag, path=df.path))
        elif not legacy and k != n:
            yield Finding(f"{n} fields but {k} column_indices", _loc(frag, path=df.path))
        elif not legacy and any(c < -1 for c in df.column_indices):
            yield Finding("column_indices holds a value below -1", _loc(frag, path=df.path))


@rule("FRAG-007", title="no column index is used twice (other than -1)", severity="error",
      spec="004", section="DataFile",
      clause="Some fields may not correspond to a top-level column in the file. In these "
             "cases the index will -1.", scope="fragment")
def unique_column_indices(ctx):
    for frag, df in data_files(ctx):
        counts = Counter(c for c in df.column_indices if c != -1)
        dup = sorted(c for c, n in counts.items() if n > 1)
        if dup:
            yield Finding(f"column indices {dup} are used twice", _loc(frag, path=df.path))


@rule("FRAG-008", title="a field is stored once in a fragment (one data file, one entry)",
      severity="error", spec="004", section="DataFile",
      clause="-2 is used for \"tombstoned\", meaning a field that is no longer in use. This is "
             "often because the original field id was reassigned to a different data file.",
      scope="fragment")
def field_in_one_file(ctx):
    """A field id (other than the negative markers) appears once in the ``fields`` of a
    fragment's data files: in two files, or twice in one file's list, it names two columns
    and readers disagree on which one holds the field (pylance 14.0.2 and our reader return
    different rows). No release writes either; the cross-release corpus has none."""
    for frag in ctx.manifest.fragments:
        seen: dict[int, str] = {}
        for df in frag.files:
            in_file: set[int] = set()
            for fid in df.fields:
                if fid < 0:
                    continue
                if fid in in_file:
                    yield Finding(f"field {fid} is listed twice in {df.path}",
                                  _loc(frag, field=int(fid)))
                elif fid in seen and seen[fid] != df.path:
                    yield Finding(f"field {fid} is in both {seen[fid]} and {df.path}",
                                  _loc(frag, field=int(fid)))
                in_file.add(fid)
                seen.setdefault(fid, df.path)


def _one_column(f) -> bool:
    """A struct field a 2.1+ file stores as one column: a packed struct (metadata
    ``lance-encoding:packed`` or the bare ``packed`` key set to ``true``) or a blob v2 column
    (extension ``lance.blob.v2``, whose children describe its descriptor)."""
    from reference_impl.file.arrow_types import PACKED_KEYS
    from reference_impl.table.blob import EXTENSION_KEY, EXTENSION_NAME

    if f.extension_name == EXTENSION_NAME \
            or f.metadata.get(EXTENSION_KEY.decode(), b"") == EXTENSION_NAME.encode():
        return True
    return any(f.metadata.get(k.decode(), b"").lower() == b"true" for k in PACKED_KEYS)


@rule("FRAG-012", title="2.1+ data files list leaf fields only", severity="error",
      spec="FACTS", section="Fragments, data files, deletion files",
      clause="fields / column_indices: 2.1+ leaf field ids only with column_indices `[0..n)`",
      refusal="a 2.1+ file stores one column per leaf: a list or struct id in DataFile.fields "
              "names no column, and the leaf it displaced is not read (pylance 14.0.2 refuses "
              "the table: 'Non-leaf field ... in data file')",
      releases="pylance 0.17 and 0.18, where 2.1 was still unstable, listed list and struct "
               "parents too; 14.0.2 refuses those tables (the kit's FILE rules refuse their "
               "files as well). A packed struct and a blob v2 column are one column each, so "
               "leaves; every release since 0.38 lists a packed struct so", scope="fragment")
def leaf_fields_only(ctx):
    fields = list(ctx.manifest.fields)
    parents = {f.parent_id for f in fields}
    by_id = {f.id: f for f in fields}
    for frag in ctx.manifest.fragments:
        for df in frag.files:
            if normalize_version(df.file_major_version, df.file_minor_version) in ("legacy", (2, 0)):
                continue
            for fid in df.fields:
                f = by_id.get(fid)
                if f is not None and fid in parents and not _one_column(f):
                    yield Finding(f"{df.path} lists field {fid} ({f.name!r}, {f.logical_type}), "
                                  f"which has children: a {df.file_major_version}."
                                  f"{df.file_minor_version} file stores leaves only",
                                  _loc(frag, field=int(fid)))


@rule("FRAG-009", title="every fragment has at least one data file", severity="warning",
      spec="004", section=_SEC,
      clause="If column exists in the schema of a dataset, but the file for that column does "
             "not exist within a DataFragment of that dataset, that column consists entirely "
             "of nulls.", scope="fragment")
def has_files(ctx):
    for frag in ctx.manifest.fragments:
        if not len(frag.files):
            yield Finding(f"fragment {frag.id} has no data file", _loc(frag))


@rule("FRAG-011", title="legacy data files list their field ids sorted", severity="error",
      spec="004", section="DataFile",
      clause="In Lance v1 these ids must be sorted but might not always be contiguous.",
      scope="fragment")
def legacy_sorted(ctx):
    for frag, df in data_files(ctx):
        if normalize_version(df.file_major_version, df.file_minor_version) != "legacy":
            continue
        ids = list(df.fields)
        if ids != sorted(ids):
            yield Finding(f"legacy DataFile.fields {ids} is not sorted", _loc(frag, path=df.path))
