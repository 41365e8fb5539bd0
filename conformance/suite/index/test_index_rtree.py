"""INDEX-130..133: RTREE indexes held against the geometries they index.

Units: the boxes of WKT, WKB (both byte orders, ISO and EWKB dimensions, the NaN point) and
geoarrow values; hostile values are "not read", never an exception; the page layout of a
packed tree.
Positive: pylance 14.0.2's own trees over WKT text, WKB bytes and geoarrow points (row
addresses and stable row ids; more than one page, so branches are checked) after append +
optimize_indices, delete, update and compaction draw no error; so do 4.0.2's and 11.0.0's
(compat). Negative: the swapped family (the tree of the same rows reversed) makes pylance
answer ``st_intersects`` wrong and is an INDEX-130 error naming a row; a nulls file without
the null rows makes pylance's ``IS NULL`` lose them and is INDEX-132.
"""

from __future__ import annotations

import math
import struct

import numpy as np
import pyarrow as pa
import pytest

from conformance.engine import validate
from reference_impl.index import geometry, rtree

RULES = {"INDEX-100", "INDEX-101", "INDEX-103", "INDEX-130", "INDEX-131", "INDEX-132",
         "INDEX-133"}


# ---- units: no pylance ----

def test_boxes_of_wkt():
    state, box = geometry.boxes(pa.array([
        "POINT (1 2)", "LINESTRING (0 0, 3 -4)", "POLYGON ((0 0, 5 0, 5 5, 0 0))",
        "MULTIPOINT ((1 1), (2 7))", "POINT Z (1 1 5)", "POINT EMPTY", None,
        "GEOMETRYCOLLECTION (POINT (1 2), LINESTRING (3 4, 5 6))", "hello world",
        "POINT (1 2", "POINT (1e3 -2.5E-1)"]))
    assert state.tolist() == [0, 0, 0, 0, 0, 1, 2, 0, 3, 3, 0]
    assert box[0].tolist() == [1, 2, 1, 2]
    assert box[1].tolist() == [0, -4, 3, 0]
    assert box[3].tolist() == [1, 1, 2, 7]
    assert box[4].tolist() == [1, 1, 1, 1]  # z is not part of the box
    assert box[7].tolist() == [1, 2, 5, 6]
    assert box[10].tolist() == [1000, -0.25, 1000, -0.25]


def test_column_form_of_wkt_points_equals_the_readable_parse():
    rng = np.random.default_rng(5)
    texts = [f"POINT ({float(x)!r} {float(y)!r})" for x, y in rng.normal(0, 1e3, (300, 2))]
    texts += ["point(1 2)", "  POINT  ( -0.5   7e-3 )  ", "POINT (1.5e300 -2E-300)",
              "POINT (nan 1)", "POINT (+1 2)", "POINT Z (1 2 3)", None]
    array = pa.array(texts)
    box = np.full((len(texts), 4), np.nan)
    done = geometry._wkt_points(array, box)
    assert done[:303].all() and not done[303:].any()
    for i in np.flatnonzero(done):
        assert tuple(box[i]) == geometry._wkt_box(texts[i])


def test_boxes_of_wkb_both_orders_dimensions_and_the_empty_point():
    line = struct.pack("<BII", 1, 2, 2) + struct.pack("<dddd", 0, 0, 3, 4)
    iso_z = struct.pack("<BIddd", 1, 1001, 7, 8, 9)
    ewkb_srid = struct.pack("<BIIdd", 1, 0x20000001, 4326, 5, 6)
    multi = struct.pack("<BII", 1, 4, 2) + struct.pack("<BIdd", 1, 1, -1, -2) + \
        struct.pack(">BIdd", 0, 1, 3, 4)
    state, box = geometry.boxes(pa.array([
        struct.pack("<BIdd", 1, 1, 1, 2), struct.pack(">BIdd", 0, 1, 1, 2), line, iso_z,
        ewkb_srid, multi, struct.pack("<BIdd", 1, 1, math.nan, math.nan), b"\x01\x01",
        struct.pack("<BII", 1, 2, 10 ** 9), b"\x07"], pa.binary()))
    assert state.tolist() == [0, 0, 0, 0, 0, 0, 1, 3, 3, 3]
    assert box[1].tolist() == [1, 2, 1, 2]
    assert box[2].tolist() == [0, 0, 3, 4]
    assert box[3].tolist() == [7, 8, 7, 8]
    assert box[4].tolist() == [5, 6, 5, 6]
    assert box[5].tolist() == [-1, -2, 3, 4]


