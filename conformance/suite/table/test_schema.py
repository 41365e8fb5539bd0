"""Schema (spec 001 "Schema", FACTS "lance.file.Field"): the Field list <-> pyarrow,
checked against what pylance 14.0.2 writes for every Arrow type."""

from __future__ import annotations

import struct
from pathlib import Path

import pyarrow as pa
import pytest

from reference_impl.errors import FormatError, InvalidInput, UnsupportedFeature
from reference_impl.proto import file_pb2, table_pb2
from reference_impl.table import schema as S

# Arrow type -> logical type strings (depth first) observed from pylance 14.0.2
OBSERVED = [
    (pa.bool_(), ["bool"]),
    (pa.int8(), ["int8"]), (pa.int16(), ["int16"]), (pa.int32(), ["int32"]), (pa.int64(), ["int64"]),
    (pa.uint8(), ["uint8"]), (pa.uint16(), ["uint16"]), (pa.uint32(), ["uint32"]),
    (pa.uint64(), ["uint64"]),
    (pa.float16(), ["halffloat"]), (pa.float32(), ["float"]), (pa.float64(), ["double"]),
    (pa.decimal128(10, 3), ["decimal:128:10:3"]), (pa.decimal256(40, 5), ["decimal:256:40:5"]),
    (pa.date32(), ["date32:day"]), (pa.date64(), ["date64:ms"]),
    (pa.time32("s"), ["time32:s"]), (pa.time32("ms"), ["time32:ms"]),
    (pa.time64("us"), ["time64:us"]), (pa.time64("ns"), ["time64:ns"]),
    (pa.timestamp("s"), ["timestamp:s:-"]), (pa.timestamp("ms"), ["timestamp:ms:-"]),
    (pa.timestamp("us"), ["timestamp:us:-"]), (pa.timestamp("ns"), ["timestamp:ns:-"]),
    (pa.timestamp("us", "UTC"), ["timestamp:us:UTC"]),
    (pa.timestamp("ns", "America/New_York"), ["timestamp:ns:America/New_York"]),
    (pa.duration("s"), ["duration:s"]), (pa.duration("ms"), ["duration:ms"]),
    (pa.duration("us"), ["duration:us"]), (pa.duration("ns"), ["duration:ns"]),
    (pa.binary(), ["binary"]), (pa.large_binary(), ["large_binary"]),
    (pa.string(), ["string"]), (pa.large_string(), ["large_string"]),
    (pa.binary(16), ["fixed_size_binary:16"]),
    (pa.list_(pa.int32()), ["list", "int32"]), (pa.large_list(pa.string()), ["large_list", "string"]),
    (pa.list_(pa.float32(), 4), ["fixed_size_list:float:4"]),
    (pa.list_(pa.int64(), 2), ["fixed_size_list:int64:2"]),
    (pa.list_(pa.float16(), 8), ["fixed_size_list:halffloat:8"]),
    (pa.list_(pa.uint8(), 3), ["fixed_size_list:uint8:3"]),
    (pa.list_(pa.bool_(), 2), ["fixed_size_list:bool:2"]),
    (pa.list_(pa.list_(pa.float32(), 2), 2), ["fixed_size_list:fixed_size_list:float:2:2"]),
    (pa.list_(pa.list_(pa.float32(), 2)), ["list", "fixed_size_list:float:2"]),
    (pa.struct([("a", pa.int32()), ("b", pa.string())]), ["struct", "int32", "string"]),
    (pa.list_(pa.struct([("k", pa.int64())])), ["list.struct", "struct", "int64"]),
    (pa.large_list(pa.struct([("k", pa.int64())])), ["large_list.struct", "struct", "int64"]),
    (pa.map_(pa.string(), pa.int64()), ["map", "struct", "string", "int64"]),
    (pa.dictionary(pa.int32(), pa.string()), ["dict:string:int32:false"]),
    (pa.dictionary(pa.int8(), pa.string()), ["dict:string:int8:false"]),
    (pa.dictionary(pa.uint16(), pa.large_string()), ["dict:large_string:uint16:false"]),
    (pa.null(), ["null"]),
    (pa.uuid(), ["fixed_size_binary:16"]),
    (pa.fixed_shape_tensor(pa.float32(), [2, 2]), ["fixed_size_list:float:4"]),
]


