"""Validating the whole table: main, every branch under ``tree/`` (nested ones too) and every
tag under ``_refs/tags``, on the local file system and on S3 (moto); and the deep check of
``DataFile.fields`` against the field ids a data file stores itself (DATAFILE-008)."""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pyarrow as pa
import pytest

from conformance.cli import main
from conformance.engine import RefNotFound, access, merge, plan, run_data_file_item, validate
from conformance.engine.report import schema
from conformance.fixtures import golden
from conformance.fixtures.corruption import encode_manifest, split_manifest
from reference_impl.io.uri import open_store

ROOT = Path(__file__).resolve().parents[3]


def _rows(n: int, start: int = 0) -> pa.Table:
    return pa.table({"a": pa.array(range(start, start + n), pa.int64()),
                     "s": pa.array([f"v{i}" for i in range(start, start + n)])})


def write_branched(lance, uri: str, storage_options: dict | None = None) -> str:
    """main v1, v2 (tag ``v1`` -> main 1); ``dev`` from main 2 with an append (dev 3, tag
    ``ondev`` -> dev 3); ``dev/sub`` from dev 3 with a delete (dev/sub 4)."""
    opts = storage_options or None
    lance.write_dataset(_rows(4), uri, data_storage_version="2.1", storage_options=opts)
    ds = lance.write_dataset(_rows(3, 10), uri, mode="append", storage_options=opts)
    ds.tags.create("v1", 1)
    dev = ds.create_branch("dev", 2)
    dev.insert(_rows(2, 20))
    dev = lance.dataset(uri, storage_options=opts).checkout_version(("dev", None))
    assert dev.version == 3
    sub = dev.create_branch("dev/sub", 3)
    sub.delete("a = 1")
    ds = lance.dataset(uri, storage_options=opts)
    ds.tags.create("ondev", ("dev", 3))
    return uri


# -- damages, written through an ObjectStore so they apply on disk and on S3 alike ---------------

def _latest_key(store, prefix: str) -> str:
    return access.list_versions(store, f"{prefix}/_versions")[-1].key


def _truncate_branch_manifest(store, branch="dev"):
    key = _latest_key(store, f"tree/{branch}")
    store.put(key, store.get(key)[:-7])


def _garbage_branch_txn(store):
    key = _latest_key(store, "tree/dev")
    m, _idx, _txn = split_manifest(store.get(key))
    store.put(f"tree/dev/_transactions/{m.transaction_file}", b"\xff garbage, not a txn \x00" * 3)


def _base_id_without_base_path(store):
    key = _latest_key(store, "tree/dev")
    m, idx, txn = split_manifest(store.get(key))
    assert any(df.HasField("base_id") for f in m.fragments for df in f.files)  # inherited
    del m.base_paths[:]
    store.put(key, encode_manifest(m, index=idx, txn=txn))


def _tag_names_missing_version(store):
    key = "_refs/tags/ondev.json"
    doc = json.loads(store.get(key))
    doc["version"] = 42
    store.put(key, json.dumps(doc, indent=2).encode())


def _parent_version_gone(store):
    (entry,) = [e for e in access.list_versions(store) if e.version == 2]
    store.delete(entry.key)


DAMAGES = {
    # damage: (function, rules any of which names it, ref)
    "branch-manifest-truncated": (_truncate_branch_manifest, {"MANIFEST-001", "MANIFEST-002"},
                                  "branch:dev"),
    "nested-branch-manifest-truncated": (lambda s: _truncate_branch_manifest(s, "dev/sub"),
                                         {"MANIFEST-001", "MANIFEST-002"}, "branch:dev/sub"),
    "branch-txn-garbage": (_garbage_branch_txn, {"TXN-002"}, "branch:dev"),
    "branch-base-id-without-base-path": (_base_id_without_base_path, {"BASEPATH-002"},
                                         "branch:dev"),
    "tag-names-missing-version": (_tag_names_missing_version, {"REFS-002"}, "tag:ondev"),
    "branch-parent-version-gone": (_parent_version_gone, {"REFS-008"}, "branch:dev"),
}


def _rules_by_ref(report) -> set[tuple[str, str]]:
    return {(f.rule, f.location.get("ref")) for f in report.findings}


@pytest.fixture(scope="module")
def branched(tmp_path_factory, pylance) -> Path:
    return Path(write_branched(pylance, str(tmp_path_factory.mktemp("branched") / "ds")))


