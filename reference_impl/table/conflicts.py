"""Conflict resolution: which concurrent transactions a commit may be rebased over.

Spec 001, "Conflict resolution": *"The failed writer should attempt to retry the commit,
but only if its changes are compatible with the changes made by the successful writer."*
and *"If the transaction file is missing, assume it conflicts. If the transaction file has
an unknown operation, assume it conflicts."*

A writer that read version ``r`` and finds versions ``r+1 .. n`` already committed checks
its own transaction against each of theirs with :data:`MATRIX` below. Rows are *our*
operation, columns are *theirs* (the one already committed). A cell is one of:

``COMPATIBLE``
    Commit on top of theirs unchanged (the manifest is rebuilt from the newest one).
``REBASE``
    Commit on top of theirs after renumbering what ours adds (fragment ids, row ids):
    the rebuild does this, since ids are assigned when the manifest is built.
``DISJOINT``
    COMPATIBLE when the two transactions touch no common fragment, else RETRYABLE.
``RETRYABLE``
    Stop with ``CommitConflict(retryable=True)``: the caller may redo its change on the
    new version.
``INCOMPATIBLE``
    Stop with ``CommitConflict(retryable=False)``.
``CONFIG``
    UpdateConfig against UpdateConfig: INCOMPATIBLE when both touch a common key (config,
    table metadata, schema metadata or field metadata), else COMPATIBLE.

Where the cells come from
-------------------------
Every cell among append, delete, update, overwrite, rewrite, merge, restore and
update_config was **observed** with pylance 14.0.2 on this machine: two commits built at
``read_version=1`` through ``lance.LanceDataset.commit`` (``conformance/suite/table/test_conflicts.py``
replays them). In particular:

* Delete/Update against Delete/Update/Rewrite on the **same** fragment is RETRYABLE
  (pylance 14.0.2 reports "preempted ... Please retry"); it does not merge the two
  deletion vectors. We follow 14.0.2, not the "merge deletion vectors" rebase described
  for newer upstream code (FACTS §C).
* Overwrite after Overwrite is RETRYABLE: this is the 2026 upstream documentation's rule
  ("always retryable"); the Nov-2025 code raised INCOMPATIBLE only on overlapping config
  keys (FACTS §C). 14.0.2 behaves like the 2026 doc.
* Merge (add_columns) is RETRYABLE after, and before, any change to fragments.
* Restore and Overwrite may commit after anything; anything that edits fragments is
  INCOMPATIBLE after a concurrent Overwrite or Restore.

Rows and columns for project, reserve_fragments, create_index, data_replacement and clone
were not observed and follow the Nov-2025 upstream code's rules as summarised in FACTS §C
(project is treated like merge; reserve_fragments only moves ``max_fragment_id`` and is
compatible with everything but overwrite/restore; create_index is compatible with data
changes and retryable against schema changes; clone only ever starts a new dataset).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import CommitConflict

COMPATIBLE = "COMPATIBLE"
REBASE = "REBASE"
DISJOINT = "DISJOINT"
RETRYABLE = "RETRYABLE"
INCOMPATIBLE = "INCOMPATIBLE"
CONFIG = "CONFIG"

#: Operation names, as the ``operation`` oneof of ``lance.table.Transaction`` names them.
OPERATIONS = (
    "append", "delete", "update", "overwrite", "rewrite", "merge", "project", "restore",
    "reserve_fragments", "update_config", "create_index", "data_replacement", "clone",
)

_C, _R, _D, _T, _X, _G = COMPATIBLE, REBASE, DISJOINT, RETRYABLE, INCOMPATIBLE, CONFIG

# fmt: off
#                 theirs:  append delete update overwr rewrit merge  projec restor reserv config cr_idx data_r clone
_ROWS = {
    "append":            (_R,   _C,    _C,    _X,    _C,    _T,    _T,    _X,    _R,    _C,    _C,    _C,    _X),
    "delete":            (_C,   _D,    _D,    _X,    _D,    _T,    _T,    _X,    _C,    _C,    _C,    _D,    _X),
    "update":            (_R,   _D,    _D,    _X,    _D,    _T,    _T,    _X,    _R,    _C,    _C,    _D,    _X),
    "overwrite":         (_C,   _C,    _C,    _T,    _C,    _C,    _C,    _C,    _C,    _C,    _C,    _C,    _X),
    "rewrite":           (_R,   _D,    _D,    _X,    _D,    _T,    _T,    _X,    _R,    _C,    _C,    _D,    _X),
    "merge":             (_T,   _T,    _T,    _X,    _T,    _T,    _T,    _X,    _C,    _C,    _C,    _T,    _X),
    "project":           (_T,   _T,    _T,    _X,    _T,    _T,    _T,    _X,    _C,    _C,    _C,    _T,    _X),
    "restore":           (_C,   _C,    _C,    _C,    _C,    _C,    _C,    _C,    _C,    _C,    _C,    _C,    _X),
    "reserve_fragments": (_C,   _C,    _C,    _X,    _C,    _C,    _C,    _X,    _C,    _C,    _C,    _C,    _X),
    "update_config":     (_C,   _C,    _C,    _C,    _C,    _C,    _C,    _C,    _C,    _G,    _C,    _C,    _X),
    "create_index":      (_C,   _C,    _C,    _X,    _C,    _T,    _T,    _X,    _C,    _C,    _C,    _C,    _X),
    "data_replacement":  (_C,   _D,    _D,    _X,    _D,    _T,    _T,    _X,    _C,    _C,    _C,    _D,    _X),
    "clone":             (_X,   _X,    _X,    _X,    _X,    _X,    _X,    _X,    _X,    _X,    _X,    _X,    _X),
}
# fmt: on

#: ``MATRIX[ours][theirs]`` -> cell.
MATRIX: dict[str, dict[str, str]] = {
    ours: dict(zip(OPERATIONS, cells, strict=True)) for ours, cells in _ROWS.items()
}

#: Cells observed with pylance 14.0.2 (the rest follow the Nov-2025 upstream code).
OBSERVED = ("append", "delete", "update", "overwrite", "rewrite", "merge", "restore", "update_config")


def operation_name(txn) -> str | None:
    """The operation of a ``Transaction`` message, or None when it has none we know."""
    name = txn.WhichOneof("operation")
    return name if name in OPERATIONS else None


def touched_fragments(txn) -> set[int]:
    """Ids of existing fragments a transaction modifies or removes."""
    op = txn.WhichOneof("operation")
    body = getattr(txn, op) if op else None
    if op == "delete":
        return {f.id for f in body.updated_fragments} | set(body.deleted_fragment_ids)
    if op == "update":
        return {f.id for f in body.updated_fragments} | set(body.removed_fragment_ids)
    if op == "rewrite":
        ids = {f.id for f in body.old_fragments}
        for group in body.groups:
            ids |= {f.id for f in group.old_fragments}
        return ids
    if op == "data_replacement":
        return {r.fragment_id for r in body.replacements}
    if op == "merge":
        return {f.id for f in body.fragments}
    return set()


def _config_keys(txn) -> set[str]:
    body = txn.update_config
    keys = set(body.upsert_values) | set(body.delete_keys)
    keys |= {f"schema:{k}" for k in body.schema_metadata}
    keys |= {f"field:{k}" for k in body.field_metadata}
    for tag, umap in (("config", body.config_updates), ("table", body.table_metadata_updates),
                      ("schema", body.schema_metadata_updates)):
        keys |= {e.key if tag == "config" else f"{tag}:{e.key}" for e in umap.update_entries}
        if umap.replace:
            keys.add(f"{tag}:*")
    for fid in body.field_metadata_updates:
        keys.add(f"field:{fid}")
    return keys


def _config_overlap(ours, theirs) -> bool:
    """True when both touch one key of the same map; replacing a whole map (``tag:*``)
    overlaps with any key of that map."""
    a, b = _config_keys(ours), _config_keys(theirs)
    if a & b:
        return True
    for tag in ("config", "table", "schema"):
        star = f"{tag}:*"
        if (star in a and _in_map(b, tag)) or (star in b and _in_map(a, tag)):
            return True
    return False


def _in_map(keys: set[str], tag: str) -> bool:
    """Whether ``keys`` holds a key of map ``tag`` (config keys carry no prefix)."""
    if tag == "config":
        return any(":" not in k for k in keys)
    return any(k.startswith(tag + ":") for k in keys)


@dataclass(frozen=True)
class Verdict:
    """Outcome of checking our transaction against one committed one."""

    cell: str           # the matrix cell after resolving DISJOINT / CONFIG
    ours: str | None
    theirs: str | None
    version: int        # the version theirs committed

    @property
    def ok(self) -> bool:
        return self.cell in (COMPATIBLE, REBASE)


def check(ours, theirs, version: int) -> Verdict:
    """Decide ``ours`` against ``theirs`` (a Transaction, or None when it is missing)."""
    our_op = operation_name(ours)
    if theirs is None:  # spec: a missing transaction file conflicts
        return Verdict(INCOMPATIBLE, our_op, None, version)
    their_op = operation_name(theirs)
    if our_op is None or their_op is None:  # spec: an unknown operation conflicts
        return Verdict(INCOMPATIBLE, our_op, their_op, version)
    cell = MATRIX[our_op][their_op]
    if cell == DISJOINT:
        cell = RETRYABLE if touched_fragments(ours) & touched_fragments(theirs) else COMPATIBLE
    elif cell == CONFIG:
        cell = INCOMPATIBLE if _config_overlap(ours, theirs) else COMPATIBLE
    return Verdict(cell, our_op, their_op, version)


def raise_for(verdict: Verdict) -> None:
    """Raise the ``CommitConflict`` a failed verdict calls for; return when it is ok."""
    if verdict.ok:
        return
    if verdict.theirs is None:
        msg = (f"version {verdict.version} has no readable transaction (missing or unknown "
               f"operation); assuming it conflicts with {verdict.ours}")
        raise CommitConflict(msg, retryable=False, other_version=verdict.version)
    retryable = verdict.cell == RETRYABLE
    kind = "preempted by" if retryable else "incompatible with"
    raise CommitConflict(
        f"this {verdict.ours} transaction was {kind} a concurrent {verdict.theirs} "
        f"committed at version {verdict.version}" + ("; please retry" if retryable else ""),
        retryable=retryable, other_version=verdict.version,
    )
