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
``extra["rows_per_zone"]`` is the metadata value (None when absent); ``extra["row_addresses"]``
is True: zones are address ranges whatever the table's row ids, so under stable row ids the
rows are held against the zones by their addresses (pylance 14.0.2 answers a filter through
the zones with row addresses in such a table too).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from reference_impl.errors import FormatError, UnsupportedIndex

KIND = "zonemap"
FILE = "zonemap.lance"
VERSION = "zonemap-v0"
COLUMNS = ("min", "max", "null_count", "nan_count", "fragment_id", "zone_start", "zone_length")
_INTEGER_COLUMNS = ("null_count", "nan_count", "fragment_id", "zone_start", "zone_length")


def read(files, index):
    """Decode ``zonemap.lance`` of ``index`` into an :class:`IndexContent`."""
    from reference_impl.index import IndexContent, need_columns

    if not files.has(FILE):
        raise UnsupportedIndex(f"ZONEMAP index {index.name!r} has no {FILE} (files: "
                               f"{files.names()}); no other layout is known", kind=KIND)
    reader = files.lance_file(FILE)
    need_columns(reader.schema.names, COLUMNS, what=f"ZONEMAP file {FILE}", kind=KIND,
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
                            table.schema.field("min").type), "row_addresses": True})


# ---- holding the zones against the data ----

def zone_of(entries: pa.Table, addresses: np.ndarray) -> np.ndarray:
    """For each row address, the position in ``entries`` of the zone whose range holds it
    (-1: none)."""
    frag = entries.column("fragment_id").to_numpy().astype(np.uint64)
    start = entries.column("zone_start").to_numpy().astype(np.uint64)
    length = entries.column("zone_length").to_numpy().astype(np.uint64)
    key = (frag << np.uint64(32)) + start
    order = np.argsort(key, kind="stable")
    pos = np.searchsorted(key[order], addresses, side="right") - 1
    zone = np.where(pos >= 0, order[np.clip(pos, 0, None)], -1) if len(key) else \
        np.full(len(addresses), -1)
    ok = zone >= 0
    z = np.clip(zone, 0, None)
    if len(key):
        ok &= (frag[z] == addresses >> np.uint64(32))
        ok &= (addresses & np.uint64(0xFFFFFFFF)) < start[z] + length[z]
    return np.where(ok, zone, -1)


RULE_BOUNDS = "INDEX-120"
RULE_OUTSIDE = "INDEX-124"


def addresses_of(data, kind: str) -> np.ndarray:
    """The row addresses of ``data``'s rows (zone indexes answer with addresses). The content
    says ``row_addresses``, so the rows come named by address even under stable row ids;
    data named by stable ids is refused, never read as addresses."""
    if data.stable_row_ids:
        raise UnsupportedIndex(f"{kind} zones are row-address ranges; under stable row ids "
                               "the rows' addresses are not at hand here, so the zones are "
                               "not held against the data", kind=kind.lower())
    return np.asarray(data.row_ids, np.uint64)


def zones_of_rows(entries: pa.Table, addresses: np.ndarray, remap=None) -> np.ndarray:
    """The zone of each row address (-1: none); with ``remap`` (a
    :class:`reference_impl.index.remapped.Remap`), a row a deferred compaction moved is
    looked up at the address it had when the zones were built."""
    zone = zone_of(entries, addresses)
    if remap is not None and (zone < 0).any():
        lost = np.flatnonzero(zone < 0)
        before, moved = remap.backward(addresses[lost])
        again = zone_of(entries, before)
        zone[lost] = np.where(moved, again, -1)
    return zone


