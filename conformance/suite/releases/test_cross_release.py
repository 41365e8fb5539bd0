"""Cross-release corpus: every release's data judged as that release reads it (issue 16).

The ``compat`` tests build the CI subset of the corpus (a legacy-era release, 0.38.x and the
newest; one cached virtualenv each) and assert, for every root: no error finding beyond the
ones a release is known to cause by breaking a spec sentence, and every version read by the
reference reader exactly as its writer read it back (or refused with a rule id where the
newest release refuses it too). ``lance-conformance fixtures cross-release`` runs the full
list. The other tests here check the corpus machinery itself and run by default.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pytest

from conformance.releases import corpus
from conformance.releases.venvs import Release, ReleaseUnavailable
from conformance.suite.parts import unavailable

# -- the machinery (default run) -----------------------------------------------------------------


def test_release_names_parse_and_refuse_garbage():
    r = Release.parse("pylance==0.10.18")
    assert (r.package, r.version, r.slug) == ("pylance", "0.10.18", "pylance-0.10.18")
    assert r.version_tuple == (0, 10, 18)
    assert Release.parse("lancedb==0.40.0").name == "lancedb==0.40.0"
    for bad in ("pylance", "pylance>=1", "numpy==1.0", "pylance==1.0; rm -rf /"):
        with pytest.raises(ValueError):
            Release.parse(bad)


def test_old_releases_get_the_libraries_of_their_era():
    assert "numpy<2" in Release.parse("pylance==0.10.18").requirements()
    assert Release.parse("pylance==14.0.2").requirements() == ["pylance==14.0.2"]


def test_every_writer_of_the_issue_is_in_the_full_list():
    eras = {(Release.parse(w).package, Release.parse(w).version_tuple[:2])
            for w in corpus.FULL_WRITERS}
    for era in [(0, 10), (0, 20), (0, 30), (0, 38), (1, 0), (4, 0), (9, 0), (12, 0), (13, 0),
                (14, 0)]:
        assert ("pylance", era) in eras, era
    assert any(w.startswith("lancedb==") for w in corpus.FULL_WRITERS)
    assert set(corpus.QUICK_WRITERS) <= set(corpus.FULL_WRITERS)


def test_table_difference_names_the_first_difference():
    a = pa.table({"x": [1, 2, 3], "f": [1.0, float("nan"), None]})
    assert corpus.table_difference(a, a) == ""
    assert "row 1" in corpus.table_difference(a, pa.table({"x": [1, 5, 3], "f": a["f"]}))
    assert "rows" in corpus.table_difference(a, a.slice(0, 2))
    assert "type" in corpus.table_difference(a, a.cast(pa.schema([("x", pa.int32()),
                                                                   ("f", pa.float64())])))
    assert "columns" in corpus.table_difference(a, a.select(["f", "x"]))


def test_nan_equals_nan_inside_lists_and_structs():
    """Vectors of NaN (upstream's index tests write them) read back bit for bit must not be
    called a misread: Arrow's equality says NaN != NaN at any depth."""
    nan = float("nan")
    vec = pa.array([[nan, 1.0], None, [2.0, nan]], pa.list_(pa.float32(), 2))
    lst = pa.array([[nan], [], None, [3.0, nan]], pa.list_(pa.float64()))
    st = pa.array([{"x": nan, "y": [nan]}, None], pa.struct([("x", pa.float64()),
                                                            ("y", pa.list_(pa.float64()))]))
    mp = pa.array([[("k", nan)], None], pa.map_(pa.string(), pa.float64()))
    for col in (vec, lst, st, mp):
        t = pa.table({"c": col})
        assert corpus.table_difference(t, pa.table({"c": pa.array(col.to_pylist(),
                                                                  col.type)})) == "", col.type
    other = pa.table({"c": pa.array([[nan, 1.0], None, [2.5, nan]], vec.type)})
    assert "row 2" in corpus.table_difference(pa.table({"c": vec}), other)
    shorter = pa.table({"c": pa.array([[nan], [], None, [nan]], lst.type)})
    assert "row 3" in corpus.table_difference(pa.table({"c": lst}), shorter)


def test_dictionaries_compare_by_their_values():
    d1 = pa.array(["a", "b", None, "a"]).dictionary_encode()
    d2 = pa.DictionaryArray.from_arrays(pa.array([1, 0, None, 1], pa.int32()),
                                        pa.array(["b", "a"]))
    assert corpus.table_difference(pa.table({"d": d1}), pa.table({"d": d2})) == ""


def _fake_root(tmp_path: Path, rows: pa.Table, versions=(1,), unreadable=None) -> Path:
    import reference_impl as ri

    folder = tmp_path / "scenario"
    (folder / "expected").mkdir(parents=True)
    ri.write_dataset(pa.table({"id": pa.array([1, 2, 3], pa.int64())}), str(folder / "table"))
    for v in versions:
        with pa.ipc.new_stream(str(folder / "expected" / f"v{v}.arrows"), rows.schema) as w:
            w.write_table(rows)
    (folder / "scenario.json").write_text(json.dumps({
        "writer": "pylance==0.0.0", "scenario": "fake", "steps": [], "refused_columns": {},
        "versions": list(versions), "unreadable_versions": unreadable or {}}))
    return folder


def test_a_root_read_as_its_writer_read_it_is_judged_ok(tmp_path):
    v = corpus.judge_scenario(_fake_root(tmp_path, pa.table({"id": pa.array([1, 2, 3],
                                                                            pa.int64())})))
    assert v.ok, v.as_dict()
    assert [x.outcome for x in v.versions] == ["identical"]


def test_a_misread_is_not_ok(tmp_path):
    v = corpus.judge_scenario(_fake_root(tmp_path, pa.table({"id": pa.array([1, 2, 4],
                                                                            pa.int64())})))
    assert not v.ok
    assert v.versions[0].outcome == "misread" and "row 2" in v.versions[0].detail


def test_a_version_its_writer_cannot_read_must_be_flagged(tmp_path):
    folder = _fake_root(tmp_path, pa.table({"id": pa.array([1, 2, 3], pa.int64())}),
                        unreadable={"1": "panic"})
    v = corpus.judge_scenario(folder)
    assert not v.ok
    assert "writer-unreadable-unflagged" in [x.outcome for x in v.versions]


def test_expected_findings_are_matched_by_release_range_and_scenario():
    assert corpus.expected_findings("pylance==0.30.0", "types-legacy") == {
        "DATAFILE-002": corpus.EXPECTED_FINDINGS[0].sentence}
    assert corpus.expected_findings("pylance==0.30.0 then pylance==14.0.2",
                                    "upgraded-ops-legacy")
    assert corpus.expected_findings("pylance==0.25.2", "types-legacy") == {}
    assert corpus.expected_findings("pylance==8.0.1", "types-legacy") == {}
    assert corpus.expected_findings("pylance==0.30.0", "types-2.0") == {}
    # a table found on disk (judge-tables) has no scenario: the release's breaches are known
    # (and 1.0.4's compaction of an IVF_RQ leaves codes under other rows)
    assert set(corpus.expected_findings("pylance==1.0.4", None)) == {"DATAFILE-002",
                                                                    "INDEX-148"}
    assert corpus.expected_findings("pylance==14.0.2", None) == {}
    # seen only in tables found on disk (upstream's test data of 0.16.1): never required of
    # the corpus's scenarios
    assert set(corpus.expected_findings("pylance==0.16.1", None)) == {"DATAFILE-005",
                                                                     "FRAG-001"}
    assert corpus.expected_findings("pylance==0.16.1", "ops-2.0") == {}
    # a table 14.0.2 wrote and 0.30 modified holds 0.30's legacy files too
    assert corpus.expected_findings("pylance==14.0.2 then pylance==0.30.0",
                                    "downgraded-types-legacy")
    assert corpus.expected_findings("pylance==14.0.2 then pylance==8.0.1",
                                    "downgraded-types-legacy") == {}
    for e in corpus.EXPECTED_FINDINGS:  # every expected finding quotes the spec
        assert e.sentence.split(":")[0].split()[0] in ("000", "001", "002", "003", "004")


def _mixed_names_root(tmp_path: Path, newest_refuses: bool) -> Path:
    """A root like the ones pylance 0.16 makes of a 14.0.2 table: version 1 under its V2 name
    and under the V1 name ``1.manifest``; the newest release may refuse to open it."""
    from reference_impl.table import layout

    rows = pa.table({"id": pa.array([1, 2, 3], pa.int64())})
    folder = _fake_root(tmp_path, rows)
    versions = folder / "table" / "_versions"
    v2 = versions / layout.manifest_key(1, layout.SCHEME_V2).split("/")[-1]
    (versions / "1.manifest").write_bytes(v2.read_bytes())
    if newest_refuses:
        newest = folder / "read-by" / Release.parse(corpus.NEWEST_READER).slug
        newest.mkdir(parents=True)
        (newest / "read.json").write_text(json.dumps({"versions": [], "unreadable_versions": {
            "latest": "Found multiple manifest naming schemes in the same directory"}}))
    return folder


def test_an_error_on_a_table_the_newest_release_refuses_is_no_false_error(tmp_path):
    """An older release that modifies a newer release's table may break it (pylance 0.16 adds
    V1 names beside V2 names, which 14.0.2 refuses to open). The kit's error on the whole
    table (MANIFEST-006) then agrees with the newest release, whatever the writer read."""
    v = corpus.judge_scenario(_mixed_names_root(tmp_path, newest_refuses=True))
    assert v.ok, v.as_dict()
    assert [x.outcome for x in v.versions] == ["flagged"]


def test_an_error_on_a_table_the_newest_release_reads_is_a_false_error(tmp_path):
    v = corpus.judge_scenario(_mixed_names_root(tmp_path, newest_refuses=False))
    assert not v.ok
    assert "MANIFEST-006" in {e["rule"] for e in v.errors}


def test_the_table_gives_downgraded_roots_to_the_older_release():
    from conformance.cli.cross_release import markdown_table

    def verdict(writer, scenario):
        return {"writer": writer, "scenario": scenario, "ok": True, "errors": [],
                "versions": []}

    text = markdown_table([verdict("pylance==0.38.3", "ops-2.0"),
                           verdict("pylance==0.38.3 then pylance==14.0.2", "upgraded-ops-2.0"),
                           verdict("pylance==14.0.2 then pylance==0.38.3", "downgraded-ops-2.0"),
                           verdict("pylance==14.0.2", "ops-2.0")])
    header, _rule, old, new = text.splitlines()[:4]
    assert header == "| writer | downgraded | ops | upgraded | roots ok |"
    assert old == "| pylance==0.38.3 | 1/1 | 1/1 | 1/1 | 3/3 |"
    assert new == "| pylance==14.0.2 |  | 1/1 |  | 1/1 |"


# -- the corpus (compat marker; CI runs it) ---------------------------------------------------


@pytest.fixture(scope="module", params=corpus.QUICK_WRITERS)
def release_corpus(request) -> tuple[str, Path]:
    release = Release.parse(request.param)
    try:
        return release.name, corpus.build(release)
    except ReleaseUnavailable as e:
        unavailable(release.name, str(e))
    except (RuntimeError, OSError) as e:
        pytest.fail(f"building the corpus of {release.name} failed: {e}", pytrace=False)


@pytest.mark.compat
def test_every_root_is_judged_as_its_writer_reads_it(release_corpus):
    name, folder = release_corpus
    verdicts = corpus.judge(folder)
    assert len(verdicts) >= 10, f"{name} wrote only {len(verdicts)} roots"
    bad = {}
    for v in verdicts:
        if v.ok:
            continue
        problems = [f"{e['rule']}: {e['message'][:120]}" for e in v.errors[:3]]
        problems += [f"v{x.version} {x.outcome}: {x.detail[:120]}" for x in v.versions
                     if x.outcome not in ("identical", "flagged")][:3]
        problems += [f"expected finding {r} missing" for r in v.missing_expected]
        bad[v.scenario] = problems
    assert not bad, f"{name}: {len(bad)} of {len(verdicts)} roots misjudged: " + json.dumps(
        bad, indent=1)


@pytest.mark.compat
def test_the_corpus_covers_every_operation_the_release_has(release_corpus):
    """Steps a release lacks are recorded, not hidden: the corpus says what it holds."""
    name, folder = release_corpus
    steps = {}
    for s in corpus.scenarios(folder):
        info = json.loads((s / "scenario.json").read_text())
        for st in info["steps"]:
            steps.setdefault(st["step"], set()).add(st["outcome"])
    for required in ("create", "append", "delete", "compact", "alter_nested"):
        assert "done" in steps.get(required, set()), (name, required, steps.get(required))
    if Release.parse(name).version_tuple >= (0, 20):
        for required in ("update", "merge", "add_columns", "drop_columns", "tag",
                         "scalar_index"):
            assert "done" in steps.get(required, set()), (name, required, steps.get(required))
        files = json.loads((folder / "files" / "scenario.json").read_text())["files"]
        assert {"basic-types-2.0", "large-2.0"} <= set(files), (name, files)
    if corpus._downgrades(Release.parse(name)):
        # the older release modified some of the newest release's tables (legacy ones at
        # least: every release reads and writes those)
        down = [s.name for s in corpus.scenarios(folder) if s.name.startswith("downgraded-")]
        assert "downgraded-ops-legacy" in down, (name, down)
        for s in down:
            info = json.loads((folder / s / "scenario.json").read_text())
            assert info["writer"] == f"{corpus.NEWEST_READER} then {name}"
            assert (folder / s / "read-by" / Release.parse(corpus.NEWEST_READER).slug /
                    "read.json").is_file()


@pytest.mark.parametrize("newest_refuses", [True, False])
def test_a_plain_reading_the_newest_release_refuses_may_be_refused(tmp_path, newest_refuses):
    """lancedb's default reading (``expected-plain/``) of a version the newest release
    refuses (lancedb 0.25.3's 2.2, unstable then) is judged as its other reading: the kit
    may refuse it with a rule id; where the newest reads it, a refusal is a failure."""
    rows = pa.table({"id": pa.array([1, 2, 3], pa.int64())})
    folder = _fake_root(tmp_path, rows)
    (data,) = (folder / "table" / "data").iterdir()
    data.write_bytes(data.read_bytes()[:-40])  # no footer: refused, and flagged
    (folder / "expected-plain").mkdir()
    with pa.ipc.new_stream(str(folder / "expected-plain" / "v1.arrows"), rows.schema) as w:
        w.write_table(rows)
    newest = folder / "read-by" / Release.parse(corpus.NEWEST_READER).slug
    newest.mkdir(parents=True)
    (newest / "read.json").write_text(json.dumps(
        {"versions": [1], "unreadable_versions": {"1": "refused"} if newest_refuses else {}}))
    v = corpus.judge_scenario(folder)
    plain = {x.version: x.outcome for x in v.versions}["plain:1"]
    assert plain == ("flagged" if newest_refuses else "unreadable")
    assert v.ok == newest_refuses


@pytest.mark.parametrize("newest_agrees", [True, False])
def test_a_plain_reading_may_agree_with_the_newest_release_instead(tmp_path, newest_agrees):
    """Where lancedb's default reading differs from ours (0.21.2 reads blob v1 descriptions
    with non-nullable children) the newest release's reading of the version may decide,
    as it does for the version's other reading."""
    import reference_impl as ri

    rows = pa.table({"id": pa.array([1, 2, 3], pa.int64())})
    folder = _fake_root(tmp_path, rows)
    (folder / "expected-plain").mkdir()
    described = pa.struct([pa.field("position", pa.uint64()), pa.field("size", pa.uint64())])
    blob = pa.array([{"position": i, "size": 1} for i in range(3)], described)
    rows = pa.table({"id": rows.column("id"), "blob": blob})
    shutil.rmtree(folder / "table")
    ri.write_dataset(rows, str(folder / "table"))
    strict = pa.struct([pa.field("position", pa.uint64(), nullable=False),
                        pa.field("size", pa.uint64(), nullable=False)])
    other = pa.table({"id": rows.column("id"), "blob": blob.cast(strict)})
    with pa.ipc.new_stream(str(folder / "expected-plain" / "v1.arrows"), other.schema) as w:
        w.write_table(other)
    newest = folder / "read-by" / Release.parse(corpus.NEWEST_READER).slug / "expected"
    newest.mkdir(parents=True)
    (newest.parent / "read.json").write_text(json.dumps({"versions": [1],
                                                         "unreadable_versions": {}}))
    theirs = rows if newest_agrees else other
    with pa.ipc.new_stream(str(newest / "v1.arrows"), theirs.schema) as w:
        w.write_table(theirs)
    v = corpus.judge_scenario(folder)
    plain = {x.version: x.outcome for x in v.versions}["plain:1"]
    assert plain == ("identical" if newest_agrees else "misread")
    assert v.ok == newest_agrees


def test_lancedb_legacy_file_sizes_are_expected_where_observed():
    for writer, scenario, expected in (
            ("lancedb==0.25.3", "census-lancedb-legacy", True),
            ("lancedb==0.30.2", "upgraded-lancedb-legacy", True),
            ("lancedb==0.33.0", "census-lancedb-legacy", True),
            ("lancedb==0.34.0", "lancedb-legacy", False),
            ("lancedb==0.21.2", "lancedb-legacy", False)):
        assert ("DATAFILE-002" in corpus.expected_findings(writer, scenario)) == expected


def test_a_version_only_the_newest_release_reads_is_judged_by_its_rows(tmp_path):
    """An old release's runtime may fail to read its own version back (an aborted task);
    when the newest release reads it, its rows are the oracle and no finding is needed."""
    rows = pa.table({"id": pa.array([1, 2, 3], pa.int64())})
    folder = _fake_root(tmp_path, rows, versions=(), unreadable={"1": "Task was aborted"})
    info = json.loads((folder / "scenario.json").read_text())
    info["versions"] = [1]
    (folder / "scenario.json").write_text(json.dumps(info))
    newest = folder / "read-by" / Release.parse(corpus.NEWEST_READER).slug
    (newest / "expected").mkdir(parents=True)
    (newest / "read.json").write_text(json.dumps({"versions": [1], "unreadable_versions": {}}))
    with pa.ipc.new_stream(str(newest / "expected" / "v1.arrows"), rows.schema) as w:
        w.write_table(rows)
    v = corpus.judge_scenario(folder)
    assert v.ok, v.as_dict()
    bad = pa.table({"id": pa.array([1, 2, 4], pa.int64())})
    with pa.ipc.new_stream(str(newest / "expected" / "v1.arrows"), bad.schema) as w:
        w.write_table(bad)
    assert not corpus.judge_scenario(folder).ok


# -- standalone files ---------------------------------------------------------------------------


def _program():
    import importlib.util

    spec = importlib.util.spec_from_file_location("release_program", corpus.PROGRAM)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def files_root(pylance, tmp_path) -> Path:
    """The ``files`` scenario as pylance 14.0.2 writes it (the program run in-process)."""
    _program().scenario_files(str(tmp_path), f"pylance=={pylance.__version__}",
                              ["legacy", "2.0", "2.1", "2.2"])
    return tmp_path / "files"


def test_standalone_files_are_judged_as_their_writer_reads_them(files_root):
    info = json.loads((files_root / "scenario.json").read_text())
    assert info["files"] == [f"{n}-{v}" for v in ("2.0", "2.1", "2.2")
                             for n in ("basic-types", "large")]
    assert corpus.file_roots(files_root.parent) == [files_root]
    v = corpus.judge_files(files_root)
    assert v.ok, v.as_dict()
    assert [x.outcome for x in v.versions] == ["identical"] * 6


def test_a_standalone_file_read_otherwise_must_be_flagged(files_root):
    """Rows that differ from the writer's reading with no error finding are a misread; a file
    whose bytes the validator refuses is flagged where the newest release refuses it too,
    and is not where a release reads it (the kit's own failure is no agreement)."""
    stem = "basic-types-2.1"
    want = corpus._read_stream(files_root / "expected" / f"{stem}.arrows")
    other = want.set_column(0, "int", pa.array(range(1, want.num_rows + 1), want.schema[0].type))
    fresh = files_root / "expected" / "other.tmp"
    with pa.ipc.new_stream(str(fresh), other.schema) as w:
        w.write_table(other)
    fresh.replace(files_root / "expected" / f"{stem}.arrows")  # ``want`` may map the old file
    path = files_root / "files" / "large-2.0.lance"
    path.write_bytes(path.read_bytes()[:-2])
    outcomes = {x.version: x.outcome for x in corpus.judge_files(files_root).versions}
    assert outcomes[stem] == "misread"
    assert outcomes["large-2.0"] == "unreadable"  # the writer read it: no excuse
    assert outcomes["large-2.1"] == "identical"
    newest = files_root / "read-by" / Release.parse(corpus.NEWEST_READER).slug
    newest.mkdir(parents=True)
    (newest / "read.json").write_text(json.dumps({"unreadable_versions": {
        "large-2.0": "OSError: file too short"}}))
    outcomes = {x.version: x.outcome for x in corpus.judge_files(files_root).versions}
    assert outcomes["large-2.0"] == "flagged"
