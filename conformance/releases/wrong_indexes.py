"""Tables whose index answers other than their data, made with pylance 14.0.2 (and the same
tables with their own, right, indexes): the families of issue 35.

Every family starts from one small table (:func:`rows`: ``id`` int64, ``cat`` string of 20
values, ``tags`` list of strings, ``text`` words, ``vec`` 8 floats, ``meta`` JSON with a key
``x``, ``geo`` a WKT point of its own) and builds one index of a
kind (:data:`KINDS`) on it. The families (:data:`FAMILIES`), each a function ``(root, kind,
*, version, stable) -> Built``:

* ``swap``: two tables with the same rows, the second reversed, each given the same index;
  the second's index files copied over the first's (the manifest's recorded sizes kept true);
* ``swap-same-counts``: the swap of a text column whose rows all hold four tokens (an
  INVERTED index's documents then agree with any row: only the postings tell);
* ``swap-fragments``: the same with a table of several fragments;
* ``split``: the index of a table with the same rows split into other fragments;
* ``stale-append``: rows deleted and appended again with the same ids (other values), then
  the index's ``fragment_bitmap`` made to claim the appended fragment it never saw;
* ``stale-update``: an update moves rows to a new fragment; the bitmap made to claim it;
* ``bitmap-drops``: the bitmap no longer names a fragment whose rows the index holds;
* ``old-after-compaction``: after a compaction, the manifest's index entry replaced by the
  entry from before it, its bitmap set to the new fragments (a compaction without remap);
* ``partitions-exchanged``: the row ids of two IVF partitions exchanged (vector kinds);
* ``other-column``: the index of another column of the same type, its ``IndexMetadata.fields``
  made to name the kind's column;
* ``nulls-dropped``: over a column with nulls, the index of its non-null rows only (the kinds
  that answer ``IS NULL``);
* ``hnsw-rotated`` (and ``-cosine``, ``-dot``): an IVF_HNSW graph of one partition whose
  level-0 neighbour lists are rotated by one node (storage and IVF right);
* ``metric-relabelled``: an ``l2`` vector index whose files are relabelled ``cosine``;
* ``json-other-path``: a JSON index of path ``y`` under the details of path ``x``;
* ``fragment-id-reused``: a fragment deleted whole, then an appended fragment given its id
  again (the index's bitmap still names it);
* ``zone-short``: every ZONEMAP/BLOOMFILTER zone one row shorter than its rows.

Each applies under storage version 2.0 and 2.1 and with or without stable row ids; a family
that does not make a wrong index of a kind raises :class:`NotWrong` (for example ``split``
under stable row ids, where the rows keep their ids; :data:`FAMILY_KINDS` and
:data:`NOT_STABLE` say where each applies). ``own`` builds the right tables: the kind's own
index after appends, deletes, updates, compaction with and without deferred remap, and
``optimize_indices``; ``own_nulls`` the same over a column with nulls.

The manifest is edited with the kit's utilities
(:mod:`conformance.fixtures.corruption` ``split_manifest``/``encode_manifest``,
:mod:`reference_impl.table.fragment_bitmap`), never with pylance.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa

N = 2000
D = 8
WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india",
         "juliet", "kilo", "lima", "mike", "zebra"]

#: kind -> (column, create_index keyword arguments)
KINDS = {
    "BTREE": ("id", {}),
    "BITMAP": ("cat", {}),
    "LABEL_LIST": ("tags", {}),
    "NGRAM": ("text", {}),
    "ZONEMAP": ("id", {}),
    "BLOOMFILTER": ("id", {}),
    "INVERTED": ("text", {"with_position": False}),
    "JSON": ("meta", {"target_index_type": "btree", "path": "x"}),
    "RTREE": ("geo", {}),
    "MINHASHLSH": ("text", {}),
    "IVF_FLAT": ("vec", {"num_partitions": 4}),
    "IVF_PQ": ("vec", {"num_partitions": 4, "num_sub_vectors": 2}),
    "IVF_SQ": ("vec", {"num_partitions": 4}),
    "IVF_HNSW_FLAT": ("vec", {"num_partitions": 4}),
    "IVF_HNSW_SQ": ("vec", {"num_partitions": 4}),
    "IVF_HNSW_PQ": ("vec", {"num_partitions": 4, "num_sub_vectors": 2}),
    "IVF_RQ": ("vec", {"num_partitions": 4}),
}
VECTOR = tuple(k for k in KINDS if k.startswith("IVF"))
TEXT = ("NGRAM", "INVERTED", "MINHASHLSH")
#: kinds pylance 14.0.2 refuses to build under stable row ids
UNSTABLE = ("JSON",)


class NotWrong(Exception):
    """The family does not make a wrong index of this kind (said why)."""


@dataclass
class Built:
    uri: str
    index: str
    how: str
    query: str | None = None  # a filter whose answer through the index may differ


def rows(n: int = N, seed: int = 0, start: int = 0, same_counts: bool = False) -> pa.Table:
    """``n`` rows from id ``start``; ``text`` holds one to three words and a tag (documents
    of different token counts), or with ``same_counts`` three words and a tag in every row
    (an INVERTED index's documents then all count 4 tokens: only its postings tell rows
    apart)."""
    rng = np.random.default_rng(seed)
    ids = np.arange(start, start + n)
    words = rng.integers(0, len(WORDS), (n, 3))
    text = [" ".join(WORDS[w] for w in ws[:3 if same_counts else 1 + i % 3]) + f" w{i % 97}"
            for i, ws in zip(ids, words, strict=True)]
    vec = rng.standard_normal((n, D)).astype(np.float32)
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "cat": pa.array([f"c{i % 20}" for i in ids]),
        "tags": pa.array([[f"t{i % 5}", f"u{i % 11}"] for i in ids], pa.list_(pa.string())),
        "text": pa.array(text),
        "vec": pa.FixedSizeListArray.from_arrays(pa.array(vec.ravel()), D),
        "meta": pa.array([json.dumps({"x": int(i) % 50, "s": f"v{i % 3}"}) for i in ids],
                         pa.json_()),
        "geo": pa.array([f"POINT ({int(i) % 50} {int(i) // 50})" for i in ids]),
    })


def _write(uri, table, *, version, stable, mode="create", **kw):
    import lance

    if mode != "create":
        return lance.write_dataset(table, uri, mode=mode, **kw)
    return lance.write_dataset(table, uri, data_storage_version=version,
                               enable_stable_row_ids=stable, **kw)


def index(ds, kind: str, name: str = "idx"):
    column, kw = KINDS[kind]
    if kind in VECTOR:
        ds.create_index(column, kind, name=name, **kw)
    elif kind == "JSON":
        from lance.indices import IndexConfig

        ds.create_scalar_index(column, index_type=IndexConfig(index_type="json", parameters=kw),
                               name=name)
    else:
        ds.create_scalar_index(column, kind, name=name, **kw)
    import lance

    return lance.dataset(ds.uri)


def query(kind: str) -> str | None:
    """A filter that reaches the index of ``kind`` (None: vector and full-text kinds)."""
    return {"BTREE": "id = 5", "ZONEMAP": "id = 5", "BLOOMFILTER": "id = 5",
            "BITMAP": "cat = 'c5'", "LABEL_LIST": "array_has_any(tags, ['u3'])",
            "NGRAM": "contains(text, 'w5')", "JSON": "json_get_int(meta, 'x') = 5",
            "RTREE": "st_intersects(geo, st_geomfromtext('POLYGON ((4.5 0.5, 5.5 0.5, 5.5 1.5, "
                     "4.5 1.5, 4.5 0.5))'))"}.get(kind)


# -- the manifest, edited with the kit's utilities ---------------------------------------------

def _latest(uri) -> Path:
    from conformance.fixtures.corruption import latest_manifest

    return latest_manifest(Path(uri))


def edit_indexes(uri, change) -> None:
    """Apply ``change(IndexMetadata)`` to each user index of the latest manifest, in place."""
    from conformance.fixtures.corruption import encode_manifest, split_manifest
    from reference_impl.proto import table_pb2

    path = _latest(uri)
    m, idx, txn = split_manifest(path.read_bytes())
    sec = table_pb2.IndexSection.FromString(idx)
    for im in sec.indices:
        if not im.name.startswith("__"):
            change(im)
    path.write_bytes(encode_manifest(m, index=sec.SerializeToString(), txn=txn))


def fragment_ids(uri) -> list[int]:
    import lance

    return sorted(int(f.fragment_id) for f in lance.dataset(uri).get_fragments())


def set_bitmap(uri, ids) -> None:
    from reference_impl.table.fragment_bitmap import encode_fragment_bitmap

    def change(im):
        im.fragment_bitmap = encode_fragment_bitmap(sorted(ids))

    edit_indexes(uri, change)


def bitmap(uri) -> list[int]:
    import lance

    (i,) = [i for i in lance.dataset(uri).list_indices() if not i["name"].startswith("__")]
    return sorted(int(x) for x in i["fragment_ids"])


def copy_index_files(src_uri, dst_uri) -> None:
    """Copy the user index's files of ``src_uri`` over those of ``dst_uri`` (same names; the
    manifest's recorded sizes told the new sizes)."""
    import lance

    (si,) = [i for i in lance.dataset(src_uri).list_indices() if not i["name"].startswith("__")]
    (di,) = [i for i in lance.dataset(dst_uri).list_indices() if not i["name"].startswith("__")]
    sd = Path(src_uri) / "_indices" / si["uuid"]
    dd = Path(dst_uri) / "_indices" / di["uuid"]
    for p in dd.iterdir():
        p.unlink()
    sizes = {}
    for p in sd.iterdir():
        shutil.copyfile(p, dd / p.name)
        sizes[p.name] = p.stat().st_size

    def change(im):
        kept = [f for f in im.files if f.path in sizes]
        for f in kept:
            f.size_bytes = sizes[f.path]
        del im.files[:]
        im.files.extend(kept)

    edit_indexes(dst_uri, change)


