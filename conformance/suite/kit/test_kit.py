"""The kit's identity (conformance/kit.py): one resolver for the fixtures (a checkout's
``fixtures/`` or the copy a wheel carries), the digests every report names, and
``lance-conformance --version``."""

from __future__ import annotations

import hashlib
import re
import shutil
import tomllib
from pathlib import Path

import pytest

import conformance
from conformance import kit
from conformance.cli import main
from conformance.fixtures import golden
from conformance.rules.registry import SPEC_FILES, SPEC_SHA256, SPEC_TEXTS
from conformance.suite.parts import spec_dir, unavailable

REPO = Path(__file__).resolve().parents[3]


def test_a_checkout_uses_its_own_fixtures():
    assert kit.CHECKOUT == REPO
    assert kit.fixtures_root() == REPO / "fixtures"
    assert golden.DEFAULT_DIR == REPO / "fixtures" / "golden"
    assert kit.invalid_dir() == REPO / "fixtures" / "invalid"


def _fake_fixtures(root: Path, cases: list[str]) -> Path:
    for kind in ("golden", "invalid"):
        for cid in cases:
            (root / kind / cid).mkdir(parents=True)
            (root / kind / cid / "case.json").write_text(f'{{"id": "{cid}"}}\n')
    return root


def test_an_installed_kit_uses_the_copy_its_wheel_carries(tmp_path, monkeypatch):
    packaged = _fake_fixtures(tmp_path / "site" / "conformance" / "_fixtures", ["a"])
    monkeypatch.setattr(kit, "CHECKOUT", None)
    monkeypatch.setattr(kit, "PACKAGED_FIXTURES", packaged)
    assert kit.fixtures_searched() == [packaged]
    assert kit.fixtures_root() == packaged and kit.golden_dir() == packaged / "golden"
    # a checkout wins over the packaged copy when both are there
    checkout = tmp_path / "repo"
    _fake_fixtures(checkout / "fixtures", ["b"])
    monkeypatch.setattr(kit, "CHECKOUT", checkout)
    assert kit.fixtures_root() == checkout / "fixtures"


def test_no_fixtures_anywhere_names_where_it_looked(tmp_path, monkeypatch):
    monkeypatch.setattr(kit, "CHECKOUT", None)
    monkeypatch.setattr(kit, "PACKAGED_FIXTURES", tmp_path / "nowhere")
    assert kit.fixtures_root() is None
    assert kit.golden_dir() == tmp_path / "nowhere" / "golden"
    assert kit.describe_missing(kit.golden_dir()).endswith("does not exist")
    with pytest.raises(ValueError):
        kit.fixtures_dir("other")


def test_the_case_digest_follows_every_byte_and_name(tmp_path, monkeypatch):
    root = _fake_fixtures(tmp_path / "f", ["a", "b"])
    monkeypatch.setattr(kit, "invalid_dir", lambda: root / "invalid")
    first = kit.case_set(root / "golden")
    assert first["golden"] == 2 and first["invalid"] == 2 and first["scenarios"] == 20
    assert re.fullmatch(r"[0-9a-f]{64}", first["sha256"])
    kit._case_set.cache_clear()
    assert kit.case_set(root / "golden") == first  # deterministic
    (root / "golden" / "a" / "case.json").write_text('{"id": "a", "x": 1}\n')
    kit._case_set.cache_clear()
    changed = kit.case_set(root / "golden")
    assert changed["sha256"] != first["sha256"]
    (root / "golden" / "a" / "case.json").write_text('{"id": "a"}\n')
    (root / "golden" / "a" / "case.json").rename(root / "golden" / "a" / "other.json")
    kit._case_set.cache_clear()
    renamed = kit.case_set(root / "golden")
    assert renamed["sha256"] not in (first["sha256"], changed["sha256"])
    assert renamed["golden"] == 1  # the folder without case.json is no case
    kit._case_set.cache_clear()


def test_the_case_digest_does_not_depend_on_where_the_fixtures_lie(tmp_path, monkeypatch):
    here = kit.case_set()
    copy = tmp_path / "fixtures"
    shutil.copytree(REPO / "fixtures", copy)
    monkeypatch.setattr(kit, "invalid_dir", lambda: copy / "invalid")
    assert kit.case_set(copy / "golden") == here
    assert here["golden"] == len(golden.CASES) and here["invalid"] > 100


def test_the_spec_digests_are_the_texts_the_catalog_quotes():
    root = spec_dir()
    if root is None:
        unavailable("spec texts", "shared/spec is not beside the repository")
    assert set(SPEC_SHA256) == set(SPEC_TEXTS)
    for key in SPEC_TEXTS:
        text = (root / SPEC_FILES[key]).read_bytes()
        assert hashlib.sha256(text).hexdigest() == SPEC_SHA256[key], SPEC_FILES[key]
    spec = kit.spec_texts()
    assert sorted(spec["texts"]) == sorted(SPEC_FILES[k] for k in SPEC_TEXTS)


def test_the_version_is_one_number(capsys):
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert "version" in project["dynamic"]  # built from conformance.__version__
    assert kit.version() == conformance.__version__
    assert kit.provenance()["kit"] == {"name": "lance-conformance", "version": conformance.__version__}


