"""BITMAP index content: for each distinct value, the set of rows that hold it.

File (``_indices/{uuid}/``): ``bitmap_page_lookup.lance``, a Lance file with columns ``keys``
(the indexed column's type; one null key holds the rows where the value is null) and
``bitmaps`` (binary), one row per distinct value. Each bitmap is a row-address tree map::

    u32-LE n                                the number of fragments
    n x { u32-LE fragment id
          u32-LE size                       0: every row of the fragment
          size bytes                        a portable 32-bit Roaring bitmap of offsets }

and a row is ``(fragment id << 32) | offset`` (with stable row ids, the 64-bit id split the
same way). Its schema metadata may carry ``lance:index_stats`` (JSON, ``num_bitmaps``).

Logical form (:attr:`IndexContent.entries`): columns ``value``, ``row_id`` (uint64) and ``key``
(the key's row in the file), one row per posting; ``extra["full"]`` lists ``(key row,
fragment id)`` of postings that name a whole fragment (they are expanded against the data,
which knows the fragment's rows).

Checks: each key's postings equal the rows holding the key's value, every live row of the
covered fragments is under one key (:func:`reference_impl.index.against.hold_pairs`), and
keys are distinct (``INDEX-106``).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from reference_impl.errors import FormatError, UnsupportedIndex

from . import Disagreement, IndexContent, IndexedData, IndexFiles, need_columns
from .against import MAX_PER_RULE, hold_pairs, value_text

KIND = "bitmap"
FILE = "bitmap_page_lookup.lance"
KEYS_DISTINCT = "INDEX-106"

#: bound on the fragments one posting names (a table of a million fragments is far below)
MAX_FRAGMENTS = 1 << 24


def decode_row_map(raw: bytes, *, path: str | None = None) -> tuple[np.ndarray, list[int]]:
    """The rows of one serialized row-address tree map: ``(rows, full fragment ids)``."""
    from pyroaring import BitMap

    raw = bytes(raw)
    if len(raw) < 4:
        raise FormatError(f"posting of {len(raw)} bytes is shorter than its count",
                          rule="INDEX-100", path=path)
    (n,) = struct.unpack_from("<I", raw, 0)
    if n > MAX_FRAGMENTS or 4 + 8 * n > len(raw):
        raise FormatError(f"posting names {n} fragments in {len(raw)} bytes", rule="INDEX-100",
                          path=path)
    pos, parts, full = 4, [], []
    for _ in range(n):
        frag, size = struct.unpack_from("<II", raw, pos)
        pos += 8
        if size == 0:
            full.append(int(frag))
            continue
        if pos + size > len(raw):
            raise FormatError(f"posting of fragment {frag} runs {pos + size - len(raw)} bytes "
                              "past its end", rule="INDEX-100", path=path)
        try:
            bm = BitMap.deserialize(raw[pos:pos + size])
        except Exception as exc:  # noqa: BLE001 - pyroaring raises ValueError on bad bytes
            raise FormatError(f"posting of fragment {frag} is not a Roaring bitmap: {exc}",
                              rule="INDEX-100", path=path) from None
        pos += size
        offsets = np.asarray(bm.to_array(), np.uint64)
        parts.append((np.uint64(frag) << np.uint64(32)) | offsets)
    if pos != len(raw):
        raise FormatError(f"posting holds {len(raw) - pos} bytes after its last fragment",
                          rule="INDEX-100", path=path)
    rows = np.concatenate(parts) if parts else np.zeros(0, np.uint64)
    return rows, full


def encode_row_map(rows) -> bytes:
    """The serialized row-address tree map of ``rows`` (uint64): the inverse of
    :func:`decode_row_map`, every fragment as a bitmap of its offsets (never "full")."""
    from pyroaring import BitMap

    rows = np.unique(np.asarray(rows, np.uint64))
    frags = (rows >> np.uint64(32)).astype(np.uint32)
    out = [struct.pack("<I", len(np.unique(frags)))]
    for frag in np.unique(frags):
        bm = BitMap((rows[frags == frag] & np.uint64(0xFFFFFFFF)).astype(np.uint32).tolist())
        raw = bm.serialize()
        out.append(struct.pack("<II", int(frag), len(raw)) + raw)
    return b"".join(out)


def read_postings(files: IndexFiles, kind: str) -> tuple[pa.Table, list, dict, int]:
    """``(entries, full, metadata, keys)`` of a ``bitmap_page_lookup.lance`` file."""
    if not files.has(FILE):
        raise UnsupportedIndex(f"{kind.upper()} index files {files.names()} are not the layout "
                               f"{FILE}", kind=kind)
    reader = files.lance_file(FILE)
    meta = dict(reader.schema.metadata or {})
    table = reader.read_all()
    need_columns(table.column_names, ("keys", "bitmaps"), what=f"{kind.upper()} file {FILE}",
                 kind=kind)
    keys = table.column("keys").combine_chunks()
    rows, key_rows, full = [], [], []
    for k, raw in enumerate(table.column("bitmaps").to_pylist()):
        if raw is None:
            raise FormatError(f"{kind.upper()} key {k} has a null bitmap", rule="INDEX-100",
                              path=files.key(FILE))
        r, f = decode_row_map(raw, path=files.key(FILE))
        rows.append(r)
        key_rows.append(np.full(len(r), k, np.int64))
        full += [(k, frag) for frag in f]
    rows_a = np.concatenate(rows) if rows else np.zeros(0, np.uint64)
    key_a = np.concatenate(key_rows) if key_rows else np.zeros(0, np.int64)
    entries = pa.table({"value": keys.take(pa.array(key_a)), "row_id": pa.array(rows_a),
                        "key": pa.array(key_a)})
    return entries, full, meta, len(keys)


def expand_full(entries: pa.Table, full: list, keys: pa.Array, data: IndexedData) -> pa.Table:
    """``entries`` with each whole-fragment posting expanded to the fragment's rows as the data
    holds them (live and deleted)."""
    if not full:
        return entries
    every = np.union1d(data.row_ids, data.deleted_row_ids)
    frags = every >> np.uint64(32)
    add_rows, add_keys = [], []
    for k, frag in full:
        r = every[frags == np.uint64(frag)]
        add_rows.append(r)
        add_keys.append(np.full(len(r), k, np.int64))
    extra = pa.table({"value": keys.take(pa.array(np.concatenate(add_keys))),
                      "row_id": pa.array(np.concatenate(add_rows)),
                      "key": pa.array(np.concatenate(add_keys))})
    return pa.concat_tables([entries, extra.cast(entries.schema)])


def summarize(kind: str, version: str, entries: pa.Table, n_keys: int, meta: dict) -> dict:
    values = pc.unique(entries.column("value"))
    nonnull = pc.drop_null(values)
    return {"kind": kind, "version": version, "rows": entries.num_rows, "postings": n_keys,
            "min": _py(pc.min(nonnull)) if len(nonnull) else None,
            "max": _py(pc.max(nonnull)) if len(nonnull) else None,
            "stats": (meta.get(b"lance:index_stats") or b"").decode("utf-8", "replace") or None}


def _py(scalar):
    v = scalar.as_py()
    return v if isinstance(v, (int, float, str, bool)) or v is None else str(v)


def read(files: IndexFiles, index) -> IndexContent:
    entries, full, meta, n_keys = read_postings(files, KIND)
    keys = files.read_table(FILE).column("keys").combine_chunks() if full else None
    return IndexContent(KIND, "bitmap-v0", entries,
                        summarize(KIND, "bitmap-v0", entries, n_keys, meta),
                        {"full": full, "keys": keys, "metadata": meta, "n_keys": n_keys})


def distinct_keys(name: str, keys_in_entries: pa.Table, n_keys: int) -> Iterator[Disagreement]:
    """Two keys with one value split its rows: a reader looks up one of them."""
    if not n_keys:
        return
    per_key = keys_in_entries.group_by("key").aggregate([("value", "min")])
    vals = per_key.column("value_min")
    counts = pc.value_counts(vals)
    dup = [(c["values"].as_py(), c["counts"].as_py()) for c in counts if c["counts"].as_py() > 1]
    for v, c in dup[:MAX_PER_RULE]:
        yield Disagreement(KEYS_DISTINCT, f"index {name!r} holds key {value_text(v)} {c} times",
                           value=v)


def check(content: IndexContent, index, data: IndexedData) -> Iterator[Disagreement]:
    e = expand_full(content.entries, content.extra["full"], content.extra["keys"], data)
    keys = e.column("key").to_numpy()
    yield from hold_pairs(index.name, data, e.column("row_id").to_numpy(),
                          e.column("value").combine_chunks(),
                          where=lambda i: {"key": int(keys[i])})
    yield from distinct_keys(index.name, e, content.extra["n_keys"])
