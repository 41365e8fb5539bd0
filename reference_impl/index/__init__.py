"""Index content: what an index says about the rows it covers.

``reference_impl.table.index`` decodes the *metadata* of an index (``IndexMetadata`` in the
manifest: its uuid, fields, fragment bitmap and details). This package decodes the index
*files* under ``_indices/{uuid}/`` into a logical form that says which rows hold which value,
so that an index can be held against the data it indexes.

One module per index kind, named as the index type is named (``btree``, ``bitmap``,
``label_list``, ``ngram``, ``zonemap``, ``bloomfilter``, ``inverted``, ``json``,
``minhash_lsh``, ``rtree``) and the
vector indexes under :mod:`reference_impl.index.vector`. Each kind module exposes::

    KIND: str                                   # the kind of reference_impl.table.index
    def read(files: IndexFiles, index: Index) -> IndexContent
    def check(content, index, data: IndexedData) -> Iterator[Disagreement]

and raises :class:`reference_impl.errors.UnsupportedIndex` for a kind, index version or file
layout it does not know (never a guess), and :class:`reference_impl.errors.FormatError` for
bytes that do not decode.

:func:`read_index` dispatches on ``Index.kind``, :func:`check_index` holds what was read
against :class:`IndexedData` (the rows the index covers, as the data holds them) and yields a
:class:`Disagreement` for each place the two differ. :mod:`reference_impl.index.against` has
the comparisons the kinds share (rows covered, value at a row). Nothing here imports pylance.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from reference_impl.errors import NotFound, UnsupportedIndex

#: Index kind (``reference_impl.table.index.Index.kind``) -> module of this package that reads
#: it. A kind absent here, or whose module is absent, is refused with ``UnsupportedIndex``.
KIND_MODULES: dict[str, str] = {
    "btree": "btree",
    "bitmap": "bitmap",
    "label_list": "label_list",
    "ngram": "ngram",
    "zonemap": "zonemap",
    "bloomfilter": "bloomfilter",
    "inverted": "inverted",
    "json": "json",
    "minhash_lsh": "minhash_lsh",
    "rtree": "rtree",
    "fm": "fm",
    "vector": "vector",
}


@dataclass
class IndexContent:
    """The logical content of one index (or one segment of an index).

    ``kind`` and ``version`` name what was read (``version`` is the on-disk layout the reader
    recognised, e.g. ``"btree-v0"`` or ``"ivf_pq/lance-file"``). ``entries`` is the content as
    an Arrow table whose columns depend on the kind (each kind module documents them; value
    indexes have a ``row_id`` column of uint64 row addresses or stable row ids). ``summary`` is
    a small JSON-able dict for ``inspect`` (rows covered, partitions, value range, ...).
    ``extra`` holds kind-specific decoded parts (centroids, codebooks, zones, graphs);
    ``extra["row_addresses"] = True`` says the index names rows by their addresses even in a
    table with stable row ids (pylance 14.0.2's BTREE of index_version 1 does)."""

    kind: str
    version: str
    entries: pa.Table
    summary: dict = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)


class IndexFiles:
    """The files of one index directory on a store, read with bounded reads.

    ``keys`` maps a file name relative to the index directory (``page_data.lance``,
    ``index.idx``) to its key on ``store``."""

    def __init__(self, store, keys: dict[str, str]) -> None:
        self.store = store
        self.keys = dict(keys)

    def names(self) -> list[str]:
        return sorted(self.keys)

    def has(self, name: str) -> bool:
        return name in self.keys

    def key(self, name: str) -> str:
        if name not in self.keys:
            raise NotFound(f"index file {name!r} is not in the index directory", path=name)
        return self.keys[name]

    def size(self, name: str) -> int:
        return self.store.size(self.key(name))

    def lance_file(self, name: str):
        """A :class:`reference_impl.file.reader.LanceFileReader` over the named file."""
        from reference_impl.file.reader import LanceFileReader

        key = self.key(name)
        return LanceFileReader(self.store, key, size=self.store.size(key))

    def read_table(self, name: str) -> pa.Table:
        """Every column of the named Lance file."""
        return self.lance_file(name).read_all()


