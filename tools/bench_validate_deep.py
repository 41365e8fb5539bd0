"""Benchmark: ``--deep`` validation throughput against pylance's full scan of the same
dataset in the same run, and against a raw read of its bytes (issue 5; target within 3x
of the scan).

pylance 14.0.2 writes N rows (int64, float64, 20-character string) as F fragments in file
version 2.2 (or ``--version``); then, best of ``--repeat``:

* raw: read every file of the dataset once (the I/O floor);
* pylance: ``lance.dataset(uri).to_table()``;
* ours: ``conformance.engine.validate(uri, deep=True)`` (every rule, every page decoded).

    python tools/bench_validate_deep.py [--rows 1000000] [--fragments 8] [--version 2.2]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time
from pathlib import Path


def build(uri: str, rows: int, fragments: int, version: str) -> None:
    import lance
    import numpy as np
    import pyarrow as pa

    rng = np.random.default_rng(7)
    table = pa.table({
        "i": pa.array(rng.integers(0, 1 << 40, rows), pa.int64()),
        "f": pa.array(rng.random(rows), pa.float64()),
        "s": pa.array([f"{x:020d}" for x in rng.integers(0, 10**12, rows)]),
    })
    lance.write_dataset(table, uri, data_storage_version=version,
                        max_rows_per_file=-(-rows // fragments))


def raw_read(root: Path) -> int:
    total = 0
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            with open(os.path.join(dirpath, name), "rb") as fh:
                total += len(fh.read())
    return total


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--fragments", type=int, default=8)
    ap.add_argument("--version", default="2.2")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)

    import lance

    from conformance.engine import validate

    tmp = Path(tempfile.mkdtemp(prefix="bench-deep-"))
    try:
        uri = str(tmp / "ds")
        build(uri, args.rows, args.fragments, args.version)
        size = raw_read(Path(uri))
        report = validate(uri, deep=True)
        assert report.conforms, report.render("text")
        t_raw = best(lambda: raw_read(Path(uri)), args.repeat)
        t_pylance = best(lambda: lance.dataset(uri).to_table(), args.repeat)
        t_ours = best(lambda: validate(uri, deep=True), args.repeat)
        mb = size / 1e6
        result = {
            "rows": args.rows, "fragments": args.fragments, "version": args.version,
            "size_mb": round(mb, 1), "raw_s": round(t_raw, 3), "pylance_scan_s": round(t_pylance, 3),
            "deep_validate_s": round(t_ours, 3), "ratio_to_pylance": round(t_ours / t_pylance, 2),
            "deep_mb_per_s": round(mb / t_ours, 1), "raw_mb_per_s": round(mb / t_raw, 1),
            "rules": len(report.rules_checked),
        }
        print(json.dumps(result))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
