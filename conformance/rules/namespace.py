"""NS-*: the directory namespace (spec 002, REFS-NAMESPACE-COMMIT §9).

Checks receive a :class:`~conformance.rules.context.NamespaceContext` (``store`` rooted at
the namespace root). The ``__manifest`` table is decoded once per run by :func:`manifest`
(and cached): its latest manifest, its Arrow schema and its rows, read with the reference
reader *without* casting to the expected schema, so a wrong schema is reported rather than
hidden. Tables themselves are validated by the table engine
(:func:`conformance.engine.namespace.validate_namespace`), not here.

=======  ========  ===========================================================
id       severity  what
=======  ========  ===========================================================
NS-001   error     ``__manifest`` has the five columns with their types/nullability
NS-002   warning   ``object_id`` carries the primary-key metadata and field 12
NS-003   error     object ids are unique
NS-004   error     ``object_type`` is ``namespace`` or ``table``
NS-005   error     a table row has a location holding a Lance table (or a declared one)
NS-006   error     a namespace row has no location
NS-007   warning   the parent namespace of a nested id exists
NS-008   error     locations are relative and stay inside the root
NS-009   error     ``metadata`` is null or a JSON object
NS-010   warning   table directories are named ``<hash>_<object_id>`` or ``<name>.lance``
NS-011   warning   indexes on ``__manifest``, when present, cover the named columns
NS-012   error     ``__manifest`` can be read as a Lance table
NS-013   error     object ids are made of non-empty names
=======  ========  ===========================================================
"""

from __future__ import annotations

import json
import re

from .registry import Finding, Scope, rule

_S = "002"
_R = "REFS-NAMESPACE-COMMIT"
_NS = Scope.NAMESPACE
_CACHE = "ns.manifest"
MANIFEST = "__manifest"
V2_DIR = re.compile(r"^[0-9a-f]{8}_(?P<oid>.+)$")
EXPECTED = (
    ("object_id", "string", False),
    ("object_type", "string", False),
    ("location", "string", True),
    ("metadata", "string", True),
    ("base_objects", "list<string>", True),
)
PK_KEY = b"lance-schema:unenforced-primary-key:position"


def manifest(ctx) -> dict:
    """``{"exists", "error", "mf", "schema", "rows"}`` of the latest ``__manifest`` version
    (cached). ``error`` is the reason it could not be read."""
    if _CACHE in ctx.cache:
        return ctx.cache[_CACHE]
    out = {"exists": False, "error": None, "mf": None, "schema": None, "rows": None}
    ctx.cache[_CACHE] = out
    from reference_impl.dataset import Dataset
    from reference_impl.scan import to_table
    from reference_impl.table.manifest import read_manifest_file
    from reference_impl.table.schema import fields_to_arrow
    from reference_impl.table.versions import list_versions

    store = ctx.store.child(MANIFEST)
    try:
        entries = list_versions(store)
        if not entries:
            return out
        out["exists"] = True
        entry = entries[-1]
        mf = read_manifest_file(store, entry.key, size=entry.size)
        out["mf"] = mf
        out["schema"] = fields_to_arrow(mf.manifest.fields)
        out["rows"] = to_table(Dataset(store.uri, store, store, None, mf))
    except Exception as exc:  # noqa: BLE001 - reported by NS-012
        out["exists"] = True
        out["error"] = f"{type(exc).__name__}: {exc}"
    return out


def _rows(ctx) -> list[dict]:
    """The rows as dicts of the columns present (empty when unreadable)."""
    m = manifest(ctx)
    if m["rows"] is None:
        return []
    t = m["rows"]
    cols = [c for c in ("object_id", "object_type", "location", "metadata") if c in t.column_names]
    return t.select(cols).to_pylist()


def _type_name(t) -> str:
    import pyarrow as pa

    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return f"list<{_type_name(t.value_type)}>"
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "string"
    return str(t)


def _loc(row: dict, **kw) -> dict:
    out = {"path": MANIFEST, "object_id": row.get("object_id")}
    out.update(kw)
    return out


@rule("NS-001", title="__manifest has the manifest table schema", severity="error",
      spec=_S, section="Manifest Table Schema",
      clause="The __manifest table has the following schema: ... object_id | String ... "
             "object_type | String ... location | String (nullable) ... metadata | String "
             "(nullable) ... base_objects | List",
      scope=_NS)
def manifest_schema(ctx):
    m = manifest(ctx)
    schema = m["schema"]
    if schema is None:
        return
    for name, type_name, nullable in EXPECTED:
        if name not in schema.names:
            yield Finding(f"__manifest has no column {name!r}", {"path": MANIFEST, "column": name})
            continue
        f = schema.field(name)
        got = _type_name(f.type)
        if got != type_name:
            yield Finding(f"column {name!r} is {got}, expected {type_name}",
                          {"path": MANIFEST, "column": name})
        if not nullable and f.nullable:
            yield Finding(f"column {name!r} must be non-nullable", {"path": MANIFEST, "column": name})


