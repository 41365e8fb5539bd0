"""The census of indexes: every index kind x scenario x storage version x release, judged.

Each cell is one table of the index corpus (:mod:`conformance.census.indexes`): one index of
one kind, built by one release, after one scenario of operations. The release answered the
census's queries through its index and without it (``case.json``). The kit then

1. validates the table (``validate --deep``): its error findings;
2. decodes every segment of the table's index (:func:`reference_impl.index.read_index`) and
   answers the same queries from what it decoded (:mod:`conformance.census.index_answers`),
   naming the rows where its answer differs from the release's answer without the index.

The *truth* of a cell is whether the release's indexed answers agree with its scan (for an
approximate kind as :func:`conformance.census.indexes.nearest_agrees` says). An error finding
is *known* when the kit's catalogue of release bugs
(:data:`conformance.releases.corpus.EXPECTED_FINDINGS`) lists its rule for the cell's release
and scenario (named ``index-census-<KIND>-<scenario>`` there). The verdict:

* ``agree``: the release answers right and the kit reports no error and its decoded answers
  equal the scan's (a pass);
* for a table built wrong on purpose (the ``swap``), ``caught`` when the kit flags it and
  ``missed`` otherwise, whatever the release's answers to these queries (a zone map of
  reversed rows may still answer them right);
* ``caught``: the release answers wrong and the kit reports an error or its decoded answers
  differ (a pass: the wrong index is flagged);
* ``known bug``: the kit's only flags are known findings of the release (a pass, whether or
  not the census's queries hit the rows the bug loses: pylance 0.38.3's BLOOMFILTER after
  ``optimize_indices`` loses ids the queries do not ask for);
* ``false error``: the release answers right and the kit reports an error that is not
  known, or its decoded answers differ (a failure);
* ``missed``: the release answers wrong and the kit says nothing, and nothing shows the index
  true to its data (a failure);
* ``misread``: the release answers wrong through an index that is true to its data: the
  kit decodes it with no error and answers every query right from it, and the newest release
  (:data:`conformance.census.indexes.REREADER`), reading the same index files, answers the
  queries right through them. A bug of the release's reader that no check of the table can
  flag; neither a pass nor a failure of the kit, and named;
* ``not decoded``: the release answers right, the kit reports no error but cannot decode
  the index (or answer from it) yet -- named, never a pass;
* ``not built``: the release lacks the kind or the operation (its error is the detail).
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

from conformance.census import index_answers as answers
from conformance.census.indexes import Case, disagreement_text, load

PASS = ("agree", "caught", "known bug")
FAIL = ("false error", "missed")


@dataclass
class Cell:
    release: str
    kind: str
    scenario: str
    storage: str
    expected: str
    release_agrees: bool | None
    verdict: str
    detail: str = ""
    errors: list[str] = field(default_factory=list)
    decoded: str = ""  # "yes", or why not
    differing: list[dict] = field(default_factory=list)
    table: str = ""
    known: list[str] = field(default_factory=list)  # the errors that are known release bugs

    @property
    def ok(self) -> bool:
        return self.verdict in PASS

    @property
    def failed(self) -> bool:
        return self.verdict in FAIL


def judge_case(case: Case) -> Cell:
    """The verdict of one case of the index corpus."""
    storage = str(case.data.get("table", {}).get("data_storage_version", ""))
    if not storage and case.status == "built":  # lancedb does not say: the manifest does
        storage = _storage_version(case.table)
    base = dict(release=case.release, kind=case.kind, scenario=case.scenario, storage=storage,
                expected=case.expected, table=str(case.table))
    if case.status != "built":
        return Cell(**base, release_agrees=None, verdict="not built",
                    detail=f"{case.status}: {case.data.get('why', '')}"[:300])
    bad = _release_disagreements(case)
    truth = not bad
    errors = _validate(case.table)
    known_rules = known_findings(case)
    known = [e for e in errors if e.split(":")[0] in known_rules]
    unknown = [e for e in errors if e not in known]
    decoded, differing = _decode_and_answer(case)
    flagged = bool(errors) or bool(differing)
    if case.expected == "wrong":  # built wrong on purpose (the swap): it must be flagged
        verdict = "caught" if flagged else "missed"
    elif unknown or differing:
        verdict = "caught" if not truth else "false error"
    elif known:
        verdict = "known bug"
    elif truth:
        verdict = "agree" if decoded == "yes" else "not decoded"
    elif decoded == "yes" and case.rereader_answers_right():
        verdict = "misread"
    else:
        verdict = "missed"
    parts = []
    if not truth:
        parts.append("the release answers through its index other than its scan: "
                     + "; ".join(disagreement_text(q) for q in bad[:3]))
    if verdict == "misread":
        parts.append(f"{case.reread.get('release')} answers every query right through the "
                     "same index files, and the kit's answers from the decoded index equal "
                     "the scan's")
    if known:
        parts.append("known bug of the release (EXPECTED_FINDINGS): " + "; ".join(known[:3]))
    if unknown:
        parts.append("kit errors: " + "; ".join(unknown[:3]))
    if differing:
        parts.append("decoded index answers other than the scan: " + "; ".join(
            f"{d['query']}: rows {d['only_index'][:5]} only in the index, "
            f"{d['only_scan'][:5]} only in the scan" for d in differing[:2]))
    if decoded != "yes":
        parts.append(f"not decoded: {decoded}")
    return Cell(**base, release_agrees=truth, verdict=verdict, detail=" | ".join(parts)[:900],
                errors=errors, decoded=decoded, differing=differing, known=known)


def _storage_version(table: Path) -> str:
    from reference_impl.dataset import open_dataset
    from reference_impl.errors import LanceError

    try:
        return str(open_dataset(str(table)).data_storage_version)
    except (LanceError, OSError, ValueError):
        return ""


def census_scenario(case: Case) -> str:
    """The name of a cell for :func:`conformance.releases.corpus.expected_findings`."""
    return f"index-census-{case.kind}-{case.scenario}"


def known_findings(case: Case) -> set[str]:
    """The rule ids the kit's catalogue of release bugs expects this cell to draw."""
    from conformance.releases.corpus import expected_findings

    try:
        return set(expected_findings(case.release, census_scenario(case)))
    except ValueError:  # a release name the catalogue cannot parse
        return set()


