"""Resolving where a file lives (spec 000 "File Metadata Base References").

Data files, deletion files and index metadata may carry ``base_id``:

* ``base_id`` **absent**: the file lives under the dataset root (for a branch dataset, its
  ``tree/{branch}/`` directory) in the standard sub-directory: ``data/``, ``_deletions/``
  or ``_indices/``.
* ``base_id`` **present** (0 included, REFS §3.4: "present-and-0" is not "absent"): the
  reader looks the ``BasePath`` up by ``id`` in ``Manifest.base_paths`` (the entries come
  in any order). ``is_dataset_root`` true: ``{path}/{sub-dir}/{name}``; false:
  ``{path}/{name}``. An id that is not in the list is an error (``BASEPATH-002``).

A base path is a URI or an absolute path (pylance writes absolute paths without a scheme);
it is opened with the same storage options as the dataset. The file name from metadata is
a relative key and may not escape its directory (``PathEscape``).
"""

from __future__ import annotations

from ..errors import FormatError, InvalidInput, PathEscape
from ..io.base import ObjectStore, check_key
from . import layout

KIND_DIRS = {
    "data": layout.DATA_DIR,
    "deletion": layout.DELETIONS_DIR,
    "index": layout.INDICES_DIR,
}


def find_base_path(manifest, base_id: int):
    """The BasePath entry with ``id == base_id``. Raises FormatError BASEPATH-002."""
    for bp in manifest.base_paths:
        if bp.id == base_id:
            return bp
    raise FormatError(f"base_id {base_id} names no entry of Manifest.base_paths",
                      rule="BASEPATH-002", path=None)


def _check_name(name: str) -> str:
    try:
        return check_key(name)
    except PathEscape as exc:
        raise PathEscape(f"file name {name!r} from metadata escapes its directory",
                         rule="BASEPATH-003", path=name) from exc


def open_base(bp, storage_options=None) -> ObjectStore:
    """The store rooted at a BasePath's ``path``."""
    from ..io.uri import open_store

    if not bp.path or "\x00" in bp.path:
        raise FormatError(f"base path {bp.id} has an empty or invalid path {bp.path!r}",
                          rule="BASEPATH-003", path=bp.path)
    if any(part == ".." for part in bp.path.replace("\\", "/").split("/")):
        raise PathEscape(f"base path {bp.id} contains '..': {bp.path!r}", rule="BASEPATH-003",
                         path=bp.path)
    try:
        return open_store(bp.path, storage_options)
    except InvalidInput as exc:
        raise FormatError(f"base path {bp.id} cannot be opened: {exc}", rule="BASEPATH-003",
                          path=bp.path) from None


def resolve(dataset_store: ObjectStore, manifest, kind: str, name: str, base_id: int | None,
            *, storage_options=None, base_cache: dict | None = None) -> tuple[ObjectStore, str]:
    """``(store, key)`` of a file of ``kind`` ("data", "deletion" or "index") named ``name``.

    ``base_id`` None means absent. ``base_cache`` (id -> store) avoids reopening bases.
    """
    if kind not in KIND_DIRS:
        raise ValueError(f"unknown file kind {kind!r}")
    _check_name(name)
    sub = KIND_DIRS[kind]
    if base_id is None:
        return dataset_store, f"{sub}/{name}"
    bp = find_base_path(manifest, base_id)
    if base_cache is not None and base_id in base_cache:
        store = base_cache[base_id]
    else:
        store = open_base(bp, storage_options)
        if base_cache is not None:
            base_cache[base_id] = store
    key = f"{sub}/{name}" if bp.is_dataset_root else name
    return store, key


def optional_base_id(msg) -> int | None:
    """``msg.base_id`` when present (0 included), None when absent."""
    return msg.base_id if msg.HasField("base_id") else None
