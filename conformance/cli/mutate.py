"""``lance-conformance fixtures mutate``: damage copies of the cross-release corpus and compare
the kit's verdict on them with pylance 14.0.2's reading.

The work is done by :mod:`conformance.releases.mutations`. Every mutation copies one table
root of the corpus and changes one of its files (bit flips, bit flips in the file's tail, a run
of zeros, a cut end): a data file by default, or with ``--targets`` a manifest, deletion file,
transaction file, index file or any file. It then runs ``validate --deep`` and the
reference reader on it, and pylance 14.0.2 in its own virtualenv. Exit 0 when no mutation is
a ``problem``, ``misread`` or ``lenient`` one, 1 otherwise (copies that need a look are kept
under ``--work``).

``--targets index-content`` runs the semantic campaign of
:mod:`conformance.releases.index_mutations` instead: edits that keep every file valid and
change what an index says (a key, postings, a row's IVF partition, a code, the coverage of a
stale index), on the tables of the index corpus (``census indexes``; ``--corpus`` is then that
release's folder, default pylance 14.0.2's in the kit's cache), each answered by pylance 14.0.2
with and without the index and judged by the kit. Exit 1 when a mutation makes pylance answer
wrong and the kit does not flag it (``problem``), 2 when no edit applied.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
from pathlib import Path


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--count", type=int, default=100, help="mutations to judge (default 100)")
    p.add_argument("--seed", type=int, default=1, help="the same seed gives the same mutations")
    p.add_argument("--releases", default=None,
                   help="comma-separated corpus folders to draw from (pylance-0.38.3,...); "
                        "default: every one built")
    p.add_argument("--targets", default="data",
                   help="which files to damage, comma-separated: data, manifest, latest (the "
                        "manifest readers open), deletion, transaction, index, or any (every "
                        "file of the table); default data. index-content (alone): the "
                        "semantic index campaign")
    p.add_argument("--edits", default=None,
                   help="with --targets index-content: the edits, comma-separated (default: "
                        "all of conformance.releases.index_mutations.EDITS)")
    p.add_argument("--kinds", default=None,
                   help="damage kinds, comma-separated: flip, tail-flip, zero, truncate, field "
                        "(one protobuf field of a manifest, a transaction file or a 2.x data "
                        "file's column metadata, its page encodings included, given another "
                        "value of the same size); default the first four")
    p.add_argument("--corpus", default=None, help="corpus folder (default: the kit's cache)")
    p.add_argument("--work", default=None,
                   help="where the damaged copies go (default: a folder in the cache)")
    p.add_argument("--reader-python", default=None,
                   help="Python with pylance to compare with (default: the pylance 14.0.2 venv)")
    p.add_argument("--json", dest="json_out", default=None, help="write every judged mutation here "
                                                                 "(one JSON object per line)")


def run(args: argparse.Namespace) -> int:
    from conformance.releases import corpus, mutations
    from conformance.releases.venvs import Release, ReleaseUnavailable, cache_root, ensure_venv

    targets = tuple(t for t in args.targets.split(",") if t)
    if "index-content" in targets:
        if targets != ("index-content",):
            print("--targets index-content cannot be combined with other targets",
                  file=sys.stderr)
            return 2
        return run_index_content(args)
    corpus_dir = Path(args.corpus) if args.corpus else corpus.corpus_root()
    releases = set(args.releases.split(",")) if args.releases else None
    unknown = [t for t in targets if t not in mutations.TARGETS and t != mutations.ANY_TARGET]
    if unknown or not targets:
        print(f"unknown --targets {','.join(unknown) or '(none)'}: choose from "
              f"{', '.join(mutations.TARGETS)} or {mutations.ANY_TARGET}", file=sys.stderr)
        return 2
    kinds = tuple(k for k in args.kinds.split(",") if k) if args.kinds else mutations.KINDS
    bad_kinds = [k for k in kinds if k not in mutations.ALL_KINDS]
    if bad_kinds or not kinds:
        print(f"unknown --kinds {','.join(bad_kinds) or '(none)'}: choose from "
              f"{', '.join(mutations.ALL_KINDS)}", file=sys.stderr)
        return 2
    if args.count < 1:
        print("fixtures mutate: --count must be at least 1", file=sys.stderr)
        return 2
    roots = mutations.corpus_roots(corpus_dir, releases, targets) if corpus_dir.is_dir() else []
    if not roots:
        print(f"no table roots with {args.targets} files in {corpus_dir}: build the corpus "
              "first (lance-conformance fixtures cross-release)", file=sys.stderr)
        return 2
    reader = args.reader_python
    if reader is None:
        try:
            reader = str(ensure_venv(Release.parse(corpus.NEWEST_READER)))
        except ReleaseUnavailable as exc:
            print(f"{corpus.NEWEST_READER} unavailable: {exc}", file=sys.stderr)
            return 2
    work = Path(args.work) if args.work else cache_root() / "mutations"
    out = open(args.json_out, "w") if args.json_out else None  # noqa: SIM115 - closed below
    counts: collections.Counter = collections.Counter()

    def progress(i, j):
        counts[j.verdict] += 1
        if j.verdict != "agree":
            m = j.mutation
            what = f"{m.kind} ({m.detail})" if m.detail else m.kind
            print(f"{j.verdict:9s} {Path(m.source).parent.parent.name}/{Path(m.source).parent.name} "
                  f"{what} {m.file} at {m.offsets}: kit {_said(j.kit)}; pylance {_said(j.pylance)}"
                  f" -> {m.root}")
        if out:
            out.write(json.dumps(mutations.as_json(j)) + "\n")
            out.flush()

    try:
        for _ in mutations.campaign(roots, args.count, args.seed, work, reader, progress, targets,
                                    kinds):
            pass
    finally:
        if out:
            out.close()
    print(f"{args.count} mutations of {len(roots)} roots (seed {args.seed}): "
          + ", ".join(f"{v} {counts[v]}" for v in mutations.VERDICTS))
    if not sum(counts.values()):
        print("fixtures mutate: no mutation was judged", file=sys.stderr)
        return 2
    return 1 if any(counts[v] for v in mutations.FAILING) else 0


def run_index_content(args: argparse.Namespace) -> int:
    from conformance.census import indexes
    from conformance.releases import index_mutations
    from conformance.releases.venvs import Release, ReleaseUnavailable, cache_root, ensure_venv

    edits = tuple(e for e in args.edits.split(",") if e) if args.edits else None
    unknown = sorted(set(edits or ()) - set(index_mutations.EDITS))
    if unknown:
        print(f"unknown --edits {','.join(unknown)}: choose from "
              f"{', '.join(index_mutations.EDITS)}", file=sys.stderr)
        return 2
    if args.count < 1:
        print("fixtures mutate: --count must be at least 1", file=sys.stderr)
        return 2
    folder = Path(args.corpus) if args.corpus else indexes.corpus_root() / "pylance-14.0.2"
    if not folder.is_dir():
        print(f"no index corpus in {folder}: build it first (lance-conformance census indexes)",
              file=sys.stderr)
        return 2
    reader = args.reader_python
    if reader is None:
        try:
            reader = str(ensure_venv(Release.parse("pylance==14.0.2")))
        except ReleaseUnavailable as exc:
            print(f"pylance==14.0.2 unavailable: {exc}", file=sys.stderr)
            return 2
    work = Path(args.work) if args.work else cache_root() / "mutations-index-content"
    counts: collections.Counter = collections.Counter()
    out = open(args.json_out, "w") if args.json_out else None  # noqa: SIM115 - closed below

    def progress(j):
        counts[j.verdict] += 1
        print(f"{j.verdict:11s} {j.edit} on {j.kind}: {j.detail[:100]} | {j.release[:100]} | "
              f"kit {j.kit[:140]}", flush=True)
        if out:
            out.write(json.dumps(index_mutations.as_json(j)) + "\n")
            out.flush()

    try:
        index_mutations.campaign(folder, args.count, args.seed, work, reader, edits, progress)
    finally:
        if out:
            out.close()
    print(f"{sum(counts.values())} index-content mutations of {folder} (seed {args.seed}): "
          + ", ".join(f"{v} {counts[v]}" for v in index_mutations.VERDICTS))
    if not sum(counts[v] for v in index_mutations.VERDICTS if v != "not applied"):
        print("fixtures mutate: no index-content edit applied", file=sys.stderr)
        return 2
    return 1 if any(counts[v] for v in index_mutations.FAILING) else 0


def _said(o) -> str:
    if o.crashed or o.untyped:
        return o.error
    if o.read:
        return "reads" + (f", finds {','.join(o.findings)}" if o.findings else "")
    return f"refuses ({o.error[:120]})"
