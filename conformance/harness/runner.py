"""Run the conformance suite against an adapter and judge every case.

Two suites, each case with a stable id:

* **read** -- ``read.<golden-id>``: the adapter reads every read of a golden case
  (:mod:`conformance.fixtures.golden`) and must return the expected rows; a must-reject case
  (``expected.outcome == "reject"``, ``when == "read"``) must make it raise.
* **write** -- ``write.<scenario>``: the adapter applies a writer scenario
  (:mod:`conformance.harness.scenarios`) one operation at a time to a fresh URI; then the
  result is judged by the validator (every version, ``versions="all"``), read back by the
  reference reader and by pylance at every version and compared with the script's model.
  ``write.<golden-id>`` runs a golden must-reject commit (``when == "commit"``) on a copy.

Outcomes: ``PASS``; ``FAIL`` (wrong result: the rule ids of the validator and the harness
checks below that fired are listed); ``UNSUPPORTED`` (the case needs a capability or an
operation the adapter does not declare, or the adapter raised
:class:`~conformance.harness.adapter.Unsupported`); ``ERROR`` (the harness itself could not
run the case, for example pylance missing to build a table); ``SKIP`` (listed in the
skip-file).

Harness checks (ids beside the validator's rule ids, spec 001 "Committing Datasets"):

* ``HARNESS-001`` a manifest file, once written, is never rewritten by a later operation
  ("the commit process must be atomic and consistent for all writers ... put-if-not-exists");
* ``HARNESS-002`` the versions present are the ones the script commits;
* ``HARNESS-003`` the reference reader finds the model's rows at every version;
* ``HARNESS-004`` pylance finds the model's rows at every version;
* ``HARNESS-005`` the tags are the model's tags;
* ``HARNESS-006`` a must-reject commit raised (and left no new version).

Skip-file: one case id (or ``fnmatch`` pattern) per line, then optionally ``#`` and the
reason; blank lines and lines starting with ``#`` are ignored::

    read.legacy-file      # our reader has no legacy (0.1) support
    write.*               # read-only implementation

A run fails closed (:func:`preflight`, :func:`nothing_judged`): it is refused when it would
run no case, or fewer cases than its suite holds (:func:`suite_case_ids`: the kit's golden
cases and writer scenarios) without a skip-file naming each missing one, and a run in which
no case was judged (every case UNSUPPORTED or skipped) checked nothing. A ``--fixtures``
folder holding only cases of its own (``lance-conformance fixtures from-case``) is judged on
what it holds. Every report names what it was judged against (:mod:`conformance.kit`).
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import shutil
import tempfile
import time
import traceback
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from . import scenarios as sc
from .adapter import Adapter, Unsupported

PASS, FAIL, UNSUPPORTED, ERROR, SKIP = "PASS", "FAIL", "UNSUPPORTED", "ERROR", "SKIP"
OUTCOMES = (PASS, FAIL, UNSUPPORTED, ERROR, SKIP)


@dataclass
class CaseResult:
    id: str
    suite: str
    outcome: str
    message: str = ""
    rules: list[str] = field(default_factory=list)
    elapsed_s: float = 0.0

    def as_dict(self) -> dict:
        return {"id": self.id, "suite": self.suite, "outcome": self.outcome,
                "message": self.message, "rules": sorted(self.rules),
                "elapsed_s": round(self.elapsed_s, 3)}


@dataclass
class RunResult:
    adapter: str
    results: list[CaseResult] = field(default_factory=list)
    suite: str = "all"
    provenance: dict = field(default_factory=dict)  # conformance.kit.provenance()

    @property
    def ok(self) -> bool:
        return not any(r.outcome in (FAIL, ERROR) for r in self.results)

    def counts(self) -> dict[str, int]:
        out = {o: 0 for o in OUTCOMES}
        for r in self.results:
            out[r.outcome] += 1
        return out

    def by_id(self) -> dict[str, CaseResult]:
        return {r.id: r for r in self.results}

    def failed_rules(self) -> set[str]:
        return {rule for r in self.results if r.outcome == FAIL for rule in r.rules}

    def judged(self) -> int:
        """How many cases were judged (PASS, FAIL or ERROR)."""
        return sum(r.outcome in (PASS, FAIL, ERROR) for r in self.results)

    def as_dict(self) -> dict:
        return {"adapter": self.adapter, "suite": self.suite, "ok": self.ok,
                "counts": self.counts(),
                "provenance": self.provenance or provenance_of(None, name=self.adapter),
                "results": [r.as_dict() for r in self.results]}


def provenance_of(adapter: Adapter | None, fixtures: Path | None = None, *,
                  name: str = "") -> dict:
    """What a run of ``adapter`` over the golden cases in ``fixtures`` (the kit's by
    default) is judged against (:func:`conformance.kit.provenance`)."""
    from conformance import kit

    impl = {"name": adapter.name if adapter else name,
            "version": getattr(adapter, "version", None) or ""}
    return kit.provenance(impl, golden=fixtures)


# -- skip-file -------------------------------------------------------------------------------

def parse_skip_file(text: str) -> dict[str, str]:
    """``{pattern: reason}`` from a skip-file's text."""
    out = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        pattern, _, reason = line.partition("#")
        out[pattern.strip()] = reason.strip() or "listed in the skip-file"
    return out


