"""The census of indexes and the index-content mutation campaign (issue 35).

* default run, no pylance: the census's query parser, the row map and the answers from a
  decoded value index; the verdict of a cell from what the release and the kit say; the
  reference writer's extra global buffers.
* ``interop`` (default run, pylance 14.0.2 installed): a tiny corpus (BTREE and BITMAP,
  plain, swap, and BTREE after an update) built by the census program in its own process; the swap answers
  wrong through its index with the manifest's recorded sizes kept true; each cell judged
  (no false error; a wrong index is ``caught`` or ``missed``, never a pass when missed); one
  semantic edit of each scalar kind makes pylance answer wrong and is judged.
* ``compat``: the whole census of pylance 14.0.2 in its cached virtualenv and
  ``docs/census-indexes.md`` generated from it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from conformance.census import index_answers as answers
from conformance.census import index_census, indexes
from conformance.census.indexes import Case

REPO = Path(__file__).resolve().parents[3]
DOC = REPO / "docs" / "census-indexes.md"


# -- without pylance ---------------------------------------------------------------------------


def test_every_query_of_the_program_parses():
    from conformance.census import index_program as prog

    texts = [q for col in prog.SCALAR_QUERIES.values() for q, _p in col]
    texts += [f"full_text_query {t!r}" for t in prog.FTS_QUERIES]
    texts += [f"{k} nearest to the vector of id {r}" for r, k in prog.KNN_QUERIES]
    texts += [f"{k} nearest to the text of id {r}" for r, k in prog.MINHASH_QUERIES]
    parsed = [answers.parse(t) for t in texts]
    ops = {p.op for p in parsed}
    assert ops == {"eq", "gt", "range", "in", "is_null", "has_any", "has_all", "contains",
                   "json_eq", "json_gt", "fts", "nearest", "intersects", "minhash"}
    box = [p for p in parsed if p.op == "intersects"][0]
    assert box.column == "geo" and box.args == (9.5, 3.5, 12.5, 6.5)
    assert answers.parse("id IN (1, 7, 1999, 2100)").args == (1, 7, 1999, 2100)
    assert answers.parse("cat IN ('c1', 'c5')").args == ("c1", "c5")
    assert answers.parse("3 nearest to the vector of id 5").args == (3, 5)
    with pytest.raises(answers.CannotAnswer):
        answers.parse("id BETWEEN 1 AND 2")


def _rowmap(stable=False):
    # ids 0..5 in fragment 0 (offsets 0..5) and ids 6..7 in fragment 1
    addr = [i for i in range(6)] + [(1 << 32) | 0, (1 << 32) | 1]
    t = pa.table({"id": pa.array(range(8), pa.int64()),
                  "_rowaddr": pa.array(addr, pa.uint64()),
                  "_rowid": pa.array(range(100, 108), pa.uint64())})
    return answers.RowMap(t, stable)


def test_answers_from_a_decoded_value_index():
    """Pairs (value, row) of a BTREE-like content answer equality, range, IN and IS NULL; rows
    the data no longer holds are dropped; a content of unknown columns is refused."""
    from reference_impl.index import IndexContent

    rm = _rowmap()
    entries = pa.table({"value": pa.array([10, 10, 20, None, 30, 99], pa.int64()),
                        "row_id": pa.array([0, 1, 2, 3, 4, 77], pa.uint64())})
    content = IndexContent("btree", "test", entries)

    def ask(text):
        rows, exact = answers.candidates(content, answers.parse(text), rowmap=rm, scan_ids=set())
        assert exact
        return rows

    assert ask("num = 10") == {0, 1}
    assert ask("num >= 15 AND num < 31") == {2, 4}
    assert ask("num IN (20, 30)") == {2, 4}
    assert ask("num IS NULL") == {3}
    assert ask("num = 99") == set()  # row 77 is no live row
    assert rm.ids_outside({0}) == {6, 7}
    odd = IndexContent("btree", "test", pa.table({"k": [1]}))
    with pytest.raises(answers.CannotAnswer, match="no column"):
        answers.candidates(odd, answers.parse("num = 1"), rowmap=rm, scan_ids=set())
    stable = _rowmap(stable=True)
    assert stable.ids_of([100, 107, 5]) == {0, 7}


def test_answers_from_a_decoded_fm_index():
    """An FM's documents answer ``contains`` exactly: the rows whose text holds the
    substring; its rows are addresses, also under stable row ids."""
    from reference_impl.index import IndexContent

    entries = pa.table({"row_id": pa.array([0, 1, 2, (1 << 32) | 1], pa.uint64()),
                        "text": ["golf lance", "bravo", "", "a golf"],
                        "partition": pa.array([0, 0, 0, 1], pa.int32())})
    content = IndexContent("fm", "fm-v1", entries, extra={"row_addresses": True})
    for stable in (False, True):
        rows, exact = answers.candidates(content, answers.parse("contains(text, 'golf')"),
                                         rowmap=_rowmap(stable), scan_ids=set())
        assert exact and rows == {0, 7}


def test_rows_follow_a_deferred_remap_and_addresses_under_stable_ids():
    """An index built before a compaction whose remap was deferred names old addresses: the
    fragment reuse index's moves translate them (a dropped row maps to no row); an index that
    names rows by address is read by address even when the table has stable row ids."""
    t = pa.table({"id": pa.array([10, 11, 12], pa.int64()),
                  "_rowaddr": pa.array([(4 << 32) | 0, (4 << 32) | 1, (4 << 32) | 2], pa.uint64()),
                  "_rowid": pa.array([0, 1, 3], pa.uint64())})
    old = np.array([0, 1, 2, 3], np.uint64)  # fragment 0's rows; row 2 was deleted
    new = np.array([(4 << 32) | 0, (4 << 32) | 1, 2 ** 64 - 1, (4 << 32) | 2], np.uint64)
    rm = answers.RowMap(t, False, [(old, new)])
    assert rm.ids_of([0, 1, 2, 3]) == {10, 11, 12}
    assert rm.ids_of([(4 << 32) | 1]) == {11}  # a new address is kept
    stable = answers.RowMap(t, True)
    assert stable.ids_of([3]) == {12}
    assert stable.by_address().ids_of([(4 << 32) | 2]) == {12}


def test_nearest_from_stored_vectors_merges_unindexed_fragments():
    from reference_impl.index import IndexContent

    vecs = np.eye(8, dtype=np.float32)
    addr = [i for i in range(6)] + [(1 << 32) | 0, (1 << 32) | 1]
    t = pa.table({"id": pa.array(range(8), pa.int64()), "_rowaddr": pa.array(addr, pa.uint64()),
                  "_rowid": pa.array(range(8), pa.uint64()),
                  "vec": pa.FixedSizeListArray.from_arrays(pa.array(vecs.reshape(-1)), 8)})
    rm = answers.RowMap(t, False)
    # the index covers fragment 0 and stores row 2's vector under row 1's address
    stored = vecs[:6].copy()
    stored[1] = vecs[2]
    content = IndexContent("vector", "test", pa.table({
        "row_id": pa.array(range(6), pa.uint64()),
        "vector": pa.FixedSizeListArray.from_arrays(pa.array(stored.reshape(-1)), 8)}))
    q = answers.parse("1 nearest to the vector of id 2")
    got = answers.nearest(content, q, rowmap=rm, covered={0})
    assert got in ([1], [2])
    q7 = answers.parse("1 nearest to the vector of id 7")  # lives in the unindexed fragment
    assert answers.nearest(content, q7, rowmap=rm, covered={0}) == [7]


def _case(tmp_path, *, agrees: bool, kind="BTREE", status="built") -> Case:
    q = {"query": "id = 5", "kind": "filter", "indexed": {"ids": [5] if agrees else [1994]},
         "scan": {"ids": [5]}, "data": [5]}
    data = {"release": "pylance==14.0.2", "kind": kind, "scenario": "plain", "status": status,
            "expected": "right", "queries": [q], "table": {"data_storage_version": "2.2"},
            "operations": []}
    return Case(tmp_path, data)


@pytest.mark.parametrize("agrees,errors,differ,decoded,verdict", [
    (True, [], [], "yes", "agree"),
    (True, [], [], "UnsupportedIndex: not read", "not decoded"),
    (True, ["INDEX-101: row missing"], [], "yes", "false error"),
    (True, [], [{"query": "id = 5", "only_index": [], "only_scan": [5]}], "yes", "false error"),
    (False, ["INDEX-102: value differs"], [], "yes", "caught"),
    (False, [], [{"query": "id = 5", "only_index": [1994], "only_scan": [5]}], "yes", "caught"),
    (False, [], [], "UnsupportedIndex: not read", "missed"),
    (False, [], [], "yes", "missed"),
])
def test_the_verdict_of_a_cell(tmp_path, monkeypatch, agrees, errors, differ, decoded, verdict):
    monkeypatch.setattr(index_census, "_validate", lambda table: errors)
    monkeypatch.setattr(index_census, "_decode_and_answer", lambda case: (decoded, differ))
    cell = index_census.judge_case(_case(tmp_path, agrees=agrees))
    assert cell.verdict == verdict
    assert cell.ok == (verdict in ("agree", "caught"))
    assert cell.failed == (verdict in ("false error", "missed"))


@pytest.mark.parametrize("flagged,verdict", [(True, "caught"), (False, "missed")])
def test_a_table_built_wrong_must_be_flagged_whatever_the_answers(tmp_path, monkeypatch,
                                                                  flagged, verdict):
    """A swapped index whose release still answers these queries right (a zone map of the
    reversed rows) is wrong all the same: flagged it is caught, silent it is missed."""
    monkeypatch.setattr(index_census, "_validate",
                        lambda table: ["INDEX-120: outside its zone"] if flagged else [])
    monkeypatch.setattr(index_census, "_decode_and_answer", lambda case: ("yes", []))
    case = _case(tmp_path, agrees=True)
    case.data["expected"] = "wrong"
    assert index_census.judge_case(case).verdict == verdict


@pytest.mark.parametrize("agrees,errors,verdict", [
    (True, ["INDEX-121: BLOOMFILTER index 'id_idx': row 17179869364 (value 2180) is in no "
            "zone"], "known bug"),
    (False, ["INDEX-121: BLOOMFILTER index 'id_idx': row 17179869364 is in no zone"],
     "known bug"),
    (True, ["INDEX-121: in no zone", "INDEX-101: row missing"], "false error"),
    (False, ["INDEX-121: in no zone", "INDEX-101: row missing"], "caught"),
])
def test_a_known_bug_of_the_release_is_caught_not_a_false_error(tmp_path, monkeypatch, agrees,
                                                                errors, verdict):
    """pylance 0.38.3's BLOOMFILTER after optimize_indices leaves rows of the appended
    fragment in no zone (EXPECTED_FINDINGS): flagged with that rule it is a known bug, whether
    or not the census's queries hit those rows; another rule beside it is judged as ever."""
    monkeypatch.setattr(index_census, "_validate", lambda table: errors)
    monkeypatch.setattr(index_census, "_decode_and_answer", lambda case: ("yes", []))
    case = _case(tmp_path, agrees=agrees, kind="BLOOMFILTER")
    case.data.update(release="pylance==0.38.3", scenario="optimize")
    cell = index_census.judge_case(case)
    assert cell.verdict == verdict
    assert cell.ok == (verdict in ("known bug", "caught"))
    if verdict == "known bug":
        assert cell.known == errors[:1] and "known bug of the release" in cell.detail
    # the same finding of a release the catalogue does not name stays a false error
    case.data.update(release="pylance==14.0.2")
    if agrees:
        assert index_census.judge_case(case).verdict == "false error"


