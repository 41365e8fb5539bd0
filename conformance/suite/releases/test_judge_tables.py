"""``fixtures judge-tables``: tables found on disk, read back by a release, judged by the kit.

The default run drives the installed pylance 14.0.2 (the ``interop`` extra) as the reading
release; the ``compat`` tests run the command itself with the cached virtualenvs of pylance
14.0.2 and lancedb 0.38.0 (lancedb reads a table of a database by name).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

from conformance.cli import main
from conformance.releases import found
from conformance.releases.venvs import Release, ReleaseUnavailable, ensure_venv
from conformance.suite.parts import unavailable

ROWS = pa.table({"id": pa.array(range(10), pa.int64()),
                 "s": pa.array([f"r{i}" if i % 4 else None for i in range(10)])})


def _reference_tree(root: Path) -> None:
    """Tables as a user keeps them: a plain one, a lancedb database's, standalone files,
    a folder that only looks like a table, and a table inside another's folder."""
    import reference_impl as ri
    from reference_impl.file.writer import write_lance_file
    from reference_impl.io import open_store

    ri.write_dataset(ROWS, str(root / "plain"))
    ri.write_dataset(ROWS, str(root / "db" / "users.lance"))
    (root / "loose").mkdir()
    write_lance_file(open_store(str(root / "loose")), "one.lance", ROWS)
    (root / "empty" / "_versions").mkdir(parents=True)  # no manifest: not a table
    ri.write_dataset(ROWS, str(root / "plain" / "tree" / "branch"))  # belongs to plain/


def test_find_sees_tables_lancedb_tables_and_standalone_files(tmp_path):
    _reference_tree(tmp_path)
    got = {(it.kind, it.path.relative_to(tmp_path).as_posix()) for it in found.find(tmp_path)}
    assert got == {("table", "plain"), ("table", "db/users.lance"), ("files", "loose")}
    names = [it.name for it in found.find(tmp_path)]
    assert len(set(names)) == len(names)