# -- the families ----------------------------------------------------------------------------

def _pair(root: Path, kind, *, version, stable, a_rows, b_rows, a_kw=None, b_kw=None):
    a, b = str(root / "a"), str(root / "b")
    for uri, t, kw in ((a, a_rows, a_kw), (b, b_rows, b_kw)):
        if os.path.exists(uri):
            shutil.rmtree(uri)
        index(_write(uri, t, version=version, stable=stable, **(kw or {})), kind)
    copy_index_files(b, a)
    return a


def swap(root, kind, *, version="2.1", stable=False, per_file=None) -> Built:
    t = rows()
    kw = {"max_rows_per_file": per_file} if per_file else {}
    a = _pair(root, kind, version=version, stable=stable, a_rows=t,
              b_rows=t.take(np.arange(N)[::-1]), a_kw=kw, b_kw=kw)
    return Built(a, "idx", "the reversed table's index files over this one's", query(kind))


def swap_same_counts(root, kind, *, version="2.1", stable=False) -> Built:
    """The swap of a table whose text has the same number of words in every row (text
    kinds only)."""
    if kind not in TEXT:
        raise NotWrong("the text column is not indexed")
    t = rows(same_counts=True)
    a = _pair(root, kind, version=version, stable=stable, a_rows=t,
              b_rows=t.take(np.arange(N)[::-1]))
    return Built(a, "idx", "the reversed table's index files over this one's (every text "
                 "row of four tokens)", query(kind))


