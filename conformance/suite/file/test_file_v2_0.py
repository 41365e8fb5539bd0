"""Lance file format 2.0: our ``ArrayEncoding`` decoders against pylance 14.0.2.

Files are written by ``lance.file.LanceFileWriter(path, schema, version="2.0")`` and read
by both pylance's ``LanceFileReader`` and ``reference_impl``'s 2.0 decoders; the tables
must be equal. Hand-built pages cover the nodes pylance 14 no longer writes (bitpacked,
FastLanes, FSST, constant, fixed_size_binary) and malformed bytes.
"""

from __future__ import annotations

import struct

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conformance.strategies.arrow import arrow_tables, column, same_table
from reference_impl.errors import FormatError
from reference_impl.file.encodings.v2_0 import PageContext, decode_page
from reference_impl.file.encodings.v2_0.column import read_columns, read_file_v2_0
from reference_impl.proto import encodings_v2_0_pb2 as enc

#: Arrow types pylance 14.0.2 refuses to write in 2.0, with the error it gives
REFUSED_2_0 = {
    "map<utf8,int32>": (pa.map_(pa.string(), pa.int32()), "has no field encoding"),
    "struct with null rows": (None, "does not encode struct validity"),
    "string_view": (pa.string_view(), "Cannot encode a data block of type VariableWidth"),
    "month_day_nano_interval": (pa.month_day_nano_interval(), "Unsupported data type"),
    "fixed_size_list<list<int32>>": (pa.list_(pa.list_(pa.int32()), 1), "Unsupported data type"),
}


def write_2_0(lance, path, table, **kwargs):
    from lance.file import LanceFileWriter

    writer = LanceFileWriter(str(path), table.schema, version="2.0", **kwargs)
    for batch in table.to_batches(max_chunksize=kwargs.pop("_chunk", None) or max(len(table), 1)):
        writer.write_batch(batch)
    if len(table) == 0:
        pass
    writer.close()


def pylance_read(path):
    from lance.file import LanceFileReader

    return LanceFileReader(str(path)).read_all().to_table()


def both(lance, tmp_path, table, name="t.lance", **kwargs):
    path = tmp_path / name
    write_2_0(lance, path, table, **kwargs)
    expected = pylance_read(path)
    mine = read_file_v2_0(path.read_bytes(), expected.schema, path=str(path))
    return mine, expected


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(table=arrow_tables())
def test_random_tables_equal_pylance(pylance, tmp_path_factory, table):
    tmp = tmp_path_factory.mktemp("v20")
    mine, expected = both(pylance, tmp, table)
    assert mine.schema == expected.schema
    assert same_table(mine, expected), (mine, expected)


@pytest.mark.parametrize("mode", ["none", "some", "all"])
@pytest.mark.parametrize(
    "data_type",
    [
        pa.int32(),
        pa.uint64(),
        pa.float16(),
        pa.float64(),
        pa.bool_(),
        pa.decimal128(10, 2),
        pa.decimal256(40, 2),
        pa.binary(6),
        pa.string(),
        pa.large_string(),
        pa.binary(),
        pa.large_binary(),
        pa.date64(),
        pa.timestamp("us", tz="UTC"),
        pa.list_(pa.int64()),
        pa.large_list(pa.string()),
        pa.list_(pa.float32(), 8),
        pa.struct([("a", pa.int32()), ("b", pa.string())]),
        pa.list_(pa.list_(pa.int16())),
    ],
    ids=str,
)
def test_every_type_and_null_pattern(pylance, tmp_path, data_type, mode):
    table = pa.table({"c": column(data_type, 257, 7, mode)})
    mine, expected = both(pylance, tmp_path, table)
    assert same_table(mine, expected)
    assert mine.column("c").null_count == expected.column("c").null_count


def test_empty_file(pylance, tmp_path):
    table = pa.table(
        {
            "a": pa.array([], pa.int64()),
            "s": pa.array([], pa.string()),
            "l": pa.array([], pa.list_(pa.int32())),
        }
    )
    mine, expected = both(pylance, tmp_path, table)
    assert mine.num_rows == 0 and mine.equals(expected)
    columns, major, minor = read_columns((tmp_path / "t.lance").read_bytes())
    assert (major, minor) == (0, 3)
    assert all(len(c.pages) == 0 for c in columns)


