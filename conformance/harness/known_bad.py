"""Known-bad writers: adapters that reproduce real writer bugs, for the harness's self-test.

Each is the reference writer with one bug put back in. The bug is made the way such a
writer would make it: right after each of its commits, the manifest (and transaction)
it has just written is re-encoded with the wrong value, before the next operation runs;
the stale-commit bug replaces the commit step itself. ``EXPECTED_RULES`` names the
validator rules (and harness checks) that must catch each one; the self-test
(``conformance/suite/harness/test_known_bad.py``) asserts these ids and that every writer
scenario not touching the bug still passes.

=====================  ========================================================  ===============
adapter                 bug                                                       caught by
=====================  ========================================================  ===============
``read-version``        ``Transaction.read_version`` taken at commit time (the     TXN-004
                        committed version) instead of when the writer read
``deletion-flag``       reader/writer feature flag 1 left unset although a         FLAGS-003
                        fragment has a deletion file
``physical-rows``       ``physical_rows`` counts only the rows left alive          FRAG-004,
                                                                                  DELETION-004,
                                                                                  ROWID-002/005
``file-version``        ``DataFile.file_minor_version`` not the footer's version   DATAFILE-004,
                                                                                  DATAFILE-005
``overwrite-commit``    a stale writer commits ``read_version + 1`` with a plain   HARNESS-001,
                        put, overwriting the manifest another writer committed    HARNESS-006
=====================  ========================================================  ===============
"""

from __future__ import annotations

from pathlib import Path

from .reference import ReferenceAdapter
from .scenarios import commits


def _latest(uri: str) -> Path:
    from conformance.fixtures.corruption import latest_manifest

    return latest_manifest(Path(uri))


class _PatchingWriter(ReferenceAdapter):
    """The reference writer, then ``patch(uri)`` after every operation that commits."""

    def apply(self, uri, op, data=None):
        super().apply(uri, op, data)
        if commits(op):
            self.patch(uri)

    def patch(self, uri: str) -> None:  # pragma: no cover - overridden
        raise NotImplementedError


class ReadVersionAtCommitWriter(_PatchingWriter):
    name = "known-bad:read-version"

    def patch(self, uri):
        from conformance.fixtures.corruption import edit_transaction_everywhere, split_manifest

        root = Path(uri)
        m, _, txn = split_manifest(_latest(uri).read_bytes())
        if txn is None or m.version <= 1:
            return  # a first commit reads version 0 either way

        def edit(t):
            t.read_version = m.version

        edit_transaction_everywhere(root, edit, lambda old, t: f"{t.read_version}-{t.uuid}.txn")


class DeletionFlagUnsetWriter(_PatchingWriter):
    name = "known-bad:deletion-flag"

    def patch(self, uri):
        from conformance.fixtures.corruption import rewrite_manifest

        def edit(m):
            m.reader_feature_flags &= ~1
            m.writer_feature_flags &= ~1

        rewrite_manifest(_latest(uri), edit)


class PhysicalRowsAliveWriter(_PatchingWriter):
    name = "known-bad:physical-rows"

    def patch(self, uri):
        from conformance.fixtures.corruption import manifests, rewrite_manifest, split_manifest

        # the fragments this commit wrote or changed carry the bug; those it kept from the
        # previous manifest were patched when that one was committed
        found = manifests(Path(uri))
        prev = {}
        if len(found) > 1:
            pm, _, _ = split_manifest(found[-2][1].read_bytes())
            prev = {f.id: f.SerializeToString() for f in pm.fragments}
        cur, _, _ = split_manifest(found[-1][1].read_bytes())
        changed = {f.id for f in cur.fragments if prev.get(f.id) != f.SerializeToString()}

        def edit(m):
            for f in m.fragments:
                if f.id in changed and f.HasField("deletion_file"):
                    f.physical_rows -= f.deletion_file.num_deleted_rows

        rewrite_manifest(found[-1][1], edit)


class WrongFileVersionWriter(_PatchingWriter):
    name = "known-bad:file-version"

    def patch(self, uri):
        from conformance.fixtures.corruption import rewrite_manifest

        def edit(m):
            for f in m.fragments:
                for df in f.files:
                    if df.file_major_version == 2 and df.file_minor_version == 2:
                        df.file_minor_version = 1

        rewrite_manifest(_latest(uri), edit)