def swap_fragments(root, kind, *, version="2.1", stable=False) -> Built:
    return swap(root, kind, version=version, stable=stable, per_file=500)


def split(root, kind, *, version="2.1", stable=False) -> Built:
    if stable:
        raise NotWrong("under stable row ids the rows keep their ids whatever the split")
    t = rows()
    a = _pair(root, kind, version=version, stable=stable, a_rows=t, b_rows=t,
              a_kw={"max_rows_per_file": 1200}, b_kw={"max_rows_per_file": 300})
    return Built(a, "idx", "the index of the same rows split 300 a fragment", query(kind))


def _own(root, kind, *, version, stable, per_file=1000):
    uri = str(root / "a")
    if os.path.exists(uri):
        shutil.rmtree(uri)
    return uri, index(_write(uri, rows(), version=version, stable=stable,
                             max_rows_per_file=per_file), kind)


def stale_append(root, kind, *, version="2.1", stable=False) -> Built:
    uri, ds = _own(root, kind, version=version, stable=stable)
    ds.delete("id < 100")
    new = rows(100, seed=9)  # ids 0..99 again, other values
    new = new.set_column(1, "cat", pa.array([f"c{(i + 7) % 20}" for i in range(100)]))
    _write(uri, new, version=version, stable=stable, mode="append")
    set_bitmap(uri, fragment_ids(uri))
    return Built(uri, "idx", "ids 0..99 deleted and appended again; the bitmap made to claim "
                 "the appended fragment", query(kind))


