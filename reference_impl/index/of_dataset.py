"""The indexes of one dataset version, decoded: for ``inspect`` and ``dump --index``.

:func:`index_files` finds the files of an index as a reader does (those its ``IndexMetadata``
lists, or every file of its directory for releases that list none), :func:`read` decodes one
index, :func:`summaries` says in a few numbers what each index of the version holds, and
:func:`entries` gives the logical content of every segment of a named index as one table.
"""

from __future__ import annotations

import pyarrow as pa

from reference_impl.errors import FormatError, LanceError, NotFound, UnsupportedIndex
from reference_impl.table import fragment as fragmod
from reference_impl.table import index as ix

from . import IndexContent, IndexFiles, kind_of, read_index

#: kinds that hold no rows: their details are the whole index
SYSTEM_KINDS = frozenset({"fragment_reuse", "mem_wal"})


def decoded(ds) -> list[ix.Index]:
    """The decoded ``IndexMetadata`` entries of dataset version ``ds``."""
    return ix.decode_index_section(ds.index_section, path=ds.manifest_file.key)


def index_files(ds, index: ix.Index) -> IndexFiles:
    """The files of ``index`` in dataset ``ds`` (a :class:`reference_impl.dataset.Dataset`)."""
    keys = {}
    store = None
    if index.files:
        for f in index.files:
            store, key = ds.resolve("index", f"{index.uuid}/{f.path}", index.base_id)
            keys[f.path] = key
        return IndexFiles(store, keys)
    store, probe = ds.resolve("index", f"{index.uuid}/index.idx", index.base_id)
    folder = probe.rsplit("/", 1)[0] + "/"
    for o in store.list(folder):
        keys[o.key[len(folder):]] = o.key
    return IndexFiles(store, keys)


def read(ds, index: ix.Index) -> IndexContent:
    """Decode ``index`` of ``ds``; ``UnsupportedIndex`` or ``FormatError`` when it cannot be."""
    return read_index(index_files(ds, index), index)


def covered_rows(ds, index: ix.Index) -> tuple[list[int], int]:
    """``(fragment ids the index covers in this version, their live rows)``."""
    ids = set() if index.fragment_ids is None else {int(i) for i in index.fragment_ids}
    frags = [f for f in ds.manifest.fragments if int(f.id) in ids]
    return sorted(int(f.id) for f in frags), sum(fragmod.logical_rows(f) for f in frags)


def summaries(ds) -> list[dict]:
    """One dict per index of the version (system indexes aside): name, uuid, kind and layout
    version, fragments and live rows covered, and what the kind's reader summarises (entries,
    value range, pages or postings); ``not_read`` / ``error`` say why there is no more."""
    out = []
    for i in decoded(ds):
        if i.kind in SYSTEM_KINDS:
            continue
        frags, rows = covered_rows(ds, i)
        item = {"name": i.name, "uuid": i.uuid, "fields": list(i.fields), "kind": i.kind,
                "fragments_covered": frags, "rows_covered": rows}
        try:
            content = read(ds, i)
        except UnsupportedIndex as exc:
            item["not_read"] = str(exc)
        except (FormatError, LanceError) as exc:
            item["error"] = f"{type(exc).__name__}: {exc}"
        else:
            item.update({k: v for k, v in content.summary.items() if k not in item})
            item["kind"], item["version"] = content.kind, content.version
            item["entries"] = content.entries.num_rows
        out.append(item)
    return out


def entries(ds, name: str) -> pa.Table:
    """The logical content of index ``name`` (every segment of it, in section order) as one
    table, with a leading ``segment`` column (the segment's uuid). ``NotFound`` when the
    version has no such index."""
    segs = [i for i in decoded(ds) if i.name == name and i.kind not in SYSTEM_KINDS]
    if not segs:
        raise NotFound(f"no index named {name!r} in version {ds.version}")
    parts = []
    for i in segs:
        content = read(ds, i)
        t = content.entries
        parts.append(t.add_column(0, "segment", pa.array([i.uuid] * t.num_rows, pa.string())))
    return pa.concat_tables(parts, promote_options="permissive")


def kind(ds, index: ix.Index) -> str | None:
    """The kind of ``index``: its details', else what its files tell."""
    return kind_of(index_files(ds, index), index)
