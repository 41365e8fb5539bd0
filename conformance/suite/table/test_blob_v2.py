"""Blob v2 columns of 2.2 datasets (``reference_impl/table/blob.py``, rules BLOB-001..006).

pylance 14.0.2 writes every kind of descriptor here (inline, packed and dedicated sidecars,
external objects by absolute URI or under a registered base path, nulls and empties, with
small thresholds from the field metadata), and we check that

* our scan returns exactly pylance's ``to_table`` (the descriptor structs, row ids and
  addresses), over appends, deletions and projections;
* our ``take_blobs`` returns the bytes pylance's ``take_blobs`` reads, by scan index, row id
  and row address, nulls as ``None``;
* our file reader reads the data file although its schema holds pylance's id -1 descriptor
  fields, and refuses id -1 anywhere else (BLOB-001);
* ``validate --deep`` judges all of it conforming, and each rule fires on its corruption (the
  committed negative fixtures are ``fixtures/invalid/BLOB-*``; their bytes come from
  ``conformance/fixtures/invalid_blob.py``, reused here).
"""

from __future__ import annotations

import struct
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conformance.engine.local import validate
from conformance.fixtures import invalid_blob as ib
from reference_impl.dataset import open_dataset
from reference_impl.errors import FormatError, InvalidInput
from reference_impl.file import checks
from reference_impl.file.reader import LanceFileReader
from reference_impl.io.local import LocalStore
from reference_impl.proto import file_pb2
from reference_impl.table import blob


def _pylance_blobs(ds, n):
    return [None if b is None else b.readall() for b in ds.take_blobs("blob", indices=list(range(n)))]


def _same_scan(path, lance, **kw):
    ours = open_dataset(str(path)).to_table(**kw)
    theirs = lance.dataset(str(path)).to_table(**kw)
    assert ours.schema == theirs.schema
    assert ours.equals(theirs), (ours.to_pylist(), theirs.to_pylist())
    return ours


def _errors(report):
    return sorted({f.rule for f in report.findings if str(getattr(f.severity, "value", f.severity)) == "error"})


def _rules(report):
    return sorted({f.rule for f in report.findings})


@pytest.fixture(scope="module")
def every_kind(tmp_path_factory, pylance):
    """A 2.2 dataset with inline, packed, dedicated, empty, null and a base-relative external
    blob (written by pylance; the shared fixture writer of the BLOB-* negative cases)."""
    root = tmp_path_factory.mktemp("blob") / "ds"
    root.mkdir()
    ib.write_blob_table(root, external_base=root.parent / "ext")
    return root


def test_descriptors_scan_as_pylance_and_cover_every_kind(every_kind, pylance):
    t = _same_scan(every_kind, pylance, with_row_id=True, with_row_address=True)
    kinds = [None if d is None else d["kind"] for d in t.column("blob").to_pylist()]
    assert kinds == [0, None, 0, 1, 1, 2, 2, 3]
    assert t.schema.field("blob").type == blob.DESCRIPTOR_TYPE
    _same_scan(every_kind, pylance, columns=["id"])
    _same_scan(every_kind, pylance, columns=["blob"], filter=pa.compute.field("id") > 2)


def test_take_blobs_reads_the_bytes_pylance_reads(every_kind, pylance):
    ours = open_dataset(str(every_kind))
    want = _pylance_blobs(pylance.dataset(str(every_kind)), 8)
    assert want[:7] == ib.blob_values()
    assert want[7] == bytes(range(256))  # the external object under the base path
    assert ours.take_blobs("blob", indices=list(range(8))) == want
    assert ours.take_blobs("blob", indices=[6, 0, 1]) == [want[6], want[0], None]
    assert ours.take_blobs("blob", ids=[5, 3]) == [want[5], want[3]]
    assert ours.take_blobs("blob", addresses=pa.array([7], pa.uint64())) == [want[7]]


def test_take_blobs_refuses_bad_requests(every_kind):
    ds = open_dataset(str(every_kind))
    with pytest.raises(InvalidInput):
        ds.take_blobs("blob")
    with pytest.raises(InvalidInput):
        ds.take_blobs("blob", ids=[1], indices=[1])
    with pytest.raises(InvalidInput):
        ds.take_blobs("nope", indices=[0])
    with pytest.raises(InvalidInput):
        ds.take_blobs("blob", indices=[8])
    with pytest.raises(InvalidInput):
        ds.take_blobs("blob", addresses=[99])


def test_every_kind_conforms_deep(every_kind):
    report = validate(str(every_kind), versions="all", deep=True)
    assert not _errors(report), report.findings
    # BASEPATH-005: pylance numbers initial bases from 1 (recorded on the rule)
    assert _rules(report) in ([], ["BASEPATH-005"])
    assert {f"BLOB-00{i}" for i in range(1, 7)} <= set(report.rules_checked)