@rule("NS-002", title="object_id is marked as the unenforced primary key", severity="warning",
      spec=_R, section="9.3 The `__manifest` table",
      clause='field metadata {"lance-schema:unenforced-primary-key:position": "0"}; the Lance '
             "Field also has field 12 unenforced_primary_key = true",
      scope=_NS)
def primary_key(ctx):
    m = manifest(ctx)
    if m["mf"] is None:
        return
    for f in m["mf"].manifest.fields:
        if f.name == "object_id" and f.parent_id == -1:
            if f.metadata.get(PK_KEY.decode()) != b"0":
                yield Finding("object_id lacks the field metadata "
                              "lance-schema:unenforced-primary-key:position=0",
                              {"path": MANIFEST, "column": "object_id"})
            if not f.unenforced_primary_key:
                yield Finding("object_id's Lance Field has no unenforced_primary_key = true",
                              {"path": MANIFEST, "column": "object_id"})


@rule("NS-003", title="object ids are unique", severity="error", spec=_S,
      section="Manifest Table Schema", clause="object_id | String | Unique identifier for the object.",
      scope=_NS)
def unique_ids(ctx):
    seen: dict[str, int] = {}
    for row in _rows(ctx):
        oid = row.get("object_id")
        seen[oid] = seen.get(oid, 0) + 1
    for oid, n in sorted(seen.items(), key=lambda kv: str(kv[0])):
        if n > 1:
            yield Finding(f"object id {oid!r} appears in {n} rows", {"path": MANIFEST, "object_id": oid})


@rule("NS-004", title="object_type is namespace or table", severity="error", spec=_S,
      section="Manifest Table Schema", clause='object_type | String | Either "namespace" or "table"',
      scope=_NS)
def object_types(ctx):
    for row in _rows(ctx):
        if row.get("object_type") not in ("namespace", "table"):
            yield Finding(f"object_type {row.get('object_type')!r} is neither 'namespace' nor "
                          "'table'", _loc(row))


def _location_problem(location) -> str | None:
    if not isinstance(location, str) or not location:
        return "is empty"
    if "://" in location or location.startswith("/") or re.match(r"^[A-Za-z]:", location):
        return "is absolute or a URI"
    if "\\" in location or "\x00" in location:
        return "contains a backslash or NUL"
    if any(seg in ("", ".", "..") for seg in location.rstrip("/").split("/")):
        return "has an empty, '.' or '..' segment"
    return None


@rule("NS-005", title="a table row's location holds a Lance table", severity="error", spec=_S,
      section="Manifest Table Schema",
      clause="location | String (nullable) | Relative path to the table directory within the "
             "root (only for tables)",
      scope=_NS,
      pylance="declare_table makes a directory holding only .lance-reserved; such a declared "
              "table is accepted here")
def table_locations(ctx):
    for row in _rows(ctx):
        if row.get("object_type") != "table":
            continue
        loc = row.get("location")
        if loc is None or loc == "":
            yield Finding("table row has no location", _loc(row))
            continue
        if _location_problem(loc) is not None:
            continue  # NS-008
        d = loc.rstrip("/")
        has_versions = any(True for _ in ctx.store.list(f"{d}/_versions/"))
        declared = ctx.store.exists(f"{d}/.lance-reserved")
        if not has_versions and not declared:
            anything = any(True for _ in ctx.store.list(f"{d}/"))
            what = "is not a Lance table (no _versions/)" if anything else "does not exist"
            yield Finding(f"location {loc!r} {what}", _loc(row, location=loc))


@rule("NS-006", title="a namespace row has no location", severity="error", spec=_S,
      section="Manifest Table Schema",
      clause="Relative path to the table directory within the root (only for tables)",
      scope=_NS)
def namespace_no_location(ctx):
    for row in _rows(ctx):
        if row.get("object_type") == "namespace" and row.get("location") is not None:
            yield Finding(f"namespace row has location {row.get('location')!r}", _loc(row))


@rule("NS-007", title="the parent namespace of a nested object exists", severity="warning",
      spec=_S, section="Manifest Table Schema",
      clause="For nested objects, this is the namespace path joined by $ delimiter "
             "(e.g., ns1$ns2$table_name)",
      scope=_NS,
      pylance="create_table does not check that the parent namespace exists: ['p','t'] is "
              "created without p (REFS §9.6)",
      enforces="spec")
def parents_exist(ctx):
    rows = _rows(ctx)
    namespaces = {r.get("object_id") for r in rows if r.get("object_type") == "namespace"}
    for row in rows:
        oid = row.get("object_id")
        if not isinstance(oid, str) or "$" not in oid:
            continue
        parent = oid.rsplit("$", 1)[0]
        if parent not in namespaces:
            yield Finding(f"parent namespace {parent!r} of {oid!r} has no namespace row", _loc(row))


