"""JSON columns: the ``lance.json`` extension type and its binary JSON (JSONB) values.

A table column of Arrow's ``arrow.json`` type is stored as ``large_binary`` with the field
extension name ``lance.json`` (``arrow.json`` in pylance 0.36 to 1.x; logical type ``json``
in both); each value is one JSON document in a
binary encoding, and a reader turns it back into compact JSON text. pylance reads such a
column as ``arrow.json`` (storage ``utf8``); so does :func:`decode_json_columns`.

The binary encoding (observed from pylance 0.36 to 14.0.2; all integers big-endian):

* a **container** starts with a u32 header: ``0x80000000 | n`` an array of ``n`` values,
  ``0x40000000 | n`` an object of ``n`` members, ``0x20000000`` a single scalar;
* then one u32 **entry** per item (an object lists its ``n`` keys' entries, then its ``n``
  values' entries): the top nibble is the kind (0 null, 1 string, 2 number, 3 false,
  4 true, 5 container) and the low 28 bits the length of the item's bytes;
* then the items' bytes, back to back, in entry order (keys, then values). A string is UTF-8;
  a nested container is a whole container as above.
* A **number** is a tag byte and a big-endian payload: ``0x00`` zero (no payload), ``0x40``
  a signed integer of 1, 2, 4 or 8 bytes, ``0x50`` an unsigned one, ``0x60`` an IEEE
  float64; ``0x10``/``0x20``/``0x30`` are NaN, +inf and -inf.

The text is compact (no spaces), members in stored order, strings escaped as JSON requires
(``\\"``, ``\\\\``, ``\\b \\f \\n \\r \\t``, other control characters as ``\\u00xx``), floats
in the shortest digits that round-trip, laid out as pylance does: ``1.0`` for a whole float,
plain digits while the decimal point falls within 16 digits of the first, ``0.000ddd`` down
to four leading zeros, ``de+X`` / ``d.ddde-X`` beyond.
"""

from __future__ import annotations

import json
import struct

import pyarrow as pa
import pyarrow.compute  # noqa: F401  (pa.compute)

from reference_impl.errors import FormatError

EXTENSION_NAME = b"lance.json"
#: the extension names a binary JSON column carries in its field: ``lance.json`` (pylance
#: from 2.x on) or ``arrow.json`` (pylance 0.36 to 1.x, whose logical type is ``json`` too)
EXTENSION_NAMES = (EXTENSION_NAME, b"arrow.json")
RULE = "ENC-045"  # decoded values fit the field's type

_ARRAY, _OBJECT, _SCALAR = 0x8, 0x4, 0x2
_NULL, _STRING, _NUMBER, _FALSE, _TRUE, _CONTAINER = range(6)
#: bound on nesting: a hostile value must not exhaust the interpreter's stack
MAX_DEPTH = 256


def is_json_field(field: pa.Field) -> bool:
    meta = field.metadata or {}
    return meta.get(b"ARROW:extension:name") in EXTENSION_NAMES


def to_text(value: bytes) -> str:
    """One JSONB value as compact JSON text; ``FormatError`` when the bytes are not JSONB."""
    out: list[str] = []
    try:
        end = _container(memoryview(value), 0, len(value), out, 0)
    except (IndexError, struct.error, UnicodeDecodeError, ValueError) as exc:
        raise FormatError(f"JSON value is not valid JSONB: {exc}", rule=RULE) from None
    if end != len(value):
        raise FormatError(f"JSONB value has {len(value) - end} trailing bytes", rule=RULE)
    return "".join(out)


