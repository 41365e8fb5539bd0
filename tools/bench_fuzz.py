"""Benchmark ``lance-conformance fuzz``: examples per minute of ``reference`` and ``pylance``
as writer and as reader (no shrinking: the scripts of a seed that fails nowhere).

    python tools/bench_fuzz.py [--examples 30] [--seed 11] [--impl reference --impl pylance]
                               [--role writer --role reader] [--json]

Each (implementation, role) runs ``--examples`` generated scripts with the same seed in this
process; the machine's load average is printed beside the numbers, since other work on the
machine slows every example down.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def bench(impl: str, role: str, examples: int, seed: int) -> dict:
    from conformance.harness import fuzz
    from conformance.harness.adapter import load_adapter

    adapter = load_adapter(impl)
    with adapter:
        started = time.monotonic()
        result = fuzz.fuzz(adapter, role=role, examples=examples, seed=seed, impl=impl,
                           shrink_budget=0)
        elapsed = time.monotonic() - started
    return {"impl": impl, "role": role, "examples": result.examples, "seconds": round(elapsed, 2),
            "examples_per_minute": round(60 * result.examples / elapsed, 1),
            "failed": not result.ok,
            "failure": result.finding.summary() if result.finding else None}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--examples", type=int, default=30)
    p.add_argument("--seed", type=int, default=11)
    p.add_argument("--impl", action="append", default=None)
    p.add_argument("--role", action="append", default=None, choices=("writer", "reader"))
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    rows = []
    for impl in args.impl or ["reference", "pylance"]:
        for role in args.role or ["writer", "reader"]:
            rows.append(bench(impl, role, args.examples, args.seed))
            if not args.json:
                r = rows[-1]
                note = f"  (stopped at a failure: {r['failure'][:80]})" if r["failed"] else ""
                print(f"{r['impl']:<10} {r['role']:<7} {r['examples']:>4} examples "
                      f"{r['seconds']:>7.1f} s  {r['examples_per_minute']:>7.1f}/min{note}",
                      flush=True)
    load = os.getloadavg()
    if args.json:
        print(json.dumps({"cpus": os.cpu_count(), "load": load, "results": rows}, indent=1))
    else:
        print(f"cpus {os.cpu_count()}, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