def stale_update(root, kind, *, version="2.1", stable=False) -> Built:
    uri, ds = _own(root, kind, version=version, stable=stable)
    column = KINDS[kind][0]
    value = {"id": "id + 5000", "cat": "'c99'", "tags": "['zz']", "text": "'zebra quux'",
             "vec": "[9,9,9,9,9,9,9,9]", "meta": "'{\"x\": 99}'",
             "geo": "'POINT (500 500)'"}[column]
    ds.update({column: value}, where="id < 50")
    set_bitmap(uri, fragment_ids(uri))
    return Built(uri, "idx", f"{column} updated for ids 0..49 (moved to a new fragment); the "
                 "bitmap made to claim it", query(kind))


def bitmap_drops(root, kind, *, version="2.1", stable=False) -> Built:
    uri, _ds = _own(root, kind, version=version, stable=stable, per_file=500)
    have = bitmap(uri)
    set_bitmap(uri, have[1:])
    return Built(uri, "idx", f"fragment {have[0]} dropped from the bitmap (the index holds its "
                 "rows)", query(kind))


def old_after_compaction(root, kind, *, version="2.1", stable=False) -> Built:
    from conformance.fixtures.corruption import split_manifest
    from reference_impl.proto import table_pb2

    uri, ds = _own(root, kind, version=version, stable=stable, per_file=400)
    ds.delete("id % 3 = 0")
    import lance

    before = table_pb2.IndexSection.FromString(split_manifest(_latest(uri).read_bytes())[1])
    old = [im for im in before.indices if not im.name.startswith("__")][0]
    lance.dataset(uri).optimize.compact_files(target_rows_per_fragment=5000)
    now = fragment_ids(uri)
    from reference_impl.table.fragment_bitmap import encode_fragment_bitmap

    def change(im):
        im.CopyFrom(old)
        im.fragment_bitmap = encode_fragment_bitmap(now)

    edit_indexes(uri, change)
    return Built(uri, "idx", "the index from before a compaction, bitmap set to the new "
                 "fragments (no remap)", query(kind))


def partitions_exchanged(root, kind, *, version="2.1", stable=False) -> Built:
    if kind not in VECTOR:
        raise NotWrong("no IVF partitions")
    from conformance.releases.index_mutations import _partition_of, rewrite_index_file

    uri, _ds = _own(root, kind, version=version, stable=stable)
    table = Path(uri)

    def change(t):
        ids = t.column("_rowid").to_pylist()
        part = _partition_of(table, len(ids))
        counts = np.bincount(part)
        p, q = np.argsort(counts)[-2:]
        pi, qi = np.flatnonzero(part == p), np.flatnonzero(part == q)
        k = min(len(pi), len(qi))
        for x, y in zip(pi[:k], qi[:k], strict=True):
            ids[x], ids[y] = ids[y], ids[x]
        from conformance.releases.index_mutations import _set

        return _set(t, "_rowid", dict(enumerate(ids))), f"{k} row ids of partitions {p}, {q}"

    detail = rewrite_index_file(table, "auxiliary.idx", change)
    return Built(uri, "idx", detail, None)