def test_boxes_of_geoarrow_points_lines_and_boxes():
    pt = pa.struct([("x", pa.float64()), ("y", pa.float64())])
    state, box = geometry.boxes(pa.array([{"x": 1.0, "y": 2.0}, None], pt))
    assert state.tolist() == [0, 2] and box[0].tolist() == [1, 2, 1, 2]
    lines = pa.array([[{"x": 0.0, "y": 1.0}, {"x": 2.0, "y": -1.0}], [], None],
                     pa.list_(pt))
    state, box = geometry.boxes(lines)
    assert state.tolist() == [0, 1, 2] and box[0].tolist() == [0, -1, 2, 1]
    interleaved = pa.FixedSizeListArray.from_arrays(pa.array([3.0, 4.0, 5.0, 6.0]), 2)
    assert geometry.boxes(interleaved)[1].tolist() == [[3, 4, 3, 4], [5, 6, 5, 6]]
    boxes = pa.array([{"xmin": 0.0, "ymin": 1.0, "xmax": 2.0, "ymax": 3.0}],
                     pa.struct([(n, pa.float64()) for n in ("xmin", "ymin", "xmax", "ymax")]))
    assert geometry.boxes(boxes)[1].tolist() == [[0, 1, 2, 3]]
    assert geometry.boxes(pa.array([1, 2])) is None


def test_page_layout_of_a_packed_tree():
    assert rtree.page_layout(5, 2) == [(0, 0, 2), (0, 2, 2), (0, 4, 1), (1, 5, 2), (1, 7, 1),
                                       (2, 8, 2)]
    assert rtree.page_layout(90, 4096) == [(0, 0, 90)]
    assert rtree.page_layout(0, 4096) == [(0, 0, 0)]


# ---- against pylance ----

def _geometries(n, seed=0, empties=True):
    rng = np.random.default_rng(seed)
    wkt, wkb = [], []
    for i in range(n):
        x, y = rng.uniform(-180, 180), rng.uniform(-90, 90)
        r = i % 10
        wkt.append(None if r == 0 else "POINT EMPTY" if r == 1 and empties else
                   f"LINESTRING ({x} {y}, {x + 1} {y - 0.5})" if r == 2 else f"POINT ({x} {y})")
        wkb.append(None if r == 3 else struct.pack("<BIdd", 1, 1, math.nan, math.nan)
                   if r == 4 else struct.pack(">BIdd", 0, 1, x, y) if r == 5 else
                   struct.pack("<BIdd", 1, 1, x, y))
    return wkt, wkb


def _rows(n=5000, start=0, seed=0, empties=True):
    wkt, wkb = _geometries(n, seed, empties)
    return pa.table({"id": pa.array(np.arange(start, start + n), pa.int64()),
                     "w": pa.array(wkt), "b": pa.array(wkb, pa.binary())})


def _findings(uri):
    return [f for f in validate(uri, deep=True).findings if f.rule in RULES]


def _errors(found):
    return [f for f in found if f.severity == "error"]


@pytest.mark.interop
@pytest.mark.parametrize("stable", [False, True], ids=["addr", "stable"])
def test_pylance_rtree_after_mutations_draws_no_error(tmp_path, stable):
    import lance

    uri = str(tmp_path / "t")
    ds = lance.write_dataset(_rows(), uri, max_rows_per_file=2000, enable_stable_row_ids=stable)
    ds.create_scalar_index("w", "RTREE", name="w_rt")
    ds.create_scalar_index("b", "RTREE", name="b_rt")
    assert _errors(_findings(uri)) == []
    ds = lance.write_dataset(_rows(300, 5000, seed=1), uri, mode="append")
    ds.optimize.optimize_indices()
    ds.delete("id % 7 = 3")
    ds.update({"w": "'POINT (1 2)'"}, where="id < 40")
    ds = lance.dataset(uri)
    ds.optimize.compact_files(target_rows_per_fragment=8000)
    found = _findings(uri)
    assert found == [], [f.message for f in found][:5]
    report = validate(uri, deep=True)
    assert not any("_rt" in n for n in report.not_judged or [])


def _intersects(uri, box, index=True):
    import lance

    x0, y0, x1, y1 = box
    poly = f"POLYGON (({x0} {y0}, {x1} {y0}, {x1} {y1}, {x0} {y1}, {x0} {y0}))"
    t = lance.dataset(uri).to_table(
        filter=f"st_intersects(w, st_geomfromtext('{poly}'))", columns=["id"],
        use_scalar_index=index)
    return sorted(t["id"].to_pylist())


