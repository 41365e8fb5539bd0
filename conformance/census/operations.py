"""The census of operations: every public operation of pylance (and lancedb) that commits,
at every storage version, with the release's outcome and the kit's.

The operations run as the ``census-*`` scenarios of the cross-release corpus
(``conformance/releases/release_census.py``): one step per operation, and each step records
the table version it made. This module reads those scenarios from a built corpus, judges
them as the corpus judge does (:func:`conformance.releases.corpus.judge_scenario`:
``validate --deep`` of every version, the reference reader's rows against the release's
own reading) and gives one :class:`Cell` per operation x storage version x release:

* the release's outcome: ``ok`` (done, and the release reads the version back), ``unread``
  (done, but the release cannot read what it made), ``no API`` (the release lacks the
  operation: recorded, not skipped), ``fails`` (the release has it and refuses or crashes at
  that storage version), ``n/a`` (nothing for it to act on at that storage version: no
  column indices in legacy files, no struct column where 2.0 refuses nullable structs);
* ours, on the version the step made: ``same`` (read identically, no error finding),
  ``refuses RULE`` (a typed refusal with its rule id, where the release refuses too),
  ``misread``, ``false error RULE``, ``unreadable`` (the kit fails where the release reads).

:data:`OPERATIONS` is the catalogue: what each operation id calls. It must list exactly the
ids the scenarios run (``conformance/suite/releases/test_census.py`` checks it).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

#: operation id -> (what pylance calls, what lancedb calls or "")
OPERATIONS: dict[str, tuple[str, str]] = {
    "create": ("write_dataset(mode='create', max_rows_per_file=...)", "db.create_table"),
    "append": ("write_dataset(mode='append')", "Table.add"),
    "append_with_properties": ("write_dataset(mode='append', commit_message=..., "
                               "transaction_properties={...})", ""),
    "insert": ("LanceDataset.insert", ""),
    "delete": ("LanceDataset.delete(predicate)", "Table.delete"),
    "delete_fragment": ("LanceDataset.delete removing whole fragments", ""),
    "update": ("LanceDataset.update(values, where=...)", "Table.update(where, values)"),
    "update_all": ("LanceDataset.update(values) on every row", "Table.update(values_sql=...)"),
    "merge_insert_upsert": ("merge_insert: when_matched_update_all + when_not_matched_insert_all",
                            "Table.merge_insert (same clauses)"),
    "merge_insert_update_if": ("merge_insert: when_matched_update_all(condition=...)",
                               "when_matched_update_all(where=...)"),
    "merge_insert_insert_only": ("merge_insert: when_not_matched_insert_all only",
                                 "Table.merge_insert (same clause)"),
    "merge_insert_delete_matched": ("merge_insert: when_matched_delete", ""),
    "merge_insert_delete_by_source": ("merge_insert: when_not_matched_by_source_delete(expr)",
                                      "Table.merge_insert (same clauses)"),
    "merge_insert_fail": ("merge_insert: when_matched_fail + when_not_matched_insert_all", ""),
    "merge_insert_partial": ("merge_insert with a subset of the columns", ""),
    "commit_delete": ("LanceFragment.delete + LanceOperation.Delete", ""),
    "commit_append": ("write_fragments + LanceOperation.Append", ""),
    "truncate": ("LanceDataset.truncate_table", ""),
    "overwrite": ("write_dataset(mode='overwrite')", ""),
    "commit_overwrite": ("write_fragments + LanceOperation.Overwrite", ""),
    "data_replacement_fragment": ("LanceFragment.create + LanceOperation.DataReplacement", ""),
    "project": ("LanceOperation.Project (a column dropped)", ""),
    "add_columns_sql": ("LanceDataset.add_columns({name: SQL})", "Table.add_columns(dict)"),
    "add_columns_udf": ("LanceDataset.add_columns(batch_udf)", ""),
    "add_columns_null": ("LanceDataset.add_columns(pa.field): all-null, no data file",
                         "Table.add_columns(pa.field)"),
    "data_replacement": ("LanceFileWriter file + DataReplacement(DataFile(fields=[n], "
                         "column_indices=[0]))", ""),
    "alter_rename": ("alter_columns({path, name})", "alter_columns({path, rename})"),
    "alter_cast": ("alter_columns({path, data_type})", "alter_columns({path, data_type})"),
    "alter_nullable": ("alter_columns({path, nullable: True})", "alter_columns (same)"),
    "alter_nested_rename": ("alter_columns({path: 'st.y', name})", ""),
    "merge": ("LanceDataset.merge(table, on)", "Table.merge (needs pylance)"),
    "commit_merge": ("LanceFragment.merge_columns + LanceOperation.Merge", ""),
    "commit_update_columns": ("LanceFragment.update_columns + LanceOperation.Update", ""),
    "drop_columns": ("LanceDataset.drop_columns", "Table.drop_columns"),
    "schema_metadata": ("replace_schema_metadata", ""),
    "field_metadata": ("replace_field_metadata", "Table.replace_field_metadata"),
    "table_metadata": ("update_metadata", ""),
    "config": ("update_config", ""),
    "delete_config_keys": ("delete_config_keys", ""),
    "commit_update_config": ("LanceOperation.UpdateConfig(UpdateMap)", ""),
    "data_overlay": ("LanceFileWriter file + LanceOperation.DataOverlay", ""),
    "scalar_index": ("create_scalar_index(BTREE)", "Table.create_scalar_index"),
    "vector_index": ("create_index(IVF_PQ)", "Table.create_index"),
    "compact": ("optimize.compact_files (Rewrite, index remap)", "Table.compact_files"),
    "optimize_indices": ("optimize.optimize_indices", ""),
    "drop_index": ("LanceDataset.drop_index", ""),
    "tag_create": ("tags.create", "Table.tags.create"),
    "tag_update": ("tags.update", "Table.tags.update"),
    "tag_delete": ("tags.delete", "Table.tags.delete"),
    "restore": ("dataset(version=N).restore()", "Table.checkout + restore"),
    "commit_restore": ("LanceOperation.Restore", ""),
    "reserve_fragments": ("LanceOperation.ReserveFragments (no Python API in any release)", ""),
    "migrate_manifest_paths_v2": ("migrate_manifest_paths_v2", "migrate_v2_manifest_paths"),
    "cleanup_old_versions": ("cleanup_old_versions(older_than=0)", ""),
    "index_btree": ("create_scalar_index(BTREE)", ""),
    "index_bitmap": ("create_scalar_index(BITMAP)", "create_scalar_index(index_type=BITMAP)"),
    "index_label_list": ("create_scalar_index(LABEL_LIST)", ""),
    "index_ngram": ("create_scalar_index(NGRAM)", ""),
    "index_zonemap": ("create_scalar_index(ZONEMAP)", ""),
    "index_bloomfilter": ("create_scalar_index(BLOOMFILTER)", ""),
    "index_inverted": ("create_scalar_index(INVERTED)", ""),
    "index_ivf_flat": ("create_index(IVF_FLAT)", ""),
    "index_ivf_pq": ("create_index(IVF_PQ)", ""),
    "index_ivf_sq": ("create_index(IVF_SQ)", ""),
    "index_ivf_hnsw_pq": ("create_index(IVF_HNSW_PQ)", ""),
    "index_ivf_hnsw_sq": ("create_index(IVF_HNSW_SQ)", ""),
    "index_ivf_rq": ("create_index(IVF_RQ)", ""),
    "index_insert": ("append to a table with every index kind", ""),
    "index_optimize": ("optimize_indices over every index kind", ""),
    "index_compact": ("compact_files over every index kind (index remap)", ""),
    "create_branch": ("create_branch", ""),
    "branch_append": ("write_dataset(branch dataset, mode='append')", ""),
    "branch_delete": ("delete on a branch", ""),
    "branch_tag": ("tags.create on a branch version", ""),
    "main_after_branch": ("delete on main after branching", ""),
    "shallow_clone": ("shallow_clone (data stays in the source, a base path)", ""),
    "clone_append": ("append to a shallow clone", ""),
    "clone_delete": ("delete in a shallow clone (rows of the source's files)", ""),
    "deep_clone": ("deep_clone", ""),
    "initial_bases": ("write_dataset(initial_bases=[DatasetBasePath], target_bases=...)", ""),
    "add_bases": ("LanceDataset.add_bases", ""),
    "append_to_base": ("write_dataset(mode='append', target_bases=[...])", ""),
    "stable_row_ids": ("write_dataset(enable_stable_row_ids=True)", ""),
    "rowids_update": ("update with stable row ids", ""),
    "rowids_merge_insert": ("merge_insert with stable row ids", ""),
    "rowids_delete": ("delete with stable row ids", ""),
    "rowids_compact": ("compact_files with stable row ids", ""),
    "rowids_index_remap": ("optimize_indices after compaction, stable row ids", ""),
    "blob_write": ("lance-encoding:blob large_binary (blob v1 at 2.0/2.1, v2 at 2.2+)",
                   "blob column in create_table"),
    "blob_append": ("append to a blob column", ""),
    "blob_delete": ("delete rows of a blob table", ""),
    "blob_update": ("update another column of a blob table", ""),
    "blob_compact": ("compact_files of a blob table", ""),
    "blob_external": ("blob v2 external uri (blob_array([Blob(uri=...)]))", ""),
    "json_write": ("a pa.json_() column", ""),
    "json_index": ("create_scalar_index(IndexConfig(index_type='json'))", ""),
    "json_append": ("append JSON rows", ""),
    "json_update": ("update a JSON column", ""),
    "json_delete": ("delete rows of a JSON table", ""),
    "fts_index": ("", "Table.create_fts_index"),
    "optimize": ("", "Table.optimize"),
}

STORAGES = ("legacy", "2.0", "2.1", "2.2", "2.3")
#: a cell's release outcomes where nothing was made to judge
NOT_RUN = ("no API", "fails", "n/a", "not run")


@dataclass
class Cell:
    """One operation at one storage version in one release's census."""

    operation: str
    storage: str
    writer: str
    scenario: str
    release: str        # ok | unread | no API | fails
    ours: str           # same | refuses RULE | misread | false error RULE | unreadable | ""
    detail: str = ""
    #: judged as the corpus judges: read as the release (or the newest release) reads it,
    #: or refused with a rule id where that release refuses it; no false error
    ok: bool = True

    @property
    def agrees(self) -> bool:
        """No false error, no silent difference (nothing to judge where nothing was made)."""
        return self.ok


