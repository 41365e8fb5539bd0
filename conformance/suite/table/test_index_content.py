"""Index content held against the data: reference_impl.index (BTREE, BITMAP, LABEL_LIST) and
the deep rules INDEX-100..106 (conformance/rules/index_content.py).

Negative: the "swap" family of issue 35 (two tables with the same rows, one reversed, the same
index; the second's index files copied over the first's, same names and sizes) for BTREE,
BITMAP and LABEL_LIST, forced with pylance 14.0.2; a page of pylance's own BTREE rewritten
with the reference file writer. The fixtures of fixtures/invalid/INDEX-10x are the hand-made
negatives of each rule. Positive: pylance's own indexes after append, delete, update,
optimize_indices, compaction with and without defer_index_remap, and with stable row ids.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from conformance.engine import validate
from reference_impl.errors import FormatError
from reference_impl.index import Disagreement, IndexedData
from reference_impl.index.against import (
    ROW_MISSING,
    ROW_OUTSIDE,
    VALUE_DIFFERS,
    hold_pairs,
)
from reference_impl.index.bitmap import decode_row_map, encode_row_map

CONTENT_RULES = {f"INDEX-1{n:02d}" for n in range(20)}
F1 = 1 << 32


def _data(rows, values, **kw) -> IndexedData:
    return IndexedData(field_id=0, field_name="a", stable_row_ids=kw.pop("stable", False),
                       fragment_ids=np.asarray(kw.pop("frags", [0, 1]), np.uint32),
                       row_ids=np.asarray(rows, np.uint64), values=pa.array(values), **kw)


def _rules(found: list[Disagreement]) -> list[str]:
    return sorted(d.rule for d in found)


# -- the shared comparison, without pylance ---------------------------------------------------

def test_pairs_equal_to_the_data_agree():
    data = _data([0, 2, F1], [10, 30, 40], deleted_row_ids=np.asarray([1], np.uint64))
    # in another order, with the deleted row 1 still named: nothing to say
    found = list(hold_pairs("i", data, [F1, 1, 0, 2], pa.array([40, 20, 10, 30])))
    assert found == []


def test_a_row_under_another_value_is_value_differs_naming_row_and_values():
    data = _data([0, 2, F1], [10, 30, 40])
    found = list(hold_pairs("i", data, [0, 2, F1], pa.array([10, 40, 30])))
    assert _rules(found) == [VALUE_DIFFERS] * 2
    d = next(d for d in found if d.row_id == 2)
    assert d.value == 40 and "'i'" in d.message and "holds 30" in d.message


def test_a_missing_live_row_and_a_row_outside():
    data = _data([0, 2, F1], [10, 30, 40], gone_fragment_ids=np.asarray([4], np.uint32))
    rows = [0, 2, 7 << 32, 4 << 32]  # F1 missing; fragment 7 not covered; 4 gone (allowed)
    found = list(hold_pairs("i", data, rows, pa.array([10, 30, 99, 98])))
    assert _rules(found) == [ROW_MISSING, ROW_OUTSIDE]
    assert {d.row_id for d in found} == {F1, 7 << 32}


def test_nulls_are_values_of_their_own():
    data = _data([0, 1], [None, 5])
    assert list(hold_pairs("i", data, [0, 1], pa.array([None, 5]))) == []
    assert _rules(list(hold_pairs("i", data, [0, 1], pa.array([5, None])))) == \
        [VALUE_DIFFERS] * 2


def test_stable_row_ids_of_other_fragments_are_stale_not_outside():
    """Under stable row ids an id live in an uncovered fragment is a row an update moved out
    of the index's fragments: stale, as a deleted row is (readers drop hits outside the covered
    fragments); with row addresses a live row of an uncovered fragment is outside."""
    data = _data([5, 6], [1, 2], stable=True, elsewhere_row_ids=np.asarray([9], np.uint64))
    kinds = data.classify(np.asarray([5, 9, 100], np.uint64))
    assert kinds.tolist() == [IndexedData.LIVE, IndexedData.DELETED, IndexedData.DELETED]
    frag1 = (1 << 32) + 3
    by_address = _data([5, 6], [1, 2])
    assert by_address.classify(np.asarray([5, frag1], np.uint64)).tolist() == \
        [IndexedData.LIVE, IndexedData.OUTSIDE]


def test_deferred_remap_moves_are_followed():
    old = np.asarray([0, 1, 2], np.uint64)
    new = np.asarray([5 << 32, IndexedData.DROPPED, (5 << 32) + 1], np.uint64)
    data = _data([5 << 32, (5 << 32) + 1], [10, 30], frags=[5], moves=[(old, new)])
    assert list(hold_pairs("i", data, [0, 1, 2], pa.array([10, 20, 30]))) == []
    assert _rules(list(hold_pairs("i", data, [0, 1, 2], pa.array([30, 20, 10])))) == \
        [VALUE_DIFFERS] * 2


def test_findings_are_capped_per_rule():
    n = 100
    data = _data(np.arange(n), np.arange(n))
    found = list(hold_pairs("i", data, np.arange(n), pa.array(np.arange(n)[::-1].copy())))
    assert len(found) == 11 and "more" in found[-1].message


def test_findings_of_every_kind_are_capped_per_index_and_rule():
    """The rules keep the first PER_INDEX_AND_RULE disagreements of a rule for an index and
    count the rest (the text and zone checks do not summarise themselves: an NGRAM index
    swapped for another table's disagreed 15,019 times)."""
    from conformance.rules.index_content import PER_INDEX_AND_RULE, first_disagreements

    many = [Disagreement("INDEX-122", f"row {r}", row_id=r) for r in range(5000)]
    few = [Disagreement("INDEX-124", f"zone {z}") for z in range(3)]
    kept, more = first_disagreements(iter(many[:2500] + few + many[2500:]))
    assert [d.row_id for d in kept if d.rule == "INDEX-122"] == list(range(PER_INDEX_AND_RULE))
    assert [d for d in kept if d.rule == "INDEX-124"] == few
    assert list(more) == ["INDEX-122"]
    count, first = more["INDEX-122"]
    assert count == 5000 - PER_INDEX_AND_RULE and first.row_id == PER_INDEX_AND_RULE


def test_row_map_round_trip_and_bounds():
    rows = np.asarray([0, 5, F1, F1 + 7, (3 << 32) + 1], np.uint64)
    got, full = decode_row_map(encode_row_map(rows))
    assert sorted(got.tolist()) == rows.tolist() and full == []
    none, full = decode_row_map(b"\x01\x00\x00\x00\x02\x00\x00\x00\x00\x00\x00\x00")
    assert len(none) == 0 and full == [2]  # size 0: every row of fragment 2
    for bad in (b"", b"\x05\x00\x00\x00", b"\xff\xff\xff\xff" + b"\x00" * 8,
                encode_row_map(rows) + b"\x00"):
        with pytest.raises(FormatError):
            decode_row_map(bad)


# -- the rules on the hand-made fixtures -----------------------------------------------------

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "invalid"


@pytest.mark.parametrize("rule_id", ["INDEX-101", "INDEX-102", "INDEX-103", "INDEX-105"])
def test_fixture_finding_names_index_and_row_or_page(rule_id):
    report = validate(str(FIXTURES / rule_id / "table"), versions="all", deep=True)
    found = [v for v in report.violations if v.rule == rule_id]
    assert found and all(v.location.get("index") == "a_idx" for v in found)
    assert all("row" in v.location or "page" in v.location for v in found)


def test_unread_layouts_are_noted_not_reported(tmp_path):
    """INDEX-015's fixture lists a BTREE with page_data.lance alone: not a layout read, so
    it is noted on the report as not judged, and no content rule fires."""
    report = validate(str(FIXTURES / "INDEX-015" / "table"), versions="all", deep=True)
    assert not report.rules_violated(None) & CONTENT_RULES
    assert any("a_idx" in n and "not held against its data" in n for n in report.not_judged)
    assert "not judged: index 'a_idx'" in report.render("text")
    assert report.as_dict()["not_judged"] == report.not_judged


# -- pylance 14.0.2's own indexes, and the swap family ------------------------------------------

def _table(n: int, reverse: bool = False) -> pa.Table:
    idx = np.arange(n)[::-1] if reverse else np.arange(n)
    return pa.table({
        "id": pa.array(idx, pa.int64()),
        "s": pa.array([None if i % 17 == 0 else f"v{i % 7}" for i in idx]),
        "l": pa.array([None if i % 19 == 0 else [f"a{i % 5}", f"b{i % 3}"] for i in idx],
                      pa.list_(pa.string())),
    })


def _index_all(ds):
    ds.create_scalar_index("id", "BTREE")
    ds.create_scalar_index("s", "BITMAP")
    ds.create_scalar_index("l", "LABEL_LIST")


@pytest.fixture(scope="module")
def swapped(tmp_path_factory, pylance):
    """Issue 35's swap: table A and table B hold the same 2,000 rows, B reversed; each gets
    the same three indexes; B's index files are copied over A's (same names, same sizes)."""
    root = tmp_path_factory.mktemp("swap")
    uuids = {}
    for name, rev in (("A", False), ("B", True)):
        ds = pylance.write_dataset(_table(2000, rev), str(root / name))
        _index_all(ds)
        uuids[name] = {i["name"]: i["uuid"] for i in pylance.dataset(str(root / name))
                       .list_indices()}
    for idx_name, ua in uuids["A"].items():
        src = root / "B" / "_indices" / uuids["B"][idx_name]
        for f in src.iterdir():
            dst = root / "A" / "_indices" / ua / f.name
            assert dst.stat().st_size == f.stat().st_size  # the manifest stays true
            shutil.copyfile(f, dst)
    ds = pylance.dataset(str(root / "A"))
    # forced: pylance answers wrong through the index, right by a scan
    assert ds.to_table(filter="id = 5").column("id").to_pylist() == [1994]
    assert ds.to_table(filter="id = 5", use_scalar_index=False).column("id").to_pylist() == [5]
    return root


@pytest.mark.interop
def test_swapped_index_files_are_caught_for_each_kind(swapped):
    report = validate(str(swapped / "A"), deep=True)
    assert not report.conforms
    wrong = [v for v in report.violations if v.rule == "INDEX-102"]
    assert {v.location["index"] for v in wrong} == {"id_idx", "s_idx", "l_idx"}
    assert all("row" in v.location for v in wrong if "more" not in v.message)
    msg = next(v.message for v in wrong if v.location["index"] == "id_idx" and
               v.location.get("row") == 5)
    assert "under value 1994" in msg and "holds 5" in msg
    # the table B, and A before the swap of its files, are their own indexes: no error
    assert validate(str(swapped / "B"), deep=True).conforms
    # without --deep the rules do not run
    assert validate(str(swapped / "A")).conforms


@pytest.mark.interop
def test_a_btree_page_rewritten_with_the_reference_writer_is_caught(tmp_path, pylance):
    from reference_impl.file.reader import LanceFileReader
    from reference_impl.file.writer import write_lance_file
    from reference_impl.io.local import LocalStore

    ds = pylance.write_dataset(_table(300), str(tmp_path / "t"))
    ds.create_scalar_index("id", "BTREE")
    folder = next((tmp_path / "t" / "_indices").iterdir())
    store = LocalStore(folder)
    size = (folder / "page_data.lance").stat().st_size
    page = LanceFileReader(store, "page_data.lance", size=size).read_all()
    values = page.column("values").to_numpy().copy()
    values[100], values[101] = values[101], values[100]  # two rows exchange their keys...
    ids = page.column("ids").to_numpy().copy()
    ids[100], ids[101] = ids[101], ids[100]               # ...and stay with them: still true
    same = pa.table({"values": values, "ids": pa.array(ids, pa.uint64())})
    write_lance_file(store, "page_data.lance", same, version="2.0")
    _fix_size(tmp_path / "t", folder, pylance)
    report = validate(str(tmp_path / "t"), deep=True)
    assert report.rules_violated("error") == {"INDEX-104"}, report.render("text")
    ids[100], ids[101] = ids[101], ids[100]  # now the keys lie about their rows
    write_lance_file(store, "page_data.lance",
                     pa.table({"values": values, "ids": pa.array(ids, pa.uint64())}),
                     version="2.0")
    _fix_size(tmp_path / "t", folder, pylance)
    report = validate(str(tmp_path / "t"), deep=True)
    assert report.rules_violated("error") == {"INDEX-102", "INDEX-104"}, report.render("text")


def _fix_size(root: Path, folder: Path, pylance) -> None:
    """Rewrite the index section so IndexFile.size_bytes matches the rewritten file."""
    from conformance.fixtures.corruption import latest_manifest, rewrite_manifest
    from reference_impl.dataset import open_dataset

    ds = open_dataset(str(root))
    section = ds.index_section
    for im in section.indices:
        for f in im.files:
            p = folder / f.path
            if p.exists():
                f.size_bytes = p.stat().st_size
    rewrite_manifest(latest_manifest(root), index=section.SerializeToString())


def _history(pylance, root: Path, *, stable: bool, defer: bool) -> None:
    kw = {"enable_stable_row_ids": True} if stable else {}
    ds = pylance.write_dataset(_table(1000), str(root), max_rows_per_file=300, **kw)
    _index_all(ds)
    more = _table(1500).slice(1000)
    ds = pylance.write_dataset(more, str(root), mode="append", max_rows_per_file=300)
    ds.delete("id % 10 = 3")
    ds.update({"s": "'changed'"}, where="id < 50")
    ds.optimize.optimize_indices()
    ds = pylance.dataset(str(root))
    ds.optimize.compact_files(target_rows_per_fragment=700, defer_index_remap=defer)
    ds = pylance.write_dataset(_table(1600).slice(1500), str(root), mode="append")
    ds.delete("id = 7")


@pytest.mark.interop
@pytest.mark.parametrize("stable,defer", [(False, False), (False, True), (True, False)],
                         ids=["addresses", "deferred-remap", "stable-row-ids"])
def test_pylance_indexes_after_each_operation_draw_no_error(tmp_path, pylance, stable, defer):
    root = tmp_path / "t"
    _history(pylance, root, stable=stable, defer=defer)
    report = validate(str(root), versions="all", deep=True)
    assert not report.rules_violated(None) & CONTENT_RULES, report.render("text")
    assert not report.not_judged, report.not_judged
    # not vacuous: every version with the three indexes had them judged against rows
    from conformance.rules import index_content
    assert "INDEX-102" in report.rules_checked and index_content


# -- inspect and dump --index -----------------------------------------------------------------

def test_inspect_shows_each_index_decoded(capsys):
    from conformance.cli import main

    table = str(FIXTURES / "INDEX-105" / "table")
    assert main(["inspect", table]) == 0
    text = capsys.readouterr().out
    assert "index content" in text
    assert "a_idx btree btree-v0: covers 4 rows of fragments [0, 1]; 5 entries, values 1..5, " \
           "pages 1" in text
    assert main(["inspect", "--json", table]) == 0
    import json

    (content,) = json.loads(capsys.readouterr().out)["index_content"]
    assert content["kind"] == "btree" and content["entries"] == 5 and content["pages"] == 1
    assert (content["min"], content["max"], content["rows_covered"]) == (1, 5, 4)


def test_inspect_says_why_an_index_is_not_read(capsys):
    from conformance.cli import main

    assert main(["inspect", str(FIXTURES / "INDEX-015" / "table")]) == 0
    assert "a_idx btree: covers 4 rows of fragments [0, 1]; not read: BTREE index files" in \
        capsys.readouterr().out


def test_dump_index_writes_its_entries_as_jsonl_and_arrow(tmp_path, capsys):
    import json

    from conformance.cli import main

    table = str(FIXTURES / "INDEX-106" / "table")
    out = tmp_path / "s.jsonl"
    assert main(["dump", table, "--index", "s_idx", "--out", str(out)]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["value"], r["row_id"], r["key"]) for r in rows] == [
        ("u", F1, 0), ("v", F1 + 1, 1), ("x", 0, 2), ("x", 0, 3), ("y", 1, 4), ("z", 2, 5)]
    assert {r["segment"] for r in rows} == {"5d2b8f0c-1a4e-4c7b-8e21-3f9a6d0b7c55"}
    arrow = tmp_path / "a.arrow"
    assert main(["dump", str(FIXTURES / "INDEX-104" / "table"), "--index", "a_idx",
                 "--out", str(arrow)]) == 0
    t = pa.ipc.open_file(str(arrow)).read_all()
    assert t.column_names == ["segment", "value", "row_id", "page"]
    assert t.column("value").to_pylist() == [1, 2, 4, 3, 5]
    assert main(["dump", table, "--index", "nope", "--out", str(out)]) == 2
    assert main(["dump", str(FIXTURES / "INDEX-015" / "table"), "--index", "a_idx",
                 "--out", str(out)]) == 1
    assert "not the layout" in capsys.readouterr().err


