"""The pylance scenario factory: small Lance datasets written by pylance 14.0.2, one per
table-format situation the suite compares against.

Each scenario is built by :func:`build_scenario` into ``<root>/<name>/`` and holds

* ``ds/`` -- the dataset (``shallow_clone`` also has ``clone/``, a shallow clone of it);
* ``scenario.json`` -- what pylance reports about it, so that comparison tests read the
  oracle's answers instead of recomputing them:

  .. code-block:: text

     {"name", "path", "pylance_version", "extra_paths": {"clone": ...},
      "versions": [1, 2, ...],                         # ds.versions() of main
      "per_version": {"1": VersionInfo, ...},          # keys are strings (JSON)
      "tags": {name: {"branch", "version"}},           # ds.tags.list()
      "branches": {name: {"parent_branch", "parent_version"}},
      "branch_versions": {branch: {"versions": [...], "per_version": {...}}},
      "clone": {"path", "versions", "per_version"} | null}

  ``VersionInfo`` = ``{"version", "data_storage_version", "count_rows",
  "schema": [{"name", "type", "nullable", "field_id"}],   # top-level Arrow fields
  "field_ids": [...], "fields": [{"id", "parent_id", "name", "logical_type", "nullable"}],
  "fragments": [{"id", "physical_rows", "num_deletions", "deletion_file"}],
  "stable_row_ids": bool}``. Field ids and the ``fields`` list come from the version's
  manifest protobuf, decoded here with the generated bindings (no reference reader needed).

Building is lazy (first access per scenario) and cached: a scenario directory with a
``scenario.json`` is reused, and a ``fcntl`` lock per scenario lets pytest-xdist workers
share one build. The ``pylance_scenarios`` fixture roots the cache in the session's
shared temporary directory, or in ``$LANCE_CONFORMANCE_SCENARIO_DIR`` when set.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import struct
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

# the tables are shared with the harness: conformance.strategies.data
from conformance.strategies.data import (  # noqa: F401
    all_types_table,
    mixed_table,
    nested_table,
    small_table,
)

SCENARIOS: list[str] = [
    "version_legacy",
    "version_2_0",
    "version_2_1",
    "version_2_2",
    "version_2_3",
    "append",
    "overwrite",
    "delete_few",
    "delete_many",
    "delete_fragment",
    "update",
    "add_columns_expr",
    "add_columns_null",
    "merge",
    "drop_columns",
    "rename_column",
    "compaction",
    "restore",
    "stable_row_ids",
    "tags",
    "branches",
    "shallow_clone",
    "config_metadata",
    "scalar_index",
    "vector_index",
    "v1_manifest_paths",
    "migrated_manifest_paths",
    "nested_types",
    "commit_message",
    "all_types",
]

SCENARIO_FILE = "scenario.json"


# --------------------------------------------------------------------------- builders

def _build_version(lance, ds_path: str, version: str, **_):
    lance.write_dataset(mixed_table(100), ds_path, data_storage_version=version)
    lance.write_dataset(mixed_table(50, 100), ds_path, mode="append")


def _build_append(lance, p, **_):
    lance.write_dataset(mixed_table(100), p)
    lance.write_dataset(mixed_table(100, 100), p, mode="append")
    lance.write_dataset(mixed_table(50, 200), p, mode="append", max_rows_per_file=20)


def _build_overwrite(lance, p, **_):
    lance.write_dataset(mixed_table(100), p)
    lance.write_dataset(small_table(30), p, mode="overwrite")


def _build_delete_few(lance, p, **_):
    lance.write_dataset(small_table(300), p, max_rows_per_file=100)
    ds = lance.dataset(p)
    ds.delete("id < 3")
    ds.delete("id = 150 OR id = 151")
    ds.delete("id = 5")  # a later delete on fragment 0 rewrites its file as the union


def _build_delete_many(lance, p, **_):
    lance.write_dataset(small_table(8000), p)
    lance.dataset(p).delete("id < 6000")  # > 5000 rows: a Roaring .bin file


def _build_delete_fragment(lance, p, **_):
    lance.write_dataset(small_table(300), p, max_rows_per_file=100)
    lance.dataset(p).delete("id >= 100 AND id < 200")


def _build_update(lance, p, **_):
    lance.write_dataset(small_table(200), p, max_rows_per_file=100)
    lance.dataset(p).update({"category": "'updated'"}, where="id < 5 OR id = 150")


def _build_add_columns_expr(lance, p, **_):
    lance.write_dataset(small_table(100), p, max_rows_per_file=50)
    lance.dataset(p).add_columns({"double_id": "id * 2"})


def _build_add_columns_null(lance, p, **_):
    import pyarrow as pa

    lance.write_dataset(small_table(100), p)
    lance.dataset(p).add_columns(pa.field("extra", pa.int32()))


def _build_merge(lance, p, **_):
    import pyarrow as pa

    lance.write_dataset(small_table(100), p, max_rows_per_file=50)
    other = pa.table({"id": pa.array(range(100), pa.int64()),
                      "score": pa.array([i / 10 for i in range(100)], pa.float64())})
    lance.dataset(p).merge(other, left_on="id")


def _build_drop_columns(lance, p, **_):
    lance.write_dataset(mixed_table(60), p)
    lance.dataset(p).drop_columns(["i32", "blob"])


def _build_rename_column(lance, p, **_):
    lance.write_dataset(mixed_table(60), p)
    lance.dataset(p).alter_columns({"path": "name", "name": "label"})


def _build_compaction(lance, p, **_):
    lance.write_dataset(small_table(40), p)
    for k in range(1, 4):
        lance.write_dataset(small_table(40, 40 * k), p, mode="append")
    ds = lance.dataset(p)
    ds.delete("id % 10 = 0")
    ds.optimize.compact_files(target_rows_per_fragment=1000)


def _build_restore(lance, p, **_):
    lance.write_dataset(small_table(50), p)
    lance.write_dataset(small_table(50, 50), p, mode="append")
    lance.dataset(p, version=1).restore()


def _build_stable_row_ids(lance, p, **_):
    lance.write_dataset(small_table(100), p, enable_stable_row_ids=True, max_rows_per_file=50)
    lance.write_dataset(small_table(60, 100), p, mode="append")
    ds = lance.dataset(p)
    ds.delete("id >= 10 AND id < 20")
    ds.update({"category": "'u'"}, where="id = 30 OR id = 120")
    lance.dataset(p).optimize.compact_files(target_rows_per_fragment=1000)


def _build_tags(lance, p, **_):
    lance.write_dataset(small_table(20), p)
    lance.write_dataset(small_table(20, 20), p, mode="append")
    lance.write_dataset(small_table(20, 40), p, mode="append")
    ds = lance.dataset(p)
    ds.tags.create("first", 1)
    ds.tags.create("v2.release", 2)
    ds.tags.create("latest-tag", 3)


def _build_branches(lance, p, **_):
    lance.write_dataset(small_table(20), p)
    lance.write_dataset(small_table(20, 20), p, mode="append")
    ds = lance.dataset(p)
    dev = ds.create_branch("dev")
    lance.write_dataset(small_table(10, 100), dev, mode="append")
    dev = ds.checkout_version(("dev", None))
    dev.create_branch("feature/x/y")
    fx = ds.checkout_version(("feature/x/y", None))
    fx.delete("id = 0")
    ds.tags.create("ondev", ("dev", dev.version))
    lance.write_dataset(small_table(5, 200), p, mode="append")  # main moves on too


def _build_shallow_clone(lance, p, *, extra):
    lance.write_dataset(small_table(30), p)
    lance.write_dataset(small_table(30, 30), p, mode="append")
    lance.dataset(p).delete("id = 1")
    clone = extra["clone"]
    lance.dataset(p).shallow_clone(clone, 2)
    lance.write_dataset(small_table(10, 500), clone, mode="append")


def _build_config_metadata(lance, p, **_):
    lance.write_dataset(small_table(20), p)
    ds = lance.dataset(p)
    ds.update_config({"lance.test.key": "v1", "other": "x"})
    ds.update_metadata({"owner": "conformance"})
    ds.update_schema_metadata({"schema.key": "schema-value"})
    ds.update_field_metadata({"id": {"unit": "count"}}) if hasattr(ds, "update_field_metadata") else None


def _build_scalar_index(lance, p, **_):
    lance.write_dataset(small_table(200), p)
    ds = lance.dataset(p)
    ds.create_scalar_index("id", "BTREE")
    ds.create_scalar_index("category", "BITMAP")


def _build_vector_index(lance, p, **_):
    import numpy as np
    import pyarrow as pa

    rng = np.random.default_rng(7)
    n, dim = 300, 8
    vec = pa.FixedSizeListArray.from_arrays(pa.array(rng.random(n * dim, dtype=np.float32)), dim)
    lance.write_dataset(pa.table({"id": pa.array(np.arange(n)), "vec": vec}), p)
    lance.dataset(p).create_index("vec", "IVF_PQ", num_partitions=2, num_sub_vectors=2)


def _build_v1_manifest_paths(lance, p, **_):
    lance.write_dataset(small_table(20), p, enable_v2_manifest_paths=False)
    lance.write_dataset(small_table(20, 20), p, mode="append")


def _build_migrated_manifest_paths(lance, p, **_):
    lance.write_dataset(small_table(20), p, enable_v2_manifest_paths=False)
    lance.write_dataset(small_table(20, 20), p, mode="append")
    lance.dataset(p).migrate_manifest_paths_v2()
    lance.write_dataset(small_table(20, 40), p, mode="append")


def _build_nested_types(lance, p, **_):
    lance.write_dataset(nested_table(50), p)
    lance.write_dataset(nested_table(20, 50), p, mode="append")


def _build_all_types(lance, p, **_):
    lance.write_dataset(all_types_table(30), p, data_storage_version="2.2")


def _build_commit_message(lance, p, **_):
    lance.write_dataset(small_table(10), p, commit_message="first commit")
    lance.write_dataset(small_table(10, 10), p, mode="append", commit_message="second: append")


_BUILDERS = {
    "version_legacy": lambda lance, p, **k: _build_version(lance, p, "legacy"),
    "version_2_0": lambda lance, p, **k: _build_version(lance, p, "2.0"),
    "version_2_1": lambda lance, p, **k: _build_version(lance, p, "2.1"),
    "version_2_2": lambda lance, p, **k: _build_version(lance, p, "2.2"),
    "version_2_3": lambda lance, p, **k: _build_version(lance, p, "2.3"),
    "append": _build_append,
    "overwrite": _build_overwrite,
    "delete_few": _build_delete_few,
    "delete_many": _build_delete_many,
    "delete_fragment": _build_delete_fragment,
    "update": _build_update,
    "add_columns_expr": _build_add_columns_expr,
    "add_columns_null": _build_add_columns_null,
    "merge": _build_merge,
    "drop_columns": _build_drop_columns,
    "rename_column": _build_rename_column,
    "compaction": _build_compaction,
    "restore": _build_restore,
    "stable_row_ids": _build_stable_row_ids,
    "tags": _build_tags,
    "branches": _build_branches,
    "shallow_clone": _build_shallow_clone,
    "config_metadata": _build_config_metadata,
    "scalar_index": _build_scalar_index,
    "vector_index": _build_vector_index,
    "v1_manifest_paths": _build_v1_manifest_paths,
    "migrated_manifest_paths": _build_migrated_manifest_paths,
    "nested_types": _build_nested_types,
    "commit_message": _build_commit_message,
    "all_types": _build_all_types,
}
assert set(_BUILDERS) == set(SCENARIOS)


# --------------------------------------------------------------------------- recording

def _manifest_pb(ds_dir: str, version: int):
    """Decode the manifest of ``version`` under ``ds_dir`` (V2 or V1 name) with the
    generated bindings: the 16-byte tail gives the manifest offset, a u32 length precedes
    the protobuf."""
    from reference_impl.proto import table_pb2

    versions = os.path.join(ds_dir, "_versions")
    for name in (f"{(1 << 64) - 1 - version:020d}.manifest", f"{version}.manifest"):
        path = os.path.join(versions, name)
        if os.path.exists(path):
            data = Path(path).read_bytes()
            pos = struct.unpack_from("<Q", data, len(data) - 16)[0]
            (length,) = struct.unpack_from("<I", data, pos)
            m = table_pb2.Manifest()
            m.ParseFromString(data[pos + 4: pos + 4 + length])
            return m
    raise FileNotFoundError(f"no manifest for version {version} in {versions}")


def _version_info(lance, ds, ds_dir: str) -> dict:
    m = _manifest_pb(ds_dir, ds.version)
    ids_by_name = {f.name: f.id for f in m.fields if f.parent_id == -1}
    frags = []
    for frag in ds.get_fragments():
        md = frag.metadata
        dfile = md.deletion_file
        frags.append({
            "id": frag.fragment_id,
            "physical_rows": md.physical_rows,
            "num_deletions": frag.num_deletions,
            "deletion_file": None if dfile is None else {
                "read_version": dfile.read_version, "id": dfile.id,
                "num_deleted_rows": dfile.num_deleted_rows,
                "file_type": str(dfile.file_type)},
        })
    return {
        "version": ds.version,
        "data_storage_version": ds.data_storage_version,
        "count_rows": ds.count_rows(),
        "schema": [{"name": f.name, "type": str(f.type), "nullable": f.nullable,
                    "field_id": ids_by_name.get(f.name)} for f in ds.schema],
        "schema_metadata": {k.decode(): v.decode("utf-8", "replace")
                            for k, v in (ds.schema.metadata or {}).items()},
        "field_ids": [f.id for f in m.fields],
        "fields": [{"id": f.id, "parent_id": f.parent_id, "name": f.name,
                    "logical_type": f.logical_type, "nullable": f.nullable} for f in m.fields],
        "fragments": frags,
        "stable_row_ids": bool(m.reader_feature_flags & 2),
        "branch": m.branch if m.HasField("branch") else None,
    }


def _record_track(lance, ds, ds_dir: str) -> dict:
    versions = [v["version"] for v in ds.versions()]
    per = {}
    for v in versions:
        per[str(v)] = _version_info(lance, ds.checkout_version(v), ds_dir)
    return {"path": ds_dir, "versions": versions, "per_version": per}


def _record(lance, name: str, ds_path: str, extra: dict) -> dict:
    ds = lance.dataset(ds_path)
    info = {"name": name, "path": ds_path, "pylance_version": lance.__version__,
            "extra_paths": dict(extra)}
    main = _record_track(lance, ds, ds_path)
    info["versions"] = main["versions"]
    info["per_version"] = main["per_version"]
    info["tags"] = {k: {"branch": v.get("branch"), "version": v.get("version")}
                    for k, v in ds.tags.list().items()}
    branches = ds.branches.list()
    info["branches"] = {k: {"parent_branch": v.get("parent_branch"),
                            "parent_version": v.get("parent_version")}
                        for k, v in branches.items()}
    info["branch_versions"] = {}
    for b in sorted(branches):
        bds = ds.checkout_version((b, None))
        bdir = os.path.join(ds_path, "tree", *b.split("/"))
        info["branch_versions"][b] = _record_track(lance, bds, bdir)
    info["clone"] = None
    if "clone" in extra:
        info["clone"] = _record_track(lance, lance.dataset(extra["clone"]), extra["clone"])
    return info


# --------------------------------------------------------------------------- public API

@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def build_scenario(name: str, root: str | os.PathLike) -> str:
    """Build scenario ``name`` under ``root`` (if not built yet) and return the absolute
    path of its dataset. Usable outside pytest; needs pylance importable."""
    if name not in _BUILDERS:
        raise KeyError(f"unknown scenario {name!r}; known: {', '.join(SCENARIOS)}")
    root = Path(root).absolute()
    sdir = root / name
    ds_path = str(sdir / "ds")
    with _locked(root / f".{name}.lock"):
        if (sdir / SCENARIO_FILE).exists():
            return ds_path
        import lance

        if sdir.exists():  # a half-built leftover
            shutil.rmtree(sdir)
        sdir.mkdir(parents=True)
        extra = {"clone": str(sdir / "clone")} if name == "shallow_clone" else {}
        _BUILDERS[name](lance, ds_path, extra=extra)
        info = _record(lance, name, ds_path, extra)
        tmp = sdir / (SCENARIO_FILE + ".tmp")
        tmp.write_text(json.dumps(info, indent=1, sort_keys=True, default=str))
        os.replace(tmp, sdir / SCENARIO_FILE)
    return ds_path


def scenario_info(ds_path: str | os.PathLike) -> dict:
    """The ``scenario.json`` recorded beside a dataset built by :func:`build_scenario`."""
    return json.loads((Path(ds_path).parent / SCENARIO_FILE).read_text())


class LazyScenarios(Mapping):
    """Mapping name -> dataset path that builds each scenario on first access."""

    def __init__(self, root: str | os.PathLike):
        self.root = Path(root)

    def __getitem__(self, name: str) -> str:
        if name not in _BUILDERS:
            raise KeyError(name)
        return build_scenario(name, self.root)

    def __iter__(self):
        return iter(SCENARIOS)

    def __len__(self) -> int:
        return len(SCENARIOS)

    def info(self, name: str) -> dict:
        return scenario_info(self[name])


@pytest.fixture(scope="session")
def pylance_scenarios(pylance, tmp_path_factory) -> LazyScenarios:
    """Scenario name -> absolute dataset path, built lazily with pylance and cached for
    the session (shared between xdist workers). ``.info(name)`` gives ``scenario.json``."""
    root = os.environ.get("LANCE_CONFORMANCE_SCENARIO_DIR")
    if not root:
        base = tmp_path_factory.getbasetemp()
        if os.environ.get("PYTEST_XDIST_WORKER"):
            base = base.parent  # shared by every worker of this run
        root = str(base / "pylance-scenarios")
    return LazyScenarios(root)


# --------------------------------------------------------------------------- rule helpers

def version_context(ds_path: str | os.PathLike, version: int | None = None):
    """A hand-built ``VersionContext`` for ``version`` (latest when None) of the local
    dataset at ``ds_path``, for running VERSION-scoped checks without the engine."""
    from conformance.rules.context import TableContext, VersionContext
    from reference_impl.io.local import LocalStore
    from reference_impl.table import manifest as mfmod
    from reference_impl.table import versions as vmod

    store = LocalStore(os.path.abspath(ds_path))
    if version is None:
        version = vmod.latest_version(store)
    key = vmod.manifest_key_for(store, version)
    mf = mfmod.read_manifest_file(store, key)
    table = TableContext(uri=str(ds_path), store=store)
    return VersionContext(table=table, version=version, manifest_key=key, mf=mf)


def corrupt_manifest(ds_path: str | os.PathLike, mutate, version: int | None = None) -> None:
    """Rewrite the manifest of ``version`` (latest when None) in place after ``mutate``
    (a function taking the ``Manifest`` message) changed it; framing, transaction and
    index section are kept. Use on a copy of a scenario, never on the shared one."""
    from reference_impl.table import manifest as mfmod

    ctx = version_context(ds_path, version)
    m = ctx.mf.manifest
    mutate(m)
    data = mfmod.encode_manifest_file(m, transaction=ctx.mf.transaction_bytes,
                                      index_section=ctx.mf.index_section)
    Path(ds_path, ctx.manifest_key).write_bytes(data)


def copy_scenario(scenarios, name: str, dest: str | os.PathLike) -> str:
    """Copy scenario ``name``'s dataset to ``dest`` (for corrupting) and return its path.
    Scenarios with base paths (branches, clones) point at absolute paths of the original."""
    src = scenarios[name]
    shutil.copytree(src, dest)
    return str(Path(dest).absolute())


def check(rule_id: str, ctx) -> list:
    """Findings of rule ``rule_id`` on ``ctx`` (a fresh list; the check must not raise)."""
    from conformance.rules import get_rule

    return list(get_rule(rule_id).check(ctx))
