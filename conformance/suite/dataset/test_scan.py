"""Table scans: ``reference_impl.scan.to_table`` against pylance 14.0.2's ``to_table``.

Every version of datasets written by pylance (append, overwrite, deletes, update,
add/drop/rename columns, compaction, restore, stable row ids, branches, shallow clones,
each data_storage_version) must scan to the same rows, order, types and values as
``lance.dataset(path, version=v).to_table(with_row_id=True, with_row_address=True)``.
The scenario datasets come from the shared ``pylance_scenarios`` fixture; a small
dataset built here exercises every operation under legacy and 2.0 files.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from conformance.strategies.arrow import same_table
from conformance.suite.parts import unavailable
from conformance.suite.scenarios import SCENARIOS
from reference_impl import scan
from reference_impl.dataset import open_dataset
from reference_impl.errors import UnsupportedFeature

# Every shared scenario, version 2.3 (pylance's unstable `next`) included: its planar pages
# are read by reference_impl/file/encodings/v2_3 (more in test_file_v2_3.py).
SCAN_SCENARIOS = list(SCENARIOS)


def ours(path, version=None, branch=None, **kwargs):
    ds = (
        open_dataset(str(path), version, branch=branch)
        if branch
        else open_dataset(str(path), version)
    )
    try:
        return scan.to_table(ds, **kwargs)
    except UnsupportedFeature as exc:
        if "reference_impl.file.reader is missing" in str(exc):
            unavailable("reference_impl.file.reader", str(exc))
        raise


def assert_same(mine: pa.Table, expected: pa.Table):
    assert mine.schema == expected.schema, (mine.schema, expected.schema)
    assert mine.num_rows == expected.num_rows
    assert same_table(mine, expected)


def _build_all_operations(lance, path, version):
    def t(n, s=0):
        return pa.table(
            {
                "a": pa.array(range(s, s + n), pa.int64()),
                "s": pa.array([f"v{i}" if i % 4 else None for i in range(s, s + n)]),
                "l": pa.array([[i] * (i % 3) for i in range(s, s + n)], pa.list_(pa.int32())),
                "st": pa.array(
                    [{"x": i, "y": float(i)} for i in range(s, s + n)],
                    pa.struct([("x", pa.int32()), ("y", pa.float64())]),
                ),
            }
        )
    ds = lance.write_dataset(
        t(12), str(path), data_storage_version=version, max_rows_per_file=5
    )  # 3 fragments
    ds.delete("a = 2")  # a few rows
    ds = lance.write_dataset(t(8, 100), str(path), mode="append")
    ds.delete("a >= 5 AND a < 10")  # a whole fragment
    ds.update({"a": "a + 1000"}, where="a = 1")
    ds.add_columns({"b": "a * 2"})
    ds.drop_columns(["s"])
    ds.alter_columns({"path": "b", "name": "bb"})
    ds.alter_columns({"path": "st.x", "name": "xx"})  # a nested rename: files keep "x"
    ds.optimize.compact_files(target_rows_per_fragment=100)
    lance.dataset(str(path), version=3).restore()
    return lance.dataset(str(path))


@pytest.mark.parametrize("version", ["legacy", "2.0", "2.1", "2.2"])
def test_every_version_of_an_all_operations_dataset(pylance, tmp_path, version):
    path = tmp_path / "d"
    ds = _build_all_operations(pylance, path, version)
    versions = [v["version"] for v in ds.versions()]
    assert len(versions) >= 9
    for v in versions:
        expected = pylance.dataset(str(path), version=v).to_table(
            with_row_id=True, with_row_address=True
        )
        mine = ours(path, v, with_row_id=True, with_row_address=True)
        assert_same(mine, expected)


@pytest.mark.parametrize("version", ["legacy", "2.0", "2.1", "2.2"])
def test_nested_renames_are_matched_by_field_id(pylance, tmp_path, version):
    """A renamed struct child, list item member or struct in a struct changes only the
    manifest; the data files keep the old names. Children are matched by field id: our scan
    returned nulls for every renamed child of 2.x files (found by a field-edit mutation of a
    pylance 6.1.0 manifest)."""
    inner = pa.struct([("p", pa.int32()), ("q", pa.string())])
    table = pa.table({
        "s": pa.array([{"a": i if i % 5 else None, "b": f"x{i}", "in": {"p": i, "q": "z"}}
                       for i in range(30)],
                      pa.struct([("a", pa.int64()), ("b", pa.string()), ("in", inner)])),
        "l": pa.array([[{"p": i, "q": None}] * (i % 3) if i % 7 else None for i in range(30)],
                      pa.list_(inner)),
    })
    path = str(tmp_path / "d")
    ds = pylance.write_dataset(table, path, data_storage_version=version, max_rows_per_file=12)
    for old, new in (("s.a", "a2"), ("s.in.q", "q2"), ("l.item.p", "p2"), ("s.in", "inner")):
        ds.alter_columns({"path": old, "name": new})
    ds.delete("s.b = 'x3'")
    expected = pylance.dataset(path).to_table()
    assert expected.schema.field("s").type.field("a2").name == "a2"
    assert expected.column("s").combine_chunks().field("a2").null_count < 10  # values, not nulls
    assert_same(ours(path), expected)
    assert_same(ours(path, columns=["l"]), pylance.dataset(path).to_table(columns=["l"]))


@pytest.mark.parametrize("name", SCAN_SCENARIOS)
def test_scenarios_equal_pylance(pylance, pylance_scenarios, name):
    path = pylance_scenarios[name]
    info = pylance_scenarios.info(name)
    for v in info["versions"]:
        expected = pylance.dataset(path, version=v).to_table(
            with_row_id=True, with_row_address=True
        )
        assert_same(ours(path, v, with_row_id=True, with_row_address=True), expected)
    for branch, binfo in (info.get("branch_versions") or {}).items():
        for v in binfo["versions"]:
            expected = (
                pylance.dataset(path)
                .checkout_version((branch, v))
                .to_table(with_row_id=True, with_row_address=True)
            )
            assert_same(
                ours(path, v, branch=branch, with_row_id=True, with_row_address=True), expected
            )
    clone = info.get("clone")
    if clone:
        for v in clone["versions"]:
            expected = pylance.dataset(clone["path"], version=v).to_table(
                with_row_id=True, with_row_address=True
            )
            assert_same(ours(clone["path"], v, with_row_id=True, with_row_address=True), expected)


@pytest.fixture()
def small(pylance, tmp_path):
    t = pa.table(
        {
            "a": pa.array(range(20), pa.int64()),
            "b": pa.array([f"x{i}" for i in range(20)]),
            "c": pa.array(np.arange(20) / 2),
        }
    )
    ds = pylance.write_dataset(
        t, str(tmp_path / "d"), data_storage_version="2.0", max_rows_per_file=7
    )
    ds.delete("a = 3 OR a = 15")
    return tmp_path / "d"


def test_projection_order_and_row_columns(pylance, small):
    lds = pylance.dataset(str(small))
    for kwargs in (
        {"columns": ["c", "a"]},
        {"columns": ["b"], "with_row_address": True},
        {"columns": [], "with_row_id": True},
        {"with_row_id": True},
        {"columns": ["c"], "with_row_id": True, "with_row_address": True},
    ):
        assert_same(ours(small, **kwargs), lds.to_table(**kwargs))


def test_filter_applies_after_assembly(pylance, small):
    lds = pylance.dataset(str(small))
    expr = (pc.field("a") > 4) & (pc.field("c") < 8)
    for kwargs in (
        {"filter": expr},
        {"filter": expr, "columns": ["b"]},
        {"filter": expr, "with_row_id": True},
    ):
        assert_same(ours(small, **kwargs), lds.to_table(**kwargs))


def test_limit_and_offset(pylance, small):
    lds = pylance.dataset(str(small))
    for kwargs in ({"limit": 5}, {"limit": 4, "offset": 9}, {"offset": 15, "columns": ["a"]}):
        assert_same(ours(small, **kwargs), lds.to_table(**kwargs))


def test_take_follows_scan_order(pylance, small):
    lds = pylance.dataset(str(small))
    idx = [0, 17, 5, 5, 2]
    mine = scan.take(open_dataset(str(small)), idx, columns=["a", "b"])
    assert_same(mine, lds.take(idx, columns=["a", "b"]))


def test_row_address_layout(pylance, small):
    t = ours(small, with_row_address=True, columns=[])
    addr = t.column("_rowaddr").to_numpy()
    frags = addr >> 32
    offsets = addr & 0xFFFFFFFF
    assert frags.tolist() == sorted(frags.tolist())
    assert 3 not in offsets[frags == 0].tolist()  # the deleted row of fragment 0
    assert t.schema.field("_rowaddr").type == pa.uint64()


def test_stable_row_ids_differ_from_addresses(pylance, tmp_path):
    path = tmp_path / "d"
    ds = pylance.write_dataset(
        pa.table({"a": range(10)}),
        str(path),
        enable_stable_row_ids=True,
        data_storage_version="2.0",
    )
    ds.update({"a": "a + 100"}, where="a < 3")  # updated rows get new ids in a new fragment
    ds.optimize.compact_files()
    for v in [x["version"] for x in pylance.dataset(str(path)).versions()]:
        expected = pylance.dataset(str(path), version=v).to_table(
            with_row_id=True, with_row_address=True
        )
        mine = ours(path, v, with_row_id=True, with_row_address=True)
        assert_same(mine, expected)
    last = ours(path, with_row_id=True, with_row_address=True)
    assert last.column("_rowid").to_pylist() != last.column("_rowaddr").to_pylist()


@pytest.mark.parametrize("version", ["legacy", "2.0"])
def test_branches_and_shallow_clone(pylance, tmp_path, version):
    path, clone = tmp_path / "d", tmp_path / "clone"
    def t(n, s=0):
        return pa.table(
            {
                "id": pa.array(range(s, s + n), pa.int64()),
                "c": pa.array([f"c{i % 3}" for i in range(s, s + n)]),
            }
        )
    pylance.write_dataset(t(20), str(path), data_storage_version=version)
    pylance.write_dataset(t(10, 20), str(path), mode="append")
    ds = pylance.dataset(str(path))
    ds.create_branch("dev")
    pylance.write_dataset(t(5, 100), ds.checkout_version(("dev", None)), mode="append")
    dev = ds.checkout_version(("dev", None))
    dev.delete("id = 3")
    pylance.dataset(str(path)).shallow_clone(str(clone), 2)
    pylance.write_dataset(t(4, 500), str(clone), mode="append")
    dev = pylance.dataset(str(path)).checkout_version(("dev", None))
    for v in [x["version"] for x in dev.versions()]:
        expected = (
            pylance.dataset(str(path))
            .checkout_version(("dev", v))
            .to_table(with_row_id=True, with_row_address=True)
        )
        assert_same(ours(path, v, branch="dev", with_row_id=True, with_row_address=True), expected)
    for v in [x["version"] for x in pylance.dataset(str(clone)).versions()]:
        expected = pylance.dataset(str(clone), version=v).to_table(
            with_row_id=True, with_row_address=True
        )
        assert_same(ours(clone, v, with_row_id=True, with_row_address=True), expected)
    assert ours(clone).num_rows == 34


@pytest.mark.parametrize("written, claimed", [("2.1", (2, 2)), ("2.2", (2, 1)), ("2.0", (2, 1))])
def test_scan_refuses_a_data_file_whose_entry_names_another_version(tmp_path, written, claimed):
    """The DataFile entry and the file's footer must agree (DATAFILE-004); the scan refuses
    to decode a file as a version other than the one its footer states."""
    import reference_impl as ri
    from reference_impl.errors import FormatError
    from reference_impl.io.uri import open_store
    from reference_impl.table.manifest import encode_manifest_file, read_manifest_file
    from reference_impl.table.versions import latest_entry

    uri = str(tmp_path / "ds")
    ri.write_dataset(pa.table({"a": [1, 2, 3]}), uri, data_storage_version=written)
    store = open_store(uri)
    entry = latest_entry(store)
    mf = read_manifest_file(store, entry.key)
    for frag in mf.manifest.fragments:
        for df in frag.files:
            df.file_major_version, df.file_minor_version = claimed
    mf.manifest.data_format.version = f"{claimed[0]}.{claimed[1]}"
    store.put(entry.key, encode_manifest_file(mf.manifest, transaction=mf.transaction_bytes,
                                              index_section=mf.index_section))
    with pytest.raises(FormatError) as err:
        ri.open_dataset(uri).to_table()
    assert err.value.rule == "DATAFILE-004"



def test_a_field_id_the_file_does_not_store_is_a_typed_error(tmp_path):
    """A manifest naming a field id its data file does not hold (a damaged file schema) makes
    the reader raise DATAFILE-008 with the file, never a bare KeyError."""
    from reference_impl.errors import FormatError
    from reference_impl.file.reader import LanceFileReader
    from reference_impl.file.writer import write_lance_file
    from reference_impl.io import open_store

    store = open_store(str(tmp_path))
    write_lance_file(store, "f.lance", pa.table({"x": pa.array([1, 2], pa.int64())}),
                     version="2.0")
    reader = LanceFileReader(store, "f.lance")
    assert reader.read_columns([0]).column(0).to_pylist() == [1, 2]
    with pytest.raises(FormatError) as err:
        reader.read_columns([7])
    assert err.value.rule == "DATAFILE-008" and err.value.path == "f.lance"