# -- the right tables ------------------------------------------------------------------------

def own(root, kind, *, version="2.1", stable=False, defer=False) -> Built:
    """The kind's own index after append, delete, update, optimize_indices and compaction
    (``defer``: with deferred index remap): every step pylance's, nothing edited."""
    import lance

    uri, ds = _own(root, kind, version=version, stable=stable, per_file=500)
    ds.delete("id % 7 = 3")
    _write(uri, rows(300, seed=3, start=N), version=version, stable=stable, mode="append")
    ds = lance.dataset(uri)
    ds.optimize.optimize_indices()
    ds = lance.dataset(uri)
    column = KINDS[kind][0]
    value = {"id": "id + 5000", "cat": "'c99'", "tags": "['zz']", "text": "'zebra quux'",
             "vec": "[9,9,9,9,9,9,9,9]", "meta": "'{\"x\": 99}'",
             "geo": "'POINT (500 500)'"}[column]
    ds.update({column: value}, where="id < 30")
    ds = lance.dataset(uri)
    ds.optimize.compact_files(target_rows_per_fragment=5000, defer_index_remap=defer)
    ds = lance.dataset(uri)
    _write(uri, rows(100, seed=4, start=N + 300), version=version, stable=stable,
           mode="append")
    lance.dataset(uri).optimize.optimize_indices()
    return Built(uri, "idx", "own index after append, delete, update, compaction"
                 f"{' (deferred remap)' if defer else ''}, optimize_indices", query(kind))


# -- families of issue 35's second round (helper wrongidx2) --------------------------------------

def field_id(uri, name: str) -> int:
    """The field id of top-level column ``name`` in the latest manifest."""
    from conformance.fixtures.corruption import split_manifest

    m = split_manifest(_latest(uri).read_bytes())[0]
    (f,) = [f for f in m.fields if f.name == name and f.parent_id == -1]
    return int(f.id)


def _index_on(ds, kind: str, column: str, name: str = "idx", **extra):
    """``index`` of ``kind`` over another ``column`` (the kind's keyword arguments, and
    ``extra``)."""
    import lance

    _col, kw = KINDS[kind]
    kw = {**kw, **extra}
    if kind in VECTOR:
        ds.create_index(column, kind, name=name, **kw)
    elif kind == "JSON":
        from lance.indices import IndexConfig

        ds.create_scalar_index(column, index_type=IndexConfig(index_type="json", parameters=kw),
                               name=name)
    else:
        ds.create_scalar_index(column, kind, name=name, **kw)
    return lance.dataset(ds.uri)


def other_column(root, kind, *, version="2.1", stable=False) -> Built:
    """The index built over a second column of the same type (the kind's column in reversed
    row order), its ``IndexMetadata.fields`` then made to name the kind's column."""
    if stable and kind in UNSTABLE:
        raise NotWrong("pylance 14.0.2 refuses this kind under stable row ids")
    column = KINDS[kind][0]
    t = rows()
    # the zones of one fragment bound reversed values alike: theirs are shifted instead
    alt = (pa.compute.add(t.column(column), 5000) if kind in ("ZONEMAP", "BLOOMFILTER")
           else t.column(column).take(np.arange(N)[::-1]))
    t = t.append_column(pa.field("alt", t.schema.field(column).type), alt)
    uri = str(root / "a")
    if os.path.exists(uri):
        shutil.rmtree(uri)
    _index_on(_write(uri, t, version=version, stable=stable), kind, "alt")
    fid = field_id(uri, column)

    def change(im):
        del im.fields[:]
        im.fields.append(fid)

    edit_indexes(uri, change)
    return Built(uri, "idx", f"the index of column 'alt' (the {column!r} values reversed or shifted) "
                 f"made to name {column!r} in its fields", query(kind))


