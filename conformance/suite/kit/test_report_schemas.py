"""Every report names what it was judged against, and the JSON reports follow their schemas
(``conformance/schemas/``): real outputs of ``validate``, ``run`` and ``compat``, each format."""

from __future__ import annotations

import copy
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest

from conformance import kit
from conformance.cli import main

REPO = Path(__file__).resolve().parents[3]
TABLE = REPO / "fixtures" / "golden" / "types-2.2" / "table"
SCHEMAS = ("report", "run-report", "compat")


def _check(doc: dict, name: str) -> None:
    jsonschema.Draft202012Validator(kit.schema(name)).validate(doc)
    assert doc["provenance"]["cases"] == kit.case_set()
    assert doc["provenance"]["spec"] == kit.spec_texts()


def _properties(root: ET.Element) -> dict[str, str]:
    props = root.find(".//properties")
    assert props is not None
    return {p.get("name"): p.get("value") for p in props.findall("property")}


def test_the_schemas_share_one_provenance_block():
    blocks = [kit.schema(n)["$defs"]["provenance"] for n in SCHEMAS]
    assert blocks[0] == blocks[1] == blocks[2]
    for name in (*SCHEMAS, "case"):
        jsonschema.Draft202012Validator.check_schema(kit.schema(name))


@pytest.fixture(scope="module")
def run_outputs(tmp_path_factory):
    """One ``run`` of the read suite, every report format written."""
    import contextlib
    import io

    out = tmp_path_factory.mktemp("run")
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        code = main(["run", "--impl", "reference", "--suite", "read", "--json",
                     "--junit", str(out / "r.xml"), "--html", str(out / "r.html")])
    assert code == 0
    return json.loads(buf.getvalue()), out


def test_validate_reports(capsys, tmp_path):
    assert main(["validate", str(TABLE), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    _check(doc, "report")
    assert doc["provenance"]["implementation"] == {"name": "lance", "version": "14.0.2"}
    assert main(["validate", str(TABLE), "--format", "junit"]) == 0
    props = _properties(ET.fromstring(capsys.readouterr().out))
    assert props["implementation.version"] == "14.0.2"
    assert props["cases.sha256"] == kit.case_set()["sha256"]
    assert main(["validate", str(TABLE)]) == 0
    assert "judged against lance-conformance " in capsys.readouterr().out
    assert main(["validate", str(TABLE), "--format", "github"]) == 0
    assert "::notice title=lance-conformance judged against::" in capsys.readouterr().out
    bad = copy.deepcopy(doc)
    del bad["provenance"]["cases"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, kit.schema("report"))


def test_run_reports(run_outputs):
    doc, out = run_outputs
    _check(doc, "run-report")
    assert doc["provenance"]["implementation"] == {"name": "reference",
                                                   "version": kit.version()}
    assert doc["suite"] == "read" and doc["counts"]["PASS"] == len(doc["results"]) == 37
    props = _properties(ET.parse(out / "r.xml").getroot())
    assert props["implementation.name"] == "reference"
    assert props["spec.sha256"] == kit.spec_texts()["sha256"]
    assert "<p class='provenance'>Judged against: lance-conformance " in (out / "r.html").read_text()
    bad = copy.deepcopy(doc)
    bad["results"][0]["outcome"] = "MAYBE"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, kit.schema("run-report"))


def test_compat_reports(tmp_path, capsys):
    files = {k: tmp_path / f"m.{k}" for k in ("json", "html", "xml", "md")}
    assert main(["compat", "--writers", "reference", "--readers", "reference", "--scenarios",
                 "create,delete", "--json", str(files["json"]), "--html", str(files["html"]),
                 "--junit", str(files["xml"]), "--markdown", str(files["md"]),
                 "--no-progress"]) == 0
    assert "judged against lance-conformance" in capsys.readouterr().out
    doc = json.loads(files["json"].read_text())
    _check(doc, "compat")
    assert doc["participants"] == {"reference": {"spec": "reference", "name": "reference",
                                                 "version": kit.version()}}
    assert doc["provenance"]["implementation"]["name"] == "reference"
    props = _properties(ET.parse(files["xml"]).getroot())
    assert props["participant.reference"] == f"reference {kit.version()}"
    assert "Judged against: lance-conformance" in files["html"].read_text()
    assert files["md"].read_text().rstrip().endswith(f"implementations reference {kit.version()}.")
    # a matrix re-rendered from its JSON keeps what it was judged against
    assert main(["compat", "--from-json", str(files["json"]), "--json",
                 str(tmp_path / "again.json")]) == 0
    again = json.loads((tmp_path / "again.json").read_text())
    assert again["provenance"] == doc["provenance"]
    assert again["participants"] == doc["participants"]