def _release_disagreements(case: Case) -> list[dict]:
    """The queries the release answers through its index other than its data
    (:meth:`Case.release_disagreements`), less the full-text answers that differ only in rows
    of fragments no index covers: how a release searches unindexed fragments says nothing
    about its index (pylance 0.20.0 returns every row of an unindexed fragment for any
    term)."""
    bad = case.release_disagreements()
    if not any(q["kind"] == "fts" for q in bad):
        return bad
    try:
        unindexed = _unindexed_ids(case.table)
    except Exception:  # noqa: BLE001 - then every disagreement stands
        return bad
    out = []
    for q in bad:
        got, want = set(q["indexed"].get("ids") or []), set(q.get("data") or [])
        if q["kind"] == "fts" and got - unindexed == want - unindexed:
            continue
        out.append(q)
    return out


def _unindexed_ids(table: Path) -> set[int]:
    """The ``id`` of every live row of a fragment no user index covers."""
    from reference_impl.dataset import open_dataset
    from reference_impl.table.index import decode_index_section

    ds = open_dataset(str(table))
    covered = set()
    for i in decode_index_section(ds.index_section):
        if not i.name.startswith("__") and i.fragment_ids is not None:
            covered |= {int(x) for x in i.fragment_ids}
    t = ds.to_table(columns=["id"], with_row_address=True)
    frags = [a >> 32 for a in t.column("_rowaddr").to_pylist()]
    return {i for i, f in zip(t.column("id").to_pylist(), frags, strict=True) if f not in covered}


def _validate(table: Path) -> list[str]:
    from conformance.engine import validate

    try:
        report = validate(str(table), deep=True)
    except Exception as e:  # noqa: BLE001 - an engine failure is the cell's error
        return [f"ENGINE: validate raised {type(e).__name__}: {e}"]
    return [f"{f.rule}: {f.message[:200]}" for f in report.violations]