def _reread(case: Case, *, right: bool, used_index=True) -> None:
    q = {"query": "id = 5", "kind": "filter", "indexed": {"ids": [5] if right else [1994]},
         "used_index": used_index, "scan": {"ids": [5]}, "data": [5]}
    (case.path / indexes.reread_name(indexes.REREADER)).write_text(
        json.dumps({"release": indexes.REREADER, "queries": [q]}))


@pytest.mark.parametrize("right,used_index,decoded,verdict", [
    (True, True, "yes", "misread"),
    (True, False, "yes", "missed"),   # the newest release answered without the index
    (False, True, "yes", "missed"),   # the newest release answers wrong too
    (True, True, "UnsupportedIndex: not read", "missed"),  # the kit cannot vouch for it
    (None, None, "yes", "missed"),    # nobody re-read it
])
def test_a_release_that_misreads_a_true_index_is_named(tmp_path, monkeypatch, right,
                                                       used_index, decoded, verdict):
    """A release answering wrong through an index the kit decodes and answers right from,
    and that the newest release answers right through, misreads it (pylance 4.0.2's ZONEMAP
    after a deferred-remap compaction): no finding of the table is due, and the cell says
    so; without all three it stays missed."""
    monkeypatch.setattr(index_census, "_validate", lambda table: [])
    monkeypatch.setattr(index_census, "_decode_and_answer", lambda case: (decoded, []))
    case = _case(tmp_path, agrees=False, kind="ZONEMAP")
    case.data.update(release="pylance==4.0.2", scenario="compact-deferred")
    if right is not None:
        _reread(case, right=right, used_index=used_index)
    cell = index_census.judge_case(case)
    assert cell.verdict == verdict
    assert not cell.ok and cell.failed == (verdict == "missed")


