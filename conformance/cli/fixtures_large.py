"""``lance-conformance fixtures``: generate and verify the golden fixtures.

``fixtures generate [--producer reference|pylance] [--out DIR] [--case ID ...]`` writes every
golden case (:mod:`conformance.golden`) into ``DIR`` (default ``fixtures/golden``); a case that
only one producer can make keeps its own producer. The same inputs give the same logical
contents (rows, versions, tags), not the same bytes (uuids and timestamps differ).

``fixtures verify [--dir DIR] [--no-regenerate] [--case ID ...]`` checks each case: its
``case.json`` against the schema, every file of the shipped ``table/`` against
``expected/files.json``, the reference reader's rows against ``expected/``, the validator on
the table, and a regeneration into a temporary folder compared logically with ``expected/``.
Exit 0 when every case verifies, 1 otherwise.
"""

from __future__ import annotations

import sys
from pathlib import Path


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