def test_version_says_what_results_are_judged_against(capsys):
    assert main(["--version"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"lance-conformance {conformance.__version__}"
    cases = kit.case_set()
    assert lines[1].startswith(f"cases sha256:{cases['sha256']} ({cases['golden']} golden, ")
    assert lines[2] == f"fixtures {REPO / 'fixtures'}"
    assert lines[3].startswith(f"spec sha256:{kit.spec_texts()['sha256']} (5 texts)")


def test_provenance_names_the_implementation():
    p = kit.provenance({"name": "mine", "version": 3, "other": "x"})
    assert p["implementation"] == {"name": "mine", "version": "3"}
    assert kit.provenance()["implementation"] == {"name": "", "version": ""}
    line = kit.summary(p)
    assert line.startswith(f"lance-conformance {conformance.__version__}; cases sha256:")
    assert line.endswith("implementation mine 3")
    assert "<property name=\"implementation.name\" value=\"mine\"/>" in kit.junit_properties(p)


# -- the CI recipes --------------------------------------------------------------------------

def _readme_test_command() -> str:
    text = (REPO / "README.md").read_text()
    block = text.split("Run the tests", 1)[1].split("```bash\n", 1)[1].split("```", 1)[0]
    lines = [line for line in block.splitlines() if line.strip()]
    assert len(lines) == 1, lines
    return lines[0].strip()


def test_ci_runs_the_readme_test_command():
    ci = [line for line in (REPO / ".ci" / "run").read_text().splitlines()
          if line.strip() and not line.startswith("#")]
    assert ci[-1].strip() == _readme_test_command()
    assert "install-node-adapter" in ci[-1]  # the Node SDK's tests skip nothing under CI


def test_the_pre_commit_hooks_run_commands_of_the_kit():
    import yaml

    from conformance.cli import COMMANDS

    hooks = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())
    assert [h["id"] for h in hooks] == ["lance-conformance-validate", "lance-conformance-run"]
    for h in hooks:
        prog, command = h["entry"].split()
        assert prog == "lance-conformance" and command.replace("-", "_") in COMMANDS
        assert h["language"] == "python" and h["pass_filenames"] is False


def test_the_action_installs_the_kit_first_and_refuses_to_check_nothing():
    import yaml

    doc = yaml.safe_load((REPO / "action.yml").read_text())
    steps = doc["runs"]["steps"]
    assert doc["runs"]["using"] == "composite"
    assert steps[0]["name"] == "Install the kit" and "pip install" in steps[0]["run"]
    assert "exit 2" in steps[0]["run"]  # no table, impl nor baseline
    for step in steps:
        assert step["shell"] == "bash" and "${{" not in step["run"], step["name"]


@pytest.mark.interop
def test_the_dataset_benchmark_writes_the_readme_table(tmp_path, pylance, capsys):
    """``tools/bench_dataset.py --markdown``: a tiny run (2,000 rows, two storage versions,
    one repetition) writes the README's table, a cell per version with the three operations'
    wall-time ratios and their CPU-time ratios."""
    import importlib.util

    path = Path(__file__).resolve().parents[3] / "tools" / "bench_dataset.py"
    spec = importlib.util.spec_from_file_location("bench_dataset", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    table = tmp_path / "table.md"
    assert bench.main(["--rows", "2000", "--kinds", "ints", "--versions", "2.1,2.3", "--repeat", "1",
                       "--min-seconds", "0", "--dir", str(tmp_path / "data"), "--markdown", str(table)]) == 0
    text = table.read_text()
    lines = text.splitlines()
    assert lines[0] == "| ours / pylance: scan / deep / write | 2.1 | 2.3 |"
    row = next(line for line in lines if line.startswith("| 2000 ints |"))
    cells = [c.strip() for c in row.strip("|").split("|")][1:]
    for cell in cells:
        assert re.fullmatch(r"[0-9.]+ \([0-9.]+\) / [0-9.]+ \([0-9.]+\) / [0-9.]+ \([0-9.]+\)", cell)
    assert "1-minute load" in text
    assert re.search(r"^scan\s+2000 2\.1 ints\s", capsys.readouterr().out, re.M)  # (and the lines)


def test_the_dataset_benchmark_times_a_short_cell_for_long_enough(monkeypatch):
    """A cell of a few milliseconds is timed until its rounds add up to ``--min-seconds``
    (at most ten times ``--repeat`` rounds), and exactly ``--repeat`` rounds when its runs
    are long enough: three tries of a call shorter than a busy machine's time slice measure
    the slices."""
    import importlib.util

    path = Path(__file__).resolve().parents[3] / "tools" / "bench_dataset.py"
    spec = importlib.util.spec_from_file_location("bench_dataset", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    calls = []
    clock = [0.0]

    def fake(took):
        def call():
            calls.append(took)
            clock[0] += took
        return call

    import types

    monkeypatch.setattr(bench, "time", types.SimpleNamespace(perf_counter=lambda: clock[0],
                                                             process_time=lambda: clock[0]))
    bench.interleaved(fake(0.001), fake(0.002), 3, min_seconds=0.5)
    assert len(calls) == 2 * 30  # capped: 30 rounds of 3 ms are 90 ms, under 0.5 s
    calls.clear()
    bench.interleaved(fake(0.05), fake(0.05), 3, min_seconds=0.5)
    assert len(calls) == 2 * 5  # 5 rounds of 100 ms reach 0.5 s
    calls.clear()
    bench.interleaved(fake(0.4), fake(0.4), 3, min_seconds=0.5)
    assert len(calls) == 2 * 3  # never fewer than --repeat
