"""DATAFILE-*: the data files a manifest names (spec 004 ``DataFile``, FACTS §A).

``DataFile`` = {1 path (relative to ``data/`` or to its base path), 2 fields,
3 column_indices, 4 file_major_version, 5 file_minor_version, 6 file_size_bytes,
7 base_id}. Each file must exist, be ``file_size_bytes`` long when that is non-zero, end in
a valid footer, and carry the version its ``DataFile`` entry and ``Manifest.data_format``
announce. Version pairs: (0,0),(0,1),(0,2) legacy; (0,3) and (2,0) mean 2.0; then
(2,1), (2,2), (2,3). These checks read only each file's footer and FileDescriptor (a few
hundred bytes), so they run without ``--deep``.
"""

from __future__ import annotations

from reference_impl.errors import FormatError, LanceError, NotFound

from .registry import Finding, rule

_SEC = "Lance data files v2.x"
DATA_FORMATS = {"0.1": "legacy", "legacy": "legacy", "2.0": (2, 0), "2.1": (2, 1),
                "2.2": (2, 2), "2.3": (2, 3)}
#: the ``data_format.version`` strings releases write and read (pylance 14.0.2 refuses any
#: other, ``legacy`` included, though the kit's own lookup above accepts that spelling)
STORAGE_VERSIONS = ("0.1", "2.0", "2.1", "2.2", "2.3")


def normalize_version(major: int, minor: int):
    """'legacy' for (0,0..2), (2,0) for (0,3), else (major, minor)."""
    if major == 0 and minor < 3:
        return "legacy"
    if (major, minor) == (0, 3):
        return (2, 0)
    return (major, minor)


def data_files(ctx):
    """Every (fragment, data_file) pair of the version, in manifest order."""
    for frag in ctx.manifest.fragments:
        for df in frag.files:
            yield frag, df


def file_info(ctx, df):
    """``(store, key, ContainerInfo | None, error | None)`` for a data file (cached)."""
    from conformance.engine import access

    cache = ctx.table.cache.setdefault("datafile_info", {})
    base_id = df.base_id if df.HasField("base_id") else None
    # the same path under the same root (the table's, or a base path) is the same object in
    # every version and ref: its footer is read once per run
    root = ctx.table.store.uri if base_id is None else _base_path_of(ctx.manifest, base_id)
    ck = (df.path, base_id, root)
    if ck in cache:
        return cache[ck]
    store = key = info = err = None
    try:
        store, key = ctx.location("data", df.path, base_id)
        size = store.size(key)
        # under --deep the engine keeps the tail window for the deep check of the same file
        info = access.read_container_info(store, key, size,
                                          ctx.table.cache.get("datafile_tails"))
    except (FormatError, NotFound, LanceError) as exc:
        err = exc
    except (OSError, ValueError) as exc:
        err = FormatError(f"cannot read data file: {exc}", rule="DATAFILE-003", path=df.path)
    cache[ck] = (store, key, info, err)
    return cache[ck]


def _base_path_of(manifest, base_id):
    """The path ``base_id`` names in ``manifest`` (None without a base id or such a base)."""
    if base_id is None:
        return None
    for b in manifest.base_paths:
        if b.id == base_id:
            return b.path
    return None


def _loc(frag, df, key=None):
    return {"fragment": int(frag.id), "path": key or df.path}


@rule("DATAFILE-001", title="every data file exists", severity="error", spec="004",
      section="DataFile", clause="Path to the root relative to the dataset's URI.",
      scope="fragment")
def exists(ctx):
    for frag, df in data_files(ctx):
        _s, key, _info, err = file_info(ctx, df)
        if isinstance(err, NotFound):
            yield Finding(f"data file {df.path} of fragment {frag.id} does not exist",
                          _loc(frag, df, key))


