"""A reader and writer with one fault, chosen by ``--fault NAME``, forced on every request
the fault concerns (no timing): everything else is the reference implementation's.

Faults of the rows a read answers (each must FAIL its read, never PASS):

* ``large-string``: string columns as ``large_string``; ``int32``: int64 columns as int32;
* ``dictionary``: string columns dictionary-encoded;
* ``renamed``: the first column renamed; ``swapped``: the first two columns swapped;
* ``extra-column``, ``missing-column``: a column too many, the last column left out;
* ``duplicate-row``: the first row twice, the last one left out (the same row count);
* ``older-version``: a read of version N answered with version N-1's rows.

Faults of the writes (each must FAIL its scenario): ``write-nothing`` (answers ``{}`` and
writes nothing), ``write-twice`` (commits each append twice), ``write-elsewhere`` (writes
to ``<uri>.other``), ``storage-2.0`` (every ``create`` with data storage version 2.0,
whatever was asked).

Faults of the protocol: ``unsupported`` (answers every request but ``hello`` with
``"unsupported": true``), ``wrong-id``, ``two-answers`` (every read answered twice),
``no-ok`` (an answer with neither ``ok`` nor ``error``), ``stdout-log`` (a log line on
stdout before each read's answer), ``huge-line`` (a read answered by an endless line),
``closes-stdout`` (closes its stdout on a read and keeps running), ``exits-0`` (exits with
status 0 on a read), ``bad-arrow`` (a read's ``arrow`` is not an Arrow stream),
``foreign-path`` (a read answered with ``arrow_path`` outside ``data_dir``),
``claims-blobs`` (declares the feature ``blobs`` and answers ``take_blobs`` unsupported),
``blobs-short`` (``take_blobs`` answered with one blob less than the indices asked),
``unsupported-text`` (every error answer says ``"unsupported": "false"``, a string).

Faults of a query (``query`` feature): ``query-duplicates`` (the nearest search answered
with its best half, each row twice), ``query-int32`` (int64 columns as int32).
"""

from __future__ import annotations

import base64
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4]))

import pyarrow as pa  # noqa: E402

from conformance.suite.harness.programs import loop  # noqa: E402

FAULT = sys.argv[sys.argv.index("--fault") + 1]
OPS = ["create", "append", "overwrite", "delete", "update", "add_columns", "merge", "merge_insert",
       "drop_columns", "compact", "tag", "restore", "update_config"]
FEATURES = ["query", "filtered-read"] + (["blobs"] if FAULT in ("claims-blobs", "blobs-short") else [])
HELLO = {"name": f"misbehaves-{FAULT}", "version": "1",
         "capabilities": {"read": True, "write": True, "ops": OPS, "row_ids": True,
                          "features": FEATURES}}


def _send(obj) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def _retype(table: pa.Table, match, to) -> pa.Table:
    for i, f in enumerate(table.schema):
        if match(f.type):
            table = table.set_column(i, pa.field(f.name, to(f.type)), table.column(i).cast(to(f.type)))
    return table


def _bent(table: pa.Table) -> pa.Table:
    """``table`` with the fault of the rows (when the fault is one of them)."""
    names = table.column_names
    if FAULT == "large-string":
        return _retype(table, pa.types.is_string, lambda t: pa.large_string())
    if FAULT == "int32":
        return _retype(table, lambda t: t == pa.int64(), lambda t: pa.int32())
    if FAULT == "dictionary":
        for i, f in enumerate(table.schema):
            if pa.types.is_string(f.type):
                col = table.column(i).dictionary_encode()
                table = table.set_column(i, pa.field(f.name, col.type), col)
        return table
    if FAULT == "renamed":
        return table.rename_columns(["renamed", *names[1:]])
    if FAULT == "swapped" and len(names) > 1:
        return table.select([names[1], names[0], *names[2:]])
    if FAULT == "extra-column":
        return table.append_column("extra", pa.array([0] * table.num_rows, pa.int64()))
    if FAULT == "missing-column" and len(names) > 1:
        return table.select(names[:-1])
    if FAULT == "duplicate-row" and table.num_rows > 1:
        return pa.concat_tables([table.slice(0, 1), table.slice(0, table.num_rows - 1)])
    return table


def _rows(table: pa.Table) -> dict:
    return loop.arrow_result(_bent(table))


