"""INDEX-100..119: an index held against the data it indexes (deep, version scope).

An index is a second copy of what the data says, kept for speed: a BTREE says which rows hold
which value, a BITMAP the rows of each value. A reader that answers a query through the index
returns what the index says, so an index that says other than its data makes the table answer
wrong. Spec 004 (``IndexMetadata.fragment_bitmap``): "A bitmap of the included fragment ids."
The fragments an index includes are the rows it answers for; every one of their rows must be
in it under the value the data holds there, and nothing else may be (rows a deletion removed
may remain: readers drop them through the deletion files).

How it runs. For each index of a version (system indexes aside), once per run for each
(index uuid, identity of the data it covers):

1. resolve its files (:func:`conformance.rules.index._index_files`) and decode them with
   :func:`reference_impl.index.read_index`;
2. collect the :class:`reference_impl.index.IndexedData` of the covered fragments
   (``fragment_bitmap`` ∩ the version's fragments) with the reference scan, restricted to the
   index's field and those fragments, with row ids; decoded once per (field, fragments) and
   shared by the indexes on the same column;
3. :func:`reference_impl.index.check_index` yields the disagreements, kept in the table cache.

Each rule's check calls :func:`findings` with its id. Other modules register their own rules
on the same machinery (``index_text.py`` INDEX-120..139, ``index_vector.py`` INDEX-140..169)
and call :func:`findings` the same way.

An index kind or layout the reader does not know (``UnsupportedIndex``) is no finding: it is a
note "not judged" on the report (:func:`not_judged`), naming the index, its kind and layout.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections import OrderedDict
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from reference_impl import index as rindex
from reference_impl.errors import FormatError, LanceError, UnsupportedIndex
from reference_impl.table import index as ix

from .context import NOT_JUDGED
from .index import _FILES_CACHE, _decode_index_file, _index_files, _loc, indices
from .registry import Finding, rule

_SEC = "IndexMetadata"
_CLAUSE = "A bitmap of the included fragment ids."

#: table cache keys
_OUTCOMES = "index_content.outcomes"  # (uuid, data identity) -> Outcome
_CONTENTS = "index_content.contents"  # (uuid, base id) -> IndexContent | Exception
_DATA = "index_content.data"          # (field id, data identity) -> IndexedData (LRU)

#: how many decoded column sets are kept (a 1M-row column is tens of MB)
_DATA_KEPT = 2

#: system indexes: their details are the index, they hold no rows
_SYSTEM = frozenset({"fragment_reuse", "mem_wal"})


@dataclass
class Outcome:
    """What holding one index against its data found: disagreements, or why it could not
    be judged (``unsupported``), or that its bytes do not decode (``error``)."""

    disagreements: list = field(default_factory=list)
    more: dict = field(default_factory=dict)  # rule id -> (count, first) beyond the first few
    unsupported: str | None = None
    error: str | None = None
    error_reported: bool = False  # INDEX-015 already names the file that does not decode
    content: object = None
    rows: int = 0


# -- the data an index covers ----------------------------------------------------------------

def _field_path(manifest, field_id: int) -> list[str] | None:
    """Names from the top-level column down to the field with ``field_id``, or None."""
    by_id = {int(f.id): f for f in manifest.fields}
    f = by_id.get(int(field_id))
    if f is None:
        return None
    path = [f.name]
    seen = {int(f.id)}
    while f.parent_id != -1:
        f = by_id.get(int(f.parent_id))
        if f is None or int(f.id) in seen:
            return None
        seen.add(int(f.id))
        path.append(f.name)
    return path[::-1]


def _stable(manifest) -> bool:
    from reference_impl.scan import _stable_row_ids

    return _stable_row_ids(manifest)


def _identity(ctx, i: ix.Index, covered: list, gone: np.ndarray, stable: bool) -> str:
    """What the verdict on index ``i`` depends on besides its files: its field, the covered
    fragments' metadata (data files, deletion files, row ids), the ids gone from the
    version, the version's fragment ids, and under stable row ids the other fragments too (their rows are ``elsewhere``)."""
    h = hashlib.sha256()
    h.update(repr((tuple(i.fields), stable, gone.tolist())).encode())
    fid = i.fields[0] if i.fields else None
    h.update(repr(_field_path(ctx.manifest, fid) if fid is not None else None).encode())
    h.update(_reuse(ctx)[2].encode())
    h.update(repr((sorted(int(f.id) for f in ctx.manifest.fragments),
                   int(getattr(ctx.manifest, "max_fragment_id", 0) or 0))).encode())
    for f in covered:
        h.update(f.SerializeToString(deterministic=True))
    if stable:
        h.update(b"|others|")
        ids = {int(f.id) for f in covered}
        for f in ctx.manifest.fragments:
            if int(f.id) not in ids:
                h.update(f.SerializeToString(deterministic=True))
    return h.hexdigest()


