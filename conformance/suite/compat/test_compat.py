"""The release compatibility matrix (``lance-conformance compat``, issue 19).

The default run checks the machinery with the reference and the installed pylance 14.0.2
only: facts read from the bytes, causes named from them, cell classification (identical,
refused, crash, hang, misread), the baseline comparison and a known-bad writer caught by
``--baseline``, the release adapter program (run here with the main Python's pylance), the
reports and the HTML screenshot. The ``compat`` tests build release virtualenvs and check that
the known breaks between releases appear with the right cause.
"""

from __future__ import annotations

import json
import sys
import threading

import pyarrow as pa
import pytest

from conformance.cli import main
from conformance.compat import causes, report
from conformance.compat import matrix as mx
from conformance.compat.scenarios import COMPAT_SCENARIOS, QUICK_RELEASES
from conformance.harness.adapter import Adapter, Capabilities, Unsupported
from conformance.harness.subprocess_adapter import AdapterError, ProtocolError
from conformance.releases.venvs import ReleaseUnavailable
from conformance.suite.parts import unavailable

# -- facts from the bytes -----------------------------------------------------------------------


def _facts(uri) -> dict[int, set[str]]:
    return {v: f.facts for v, f in causes.dataset_facts(str(uri)).items()}


def test_facts_name_manifest_naming_file_versions_flags_and_deletions(tmp_path):
    import reference_impl as ri

    small = pa.table({"id": pa.array(range(8000), pa.int64())})
    v1 = ri.write_dataset(small, tmp_path / "v1", data_storage_version="2.0",
                          enable_v2_manifest_paths=False)
    v1.delete("id >= 2000")  # 6000 deletions: a Roaring bitmap
    ri.write_dataset(small.slice(0, 10), tmp_path / "v2", data_storage_version="2.1",
                     enable_v2_manifest_paths=True, enable_stable_row_ids=True).delete("id = 3")
    f1, f2 = _facts(tmp_path / "v1"), _facts(tmp_path / "v2")
    assert {"naming:V1", "file:2.0", "txn:overwrite"} <= f1[1]
    assert {"deletion:BITMAP", "reader-flag:DELETION_FILES", "txn:delete"} <= f1[2]
    assert {"naming:V2", "file:2.1", "reader-flag:STABLE_ROW_IDS", "row-id-sequence"} <= f2[1]
    assert "deletion:ARROW_ARRAY" in f2[2]
    assert any(f.startswith("encoding:") for f in f2[1])


def test_the_era_of_a_storage_version_comes_from_the_bytes(tmp_path, pylance):
    from conformance.fixtures.corruption import latest_manifest, rewrite_manifest

    def as_release(version):
        def edit(m):
            m.writer_version.version = version
        return edit

    for storage in ("2.1", "2.2"):
        uri = tmp_path / storage
        pylance.write_dataset(pa.table({"id": list(range(100))}), str(uri),
                              data_storage_version=storage)
        assert f"file:{storage}@stable" in _facts(uri)[1]
        rewrite_manifest(latest_manifest(uri), as_release("0.30.0"))
    # 2.1: the manifest's writer_version names the era
    assert {"file:2.1@unstable", "file:2.1@unstable:0.30"} <= _facts(tmp_path / "2.1")[1]
    # 2.2: the pages say it (u32 chunk grammar), whatever the manifest claims
    assert "file:2.2@stable" in _facts(tmp_path / "2.2")[1]


def test_an_unopenable_dataset_is_a_fact_not_a_traceback(tmp_path):
    (tmp_path / "_versions").mkdir()
    (tmp_path / "_versions" / "1.manifest").write_bytes(b"garbage")
    facts = causes.dataset_facts(str(tmp_path))
    assert all(f.error for f in facts.values())


# -- naming causes ------------------------------------------------------------------------------


