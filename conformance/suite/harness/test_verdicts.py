"""Verdicts that cannot pass by accident, and reads judged on their own.

Programs with one fault each (``conformance/suite/harness/programs/``), driven through
``cmd:`` as any implementation under test is: one that cannot find tables, one that aborts
itself (SIGABRT) on a chosen case, one that hangs or breaks the protocol there, one that
panics where it should refuse (aborting, or surviving the panic), one without time travel
and one that claims time travel but reads the latest version whatever is asked. Each
fault is forced (a marker in the table's path, a refusal of the reference reader), never
timed. Most runs read a few shipped golden cases (a fixtures folder of links), not the
whole suite; the minimal adapter of ``PROTOCOL.md``, taken from the page itself, reads it
all.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import jsonschema
import pyarrow as pa
import pytest

from conformance import kit
from conformance.cli import main
from conformance.fixtures import golden
from conformance.harness import runner
from conformance.harness import scenarios as sc
from conformance.harness.adapter import (
    Capabilities,
    ImplementationError,
    Unsupported,
    error_class,
    failure_kind,
    load_adapter,
)
from conformance.harness.reference import ReferenceAdapter
from conformance.harness.subprocess_adapter import AdapterPanic, ProgramDied, ProtocolError

REPO = Path(__file__).resolve().parents[3]
GOLDEN = REPO / "fixtures" / "golden"
PROGRAMS = Path(__file__).resolve().parent / "programs"
PROTOCOL = REPO / "conformance" / "harness" / "PROTOCOL.md"
READ_REJECTS = ("reject-datafile-version", "reject-unknown-encoding", "reject-unknown-reader-flag")
COMMIT_REJECTS = ("reject-unknown-txn-operation", "reject-unknown-writer-flag")
#: shipped cases of one and of several versions, the must-reject reads among them
SOME = ("append-fragments", "deletion-arrow", "restore", "tags", "types-2.1", *READ_REJECTS)


def _cmd(program: str, *args: str) -> str:
    return f'cmd:"{sys.executable} {PROGRAMS / program} {" ".join(args)}"'


def _folder(tmp_path: Path, cases) -> Path:
    """A fixtures folder holding ``cases`` (links to the kit's own)."""
    folder = tmp_path / "golden"
    folder.mkdir()
    for cid in cases:
        (folder / cid).symlink_to(GOLDEN / cid, target_is_directory=True)
    return folder


@pytest.fixture
def some_cases(tmp_path) -> Path:
    """A fixtures folder holding :data:`SOME`."""
    return _folder(tmp_path, SOME)


def _outcomes(result: runner.RunResult) -> dict[str, str]:
    return {r.id: r.outcome for r in result.results}


def _commit_rejects(adapter, work: Path) -> dict[str, runner.CaseResult]:
    return {cid: runner.run_commit_reject_case(adapter, GOLDEN / cid, work) for cid in COMMIT_REJECTS}


# -- the verdict on a refusal ------------------------------------------------------------

def test_a_refusal_passes_only_with_the_class_the_case_names():
    flag = golden.load_case(GOLDEN / "reject-unknown-reader-flag")["expected"]
    version = golden.load_case(GOLDEN / "reject-datafile-version")["expected"]
    assert version["equivalents"] == ["InvalidInput"] and flag["equivalents"] == []
    judge = runner.judge_refusal
    assert judge(ImplementationError("UnsupportedFeature", "flag 1048576"), flag)[0] == runner.PASS
    assert judge(ImplementationError("InvalidInput", "data file 2.0"), version)[0] == runner.PASS
    for exc, check in [(ImplementationError("NotFound", "no table"), "HARNESS-007"),
                       (ImplementationError("InvalidInput", "bad uri"), "HARNESS-007"),
                       (ValueError("anything"), "HARNESS-007"),
                       (None, "HARNESS-006"),
                       (AdapterPanic("Panic", "panicked at x.rs"), "HARNESS-008"),
                       (ProgramDied("the program died", -6, ["abort"]), "HARNESS-008"),
                       (ProtocolError("not a JSON line"), "HARNESS-009")]:
        outcome, message, rules = judge(exc, flag)
        assert (outcome, rules) == (runner.FAIL, [check]), (exc, message)
    died = judge(ProgramDied("the program died", -6, ["assertion failed"]), flag)[1]
    assert "refused by crashing" in died and "signal 6 (SIGABRT)" in died and "assertion failed" in died


def test_a_python_panic_is_a_crash_not_a_refusal(tmp_path):
    class PanicException(BaseException):  # pyo3's panic: not an Exception
        pass

    exc = PanicException("called `Option::unwrap()` on a `None` value")
    assert error_class(exc) == "Panic" and failure_kind(exc) == "crash"
    assert runner.judge_refusal(exc, {"error": "FormatError"})[2] == ["HARNESS-008"]

    class PanickingReader(ReferenceAdapter):
        name = "panicking-reader"

        def read(self, uri, version=None, *, with_row_id=False):
            if "reject-" in str(uri):
                raise PanicException("index out of bounds")
            return super().read(uri, version, with_row_id=with_row_id)

    r = runner.run_job("read.reject-unknown-encoding", "read", lambda: runner.run_read_case(
        PanickingReader(), GOLDEN / "reject-unknown-encoding", tmp_path))
    assert r.outcome == runner.FAIL and r.rules == ["HARNESS-008"], r.message


def test_a_writer_that_dies_on_an_operation_fails_its_scenario_by_crashing(tmp_path):
    class DiesOnDelete(ReferenceAdapter):
        name = "dies-on-delete"

        def apply(self, uri, op, data=None):
            if op["op"] == "delete":
                raise ProgramDied("the program died before it answered (killed by signal 11)", -11,
                                  ["Segmentation fault in delete_rows"])
            return super().apply(uri, op, data)

    r = runner.run_write_scenario(DiesOnDelete(), "write.delete", sc.WRITER_SCENARIOS["write.delete"],
                                  tmp_path, pylance=False)
    assert (r.outcome, r.rules) == (runner.FAIL, ["HARNESS-008"]), r.message
    assert r.message.startswith("operation 1 (delete): refused by crashing: the process was killed "
                                "by signal 11 (SIGSEGV)")
    assert "Segmentation fault in delete_rows" in r.message


# -- forced faults through cmd: ----------------------------------------------------------

def test_a_reader_that_cannot_find_tables_passes_nothing(some_cases, tmp_path):
    with load_adapter(_cmd("lost_tables.py")) as a:
        result = runner.run(a, suite="read", fixtures=some_cases)
        commits = _commit_rejects(a, tmp_path / "commit")
    assert set(_outcomes(result).values()) == {runner.FAIL}, _outcomes(result)
    for cid in READ_REJECTS:
        r = result.by_id()[f"read.{cid}"]
        assert r.rules == ["HARNESS-007"] and "refused with NotFound" in r.message, r.message
    for cid, r in commits.items():
        assert (r.outcome, r.rules) == (runner.FAIL, ["HARNESS-007"]), (cid, r.message)
        assert "NotFound" in r.message
    assert result.read_counts()[runner.PASS] == 0


@pytest.mark.parametrize("how", ["abort", pytest.param("hang", marks=pytest.mark.slow),
                                 pytest.param("garbage", marks=pytest.mark.slow)])
def test_a_program_that_dies_on_one_case_fails_that_case_only(tmp_path, how):
    # deletion-arrow (three versions), then a must-reject case and two more read cases
    folder = _folder(tmp_path, ("append-fragments", "deletion-arrow", "reject-unknown-reader-flag",
                                "tags"))
    with load_adapter(_cmd("aborts_on_case.py", "--on", "deletion-arrow", "--how", how)) as a:
        if how == "hang":  # it never answers: the limit always passes. The program imported
            a.timeout = 10.0  # its reader before hello: a small table's read takes < 0.1 s
        result = runner.run(a, suite="read", fixtures=folder)
        restarts = a.restarts
    died = result.by_id()["read.deletion-arrow"]
    assert died.outcome == runner.FAIL
    others = {k: v for k, v in _outcomes(result).items() if k != "read.deletion-arrow"}
    assert set(others.values()) == {runner.PASS}, [r.message for r in result.results]
    assert restarts == 1
    if how == "abort":
        assert died.rules == ["HARNESS-008"]
        assert died.message.startswith("v1: refused by crashing: the process was killed by signal 6 "
                                       "(SIGABRT)")
        assert "assertion failed reading deletion-arrow" in died.message  # the stderr tail
    else:
        assert died.rules == ["HARNESS-009"]
        assert ("no response within 10.0 s" if how == "hang" else "not a JSON line") in died.message
    # the case stopped at the read that crashed
    assert [(v.id, v.outcome) for v in died.reads] == [("v1", runner.FAIL), ("v2", runner.UNSUPPORTED),
                                                       ("v3", runner.UNSUPPORTED)]
    assert "the program died or was stopped on v1" in died.reads[1].message


@pytest.mark.parametrize("survive", [False, True])
def test_a_program_that_panics_on_reject_cases_never_passes_them(tmp_path, survive):
    args = ("--survive",) if survive else ()
    with load_adapter(_cmd("panics_on_reject.py", *args)) as a:
        result = runner.run(a, suite="read", fixtures=_folder(tmp_path, (*READ_REJECTS, "tags")))
        commits = _commit_rejects(a, tmp_path / "commit")
        alive = a.read(str(GOLDEN / "types-2.1" / "table"), 1)  # started again after the last crash
        restarts = a.restarts
    assert alive.num_rows
    by_id = result.by_id()
    rejects = [by_id[f"read.{c}"] for c in READ_REJECTS] + list(commits.values())
    for r in rejects:
        assert (r.outcome, r.rules) == (runner.FAIL, ["HARNESS-008"]), (r.id, r.message)
        assert "refused by crashing" in r.message
        if survive:
            assert "a panic (Panic: panicked at src/read.rs" in r.message
        else:
            assert "signal 6 (SIGABRT)" in r.message and "panicked at src/read.rs:7:9" in r.message
    assert restarts == (0 if survive else len(rejects))
    rest = [r for r in result.results if r not in rejects]
    assert rest and all(r.outcome == runner.PASS for r in rest), [(r.id, r.message) for r in rest]


def test_a_reader_without_time_travel_is_judged_on_its_latest_reads(some_cases, tmp_path, capsys):
    skip = tmp_path / "skip.txt"  # the cases of the kit this folder does not hold
    skip.write_text("".join(f"{cid}  # not in this folder\n" for cid in runner.suite_case_ids("read")
                            if cid.removeprefix("read.") not in SOME))
    code = main(["run", "--impl", _cmd("no_time_travel.py"), "--suite", "read",
                 "--fixtures", str(some_cases), "--skip-file", str(skip), "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0
    jsonschema.Draft202012Validator(kit.schema("run-report")).validate(doc)
    results = {r["id"]: r for r in doc["results"] if r["outcome"] != "SKIP"}
    assert {r["outcome"] for r in results.values()} == {"PASS"}
    restore = results["read.restore"]  # three versions: the latest read, asked as null, first
    assert [(v["id"], v["version"], v["outcome"]) for v in restore["reads"]] == [
        ("v3", None, "PASS"), ("v1", 1, "UNSUPPORTED"), ("v2", 2, "UNSUPPORTED")]
    assert restore["message"].startswith("1 reads match; v1 not read: this engine reads the latest")
    assert results["read.reject-unknown-reader-flag"]["reads"] == [
        {"id": "refusal", "outcome": "PASS", "version": None,
         "message": "refused with UnsupportedFeature", "rules": []}]
    reads = [v for r in results.values() for v in r["reads"]]
    assert doc["read_counts"] == {"PASS": sum(v["outcome"] == "PASS" for v in reads),
                                  "FAIL": 0, "UNSUPPORTED": sum(v["outcome"] == "UNSUPPORTED" for v in reads)}
    assert doc["read_counts"]["UNSUPPORTED"] >= 4 and doc["read_counts"]["PASS"] == len(SOME)


def test_a_reader_that_ignores_the_version_fails_each_older_read(some_cases):
    with load_adapter(_cmd("no_time_travel.py", "--claims-time-travel")) as a:
        assert a.capabilities.time_travel
        result = runner.run(a, suite="read", fixtures=some_cases)
    by_id = result.by_id()
    appended = by_id["read.append-fragments"]
    assert appended.outcome == runner.FAIL and appended.rules == ["HARNESS-003"]
    assert [(v.id, v.outcome) for v in appended.reads] == [("v1", runner.FAIL), ("v2", runner.PASS)]
    assert appended.message.startswith("v1: ") and "(1 of 2 reads match)" in appended.message
    assert by_id["read.types-2.1"].outcome == runner.PASS  # one version: nothing to tell apart


def test_an_in_process_reader_without_time_travel_passes_listing_the_reads_not_made(tmp_path):
    class LatestOnly(ReferenceAdapter):
        name = "latest-only"
        capabilities = Capabilities(read=True, time_travel=False)

        def read(self, uri, version=None, *, with_row_id=False):
            if version is not None:
                raise Unsupported("no time travel")
            return super().read(uri, None, with_row_id=with_row_id)

    r = runner.run_read_case(LatestOnly(), GOLDEN / "append-fragments", tmp_path)
    assert (r.outcome, r.message) == (runner.PASS, "1 reads match; v1 not read: no time travel")

    class Claims(LatestOnly):  # the same reader, not declaring it: the case is not judged
        capabilities = Capabilities(read=True)

    r = runner.run_read_case(Claims(), GOLDEN / "append-fragments", tmp_path)
    assert r.outcome == runner.UNSUPPORTED and r.message.startswith("v1: no time travel")


def test_reports_count_reads(some_cases, tmp_path):
    import xml.etree.ElementTree as ET

    from conformance.harness import matrix

    result = runner.run(ReferenceAdapter(), suite="read", fixtures=some_cases)
    counts = result.read_counts()
    assert counts == {"PASS": 3 + 2 + 3 + 2 + 1 + 3, "FAIL": 0, "UNSUPPORTED": 0}
    assert "reads: PASS 14, FAIL 0, not made 0" in runner.to_text(result)
    root = ET.fromstring(runner.to_junit(result))
    props = {p.get("name"): p.get("value") for p in root.find("properties").findall("property")}
    assert props["reads.PASS"] == "14" and props["implementation.name"] == "reference"
    case = root.find("testcase[@name='read.restore']")
    assert [p.get("name") for p in case.find("properties")] == ["read.v1", "read.v2", "read.v3"]
    html = matrix.render_html(runs=[result])
    assert "reads: PASS 14, FAIL 0, not made 0" in html and "<th>reads</th>" in html


# -- queries through an index -------------------------------------------------------------

class WrongIndex(ReferenceAdapter):
    """Answers each query through a broken index: the filter's rows less one, the nearest
    search's rows with a vector the table does not hold, far rows, its best half each row
    twice, its rows with ``id`` as int32, or the nearest of every row, its filter ignored."""

    name = "wrong-index"

    def __init__(self, fault: str) -> None:
        self.fault = fault

    def query(self, uri, version, query):
        rows = super().query(uri, version, query)
        if self.fault == "miss":
            return rows.slice(1)
        if query["nearest"] is None:  # the other faults are a vector index's
            return rows
        if self.fault == "twice":
            half = rows.slice(0, (rows.num_rows + 1) // 2)
            return pa.concat_tables([half, half]).slice(0, rows.num_rows)
        if self.fault == "unfiltered":  # the nearest of every row, the filter ignored
            return super().query(uri, version, dict(query, filter=None))
        if self.fault == "int32":
            i = rows.schema.get_field_index("id")
            return rows.set_column(i, pa.field("id", pa.int32()), rows.column(i).cast(pa.int32()))
        if self.fault == "foreign":
            vec = rows["vec"].to_pylist()
            vec[0] = [9.0, 9.0, 9.0, 9.0]
            i = rows.schema.get_field_index("vec")
            return rows.set_column(i, rows.schema.field(i), pa.array(vec, rows.schema.field(i).type))
        table = self.read(uri, version)  # "far": the k rows farthest from q
        near = query["nearest"]
        far = dict(near, q=[-x * 1000 for x in near["q"]])
        from conformance.harness.queries import scan_answer

        return scan_answer(table, dict(query, nearest=far))


@pytest.mark.parametrize("fault, case, query", [("miss", "index-scalar", "query.id-eq"),
                                                 ("miss", "index-types", "query.category-eq"),
                                                 ("foreign", "index-types", "query.vec-nearest"),
                                                 ("far", "index-types", "query.vec-nearest"),
                                                 ("twice", "index-types", "query.vec-nearest"),
                                                 ("int32", "index-types", "query.vec-nearest"),
                                                 ("miss", "index-scalar-kinds", "query.labels-any"),
                                                 ("miss", "index-scalar-kinds", "query.text-contains"),
                                                 ("miss", "index-types", "query.text-match-any"),
                                                 ("far", "index-vector-kinds", "query.rq-nearest"),
                                                 ("far", "index-vector-kinds", "query.flat-filtered"),
                                                 ("twice", "index-vector-kinds", "query.hnsw-nearest"),
                                                 ("unfiltered", "index-vector-kinds",
                                                  "query.flat-filtered")])
def test_an_index_that_answers_other_than_the_scan_fails(tmp_path, fault, case, query):
    r = runner.run_read_case(WrongIndex(fault), GOLDEN / case, tmp_path)
    bad = {v.id: v for v in r.reads if v.outcome == runner.FAIL}
    assert r.outcome == runner.FAIL and r.rules == ["HARNESS-010"], r.message
    assert query in bad, [(v.id, v.message) for v in r.reads]
    expect = {"miss": "not the scan's", "foreign": "rows the table does not hold",
              "far": "recall 0.00 below the 0.", "twice": "rows answered more than once",
              "int32": "column 'id': type int32 != expected int64",
              "unfiltered": "rows the filter does not match"}[fault]
    assert expect in bad[query].message


def test_queries_pass_through_the_reference_and_are_not_made_without_the_feature(tmp_path):
    r = runner.run_read_case(ReferenceAdapter(), GOLDEN / "index-types", tmp_path / "a")
    assert r.outcome == runner.PASS
    assert {v.id: v.outcome for v in r.reads if v.id.startswith("query.")} == {
        "query.category-eq": runner.PASS, "query.vec-nearest": runner.PASS,
        "query.text-match": runner.PASS, "query.text-match-any": runner.PASS,
        "query.text-match-filtered": runner.PASS}

    class NoQuery(ReferenceAdapter):
        capabilities = Capabilities(read=True, row_ids=True)

    class NoFullText(ReferenceAdapter):
        capabilities = Capabilities(read=True, row_ids=True, features=("query",))

    r = runner.run_read_case(NoFullText(), GOLDEN / "index-types", tmp_path / "c")
    assert r.outcome == runner.PASS
    made = {v.id: v.outcome for v in r.reads if v.id.startswith("query.")}
    assert made == {"query.category-eq": runner.PASS, "query.vec-nearest": runner.PASS,
                    "query.text-match": runner.UNSUPPORTED, "query.text-match-any": runner.UNSUPPORTED,
                    "query.text-match-filtered": runner.UNSUPPORTED}
    assert "does not declare the feature 'full-text'" in r.message

    r = runner.run_read_case(NoQuery(), GOLDEN / "index-scalar", tmp_path / "b")
    assert r.outcome == runner.PASS
    assert r.message == ("3 reads match; query.id-eq not read: the adapter does not declare the feature "
                         "'query'; query.id-range not read: the adapter does not declare the feature 'query'")


# -- PROTOCOL.md -------------------------------------------------------------------------

def _minimal_adapter() -> str:
    text = PROTOCOL.read_text()
    section = text.split("## A minimal adapter", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_the_minimal_adapter_of_the_protocol_page_passes_every_read_case(tmp_path, monkeypatch, capsys):
    program = tmp_path / "minimal.py"
    program.write_text(_minimal_adapter())
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    code = main(["run", "--impl", f'cmd:"{sys.executable} {program}"', "--suite", "read", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0, [r for r in doc["results"] if r["outcome"] != "PASS"]
    assert doc["provenance"]["implementation"] == {"name": "minimal-reader", "version": "1"}
    assert doc["counts"]["PASS"] == len(runner.suite_case_ids("read")) == len(doc["results"])
    # every read made but the one through the external manifest store (no request for it)
    # and the 24 queries of the cases with indexes (it does not declare the feature query)
    assert doc["read_counts"]["FAIL"] == 0 and doc["read_counts"]["UNSUPPORTED"] == 1 + 24


def test_the_protocol_page_states_what_a_read_is_compared_on():
    """Each type difference the page says fails a read fails it, each it says does not
    does not (``scenarios.difference``, the comparison every read goes through)."""
    text = " ".join(PROTOCOL.read_text().split())
    for words in ("`list` is not `large_list`", "`string` is not `large_string` nor `string_view`",
                  "`binary` is not `large_binary`", '`"UTC"` is not `"+00:00"`',
                  "the name of the child field of a `list`", "the nullability of a top-level column",
                  "`merge` is one commit", "`version` is an integer, or null for **the latest version**",
                  '`"time_travel": false`', "refused by crashing", "starts the program again"):
        assert words in text, words

    def differs(a: pa.DataType, b: pa.DataType, *, nullable: bool = True) -> bool:
        t = pa.table({"c": pa.array([None], a)})
        u = pa.Table.from_arrays([pa.array([None], b)], schema=pa.schema([pa.field("c", b, nullable)]))
        return sc.difference(t, u) is not None

    i32 = pa.int32()
    fails = [(pa.list_(i32), pa.large_list(i32)), (pa.string(), pa.large_string()),
             (pa.string(), pa.string_view()), (pa.binary(), pa.large_binary()),
             (pa.list_(i32, 2), pa.list_(i32, 3)), (pa.binary(4), pa.binary(5)),
             (pa.timestamp("us", "UTC"), pa.timestamp("us", "+00:00")),
             (pa.timestamp("us"), pa.timestamp("ns")), (pa.time32("s"), pa.time32("ms")),
             (pa.decimal128(10, 2), pa.decimal128(12, 2)),
             (pa.dictionary(pa.int8(), pa.string()), pa.dictionary(pa.int32(), pa.string())),
             (pa.struct([("a", i32)]), pa.struct([("b", i32)])),
             (pa.struct([pa.field("a", i32, False)]), pa.struct([("a", i32)])),
             (pa.list_(pa.field("item", i32, False)), pa.list_(i32)),
             (pa.map_(pa.string(), i32, keys_sorted=True), pa.map_(pa.string(), i32))]
    for a, b in fails:
        assert differs(a, b), (a, b)
    same = [(pa.list_(pa.field("item", i32)), pa.list_(pa.field("element", i32))),
            (pa.large_list(pa.field("element", i32)), pa.large_list(i32)),
            (pa.list_(pa.field("x", i32), 2), pa.list_(i32, 2)),
            (pa.map_(pa.field("k", pa.string(), False), pa.field("v", i32)), pa.map_(pa.string(), i32)),
            (pa.list_(pa.field("item", i32, metadata={"m": "1"})), pa.list_(i32))]
    for a, b in same:
        assert not differs(a, b), (a, b)
    assert not differs(i32, i32, nullable=False)  # a top-level column's nullability
