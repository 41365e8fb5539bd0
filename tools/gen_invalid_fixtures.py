"""Build the negative fixtures: one dataset per rule in ``fixtures/invalid/<RULE-ID>/``.

Each case is the small base dataset of ``conformance.fixtures.corruption.write_base`` (written with
pylance 14.0.2, then made byte-reproducible by ``conformance.fixtures.corruption.normalize``) with one
corruption of ``conformance.fixtures.invalid.CORRUPTIONS`` applied, plus a ``case.json`` naming the
rule, its spec clause, what was changed and how to validate it. The base is written once
and copied for each case, so every case differs from it in exactly one way.

The output is deterministic: two runs write the same file names and bytes. ``--check``
generates into a temporary directory and compares it with ``--out`` (exit 1 on a
difference, listing it), so CI can tell whether the committed fixtures are current.

    python tools/gen_invalid_fixtures.py --out fixtures/invalid [--rules ID,ID] [--check]
"""

from __future__ import annotations

import argparse
import filecmp
import json
import shutil
import sys
import tempfile
from pathlib import Path


def case_doc(rule_id: str) -> dict:
    """The ``case.json`` of one rule's fixture."""
    from conformance.fixtures.invalid import ALSO, DEEP, DESCRIPTIONS
    from conformance.rules import get_rule

    r = get_rule(rule_id)
    validate = {"versions": "all"}
    if rule_id in DEEP or r.deep:
        validate["deep"] = True
    return {"rule": rule_id, "severity": r.severity.value,
            "spec": {"file": r.spec_file, "section": r.section, "clause": r.clause},
            "changed": DESCRIPTIONS[rule_id], "validate": validate,
            "also": ALSO.get(rule_id, []),
            "base": "conformance.fixtures.corruption.write_base (pylance 14.0.2, normalized)"}


def build(out: Path, rules: list[str] | None = None) -> list[str]:
    """Write the cases (all, or those of ``rules``) under ``out``; a full build also removes
    case directories whose rule has no corruption any more."""
    from conformance.fixtures.invalid import CORRUPTIONS, write_base

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
            (case / "case.json").write_text(json.dumps(case_doc(rule_id), indent=2) + "\n")
            made.append(rule_id)
    if not rules:
        for stale in sorted(out.iterdir()):
            if stale.is_dir() and stale.name not in CORRUPTIONS:
                shutil.rmtree(stale)
    return made


def tree(root: Path) -> list[str]:
    """Every file below ``root`` as a sorted list of relative POSIX paths."""
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


def compare(a: Path, b: Path) -> list[str]:
    """The differences between two fixture trees (names and bytes); empty when equal."""
    ta, tb = tree(a), tree(b)
    diffs = [f"only in {a}: {n}" for n in sorted(set(ta) - set(tb))]
    diffs += [f"only in {b}: {n}" for n in sorted(set(tb) - set(ta))]
    for name in sorted(set(ta) & set(tb)):
        if not filecmp.cmp(a / name, b / name, shallow=False):
            diffs.append(f"bytes differ: {name}")
    return diffs


def check(out: Path) -> list[str]:
    """Generate afresh into a temporary directory and compare with ``out``."""
    with tempfile.TemporaryDirectory() as tmp:
        fresh = Path(tmp) / "invalid"
        build(fresh)
        return compare(fresh, Path(out))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="fixtures/invalid")
    ap.add_argument("--rules", default=None, help="comma-separated rule ids (default: all)")
    ap.add_argument("--check", action="store_true",
                    help="compare a fresh generation with --out instead of writing")
    args = ap.parse_args(argv)
    if args.check:
        diffs = check(Path(args.out))
        for d in diffs:
            print(d)
        print("fixtures are current" if not diffs else f"{len(diffs)} difference(s)")
        return 1 if diffs else 0
    rules = args.rules.split(",") if args.rules else None
    made = build(Path(args.out), rules)
    print(f"wrote {len(made)} cases to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