def _copy(src: Path, tmp_path: Path) -> Path:
    """A copy of a pylance table whose branches' base paths still name ``src`` (pylance
    records the main root's absolute path): inherited files are read from there."""
    dst = tmp_path / "copy"
    shutil.copytree(src, dst)
    return dst


# -- valid tables --------------------------------------------------------------------------------

def test_pylance_branched_table_conforms_on_every_ref(branched):
    report = validate(str(branched), versions="all", deep=True)
    assert report.conforms, report.render("text")
    assert not report.warnings, report.render("text")
    assert report.refs_checked == {"main": [1, 2], "branch:dev": [2, 3],
                                   "branch:dev/sub": [3, 4]}
    assert report.versions_checked == [1, 2]
    # the branch data files are deep-checked as items of their own
    p = plan(str(branched), versions="all", deep=True)
    assert {i.ref for i in p.items} == {"main", "branch:dev", "branch:dev/sub"}
    assert {i.branch for i in p.items} == {None, "dev", "dev/sub"}


def test_latest_of_each_ref_by_default(branched):
    report = validate(str(branched))
    assert report.refs_checked == {"main": [2], "branch:dev": [3], "branch:dev/sub": [4]}


def test_ref_option_narrows(branched):
    assert validate(str(branched), refs="main").refs_checked == {"main": [2]}
    assert validate(str(branched), refs="dev/sub", versions="all").refs_checked == {
        "branch:dev/sub": [3, 4]}
    assert validate(str(branched), refs="branch:dev").refs_checked == {"branch:dev": [3]}
    # a tag: its JSON rules and the version it names, on the branch it names
    assert validate(str(branched), refs="ondev").refs_checked == {"tag:ondev": [3]}
    assert validate(str(branched), refs="tag:v1").refs_checked == {"tag:v1": [1]}
    # explicit versions are main's unless a ref is named
    assert validate(str(branched), versions=[1]).refs_checked == {"main": [1]}
    assert validate(str(branched), versions=[2], refs="dev").refs_checked == {"branch:dev": [2]}
    with pytest.raises(RefNotFound):
        validate(str(branched), refs="nope")


def test_golden_branch_and_tag_cases_conform(pylance, tmp_path):
    for cid in ("branches", "tags", "shallow-clone"):
        table = golden.materialize(ROOT / "fixtures" / "golden" / cid, tmp_path / cid)
        report = validate(str(table), versions="all", deep=True)
        assert report.conforms, (cid, report.render("text"))
        if cid == "branches":
            assert "branch:dev" in report.refs_checked


def test_nested_branch_directories_are_not_unknown(pylance, tmp_path):
    """Branch ``a`` and branch ``a/b`` share ``tree/a``: ``b/`` inside a's root is the nested
    branch, not an unknown directory (LAYOUT-003)."""
    uri = str(tmp_path / "ds")
    ds = pylance.write_dataset(_rows(3), uri)
    a = ds.create_branch("a")
    a.create_branch("a/b")
    report = validate(uri, versions="all")
    assert report.conforms and not report.warnings, report.render("text")
    assert set(report.refs_checked) == {"main", "branch:a", "branch:a/b"}


def test_branch_root_opened_directly_is_labelled_as_the_branch(branched):
    report = validate(str(branched / "tree" / "dev"), versions="all", deep=True)
    assert report.refs_checked == {"branch:dev": [2, 3]}
    # tree/dev/sub is the nested branch's directory, not an unknown one (LAYOUT-003)
    assert report.conforms and not report.warnings, report.render("text")


def test_cleanup_keeps_the_version_a_branch_forks_from(pylance, tmp_path):
    """pylance's cleanup on main keeps the branch's parent version (without its .txn file,
    TXN-001's warning): REFS-008 holds."""
    import datetime

    uri = str(tmp_path / "ds")
    ds = pylance.write_dataset(_rows(3), uri)
    ds = pylance.write_dataset(_rows(3, 3), uri, mode="append")
    ds.create_branch("dev", 2).insert(_rows(2, 9))
    for start in (20, 30):
        ds = pylance.write_dataset(_rows(2, start), uri, mode="append")
    pylance.dataset(uri).cleanup_old_versions(older_than=datetime.timedelta(0))
    assert [v["version"] for v in pylance.dataset(uri).versions()] == [2, 4]
    report = validate(uri, versions="all", deep=True)
    assert report.conforms, report.render("text")
    assert report.rules_violated("warning") <= {"TXN-001"}
    assert "REFS-008" not in report.rules_violated(None)