def scenario_groups() -> dict[str, list[str]]:
    """``group -> [operation ids]`` as the census program runs them (read from
    ``release_census.OPERATIONS`` without importing the program, which imports lance)."""
    import ast

    from conformance.releases.corpus import CENSUS_PROGRAM

    for node in ast.parse(CENSUS_PROGRAM.read_text()).body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "OPERATIONS":
            out: dict[str, list[str]] = {}
            for op, group in ast.literal_eval(node.value):
                out.setdefault(group, []).append(op)
            return out
    raise ValueError(f"{CENSUS_PROGRAM} has no OPERATIONS")


def _group_of(scenario: str) -> str:
    """``census-maintenance-2.1`` -> ``maintenance``; ``census-deep-clone-2.2`` ->
    ``deep-clone``; ``census-lancedb-legacy`` -> ``lancedb``."""
    parts = scenario.split("-")[1:]
    return "-".join(parts[:-1]) if len(parts) > 1 else parts[0]


def census_roots(corpus: Path) -> list[Path]:
    """The census scenarios of one release's corpus (not the upgraded copies)."""
    return sorted(p.parent for p in Path(corpus).glob("census-*/scenario.json"))


def cells_of(folder: Path, verdict=None) -> list[Cell]:
    """The cells of one census scenario; ``verdict`` is its corpus verdict (judged here when
    not given; a scenario that left no table has none)."""
    from conformance.releases import corpus as cx

    info = json.loads((folder / "scenario.json").read_text())
    storage = info.get("storage") or "default"
    if verdict is None and (folder / "table" / "_versions").is_dir():
        verdict = cx.judge_scenario(folder)
    by_version = {}
    table_errors: list[str] = []
    version_errors: dict[str, set[str]] = {}
    if verdict is not None:
        by_version = {str(v.version): v for v in verdict.versions}
        for e in verdict.errors:
            where = e["location"].get("version")
            ref = e["location"].get("ref", "main")
            key = where if ref in ("main", "None", None) else f"{ref.split(':')[-1]}:{where}"
            if where in (None, "None"):
                table_errors.append(e["rule"])
            else:
                version_errors.setdefault(key, set()).add(e["rule"])
    unread = {str(k) for k in info.get("unreadable_versions", {})}
    unread |= {str(k) for k in info.get("unreadable_branch_versions", {})}
    out = []
    for step in info.get("steps", []):
        op = step.get("op")
        if op is None or op not in OPERATIONS:
            continue  # (a clone's source_* steps set its source up)
        outcome = step["outcome"]
        if outcome == "not-applicable":
            out.append(Cell(op, storage, info["writer"], info["scenario"], "n/a", "",
                            step.get("error", "")[:200]))
            continue
        if outcome == "missing":
            out.append(Cell(op, storage, info["writer"], info["scenario"], "no API", "",
                            step.get("error", "")[:200]))
            continue
        after, before = step.get("version_after"), step.get("version_before")
        if outcome == "failed" and (after is None or after == before):
            out.append(Cell(op, storage, info["writer"], info["scenario"], "fails", "",
                            step.get("error", "")[:200]))
            continue
        key = str(after) if not step.get("branch") else f"{step['branch']}:{after}"
        release = "fails" if outcome == "failed" else "unread" if key in unread else "ok"
        ours, detail, ok = _ours(by_version.get(key), version_errors.get(key, set()) |
                                 set(table_errors), by_version.get(f"plain:{after}"),
                                 (verdict.rules.get(key, []) + verdict.rules.get("None", []))
                                 if verdict is not None else [])
        out.append(Cell(op, storage, info["writer"], info["scenario"], release, ours, detail,
                        ok))
    return out + _not_reached(info, storage, {c.operation for c in out})


