"""``merge_insert`` with conditions and filtered reads (``PROTOCOL.md``): the model's meaning
of each clause (three-valued logic, null keys), the reference and pylance adapters agreeing
with the model on the writer scenarios and on generated scripts, an adapter that declares
neither being judged UNSUPPORTED (never PASS), and two wrong adapters (one that drops the
merge condition, one that answers a filtered read with every row) found by ``fuzz`` and
shrunk to one step with a one-test predicate."""

from __future__ import annotations

import dataclasses
import re

import pyarrow as pa
import pytest

from conformance.harness import fuzz, runner
from conformance.harness import scenarios as sc
from conformance.harness.adapter import Capabilities, Unsupported
from conformance.harness.known_bad import MergeConditionIgnoredWriter, UnfilteredReadAdapter
from conformance.harness.reference import ReferenceAdapter
from conformance.strategies.scripts import SCRIPT_OPS
from reference_impl import merge_insert as mi
from reference_impl.errors import InvalidInput

NEW = ("write.merge-insert", "write.filtered-read")
ONLY = {  # searches of one kind of step: each example is a create and at most one of them
    "merge_insert": tuple(op for op in SCRIPT_OPS if op != "merge_insert"),
    "read": tuple(op for op in SCRIPT_OPS if op != "read"),
}
LEAF = re.compile(r"[^()]+")  # one test: no NOT/AND/OR around it


def _pylance():
    pytest.importorskip("lance")
    from conformance.harness.pylance_adapter import PylanceAdapter

    return PylanceAdapter()


# -- the model -------------------------------------------------------------------------------

TARGET = pa.table({"id": pa.array([1, 2, 3, 4, None], pa.int64()),
                   "x": pa.array([10, None, 30, 40, 50], pa.int32())})
SOURCE = pa.table({"id": pa.array([1, 2, 3, 9, None], pa.int64()),
                   "x": pa.array([5, 20, None, 90, 0], pa.int32())})


def test_matched_condition_is_true_only_where_it_is_true():
    # id 1: 10 < 5 false; id 2: null < 20 null (no update); id 3: 30 < null null
    p = mi.plan(TARGET, SOURCE, "id", update=True, condition="target.x < source.x")
    assert p.updated == []
    p = mi.plan(TARGET, SOURCE, "id", update=True,
                condition="target.x IS NULL OR source.x IS NULL OR target.x > source.x")
    assert p.updated == [(0, 0), (1, 1), (2, 2)]
    assert mi.plan(TARGET, SOURCE, ["id"], update=True).updated == [(0, 0), (1, 1), (2, 2)]


def test_null_keys_match_nothing_and_clauses_are_independent():
    p = mi.plan(TARGET, SOURCE, "id", insert=True, delete_by_source=True)
    assert p.inserted == [3, 4]   # id 9 and the null key
    assert p.deleted == [3, 4]    # id 4 and the null key: no source row matches them
    assert p.updated == []        # matched rows stay without the update clause
    p = mi.plan(TARGET, SOURCE, "id", delete_by_source=True, where="x > 45")
    assert p.deleted == [4]
    after = mi.apply_plan(TARGET, SOURCE, mi.plan(TARGET, SOURCE, "id", update=True, insert=True))
    assert sorted(after.column("x").to_pylist(), key=str) == sorted(
        [5, 20, None, 40, 50, 90, 0], key=str)


def test_an_ambiguous_source_is_refused():
    twice = pa.table({"id": pa.array([1, 1], pa.int64()), "x": pa.array([1, 2], pa.int32())})
    with pytest.raises(InvalidInput, match="ambiguous"):
        mi.plan(TARGET, twice, "id", update=True)


def test_model_reads_and_merges_commit_as_documented():
    script = sc.WRITER_SCENARIOS["write.merge-insert"]["script"]
    model = sc.run_model(script)
    assert sorted(model.versions) == [1, 2, 3]
    v2 = model.rows(2).to_pydict()
    rows = dict(zip(v2["id"], v2["category"], strict=True))
    assert rows[16] == "c6" and rows[17] == "u1" and rows[18] == "u2" and rows[15] is None
    assert 3 not in rows and 4 in rows and 24 in rows  # deleted by source; inserted
    reads = sc.run_model(sc.WRITER_SCENARIOS["write.filtered-read"]["script"])
    assert sorted(reads.versions) == [1, 2] and [v for v, _ in reads.reads] == [1, 2]
    answer = reads.read_answer(reads.reads[1][1], 2)
    assert answer.column_names == ["category", "id"]
    assert sorted(answer.column("id").to_pylist()) == [8, 9, 10, 11, 12]


# -- the reference and pylance adapters ------------------------------------------------------

