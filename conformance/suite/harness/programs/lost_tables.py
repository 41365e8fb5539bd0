"""A reader and writer that cannot find tables: it looks for ``<uri>.lance`` (its engine
names every table so), finds nothing, and answers every read and every commit with
``NotFound``. No must-reject case may pass for it: not finding a table refuses nothing."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4]))

from conformance.suite.harness.programs import loop  # noqa: E402

HELLO = {"name": "lost-tables", "version": "1",
         "capabilities": {"read": True, "write": True, "ops": ["create", "append"]}}


def handle(method: str, params: dict) -> dict:
    where = params.get("uri", "") + ".lance"
    if method == "read":
        return loop.read_rows(where, params.get("version"), bool(params.get("with_row_id")))
    if method == "apply":
        if params["op"]["op"] != "create" and not Path(where).exists():
            from reference_impl.errors import NotFound

            raise NotFound(f"no table at {where}")
        return loop.apply(where, params["op"], params.get("data"))
    raise loop.Unsupported(method)


if __name__ == "__main__":
    sys.exit(loop.serve(HELLO, handle))
