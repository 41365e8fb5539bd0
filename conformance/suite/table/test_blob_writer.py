"""The writer's blob columns (``reference_impl/file/encode/blob.py``; FILE-ENCODINGS §2.2,
§3.5): a top-level ``large_binary`` field with ``lance-encoding:blob`` metadata.

Checked here: the column/page encodings are the blob ones (2.0 ``ColumnEncoding.blob`` +
packed (u64, u64) descriptor pages; 2.1/2.2 ``blob_layout`` over a mini-block
``packed_struct[64, 64]``), every blob sits on a 64-byte boundary at the absolute
position its descriptor gives and ahead of its page's buffers, nulls and empties use
pylance 14.0.2's conventions, and our files are byte-identical to pylance's for the same
table. Our reader and pylance read our files back; datasets written by our
``write_dataset`` serve ``take_blobs`` in pylance and pass ``validate --deep``.

pylance's own blob files read by our reader are covered in ``test_file_v2_0.py``
(``test_blob_column_reads_bytes_nulls_and_empties``) and ``test_file_v2_1.py``
(``test_blob_columns``).
"""

from __future__ import annotations

import struct

import numpy as np
import pyarrow as pa
import pytest
from google.protobuf import any_pb2
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conformance.cli import main
from reference_impl.errors import InvalidInput, UnsupportedFeature
from reference_impl.file.container import read_container
from reference_impl.file.encode.blob import NULL_POSITION, is_blob_field
from reference_impl.file.encodings.v2_1 import mini_block
from reference_impl.file.page import read_page_buffers
from reference_impl.file.reader import LanceFileReader
from reference_impl.file.writer import write_lance_file
from reference_impl.io.local import LocalStore
from reference_impl.proto import encodings_v2_0_pb2 as e20
from reference_impl.proto import encodings_v2_1_pb2 as e21

VERSIONS = ["2.0", "2.1", "2.2"]
BLOB_MD = {"lance-encoding:blob": "true"}
VALUES = [b"a" * 100, None, b"", b"xyz" * 50, None, b"q", bytes(range(256)) * 5]


def blob_table(values, *, extra: bool = False, md=None) -> pa.Table:
    fields = [pa.field("b", pa.large_binary(), metadata=md or BLOB_MD)]
    cols = [pa.array(values, pa.large_binary())]
    if extra:
        fields.insert(0, pa.field("i", pa.int32()))
        cols.insert(0, pa.array(np.arange(len(values), dtype=np.int32)))
    return pa.Table.from_arrays(cols, schema=pa.schema(fields))


def write_ours(tmp_path, table, version, name="ours.lance", **kw):
    write_lance_file(LocalStore(str(tmp_path)), name, table, version=version, **kw)
    return tmp_path / name


def write_pylance(tmp_path, table, version, name="theirs.lance"):
    from lance.file import LanceFileWriter

    path = tmp_path / name
    writer = LanceFileWriter(str(path), table.schema, version=version)
    writer.write_batch(table)
    writer.close()
    return path


def read_ours(path) -> pa.Table:
    return LanceFileReader(LocalStore(str(path.parent)), path.name).read_all()


def read_pylance(path) -> pa.Table:
    from lance.file import LanceFileReader as PylanceReader

    return PylanceReader(str(path)).read_all().to_table()


def _unpack(raw: bytes, message):
    wrapper = any_pb2.Any()
    wrapper.ParseFromString(raw)
    assert wrapper.type_url == "/" + message.DESCRIPTOR.full_name
    message.ParseFromString(wrapper.value)
    return message


def blob_pages(path, column: int):
    """``(container, column metadata, [(page, encoding message, descriptors (n, 2) u64)])``."""
    container = read_container(LocalStore(str(path.parent)), path.name)
    meta = container.columns[column]
    out = []
    for page in meta.pages:
        buffers = read_page_buffers(container, page)
        if container.version_name == "2.0":
            msg = _unpack(page.encoding.direct.encoding, e20.ArrayEncoding())
            raw = bytes(buffers[0])
        else:
            msg = _unpack(page.encoding.direct.encoding, e21.PageLayout())
            inner = msg.blob_layout.inner_layout.mini_block_layout
            _, _, values = mini_block.decode(inner, buffers, container.version_name, int(page.length))
            raw = values.data.tobytes()
        desc = np.frombuffer(raw, "<u8").reshape(-1, 2)
        assert len(desc) == page.length
        out.append((page, msg, desc))
    return container, meta, out


# -- encodings and layout -------------------------------------------------------------------