def test_a_folder_without_tables_checks_nothing_and_exits_2(tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("no table here")
    assert main(["fixtures", "judge-tables", str(tmp_path)]) == 2
    assert "nothing was checked" in capsys.readouterr().err
    assert main(["fixtures", "judge-tables", str(tmp_path / "missing")]) == 2
    assert main(["fixtures", "judge-tables", str(tmp_path), "--reader", "numpy==1.0"]) == 2


def test_a_version_its_reader_fails_is_judged_once(tmp_path):
    """A found table has no newest release's reading: a version its reader fails must draw
    an error finding, and is judged once, as that (not as one the newest release refuses)."""
    import reference_impl as ri
    from conformance.releases.corpus import judge_scenario

    ri.write_dataset(ROWS, str(tmp_path / "t"))
    folder = tmp_path / "work"
    (folder / "expected").mkdir(parents=True)
    (folder / "scenario.json").write_text(json.dumps({
        "scenario": "t", "writer": "lancedb==0.38.0", "origin": "found", "versions": [1],
        "table_path": str(tmp_path / "t"), "unreadable_versions": {"1": "not supported"}}))
    v = judge_scenario(folder)
    assert [(x.version, x.outcome) for x in v.versions] == [(1, "writer-unreadable-unflagged")]
    assert not v.ok


def _pylance_tree(lance, root: Path) -> None:
    """Tables pylance 14.0.2 writes: three versions (append, delete), a standalone file,
    and a table whose only manifest is garbage (no release can open it)."""
    from lance.file import LanceFileWriter

    lance.write_dataset(ROWS, str(root / "t"))
    lance.write_dataset(ROWS, str(root / "t"), mode="append")
    lance.dataset(str(root / "t")).delete("id = 3")
    (root / "files").mkdir()
    with LanceFileWriter(str(root / "files" / "f.lance"), schema=ROWS.schema) as w:
        w.write_batch(ROWS)
    (root / "broken" / "_versions").mkdir(parents=True)
    (root / "broken" / "_versions" / "1.manifest").write_bytes(b"\x00" * 64)


def _read_and_judge(root: Path, work: Path):
    items = found.find(root)
    # the installed pylance stands in for the release's virtualenv
    found.read_back(Release.parse("pylance==14.0.2"), items, work, python=Path(sys.executable))
    return {Path(v.scenario).name: v for v in found.judge(items, work)}


def test_the_kit_reads_found_tables_as_pylance_does(tmp_path, pylance):
    _pylance_tree(pylance, tmp_path / "data")
    verdicts = _read_and_judge(tmp_path / "data", tmp_path / "work")
    assert set(verdicts) == {"t", "files", "broken"}
    assert all(v.ok for v in verdicts.values()), {k: v.as_dict() for k, v in verdicts.items()}
    assert [x.outcome for x in verdicts["t"].versions] == ["identical"] * 3
    assert [x.outcome for x in verdicts["files"].versions] == ["identical"]
    # pylance cannot open it; the kit's error findings make that agreement, not a false error
    assert [(x.version, x.outcome) for x in verdicts["broken"].versions] == [("latest",
                                                                              "flagged")]
    info = json.loads((tmp_path / "work" / found.find(tmp_path / "data")[0].name /
                       "scenario.json").read_text())
    assert "latest" in info["unreadable_versions"]


def test_branches_a_moved_table_lost_are_refused_by_both(tmp_path, pylance):
    """A branch's manifest names its parents' data by absolute base paths; a table moved
    after branching (upstream's test_dataset.py::test_branches, harvested from its tmp
    folder) has branches no release can read. The kit's DATAFILE-001 findings on them agree
    with its reader: they were counted as false errors on main's version numbers, because
    the judge dropped the branches its reader had read (or failed)."""
    import shutil

    rows = ROWS.select(["id"])
    src = tmp_path / "before" / "t"
    pylance.write_dataset(rows, str(src))
    b1 = pylance.dataset(str(src)).create_branch("b1")
    pylance.write_dataset(rows, b1, mode="append")
    b2 = pylance.dataset(str(src)).checkout_version(("b1", None)).create_branch("b2")
    pylance.write_dataset(rows, b2, mode="append")
    items = found.find(tmp_path / "before")
    work = tmp_path / "work-before"
    found.read_back(Release.parse("pylance==14.0.2"), items, work, python=Path(sys.executable))
    (v,) = found.judge(items, work)
    assert v.ok, v.as_dict()
    assert {x.version: x.outcome for x in v.versions} == {
        1: "identical", "b1:1": "identical", "b1:2": "identical", "b2:2": "identical",
        "b2:3": "identical"}

    shutil.move(str(tmp_path / "before"), str(tmp_path / "data"))
    verdicts = _read_and_judge(tmp_path / "data", tmp_path / "work")
    v = verdicts["t"]
    assert v.ok, v.as_dict()
    outcomes = {x.version: x.outcome for x in v.versions}
    assert outcomes[1] == "identical"
    branch_versions = {k for k in outcomes if k != 1}
    assert branch_versions >= {"b1:2", "b2:3"}
    assert {outcomes[k] for k in branch_versions} == {"flagged"}
    assert set(v.rules) >= branch_versions and "1" not in v.rules
    # the kit silent on a branch version its reader fails is not agreement
    info = json.loads((tmp_path / "work" / found.find(tmp_path / "data")[0].name /
                       "scenario.json").read_text())
    assert set(info["unreadable_branch_versions"]) == branch_versions
    info["unreadable_branch_versions"]["b2:1"] = "made up"
    info["branches"]["b2"] = []
    (tmp_path / "work" / found.find(tmp_path / "data")[0].name /
     "scenario.json").write_text(json.dumps(info))
    (v,) = found.judge(found.find(tmp_path / "data"), tmp_path / "work")
    assert not v.ok
    assert {x.version: x.outcome for x in v.versions}["b2:1"] == "writer-unreadable-unflagged"


def test_a_legacy_file_no_file_reader_reads_has_no_oracle(tmp_path, pylance):
    """Fragments written and never committed leave data files beside no manifest; pylance's
    LanceFileReader refuses the legacy (0.1) ones by API ("current-format reader"), so their
    refusal judges nothing: the verdict says so instead of asking the kit for a finding."""
    from lance.fragment import write_fragments

    write_fragments(ROWS, str(tmp_path / "data" / "orphan"), data_storage_version="legacy")
    write_fragments(ROWS, str(tmp_path / "data" / "orphan2"), data_storage_version="2.1")
    items = found.find(tmp_path / "data")
    found.read_back(Release.parse("pylance==14.0.2"), items, tmp_path / "work",
                    python=Path(sys.executable))
    verdicts = {Path(v.scenario).parent.name: v for v in found.judge(items, tmp_path / "work")}
    assert {k: [x.outcome for x in v.versions] for k, v in verdicts.items()} == {
        "orphan": ["no-oracle"], "orphan2": ["identical"]}
    assert all(v.ok for v in verdicts.values())


def _older_reader_and_newest(tmp_path, pylance, *, differ: bool = True):
    """``_pylance_tree`` read back as an older reader would (the installed pylance stands in
    for pylance 0.20.0); with ``differ``, that reader's reading of ``t`` v1 changed as 0.20.0
    changes it (it leaves a ``storage-class: blob`` column out of a scan, here ``s``)."""
    import pyarrow.ipc as ipc

    _pylance_tree(pylance, tmp_path / "data")
    items = found.find(tmp_path / "data")
    work = tmp_path / "work"
    found.read_back(Release.parse("pylance==0.20.0"), items, work, python=Path(sys.executable))
    if not differ:
        return items, work
    t = next(it for it in items if it.name.endswith("-t"))
    path = work / t.name / "expected" / "v1.arrows"
    with ipc.open_stream(str(path)) as r:
        rows = r.read_all()
    rows = rows.drop_columns(["s"])
    with ipc.new_stream(str(path), rows.schema) as w:
        w.write_table(rows)
    return items, work


def test_an_older_reader_is_judged_with_the_newest_release_as_second_oracle(tmp_path,
                                                                            pylance):
    """pylance 0.20.0 and 14.0.2 read some bytes differently (0.20.0 leaves a column of
    storage class blob out of a scan, marks a blob v1 description's children non-nullable);
    the kit reads as 14.0.2 does. Judged against 0.20.0 alone such a version was misread;
    with the newest release's reading beside it (``read_back_newest``, as the corpus keeps
    it for every older writer) reading as either release reads it is agreement."""
    items, work = _older_reader_and_newest(tmp_path, pylance)
    alone = {Path(v.scenario).name: v for v in found.judge(items, work)}
    assert [x.outcome for x in alone["t"].versions] == ["misread", "identical", "identical"]
    found.read_back_newest(items, work, python=Path(sys.executable))
    assert all((work / it.name / "read-by" / "pylance-14.0.2" / "read.json").is_file()
               for it in items)
    both = {Path(v.scenario).name: v for v in found.judge(items, work)}
    assert all(v.ok for v in both.values()), {k: v.as_dict() for k, v in both.items()}
    assert "as pylance==14.0.2 reads it" in both["t"].versions[0].detail


def test_what_only_an_older_reader_reads_may_be_refused_as_the_newest_release_does(tmp_path,
                                                                                  pylance):
    """A file and a table version the older reader read and the newest release refuses
    (pylance 0.20.0 wrote 2.1 files while 2.1 was unstable; 14.0.2 and the kit refuse them,
    FILE-015): the kit's refusal with an error finding is agreement, as in the corpus; its
    findings are false errors where the newest release reads the bytes."""
    from conformance.fixtures.corruption import latest_manifest

    items, work = _older_reader_and_newest(tmp_path, pylance, differ=False)
    data = tmp_path / "data"
    f = data / "files" / "f.lance"
    f.write_bytes(f.read_bytes()[:-4] + b"XXXX")  # no release or reader takes it now
    latest_manifest(data / "t").write_bytes(b"\x00" * 64)  # v3: garbage
    alone = {Path(v.scenario).name: v for v in found.judge(items, work)}
    assert not alone["files"].ok and not alone["t"].ok
    found.read_back_newest(items, work, python=Path(sys.executable))
    both = {Path(v.scenario).name: v for v in found.judge(items, work)}
    assert [x.outcome for x in both["files"].versions] == ["flagged"]
    # (the newest release opens no version of a table whose latest manifest is garbage;
    # the kit reads v1 and v2 as the older reader did and refuses v3 with a finding)
    assert {x.version: x.outcome for x in both["t"].versions} == {
        1: "identical", 2: "identical", 3: "flagged"}
    assert all(v.ok for v in both.values()), {k: v.as_dict() for k, v in both.items()}


def test_a_found_tables_writers_include_those_its_manifests_name(tmp_path):
    """Upstream's test_migration.py copies tables older releases wrote (its test data
    v0.16.0/wrong_data_version_no_fix.lance: 2.0 and legacy files under data_format 0.1,
    writer_version 0.16.1) and reads them with the release under test. pylance 0.16.x's
    breaches (DATAFILE-005, and FRAG-001: two fragments with id 1) are tolerated on a found table whose manifest names 0.16.1 as its
    writer, whoever reads it back, and on no other."""
    import reference_impl as ri
    from conformance.fixtures.corruption import edit_latest
    from conformance.releases.corpus import judge_scenario

    def judged(writer_version: str | None):
        root = tmp_path / (writer_version or "ours")
        ri.write_dataset(ROWS, str(root / "t"), data_storage_version="2.0")
        ri.write_dataset(ROWS, str(root / "t"), mode="append")

        def edit(m):
            m.data_format.version = "2.1"  # over 2.0 files: DATAFILE-005
            m.fragments[1].id = m.fragments[0].id  # FRAG-001
            if writer_version:
                m.writer_version.library, m.writer_version.version = "lance", writer_version
        edit_latest(root / "t", edit)
        folder = root / "work"
        (folder / "expected").mkdir(parents=True)
        (folder / "scenario.json").write_text(json.dumps({
            "scenario": "t", "writer": "pylance==0.38.3", "origin": "found",
            "versions": [1], "table_path": str(root / "t"), "unreadable_versions": {}}))
        return judge_scenario(folder)

    assert {e["rule"] for e in judged(None).errors} == {"DATAFILE-005", "FRAG-001"}
    assert {e["rule"] for e in judged("0.17.0").errors} == {"DATAFILE-005", "FRAG-001"}
    v = judged("0.16.1")
    assert v.ok and v.expected == ["DATAFILE-005", "FRAG-001"], v.as_dict()


def test_a_misread_found_table_is_not_ok(tmp_path, pylance, monkeypatch):
    import reference_impl as ri

    _pylance_tree(pylance, tmp_path / "data")
    real = ri.open_dataset

    class FirstRowLost:
        def __init__(self, ds):
            self.ds = ds

        def to_table(self, **kw):
            return self.ds.to_table(**kw).slice(1)

    monkeypatch.setattr(ri, "open_dataset", lambda *a, **k: FirstRowLost(real(*a, **k)))
    v = _read_and_judge(tmp_path / "data", tmp_path / "work")["t"]
    assert not v.ok
    assert {x.outcome for x in v.versions} == {"misread"}


def test_a_file_the_kit_fails_to_read_is_not_excused_by_its_own_findings(tmp_path, pylance,
                                                                         monkeypatch):
    """The kit running out of memory on a file pylance reads (a 670 MB file of upstream's
    test_file.py) made the validator report an error too; that error must not turn the
    failed read into agreement ("flagged"): only a file the newest release refuses may."""
    from reference_impl.file.reader import LanceFileReader

    _pylance_tree(pylance, tmp_path / "data")

    def out_of_memory(self, *a, **k):
        raise MemoryError("Unable to allocate 5.00 GiB for an array")

    monkeypatch.setattr(LanceFileReader, "read_all", out_of_memory)
    v = _read_and_judge(tmp_path / "data", tmp_path / "work")["files"]
    assert not v.ok
    assert [x.outcome for x in v.versions] == ["unreadable"]
    assert "MemoryError" in v.versions[0].detail


def test_a_reader_that_dies_on_a_table_leaves_it_unreadable_and_goes_on(tmp_path, pylance):
    """A release that aborts on one table (a panic across FFI, a segfault) must not end the
    run: that table counts as one the release cannot read, the next ones are read."""
    _pylance_tree(pylance, tmp_path / "data")
    items = found.find(tmp_path / "data")
    fake = tmp_path / "python"
    # dies on the first item it is given, then behaves as the installed Python
    fake.write_text(f"#!/bin/sh\nif [ ! -e {tmp_path}/died ]; then touch {tmp_path}/died; "
                    f"exit 134; fi\nexec {sys.executable} \"$@\"\n")
    fake.chmod(0o755)
    found.read_back(Release.parse("pylance==14.0.2"), items, tmp_path / "work", python=fake)
    first = json.loads((tmp_path / "work" / items[0].name / "scenario.json").read_text())
    assert "exit code 134" in first["unreadable_versions"]["latest"]
    rest = [json.loads((tmp_path / "work" / it.name / "scenario.json").read_text())
            for it in items[1:]]
    assert any(r["versions"] for r in rest)


def test_the_judge_runs_under_a_memory_limit_that_is_restored_after():
    """A table the kit cannot read within the limit is judged unreadable (a MemoryError the
    judge records) instead of taking the machine's memory; the limit is lifted afterwards.
    Run in a child process: the limit is on the whole process."""
    program = (
        "import resource, numpy as np\n"
        "from conformance.cli.judge_tables import memory_capped\n"
        "before = resource.getrlimit(resource.RLIMIT_AS)\n"
        "vm = int([l.split()[1] for l in open('/proc/self/status') if l.startswith('VmSize')][0])\n"
        "with memory_capped((vm * 1024 + (256 << 20)) / (1 << 30)):\n"
        "    try:\n"
        "        np.ones(1 << 30, np.uint8)\n"
        "        raise SystemExit('a 1 GiB array fitted under the limit')\n"
        "    except MemoryError:\n"
        "        pass\n"
        "assert resource.getrlimit(resource.RLIMIT_AS) == before\n"
        "np.ones(1 << 30, np.uint8)\n"
        "print('ok')\n")
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]


