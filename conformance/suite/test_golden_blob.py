"""The golden case ``blob-v2`` and blob bytes as a harness capability.

The case's reads return descriptors (checked like every read) and its
``expected/blobs-v{N}.json`` the bytes behind them as size + sha256. The reference, pylance
and subprocess adapters read them right; an adapter returning other bytes FAILs, one that
does not declare the feature ``blobs`` is UNSUPPORTED.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from conformance import golden
from conformance.harness import runner
from conformance.harness.adapter import Capabilities
from conformance.harness.reference import ReferenceAdapter

CASE = Path(__file__).resolve().parents[2] / "fixtures" / "golden" / "blob-v2"
EXAMPLE = Path(__file__).resolve().parents[2] / "conformance" / "harness" / "examples" / "subprocess_reader.py"


def test_case_ships_descriptors_and_blob_digests():
    doc = golden.load_case(CASE)
    assert not golden.check_case_json(doc)
    assert [r["blobs"] for r in doc["reads"]] == ["blobs-v1.json", "blobs-v2.json", "blobs-v3.json"]
    last = json.loads((CASE / "expected" / "blobs-v3.json").read_text())["blob"]
    rows = golden.read_arrow(CASE / "expected" / "v3.arrow")
    assert len(last) == rows.num_rows == 9  # 7 + 3 appended - 1 deleted
    kinds = [None if d is None else d["kind"] for d in rows.column("blob").to_pylist()]
    assert set(kinds) == {0, 1, 2, None}
    assert [d is None for d in last] == [k is None for k in kinds]
    assert golden.blob_digests([b"", None]) == [
        {"size": 0, "sha256": "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"}, None]


def test_case_verifies(pylance):
    assert golden.verify_case(CASE, regenerate=False) == []


@pytest.mark.parametrize("name", ["reference", "pylance"])
def test_builtin_adapters_pass(tmp_path, pylance, name):
    from conformance.harness.adapter import load_adapter

    res = runner.run_read_case(load_adapter(name), CASE, tmp_path)
    assert res.outcome == "PASS", res.message


def test_subprocess_adapter_passes(tmp_path):
    from conformance.harness.subprocess_adapter import SubprocessAdapter

    with SubprocessAdapter([sys.executable, str(EXAMPLE)]) as adapter:
        assert "blobs" in adapter.capabilities.features
        res = runner.run_read_case(adapter, CASE, tmp_path)
    assert res.outcome == "PASS", res.message


class _WrongBytes(ReferenceAdapter):
    """Reads the descriptors right, returns every blob one byte short."""

    name = "wrong-blob-bytes"

    def take_blobs(self, uri, version, column, indices):
        return [None if b is None else b[:-1] for b in super().take_blobs(uri, version, column, indices)]


class _NoBlobs(ReferenceAdapter):
    name = "no-blobs"
    capabilities = Capabilities(read=True, row_ids=True, features=("legacy",))


def test_wrong_bytes_fail_and_missing_capability_is_unsupported(tmp_path):
    res = runner.run_read_case(_WrongBytes(), CASE, tmp_path)
    assert res.outcome == "FAIL" and "HARNESS-003" in res.rules and "blob column 'blob'" in res.message
    res = runner.run_read_case(_NoBlobs(), CASE, tmp_path)
    assert res.outcome == "UNSUPPORTED" and "rows match" in res.message