@pytest.mark.interop
def test_swapped_rtree_answers_wrong_and_is_an_error(tmp_path):
    import os
    import shutil

    import lance

    rows = _rows(600, empties=False)  # (pylance's recheck refuses an empty point)
    a = lance.write_dataset(rows, str(tmp_path / "a"))
    b = lance.write_dataset(rows.take(np.arange(rows.num_rows)[::-1]), str(tmp_path / "b"))
    a.create_scalar_index("w", "RTREE", name="w_rt")
    b.create_scalar_index("w", "RTREE", name="w_rt")
    ia = lance.dataset(str(tmp_path / "a")).list_indices()[0]["uuid"]
    ib = lance.dataset(str(tmp_path / "b")).list_indices()[0]["uuid"]
    from conformance.suite.index.test_index_text import _set_index_file_size

    uri = str(tmp_path / "a")
    for n in os.listdir(tmp_path / "b" / "_indices" / ib):
        dest = tmp_path / "a" / "_indices" / ia / n
        shutil.copyfile(tmp_path / "b" / "_indices" / ib / n, dest)
        _set_index_file_size(uri, n, dest.stat().st_size)
    box = (-60, -30, 60, 30)
    assert _intersects(uri, box) != _intersects(uri, box, index=False), \
        "the swapped tree answers as the data does"
    errs = [f for f in _errors(_findings(uri)) if f.rule == "INDEX-130"]
    assert errs and all(f.location.get("index") == "w_rt" for f in errs)
    assert any("row" in f.location for f in errs)


@pytest.mark.interop
def test_nulls_file_without_the_null_rows_loses_them_and_is_an_error(tmp_path):
    import lance

    from conformance.suite.index.test_index_text import _rewrite_index_file
    from reference_impl.index.bitmap import encode_row_map

    uri = str(tmp_path / "t")
    lance.write_dataset(_rows(400), uri)
    ds = lance.dataset(uri)
    ds.create_scalar_index("w", "RTREE", name="w_rt")
    uuid = ds.list_indices()[0]["uuid"]

    def empty(table):
        return table.set_column(0, table.schema.field(0),
                                pa.array([encode_row_map([])], pa.binary()))

    _rewrite_index_file(uri, uuid, "nulls.lance", empty)
    ds = lance.dataset(uri)
    scan = ds.to_table(filter="w IS NULL", columns=["id"], use_scalar_index=False).num_rows
    through = ds.to_table(filter="w IS NULL", columns=["id"]).num_rows
    assert scan == 40 and through == 0, (scan, through)
    errs = [f for f in _errors(_findings(uri)) if f.rule == "INDEX-132"]
    assert errs and all(f.location.get("index") == "w_rt" for f in errs)


@pytest.mark.interop
def test_reference_written_tree_reads_in_pylance_as_written(tmp_path):
    """What the kit writes (the fixtures' tree, valid), pylance answers through as the data
    says."""
    import lance

    from conformance.fixtures import invalid_index
    from conformance.fixtures.corruption import write_base

    root = write_base(tmp_path / "t")
    invalid_index.write_rtree(root)
    assert _findings(str(root)) == []
    ds = lance.dataset(str(root))
    got = ds.to_table(filter="st_intersects(g, st_geomfromtext('POLYGON ((3 1, 6 1, 6 5, 3 5, "
                      "3 1))'))", columns=["id"])
    assert sorted(got["id"].to_pylist()) == [1, 6]
    assert ds.to_table(filter="g IS NULL", columns=["id"])["id"].to_pylist() == [3]


# ---- older releases' own trees (each in its own venv) ----

_BUILD = """
import sys, json, base64, lance, pyarrow as pa
uri = sys.argv[1]
wkt, wkb = json.load(open(sys.argv[2]))
wkb = [None if b is None else base64.b64decode(b) for b in wkb]
t = pa.table({"id": pa.array(range(len(wkt)), pa.int64()), "w": pa.array(wkt),
              "b": pa.array(wkb, pa.binary())})
ds = lance.write_dataset(t, uri, max_rows_per_file=2500)
ds.create_scalar_index("w", "RTREE", name="w_rt")
ds.create_scalar_index("b", "RTREE", name="b_rt")
ds.delete("id % 11 = 4")
ds.optimize.compact_files(target_rows_per_fragment=8000)
"""


