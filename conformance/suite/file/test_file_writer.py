"""The Lance file writer (spec 003; FILE-ENCODINGS.md; FACTS.md §A "Lance data files v2.x").

Every file written by ``reference_impl.file.writer`` as 2.0, 2.1, 2.2 and 2.3 must be read
back by pylance 14.0.2's ``lance.file.LanceFileReader`` equal to the input
(``pa.Table.equals``, nulls included). The one normalisation: nested Arrow ``dictionary``
columns are written decoded, so the expected table has them cast to their value type;
top-level string/binary dictionaries stay dictionaries and compare by value.
Beyond the round trip, the tests pin the container bytes (footer version, 64-byte
alignment with 0x48 filler, global buffer 0), the ``DataFile`` bookkeeping
(fields / column indices) and the encodings chosen for canonical inputs.
"""

from __future__ import annotations

import decimal
import struct

import numpy as np
import pyarrow as pa
import pytest
from google.protobuf import any_pb2
from hypothesis import given, settings
from hypothesis import strategies as st

from conformance.releases.corpus import table_difference
from reference_impl.errors import InvalidInput, UnsupportedFeature
from reference_impl.file.encode.v2_1.bitpacking import FL_ORDER, fastlanes_pack, out_of_line_pack
from reference_impl.file.writer import LanceFileWriter, normalise_schema, write_lance_file
from reference_impl.io.local import LocalStore
from reference_impl.io.memory import MemoryStore
from reference_impl.proto import (
    encodings_v2_0_pb2,
    encodings_v2_1_pb2,
    encodings_v2_3_pb2,
    file2_pb2,
    file_pb2,
)

VERSIONS = ["2.0", "2.1", "2.2", "2.3"]

# ----------------------------------------------------------------------------- data generation

PRIMITIVES = [
    pa.bool_(),
    pa.int8(),
    pa.int16(),
    pa.int32(),
    pa.int64(),
    pa.uint8(),
    pa.uint16(),
    pa.uint32(),
    pa.uint64(),
    pa.float16(),
    pa.float32(),
    pa.float64(),
    pa.decimal128(12, 3),
    pa.decimal256(40, 5),
    pa.date32(),
    pa.date64(),
    pa.time32("s"),
    pa.time32("ms"),
    pa.time64("us"),
    pa.time64("ns"),
    pa.timestamp("s"),
    pa.timestamp("ms"),
    pa.timestamp("us", tz="UTC"),
    pa.timestamp("ns", tz="America/New_York"),
    pa.duration("s"),
    pa.duration("us"),
    pa.binary(),
    pa.large_binary(),
    pa.string(),
    pa.large_string(),
    pa.binary(5),
    pa.dictionary(pa.int32(), pa.string()),
]
FSL_ITEMS = [pa.int8(), pa.int32(), pa.int64(), pa.float32(), pa.float64()]


def types(depth: int = 2):
    leaf = st.sampled_from(PRIMITIVES)
    fsl = st.builds(lambda t, n: pa.list_(t, n), st.sampled_from(FSL_ITEMS), st.integers(1, 6))
    if depth == 0:
        return st.one_of(leaf, fsl)
    inner = types(depth - 1)
    return st.one_of(
        leaf,
        leaf,
        fsl,
        inner.map(pa.list_),
        inner.map(pa.large_list),
        st.lists(inner, min_size=1, max_size=3).map(
            lambda ts: pa.struct([(f"f{i}", t) for i, t in enumerate(ts)])
        ),
    )


def gen_array(
    t: pa.DataType, n: int, rng: np.random.Generator, null_p: float, struct_nulls: bool
) -> pa.Array:
    """``n`` pseudo-random values of type ``t`` with roughly ``null_p`` nulls at every level."""
    mask = rng.random(n) < null_p
    m = mask if mask.any() else None
    if pa.types.is_dictionary(t):
        return gen_array(t.value_type, n, rng, null_p, struct_nulls).dictionary_encode()
    if pa.types.is_boolean(t):
        return pa.array(rng.random(n) < 0.5, t, mask=m)
    if pa.types.is_integer(t):
        dt = np.dtype(t.to_pandas_dtype())
        info = np.iinfo(dt)
        if rng.random() < 0.5:  # small values (bit-packing) or the full range
            v = rng.integers(0, min(int(info.max), 100), n, endpoint=True).astype(dt)
        else:
            v = rng.integers(info.min, info.max, n, dtype=dt, endpoint=True)
        return pa.array(v, t, mask=m)
    if pa.types.is_floating(t):
        dt = np.float16 if t == pa.float16() else np.float32 if t == pa.float32() else np.float64
        return pa.array(rng.normal(0, 100, n).astype(dt), t, mask=m)
    if pa.types.is_decimal(t):
        ints = rng.integers(-(10**9), 10**9, n)
        return pa.array(
            [None if mask[i] else decimal.Decimal(int(ints[i])).scaleb(-t.scale) for i in range(n)],
            t,
        )
    if pa.types.is_date32(t) or pa.types.is_time32(t):
        hi = (
            86_399
            if (pa.types.is_time32(t) and t.unit == "s")
            else 86_399_999
            if pa.types.is_time32(t)
            else 80_000
        )
        return pa.array(rng.integers(0, hi, n).astype(np.int32), pa.int32(), mask=m).cast(t)
    if pa.types.is_date64(t):
        return pa.array(
            rng.integers(0, 80_000, n).astype(np.int64) * 86_400_000, pa.int64(), mask=m
        ).cast(t)
    if pa.types.is_time64(t):
        hi = 86_400 * (10**6 if t.unit == "us" else 10**9)
        return pa.array(rng.integers(0, hi, n).astype(np.int64), pa.int64(), mask=m).cast(t)
    if pa.types.is_timestamp(t) or pa.types.is_duration(t):
        return pa.array(rng.integers(-(2**40), 2**40, n).astype(np.int64), pa.int64(), mask=m).cast(
            t
        )
    if pa.types.is_fixed_size_binary(t):
        return pa.array([None if mask[i] else rng.bytes(t.byte_width) for i in range(n)], t)
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        if rng.random() < 0.5:
            pool = ["", "a", "bb", "héllo", "zzz", "x" * 40]
            vals = [pool[k] for k in rng.integers(0, len(pool), n)]
        else:
            vals = [f"s{k}" for k in rng.integers(0, 1 << 30, n)]
        return pa.array([None if mask[i] else vals[i] for i in range(n)], t)
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return pa.array(
            [None if mask[i] else rng.bytes(int(rng.integers(0, 12))) for i in range(n)], t
        )
    if pa.types.is_fixed_size_list(t):
        items = gen_array(t.value_type, n * t.list_size, rng, null_p / 2, struct_nulls)
        return pa.FixedSizeListArray.from_arrays(
            items, type=t, mask=pa.array(mask) if m is not None else None
        )
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        lengths = rng.integers(0, 4, n)
        lengths[mask] = 0
        offsets = np.concatenate([[0], np.cumsum(lengths)])
        items = gen_array(t.value_type, int(offsets[-1]), rng, null_p, struct_nulls)
        cls = pa.LargeListArray if pa.types.is_large_list(t) else pa.ListArray
        otype = pa.int64() if pa.types.is_large_list(t) else pa.int32()
        return cls.from_arrays(
            pa.array(offsets, otype), items, type=t, mask=pa.array(mask) if m is not None else None
        )
    if pa.types.is_struct(t):
        children = [gen_array(f.type, n, rng, null_p, struct_nulls) for f in t]
        smask = pa.array(mask) if (struct_nulls and m is not None) else None
        return pa.StructArray.from_arrays(children, fields=list(t), mask=smask)
    raise AssertionError(f"no generator for {t}")


