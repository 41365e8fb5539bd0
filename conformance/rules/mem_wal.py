"""MEMWAL-*: the MemWAL index (spec 004, "MemWAL Index Types").

The index details (``MemWalIndexDetails``: region specs, maintained indexes, merged
generations per region, index catch-up, an inline Lance file of region snapshots) and the
region manifests (``RegionManifest``: epoch-fenced writer, WAL replay position, current and
flushed MemTable generations). Region state is read from the inline snapshots when the
details carry them, otherwise from the newest manifest of each region directory under
``_mem_wal/`` (where pylance 14.0.2 keeps it; see ``reference_impl.table.mem_wal``).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from reference_impl.errors import FormatError, LanceError
from reference_impl.table import mem_wal as mw

from .index import indices
from .registry import Finding, rule

_SEC = "MemWAL Index Types"


@dataclass(frozen=True)
class _Region:
    region_id: str
    version: int
    region_spec_id: int
    writer_epoch: int
    replay_after: int
    last_seen: int
    current_generation: int
    flushed: tuple[int, ...]
    where: str


def _details(ctx):
    """``(Index, MemWalIndexDetails)`` of every MemWAL entry of the version."""
    for i in indices(ctx):
        if i.kind == "mem_wal" and i.details is not None and i.details.known:
            yield i, i.details.message


def _region_manifests(store, cache: dict):
    """``{region_dir: [(version, key, RegionManifest)]}`` (cached); decoding errors are kept
    as ``{region_dir: FormatError}``."""
    if "mem_wal.manifests" not in cache:
        out: dict = {}
        for region in mw.list_regions(store):
            try:
                out[region] = mw.read_region_manifests(store, region)
            except LanceError as exc:
                out[region] = exc
        cache["mem_wal.manifests"] = out
    return cache["mem_wal.manifests"]


def _from_manifest(rm, key) -> _Region:
    return _Region(mw.uuid_text(rm.region_id.uuid) if rm.HasField("region_id") else "",
                   int(rm.version), int(rm.region_spec_id), int(rm.writer_epoch),
                   int(rm.replay_after_wal_entry_position),
                   int(rm.wal_entry_position_last_seen), int(rm.current_generation),
                   tuple(int(g.generation) for g in rm.flushed_generations), key)


def _regions(ctx, details) -> list[_Region]:
    """Region state for ``details``: its inline snapshots, else the newest manifest of each
    region directory. Undecodable sources give nothing here (MEMWAL-001 reports them)."""
    if details.HasField("inline_snapshots"):
        try:
            snaps = mw.read_region_snapshots(details, path=ctx.manifest_key)
        except FormatError:
            return []
        return [_Region(s.region_id, s.version, s.region_spec_id, s.writer_epoch,
                        s.replay_after_wal_entry_position, s.wal_entry_position_last_seen,
                        s.current_generation, tuple(g for g, _p in s.flushed_generations),
                        f"{ctx.manifest_key} inline_snapshots")
                for s in snaps]
    out = []
    for _region, items in _region_manifests(ctx.store, ctx.table.cache).items():
        if isinstance(items, LanceError) or not items:
            continue
        _v, key, rm = items[-1]
        out.append(_from_manifest(rm, key))
    return out


@rule("MEMWAL-001", title="MemWAL details and region snapshots decode", severity="error",
      spec="004", section=_SEC,
      clause="Region snapshots are stored as a Lance file with one row per region. The schema "
             "has one column per RegionManifest field")
def decodes(ctx):
    for i, d in _details(ctx):
        if d.HasField("inline_snapshots"):
            try:
                mw.read_region_snapshots(d, path=ctx.manifest_key)
            except FormatError as exc:
                yield Finding(f"MemWAL index {i.name!r}: {exc.message}",
                              {"path": ctx.manifest_key, "index": i.name})
    # details that do not parse at all are INDEX-009's


@rule("MEMWAL-002", title="a region field has a transform or an expression, not both",
      severity="error", spec="004", section="RegionField",
      clause="Well-known region transform name (e.g., \"identity\", \"year\", \"bucket\"). "
             "Mutually exclusive with expression.")
def transform_xor_expression(ctx):
    for i, d in _details(ctx):
        for s in d.region_specs:
            for f in s.fields:
                if f.HasField("transform") and f.HasField("expression"):
                    yield Finding(f"region spec {s.spec_id} field {f.field_id!r} has both "
                                  f"transform {f.transform!r} and expression {f.expression!r}",
                                  {"path": ctx.manifest_key, "index": i.name})


@rule("MEMWAL-003", title="region spec ids are unique", severity="error", spec="004",
      section="RegionSpec",
      clause="Unique identifier for this spec within the index. IDs are never reused.")
def spec_ids_unique(ctx):
    for i, d in _details(ctx):
        counts = Counter(int(s.spec_id) for s in d.region_specs)
        for sid, n in sorted(counts.items()):
            if n > 1:
                yield Finding(f"region spec id {sid} is used by {n} specs",
                              {"path": ctx.manifest_key, "index": i.name})


@rule("MEMWAL-004", title="merged generations are not ahead of the region's generations",
      severity="error", spec="004", section="MemWalIndexDetails",
      clause="Last generation merged to base table for each region.",
      pylance="pylance 14.0.2 keeps region (shard) state only in _mem_wal/{shard}/manifest/ "
              "and writes no inline snapshots; the newest manifest of each shard is used")
def merged_not_ahead(ctx):
    for i, d in _details(ctx):
        regions = {r.region_id: r for r in _regions(ctx, d)}
        for m in d.merged_generations:
            rid = mw.uuid_text(m.region_id.uuid)
            r = regions.get(rid)
            if r is None:
                continue
            if m.generation >= r.current_generation and m.generation > 0:
                yield Finding(f"region {rid}: merged generation {m.generation} is not below the "
                              f"next generation to create ({r.current_generation})",
                              {"path": ctx.manifest_key, "index": i.name, "region": rid})
            elif r.flushed and m.generation > max(r.flushed) and m.generation not in r.flushed:
                yield Finding(f"region {rid}: merged generation {m.generation} is ahead of the "
                              f"flushed generations {list(r.flushed)}",
                              {"path": ctx.manifest_key, "index": i.name, "region": rid})


@rule("MEMWAL-005", title="one merged generation entry per region", severity="error",
      spec="004", section="MemWalIndexDetails",
      clause="Last generation merged to base table for each region.")
def merged_once(ctx):
    for i, d in _details(ctx):
        counts = Counter(mw.uuid_text(m.region_id.uuid) for m in d.merged_generations)
        for rid, n in sorted(counts.items()):
            if n > 1:
                yield Finding(f"region {rid} has {n} merged generation entries",
                              {"path": ctx.manifest_key, "index": i.name, "region": rid})


@rule("MEMWAL-006", title="maintained and caught-up indexes name existing indexes",
      severity="error", spec="004", section="MemWalIndexDetails",
      clause="These are index names referencing indexes defined on the base table.")
def maintained_exist(ctx):
    names = {i.name for i in indices(ctx)}
    for i, d in _details(ctx):
        for n in d.maintained_indexes:
            if n not in names:
                yield Finding(f"maintained index {n!r} is not an index of this version",
                              {"path": ctx.manifest_key, "index": i.name})
        maintained = set(d.maintained_indexes)
        all_maintained = d.HasField("maintain_all_indexes") and d.maintain_all_indexes
        for c in d.index_catchup:
            if c.index_name not in names or not (all_maintained or c.index_name in maintained):
                yield Finding(f"index catch-up names {c.index_name!r}, which is not a "
                              f"maintained index of this version",
                              {"path": ctx.manifest_key, "index": i.name})


@rule("MEMWAL-007", title="caught-up generations are not above merged generations",
      severity="error", spec="004", section="IndexCatchupProgress",
      clause="If a region is not present, the index is assumed to be fully caught up (i.e., "
             "caught_up_generation >= merged_generation for that region).")
def catchup_not_ahead(ctx):
    for i, d in _details(ctx):
        merged = {mw.uuid_text(m.region_id.uuid): int(m.generation) for m in d.merged_generations}
        for c in d.index_catchup:
            for g in c.caught_up_generations:
                rid = mw.uuid_text(g.region_id.uuid)
                if g.generation > merged.get(rid, 0):
                    yield Finding(f"index {c.index_name!r} is caught up to generation "
                                  f"{g.generation} of region {rid}, which merged only "
                                  f"{merged.get(rid, 0)}",
                                  {"path": ctx.manifest_key, "index": i.name, "region": rid})


@rule("MEMWAL-008", title="num_regions matches the inline snapshots", severity="error",
      spec="004", section="MemWalIndexDetails",
      clause="Number of regions in the snapshot. Used to determine storage format without "
             "reading the snapshot data.",
      pylance="pylance 14.0.2 sets num_regions to the number of shards of its sharding spec "
              "(num_buckets) and writes no snapshots; only inline snapshots are checked")
def num_regions_match(ctx):
    for i, d in _details(ctx):
        if not d.HasField("inline_snapshots"):
            continue
        try:
            n = len(mw.read_region_snapshots(d, path=ctx.manifest_key))
        except FormatError:
            continue
        if n != d.num_regions:
            yield Finding(f"num_regions is {d.num_regions} but the snapshot holds {n} regions",
                          {"path": ctx.manifest_key, "index": i.name})


def _region_problems(r: _Region, spec_ids: set[int] | None):
    """(rule, message) pairs for one region's state."""
    if r.replay_after > r.last_seen:
        yield "MEMWAL-010", (f"region {r.region_id}: replay_after_wal_entry_position "
                             f"{r.replay_after} is after wal_entry_position_last_seen "
                             f"{r.last_seen}")
    bad = [g for g in r.flushed if g >= r.current_generation]
    if bad:
        yield "MEMWAL-011", (f"region {r.region_id}: flushed generations {bad} are not below "
                             f"current_generation {r.current_generation}")
    dup = [g for g, n in Counter(r.flushed).items() if n > 1]
    if dup:
        yield "MEMWAL-011", f"region {r.region_id}: generations {dup} flushed twice"
    if spec_ids is not None and r.region_spec_id != 0 and r.region_spec_id not in spec_ids:
        yield "MEMWAL-012", (f"region {r.region_id}: region_spec_id {r.region_spec_id} names "
                             f"no region spec (known: {sorted(spec_ids)})")