@pytest.mark.parametrize("rule_id", ["REFS-008", "DATAFILE-011"])
def test_pylance_misses_the_new_rules(pylance, tmp_path, rule_id):
    """pylance 14.0.2 opens the fixture, reads every version of every ref and passes its own
    validate(); the validator reports the rule."""
    table = tmp_path / "t"
    shutil.copytree(ROOT / "fixtures" / "invalid" / rule_id / "table", table)
    ds = pylance.dataset(str(table))
    ds.validate()
    for v in ds.versions():
        pylance.dataset(str(table), version=v["version"]).to_table()
    for name in ds.branches.list():
        branch = ds.checkout_version((name, None))
        for v in branch.versions():
            ds.checkout_version((name, v["version"])).to_table()
    report = validate(str(table), versions="all", deep=True)
    assert rule_id in report.rules_violated(None), report.render("text")


# -- damages on local disk -----------------------------------------------------------------------

@pytest.mark.parametrize("damage", sorted(DAMAGES))
def test_damage_is_reported_with_its_ref(branched, tmp_path, damage):
    fn, rules, ref = DAMAGES[damage]
    table = _copy(branched, tmp_path)
    fn(open_store(str(table)))
    report = validate(str(table))
    found = _rules_by_ref(report)
    assert any((r, ref) in found for r in rules), report.render("text")
    # nothing is blamed on main for a damage outside it
    if ref != "main":
        assert not {r for r, where in found if where == "main"}, report.render("text")
    # the report says which ref in every format
    if any(f.severity == "error" for f in report.findings):
        assert main(["validate", str(table)]) == 1
    # --ref main does not look at the damaged ref
    assert not _rules_by_ref(validate(str(table), refs="main")) & {(r, ref) for r in rules}


def test_branch_manifest_naming_another_branch(branched, tmp_path):
    table = _copy(branched, tmp_path)
    store = open_store(str(table))
    key = _latest_key(store, "tree/dev/sub")
    m, idx, txn = split_manifest(store.get(key))
    m.branch = "dev"
    store.put(key, encode_manifest(m, index=idx, txn=txn))
    report = validate(str(table))
    assert ("REFS-005", "branch:dev/sub") in _rules_by_ref(report), report.render("text")


def test_parent_branch_without_file(branched, tmp_path):
    table = _copy(branched, tmp_path)
    key = table / "_refs" / "branches" / "dev%2Fsub.json"
    doc = json.loads(key.read_text())
    doc["parentBranch"] = "gone"
    key.write_text(json.dumps(doc, indent=2))
    report = validate(str(table))
    (f,) = [f for f in report.findings if f.rule == "REFS-008"]
    assert f.location["ref"] == "branch:dev/sub" and "gone" in f.message


def test_every_format_shows_the_ref(branched, tmp_path, capsys):
    table = _copy(branched, tmp_path)
    _truncate_branch_manifest(open_store(str(table)))
    report = validate(str(table))
    assert "[branch:dev]" in report.render("text")
    doc = json.loads(report.render("json"))
    jsonschema.validate(doc, schema())
    assert {v["location"]["ref"] for v in doc["violations"]} == {"branch:dev"}
    assert doc["refs_checked"]["main"] == [2]
    junit = ET.fromstring(report.render("junit"))
    assert any("[branch:dev]" in (f.text or "") for f in junit.iter("failure"))
    github = report.render("github")
    assert "title=MANIFEST-001 (branch%3Adev)" in github or \
        "title=MANIFEST-002 (branch%3Adev)" in github
    assert "[branch:dev]:" in github
    assert main(["validate", str(table), "--ref", "main"]) == 0
    assert main(["validate", str(table), "--ref", "dev"]) == 1
    assert main(["validate", str(table), "--ref", "nope"]) == 2
    assert "names no branch or tag" in capsys.readouterr().err


