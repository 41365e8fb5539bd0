"""The kit as vendors install it: ``python -m build`` makes a wheel that carries the golden and
invalid fixtures; a fresh virtualenv that sees nothing of this interpreter's site-packages
(no ``--system-site-packages``) gets the wheel *with its declared dependencies*, offline, from
a local wheelhouse repacked from the distributions installed here (:mod:`.wheelhouse`); the
README's vendor quick start runs in it, exactly as written, from a folder under ``/tmp`` with
``PYTHONPATH`` unset; then the GitHub Action's steps (``action.yml``), as plain bash.

Nothing is borrowed from the interpreter that runs the tests: pylance is not in the venv (no
command the quick start runs needs it), and this works the same when the tests themselves run
inside a virtualenv. The wheel, the wheelhouse and the virtualenv are built once per session,
shared by the xdist workers under a lock. Marked ``slow``: building and installing take a few
minutes on a loaded 2-core machine.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

import jsonschema
import pytest

from conformance import kit
from conformance.harness import runner
from conformance.harness.adapter import load_adapter
from conformance.suite.kit import wheelhouse
from conformance.suite.parts import unavailable

pytestmark = [pytest.mark.slow, pytest.mark.timeout(2400)]

REPO = Path(__file__).resolve().parents[3]
SOURCES = ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md", "action.yml",
           "conformance", "reference_impl", "fixtures")
IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", "build", "dist", "*.egg-info",
                                ".pytest_cache", "_fixtures")
QUICK_START = "## For vendors: quick start from the wheel"
LONG = 1500  # seconds: a step that installs or runs every case, on a loaded 2-core machine


def quick_start(readme: str) -> str:
    """The bash block of the README's vendor quick start."""
    section = readme.split(QUICK_START, 1)[1]
    return re.search(r"```bash\n(.*?)```", section, re.S).group(1)


def requirements(wheel: Path) -> list[str]:
    """The wheel's own ``Requires-Dist`` (no extra) and ``pytest`` (the quick start's last
    line runs the cases in pytest)."""
    from packaging.requirements import Requirement

    with zipfile.ZipFile(wheel) as zf:
        meta = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
        lines = zf.read(meta).decode().splitlines()
    reqs = [ln.split(":", 1)[1].strip() for ln in lines if ln.startswith("Requires-Dist:")]
    return [r for r in reqs if Requirement(r).marker is None] + ["pytest"]


@dataclass
class Installed:
    wheel: Path
    sdist: Path
    venv: Path
    source: Path  # the copy of the checkout the wheel was built from
    house: Path  # the wheelhouse
    start: Path  # the folder the quick start ran in; start.json: its outcome

    @property
    def bin(self) -> Path:
        return self.venv / "bin"

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items()
               if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PIP_REQUIRE_VIRTUALENV")}
        env["PATH"] = f"{self.bin}{os.pathsep}{env.get('PATH', '')}"
        env["VIRTUAL_ENV"] = str(self.venv)
        # pip finds the wheel's dependencies in the wheelhouse, never on an index
        env.update(PIP_NO_INDEX="1", PIP_FIND_LINKS=str(self.house),
                   PIP_DISABLE_PIP_VERSION_CHECK="1")
        return env

    def run(self, *argv: str, cwd: Path, timeout: float = LONG) -> subprocess.CompletedProcess:
        return subprocess.run(list(argv), cwd=cwd, env=self.env(), capture_output=True,
                              text=True, timeout=timeout)

    def quick_start_outcome(self) -> dict:
        return json.loads((self.start / "start.json").read_text())