def test_a_plain_reading_is_judged_without_row_ids(tmp_path, pylance):
    """``--plain``: the release reads every version as a user does by default (pylance
    ``to_table()``), no ``_rowid``; the readings say so and the kit reads them alike. A blob v2
    column nested in a struct (peer corpus N2) is among them."""
    from lance.blob import blob_array

    _pylance_tree(pylance, tmp_path / "data")
    info = pa.StructArray.from_arrays([pa.array(["a", "b"]), blob_array([b"x", None])],
                                      names=["name", "blob"])
    pylance.write_dataset(pa.table({"id": pa.array([1, 2], pa.int64()), "info": info}),
                          str(tmp_path / "data" / "nested"), data_storage_version="2.2")
    items = found.find(tmp_path / "data")
    for plain in (True, False):
        work = tmp_path / f"work-{plain}"
        found.read_back(Release.parse("pylance==14.0.2"), items, work,
                        python=Path(sys.executable), plain=plain)
        verdicts = {Path(v.scenario).name: v for v in found.judge(items, work)}
        assert all(v.ok for v in verdicts.values()), {k: v.as_dict() for k, v in verdicts.items()}
        assert [x.outcome for x in verdicts["nested"].versions] == ["identical"]
        t = next(it for it in items if it.path.name == "t")
        reading = pa.ipc.open_stream(str(work / t.name / "expected" / "v3.arrows")).read_all()
        assert ("_rowid" in reading.column_names) is not plain
        scenario = json.loads((work / t.name / "scenario.json").read_text())
        assert (scenario.get("reading") == "plain") is plain