def _ids(t):
    return str(t).replace(" ", "")[:40]


def _manifest(ds_dir: Path) -> table_pb2.Manifest:
    files = sorted((ds_dir / "_versions").glob("*.manifest"))
    data = files[0].read_bytes()
    pos = struct.unpack_from("<Q", data, len(data) - 16)[0]
    (n,) = struct.unpack_from("<I", data, pos)
    m = table_pb2.Manifest()
    m.ParseFromString(data[pos + 4: pos + 4 + n])
    return m


def _no_field_ids(schema: pa.Schema) -> pa.Schema:
    """Drop lance:field_id keys (and empty metadata) so schemas compare as pylance's."""

    def clean(f: pa.Field) -> pa.Field:
        t = f.type
        if pa.types.is_struct(t):
            t = pa.struct([clean(t.field(i)) for i in range(t.num_fields)])
        elif pa.types.is_list(t):
            t = pa.list_(clean(t.value_field))
        elif pa.types.is_large_list(t):
            t = pa.large_list(clean(t.value_field))
        elif pa.types.is_map(t):
            t = pa.map_(clean(t.key_field), clean(t.item_field))
        meta = {k: v for k, v in (f.metadata or {}).items() if k != S.FIELD_ID_KEY}
        return pa.field(f.name, t, f.nullable, metadata=meta or None)

    return pa.schema([clean(f) for f in schema], metadata=schema.metadata)


# --------------------------------------------------------------------------- pure

@pytest.mark.parametrize("arrow_type,expected", OBSERVED, ids=[_ids(t) for t, _ in OBSERVED])
def test_logical_types_match_observed(arrow_type, expected):
    fields = S.arrow_to_fields(pa.schema([pa.field("c", arrow_type)]))
    assert [f.logical_type for f in fields] == expected
    assert [f.id for f in fields] == list(range(len(expected)))
    back = S.fields_to_arrow(fields)
    assert back.field("c").type == arrow_type


def test_ids_depth_first_and_children():
    schema = pa.schema([
        pa.field("id", pa.int64(), nullable=False),
        pa.field("point", pa.struct([("x", pa.float64()), ("label", pa.string())])),
        pa.field("nums", pa.list_(pa.int64())),
        pa.field("emb", pa.list_(pa.float32(), 3)),
    ])
    fields = S.arrow_to_fields(schema, start_id=10)
    assert [(f.name, f.id, f.parent_id) for f in fields] == [
        ("id", 10, -1), ("point", 11, -1), ("x", 12, 11), ("label", 13, 11),
        ("nums", 14, -1), ("item", 15, 14), ("emb", 16, -1)]
    assert fields[0].nullable is False
    assert [f.encoding for f in fields] == [1, 0, 1, 2, 1, 1, 1]
    tree = S.SchemaTree(fields)
    assert [f.name for f in tree.top_level_fields()] == ["id", "point", "nums", "emb"]
    assert [f.name for f in tree.children_of(11)] == ["x", "label"]
    assert tree.leaf_ids() == [10, 12, 13, 15, 16]
    assert tree.max_field_id() == 16
    assert tree.field_by_id(13).name == "label"
    proj = S.project(fields, [13, 16])
    assert [f.id for f in proj] == [11, 13, 16]
    assert [f.id for f in S.project(fields, [14])] == [14, 15]
    arrow = S.fields_to_arrow(proj)
    assert arrow.names == ["point", "emb"]
    assert arrow.field("point").metadata[S.FIELD_ID_KEY] == b"11"
    assert arrow.field("point").type.field(0).metadata[S.FIELD_ID_KEY] == b"13"
    assert S.field_ids_of(S.fields_to_arrow(fields)) == [10, 11, 14, 16]


