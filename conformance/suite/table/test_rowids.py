"""Move-stable row ids (spec 001 "Feature: Move-Stable Row IDs", "Row ID sequences"):
every U64Segment kind, version sequences, bounds, pylance's sequences against its
``_rowid`` / ``_row_created_at_version`` / ``_row_last_updated_at_version`` columns, and the
ROWID rules."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conformance.suite.scenarios import (
    SCENARIOS,
    check,
    copy_scenario,
    corrupt_manifest,
    scenario_info,
    version_context,
)
from reference_impl.errors import FormatError
from reference_impl.io.local import LocalStore
from reference_impl.io.memory import MemoryStore
from reference_impl.proto import rowids_pb2, table_pb2
from reference_impl.table import deletion as D
from reference_impl.table import rowids as R

ROWID_RULES = [f"ROWID-{i:03d}" for i in range(1, 11)]
U64 = (1 << 64) - 1


# --------------------------------------------------------------------------- strategies

@st.composite
def encoded_arrays(draw, min_size=0, max_size=50, sorted_=False):
    kind = draw(st.sampled_from(["u16", "u32", "u64"]))
    width = {"u16": 16, "u32": 32, "u64": 64}[kind]
    base = draw(st.integers(0, U64 - (1 << width) + 1 if width < 64 else 0))
    offsets = draw(st.lists(st.integers(0, (1 << width) - 1), min_size=min_size, max_size=max_size))
    if sorted_:
        offsets = sorted(offsets)
    arr = rowids_pb2.EncodedU64Array()
    if kind == "u16":
        arr.u16_array.base = base
        arr.u16_array.offsets = np.array(offsets, "<u2").tobytes()
    elif kind == "u32":
        arr.u32_array.base = base
        arr.u32_array.offsets = np.array(offsets, "<u4").tobytes()
    else:
        arr.u64_array.values = np.array(offsets, "<u8").tobytes()
        base = 0
    return arr, [base + o for o in offsets]


@st.composite
def segments(draw):
    """(U64Segment, expected values) for every segment kind."""
    kind = draw(st.sampled_from(["range", "range_with_holes", "range_with_bitmap",
                                 "sorted_array", "array"]))
    seg = rowids_pb2.U64Segment()
    if kind in ("range", "range_with_holes", "range_with_bitmap"):
        start = draw(st.integers(0, U64 - 500))
        n = draw(st.integers(0, 300))
        values = list(range(start, start + n))
        if kind == "range":
            seg.range.start, seg.range.end = start, start + n
            return seg, values
        if kind == "range_with_holes":
            holes = sorted(draw(st.sets(st.sampled_from(values), max_size=n))) if n else []
            seg.range_with_holes.start, seg.range_with_holes.end = start, start + n
            seg.range_with_holes.holes.CopyFrom(R.encode_array(np.array(holes, np.uint64)))
            return seg, [v for v in values if v not in set(holes)]
        bits = draw(st.lists(st.booleans(), min_size=n, max_size=n))
        packed = np.packbits(np.array(bits, np.uint8), bitorder="little").tobytes() if n else b""
        seg.range_with_bitmap.start, seg.range_with_bitmap.end = start, start + n
        seg.range_with_bitmap.bitmap = packed
        return seg, [v for v, b in zip(values, bits, strict=True) if b]
    arr, values = draw(encoded_arrays(sorted_=kind == "sorted_array"))
    getattr(seg, kind).CopyFrom(arr)
    return seg, values


def _serialize(segs) -> bytes:
    seq = rowids_pb2.RowIdSequence()
    seq.segments.extend(segs)
    return seq.SerializeToString()


# --------------------------------------------------------------------------- decode / encode

@given(st.lists(segments(), max_size=6))
def test_decode_every_segment_kind(parts):
    data = _serialize([s for s, _ in parts])
    expected = [v for _, vals in parts for v in vals]
    out = R.decode_row_id_sequence(data)
    assert out.dtype == np.uint64
    assert out.tolist() == expected
    assert R.row_id_sequence_len(data) == len(expected)


@given(st.one_of(
    st.lists(st.integers(0, U64), max_size=200),                                   # any order
    st.lists(st.integers(0, 5000), max_size=400, unique=True).map(sorted),          # sparse sorted
    st.tuples(st.integers(0, U64 - 10_000), st.integers(0, 3000), st.sets(st.integers(0, 2999), max_size=40))
    .map(lambda t: [t[0] + i for i in range(t[1]) if i not in t[2]]),              # range with holes
))
def test_encode_roundtrip(ids):
    data = R.encode_row_id_sequence(np.array(ids, dtype=np.uint64))
    assert R.decode_row_id_sequence(data).tolist() == ids


def test_encoder_picks_compact_segments():
    kinds = lambda data: [s.WhichOneof("segment") for s in R.parse_row_id_sequence(data).segments]  # noqa: E731
    assert kinds(R.encode_row_id_sequence(np.arange(1000, 2000))) == ["range"]
    holes = np.setdiff1d(np.arange(5000), [7, 900])
    assert kinds(R.encode_row_id_sequence(holes)) == ["range_with_holes"]
    half = np.arange(0, 4000, 2)
    assert kinds(R.encode_row_id_sequence(half)) == ["range_with_bitmap"]
    sparse = np.array([1, 100_000, 10**9, 10**12], np.uint64)
    assert kinds(R.encode_row_id_sequence(sparse)) == ["sorted_array"]
    shuffled = np.array([9, 3, 7, 1], np.uint64)
    assert kinds(R.encode_row_id_sequence(shuffled)) == ["array"]
    assert len(R.encode_row_id_sequence(np.arange(10**6))) < 16


@given(st.lists(st.integers(0, 50), max_size=300))
def test_version_sequence_roundtrip(versions):
    data = R.encode_version_sequence(versions)
    assert R.decode_version_sequence(data).tolist() == versions
    runs = R.parse_version_sequence(data).runs
    assert len(runs) == (0 if not versions else 1 + sum(a != b for a, b in zip(versions, versions[1:], strict=False)))


def test_version_runs_count_span_length_only():
    """pylance copies the row-id segment shape into the spans after compaction."""
    seq = rowids_pb2.RowDatasetVersionSequence()
    run = seq.runs.add()
    run.span.range_with_bitmap.start, run.span.range_with_bitmap.end = 0, 10
    run.span.range_with_bitmap.bitmap = bytes([0b1011, 0])
    run.version = 3
    run = seq.runs.add()
    run.span.range.start, run.span.range.end = 50, 52
    run.version = 4
    assert R.decode_version_sequence(seq.SerializeToString()).tolist() == [3, 3, 3, 4, 4]


@pytest.mark.slow
@settings(max_examples=300)
@given(st.lists(segments(), max_size=12))
def test_decode_every_segment_kind_soak(parts):
    data = _serialize([s for s, _ in parts])
    assert R.decode_row_id_sequence(data).tolist() == [v for _, vals in parts for v in vals]
    ids = R.decode_row_id_sequence(data)
    assert R.decode_row_id_sequence(R.encode_row_id_sequence(ids)).tolist() == ids.tolist()


@pytest.mark.slow
def test_large_sequences_are_vectorised():
    """Ten million ids with holes and a shuffled tail decode and encode in numpy."""
    rng = np.random.default_rng(1)
    keep = np.ones(10_000_000, dtype=bool)
    keep[rng.integers(0, 10_000_000, 50_000)] = False
    ids = np.flatnonzero(keep).astype(np.uint64)
    ids = np.concatenate([ids, rng.permutation(np.arange(20_000_000, 20_001_000, dtype=np.uint64))])
    data = R.encode_row_id_sequence(ids)
    assert len(data) < 250_000  # ~50k holes as u32 offsets
    assert np.array_equal(R.decode_row_id_sequence(data, physical_rows=ids.size), ids)
    versions = np.repeat(np.arange(1, 101, dtype=np.uint64), ids.size // 100 + 1)[: ids.size]
    assert np.array_equal(R.decode_version_sequence(R.encode_version_sequence(versions)), versions)


# --------------------------------------------------------------------------- bounds

def _range(start, end) -> bytes:
    seg = rowids_pb2.U64Segment()
    seg.range.start, seg.range.end = start, end
    return _serialize([seg])


def test_huge_range_refused_without_allocating():
    data = _range(0, 1 << 63)
    with pytest.raises(FormatError) as err:
        R.decode_row_id_sequence(data, physical_rows=100, path="frag 0")
    assert err.value.rule == "ROWID-002" and err.value.path == "frag 0"
    with pytest.raises(FormatError) as err:
        R.decode_row_id_sequence(data)  # default cap
    assert err.value.rule == "ROWID-002"
    seq = rowids_pb2.RowDatasetVersionSequence()
    run = seq.runs.add()
    run.span.range.end = 1 << 62
    run.version = 1
    with pytest.raises(FormatError) as err:
        R.decode_version_sequence(seq.SerializeToString(), physical_rows=10)
    assert err.value.rule == "ROWID-002"


@pytest.mark.parametrize("make", [
    lambda: b"\xff\xff\xff",                                   # not a protobuf
    lambda: _range(10, 5),                                    # end below start
    lambda: _serialize([rowids_pb2.U64Segment()]),            # no kind set
])
def test_malformed(make):
    with pytest.raises(FormatError) as err:
        R.decode_row_id_sequence(make())
    assert err.value.rule == "ROWID-001"


def test_malformed_segments():
    seg = rowids_pb2.U64Segment()
    seg.range_with_bitmap.start, seg.range_with_bitmap.end = 0, 100
    seg.range_with_bitmap.bitmap = b"\xff"  # needs 13 bytes
    with pytest.raises(FormatError, match="bitmap"):
        R.decode_row_id_sequence(_serialize([seg]))
    seg = rowids_pb2.U64Segment()
    seg.range_with_holes.start, seg.range_with_holes.end = 10, 20
    seg.range_with_holes.holes.CopyFrom(R.encode_array(np.array([25], np.uint64)))
    with pytest.raises(FormatError, match="outside"):
        R.decode_row_id_sequence(_serialize([seg]))
    seg = rowids_pb2.U64Segment()
    seg.sorted_array.CopyFrom(R.encode_array(np.array([5, 3], np.uint64)))
    with pytest.raises(FormatError, match="sorted"):
        R.decode_row_id_sequence(_serialize([seg]))
    seg = rowids_pb2.U64Segment()
    seg.array.u32_array.offsets = b"\x00\x01\x02"
    with pytest.raises(FormatError, match="multiple"):
        R.decode_row_id_sequence(_serialize([seg]))
    seg = rowids_pb2.U64Segment()
    seg.array.u16_array.base = U64
    seg.array.u16_array.offsets = b"\x05\x00"
    with pytest.raises(FormatError, match="overflow"):
        R.decode_row_id_sequence(_serialize([seg]))


def test_external_sequences():
    store = MemoryStore("rowid-external")
    payload = R.encode_row_id_sequence(np.arange(20, 30))
    store.put("_rowids/seq.bin", b"HEAD" + payload + b"TAIL")
    frag = table_pb2.DataFragment(id=1, physical_rows=10)
    frag.external_row_ids.path = "_rowids/seq.bin"
    frag.external_row_ids.offset = 4
    frag.external_row_ids.size = len(payload)
    assert R.fragment_row_ids(store, frag).tolist() == list(range(20, 30))
    frag.external_row_ids.size = 10_000
    with pytest.raises(FormatError) as err:
        R.fragment_row_ids(store, frag)
    assert err.value.rule == "ROWID-009"
    frag.external_row_ids.path = "../escape"
    with pytest.raises(FormatError):
        R.fragment_row_ids(store, frag)


# --------------------------------------------------------------------------- pylance

def test_sequences_match_pylance_columns(pylance, pylance_scenarios):
    """Decode every version of the stable_row_ids scenario (append, delete, update,
    compaction) and compare with pylance's _rowid and row version columns."""
    path = pylance_scenarios["stable_row_ids"]
    store = LocalStore(path)
    kinds = set()
    for v in scenario_info(path)["versions"]:
        ctx = version_context(path, v)
        assert ctx.manifest.reader_feature_flags & 2
        ids, created, updated = [], [], []
        for frag in ctx.manifest.fragments:
            kinds.update(s.WhichOneof("segment") for s in R.parse_row_id_sequence(frag.inline_row_ids).segments)
            live = np.ones(frag.physical_rows, bool)
            if frag.HasField("deletion_file"):
                dele = D.read_deletion_file(store, D.deletion_file_key(frag.id, frag.deletion_file),
                                            frag.deletion_file.file_type)
                live[dele.astype(np.int64)] = False
            ids.append(R.fragment_row_ids(store, frag)[live])
            created.append(R.fragment_versions(store, frag, "created")[live])
            updated.append(R.fragment_versions(store, frag, "last_updated")[live])
        table = pylance.dataset(path, version=v).to_table(
            columns=["_row_created_at_version", "_row_last_updated_at_version"], with_row_id=True)
        assert np.concatenate(ids).tolist() == table.column("_rowid").to_pylist()
        assert np.concatenate(created).tolist() == table.column("_row_created_at_version").to_pylist()
        assert np.concatenate(updated).tolist() == table.column("_row_last_updated_at_version").to_pylist()
        assert max(np.concatenate(ids).tolist()) < ctx.manifest.next_row_id
    # the scenario exercises several segment kinds written by pylance
    assert {"range", "sorted_array", "range_with_bitmap", "range_with_holes"} <= kinds