def test_the_cause_is_what_the_reader_never_read_identically():
    facts = {"naming:V2", "file:2.1", "manifest-field:fields", "txn:append", "encoding:Flat"}
    chosen, text = causes.name_cause(facts, {"naming:V2", "manifest-field:fields"}, None)
    assert chosen == ["file:2.1"] and "2.1" in text  # encodings follow from the version


def test_the_first_reader_table_names_a_reader_that_predates_a_fact():
    facts = {"naming:V2", "file:2.0"}
    chosen, text = causes.name_cause(facts, set(facts), (0, 10, 18))
    assert "naming:V2" in chosen and "read from" in text


def test_an_unstable_storage_version_is_named_by_its_era():
    facts = {"file:2.2", "file:2.2@unstable", "naming:V1"}
    chosen, text = causes.name_cause(facts, {"file:2.2", "file:2.2@stable", "naming:V1"},
                                     (14, 0, 2))
    assert chosen[0] == "file:2.2@unstable" and "earlier form written before lance 4.0" in text


def test_validator_rules_name_a_writer_bug_and_nothing_unexplained():
    chosen, text = causes.name_cause({"naming:V2"}, {"naming:V2"}, None, violated=["FRAG-004"])
    assert chosen == ["invalid:FRAG-004"] and "FRAG-004" in text
    assert causes.name_cause({"naming:V2"}, {"naming:V2"}, None)[0] == ["unexplained"]


def test_name_causes_learns_what_each_reader_reads_and_spots_a_deviating_writer():
    m = mx.CompatMatrix(["old", "new"], ["r"], ["s"])
    vf = causes.VersionFacts
    m.datasets[("old", "s")] = mx.Written("old", "s", "", facts={1: vf(1, {"naming:V1"})})
    m.datasets[("new", "s")] = mx.Written("new", "s", "", facts={1: vf(1, {"naming:V2"})},
                                          self_diff={1: "column 'x': values differ"})
    m.cells[("old", "r", "s")] = mx.Cell("old", "r", "s", mx.IDENTICAL, {1: mx.IDENTICAL})
    m.cells[("new", "r", "s")] = mx.Cell("new", "r", "s", mx.REFUSED, {1: mx.REFUSED})
    mx.name_causes(m, [mx.Participant.parse("r")])
    assert m.cells[("new", "r", "s")].cause == ["naming:V2"]
    m.cells[("new", "r", "s")] = mx.Cell("new", "r", "s", mx.MISREAD, {1: mx.MISREAD},
                                         "v1: column 'x': values differ")
    mx.name_causes(m, [mx.Participant.parse("r")])
    assert m.cells[("new", "r", "s")].cause == ["writer-deviates"]


# -- classifying cells --------------------------------------------------------------------------


class _Fake(Adapter):
    """Answers each version with ``behaviour[v]``: a table, or an exception to raise."""

    name = "fake"
    capabilities = Capabilities(read=True)

    def __init__(self, behaviour):
        self.behaviour = behaviour
        self.release = threading.Event()

    def read(self, uri, version=None, *, with_row_id=False):
        b = self.behaviour[version]
        if b == "block":
            self.release.wait()  # never set during the read: a hang by construction
            raise Unsupported("released")
        if isinstance(b, BaseException):
            raise b
        return b


def _written(versions) -> mx.Written:
    return mx.Written("w", "s", "/nowhere", expected={
        v: pa.table({"id": pa.array(range(v), pa.int64())}) for v in versions})


@pytest.mark.parametrize("behaviour, outcome", [
    ({}, mx.IDENTICAL),
    ({2: pa.table({"id": pa.array([0, 5], pa.int64())})}, mx.MISREAD),
    ({2: ValueError("Unknown Lance storage version")}, mx.REFUSED),
    ({2: AdapterError("Panic", "not yet implemented")}, mx.CRASH),
    ({2: ProtocolError("the program exited (code -11)")}, mx.CRASH),
    ({1: ValueError("refused"), 2: pa.table({"id": pa.array([9, 9], pa.int64())})}, mx.MISREAD),
    ({2: Unsupported("cannot read")}, mx.IDENTICAL),
])
def test_a_cell_is_its_worst_version(behaviour, outcome):
    w = _written([1, 2, 3])
    answers = {v: behaviour.get(v, t) for v, t in w.expected.items()}
    cell = mx.read_cell(_Fake(answers), mx.Participant.parse("r"), w, timeout=30)
    assert cell.outcome == outcome, cell
    if outcome != mx.IDENTICAL:
        assert cell.detail


