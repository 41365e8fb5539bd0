"""Legacy page statistics (spec 001 "Statistics") and the STATS-* rules.

pylance 14.0.2 still writes page statistics into legacy (0.1) data files; they are
decoded here and checked against the values, and byte-patched copies show each rule
firing: wrong bounds, impossible null counts, all-null pages without the representable
extremes, a -0.0 max, mistyped and dangling statistics columns.
"""

from __future__ import annotations

import glob
import struct

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conformance.strategies.arrow import arrow_tables
from reference_impl.file.legacy import open_legacy
from reference_impl.proto import file_pb2
from reference_impl.table.stats import check_page_bounds, read_page_stats


def _write(lance, path, table, rows_per_group=3):
    lance.write_dataset(
        table, str(path), data_storage_version="legacy", max_rows_per_group=rows_per_group
    )
    (data_file,) = glob.glob(f"{path}/data/*.lance")
    return data_file


TABLE = {
    "i": pa.array([5, None, -3, 7, 0], pa.int32()),
    "f": pa.array([1.5, None, float("nan"), -0.0, 0.0], pa.float64()),
    "s": pa.array(["b", None, "a", "zz", "c"]),
    "n": pa.array([None] * 5, pa.int64()),
    "nf": pa.array([None] * 5, pa.float32()),
}


@pytest.fixture()
def legacy(pylance, tmp_path):
    path = tmp_path / "d"
    data_file = _write(pylance, path, pa.table(TABLE))
    return path, data_file


def _stat_cell(data_file: str, field_id: int, member: str):
    """(byte position of page 0's value, width) of a statistics member column."""
    lf = open_legacy(open(data_file, "rb").read())
    st = lf.metadata.statistics
    parent = next(f for f in st.schema if f.parent_id == -1 and f.name == str(field_id))
    child = next(f for f in st.schema if f.parent_id == parent.id and f.name == member)
    row = list(st.fields).index(child.id)
    table = lf.page_table(len(st.fields), st.page_table_position, 1)
    return int(table[row, 0, 0])


def _patch(data_file: str, pos: int, raw: bytes) -> None:
    with open(data_file, "r+b") as fh:
        fh.seek(pos)
        fh.write(raw)


def _findings(path, rule_id):
    from conformance.engine.local import validate

    report = validate(str(path), deep=True, rules=[rule_id])
    return [f for f in report.findings if f.rule == rule_id]


def test_pylance_writes_statistics_in_legacy_files(legacy):
    _, data_file = legacy
    stats = read_page_stats(open_legacy(open(data_file, "rb").read()))
    assert set(stats) == {0, 1, 2, 3, 4}
    assert stats[0].null_count.tolist() == [1, 0]
    assert stats[0].min_value.to_pylist() == [-3, 0] and stats[0].max_value.to_pylist() == [5, 7]
    # NaN ignored, zero signs normalised, all-null pages use the extremes
    assert stats[1].min_value.to_pylist()[0] == 1.5
    lo, hi = stats[1].min_value[1].as_py(), stats[1].max_value[1].as_py()
    assert lo == 0 and np.signbit(lo) and hi == 0 and not np.signbit(hi)
    assert (
        stats[3].min_value.to_pylist() == [-(2**63), -(2**63)]
        and stats[3].max_value.to_pylist() == [2**63 - 1] * 2
    )
    assert (
        stats[4].min_value.to_pylist() == [-np.inf] * 2
        and stats[4].max_value.to_pylist() == [np.inf] * 2
    )


def test_pylance_statistics_hold_every_rule(legacy):
    path, _ = legacy
    for rid in ("STATS-001", "STATS-002", "STATS-003", "STATS-004", "STATS-005", "STATS-006"):
        assert _findings(path, rid) == [], rid


def test_stats_003_min_above_a_value(legacy):
    path, data_file = legacy
    _patch(
        data_file, _stat_cell(data_file, 0, "min_value"), struct.pack("<i", 1)
    )  # page 0 holds -3
    found = _findings(path, "STATS-003")
    assert found and "outside" in found[0].message


def test_stats_003_max_below_a_value_float(legacy):
    path, data_file = legacy
    _patch(
        data_file, _stat_cell(data_file, 1, "max_value"), struct.pack("<d", 1.0)
    )  # page 0 holds 1.5
    assert _findings(path, "STATS-003")


def test_stats_003_string_bounds(legacy):
    path, data_file = legacy
    # page 0 of "s" holds "b", "a": set the var-binary min to "b" by rewriting its 1-byte value
    pos = _stat_cell(data_file, 2, "min_value")
    start = struct.unpack("<q", open(data_file, "rb").read()[pos : pos + 8])[0]
    _patch(data_file, start, b"b")
    assert _findings(path, "STATS-003")


def test_stats_002_null_count_above_rows(legacy):
    path, data_file = legacy
    _patch(data_file, _stat_cell(data_file, 0, "null_count"), struct.pack("<q", 99))
    assert _findings(path, "STATS-002")


def test_stats_004_all_null_page_without_extremes(legacy):
    path, data_file = legacy
    _patch(data_file, _stat_cell(data_file, 3, "min_value"), struct.pack("<q", 0))
    assert _findings(path, "STATS-004")
    _patch(data_file, _stat_cell(data_file, 3, "min_value"), struct.pack("<q", -(2**63)))
    _patch(data_file, _stat_cell(data_file, 4, "max_value"), struct.pack("<f", 0.0))
    assert _findings(path, "STATS-004")


def test_stats_005_negative_zero_max(legacy):
    path, data_file = legacy
    pos = _stat_cell(data_file, 1, "max_value")
    _patch(data_file, pos + 8, struct.pack("<d", -0.0))  # page 1's max is +0.0
    found = _findings(path, "STATS-005")
    assert found and "+0.0" in found[0].message