def _decode_and_answer(case: Case) -> tuple[str, list[dict]]:
    """(``"yes"`` or why the kit could not decode/answer, the queries whose decoded answer
    differs from the release's scan, each naming the rows)."""
    from reference_impl import index as rindex
    from reference_impl.dataset import open_dataset
    from reference_impl.errors import LanceError
    from reference_impl.table.flags import uses_stable_row_ids
    from reference_impl.table.index import decode_index_section

    try:
        ds = open_dataset(str(case.table))
        every = decode_index_section(ds.index_section)
        indices = [i for i in every if not i.name.startswith("__")]
        stable = uses_stable_row_ids(ds.manifest)
        moves, groups = _reuse(ds, every)
        cols = ["id"] + {"vector": ["vec"], "minhash": ["text"]}.get(case.data.get("family"),
                                                                     [])
        table = ds.to_table(columns=cols, with_row_id=True, with_row_address=True)
        rowmap = answers.RowMap(table, stable, moves)
        contents = []
        for i in indices:
            keys = _index_keys(ds, i)
            contents.append((i, rindex.read_index(rindex.IndexFiles(ds.store, keys), i)))
    except (LanceError, answers.CannotAnswer, OSError, ValueError) as e:
        return f"{type(e).__name__}: {str(e)[:200]}", []
    if not contents:
        return "the table lists no user index", []
    covered = set()
    for i, _c in contents:
        if i.fragment_ids is not None:
            mine = {int(x) for x in i.fragment_ids}
            for old, new in groups:  # a deferred remap: the new fragments of a group covered
                if old and old <= mine:
                    mine |= new
            covered |= mine
    differing = []
    for q in case.queries:
        scan = q.get("scan", {}).get("ids")
        if scan is None:
            scan = q.get("data")
        if scan is None:
            continue
        try:
            parsed = answers.parse(q["query"])
            if parsed.op == "minhash":
                if not q.get("present", True):
                    continue
                got = answers.minhash_nearest(contents, parsed, rowmap=rowmap,
                                              covered=covered)
                if answers_differ_nearest(got, scan, case, q):
                    differing.append(_difference(q["query"], got, scan))
                continue
            if parsed.op == "nearest":
                if not q.get("present", True):
                    continue
                got = answers.nearest(_merged(contents), parsed, rowmap=rowmap, covered=covered)
                if answers_differ_nearest(got, scan, case, q):
                    differing.append(_difference(q["query"], got, scan))
                continue
            found = set()
            for _i, content in contents:
                rows, exact = answers.candidates(content, parsed, rowmap=rowmap,
                                                 scan_ids=set(scan))
                found |= rows if exact else (rows & set(scan))
            found |= set(scan) & rowmap.ids_outside(covered)
        except answers.CannotAnswer as e:
            return str(e)[:200], differing
        except (LanceError, ValueError, TypeError) as e:
            return f"{type(e).__name__}: {str(e)[:200]}", differing
        if found != set(scan):
            differing.append(_difference(q["query"], sorted(found), scan))
    return "yes", differing


def answers_differ_nearest(got: list, want: list, case: Case, query: dict) -> bool:
    """The kit's nearest rows from the decoded index differ from the exact ones: for the
    kinds that store vectors (flat storage, HNSW over flat vectors) any difference; for the
    coded kinds (PQ, SQ) as :func:`conformance.census.indexes.nearest_agrees` says."""
    from conformance.census.indexes import nearest_agrees

    if case.kind in ("IVF_FLAT", "IVF_HNSW_FLAT"):
        return sorted(got) != sorted(want)
    return not nearest_agrees(case.kind, got, want, query)


def _merged(contents):
    """One content over every segment of a vector index (their entries concatenated)."""
    import pyarrow as pa

    if len(contents) == 1:
        return contents[0][1]
    first = contents[0][1]
    try:
        entries = pa.concat_tables([c.entries for _i, c in contents], promote_options="default")
    except (pa.ArrowInvalid, TypeError) as e:
        raise answers.CannotAnswer(f"segments do not concatenate: {e}") from None
    if any(c.extra.get("pq") is not None or c.extra.get("sq") is not None
           for _i, c in contents[1:]):
        raise answers.CannotAnswer("segments of a coded vector index (one quantizer each)")
    return type(first)(first.kind, first.version, entries, dict(first.summary),
                       dict(first.extra))


def _difference(query: str, got, scan) -> dict:
    g, s = set(got), set(scan)
    return {"query": query, "index": list(got), "scan": list(scan),
            "only_index": sorted(g - s), "only_scan": sorted(s - g)}


def _reuse(ds, indices) -> tuple[list, list]:
    """``(moves, groups)`` of the version's fragment reuse index (compactions whose index
    remap was deferred): row moves as ``(old, new)`` address arrays sorted by old, oldest
    first, and ``(old fragment ids, new fragment ids)`` per group."""
    import numpy as np

    from reference_impl.table import fragment_reuse

    moves, groups = [], []
    for i in indices:
        if i.kind != "fragment_reuse" or i.details is None or not i.details.known:
            continue
        versions = fragment_reuse.decode_versions(i.details.message, store=ds.store)
        for v in sorted(versions, key=lambda v: v.dataset_version):
            for g in v.groups:
                old, new = fragment_reuse.group_mapping(g)
                order = np.argsort(old, kind="stable")
                moves.append((old[order], new[order]))
                groups.append(({d.id for d in g.old_fragments}, {d.id for d in g.new_fragments}))
    return moves, groups


def _index_keys(ds, i) -> dict[str, str]:
    """File name in the index directory -> key, from the manifest's list or a listing."""
    prefix = f"_indices/{i.uuid}/"
    if i.files:
        return {f.path: prefix + f.path for f in i.files}
    return {info.key[len(prefix):]: info.key for info in ds.store.list(prefix)}