#: kinds whose index answers ``IS NULL`` (a null row it lacks is never an answer; pylance
#: 14.0.2 answers a LABEL_LIST's ``tags IS NULL`` by a scan)
NULL_KINDS = ("BTREE", "BITMAP", "ZONEMAP", "BLOOMFILTER")
#: kinds whose own index is built over a column with nulls (:func:`own_nulls`)
NULLABLE_KINDS = ("BTREE", "BITMAP", "LABEL_LIST", "NGRAM", "ZONEMAP", "BLOOMFILTER", "INVERTED",
                  "JSON")
HNSW = tuple(k for k in VECTOR if k.startswith("IVF_HNSW"))


def null_rows(t: pa.Table, column: str, every: int = 10) -> pa.Table:
    """``t`` with the value of ``column`` null in every ``every``-th row (of ``meta``: the
    key ``x`` absent, its path then null)."""
    i = t.schema.get_field_index(column)
    if column == "meta":
        docs = [json.dumps({"s": "v"}) if k % every == 0 else d
                for k, d in enumerate(t.column(column).to_pylist())]
        return t.set_column(i, t.schema.field(i), pa.array(docs, pa.json_()))
    mask = pa.array(np.arange(len(t)) % every == 0)
    col = t.column(column).combine_chunks()
    nulled = pa.compute.if_else(mask, pa.scalar(None, col.type), col)
    return t.set_column(i, pa.field(column, col.type, nullable=True), nulled)


def null_query(kind: str) -> str:
    column = KINDS[kind][0]
    return "json_get_int(meta, 'x') IS NULL" if kind == "JSON" else f"{column} IS NULL"


def nulls_dropped(root, kind, *, version="2.1", stable=False) -> Built:
    """A column with a null in every tenth row; the index built over its non-null rows only
    (the same table with the null rows deleted), copied over the table's own index."""
    if kind not in NULL_KINDS:
        raise NotWrong("the kind's index holds no rows for nulls")
    if stable and kind in UNSTABLE:
        raise NotWrong("pylance 14.0.2 refuses this kind under stable row ids")
    import lance

    column = KINDS[kind][0]
    t = null_rows(rows(), column)
    a, b = str(root / "a"), str(root / "b")
    for uri in (a, b):
        if os.path.exists(uri):
            shutil.rmtree(uri)
    index(_write(a, t, version=version, stable=stable), kind)
    _write(b, t, version=version, stable=stable)
    lance.dataset(b).delete(f"{column} IS NULL")
    index(lance.dataset(b), kind)
    copy_index_files(b, a)
    return Built(a, "idx", f"the index of the non-null rows of {column!r} (every tenth row "
                 "null) over the table's own", null_query(kind))


def own_nulls(root, kind, *, version="2.1", stable=False) -> Built:
    """The right table of :func:`nulls_dropped`: the kind's own index over the column with a
    null in every tenth row, after an append with nulls and optimize_indices."""
    import lance

    column = KINDS[kind][0]
    uri = str(root / "a")
    if os.path.exists(uri):
        shutil.rmtree(uri)
    index(_write(uri, null_rows(rows(), column), version=version, stable=stable,
                 max_rows_per_file=700), kind)
    _write(uri, null_rows(rows(300, seed=3, start=N), column, every=7), version=version,
           stable=stable, mode="append")
    lance.dataset(uri).optimize.optimize_indices()
    return Built(uri, "idx", f"own index over {column!r} with nulls", null_query(kind))


