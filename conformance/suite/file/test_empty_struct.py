"""A struct without children nested in structs (2.1 and 2.2): pylance 14.0.2 writes its column
with the empty struct's own layer only, none for the structs around it; the reference reader
reads such a column as pylance does (every struct around it valid), and still refuses a
column whose missing layers are not all structs (ENC-040)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from reference_impl.file import reader
from reference_impl.file.encodings.v2_1 import repdef

EMPTY = pa.struct([])

# (name, type, rows): pylance 14.0.2 writes each and reads it back as written
CASES = [
    ("inner-not-nullable", pa.struct([pa.field("a", EMPTY, nullable=False)]),
     [{"a": {}}, {"a": {}}]),
    ("inner-nullable", pa.struct([("a", EMPTY)]), [{"a": {}}, {"a": {}}, {"a": {}}]),
    ("two-deep", pa.struct([("x", pa.struct([("a", EMPTY)]))]), [{"x": {"a": {}}}] * 3),
    ("after-a-sibling", pa.struct([("b", pa.int32()), ("a", EMPTY)]),
     [{"b": 1, "a": {}}, {"b": None, "a": {}}]),
    ("after-a-string", pa.struct([("b", pa.string()), ("a", EMPTY)]),
     [{"b": "x", "a": {}}, {"b": "yy", "a": {}}]),
]


def _layer(n: int) -> repdef.Layer:
    return repdef.Layer(False, None, None, n)


def test_missing_outer_struct_layers_read_as_valid():
    path = [pa.field("s", pa.struct([("a", EMPTY)])), pa.field("a", EMPTY)]
    own = repdef.Layer(False, None, None, 4)
    out = reader._outer_struct_layers(path, [own])
    assert len(out) == 2 and out[1] is own
    assert not out[0].is_list and out[0].validity is None and out[0].length == 4


def test_missing_layers_that_are_not_structs_are_left_to_enc_040():
    # a list around the empty struct: its layer carries offsets, which no level gave
    listed = [pa.field("l", pa.list_(EMPTY)), pa.field("item", EMPTY)]
    assert len(reader._outer_struct_layers(listed, [_layer(3)])) == 1
    # a leaf that is not an empty struct keeps its own layer count
    ints = [pa.field("s", pa.struct([("b", pa.int32())])), pa.field("b", pa.int32())]
    assert len(reader._outer_struct_layers(ints, [_layer(3)])) == 1
    # as many layers as fields: nothing added
    path = [pa.field("s", pa.struct([("a", EMPTY)])), pa.field("a", EMPTY)]
    assert len(reader._outer_struct_layers(path, [_layer(2), _layer(2)])) == 2


@pytest.mark.interop
@pytest.mark.parametrize("version", ["2.1", "2.2"])
@pytest.mark.parametrize("name,typ,rows", CASES, ids=[c[0] for c in CASES])
def test_pylance_written_nested_empty_struct_reads_as_pylance_reads(tmp_path, version, name, typ,
                                                                     rows):
    lance = pytest.importorskip("lance")
    import reference_impl as ri
    from conformance.engine import validate

    data = pa.table({"id": pa.array(range(len(rows)), pa.int64()), "s": pa.array(rows, typ)})
    uri = str(tmp_path / "t.lance")
    lance.write_dataset(data, uri, data_storage_version=version)
    theirs = lance.dataset(uri).to_table()
    assert theirs.column("s").to_pylist() == rows  # pylance reads back what it wrote
    ours = ri.open_dataset(uri).to_table()
    assert ours.equals(theirs), (ours.column("s").to_pylist(), rows)
    report = validate(uri, deep=True)
    assert report.conforms, report.rules_violated()
