"""The subprocess adapter: an implementation under test as a program speaking JSON lines.

The protocol is documented in ``PROTOCOL.md`` beside this module: requests
``{"id", "method", "params"}`` on the program's stdin, responses ``{"id", "ok", "result" |
"error"}`` on its stdout, one JSON object per line; tables as Arrow IPC streams, base64
inline or in a file. Every response is awaited with a time limit, so a program that hangs
or dies ends its request instead of hanging the run.

A program that dies (:class:`ProgramDied`: its exit status or signal, and the last lines
of its stderr, which the adapter keeps while passing them on), that is stopped after the
time limit, or whose answer breaks the protocol is started again, with ``hello``, at the
next request: only the request (the case) it died on is affected.
"""

from __future__ import annotations

import base64
import collections
import json
import os
import selectors
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pyarrow as pa

from .adapter import (
    FILTERED_READ,
    Adapter,
    Capabilities,
    Crashed,
    ImplementationError,
    ProtocolBroken,
    Unsupported,
)

PROTOCOL_VERSION = 1
INLINE_LIMIT = 1 << 20
MAX_LINE = 256 << 20  # a response line longer than this is refused
STDERR_TAIL = 20  # lines of the program's stderr a crash report quotes
STDERR_DRAIN_S = 5.0  # how long a dead program's stderr may take to reach its end


class AdapterError(ImplementationError):
    """An error the program reported; ``error_class`` is its ``error.class``."""


class AdapterPanic(AdapterError, Crashed):
    """The program reported a panic it survived (error class ``Panic``): a crash."""

    panic = True


class ProtocolError(ProtocolBroken):
    """The program broke the protocol, timed out or exited."""


class ProgramDied(ProtocolError, Crashed):
    """The program's process ended while a request waited: ``exit_code`` (negative: the
    signal that killed it) and ``stderr_tail``, the last lines it wrote to stderr."""

    def __init__(self, message: str, exit_code: int | None, stderr_tail: list[str]) -> None:
        super().__init__(message)
        self.exit_code = exit_code
        self.stderr_tail = tuple(stderr_tail)


class _StderrTail:
    """Reads a program's stderr to its end on a thread of its own: passes it on to ``sink``
    (a text stream, or None to drop it) and keeps the last :data:`STDERR_TAIL` lines."""

    def __init__(self, stream, sink) -> None:
        self.lines: collections.deque[str] = collections.deque(maxlen=STDERR_TAIL)
        self._stream, self._sink, self._partial = stream, sink, b""
        self._thread = threading.Thread(target=self._pump, daemon=True, name="adapter-stderr")
        self._thread.start()

    def _pump(self) -> None:
        while True:
            try:
                chunk = os.read(self._stream.fileno(), 1 << 16)
            except (OSError, ValueError):
                chunk = b""
            if not chunk:
                break
            if self._sink is not None:
                try:
                    self._sink.write(chunk.decode("utf-8", "replace"))
                    self._sink.flush()
                except (OSError, ValueError):  # the kit's stderr went away: keep the tail only
                    self._sink = None
            *whole, self._partial = (self._partial + chunk).split(b"\n")
            self.lines.extend(w.decode("utf-8", "replace").rstrip("\r") for w in whole)
        if self._partial:
            self.lines.append(self._partial.decode("utf-8", "replace"))
            self._partial = b""
        try:  # this thread alone reads and closes the stream
            self._stream.close()
        except OSError:
            pass

    def tail(self, *, drained: bool) -> list[str]:
        """The last lines; ``drained``: wait first (a bounded time) for the stream's end."""
        if drained:
            self._thread.join(STDERR_DRAIN_S)
        return [line for line in self.lines if line.strip()]


def _file_tail(f, limit: int = 1 << 14) -> list[str]:
    """The last lines of the seekable log file ``f`` (a program's stderr sent there)."""
    try:
        size = os.fstat(f.fileno()).st_size
        raw = os.pread(f.fileno(), min(limit, size), max(0, size - limit))
    except (OSError, AttributeError, ValueError):
        return []
    lines = [line for line in raw.decode("utf-8", "replace").splitlines() if line.strip()]
    return lines[-STDERR_TAIL:]