def _not_reached(info: dict, storage: str, recorded: set[str]) -> list[Cell]:
    """A cell for each operation of the scenario's group that no step recorded: the scenario
    stopped before it (its table could not be created, or the release lacks what the group
    is about: branches, stable row ids, pyarrow's JSON type). The release's outcome is that
    of the step that stopped it."""
    group = _group_of(info["scenario"])
    if group == "lancedb":
        return []  # lancedb runs the operations it has, under the shared ids
    stop = next((st for st in reversed(info.get("steps", []))
                 if st["outcome"] in ("missing", "failed")), None)
    release = "not run" if stop is None else "fails" if stop["outcome"] == "failed" \
        else "no API"
    why = f"not reached: {stop['step']} {stop['outcome']}: {stop.get('error', '')}"[:200] \
        if stop else "not in the program that built this corpus (rebuild it)"
    return [Cell(op, storage, info["writer"], info["scenario"], release, "", why)
            for op in scenario_groups().get(group, []) if op not in recorded]


def _ours(v, rules: set[str], plain, flagged: list[str] = ()) -> tuple[str, str, bool]:
    """``(ours, detail, ok)`` of the version a step made: its verdict ``v`` (None when the
    judge has none: a version a later step removed, or no table), the rules of the error
    findings on it that are not expected (false errors where it reads), lancedb's
    ``to_arrow()`` verdict and the rules of every error finding on it (a refusal's)."""
    if v is None:
        if rules:
            return "false error " + ",".join(sorted(rules)), "", False
        return "same", "", True
    if v.outcome == "flagged":
        named = list(flagged) or sorted(rules) or [_rule_in(v.detail)]
        return f"refuses {', '.join(r for r in named[:2] if r)}".strip(), v.detail[:200], True
    if v.outcome == "identical":
        if rules:
            return "false error " + ",".join(sorted(rules)), "", False
        if plain is not None and plain.outcome != "identical":
            return "misread", f"lancedb to_arrow(): {plain.detail}"[:200], False
        return "same", v.detail[:200], True
    return v.outcome, v.detail[:200], False