def test_pylance_reads_our_sequences(pylance, pylance_scenarios, tmp_path):
    """Re-encode pylance's sequences with our encoder; pylance must read the same ids."""
    path = copy_scenario(pylance_scenarios, "stable_row_ids", tmp_path / "ds")
    before = pylance.dataset(path).to_table(columns=["id"], with_row_id=True)

    def mutate(m):
        for frag in m.fragments:
            ids = R.decode_row_id_sequence(frag.inline_row_ids)
            frag.inline_row_ids = R.encode_row_id_sequence(ids)
            for field in ("inline_created_at_versions", "inline_last_updated_at_versions"):
                setattr(frag, field, R.encode_version_sequence(R.decode_version_sequence(getattr(frag, field))))

    corrupt_manifest(path, mutate)
    after = pylance.dataset(path).to_table(columns=["id"], with_row_id=True)
    assert after.equals(before)


# --------------------------------------------------------------------------- rules

@pytest.mark.parametrize("name", SCENARIOS)
def test_rules_pass_on_pylance(pylance_scenarios, name):
    path = pylance_scenarios[name]
    info = scenario_info(path)
    tracks = [(path, v) for v in info["versions"]]
    for track in info["branch_versions"].values():
        tracks += [(track["path"], v) for v in track["versions"]]
    if info.get("clone"):
        tracks += [(info["clone"]["path"], v) for v in info["clone"]["versions"]]
    for ds_path, v in tracks:
        ctx = version_context(ds_path, v)
        for rid in ROWID_RULES:
            assert check(rid, ctx) == [], (ds_path, v, rid)