def ipc_bytes(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as w:
        w.write_table(table)
    return sink.getvalue().to_pybytes()


def table_from_ipc(data: bytes) -> pa.Table:
    return pa.ipc.open_stream(pa.py_buffer(data)).read_all()


class SubprocessAdapter(Adapter):
    def __init__(self, argv: list[str], *, timeout: float = 120.0, stderr=None) -> None:
        """``stderr``: where the program's stderr goes (a file object: the last lines of a
        dead program are read back from it); by default the kit's own stderr, or nowhere
        when ``LANCE_CONFORMANCE_QUIET`` is set, its last lines kept either way."""
        if not argv:
            raise ValueError("empty command for the subprocess adapter")
        self.argv = list(argv)
        self.timeout = timeout
        self.restarts = 0  # how many times the program was started again after it died
        self._next_id = 0
        self._tmp = tempfile.TemporaryDirectory(prefix="lance-conformance-sub-")
        self._stderr_file = stderr
        self._quiet = stderr is None and bool(os.environ.get("LANCE_CONFORMANCE_QUIET"))
        hello = self._start()
        self.name = str(hello.get("name") or os.path.basename(self.argv[-1]))
        self.version = str(hello["version"]) if hello.get("version") else None
        self.capabilities = Capabilities.from_dict(hello.get("capabilities", {}))

    def _start(self) -> dict:
        """Start the program and greet it; its ``hello`` result."""
        self._buf = bytearray()
        self._stopped = False  # set when the kit kills it (time limit, broken protocol)
        if self._stderr_file is not None:
            self.proc = subprocess.Popen(self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=self._stderr_file)
            self._stderr = None
        else:
            self.proc = subprocess.Popen(self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=subprocess.PIPE)
            self._stderr = _StderrTail(self.proc.stderr, None if self._quiet else sys.stderr)
        return self._call("hello", {"protocol": PROTOCOL_VERSION})

    def _restart(self) -> None:
        """The program died or was stopped: start it again for the next request."""
        self._close_streams()
        self.restarts += 1
        self._start()

    def stderr_tail(self, *, drained: bool = False) -> list[str]:
        """The last lines the program wrote to stderr."""
        if self._stderr is not None:
            return self._stderr.tail(drained=drained)
        return _file_tail(self._stderr_file)

    def _died(self, doing: str) -> ProtocolError:
        """The error for a program found dead while ``doing`` (its stdout or stdin closed):
        :class:`ProgramDied`, with its status and the end of its stderr, once it is reaped;
        a program still running :data:`STDERR_DRAIN_S` later closed its stream but did not
        die: it is stopped, and that is a broken protocol, not a crash."""
        try:
            code = self.proc.wait(timeout=STDERR_DRAIN_S)
        except subprocess.TimeoutExpired:
            self._kill()
            return ProtocolError(f"the program closed its stdout or stdin {doing} but kept running "
                                 f"(stopped after {STDERR_DRAIN_S} s)")
        tail = self.stderr_tail(drained=True)
        how = f"killed by signal {-code}" if code is not None and code < 0 else f"exit status {code}"
        return ProgramDied(f"the program died {doing} ({how})", code, tail)

    # -- transport ---------------------------------------------------------------------
    def _readline(self, deadline: float) -> bytes:
        """The next line of the program's stdout (without its ``\\n``). The buffer grows in
        place and only the bytes just read are searched for the line's end: a long line
        costs time in proportion to its length, and one longer than :data:`MAX_LINE` is
        refused as soon as it is."""
        start = 0  # the buffer before this holds no line end
        sel = selectors.DefaultSelector()
        sel.register(self.proc.stdout, selectors.EVENT_READ)
        try:
            while (end := self._buf.find(b"\n", start)) < 0:
                start = len(self._buf)
                if start > MAX_LINE:
                    self._kill()
                    raise ProtocolError(f"response line too long (more than {MAX_LINE} bytes)")
                left = deadline - time.monotonic()
                if left <= 0:
                    self._kill()
                    raise ProtocolError(f"no response within {self.timeout} s")
                if not sel.select(left):
                    continue
                chunk = os.read(self.proc.stdout.fileno(), 1 << 20)
                if not chunk:
                    raise self._died("before it answered")
                self._buf += chunk
        finally:
            sel.close()
        line = bytes(self._buf[:end])
        del self._buf[:end + 1]
        return line

    def _call(self, method: str, params: dict) -> dict:
        if method != "hello" and (self._stopped or self.proc.poll() is not None):
            self._restart()  # it died (or was stopped) on an earlier request
        self._next_id += 1
        rid = self._next_id
        msg = json.dumps({"id": rid, "method": method, "params": params}) + "\n"
        try:
            self.proc.stdin.write(msg.encode())
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            raise self._died(f"before it read the {method} request") from None
        deadline = time.monotonic() + self.timeout
        while True:
            line = self._readline(deadline)
            if not line.strip():
                continue
            try:
                resp = json.loads(line)
            except ValueError:
                self._kill()  # the stream cannot be trusted any more: start afresh
                raise ProtocolError(f"not a JSON line: {line[:200]!r}") from None
            if not isinstance(resp, dict) or resp.get("id") != rid:
                self._kill()
                rsp = resp.get("id") if isinstance(resp, dict) else None
                why = (f"a second answer to the earlier request {rsp}" if isinstance(rsp, int)
                       and 0 < rsp < rid else "not the answer to it")
                raise ProtocolError(f"unexpected response to request {rid} ({method}), {why}: "
                                    f"{str(resp)[:200]}")
            if not isinstance(resp.get("ok"), bool):
                self._kill()
                raise ProtocolError(f"a response without \"ok\": true or false: {str(resp)[:200]}")
            break
        if resp["ok"]:
            result = resp.get("result") or {}
            if not isinstance(result, dict):
                raise ProtocolError("result is not an object")
            return result
        err = resp.get("error") or {}
        if not isinstance(err, dict):
            raise ProtocolError(f"error is not an object: {str(err)[:200]}")
        if err.get("unsupported") is True:  # the boolean: "false" or 1 is no such answer
            raise Unsupported(str(err.get("message", "unsupported")))
        cls = str(err.get("class", "Error"))
        raise (AdapterPanic if cls == "Panic" else AdapterError)(cls, str(err.get("message", "")))

    def _kill(self) -> None:
        self._stopped = True
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    # -- the adapter protocol ----------------------------------------------------------
    def read(self, uri, version=None, *, with_row_id=False) -> pa.Table:
        result = self._call("read", {"uri": str(uri), "version": version,
                                     "with_row_id": bool(with_row_id), "data_dir": self._tmp.name})
        return self._rows(result, "read")

    def read_filtered(self, uri, version, filter, columns=None) -> pa.Table:  # noqa: A002
        """A ``read`` request with ``filter`` and ``columns``: sent only to a program that
        declares the feature ``filtered-read`` (another would return every row)."""
        if FILTERED_READ not in self.capabilities.features:
            raise Unsupported(f"the program does not declare the feature {FILTERED_READ!r}")
        result = self._call("read", {"uri": str(uri), "version": version, "with_row_id": False,
                                     "filter": filter,
                                     "columns": list(columns) if columns is not None else None,
                                     "data_dir": self._tmp.name})
        return self._rows(result, "read")

    def query(self, uri, version, query) -> pa.Table:
        if "query" not in self.capabilities.features:
            raise Unsupported("the program does not declare the feature 'query'")
        result = self._call("query", {"uri": str(uri), "version": version, **query,
                                      "data_dir": self._tmp.name})
        return self._rows(result, "query")

    def _rows(self, result: dict, method: str) -> pa.Table:
        """The table a ``read`` or ``query`` result carries: inline (``arrow``) or in a file
        inside ``data_dir`` (``arrow_path``, deleted once read). Bytes that are not an Arrow
        IPC stream, or a file elsewhere, break the protocol: they are no error the
        implementation reported (and never a refusal)."""
        if "arrow" in result:
            try:
                return table_from_ipc(base64.b64decode(result["arrow"]))
            except (TypeError, ValueError, pa.ArrowException) as exc:
                raise ProtocolError(f"{method} result: arrow is not a base64 Arrow IPC stream: "
                                    f"{type(exc).__name__}: {exc}") from None
        if "arrow_path" in result:
            path = Path(str(result["arrow_path"])).resolve()
            if not path.is_relative_to(Path(self._tmp.name).resolve()) or not path.is_file():
                raise ProtocolError(f"{method} result: arrow_path {str(path)!r} is not a file inside "
                                    f"data_dir {self._tmp.name!r}")
            try:
                return table_from_ipc(path.read_bytes())
            except (OSError, ValueError, pa.ArrowException) as exc:
                raise ProtocolError(f"{method} result: arrow_path holds no Arrow IPC stream: "
                                    f"{type(exc).__name__}: {exc}") from None
            finally:
                path.unlink(missing_ok=True)
        raise ProtocolError(f"{method} result has neither arrow nor arrow_path")

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
            blobs = [None if b is None else base64.b64decode(b) for b in result["blobs"]]
        except (KeyError, TypeError, ValueError) as exc:
            raise ProtocolError(f"take_blobs result is not a list of base64 or null: {exc}") from None
        if len(blobs) != len(indices):
            raise ProtocolError(f"take_blobs result: {len(blobs)} blobs for {len(indices)} indices")
        return blobs

    def versions(self, uri) -> list[int]:
        try:
            return [int(v) for v in self._call("versions", {"uri": str(uri)})["versions"]]
        except (Unsupported, KeyError):
            return super().versions(uri)

    def _close_streams(self) -> None:
        if self.proc.poll() is None:
            self._kill()
        # (its stderr, when the kit reads it, is closed by the thread reading it)
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass

    def close(self) -> None:
        if self.proc.poll() is None and not self._stopped:
            try:
                self._call("shutdown", {})
                self.proc.wait(timeout=5)
            except Exception:  # noqa: BLE001 - it is going away either way
                self._kill()
        self._close_streams()
        self._tmp.cleanup()
