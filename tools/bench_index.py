"""Index benchmark: the kit's index checks (``validate --deep``) against pylance's index builds.

Issue 35 asks that ``validate --deep`` of a 1M-row table with a BTREE, a BITMAP and an IVF_PQ
index check its indexes within 2x of the time pylance 14.0.2 takes to build them. This
program writes such a table with pylance (``id`` int64, ``cat`` a string of 16 values, ``vec``
a ``--dim``-dimensional float32 vector; 1,000,000 rows by default, in fragments of 250,000),
then, ``--repeat`` times, interleaved:

* **build**: pylance builds the three indexes (``create_scalar_index(id, BTREE)``,
  ``create_scalar_index(cat, BITMAP)``, ``create_index(vec, IVF_PQ, num_partitions,
  num_sub_vectors)``, each ``replace=True``), each timed;
* **check**: the kit's ``validate(deep=True)`` restricted to the index rules (rule ids
  starting ``INDEX-``: the metadata rules and the content rules that hold each index
  against its data), timed, with the number of findings and the rules that ran.

The best of the repeats of each is kept; the ratio printed is ``check / build`` (the issue's
bound is 2.0). The 1-minute load average is printed before and after (the machine is shared).

Usage::

    python tools/bench_index.py                       # 1M rows, 128-d, best of 3
    python tools/bench_index.py --rows 100000 --dim 32 --repeat 2 --out /tmp/bench-index
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa


def load() -> str:
    return f"{os.getloadavg()[0]:.1f}" if hasattr(os, "getloadavg") else "?"


def write_table(path: Path, rows: int, dim: int) -> None:
    import lance

    rng = np.random.default_rng(35)
    step = 250_000
    for start in range(0, rows, step):
        n = min(step, rows - start)
        ids = np.arange(start, start + n, dtype=np.int64)
        cats = pa.array([f"cat-{i % 16}" for i in range(start, start + n)], pa.string())
        vec = rng.standard_normal((n, dim)).astype(np.float32)
        t = pa.table({"id": ids, "cat": cats,
                      "vec": pa.FixedSizeListArray.from_arrays(pa.array(vec.reshape(-1)), dim)})
        lance.write_dataset(t, str(path), mode="create" if start == 0 else "append",
                            max_rows_per_file=step)


def build(path: Path, partitions: int, sub_vectors: int) -> dict[str, float]:
    import lance

    ds = lance.dataset(str(path))
    out = {}
    t0 = time.perf_counter()
    ds.create_scalar_index("id", index_type="BTREE", replace=True)
    out["BTREE"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    ds.create_scalar_index("cat", index_type="BITMAP", replace=True)
    out["BITMAP"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    ds.create_index("vec", index_type="IVF_PQ", num_partitions=partitions,
                    num_sub_vectors=sub_vectors, replace=True)
    out["IVF_PQ"] = time.perf_counter() - t0
    out["total"] = out["BTREE"] + out["BITMAP"] + out["IVF_PQ"]
    return out


def index_rules() -> list[str]:
    from conformance.rules import all_rules

    return sorted(r.id for r in all_rules() if r.id.startswith("INDEX-"))


def check(path: Path, rules: list[str]) -> tuple[float, list[str], int]:
    from conformance.engine import validate

    t0 = time.perf_counter()
    report = validate(str(path), deep=True, rules=rules)
    seconds = time.perf_counter() - t0
    return seconds, [f"{f.rule}: {f.message[:160]}" for f in report.findings], \
        len(report.rules_checked)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--partitions", type=int, default=256)
    ap.add_argument("--sub-vectors", type=int, default=16)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", default=None, help="table path (kept; default a temporary folder)")
    args = ap.parse_args()
    tmp = None
    if args.out:
        path = Path(args.out)
    else:
        tmp = tempfile.mkdtemp(prefix="bench-index-")
        path = Path(tmp) / "t.lance"
    try:
        print(f"load {load()} at the start; {args.rows} rows, dim {args.dim}, IVF_PQ "
              f"{args.partitions} partitions x {args.sub_vectors} sub-vectors", flush=True)
        if not path.exists():
            t0 = time.perf_counter()
            write_table(path, args.rows, args.dim)
            print(f"written in {time.perf_counter() - t0:.1f} s", flush=True)
        rules = index_rules()
        builds, checks = [], []
        for rep in range(args.repeat):
            b = build(path, args.partitions, args.sub_vectors)
            builds.append(b)
            print(f"[{rep + 1}] build: " + ", ".join(f"{k} {v:.2f} s" for k, v in b.items())
                  + f" (load {load()})", flush=True)
            seconds, findings, ran = check(path, rules)
            checks.append(seconds)
            print(f"[{rep + 1}] check: {seconds:.2f} s, {ran} index rules, "
                  f"{len(findings)} findings (load {load()})", flush=True)
            for f in findings[:10]:
                print(f"      {f}")
        best_build = min(b["total"] for b in builds)
        best_check = min(checks)
        best_each = {k: min(b[k] for b in builds) for k in ("BTREE", "BITMAP", "IVF_PQ")}
        print(f"best build {best_build:.2f} s (" + ", ".join(
            f"{k} {v:.2f}" for k, v in best_each.items()) + f"), best check {best_check:.2f} s:"
              f" ratio check/build {best_check / best_build:.2f} (bound 2.0); load {load()} "
              "at the end", flush=True)
        if not rules:
            print("no INDEX- rule in the catalogue: nothing was checked")
            return 2
        return 0
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
