"""INDEX-130..139: spatial (RTREE) indexes held against the geometries they index (deep).

An RTREE index keeps the bounding box of each row's geometry in the leaves of a packed
R-tree (``reference_impl.index.rtree``; the boxes of WKT, WKB and geoarrow values are read
by ``reference_impl.index.geometry``). A spatial filter walks from the root into every page
whose box meets the query's box and keeps the leaf rows whose box meets it, then rechecks
them; ``IS NULL`` is answered from the null rows the index lists. So a leaf box that does not
hold its row's geometry, or a branch box that does not hold its page, loses rows (an error),
and so do null rows other than the data's; a box larger than the row's only costs a
recheck (a warning). The machinery is :mod:`conformance.rules.index_content`'s, as for
every kind (spec 004, ``IndexMetadata``: "A bitmap of the included fragment ids.").
"""

from __future__ import annotations

from .index_content import findings
from .registry import rule

_SEC = "IndexMetadata"
_BITMAP = "A bitmap of the included fragment ids."
_RELEASES = ("pylance 4.0.2 to 14.0.2 write RTREE (1.0.4 and earlier refuse the kind): "
             "page_data.lance (bbox, id; leaves first, then branch levels, pages of "
             "page_size, 4096 by default) and nulls.lance (a row-id tree map); WKT text, WKB "
             "bytes and geoarrow point/line/polygon/box arrays are read, a value of another "
             "type or text that is not WKT is not judged")


@rule("INDEX-130", title="RTREE leaf boxes hold their rows' geometry", severity="error",
      spec="004", section=_SEC, clause=_BITMAP, deep=True,
      pylance="st_intersects and the other spatial filters keep only the rows whose leaf box "
              "meets the query's box: a leaf box beside the geometry loses the row",
      releases=_RELEASES)
def rtree_leaves(ctx):
    """Each leaf entry of a live covered row holds the box of the row's geometry; every row
    with coordinates has one (INDEX-101 otherwise)."""
    yield from findings(ctx, "INDEX-130")


@rule("INDEX-131", title="RTREE branch boxes hold their pages, each page named once",
      severity="error", spec="004", section=_SEC, clause=_BITMAP, deep=True,
      pylance="the walk from the root descends only into pages whose branch box meets the "
              "query's box: a branch box that does not hold its page, or a page no branch "
              "names, hides the page's rows",
      releases=_RELEASES)
def rtree_branches(ctx):
    yield from findings(ctx, "INDEX-131")


@rule("INDEX-132", title="RTREE null rows are the rows whose geometry is null",
      severity="error", spec="004", section=_SEC, clause=_BITMAP, deep=True,
      pylance="IS NULL on the column is answered from nulls.lance alone (an exact answer): "
              "a null row it lacks is lost, a row with a geometry it lists is answered",
      releases=_RELEASES + "; a geometry without coordinates (EMPTY) is neither a leaf nor "
                           "a null row")
def rtree_nulls(ctx):
    yield from findings(ctx, "INDEX-132")


@rule("INDEX-133", title="RTREE leaf boxes are their rows' boxes, one entry per row",
      severity="warning", spec="004", section=_SEC, clause=_BITMAP, deep=True,
      pylance="a larger box, a second entry or an entry for a row without coordinates adds "
              "candidates the filter rechecks: the answer is unchanged; the metadata bbox "
              "is not read to answer",
      releases=_RELEASES + "; pylance 4.0.2 keeps a row without coordinates as a leaf under "
                           "the empty box (inf, inf, -inf, -inf), which meets no query and "
                           "is accepted, and then writes the metadata bbox as nulls (not "
                           "judged); 11.0.0 and 14.0.2 leave such rows out")
def rtree_exact(ctx):
    yield from findings(ctx, "INDEX-133")
