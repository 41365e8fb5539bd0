"""The MemWAL index (spec 004 "MemWAL Index Types"): the details pylance 14.0.2 writes on
``initialize_mem_wal`` and the shard manifests its writers leave under ``_mem_wal/``, the
inline region snapshot file, and the MEMWAL-* rules (positive and negative)."""

from __future__ import annotations

import shutil
import uuid as uuid_mod

import numpy as np
import pyarrow as pa
import pytest

from conformance.engine import validate
from conformance.fixtures.invalid import CORRUPTIONS
from conformance.fixtures.invalid_index import (
    REGION,
    inject,
    mem_wal_entry,
    region_manifest,
    valid_mem_wal,
    write_region_manifests,
)
from reference_impl.dataset import open_dataset
from reference_impl.errors import FormatError
from reference_impl.io.uri import open_store
from reference_impl.proto import table_pb2
from reference_impl.table import index as ix
from reference_impl.table import mem_wal as mw

SCHEMA = pa.schema([
    pa.field("id", pa.int64(), nullable=False,
             metadata={"lance-schema:unenforced-primary-key": "true"}),
    pa.field("val", pa.float32()),
])


def _rows(lo, hi):
    return pa.table({"id": np.arange(lo, hi, dtype=np.int64),
                     "val": np.arange(lo, hi, dtype=np.float32)}, schema=SCHEMA)


@pytest.fixture(scope="module")
def mem_wal_ds(tmp_path_factory, pylance):
    """A dataset with a BTree index, MemWAL initialised with 4 hash buckets, and one shard
    written twice (two writers one after the other)."""
    root = str(tmp_path_factory.mktemp("memwal") / "ds")
    ds = pylance.write_dataset(_rows(0, 20), root)
    ds.create_scalar_index("id", "BTREE")
    ds = pylance.dataset(root)
    ds.initialize_mem_wal(bucket_column="id", num_buckets=4)
    shard = str(uuid_mod.uuid4())
    for lo in (100, 200):
        with pylance.dataset(root).mem_wal_writer(shard) as w:
            w.put(_rows(lo, lo + 5))
    return root, shard


def _mem_wal_index(root):
    got = [i for i in ix.decode_index_section(open_dataset(root).manifest_file.index_section)
           if i.kind == "mem_wal"]
    assert len(got) == 1
    return got[0]


def test_pylance_mem_wal_details_decode(mem_wal_ds, pylance):
    root, _shard = mem_wal_ds
    i = _mem_wal_index(root)
    assert i.name == ix.MEM_WAL_INDEX_NAME and i.type_url == "/lance.table.MemWalIndexDetails"
    assert i.fields == () and i.fragment_ids.tolist() == [] and i.files == ()
    d = i.details.message
    theirs = pylance.dataset(root).mem_wal_index_details()
    assert d.num_regions == theirs["num_shards"] == 4
    assert d.maintain_all_indexes is theirs["maintain_all_indexes"] is True
    assert list(d.maintained_indexes) == theirs["maintained_indexes"] == []
    (spec,) = d.region_specs
    (their_spec,) = theirs["sharding_specs"]
    assert spec.spec_id == their_spec["spec_id"] == 1
    (f,) = spec.fields
    assert (f.field_id, list(f.source_ids), f.transform, f.result_type) == (
        "bucket", [0], "bucket", "int32")
    assert not f.HasField("expression") and dict(f.parameters) == {"num_buckets": "4"}
    assert not d.HasField("inline_snapshots")


def test_pylance_shard_manifests_decode(mem_wal_ds):
    root, shard = mem_wal_ds
    store = open_store(root)
    assert mw.list_regions(store) == [shard]
    items = mw.read_region_manifests(store, shard)
    versions = [v for v, _k, _rm in items]
    assert versions == list(range(1, len(versions) + 1)) and len(versions) >= 3
    assert mw.read_version_hint(store, shard) == versions[-1]
    for v, _key, rm in items:
        assert rm.version == v and mw.uuid_text(rm.region_id.uuid) == shard
    epochs = [rm.writer_epoch for _v, _k, rm in items]
    assert epochs == sorted(epochs) and epochs[-1] == 2  # the second writer claimed the shard
    last = items[-1][2]
    assert [g.generation for g in last.flushed_generations] == [1, 2]
    assert last.current_generation == 3 and last.region_spec_id == 1


def test_region_manifest_names():
    assert mw.region_manifest_name(1) == "1" + "0" * 63 + ".binpb"
    assert mw.region_manifest_name(2) == "01" + "0" * 62 + ".binpb"
    for v in (1, 2, 5, 12345, (1 << 64) - 1):
        assert mw.parse_region_manifest_name(mw.region_manifest_name(v)) == v
    assert mw.parse_region_manifest_name("version_hint.json") is None


def test_pylance_mem_wal_passes_the_rules(mem_wal_ds):
    root, _ = mem_wal_ds
    report = validate(root, versions="all")
    assert report.conforms, report.render("text")
    assert not {r for r in report.rules_violated(None) if r.startswith(("MEMWAL", "INDEX"))}
    # LAYOUT-003 (another area) warns about _mem_wal/, which spec 000 does not list
    assert report.rules_violated(None) <= {"LAYOUT-003"}


def test_maintained_indexes_and_writer_defaults(tmp_path, pylance):
    root = str(tmp_path / "ds")
    ds = pylance.write_dataset(_rows(0, 10), root)
    ds.create_scalar_index("id", "BTREE")
    pylance.dataset(root).initialize_mem_wal(maintained_indexes=["id_idx"], unsharded=True,
                                             durable_write=False)
    d = _mem_wal_index(root).details.message
    assert list(d.maintained_indexes) == ["id_idx"]
    assert d.HasField("maintain_all_indexes") and d.maintain_all_indexes is False
    assert d.writer_config_defaults["durable_write"] == "false"
    assert not validate(root, versions="all").rules_violated("error")


