"""Nested fixed-size lists whose valid lists hold only null elements, as DuckDB's Lance
extension 1.5.5 (Rust lance 6.0.0) writes them at 2.1 and 2.2, the items not stored:

- valid inner lists of null items: a full-zip page whose value node is a
  ``fixed_size_list`` with validity (the inner lists' nulls) around ``constant {}``, a
  constant of no value, the innermost layers elided. pylance 14.0.2 reads every item as
  null; the reference reader read them as zeros (``[[[0]], None]`` for ``[[[None]], None]``),
  now as nulls (``Fsl.with_null_items``).
- valid rows of null inner lists (``[[None], None]``): a full-zip page of no bytes
  (``bits_per_value`` 0, ``constant {}``) under a layer of nulls. pylance 14.0.2 reads each
  valid row as a list of null inner lists; the reference reader refused it (ENC-043), now
  reads it so (``reader._levels_to_node``, as a single-level list's null items).
- pylance 14.0.2's own ``fixed_size_list<string>`` of null items (a ``constant {}`` item
  node): the reference reader raised a bare ValueError, now reads null strings; a constant
  item of a type without a fixed width is refused with ENC-045.

pylance 14.0.2 writes the numeric shapes otherwise and the reference reader read them as
pylance does already; ``test_pylance_written_shapes_read_as_pylance_reads`` holds that over
widths 1..3, depths 1..3, int8/int32/float32/bool/string, plain, in a struct and in a list.
The DuckDB bytes below (``COPY ... (FORMAT lance, data_storage_version ...)``) need neither
DuckDB nor pylance; the interop tests read the same bytes with pylance's reader.
"""

from __future__ import annotations

import pyarrow as pa
import pytest

from reference_impl.file.reader import LanceFileReader
from reference_impl.io.memory import MemoryStore