def _container(buf: memoryview, pos: int, limit: int, out: list[str], depth: int) -> int:
    if depth > MAX_DEPTH:
        raise ValueError("JSON nested too deeply")
    (header,) = struct.unpack_from(">I", buf, pos)
    kind, count = header >> 28, header & 0x0FFFFFFF
    pos += 4
    if kind == _SCALAR:
        count = 1
    elif kind not in (_ARRAY, _OBJECT):
        raise ValueError(f"unknown container kind {kind:#x}")
    items = 2 * count if kind == _OBJECT else count
    if pos + 4 * items > limit:
        raise ValueError("container entries run past the value")
    entries = struct.unpack_from(f">{items}I", buf, pos)
    pos += 4 * items
    spans = []
    for e in entries:
        length = e & 0x0FFFFFFF
        if pos + length > limit:
            raise ValueError("container item runs past the value")
        spans.append((e >> 28, pos, pos + length))
        pos += length
    if kind == _SCALAR:
        _item(buf, *spans[0], out, depth)
    elif kind == _ARRAY:
        out.append("[")
        for i, span in enumerate(spans):
            if i:
                out.append(",")
            _item(buf, *span, out, depth)
        out.append("]")
    else:
        out.append("{")
        for i in range(count):
            if i:
                out.append(",")
            k_kind, k_start, k_end = spans[i]
            if k_kind != _STRING:
                raise ValueError("object key is not a string")
            out.append(_quote(bytes(buf[k_start:k_end]).decode("utf-8")))
            out.append(":")
            _item(buf, *spans[count + i], out, depth)
        out.append("}")
    return pos


def _item(buf: memoryview, kind: int, start: int, end: int, out: list[str], depth: int) -> None:
    if kind == _NULL:
        out.append("null")
    elif kind == _TRUE:
        out.append("true")
    elif kind == _FALSE:
        out.append("false")
    elif kind == _STRING:
        out.append(_quote(bytes(buf[start:end]).decode("utf-8")))
    elif kind == _NUMBER:
        out.append(_number(bytes(buf[start:end])))
    elif kind == _CONTAINER:
        if _container(buf, start, end, out, depth + 1) != end:
            raise ValueError("nested container shorter than its entry")
    else:
        raise ValueError(f"unknown entry kind {kind}")


def _number(raw: bytes) -> str:
    if not raw:
        raise ValueError("empty number")
    tag, payload = raw[0], raw[1:]
    if tag == 0x00 and not payload:
        return "0"
    if tag in (0x40, 0x50) and len(payload) in (1, 2, 4, 8):
        return str(int.from_bytes(payload, "big", signed=tag == 0x40))
    if tag == 0x60 and len(payload) == 8:
        return format_float(struct.unpack(">d", payload)[0])
    if tag in (0x10, 0x20, 0x30) and not payload:
        return {0x10: "NaN", 0x20: "Infinity", 0x30: "-Infinity"}[tag]
    raise ValueError(f"unknown number tag {tag:#x} with {len(payload)} payload bytes")


def format_float(x: float) -> str:
    """A finite float as pylance prints it in JSON text (see the module docstring)."""
    if x == 0.0:
        return "-0.0" if struct.pack(">d", x)[0] & 0x80 else "0.0"
    sign = "-" if x < 0 else ""
    mantissa, _, exp = repr(abs(x)).partition("e")
    whole, _, frac = mantissa.partition(".")
    digits = (whole + frac).lstrip("0")
    # value = 0.<digits> x 10**kk
    kk = len(whole) + (int(exp) if exp else 0)
    if whole == "0":
        kk = -(len(frac) - len(frac.lstrip("0"))) + (int(exp) if exp else 0)
    digits = digits.rstrip("0") or "0"
    n = len(digits)
    if n <= kk <= 16:
        text = digits + "0" * (kk - n) + ".0"
    elif 0 < kk <= 16:
        text = digits[:kk] + "." + digits[kk:]
    elif -5 < kk <= 0:
        text = "0." + "0" * (-kk) + digits
    else:
        e = kk - 1
        head = digits if n == 1 else digits[0] + "." + digits[1:]
        text = f"{head}e{'+' if e > 0 else '-'}{abs(e)}"
    return sign + text


_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r",
            "\t": "\\t"}