@pytest.mark.parametrize("version", VERSIONS)
def test_blob_encodings_are_the_blob_ones(tmp_path, version):
    path = write_ours(tmp_path, blob_table(VALUES, extra=True), version)
    container, meta, pages = blob_pages(path, 1)
    col_enc = _unpack(meta.encoding.direct.encoding, e20.ColumnEncoding())
    other = _unpack(container.columns[0].encoding.direct.encoding, e20.ColumnEncoding())
    assert other.WhichOneof("column_encoding") == "values"
    assert len(pages) == 1
    _, msg, _ = pages[0]
    if version == "2.0":
        assert col_enc.WhichOneof("column_encoding") == "blob"
        assert col_enc.blob.inner.WhichOneof("column_encoding") == "values"
        assert msg.WhichOneof("array_encoding") == "packed_struct"
        inner = msg.packed_struct.inner
        assert [n.nullable.no_nulls.values.flat.bits_per_value for n in inner] == [64, 64]
    else:
        assert col_enc.WhichOneof("column_encoding") == "values"
        assert msg.WhichOneof("layout") == "blob_layout"
        mb = msg.blob_layout.inner_layout.mini_block_layout
        vc = mb.value_compression
        assert list(vc.packed_struct.bits_per_value) == [64, 64]
        assert vc.packed_struct.values.flat.bits_per_value == 128
        assert list(mb.layers) == [e21.REPDEF_ALL_VALID_ITEM]
        assert mb.num_items == len(VALUES)
        assert mb.has_large_chunk == (version == "2.2")
        assert list(msg.blob_layout.layers) == [e21.REPDEF_NULLABLE_ITEM]


@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_blob_layer_all_valid_without_nulls(tmp_path, version):
    path = write_ours(tmp_path, blob_table([b"x" * 70, b"", b"y"]), version)
    _, _, pages = blob_pages(path, 0)
    assert list(pages[0][1].blob_layout.layers) == [e21.REPDEF_ALL_VALID_ITEM]


@pytest.mark.parametrize("version", VERSIONS)
def test_blob_positions_absolute_aligned_and_ahead_of_pages(tmp_path, version):
    values = VALUES * 3
    # several pages per column, interleaved with the int column's pages
    path = write_ours(tmp_path, blob_table(values, extra=True), version, max_rows_per_page=5)
    data = path.read_bytes()
    _, _, pages = blob_pages(path, 1)
    assert len(pages) == 5
    desc = np.concatenate([d for _, _, d in pages])
    row = 0
    for page, _, d in pages:
        first_buffer = min(page.buffer_offsets)
        for pos, size in d:
            v = values[row]
            row += 1
            if v is None:
                assert (pos, size) == (NULL_POSITION[version], 0)
            elif v == b"":
                assert (pos, size) == (0, 0)
            else:
                assert size == len(v) and pos % 64 == 0 and pos + size <= first_buffer
                assert data[pos : pos + size] == v
    assert row == len(values)
    live = desc[desc[:, 1] > 0]
    assert live[0, 0] > 0  # absolute: the int column's first page came first
    assert np.all(np.diff(live[:, 0].astype(np.int64)) > 0)


@pytest.mark.parametrize("version", VERSIONS)
def test_blob_file_is_byte_identical_to_pylance(pylance, tmp_path, version):
    table = blob_table(VALUES)
    ours = write_ours(tmp_path, table, version)
    theirs = write_pylance(tmp_path, table, version)
    assert ours.read_bytes() == theirs.read_bytes()


@pytest.mark.parametrize("version", VERSIONS)
def test_blob_all_null_and_all_empty_like_pylance(pylance, tmp_path, version):
    for i, values in enumerate(([None, None], [b"", b""])):
        table = blob_table(values)
        ours = write_ours(tmp_path, table, version, f"o{i}.lance")
        theirs = write_pylance(tmp_path, table, version, f"t{i}.lance")
        assert ours.read_bytes() == theirs.read_bytes()
        assert read_ours(ours).column(0).to_pylist() == values
        assert read_pylance(ours).column(0).to_pylist() == values


# -- round trips -----------------------------------------------------------------------------


@pytest.mark.parametrize("version", VERSIONS)
def test_blob_round_trip_ours_and_pylance(pylance, tmp_path, version):
    values = VALUES * 4
    table = blob_table(values, extra=True)
    path = write_ours(tmp_path, table, version, max_rows_per_page=9)
    mine = read_ours(path)
    assert mine.column("b").to_pylist() == values
    assert mine.column("i").to_pylist() == list(range(len(values)))
    assert read_pylance(path).column("b").to_pylist() == values
    r = LanceFileReader(LocalStore(str(tmp_path)), path.name)
    assert r.take([27, 1, 6, 13], ["b"]).column(0).to_pylist() == [values[i] for i in (27, 1, 6, 13)]
    assert r.read_range(5, 12, ["b"]).column(0).to_pylist() == values[5:12]