def _version_region_findings(ctx, rule_id):
    for i, d in _details(ctx):
        spec_ids = {int(s.spec_id) for s in d.region_specs}
        for r in _regions(ctx, d):
            for rid, msg in _region_problems(r, spec_ids):
                if rid == rule_id:
                    yield Finding(msg, {"path": r.where, "index": i.name})


@rule("MEMWAL-010", title="WAL replay position is not after the last seen position",
      severity="warning", spec="004", section="RegionManifest",
      clause="The most recent WAL entry position (0-based) at the time manifest was updated. "
             "This is a hint, not authoritative")
def replay_before_last_seen(ctx):
    yield from _version_region_findings(ctx, "MEMWAL-010")


@rule("MEMWAL-011", title="flushed generations are below current_generation and unique",
      severity="error", spec="004", section="RegionManifest",
      clause="Next generation ID to create (incremented after each MemTable flush).")
def flushed_below_current(ctx):
    yield from _version_region_findings(ctx, "MEMWAL-011")


@rule("MEMWAL-012", title="region_spec_id names a region spec (or is 0)", severity="error",
      spec="004", section="RegionManifest",
      clause="Region spec ID this region was created with. ... A value of 0 indicates a "
             "manually-created region not governed by any spec.")
def spec_id_known(ctx):
    yield from _version_region_findings(ctx, "MEMWAL-012")