@pytest.mark.parametrize("sid", NEW)
def test_reference_and_pylance_pass_the_new_scenarios(sid, tmp_path):
    for adapter in (ReferenceAdapter(), _pylance()):
        r = runner.run_write_scenario(adapter, sid, sc.WRITER_SCENARIOS[sid], tmp_path / adapter.name)
        assert r.outcome == runner.PASS, (adapter.name, r.message)


@pytest.mark.fuzz
@pytest.mark.parametrize("kind", sorted(ONLY))
@pytest.mark.parametrize("role", ["writer", "reader"])
def test_reference_and_pylance_agree_with_the_model_on_generated_steps(kind, role):
    for adapter in (ReferenceAdapter(), _pylance()):
        result = fuzz.fuzz(adapter, role=role, examples=15, seed=3, skip_ops=ONLY[kind], max_ops=2)
        assert result.ok, result.summary()
        assert result.examples == 15 and not result.unsupported


# -- declared or not: UNSUPPORTED, never PASS ------------------------------------------------

class _Undeclared(ReferenceAdapter):
    """Writes like the reference but declares neither merge_insert nor filtered reads."""

    name = "undeclared"
    capabilities = Capabilities(read=True, write=True, ops=tuple(
        o for o in ReferenceAdapter.capabilities.ops if o != "merge_insert"))


class _RefusesPerRequest(ReferenceAdapter):
    """Declares both, then answers each ``unsupported``."""

    name = "refuses"

    def apply(self, uri, op, data=None):
        if op["op"] == "merge_insert":
            raise Unsupported("no merge_insert here")
        super().apply(uri, op, data)

    def read_filtered(self, uri, version, filter, columns=None):  # noqa: A002
        raise Unsupported("no filtered read here")


@pytest.mark.parametrize("adapter", [_Undeclared(), _RefusesPerRequest()], ids=lambda a: a.name)
def test_an_adapter_without_them_is_unsupported_never_pass(adapter, tmp_path):
    for sid in NEW:
        r = runner.run_write_scenario(adapter, sid, sc.WRITER_SCENARIOS[sid], tmp_path)
        assert r.outcome == runner.UNSUPPORTED, (sid, r.outcome, r.message)
    opts = fuzz.options_for(_Undeclared(), None)
    assert "merge_insert" not in opts.ops and "read" not in opts.ops


# -- wrong adapters are caught and shrunk ----------------------------------------------------

def test_the_wrong_adapters_fail_the_scenarios(tmp_path):
    r = runner.run_write_scenario(MergeConditionIgnoredWriter(), "write.merge-insert",
                                  sc.WRITER_SCENARIOS["write.merge-insert"], tmp_path / "m")
    assert r.outcome == runner.FAIL and "HARNESS-003" in r.rules, r.message
    r = runner.run_write_scenario(UnfilteredReadAdapter(), "write.filtered-read",
                                  sc.WRITER_SCENARIOS["write.filtered-read"], tmp_path / "r")
    assert r.outcome == runner.FAIL and r.rules == ["HARNESS-011"], r.message
    assert "operation 1 (read)" in r.message


class _DropsConditionOnSimpleTables(MergeConditionIgnoredWriter):
    """The same bug, declaring two column kinds only: quicker examples, a plainer shrink."""

    capabilities = dataclasses.replace(MergeConditionIgnoredWriter.capabilities,
                                       types=("int32", "string"))


@pytest.mark.fuzz
@pytest.mark.slow
def test_a_dropped_merge_condition_is_found_and_shrunk(tmp_path):
    # about one example in fifty shows the bug (rows matched, a condition false for one of
    # them, values that differ); the search stops at the first and shrinks it, so 400 is a
    # bound rarely reached
    result = fuzz.fuzz(_DropsConditionOnSimpleTables(), role="writer", examples=400, seed=1,
                       skip_ops=ONLY["merge_insert"], max_ops=1, shrink_budget=None)
    assert not result.ok, result.summary()
    assert "HARNESS-003" in result.finding.rules, result.summary()
    assert [op["op"] for op in result.script] == ["create", "merge_insert"], result.summary()
    condition = result.script[1]["when_matched_update_all"]["condition"]
    assert LEAF.fullmatch(condition), condition
    doc = fuzz.case_document(result)
    assert fuzz.replay_case(doc, MergeConditionIgnoredWriter()) is not None  # fails again
    assert fuzz.replay_case(doc, ReferenceAdapter()) is None  # and the reference passes it


@pytest.mark.fuzz
@pytest.mark.parametrize("role", ["writer", "reader"])
def test_an_unfiltered_read_is_found_and_shrunk(role):
    result = fuzz.fuzz(UnfilteredReadAdapter(), role=role, examples=40, seed=1,
                       skip_ops=ONLY["read"], max_ops=1, shrink_budget=None)
    assert not result.ok, result.summary()
    assert result.finding.rules == ["HARNESS-011"], result.summary()
    assert [op["op"] for op in result.script] == ["create", "read"], result.summary()
    assert LEAF.fullmatch(result.script[1]["filter"]), result.script[1]
