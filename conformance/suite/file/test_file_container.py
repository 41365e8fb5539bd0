"""The v2.x file container (spec 003 "File Structure") and the FILE/ENC rules.

Positive cases are files written by pylance 14.0.2; negative cases rewrite one thing in a
pylance file: the footer, a table entry, or a page's protobuf (the tail is re-laid with
:func:`rewrite_tail`, the data region is kept byte for byte).
"""

from __future__ import annotations

import struct

import numpy as np
import pyarrow as pa
import pytest
from google.protobuf import any_pb2

from conformance.rules import get_rule, load_all
from conformance.rules.context import DataFileContext
from reference_impl.errors import FormatError, UnsupportedFeature
from reference_impl.file import checks
from reference_impl.file.container import FOOTER, read_container
from reference_impl.file.reader import DECODERS, LanceFileReader, register_decoder
from reference_impl.io.local import LocalStore
from reference_impl.proto import encodings_v2_1_pb2, file2_pb2

load_all()


def write(lance, path, table, version):
    with lance.file.LanceFileWriter(str(path), table.schema, version=version) as w:
        w.write_batch(table)
    return path


@pytest.fixture
def sample(pylance, tmp_path):
    """A 2.2 file with ints, strings, a dictionary column, lists, a constant and big strings."""
    n = 500
    table = pa.table({
        "i": pa.array(np.arange(n)),
        "s": pa.array([f"value-{i:08d}-" * 6 for i in range(n)]),
        "low": pa.array([["alpha-centauri", "betelgeuse-red", "canopus-bright"][i % 3] for i in range(n)]),
        "l": pa.array([[i, None] if i % 3 else [] for i in range(n)], pa.list_(pa.int32())),
        "k": pa.array([7] * n, pa.int64()),
        "big": pa.array(["x" * 300 + str(i) for i in range(n)]),
    })
    write(pylance, tmp_path / "f22.lance", table, "2.2")
    write(pylance, tmp_path / "f21.lance", table, "2.1")
    return tmp_path, table


def rewrite_tail(raw: bytes, container, *, columns=None, version=None, gbufs=None) -> bytes:
    """Re-lay the tail after the data region with (possibly) changed column metadata."""
    cols = columns if columns is not None else container.columns
    head = raw[:container.column_meta_start]
    out = bytearray(head)
    cm0 = len(out)
    positions = []
    for c in cols:
        b = c.SerializeToString()
        positions.append((len(out), len(b)))
        out += b
    cmo = len(out)
    for p, s in positions:
        out += struct.pack("<QQ", p, s)
    gbo = len(out)
    gb = gbufs if gbufs is not None else container.global_buffers
    for p, s in gb:
        out += struct.pack("<QQ", p, s)
    major, minor = version or container.version
    out += FOOTER.pack(cm0, cmo, gbo, len(gb), len(cols), major, minor, b"LANC")
    return bytes(out)


def mutate_page(tmp_path, name, col, fn, page=0, out="bad.lance"):
    """Copy ``name`` with ``fn(layout_or_page)`` applied to one page; returns the new key."""
    raw = (tmp_path / name).read_bytes()
    c = read_container(LocalStore(str(tmp_path)), name)
    cols = [file2_pb2.ColumnMetadata.FromString(m.SerializeToString()) for m in c.columns]
    pg = cols[col].pages[page]
    a = any_pb2.Any.FromString(pg.encoding.direct.encoding)
    layout = encodings_v2_1_pb2.PageLayout.FromString(a.value)
    res = fn(layout, pg)
    if res != "page-only":
        a.value = layout.SerializeToString()
        pg.encoding.direct.encoding = a.SerializeToString()
    (tmp_path / out).write_bytes(rewrite_tail(raw, c, columns=cols))
    return out


def run_rule(rule_id, tmp_path, key):
    ctx = DataFileContext(version=None, fragment=None, data_file=None, file_store=LocalStore(str(tmp_path)),
                          file_key=key)
    return list(get_rule(rule_id).check(ctx))


# ----------------------------------------------------------------------------- container


