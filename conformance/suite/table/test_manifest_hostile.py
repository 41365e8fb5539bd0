"""Hostile manifest files: every damage is a typed FormatError (rule, path, offset) read
with bounded memory, never a crash, a bare exception or a hang (spec 001 "Manifest";
FACTS §A framing; CONTRIBUTING "Bytes from disk are untrusted")."""

from __future__ import annotations

import os
import struct
import tracemalloc

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reference_impl import open_dataset
from reference_impl.errors import FormatError, PathEscape, UnsupportedFeature
from reference_impl.io.memory import MemoryStore
from reference_impl.io.uri import open_store
from reference_impl.table import flags, versions
from reference_impl.table.manifest import encode_manifest_file, read_manifest_file

KEY = "_versions/18446744073709551614.manifest"


@pytest.fixture(scope="module")
def real_manifests(pylance_scenarios):
    """Bytes of a few real pylance manifests: plain, with deletions and an index, stable row
    ids, a branch (base paths)."""
    out = []
    for name in ("scalar_index", "stable_row_ids", "branches", "delete_few"):
        path = pylance_scenarios[name]
        info = pylance_scenarios.info(name)
        roots = [path] + [t["path"] for t in info["branch_versions"].values()]
        for root in roots:
            store = open_store(root)
            entries = versions.list_versions(store)
            out.append(store.get(entries[-1].key))
    return out


def _read(data: bytes):
    store = MemoryStore("hostile")
    store.put(KEY, data)
    return read_manifest_file(store, KEY)


def _fail(data: bytes, rule: str):
    with pytest.raises(FormatError) as e:
        _read(data)
    assert e.value.rule == rule, e.value
    assert e.value.path == KEY and e.value.offset is not None
    return e.value


def test_every_truncation_is_a_format_error(real_manifests):
    data = real_manifests[0]
    for n in range(len(data)):
        with pytest.raises(FormatError) as e:
            _read(data[:n])
        assert e.value.rule in ("MANIFEST-001", "MANIFEST-002", "MANIFEST-003") and e.value.path == KEY


def test_bad_magic(real_manifests):
    data = real_manifests[0]
    err = _fail(data[:-4] + b"LANX", "MANIFEST-001")
    assert err.offset == len(data) - 4
    _fail(b"LANC", "MANIFEST-001")
    _fail(b"", "MANIFEST-001")


@pytest.mark.parametrize("delta", [1, -1, 1000, "zero", "max"])
def test_wrong_manifest_length_prefix(real_manifests, delta):
    data = bytearray(real_manifests[0])
    pos = struct.unpack("<Q", data[-16:-8])[0]
    (length,) = struct.unpack("<I", data[pos:pos + 4])
    new = {"zero": 0, "max": 0xFFFFFFFF}.get(delta, None)
    new = length + delta if new is None else new
    data[pos:pos + 4] = struct.pack("<I", new)
    err = _fail(bytes(data), "MANIFEST-002")
    assert err.offset == pos


@pytest.mark.parametrize("position", [2**40, 2**64 - 1, "size", "size-17"])
def test_manifest_position_out_of_bounds(real_manifests, position):
    data = bytearray(real_manifests[0])
    size = len(data)
    p = {"size": size, "size-17": size - 17}.get(position, position)
    data[-16:-8] = struct.pack("<Q", p)
    err = _fail(bytes(data), "MANIFEST-002")
    assert err.offset == size - 16 or err.offset == p


def test_garbage_manifest_protobuf():
    body = b"\xff" * 20
    data = struct.pack("<I", len(body)) + body + struct.pack("<QHH", 0, 0, 2) + b"LANC"
    err = _fail(data, "MANIFEST-003")
    assert err.offset == 4


def _with_offsets(index_offset=None, txn_offset=None, prefix=b""):
    from reference_impl.proto import table_pb2

    m = table_pb2.Manifest(version=1)
    if index_offset is not None:
        m.index_section = index_offset
    if txn_offset is not None:
        m.transaction_section = txn_offset
    body = m.SerializeToString()
    return prefix + struct.pack("<I", len(body)) + body + struct.pack("<QHH", len(prefix), 0, 2) + b"LANC"


@pytest.mark.parametrize("offset", [2**40, 2**64 - 1, 3])
def test_index_section_out_of_bounds(offset):
    _fail(_with_offsets(index_offset=offset, prefix=b"\x00\x00\x00\x00\x00"), "MANIFEST-004")


def test_index_section_length_claims_terabytes_bounded_memory():
    prefix = struct.pack("<I", 0xFFFFFFFF) + b"\x00" * 8
    tracemalloc.start()
    try:
        _fail(_with_offsets(index_offset=0, prefix=prefix), "MANIFEST-004")
        _fail(_with_offsets(txn_offset=0, prefix=prefix), "MANIFEST-005")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4 << 20


