"""Transactions (spec 001 "Committing Datasets"; FACTS §A "Transactions observed"):
reference_impl.table.transaction against what pylance 14.0.2 writes."""

from __future__ import annotations

import pytest

from reference_impl import open_dataset
from reference_impl.errors import FormatError, NotFound
from reference_impl.io.memory import MemoryStore
from reference_impl.io.uri import open_store
from reference_impl.proto import transaction_pb2
from reference_impl.table import layout
from reference_impl.table.transaction import (
    COMMIT_MESSAGE_KEY,
    commit_message,
    operation_name,
    parse_transaction,
    read_transaction_file,
)

LAST_OPERATION = {
    "scalar_index": "create_index", "compaction": "rewrite", "config_metadata": "update_config",
    "drop_columns": "project", "update": "update", "delete_few": "delete", "merge": "merge",
    "add_columns_expr": "merge", "overwrite": "overwrite", "append": "append",
    "restore": "restore",
}


def _snake(name: str) -> str:
    return "".join("_" + c.lower() if c.isupper() else c for c in name).lstrip("_")


def test_commit_message_key():
    assert COMMIT_MESSAGE_KEY == "__lance_commit_message"


@pytest.mark.parametrize("scenario", sorted(LAST_OPERATION))
def test_operation_names_match_pylance(pylance, pylance_scenarios, scenario):
    """Every version's operation is the one pylance's ``read_transaction`` reports, the
    first is an Overwrite and the last the one FACTS §A names for the scenario."""
    path = pylance_scenarios[scenario]
    ds = open_dataset(path)
    pl = pylance.dataset(path)
    ops = []
    for v in ds.versions():
        txn = ds.transaction(v)
        assert txn is not None
        ops.append(operation_name(txn))
        theirs = _snake(type(pl.read_transaction(v).operation).__name__)
        if theirs != "base_operation":  # pylance has no Python class for ReserveFragments
            assert ops[-1] == theirs, v
    assert ops[0] == "overwrite"
    assert ops[-1] == LAST_OPERATION[scenario]


def test_txn_files_equal_inline_and_pylance(pylance, pylance_scenarios):
    path = pylance_scenarios["commit_message"]
    store = open_store(path)
    pl = pylance.dataset(path)
    ours = open_dataset(path)
    for v in ours.versions():
        mf = ours.checkout_version(v).manifest_file
        name = mf.manifest.transaction_file
        rv, uuid = layout.parse_transaction_file_name(name)
        from_file = read_transaction_file(store, name)
        assert from_file == mf.transaction
        assert (from_file.read_version, from_file.uuid) == (rv, uuid)
        theirs = pl.read_transaction(v)
        assert (theirs.read_version, theirs.uuid) == (from_file.read_version, from_file.uuid)
    assert [commit_message(ours.transaction(v)) for v in ours.versions()] == [
        "first commit", "second: append"]


def test_transaction_falls_back_to_txn_file(pylance, tmp_path):
    import pyarrow as pa

    from reference_impl.table import versions
    from reference_impl.table.manifest import encode_manifest_file, read_manifest_file

    uri = str(tmp_path / "ds")
    pylance.write_dataset(pa.table({"a": [1]}), uri)
    store = open_store(uri)
    e = versions.latest_entry(store)
    mf = read_manifest_file(store, e.key)
    store.put(e.key, encode_manifest_file(mf.manifest))  # drop the inline copy
    ds = open_dataset(uri)
    assert ds.manifest_file.transaction is None
    assert ds.transaction() == mf.transaction
    mf.manifest.transaction_file = ""
    store.put(e.key, encode_manifest_file(mf.manifest))
    assert open_dataset(uri).transaction() is None


def test_unknown_operation_detected():
    txn = transaction_pb2.Transaction(read_version=3, uuid="u")
    raw = txn.SerializeToString() + bytes([0xBA, 0x07, 0x00])  # field 119, wire type 2, empty
    parsed = parse_transaction(raw)
    assert parsed.WhichOneof("operation") is None
    assert operation_name(parsed) == "unknown:119"
    assert operation_name(transaction_pb2.Transaction()) is None
    t = transaction_pb2.Transaction()
    t.clone.is_shallow = True
    assert operation_name(t) == "clone"


@pytest.mark.parametrize("garbage", [b"\xff\xff\xff", b"\x0a\x05ab", b"\x08"])
def test_garbage_transaction_is_a_format_error(garbage):
    store = MemoryStore("txn-garbage")
    store.put("_transactions/1-x.txn", garbage)
    with pytest.raises(FormatError) as e:
        read_transaction_file(store, "1-x.txn")
    assert e.value.rule == "TXN-002" and e.value.path == "_transactions/1-x.txn"


def test_missing_transaction_file():
    with pytest.raises(NotFound):
        read_transaction_file(MemoryStore("txn-missing"), "1-x.txn")


def test_txn_003_compares_the_copies_as_messages():
    """Map entries (field metadata) may be serialized in either order (pylance 4.x to 9.x):
    equal messages with other bytes conform; a different message is TXN-003."""
    from types import SimpleNamespace

    from conformance.rules.transaction import inline_equal
    from reference_impl.proto import file_pb2, transaction_pb2

    a, b = ("ARROW:extension:name", b"lance.json"), ("ARROW:extension:metadata", b"")
    head = file_pb2.Field(name="j").SerializeToString()
    ea = file_pb2.Field(metadata=dict([a])).SerializeToString()
    eb = file_pb2.Field(metadata=dict([b])).SerializeToString()
    one, two = head + ea + eb, head + eb + ea
    assert one != two and file_pb2.Field.FromString(one) == file_pb2.Field.FromString(two)
    t1 = transaction_pb2.Transaction(read_version=0, uuid="u")
    t1.overwrite.schema.add().CopyFrom(file_pb2.Field.FromString(one))
    # deterministic: map entries sorted by key (the default order is the hash table's and
    # may differ between two serializations of equal maps)
    raw1 = t1.SerializeToString(deterministic=True)
    canonical = file_pb2.Field.FromString(one).SerializeToString(deterministic=True)
    assert canonical == two and canonical in raw1
    # the same transaction with the map entries of its field in the other order
    raw2 = raw1.replace(canonical, two if canonical == one else one)
    assert raw2 != raw1
    t2 = transaction_pb2.Transaction.FromString(raw2)

    def ctx(file_raw, file_txn, inline_raw, inline_txn):
        return SimpleNamespace(cache={"txn": ("_transactions/0-u.txn", file_txn, file_raw, None)},
                               mf=SimpleNamespace(transaction_bytes=inline_raw,
                                                  transaction=inline_txn))

    assert list(inline_equal(ctx(raw1, t1, raw2, t2))) == []
    other = transaction_pb2.Transaction(read_version=1, uuid="u")
    found = list(inline_equal(ctx(raw1, t1, other.SerializeToString(), other)))
    assert found and "differs" in found[0].message
