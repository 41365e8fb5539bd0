"""Our ``write_dataset`` writes blob v2 at 2.2, as pylance 14.0.2's dataset writer does
(``reference_impl/table/blob.py`` "writing", ``file/encode/blob.py`` ``BlobV2Page``).

The same input written by both: pylance reads our dataset to the same descriptors as its own
(kinds, sidecar ids, positions and sizes), the manifest schemas and the sidecar files (names
and sizes) are equal, ``take_blobs`` (ours and pylance's) returns the input, appends work
both ways, and ``validate --deep`` finds nothing. Below 2.2 a ``lance-encoding:blob`` column
stays blob v1 and the ``lance.blob.v2`` struct is refused, like pylance.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conformance.engine.local import validate
from reference_impl.dataset import open_dataset
from reference_impl.errors import InvalidInput
from reference_impl.table import blob
from reference_impl.write import write_dataset

SMALL = {"lance-encoding:blob-inline-size-threshold": "24",
         "lance-encoding:blob-dedicated-size-threshold": "1000"}
VALUES = [b"tiny", None, b"", b"p" * 100, b"q" * 200, b"d" * 1500, b"inline-again", b"e" * 3000, None]


def _table(values, meta=SMALL, start=0):
    md = {"lance-encoding:blob": "true", **(meta or {})}
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("blob", pa.large_binary(), metadata=md)])
    return pa.table({"id": pa.array(range(start, start + len(values)), pa.int64()),
                     "blob": pa.array(values, pa.large_binary())}, schema=schema)


def _sidecars(root: Path) -> list:
    """(data file index, sidecar name, size) of every sidecar, data files in fragment order."""
    ds = open_dataset(str(root))
    out = []
    for i, frag in enumerate(ds.manifest.fragments):
        stem = frag.files[0].path.removesuffix(".lance")
        for p in sorted((root / "data" / stem).glob("*.blob")) if (root / "data" / stem).is_dir() else []:
            out.append((i, p.name, p.stat().st_size))
    return out


def _fields(root):
    return [(f.id, f.parent_id, f.name, f.logical_type, f.extension_name, dict(f.metadata), f.nullable)
            for f in open_dataset(str(root)).manifest.fields]


def _errors(report):
    return sorted({f.rule for f in report.findings if str(getattr(f.severity, "value", f.severity)) == "error"})


def _both(tmp_path, pylance, table, **kw):
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    write_dataset(table, str(ours), data_storage_version="2.2", **kw)
    pylance.write_dataset(table, str(theirs), data_storage_version="2.2", **kw)
    return ours, theirs


def test_same_descriptors_schema_and_sidecars_as_pylance(tmp_path, pylance):
    ours, theirs = _both(tmp_path, pylance, _table(VALUES), max_rows_per_file=5)
    a = pylance.dataset(str(ours)).to_table(with_row_id=True)
    b = pylance.dataset(str(theirs)).to_table(with_row_id=True)
    assert a.equals(b), (a.to_pylist(), b.to_pylist())
    assert open_dataset(str(ours)).to_table(with_row_id=True).equals(b)
    assert _fields(ours) == _fields(theirs)
    assert _sidecars(ours) == _sidecars(theirs) and _sidecars(ours)
    n = len(VALUES)
    assert [None if x is None else x.readall()
            for x in pylance.dataset(str(ours)).take_blobs("blob", indices=list(range(n)))] == VALUES
    assert open_dataset(str(ours)).take_blobs("blob", indices=list(range(n))) == VALUES
    report = validate(str(ours), versions="all", deep=True)
    assert not report.findings, report.findings


def test_default_thresholds_follow_pylance(tmp_path, pylance):
    """64 KiB inline, 4 MiB packed (probed on pylance 14.0.2)."""
    assert (blob.DEFAULT_INLINE_THRESHOLD, blob.DEFAULT_DEDICATED_THRESHOLD) == (65536, 4 << 20)
    values = [b"a" * 65536, b"b" * 65537, b"c" * (4 << 20), b"d" * ((4 << 20) + 1)]
    ours, theirs = _both(tmp_path, pylance, _table(values, meta=None))
    kinds = [d["kind"] for d in open_dataset(str(ours)).to_table().column("blob").to_pylist()]
    assert kinds == [0, 1, 1, 2]
    assert pylance.dataset(str(ours)).to_table().equals(pylance.dataset(str(theirs)).to_table())
    assert _sidecars(ours) == _sidecars(theirs)


def test_appends_both_ways(tmp_path, pylance):
    ours, theirs = _both(tmp_path, pylance, _table(VALUES[:4]))
    more = _table(VALUES[4:], start=4)
    write_dataset(more, str(theirs), mode="append")   # ours onto pylance's dataset
    pylance.write_dataset(more, str(ours), mode="append")  # pylance's onto ours
    for root in (ours, theirs):
        assert open_dataset(str(root)).take_blobs("blob", indices=list(range(len(VALUES)))) == VALUES
        assert not _errors(validate(str(root), versions="all", deep=True))
    assert pylance.dataset(str(ours)).to_table().equals(pylance.dataset(str(theirs)).to_table())


def test_blob_v2_struct_input_and_external_uris(tmp_path, pylance):
    from lance.blob import Blob, BlobType, blob_array

    obj = tmp_path / "obj.bin"
    obj.write_bytes(bytes(range(100)))
    values = [b"inline", Blob.from_uri(obj.as_uri()), Blob.from_uri(obj.as_uri(), 10, 5), None]
    table = pa.Table.from_arrays([blob_array(values)],
                                 schema=pa.schema([pa.field("blob", BlobType())]))
    with pytest.raises(InvalidInput):
        write_dataset(table, str(tmp_path / "refused"), data_storage_version="2.2")
    ours, theirs = _both(tmp_path, pylance, table, allow_external_blob_outside_bases=True)
    assert pylance.dataset(str(ours)).to_table().equals(pylance.dataset(str(theirs)).to_table())
    assert _fields(ours) == _fields(theirs)
    want = [b"inline", bytes(range(100)), bytes(range(10, 15)), None]
    assert open_dataset(str(ours)).take_blobs("blob", indices=[0, 1, 2, 3]) == want
    assert [None if b is None else b.readall()
            for b in pylance.dataset(str(ours)).take_blobs("blob", indices=[0, 1, 2, 3])] == want


def test_below_2_2_blob_v1_stays_and_blob_v2_is_refused(tmp_path, pylance):
    from lance.blob import BlobType, blob_array

    write_dataset(_table([b"x" * 10]), str(tmp_path / "v1"), data_storage_version="2.1")
    assert not any(blob.is_blob_v2(f) for f in open_dataset(str(tmp_path / "v1")).manifest.fields)
    table = pa.Table.from_arrays([blob_array([b"x"])], schema=pa.schema([pa.field("blob", BlobType())]))
    with pytest.raises(InvalidInput, match="Blob v2 requires file version >= 2.2"):
        write_dataset(table, str(tmp_path / "v2"), data_storage_version="2.1")
    with pytest.raises(OSError, match="Blob v2 requires file version >= 2.2"):
        pylance.write_dataset(table, str(tmp_path / "py"), data_storage_version="2.1")


def test_pack_file_threshold_starts_new_sidecars(tmp_path, pylance):
    meta = {**SMALL, "lance-encoding:blob-pack-file-size-threshold": "250"}
    values = [b"a" * 100, b"b" * 100, b"c" * 100, b"d" * 200, b"e" * 60]
    ours, theirs = _both(tmp_path, pylance, _table(values, meta=meta))
    assert _sidecars(ours) == _sidecars(theirs)
    assert len(_sidecars(ours)) > 1
    assert pylance.dataset(str(ours)).to_table().equals(pylance.dataset(str(theirs)).to_table())


@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.one_of(st.none(), st.integers(0, 80)), min_size=1, max_size=10),
       st.integers(0, 30), st.integers(31, 60))
def test_random_sizes_write_like_pylance(tmp_path_factory, sizes, inline_max, dedicated_max):
    import lance

    values = [None if s is None else bytes([65 + i % 26]) * s for i, s in enumerate(sizes)]
    meta = {"lance-encoding:blob-inline-size-threshold": str(inline_max),
            "lance-encoding:blob-dedicated-size-threshold": str(dedicated_max)}
    root = tmp_path_factory.mktemp("w")
    table = _table(values, meta=meta)
    write_dataset(table, str(root / "ours"), data_storage_version="2.2", max_rows_per_file=4)
    lance.write_dataset(table, str(root / "theirs"), data_storage_version="2.2", max_rows_per_file=4)
    a = lance.dataset(str(root / "ours")).to_table()
    assert a.equals(lance.dataset(str(root / "theirs")).to_table())
    assert _sidecars(root / "ours") == _sidecars(root / "theirs")
    assert open_dataset(str(root / "ours")).take_blobs("blob", indices=list(range(len(values)))) == values


def test_update_and_compaction_carry_the_blob_bytes(tmp_path, pylance):
    """Operations that rewrite rows read the blobs back as bytes and write them again
    (inline, packed and dedicated), instead of writing the descriptors as data."""
    uri = str(tmp_path / "ds")
    write_dataset(_table(VALUES), uri, data_storage_version="2.2", max_rows_per_file=3)
    open_dataset(uri).delete("id = 0")
    open_dataset(uri).update({"id": "id + 100"}, where="id = 5 OR id = 7")
    ds = open_dataset(uri).compact_files()
    t = ds.to_table()
    by_id = dict(zip(t.column("id").to_pylist(), ds.take_blobs("blob", indices=list(range(t.num_rows))),
                     strict=True))
    want = {i: v for i, v in enumerate(VALUES) if i != 0}
    want = {(i + 100 if i in (5, 7) else i): v for i, v in want.items()}
    assert by_id == want
    assert len(ds.manifest.fragments) == 1
    theirs = [None if b is None else b.readall()
              for b in pylance.dataset(uri).take_blobs("blob", indices=list(range(t.num_rows)))]
    assert theirs == list(by_id.values())
    assert not _errors(validate(uri, versions="all", deep=True))


def test_rows_with_neither_data_nor_uri_are_refused(tmp_path):
    struct = pa.struct([pa.field("data", pa.large_binary()), pa.field("uri", pa.utf8())])
    arr = pa.array([{"data": None, "uri": None}], struct)
    field = pa.field("blob", struct, metadata={b"ARROW:extension:name": b"lance.blob.v2"})
    with pytest.raises(InvalidInput, match="neither data nor uri"):
        write_dataset(pa.Table.from_arrays([arr], schema=pa.schema([field])), str(tmp_path / "ds"),
                      data_storage_version="2.2")


def test_external_uri_under_a_registered_base_is_stored_relative(tmp_path, pylance):
    """An append to a dataset with a (non-root) base path stores an external blob under it as
    pylance does: blob_id = the base's id, the uri relative to the base."""
    import shutil

    from lance import DatasetBasePath
    from lance.blob import BlobType, blob_array

    base = tmp_path / "ext"
    base.mkdir()
    (base / "sub").mkdir()
    (base / "sub" / "x.bin").write_bytes(b"external-bytes")
    schema = pa.schema([pa.field("blob", BlobType())])
    first = pa.Table.from_arrays([blob_array([b"a"])], schema=schema)
    ours = tmp_path / "ours"
    pylance.write_dataset(first, str(ours), data_storage_version="2.2",
                          initial_bases=[DatasetBasePath(str(base), name="ext")])
    theirs = tmp_path / "theirs"
    shutil.copytree(ours, theirs)
    more = pa.Table.from_arrays([blob_array([f"{base.as_uri()}/sub/x.bin"])], schema=schema)
    write_dataset(more, str(ours), mode="append")
    pylance.write_dataset(more, str(theirs), mode="append")
    a = pylance.dataset(str(ours)).to_table()
    assert a.equals(pylance.dataset(str(theirs)).to_table())
    assert a.column("blob").to_pylist()[1]["blob_uri"] == "sub/x.bin"
    assert open_dataset(str(ours)).take_blobs("blob", indices=[0, 1]) == [b"a", b"external-bytes"]
    outside = pa.Table.from_arrays([blob_array([(tmp_path / "elsewhere.bin").as_uri()])], schema=schema)
    with pytest.raises(InvalidInput, match="no registered base path"):
        write_dataset(outside, str(ours), mode="append")
