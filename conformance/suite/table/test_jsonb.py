"""JSON columns (``lance.json``, binary JSON values) read as pylance reads them.

pylance stores an ``arrow.json`` column as JSONB bytes and scans it back as compact JSON
text; :mod:`reference_impl.table.jsonb` does the same. pylance 14.0.2 is the oracle for
the text (member order, escapes, float layout); hostile bytes are typed errors.
"""

from __future__ import annotations

import json

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import reference_impl as ri
from conformance.engine import local
from conformance.releases.corpus import table_difference
from reference_impl.errors import FormatError
from reference_impl.table import jsonb

_scalars = (st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1)
            | st.floats(allow_nan=False, allow_infinity=False)
            | st.text(max_size=12))
json_docs = st.recursive(_scalars, lambda inner: st.lists(inner, max_size=4)
                         | st.dictionaries(st.text(max_size=6), inner, max_size=4),
                         max_leaves=12)


@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
@given(docs=st.lists(json_docs, min_size=1, max_size=30),
       storage=st.sampled_from(["2.0", "2.1", "2.2"]))
def test_json_columns_read_as_pylance_reads_them(pylance, tmp_path_factory, docs, storage):
    root = tmp_path_factory.mktemp("json") / "t"
    texts = [None if i % 5 == 4 else json.dumps(d) for i, d in enumerate(docs)]
    pylance.write_dataset(pa.table({"j": pa.array(texts, pa.json_())}), str(root),
                          data_storage_version=storage)
    want = pylance.dataset(str(root)).to_table()
    got = ri.open_dataset(str(root)).to_table()
    assert got.schema.field("j").type == pa.json_()
    assert table_difference(want, got) == ""


def test_json_with_an_index_and_appends_conforms(pylance, tmp_path):
    from lance.indices import IndexConfig

    root = tmp_path / "t"
    data = pa.table({"idx": pa.array(range(300)),
                     "j": pa.array([f'{{"val": {i}, "s": "x{i}"}}' for i in range(300)],
                                   pa.json_())})
    ds = pylance.write_dataset(data, str(root), max_rows_per_file=100)
    ds.create_scalar_index("j", IndexConfig(index_type="json",
                                            parameters={"target_index_type": "btree",
                                                        "path": "val"}))
    ds.insert(pa.table({"idx": pa.array([1000]), "j": pa.array(['{"val": 1000}'],
                                                               pa.json_())}))
    for v in (1, 2, 3):
        want = pylance.dataset(str(root), version=v).to_table()
        assert table_difference(want, ri.open_dataset(str(root), version=v).to_table()) == ""
    report = local.validate(str(root), versions="all", deep=True)
    assert not report.violations, [(v.rule, v.message) for v in report.violations]


@pytest.mark.parametrize("value,text", [
    (0.0, "0.0"), (-0.0, "-0.0"), (3.0, "3.0"), (1e15, "1000000000000000.0"),
    (1e16, "1e+16"), (1.5e-7, "1.5e-7"), (1e-5, "0.00001"), (5e-324, "5e-324"),
    (-0.0025, "-0.0025"), (123.456, "123.456"), (1.2345678901234568e29, "1.2345678901234568e+29"),
    (-1.7976931348623157e308, "-1.7976931348623157e+308"),
])
def test_float_layout(value, text):
    assert jsonb.format_float(value) == text


@pytest.mark.parametrize("raw", [
    b"", b"\x40", b"\x40\x00\x00\x01", b"\x40\x00\x00\x01\x10\x00\x00\x05ab",
    b"\x20\x00\x00\x00\x20\x00\x00\x02\x77\x01", b"\x90\x00\x00\x00",
    b"\x20\x00\x00\x00\x10\x00\x00\x02\xff\xfe",
    b"\x20\x00\x00\x00\x20\x00\x00\x01\x00extra",
])
def test_hostile_jsonb_is_a_typed_error(raw):
    with pytest.raises(FormatError) as err:
        jsonb.to_text(raw)
    assert err.value.rule == "ENC-045"


def test_deep_nesting_is_bounded():
    inner = b"\x80\x00\x00\x00"
    for _ in range(jsonb.MAX_DEPTH + 5):
        inner = b"\x80\x00\x00\x01" + (0x50000000 | len(inner)).to_bytes(4, "big") + inner
    with pytest.raises(FormatError):
        jsonb.to_text(inner)


def test_json_fields_named_arrow_json_are_binary_json_too(pylance, tmp_path):
    """pylance 0.36 to 1.x name the stored field ``arrow.json`` (logical type ``json``)."""
    from conformance.suite.releases.test_old_release_shapes import _edit_manifest

    root = tmp_path / "t"
    pylance.write_dataset(pa.table({"j": pa.array(['{"a": [1, 2.5]}', None], pa.json_())}),
                          str(root))

    def as_1x_wrote(m):
        for f in m.fields:
            if f.extension_name == "lance.json":
                f.extension_name = "arrow.json"
                f.metadata["ARROW:extension:name"] = b"arrow.json"

    _edit_manifest(root, as_1x_wrote)
    got = ri.open_dataset(str(root)).to_table()
    assert got.column("j").to_pylist() == ['{"a":[1,2.5]}', None]
    assert table_difference(pylance.dataset(str(root)).to_table(), got) == ""


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.text(max_size=8)
    | st.floats(allow_nan=False, allow_infinity=False),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner,
                                                                max_size=4),
    max_leaves=12)


