"""Manifest file framing (spec 001 "Manifest", FACTS §A "Manifest file framing"):
reference_impl.table.manifest against files pylance 14.0.2 writes."""

from __future__ import annotations

import struct

import pytest

from reference_impl.errors import FormatError
from reference_impl.io.memory import MemoryStore
from reference_impl.io.uri import open_store
from reference_impl.proto import table_pb2, transaction_pb2
from reference_impl.table import versions
from reference_impl.table.manifest import (
    ManifestFile,
    encode_manifest_file,
    read_manifest_file,
    reencode,
)

ROUND_TRIP_SCENARIOS = ["scalar_index", "delete_few", "stable_row_ids", "shallow_clone",
                        "branches", "version_legacy", "commit_message", "update"]


class CountingStore(MemoryStore):
    """A memory store that counts ranged reads and whole reads."""

    def __init__(self):
        super().__init__("counting")
        self.ranged = 0
        self.whole = 0
        self._inside = False

    def get_range(self, key, start, length):
        self.ranged += 1
        self._inside = True
        try:
            return super().get_range(key, start, length)
        finally:
            self._inside = False

    def size(self, key):
        self._inside = True
        try:
            return super().size(key)
        finally:
            self._inside = False

    def get(self, key, **kw):
        if not self._inside:
            self.whole += 1
        return super().get(key, **kw)


def _all_manifest_keys(root):
    store = open_store(root)
    return store, [e.key for e in versions.scan_versions(store)]


@pytest.mark.parametrize("scenario", ROUND_TRIP_SCENARIOS)
def test_reencode_is_byte_identical_to_pylance(pylance_scenarios, scenario):
    """Every manifest pylance wrote, decoded into its parts and encoded again, gives the
    very same bytes."""
    path = pylance_scenarios[scenario]
    roots = [path]
    info = pylance_scenarios.info(scenario)
    roots += [t["path"] for t in info["branch_versions"].values()]
    if info.get("clone"):
        roots.append(info["clone"]["path"])
    checked = 0
    for root in roots:
        store, keys = _all_manifest_keys(root)
        for key in keys:
            mf = read_manifest_file(store, key)
            assert isinstance(mf, ManifestFile)
            assert (mf.tail_major, mf.tail_minor) == (0, 2)
            assert mf.transaction_field == 23
            assert mf.manifest_offset + 4 + len(mf.manifest.SerializeToString()) == mf.size - 16
            assert reencode(mf) == store.get(key), key
            checked += 1
    assert checked >= 2


def test_inline_transaction_equals_txn_file(pylance_scenarios):
    path = pylance_scenarios["append"]
    store, keys = _all_manifest_keys(path)
    for key in keys:
        mf = read_manifest_file(store, key)
        txn_bytes = store.get(f"_transactions/{mf.manifest.transaction_file}")
        assert mf.transaction_bytes == txn_bytes
        assert mf.transaction.read_version == mf.manifest.version - 1


def test_index_section_matches_pylance(pylance, pylance_scenarios):
    path = pylance_scenarios["scalar_index"]
    ds = pylance.dataset(path)
    store = open_store(path)
    key = versions.latest_entry(store).key
    mf = read_manifest_file(store, key)
    assert mf.index_section is not None
    assert sorted(i.name for i in mf.index_section.indices) == sorted(
        i.name for i in ds.describe_indices())
    assert mf.manifest.index_section == 0  # pylance puts the index section first


def _sample_manifest(n_fragments: int = 2) -> table_pb2.Manifest:
    m = table_pb2.Manifest(version=3)
    f = m.fields.add()
    f.name, f.id, f.parent_id, f.logical_type, f.nullable = "a", 0, -1, "int64", True
    for i in range(n_fragments):
        frag = m.fragments.add(id=i, physical_rows=10)
        frag.files.add(path=f"{i:056d}.lance", fields=[0], column_indices=[0],
                       file_major_version=2, file_minor_version=2, file_size_bytes=100)
    m.max_fragment_id = max(n_fragments - 1, 0)
    m.writer_version.library, m.writer_version.version = "lance", "14.0.2"
    return m


