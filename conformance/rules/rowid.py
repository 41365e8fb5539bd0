"""ROWID rules: move-stable row ids and row version sequences (spec 001 "Feature:
Move-Stable Row IDs", "Assigning row ids", "Row ID sequences"; spec 004 ``DataFragment``
fields 5-10 and ``Manifest.next_row_id``).

Sequences are decoded once per version by :func:`_load` (cached in ``ctx.cache``) with
the fragment's ``physical_rows`` as the bound, so a sequence claiming more values than the
fragment has rows is reported (ROWID-002) instead of materialised.

Row ids of deleted rows stay in a fragment's sequence (its length is ``physical_rows``);
an update deletes the old row and gives the new one a fresh id or, in pylance 14.0.2,
the same id in another fragment. Uniqueness (ROWID-003) is therefore checked over live
rows only, using the DELETION module's decoded offsets.

Feature flag 2 itself belongs to the FLAGS rules (FLAGS-004: a sequence implies the flag);
ROWID-008 checks the other direction, per fragment: with the flag, no fragment lacks one.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator

import numpy as np

from reference_impl.errors import FormatError, NotFound
from reference_impl.table import rowids as R

from .deletion import deleted_offsets
from .registry import Finding, rule

FLAG_STABLE_ROW_IDS = 2
_CACHE = "rowid.sequences"
_SECTION = "Feature: Move-Stable Row IDs"


def _where(ctx, frag, **more) -> dict:
    loc = {"version": ctx.version, "fragment_id": frag.id}
    loc.update(more)
    return loc


def _bytes(ctx, frag, group: str):
    """Inline bytes or the ExternalFile's bytes of oneof ``group``; None when unset."""
    kind = frag.WhichOneof(group)
    if kind is None:
        return None
    value = getattr(frag, kind)
    if kind.startswith("inline"):
        return value
    if not value.path:
        raise FormatError("external sequence has an empty path", rule="ROWID-009")
    try:
        # ExternalFile paths are relative to the root of the table
        return R.read_external(ctx.store, value)
    except NotFound as exc:
        raise FormatError(f"external sequence file missing: {exc}", rule="ROWID-009",
                          path=value.path) from None


def load_sequences(ctx, frag) -> dict:
    """``frag``'s sequences decoded once per context: ``{"row_ids", "created",
    "last_updated"}`` (numpy arrays or None) and ``"errors"`` (sequence name -> FormatError)."""
    return _load(ctx, frag)


def _load(ctx, frag) -> dict:
    cache = ctx.cache.setdefault(_CACHE, {})
    if frag.id in cache:
        return cache[frag.id]
    out: dict = {"row_ids": None, "created": None, "last_updated": None, "errors": {}}
    cache[frag.id] = out
    for name, group, decode in (
        ("row_ids", "row_id_sequence", R.decode_row_id_sequence),
        ("created", "created_at_version_sequence", R.decode_version_sequence),
        ("last_updated", "last_updated_at_version_sequence", R.decode_version_sequence),
    ):
        try:
            data = _bytes(ctx, frag, group)
            if data is not None:
                out[name] = decode(data, physical_rows=frag.physical_rows,
                                   path=f"fragment {frag.id} {group}")
        except FormatError as exc:
            out["errors"][name] = exc
    return out


def _stable(ctx) -> bool:
    return bool(ctx.manifest.reader_feature_flags & FLAG_STABLE_ROW_IDS)


@rule(
    "ROWID-001", title="Row id sequences decode",
    severity="error", spec="001", section="Row ID sequences",
    clause="The row id values for a fragment are stored in a RowIdSequence protobuf message.",
    scope="fragment",
    releases="pylance 0.26.1 compacting a table with stable row ids (the 0.21.0-0.31.1 family "
             "of ROWID-002) was seen to write a range_with_holes whose holes lie outside its "
             "range, with fewer ids than rows; neither it nor 14.0.2 scans that version with "
             "row ids",
)
def row_ids_decode(ctx) -> Iterator[Finding]:
    for frag in ctx.manifest.fragments:
        err = _load(ctx, frag)["errors"].get("row_ids")
        if err is not None and err.rule == "ROWID-001":
            yield Finding(f"fragment {frag.id}: {err.message}", _where(ctx, frag))


