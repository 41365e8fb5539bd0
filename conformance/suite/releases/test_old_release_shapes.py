"""Shapes of data that older releases wrote, rebuilt from pylance 14.0.2 output (issue 16).

The cross-release corpus (``-m compat``, :mod:`conformance.releases`) runs the real releases.
These tests recreate, byte for byte where it matters, what those releases left on disk, so
the default run keeps every fix honest without a virtualenv per release:

* a legacy dataset keeps its dictionary values in the manifest file, which is where every
  release reads them (pylance 0.10 to 12.x leave positions there that mean nothing in a data
  file);
* pylance 0.10 wrote the whole child array of a sliced struct, so a legacy page may hold more
  values than its batch has rows; readers take the first ones;
* releases before 0.8 wrote no ``writer_version`` and no (or wrong) ``physical_rows`` /
  ``num_deleted_rows``; every later release recounts them from the files;
* releases up to 0.39 end manifests with minor version 1 (no finding; an unknown minor is an
  error), and releases before 0.11 leave out ``max_fragment_id`` (a warning).
"""

from __future__ import annotations

import glob
import struct

import numpy as np
import pyarrow as pa
import pytest

import reference_impl as ri
from conformance.engine import local
from conformance.releases.corpus import table_difference
from reference_impl.io import open_store
from reference_impl.table.manifest import encode_manifest_file, read_manifest_file


def _latest_manifest_key(root) -> str:
    keys = sorted(glob.glob(f"{root}/_versions/*.manifest"))
    return keys[-1].split(f"{root}/", 1)[1]


def _edit_manifest(root, edit, *, tail_minor=None) -> None:
    """Rewrite the latest manifest of ``root`` after ``edit(manifest)``."""
    store = open_store(str(root))
    key = _latest_manifest_key(root)
    mf = read_manifest_file(store, key)
    edit(mf.manifest)
    data = bytearray(encode_manifest_file(mf.manifest, transaction=mf.transaction_bytes,
                                          index_section=mf.index_section))
    if tail_minor is not None:
        struct.pack_into("<H", data, len(data) - 6, tail_minor)
    (root / key).write_bytes(bytes(data))


def _errors(root) -> list[str]:
    report = local.validate(str(root), versions="all", deep=True)
    return [f"{v.rule}: {v.message}" for v in report.violations]


def _same_as_pylance(lance, root) -> None:
    want = lance.dataset(str(root)).to_table()
    got = ri.open_dataset(str(root)).to_table()
    assert table_difference(want, got) == ""


def test_legacy_dictionaries_are_read_from_the_manifest_file(pylance, tmp_path):
    """A legacy dataset's dictionary values live in its manifest file, ahead of the manifest
    (``Field.dictionary`` positions are in that file), and every release reads them from
    there; the copies each data file embeds are for reading that file alone. The dataset
    manifest of pylance 0.10 to 12.x names positions that mean nothing in any data file."""
    root = tmp_path / "t"
    t = pa.table({"i": pa.array(range(20), pa.int64()),
                  "d": pa.array(["red", "green", None, "blue"] * 5).dictionary_encode()})
    pylance.write_dataset(t, str(root), data_storage_version="legacy", max_rows_per_file=8)
    assert len(glob.glob(f"{root}/data/*.lance")) == 3
    key = _latest_manifest_key(root)
    raw = (root / key).read_bytes()
    assert raw.count(b"redgreenblue") == 1
    (root / key).write_bytes(raw.replace(b"redgreenblue", b"REDGREENBLUE"))
    assert pylance.dataset(str(root)).to_table().column("d").to_pylist()[:4] == \
        ["RED", "GREEN", "RED", "BLUE"]  # a null index reads back as item 0 (legacy)
    _same_as_pylance(pylance, root)
    assert _errors(root) == []


