"""Deletion files (spec 001 "Dataset Update and Schema Evolution", spec 004 DeletionFile):
reading and writing both flavours, interop with pylance 14.0.2, and the DELETION rules."""

from __future__ import annotations

import io
import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pyroaring import BitMap

from conformance.suite.scenarios import (
    SCENARIOS,
    check,
    copy_scenario,
    corrupt_manifest,
    scenario_info,
    version_context,
)
from reference_impl.errors import FormatError, InvalidInput
from reference_impl.io.local import LocalStore
from reference_impl.io.memory import MemoryStore
from reference_impl.proto import table_pb2
from reference_impl.table import deletion as D

DELETION_RULES = [f"DELETION-{i:03d}" for i in range(1, 11)]


def _arrow_bytes(values, type_=None, batches=1, name="row_id", nullable=False) -> bytes:
    type_ = pa.uint32() if type_ is None else type_
    schema = pa.schema([pa.field(name, type_, nullable=nullable)])
    sink = io.BytesIO()
    with pa.ipc.new_file(sink, schema) as w:
        for chunk in np.array_split(np.asarray(values), batches):
            w.write_batch(pa.record_batch([pa.array(chunk.tolist(), type_)], schema=schema))
    return sink.getvalue()


# --------------------------------------------------------------------------- module

def test_key_and_names():
    pb = table_pb2.DeletionFile(file_type=D.BITMAP, read_version=3, id=42, num_deleted_rows=9)
    assert D.deletion_file_key(7, pb) == "_deletions/7-3-42.bin"
    pb.file_type = D.ARROW_ARRAY
    assert D.deletion_file_key(0, pb) == "_deletions/0-3-42.arrow"
    pb.file_type = 5
    with pytest.raises(FormatError) as err:
        D.deletion_file_key(0, pb)
    assert err.value.rule == "DELETION-002"


@pytest.mark.parametrize("file_type", [D.ARROW_ARRAY, D.BITMAP])
def test_roundtrip(file_type):
    offsets = np.array([9, 3, 3, 0, 4095, 70000], dtype=np.uint32)
    data = D.encode_deletion_file(offsets, file_type)
    out = D.decode_deletion_file(data, file_type, physical_rows=70001)
    assert out.dtype == np.uint32
    assert out.tolist() == [0, 3, 9, 4095, 70000]


def test_arrow_layout_matches_pylance():
    data = D.encode_deletion_file([5, 1], D.ARROW_ARRAY)
    assert data[:6] == b"ARROW1" and data[-6:] == b"ARROW1"
    info = D.inspect_arrow_deletion_file(data)
    assert (info.column_names, info.column_types, info.nullable, info.num_batches) == \
        (["row_id"], ["uint32"], [False], 1)


def test_write_threshold_and_store():
    store = MemoryStore("deletion-test")
    small = D.write_deletion_file(store, 3, 7, [1, 2, 3], id=11)
    assert (small.file_type, small.read_version, small.id, small.num_deleted_rows) == (D.ARROW_ARRAY, 7, 11, 3)
    assert store.exists("_deletions/3-7-11.arrow")
    big = D.write_deletion_file(store, 3, 8, np.arange(5001))
    assert big.file_type == D.BITMAP and big.num_deleted_rows == 5001
    key = D.deletion_file_key(3, big)
    assert D.read_deletion_file(store, key, D.BITMAP).size == 5001
    forced = D.write_deletion_file(store, 4, 8, [1], file_type=D.BITMAP, threshold=0)
    assert forced.file_type == D.BITMAP
    assert D.write_deletion_file(store, 4, 8, range(10), threshold=5).file_type == D.BITMAP
    with pytest.raises(InvalidInput):
        D.write_deletion_file(store, 4, 8, [])


def test_merge():
    assert D.merge_deletions([5, 1], np.array([1, 9], np.uint32)).tolist() == [1, 5, 9]
    assert D.merge_deletions(None, [3, 3]).tolist() == [3]


def test_int32_accepted_other_types_refused():
    assert D.decode_deletion_file(_arrow_bytes([4, 2], pa.int32()), D.ARROW_ARRAY).tolist() == [2, 4]
    for t in (pa.int64(), pa.float32(), pa.uint16()):
        with pytest.raises(FormatError) as err:
            D.decode_deletion_file(_arrow_bytes([1], t), D.ARROW_ARRAY)
        assert err.value.rule == "DELETION-007"
    with pytest.raises(FormatError) as err:
        D.decode_deletion_file(_arrow_bytes([-1, 2], pa.int32()), D.ARROW_ARRAY)
    assert err.value.rule == "DELETION-007"
    with pytest.raises(FormatError) as err:
        D.decode_deletion_file(_arrow_bytes([None, 2], pa.uint32(), nullable=True), D.ARROW_ARRAY)
    assert err.value.rule == "DELETION-007"


