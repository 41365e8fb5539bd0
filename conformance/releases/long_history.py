"""Long, mixed histories written by many releases, judged whole.

The history engine (:mod:`conformance.engine.history`) judges ``--all-versions`` by check
units keyed by content, with paths that must give one report: the fast and the readable
split, units shared or one per version (``dedupe``), the fragment aggregates shown to the
rules or not (``guards``), a verdict cache grown with the table, and the Spark engine. This
campaign throws long histories of mixed operations at all of them:

* each history is a seeded random walk of a few hundred steps over the operations a release
  exposes (``history_program.py``, run in the release's own cached virtualenv), at one
  storage version, with stable row ids on or off;
* it is written in two halves: the first half is validated with a fresh verdict cache, the
  rest is appended, and the cached run over the whole history must report what a fresh run
  reports (``cache``);
* the fresh report must equal the readable split's (``readable``), one unit per version's
  (``dedupe``) and the one without the aggregates (``guards``); with ``deep``, the deep
  reports too, and on ``spark`` histories the Spark engine's deep report;
* it must draw no error finding the spec text does not demand: the release reads back every
  version of its own history (the oracle), so an error on a version it reads is a false
  error unless it is one of the release's known breaches (:data:`.corpus.EXPECTED_FINDINGS`);
  a version it cannot read must draw an error finding;
* a sample of versions (and every branch's versions) must read in the reference reader as
  the release read them (:func:`.corpus._judge_version`, as ``fixtures judge-tables``).

Every difference is a :class:`Discrepancy` of its history's :class:`HistoryVerdict`.
"""

from __future__ import annotations

import dataclasses
import json
import random
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from .venvs import Release, ensure_venv

PROGRAM = Path(__file__).with_name("history_program.py")

#: The writers of the campaign: pylance across its range, and one lancedb.
WRITERS = ("pylance==0.10.18", "pylance==0.16.1", "pylance==0.20.0", "pylance==0.26.1",
           "pylance==0.32.1", "pylance==0.38.3", "pylance==1.0.4", "pylance==8.0.1",
           "pylance==14.0.2", "lancedb==0.38.0")

#: Histories begun by one release and grown to their end by a newer one (a user who
#: upgrades), at the storage versions both write as stable ones.
UPGRADES = (("pylance==0.10.18", "pylance==0.20.0"), ("pylance==0.16.1", "pylance==0.38.3"),
            ("pylance==0.20.0", "pylance==14.0.2"), ("pylance==0.32.1", "pylance==8.0.1"),
            ("pylance==1.0.4", "pylance==14.0.2"), ("pylance==8.0.1", "pylance==14.0.2"))

#: The storage versions lancedb may be asked for (its table options name them).
LANCEDB_STORAGES = (None, "legacy", "2.0", "2.1", "2.2")


@dataclass(frozen=True)
class HistorySpec:
    """One history: who writes it, at which storage version, from which seed, how long."""

    writer: str
    storage: str | None
    seed: int
    steps: int
    stable: bool = False
    deep: bool = False  # the verdict cache runs with --deep (every history is judged deep too)
    spark: bool = False  # also judged by the Spark engine (deep)
    then: str | None = None  # the release that writes the second half (an upgrade)

    @property
    def name(self) -> str:
        rows = "-stable-row-ids" if self.stable else ""
        then = f"-then-{Release.parse(self.then).slug}" if self.then else ""
        return f"longhist-{self.storage or 'default'}{rows}-s{self.seed}{then}"

    @property
    def release(self) -> Release:
        return Release.parse(self.writer)

    @property
    def last(self) -> Release:
        """The release that writes the second half (and reads the history back)."""
        return Release.parse(self.then or self.writer)

    @property
    def writers(self) -> str:
        """The writers as the corpus names them: ``A`` or ``A then B``."""
        return f"{self.writer} then {self.then}" if self.then else self.writer


@dataclass
class Discrepancy:
    kind: str  # cache | readable | dedupe | guards | deep-readable | ... | error | reading
    detail: str