@rule(
    "ROWID-002", title="A row id sequence holds physical_rows ids",
    severity="error", spec="004", section="DataFragment",
    clause="These are the row ids for the fragment, in order of the rows as they appear.",
    scope="fragment",
    releases="pylance 0.21.0 to 0.31.1 write sequences shorter than physical_rows when they "
             "compact a table with stable row ids after merge_insert (and then cannot scan it "
             "with row ids themselves); 0.32.1 and later, and lancedb, were not seen to",
)
def row_ids_length(ctx) -> Iterator[Finding]:
    for frag in ctx.manifest.fragments:
        loaded = _load(ctx, frag)
        err = loaded["errors"].get("row_ids")
        if err is not None and err.rule == "ROWID-002":
            yield Finding(f"fragment {frag.id}: {err.message}", _where(ctx, frag))
        elif loaded["row_ids"] is not None and loaded["row_ids"].size != frag.physical_rows:
            yield Finding(f"fragment {frag.id}: row id sequence holds {loaded['row_ids'].size} "
                          f"ids, physical_rows is {frag.physical_rows}", _where(ctx, frag))


@rule(
    "ROWID-003", title="Live rows have distinct row ids across the table",
    severity="error", spec="001", section=_SECTION,
    clause="The row ids features assigns a unique u64 id to each row in the table.",
    releases="pylance 8.0.1's update of a legacy table with stable row ids was seen to keep "
             "the rows it rewrote (3 rows updated, 2 more rows, two row ids each held by two "
             "live rows; its next delete panics 'row id missing from index'), read so by it "
             "and 14.0.2",
)
def row_ids_unique(ctx) -> Iterator[Finding]:
    """Over the live rows of every fragment. With the version's fragment aggregates only
    the fragments that may share an id are read: those whose span of live row ids overlaps
    another's or that repeat an id (:meth:`~.context.FragmentStats.row_id_suspects`); a
    fragment whose ids lie apart from every other's and are distinct cannot share one,
    and the finding is the one the whole version gives (the ids keep their order)."""
    stats = ctx.fragment_stats
    suspects = None
    if stats is not None:
        if not stats.with_row_ids:
            return  # no fragment carries row ids
        suspects = stats.row_id_suspects()
        if not suspects:
            return  # every fragment's live ids lie apart and are distinct
    parts, owners = [], []
    for frag in ctx.manifest.fragments:
        if suspects is not None and frag.id not in suspects:
            continue
        ids = _LIVE.get(ctx, frag, live_row_ids)
        if ids is None:
            continue
        parts.append(ids)
        owners.append(np.full(ids.size, frag.id, dtype=np.uint64))
    if not parts:
        return
    ids = np.concatenate(parts)
    owner = np.concatenate(owners)
    order = np.argsort(ids, kind="stable")
    sorted_ids = ids[order]
    dup = np.flatnonzero(sorted_ids[1:] == sorted_ids[:-1])
    if dup.size:
        first = int(sorted_ids[dup[0]])
        frags = sorted({int(owner[order[i]]) for i in (dup[0], dup[0] + 1)})
        yield Finding(f"{dup.size} live row(s) share a row id with another row (first: row id "
                      f"{first} in fragments {frags})", {"version": ctx.version, "row_id": first})


