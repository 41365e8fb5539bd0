"""``lance-conformance census``: what pylance's users can write, asked of releases and judged.

    lance-conformance census types [--releases pylance==X.Y.Z,...] [--storages S,...]
                                   [--rows NAME,...] [--json F] [--md F] [--from-json F]
                                   [--force] [--out DIR]

``census types`` writes one small table per Arrow type, variant and storage version with
each release (in its cached virtualenv), then judges every table as the census demands
(``conformance/census/type_census.py``) and prints the cells that fail; ``--md`` writes the
type x storage version table of ``docs/census-types.md``. Default releases: pylance 14.0.2
and 0.20.0.

Exit code: 0 when every cell is judged as the census demands, 1 when some cell fails or
nothing was judged, 2 for a usage error or a release that cannot be installed.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path


def register(subparsers) -> None:
    p = subparsers.add_parser("census", help="the census: every type (or operation) pylance "
                                             "writes, at every storage version, judged")
    kinds = p.add_subparsers(dest="census_kind", metavar="KIND")
    register_types(kinds)
    p.set_defaults(func=lambda args: _usage(p))


def _usage(p: argparse.ArgumentParser) -> int:
    p.print_help(sys.stderr)
    return 2


# -- census types ----------------------------------------------------------------------------


def register_types(kinds) -> None:
    p = kinds.add_parser("types", help="every Arrow type x variant x storage version, written "
                                       "and read by releases and by the kit",
                         description=__doc__.split("\n\n")[0])
    p.add_argument("--releases", default=None,
                   help="comma-separated releases (pylance==X.Y.Z); default: 14.0.2 and 0.20.0")
    p.add_argument("--storages", default=None,
                   help="comma-separated storage versions (default: legacy,2.0,2.1,2.2,2.3)")
    p.add_argument("--rows", default=None,
                   help="only these types of the catalogue, '|'-separated (e.g. 'int32|arrow.uuid')")
    p.add_argument("--json", dest="json_out", default=None, help="write every cell here")
    p.add_argument("--md", dest="md_out", default=None,
                   help="write the type x storage version table (Markdown) here")
    p.add_argument("--from-json", default=None, help="render a saved --json instead of running")
    p.add_argument("--force", action="store_true", help="rewrite the releases' tables")
    p.add_argument("--out", default=None, help="census folder (default: the kit's cache)")
    p.set_defaults(func=run_types)


def run_types(args: argparse.Namespace) -> int:
    from conformance.census import report, type_census
    from conformance.releases.venvs import Release, ReleaseUnavailable

    command = "lance-conformance census types" + (
        f" --releases {args.releases}" if args.releases else "")
    if args.from_json:
        result = json.loads(Path(args.from_json).read_text())
    else:
        names = args.releases.split(",") if args.releases else list(type_census.DEFAULT_RELEASES)
        try:
            for n in names:
                Release.parse(n)
        except ValueError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        storages = args.storages.split(",") if args.storages else None
        if storages and any(s not in type_census.STORAGES for s in storages):
            print(f"error: storage versions are {', '.join(type_census.STORAGES)}",
                  file=sys.stderr)
            return 2
        rows = args.rows.split("|") if args.rows else None

        def progress(release, cells, seconds):
            bad = sum(not c.ok for c in cells)
            print(f"{release}: {len(cells) - bad}/{len(cells)} cells as the census demands "
                  f"({seconds:.0f} s)", flush=True)

        started = time.monotonic()
        load = type_census.os_cpu_note()
        try:
            result = type_census.census(names, storages=storages, rows=rows, force=args.force,
                                        out_root=Path(args.out) if args.out else None,
                                        progress=progress)
        except ReleaseUnavailable as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        result["timing"] = (f"{time.monotonic() - started:.0f} s for "
                            f"{', '.join(names)} ({load} at the start)")
    failed = 0
    judged = 0
    for release, data in result["releases"].items():
        for c in data["cells"]:
            judged += 1
            if c["ok"]:
                continue
            failed += 1
            print(f"  {release} {c['storage']} {c['row']} {c['variant']}: release "
                  f"{c['pylance']}; read {c['read']} {c['read_detail'][:120]}; write "
                  f"{c['write']} {c['write_detail'][:120]}")
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(result, indent=1))
    if args.md_out:
        Path(args.md_out).write_text(report.markdown(result, command))
    if not judged:
        print("nothing was judged: no release wrote any case", file=sys.stderr)
        return 1
    print(f"{judged - failed}/{judged} cells judged as the census demands")
    return 1 if failed else 0
