"""An in-memory object store for property tests: a dict of bytes behind one lock.

Stores created with the same ``memory://name`` URI in one process share their
objects (see ``uri.py``), so a writer and a reader opened separately see each other.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

from ..errors import AlreadyExists, FormatError, NotFound
from .base import DEFAULT_MAX_READ, ObjectInfo, ObjectStore, check_key


class _Bucket:
    def __init__(self) -> None:
        self.objects: dict[str, bytes] = {}
        self.lock = threading.Lock()


class MemoryStore(ObjectStore):
    """Objects live in a shared ``_Bucket`` under ``prefix``."""

    def __init__(self, name: str = "", *, _bucket: _Bucket | None = None, _prefix: str = "") -> None:
        self._bucket = _bucket or _Bucket()
        self._prefix = _prefix
        self.uri = f"memory://{name}" + (f"/{_prefix.rstrip('/')}" if _prefix else "")
        self._name = name

    def _k(self, key: str) -> str:
        return self._prefix + check_key(key)

    def get(self, key: str, *, max_size: int = DEFAULT_MAX_READ) -> bytes:
        with self._bucket.lock:
            data = self._bucket.objects.get(self._k(key))
        if data is None:
            raise NotFound(f"{key} not found under {self.uri}", path=key)
        if len(data) > max_size:
            raise FormatError(f"object is {len(data)} bytes, above the read bound of {max_size}", path=key)
        return data

    def get_range(self, key: str, start: int, length: int) -> bytes:
        data = self.get(key)
        if start < 0 or length < 0 or start + length > len(data):
            raise FormatError(
                f"range {start}+{length} outside the {len(data)}-byte object", path=key, offset=start
            )
        return data[start:start + length]

    def size(self, key: str) -> int:
        return len(self.get(key))

    def list(self, prefix: str = "") -> Iterator[ObjectInfo]:
        full = self._prefix + prefix
        with self._bucket.lock:
            items = [(k, len(v)) for k, v in self._bucket.objects.items() if k.startswith(full)]
        for k, size in items:
            yield ObjectInfo(k[len(self._prefix):], size)

    def put(self, key: str, data: bytes) -> None:
        with self._bucket.lock:
            self._bucket.objects[self._k(key)] = bytes(data)

    def put_if_not_exists(self, key: str, data: bytes) -> None:
        k = self._k(key)
        with self._bucket.lock:
            if k in self._bucket.objects:
                raise AlreadyExists(f"{key} already exists", path=key)
            self._bucket.objects[k] = bytes(data)

    def copy(self, src: str, dst: str) -> None:
        self.put(dst, self.get(src))

    def rename_if_not_exists(self, src: str, dst: str) -> None:
        s, d = self._k(src), self._k(dst)
        with self._bucket.lock:
            if d in self._bucket.objects:
                raise AlreadyExists(f"{dst} already exists", path=dst)
            if s not in self._bucket.objects:
                raise NotFound(f"{src} not found", path=src)
            self._bucket.objects[d] = self._bucket.objects.pop(s)

    def delete(self, key: str) -> None:
        with self._bucket.lock:
            self._bucket.objects.pop(self._k(key), None)

    def child(self, prefix: str) -> MemoryStore:
        return MemoryStore(self._name, _bucket=self._bucket, _prefix=self._k(prefix).rstrip("/") + "/")