@pytest.mark.parametrize("version", VERSIONS)
def test_blob_key_value_does_not_matter(pylance, tmp_path, version):
    """pylance 14.0.2's file writer makes a blob column for any value of the key."""
    table = blob_table([b"x" * 70, b"y"], md={"lance-encoding:blob": "false"})
    assert is_blob_field(table.schema.field(0))
    ours = write_ours(tmp_path, table, version)
    assert ours.read_bytes() == write_pylance(tmp_path, table, version).read_bytes()


@pytest.mark.parametrize(
    "field, error",
    [
        (pa.field("b", pa.binary(), metadata=BLOB_MD), InvalidInput),
        (pa.field("b", pa.large_string(), metadata=BLOB_MD), InvalidInput),
        (pa.field("b", pa.struct([pa.field("c", pa.large_binary(), metadata=BLOB_MD)])),
         UnsupportedFeature),
    ],
)
@pytest.mark.parametrize("version", VERSIONS)
def test_blob_refusals(tmp_path, version, field, error):
    table = pa.Table.from_arrays([pa.array([None], field.type)], schema=pa.schema([field]))
    with pytest.raises(error):
        write_ours(tmp_path, table, version)
    assert not (tmp_path / "ours.lance").exists()


def test_pylance_refuses_binary_blobs_too(pylance, tmp_path):
    table = pa.Table.from_arrays(
        [pa.array([b"x"], pa.binary())],
        schema=pa.schema([pa.field("b", pa.binary(), metadata=BLOB_MD)]),
    )
    with pytest.raises(Exception, match="LargeBinary"):
        write_pylance(tmp_path, table, "2.1")


def test_blob_hint_without_blob_key_stays_binary(tmp_path):
    table = pa.table({"b": pa.array([b"x" * 70, None], pa.large_binary())})
    path = write_ours(tmp_path, table, "2.1")
    container = read_container(LocalStore(str(tmp_path)), path.name)
    layout = _unpack(container.columns[0].pages[0].encoding.direct.encoding, e21.PageLayout())
    assert layout.WhichOneof("layout") != "blob_layout"


# -- hypothesis --------------------------------------------------------------------------------

blob_values = st.lists(
    st.one_of(st.none(), st.binary(min_size=0, max_size=4096), st.just(b"")),
    min_size=1,
    max_size=120,
)


def _property(pylance, tmp_path, version, values, rows_per_page):
    table = blob_table(values, extra=True)
    path = write_ours(tmp_path, table, version, max_rows_per_page=rows_per_page)
    assert read_ours(path).column("b").to_pylist() == values
    assert read_pylance(path).column("b").to_pylist() == values
    _, _, pages = blob_pages(path, 1)
    desc = np.concatenate([d for _, _, d in pages])
    live = desc[:, 1] > 0
    assert np.all(desc[live, 0] % 64 == 0)


@pytest.mark.parametrize("version", VERSIONS)
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(values=blob_values, rows_per_page=st.integers(1, 200))
def test_blob_property(pylance, tmp_path_factory, version, values, rows_per_page):
    _property(pylance, tmp_path_factory.mktemp("blob"), version, values, rows_per_page)


@pytest.mark.slow
@pytest.mark.parametrize("version", VERSIONS)
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    values=st.lists(st.one_of(st.none(), st.binary(max_size=4096)), min_size=1, max_size=2000),
    rows_per_page=st.integers(1, 3000),
)
def test_blob_property_slow(pylance, tmp_path_factory, version, values, rows_per_page):
    _property(pylance, tmp_path_factory.mktemp("blob"), version, values, rows_per_page)


# -- datasets ----------------------------------------------------------------------------------


