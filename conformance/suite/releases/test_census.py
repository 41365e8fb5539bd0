"""The census of operations (issue 30): every committing operation of pylance and lancedb, at
every storage version, as scenarios of the cross-release corpus; one cell per operation x
storage version x release with the release's outcome and the kit's.

The default run checks the machinery (the catalogue against the scenarios, how a step
becomes a cell, lancedb's blob row ids, the command's refusal to report nothing); the
``compat`` tests build the CI subset and require every cell to agree.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pyarrow as pa
import pytest

from conformance.census import operations
from conformance.cli import main
from conformance.releases import corpus
from conformance.releases.corpus import RootVerdict, VersionVerdict
from conformance.releases.venvs import Release, ReleaseUnavailable
from conformance.suite.parts import unavailable

PROGRAM = Path(corpus.__file__).with_name("release_census.py")


def _program_operations() -> list[tuple[str, str]]:
    """``release_census.OPERATIONS``, read without importing the program (it imports lance)."""
    tree = ast.parse(PROGRAM.read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "OPERATIONS":
            return ast.literal_eval(node.value)
    raise AssertionError("release_census.py has no OPERATIONS")


def test_the_catalogue_lists_exactly_the_operations_the_scenarios_run():
    ops = _program_operations()
    assert len({op for op, _group in ops}) == len(ops)
    assert [op for op, _g in ops] == list(operations.OPERATIONS)
    # every operation the issue names is there
    for op in ("merge_insert_upsert", "merge_insert_update_if", "merge_insert_delete_by_source",
               "update", "delete", "add_columns_sql", "add_columns_udf", "add_columns_null",
               "alter_rename", "alter_cast", "alter_nullable", "drop_columns",
               "data_replacement", "commit_merge", "compact", "restore", "commit_restore",
               "commit_update_config", "project", "reserve_fragments", "index_btree",
               "index_ivf_pq", "optimize_indices", "cleanup_old_versions", "tag_create",
               "create_branch", "shallow_clone", "add_bases", "stable_row_ids",
               "rowids_update", "json_write", "blob_write", "blob_external"):
        assert op in operations.OPERATIONS, op
    # every step the program records names an operation of the catalogue
    source = PROGRAM.read_text()
    for call in ast.walk(ast.parse(source)):
        if isinstance(call, ast.Call) and getattr(call.func, "attr", "") in (
                "op", "lacks", "not_applicable") and call.args and \
                isinstance(call.args[0], ast.Constant) and \
                not call.args[0].value.startswith("source_"):
            assert call.args[0].value in operations.OPERATIONS, call.args[0].value


def _scenario(tmp_path: Path, steps: list[dict], **info) -> Path:
    folder = tmp_path / "census-rows-2.1"
    folder.mkdir()
    (folder / "scenario.json").write_text(json.dumps(dict({
        "writer": "pylance==14.0.2", "scenario": folder.name, "storage": "2.1",
        "steps": steps, "versions": [1, 2, 3], "unreadable_versions": {}}, **info)))
    return folder


def _verdict(*versions, errors=()) -> RootVerdict:
    v = RootVerdict(writer="pylance==14.0.2", scenario="census-rows-2.1")
    v.versions = list(versions)
    v.errors = list(errors)
    return v


def test_each_step_becomes_a_cell_judged_on_the_version_it_made(tmp_path):
    folder = _scenario(tmp_path, [
        {"step": "create", "op": "create", "outcome": "done", "version_before": None,
         "version_after": 1},
        {"step": "insert", "op": "insert", "outcome": "missing", "error": "no insert"},
        {"step": "truncate", "op": "truncate", "outcome": "failed", "error": "boom",
         "version_before": 1, "version_after": 1},
        {"step": "data_replacement", "op": "data_replacement", "outcome": "not-applicable",
         "error": "legacy"},
        {"step": "update", "op": "update", "outcome": "done", "version_before": 1,
         "version_after": 2},
        {"step": "data_overlay", "op": "data_overlay", "outcome": "done", "version_before": 2,
         "version_after": 3},
    ], unreadable_versions={"3": "Flags: 64"})
    verdict = _verdict(VersionVerdict(1, "identical"), VersionVerdict(2, "misread", "row 1"),
                       VersionVerdict(3, "flagged", "Flags: 64"),
                       errors=[{"rule": "FLAGS-001", "message": "m",
                                "location": {"version": "3", "ref": "main"}}])
    cells = {c.operation: c for c in operations.cells_of(folder, verdict)}
    assert (cells["create"].release, cells["create"].ours, cells["create"].agrees) == \
        ("ok", "same", True)
    assert (cells["insert"].release, cells["insert"].agrees) == ("no API", True)
    assert (cells["truncate"].release, cells["truncate"].agrees) == ("fails", True)
    assert cells["data_replacement"].release == "n/a"
    assert (cells["update"].ours, cells["update"].agrees) == ("misread", False)
    assert (cells["data_overlay"].release, cells["data_overlay"].ours,
            cells["data_overlay"].agrees) == ("unread", "refuses FLAGS-001", True)


def test_a_false_error_on_the_version_a_step_made_is_a_disagreement(tmp_path):
    folder = _scenario(tmp_path, [{"step": "update", "op": "update", "outcome": "done",
                                   "version_before": 1, "version_after": 2}])
    verdict = _verdict(VersionVerdict(2, "identical"), errors=[
        {"rule": "DATAFILE-008", "message": "m", "location": {"version": "2", "ref": "main"}}])
    cells = operations.cells_of(folder, verdict)
    (cell,) = [c for c in cells if c.operation == "update"]
    assert (cell.ours, cell.agrees) == ("false error DATAFILE-008", False)
    # the group's other operations are there too, as not run
    rest = [c for c in cells if c.operation != "update"]
    assert {c.operation for c in rest} == set(operations.scenario_groups()["rows"]) - {"update"}
    assert all(c.release == "not run" and c.agrees for c in rest)  # (an older program)


def test_the_markdown_has_both_tables(tmp_path):
    cells = [operations.Cell("create", "2.1", "pylance==14.0.2", "census-rows-2.1", "ok", "same"),
             operations.Cell("insert", "2.1", "pylance==0.10.18", "census-rows-2.1", "no API",
                             ""),
             operations.Cell("update", "2.1", "pylance==14.0.2", "census-rows-2.1", "ok",
                             "misread", "row 1", ok=False)]
    text = operations.markdown(cells)
    assert "| `create` | ok -> same |" in text
    assert "| `insert` |  | - |" in text or "| `insert` | - |" in text.replace("  ", " ")
    assert "disagree: 1 of 3" in text and "row 1" in text


def test_lancedb_blob_row_ids_are_checked_then_set_aside():
    st = pa.struct([pa.field("kind", pa.uint8(), False), pa.field("_lance_row_id", pa.uint64(),
                                                                  False)])
    want = pa.table({"b": pa.array([{"kind": 0, "_lance_row_id": 5}, None,
                                    {"kind": 0, "_lance_row_id": 7}], st)})
    got = pa.table({"b": pa.array([{"kind": 0}, None, {"kind": 0}],
                                  pa.struct([pa.field("kind", pa.uint8(), False)])),
                    "_rowid": pa.array([5, 6, 7], pa.uint64())})
    w, g, problem = corpus.lancedb_blob_row_ids(want, got)
    assert problem == "" and corpus.table_difference(w, g) == ""
    bad = got.set_column(1, "_rowid", pa.array([5, 6, 8], pa.uint64()))
    assert "differ" in corpus.lancedb_blob_row_ids(want, bad)[2]
    assert "row ids" in corpus.lancedb_blob_row_ids(want, got.drop_columns(["_rowid"]))[2]
    # a version of no rows (lancedb's create_table with a schema) has no row id to differ
    w, g, problem = corpus.lancedb_blob_row_ids(want.slice(0, 0), got.slice(0, 0))
    assert problem == "" and corpus.table_difference(w, g) == ""


def test_lancedb_blob_row_ids_in_a_struct_are_checked_then_set_aside():
    """lancedb 0.38.0 adds the child to a blob v2 column nested in a struct too; under a null
    parent row its value is not judged."""
    st = pa.struct([pa.field("kind", pa.uint8(), False), pa.field("_lance_row_id", pa.uint64(),
                                                                  False)])
    info = pa.struct([pa.field("name", pa.utf8()), pa.field("blob", st)])
    inner = pa.StructArray.from_arrays(
        [pa.array([0, 0, 0], pa.uint8()), pa.array([5, 99, 7], pa.uint64())], fields=list(st))
    outer = pa.StructArray.from_arrays([pa.array(["a", None, "c"]), inner], fields=list(info),
                                       mask=pa.array([False, True, False]))
    want = pa.table({"info": outer})
    plain_st = pa.struct([pa.field("kind", pa.uint8(), False)])
    got = pa.table({"info": pa.array([{"name": "a", "blob": {"kind": 0}}, None,
                                      {"name": "c", "blob": {"kind": 0}}],
                                     pa.struct([pa.field("name", pa.utf8()),
                                                pa.field("blob", plain_st)])),
                    "_rowid": pa.array([5, 6, 7], pa.uint64())})
    w, g, problem = corpus.lancedb_blob_row_ids(want, got)
    assert problem == "" and corpus.table_difference(w, g) == "", (problem, w, g)
    bad = got.set_column(1, "_rowid", pa.array([5, 6, 8], pa.uint64()))
    assert "info.blob" in corpus.lancedb_blob_row_ids(want, bad)[2]


def test_a_census_of_nothing_exits_non_zero(tmp_path, capsys):
    assert main(["census", "operations", "--no-build", "--out", str(tmp_path),
                 "--releases", "pylance==14.0.2"]) == 2
    assert "nothing was judged" in capsys.readouterr().err


# -- the corpus (compat marker; CI runs it) -------------------------------------------------------


@pytest.fixture(scope="module", params=corpus.QUICK_WRITERS)
def census_corpus(request) -> tuple[str, Path]:
    release = Release.parse(request.param)
    try:
        return release.name, corpus.build(release)
    except ReleaseUnavailable as e:
        unavailable(release.name, str(e))
    except (RuntimeError, OSError) as e:
        pytest.fail(f"building the corpus of {release.name} failed: {e}", pytrace=False)


@pytest.mark.compat
def test_every_census_cell_agrees(census_corpus):
    """Every operation the release has, at every storage version it writes, is read by the
    kit as the release reads it (or refused with a rule where the release refuses it)."""
    name, folder = census_corpus
    cells = operations.collect([folder])
    assert cells, f"{name}: no census cells"
    bad = [f"{c.operation}@{c.storage}: {c.release} -> {c.ours} {c.detail[:100]}"
           for c in cells if not c.agrees]
    assert not bad, f"{name}: " + json.dumps(bad, indent=1)
    # nothing is skipped silently: every operation of the catalogue has a cell at every
    # storage version the release writes (lancedb's own ones aside)
    storages = {c.storage for c in cells}
    pylance_ops = [op for op, (call, _db) in operations.OPERATIONS.items()
                   if call and op != "deep_clone"]  # (deep clones at the newest version only)
    for storage in storages:
        have = {c.operation for c in cells if c.storage == storage}
        missing = [op for op in pylance_ops if op not in have]
        assert not missing or name.startswith("lancedb"), (name, storage, missing)
    assert any(c.operation == "deep_clone" for c in cells), name


def test_branch_versions_the_newest_release_refuses_are_known():
    info = {"branches": {"dev": [2, 3, 4]}}
    assert corpus._branch_versions_refused_by_newest(info, None) == set()
    # it read 2 and 3 of dev, and could not read 4
    newest = {"branches": {"dev": [2, 3]}, "unreadable_branch_versions": {"dev:4": "x"}}
    assert corpus._branch_versions_refused_by_newest(info, newest) == {"dev:4"}
    # it could not open the table at all, or read before branches were read back
    assert "*" in corpus._branch_versions_refused_by_newest(
        info, {"unreadable_branch_versions": {"*": "no"}})
    assert "*" in corpus._branch_versions_refused_by_newest(info, {"versions": [1]})
    assert corpus._branch_versions_refused_by_newest({}, newest) == set()
