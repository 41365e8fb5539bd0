"""What an installed kit does without pylance, checked in the checkout (fast; the wheel itself
is ``test_wheel.py``'s, slow): the golden cases whose tables are generated where they are
used are built by the reference writer, and ``fixtures verify`` verifies the cases pylance
produced without regenerating them, saying so in one line."""

from __future__ import annotations

import sys

import pytest

from conformance.cli import main
from conformance.fixtures import golden
from conformance.suite.kit.test_wheel import quick_start

ROOT = golden.DEFAULT_DIR
NOT_SHIPPED = [cid for cid, c in golden.CASES.items() if not c.shipped]


@pytest.fixture
def no_pylance(monkeypatch):
    """``import lance`` fails, as in a venv that has only the wheel's dependencies."""
    monkeypatch.setitem(sys.modules, "lance", None)
    with pytest.raises(ImportError):
        import lance  # noqa: F401


def test_every_generated_case_is_made_by_the_reference_writer():
    for cid in NOT_SHIPPED:
        case = golden.CASES[cid]
        assert case.producer == "reference", cid
        assert golden.load_case(ROOT / cid)["producer"].startswith("reference "), cid


@pytest.mark.parametrize("cid", ["base-paths-hot-cold", "base-paths-multi-region",
                                 "base-paths-not-root"])
def test_base_path_cases_build_and_verify_without_pylance(no_pylance, cid):
    assert golden.verify_case(ROOT / cid, regenerate=True) == []


def test_a_pylance_case_is_verified_but_not_regenerated_without_pylance(no_pylance):
    doc = golden.load_case(ROOT / "legacy-file")
    assert "interop" in golden.regeneration_blocked(doc)
    assert golden.regeneration_blocked(golden.load_case(ROOT / "update")) is None
    assert golden.verify_case(ROOT / "legacy-file", regenerate=True) == []


def test_verify_says_which_cases_it_did_not_regenerate(no_pylance, capsys):
    assert main(["fixtures", "verify", "--case", "legacy-file", "--case", "update"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "ok   legacy-file (not regenerated)" in out and "ok   update" in out
    assert out[-2] == ("1 cases not regenerated: its producer pylance is not installed "
                       "(python -m pip install 'lance-conformance[interop]')")
    assert out[-1] == "2 of 2 cases verify"


def test_the_readme_quick_start_is_a_bash_block_of_commands():
    from pathlib import Path

    text = (Path(__file__).resolve().parents[3] / "README.md").read_text()
    lines = [ln for ln in quick_start(text).splitlines() if ln.strip()]
    assert lines[0].startswith("python -m pip install lance_conformance-")
    assert any(ln.startswith("lance-conformance run --impl reference") for ln in lines)
    assert any(ln.startswith("lance-conformance fixtures verify") for ln in lines)
    assert any(ln.startswith("lance-conformance fuzz ") for ln in lines)
    assert any(ln.startswith("pytest --lance-impl=") for ln in lines)