def _quote(s: str) -> str:
    parts = ['"']
    for ch in s:
        if ch in _ESCAPES:
            parts.append(_ESCAPES[ch])
        elif ch < " ":
            parts.append(f"\\u{ord(ch):04x}")
        else:
            parts.append(ch)
    parts.append('"')
    return "".join(parts)


def stored_text(value: bytes) -> str:
    """One stored value of a ``lance.json`` column as JSON text: JSONB decoded
    (:func:`to_text`), or a value that is JSON text itself, returned as it is. The
    ``update`` of pylance 7.1.0 to 10.0.0 stores the SQL literal it is given
    (``'{"val": -1}'``) as text, not JSONB, and reads it back as that text; so does 14.0.2.
    Bytes that are neither raise ``FormatError``."""
    try:
        return to_text(value)
    except FormatError as not_jsonb:
        try:
            text = bytes(value).decode("utf-8")
            json.loads(text)
        except ValueError:  # (UnicodeDecodeError and JSONDecodeError are ValueErrors)
            raise not_jsonb from None
        return text


def decode_array(arr: pa.Array) -> pa.Array:
    """A ``lance.json`` column's stored values as an ``arrow.json`` array."""
    texts = [None if v is None else stored_text(v) for v in arr.to_pylist()]
    storage = pa.array(texts, pa.string())
    return pa.ExtensionArray.from_storage(pa.json_(), storage)


def decode_json_columns(table: pa.Table) -> pa.Table:
    """Turn every ``lance.json`` field of a scanned table into ``arrow.json``, at any depth
    (a JSON child of a struct, the items of a list or fixed-size list, a map's values)."""
    for i, field in enumerate(table.schema):
        if _holds_json(field):
            new_field, arr = _decode_field(field, table.column(i).combine_chunks())
            table = table.set_column(i, new_field, arr)
    return table


def _holds_json(field: pa.Field) -> bool:
    if is_json_field(field):
        return pa.types.is_large_binary(field.type) or pa.types.is_binary(field.type)
    t = field.type
    return any(_holds_json(t.field(k)) for k in range(t.num_fields))


def _decode_field(field: pa.Field, arr: pa.Array, nested: bool = False
                  ) -> tuple[pa.Field, pa.Array]:
    """``(field, arr)`` with the JSON fields below (or at) ``field`` decoded to JSON text.

    A nested field named ``arrow.json`` holds JSON text, not binary JSON: pylance 0.36 to
    1.x convert top-level JSON columns only, and 14.0.2 reads those nested values as the
    text they are. ``lance.json`` (2.x on) is binary JSON at any depth."""
    if not _holds_json(field):
        return field, arr
    if is_json_field(field):
        out = pa.field(field.name, pa.json_(), field.nullable)
        if nested and (field.metadata or {}).get(b"ARROW:extension:name") == b"arrow.json":
            storage = arr.cast(pa.string()) if pa.types.is_binary(arr.type) else \
                arr.cast(pa.large_string()).cast(pa.string())
            return out, pa.ExtensionArray.from_storage(pa.json_(), storage)
        return out, decode_array(arr)
    t = field.type
    mask = arr.is_null() if arr.null_count else None
    if pa.types.is_struct(t):
        kids = [_decode_field(t.field(k), arr.field(k), True) for k in range(t.num_fields)]
        out = pa.StructArray.from_arrays([a for _, a in kids], fields=[f for f, _ in kids],
                                         mask=mask)
        return field.with_type(out.type), out
    if pa.types.is_map(t):
        start, end = arr.offsets[0].as_py(), arr.offsets[-1].as_py()
        offsets = pa.compute.subtract(arr.offsets, pa.scalar(start, arr.offsets.type))
        keys = arr.keys.slice(start, end - start)
        item_field, items = _decode_field(t.item_field, arr.items.slice(start, end - start),
                                          True)
        out = pa.MapArray.from_arrays(offsets, keys, items, mask=mask,
                                      type=pa.map_(t.key_field, item_field))
        return field.with_type(out.type), out
    if pa.types.is_fixed_size_list(t):
        size = t.list_size
        values = arr.values.slice(arr.offset * size, len(arr) * size)
        value_field, values = _decode_field(t.value_field, values, True)
        out = pa.FixedSizeListArray.from_arrays(values, type=pa.list_(value_field, size),
                                                mask=mask)
        return field.with_type(out.type), out
    # list / large_list
    start, end = arr.offsets[0].as_py(), arr.offsets[-1].as_py()
    offsets = pa.compute.subtract(arr.offsets, pa.scalar(start, arr.offsets.type))
    value_field, values = _decode_field(t.value_field, arr.values.slice(start, end - start),
                                        True)
    large = pa.types.is_large_list(t)
    cls = pa.LargeListArray if large else pa.ListArray
    out = cls.from_arrays(offsets, values, mask=mask,
                          type=(pa.large_list if large else pa.list_)(value_field))
    return field.with_type(out.type), out