def _skipped(case_id: str, skips: dict[str, str]) -> str | None:
    for pattern, reason in skips.items():
        if fnmatch.fnmatchcase(case_id, pattern):
            return reason
    return None


# -- what a suite holds, and a run that would check less -------------------------------------

def suite_case_ids(suite: str = "all") -> list[str]:
    """The case ids the kit's ``suite`` holds: a ``read.`` case per golden case read (or
    refused at read), the writer scenarios, a ``write.`` case per golden must-reject commit."""
    from conformance.fixtures import golden

    ids = []
    if suite in ("read", "all"):
        ids += [f"read.{c.id}" for c in golden.CASES.values()
                if c.expected["outcome"] == "read" or c.expected.get("when") == "read"]
    if suite in ("write", "all"):
        ids += list(sc.WRITER_SCENARIOS)
        ids += [f"write.{c.id}" for c in golden.CASES.values() if c.expected.get("when") == "commit"]
    return ids


def fixture_case_ids(fixtures: Path) -> set[str]:
    """The ids of the golden cases in the folder ``fixtures``."""
    from conformance.fixtures import golden

    if not fixtures.is_dir():
        return set()
    return {golden.load_case(p)["id"] for p in fixtures.iterdir() if (p / "case.json").is_file()}


def preflight(planned: list[str], *, suite: str, fixtures: Path | None = None,
              skips: dict[str, str] | None = None) -> str | None:
    """One line saying why a run of the case ids ``planned`` would check less than ``suite``
    holds (None when it is whole): no case at all, every case skipped, or cases of the kit's
    suite missing from the fixtures folder that no skip-file entry names."""
    from conformance import kit
    from conformance.fixtures import golden

    skips = skips or {}
    folder = Path(fixtures) if fixtures else golden.DEFAULT_DIR
    held = fixture_case_ids(folder)
    if held and not held & set(golden.CASES):
        expected = list(planned)  # a folder of its own cases (fixtures from-case): what it holds
    else:
        expected = suite_case_ids(suite)
    missing = [cid for cid in expected if cid not in planned and _skipped(cid, skips) is None]
    if not planned:
        return (f"no case to run: the golden cases of --suite {suite} are missing "
                f"({kit.describe_missing(folder)})")
    if missing:
        shown = ", ".join(missing[:6]) + (", ..." if len(missing) > 6 else "")
        return (f"{len(missing)} of the {len(expected)} cases of --suite {suite} are missing "
                f"({kit.describe_missing(folder) if not held else f'not in {folder}'}) and no "
                f"skip-file names them: {shown}")
    if all(_skipped(cid, skips) is not None for cid in planned):
        return f"no case to run: the skip-file skips all {len(planned)} cases of --suite {suite}"
    return None


