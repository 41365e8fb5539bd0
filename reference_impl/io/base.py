"""The object-store protocol every part of the reference implementation reads and writes through.

A store addresses objects by *keys*: ``/``-separated relative paths such as
``_versions/1.manifest``. Keys never start with ``/``, never contain ``..`` or
empty segments; :func:`check_key` enforces that, so a path taken from untrusted
metadata cannot escape the store's root.

The operations are the ones the Lance commit protocols need (spec 001, "Committing
Datasets"): plain and ranged reads, plain writes, and one atomic create-if-absent
(``put_if_not_exists``) that is the commit point of every manifest.
"""

from __future__ import annotations

import abc
from collections.abc import Iterator
from dataclasses import dataclass, field

from ..errors import PathEscape

# Reads larger than this are refused unless the caller passes a larger bound:
# metadata claims (a length prefix, a file size) never drive an unbounded allocation.
DEFAULT_MAX_READ = 1 << 30


@dataclass(frozen=True)
class ObjectInfo:
    """One listed object: its key relative to the listed store and its size in bytes.
    ``stamp`` is what the store says of this version of the object besides its size (the
    S3 ETag, a local file's modification time in ns), None when it says nothing."""

    key: str
    size: int
    stamp: str | None = field(default=None, compare=False)


def check_key(key: str) -> str:
    """Return ``key`` if it is a safe relative key, else raise :class:`PathEscape`."""
    if not isinstance(key, str) or key == "":
        raise PathEscape(f"empty or non-string key {key!r}", rule="LAYOUT-005", path=str(key))
    if "\x00" in key or "\\" in key:
        raise PathEscape(f"key {key!r} contains a NUL byte or backslash", rule="LAYOUT-005", path=key)
    if key.startswith("/"):
        raise PathEscape(f"key {key!r} is absolute", rule="LAYOUT-005", path=key)
    for part in key.split("/"):
        if part in ("", ".", ".."):
            raise PathEscape(f"key {key!r} has an empty, '.' or '..' segment", rule="LAYOUT-005", path=key)
    return key


def join_key(*parts: str) -> str:
    """Join key parts with ``/``, skipping empty parts, and check the result."""
    return check_key("/".join(p.strip("/") for p in parts if p and p.strip("/")))


class ObjectStore(abc.ABC):
    """A flat key space under one root (a directory, a bucket prefix, a dict).

    ``uri`` is the root as a URI (``file:///abs``, ``s3://bucket/prefix``,
    ``memory://name``). Implementations must be safe to share between threads.
    """

    uri: str

    # -- reads -----------------------------------------------------------------
    @abc.abstractmethod
    def get(self, key: str, *, max_size: int = DEFAULT_MAX_READ) -> bytes:
        """Whole object. Raises NotFound; raises FormatError if larger than ``max_size``."""

    @abc.abstractmethod
    def get_range(self, key: str, start: int, length: int) -> bytes:
        """``length`` bytes from ``start``. Raises FormatError if the range is out of bounds."""

    @abc.abstractmethod
    def size(self, key: str) -> int:
        """Size in bytes. Raises NotFound."""

    def exists(self, key: str) -> bool:
        from ..errors import NotFound

        try:
            self.size(key)
            return True
        except NotFound:
            return False

    @abc.abstractmethod
    def list(self, prefix: str = "") -> Iterator[ObjectInfo]:
        """Every object whose key starts with ``prefix`` (recursive), in no set order."""

    def list_dir(self, prefix: str) -> tuple[list[ObjectInfo], list[str]]:
        """Objects directly under ``prefix/`` and the names of its sub-directories."""
        prefix = prefix.rstrip("/") + "/" if prefix else ""
        files: list[ObjectInfo] = []
        dirs: set[str] = set()
        for info in self.list(prefix):
            rest = info.key[len(prefix):]
            if "/" in rest:
                dirs.add(rest.split("/", 1)[0])
            else:
                files.append(info)
        return files, sorted(dirs)

    # -- writes ----------------------------------------------------------------
    @abc.abstractmethod
    def put(self, key: str, data: bytes) -> None:
        """Write (or overwrite) an object; no partial object is ever visible under ``key``."""

    def put_pieces(self, key: str, pieces: list) -> None:
        """Write an object made of ``pieces`` (bytes-like, in order), like :meth:`put` of their
        concatenation. Data files use it: a store that can write the pieces without joining
        them first (the local file system) overrides it."""
        self.put(key, b"".join(pieces))

    @abc.abstractmethod
    def put_if_not_exists(self, key: str, data: bytes) -> None:
        """Atomically create ``key``; raise AlreadyExists if it exists. The commit point."""

    @abc.abstractmethod
    def copy(self, src: str, dst: str) -> None:
        """Copy an object (the external manifest store's step 3)."""

    def rename_if_not_exists(self, src: str, dst: str) -> None:
        """Move ``src`` to ``dst`` unless ``dst`` exists (AlreadyExists then)."""
        self.put_if_not_exists(dst, self.get(src))
        self.delete(src)

    @abc.abstractmethod
    def delete(self, key: str) -> None:
        """Remove an object; a missing object is not an error."""

    # -- navigation ------------------------------------------------------------
    @abc.abstractmethod
    def child(self, prefix: str) -> ObjectStore:
        """A store rooted at ``prefix`` below this one (same backend, same options)."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.uri!r})"