@pytest.mark.parametrize("scan_answers,counted", [(True, True), (False, False)])
def test_a_query_the_release_fails_through_its_index_is_a_wrong_answer(tmp_path, monkeypatch,
                                                                       scan_answers, counted):
    """pylance 4.0.2 aborts, and 14.0.2 refuses, a nearest search through an IVF_HNSW index
    under a deferred remap that dropped rows, while their scans answer: such a cell was
    `agree` (the error was skipped); it is a wrong answer, missed unless the kit flags the
    table. A query the release fails with and without its index says nothing of the index."""
    monkeypatch.setattr(index_census, "_validate", lambda table: [])
    monkeypatch.setattr(index_census, "_decode_and_answer", lambda case: ("yes", []))
    case = _case(tmp_path, agrees=True, kind="IVF_HNSW_FLAT")
    q = {"query": "3 nearest to the vector of id 5", "kind": "nearest", "k": 3, "of": 5,
         "indexed": {"error": "ArrowInvalid: HNSW graph has 506 nodes"}, "used_index": True,
         "scan": {"ids": [5, 400, 252]} if scan_answers else {"error": "no"},
         "data": [5, 400, 252]}
    case.data["queries"] = [q]
    assert (case.release_disagreements() == [q]) == counted
    cell = index_census.judge_case(case)
    assert cell.verdict == ("missed" if counted else "agree")
    if counted:
        assert "fails through the index: ArrowInvalid: HNSW graph has 506 nodes" in cell.detail
    monkeypatch.setattr(index_census, "_validate", lambda table: ["INDEX-146: 506 nodes"])
    assert index_census.judge_case(case).verdict == ("caught" if counted else "false error")
    # the newest release answering right through the same files: the release misreads it
    monkeypatch.setattr(index_census, "_validate", lambda table: [])
    (case.path / indexes.reread_name(indexes.REREADER)).write_text(json.dumps(
        {"release": indexes.REREADER, "queries": [dict(q, indexed={"ids": [5, 400, 252]},
                                                        scan={"ids": [5, 400, 252]})]}))
    assert index_census.judge_case(case).verdict == ("misread" if counted else "agree")