def _scan(ctx, fragments: list, top: str | None) -> pa.Table:
    """The reference scan of ``fragments`` of this version: column ``top`` and row ids."""
    from reference_impl.dataset import Dataset
    from reference_impl.scan import to_table

    base = getattr(ctx.manifest, "_manifest", ctx.manifest)  # the engine's lazy view
    m = type(base)()
    m.CopyFrom(base)
    del m.fragments[:]
    m.fragments.extend(fragments)
    mf = dataclasses.replace(ctx.mf, manifest=m, index_section=None)
    table = ctx.table
    ds = Dataset(table.uri, table.store, table.main_store or table.store, table.branch, mf,
                 table.storage_options)
    return to_table(ds, columns=[top] if top else [], with_row_id=True, with_row_address=True)


def _deleted_rows(ctx, fragments: list, stable: bool) -> np.ndarray:
    """Row ids of the deleted rows of ``fragments`` (addresses, or stable ids)."""
    from reference_impl.table.deletion import read_deletion_file
    from reference_impl.table.rowids import fragment_row_ids

    out = []
    for f in fragments:
        if not f.HasField("deletion_file"):
            continue
        store, key = ctx.location("deletion", _deletion_name(f), f.deletion_file.base_id
                                  if f.deletion_file.HasField("base_id") else None)
        offsets = np.asarray(read_deletion_file(store, key, f.deletion_file.file_type,
                                                physical_rows=int(f.physical_rows) or None),
                             np.int64)
        if stable:
            ids = fragment_row_ids(ctx.store, f)
            if ids is None:
                continue
            ids = np.asarray(ids, np.uint64)
            out.append(ids[offsets[offsets < len(ids)]])
        else:
            out.append((np.uint64(f.id) << np.uint64(32)) | offsets.astype(np.uint64))
    if not out:
        return np.zeros(0, np.uint64)
    return _sorted_unique(np.concatenate(out))


def _sorted_unique(a: np.ndarray) -> np.ndarray:
    a = np.sort(a)
    return a[np.concatenate([[True], a[1:] != a[:-1]])] if len(a) else a


def _deletion_name(f) -> str:
    from reference_impl.table.deletion import deletion_file_name

    d = f.deletion_file
    return deletion_file_name(int(f.id), int(d.read_version), int(d.id), int(d.file_type))


def _elsewhere_rows(ctx, fragments: list) -> np.ndarray:
    """Stable row ids of the rows of ``fragments`` (the fragments an index does not cover)."""
    from reference_impl.table.rowids import fragment_row_ids

    parts = []
    for f in fragments:
        ids = fragment_row_ids(ctx.store, f)
        if ids is not None:
            parts.append(np.asarray(ids, np.uint64))
    return _sorted_unique(np.concatenate(parts)) if parts else np.zeros(0, np.uint64)