def check(content, index, data, remap=None):
    """Yield a :class:`Disagreement` for each way the zones disagree with the rows they
    cover: a live row in no zone, or whose value its zone's statistics exclude (INDEX-120:
    a filter through the index loses it), and a zone on a fragment the index does not cover
    (INDEX-124). ``remap`` translates addresses through a deferred compaction."""
    if remap is None:
        from reference_impl.index.remapped import Remap

        remap = Remap.of_moves(getattr(data, "moves", None))
    import pyarrow.compute as pc

    from reference_impl.index import Disagreement

    entries = content.entries
    addresses = addresses_of(data, "ZONEMAP")
    zone = zones_of_rows(entries, addresses, remap)
    values = data.values
    for i in np.flatnonzero(zone < 0):
        yield Disagreement(RULE_BOUNDS, f"ZONEMAP index {index.name!r}: row "
                           f"{int(addresses[i])} (value {values[int(i)].as_py()!r}) is in no "
                           "zone", int(addresses[i]), None)
    idx = pa.array(np.clip(zone, 0, None))
    lo, hi = entries.column("min").take(idx), entries.column("max").take(idx)
    nulls = entries.column("null_count").take(idx).to_numpy(zero_copy_only=False)
    nans = entries.column("nan_count").take(idx).to_numpy(zero_copy_only=False)
    is_null = values.is_null().to_numpy(zero_copy_only=False)
    floating = pa.types.is_floating(values.type)
    is_nan = (pc.is_nan(values).fill_null(False).to_numpy(zero_copy_only=False) if floating
              else np.zeros(len(values), bool))
    try:
        below = pc.less(values, lo.cast(values.type)).fill_null(False).to_numpy(zero_copy_only=False)
        above = pc.greater(values, hi.cast(values.type)).fill_null(False).to_numpy(zero_copy_only=False)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise UnsupportedIndex(f"ZONEMAP values of type {values.type} are not compared here: "
                               f"{exc}", kind=KIND) from None
    no_stats = lo.is_null().to_numpy(zero_copy_only=False) | hi.is_null().to_numpy(zero_copy_only=False)
    hi_nan = (pc.is_nan(hi.cast(pa.float64())).fill_null(False).to_numpy(zero_copy_only=False)
              if floating else np.zeros(len(values), bool))
    bad = (zone >= 0) & np.where(is_null, nulls == 0,
                                 np.where(is_nan, (nans == 0) & ~hi_nan,
                                          below | above | no_stats))
    for i in np.flatnonzero(bad):
        z = int(zone[i])
        yield Disagreement(
            RULE_BOUNDS, f"ZONEMAP index {index.name!r}: row {int(addresses[i])} holds "
            f"{values[int(i)].as_py()!r}, outside zone {z} (fragment "
            f"{entries.column('fragment_id')[z].as_py()}, rows "
            f"{entries.column('zone_start')[z].as_py()}+{entries.column('zone_length')[z].as_py()}"
            f": min {lo[int(i)].as_py()!r}, max {hi[int(i)].as_py()!r}, nulls {int(nulls[i])})",
            int(addresses[i]), values[int(i)].as_py(), {"zone": z})
    yield from outside_zones(entries, index, data, "ZONEMAP", remap)


def outside_zones(entries: pa.Table, index, data, kind: str, remap=None):
    """A zone on a fragment outside the index's fragment bitmap (INDEX-124); the old
    fragments of a deferred compaction are the new ones' past, not outside, and a zone on a
    fragment the table had and this version no longer holds answers for no row (a stale
    zone of removed rows)."""
    from reference_impl.index import Disagreement

    named = set(np.asarray(data.fragment_ids).tolist()) | \
        set(np.asarray(data.gone_fragment_ids).tolist())
    if remap is not None:
        named |= set(remap.old_fragments)
    starts = entries.column("zone_start").to_pylist()
    for z, f in enumerate(entries.column("fragment_id").to_pylist()):
        if f not in named and not data.removed_fragment(f):
            first = (int(f) << 32) | int(starts[z])  # the first row the zone answers for
            yield Disagreement(RULE_OUTSIDE, f"{kind} index {index.name!r}: zone {z} lies in "
                               f"fragment {f}, which its fragment bitmap does not name (it "
                               f"answers for rows from {first})", first, None,
                               {"zone": z, "fragment": f})
