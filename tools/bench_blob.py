"""Benchmark: blob v2 columns (2.2 datasets) against pylance 14.0.2 in the same run.

N blobs of sizes cycling over 1 KiB .. 256 KiB (inline up to 64 KiB, packed above, by
pylance's default thresholds; ``--dedicated`` adds a few 5 MiB blobs that get sidecars of
their own), in F fragments. Best of ``--repeat`` each:

* write: ``reference_impl.write_dataset`` vs ``lance.write_dataset`` of the same table;
* scan: the descriptors of pylance's dataset (``to_table``), ours vs pylance's;
* take_blobs: every 10th row's bytes, ours (``Dataset.take_blobs``) vs pylance's
  (``take_blobs`` then ``readall``);
* deep validation of pylance's dataset (``validate(deep=True)``) against pylance's scan.

    python tools/bench_blob.py [--rows 2000] [--fragments 4] [--repeat 5] [--dedicated]
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from pathlib import Path


def make_table(rows: int, dedicated: bool):
    import pyarrow as pa

    sizes = [1024 << (i % 9) for i in range(rows)]  # 1 KiB .. 256 KiB
    if dedicated:
        for i in range(0, rows, max(1, rows // 4)):
            sizes[i] = 5 << 20
    values = [bytes([i % 251]) * s for i, s in enumerate(sizes)]
    schema = pa.schema([pa.field("id", pa.int64()),
                        pa.field("blob", pa.large_binary(), metadata={"lance-encoding:blob": "true"})])
    return pa.table({"id": pa.array(range(rows), pa.int64()),
                     "blob": pa.array(values, pa.large_binary())}, schema=schema), sum(sizes)


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=2000)
    ap.add_argument("--fragments", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--dedicated", action="store_true")
    args = ap.parse_args()

    import lance

    import reference_impl as ri
    from conformance.engine.local import validate

    table, total = make_table(args.rows, args.dedicated)
    per_file = -(-args.rows // args.fragments)
    tmp = Path(tempfile.mkdtemp(prefix="bench-blob-"))
    n = {"i": 0}

    def fresh(name):
        n["i"] += 1
        p = tmp / f"{name}-{n['i']}"
        return str(p)

    try:
        w_ours = best(lambda: ri.write_dataset(table, fresh("ours"), data_storage_version="2.2",
                                               max_rows_per_file=per_file), args.repeat)
        w_py = best(lambda: lance.write_dataset(table, fresh("py"), data_storage_version="2.2",
                                                max_rows_per_file=per_file), args.repeat)
        uri = fresh("target")
        lance.write_dataset(table, uri, data_storage_version="2.2", max_rows_per_file=per_file)
        s_ours = best(lambda: ri.open_dataset(uri).to_table(), args.repeat)
        s_py = best(lambda: lance.dataset(uri).to_table(), args.repeat)
        idx = list(range(0, args.rows, 10))
        t_ours = best(lambda: ri.open_dataset(uri).take_blobs("blob", indices=idx), args.repeat)
        t_py = best(lambda: [b.readall() for b in lance.dataset(uri).take_blobs("blob", indices=idx)],
                    args.repeat)
        v_ours = best(lambda: validate(uri, deep=True), args.repeat)
        assert ri.open_dataset(uri).take_blobs("blob", indices=idx[:5]) == \
            [b.readall() for b in lance.dataset(uri).take_blobs("blob", indices=idx[:5])]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    out = {
        "rows": args.rows, "fragments": args.fragments, "blob_bytes": total,
        "write_s": {"ours": round(w_ours, 4), "pylance": round(w_py, 4), "ratio": round(w_ours / w_py, 2)},
        "scan_descriptors_s": {"ours": round(s_ours, 4), "pylance": round(s_py, 4),
                               "ratio": round(s_ours / s_py, 2)},
        "take_blobs_s": {"rows": len(idx), "ours": round(t_ours, 4), "pylance": round(t_py, 4),
                         "ratio": round(t_ours / t_py, 2)},
        "validate_deep_s": {"ours": round(v_ours, 4), "vs_pylance_scan": round(v_ours / s_py, 2)},
    }
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
