"""Campaign: long, mixed histories written by many releases, judged whole.

Each writer (a pylance or lancedb release, in its own cached virtualenv) writes one seeded
random history of ``--steps`` operations at every storage version it writes (appends,
deletes, updates, merge_insert, schema changes, compaction, overwrites, restores, tags,
branches, indexes, config: ``conformance/releases/history_program.py``), in two halves; the
kit validates every version of it through every path the engine has and must give one report
(fresh, readable split, units per version, no aggregates, ``--deep`` likewise, the verdict
cache grown from the first half, deep on every third history, Spark on one), draw no error
finding the spec text does not demand, and read a sample of versions as the writer read them
(``conformance/releases/long_history.py``). Histories begun by an old release and grown to
their end by a newer one (``--upgrades``) are judged the same way, the newer release reading
them back. Prints one line per history and every discrepancy; ``--json`` / ``--md`` keep
the verdicts. Exit 0 when no history shows a discrepancy, 1 otherwise.

    nice -n 10 python tools/long_history.py [--writers W,...] [--steps 300] [--seed 0]
        [--out DIR] [--json F] [--md F] [--keep] [--no-spark] [--deep-every 3]
        [--upgrades OLD>NEW,...|none]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from conformance.releases import long_history as lh


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--writers", default=",".join(lh.WRITERS),
                   help="comma-separated releases writing a history each ('none': only the "
                        "upgrades)")
    p.add_argument("--storages", default=None,
                   help="comma-separated storage versions to keep (default: every one a "
                        "writer writes; 'default' for a writer's own default)")
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--sample", type=int, default=24, help="versions read and compared")
    p.add_argument("--deep-every", type=int, default=3)
    p.add_argument("--no-spark", action="store_true")
    p.add_argument("--upgrades", default="default",
                   help="histories begun by one release and ended by another: OLD>NEW,... "
                        "(default: the campaign's six pairs; 'none': no such history)")
    p.add_argument("--out", default="/tmp/lance-conformance-long-history")
    p.add_argument("--keep", action="store_true", help="keep histories judged clean too")
    p.add_argument("--json", dest="json_out", default=None)
    p.add_argument("--md", dest="md_out", default=None)
    args = p.parse_args(argv)
    writers = [] if args.writers == "none" else args.writers.split(",")
    specs = lh.plan(writers, seed=args.seed, steps=args.steps,
                    deep_every=args.deep_every, spark=0 if args.no_spark else 1)
    if args.upgrades == "default":
        specs += lh.upgrades(seed=args.seed, steps=args.steps)
    elif args.upgrades != "none":
        pairs = [tuple(p.split(">")) for p in args.upgrades.split(",")]
        specs += lh.upgrades(pairs, seed=args.seed, steps=args.steps)
    if args.storages:
        keep = {None if s == "default" else s for s in args.storages.split(",")}
        specs = [s for s in specs if s.storage in keep]
    print(f"{len(specs)} histories of {args.steps} steps, load {os.getloadavg()[0]:.1f}",
          flush=True)
    t = time.monotonic()
    verdicts = lh.campaign(specs, Path(args.out), sample=args.sample, keep=args.keep,
                           progress=lambda line: print(line, flush=True))
    judged = [v for v in verdicts if v.versions]
    bad = [v for v in verdicts if not v.ok]
    print(f"{len(judged)} histories judged, {sum(v.versions for v in judged)} versions, "
          f"{len(bad)} with discrepancies, {time.monotonic() - t:.0f} s, "
          f"load {os.getloadavg()[0]:.1f}")
    if args.json_out:
        Path(args.json_out).write_text(json.dumps([v.as_dict() for v in verdicts], indent=1))
    if args.md_out:
        Path(args.md_out).write_text(lh.markdown(verdicts))
    if not judged:
        print("error: no history was judged", file=sys.stderr)
        return 1
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
