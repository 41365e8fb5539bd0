"""The local file system as an object store.

Writes never expose a partial file under its final name: bytes go to a temporary
file in the same directory (``.tmp-<random>``), which is then moved into place.

* ``put``: temporary file, ``fsync``, ``os.replace`` onto the key (overwrites).
* ``put_if_not_exists``: temporary file, then ``os.link`` to the key. ``link`` fails
  with ``EEXIST`` when the key exists, which makes the create atomic: this is the
  same create-only primitive pylance 14 uses for manifests on Linux
  (REFS-NAMESPACE-COMMIT.md, section 8.2).
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
from collections.abc import Iterator
from pathlib import Path

from ..errors import AlreadyExists, FormatError, NotFound, StoreError
from .base import DEFAULT_MAX_READ, ObjectInfo, ObjectStore, check_key


def _holds_file(path: str) -> bool:
    """Whether the directory ``path`` holds a file at any depth."""
    for _dirpath, _dirnames, filenames in os.walk(path):
        if filenames:
            return True
    return False


class LocalStore(ObjectStore):
    """Objects are files below ``root`` (an absolute directory path)."""

    def __init__(self, root: str | os.PathLike) -> None:
        self.root = Path(os.path.abspath(root))
        self.uri = self.root.as_uri()
        self._root = str(self.root)

    def _path(self, key: str) -> Path:
        return self.root / check_key(key)

    def _file(self, key: str) -> str:
        """The file of ``key`` as a string (reads: no pathlib object per request)."""
        return os.path.join(self._root, check_key(key))

    # -- reads -----------------------------------------------------------------
    def get(self, key: str, *, max_size: int = DEFAULT_MAX_READ) -> bytes:
        path = self._file(key)
        try:
            with open(path, "rb") as fh:
                size = os.fstat(fh.fileno()).st_size
                if size > max_size:
                    raise FormatError(
                        f"object is {size} bytes, above the read bound of {max_size}",
                        path=key,
                    )
                return fh.read()
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError) as exc:
            raise NotFound(f"{key} not found under {self.uri}", path=key) from exc
        except PermissionError as exc:
            raise StoreError(f"cannot read {path}: {exc}") from exc

    def get_range(self, key: str, start: int, length: int) -> bytes:
        path = self._file(key)
        if start < 0 or length < 0:
            raise FormatError(f"negative range {start}+{length}", path=key, offset=start)
        try:
            with open(path, "rb") as fh:
                size = os.fstat(fh.fileno()).st_size
                if start + length > size:
                    raise FormatError(
                        f"range {start}+{length} ends past the end of the {size}-byte object",
                        path=key, offset=start,
                    )
                fh.seek(start)
                return fh.read(length)
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError) as exc:
            raise NotFound(f"{key} not found under {self.uri}", path=key) from exc

    def size(self, key: str) -> int:
        try:
            st = os.stat(self._file(key))
        except (FileNotFoundError, NotADirectoryError) as exc:
            raise NotFound(f"{key} not found under {self.uri}", path=key) from exc
        if not stat.S_ISREG(st.st_mode):
            raise NotFound(f"{key} is not a file", path=key)
        return st.st_size

    def list(self, prefix: str = "") -> Iterator[ObjectInfo]:
        base = str(self.root)
        stripped = prefix.rstrip("/")
        start = os.path.join(base, stripped) if stripped else base
        # A prefix may end inside a name ("_versions/1"): walk its directory and filter.
        # Never walk above the root: a missing root lists nothing.
        walk_from = start if start == base or os.path.isdir(start) else os.path.dirname(start)
        if not os.path.isdir(walk_from):
            return
        cut = len(base) + 1
        for dirpath, _dirnames, filenames in os.walk(walk_from):
            rel = dirpath[cut:].replace(os.sep, "/") if len(dirpath) > len(base) else ""
            for name in filenames:
                key = f"{rel}/{name}" if rel else name
                if key.startswith(prefix):
                    try:
                        st = os.stat(os.path.join(dirpath, name))
                    except FileNotFoundError:  # removed while listing
                        continue
                    yield ObjectInfo(key, st.st_size, str(st.st_mtime_ns))

    def list_dir(self, prefix: str) -> tuple[list[ObjectInfo], list[str]]:
        """One ``scandir`` of the directory (the generic listing walks every file below
        it). A sub-directory counts only when it holds a file somewhere, as in a listing of
        objects."""
        stripped = prefix.strip("/")
        if stripped:
            check_key(stripped)
        path = os.path.join(str(self.root), stripped) if stripped else str(self.root)
        files: list[ObjectInfo] = []
        dirs: list[str] = []
        try:
            with os.scandir(path) as it:
                entries = list(it)
        except (FileNotFoundError, NotADirectoryError):
            return [], []
        for entry in entries:
            try:
                if entry.is_dir():
                    if _holds_file(entry.path):
                        dirs.append(entry.name)
                elif entry.is_file():
                    key = f"{stripped}/{entry.name}" if stripped else entry.name
                    st = entry.stat()
                    files.append(ObjectInfo(key, st.st_size, str(st.st_mtime_ns)))
            except FileNotFoundError:  # removed while listing
                continue
        return files, sorted(dirs)

    # -- writes ----------------------------------------------------------------
    def _write_temp(self, path: Path, data: bytes) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.parent / f".tmp-{secrets.token_hex(8)}"
        with open(tmp, "xb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        return tmp

    def put(self, key: str, data: bytes) -> None:
        path = self._path(key)
        tmp = self._write_temp(path, data)
        os.replace(tmp, path)

    def put_pieces(self, key: str, pieces: list) -> None:
        """A data file: the pieces go to a temporary file in the key's directory, which is
        then moved onto the key, so no partial file is ever visible. Not fsynced, as pylance
        writes data files (it calls no fsync at all); the commit's manifest write still is."""
        if type(self).put is not LocalStore.put:  # a subclass that changes put keeps it
            self.put(key, b"".join(pieces))
            return
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.parent / f".tmp-{secrets.token_hex(8)}"
        try:
            with open(tmp, "xb") as fh:
                fh.writelines(pieces)
            os.replace(tmp, path)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise

    def put_if_not_exists(self, key: str, data: bytes) -> None:
        path = self._path(key)
        tmp = self._write_temp(path, data)
        try:
            os.link(tmp, path)
        except FileExistsError as exc:
            raise AlreadyExists(f"{key} already exists", path=key) from exc
        except OSError as exc:
            if exc.errno == errno.EEXIST:
                raise AlreadyExists(f"{key} already exists", path=key) from exc
            raise StoreError(f"cannot create {path}: {exc}") from exc
        finally:
            try:
                os.unlink(tmp)
            except FileNotFoundError:
                pass

    def copy(self, src: str, dst: str) -> None:
        self.put(dst, self.get(src))

    def rename_if_not_exists(self, src: str, dst: str) -> None:
        src_path, dst_path = self._path(src), self._path(dst)
        dst_path.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(src_path, dst_path)
        except FileExistsError as exc:
            raise AlreadyExists(f"{dst} already exists", path=dst) from exc
        except FileNotFoundError as exc:
            raise NotFound(f"{src} not found", path=src) from exc
        os.unlink(src_path)

    def delete(self, key: str) -> None:
        try:
            os.unlink(self._path(key))
        except FileNotFoundError:
            pass

    def child(self, prefix: str) -> LocalStore:
        return LocalStore(self._path(prefix))