def nothing_judged(run_result: RunResult) -> str | None:
    """One line when no case of a finished run was judged (all UNSUPPORTED or skipped)."""
    if run_result.judged():
        return None
    c = run_result.counts()
    return (f"no case was judged: {c[UNSUPPORTED]} UNSUPPORTED, {c[SKIP]} skipped "
            f"({run_result.adapter} can do nothing --suite {run_result.suite} asks)")


# -- read suite ------------------------------------------------------------------------------

def read_case_ids(fixtures: Path) -> list[str]:
    from conformance.fixtures import golden

    out = []
    for cdir in sorted(p for p in fixtures.iterdir() if (p / "case.json").exists()):
        doc = golden.load_case(cdir)
        if doc["expected"]["outcome"] == "read" or doc["expected"].get("when") == "read":
            out.append(f"read.{doc['id']}")
    return out


def _reading_copy(cdir: Path, doc: dict, work: Path) -> Path:
    """The table an adapter reads: a copy of a shipped one (a reader may write, as LanceDB's
    connection adds a ``__manifest`` table to a directory namespace; the kit's fixtures, in a
    checkout or an installed wheel, stay as they are), or one generated under ``work``."""
    from conformance.fixtures import golden

    if not doc["table"]["shipped"]:
        return golden.materialize(cdir, work)
    table = work / "copies" / doc["id"] / "table"
    if table.exists():
        shutil.rmtree(table)
    shutil.copytree(cdir / "table", table, symlinks=True)
    return table


def run_read_case(adapter: Adapter, cdir: Path, work: Path) -> CaseResult:
    from conformance.fixtures import golden

    doc = golden.load_case(cdir)
    cid = f"read.{doc['id']}"
    if not adapter.capabilities.read:
        return CaseResult(cid, "read", UNSUPPORTED, "the adapter does not declare read")
    try:
        table = _reading_copy(cdir, doc, work)
    except Exception as exc:  # noqa: BLE001 - the harness could not build the table
        return CaseResult(cid, "read", ERROR, f"cannot build the table: {type(exc).__name__}: {exc}")
    exp = doc["expected"]
    if exp["outcome"] == "reject":
        try:
            err = golden.reject_error(exp, table, adapter)
        except Unsupported as exc:
            return CaseResult(cid, "read", UNSUPPORTED, str(exc))
        if err is None:
            return CaseResult(cid, "read", FAIL, f"read succeeded; a reader must refuse ({exp['error']})",
                              ["HARNESS-006"])
        return CaseResult(cid, "read", PASS, f"refused with {err}")
    store_doc = doc.get("external_store")
    notes = []
    if store_doc:  # a reader without the store sees the versions in _versions/ only
        try:
            have = max(adapter.versions(str(table)))
        except Exception as exc:  # noqa: BLE001
            return CaseResult(cid, "read", FAIL, f"listing versions raised {type(exc).__name__}: {exc}",
                              ["HARNESS-003"])
        if have != store_doc["latest_without_store"]:
            return CaseResult(cid, "read", FAIL, f"without the external store the latest version is "
                              f"{have}, expected {store_doc['latest_without_store']}", ["HARNESS-003"])
    for r in doc["reads"]:
        want_ids = bool(r["row_ids"]) and adapter.capabilities.row_ids
        try:
            if r.get("external_store"):
                got = golden.external_store_read(adapter, table, r["version"], with_row_id=want_ids)
            else:
                got = adapter.read(str(table / r["path"]), r["version"], with_row_id=want_ids)
        except Unsupported as exc:
            if r.get("external_store"):
                notes.append(f"{r['id']} not read: {exc}")
                continue
            return CaseResult(cid, "read", UNSUPPORTED, f"{r['id']}: {exc}")
        except Exception as exc:  # noqa: BLE001 - the implementation failed the case
            return CaseResult(cid, "read", FAIL, f"{r['id']}: read raised {type(exc).__name__}: {exc}",
                              ["HARNESS-003"])
        want = golden.read_arrow(cdir / "expected" / r["rows"])
        diff = sc.difference(got, want, keep_row_id=want_ids)
        if diff:
            return CaseResult(cid, "read", FAIL, f"{r['id']}: {diff}", ["HARNESS-003"])
        if r.get("blobs"):  # blob v2 columns: the bytes behind the descriptors too
            if "blobs" not in adapter.capabilities.features:
                return CaseResult(cid, "read", UNSUPPORTED, f"{r['id']}: rows match; blob bytes "
                                  "not read (the adapter does not declare the feature 'blobs')")
            try:
                problems = golden.check_blob_read(adapter, table, cdir / "expected", r)
            except Unsupported as exc:
                return CaseResult(cid, "read", UNSUPPORTED, f"{r['id']}: {exc}")
            except Exception as exc:  # noqa: BLE001 - the implementation failed the case
                return CaseResult(cid, "read", FAIL, f"{r['id']}: take_blobs raised "
                                  f"{type(exc).__name__}: {exc}", ["HARNESS-003"])
            if problems:
                return CaseResult(cid, "read", FAIL, "; ".join(problems), ["HARNESS-003"])
    done = len(doc["reads"]) - len(notes)
    return CaseResult(cid, "read", PASS, "; ".join([f"{done} reads match", *notes]))