# --------------------------------------------------------------------------- writing


def from_text(text: str) -> bytes:
    """One JSON document (text) as the binary JSON a ``lance.json`` column stores (the
    encoding above: object members sorted by key bytes, as pylance stores them; integers in
    the fewest bytes, 0 as a bare tag; other numbers as float64). ``InvalidInput`` when the
    text is not JSON."""
    import json

    from reference_impl.errors import InvalidInput

    try:
        doc = json.loads(text, parse_constant=_reject_constant)
    except (ValueError, RecursionError) as exc:
        raise InvalidInput(f"arrow.json value is not valid JSON: {exc}") from None
    out = bytearray()
    _encode_container(doc, out, 0)
    return bytes(out)


def _reject_constant(name: str):
    raise ValueError(f"{name} is not JSON")


def _encode_container(doc, out: bytearray, depth: int) -> None:
    if depth > MAX_DEPTH:
        raise ValueError("JSON nested too deeply")
    if isinstance(doc, dict):
        keys = sorted(doc, key=lambda k: k.encode("utf-8"))
        items = [(_STRING, k.encode("utf-8")) for k in keys] + \
            [_encode_item(doc[k], depth) for k in keys]
        header = (_OBJECT << 28) | len(keys)
    elif isinstance(doc, list):
        items = [_encode_item(v, depth) for v in doc]
        header = (_ARRAY << 28) | len(doc)
    else:
        items = [_encode_item(doc, depth)]
        header = _SCALAR << 28
    out += struct.pack(">I", header)
    for kind, raw in items:
        out += struct.pack(">I", (kind << 28) | len(raw))
    for _, raw in items:
        out += raw


def _encode_item(value, depth: int) -> tuple[int, bytes]:
    if value is None:
        return _NULL, b""
    if value is True:
        return _TRUE, b""
    if value is False:
        return _FALSE, b""
    if isinstance(value, str):
        return _STRING, value.encode("utf-8")
    if isinstance(value, int):
        if value == 0:
            return _NUMBER, b"\x00"
        for width in (1, 2, 4, 8):
            lo, hi = -(1 << (8 * width - 1)), (1 << (8 * width - 1)) - 1
            if lo <= value <= hi:
                return _NUMBER, b"\x40" + value.to_bytes(width, "big", signed=True)
        if 0 < value < (1 << 64):
            return _NUMBER, b"\x50" + value.to_bytes(8, "big")
        value = float(value)
    if isinstance(value, float):
        return _NUMBER, b"\x60" + struct.pack(">d", value)
    nested = bytearray()
    _encode_container(value, nested, depth + 1)
    return _CONTAINER, bytes(nested)


def encode_array(arr: pa.Array) -> pa.Array:
    """An ``arrow.json`` (or JSON text) array as the ``large_binary`` values a ``lance.json``
    column stores."""
    storage = arr.storage if isinstance(arr, pa.ExtensionArray) else arr
    return pa.array([None if v is None else from_text(v) for v in storage.to_pylist()],
                    pa.large_binary())