@pytest.fixture
def stable(pylance_scenarios, tmp_path):
    return copy_scenario(pylance_scenarios, "stable_row_ids", tmp_path / "ds")


V = 4  # version 4 of stable_row_ids: 4 fragments, a deletion, an update


def _after(path, mutate, rid):
    corrupt_manifest(path, mutate, version=V)
    return check(rid, version_context(path, V))


def test_001_garbage(stable):
    found = _after(stable, lambda m: setattr(m.fragments[1], "inline_row_ids", b"\xff\xff\xff"), "ROWID-001")
    assert len(found) == 1 and found[0].location["fragment_id"] == 1


def test_002_length(stable):
    found = _after(stable, lambda m: setattr(m.fragments[0], "inline_row_ids", _range(0, 49)), "ROWID-002")
    assert len(found) == 1 and "49" in found[0].message
    found = _after(stable, lambda m: setattr(m.fragments[0], "inline_row_ids", _range(0, 1 << 63)), "ROWID-002")
    assert len(found) == 1


def test_003_duplicates(stable):
    found = _after(stable, lambda m: setattr(m.fragments[1], "inline_row_ids", _range(100, 150)), "ROWID-003")
    assert len(found) == 1 and found[0].location["row_id"] == 100


def test_003_deleted_rows_may_repeat(stable):
    """Row 30 is deleted in fragment 0 and lives on in fragment 3 after the update."""
    ctx = version_context(stable, V)
    assert ctx.manifest.fragments[0].HasField("deletion_file")
    assert check("ROWID-003", ctx) == []


