"""A reader without time travel: it declares ``"time_travel": false`` in ``hello`` and
reads only the latest version (``version`` null); a read of a given version is answered
``unsupported``. Judged on its latest reads, each golden case PASSes listing the reads it
did not make.

With ``--claims-time-travel`` it declares time travel (the default) but still reads the
latest version whatever version is asked: each older read then FAILs on its own."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4]))

from conformance.suite.harness.programs import loop  # noqa: E402

CLAIMS = "--claims-time-travel" in sys.argv
HELLO = {"name": "no-time-travel", "version": "1",
         "capabilities": {"read": True, "write": False, "ops": [], "row_ids": True,
                          **({} if CLAIMS else {"time_travel": False})}}


def handle(method: str, params: dict) -> dict:
    if method != "read":
        raise loop.Unsupported(method)
    if params.get("version") is not None and not CLAIMS:
        raise loop.Unsupported("this engine reads the latest version only")
    return loop.read_rows(params["uri"], None, bool(params.get("with_row_id")))


if __name__ == "__main__":
    sys.exit(loop.serve(HELLO, handle))
