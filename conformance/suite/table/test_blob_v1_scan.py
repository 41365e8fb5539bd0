"""Blob v1 columns (``lance-encoding:blob`` large_binary in 2.0 and 2.1 datasets) scan as
pylance scans them: their (position, size) descriptions, in ``to_table``, with row ids, in
``take`` and under a filter; the bytes come from ``take_blobs`` (issue 30). In a legacy
(0.1) dataset no release reads such a column back, and the kit refuses it (BLOB-007)."""

from __future__ import annotations

import pyarrow as pa
import pytest

import reference_impl as ri
from conformance.engine import validate
from reference_impl.errors import FormatError
from reference_impl.table.blob import V1_DESCRIPTION_TYPE

VALUES = [b"abc", None, b"", b"xyzw" * 10, b"q" * 70_000, None, bytes(range(256))]


def _table(n=None):
    n = len(VALUES) if n is None else n
    field = pa.field("blob", pa.large_binary(), metadata={"lance-encoding:blob": "true"})
    return pa.Table.from_arrays(
        [pa.array(range(n), pa.int64()), pa.array(VALUES[:n], pa.large_binary())],
        schema=pa.schema([pa.field("id", pa.int64()), field]))


@pytest.fixture(params=["2.0", "2.1"])
def blob_v1(pylance, tmp_path, request):
    uri = str(tmp_path / "ds")
    pylance.write_dataset(_table(), uri, data_storage_version=request.param,
                          max_rows_per_file=4)
    pylance.dataset(uri).delete("id = 3")
    return uri


def test_scans_return_the_descriptions_pylance_returns(pylance, blob_v1):
    theirs, ours = pylance.dataset(blob_v1), ri.open_dataset(blob_v1)
    assert ours.schema.field("blob").type == pa.large_binary()  # the manifest's type
    got = ours.to_table()
    assert got.schema.field("blob").type == V1_DESCRIPTION_TYPE
    assert got.schema.field("blob").metadata == {b"lance-encoding:blob": b"true"}
    assert got == theirs.to_table()
    assert ours.to_table(with_row_id=True) == theirs.scanner(with_row_id=True).to_table()
    assert ours.take([0, 2, 4]) == theirs.take([0, 2, 4])
    assert ours.to_table(filter=pa.compute.field("id") > 1) == \
        theirs.to_table(filter="id > 1")
    assert ours.to_table(columns=["blob"]) == theirs.to_table(columns=["blob"])


def test_take_blobs_returns_the_bytes(pylance, blob_v1):
    theirs, ours = pylance.dataset(blob_v1), ri.open_dataset(blob_v1)
    live = [v for i, v in enumerate(VALUES) if i != 3]
    rows = list(range(len(live)))
    got = ours.take_blobs("blob", indices=rows)
    assert got == live  # None for a null, b"" for an empty one
    assert got == [None if b is None else b.read()
                   for b in theirs.take_blobs("blob", indices=rows)]
    ids = theirs.scanner(with_row_id=True).to_table()["_rowid"].to_pylist()
    assert ours.take_blobs("blob", ids=ids[::-1]) == live[::-1]
    assert validate(blob_v1, versions="all", deep=True).conforms


def test_our_writer_keeps_blob_bytes_through_an_update(pylance, blob_v1):
    """Operations that rewrite rows take a blob v1 column back as its bytes, not its
    descriptions (reference_impl.scan.with_blob_bytes)."""
    ours = ri.open_dataset(blob_v1)
    ours.update({"id": "id + 100"}, where="id < 2")
    theirs = pylance.dataset(blob_v1)
    rows = list(range(theirs.count_rows()))
    assert sorted(b.read() if b is not None else b"-" for b in
                  theirs.take_blobs("blob", indices=rows)) == \
        sorted(v if v is not None else b"-" for i, v in enumerate(VALUES) if i != 3)
    assert ri.open_dataset(blob_v1).to_table() == theirs.to_table()


def test_a_blob_column_in_a_legacy_dataset_is_refused_as_pylance_refuses_it(pylance, tmp_path):
    uri = str(tmp_path / "ds")
    pylance.write_dataset(_table(3), uri, data_storage_version="legacy")
    with pytest.raises(BaseException):  # noqa: B017 - 14.0.2 panics (PanicException)
        pylance.dataset(uri).to_table()
    with pytest.raises(FormatError) as err:
        ri.open_dataset(uri).to_table()
    assert err.value.rule == "BLOB-007"
    assert ri.open_dataset(uri).to_table(columns=["id"])["id"].to_pylist() == [0, 1, 2]
    assert "BLOB-007" in validate(uri).rules_violated()


