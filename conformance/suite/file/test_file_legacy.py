"""The legacy (0.1) file format: ``reference_impl.file.legacy`` against pylance 14.0.2.

Data files are written by ``lance.write_dataset(..., data_storage_version="legacy")``;
each file is read by our legacy reader (schema from the file's embedded manifest) and
must equal what ``lance.dataset(path).to_table()`` returns, legacy null semantics
included (non-string nulls read back as their placeholder slot -- 0 / 0.0 / false /
[] / zeroed structs for arrays built from Python lists -- and empty
strings as null). Malformed tails, tables and offsets must raise ``FormatError``.
"""

from __future__ import annotations

import glob
import struct
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conformance.strategies.arrow import PRIMITIVES, arrow_tables, column, same_table
from reference_impl.errors import FormatError
from reference_impl.file.encodings.v2_0.column import strip_field_ids
from reference_impl.file.legacy import open_legacy

#: Arrow types pylance 14.0.2 refuses to write in legacy files, with the error it gives
REFUSED_LEGACY = {
    "map<utf8,int32>": (pa.map_(pa.string(), pa.int32()), "unsupported data type"),
    "month_day_nano_interval": (pa.month_day_nano_interval(), "Unsupported data type"),
    "fixed_size_list<list<int32>>": (pa.list_(pa.list_(pa.int32()), 1), "Unsupported data type"),
}
_REFUSED_VALUES = {
    "map<utf8,int32>": [[("a", 1)], None],
    "month_day_nano_interval": [(1, 2, 3), None],
    "fixed_size_list<list<int32>>": [[[1]], None],
}


def write_legacy(lance, path, table, **kwargs):
    return lance.write_dataset(table, str(path), data_storage_version="legacy", **kwargs)


def data_files(path):
    return sorted(glob.glob(f"{path}/data/*.lance"))


def read_mine(path) -> pa.Table:
    parts = []
    for p in data_files(path):
        t = open_legacy(open(p, "rb").read(), path=p).read()
        parts.append(pa.Table.from_arrays(t.columns, schema=strip_field_ids(t.schema)))
    return parts


def test_legacy_file_layout(pylance, tmp_path):
    table = pa.table(
        {"a": pa.array([1, None, 3, 4], pa.int32()), "s": pa.array(["x", None, "zz", ""])}
    )
    write_legacy(pylance, tmp_path / "d", table, max_rows_per_group=3)
    (path,) = data_files(tmp_path / "d")
    raw = open(path, "rb").read()
    assert raw[-4:] == b"LANC" and struct.unpack("<HH", raw[-8:-4]) == (0, 2)
    lf = open_legacy(raw)
    assert lf.batch_offsets == [0, 3, 4] and lf.num_rows == 4
    assert lf.manifest is not None and [f.name for f in lf.manifest.fields] == ["a", "s"]
    pt = lf.page_table(2)
    assert pt.shape == (2, 2, 2) and pt[0, 0, 1] == 3  # lengths count values
    got = lf.read()
    assert got.column("a").to_pylist() == [1, 0, 3, 4]  # null int reads as 0
    assert got.column("s").to_pylist() == ["x", None, "zz", None]  # "" reads as null


def test_lance_file_reader_reads_legacy(pylance, tmp_path):
    """One entry point for every version: ``LanceFileReader`` opens 0.1 files through the
    legacy module, and the container's row count is the batch total (3 batches here)."""
    from reference_impl.file.container import read_container
    from reference_impl.file.reader import LanceFileReader
    from reference_impl.io.local import LocalStore

    table = pa.table({"a": pa.array(range(7), pa.int64()), "s": pa.array([f"v{i}" for i in range(7)])})
    write_legacy(pylance, tmp_path / "d", table, max_rows_per_group=3)
    (name,) = data_files(tmp_path / "d")
    path = Path(name)
    store, key = LocalStore(str(path.parent)), path.name
    c = read_container(store, key)
    assert c.is_legacy and c.num_rows == 7 == sum(open_legacy(path.read_bytes()).batch_sizes())
    r = LanceFileReader(store, key)
    assert r.version == "0.1" and r.num_rows == 7 and r.schema.names == ["a", "s"]
    assert r.read_all().equals(table)
    assert r.read_columns(["s"]).column("s").to_pylist() == [f"v{i}" for i in range(7)]
    assert r.read_range(2, 5).column("a").to_pylist() == [2, 3, 4]
    assert r.take([6, 0, 3]).column("a").to_pylist() == [6, 0, 3]


