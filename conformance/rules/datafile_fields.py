"""DATAFILE-008 (deep): ``DataFile.fields`` against the field ids the data file stores.

A 2.x data file carries its own schema in its ``FileDescriptor`` (global buffer 0): one
``Field`` per field, ids included, in pre-order. ``DataFile.fields`` says which dataset
field each of the file's columns holds and ``column_indices`` where. When the manifest names
a field id the file does not hold, a reader looks the field up, finds no column and returns
nulls for data that is on disk (pylance 14.0.2 does exactly that, without an error).

What stays conforming, as pylance writes it:

* ids of dropped fields (``drop_columns``): the file still holds them;
* the tombstone ``-2`` (a field moved to another file by ``DataReplacement``): no column;
* a file written on its own (``LanceFileWriter``) and attached by ``DataReplacement``: it
  numbers its fields from 0, so a field the manifest names is matched by its name path
  (``parent.child``) when its id is not in the file.

Legacy (0.1) files keep no schema of their own; they are not judged here.
"""

from __future__ import annotations

from .registry import Finding, rule


def _paths(fields) -> dict[int, str]:
    """id -> dotted name path (``st.y.item``) of a flat, parent-linked field list."""
    by_id = {int(f.id): f for f in fields}
    out: dict[int, str] = {}
    for f in fields:
        names, seen, cur = [], set(), f
        while cur is not None and int(cur.id) not in seen:
            seen.add(int(cur.id))
            names.append(cur.name)
            cur = by_id.get(int(cur.parent_id)) if int(cur.parent_id) >= 0 else None
        out[int(f.id)] = ".".join(reversed(names))
    return out


@rule("DATAFILE-008", title="DataFile.fields names field ids the data file itself stores",
      severity="error", spec="004", section="DataFile",
      clause="The ids of the fields/columns in this file. ... -2 is used for \"tombstoned\", "
             "meaning a field that is no longer in use.",
      scope="data_file", deep=True,
      pylance="pylance 14.0.2 reads a field whose id the data file does not hold as nulls, "
              "without an error; a file written by LanceFileWriter and attached with "
              "DataReplacement numbers its own fields from 0, so such a field is matched by "
              "its name path instead of its id", enforces="spec")
def fields_in_file(ctx):
    from .file import container_of

    c, _err = container_of(ctx)
    if c is None or c.is_legacy or c.descriptor is None:
        return  # an unreadable tail is DATAFILE-003's; legacy files keep no schema
    file_fields = c.fields
    position = {int(f.id): i for i, f in enumerate(file_fields) if int(f.id) >= 0}
    file_by_path = {p: position[i] for i, p in _paths(file_fields).items() if i in position}
    schema_paths = _paths(ctx.version.manifest.fields)
    df = ctx.data_file
    indices = list(df.column_indices)
    matched = []
    for i, fid in enumerate(df.fields):
        if fid < 0:
            continue  # -2: tombstone (FRAG-005 judges any other negative id)
        col = indices[i] if i < len(indices) else None
        pos = position.get(int(fid))
        if pos is None and int(fid) in schema_paths:
            pos = file_by_path.get(schema_paths[int(fid)])
        if pos is None:
            yield Finding(f"DataFile.fields names field id {fid} (column index {col}) but the "
                          f"data file stores field ids {sorted(position)}",
                          {"path": ctx.file_key, "field": int(fid)})
            continue
        if col is not None and col >= 0:
            matched.append((pos, col, int(fid)))
    matched.sort()
    for (_p1, c1, f1), (_p2, c2, f2) in zip(matched, matched[1:], strict=False):
        if c2 <= c1:
            yield Finding(f"field {f2} follows field {f1} in the data file's schema but its "
                          f"column index {c2} is not above {c1}: the columns and field ids "
                          f"disagree", {"path": ctx.file_key, "field": f2})
            break
