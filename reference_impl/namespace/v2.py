"""V2: the ``__manifest`` table (spec 002, "V2: Manifest"; REFS §9.3-9.5).

``{root}/__manifest`` is an ordinary Lance table, data storage version 2.2, with the schema

=====  ================  ===============================  ========  =========================
 id    column            Arrow type                       nullable  content
=====  ================  ===============================  ========  =========================
 0     ``object_id``     utf8                             no        names joined by ``$``;
                                                                    field metadata
                                                                    ``lance-schema:unenforced-
                                                                    primary-key:position=0``
                                                                    and Lance ``Field`` 12
                                                                    ``unenforced_primary_key``
 1     ``object_type``   utf8                             no        ``namespace`` or ``table``
 2     ``location``      utf8                             yes       table directory, relative
                                                                    to the root (tables only)
 3     ``metadata``      utf8                             yes       compact JSON object or null
 4     ``base_objects``  list<``object_id`` (5): utf8>    yes       reserved; null
=====  ================  ===============================  ========  =========================

The root namespace has no row.

Commits, as pylance 14.0.2 makes them (REFS §9.4): version 1 is an empty Overwrite with
an ordinary ``_transactions/0-{uuid}.txn``; every later change rewrites the whole table as
one Overwrite with a single fragment (id 0, ``max_fragment_id`` 0), ``read_version`` =
version - 1, the transaction only inline (field 23), no ``.txn`` file.

"Manifest Table Commits": adding an entry must atomically fail when the entry exists or a
concurrent operation writes it. :meth:`ManifestTable.commit` reads version ``v``, applies
the caller's change to the rows (the change raises when it no longer applies, e.g. the id
is taken), and creates ``_versions`` of ``v+1`` with ``put_if_not_exists``. Losing that
race means another change landed first: re-read ``v+1`` and redo the change; never rebase.
(The generic commit loop of :mod:`reference_impl.table.commit` would rebase an Overwrite
onto the newer version, i.e. silently drop the other writer's row, so it is not used here;
the pieces of the writer it is built from are: :func:`reference_impl.write.write_fragments`,
:mod:`reference_impl.table.operations`, :func:`reference_impl.table.manifest.encode_manifest_file`.)
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from ..errors import AlreadyExists, FormatError, InvalidInput
from ..io.base import ObjectStore
from . import ids

PRIMARY_KEY_METADATA = {b"lance-schema:unenforced-primary-key:position": b"0"}
NAMESPACE = "namespace"
TABLE = "table"
OBJECT_TYPES = (NAMESPACE, TABLE)

SCHEMA = pa.schema([
    pa.field("object_id", pa.utf8(), nullable=False, metadata=PRIMARY_KEY_METADATA),
    pa.field("object_type", pa.utf8(), nullable=False),
    pa.field("location", pa.utf8(), nullable=True),
    pa.field("metadata", pa.utf8(), nullable=True),
    pa.field("base_objects", pa.list_(pa.field("object_id", pa.utf8(), nullable=True)),
             nullable=True),
])
COLUMNS = tuple(SCHEMA.names)
DATA_STORAGE_VERSION = "2.2"


def lance_fields():
    """The Lance field list of :data:`SCHEMA`, ``object_id`` marked as primary key."""
    from ..table.schema import arrow_to_fields

    fields = arrow_to_fields(SCHEMA)
    fields[0].unenforced_primary_key = True
    return fields


def encode_metadata(properties: dict | None) -> str | None:
    """Compact JSON (no spaces, non-ASCII kept) or None for no/empty properties."""
    if not properties:
        return None
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in properties.items()):
        raise InvalidInput("properties must map strings to strings")
    return json.dumps(properties, separators=(",", ":"), ensure_ascii=False)


def decode_metadata(text: str | None) -> dict[str, str]:
    """The properties of a ``metadata`` cell; ``{}`` for null. FormatError if not JSON."""
    if text is None:
        return {}
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise FormatError(f"metadata is not JSON: {exc}", rule="NS-010") from None
    if not isinstance(value, dict):
        raise FormatError("metadata is not a JSON object", rule="NS-010")
    return value


def empty_rows() -> pa.Table:
    return SCHEMA.empty_table()


def make_rows(rows: list[tuple]) -> pa.Table:
    """Rows ``(object_id, object_type, location, metadata)`` as a table of :data:`SCHEMA`."""
    cols = list(zip(*rows, strict=True)) if rows else [[], [], [], []]
    return pa.table([pa.array(cols[0], pa.utf8()), pa.array(cols[1], pa.utf8()),
                     pa.array(cols[2], pa.utf8()), pa.array(cols[3], pa.utf8()),
                     pa.nulls(len(rows), SCHEMA.field("base_objects").type)], schema=SCHEMA)


@dataclass(frozen=True)
class Row:
    object_id: str
    object_type: str
    location: str | None
    metadata: str | None


# -- row queries (vectorised with pyarrow compute) -----------------------------------------
def find(rows: pa.Table, oid: str) -> Row | None:
    """The row of ``oid`` or None."""
    hit = rows.filter(pc.equal(rows["object_id"], oid))
    if hit.num_rows == 0:
        return None
    r = hit.slice(0, 1).to_pylist()[0]
    return Row(r["object_id"], r["object_type"], r["location"], r["metadata"])


def without(rows: pa.Table, oid: str) -> pa.Table:
    """``rows`` minus the row of ``oid``."""
    return rows.filter(pc.not_equal(rows["object_id"], oid))


def with_row(rows: pa.Table, row: Row) -> pa.Table:
    """``rows`` plus ``row`` (the caller checked that the id is free)."""
    return pa.concat_tables([rows, make_rows([(row.object_id, row.object_type, row.location,
                                               row.metadata)])])


def children(rows: pa.Table, parent_oid: str, object_type: str | None = None) -> pa.Table:
    """Rows directly inside the namespace ``parent_oid`` (``""`` = root)."""
    oids = rows["object_id"]
    if parent_oid:
        prefix = parent_oid + ids.DELIMITER
        inside = pc.starts_with(oids, prefix)
        rest = pc.utf8_slice_codeunits(oids, len(prefix))
    else:
        inside = pa.array([True] * rows.num_rows, pa.bool_()) if rows.num_rows else pa.array([], pa.bool_())
        rest = oids
    direct = pc.invert(pc.match_substring(rest, ids.DELIMITER))
    mask = pc.and_(inside, direct)
    if object_type is not None:
        mask = pc.and_(mask, pc.equal(rows["object_type"], object_type))
    return rows.filter(mask)


def descendants(rows: pa.Table, parent_oid: str) -> pa.Table:
    """Every row below the namespace ``parent_oid``."""
    return rows.filter(pc.starts_with(rows["object_id"], parent_oid + ids.DELIMITER))


def leaf_names(rows: pa.Table) -> list[str]:
    """The last name of every object id, sorted."""
    return sorted(ids.split_object_id(o)[-1] for o in rows["object_id"].to_pylist())


# -- the table on the store -----------------------------------------------------------------
class ConcurrentModification(AlreadyExists):
    """The ``__manifest`` commit kept losing against other writers (retries exhausted)."""


class ManifestTable:
    """The ``__manifest`` Lance table below ``root`` (an :class:`ObjectStore`)."""

    def __init__(self, root: ObjectStore, *, commit_retries: int = 20) -> None:
        self.root = root
        self.store = root.child(ids.MANIFEST_TABLE)
        self.commit_retries = commit_retries

    # -- reading
    def exists(self) -> bool:
        from ..table.versions import list_versions

        return bool(list_versions(self.store))

    def read(self) -> tuple[int, pa.Table]:
        """``(version, rows)`` of the latest version; ``(0, empty)`` when there is none."""
        from ..dataset import Dataset
        from ..scan import to_table
        from ..table.manifest import read_manifest_file
        from ..table.versions import list_versions

        entries = list_versions(self.store)
        if not entries:
            return 0, empty_rows()
        entry = entries[-1]
        mf = read_manifest_file(self.store, entry.key, size=entry.size)
        ds = Dataset(self.store.uri, self.store, self.store, None, mf)
        table = to_table(ds)
        missing = [c for c in COLUMNS if c not in table.column_names]
        if missing:
            raise FormatError(f"__manifest lacks columns {missing}", rule="NS-001",
                              path=f"{ids.MANIFEST_TABLE}/{entry.key}")
        try:
            table = table.select(list(COLUMNS)).cast(SCHEMA)
        except (pa.ArrowException, ValueError) as exc:
            raise FormatError(f"__manifest columns have the wrong types: {exc}", rule="NS-001",
                              path=f"{ids.MANIFEST_TABLE}/{entry.key}") from None
        return entry.version, table

    def version(self) -> int:
        from ..table.versions import list_versions

        entries = list_versions(self.store)
        return entries[-1].version if entries else 0

    # -- writing
    def _write_version(self, version: int, rows: pa.Table, previous) -> None:
        """Create version ``version`` holding ``rows``; AlreadyExists if it is taken."""
        from ..table import layout, operations
        from ..table.commit import write_version_hint
        from ..table.manifest import encode_manifest_file
        from ..write import write_fragments

        fields = lance_fields()
        frags = write_fragments(self.store, rows, fields, file_version=DATA_STORAGE_VERSION)
        txn = operations.overwrite(version - 1, frags, fields)
        txn_file = ""
        if version == 1:  # the creating Overwrite keeps an ordinary .txn file
            txn_file = layout.transaction_file_name(0, txn.uuid)
        manifest, _ = operations.build_manifest(
            previous, txn, version, stable_row_ids=False,
            data_format=("lance", DATA_STORAGE_VERSION), transaction_file=txn_file)
        for i, frag in enumerate(manifest.fragments):  # pylance restarts ids on each rewrite
            frag.id = i
        manifest.max_fragment_id = max(len(manifest.fragments) - 1, 0)
        txn_bytes = txn.SerializeToString()
        data = encode_manifest_file(manifest, transaction=txn_bytes)
        key = layout.manifest_key(version, layout.SCHEME_V2)
        txn_key = f"{layout.TRANSACTIONS_DIR}/{txn_file}" if txn_file else None
        if txn_key:
            self.store.put(txn_key, txn_bytes)
        try:
            self.store.put_if_not_exists(key, data)
        except AlreadyExists:
            if txn_key:
                self.store.delete(txn_key)
            raise
        if self.store.uri.startswith("file://"):
            write_version_hint(self.store, version)

    def _previous_manifest(self, version: int):
        if version == 0:
            return None
        from ..table.commit import load_version

        return load_version(self.store, version).manifest

    def ensure_created(self) -> None:
        """Version 1 (an empty Overwrite) unless some version exists already."""
        if self.version() > 0:
            return
        try:
            self._write_version(1, empty_rows(), None)
        except AlreadyExists:
            pass  # another writer created it first: fine

    def commit(self, change: Callable[[pa.Table], pa.Table | None]) -> int:
        """Apply ``change(rows) -> new rows`` (None: nothing to do) as one new version.

        ``change`` runs again on the newer rows whenever another writer committed first,
        and may raise (e.g. ``TableAlreadyExists``) to abandon. Returns the version
        written, or the version read when nothing changed.
        """
        attempt = 0
        while True:
            version, rows = self.read()
            new = change(rows)
            if new is None:
                return version
            if version == 0:  # created on the first accepted change only
                self.ensure_created()
                continue
            try:
                self._write_version(version + 1, new, self._previous_manifest(version))
                return version + 1
            except AlreadyExists:
                if attempt >= self.commit_retries:
                    raise ConcurrentModification(
                        f"__manifest version {version + 1} was taken {attempt + 1} times; "
                        "too much write contention") from None
                attempt += 1
                time.sleep(random.uniform(0, min(1.0, 0.005 * 2 ** attempt)))

