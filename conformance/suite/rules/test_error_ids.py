"""Every rule id the reference implementation puts on a typed error is a rule of the
catalog, so an error a reader raises always points at a documented spec clause."""

from __future__ import annotations

import re
from pathlib import Path

from conformance.rules import all_rules

REPO = Path(__file__).resolve().parents[3]
RAISED = re.compile(r"""rule\s*=\s*["']([A-Z]+-\d{3})["']""")


def raised_rule_ids() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for path in sorted((REPO / "reference_impl").rglob("*.py")):
        if "proto" in path.parts:
            continue
        for rule_id in RAISED.findall(path.read_text()):
            found.setdefault(rule_id, []).append(str(path.relative_to(REPO)))
    return found


def test_raised_ids_are_found():
    # guards the scan itself: the readers raise many distinct ids
    assert len(raised_rule_ids()) >= 30


def test_every_raised_rule_id_is_in_the_catalog():
    catalog = {r.id for r in all_rules()}
    missing = {rid: files for rid, files in raised_rule_ids().items() if rid not in catalog}
    assert missing == {}, f"rule ids raised in reference_impl but not in the catalog: {missing}"