@pytest.mark.parametrize("file_type", [D.ARROW_ARRAY, D.BITMAP])
@pytest.mark.parametrize("data", [b"", b"ARROW1", b"ARROW1" + b"\x00" * 40 + b"ARROW1",
                                  b"\x3a\x30\x00\x00\xff\xff\xff\xff",
                                  np.random.default_rng(7).bytes(300)],
                         ids=["empty", "magic-only", "magic-zeros", "roaring-cookie", "random"])
def test_garbage_is_format_error(file_type, data):
    with pytest.raises(FormatError) as err:
        D.decode_deletion_file(data, file_type, path="_deletions/x")
    assert err.value.rule == "DELETION-003"
    assert err.value.path == "_deletions/x"


def test_bounds():
    bitmap = BitMap(range(0, 1 << 20)).serialize()  # one run: tiny bytes, a million offsets
    with pytest.raises(FormatError) as err:
        D.decode_deletion_file(bitmap, D.BITMAP, physical_rows=100)
    assert err.value.rule == "DELETION-004"
    with pytest.raises(FormatError) as err:
        D.decode_deletion_file(D.encode_deletion_file([5, 100], D.ARROW_ARRAY), D.ARROW_ARRAY,
                               physical_rows=100)
    assert err.value.rule == "DELETION-004"
    store = MemoryStore("deletion-bounds")
    store.put("_deletions/big.bin", b"\x00" * 2048)
    with pytest.raises(FormatError) as err:
        D.read_deletion_file(store, "_deletions/big.bin", D.BITMAP, max_size=1024)
    assert err.value.rule == "DELETION-003"
    with pytest.raises(FormatError) as err:
        D.read_deletion_file(store, "_deletions/none.bin", D.BITMAP)
    assert err.value.rule == "DELETION-001"


def test_compressed_size_claims_checked_before_decoding():
    """A ZSTD buffer whose uncompressed-length prefix claims a terabyte is refused from
    the IPC metadata alone; a batch claiming more rows than allowed likewise."""
    data = D.encode_deletion_file(np.arange(10), D.ARROW_ARRAY)
    prefix = (40).to_bytes(8, "little")  # 10 uint32 values = 40 bytes uncompressed
    hits = [i for i in range(8, len(data)) if data.startswith(prefix, i)]
    assert len(hits) == 1
    bomb = data[:hits[0]] + (1 << 40).to_bytes(8, "little") + data[hits[0] + 8:]
    with pytest.raises(FormatError) as err:
        D.decode_deletion_file(bomb, D.ARROW_ARRAY, path="_deletions/bomb.arrow")
    assert err.value.rule == "DELETION-003" and err.value.offset == hits[0]
    with pytest.raises(FormatError) as err:
        D.decode_deletion_file(data, D.ARROW_ARRAY, max_rows=5)
    assert err.value.rule == "DELETION-004"
    truncated_footer = data[:-10] + (10**6).to_bytes(4, "little", signed=True) + b"ARROW1"
    with pytest.raises(FormatError) as err:
        D.decode_deletion_file(truncated_footer, D.ARROW_ARRAY)
    assert err.value.rule == "DELETION-003"


def test_an_uncompressed_length_other_than_minus_one_is_refused(tmp_path, pylance):
    """In a body-compressed Arrow IPC file a buffer starts with its uncompressed length, and
    -1 marks a buffer stored as is. pylance writes a one-row deletion file that way; with
    that -1 turned into another negative number pylance refuses the table ("Invalid
    uncompressed length"), so the kit refuses it too (pyarrow alone reads it as -1)."""
    root = tmp_path / "t"
    pylance.write_dataset(pa.table({"id": pa.array(range(10), pa.int64())}), str(root))
    pylance.dataset(str(root)).delete("id = 3")
    (path,) = (root / "_deletions").glob("*.arrow")
    data = path.read_bytes()
    at = data.index(b"\xff" * 8, 8)
    assert D.decode_deletion_file(data, D.ARROW_ARRAY).tolist() == [3]
    damaged = data[:at] + b"\xfe" + data[at + 1:]
    with pytest.raises(FormatError) as err:
        D.decode_deletion_file(damaged, D.ARROW_ARRAY, path="_deletions/x.arrow")
    assert err.value.rule == "DELETION-003" and err.value.offset == at
    path.write_bytes(damaged)
    with pytest.raises(Exception, match="uncompressed length"):
        pylance.dataset(str(root)).to_table()