def indexed_data(ctx, i: ix.Index, *, addresses: bool = False) -> rindex.IndexedData:
    """The rows index ``i`` covers in this version, as the data holds them (cached per
    field and covered data, so the indexes of one column share one decode). Rows are named
    as the table names them (stable row ids when its flags say so), or by their addresses
    when ``addresses`` (an index that names rows by address whatever the table's flags)."""
    covered, gone, table_stable = _coverage(ctx, i)
    stable = table_stable and not addresses
    key = (tuple(i.fields), stable, _identity(ctx, i, covered, gone, table_stable))
    kept = ctx.table.cache.setdefault(_DATA, OrderedDict())
    if key in kept:
        kept.move_to_end(key)
        return kept[key]
    fid = int(i.fields[0])
    path = _field_path(ctx.manifest, fid)
    if path is None:
        raise FormatError(f"index {i.name!r} names field id {fid}, which is not in the schema",
                          rule="INDEX-004")
    table = _scan(ctx, covered, path[0])
    from reference_impl.scan import ROW_ADDR, ROW_ID

    rows = table.column(ROW_ID if stable else ROW_ADDR).to_numpy().astype(np.uint64)
    values = table.column(path[0])
    for name in path[1:]:
        import pyarrow.compute as pc

        values = pc.struct_field(values, name)
    values = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
    if len(rows) > 1 and np.any(rows[1:] < rows[:-1]):
        order = np.argsort(rows, kind="stable")
        rows = rows[order]
        values = values.take(pa.array(order, pa.int64()))
    ids = {int(f.id) for f in covered}
    present = [int(f.id) for f in ctx.manifest.fragments]
    data = rindex.IndexedData(
        field_id=fid, field_name=".".join(path), stable_row_ids=stable,
        fragment_ids=np.asarray(sorted(ids), np.uint32), row_ids=rows, values=values,
        deleted_row_ids=_deleted_rows(ctx, covered, stable), gone_fragment_ids=gone,
        elsewhere_row_ids=_elsewhere_rows(
            ctx, [f for f in ctx.manifest.fragments if int(f.id) not in ids]) if stable
        else np.zeros(0, np.uint64),
        moves=[] if stable else _reuse(ctx)[0],
        present_fragment_ids=np.asarray(sorted(present), np.uint32),
        max_fragment_id=max([int(getattr(ctx.manifest, "max_fragment_id", 0) or 0), *present],
                            default=None))
    kept[key] = data
    while len(kept) > _DATA_KEPT:
        kept.popitem(last=False)
    return data


def _reuse(ctx):
    """``(moves, groups, digest)`` of the version's fragment reuse index: the row moves of compactions
    whose index remap was deferred, oldest first, as ``(old, new)`` arrays sorted by old
    address; ``groups`` as ``(old fragment ids, new fragment ids)``. Empty without one (or
    when it does not decode: INDEX-020 reports that)."""
    if "index_content.reuse" not in ctx.cache:
        from reference_impl.table import fragment_reuse

        moves, groups = [], []
        for i in indices(ctx):
            if i.kind != "fragment_reuse" or i.details is None or not i.details.known:
                continue
            try:
                versions = fragment_reuse.decode_versions(i.details.message, store=ctx.store,
                                                          path=ctx.manifest_key)
                for v in sorted(versions, key=lambda v: v.dataset_version):
                    for g in v.groups:
                        old, new = fragment_reuse.group_mapping(g, path=ctx.manifest_key)
                        order = np.argsort(old, kind="stable")
                        moves.append((old[order], new[order]))
                        groups.append(({d.id for d in g.old_fragments},
                                       {d.id for d in g.new_fragments}))
            except (FormatError, LanceError):
                moves, groups = [], []
        digest = hashlib.sha256()
        for old, new in moves:
            digest.update(old.tobytes())
            digest.update(new.tobytes())
        ctx.cache["index_content.reuse"] = (moves, groups, digest.hexdigest())
    return ctx.cache["index_content.reuse"]


def _coverage(ctx, i: ix.Index):
    """(covered fragment messages in id order, bitmap ids gone from the version, stable).
    Under a deferred remap the bitmap may still name the fragments a compaction replaced:
    a group whose old fragments the bitmap names all covers its new fragments too, as
    readers take it."""
    bitmap = i.fragment_ids if i.fragment_ids is not None else np.zeros(0, np.uint32)
    present = {int(f.id): f for f in ctx.manifest.fragments}
    want = set(int(x) for x in bitmap)
    for old, new in _reuse(ctx)[1]:
        if old and old <= want:
            want |= new
    covered = [present[k] for k in sorted(want & set(present))]
    gone = np.asarray(sorted(want - set(present)), np.uint32)
    return covered, gone, _stable(ctx.manifest)


# -- one index, once per run -------------------------------------------------------------------

def _content(ctx, i: ix.Index):
    """The decoded content of index ``i`` (cached per uuid and base: its files never change)."""
    contents = ctx.table.cache.setdefault(_CONTENTS, {})
    key = (i.uuid, i.base_id)
    if key not in contents:
        try:
            store, names = _index_files(ctx, i)
            files = rindex.IndexFiles(store, dict(names))
            contents[key] = rindex.read_index(files, i)
        except (UnsupportedIndex, FormatError, LanceError) as exc:
            contents[key] = exc
    return contents[key]