def test_a_read_that_never_answers_is_a_crash_and_ends_the_cell():
    w = _written([1, 2])
    fake = _Fake({1: "block", 2: w.expected[2]})
    try:
        cell = mx.read_cell(fake, mx.Participant.parse("reference"), w, timeout=0.2)
    finally:
        fake.release.set()
    assert cell.outcome == mx.CRASH and cell.versions == {1: mx.CRASH}
    assert "no answer" in cell.detail


def test_a_panic_on_stderr_turns_an_error_into_a_crash(tmp_path):
    log = (tmp_path / "stderr").open("w+b")
    w = _written([1])

    class Panicking(_Fake):
        def read(self, uri, version=None, *, with_row_id=False):
            log.write(b"thread 'lance_background_thread' panicked at decoder.rs:1:1\n")
            log.flush()
            raise AdapterError("ArrowInvalid", "Task was aborted")

    fake = Panicking({})
    fake.stderr_log = log
    cell = mx.read_cell(fake, mx.Participant.parse("pylance==0.38.3"), w, timeout=30)
    assert cell.outcome == mx.CRASH and "panic" in cell.detail


def test_participants_parse_labels_releases_and_commands():
    p = mx.Participant.parse("pylance==0.38.3")
    assert (p.label, p.is_release, p.release_version) == ("pylance==0.38.3", True, (0, 38, 3))
    assert mx.Participant.parse("lancedb==0.40.0").release_version is None
    p = mx.Participant.parse("reference=known-bad:file-version")
    assert (p.label, p.spec, p.in_process) == ("reference", "known-bad:file-version", True)
    p = mx.Participant.parse('cmd:"python x.py --a=b"')
    assert p.label == p.spec and not p.in_process
    from conformance.cli.compat import split_list

    assert split_list(['reference,cmd:"a b,c",pylance==1.0.4']) == [
        "reference", 'cmd:"a b,c"', "pylance==1.0.4"]


# -- the baseline -------------------------------------------------------------------------------


def _saved(outcomes: dict, violated=()) -> dict:
    return {"cells": [{"writer": w, "reader": r, "scenario": s, "outcome": o, "cause_text": "c"}
                      for (w, r, s), o in outcomes.items()],
            "datasets": [{"writer": "w", "scenario": "s", "violated": list(violated)}]}


@pytest.mark.parametrize("before, after, worse", [
    ("identical", "refused", True), ("identical", "misread", True), ("identical", "crash", True),
    ("refused", "misread", True), ("refused", "crash", True), ("crash", "misread", True),
    ("refused", "identical", False), ("misread", "refused", False), ("identical", "identical",
                                                                      False),
    ("identical", "not-written", True), ("not-written", "misread", False),
])
def test_baseline_flags_exactly_the_cells_that_got_worse(before, after, worse):
    key = ("w", "r", "s")
    found = mx.compare_baseline(_saved({key: after}), _saved({key: before}))
    assert bool(found) == worse
    if worse:
        assert found[0].cell == key and str(found[0]).startswith("w -> r [s]")


def test_baseline_flags_a_dataset_the_validator_now_rejects():
    key = ("w", "r", "s")
    found = mx.compare_baseline(_saved({key: "identical"}, ["FLAGS-003"]),
                                _saved({key: "identical"}))
    assert [str(f) for f in found] == ["w -> validator [s]: valid -> invalid: "
                                       "the writer's dataset breaks FLAGS-003"]


