"""Benchmark of the reference writer and its commit loop (run by hand, never in tests).

1. 1,000,000 rows (int64, float64, 20-character string) written by
   ``reference_impl.write_dataset`` and by pylance 14.0.2 in the same run: best of 5
   interleaved runs each, and the ratio (a single write of ours varies by up to 30%
   between runs).
2. Commits per second on local disk: small appends by one writer, then by four
   contending writer processes (every commit races for the next version; the losers
   rebase and retry).

Usage: ``python tools/bench_commit.py [--rows N] [--commits N] [--version 2.0|2.2]``
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import shutil
import tempfile
import time

import numpy as np
import pyarrow as pa


def make_table(n: int) -> pa.Table:
    rng = np.random.default_rng(0)
    ids = np.arange(n, dtype=np.int64)
    strings = pa.array([f"{i:020d}" for i in range(n)])
    return pa.table({"id": ids, "x": rng.random(n), "s": strings})


def bench_write(rows: int, version: str, workdir: str, repeat: int = 5) -> dict:
    """Best of ``repeat`` interleaved runs (ours, pylance, ours, ...), each into a fresh folder."""
    from reference_impl.write import write_dataset

    t = make_table(rows)
    try:
        import lance
    except ImportError:
        lance = None
    ours, theirs = [], []
    for i in range(repeat):
        start = time.perf_counter()
        write_dataset(t, f"{workdir}/ours{i}", data_storage_version=version)
        ours.append(time.perf_counter() - start)
        if lance is not None:
            start = time.perf_counter()
            lance.write_dataset(t, f"{workdir}/theirs{i}", data_storage_version=version)
            theirs.append(time.perf_counter() - start)
    out = {"rows": rows, "ours_s": round(min(ours), 3)}
    if theirs:
        out.update(pylance_s=round(min(theirs), 3), ratio=round(min(ours) / min(theirs), 2))
    return out


def _appender(args) -> int:
    uri, n, version, worker = args
    from reference_impl.io.local import LocalStore
    from reference_impl.table import commit, operations
    from reference_impl.write import write_fragments

    store = LocalStore(uri)
    fields = list(commit.load_version(store, 1).manifest.fields)
    attempts = 0
    for i in range(n):
        frags = write_fragments(store, pa.table({"id": pa.array([worker * 1_000_000 + i], pa.int64())}),
                                fields, file_version=version)
        rv = commit.latest_version_or_zero(store)
        attempts += commit.commit_transaction(store, operations.append(rv, frags)).attempts
    return attempts


def _warm(_: int) -> None:
    import reference_impl.table.commit  # noqa: F401
    import reference_impl.write  # noqa: F401


def bench_commits(commits: int, writers: int, version: str, workdir: str) -> dict:
    from reference_impl.write import write_dataset

    uri = f"{workdir}/commits{writers}"
    write_dataset(pa.table({"id": pa.array([0], pa.int64())}), uri, data_storage_version=version)
    per = commits // writers
    if writers == 1:
        start = time.perf_counter()
        attempts = [_appender((uri, per, version, 0))]
        took = time.perf_counter() - start
    else:
        with mp.get_context("spawn").Pool(writers) as pool:
            pool.map(_warm, range(writers))  # process start-up and imports are not timed
            start = time.perf_counter()
            attempts = pool.map(_appender, [(uri, per, version, w) for w in range(writers)])
            took = time.perf_counter() - start
    return {"writers": writers, "commits": per * writers, "seconds": round(took, 2),
            "commits_per_s": round(per * writers / took, 1),
            "attempts_per_commit": round(sum(attempts) / (per * writers), 2)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--commits", type=int, default=200)
    ap.add_argument("--version", default="2.2")
    args = ap.parse_args()
    workdir = tempfile.mkdtemp(prefix="bench-commit-")
    try:
        try:
            print("write", bench_write(args.rows, args.version, workdir), flush=True)
        except (ImportError, NotImplementedError) as exc:
            print(f"write: our writer cannot write {args.version}: {exc!r}", flush=True)
        print("commit", bench_commits(args.commits, 1, args.version, workdir), flush=True)
        print("commit", bench_commits(args.commits, 4, args.version, workdir), flush=True)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
