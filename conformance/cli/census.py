"""``lance-conformance census``: what pylance's users can write, asked of releases and judged.

    lance-conformance census types [--releases pylance==X.Y.Z,...] [--storages S,...]
                                   [--rows NAME,...] [--json F] [--md F] [--from-json F]
                                   [--force] [--out DIR]
    lance-conformance census indexes [--releases R,...] [--kinds K,...] [--scenarios S,...]
                                     [--md F] [--json F] [--no-build] [--force] [--out DIR]
    lance-conformance census operations [--releases R,...] [--md F] [--json F] [--no-build]
                                        [--out DIR] [--main R]

``census types`` writes one small table per Arrow type, variant and storage version with
each release (in its cached virtualenv), then judges every table as the census demands
(``conformance/census/type_census.py``) and prints the cells that fail; ``--md`` writes the
type x storage version table of ``docs/census-types.md``. Default releases: pylance 14.0.2
and 0.20.0. Exit code: 0 when every cell is judged as the census demands, 1 when some cell
fails or nothing was judged, 2 for a usage error or a release that cannot be installed.

``census indexes``: every index kind and its main parameters x scenario (appends, deletions,
updates, compaction with and without deferred remap and stable row ids, ``optimize_indices``,
and the ``swap`` of a wrong index) x storage version x release; the release answers the
census's queries with and without its index, the kit validates the table (``--deep``) and
answers the same queries from the index it decodes
(:mod:`conformance.census.index_census`). Exit 0 when no cell disagrees, 1 when one does
(a false error, or a wrong index the kit misses), 2 when nothing was judged.

``census operations``: every public operation of pylance (and lancedb) that commits, at
every storage version, as the census scenarios of the cross-release corpus write them (built
in each release's cached virtualenv, or reused); one cell per operation x storage version x
release with the release's outcome and the kit's (:mod:`conformance.census.operations`).
Exit 0 when every cell agrees (no false error, no silent difference), 1 otherwise, 2 when
nothing was judged.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path


def register(subparsers) -> None:
    p = subparsers.add_parser("census", help="the census: every type and every operation "
                                             "pylance writes, at every storage version, judged")
    kinds = p.add_subparsers(dest="census_kind", metavar="KIND")
    register_types(kinds)
    add_operations(kinds)
    add_indexes(kinds)
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


# -- census operations ---------------------------------------------------------------------

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


# -- census indexes --------------------------------------------------------------------------

#: the releases of ``census indexes`` by default: the newest and an old one of the CI subset
INDEX_RELEASES = ("pylance==14.0.2",)


def add_indexes(sub) -> None:
    o = sub.add_parser("indexes", help="index kind x scenario x storage version x release",
                       description="Every index kind a release builds, after the operations "
                                   "users apply; the release's answers with and without the "
                                   "index against the kit's validation and decoded index.")
    o.add_argument("--releases", default=None,
                   help="comma-separated releases (pylance==X.Y.Z, lancedb==X.Y.Z); default "
                        + ",".join(INDEX_RELEASES))
    o.add_argument("--kinds", default=None, help="comma-separated index kinds (default: all)")
    o.add_argument("--scenarios", default=None,
                   help="comma-separated scenarios (default: all)")
    o.add_argument("--out", default=None,
                   help="corpus folder, one sub-folder per release (default: the kit's cache)")
    o.add_argument("--no-build", action="store_true",
                   help="judge the corpora as they are (each must have been built)")
    o.add_argument("--force", action="store_true", help="rebuild the releases' tables")
    o.add_argument("--md", dest="md_out", default=None, help="write the Markdown tables here")
    o.add_argument("--json", dest="json_out", default=None, help="write every cell here")
    o.add_argument("--jobs", type=int, default=1,
                   help="judge the cells in this many processes (default 1)")
    o.set_defaults(func=run_indexes)


def run_indexes(args: argparse.Namespace) -> int:
    from conformance.census import index_census, indexes
    from conformance.releases.venvs import Release, ReleaseUnavailable

    names = args.releases.split(",") if args.releases else list(INDEX_RELEASES)
    kinds = args.kinds.split(",") if args.kinds else None
    scenarios = args.scenarios.split(",") if args.scenarios else None
    try:
        releases = [Release.parse(n) for n in names]
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    for what, given, known in (("kind", kinds, indexes.KINDS),
                               ("scenario", scenarios, indexes.SCENARIOS)):
        unknown = sorted(set(given or ()) - set(known))
        if unknown:
            print(f"error: unknown {what} {', '.join(unknown)} (known: {', '.join(known)})",
                  file=sys.stderr)
            return 2
    root = Path(args.out) if args.out else indexes.corpus_root()
    started = time.monotonic()
    load = index_census.load_note()
    folders = []
    for rel in releases:
        folder = root / rel.slug
        if not args.no_build:
            try:
                indexes.build(rel, folder, kinds=kinds, scenarios=scenarios, force=args.force,
                              progress=lambda r, k, s: print(f"{r} {k}: built in {s:.0f} s",
                                                             flush=True))
            except (ReleaseUnavailable, RuntimeError, OSError) as e:
                print(f"{rel.name}: not built: {e}", file=sys.stderr)
                continue
        if not folder.is_dir():
            print(f"{rel.name}: no corpus in {folder}", file=sys.stderr)
            continue
        folders.append(folder)
    built = time.monotonic() - started
    # only the cases asked for are judged (a --kinds run judged every case before, then kept
    # the kind's: 8 minutes for a 3-second answer)
    cells = index_census.judge(folders, jobs=args.jobs, kinds=kinds, scenarios=scenarios)
    judged = [c for c in cells if c.verdict != "not built"]
    if not judged:
        print("census indexes: nothing was judged", file=sys.stderr)
        return 2
    counts: dict[str, int] = {}
    for c in cells:
        counts[c.verdict] = counts.get(c.verdict, 0) + 1
    for c in cells:
        if c.verdict in index_census.FAIL:
            print(f"  {c.release} {c.kind} / {c.scenario}: {c.verdict.upper()} -- "
                  f"{c.detail[:240]}")
    elapsed = time.monotonic() - started
    summary = (f"{len(cells)} cells of {', '.join(r.name for r in releases)}: "
               + ", ".join(f"{n} {v}" for v, n in sorted(counts.items()))
               + f"; build {built:.0f} s, judge {elapsed - built:.0f} s, {load} at the start")
    print(f"census indexes: {summary}")
    command = "lance-conformance census indexes" + (
        f" --releases {args.releases}" if args.releases else "") + (
        f" --kinds {args.kinds}" if args.kinds else "") + (
        f" --scenarios {args.scenarios}" if args.scenarios else "") + (
        f" --out {args.out}" if args.out else "") + (" --no-build" if args.no_build else "")
    if args.md_out:
        Path(args.md_out).write_text(index_census.markdown(cells, command=command,
                                                           summary=summary))
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(index_census.as_json(cells), indent=1))
    return 1 if any(c.failed for c in cells) else 0
