"""Blob v2 columns nested in a struct or a list (``reference_impl/table/blob.py``).

pylance 14.0.2 writes a ``lance.blob.v2`` field as a struct's child (``info: struct<name,
blob>``) and as a list's item (``list<lance.blob.v2>``): the data file lists the nested
struct with no children and the five detached id -1 descriptor fields after it, and a scan
returns the descriptor struct in place. ``take_blobs`` reads a struct's blob by its dotted
path (``info.blob``) and refuses a list's. (Found in lancedb's suite,
``test_blob.py::test_fetch_blobs_nested_path*``; the kit refused such files with a false
ENC-045 "packed struct 'blob' decoded 5 of 0 children".)

We check that our scan is pylance's (schema and values, nulls of the blob and of its parent,
every descriptor kind), that our ``take_blobs`` reads pylance's bytes, that a list path and a
non-blob path are refused with ``InvalidInput``, that ``validate --deep`` finds no error and
follows nested descriptors to their bytes (BLOB-004 names ``info.blob``), and (without pylance) that the file schema gets the descriptor type wherever the blob sits and
that our writer refuses a nested blob with a typed error.
"""

from __future__ import annotations

import pyarrow as pa
import pytest

from conformance.engine.local import validate
from reference_impl.dataset import open_dataset
from reference_impl.errors import InvalidInput, UnsupportedFeature
from reference_impl.table import blob
from reference_impl.write import write_dataset

#: inline, packed (over the 64 KiB inline threshold), null, dedicated (over 4 MiB), empty
VALUES = [b"nested-alpha", b"p" * 100_000, None, b"d" * (4 * 1024 * 1024 + 1), b""]


def _errors(report):
    return sorted({f.rule for f in report.findings
                   if str(getattr(f.severity, "value", f.severity)) == "error"})


def _same_scan(path, lance, **kw):
    ours = open_dataset(str(path)).to_table(**kw)
    theirs = lance.dataset(str(path)).to_table(**kw)
    assert ours.schema.equals(theirs.schema, check_metadata=True), (ours.schema, theirs.schema)
    assert ours.equals(theirs), (ours.to_pylist(), theirs.to_pylist())
    return ours


@pytest.fixture(scope="module")
def nested(tmp_path_factory, pylance):
    """pylance 14.0.2's 2.2 tables: ``info: struct<name, blob>`` (a null parent row too) and
    ``l: list<blob>`` / ``ll: large_list<blob>``."""
    from lance.blob import blob_array

    root = tmp_path_factory.mktemp("nested-blob")
    n = len(VALUES)
    info = pa.StructArray.from_arrays(
        [pa.array([f"row{i}" for i in range(n)]), blob_array(VALUES)], names=["name", "blob"],
        mask=pa.array([False, False, False, False, True]))
    pylance.write_dataset(pa.table({"id": pa.array(range(n), pa.int64()), "info": info}),
                          str(root / "struct"), data_storage_version="2.2")
    items = blob_array([b"a", b"b" * 100_000, b"ccc"])  # (the second one packed)
    lists = pa.table({
        "id": pa.array([1, 2], pa.int64()),
        "l": pa.ListArray.from_arrays(pa.array([0, 2, 3], pa.int32()), items),
        "ll": pa.LargeListArray.from_arrays(pa.array([0, 1, 3], pa.int64()), items)})
    pylance.write_dataset(lists, str(root / "list"), data_storage_version="2.2")
    return root


@pytest.mark.interop
def test_struct_blob_scans_as_pylance_in_place(nested, pylance):
    t = _same_scan(nested / "struct", pylance, with_row_id=True)
    assert t.schema.field("info").type.field("blob").type == blob.DESCRIPTOR_TYPE
    kinds = [None if r is None or r["blob"] is None else r["blob"]["kind"]
             for r in t.column("info").to_pylist()]
    assert kinds == [0, 1, None, 2, None]  # (the empty blob's parent row is null)
    _same_scan(nested / "struct", pylance, columns=["info"])
    _same_scan(nested / "struct", pylance, columns=["id"], filter=pa.compute.field("id") > 1)


@pytest.mark.interop
def test_list_blob_scans_as_pylance_in_place(nested, pylance):
    t = _same_scan(nested / "list", pylance)
    assert t.schema.field("l").type.value_type == blob.DESCRIPTOR_TYPE
    assert [len(r) for r in t.column("ll").to_pylist()] == [1, 2]


@pytest.mark.interop
def test_take_blobs_reads_a_struct_blob_by_its_path(nested, pylance):
    ours = open_dataset(str(nested / "struct"))
    theirs = pylance.dataset(str(nested / "struct"))
    rows = list(range(len(VALUES)))
    want = [None if b is None else b.readall()
            for b in theirs.take_blobs("info.blob", indices=rows)]
    assert want == VALUES[:4] + [None]  # a null parent is a null blob
    assert ours.take_blobs("info.blob", indices=rows) == want
    assert ours.take_blobs("info.blob", indices=[3, 0]) == [want[3], want[0]]