# -- write suite -----------------------------------------------------------------------------

def _manifest_hashes(uri: Path) -> dict[str, str]:
    out = {}
    for p in sorted(uri.rglob("*.manifest")):
        out[p.relative_to(uri).as_posix()] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def _reference_tags(uri: str) -> dict[str, int]:
    from reference_impl.dataset import open_dataset

    return {n: int(t["version"]) for n, t in open_dataset(uri).tags.list().items()}


def _pylance_reader():
    from .pylance_adapter import PylanceAdapter

    a = PylanceAdapter()
    return a if a.capabilities.read else None


def judge_written(uri: Path, model: sc.Model, *, pylance=True) -> tuple[list[str], list[str]]:
    """Judge a written dataset against ``model``: (rule ids, messages)."""
    from conformance.engine.local import validate

    from .reference import ReferenceAdapter

    rules, messages = set(), []
    report = validate(str(uri), versions="all")
    for v in report.violations:
        rules.add(v.rule)
        messages.append(f"{v.rule}: {v.message}")
    ref = ReferenceAdapter()
    try:
        have = ref.versions(str(uri))
    except Exception as exc:  # noqa: BLE001
        return sorted(rules | {"HARNESS-002"}), messages + [f"cannot list versions: {exc}"]
    if have != sorted(model.versions):
        rules.add("HARNESS-002")
        messages.append(f"versions {have} != expected {sorted(model.versions)}")
    readers = [("HARNESS-003", ref)]
    py = _pylance_reader() if pylance else None
    if py is not None:
        readers.append(("HARNESS-004", py))
    for check, reader in readers:
        for v, want in sorted(model.versions.items()):
            if v not in have:
                continue
            try:
                got = reader.read(str(uri), v)
            except Exception as exc:  # noqa: BLE001
                rules.add(check)
                messages.append(f"{reader.name} v{v}: {type(exc).__name__}: {exc}")
                continue
            diff = sc.difference(got, want)
            if diff:
                rules.add(check)
                messages.append(f"{reader.name} v{v}: {diff}")
    try:
        tags = _reference_tags(str(uri))
    except Exception as exc:  # noqa: BLE001
        tags = {"<error>": str(exc)}
    if tags != model.tags:
        rules.add("HARNESS-005")
        messages.append(f"tags {tags} != expected {model.tags}")
    return sorted(rules), messages


def run_script(adapter: Adapter, uri: Path, script: list[dict]) -> tuple[sc.Model, list[str], str | None]:
    """Apply ``script`` one operation at a time: (model, harness rule ids, error message).
    Raises Unsupported when the adapter refuses an operation as unsupported."""
    model = sc.Model()
    rules = []
    for i, op in enumerate(script):
        before = _manifest_hashes(uri) if uri.exists() else {}
        data = sc.table_for(op["data"]) if "data" in op else None
        try:
            adapter.apply(str(uri), op, data)
        except Unsupported:
            raise
        except Exception as exc:  # noqa: BLE001 - the implementation failed this operation
            return model, rules, f"operation {i} ({op['op']}) raised {type(exc).__name__}: {exc}"
        after = _manifest_hashes(uri)
        rewritten = [k for k, h in before.items() if after.get(k, h) != h]
        if rewritten:
            rules.append("HARNESS-001")
            return model, rules, f"operation {i} ({op['op']}) rewrote existing manifests {rewritten}"
        model.apply(op)
    return model, rules, None


