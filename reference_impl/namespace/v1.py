"""V1: directory listing (spec 002, "V1: Directory Listing").

A root table ``t`` lives in the table directory ``<root>/t.lance``. "In V1, a table exists
in a Lance directory namespace if a table directory of the specific name exists. In object
store terms, this means the prefix ``<table_name>.lance/`` has at least one file in it."

Two marker files pylance 14.0.2 writes (REFS §9.6), both holding the 8 bytes ``reserved``:

* ``.lance-reserved``: a declared table (a row or directory without data yet);
* ``.lance-deregistered``: a V1-only deregistration; the directory stays, the table no
  longer exists for listing and lookups.
"""

from __future__ import annotations

from ..io.base import ObjectStore
from . import ids


def directory_has_files(root: ObjectStore, directory: str) -> bool:
    """True when the prefix ``directory/`` holds at least one object."""
    for _info in root.list(directory.rstrip("/") + "/"):
        return True
    return False


def is_deregistered(root: ObjectStore, directory: str) -> bool:
    return root.exists(f"{directory}/{ids.DEREGISTERED_MARKER}")


def is_declared_only(root: ObjectStore, directory: str) -> bool:
    """True when the directory holds no version yet (a declared table)."""
    for _info in root.list(f"{directory}/_versions/"):
        return False
    return True


def is_reserved(root: ObjectStore, directory: str) -> bool:
    """True for a declared table awaiting its data: ``.lance-reserved`` and no version yet.
    A directory without the marker and without a version is a table another writer is
    creating (its row added, its data not yet committed), not one to write into."""
    return root.exists(f"{directory}/{ids.RESERVED_MARKER}") and is_declared_only(root, directory)


def table_exists(root: ObjectStore, name: str) -> bool:
    """V1 existence of the root table ``name``: ``name.lance/`` is non-empty and not
    deregistered."""
    d = ids.v1_directory(name)
    return directory_has_files(root, d) and not is_deregistered(root, d)


def _list_all(root: ObjectStore):
    """Every object under the root; nothing when a local root directory does not exist yet
    (``LocalStore.list("")`` on a missing root would walk its parent directory)."""
    from ..io.local import LocalStore

    if isinstance(root, LocalStore) and not root.root.is_dir():
        return iter(())
    return root.list("")


def list_tables(root: ObjectStore) -> list[str]:
    """Names of the root tables found by directory listing, sorted (deregistered ones left
    out). Sub-directories that are not ``<valid name>.lance`` are ignored."""
    names = set()
    deregistered = set()
    for info in _list_all(root):
        top, sep, rest = info.key.partition("/")
        if not sep:
            continue
        name = ids.v1_table_name(top)
        if name is None:
            continue
        names.add(name)
        if rest == ids.DEREGISTERED_MARKER:
            deregistered.add(name)
    return sorted(names - deregistered)


def mark(root: ObjectStore, directory: str, marker: str) -> None:
    """Write ``directory/marker`` with the content pylance writes."""
    root.put(f"{directory}/{marker}", ids.MARKER_CONTENT)


def delete_directory(root: ObjectStore, directory: str) -> None:
    """Remove every object below ``directory/`` (and, on a local disk, the directories)."""
    prefix = directory.rstrip("/") + "/"
    for info in list(root.list(prefix)):
        root.delete(info.key)
    from ..io.local import LocalStore

    if isinstance(root, LocalStore):
        import shutil

        shutil.rmtree(root.child(directory).root, ignore_errors=True)