def read(params: dict) -> dict:
    from reference_impl.dataset import open_dataset

    if FAULT == "wrong-id":
        _send({"id": 0, "ok": True, "result": {}})
        time.sleep(3600)  # the harness stops it
    if FAULT == "stdout-log":
        print(f"INFO opening {params['uri']}", flush=True)
    if FAULT == "huge-line":
        chunk = "A" * (1 << 20)
        while True:  # the harness stops it once the line is longer than it accepts
            sys.stdout.write(chunk)
    if FAULT == "closes-stdout":
        sys.stdout.close()
        os.close(1)
        time.sleep(3600)  # still running: the harness stops it
    if FAULT == "exits-0":
        os._exit(0)
    if FAULT == "bad-arrow":
        return {"arrow": base64.b64encode(b"these are not Arrow bytes").decode()}
    version = params.get("version")
    ds = open_dataset(params["uri"], version=version)
    if FAULT == "older-version" and ds.version > 1:
        ds = open_dataset(params["uri"], version=ds.version - 1)
    table = ds.to_table(with_row_id=bool(params.get("with_row_id")))
    if params.get("filter") is not None:
        from conformance.harness.scenarios import _mask

        table = table.filter(_mask(table, params["filter"]))
        table = table.drop_columns([c for c in table.column_names if c == "_rowid"])
    if params.get("columns") is not None:
        table = table.select(params["columns"])
    if FAULT == "foreign-path":
        path = Path(params["data_dir"]).parent / "elsewhere.arrows"
        path.write_bytes(base64.b64decode(loop.arrow_result(table)["arrow"]))
        return {"arrow_path": str(path)}
    return _rows(table)


def query(params: dict) -> dict:
    from conformance.harness.queries import scan_answer
    from reference_impl.dataset import open_dataset

    table = open_dataset(params["uri"], version=params.get("version")).to_table()
    answer = scan_answer(table, params)
    if FAULT == "query-duplicates" and params.get("nearest"):
        half = answer.slice(0, (answer.num_rows + 1) // 2)
        answer = pa.concat_tables([half, half]).slice(0, answer.num_rows)
    if FAULT == "query-int32":
        answer = _retype(answer, lambda t: t == pa.int64(), lambda t: pa.int32())
    return _rows(answer)


def apply(params: dict) -> dict:
    op, uri = dict(params["op"]), params["uri"]
    if FAULT == "write-nothing":
        return {}
    if FAULT == "write-elsewhere":
        uri += ".other"
    if FAULT == "storage-2.0" and op["op"] == "create":
        op["data_storage_version"] = "2.0"
    loop.apply(uri, op, params.get("data"))
    if FAULT == "write-twice" and op["op"] == "append":
        loop.apply(uri, op, params.get("data"))
    return {}


def handle(method: str, params: dict) -> dict:
    if FAULT == "unsupported" or (FAULT == "claims-blobs" and method == "take_blobs"):
        raise loop.Unsupported(f"{method}: not here")
    if method == "read":
        return read(params)
    if method == "query":
        return query(params)
    if method == "apply":
        return apply(params)
    if method == "take_blobs":  # blobs-short
        from reference_impl.dataset import open_dataset

        ds = open_dataset(params["uri"], version=params.get("version"))
        blobs = ds.take_blobs(params["column"], indices=params["indices"][:-1])
        return {"blobs": [None if b is None else base64.b64encode(b).decode() for b in blobs]}
    if method == "versions":
        from reference_impl.dataset import open_dataset

        return {"versions": list(open_dataset(params["uri"]).versions())}
    raise loop.Unsupported(method)


def serve() -> int:
    """:func:`loop.serve`, with the faults that break the answer's envelope."""
    for line in sys.stdin:
        request = json.loads(line)
        if FAULT == "no-ok" and request["method"] == "read":
            _send({"id": request["id"], "result": {}})
            continue
        if FAULT == "two-answers" and request["method"] == "read" and "reject-" not in line:
            answer = {"id": request["id"], "ok": True, "result": read(request["params"])}
            _send(answer)
            _send(answer)
            continue
        if request["method"] == "shutdown":
            _send({"id": request["id"], "ok": True, "result": {}})
            return 0
        if request["method"] == "hello":
            _send({"id": request["id"], "ok": True, "result": HELLO})
            continue
        try:
            _send({"id": request["id"], "ok": True, "result": handle(request["method"], request["params"])})
        except loop.Unsupported as exc:
            _send({"id": request["id"], "ok": False,
                   "error": {"class": "Unsupported", "message": str(exc), "unsupported": True}})
        except Exception as exc:  # noqa: BLE001 - every failure is an answer
            _send({"id": request["id"], "ok": False,
                   "error": {"class": loop.error_class(exc), "message": str(exc),
                             "unsupported": "false" if FAULT == "unsupported-text" else False}})
    return 0


if __name__ == "__main__":
    sys.exit(serve())
