"""The code passes ruff with the project's settings (pyproject.toml [tool.ruff])."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from conformance.suite.parts import unavailable

REPO = Path(__file__).resolve().parents[2]


def test_ruff_is_clean():
    if shutil.which("ruff") is None:
        try:
            import ruff  # noqa: F401
        except ImportError:
            unavailable("ruff", "not installed (it is part of the 'test' extra)")
    proc = subprocess.run([sys.executable, "-m", "ruff", "check", "reference_impl", "conformance", "tools"],
                          cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