def _rule_in(text: str) -> str:
    import re

    m = re.search(r"\b([A-Z]+-\d{3})\b", text)
    return m.group(1) if m else ""


def collect(corpora: list[Path]) -> list[Cell]:
    """Every cell of the census scenarios of the given corpus folders, judged."""
    out = []
    for corpus in corpora:
        for folder in census_roots(corpus):
            out.extend(cells_of(folder))
    return out


def _short_writer(writer: str) -> str:
    package, _, version = writer.partition("==")
    return version if package == "pylance" else f"lancedb {version}"


HEADER = """# Census of operations

Every public operation of pylance (and lancedb) that commits, at every storage version the
release writes, judged and read as the release reads it (issue 30). Each operation is a step
of a `census-*` scenario of the cross-release corpus (`conformance/releases/release_census.py`,
run in the release's own virtualenv); the step records its outcome and the table version it
made, the release reads every version back, and the kit judges that version as the corpus
judges every root (`validate --deep`, the reference reader's rows against the release's).
An operation a release lacks is recorded (`no API`), not skipped.

Generated by `lance-conformance census operations --releases {releases} --md
docs/census-operations.md` ({summary}).

What each operation calls:

| operation | pylance | lancedb |
|---|---|---|
{catalogue}
"""


def markdown(cells: list[Cell], *, main: str = "pylance==14.0.2", summary: str = "") -> str:
    """The census page: what each operation calls, then two tables: operation x storage
    version for ``main`` (each cell: the release's outcome -> ours), and operation x release
    (storage versions where the kit agrees, of those where the release ran the operation;
    ``-`` where the release has no such API)."""
    ops = list(OPERATIONS)
    writers = sorted({c.writer for c in cells}, key=_writer_order)
    catalogue = "\n".join(f"| `{op}` | {calls[0] or '-'} | {calls[1] or '-'} |"
                          for op, calls in OPERATIONS.items())
    lines = [HEADER.format(releases=",".join(writers), summary=summary or "see below",
                           catalogue=catalogue),
             f"## Operation x storage version ({main})", "",
             "Each cell: the release's outcome -> the kit's, on the version the operation "
             "made. `ok`: done and read back by the release; `unread`: done, but the release "
             "cannot read it; `no API`: the release has no such operation; `fails`: it "
             "refuses or crashes at that storage version; `n/a`: nothing for it to act on "
             "there. `same`: read identically, no error finding; `refuses RULE`: a typed "
             "refusal (where the release refuses too).", ""]
    mine = [c for c in cells if c.writer == main]
    storages = [s for s in STORAGES if any(c.storage == s for c in mine)]
    lines.append("| operation | " + " | ".join(storages) + " |")
    lines.append("|---" * (len(storages) + 1) + "|")
    for op in ops:
        row = []
        for s in storages:
            here = [c for c in mine if c.operation == op and c.storage == s]
            row.append(_cell_text(here))
        if any(row):
            lines.append(f"| `{op}` | " + " | ".join(row) + " |")
    lines += ["", "## Operation x release", "",
              "Storage versions at which the kit reads the operation's result as the release "
              "does (or refuses it with a rule where the release cannot read it), out of those "
              "at which the release ran it; `-`: no such API in that release; `fails`: the "
              "release refuses it wherever it has it; `n/a`: nothing for it to act on.", "",
              "| operation | " + " | ".join(_short_writer(w) for w in writers) + " |",
              "|---" * (len(writers) + 1) + "|"]
    for op in ops:
        row = []
        for w in writers:
            here = [c for c in cells if c.operation == op and c.writer == w]
            ran = [c for c in here if c.release not in NOT_RUN]
            if not here:
                row.append("")
            elif not ran:
                kinds = {c.release for c in here}
                row.append("fails" if "fails" in kinds else "-" if "no API" in kinds
                           else "n/a" if kinds == {"n/a"} else "")
            else:
                stor = {c.storage for c in ran}
                good = {c.storage for c in ran} - {c.storage for c in ran if not c.agrees}
                row.append(f"{len(good)}/{len(stor)}")
        if any(row):
            lines.append(f"| `{op}` | " + " | ".join(row) + " |")
    bad = [c for c in cells if not c.agrees]
    lines += ["", f"Cells where the kit and the release disagree: {len(bad)} of {len(cells)}."]
    for c in bad[:60]:
        lines.append(f"- {c.writer} `{c.operation}` at {c.storage} ({c.scenario}): "
                     f"{c.release} -> {c.ours} {c.detail[:160]}")
    return "\n".join(lines) + "\n"


def _cell_text(here: list[Cell]) -> str:
    if not here:
        return ""
    texts = []
    for c in here:
        t = c.release if not c.ours else f"{c.release} -> {c.ours}"
        if t not in texts:
            texts.append(t)
    return "; ".join(texts)


def _writer_order(name: str):
    from conformance.releases.venvs import Release

    r = Release.parse(name)
    return (r.package != "pylance", r.version_tuple)


def as_json(cells: list[Cell]) -> list[dict]:
    return [dict(asdict(c), agrees=c.agrees) for c in cells]
