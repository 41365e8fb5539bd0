"""The report model, its JSON Schema and its four formats."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import jsonschema
import pytest

from conformance.engine.report import Report, Violation, schema


def _v(rule, severity="error", version=1, msg="broken"):
    return Violation(rule=rule, severity=severity,
                     spec={"file": "FACTS.md", "section": "s", "clause": "c"},
                     message=msg, location={"version": version, "path": "_versions/x"})


def _report(findings):
    return Report(uri="/tmp/ds", versions_checked=[2, 1], rules_checked=["A-001", "B-002", "C-003"],
                  findings=findings, elapsed_s=0.5)


def test_conforms_means_no_error():
    assert _report([]).conforms
    assert _report([_v("A-001", "warning")]).conforms
    assert not _report([_v("A-001")]).conforms


@pytest.mark.parametrize("findings", [[], [_v("B-002"), _v("A-001", "warning"), _v("A-001", version=0)]])
def test_json_matches_schema(findings):
    doc = json.loads(_report(findings).render("json"))
    jsonschema.validate(doc, schema())
    assert doc["versions_checked"] == [1, 2]
    assert [v["rule"] for v in doc["violations"]] == [f.rule for f in findings if f.severity == "error"] or \
        [v["rule"] for v in doc["violations"]] == sorted(v.rule for v in findings if v.severity == "error")


def test_schema_rejects_bad_documents():
    doc = json.loads(_report([_v("A-001")]).render("json"))
    doc["violations"][0]["severity"] = "fatal"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(doc, schema())
    doc = json.loads(_report([]).render("json"))
    del doc["conforms"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(doc, schema())


def test_findings_sorted_deterministically():
    a = _report([_v("B-002", version=3), _v("A-001", version=2), _v("B-002", version=1)])
    b = _report([_v("B-002", version=1), _v("B-002", version=3), _v("A-001", version=2)])
    assert a.render("json").replace("0.5", "") == b.render("json").replace("0.5", "")
    assert [(v.rule, v.location["version"]) for v in a.violations] == [
        ("A-001", 2), ("B-002", 1), ("B-002", 3)]


def test_text_groups_by_rule():
    text = _report([_v("B-002", msg="one"), _v("B-002", msg="two"), _v("A-001", "warning")]).render("text")
    assert "DOES NOT CONFORM" in text
    assert text.count("B-002 [error]") == 1
    assert "- one" in text and "- two" in text and "warnings:" in text
    assert "CONFORMS" in _report([]).render("text")


def test_junit_one_case_per_rule_and_failures():
    root = ET.fromstring(_report([_v("B-002"), _v("B-002", msg="again")]).render("junit"))
    suite = root.find("testsuite")
    cases = suite.findall("testcase")
    assert [c.get("name") for c in cases] == ["A-001", "B-002", "C-003"]
    assert len(cases[1].findall("failure")) == 2 and not cases[0].findall("failure")
    assert suite.get("failures") == "1"


def test_github_annotations():
    out = _report([_v("B-002", msg="bad, really\nbad"), _v("A-001", "warning")]).render("github")
    lines = out.splitlines()
    assert lines[0].startswith("::error file=_versions/x,title=B-002::B-002: bad, really%0Abad")
    assert lines[1].startswith("::warning ")
    assert lines[-1].startswith("::notice ")


def test_unknown_format():
    with pytest.raises(ValueError):
        _report([]).render("yaml")
