"""The writer-release x reader-release compatibility matrix.

For every writer and every scenario it can write, the writer applies the scenario's operation
script to a fresh dataset (``<work>/<writer>/<scenario>/table.lance``); the validator judges
the result and :func:`~conformance.compat.causes.dataset_facts` decodes what its bytes hold.
Then every reader reads every version the script committed, and each *cell* (writer,
reader, scenario) is compared with the script's model:

=============  =====================================================================
``identical``  every version read gives the model's rows
``refused``    some version raised a clean error (right for a reader older than a feature)
``crash``      the reader panicked, died or did not answer within the per-cell time limit
``misread``    some version gave other rows, silently: the worst outcome
=============  =====================================================================

(``not-written``: the writer lacks a feature of the scenario or failed; ``no-read``: the
reader cannot read at all.) A cell's outcome is its worst version. Every cell that is not
identical names its cause from the bytes (:func:`~conformance.compat.causes.name_cause`).

A writer or reader is ``pylance==X.Y.Z`` / ``lancedb==X.Y.Z`` (run in its cached virtualenv
through ``release_adapter.py``), ``reference``, ``pylance`` (the installed one, in process),
``known-bad:*``, ``module:Class`` or ``cmd:"..."``; ``LABEL=SPEC`` shows ``SPEC`` as ``LABEL``
(a baseline compares cells by label).
"""

from __future__ import annotations

import queue
import re
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa

from conformance.harness import scenarios as sc
from conformance.harness.adapter import Adapter, Unsupported

from . import causes
from .scenarios import COMPAT_SCENARIOS, scenario

IDENTICAL, REFUSED, CRASH, MISREAD = "identical", "refused", "crash", "misread"
NOT_WRITTEN, NO_READ = "not-written", "no-read"
#: How bad an outcome is; a baseline cell got worse when its rank grew.
RANK = {IDENTICAL: 0, REFUSED: 1, CRASH: 2, MISREAD: 3}
ORDER = (MISREAD, CRASH, REFUSED, IDENTICAL, NOT_WRITTEN, NO_READ)

PROGRAM = Path(__file__).with_name("release_adapter.py")
_LABEL = re.compile(r"^([A-Za-z][\w.-]*)=(?!=)(.+)$")
_RELEASE = re.compile(r"^(pylance|lancedb)==")


# -- participants -----------------------------------------------------------------------------

@dataclass(frozen=True)
class Participant:
    """A writer or reader of the matrix: a label and the spec that loads its adapter."""

    label: str
    spec: str

    @classmethod
    def parse(cls, text: str) -> Participant:
        text = text.strip()
        m = _LABEL.match(text)
        if m and not text.startswith("cmd:"):
            return cls(m.group(1), m.group(2).strip())
        return cls(text, text)

    @property
    def is_release(self) -> bool:
        return bool(_RELEASE.match(self.spec))

    @property
    def release_version(self) -> tuple[int, ...] | None:
        """The pylance release's version for naming causes (``FIRST_READER`` counts pylance
        versions); None for lancedb, whose numbers are its own, and other implementations."""
        if self.spec.startswith("pylance=="):
            return causes.version_tuple(self.spec.split("==", 1)[1])
        return None

    @property
    def in_process(self) -> bool:
        return not self.is_release and not self.spec.startswith("cmd:")

    def prepare(self) -> None:
        """Build the release's virtualenv now (once, cached); raises ReleaseUnavailable."""
        if self.is_release:
            from conformance.releases.venvs import Release, ensure_venv

            ensure_venv(Release.parse(self.spec))

    def make(self, timeout: float) -> Adapter:
        if self.is_release:
            from conformance.harness.subprocess_adapter import SubprocessAdapter
            from conformance.releases.venvs import Release, ensure_venv

            py = ensure_venv(Release.parse(self.spec))
            # the program's stderr goes to a log: a Rust panic prints "panicked at" there even
            # when the release turns it into an ordinary exception
            log = tempfile.TemporaryFile(prefix="lance-conformance-compat-stderr-")
            adapter = SubprocessAdapter([str(py), str(PROGRAM)], timeout=timeout, stderr=log)
            adapter.stderr_log = log
            return adapter
        from conformance.harness.adapter import load_adapter

        adapter = load_adapter(self.spec)
        if hasattr(adapter, "timeout"):
            adapter.timeout = timeout
        return adapter