# (storage version, widths outermost first, rows written, the file DuckDB wrote)
CASES = [
    ('2.1', (1, 1), [[[None]], None], bytes.fromhex(
        "00010100484848484848484848484848484848484848484848484848484848484848484848484848484848484848"
        "4848484848484848484848484848484848480a3e0a3c12017620ffffffffffffffffff012a2866697865645f7369"
        "7a655f6c6973743a66697865645f73697a655f6c6973743a696e74383a313a313001380110020a2912270a250a1f"
        "2f6c616e63652e656e636f64696e67732e436f6c756d6e456e636f64696e6712020a0012480a0100120104180222"
        "3e123c0a3a0a1d2f6c616e63652e656e636f64696e677332312e506167654c61796f757412191a17100118082802"
        "30023a0a5a08080112021a0018014201038200000000000000750000000000000040000000000000004200000000"
        "0000008200000000000000f70000000000000007010000000000000100000001000000020001004c414e43")),
    ('2.2', (1, 1), [[[None]], None], bytes.fromhex(
        "00010100484848484848484848484848484848484848484848484848484848484848484848484848484848484848"
        "4848484848484848484848484848484848480a3e0a3c12017620ffffffffffffffffff012a2866697865645f7369"
        "7a655f6c6973743a66697865645f73697a655f6c6973743a696e74383a313a313001380110020a2912270a250a1f"
        "2f6c616e63652e656e636f64696e67732e436f6c756d6e456e636f64696e6712020a0012480a0100120104180222"
        "3e123c0a3a0a1d2f6c616e63652e656e636f64696e677332312e506167654c61796f757412191a17100118082802"
        "30023a0a5a08080112021a0018014201038200000000000000750000000000000040000000000000004200000000"
        "0000008200000000000000f70000000000000007010000000000000100000001000000020002004c414e43")),
    ('2.1', (1, 2), [[[None, None]], None, [[None, None]]], bytes.fromhex(
        "00050100000148484848484848484848484848484848484848484848484848484848484848484848484848484848"
        "4848484848484848484848484848484848480a3e0a3c12017620ffffffffffffffffff012a2866697865645f7369"
        "7a655f6c6973743a66697865645f73697a655f6c6973743a696e74383a323a313001380110030a2912270a250a1f"
        "2f6c616e63652e656e636f64696e67732e436f6c756d6e456e636f64696e6712020a0012480a0100120106180322"
        "3e123c0a3a0a1d2f6c616e63652e656e636f64696e677332312e506167654c61796f757412191a17100118082803"
        "30033a0a5a08080112021a0018014201038200000000000000750000000000000040000000000000004200000000"
        "0000008200000000000000f70000000000000007010000000000000100000001000000020001004c414e43")),
    ('2.2', (2, 1), [[[None], None], None], bytes.fromhex(
        "00010100484848484848484848484848484848484848484848484848484848484848484848484848484848484848"
        "4848484848484848484848484848484848480a3e0a3c12017620ffffffffffffffffff012a2866697865645f7369"
        "7a655f6c6973743a66697865645f73697a655f6c6973743a696e74383a313a323001380110020a2912270a250a1f"
        "2f6c616e63652e656e636f64696e67732e436f6c756d6e456e636f64696e6712020a0012480a0100120104180222"
        "3e123c0a3a0a1d2f6c616e63652e656e636f64696e677332312e506167654c61796f757412191a17100118082802"
        "30023a0a5a08080212021a0018014201038200000000000000750000000000000040000000000000004200000000"
        "0000008200000000000000f70000000000000007010000000000000100000001000000020002004c414e43")),
    ('2.1', (2, 3), [[[None, None, None], [None, None, None]], None], bytes.fromhex(
        "00030100484848484848484848484848484848484848484848484848484848484848484848484848484848484848"
        "4848484848484848484848484848484848480a3e0a3c12017620ffffffffffffffffff012a2866697865645f7369"
        "7a655f6c6973743a66697865645f73697a655f6c6973743a696e74383a333a323001380110020a2912270a250a1f"
        "2f6c616e63652e656e636f64696e67732e436f6c756d6e456e636f64696e6712020a0012480a0100120104180222"
        "3e123c0a3a0a1d2f6c616e63652e656e636f64696e677332312e506167654c61796f757412191a17100118082802"
        "30023a0a5a08080212021a0018014201038200000000000000750000000000000040000000000000004200000000"
        "0000008200000000000000f70000000000000007010000000000000100000001000000020001004c414e43")),
    ('2.1', (1, 1), [[None], None], bytes.fromhex(
        "00014848484848484848484848484848484848484848484848484848484848484848484848484848484848484848"
        "4848484848484848484848484848484848480a3e0a3c12017620ffffffffffffffffff012a2866697865645f7369"
        "7a655f6c6973743a66697865645f73697a655f6c6973743a696e74383a313a313001380110020a2912270a250a1f"
        "2f6c616e63652e656e636f64696e67732e436f6c756d6e456e636f64696e6712020a0012400a0100120102180222"
        "3612340a320a1d2f6c616e63652e656e636f64696e677332312e506167654c61796f757412111a0f100118002802"
        "30023a021a0042010382000000000000006d00000000000000400000000000000042000000000000008200000000"
        "000000ef00000000000000ff000000000000000100000001000000020001004c414e43")),
    ('2.2', (2, 1), [[None, None], None], bytes.fromhex(
        "00014848484848484848484848484848484848484848484848484848484848484848484848484848484848484848"
        "4848484848484848484848484848484848480a3e0a3c12017620ffffffffffffffffff012a2866697865645f7369"
        "7a655f6c6973743a66697865645f73697a655f6c6973743a696e74383a313a323001380110020a2912270a250a1f"
        "2f6c616e63652e656e636f64696e67732e436f6c756d6e456e636f64696e6712020a0012400a0100120102180222"
        "3612340a320a1d2f6c616e63652e656e636f64696e677332312e506167654c61796f757412111a0f100118002802"
        "30023a021a0042010382000000000000006d00000000000000400000000000000042000000000000008200000000"
        "000000ef00000000000000ff000000000000000100000001000000020002004c414e43")),
    ('2.2', (1, 1, 1), [[None], None], bytes.fromhex(
        "00014848484848484848484848484848484848484848484848484848484848484848484848484848484848484848"
        "4848484848484848484848484848484848480a500a4e12017620ffffffffffffffffff012a3a66697865645f7369"
        "7a655f6c6973743a66697865645f73697a655f6c6973743a66697865645f73697a655f6c6973743a696e74383a31"
        "3a313a313001380110020a2912270a250a1f2f6c616e63652e656e636f64696e67732e436f6c756d6e456e636f64"
        "696e6712020a0012400a01001201021802223612340a320a1d2f6c616e63652e656e636f64696e677332312e5061"
        "67654c61796f757412111a0f10011800280230023a021a0042010394000000000000006d00000000000000400000"
        "00000000005400000000000000940000000000000001010000000000001101000000000000010000000100000002"
        "0002004c414e43")),
    ('2.1', (1, 1, 1), [[[[None]]], None], bytes.fromhex(
        "00010101000048484848484848484848484848484848484848484848484848484848484848484848484848484848"
        "4848484848484848484848484848484848480a500a4e12017620ffffffffffffffffff012a3a66697865645f7369"
        "7a655f6c6973743a66697865645f73697a655f6c6973743a66697865645f73697a655f6c6973743a696e74383a31"
        "3a313a313001380110020a2912270a250a1f2f6c616e63652e656e636f64696e67732e436f6c756d6e456e636f64"
        "696e6712020a0012500a01001201061802224612440a420a1d2f6c616e63652e656e636f64696e677332312e5061"
        "67654c61796f757412211a1f10011810280230023a125a100801120a5a08080112021a0018011801420103940000"
        "00000000007d00000000000000400000000000000054000000000000009400000000000000110100000000000021"
        "010000000000000100000001000000020001004c414e43")),
]
IDS = [f"{v}-{'x'.join(map(str, dims))}-{i}" for i, (v, dims, _, _) in enumerate(CASES)]