def test_many_pages_and_list_offsets_across_pages(pylance, tmp_path):
    # 2.0 flushes a page per ~8 MiB of Arrow data: 1.2M rows give 4-5 pages per column,
    # and the list's item pages are cut independently of its offsets pages.
    n = 1_200_000
    table = pa.table(
        {"i": column(pa.int64(), n, 1, "some"), "l": column(pa.list_(pa.int16()), n, 3, "some")}
    )
    path = tmp_path / "pages.lance"
    from lance.file import LanceFileWriter

    writer = LanceFileWriter(str(path), table.schema, version="2.0")
    for batch in table.to_batches(max_chunksize=100_000):
        writer.write_batch(batch)
    writer.close()
    columns, _, _ = read_columns(path.read_bytes())
    assert min(len(c.pages) for c in columns) >= 3, "the test needs several pages per column"
    assert [p.length for p in columns[1].pages] != [p.length for p in columns[2].pages]
    expected = pylance_read(path)
    assert read_file_v2_0(path.read_bytes(), expected.schema).equals(expected)
    assert expected.equals(table)


def test_low_cardinality_strings_use_dictionary(pylance, tmp_path):
    values = ["red", "green", None, "blue"] * 50
    table = pa.table({"s": pa.array(values)})
    mine, expected = both(pylance, tmp_path, table)
    columns, _, _ = read_columns((tmp_path / "t.lance").read_bytes())
    assert columns[0].pages[0].encoding.WhichOneof("array_encoding") == "dictionary"
    assert mine.column("s").to_pylist() == values


def test_arrow_dictionary_input(pylance, tmp_path):
    table = pa.table({"d": pa.array(["a", None, "b", "a"]).dictionary_encode()})
    mine, expected = both(pylance, tmp_path, table)
    assert same_table(mine, expected)


def test_all_empty_and_all_null_lists_give_zero_length_item_pages(pylance, tmp_path):
    table = pa.table(
        {
            "e": pa.array([[]] * 5, pa.list_(pa.int32())),
            "n": pa.array([None] * 5, pa.list_(pa.int32())),
        }
    )
    mine, expected = both(pylance, tmp_path, table)
    assert same_table(mine, expected)
    columns, _, _ = read_columns((tmp_path / "t.lance").read_bytes())
    assert [p.length for p in columns[1].pages] == [0]


def test_lz4_compressed_binary_bytes(pylance, tmp_path):
    field = pa.field("s", pa.string(), metadata={"lance-encoding:compression": "lz4"})
    table = pa.Table.from_arrays(
        [pa.array([f"hello world {i}" for i in range(300)])], schema=pa.schema([field])
    )
    mine, expected = both(pylance, tmp_path, table)
    assert mine.column("s").to_pylist() == expected.column("s").to_pylist()


def test_packed_struct(pylance, tmp_path):
    st_type = pa.struct([("x", pa.int32()), ("y", pa.float64())])
    field = pa.field("p", st_type, metadata={"packed": "true", "lance-encoding:packed": "true"})
    arr = pa.StructArray.from_arrays(
        [pa.array(range(50), pa.int32()), pa.array(np.arange(50) / 3)], fields=list(st_type)
    )
    table = pa.Table.from_arrays([arr], schema=pa.schema([field]))
    mine, expected = both(pylance, tmp_path, table)
    assert mine.column("p").to_pylist() == expected.column("p").to_pylist()


@pytest.mark.parametrize("name", sorted(REFUSED_2_0))
def test_types_pylance_refuses_in_2_0(pylance, tmp_path, name):
    from lance.file import LanceFileWriter

    data_type, message = REFUSED_2_0[name]
    if data_type is None:
        arr = pa.array([{"x": 1}, None], pa.struct([("x", pa.int32())]))
    elif pa.types.is_map(data_type):
        arr = pa.array([[("a", 1)], None], data_type)
    elif pa.types.is_interval(data_type):
        arr = pa.array([(1, 2, 3), None], data_type)
    elif pa.types.is_fixed_size_list(data_type):
        arr = pa.array([[[1]], None], data_type)
    else:
        arr = pa.array(["a", None], data_type)
    table = pa.table({"c": arr})
    with pytest.raises(Exception, match=message):
        writer = LanceFileWriter(str(tmp_path / "r.lance"), table.schema, version="2.0")
        writer.write_batch(table)
        writer.close()
        pylance_read(tmp_path / "r.lance")


