"""``lance-conformance validate URI``: check a dataset against the rule catalog.

``URI`` may also name one Lance file (an object, not a dataset directory): the file is then
judged by the data-file rules alone (:mod:`conformance.engine.file`).

Exit codes: 0 conforms, 1 violations (a dataset too broken to open included), 2 usage
error or unreachable store / missing dataset, or nothing checked (``--rules`` and the skip
file leave no rule that applies). Skip file: one rule id per line, ``#``
starts a comment (``MANIFEST-009  # we write field 21 on purpose``).

Every format names what the dataset was judged against: the kit's version, the digests of
its case set and of the spec texts, and the writer the latest manifest names
(``writer_version``: library and version).
"""

from __future__ import annotations

import argparse
import os
import sys


def read_skip_file(path: str) -> list[str]:
    """Rule ids listed in a skip file (one per line, ``# reason`` comments)."""
    out = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            rid = line.split("#", 1)[0].strip()
            if rid:
                out.append(rid)
    return out


def _options(pairs: list[str]) -> dict[str, str]:
    opts = {}
    for p in pairs or ():
        if "=" not in p:
            raise ValueError(f"storage option {p!r} is not KEY=VALUE")
        k, v = p.split("=", 1)
        opts[k.strip()] = v
    return opts


class _Progress:
    def __init__(self, stream):
        self.stream = stream

    def __call__(self, what: str, done: int, total: int) -> None:
        width = 30
        filled = int(width * done / total) if total else width
        self.stream.write(f"\r{what:>10} [{'#' * filled}{'.' * (width - filled)}] "
                          f"{done}/{total}")
        if done >= total:
            self.stream.write("\n")
        self.stream.flush()


def run(args) -> int:
    from conformance.engine import DatasetNotFound, validate
    from conformance.rules import all_rules

    known = {r.id for r in all_rules()}
    try:
        rules = [r.strip() for r in args.rules.split(",") if r.strip()] if args.rules else None
        skip = read_skip_file(args.skip_file) if args.skip_file else []
        opts = _options(args.option)
    except (OSError, ValueError) as exc:
        print(f"lance-conformance validate: {exc}", file=sys.stderr)
        return 2
    if args.timeout is not None and not args.timeout > 0:
        print("lance-conformance validate: --timeout must be a positive number of seconds",
              file=sys.stderr)
        return 2
    unknown = sorted(set(rules or []) - known) + sorted(set(skip) - known)
    if unknown:
        print(f"lance-conformance validate: unknown rule ids: {', '.join(unknown)}",
              file=sys.stderr)
        return 2
    if args.all_versions:
        versions = "all"
    elif args.version is not None:
        versions = [args.version]
    else:
        versions = "latest"
    progress = _Progress(sys.stderr) if (args.progress or sys.stderr.isatty()) else None
    # --- refs (branches and tags, conformance/engine/local.py) ---
    refs = getattr(args, "ref", None)
    if refs is not None and not refs.strip():
        print("lance-conformance validate: --ref needs main, a branch or tag name, or all",
              file=sys.stderr)
        return 2
    if refs is not None and getattr(args, "namespace", False):
        print("lance-conformance validate: --ref does not apply to --namespace", file=sys.stderr)
        return 2
    # --- end refs ---
    # --- engine selection: --master belongs to --engine spark ---
    if getattr(args, "master", None) and getattr(args, "engine", "local") != "spark":
        print("lance-conformance validate: --master needs --engine spark", file=sys.stderr)
        return 2
    # --- end engine selection ---
    # --- one Lance file (conformance/engine/file.py) ---
    from conformance.engine.file import is_lance_file, validate_file

    one_file = not getattr(args, "namespace", False) and is_lance_file(args.uri, opts)
    if one_file and (versions != "latest" or refs is not None or args.cache is not None
                     or getattr(args, "engine", "local") == "spark"):
        print("lance-conformance validate: URI is one Lance file: --version, --all-versions, "
              "--ref, --cache and --engine spark apply to datasets only", file=sys.stderr)
        return 2
    if args.cache is not None and getattr(args, "namespace", False):
        print("lance-conformance validate: --cache does not apply to --namespace",
              file=sys.stderr)
        return 2
    # --- end one Lance file ---
    if one_file:
        try:
            report = validate_file(args.uri, rules=rules, skip=skip, storage_options=opts)
        except DatasetNotFound as exc:
            print(f"lance-conformance validate: {exc}", file=sys.stderr)
            return 2
    # --- namespace (directory namespace, conformance/engine/namespace.py) ---
    elif getattr(args, "namespace", False):
        from conformance.engine.namespace import validate_namespace

        try:
            report = validate_namespace(args.uri, storage_options=opts, deep=args.deep,
                                        rules=rules, skip=skip)
        except DatasetNotFound as exc:
            print(f"lance-conformance validate: {exc}", file=sys.stderr)
            return 2
    # --- end namespace ---
    # --- engine selection (spark engine, conformance/engine/spark.py) ---
    elif getattr(args, "engine", "local") == "spark":
        from conformance.engine.spark import SparkEngineError
        from conformance.engine.spark import validate as spark_validate

        try:
            report = spark_validate(args.uri, master=args.master, versions=versions,
                                    deep=args.deep, rules=rules, skip=skip,
                                    storage_options=opts, progress=progress,
                                    timeout=args.timeout, refs=refs, cache=args.cache)
        except (DatasetNotFound, SparkEngineError) as exc:
            print(f"lance-conformance validate: {exc}", file=sys.stderr)
            return 2
    # --- end engine selection ---
    else:
        try:
            report = validate(args.uri, versions=versions, deep=args.deep, rules=rules,
                              skip=skip, storage_options=opts, progress=progress,
                              timeout=args.timeout, refs=refs, cache=args.cache)
        except DatasetNotFound as exc:
            print(f"lance-conformance validate: {exc}", file=sys.stderr)
            return 2
    from conformance import kit

    writer = {} if one_file or getattr(args, "namespace", False) else _writer(args.uri, opts)
    report.provenance = kit.provenance(writer)
    text = report.render(args.format)
    if args.output:
        try:
            with open(args.output, "w", encoding="utf-8") as fh:
                fh.write(text)
        except OSError as exc:
            print(f"lance-conformance validate: cannot write {args.output}: {exc}",
                  file=sys.stderr)
            return 2
    else:
        sys.stdout.write(text)
    if not report.rules_checked:
        print("lance-conformance validate: no rule was checked: --rules and the skip file "
              "leave none that applies here (deep rules need --deep)", file=sys.stderr)
        return 2
    return 0 if report.conforms else 1


