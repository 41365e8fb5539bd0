"""The validator end to end: pylance-written datasets conform, the engine's guarantees hold,
the ``validate`` command's exit codes, and the corruptions pylance 14.0.2 lets through."""

from __future__ import annotations

import json
import pickle
import shutil
from pathlib import Path

import pyarrow as pa
import pytest

from conformance.cli import main
from conformance.engine import DatasetNotFound, local, merge, plan, run_data_file_item, validate
from conformance.rules import registry

ROOT = Path(__file__).resolve().parents[3]
FIXTURES = ROOT / "fixtures" / "invalid"


def _table(n=3, start=0):
    return pa.table({"a": pa.array(range(start, start + n), pa.int64()),
                     "s": pa.array([f"v{i}" for i in range(start, start + n)]),
                     "st": pa.array([{"x": i, "y": [float(i)]} for i in range(n)]),
                     "l": pa.array([[i, i + 1] for i in range(n)], pa.list_(pa.int32()))})


@pytest.fixture(scope="module")
def datasets(tmp_path_factory, pylance):
    """Datasets written by pylance 14.0.2 in many shapes; every one must conform."""
    lance = pylance
    root = tmp_path_factory.mktemp("valid")
    out = {}
    for fmt in ("legacy", "2.0", "2.1", "2.2"):
        uri = str(root / f"fmt-{fmt}")
        tbl = _table()
        if fmt == "2.0":  # 2.0 refuses null structs: none here, but keep it simple
            tbl = tbl.drop_columns(["st"])
        lance.write_dataset(tbl, uri, data_storage_version=fmt)
        lance.write_dataset(tbl, uri, mode="append")
        out[fmt] = uri
    uri = str(root / "ops")
    lance.write_dataset(_table(), uri)
    ds = lance.write_dataset(_table(3, 10), uri, mode="append")
    ds.delete("a = 1")
    ds = lance.dataset(uri)
    ds.update({"s": "'u'"}, where="a = 11")
    ds = lance.dataset(uri)
    ds.add_columns({"b": "a * 2"})
    ds = lance.dataset(uri)
    ds.drop_columns(["l"])
    ds = lance.dataset(uri)
    ds.update_config({"k": "v"})
    ds = lance.dataset(uri)
    ds.tags.create("t", 2)
    ds.create_branch("dev/x")
    out["ops"] = uri
    uri = str(root / "rowids")
    lance.write_dataset(_table(), uri, enable_stable_row_ids=True)
    lance.dataset(uri).delete("a = 0")
    out["rowids"] = uri
    uri = str(root / "v1names")
    lance.write_dataset(_table(), uri, enable_v2_manifest_paths=False)
    lance.write_dataset(_table(), uri, mode="append")
    out["v1names"] = uri
    src = out["2.1"]
    clone = str(root / "clone")
    lance.dataset(src).shallow_clone(clone, 2)
    lance.write_dataset(_table(), clone, mode="append")
    out["clone"] = clone
    uri = str(root / "empty")
    lance.write_dataset(_table(), uri)
    lance.dataset(uri).delete("true")
    out["emptied"] = uri
    return out


@pytest.mark.parametrize("name", ["legacy", "2.0", "2.1", "2.2", "ops", "rowids", "v1names",
                                  "clone", "emptied"])
def test_pylance_datasets_conform(datasets, name):
    report = validate(datasets[name], versions="all", deep=True)
    assert report.conforms, report.render("text")
    # drop_columns leaves the dropped id in DataFile.fields (FRAG-010 records it)
    expected = {"ops": {"FRAG-010"}}.get(name, set())
    assert report.rules_violated("warning") == expected, report.render("text")
    assert report.versions_checked
    assert "ENGINE-001" not in report.rules_violated(None)


def test_branch_tree_validates_on_its_own(datasets):
    report = validate(datasets["ops"] + "/tree/dev/x", versions="all", deep=True)
    assert report.conforms, report.render("text")
    assert report.versions_checked


def test_latest_only_by_default(datasets):
    report = validate(datasets["ops"])
    assert len(report.versions_checked) == 1
    every = validate(datasets["ops"], versions="all")
    assert report.versions_checked == [max(every.versions_checked)]
    assert validate(datasets["ops"], versions=[1, 2]).versions_checked == [1, 2]


def test_missing_version_is_commit_005(datasets):
    report = validate(datasets["ops"], versions=[999])
    assert report.rules_violated() == {"COMMIT-005"}
    assert main(["validate", datasets["ops"], "--version", "999"]) == 1