def _lancedb_plain_reading(tmp_path, row_ids):
    """A blob v2 table (the reference writer's) and, as its found reading, its scan with
    lancedb's ``_lance_row_id`` child in each descriptor set to ``row_ids``."""
    import reference_impl as ri

    md = {"lance-encoding:blob": "true"}
    data = pa.table({"id": pa.array([1, 2, 3], pa.int64()),
                     "blob": pa.array([b"a", None, b"ccc"], pa.large_binary())},
                    schema=pa.schema([pa.field("id", pa.int64()),
                                      pa.field("blob", pa.large_binary(), metadata=md)]))
    ri.write_dataset(data, str(tmp_path / "t"), data_storage_version="2.2")
    scan = ri.open_dataset(str(tmp_path / "t")).to_table()
    desc = scan.column("blob").combine_chunks()
    fields = list(desc.type) + [pa.field("_lance_row_id", pa.uint64(), nullable=False)]
    with_ids = pa.StructArray.from_arrays(
        [desc.field(i) for i in range(desc.type.num_fields)] + [pa.array(row_ids, pa.uint64())],
        fields=fields, mask=desc.is_null())
    reading = scan.set_column(1, scan.schema.field(1).with_type(with_ids.type), with_ids)
    folder = tmp_path / "work"
    (folder / "expected").mkdir(parents=True)
    with pa.ipc.new_stream(str(folder / "expected" / "v1.arrows"), reading.schema) as w:
        w.write_table(reading)
    (folder / "scenario.json").write_text(json.dumps({
        "scenario": "t", "writer": "lancedb==0.38.0", "origin": "found", "versions": [1],
        "table_path": str(tmp_path / "t"), "unreadable_versions": {}, "reading": "plain"}))
    return folder