# -- results ----------------------------------------------------------------------------------

@dataclass
class Written:
    """One dataset: a writer's run of a scenario."""

    writer: str
    scenario: str
    uri: str
    status: str = "written"  # written | unsupported | failed
    message: str = ""
    expected: dict[int, pa.Table] = field(default_factory=dict, repr=False)
    violated: list[str] = field(default_factory=list)
    facts: dict[int, causes.VersionFacts] = field(default_factory=dict, repr=False)
    seconds: float = 0.0
    self_diff: dict[int, str] = field(default_factory=dict)  # the writer's own read vs model

    def as_dict(self) -> dict:
        return {"writer": self.writer, "scenario": self.scenario, "status": self.status,
                "message": self.message, "violated": self.violated,
                "versions": sorted(self.expected), "seconds": round(self.seconds, 3),
                "self_diff": {str(v): d for v, d in sorted(self.self_diff.items())},
                "writer_version": next((f.writer for f in self.facts.values() if f.writer), ""),
                "facts": {str(v): sorted(f.facts) for v, f in sorted(self.facts.items())}}


@dataclass
class Cell:
    writer: str
    reader: str
    scenario: str
    outcome: str
    versions: dict[int, str] = field(default_factory=dict)
    detail: str = ""
    cause: list[str] = field(default_factory=list)
    cause_text: str = ""
    seconds: float = 0.0

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.writer, self.reader, self.scenario)

    def as_dict(self) -> dict:
        return {"writer": self.writer, "reader": self.reader, "scenario": self.scenario,
                "outcome": self.outcome,
                "versions": {str(v): o for v, o in sorted(self.versions.items())},
                "detail": self.detail, "cause": self.cause, "cause_text": self.cause_text,
                "seconds": round(self.seconds, 3)}

    @classmethod
    def from_dict(cls, d: dict) -> Cell:
        return cls(d["writer"], d["reader"], d["scenario"], d["outcome"],
                   {int(v): o for v, o in (d.get("versions") or {}).items()},
                   d.get("detail", ""), list(d.get("cause") or []), d.get("cause_text", ""),
                   float(d.get("seconds", 0.0)))


