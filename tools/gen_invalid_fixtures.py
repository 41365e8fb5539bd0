"""Build the negative fixtures: one dataset per rule in ``fixtures/invalid/<RULE-ID>/``.

Each case is the small base dataset of ``conformance.invalid.write_base`` (written with
pylance 14.0.2) with one corruption of ``conformance.invalid.CORRUPTIONS`` applied, plus a
``case.json`` naming the rule, its spec clause and what was changed. The base is written
once and copied for each case, so every case differs from it in exactly one way.

    python tools/gen_invalid_fixtures.py --out fixtures/invalid [--rules ID,ID]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path


def build(out: Path, rules: list[str] | None = None) -> list[str]:
    from conformance.invalid import ALSO, CORRUPTIONS, DESCRIPTIONS, write_base
    from conformance.rules import get_rule

    out = out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    made = []
    with tempfile.TemporaryDirectory() as tmp:
        base = write_base(Path(tmp) / "base")
        for rule_id in sorted(CORRUPTIONS):
            if rules and rule_id not in rules:
                continue
            case = out / rule_id
            if case.exists():
                shutil.rmtree(case)
            table = case / "table"
            shutil.copytree(base, table)
            CORRUPTIONS[rule_id](table)
            r = get_rule(rule_id)
            doc = {"rule": rule_id, "severity": r.severity.value,
                   "spec": {"file": r.spec_file, "section": r.section, "clause": r.clause},
                   "changed": DESCRIPTIONS[rule_id], "validate": {"versions": "all"},
                   "also": ALSO.get(rule_id, []),
                   "base": "conformance.invalid.write_base (pylance 14.0.2)"}
            (case / "case.json").write_text(json.dumps(doc, indent=2) + "\n")
            made.append(rule_id)
    return made


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", default="fixtures/invalid")
    ap.add_argument("--rules", default=None)
    args = ap.parse_args(argv)
    rules = args.rules.split(",") if args.rules else None
    made = build(Path(args.out), rules)
    print(f"wrote {len(made)} cases to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
