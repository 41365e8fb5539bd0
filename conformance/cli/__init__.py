"""The ``lance-conformance`` command.

Each sub-command lives in its own module of this package and exposes
``register(subparsers)``, which adds its parser and sets ``func`` to a callable
taking the parsed arguments and returning an exit code. Add a new command by adding
its module name to ``COMMANDS``.

Exit codes, for every command: 0 success / conforms, 1 violations or failed checks,
2 usage error or an unreachable store. No command ever ends in a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from .. import __version__

COMMANDS: list[str] = [
    # one module per sub-command; each owner adds its own line
    "check_store",
    "validate", "rules",
    "inspect",
    "dump",
    "stress",
    "fixtures", "run",
    "fuzz",
    "compat",
    "census",
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="lance-conformance",
        description="Conformance kit for the Lance table and file format: inspect, validate "
        "and test Lance datasets and the implementations that write and read them.",
    )
    parser.add_argument("--version", action="version", version=f"lance-conformance {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(f"{__name__}.{name}").register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits 2 on usage errors, 0 on --help
        return int(exc.code or 0)
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return 2
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # the last line of defence: a message, never a traceback
        from reference_impl.errors import LanceError, StoreError

        kind = type(exc).__name__
        print(f"lance-conformance: {kind}: {exc}", file=sys.stderr)
        if isinstance(exc, StoreError):
            return 2
        return 1 if isinstance(exc, LanceError) else 2


def entry() -> None:
    sys.exit(main())


if __name__ == "__main__":
    entry()