@st.composite
def tables(draw, max_rows: int = 300):
    n_cols = draw(st.integers(1, 4))
    col_types = [draw(types()) for _ in range(n_cols)]
    n = draw(st.sampled_from([0, 1, 3, 17, 100, max_rows]))
    seed = draw(st.integers(0, 2**32 - 1))
    null_p = draw(st.sampled_from([0.0, 0.2, 0.5, 1.0]))
    struct_nulls = draw(st.booleans())
    rng = np.random.default_rng(seed)
    cols = {f"c{i}": gen_array(t, n, rng, null_p, struct_nulls) for i, t in enumerate(col_types)}
    return pa.table(cols)


# ----------------------------------------------------------------------------- helpers


def expected(table: pa.Table) -> pa.Table:
    """The documented normalisation: nested dictionary columns come back decoded (top-level
    string/binary dictionaries stay dictionaries, compared by value)."""
    return table.cast(normalise_schema(table.schema))


def has_null_struct(arr) -> bool:
    t = arr.type
    if isinstance(arr, pa.ChunkedArray):
        return any(has_null_struct(c) for c in arr.chunks)
    if pa.types.is_struct(t):
        return arr.null_count > 0 or any(has_null_struct(arr.field(i)) for i in range(t.num_fields))
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return has_null_struct(arr.flatten())
    return False


def write_and_read(lance, tmp_path, table, version, name="t.lance", **kwargs):
    store = LocalStore(tmp_path)
    written = write_lance_file(store, name, table, version=version, **kwargs)
    return written, pylance_read(lance, tmp_path / name)


def pylance_read(lance, path) -> pa.Table:
    """Read with pylance; a Rust panic (a BaseException) becomes an AssertionError so
    hypothesis can shrink the example."""
    try:
        return lance.file.LanceFileReader(str(path)).read_all().to_table()
    except Exception:
        raise
    except BaseException as exc:  # pyo3_runtime.PanicException
        if type(exc).__name__ != "PanicException":
            raise
        raise AssertionError(f"pylance panicked reading {path}: {exc}") from None


def assert_round_trip(lance, tmp_path, table, version, **kwargs):
    written, got = write_and_read(lance, tmp_path, table, version, **kwargs)
    exp = expected(table)
    if table_difference(exp, got):  # dictionaries compare by value
        bad = [c for c in exp.column_names if table_difference(exp.select([c]), got.select([c]))]
        raise AssertionError(
            f"{version}: columns {bad} differ\n got {got.select(bad)}\n exp {exp.select(bad)}"
        )
    assert written.num_rows == table.num_rows
    return written


def parse_file(data: bytes):
    """(footer tuple, FileDescriptor, [ColumnMetadata]) with plain struct/protobuf parsing."""
    assert data[-4:] == b"LANC"
    footer = struct.unpack("<QQQIIHH", data[-40:-4])
    cm0, cmo, gbo, ngb, ncol, major, minor = footer
    gpos, gsize = struct.unpack_from("<QQ", data, gbo)
    fd = file_pb2.FileDescriptor()
    fd.ParseFromString(data[gpos : gpos + gsize])
    metas = []
    for c in range(ncol):
        pos, size = struct.unpack_from("<QQ", data, cmo + 16 * c)
        cm = file2_pb2.ColumnMetadata()
        cm.ParseFromString(data[pos : pos + size])
        metas.append(cm)
    return footer, (gpos, gsize), fd, metas


def page_message(page, version):
    wrapper = any_pb2.Any()
    wrapper.ParseFromString(page.encoding.direct.encoding)
    msg = (
        encodings_v2_0_pb2.ArrayEncoding() if version == "2.0"
        else encodings_v2_3_pb2.PlanarLayout() if version == "2.3" else encodings_v2_1_pb2.PageLayout()
    )
    assert wrapper.type_url == "/" + msg.DESCRIPTOR.full_name
    msg.ParseFromString(wrapper.value)
    return msg


def written_pages(table, version, **kwargs):
    store = MemoryStore()
    write_lance_file(store, "f.lance", table, version=version, **kwargs)
    _, _, _, metas = parse_file(store.get("f.lance"))
    return [[page_message(p, version) for p in cm.pages] for cm in metas]


# ----------------------------------------------------------------------------- round trips


@settings(max_examples=25)
@given(table=tables())
def test_random_tables_read_back_by_pylance(pylance, tmp_path_factory, table):
    for version in VERSIONS:
        tmp = tmp_path_factory.mktemp("w")
        if version == "2.0" and any(has_null_struct(c) for c in table.columns):
            with pytest.raises(UnsupportedFeature):
                write_lance_file(LocalStore(tmp), "t.lance", table, version=version)
            continue
        assert_round_trip(pylance, tmp, table, version)


@settings(max_examples=15)
@given(table=tables(max_rows=100), cut=st.integers(0, 40), data=st.data())
def test_sliced_input_tables(pylance, tmp_path_factory, table, cut, data):
    """Arrays with a non-zero offset (slices) must be written from their visible part only."""
    length = data.draw(st.integers(0, max(table.num_rows - cut, 0)))
    part = table.slice(min(cut, table.num_rows), length)
    for version in VERSIONS:
        if version == "2.0" and any(has_null_struct(c) for c in part.columns):
            continue
        assert_round_trip(pylance, tmp_path_factory.mktemp("s"), part, version)


