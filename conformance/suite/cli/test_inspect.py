"""``lance-conformance inspect``: the metadata tree of a dataset, checked against pylance."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pyarrow as pa
import pytest

from conformance.cli import main
from conformance.cli.inspect import inspect_dataset
from reference_impl.io.uri import open_store
from reference_impl.table import versions
from reference_impl.table.manifest import encode_manifest_file, read_manifest_file


def _run(capsys, *argv):
    code = main(["inspect", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_json_report_matches_pylance(pylance, pylance_scenarios, capsys):
    path = pylance_scenarios["scalar_index"]
    code, out, err = _run(capsys, path, "--json")
    assert code == 0, err
    r = json.loads(out)
    pl = pylance.dataset(path)
    assert [v["version"] for v in r["versions"]] == [v["version"] for v in pl.versions()]
    assert {v["naming"] for v in r["versions"]} == {"V2"}
    assert r["version"] == pl.version and r["count_rows"] == pl.count_rows()
    assert [f["id"] for f in r["fragments"]] == [f.fragment_id for f in pl.get_fragments()]
    assert [f["name"] for f in r["schema"] if f["parent_id"] == -1] == pl.schema.names
    assert all({"id", "logical_type", "nullable"} <= set(f) for f in r["schema"])
    df = r["fragments"][0]["data_files"][0]
    assert {"path", "fields", "column_indices", "file_version", "size", "base_id"} <= set(df)
    assert df["file_version"] == pl.data_storage_version
    idx = {i["name"]: i for i in r["indices"]}
    for d in pl.describe_indices():
        assert d.name in idx
    assert all(isinstance(i["fragment_bitmap"], list) and i["fragment_bitmap"] for i in r["indices"])
    assert r["transactions"][0]["operation"] == "overwrite"
    assert r["transactions"][-1]["operation"] == "create_index"
    assert r["unknown_fields"] == []


def test_tree_report_sections(pylance_scenarios, capsys):
    path = pylance_scenarios["delete_few"]
    code, out, _ = _run(capsys, path)
    assert code == 0
    for needle in ("versions", "schema", "fragments", "deletions", "ARROW_ARRAY",
                   "transactions", "feature flags: reader 1 ['DELETION_FILES']", "tags:",
                   "branches:", "indices:", "unknown protobuf fields"):
        assert needle in out, needle


def test_branches_tags_base_paths_and_rowids(pylance_scenarios):
    r = inspect_dataset(pylance_scenarios["branches"])
    info = pylance_scenarios.info("branches")
    assert set(r["branches"]) == set(info["branches"])
    assert set(r["tags"]) == set(info["tags"])
    b = sorted(info["branches"])[0]
    rb = inspect_dataset(pylance_scenarios["branches"], branch=b)
    assert rb["branch"] == b and rb["base_paths"]
    assert "BASE_PATHS" in rb["feature_flags"]["reader"]["names"]
    rs = inspect_dataset(pylance_scenarios["stable_row_ids"])
    rowids = [f["row_ids"] for f in rs["fragments"] if "row_ids" in f]
    assert rowids and all(x["segments"] >= 1 and x["segment_kinds"] for x in rowids)


def test_version_and_commit_message(pylance_scenarios, capsys):
    path = pylance_scenarios["commit_message"]
    code, out, _ = _run(capsys, path, "--version", "1", "--json")
    r = json.loads(out)
    assert code == 0 and r["version"] == 1
    assert [t["commit_message"] for t in r["transactions"]] == ["first commit", "second: append"]


def test_v1_naming_shown(pylance_scenarios):
    r = inspect_dataset(pylance_scenarios["v1_manifest_paths"])
    assert {v["naming"] for v in r["versions"]} == {"V1"}


def test_unknown_fields_shown(pylance, tmp_path, capsys):
    uri = str(tmp_path / "ds")
    pylance.write_dataset(pa.table({"a": [1]}), uri)
    store = open_store(uri)
    e = versions.latest_entry(store)
    mf = read_manifest_file(store, e.key)
    from reference_impl.proto import table_pb2

    m = table_pb2.Manifest()
    m.ParseFromString(mf.manifest.SerializeToString() + b"\xaa\x06\x03abc")  # field 101, wt 2
    store.put(e.key, encode_manifest_file(m, transaction=mf.transaction_bytes))
    code, out, _ = _run(capsys, uri, "--json")
    r = json.loads(out)
    assert code == 0
    assert r["unknown_fields"] == [{"where": "manifest", "field": 101, "wire_type": 2, "length": 3}]
    code, out, _ = _run(capsys, uri)
    assert "field 101 wire type 2 3 B" in out


def test_broken_dataset_exit_1(pylance, tmp_path, capsys):
    uri = str(tmp_path / "ds")
    pylance.write_dataset(pa.table({"a": [1]}), uri)
    e = versions.latest_entry(open_store(uri))
    with open(os.path.join(uri, e.key), "r+b") as fh:
        fh.seek(-4, 2)
        fh.write(b"XXXX")
    code, out, err = _run(capsys, uri)
    assert code == 1 and "MANIFEST-001" in err and "Traceback" not in err


@pytest.mark.parametrize("argv", [["/nonexistent/ds"], ["/tmp", "-o", "noequals"],
                                  ["unknown://x/y"], []])
def test_unreachable_and_usage_exit_2(argv, capsys):
    code, out, err = _run(capsys, *argv)
    assert code == 2 and "Traceback" not in err


def test_missing_version_exit_2(pylance_scenarios, capsys):
    code, _, err = _run(capsys, pylance_scenarios["append"], "--version", "99")
    assert code == 2 and "99" in err


def test_command_line_entry_point(pylance_scenarios):
    proc = subprocess.run([sys.executable, "-m", "conformance", "inspect",
                           pylance_scenarios["append"], "--json"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["versions"]
