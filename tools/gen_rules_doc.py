"""Write ``docs/rules.md`` from the rule catalog (``--check``: exit 1 if it is out of date)."""

from __future__ import annotations

import argparse
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
TARGET = ROOT / "docs" / "rules.md"


def generate() -> str:
    from conformance.cli.rules import render_markdown
    from conformance.rules import all_rules

    return render_markdown(all_rules())


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args(argv)
    text = generate()
    if args.check:
        current = TARGET.read_text(encoding="utf-8") if TARGET.exists() else ""
        if current != text:
            print("docs/rules.md is out of date: run python tools/gen_rules_doc.py",
                  file=sys.stderr)
            return 1
        return 0
    TARGET.write_text(text, encoding="utf-8")
    print(f"wrote {TARGET}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