def test_blob_v1_tables_draw_no_blob_007(blob_v1):
    assert "BLOB-007" not in validate(blob_v1, versions="all").rules_violated(None)


def test_descriptions_appended_as_blob_data_are_refused_as_pylance_refuses_them(pylance,
                                                                                 blob_v1):
    """pylance 14.0.2 appends what its own scan returns (the descriptions, a struct) to a 2.0
    table under the blob's field id and then cannot read the table; the column holds another shape than
    the manifest's field, which the kit refuses (DATAFILE-008), reader and validator."""
    theirs = pylance.dataset(blob_v1)
    if theirs.data_storage_version != "2.0":  # 2.1's writer refuses such data
        with pytest.raises(OSError, match="Blob encoding is not available"):
            pylance.write_dataset(theirs.to_table(limit=2), blob_v1, mode="append")
        return
    pylance.write_dataset(theirs.to_table(limit=2), blob_v1, mode="append")
    latest = pylance.dataset(blob_v1, version=1).versions()[-1]["version"]
    with pytest.raises(Exception, match="more fields in the schema"):
        pylance.dataset(blob_v1).to_table()
    with pytest.raises(FormatError) as err:
        ri.open_dataset(blob_v1).to_table()
    assert err.value.rule == "DATAFILE-008"
    report = validate(blob_v1, versions="all", deep=True)
    assert {f.location["version"] for f in report.violations
            if f.rule == "DATAFILE-008"} == {latest}, report.render("text")


def _mark_as_blob(uri: str, name: str) -> None:
    """Give field ``name`` of the latest manifest the ``lance-encoding:blob`` key, as pylance
    0.12 to 0.15 keep it on a column they store as plain ``large_binary``."""
    from reference_impl.io.uri import open_store
    from reference_impl.table.manifest import encode_manifest_file, read_manifest_file
    from reference_impl.table.versions import latest_entry

    store = open_store(uri)
    entry = latest_entry(store)
    mf = read_manifest_file(store, entry.key)
    field = next(f for f in mf.manifest.fields if f.name == name)
    field.metadata["lance-encoding:blob"] = b"true"
    store.put(entry.key, encode_manifest_file(mf.manifest, transaction=mf.transaction_bytes,
                                              index_section=mf.index_section))


def test_a_blob_v1_column_stored_plainly_scans_as_its_bytes(pylance, tmp_path):
    """pylance 0.12-0.15 write a ``lance-encoding:blob`` column of a 2.0 table as plain
    ``large_binary`` and read the bytes back; so does the kit, in a scan, ``take_blobs`` and
    the validator. (Every release that writes 2.1 encodes the column as a blob.)"""
    storage = "2.0"
    uri = str(tmp_path / "ds")
    plain = _table().cast(pa.schema([pa.field("id", pa.int64()),
                                     pa.field("blob", pa.large_binary())]))
    pylance.write_dataset(plain, uri, data_storage_version=storage, max_rows_per_file=4)
    _mark_as_blob(uri, "blob")
    ours = ri.open_dataset(uri)
    got = ours.to_table()
    assert got.schema.field("blob").type == pa.large_binary()
    assert got.column("blob").to_pylist() == VALUES
    assert ours.take_blobs("blob", indices=[0, 4]) == [VALUES[0], VALUES[4]]
    assert validate(uri, versions="all", deep=True).conforms


def test_a_blob_v1_column_stored_both_ways_is_refused(pylance, tmp_path):
    """Files that store one blob v1 column blob-encoded and plainly: a typed refusal."""
    uri = str(tmp_path / "ds")
    pylance.write_dataset(_table(), uri, data_storage_version="2.0")
    plain = _table().cast(pa.schema([pa.field("id", pa.int64()),
                                     pa.field("blob", pa.large_binary())]))
    tmp = str(tmp_path / "plain")
    pylance.write_dataset(plain, tmp, data_storage_version="2.0")
    # the first fragment stores descriptions, the appended one plain bytes
    frag = pylance.dataset(tmp).get_fragments()[0].metadata
    import shutil

    for f in frag.data_files():
        shutil.copy(f"{tmp}/data/{f.path}", f"{uri}/data/{f.path}")
    op = pylance.LanceOperation.Append([frag])
    pylance.LanceDataset.commit(uri, op, read_version=1)
    ours = ri.open_dataset(uri)
    with pytest.raises(FormatError) as err:
        ours.to_table()
    assert err.value.rule == "ENC-047"
