"""``lance-conformance stress URI``: many writers commit to one dataset; count what was lost.

Runs :func:`conformance.concurrency.stress.run_stress` and prints ``commits_succeeded``,
``commits_retried``, ``commits_rejected``, ``lost_commits``, ``final_version``,
``invariant_violations`` and ``elapsed_s``. Exit code 0 when nothing was lost and no
invariant broke, 1 otherwise, 2 on a usage error or an unreachable store, or when no commit
succeeded (nothing could be checked for loss).
"""

from __future__ import annotations

import argparse
import json
import sys

from reference_impl.errors import InvalidInput, StoreError


def _key_value(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key.strip(), value


def _ops(text: str) -> tuple[str, ...]:
    from conformance.concurrency.stress import OPS

    ops = tuple(o.strip() for o in text.split(",") if o.strip())
    bad = [o for o in ops if o not in OPS]
    if bad or not ops:
        raise argparse.ArgumentTypeError(f"unknown operation(s) {bad}; choose from {','.join(OPS)}")
    return ops


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "stress",
        help="concurrent writers on one dataset: count retried, rejected and lost commits",
        description="Start N writers that each commit M times to the dataset at URI (created "
        "when missing), tag every row with its writer, then check that every acknowledged "
        "commit is present and that the history is valid. Exit code 0 when nothing was lost, "
        "1 when a commit was lost or an invariant broke, 2 on usage or store errors.",
    )
    parser.add_argument("uri", metavar="URI", help="dataset root: /path, file:///path, s3://bucket/prefix")
    parser.add_argument("--writers", type=int, default=8, help="our concurrent writers (default 8)")
    parser.add_argument("--commits", type=int, default=25, help="commits per writer (default 25)")
    parser.add_argument("--ops", type=_ops, default=("append",),
                        help="comma-separated operations: append,delete,update,compact,config,tag,"
                        "add_columns (default append)")
    parser.add_argument("--include-pylance", action="store_true",
                        help="add pylance writers (half as many as --writers) that append")
    parser.add_argument("--pylance-writers", type=int, default=None, help="number of pylance writers")
    parser.add_argument("--rows", type=int, default=4, help="rows per append (default 4)")
    parser.add_argument("--processes", action="store_true", help="writers are processes, not threads")
    parser.add_argument("--lockstep", action="store_true",
                        help="force the race: in each round every writer reads the same version "
                        "and all publish the next one at once (barriers, not timing)")
    parser.add_argument("--seed", type=int, default=None, help="random seed of the writers")
    parser.add_argument("-o", "--option", dest="options", metavar="KEY=VALUE", action="append",
                        type=_key_value, default=[],
                        help="storage option, pylance's names (aws_endpoint, aws_region, "
                        "aws_access_key_id, aws_secret_access_key, allow_http, ...); repeatable")
    parser.add_argument("--json", action="store_true", help="print the full report as JSON")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from conformance.concurrency.stress import run_stress

    if args.writers < 1 or args.commits < 1 or args.rows < 1:
        print("stress: --writers, --commits and --rows must be >= 1", file=sys.stderr)
        return 2
    if args.include_pylance:
        try:
            import lance  # noqa: F401
        except ImportError:
            print("stress: --include-pylance needs pylance (pip install pylance)", file=sys.stderr)
            return 2
    try:
        report = run_stress(args.uri, storage_options=dict(args.options), writers=args.writers,
                            commits=args.commits, ops=args.ops, include_pylance=args.include_pylance,
                            pylance_writers=args.pylance_writers, rows_per_commit=args.rows,
                            seed=args.seed, processes=args.processes, lockstep=args.lockstep)
    except (InvalidInput, StoreError) as exc:
        print(f"stress: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(report.to_dict(), indent=2))
    else:
        print(json.dumps(report.summary(), indent=2))
        for line in report.lost[:20]:
            print(f"LOST: {line}")
    if report.ok and not report.commits_succeeded:
        first = report.writer_errors[0] if report.writer_errors else "no error recorded"
        print(f"stress: no commit succeeded ({report.commits_rejected} rejected): nothing could "
              f"be checked for loss; first writer error: {first}", file=sys.stderr)
        return 2
    return 0 if report.ok else 1
