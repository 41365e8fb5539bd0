"""Every command fails closed: a run that would check nothing, or less than its suite holds,
exits 2 with one line saying what is missing, never 0 (issue 29: a vendor's CI gates on the
exit code, and a kit that passes with zero checks is worse than none)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

from conformance.cli import main
from conformance.fixtures import golden
from conformance.harness import runner
from conformance.harness.adapter import Adapter, Capabilities, Unsupported

REPO = Path(__file__).resolve().parents[3]
GOLDEN = REPO / "fixtures" / "golden"
EXAMPLE = REPO / "conformance" / "harness" / "examples" / "subprocess_reader.py"
READS = [cid for cid in runner.suite_case_ids("read")]


def _one_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    return lines[0]


class NeverReads(Adapter):
    """Declares reading, then finds every read unsupported (fuzz: nothing judged)."""

    name = "never-reads"
    capabilities = Capabilities(read=True)

    def read(self, uri, version=None, *, with_row_id=False) -> pa.Table:
        raise Unsupported("nothing today")


# -- run -----------------------------------------------------------------------------------

def test_the_suite_holds_every_golden_case_and_scenario():
    ids = runner.suite_case_ids("all")
    assert len(ids) == len(set(ids)) == 59
    assert runner.fixture_case_ids(GOLDEN) == set(golden.CASES)
    assert {f"read.{c}" for c in golden.CASES} >= set(READS)


def test_run_against_an_empty_fixtures_folder(tmp_path, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["run", "--impl", "reference", "--fixtures", str(empty)]) == 2
    out, err = capsys.readouterr()
    line = _one_line(err)
    assert line.startswith("run: 39 of the 59 cases of --suite all are missing "
                           f"({empty} holds no case) and no skip-file names them: read.")
    assert "PASS" not in out  # nothing ran
    assert main(["run", "--impl", "reference", "--suite", "read", "--fixtures", str(empty)]) == 2
    assert _one_line(capsys.readouterr().err) == (
        f"run: no case to run: the golden cases of --suite read are missing ({empty} holds no case)")


def test_run_with_the_fixtures_missing(tmp_path, monkeypatch, capsys):
    gone = tmp_path / "site-packages" / "conformance" / "_fixtures" / "golden"
    monkeypatch.setattr(golden, "DEFAULT_DIR", gone)
    assert main(["run", "--impl", "reference", "--suite", "read"]) == 2
    assert _one_line(capsys.readouterr().err) == (
        f"run: no case to run: the golden cases of --suite read are missing ({gone} does not exist)")
    assert main(["run", "--impl", "reference", "--suite", "write", "--no-pylance-check"]) == 2
    line = _one_line(capsys.readouterr().err)
    assert "2 of the 22 cases of --suite write are missing" in line
    assert "write.reject-unknown-txn-operation" in line


def test_a_skip_file_naming_each_missing_case_lets_the_rest_run(tmp_path, capsys):
    part = tmp_path / "golden"
    for cid in ("deletion-arrow", "tags"):
        shutil.copytree(GOLDEN / cid, part / cid)
    assert main(["run", "--impl", "reference", "--suite", "read", "--fixtures", str(part)]) == 2
    assert "35 of the 37 cases of --suite read are missing" in _one_line(capsys.readouterr().err)
    skip = tmp_path / "skip.txt"
    missing = [cid for cid in READS if cid not in ("read.deletion-arrow", "read.tags")]
    skip.write_text("".join(f"{cid}  # not shipped here\n" for cid in missing[1:]))
    assert main(["run", "--impl", "reference", "--suite", "read", "--fixtures", str(part),
                 "--skip-file", str(skip)]) == 2  # one still unnamed
    assert missing[0] in _one_line(capsys.readouterr().err)
    skip.write_text(skip.read_text() + f"{missing[0]}  # nor this\n")
    assert main(["run", "--impl", "reference", "--suite", "read", "--fixtures", str(part),
                 "--skip-file", str(skip)]) == 0
    out = capsys.readouterr().out
    assert "PASS        read.deletion-arrow" in out and "PASS        read.tags" in out
    assert "\nPASS 2, FAIL 0, UNSUPPORTED 0, ERROR 0, SKIP 0\n" in out


def test_a_skip_file_skipping_everything_runs_nothing(tmp_path, capsys):
    skip = tmp_path / "skip.txt"
    skip.write_text("read.*  # not today\n")
    assert main(["run", "--impl", "reference", "--suite", "read", "--skip-file", str(skip)]) == 2
    assert _one_line(capsys.readouterr().err) == (
        "run: no case to run: the skip-file skips all 37 cases of --suite read")


def test_a_run_that_judged_no_case(capsys):
    code = main(["run", "--impl", f'cmd:"{sys.executable} {EXAMPLE}"', "--suite", "write"])
    out, err = capsys.readouterr()
    assert code == 2, out
    assert _one_line(err) == ("run: no case was judged: 22 UNSUPPORTED, 0 skipped "
                              "(example-subprocess-reader can do nothing --suite write asks)")
    assert "UNSUPPORTED 22" in out


def test_replaying_an_unsupported_case_judged_nothing(monkeypatch, capsys):
    from conformance.harness import fuzz

    doc = {"id": "c1", "impl": "reference", "role": "reader"}
    monkeypatch.setattr(fuzz, "load_case", lambda path: doc)

    def refuse(doc, adapter):
        raise Unsupported("no such kind")

    monkeypatch.setattr(fuzz, "replay_case", refuse)
    assert main(["run", "--case", "c1.json"]) == 2
    out, err = capsys.readouterr()
    assert out.startswith("UNSUPPORTED (no such kind) c1")
    assert _one_line(err) == "run: the case was not judged: reference cannot replay it"


# -- the pytest plugin ---------------------------------------------------------------------

def _pytest(tmp_path, *args) -> subprocess.CompletedProcess:
    from importlib.metadata import entry_points

    plugin = [] if any(ep.value == "conformance.harness.pytest_plugin"
                       for ep in entry_points(group="pytest11")) else [
        "-p", "conformance.harness.pytest_plugin"]
    return subprocess.run([sys.executable, "-m", "pytest", *plugin, "-q", "-p", "no:cacheprovider",
                           "--rootdir", str(tmp_path), *args], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["in-process", "xdist"])
def test_the_plugin_refuses_a_suite_without_items(tmp_path, workers):
    empty = tmp_path / "empty"
    empty.mkdir()
    done = _pytest(tmp_path, *workers, "--lance-impl=reference", "--lance-suite=read",
                   f"--lance-fixtures={empty}")
    assert done.returncode == pytest.ExitCode.USAGE_ERROR, done.stdout + done.stderr
    assert ("ERROR: lance-conformance: no case to run: the golden cases of --suite read are "
            f"missing ({empty} holds no case)") in done.stderr


def test_the_plugin_fails_a_session_that_judged_nothing(tmp_path):
    done = _pytest(tmp_path, f"--lance-impl=cmd:{sys.executable} {EXAMPLE}", "--lance-suite=write")
    assert done.returncode == pytest.ExitCode.USAGE_ERROR, done.stdout + done.stderr
    assert "lance-conformance: no case was judged: all 22 case items were skipped" in done.stdout


# -- the other commands --------------------------------------------------------------------

def test_fixtures_verify_with_nothing_to_verify(tmp_path, capsys):
    assert main(["fixtures", "verify", "--dir", str(tmp_path)]) == 2
    line = _one_line(capsys.readouterr().err)
    assert line.startswith(f"fixtures verify: nothing to verify: {tmp_path} holds no case")
    assert main(["fixtures", "verify", "--dir", str(tmp_path / "gone")]) == 2
    assert "does not exist" in _one_line(capsys.readouterr().err)


def test_validate_with_no_rule_left(capsys):
    table = str(GOLDEN / "types-2.2" / "table")
    assert main(["validate", table, "--rules", "ENC-001"]) == 2  # a deep rule, without --deep
    out, err = capsys.readouterr()
    assert "rules checked: 0" in out
    assert _one_line(err).startswith("lance-conformance validate: no rule was checked")
    assert main(["validate", table, "--rules", "ENC-001", "--deep"]) == 0
    # something that is not a table is refused, as before: no dataset at all, or no version
    assert main(["validate", str(REPO / "fixtures" / "no-such-table")]) == 2
    assert main(["validate", str(REPO / "fixtures")]) == 1
    assert "LAYOUT-001" in capsys.readouterr().out


def test_compat_that_read_no_cell(tmp_path, capsys):
    # the reference writes no index: every cell is not written, nothing is read
    assert main(["compat", "--writers", "reference", "--readers", "reference", "--scenarios",
                 "index", "--no-progress"]) == 2
    assert "compat: no cell was read (1 cells" in _one_line(capsys.readouterr().err)


def test_compat_baseline_that_shares_no_cell(tmp_path, capsys):
    base = tmp_path / "base.json"
    assert main(["compat", "--writers", "reference", "--readers", "reference", "--scenarios",
                 "create", "--json", str(base), "--no-progress"]) == 0
    capsys.readouterr()
    assert main(["compat", "--writers", "reference", "--readers", "reference", "--scenarios",
                 "create", "--baseline", str(base), "--no-progress"]) == 0
    assert "no cell got worse than the baseline" in capsys.readouterr().out
    doc = json.loads(base.read_text())
    for c in doc["cells"]:
        c["writer"] = "someone-else"
    base.write_text(json.dumps(doc))
    assert main(["compat", "--writers", "reference", "--readers", "reference", "--scenarios",
                 "create", "--baseline", str(base), "--no-progress"]) == 2
    assert "shares no cell" in _one_line(capsys.readouterr().err)


def test_fuzz_that_judged_no_example(capsys):
    spec = f"{__name__}:NeverReads"
    assert main(["fuzz", "--impl", spec, "--role", "reader", "--examples", "3"]) == 2
    assert _one_line(capsys.readouterr().err) == (
        f"fuzz: no example was judged: all 3 were UNSUPPORTED by {spec} in the reader role")


def test_stress_where_no_commit_succeeded(tmp_path, monkeypatch, capsys):
    from conformance.concurrency import stress

    def nothing(uri, **kw):
        return stress.StressReport(0, 0, 8, 0, 0, [], 0.1, writer_errors=["StoreError: denied"])

    monkeypatch.setattr(stress, "run_stress", nothing)
    assert main(["stress", str(tmp_path / "t"), "--writers", "2", "--commits", "4"]) == 2
    assert _one_line(capsys.readouterr().err) == (
        "stress: no commit succeeded (8 rejected): nothing could be checked for loss; "
        "first writer error: StoreError: denied")


def test_mutate_that_judged_nothing(tmp_path, monkeypatch, capsys):
    from conformance.releases import mutations

    assert main(["fixtures", "mutate", "--count", "0"]) == 2
    assert "--count must be at least 1" in _one_line(capsys.readouterr().err)
    monkeypatch.setattr(mutations, "corpus_roots", lambda *a: [tmp_path])
    monkeypatch.setattr(mutations, "campaign", lambda *a: iter(()))
    assert main(["fixtures", "mutate", "--count", "3", "--corpus", str(tmp_path),
                 "--reader-python", sys.executable, "--work", str(tmp_path / "w")]) == 2
    assert _one_line(capsys.readouterr().err) == "fixtures mutate: no mutation was judged"


def test_cross_release_that_judged_no_root(tmp_path, monkeypatch, capsys):
    from conformance.releases import corpus

    monkeypatch.setattr(corpus, "build", lambda rel, out, force=False: out)
    monkeypatch.setattr(corpus, "judge", lambda folder: [])
    assert main(["fixtures", "cross-release", "--writers", "pylance==14.0.2", "--out",
                 str(tmp_path)]) == 2
    assert _one_line(capsys.readouterr().err) == "fixtures cross-release: no table root was judged"
