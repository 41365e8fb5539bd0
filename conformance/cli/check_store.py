"""``lance-conformance check-store URI``: qualify an object store for concurrent commits.

Runs :func:`conformance.concurrency.store_check.check_store` and prints the verdict (SAFE, UNSAFE
with reasons, or UNREACHABLE). On S3 stores the report includes a second client's (the
MinIO SDK's) read-back of what boto3 wrote as checks of their own (``second-client-*``).
``--endpoint URL`` is short for ``-o aws_endpoint=URL`` (plus ``allow_http=true`` for an
``http://`` URL), e.g. for a MinIO server. Exit code 0 when safe, 1 when unsafe, 2 when the store
cannot be reached or the arguments are wrong.
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


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "check-store",
        help="test whether an object store is safe for concurrent Lance commits",
        description="Race create-if-absent writes, check list-after-write consistency and "
        "ranged reads under a temporary prefix of URI (on S3 also read everything back with a "
        "second client, the MinIO SDK), then print SAFE or UNSAFE. "
        "Exit code 0 safe, 1 unsafe, 2 unreachable or usage error.",
    )
    parser.add_argument("uri", metavar="URI", help="store root: /path, file:///path, s3://bucket/prefix")
    parser.add_argument("-o", "--option", dest="options", metavar="KEY=VALUE", action="append",
                        type=_key_value, default=[],
                        help="storage option, pylance's names (aws_endpoint, aws_region, "
                        "aws_access_key_id, aws_secret_access_key, allow_http, ...); repeatable")
    parser.add_argument("--endpoint", metavar="URL", default=None,
                        help="S3 endpoint (e.g. a MinIO server): same as -o aws_endpoint=URL, "
                        "with allow_http=true for http:// URLs")
    parser.add_argument("--clients", type=int, default=8, help="racing writers per round (default 8)")
    parser.add_argument("--rounds", type=int, default=20, help="race rounds (default 20)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from conformance.concurrency.store_check import UNREACHABLE, check_store

    if args.clients < 2 or args.rounds < 1:
        print("check-store: --clients must be >= 2 and --rounds >= 1", file=sys.stderr)
        return 2
    options = dict(args.options)
    if args.endpoint:
        options["aws_endpoint"] = args.endpoint
        if args.endpoint.lower().startswith("http://"):
            options.setdefault("allow_http", "true")
    try:
        report = check_store(args.uri, options, clients=args.clients, rounds=args.rounds)
    except (InvalidInput, StoreError) as exc:
        print(f"check-store: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(report.to_dict(), indent=2))
    else:
        print(report.render())
    if report.verdict == UNREACHABLE and not args.json:
        print("check-store: the store cannot be reached", file=sys.stderr)
    return report.exit_code
