"""One cached virtualenv per Lance release.

A release is named as pip names it: ``pylance==0.10.18`` or ``lancedb==0.40.0``. Its
virtualenv lives under ``$LANCE_CONFORMANCE_CACHE/venvs/<package>-<version>/`` (default
``~/.cache/lance-conformance``) and is reused once it has passed its smoke test, so a second
run costs seconds. The kit never imports a release into its own interpreter: it runs programs
with the virtualenv's Python.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import subprocess
import sys
import venv
from dataclasses import dataclass
from pathlib import Path

_NAME = re.compile(r"^(pylance|lancedb)==([0-9][0-9A-Za-z.+-]*)$")

#: The smoke test run in a fresh virtualenv: the release imports, writes and reads back.
_SMOKE = {
    "pylance": (
        "import tempfile, pyarrow as pa\n"
        "import lance\n"
        "d = tempfile.mkdtemp()\n"
        "lance.write_dataset(pa.table({'a': [1, 2]}), d + '/t')\n"
        "assert lance.dataset(d + '/t').to_table().num_rows == 2\n"
        "import os; os._exit(0)\n"  # some releases crash while the interpreter finalizes
    ),
    "lancedb": (
        "import tempfile, pyarrow as pa\n"
        "import lancedb\n"
        "db = lancedb.connect(tempfile.mkdtemp())\n"
        "t = db.create_table('t', pa.table({'a': [1, 2]}))\n"
        "assert t.to_arrow().num_rows == 2\n"
        "import os; os._exit(0)\n"  # lancedb 0.30 may crash in PyGILState_Release at exit
    ),
}


@dataclass(frozen=True, order=True)
class Release:
    """A release of a package that writes and reads Lance, as pip names it."""

    package: str
    version: str

    @classmethod
    def parse(cls, text: str) -> Release:
        m = _NAME.match(text.strip())
        if not m:
            raise ValueError(
                f"{text!r} is not a release; expected pylance==X.Y.Z or lancedb==X.Y.Z"
            )
        return cls(m.group(1), m.group(2))

    @property
    def name(self) -> str:
        return f"{self.package}=={self.version}"

    @property
    def slug(self) -> str:
        """A file-system name: ``pylance-0.10.18``."""
        return f"{self.package}-{self.version}"

    @property
    def version_tuple(self) -> tuple[int, ...]:
        return tuple(int(p) for p in re.findall(r"\d+", self.version)[:3])

    def requirements(self) -> list[str]:
        """What pip installs: the release and the pins its era needs to import."""
        reqs = [self.name]
        reqs += _ERA_PINS.get(self.package, lambda v: [])(self.version_tuple)
        return reqs


def _pylance_pins(v: tuple[int, ...]) -> list[str]:
    # Releases built before numpy 2 and pyarrow 16 import only against the libraries of
    # their time (an old pyarrow has no wheel for numpy 2, and old pylance calls pyarrow
    # APIs that later releases removed).
    if v < (0, 14):
        return ["pyarrow>=12,<15", "numpy<2", "pandas<2.2"]
    if v < (0, 30):
        return ["pyarrow>=14,<18", "numpy<2", "pandas<2.3"]
    return []


def _lancedb_pins(v: tuple[int, ...]) -> list[str]:
    # lancedb 0.21-0.29 crashes at import with pyarrow 22 and later (seen with 0.25.3);
    # 0.21 imports numpy and pandas without requiring them (seen with 0.21.2)
    if (0, 21) <= v < (0, 30):
        return ["pyarrow<22", "numpy", "pandas"]
    return []


_ERA_PINS = {"pylance": _pylance_pins, "lancedb": _lancedb_pins}


def cache_root() -> Path:
    """Where the kit keeps what it builds once: ``$LANCE_CONFORMANCE_CACHE`` or ``~/.cache``."""
    env = os.environ.get("LANCE_CONFORMANCE_CACHE")
    if env:
        return Path(env)
    return Path.home() / ".cache" / "lance-conformance"


def venv_dir(release: Release) -> Path:
    return cache_root() / "venvs" / release.slug


def venv_python(release: Release) -> Path:
    return venv_dir(release) / "bin" / "python"


class ReleaseUnavailable(RuntimeError):
    """A release cannot be installed or does not run here (the reason is the message)."""


@contextlib.contextmanager
def locked(name: str):
    """An exclusive lock between processes (pytest-xdist workers, parallel CLI runs) on one
    piece of the cache, held while it is built."""
    path = cache_root() / "locks" / f"{name}.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def is_ready(release: Release) -> bool:
    return (venv_dir(release) / "ready.json").is_file()


def ensure_venv(release: Release, *, quiet: bool = True, timeout: float = 900) -> Path:
    """Create (once) the virtualenv of ``release``; return its Python.

    Raises ``ReleaseUnavailable`` with pip's or the smoke test's last lines when the release
    cannot be installed or cannot write and read back a two-row table.
    """
    root = venv_dir(release)
    py = venv_python(release)
    if is_ready(release) and py.exists():
        return py
    with locked(f"venv-{release.slug}"):
        if is_ready(release) and py.exists():
            return py
        return _create(release, root, py, timeout)


def _create(release: Release, root: Path, py: Path, timeout: float) -> Path:
    root.parent.mkdir(parents=True, exist_ok=True)
    if not py.exists():
        venv.EnvBuilder(with_pip=True, clear=True, symlinks=True).create(root)
    cmd = [str(py), "-m", "pip", "install", "--disable-pip-version-check", "-q",
           *release.requirements()]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-5:])
        raise ReleaseUnavailable(f"pip install {release.name} failed: {tail}")
    smoke = subprocess.run([str(py), "-c", _SMOKE[release.package]], capture_output=True, text=True,
                           timeout=300)
    if smoke.returncode != 0:
        tail = "\n".join(smoke.stderr.strip().splitlines()[-5:])
        raise ReleaseUnavailable(f"{release.name} does not run: {tail}")
    freeze = subprocess.run([str(py), "-m", "pip", "freeze"], capture_output=True, text=True)
    (root / "ready.json").write_text(json.dumps({
        "release": release.name,
        "requirements": release.requirements(),
        "freeze": freeze.stdout.splitlines(),
        "python": sys.version.split()[0],
    }, indent=1))
    return py