def _rewrite_metadata(data_file: str, edit) -> None:
    raw = open(data_file, "rb").read()
    pos = struct.unpack("<Q", raw[-16:-8])[0]
    length = struct.unpack("<I", raw[pos : pos + 4])[0]
    meta = file_pb2.Metadata()
    meta.ParseFromString(raw[pos + 4 : pos + 4 + length])
    edit(meta)
    body = meta.SerializeToString()
    with open(data_file, "wb") as fh:
        fh.write(raw[:pos] + struct.pack("<I", len(body)) + body + raw[-16:])


def test_stats_006_mistyped_min_value(legacy):
    path, data_file = legacy

    def edit(meta):
        for f in meta.statistics.schema:
            if f.name == "min_value" and f.logical_type == "int32":
                f.logical_type = "uint32"  # same width, wrong type

    _rewrite_metadata(data_file, edit)
    assert _findings(path, "STATS-006")


def test_stats_001_dangling_statistics_field(legacy):
    path, data_file = legacy

    def edit(meta):
        meta.statistics.fields.append(999)

    _rewrite_metadata(data_file, edit)
    assert _findings(path, "STATS-001")


def _orphan_struct(meta):
    """The first statistics struct names a parent that is not there (a bit flip in a
    0.12.3 file turned its parent id -1 into -17)."""
    next(f for f in meta.statistics.schema if f.parent_id == -1).parent_id = -17


def _id_twice(meta):
    """Two statistics fields share an id (the statistics column list names it twice)."""
    members = [f for f in meta.statistics.schema if f.parent_id != -1]
    old, members[1].id = members[1].id, members[0].id
    cols = [members[0].id if i == old else i for i in meta.statistics.fields]
    del meta.statistics.fields[:]
    meta.statistics.fields.extend(cols)


def _unknown_type(meta):
    """A statistics member of a logical type no release knows."""
    next(f for f in meta.statistics.schema if f.name == "min_value").logical_type = "int33"


def _parent_last(meta):
    """The first statistics struct is moved behind its members."""
    first = file_pb2.Field()
    first.CopyFrom(meta.statistics.schema[0])
    del meta.statistics.schema[0]
    meta.statistics.schema.append(first)


@pytest.mark.parametrize(("damage", "pylance_refuses"), [
    (_orphan_struct, True), (_parent_last, True), (_unknown_type, False), (_id_twice, False),
], ids=["orphan-struct", "parent-last", "unknown-type", "id-twice"])
def test_stats_001_statistics_schema_that_is_not_sound(legacy, pylance, damage, pylance_refuses):
    """A statistics schema that is not a sound field list is STATS-001. pylance 14.0.2
    refuses the file when a parent is missing or listed after its child; it reads the data
    of the other two (it never reads the statistics), whose statistics cannot be read: a
    type no reader knows, an id that names two statistics fields. The first was caught as
    SCHEMA-002 inside the statistics check and then reported by no rule at all, so the file
    conformed; the second was read as if sound."""
    path, data_file = legacy
    assert not _findings(path, "STATS-001")
    pylance.dataset(str(path)).to_table()
    _rewrite_metadata(data_file, damage)
    if pylance_refuses:
        with pytest.raises(Exception, match="parent"):  # the oracle: pylance refuses
            pylance.dataset(str(path)).to_table()
    else:
        pylance.dataset(str(path)).to_table()
    (found,) = _findings(path, "STATS-001")
    assert found.message.startswith("statistics not readable")
    assert found.location["file"].endswith(".lance")


def test_a_missing_data_file_is_not_a_statistics_finding(legacy):
    """A legacy data file that is not there is DATAFILE-001; it held no statistics to judge
    (upstream's 0.5.9 ``dataset_with_fragments`` drew STATS-001 beside it)."""
    import os

    from conformance.engine.local import validate

    path, data_file = legacy
    os.remove(data_file)
    report = validate(str(path), deep=True)
    assert "DATAFILE-001" in report.rules_violated("error")
    assert "STATS-001" not in report.rules_violated(None)


def test_check_page_bounds_direct():
    from reference_impl.table.stats import PageStats

    stats = PageStats(
        7, np.array([0, 1]), pa.array([0, 10], pa.int16()), pa.array([5, 20], pa.int16())
    )
    pages = [
        pa.array([0, 3, 5], pa.int16()),
        pa.array([10, 0, 20], pa.int16()),
    ]  # one out-of-bounds slot is allowed: it may be the null's placeholder
    assert check_page_bounds(stats, pages) == []
    pages[1] = pa.array([10, 99, 20], pa.int16())  # page 1 has one null: its placeholder may be 99
    assert check_page_bounds(stats, pages) == []
    pages[0] = pa.array([0, 6, 5], pa.int16())  # page 0 has no null: 6 > max 5
    (v,) = check_page_bounds(stats, pages)
    assert v.rule == "STATS-003" and v.page == 0


STATS_RULES = ["STATS-001", "STATS-002", "STATS-003", "STATS-004", "STATS-005", "STATS-006"]


@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(table=arrow_tables(max_rows=120), rows_per_group=st.integers(1, 50))
def test_random_pylance_statistics_hold_every_rule(pylance, tmp_path_factory, table, rows_per_group):
    from conformance.engine.local import validate

    if table.num_rows == 0:
        return
    path = tmp_path_factory.mktemp("stats") / "d"
    pylance.write_dataset(
        table, str(path), data_storage_version="legacy", max_rows_per_group=rows_per_group
    )
    report = validate(str(path), deep=True, rules=STATS_RULES)
    assert [f for f in report.findings if f.rule in STATS_RULES or f.rule.startswith("ENGINE")] == []
    assert set(STATS_RULES) <= set(report.rules_checked)