def test_metadata_nullability_roundtrip():
    schema = pa.schema([pa.field("a", pa.int32(), nullable=False, metadata={"k": "v"}),
                        pa.field("s", pa.struct([pa.field("x", pa.int8(), nullable=False)]))],
                       metadata={"sk": "sv"})
    fields = S.arrow_to_fields(schema)
    assert dict(fields[0].metadata) == {"k": b"v"}
    back = S.fields_to_arrow(fields, S.schema_metadata_of(schema))
    assert back.metadata == {b"sk": b"sv"}
    assert back.field("a").metadata == {b"k": b"v", S.FIELD_ID_KEY: b"0"}
    assert back.field("a").nullable is False
    assert back.field("s").type.field(0).nullable is False
    assert [f.id for f in S.arrow_to_fields(back)] == [0, 1, 2]


def test_extension_fields():
    fields = S.arrow_to_fields(pa.schema([pa.field("u", pa.uuid()), pa.field("j", pa.json_())]))
    assert fields[0].extension_name == "arrow.uuid"
    assert fields[0].metadata["ARROW:extension:name"] == b"arrow.uuid"
    assert (fields[1].logical_type, fields[1].extension_name) == ("json", "lance.json")
    back = S.fields_to_arrow(fields)
    assert back.field("u").type == pa.uuid()
    # lance.json is not a pyarrow extension: storage type plus the extension keys
    assert back.field("j").type == pa.large_binary()
    assert back.field("j").metadata[b"ARROW:extension:name"] == b"lance.json"


def test_view_types_stored_as_plain():
    fields = S.arrow_to_fields(pa.schema([("s", pa.string_view()), ("b", pa.binary_view())]))
    assert [f.logical_type for f in fields] == ["string", "binary"]


@pytest.mark.parametrize("t", [pa.list_view(pa.int32()), pa.map_(pa.string(), pa.int32(), keys_sorted=True)])
def test_refused_types(t):
    with pytest.raises(InvalidInput):
        S.arrow_to_fields(pa.schema([("c", t)]))


def _field(id, name, lt, parent=-1, nullable=True):
    f = file_pb2.Field()
    f.id, f.name, f.logical_type, f.parent_id, f.nullable = id, name, lt, parent, nullable
    return f


@pytest.mark.parametrize("lt", ["varchar", "int128", "fixed_size_list:widget:3", "dict:blob:int32:false", ""])
def test_unknown_logical_type(lt):
    with pytest.raises(UnsupportedFeature) as err:
        S.fields_to_arrow([_field(0, "c", lt)])
    assert err.value.rule == "SCHEMA-004"


@pytest.mark.parametrize("lt", ["decimal:128:99:2", "decimal:64:10:2", "timestamp:xs:-",
                                "fixed_size_binary:0", "fixed_size_list:float:-1",
                                "fixed_size_list:float:99999999999", "dict:string:float:false",
                                "dict:string:int32:maybe"])
def test_malformed_logical_type(lt):
    with pytest.raises(FormatError) as err:
        S.fields_to_arrow([_field(0, "c", lt)])
    assert err.value.rule == "SCHEMA-004"