def test_a_legacy_page_longer_than_its_batch_reads_its_first_values(pylance, tmp_path):
    """pylance 0.10 wrote the whole child of a sliced struct: readers take the first n."""
    from reference_impl.file.legacy import open_legacy

    root = tmp_path / "t"
    t = pa.table({"s": pa.array([{"a": i} for i in range(10)],
                                pa.struct([("a", pa.int64())]))})
    pylance.write_dataset(t, str(root), data_storage_version="legacy")
    path = glob.glob(f"{root}/data/*.lance")[0]
    data = bytearray(open(path, "rb").read())
    lf = open_legacy(bytes(data), path=path)
    pos = lf.metadata.page_table_position
    table = np.frombuffer(bytes(data[pos:pos + 16 * 2]), "<i8").reshape(2, 2)
    assert table[1, 1] == 10  # child page: 10 values for the batch of 10 rows
    # make the batch claim 4 rows while the child page still holds 10
    meta = lf.metadata
    meta.batch_offsets[:] = [0, 4]
    body = meta.SerializeToString()
    tail_pos = len(data) - 16
    (meta_pos,) = struct.unpack_from("<Q", data, tail_pos)
    new = bytes(data[:meta_pos]) + struct.pack("<I", len(body)) + body
    new += struct.pack("<QHH", meta_pos, 0, 2) + b"LANC"
    got = open_legacy(new, path=path).read(list(lf.manifest.fields))
    assert got.column("s").to_pylist() == [{"a": i} for i in range(4)]


def test_fragment_statistics_of_manifests_without_writer_version_are_recounted(pylance,
                                                                               tmp_path):
    root = tmp_path / "t"
    pylance.write_dataset(pa.table({"x": pa.array(range(100), pa.int64())}), str(root),
                          data_storage_version="legacy")
    pylance.dataset(str(root)).delete("x < 10")

    def as_releases_before_0_8_wrote(m):
        m.ClearField("writer_version")
        for f in m.fragments:
            f.physical_rows = 90  # pylance 0.8.0's migration stored the live row count
            f.deletion_file.num_deleted_rows = 0

    _edit_manifest(root, as_releases_before_0_8_wrote)
    got = ri.open_dataset(str(root)).to_table()
    assert got.column("x").to_pylist() == list(range(10, 100))
    assert not [e for e in _errors(root) if e.split(":")[0] in
                ("FRAG-004", "DELETION-004", "DELETION-005")]


def test_with_writer_version_wrong_statistics_are_still_errors(pylance, tmp_path):
    root = tmp_path / "t"
    pylance.write_dataset(pa.table({"x": pa.array(range(100), pa.int64())}), str(root),
                          data_storage_version="legacy")

    def wrong(m):
        for f in m.fragments:
            f.physical_rows = 90

    _edit_manifest(root, wrong)
    assert any(e.startswith("FRAG-004") for e in _errors(root))


@pytest.mark.parametrize("storage", ["legacy", "2.0"])
def test_tail_minor_1_is_fine_and_no_max_fragment_id_a_warning(pylance, tmp_path, storage):
    root = tmp_path / "t"
    pylance.write_dataset(pa.table({"x": pa.array(range(10), pa.int64())}), str(root),
                          data_storage_version=storage, max_rows_per_file=4)
    _edit_manifest(root, lambda m: m.ClearField("max_fragment_id"), tail_minor=1)
    _same_as_pylance(pylance, root)
    report = local.validate(str(root), versions="all", deep=True)
    assert not report.violations, [v.rule for v in report.violations]
    assert "FRAG-003" in {w.rule for w in report.warnings}
    assert "MANIFEST-008" not in {w.rule for w in report.warnings}


def test_no_max_fragment_id_with_only_fragment_0_is_max_fragment_id_0(pylance, tmp_path):
    """Spec 001 declares ``uint32 max_fragment_id = 11`` (not optional): releases of that time
    leave the value 0 off the wire, so a manifest whose only fragment is 0 carries no field."""
    root = tmp_path / "t"
    pylance.write_dataset(pa.table({"x": pa.array(range(10), pa.int64())}), str(root))
    _edit_manifest(root, lambda m: m.ClearField("max_fragment_id"), tail_minor=1)
    report = local.validate(str(root), versions="all", deep=True)
    assert not report.violations and not report.warnings, \
        [f"{f.rule}: {f.message}" for f in report.violations + report.warnings]


