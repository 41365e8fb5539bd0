"""DELETION rules: the deletion files a version's fragments name (spec 001 "Dataset Update
and Schema Evolution", spec 004 ``DeletionFile``, FACTS "Fragments, data files, deletion
files").

Every check runs per fragment that carries a ``deletion_file`` (scope ``fragment``, but
DELETION-006, which compares with the manifest's version). The file is located with
``ctx.location("deletion", name, base_id)`` (base-path rules of spec 000), read once per run
(the bytes kept on the table context, up to :data:`KEPT_BYTES`) and decoded once per context
by :func:`deleted_offsets` (cached in ``ctx.cache``), which the ROWID rules reuse to tell live
rows from deleted ones.

Where the spec and pylance 14.0.2 differ: the spec calls the ``.arrow`` content an Int32
array; pylance writes ``row_id: uint32 not null``. DELETION-007 accepts both (UInt32 as
pylance writes it, Int32 as the spec says) and refuses anything else.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from reference_impl.errors import FormatError, NotFound
from reference_impl.table import deletion as D

from .registry import Finding, rule

_CACHE = "deletion.offsets"
_SECTION = "Dataset Update and Schema Evolution"


def _name(frag) -> str:
    d = frag.deletion_file
    return D.deletion_file_name(frag.id, d.read_version, d.id, d.file_type)


def _where(ctx, frag, key: str | None = None) -> dict:
    loc = {"version": ctx.version, "fragment_id": frag.id}
    if key is not None:
        loc["path"] = key
    return loc


def _with_deletion(ctx) -> Iterator:
    for frag in ctx.manifest.fragments:
        if frag.HasField("deletion_file"):
            yield frag


def _load(ctx, frag) -> dict:
    """Decode ``frag``'s deletion file once: ``{"key", "data", "offsets", "error"}``.
    ``offsets`` are decoded without the ``physical_rows`` bound (DELETION-004 checks it)
    but with a cap of ``max(physical_rows, 1) * 2 + 1024`` values so garbage cannot
    allocate without limit."""
    cache = ctx.cache.setdefault(_CACHE, {})
    if frag.id in cache:
        return cache[frag.id]
    out = {"key": None, "data": None, "offsets": None, "error": None}
    cache[frag.id] = out
    d = frag.deletion_file
    try:
        name = _name(frag)
        base_id = d.base_id if d.HasField("base_id") else None
        store, key = ctx.location("deletion", name, base_id)
        out["key"] = key
        out["data"] = _file_bytes(ctx, store, key)
        cap = max(frag.physical_rows, 1) * 2 + 1024
        out["offsets"] = D.decode_deletion_file(out["data"], d.file_type, max_rows=cap, path=key)
    except NotFound as exc:
        out["error"] = FormatError(f"deletion file is missing: {exc}", rule="DELETION-001",
                                   path=out["key"])
    except FormatError as exc:
        out["error"] = exc
    return out


#: bytes of deletion files a run keeps, so a file several fragment units name is read once
KEPT_BYTES = 64 << 20


def _file_bytes(ctx, store, key: str) -> bytes:
    """The bytes of the deletion file ``key`` (bounded), read once per run and table root
    while they fit in :data:`KEPT_BYTES`; a missing file raises NotFound."""
    kept = ctx.table.cache.setdefault("deletion.files", {"bytes": 0, "files": {}})
    ck = (store.uri, key)
    if ck not in kept["files"]:
        size = store.size(key)
        if size > D.DEFAULT_MAX_SIZE:
            raise FormatError(f"deletion file of {size} bytes exceeds the limit",
                              rule="DELETION-003", path=key)
        data = store.get(key, max_size=D.DEFAULT_MAX_SIZE)
        if kept["bytes"] + len(data) > KEPT_BYTES:
            return data
        kept["bytes"] += len(data)
        kept["files"][ck] = data
    return kept["files"][ck]


def deleted_offsets(ctx, frag) -> np.ndarray | None:
    """Sorted deleted offsets of ``frag`` (empty without a deletion file), or None when
    its deletion file cannot be read (the DELETION rules report why)."""
    if not frag.HasField("deletion_file"):
        return np.empty(0, np.uint32)
    return _load(ctx, frag)["offsets"]


@rule(
    "DELETION-001", title="The deletion file a fragment names exists",
    severity="error", spec="001", section=_SECTION,
    clause="Rows can be marked deleted by adding a deletion file next to the data in the "
           "_deletions folder.",
    scope="fragment",
)
def deletion_file_exists(ctx) -> Iterator[Finding]:
    for frag in _with_deletion(ctx):
        loaded = _load(ctx, frag)
        err = loaded["error"]
        if err is not None and err.rule == "DELETION-001":
            yield Finding(f"fragment {frag.id}: deletion file {loaded['key']} does not exist",
                          _where(ctx, frag, loaded["key"]))


@rule(
    "DELETION-002", title="Deletion file type is ARROW_ARRAY or BITMAP",
    severity="error", spec="001", section=_SECTION,
    clause="The suffix is determined by the file type (.arrow for Arrow file, .bin for "
           "roaring bitmap).",
    scope="fragment",
)
def deletion_file_type_known(ctx) -> Iterator[Finding]:
    for frag in _with_deletion(ctx):
        t = frag.deletion_file.file_type
        if t not in D.EXTENSIONS:
            yield Finding(f"fragment {frag.id}: deletion file type {t} is neither ARROW_ARRAY (0) "
                          f"nor BITMAP (1)", _where(ctx, frag))


@rule(
    "DELETION-003", title="Deletion file content is the format its type names",
    severity="error", spec="004", section="DeletionFile",
    clause="A single Int32Array of deleted row offsets, stored as an Arrow IPC file with one "
           "batch and one column. Has a .arrow extension. / A Roaring Bitmap of deleted row "
           "offsets. Has a .bin extension.",
    scope="fragment",
)
def deletion_file_decodes(ctx) -> Iterator[Finding]:
    for frag in _with_deletion(ctx):
        loaded = _load(ctx, frag)
        err = loaded["error"]
        if err is not None and err.rule == "DELETION-003":
            yield Finding(f"fragment {frag.id}: {err.message}", _where(ctx, frag, loaded["key"]))


@rule(
    "DELETION-004", title="Deleted offsets are below the fragment's physical_rows",
    severity="error", spec="001", section=_SECTION,
    clause="These files contain the indices of rows that have between deleted for some fragment.",
    scope="fragment",
)
def deletion_offsets_in_range(ctx) -> Iterator[Finding]:
    from .fragment import stats_recorded

    if not stats_recorded(ctx.manifest):
        return  # releases before 0.8: statistics are recounted by every reader
    for frag in _with_deletion(ctx):
        loaded = _load(ctx, frag)
        offsets = loaded["offsets"]
        if loaded["error"] is not None and loaded["error"].rule == "DELETION-004":
            yield Finding(f"fragment {frag.id}: {loaded['error'].message}",
                          _where(ctx, frag, loaded["key"]))
        elif offsets is not None and offsets.size and int(offsets[-1]) >= frag.physical_rows:
            bad = int(np.count_nonzero(offsets >= frag.physical_rows))
            yield Finding(f"fragment {frag.id}: {bad} deleted offset(s) (largest "
                          f"{int(offsets[-1])}) not below physical_rows {frag.physical_rows}",
                          _where(ctx, frag, loaded["key"]))


@rule(
    "DELETION-005", title="num_deleted_rows equals the number of offsets in the file",
    severity="error", spec="004", section="DeletionFile",
    clause="The number of rows that are marked as deleted. (uint64 num_deleted_rows = 4)",
    scope="fragment",
)
def deletion_count_matches(ctx) -> Iterator[Finding]:
    from .fragment import stats_recorded

    if not stats_recorded(ctx.manifest):
        return  # releases before 0.8: statistics are recounted by every reader
    for frag in _with_deletion(ctx):
        loaded = _load(ctx, frag)
        offsets = loaded["offsets"]
        claimed = frag.deletion_file.num_deleted_rows
        if offsets is not None and offsets.size != claimed:
            yield Finding(f"fragment {frag.id}: num_deleted_rows is {claimed} but the deletion "
                          f"file holds {offsets.size} distinct offsets",
                          _where(ctx, frag, loaded["key"]))


@rule(
    "DELETION-006", title="Deletion file read_version is below the manifest version",
    severity="error", spec="001", section=_SECTION,
    clause="read_version is the version of the dataset that it was created off of (usually one "
           "less than the version it was committed to)",
)
def deletion_read_version(ctx) -> Iterator[Finding]:
    version = ctx.manifest.version
    stats = ctx.fragment_stats
    if stats is not None:
        top = stats.deletion_read_versions.max()
        if top is None or top < version:
            return  # every deletion file was read from an earlier version
    for frag in _with_deletion(ctx):
        rv = frag.deletion_file.read_version
        if rv >= version:
            yield Finding(f"fragment {frag.id}: deletion file read_version {rv} is not below the "
                          f"manifest version {version}", _where(ctx, frag))


@rule(
    "DELETION-007", title="Arrow deletion file holds one Int32 or UInt32 column without nulls",
    severity="error", spec="004", section="DeletionFile",
    clause="A single Int32Array of deleted row offsets, stored as an Arrow IPC file with one "
           "batch and one column.",
    pylance="pylance 14.0.2 writes the column as `row_id: uint32 not null`; the spec says Int32. "
            "Both are accepted; any other type, a second column, nulls or negative offsets fail.",
    enforces="pylance",
    scope="fragment",
)
def deletion_arrow_column(ctx) -> Iterator[Finding]:
    for frag in _with_deletion(ctx):
        loaded = _load(ctx, frag)
        err = loaded["error"]
        if err is not None and err.rule == "DELETION-007":
            yield Finding(f"fragment {frag.id}: {err.message}", _where(ctx, frag, loaded["key"]))


@rule(
    "DELETION-008", title="Arrow deletion file holds exactly one record batch",
    severity="warning", spec="004", section="DeletionFile",
    clause="stored as an Arrow IPC file with one batch and one column",
    scope="fragment",
)
def deletion_arrow_one_batch(ctx) -> Iterator[Finding]:
    for frag in _with_deletion(ctx):
        loaded = _load(ctx, frag)
        if frag.deletion_file.file_type != D.ARROW_ARRAY or loaded["offsets"] is None:
            continue
        info = D.inspect_arrow_deletion_file(loaded["data"], loaded["key"])
        if info.num_batches != 1:
            yield Finding(f"fragment {frag.id}: Arrow deletion file has {info.num_batches} "
                          f"record batches", _where(ctx, frag, loaded["key"]))


@rule(
    "DELETION-009", title="A deletion file deletes at least one row",
    severity="warning", spec="001", section=_SECTION,
    clause="Fragments that have no deleted rows have no deletion file.",
    releases="pylance before 0.8 does not record num_deleted_rows (it reads 0): the rule "
             "then counts the offsets the file holds, and fires only on a file that deletes "
             "no row",
    scope="fragment",
)
def deletion_not_empty(ctx) -> Iterator[Finding]:
    for frag in _with_deletion(ctx):
        if frag.deletion_file.num_deleted_rows != 0:
            continue
        offsets = _load(ctx, frag)["offsets"]
        if offsets is not None and offsets.size == 0:
            yield Finding(f"fragment {frag.id} names a deletion file that deletes no row",
                          _where(ctx, frag))


@rule(
    "DELETION-010", title="Arrow deletion file lists each offset once",
    severity="warning", spec="001", section=_SECTION,
    clause="These files contain the indices of rows that have between deleted for some fragment.",
    pylance="pylance 14.0.2 writes distinct offsets (in no set order); duplicates make "
            "num_deleted_rows ambiguous.",
    enforces="pylance",
    scope="fragment",
)
def deletion_arrow_distinct(ctx) -> Iterator[Finding]:
    import pyarrow as pa

    for frag in _with_deletion(ctx):
        loaded = _load(ctx, frag)
        if frag.deletion_file.file_type != D.ARROW_ARRAY or loaded["offsets"] is None:
            continue
        table = pa.ipc.open_file(pa.BufferReader(loaded["data"])).read_all()
        total = table.num_rows
        if total != loaded["offsets"].size:
            yield Finding(f"fragment {frag.id}: Arrow deletion file lists {total} offsets, "
                          f"{total - loaded['offsets'].size} of them repeated",
                          _where(ctx, frag, loaded["key"]))
