"""The reference reader against pylance 14.0.2 on every scenario and every version:
``reference_impl.open_dataset(path, version=v)`` must report what pylance reported
(recorded in each scenario's ``scenario.json`` by ``conformance/suite/scenarios.py``):
versions, schema (names, types, nullability, field ids), fragments (ids, physical rows,
deletions), row counts, tags, branches and the data storage version. A subset is also
copied into fresh buckets on moto and SeaweedFS and compared through ``s3://`` URIs."""

from __future__ import annotations

import os

import pytest

from conformance.suite.scenarios import SCENARIOS, scenario_info
from reference_impl.table.schema import FIELD_ID_KEY, field_ids_of

# Scenarios without absolute base paths (branches and clones point at local paths),
# so that a copy in a bucket is a complete dataset.
S3_SCENARIOS = ["version_legacy", "version_2_2", "delete_many", "stable_row_ids", "tags",
                "migrated_manifest_paths", "nested_types"]


def _open(uri, version=None, *, branch=None, storage_options=None):
    from reference_impl.dataset import open_dataset

    return open_dataset(uri, version, branch=branch, storage_options=storage_options)


def _nested_ids(schema) -> list[int]:
    """``lance:field_id`` of every Arrow field, children included, depth first: checks
    that the Arrow form nests each manifest field where the manifest puts it."""
    import pyarrow as pa

    out: list[int] = []

    def walk(f):
        out.append(int((f.metadata or {}).get(FIELD_ID_KEY, b"-1")))
        t = f.type
        if pa.types.is_map(t):
            out.append(-2)  # the entries struct: not visible in pyarrow's map type
            walk(t.key_field)
            walk(t.item_field)
        elif pa.types.is_list(t) or pa.types.is_large_list(t):
            walk(t.value_field)
        elif pa.types.is_struct(t):
            for i in range(t.num_fields):
                walk(t.field(i))

    for f in schema:
        walk(f)
    return out


def _observed(ds) -> dict:
    """Our reader's answers, shaped like a scenario.json VersionInfo."""
    schema = ds.schema
    ids = field_ids_of(schema)
    frags = []
    for f in ds.get_fragments():
        frags.append({"id": f.fragment_id, "physical_rows": f.physical_rows,
                      "num_deletions": f.num_deletions})
    return {
        "version": ds.version,
        "data_storage_version": ds.data_storage_version,
        "count_rows": ds.count_rows(),
        "schema": [{"name": f.name, "type": str(f.type), "nullable": f.nullable, "field_id": i}
                   for f, i in zip(schema, ids, strict=True)],
        "field_ids": [f.id for f in ds.lance_schema],
        "nested_ids": _nested_ids(schema),
        "schema_metadata": {k.decode(): v.decode("utf-8", "replace")
                            for k, v in (schema.metadata or {}).items()},
        "fragments": frags,
    }


def _expected(info: dict) -> dict:
    out = {k: info[k] for k in ("version", "data_storage_version", "count_rows", "schema",
                                "field_ids")}
    out["fragments"] = [{k: f[k] for k in ("id", "physical_rows", "num_deletions")}
                        for f in info["fragments"]]
    out["schema_metadata"] = info["schema_metadata"]
    # map entries structs have no Arrow field of their own (-2 above)
    parents = {f["id"]: f for f in info["fields"]}
    out["nested_ids"] = [-2 if f["logical_type"] == "struct" and f["parent_id"] in parents
                         and parents[f["parent_id"]]["logical_type"] == "map" else f["id"]
                         for f in info["fields"]]
    return out


def _compare_track(uri: str, track: dict, *, branch=None, storage_options=None) -> int:
    """Compare every version of one track (main, a branch or a clone); returns how many."""
    latest = _open(uri, branch=branch, storage_options=storage_options)
    assert latest.versions() == track["versions"], uri
    for v in track["versions"]:
        ds = _open(uri, v, branch=branch, storage_options=storage_options)
        assert _observed(ds) == _expected(track["per_version"][str(v)]), (uri, branch, v)
    return len(track["versions"])


def _compare_refs(ds, info: dict) -> None:
    tags = {n: {"branch": t.get("branch"), "version": t.get("version")}
            for n, t in ds.tags.list().items()}
    assert tags == info["tags"]
    branches = {n: {"parent_branch": b.get("parent_branch"), "parent_version": b.get("parent_version")}
                for n, b in ds.branches.list().items()}
    assert branches == info["branches"]


@pytest.mark.parametrize("name", SCENARIOS)
def test_scenario_matches_pylance(pylance_scenarios, name):
    path = pylance_scenarios[name]
    info = scenario_info(path)
    compared = _compare_track(path, info)
    _compare_refs(_open(path), info)
    for branch, track in info["branch_versions"].items():
        compared += _compare_track(path, track, branch=branch)
    if info.get("clone"):
        compared += _compare_track(info["clone"]["path"], info["clone"])
    for tag, ref in info["tags"].items():  # a tag opens the version it names
        ds = _open(path, tag)
        assert ds.version == ref["version"]
        assert (ds.branch or None) == (ref["branch"] if ref["branch"] != "main" else None)
    assert compared >= len(info["versions"])


def _upload(local_root: str, bucket, prefix: str) -> str:
    """Copy a local dataset into ``bucket`` under ``prefix`` with boto3."""
    import boto3

    opts = bucket.storage_options
    client = boto3.client(
        "s3", endpoint_url=opts.get("aws_endpoint") or opts.get("endpoint"),
        aws_access_key_id=opts.get("aws_access_key_id"),
        aws_secret_access_key=opts.get("aws_secret_access_key"),
        region_name=opts.get("aws_region", "us-east-1"))
    for dirpath, _, files in os.walk(local_root):
        for fname in files:
            full = os.path.join(dirpath, fname)
            key = f"{prefix}/{os.path.relpath(full, local_root)}"
            client.upload_file(full, bucket.name, key)
    return f"{bucket.uri}/{prefix}"


@pytest.mark.s3
@pytest.mark.parametrize("s3_bucket", ["moto", pytest.param("seaweedfs", marks=pytest.mark.slow)],
                         indirect=True)
def test_scenarios_on_s3(pylance_scenarios, s3_bucket):
    for name in S3_SCENARIOS:
        path = pylance_scenarios[name]
        info = scenario_info(path)
        uri = _upload(path, s3_bucket, name)
        _compare_track(uri, info, storage_options=s3_bucket.storage_options)
        _compare_refs(_open(uri, storage_options=s3_bucket.storage_options), info)