@rule("NS-008", title="locations are relative and inside the root", severity="error", spec=_S,
      section="Manifest Table Schema",
      clause="Relative path to the table directory within the root (only for tables)",
      scope=_NS,
      pylance="register_table refuses absolute paths (REFS §9.6)")
def locations_relative(ctx):
    for row in _rows(ctx):
        loc = row.get("location")
        if loc is None:
            continue
        problem = _location_problem(loc)
        if problem:
            yield Finding(f"location {loc!r} {problem}", _loc(row, location=loc))


@rule("NS-009", title="metadata is null or a JSON object", severity="error", spec=_S,
      section="Manifest Table Schema",
      clause="metadata | String (nullable) | JSON-encoded metadata/properties (only for namespaces)",
      scope=_NS,
      pylance="table properties are stored in metadata too (REFS §9.3); not flagged")
def metadata_json(ctx):
    for row in _rows(ctx):
        text = row.get("metadata")
        if text is None:
            continue
        try:
            value = json.loads(text)
        except ValueError as exc:
            yield Finding(f"metadata is not JSON: {exc}", _loc(row))
            continue
        if not isinstance(value, dict):
            yield Finding(f"metadata is JSON {type(value).__name__}, not an object", _loc(row))


@rule("NS-010", title="table directories follow the V2 (or V1 root) naming", severity="warning",
      spec=_S, section="Manifest Table Directory",
      clause="In V2, table data is stored in directories with hash-based names in the format "
             "<hash>_<object_id>.",
      scope=_NS,
      pylance="register_table stores any relative location verbatim; a rename keeps a V2 "
              "directory (its suffix then names the old id)")
def directory_naming(ctx):
    for row in _rows(ctx):
        loc, oid = row.get("location"), row.get("object_id")
        if row.get("object_type") != "table" or not isinstance(loc, str) or not isinstance(oid, str):
            continue
        d = loc.rstrip("/")
        if "$" not in oid and d == f"{oid}.lance":
            continue  # compatibility mode root table
        if not V2_DIR.match(d):
            yield Finding(f"location {loc!r} is neither <8 hex digits>_<object_id> nor "
                          "<name>.lance", _loc(row, location=loc))


_WANTED_INDEXES = (("object_id", "BTree"), ("object_type", "Bitmap"), ("base_objects", "LabelList"))


@rule("NS-011", title="indexes on __manifest cover the named columns", severity="warning",
      spec=_S, section="Manifest Table Indexes",
      clause="The following indexes are created on the manifest table for query performance: "
             "... BTREE index on ... Bitmap index on ... LabelList index on base_objects",
      scope=_NS,
      pylance="no index by default; inline_optimization_enabled=true builds all three at each "
              "commit (REFS §9.5)",
      enforces="pylance")
def manifest_indexes(ctx):
    m = manifest(ctx)
    mf = m["mf"]
    if mf is None or mf.index_section is None or not mf.index_section.indices:
        return
    ids = {f.name: f.id for f in mf.manifest.fields if f.parent_id == -1}
    covered: dict[int, set[str]] = {}
    for im in mf.index_section.indices:
        kind = im.index_details.type_url.rsplit("/", 1)[-1].rsplit(".", 1)[-1]
        for fid in im.fields:
            covered.setdefault(fid, set()).add(kind.lower())
    for column, kind in _WANTED_INDEXES:
        fid = ids.get(column)
        kinds = covered.get(fid, set()) if fid is not None else set()
        if not any(k.startswith(kind.lower()) for k in kinds):
            yield Finding(f"__manifest has indexes but no {kind} index on {column}",
                          {"path": MANIFEST, "column": column})


@rule("NS-012", title="__manifest is a readable Lance table", severity="error", spec=_S,
      section="V2: Manifest",
      clause="V2 uses a special __manifest table (a Lance table) stored in the namespace "
             "directory to track all tables and namespaces.",
      scope=_NS)
def manifest_readable(ctx):
    m = manifest(ctx)
    if m["error"]:
        yield Finding(f"__manifest cannot be read: {m['error']}", {"path": MANIFEST})


@rule("NS-013", title="object ids are made of non-empty names", severity="error", spec=_S,
      section="Manifest Table Schema",
      clause="For root-level objects, this is the name. For nested objects, this is the "
             "namespace path joined by $ delimiter",
      scope=_NS,
      pylance='create_table accepts the name "" (REFS §9.6)', enforces="spec")
def ids_well_formed(ctx):
    for row in _rows(ctx):
        oid = row.get("object_id")
        if not isinstance(oid, str) or oid == "" or any(p == "" for p in oid.split("$")):
            yield Finding(f"object id {oid!r} has an empty name", _loc(row))
        elif "/" in oid:
            yield Finding(f"object id {oid!r} contains '/'", _loc(row))