@pytest.mark.parametrize("fields,rule", [
    ([_field(0, "a", "int32"), _field(0, "b", "int32")], "SCHEMA-001"),
    ([_field(0, "a", "int32"), _field(1, "b", "int32", parent=7)], "SCHEMA-002"),
    ([_field(0, "a", "struct", parent=1), _field(1, "b", "struct", parent=0)], "SCHEMA-002"),
    ([_field(0, "l", "list")], "SCHEMA-005"),
    ([_field(0, "l", "list"), _field(1, "a", "int32", 0), _field(2, "b", "int32", 0)], "SCHEMA-005"),
    ([_field(0, "m", "map"), _field(1, "e", "int32", 0)], "SCHEMA-005"),
    ([_field(0, "i", "int32"), _field(1, "x", "int32", 0)], "SCHEMA-005"),
    ([_field(0, "l", "list.struct"), _field(1, "x", "int32", 0)], "SCHEMA-005"),
    # two siblings of one name: the scan looked columns up by name and met a KeyError
    ([_field(0, "s", "int32"), _field(1, "s", "string")], "SCHEMA-007"),
    ([_field(0, "st", "struct"), _field(1, "a", "int32", 0), _field(2, "a", "int64", 0)],
     "SCHEMA-007"),
])
def test_bad_trees(fields, rule):
    with pytest.raises(FormatError) as err:
        S.fields_to_arrow(fields)
    assert err.value.rule == rule


def test_deep_nesting_refused_not_recursed():
    fields = [_field(0, "s0", "struct")] + [_field(i, f"s{i}", "struct", i - 1) for i in range(1, 5000)]
    with pytest.raises(FormatError) as err:
        S.fields_to_arrow(fields)
    assert err.value.rule == "SCHEMA-002"


# --------------------------------------------------------------------------- pylance

VERSIONS = ["legacy", "2.0", "2.1", "2.2", "2.3"]


def _refused(arrow_type, version) -> bool:
    if pa.types.is_map(arrow_type):
        return version != "2.2" and version != "2.3"
    if version == "2.0" and pa.types.is_struct(arrow_type):
        return True  # null structs refused
    return False


@pytest.mark.parametrize("version", VERSIONS)
def test_fields_agree_with_pylance(pylance, tmp_path, version):
    """Write one dataset per version with every observed type; our field list must equal
    the manifest's (ids, names, parents, logical types, nullability, encoding), and our
    Arrow schema must equal pylance's."""
    cols = [(f"c{i}", t) for i, (t, _) in enumerate(OBSERVED) if not _refused(t, version)]
    schema = pa.schema([pa.field(n, t) for n, t in cols], metadata={"origin": "test"})
    table = pa.table({n: pa.nulls(3, t) for n, t in cols}, schema=schema)
    ds = pylance.write_dataset(table, str(tmp_path / "ds"), data_storage_version=version)
    m = _manifest(tmp_path / "ds")
    ours = S.arrow_to_fields(schema)
    assert [(f.id, f.parent_id, f.name, f.logical_type, f.nullable, f.encoding,
             f.HasField("dictionary"), f.extension_name, dict(f.metadata)) for f in ours] == \
           [(f.id, f.parent_id, f.name, f.logical_type, f.nullable, f.encoding,
             f.HasField("dictionary"), f.extension_name, dict(f.metadata)) for f in m.fields]
    arrow = S.fields_to_arrow(m.fields, dict(m.schema_metadata))
    assert _no_field_ids(arrow) == ds.schema
    assert arrow.metadata == {b"origin": b"test"}


def test_field_ids_after_drop_and_rename(pylance, tmp_path):
    uri = str(tmp_path / "ds")
    pylance.write_dataset(pa.table({"a": [1], "b": [2], "c": [3]}), uri)
    ds = pylance.dataset(uri)
    ds.drop_columns(["b"])
    pylance.dataset(uri).alter_columns({"path": "c", "name": "z"})
    pylance.dataset(uri).add_columns({"n": "a + 1"})
    m = _manifest(tmp_path / "ds")  # the newest: V2 names sort newest first
    assert [(f.name, f.id) for f in m.fields] == [("a", 0), ("z", 2), ("n", 3)]
    arrow = S.fields_to_arrow(m.fields)
    assert S.field_ids_of(arrow) == [0, 2, 3]
    assert S.max_field_id(m.fields) == 3
