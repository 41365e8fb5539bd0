"""``lance-conformance fixtures judge-tables DIR``: does the kit read your tables as a release does?

Every Lance table under DIR (lancedb's ``<name>.lance`` tables included) and every standalone
Lance file is read back, every version, by one release (``--reader``, default the newest
pylance) in its own cached virtualenv, with row ids (``_rowid``) or, with ``--plain``, as a
user reads it by default (pylance ``to_table()``, lancedb ``to_arrow()``); then the kit
validates every version (``--deep``) and reads it with the reference reader. A table is judged *as its reader reads it* when the kit
reports no error finding and reads every version exactly as the release did; a version the
release cannot read must draw an error finding. A reader older than the newest pylance is
judged as the cross-release corpus judges an older writer: the newest pylance reads every
table and file too, and the kit may read a version as either release reads it, or refuse,
with an error finding, one the newest release refuses (a format revision that was unstable
in the older release). Exit 0 when every table and file is judged so,
1 when any is not, 2 when DIR holds none (or the release cannot be installed).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from .cross_release import describe

DEFAULT_READER = "pylance==14.0.2"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("dir", help="folder searched for tables and standalone .lance files")
    p.add_argument("--reader", default=DEFAULT_READER,
                   help=f"the release that reads them back: pylance==X.Y.Z or lancedb==X.Y.Z "
                        f"(default {DEFAULT_READER})")
    p.add_argument("--work", default=None,
                   help="keep the release's readings here (default: a temporary folder)")
    p.add_argument("--json", dest="json_out", default=None, help="write every verdict here")
    p.add_argument("--md", dest="md_out", default=None,
                   help="write the tally and the tables judged otherwise (Markdown) here")
    p.add_argument("--memory-limit", type=float, default=None, metavar="GIB",
                   help="address space the kit may use while it judges (default: three "
                        "quarters of the machine's memory; 0: no limit): a table it cannot "
                        "read within it is judged unreadable instead of exhausting the machine")
    p.add_argument("--plain", action="store_true",
                   help="have the release read every version as a user does by default, "
                        "without row ids (pylance to_table(), lancedb to_arrow()), instead of "
                        "with _rowid; lancedb then adds _lance_row_id to each blob v2 "
                        "descriptor, which the judge checks against the row ids")
    p.add_argument("--time-limit", type=float, default=1800, metavar="SECONDS",
                   help="seconds the kit may spend judging one table or folder (default "
                        "1800), each judged in a process of its own; one that runs out is "
                        "judged 'judge-timed-out'. 0: no limit, all judged in this process")
    p.add_argument("--stall", type=float, default=600,
                   help="seconds the release may spend on one table before it counts as "
                        "unreadable (default 600)")


def run(args: argparse.Namespace) -> int:
    from conformance.releases import found
    from conformance.releases.corpus import NEWEST_READER
    from conformance.releases.venvs import Release, ReleaseUnavailable, ensure_venv

    try:
        reader = Release.parse(args.reader)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    root = Path(args.dir)
    if not root.is_dir():
        print(f"error: {root} is not a folder", file=sys.stderr)
        return 2
    items = found.find(root)
    tables = sum(it.kind == "table" for it in items)
    if not items:
        print(f"no Lance table or standalone .lance file under {root}: nothing was checked",
              file=sys.stderr)
        return 2
    print(f"{root}: {tables} tables, {len(items) - tables} folders of standalone files")
    try:
        python = ensure_venv(reader)
    except ReleaseUnavailable as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="judge-tables-") as scratch:
        work = Path(args.work) if args.work else Path(scratch)
        started = time.monotonic()
        found.read_back(reader, items, work, python=python, stall=args.stall,
                        plain=args.plain)
        if reader.name != NEWEST_READER:  # the second oracle, as the corpus keeps it
            try:
                found.read_back_newest(items, work, stall=args.stall, plain=args.plain)
            except ReleaseUnavailable as e:
                print(f"error: {e}", file=sys.stderr)
                return 2
        read_s = time.monotonic() - started
        with memory_capped(args.memory_limit):
            verdicts = found.judge(items, work, limit=args.time_limit or None)
        judge_s = time.monotonic() - started - read_s
    skipped = len(items) - len(verdicts)
    ok = sum(v.ok for v in verdicts)
    how = " by default (no row ids)" if args.plain else ""
    print(f"{reader.name}: {ok} of {len(verdicts)} judged as it reads them{how} "
          f"(read back in {read_s:.0f} s, judged in {judge_s:.0f} s)")
    if skipped:
        print(f"  {skipped} folders of standalone files left out: {reader.name} has no Lance "
              f"file reader")
    for v in verdicts:
        if not v.ok:
            print("\n".join(describe(v)))
    if args.json_out:
        Path(args.json_out).write_text(json.dumps([v.as_dict() for v in verdicts], indent=1))
    if args.md_out:
        Path(args.md_out).write_text(markdown(reader.name, root, verdicts, skipped))
    if not verdicts:
        print("nothing was judged", file=sys.stderr)
        return 2
    return 0 if ok == len(verdicts) else 1


@contextlib.contextmanager
def memory_capped(gib: float | None):
    """Lower this process's address-space limit (the soft one, restored after) to ``gib``
    GiB, or to three quarters of the machine's memory when None; 0 leaves it alone."""
    import resource

    if gib is None:
        gib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") * 0.75 / (1 << 30)
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    want = int(gib * (1 << 30)) if gib > 0 else resource.RLIM_INFINITY
    if hard != resource.RLIM_INFINITY:
        want = min(want, hard)
    resource.setrlimit(resource.RLIMIT_AS, (want, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def markdown(reader: str, root: Path, verdicts, skipped: int) -> str:
    from conformance.releases.corpus import AGREED

    ok = sum(v.ok for v in verdicts)
    text = f"# {root}, read by {reader}\n\n{ok} of {len(verdicts)} judged as it reads them"
    text += f"; {skipped} folders of standalone files left out.\n" if skipped else ".\n"
    bad = [v for v in verdicts if not v.ok]
    if bad:
        text += "\n| table or folder | errors | versions |\n|---|---|---|\n"
        for v in bad:
            rules = ", ".join(sorted({e["rule"] for e in v.errors}))
            outs = "; ".join(f"v{x.version} {x.outcome}" for x in v.versions
                             if x.outcome not in AGREED)
            text += f"| `{v.scenario}` | {rules} | {outs} |\n"
    return text
