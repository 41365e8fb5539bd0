"""Benchmark: validating the whole history of a table of many small commits.

pylance 14.0.2 writes one table by appending 10 rows a commit, once, into the kit's cache
(``$LANCE_CONFORMANCE_CACHE/bench/history/master``, default ``~/.cache/lance-conformance``;
it is grown on later runs if a larger size is asked for). For each size N (default 1,000,
2,000, 5,000 and 10,000 versions) a view of its first N versions is made with hard links, and
these are measured, each in a fresh process (imports not timed), interleaved, best of
``--reps``:

* ``all``: ``validate --all-versions``;
* ``deep``: ``validate --deep --all-versions``;
* ``cached``: the ``--cache`` second run after one more append (the first run, which fills
  the cache, and the append are not timed; the cache file is restored before each rep);
* ``one``: ``validate`` of the latest version alone;
* ``empty``: ``validate --all-versions`` of a table of one version (the first of the same
  table): what a run costs whatever the history (under 10 ms once the rule catalog is
  imported);
* ``pylance``: pylance opening every version (``lance.dataset(uri, version=v)``) and
  listing its fragments (``get_fragments()``), the anchor of the ratios.

"Imports not timed": the worker imports the engine and the whole rule catalog before the
clock starts (the catalog is 25 modules; under ``PYTHONDONTWRITEBYTECODE`` compiling them
took 65-110 ms of every run).

It prints, per size, the total bytes of the manifests, wall and CPU seconds and peak RSS of
each, ``all``'s seconds per GB of manifests, raw and net of the ``empty`` run, and its ratio
to ``pylance``, the machine's load (``os.getloadavg``) at each size, and a README-ready
Markdown table; then a least-squares fit of ``all``'s net time over the sizes as
``a x versions + b x GB`` with each size's residual. Each version costs work whatever the
size of its manifest (its ~70 version-scope rules, its transaction file, its new
fragment's rules and footer), while the manifests' bytes grow with the square of the
versions (each lists every fragment): seconds per GB fall where that per-version term
weighs most (the smaller tables), and the fit says how much each term weighs. ``--json F``
writes every sample. Writing the 10,000-version table takes a few minutes; 10,000 versions
hold 4.1 GB of manifests, and pylance's open-all takes minutes there too (use ``--reps 1``
for a first look).

    python tools/bench_history.py [--sizes 1000,2000,5000,10000] [--reps 3] [--json F]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROWS_PER_COMMIT = 10
MEASURES = ("pylance", "all", "deep", "cached", "one", "empty")


def cache_root() -> Path:
    base = os.environ.get("LANCE_CONFORMANCE_CACHE") or os.path.expanduser(
        "~/.cache/lance-conformance")
    return Path(base) / "bench" / "history"


def _batch(i: int):
    import pyarrow as pa

    lo = i * ROWS_PER_COMMIT
    ids = range(lo, lo + ROWS_PER_COMMIT)
    return pa.table({"id": pa.array(ids, pa.int64()),
                     "name": pa.array([f"row-{j:08d}" for j in ids])})


def grow(master: Path, versions: int, log=print) -> None:
    """pylance appends ``ROWS_PER_COMMIT`` rows a commit until ``master`` has ``versions``
    versions; resumes where an earlier run stopped."""
    import lance

    have = lance.dataset(str(master)).version if (master / "_versions").is_dir() else 0
    if have < versions:
        log(f"# pylance {lance.__version__} appends versions {have + 1}..{versions} to {master}")
    for i in range(have, versions):
        lance.write_dataset(_batch(i), str(master), mode="create" if i == 0 else "append")
        if (i + 1) % 1000 == 0:
            log(f"#   {i + 1} versions", flush=True)


def make_view(master: Path, dest: Path, n: int) -> int:
    """Hard-link the first ``n`` versions of ``master`` into ``dest`` (their manifests,
    transaction files and data files); the total bytes of the manifests."""
    from reference_impl.io.local import LocalStore
    from reference_impl.table import layout
    from reference_impl.table.manifest import read_manifest_file

    for d in ("data", "_versions", "_transactions"):
        (dest / d).mkdir(parents=True)
    names = {}
    for name in os.listdir(master / "_versions"):
        parsed = layout.parse_manifest_name(name)
        if parsed and parsed[0] <= n:
            names[parsed[0]] = name
    if len(names) != n:
        raise SystemExit(f"{master} holds {len(names)} of versions 1..{n}")
    total = 0
    for name in names.values():
        os.link(master / "_versions" / name, dest / "_versions" / name)
        total += (master / "_versions" / name).stat().st_size
    latest = read_manifest_file(LocalStore(str(master)), f"_versions/{names[n]}")
    for f in latest.manifest.fragments:
        for df in f.files:
            os.link(master / "data" / df.path, dest / "data" / df.path)
    for name in os.listdir(master / "_transactions"):
        if int(name.split("-", 1)[0]) < n:  # version v read version v - 1
            os.link(master / "_transactions" / name, dest / "_transactions" / name)
    return total


# -- one measurement in a fresh process ---------------------------------------------------------

_WORKER = r"""
import json, os, resource, sys, time
what, uri, cache = sys.argv[1], sys.argv[2], sys.argv[3]
extra = {}
if what == "pylance":
    import lance
    t0, c0 = time.perf_counter(), os.times()
    n = 0
    for v in lance.dataset(uri).versions():
        n += len(lance.dataset(uri, version=v["version"]).get_fragments())
    extra["fragments"] = n
