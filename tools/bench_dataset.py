"""Dataset-level benchmark: what users call, against pylance 14.0.2 in the same process.

For every row count, storage version and column kind it times, best of ``--repeat``
*interleaved* runs (ours, pylance, ours, pylance ...: a noisy neighbour slows both alike;
more rounds for a cell of a few milliseconds, see :func:`interleaved`):

* ``scan``: ``reference_impl.open_dataset(uri).to_table()`` against
  ``lance.dataset(uri).to_table()`` (the dataset pylance wrote; tables checked equal once);
* ``deep``: ``conformance.engine.validate(uri, deep=True)`` (every rule, every page of every
  data file decoded) against pylance's ``to_table()`` of the same dataset;
* ``write``: ``reference_impl.write_dataset`` against ``lance.write_dataset`` of the same
  table into a fresh directory (pylance's default 1,048,576 rows per file for both).

Column kinds (``--kinds``): ``ints`` (int64, int32), ``floats`` (float64, float32),
``strings`` (20-character hex), ``lists`` (list<int32> of 0-7 items), ``structs``
(struct<int64, float64, string>), ``nullable`` (int64, float64, string with 10% nulls),
``mixed`` (20 columns cycling through the kinds above), ``basic`` (int64, float64, 20-character
hex string: the README's table). Each line prints the seconds, ours/pylance and the machine's
load average (``os.getloadavg()``) at that moment: other jobs share the cores, so the
interleaved ratio matters more than the absolute times.

Each line also gives the best CPU seconds of each side (``time.process_time``, all threads of
the process) and their ratio: on a machine shared with other jobs the wall time depends on
how the scheduler shares the cores, the CPU time on the work done. ``--busy 2`` loads both
cores of this machine with two ``python -c "while True: pass"`` processes, each pinned to
one core with ``taskset``, for the whole run (the datasets are written first if missing,
under the same load). The header says whether the compiled kernels are on
(``LANCE_CONFORMANCE_KERNELS=0`` times the readable path).

Usage::

    python tools/bench_dataset.py                          # 1M rows, every version and kind
    python tools/bench_dataset.py --rows 10000000 --kinds basic,mixed --ops scan,deep
    python tools/bench_dataset.py --versions 2.2 --repeat 7 --json
    python tools/bench_dataset.py --kinds basic --busy 2   # both cores busy
    python tools/bench_dataset.py --rows 1000000,10000000 --markdown run.md  # the README's table

Where the time goes (cProfile of ``to_table`` and ``tools/bench_dataset.py``, 1M rows, one
decode thread, on a machine at load 5-17 from other jobs: read the numbers as proportions):

* 2.0, dataset path (before): the scan read each file with one ``get`` (a third of the time),
  then decoded its columns one after another with a decoder of its own; every ``Flat`` and
  ``Binary`` page was copied again (``bytes(...)``) and strings were UTF-8-validated by a full
  Arrow validation. ``--deep`` decoded every 2.0 file twice (the reader for the FILE/ENC
  rules, a whole-file ``get`` and the second decoder for the 2.0 rules).
* 2.0, file path (before): ranged page reads, but the reader walked and decoded every field
  of the file even for a projection, one field after another.
* 2.0 now (both paths are one): memory-mapped page reads of the wanted columns only,
  zero-copy ``Flat``/``Binary`` buffers, an ASCII check (``max < 0x80``) in place of the full
  UTF-8 validation when it suffices; 0.4 / 0.4 / 6.7 ms of CPU for the int64 / float64 / string
  columns of ``basic``. Faster than pylance's scan in this benchmark.
* 2.1 / 2.2 (file and dataset path alike): at 1M rows each column is one mini-block page, so
  page-level threads could not help. The string column takes 3/4 of the time: FSST is a
  ``take`` of 10.5M tokens from the 512-entry symbol list (40-50% of the column), the rest is
  gathering chunk buffers and the variable-width offsets; int64/float64 are FastLanes
  bit-unpacking (``unpack_blocks``, one numpy step per bit row) plus rep/def unravelling,
  which for a column without levels did six passes over the rows for nothing (now none).
  Lists and nullable columns spent most of their time decoding rep/def levels chunk group by
  chunk group (one group per distinct (count, size), about one per chunk: ~1,500 numpy
  rounds per page); now every chunk's levels are unpacked by one call
  (``bitpacking.decode_out_of_line_chunks``), 2.5x faster on ``lists``.
* 2.1 / 2.2 lists (issue 21, second pass; load 1-2): pylance writes a list column as many small
  pages (56 pages of ~18K rows per 1M-row file), and each page cost ~2.5 ms of small numpy
  steps that hold the GIL, so the decode threads made the 10M scan slower (1.38 s on two
  threads, 1.07 s on one). Now consecutive pages of like layout are decoded as one
  (``reader._page_groups``, ``mini_block.decode_pages``: up to 256K rows per group), the
  levels of all chunks are gathered from one pool instead of a scattered index, and
  ``repdef.unravel`` picks slots by index (masked indexing mispredicts on random levels: 250
  us against 50 us per 65K slots), keeps the levels ``uint16`` and skips the item layers'
  gathers when none is null. 1M lists: 0.215 -> 0.08 s; 10M lists: 1.38 -> 0.67 s.
  Tried and dropped: unpacking all rows of a FastLanes block in one broadcast shift (2-4x
  slower than the row loop on 1000 blocks: numpy's shift by an array is not vectorised).
* Threads: fields of a file, fragments of a dataset, runs of chunks of a large mini-block page
  (``reader._decode_page_split``) and pieces of a large FSST page are decoded on the decode
  threads; nested calls share one pool (``reference_impl/file/parallel.py``: the caller runs
  what no thread has started). What remains is CPU: our 2.1/2.2 decode spends 3-4x pylance's
  CPU time on ``basic``, which threads cannot hide on 2 cores.
* Writing: each file was built by appending every buffer to one ``bytearray`` (copied again
  as it grew), then copied to ``bytes`` and fsynced; now the buffers are kept as views and
  written once with ``writelines`` and no fsync (pylance fsyncs nothing; the commit's manifest
  write still does); fields of a file and the files of a ``write_dataset`` are encoded on the
  decode threads (the bytes do not depend on it). 2.1/2.2 writes spend their time in the FSST
  encoder and in the per-chunk loop of ``encode_mini_block``.

* Writing, second pass (issue 21; profile of 1M rows, one thread): the mixed table spent 1.3 s
  in FSST (training ran all five rounds on every page), 1.25 s in the per-chunk loop of
  ``encode_mini_block`` and its row-at-a-time bit-packing, 0.4 s shredding lists and 0.3 s in
  the dictionary test. Now mini-block pages are assembled for all chunks at once
  (``encode_mini_block_fast``), FastLanes packing is done by reshapes, FSST training stops
  at a fixed point, the dictionary and constant tests are bounded before they sort, and
  pages of a field are encoded on the threads (all beside their readable forms, byte for
  byte: ``conformance/suite/file/test_writer_fast_paths.py``). A column with definition
  levels only is no longer cut every 65,536 rows (pylance leaves it one page per flush). At
  10M rows ``write_dataset`` held every file's pages at once (one map over all files let idle
  threads start more): peak RSS 9.1 GB for a 2.8 GB table, half the CPU time in page faults;
  files now go a wave of ``threads()`` at a time (4.0 GB).
* Third pass (issue 21, 2026-11-26; cProfile with one decode thread, load 1-2): a 10M-row
  ``basic`` scan at 2.2 spent 1.43 s of CPU: Arrow's ``take`` of FSST tokens 0.71 s (about
  6.3 ns a token whatever the index type, offset width or piece size: the floor without a
  kernel of our own), 0.13 s joining the FSST pieces of a page, 0.04 s in
  ``combine_chunks`` (pyarrow copies even a single chunk), 0.11 s FastLanes unpacking. Now a
  single chunk is used as it is and a page is expanded whole when the threads have other
  items (``parallel.saturated``): 1.16 s, of which ``take`` is 60%. Writing list columns
  spent about a quarter of its time in per-page steps, as pages were cut at 65,536 levels
  like pylance's (58 pages per 1M rows); they are now cut at 2^20 levels (4-5 pages), which
  every release that reads 2.1/2.2 reads identically.

* Fourth pass (issue 37, 2026-12-02; cProfile with one decode thread, CPU time, 1M ``basic``
  written by pylance 14.0.2): a 2.1/2.2 scan spent 37-40% in Arrow's ``take`` of FSST
  tokens and 56-62% in FSST decoding in all, 13-16% in FastLanes unpacking; a write half
  its time in the FSST tokeniser, a fifth in FastLanes packing. Those loops now have
  compiled twins (``reference_impl/file/kernels``, numba): a 2.2 scan's CPU went from 0.19
  to 0.10 s (pylance: 0.06-0.10 s on the same machine), of which FSST expansion 0.031 s
  (3 ns a token), sizing the values 0.016 s, gathering chunk bytes 0.02 s (a copy, left: the
  readable ``memcpy`` per chunk is as fast as a kernel), FastLanes unpacking 0.01 s.
* Fifth pass (issue 37, 2026-12-02 afternoon; same profile, load 10-16): FSST decoding was
  still ~40% of a 2.1/2.2 scan, the sizing pass nearly half of it; the string column's
  ``variable`` chunks (offsets gathered, widened, differenced, masked, summed; bytes
  gathered) a quarter. Now an FSST page is sized while it is expanded, into an output bounded
  by the longest symbol (``kernels/fsst._expand_values``; 0.138 -> 0.059 s for pylance's 1M
  hex strings), and the ``variable`` chunks are one compiled walk (``kernels/variable.py``):
  one-thread scan CPU 0.15-0.16 -> 0.10-0.11 s; with the offsets of word-aligned chunks read
  as words, the CPU ratio to pylance is 1.2-1.45 (from 1.55-2.0 in the same conditions, load
  12-15). Writes barely moved: a four-run interleaved tokeniser, a look-up-every-byte-first
  tokeniser and register-built FastLanes packing were no faster on this machine at that load.

Recorded in the README (2026-11-26, two full runs, idle machine, load 0.5-3.9). History of
1M lists at 2.1, ours/pylance scan / write: 33.7 / 30 (first version), 8.4 / 6.3 (first pass,
load 7-13), 1.9 / 1.8-2.1 (second pass), 1.6-1.7 / 0.77 now.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

KINDS = ("ints", "floats", "strings", "lists", "structs", "nullable", "mixed", "basic")
VERSIONS = ("2.0", "2.1", "2.2", "2.3")
OPS = ("scan", "deep", "write")


def _hex_strings(rng, n: int, width: int = 20) -> pa.Array:
    digits = np.frombuffer(b"0123456789abcdef", np.uint8)
    chars = digits[rng.integers(0, 16, n * width)]
    offsets = np.arange(n + 1, dtype=np.int32) * width
    return pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(chars)])


def _with_nulls(rng, arr: pa.Array, rate: float = 0.1) -> pa.Array:
    mask = pa.array(rng.random(len(arr)) < rate)
    return pc.if_else(mask, pa.scalar(None, arr.type), arr)


def _column(kind: str, rng, n: int, k: int) -> tuple[str, pa.Array]:
    """The ``k``-th column of a ``kind`` table."""
    if kind == "ints":
        return ("i64", pa.array(rng.integers(0, 1 << 40, n))) if k == 0 else (
            "i32", pa.array(rng.integers(-1000, 1000, n, dtype=np.int32)))
    if kind == "floats":
        return ("f64", pa.array(rng.random(n))) if k == 0 else (
            "f32", pa.array(rng.random(n, dtype=np.float32)))
    if kind == "strings":
        return "s", _hex_strings(rng, n)
    if kind == "lists":
        lens = rng.integers(0, 8, n)
        offsets = np.zeros(n + 1, np.int32)
        np.cumsum(lens, out=offsets[1:])
        values = pa.array(rng.integers(0, 1 << 20, int(offsets[-1]), dtype=np.int32))
        return "l", pa.ListArray.from_arrays(pa.array(offsets), values)
    if kind == "structs":
        return "st", pa.StructArray.from_arrays(
            [pa.array(rng.integers(0, 1 << 40, n)), pa.array(rng.random(n)), _hex_strings(rng, n, 12)],
            names=["a", "b", "c"])
    if kind == "nullable":
        base = [pa.array(rng.integers(0, 1 << 40, n)), pa.array(rng.random(n)), _hex_strings(rng, n)]
        return ("ni", "nf", "ns")[k], _with_nulls(rng, base[k])
    raise ValueError(kind)


def make_table(kind: str, rows: int, seed: int = 7) -> pa.Table:
    rng = np.random.default_rng(seed)
    if kind == "basic":
        return pa.table({"i": pa.array(np.arange(rows, dtype=np.int64)), "f": pa.array(rng.random(rows)),
                         "s": _hex_strings(rng, rows)})
    if kind == "mixed":
        cycle = [("ints", 0), ("floats", 0), ("strings", 0), ("lists", 0), ("structs", 0),
                 ("nullable", 0), ("nullable", 2), ("ints", 1), ("floats", 1), ("nullable", 1)]
        cols = {}
        for j in range(20):
            sub, k = cycle[j % len(cycle)]
            name, arr = _column(sub, rng, rows, k)
            cols[f"{name}_{j}"] = arr
        return pa.table(cols)
    width = {"ints": 2, "floats": 2, "nullable": 3}.get(kind, 1)
    return pa.table(dict(_column(kind, rng, rows, k) for k in range(width)))


#: a cell's rounds go on until both sides together took this long (see :func:`interleaved`)
MIN_SECONDS = 0.5
MAX_ROUNDS_FACTOR = 10


def interleaved(ours, theirs, repeat: int, min_seconds: float = MIN_SECONDS) -> tuple[float, float]:
    """Best seconds of ``ours`` and of ``theirs`` over alternating runs; the best CPU seconds
    of each (``time.process_time``: every thread of this process) are left in
    :data:`LAST_CPU`. On a machine shared with other jobs the wall time depends on how the
    scheduler shares the cores; the CPU time is the work done.

    At least ``repeat`` rounds; a cell whose rounds take under ``min_seconds`` in all goes
    on (up to ``MAX_ROUNDS_FACTOR * repeat`` rounds) until they do, as ``timeit`` sizes its
    loop: a call of a few milliseconds is shorter than a scheduler's time slice on a busy
    machine, and three tries of it measure the slices, not the call."""
    best_o = best_t = float("inf")
    cpu_o = cpu_t = float("inf")
    spent = 0.0
    rounds = 0
    while rounds < repeat or (spent < min_seconds and rounds < MAX_ROUNDS_FACTOR * repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        ours()
        took = time.perf_counter() - t0
        best_o = min(best_o, took)
        cpu_o = min(cpu_o, time.process_time() - c0)
        t0, c0 = time.perf_counter(), time.process_time()
        theirs()
        took2 = time.perf_counter() - t0
        best_t = min(best_t, took2)
        cpu_t = min(cpu_t, time.process_time() - c0)
        spent += took + took2
        rounds += 1
    LAST_CPU[:] = [cpu_o, cpu_t]
    return best_o, best_t


#: best CPU seconds (ours, pylance) of the last :func:`interleaved` call
LAST_CPU: list = [0.0, 0.0]


def _fresh(root: str, name: str) -> str:
    path = os.path.join(root, name)
    shutil.rmtree(path, ignore_errors=True)
    return path


def run_case(root: str, rows: int, version: str, kind: str, ops, repeat: int,
             min_seconds: float = MIN_SECONDS):
    """Yield one record per operation of one case (each timed by :func:`interleaved`)."""
    import lance

    import reference_impl as ri
    from conformance.engine import validate

    table = make_table(kind, rows)
    uri = os.path.join(root, f"{kind}-{rows}-{version}")
    if not os.path.exists(uri):
        lance.write_dataset(table, uri, data_storage_version=version)

    def line(op, o, t, **extra):
        rec = {"op": op, "rows": rows, "version": version, "kind": kind, "ours_s": round(o, 4),
               "pylance_s": round(t, 4), "ratio": round(o / t, 2), "load1": round(os.getloadavg()[0], 1),
               "ours_cpu_s": round(LAST_CPU[0], 4), "pylance_cpu_s": round(LAST_CPU[1], 4),
               "cpu_ratio": round(LAST_CPU[0] / LAST_CPU[1], 2) if LAST_CPU[1] else None}
        rec.update(extra)
        return rec

    if "scan" in ops:
        theirs = lance.dataset(uri)
        got = ri.open_dataset(uri).to_table()
        want = theirs.to_table()
        same = got.equals(want.cast(got.schema)) if got.schema != want.schema else got.equals(want)
        if not same:
            print(f"  !! {kind} {version}: our scan differs from pylance's", file=sys.stderr)
        o, t = interleaved(lambda: ri.open_dataset(uri).to_table(), lambda: lance.dataset(uri).to_table(),
                           repeat, min_seconds)
        yield line("scan", o, t, equal=same)
    if "deep" in ops:
        report = validate(uri, deep=True)
        errors = [f.rule for f in report.findings if f.severity == "error"]
        o, t = interleaved(lambda: validate(uri, deep=True), lambda: lance.dataset(uri).to_table(),
                           repeat, min_seconds)
        yield line("deep", o, t, errors=len(errors))
    if "write" in ops:
        o, t = interleaved(
            lambda: ri.write_dataset(table, _fresh(root, "w-ours"), data_storage_version=version),
            lambda: lance.write_dataset(table, _fresh(root, "w-pylance"), data_storage_version=version),
            repeat, min_seconds)
        yield line("write", o, t)


def markdown_table(records: list, title: str) -> str:
    """The README's table of a run: a row per row count and column kind, a column per
    storage version, each cell ``scan / deep / write`` as ours / pylance wall-time ratios with
    the CPU-time ratios in brackets."""
    rows = sorted({(r["rows"], r["kind"]) for r in records}, key=lambda k: (-k[0], k[1]))
    versions = sorted({r["version"] for r in records})
    ops = [op for op in OPS if any(r["op"] == op for r in records)]
    at = {(r["rows"], r["kind"], r["version"], r["op"]): r for r in records}

    def cell(key):
        parts = []
        for op in ops:
            r = at.get((*key, op))
            if r is None:
                parts.append("")
            else:
                parts.append(f"{r['ratio']:.2f} ({r['cpu_ratio']:.2f})" if r.get("cpu_ratio")
                             else f"{r['ratio']:.2f}")
        return " / ".join(parts) if any(parts) else ""

    def label(n):
        return f"{n // 1_000_000}M" if n % 1_000_000 == 0 else str(n)

    lines = [f"| {title}: {' / '.join(ops)} | " + " | ".join(versions) + " |",
             "|---" * (len(versions) + 1) + "|"]
    for n, kind in rows:
        lines.append(f"| {label(n)} {kind} | " + " | ".join(cell((n, kind, v)) for v in versions) + " |")
    loads = [r["load1"] for r in records if r.get("load1") is not None]
    if loads:
        lines.append("")
        lines.append(f"1-minute load {min(loads):.1f}-{max(loads):.1f} during the run.")
    return "\n".join(lines) + "\n"


def start_busy(n: int) -> list:
    """``n`` processes spinning ``while True: pass``, process ``i`` pinned to core ``i`` (mod
    the cores) with ``taskset`` where it exists: the "both cores busy" condition."""
    import subprocess

    procs = []
    cores = os.cpu_count() or 1
    for i in range(n):
        cmd = [sys.executable, "-c", "while True: pass"]
        if shutil.which("taskset"):
            cmd = ["taskset", "-c", str(i % cores), *cmd]
        procs.append(subprocess.Popen(cmd))
    time.sleep(1.0)
    return procs


def stop_busy(procs: list) -> None:
    for p in procs:
        p.kill()
        p.wait()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", default="1000000", help="comma-separated row counts (1000000,10000000)")
    ap.add_argument("--versions", default=",".join(VERSIONS))
    ap.add_argument("--kinds", default=",".join(KINDS))
    ap.add_argument("--ops", default=",".join(OPS))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--dir", default=None, help="keep the datasets here (reused across runs)")
    ap.add_argument("--json", action="store_true", help="one JSON object per line")
    ap.add_argument("--markdown", default=None, metavar="FILE",
                    help="also write the run as the README's table (ratios, CPU ratios in brackets)")
    ap.add_argument("--busy", type=int, default=0,
                    help="load the machine with this many spinning processes, pinned one a core "
                         "(2 on this machine: both cores busy) while timing")
    ap.add_argument("--min-seconds", type=float, default=MIN_SECONDS,
                    help="a cell whose --repeat rounds take less than this in all goes on until "
                         f"they take this long, at most {MAX_ROUNDS_FACTOR}x --repeat rounds "
                         f"(default {MIN_SECONDS})")
    args = ap.parse_args(argv)
    from reference_impl.file import kernels

    ops = args.ops.split(",")
    root = args.dir or tempfile.mkdtemp(prefix="bench-dataset-")
    os.makedirs(root, exist_ok=True)
    print(f"# cores {os.cpu_count()}, load {os.getloadavg()}, data in {root}, kernels "
          f"{'on' if kernels.enabled() else 'off'}, busy {args.busy}", flush=True)
    busy = start_busy(args.busy) if args.busy else []
    if not args.json:
        print(f"{'op':<6}{'rows':>10} {'ver':<4}{'kind':<10}{'ours s':>9}{'pylance s':>11}{'ratio':>7}"
              f"{'load':>6}{'cpu ratio':>10}", flush=True)
    records = []
    try:
        for rows in (int(r) for r in args.rows.split(",")):
            for version in args.versions.split(","):
                for kind in args.kinds.split(","):
                    for rec in run_case(root, rows, version, kind, ops, args.repeat,
                                        args.min_seconds):
                        records.append(rec)
                        if args.json:
                            print(json.dumps(rec), flush=True)
                        elif rec["ratio"] is None:
                            print(f"{rec['op']:<6}{rows:>10} {version:<4}{kind:<10}  ({rec['note']})")
                        else:
                            print(f"{rec['op']:<6}{rows:>10} {version:<4}{kind:<10}{rec['ours_s']:>9.3f}"
                                  f"{rec['pylance_s']:>11.3f}{rec['ratio']:>7.2f}{rec['load1']:>6.1f}"
                                  f"{rec['cpu_ratio'] or 0:>10.2f}",
                                  flush=True)
    finally:
        stop_busy(busy)
        if args.dir is None:
            shutil.rmtree(root, ignore_errors=True)
    if args.markdown:
        title = "ours / pylance" + (f", {args.busy} spinning processes" if args.busy else "")
        with open(args.markdown, "w") as fh:
            fh.write(markdown_table(records, title))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
