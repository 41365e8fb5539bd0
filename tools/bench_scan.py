"""Full-scan benchmark: our LanceFileReader against pylance 14.0.2's, per file version.

Writes 1,000,000 rows (int64, float64, 20-character string) as 2.0, 2.1 and 2.2 files with
pylance, then for each file times (best of ``--repeat``):

* a raw sequential read of the file's bytes (the I/O floor),
* ``lance.file.LanceFileReader(path).read_all().to_table()`` (pylance),
* ``reference_impl.file.reader.LanceFileReader(store, key).read_all()`` (ours),

and prints seconds, MB/s over the file size, our/pylance ratio, and our CPU seconds (process
time, best of K: steadier than wall time on a shared machine; pylance decodes on several
threads, so its CPU time is not comparable). Both readers' tables are checked equal once.
Usage: ``python tools/bench_scan.py [--rows N] [--repeat K] [--dir D]``.

Recorded on the shared 2-core machine (1,000,000 rows, best of 5, load average 6-8 from other
jobs, so wall times of single runs vary by up to 2x; ranges over 2-3 runs):

=======  =========  ======================  ======================  ==================
version  pylance s  ours s before (ratio)   ours s after (ratio)    our CPU s bef/aft
=======  =========  ======================  ======================  ==================
2.0      0.03-0.06  0.06-0.12 (2.1-3.4x)    0.03-0.05 (0.7-1.7x)    0.025 / 0.037
2.1      0.08       0.28-0.55 (3.6-5.8x)    0.22-0.45 (2.9-5.8x)    0.25 / 0.23-0.25
2.2      0.08       0.28-0.66 (3.3-7.8x)    0.21-0.30 (2.7-3.9x)    0.24-0.26 / 0.19-0.25
=======  =========  ======================  ======================  ==================
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

import numpy as np
import pyarrow as pa


def make_table(rows: int) -> pa.Table:
    rng = np.random.default_rng(42)
    letters = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz0123456789", np.uint8)
    chars = letters[rng.integers(0, len(letters), rows * 20)]
    offsets = np.arange(rows + 1, dtype=np.int32) * 20
    strings = pa.Array.from_buffers(pa.string(), rows, [None, pa.py_buffer(offsets.tobytes()),
                                                        pa.py_buffer(chars.tobytes())])
    return pa.table({"id": pa.array(np.arange(rows, dtype=np.int64)),
                     "x": pa.array(rng.random(rows)),
                     "s": strings})


def best(fn, repeat: int, clock=time.perf_counter) -> float:
    times = []
    for _ in range(repeat):
        t0 = clock()
        fn()
        times.append(clock() - t0)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--dir", default=None)
    args = ap.parse_args()

    import lance

    from reference_impl.file.reader import LanceFileReader
    from reference_impl.io.local import LocalStore

    d = args.dir or tempfile.mkdtemp(prefix="bench_scan_")
    table = make_table(args.rows)
    print(f"{args.rows} rows (int64, float64, 20-char utf8); best of {args.repeat}; dir {d}")
    print(f"{'version':8} {'size MB':>8} {'raw s':>8} {'raw MB/s':>9} {'pylance s':>10} "
          f"{'ours s':>8} {'ours MB/s':>10} {'ours/pylance':>13} {'ours cpu s':>11}")
    for version in ("2.0", "2.1", "2.2"):
        name = f"bench_{version}.lance"
        path = os.path.join(d, name)
        with lance.file.LanceFileWriter(path, table.schema, version=version) as w:
            for b in table.to_batches(max_chunksize=100_000):
                w.write_batch(b)
        size = os.path.getsize(path)
        store = LocalStore(d)

        def raw(path=path):
            with open(path, "rb") as f:
                while f.read(1 << 22):
                    pass

        def theirs(path=path):
            return lance.file.LanceFileReader(path).read_all().to_table()

        def ours(store=store, name=name):
            return LanceFileReader(store, name).read_all()

        got, exp = ours(), theirs()
        assert got.equals(exp), f"{version}: tables differ"
        t_raw, t_pl, t_us = best(raw, args.repeat), best(theirs, args.repeat), best(ours, args.repeat)
        cpu_us = best(ours, args.repeat, time.process_time)
        mb = size / 1e6
        print(f"{version:8} {mb:8.1f} {t_raw:8.3f} {mb / t_raw:9.0f} {t_pl:10.3f} {t_us:8.3f} "
              f"{mb / t_us:10.0f} {t_us / t_pl:13.2f} {cpu_us:11.3f}")


if __name__ == "__main__":
    main()
