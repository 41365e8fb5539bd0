"""A reader that aborts itself (SIGABRT, as a failed assertion in native code does) when it
reads a table whose path holds ``--on NAME``, after a last line on stderr; with ``--how
hang`` it never answers that read instead, with ``--how garbage`` it answers a line that is
not JSON. Every other read is the reference implementation's: the case it dies on FAILs
("refused by crashing", or a broken protocol), the harness starts it again, and the cases
after it PASS."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4]))

from conformance.suite.harness.programs import loop  # noqa: E402
from reference_impl.dataset import open_dataset  # noqa: E402, F401 - imported before hello

HELLO = {"name": "aborts-on-case", "version": "1",
         "capabilities": {"read": True, "write": False, "ops": [], "row_ids": True}}
MARKER = sys.argv[sys.argv.index("--on") + 1]
HOW = sys.argv[sys.argv.index("--how") + 1] if "--how" in sys.argv else "abort"


def handle(method: str, params: dict) -> dict:
    if method != "read":
        raise loop.Unsupported(method)
    if MARKER in params["uri"]:
        if HOW == "hang":
            time.sleep(3600)  # the harness stops it at its time limit
        if HOW == "garbage":
            sys.stdout.write("read_page: here are the rows\n")
            sys.stdout.flush()
            time.sleep(3600)  # the harness stops it: the stream cannot be trusted
        sys.stderr.write(f"reader.c:42: read_page: assertion failed reading {MARKER}\n")
        sys.stderr.flush()
        os.abort()
    return loop.read_rows(params["uri"], params.get("version"), bool(params.get("with_row_id")))


if __name__ == "__main__":
    sys.exit(loop.serve(HELLO, handle))