@pytest.mark.parametrize("version,pair", [("2.0", (0, 3)), ("2.1", (2, 1)), ("2.2", (2, 2))])
def test_read_container_versions(pylance, tmp_path, version, pair):
    table = pa.table({"a": pa.array([1, 2, 3]), "b": pa.array(["x", None, "z"])})
    write(pylance, tmp_path / "v.lance", table, version)
    c = read_container(LocalStore(str(tmp_path)), "v.lance")
    assert c.version == pair and c.version_name == version
    assert c.num_rows == 3 and c.num_columns == len(c.columns) == 2
    assert [f.name for f in c.fields] == ["a", "b"]
    assert c.global_buffers[0][0] % 64 == 0
    assert c.reader.reads <= 2
    r = LanceFileReader(LocalStore(str(tmp_path)), "v.lance")
    assert r.version == version and r.read_all().column("b").to_pylist() == ["x", None, "z"]


def test_legacy_tail_detected(tmp_path):
    (tmp_path / "old.lance").write_bytes(b"\0" * 100 + struct.pack("<QHH", 40, 0, 2) + b"LANC")
    c = read_container(LocalStore(str(tmp_path)), "old.lance")
    assert c.version == (0, 2) and c.is_legacy and c.legacy_metadata_position == 40


def test_register_decoder_dispatch(pylance, tmp_path):
    write(pylance, tmp_path / "v.lance", pa.table({"a": pa.array([5, 6])}), "2.1")
    calls = []
    orig = DECODERS["2.1"]

    def spy(container, index, field, page_range):
        calls.append((index, field.name, page_range))
        return orig(container, index, field, page_range)

    register_decoder("2.1", spy)
    try:
        assert LanceFileReader(LocalStore(str(tmp_path)), "v.lance").read_all().column(0).to_pylist() == [5, 6]
    finally:
        register_decoder("2.1", orig)
    assert calls == [(0, "a", None)]


def test_unknown_version_is_unsupported(sample):
    tmp_path, _ = sample
    raw = (tmp_path / "f22.lance").read_bytes()
    c = read_container(LocalStore(str(tmp_path)), "f22.lance")
    (tmp_path / "v9.lance").write_bytes(rewrite_tail(raw, c, version=(9, 9)))
    with pytest.raises(UnsupportedFeature):
        read_container(LocalStore(str(tmp_path)), "v9.lance")
    assert run_rule("FILE-003", tmp_path, "v9.lance")
    assert not run_rule("FILE-003", tmp_path, "f22.lance")


def test_rewrite_tail_identity(sample):
    tmp_path, table = sample
    raw = (tmp_path / "f22.lance").read_bytes()
    c = read_container(LocalStore(str(tmp_path)), "f22.lance")
    (tmp_path / "same.lance").write_bytes(rewrite_tail(raw, c))
    assert LanceFileReader(LocalStore(str(tmp_path)), "same.lance").read_all().equals(table)


# ----------------------------------------------------------------------------- FILE rules

def _tail_case(tmp_path, mutate):
    raw = bytearray((tmp_path / "f22.lance").read_bytes())
    mutate(raw)
    (tmp_path / "t.lance").write_bytes(bytes(raw))
    return "t.lance"


@pytest.mark.parametrize("rule_id,mutate", [
    ("FILE-001", lambda raw: raw.__setitem__(slice(-4, None), b"LANX")),
    ("FILE-002", lambda raw: raw.__setitem__(slice(-32, -24), struct.pack("<Q", len(raw)))),
    ("FILE-004", lambda raw: raw.__setitem__(slice(-40 - 16, -40 - 8), struct.pack("<Q", len(raw)))),
])
def test_footer_rules(sample, rule_id, mutate):
    tmp_path, _ = sample
    assert not run_rule(rule_id, tmp_path, "f22.lance")
    key = _tail_case(tmp_path, mutate)
    found = run_rule(rule_id, tmp_path, key)
    assert found and found[0].location["path"] == key
    with pytest.raises(FormatError) as ei:
        read_container(LocalStore(str(tmp_path)), key)
    assert ei.value.rule == rule_id


