"""An implementation in another language: the LanceDB Node SDK (npm ``@lancedb/lancedb`` 0.31.0,
which embeds Lance 8.0) driven through ``cmd:`` and ``PROTOCOL.md`` only, by the JavaScript
program ``conformance/harness/examples/lancedb_node/adapter.mjs``.

Its modules are installed ahead of time (``python -m conformance.servers install-node-adapter``,
as ``.ci/run`` does): the tests use no network. Without node or the installation they are
``unavailable`` (a skip locally, a failure under CI). The verdicts asserted here are the ones
``docs/lancedb-node.md`` states.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from conformance.cli import main
from conformance.harness import runner
from conformance.suite.parts import unavailable

REPO = Path(__file__).resolve().parents[3]
DOC = REPO / "docs" / "lancedb-node.md"

#: every case of the suite that does not PASS, with its outcome (docs/lancedb-node.md)
NOT_PASSING = {
    "read.blob-v2": "UNSUPPORTED",                # no blob API in the SDK
    "read.nested-2.1": "UNSUPPORTED",             # apache-arrow 18 has no LargeList
    "read.reject-datafile-version": "FAIL",       # Lance 8.0 reads it by the footers
    "read.reject-unknown-encoding": "FAIL",       # refused by a panic: a crash, no refusal
    "read.types-2.3": "FAIL",                     # Lance 8.0 panics on 14.0's 2.3 pages
    "write.merge": "UNSUPPORTED",                 # mergeInsert is an upsert, not a merge
    "write.config": "UNSUPPORTED",                # no update_config
    "write.stale-append": "UNSUPPORTED",          # no commit at an older read version
    "write.reject-unknown-txn-operation": "UNSUPPORTED",  # the same: it cannot try the commit
}


@pytest.fixture(scope="module")
def node_impl() -> str:
    from conformance.servers.node_adapter import find_node_adapter, node_adapter_command

    found = find_node_adapter()
    if found is None:
        unavailable("the LanceDB Node adapter", "node or its npm modules are missing: run "
                    "python -m conformance.servers install-node-adapter")
    return node_adapter_command(found)


def _golden_files() -> list[Path]:
    return sorted(p.relative_to(REPO) for p in (REPO / "fixtures" / "golden").rglob("*"))


def test_the_node_sdk_reads_and_writes_through_cmd(node_impl, capsys):
    before = _golden_files()
    code = main(["run", "--impl", node_impl, "--suite", "all", "--json"])
    doc = json.loads(capsys.readouterr().out)
    # LanceDB's connection adds a __manifest table to a directory namespace it opens (spec
    # 002: the manifest is on by default): the harness hands it copies, the kit's stay as is
    assert _golden_files() == before
    assert code == 1  # it fails cases: a result, not a failure of the harness
    assert doc["provenance"]["implementation"] == {"name": "@lancedb/lancedb", "version": "0.31.0"}
    outcomes = {r["id"]: r["outcome"] for r in doc["results"]}
    assert sorted(outcomes) == sorted(runner.suite_case_ids("all"))  # every case ran
    assert {k: v for k, v in outcomes.items() if v != "PASS"} == NOT_PASSING
    assert doc["counts"] == {"PASS": 50, "FAIL": 3, "UNSUPPORTED": 6, "ERROR": 0, "SKIP": 0}
    assert doc["read_counts"] == {"PASS": 120, "FAIL": 5, "UNSUPPORTED": 5}
    queries = [v for r in doc["results"] for v in r["reads"] if v["id"].startswith("query.")]
    # through its indexes: every scalar kind, full-text matches, and pylance 14.0.2's IVF_RQ
    # too (Lance 8.0)
    assert len(queries) == 24 and {v["outcome"] for v in queries} == {"PASS"}
    by_id = {r["id"]: r for r in doc["results"]}
    assert "LargeList" in by_id["read.nested-2.1"]["message"]
    assert "Panic" in by_id["read.types-2.3"]["message"]
    assert [v["outcome"] for v in by_id["read.types-2.3"]["reads"]] == ["FAIL"] * 3
    assert by_id["read.types-2.3"]["rules"] == ["HARNESS-008"]
    assert by_id["read.reject-datafile-version"]["rules"] == ["HARNESS-006"]
    encoding = by_id["read.reject-unknown-encoding"]
    assert encoding["rules"] == ["HARNESS-008"] and "refused by crashing" in encoding["message"]
    assert by_id["read.reject-unknown-reader-flag"]["message"] == "refused with UnsupportedFeature"
    assert by_id["write.reject-unknown-writer-flag"]["message"] == "refused with UnsupportedFeature"


def test_the_docs_state_the_verdicts():
    text = DOC.read_text()
    for cid, outcome in NOT_PASSING.items():
        assert re.search(rf"`{re.escape(cid)}` \| {outcome} \|", text), cid
    assert "PASS 50, FAIL 3, UNSUPPORTED 6, ERROR 0" in text
    assert "reads: PASS 120, FAIL 5, not made 5" in " ".join(text.split())


@pytest.mark.compat
def test_the_node_sdk_is_a_column_of_the_matrix(node_impl, tmp_path, capsys):
    spec = f"lancedb-node={node_impl}"
    out = tmp_path / "m.json"
    assert main(["compat", "--writers", f"reference,pylance==14.0.2,{spec}", "--readers",
                 f"reference,pylance==14.0.2,{spec}", "--scenarios",
                 "create,delete,tag,storage-2.3,merge", "--json", str(out), "--no-progress"]) == 0
    m = json.loads(out.read_text())
    cells = {(c["writer"], c["reader"], c["scenario"]): c for c in m["cells"]}
    assert m["participants"]["lancedb-node"]["version"] == "0.31.0"
    for w in ("reference", "pylance==14.0.2", "lancedb-node"):
        for s in ("create", "delete", "tag"):
            assert cells[(w, "lancedb-node", s)]["outcome"] == "identical", (w, s)
            assert cells[("lancedb-node", w, s)]["outcome"] == "identical", (w, s)
    # Lance 8.0 panics on the 2.3 pages of 14.0.2; 14.0.2 refuses 8.0's unstable 2.3
    assert cells[("pylance==14.0.2", "lancedb-node", "storage-2.3")]["outcome"] == "crash"
    refused = cells[("lancedb-node", "pylance==14.0.2", "storage-2.3")]
    assert refused["outcome"] == "refused" and "lance 8.0" in refused["cause_text"]
    assert cells[("lancedb-node", "reference", "merge")]["outcome"] == "not-written"
