"""Fixtures for the real parts the suite drives, and the skip-or-fail policy for them."""

from __future__ import annotations

import os
import sys

import pytest


def strict() -> bool:
    """True under CI: a real part that cannot start fails the run instead of skipping."""
    return os.environ.get("CI", "").lower() in ("1", "true", "yes") or bool(
        os.environ.get("LANCE_CONFORMANCE_STRICT")
    )


def unavailable(part: str, reason: str):
    """Skip (locally) or fail (CI) because ``part`` cannot be used; the reason is printed."""
    message = f"{part} unavailable: {reason}"
    if strict():
        pytest.fail(message + " (CI must skip nothing)", pytrace=False)
    pytest.skip(message)


@pytest.fixture(scope="session")
def pylance():
    """The ``lance`` module of pylance 14.0.2, the oracle of interop tests."""
    try:
        import lance
    except Exception as exc:  # ImportError, or a broken wheel
        unavailable("pylance", f"import lance failed: {exc!r}")
    version = getattr(lance, "__version__", "?")
    if version != "14.0.2":
        unavailable("pylance", f"version {version} installed, the suite is pinned to 14.0.2")
    return lance


@pytest.fixture(scope="session")
def python_executable() -> str:
    return sys.executable


def spec_dir():
    """The spec texts (``shared/spec`` beside the repository, as CI and the workspace lay them
    out), or ``$LANCE_CONFORMANCE_SPEC_DIR``; None when absent."""
    from pathlib import Path

    candidates = []
    if os.environ.get("LANCE_CONFORMANCE_SPEC_DIR"):
        candidates.append(Path(os.environ["LANCE_CONFORMANCE_SPEC_DIR"]))
    repo = Path(__file__).resolve().parents[2]
    candidates += [repo.parent / "shared" / "spec", Path("/work/shared/spec")]
    for path in candidates:
        if (path / "README.md").exists() or any(path.glob("00*.txt")):
            return path
    return None