@pytest.mark.parametrize("mode", ["none", "some", "all"])
@pytest.mark.parametrize(
    "data_type",
    [PRIMITIVES[k] for k in sorted(PRIMITIVES)]
    + [
        pa.list_(pa.int32()),
        pa.large_list(pa.int64()),
        pa.list_(pa.float32(), 3),
        pa.list_(pa.bool_(), 2),
        pa.struct([("a", pa.int32()), ("b", pa.string())]),
        pa.list_(pa.list_(pa.int16())),
        pa.list_(pa.struct([("v", pa.int32())])),
    ],
    ids=str,
)
def test_every_type_equals_pylance(pylance, tmp_path, data_type, mode):
    table = pa.table({"c": column(data_type, 40, 11, mode)})
    ds = write_legacy(pylance, tmp_path / "d", table, max_rows_per_group=16)
    (mine,) = read_mine(tmp_path / "d")
    assert same_table(mine, ds.to_table())


@pytest.mark.parametrize(
    "arr",
    [pa.nulls(3), pa.array(["a", None, ""], pa.string_view()), pa.array([b"a", None, b""], pa.binary_view())],
    ids=["null", "string_view", "binary_view"],
)
def test_types_pylance_converts(pylance, tmp_path, arr):
    # the null type stores nothing; view types are written as utf8/binary
    ds = write_legacy(pylance, tmp_path / "d", pa.table({"c": arr, "i": pa.array([1, 2, 3])}))
    (mine,) = read_mine(tmp_path / "d")
    assert same_table(mine, ds.to_table())


def test_dictionary_field(pylance, tmp_path):
    table = pa.table({"d": pa.array(["a", None, "b", "a"] * 5).dictionary_encode()})
    ds = write_legacy(pylance, tmp_path / "d", table)
    (mine,) = read_mine(tmp_path / "d")
    expected = ds.to_table()
    assert same_table(mine, expected)
    assert mine.column("d").to_pylist()[1] == "a"  # a null index reads back as item 0


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(table=arrow_tables(max_rows=200), rows_per_group=st.integers(1, 300))
def test_random_tables_equal_pylance(pylance, tmp_path_factory, table, rows_per_group):
    if table.num_rows == 0:
        return  # write_dataset writes no data file for an empty table; see test_empty_table
    path = tmp_path_factory.mktemp("leg") / "d"
    ds = write_legacy(pylance, path, table, max_rows_per_group=rows_per_group)
    mine = pa.concat_tables(read_mine(path))
    assert same_table(mine, ds.to_table())


def test_empty_table_writes_no_data_file(pylance, tmp_path):
    ds = write_legacy(pylance, tmp_path / "d", pa.table({"a": pa.array([], pa.int64())}))
    assert data_files(tmp_path / "d") == [] and ds.count_rows() == 0


@pytest.mark.parametrize("name", sorted(REFUSED_LEGACY))
def test_types_pylance_refuses_in_legacy(pylance, tmp_path, name):
    data_type, message = REFUSED_LEGACY[name]
    table = pa.table({"c": pa.array(_REFUSED_VALUES[name], data_type)})
    with pytest.raises(Exception, match=message):
        write_legacy(pylance, tmp_path / "d", table)


# -- malformed files --------------------------------------------------------------------------


@pytest.fixture()
def legacy_bytes(pylance, tmp_path):
    table = pa.table(
        {"a": pa.array(range(10), pa.int64()), "s": pa.array([f"v{i}" for i in range(10)])}
    )
    write_legacy(pylance, tmp_path / "d", table, max_rows_per_group=4)
    (path,) = data_files(tmp_path / "d")
    return bytearray(open(path, "rb").read())


def test_bad_magic_and_short_file(legacy_bytes):
    bad = bytes(legacy_bytes[:-4]) + b"LANX"
    with pytest.raises(FormatError) as err:
        open_legacy(bad)
    assert err.value.rule == "FILE-060"
    with pytest.raises(FormatError):
        open_legacy(b"LANC")


def test_metadata_position_outside_file(legacy_bytes):
    data = bytes(legacy_bytes[:-16]) + struct.pack("<QHH", len(legacy_bytes) * 2, 0, 2) + b"LANC"
    with pytest.raises(FormatError) as err:
        open_legacy(data)
    assert err.value.rule == "FILE-060"


def test_page_table_cell_past_end(legacy_bytes):
    lf = open_legacy(bytes(legacy_bytes))
    pos = lf.metadata.page_table_position
    data = bytearray(legacy_bytes)
    struct.pack_into("<qq", data, pos, len(data) + 100, 4)  # field 0, batch 0
    with pytest.raises(FormatError) as err:
        open_legacy(bytes(data)).read()
    assert err.value.rule == "FILE-061"