def test_lance_encoding_blob_large_binary_becomes_blob_v2(tmp_path, pylance):
    """pylance stores a ``lance-encoding:blob`` large_binary column of a 2.2 dataset as blob
    v2 (the manifest field gains the extension); appends and deletions keep reading right."""
    schema = pa.schema([pa.field("id", pa.int64()),
                        pa.field("blob", pa.large_binary(), metadata={"lance-encoding:blob": "true"})])

    def rows(start, values):
        return pa.table({"id": pa.array(range(start, start + len(values)), pa.int64()),
                         "blob": pa.array(values, pa.large_binary())}, schema=schema)

    uri = str(tmp_path / "ds")
    first = [b"a" * 10, None, b"", b"z" * 70_000]
    pylance.write_dataset(rows(0, first), uri, data_storage_version="2.2", max_rows_per_file=2)
    pylance.write_dataset(rows(4, [b"tail", None]), uri, mode="append")
    pylance.dataset(uri).delete("id = 0")
    ds = open_dataset(uri)
    assert blob.is_blob_v2(next(f for f in ds.manifest.fields if f.name == "blob"))
    _same_scan(uri, pylance, with_row_id=True, with_row_address=True)
    n = ds.count_rows()
    assert ds.take_blobs("blob", indices=list(range(n))) == _pylance_blobs(pylance.dataset(uri), n) \
        == first[1:] + [b"tail", None]
    assert not _errors(validate(uri, versions="all", deep=True))


@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.one_of(st.none(), st.integers(0, 120)), min_size=1, max_size=12),
       st.integers(0, 40), st.integers(41, 90))
def test_random_sizes_around_thresholds(tmp_path_factory, sizes, inline_max, dedicated_min):
    """Blob sizes straddling both thresholds: scan and bytes equal pylance's."""
    import lance
    from lance.blob import BlobType, blob_array

    values = [None if s is None else bytes([i % 251]) * s for i, s in enumerate(sizes)]
    meta = {"lance-encoding:blob-inline-size-threshold": str(inline_max),
            "lance-encoding:blob-dedicated-size-threshold": str(dedicated_min)}
    table = pa.Table.from_arrays([blob_array(values)],
                                 schema=pa.schema([pa.field("blob", BlobType(), metadata=meta)]))
    uri = str(tmp_path_factory.mktemp("sizes") / "ds")
    lance.write_dataset(table, uri, data_storage_version="2.2", max_rows_per_file=5)
    _same_scan(uri, lance, with_row_address=True)
    assert open_dataset(uri).take_blobs("blob", indices=list(range(len(values)))) == values
    assert not _errors(validate(uri, versions="all", deep=True))


# -- the data file's schema ----------------------------------------------------------------

def test_file_reader_reads_pylances_detached_descriptor_fields(every_kind):
    path = ib.data_file(every_kind)
    raw_fields = []
    from reference_impl.file.container import read_container

    c = read_container(LocalStore(str(path.parent)), path.name)
    raw_fields = [(f.id, f.parent_id, f.name) for f in c.fields]
    assert raw_fields[-5:] == [(-1, -1, n) for n, _t in blob.DESCRIPTOR_FIELDS]
    r = LanceFileReader(LocalStore(str(path.parent)), path.name)
    assert r.schema.field("blob").type == blob.DESCRIPTOR_TYPE
    assert [f.id for f in r.fields] == [0, 1]
    scanned = open_dataset(str(every_kind)).to_table(columns=["blob"]).column("blob").combine_chunks()
    assert r.read_all().column("blob").combine_chunks().equals(scanned)


def _field(fid, name, lt, parent=-1, nullable=True, meta=None):
    f = file_pb2.Field(id=fid, parent_id=parent, name=name, logical_type=lt, nullable=nullable)
    for k, v in (meta or {}).items():
        f.metadata[k] = v
    return f


_STRUCT_META = {"lance-encoding:blob": b"true", "lance-encoding:packed": b"true"}


def _descriptor_tail(names=None):
    names = names or [n for n, _t in blob.DESCRIPTOR_FIELDS]
    return [_field(-1, n, lt, nullable=False) for n, lt in zip(names, blob._DESCRIPTOR_LOGICAL, strict=True)]