def _build(root: Path) -> Installed:
    src, dist, venv = root / "src", root / "dist", root / "venv"
    for name in SOURCES:
        path = REPO / name
        if path.is_dir():
            shutil.copytree(path, src / name, ignore=IGNORE)
        else:
            src.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, src / name)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    # sdist, then the wheel from the sdist, with the installed setuptools (no download)
    done = subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(dist),
                           str(src)], env=env, capture_output=True, text=True, timeout=LONG)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    wheel, = dist.glob("*.whl")
    sdist, = dist.glob("*.tar.gz")
    house = root / "wheelhouse"
    wheelhouse.build(requirements(wheel), house)
    # a fresh virtualenv of the base interpreter, with pip and nothing else
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", str(venv)], check=True, env=env, capture_output=True,
                   timeout=LONG)
    start = root / "quick-start"
    start.mkdir()
    installed = Installed(wheel, sdist, venv, src, house, start)
    # the README's vendor quick start, as written, from a folder that holds the wheel
    shutil.copy2(wheel, start / wheel.name)
    script = quick_start((src / "README.md").read_text())
    done = subprocess.run(["bash", "-e", "-x", "-c", script], cwd=start, env=installed.env(),
                          capture_output=True, text=True, timeout=3 * LONG)
    (start / "start.json").write_text(json.dumps(
        {"returncode": done.returncode, "stdout": done.stdout, "stderr": done.stderr[-20000:]}))
    return installed