@pytest.fixture(scope="session")
def slow_selected(request):
    """The long property run only when asked for with ``-m slow`` (it takes minutes)."""
    if (
        "slow" not in (request.config.option.markexpr or "")
        or "not slow" in request.config.option.markexpr
    ):
        pytest.skip("long property run: select it with -m slow")


@pytest.mark.slow
@settings(max_examples=400)
@given(table=tables(max_rows=3000))
def test_random_tables_read_back_by_pylance_long(slow_selected, pylance, tmp_path_factory, table):
    test_random_tables_read_back_by_pylance.hypothesis.inner_test(pylance, tmp_path_factory, table)


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("null_p", [0.0, 0.3, 1.0])
def test_every_primitive_type(pylance, tmp_path, version, null_p):
    rng = np.random.default_rng(7)
    table = pa.table(
        {f"c{i}": gen_array(t, 257, rng, null_p, False) for i, t in enumerate(PRIMITIVES)}
    )
    assert_round_trip(pylance, tmp_path, table, version)


@pytest.mark.parametrize("version", VERSIONS)
def test_nested_with_nulls_at_every_level(pylance, tmp_path, version):
    rng = np.random.default_rng(3)
    t = pa.struct(
        [
            ("l", pa.list_(pa.list_(pa.int32()))),
            ("s", pa.list_(pa.struct([("x", pa.string()), ("f", pa.list_(pa.float32(), 3))]))),
            ("b", pa.large_list(pa.bool_())),
        ]
    )
    struct_nulls = version != "2.0"
    table = pa.table(
        {
            "st": gen_array(t, 600, rng, 0.25, struct_nulls),
            "i": gen_array(pa.int64(), 600, rng, 0.1, False),
        }
    )
    assert_round_trip(pylance, tmp_path, table, version)


@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_list_under_null_struct(pylance, tmp_path, version):
    """Regression (found by the property test): a list layer with no null list of its own
    under a null struct must still be written nullable, or pylance miscounts items."""
    inner = pa.array([[0], [None, 1, 1], [1]], pa.list_(pa.int32()))
    arr = pa.StructArray.from_arrays([inner], names=["f0"], mask=pa.array([False, False, True]))
    table = pa.table({"c0": arr})
    assert_round_trip(pylance, tmp_path, table, version)
    ((layout,),) = written_pages(table, version)
    assert list(_mb(layout).layers) == [
        encodings_v2_1_pb2.REPDEF_NULLABLE_ITEM,
        encodings_v2_1_pb2.REPDEF_NULLABLE_LIST,
        encodings_v2_1_pb2.REPDEF_NULLABLE_ITEM,
    ]


@pytest.mark.parametrize("version", VERSIONS)
def test_empty_table(pylance, tmp_path, version):
    table = pa.table(
        {
            "a": pa.array([], pa.int32()),
            "s": pa.array([], pa.string()),
            "l": pa.array([], pa.list_(pa.struct([("x", pa.int8())]))),
        }
    )
    written = assert_round_trip(pylance, tmp_path, table, version)
    _, _, _, metas = parse_file((tmp_path / "t.lance").read_bytes())
    assert all(len(cm.pages) == 0 for cm in metas)
    assert written.num_rows == 0


