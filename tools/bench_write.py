"""Benchmark: write 1,000,000 rows (int64, float64, 20-char string) with our writer and
with pylance's ``LanceFileWriter``, in the same run, for file versions 2.0, 2.1 and 2.2.

    python tools/bench_write.py [--rows N] [--versions 2.0,2.1,2.2] [--repeat K]

Prints seconds (best of K), file sizes and the ratio ours / pylance, and checks that
pylance reads our file back equal to the input.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa


def make_table(rows: int) -> pa.Table:
    rng = np.random.default_rng(42)
    letters = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz0123456789", dtype=np.uint8)
    chars = letters[rng.integers(0, len(letters), rows * 20)]
    strings = pa.StringArray.from_buffers(
        rows,
        pa.py_buffer(np.arange(0, rows * 20 + 1, 20, dtype=np.int32).tobytes()),
        pa.py_buffer(chars.tobytes()),
    )
    return pa.table(
        {
            "i": pa.array(np.arange(rows, dtype=np.int64)),
            "f": pa.array(rng.random(rows)),
            "s": strings,
        }
    )


def best_of(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--versions", default="2.0,2.1,2.2")
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args()

    import lance.file

    from reference_impl.file.writer import write_lance_file
    from reference_impl.io.local import LocalStore

    table = make_table(args.rows)
    with tempfile.TemporaryDirectory() as tmp:
        store = LocalStore(tmp)
        print(f"rows={args.rows}  columns=int64, float64, utf8(20)")
        print(
            f"{'version':8} {'ours s':>8} {'pylance s':>10} {'ratio':>7} {'ours MB':>8} {'pylance MB':>11}"
        )
        for version in args.versions.split(","):
            ours_key = f"ours-{version}.lance"
            theirs = str(Path(tmp) / f"pylance-{version}.lance")

            def ours(key=ours_key, version=version):
                write_lance_file(store, key, table, version=version)

            def pylance(path=theirs, version=version):
                with lance.file.LanceFileWriter(path, table.schema, version=version) as w:
                    w.write_batch(table)

            t_ours = best_of(ours, args.repeat)
            t_theirs = best_of(pylance, args.repeat)
            back = lance.file.LanceFileReader(str(Path(tmp) / ours_key)).read_all().to_table()
            assert back.equals(table), f"{version}: pylance read back different data"
            size_ours = (Path(tmp) / ours_key).stat().st_size / 1e6
            size_theirs = Path(theirs).stat().st_size / 1e6
            print(
                f"{version:8} {t_ours:8.3f} {t_theirs:10.3f} {t_ours / t_theirs:7.1f} {size_ours:8.1f} {size_theirs:11.1f}"
            )


if __name__ == "__main__":
    main()