def test_descriptor_rule(sample):
    tmp_path, _ = sample
    raw = bytearray((tmp_path / "f22.lance").read_bytes())
    c = read_container(LocalStore(str(tmp_path)), "f22.lance")
    pos, size = c.global_buffers[0]
    raw[pos:pos + size] = b"\xff" * size
    (tmp_path / "d.lance").write_bytes(bytes(raw))
    assert run_rule("FILE-005", tmp_path, "d.lance")
    assert not run_rule("FILE-005", tmp_path, "f22.lance")


def test_column_metadata_rule(sample):
    tmp_path, _ = sample
    raw = bytearray((tmp_path / "f22.lance").read_bytes())
    c = read_container(LocalStore(str(tmp_path)), "f22.lance")
    raw[c.cmo_offset:c.cmo_offset + 8] = struct.pack("<Q", len(raw) - 5)
    (tmp_path / "cm.lance").write_bytes(bytes(raw))
    assert run_rule("FILE-006", tmp_path, "cm.lance")
    assert not run_rule("FILE-006", tmp_path, "f22.lance")


def _set_offset(delta):
    def fn(layout, page):
        page.buffer_offsets[0] += delta
        return "page-only"
    return fn


@pytest.mark.parametrize("rule_id,fn", [
    ("FILE-011", lambda layout, page: (page.buffer_offsets.__setitem__(0, 10**6), "page-only")[1]),
    ("FILE-012", _set_offset(8)),
    ("FILE-013", lambda layout, page: (setattr(page, "length", page.length + 1), "page-only")[1]),
    ("FILE-014", lambda layout, page: (setattr(page, "priority", 3), "page-only")[1]),
])
def test_page_rules(sample, rule_id, fn):
    tmp_path, _ = sample
    assert not run_rule(rule_id, tmp_path, "f22.lance")
    key = mutate_page(tmp_path, "f22.lance", 0, fn)
    found = run_rule(rule_id, tmp_path, key)
    assert found, rule_id


def test_encoding_type_rule(sample):
    tmp_path, _ = sample
    raw = (tmp_path / "f22.lance").read_bytes()
    c = read_container(LocalStore(str(tmp_path)), "f22.lance")
    cols = [file2_pb2.ColumnMetadata.FromString(m.SerializeToString()) for m in c.columns]
    a = any_pb2.Any.FromString(cols[0].pages[0].encoding.direct.encoding)
    a.type_url = "/lance.encodings.ArrayEncoding"
    cols[0].pages[0].encoding.direct.encoding = a.SerializeToString()
    (tmp_path / "e.lance").write_bytes(rewrite_tail(raw, c, columns=cols))
    assert run_rule("FILE-015", tmp_path, "e.lance")
    assert not run_rule("FILE-015", tmp_path, "f22.lance")


def _column_encoding_variant(meta, kind: str) -> None:
    """Damage ``meta``'s column encoding as ``kind`` says."""
    a = any_pb2.Any.FromString(meta.encoding.direct.encoding)
    if kind == "other type":
        a.type_url = "/lance.encodings.ArrayEncoding"
    elif kind == "value does not parse":
        a.value = b"\xff\xff\xff"
    elif kind == "type url not UTF-8":
        meta.encoding.direct.encoding = a.SerializeToString().replace(b"Column", b"Col\xe3mn")
        return
    elif kind == "empty":
        meta.encoding.direct.encoding = b""
        return
    elif kind == "missing":
        meta.ClearField("encoding")
        return
    meta.encoding.direct.encoding = a.SerializeToString()


