"""Large-value benchmark: time and peak memory of reading long strings, ours against pylance.

Upstream's ``test_file.py::test_writer_maintains_order`` writes 100 Ki strings of 1-5 KiB
(``f"{i}" * 1024``) per file: 570-670 MB 2.2 files holding one full-zip FSST page each. The
reference reader once needed 16-50 bytes of int64 indices per data byte for them (a
``MemoryError`` asking for 5 GiB, or the OOM killer); this benchmark keeps that in view.

Every measurement runs in a child process of its own (so its peak RSS, ``VmHWM``, is its
own): ``pylance`` is ``lance.file.LanceFileReader(path).read_all().to_table()`` for a file and
``lance.dataset(path).to_table()`` for a dataset; ``ours`` is
``reference_impl.file.reader.LanceFileReader(...).read_all()`` / ``open_dataset(path).to_table()``;
``validate`` (with ``--validate``) is ``lance-conformance validate PATH --deep`` in process
(``validate_file`` / ``engine.validate(deep=True)``). Runs are interleaved (ours, pylance,
ours, ...) and the best of ``--repeat`` is kept, time and peak alike; ``base`` is the child's
RSS after its imports, before reading. The tables the two readers return are compared once
per target (a digest of every column's types, validity, lengths and bytes); a difference
exits 1. The 1-minute load average is printed before and after each target.

Usage::

    python tools/bench_big_strings.py                        # writes the 10x smaller repro
    python tools/bench_big_strings.py --rows 102400          # upstream's size (~600 MB each)
    python tools/bench_big_strings.py FILE.lance DATASET/ ... # existing files and datasets
    python tools/bench_big_strings.py --validate --repeat 5

Written with ``--rows N``: a 2.2 and a 2.1 standalone file (``LanceFileWriter``), a 2.0 file,
and 2.1 and 2.2 datasets (``write_dataset``) of the one column ``big_strings``.

Recorded on the shared 2-core machine (24 GiB), 2026-11-27, other helpers' jobs running
(1-minute load in the columns); seconds are wall time of the read alone, peak the child's
``VmHWM`` in GB (the kit's imports take 0.08 GB). ``before`` is the reader as it was (int64
indices of every byte to gather full-zip values, and for the FSST escape masks), best of 2:

======================================  =========  ================  ================  ======
target                                  pylance s  ours s (before)   peak ours (bef.)  load
======================================  =========  ================  ================  ======
10 Ki strings, 2.2 file, 52.7 MB        0.38-0.63  2.38 (11.25)      0.28 (2.08)       9-13
10 Ki strings, 2.1 file, 56.0 MB        0.52-0.54  1.73 (15.23)      0.28 (2.21)       9-13
10 Ki strings, 2.0 file, 41.1 MB        0.09-0.12  0.04 (0.22)       0.17 (0.16)       9-13
10 Ki strings, 2.1 dataset, 55.6 MB     0.63-0.83  2.48 (17.23)      0.29 (2.19)       10-12
10 Ki strings, 2.2 dataset, 53.1 MB     0.50-0.62  2.27 (12.61)      0.28 (2.10)       10-12
upstream's foo-0.lance, 671.8 MB        8.80       18.87 (failed)    1.37 (-)          11
upstream's foo-1.lance, 602.1 MB        7.36       11.39 (failed)    1.29 (-)          11-12
upstream's foo-2.lance, 568.0 MB        6.17       16.89 (failed)    1.25 (-)          12-14
upstream's foo-3.lance, 568.0 MB        5.06       14.10 (failed)    1.26 (-)          13
======================================  =========  ================  ================  ======

Before, upstream's files failed: ``MemoryError`` (5 GiB asked for) under a 10 GiB cap, the
OOM killer at 23 GB without one. pylance peaks at 0.26-0.31 GB on the small targets and
1.27-1.47 GB on upstream's files; every pair of tables was equal. The decode is now linear
in the page's bytes: the rest of our time is Arrow's ``take`` of the FSST tokens (about half),
the escape masks and token rows of each piece, and copying the values out of the zipped
stream.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time


def _digest(table) -> str:
    """A digest of a table's values: per column its type, validity, value lengths and bytes."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    h = hashlib.sha256()
    for name in table.column_names:
        col = table.column(name)
        arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
        h.update(f"{name}:{arr.type}:{len(arr)}".encode())
        h.update(np.asarray(arr.is_valid()).tobytes())
        t = arr.type
        if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t) \
                or pa.types.is_large_binary(t):
            big = arr.cast(pa.large_binary())
            lens = pc.fill_null(pc.binary_length(big), 0)
            h.update(np.asarray(lens).tobytes())
            offs = np.frombuffer(big.buffers()[1], np.int64, len(big) + 1, big.offset)
            if big.buffers()[2] is not None:
                h.update(memoryview(big.buffers()[2])[int(offs[0]):int(offs[-1])])
        else:
            h.update(repr(arr.to_pylist()).encode())
    return h.hexdigest()


