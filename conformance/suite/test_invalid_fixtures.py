"""The negative fixtures: each ``fixtures/invalid/<RULE-ID>/`` breaks exactly its rule."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conformance.engine import validate
from conformance.invalid import ALSO, CORRUPTIONS

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures" / "invalid"
CASES = sorted(p.name for p in FIXTURES.iterdir() if (p / "case.json").exists()) \
    if FIXTURES.exists() else []


@pytest.mark.parametrize("rule_id", CASES)
def test_fixture_breaks_exactly_its_rule(rule_id):
    case = json.loads((FIXTURES / rule_id / "case.json").read_text())
    assert case["rule"] == rule_id
    options = case.get("validate", {"versions": "all"})
    report = validate(str(FIXTURES / rule_id / "table"), versions=options.get("versions", "all"),
                      deep=bool(options.get("deep", False)))
    assert rule_id in report.rules_violated(None), report.render("text")
    others = report.rules_violated("error") - {rule_id} - set(case.get("also", []))
    assert not others, report.render("text")
    if case["severity"] == "error":
        assert not report.conforms


def test_every_corruption_has_a_fixture():
    assert sorted(CORRUPTIONS) == CASES


def test_deep_cases_need_deep():
    """A deep case's rule does not fire without --deep (the damage is inside a data file),
    so the case really exercises the deep pass."""
    deep_cases = [r for r in CASES
                  if json.loads((FIXTURES / r / "case.json").read_text())["validate"].get("deep")]
    assert deep_cases
    for rule_id in deep_cases:
        report = validate(str(FIXTURES / rule_id / "table"), versions="all")
        assert rule_id not in report.rules_violated(None), rule_id


def test_also_lists_are_recorded():
    for rule_id, also in ALSO.items():
        case = json.loads((FIXTURES / rule_id / "case.json").read_text())
        assert case["also"] == also


@pytest.fixture(scope="module")
def base(tmp_path_factory, pylance):
    from conformance.invalid import write_base

    return write_base(tmp_path_factory.mktemp("base") / "ds")


def test_base_dataset_is_clean(base):
    report = validate(str(base), versions="all", deep=True)
    assert report.conforms, report.render("text")
    assert not report.warnings, report.render("text")
    assert report.versions_checked == [1, 2, 3]


@pytest.mark.parametrize("rule_id", ["MANIFEST-001", "FRAG-004", "TXN-003", "REFS-002"])
def test_corruption_functions_apply_to_a_fresh_copy(base, tmp_path, rule_id):
    copy = tmp_path / "copy"
    shutil.copytree(base, copy)
    CORRUPTIONS[rule_id](copy)
    report = validate(str(copy), versions="all")
    assert rule_id in report.rules_violated(None)