@pytest.mark.compat
@pytest.mark.parametrize("release", ["pylance==4.0.2", "pylance==11.0.0"])
def test_older_releases_own_trees_draw_no_error(tmp_path, release):
    """4.0.2 keeps rows without coordinates as leaves under the empty box (inf, inf, -inf,
    -inf) and then writes the metadata bbox as nulls; 11.0.0 leaves them out. Both are the
    release's own, valid trees."""
    import base64
    import json
    import subprocess

    from conformance.releases.venvs import Release, ReleaseUnavailable, ensure_venv
    from reference_impl.dataset import open_dataset
    from reference_impl.index import of_dataset

    try:
        python = ensure_venv(Release.parse(release))
    except ReleaseUnavailable as exc:
        pytest.skip(f"{release} cannot be installed here: {exc}")
    wkt, wkb = _geometries(6000)
    uri = str(tmp_path / "t")
    values = tmp_path / "values.json"
    values.write_text(json.dumps([wkt, [None if b is None else base64.b64encode(b).decode()
                                        for b in wkb]]))
    done = subprocess.run([str(python), "-c", _BUILD, uri, str(values)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    ds = open_dataset(uri)
    trees = [of_dataset.read(ds, i) for i in of_dataset.decoded(ds) if i.kind == "rtree"]
    assert len(trees) == 2 and all(t.summary["pages"] > 1 for t in trees)
    empty_leaves = sum(int(np.sum(t.entries.column("xmin").to_numpy() == np.inf))
                       for t in trees)
    assert (empty_leaves > 0) == (release == "pylance==4.0.2")
    found = _findings(uri)
    assert found == [], [f.message for f in found][:5]
    assert not any("_rt" in n for n in validate(uri, deep=True).not_judged or [])


@pytest.mark.interop
def test_segments_merged_after_a_deferred_remap_leave_an_empty_tree_that_is_valid(tmp_path):
    """pylance 14.0.2: two segments built with create_index_uncommitted, a compaction with
    deferred remap, then merge_existing_index_segments: the merged tree covers no fragment
    and holds no entry (num_pages 0); readers scan the table, and so the kit finds nothing
    wrong with it."""
    import lance

    uri = str(tmp_path / "t")
    ds = lance.write_dataset(_rows(2000, empties=False), uri, max_rows_per_file=500)
    segs = [ds.create_index_uncommitted("w", "RTREE", fragment_ids=f, name="w_rt")
            for f in ([0, 1], [2, 3])]
    ds.delete("id % 10 = 3")
    ds.optimize.compact_files(target_rows_per_fragment=4000, defer_index_remap=True)
    ds = lance.dataset(uri)
    ds.commit_existing_index_segments("w_rt", "w", [ds.merge_existing_index_segments(segs)])
    assert [i.num_rows_indexed for i in lance.dataset(uri).describe_indices()] == [0]
    box = (-60, -30, 60, 30)
    assert _intersects(uri, box) == _intersects(uri, box, index=False)
    assert _findings(uri) == []


def test_census_answers_intersects_and_is_null_from_a_decoded_tree():
    from conformance.census import index_answers as answers
    from reference_impl.index import IndexContent

    leaves = pa.table({"row_id": pa.array([0, 1, 2], pa.uint64()),
                       "xmin": [0.0, 5.0, 9.0], "ymin": [0.0, 5.0, 9.0],
                       "xmax": [1.0, 6.0, 9.0], "ymax": [1.0, 6.0, 9.0]})
    content = IndexContent("rtree", "rtree-v0", leaves,
                           extra={"nulls": np.asarray([3], np.uint64),
                                  "full_null_fragments": []})
    table = pa.table({"id": pa.array([10, 11, 12, 13], pa.int64()),
                      "_rowaddr": pa.array([0, 1, 2, 3], pa.uint64()),
                      "_rowid": pa.array([0, 1, 2, 3], pa.uint64())})
    rowmap = answers.RowMap(table, False)
    q = answers.parse("st_intersects(geo, st_geomfromtext('POLYGON ((0.5 0.5, 5.5 0.5, 5.5 5.5, "
                      "0.5 5.5, 0.5 0.5))'))")
    assert answers.candidates(content, q, rowmap=rowmap, scan_ids=set()) == ({10, 11}, False)
    assert answers.candidates(content, answers.parse("geo IS NULL"), rowmap=rowmap,
                              scan_ids=set()) == ({13}, True)