# -- region manifests under _mem_wal/ (table scope) -------------------------------------------

@rule("MEMWAL-020", title="region manifests decode and match their file names",
      severity="error", spec="004", section="RegionManifest",
      clause="Manifest version number. Matches the version encoded in the filename.",
      pylance="pylance 14.0.2 names them _mem_wal/{shard}/manifest/{version as 64 binary "
              "digits, least significant first}.binpb", scope="table")
def region_manifest_names(ctx):
    for region, items in _region_manifests(ctx.store, ctx.cache).items():
        if isinstance(items, LanceError):
            yield Finding(f"region {region}: {items}", {"path": f"_mem_wal/{region}"})
            continue
        for v, key, rm in items:
            if rm.version != v:
                yield Finding(f"region manifest {key} says version {rm.version}, its name says "
                              f"{v}", {"path": key})


@rule("MEMWAL-021", title="one writer per region: writer epochs never go back",
      severity="error", spec="004", section="RegionManifest",
      clause="Writer fencing token - monotonically increasing. A writer must increment this "
             "when claiming the region.", scope="table")
def epochs_monotonic(ctx):
    for region, items in _region_manifests(ctx.store, ctx.cache).items():
        if isinstance(items, LanceError):
            continue
        for (v1, _k1, a), (v2, k2, b) in zip(items, items[1:], strict=False):
            if b.writer_epoch < a.writer_epoch:
                yield Finding(f"region {region}: writer_epoch falls from {a.writer_epoch} "
                              f"(version {v1}) to {b.writer_epoch} (version {v2})",
                              {"path": k2})
            if a.HasField("region_id") and b.region_id.uuid != a.region_id.uuid:
                yield Finding(f"region {region}: region_id changes between versions {v1} and "
                              f"{v2}", {"path": k2})


@rule("MEMWAL-022", title="region manifests keep generations and positions consistent",
      severity="error", spec="004", section="RegionManifest",
      clause="List of flushed MemTable generations and their directory paths.", scope="table")
def region_manifest_state(ctx):
    for region, items in _region_manifests(ctx.store, ctx.cache).items():
        if isinstance(items, LanceError):
            continue
        for _v, key, rm in items:
            for rid, msg in _region_problems(_from_manifest(rm, key), None):
                if rid == "MEMWAL-011":
                    yield Finding(msg, {"path": key})
        for (v1, _k1, a), (v2, k2, b) in zip(items, items[1:], strict=False):
            if b.current_generation < a.current_generation:
                yield Finding(f"region {region}: current_generation falls from "
                              f"{a.current_generation} (version {v1}) to "
                              f"{b.current_generation} (version {v2})", {"path": k2})
