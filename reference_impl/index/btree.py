"""BTREE index content: sorted ``(value, row id)`` pairs in pages, and a lookup of the pages.

Files (``_indices/{uuid}/``), both Lance files:

* ``page_data.lance``: columns ``values`` (the indexed column's type) and ``ids`` (uint64 row
  addresses, or stable row ids; named ``row_ids`` by releases up to 0.2x), one row per
  indexed row, sorted by value with nulls first.
  Page ``p`` is the run of rows ``[p * batch_size, (p + 1) * batch_size)``;
* ``page_lookup.lance``: one row per page: ``min``, ``max`` (the page's first and last value
  as sorted, so ``min`` is null when the page starts with nulls), ``null_count`` (uint32, the
  nulls in the page) and ``page_idx`` (uint32). Its schema metadata may say ``batch_size``
  (default 4096) and ``range_partitioned`` (``"false"``; a range-partitioned index is a layout
  this module does not read).

Row ids. ``index_version`` 0 names rows as the table does (row addresses, or stable row ids
when the table has them); pylance 14.0.2 writes ``index_version`` 1 for a BTREE of a table with
stable row ids, and names rows there by their addresses (its queries read them so), so an
index_version of 1 or more is read as naming addresses.

Logical form (:attr:`IndexContent.entries`): columns ``value``, ``row_id`` (uint64) and
``page`` (int64) in file order; ``extra["lookup"]`` is the lookup table.

Checks: every pair against the data (:func:`reference_impl.index.against.hold_pairs`); keys
sorted (nulls first, then ascending) across the whole file (``INDEX-104``); each lookup row
bounds its data page: its non-null values lie in ``[min, max]`` and it holds at most
``null_count`` nulls (a count above them is stale but answers right); lookup pages name existing pages, each once, and every page is looked up (``INDEX-105``).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from reference_impl.errors import FormatError, UnsupportedIndex

from . import Disagreement, IndexContent, IndexedData, IndexFiles, need_columns
from .against import MAX_PER_RULE, hold_pairs, value_text

KIND = "btree"
DATA_FILE = "page_data.lance"
LOOKUP_FILE = "page_lookup.lance"
DEFAULT_BATCH_SIZE = 4096

KEYS_SORTED = "INDEX-104"
PAGES_BOUNDED = "INDEX-105"


def read(files: IndexFiles, index) -> IndexContent:
    """Decode a BTREE index's two files into ``(value, row_id, page)`` entries."""
    if not (files.has(DATA_FILE) and files.has(LOOKUP_FILE)):
        raise UnsupportedIndex(f"BTREE index files {files.names()} are not the layout "
                               f"{DATA_FILE} + {LOOKUP_FILE}", kind=KIND)
    lookup_reader = files.lance_file(LOOKUP_FILE)
    meta = dict(lookup_reader.schema.metadata or {})
    if meta.get(b"range_partitioned", b"false").lower() not in (b"false", b"0"):
        raise UnsupportedIndex("range-partitioned BTREE indexes are not read", kind=KIND,
                               version="btree/range-partitioned")
    try:
        batch_size = int(meta.get(b"batch_size", DEFAULT_BATCH_SIZE))
    except ValueError:
        raise FormatError(f"BTREE lookup batch_size {meta[b'batch_size']!r} is not a number",
                          rule="INDEX-100", path=files.key(LOOKUP_FILE)) from None
    if batch_size <= 0:
        raise FormatError(f"BTREE lookup batch_size {batch_size} is not positive",
                          rule="INDEX-100", path=files.key(LOOKUP_FILE))
    lookup = lookup_reader.read_all()
    data = files.read_table(DATA_FILE)
    _need(lookup, ("min", "max", "null_count", "page_idx"), files.key(LOOKUP_FILE))
    id_column = "ids" if "ids" in data.column_names else "row_ids"
    _need(data, ("values", id_column), files.key(DATA_FILE))
    n = data.num_rows
    ids = data.column(id_column)
    if not pa.types.is_integer(ids.type):
        raise FormatError(f"BTREE ids are {ids.type}, not row ids", rule="INDEX-100",
                          path=files.key(DATA_FILE))
    entries = pa.table({
        "value": data.column("values").combine_chunks(),
        "row_id": ids.combine_chunks().cast(pa.uint64()),
        "page": pa.array(np.arange(n, dtype=np.int64) // batch_size),
    })
    values = entries.column("value")
    nonnull = pc.drop_null(values)
    summary = {"kind": KIND, "version": "btree-v0", "rows": n, "pages": lookup.num_rows,
               "batch_size": batch_size, "nulls": int(values.null_count),
               "min": _py(pc.min(nonnull)) if len(nonnull) else None,
               "max": _py(pc.max(nonnull)) if len(nonnull) else None}
    version = f"btree-v{index.index_version or 0}"
    summary["version"] = version
    return IndexContent(KIND, version, entries, summary,
                        {"lookup": lookup, "batch_size": batch_size,
                         "row_addresses": (index.index_version or 0) >= 1})


def _py(scalar):
    v = scalar.as_py()
    return v if isinstance(v, (int, float, str, bool)) or v is None else str(v)


def _need(table: pa.Table, names, path: str) -> None:
    need_columns(table.column_names, names, what=f"BTREE file {path}", kind=KIND)


def check(content: IndexContent, index, data: IndexedData) -> Iterator[Disagreement]:
    e = content.entries
    values = e.column("value").combine_chunks()
    pages = e.column("page").to_numpy()
    yield from hold_pairs(index.name, data, e.column("row_id").to_numpy(), values,
                          where=lambda i: {"page": int(pages[i])})
    yield from _sorted(index.name, values, pages)
    yield from _bounded(index.name, values, pages, content.extra["lookup"])


def _sorted(name: str, values: pa.Array, pages: np.ndarray) -> Iterator[Disagreement]:
    """Nulls first, then non-decreasing values, over the whole data file."""
    valid = values.is_valid().to_numpy(zero_copy_only=False)
    out = []
    if len(valid) and valid.any():
        first_value = int(np.argmax(valid))
        late_nulls = np.nonzero(~valid[first_value:])[0] + first_value
        for i in late_nulls[:MAX_PER_RULE]:
            out.append(Disagreement(KEYS_SORTED, f"index {name!r} holds a null key at entry {i} "
                                    f"(page {pages[i]}), after non-null keys: nulls sort first",
                                    where={"page": int(pages[i]), "position": int(i)}))
    order = np.nonzero(valid)[0]
    if len(order) > 1:
        vv = values.take(pa.array(order, pa.int64()))
        down = pc.less(vv.slice(1), vv.slice(0, len(vv) - 1))
        bad = np.nonzero(pc.fill_null(down, False).to_numpy(zero_copy_only=False))[0]
        for j in bad[:MAX_PER_RULE]:
            i = int(order[j + 1])
            out.append(Disagreement(
                KEYS_SORTED, f"index {name!r} keys are not sorted: entry {i} (page {pages[i]}) "
                f"holds {value_text(vv[int(j) + 1].as_py())} after {value_text(vv[int(j)].as_py())}",
                value=vv[int(j) + 1].as_py(), where={"page": int(pages[i]), "position": i}))
        if len(bad) > MAX_PER_RULE:
            out.append(Disagreement(KEYS_SORTED, f"index {name!r}: {len(bad) - MAX_PER_RULE} "
                                    f"more keys out of order"))
    yield from out


def _bounded(name: str, values: pa.Array, pages: np.ndarray,
             lookup: pa.Table) -> Iterator[Disagreement]:
    """Each lookup row bounds its page; every page is looked up exactly once."""
    n_pages = int(pages[-1]) + 1 if len(pages) else 0
    page_idx = lookup.column("page_idx").to_numpy().astype(np.int64)
    out = []
    seen, counts = np.unique(page_idx, return_counts=True)
    for p in seen[(seen < 0) | (seen >= n_pages)][:MAX_PER_RULE]:
        out.append(Disagreement(PAGES_BOUNDED, f"index {name!r} lookup names page {p}, but the "
                                f"data holds {n_pages} pages", where={"page": int(p)}))
    for p in seen[counts > 1][:MAX_PER_RULE]:
        out.append(Disagreement(PAGES_BOUNDED, f"index {name!r} lookup names page {p} more "
                                "than once", where={"page": int(p)}))
    unlooked = np.setdiff1d(np.arange(n_pages), seen)
    for p in unlooked[:MAX_PER_RULE]:
        out.append(Disagreement(PAGES_BOUNDED, f"index {name!r} data page {p} is in no lookup "
                                "row: a reader never reads its rows", where={"page": int(p)}))
    # per page: non-null min, max and the null count, all at once
    t = pa.table({"page": pa.array(pages), "value": values})
    agg = t.group_by("page").aggregate([("value", "min"), ("value", "max"),
                                         ("value", "count"), ("page", "count")])
    stats = {int(p): (lo, hi, int(tot) - int(cnt)) for p, lo, hi, cnt, tot in zip(
        agg.column("page").to_pylist(), agg.column("value_min").to_pylist(),
        agg.column("value_max").to_pylist(), agg.column("value_count").to_pylist(),
        agg.column("page_count").to_pylist(), strict=True)}
    mins = lookup.column("min").to_pylist()
    maxs = lookup.column("max").to_pylist()
    nulls = lookup.column("null_count").to_pylist()
    for j, p in enumerate(page_idx.tolist()):
        if p not in stats:
            continue
        lo, hi, n_null = stats[p]
        problems = []
        # a count above the page's nulls only sends a reader of ``IS NULL`` to a page it
        # need not read (pylance 0.38.3 leaves the count of rows a compaction removed); a
        # count below it lets the reader skip nulls the page holds
        if nulls[j] is None or nulls[j] < n_null:
            problems.append(f"null_count {nulls[j]} but the page holds {n_null} nulls")
        if lo is not None and mins[j] is not None and _gt(mins[j], lo):
            problems.append(f"min {value_text(mins[j])} above the page's least value "
                            f"{value_text(lo)}")
        if hi is not None and (maxs[j] is None or _gt(hi, maxs[j])):
            problems.append(f"max {value_text(maxs[j])} below the page's greatest value "
                            f"{value_text(hi)}")
        if problems:
            out.append(Disagreement(PAGES_BOUNDED, f"index {name!r} lookup row {j} does not "
                                    f"bound data page {p}: " + "; ".join(problems),
                                    where={"page": int(p), "lookup_row": j}))
    yield from out[:MAX_PER_RULE]
    if len(out) > MAX_PER_RULE:
        yield Disagreement(PAGES_BOUNDED, f"index {name!r}: {len(out) - MAX_PER_RULE} more "
                           "lookup rows that do not bound their pages")


def _gt(a, b) -> bool:
    try:
        return a > b
    except TypeError:
        return False
