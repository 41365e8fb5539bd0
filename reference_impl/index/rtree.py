"""RTREE index: a packed R-tree of the bounding boxes of a geometry column's rows.

pylance 4.0.2 to 14.0.2 write the kind (``create_scalar_index(column, "RTREE")`` over WKT
text, WKB bytes or geoarrow arrays; :mod:`reference_impl.index.geometry` reads their boxes).
A spatial filter (``st_intersects`` and its kin) keeps the rows whose leaf box meets the
query's box and rechecks them; ``IS NULL`` is answered from the null rows alone.

Layout (two Lance files, index details ``RTreeIndexDetails``, empty)::

    page_data.lance   bbox struct<xmin, ymin, xmax, ymax: double> (geoarrow.box)
                      id   uint64
                      every page's entries, leaves first, then each level of branches
    nulls.lance       nulls binary: one row-id tree map (u32 fragment count, then per
                      fragment its id, the byte size of its bitmap (0: every row) and a
                      portable Roaring bitmap of offsets) of the rows whose geometry is null

Schema metadata of page_data.lance: ``page_size`` (entries per page), ``num_items`` (leaf
entries), ``num_pages`` and ``bbox`` (JSON ``{"minx", "miny", "maxx", "maxy"}``, every
leaf's box). Leaves hold ``(box of the row's geometry, row id)`` for every row with
coordinates, sorted along a Hilbert curve; ``num_items`` leaf entries are cut into pages of
``page_size``, then each level above holds one entry per page of the level below
``(the union of that page's boxes, its page number)``, cut into pages the same way, until a
level fits in one page: the root, page ``num_pages - 1``. Page ``p`` starts at the entry
``p * page_size`` of its level, levels follow each other in the file.

``entries``: the leaf entries (``row_id`` uint64, ``xmin``, ``ymin``, ``xmax``, ``ymax``).
``extra``: ``branches`` (the branch entries with the ``page`` each names and the ``parent``
page holding it), ``pages`` (``(level, first entry, entries)`` per page number),
``nulls`` (uint64 row ids), ``full_null_fragments`` and ``metadata``.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pyarrow as pa

from reference_impl.errors import FormatError, UnsupportedIndex

KIND = "rtree"
PAGES = "page_data.lance"
NULLS = "nulls.lance"
VERSION = "rtree-v0"
BOX = ("xmin", "ymin", "xmax", "ymax")
#: most pages a tree may claim (a billion rows in pages of 16 is far below)
MAX_PAGES = 1 << 28

RULE_LEAF = "INDEX-130"
RULE_BRANCH = "INDEX-131"
RULE_NULLS = "INDEX-132"
RULE_EXACT = "INDEX-133"


def page_layout(num_items: int, page_size: int) -> list[tuple[int, int, int]]:
    """``(level, first entry, entries)`` of each page in page-number order, for
    ``num_items`` leaf entries in pages of ``page_size``: leaves are level 0; the level above
    has one entry per page below; the last level has one page (the root)."""
    pages: list[tuple[int, int, int]] = []
    offset, count, level = 0, num_items, 0
    while True:
        n = max(1, math.ceil(count / page_size))
        if len(pages) + n > MAX_PAGES:
            raise ValueError(f"the tree claims more than {MAX_PAGES} pages")
        for j in range(n):
            pages.append((level, offset + j * page_size,
                          max(0, min(page_size, count - j * page_size))))
        if n == 1:
            return pages
        offset, count, level = offset + count, n, level + 1


def box_matrix(table: pa.Table) -> np.ndarray:
    """The boxes of a table of ``xmin, ymin, xmax, ymax`` columns as an ``(n, 4)`` array."""
    if not table.num_rows:
        return np.zeros((0, 4))
    return np.stack([table.column(n).to_numpy() for n in BOX], axis=1)


def union_of(boxes: np.ndarray) -> tuple:
    """The least box that holds every one of ``boxes`` (an ``(n, 4)`` array, n > 0)."""
    return (boxes[:, 0].min(), boxes[:, 1].min(), boxes[:, 2].max(), boxes[:, 3].max())


def holds(outer, inner) -> bool:
    """Whether the box ``outer`` holds the box ``inner`` (edges included)."""
    return bool(outer[0] <= inner[0] and outer[1] <= inner[1] and outer[2] >= inner[2]
                and outer[3] >= inner[3])

def read(files, index):
    """Decode ``page_data.lance`` and ``nulls.lance`` into an :class:`IndexContent`."""
    from reference_impl.index import IndexContent, need_columns
    from reference_impl.index.bitmap import decode_row_map

    missing = [f for f in (PAGES, NULLS) if not files.has(f)]
    if missing:
        raise UnsupportedIndex(f"RTREE index {index.name!r} lacks {missing} (files: "
                               f"{files.names()}); no other layout is known", kind=KIND)
    reader = files.lance_file(PAGES)
    path = files.key(PAGES)
    need_columns(reader.schema.names, ("bbox", "id"), what=f"RTREE file {PAGES}", kind=KIND)
    table = reader.read_all().select(["bbox", "id"])
    bbox, ids = table.column("bbox").combine_chunks(), table.column("id").combine_chunks()
    if isinstance(bbox, pa.ExtensionArray):
        bbox = bbox.storage
    if (not pa.types.is_struct(bbox.type) or [f.name for f in bbox.type] != list(BOX)
            or ids.type != pa.uint64() or bbox.null_count or ids.null_count):
        raise FormatError(f"RTREE {PAGES} columns are bbox {bbox.type}, id {ids.type}, not "
                          "non-null struct<xmin, ymin, xmax, ymax> and uint64",
                          rule="INDEX-100", path=path)
    meta = {k.decode("utf-8", "replace"): v.decode("utf-8", "replace")
            for k, v in (reader.schema.metadata or {}).items()}
    try:
        page_size, num_items = int(meta["page_size"]), int(meta["num_items"])
        num_pages = int(meta["num_pages"])
    except (KeyError, ValueError):
        raise FormatError(f"RTREE {PAGES} metadata lacks an integer page_size, num_items or "
                          f"num_pages ({sorted(meta)})", rule="INDEX-100", path=path) from None
    if page_size < 2 or not 0 <= num_items <= table.num_rows:
        raise FormatError(f"RTREE page_size {page_size} / num_items {num_items} do not fit "
                          f"{table.num_rows} entries", rule="INDEX-100", path=path)
    try:
        pages = page_layout(num_items, page_size)
    except ValueError as exc:
        raise FormatError(f"RTREE {exc}", rule="INDEX-100", path=path) from None
    total = pages[-1][1] + pages[-1][2]
    if num_items == 0 and table.num_rows == 0 and num_pages in (0, 1):
        # an empty tree: pylance 14.0.2 writes one with num_pages 0 (segments merged after a
        # compaction whose remap was deferred, when no row is left to them)
        pages = [] if num_pages == 0 else pages
        total = 0
    if len(pages) != num_pages or total != table.num_rows:
        raise FormatError(f"RTREE of {num_items} items in pages of {page_size} has "
                          f"{len(pages)} pages and {total} entries, but the metadata says "
                          f"{num_pages} pages and the file holds {table.num_rows} entries",
                          rule="INDEX-100", path=path)
    coords = {n: bbox.field(n).to_numpy(zero_copy_only=False).astype(float) for n in BOX}
    id_values = ids.to_numpy().astype(np.uint64)
    leaves = pa.table({"row_id": pa.array(id_values[:num_items], pa.uint64()),
                       **{n: pa.array(coords[n][:num_items]) for n in BOX}})
    parent = np.full(table.num_rows, -1, np.int64)
    for p, (_level, first, count) in enumerate(pages):
        parent[first:first + count] = p
    branches = pa.table({"parent": pa.array(parent[num_items:]),
                         "page": pa.array(id_values[num_items:], pa.uint64()),
                         **{n: pa.array(coords[n][num_items:]) for n in BOX}})
    nulls_path = files.key(NULLS)
    null_table = files.read_table(NULLS)
    if "nulls" not in null_table.column_names or null_table.num_rows > 1:
        raise FormatError(f"RTREE {NULLS} holds columns {null_table.column_names} and "
                          f"{null_table.num_rows} rows, not one nulls row", rule="INDEX-100",
                          path=nulls_path)
    raw = null_table.column("nulls").to_pylist()
    nulls, full = (decode_row_map(raw[0], path=nulls_path) if raw and raw[0] is not None
                   else (np.zeros(0, np.uint64), []))
    try:
        declared = json.loads(meta.get("bbox", "null"))
    except ValueError:
        declared = None
    summary = {"leaf_entries": num_items, "pages": num_pages, "page_size": page_size,
               "null_rows": int(len(nulls)), "bbox": declared}
    return IndexContent(kind=KIND, version=VERSION, entries=leaves, summary=summary,
                        extra={"branches": branches, "pages": pages, "nulls": nulls,
                               "full_null_fragments": full, "metadata": meta,
                               "bbox": declared, "row_addresses": False})


# ---- holding the tree against its data ----

def _box_text(b) -> str:
    return "(" + ", ".join(f"{float(v):g}" for v in b) + ")"


def check(content, index, data, remap=None):
    """Yield a :class:`Disagreement` for each way the tree disagrees with its rows: a leaf
    box that does not hold its row's box (INDEX-130: a spatial filter loses the row), a
    branch box that does not hold its page's boxes or a page named wrong (INDEX-131: the
    walk never reaches them), null rows other than the data's (INDEX-132: ``IS NULL`` is
    answered from them alone), and a leaf box larger than its row's, a row twice or a row
    without coordinates in a leaf (INDEX-133, a warning: answers are rechecked). A live row
    with coordinates in no leaf is INDEX-101, a row outside the covered fragments
    INDEX-103."""
    from reference_impl.index import Disagreement, IndexedData
    from reference_impl.index.against import ROW_MISSING, ROW_OUTSIDE, _capped, _row_text
    from reference_impl.index.geometry import BOX, EMPTY, NULL, UNREAD, boxes

    name = index.name
    read = boxes(data.values)
    if read is None:
        raise UnsupportedIndex(f"RTREE values of type {data.values.type} are not read as "
                               "geometries here: the tree is not held against the data",
                               kind=KIND)
    state, want = read
    leaves = content.entries
    named = leaves.column("row_id").to_numpy().astype(np.uint64)
    rows = data.translate(named) if data.moves else named
    have = box_matrix(leaves)
    kind = data.classify(rows)
    out = {RULE_LEAF: [], RULE_EXACT: [], ROW_OUTSIDE: [], ROW_MISSING: [], RULE_NULLS: []}
    seen = np.zeros(len(data.row_ids), bool)
    live = np.flatnonzero(kind == IndexedData.LIVE)
    pos = data.positions(rows[live]).astype(np.int64)
    seen[pos] = True
    # the usual entry, judged at once: the only entry of its row, under the row's own box
    # (or of a row not read); every other entry is judged below, row by row
    once = np.bincount(pos, minlength=len(data.row_ids))[pos] == 1
    plain = once & (((state[pos] == BOX) & np.all(have[live] == want[pos], axis=1))
                    | (state[pos] == UNREAD))
    entries_of: dict[int, list[int]] = {}
    for e, p in zip(live[~plain].tolist(), pos[~plain].tolist(), strict=True):
        entries_of.setdefault(p, []).append(e)
    for p, es in entries_of.items():
        r = int(data.row_ids[p])
        if state[p] == UNREAD:
            continue
        if len(es) > 1 and not data.stable_row_ids:
            # (with stable row ids an updated row keeps its id: the entry of its old place
            # stays beside the new one, as pylance 14.0.2 leaves it, and is rechecked away)
            out[RULE_EXACT].append(Disagreement(
                RULE_EXACT, f"RTREE index {name!r} holds row {_row_text(r, data)} in "
                f"{len(es)} leaf entries ({', '.join(map(str, es[:4]))})", r, None,
                {"entry": es[1]}))
        if state[p] in (EMPTY, NULL):
            got = have[es[0]]
            if state[p] == EMPTY and all(have[e][0] > have[e][2] or have[e][1] > have[e][3]
                                         for e in es):
                # pylance 4.0.2 keeps a row without coordinates as a leaf under the empty
                # box (inf, inf, -inf, -inf), which meets no query box: no answer changes
                continue
            what = "no coordinates" if state[p] == EMPTY else "a null geometry"
            out[RULE_EXACT].append(Disagreement(
                RULE_EXACT, f"RTREE index {name!r} holds row {_row_text(r, data)}, which has "
                f"{what}, under the box {_box_text(got)}", r, None, {"entry": es[0]}))
            continue
        box = want[p]
        holding = [e for e in es if holds(have[e], box)]
        if not holding:
            got = have[es[0]]
            out[RULE_LEAF].append(Disagreement(
                RULE_LEAF, f"RTREE index {name!r} holds row {_row_text(r, data)} under the box "
                f"{_box_text(got)}, which does not hold its geometry's box "
                f"{_box_text(box)}: a spatial filter there loses the row", r, None,
                {"entry": es[0]}))
        elif not any(np.array_equal(have[e], box) for e in holding):
            got = have[holding[0]]
            out[RULE_EXACT].append(Disagreement(
                RULE_EXACT, f"RTREE index {name!r} holds row {_row_text(r, data)} under the box "
                f"{_box_text(got)}, larger than its geometry's box {_box_text(box)}", r,
                None, {"entry": holding[0]}))
    for e in np.flatnonzero(kind == IndexedData.OUTSIDE).tolist():
        r = int(rows[e])
        out[ROW_OUTSIDE].append(Disagreement(ROW_OUTSIDE, f"index {name!r} names row "
                                             f"{_row_text(r, data)} in leaf entry {e}, which is "
                                             "not a row of the fragments it covers", r, None,
                                             {"entry": e}))
    for p in np.flatnonzero((state == BOX) & ~seen).tolist():
        r = int(data.row_ids[p])
        out[ROW_MISSING].append(Disagreement(
            ROW_MISSING, f"index {name!r} does not name row {_row_text(r, data)}, a live row "
            f"of a fragment it covers whose geometry has the box {_box_text(want[p])}", r,
            None))
    out[RULE_NULLS] = list(_null_disagreements(content, name, data, state))
    out[RULE_EXACT] += list(declared_bbox_disagreements(content, name))
    for rule, what in ((ROW_OUTSIDE, "rows outside the covered fragments"),
                       (ROW_MISSING, "rows with coordinates in no leaf"),
                       (RULE_LEAF, "leaf boxes that do not hold their row"),
                       (RULE_NULLS, "null rows other than the data's"),
                       (RULE_EXACT, "leaf entries larger than their row or repeated")):
        yield from _capped(out[rule], rule, what, name)
    yield from _capped(list(branch_disagreements(content, name)), RULE_BRANCH,
                       "branch entries that do not hold their page", name)


def _null_disagreements(content, name, data, state):
    from reference_impl.index import Disagreement, IndexedData
    from reference_impl.index.against import _row_text
    from reference_impl.index.geometry import NULL

    nulls = np.asarray(content.extra["nulls"], np.uint64)
    full = [int(f) for f in content.extra["full_null_fragments"]]
    if full:
        frags = (data.row_ids >> np.uint64(32)).astype(np.int64)
        nulls = np.union1d(nulls, data.row_ids[np.isin(frags, full)])
    rows = data.translate(nulls) if data.moves else nulls
    kind = data.classify(rows)
    listed = np.zeros(len(data.row_ids), bool)
    live = kind == IndexedData.LIVE
    listed[data.positions(rows[live])] = True
    for p in np.flatnonzero(listed & (state != NULL)).tolist():
        r = int(data.row_ids[p])
        yield Disagreement(RULE_NULLS, f"RTREE index {name!r} lists row {_row_text(r, data)} "
                           f"as null, but {data.field_name!r} holds a geometry there: "
                           "IS NULL answers it", r, None)
    for p in np.flatnonzero(~listed & (state == NULL)).tolist():
        r = int(data.row_ids[p])
        yield Disagreement(RULE_NULLS, f"RTREE index {name!r} does not list row "
                           f"{_row_text(r, data)} as null, but {data.field_name!r} is null "
                           "there: IS NULL loses it", r, None)
    for r in rows[kind == IndexedData.OUTSIDE][:11].tolist():
        yield Disagreement(RULE_NULLS, f"RTREE index {name!r} lists row {_row_text(r, data)} "
                           "as null, which is not a row of the fragments it covers", r, None)


def branch_disagreements(content, name: str):
    """Each branch entry names a page of the level below, each such page once, under a box
    that holds every box of that page; the root is the last page."""
    from reference_impl.index import Disagreement

    pages = content.extra["pages"]
    branches = content.extra["branches"]
    leaves = content.entries
    boxes = np.concatenate([box_matrix(leaves), box_matrix(branches)])
    first_branch = leaves.num_rows
    level_of = [level for level, _, _ in pages]
    named = np.zeros(len(pages), np.int64)
    targets = branches.column("page").to_numpy().astype(np.uint64)
    holders = branches.column("parent").to_numpy()
    for j, (target, holder) in enumerate(zip(targets.tolist(), holders.tolist(), strict=True)):
        at = first_branch + j
        if target >= len(pages) or level_of[target] != level_of[holder] - 1:
            yield Disagreement(RULE_BRANCH, f"RTREE index {name!r}: branch entry {at} (page "
                               f"{holder}) names page {target}, which is not a page of the "
                               "level below", None, None, {"entry": at})
            continue
        named[target] += 1
        _, first, count = pages[target]
        if not count:
            continue
        outer = boxes[at]
        union = union_of(boxes[first:first + count])
        if not holds(outer, union):
            yield Disagreement(RULE_BRANCH, f"RTREE index {name!r}: branch entry {at} holds "
                               f"page {target} under the box {_box_text(outer)}, which does "
                               f"not hold the page's boxes {_box_text(union)}: the walk "
                               "skips its rows", None, None, {"entry": at, "page": target})
    for p in np.flatnonzero(named[:-1] != 1).tolist():
        yield Disagreement(RULE_BRANCH, f"RTREE index {name!r}: page {p} is named by "
                           f"{int(named[p])} branch entries, not one: the walk reaches its "
                           "rows " + ("never" if named[p] == 0 else "more than once"), None,
                           None, {"page": p})



def declared_bbox_disagreements(content, name: str):
    """The metadata ``bbox`` holds every leaf box (INDEX-133: readers do not answer from
    it). A bbox of nulls (pylance 4.0.2 writes one when a leaf holds the empty box) or none
    is not judged."""
    from reference_impl.index import Disagreement

    declared = content.extra.get("bbox")
    leaves = content.entries
    if not leaves.num_rows or not isinstance(declared, dict):
        return
    try:
        d = tuple(float(declared[k]) for k in ("minx", "miny", "maxx", "maxy"))
    except (KeyError, TypeError, ValueError):
        return
    boxes = box_matrix(leaves)
    boxes = boxes[(boxes[:, 0] <= boxes[:, 2]) & (boxes[:, 1] <= boxes[:, 3])]
    if not len(boxes):
        return
    union = union_of(boxes)
    if not holds(d, union):
        yield Disagreement(RULE_EXACT, f"RTREE index {name!r}: the metadata bbox {declared} "
                           f"does not hold the leaves' boxes {_box_text(union)}", None, None,
                           {})
