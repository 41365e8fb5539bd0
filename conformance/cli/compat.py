"""``lance-conformance compat``: the release compatibility matrix.

    lance-conformance compat --writers W,... --readers R,... [--scenarios S,...]
                             [--json F] [--html F] [--junit F] [--baseline F]
                             [--all-storage] [--quick] [--jobs N] [--timeout S] [--work DIR]
                             [--png F [--png-size WxH]] [--markdown F]
    lance-conformance compat --from-json F [--html F] [--png F] [--markdown F] [--baseline F]

A writer or reader is ``pylance==X.Y.Z``, ``lancedb==X.Y.Z`` (each in its own cached
virtualenv, driven through ``conformance/compat/release_adapter.py``), ``reference``,
``pylance`` (the installed one), ``known-bad:<bug>``, ``module:Class`` or ``cmd:"..."``;
``LABEL=SPEC`` shows SPEC under LABEL. ``--all-storage`` adds every scenario at every data
storage version (``delete@2.1``: its ``create`` at 2.1), for the writers that accept it. ``--quick``: three releases and a few scenarios (the
given ``--writers``/``--readers``/``--scenarios`` still win). Prints the grid and every cell that
is not identical with its cause; a progress bar goes to stderr.

Every report (the text printed, ``--json``, ``--html``, ``--png``, ``--markdown``,
``--junit``) says what the matrix was judged against: the kit's version, the digests of its
case set and of the spec texts, and every participant's name and version.

Exit code: 0, or 1 when ``--baseline`` is given and a cell got worse than in that saved
``--json`` matrix (each such cell is printed with its cause); 2 for a usage error, and for a
matrix that judged nothing: no cell was read (every writer failed or lacked the scenarios,
or no reader started), or ``--baseline`` shares no cell with the run.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path


def register(subparsers) -> None:
    p = subparsers.add_parser("compat", help="writer-release x reader-release compatibility "
                                             "matrix, every broken cell named by its cause")
    p.add_argument("--writers", action="append", default=[],
                   help="comma-separated writers (pylance==X.Y.Z, lancedb==X.Y.Z, reference, ...)")
    p.add_argument("--readers", action="append", default=[], help="comma-separated readers")
    p.add_argument("--scenarios", action="append", default=[],
                   help="comma-separated scenario ids (default: all; see --list-scenarios)")
    p.add_argument("--list-scenarios", action="store_true", help="print the scenarios and exit")
    p.add_argument("--all-storage", action="store_true",
                   help="also run every scenario at every data storage version (NAME@VERSION)")
    p.add_argument("--json", default=None, help="write the matrix as JSON here (a baseline)")
    p.add_argument("--html", default=None, help="write the HTML report here")
    p.add_argument("--junit", default=None, help="write a JUnit XML report here")
    p.add_argument("--markdown", default=None, help="write the grid and causes as Markdown here")
    p.add_argument("--from-json", default=None,
                   help="render a saved --json matrix instead of running one")
    p.add_argument("--png", default=None,
                   help="screenshot the HTML report here with headless chromium (needs --html)")
    p.add_argument("--png-size", default="1400x900", help="the screenshot's WIDTHxHEIGHT")
    p.add_argument("--baseline", default=None,
                   help="a saved --json matrix: exit 1 when a cell got worse")
    p.add_argument("--quick", action="store_true", help="three releases x a few scenarios")
    p.add_argument("--jobs", type=int, default=2, help="parallel workers (default 2)")
    p.add_argument("--timeout", type=float, default=60.0,
                   help="seconds for one read or write before it counts as a hang (default 60)")
    p.add_argument("--work", default=None, help="keep the written datasets under this folder")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    p.set_defaults(func=_run)


def split_list(values: list[str]) -> list[str]:
    """Items of comma-separated options; a comma inside quotes (``cmd:"a,b"``) stays."""
    out: list[str] = []
    for value in values:
        cur, quote = "", None
        for ch in value:
            if quote:
                quote = None if ch == quote else quote
            elif ch in "\"'":
                quote = ch
            elif ch == ",":
                if cur.strip():
                    out.append(cur.strip())
                cur = ""
                continue
            cur += ch
        if cur.strip():
            out.append(cur.strip())
    return out


def _run(args) -> int:
    from conformance.compat.matrix import Participant, run_matrix
    from conformance.compat.scenarios import (
        COMPAT_SCENARIOS,
        QUICK_RELEASES,
        QUICK_SCENARIOS,
        scenario,
        with_storage_variants,
    )

    if args.list_scenarios:
        for sid, s in COMPAT_SCENARIOS.items():
            req = f"  (needs {', '.join(s['requires'])})" if s.get("requires") else ""
            print(f"{sid:22} {s['title']}{req}")
        return 0
    baseline = None
    if args.baseline:
        try:
            baseline = json.loads(Path(args.baseline).read_text())
        except (OSError, ValueError) as exc:
            print(f"compat: cannot read the baseline {args.baseline}: {exc}", file=sys.stderr)
            return 2
    if args.png and not args.html:
        print("compat: --png needs --html", file=sys.stderr)
        return 2
    if args.from_json:
        from conformance.compat.matrix import CompatMatrix

        try:
            m = CompatMatrix.from_dict(json.loads(Path(args.from_json).read_text()))
        except (OSError, ValueError, KeyError) as exc:
            print(f"compat: cannot read {args.from_json}: {exc}", file=sys.stderr)
            return 2
        return _outputs(args, m, baseline)
    writers = split_list(args.writers) or (list(QUICK_RELEASES) if args.quick else [])
    readers = split_list(args.readers) or (list(QUICK_RELEASES) if args.quick else [])
    scenarios = split_list(args.scenarios) or (list(QUICK_SCENARIOS) if args.quick else None)
    if not writers or not readers:
        print("compat: give --writers and --readers (or --quick)", file=sys.stderr)
        return 2
    if args.all_storage:
        scenarios = with_storage_variants(scenarios or list(COMPAT_SCENARIOS))
    unknown = []
    for sid in scenarios or []:
        try:
            scenario(sid)
        except KeyError:
            unknown.append(sid)
    if unknown:
        print(f"compat: unknown scenarios {', '.join(unknown)} (see --list-scenarios)",
              file=sys.stderr)
        return 2
    if args.jobs < 1 or args.timeout <= 0:
        print("compat: --jobs must be >= 1 and --timeout > 0", file=sys.stderr)
        return 2
    try:
        wp = [Participant.parse(w) for w in writers]
        rp = [Participant.parse(r) for r in readers]
    except ValueError as exc:
        print(f"compat: {exc}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="lance-conformance-compat-") as tmp:
        work = Path(args.work) if args.work else Path(tmp)
        m = run_matrix(wp, rp, scenarios=scenarios, work=work, jobs=args.jobs,
                       timeout=args.timeout, progress=not args.no_progress)
    return _outputs(args, m, baseline)


def _outputs(args, m, baseline=None) -> int:
    from conformance.compat import report
    from conformance.compat.matrix import baseline_overlap, compare_baseline

    print(report.to_text(m), end="")
    if args.markdown:
        Path(args.markdown).write_text(report.to_markdown(m))
    if args.json:
        Path(args.json).write_text(json.dumps(m.as_dict(), indent=1) + "\n")
    if args.html:
        Path(args.html).write_text(report.render_html(m))
        if args.png:
            try:
                w, _, h = args.png_size.partition("x")
                report.screenshot(Path(args.html), Path(args.png), size=(int(w), int(h)))
            except (OSError, ValueError, subprocess.SubprocessError) as exc:
                print(f"compat: no screenshot: {exc}", file=sys.stderr)
    if args.junit:
        Path(args.junit).write_bytes(report.to_junit(m))
    if not m.judged():
        print(f"compat: no cell was read ({len(m.cells)} cells, none identical, refused, "
              "crash or misread): the matrix judged nothing", file=sys.stderr)
        return 2
    if baseline is not None:
        shared = baseline_overlap(m, baseline)
        if not shared:
            print(f"compat: the baseline {args.baseline} shares no cell (writer, reader, "
                  "scenario) with this run: nothing was compared", file=sys.stderr)
            return 2
        worse = compare_baseline(m, baseline)
        for r in worse:
            print(f"WORSE {r}")
        if worse:
            print(f"{len(worse)} cell(s) got worse than the baseline {args.baseline}")
            return 1
        print(f"no cell got worse than the baseline {args.baseline} ({shared} cells compared)")
    return 0
