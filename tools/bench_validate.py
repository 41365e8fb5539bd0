"""Benchmark: metadata validation of a dataset with 10,000 fragments (target: under 2 s).

The dataset is built quickly: pylance 14.0.2 writes four small fragments, then one manifest
is encoded (``conformance.fixtures.corruption.encode_manifest``) with N fragments that reference those
four real data files round-robin, with fresh fragment ids. Validation reads the manifest,
every data file's footer once (cached by path) and runs every metadata rule.

    python tools/bench_validate.py [--fragments 10000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path


def build(root: Path, n: int) -> str:
    import lance
    import pyarrow as pa

    from conformance.fixtures.corruption import (
        encode_manifest,
        latest_manifest,
        split_manifest,
        v2_name,
    )

    uri = str(root / "ds")
    for i in range(4):
        lance.write_dataset(pa.table({"a": pa.array(range(i * 10, i * 10 + 10), pa.int64()),
                                      "s": pa.array([f"v{j}" for j in range(10)])}), uri,
                            mode="create" if i == 0 else "append")
    path = latest_manifest(Path(uri))
    m, idx, _txn = split_manifest(path.read_bytes())
    templates = [type(f)() for f in m.fragments]
    for t, f in zip(templates, m.fragments, strict=False):
        t.CopyFrom(f)
    del m.fragments[:]
    for i in range(n):
        f = m.fragments.add()
        f.CopyFrom(templates[i % len(templates)])
        f.id = i
    m.max_fragment_id = n - 1
    m.version = m.version + 1
    m.transaction_file = ""
    (Path(uri) / "_versions" / v2_name(m.version)).write_bytes(encode_manifest(m, index=idx))
    return uri


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--fragments", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    from conformance.engine import validate

    tmp = Path(tempfile.mkdtemp(prefix="bench-validate-"))
    try:
        uri = build(tmp, args.fragments)
        times = []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            report = validate(uri)
            times.append(time.perf_counter() - t0)
        errors = sorted(report.rules_violated())
        print(f"fragments={args.fragments} rules={len(report.rules_checked)} "
              f"conforms={report.conforms} errors={errors} "
              f"best={min(times):.3f}s median={sorted(times)[len(times) // 2]:.3f}s")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