def _status_mb(key: str) -> float:
    """``VmRSS`` (now) or ``VmHWM`` (peak) of this process in MB. Not ``ru_maxrss``: Linux
    keeps that across ``exec``, so a child would report its parent's peak at the fork."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) / 1e3
    raise RuntimeError(f"no {key} in /proc/self/status")


def child(reader: str, path: str) -> None:
    """Read ``path`` once with ``reader`` and print one JSON line."""
    is_file = os.path.isfile(path)
    if reader == "pylance":
        import lance
        from lance.file import LanceFileReader as PyReader

        def run():
            if is_file:
                return PyReader(path).read_all().to_table()
            return lance.dataset(path).to_table()
    elif reader == "ours":
        from reference_impl import open_dataset
        from reference_impl.file.reader import LanceFileReader
        from reference_impl.io.local import LocalStore

        def run():
            if is_file:
                d, k = os.path.split(os.path.abspath(path))
                return LanceFileReader(LocalStore(d), k).read_all()
            return open_dataset(path).to_table()
    elif reader == "validate":
        from conformance.engine import validate
        from conformance.engine.file import validate_file

        def run():
            return validate_file(path) if is_file else validate(path, deep=True)
    else:
        raise SystemExit(f"unknown reader {reader}")
    import pyarrow  # noqa: F401 - imports count in the baseline, not in the read

    base = _status_mb("VmRSS")
    t0 = time.perf_counter()
    got = run()
    seconds = time.perf_counter() - t0
    peak = _status_mb("VmHWM")
    out = {"s": seconds, "peak_mb": peak, "base_mb": base}
    if reader == "validate":
        out["errors"] = [f"{v.rule}: {v.message[:200]}" for v in got.violations]
    else:
        out["rows"] = got.num_rows
        out["digest"] = _digest(got)
    print(json.dumps(out))


def _measure(reader: str, path: str) -> dict:
    proc = subprocess.run([sys.executable, __file__, "--child", reader, path],
                          capture_output=True, text=True)
    if proc.returncode:
        return {"error": (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def make(directory: str, rows: int) -> list[str]:
    """Write the files and datasets of the module docstring with pylance; their paths."""
    import lance
    import pyarrow as pa
    from lance.file import LanceFileWriter

    table = pa.table({"big_strings": [f"{i}" * 1024 for i in range(rows)]})
    out = []
    for version in ("2.2", "2.1", "2.0"):
        path = os.path.join(directory, f"file-{version}.lance")
        with LanceFileWriter(path, version=version) as w:
            w.write_batch(table)
        out.append(path)
    for version in ("2.1", "2.2"):
        path = os.path.join(directory, f"table-{version}")
        lance.write_dataset(table, path, data_storage_version=version, mode="overwrite")
        out.append(path)
    return out


def _size_mb(path: str) -> float:
    if os.path.isfile(path):
        return os.path.getsize(path) / 1e6
    return sum(os.path.getsize(os.path.join(d, f)) for d, _s, fs in os.walk(path) for f in fs) / 1e6


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("paths", nargs="*", help="files or datasets (default: write the repro)")
    ap.add_argument("--rows", type=int, default=10 * 1024, help="strings to write (default 10240)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--dir", default=None, help="where to write (default: a temporary folder)")
    ap.add_argument("--validate", action="store_true", help="also time validate --deep")
    ap.add_argument("--child", nargs=2, metavar=("READER", "PATH"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(*args.child)
        return 0
    paths = args.paths or make(args.dir or tempfile.mkdtemp(prefix="bench_big_strings_"),
                               args.rows)
    readers = ["ours", "pylance"] + (["validate"] if args.validate else [])
    print(f"best of {args.repeat} interleaved runs, each in a child process; "
          f"time of the read, peak RSS of the child (GB), base = RSS after imports")
    print(f"{'target':44} {'MB':>7} {'pylance s':>9} {'ours s':>8} {'ratio':>6} "
          f"{'py peak':>8} {'our peak':>8} {'our base':>8} {'valid s':>8} {'val peak':>8} "
          f"{'load':>9}  same")
    differ = failed = 0
    for path in paths:
        load0 = os.getloadavg()[0]
        best: dict = {r: None for r in readers}
        digests: dict = {}
        notes = []
        for _ in range(args.repeat):
            for r in readers:
                got = _measure(r, path)
                if "error" in got:
                    notes.append(f"{r}: {got['error']}")
                    continue
                if r != "validate":
                    digests.setdefault(r, got["digest"])
                elif got["errors"]:
                    notes.append(f"validate: {len(got['errors'])} errors, {got['errors'][0]}")
                b = best[r]
                best[r] = got if b is None else {**got, "s": min(b["s"], got["s"]),
                                                 "peak_mb": min(b["peak_mb"], got["peak_mb"])}
        load1 = os.getloadavg()[0]
        same = len(set(digests.values())) == 1 and len(digests) == 2
        differ += not same
        failed += bool(notes)

        def cell(r, key, scale=1.0, fmt="{:.2f}", best=best):
            return fmt.format(best[r][key] / scale) if best.get(r) else "-"

        ratio = (f"{best['ours']['s'] / best['pylance']['s']:.2f}"
                 if best["ours"] and best["pylance"] else "-")
        name = path if len(path) <= 44 else "..." + path[-41:]
        print(f"{name:44} {_size_mb(path):7.1f} {cell('pylance', 's'):>9} {cell('ours', 's'):>8} "
              f"{ratio:>6} {cell('pylance', 'peak_mb', 1e3):>8} {cell('ours', 'peak_mb', 1e3):>8} "
              f"{cell('ours', 'base_mb', 1e3):>8} {cell('validate', 's'):>8} "
              f"{cell('validate', 'peak_mb', 1e3):>8} {load0:4.1f}-{load1:<4.1f}  "
              f"{'yes' if same else 'NO'}", flush=True)
        for n in dict.fromkeys(notes):
            print(f"    {n}")
    if differ or failed:
        print(f"{differ} targets read differently, {failed} with failures")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