_VALID = {t: D.encode_deletion_file(np.arange(0, 300, 7), t) for t in (D.ARROW_ARRAY, D.BITMAP)}


@given(st.sampled_from([D.ARROW_ARRAY, D.BITMAP]),
       st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), min_size=1, max_size=8))
def test_flipped_bytes_never_escape(file_type, edits):
    """Corrupt a valid file at random places: a result or a FormatError, nothing else."""
    data = bytearray(_VALID[file_type])
    for pos, value in edits:
        data[pos % len(data)] = value
    try:
        out = D.decode_deletion_file(bytes(data), file_type, physical_rows=1000)
    except FormatError as exc:
        assert exc.rule and exc.rule.startswith("DELETION-")
    else:
        assert out.dtype == np.uint32 and (out.size == 0 or int(out[-1]) < 1000)


# --------------------------------------------------------------------------- pylance interop

def _deleted_by_pylance(lance, path, version, fragment_id, physical_rows):
    ds = lance.dataset(path, version=version)
    addrs = ds.to_table(columns=[], with_row_address=True).column("_rowaddr").to_numpy()
    offsets = addrs[(addrs >> 32) == fragment_id] & 0xFFFFFFFF
    return np.setdiff1d(np.arange(physical_rows), offsets).tolist()


@pytest.mark.parametrize("name", ["delete_few", "delete_many", "update", "stable_row_ids", "compaction"])
def test_read_pylance_deletion_files(pylance, pylance_scenarios, name):
    path = pylance_scenarios[name]
    store = LocalStore(path)
    info = scenario_info(path)
    seen = 0
    for v in info["versions"]:
        ctx = version_context(path, v)
        for frag in ctx.manifest.fragments:
            if not frag.HasField("deletion_file"):
                continue
            key = D.deletion_file_key(frag.id, frag.deletion_file)
            ours = D.read_deletion_file(store, key, frag.deletion_file.file_type,
                                        physical_rows=frag.physical_rows)
            assert ours.size == frag.deletion_file.num_deleted_rows
            assert ours.tolist() == _deleted_by_pylance(pylance, path, v, frag.id, frag.physical_rows)
            seen += 1
    assert seen > 0
    if name == "delete_many":
        assert any(n.endswith(".bin") for n in os.listdir(Path(path, "_deletions")))


def test_pylance_reads_our_deletion_files(pylance, pylance_scenarios, tmp_path):
    """Replace fragment 0's deletion with one we write (each flavour) and let pylance read."""
    for file_type in (D.ARROW_ARRAY, D.BITMAP):
        path = copy_scenario(pylance_scenarios, "delete_few", tmp_path / f"t{file_type}")
        store = LocalStore(path)
        ctx = version_context(path)
        frag = ctx.manifest.fragments[0]
        offsets = [0, 7, 8, 99]
        pb = D.write_deletion_file(store, frag.id, ctx.version - 1, offsets, file_type=file_type)

        def mutate(m, pb=pb):
            m.fragments[0].deletion_file.CopyFrom(pb)

        corrupt_manifest(path, mutate)
        ds = pylance.dataset(path)
        expected = sum(f.physical_rows for f in ctx.manifest.fragments) - 4 - sum(
            f.deletion_file.num_deleted_rows for f in ctx.manifest.fragments[1:])
        assert ds.count_rows() == expected
        ids = ds.to_table(columns=["id"]).column("id").to_pylist()
        assert not {0, 7, 8, 99} & set(ids) and 1 in ids
        assert check("DELETION-005", version_context(path)) == []


# --------------------------------------------------------------------------- rules

def _tracks(path: str) -> list[tuple[str, int]]:
    info = scenario_info(path)
    out = [(path, v) for v in info["versions"]]
    for track in info["branch_versions"].values():
        out += [(track["path"], v) for v in track["versions"]]
    if info.get("clone"):
        out += [(info["clone"]["path"], v) for v in info["clone"]["versions"]]
    return out


@pytest.mark.parametrize("name", SCENARIOS)
def test_rules_pass_on_pylance(pylance_scenarios, name):
    path = pylance_scenarios[name]
    for ds_path, v in _tracks(path):
        ctx = version_context(ds_path, v)
        for rid in DELETION_RULES:
            assert check(rid, ctx) == [], (ds_path, v, rid)


