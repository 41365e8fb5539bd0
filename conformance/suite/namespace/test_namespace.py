"""The directory namespace (spec 002) on our own implementation, and the NS-* rules.

Interop with pylance's ``DirectoryNamespace`` is in ``test_namespace_interop.py``.
"""

from __future__ import annotations

import os
import threading

import pyarrow as pa
import pytest

from conformance.cli import main
from conformance.engine.local import DatasetNotFound
from conformance.engine.namespace import validate_namespace
from reference_impl.errors import InvalidInput, NotFound
from reference_impl.io.uri import open_store
from reference_impl.namespace import (
    DirectoryNamespace,
    NamespaceAlreadyExists,
    NamespaceConfig,
    NamespaceNotEmpty,
    NamespaceNotFound,
    TableAlreadyExists,
    TableNotFound,
    UnsupportedOperation,
    connect,
    ids,
    v2,
)
from reference_impl.write import write_dataset

T = pa.table({"a": [1, 2, 3]})


def _ns(tmp_path, **kw) -> DirectoryNamespace:
    return DirectoryNamespace(str(tmp_path / "root"), **kw)


def _manifest_version(ns: DirectoryNamespace) -> int:
    return ns.manifest.version()


def _top_dirs(ns: DirectoryNamespace) -> set[str]:
    root = ns.root
    return set(os.listdir(root)) if os.path.isdir(root) else set()


def _ns_findings(root: str) -> dict[str, list[str]]:
    rep = validate_namespace(root)
    out: dict[str, list[str]] = {}
    for f in rep.findings:
        out.setdefault(f.rule, []).append(f.message)
    return out


