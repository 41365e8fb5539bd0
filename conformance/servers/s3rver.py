"""s3rver (npm), a small S3 emulator that ignores every conditional header.

A ``PutObject`` with ``If-None-Match: *`` overwrites an existing object and answers
200 (ENVIRONMENT.md), so every racing writer "wins" a create-if-absent: a store that is
UNSAFE for concurrent Lance commits, the negative control the store qualification must
catch. Its fixed credentials are ``S3RVER``/``S3RVER``.

s3rver is a Node.js package, not a Python one, so it is installed with npm into a
directory of its own, ahead of time with

    python -m conformance.servers install-s3rver [DIR]

or, failing that, by the suite's ``s3rver_server`` fixture on first use.

The binary is looked up in ``$LANCE_CONFORMANCE_S3RVER`` (the path of the ``s3rver``
executable), then on ``PATH``, then in ``DIR/node_modules/.bin/s3rver`` with ``DIR``
defaulting to ``$LANCE_CONFORMANCE_TOOLS_DIR/s3rver`` or ``/tmp/lance-conformance-tools/s3rver``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from ._process import LocalServer, ServerUnavailable

S3RVER_VERSION = "3.7.1"


def default_install_dir() -> Path:
    root = os.environ.get("LANCE_CONFORMANCE_TOOLS_DIR", "/tmp/lance-conformance-tools")
    return Path(root) / "s3rver"


def find_s3rver() -> str | None:
    """The path of an installed ``s3rver`` executable, or None."""
    explicit = os.environ.get("LANCE_CONFORMANCE_S3RVER")
    if explicit and os.access(explicit, os.X_OK):
        return explicit
    on_path = shutil.which("s3rver")
    if on_path:
        return on_path
    local = default_install_dir() / "node_modules" / ".bin" / "s3rver"
    return str(local) if os.access(local, os.X_OK) else None


def install_s3rver(directory: str | os.PathLike | None = None, *, timeout: float = 300) -> str:
    """``npm install s3rver@S3RVER_VERSION`` into ``directory``; returns the executable's path.

    Concurrent callers (pytest-xdist workers) serialise on a lock file in ``directory``;
    the second finds the first one's installation and returns at once.
    """
    import fcntl

    target = Path(directory) if directory else default_install_dir()
    target.mkdir(parents=True, exist_ok=True)
    exe = target / "node_modules" / ".bin" / "s3rver"
    with open(target / ".install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if os.access(exe, os.X_OK):
            return str(exe)
        return _npm_install(target, exe, timeout)


def _npm_install(target: Path, exe: Path, timeout: float) -> str:
    npm = shutil.which("npm")
    if npm is None:
        raise ServerUnavailable("npm is not installed: cannot install s3rver")
    try:
        result = subprocess.run(
            [npm, "install", "--no-audit", "--no-fund", "--prefix", str(target), f"s3rver@{S3RVER_VERSION}"],
            capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired as exc:
        raise ServerUnavailable(f"npm install s3rver took longer than {timeout:.0f} s") from exc
    if result.returncode != 0 or not os.access(exe, os.X_OK):
        raise ServerUnavailable(f"npm install s3rver failed ({result.returncode}): {result.stderr[-1000:]}")
    return str(exe)


class S3rverServer(LocalServer):
    """``s3rver -d DIR -a 127.0.0.1 -p PORT``."""

    name = "s3rver"
    access_key = "S3RVER"
    secret_key = "S3RVER"

    def __init__(self, executable: str | None = None) -> None:
        super().__init__()
        self.executable = executable or find_s3rver()

    def _command(self) -> list[str]:
        if not self.executable:
            raise ServerUnavailable(
                "s3rver is not installed; install it with `python -m conformance.servers install-s3rver`"
            )
        assert self.workdir is not None
        data = self.workdir / "data"
        data.mkdir(exist_ok=True)
        return [self.executable, "-d", str(data), "-a", "127.0.0.1", "-p", str(self.port), "--silent"]
