"""SCHEMA-001..049: the field list of ``Manifest.fields`` (spec 001 "Schema"/"Fields").

Fields are listed in depth-first order; each has a unique ``id``, a ``parent_id`` (-1 at
the top level, else the id of an earlier field), a ``name`` and a ``logical_type``:
``int8..int64``, ``uint8..uint64``, ``halffloat``/``float``/``double``, ``bool``, ``null``,
``string``/``binary`` (and ``large_``), ``date32:day``, ``date64:ms``, ``time32:{s,ms}``,
``time64:{us,ns}``, ``timestamp:{unit}[:tz]``, ``duration:{unit}``,
``decimal:{128|256}:{p}:{s}``, ``fixed_size_binary:{n}``, ``fixed_size_list:{type}:{n}``,
``dict:{value}:{index}:{ordered}``, ``list``, ``large_list``, ``struct``, ``blob`` and
``list.struct``/``large_list.struct``. A list has exactly one child; only nested types
(struct, list, large_list, and fixed-size lists of structs) have children.
"""

from __future__ import annotations

import re

from .registry import Finding, rule

_PRIMS = ("null|bool|u?int(8|16|32|64)|halffloat|float|double|string|binary|large_string|"
          "large_binary|date32:day|date64:ms|time32:(s|ms)|time64:(us|ns)|"
          "timestamp:(s|ms|us|ns)(:.*)?|duration:(s|ms|us|ns)|decimal:(128|256):\\d+:-?\\d+|"
          "fixed_size_binary:\\d+|json|blob")
_TYPE = re.compile(
    rf"^(({_PRIMS})|list|large_list|struct|list\.struct|large_list\.struct|map|"
    rf"fixed_size_list:.+:\d+|dict:.+:.+:(true|false))$")
# ``map`` (one ``entries`` struct child of key and value) is written by pylance 14.0.2 for
# Arrow map columns (file version 2.2+); the facts sheet's type list names it not.
NESTED = ("struct", "list", "large_list", "list.struct", "large_list.struct", "map")
LISTS = ("list", "large_list", "list.struct", "large_list.struct")
_SEC = "Fields"


def valid_logical_type(t: str) -> bool:
    return bool(_TYPE.match(t))


def _loc(ctx, f) -> dict:
    return {"path": ctx.manifest_key, "field": int(f.id)}


@rule("SCHEMA-001", title="field ids are unique", severity="error", spec="001", section=_SEC,
      clause="Fields represent the metadata for a column. This includes the name, data type, "
             "id, nullability, and encoding.")
def unique_ids(ctx):
    seen = set()
    for f in ctx.manifest.fields:
        if f.id in seen:
            yield Finding(f"field id {f.id} ({f.name!r}) is used twice", _loc(ctx, f))
        seen.add(f.id)


@rule("SCHEMA-002", title="every parent_id names a field or is -1", severity="error",
      spec="001", section=_SEC,
      clause="Fields are listed in depth first order, and can be one of (1) parent (struct), "
             "(2) repeated (list/array), or (3) leaf (primitive).")
def parents_exist(ctx):
    ids = {f.id for f in ctx.manifest.fields}
    for f in ctx.manifest.fields:
        if f.parent_id != -1 and f.parent_id not in ids:
            yield Finding(f"field {f.name!r} (id {f.id}) names parent {f.parent_id}, which "
                          f"is not a field", _loc(ctx, f))


@rule("SCHEMA-003", title="fields are in depth-first order (parent before child)",
      severity="error", spec="001", section=_SEC,
      clause="Fields are listed in depth first order")
def depth_first(ctx):
    fields = list(ctx.manifest.fields)
    ids = {f.id for f in fields}
    stack: list[int] = []  # ids of the open ancestors of the current position
    for f in fields:
        if f.parent_id == -1:
            stack = [f.id]
            continue
        if f.parent_id not in ids:
            stack = [f.id]
            continue  # SCHEMA-002
        if f.parent_id in stack:
            del stack[stack.index(f.parent_id) + 1:]
            stack.append(f.id)
        else:
            yield Finding(f"field {f.name!r} (id {f.id}) is not listed inside its parent "
                          f"{f.parent_id} (depth-first order)", _loc(ctx, f))
            stack = [f.id]


@rule("SCHEMA-004", title="logical types are valid", severity="error", spec="FACTS",
      section="lance.file.Field",
      clause="5 logical_type (`int64 int32 double float string list struct "
             "fixed_size_list:float:4` ...)",
      refusal='a reader cannot map an unknown logical type to the values it stores')
def logical_types(ctx):
    for f in ctx.manifest.fields:
        if not valid_logical_type(f.logical_type):
            yield Finding(f"field {f.name!r} (id {f.id}) has unknown logical type "
                          f"{f.logical_type!r}", _loc(ctx, f))


def _children(fields) -> dict[int, list]:
    out: dict[int, list] = {}
    for f in fields:
        out.setdefault(f.parent_id, []).append(f)
    return out


@rule("SCHEMA-005", title="a list field has exactly one child", severity="error",
      spec="FACTS", section="lance.file.Field",
      clause="Nested children have their own ids (list -> parent + `item`; struct -> parent + "
             "children)",
      refusal='a list field with other than one child cannot be decoded')
def list_one_child(ctx):
    kids = _children(ctx.manifest.fields)
    for f in ctx.manifest.fields:
        if f.logical_type in LISTS and len(kids.get(f.id, [])) != 1:
            yield Finding(f"list field {f.name!r} (id {f.id}) has "
                          f"{len(kids.get(f.id, []))} children, expected 1", _loc(ctx, f))


@rule("SCHEMA-006", title="only nested fields have children", severity="error",
      spec="FACTS", section="lance.file.Field",
      clause="Nested children have their own ids (list -> parent + `item`; struct -> parent + "
             "children); a fixed-size list is one field.",
      refusal='children under a field that holds no nested values cannot be placed')
def leaf_has_no_children(ctx):
    kids = _children(ctx.manifest.fields)
    for f in ctx.manifest.fields:
        t = f.logical_type
        nested = t in NESTED or (t.startswith("fixed_size_list:") and "struct" in t)
        if not nested and kids.get(f.id) and f.id != -1:
            yield Finding(f"field {f.name!r} (id {f.id}) of type {t!r} has children "
                          f"{[c.id for c in kids[f.id]]}", _loc(ctx, f))


@rule("SCHEMA-007", title="sibling field names are non-empty and unique", severity="error",
      spec="001", section=_SEC,
      clause="Fields represent the metadata for a column. This includes the name")
def sibling_names(ctx):
    seen: dict[tuple[int, str], int] = {}
    for f in ctx.manifest.fields:
        if not f.name:
            yield Finding(f"field id {f.id} has an empty name", _loc(ctx, f))
            continue
        key = (f.parent_id, f.name)
        if key in seen:
            yield Finding(f"fields {seen[key]} and {f.id} share the name {f.name!r} under "
                          f"parent {f.parent_id}", _loc(ctx, f))
        seen.setdefault(key, f.id)


@rule("SCHEMA-008", title="field ids are non-negative", severity="error", spec="004",
      section="DataFile",
      clause="the field ids will be 1, 2, ..., N")
def non_negative_ids(ctx):
    for f in ctx.manifest.fields:
        if f.id < 0:
            yield Finding(f"field {f.name!r} has negative id {f.id}", _loc(ctx, f))