@pytest.mark.parametrize("version", ["2.0", "2.1", "2.2"])
@pytest.mark.parametrize(
    "kind", ["other type", "value does not parse", "type url not UTF-8", "empty", "missing"]
)
def test_a_column_encoding_that_is_not_a_column_encoding_is_refused(pylance, tmp_path, version, kind):
    """Every 2.x column carries ``direct`` Any(/lance.encodings.ColumnEncoding) (FILE-ENCODINGS
    §0; every release in the cross-release corpus writes it). pylance 14.0.2 refuses a file
    whose column encoding is of another type, does not parse, is empty or missing ("Error
    reading file metadata"); so do our reader and, for 2.1+, the validator's FILE-015 (a 2.0
    file's column encodings are FILE-050's, reported as its columns are built)."""
    table = pa.table({"a": pa.array(range(300), pa.int64()), "s": pa.array([f"v{i}" for i in range(300)])})
    write(pylance, tmp_path / "f.lance", table, version)
    raw = (tmp_path / "f.lance").read_bytes()
    c = read_container(LocalStore(str(tmp_path)), "f.lance")
    cols = [file2_pb2.ColumnMetadata.FromString(m.SerializeToString()) for m in c.columns]
    _column_encoding_variant(cols[1], kind)
    (tmp_path / "bad.lance").write_bytes(rewrite_tail(raw, c, columns=cols))
    with pytest.raises(Exception, match="ColumnEncoding|missing its encoding"):  # the oracle
        pylance.file.LanceFileReader(str(tmp_path / "bad.lance")).read_all().to_table()
    with pytest.raises(FormatError) as err:
        LanceFileReader(LocalStore(str(tmp_path)), "bad.lance").read_all()
    assert err.value.rule == ("FILE-050" if version == "2.0" else "FILE-015")
    assert LanceFileReader(LocalStore(str(tmp_path)), "f.lance").read_all().equals(table)
    assert not run_rule("FILE-015", tmp_path, "f.lance")
    if version != "2.0":
        found = run_rule("FILE-015", tmp_path, "bad.lance")
        assert found and "column 1: column encoding" in str(found[0]), found


def test_checks_clean_on_pylance_files(sample):
    tmp_path, _ = sample
    for name in ("f21.lance", "f22.lance"):
        r = LanceFileReader(LocalStore(str(tmp_path)), name)
        assert checks.all_checks(r.container, r) == []


# ----------------------------------------------------------------------------- ENC rules

def _col(table, name):
    return table.column_names.index(name)


def _mb(layout):
    return layout.mini_block_layout


ENC_CASES = [
    ("ENC-042", "i", lambda lay, pg: setattr(_mb(lay), "has_large_chunk", False)),
    ("ENC-041", "i", lambda lay, pg: (pg.buffer_sizes.__setitem__(1, pg.buffer_sizes[1] - 8), "page-only")[1]),
    ("ENC-001", "i", lambda lay, pg: _mb(lay).value_compression.Clear() or _mb(lay).value_compression.SetInParent()),
    ("ENC-003", "s", lambda lay, pg: setattr(_mb(lay).value_compression.fsst.values.variable.offsets.flat, "bits_per_value", 16)),
    ("ENC-010", "i", lambda lay, pg: setattr(_mb(lay).value_compression.inline_bitpacking, "uncompressed_bits_per_value", 24)),
    ("ENC-020", "low", lambda lay, pg: setattr(_mb(lay).dictionary.general.compression, "scheme", 2)),
    ("ENC-030", "s", lambda lay, pg: setattr(_mb(lay).value_compression.fsst, "symbol_table", b"\x07")),
    ("ENC-040", "l", lambda lay, pg: _mb(lay).layers.__setitem__(1, 2)),
    ("ENC-043", "big", lambda lay, pg: (pg.buffer_sizes.__setitem__(1, pg.buffer_sizes[1] - 4), "page-only")[1]),
    ("ENC-044", "k", lambda lay, pg: setattr(lay.constant_layout, "inline_value", b"\x01\x02")),
    ("ENC-046", "i", lambda lay, pg: setattr(_mb(lay), "num_items", _mb(lay).num_items - 1)),
]