def test_a_case_not_built_is_named_not_judged(tmp_path):
    cell = index_census.judge_case(_case(tmp_path, agrees=True, status="skipped"))
    assert cell.verdict == "not built" and not cell.ok and not cell.failed


def test_nearest_truth_of_exact_and_approximate_kinds():
    q = {"of": 5, "present": True}
    assert indexes.nearest_agrees("IVF_FLAT", [5, 400, 252], [5, 252, 400], q)
    assert not indexes.nearest_agrees("IVF_FLAT", [5, 400, 1611], [5, 400, 252], q)
    assert indexes.nearest_agrees("IVF_PQ", [5, 400, 1611], [5, 400, 252], q)
    assert not indexes.nearest_agrees("IVF_PQ", [1994, 1599, 1747], [5, 400, 252], q)


def test_reference_writer_keeps_extra_global_buffers():
    from reference_impl.file.reader import LanceFileReader
    from reference_impl.file.writer import write_lance_file
    from reference_impl.io.memory import MemoryStore

    store = MemoryStore()
    t = pa.table({"a": pa.array([1, 2, 3], pa.uint64())})
    t = t.replace_schema_metadata({"lance:ivf": "1"})
    w = write_lance_file(store, "f.lance", t, version="2.2",
                         global_buffers=[b"first", b"\x00" * 100])
    r = LanceFileReader(store, "f.lance", size=w.size)
    assert r.read_all().column("a").to_pylist() == [1, 2, 3]
    assert len(r.container.global_buffers) == 3
    assert r.container.read_global_buffer(1) == b"first"
    assert r.container.read_global_buffer(2) == b"\x00" * 100
    assert all(pos % 64 == 0 for pos, _n in r.container.global_buffers)
    assert dict(r.schema.metadata)[b"lance:ivf"] == b"1"