def test_a_known_bad_writer_makes_the_baseline_fail_naming_cell_and_cause(tmp_path, capsys,
                                                                          pylance):
    base = tmp_path / "base.json"
    args = ["compat", "--readers", "reference,pylance", "--scenarios", "append",
            "--no-progress"]
    assert main([*args, "--writers", "reference", "--json", str(base)]) == 0
    saved = json.loads(base.read_text())
    assert {c["outcome"] for c in saved["cells"]} == {"identical"}
    capsys.readouterr()
    code = main([*args, "--writers", "reference=known-bad:file-version",
                 "--baseline", str(base)])
    out = capsys.readouterr().out
    assert code == 1, out
    assert "WORSE reference -> pylance [append]: identical -> " in out
    line = next(s for s in out.splitlines() if s.startswith("WORSE reference -> pylance"))
    assert "DATAFILE-004" in line  # the cause, from the validator's reading of the bytes
    assert main([*args, "--writers", "reference", "--baseline", str(base)]) == 0


# -- the release adapter program, run with the main Python's pylance ----------------------------


def test_the_release_program_speaks_the_protocol_and_declares_features(tmp_path, pylance):
    from conformance.harness.subprocess_adapter import SubprocessAdapter

    a = SubprocessAdapter([sys.executable, str(mx.PROGRAM)], timeout=120)
    try:
        caps = a.capabilities
        assert a.name == f"pylance=={pylance.__version__}"
        assert {"storage:2.1", "storage:2.2", "v2-manifest-paths", "stable-row-ids",
                "tags", "index:btree"} <= set(caps.features)
        assert {"create", "delete", "create_index", "tag"} <= set(caps.ops)
        uri = str(tmp_path / "t.lance")
        a.apply(uri, {"op": "create", "data_storage_version": "2.1"}, pa.table({"id": [1, 2, 3]}))
        a.apply(uri, {"op": "create_index", "column": "id"})
        assert a.versions(uri) == [1, 2]
        assert a.read(uri, 1).column("id").to_pylist() == [1, 2, 3]
        with pytest.raises(AdapterError):
            a.read(uri, 7)
    finally:
        a.close()


def test_matrix_of_the_program_the_reference_and_pylance(tmp_path, pylance):
    program = f'prog=cmd:"{sys.executable} {mx.PROGRAM}"'
    writers = [mx.Participant.parse(s) for s in ("reference", "pylance", program)]
    readers = [mx.Participant.parse(s) for s in ("reference", "pylance", program)]
    m = mx.run_matrix(writers, readers, scenarios=["storage-2.1", "index"],
                      work=tmp_path, progress=False)
    assert not m.problems, m.problems
    assert m.cells[("reference", "prog", "index")].outcome == mx.NOT_WRITTEN  # no create_index
    assert "create_index" in m.cells[("reference", "prog", "index")].cause_text
    for key, cell in m.cells.items():
        if key[0] != "reference" or key[2] != "index":
            assert cell.outcome == mx.IDENTICAL, cell
    assert "index:BTreeIndexDetails" in m.datasets[("pylance", "index")].facts[2].facts
    # the reports
    text = report.to_text(m)
    assert "not written" in text and "prog" in text
    page = report.render_html(m)
    assert page.startswith("<!DOCTYPE html>") and "<script" not in page
    import xml.etree.ElementTree as ET

    suites = ET.fromstring(report.to_junit(m))
    assert sum(int(s.get("tests")) for s in suites) == len(m.cells)
    saved = json.loads(json.dumps(m.as_dict()))
    again = mx.CompatMatrix.from_dict(saved)
    assert again.as_dict()["cells"] == saved["cells"]
    assert not mx.compare_baseline(again, saved)
    md = report.to_markdown(again)
    assert md.startswith("| writer") and "### not written" in md


def test_usage_errors_exit_2(capsys):
    assert main(["compat", "--writers", "reference"]) == 2
    assert main(["compat", "--writers", "reference", "--readers", "reference",
                 "--scenarios", "nope"]) == 2
    assert main(["compat", "--list-scenarios"]) == 0
    assert "storage-2.2" in capsys.readouterr().out


