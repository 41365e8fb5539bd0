"""``validate --cache`` (``conformance/engine/cache.py``): a second run checks only what is
new or changed and reports exactly what a run without the cache reports; a changed object,
kit, rule catalog or selection is never served from the cache."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pyarrow as pa
import pytest

from conformance.cli import main
from conformance.engine import local, validate
from conformance.engine.cache import VerdictCache
from conformance.suite.scenarios import corrupt_manifest

ROOT = Path(__file__).resolve().parents[3]


def _same(a, b) -> None:
    da, db = a.as_dict(), b.as_dict()
    for d in (da, db):
        d.pop("elapsed_s")
        d.pop("stats", None)
    assert da == db


def _append(lance, uri: str, i: int) -> None:
    lance.write_dataset(pa.table({"a": pa.array([2 * i, 2 * i + 1], pa.int64())}), uri,
                        mode="create" if i == 0 else "append")


@pytest.fixture(scope="module")
def history(tmp_path_factory, pylance):
    """12 appends, a deletion, then 3 more appends; fragment 0 names field id 99, which is
    not in the schema (FRAG-010, a warning pylance writes past), in every version, so cached
    units have findings to serve (no schema ever held 99: the table-scope FRAG-013 too)."""
    uri = str(tmp_path_factory.mktemp("cache") / "t")
    for i in range(12):
        _append(pylance, uri, i)
    pylance.dataset(uri).delete("a = 5")
    for i in range(12, 15):
        _append(pylance, uri, i)
    for v in range(1, 17):
        corrupt_manifest(uri, _unknown_field, v)
    return uri


def _unknown_field(m) -> None:
    df = m.fragments[0].files[0]
    df.fields.append(99)
    df.column_indices.append(-1)


@pytest.fixture
def table(history, tmp_path):
    copy = tmp_path / "t"
    shutil.copytree(history, copy)
    return str(copy)


def _data_file(uri: str, fragment: int = 3) -> Path:
    from conformance.suite.scenarios import version_context

    ctx = version_context(uri)
    frag = [f for f in ctx.manifest.fragments if f.id == fragment][0]
    return Path(uri) / "data" / frag.files[0].path


def test_second_run_checks_only_what_is_new(table, tmp_path, pylance):
    cache = str(tmp_path / "cache.json")
    first = validate(table, versions="all", cache=cache)
    assert first.stats["fragment_units"] > 16 and "versions_from_cache" not in first.stats
    _same(first, validate(table, versions="all"))
    again = validate(table, versions="all", cache=cache)
    _same(again, first)
    assert again.stats["versions_from_cache"] == 16 and "manifests_read" not in again.stats
    _append(pylance, table, 15)
    grown = validate(table, versions="all", cache=cache)
    _same(grown, validate(table, versions="all"))
    stats = grown.stats
    # the new version and its one new fragment; the version before is read to follow its
    # fragments (served otherwise), every other version and fragment from the cache
    assert stats["versions_checked"] == 1 and stats["fragment_units"] == 1
    assert stats["versions_from_cache"] == 16 and stats["manifests_read"] == 2
    (f,) = [f for f in grown.warnings if f.rule == "FRAG-010"]
    assert f.versions == ((1, 17),)


def test_a_changed_object_is_checked_again(table, tmp_path):
    cache = str(tmp_path / "cache.json")
    validate(table, versions="all", cache=cache)
    path = _data_file(table)
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF  # the same size, another footer magic
    path.write_bytes(bytes(data))
    os.utime(path, ns=(1, 1))
    again = validate(table, versions="all", cache=cache)
    assert "DATAFILE-003" in again.rules_violated()
    _same(again, validate(table, versions="all"))
    assert again.stats["versions_checked"] > 0 and again.stats["versions_from_cache"] < 16


def test_a_deleted_object_and_a_rewritten_manifest_are_checked_again(table, tmp_path):
    cache = str(tmp_path / "cache.json")
    validate(table, versions="all", cache=cache)
    _data_file(table, 7).unlink()
    corrupt_manifest(table, lambda m: setattr(m, "max_fragment_id", 1), 13)
    again = validate(table, versions="all", cache=cache)
    assert {"DATAFILE-001", "FRAG-002"} <= again.rules_violated()
    _same(again, validate(table, versions="all"))


@pytest.mark.parametrize("change", ["kit", "catalog", "rules", "deep", "garbage", "types"])
def test_a_cache_of_another_kit_catalog_or_selection_is_not_used(table, tmp_path, monkeypatch,
                                                                  change):
    cache = tmp_path / "cache.json"
    validate(table, versions="all", cache=str(cache))
    kwargs = {}
    if change == "kit":
        import conformance

        monkeypatch.setattr(conformance, "__version__", "0.0.0-other")
    elif change == "catalog":
        import dataclasses

        from conformance.rules import registry

        r = registry.get_rule("FRAG-005")
        monkeypatch.setitem(registry._RULES, "FRAG-005",
                            dataclasses.replace(r, severity=registry.Severity.WARNING))
    elif change == "rules":
        kwargs["rules"] = ["FRAG-005", "FRAG-001"]
    elif change == "deep":
        kwargs["deep"] = True
    elif change == "garbage":
        cache.write_bytes(b"\x00not json")
    elif change == "types":
        doc = json.loads(cache.read_text())
        for ref in doc["refs"].values():
            for rec in ref["versions"].values():
                rec["findings"] = [{"rule": 3}]
            for rec in ref["units"].values():
                rec["summary"] = "x"
        cache.write_text(json.dumps(doc))
    again = validate(table, versions="all", cache=str(cache), **kwargs)
    assert again.stats.get("versions_from_cache", 0) == 0
    _same(again, validate(table, versions="all", **kwargs))


def test_deep_run_decodes_only_new_data_files(table, tmp_path, pylance):
    cache = str(tmp_path / "cache.json")
    first = validate(table, versions="all", deep=True, cache=cache)
    assert first.stats["data_files_decoded"] == first.stats["data_files"] == 15
    _append(pylance, table, 15)
    again = validate(table, versions="all", deep=True, cache=cache)
    assert again.stats["data_files_decoded"] == 1
    _same(again, validate(table, versions="all", deep=True))


def test_cache_folder_and_refs(pylance_scenarios, tmp_path):
    uri = pylance_scenarios["branches"]
    folder = tmp_path / "caches"
    first = validate(uri, versions="all", cache=str(folder))
    (name,) = os.listdir(folder)
    assert name.startswith("lance-conformance-") and name.endswith(".json")
    again = validate(uri, versions="all", cache=str(folder))
    _same(again, first)
    # main's versions are served; a branch version carrying fragments inherited from main
    # (under main's root, which a branch's cache does not watch) is checked again
    total = sum(len(v) for v in first.refs_checked.values())
    stats = again.stats
    assert stats["versions_from_cache"] >= len(first.refs_checked["main"])
    assert stats["versions_from_cache"] + stats.get("versions_checked", 0) == total


def test_a_store_without_stamps_is_never_served(tmp_path):
    import reference_impl as ri

    uri = "memory://cache-test-table"
    ri.write_dataset(pa.table({"a": [1, 2]}), uri)
    cache = str(tmp_path / "cache.json")
    validate(uri, versions="all", cache=cache)
    again = validate(uri, versions="all", cache=cache)
    assert again.stats.get("versions_from_cache", 0) == 0


def test_a_run_stopped_by_its_time_limit_keeps_the_cache(table, tmp_path):
    import time

    cache = tmp_path / "cache.json"
    p = local.plan(table, versions="all", cache=str(cache), deadline=time.monotonic() - 1)
    assert any(f.rule == "ENGINE-002" for f in p.findings)
    local.keep(p, [])
    assert not cache.exists()


def test_cli_cache_option(table, tmp_path, capsys):
    cache = str(tmp_path / "c.json")
    # exit 1: no schema of the table ever held id 99 (FRAG-013, a table-scope error)
    assert main(["validate", table, "--all-versions", "--cache", cache, "--format", "json"]) == 1
    first = json.loads(capsys.readouterr().out)
    assert main(["validate", table, "--all-versions", "--cache", cache, "--format", "json"]) == 1
    again = json.loads(capsys.readouterr().out)
    assert again["stats"]["versions_from_cache"] == 16
    assert again["warnings"] == first["warnings"] and first["warnings"]
    assert again["violations"] == first["violations"] and first["violations"]
    f = next(p for p in (Path(table) / "data").iterdir())
    assert main(["validate", str(f), "--cache", cache]) == 2
    assert "--cache" in capsys.readouterr().err


def test_the_cache_file_is_read_with_a_bound(table, tmp_path, monkeypatch):
    from conformance.engine import cache as cache_mod

    path = tmp_path / "cache.json"
    validate(table, versions="all", cache=str(path))
    monkeypatch.setattr(cache_mod, "MAX_CACHE_BYTES", 16)
    opened = VerdictCache.open(str(path), uri=table, rules=[], deep=False)
    assert opened.note.startswith("cannot read the cache") and not opened._loaded


def test_a_version_with_a_unit_the_cache_cannot_keep_is_checked_again(tmp_path, pylance):
    """A branch's fragments inherited from main lie under main's root (a base path), so
    their units are never cached; a branch version carrying one is then not served either,
    else the unit's findings would lose the versions the cache served (long-history
    campaign, pylance 14.0.2: a FRAG-010 warning on a branch named v31-34 instead of
    v30-34)."""
    uri = str(tmp_path / "t")
    pylance.write_dataset(pa.table({"a": pa.array([1, 2, 3], pa.int64()),
                                    "b": pa.array([4, 5, 6], pa.int64())}), uri)
    pylance.dataset(uri).drop_columns(["b"])  # the data file keeps field 1: FRAG-010
    pylance.dataset(uri).create_branch("dev")
    dev = pylance.dataset(uri).checkout_version(("dev", None))
    pylance.write_dataset(pa.table({"a": pa.array([7], pa.int64())}), dev, mode="append")
    cache = str(tmp_path / "cache.json")
    first = validate(uri, versions="all", refs="branch:dev", cache=cache)
    (f,) = [f for f in first.warnings if f.rule == "FRAG-010"]
    assert f.versions == ((2, 3),)
    dev = pylance.dataset(uri).checkout_version(("dev", None))
    pylance.write_dataset(pa.table({"a": pa.array([8], pa.int64())}), dev, mode="append")
    again = validate(uri, versions="all", refs="branch:dev", cache=cache)
    _same(again, validate(uri, versions="all", refs="branch:dev"))
    (f,) = [f for f in again.warnings if f.rule == "FRAG-010"]
    assert f.versions == ((2, 4),)
