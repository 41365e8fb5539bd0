"""``lance-conformance fixtures ACTION``: generate fixture datasets.

Actions: ``generate-large`` (:mod:`.fixtures_large`). Each action module adds its own
sub-parser to ``sub``; exit codes as for every command (0 done, 2 usage error).
"""

from __future__ import annotations

import sys


def register(subparsers) -> None:
    p = subparsers.add_parser("fixtures", help="generate fixture datasets",
                              description="Generate fixture datasets.")
    sub = p.add_subparsers(dest="fixtures_command", metavar="ACTION")
    # --- generate-large (conformance/cli/fixtures_large.py) ---
    from .fixtures_large import add_generate_large

    add_generate_large(sub)
    # --- end generate-large ---

    def _no_action(args) -> int:
        p.print_help(sys.stderr)
        return 2

    p.set_defaults(func=_no_action)