@dataclass
class IndexedData:
    """The rows an index covers, as the data holds them.

    The covered fragments are the index's ``fragment_bitmap`` that are still in the version
    (``fragment_ids``); ``gone_fragment_ids`` are bitmap ids no longer in the version (their
    rows were removed by a delete or a compaction; an index may keep naming them).

    Rows are named as the index names them: row addresses ``(fragment id << 32) | offset``,
    or stable row ids when the table's flags say rows have stable ids (``stable_row_ids``).

    * ``row_ids`` (uint64, ascending) are the live rows of the covered fragments and
      ``values`` the value of the indexed column (``field_name``, id ``field_id``) at each;
    * ``deleted_row_ids`` (uint64, ascending) are rows of the covered fragments that a deletion
      file removes (an index may keep them: readers drop them through the deletion files);
    * ``elsewhere_row_ids`` (uint64, ascending; stable row ids only) are live rows of the
      version outside the covered fragments: an index may still name one that an update moved
      out of its fragments (stale, dropped by readers, see :meth:`classify`). With row
      addresses the fragment id in the address tells where a row lives, and a live row of an
      uncovered fragment is outside the index;
    * ``moves``: the row moves a compaction recorded without rewriting the index (the fragment
      reuse index, ``defer_index_remap``), oldest first, each ``(old, new)`` uint64 arrays
      sorted by ``old``, ``new`` = ``DROPPED`` for a row the compaction dropped. The rows an
      index names are translated through them before they are judged, as readers do;
    * ``present_fragment_ids`` (uint32, ascending, or None when not known): every fragment id
      of the version, and ``max_fragment_id`` the largest id the table has given a fragment
      (None when not known). An entry on a fragment id at most that large that the version
      no longer holds answers for no row: fragment ids are never reused, so it is a stale
      entry of removed rows (pylance 14.0.2 keeps the zones of compacted fragments under
      stable row ids). An entry on a larger id names a fragment not yet written.
    """

    field_id: int
    field_name: str
    stable_row_ids: bool
    fragment_ids: np.ndarray
    row_ids: np.ndarray
    values: pa.Array
    deleted_row_ids: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint64))
    gone_fragment_ids: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint32))
    elsewhere_row_ids: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint64))
    moves: list = field(default_factory=list)
    present_fragment_ids: np.ndarray | None = None
    max_fragment_id: int | None = None

    #: ``moves`` target of a row a compaction dropped
    DROPPED = np.uint64((1 << 64) - 1)
    #: what :meth:`classify` says of a row an index names
    LIVE, DELETED, OUTSIDE = 0, 1, 2

    def __len__(self) -> int:
        return len(self.row_ids)

    def removed_fragment(self, fragment_id: int) -> bool:
        """True when ``fragment_id`` names a fragment the table once had and this version no
        longer holds (False when that is not known)."""
        if self.present_fragment_ids is None or self.max_fragment_id is None:
            return False
        return (int(fragment_id) <= self.max_fragment_id
                and not _members(np.asarray([fragment_id], np.uint32),
                                 np.asarray(self.present_fragment_ids, np.uint32))[0])

    def classify(self, rows) -> np.ndarray:
        """For each row id an index names: ``LIVE`` (a live row of the covered fragments),
        ``DELETED`` (a deleted row of a covered fragment, a row of a fragment the version no
        longer holds, any row of an index that covers no fragment of the version (never
        consulted), or, with stable row ids, any id not live in the covered fragments) or
        ``OUTSIDE`` (with row addresses: a live row of a fragment the index does not cover, or
        a place no row was ever at)."""
        rows = np.asarray(rows, np.uint64)
        out = np.full(len(rows), self.OUTSIDE, np.int8)
        out[rows == self.DROPPED] = self.DELETED
        out[_members(rows, self.deleted_row_ids)] = self.DELETED
        if self.stable_row_ids:
            # With stable row ids an id names a row wherever it lives. An id no fragment holds
            # was deleted; an id live in a fragment the index does not cover is a row an update
            # moved there after the index was built (its old place deleted, then compacted
            # away): readers scan the uncovered fragments themselves and drop the index's hits
            # outside its fragments, so a stale entry cannot answer a query (pylance 14.0.2:
            # the same k nearest and rows with and without the index)
            out[:] = self.DELETED
        else:
            frags = (rows >> np.uint64(32)).astype(np.uint32)
            out[_members(frags, self.gone_fragment_ids)] = self.DELETED
            if not len(self.fragment_ids):
                # an index that covers no fragment of the version is never consulted (readers
                # scan every fragment), so nothing it names answers a query: pylance 11.0.0
                # merges segments built before a deferred-remap compaction into such an
                # index, which keeps the removed fragments' rows
                out[:] = self.DELETED
        out[_members(rows, self.row_ids)] = self.LIVE
        return out

    def translate(self, rows) -> np.ndarray:
        """``rows`` as they are after the recorded moves (``DROPPED`` for dropped rows); a
        row no move names is unchanged. Moves apply in order, so a row moved twice follows
        both."""
        rows = np.array(rows, np.uint64)
        for old, new in self.moves:
            if not len(old):
                continue
            hit = _members(rows, old) & (rows != self.DROPPED)
            rows[hit] = new[np.searchsorted(old, rows[hit])]
        return rows

    def positions(self, rows) -> np.ndarray:
        """The position in ``row_ids`` of each of ``rows`` (which must be live rows)."""
        return np.searchsorted(self.row_ids, np.asarray(rows, np.uint64))