def test_lancedbs_plain_blob_descriptors_are_checked_against_the_row_ids(tmp_path):
    """lancedb 0.38.0's default reading gives each blob v2 descriptor a child
    ``_lance_row_id`` (its row's id); the judge checks it against the reference reader's row
    ids, sets it aside and compares the rest (peer corpus K6). Wrong ids are a misread."""
    from conformance.releases.corpus import judge_scenario

    v = judge_scenario(_lancedb_plain_reading(tmp_path / "good", [0, 1, 2]))
    assert v.ok and [x.outcome for x in v.versions] == ["identical"], v.as_dict()
    v = judge_scenario(_lancedb_plain_reading(tmp_path / "bad", [0, 1, 7]))
    assert not v.ok
    assert [x.outcome for x in v.versions] == ["misread"]
    assert "_lance_row_id differ from the row ids" in v.versions[0].detail


# -- the command with the release virtualenvs (compat marker; CI runs it) -----------------------


def _venv(name: str) -> Path:
    try:
        return ensure_venv(Release.parse(name))
    except ReleaseUnavailable as e:
        unavailable(name, str(e))


@pytest.mark.compat
def test_judge_tables_with_pylance_14(tmp_path, pylance, capsys):
    _venv("pylance==14.0.2")
    _pylance_tree(pylance, tmp_path / "data")
    out = tmp_path / "v.json"
    assert main(["fixtures", "judge-tables", str(tmp_path / "data"), "--json", str(out),
                 "--md", str(tmp_path / "v.md")]) == 0
    assert "pylance==14.0.2: 3 of 3 judged as it reads them" in capsys.readouterr().out
    assert len(json.loads(out.read_text())) == 3
    assert "3 of 3" in (tmp_path / "v.md").read_text()


