"""Benchmark: a large dataset generated and deep-validated on Spark, against the local engine.

    python tools/bench_spark.py --rows 50000000 --fragments 200 [--dir D] [--json OUT]

Steps, each in its own child process so that sessions and memory do not mix:

1. ``generate``: ``fixtures generate-large`` on Spark ``local[2]`` (Spark tasks write the
   data files with our writer, the driver commits one Overwrite);
2. ``validate-local``: the local engine's deep validation (one process);
3. ``validate-spark`` with ``local[1]`` and with ``local[2]``: the Spark engine's deep
   validation; the session is started before the clock starts, so the times compare the
   work, not the JVM start-up. Each runs four times in its session: the first (cold) run also
   starts the Python workers and imports the kit in them; the warm figure is the best of three
   further runs in the same session, the steady-state throughput.

For each step: wall time, rows per second, and the peak resident memory of the whole
process tree (driver JVM, Python driver, Python workers), sampled every 0.2 s from
``/proc``. The reports of all three validations must be equal apart from ``elapsed_s``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

PAGE = os.sysconf("SC_PAGE_SIZE")


# -- process-tree memory -------------------------------------------------------------------

def _children() -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as fh:
                ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        kids.setdefault(ppid, []).append(int(name))
    return kids


def tree_rss(root: int) -> int:
    """Resident bytes of ``root`` and every descendant."""
    kids = _children()
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        todo.extend(kids.get(pid, ()))
        try:
            with open(f"/proc/{pid}/statm") as fh:
                total += int(fh.read().split()[1]) * PAGE
        except (OSError, ValueError, IndexError):
            pass
    return total


def run_step(args: list[str]) -> dict:
    """Run this script's worker mode in a child; its JSON result plus peak tree RSS."""
    proc = subprocess.Popen([sys.executable, __file__, "_worker", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peak = 0
    done = threading.Event()

    def sample():
        nonlocal peak
        while not done.is_set():
            peak = max(peak, tree_rss(proc.pid))
            done.wait(0.2)

    t = threading.Thread(target=sample, daemon=True)
    t.start()
    out, err = proc.communicate()
    done.set()
    t.join()
    if proc.returncode != 0:
        raise SystemExit(f"step {args} failed ({proc.returncode}):\n{err[-3000:]}")
    result = json.loads(out.strip().splitlines()[-1])
    result["peak_rss_bytes"] = peak
    return result


# -- worker mode ---------------------------------------------------------------------------

def worker(argv: list[str]) -> None:
    p = argparse.ArgumentParser()
    p.add_argument("what", choices=("generate", "validate-local", "validate-spark"))
    p.add_argument("--uri", required=True)
    p.add_argument("--rows", type=int, default=0)
    p.add_argument("--fragments", type=int, default=0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--master", default="local[2]")
    a = p.parse_args(argv)
    out: dict = {"what": a.what, "master": a.master if a.what != "validate-local" else None}
    if a.what == "validate-local":
        from conformance.engine import validate

        t = time.monotonic()
        report = validate(a.uri, deep=True)
        out["seconds"] = time.monotonic() - t
    else:
        from conformance.engine.spark_session import get_session

        t = time.monotonic()
        spark = get_session(a.master, app_name="lance-conformance-bench")
        out["session_s"] = time.monotonic() - t
        t = time.monotonic()
        if a.what == "generate":
            from conformance.fixtures.large import generate

            generate(a.uri, num_rows=a.rows, fragments=a.fragments, seed=a.seed,
                     engine="spark", spark=spark, mode="overwrite")
            out["seconds"] = time.monotonic() - t
            print(json.dumps(out))
            return
        from conformance.engine.spark import validate

        report = validate(a.uri, spark=spark, deep=True)
        out["seconds"] = time.monotonic() - t
        # again (best of 3), with the Python workers already started and the modules imported
        warm = []
        for _ in range(3):
            t = time.monotonic()
            validate(a.uri, spark=spark, deep=True)
            warm.append(time.monotonic() - t)
        out["warm_seconds"] = min(warm)
    d = report.as_dict()
    d.pop("elapsed_s")
    out["conforms"] = report.conforms
    out["report"] = d
    print(json.dumps(out))


# -- driver --------------------------------------------------------------------------------

def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", type=int, default=50_000_000)
    p.add_argument("--fragments", type=int, default=200)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--dir", default=None, help="where to write the dataset (default: a temp dir)")
    p.add_argument("--keep", action="store_true", help="keep the dataset afterwards")
    p.add_argument("--skip-generate", action="store_true",
                   help="reuse the dataset already in --dir")
    p.add_argument("--json", default=None, metavar="OUT", help="also write the results here")
    a = p.parse_args()
    root = a.dir or tempfile.mkdtemp(prefix="lance-bench-spark-")
    uri = os.path.join(root, "large")
    results: dict = {"rows": a.rows, "fragments": a.fragments, "cores": os.cpu_count()}
    try:
        if not a.skip_generate:
            shutil.rmtree(uri, ignore_errors=True)
            results["generate"] = run_step(["generate", "--uri", uri, "--rows", str(a.rows),
                                            "--fragments", str(a.fragments),
                                            "--seed", str(a.seed), "--master", "local[2]"])
            _show("generate (spark local[2])", results["generate"], a.rows)
        size = sum(e.stat().st_size for e in os.scandir(os.path.join(uri, "data")))
        results["data_bytes"] = size
        print(f"dataset: {a.rows:,} rows, {a.fragments} fragments, {size / 2**20:.0f} MiB")
        steps = [("validate-local", ["validate-local", "--uri", uri]),
                 ("validate-spark-local[1]", ["validate-spark", "--uri", uri, "--master", "local[1]"]),
                 ("validate-spark-local[2]", ["validate-spark", "--uri", uri, "--master", "local[2]"])]
        reports = []
        for name, args in steps:
            r = run_step(args)
            reports.append(r.pop("report"))
            results[name] = r
            _show(name, r, a.rows)
        results["reports_equal"] = all(rep == reports[0] for rep in reports)
        for (name, _), rep in zip(steps, reports, strict=True):
            for key in rep:
                if rep[key] != reports[0][key]:
                    print(f"  {name} differs from validate-local in {key!r}: "
                          f"{str(rep[key])[:300]} vs {str(reports[0][key])[:300]}")
        results["conforms"] = reports[0]["conforms"]
        one = results["validate-spark-local[1]"]["seconds"]
        two = results["validate-spark-local[2]"]["seconds"]
        results["speedup_local2_vs_local1"] = one / two
        results["speedup_local2_vs_local_engine"] = results["validate-local"]["seconds"] / two
        warm1 = results["validate-spark-local[1]"]["warm_seconds"]
        warm2 = results["validate-spark-local[2]"]["warm_seconds"]
        results["warm_speedup_local2_vs_local1"] = warm1 / warm2
        print(f"warm (best of 3 later runs in the same session): local[1] {warm1:.1f} s, local[2] "
              f"{warm2:.1f} s, speed-up {warm1 / warm2:.2f}x")
        print(f"speed-up local[2] vs local[1]: {one / two:.2f}x; local[2] vs local engine: "
              f"{results['speedup_local2_vs_local_engine']:.2f}x; reports equal: "
              f"{results['reports_equal']}; conforms: {results['conforms']}")
    finally:
        if not a.keep and not a.dir:
            shutil.rmtree(root, ignore_errors=True)
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(results, fh, indent=2)


def _show(name: str, r: dict, rows: int) -> None:
    extra = f", session start {r['session_s']:.1f} s" if "session_s" in r else ""
    if "warm_seconds" in r:
        extra += f", warm run {r['warm_seconds']:.1f} s"
    print(f"{name:>26}: {r['seconds']:8.1f} s  {rows / r['seconds'] / 1e6:7.2f} M rows/s  "
          f"peak RSS {r['peak_rss_bytes'] / 2**30:.2f} GiB{extra}", flush=True)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "_worker":
        worker(sys.argv[2:])
    else:
        main()