def test_garbage_sections():
    prefix = struct.pack("<I", 3) + b"\xff\xff\xff"
    _fail(_with_offsets(index_offset=0, prefix=prefix), "MANIFEST-004")
    _fail(_with_offsets(txn_offset=0, prefix=prefix), "MANIFEST-005")
    _fail(_with_offsets(txn_offset=2**50, prefix=prefix), "MANIFEST-005")


def test_huge_file_refused_without_reading():
    store = MemoryStore("hostile-big")
    store.put(KEY, b"\x00" * 4096)
    with pytest.raises(FormatError) as e:
        read_manifest_file(store, KEY, max_size=1024)
    assert e.value.rule == "MANIFEST-002"


def _copy_with(pylance, tmp_path, edit):
    import pyarrow as pa

    uri = str(tmp_path / "ds")
    pylance.write_dataset(pa.table({"a": [1, 2]}), uri)
    store = open_store(uri)
    e = versions.latest_entry(store)
    mf = read_manifest_file(store, e.key)
    edit(mf.manifest)
    store.put(e.key, encode_manifest_file(mf.manifest, transaction=mf.transaction_bytes))
    return uri


@pytest.mark.parametrize("path", ["../../etc/passwd", "a/../../x.lance", "/abs.lance"])
def test_traversal_in_data_file_path(pylance, tmp_path, path):
    def edit(m):
        m.fragments[0].files[0].path = path

    uri = _copy_with(pylance, tmp_path, edit)
    ds = open_dataset(uri)  # metadata alone is readable
    with pytest.raises(PathEscape) as e:
        ds.data_file_location(ds.get_fragments()[0].data_files()[0])
    assert e.value.path == path and e.value.rule


def test_traversal_in_base_path(pylance, tmp_path):
    def edit(m):
        m.base_paths.add(id=5, is_dataset_root=True, path=str(tmp_path / ".." / "elsewhere"))
        m.fragments[0].files[0].base_id = 5

    uri = _copy_with(pylance, tmp_path, edit)
    ds = open_dataset(uri)
    with pytest.raises(PathEscape):
        ds.data_file_location(ds.get_fragments()[0].data_files()[0])


def test_truncated_manifest_on_disk_fails_open(pylance, tmp_path):
    import pyarrow as pa

    uri = str(tmp_path / "ds")
    pylance.write_dataset(pa.table({"a": [1]}), uri)
    e = versions.latest_entry(open_store(uri))
    path = os.path.join(uri, e.key)
    data = open(path, "rb").read()
    with open(path, "wb") as fh:
        fh.write(data[: len(data) // 2])
    with pytest.raises(FormatError) as err:
        open_dataset(uri)
    assert err.value.path == e.key


# -- property: random corruption of real manifests ------------------------------------------

@st.composite
def corruptions(draw, originals):
    data = bytearray(draw(st.sampled_from(originals)))
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["flip", "truncate", "insert", "delete", "overwrite_u32"]))
        n = len(data)
        if n == 0:
            break
        if kind == "flip":
            i = draw(st.integers(0, n - 1))
            data[i] ^= 1 << draw(st.integers(0, 7))
        elif kind == "truncate":
            del data[draw(st.integers(0, n - 1)):]
        elif kind == "insert":
            i = draw(st.integers(0, n))
            data[i:i] = draw(st.binary(min_size=1, max_size=16))
        elif kind == "delete":
            i = draw(st.integers(0, n - 1))
            del data[i: i + draw(st.integers(1, 16))]
        else:
            i = draw(st.integers(0, max(n - 4, 0)))
            data[i:i + 4] = struct.pack("<I", draw(st.sampled_from([0, 1, 0x7FFFFFFF, 0xFFFFFFFF])))
    return bytes(data)


def _use(data: bytes) -> None:
    """Read and use a manifest the way open_dataset does; only typed errors may escape."""
    try:
        mf = _read(data)
        flags.check_reader_flags(mf.manifest, path=KEY)
        from reference_impl.table import basepath

        store = MemoryStore("hostile-use")
        for frag in mf.manifest.fragments:
            for df in frag.files:
                basepath.resolve(store, mf.manifest, "data", df.path, basepath.optional_base_id(df))
    except (FormatError, UnsupportedFeature):
        pass


def _property(real_manifests, data):
    _use(data.draw(corruptions(real_manifests)))


@given(data=st.data())
@settings(max_examples=150, deadline=None)
def test_random_corruptions_only_raise_format_errors(real_manifests, data):
    _property(real_manifests, data)


# The long run: 5000 examples under ``HYPOTHESIS_PROFILE=slow`` (tox -e slow); a plain
# ``pytest`` run (CI runs the slow-marked tests too) uses the loaded profile's count.
SLOW_EXAMPLES = 5000 if os.environ.get("HYPOTHESIS_PROFILE") == "slow" else None


@pytest.mark.slow
@given(data=st.data())
@settings(deadline=None, **({"max_examples": SLOW_EXAMPLES} if SLOW_EXAMPLES else {}))
def test_random_corruptions_only_raise_format_errors_slow(real_manifests, data):
    _property(real_manifests, data)
