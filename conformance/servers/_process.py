"""What every test server shares: free ports, a child process, a readiness poll, teardown.

A server binds only 127.0.0.1, keeps its files in its own temporary directory, and is
stopped (SIGTERM, then SIGKILL after a grace period) by :meth:`LocalServer.stop`, which
is also registered with ``atexit`` so an interrupted test run leaves no process behind.
A server that cannot start raises :class:`ServerUnavailable` with the reason and the
tail of its log; the suite's fixtures turn that into ``unavailable(...)``.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

HOST = "127.0.0.1"


class ServerUnavailable(RuntimeError):
    """A test server's binary is missing or the server did not become ready."""


_reserved: set[int] = set()
_reserved_lock = threading.Lock()


def free_port(*, also_free_at_offset: int | None = None) -> int:
    """A TCP port on 127.0.0.1 nobody listens on now (and, optionally, ``port + offset`` too).

    The port is only probed, not held, so another process may take it before the
    server binds it; :meth:`LocalServer.start` retries once on a new port then.
    """
    for _ in range(200):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind((HOST, 0))
            port = sock.getsockname()[1]
        candidates = [port]
        if also_free_at_offset is not None:
            if port + also_free_at_offset > 65535:
                continue
            candidates.append(port + also_free_at_offset)
        with _reserved_lock:
            if any(p in _reserved for p in candidates):
                continue
            if all(_port_is_free(p) for p in candidates):
                _reserved.update(candidates)
                return port
    raise ServerUnavailable("no free TCP port found on 127.0.0.1")


def _port_is_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((HOST, port))
        except OSError:
            return False
    return True


def port_accepts(port: int, host: str = HOST) -> bool:
    with contextlib.suppress(OSError), socket.create_connection((host, port), timeout=0.5):
        return True
    return False


