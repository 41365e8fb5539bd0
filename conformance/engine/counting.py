"""A store that counts what is read through it: whole and ranged GETs, HEADs (``size``) and
listings, per object, so a run can say how often it fetched each manifest, footer and
deletion file (each at most once: ``Counts.read_again`` stays 0).

The local engine counts its deep checks' reads too (``--deep``: the data files' pages, in
the same :class:`Counts` as the plan's reads), except where a deep check reads a local
file directly (one larger than the tail window the plan kept, whose pages are
memory-mapped): ``read_directly`` says how many files, ``data_files_read_directly`` in the
stats. The Spark engine's tasks count theirs the same way and hand them to the driver
(:meth:`Counts.take`, :meth:`Counts.add`), so both engines give the same stats.

:class:`CountingStore` forwards every call to the store it wraps; ``child`` stores (a
branch's ``tree/NAME/``) count into the same :class:`Counts` under their full keys.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

from reference_impl.io.base import DEFAULT_MAX_READ, ObjectInfo, ObjectStore


class Counts:
    """Requests made through one or more :class:`CountingStore`: totals and GETs per key."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.gets = 0
        self.heads = 0
        self.lists = 0
        self.bytes_read = 0
        self.read_directly = 0
        self.gets_per_key: dict[str, int] = {}

    def got(self, key: str, n: int) -> None:
        with self._lock:
            self.gets += 1
            self.bytes_read += n
            self.gets_per_key[key] = self.gets_per_key.get(key, 0) + 1

    def head(self) -> None:
        with self._lock:
            self.heads += 1

    def listed(self) -> None:
        with self._lock:
            self.lists += 1

    def direct(self) -> None:
        """A deep check read a local file directly, outside these counts."""
        with self._lock:
            self.read_directly += 1

    def take(self) -> dict:
        """What was counted since the last ``take``, as plain values (a Spark task hands
        them to the driver, which :meth:`add` s them to the run's counts); zeroed after."""
        with self._lock:
            out = {"gets": self.gets, "heads": self.heads, "lists": self.lists,
                   "bytes_read": self.bytes_read, "read_directly": self.read_directly,
                   "gets_per_key": self.gets_per_key}
            self.gets = self.heads = self.lists = self.bytes_read = self.read_directly = 0
            self.gets_per_key = {}
        return out

    def add(self, taken: dict) -> None:
        """Count what another :class:`Counts` counted (its :meth:`take`)."""
        with self._lock:
            for name in ("gets", "heads", "lists", "bytes_read", "read_directly"):
                setattr(self, name, getattr(self, name) + int(taken[name]))
            for key, n in taken["gets_per_key"].items():
                self.gets_per_key[key] = self.gets_per_key.get(key, 0) + int(n)

    @property
    def read_again(self) -> list[str]:
        """Keys fetched more than once."""
        return sorted(k for k, n in self.gets_per_key.items() if n > 1)

    def as_stats(self) -> dict[str, int]:
        return {"store_gets": self.gets, "store_heads": self.heads, "store_lists": self.lists,
                "store_bytes_read": self.bytes_read, "objects_read": len(self.gets_per_key),
                "objects_read_again": len(self.read_again),
                **({"data_files_read_directly": self.read_directly} if self.read_directly
                   else {})}


class CountingStore(ObjectStore):
    """``inner`` with every read counted in ``counts`` (keys prefixed by ``prefix``)."""

    def __init__(self, inner: ObjectStore, counts: Counts | None = None, prefix: str = ""):
        self.inner = inner
        self.counts = counts if counts is not None else Counts()
        self.prefix = prefix
        self.uri = inner.uri

    def __getattr__(self, name: str):
        return getattr(self.inner, name)  # ``root``, ``bucket``, ... of the wrapped store

    def get(self, key: str, *, max_size: int = DEFAULT_MAX_READ) -> bytes:
        n = 0
        try:
            data = self.inner.get(key, max_size=max_size)
            n = len(data)
        finally:  # a request that fails (a missing object) was a request all the same
            self.counts.got(self.prefix + key, n)
        return data

    def get_range(self, key: str, start: int, length: int) -> bytes:
        n = 0
        try:
            data = self.inner.get_range(key, start, length)
            n = len(data)
        finally:
            self.counts.got(self.prefix + key, n)
        return data

    def size(self, key: str) -> int:
        self.counts.head()
        return self.inner.size(key)

    def exists(self, key: str) -> bool:
        self.counts.head()
        return self.inner.exists(key)

    def list(self, prefix: str = "") -> Iterator[ObjectInfo]:
        self.counts.listed()
        return self.inner.list(prefix)

    def list_dir(self, prefix: str) -> tuple[list[ObjectInfo], list[str]]:
        self.counts.listed()
        return self.inner.list_dir(prefix)

    def put(self, key: str, data: bytes) -> None:
        self.inner.put(key, data)

    def put_if_not_exists(self, key: str, data: bytes) -> None:
        self.inner.put_if_not_exists(key, data)

    def copy(self, src: str, dst: str) -> None:
        self.inner.copy(src, dst)

    def delete(self, key: str) -> None:
        self.inner.delete(key)

    def child(self, prefix: str) -> CountingStore:
        return CountingStore(self.inner.child(prefix), self.counts,
                             f"{self.prefix}{prefix.strip('/')}/")


__all__ = ["CountingStore", "Counts"]
