"""Negative fixtures for the INDEX-* and MEMWAL-* rules, registered into
``conformance.invalid.CORRUPTIONS`` with its :func:`~conformance.invalid.corruption`.

The base dataset of ``conformance.invalid.write_base`` has no index, so each case writes an
index section into the latest manifest (version 3: fields ``a`` = 0 and ``s`` = 1,
fragments 0 and 1, ``max_fragment_id`` 1): a valid entry (:func:`valid_entry`, a BTree on
``a`` covering both fragments, no files) or valid MemWAL details (:func:`valid_mem_wal`)
with exactly one thing broken. Cases of the MemWAL region manifests also write
``_mem_wal/{region}/manifest/*.binpb`` as pylance 14.0.2 lays them out.
"""

from __future__ import annotations

import uuid as uuid_mod
from pathlib import Path

from reference_impl.proto import table_pb2
from reference_impl.table import fragment_reuse, mem_wal
from reference_impl.table.index import encode_fragment_bitmap

from .invalid import corruption, latest_manifest, manifests, rewrite_manifest

BTREE_URL = "/lance.table.BTreeIndexDetails"
REGION = "6b1c1a3e-5f47-4b8e-9c36-0d3c1f0e2a11"
INDEX_UUID = "5d2b8f0c-1a4e-4c7b-8e21-3f9a6d0b7c55"


def valid_entry(name: str = "a_idx", *, uuid: str = INDEX_UUID, fields=(0,), frags=(0, 1),
                type_url: str = BTREE_URL, value: bytes = b"", dataset_version: int = 3,
                files=()) -> table_pb2.IndexMetadata:
    im = table_pb2.IndexMetadata(name=name, fields=list(fields), dataset_version=dataset_version,
                                 fragment_bitmap=encode_fragment_bitmap(frags),
                                 index_version=0, created_at=1_700_000_000_000)
    im.uuid.uuid = uuid_mod.UUID(uuid).bytes
    im.index_details.type_url = type_url
    im.index_details.value = value
    for path, size in files:
        im.files.add(path=path, size_bytes=size)
    return im


def inject(root: Path, *entries, manifest: Path | None = None) -> None:
    """Replace the index section of ``manifest`` (default: the latest) with ``entries``."""
    section = table_pb2.IndexSection(indices=list(entries)).SerializeToString()
    rewrite_manifest(manifest or latest_manifest(root), index=section)


def _region_snapshot(**kw) -> mem_wal.RegionSnapshot:
    base = dict(region_id=REGION, version=2, region_spec_id=1, writer_epoch=1,
                replay_after_wal_entry_position=1, wal_entry_position_last_seen=1,
                current_generation=2, merged_generation=1,
                flushed_generations=((1, "a1b2c3d4_gen_1"),))
    base.update(kw)
    return mem_wal.RegionSnapshot(**base)


def valid_mem_wal(*, snapshots=None) -> table_pb2.MemWalIndexDetails:
    """MemWAL details with one bucket spec and one region (inline snapshot) that merged
    generation 1."""
    d = table_pb2.MemWalIndexDetails(snapshot_ts_millis=1_700_000_000_000, num_regions=1)
    spec = d.region_specs.add(spec_id=1)
    f = spec.fields.add(field_id="bucket", source_ids=[0], transform="bucket",
                        result_type="int32")
    f.parameters["num_buckets"] = "4"
    snaps = [_region_snapshot()] if snapshots is None else snapshots
    d.inline_snapshots = mem_wal.encode_region_snapshots(snaps)
    m = d.merged_generations.add(generation=1)
    m.region_id.uuid = uuid_mod.UUID(REGION).bytes
    return d


def mem_wal_entry(details) -> table_pb2.IndexMetadata:
    im = valid_entry("__lance_mem_wal", uuid=str(uuid_mod.uuid5(
        uuid_mod.NAMESPACE_URL, "mem_wal")), fields=(), frags=(),
        type_url="/lance.table.MemWalIndexDetails", value=details.SerializeToString())
    im.fragment_bitmap = b""
    return im


def _inject_mem_wal(root: Path, details, *extra) -> None:
    inject(root, mem_wal_entry(details), *extra)


def write_region_manifests(root: Path, manifests_: list) -> None:
    """Write ``RegionManifest`` messages under ``_mem_wal/{REGION}/manifest/`` named by
    version (or by ``(name_version, message)`` pairs)."""
    d = root / "_mem_wal" / REGION / "manifest"
    d.mkdir(parents=True, exist_ok=True)
    for item in manifests_:
        v, rm = item if isinstance(item, tuple) else (item.version, item)
        (d / mem_wal.region_manifest_name(v)).write_bytes(rm.SerializeToString())