def judge(folders: list[Path], progress=None, jobs: int = 1, *, kinds=None,
          scenarios=None) -> list[Cell]:
    """Every case of the corpus folders (of ``kinds`` and ``scenarios`` when given), judged in
    order. ``jobs`` above 1 judges them in that many processes (the same cells in the same
    order; a machine shared with other work gives each process its share)."""
    cases = [case for folder in folders for case in load(folder)
             if (kinds is None or case.kind in kinds)
             and (scenarios is None or case.scenario in scenarios)]
    if jobs <= 1:
        cells = []
        for case in cases:
            cells.append(judge_case(case))
            if progress:
                progress(cells[-1])
        return cells
    from concurrent.futures import ProcessPoolExecutor

    cells = []
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        for cell in pool.map(judge_case, cases, chunksize=4):
            cells.append(cell)
            if progress:
                progress(cell)
    return cells


# -- the report ------------------------------------------------------------------------------------


SHORT = {"agree": "ok", "caught": "caught", "known bug": "caught (known bug)",
         "false error": "FALSE ERROR", "missed": "MISSED", "misread": "misread",
         "not decoded": "not decoded", "not built": "-"}


def markdown(cells: list[Cell], *, command: str, summary: str) -> str:
    from conformance.census.indexes import KINDS, SCENARIOS

    lines = [
        "# Census of indexes",
        "",
        f"Generated by `{command}` ({summary}). Do not edit by hand.",
        "",
        "Each cell is one table: one index of the kind built by the release, then the "
        "scenario's operations (`conformance/census/index_program.py`). The release answers "
        "the census's queries through the index and without it; the kit validates the table "
        "(`validate --deep`) and answers the same queries from the index it decodes. A "
        "query the release fails through its index (an error, an abort) while its scan "
        "answers it counts as a wrong answer. "
        "`ok`: the release answers right and so does the kit, with no error; `caught`: "
        "the release answers wrong (the `swap` scenario builds such an index on purpose) and "
        "the kit flags it; `caught (known bug)`: the kit's only findings are ones its "
        "catalogue of release bugs (`EXPECTED_FINDINGS` in "
        "`conformance/releases/corpus.py`) lists for this release and scenario, whether or "
        "not the census's queries hit the rows the bug loses; `FALSE ERROR`: the release "
        "answers right and the kit reports a finding that is not a known bug, or answers "
        "other than the scan from the decoded index; `MISSED`: the release answers wrong and "
        "the kit finds nothing; `misread`: the release answers wrong through an index that "
        "is true to its data -- the kit decodes it with no finding and answers every query "
        "right from it, and the newest release (pylance 14.0.2) answers the same queries "
        "right through the same index files -- a bug of the release's reader that no check "
        "of the table can flag (neither a pass nor a failure of the kit); `not decoded`: the "
        "kit cannot decode or answer from this index yet (never a pass); `-`: the release "
        "lacks the kind or operation.",
        "",
    ]
    releases = sorted({c.release for c in cells}, key=_release_order)
    for rel in releases:
        mine = [c for c in cells if c.release == rel]
        counts = {}
        for c in mine:
            counts[c.verdict] = counts.get(c.verdict, 0) + 1
        storages = sorted({c.storage for c in mine if c.storage})
        lines += [f"## {rel}", "",
                  f"Storage version: {', '.join(storages) or '-'}. "
                  + ", ".join(f"{v}: {n}" for v, n in sorted(counts.items())), ""]
        scen = [s for s in SCENARIOS if any(c.scenario == s for c in mine)]
        lines.append("| kind | " + " | ".join(scen) + " |")
        lines.append("|---|" + "---|" * len(scen))
        for k in KINDS:
            row = [c for c in mine if c.kind == k]
            if not row:
                continue
            by = {c.scenario: c for c in row}
            lines.append(f"| {k} | " + " | ".join(
                SHORT.get(by[s].verdict, by[s].verdict) if s in by else "" for s in scen) + " |")
        lines.append("")
        notes = [c for c in mine if c.verdict not in ("agree", "caught")]
        if notes:
            lines += ["Cells that are not a pass:", ""]
            for c in notes:
                lines.append(f"- {c.kind} / {c.scenario}: **{c.verdict}** -- "
                             f"{c.detail[:300].replace('|', '/')}")
            lines.append("")
    return "\n".join(lines)


def _release_order(name: str):
    import re

    pkg, _, ver = name.partition("==")
    return (pkg != "pylance", tuple(int(x) for x in re.findall(r"\d+", ver)[:3]))


def as_json(cells: list[Cell]) -> list[dict]:
    return [asdict(c) for c in cells]


def load_note() -> str:
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return f"load {load:.1f}"


__all__ = ["Cell", "FAIL", "PASS", "as_json", "judge", "judge_case", "markdown"]
_ = json