class LocalServer:
    """A child process serving on 127.0.0.1, with an S3 endpoint and fixed credentials.

    Subclasses set ``name``, build the command in :meth:`_command` and may override
    :meth:`_ready` (the default waits until an S3 ``ListBuckets`` succeeds).
    """

    name = "server"
    access_key = "testing"
    secret_key = "testing"
    region = "us-east-1"
    start_timeout = 30.0

    def __init__(self) -> None:
        self.port: int = 0
        self.workdir: Path | None = None
        self._proc: subprocess.Popen | None = None
        self._log: Any = None
        self._own_workdir = False

    # -- what tests use --------------------------------------------------------
    @property
    def endpoint(self) -> str:
        return f"http://{HOST}:{self.port}"

    def storage_options(self) -> dict[str, str]:
        """Options for pylance (``storage_options=``) and for our ``S3Store`` alike."""
        return {
            "aws_endpoint": self.endpoint,
            "aws_access_key_id": self.access_key,
            "aws_secret_access_key": self.secret_key,
            "aws_region": self.region,
            "allow_http": "true",
        }

    def client(self, service: str = "s3"):
        """A boto3 client for ``service`` on this server (path-style, short timeouts)."""
        import boto3
        from botocore.config import Config

        config = Config(
            connect_timeout=3, read_timeout=30, retries={"max_attempts": 2, "mode": "standard"},
            s3={"addressing_style": "path"}, max_pool_connections=32,
            request_checksum_calculation="when_required",
            response_checksum_validation="when_required",
        )
        return boto3.session.Session().client(
            service, endpoint_url=self.endpoint, region_name=self.region,
            aws_access_key_id=self.access_key, aws_secret_access_key=self.secret_key, config=config,
        )

    def create_bucket(self, name: str) -> str:
        """Create bucket ``name`` (retrying briefly while the server finishes starting)."""
        s3 = self.client("s3")
        deadline = time.monotonic() + 15
        while True:
            try:
                s3.create_bucket(Bucket=name)
                return name
            except Exception as exc:  # noqa: BLE001 - report the last one
                code = getattr(exc, "response", {}).get("Error", {}).get("Code", "")
                if code in ("BucketAlreadyOwnedByYou", "BucketAlreadyExists"):
                    return name
                if time.monotonic() > deadline:
                    raise ServerUnavailable(f"{self.name}: cannot create bucket {name}: {exc}") from exc
                time.sleep(0.2)

    def delete_bucket(self, name: str) -> None:
        """Empty bucket ``name`` and delete it (best effort: a server that has stopped, or a
        bucket already gone, is left as it is). SeaweedFS keeps a collection of volumes per
        bucket and has as many volumes as its free disk space holds 1 GB ones (13 with 14 GB
        free): a session that kept every bucket could create no more."""
        try:
            s3 = self.client("s3")
            for page in s3.get_paginator("list_objects_v2").paginate(Bucket=name):
                keys = [{"Key": o["Key"]} for o in page.get("Contents", [])]
                if keys:
                    s3.delete_objects(Bucket=name, Delete={"Objects": keys, "Quiet": True})
            s3.delete_bucket(Bucket=name)
        except Exception:  # noqa: BLE001, S110 - cleanup only
            pass

    # -- lifecycle -------------------------------------------------------------
    def _command(self) -> list[str]:
        raise NotImplementedError

    def _environment(self) -> Mapping[str, str]:
        return {}

    def _allocate_ports(self) -> None:
        self.port = free_port()

    def _ready(self) -> bool:
        if not port_accepts(self.port):
            return False
        try:
            self.client("s3").list_buckets()
            return True
        except Exception:  # noqa: BLE001 - not ready yet
            return False

    def start(self) -> LocalServer:
        if self._proc is not None:
            return self
        if self.workdir is None:
            self.workdir = Path(tempfile.mkdtemp(prefix=f"lc-{self.name}-"))
            self._own_workdir = True
        last: Exception | None = None
        for _attempt in range(2):  # a probed port may be taken meanwhile: one retry
            self._allocate_ports()
            try:
                self._spawn()
                return self
            except ServerUnavailable as exc:
                last = exc
                self._terminate()
        raise last  # type: ignore[misc]

    def _spawn(self) -> None:
        cmd = self._command()
        if shutil.which(cmd[0]) is None and not os.path.exists(cmd[0]):
            raise ServerUnavailable(f"{self.name}: executable {cmd[0]!r} not found")
        assert self.workdir is not None
        log_path = self.workdir / f"{self.name}.log"
        self._log = open(log_path, "ab")  # noqa: SIM115 - closed in _terminate
        env = {**os.environ, **self._environment()}
        try:
            self._proc = subprocess.Popen(
                cmd, cwd=self.workdir, env=env, stdout=self._log, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, start_new_session=True,
            )
        except OSError as exc:
            raise ServerUnavailable(f"{self.name}: cannot run {cmd[0]}: {exc}") from exc
        atexit.register(self.stop)
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise ServerUnavailable(
                    f"{self.name} exited with code {self._proc.returncode} while starting: {self.log_tail()}"
                )
            if self._ready():
                return
            time.sleep(0.1)
        raise ServerUnavailable(f"{self.name} not ready after {self.start_timeout:.0f} s: {self.log_tail()}")

    def log_tail(self, limit: int = 1500) -> str:
        if self.workdir is None:
            return ""
        path = self.workdir / f"{self.name}.log"
        try:
            return path.read_bytes()[-limit:].decode("utf-8", "replace")
        except OSError:
            return ""

    def _terminate(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=5)
        if self._log is not None:
            self._log.close()
            self._log = None

    def stop(self) -> None:
        """Stop the process and remove the server's temporary directory."""
        self._terminate()
        with contextlib.suppress(Exception):
            atexit.unregister(self.stop)
        if self._own_workdir and self.workdir is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)
            self.workdir = None

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def __enter__(self) -> LocalServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.endpoint if self.port else 'not started'})"


def with_retries(fn: Callable[[], Any], seconds: float = 10.0) -> Any:
    """Call ``fn`` until it returns without raising or ``seconds`` pass (then re-raise)."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            return fn()
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