def test_split_file_fields_accepts_only_pylances_form():
    plain = [_field(0, "a", "int64")]
    assert blob.split_file_fields(plain) == (plain, {})
    good = [_field(0, "id", "int64"), _field(1, "b", "struct", meta=_STRUCT_META)] + _descriptor_tail()
    kept, desc = blob.split_file_fields(good)
    assert [f.id for f in kept] == [0, 1] and desc == {1: blob.DESCRIPTOR_TYPE}
    bad_cases = [
        [_field(-1, "a", "int64")],  # id -1 outside a descriptor
        [_field(1, "b", "struct")] + _descriptor_tail(),  # struct without the blob keys
        [_field(1, "b", "struct", meta=_STRUCT_META)] + _descriptor_tail(
            ["kind", "position", "size", "blob_id", "uri"]),  # a wrong name
        [_field(1, "b", "struct", meta=_STRUCT_META)] + _descriptor_tail()[:4],  # one missing
    ]
    for fields in bad_cases:
        with pytest.raises(FormatError) as exc:
            blob.split_file_fields(fields, path="x.lance")
        assert exc.value.rule == "BLOB-001"


def test_sidecar_names_follow_pylance():
    assert blob.sidecar_name(1) == "1" + "0" * 31 + ".blob"
    assert blob.sidecar_name(2) == "01" + "0" * 30 + ".blob"
    assert blob.sidecar_name(3) == "11" + "0" * 30 + ".blob"
    assert blob.sidecar_key("data/abc.lance", 1) == "data/abc/1" + "0" * 31 + ".blob"
    with pytest.raises(InvalidInput):
        blob.sidecar_name(1 << 32)


def test_reader_errors_of_other_areas_are_reported_as_enc_046():
    """A reader error carrying a non-data-file rule id (say SCHEMA-008 from the file's own
    schema) is reported by the deep checks under ENC-046 instead of being dropped."""
    rid, msg, _off = checks.error_finding(FormatError("field 'x' has a negative id -2", rule="SCHEMA-008"))
    assert rid == "ENC-046" and "SCHEMA-008" in msg
    assert checks.error_finding(FormatError("bad", rule="BLOB-001"))[0] == "BLOB-001"
    assert checks.error_finding(FormatError("bad", rule="ENC-003"))[0] == "ENC-003"


# -- each rule on its corruption -----------------------------------------------------------

CASES = {
    "BLOB-001": ib._blob_001, "BLOB-002": ib._blob_002, "BLOB-003": ib._blob_003,
    "BLOB-004": ib._blob_004, "BLOB-005": ib._blob_005, "BLOB-006": ib._blob_006,
}


@pytest.mark.parametrize("rule_id", sorted(CASES))
def test_rule_fires_on_its_corruption_only(tmp_path, pylance, rule_id):
    root = tmp_path / "ds"
    root.mkdir()
    CASES[rule_id](root)
    report = validate(str(root), versions="all", deep=True)
    assert _rules(report) == [rule_id], report.findings
    if rule_id != "BLOB-006":  # a warning: the dataset still conforms
        assert _errors(report) == [rule_id]


def test_sidecar_damage_fails_take_blobs_with_blob_004(tmp_path, pylance):
    root = tmp_path / "ds"
    root.mkdir()
    ib._blob_004(root)
    ds = open_dataset(str(root))
    assert ds.take_blobs("blob", indices=[0, 3]) == [ib.INLINE, ib.PACKED[0]]
    with pytest.raises(FormatError) as exc:
        ds.take_blobs("blob", indices=[6])
    assert exc.value.rule == "BLOB-004"


def test_truncated_packed_sidecar_and_resized_dedicated_are_blob_004(tmp_path, pylance):
    root = tmp_path / "ds"
    root.mkdir()
    ib.write_blob_table(root)
    side = ib.data_file(root).with_suffix("")
    packed = side / blob.sidecar_name(1)
    packed.write_bytes(packed.read_bytes()[:250])  # the second packed blob ends at 300
    dedicated = side / blob.sidecar_name(2)
    dedicated.write_bytes(dedicated.read_bytes() + b"!")
    report = validate(str(root), versions="all", deep=True)
    msgs = [f.message for f in report.findings if f.rule == "BLOB-004"]
    assert _rules(report) == ["BLOB-004"] and len(msgs) == 2, msgs
    assert any("outside sidecar 1" in m for m in msgs) and any("not the whole sidecar 2" in m for m in msgs)


