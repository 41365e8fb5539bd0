"""Index content: what an index says about the rows it covers.

``reference_impl.table.index`` decodes the *metadata* of an index (``IndexMetadata`` in the
manifest: its uuid, fields, fragment bitmap and details). This package decodes the index
*files* under ``_indices/{uuid}/`` into a logical form that says which rows hold which value,
so that an index can be held against the data it indexes.

One module per index kind, named as the index type is named (``btree``, ``bitmap``,
``label_list``, ``ngram``, ``zonemap``, ``bloomfilter``, ``inverted``, ``json``) and the
vector indexes under :mod:`reference_impl.index.vector`. Each kind module exposes::

    KIND: str                                   # the kind of reference_impl.table.index
    def read(files: IndexFiles, index: Index) -> IndexContent

and raises :class:`reference_impl.errors.UnsupportedIndex` for a kind, index version or file
layout it does not know (never a guess), and :class:`reference_impl.errors.FormatError` for
bytes that do not decode.

:func:`read_index` dispatches on ``Index.kind``. Nothing here imports pylance.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any

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
    ``extra`` holds kind-specific decoded parts (centroids, codebooks, zones, graphs)."""

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


def read_index(files: IndexFiles, index) -> IndexContent:
    """Decode the files of ``index`` (a :class:`reference_impl.table.index.Index`)."""
    return reader_module(index.kind).read(files, index)
