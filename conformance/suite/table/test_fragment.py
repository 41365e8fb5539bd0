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