@pytest.mark.parametrize("rule_id,column,fn", ENC_CASES, ids=[c[0] for c in ENC_CASES])
def test_encoding_rules(sample, rule_id, column, fn):
    tmp_path, table = sample
    assert not run_rule(rule_id, tmp_path, "f22.lance")
    key = mutate_page(tmp_path, "f22.lance", _col(table, column), fn)
    found = run_rule(rule_id, tmp_path, key)
    assert found, (rule_id, [f for r in ("ENC-001", "ENC-046") for f in run_rule(r, tmp_path, key)])
    with pytest.raises((FormatError, UnsupportedFeature)):
        LanceFileReader(LocalStore(str(tmp_path)), key).read_all()


def test_rle_rule(pylance, tmp_path):
    table = pa.table({"k": pa.array([7] * 300 + [8] * 300, pa.int64())})
    write(pylance, tmp_path / "r.lance", table, "2.1")
    assert not run_rule("ENC-012", tmp_path, "r.lance")
    key = mutate_page(tmp_path, "r.lance", 0,
                      lambda lay, pg: setattr(_mb(lay).value_compression.rle.run_lengths.flat, "bits_per_value", 16))
    assert run_rule("ENC-012", tmp_path, key)


def test_legacy_file_from_pylance(pylance, tmp_path):
    pylance.write_dataset(pa.table({"a": pa.array(range(10))}), str(tmp_path / "ds"),
                          data_storage_version="legacy")
    data = tmp_path / "ds" / "data"
    name = next(p.name for p in data.iterdir() if p.suffix == ".lance")
    c = read_container(LocalStore(str(data)), name)
    assert c.is_legacy and c.version_name == "0.1" and c.num_rows == 10
    r = LanceFileReader(LocalStore(str(data)), name)  # one entry point for every version
    assert r.version == "0.1" and r.num_rows == 10
    assert r.read_all().column("a").to_pylist() == list(range(10))


# ------------------------------------------------- decoder ids registered as rules (issue 3)


@pytest.fixture
def sample_more(pylance, tmp_path):
    """A 2.2 file with flat floats, a fixed-size list, packed structs (fixed and variable
    children) and a blob column."""
    n = 300
    rng = np.random.default_rng(0)
    fields = [pa.field("f", pa.float64()), pa.field("v", pa.list_(pa.float32(), 4)),
              pa.field("ps", pa.struct([("a", pa.int32()), ("b", pa.float64())]),
                       metadata={"lance-encoding:packed": "true"}),
              pa.field("vps", pa.struct([("a", pa.int32()), ("s", pa.string())]),
                       metadata={"lance-encoding:packed": "true"}),
              pa.field("blob", pa.large_binary(), metadata={"lance-encoding:blob": "true"})]
    table = pa.table({
        "f": rng.random(n),
        "v": pa.FixedSizeListArray.from_arrays(pa.array(rng.random(4 * n).astype(np.float32)), 4),
        "ps": pa.StructArray.from_arrays([pa.array(np.arange(n, dtype=np.int32)), pa.array(rng.random(n))], ["a", "b"]),
        "vps": pa.StructArray.from_arrays([pa.array(np.arange(n, dtype=np.int32)),
                                           pa.array([f"s{i}" for i in range(n)])], ["a", "s"]),
        "blob": pa.array([bytes([i % 256]) * 100 for i in range(n)], pa.large_binary()),
    }, schema=pa.schema(fields))
    write(pylance, tmp_path / "m22.lance", table, "2.2")
    return tmp_path, table


def test_sample_more_reads_like_pylance(pylance, sample_more):
    tmp_path, _ = sample_more
    got = LanceFileReader(LocalStore(str(tmp_path)), "m22.lance").read_all()
    assert got.equals(pylance.file.LanceFileReader(str(tmp_path / "m22.lance")).read_all().to_table())


def _bss8(lay, pg):
    vc = _mb(lay).value_compression
    vc.Clear()
    vc.byte_stream_split.values.flat.bits_per_value = 8


def _vps_no_width(lay, pg):
    lay.full_zip_layout.value_compression.variable_packed_struct.fields[0].ClearField("bits_per_value")


