"""Replace an index file of a table and keep its manifest true to the bytes.

A manifest lists each index (``IndexMetadata``, spec 004) with, since the releases that
record them, the files of its directory ``_indices/<uuid>/`` and their sizes
(``IndexMetadata.files``: ``{1 path, 2 size_bytes}``). A reader that trusts the recorded size
reads that many bytes, so a file replaced by one of another size must have its entry
changed too, or the table is damaged in a way any reader notices (a short read) rather than
in the way the index census and the index mutation campaign want: an index whose files are
valid Lance files that say something else than the data.

:func:`replace_index_file` writes the new bytes and rewrites the latest manifest (and
``_latest.manifest`` when it is a copy of it) with the new size, keeping every other byte of
meaning: the manifest is decoded and encoded again with :mod:`reference_impl.table.manifest`.
"""

from __future__ import annotations

import uuid as uuidlib
from dataclasses import dataclass
from pathlib import Path

from reference_impl.io.local import LocalStore
from reference_impl.table.manifest import decode_manifest_file, reencode
from reference_impl.table.versions import latest_entry


@dataclass(frozen=True)
class IndexEntry:
    """One index of the latest version: its name, directory and recorded files."""

    name: str
    uuid: str
    directory: Path
    files: dict[str, int]  # path in the directory -> recorded size (empty: not recorded)


def _latest(root: Path):
    key = latest_entry(LocalStore(root)).key
    path = root / key
    return path, decode_manifest_file(path.read_bytes(), key)


def indexes(root: str | Path) -> list[IndexEntry]:
    """The indexes the latest manifest of ``root`` lists."""
    root = Path(root)
    _path, mf = _latest(root)
    out = []
    for meta in (mf.index_section.indices if mf.index_section is not None else []):
        u = str(uuidlib.UUID(bytes=bytes(meta.uuid.uuid)))
        out.append(IndexEntry(meta.name, u, root / "_indices" / u,
                              {f.path: f.size_bytes for f in meta.files}))
    return out


def replace_index_file(root: str | Path, index_uuid: str, rel: str, data: bytes) -> bool:
    """Write ``data`` as ``_indices/<index_uuid>/<rel>`` of ``root``; where the latest
    manifest records that file's size, record ``len(data)`` instead. Returns whether the
    manifest was rewritten."""
    root = Path(root)
    target = root / "_indices" / index_uuid / rel
    target.write_bytes(data)
    path, mf = _latest(root)
    changed = False
    for meta in (mf.index_section.indices if mf.index_section is not None else []):
        if str(uuidlib.UUID(bytes=bytes(meta.uuid.uuid))) != index_uuid:
            continue
        for f in meta.files:
            if f.path == rel and f.size_bytes != len(data):
                f.size_bytes = len(data)
                changed = True
    if changed:
        old = path.read_bytes()
        new = reencode(mf)
        latest_copy = root / "_latest.manifest"
        mirror = latest_copy.is_file() and latest_copy != path and latest_copy.read_bytes() == old
        path.write_bytes(new)
        if mirror:
            latest_copy.write_bytes(new)
    return changed


def copy_index_files(source_root: str | Path, target_root: str | Path) -> list[dict]:
    """Copy the files of the one user index of ``source_root`` over the files of the same
    names of the one user index of ``target_root`` (the swap of the index census), keeping
    the target's manifest true to the sizes. Returns what was copied."""
    src = [e for e in indexes(source_root) if not e.name.startswith("__")]
    dst = [e for e in indexes(target_root) if not e.name.startswith("__")]
    if len(src) != 1 or len(dst) != 1:
        raise ValueError(f"expected one user index on each side, found {len(src)} and {len(dst)}")
    copied = []
    for path in sorted(p for p in src[0].directory.rglob("*") if p.is_file()):
        rel = path.relative_to(src[0].directory).as_posix()
        mine = dst[0].directory / rel
        if not mine.is_file():
            continue
        before = mine.stat().st_size
        rewrote = replace_index_file(target_root, dst[0].uuid, rel, path.read_bytes())
        copied.append({"file": rel, "size_before": before, "size_after": path.stat().st_size,
                       "manifest_rewritten": rewrote})
    if not copied:
        raise ValueError("no index file of the source has a name the target's index has")
    return copied