def region_manifest(version: int, *, epoch: int = 1, current: int = 2,
                    flushed=(1,)) -> table_pb2.RegionManifest:
    rm = table_pb2.RegionManifest(version=version, region_spec_id=1, writer_epoch=epoch,
                                  replay_after_wal_entry_position=1,
                                  wal_entry_position_last_seen=1, current_generation=current)
    rm.region_id.uuid = uuid_mod.UUID(REGION).bytes
    for g in flushed:
        rm.flushed_generations.add(generation=g, path=f"a1b2c3d4_gen_{g}")
    return rm


# -- INDEX ---------------------------------------------------------------------------------

@corruption("INDEX-001", "two index entries with the same uuid (names a_idx and s_idx)")
def _index_001(root: Path):
    inject(root, valid_entry("a_idx"), valid_entry("s_idx", fields=(1,)))


@corruption("INDEX-002", "an index uuid of 8 bytes")
def _index_002(root: Path):
    im = valid_entry()
    im.uuid.uuid = b"\x01" * 8
    inject(root, im)


@corruption("INDEX-003", "two entries named a_idx whose fragment bitmaps both hold fragment 1")
def _index_003(root: Path):
    inject(root, valid_entry(frags=(0, 1)),
           valid_entry(uuid=str(uuid_mod.UUID(int=7)), frags=(1,)))


@corruption("INDEX-004", "an index on field id 99, which the schema lacks")
def _index_004(root: Path):
    inject(root, valid_entry(fields=(99,)))


@corruption("INDEX-005", "a fragment bitmap naming fragment 7 (max_fragment_id is 1)")
def _index_005(root: Path):
    inject(root, valid_entry(frags=(0, 7)))


@corruption("INDEX-006", "a fragment bitmap replaced by bytes that are not a Roaring bitmap")
def _index_006(root: Path):
    im = valid_entry()
    im.fragment_bitmap = b"\x3a\x30\x00\x00\xff\xff\xff\x7f"
    inject(root, im)


@corruption("INDEX-007", "an index built from version 9 in version 3")
def _index_007(root: Path):
    inject(root, valid_entry(dataset_version=9))


@corruption("INDEX-008", "an index listing page_data.lance (4161 bytes), which is absent")
def _index_008(root: Path):
    inject(root, valid_entry(files=[("page_data.lance", 4161)]))


@corruption("INDEX-009", "InvertedIndexDetails whose bytes do not parse")
def _index_009(root: Path):
    inject(root, valid_entry(type_url="/lance.table.InvertedIndexDetails",
                             value=b"\x0a\xff\xff\xff\xff\x0f"))


@corruption("INDEX-010", "index details of the unknown type /example.com.CustomIndexDetails")
def _index_010(root: Path):
    inject(root, valid_entry(type_url="/example.com.CustomIndexDetails", value=b"\x08\x01"))


@corruption("INDEX-011", "two indexes whose type URLs differ only in case")
def _index_011(root: Path):
    inject(root, valid_entry(),
           valid_entry("s_idx", uuid=str(uuid_mod.UUID(int=8)), fields=(1,),
                       type_url=BTREE_URL.upper()))


@corruption("INDEX-012", "the same index uuid names a_idx in version 3 and s_idx in version 2")
def _index_012(root: Path):
    inject(root, valid_entry())
    v2 = [p for v, p in manifests(root) if v == 2][0]
    inject(root, valid_entry("s_idx", fields=(1,), dataset_version=2), manifest=v2)


@corruption("INDEX-013", "an index listing the file ../../escape.idx")
def _index_013(root: Path):
    inject(root, valid_entry(files=[("../../escape.idx", 10)]))


@corruption("INDEX-014", "an index entry without index_details")
def _index_014(root: Path):
    im = valid_entry()
    im.ClearField("index_details")
    inject(root, im)


def reuse_details(*, new_rows: int = 2, versions=(3,)) -> table_pb2.FragmentReuseIndexDetails:
    """Fragment reuse details: fragment 0 (3 rows, row 1 deleted) rewritten into fragment 1
    (2 rows), recorded at ``versions``."""
    d = table_pb2.FragmentReuseIndexDetails()
    for v in versions:
        ver = d.inline.versions.add(dataset_version=v)
        g = ver.groups.add(changed_row_addrs=fragment_reuse.encode_treemap([0, 2]))
        g.old_fragments.add(id=0, physical_rows=3, num_deleted_rows=1)
        g.new_fragments.add(id=1, physical_rows=new_rows)
    return d