# -- configuration ---------------------------------------------------------------------------
def test_config_root_forms(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert NamespaceConfig.from_properties({"root": "my/dir"}).root == str(tmp_path / "my/dir")
    assert NamespaceConfig.from_properties({"root": "./d3/"}).root == str(tmp_path / "d3")
    assert NamespaceConfig.from_properties({"root": "/abs/x/"}).root == "/abs/x"
    assert NamespaceConfig.from_properties({"root": "s3://b/prefix/"}).root == "s3://b/prefix"
    cfg = NamespaceConfig.from_properties({"root": "/r", "manifest_enabled": "false",
                                           "storage.region": "us-west-2", "commit_retries": "3"})
    assert cfg.manifest_enabled is False and cfg.dir_listing_enabled is True
    assert cfg.storage_options == {"region": "us-west-2"} and cfg.commit_retries == 3


def test_config_refuses_bad_values():
    with pytest.raises(InvalidInput):
        NamespaceConfig.from_properties({"manifest_enabled": "true"})
    with pytest.raises(InvalidInput):
        NamespaceConfig.from_properties({"root": "/r", "manifest_enabled": "yes"})
    with pytest.raises(InvalidInput):
        NamespaceConfig.from_properties({"root": "/r", "manifest_enabled": False,
                                         "dir_listing_enabled": False})


def test_storage_prefix_removed(tmp_path):
    ns = DirectoryNamespace(str(tmp_path), storage_options={"storage.region": "x", "plain": "y"})
    assert ns.storage_options == {"region": "x", "plain": "y"}
    ns2 = connect({"root": str(tmp_path), "storage.region": "x"})
    assert ns2.storage_options == {"region": "x"}


# -- ids -----------------------------------------------------------------------------------
@pytest.mark.parametrize("bad", ["", "a/b", "a$b", "..", "x..y", ".", "a\\b"])
def test_bad_names_refused(bad):
    with pytest.raises(InvalidInput):
        ids.validate_name(bad)


def test_object_ids_and_directories():
    assert ids.object_id(["ns1", "ns2", "t"]) == "ns1$ns2$t"
    assert ids.split_object_id("ns1$ns2$t") == ["ns1", "ns2", "t"]
    assert ids.parent_object_id("ns1$t") == "ns1" and ids.parent_object_id("t") == ""
    d = ids.v2_directory("ns1$t")
    m = ids.V2_DIR_PATTERN.match(d)
    assert m and m.group("object_id") == "ns1$t" and len(m.group("hash")) == 8
    assert ids.v1_directory("t") == "t.lance" and ids.v1_table_name("t.lance") == "t"
    assert ids.v1_table_name("__manifest") is None
    for bad in ("/abs", "s3://b/x", "../up", "a/../b", "a//b"):
        with pytest.raises(InvalidInput):
            ids.check_relative_location(bad)


# -- the __manifest table --------------------------------------------------------------------
def test_manifest_schema_as_pylance_writes_it(tmp_path):
    ns = _ns(tmp_path)
    ns.create_namespace(["a"])
    from reference_impl.table.manifest import read_manifest_file
    from reference_impl.table.versions import list_versions

    store = open_store(os.path.join(ns.root, "__manifest"))
    entries = list_versions(store)
    assert [e.version for e in entries] == [1, 2]
    m1 = read_manifest_file(store, entries[0].key)
    m2 = read_manifest_file(store, entries[1].key)
    assert m1.manifest.transaction_file and store.exists(f"_transactions/{m1.manifest.transaction_file}")
    assert m2.manifest.transaction_file == "" and m2.transaction.read_version == 1
    assert m2.transaction_field == 23 and m2.manifest.data_format.version == "2.2"
    assert [f.id for f in m2.manifest.fragments] == [0] and m2.manifest.max_fragment_id == 0
    fields = {f.name + str(f.parent_id): f for f in m2.manifest.fields}
    pk = fields["object_id-1"]
    assert pk.unenforced_primary_key and not pk.nullable
    assert pk.metadata["lance-schema:unenforced-primary-key:position"] == b"0"
    assert [f.name for f in m2.manifest.fields] == ["object_id", "object_type", "location",
                                                    "metadata", "base_objects", "object_id"]
    version, rows = ns.manifest.read()
    assert version == 2 and rows.schema.equals(v2.SCHEMA)


def test_metadata_json_compact():
    assert v2.encode_metadata({"k": 'v"q', "ü": "日本"}) == '{"k":"v\\"q","ü":"日本"}'
    assert v2.encode_metadata({}) is None and v2.encode_metadata(None) is None
    assert v2.decode_metadata('{"a":"b"}') == {"a": "b"}


# -- namespaces and tables -------------------------------------------------------------------
def test_nested_namespaces_and_tables(tmp_path):
    ns = _ns(tmp_path)
    ns.create_namespace(["sales"], properties={"owner": "me"})
    ns.create_namespace(["sales", "eu"])
    d = ns.create_table(["sales", "eu", "orders"], T)
    assert ids.V2_DIR_PATTERN.match(d.location).group("object_id") == "sales$eu$orders"
    r = ns.create_table(["root_t"], T)
    assert r.location == "root_t.lance"
    assert ns.list_namespaces([]) == ["sales"]
    assert ns.list_namespaces(["sales"]) == ["eu"]
    assert ns.list_tables(["sales", "eu"]) == ["orders"]
    assert ns.list_tables([]) == ["root_t"]
    assert ns.describe_namespace(["sales"]).properties == {"owner": "me"}
    assert ns.describe_namespace([]).properties == {}
    assert ns.open_table(["sales", "eu", "orders"]).to_table().column("a").to_pylist() == [1, 2, 3]
    assert ns.table_exists(["root_t"]) and not ns.table_exists(["sales", "nope"])
    with pytest.raises(NamespaceAlreadyExists):
        ns.create_namespace(["sales"])
    with pytest.raises(TableAlreadyExists):
        ns.create_table(["root_t"], T)


def test_create_modes(tmp_path):
    ns = _ns(tmp_path)
    ns.create_table(["t"], T)
    ns.create_table(["t"], pa.table({"a": [9]}), mode="exist_ok")
    assert ns.open_table(["t"]).to_table().num_rows == 3
    ns.create_table(["t"], pa.table({"a": [9]}), mode="overwrite")
    ds = ns.open_table(["t"])
    assert ds.version == 2 and ds.to_table().column("a").to_pylist() == [9]
    with pytest.raises(InvalidInput):
        ns.create_table(["t"], T, mode="append")


def test_drop_table_removes_row_and_directory(tmp_path):
    ns = _ns(tmp_path)
    ns.create_namespace(["n"])
    d = ns.create_table(["n", "t"], T)
    r = ns.create_table(["rt"], T)
    ns.drop_table(["n", "t"])
    ns.drop_table(["rt"])
    assert d.location not in _top_dirs(ns) and r.location not in _top_dirs(ns)
    assert ns.list_tables(["n"]) == [] and ns.list_tables([]) == []
    with pytest.raises(TableNotFound):
        ns.drop_table(["n", "t"])


def test_drop_namespace(tmp_path):
    ns = _ns(tmp_path)
    ns.create_namespace(["n"])
    ns.create_namespace(["n", "sub"])
    v = _manifest_version(ns)
    with pytest.raises(NamespaceNotEmpty):
        ns.drop_namespace(["n"])
    assert _manifest_version(ns) == v
    ns.drop_namespace(["n", "sub"])
    ns.drop_namespace(["n"])
    assert ns.list_namespaces([]) == []
    with pytest.raises(NamespaceNotFound):
        ns.drop_namespace(["n"])


@pytest.mark.parametrize("call", [
    lambda ns: ns.create_table(["bad/name"], T),
    lambda ns: ns.create_table(["bad$name"], T),
    lambda ns: ns.create_table([".."], T),
    lambda ns: ns.create_table([""], T),
    lambda ns: ns.create_table([], T),
    lambda ns: ns.create_table("t", T),
    lambda ns: ns.create_namespace(["a$b"]),
    lambda ns: ns.create_table(["missing", "t"], T),
    lambda ns: ns.declare_table(["missing", "t"]),
    lambda ns: ns.create_namespace(["missing", "child"]),
    lambda ns: ns.register_table(["r"], "/abs/path"),
    lambda ns: ns.register_table(["r"], "../outside"),
    lambda ns: ns.drop_namespace(["existing"]),
    lambda ns: ns.drop_namespace(["missing"]),
    lambda ns: ns.drop_table(["missing"]),
    lambda ns: ns.create_table(["existing", "t"], T),  # taken
    lambda ns: ns.create_namespace(["existing"]),
    lambda ns: ns.rename_table(["existing", "t"], ["missing", "t"]),
])
def test_refused_requests_change_nothing(tmp_path, call):
    ns = _ns(tmp_path)
    ns.create_namespace(["existing"])
    ns.create_table(["existing", "t"], T)
    version, dirs = _manifest_version(ns), _top_dirs(ns)
    with pytest.raises((InvalidInput, NotFound, TableAlreadyExists, NamespaceAlreadyExists)):
        call(ns)
    assert _manifest_version(ns) == version
    assert _top_dirs(ns) == dirs


def test_refused_request_on_fresh_root_creates_no_manifest(tmp_path):
    write_dataset(T, str(tmp_path / "sibling.lance"))  # beside the missing root
    ns = _ns(tmp_path)
    with pytest.raises(NamespaceNotFound):
        ns.create_table(["p", "t"], T)
    with pytest.raises(InvalidInput):
        ns.create_namespace(["a/b"])
    assert _top_dirs(ns) == set()
    assert ns.list_tables([]) == [] and ns.list_namespaces([]) == []


def test_declare_register_deregister(tmp_path):
    ns = _ns(tmp_path)
    ns.create_namespace(["n"])
    d = ns.declare_table(["n", "later"])
    assert d.declared_only
    marker = os.path.join(ns.root, d.location, ids.RESERVED_MARKER)
    assert open(marker, "rb").read() == b"reserved"
    assert ns.list_tables(["n"]) == ["later"]
    assert ns.list_tables(["n"], include_declared=False) == []
    ns.create_table(["n", "later"], T)  # a declared table gets its data in place
    assert not ns.describe_table(["n", "later"]).declared_only
    assert ns.list_tables(["n"], include_declared=False) == ["later"]

    write_dataset(T, os.path.join(ns.root, "elsewhere"))
    ns.register_table(["n", "reg"], "elsewhere")
    assert ns.describe_table(["n", "reg"]).location == "elsewhere"
    with pytest.raises(TableAlreadyExists):
        ns.register_table(["n", "reg"], "elsewhere")
    ns.deregister_table(["n", "reg"])
    assert "reg" not in ns.list_tables(["n"])
    assert os.path.isdir(os.path.join(ns.root, "elsewhere"))


def test_table_properties_stored_in_metadata(tmp_path):
    ns = _ns(tmp_path)
    ns.create_table(["t"], T, properties={"owner": "me"})
    assert ns.describe_table(["t"]).properties == {"owner": "me"}
    row = v2.find(ns.manifest.read()[1], "t")
    assert row.metadata == '{"owner":"me"}'


# -- rename ----------------------------------------------------------------------------------
def test_rename_root_v1_table_moves_to_v2_path(tmp_path):
    ns = _ns(tmp_path)
    ns.create_namespace(["n"])
    ns.create_table(["old"], T)
    d = ns.rename_table(["old"], ["new"])
    assert ids.V2_DIR_PATTERN.match(d.location).group("object_id") == "new"
    assert "old.lance" not in _top_dirs(ns)
    assert ns.list_tables([]) == ["new"]
    assert ns.open_table(["new"]).to_table().num_rows == 3
    d2 = ns.rename_table(["new"], ["n", "moved"])  # a V2 directory stays where it is
    assert d2.location == d.location
    assert ns.list_tables([]) == [] and ns.list_tables(["n"]) == ["moved"]
    ns.create_table(["x"], T)
    with pytest.raises(TableAlreadyExists):
        ns.rename_table(["x"], ["n", "moved"])
    assert not _ns_findings(ns.root).get("NS-005")


# -- compatibility mode, V1 only, V2 only, migration ------------------------------------------
def test_compatibility_mode_merges_listing(tmp_path):
    root = tmp_path / "root"
    write_dataset(T, str(root / "ext.lance"))
    ns = DirectoryNamespace(str(root))
    ns.create_table(["mine"], T)
    assert ns.list_tables([]) == ["ext", "mine"]
    assert ns.describe_table(["ext"]).location == "ext.lance"
    with pytest.raises(TableAlreadyExists):
        ns.create_table(["ext"], T)
    ns.register_table(["alias"], "ext.lance")  # de-duplicated by location
    assert ns.list_tables([]) == ["alias", "mine"]


def test_v2_only_mode(tmp_path):
    root = tmp_path / "root"
    write_dataset(T, str(root / "ext.lance"))
    ns = DirectoryNamespace(str(root), dir_listing_enabled=False)
    d = ns.create_table(["t"], T)
    assert ids.V2_DIR_PATTERN.match(d.location)
    assert ns.list_tables([]) == ["t"]
    with pytest.raises(TableNotFound):
        ns.describe_table(["ext"])


def test_v1_only_mode(tmp_path):
    ns = _ns(tmp_path, manifest_enabled="false")
    d = ns.create_table(["t"], T)
    assert d.location == "t.lance" and "__manifest" not in _top_dirs(ns)
    assert ns.list_tables([]) == ["t"]
    for call in (lambda: ns.create_namespace(["n"]), lambda: ns.create_table(["n", "t"], T),
                 lambda: ns.list_tables(["n"]),
                 lambda: ns.create_table(["p"], T, properties={"a": "b"})):
        with pytest.raises(UnsupportedOperation):
            call()
    ns.deregister_table(["t"])
    assert ns.list_tables([]) == []
    assert os.path.exists(os.path.join(ns.root, "t.lance", ids.DEREGISTERED_MARKER))
    ns.create_table(["u"], T)
    ns.drop_table(["u"])
    assert "u.lance" not in _top_dirs(ns)


def test_migration_v1_to_v2(tmp_path):
    root = tmp_path / "root"
    write_dataset(T, str(root / "a.lance"))
    write_dataset(T, str(root / "b.lance"))
    ns = DirectoryNamespace(str(root))
    ns.create_table(["c"], T)
    assert ns.migrate() == ["a", "b"]
    assert ns.migrate() == []
    v2_only = DirectoryNamespace(str(root), dir_listing_enabled=False)
    assert v2_only.list_tables([]) == ["a", "b", "c"]
    assert v2_only.open_table(["a"]).to_table().num_rows == 3


# -- concurrency -----------------------------------------------------------------------------
def test_concurrent_distinct_creates_all_survive(tmp_path):
    ns_root = str(tmp_path / "root")
    DirectoryNamespace(ns_root).create_namespace(["n"])
    errors = []

    def worker(w):
        ns = DirectoryNamespace(ns_root)
        try:
            for i in range(3):
                ns.create_namespace(["n", f"w{w}_{i}"])
        except Exception as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors
    assert len(DirectoryNamespace(ns_root).list_namespaces(["n"])) == 12


def test_concurrent_same_create_one_winner_threads(tmp_path):
    ns_root = str(tmp_path / "root")
    DirectoryNamespace(ns_root).create_namespace(["n"])
    barrier = threading.Barrier(4)
    outcomes = []

    def worker():
        ns = DirectoryNamespace(ns_root)
        barrier.wait()
        try:
            ns.create_table(["n", "same"], pa.table({"a": [1]}))
            outcomes.append("ok")
        except TableAlreadyExists:
            outcomes.append("exists")

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert sorted(outcomes) == ["exists", "exists", "exists", "ok"]
    hashed = [d for d in os.listdir(ns_root) if d.endswith("_n$same")]
    assert len(hashed) == 1  # the losers removed their own directories


# -- rules: positive ---------------------------------------------------------------------------
def test_our_namespace_conforms(tmp_path):
    ns = _ns(tmp_path)
    ns.create_namespace(["n"], properties={"k": "v"})
    ns.create_table(["n", "t"], T)
    ns.create_table(["r"], T)
    ns.declare_table(["n", "d"])
    rep = validate_namespace(ns.root, deep=True)
    assert rep.conforms, rep.render("text")
    assert not rep.warnings, rep.render("text")
    assert {f"NS-{i:03d}" for i in range(1, 14)} <= set(rep.rules_checked)


# -- rules: negatives ------------------------------------------------------------------------
def _write_rows(tmp_path, rows) -> str:
    root = tmp_path / "root"
    ns = DirectoryNamespace(str(root))
    ns.manifest.ensure_created()
    ns.manifest._write_version(2, v2.make_rows(rows), ns.manifest._previous_manifest(1))
    return str(root)


def _table_dir(tmp_path, name):
    write_dataset(T, str(tmp_path / "root" / name))


@pytest.mark.parametrize("rule_id, rows, make_dirs", [
    ("NS-003", [("t", "table", "t.lance", None), ("t", "table", "t.lance", None)], ["t.lance"]),
    ("NS-004", [("x", "view", None, None)], []),
    ("NS-005", [("t", "table", None, None)], []),
    ("NS-005", [("t", "table", "t.lance", None)], []),
    ("NS-006", [("n", "namespace", "n.lance", None)], []),
    ("NS-007", [("p$t", "table", "abcdef01_p$t", None)], ["abcdef01_p$t"]),
    ("NS-008", [("t", "table", "../t.lance", None)], []),
    ("NS-008", [("t", "table", "/abs/t.lance", None)], []),
    ("NS-009", [("n", "namespace", None, "{not json")], []),
    ("NS-009", [("n", "namespace", None, "[1, 2]")], []),
    ("NS-010", [("t", "table", "somewhere", None)], ["somewhere"]),
    ("NS-013", [("a$$b", "namespace", None, None)], []),
])
def test_rule_negative(tmp_path, rule_id, rows, make_dirs):
    for d in make_dirs:
        _table_dir(tmp_path, d)
    root = _write_rows(tmp_path, rows)
    found = _ns_findings(root)
    assert rule_id in found, found


@pytest.mark.parametrize("rule_id, rows, make_dirs", [
    ("NS-003", [("t", "table", "t.lance", None), ("u", "table", "u.lance", None)],
     ["t.lance", "u.lance"]),
    ("NS-004", [("x", "namespace", None, None)], []),
    ("NS-005", [("t", "table", "t.lance", None)], ["t.lance"]),
    ("NS-006", [("n", "namespace", None, None)], []),
    ("NS-007", [("p", "namespace", None, None), ("p$t", "table", "abcdef01_p$t", None)],
     ["abcdef01_p$t"]),
    ("NS-008", [("t", "table", "t.lance", None)], ["t.lance"]),
    ("NS-009", [("n", "namespace", None, '{"a":"b"}')], []),
    ("NS-010", [("t", "table", "0123abcd_t", None)], ["0123abcd_t"]),
    ("NS-013", [("a", "namespace", None, None), ("a$b", "namespace", None, None)], []),
])
def test_rule_positive(tmp_path, rule_id, rows, make_dirs):
    for d in make_dirs:
        _table_dir(tmp_path, d)
    root = _write_rows(tmp_path, rows)
    found = _ns_findings(root)
    assert rule_id not in found, found


def test_ns001_ns002_wrong_schema(tmp_path):
    root = tmp_path / "root"
    bad = pa.table({"object_id": pa.array(["t"], pa.utf8()),
                    "object_type": pa.array([1], pa.int32())})
    write_dataset(bad, str(root / "__manifest"))
    found = _ns_findings(str(root))
    assert any("object_type" in m for m in found["NS-001"])
    assert any("location" in m for m in found["NS-001"])
    assert found["NS-002"]


def test_ns012_unreadable_manifest(tmp_path):
    ns = _ns(tmp_path)
    ns.create_namespace(["n"])
    vdir = os.path.join(ns.root, "__manifest", "_versions")
    latest = sorted(f for f in os.listdir(vdir) if f.endswith(".manifest"))[0]
    with open(os.path.join(vdir, latest), "r+b") as fh:
        fh.truncate(10)
    found = _ns_findings(ns.root)
    assert found.get("NS-012")
    ok = _ns(tmp_path / "other")
    ok.create_namespace(["n"])
    assert "NS-012" not in _ns_findings(ok.root)


def test_ns011_partial_indexes(tmp_path):
    from reference_impl.proto import table_pb2
    from reference_impl.table import layout
    from reference_impl.table.commit import load_version
    from reference_impl.table.manifest import encode_manifest_file

    ns = _ns(tmp_path)
    ns.create_namespace(["n"])
    store = open_store(os.path.join(ns.root, "__manifest"))
    mf = load_version(store, 2)
    m = table_pb2.Manifest()
    m.CopyFrom(mf.manifest)
    m.version = 3
    idx = table_pb2.IndexMetadata(name="object_id_btree", fields=[0], dataset_version=3)
    idx.uuid.uuid = os.urandom(16)
    idx.index_details.type_url = "/lance.table.BTreeIndexDetails"
    data = encode_manifest_file(m, transaction=mf.transaction,
                                index_section=table_pb2.IndexSection(indices=[idx]))
    store.put_if_not_exists(layout.manifest_key(3, layout.SCHEME_V2), data)
    found = _ns_findings(ns.root)
    msgs = found.get("NS-011", [])
    assert any("object_type" in m for m in msgs) and any("base_objects" in m for m in msgs)
    assert not any("on object_id" in m for m in msgs)


# -- the CLI ---------------------------------------------------------------------------------
def test_cli_validate_namespace(tmp_path, capsys):
    ns = _ns(tmp_path)
    ns.create_namespace(["n"])
    ns.create_table(["n", "t"], T)
    assert main(["validate", "--namespace", ns.root]) == 0
    bad = _write_rows(tmp_path / "bad", [("x", "view", None, None)])
    assert main(["validate", "--namespace", bad, "--format", "json"]) == 1
    assert "NS-004" in capsys.readouterr().out
    with pytest.raises(DatasetNotFound):
        validate_namespace(str(tmp_path / "missing"))
    (tmp_path / "empty").mkdir()
    assert main(["validate", "--namespace", str(tmp_path / "empty")]) == 2
    with pytest.raises(DatasetNotFound):
        validate_namespace(str(tmp_path / "empty"))


def test_hostile_location_is_refused_not_followed(tmp_path):
    from reference_impl.errors import FormatError

    outside = tmp_path / "outside.lance"
    write_dataset(T, str(outside))
    root = _write_rows(tmp_path, [("t", "table", "../outside.lance", None)])
    ns = DirectoryNamespace(root)
    for call in (lambda: ns.describe_table(["t"]), lambda: ns.drop_table(["t"]),
                 lambda: ns.open_table(["t"])):
        with pytest.raises(FormatError) as info:
            call()
        assert info.value.rule == "NS-008"
    assert (outside / "_versions").is_dir()


def test_memory_root():
    import uuid

    ns = DirectoryNamespace(f"memory://ns-{uuid.uuid4().hex}/root")
    ns.create_namespace(["a"])
    d = ns.create_table(["a", "t"], T)
    assert ns.list_tables(["a"]) == ["t"]
    ns.drop_table(["a", "t"])
    assert ns.list_tables(["a"]) == []
    assert not any(True for _ in ns.store.list(d.location + "/"))


def test_compat_deregister_hides_v1_directory(tmp_path):
    ns = _ns(tmp_path)
    ns.create_table(["t"], T)
    ns.deregister_table(["t"])
    assert ns.list_tables([]) == [] and not ns.table_exists(["t"])
    assert os.path.isdir(os.path.join(ns.root, "t.lance", "_versions"))
    assert v2.find(ns.manifest.read()[1], "t") is None


def test_ids_taken_by_the_other_kind(tmp_path):
    ns = _ns(tmp_path)
    ns.create_namespace(["n"])
    ns.create_table(["t"], T)
    with pytest.raises(TableAlreadyExists):
        ns.create_table(["n"], T)
    with pytest.raises(NamespaceAlreadyExists):
        ns.create_namespace(["t"])
    with pytest.raises(NamespaceNotFound):
        ns.describe_namespace(["t"])
    with pytest.raises(TableNotFound):
        ns.describe_table(["n"])


# -- a model-based soak run (slow) -------------------------------------------------------------
@pytest.mark.slow
def test_operation_scripts_match_a_model(tmp_path):
    """Random scripts of namespace operations against a dict model; the namespace stays
    valid for our validator throughout."""
    import itertools

    from hypothesis import given, settings
    from hypothesis import strategies as st

    counter = itertools.count()
    names = st.sampled_from(["a", "b", "c"])
    op = st.tuples(st.sampled_from(["create_ns", "create_t", "drop_t", "drop_ns", "rename"]),
                   st.lists(names, min_size=1, max_size=2), st.lists(names, min_size=1, max_size=2))

    @settings(max_examples=25, deadline=None)
    @given(st.lists(op, min_size=1, max_size=12), st.booleans())
    def run(script, listing):
        ns = DirectoryNamespace(str(tmp_path / f"r{next(counter)}"), dir_listing_enabled=listing)
        model: dict[str, str] = {}  # object id -> "namespace" | "table"

        def parent_ok(parts):
            return len(parts) == 1 or model.get(ids.object_id(parts[:-1])) == "namespace"

        for kind, parts, other in script:
            oid, ooid = ids.object_id(parts), ids.object_id(other)
            if kind == "create_ns":
                ok = parent_ok(parts) and oid not in model
                effect = {oid: "namespace"}
            elif kind == "create_t":
                ok = parent_ok(parts) and oid not in model
                effect = {oid: "table"}
            elif kind == "drop_t":
                ok = model.get(oid) == "table"
                effect = {oid: None}
            elif kind == "drop_ns":
                ok = model.get(oid) == "namespace" and not any(
                    k.startswith(oid + "$") for k in model)
                effect = {oid: None}
            else:
                ok = model.get(oid) == "table" and parent_ok(other) and ooid not in model
                effect = {oid: None, ooid: "table"}
            call = {"create_ns": lambda p, o: ns.create_namespace(p),
                    "create_t": lambda p, o: ns.create_table(p, T),
                    "drop_t": lambda p, o: ns.drop_table(p),
                    "drop_ns": lambda p, o: ns.drop_namespace(p),
                    "rename": lambda p, o: ns.rename_table(p, o)}[kind]
            if ok:
                call(parts, other)
                for k, v in effect.items():
                    if v is None:
                        model.pop(k, None)
                    else:
                        model[k] = v
            else:
                with pytest.raises((InvalidInput, NotFound, TableAlreadyExists,
                                    NamespaceAlreadyExists)):
                    call(parts, other)
        for parent in [[]] + [ids.split_object_id(k) for k, v in model.items() if v == "namespace"]:
            want_t = sorted(ids.split_object_id(k)[-1] for k, v in model.items()
                            if v == "table" and ids.split_object_id(k)[:-1] == parent)
            want_n = sorted(ids.split_object_id(k)[-1] for k, v in model.items()
                            if v == "namespace" and ids.split_object_id(k)[:-1] == parent)
            assert ns.list_tables(parent) == want_t
            assert ns.list_namespaces(parent) == want_n
        if ns.manifest.version():
            rep = validate_namespace(ns.root)
            assert rep.conforms and not rep.warnings, rep.render("text")

    run()