def test_inspect_shows_mem_wal(mem_wal_ds):
    from conformance.cli.inspect import inspect_dataset

    r = inspect_dataset(mem_wal_ds[0])
    (e,) = [e for e in r["index_details"] if e["details"]["kind"] == "mem_wal"]
    assert e["details"]["content"]["num_regions"] == 4
    assert e["details"]["content"]["region_specs"][0]["fields"][0]["transform"] == "bucket"


# -- the inline region snapshot file ----------------------------------------------------------

def test_snapshot_roundtrip_through_our_writer_and_reader():
    regions = [mw.RegionSnapshot(REGION, 3, 1, 2, 4, 6, 3, 1, ((1, "a_gen_1"), (2, "b_gen_2"))),
               mw.RegionSnapshot(str(uuid_mod.UUID(int=1)), 1, 0, 1, 0, 0, 1, 0, ())]
    d = table_pb2.MemWalIndexDetails(num_regions=2,
                                     inline_snapshots=mw.encode_region_snapshots(regions))
    assert mw.read_region_snapshots(d) == regions


def test_snapshot_written_by_pylance_file_writer_is_read(tmp_path, pylance):
    from lance.file import LanceFileWriter

    path = str(tmp_path / "snap.lance")
    rid = uuid_mod.UUID(REGION).bytes
    table = pa.table({
        "region_id": pa.array([rid], pa.binary(16)), "version": pa.array([2], pa.uint64()),
        "region_spec_id": pa.array([1], pa.uint32()), "writer_epoch": pa.array([5], pa.uint64()),
        "replay_after_wal_entry_position": pa.array([1], pa.uint64()),
        "wal_entry_position_last_seen": pa.array([2], pa.uint64()),
        "current_generation": pa.array([2], pa.uint64()),
        "merged_generation": pa.array([1], pa.uint64()),
        "flushed_generations": pa.array([[{"generation": 1, "path": "g1"}]],
                                        mw.snapshot_schema().field("flushed_generations").type),
    })
    with LanceFileWriter(path, table.schema) as w:
        w.write_batch(table)
    d = table_pb2.MemWalIndexDetails(num_regions=1,
                                     inline_snapshots=open(path, "rb").read())
    (r,) = mw.read_region_snapshots(d)
    assert (r.region_id, r.writer_epoch, r.flushed_generations) == (REGION, 5, ((1, "g1"),))


@pytest.mark.parametrize("data", [b"", b"LANC", b"\0" * 100, None])
def test_bad_snapshots_raise_format_error(data):
    d = valid_mem_wal()
    d.inline_snapshots = data if data is not None else d.inline_snapshots[:-7]
    with pytest.raises(FormatError) as e:
        mw.read_region_snapshots(d)
    assert e.value.rule == "MEMWAL-001"


def test_snapshot_missing_a_column_is_refused():
    from reference_impl.file.writer import write_lance_file
    from reference_impl.io.memory import MemoryStore

    store = MemoryStore("memwal-missing-col")
    write_lance_file(store, "s.lance", pa.table({"version": pa.array([1], pa.uint64())}))
    d = table_pb2.MemWalIndexDetails(inline_snapshots=store.get("s.lance"))
    with pytest.raises(FormatError, match="lacks columns"):
        mw.read_region_snapshots(d)


def test_garbage_region_manifest_is_a_format_error(tmp_path):
    d = tmp_path / "_mem_wal" / REGION / "manifest"
    d.mkdir(parents=True)
    (d / mw.region_manifest_name(1)).write_bytes(b"\x0a\xff\xff\xff\xff\x0f")
    with pytest.raises(FormatError) as e:
        mw.read_region_manifests(open_store(str(tmp_path)), REGION)
    assert e.value.rule == "MEMWAL-001"


# -- the rules on the invalid base --------------------------------------------------------------

@pytest.fixture(scope="module")
def base(tmp_path_factory, pylance):
    from conformance.fixtures.invalid import write_base

    return write_base(tmp_path_factory.mktemp("mbase") / "ds")


def test_valid_mem_wal_is_clean(base, tmp_path):
    copy = tmp_path / "ok"
    shutil.copytree(base, copy)
    inject(copy, mem_wal_entry(valid_mem_wal()))
    write_region_manifests(copy, [region_manifest(1, current=1, flushed=()),
                                  region_manifest(2, epoch=2)])
    report = validate(str(copy), versions="all")
    assert report.rules_violated(None) <= {"LAYOUT-003"}, report.render("text")


MEMWAL_CASES = sorted(k for k in CORRUPTIONS if k.startswith("MEMWAL-"))


@pytest.mark.parametrize("rule_id", MEMWAL_CASES)
def test_each_mem_wal_rule_catches_its_case(base, tmp_path, rule_id):
    copy = tmp_path / "case"
    shutil.copytree(base, copy)
    CORRUPTIONS[rule_id](copy)
    report = validate(str(copy), versions="all")
    assert rule_id in report.rules_violated(None), report.render("text")
    assert not (report.rules_violated("error") - {rule_id}), report.render("text")


def test_every_mem_wal_rule_has_a_case():
    from conformance.rules import all_rules

    assert {r.id for r in all_rules() if r.id.startswith("MEMWAL-")} == set(MEMWAL_CASES)