def outcome(ctx, i: ix.Index) -> Outcome:
    """What holding index ``i`` against this version's data finds (once per run for each
    index uuid and identity of the data it covers)."""
    covered, gone, stable = _coverage(ctx, i)
    key = (i.uuid, i.base_id, _identity(ctx, i, covered, gone, stable))
    done = ctx.table.cache.setdefault(_OUTCOMES, {})
    if key in done:
        return done[key]
    out = Outcome()
    content = _content(ctx, i)
    try:
        if isinstance(content, Exception):
            raise content
        out.content = content
        try:
            data = indexed_data(ctx, i, addresses=bool(content.extra.get("row_addresses")))
        except LanceError as exc:
            # the data, not the index, does not read: the data's own rules report that
            out.unsupported = f"the rows it covers do not read: {exc}"
            done[key] = out
            return out
        out.rows = len(data)
        out.disagreements, out.more = first_disagreements(rindex.check_index(content, i, data))
    except UnsupportedIndex as exc:
        out.unsupported = str(exc)
    except FormatError as exc:
        out.error = str(exc)
        out.error_reported = _files_fail(ctx, i)
    except LanceError as exc:
        out.error = str(exc)
        out.error_reported = True  # missing or unreadable files: INDEX-008 reports them
    done[key] = out
    return out


def _files_fail(ctx, i: ix.Index) -> bool:
    """True when INDEX-015 reports a file of ``i`` that does not decode as a Lance file."""
    seen = ctx.table.cache.setdefault(_FILES_CACHE, {})
    try:
        store, names = _index_files(ctx, i)
    except LanceError:
        return True
    for _name, key in names:
        ck = (id(store), key)
        if ck not in seen:
            try:
                seen[ck] = _decode_index_file(store, key)
            except LanceError:
                seen[ck] = None
        if seen[ck]:
            return True
    return False


def judged(ctx):
    """``(index, Outcome)`` of every index of the version that holds rows (system indexes
    and entries without fields or a readable bitmap aside); records indexes not judged."""
    for i in indices(ctx):
        if i.kind in _SYSTEM or not i.fields or i.fragment_ids is None:
            continue
        o = outcome(ctx, i)
        if o.unsupported:
            not_judged(ctx, i, o.unsupported)
        elif o.content is not None and o.content.extra.get("not_judged"):
            # judged in part: the report says what was not
            not_judged(ctx, i, o.content.extra["not_judged"], partial=True)
        yield i, o


def not_judged(ctx, i: ix.Index, why: str, partial: bool = False) -> None:
    """Note on the report that index ``i`` was not held against its data (or only in part:
    ``partial``), and why."""
    notes = ctx.table.cache.setdefault(NOT_JUDGED, {})
    how = "held against its data only in part" if partial else "not held against its data"
    notes.setdefault(("index", i.uuid),
                     f"index {i.name!r} ({i.kind or 'unknown kind'}, uuid {i.uuid}) {how}: "
                     f"{why}")


#: Findings of one rule named row by row for one index; the rest are counted in one more
#: finding (an index swapped for another table's disagrees on every row: a report of a
#: million lines helps nobody, and the kit would hold them all in memory).
PER_INDEX_AND_RULE = 20


def first_disagreements(disagreements, limit: int = PER_INDEX_AND_RULE):
    """The first ``limit`` disagreements of each rule, and for each rule that has more, how
    many more and the first of them (its row is named in the finding that counts them)."""
    kept, more, seen = [], {}, {}
    for d in disagreements:
        n = seen.get(d.rule, 0)
        seen[d.rule] = n + 1
        if n < limit:
            kept.append(d)
        else:
            count, first = more.get(d.rule, (0, d))
            more[d.rule] = (count + 1, first)
    return kept, more


def more_finding(ctx, i, rule_id: str, more: dict):
    """The one finding that counts the disagreements of ``rule_id`` beyond those named, with
    the row of the first of them (None when there are none)."""
    if rule_id not in more:
        return None
    count, first = more[rule_id]
    extra = {"more": count}
    if first.row_id is not None:
        extra["row"] = int(first.row_id)
    return Finding(f"index {i.name!r}: {count} more disagreements of the same rule beyond "
                   f"the {PER_INDEX_AND_RULE} named above, the first: {first.message}",
                   _loc(ctx, i, **extra))