@rule("DATAFILE-002", title="file size equals file_size_bytes when recorded",
      severity="error", spec="004", section="DataFile",
      clause="The known size of the file on disk in bytes.",
      releases="legacy (0.1) data files of pylance 0.27 to 7.x, and of lancedb 0.22 to 0.33, "
               "record a file_size_bytes a few KiB below the file's size; the cross-release "
               "corpus lists them as expected findings", scope="fragment")
def size_matches(ctx):
    for frag, df in data_files(ctx):
        _s, key, info, _err = file_info(ctx, df)
        if info is not None and df.file_size_bytes and info.size != df.file_size_bytes:
            yield Finding(f"data file is {info.size} bytes, DataFile.file_size_bytes says "
                          f"{df.file_size_bytes}", _loc(frag, df, key))


@rule("DATAFILE-003", title="every data file ends in a valid footer", severity="error",
      spec="FACTS", section=_SEC,
      clause="40-byte footer `<QQQIIHH` + `LANC` ... Legacy files end with a 16-byte tail "
             "(u64 metadata position, 0, 2, `LANC`) pointing at `lance.file.Metadata`.",
      refusal='a data file without a valid footer or tail cannot be read', scope="fragment")
def footer_valid(ctx):
    for frag, df in data_files(ctx):
        _s, key, _info, err = file_info(ctx, df)
        if isinstance(err, FormatError) and err.rule not in ("BASEPATH-002", "BASEPATH-003",
                                                             "LAYOUT-005"):
            yield Finding(err.message, dict(_loc(frag, df, key), offset=err.offset))


@rule("DATAFILE-004", title="the footer version agrees with the DataFile entry",
      severity="error", spec="004", section="DataFile",
      clause="The major file version used to create the file ... If both `file_major_version` "
             "and `file_minor_version` are set to 0, then this is a version 0.1 or version 0.2 "
             "file.", scope="fragment")
def version_matches_entry(ctx):
    for frag, df in data_files(ctx):
        _s, key, info, _err = file_info(ctx, df)
        if info is None:
            continue
        have = normalize_version(info.major, info.minor)
        want = normalize_version(df.file_major_version, df.file_minor_version)
        if have != want:
            yield Finding(f"file footer says {info.major}.{info.minor}, DataFile says "
                          f"{df.file_major_version}.{df.file_minor_version}",
                          _loc(frag, df, key))


@rule("DATAFILE-005", title="data files agree with Manifest.data_format", severity="error",
      spec="004", section="Manifest",
      clause="Every file in this version of the dataset has the same file_format version.",
      releases="pylance 0.16.x could record data_format 0.1 over 2.0 files (all of one "
               "version): that case is DATAFILE-009, a warning; a mixture of file versions "
               "in one version is refused by every later writer ('a mixture of file "
               "versions') and stays an error here. 0.16.1 wrote such a mixture (upstream "
               "lance's test data v0.16.0/wrong_data_version_no_fix.lance: 2.0 and legacy "
               "files under data_format 0.1), which 0.20.0 and 0.38.3 read but do not modify")
def version_matches_format(ctx):
    fmt, want, have, _count = _format_and_file_versions(ctx)
    if want is None:
        return  # DATAFILE-007
    if _understated_legacy_format(want, have):
        return  # DATAFILE-009
    if have <= {want}:
        return  # every data file has the announced version
    for frag, df in data_files(ctx):
        version = normalize_version(df.file_major_version, df.file_minor_version)
        if version != want:
            yield Finding(f"DataFile version {df.file_major_version}."
                          f"{df.file_minor_version} does not match data_format {fmt!r}",
                          _loc(frag, df))