def test_rule_selection_and_skip(datasets, tmp_path):
    case = str(FIXTURES / "FRAG-004" / "table")
    assert validate(case, rules=["FRAG-004"]).rules_checked == ["FRAG-004"]
    assert not validate(case, skip=["FRAG-004"]).rules_violated()
    skip = tmp_path / "skip.txt"
    skip.write_text("# accepted\nFRAG-004   # we know\n\n")
    assert main(["validate", case, "--skip-file", str(skip)]) == 0
    assert main(["validate", case, "--rules", "FRAG-004,FRAG-001"]) == 1
    assert main(["validate", case, "--rules", "NOPE-001"]) == 2


def test_engine_turns_exceptions_into_engine_001(datasets, monkeypatch):
    r = registry.get_rule("FRAG-001")

    def boom(ctx):
        raise ZeroDivisionError("kaboom")
        yield  # pragma: no cover

    monkeypatch.setitem(registry._RULES, "FRAG-001",
                        registry.Rule(**{**r.__dict__, "check": boom}))
    report = validate(datasets["2.1"])
    assert report.rules_violated() == {"ENGINE-001"}
    (v,) = report.violations
    assert "FRAG-001" in v.message and "ZeroDivisionError" in v.message
    assert v.location["rule"] == "FRAG-001"


def test_time_limit_is_engine_002(datasets, monkeypatch):
    """A rule that never finishes: the run ends at its time limit with ENGINE-002 (without
    the limit this call would block until the test's own timeout; no clock is compared)."""
    import threading

    r = registry.get_rule("FRAG-001")
    release = threading.Event()

    def stuck(ctx):
        release.wait()
        return ()

    monkeypatch.setitem(registry._RULES, "FRAG-001",
                        registry.Rule(**{**r.__dict__, "check": stuck}))
    try:
        report = validate(datasets["2.1"], timeout=0.5)
    finally:
        release.set()
    assert "ENGINE-002" in report.rules_violated()
    assert not report.conforms


OOM = "Unable to allocate 5.00 GiB for an array with shape (670994332,) and data type int64"


def _no_memory(*_args, **_kwargs):
    raise MemoryError(OOM)


def _out_of_memory_when_decoding(monkeypatch, fmt: str) -> list:
    """Make the decode of every data file of format ``fmt`` run out of memory (where the
    decoders allocate the arrays of a page); a counter of the attempts."""
    from reference_impl.file import arrow_types, legacy
    from reference_impl.file.encodings.v2_0 import _common

    calls = []

    def no_memory(*args, **kwargs):
        calls.append(1)
        _no_memory()

    if fmt == "legacy":
        monkeypatch.setattr(legacy._ColumnReader, "read", no_memory)
    elif fmt == "2.0":
        monkeypatch.setitem(_common.DECODERS, "flat", no_memory)
    else:
        monkeypatch.setattr(arrow_types, "leaf_array", no_memory)
    return calls


@pytest.mark.parametrize("fmt", ["legacy", "2.0", "2.1", "2.2"])
def test_out_of_memory_is_engine_003_not_a_format_finding(datasets, monkeypatch, fmt):
    """Running out of memory while decoding a valid data file says nothing of its bytes: the
    report says the file was not checked (ENGINE-003, once per file), never ENC-046 or any
    other format rule; the decode is attempted once per file, not once per rule."""
    calls = _out_of_memory_when_decoding(monkeypatch, fmt)
    report = validate(datasets[fmt], deep=True)
    assert report.rules_violated() == {"ENGINE-003"}, [
        f"{v.rule}: {v.message}" for v in report.violations]
    paths = [v.location.get("path") for v in report.violations]
    assert len(paths) == len(set(paths)) == 2  # the two fragments' data files, once each
    for v in report.violations:
        assert v.message.startswith("not checked: the validator ran out of memory"), v.message
        assert OOM in v.message and "data/" in v.location["path"]
    assert 0 < len(calls) <= len(paths) * (2 if fmt == "legacy" else 1)  # (data, stats)
    assert not report.conforms
    monkeypatch.undo()
    assert validate(datasets[fmt], deep=True).conforms  # and the files are fine


def test_out_of_memory_outside_the_decode_is_engine_003_too(datasets, monkeypatch):
    """A table-scope rule that runs out of memory is not checked either (ENGINE-003 at the
    table, naming no rule: the finding is the same whichever rule hit it)."""
    r = registry.get_rule("FRAG-001")
    monkeypatch.setitem(registry._RULES, "FRAG-001",
                        registry.Rule(**{**r.__dict__, "check": _no_memory}))
    report = validate(datasets["2.1"])
    assert report.rules_violated() == {"ENGINE-003"}
    (v,) = report.violations
    assert "rule" not in v.location and OOM in v.message


