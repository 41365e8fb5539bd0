"""JSON index: an index of another kind over the value a path extracts from a JSON column.

Details (``lance.index.pb.JsonIndexDetails``): ``path`` (the key path inside each row's JSON
document, e.g. ``x`` or ``a.b``) and ``target_details`` (an ``Any``: the details of the index
built over the extracted values, e.g. ``/lance.table.BTreeIndexDetails``). The index
directory holds the target kind's files exactly as that kind writes them (for a BTREE target:
``page_data.lance`` and ``page_lookup.lance``), keyed by the extracted value.

Reading delegates to the target kind's module with the target details; ``entries`` are the
target's, ``extra["target"]`` is the target's :class:`IndexContent` and ``extra["path"]`` the
path. Checking extracts the path's value from each row's JSON text (a missing key or a JSON
``null`` is null) and holds the target's content against those values. A path other than
dot-separated keys, or values that do not convert to the target's value type, are refused
(:class:`UnsupportedIndex`), never guessed at.
"""

from __future__ import annotations

import dataclasses
import json
import re

import pyarrow as pa

from reference_impl.errors import FormatError, UnsupportedIndex

KIND = "json"
#: The BTREE rule "keys are sorted". Not applied to a JSON index's BTREE: pylance 0.38.3 and
#: 4.0.2 write its page as several sorted runs (one per batch of the build) and answer every
#: equality and range query on the path right through it (checked against their scans for
#: every value), so the order is no property readers rely on there; the (row, value) pairs
#: are still held against the data.
#: The lookup rows of such runs do not bound their pages either (pylance 0.38.3: its JSON
#: BTREE's lookup pages, INDEX-105) while the same queries answer right, so neither is judged.
BTREE_ORDER_RULES = ("INDEX-104", "INDEX-105")
_KEYS = re.compile(r"^(\$\.)?[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")


def target_index(index):
    """``(target, path)``: ``index`` as an index of its target kind (same name, uuid, fields
    and bitmap; the target's details), and the path."""
    from reference_impl.table.index import parse_index_details

    details = index.details
    if details is None or details.message is None:
        raise UnsupportedIndex(f"JSON index {index.name!r} has no readable details", kind=KIND)
    msg = details.message
    if not msg.HasField("target_details"):
        raise UnsupportedIndex(f"JSON index {index.name!r} names no target index", kind=KIND)
    try:
        target_details = parse_index_details(msg.target_details)
    except FormatError as exc:
        raise FormatError(f"JSON index {index.name!r}: target details do not parse: "
                          f"{exc.message}") from None
    if target_details.kind in (None, KIND):
        raise UnsupportedIndex(f"JSON index {index.name!r} targets "
                               f"{msg.target_details.type_url!r}, not read here", kind=KIND,
                               version=msg.target_details.type_url)
    return dataclasses.replace(index, details=target_details), msg.path


def read(files, index):
    """Decode a JSON index: its target kind's content over the extracted values."""
    from reference_impl.index import IndexContent, reader_module

    target, path = target_index(index)
    content = reader_module(target.kind).read(files, target)
    summary = dict(content.summary, path=path, target=target.kind)
    return IndexContent(kind=KIND, version=f"json/{content.version}", entries=content.entries,
                        summary=summary, extra={"target": content, "path": path})


def extract(texts: list, path: str) -> list:
    """The value of ``path`` in each JSON text (None: null text, missing key or JSON null)."""
    if not _KEYS.match(path or ""):
        raise UnsupportedIndex(f"JSON path {path!r} is not dot-separated keys: not "
                               "extracted here", kind=KIND, version=path)
    keys = (path[2:] if path.startswith("$.") else path).split(".")
    out = []
    for text in texts:
        value = None
        if text is not None:
            try:
                value = json.loads(text)
            except ValueError:
                raise FormatError(f"a row's JSON text does not parse: {text[:60]!r}") from None
            for k in keys:
                value = value.get(k) if isinstance(value, dict) else None
        out.append(value)
    return out


def check(content, index, data):
    """Hold the target's content against the path's values of the covered rows."""
    from reference_impl.index import reader_module

    target, path = target_index(index)
    inner = content.extra["target"]
    value_type = inner.entries.schema.field("value").type \
        if "value" in inner.entries.column_names else None
    texts = data.values.to_pylist()
    extracted = extract([None if t is None else (t if isinstance(t, str) else json.dumps(t))
                         for t in texts], path)
    if any(isinstance(v, (dict, list)) for v in extracted):
        raise UnsupportedIndex(f"JSON index {index.name!r}: path {path!r} reaches objects or "
                               "arrays, whose indexed form is not known here", kind=KIND)
    try:
        values = pa.array(extracted, value_type) if value_type is not None else pa.array(extracted)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as exc:
        raise UnsupportedIndex(f"JSON index {index.name!r}: the values of {path!r} do not all "
                               f"convert to the target's {value_type} ({exc})", kind=KIND) from None
    module = reader_module(target.kind)
    for d in module.check(inner, target, dataclasses.replace(data, values=values)):
        if target.kind == "btree" and d.rule in BTREE_ORDER_RULES:
            continue  # see BTREE_ORDER_RULES
        yield d
