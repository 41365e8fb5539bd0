"""The subprocess adapter: an implementation under test as a program speaking JSON lines.

The protocol is documented in ``PROTOCOL.md`` beside this module: requests
``{"id", "method", "params"}`` on the program's stdin, responses ``{"id", "ok", "result" |
"error"}`` on its stdout, one JSON object per line; tables as Arrow IPC streams, base64
inline or in a file. Every response is awaited with a time limit, so a program that hangs
or dies ends its case as an error instead of hanging the run.
"""

from __future__ import annotations

import base64
import json
import os
import selectors
import subprocess
import tempfile
import time
from pathlib import Path

import pyarrow as pa

from .adapter import Adapter, Capabilities, Unsupported

PROTOCOL_VERSION = 1
INLINE_LIMIT = 1 << 20
MAX_LINE = 256 << 20  # a response line longer than this is refused


class AdapterError(Exception):
    """An error the program reported; ``error_class`` is its ``error.class``."""

    def __init__(self, error_class: str, message: str) -> None:
        super().__init__(f"{error_class}: {message}")
        self.error_class = error_class


class ProtocolError(Exception):
    """The program broke the protocol, timed out or exited."""


def ipc_bytes(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as w:
        w.write_table(table)
    return sink.getvalue().to_pybytes()


def table_from_ipc(data: bytes) -> pa.Table:
    return pa.ipc.open_stream(pa.py_buffer(data)).read_all()


class SubprocessAdapter(Adapter):
    def __init__(self, argv: list[str], *, timeout: float = 120.0, stderr=None) -> None:
        """``stderr``: where the program's stderr goes (a file object); by default the
        kit's own stderr, or nowhere when ``LANCE_CONFORMANCE_QUIET`` is set."""
        if not argv:
            raise ValueError("empty command for the subprocess adapter")
        self.argv = list(argv)
        self.timeout = timeout
        self._next_id = 0
        self._buf = b""
        self._tmp = tempfile.TemporaryDirectory(prefix="lance-conformance-sub-")
        if stderr is None and os.environ.get("LANCE_CONFORMANCE_QUIET"):
            stderr = subprocess.DEVNULL
        self.proc = subprocess.Popen(self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=stderr)
        hello = self._call("hello", {"protocol": PROTOCOL_VERSION})
        self.name = str(hello.get("name") or os.path.basename(self.argv[-1]))
        self.version = str(hello["version"]) if hello.get("version") else None
        self.capabilities = Capabilities.from_dict(hello.get("capabilities", {}))

    # -- transport ---------------------------------------------------------------------
    def _readline(self, deadline: float) -> bytes:
        sel = selectors.DefaultSelector()
        sel.register(self.proc.stdout, selectors.EVENT_READ)
        try:
            while b"\n" not in self._buf:
                left = deadline - time.monotonic()
                if left <= 0:
                    self._kill()
                    raise ProtocolError(f"no response within {self.timeout} s")
                if not sel.select(left):
                    continue
                chunk = os.read(self.proc.stdout.fileno(), 1 << 16)
                if not chunk:
                    raise ProtocolError(f"the program exited (code {self.proc.poll()})")
                self._buf += chunk
                if len(self._buf) > MAX_LINE:
                    self._kill()
                    raise ProtocolError("response line too long")
        finally:
            sel.close()
        line, _, self._buf = self._buf.partition(b"\n")
        return line

    def _call(self, method: str, params: dict) -> dict:
        if self.proc.poll() is not None:
            raise ProtocolError(f"the program has exited (code {self.proc.returncode})")
        self._next_id += 1
        rid = self._next_id
        msg = json.dumps({"id": rid, "method": method, "params": params}) + "\n"
        try:
            self.proc.stdin.write(msg.encode())
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError) as exc:
            raise ProtocolError(f"cannot send to the program: {exc}") from None
        deadline = time.monotonic() + self.timeout
        while True:
            line = self._readline(deadline)
            if not line.strip():
                continue
            try:
                resp = json.loads(line)
            except ValueError:
                raise ProtocolError(f"not a JSON line: {line[:200]!r}") from None
            if not isinstance(resp, dict) or resp.get("id") != rid:
                raise ProtocolError(f"unexpected response {str(resp)[:200]}")
            break
        if resp.get("ok"):
            result = resp.get("result") or {}
            if not isinstance(result, dict):
                raise ProtocolError("result is not an object")
            return result
        err = resp.get("error") or {}
        if err.get("unsupported"):
            raise Unsupported(str(err.get("message", "unsupported")))
        raise AdapterError(str(err.get("class", "Error")), str(err.get("message", "")))

    def _kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    # -- the adapter protocol ----------------------------------------------------------
    def read(self, uri, version=None, *, with_row_id=False) -> pa.Table:
        result = self._call("read", {"uri": str(uri), "version": version,
                                     "with_row_id": bool(with_row_id), "data_dir": self._tmp.name})
        if "arrow" in result:
            return table_from_ipc(base64.b64decode(result["arrow"]))
        if "arrow_path" in result:
            path = Path(result["arrow_path"])
            try:
                return table_from_ipc(path.read_bytes())
            finally:
                if path.resolve().is_relative_to(Path(self._tmp.name).resolve()):
                    path.unlink(missing_ok=True)
        raise ProtocolError("read result has neither arrow nor arrow_path")

    def apply(self, uri, op, data=None) -> None:
        if not self.capabilities.supports(op["op"]):
            raise Unsupported(f"operation {op['op']!r} not declared")
        params = {"uri": str(uri), "op": op, "data": None, "data_path": None}
        if data is not None:
            raw = ipc_bytes(data)
            if len(raw) <= INLINE_LIMIT:
                params["data"] = base64.b64encode(raw).decode()
            else:
                path = Path(self._tmp.name) / f"in-{self._next_id}.arrows"
                path.write_bytes(raw)
                params["data_path"] = str(path)
        self._call("apply", params)

    def take_blobs(self, uri, version, column, indices) -> list:
        if "blobs" not in self.capabilities.features:
            raise Unsupported("the program does not declare the feature 'blobs'")
        result = self._call("take_blobs", {"uri": str(uri), "version": version, "column": column,
                                           "indices": [int(i) for i in indices]})
        try:
            return [None if b is None else base64.b64decode(b) for b in result["blobs"]]
        except (KeyError, TypeError, ValueError) as exc:
            raise ProtocolError(f"take_blobs result is not a list of base64 or null: {exc}") from None

    def versions(self, uri) -> list[int]:
        try:
            return [int(v) for v in self._call("versions", {"uri": str(uri)})["versions"]]
        except (Unsupported, KeyError):
            return super().versions(uri)

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self._call("shutdown", {})
                self.proc.wait(timeout=5)
            except Exception:  # noqa: BLE001 - it is going away either way
                self._kill()
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                stream.close()
            except OSError:
                pass
        self._tmp.cleanup()
