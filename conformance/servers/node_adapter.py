"""The LanceDB Node SDK adapter's npm modules: installed once, outside the repository.

``conformance/harness/examples/lancedb_node/`` holds a JavaScript implementation under test
(``adapter.mjs``, driven by ``lance-conformance run --impl cmd:"node .../adapter.mjs"`` through
``PROTOCOL.md`` only) and the ``package.json`` pinning ``@lancedb/lancedb`` and
``apache-arrow``. npm installs those into a folder of their own, never into the repository:

    python -m conformance.servers install-node-adapter [DIR]
    python -m conformance.servers which-node-adapter      # the --impl spec to use

``DIR`` defaults to ``$LANCE_CONFORMANCE_TOOLS_DIR/lancedb-node`` or
``/tmp/lance-conformance-tools/lancedb-node``, where ``adapter.mjs`` looks for them (or give
it ``--modules DIR``). Like s3rver's, the installation is serialised by a lock file, so
pytest-xdist workers can ask for it at once.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
from pathlib import Path

from ._process import ServerUnavailable

#: the adapter's folder in the kit (an installed wheel carries it too)
ADAPTER_DIR = Path(__file__).resolve().parents[1] / "harness" / "examples" / "lancedb_node"
ADAPTER = ADAPTER_DIR / "adapter.mjs"


def pinned() -> dict[str, str]:
    """The npm packages and versions the adapter is pinned to (its ``package.json``)."""
    return dict(json.loads((ADAPTER_DIR / "package.json").read_text())["dependencies"])


def default_install_dir() -> Path:
    root = os.environ.get("LANCE_CONFORMANCE_TOOLS_DIR", "/tmp/lance-conformance-tools")
    return Path(root) / "lancedb-node"


def _installed(target: Path) -> bool:
    """Whether ``target`` holds the pinned versions of every package."""
    for name, version in pinned().items():
        try:
            got = json.loads((target / "node_modules" / name / "package.json").read_text())
        except (OSError, ValueError):
            return False
        if got.get("version") != version:
            return False
    return True


def find_node_adapter(directory: str | os.PathLike | None = None) -> str | None:
    """The folder holding the adapter's npm modules, or None when they are not installed
    (or ``node`` is missing)."""
    if shutil.which("node") is None:
        return None
    target = Path(directory) if directory else default_install_dir()
    return str(target) if _installed(target) else None


def node_adapter_command(directory: str | os.PathLike | None = None) -> str:
    """The ``--impl`` spec that runs the adapter with the modules in ``directory``."""
    node = shutil.which("node") or "node"
    target = Path(directory) if directory else default_install_dir()
    argv = [node, str(ADAPTER), "--modules", str(target)]
    return "cmd:" + shlex.join(argv)


def install_node_adapter(directory: str | os.PathLike | None = None, *,
                         timeout: float = 600) -> str:
    """``npm install`` the adapter's pinned packages into ``directory``; returns it."""
    import fcntl

    target = Path(directory) if directory else default_install_dir()
    target.mkdir(parents=True, exist_ok=True)
    with open(target / ".install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if shutil.which("node") is None:
            raise ServerUnavailable("node is not installed: cannot run the LanceDB Node adapter")
        if _installed(target):
            return str(target)
        npm = shutil.which("npm")
        if npm is None:
            raise ServerUnavailable("npm is not installed: cannot install @lancedb/lancedb")
        shutil.copyfile(ADAPTER_DIR / "package.json", target / "package.json")
        try:
            result = subprocess.run(
                [npm, "install", "--no-audit", "--no-fund", "--prefix", str(target)],
                capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired as exc:
            raise ServerUnavailable(f"npm install took longer than {timeout:.0f} s") from exc
        if result.returncode != 0 or not _installed(target):
            raise ServerUnavailable(f"npm install of {pinned()} failed ({result.returncode}): "
                                    f"{result.stderr[-1000:]}")
        return str(target)