def _members(values: np.ndarray, sorted_set: np.ndarray) -> np.ndarray:
    """``values[i] in sorted_set`` for each i, by binary search (``sorted_set`` ascending)."""
    if not len(sorted_set) or not len(values):
        return np.zeros(len(values), bool)
    at = np.searchsorted(sorted_set, values)
    at[at == len(sorted_set)] = 0
    return sorted_set[at] == values


@dataclass(frozen=True)
class Disagreement:
    """One place where an index says other than its data: the rule it breaks, a sentence
    that names the row and the values, the row id (address or stable id, as the index names
    it), the value the index gives, and where in the index (``page``, ``key``, ...)."""

    rule: str
    message: str
    row_id: int | None = None
    value: Any = None
    where: dict = field(default_factory=dict)


def need_columns(have, wanted, *, what: str, kind: str, version: str | None = None) -> None:
    """Refuse, with ``UnsupportedIndex``, a file ``what`` of an index of ``kind`` whose columns
    ``have`` lack one of ``wanted``: a layout this implementation does not know."""
    have = list(have)
    missing = [c for c in wanted if c not in have]
    if missing:
        raise UnsupportedIndex(f"{what} lacks columns {missing} (has {have}): an unknown "
                               "layout", kind=kind, version=version)


def reader_module(kind: str | None):
    """The module that reads indexes of ``kind``; ``UnsupportedIndex`` when there is none."""
    modname = KIND_MODULES.get(kind or "")
    if modname is None:
        raise UnsupportedIndex(f"index kind {kind or 'unknown'!r} is not read by this "
                               "implementation", kind=kind)
    try:
        return importlib.import_module(f"{__name__}.{modname}")
    except ModuleNotFoundError as exc:
        if exc.name != f"{__name__}.{modname}":
            raise
        raise UnsupportedIndex(f"index kind {kind!r} is not read by this implementation yet",
                               kind=kind) from None


#: Releases up to 0.18 write no index details for scalar indexes; their kind is told by the
#: files (as those releases' readers tell it): file names -> kind. A BITMAP's files over a
#: list column are a LABEL_LIST (the bitmap module's check tells them apart by the data).
KIND_BY_FILES: tuple[tuple[frozenset, str], ...] = (
    (frozenset({"page_data.lance", "page_lookup.lance"}), "btree"),
    (frozenset({"bitmap_page_lookup.lance"}), "bitmap"),
    # every release names a vector index's (first) file index.idx, and no scalar index's;
    # releases up to 0.2x write no details for vector indexes either
    (frozenset({"index.idx"}), "vector"),
)


def kind_of(files: IndexFiles, index) -> str | None:
    """The kind of ``index``: its details' kind, else the kind its files tell (None)."""
    if index.kind is not None:
        return index.kind
    names = set(files.names())
    for needed, kind in KIND_BY_FILES:
        if needed <= names:
            return kind
    return None


def read_index(files: IndexFiles, index) -> IndexContent:
    """Decode the files of ``index`` (a :class:`reference_impl.table.index.Index`)."""
    return reader_module(kind_of(files, index)).read(files, index)


def check_index(content: IndexContent, index, data: IndexedData) -> Iterator[Disagreement]:
    """Hold the decoded ``content`` of ``index`` against ``data`` (the rows it covers): the
    kind module's ``check``. A kind read but not yet checked is ``UnsupportedIndex``."""
    kind = content.kind
    values = data.values.type
    if kind == "bitmap" and index.kind is None and (pa.types.is_list(values)
                                                    or pa.types.is_large_list(values)):
        # releases before index details (up to 0.18) do not say LABEL_LIST: its files are a
        # BITMAP's, over the items of a list column
        kind = "label_list"
    module = reader_module(kind)
    check = getattr(module, "check", None)
    if check is None:
        raise UnsupportedIndex(f"index kind {index.kind!r} is read but not checked against its "
                               "data by this implementation yet", kind=index.kind,
                               version=content.version)
    yield from check(content, index, data)