def run_write_scenario(adapter: Adapter, sid: str, scenario: dict, work: Path, *,
                       pylance: bool = True) -> CaseResult:
    cid = sid
    caps = adapter.capabilities
    missing = sorted({op["op"] for op in scenario["script"]} - set(caps.ops)) if caps.write else ["write"]
    if missing:
        return CaseResult(cid, "write", UNSUPPORTED, f"operations not declared: {', '.join(missing)}")
    uri = work / sid.replace("/", "_")
    if uri.exists():
        shutil.rmtree(uri)
    try:
        model, rules, error = run_script(adapter, uri, scenario["script"])
    except Unsupported as exc:
        return CaseResult(cid, "write", UNSUPPORTED, str(exc))
    if error:
        # what the writer left behind may say why the operation failed
        try:
            from conformance.engine.local import validate

            rules = sorted(set(rules) | validate(str(uri), versions="all").rules_violated())
        except Exception:  # noqa: BLE001 - nothing readable was left: the error says it all
            pass
        return CaseResult(cid, "write", FAIL, error, rules)
    try:
        found, messages = judge_written(uri, model, pylance=pylance)
    except Exception as exc:  # noqa: BLE001
        return CaseResult(cid, "write", ERROR, f"judging failed: {type(exc).__name__}: {exc}")
    if found:
        return CaseResult(cid, "write", FAIL, "; ".join(messages[:5]), found)
    return CaseResult(cid, "write", PASS, f"{len(model.versions)} versions match")


def run_commit_reject_case(adapter: Adapter, cdir: Path, work: Path) -> CaseResult:
    from conformance.fixtures import golden

    doc = golden.load_case(cdir)
    cid = f"write.{doc['id']}"
    op = doc["expected"]["operation"]
    if not adapter.capabilities.supports(op["op"]):
        return CaseResult(cid, "write", UNSUPPORTED, f"operation {op['op']} not declared")
    try:
        table = _reading_copy(cdir, doc, work)
        before = golden._reference_versions_or_listing(table)
    except Exception as exc:  # noqa: BLE001
        return CaseResult(cid, "write", ERROR, f"cannot build the table: {exc}")
    try:
        err = golden.reject_error(doc["expected"], table, adapter)
    except Unsupported as exc:
        return CaseResult(cid, "write", UNSUPPORTED, str(exc))
    if err is None:
        return CaseResult(cid, "write", FAIL, f"the commit succeeded; it must fail ({doc['expected']['error']})",
                          ["HARNESS-006"])
    if golden._reference_versions_or_listing(table) != before:
        return CaseResult(cid, "write", FAIL, "the refused commit changed the shipped table",
                          ["HARNESS-006"])
    return CaseResult(cid, "write", PASS, f"refused with {err}")


# -- the whole run ---------------------------------------------------------------------------

def plan(adapter: Adapter | None, work: Path, *, suite: str = "all", fixtures: Path | None = None,
         scenarios: Iterable[str] | None = None, pylance: bool = True) -> list[tuple]:
    """The cases of ``suite`` as ``(case id, suite, job)``; ``job()`` returns a CaseResult
    and works under ``work`` (``adapter`` None: the case ids alone, no job to run)."""
    from conformance.fixtures import golden

    fixtures = Path(fixtures) if fixtures else golden.DEFAULT_DIR
    jobs = []
    cdirs = sorted(p for p in fixtures.iterdir() if (p / "case.json").exists()) if fixtures.is_dir() else []
    docs = [(cdir, golden.load_case(cdir)) for cdir in cdirs]
    if suite in ("read", "all"):
        for cdir, doc in docs:
            if doc["expected"]["outcome"] == "read" or doc["expected"].get("when") == "read":
                jobs.append((f"read.{doc['id']}", "read",
                             lambda c=cdir: run_read_case(adapter, c, work / "read")))
    if suite in ("write", "all"):
        wanted = list(scenarios) if scenarios is not None else list(sc.WRITER_SCENARIOS)
        for sid in wanted:
            jobs.append((sid, "write", lambda s=sid: run_write_scenario(
                adapter, s, sc.WRITER_SCENARIOS[s], work / "write", pylance=pylance)))
        if scenarios is None:
            for cdir, doc in docs:
                if doc["expected"].get("when") == "commit":
                    jobs.append((f"write.{doc['id']}", "write",
                                 lambda c=cdir: run_commit_reject_case(adapter, c, work / "reject")))
    return jobs