@pytest.mark.parametrize("version", VERSIONS)
def test_all_null_columns(pylance, tmp_path, version):
    n = 300
    table = pa.table(
        {
            "i": pa.nulls(n, pa.int32()),
            "s": pa.nulls(n, pa.string()),
            "b": pa.nulls(n, pa.bool_()),
            "l": pa.array([None, []] * (n // 2), pa.list_(pa.int16())),
            "le": pa.array([[]] * n, pa.list_(pa.string())),
            "f": pa.nulls(n, pa.list_(pa.float32(), 4)),
        }
    )
    assert_round_trip(pylance, tmp_path, table, version)


@pytest.mark.parametrize("version", VERSIONS)
def test_many_pages_and_streamed_batches(pylance, tmp_path, version):
    rng = np.random.default_rng(11)
    schema = pa.schema(
        [
            ("i", pa.int64()),
            ("s", pa.string()),
            ("l", pa.list_(pa.int32())),
            ("st", pa.struct([("a", pa.float64()), ("b", pa.large_string())])),
        ]
    )
    batches = [
        pa.record_batch([gen_array(f.type, 137, rng, 0.2, False) for f in schema], schema=schema)
        for _ in range(9)
    ]
    store = LocalStore(tmp_path)
    writer = LanceFileWriter(
        store, "m.lance", schema, version=version, max_rows_per_page=50, max_page_bytes=4096
    )
    for b in batches:
        writer.write_batch(b)
    written = writer.finish()
    got = pylance.file.LanceFileReader(str(tmp_path / "m.lance")).read_all().to_table()
    assert got.equals(pa.Table.from_batches(batches))
    _, _, _, metas = parse_file((tmp_path / "m.lance").read_bytes())
    assert len(metas[0].pages) >= 9 * 137 // 50
    if version != "2.0":  # 2.1+: priority is the page's first row; pages are contiguous
        prios = [p.priority for p in metas[0].pages]
        lengths = [p.length for p in metas[0].pages]
        assert prios == list(np.cumsum([0] + lengths[:-1]))
    assert written.num_rows == 9 * 137


@pytest.mark.parametrize("version", VERSIONS)
def test_wide_values_long_lists_and_level_page_splits(pylance, tmp_path, version, monkeypatch):
    from reference_impl.file.encode.v2_1 import column as column_encoder

    monkeypatch.setattr(column_encoder, "MAX_LEVELS_PER_PAGE", 4096)  # several level pages
    rng = np.random.default_rng(5)
    table = pa.table(
        {
            "wide": pa.array(
                [("x" * int(k)) if k % 5 else None for k in rng.integers(0, 700, 200)]
            ),
            "huge": pa.array(
                ["y" * 40_000 if k == 3 else "z" for k in range(200)], pa.large_string()
            ),
            "fsl": gen_array(pa.list_(pa.float32(), 96), 200, rng, 0.2, False),
            "long": pa.array(
                [list(range(9000)) if k == 7 else [k] for k in range(200)], pa.list_(pa.int64())
            ),
            "many": pa.array(
                [[k, None] if k % 3 else ([] if k % 2 else None) for k in range(200)] * 1,
                pa.list_(pa.int16()),
            ),
        }
    )
    table = pa.concat_tables([table] * 25)  # 5,000 rows, > MAX_LEVELS_PER_PAGE levels
    assert_round_trip(pylance, tmp_path, table, version)


# ----------------------------------------------------------------------------- container bytes


@pytest.mark.parametrize("version,major,minor", [("2.0", 0, 3), ("2.1", 2, 1), ("2.2", 2, 2)])
def test_container_layout(version, major, minor):
    table = pa.table(
        {
            "a": pa.array([1, None, 3], pa.int32()),
            "s": pa.array(["x", "yy", None]),
            "l": pa.array([[1.5], None, []], pa.list_(pa.float64())),
        }
    )
    store = MemoryStore()
    written = write_lance_file(store, "f.lance", table, version=version)
    data = store.get("f.lance")
    footer, (gpos, gsize), fd, metas = parse_file(data)
    cm0, cmo, gbo, ngb, ncol, fmajor, fminor = footer
    assert (fmajor, fminor) == (major, minor) == written.footer_version
    # DataFile says 2.0 for a 2.0 file (pylance 14.0.2), the footer 0.3
    assert f"{written.major}.{written.minor}" == version
    assert ngb == 1 and written.size == len(data)
    assert gpos % 64 == 0 and cm0 == gpos + gsize  # column metadata straight after global buffer 0
    assert fd.length == 3 and [f.name for f in fd.schema.fields] == ["a", "s", "l", "item"]
    assert [f.parent_id for f in fd.schema.fields] == [-1, -1, -1, 2]
    assert gbo == cmo + 16 * ncol and len(data) == gbo + 16 + 40
    end = 0
    for cm in metas:
        enc = any_pb2.Any()
        enc.ParseFromString(cm.encoding.direct.encoding)
        assert enc.type_url == "/lance.encodings.ColumnEncoding"
        col_enc = encodings_v2_0_pb2.ColumnEncoding()
        col_enc.ParseFromString(enc.value)
        assert col_enc.WhichOneof("column_encoding") == "values"
        for page in cm.pages:
            for off, size in zip(page.buffer_offsets, page.buffer_sizes, strict=True):
                if size:
                    assert off % 64 == 0, "page buffers must be 64-byte aligned"
                    assert set(data[end:off]) <= {0x48}, "filler between buffers is 0x48"
                    end = off + size
    if version == "2.0":
        assert written.fields == [0, 1, 2, 3] and written.column_indices == [0, 1, 2, 3]
    else:
        assert written.fields == [0, 1, 3] and written.column_indices == [0, 1, 2]


def test_schema_metadata_and_field_ids(pylance, tmp_path):
    schema = pa.schema(
        [
            pa.field("a", pa.int8(), metadata={"k": "v"}),
            pa.field("st", pa.struct([("x", pa.list_(pa.string())), ("y", pa.float32())])),
        ],
        metadata={"m": "1"},
    )
    table = pa.table(
        {"a": [1, 2], "st": [{"x": ["p"], "y": 1.0}, {"x": None, "y": None}]}, schema=schema
    )
    store = MemoryStore()
    written = write_lance_file(store, "f.lance", table, version="2.1")
    _, _, fd, _ = parse_file(store.get("f.lance"))
    assert [(f.name, f.id, f.parent_id, f.logical_type) for f in fd.schema.fields] == [
        ("a", 0, -1, "int8"),
        ("st", 1, -1, "struct"),
        ("x", 2, 1, "list"),
        ("item", 3, 2, "string"),
        ("y", 4, 1, "float"),
    ]
    assert fd.schema.metadata["m"] == b"1" and fd.schema.fields[0].metadata["k"] == b"v"
    assert written.fields == [0, 3, 4]
    got = pylance.file.LanceFileReader(_local_copy(store, tmp_path)).read_all().to_table()
    assert got.equals(table)


def _local_copy(store, tmp_path, key="f.lance"):
    path = tmp_path / key
    path.write_bytes(store.get(key))
    return str(path)


def test_null_struct_refused_in_2_0():
    table = pa.table({"st": pa.array([{"a": 1}, None])})
    with pytest.raises(UnsupportedFeature):
        write_lance_file(MemoryStore(), "f.lance", table, version="2.0")
    nested = pa.table({"l": pa.array([[{"a": 1}, None]], pa.list_(pa.struct([("a", pa.int64())])))})
    with pytest.raises(UnsupportedFeature):
        write_lance_file(MemoryStore(), "f.lance", nested, version="2.0")


@pytest.mark.parametrize(
    "data_type, name",
    [
        (pa.month_day_nano_interval(), "month_day_nano_interval"),
        (pa.list_view(pa.int8()), "list_view"),
        (pa.decimal32(5, 2), "decimal32"),
    ],
)
def test_unsupported_types_are_refused(data_type, name):
    """Types pylance 14.0.2 refuses at every storage version are refused with a typed error
    that names them (the type census, docs/census-types.md)."""
    table = pa.table({"x": pa.nulls(2, data_type)})
    for version in VERSIONS:
        with pytest.raises((UnsupportedFeature, InvalidInput), match=name):
            write_lance_file(MemoryStore(), "f.lance", table, version=version)


def test_maps_need_2_2_and_nulls_are_written():
    """A map column is written from 2.2 on (stored as its list of entries) and refused,
    naming the map, before; a column of the null type is written at every version (pages
    without values), as pylance 14.0.2 does both."""
    maps = pa.table({"m": pa.array([[("a", 1)], None, []], pa.map_(pa.string(), pa.int32()))})
    for version in ("2.0", "2.1"):
        with pytest.raises(UnsupportedFeature, match="map"):
            write_lance_file(MemoryStore(), "f.lance", maps, version=version)
    store = MemoryStore()
    write_lance_file(store, "f.lance", maps, version="2.2")
    from reference_impl.file.reader import LanceFileReader

    assert LanceFileReader(store, "f.lance").read_all().column("m").equals(maps.column("m"))
    nulls = pa.table({"x": pa.nulls(3), "y": pa.array([1, 2, 3])})
    for version in VERSIONS:
        store = MemoryStore()
        write_lance_file(store, "f.lance", nulls, version=version)
        assert LanceFileReader(store, "f.lance").read_all().equals(nulls)


def test_invalid_arguments():
    table = pa.table({"a": [1]})
    with pytest.raises(InvalidInput):
        write_lance_file(MemoryStore(), "f.lance", table, version="2.4")
    with pytest.raises(InvalidInput):
        write_lance_file(MemoryStore(), "f.lance", iter([]))
    writer = LanceFileWriter(MemoryStore(), "f.lance", table.schema)
    with pytest.raises(InvalidInput):
        writer.write_batch(pa.record_batch({"b": [1]}))


# ----------------------------------------------------------------------------- encodings chosen


def _mb(layout):
    assert layout.WhichOneof("layout") == "mini_block_layout", layout
    return layout.mini_block_layout


def test_low_cardinality_strings_use_dictionary():
    table = pa.table({"s": pa.array([f"colour{i % 5}" for i in range(1000)])})
    ((page,),) = written_pages(table, "2.0")
    assert page.WhichOneof("array_encoding") == "dictionary"
    assert page.dictionary.num_dictionary_items == 5
    for version in ("2.1", "2.2"):
        ((layout,),) = written_pages(table, version)
        mb = _mb(layout)
        assert mb.num_dictionary_items == 5
        assert mb.value_compression.WhichOneof("compression") == "inline_bitpacking"
        dict_kind = mb.dictionary.WhichOneof("compression")
        assert dict_kind == ("variable" if version == "2.1" else "general")


def test_high_cardinality_strings_use_binary_and_variable():
    table = pa.table({"s": pa.array([f"value-{i:012d}" for i in range(1000)])})
    ((page,),) = written_pages(table, "2.0")
    assert page.WhichOneof("array_encoding") == "binary"
    ((layout,),) = written_pages(table, "2.1")
    assert _mb(layout).value_compression.WhichOneof("compression") == "variable"
    assert not _mb(layout).HasField("dictionary")


def test_small_ints_are_bitpacked_in_2_1_and_flat_in_2_0():
    # sequential ids: FILE-ENCODINGS §5.1 "int64 sequential ids" -> MB inline_bitpacking{64}
    table = pa.table({"i": pa.array(np.arange(5000), pa.int64())})
    ((page,),) = written_pages(table, "2.0")
    assert page.nullable.no_nulls.values.flat.bits_per_value == 64
    for version in ("2.1", "2.2"):
        ((layout,),) = written_pages(table, version)
        mb = _mb(layout)
        assert mb.value_compression.inline_bitpacking.uncompressed_bits_per_value == 64
        assert mb.has_large_chunk == (version == "2.2")
        assert list(mb.layers) == [encodings_v2_1_pb2.REPDEF_ALL_VALID_ITEM]


def test_low_cardinality_int64_is_dictionary_in_2_2_only():
    table = pa.table({"i": pa.array(np.arange(5000) % 7 * 1_000_003, pa.int64())})
    ((l21,),) = written_pages(table, "2.1")
    ((l22,),) = written_pages(table, "2.2")
    assert not _mb(l21).HasField("dictionary")
    assert _mb(l22).num_dictionary_items == 7
    assert _mb(l22).dictionary.general.values.flat.bits_per_value == 64


def test_full_range_ints_stay_flat():
    rng = np.random.default_rng(1)
    table = pa.table({"i": pa.array(rng.integers(-(2**63), 2**63 - 1, 3000, dtype=np.int64))})
    ((layout,),) = written_pages(table, "2.1")
    assert _mb(layout).value_compression.flat.bits_per_value == 64


def test_wide_values_use_full_zip():
    table = pa.table(
        {
            "s": pa.array(["w" * 300, None, "v" * 256]),
            "f": pa.array([[1.0] * 64] * 3, pa.list_(pa.float32(), 64)),
        }
    )
    (s_layout,), (f_layout,) = written_pages(table, "2.1")
    fz = s_layout.full_zip_layout
    assert s_layout.WhichOneof("layout") == "full_zip_layout" and fz.bits_per_offset == 32
    assert fz.num_visible_items == 3 and fz.bits_def == 1
    assert f_layout.full_zip_layout.bits_per_value == 64 * 32


def test_huge_values_use_per_value_zstd():
    table = pa.table({"s": pa.array(["q" * 50_000, "r"])})
    ((layout,),) = written_pages(table, "2.2")
    general = layout.full_zip_layout.value_compression.general
    assert general.compression.scheme == encodings_v2_1_pb2.COMPRESSION_ALGORITHM_ZSTD


def test_all_null_pages_use_constant_layout():
    table = pa.table(
        {"i": pa.nulls(10, pa.int32()), "l": pa.array([None, []] * 5, pa.list_(pa.int8()))}
    )
    (i_layout,), (l_layout,) = written_pages(table, "2.1")
    assert i_layout.WhichOneof("layout") == "constant_layout"
    assert list(i_layout.constant_layout.layers) == [encodings_v2_1_pb2.REPDEF_NULLABLE_ITEM]
    assert list(l_layout.constant_layout.layers) == [
        encodings_v2_1_pb2.REPDEF_ALL_VALID_ITEM,
        encodings_v2_1_pb2.REPDEF_NULL_AND_EMPTY_LIST,
    ]
    ((page,),) = written_pages(table.select(["i"]), "2.0")
    assert page.nullable.WhichOneof("nullability") == "all_nulls"


@pytest.mark.parametrize("version", VERSIONS)
def test_constant_columns(pylance, tmp_path, version):
    """2.2 writes the constant layout (inline or scalar buffer); 2.1 must not (it only
    accepts the all-null form); 2.0 writes plain pages. pylance reads all back equal."""
    n = 300
    table = pa.table(
        {
            "i": pa.array([7] * n, pa.int64()),
            "b": pa.array([True, None] * (n // 2)),
            "s": pa.array(["same", None] * (n // 2)),
            "ls": pa.array([""] * n, pa.large_string()),
            "dec": pa.array([decimal.Decimal("1.5")] * n, pa.decimal128(10, 2)),
            "fsb": pa.array([b"x" * 40] * n, pa.binary(40)),
            "l": pa.array([[3, 3], [], None, [3]] * (n // 4), pa.list_(pa.int32())),
            "w": pa.array(["q" * 300] * n),
        }
    )
    assert_round_trip(pylance, tmp_path, table, version)
    if version == "2.0":
        return
    pages = written_pages(table, version)
    kinds = {
        name: p[0].values.WhichOneof("codec") if version == "2.3" else p[0].WhichOneof("layout")
        for name, p in zip(table.column_names, pages, strict=True)
    }
    if version == "2.1":
        assert "constant_layout" not in kinds.values()
        return
    if version == "2.3":
        # a 2.3 constant is a scalar of 1 to 32 bytes under all-valid layers: the int64 and
        # the decimal; the rest (nulls, strings, 40-byte values) are chunked or zipped pages
        planes = {name: (p[0].structure.WhichOneof("codec"), p[0].values.WhichOneof("codec"))
                  for name, p in zip(table.column_names, pages, strict=True)}
        assert planes["i"] == planes["dec"] == ("dense", "constant")
        assert pages[0][0].values.constant.value == struct.pack("<q", 7)
        assert all(v in ("chunked", "zipped") for name, (_, v) in planes.items() if name not in ("i", "dec"))
        return
    assert set(kinds.values()) == {"constant_layout"}
    inline = {
        name: p[0].constant_layout.inline_value
        for name, p in zip(table.column_names, pages, strict=True)
    }
    assert (
        inline["i"] == struct.pack("<q", 7)
        and inline["b"] == b"\x01"
        and inline["l"] == struct.pack("<i", 3)
    )
    assert not pages[2][0].constant_layout.HasField("inline_value")  # strings: scalar value buffer


def test_list_layers_and_repetition_index():
    table = pa.table({"l": pa.array([[1, None], None, [], [4]] * 300, pa.list_(pa.int32()))})
    ((layout,),) = written_pages(table, "2.1")
    mb = _mb(layout)
    assert list(mb.layers) == [
        encodings_v2_1_pb2.REPDEF_NULLABLE_ITEM,
        encodings_v2_1_pb2.REPDEF_NULL_AND_EMPTY_LIST,
    ]
    assert mb.repetition_index_depth == 1 and mb.num_items == 900


def test_2_0_list_and_fixed_size_list_trees():
    table = pa.table(
        {
            "l": pa.array([[1, 2], None, []], pa.list_(pa.int8())),
            "f": pa.array([[1, None], None, [3, 4]], pa.list_(pa.int16(), 2)),
        }
    )
    (offsets,), (items,), (fsl,) = written_pages(table, "2.0")
    assert offsets.list.null_offset_adjustment == 3 and offsets.list.num_items == 2
    assert items.nullable.no_nulls.values.flat.bits_per_value == 8
    some = fsl.nullable.some_nulls
    assert some.validity.flat.buffer.buffer_index == 0
    assert some.values.fixed_size_list.dimension == 2
    assert (
        some.values.fixed_size_list.items.nullable.some_nulls.values.flat.buffer.buffer_index == 2
    )


# ----------------------------------------------------------------------------- bit packing


def _fastlanes_unpack(words: np.ndarray, T: int, W: int) -> np.ndarray:
    """Straight transcription of the FILE-ENCODINGS §4.3 decode loop, one value at a time."""
    lanes = 1024 // T
    out = np.zeros(1024, dtype=object)
    P = words.reshape(W, lanes) if W else None
    for row in range(T):
        for lane in range(lanes):
            idx = FL_ORDER[row // 8] * 16 + (row % 8) * 128 + lane
            if W == 0:
                out[idx] = 0
                continue
            bit = row * W
            w, s = divmod(bit, T)
            v = int(P[w][lane]) >> s
            if s + W > T:
                v |= int(P[w + 1][lane]) << (T - s)
            out[idx] = v & ((1 << W) - 1)
    return out


@pytest.mark.parametrize("T,W", [(8, 3), (16, 16), (32, 0), (32, 17), (64, 1), (64, 62)])
def test_fastlanes_pack_inverts_the_spec_decoder(T, W):
    rng = np.random.default_rng(T * 100 + W)
    dt = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}[T]
    values = (
        rng.integers(0, 2**W if W < 64 else 2**63, 1024, dtype=np.uint64).astype(dt)
        if W
        else np.zeros(1024, dt)
    )
    packed = fastlanes_pack(values.reshape(1, 1024), T, W)
    assert packed.shape == (1, W * 1024 // T)
    assert list(_fastlanes_unpack(packed[0], T, W)) == [int(v) for v in values]


@pytest.mark.parametrize(
    "n,W,padded",
    [
        (1024 + 65, 1, True),
        (1024 + 64, 1, False),
        (100, 2, False),
        (129, 2, True),
        (2048, 3, False),
    ],
)
def test_out_of_line_tail_is_padded_only_when_strictly_smaller(n, W, padded):
    """FILE-ENCODINGS §4.4: the reader treats a tail as raw iff the buffer is exactly
    full*1024*W/T + r words, so on a size tie the writer must keep the tail raw."""
    levels = (np.arange(n) % (1 << W)).astype(np.uint16)
    buf = out_of_line_pack(levels, 16, W)
    full, r = divmod(n, 1024)
    words = len(buf) // 2
    assert words == (full + (1 if padded else 0)) * 64 * W + (0 if padded else r)
    if not padded and r:
        assert np.array_equal(np.frombuffer(buf[-2 * r :], "<u2"), levels[-r:])


def test_levels_are_out_of_line_bitpacked(pylance, tmp_path):
    table = pa.table({"l": pa.array([[1, None], None, [], [4, 5, 6]] * 700, pa.list_(pa.int32()))})
    ((layout, *_),) = written_pages(table, "2.1")
    mb = _mb(layout)
    assert mb.rep_compression.out_of_line_bitpacking.values.flat.bits_per_value == 1
    assert mb.def_compression.out_of_line_bitpacking.values.flat.bits_per_value == 2
    assert_round_trip(pylance, tmp_path, table, "2.1")


@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_runny_values_use_rle(pylance, tmp_path, version):
    """FILE-ENCODINGS §5.2 rule 3: fewer runs than half the values -> MB rle{flat T, flat 8}."""
    table = pa.table(
        {
            "r": pa.array(
                np.repeat(np.arange(30), 700), pa.int32()
            ),  # runs longer than 255 are split
            "l": pa.array([[5] * 60, None, [6] * 3] * 7000, pa.list_(pa.uint64())),
            "n": pa.array(np.arange(21000) % 1000, pa.int16()),  # no runs: bit-packed instead
        }
    )
    assert_round_trip(pylance, tmp_path, table, version)
    (r,), (lst, *_), (n,) = written_pages(table, version)
    assert _mb(r).value_compression.rle.values.flat.bits_per_value == 32
    assert (
        _mb(r).value_compression.rle.run_lengths.flat.bits_per_value == 8
        and _mb(r).num_buffers == 2
    )
    assert _mb(lst).value_compression.WhichOneof("compression") == "rle"
    assert _mb(n).value_compression.WhichOneof("compression") == "inline_bitpacking"


@pytest.mark.parametrize("version", VERSIONS)
def test_each_field_flushes_on_its_own_page_budget(pylance, tmp_path, version):
    """Streaming: a field is paged when *its* pending Arrow bytes exceed max_page_bytes."""
    schema = pa.schema([("tiny", pa.int8()), ("wide", pa.string())])
    store = LocalStore(tmp_path)
    writer = LanceFileWriter(store, "s.lance", schema, version=version, max_page_bytes=20_000)
    batches = [
        pa.record_batch(
            [
                pa.array(np.arange(100) % 100, pa.int8()),
                pa.array([f"{k:0100d}" for k in range(100)]),
            ],
            schema=schema,
        )
        for _ in range(30)
    ]
    for b in batches:
        writer.write_batch(b)
    writer.finish()
    assert pylance_read(pylance, tmp_path / "s.lance").equals(pa.Table.from_batches(batches))
    _, _, _, metas = parse_file((tmp_path / "s.lance").read_bytes())
    assert len(metas[0].pages) == 1 and len(metas[1].pages) >= 10


@pytest.mark.parametrize("version", VERSIONS)
def test_one_large_batch_is_cut_into_pages(pylance, tmp_path, version):
    table = pa.table(
        {"s": pa.array([f"{k:0300d}" for k in range(2000)]), "i": pa.array(np.arange(2000))}
    )
    written, got = write_and_read(pylance, tmp_path, table, version, max_page_bytes=64 * 1024)
    assert got.equals(table)
    _, _, _, metas = parse_file((tmp_path / "t.lance").read_bytes())
    assert len(metas[0].pages) >= 2000 * 300 // (64 * 1024)
    assert sum(p.length for p in metas[0].pages) == 2000


def _layout_summary(layout) -> tuple:
    kind = layout.WhichOneof("layout")
    has_dict = kind == "mini_block_layout" and layout.mini_block_layout.HasField("dictionary")
    return kind, has_dict


@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_layout_choices_match_pylance(pylance, tmp_path, version):
    """FILE-ENCODINGS §5.2 rule 1 (page layout and structural dictionary): on canonical
    columns our writer picks the same layout as pylance 14.0.2 (value compressions may
    differ; see selection.py)."""
    rng = np.random.default_rng(0)
    n = 5000
    table = pa.table(
        {
            "ids": pa.array(np.arange(n, dtype=np.int64)),
            "floats": pa.array(rng.random(n)),
            "colours": pa.array(
                [["red", "green", "blue", "cyan", "pink"][k] for k in rng.integers(0, 5, n)]
            ),
            "names": pa.array([f"{k:020d}" for k in rng.integers(0, 10**18, n)]),
            "wide": pa.array(["w" * 300 + str(k) for k in range(n)]),
            "fsl8": pa.array(list(rng.random((n, 8), dtype=np.float32)), pa.list_(pa.float32(), 8)),
            "fsl128": pa.array(
                list(rng.random((n, 128), dtype=np.float32)), pa.list_(pa.float32(), 128)
            ),
            "lists": pa.array(
                [[k, None] if k % 3 else ([] if k % 2 else None) for k in range(n)],
                pa.list_(pa.int32()),
            ),
            "nulls": pa.nulls(n, pa.int32()),
            "seven": pa.array([7] * n, pa.int64()),
            "decimals": pa.array([decimal.Decimal(k % 4) for k in range(n)], pa.decimal128(10, 2)),
        }
    )
    theirs = tmp_path / "pylance.lance"
    with pylance.file.LanceFileWriter(str(theirs), table.schema, version=version) as w:
        w.write_batch(table)
    _, _, _, their_metas = parse_file(theirs.read_bytes())
    ours = written_pages(table, version)
    for name, meta, pages in zip(table.column_names, their_metas, ours, strict=True):
        theirs_first = page_message(meta.pages[0], version)
        assert _layout_summary(pages[0]) == _layout_summary(theirs_first), name


def test_explicit_schema_fields_keep_their_ids(pylance, tmp_path):
    """Field ids come from ``schema_fields`` when given (e.g. gaps left by dropped columns);
    DataFile.fields lists them per column (FACTS.md "fields / column_indices")."""
    from reference_impl.file.writer import schema_fields_for

    table = pa.table({"a": [1, 2], "l": pa.array([[1.0], None], pa.list_(pa.float64()))})
    fields = schema_fields_for(table.schema)
    for f, new_id in zip(fields, [5, 9, 10], strict=True):
        f.id = new_id
    fields[2].parent_id = 9
    for version, expected_ids in [("2.0", [5, 9, 10]), ("2.1", [5, 10])]:
        store = MemoryStore()
        written = write_lance_file(store, "f.lance", table, version=version, schema_fields=fields)
        assert written.fields == expected_ids
        assert written.column_indices == list(range(len(expected_ids)))
        _, _, fd, metas = parse_file(store.get("f.lance"))
        assert [f.id for f in fd.schema.fields] == [5, 9, 10] and len(metas) == len(expected_ids)
        assert pylance_read(pylance, _local_copy(store, tmp_path)).equals(table)
    with pytest.raises(InvalidInput):
        write_lance_file(MemoryStore(), "f.lance", table, schema_fields=fields[:2])


@pytest.mark.parametrize("version", VERSIONS)
def test_reference_reader_reads_our_files(version):
    """Second oracle: the kit's own reader (reference_impl.file.reader) decodes what the
    writer wrote, every layout included (mini-block, full-zip, constant, dictionary, RLE)."""
    from reference_impl.file.reader import LanceFileReader as ReferenceReader

    rng = np.random.default_rng(2)
    columns = {f"c{i}": gen_array(t, 300, rng, 0.3, False) for i, t in enumerate(PRIMITIVES)}
    nested = pa.struct(
        [("l", pa.list_(pa.list_(pa.int32()))), ("s", pa.list_(pa.struct([("x", pa.string())])))]
    )
    columns.update(
        st=gen_array(nested, 300, rng, 0.25, version != "2.0"),
        wide=pa.array(["x" * 300, None] * 150),
        fsl=gen_array(pa.list_(pa.float32(), 100), 300, rng, 0.2, False),
        runs=pa.array(np.repeat(np.arange(3), 100), pa.int32()),
        const=pa.array([5] * 300, pa.int64()),
    )
    table = pa.table(columns)
    store = MemoryStore()
    write_lance_file(store, "f.lance", table, version=version)
    got = ReferenceReader(store, "f.lance").read_all()
    assert table_difference(expected(table), got) == ""


@pytest.mark.parametrize("rows,distinct", [(99, 5), (100, 5), (1000, 99), (1000, 100), (300, 120)])
def test_2_0_dictionary_threshold_matches_pylance(pylance, tmp_path, rows, distinct):
    """Spec 003: Dictionary "used on string pages with fewer than 100 unique elements";
    pylance 14.0.2 also needs at least 100 rows. Same choice at the boundaries."""
    table = pa.table({"s": pa.array([f"v{k % distinct}" for k in range(rows)])})
    path = tmp_path / "p.lance"
    with pylance.file.LanceFileWriter(str(path), table.schema, version="2.0") as w:
        w.write_batch(table)
    _, _, _, metas = parse_file(path.read_bytes())
    theirs = page_message(metas[0].pages[0], "2.0").WhichOneof("array_encoding")
    ((ours,),) = written_pages(table, "2.0")
    assert ours.WhichOneof("array_encoding") == theirs
    assert theirs == ("dictionary" if rows >= 100 and distinct < 100 else "binary")


# ----------------------------------------------------------------------------- Arrow dictionaries


def _arrow_dict(values, index_type=None, value_type=None):
    index_type, value_type = index_type or pa.int32(), value_type or pa.string()
    return pa.array(values, value_type).dictionary_encode().cast(
        pa.dictionary(index_type, value_type)
    )


@pytest.mark.parametrize("index_type", [pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8()])
def test_arrow_dictionary_pages_are_written_as_pylance_writes_them(index_type):
    """Found by the fuzzer: a ``dictionary<I, utf8>`` field was written as its decoded
    strings, which neither reader takes for a dictionary field. pylance 14.0.2 writes, for
    ["a", "bb", null, "a"]: 2.0 ``dictionary{indices flat <key width>, items binary}`` with
    the null as a third item (indices 0 1 2 0, no nulls); 2.1/2.2 a mini-block page with the
    2 items as its dictionary, indices of the key width and the null in the def levels."""
    table = pa.table({"d": _arrow_dict(["a", "bb", None, "a"], index_type)})
    bits = index_type.bit_width
    ((page,),) = written_pages(table, "2.0")
    d = page.dictionary
    assert d.num_dictionary_items == 3
    assert d.indices.nullable.no_nulls.values.flat.bits_per_value == bits
    assert d.items.binary.null_adjustment == 4  # 3 bytes "abb" + 1: the third item is null
    for version in ("2.1", "2.2"):
        ((layout,),) = written_pages(table, version)
        mb = _mb(layout)
        assert mb.num_dictionary_items == 2 and mb.num_items == 4
        assert list(mb.layers) == [encodings_v2_1_pb2.REPDEF_NULLABLE_ITEM]
        values = mb.value_compression
        inner = values.rle.values if values.HasField("rle") else values
        if inner.HasField("flat"):
            assert inner.flat.bits_per_value == bits
        else:
            assert values.inline_bitpacking.uncompressed_bits_per_value == bits
        dict_kind = mb.dictionary.WhichOneof("compression")
        assert dict_kind == ("variable" if version == "2.1" else "general")


def test_arrow_dictionary_null_items_become_row_nulls_in_2_1():
    """A null *item* of the dictionary: 2.0 keeps it (rows point at it); 2.1+ drops it from
    the dictionary and marks its rows null in the def levels (pylance 14.0.2 does both)."""
    arr = pa.DictionaryArray.from_arrays(pa.array([0, 1, 2, 0], pa.int32()), pa.array(["a", None, "c"]))
    ((page,),) = written_pages(pa.table({"d": arr}), "2.0")
    assert page.dictionary.num_dictionary_items == 3
    ((layout,),) = written_pages(pa.table({"d": arr}), "2.1")
    assert _mb(layout).num_dictionary_items == 2


@pytest.mark.parametrize("version", VERSIONS)
def test_arrow_dictionaries_round_trip_across_pages_and_batches(pylance, tmp_path, version):
    """Several pages (each carrying the whole dictionary), batches with different
    dictionaries (unified when concatenated), unused entries, null items, all-null pages,
    every key width and string/binary values: pylance 14.0.2's file reader and ours read
    the same values back, with the field's dictionary type."""
    rng = np.random.default_rng(7)
    words = ["", "a", "bb", "ccc", "dddd"]

    def batch(seed_words, n, index_type, value_type, null_p=0.2):
        pick = [seed_words[i] if rng.random() > null_p else None for i in rng.integers(0, len(seed_words), n)]
        if pa.types.is_binary(value_type) or pa.types.is_large_binary(value_type):
            pick = [None if p is None else p.encode() for p in pick]
        return _arrow_dict(pick, index_type, value_type)

    cols = {}
    for j, (it, vt) in enumerate([(pa.int8(), pa.string()), (pa.int16(), pa.large_string()),
                                  (pa.int32(), pa.binary()), (pa.int64(), pa.large_binary())]):
        cols[f"d{j}"] = (it, vt)
    schema = pa.schema([(k, pa.dictionary(it, vt)) for k, (it, vt) in cols.items()])
    batches = [
        pa.record_batch([batch(words[:3], 10, it, vt) for it, vt in cols.values()], schema=schema),
        pa.record_batch([batch(words[2:], 17, it, vt, 1.0) for it, vt in cols.values()], schema=schema),
        pa.record_batch([batch(words, 9, it, vt, 0.0) for it, vt in cols.values()], schema=schema),
    ]
    null_item = pa.DictionaryArray.from_arrays(pa.array([0, 1, 2, 1, None], pa.int8()), pa.array(["x", None, "z"]))
    batches.append(pa.record_batch(
        [null_item] + [batch(words, 5, it, vt) for it, vt in list(cols.values())[1:]], schema=schema))
    table = pa.Table.from_batches(batches)
    store = LocalStore(tmp_path)
    write_lance_file(
        store, "t.lance", iter(batches), version=version, schema=schema, max_rows_per_page=7
    )
    got = pylance_read(pylance, tmp_path / "t.lance")
    assert got.schema == schema
    assert table_difference(table, got) == ""
    from reference_impl.file.reader import LanceFileReader as ReferenceReader

    ours = ReferenceReader(store, "t.lance").read_all()
    assert ours.schema == schema
    assert table_difference(table, ours) == ""
    _, _, _, metas = parse_file(store.get("t.lance"))
    assert all(len(cm.pages) >= 5 for cm in metas)


def test_arrow_dictionary_without_room_for_the_null_item_is_refused():
    """2.0: 128 int8 entries leave no index for the null item a null row needs."""
    arr = pa.DictionaryArray.from_arrays(
        pa.array([0, None], pa.int8()), pa.array([f"v{i}" for i in range(128)]))
    with pytest.raises(InvalidInput, match="dictionary index 128"):
        write_lance_file(MemoryStore(), "f.lance", pa.table({"d": arr}), version="2.0")