@pytest.mark.compat
def test_judge_tables_with_lancedb_reads_a_database_table_by_name(tmp_path, capsys):
    py = _venv("lancedb==0.38.0")
    db = tmp_path / "db"
    program = ("import lancedb, pyarrow as pa, sys\n"
               "t = lancedb.connect(sys.argv[1]).create_table('users', pa.table({'id': "
               "list(range(20))}))\n"
               "t.add(pa.table({'id': [20, 21]}))\nt.delete('id < 5')\n"
               "import os; os._exit(0)\n")
    done = subprocess.run([str(py), "-c", program, str(db)], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    out = tmp_path / "v.json"
    code = main(["fixtures", "judge-tables", str(tmp_path), "--reader", "lancedb==0.38.0",
                 "--json", str(out)])
    text = capsys.readouterr().out
    assert code == 0, text
    (v,) = json.loads(out.read_text())
    assert v["writer"] == "lancedb==0.38.0" and v["scenario"].endswith("users.lance")
    assert [x["outcome"] for x in v["versions"]] == ["identical"] * 3


@pytest.mark.compat
def test_judge_tables_plain_accepts_lancedbs_blob_row_ids(tmp_path, capsys):
    """lancedb 0.38.0 read by default (``--plain``: ``to_arrow()``) adds ``_lance_row_id`` to
    each blob v2 descriptor, top-level or in a struct; with ``with_row_id(True)`` it does not.
    Both readings are judged as lancedb reads them, the first table version (created empty
    from a schema) too."""
    py = _venv("lancedb==0.38.0")
    db = tmp_path / "db"
    program = ("import lancedb, pyarrow as pa, sys\n"
               "db = lancedb.connect(sys.argv[1])\n"
               "schema = pa.schema([pa.field('id', pa.int64()), lancedb.blob('blob')])\n"
               "t = db.create_table('blobs', schema=schema)\n"
               "t.add([{'id': i, 'blob': b'x' * i} for i in range(1, 6)])\n"
               "t.delete('id = 2')\n"
               "info = pa.struct([pa.field('name', pa.string()), lancedb.blob('blob')])\n"
               "n = db.create_table('nested', schema=pa.schema([pa.field('id', pa.int64()),\n"
               "                                                pa.field('info', info)]))\n"
               "n.add([{'id': i, 'info': {'name': str(i), 'blob': b'y' * i}} for i in (1, 2)])\n"
               "import os; os._exit(0)\n")
    done = subprocess.run([str(py), "-c", program, str(db)], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    for plain in (True, False):
        work = tmp_path / f"work-{plain}"
        code = main(["fixtures", "judge-tables", str(db), "--reader", "lancedb==0.38.0",
                     "--work", str(work)] + (["--plain"] if plain else []))
        text = capsys.readouterr().out
        assert code == 0, text
        assert "2 of 2 judged as it reads them" in text
        (blobs,) = [p for p in work.iterdir() if p.name.endswith("blobs.lance")]
        last = pa.ipc.open_stream(str(blobs / "expected" / "v3.arrows")).read_all()
        assert (last.schema.field("blob").type.get_field_index("_lance_row_id") >= 0) is plain
        assert ("_rowid" in last.column_names) is not plain
        (nested,) = [p for p in work.iterdir() if p.name.endswith("nested.lance")]
        last = pa.ipc.open_stream(str(nested / "expected" / "v2.arrows")).read_all()
        inner = last.schema.field("info").type.field("blob").type
        assert (inner.get_field_index("_lance_row_id") >= 0) is plain


@pytest.mark.compat
def test_judge_tables_with_lancedb_reads_branches(tmp_path, capsys):
    """lancedb 0.38.0 reads a table's branches (``Table.branches``); a table moved after
    branching (upstream's test_table.py::test_open_table_with_branch*, harvested from its
    tmp folder) has branches it cannot read, which the kit's DATAFILE-001 agrees with."""
    import shutil

    py = _venv("lancedb==0.38.0")
    program = ("import lancedb, sys\n"
               "for db in sys.argv[1:]:\n"
               "    t = lancedb.connect(db).create_table('t', [{'i': 1}])\n"
               "    t.branches.create('exp').add([{'i': 2}])\n"
               "import os; os._exit(0)\n")
    done = subprocess.run([str(py), "-c", program, str(tmp_path / "kept" / "db"),
                           str(tmp_path / "before")], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    shutil.move(str(tmp_path / "before"), str(tmp_path / "moved" / "db"))
    got = {}
    for name in ("kept", "moved"):
        out = tmp_path / f"{name}.json"
        code = main(["fixtures", "judge-tables", str(tmp_path / name), "--reader",
                     "lancedb==0.38.0", "--json", str(out)])
        text = capsys.readouterr().out
        assert code == 0, text
        (v,) = json.loads(out.read_text())
        got[name] = {x["version"]: x["outcome"] for x in v["versions"]}
    assert got["kept"] == {1: "identical", "exp:1": "identical", "exp:2": "identical"}
    assert got["moved"] == {1: "identical", "exp:1": "flagged", "exp:2": "flagged"}


def _never_answers(conn, it, folder, deep):
    import threading

    threading.Event().wait()


def _dies(conn, it, folder, deep):
    os._exit(3)


def test_a_table_judged_past_the_time_limit_is_a_verdict_not_a_hang(tmp_path, pylance):
    """With a time limit each table is judged in a process of its own: the verdicts are the
    ones judged in this process, a judge that never answers is stopped at the limit
    (``judge-timed-out``), and one that dies is ``judge-crashed`` with its exit code."""
    pylance.write_dataset(ROWS.select(["id"]), str(tmp_path / "data" / "t"))
    items = found.find(tmp_path / "data")
    work = tmp_path / "work"
    found.read_back(Release.parse("pylance==14.0.2"), items, work, python=Path(sys.executable))
    here = found.judge(items, work)
    alone = found.judge(items, work, limit=300)
    assert [v.as_dict() for v in alone] == [v.as_dict() for v in here] and here[0].ok
    folder = work / items[0].name
    assert found._Judges(True, 1, target=_never_answers).judge(items[0], folder) is None
    died = found._Judges(True, 300, target=_dies).judge(items[0], folder)
    assert [x.outcome for x in died.versions] == ["judge-crashed"]
    assert "exit code 3" in died.versions[0].detail and not died.ok