@dataclass
class CompatMatrix:
    writers: list[str]
    readers: list[str]
    scenarios: list[str]
    datasets: dict[tuple[str, str], Written] = field(default_factory=dict)
    cells: dict[tuple[str, str, str], Cell] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)  # participants that could not start
    seconds: float = 0.0
    #: label -> {"spec", "name", "version"} of every writer and reader that started
    participants: dict[str, dict] = field(default_factory=dict)
    provenance: dict = field(default_factory=dict)  # a saved run's (--from-json)

    def counts(self, writer: str | None = None, reader: str | None = None) -> dict[str, int]:
        out = {o: 0 for o in ORDER}
        for c in self.cells.values():
            if (writer is None or c.writer == writer) and (reader is None or c.reader == reader):
                out[c.outcome] = out.get(c.outcome, 0) + 1
        return out

    def broken(self) -> list[Cell]:
        """The cells that are not identical, misreads first."""
        bad = [c for c in self.cells.values() if c.outcome not in (IDENTICAL,)]
        return sorted(bad, key=lambda c: (ORDER.index(c.outcome), c.writer, c.reader, c.scenario))

    def first_readers(self) -> dict[str, str]:
        """For every fact of :data:`causes.NOTABLE` seen in this run, the oldest pylance
        reader that read a version holding it identically (how ``FIRST_READER`` is kept)."""
        seen: dict[str, tuple[tuple[int, ...], str]] = {}
        for c in self.cells.values():
            rv = causes.version_tuple(c.reader) if c.reader.startswith("pylance==") else None
            w = self.datasets.get((c.writer, c.scenario))
            if rv is None or w is None:
                continue
            for v, o in c.versions.items():
                if o != IDENTICAL or v not in w.facts:
                    continue
                for f in w.facts[v].facts:
                    if f.startswith(causes.NOTABLE) and (f not in seen or rv < seen[f][0]):
                        seen[f] = (rv, c.reader)
        return {f: r for f, (_, r) in sorted(seen.items())}

    @classmethod
    def from_dict(cls, d: dict) -> CompatMatrix:
        """A saved ``--json`` matrix, for re-rendering (the datasets keep their facts, not
        their rows)."""
        m = cls(list(d["writers"]), list(d["readers"]), list(d["scenarios"]),
                problems=list(d.get("problems", [])), seconds=float(d.get("seconds", 0)),
                participants=dict(d.get("participants", {})),
                provenance=dict(d.get("provenance", {})))
        for x in d.get("datasets", []):
            w = Written(x["writer"], x["scenario"], "", x.get("status", "written"),
                        x.get("message", ""), violated=list(x.get("violated", [])),
                        seconds=float(x.get("seconds", 0)),
                        self_diff={int(v): t for v, t in x.get("self_diff", {}).items()})
            w.facts = {int(v): causes.VersionFacts(int(v), set(f), x.get("writer_version", ""))
                       for v, f in x.get("facts", {}).items()}
            m.datasets[(w.writer, w.scenario)] = w
        for c in d.get("cells", []):
            cell = Cell.from_dict(c)
            m.cells[cell.key] = cell
        if m.datasets:  # name the causes again with this kit's tables
            name_causes(m, [Participant.parse(r) for r in m.readers])
        return m

    def provenance_block(self) -> dict:
        """What the matrix was judged against; its implementations are the participants
        (each with its name and version under ``participants``)."""
        from conformance import kit

        if self.provenance:
            return self.provenance
        labels = list(dict.fromkeys(self.writers + self.readers))
        return kit.provenance({"name": ", ".join(labels)})

    def as_dict(self) -> dict:
        from conformance import kit

        return {"kit": kit.version(), "seconds": round(self.seconds, 1), "writers": self.writers,
                "readers": self.readers, "scenarios": self.scenarios, "problems": self.problems,
                "provenance": self.provenance_block(),
                "participants": {k: self.participants[k] for k in sorted(self.participants)},
                "counts": self.counts(), "first_readers": self.first_readers(),
                "datasets": [d.as_dict() for _, d in sorted(self.datasets.items())],
                "cells": [c.as_dict() for _, c in sorted(self.cells.items())]}

    def judged(self) -> int:
        """How many cells were read and judged (identical, refused, crash or misread)."""
        return sum(c.outcome in RANK for c in self.cells.values())


# -- running ----------------------------------------------------------------------------------

def _model_rows(model: sc.Model, version: int) -> pa.Table:
    rows = getattr(model, "rows", None)
    t = rows(version) if rows else model.versions[version]
    return t.drop_columns([sc.ROW_ID]) if sc.ROW_ID in t.column_names else t


def writer_features(adapter: Adapter) -> set[str]:
    """The adapter's ``features``, plus ``storage:<v>`` for each version of the capabilities'
    ``storage_versions`` (the key ``lance-conformance fuzz`` reads), when it lists them."""
    caps = adapter.capabilities
    found = set(caps.features)
    found |= {f"storage:{v}" for v in (getattr(caps, "storage_versions", None) or ())}
    return found