def test_descriptor_kind_mismatches_are_blob_002(tmp_path, pylance):
    """An inline descriptor with a blob_id, and a dedicated one not starting at 0."""
    root = tmp_path / "ds"
    root.mkdir()
    ib.write_blob_table(root)
    p = ib.data_file(root)
    old = ib.inline_descriptor(p)
    pos, size = struct.unpack_from("<QQ", old, 1)
    ib.patch_descriptor(p, old, ib.descriptor_bytes(0, pos, size, blob_id=9))
    old = ib.descriptor_bytes(2, 0, len(ib.DEDICATED[0]), blob_id=2)
    ib.patch_descriptor(p, old, ib.descriptor_bytes(2, 1, len(ib.DEDICATED[0]), blob_id=2))
    report = validate(str(root), versions="all", deep=True)
    msgs = sorted(f.message for f in report.findings if f.rule == "BLOB-002")
    assert any("inline descriptor" in m for m in msgs) and any("dedicated" in m for m in msgs), msgs


def test_relative_uri_without_base_is_blob_005(tmp_path, pylance):
    """An external descriptor whose uri is relative but names no base (blob_id 0)."""
    root = tmp_path / "ds"
    root.mkdir()
    ib.write_blob_table(root, external_base=tmp_path / "ext")
    p = ib.data_file(root)
    uri = ib.EXTERNAL_BASE_KEY.encode()
    base_id = open_dataset(str(root)).manifest.base_paths[0].id
    old = ib.descriptor_bytes(3, 0, 0, blob_id=base_id, uri=uri)
    ib.patch_descriptor(p, old, ib.descriptor_bytes(3, 0, 0, blob_id=0, uri=uri))
    report = validate(str(root), versions="all", deep=True)
    assert "BLOB-005" in _errors(report)
    assert any("not absolute" in f.message for f in report.findings if f.rule == "BLOB-005")


def test_external_range_past_the_object_is_blob_006(tmp_path, pylance):
    from lance.blob import Blob, BlobType, blob_array

    obj = tmp_path / "obj.bin"
    obj.write_bytes(b"0123456789")
    uri = str(tmp_path / "ds")
    table = pa.Table.from_arrays([blob_array([Blob.from_uri(obj.as_uri(), 2, 5),
                                              Blob.from_uri(obj.as_uri(), 8, 5)])],
                                 schema=pa.schema([pa.field("blob", BlobType())]))
    pylance.write_dataset(table, uri, data_storage_version="2.2", allow_external_blob_outside_bases=True)
    report = validate(uri, versions="all", deep=True)
    assert _rules(report) == ["BLOB-006"] and len(report.findings) == 1
    assert open_dataset(uri).take_blobs("blob", indices=[0]) == [b"23456"]
    with pytest.raises(FormatError) as exc:
        open_dataset(uri).take_blobs("blob", indices=[1])
    assert exc.value.rule == "BLOB-005"  # read_range reports the location's rule


def test_blob_v2_in_a_2_1_data_file_is_blob_001(tmp_path, pylance):
    """The manifest says blob v2 but the data file is 2.1 (a blob v1 column)."""
    from conformance.fixtures.corruption import latest_manifest, rewrite_manifest

    schema = pa.schema([pa.field("blob", pa.large_binary(), metadata={"lance-encoding:blob": "true"})])
    uri = tmp_path / "ds"
    pylance.write_dataset(pa.table({"blob": pa.array([b"x" * 10], pa.large_binary())}, schema=schema),
                          str(uri), data_storage_version="2.1")

    def as_v2(m):
        m.fields[0].extension_name = blob.EXTENSION_NAME

    rewrite_manifest(latest_manifest(uri), as_v2)
    report = validate(str(uri), versions="latest", deep=True)
    assert "BLOB-001" in _errors(report)
    with pytest.raises(FormatError) as exc:
        open_dataset(str(uri)).to_table()
    assert exc.value.rule == "BLOB-001"


def test_committed_fixtures_name_their_rule():
    root = Path(__file__).resolve().parents[3] / "fixtures" / "invalid"
    for rule_id in CASES:
        assert (root / rule_id / "case.json").exists(), rule_id


@pytest.mark.parametrize("rule_id", ["BLOB-001", "BLOB-002", "BLOB-003", "BLOB-004", "BLOB-005"])
def test_pylance_scans_the_corruption_deep_validation_reports(pylance, tmp_path, rule_id):
    """pylance 14.0.2 opens each BLOB-* fixture, scans it (``to_table`` returns the
    descriptors) and passes its own ``validate()``; only ``take_blobs`` of the damaged row fails
    (BLOB-001's renamed descriptor field not even that). ``validate --deep`` reports the rule."""
    import shutil

    table = tmp_path / "t"
    shutil.copytree(Path(__file__).resolve().parents[3] / "fixtures" / "invalid" / rule_id / "table", table)
    ds = pylance.dataset(str(table))
    assert ds.to_table().num_rows == ds.count_rows() > 0
    ds.validate()
    assert rule_id in _errors(validate(str(table), versions="all", deep=True))
