"""Run the conformance suite against an adapter and judge every case.

Two suites, each case with a stable id:

* **read** -- ``read.<golden-id>``: the adapter reads every read of a golden case
  (:mod:`conformance.fixtures.golden`) and must return the expected rows; a must-reject case
  (``expected.outcome == "reject"``, ``when == "read"``) must make it refuse with the error
  class the case names (its ``error`` or one of its ``equivalents``). Each read is a verdict
  of its own (:class:`ReadResult`, counted in every report), rolled up into the case's: a
  failed read fails the case; a read not made (``Unsupported``) makes it UNSUPPORTED unless
  the adapter never claimed it: an older version when it declares no time travel
  (``Capabilities.time_travel`` false: its latest reads are made first, as version None), a
  read through the external manifest store. Such a case PASSes listing the reads not made.
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
* ``HARNESS-006`` a must-reject action raised (a commit left no new version);
* ``HARNESS-007`` it raised the refusal the case names: its error class or a declared
  equivalent (``NotFound`` for a table the reader could not find is no refusal);
* ``HARNESS-008`` the implementation did not crash: a process that died (its signal or exit
  status and the last lines of its stderr are quoted) or a panic, even one it survived, is
  a FAIL "refused by crashing", never a refusal;
* ``HARNESS-009`` the program kept to the protocol and answered within the time limit;
* ``HARNESS-010`` a query of a golden case with indexes (:mod:`.queries`) is answered as a
  scan of the rows answers it (an exact index), or with rows the table holds and at least
  the recall the case states (an approximate one). A program without the feature ``query``
  is not asked: its queries are listed as not made.
* ``HARNESS-011`` a filtered read (a ``read`` step of a script: a filter, optionally columns)
  returns the rows of the model's version that the filter is true for (three-valued logic:
  a null answer is no match), the columns asked in their order, as a read is compared.
* ``HARNESS-012`` the version a ``create`` with ``data_storage_version`` commits has that
  data storage version, in its manifest and in every data file (a writer that ignores it
  fails).

A program that dies, hangs or breaks the protocol is started again for the next request
(:mod:`.subprocess_adapter`): only the case it died on is affected; a read case stops at
the read it died on (the reads after it are not made).

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
from .adapter import Adapter, ProtocolBroken, Unsupported

PASS, FAIL, UNSUPPORTED, ERROR, SKIP = "PASS", "FAIL", "UNSUPPORTED", "ERROR", "SKIP"
OUTCOMES = (PASS, FAIL, UNSUPPORTED, ERROR, SKIP)


#: What a read's verdict is called in the reports: a read not made is UNSUPPORTED.
READ_OUTCOMES = (PASS, FAIL, UNSUPPORTED)


@dataclass
class ReadResult:
    """The verdict on one read of a read case (its ``id`` in case.json; ``refusal`` for the
    must-reject read), asked at ``version`` (None: the latest). ``ended``: the program died
    on it, or was stopped (a time-out, a broken answer)."""

    id: str
    outcome: str
    message: str = ""
    rules: list[str] = field(default_factory=list)
    version: int | None = None
    ended: bool = False

    def as_dict(self) -> dict:
        return {"id": self.id, "outcome": self.outcome, "version": self.version,
                "message": self.message, "rules": sorted(self.rules)}


@dataclass
class CaseResult:
    id: str
    suite: str
    outcome: str
    message: str = ""
    rules: list[str] = field(default_factory=list)
    elapsed_s: float = 0.0
    reads: list[ReadResult] = field(default_factory=list)  # a read case's reads, each judged

    def as_dict(self) -> dict:
        return {"id": self.id, "suite": self.suite, "outcome": self.outcome,
                "message": self.message, "rules": sorted(self.rules),
                "elapsed_s": round(self.elapsed_s, 3),
                "reads": [r.as_dict() for r in self.reads]}


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

    def read_counts(self) -> dict[str, int]:
        """The reads of the read cases run, by verdict (UNSUPPORTED: not made)."""
        out = {o: 0 for o in READ_OUTCOMES}
        for r in self.results:
            for v in r.reads:
                out[v.outcome] += 1
        return out

    def judged(self) -> int:
        """How many cases were judged (PASS, FAIL or ERROR)."""
        return sum(r.outcome in (PASS, FAIL, ERROR) for r in self.results)

    def as_dict(self) -> dict:
        return {"adapter": self.adapter, "suite": self.suite, "ok": self.ok,
                "counts": self.counts(), "read_counts": self.read_counts(),
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


def _raised(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def judge_refusal(exc: BaseException | None, expected: dict, *, action: str = "read") -> tuple[str, str, list[str]]:
    """The verdict ``(outcome, message, rules)`` on what an implementation did with a
    must-reject action (``exc``: what it raised, None when it did as asked): PASS only for
    an error of a class the case names (its ``error`` or a declared equivalent). A crash or
    a panic (``HARNESS-008``), a broken protocol or a time-out (``HARNESS-009``), any other
    error such as ``NotFound`` (``HARNESS-007``) and a success (``HARNESS-006``) FAIL."""
    from conformance.fixtures import golden

    from .adapter import crash_text, error_class, failure_kind

    accepted = golden.accepted_errors(expected)
    wanted = " or ".join(accepted)
    if exc is None:
        what = "read succeeded; a reader" if action == "read" else "the commit succeeded; it"
        return FAIL, f"{what} must refuse ({wanted})", ["HARNESS-006"]
    kind = failure_kind(exc)
    if kind == "crash":
        return FAIL, f"{crash_text(exc)} (the case expects a refusal: {wanted})", ["HARNESS-008"]
    if kind == "protocol":
        return FAIL, (f"no refusal: the program broke the protocol or did not answer: "
                      f"{_raised(exc)} (the case expects {wanted})"), ["HARNESS-009"]
    cls = error_class(exc)
    if cls in accepted:
        return PASS, f"refused with {cls}", []
    return FAIL, (f"refused with {cls}, not the refusal the case names ({wanted}): "
                  f"{str(exc)[:300]}"), ["HARNESS-007"]


def _failure(exc: BaseException, doing: str) -> tuple[str, list[str]]:
    """The message and rules of a request that raised ``exc`` (not Unsupported): a crash
    (``HARNESS-008``), a broken protocol (``HARNESS-009``) or an error (``HARNESS-003``)."""
    from .adapter import crash_text, failure_kind

    kind = failure_kind(exc)
    if kind == "crash":
        return crash_text(exc), ["HARNESS-008"]
    if kind == "protocol":
        return f"the program broke the protocol or did not answer: {_raised(exc)}", ["HARNESS-009"]
    return f"{doing} raised {_raised(exc)}", ["HARNESS-003"]


def _latest_reads(reads: list[dict]) -> set[str]:
    """The ids of the reads of each dataset's latest version (the newest version a read of
    that path names; reads only a reader with the external store can make set aside)."""
    newest: dict[str, int] = {}
    for r in reads:
        if not r.get("external_store"):
            newest[r["path"]] = max(newest.get(r["path"], 0), r["version"])
    return {r["id"] for r in reads if not r.get("external_store") and r["version"] == newest[r["path"]]}


def _one_read(adapter: Adapter, cdir: Path, table: Path, r: dict, version: int | None) -> ReadResult:
    """The verdict on one read of a golden case, asked at ``version`` (None: the latest)."""
    from conformance.fixtures import golden

    want_ids = bool(r["row_ids"]) and adapter.capabilities.row_ids
    out = ReadResult(r["id"], PASS, version=version)
    try:
        if r.get("external_store"):
            got = golden.external_store_read(adapter, table, r["version"], with_row_id=want_ids)
        else:
            got = adapter.read(str(table / r["path"]), version, with_row_id=want_ids)
    except Unsupported as exc:
        return ReadResult(r["id"], UNSUPPORTED, f"not made: {exc}", version=version)
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as exc:  # noqa: BLE001 - the implementation failed the read
        message, rules = _failure(exc, "read")
        return ReadResult(r["id"], FAIL, message, rules, version=version,
                          ended=isinstance(exc, ProtocolBroken))
    want = golden.read_arrow(cdir / "expected" / r["rows"])
    diff = sc.difference(got, want, keep_row_id=want_ids)
    if diff:
        return ReadResult(r["id"], FAIL, diff, ["HARNESS-003"], version=version)
    if r.get("blobs"):  # blob v2 columns: the bytes behind the descriptors too
        if "blobs" not in adapter.capabilities.features:
            return ReadResult(r["id"], UNSUPPORTED, "rows match; blob bytes not read (the adapter "
                              "does not declare the feature 'blobs')", version=version)
        try:
            problems = golden.check_blob_read(adapter, table, cdir / "expected", r | {"version": version})
        except Unsupported as exc:
            return ReadResult(r["id"], UNSUPPORTED, f"rows match; blob bytes not read: {exc}",
                              version=version)
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as exc:  # noqa: BLE001 - the implementation failed the case
            message, rules = _failure(exc, "take_blobs")
            return ReadResult(r["id"], FAIL, message, rules, version=version,
                              ended=isinstance(exc, ProtocolBroken))
        if problems:
            return ReadResult(r["id"], FAIL, "; ".join(problems), ["HARNESS-003"], version=version)
    out.message = "rows match"
    return out


def run_read_case(adapter: Adapter, cdir: Path, work: Path) -> CaseResult:
    """Judge every read of the golden case in ``cdir`` on its own, then roll them up: FAIL
    when one read fails; PASS when every read matches, or when the reads not made are only
    those an adapter cannot make by what it declares (an older version when it declares no
    time travel, a read through the external manifest store the protocol has no request
    for, a query when it does not declare the feature ``query``), which the message lists;
    UNSUPPORTED otherwise. The case's queries (:mod:`.queries`) are reads of their own, after
    the others. A read on which the program died or was stopped ends the case: the reads
    after it are not made (after a panic it survived, the reads go on)."""
    from conformance.fixtures import golden

    doc = golden.load_case(cdir)
    cid = f"read.{doc['id']}"
    if not adapter.capabilities.read:
        return CaseResult(cid, "read", UNSUPPORTED, "the adapter does not declare read")
    try:
        table = _reading_copy(cdir, doc, work)
    except Exception as exc:  # noqa: BLE001 - the harness could not build the table
        return CaseResult(cid, "read", ERROR, f"cannot build the table: {type(exc).__name__}: {exc}")
    travel = adapter.capabilities.time_travel
    exp = doc["expected"]
    if exp["outcome"] == "reject":
        try:
            exc = golden.reject_attempt(exp, table, adapter, latest_only=not travel)
        except Unsupported as unsupported:
            return CaseResult(cid, "read", UNSUPPORTED, str(unsupported),
                              reads=[ReadResult("refusal", UNSUPPORTED, f"not made: {unsupported}")])
        outcome, message, rules = judge_refusal(exc, exp)
        return CaseResult(cid, "read", outcome, message, rules,
                          reads=[ReadResult("refusal", outcome, message, rules)])
    store_doc = doc.get("external_store")
    if store_doc:  # a reader without the store sees the versions in _versions/ only
        try:
            have = max(adapter.versions(str(table)))
        except Exception as exc:  # noqa: BLE001
            return CaseResult(cid, "read", FAIL, f"listing versions raised {type(exc).__name__}: {exc}",
                              ["HARNESS-003"])
        if have != store_doc["latest_without_store"]:
            return CaseResult(cid, "read", FAIL, f"without the external store the latest version is "
                              f"{have}, expected {store_doc['latest_without_store']}", ["HARNESS-003"])
    latest = _latest_reads(doc["reads"])
    order = list(doc["reads"])
    if not travel:  # the latest version first, asked as the latest (version None)
        order = [r for r in order if r["id"] in latest] + [r for r in order if r["id"] not in latest]
    verdicts: list[ReadResult] = []
    for r in order:
        ended = next((v.id for v in verdicts if v.ended), None)
        if ended is not None:
            verdicts.append(ReadResult(r["id"], UNSUPPORTED, f"not made: the program died or was "
                                       f"stopped on {ended}", version=r["version"]))
            continue
        asked = None if (not travel and r["id"] in latest) else r["version"]
        verdicts.append(_one_read(adapter, cdir, table, r, asked))
    by_id = {r["id"]: r for r in doc["reads"]}
    asks = "query" in adapter.capabilities.features
    full_text = "full-text" in adapter.capabilities.features
    for q in doc.get("queries", ()):
        newest = max(r["version"] for r in doc["reads"] if r["path"] == q["path"] and not r.get("external_store"))
        asked = None if (not travel and q["version"] == newest) else q["version"]
        ended = next((v.id for v in verdicts if v.ended), None)
        verdicts.append(_one_query(adapter, cdir, table, doc, q, asked, newest) if ended is None else
                        ReadResult(f"query.{q['id']}", UNSUPPORTED, "not made: the program died or "
                                   f"was stopped on {ended}", version=asked))
        by_id[verdicts[-1].id] = {"query": True, "older": q["version"] != newest,
                                  "match": bool(q.get("match"))}

    def excused(v: ReadResult) -> bool:  # a read not made that the adapter never claimed
        r = by_id[v.id]
        if r.get("query"):
            return not asks or (r["match"] and not full_text) or (not travel and r["older"])
        return bool(r.get("external_store")) or (not travel and v.id not in latest)

    return _roll_up(cid, verdicts, excused)


def _one_query(adapter: Adapter, cdir: Path, table: Path, doc: dict, q: dict, version: int | None,
               newest: int) -> ReadResult:
    """The verdict on one query of a golden case with indexes (:mod:`.queries`), asked at
    ``version`` (None: the latest); its expected answer is a scan of the read of the same
    dataset and version."""
    from conformance.fixtures import golden

    from . import queries

    vid = f"query.{q['id']}"
    if "query" not in adapter.capabilities.features:
        return ReadResult(vid, UNSUPPORTED, "not made: the adapter does not declare the feature 'query'",
                          version=version)
    if q.get("match") and "full-text" not in adapter.capabilities.features:
        return ReadResult(vid, UNSUPPORTED, "not made: the adapter does not declare the feature "
                          "'full-text'", version=version)
    if not adapter.capabilities.time_travel and q["version"] != newest:
        return ReadResult(vid, UNSUPPORTED, "not made: an older version (no time travel)", version=version)
    read = next(r for r in doc["reads"] if r["path"] == q["path"] and r["version"] == q["version"]
                and not r.get("external_store"))
    rows = golden.read_arrow(cdir / "expected" / read["rows"])
    asked = queries.request(q, rows)
    try:
        got = adapter.query(str(table / q["path"]), version, asked)
    except Unsupported as exc:
        return ReadResult(vid, UNSUPPORTED, f"not made: {exc}", version=version)
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as exc:  # noqa: BLE001 - the implementation failed the query
        message, rules = _failure(exc, "query")
        return ReadResult(vid, FAIL, message, rules, version=version, ended=isinstance(exc, ProtocolBroken))
    problem = queries.judge_answer(got, rows, asked, q)
    if problem:
        return ReadResult(vid, FAIL, f"{q['index']}: {problem}", ["HARNESS-010"], version=version)
    return ReadResult(vid, PASS, f"answers as the scan ({q['index']})" if q.get("exact", True)
                      else f"recall at least {q['min_recall']} ({q['index']})", version=version)


def _roll_up(cid: str, verdicts: list[ReadResult], excused) -> CaseResult:
    """A read case's verdict from its reads' (see :func:`run_read_case`)."""
    failed = [v for v in verdicts if v.outcome == FAIL]
    made = [v for v in verdicts if v.outcome == PASS]
    not_made = [v for v in verdicts if v.outcome == UNSUPPORTED]
    tally = f"{len(made)} of {len(verdicts)} reads match" + (f", {len(not_made)} not made" if not_made else "")
    if failed:
        rules = sorted({rule for v in failed for rule in v.rules})
        message = "; ".join(f"{v.id}: {v.message}" for v in failed)
        return CaseResult(cid, "read", FAIL, f"{message} ({tally})", rules, reads=verdicts)
    missing = [v for v in not_made if not excused(v)]
    if missing:
        first = missing[0]
        return CaseResult(cid, "read", UNSUPPORTED, f"{first.id}: {first.message.removeprefix('not made: ')}"
                          f" ({tally})", reads=verdicts)
    notes = [f"{v.id} not read: {v.message.removeprefix('not made: ')}" for v in not_made]
    if not made:  # nothing was read at all: nothing passed
        return CaseResult(cid, "read", UNSUPPORTED, "; ".join(["no read made", *notes]), reads=verdicts)
    return CaseResult(cid, "read", PASS, "; ".join([f"{len(made)} reads match", *notes]), reads=verdicts)


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


def storage_version_problem(uri: Path, version: int, wanted: str) -> str | None:
    """What differs from the data storage version ``wanted`` (``"legacy"``, ``"2.0"`` ...)
    at ``version`` of ``uri``: its manifest's, or a data file's; None when both are it."""
    from reference_impl.dataset import open_dataset
    from reference_impl.table import fragment as fragmod

    want = "0.1" if wanted == "legacy" else wanted
    ds = open_dataset(str(uri), version=version)
    if ds.data_storage_version != want:
        return f"v{version}: data storage version {ds.data_storage_version} != asked {wanted}"
    for frag in ds.manifest.fragments:
        for df in frag.files:
            if fragmod.data_file_version(df) != want:
                return (f"v{version}: data file {df.path} of version {fragmod.data_file_version(df)} "
                        f"!= asked {wanted}")
    return None


def judge_versions(uri: Path, model: sc.Model) -> tuple[list[str], list[str], list[int] | None]:
    """The versions a writer left at ``uri`` against ``model``'s (``HARNESS-002``; none at all,
    a writer that claimed success and wrote nothing or wrote elsewhere, is a FAIL too) and
    the data storage version its ``create`` asked for, at version 1 (``HARNESS-012``):
    (rule ids, messages, the versions present or None)."""
    from .reference import ReferenceAdapter

    try:
        have = ReferenceAdapter().versions(str(uri))
    except Exception as exc:  # noqa: BLE001 - nothing readable was written there
        return ["HARNESS-002"], [f"no dataset at the uri after the script: {type(exc).__name__}: {exc}"], None
    rules, messages = [], []
    if have != sorted(model.versions):
        rules.append("HARNESS-002")
        messages.append(f"versions {have} != expected {sorted(model.versions)}")
    if model.storage_version is not None and 1 in have:  # the create's version (an
        # overwrite may write the writer's own default, as the reference writer does)
        problem = storage_version_problem(uri, 1, model.storage_version)
        if problem:
            rules.append("HARNESS-012")
            messages.append(problem)
    return rules, messages, have


def judge_written(uri: Path, model: sc.Model, *, pylance=True) -> tuple[list[str], list[str]]:
    """Judge a written dataset against ``model``: (rule ids, messages)."""
    from conformance.engine.local import validate

    from .reference import ReferenceAdapter

    found, messages, have = judge_versions(uri, model)
    if have is None:
        return found, messages
    rules = set(found)
    for v in validate(str(uri), versions="all").violations:
        rules.add(v.rule)
        messages.append(f"{v.rule}: {v.message}")
    ref = ReferenceAdapter()
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


def missing_capabilities(adapter: Adapter, script: list[dict]) -> list[str]:
    """What ``script`` needs that ``adapter`` does not declare: its operations (``ops``), and
    the feature ``filtered-read`` for its ``read`` steps."""
    from .adapter import FILTERED_READ

    caps = adapter.capabilities
    if not caps.write:
        return ["write"]
    kinds = {op["op"] for op in script}
    missing = sorted(kinds - {"read"} - set(caps.ops))
    if "read" in kinds and FILTERED_READ not in caps.features:
        missing.append(f"the feature {FILTERED_READ!r}")
    return missing


def filtered_read_problem(reader: Adapter, uri: Path, op: dict, model: sc.Model,
                          version: int | None) -> str | None:
    """What is wrong with ``reader``'s answer to the filtered ``read`` step ``op`` at
    ``version`` (None: the latest) of ``uri``; None when it is the model's
    (:meth:`~conformance.harness.scenarios.Model.read_answer`). Raises what the reader
    raised (Unsupported: the read was not made)."""
    got = reader.read_filtered(str(uri), version, op.get("filter"), op.get("columns"))
    diff = sc.difference(got, model.read_answer(op, version))
    return None if diff is None else f"filter {op.get('filter')!r}: {diff}"


def run_script(adapter: Adapter, uri: Path, script: list[dict], *,
               reads: bool = True) -> tuple[sc.Model, list[str], str | None]:
    """Apply ``script`` one operation at a time: (model, harness rule ids, error message).
    A ``read`` step is a filtered read of the latest version by ``adapter``, judged
    (``HARNESS-011``) when ``reads``; else only recorded in the model (``Model.reads``).
    Raises Unsupported when the adapter refuses an operation or a read as unsupported."""
    model = sc.Model()
    rules = []
    for i, op in enumerate(script):
        if op["op"] == "read":
            model.apply(op)
            if not reads:
                continue
            try:
                problem = filtered_read_problem(adapter, uri, op, model, None)
            except (Unsupported, KeyboardInterrupt, SystemExit):
                raise
            except BaseException as exc:  # noqa: BLE001 - the implementation failed the read
                message, found = _failure(exc, "read")
                found = ["HARNESS-011"] if found == ["HARNESS-003"] else found
                return model, rules + found, f"operation {i} (read): {message}"
            if problem:
                return model, rules + ["HARNESS-011"], f"operation {i} (read): {problem}"
            continue
        before = _manifest_hashes(uri) if uri.exists() else {}
        data = sc.table_for(op["data"]) if "data" in op else None
        try:
            adapter.apply(str(uri), op, data)
        except (Unsupported, KeyboardInterrupt, SystemExit):
            raise
        except BaseException as exc:  # noqa: BLE001 - the implementation failed this operation
            message, found = _failure(exc, "")
            if found == ["HARNESS-003"]:  # an error: the validator may say more below
                return model, rules, f"operation {i} ({op['op']}) raised {_raised(exc)}"
            return model, rules + found, f"operation {i} ({op['op']}): {message}"
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
    missing = missing_capabilities(adapter, scenario["script"])
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
        exc = golden.reject_attempt(doc["expected"], table, adapter)
    except Unsupported as unsupported:
        return CaseResult(cid, "write", UNSUPPORTED, str(unsupported))
    outcome, message, rules = judge_refusal(exc, doc["expected"], action="commit")
    if outcome == PASS and golden._reference_versions_or_listing(table) != before:
        return CaseResult(cid, "write", FAIL, "the refused commit changed the shipped table",
                          ["HARNESS-006"])
    return CaseResult(cid, "write", outcome, message, rules)


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
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as exc:  # noqa: BLE001 - never let one case end the run (a panic neither)
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

def reads_line(run_result: RunResult) -> str:
    """``reads: PASS n, FAIL n, not made n`` over the reads of the read cases run."""
    c = run_result.read_counts()
    return f"reads: PASS {c[PASS]}, FAIL {c[FAIL]}, not made {c[UNSUPPORTED]}"


def to_text(run_result: RunResult) -> str:
    from conformance import kit

    prov = run_result.as_dict()["provenance"]
    lines = [f"adapter {run_result.adapter}", f"  judged against {kit.summary(prov)}"]
    for r in run_result.results:
        rules = f" [{', '.join(r.rules)}]" if r.rules else ""
        lines.append(f"  {r.outcome:<11} {r.id}{rules}  {r.message.splitlines()[0] if r.message else ''}")
    c = run_result.counts()
    lines.append("  " + ", ".join(f"{k} {v}" for k, v in c.items()))
    lines.append("  " + reads_line(run_result))
    return "\n".join(lines) + "\n"


def to_junit(run_result: RunResult) -> str:
    from xml.sax.saxutils import escape, quoteattr

    from conformance import kit

    c = run_result.counts()
    out = ['<?xml version="1.0" encoding="UTF-8"?>',
           f'<testsuite name={quoteattr("lance-conformance " + run_result.adapter)} '
           f'tests="{len(run_result.results)}" failures="{c[FAIL]}" errors="{c[ERROR]}" '
           f'skipped="{c[SKIP] + c[UNSUPPORTED]}">',
           kit.junit_properties(run_result.as_dict()["provenance"], "  ",  # and the reads' tally
                                extra=tuple((f"reads.{k}", v) for k, v in run_result.read_counts().items()))]
    for r in run_result.results:
        out.append(f'  <testcase classname={quoteattr(r.suite)} name={quoteattr(r.id)} '
                   f'time="{r.elapsed_s:.3f}">')
        if r.reads:
            out.append("    <properties>" + "".join(
                f'<property name={quoteattr("read." + v.id)} value={quoteattr(v.outcome)}/>'
                for v in r.reads) + "</properties>")
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
