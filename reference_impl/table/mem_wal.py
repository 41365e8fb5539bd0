"""The MemWAL index (spec 004, "MemWAL Index Types").

MemWAL lets many writers append through write-ahead logs and in-memory tables (MemTables)
that are later merged into the base table. Its state is an index (pylance names it
``__lance_mem_wal``; type URL ``/lance.table.MemWalIndexDetails``) whose details are::

    MemWalIndexDetails { 1 snapshot_ts_millis: int64
                         2 num_regions: uint32
                         3 inline_snapshots: bytes?      a Lance file, one row per region
                         7 region_specs: repeated RegionSpec
                         8 maintained_indexes: repeated string
                         9 merged_generations: repeated MergedGeneration
                        10 index_catchup: repeated IndexCatchupProgress
                        11 writer_config_defaults: map<string, string>  (pylance 14.0.2 only)
                        12 maintain_all_indexes: bool?   (pylance 14.0.2 only) }
    RegionSpec   { 1 spec_id: uint32, 2 fields: repeated RegionField }
    RegionField  { 1 field_id, 2 source_ids: repeated int32, 3 transform?, 4 expression?,
                   5 result_type, 6 parameters: map<string, string> }
                   -- transform and expression are mutually exclusive
    MergedGeneration     { 1 region_id: UUID, 2 generation }
    IndexCatchupProgress { 1 index_name, 2 caught_up_generations: repeated MergedGeneration }

Each region has one writer at a time, fenced by its manifest::

    RegionManifest { 11 region_id: UUID, 1 version, 10 region_spec_id, 2 writer_epoch,
                     3 replay_after_wal_entry_position, 4 wal_entry_position_last_seen,
                     6 current_generation, 8 flushed_generations: repeated
                     FlushedGeneration {1 generation, 2 path} }

The inline snapshot file has one column per RegionManifest field: ``region_id``
fixed_size_binary(16), ``version`` u64, ``region_spec_id`` u32, ``writer_epoch`` u64,
``replay_after_wal_entry_position`` u64, ``wal_entry_position_last_seen`` u64,
``current_generation`` u64, ``merged_generation`` u64, ``flushed_generations``
list<struct<generation u64, path string>>.

pylance 14.0.2 ("shards" instead of regions; observed, not in the spec):

* ``initialize_mem_wal(...)`` commits the index with ``num_regions`` = number of shards of
  the sharding spec (e.g. ``num_buckets``), ``region_specs`` = the sharding specs, field 12
  ``maintain_all_indexes`` = true when no list was given (false, written, with a list),
  field 11 ``writer_config_defaults`` = the writer keyword arguments given to
  ``initialize_mem_wal`` completed with defaults; no ``inline_snapshots`` and no
  ``snapshot_ts_millis`` (the index is not refreshed by writers);
* a shard's manifests are ``_mem_wal/{shard_uuid}/manifest/{name}.binpb``, each a raw
  RegionManifest protobuf; ``{name}`` is the version as 64 binary digits, least significant
  bit first (version 1 = ``1`` then 63 ``0``), and ``manifest/version_hint.json`` =
  ``{"version": N}``; its FlushedGeneration entries carry fields 3, 4 and 5 beyond the
  spec's (sizes/row counts, kept as unknown fields);
* flushed generations live in ``_mem_wal/{shard}/{8 hex}_gen_{n}/`` (a Lance dataset with
  its own ``_indices``), the WAL in ``_mem_wal/{shard}/wal/{name}.arrow``.
"""

from __future__ import annotations

import json
import re
import uuid as _uuidlib
from dataclasses import dataclass

from reference_impl.errors import FormatError, NotFound
from reference_impl.proto import table_pb2

RULE = "MEMWAL-001"
MEM_WAL_DIR = "_mem_wal"
#: Largest inline snapshot / region manifest decoded.
MAX_SNAPSHOT_BYTES = 64 << 20
MAX_REGION_MANIFEST_BYTES = 16 << 20
MAX_REGIONS = 1 << 20

SNAPSHOT_COLUMNS = ("region_id", "version", "region_spec_id", "writer_epoch",
                    "replay_after_wal_entry_position", "wal_entry_position_last_seen",
                    "current_generation", "merged_generation", "flushed_generations")

_NAME = re.compile(r"^[01]{64}\.binpb$")


def uuid_text(raw: bytes) -> str:
    raw = bytes(raw)
    return str(_uuidlib.UUID(bytes=raw)) if len(raw) == 16 else raw.hex()