def write_scenario(adapter: Adapter, features: set[str], writer: str, sid: str,
                   work: Path) -> Written:
    """Run scenario ``sid`` with ``adapter``; record the rows expected at every version it
    committed (the writer's own version numbers), the validator's verdict and the facts."""
    spec = scenario(sid)
    uri = work / _slug(writer) / _slug(sid) / "table.lance"
    w = Written(writer, sid, str(uri))
    started = time.monotonic()
    missing = [f for f in spec.get("requires", []) if f not in features]
    ops = sorted({op["op"] for op in spec["script"]} - set(adapter.capabilities.ops))
    if not adapter.capabilities.write:
        w.status, w.message = "unsupported", "the implementation does not write"
    elif missing or ops:
        w.status = "unsupported"
        w.message = "the writer lacks " + ", ".join(
            [f"feature {f}" for f in missing] + [f"operation {o}" for o in ops])
    if w.status != "written":
        return w
    if uri.parent.exists():
        shutil.rmtree(uri.parent)
    uri.parent.mkdir(parents=True)
    model = sc.Model()
    for i, op in enumerate(spec["script"]):
        data = sc.table_for(op["data"]) if "data" in op else None
        try:
            adapter.apply(str(uri), op, data)
        except Unsupported as exc:
            w.status, w.message = "unsupported", f"operation {i} ({op['op']}): {exc}"
            break
        except Exception as exc:  # noqa: BLE001 - the writer failed: a result
            w.status, w.message = "failed", f"operation {i} ({op['op']}): {_short(exc)}"
            break
        try:
            model.apply(op)
        except Exception as exc:  # noqa: BLE001 - the model cannot follow: not the writer's fault
            w.status, w.message = "failed", f"the model of operation {i}: {_short(exc)}"
            break
        if sc.commits(op):
            try:
                latest = max(adapter.versions(str(uri)))
            except Exception as exc:  # noqa: BLE001
                w.status, w.message = "failed", f"listing versions: {_short(exc)}"
                break
            w.expected[latest] = _model_rows(model, model.latest)
    if w.status == "written" and adapter.capabilities.read:
        for v, want in sorted(w.expected.items()):
            try:
                diff = sc.difference(adapter.read(str(uri), v), want)
            except Exception as exc:  # noqa: BLE001 - recorded, the readers tell the rest
                diff = f"the writer cannot read it back: {_short(exc, 150)}"
            if diff:
                w.self_diff[v] = diff
    if w.status == "written" or uri.exists():
        w.violated, w.facts = _judge(str(uri))
    w.seconds = time.monotonic() - started
    return w


def _judge(uri: str) -> tuple[list[str], dict[int, causes.VersionFacts]]:
    from conformance.engine.local import validate

    try:
        violated = sorted(validate(uri, versions="all", timeout=300).rules_violated())
    except Exception as exc:  # noqa: BLE001 - the validator could not open it at all
        violated = [f"unopenable ({type(exc).__name__})"]
    return violated, causes.dataset_facts(uri)


def _short(exc: BaseException, limit: int = 300) -> str:
    text = f"{type(exc).__name__}: {exc}"
    return text if len(text) <= limit else text[:limit] + "..."


