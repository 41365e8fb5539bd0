"""Compatibility mode and migration (spec 002, "Compatibility Mode", "Migration from V1 to V2").

With both ``manifest_enabled`` and ``dir_listing_enabled`` (the default):

* existence of a root table: the manifest first, then ``<name>.lance``;
* listing the root: manifest tables, then directory-listed tables, de-duplicated by
  location and by name, the manifest taking precedence;
* a new root table is registered in the manifest and stored as ``<name>.lance`` (V1 name);
* a renamed root table moves to a V2 path ``<hash>_<object_id>``;
* child namespaces follow V2 only.

Migration adds every V1 table directory that the manifest does not know to the manifest,
after which ``dir_listing_enabled`` may be switched off.
"""

from __future__ import annotations

from collections.abc import Iterable

from . import ids
from .config import NamespaceConfig


def new_table_location(parts: list[str], config: NamespaceConfig) -> str:
    """The directory of a new table: V1 naming for root tables while directory listing is
    on (and always without the manifest), else ``<hash>_<object_id>``."""
    if len(parts) == 1 and (config.dir_listing_enabled or not config.manifest_enabled):
        return ids.v1_directory(parts[0])
    return ids.v2_directory(ids.object_id(parts))


def renamed_table_location(old_location: str, new_parts: list[str]) -> str:
    """Where a renamed table lives: a V1-named directory moves to a V2 path (the spec's
    rule for root tables); a V2 directory stays where it is (renaming is a manifest-only
    change, which is what the hash prefix makes possible)."""
    if ids.v1_table_name(old_location) is not None and "/" not in old_location:
        return ids.v2_directory(ids.object_id(new_parts))
    return old_location


def merge_root_tables(manifest_tables: Iterable[tuple[str, str | None]],
                      listed_names: Iterable[str]) -> list[str]:
    """Root table names in compatibility mode: ``manifest_tables`` are ``(name, location)``
    pairs from ``__manifest``; ``listed_names`` come from the directory listing. A listed
    table is dropped when the manifest has its name or its ``<name>.lance`` location."""
    manifest_tables = list(manifest_tables)
    names = {n for n, _ in manifest_tables}
    locations = {(loc or "").rstrip("/") for _, loc in manifest_tables}
    merged = list(names)
    for name in listed_names:
        if name in names or ids.v1_directory(name) in locations:
            continue
        merged.append(name)
    return sorted(set(merged))


def unregistered_v1_tables(manifest_tables: Iterable[tuple[str, str | None]],
                           listed_names: Iterable[str]) -> list[str]:
    """The directory-listed root tables a migration must add to the manifest."""
    manifest_tables = list(manifest_tables)
    names = {n for n, _ in manifest_tables}
    locations = {(loc or "").rstrip("/") for _, loc in manifest_tables}
    return sorted(n for n in listed_names
                  if n not in names and ids.v1_directory(n) not in locations)
