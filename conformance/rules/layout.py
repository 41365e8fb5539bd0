"""LAYOUT-*: the directory structure of a dataset (spec 000 "Basic Layout", "File Naming
Conventions").

``{root}/`` holds ``data/`` (``*.lance``), ``_versions/`` (``*.manifest``),
``_transactions/`` (``*.txn``), ``_deletions/`` (``*.arrow``, ``*.bin``), ``_indices/``,
``_refs/`` and ``tree/``. Data file names are 50 characters from a UUID: the first 3 bytes as
24 binary digits, the other 13 as 26 hex digits, then ``.lance``. Paths taken from metadata
never leave their directory (LAYOUT-005, raised by ``reference_impl.io.base.check_key``).
Transaction files are ``{read_version}-{uuid}.txn`` (LAYOUT-006), deletion files
``{fragment_id}-{read_version}-{id}.arrow|.bin`` (LAYOUT-007).
"""

from __future__ import annotations

import re

from reference_impl.errors import FormatError
from reference_impl.io.base import check_key

from .registry import Finding, rule

# The spec's sub-directories, plus `_mem_wal/` which pylance 14.0.2 creates for its MemWAL
# shards (observed behaviour, not in the spec's layout list).
KNOWN_DIRS = {"data", "_versions", "_transactions", "_deletions", "_indices", "_refs", "tree",
              "_mem_wal"}
DATA_NAME = re.compile(r"^[01]{24}[0-9a-f]{26}\.lance$")
#: the uuid-based names of releases before 0.38: a hyphenated UUID
UUID_NAME = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\.lance$")
#: a root file releases before 0.17 kept next to _versions/
OLD_ROOT_FILES = {"_latest.manifest"}


@rule("LAYOUT-001", title="_versions/ holds at least one manifest", severity="error",
      spec="000", section="Basic Layout",
      clause="_versions/ *.manifest -- Manifest files (one per version)", scope="table")
def has_versions(ctx):
    if not ctx.version_entries:
        yield Finding("no manifest in _versions/: the dataset has no version",
                      {"path": "_versions"})


@rule("LAYOUT-002", title="data file names follow the UUID pattern", severity="warning",
      spec="000", section="File Naming Conventions",
      clause="converting the first 3 bytes to a 24-character binary string and the remaining "
             "13 bytes to a 26-character hex string, resulting in a 50-character filename.",
      releases="pylance before 0.38 (and lancedb bundling it) names data files with a "
               "hyphenated UUID, also uuid-based and accepted; 0.38 and later write the "
               "50-character names", scope="fragment")
def data_names(ctx):
    for frag in ctx.manifest.fragments:
        for df in frag.files:
            name = df.path.rsplit("/", 1)[-1]
            if not DATA_NAME.match(name) and not UUID_NAME.match(name):
                yield Finding(f"data file name {df.path!r} is not 24 binary + 26 hex digits "
                              f"+ .lance", {"fragment": int(frag.id), "path": df.path})


@rule("LAYOUT-003", title="the root holds only the known sub-directories", severity="warning",
      spec="000", section="Dataset Root",
      clause="The dataset root contains the standard subdirectory structure (data/, "
             "_versions/, _deletions/, _indices/, _refs/, tree/)", scope="table",
      releases="pylance before 0.17 also keeps _latest.manifest (a copy of the newest manifest) "
               "in the root; accepted")
def known_dirs(ctx):
    try:
        files, dirs = ctx.store.list_dir("")
    except Exception:  # noqa: BLE001
        return
    nested = set(getattr(ctx, "nested_dirs", ()))  # a branch root holds its sub-branches
    for d in sorted(dirs):
        if d.rstrip("/") not in KNOWN_DIRS | nested:
            yield Finding(f"unknown directory {d!r} in the dataset root", {"path": d})
    for f in sorted(files, key=lambda i: i.key):
        if f.key in OLD_ROOT_FILES:
            continue
        yield Finding(f"file {f.key!r} directly in the dataset root", {"path": f.key})


@rule("LAYOUT-005", title="paths from metadata stay inside their directory",
      severity="error", spec="000", section="Dataset Portability",
      clause="All file paths within Lance files are stored relative to their containing "
             "directory", scope="fragment", manifest_part=True)
def no_escape(ctx):
    """Data file paths (per fragment) and ``transaction_file`` (the manifest part)."""
    m = ctx.manifest
    for frag in m.fragments:
        for df in frag.files:
            try:
                check_key(df.path)
            except FormatError as exc:
                yield Finding(f"data file path: {exc.message}",
                              {"fragment": int(frag.id), "path": df.path})
    if ctx.whole_manifest and m.transaction_file:
        try:
            check_key(m.transaction_file)
            if "/" in m.transaction_file:
                raise FormatError("transaction_file has a directory part", path=m.transaction_file)
        except FormatError as exc:
            yield Finding(f"transaction_file: {exc.message}", {"path": m.transaction_file})


@rule("LAYOUT-006", title="transaction file names follow {read_version}-{uuid}.txn",
      severity="warning", spec="000", section="File Naming Conventions",
      clause="Pattern: _transactions/{read_version}-{uuid}.txn", scope="table")
def txn_names(ctx):
    from .transaction import TXN_NAME

    try:
        files, _dirs = ctx.store.list_dir("_transactions")
    except Exception:  # noqa: BLE001
        return
    for f in sorted(files, key=lambda i: i.key):
        name = f.key.rsplit("/", 1)[-1]
        if not TXN_NAME.match(name):
            yield Finding(f"{name!r} in _transactions/ is not {{read_version}}-{{uuid}}.txn",
                          {"path": f"_transactions/{name}"})


DELETION_NAME = re.compile(r"^\d+-\d+-\d+\.(arrow|bin)$")


@rule("LAYOUT-007", title="deletion file names follow {fragment_id}-{read_version}-{id}.{ext}",
      severity="warning", spec="000", section="File Naming Conventions",
      clause="Pattern: _deletions/{fragment_id}-{read_version}-{id}.{extension} Deletion files "
             "use two extensions: .arrow for Arrow IPC format (sparse deletions) and .bin for "
             "Roaring bitmap format (dense deletions).", scope="table")
def deletion_names(ctx):
    """Every file directly in ``_deletions/`` is named by the pattern (decimal numbers,
    extension .arrow or .bin); a reader builds deletion paths from the pattern, so a file
    named otherwise is never read."""
    try:
        files, _dirs = ctx.store.list_dir("_deletions")
    except Exception:  # noqa: BLE001 - no _deletions/ directory: nothing to check
        return
    for f in sorted(files, key=lambda i: i.key):
        name = f.key.rsplit("/", 1)[-1]
        if not DELETION_NAME.match(name):
            yield Finding(f"{name!r} in _deletions/ is not "
                          f"{{fragment_id}}-{{read_version}}-{{id}}.arrow|.bin",
                          {"path": f"_deletions/{name}"})