def _writer(uri: str, opts: dict) -> dict:
    """The implementation that wrote the latest version: ``{"name", "version"}`` of its
    manifest's ``writer_version`` (empty when the dataset cannot be opened or says nothing)."""
    try:
        from reference_impl.dataset import open_dataset

        wv = open_dataset(uri, storage_options=opts or None).manifest.writer_version
        return {"name": wv.library, "version": wv.version}
    except Exception:  # noqa: BLE001 - the report already says why it cannot be opened
        return {}


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "validate", help="check a dataset against the rule catalog",
        description="Validate a Lance dataset. Exit 0: conforms; 1: violations; "
                    "2: usage error or unreachable store.")
    p.add_argument("uri", metavar="URI",
                   help="dataset URI (path, file://, s3://, memory://), or one Lance file "
                        "(FILE.lance: its data-file rules, always deep)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--version", type=int, default=None, metavar="N",
                   help="check version N of main, or of the branch --ref names (default: "
                        "the latest of each ref)")
    g.add_argument("--all-versions", action="store_true",
                   help="check every version of each ref")
    p.add_argument("--ref", default=None, metavar="main|NAME|all",
                   help="which refs to judge: all (default: main, every branch under tree/ "
                        "and every tag), main, or one branch or tag name (branch:NAME / "
                        "tag:NAME when a name is both); with --version, main unless given")
    p.add_argument("--deep", action="store_true", help="also run deep data-file checks")
    p.add_argument("--format", choices=("text", "json", "junit", "github"), default="text")
    p.add_argument("--rules", default=None, metavar="IDS", help="comma-separated rule ids")
    p.add_argument("--skip-file", default=None, metavar="F",
                   help="file of rule ids to skip, one per line with '# reason'")
    p.add_argument("-o", "--option", action="append", default=[], metavar="KEY=VALUE",
                   help="storage option (pylance names), repeatable")
    p.add_argument("--output", default=None, metavar="FILE", help="write the report here")
    p.add_argument("--timeout", type=float, default=None, metavar="S",
                   help="time limit for the dataset in seconds")
    p.add_argument("--cache", default=None, metavar="PATH",
                   help="keep the verdict of every version and unit in PATH (a .json file, or "
                        "a folder; local or a store URI) and check only what is new or changed "
                        "since the last run with it; the report is the one without --cache")
    p.add_argument("--progress", action="store_true",
                   help="show a progress bar on stderr even when it is not a terminal")
    # --- namespace (directory namespace, conformance/engine/namespace.py) ---
    p.add_argument("--namespace", action="store_true",
                   help="URI is a directory namespace root: validate the namespace "
                        "(NS-* rules) and every table in it")
    # --- end namespace ---
    # --- engine selection (spark engine, conformance/engine/spark.py) ---
    p.add_argument("--engine", choices=("local", "spark"), default="local",
                   help="where deep data-file checks run: this process or Spark tasks")
    p.add_argument("--master", default=None, metavar="URL",
                   help="Spark master for --engine spark: local[*] (default), local[N] "
                        "or spark://HOST:PORT")
    # --- end engine selection ---
    p.set_defaults(func=run)


_ = (argparse, os)