def run_job(cid: str, kind: str, job) -> CaseResult:
    """Run one planned case; an exception becomes an ERROR outcome."""
    started = time.monotonic()
    try:
        r = job()
    except Exception as exc:  # noqa: BLE001 - never let one case end the run
        r = CaseResult(cid, kind, ERROR, f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=3)}")
    r.elapsed_s = time.monotonic() - started
    return r


def run(adapter: Adapter, *, suite: str = "all", fixtures: Path | None = None,
        skips: dict[str, str] | None = None, scenarios: Iterable[str] | None = None,
        pylance: bool = True, progress=None) -> RunResult:
    """Run ``suite`` ("read", "write" or "all") against ``adapter``."""
    skips = skips or {}
    result = RunResult(adapter.name, suite=suite)
    result.provenance = provenance_of(adapter, Path(fixtures) if fixtures else None)
    with tempfile.TemporaryDirectory(prefix="lance-conformance-run-") as tmp:
        for cid, kind, job in plan(adapter, Path(tmp), suite=suite, fixtures=fixtures,
                                   scenarios=scenarios, pylance=pylance):
            reason = _skipped(cid, skips)
            r = CaseResult(cid, kind, SKIP, reason) if reason is not None else run_job(cid, kind, job)
            result.results.append(r)
            if progress:
                progress(r)
    return result


# -- reports ---------------------------------------------------------------------------------

def to_text(run_result: RunResult) -> str:
    from conformance import kit

    prov = run_result.as_dict()["provenance"]
    lines = [f"adapter {run_result.adapter}", f"  judged against {kit.summary(prov)}"]
    for r in run_result.results:
        rules = f" [{', '.join(r.rules)}]" if r.rules else ""
        lines.append(f"  {r.outcome:<11} {r.id}{rules}  {r.message.splitlines()[0] if r.message else ''}")
    c = run_result.counts()
    lines.append("  " + ", ".join(f"{k} {v}" for k, v in c.items()))
    return "\n".join(lines) + "\n"


def to_junit(run_result: RunResult) -> str:
    from xml.sax.saxutils import escape, quoteattr

    from conformance import kit

    c = run_result.counts()
    out = ['<?xml version="1.0" encoding="UTF-8"?>',
           f'<testsuite name={quoteattr("lance-conformance " + run_result.adapter)} '
           f'tests="{len(run_result.results)}" failures="{c[FAIL]}" errors="{c[ERROR]}" '
           f'skipped="{c[SKIP] + c[UNSUPPORTED]}">',
           kit.junit_properties(run_result.as_dict()["provenance"], "  ")]
    for r in run_result.results:
        out.append(f'  <testcase classname={quoteattr(r.suite)} name={quoteattr(r.id)} '
                   f'time="{r.elapsed_s:.3f}">')
        text = escape(r.message)
        if r.outcome == FAIL:
            out.append(f'    <failure message={quoteattr(", ".join(r.rules) or "failed")}>{text}</failure>')
        elif r.outcome == ERROR:
            out.append(f'    <error message="error">{text}</error>')
        elif r.outcome in (SKIP, UNSUPPORTED):
            out.append(f'    <skipped message={quoteattr(r.outcome + ": " + r.message[:200])}/>')
        out.append("  </testcase>")
    out.append("</testsuite>")
    return "\n".join(out) + "\n"


def to_json(run_result: RunResult) -> str:
    return json.dumps(run_result.as_dict(), indent=2)
