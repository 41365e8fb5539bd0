"""Benchmark: opening the latest version of a dataset with many fragments and versions.

Builds (once per run, under ``--dir``) a dataset with ``--fragments`` fragments in its latest
version and ``--versions`` versions: pylance 14 writes one small real dataset, whose manifest
is the template; the reference encoder then writes versions 1..N-1 with 10 fragments each
(ids counting on) and version N with every fragment, each with an inline Append transaction,
all pointing at the one real data file. Then it times opening the latest version with
``reference_impl.open_dataset`` and ``lance.dataset`` alternately (``--reps`` repetitions
each, median), and prints JSON with both medians and their ratio (target: within 3x).

Usage: python tools/bench_open.py [--fragments 10000] [--versions 1000] [--reps 7]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time


def build(root: str, n_fragments: int, n_versions: int) -> str:
    import lance
    import pyarrow as pa

    from reference_impl.io.uri import open_store
    from reference_impl.proto import table_pb2, transaction_pb2
    from reference_impl.table import layout, versions
    from reference_impl.table.manifest import encode_manifest_file, read_manifest_file

    uri = os.path.join(root, "ds")
    if os.path.exists(uri):
        shutil.rmtree(uri)
    lance.write_dataset(pa.table({"id": pa.array([1, 2, 3], pa.int64()),
                                  "name": pa.array(["a", "b", "c"])}), uri)
    store = open_store(uri)
    first = versions.latest_entry(store)
    template = read_manifest_file(store, first.key).manifest
    base_frag = template.fragments[0]
    store.delete(first.key)

    def frag(i):
        f = table_pb2.DataFragment()
        f.CopyFrom(base_frag)
        f.id = i
        return f

    all_frags = [frag(i) for i in range(n_fragments)]
    per_version = max(1, n_fragments // max(1, n_versions))
    for v in range(1, n_versions + 1):
        m = table_pb2.Manifest()
        m.CopyFrom(template)
        del m.fragments[:]
        if v == n_versions:
            chosen = all_frags
        else:
            lo = ((v - 1) * per_version) % n_fragments
            chosen = all_frags[lo: lo + per_version]
        m.fragments.extend(chosen)
        m.version = v
        m.max_fragment_id = n_fragments - 1
        txn = transaction_pb2.Transaction(read_version=v - 1, uuid=f"bench-{v}")
        txn.append.fragments.extend(chosen[:1])
        txn_bytes = txn.SerializeToString()
        name = layout.transaction_file_name(v - 1, f"bench-{v}")
        m.transaction_file = name
        store.put(f"_transactions/{name}", txn_bytes)
        store.put(layout.manifest_key(v, layout.SCHEME_V2),
                  encode_manifest_file(m, transaction=txn_bytes))
    store.put(layout.VERSION_HINT_KEY, json.dumps({"version": n_versions}, separators=(",", ":")).encode())
    return uri


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fragments", type=int, default=10_000)
    ap.add_argument("--versions", type=int, default=1_000)
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--dir", default=None, help="work directory (default: a temp dir, removed)")
    args = ap.parse_args(argv)

    import lance

    from reference_impl import open_dataset

    root = args.dir or tempfile.mkdtemp(prefix="bench_open_")
    try:
        t0 = time.perf_counter()
        uri = build(root, args.fragments, args.versions)
        build_s = time.perf_counter() - t0

        # sanity: both agree on what they opened
        ours, theirs = open_dataset(uri), lance.dataset(uri)
        assert ours.version == theirs.version == args.versions
        assert len(ours.get_fragments()) == len(theirs.get_fragments()) == args.fragments
        assert ours.count_rows() == theirs.count_rows()

        ref_t, pl_t = [], []
        for _ in range(args.reps):
            t = time.perf_counter()
            ds = open_dataset(uri)
            _ = ds.version, len(ds.manifest.fragments)
            ref_t.append(time.perf_counter() - t)
            t = time.perf_counter()
            ds2 = lance.dataset(uri)
            _ = ds2.version
            pl_t.append(time.perf_counter() - t)
        ref_med, pl_med = statistics.median(ref_t), statistics.median(pl_t)
        manifest_bytes = ours.manifest_file.size
        print(json.dumps({
            "benchmark": "open_latest",
            "fragments": args.fragments, "versions": args.versions, "reps": args.reps,
            "latest_manifest_bytes": manifest_bytes, "build_seconds": round(build_s, 2),
            "reference_median_s": round(ref_med, 5), "pylance_median_s": round(pl_med, 5),
            "reference_all_s": [round(x, 5) for x in ref_t],
            "pylance_all_s": [round(x, 5) for x in pl_t],
            "ratio_reference_over_pylance": round(ref_med / pl_med, 3) if pl_med else None,
            "target_ratio": 3.0,
        }, indent=2))
    finally:
        if not args.dir:
            shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
