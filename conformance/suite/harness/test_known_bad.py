"""Self-test of the harness: each known-bad writer reproduces a real writer bug and must
fail with the rule ids that name that bug, while the scenarios that never reach the bug
still pass (so the failure is the bug's, not the harness's)."""

from __future__ import annotations

import pytest

from conformance.harness import runner
from conformance.harness.known_bad import EXPECTED_RULES, KNOWN_BAD, READ_BACK_CHECKS
from conformance.harness.reference import ReferenceAdapter

# Scenarios that cannot reach each bug: they must PASS with the bad writer too.
UNTOUCHED = {
    "read-version": ["write.create", "write.create-2.0"],
    "deletion-flag": ["write.create", "write.append", "write.add-columns", "write.tag"],
    "physical-rows": ["write.create", "write.append", "write.merge", "write.config"],
    "file-version": ["write.create-2.0", "write.create-2.1"],
    "overwrite-commit": ["write.create", "write.append", "write.delete", "write.restore"],
}


@pytest.fixture(scope="module")
def baseline():
    """The reference writer itself passes every writer case."""
    result = runner.run(ReferenceAdapter(), suite="write")
    assert [r.id for r in result.results if r.outcome != runner.PASS] == []
    return result


def test_at_least_five_known_bad_writers():
    assert len(KNOWN_BAD) >= 5
    assert set(KNOWN_BAD) == set(EXPECTED_RULES) == set(UNTOUCHED)


@pytest.mark.parametrize("bug", sorted(KNOWN_BAD))
def test_known_bad_writer_fails_with_its_rule_ids(bug, baseline):
    adapter = KNOWN_BAD[bug]()
    result = runner.run(adapter, suite="write")
    failed = [r for r in result.results if r.outcome == runner.FAIL]
    assert failed, f"{bug}: nothing failed"
    assert not [r for r in result.results if r.outcome == runner.ERROR]
    # the union of the ids that caught it is exactly the bug's ids (read-back checks aside)
    assert result.failed_rules() - READ_BACK_CHECKS == EXPECTED_RULES[bug]
    # and every failed case names at least one of them
    for r in failed:
        assert set(r.rules) & EXPECTED_RULES[bug], (r.id, r.rules, r.message)
    by = result.by_id()
    for sid in UNTOUCHED[bug]:
        assert by[sid].outcome == runner.PASS, (sid, by[sid].message)
    assert not result.ok


def test_known_bad_read_version_each_commit():
    result = runner.run(KNOWN_BAD["read-version"](), suite="write", scenarios=["write.append"])
    r = result.results[0]
    assert r.outcome == runner.FAIL and r.rules == ["TXN-004"]
    assert "read_version 2 is not below version 2" in r.message


def test_known_bad_overwrite_commit_is_caught_by_the_harness():
    result = runner.run(KNOWN_BAD["overwrite-commit"](), suite="write", scenarios=["write.stale-append"])
    r = result.results[0]
    assert r.outcome == runner.FAIL and r.rules == ["HARNESS-001"]
    assert "rewrote existing manifests" in r.message
