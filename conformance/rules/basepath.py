"""BASEPATH-*: ``Manifest.base_paths`` and the ``base_id`` of files (spec 000 "Base Path
System").

``BasePath`` = {1 id, 2 name?, 3 is_dataset_root, 4 path}. Ids are unique; every
``base_id`` of a data file, deletion file or index names one of them; the path is an
absolute path the object store can interpret, and must not climb out with ``..``.
"""

from __future__ import annotations

from collections import Counter

from .registry import Finding, rule

_SEC = "BasePath Message"


def _file_base_ids(m):
    for frag in m.fragments:
        for df in frag.files:
            if df.HasField("base_id"):
                yield df.base_id, f"data file {df.path}", int(frag.id)
        if frag.HasField("deletion_file") and frag.deletion_file.HasField("base_id"):
            yield frag.deletion_file.base_id, "deletion file", int(frag.id)


@rule("BASEPATH-001", title="base path ids are unique", severity="error", spec="000",
      section=_SEC,
      clause="Each base path entry has a unique numeric identifier that file metadata can "
             "reference")
def unique_ids(ctx):
    counts = Counter(int(b.id) for b in ctx.manifest.base_paths)
    for i, n in sorted(counts.items()):
        if n > 1:
            yield Finding(f"base path id {i} is used {n} times", {"path": ctx.manifest_key})


@rule("BASEPATH-002", title="every base_id names a base path", severity="error", spec="000",
      section="File Metadata Base References",
      clause="When a file's base_id is present, readers must look up the corresponding base "
             "path entry in the manifest's base_paths array", scope="fragment",
      manifest_part=True)
def base_ids_resolve(ctx):
    """Data and deletion files (per fragment) and index entries (the manifest part)."""
    ids = {int(b.id) for b in ctx.manifest.base_paths}
    for bid, what, fid in _file_base_ids(ctx.manifest):
        if bid not in ids:
            yield Finding(f"{what} of fragment {fid} has base_id {bid}, which names no base "
                          f"path", {"fragment": fid})
    idx = getattr(ctx.mf, "index_section", None)
    for im in getattr(idx, "indices", ()) or ():
        if im.HasField("base_id") and im.base_id not in ids:
            yield Finding(f"index {im.name!r} has base_id {im.base_id}, which names no base "
                          f"path", {"path": ctx.manifest_key})


@rule("BASEPATH-003", title="base paths do not traverse with '..'", severity="error",
      spec="000", section=_SEC,
      clause="The path field specifies an absolute path interpretable by the object store.")
def no_traversal(ctx):
    for b in ctx.manifest.base_paths:
        parts = b.path.replace("\\", "/").split("/")
        if ".." in parts or "\x00" in b.path:
            yield Finding(f"base path {b.id} {b.path!r} contains '..' or NUL",
                          {"path": ctx.manifest_key})


@rule("BASEPATH-004", title="base paths are absolute", severity="error", spec="000",
      section=_SEC,
      clause="The path field specifies an absolute path interpretable by the object store.",
      pylance="pylance 14.0.2 stores the URI exactly as the caller gave it, relative paths "
              "included (then resolved against the reader's working directory)",
      enforces="spec")
def absolute(ctx):
    for b in ctx.manifest.base_paths:
        p = b.path
        if not (p.startswith("/") or "://" in p or (len(p) > 2 and p[1] == ":")):
            yield Finding(f"base path {b.id} {p!r} is not absolute", {"path": ctx.manifest_key})


@rule("BASEPATH-005", title="base path ids count up from 0", severity="warning", spec="004",
      section="Manifest",
      clause="the key(a.k.a index) starts from 0, increased by 1 for each new base path.",
      pylance="pylance 14.0.2's write_dataset(initial_bases=[...]) numbers the bases 1, 2, ...; "
              "this rule warns on such datasets (a warning only: readers look bases up by id)",
      enforces="spec")
def ids_count_from_zero(ctx):
    """The ids of ``Manifest.base_paths`` are 0, 1, ..., n-1 (duplicates are BASEPATH-001's)."""
    ids = sorted({int(b.id) for b in ctx.manifest.base_paths})
    if ids != list(range(len(ids))):
        yield Finding(f"base path ids {ids} do not count up from 0 in steps of 1",
                      {"path": ctx.manifest_key})