@dataclass
class HistoryVerdict:
    writer: str
    history: str
    versions: int = 0
    branches: int = 0
    steps: dict = field(default_factory=dict)  # op -> {outcome: count}
    discrepancies: list[Discrepancy] = field(default_factory=list)
    expected: list[str] = field(default_factory=list)  # known breaches seen
    readings: dict = field(default_factory=dict)  # outcome -> count
    seconds: dict = field(default_factory=dict)
    stats: dict = field(default_factory=dict)
    note: str = ""

    @property
    def ok(self) -> bool:
        return not self.discrepancies

    def as_dict(self) -> dict:
        d = dataclasses.asdict(self)
        d["ok"] = self.ok
        return d


# -- writing --------------------------------------------------------------------------------

def storage_versions(release: Release, timeout: float = 300) -> list[str | None]:
    """The storage versions ``release`` writes (probed in its virtualenv)."""
    if release.package == "lancedb":
        return list(LANCEDB_STORAGES)
    py = ensure_venv(release)
    code = ("import sys, json; sys.path.insert(0, sys.argv[1]); import release_program as rp; "
            "print(json.dumps(rp.storage_versions())); import os; os._exit(0)")
    done = subprocess.run([str(py), "-c", code, str(PROGRAM.parent)], capture_output=True,
                          text=True, timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"{release.name}: storage versions not probed: "
                           f"{done.stderr.strip()[-300:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def plan(writers=WRITERS, *, seed: int = 0, steps: int = 300, deep_every: int = 3,
         spark: int = 1, storages: dict | None = None) -> list[HistorySpec]:
    """A history per writer and storage version it writes; stable row ids drawn (seeded) for
    each; every ``deep_every``-th history also judged ``--deep``; the first ``spark`` deep
    histories of the newest pylance writer by Spark too. ``storages`` (writer -> list)
    skips the probing."""
    rng = random.Random(seed)
    out = []
    for i, writer in enumerate(writers):
        rel = Release.parse(writer)
        versions = (storages or {}).get(writer) or storage_versions(rel)
        for j, storage in enumerate(versions):
            out.append(HistorySpec(writer, storage, seed * 1000 + i * 10 + j, steps,
                                   stable=rng.random() < 0.5))
    out = [dataclasses.replace(s, deep=(k % deep_every == 0)) for k, s in enumerate(out)]
    sparked = 0
    for k in range(len(out) - 1, -1, -1):  # the newest writers first
        if sparked < spark and out[k].deep:
            out[k] = dataclasses.replace(out[k], spark=True)
            sparked += 1
    return out


def upgrades(pairs=UPGRADES, *, seed: int = 0, steps: int = 300) -> list[HistorySpec]:
    """A history per pair ``(old, new)`` and storage version: legacy and 2.0, and 2.1 where
    the old release is 1.0 or later (2.1 was unstable before); the first half written by
    ``old``, the rest by ``new``, which reads it back. Every other one is judged with a deep
    verdict cache."""
    rng = random.Random(seed + 7)
    out = []
    for i, (old, new) in enumerate(pairs):
        storages = ["legacy", "2.0"] + (["2.1"] if Release.parse(old).version_tuple >= (1, 0)
                                        else [])
        for j, storage in enumerate(storages):
            out.append(HistorySpec(old, storage, seed * 1000 + 500 + i * 10 + j, steps,
                                   stable=rng.random() < 0.5, deep=(len(out) % 2 == 0),
                                   then=new))
    return out