def test_plan_items_pickle_and_merge(datasets):
    p = plan(datasets["ops"], versions="all", deep=True)
    assert p.items, "deep plan lists data files"
    items = [pickle.loads(pickle.dumps(i)) for i in p.items]
    report = merge(p, [run_data_file_item(i) for i in items])
    assert report.conforms, report.render("text")
    direct = validate(datasets["ops"], versions="all", deep=True)
    assert [v.as_dict() for v in direct.findings] == [v.as_dict() for v in report.findings]
    assert direct.rules_checked == report.rules_checked


def test_no_deep_items_without_deep(datasets):
    assert plan(datasets["ops"], versions="all").items == []


def test_deterministic_report(datasets):
    case = str(FIXTURES / "SCHEMA-003" / "table")
    a = validate(case, versions="all").as_dict()
    b = validate(case, versions="all").as_dict()
    a.pop("elapsed_s"), b.pop("elapsed_s")
    assert a == b


def test_unreachable_is_exit_2(tmp_path, capsys):
    assert main(["validate", str(tmp_path / "missing")]) == 2
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["validate", str(empty)]) == 2
    with pytest.raises(DatasetNotFound):
        validate(str(empty))
    assert main(["validate", "bogus://x/y"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err


def test_unopenable_dataset_is_exit_1(tmp_path, capsys):
    (tmp_path / "ds" / "data").mkdir(parents=True)
    (tmp_path / "ds" / "data" / "x.lance").write_bytes(b"LANC")
    assert main(["validate", str(tmp_path / "ds")]) == 1
    assert "LAYOUT-001" in capsys.readouterr().out


def test_cli_formats_and_output(datasets, tmp_path, capsys):
    case = str(FIXTURES / "MANIFEST-001" / "table")
    out = tmp_path / "r.json"
    assert main(["validate", case, "--format", "json", "--output", str(out)]) == 1
    doc = json.loads(out.read_text())
    assert doc["conforms"] is False and doc["violations"][0]["rule"] == "MANIFEST-001"
    assert main(["validate", datasets["2.1"], "--format", "junit"]) == 0
    assert "<testsuite" in capsys.readouterr().out
    assert main(["validate", case, "--format", "github"]) == 1
    assert capsys.readouterr().out.startswith("::error ")
    assert main(["validate", datasets["2.1"], "--progress", "--all-versions", "--deep"]) == 0
    captured = capsys.readouterr()
    assert "versions" in captured.err and "CONFORMS" in captured.out


def test_storage_option_syntax(datasets):
    assert main(["validate", datasets["2.1"], "-o", "novalue"]) == 2
    assert main(["validate", datasets["2.1"], "--timeout", "-1"]) == 2
    assert main(["validate", datasets["2.1"], "--timeout", "60"]) == 0
    assert main(["validate", datasets["2.1"], "-o", "allow_http=true"]) == 0


def test_memory_store(datasets):
    from reference_impl.io.uri import open_store

    mem = open_store("memory://h6-validate/ds")
    src = Path(datasets["2.1"])
    for p in src.rglob("*"):
        if p.is_file():
            mem.put(p.relative_to(src).as_posix(), p.read_bytes())
    report = validate("memory://h6-validate/ds", versions="all")
    assert report.conforms, report.render("text")


# -- what pylance 14.0.2 lets through ----------------------------------------------------------

# Corruptions after which pylance 14.0.2 opens the dataset, reads every version
# (``to_table``), counts rows and passes its own ``ds.validate()`` without an error,
# while the validator reports the rule. Measured with the fixtures of fixtures/invalid/.
PYLANCE_MISSES = [
    "BASEPATH-001", "BASEPATH-003", "BASEPATH-004", "COMMIT-001", "COMMIT-002", "COMMIT-003",
    "COMMIT-004", "FLAGS-001", "FLAGS-003", "FLAGS-004", "FLAGS-005", "FLAGS-006", "FLAGS-007",
    "FRAG-002", "FRAG-003", "FRAG-005", "FRAG-010", "LAYOUT-002", "LAYOUT-003", "LAYOUT-006",
    "MANIFEST-008", "MANIFEST-009", "MANIFEST-010", "MANIFEST-011", "REFS-001", "REFS-002", "REFS-003",
    "REFS-004", "REFS-005", "REFS-006", "REFS-007", "SCHEMA-006", "TXN-001", "TXN-002",
    "TXN-003", "TXN-004", "TXN-005", "TXN-006",
]


@pytest.mark.parametrize("rule_id", PYLANCE_MISSES)
def test_pylance_misses_corruption(pylance, tmp_path, rule_id):
    table = tmp_path / "t"
    shutil.copytree(FIXTURES / rule_id / "table", table)
    ds = pylance.dataset(str(table))
    rows = ds.to_table().num_rows
    ds.validate()
    for v in ds.versions():
        pylance.dataset(str(table), version=v["version"]).to_table()
    assert ds.count_rows() == rows
    report = validate(str(table), versions="all")
    assert rule_id in report.rules_violated(None)


_ = local