def _slug(label: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", label)


def classify_error(exc: BaseException) -> str:
    """The outcome of a read that raised ``exc``: a panic, a dead or silent program is a
    crash; any other error is a clean refusal."""
    from conformance.harness.subprocess_adapter import AdapterError, ProtocolError

    if isinstance(exc, ProtocolError | _Hang):
        return CRASH
    if isinstance(exc, AdapterError) and "panic" in exc.error_class.lower():
        return CRASH
    if "PanicException" in type(exc).__name__:
        return CRASH
    return REFUSED


class _Hang(Exception):
    """An in-process read that did not return within the per-cell time limit."""


def _read_with_limit(adapter: Adapter, uri: str, version: int, timeout: float, in_process: bool):
    if not in_process:
        return adapter.read(uri, version)
    box: dict = {}

    def work():
        try:
            box["table"] = adapter.read(uri, version)
        except BaseException as exc:  # noqa: BLE001 - handed back below
            box["error"] = exc

    t = threading.Thread(target=work, daemon=True, name="compat-read")
    t.start()
    t.join(timeout)
    if t.is_alive():
        raise _Hang(f"no answer within {timeout} s")
    if "error" in box:
        raise box["error"]
    return box["table"]


def _log_size(log) -> int:
    if log is None:
        return 0
    try:
        return log.seek(0, 2)
    except (OSError, ValueError):
        return 0


def _panicked(log, mark: int) -> bool:
    """Whether the program's stderr got a Rust panic message after offset ``mark``."""
    if log is None:
        return False
    try:
        log.seek(mark)
        return b"panicked at" in log.read(1 << 20)
    except (OSError, ValueError):
        return False


def read_cell(adapter: Adapter, reader: Participant, w: Written, timeout: float) -> Cell:
    """Read every version of ``w`` with ``adapter``; the cell's outcome is its worst version."""
    cell = Cell(w.writer, reader.label, w.scenario, IDENTICAL)
    started = time.monotonic()
    details = []
    log = getattr(adapter, "stderr_log", None)
    for v, want in sorted(w.expected.items()):
        mark = _log_size(log)
        try:
            got = _read_with_limit(adapter, w.uri, v, timeout, reader.in_process)
        except Unsupported as exc:
            cell.versions[v] = NO_READ
            details.append(f"v{v}: {exc}")
            continue
        except Exception as exc:  # noqa: BLE001 - a failed read is a result
            outcome = classify_error(exc)
            if outcome == REFUSED and _panicked(log, mark):
                outcome = CRASH
                exc = RuntimeError(f"a Rust panic behind {_short(exc, 150)}")
            cell.versions[v] = outcome
            details.append(f"v{v}: {_short(exc, 200)}")
            if outcome == CRASH and (_dead(adapter) or isinstance(exc, _Hang)):
                break  # the program is gone (or stuck); the caller starts a new one
            continue
        diff = sc.difference(got, want)
        cell.versions[v] = IDENTICAL if diff is None else MISREAD
        if diff:
            details.append(f"v{v}: {diff}")
    ranked = [o for o in cell.versions.values() if o in RANK]
    if ranked:
        cell.outcome = max(ranked, key=RANK.__getitem__)
    elif cell.versions:
        cell.outcome = NO_READ
    cell.detail = "; ".join(details[:3])
    cell.seconds = time.monotonic() - started
    return cell


def name_causes(m: CompatMatrix, readers: list[Participant]) -> None:
    """Name the cause of every cell that is not identical, from the bytes of its dataset."""
    release = {r.label: r.release_version for r in readers}
    read_ok: dict[str, set[str]] = {}
    for c in m.cells.values():
        w = m.datasets[(c.writer, c.scenario)]
        for v, o in c.versions.items():
            if o == IDENTICAL and v in w.facts:
                read_ok.setdefault(c.reader, set()).update(w.facts[v].facts)
    for c in m.cells.values():
        w = m.datasets[(c.writer, c.scenario)]
        if c.outcome == NOT_WRITTEN:
            c.cause, c.cause_text = [f"writer-{w.status}"], w.message
            continue
        if c.outcome in (IDENTICAL, NO_READ):
            continue
        bad = [v for v, o in sorted(c.versions.items()) if o == c.outcome]
        if c.outcome == MISREAD and bad and bad[0] in w.self_diff \
                and f"v{bad[0]}: {w.self_diff[bad[0]]}" in c.detail:
            c.cause = ["writer-deviates"]
            c.cause_text = (f"the writer reads back the same rows itself: it wrote other rows "
                            f"than the script asks (v{bad[0]}: {w.self_diff[bad[0]]})")
            continue
        facts = w.facts.get(bad[0]).facts if bad and bad[0] in w.facts else set()
        c.cause, c.cause_text = causes.name_cause(
            facts, read_ok.get(c.reader, set()), release.get(c.reader), violated=w.violated)


class _Progress:
    def __init__(self, total: int, stream=None) -> None:
        self.total, self.done = max(total, 1), 0
        self.stream = stream or sys.stderr
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.started = time.monotonic()
        self.lock = threading.Lock()
        self.last_pct = -10

    def step(self, what: str) -> None:
        with self.lock:
            self.done += 1
            pct = int(100 * self.done / self.total)
            bar = "#" * (pct // 4) + "." * (25 - pct // 4)
            line = (f"[{bar}] {self.done}/{self.total} {time.monotonic() - self.started:6.0f}s "
                    f"{what[:60]}")
            if self.tty:
                self.stream.write("\r" + line.ljust(110))
                if self.done == self.total:
                    self.stream.write("\n")
            elif pct >= self.last_pct + 10 or self.done == self.total:
                self.last_pct = pct
                self.stream.write(line + "\n")
            self.stream.flush()


def _pool(jobs: int, tasks: list, worker: Callable) -> None:
    """Run ``worker(task, state)`` over ``tasks`` in ``jobs`` threads; ``state`` is a dict
    private to each thread (it keeps the thread's adapters)."""
    q: queue.Queue = queue.Queue()
    for t in tasks:
        q.put(t)
    errors: list[BaseException] = []

    def run():
        state: dict = {}
        try:
            while True:
                try:
                    task = q.get_nowait()
                except queue.Empty:
                    return
                worker(task, state)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller
            errors.append(exc)
        finally:
            for a in state.values():
                try:
                    a.close()
                except Exception:  # noqa: BLE001
                    pass

    threads = [threading.Thread(target=run, name=f"compat-{i}") for i in range(max(1, jobs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


def _adapter(state: dict, p: Participant, timeout: float, problems: dict,
             seen: dict | None = None) -> Adapter | None:
    a = state.get(p.label)
    proc = getattr(a, "proc", None)
    if a is not None and (proc is None or proc.poll() is None) and not getattr(a, "_hung", False):
        return a
    if a is not None:
        try:
            a.close()
        except Exception:  # noqa: BLE001
            pass
    try:
        a = p.make(timeout)
    except Exception as exc:  # noqa: BLE001 - a participant that cannot start
        problems[p.label] = _short(exc)
        state.pop(p.label, None)
        return None
    state[p.label] = a
    if seen is not None and p.label not in seen:
        version = getattr(a, "version", None) or (p.spec.split("==", 1)[1] if p.is_release else "")
        seen[p.label] = {"spec": p.spec, "name": str(getattr(a, "name", "") or p.label),
                         "version": str(version)}
    return a


def run_matrix(writers: list[Participant], readers: list[Participant], *,
               scenarios: list[str] | None = None, work: Path, jobs: int = 2,
               timeout: float = 60.0, progress: bool = True) -> CompatMatrix:
    """Write every scenario with every writer, read every version with every reader."""
    started = time.monotonic()
    sids = list(scenarios or COMPAT_SCENARIOS)
    m = CompatMatrix([w.label for w in writers], [r.label for r in readers], sids)
    problems: dict[str, str] = {}
    # build the virtualenvs first, one at a time (pip and the lock do the rest)
    for p in {p.spec: p for p in writers + readers}.values():
        try:
            p.prepare()
        except Exception as exc:  # noqa: BLE001
            problems[p.label] = _short(exc)
    bar = _Progress(len(writers) * len(sids) + len(writers) * len(sids) * len(readers)) \
        if progress else None
    lock = threading.Lock()

    def write_task(wp: Participant, state: dict) -> None:
        a = None if wp.label in problems else _adapter(state, wp, timeout, problems,
                                                       m.participants)
        for sid in sids:
            if a is None:
                w = Written(wp.label, sid, "", "failed", f"the writer did not start: "
                            f"{problems.get(wp.label, '?')}")
            else:
                w = write_scenario(a, writer_features(a), wp.label, sid, work)
                if w.status == "failed":  # start afresh for the next scenario
                    a = _adapter(state, wp, timeout, problems, m.participants) \
                        if _dead(a) else a
            with lock:
                m.datasets[(wp.label, sid)] = w
            if bar:
                bar.step(f"write {wp.label} {sid}")

    _pool(jobs, writers, write_task)

    tasks = [(r, m.datasets[(wp.label, sid)]) for r in readers for wp in writers for sid in sids]

    def read_task(task, state: dict) -> None:
        rp, w = task
        if w.status != "written":
            cell = Cell(w.writer, rp.label, w.scenario, NOT_WRITTEN, detail=w.message)
        else:
            a = None if rp.label in problems else _adapter(state, rp, timeout, problems,
                                                           m.participants)
            if a is None:
                cell = Cell(w.writer, rp.label, w.scenario, NO_READ,
                            detail=f"the reader did not start: {problems.get(rp.label, '?')}")
            elif not a.capabilities.read:
                cell = Cell(w.writer, rp.label, w.scenario, NO_READ, detail="does not read")
            else:
                cell = read_cell(a, rp, w, timeout)
                if cell.outcome == CRASH and rp.in_process:
                    a._hung = True  # noqa: SLF001 - a new instance for the next cell
        with lock:
            m.cells[cell.key] = cell
        if bar:
            bar.step(f"read {rp.label} <- {w.writer} {w.scenario}")

    _pool(jobs, tasks, read_task)
    name_causes(m, readers)
    m.problems = [f"{k}: {v}" for k, v in sorted(problems.items())]
    m.seconds = time.monotonic() - started
    return m


def _dead(a: Adapter) -> bool:
    proc = getattr(a, "proc", None)
    return proc is not None and proc.poll() is not None


# -- baseline ---------------------------------------------------------------------------------

@dataclass
class Regression:
    cell: tuple[str, str, str]
    before: str
    after: str
    cause: str

    def __str__(self) -> str:
        w, r, s = self.cell
        return f"{w} -> {r} [{s}]: {self.before} -> {self.after}: {self.cause}"


def baseline_overlap(m: CompatMatrix | dict, baseline: dict) -> int:
    """How many cells of ``m`` the baseline also holds (a baseline sharing none compares
    nothing)."""
    now = m.as_dict() if isinstance(m, CompatMatrix) else m
    old = {(c["writer"], c["reader"], c["scenario"]) for c in baseline.get("cells", [])}
    return sum((c["writer"], c["reader"], c["scenario"]) in old for c in now.get("cells", []))


def compare_baseline(m: CompatMatrix | dict, baseline: dict) -> list[Regression]:
    """The cells that got worse than in ``baseline`` (a saved ``--json``): an outcome of
    higher rank (identical < refused < crash < misread), an identical cell whose writer no
    longer writes the scenario, or a dataset the validator accepted and now rejects."""
    now = m.as_dict() if isinstance(m, CompatMatrix) else m
    old_cells = {(c["writer"], c["reader"], c["scenario"]): c for c in baseline.get("cells", [])}
    old_sets = {(d["writer"], d["scenario"]): d for d in baseline.get("datasets", [])}
    out: list[Regression] = []
    for c in now.get("cells", []):
        key = (c["writer"], c["reader"], c["scenario"])
        old = old_cells.get(key)
        if old is None:
            continue
        a, b = old["outcome"], c["outcome"]
        if a in RANK and b in RANK and RANK[b] > RANK[a]:
            out.append(Regression(key, a, b, c.get("cause_text") or c.get("detail") or "?"))
        elif a in RANK and a != CRASH and b == NOT_WRITTEN:
            out.append(Regression(key, a, b, c.get("detail") or "the writer no longer writes it"))
    for d in now.get("datasets", []):
        old = old_sets.get((d["writer"], d["scenario"]))
        if old and not old.get("violated") and d.get("violated"):
            out.append(Regression((d["writer"], "validator", d["scenario"]), "valid", "invalid",
                                  "the writer's dataset breaks " + ", ".join(d["violated"])))
    return out