else:
    from conformance.engine import validate
    from conformance.rules.registry import all_rules
    all_rules()  # the rule catalog's imports, not timed
    kw = {"one": {}, "all": {"versions": "all"}, "deep": {"versions": "all", "deep": True},
          "cached": {"versions": "all", "cache": cache}, "empty": {"versions": "all"}}[what]
    t0, c0 = time.perf_counter(), os.times()
    report = validate(uri, **kw)
    extra = {"conforms": report.conforms, "stats": report.stats}
wall = time.perf_counter() - t0
c1 = os.times()
# peak RSS of this process image (VmHWM; ru_maxrss would carry the parent's over exec)
with open("/proc/self/status") as fh:
    hwm = [line for line in fh if line.startswith("VmHWM:")]
rss = int(hwm[0].split()[1]) / 1024 if hwm else \
    resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"wall": wall, "cpu": c1.user - c0.user + c1.system - c0.system,
                  "rss_mb": rss, **extra}))
"""


def measure(what: str, uri: str, cache: str = "") -> dict:
    proc = subprocess.run([sys.executable, "-c", _WORKER, what, uri, cache],
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"{what} on {uri} failed:\n{proc.stderr[-3000:]}")
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    out["load1"] = round(os.getloadavg()[0], 2)
    return out


def prepare_cache(view: Path, work: Path) -> tuple[str, Path, Path]:
    """A copy of ``view`` with a filled cache and one more pylance append: ``(uri, cache
    file, saved copy of the cache before the append)``. The cache is filled in a fresh
    process, as the measured runs are (it is valid only for the code that wrote it)."""
    import lance

    copy = work / "cached"
    shutil.copytree(view, copy, copy_function=os.link)
    cache = work / "cache.json"
    filled = measure("cached", str(copy), str(cache))
    if filled["stats"].get("versions_from_cache"):
        raise SystemExit("the cache was not empty")
    saved = work / "cache.saved.json"
    shutil.copy(cache, saved)
    n = lance.dataset(str(copy)).version
    lance.write_dataset(_batch(n), str(copy), mode="append")
    return str(copy), cache, saved


def run_size(master: Path, n: int, reps: int, log) -> dict:
    work = Path(tempfile.mkdtemp(prefix=f"bench-history-{n}-"))
    try:
        view = work / "view"
        total = make_view(master, view, n)
        empty = work / "empty"
        make_view(master, empty, 1)
        uri_c, cache, saved = prepare_cache(view, work)
        samples: dict[str, list] = {m: [] for m in MEASURES}
        for rep in range(reps):
            for what in MEASURES:
                if what == "cached":
                    shutil.copy(saved, cache)
                    s = measure(what, uri_c, str(cache))
                    if s["stats"].get("versions_from_cache") != n:
                        raise SystemExit(f"the --cache run served {s['stats']} (the kit's code "
                                         f"changed while the benchmark ran?)")
                else:
                    s = measure(what, str(empty if what == "empty" else view))
                samples[what].append(s)
                log(f"#   {n} versions, rep {rep + 1}: {what:8s} {s['wall']:8.2f} s wall "
                    f"{s['cpu']:8.2f} s cpu {s['rss_mb']:7.0f} MB (load {s['load1']})",
                    flush=True)
        best = {m: min(v, key=lambda s: s["wall"]) for m, v in samples.items()}
        return {"versions": n, "manifest_bytes": total, "best": best, "samples": samples}
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _net(b: dict, key: str = "wall") -> float:
    """``all``'s time less the ``empty`` run's (what the history itself cost)."""
    return b["all"][key] - b["empty"][key]


def table(results: list[dict]) -> str:
    head = ("| versions | manifests | pylance opens every version | `--all-versions` (ratio) "
            "| empty run | s per GB raw (cpu) | s per GB net of the empty run (cpu) | peak RSS "
            "| `--deep --all-versions` | `--cache` 2nd run after an append | one version "
            "| load |")
    lines = [head, "|" + "---|" * 12]
    for r in results:
        b = r["best"]
        gb = r["manifest_bytes"] / 1e9
        loads = sorted(s["load1"] for v in r["samples"].values() for s in v)
        lines.append(
            f"| {r['versions']:,} | {r['manifest_bytes'] / 1e6:,.0f} MB "
            f"| {b['pylance']['wall']:.2f} s | {b['all']['wall']:.2f} s "
            f"({b['all']['wall'] / b['pylance']['wall']:.2f}x) "
            f"| {b['empty']['wall']:.3f} s "
            f"| {b['all']['wall'] / gb:.1f} ({b['all']['cpu'] / gb:.1f}) "
            f"| {_net(b) / gb:.1f} ({_net(b, 'cpu') / gb:.1f}) "
            f"| {b['all']['rss_mb']:.0f} MB | {b['deep']['wall']:.2f} s "
            f"| {b['cached']['wall']:.2f} s ({b['cached']['wall'] / b['one']['wall']:.2f}x one) "
            f"| {b['one']['wall']:.2f} s | {loads[0]}-{loads[-1]} |")
    return "\n".join(lines)


def fit(results: list[dict], key: str = "wall") -> str:
    """``all``'s net time (``key``: wall or cpu) fitted as ``a x versions + b x GB`` by least
    squares over the sizes, with each size's residual; empty with fewer than two sizes."""
    if len(results) < 2:
        return ""
    import numpy as np

    x = np.array([[r["versions"], r["manifest_bytes"] / 1e9] for r in results], float)
    y = np.array([_net(r["best"], key) for r in results], float)
    (a, b), *_ = np.linalg.lstsq(x, y, rcond=None)
    rest = ", ".join(f"{r['versions']:,}: " + (f"{100 * (yi - xi @ (a, b)) / yi:+.0f}%" if yi > 0
                                                else "n/a")
                     for r, xi, yi in zip(results, x, y, strict=True))
    return (f"net {key} time ~ {1e3 * a:.3f} ms x versions + {b:.2f} s x GB of manifests "
            f"(residuals {rest})")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="1000,2000,5000,10000",
                    help="versions per table, comma-separated")
    ap.add_argument("--reps", type=int, default=3, help="interleaved repetitions (best of)")
    ap.add_argument("--json", default=None, metavar="F", help="write every sample here")
    ap.add_argument("--build-only", action="store_true",
                    help="only grow the cached pylance table to the largest size")
    args = ap.parse_args(argv)
    sizes = sorted(int(s) for s in args.sizes.split(",") if s.strip())
    master = cache_root() / "master"
    master.parent.mkdir(parents=True, exist_ok=True)

    def log(*a, **k):
        print(*a, **k, file=sys.stderr)

    grow(master, max(sizes), log)
    if args.build_only:
        return 0
    print(f"# {os.cpu_count()} cores, load {os.getloadavg()}, {time.strftime('%Y-%m-%d %H:%M')}"
          f" (wall seconds, best of {args.reps}; cpu = user + system of the process)")
    results = []
    for n in sizes:
        r = run_size(master, n, args.reps, log)
        b = r["best"]
        gb = r["manifest_bytes"] / 1e9
        print(f"{n:>6} versions {r['manifest_bytes'] / 1e6:8.1f} MB of manifests: "
              + "  ".join(f"{m} {b[m]['wall']:.2f} s ({b[m]['cpu']:.2f} cpu, "
                          f"{b[m]['rss_mb']:.0f} MB)" for m in MEASURES)
              + f"  all/pylance {b['all']['wall'] / b['pylance']['wall']:.2f}x"
              + f"  all {b['all']['wall'] / gb:.1f} s/GB ({_net(b) / gb:.1f} net of empty)"
              + f"  load {os.getloadavg()[0]:.1f}", flush=True)
        results.append(r)
    print()
    print(table(results))
    for key in ("wall", "cpu"):
        if fit(results, key):
            print(fit(results, key))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