def test_encode_layout_and_offsets():
    m = _sample_manifest()
    txn = transaction_pb2.Transaction(read_version=2, uuid="u-1")
    txn.append.fragments.add(id=1)
    idx = table_pb2.IndexSection()
    idx.indices.add(name="i", dataset_version=2)
    data = encode_manifest_file(m, transaction=txn, index_section=idx)
    assert data[-4:] == b"LANC"
    pos, major, minor = struct.unpack("<QHH", data[-16:-4])
    assert (major, minor) == (0, 2)
    isz = idx.ByteSize()
    assert struct.unpack("<I", data[:4])[0] == isz
    assert struct.unpack("<I", data[4 + isz: 8 + isz])[0] == txn.ByteSize()
    assert pos == 8 + isz + txn.ByteSize()
    store = MemoryStore("enc-layout")
    store.put("m", data)
    mf = read_manifest_file(store, "m")
    assert mf.manifest.index_section == 0 and mf.manifest.transaction_section == 4 + isz
    assert mf.transaction == txn and mf.index_section == idx
    assert not m.HasField("index_section")  # the caller's message is untouched


def test_encode_without_sections_and_with_field_21():
    m = _sample_manifest()
    store = MemoryStore("enc-21")
    store.put("bare", encode_manifest_file(m))
    mf = read_manifest_file(store, "bare")
    assert mf.transaction is None and mf.index_section is None and mf.transaction_field is None
    assert mf.manifest_offset == 0
    txn = transaction_pb2.Transaction(read_version=1, uuid="x")
    store.put("f21", encode_manifest_file(m, transaction=txn, transaction_field=21))
    mf = read_manifest_file(store, "f21")
    assert mf.transaction_field == 21 and mf.transaction.uuid == "x"
    assert mf.manifest.transaction_section_spec == 0
    assert not mf.manifest.HasField("transaction_section")
    with pytest.raises(ValueError):
        encode_manifest_file(m, transaction=txn, transaction_field=22)


def test_small_manifest_costs_one_ranged_read():
    store = CountingStore()
    store.put("m", encode_manifest_file(_sample_manifest(3),
                                        transaction=transaction_pb2.Transaction(uuid="t")))
    read_manifest_file(store, "m")
    assert (store.ranged, store.whole) == (1, 0)


def test_large_manifest_costs_two_ranged_reads():
    m = _sample_manifest(3000)
    txn = transaction_pb2.Transaction(uuid="t")
    idx = table_pb2.IndexSection()
    idx.indices.add(name="i")
    data = encode_manifest_file(m, transaction=txn, index_section=idx)
    assert len(data) > 3 * 64 * 1024
    store = CountingStore()
    store.put("m", data)
    mf = read_manifest_file(store, "m")
    assert len(mf.manifest.fragments) == 3000 and mf.index_section.indices[0].name == "i"
    assert (store.ranged, store.whole) == (2, 0)


def _with_unknown(message, number: int, payload: bytes) -> bytes:
    tag = (number << 3) | 2
    key = bytearray()
    while True:
        b = tag & 0x7F
        tag >>= 7
        key.append(b | (0x80 if tag else 0))
        if not tag:
            break
    return message.SerializeToString() + bytes(key) + bytes([len(payload)]) + payload


def test_unknown_fields_are_kept_and_exposed():
    frag = table_pb2.DataFragment(id=7, physical_rows=1)
    frag_bytes = _with_unknown(frag, 11, b"overlay")  # DataFragment 11: newer releases' overlays
    m = _sample_manifest(0)
    m.fragments.add().ParseFromString(frag_bytes)
    manifest_bytes = _with_unknown(m, 99, b"future")
    parsed = table_pb2.Manifest()
    parsed.ParseFromString(manifest_bytes)
    store = MemoryStore("unknown")
    store.put("m", encode_manifest_file(parsed))
    mf = read_manifest_file(store, "m")
    assert mf.unknown_fields["manifest"] == [(99, 2, b"future")]
    assert mf.unknown_fields["manifest.fragments[0]"] == [(11, 2, b"overlay")]
    assert reencode(mf) == store.get("m")  # preserved on re-encode


def test_known_manifest_has_no_unknown_fields(pylance_scenarios):
    store, keys = _all_manifest_keys(pylance_scenarios["stable_row_ids"])
    for key in keys:
        assert read_manifest_file(store, key).unknown_fields == {}


def test_missing_manifest_is_not_found(tmp_path):
    from reference_impl.errors import NotFound

    with pytest.raises(NotFound):
        read_manifest_file(open_store(str(tmp_path)), "_versions/1.manifest")


def test_oversized_manifest_refused_before_reading():
    store = CountingStore()
    store.put("m", encode_manifest_file(_sample_manifest(10)))
    with pytest.raises(FormatError) as e:
        read_manifest_file(store, "m", max_size=100)
    assert e.value.rule == "MANIFEST-002" and store.ranged == 0