def parse_details(raw: bytes, *, path: str | None = None) -> table_pb2.MemWalIndexDetails:
    """Decode ``MemWalIndexDetails`` bytes (the ``value`` of the index details Any)."""
    msg = table_pb2.MemWalIndexDetails()
    try:
        msg.ParseFromString(bytes(raw))
    except Exception as exc:  # noqa: BLE001
        raise FormatError(f"MemWalIndexDetails do not parse: {exc}", rule=RULE,
                          path=path) from None
    return msg


@dataclass(frozen=True)
class RegionSnapshot:
    """One row of the inline region snapshot file."""

    region_id: str
    version: int
    region_spec_id: int
    writer_epoch: int
    replay_after_wal_entry_position: int
    wal_entry_position_last_seen: int
    current_generation: int
    merged_generation: int
    flushed_generations: tuple[tuple[int, str], ...]


def read_region_snapshots(details, *, path: str | None = None) -> list[RegionSnapshot]:
    """The regions of ``details.inline_snapshots`` (empty when absent), read with
    ``LanceFileReader`` over an in-memory store. Raises ``FormatError`` (MEMWAL-001) when
    the bytes are not a Lance file with the documented columns."""
    if not details.HasField("inline_snapshots"):
        return []
    data = bytes(details.inline_snapshots)
    if len(data) > MAX_SNAPSHOT_BYTES:
        raise FormatError(f"inline snapshots of {len(data)} bytes exceed {MAX_SNAPSHOT_BYTES}",
                          rule=RULE, path=path)
    from reference_impl.file.reader import LanceFileReader
    from reference_impl.io.memory import MemoryStore

    store = MemoryStore(_scratch_name())
    store.put("snapshot.lance", data)
    try:
        reader = LanceFileReader(store, "snapshot.lance")
        if reader.num_rows > MAX_REGIONS:
            raise FormatError(f"inline snapshot has {reader.num_rows} regions", rule=RULE,
                              path=path)
        table = reader.read_all()
    except FormatError as exc:
        raise FormatError(f"inline snapshots are not a readable Lance file: {exc.message}",
                          rule=RULE, path=path, offset=exc.offset) from None
    missing = [c for c in SNAPSHOT_COLUMNS if c not in table.column_names]
    if missing:
        raise FormatError(f"inline snapshot file lacks columns {missing}", rule=RULE, path=path)
    cols = {c: table.column(c).to_pylist() for c in SNAPSHOT_COLUMNS}
    out = []
    for i in range(table.num_rows):
        rid = cols["region_id"][i]
        flushed = tuple((int(g["generation"]), str(g["path"]))
                        for g in (cols["flushed_generations"][i] or ()))
        out.append(RegionSnapshot(
            region_id=uuid_text(rid) if rid is not None else "",
            version=int(cols["version"][i] or 0),
            region_spec_id=int(cols["region_spec_id"][i] or 0),
            writer_epoch=int(cols["writer_epoch"][i] or 0),
            replay_after_wal_entry_position=int(cols["replay_after_wal_entry_position"][i] or 0),
            wal_entry_position_last_seen=int(cols["wal_entry_position_last_seen"][i] or 0),
            current_generation=int(cols["current_generation"][i] or 0),
            merged_generation=int(cols["merged_generation"][i] or 0),
            flushed_generations=flushed))
    return out


def _scratch_name() -> str:
    """A fresh in-memory store name (memory stores of one name share their objects)."""
    return f"mem-wal-snapshot-{_uuidlib.uuid4().hex}"


def snapshot_schema():
    """The Arrow schema of the inline snapshot file (spec 004)."""
    import pyarrow as pa

    return pa.schema([
        ("region_id", pa.binary(16)), ("version", pa.uint64()), ("region_spec_id", pa.uint32()),
        ("writer_epoch", pa.uint64()), ("replay_after_wal_entry_position", pa.uint64()),
        ("wal_entry_position_last_seen", pa.uint64()), ("current_generation", pa.uint64()),
        ("merged_generation", pa.uint64()),
        ("flushed_generations", pa.list_(pa.struct([("generation", pa.uint64()),
                                                    ("path", pa.string())]))),
    ])


def encode_region_snapshots(regions: list[RegionSnapshot], *, version: str = "2.1") -> bytes:
    """The Lance file bytes of ``regions`` with the snapshot schema (for writers and tests)."""
    import pyarrow as pa

    from reference_impl.file.writer import write_lance_file
    from reference_impl.io.memory import MemoryStore

    rows = {c: [] for c in SNAPSHOT_COLUMNS}
    for r in regions:
        rows["region_id"].append(_uuidlib.UUID(r.region_id).bytes)
        for c in SNAPSHOT_COLUMNS[1:-1]:
            rows[c].append(getattr(r, c))
        rows["flushed_generations"].append([{"generation": g, "path": p}
                                            for g, p in r.flushed_generations])
    table = pa.table(rows, schema=snapshot_schema())
    store = MemoryStore(_scratch_name())
    write_lance_file(store, "snapshot.lance", table, version=version)
    return store.get("snapshot.lance")


