"""``lance-conformance fixtures cross-release``: build the cross-release corpus and judge it.

For every writer (a PyPI release of pylance or lancedb) the scenarios are written in the
writer's own cached virtualenv, then every root is validated (``--deep``, every version) and
every version is read with the reference reader and compared with the rows the writer itself
read back. Exit 0 when every root is judged as its writer reads it, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--writers", default=None,
                   help="comma-separated releases (pylance==X.Y.Z, lancedb==X.Y.Z); "
                        "default: the full list")
    p.add_argument("--quick", action="store_true",
                   help="the CI subset: one legacy-era release, 0.38.x and the newest")
    p.add_argument("--out", default=None, help="corpus folder (default: the kit's cache)")
    p.add_argument("--force", action="store_true", help="rewrite the corpus even if cached")
    p.add_argument("--no-judge", action="store_true", help="only build the corpus")
    p.add_argument("--json", dest="json_out", default=None, help="write every verdict here")
    p.add_argument("--md", dest="md_out", default=None,
                   help="write the release x scenario table (Markdown) here")
    p.add_argument("--jobs", type=int, default=2, help="writers built at once (default 2)")


def run(args: argparse.Namespace) -> int:
    from conformance.releases import corpus
    from conformance.releases.venvs import Release, ReleaseUnavailable

    names = (args.writers.split(",") if args.writers else
             corpus.QUICK_WRITERS if args.quick else corpus.FULL_WRITERS)
    try:
        releases = [Release.parse(n) for n in names]
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    out_root = Path(args.out) if args.out else corpus.corpus_root()

    def build(rel):
        t = time.monotonic()
        try:
            return rel, corpus.build(rel, out_root / rel.slug, force=args.force), \
                time.monotonic() - t, None
        except (ReleaseUnavailable, RuntimeError, OSError) as e:
            return rel, None, time.monotonic() - t, str(e)

    with ThreadPoolExecutor(max(1, args.jobs)) as pool:
        built = list(pool.map(build, releases))
    verdicts, failed = [], 0
    for rel, folder, secs, err in built:
        if err:
            print(f"{rel.name}: not built: {err}")
            failed += 1
            continue
        if args.no_judge:
            print(f"{rel.name}: built in {secs:.0f} s at {folder}")
            continue
        res = corpus.judge(folder)
        ok = sum(r.ok for r in res)
        print(f"{rel.name}: {ok}/{len(res)} roots judged as the writer reads them "
              f"(built in {secs:.0f} s)")
        for r in res:
            verdicts.append(r.as_dict())
            if r.ok:
                continue
            failed += 1
            print("\n".join(describe(r)))
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(verdicts, indent=1))
    if args.md_out:
        Path(args.md_out).write_text(markdown_table(verdicts))
    if failed:
        return 1
    if not args.no_judge and not verdicts:
        print("fixtures cross-release: no table root was judged", file=sys.stderr)
        return 2
    return 0


def describe(r) -> list[str]:
    """Lines saying why a root is not judged as its writer reads it."""
    from conformance.releases.corpus import AGREED

    rules = sorted({e["rule"] for e in r.errors})
    lines = [f"  {r.scenario}: false errors {rules}" if rules else f"  {r.scenario}:"]
    lines += [f"    {e['rule']}: {e['message'][:160]}" for e in r.errors[:2]]
    bad = [v for v in r.versions if v.outcome not in AGREED]
    shown = set()
    for v in bad:
        key = (v.outcome, v.detail.split(",")[0][:60])
        if key in shown:
            continue
        shown.add(key)
        same = [str(w.version) for w in bad if (w.outcome, w.detail.split(",")[0][:60]) == key]
        label = ("v" if isinstance(v.version, int) else "") + ",".join(same)  # or file stems
        lines.append(f"    {label} {v.outcome}: {v.detail[:160]}")
    lines += [f"    expected finding {rid} not reported" for rid in r.missing_expected]
    return lines


def _family(scenario: str) -> str:
    """``types-2.1`` -> ``types``; ``upgraded-index-btree`` -> ``upgraded``."""
    for prefix in ("upgraded", "downgraded", "index", "lancedb"):
        if scenario.startswith(prefix + "-") or scenario == prefix:
            return prefix
    head = scenario.split("-")
    return "-".join(w for w in head if not (w[:1].isdigit() or w in ("legacy", "default")))


def markdown_table(verdicts: list[dict]) -> str:
    """Release x scenario family: roots judged as their writer reads them, out of all."""
    from collections import defaultdict

    from conformance.releases.corpus import AGREED

    cells: dict[str, dict[str, list[bool]]] = defaultdict(lambda: defaultdict(list))
    notes: dict[str, set[str]] = defaultdict(set)
    for v in verdicts:
        # a row per corpus: the release that wrote it first, or the older release that
        # modified the newest release's table (``downgraded-``)
        chain = v["writer"].split(" then ")
        writer = chain[-1] if v["scenario"].startswith("downgraded-") else chain[0]
        fam = _family(v["scenario"])
        cells[writer][fam].append(bool(v["ok"]))
        if not v["ok"]:
            rules = {e["rule"] for e in v["errors"]}
            outcomes = {x["outcome"] for x in v["versions"]
                        if x["outcome"] not in AGREED}
            notes[writer].add(f"{v['scenario']}: " + ", ".join(sorted(rules | outcomes)))
    families = sorted({f for row in cells.values() for f in row})
    lines = ["| writer | " + " | ".join(families) + " | roots ok |",
             "|---" * (len(families) + 2) + "|"]

    def order(name: str):
        from conformance.releases.venvs import Release

        r = Release.parse(name)
        return (r.package != "pylance", r.version_tuple)

    for writer in sorted(cells, key=order):
        row = cells[writer]
        out = []
        for fam in families:
            oks = row.get(fam)
            out.append("" if not oks else f"{sum(oks)}/{len(oks)}")
        total = [ok for fam in row.values() for ok in fam]
        lines.append(f"| {writer} | " + " | ".join(out) + f" | {sum(total)}/{len(total)} |")
    text = "\n".join(lines) + "\n"
    if any(notes.values()):
        text += "\nRoots not judged as their writer reads them:\n\n"
        for writer in sorted(notes, key=order):
            for n in sorted(notes[writer]):
                text += f"- {writer}: {n}\n"
    return text


def entry(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="lance-conformance fixtures cross-release",
                                description=__doc__.split("\n\n")[0])
    add_arguments(p)
    return run(p.parse_args(argv))
