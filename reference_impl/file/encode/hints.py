"""Field-metadata encoding hints (``lance-encoding:*``) and what this writer does with them.

Spec 003's encodings table: packed struct is "Only used on struct types if the field
metadata attribute "packed" is set to "true"" (>= 2.0). FILE-ENCODINGS.md §1.1, §2.3,
§5.1 and §5.2 list what pylance 14.0.2 does with the other keys; where the facts sheet is
silent the behaviour below was observed on pylance 14.0.2 output (recorded in
``conformance/suite/file/test_encoding_hints.py``).

Every key, its values and the writer's use of it:

``lance-encoding:packed`` (also the bare key ``packed``), ``true`` / ``false``
    (case-insensitive). On a struct field: ``true`` writes the struct as **one column**
    of row-major packed rows (FILE-ENCODINGS §1.1, §2.2 ``PackedStruct``, §4.11): 2.0
    ``packed_struct{inner flats, buffer}``; 2.1/2.2 mini-block ``packed_struct{bits,
    flat Σbits}`` with struct nulls as a def layer. Children must be byte-aligned fixed
    width (integers, floats, decimals, temporal types, fixed-size binary) without nulls
    of their own; 2.2 also takes variable-width children (full-zip
    ``variable_packed_struct``, §4.12). Anything else is refused with
    :class:`~reference_impl.errors.InvalidInput`, as pylance refuses it (see
    :mod:`.v2_1.packed_struct`). On a non-struct field the key is ignored.
``lance-encoding:compression``: ``lz4``, ``zstd`` or ``none`` (exact lower case, as
    pylance matches them; ``ZSTD`` is "Unknown compression scheme" there too).
    2.0 (FILE-ENCODINGS §2.3): string/binary pages written as ``Binary`` get their
    bytes Flat ``compression{scheme, level?}`` (``none`` is recorded as the scheme and
    the bytes stay raw); fixed-width pages and dictionary pages ignore it.
    2.1/2.2 mini-block (§5.2 rule 3): 32/64-bit fixed-width values become
    ``general{scheme, level?}{byte_stream_split{flat}}`` (BSS unless ``bss=off``, then
    the usual bit-packing/flat choice inside ``general``); this also applies to
    dictionary indices. Other widths (bool, 8, 16, 128 bits) and fixed-size lists are
    left alone, as pylance leaves them. Variable-width values skip FSST and become
    ``general{scheme}{variable}`` when compressing the page's bytes with the scheme
    shrinks them, plain ``variable`` otherwise (pylance 14.0.2 kept ``variable`` for
    incompressible strings under LZ4, §5.1 and open question 4). Full-zip strings get
    per-value ``general{ZSTD, level 0}{variable}`` for either scheme, as pylance writes.
    ``none``: mini-block values stay ``flat``/``variable`` (no RLE, bit-packing, BSS,
    FSST or general) and full-zip strings are never compressed.
``lance-encoding:compression-level``: an integer. With ``compression`` set it goes into
    ``Compression.level`` (2.0) / ``general.compression.level`` (mini-block) and is the
    zstd level used; without ``compression`` it is ignored (pylance ignores it too).
``lance-encoding:bss``: ``off``, ``on`` or ``auto``. Only matters with
    ``compression=lz4|zstd`` on 32/64-bit fixed-width mini-block values: ``off`` keeps
    BSS out, ``on`` and ``auto`` use it (pylance decides ``auto`` with an entropy
    heuristic the facts do not give, FILE-ENCODINGS open question 5; it chose BSS for
    integers and not for uniform float64). pylance only warns on another value ("Invalid
    BSS mode ..., using default"); this writer refuses it.
``lance-encoding:structural-encoding``: ``miniblock`` or ``fullzip`` (2.1/2.2).
    ``fullzip`` puts a page in the full-zip layout unless it is all-null, constant (2.2)
    or passes the dictionary test (pylance 14.0.2 keeps dictionary pages mini-block);
    ``miniblock`` keeps values of 256 bytes and more in mini-block chunks, as pylance
    does, up to 8 KiB per value (``MINIBLOCK_HINT_MAX_VALUE_BYTES`` in
    ``v2_1/column.py``; wider values still go full-zip, where pylance refuses them:
    "Value is too wide for miniblock encoding"). 2.0 ignores the key.

``lance-encoding:dict-divisor`` (a positive integer, default 2) and
``lance-encoding:dict-size-ratio`` (a positive number, default 0.8): the 2.1/2.2
    structural dictionary test (FILE-ENCODINGS §5.2 rule 2) takes at most
    ``n / dict-divisor`` distinct values and an estimated size under ``dict-size-ratio`` x
    the raw size (``dict-divisor=100`` or ``dict-size-ratio=0.01`` turn a 100-value
    string page away from the dictionary in pylance 14.0.2 too). pylance silently
    ignores an unparsable value; this writer refuses it.
``lance-encoding:dict-values-compression``: ``lz4``, ``zstd`` or ``none``. 2.2 wraps
    the dictionary block in ``general{LZ4}`` by default; ``zstd`` makes it
    ``general{ZSTD}``, ``none`` leaves it raw. 2.1 never compresses the dictionary (as
    pylance 14.0.2).

Known keys this writer does **not** honour (accepted and ignored, values unchecked):
``lance-encoding:rle-threshold`` and ``lance-encoding:minichunk-size`` (tuning knobs of
pylance's selection whose exact effect the facts do not give). Unknown
``lance-encoding:`` keys are ignored too, as pylance ignores them.

``lance-encoding:blob`` (any value, as pylance 14.0.2's file writer only looks for the
key) is honoured by :mod:`.blob`, not here: a top-level ``large_binary`` field becomes a
blob column (2.0 ``ColumnEncoding.blob`` + packed (position, size) descriptors; 2.1/2.2
``blob_layout``, blob v1) with its values as separate 64-aligned buffers; other types
are refused.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

from ...errors import InvalidInput

PREFIX = "lance-encoding:"
PACKED = "lance-encoding:packed"
PACKED_LEGACY = "packed"
COMPRESSION = "lance-encoding:compression"
COMPRESSION_LEVEL = "lance-encoding:compression-level"
DICT_DIVISOR = "lance-encoding:dict-divisor"
DICT_SIZE_RATIO = "lance-encoding:dict-size-ratio"
DICT_VALUES_COMPRESSION = "lance-encoding:dict-values-compression"
BSS = "lance-encoding:bss"
STRUCTURAL_ENCODING = "lance-encoding:structural-encoding"

#: keys pylance 14.0.2 knows that this writer accepts but does not act on
IGNORED_KEYS = (
    "lance-encoding:rle-threshold",
    "lance-encoding:minichunk-size",
)

COMPRESSION_SCHEMES = ("lz4", "zstd", "none")
BSS_MODES = ("off", "on", "auto")
STRUCTURAL_ENCODINGS = ("miniblock", "fullzip")


@dataclass(frozen=True)
class EncodingHints:
    """The hints of one field, validated. ``None`` means "not given"."""

    packed: bool = False
    compression: str | None = None  # "lz4" | "zstd" | "none"
    compression_level: int | None = None
    bss: str = "auto"
    structural_encoding: str | None = None
    dict_divisor: int | None = None
    dict_size_ratio: float | None = None
    dict_values_compression: str | None = None  # "lz4" | "zstd" | "none"

    @property
    def compresses(self) -> bool:
        """True when a real scheme (lz4 / zstd) was requested."""
        return self.compression in ("lz4", "zstd")

    @property
    def use_bss(self) -> bool:
        return self.compresses and self.bss != "off"

    def dictionary_thresholds(self) -> dict:
        """Keyword overrides for :func:`reference_impl.file.selection.use_dictionary_v2_1`."""
        out: dict = {}
        if self.dict_divisor is not None:
            out["divisor"] = self.dict_divisor
        if self.dict_size_ratio is not None:
            out["size_ratio"] = self.dict_size_ratio
        return out


NO_HINTS = EncodingHints()


def _text(md: dict, key: str) -> str | None:
    raw = md.get(key.encode())
    if raw is None:
        raw = md.get(key)
    if raw is None:
        return None
    return raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)


def _number(field: pa.Field, md: dict, key: str, kind: type):
    """A positive int / float hint, or None when absent; InvalidInput otherwise."""
    text = _text(md, key)
    if text is None:
        return None
    try:
        value = kind(text.strip())
    except ValueError:
        value = None
    if value is None or not value > 0 or value != value or value == float("inf"):
        raise InvalidInput(f"field {field.name!r}: {key}={text!r} is not a positive {kind.__name__}")
    return value


def parse_hints(field: pa.Field) -> EncodingHints:
    """Validate and return ``field``'s hints; :class:`InvalidInput` names the field and key."""
    md = field.metadata or {}
    if not md:
        return NO_HINTS

    def bad(key: str, value: str, allowed) -> InvalidInput:
        return InvalidInput(
            f"field {field.name!r}: {key}={value!r} is not one of {list(allowed)}"
        )

    packed = False
    for key in (PACKED, PACKED_LEGACY):
        value = _text(md, key)
        if value is None:
            continue
        if value.lower() not in ("true", "false"):
            raise bad(key, value, ("true", "false"))
        packed = packed or value.lower() == "true"
    compression = _text(md, COMPRESSION)
    if compression is not None and compression not in COMPRESSION_SCHEMES:
        raise bad(COMPRESSION, compression, COMPRESSION_SCHEMES)
    level = None
    level_text = _text(md, COMPRESSION_LEVEL)
    if level_text is not None:
        try:
            level = int(level_text.strip())
        except ValueError:
            raise InvalidInput(
                f"field {field.name!r}: {COMPRESSION_LEVEL}={level_text!r} is not an integer"
            ) from None
        if not -(2**31) <= level < 2**31:
            raise InvalidInput(
                f"field {field.name!r}: {COMPRESSION_LEVEL}={level} does not fit an int32"
            )
    bss = _text(md, BSS)
    if bss is not None and bss.lower() not in BSS_MODES:
        raise bad(BSS, bss, BSS_MODES)
    structural = _text(md, STRUCTURAL_ENCODING)
    if structural is not None and structural.lower() not in STRUCTURAL_ENCODINGS:
        raise bad(STRUCTURAL_ENCODING, structural, STRUCTURAL_ENCODINGS)
    divisor = _number(field, md, DICT_DIVISOR, int)
    ratio = _number(field, md, DICT_SIZE_RATIO, float)
    dict_values = _text(md, DICT_VALUES_COMPRESSION)
    if dict_values is not None and dict_values not in COMPRESSION_SCHEMES:
        raise bad(DICT_VALUES_COMPRESSION, dict_values, COMPRESSION_SCHEMES)
    return EncodingHints(
        packed=packed and pa.types.is_struct(field.type),
        compression=compression,
        compression_level=level,
        bss=(bss or "auto").lower(),
        structural_encoding=structural.lower() if structural else None,
        dict_divisor=divisor,
        dict_size_ratio=ratio,
        dict_values_compression=dict_values,
    )


def child_fields(t: pa.DataType) -> list[pa.Field]:
    """The directly nested fields of a struct or list type (none for other types)."""
    if pa.types.is_struct(t):
        return [t.field(i) for i in range(t.num_fields)]
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return [t.value_field]
    return []


def check_schema_hints(schema: pa.Schema) -> None:
    """Validate the hints of every field, nested ones included, before anything is written."""
    stack = list(schema)
    while stack:
        f = stack.pop()
        parse_hints(f)
        stack.extend(child_fields(f.type))