# -- pylance 14 shard manifests --------------------------------------------------------------

def region_manifest_name(version: int) -> str:
    """``{64 binary digits, least significant first}.binpb`` (pylance 14.0.2)."""
    return format(version, "064b")[::-1] + ".binpb"


def parse_region_manifest_name(name: str) -> int | None:
    """The version named by a shard manifest file name, or None for other names."""
    if not _NAME.match(name):
        return None
    return int(name[:64][::-1], 2)


def list_regions(store) -> list[str]:
    """Directory names under ``_mem_wal/`` (one per region / shard)."""
    try:
        _files, dirs = store.list_dir(MEM_WAL_DIR)
    except NotFound:
        return []
    return sorted(d.rstrip("/").rsplit("/", 1)[-1] for d in dirs)


def read_region_manifests(store, region: str) -> list[tuple[int, str, table_pb2.RegionManifest]]:
    """``(version, key, RegionManifest)`` of every manifest of one region directory, sorted by
    version. Files that do not parse raise ``FormatError`` (MEMWAL-001)."""
    prefix = f"{MEM_WAL_DIR}/{region}/manifest"
    try:
        files, _dirs = store.list_dir(prefix)
    except NotFound:
        return []
    out = []
    for info in files:
        name = info.key.rsplit("/", 1)[-1]
        v = parse_region_manifest_name(name)
        if v is None:
            continue
        if info.size > MAX_REGION_MANIFEST_BYTES:
            raise FormatError(f"region manifest of {info.size} bytes", rule=RULE, path=info.key)
        rm = table_pb2.RegionManifest()
        try:
            rm.ParseFromString(store.get(info.key, max_size=MAX_REGION_MANIFEST_BYTES))
        except FormatError:
            raise
        except Exception as exc:  # noqa: BLE001
            raise FormatError(f"region manifest does not parse: {exc}", rule=RULE,
                              path=info.key) from None
        out.append((v, info.key, rm))
    return sorted(out, key=lambda t: t[0])


def read_version_hint(store, region: str) -> int | None:
    """``manifest/version_hint.json`` of a region, or None when absent or unreadable."""
    try:
        doc = json.loads(store.get(f"{MEM_WAL_DIR}/{region}/manifest/version_hint.json",
                                   max_size=4096))
        return int(doc["version"])
    except Exception:  # noqa: BLE001 - a hint is only a hint
        return None


def region_manifest_dict(rm) -> dict:
    return {"region_id": uuid_text(rm.region_id.uuid) if rm.HasField("region_id") else None,
            "version": rm.version, "region_spec_id": rm.region_spec_id,
            "writer_epoch": rm.writer_epoch,
            "replay_after_wal_entry_position": rm.replay_after_wal_entry_position,
            "wal_entry_position_last_seen": rm.wal_entry_position_last_seen,
            "current_generation": rm.current_generation,
            "flushed_generations": [[g.generation, g.path] for g in rm.flushed_generations]}


def summarize(details) -> dict:
    """A JSON-able account of ``MemWalIndexDetails`` (snapshots decoded when present)."""
    out: dict = {
        "snapshot_ts_millis": details.snapshot_ts_millis, "num_regions": details.num_regions,
        "region_specs": [{"spec_id": s.spec_id, "fields": [{
            "field_id": f.field_id, "source_ids": list(f.source_ids),
            "transform": f.transform if f.HasField("transform") else None,
            "expression": f.expression if f.HasField("expression") else None,
            "result_type": f.result_type, "parameters": dict(f.parameters)} for f in s.fields]}
            for s in details.region_specs],
        "maintained_indexes": list(details.maintained_indexes),
        "merged_generations": [[uuid_text(m.region_id.uuid), m.generation]
                               for m in details.merged_generations],
        "index_catchup": [{"index_name": c.index_name, "caught_up": [
            [uuid_text(m.region_id.uuid), m.generation] for m in c.caught_up_generations]}
            for c in details.index_catchup],
    }
    if len(details.writer_config_defaults):
        out["writer_config_defaults"] = dict(details.writer_config_defaults)
    if details.HasField("maintain_all_indexes"):
        out["maintain_all_indexes"] = details.maintain_all_indexes
    if details.HasField("inline_snapshots"):
        try:
            out["regions"] = [r.__dict__ for r in read_region_snapshots(details)]
        except FormatError as exc:
            out["regions"] = {"error": exc.message}
    return out
