"""The JSON-lines loop the self-test programs share: read a request, answer one line, flush.

A program gives :func:`serve` its ``hello`` result and a handler for the other methods;
the handler returns a result or raises: :class:`Unsupported` becomes an answer with
``"unsupported": true``, any other exception an error of the protocol's class
(:func:`error_class`). Reads and writes go through the reference implementation
(:func:`read_rows`, :func:`apply`).
"""

from __future__ import annotations

import base64
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4]))  # this checkout's kit

import pyarrow as pa  # noqa: E402

CLASSES = ("UnsupportedFeature", "FormatError", "CommitConflict", "NotFound", "InvalidInput")


class Unsupported(Exception):
    """What the program does not do: answered with ``"unsupported": true``."""


def error_class(exc: BaseException) -> str:
    for cls in type(exc).__mro__:
        if cls.__name__ in CLASSES:
            return cls.__name__
    return type(exc).__name__


def arrow_result(table: pa.Table) -> dict:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as w:
        w.write_table(table)
    return {"arrow": base64.b64encode(sink.getvalue().to_pybytes()).decode()}


def read_rows(uri: str, version: int | None, with_row_id: bool) -> dict:
    from reference_impl.dataset import open_dataset

    return arrow_result(open_dataset(uri, version=version).to_table(with_row_id=with_row_id))


def apply(uri: str, op: dict, data: str | None) -> dict:
    from conformance.harness.reference import ReferenceAdapter

    rows = pa.ipc.open_stream(base64.b64decode(data)).read_all() if data else None
    ReferenceAdapter().apply(uri, op, rows)
    return {}


def serve(hello: dict, handle) -> int:
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        method, params = request["method"], request.get("params") or {}
        try:
            if method == "hello":
                result = hello
            elif method == "shutdown":
                result = {}
            else:
                result = handle(method, params)
            answer = {"id": request["id"], "ok": True, "result": result}
        except Unsupported as exc:
            answer = {"id": request["id"], "ok": False,
                      "error": {"class": "Unsupported", "message": str(exc), "unsupported": True}}
        except Exception as exc:  # noqa: BLE001 - every failure is an answer
            answer = {"id": request["id"], "ok": False,
                      "error": {"class": error_class(exc), "message": str(exc), "unsupported": False}}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()
        if method == "shutdown":
            return 0
    return 0
