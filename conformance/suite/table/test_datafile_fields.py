"""A data file holds the fields ``DataFile.fields`` lists, and no more: a struct child added
after a file was written (pylance appends rows that leave ``stuff.a`` out, lancedb adds a
nested column) is in none of the struct's older files, and every reader reads it as null
there. The kit reads such a table as pylance does and draws no DATAFILE-008 (which compares
the file's field with the part of the manifest's field the file holds)."""

from __future__ import annotations

import pyarrow as pa
import pytest

import reference_impl as ri
from conformance.engine import validate

FULL = pa.struct([("b", pa.int64()), ("a", pa.int64())])


@pytest.mark.parametrize("storage", ["2.0", "2.1", "2.2"])
def test_a_struct_child_a_file_does_not_hold_reads_as_null(pylance, tmp_path, storage):
    uri = str(tmp_path / "ds")
    pylance.write_dataset(pa.table({"stuff": pa.array([{"b": 1, "a": 2}], FULL)}), uri,
                          data_storage_version=storage)
    rows = [{"b": 4}] + ([] if storage == "2.0" else [None])  # 2.0 keeps no struct validity
    part = pa.table({"stuff": pa.array(rows, pa.struct([("b", pa.int64())]))})
    pylance.write_dataset(part, uri, mode="append")
    theirs = pylance.dataset(uri)
    held = [list(f.metadata.data_files()[0].fields) for f in theirs.get_fragments()]
    assert len(held[1]) < len(held[0]), held  # the second file holds stuff.b alone
    ours = ri.open_dataset(uri).to_table()
    assert ours == theirs.to_table()
    assert ours["stuff"].to_pylist() == [{"b": 1, "a": 2}, {"b": 4, "a": None}] + rows[1:]
    report = validate(uri, versions="all", deep=True)
    assert report.conforms, report.render("text")


def test_a_file_field_fits_when_it_holds_some_of_a_structs_children():
    """The shape check matches children by field id: a file's struct holding some of the
    dataset's children (by id, at any depth) fits; one holding another shape does not."""
    from reference_impl.errors import FormatError
    from reference_impl.scan import check_same_shape

    def field(name, typ, fid):
        return pa.field(name, typ, metadata={b"lance:field_id": str(fid).encode()})

    inner = pa.struct([field("x", pa.int32(), 3), field("y", pa.int32(), 4)])
    f = field("s", pa.struct([field("b", pa.int64(), 1), field("t", inner, 2)]), 0)
    check_same_shape(f, f, "k")
    check_same_shape(field("s", pa.struct([field("b", pa.int64(), 1)]), 0), f, "k")
    only_x = pa.struct([field("x", pa.int32(), 3)])
    check_same_shape(field("s", pa.struct([field("t", only_x, 2)]), 0), f, "k")
    with pytest.raises(FormatError) as err:  # a child of another shape
        check_same_shape(field("s", pa.struct([field("t", pa.int64(), 2)]), 0), f, "k")
    assert err.value.rule == "DATAFILE-008"
    with pytest.raises(FormatError):  # a leaf where the dataset has a struct
        check_same_shape(field("s", pa.large_binary(), 0), f, "k")


@pytest.mark.parametrize("storage", ["2.0", "2.1"])
def test_a_packed_struct_listed_without_its_children_is_held_whole(pylance, tmp_path, storage):
    """A packed struct (field metadata ``packed: true``) is one column: pylance lists the
    struct's id in ``DataFile.fields`` and none of its children's."""
    st = pa.struct([("a", pa.int32()), ("b", pa.float64())])
    schema = pa.schema([pa.field("id", pa.int64()),
                        pa.field("packed", st, metadata={"packed": "true"})])
    table = pa.table({"id": [1, 2], "packed": pa.array([{"a": 1, "b": 2.0},
                                                        {"a": 3, "b": 4.0}], st)},
                     schema=schema)
    uri = str(tmp_path / "ds")
    pylance.write_dataset(table, uri, data_storage_version=storage)
    theirs = pylance.dataset(uri)
    (held,) = [list(f.metadata.data_files()[0].fields) for f in theirs.get_fragments()]
    assert held == [0, 1]  # the struct, none of its children
    assert ri.open_dataset(uri).to_table() == theirs.to_table()
    report = validate(uri, versions="all", deep=True)
    assert report.conforms, report.render("text")