def _format_and_file_versions(ctx) -> tuple:
    """``(data_format version text, its normalized version or None, {normalized version of
    every DataFile}, number of DataFiles)`` of the context's manifest."""
    fmt = ctx.manifest.data_format.version if ctx.manifest.HasField("data_format") else ""
    stats = ctx.fragment_stats
    if stats is not None:  # the engine tallied the data files' versions
        return fmt, DATA_FORMATS.get(fmt), set(stats.file_versions), \
            sum(stats.file_versions.values())
    files = list(data_files(ctx))
    have = {normalize_version(df.file_major_version, df.file_minor_version) for _f, df in files}
    return fmt, DATA_FORMATS.get(fmt), have, len(files)


def _understated_legacy_format(want, have: set) -> bool:
    """True when data_format says legacy (0.1) while every data file is of one 2.x version."""
    return want == "legacy" and len(have) == 1 and "legacy" not in have


@rule("DATAFILE-009", title="data_format is not below the version of the data files",
      severity="warning", spec="004", section="Manifest",
      clause="The max format version of the data files.",
      releases="pylance 0.16.x recorded data_format 0.1 over a table of 2.0 files; readers "
               "take each file's version from its DataFile entry, and releases from 0.17 "
               "read such a table and write the files' version at their next commit")
def format_understated(ctx):
    fmt, want, have, count = _format_and_file_versions(ctx)
    if want is not None and _understated_legacy_format(want, have):
        (version,) = have
        yield Finding(f"data_format says {fmt!r} but all {count} data files are "
                      f"{version[0]}.{version[1]} files", {"path": ctx.manifest_key})


@rule("DATAFILE-006", title="column indices fit the file's column count", severity="error",
      spec="004", section="DataFile",
      clause="The top-level column indices for each field in the file.", scope="fragment")
def column_count(ctx):
    for frag, df in data_files(ctx):
        _s, key, info, _err = file_info(ctx, df)
        if info is None or info.num_columns is None or not len(df.column_indices):
            continue
        top = max(df.column_indices)
        if top >= info.num_columns:
            yield Finding(f"column index {top} but the file has {info.num_columns} columns",
                          _loc(frag, df, key))


@rule("DATAFILE-010", title="Manifest.data_format's version is a storage version", severity="error",
      spec="004", section="Manifest",
      clause="The max format version of the data files. The format of the version can vary by "
             "file_format and is not required to follow semver.",
      refusal="a reader cannot tell which file format a version it does not know names: "
              "pylance 14.0.2 refuses to open such a table ('Unknown Lance storage version: "
              "0./'), for malformed and unknown versions alike",
      releases="every release from 0.16 writes 0.1, 2.0, 2.1, 2.2 or 2.3 (the corpus of 53 "
               "writers holds no other); before 0.16 none is written, which draws no finding")
def storage_version_known(ctx):
    """``data_format.version`` of a ``lance`` table is one of the storage versions (the file
    format of another ``file_format`` is not this rule's to judge: DATAFILE-007 warns)."""
    m = ctx.manifest
    if not m.HasField("data_format") or m.data_format.file_format != "lance":
        return
    if m.data_format.version not in STORAGE_VERSIONS:
        yield Finding(f"data_format version {m.data_format.version!r} is none of "
                      f"{', '.join(STORAGE_VERSIONS)}", {"path": ctx.manifest_key})


@rule("DATAFILE-007", title="Manifest.data_format names a known format", severity="warning",
      spec="FACTS", section="Versions and defaults",
      clause="`write_dataset(..., data_storage_version=...)` accepts `legacy`/`0.1`, `2.0`, "
             "`2.1`, `2.2`, `2.3`",
      releases="pylance before 0.16 writes no data_format (readers infer it from the data "
               "files, and from writer flags in 0.15): its absence draws no finding")
def known_format(ctx):
    m = ctx.manifest
    if not m.HasField("data_format"):
        return  # releases before 0.16 did not write it; readers infer it from the files
    if m.data_format.file_format != "lance" or m.data_format.version not in DATA_FORMATS:
        yield Finding(f"unknown data_format {m.data_format.file_format!r} "
                      f"{m.data_format.version!r}", {"path": ctx.manifest_key})