@pytest.mark.interop
@pytest.mark.parametrize("table, column", [("list", "l"), ("list", "l.item"),
                                           ("struct", "info.name"), ("struct", "info.nope"),
                                           ("struct", "id")])
def test_take_blobs_refuses_what_pylance_refuses(nested, pylance, table, column):
    with pytest.raises((ValueError, RuntimeError)):
        pylance.dataset(str(nested / table)).take_blobs(column, indices=[0])
    with pytest.raises(InvalidInput, match=r"not a blob column|not a struct|not in the schema"):
        open_dataset(str(nested / table)).take_blobs(column, indices=[0])


@pytest.mark.interop
@pytest.mark.parametrize("table", ["struct", "list"])
def test_nested_blob_tables_conform_deep(nested, table):
    report = validate(str(nested / table), versions="all", deep=True)
    assert not _errors(report), report.findings


@pytest.mark.interop
@pytest.mark.parametrize("table, fields", [("struct", {"info.blob"}),
                                           ("list", {"l.item", "ll.item"})])
def test_deep_validation_follows_nested_descriptors_to_their_sidecars(nested, tmp_path, table,
                                                                      fields):
    """BLOB-002..006 follow a nested blob's descriptors too (a list's per item): with the
    sidecars gone, BLOB-004 names the nested field by its path."""
    import shutil

    root = tmp_path / table
    shutil.copytree(nested / table, root)
    sidecars = list(root.glob("data/*/*.blob"))
    assert sidecars
    for p in sidecars:
        p.unlink()
    report = validate(str(root), versions="all", deep=True)
    assert _errors(report) == ["BLOB-004"], report.findings
    assert {f.location.get("field") for f in report.findings if f.rule == "BLOB-004"} == fields


def test_descriptor_types_reach_nested_blob_structs():
    """No pylance: the data file's Arrow schema (as ``fields_to_arrow`` makes it, blob
    structs childless) gets the descriptor type in a struct, a list and a map."""
    meta = {b"lance-encoding:blob": b"true", b"lance-encoding:packed": b"true"}

    def childless(fid):
        return pa.field("blob", pa.struct([]), metadata={**meta, b"lance:field_id": str(fid).encode()})

    schema = pa.schema([
        pa.field("id", pa.int64(), metadata={b"lance:field_id": b"0"}),
        pa.field("info", pa.struct([pa.field("name", pa.utf8()), childless(3)])),
        pa.field("l", pa.list_(childless(5))),
        pa.field("m", pa.map_(pa.utf8(), pa.field("v", pa.struct([childless(7)])))),
    ])
    got = blob.with_descriptor_types(schema, {3: blob.DESCRIPTOR_TYPE, 5: blob.DESCRIPTOR_TYPE,
                                              7: blob.DESCRIPTOR_TYPE})
    assert got.field("info").type.field("blob").type == blob.DESCRIPTOR_TYPE
    assert got.field("info").type.field("blob").metadata[b"lance:field_id"] == b"3"
    assert got.field("l").type.value_type == blob.DESCRIPTOR_TYPE
    assert got.field("m").type.item_type.field("blob").type == blob.DESCRIPTOR_TYPE
    assert got.field("id") == schema.field("id")
    assert blob.with_descriptor_types(schema, {}) is schema


def test_scan_schema_puts_descriptors_where_the_blob_sits():
    ext = {b"ARROW:extension:name": b"lance.blob.v2"}
    manifest_blob = pa.field("blob", pa.struct([pa.field("data", pa.large_binary()),
                                                pa.field("uri", pa.utf8())]), metadata=ext)
    schema = pa.schema([pa.field("info", pa.struct([pa.field("name", pa.utf8()), manifest_blob])),
                        pa.field("l", pa.large_list(manifest_blob)),
                        pa.field("plain", pa.struct([pa.field("x", pa.int32())]))])
    got = blob.scan_schema(schema)
    assert got.field("info").type.field("blob").type == blob.DESCRIPTOR_TYPE
    assert got.field("l").type.value_type == blob.DESCRIPTOR_TYPE
    assert got.field("plain") == schema.field("plain")
    assert blob.has_nested_blob_v2(schema.field("info"))
    assert not blob.has_nested_blob_v2(schema.field("plain"))
    assert not blob.has_nested_blob_v2(manifest_blob)  # (itself, not below it)


def test_writer_refuses_a_nested_blob_with_a_typed_error(tmp_path):
    ext = {b"ARROW:extension:name": b"lance.blob.v2"}
    blob_type = pa.struct([pa.field("data", pa.large_binary()), pa.field("uri", pa.utf8())])
    values = pa.StructArray.from_arrays([pa.array([b"x"], pa.large_binary()),
                                         pa.array([None], pa.utf8())], fields=list(blob_type))
    info = pa.StructArray.from_arrays([pa.array(["a"]), values],
                                      fields=[pa.field("name", pa.utf8()),
                                              pa.field("blob", blob_type, metadata=ext)])
    with pytest.raises(UnsupportedFeature, match="nested in a struct or list"):
        write_dataset(pa.table({"info": info}), str(tmp_path / "t"), data_storage_version="2.2")
