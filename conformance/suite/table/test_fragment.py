"""Fragments and their data-file lists (spec 004 ``DataFragment`` / ``DataFile``).

FRAG-008: a field id is stored once in a fragment. Found by a field-edit mutation campaign
(``fixtures mutate --kinds field``): a pylance 0.30.0 table whose 2.0 data file listed field
14 twice and field 13 not at all conformed, while pylance and our reader read different rows
from it. A copy of one data file listed twice in a fragment stays one storage of its fields.
"""

from __future__ import annotations

import shutil

import pytest

from conformance.engine import validate
from conformance.fixtures.corruption import edit_latest, write_base


@pytest.fixture(scope="module")
def base(tmp_path_factory, pylance):
    return write_base(tmp_path_factory.mktemp("frag") / "ds")


def _frag_008(root):
    return [v for v in validate(str(root), rules=["FRAG-008"]).violations if v.rule == "FRAG-008"]


def test_a_field_listed_twice_in_one_data_file_is_frag_008(base, tmp_path, pylance):
    copy = tmp_path / "twice"
    shutil.copytree(base, copy)
    assert not _frag_008(copy)

    def edit(m):
        files = m.fragments[0].files[0]
        files.fields[1] = files.fields[0]  # ids [0, 1] become [0, 0]

    edit_latest(copy, edit)
    (found,) = _frag_008(copy)
    assert "listed twice" in found.message and found.location["field"] == 0


def test_one_data_file_listed_twice_is_one_storage(base, tmp_path):
    copy = tmp_path / "same-file"
    shutil.copytree(base, copy)

    def edit(m):
        again = m.fragments[0].files.add()
        again.CopyFrom(m.fragments[0].files[0])

    edit_latest(copy, edit)
    assert not _frag_008(copy)


def test_a_2_1_data_file_listing_a_struct_is_frag_012(base, tmp_path, pylance):
    """FRAG-012: a 2.1+ data file lists leaves. Found by the field-edit campaign (a pylance
    13.0.0 file's field 4 became 5, a list): pylance refuses such a table, the kit read it."""
    from conformance.fixtures.invalid import CORRUPTIONS

    copy = tmp_path / "struct"
    shutil.copytree(base, copy)
    CORRUPTIONS["FRAG-012"](copy)
    with pytest.raises(Exception, match="Non-leaf field"):
        pylance.dataset(str(copy)).to_table()
    found = validate(str(copy), rules=["FRAG-012"]).violations
    assert [(v.rule, v.location["field"]) for v in found] == [("FRAG-012", 2)]


@pytest.mark.parametrize("key", ["lance-encoding:packed", "packed"])
def test_a_packed_struct_is_a_leaf(tmp_path, pylance, key):
    import pyarrow as pa

    st = pa.StructArray.from_arrays([pa.array([1, 2]), pa.array([0.5, 1.5])], names=["a", "b"])
    schema = pa.schema([pa.field("p", st.type, metadata={key: "true"})])
    root = tmp_path / "packed"
    pylance.write_dataset(pa.table({"p": st}, schema=schema), str(root), data_storage_version="2.1")
    assert pylance.dataset(str(root)).to_table().num_rows == 2
    from reference_impl.dataset import open_dataset

    (data_file,) = open_dataset(str(root)).manifest.fragments[0].files
    assert list(data_file.fields) == [0]  # the struct itself: one column
    report = validate(str(root), rules=["FRAG-012"], deep=True)
    assert not report.violations
