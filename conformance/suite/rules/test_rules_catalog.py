"""The rule catalog: ids, spec references, negative cases and the generated docs."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from conformance.cli import main
from conformance.fixtures.invalid import CORRUPTIONS
from conformance.rules import all_rules
from conformance.rules.registry import SPEC_FILES
from conformance.suite.parts import spec_dir, unavailable

ROOT = Path(__file__).resolve().parents[3]
SPEC_DIR = spec_dir() or Path("/nonexistent/shared/spec")
MINE = {"LAYOUT", "MANIFEST", "FLAGS", "SCHEMA", "FRAG", "DATAFILE", "TXN", "COMMIT",
        "BASEPATH", "REFS", "ENGINE"}
# rules whose negative test is not a fixture dataset (see test_validate.py)
NOT_A_DATASET = {"COMMIT-005", "ENGINE-001", "ENGINE-002", "ENGINE-003"}


def mine():
    return [r for r in all_rules() if r.id.split("-")[0] in MINE and
            not (r.id.startswith("SCHEMA-") and int(r.id[-3:]) >= 50)]


def test_owned_ids_in_range():
    for r in mine():
        n = int(r.id.split("-")[1])
        assert 1 <= n <= (49 if r.id.startswith("SCHEMA") else 99), r.id


def test_fixed_ids_defined():
    ids = {r.id for r in all_rules()}
    for rid in ("LAYOUT-005", "MANIFEST-001", "MANIFEST-002", "MANIFEST-003", "MANIFEST-004",
                "MANIFEST-005", "MANIFEST-006", "BASEPATH-002"):
        assert rid in ids


def test_every_rule_of_mine_has_a_negative_case():
    missing = [r.id for r in mine() if r.id not in CORRUPTIONS and r.id not in NOT_A_DATASET]
    assert not missing


def _norm(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", " ", text.lower())


def test_sections_and_clauses_are_in_the_spec():
    if not SPEC_DIR.exists():
        unavailable("spec texts", "shared/spec is not beside the repository")
    for r in mine():
        if r.id.startswith("ENGINE"):
            continue
        text = _norm((SPEC_DIR / SPEC_FILES[r.spec]).read_text())
        assert _norm(r.section).strip() in text, (r.id, r.section)
        # the clause may elide with "..."; every part must be quoted from the spec
        for part in r.clause.split("..."):
            part = _norm(part).strip()
            if len(part) > 12:
                assert part in text, (r.id, part)


def test_rules_command_json(capsys):
    assert main(["rules", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    ids = [d["id"] for d in doc]
    assert ids == sorted(ids, key=lambda i: (i.split("-")[0], i))
    one = next(d for d in doc if d["id"] == "FLAGS-005")
    assert one["spec"]["section"] and one["enforces"] == "pylance" and one["pylance"]


def test_rules_command_text_and_md(capsys):
    assert main(["rules"]) == 0
    assert "MANIFEST-001" in capsys.readouterr().out
    assert main(["rules", "--format", "md"]) == 0
    assert "## REFS-007" in capsys.readouterr().out


def test_rules_doc_up_to_date():
    proc = subprocess.run([sys.executable, str(ROOT / "tools" / "gen_rules_doc.py"), "--check"],
                          cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_every_error_rule_states_its_basis():
    """An error quotes a sentence of the spec texts, or says why every reader must refuse;
    anything grounded in one release's habit is a warning (the cross-release audit)."""
    for r in all_rules():
        if r.severity.value == "error":
            assert r.basis in ("spec", "refusal", "engine"), r.id
            if r.basis == "refusal":
                assert len(r.refusal) > 30, r.id
        else:
            assert r.basis is None


def test_an_error_rule_from_a_facts_sheet_needs_a_refusal():
    import pytest

    from conformance.rules.registry import rule

    with pytest.raises(ValueError, match="refusal"):
        rule("MANIFEST-999", title="t", severity="error", spec="FACTS", section="s",
             clause="c")(lambda ctx: iter(()))


def test_release_habits_are_warnings_with_their_releases(capsys):
    """What one release writes and another does not is a warning naming the releases."""
    from conformance.rules import get_rule

    for rid in ("FRAG-003", "FILE-012", "FLAGS-006"):
        r = get_rule(rid)
        assert r.severity.value == "warning" and r.releases, rid
    assert main(["rules", "--format", "md"]) == 0
    md = capsys.readouterr().out
    assert "- basis: the spec text" in md and "- basis: a refusal every reader must make" in md
    assert "- releases: pylance 0.10 to 0.39.x (and lancedb releases bundling them) end " in md