# -- hand-built pages: nodes pylance 14 does not write, and malformed bytes -----------------------


def _flat(bits, index):
    node = enc.ArrayEncoding()
    node.flat.bits_per_value = bits
    node.flat.buffer.buffer_index = index
    node.flat.buffer.SetInParent()
    return node


def test_sequential_bitpacked_signed():
    values = np.array([-3, 0, 5, -1, 7, -8, 2], np.int64)
    w = 4
    bits = np.zeros(len(values) * w, np.uint8)
    for i, v in enumerate(values):
        for b in range(w):
            bits[i * w + b] = (int(v) >> b) & 1
    packed = np.packbits(bits, bitorder="little").tobytes()
    node = enc.ArrayEncoding()
    node.bitpacked.compressed_bits_per_value = w
    node.bitpacked.uncompressed_bits_per_value = 64
    node.bitpacked.signed = True
    node.bitpacked.buffer.SetInParent()
    out = decode_page(node, PageContext([memoryview(packed)]), len(values), pa.int64())
    assert out.to_pylist() == values.tolist()


def _fastlanes_pack(values: np.ndarray, t: int, w: int) -> bytes:
    lanes = 1024 // t
    order = [0, 4, 2, 6, 1, 5, 3, 7]
    p = np.zeros((w, lanes), np.uint64)
    for row in range(t):
        for lane in range(lanes):
            v = int(values[order[row // 8] * 16 + (row % 8) * 128 + lane])
            bit = row * w
            k, s = divmod(bit, t)
            p[k, lane] |= np.uint64((v << s) & ((1 << t) - 1))
            if s + w > t:
                p[k + 1, lane] |= np.uint64(v >> (t - s))
    return p.astype({8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}[t]).tobytes()


def test_bitpacked_for_non_neg_fastlanes():
    rng = np.random.default_rng(0)
    values = rng.integers(0, 1 << 11, 1500).astype(np.uint64)
    padded = np.zeros(2048, np.uint64)
    padded[:1500] = values
    buf = _fastlanes_pack(padded[:1024], 32, 11) + _fastlanes_pack(padded[1024:], 32, 11)
    node = enc.ArrayEncoding()
    node.bitpacked_for_non_neg.compressed_bits_per_value = 11
    node.bitpacked_for_non_neg.uncompressed_bits_per_value = 32
    node.bitpacked_for_non_neg.buffer.SetInParent()
    out = decode_page(node, PageContext([memoryview(buf)]), 1500, pa.uint32())
    assert out.to_numpy().tolist() == values.tolist()


def test_fsst_with_escapes():
    symbols = [b"he", b"llo", b" "]
    table = bytearray(8 + 256 * 8 + 256)
    struct.pack_into("<Q", table, 0, len(symbols) | (1 << 24) | (0x46535354 << 32))
    for i, s in enumerate(symbols):
        table[8 + 8 * i : 8 + 8 * i + len(s)] = s
        table[8 + 8 * len(symbols) + i] = len(s)
    # "hello hello" | "\xff" literal | "x" via escape | "" | escapes of 255
    values = [
        bytes([0, 1, 2, 0, 1]),
        bytes([255, 255]),
        bytes([255, ord("x"), 0]),
        b"",
        bytes([255, 255, 255, 65]),
    ]
    expected = [b"hello hello", b"\xff", b"xhe", b"", b"\xffA"]
    data = b"".join(values)
    ends = np.cumsum([len(v) for v in values]).astype(np.uint64)
    node = enc.ArrayEncoding()
    node.fsst.symbol_table = bytes(table)
    binary = node.fsst.binary.binary
    binary.indices.CopyFrom(_flat(64, 0))
    binary.bytes.CopyFrom(_flat(8, 1))
    binary.null_adjustment = len(data) + 1
    out = decode_page(
        node, PageContext([memoryview(ends.tobytes()), memoryview(data)]), len(values), pa.binary()
    )
    assert out.to_pylist() == expected


def test_constant_and_fixed_size_binary():
    node = enc.ArrayEncoding()
    node.constant.value = struct.pack("<i", -7)
    assert decode_page(node, PageContext([]), 4, pa.int32()).to_pylist() == [-7] * 4
    fsb = enc.ArrayEncoding()
    fsb.fixed_size_binary.byte_width = 3
    fsb.fixed_size_binary.bytes.CopyFrom(_flat(8, 0))
    out = decode_page(fsb, PageContext([memoryview(b"abcdefghi")]), 3, pa.string())
    assert out.to_pylist() == ["abc", "def", "ghi"]


def test_binary_null_adjustment_hand_built():
    # rows: "ab", null, "", "cde" ; adj = 5 + 1
    ends = np.array([2, 2 + 6, 2, 5], np.uint64)
    node = enc.ArrayEncoding()
    node.binary.indices.CopyFrom(_flat(64, 0))
    node.binary.bytes.CopyFrom(_flat(8, 1))
    node.binary.null_adjustment = 6
    out = decode_page(
        node, PageContext([memoryview(ends.tobytes()), memoryview(b"abcde")]), 4, pa.string()
    )
    assert out.to_pylist() == ["ab", None, "", "cde"]


def test_malformed_pages_raise_format_errors():
    short = _flat(64, 0)
    with pytest.raises(FormatError) as err:
        decode_page(
            short, PageContext([memoryview(b"\x00" * 10)], path="f.lance", offset=64), 2, pa.int64()
        )
    assert err.value.rule == "ENC-050" and err.value.offset == 64
    with pytest.raises(FormatError):
        decode_page(_flat(64, 3), PageContext([]), 1, pa.int64())
    node = enc.ArrayEncoding()
    node.binary.indices.CopyFrom(_flat(64, 0))
    node.binary.bytes.CopyFrom(_flat(8, 1))
    node.binary.null_adjustment = 3
    bad_ends = np.array([2, 1], np.uint64)  # decreasing
    with pytest.raises(FormatError) as err:
        decode_page(
            node, PageContext([memoryview(bad_ends.tobytes()), memoryview(b"ab")]), 2, pa.string()
        )
    assert err.value.rule == "ENC-052"
    with pytest.raises(FormatError):
        decode_page(enc.ArrayEncoding(), PageContext([]), 1, pa.int32())
    with pytest.raises(FormatError):
        decode_page(
            _flat(32, 0), PageContext([memoryview(b"\x00" * 8)]), 2, pa.int64()
        )  # width mismatch


@settings(max_examples=60, deadline=None)
@given(data=st.binary(max_size=600), cut=st.integers(0, 600))
def test_truncated_or_corrupt_files_never_escape_format_error(data, cut):
    # a valid tiny 2.0 file prefix/suffix spliced with random bytes must give FormatError only
    blob = data[:cut] + struct.pack("<QQQIIHH", cut, max(0, len(data) - 8), 0, 0, 1, 0, 3) + b"LANC"
    try:
        read_file_v2_0(blob, pa.schema([pa.field("a", pa.int64())]))
    except FormatError:
        pass


def test_shared_reader_uses_the_2_0_decoder(pylance, tmp_path):
    from reference_impl.file import reader as reader_mod
    from reference_impl.file.encodings.v2_0.column import decode_column_2_0
    from reference_impl.io.local import LocalStore

    table = pa.table(
        {
            "a": column(pa.int32(), 300, 1, "some"),
            "l": column(pa.list_(pa.string()), 300, 2, "some"),
            "st": column(pa.struct([("x", pa.float64())]), 300, 3, "some"),
        }
    )
    write_2_0(pylance, tmp_path / "t.lance", table)
    assert reader_mod.DECODERS.get("2.0") is decode_column_2_0
    r = reader_mod.LanceFileReader(LocalStore(str(tmp_path)), "t.lance")
    expected = pylance_read(tmp_path / "t.lance")
    assert same_table(r.read_all(), expected)
    assert same_table(r.read_range(10, 50), expected.slice(10, 40))
    assert same_table(r.take([5, 1, 299]), expected.take([5, 1, 299]))


def test_blob_column_reads_bytes_nulls_and_empties(pylance, tmp_path):
    field = pa.field("b", pa.large_binary(), metadata={"lance-encoding:blob": "true"})
    values = [b"x" * 1000, b"", None, b"abc", None, bytes(range(256)) * 9]
    table = pa.Table.from_arrays([pa.array(values, pa.large_binary())], schema=pa.schema([field]))
    mine, expected = both(pylance, tmp_path, table)
    columns, _, _ = read_columns((tmp_path / "t.lance").read_bytes())
    assert columns[0].is_blob
    assert mine.column("b").to_pylist() == expected.column("b").to_pylist() == values


# -- the FILE-05x / ENC-05x rules over a dataset's 2.0 data files ------------------------------

RULES_2_0 = ["ENC-050", "ENC-051", "ENC-052", "ENC-053", "FILE-050", "FILE-051", "FILE-052"]


@pytest.fixture()
def dataset_2_0(pylance, tmp_path):
    path = tmp_path / "ds"
    table = pa.table(
        {
            "a": pa.array(range(100), pa.int64()),
            "s": pa.array([f"s{i}" for i in range(100)]),
            "l": pa.array([[i, i] for i in range(100)], pa.list_(pa.int32())),
        }
    )
    pylance.write_dataset(table, str(path), data_storage_version="2.0")
    (data_file,) = (path / "data").glob("*.lance")
    return path, data_file


def _findings(path, rule_id):
    from conformance.engine.local import validate

    return [
        f for f in validate(str(path), deep=True, rules=[rule_id]).findings if f.rule == rule_id
    ]


def _rewrite_columns(data_file, edit):
    """Rewrite a 2.x file's column metadata (``edit(list[ColumnMetadata])`` in place)."""
    from reference_impl.proto import file2_pb2

    data = data_file.read_bytes()
    cm0, cmo, gbo, n_global, n_cols, major, minor, magic = struct.unpack("<QQQIIHH4s", data[-40:])
    metas = []
    for i in range(n_cols):
        pos, size = struct.unpack_from("<QQ", data, cmo + 16 * i)
        m = file2_pb2.ColumnMetadata()
        m.ParseFromString(data[pos : pos + size])
        metas.append(m)
    gbo_table = data[gbo : gbo + 16 * n_global]
    edit(metas)
    out = bytearray(data[:cm0])
    table = b""
    for m in metas:
        raw = m.SerializeToString()
        table += struct.pack("<QQ", len(out), len(raw))
        out += raw
    new_cmo = len(out)
    out += table
    new_gbo = len(out)
    out += gbo_table
    out += (
        struct.pack("<QQQIIHH", cm0, new_cmo, new_gbo, n_global, len(metas), major, minor) + b"LANC"
    )
    data_file.write_bytes(bytes(out))


def _page_tree(meta, index=0):
    from google.protobuf import any_pb2

    wrapper = any_pb2.Any()
    wrapper.ParseFromString(meta.pages[index].encoding.direct.encoding)
    tree = enc.ArrayEncoding()
    tree.ParseFromString(wrapper.value)
    return wrapper, tree


def _set_page_tree(meta, wrapper, tree, index=0):
    wrapper.value = tree.SerializeToString()
    meta.pages[index].encoding.direct.encoding = wrapper.SerializeToString()


def test_rules_hold_on_pylance_2_0_files(dataset_2_0):
    path, _ = dataset_2_0
    for rid in RULES_2_0:
        assert _findings(path, rid) == [], rid


def test_enc_050_buffer_too_small(dataset_2_0):
    path, data_file = dataset_2_0

    def edit(metas):
        metas[0].pages[0].buffer_sizes[0] = 8  # int64 x 100 needs 800 bytes

    _rewrite_columns(data_file, edit)
    assert _findings(path, "ENC-050")


def test_enc_051_node_does_not_fit_type(dataset_2_0):
    path, data_file = dataset_2_0

    def edit(metas):
        wrapper, tree = _page_tree(metas[0])
        tree.nullable.no_nulls.values.flat.bits_per_value = 32  # the field is int64
        _set_page_tree(metas[0], wrapper, tree)

    _rewrite_columns(data_file, edit)
    assert _findings(path, "ENC-051")


def test_enc_052_decreasing_binary_ends(dataset_2_0):
    path, data_file = dataset_2_0
    from reference_impl.file.encodings.v2_0.column import read_columns

    data = bytearray(data_file.read_bytes())
    columns, _, _ = read_columns(bytes(data))
    tree = columns[1].pages[0].encoding
    assert tree.WhichOneof("array_encoding") == "binary"
    from reference_impl.proto import file2_pb2

    cm0, cmo = struct.unpack_from("<QQ", data, len(data) - 40)
    pos, size = struct.unpack_from("<QQ", data, cmo + 16)
    meta = file2_pb2.ColumnMetadata()
    meta.ParseFromString(bytes(data[pos : pos + size]))
    ends_at = meta.pages[0].buffer_offsets[0]
    struct.pack_into("<Q", data, ends_at + 8, 0)  # row 1 ends before row 0
    data_file.write_bytes(bytes(data))
    assert _findings(path, "ENC-052")


def test_enc_053_bad_compressed_flat(dataset_2_0):
    path, data_file = dataset_2_0

    def edit(metas):
        wrapper, tree = _page_tree(metas[0])
        tree.nullable.no_nulls.values.flat.compression.scheme = "lz4"  # raw bytes are no lz4 block
        _set_page_tree(metas[0], wrapper, tree)

    _rewrite_columns(data_file, edit)
    assert _findings(path, "ENC-053")


def test_file_050_page_encoding_type_url(dataset_2_0):
    path, data_file = dataset_2_0

    def edit(metas):
        wrapper, tree = _page_tree(metas[0])
        wrapper.type_url = "/lance.encodings21.PageLayout"
        _set_page_tree(metas[0], wrapper, tree)

    _rewrite_columns(data_file, edit)
    assert _findings(path, "FILE-050")


def test_file_051_extra_column(dataset_2_0):
    path, data_file = dataset_2_0

    def edit(metas):
        extra = type(metas[0])()
        extra.CopyFrom(metas[0])
        metas.append(extra)

    _rewrite_columns(data_file, edit)
    assert _findings(path, "FILE-051")


def test_file_052_unparsable_file_descriptor(dataset_2_0):
    path, data_file = dataset_2_0
    data = bytearray(data_file.read_bytes())
    gbo = struct.unpack_from("<Q", data, len(data) - 40 + 16)[0]
    pos, size = struct.unpack_from("<QQ", data, gbo)
    struct.pack_into("<QQ", data, gbo, pos, len(data) * 4)  # global buffer 0 runs past the file
    data_file.write_bytes(bytes(data))
    assert _findings(path, "FILE-052")


_BASE_2_0: dict = {}


@pytest.fixture(scope="module")
def base_2_0(tmp_path_factory):
    if "bytes" not in _BASE_2_0:
        import lance  # noqa: F401  (the pylance fixture reports a missing part)
        from lance.file import LanceFileWriter

        path = tmp_path_factory.mktemp("base20") / "b.lance"
        table = pa.table(
            {
                "i": column(pa.int32(), 40, 1, "some"),
                "s": column(pa.string(), 40, 2, "some"),
                "d": pa.array(["a", "b", None, "c"] * 30)[:40],
                "l": column(pa.list_(pa.int64()), 40, 3, "some"),
                "f": column(pa.list_(pa.float32(), 2), 40, 4, "some"),
                "st": column(pa.struct([("x", pa.int16())]), 40, 5, "none"),
            }
        )
        writer = LanceFileWriter(str(path), table.schema, version="2.0")
        writer.write_batch(table)
        writer.close()
        data = path.read_bytes()
        _BASE_2_0["bytes"] = data
        _BASE_2_0["schema"] = pylance_read(path).schema
    return _BASE_2_0


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(junk=st.binary(min_size=1, max_size=24), at=st.integers(0, 1 << 20), cut=st.integers(0, 200))
def test_mutated_pylance_file_raises_only_format_error(pylance, base_2_0, junk, at, cut):
    data = bytearray(base_2_0["bytes"])
    at %= len(data)
    data[at : at + len(junk)] = junk
    if cut % 4 == 0:
        data = data[: len(data) - cut]
    try:
        read_file_v2_0(bytes(data), base_2_0["schema"])
    except FormatError:
        pass