class OverwritingCommitWriter(ReferenceAdapter):
    """Commits a stale writer's transaction at ``read_version + 1`` with a plain ``put``:
    no put-if-not-exists, no look for newer versions, no rebase."""

    name = "known-bad:overwrite-commit"

    def commit(self, store, txn, *, stable_row_ids=None, data_format=("lance", "2.2"), **_):
        from reference_impl.table import commit as commit_mod
        from reference_impl.table import layout, operations
        from reference_impl.table.manifest import encode_manifest_file

        rv = txn.read_version
        previous = commit_mod.load_version(store, rv).manifest if rv > 0 else None
        version = rv + 1
        txn_bytes = txn.SerializeToString()
        txn_name = layout.transaction_file_name(rv, txn.uuid)
        store.put(f"{layout.TRANSACTIONS_DIR}/{txn_name}", txn_bytes)
        manifest, indices = operations.build_manifest(
            previous, txn, version, stable_row_ids=stable_row_ids, data_format=data_format,
            transaction_file=txn_name)
        data = encode_manifest_file(manifest, transaction=txn_bytes)
        store.put(layout.manifest_key(version, commit_mod.naming_scheme(store)), data)


class ModuloDeletesAllWriter(ReferenceAdapter):
    """Deletes every row when the delete's filter has a ``%`` in it: the bug of an engine that
    drops a filter it cannot push down to the table and deletes unfiltered (DuckDB's Lance
    extension 1.5.5 does so, ``docs/duckdb.md``). The files it writes are valid; only the
    rows are wrong (``HARNESS-003``), so it is not one of :data:`KNOWN_BAD`, whose self-test
    names a validator rule for each bug: ``conformance/suite/harness/test_filters.py`` finds
    it with ``fuzz`` and shrinks it to a one-line predicate."""

    name = "known-bad:modulo-delete"

    def apply(self, uri, op, data=None):
        if op["op"] == "delete" and "%" in op["where"]:
            op = dict(op, where="id IS NULL OR id IS NOT NULL")  # the filter, dropped
        super().apply(uri, op, data)


class MergeConditionIgnoredWriter(ReferenceAdapter):
    """Updates every matched row of a ``merge_insert``, its ``when_matched_update_all``
    condition dropped: an engine that cannot translate the condition and updates
    unconditionally. The rows are wrong (``HARNESS-003``), the files valid; not one of
    :data:`KNOWN_BAD` (``conformance/suite/harness/test_merge_insert.py`` finds it with
    ``fuzz`` and shrinks it to one merge_insert with a one-test condition)."""

    name = "known-bad:merge-condition"

    def apply(self, uri, op, data=None):
        if op["op"] == "merge_insert" and isinstance(op.get("when_matched_update_all"), dict):
            op = dict(op, when_matched_update_all={})  # the condition, dropped
        super().apply(uri, op, data)


class UnfilteredReadAdapter(ReferenceAdapter):
    """Answers a filtered read with every row (the filter ignored, the columns asked): the
    bug of a reader that drops a filter it cannot push down. Caught by ``HARNESS-011``."""

    name = "known-bad:unfiltered-read"

    def read_filtered(self, uri, version, filter, columns=None):  # noqa: A002
        return super().read_filtered(uri, version, None, columns)


KNOWN_BAD: dict[str, type] = {
    "read-version": ReadVersionAtCommitWriter,
    "deletion-flag": DeletionFlagUnsetWriter,
    "physical-rows": PhysicalRowsAliveWriter,
    "file-version": WrongFileVersionWriter,
    "overwrite-commit": OverwritingCommitWriter,
}

# The rule ids (validator rules and harness checks) each bug is caught by: the union of
# the ids of its failed cases, leaving out the read-back checks HARNESS-003/004 and the
# writer's own filtered reads (HARNESS-011), which any of these bugs may trip as a
# consequence.
EXPECTED_RULES: dict[str, set[str]] = {
    "read-version": {"TXN-004"},
    "deletion-flag": {"FLAGS-003"},
    # every rule that holds physical_rows against something else: the data files, the
    # deletion offsets, the row id and row version sequences (stable row ids)
    "physical-rows": {"FRAG-004", "DELETION-004", "ROWID-002", "ROWID-005"},
    # the DataFile version disagrees with the footer and with Manifest.data_format
    "file-version": {"DATAFILE-004", "DATAFILE-005"},
    # no put-if-not-exists, and no look at the versions committed since read_version
    "overwrite-commit": {"HARNESS-001", "HARNESS-006"},
}
# HARNESS-012 (the data storage version a create asked) is one such consequence too: a
# wrong DataFile version trips it when the create names the version (fuzz scripts do).
READ_BACK_CHECKS = {"HARNESS-003", "HARNESS-004", "HARNESS-011", "HARNESS-012"}