def test_var_binary_offsets_decreasing(legacy_bytes):
    lf = open_legacy(bytes(legacy_bytes))
    table = lf.page_table(2)
    spos = int(table[1, 0, 0])
    data = bytearray(legacy_bytes)
    first = struct.unpack_from("<q", data, spos)[0]
    struct.pack_into("<q", data, spos + 8, first - 1)
    with pytest.raises(FormatError) as err:
        open_legacy(bytes(data)).read()
    assert err.value.rule == "FILE-063"


@settings(max_examples=80, deadline=None)
@given(cut=st.integers(0, 2000), junk=st.binary(min_size=1, max_size=40), at=st.integers(0, 2000))
def test_corruption_raises_only_format_error(cut, junk, at):
    base = _BASE.get("bytes")
    if base is None:
        pytest.skip("fixture file not built yet")
    data = bytearray(base)
    at = at % len(data)
    data[at : at + len(junk)] = junk
    data = bytes(data[: max(len(data) - cut % 64, 0)]) if cut % 3 == 0 else bytes(data)
    try:
        open_legacy(data).read()
    except FormatError:
        pass


_BASE: dict = {}


@pytest.fixture(autouse=True, scope="module")
def _base_file(tmp_path_factory):
    try:
        import lance
    except Exception:  # pragma: no cover - the pylance fixture reports this
        return
    path = tmp_path_factory.mktemp("base") / "d"
    table = pa.table(
        {
            "a": pa.array(range(30), pa.int32()),
            "s": pa.array([f"v{i}" for i in range(30)]),
            "l": pa.array([[i] * (i % 3) for i in range(30)], pa.list_(pa.int64())),
        }
    )
    lance.write_dataset(table, str(path), data_storage_version="legacy", max_rows_per_group=7)
    _BASE["bytes"] = open(data_files(path)[0], "rb").read()


# -- FILE-060..063 over a dataset's legacy data files -----------------------------------------

RULES_LEGACY = ["FILE-060", "FILE-061", "FILE-062", "FILE-063"]


@pytest.fixture()
def legacy_dataset(pylance, tmp_path):
    path = tmp_path / "ds"
    table = pa.table(
        {"a": pa.array(range(10), pa.int64()), "s": pa.array([f"v{i}" for i in range(10)])}
    )
    write_legacy(pylance, path, table, max_rows_per_group=4)
    (data_file,) = data_files(path)
    return path, data_file


def _findings(path, rule_id):
    from conformance.engine.local import validate

    return [
        f for f in validate(str(path), deep=True, rules=[rule_id]).findings if f.rule == rule_id
    ]


def _patch_metadata(data_file, edit):
    from reference_impl.proto import file_pb2

    raw = open(data_file, "rb").read()
    pos = struct.unpack("<Q", raw[-16:-8])[0]
    length = struct.unpack("<I", raw[pos : pos + 4])[0]
    meta = file_pb2.Metadata()
    meta.ParseFromString(raw[pos + 4 : pos + 4 + length])
    edit(meta)
    body = meta.SerializeToString()
    open(data_file, "wb").write(raw[:pos] + struct.pack("<I", len(body)) + body + raw[-16:])


def test_legacy_rules_hold_on_pylance_files(legacy_dataset):
    path, _ = legacy_dataset
    for rid in RULES_LEGACY:
        assert _findings(path, rid) == [], rid


def test_file_060_bad_tail(legacy_dataset):
    path, data_file = legacy_dataset
    raw = bytearray(open(data_file, "rb").read())
    struct.pack_into("<Q", raw, len(raw) - 16, len(raw) + 10)
    open(data_file, "wb").write(bytes(raw))
    assert _findings(path, "FILE-060")


def test_file_061_page_past_end(legacy_dataset):
    path, data_file = legacy_dataset
    raw = bytearray(open(data_file, "rb").read())
    pos = open_legacy(bytes(raw)).metadata.page_table_position
    struct.pack_into("<q", raw, pos, len(raw))
    open(data_file, "wb").write(bytes(raw))
    assert _findings(path, "FILE-061")


def test_file_062_decreasing_batch_offsets(legacy_dataset):
    path, data_file = legacy_dataset

    def edit(meta):
        meta.batch_offsets[1] = 9
        meta.batch_offsets[2] = 8

    _patch_metadata(data_file, edit)
    assert _findings(path, "FILE-062")


def test_file_063_decreasing_var_binary_offsets(legacy_dataset):
    path, data_file = legacy_dataset
    raw = bytearray(open(data_file, "rb").read())
    lf = open_legacy(bytes(raw))
    spos = int(lf.page_table(2)[1, 0, 0])
    first = struct.unpack_from("<q", raw, spos)[0]
    struct.pack_into("<q", raw, spos + 8, first - 1)
    open(data_file, "wb").write(bytes(raw))
    assert _findings(path, "FILE-063")