def test_the_scenarios_cover_storage_versions_options_and_both_deletion_kinds():
    for needed in ("storage-legacy", "storage-2.0", "storage-2.1", "storage-2.2", "v2-names",
                   "create-v1-names", "stable-row-ids", "tag", "index", "delete",
                   "delete-bitmap"):
        assert needed in COMPAT_SCENARIOS
    assert len(QUICK_RELEASES) == 3


def test_every_script_can_run_at_every_storage_version():
    from conformance.compat.scenarios import scenario, with_storage_variants

    sids = with_storage_variants(["delete", "storage-2.1", "tag"])
    assert "delete@2.1" in sids and "tag@legacy" in sids
    assert not any(s.startswith("storage-2.1@") for s in sids)
    variant = scenario("delete@2.0")
    assert variant["script"][0]["data_storage_version"] == "2.0"
    assert "storage:2.0" in variant["requires"]
    with pytest.raises(KeyError):
        scenario("delete@9.9")


# -- the picture --------------------------------------------------------------------------------


def test_the_html_report_renders_in_a_headless_browser(tmp_path):
    if report.chromium() is None:
        unavailable("chromium", "not installed (python -m conformance.servers install-chromium)")
    m = mx.CompatMatrix(["w"], ["r"], ["s"])
    m.cells[("w", "r", "s")] = mx.Cell("w", "r", "s", mx.MISREAD, {1: mx.MISREAD}, "v1: rows",
                                       ["file:0.1"], "data files of storage version 0.1")
    page = tmp_path / "m.html"
    page.write_text(report.render_html(m))
    png = tmp_path / "m.png"
    report.screenshot(page, png, size=(800, 400))
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 2000


# -- releases (compat marker: builds virtualenvs; CI runs -m compat) ----------------------------


@pytest.fixture(scope="module")
def quick_matrix(tmp_path_factory):
    releases = ["pylance==0.10.18", *QUICK_RELEASES]
    parts = [mx.Participant.parse(r) for r in releases]
    for p in parts:
        try:
            p.prepare()
        except ReleaseUnavailable as exc:
            unavailable(p.label, str(exc))
    return mx.run_matrix(parts, parts, scenarios=["storage-2.0", "storage-2.1", "storage-2.2",
                                                  "v2-names", "delete"],
                         work=tmp_path_factory.mktemp("compat"), progress=False)


@pytest.mark.compat
def test_unstable_2_2_written_by_0_38_is_refused_by_14(quick_matrix):
    cell = quick_matrix.cells[("pylance==0.38.3", "pylance==14.0.2", "storage-2.2")]
    assert cell.outcome == mx.REFUSED, cell
    assert any(c.startswith("file:2.2@unstable") for c in cell.cause), cell


@pytest.mark.compat
def test_v2_names_and_2_1_files_are_named_for_a_release_that_predates_them(quick_matrix):
    cell = quick_matrix.cells[("pylance==14.0.2", "pylance==0.10.18", "v2-names")]
    assert cell.outcome in (mx.REFUSED, mx.CRASH), cell
    cell = quick_matrix.cells[("pylance==0.38.3", "pylance==0.10.18", "storage-2.1")]
    assert cell.outcome in (mx.REFUSED, mx.CRASH), cell
    assert any(c.startswith("file:2.1") for c in cell.cause), cell


@pytest.mark.compat
def test_every_release_reads_its_own_writes_and_no_newer_release_misreads(quick_matrix):
    for (w, r, s), cell in quick_matrix.cells.items():
        if w == r:
            assert cell.outcome in (mx.IDENTICAL, mx.NOT_WRITTEN), cell
        if cell.outcome == mx.MISREAD:
            pytest.fail(f"{w} -> {r} [{s}] misread: {cell.cause_text}")
    for cell in quick_matrix.broken():
        assert cell.cause and cell.cause != ["unexplained"] or cell.outcome == mx.NOT_WRITTEN, cell