def test_a_manifest_tail_no_release_writes_is_an_error(pylance, tmp_path):
    root = tmp_path / "t"
    pylance.write_dataset(pa.table({"x": pa.array(range(10), pa.int64())}), str(root))
    _edit_manifest(root, lambda m: None, tail_minor=3)
    assert any(e.startswith("MANIFEST-008") for e in _errors(root))


def test_a_dictionary_leaving_the_manifest_file_is_refused(pylance, tmp_path):
    from reference_impl.errors import FormatError

    root = tmp_path / "t"
    t = pa.table({"d": pa.array(["red", "green", "blue"] * 3).dictionary_encode()})
    pylance.write_dataset(t, str(root), data_storage_version="legacy")

    def past_the_end(m):
        for f in m.fields:
            if f.HasField("dictionary"):
                f.dictionary.offset = 1 << 40

    _edit_manifest(root, past_the_end)
    with pytest.raises(FormatError) as err:
        ri.open_dataset(str(root)).to_table()
    assert err.value.rule == "FILE-063"
    assert any(e.startswith("FILE-063") for e in _errors(root))


def test_data_format_0_1_over_2_0_files_is_a_warning(pylance, tmp_path):
    """pylance 0.16.x could record data_format 0.1 over a table whose files are all 2.0;
    readers take each file's version from its DataFile entry and read it whole."""
    root = tmp_path / "t"
    pylance.write_dataset(pa.table({"x": pa.array(range(30), pa.int64())}), str(root),
                          data_storage_version="2.0", max_rows_per_file=10)
    _edit_manifest(root, lambda m: setattr(m.data_format, "version", "0.1"))
    assert pylance.dataset(str(root)).data_storage_version == "0.1"
    _same_as_pylance(pylance, root)
    report = local.validate(str(root), versions="all", deep=True)
    assert not report.violations, [f"{v.rule}: {v.message}" for v in report.violations]
    found = [w for w in report.warnings if w.rule == "DATAFILE-009"]
    assert len(found) == 1 and "all 3 data files are 2.0 files" in found[0].message


def test_a_mixture_of_file_versions_is_an_error(pylance, tmp_path):
    """A version whose fragments mix legacy and 2.0 files contradicts 'Every file in this
    version of the dataset has the same file_format version.' (pylance refuses to commit on
    such a table). Readers still read each file by its own version."""
    root, other = tmp_path / "t", tmp_path / "o"
    schema = pa.schema([pa.field("x", pa.int64())])
    pylance.write_dataset(pa.table({"x": pa.array(range(10), pa.int64())}, schema=schema),
                          str(root), data_storage_version="legacy")
    pylance.write_dataset(pa.table({"x": pa.array(range(10, 15), pa.int64())}, schema=schema),
                          str(other), data_storage_version="2.0")
    store = open_store(str(other))
    v2 = read_manifest_file(store, _latest_manifest_key(other)).manifest
    for path in glob.glob(f"{other}/data/*.lance"):
        (root / "data" / path.rsplit("/", 1)[1]).write_bytes(open(path, "rb").read())

    def add_the_2_0_fragment(m):
        frag = m.fragments.add()
        frag.CopyFrom(v2.fragments[0])
        frag.id = 1
        m.max_fragment_id = 1

    _edit_manifest(root, add_the_2_0_fragment)
    assert pylance.dataset(str(root)).to_table().column("x").to_pylist() == list(range(15))
    _same_as_pylance(pylance, root)
    errors = _errors(root)
    assert [e for e in errors if e.startswith("DATAFILE-005")], errors
    assert "DATAFILE-009" not in {w.rule for w in
                                  local.validate(str(root), versions="all").warnings}
