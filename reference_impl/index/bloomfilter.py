"""BLOOMFILTER index: one split-block Bloom filter per zone of a column.

Layout (one Lance file, ``bloomfilter.lance``, one row per zone), as pylance writes it from
the release that introduced the kind up to 14.0.2::

    fragment_id        uint64   the fragment the zone lies in
    zone_start         uint64   first row offset of the zone in its fragment
    zone_length        uint64   rows of the zone
    has_null           bool     whether a row of the zone is null
    bloom_filter_data  binary   the zone's filter: blocks of 32 bytes

Schema metadata: ``bloomfilter_item`` (values per zone the filter was sized for) and
``bloomfilter_probability`` (its false-positive rate). A reader answers ``column = v`` with
every row address ``fragment_id << 32 | offset``, ``offset`` in ``[zone_start, zone_start +
zone_length)``, of each zone whose filter may hold ``v`` (``IS NULL``: of each zone with
``has_null``), so a zone's filter must hold every non-null value of its rows.

The filter (a split-block Bloom filter). Each 32-byte block is eight little-endian uint32
words. A value is hashed with :func:`reference_impl.index.xxhash64.xxh64` (seed 0) over its
bytes: little-endian bytes of integers, floats, dates, times and timestamps of their width,
the UTF-8 bytes of strings, the bytes of binaries, one byte 0/1 of booleans. With ``h`` the
hash and ``B`` the number of blocks, the value's block is ``((h >> 32) * B) >> 32``, and in
word ``i`` of that block it sets bit ``((low32(h) * SALT[i]) mod 2**32) >> 27``. A filter may
hold the value when all eight bits are set.

``entries`` is the zone table (``bloom_filter_data`` kept as bytes);
``extra`` holds ``items`` and ``probability`` from the metadata (None when absent), and
``row_addresses`` True: zones are address ranges whatever the table's row ids.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from reference_impl.errors import FormatError, UnsupportedIndex

KIND = "bloomfilter"
FILE = "bloomfilter.lance"
VERSION = "bloomfilter-v0"
COLUMNS = ("fragment_id", "zone_start", "zone_length", "has_null", "bloom_filter_data")
BLOCK_BYTES = 32
#: Largest filter of one zone decoded (the writer's own bound is 128 MiB).
MAX_FILTER_BYTES = 128 << 20
SALT = np.array([0x47B6137B, 0x44974D91, 0x8824AD5B, 0xA2B7289D,
                 0x705495C7, 0x2DF1424B, 0x9EFC4947, 0x5C6BFB31], dtype=np.uint32)


def read(files, index):
    """Decode ``bloomfilter.lance`` of ``index`` into an :class:`IndexContent`."""
    from reference_impl.index import IndexContent, need_columns

    if not files.has(FILE):
        raise UnsupportedIndex(f"BLOOMFILTER index {index.name!r} has no {FILE} (files: "
                               f"{files.names()}); no other layout is known", kind=KIND)
    reader = files.lance_file(FILE)
    need_columns(reader.schema.names, COLUMNS, what=f"BLOOMFILTER file {FILE}", kind=KIND,
                 version=",".join(reader.schema.names))
    table = reader.read_all().select(list(COLUMNS))
    path = files.key(FILE)
    for name in ("fragment_id", "zone_start", "zone_length"):
        col = table.column(name)
        if not pa.types.is_integer(col.type) or col.null_count:
            raise FormatError(f"BLOOMFILTER column {name} ({col.type}, {col.null_count} nulls) "
                              "is not a non-null integer column", path=path)
        table = table.set_column(table.schema.get_field_index(name), name, col.cast(pa.uint64()))
    for i, data in enumerate(table.column("bloom_filter_data").to_pylist()):
        if data is None or len(data) % BLOCK_BYTES or not data or len(data) > MAX_FILTER_BYTES:
            raise FormatError(f"BLOOMFILTER zone {i}: filter of "
                              f"{None if data is None else len(data)} bytes is not a positive "
                              f"multiple of {BLOCK_BYTES} up to {MAX_FILTER_BYTES}", path=path)
    meta = reader.schema.metadata or {}

    def number(key: bytes):
        raw = meta.get(key)
        try:
            return float(raw) if raw is not None else None
        except ValueError:
            return None

    summary = {"zones": table.num_rows,
               "fragments": sorted(set(table.column("fragment_id").to_pylist())),
               "rows": int(pa.compute.sum(table.column("zone_length")).as_py() or 0)}
    return IndexContent(kind=KIND, version=VERSION, entries=table, summary=summary,
                        extra={"items": number(b"bloomfilter_item"),
                               "probability": number(b"bloomfilter_probability"),
                               "row_addresses": True})


def may_contain(filter_bytes: bytes, hashes: np.ndarray) -> np.ndarray:
    """For each 64-bit hash, whether the split-block filter ``filter_bytes`` may hold it."""
    words = np.frombuffer(filter_bytes, dtype="<u4").reshape(-1, 8)
    hashes = np.asarray(hashes, dtype=np.uint64)
    blocks = (((hashes >> np.uint64(32)) * np.uint64(len(words))) >> np.uint64(32)).astype(np.int64)
    low = (hashes & np.uint64(0xFFFFFFFF)).astype(np.uint32)
    with np.errstate(over="ignore"):
        bits = (low[:, None] * SALT[None, :]) >> np.uint32(27)
    masks = np.left_shift(np.uint32(1), bits.astype(np.uint32))
    return np.all((words[blocks] & masks) != 0, axis=1)


def value_hashes(array: pa.Array):
    """``(hashes, valid)``: the XXH64 of each value of ``array`` as the filter hashes it and
    which values are non-null (a null's hash is 0 and meaningless); None for a type whose
    hashing is not known here (then no filter check is made)."""
    from reference_impl.index.xxhash64 import xxh64_many, xxh64_rows

    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    t = array.type
    valid = array.is_valid().to_numpy(zero_copy_only=False)
    if pa.types.is_dictionary(t):
        array, t = array.cast(t.value_type), t.value_type
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        values = [b"" if v is None else v.encode("utf-8") for v in array.to_pylist()]
        return xxh64_many(values), valid
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        values = [b"" if v is None else v for v in array.to_pylist()]
        return xxh64_many(values), valid
    if pa.types.is_boolean(t):
        raw = array.fill_null(False).to_numpy(zero_copy_only=False).astype(np.uint8)
        return xxh64_rows(raw.reshape(-1, 1)), valid
    if (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_date(t)
            or pa.types.is_time(t) or pa.types.is_timestamp(t)) and not pa.types.is_float16(t):
        width = t.bit_width // 8
        storage = array.view({8: pa.int64(), 4: pa.int32(), 2: pa.int16(), 1: pa.int8()}[width])
        raw = np.ascontiguousarray(storage.fill_null(0).to_numpy(zero_copy_only=False)
                                   .astype(f"<i{width}"))
        return xxh64_rows(raw.view(np.uint8).reshape(len(array), width)), valid
    return None


# ---- holding the filters against the data ----

RULE_FILTER = "INDEX-121"


def check(content, index, data, remap=None):
    """Yield a :class:`Disagreement` for each way the filters disagree with the rows they
    cover: a live row in no zone, a value its zone's filter does not hold, a null in a zone
    without ``has_null`` (INDEX-121: a filter through the index loses the row), and a zone
    on a fragment the index does not cover (INDEX-124). ``remap`` translates addresses
    through a deferred compaction."""
    if remap is None:
        from reference_impl.index.remapped import Remap

        remap = Remap.of_moves(getattr(data, "moves", None))
    from reference_impl.index import Disagreement
    from reference_impl.index.zonemap import addresses_of, outside_zones, zones_of_rows

    entries = content.entries
    addresses = addresses_of(data, "BLOOMFILTER")
    hashed = value_hashes(data.values)
    if hashed is None:
        raise UnsupportedIndex(f"BLOOMFILTER values of type {data.values.type} are not hashed "
                               "here: the filters are not held against the data", kind=KIND)
    hashes, valid = hashed
    zone = zones_of_rows(entries, addresses, remap)
    for i in np.flatnonzero(zone < 0):
        yield Disagreement(RULE_FILTER, f"BLOOMFILTER index {index.name!r}: row "
                           f"{int(addresses[i])} (value {data.values[int(i)].as_py()!r}) is in "
                           "no zone", int(addresses[i]), None)
    has_null = entries.column("has_null").to_numpy(zero_copy_only=False)
    filters = entries.column("bloom_filter_data").to_pylist()
    for z in np.unique(zone[zone >= 0]):
        here = zone == z
        miss = np.zeros(len(zone), bool)
        sel = here & valid
        miss[np.flatnonzero(sel)[~may_contain(filters[z], hashes[sel])]] = True
        if not has_null[z]:
            miss |= here & ~valid
        for i in np.flatnonzero(miss):
            v = data.values[int(i)].as_py()
            yield Disagreement(
                RULE_FILTER, f"BLOOMFILTER index {index.name!r}: row {int(addresses[i])} "
                f"holds {v!r}, which the filter of zone {int(z)} (fragment "
                f"{entries.column('fragment_id')[int(z)].as_py()}, rows "
                f"{entries.column('zone_start')[int(z)].as_py()}+"
                f"{entries.column('zone_length')[int(z)].as_py()}) does not hold",
                int(addresses[i]), v, {"zone": int(z)})
    yield from outside_zones(entries, index, data, "BLOOMFILTER", remap)