class _LiveIds:
    """The live row ids of the fragments ROWID-003 read, kept for the run (in the table's
    cache) by the fragment's bytes, so a fragment that stays a suspect version after
    version is decoded once; least recently used first out past ``limit`` ids."""

    limit = 8 << 20
    _KEY = "rowid.live_ids"

    def get(self, ctx, frag, load):
        memo = ctx.table.cache.get(self._KEY) if ctx.table is not None else None
        if memo is None:
            if ctx.table is None:
                return load(ctx, frag)
            memo = ctx.table.cache[self._KEY] = {"items": OrderedDict(), "size": 0}
        key = (getattr(ctx.store, "uri", id(ctx.store)), frag.SerializeToString(deterministic=True))
        items = memo["items"]
        if key in items:
            items.move_to_end(key)
            return items[key]
        ids = items[key] = load(ctx, frag)
        memo["size"] += 0 if ids is None else ids.size
        while memo["size"] > self.limit and len(items) > 1:
            _k, old = items.popitem(last=False)
            memo["size"] -= 0 if old is None else old.size
        return ids


_LIVE = _LiveIds()


def live_row_ids(ctx, frag) -> np.ndarray | None:
    """The row ids of ``frag``'s live rows, in row order; None when ROWID-003 leaves the
    fragment out: it has no sequence, its sequence does not decode or does not hold
    ``physical_rows`` ids (ROWID-001/002 report it), or its deletion file cannot be read
    (the DELETION rules report it)."""
    ids = _load(ctx, frag)["row_ids"]
    if ids is None or ids.size != frag.physical_rows:
        return None
    deleted = deleted_offsets(ctx, frag)
    if deleted is None:
        return None
    if deleted.size:
        keep = np.ones(ids.size, dtype=bool)
        keep[deleted[deleted < ids.size].astype(np.int64)] = False
        ids = ids[keep]
    return ids


@rule(
    "ROWID-004", title="Every row id is below next_row_id",
    severity="error", spec="001", section="Assigning row ids",
    clause="The next row id is stored in the manifest as the field next_row_id. [...] the writer "
           "uses that field to assign row ids to new fragments.",
)
def row_ids_below_next(ctx) -> Iterator[Finding]:
    nxt = ctx.manifest.next_row_id
    stats = ctx.fragment_stats
    top = stats.row_id_max.max() if stats is not None else None
    if stats is not None and (top is None or top < nxt):
        return  # the largest row id of every fragment is below next_row_id
    for frag in ctx.manifest.fragments:
        ids = _load(ctx, frag)["row_ids"]
        if ids is not None and ids.size and int(ids.max()) >= nxt:
            yield Finding(f"fragment {frag.id}: row id {int(ids.max())} is not below next_row_id "
                          f"{nxt}", _where(ctx, frag))


@rule(
    "ROWID-005", title="Row version sequences decode and hold physical_rows entries",
    severity="error", spec="004", section="DataFragment",
    clause="If small (< 200KB), the row created at versions are stored inline. / the row latest "
           "updated versions are stored inline.",
    scope="fragment",
)
def version_sequences_length(ctx) -> Iterator[Finding]:
    for frag in ctx.manifest.fragments:
        loaded = _load(ctx, frag)
        for which in ("created", "last_updated"):
            err = loaded["errors"].get(which)
            if err is not None and err.rule in ("ROWID-001", "ROWID-002"):
                yield Finding(f"fragment {frag.id} {which} versions: {err.message}",
                              _where(ctx, frag, sequence=which))
            elif loaded[which] is not None and loaded[which].size != frag.physical_rows:
                yield Finding(f"fragment {frag.id}: {which} version sequence holds "
                              f"{loaded[which].size} entries, physical_rows is "
                              f"{frag.physical_rows}", _where(ctx, frag, sequence=which))