@pytest.fixture
def few(pylance_scenarios, tmp_path):
    return copy_scenario(pylance_scenarios, "delete_few", tmp_path / "ds")


def _first_deleted(m):
    return next(f for f in m.fragments if f.HasField("deletion_file"))


def _deletion_path(path):
    ctx = version_context(path)
    frag = _first_deleted(ctx.manifest)
    return Path(path, D.deletion_file_key(frag.id, frag.deletion_file)), frag


def _findings(path, rid):
    return check(rid, version_context(path))


def test_001_missing(few):
    corrupt_manifest(few, lambda m: setattr(_first_deleted(m).deletion_file, "id", 12345))
    found = _findings(few, "DELETION-001")
    assert len(found) == 1 and "12345" in found[0].location["path"]


def test_002_unknown_type(few):
    corrupt_manifest(few, lambda m: setattr(_first_deleted(m).deletion_file, "file_type", 7))
    assert len(_findings(few, "DELETION-002")) == 1
    assert _findings(few, "DELETION-001") == []  # no name to look up: not reported as missing


def test_003_garbage_content(few):
    p, _ = _deletion_path(few)
    p.write_bytes(b"not an arrow file at all")
    found = _findings(few, "DELETION-003")
    assert len(found) == 1 and found[0].location["fragment_id"] == 0


def test_003_wrong_flavour(few):
    """An .arrow name whose bytes are a Roaring bitmap."""
    p, _ = _deletion_path(few)
    p.write_bytes(BitMap([0, 1, 2, 5]).serialize())
    assert len(_findings(few, "DELETION-003")) == 1


def test_004_offset_beyond_rows(few):
    def mutate(m):
        frag = _first_deleted(m)
        frag.physical_rows = 3  # offsets 0,1,2,5 were deleted
    corrupt_manifest(few, mutate)
    found = _findings(few, "DELETION-004")
    assert len(found) == 1 and "5" in found[0].message


def test_005_count(few):
    corrupt_manifest(few, lambda m: setattr(_first_deleted(m).deletion_file, "num_deleted_rows", 99))
    found = _findings(few, "DELETION-005")
    assert len(found) == 1 and "99" in found[0].message


def test_006_read_version(few):
    p, frag = _deletion_path(few)
    version = version_context(few).version
    new = table_pb2.DeletionFile()
    new.CopyFrom(frag.deletion_file)
    new.read_version = version
    os.link(p, Path(few, D.deletion_file_key(frag.id, new)))
    corrupt_manifest(few, lambda m: setattr(_first_deleted(m).deletion_file, "read_version", version))
    assert len(_findings(few, "DELETION-006")) == 1
    assert _findings(few, "DELETION-001") == []


def test_007_column_type(few):
    p, _ = _deletion_path(few)
    p.write_bytes(_arrow_bytes([0, 1, 2, 5], pa.int64()))
    assert len(_findings(few, "DELETION-007")) == 1
    p.write_bytes(_arrow_bytes([0, 1, 2, 5], pa.int32(), name="offsets"))  # the spec's Int32
    assert _findings(few, "DELETION-007") == []
    assert _findings(few, "DELETION-005") == []


def test_008_one_batch(few):
    p, _ = _deletion_path(few)
    p.write_bytes(_arrow_bytes([0, 1, 2, 5], batches=2))
    assert len(_findings(few, "DELETION-008")) == 1
    assert _findings(few, "DELETION-005") == []


def test_009_empty_deletion(few):
    p, _ = _deletion_path(few)
    p.write_bytes(_arrow_bytes([]))
    corrupt_manifest(few, lambda m: setattr(_first_deleted(m).deletion_file, "num_deleted_rows", 0))
    found = _findings(few, "DELETION-009")
    assert len(found) == 1 and "deletes no row" in found[0].message


def test_009_unrecorded_count_is_not_an_empty_file(few):
    """Releases before 0.8 did not record num_deleted_rows: 0 there means 'not counted', and
    a deletion file that holds offsets is not empty."""
    corrupt_manifest(few, lambda m: setattr(_first_deleted(m).deletion_file, "num_deleted_rows", 0))
    assert _findings(few, "DELETION-009") == []


def test_010_duplicates(few):
    p, _ = _deletion_path(few)
    p.write_bytes(_arrow_bytes([0, 1, 1, 2, 5]))
    found = _findings(few, "DELETION-010")
    assert len(found) == 1 and "1 of them repeated" in found[0].message
    assert _findings(few, "DELETION-005") == []
