"""``lance-conformance dump``: Arrow IPC and JSON lines output of a dataset scan."""

from __future__ import annotations

import base64
import datetime
import decimal
import json

import pyarrow as pa
import pytest

from conformance.cli import main
from conformance.cli.dump import encode_array
from conformance.strategies.arrow import same_table


def _table():
    return pa.table(
        {
            "i": pa.array([1, None, 2**63 - 1], pa.int64()),
            "u": pa.array([2**64 - 1, 0, 7], pa.uint64()),
            "f": pa.array([float("nan"), -0.0, float("inf")], pa.float64()),
            "d": pa.array(
                [decimal.Decimal("-12.340"), None, decimal.Decimal("0.001")], pa.decimal128(10, 3)
            ),
            "s": pa.array(["é", None, ""]),
            "b": pa.array([b"\x00\xff", None, b""], pa.binary()),
            "ts": pa.array([1_700_000_000_123_456, None, 0], pa.timestamp("us", tz="UTC")),
            "dt": pa.array([datetime.date(2024, 2, 29), None, datetime.date(1970, 1, 1)]),
            "t": pa.array([3_723_004, None, 0], pa.time32("ms")),
            "l": pa.array([[1, None], None, []], pa.list_(pa.int32())),
            "st": pa.array(
                [{"x": 1, "y": "a"}, {"x": None, "y": None}, {"x": 3, "y": "c"}],
                pa.struct([("x", pa.int16()), ("y", pa.string())]),
            ),
            "fsl": pa.array([[1.5, 2.5], None, [0.0, -1.0]], pa.list_(pa.float32(), 2)),
        }
    )


@pytest.fixture()
def dataset(pylance, tmp_path):
    path = tmp_path / "d"
    ds = pylance.write_dataset(_table(), str(path), data_storage_version="2.0")
    ds.delete("u = 0")
    return path


def test_dump_arrow_equals_pylance(pylance, dataset, tmp_path):
    out = tmp_path / "o.arrow"
    assert (
        main(["dump", str(dataset), "--with-row-id", "--with-row-address", "--out", str(out)]) == 0
    )
    got = pa.ipc.open_file(str(out)).read_all()
    expected = pylance.dataset(str(dataset)).to_table(with_row_id=True, with_row_address=True)
    assert same_table(got, expected)


def test_dump_jsonl_value_encoding(dataset, tmp_path):
    out = tmp_path / "o.jsonl"
    assert main(["dump", str(dataset), "--version", "1", "--out", str(out)]) == 0
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == 3
    first, second, third = rows
    assert list(first) == [f.name for f in _table().schema]
    assert first["i"] == 1 and third["i"] == 2**63 - 1 and first["u"] == 2**64 - 1
    assert first["f"] == "NaN" and third["f"] == "Infinity"
    assert second["f"] == 0.0 and str(second["f"]) == "-0.0"
    assert first["d"] == "-12.340" and second["d"] is None
    assert first["s"] == "é" and third["s"] == ""
    assert base64.b64decode(first["b"]) == b"\x00\xff" and third["b"] == ""
    assert (
        first["ts"] == "2023-11-14T22:13:20.123456Z"
        and third["ts"] == "1970-01-01T00:00:00.000000Z"
    )
    assert first["dt"] == "2024-02-29"
    assert first["t"] == "01:02:03.004"
    assert first["l"] == [1, None] and second["l"] is None and third["l"] == []
    assert first["st"] == {"x": 1, "y": "a"} and second["st"] == {"x": None, "y": None}
    assert first["fsl"] == [1.5, 2.5] and second["fsl"] is None


def test_dump_columns_and_version(pylance, dataset, tmp_path):
    out = tmp_path / "o.jsonl"
    assert main(["dump", str(dataset), "--columns", "s,i", "--with-row-id", "--out", str(out)]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [list(r) for r in rows] == [["s", "i", "_rowid"]] * 2  # version 2 deleted a row
    assert [r["_rowid"] for r in rows] == [0, 2]


def test_dump_usage_errors(dataset, tmp_path):
    assert main(["dump", str(dataset), "--out", str(tmp_path / "o.csv")]) == 2
    assert main(["dump", str(tmp_path / "missing"), "--out", str(tmp_path / "o.jsonl")]) == 2
    assert main(["dump", str(dataset)]) == 2  # --out is required


def test_encode_array_sliced_and_dictionary():
    arr = pa.array([[1], [2, 3], None, [4]]).slice(1, 3)
    assert encode_array(arr) == [[2, 3], None, [4]]
    assert encode_array(pa.array(["a", None, "a"]).dictionary_encode()) == ["a", None, "a"]
    assert encode_array(pa.array([1.0, None], pa.float16())) == [1.0, None]