def _type(dims) -> pa.DataType:
    return _typed(dims, pa.int8())


def _read(data: bytes) -> pa.Table:
    store = MemoryStore()
    store.put("f.lance", data)
    return LanceFileReader(store, "f.lance").read_all()


@pytest.mark.parametrize(("version", "dims", "rows", "data"), CASES, ids=IDS)
def test_null_elements_read_as_nulls(version, dims, rows, data):
    t = _read(data)
    assert t.schema.field("v").type == _type(dims)
    assert t.column("v").to_pylist() == rows  # nulls, not one zero, where nulls were written


@pytest.mark.interop
@pytest.mark.parametrize(("version", "dims", "rows", "data"), CASES, ids=IDS)
def test_pylance_reads_them_alike(tmp_path, version, dims, rows, data):
    pytest.importorskip("lance")
    from lance.file import LanceFileReader as TheirReader

    path = tmp_path / "f.lance"
    path.write_bytes(data)
    theirs = TheirReader(str(path)).read_all().to_table()
    assert theirs.column("v").to_pylist() == rows
    assert theirs.equals(_read(data))


# pylance 14.0.2's own writing of the same shapes (it panics on fixed-size lists holding a
# valid string, so strings hold nulls only): every table reads as pylance reads it
ITEMS = {"int8": (pa.int8(), 5), "int32": (pa.int32(), -7), "float32": (pa.float32(), 1.5),
         "bool": (pa.bool_(), True), "string": (pa.string(), None)}
SHAPES = [(1,), (2,), (3,), (1, 1), (1, 2), (2, 1), (2, 3), (1, 1, 1)]


def _row(dims, item):
    """A row of ``dims`` whose items alternate null and ``item`` (null first)."""
    count = iter(range(1 << 20))

    def level(depth):
        if depth == len(dims):
            return None if next(count) % 2 == 0 else item
        return [level(depth + 1) for _ in range(dims[depth])]
    return level(0)


def _rows(dims, item) -> list:
    """Rows of null items only, alternating items, a null row and (nested) a null inner list."""
    rows = [_row(dims, None), _row(dims, item), None]
    if len(dims) > 1:
        rows.append([None] + [_row(dims[1:], None) for _ in range(dims[0] - 1)])
    return rows


@pytest.mark.interop
@pytest.mark.parametrize("name", list(ITEMS))
@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_pylance_written_shapes_read_as_pylance_reads(tmp_path, version, name):
    pytest.importorskip("lance")
    from lance.file import LanceFileReader as TheirReader
    from lance.file import LanceFileWriter

    from reference_impl.io.local import LocalStore

    item_type, item = ITEMS[name]
    store = LocalStore(str(tmp_path))
    for i, dims in enumerate(SHAPES):
        t = _typed(dims, item_type)
        rows = _rows(dims, item)
        for wrap, column in [("plain", pa.array(rows, t)),
                             ("struct", pa.array([{"a": r} for r in rows], pa.struct([("a", t)]))),
                             ("list", pa.array([[r] for r in rows], pa.list_(t)))]:
            key = f"{i}-{wrap}.lance"
            with LanceFileWriter(str(tmp_path / key), version=version) as w:
                w.write_batch(pa.table({"v": column}))
            theirs = TheirReader(str(tmp_path / key)).read_all().to_table()
            assert theirs.column("v").to_pylist() == column.to_pylist(), (dims, wrap)
            ours = LanceFileReader(store, key).read_all()
            assert ours.column("v").to_pylist() == column.to_pylist(), (dims, wrap)
            assert ours.equals(theirs), (dims, wrap)


def _typed(dims, item_type) -> pa.DataType:
    t = item_type
    for width in reversed(dims):
        t = pa.list_(t, width)
    return t


def test_a_constant_string_item_is_refused_with_a_rule():
    """A constant item with a value needs a fixed width: for strings the page is refused."""
    import numpy as np

    from reference_impl.errors import FormatError
    from reference_impl.file import arrow_types
    from reference_impl.file.encodings.v2_1.values import Fixed, Fsl

    values = Fsl(1, Fixed(np.zeros(2, bool), 1), [], [1], [], b"ab")
    field = pa.field("v", pa.list_(pa.string(), 1))
    with pytest.raises(FormatError) as err:
        arrow_types.leaf_array(field, values, None)
    assert err.value.rule == "ENC-045"
    nulls = Fsl(1, Fixed(np.zeros(2, bool), 1), [], [1], [], b"")
    assert arrow_types.leaf_array(field, nulls, None).to_pylist() == [[None], [None]]
