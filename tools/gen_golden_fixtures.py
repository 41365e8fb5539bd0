"""Regenerate ``fixtures/golden/`` (the golden cases of :mod:`conformance.fixtures.golden`).

    python tools/gen_golden_fixtures.py [--producer reference|pylance] [--out DIR] [--case ID]

The same as ``lance-conformance fixtures generate``; needs pylance 14.0.2 for the cases it
produces and for the cross-check of every expected read.
"""

from __future__ import annotations

import sys

from conformance.cli import main

if __name__ == "__main__":
    sys.exit(main(["fixtures", "generate", *sys.argv[1:]]))