def _program(release: Release, spec: HistorySpec, folder: Path, *args: str,
             timeout: float) -> None:
    py = ensure_venv(release)
    done = subprocess.run(["nice", "-n", "10", str(py), str(PROGRAM), *args],
                          capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        (folder / "program.log").write_text(done.stdout + done.stderr)
        raise RuntimeError(f"{release.name} {spec.name}: {args[0]} failed: "
                           f"{done.stderr.strip()[-400:]}")


def grow(spec: HistorySpec, folder: Path, stop: int | None, *, timeout: float = 1800,
         attempts: int = 3, release: Release | None = None) -> None:
    """Write the history's steps up to ``stop`` (None: its end) with ``release`` (default:
    the history's first writer); a process that dies inside a step is started again, that
    step recorded as ``crashed``."""
    release = release or spec.release
    folder.mkdir(parents=True, exist_ok=True)
    body = {"seed": spec.seed, "steps": spec.steps, "storage": spec.storage,
            "stable": spec.stable, "writer": release.name, "name": spec.name, "stop": stop}
    (folder / "spec.json").write_text(json.dumps(body))
    for attempt in range(attempts):
        try:
            _program(release, spec, folder, "write", str(folder), str(folder / "spec.json"),
                     timeout=timeout)
            return
        except RuntimeError:
            if attempt == attempts - 1:
                raise


def read_back(spec: HistorySpec, folder: Path, *, timeout: float = 1800) -> dict:
    """The last writer's reading of every version; ``scenario.json`` names every writer."""
    _program(spec.last, spec, folder, "read", str(folder), timeout=timeout)
    info = json.loads((folder / "scenario.json").read_text())
    if info.get("writer") != spec.writers:
        info["writer"] = spec.writers
        (folder / "scenario.json").write_text(json.dumps(info, indent=1, sort_keys=True))
    return info


# -- judging --------------------------------------------------------------------------------

def _plain(report) -> dict:
    d = report.as_dict()
    d.pop("elapsed_s", None)
    d.pop("stats", None)
    return d


def report_difference(a, b) -> str:
    """'' when two reports say the same, else the first findings only one of them holds."""
    da, db = _plain(a), _plain(b)
    if da == db:
        return ""
    fa = {json.dumps(f, sort_keys=True) for f in da.pop("violations", [])
          + da.pop("warnings", [])}
    fb = {json.dumps(f, sort_keys=True) for f in db.pop("violations", [])
          + db.pop("warnings", [])}
    parts = []
    for label, only in (("only in the first", fa - fb), ("only in the second", fb - fa)):
        for f in sorted(only)[:3]:
            parts.append(f"{label}: {f[:400]}")
    for k in sorted(set(da) | set(db)):
        if da.get(k) != db.get(k):
            parts.append(f"{k}: {str(da.get(k))[:200]} != {str(db.get(k))[:200]}")
    return "; ".join(parts) or "reports differ"


def _flagged(report, info: dict) -> set[str]:
    """The versions an error finding names: ``"3"`` on main, ``"dev:3"`` on a branch."""
    out = set()
    for v in report.violations:
        ref = str(v.location.get("ref", "main"))
        branch = ref.split(":", 1)[1] if ref.startswith("branch:") else None
        for version in v.covers() or [None]:
            out.add(f"{branch}:{version}" if branch else str(version))
    return out


@dataclass
class Oracles:
    """What the writer and the newest release made of a history: the versions the newest
    release refuses (``refused``: the kit must refuse them or read them as their writer did,
    and error findings on them are demanded; a version the writer itself could not read and
    the newest release did not read either is among them), whether the newest release
    refuses the whole table, and the branch versions either refuses."""

    info: dict
    newest: dict | None
    refused: set
    table_refused: bool
    branch_refused: set

    @classmethod
    def of(cls, folder: Path, info: dict) -> Oracles:
        from .corpus import NEWEST_READER, _branch_versions_refused_by_newest, _newest_reading

        newest = _newest_reading(folder)
        refused, table_refused = set(), False
        if newest is not None:
            gone = newest.get("unreadable_versions", {})
            refused = {int(v) for v in gone if v != "latest"}
            if "latest" in gone:
                refused, table_refused = set(info.get("versions", [])), True
        rows = folder / "read-by" / Release.parse(NEWEST_READER).slug / "expected"
        failed = {int(v) for v in info.get("unreadable_versions", {}) if v != "latest"}
        refused |= {v for v in failed if not (rows / f"v{v}.arrows").exists()}
        branch_refused = _branch_versions_refused_by_newest(info, newest) | set(
            info.get("unreadable_branch_versions", {}))
        return cls(info, newest, refused, table_refused, branch_refused)

    @property
    def nothing_read(self) -> bool:
        """Neither the writer nor the newest release opens the table (a mixture of data
        file versions): every error finding is demanded, and there must be one."""
        return self.table_refused and not self.info.get("versions") and \
            "latest" in self.info.get("unreadable_versions", {})


def false_errors(report, spec: HistorySpec, oracles: Oracles) -> tuple[list[str], list[str]]:
    """``(false errors, known breaches seen)``: error findings on versions the writer and the
    newest release read, beyond the writer's known breaches; a finding on a version one of
    them refuses is demanded, not false."""
    from .corpus import expected_findings

    expected = expected_findings(spec.writers, spec.name)
    false, seen = [], set()
    for v in report.violations:
        if v.rule in expected:
            seen.add(v.rule)
            continue
        if oracles.nothing_read:
            continue
        ref = str(v.location.get("ref", "main"))
        branch = ref.split(":", 1)[1] if ref.startswith("branch:") else None
        covered = v.covers() or [None]
        if branch is not None:
            if "*" in oracles.branch_refused or branch in oracles.branch_refused or all(
                    f"{branch}:{c}" in oracles.branch_refused for c in covered):
                continue
        elif covered == [None]:
            if oracles.table_refused or "latest" in oracles.info.get("unreadable_versions", {}):
                continue
        elif all(int(c) in oracles.refused for c in covered):
            continue
        false.append(f"{v.rule} {ref} v{_spans(v)}: {v.message[:300]}")
    return false, sorted(seen)


def _spans(v) -> str:
    if v.versions:
        return ",".join(f"{a}-{b}" if a != b else str(a) for a, b in v.versions)
    return str(v.location.get("version", "-"))


def judge_readings(folder: Path, oracles: Oracles, report, *, sample: int,
                   rng: random.Random) -> tuple[dict, list[Discrepancy]]:
    """A sample of main's versions (the first and the last among them, and every version
    the writer could not read) and every branch's latest version, read by the reference
    reader against the writer's reading (the newest release's where they differ), as the
    cross-release corpus judges them (``folder/table`` is the table)."""
    from .corpus import AGREED, _judge_branch_version, _judge_refused, _judge_version

    table = folder / "table"
    info = oracles.info
    flagged = _flagged(report, info)
    versions = list(info.get("versions", []))
    picked = set(rng.sample(versions, min(sample, len(versions))))
    picked |= {versions[0], versions[-1]} if versions else set()
    picked |= {int(v) for v in info.get("unreadable_versions", {}) if v != "latest"}
    counts: dict[str, int] = {}
    found = []
    for v in sorted(picked):
        if v in oracles.refused:
            verdict = _judge_refused(table, v, flagged, oracles.newest)
        else:
            verdict = _judge_version(table, folder, v, flagged)
        counts[verdict.outcome] = counts.get(verdict.outcome, 0) + 1
        if verdict.outcome not in AGREED:
            found.append(Discrepancy("reading", f"v{v} {verdict.outcome}: {verdict.detail}"))
    for name, listed in sorted(info.get("branches", {}).items()):
        for v in listed[-1:]:
            refused = f"{name}:{v}" in oracles.branch_refused or "*" in oracles.branch_refused
            verdict = _judge_branch_version(table, folder, name, v, refused, flagged)
            counts[verdict.outcome] = counts.get(verdict.outcome, 0) + 1
            if verdict.outcome not in AGREED:
                found.append(Discrepancy("reading", f"{name}:{v} {verdict.outcome}: "
                                                    f"{verdict.detail}"))
    return counts, found


def read_with_newest(spec: HistorySpec, folder: Path, table: Path, *,
                     timeout: float = 1800) -> None:
    """The newest release's reading of every version (``read-by/<newest>/``), the second
    oracle of a history written by another release."""
    from .corpus import NEWEST_READER
    from .corpus import PROGRAM as RELEASE_PROGRAM

    newest = Release.parse(NEWEST_READER)
    if spec.last.name == NEWEST_READER:
        return
    out = folder / "read-by" / newest.slug
    shutil.rmtree(out, ignore_errors=True)
    py = ensure_venv(newest)
    done = subprocess.run(["nice", "-n", "10", str(py), str(RELEASE_PROGRAM), "read",
                           str(table), str(out)], capture_output=True, text=True,
                          timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"{NEWEST_READER} could not read {spec.name}: "
                           f"{done.stderr.strip()[-400:]}")


def run_history(spec: HistorySpec, folder: Path, *, sample: int = 24, spark_session=None,
                keep: bool = False) -> HistoryVerdict:
    """Write, grow and judge one history (see the module's docstring)."""
    from conformance.engine import local

    verdict = HistoryVerdict(spec.writers, spec.name)
    shutil.rmtree(folder, ignore_errors=True)
    t0 = time.monotonic()
    half = max(1, spec.steps // 2)
    grow(spec, folder, half)
    verdict.seconds["write_half"] = round(time.monotonic() - t0, 1)
    info = json.loads((folder / "scenario.json").read_text())
    table = Path(info.get("table_path") or folder / "table")
    if not (table / "_versions").is_dir():
        verdict.note = "the writer committed nothing: " + json.dumps(info["steps"][:1])[:300]
        return verdict
    cache = str(folder / "verdicts.json")
    t = time.monotonic()
    local.validate(str(table), versions="all", deep=spec.deep, cache=cache)
    verdict.seconds["validate_half_cached"] = round(time.monotonic() - t, 1)
    t = time.monotonic()
    grow(spec, folder, None, release=spec.last)
    info = read_back(spec, folder)
    if table != folder / "table":  # (a lancedb table, in its database)
        (folder / "table").symlink_to(table.relative_to(folder))
    read_with_newest(spec, folder, table)
    oracles = Oracles.of(folder, info)
    verdict.seconds["write_rest_and_read"] = round(time.monotonic() - t, 1)
    verdict.versions = len(info.get("versions", []))
    verdict.branches = len(info.get("branches", {}))
    for s in info["steps"]:
        verdict.steps.setdefault(s["op"], {}).setdefault(s.get("outcome", "?"), 0)
        verdict.steps[s["op"]][s.get("outcome", "?")] += 1

    def timed(label, fn):
        t = time.monotonic()
        out = fn()
        verdict.seconds[label] = round(time.monotonic() - t, 1)
        return out

    fresh = timed("validate", lambda: local.validate(str(table), versions="all"))
    verdict.stats = {k: fresh.stats.get(k) for k in (
        "versions_checked", "fragment_entries", "fragment_units", "manifests_read")}
    runs = {"readable": local.Options(fast=False), "dedupe": local.Options(dedupe=False),
            "guards": local.Options(guards=False)}
    for label, options in runs.items():
        other = timed(f"validate_{label}", lambda o=options: _run(str(table), False, o))
        diff = report_difference(fresh, other)
        if diff:
            verdict.discrepancies.append(Discrepancy(label, diff))
    # the deep report on every history (cheap on these small tables): its paths must agree
    # too, and only deep checks flag a version whose data files a reader refuses
    deep = timed("validate_deep", lambda: local.validate(str(table), versions="all", deep=True))
    deep_runs = [("deep-readable", local.Options(fast=False)),
                 ("deep-guards", local.Options(guards=False))]
    if spec.deep:  # (every data file decoded once per version that lists it)
        deep_runs.append(("deep-dedupe", local.Options(dedupe=False)))
    for label, options in deep_runs:
        other = timed(f"validate_{label}", lambda o=options: _run(str(table), True, o))
        diff = report_difference(deep, other)
        if diff:
            verdict.discrepancies.append(Discrepancy(label, diff))
    cached = timed("validate_cached", lambda: local.validate(
        str(table), versions="all", deep=spec.deep, cache=cache))
    served = cached.stats.get("versions_from_cache", 0)
    verdict.stats["versions_from_cache"] = served
    diff = report_difference(deep if spec.deep else fresh, cached)
    if diff:
        verdict.discrepancies.append(Discrepancy("cache", diff))
    if spec.spark:
        from conformance.engine import spark

        sparked = timed("validate_spark", lambda: spark.validate(
            str(table), spark=spark_session, master=None if spark_session else "local[2]",
            versions="all", deep=True))
        diff = report_difference(deep, sparked)
        if diff:
            verdict.discrepancies.append(Discrepancy("spark", diff))
    for report in (fresh, deep):
        false, seen = false_errors(report, spec, oracles)
        verdict.expected = sorted(set(verdict.expected) | set(seen))
        for f in false:
            if all(d.detail != f for d in verdict.discrepancies):
                verdict.discrepancies.append(Discrepancy(
                    "error" if report is fresh else "deep-error", f))
    if oracles.nothing_read and not deep.violations:
        verdict.discrepancies.append(Discrepancy(
            "reading", "neither the writer nor the newest release opens the table "
                       f"({oracles.info['unreadable_versions']['latest'][:200]}) but the kit "
                       "reports no error"))
    counts, found = timed("readings", lambda: judge_readings(
        folder, oracles, deep, sample=sample, rng=random.Random(spec.seed)))
    verdict.readings = counts
    verdict.discrepancies.extend(found)
    if not keep and verdict.ok:
        shutil.rmtree(folder, ignore_errors=True)
    return verdict


def _run(uri: str, deep: bool, options):
    from conformance.engine import local

    p = local.plan(uri, versions="all", deep=deep, options=options)
    return local.merge(p, [local.run_data_file_item(i) for i in p.items])


def campaign(specs: list[HistorySpec], root: Path, *, sample: int = 24, progress=print,
             keep: bool = False) -> list[HistoryVerdict]:
    """Every history of ``specs`` under ``root/<writer>/<history>``; a history whose
    writer cannot be installed or whose program fails is a verdict with a note."""
    from .venvs import ReleaseUnavailable

    session = None
    if any(s.spark for s in specs):
        from conformance.engine.spark_session import get_session

        session = get_session("local[2]")
    out = []
    for spec in specs:
        folder = Path(root) / spec.release.slug / spec.name
        t = time.monotonic()
        try:
            v = run_history(spec, folder, sample=sample, spark_session=session, keep=keep)
        except (ReleaseUnavailable, RuntimeError, subprocess.TimeoutExpired, OSError) as e:
            v = HistoryVerdict(spec.writers, spec.name, note=f"not judged: {e}"[:600])
            v.discrepancies.append(Discrepancy("campaign", v.note))
        v.seconds["total"] = round(time.monotonic() - t, 1)
        out.append(v)
        if progress:
            progress(describe(v))
    return out


def describe(v: HistoryVerdict) -> str:
    done = sum(c.get("done", 0) for c in v.steps.values())
    head = (f"{v.writer} {v.history}: {v.versions} versions, {v.branches} branches, "
            f"{done} steps done, {len(v.discrepancies)} discrepancies "
            f"({v.seconds.get('total', '?')} s){' ' + v.note if v.note else ''}")
    return "\n".join([head] + [f"  {d.kind}: {d.detail[:700]}" for d in v.discrepancies])


def markdown(verdicts: list[HistoryVerdict]) -> str:
    """The campaign as a table: writer, history, versions, steps by operation, verdict."""
    lines = ["| writer | history | versions | branches | steps done | deep | discrepancies |",
             "|---|---|---:|---:|---:|---|---|"]
    for v in verdicts:
        done = sum(c.get("done", 0) for c in v.steps.values())
        kinds = ", ".join(sorted({d.kind for d in v.discrepancies})) or "none"
        lines.append(f"| {v.writer} | {v.history} | {v.versions} | {v.branches} | {done} | "
                     f"{'yes' if 'validate_deep' in v.seconds else ''} | {kinds} |")
    ops: dict[str, dict[str, int]] = {}
    for v in verdicts:
        for op, outcomes in v.steps.items():
            for k, n in outcomes.items():
                ops.setdefault(op, {}).setdefault(k, 0)
                ops[op][k] += n
    lines += ["", "| operation | done | failed | missing | skipped | crashed |",
              "|---|---:|---:|---:|---:|---:|"]
    for op, c in sorted(ops.items()):
        lines.append(f"| {op} | {c.get('done', 0)} | {c.get('failed', 0)} | "
                     f"{c.get('missing', 0)} | {c.get('skipped', 0)} | {c.get('crashed', 0)} |")
    return "\n".join(lines) + "\n"


__all__ = ["UPGRADES", "WRITERS", "upgrades", "Discrepancy", "HistorySpec", "HistoryVerdict", "campaign", "describe",
           "grow", "markdown", "plan", "read_back", "report_difference", "run_history"]