@pytest.mark.parametrize("version", VERSIONS)
def test_blob_dataset_take_blobs_and_validate(pylance, tmp_path, version):
    from reference_impl import open_dataset
    from reference_impl.write import write_dataset

    values = VALUES * 2
    table = blob_table(values, extra=True)
    uri = str(tmp_path / "ds")
    write_dataset(table, uri, data_storage_version=version)
    ds = pylance.dataset(uri)
    blobs = ds.take_blobs("b", indices=list(range(len(values))))
    assert [None if b is None else b.read() for b in blobs] == values
    if version == "2.2":  # blob v2, as pylance's own 2.2 datasets (test_blob_v2_writer.py)
        from reference_impl.table.blob import DESCRIPTOR_TYPE

        assert ds.to_table().column("b").type == DESCRIPTOR_TYPE
        assert open_dataset(uri).take_blobs("b", indices=list(range(len(values)))) == values
        assert main(["validate", "--deep", uri]) == 0
        return
    # a plain scan returns the (position, size) descriptors, as for pylance's own blob v1
    desc = ds.to_table().column("b")
    assert desc.type == pa.struct([pa.field("position", pa.uint64()), pa.field("size", pa.uint64())])
    assert [d is None or d["size"] for d in desc.to_pylist()] == [
        True if (version != "2.0" and v is None) else (0 if v is None else len(v)) for v in values
    ]
    # the reference scan returns the same descriptors, and take_blobs the bytes
    ours = open_dataset(uri)
    assert ours.to_table().column("b").to_pylist() == desc.to_pylist()
    assert ours.take_blobs("b", indices=list(range(len(values)))) == values
    assert main(["validate", "--deep", uri]) == 0


@pytest.mark.parametrize("version", ["2.0", "2.1"])
def test_blob_dataset_bad_descriptor_fails_validate(tmp_path, capsys, version):
    from reference_impl.write import write_dataset

    values = [b"k" * 300, b"m" * 200]
    uri = tmp_path / "ds"
    write_dataset(blob_table(values), str(uri), data_storage_version=version)
    (data_file,) = list((uri / "data").glob("*.lance"))
    _, _, pages = blob_pages(data_file, 0)
    pos, size = (int(x) for x in pages[0][2][1])
    raw = data_file.read_bytes()
    needle = struct.pack("<QQ", pos, size)
    assert raw.count(needle) == 1
    data_file.write_bytes(raw.replace(needle, struct.pack("<QQ", pos, size + (1 << 20))))
    capsys.readouterr()
    assert main(["validate", "--deep", "--format", "json", str(uri)]) == 1
    # 2.1+: the blob layout's own rule; 2.0 reads the range through the page's buffer rule
    assert ("ENC-050" if version == "2.0" else "ENC-047") in capsys.readouterr().out


# -- blob v2 descriptor pages (2.2 datasets) ---------------------------------------------------


def test_blob_v2_page_matches_pylance_dataset_file(pylance, tmp_path):
    """pylance's dataset writer makes blob v2 of the key at 2.2: the blob bytes at the start
    of the data file and the full-zip variable_packed_struct page equal ours."""
    from reference_impl.file.encode.blob import blob_v2_page
    from reference_impl.file.encodings.v2_1 import full_zip

    values = VALUES[:6]
    pylance.write_dataset(blob_table(values), str(tmp_path / "py"), data_storage_version="2.2")
    (data_file,) = list((tmp_path / "py" / "data").glob("*.lance"))
    theirs = data_file.read_bytes()
    container = read_container(LocalStore(str(data_file.parent)), data_file.name)
    (page,) = container.columns[0].pages
    their_layout = _unpack(page.encoding.direct.encoding, e21.PageLayout())

    out = bytearray()

    def pad():
        out.extend(b"\x48" * (-len(out) % 64))

    mine = blob_v2_page(pa.array(values, pa.large_binary()), out, pad)
    assert bytes(out) == theirs[: len(out)]  # same blob placement and filler
    assert mine.description == their_layout
    assert mine.length == page.length == len(values)
    zipped = theirs[page.buffer_offsets[0] : page.buffer_offsets[0] + page.buffer_sizes[0]]
    assert mine.buffers[0] == zipped
    # decoded by our full-zip reader: null rows are def 1, the others kind 0 descriptors
    fz = mine.description.full_zip_layout
    _, dfn, spans = full_zip.decode(fz, [memoryview(b) for b in mine.buffers], len(values), 1)
    assert list(dfn) == [0 if v is not None else 1 for v in values]
    assert len(spans[0]) == len(values)


def test_blob_v2_page_empty_takes_next_position(tmp_path):
    from reference_impl.file.encode.blob import blob_v2_page

    out = bytearray(b"z" * 10)

    def pad():
        out.extend(b"\x48" * (-len(out) % 64))

    page = blob_v2_page(pa.array([b"", b"abc", None], pa.large_binary()), out, pad)
    zipped = page.buffers[0]
    # row 0: control byte 0, u32 len 25, kind 0, position 64, size 0, id 0, uri len 0
    assert zipped[:30] == bytes([0]) + struct.pack("<IBQQII", 25, 0, 64, 0, 0, 0)
    assert zipped[30:60] == bytes([0]) + struct.pack("<IBQQII", 25, 0, 64, 3, 0, 0)
    assert zipped[60:] == bytes([1])
    assert bytes(out[64:]) == b"abc"