def reuse_entry(details) -> table_pb2.IndexMetadata:
    return valid_entry("__lance_frag_reuse", uuid=str(uuid_mod.UUID(int=9)), fields=(),
                       frags=(1,), type_url="/lance.table.FragmentReuseIndexDetails",
                       value=details.SerializeToString())


@corruption("INDEX-020", "a fragment reuse group whose new fragment has 5 rows for 2 survivors")
def _index_020(root: Path):
    inject(root, reuse_entry(reuse_details(new_rows=5)))


@corruption("INDEX-021", "fragment reuse version entries 3 then 1 (out of order)")
def _index_021(root: Path):
    inject(root, reuse_entry(reuse_details(versions=(3, 1))))


# -- MEMWAL --------------------------------------------------------------------------------

@corruption("MEMWAL-001", "MemWAL inline_snapshots replaced by bytes that are no Lance file")
def _memwal_001(root: Path):
    d = valid_mem_wal()
    d.inline_snapshots = b"not a lance file" * 4
    _inject_mem_wal(root, d)


@corruption("MEMWAL-002", "a region field with both transform and expression")
def _memwal_002(root: Path):
    d = valid_mem_wal()
    d.region_specs[0].fields[0].expression = "id % 4"
    _inject_mem_wal(root, d)


@corruption("MEMWAL-003", "two region specs with spec id 1")
def _memwal_003(root: Path):
    d = valid_mem_wal()
    d.region_specs.add().CopyFrom(d.region_specs[0])
    _inject_mem_wal(root, d)


@corruption("MEMWAL-004", "merged generation 5 for a region whose next generation is 2")
def _memwal_004(root: Path):
    d = valid_mem_wal()
    d.merged_generations[0].generation = 5
    _inject_mem_wal(root, d)


@corruption("MEMWAL-005", "two merged generation entries for one region")
def _memwal_005(root: Path):
    d = valid_mem_wal()
    d.merged_generations.add().CopyFrom(d.merged_generations[0])
    _inject_mem_wal(root, d)


@corruption("MEMWAL-006", "maintained_indexes names the missing index 'nope'")
def _memwal_006(root: Path):
    d = valid_mem_wal()
    d.maintained_indexes.append("nope")
    _inject_mem_wal(root, d)


@corruption("MEMWAL-007", "an index caught up to generation 3 of a region that merged 1")
def _memwal_007(root: Path):
    d = valid_mem_wal()
    d.maintained_indexes.append("a_idx")
    c = d.index_catchup.add(index_name="a_idx")
    g = c.caught_up_generations.add(generation=3)
    g.region_id.uuid = uuid_mod.UUID(REGION).bytes
    _inject_mem_wal(root, d, valid_entry())


@corruption("MEMWAL-008", "num_regions 3 with one region in the inline snapshot")
def _memwal_008(root: Path):
    d = valid_mem_wal()
    d.num_regions = 3
    _inject_mem_wal(root, d)


@corruption("MEMWAL-010", "a region whose replay position 4 is after the last seen 1")
def _memwal_010(root: Path):
    _inject_mem_wal(root, valid_mem_wal(snapshots=[
        _region_snapshot(replay_after_wal_entry_position=4)]))


@corruption("MEMWAL-011", "a region that flushed generation 2 while current_generation is 2")
def _memwal_011(root: Path):
    _inject_mem_wal(root, valid_mem_wal(snapshots=[
        _region_snapshot(flushed_generations=((1, "g1"), (2, "g2")))]))


@corruption("MEMWAL-012", "a region created with region_spec_id 9, which no spec has")
def _memwal_012(root: Path):
    _inject_mem_wal(root, valid_mem_wal(snapshots=[_region_snapshot(region_spec_id=9)]))


@corruption("MEMWAL-020", "region manifest version 2 stored under the name of version 3")
def _memwal_020(root: Path):
    write_region_manifests(root, [region_manifest(1, current=1, flushed=()),
                                  (3, region_manifest(2))])


@corruption("MEMWAL-021", "region manifests whose writer_epoch falls from 3 to 2")
def _memwal_021(root: Path):
    write_region_manifests(root, [region_manifest(1, epoch=3, current=1, flushed=()),
                                  region_manifest(2, epoch=2)])


@corruption("MEMWAL-022", "region manifests whose current_generation falls from 3 to 2")
def _memwal_022(root: Path):
    write_region_manifests(root, [region_manifest(1, current=3, flushed=(1, 2)),
                                  region_manifest(2, current=2)])