def test_004_next_row_id(stable):
    found = _after(stable, lambda m: setattr(m, "next_row_id", 100), "ROWID-004")
    assert [f.location["fragment_id"] for f in found] == [2, 3]  # ids 100..159 and 120


def test_005_version_sequence_length(stable):
    found = _after(stable, lambda m: setattr(m.fragments[2], "inline_created_at_versions",
                                             R.encode_version_sequence([2] * 59)), "ROWID-005")
    assert len(found) == 1 and "59" in found[0].message


def test_006_future_version(stable):
    found = _after(stable, lambda m: setattr(m.fragments[2], "inline_last_updated_at_versions",
                                             R.encode_version_sequence([2] * 59 + [99])), "ROWID-006")
    assert len(found) == 1 and "99" in found[0].message


def test_007_updated_before_created(stable):
    found = _after(stable, lambda m: setattr(m.fragments[2], "inline_created_at_versions",
                                             R.encode_version_sequence([3] * 60)), "ROWID-007")
    assert len(found) == 1


def test_008_flag(stable, pylance_scenarios, tmp_path):
    found = _after(stable, lambda m: m.fragments[2].ClearField("inline_row_ids"), "ROWID-008")
    assert [f.location["fragment_id"] for f in found] == [2]

    def clear(m):  # a sequence without the flag is FLAGS-004's finding, not this rule's
        m.reader_feature_flags &= ~2
        m.writer_feature_flags &= ~2
    assert _after(stable, clear, "ROWID-008") == []
    plain = copy_scenario(pylance_scenarios, "append", tmp_path / "plain")
    corrupt_manifest(plain, lambda m: setattr(m, "reader_feature_flags", 2))
    assert len(check("ROWID-008", version_context(plain))) == len(version_context(plain).manifest.fragments)