# -- with pylance 14.0.2 ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny_corpus(tmp_path_factory, pylance):
    out = tmp_path_factory.mktemp("index-corpus") / "pylance-14.0.2"
    indexes.build("pylance==14.0.2", out, kinds=["BTREE"], scenarios=["plain", "update", "swap"],
                  python=sys.executable)
    indexes.build("pylance==14.0.2", out, kinds=["BITMAP"], scenarios=["plain", "swap"],
                  python=sys.executable)
    return out


def _recorded_sizes_true(table: Path) -> None:
    from conformance.census.index_files import indexes as listed

    for e in listed(table):
        for name, size in e.files.items():
            assert (e.directory / name).stat().st_size == size, (e.name, name)


@pytest.mark.interop
def test_tiny_corpus_swap_answers_wrong_with_true_sizes(tiny_corpus, pylance):
    cases = {(c.kind, c.scenario): c for c in indexes.load(tiny_corpus)}
    assert set(cases) == {("BTREE", "plain"), ("BTREE", "update"), ("BTREE", "swap"),
                          ("BITMAP", "plain"), ("BITMAP", "swap")}
    for c in cases.values():
        assert c.status == "built", c.data.get("why")
        _recorded_sizes_true(c.table)
        assert c.release_agrees == (c.scenario != "swap"), c.scenario
    q = {q["query"]: q for q in cases[("BTREE", "swap")].queries}["id = 5"]
    assert q["indexed"]["ids"] == [1994] and q["scan"]["ids"] == [5] and q["used_index"]
    assert cases[("BTREE", "swap")].data["swapped"]  # the files were copied
    # pylance reads the swapped table (its sizes are true) and its scan is untouched
    ds = pylance.dataset(str(cases[("BTREE", "swap")].table))
    assert ds.to_table(filter="id = 5", use_scalar_index=False).num_rows == 1


@pytest.mark.interop
def test_tiny_census_judges_every_cell(tiny_corpus, tmp_path, capsys):
    from conformance.cli import main

    cells = index_census.judge([tiny_corpus])
    assert len(cells) == 5
    # the judge in two processes gives the same cells in the same order
    assert index_census.as_json(index_census.judge([tiny_corpus], jobs=2)) == \
        index_census.as_json(cells)
    for c in cells:
        assert c.verdict != "false error", c.detail
        if c.scenario == "swap":
            assert c.release_agrees is False
            assert c.verdict in ("caught", "missed")
        else:
            assert c.verdict in ("agree", "not decoded")
            assert c.decoded == "yes" or c.verdict == "not decoded"
    md = tmp_path / "census.md"
    code = main(["census", "indexes", "--out", str(tiny_corpus.parent), "--no-build",
               "--kinds", "BTREE,BITMAP", "--md", str(md), "--json", str(tmp_path / "c.json")])
    out = capsys.readouterr().out
    assert "census indexes: 5 cells" in out
    assert code == (1 if any(c.failed for c in cells) else 0)
    assert "| BTREE |" in md.read_text()
    assert len(json.loads((tmp_path / "c.json").read_text())) == 5


@pytest.mark.interop
def test_census_indexes_exit_2_when_nothing_was_judged(tmp_path, capsys):
    from conformance.cli import main

    code = main(["census", "indexes", "--out", str(tmp_path), "--no-build"])
    assert code == 2
    # a kind pylance does not build (FM: lancedb only)
    code = main(["census", "indexes", "--releases", "pylance==14.0.2", "--kinds", "FM",
                 "--out", str(tmp_path / "fm"), "--no-build"])
    assert code == 2


@pytest.mark.interop
@pytest.mark.parametrize("edit,kind", [("btree-key", "BTREE"), ("stale-coverage", "BTREE")])
def test_index_content_edit_makes_pylance_answer_wrong(tiny_corpus, tmp_path, edit, kind):
    """A semantic edit keeps every file readable (pylance opens the copy, the manifest's sizes
    are true) and makes pylance answer wrong through the index; the campaign's verdict is
    ``caught`` exactly when the kit flags it, ``problem`` otherwise."""
    from conformance.releases import index_mutations as im

    source = tiny_corpus / kind / im.EDITS[edit][2]
    j = im.judge_one(edit, kind, source, tmp_path, sys.executable)
    assert j.verdict in ("caught", "problem"), (j.verdict, j.detail, j.release, j.kit)
    assert j.release.startswith("pylance answers wrong"), j.release
    assert (j.verdict == "caught") == j.kit.startswith("flags it")
    _recorded_sizes_true(Path(j.copy) / "table")


