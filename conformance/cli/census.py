"""``lance-conformance census``: what every release writes, judged as it reads it.

``census operations [--releases R,...] [--md F] [--json F] [--no-build]``: every public
operation of pylance (and lancedb) that commits, at every storage version, as the census
scenarios of the cross-release corpus write them (built in each release's cached
virtualenv, or reused); one cell per operation x storage version x release with the
release's outcome and the kit's (:mod:`conformance.census.operations`). Exit 0 when every
cell agrees (no false error, no silent difference), 1 otherwise, 2 when nothing was judged.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path


def register(subparsers) -> None:
    p = subparsers.add_parser("census", help="every operation a release commits, judged as "
                                             "the release reads it",
                              description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="census_command", metavar="CENSUS")
    add_operations(sub)

    def _no_action(args) -> int:
        p.print_help(sys.stderr)
        return 2

    p.set_defaults(func=_no_action)


#: the releases of ``census operations`` by default: the CI subset and lancedb's newest two
DEFAULT_RELEASES = ("pylance==0.10.18", "pylance==0.38.3", "pylance==14.0.2",
                    "lancedb==0.38.0", "lancedb==0.40.0")


def add_operations(sub) -> None:
    o = sub.add_parser("operations", help="operation x storage version x release",
                       description="Every committing operation of pylance and lancedb at "
                                   "every storage version, the release's outcome and ours.")
    o.add_argument("--releases", default=None,
                   help="comma-separated releases (pylance==X.Y.Z, lancedb==X.Y.Z); default "
                        + ",".join(DEFAULT_RELEASES))
    o.add_argument("--out", default=None, help="corpus folder (default: the kit's cache)")
    o.add_argument("--no-build", action="store_true",
                   help="judge the corpora as they are (each must have been built)")
    o.add_argument("--md", dest="md_out", default=None, help="write the Markdown tables here")
    o.add_argument("--json", dest="json_out", default=None, help="write every cell here")
    o.add_argument("--main", default="pylance==14.0.2",
                   help="the release of the operation x storage version table")
    o.set_defaults(func=run_operations)


def run_operations(args: argparse.Namespace) -> int:
    from conformance.census import operations
    from conformance.releases import corpus
    from conformance.releases.venvs import Release, ReleaseUnavailable

    names = args.releases.split(",") if args.releases else list(DEFAULT_RELEASES)
    try:
        releases = [Release.parse(n) for n in names]
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    root = Path(args.out) if args.out else corpus.corpus_root()
    folders, started = [], time.monotonic()
    for rel in releases:
        folder = root / rel.slug
        if not args.no_build:
            try:
                folder = corpus.build(rel, folder)
            except (ReleaseUnavailable, RuntimeError, OSError) as e:
                print(f"{rel.name}: not built: {e}", file=sys.stderr)
                continue
        if not operations.census_roots(folder):
            print(f"{rel.name}: no census scenarios in {folder}", file=sys.stderr)
            continue
        folders.append(folder)
    built = time.monotonic() - started
    cells = operations.collect(folders)
    if not cells:
        print("census operations: nothing was judged", file=sys.stderr)
        return 2
    judged = time.monotonic() - started - built
    bad = [c for c in cells if not c.agrees]
    for rel in releases:
        mine = [c for c in cells if c.writer == rel.name]
        if mine:
            ran = [c for c in mine if c.release not in operations.NOT_RUN]
            print(f"{rel.name}: {len(ran)} operations x storage versions ran, "
                  f"{sum(c.agrees for c in ran)} judged as the release reads them; "
                  f"{sum(c.release == 'no API' for c in mine)} without API, "
                  f"{sum(c.release == 'fails' for c in mine)} refused by the release")
    for c in bad[:40]:
        print(f"  {c.writer} {c.operation} at {c.storage}: {c.release} -> {c.ours} "
              f"{c.detail[:120]}")
    summary = (f"{len(cells) - len(bad)} of {len(cells)} cells agree; build {built:.0f} s, "
               f"judge {judged:.0f} s")
    print(f"census operations: {summary}")
    if args.md_out:
        import os

        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
        Path(args.md_out).write_text(operations.markdown(
            cells, main=args.main, summary=f"{summary}, load {load:.1f} at the end"))
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(operations.as_json(cells), indent=1))
    return 1 if bad else 0