@rule(
    "ROWID-006", title="No row version is above the manifest version",
    severity="error", spec="004", section="DataFragment",
    clause="oneof created_at_version_sequence / oneof last_updated_at_version_sequence",
    pylance="pylance 14.0.2 records the dataset version that wrote or last updated each row; "
            "a later version cannot have been seen by this manifest.",
    enforces="pylance",
)
def versions_not_in_future(ctx) -> Iterator[Finding]:
    version = ctx.manifest.version
    stats = ctx.fragment_stats
    top = stats.row_version_max.max() if stats is not None else None
    if stats is not None and (top is None or top <= version):
        return  # no fragment's row versions reach past this version
    for frag in ctx.manifest.fragments:
        loaded = _load(ctx, frag)
        for which in ("created", "last_updated"):
            seq = loaded[which]
            if seq is not None and seq.size and int(seq.max()) > version:
                yield Finding(f"fragment {frag.id}: {which} version {int(seq.max())} is above the "
                              f"manifest version {version}", _where(ctx, frag, sequence=which))


@rule(
    "ROWID-007", title="A row is not last updated before it was created",
    severity="warning", spec="004", section="DataFragment",
    clause="oneof created_at_version_sequence / oneof last_updated_at_version_sequence",
    pylance="pylance 14.0.2 keeps created <= last_updated for every row.",
    enforces="pylance",
    scope="fragment",
)
def created_not_after_updated(ctx) -> Iterator[Finding]:
    for frag in ctx.manifest.fragments:
        loaded = _load(ctx, frag)
        c, u = loaded["created"], loaded["last_updated"]
        if c is None or u is None or c.size != u.size:
            continue
        bad = np.flatnonzero(c > u)
        if bad.size:
            i = int(bad[0])
            yield Finding(f"fragment {frag.id}: {bad.size} row(s) last updated before created "
                          f"(offset {i}: created {int(c[i])}, updated {int(u[i])})",
                          _where(ctx, frag, offset=i))


@rule(
    "ROWID-008", title="With stable row ids every fragment carries a row id sequence",
    severity="error", spec="004", section="Manifest",
    clause="* 2: row ids are stable and stored as part of the fragment metadata.",
    scope="fragment",
)
def sequences_match_flag(ctx) -> Iterator[Finding]:
    """The other direction (a sequence without flag 2) is FLAGS-004's."""
    if not _stable(ctx):
        return
    for frag in ctx.manifest.fragments:
        if frag.WhichOneof("row_id_sequence") is None:
            yield Finding(f"fragment {frag.id} has no row id sequence although feature flag 2 "
                          f"(stable row ids) is set", _where(ctx, frag))


@rule(
    "ROWID-009", title="External sequences fit their file",
    severity="error", spec="004", section="ExternalFile",
    clause="Path to the file, relative to the root of the table. / The byte offset in the file "
           "where the data starts. / The size of the data in the file, in bytes.",
    scope="fragment",
)
def external_sequences_fit(ctx) -> Iterator[Finding]:
    for frag in ctx.manifest.fragments:
        for which, err in _load(ctx, frag)["errors"].items():
            if err.rule in ("ROWID-009", "LAYOUT-005") or err.rule is None:
                yield Finding(f"fragment {frag.id} {which}: {err.message}",
                              _where(ctx, frag, sequence=which, path=err.path))


@rule(
    "ROWID-010", title="Row version sequences only with row id sequences",
    severity="warning", spec="001", section=_SECTION,
    clause="The respective parts of these indices are stored in the respective fragment's "
           "metadata.",
    pylance="pylance 14.0.2 writes both version sequences on every fragment of a stable-row-id "
            "table and none elsewhere.",
    enforces="pylance",
    scope="fragment",
)
def versions_with_row_ids(ctx) -> Iterator[Finding]:
    for frag in ctx.manifest.fragments:
        has_ids = frag.WhichOneof("row_id_sequence") is not None
        for group in ("created_at_version_sequence", "last_updated_at_version_sequence"):
            if frag.WhichOneof(group) is not None and not has_ids:
                yield Finding(f"fragment {frag.id} has {group} but no row id sequence",
                              _where(ctx, frag, sequence=group))
