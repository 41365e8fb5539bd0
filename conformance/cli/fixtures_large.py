"""``lance-conformance fixtures generate-large URI``: write a large deterministic dataset.

``generate-large --rows N --fragments F [--seed S] [--engine local|spark] [--master URL]
[--mode create|overwrite|append] URI`` writes the table of :mod:`conformance.fixtures.large`
(row ``i`` depends only on the seed and ``i``) as F fragments, each one data file, then
commits one transaction. With ``--engine spark`` the data files are written by Spark tasks
(``mapInArrow``) and the driver commits. The ``fixtures`` command module calls
:func:`add_generate_large` with its sub-parsers.

Exit codes: 0 written; 2 usage error, unreachable Spark master, failed Spark job, an
existing dataset with ``--mode create`` or an unreachable store.
"""

from __future__ import annotations

import json
import sys


def _options(pairs: list[str]) -> dict[str, str]:
    opts = {}
    for p in pairs or ():
        if "=" not in p:
            raise ValueError(f"storage option {p!r} is not KEY=VALUE")
        k, v = p.split("=", 1)
        opts[k.strip()] = v
    return opts


def run_generate_large(args) -> int:
    from conformance.engine.spark import SparkEngineError
    from conformance.fixtures.large import generate
    from reference_impl.errors import LanceError

    name = "lance-conformance fixtures generate-large"
    try:
        opts = _options(args.option)
    except ValueError as exc:
        print(f"{name}: {exc}", file=sys.stderr)
        return 2
    if args.rows <= 0 or args.fragments <= 0 or args.rows < args.fragments:
        print(f"{name}: --rows and --fragments must be positive and rows >= fragments",
              file=sys.stderr)
        return 2
    try:
        g = generate(args.uri, num_rows=args.rows, fragments=args.fragments, seed=args.seed,
                     mode=args.mode, engine=args.engine, master=args.master,
                     file_version=args.file_version, storage_options=opts,
                     partitions=args.partitions)
    except (SparkEngineError, LanceError, ValueError, OSError) as exc:
        print(f"{name}: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    print(json.dumps({"uri": g.uri, "version": g.version, "rows": g.rows,
                      "fragments": g.fragments, "seed": g.seed, "engine": args.engine,
                      "elapsed_s": round(g.elapsed_s, 3)}))
    return 0


def add_generate_large(sub) -> None:
    """Add ``generate-large`` to the ``fixtures`` command's sub-parsers ``sub``."""
    g = sub.add_parser("generate-large", help="write a large deterministic dataset",
                       description="Write N deterministic rows as F fragments and commit one "
                                   "transaction; with --engine spark, Spark tasks write the files.")
    g.add_argument("uri", metavar="URI", help="dataset URI (path, file://, s3://)")
    g.add_argument("--rows", type=int, required=True, metavar="N")
    g.add_argument("--fragments", type=int, required=True, metavar="F")
    g.add_argument("--seed", type=int, default=0, metavar="S")
    g.add_argument("--engine", choices=("local", "spark"), default="local")
    g.add_argument("--master", default=None, metavar="URL",
                   help="Spark master: local[*] (default), local[N] or spark://HOST:PORT")
    g.add_argument("--mode", choices=("create", "overwrite", "append"), default="create")
    g.add_argument("--file-version", default="2.1", choices=("2.0", "2.1", "2.2"))
    g.add_argument("--partitions", type=int, default=None, metavar="P",
                   help="Spark tasks (default: up to 4 per core, at most one per fragment)")
    g.add_argument("-o", "--option", action="append", default=[], metavar="KEY=VALUE",
                   help="storage option (pylance names), repeatable")
    g.set_defaults(func=run_generate_large)