def hnsw_rotated(root, kind, *, version="2.1", stable=False, metric="l2") -> Built:
    """An IVF_HNSW index of one partition (of ``metric``) whose level-0 neighbour lists (and
    their recorded distances) are rotated by one node: node ``i`` keeps the list of node
    ``i + 1``. The storage and the IVF are right; a search walks the graph to other rows."""
    if not kind.startswith("IVF_HNSW"):
        raise NotWrong("no HNSW graph")
    from conformance.releases.index_mutations import rewrite_index_file

    uri = str(root / "a")
    if os.path.exists(uri):
        shutil.rmtree(uri)
    _index_on(_write(uri, rows(), version=version, stable=stable), kind, KINDS[kind][0],
              num_partitions=1, metric=metric)

    def change(t):
        meta = json.loads(json.loads(t.schema.metadata[b"lance:hnsw"])[0])
        offsets = [int(x) for x in meta["level_offsets"]] + [t.num_rows]
        level0 = offsets[1] if len(offsets) > 1 else t.num_rows
        order = np.concatenate([np.roll(np.arange(level0), -1), np.arange(level0, t.num_rows)])
        out = t
        for name in ("__neighbors", "_distance"):
            i = t.schema.get_field_index(name)
            out = out.set_column(i, t.schema.field(i), t.column(name).take(pa.array(order)))
        return out, f"level-0 neighbour lists of {level0} nodes rotated by one"

    detail = rewrite_index_file(Path(uri), "index.idx", change)
    return Built(uri, "idx", f"{detail} ({metric})", None)


def hnsw_rotated_cosine(root, kind, *, version="2.1", stable=False) -> Built:
    return hnsw_rotated(root, kind, version=version, stable=stable, metric="cosine")


def hnsw_rotated_dot(root, kind, *, version="2.1", stable=False) -> Built:
    return hnsw_rotated(root, kind, version=version, stable=stable, metric="dot")


def json_other_path(root, kind, *, version="2.1", stable=False) -> Built:
    """A JSON index whose details say path ``x`` over the files of the same table's index of
    path ``y`` (another integer key of the same documents)."""
    if kind != "JSON":
        raise NotWrong("not a JSON index")
    if stable:
        raise NotWrong("pylance 14.0.2 refuses a JSON index under stable row ids")
    from lance.indices import IndexConfig

    t = rows()
    meta = [json.dumps({"x": int(i) % 50, "y": (int(i) * 7 + 3) % 50}) for i in range(N)]
    t = t.set_column(t.schema.get_field_index("meta"), "meta", pa.array(meta, pa.json_()))
    a, b = str(root / "a"), str(root / "b")
    for uri, path in ((a, "x"), (b, "y")):
        if os.path.exists(uri):
            shutil.rmtree(uri)
        ds = _write(uri, t, version=version, stable=stable)
        ds.create_scalar_index("meta", index_type=IndexConfig(
            index_type="json", parameters={"target_index_type": "btree", "path": path}),
            name="idx")
    copy_index_files(b, a)
    return Built(a, "idx", "the files of the index of path 'y' under details of path 'x'",
                 query(kind))


def metric_relabelled(root, kind, *, version="2.1", stable=False) -> Built:
    """A vector index built under ``l2`` whose files are relabelled ``cosine`` (index.idx's
    ``lance:index`` and auxiliary.idx's ``distance_type``): the partitions, vectors and codes
    are those of l2, a reader searches them by cosine."""
    if kind not in VECTOR:
        raise NotWrong("no metric")
    if kind.endswith("FLAT"):
        raise NotWrong("pylance 14.0.2 ranks stored raw vectors by their true cosine: an l2 "
                       "IVF_FLAT read as cosine answers as a cosine scan does (IVF_HNSW_FLAT: "
                       "1 of 30 queries differs, through its l2 graph; INDEX-147 names it)")
    from conformance.releases.index_mutations import rewrite_index_file

    uri, _ds = _own(root, kind, version=version, stable=stable)

    def relabel(key):
        def change(t):
            meta = dict(t.schema.metadata)
            raw = meta[key].decode()
            if key == b"lance:index":
                d = json.loads(raw)
                d["distance_type"] = "cosine"
                meta[key] = json.dumps(d).encode()
            else:
                meta[key] = b"cosine"
            return t.replace_schema_metadata(meta), f"{key.decode()} {raw} made cosine"
        return change

    detail = rewrite_index_file(Path(uri), "index.idx", relabel(b"lance:index"))
    rewrite_index_file(Path(uri), "auxiliary.idx", relabel(b"distance_type"))
    return Built(uri, "idx", detail, None)


