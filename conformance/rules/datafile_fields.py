"""DATAFILE-008 and DATAFILE-011 (deep): ``DataFile.fields`` and ``column_indices`` against
the data file.

A 2.x data file stores its fields' columns; ``DataFile.fields`` says which dataset field each
entry is and ``column_indices`` at which column it starts: "To determine column indices the
column_indices property should be used instead" (spec 004, DataFile). Readers do so: pylance
decodes the column a field's index names as that field, whatever the file's own schema calls
it, and so does the reference reader (:func:`reference_impl.scan.file_field_of`).

* **DATAFILE-008** (error): a field's column index must be the first column of a field the
  file stores, of the same shape (types, nesting; names aside; a blob v2 column is stored as
  its descriptors). Otherwise no reader can decode it: pylance 14.0.2 fails ("invalid
  variable-width layout for Int64"; "there were more fields in the schema than provided
  column indices" where it appended a blob v1 column's scanned descriptions, a struct,
  under the blob's id), the reference reader raises DATAFILE-008.
* **DATAFILE-011** (warning): the file's own schema numbers that field with another id. A
  file written on its own (``LanceFileWriter``) and attached with ``DataReplacement`` or as
  a data overlay numbers its fields from 0, as upstream's own tests make them; every release
  reads such a table. The warning only says that the file's ids are not the dataset's.

What stays silent, as pylance writes it: ids of dropped fields (the file still holds them),
the tombstone ``-2``, a field the file holds under another name (a rename), a struct the file
holds some children of (an append of ``{"b": 4}`` to a ``struct<b, a>`` column: children
are matched by field id and the others read as nulls). Legacy (0.1)
files and 2.0 files of releases before 0.16 list no column indices; they are not judged here.
"""

from __future__ import annotations

from reference_impl.errors import FormatError, LanceError

from .registry import Finding, rule

_CLAUSE = ("The top-level column indices for each field in the file. ... To determine column "
           "indices the column_indices property should be used instead.")


def _mapping(ctx) -> list[tuple]:
    """``[(dataset field, file field or None, error or None)]`` for every top-level field of
    the version's schema that the data file holds (cached on the context)."""
    if "datafile_mapping" in ctx.cache:
        return ctx.cache["datafile_mapping"]
    from reference_impl.scan import _subtree_ids, check_same_shape, column_of, file_field_of
    from reference_impl.table.blob import is_blob_v2, stored_field
    from reference_impl.table.schema import fields_to_arrow

    from .file import reader_of

    out: list[tuple] = []
    ctx.cache["datafile_mapping"] = out
    df = ctx.data_file
    reader, _err = reader_of(ctx)
    if reader is None or reader.legacy is not None or not len(df.column_indices):
        return out  # an unreadable file is DATAFILE-003's / FILE-*'s; legacy: no indices
    try:
        schema = fields_to_arrow(list(ctx.version.manifest.fields))
    except (FormatError, LanceError, ValueError, TypeError, KeyError):
        return out  # a schema that does not convert is the SCHEMA rules'
    listed = {int(i) for i in df.fields}
    for f in schema:
        if not listed & _subtree_ids(f) or column_of(df, f) is None:
            continue
        try:
            stored = reader.schema.field(file_field_of(df, reader, f, ctx.file_key))
            if not is_blob_v2(f):  # (a blob v2 column is stored as its descriptors,
                check_same_shape(stored, stored_field(f), ctx.file_key)  # nested ones too)
        except FormatError as exc:
            if exc.rule == "DATAFILE-008":  # others (a column walk that fails) are FILE-*'s
                out.append((f, None, exc))
            continue
        out.append((f, stored, None))
    return out


def _id(f) -> bytes | None:
    return (f.metadata or {}).get(b"lance:field_id")


@rule("DATAFILE-008", title="column_indices point at columns of fields of the same shape",
      severity="error", spec="004", section="DataFile", clause=_CLAUSE,
      scope="data_file", deep=True,
      pylance="pylance 14.0.2 decodes the column a field's index names as that field and "
              "fails when it holds another type",
      enforces="spec")
def columns_of_fields(ctx):
    for f, _stored, exc in _mapping(ctx):
        if exc is not None:
            yield Finding(exc.message,
                          {"path": ctx.file_key, "field": f.name})


@rule("DATAFILE-011", title="the data file numbers its fields as DataFile.fields does",
      severity="warning", spec="004", section="DataFile", clause=_CLAUSE,
      scope="data_file", deep=True,
      releases="a file written on its own (LanceFileWriter) and attached with DataReplacement "
               "or as a data overlay numbers its fields from 0 (upstream's tests do this; "
               "pylance 0.2x to 14.0.2 read such tables by column_indices); every table file "
               "a release writes itself carries the dataset's ids")
def file_ids_match(ctx):
    for f, stored, _exc in _mapping(ctx):
        if stored is None:
            continue
        own, want = _id(stored), _id(f)
        if own is not None and own != want:
            yield Finding(f"the data file numbers the field at the column of {f.name!r} "
                          f"{int(own)}, DataFile.fields says {int(want)}; readers go by "
                          f"column_indices", {"path": ctx.file_key, "field": f.name})