def test_009_external(stable):
    ids = R.decode_row_id_sequence(version_context(stable, V).manifest.fragments[0].inline_row_ids)
    payload = R.encode_row_id_sequence(ids)
    LocalStore(stable).put("_rowids/f0.bin", payload)

    def good(m):
        m.fragments[0].external_row_ids.path = "_rowids/f0.bin"
        m.fragments[0].external_row_ids.size = len(payload)
    assert _after(stable, good, "ROWID-009") == []
    assert check("ROWID-002", version_context(stable, V)) == []

    def bad(m):
        m.fragments[0].external_row_ids.offset = 3
    found = _after(stable, bad, "ROWID-009")
    assert len(found) == 1 and found[0].location["path"] == "_rowids/f0.bin"

    def missing(m):
        m.fragments[0].external_row_ids.path = "_rowids/none.bin"
    assert len(_after(stable, missing, "ROWID-009")) == 1


def test_010_versions_without_ids(pylance_scenarios, tmp_path):
    plain = copy_scenario(pylance_scenarios, "append", tmp_path / "plain")
    corrupt_manifest(plain, lambda m: setattr(m.fragments[0], "inline_created_at_versions",
                                              R.encode_version_sequence([1] * m.fragments[0].physical_rows)))
    assert len(check("ROWID-010", version_context(plain))) == 1


@given(st.lists(st.binary(max_size=64), min_size=3, max_size=3), st.integers(0, 3))
def test_rules_never_raise_on_garbage(pylance_scenarios, blobs, which):
    """Random bytes in any sequence field: every ROWID rule reports, none raises."""
    import dataclasses

    from conformance.rules.context import VersionContext

    base = version_context(pylance_scenarios["stable_row_ids"], V)
    m = table_pb2.Manifest()
    m.CopyFrom(base.manifest)
    frag = m.fragments[which % len(m.fragments)]
    frag.inline_row_ids, frag.inline_created_at_versions, frag.inline_last_updated_at_versions = blobs
    ctx = VersionContext(table=base.table, version=V, manifest_key=base.manifest_key,
                         mf=dataclasses.replace(base.mf, manifest=m))
    for rid in ROWID_RULES:
        for finding in check(rid, ctx):
            assert finding.message
