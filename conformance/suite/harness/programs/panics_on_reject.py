"""A reader and writer that panics where it should refuse: when the reference
implementation refuses a read or a commit, it prints a Rust-style panic to stderr and
aborts its process (SIGABRT, ``panic = "abort"``); with ``--survive`` it answers the error
class ``Panic`` instead, as an engine that catches its panics does. Either way a crash, never
a refusal: the must-reject cases FAIL; the others PASS."""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4]))

from conformance.suite.harness.programs import loop  # noqa: E402

HELLO = {"name": "panics-on-reject", "version": "1",
         "capabilities": {"read": True, "write": True, "ops": ["create", "append"], "row_ids": True}}
SURVIVE = "--survive" in sys.argv


class Panic(Exception):
    """A panic the program caught: answered with the error class ``Panic``."""


def _panic(exc: BaseException):
    if SURVIVE:
        raise Panic(f"panicked at src/read.rs:7:9: {exc}") from None
    sys.stderr.write(f"thread 'main' panicked at src/read.rs:7:9:\n{exc}\n"
                     "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n")
    sys.stderr.flush()
    os.abort()


def handle(method: str, params: dict) -> dict:
    try:
        if method == "read":
            return loop.read_rows(params["uri"], params.get("version"), bool(params.get("with_row_id")))
        if method == "apply":
            return loop.apply(params["uri"], params["op"], params.get("data"))
    except Exception as exc:  # noqa: BLE001 - every refusal becomes a panic
        _panic(exc)
    raise loop.Unsupported(method)


if __name__ == "__main__":
    sys.exit(loop.serve(HELLO, handle))
