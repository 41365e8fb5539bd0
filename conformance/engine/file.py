"""Validate one Lance file on its own, with no dataset around it.

Vendors write Lance files directly (``LanceFileWriter`` and its equivalents in other
languages) before any table exists, and the file format (spec 003, FILE-ENCODINGS) is
defined file by file. ``lance-conformance validate FILE.lance`` judges such a file with the
catalog's data-file rules (FILE-*, ENC-*, STATS-*, BLOB-* on the file, DATAFILE-008).

Those rules read a data file through its place in a table: the ``DataFile`` entry that
names it and the manifest whose schema describes it. A standalone file is judged as the only
data file of a one-fragment table whose schema is the file's own:

* the schema is the file's: the ``FileDescriptor`` schema of a 2.x file, the manifest a
  legacy (0.1) file embeds;
* the ``DataFile`` entry lists every field id of that schema, carries the footer's version
  and the file's size, and names no column indices (the rules that compare indices with a
  manifest's are table rules and do not run);
* the "manifest file" of that table is the file itself, so a legacy dictionary is read from
  the positions the file's own schema gives, which are positions in the file.

Nothing here is a rule of its own: a file that no reader can open is reported by the same
FILE-* rule the dataset engine would report, with the file and the offset.
"""

from __future__ import annotations

import time

from conformance.rules import registry
from conformance.rules.context import DataFileContext, TableContext, VersionContext
from reference_impl.errors import FormatError, LanceError, NotFound, UnsupportedFeature
from reference_impl.io import open_store
from reference_impl.proto import table_pb2
from reference_impl.table.manifest import ManifestFile

from .local import DatasetNotFound, _selected_rules, run_check, unique_findings
from .report import Report

#: The version a standalone file's one-version table is given in findings.
FILE_VERSION = 1


def split_file_uri(uri: str) -> tuple[str, str]:
    """``(directory URI, file name)`` of a file URI or path."""
    head, sep, name = uri.rstrip("/").rpartition("/")
    if not sep:
        return ".", name
    return (head or "/"), name


def one_file_table(key: str, size: int, fields: list, version: tuple[int, int],
                   num_rows: int) -> table_pb2.Manifest:
    """The manifest of the one-fragment table a standalone file is judged in."""
    m = table_pb2.Manifest(version=FILE_VERSION)
    m.fields.extend(fields)
    frag = m.fragments.add(id=0, physical_rows=num_rows)
    frag.files.add(path=key, fields=[f.id for f in fields if f.id >= 0],
                   file_major_version=version[0], file_minor_version=version[1],
                   file_size_bytes=size)
    return m


#: The version pair a file with no readable footer is given: no version's rules claim it,
#: and FILE-001 says why.
NO_VERSION = (0xFFFF, 0xFFFF)

_UNREADABLE = (FormatError, UnsupportedFeature, LanceError, ValueError)


def describe_file(store, key: str, size: int, cache: dict) -> tuple[list, tuple[int, int], int]:
    """``(fields, (major, minor), rows)`` the file gives of itself, reading its tail once.

    A file the reader opens gives its own schema, and the opened reader and container go into
    ``cache`` (the keys the data-file rules look up), so no rule reads the tail again. A 2.x
    file whose schema does not convert still names its fields; a tail whose column metadata
    does not parse still gives the version and row count, and a footer that ends in the magic
    still tells its version pair; otherwise the file has no fields and :data:`NO_VERSION`
    (the FILE rules report why).
    """
    from reference_impl.file.container import MAGIC, read_container
    from reference_impl.file.reader import LanceFileReader

    try:
        reader = LanceFileReader(store, key, size=size)
    except _UNREADABLE:
        pass
    else:
        c = reader.container
        cache["file_reader"] = (reader, None)
        cache["file_container"] = (c, None)
        return list(reader.fields), (int(c.version[0]), int(c.version[1])), int(c.num_rows)
    for load_columns in (True, False):  # the fields count only from a tail that parses whole
        try:
            c = read_container(store, key, size=size, load_columns=load_columns)
        except _UNREADABLE:
            continue
        fields = list(c.fields) if load_columns else []
        return fields, (int(c.version[0]), int(c.version[1])), int(c.num_rows)
    last = store.get_range(key, size - 8, 8) if size >= 8 else b""
    if last[4:] != MAGIC:
        return [], NO_VERSION, 0
    return [], (int.from_bytes(last[0:2], "little"), int.from_bytes(last[2:4], "little")), 0


def file_context(uri: str, storage_options: dict | None = None) -> DataFileContext:
    """The data-file context a standalone file is checked in (see the module docstring).
    Raises :class:`DatasetNotFound` when there is no file at ``uri``."""
    directory, key = split_file_uri(uri)
    store = open_store(directory, storage_options or {})
    try:
        size = store.size(key)
    except NotFound as exc:
        raise DatasetNotFound(f"no file at {uri}: {exc}") from None
    cache: dict = {}
    fields, version, num_rows = describe_file(store, key, size, cache)
    manifest = one_file_table(key, size, fields, version, num_rows)
    mf = ManifestFile(key=key, size=size, manifest=manifest, index_section=None,
                      transaction=None, transaction_field=None, transaction_bytes=None,
                      manifest_offset=0, tail_major=0, tail_minor=2)
    table = TableContext(uri=directory, store=store, storage_options=dict(storage_options or {}),
                         deep=True, selected_versions=[FILE_VERSION])
    vctx = VersionContext(table=table, version=FILE_VERSION, manifest_key=key, mf=mf)
    return DataFileContext(version=vctx, fragment=manifest.fragments[0],
                           data_file=manifest.fragments[0].files[0], file_store=store,
                           file_key=key, cache=cache)


def is_lance_file(uri: str, storage_options: dict | None = None) -> bool:
    """Whether ``uri`` names one object (a file) rather than a dataset directory. A dataset
    directory is often named ``*.lance`` too, so only an existing object counts."""
    import os

    if "://" not in uri or uri.startswith("file://"):
        return os.path.isfile(uri[len("file://"):] if uri.startswith("file://") else uri)
    directory, key = split_file_uri(uri)
    if not key:
        return False
    try:
        open_store(directory, storage_options or {}).size(key)
        return True
    except (NotFound, LanceError, OSError, ValueError):
        return False


def validate_file(uri: str, *, rules=None, skip=None,
                  storage_options: dict | None = None) -> Report:
    """Run every selected data-file rule on the one file at ``uri``."""
    started = time.monotonic()
    ctx = file_context(uri, storage_options)
    selected = [r for r in _selected_rules(rules, skip, True)
                if r.scope is registry.Scope.DATA_FILE]
    findings = []
    for r in selected:
        findings.extend(run_check(r, ctx, {"path": ctx.file_key}))
    return Report(uri=uri, versions_checked=[], rules_checked=sorted(r.id for r in selected),
                  findings=unique_findings(findings), elapsed_s=time.monotonic() - started)


__all__ = ["describe_file", "file_context", "is_lance_file", "one_file_table", "split_file_uri",
           "validate_file"]
