#!/usr/bin/env python3
"""An example implementation under test, speaking the subprocess protocol (PROTOCOL.md).

A read-only program: it answers ``hello``, ``read``, ``take_blobs``, ``versions`` and ``shutdown`` on
stdin/stdout as JSON lines, reading datasets with the project's reference reader and
returning rows as base64 Arrow IPC streams (large results in a file under ``data_dir``).
Try it with::

    lance-conformance run --impl cmd:"python conformance/harness/examples/subprocess_reader.py" --suite read

An implementation in another language follows the same loop: read a line, act, write one
line, flush.
"""

import base64
import json
import os
import sys
import uuid

import pyarrow as pa

INLINE_LIMIT = 1 << 20
CAPABILITIES = {"read": True, "write": False, "ops": [], "row_ids": True, "features": ["blobs"]}


def error_class(exc: BaseException) -> str:
    """The protocol's error class for ``exc`` (the reference implementation's names)."""
    for cls in type(exc).__mro__:
        if cls.__name__ in ("UnsupportedFeature", "FormatError", "CommitConflict",
                            "NotFound", "InvalidInput"):
            return cls.__name__
    return type(exc).__name__


def rows_result(table: pa.Table, data_dir: str) -> dict:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as w:
        w.write_table(table)
    raw = sink.getvalue().to_pybytes()
    if len(raw) <= INLINE_LIMIT or not data_dir:
        return {"arrow": base64.b64encode(raw).decode()}
    path = os.path.join(data_dir, f"rows-{uuid.uuid4().hex}.arrows")
    with open(path, "wb") as f:
        f.write(raw)
    return {"arrow_path": path}


def handle(method: str, params: dict) -> dict:
    from reference_impl.dataset import open_dataset

    if method == "hello":
        return {"name": "example-subprocess-reader", "capabilities": CAPABILITIES}
    if method == "read":
        ds = open_dataset(params["uri"], version=params.get("version"))
        table = ds.to_table(with_row_id=bool(params.get("with_row_id")))
        return rows_result(table, params.get("data_dir", ""))
    if method == "take_blobs":
        ds = open_dataset(params["uri"], version=params.get("version"))
        blobs = ds.take_blobs(params["column"], indices=params["indices"])
        return {"blobs": [None if b is None else base64.b64encode(b).decode() for b in blobs]}
    if method == "versions":
        return {"versions": list(open_dataset(params["uri"]).versions())}
    if method == "shutdown":
        return {}
    raise NotImplementedError(f"method {method!r}")


def main() -> int:
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        method = request.get("method")
        try:
            response = {"id": request.get("id"), "ok": True,
                        "result": handle(method, request.get("params") or {})}
        except NotImplementedError as exc:
            response = {"id": request.get("id"), "ok": False,
                        "error": {"class": "NotImplemented", "message": str(exc), "unsupported": True}}
        except Exception as exc:  # every failure becomes an error response
            response = {"id": request.get("id"), "ok": False,
                        "error": {"class": error_class(exc), "message": str(exc), "unsupported": False}}
        sys.stdout.write(json.dumps(response) + "\n")
        sys.stdout.flush()
        if method == "shutdown":
            return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
