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

1. Page layout: no valid value -> constant (all-null) layout; the structural
   dictionary test passes -> mini-block with dictionary; the largest value (or FSL
   row) is under :data:`FULL_ZIP_MIN_VALUE_BYTES` -> mini-block; otherwise full-zip.
2. Structural dictionary: variable width and 128-bit fixed width (64-bit too in 2.2)
   with at least :data:`DICT_MIN_VALUES` values, at most
   min(n / :data:`DICT_MAX_CARDINALITY_DIVISOR`, :data:`DICT_MAX_CARDINALITY`) distinct
   values and an estimated encoded size under :data:`DICT_MAX_SIZE_RATIO` of the raw
   size. Items are LZ4-compressed (``general``) in 2.2 only.
3. Fixed-width mini-block values: inline bit-packing when it saves space, else flat.
4. Variable mini-block values: ``variable``.
5. Full-zip values larger than :data:`GENERAL_MIN_VALUE_BYTES`: per-value ZSTD
   (``general``), as pylance does for values over 32 KiB.

Where this writer is simpler than pylance 14.0.2 (all of these decode with the same
reader; FILE-ENCODINGS §5.3 lists the minimums it accepts):

* the 2.0 dictionary test counts distinct values exactly instead of a HyperLogLog
  estimate;
* the 2.1 dictionary test counts distinct values exactly on the whole page instead of
  a 4,096-value sample plus a projection;
* rep/def levels are stored raw (``flat 16``) per chunk, not out-of-line or inline
  bit-packed;
* no FSST for strings (``variable`` only), no RLE and no byte-stream-split;
* 2.2 writes no constant layout for non-null constant pages (mini-block instead);
  the all-null constant layout is written in both 2.1 and 2.2 with raw u16 levels;
* field metadata ``lance-encoding:*`` hints are ignored.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from .encode.arrow_data import fixed_bits, is_variable_width

# 2.0 auto-dictionary for utf8 pages: spec 003 "fewer than 100 unique elements";
# the row minimum is pylance's (FILE-ENCODINGS §2.3, [S]).
DICT_MIN_ROWS_V2_0 = 100
DICT_MAX_CARDINALITY_V2_0 = 100

# 2.1+ structural dictionary (FILE-ENCODINGS §5.2 rule 2, upstream thresholds [S])
DICT_MIN_VALUES = 100
DICT_MAX_CARDINALITY = 100_000
DICT_MAX_CARDINALITY_DIVISOR = 2
DICT_MAX_SIZE_RATIO = 0.8

# mini-block vs full-zip (FILE-ENCODINGS §3.3: values of 256 bytes and more go full-zip [E])
FULL_ZIP_MIN_VALUE_BYTES = 256

# per-value general compression in full-zip (FILE-ENCODINGS §5.1: "utf8 with any value > 32 KiB")
GENERAL_MIN_VALUE_BYTES = 32 * 1024


def use_dictionary_v2_0(arr: pa.Array) -> bool:
    """2.0: utf8 (not large_utf8, not binary) page with >= 100 rows and < 100 distinct values."""
    if not pa.types.is_string(arr.type) or len(arr) < DICT_MIN_ROWS_V2_0:
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


def use_dictionary_v2_1(values: pa.Array, version: str, raw_bytes: int) -> bool:
    """2.1+ structural dictionary test over a page's visible values."""
    n = len(values)
    if n < DICT_MIN_VALUES or not dictionary_eligible_type(values.type, version):
        return False
    distinct = pc.count_distinct(values, mode="only_valid").as_py() + (1 if values.null_count else 0)
    if distinct > min(n // DICT_MAX_CARDINALITY_DIVISOR, DICT_MAX_CARDINALITY):
        return False
    if is_variable_width(values.type):
        avg = raw_bytes / max(n, 1)
        dict_bytes = distinct * (avg + 4)
    else:
        dict_bytes = distinct * fixed_bits(values.type) / 8
    encoded = dict_bytes + n * 4  # i32 indices before bit-packing: a conservative estimate
    return encoded < DICT_MAX_SIZE_RATIO * raw_bytes
