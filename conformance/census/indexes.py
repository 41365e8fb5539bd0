"""The index corpus: tables carrying every index kind a release builds, after the operations
users apply, each with the release's answers to queries through and without its index.

:func:`build` runs ``index_program.py`` with a release's Python (its cached virtualenv,
:mod:`conformance.releases.venvs`), one process per index kind so a crash costs one kind,
into ``<out>/<kind>/<scenario>/`` (``table/`` and ``case.json``, described in the program's
docstring). For the ``swap`` scenario the program leaves two tables of the same rows (the
second reversed) with the same index; this module copies the second's index files over the
first's (:func:`conformance.census.index_files.copy_index_files`, which keeps the manifest's
recorded sizes true) and has the release answer the queries on the result.

:func:`load` reads a built corpus back as :class:`Case` objects. A case's ``expected`` is
``right`` for every scenario but ``swap`` (built ``wrong`` on purpose); whether the release's
own answers through its index agree with its scan is :attr:`Case.release_agrees`.

Where they do not, :func:`reread_wrong` has the newest release (:data:`REREADER`) answer the
same queries on the same table, through the same index files and without them
(``reread-<release>.json``): an index that release answers right through is true to its
data, and the first release misreads it (the census's ``misread``).

A lancedb release runs ``index_program_lancedb.py`` instead: the same rows and queries
through lancedb's own API (``create_scalar_index``, ``create_fts_index``, ``create_index``,
``optimize``), on the kinds and scenarios lancedb has; the others are ``skipped`` with the
reason.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from conformance.releases.venvs import Release, cache_root, ensure_venv

PROGRAM = Path(__file__).with_name("index_program.py")
#: lancedb's program: the same rows and queries through lancedb's API (it imports PROGRAM).
LANCEDB_PROGRAM = Path(__file__).with_name("index_program_lancedb.py")


def program_of(release: Release) -> Path:
    return LANCEDB_PROGRAM if release.package == "lancedb" else PROGRAM

#: The release that re-reads a table another release answered wrong through its index: the
#: newest (as the cross-release corpus's reader, :data:`conformance.releases.corpus.NEWEST_READER`).
REREADER = "pylance==14.0.2"

#: Index kinds of the program, in the order of the census table.
KINDS = ("BTREE", "BTREE-nulls", "BITMAP", "LABEL_LIST", "NGRAM", "FM", "ZONEMAP", "BLOOMFILTER",
         "INVERTED", "INVERTED-positions", "JSON", "RTREE", "MINHASHLSH", "IVF_FLAT", "IVF_PQ", "IVF_SQ",
         "IVF_HNSW_FLAT", "IVF_HNSW_SQ", "IVF_HNSW_PQ", "IVF_RQ")
#: Scenarios of the program (operations after the index is built).
SCENARIOS = ("plain", "append", "delete", "update", "compact", "compact-deferred",
             "stable-update", "stable-compact", "stable-compact-deferred", "optimize",
             "compact-deferred-optimize", "swap")
#: kinds whose decoded content answers exactly (RTREE: candidates the reader rechecks)
EXACT_KINDS = frozenset(KINDS[:KINDS.index("JSON") + 1])
#: Vector kinds that store the vectors themselves: searched with every partition probed they
#: answer exactly.
EXACT_VECTOR_KINDS = frozenset({"IVF_FLAT"})


def nearest_agrees(kind: str, got: list, want: list, query: dict) -> bool:
    """Whether an index's k nearest rows (``got``) answer like the exact ones (``want``).

    IVF_FLAT with every partition probed must give the same rows. The other kinds are
    approximate (their distances come from codes or a graph walk), so the census asks what
    every correct index of them gives: the row whose own vector is the query (distance 0)
    among the answer, when that row is live. An index whose rows are other rows' (the
    ``swap``) fails it."""
    if kind in EXACT_VECTOR_KINDS:
        return sorted(got) == sorted(want)
    if query.get("present", True) and query.get("of") is not None:
        return query["of"] in got
    return True


def corpus_root() -> Path:
    return cache_root() / "census" / "indexes"


@dataclass
class Case:
    """One built (or skipped) case of the index corpus."""

    path: Path  # the case folder
    data: dict = field(repr=False)

    @property
    def kind(self) -> str:
        return self.data["kind"]

    @property
    def scenario(self) -> str:
        return self.data["scenario"]

    @property
    def release(self) -> str:
        return self.data["release"]

    @property
    def status(self) -> str:
        return self.data.get("status", "?")

    @property
    def table(self) -> Path:
        return self.path / "table"

    @property
    def queries(self) -> list[dict]:
        return self.data.get("queries", [])

    @property
    def expected(self) -> str:
        return self.data.get("expected", "right")

    @property
    def exact(self) -> bool:
        return self.kind in EXACT_KINDS

    def release_disagreements(self) -> list[dict]:
        """The queries whose indexed answer differs from the release's scan (or, where the
        release has no scan, from the rows of the data); nearest-neighbour answers as
        :func:`nearest_agrees` says. A query the release fails through its index (an error,
        a crash) while its scan answers it is one too: an index its own release cannot
        query answers no user right (pylance 4.0.2 aborts, and 14.0.2 refuses, a nearest
        search through an IVF_HNSW index under a deferred remap that dropped rows)."""
        out = []
        for q in self.queries:
            got = q.get("indexed", {}).get("ids")
            scan = q.get("scan", {}).get("ids")
            want = scan if scan is not None else q.get("data")
            if got is None and "error" in q.get("indexed", {}) and scan is not None:
                out.append(q)
                continue
            if got is None or want is None:
                continue
            if q["kind"] == "nearest":
                if not nearest_agrees(self.kind, got, want, q):
                    out.append(q)
            elif sorted(got) != sorted(want):
                out.append(q)
        return out

    @property
    def release_agrees(self) -> bool:
        return not self.release_disagreements()

    @property
    def reread(self) -> dict | None:
        """The answers of :data:`REREADER` to the same queries on this table (built only for
        a case its own release answers wrong), or None."""
        path = self.path / reread_name(REREADER)
        try:
            return json.loads(path.read_text())
        except (OSError, ValueError):
            return None

    def rereader_answers_right(self) -> bool:
        """Whether :data:`REREADER`, reading this table's index files, answers right every
        query its own release answered wrong (or failed), through the index (its plan names it): then
        the index is true to its data and the release misreads it. Filters and full-text
        queries only (see below)."""
        again = self.reread
        if not again or again.get("error") or not again.get("queries"):
            return False
        by_text = {q["query"]: q for q in again["queries"]}
        if any(q["kind"] == "nearest" and "ids" in q.get("indexed", {})
               and by_text.get(q["query"], {}).get("ann") is not True
               for q in self.release_disagreements()):
            # a plan's words do not tell an ANN search from a flat one in every release, so
            # a right nearest answer shows that the index was read only where the
            # rereader's plan names an ANN stage (``ann``, recorded since IVF_RQ joined the
            # census). (A nearest query the release failed through its index is judged like
            # the rest: its failure is the release's reading, and the newest release's answer
            # through the same files shows what they hold: pylance 4.0.2 fails an IVF_PQ
            # search under a deferred remap that 14.0.2 answers)
            return False
        other = Case(self.path, dict(self.data, queries=again["queries"]))
        if other.release_disagreements():
            return False
        for q in self.release_disagreements():
            mine = by_text.get(q["query"])
            if mine is None or "ids" not in mine.get("indexed", {}):
                return False
            if q["kind"] != "fts" and mine.get("used_index") is not True:
                return False
        return True


def program_kinds(python: str, timeout: float = 300) -> dict:
    done = subprocess.run([python, str(PROGRAM), "kinds"], capture_output=True, text=True,
                          timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"the index program failed: {done.stderr.strip()[-400:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def build(release: Release | str, out: Path | None = None, *, kinds=None, scenarios=None,
          force: bool = False, python: str | None = None, timeout: float = 1800,
          progress=None, reread: bool = True) -> Path:
    """Build the index corpus of ``release`` into ``out`` (default: the kit's cache). A case
    already built by the same program is kept unless ``force``. Then (``reread``)
    :data:`REREADER` answers the queries of every case the release answers wrong through
    its index (:func:`reread_wrong`). Returns the folder."""
    if isinstance(release, str):
        release = Release.parse(release)
    out = Path(out) if out is not None else corpus_root() / release.slug
    out.mkdir(parents=True, exist_ok=True)
    py = python or str(ensure_venv(release))
    program = program_of(release)
    digest = _digest(program)
    for kind in kinds or KINDS:
        wanted = [s for s in (scenarios or SCENARIOS)
                  if force or not _is_current(out / kind / s, digest)]
        if not wanted:
            continue
        started = time.monotonic()
        try:
            done = subprocess.run([py, str(program), "build", str(out), kind, ",".join(wanted)],
                                  capture_output=True, text=True, timeout=timeout)
            failure = None if done.returncode == 0 else \
                f"exit {done.returncode}: {done.stderr.strip()[-600:]}"
        except subprocess.TimeoutExpired:
            failure = f"timed out after {timeout:.0f} s"
        for s in wanted:
            case_dir = out / kind / s
            case_json = case_dir / "case.json"
            if not case_json.is_file():
                _write_case(case_dir, {"release": release.name, "kind": kind, "scenario": s,
                                       "status": "crashed", "why": failure or "no case.json"})
                continue
            data = json.loads(case_json.read_text())
            if data.get("status") == "started":
                data.update(status="crashed", why=failure or "the program stopped here")
                _write_case(case_dir, data)
            elif data.get("status") == "to-swap":
                _swap(py, case_dir, data, timeout, program)
            _stamp(case_dir, digest)
        if progress:
            progress(release.name, kind, time.monotonic() - started)
    if reread and release.name != REREADER:
        reread_wrong(out, timeout=timeout, progress=progress)
    return out


def reread_name(release: str) -> str:
    return f"reread-{Release.parse(release).slug}.json"


def reread_wrong(out: Path, *, reader: str = REREADER, timeout: float = 600,
                 progress=None) -> int:
    """Have ``reader`` answer the queries of every built case of ``out`` whose release
    answers other than its scan through its index (``reread-<reader>.json`` beside
    ``case.json``; once per case). Returns how many cases it read."""
    done_count = 0
    py = None
    for case in load(out):
        if case.status != "built" or case.expected == "wrong" or case.release == reader:
            continue
        if case.release_agrees or (case.path / reread_name(reader)).is_file():
            continue
        py = py or str(ensure_venv(Release.parse(reader)))
        target = case.path / reread_name(reader)
        try:
            done = subprocess.run([py, str(PROGRAM), "reread", str(case.path), str(target)],
                                  capture_output=True, text=True, timeout=timeout)
            failure = None if done.returncode == 0 else \
                f"exit {done.returncode}: {done.stderr.strip()[-400:]}"
        except subprocess.TimeoutExpired:
            failure = f"timed out after {timeout:.0f} s"
        if failure and not target.is_file():
            target.write_text(json.dumps({"release": reader, "error": failure}))
        done_count += 1
        if progress:
            progress(case.release, f"{case.kind}/{case.scenario} re-read by {reader}", 0)
    return done_count


def _swap(py: str, case_dir: Path, data: dict, timeout: float,
          program: Path = PROGRAM) -> None:
    from conformance.census.index_files import copy_index_files

    try:
        copied = copy_index_files(case_dir / "reversed", case_dir / "table")
    except Exception as e:  # noqa: BLE001 - recorded as the case's outcome
        data.update(status="skipped", why=f"the swap failed: {type(e).__name__}: {e}")
        _write_case(case_dir, data)
        return
    for leftover in ("reversed", "reversed.lance"):  # (lancedb: a link and its table)
        path = case_dir / leftover
        if path.is_symlink():
            path.unlink()
        else:
            shutil.rmtree(path, ignore_errors=True)
    data["swapped"] = copied
    data["operations"].append(
        f"the index files of reversed/ copied over table/'s ({len(copied)} files; "
        f"{sum(c['manifest_rewritten'] for c in copied)} recorded sizes rewritten in the "
        f"manifest)")
    _write_case(case_dir, data)
    done = subprocess.run([py, str(program), "ask", str(case_dir)], capture_output=True,
                          text=True, timeout=timeout)
    if done.returncode != 0:
        data.update(status="crashed", why=f"asking crashed: {done.stderr.strip()[-400:]}")
        _write_case(case_dir, data)


def _write_case(case_dir: Path, data: dict) -> None:
    case_dir.mkdir(parents=True, exist_ok=True)
    (case_dir / "case.json").write_text(json.dumps(data, indent=1, default=str))


def _digest(program: Path = PROGRAM) -> str:
    import hashlib

    digest = hashlib.sha256(PROGRAM.read_bytes())
    if program != PROGRAM:
        digest.update(program.read_bytes())
    return digest.hexdigest()[:16]


def _stamp(case_dir: Path, digest: str) -> None:
    if case_dir.is_dir():
        (case_dir / "program.digest").write_text(digest)


def _is_current(case_dir: Path, digest: str) -> bool:
    stamp = case_dir / "program.digest"
    return stamp.is_file() and stamp.read_text() == digest and (case_dir / "case.json").is_file()


def load(folder: Path) -> list[Case]:
    """The cases of a built corpus folder, in the order of :data:`KINDS` and
    :data:`SCENARIOS`."""
    folder = Path(folder)
    cases = []
    for p in folder.glob("*/*/case.json"):
        try:
            cases.append(Case(p.parent, json.loads(p.read_text())))
        except (OSError, ValueError):
            continue

    def order(c: Case):
        k = KINDS.index(c.kind) if c.kind in KINDS else len(KINDS)
        s = SCENARIOS.index(c.scenario) if c.scenario in SCENARIOS else len(SCENARIOS)
        return (k, s, c.kind, c.scenario)

    return sorted(cases, key=order)


def describe(folder: Path) -> str:
    """A Markdown description of a built corpus: table path -> kind, operations, expected,
    and the release's answers with and without the index."""
    cases = load(folder)
    lines = [f"## {folder}", ""]
    if not cases:
        return "\n".join(lines + ["(no case)", ""])
    lines.append(f"Release: {cases[0].release}. {sum(c.status == 'built' for c in cases)} "
                 f"tables built, {sum(c.status != 'built' for c in cases)} not "
                 f"(skipped: the release lacks the kind or operation).")
    lines.append("")
    lines.append("| table | kind (column) | scenario | storage | index expected | release: "
                 "indexed = scan? | operations |")
    lines.append("|---|---|---|---|---|---|---|")
    for c in cases:
        rel = c.table.relative_to(folder)
        if c.status != "built":
            lines.append(f"| {rel} | {c.kind} | {c.scenario} | | {c.status} | | "
                         f"{_cell(c.data.get('why', ''))} |")
            continue
        bad = c.release_disagreements()
        storage = c.data.get("table", {}).get("data_storage_version", "?")
        agree = "yes" if not bad else "NO: " + "; ".join(
            f"{disagreement_text(q)}: {_short(q['indexed'].get('ids'))} vs "
            f"{_short(q.get('scan', {}).get('ids') or q.get('data'))}" for q in bad[:2])
        lines.append(f"| {rel} | {c.kind} ({c.data.get('column')}) | {c.scenario} | {storage} "
                     f"| {c.expected} | {_cell(agree)} | {_cell('; '.join(c.data['operations']))} |")
    lines.append("")
    return "\n".join(lines)


def disagreement_text(q: dict) -> str:
    """A query the release answers through its index other than its scan, in a few words:
    the query, and the error where the release failed it."""
    error = q.get("indexed", {}).get("error")
    if error is None or q.get("indexed", {}).get("ids") is not None:
        return q["query"]
    return f"{q['query']} (fails through the index: {str(error)[:120]})"


def _short(ids) -> str:
    if ids is None:
        return "-"
    return "[" + ", ".join(map(str, ids[:5])) + (", ..." if len(ids) > 5 else "") + \
        f"] ({len(ids)})"


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")[:300]


def main(argv=None) -> int:
    """``python -m conformance.census.indexes build RELEASE OUT [KIND,...]`` / ``describe OUT``."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if len(argv) >= 3 and argv[0] == "build":
        kinds = argv[3].split(",") if len(argv) > 3 else None
        out = build(argv[1], Path(argv[2]), kinds=kinds,
                    progress=lambda r, k, s: print(f"{r} {k}: {s:.0f} s", flush=True))
        print(describe(out))
        return 0
    if len(argv) == 2 and argv[0] == "describe":
        print(describe(Path(argv[1])))
        return 0
    print(main.__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