def _as_stored(doc):
    """``doc`` as binary JSON holds it: an integer outside int64 and uint64 is a double
    (pylance 14.0.2 reads ``-9223372036854775809`` and ``18446744073709551616`` back as
    ``-9.223372036854776e+18`` and ``1.8446744073709552e+19``; ``9223372036854775808`` and
    ``-9223372036854775808`` as written)."""
    if isinstance(doc, bool) or doc is None:
        return doc
    if isinstance(doc, int):
        return doc if -2**63 <= doc < 2**64 else float(doc)
    if isinstance(doc, list):
        return [_as_stored(x) for x in doc]
    if isinstance(doc, dict):
        return {k: _as_stored(v) for k, v in doc.items()}
    return doc


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(_json_values)
@example(-2**63 - 1)  # found by the default run: a double, as pylance stores it
@example([2**64, -2**63, 2**64 - 1])
def test_our_binary_json_reads_back_as_the_document(doc):
    """``from_text`` (our writer's binary JSON) reads back as the same document, members in
    key-byte order as pylance stores them (integers beyond 64 bits as doubles)."""
    text = json.dumps(doc)
    back = json.loads(jsonb.to_text(jsonb.from_text(text)))
    assert back == _as_stored(json.loads(text))
    if isinstance(doc, dict):
        assert list(json.loads(jsonb.to_text(jsonb.from_text(text)))) == \
            sorted(doc, key=lambda k: k.encode())


@pytest.mark.interop
@pytest.mark.parametrize("storage", ["2.0", "2.1", "2.2"])
def test_json_columns_we_write_read_back_in_pylance(pylance, tmp_path, storage):
    """arrow.json columns, at the top level and nested, written by our writer as binary JSON:
    pylance 14.0.2 reads them back as the text it reads from its own (compact, keys sorted by
    their bytes) and so do we."""
    docs = ['{"b":1,"a":[1,2.5,null],"B":{"x":"é"}}', "[]", None, '"s"', "123456789012"]
    j = pa.array(docs, pa.json_())
    items = pa.array([d for d in docs if d], pa.json_())
    offsets = pa.array([0, 1, 2, 2, 3, 4], pa.int32())  # a list of one document per row
    t = pa.table({"j": j, "l": pa.ListArray.from_arrays(offsets, items)})
    ri.write_dataset(t, str(tmp_path / "ours"), data_storage_version=storage)
    pylance.write_dataset(t, str(tmp_path / "theirs"), data_storage_version=storage)
    want = pylance.dataset(str(tmp_path / "theirs")).to_table()
    assert not table_difference(want, pylance.dataset(str(tmp_path / "ours")).to_table())
    assert not table_difference(want, ri.open_dataset(str(tmp_path / "ours")).to_table())


@pytest.mark.interop
def test_integers_beyond_64_bits_are_doubles_as_in_pylance(pylance, tmp_path):
    """An integer outside int64 and uint64 is stored as a double, by pylance 14.0.2 and by
    our writer alike (the property test's falsifying example -9223372036854775809)."""
    docs = ["-9223372036854775809", "9223372036854775808", "18446744073709551616",
            "-9223372036854775808", "[18446744073709551615, -9223372036854775809]"]
    t = pa.table({"j": pa.array(docs, pa.json_())})
    ri.write_dataset(t, str(tmp_path / "ours"))
    pylance.write_dataset(t, str(tmp_path / "theirs"))
    want = pylance.dataset(str(tmp_path / "theirs")).to_table()
    assert [json.loads(x) for x in want["j"].to_pylist()] == \
        [_as_stored(json.loads(d)) for d in docs]
    assert not table_difference(want, pylance.dataset(str(tmp_path / "ours")).to_table())
    assert not table_difference(want, ri.open_dataset(str(tmp_path / "ours")).to_table())


def test_a_stored_json_text_reads_as_that_text():
    """pylance 10.0.0's ``update`` stores the SQL literal of a JSON column as text, not JSONB
    (``{"val": -1}``, bytes 7b 22 ...), and both it and 14.0.2 read it back as that text; a
    value that is neither JSONB nor JSON text is still ENC-045."""
    from reference_impl.table.jsonb import decode_array, from_text, stored_text

    raw = b'{"val": -1}'
    assert stored_text(raw) == '{"val": -1}'  # as stored, not re-serialized
    got = decode_array(pa.array([from_text('{"a":[1,2]}'), raw, None], pa.large_binary()))
    assert got.storage.to_pylist() == ['{"a":[1,2]}', '{"val": -1}', None]
    for bad in (b"\x70junk", b"{not json", b"\xff\xfe"):
        with pytest.raises(FormatError) as err:
            stored_text(bad)
        assert err.value.rule == "ENC-045"