@pytest.mark.interop
def test_mutate_index_content_cli(tiny_corpus, tmp_path, capsys):
    from conformance.cli import main
    from conformance.releases import index_mutations as im

    code = main(["fixtures", "mutate", "--targets", "index-content", "--corpus", str(tiny_corpus),
               "--edits", "postings-swap", "--count", "5", "--work", str(tmp_path / "w"),
               "--reader-python", sys.executable, "--json", str(tmp_path / "m.jsonl")])
    out = capsys.readouterr().out
    rows = [json.loads(x) for x in (tmp_path / "m.jsonl").read_text().splitlines()]
    assert [(r["edit"], r["kind"]) for r in rows] == [("postings-swap", "BITMAP")]
    assert rows[0]["release"].startswith("pylance answers wrong")
    assert code == (1 if any(r["verdict"] in im.FAILING for r in rows) else 0)
    assert "index-content mutations" in out
    code = main(["fixtures", "mutate", "--targets", "index-content,data"])
    assert code == 2


# -- the whole census --------------------------------------------------------------------------------


#: False errors of the kit known when this test was written, each named with its reason (the
#: test tolerates them and no other; remove an entry once its cause is fixed). (kind prefix,
#: scenario, rule):
KNOWN_FALSE_ERRORS: set[tuple[str, str, str]] = set()


def _known(cell) -> bool:
    rules = {e.split(":", 1)[0] for e in cell.errors}
    return not cell.differing and bool(rules) and all(
        any(cell.kind.startswith(k) and cell.scenario == s and r == rule
            for k, s, rule in KNOWN_FALSE_ERRORS) for r in rules)


@pytest.mark.compat
@pytest.mark.slow
def test_census_of_pylance_14_has_no_false_error(tmp_path):
    from conformance.releases.venvs import Release, ReleaseUnavailable, ensure_venv
    from conformance.suite.parts import unavailable

    try:
        ensure_venv(Release.parse("pylance==14.0.2"))
    except ReleaseUnavailable as e:
        unavailable("pylance 14.0.2 venv", str(e))
    out = indexes.build("pylance==14.0.2")
    cells = index_census.judge([out])
    false = [c for c in cells if c.verdict == "false error" and not _known(c)]
    assert not false, [f"{c.kind}/{c.scenario}: {c.detail}" for c in false]
    swaps = [c for c in cells if c.scenario == "swap" and c.verdict != "not built"]
    assert len(swaps) >= 10 and all(c.release_agrees is False for c in swaps)


@pytest.fixture(scope="module")
def rq_corpus(tmp_path_factory, pylance):
    out = tmp_path_factory.mktemp("index-corpus-rq") / "pylance-14.0.2"
    indexes.build("pylance==14.0.2", out, kinds=["IVF_RQ"], scenarios=["plain", "swap"],
                  python=sys.executable)
    return out


@pytest.mark.interop
def test_ivf_rq_cells_and_a_replaced_code(rq_corpus, tmp_path):
    """The census judges IVF_RQ (the kit answers k-nearest queries by the factors' distance
    estimates): its own index agrees, the swap is caught; a RaBitQ sign code replaced by
    another row's makes pylance miss the row for its own vector, and the kit names it
    (INDEX-148)."""
    from conformance.releases import index_mutations as im

    cells = {c.scenario: c for c in index_census.judge([rq_corpus])}
    assert cells["plain"].verdict == "agree", cells["plain"].detail
    assert cells["swap"].verdict == "caught", cells["swap"].detail
    j = im.judge_one("rq-code-replace", "IVF_RQ", rq_corpus / "IVF_RQ" / "plain", tmp_path,
                     sys.executable)
    assert j.verdict == "caught", (j.verdict, j.detail, j.release, j.kit)
    assert "INDEX-148" in j.kit
    _recorded_sizes_true(Path(j.copy) / "table")
