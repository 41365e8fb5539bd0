"""A 2.1 ``fixed_size_list<int8>[1]`` column whose rows are ``[null]`` or null, as DuckDB's Lance
extension 1.5.5 (Rust lance 6.0.0) writes it: one full-zip page whose values have no bytes
(``bits_per_value`` 0, a ``constant {}`` node) under a ``NULLABLE_ITEM`` layer. pylance 14.0.2
and DuckDB read each valid row as a list of null items; the reference reader does too (it
used to refuse the page with ENC-043). The bytes are those DuckDB wrote (``COPY ... (FORMAT
lance, data_storage_version '2.1')`` of ``[[None], None, [None]]``).

Without a layer of nulls (every row ``[null]``: an ``ALL_VALID_ITEM`` page of no bytes)
DuckDB cannot read its own file ("per-row byte width must be greater than 0") and pylance
14.0.2 reads every row as a null list, not as written: the reference reader still refuses it.
"""

from __future__ import annotations

import pyarrow as pa
import pytest

from reference_impl.errors import FormatError
from reference_impl.file.reader import LanceFileReader
from reference_impl.io.memory import MemoryStore

FSL = pa.list_(pa.int8(), 1)

# [[None], None, [None]]: one NULLABLE_ITEM layer, def levels 0 1 0
WITH_NULLS = bytes.fromhex(
    "000100" + "48" * 61 +
    "0a2c0a2a12017620ffffffffffffffffff012a1666697865645f73697a655f6c6973743a696e74383a3130"
    "01380110030a2912270a250a1f2f6c616e63652e656e636f64696e67732e436f6c756d6e456e636f6469"
    "6e6712020a0012400a01001201031803223612340a320a1d2f6c616e63652e656e636f64696e67733231"
    "2e506167654c61796f757412111a0f10011800280330033a021a0042010370000000000000006d000000"
    "00000000400000000000000030000000000000007000000000000000dd00000000000000ed0000000000"
    "00000100000001000000020001004c414e43")
# [[None], [None]]: one ALL_VALID_ITEM layer, no levels, no value bytes
ALL_VALID = bytes.fromhex(
    "0a2c0a2a12017620ffffffffffffffffff012a1666697865645f73697a655f6c6973743a696e74383a3130"
    "01380110020a2912270a250a1f2f6c616e63652e656e636f64696e67732e436f6c756d6e456e636f6469"
    "6e6712020a00123e0a01001201001802223412320a300a1d2f6c616e63652e656e636f64696e67733231"
    "2e506167654c61796f7574120f1a0d1800280230023a021a0042010130000000000000006b0000000000"
    "00000000000000000000300000000000000030000000000000009b00000000000000ab00000000000000"
    "0100000001000000020001004c414e43")


def _read(data: bytes) -> pa.Table:
    store = MemoryStore()
    store.put("f.lance", data)
    return LanceFileReader(store, "f.lance").read_all()


def test_the_bytes_are_duckdbs():
    assert len(WITH_NULLS) == 293 and len(ALL_VALID) == 227


def test_rows_of_null_items_under_nulls_read_as_written():
    t = _read(WITH_NULLS)
    assert t.schema.field("v").type == FSL
    assert t.column("v").to_pylist() == [[None], None, [None]]


def test_without_a_layer_of_nulls_the_page_is_still_refused():
    with pytest.raises(FormatError) as err:
        _read(ALL_VALID)
    assert err.value.rule == "ENC-040"


@pytest.mark.interop
def test_pylance_reads_them_alike(tmp_path):
    pytest.importorskip("lance")
    from lance.file import LanceFileReader as TheirReader

    path = tmp_path / "f.lance"
    path.write_bytes(WITH_NULLS)
    theirs = TheirReader(str(path)).read_all().to_table()
    assert theirs.column("v").to_pylist() == [[None], None, [None]]
    assert theirs.equals(_read(WITH_NULLS))