# -- other releases' own indexes (compat: each release in its own virtualenv) ----------------

_RELEASE_PROGRAM = r"""
import sys
import numpy as np, pyarrow as pa, lance
root = sys.argv[1]
def rows(lo, hi):
    i = np.arange(lo, hi)
    return pa.table({"id": pa.array(i, pa.int64()),
                     "s": pa.array([None if k % 17 == 0 else f"v{k % 7}" for k in i]),
                     "l": pa.array([None if k % 19 == 0 else [f"a{k % 5}", f"b{k % 3}"]
                                    for k in i], pa.list_(pa.string()))})
ds = lance.write_dataset(rows(0, 900), root, max_rows_per_file=300)
made = []
for column, kind in (("id", "BTREE"), ("s", "BITMAP"), ("l", "LABEL_LIST")):
    try:
        ds.create_scalar_index(column, kind)
        made.append(kind)
    except Exception:
        pass  # a kind this release does not build
ds = lance.write_dataset(rows(900, 1200), root, mode="append")
ds.delete("id % 10 = 3")
try:
    lance.dataset(root).optimize.optimize_indices()
except Exception:
    pass
print(",".join(made))
"""


@pytest.mark.compat
@pytest.mark.parametrize("release", ["pylance==0.10.18", "pylance==0.38.3"])
def test_release_indexes_are_read_and_draw_no_error(tmp_path, release):
    import subprocess

    from conformance.releases.venvs import Release, ReleaseUnavailable, ensure_venv
    from conformance.suite.parts import unavailable

    try:
        python = ensure_venv(Release.parse(release))
    except ReleaseUnavailable as exc:
        unavailable(release, str(exc))
    root = tmp_path / "t"
    done = subprocess.run([str(python), "-c", _RELEASE_PROGRAM, str(root)], capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    made = done.stdout.strip().splitlines()[-1].split(",")
    assert "BTREE" in made  # every release builds a BTREE
    report = validate(str(root), versions="all", deep=True)
    assert not report.rules_violated(None) & CONTENT_RULES, report.render("text")
    assert not report.not_judged, report.not_judged  # each index was read and judged


def test_a_posting_of_a_whole_fragment_stands_for_its_rows():
    """A row map entry of size 0 names every row of its fragment: held against the data's
    rows of that fragment (live and deleted)."""
    from types import SimpleNamespace

    from reference_impl.index import IndexContent, check_index

    keys = pa.array(["x", "y"])
    entries = pa.table({"value": pa.array(["y"]), "row_id": pa.array([F1], pa.uint64()),
                        "key": pa.array([1], pa.int64())})
    content = IndexContent("bitmap", "bitmap-v0", entries,
                           extra={"full": [(0, 0)], "keys": keys, "n_keys": 2})
    index = SimpleNamespace(name="s_idx", kind="bitmap")
    data = _data([0, 2, F1], ["x", "x", "y"], deleted_row_ids=np.asarray([1], np.uint64))
    assert list(check_index(content, index, data)) == []
    data = _data([0, 2, F1], ["x", "z", "y"], deleted_row_ids=np.asarray([1], np.uint64))
    (d,) = check_index(content, index, data)
    assert d.rule == VALUE_DIFFERS and d.row_id == 2 and d.value == "x"