@pytest.fixture(scope="session")
def installed(tmp_path_factory) -> Installed:
    try:
        import build  # noqa: F401
    except ImportError as exc:
        unavailable("python -m build", f"import build failed: {exc!r} (the test extra has it)")
    # one folder per session, shared by its xdist workers (theirs are popen-gwN/ under it)
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    root = shared / "wheel"
    with open(shared / "wheel.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (root / "ready").exists():
            if root.exists():
                shutil.rmtree(root)
            built = _build(root)
            (root / "ready").write_text(json.dumps({"wheel": str(built.wheel)}))
    return Installed(next((root / "dist").glob("*.whl")), next((root / "dist").glob("*.tar.gz")),
                     root / "venv", root / "src", root / "wheelhouse", root / "quick-start")


@pytest.fixture
def elsewhere():
    """An empty folder under /tmp, far from the checkout."""
    path = Path(tempfile.mkdtemp(prefix="lance-conformance-elsewhere-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _planned(spec: str) -> list[str]:
    """The case ids a run of ``spec`` executes from this checkout."""
    with load_adapter(spec) as adapter, tempfile.TemporaryDirectory() as tmp:
        return [cid for cid, _, _ in runner.plan(adapter, Path(tmp), suite="all")]


def test_the_wheel_is_the_whole_kit(installed, elsewhere):
    size = installed.wheel.stat().st_size
    assert 1 << 20 < size < 10 << 20, size  # the fixtures are in, and it stays small (~2.8 MB)
    import zipfile

    names = zipfile.ZipFile(installed.wheel).namelist()
    fixture_files = [n for n in names if n.startswith("conformance/_fixtures/")]
    checkout_files = [p for p in (REPO / "fixtures").rglob("*") if p.is_file()
                      and p.parts[len(REPO.parts) + 1] in ("golden", "invalid")]
    assert len(fixture_files) == len(checkout_files)
    for needed in ("conformance/schemas/run-report.schema.json", "conformance/harness/PROTOCOL.md",
                   "conformance/harness/examples/lancedb_node/adapter.mjs",
                   "conformance/harness/examples/lancedb_node/package.json",
                   "conformance/compat/release_adapter.py"):
        assert needed in names, needed
    assert not any(n.startswith("fixtures/") for n in names)

    py = str(installed.bin / "python")
    done = installed.run(py, "-c", "import conformance, conformance.kit as k; "
                         "print(conformance.__file__); print(k.fixtures_root())", cwd=elsewhere)
    module, root = done.stdout.split()
    assert Path(module).is_relative_to(installed.venv), module  # the venv's copy, not the checkout
    assert Path(root) == Path(module).parent / "_fixtures"

    # the venv is isolated: its dependencies are its own, and pylance is not among them
    done = installed.run(py, "-c", "import importlib.util as u, pyarrow, hypothesis, jsonschema; "
                         "print(pyarrow.__file__); print(hypothesis.__file__); "
                         "print(jsonschema.__file__); print(u.find_spec('lance'))", cwd=elsewhere)
    assert done.returncode == 0, done.stderr
    *paths, lance_spec = done.stdout.split()
    assert all(Path(p).is_relative_to(installed.venv) for p in paths), paths
    assert lance_spec == "None"

    # the same cases, byte for byte: the digest of the case set is the checkout's
    done = installed.run("lance-conformance", "--version", cwd=elsewhere)
    assert done.returncode == 0, done.stderr
    assert f"cases sha256:{kit.case_set()['sha256']} " in done.stdout
    assert f"fixtures {root}" in done.stdout


def test_the_readme_quick_start_runs_as_written(installed):
    """The vendor quick start of the README, every line, in the fresh venv (the session
    fixture ran it, ``bash -e``: the first line installs the wheel and its dependencies)."""
    done = installed.quick_start_outcome()
    assert done["returncode"] == 0, done["stdout"][-3000:] + done["stderr"][-5000:]
    out = done["stdout"]
    assert f"lance-conformance {kit.version()}" in out
    assert "PASS 59, FAIL 0, UNSUPPORTED 0, ERROR 0, SKIP 0" in out  # run --impl reference
    assert "39 of 39 cases verify" in out  # fixtures verify
    assert re.search(r"fuzz reference .*: \d+ examples, .*: no failure", out), out[-3000:]
    assert "PASS 37, FAIL 0" in out  # the example program, through cmd:
    assert re.search(r"\b37 passed\b", out)  # the same cases in pytest
    assert "written-by-you.lance conforms" in out
    assert (installed.start / "run.xml").is_file()


def test_run_and_verify_from_the_wheel(installed, elsewhere):
    done = installed.run("lance-conformance", "run", "--impl", "reference", "--json",
                         cwd=elsewhere)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    doc = json.loads(done.stdout)
    jsonschema.validate(doc, kit.schema("run-report"))
    from_checkout = _planned("reference")
    assert [r["id"] for r in doc["results"]] == from_checkout
    assert len(from_checkout) == len(runner.suite_case_ids("all")) == 59
    assert doc["counts"]["PASS"] == 59, doc["counts"]
    assert doc["provenance"]["cases"]["sha256"] == kit.case_set()["sha256"]

    done = installed.run("lance-conformance", "fixtures", "verify", cwd=elsewhere)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert done.stdout.rstrip().endswith("39 of 39 cases verify")
    # no pylance in the venv: the cases it produced are verified, not regenerated, and say so
    assert "cases not regenerated: its producer pylance is not installed" in done.stdout
    assert "regeneration failed" not in done.stdout

    table = kit.fixtures_root() / "golden" / "types-2.2" / "table"
    done = installed.run("lance-conformance", "validate", str(table), "--format", "json",
                         cwd=elsewhere)
    assert done.returncode == 0, done.stderr
    jsonschema.validate(json.loads(done.stdout), kit.schema("report"))
    done = installed.run("lance-conformance", "compat", "--writers", "reference", "--readers",
                         "reference", "--scenarios", "create", "--json", "m.json",
                         "--no-progress", cwd=elsewhere)
    assert done.returncode == 0, done.stderr
    jsonschema.validate(json.loads((elsewhere / "m.json").read_text()), kit.schema("compat"))

    done = installed.run("lance-conformance", "fuzz", "--impl", "reference", "--examples", "3",
                         "--seed", "7", "--json", cwd=elsewhere)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


def test_an_optional_part_names_its_extra(installed, elsewhere):
    """pylance is the ``interop`` extra: asked for without it, one line and exit 2."""
    done = installed.run("lance-conformance", "run", "--impl", "pylance", cwd=elsewhere)
    assert done.returncode == 2, done.stdout[-2000:] + done.stderr
    assert done.stderr.strip() == ("lance-conformance: this needs 'lance', an optional part: "
                                   "python -m pip install 'lance-conformance[interop]'")
    assert done.stdout == ""


def test_the_pytest_plugin_from_the_wheel(installed, elsewhere):
    done = installed.run(str(installed.bin / "python"), "-m", "pytest", "-q", "-p",
                         "no:cacheprovider", "--rootdir", str(elsewhere), "--collect-only",
                         "--lance-impl=reference", cwd=elsewhere)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    items = [line.strip(":") for line in done.stdout.splitlines() if "lance::" in line]
    assert items == [f"lance::{cid}" for cid in _planned("reference")]
    assert len(items) == 59


# -- the GitHub Action as a shell script ----------------------------------------------------

_EXPR = re.compile(r"\$\{\{\s*(inputs\.([\w-]+)|github\.action_path)\s*\}\}")


def run_action(inputs: dict[str, str], *, action_path: Path, env: dict, cwd: Path) -> list:
    """Run the steps of ``action.yml`` one after the other with bash, as GitHub would: each
    step's ``env`` with the ``${{ inputs.* }}`` and ``${{ github.action_path }}`` it names
    filled in; stop at the first step that fails. Returns ``[(name, CompletedProcess)]``."""
    import yaml

    doc = yaml.safe_load((action_path / "action.yml").read_text())
    assert doc["runs"]["using"] == "composite"
    values = {k: str(v.get("default", "")) for k, v in doc["inputs"].items()}
    unknown = set(inputs) - set(values)
    assert not unknown, unknown
    values.update(inputs)

    def fill(text: str) -> str:
        return _EXPR.sub(lambda m: str(action_path) if m.group(1) == "github.action_path"
                         else values[m.group(2)], text)

    results = []
    for step in doc["runs"]["steps"]:
        assert step["shell"] == "bash" and "${{" not in step["run"]  # inputs come from env
        step_env = dict(env) | {k: fill(str(v)) for k, v in step.get("env", {}).items()}
        done = subprocess.run(["bash", "-c", step["run"]], cwd=cwd, env=step_env,
                              capture_output=True, text=True, timeout=900)
        results.append((step["name"], done))
        if done.returncode:
            break
    return results


def _small_table(path: Path) -> Path:
    import pyarrow as pa

    import reference_impl as ri

    ds = ri.write_dataset(pa.table({"id": list(range(10))}), str(path), data_storage_version="2.1")
    ds.delete("id < 3")
    return path


def test_the_action_steps_as_a_shell_script(installed, elsewhere):
    env = installed.env()
    table = _small_table(elsewhere / "out.lance")
    base = elsewhere / "baseline.json"
    done = installed.run("lance-conformance", "compat", "--writers", "reference", "--readers",
                         "reference", "--scenarios", "create,delete", "--json", str(base),
                         "--no-progress", cwd=elsewhere)
    assert done.returncode == 0, done.stderr
    inputs = {"kit": str(installed.wheel), "pip-args": "--no-deps --no-index", "table": str(table),
              "impl": "reference", "suite": "read", "baseline": str(base),
              "compat-writers": "reference", "compat-readers": "reference",
              "compat-scenarios": "create,delete", "reports": str(elsewhere / "reports")}
    steps = run_action(inputs, action_path=installed.source, env=env, cwd=elsewhere)
    assert [name for name, _ in steps] == ["Install the kit", "Validate the writer's output",
                                           "Run the harness", "Gate on the compatibility baseline"]
    for name, p in steps:
        assert p.returncode == 0, (name, p.stdout[-2000:], p.stderr[-2000:])
    assert f"lance-conformance {kit.version()}" in steps[0][1].stdout
    assert "::notice title=lance-conformance::" in steps[1][1].stdout
    assert "conforms" in steps[1][1].stdout and "::error" not in steps[1][1].stdout
    assert "PASS 37, FAIL 0" in steps[2][1].stdout
    assert "no cell got worse than the baseline" in steps[3][1].stdout
    reports = elsewhere / "reports"
    assert {p.name for p in reports.iterdir()} >= {"run.xml", "run.html", "compat.json",
                                                   "compat.xml", "compat.html"}


def test_the_action_fails_on_a_broken_table_and_on_nothing_to_check(installed, elsewhere):
    broken = elsewhere / "broken.lance"
    shutil.copytree(REPO / "fixtures" / "invalid" / "FLAGS-003" / "table", broken)
    inputs = {"kit": str(installed.wheel), "pip-args": "--no-deps --no-index",
              "table": str(broken), "validate-args": "--all-versions"}
    steps = run_action(inputs, action_path=installed.source, env=installed.env(), cwd=elsewhere)
    assert [name for name, _ in steps] == ["Install the kit", "Validate the writer's output"]
    name, p = steps[-1]
    assert p.returncode == 1, (p.stdout, p.stderr)
    assert "::error file=" in p.stdout and "title=FLAGS-003" in p.stdout
    # no input that checks anything: the first step refuses
    steps = run_action({"kit": str(installed.wheel), "pip-args": "--no-deps --no-index"},
                       action_path=installed.source, env=installed.env(), cwd=elsewhere)
    assert len(steps) == 1 and steps[0][1].returncode == 2
    assert "this job would check nothing" in steps[0][1].stdout
