"""Which encoding the writer picks, following spec 003's encodings table and
FILE-ENCODINGS.md §2.3 / §5 ("What pylance 14.0.2 chooses").

Spec 003, "Encodings Available":

* Dictionary (>= 2.0): "Used on string pages with fewer than 100 unique elements".
* Value / Binary (>= 2.0): fallback for fixed-width / variable-width types.
* Bitpacking (>= 2.1): "Used on integral types".
* Fsst (>= 2.1): "Used on string pages that are not dictionary encoded".

2.0 (FILE-ENCODINGS §2.3): utf8 pages of at least :data:`DICT_MIN_ROWS_V2_0` rows with
fewer than :data:`DICT_MAX_CARDINALITY_V2_0` distinct values use Dictionary; other
strings and binary use Binary; fixed width uses Value (Flat) inside Nullable.

2.1 / 2.2 (FILE-ENCODINGS §5.2):

1. Page layout: no valid value -> constant (all-null) layout; 2.2 only: every valid
   value equal -> constant layout (plain fixed width and strings/binary); the structural
   dictionary test passes -> mini-block with dictionary; the largest value (or FSL
   row) is under :data:`FULL_ZIP_MIN_VALUE_BYTES` -> mini-block; otherwise full-zip.
2. Structural dictionary: variable width and 128-bit fixed width (64-bit too in 2.2)
   with at least :data:`DICT_MIN_VALUES` values, a sample of up to
   :data:`DICT_SAMPLE_SIZE` values less than :data:`DICT_MAX_SAMPLE_UNIQUE` unique, at most
   min(n / :data:`DICT_MAX_CARDINALITY_DIVISOR`, :data:`DICT_MAX_CARDINALITY`) distinct
   values and an estimated encoded size under :data:`DICT_MAX_SIZE_RATIO` of the raw
   size. Items are LZ4-compressed (``general``) in 2.2 only.
3. Fixed-width mini-block values (8/16/32/64-bit): RLE when the page has fewer than
   :data:`RLE_MAX_RUN_RATIO` x n runs, else inline bit-packing when it saves space,
   else flat.
4. Variable mini-block values: FSST (``fsst{variable}``, :mod:`.encode.v2_1.fsst`) for
   utf8 / large_utf8 pages (never the binary types) whose largest value has at least
   :data:`FSST_MIN_MAX_VALUE_BYTES` bytes and whose values hold at least
   :data:`FSST_MIN_PAGE_BYTES` bytes, when it makes the page's bytes smaller; otherwise
   ``variable``. Full-zip utf8 pages (values of 256 bytes up to 32 KiB) use per-value
   ``fsst{variable}`` under the same test.
5. Full-zip values larger than :data:`GENERAL_MIN_VALUE_BYTES`: per-value ZSTD
   (``general``), as pylance does for values over 32 KiB.

Arrow ``dictionary<integer, string|binary>`` fields (top level, in structs and lists) skip
these tests and always take the dictionary path, in pylance 14.0.2's form: 2.0
``dictionary{indices nullable{no_nulls{flat <key width>}}, items binary}`` with the field's
dictionary as items, 0-based indices and a null item for null rows
(``encode/v2_0/dictionary.py``); 2.1+ mini-block with the field's dictionary (null items
dropped, their rows null in the def levels) and indices of the key width, compressed like
any integers of that width (rule 3); an all-null page takes the constant layout
(``encode/v2_1/dictionary.py``). Other dictionary types are written decoded.

Where this writer is simpler than pylance 14.0.2 (all of these decode with the same
reader; FILE-ENCODINGS §5.3 lists the minimums it accepts):

* the 2.0 dictionary test counts distinct values exactly instead of a HyperLogLog
  estimate;
* the 2.1 dictionary test checks an evenly spaced sample of up to 4,096 values for
  < 98 % unique (as pylance) but then counts distinct values exactly on the whole page
  instead of projecting the sample's cardinality;
* mini-block rep/def levels are always out-of-line bit-packed per chunk (pylance uses
  inline bit-packing for pages of at most 1,024 levels);
* pages carrying levels are cut at 4,096 levels (pylance: 65,535), see
  ``encode/v2_1/column.py``;
* FSST symbol tables are trained on a deterministic sample with at most 4 symbols of
  3..8 bytes per 2-byte prefix and no suffix/terminator optimisation, and values are
  tokenised greedily in segments of at most 64 bytes (see ``encode/v2_1/fsst.py``);
  the tokens differ from pylance's, and any valid tokenisation decodes the same;
* byte-stream-split only under a ``lance-encoding:compression`` hint, and there for
  every 32/64-bit fixed-width page unless ``lance-encoding:bss=off`` (pylance decides
  ``bss=auto`` with an entropy heuristic);
* constant pages (2.2) store their levels raw (u16), never RLE/bit-packed; fixed-size
  lists never go constant;
* field metadata hints (``encode/hints.py`` lists each key): honoured are
  ``lance-encoding:packed`` / ``packed`` (packed struct, one column), ``compression``
  (lz4 / zstd / none), ``compression-level``, ``bss``, ``structural-encoding``,
  ``dict-divisor``, ``dict-size-ratio`` and ``dict-values-compression``; under
  ``compression`` strings get ``general`` only when the scheme shrinks the page
  (pylance's exact rule is an open question), 8/16/128-bit values and fixed-size lists
  ignore it; ``rle-threshold`` and ``minichunk-size`` are ignored; ``lance-encoding:blob``
  writes blob columns (``encode/blob.py``) as pylance does, blob v1 in 2.1 and 2.2 too
  (blob v2 comes from the ``lance.blob.v2`` extension type, not written here).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .encode.arrow_data import fixed_bits, is_variable_width, valid_mask, variable_parts

# 2.0 auto-dictionary for utf8 pages: spec 003 "fewer than 100 unique elements";
# the row minimum is pylance's (FILE-ENCODINGS §2.3, [S]).
DICT_MIN_ROWS_V2_0 = 100
DICT_MAX_CARDINALITY_V2_0 = 100

# 2.1+ structural dictionary (FILE-ENCODINGS §5.2 rule 2, upstream thresholds [S])
DICT_MIN_VALUES = 100
DICT_MAX_CARDINALITY = 100_000
DICT_MAX_CARDINALITY_DIVISOR = 2
DICT_MAX_SIZE_RATIO = 0.8
DICT_SAMPLE_SIZE = 4096
DICT_MAX_SAMPLE_UNIQUE = 0.98

# 2.0: a prefix this long is checked first; >= 100 distinct values there settles it
DICT_PREFIX_V2_0 = 1024

# RLE for mini-block fixed-width values (FILE-ENCODINGS §5.2 rule 3, [S])
RLE_MAX_RUN_RATIO = 0.5

# mini-block vs full-zip (FILE-ENCODINGS §3.3: values of 256 bytes and more go full-zip [E])
FULL_ZIP_MIN_VALUE_BYTES = 256

# FSST for utf8 / large_utf8 values (FILE-ENCODINGS §5.2 rule 4, upstream thresholds [S])
FSST_MIN_MAX_VALUE_BYTES = 5
FSST_MIN_PAGE_BYTES = 32 * 1024

# per-value general compression in full-zip (FILE-ENCODINGS §5.1: "utf8 with any value > 32 KiB")
GENERAL_MIN_VALUE_BYTES = 32 * 1024


def use_dictionary_v2_0(arr: pa.Array) -> bool:
    """2.0: utf8 (not large_utf8, not binary) page with >= 100 rows and < 100 distinct values."""
    if not pa.types.is_string(arr.type) or len(arr) < DICT_MIN_ROWS_V2_0:
        return False
    if (
        pc.count_distinct(arr.slice(0, DICT_PREFIX_V2_0), mode="all").as_py()
        >= DICT_MAX_CARDINALITY_V2_0
    ):
        return False
    return pc.count_distinct(arr, mode="all").as_py() < DICT_MAX_CARDINALITY_V2_0


def dictionary_eligible_type(t: pa.DataType, version: str) -> bool:
    """2.1+: variable width, 128-bit fixed width, and 64-bit fixed width in 2.2 only."""
    if is_variable_width(t):
        return True
    if pa.types.is_boolean(t) or pa.types.is_fixed_size_list(t) or pa.types.is_fixed_size_binary(t):
        return False
    try:
        bits = fixed_bits(t)
    except Exception:  # noqa: BLE001
        return False
    return bits == 128 or (bits == 64 and version != "2.1")


def use_dictionary_v2_1(
    values: pa.Array,
    version: str,
    raw_bytes: int,
    *,
    divisor: float = DICT_MAX_CARDINALITY_DIVISOR,
    size_ratio: float = DICT_MAX_SIZE_RATIO,
    fast: bool = True,
) -> bool:
    """2.1+ structural dictionary test over a page's visible values; ``divisor`` and
    ``size_ratio`` come from ``lance-encoding:dict-divisor`` / ``dict-size-ratio``.

    ``fast`` counts the distinct values with :func:`distinct_lower_bound` first (the same
    answer, see there) instead of always with ``pc.count_distinct``."""
    n = len(values)
    if n < DICT_MIN_VALUES or not dictionary_eligible_type(values.type, version):
        return False
    step = max(1, n // DICT_SAMPLE_SIZE)
    at = np.arange(0, n, step)[:DICT_SAMPLE_SIZE]
    words = _raw_words(values) if fast else None
    if words is not None:  # the sample's distinct values by their bits, nulls counting one
        valid = valid_mask(values)
        picked = words[at] if valid is None else words[at[valid[at]]]
        sample_distinct = _count_sorted_distinct(picked) + (len(picked) < len(at))
    else:
        sample_distinct = pc.count_distinct(values.take(pa.array(at)), mode="all").as_py()
    if sample_distinct >= DICT_MAX_SAMPLE_UNIQUE * len(at):
        return False
    limit = min(n // divisor, DICT_MAX_CARDINALITY)
    null = 1 if values.null_count else 0
    if fast:
        bound = distinct_lower_bound(values, limit - null)
        if bound is not None and bound[0] + null > limit:
            return False
        distinct = (
            bound[0]
            if bound is not None and bound[1]
            else pc.count_distinct(values, mode="only_valid").as_py()
        ) + null
    else:
        distinct = pc.count_distinct(values, mode="only_valid").as_py() + null
    if distinct > limit:
        return False
    if is_variable_width(values.type):
        avg = raw_bytes / max(n, 1)
        dict_bytes = distinct * (avg + 4)
    else:
        dict_bytes = distinct * fixed_bits(values.type) / 8
    index_bits = max(1, (distinct - 1).bit_length())  # indices are bit-packed i32
    encoded = dict_bytes + n * index_bits / 8
    return encoded < size_ratio * raw_bytes


_MASKS = np.array([0] + [(1 << (8 * k)) - 1 for k in range(1, 8)] + [2**64 - 1], np.uint64)


def _count_sorted_distinct(keys: np.ndarray) -> int:
    if len(keys) == 0:
        return 0
    keys = np.sort(keys)
    return int(np.count_nonzero(keys[1:] != keys[:-1])) + 1


def _hashed_distinct(keys: np.ndarray) -> int:
    """Distinct buckets of a multiplicative hash of ``keys`` (u64) in a bitmap of about
    16 x len(keys) bits (at most 2**20): equal keys share a bucket, so this never exceeds
    the number of distinct keys, and without sorting."""
    bits = min(20, max(10, int(len(keys)).bit_length() + 4))
    bucket = (keys * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(64 - bits)
    seen = np.zeros(1 << bits, bool)
    seen[bucket.astype(np.intp)] = True
    return int(np.count_nonzero(seen))


def distinct_lower_bound(values: pa.Array, limit: float | None = None) -> tuple[int, bool] | None:
    """``(count, exact)`` for the valid values of ``values``: a lower bound of their number
    of distinct values, exact when ``exact``; None when this cannot tell (use
    ``pc.count_distinct``).

    Each value gets a u64 key, equal values equal keys: for 8- to 64-bit fixed-width values
    their raw bits (Arrow counts distinct values by their bits: 0.0 and -0.0, or two NaN
    payloads, are different values), so the distinct keys are exactly the distinct values;
    for strings and binary a key of the value's length, first and last 8 bytes, so the
    distinct keys are a lower bound. With ``limit``, a bound above it is returned as soon
    as the keys' hash buckets (:func:`_hashed_distinct`, no sort; for strings first over
    the first 1.25 x limit values) exceed it; otherwise the keys are sorted and counted.
    """
    t = values.type
    valid = valid_mask(values)
    if is_variable_width(t):
        offsets, data = variable_parts(values)
        starts, ends = offsets[:-1], offsets[1:]
        if valid is not None:
            starts, ends = starts[valid], ends[valid]
        padded = np.zeros(len(data) + 8, np.uint8)
        padded[: len(data)] = data
        words = np.ndarray((len(data) + 1,), "<u8", padded, 0, (1,))

        def string_keys(starts, ends):
            lengths = ends - starts
            short = _MASKS[np.minimum(lengths, 8)]
            first = words[starts] & short
            last = words[np.maximum(ends - 8, starts)] & short
            return (
                first
                ^ (last * np.uint64(0x9E3779B97F4A7C15))
                ^ (lengths.astype(np.uint64) * np.uint64(0xC2B2AE3D27D4EB4F))
            )

        if limit is not None and len(starts) > 1.25 * limit + 1024:
            # the distinct keys of some of the values bound those of all from below: the
            # first 1.25 x limit already exceed the limit when the values are mostly distinct
            part = int(1.25 * limit) + 1024
            hashed = _hashed_distinct(string_keys(starts[:part], ends[:part]))
            if hashed > limit:
                return hashed, False
        keys = string_keys(starts, ends)
        exact = False
    else:
        keys = _raw_words(values)
        if keys is None:
            return None
        if valid is not None:
            keys = keys[valid]
        keys = keys.astype(np.uint64)
        exact = True
    if limit is not None:
        hashed = _hashed_distinct(keys)
        if hashed > limit:
            return hashed, False
    return _count_sorted_distinct(keys), exact


def maybe_constant(values: pa.Array, fast: bool = True) -> bool:
    """Cheap pre-check for the 2.2 constant layout: a few evenly spaced valid values agree.
    ``fast`` finds them among the valid positions instead of copying the valid values out
    (the same probe)."""
    if not fast:
        valid = values.drop_null() if values.null_count else values
        n = len(valid)
        if n == 0 or pa.types.is_fixed_size_list(valid.type):
            return False
        probe = valid.take(pa.array(sorted({0, n - 1, *range(0, n, max(1, n // 16))}), pa.int64()))
        return pc.count_distinct(probe, mode="all").as_py() == 1
    if pa.types.is_fixed_size_list(values.type):
        return False
    # the probe positions among the valid values, looked up without copying them out
    where = np.flatnonzero(valid_mask(values)) if values.null_count else None
    n = len(values) if where is None else len(where)
    if n == 0:
        return False
    probe = np.array(sorted({0, n - 1, *range(0, n, max(1, n // 16))}), np.int64)
    if where is not None:
        probe = where[probe]
    words = _raw_words(values)
    if words is not None:  # equal bits, as count_distinct compares fixed-width values
        picked = words[probe]
        return bool((picked == picked[0]).all())
    return pc.count_distinct(values.take(pa.array(probe)), mode="all").as_py() == 1


def _raw_words(values: pa.Array) -> np.ndarray | None:
    """The slot bits of 8- to 64-bit fixed-width values as unsigned words (Arrow's
    count_distinct tells such values apart by these bits), or None for other types."""
    t = values.type
    if is_variable_width(t) or pa.types.is_boolean(t) or pa.types.is_fixed_size_list(t):
        return None
    try:
        bits = fixed_bits(t)
    except Exception:  # noqa: BLE001
        return None
    if bits not in (8, 16, 32, 64):
        return None
    from .encode.arrow_data import fixed_values

    return fixed_values(values).view(f"<u{bits // 8}")


def use_fsst(values: pa.Array) -> bool:
    """Rule 4: FSST is tried for a utf8 / large_utf8 page (not binary, not dictionary
    encoded) whose largest value has >= FSST_MIN_MAX_VALUE_BYTES bytes and whose values
    hold >= FSST_MIN_PAGE_BYTES bytes. The encoder still keeps the page plain when the
    compressed bytes would not be smaller."""
    t = values.type
    if not (pa.types.is_string(t) or pa.types.is_large_string(t)) or len(values) == 0:
        return False
    offsets, _ = variable_parts(values)
    if int(offsets[-1] - offsets[0]) < FSST_MIN_PAGE_BYTES:
        return False
    return int(np.diff(offsets).max()) >= FSST_MIN_MAX_VALUE_BYTES
