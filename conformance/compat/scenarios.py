"""The scenarios of the compatibility matrix: the writer suite's operation scripts, each storage
version a writer accepts, and the options that change what a reader must know.

Every scenario is an operation script (``conformance.harness.scenarios``) plus ``requires``:
the writer features (``Capabilities.features``) without which the writer cannot write it as
meant; a writer lacking one is not asked (the cell says which feature). Scripts without a
``data_storage_version`` let each writer use its own default, as its users do.
"""

from __future__ import annotations

from conformance.harness.scenarios import WRITER_SCENARIOS

STORAGE_VERSIONS = ("legacy", "2.0", "2.1", "2.2", "2.3")

# The matrix judges what each release writes and reads across releases, from 0.10 on; the
# writer suite's filters as users write them (modulo, functions, LIKE, IN, BETWEEN: what
# ``lance-conformance run`` asks of one implementation) are not asked of releases whose
# filter parser may predate them: the matrix's scripts keep the plain comparisons its cells
# were measured with.
PLAIN_FILTERS = {
    "id % 7 = 0": "id < 3",
    "abs(id - 10) < 2": "id = 10",
    "id > 15 AND category NOT IN ('c7', 'c9')": "id > 15",
    "id BETWEEN 7 AND 7": "id = 7",
    "NOT (id >= 10)": "id < 10",
    "id IN (0, 1)": "id < 2",
}


def _plain(script: list[dict]) -> list[dict]:
    return [dict(op, where=PLAIN_FILTERS.get(op["where"], op["where"])) if "where" in op else op
            for op in script]


def _small(n: int, start: int = 0) -> dict:
    return {"gen": "small", "n": n, "start": start}


def _mixed(n: int, start: int = 0, drop: list[str] | None = None) -> dict:
    d = {"gen": "mixed", "n": n, "start": start}
    return {**d, "drop": drop} if drop else d


def _scenarios() -> dict[str, dict]:
    out: dict[str, dict] = {}
    for v in STORAGE_VERSIONS:
        # legacy (0.1) files read an empty binary value back as null in every release and
        # in the reference: a limit of that format, not version skew (docs/compat-matrix.md)
        drop = ["blob"] if v == "legacy" else []
        out[f"storage-{v}"] = {
            "title": f"create and append at data storage version {v}",
            "requires": [f"storage:{v}"],
            "script": [{"op": "create", "data": _mixed(12, drop=drop), "data_storage_version": v},
                       {"op": "append", "data": _mixed(5, 12, drop=drop)}]}
    out["v2-names"] = {"title": "V2 manifest names", "requires": ["v2-manifest-paths"],
                       "script": [{"op": "create", "data": _small(20), "v2_manifest_paths": True},
                                  {"op": "append", "data": _small(5, 20)}]}
    out["delete-bitmap"] = {
        "title": "delete 6000 of 8000 rows (Roaring bitmap deletion file)", "requires": [],
        "script": [{"op": "create", "data": {"gen": "ids", "n": 8000}},
                   {"op": "delete", "where": "id >= 2000"}]}
    out["index"] = {"title": "a BTree scalar index, then an append", "requires": ["index:btree"],
                    "script": [{"op": "create", "data": _small(50)},
                               {"op": "create_index", "column": "id", "index_type": "BTREE"},
                               {"op": "append", "data": _small(5, 50)}]}
    extra = {"write.create-v1-names": ["v1-names"], "write.stable-row-ids": ["stable-row-ids"],
             "write.tag": ["tags"], "write.config": ["config"],
             "write.stale-append": ["stale-append"]}
    skip = {"write.create-2.0", "write.create-2.1"}  # the storage-* scenarios cover them
    for sid, sc in WRITER_SCENARIOS.items():
        if sid in skip:
            continue
        out[sid.removeprefix("write.")] = {"title": sc["title"], "script": _plain(sc["script"]),
                                           "requires": extra.get(sid, [])}
    return out


COMPAT_SCENARIOS: dict[str, dict] = _scenarios()


def storage_variant(sid: str, version: str) -> dict:
    """Scenario ``sid`` with its ``create`` at data storage ``version`` (id ``sid@version``)."""
    base = COMPAT_SCENARIOS[sid]
    script = [dict(op, data_storage_version=version) if op["op"] == "create" else op
              for op in base["script"]]
    return {"title": f"{base['title']} (at storage version {version})", "script": script,
            "requires": sorted(set(base.get("requires", [])) | {f"storage:{version}"})}


def with_storage_variants(sids: list[str]) -> list[str]:
    """``sids`` and, for each one that lets the writer choose, its ``@<version>`` variants."""
    out = list(sids)
    for sid in sids:
        if "@" in sid or sid.startswith("storage-") or not any(
                op["op"] == "create" and "data_storage_version" not in op
                for op in COMPAT_SCENARIOS[sid]["script"]):
            continue
        out += [f"{sid}@{v}" for v in STORAGE_VERSIONS]
    return out


def scenario(sid: str) -> dict:
    """The scenario ``sid``: a name of :data:`COMPAT_SCENARIOS` or ``name@version``.
    Raises KeyError for an unknown one."""
    if sid in COMPAT_SCENARIOS:
        return COMPAT_SCENARIOS[sid]
    name, sep, version = sid.partition("@")
    if sep and name in COMPAT_SCENARIOS and version in STORAGE_VERSIONS:
        return storage_variant(name, version)
    raise KeyError(sid)

#: The ``--quick`` preset: three releases, a few scenarios that show the known breaks.
QUICK_RELEASES = ("pylance==0.20.0", "pylance==0.38.3", "pylance==14.0.2")
QUICK_SCENARIOS = ("storage-2.0", "storage-2.1", "storage-2.2", "v2-names", "delete")

#: The releases of the documented full matrix.
FULL_RELEASES = ("pylance==0.10.18", "pylance==0.20.0", "pylance==0.30.0", "pylance==0.38.3",
                 "pylance==1.0.4", "pylance==4.0.2", "pylance==9.0.1", "pylance==13.0.0",
                 "pylance==14.0.2", "lancedb==0.40.0")
