"""ZONEMAP index: per-zone statistics of a column (``ZoneMapIndexDetails``).

Layout (one Lance file, ``zonemap.lance``, one row per zone), as pylance writes it from the
release that introduced the kind up to 14.0.2::

    min          <value type>   smallest non-null value of the zone (null: no such value)
    max          <value type>   largest non-null value of the zone
    null_count   uint32         rows of the zone whose value is null
    nan_count    uint32         rows of the zone whose value is NaN (float columns)
    fragment_id  uint64         the fragment the zone lies in
    zone_start   uint64         first row offset of the zone in its fragment
    zone_length  uint64         rows of the zone (uint32 in some upstream descriptions)

Schema metadata: ``rows_per_zone`` (the largest zone, default ``"8192"``). A reader answers
a filter with every row *address* ``fragment_id << 32 | offset`` for ``offset`` in
``[zone_start, zone_start + zone_length)`` of each zone whose statistics admit the value, so
a zone must bound every row of its address range (the rows it answers for).

``entries`` is the zone table with the columns above (``min``/``max`` of the column's type);
``extra["rows_per_zone"]`` is the metadata value (None when absent).
"""

from __future__ import annotations

import pyarrow as pa

from reference_impl.errors import FormatError, UnsupportedIndex

KIND = "zonemap"
FILE = "zonemap.lance"
VERSION = "zonemap-v0"
COLUMNS = ("min", "max", "null_count", "nan_count", "fragment_id", "zone_start", "zone_length")
_INTEGER_COLUMNS = ("null_count", "nan_count", "fragment_id", "zone_start", "zone_length")


def read(files, index):
    """Decode ``zonemap.lance`` of ``index`` into an :class:`IndexContent`."""
    from reference_impl.index import IndexContent

    if not files.has(FILE):
        raise UnsupportedIndex(f"ZONEMAP index {index.name!r} has no {FILE} (files: "
                               f"{files.names()}); no other layout is known", kind=KIND)
    reader = files.lance_file(FILE)
    missing = [c for c in COLUMNS if c not in reader.schema.names]
    if missing:
        raise UnsupportedIndex(f"ZONEMAP file {FILE} lacks columns {missing} (has "
                               f"{reader.schema.names}): an unknown layout", kind=KIND,
                               version=",".join(reader.schema.names))
    table = reader.read_all().select(list(COLUMNS))
    for name in _INTEGER_COLUMNS:
        col = table.column(name)
        if not pa.types.is_integer(col.type):
            raise FormatError(f"ZONEMAP column {name} has type {col.type}, not an integer",
                              path=files.key(FILE))
        if col.null_count:
            raise FormatError(f"ZONEMAP column {name} holds {col.null_count} nulls",
                              path=files.key(FILE))
        table = table.set_column(table.schema.get_field_index(name), name,
                                 col.cast(pa.uint64()))
    meta = reader.schema.metadata or {}
    raw = meta.get(b"rows_per_zone")
    rows_per_zone = int(raw) if raw is not None and raw.isdigit() else None
    summary = {"zones": table.num_rows, "rows_per_zone": rows_per_zone,
               "fragments": sorted(set(table.column("fragment_id").to_pylist())),
               "rows": int(pa.compute.sum(table.column("zone_length")).as_py() or 0)}
    return IndexContent(kind=KIND, version=VERSION, entries=table, summary=summary,
                        extra={"rows_per_zone": rows_per_zone, "value_type": str(
                            table.schema.field("min").type)})
