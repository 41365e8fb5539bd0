"""Nested fixed-size lists whose valid rows hold only null items, as DuckDB's Lance
extension 1.5.5 (Rust lance 6.0.0) writes them at 2.1 and 2.2: a full-zip page whose value
node is a ``fixed_size_list`` with validity (the inner lists' nulls) around ``constant {}``,
a constant of no value: the inner fixed-size list layers are elided and the items are not
stored. pylance 14.0.2 reads every item as null; the reference reader read them as zeros
(``[[[0]], None]`` for ``[[[None]], None]``), now as nulls (``Fsl.with_null_items``).

pylance 14.0.2 itself writes these tables otherwise (the explorer over widths 1..3, depths
1..3, int8/int32/float32/bool/string, plain/struct/list found no difference with its
writer). The bytes below are DuckDB's (``COPY ... (FORMAT lance, data_storage_version
...)``), so the test needs neither DuckDB nor pylance; the interop test reads the same bytes
with pylance's reader.
"""

from __future__ import annotations

import pyarrow as pa
import pytest

from reference_impl.file.reader import LanceFileReader
from reference_impl.io.memory import MemoryStore

# (storage version, outer width, inner width, rows written, the file DuckDB wrote)
CASES = [
    ('2.1', 1, 1, [[[None]], None], bytes.fromhex(
        "00010100484848484848484848484848484848484848484848484848484848484848484848484848484848484848"
        "4848484848484848484848484848484848480a3e0a3c12017620ffffffffffffffffff012a2866697865645f7369"
        "7a655f6c6973743a66697865645f73697a655f6c6973743a696e74383a313a313001380110020a2912270a250a1f"
        "2f6c616e63652e656e636f64696e67732e436f6c756d6e456e636f64696e6712020a0012480a0100120104180222"
        "3e123c0a3a0a1d2f6c616e63652e656e636f64696e677332312e506167654c61796f757412191a17100118082802"
        "30023a0a5a08080112021a0018014201038200000000000000750000000000000040000000000000004200000000"
        "0000008200000000000000f70000000000000007010000000000000100000001000000020001004c414e43")),
    ('2.2', 1, 1, [[[None]], None], bytes.fromhex(
        "00010100484848484848484848484848484848484848484848484848484848484848484848484848484848484848"
        "4848484848484848484848484848484848480a3e0a3c12017620ffffffffffffffffff012a2866697865645f7369"
        "7a655f6c6973743a66697865645f73697a655f6c6973743a696e74383a313a313001380110020a2912270a250a1f"
        "2f6c616e63652e656e636f64696e67732e436f6c756d6e456e636f64696e6712020a0012480a0100120104180222"
        "3e123c0a3a0a1d2f6c616e63652e656e636f64696e677332312e506167654c61796f757412191a17100118082802"
        "30023a0a5a08080112021a0018014201038200000000000000750000000000000040000000000000004200000000"
        "0000008200000000000000f70000000000000007010000000000000100000001000000020002004c414e43")),
    ('2.1', 1, 2, [[[None, None]], None, [[None, None]]], bytes.fromhex(
        "00050100000148484848484848484848484848484848484848484848484848484848484848484848484848484848"
        "4848484848484848484848484848484848480a3e0a3c12017620ffffffffffffffffff012a2866697865645f7369"
        "7a655f6c6973743a66697865645f73697a655f6c6973743a696e74383a323a313001380110030a2912270a250a1f"
        "2f6c616e63652e656e636f64696e67732e436f6c756d6e456e636f64696e6712020a0012480a0100120106180322"
        "3e123c0a3a0a1d2f6c616e63652e656e636f64696e677332312e506167654c61796f757412191a17100118082803"
        "30033a0a5a08080112021a0018014201038200000000000000750000000000000040000000000000004200000000"
        "0000008200000000000000f70000000000000007010000000000000100000001000000020001004c414e43")),
    ('2.2', 2, 1, [[[None], None], None], bytes.fromhex(
        "00010100484848484848484848484848484848484848484848484848484848484848484848484848484848484848"
        "4848484848484848484848484848484848480a3e0a3c12017620ffffffffffffffffff012a2866697865645f7369"
        "7a655f6c6973743a66697865645f73697a655f6c6973743a696e74383a313a323001380110020a2912270a250a1f"
        "2f6c616e63652e656e636f64696e67732e436f6c756d6e456e636f64696e6712020a0012480a0100120104180222"
        "3e123c0a3a0a1d2f6c616e63652e656e636f64696e677332312e506167654c61796f757412191a17100118082802"
        "30023a0a5a08080212021a0018014201038200000000000000750000000000000040000000000000004200000000"
        "0000008200000000000000f70000000000000007010000000000000100000001000000020002004c414e43")),
    ('2.1', 2, 3, [[[None, None, None], [None, None, None]], None], bytes.fromhex(
        "00030100484848484848484848484848484848484848484848484848484848484848484848484848484848484848"
        "4848484848484848484848484848484848480a3e0a3c12017620ffffffffffffffffff012a2866697865645f7369"
        "7a655f6c6973743a66697865645f73697a655f6c6973743a696e74383a333a323001380110020a2912270a250a1f"
        "2f6c616e63652e656e636f64696e67732e436f6c756d6e456e636f64696e6712020a0012480a0100120104180222"
        "3e123c0a3a0a1d2f6c616e63652e656e636f64696e677332312e506167654c61796f757412191a17100118082802"
        "30023a0a5a08080212021a0018014201038200000000000000750000000000000040000000000000004200000000"
        "0000008200000000000000f70000000000000007010000000000000100000001000000020001004c414e43")),
]
IDS = [f"{v}-{a}x{b}" for v, a, b, _, _ in CASES]


def _read(data: bytes) -> pa.Table:
    store = MemoryStore()
    store.put("f.lance", data)
    return LanceFileReader(store, "f.lance").read_all()


@pytest.mark.parametrize(("version", "outer", "inner", "rows", "data"), CASES, ids=IDS)
def test_null_items_read_as_nulls(version, outer, inner, rows, data):
    t = _read(data)
    assert t.schema.field("v").type == pa.list_(pa.list_(pa.int8(), inner), outer)
    assert t.column("v").to_pylist() == rows
    items = t.column("v").combine_chunks().flatten().flatten()
    assert items.null_count == len(items) == len(rows) * outer * inner - _null_slots(rows, inner)
    # every slot under a valid inner list is a null item, none a zero


def _null_slots(rows, inner) -> int:
    """Items under null rows or null inner lists are not null-flagged items of valid lists
    (pyarrow's flatten drops them)."""
    outer_null = sum(1 for r in rows if r is None)
    inner_null = sum(1 for r in rows if r is not None for x in r if x is None)
    return outer_null * len(next(r for r in rows if r is not None)) * inner + inner_null * inner


@pytest.mark.interop
@pytest.mark.parametrize(("version", "outer", "inner", "rows", "data"), CASES, ids=IDS)
def test_pylance_reads_them_alike(tmp_path, version, outer, inner, rows, data):
    pytest.importorskip("lance")
    from lance.file import LanceFileReader as TheirReader

    path = tmp_path / "f.lance"
    path.write_bytes(data)
    theirs = TheirReader(str(path)).read_all().to_table()
    assert theirs.column("v").to_pylist() == rows
    assert theirs.equals(_read(data))
