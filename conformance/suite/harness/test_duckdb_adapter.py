"""DuckDB and its Lance extension (PyPI ``duckdb`` and ``duckdb-extension-lance``, the
``duckdb`` extra) as an implementation under test through ``cmd:``
(``conformance/harness/examples/duckdb/adapter.py``, ``docs/duckdb.md``): its verdicts are
the documented ones, and ``fuzz`` from a fixed seed finds its DELETE data loss and shrinks
it to one delete with a one-line predicate."""

from __future__ import annotations

import json
import re
import shlex
import sys
from pathlib import Path

import pytest

from conformance.cli import main
from conformance.harness import fuzz, runner
from conformance.harness.adapter import load_adapter
from conformance.strategies.scripts import SCRIPT_OPS

from ..parts import unavailable

REPO = Path(__file__).resolve().parents[3]
ADAPTER = REPO / "conformance" / "harness" / "examples" / "duckdb" / "adapter.py"
DOC = REPO / "docs" / "duckdb.md"

# every case not listed passes (docs/duckdb.md says why each of these does not)
NOT_PASSING = {
    "read.blob-v2": "FAIL",
    "read.index-vector-kinds": "FAIL",
    "read.nested-2.1": "FAIL",
    "read.reject-datafile-version": "FAIL",
    "read.reject-unknown-encoding": "FAIL",
    "read.types-2.2": "UNSUPPORTED",
    "read.types-2.3": "UNSUPPORTED",
    "write.create-v1-names": "UNSUPPORTED",
    "write.delete": "FAIL",
    "write.merge": "UNSUPPORTED",
    "write.tag": "UNSUPPORTED",
    "write.restore": "UNSUPPORTED",
    "write.config": "UNSUPPORTED",
    "write.stale-append": "UNSUPPORTED",
    "write.stable-row-ids": "UNSUPPORTED",
    "write.reject-unknown-txn-operation": "UNSUPPORTED",
}
COUNTS = {"PASS": 43, "FAIL": 6, "UNSUPPORTED": 10, "ERROR": 0, "SKIP": 0}
#: reads judged on their own: DuckDB has no time travel (it says so in ``hello``), so the
#: older versions of a case are reads not made, and its latest reads are judged
READ_COUNTS = {"PASS": 58, "FAIL": 5, "UNSUPPORTED": 67}


@pytest.fixture(scope="module")
def duckdb_impl() -> str:
    try:
        import duckdb  # noqa: F401
        import duckdb_extension_lance  # noqa: F401
    except ImportError as exc:
        unavailable("duckdb and its Lance extension", f"{exc!r}: pip install -e '.[duckdb]'")
    return f"cmd:{shlex.quote(sys.executable)} {shlex.quote(str(ADAPTER))}"


@pytest.mark.duckdb
def test_duckdb_verdicts(duckdb_impl, capsys):
    code = main(["run", "--impl", duckdb_impl, "--suite", "all", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 1  # it fails cases: a result, not a failure of the harness
    assert doc["provenance"]["implementation"]["name"] == "duckdb-lance"
    by_id = {r["id"]: r for r in doc["results"]}
    assert sorted(by_id) == sorted(runner.suite_case_ids("all"))  # every case ran
    listed = {k: r["outcome"] for k, r in by_id.items() if r["outcome"] != "PASS"}
    assert listed == NOT_PASSING
    assert doc["counts"] == COUNTS
    assert doc["read_counts"] == READ_COUNTS
    # the data loss: DELETE ... WHERE id % 7 = 0 leaves no row of 20
    assert "reference v2: 0 rows != expected 17" in by_id["write.delete"]["message"]
    assert by_id["read.reject-datafile-version"]["rules"] == ["HARNESS-006"]
    assert "large_list" in by_id["read.nested-2.1"]["message"]
    # queries through indexes (issue 35 item 6): every scalar kind answers as the scan; Lance
    # 6.0.0 reads pylance 14.0.2's IVF_RQ (the same index_version, 2, as its own) and answers
    # other rows (docs/duckdb.md, finding 9)
    queries = [(r["id"], v) for r in doc["results"] for v in r["reads"] if v["id"].startswith("query.")]
    assert len(queries) == 24
    wrong = [(case, v["id"], v["message"]) for case, v in queries if v["outcome"] != "PASS"]
    assert [w[:2] for w in wrong] == [("read.index-vector-kinds", "query.rq-nearest")]
    assert "IVF_RQ on vec_rq: recall 0.00" in wrong[0][2]
    # a refusal by crashing is never a PASS (issue 36 item 2)
    crash = by_id["read.reject-unknown-encoding"]
    assert crash["rules"] == ["HARNESS-008"] and "SIGABRT" in crash["message"]


def test_the_docs_state_the_verdicts():
    text = DOC.read_text()
    for cid, outcome in NOT_PASSING.items():
        assert re.search(rf"`{re.escape(cid)}` \| {outcome} \|", text), cid
    c = COUNTS
    assert (f"PASS {c['PASS']}, FAIL {c['FAIL']}, UNSUPPORTED {c['UNSUPPORTED']}, "
            f"ERROR {c['ERROR']}") in text


@pytest.mark.duckdb
@pytest.mark.fuzz
def test_fuzz_finds_the_delete_data_loss(duckdb_impl, tmp_path):
    """A delete-only search from seed 2 (HARNESS-002 known: a DELETE that matches no row
    commits no version) finds rows deleted that the filter does not match, shrunk to a
    create and one delete whose predicate is a single test."""
    only_deletes = tuple(op for op in SCRIPT_OPS if op != "delete")
    with load_adapter(duckdb_impl) as adapter:
        result = fuzz.fuzz(adapter, role="writer", examples=40, seed=2, skip_ops=only_deletes,
                           max_ops=1, known_rules=("HARNESS-002",), shrink_budget=None,
                           impl="duckdb")
    assert not result.ok, result.summary()
    assert result.finding.rules == ["HARNESS-003"], result.summary()
    assert [op["op"] for op in result.script] == ["create", "delete"], result.summary()
    where = result.script[1]["where"]
    assert re.fullmatch(r"[^()]*(\([^()]*\))?[^()]*", where) and not re.search(
        r"\b(AND|OR|NOT)\b", where), where
    assert re.search(r"0 rows != expected [1-9]", result.finding.messages[0]), result.summary()
    saved = json.loads(fuzz.save_case(result, tmp_path).read_text())
    assert saved["script"][1]["where"] == where


def test_predicates_with_braces_reach_duckdb_as_written(tmp_path):
    """The adapter names the table by the first ``{t}`` of a statement and leaves the rest as
    it is: a predicate holding a brace (a string literal, say) is sent unchanged (with
    ``str.format`` it broke the statement, or named the table inside the literal)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("duckdb_adapter_under_test", ADAPTER)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    sent = []

    class _Recorder(mod.Engine):
        def __init__(self):  # no DuckDB: the statement is recorded, not run
            pass

        def attach(self, uri):
            return "ns0"

        def detach(self, alias):
            pass

        def sql(self, statement):
            sent.append(statement)
            return type("R", (), {"fetchall": lambda self: []})()

    where = "s = '{t}' OR s LIKE '%}%'"
    _Recorder().on_table(str(tmp_path), "DELETE FROM {t} WHERE " + where)
    assert sent == ["DELETE FROM ns0.main.t WHERE " + where]
    merge = mod.merge_statement({"on": "id", "when_matched_update_all": {"condition":
                                 "target.s <> '{x}'"}, "when_not_matched_insert_all": True})
    assert "AND (target.s <> '{x}')" in merge and merge.startswith("MERGE INTO {t} AS target")