def findings(ctx, rule_id: str, held=None):
    """The findings of rule ``rule_id`` in this version: one per disagreement of that rule,
    naming the index, the row and the value (the first :data:`PER_INDEX_AND_RULE` of an
    index; one more finding counts the rest). ``held(ctx, index, outcome)`` gives the
    disagreements and their overflow counts when a rule family judges otherwise than the
    shared outcome (the text and zone rules follow a fragment reuse index)."""
    for i, o in judged(ctx):
        disagreements, more = held(ctx, i, o) if held else (o.disagreements, o.more)
        for d in disagreements:
            if d.rule != rule_id:
                continue
            extra = dict(d.where)
            if d.row_id is not None:
                extra["row"] = int(d.row_id)
            yield Finding(d.message, _loc(ctx, i, **extra))
        extra = more_finding(ctx, i, rule_id, more)
        if extra is not None:
            yield extra


# -- the rules ---------------------------------------------------------------------------------

@rule("INDEX-100", title="index content decodes as its kind's layout", severity="error",
      spec="004", section=_SEC, deep=True,
      clause="Details, specific to the index type, which are needed to load / interpret the "
             "index",
      refusal="an index whose files do not decode into its kind's layout cannot answer a "
              "query: a reader fails, or answers from what it misread",
      releases="the layouts each release writes are read by reference_impl.index (btree, "
               "bitmap, label_list, ...); a layout not read is noted as not judged, not "
               "reported")
def content_decodes(ctx):
    for i, o in judged(ctx):
        if o.error and not o.error_reported:
            yield Finding(f"index {i.name!r} ({i.kind}) does not decode: {o.error}",
                          _loc(ctx, i))


@rule("INDEX-101", title="every live row of the covered fragments is in the index",
      severity="error", spec="004", section=_SEC, deep=True, clause=_CLAUSE,
      pylance="pylance answers a query on an indexed column from the index for the fragments "
              "in its bitmap and scans only the others: a covered row the index lacks is "
              "never returned",
      releases="an FM index (Lance 8.0) holds a document for each row with a value, none "
               "for a null: a row with text it has no document for is missing")
def rows_missing(ctx):
    yield from findings(ctx, "INDEX-101")


@rule("INDEX-102", title="the index holds each row under the value the data holds",
      severity="error", spec="004", section=_SEC, deep=True, clause=_CLAUSE,
      pylance="pylance answers an equality or range query on an indexed column from the "
              "index alone: a row under another value is returned for the wrong query")
def values_differ(ctx):
    yield from findings(ctx, "INDEX-102")


@rule("INDEX-103", title="an index names no row outside the fragments it covers",
      severity="error", spec="004", section=_SEC, deep=True, clause=_CLAUSE,
      pylance="rows of covered fragments that a deletion removed remain in pylance's indexes "
              "until they are rebuilt (and rows of fragments compaction replaced, under "
              "defer_index_remap: the fragment reuse index maps them); readers drop them, so "
              "they are allowed",
      enforces="spec")
def rows_outside(ctx):
    yield from findings(ctx, "INDEX-103")


@rule("INDEX-104", title="BTREE keys are sorted, nulls first", severity="error", spec="004",
      section=_SEC, deep=True, clause=_CLAUSE,
      pylance="pylance searches a BTREE's pages by their bounds and each page by binary "
              "search: a key out of order hides its rows from the queries that should find "
              "them",
      releases="every release writes nulls first, then ascending values")
def btree_sorted(ctx):
    yield from findings(ctx, "INDEX-104")


@rule("INDEX-105", title="BTREE lookup pages bound their data pages", severity="error",
      spec="004", section=_SEC, deep=True, clause=_CLAUSE,
      pylance="pylance reads only the data pages whose lookup row (min, max, null_count) "
              "admits the query: a page its lookup row does not bound, or no lookup row "
              "names, is skipped and its rows are lost to the query",
      releases="every release writes min and max as the page's first and last key (min is "
               "null when the page starts with nulls)")
def btree_pages_bounded(ctx):
    yield from findings(ctx, "INDEX-105")


@rule("INDEX-106", title="BITMAP and LABEL_LIST keys are distinct", severity="error",
      spec="004", section=_SEC, deep=True, clause=_CLAUSE,
      pylance="pylance looks a value up as one key: the rows under a second key of the same "
              "value are never returned")
def bitmap_keys_distinct(ctx):
    yield from findings(ctx, "INDEX-106")