def test_inspect_lists_the_refs(branched, capsys):
    assert main(["inspect", str(branched), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["refs"] == [
        {"ref": "main", "versions": [1, 2]},
        {"ref": "branch:dev", "versions": [2, 3], "parent": "main:2"},
        {"ref": "branch:dev/sub", "versions": [3, 4], "parent": "dev:3"},
        {"ref": "tag:ondev", "target": "dev:3"},
        {"ref": "tag:v1", "target": "main:1"},
    ]
    assert main(["inspect", str(branched)]) == 0
    assert "branch:dev/sub (from dev:3): versions 3, 4" in capsys.readouterr().out


def test_plan_items_of_branches_pickle_and_merge(branched):
    import pickle

    p = plan(str(branched), versions="all", deep=True)
    items = [pickle.loads(pickle.dumps(i)) for i in p.items]
    report = merge(p, [run_data_file_item(i) for i in items])
    direct = validate(str(branched), versions="all", deep=True)
    assert [v.as_dict() for v in direct.findings] == [v.as_dict() for v in report.findings]
    assert direct.refs_checked == report.refs_checked


# -- damages on S3 (moto) ------------------------------------------------------------------------

# Damages that leave each other alone, so one copy of the table takes them all: the dev
# manifest is re-encoded without base paths (its transaction file name kept), the garbage
# goes into that transaction file, dev/sub's manifest is cut, the tag and main change apart.
TOGETHER = ("branch-base-id-without-base-path", "branch-txn-garbage",
            "nested-branch-manifest-truncated", "tag-names-missing-version",
            "branch-parent-version-gone")


@pytest.mark.s3
def test_branched_table_on_moto(pylance, s3_bucket):
    opts = s3_bucket.storage_options
    uri = f"{s3_bucket.uri}/ds"
    write_branched(pylance, uri, opts)
    report = validate(uri, deep=True, storage_options=opts)
    assert report.conforms, report.render("text")
    assert report.refs_checked == {"main": [2], "branch:dev": [3], "branch:dev/sub": [4]}
    src = s3_bucket.store("ds")
    keys = [i.key for i in src.list("")]
    for name, damages in (("together", TOGETHER), ("truncated", ("branch-manifest-truncated",))):
        copy = s3_bucket.store(f"copy-{name}")
        for k in keys:
            copy.put(k, src.get(k, max_size=1 << 26))
        for damage in damages:
            DAMAGES[damage][0](copy)
        report = validate(f"{s3_bucket.uri}/copy-{name}", storage_options=opts)
        found = _rules_by_ref(report)
        for damage in damages:
            _fn, rules, ref = DAMAGES[damage]
            assert any((r, ref) in found for r in rules), (damage, report.render("text"))


# -- DATAFILE-008: DataFile.fields against the data file (deep) ----------------------------------

def _edit_latest(uri: str, edit) -> None:
    store = open_store(uri)
    key = access.list_versions(store)[-1].key
    m, idx, txn = split_manifest(store.get(key))
    edit(m)
    store.put(key, encode_manifest(m, index=idx, txn=txn))


@pytest.mark.parametrize("fmt", ["2.0", "2.1", "2.2"])
def test_a_field_id_outside_the_schema_reads_as_nulls_in_both(pylance, tmp_path, fmt):
    """DataFile.fields naming id 7 (not in the schema) for the column of 's': no data file
    holds 's' any more, and both readers return nulls for it. FRAG-010 warns of the id; no
    schema of the table ever held 7 (a relabelled column, not a dropped field's): FRAG-013."""
    import reference_impl as ri

    uri = str(tmp_path / "ds")
    pylance.write_dataset(_rows(4), uri, data_storage_version=fmt)

    def edit(m):
        m.fragments[0].files[0].fields[1] = 7

    _edit_latest(uri, edit)
    assert pylance.dataset(uri).to_table()["s"].null_count == 4
    assert ri.open_dataset(uri).to_table() == pylance.dataset(uri).to_table()
    deep = validate(uri, deep=True)
    assert deep.rules_violated("error") == {"FRAG-013"}, deep.render("text")
    assert "FRAG-010" in deep.rules_violated("warning")


def test_swapped_field_ids_are_read_by_column_indices(pylance, tmp_path):
    """fields [0, 1] -> [1, 0] with column_indices [0, 1]: both readers take a's values from
    column 1 (the spec's column_indices decide); the file's own ids disagree (DATAFILE-011)."""
    import reference_impl as ri

    uri = str(tmp_path / "ds")
    pylance.write_dataset(pa.table({"a": pa.array([1, 2], pa.int64()),
                                    "b": pa.array([3, 4], pa.int64())}), uri,
                          data_storage_version="2.1")

    def edit(m):
        df = m.fragments[0].files[0]
        df.fields[0], df.fields[1] = df.fields[1], df.fields[0]

    _edit_latest(uri, edit)
    assert pylance.dataset(uri).to_table()["a"].to_pylist() == [3, 4]
    assert ri.open_dataset(uri).to_table() == pylance.dataset(uri).to_table()
    report = validate(uri, deep=True)
    assert report.conforms, report.render("text")
    assert "DATAFILE-011" in report.rules_violated("warning")


@pytest.mark.parametrize("fmt", ["2.0", "2.1", "2.2"])
def test_column_indices_onto_a_field_of_another_type_are_an_error(pylance, tmp_path, fmt):
    """column_indices [0, 1] -> [1, 0] puts the int64 'a' on the string column: pylance fails
    to decode it, the reader refuses it and the validator reports DATAFILE-008."""
    import reference_impl as ri
    from reference_impl.errors import FormatError

    uri = str(tmp_path / "ds")
    pylance.write_dataset(_rows(4), uri, data_storage_version=fmt)

    def edit(m):
        idx = m.fragments[0].files[0].column_indices
        idx[0], idx[1] = idx[1], idx[0]

    _edit_latest(uri, edit)
    with pytest.raises(Exception, match="(?i)invalid|corrupt|expected"):
        pylance.dataset(uri).to_table()
    with pytest.raises(FormatError) as err:
        ri.open_dataset(uri).to_table()
    assert err.value.rule == "DATAFILE-008"
    deep = validate(uri, deep=True)
    assert "DATAFILE-008" in deep.rules_violated(), deep.render("text")
    (f, *_rest) = [f for f in deep.violations if f.rule == "DATAFILE-008"]
    assert f.location["ref"] == "main"
    assert "DATAFILE-008" not in validate(uri).rules_violated(None)


@pytest.mark.parametrize("fmt", ["legacy", "2.0", "2.1", "2.2"])
def test_drop_columns_datasets_still_conform(pylance, tmp_path, fmt):
    """drop_columns leaves the dropped ids in DataFile.fields (the file still holds them)."""
    uri = str(tmp_path / "ds")
    tbl = pa.table({"a": pa.array(range(4), pa.int64()), "s": [f"x{i}" for i in range(4)],
                    "l": pa.array([[i, i] for i in range(4)], pa.list_(pa.int32()))})
    ds = pylance.write_dataset(tbl, uri, data_storage_version=fmt)
    ds.add_columns({"b": "a * 2"})
    pylance.dataset(uri).drop_columns(["s", "l"])
    m = split_manifest(open_store(uri).get(access.list_versions(open_store(uri))[-1].key))[0]
    assert {1} <= set(m.fragments[0].files[0].fields)  # the dropped id is still listed
    report = validate(uri, versions="all", deep=True)
    assert report.conforms, report.render("text")
    assert not {"DATAFILE-008", "DATAFILE-011"} & report.rules_violated(None)


@pytest.mark.parametrize("fmt", ["2.0", "2.1", "2.2"])  # (legacy: pylance refuses the append)
def test_a_file_holding_some_children_of_a_struct_conforms(pylance, tmp_path, fmt):
    """Appending ``{"b": 4}`` to a ``struct<b, a>`` column writes a file that holds ``stuff.b``
    alone (lancedb's test_table.py::test_add_struct; pylance 14.0.2 does the same): both
    readers give ``a`` as null. The reference reader refused it (DATAFILE-008, "mapped to a
    column that holds struct<b>"), comparing the shapes child by child by position."""
    import reference_impl as ri

    uri = str(tmp_path / "ds")
    schema = pa.schema([("stuff", pa.struct([("b", pa.int64()), ("a", pa.int64())]))])
    pylance.write_dataset(pa.Table.from_pylist([{"stuff": {"b": 1, "a": 2}}], schema=schema),
                          uri, data_storage_version=fmt)
    pylance.write_dataset(pa.table({"stuff": pa.array([{"b": 4}],
                                                      pa.struct([("b", pa.int64())]))}),
                          uri, mode="append")
    want = pylance.dataset(uri).to_table()
    assert want["stuff"].to_pylist() == [{"b": 1, "a": 2}, {"b": 4, "a": None}]
    assert ri.open_dataset(uri).to_table() == want
    report = validate(uri, versions="all", deep=True)
    assert report.conforms, report.render("text")
    assert not {"DATAFILE-008", "DATAFILE-011"} & report.rules_violated(None)


def _lance_file(pylance, path, table, fmt):
    from lance.file import LanceFileWriter

    writer = LanceFileWriter(path, table.schema, version=fmt)
    writer.write_batch(table)
    writer.close()


@pytest.mark.parametrize("fmt", ["2.0", "2.1", "2.2"])
def test_tombstone_and_data_replacement_conform(pylance, tmp_path, fmt):
    """DataReplacement with files from LanceFileWriter, as upstream's own tests make them:
    each file numbers its own fields from 0 and the manifest maps them by column_indices.
    'b' is replaced (its old entry keeps the tombstone -2), and an all-null struct column
    gets a file whose struct names its children otherwise (matched by position). Both
    readers read every version identically; DATAFILE-011 notes the file's ids."""
    from lance.fragment import DataFile

    import reference_impl as ri

    uri = str(tmp_path / "ds")
    st = pa.struct([("x", pa.int32()), ("y", pa.string())])
    ds = pylance.write_dataset(pa.table({"a": pa.array(range(3), pa.int64()),
                                         "b": pa.array(range(3), pa.int64())}), uri,
                               data_storage_version=fmt)
    ds.add_columns(pa.field("st", st))
    ds = pylance.dataset(uri)
    ids = {f.name(): (f.id(), [c.id() for c in f.children()]) for f in ds.lance_schema.fields()}
    major, minor = (int(p) for p in fmt.split("."))

    def replace(name, fields, columns, table):
        _lance_file(pylance, f"{uri}/data/{name}", table, fmt)
        op = pylance.LanceOperation.DataReplacement([pylance.LanceOperation.DataReplacementGroup(
            0, DataFile(name, fields, columns, major, minor))])
        return pylance.LanceDataset.commit(uri, op, read_version=pylance.dataset(uri).version)

    ds = replace("replacement-b.lance", [ids["b"][0]], [0],
                 pa.table({"b": pa.array([10, 11, 12], pa.int64())}))
    assert ds.to_table()["b"].to_pylist() == [10, 11, 12]
    files = split_manifest(open_store(uri).get(access.list_versions(open_store(uri))[-1].key))[0]
    assert list(files.fragments[0].files[0].fields) == [0, -2]
    other = pa.struct([("x2", pa.int32()), ("y2", pa.string())])
    st_id, leaves = ids["st"]
    fields = [st_id] + leaves if fmt == "2.0" else leaves  # 2.0 lists the struct's column too
    ds = replace("replacement-st.lance", fields, list(range(len(fields))), pa.table(
        {"other": pa.array([{"x2": i, "y2": f"y{i}"} for i in range(3)], other)}))
    assert ds.to_table()["st"].to_pylist()[1] == {"x": 1, "y": "y1"}
    for v in ds.versions():
        want = pylance.dataset(uri, version=v["version"]).to_table()
        assert ri.open_dataset(uri, version=v["version"]).to_table() == want, v["version"]
    report = validate(uri, versions="all", deep=True)
    assert report.conforms, report.render("text")
    assert "DATAFILE-011" in report.rules_violated("warning")


# -- the Spark engine gives the local engine's report, branch data files included ----------------

@pytest.fixture(scope="module")
def spark():
    from conformance.engine.spark_session import SparkUnavailable, get_session, stop_session
    from conformance.suite.parts import unavailable

    try:
        session = get_session("local[2]", app_name="lance-conformance-refs-tests")
    except SparkUnavailable as exc:
        unavailable("pyspark", str(exc))
    yield session
    stop_session()


@pytest.mark.spark
@pytest.mark.slow  # a Spark session of its own; test_spark's fixture comparison runs by default
def test_spark_engine_gives_the_same_report_on_every_ref(spark, branched, tmp_path):
    from conformance.engine.spark import validate as spark_validate

    damaged = _copy(branched, tmp_path)
    store = open_store(str(damaged))
    _garbage_branch_txn(store)
    _tag_names_missing_version(store)
    for table in (branched, damaged):
        local = validate(str(table), versions="all", deep=True).as_dict()
        dist = spark_validate(str(table), spark=spark, versions="all", deep=True,
                              partitions=3).as_dict()
        local.pop("elapsed_s"), dist.pop("elapsed_s")
        assert dist == local
        assert set(dist["refs_checked"]) == {"main", "branch:dev", "branch:dev/sub"}
    assert {v["location"]["ref"] for v in dist["violations"]} == {"branch:dev", "tag:ondev"}
