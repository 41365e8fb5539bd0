"""pytest plugin: run the conformance suite of an implementation inside pytest.

    pytest -p conformance.harness.pytest_plugin --lance-impl=pylance [--lance-suite=read]
           [--lance-skip-file=F] [--lance-fixtures=DIR]

(with the ``pytest11`` entry point installed, ``-p ...`` is not needed). With
``--lance-impl`` the plugin adds one test item per case of the suite, named by its stable
case id (``lance::read.deletion-arrow``, ``lance::write.stale-append``...): PASS passes,
FAIL and ERROR fail with the rule ids and message, UNSUPPORTED and skip-file entries skip
with their reason. Without ``--lance-impl`` the plugin adds nothing.

It fails closed as ``lance-conformance run`` does (:func:`~conformance.harness.runner.preflight`):
a suite that would add no item, or fewer than it holds without a skip-file naming each
missing case, is a usage error (pytest exits 4 with one line saying what is missing), and a
session whose case items all skipped (UNSUPPORTED or skip-file) judged nothing and exits 4 too.

    pytest --lance-impl=IMPL -m fuzz [--lance-fuzz-role=both] [--lance-fuzz-examples=N]
           [--lance-fuzz-seed=S] [--lance-fuzz-save=DIR]

adds, when the ``-m`` expression names ``fuzz``, one item per role (``lance::fuzz.writer``,
``lance::fuzz.reader``), marked ``fuzz``: ``lance-conformance fuzz`` run inside pytest. A
failure shows the shrunk script and the rule ids (and is saved as a case file with
``--lance-fuzz-save``).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from . import runner


def pytest_addoption(parser) -> None:
    g = parser.getgroup("lance-conformance")
    g.addoption("--lance-impl", default=None,
                help='implementation under test: reference, pylance, module:Class, cmd:"..."')
    g.addoption("--lance-suite", default="all", choices=("read", "write", "all"))
    g.addoption("--lance-skip-file", default=None, help="skip-file of case ids with reasons")
    g.addoption("--lance-fixtures", default=None, help="golden fixtures folder (default: the kit's own)")
    g.addoption("--lance-fuzz-role", default="both", choices=("writer", "reader", "both"))
    g.addoption("--lance-fuzz-examples", type=int, default=50, help="fuzz examples per role")
    g.addoption("--lance-fuzz-seed", type=int, default=0)
    g.addoption("--lance-fuzz-save", default=None, help="save fuzz failures as case files here")


class LanceCaseFailed(Exception):
    pass


class LanceCaseItem(pytest.Item):
    def __init__(self, *, case_id: str, kind: str, job, skip_reason: str | None, **kw) -> None:
        super().__init__(**kw)
        self.case_id, self.kind, self.job, self.skip_reason = case_id, kind, job, skip_reason

    def runtest(self) -> None:
        if self.skip_reason is not None:
            pytest.skip(f"skip-file: {self.skip_reason}")
        r = runner.run_job(self.case_id, self.kind, self.job)
        if r.outcome in (runner.UNSUPPORTED, runner.SKIP):
            pytest.skip(f"{r.outcome}: {r.message}")
        if r.outcome != runner.PASS:
            raise LanceCaseFailed(f"{r.outcome} [{', '.join(r.rules)}] {r.message}")

    def repr_failure(self, excinfo):
        if isinstance(excinfo.value, LanceCaseFailed):
            return f"{self.case_id}: {excinfo.value}"
        return super().repr_failure(excinfo)

    def reportinfo(self):
        return self.path, None, f"lance::{self.case_id}"


class LanceFuzzItem(pytest.Item):
    """``lance-conformance fuzz`` in one role, as a pytest item."""

    def __init__(self, *, role: str, examples: int, seed: int, save: str | None, **kw) -> None:
        super().__init__(**kw)
        self.role, self.examples, self.seed, self.save = role, examples, seed, save
        self.add_marker(pytest.mark.fuzz)

    def runtest(self) -> None:
        from . import fuzz
        from .adapter import Unsupported

        try:
            result = fuzz.fuzz(_State.adapter, role=self.role, examples=self.examples,
                               seed=self.seed, impl=_State.spec)
        except Unsupported as exc:
            pytest.skip(f"UNSUPPORTED: {exc}")
        if not result.ok:
            if self.save:
                fuzz.save_case(result, Path(self.save))
            raise LanceCaseFailed(result.summary())

    def repr_failure(self, excinfo):
        if isinstance(excinfo.value, LanceCaseFailed):
            return f"fuzz.{self.role}: {excinfo.value}"
        return super().repr_failure(excinfo)

    def reportinfo(self):
        return self.path, None, f"lance::fuzz.{self.role}"


def pytest_configure(config) -> None:
    """Refuse, before anything runs (on the xdist controller too), a suite that would add
    no case item or fewer than it holds (:func:`~conformance.harness.runner.preflight`)."""
    if not config.getoption("--lance-impl", None):
        return
    suite = config.getoption("--lance-suite")
    fixtures = config.getoption("--lance-fixtures")
    fixtures = Path(fixtures) if fixtures else None
    skips = {}
    if config.getoption("--lance-skip-file"):
        try:
            skips = runner.parse_skip_file(Path(config.getoption("--lance-skip-file")).read_text())
        except OSError as exc:
            raise pytest.UsageError(f"lance-conformance: cannot read the skip-file: {exc}") from None
    with tempfile.TemporaryDirectory(prefix="lance-conformance-plan-") as tmp:
        planned = [cid for cid, _, _ in runner.plan(None, Path(tmp), suite=suite, fixtures=fixtures)]
    problem = runner.preflight(planned, suite=suite, fixtures=fixtures, skips=skips)
    if problem:
        raise pytest.UsageError(f"lance-conformance: {problem}")


def _wants_fuzz(config) -> bool:
    return "fuzz" in (config.getoption("markexpr", "") or "").replace("not fuzz", "")


class _State:
    adapter = None
    tmp = None
    spec = None
    ran = 0      # case items that ran
    judged = 0   # ... and passed or failed (not skipped)


@pytest.hookimpl(tryfirst=True)  # before -k/-m deselect the items
def pytest_collection_modifyitems(session, config, items) -> None:
    spec = config.getoption("--lance-impl")
    if not spec:
        return
    from .adapter import load_adapter

    skips = {}
    if config.getoption("--lance-skip-file"):
        skips = runner.parse_skip_file(Path(config.getoption("--lance-skip-file")).read_text())
    _State.adapter = load_adapter(spec)
    _State.spec = spec
    _State.tmp = tempfile.TemporaryDirectory(prefix="lance-conformance-pytest-")
    fixtures = config.getoption("--lance-fixtures")
    jobs = runner.plan(_State.adapter, Path(_State.tmp.name), suite=config.getoption("--lance-suite"),
                       fixtures=Path(fixtures) if fixtures else None)
    for cid, kind, job in jobs:
        items.append(LanceCaseItem.from_parent(session, name=f"lance::{cid}", case_id=cid, kind=kind,
                                               job=job, skip_reason=runner._skipped(cid, skips)))
    if _wants_fuzz(config):
        role = config.getoption("--lance-fuzz-role")
        for r in (("writer", "reader") if role == "both" else (role,)):
            items.append(LanceFuzzItem.from_parent(
                session, name=f"lance::fuzz.{r}", role=r,
                examples=config.getoption("--lance-fuzz-examples"),
                seed=config.getoption("--lance-fuzz-seed"),
                save=config.getoption("--lance-fuzz-save")))


def pytest_runtest_logreport(report) -> None:
    if "lance::" not in report.nodeid or "lance::fuzz." in report.nodeid:
        return
    if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
        _State.ran += 1
        _State.judged += report.outcome in ("passed", "failed")


def pytest_sessionfinish(session, exitstatus) -> None:
    if _State.ran and not _State.judged and exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.USAGE_ERROR
        _State.nothing = (f"lance-conformance: no case was judged: all {_State.ran} case items "
                          "were skipped (UNSUPPORTED or in the skip-file)")
    if _State.adapter is not None:
        _State.adapter.close()
        _State.adapter = None
    if _State.tmp is not None:
        _State.tmp.cleanup()
        _State.tmp = None


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    message = getattr(_State, "nothing", None)
    if message:
        terminalreporter.write_line(message, red=True)
        _State.nothing = None