def fragment_id_reused(root, kind, *, version="2.1", stable=False) -> Built:
    """A fragment deleted whole (the index's bitmap keeps its id, as pylance does), then an
    appended fragment given that id again by a writer that reuses ids: the index answers for
    the deleted rows at the new rows' addresses."""
    if stable:
        raise NotWrong("under stable row ids the appended rows have new ids")
    from conformance.fixtures.corruption import encode_manifest, split_manifest

    uri, ds = _own(root, kind, version=version, stable=stable)
    ds.delete(f"id >= {N // 2}")
    new = rows(N // 2, seed=9, start=N + 7)  # other ids: other values in every column
    new = new.set_column(1, "cat", pa.array([f"c{(i + 7) % 20}" for i in range(N // 2)]))
    _write(uri, new, version=version, stable=stable, mode="append")
    gone = sorted(set(bitmap(uri)) - set(fragment_ids(uri)))
    if not gone:
        raise NotWrong("the delete removed no whole fragment")
    path = _latest(uri)
    m, idx, txn = split_manifest(path.read_bytes())
    newest = max(m.fragments, key=lambda f: f.id)
    fresh = int(newest.id)
    newest.id = gone[0]
    path.write_bytes(encode_manifest(m, index=idx, txn=txn))
    return Built(uri, "idx", f"fragment {gone[0]} deleted whole; the appended fragment {fresh} "
                 f"renumbered {gone[0]}", query(kind))


def zone_short(root, kind, *, version="2.1", stable=False) -> Built:
    """Each ZONEMAP/BLOOMFILTER zone one row shorter than its rows (zone_length - 1): the last
    row of every zone is in no zone."""
    if kind not in ("ZONEMAP", "BLOOMFILTER"):
        raise NotWrong("no zones")
    from conformance.releases.index_mutations import rewrite_index_file

    uri, _ds = _own(root, kind, version=version, stable=stable, per_file=500)
    name = f"{kind.lower()}.lance"

    def change(t):
        i = t.schema.get_field_index("zone_length")
        col = pa.compute.subtract(t.column(i), pa.scalar(1, t.schema.field(i).type))
        return t.set_column(i, t.schema.field(i), col), f"{t.num_rows} zones one row shorter"

    detail = rewrite_index_file(Path(uri), name, change)
    return Built(uri, "idx", detail, "id = 499")


FAMILIES = {
    "swap": swap,
    "swap-same-counts": swap_same_counts,
    "swap-fragments": swap_fragments,
    "split": split,
    "stale-append": stale_append,
    "stale-update": stale_update,
    "bitmap-drops": bitmap_drops,
    "old-after-compaction": old_after_compaction,
    "partitions-exchanged": partitions_exchanged,
    "other-column": other_column,
    "nulls-dropped": nulls_dropped,
    "hnsw-rotated": hnsw_rotated,
    "hnsw-rotated-cosine": hnsw_rotated_cosine,
    "hnsw-rotated-dot": hnsw_rotated_dot,
    "metric-relabelled": metric_relabelled,
    "json-other-path": json_other_path,
    "fragment-id-reused": fragment_id_reused,
    "zone-short": zone_short,
}

#: family -> the kinds it makes a wrong index of (a family not named: every kind)
FAMILY_KINDS = {
    "swap-same-counts": TEXT,
    "partitions-exchanged": VECTOR,
    "nulls-dropped": NULL_KINDS,
    "hnsw-rotated": HNSW,
    "hnsw-rotated-cosine": HNSW,
    # IVF_HNSW_SQ under dot: pylance answers wrong through the rotated graph, but its recorded
    # distances differ between releases and INDEX-147 does not judge them (a known miss)
    "hnsw-rotated-dot": ("IVF_HNSW_FLAT", "IVF_HNSW_PQ"),
    "metric-relabelled": tuple(k for k in VECTOR if not k.endswith("FLAT")),
    "json-other-path": ("JSON",),
    "zone-short": ("ZONEMAP", "BLOOMFILTER"),
}
#: families that make no wrong index under stable row ids
NOT_STABLE = ("split", "fragment-id-reused", "json-other-path")