MORE_CASES = [
    ("ENC-002", "f", lambda lay, pg: setattr(_mb(lay).value_compression.flat, "bits_per_value", 128)),
    ("ENC-013", "f", _bss8),
    ("ENC-014", "v", lambda lay, pg: setattr(_mb(lay).value_compression.fixed_size_list, "items_per_value", 0)),
    ("ENC-015", "ps", lambda lay, pg: _mb(lay).value_compression.packed_struct.bits_per_value.__setitem__(1, 60)),
    ("ENC-016", "vps", _vps_no_width),
    ("ENC-047", "blob", lambda lay, pg: lay.blob_layout.inner_layout.full_zip_layout.SetInParent()),
]


@pytest.mark.parametrize("rule_id,column,fn", MORE_CASES, ids=[c[0] for c in MORE_CASES])
def test_more_encoding_rules(sample_more, rule_id, column, fn):
    tmp_path, table = sample_more
    assert not run_rule(rule_id, tmp_path, "m22.lance")
    key = mutate_page(tmp_path, "m22.lance", _col(table, column), fn)
    found = run_rule(rule_id, tmp_path, key)
    assert found, (rule_id, [f for r in ("ENC-001", "ENC-046") for f in run_rule(r, tmp_path, key)])
    assert not run_rule("ENC-046", tmp_path, key)  # reported under its own id only
    with pytest.raises(FormatError) as e:
        LanceFileReader(LocalStore(str(tmp_path)), key).read_all()
    assert e.value.rule == rule_id


@pytest.mark.parametrize("rule_id,column,fn", [
    ("ENC-017", "low", lambda lay, pg: setattr(_mb(lay), "num_dictionary_items", 1)),
    ("ENC-045", "i", lambda lay, pg: setattr(_mb(lay).value_compression.inline_bitpacking,
                                             "uncompressed_bits_per_value", 32)),
], ids=["ENC-017", "ENC-045"])
def test_dictionary_and_type_rules(sample, rule_id, column, fn):
    tmp_path, table = sample
    assert not run_rule(rule_id, tmp_path, "f22.lance")
    key = mutate_page(tmp_path, "f22.lance", _col(table, column), fn)
    assert run_rule(rule_id, tmp_path, key), [f for r in ("ENC-001", "ENC-046") for f in run_rule(r, tmp_path, key)]


def test_schema_columns_rule(sample):
    """FILE-009: the schema needs one column per leaf; a file missing its last column fails."""
    tmp_path, _ = sample
    raw = (tmp_path / "f22.lance").read_bytes()
    c = read_container(LocalStore(str(tmp_path)), "f22.lance")
    cols = [file2_pb2.ColumnMetadata.FromString(m.SerializeToString()) for m in c.columns][:-1]
    (tmp_path / "short.lance").write_bytes(rewrite_tail(raw, c, columns=cols))
    assert not run_rule("FILE-009", tmp_path, "f22.lance")
    assert run_rule("FILE-009", tmp_path, "short.lance")


def test_field_rows_rule(pylance, tmp_path):
    """FILE-010: a 2.0 column whose pages hold fewer rows than the FileDescriptor says."""
    from reference_impl.proto import file_pb2

    table = pa.table({"a": pa.array(np.arange(100))})
    write(pylance, tmp_path / "f20.lance", table, "2.0")
    raw = (tmp_path / "f20.lance").read_bytes()
    c = read_container(LocalStore(str(tmp_path)), "f20.lance")
    pos, size = c.global_buffers[0]
    desc = file_pb2.FileDescriptor.FromString(raw[pos:pos + size])
    desc.length = 101
    body = desc.SerializeToString()
    head = bytearray(raw[:c.column_meta_start])
    head += b"\0" * (-len(head) % 64)
    new_pos = len(head)
    head += body

    class Tail:  # the container with a longer data region
        column_meta_start = len(head)
        columns = c.columns
        global_buffers = [(new_pos, len(body))] + list(c.global_buffers[1:])
        version = c.version

    (tmp_path / "rows.lance").write_bytes(rewrite_tail(bytes(head), Tail))
    assert not run_rule("FILE-010", tmp_path, "f20.lance")
    assert run_rule("FILE-010", tmp_path, "rows.lance")
