"""The bounding box of each geometry of a column: what an RTREE index keys its rows by.

A geometry column holds one of (as pylance 4.0.2 to 14.0.2 index them):

* **WKT** text (``string`` / ``large_string``, or the ``geoarrow.wkt`` extension): a type
  name, an optional ``Z``/``M``/``ZM`` tag, and coordinate tuples in parentheses, or
  ``EMPTY``;
* **WKB** bytes (``binary`` / ``large_binary``, or ``geoarrow.wkb``): a byte-order byte
  (0 big-endian, 1 little-endian), a uint32 type (1 point, 2 linestring, 3 polygon, 4-6 their
  multi forms, 7 a collection; ISO adds 1000 for Z, 2000 for M, 3000 for ZM; EWKB flags
  0x80000000 Z, 0x40000000 M and 0x20000000 for an SRID that follows), then the coordinates;
* **geoarrow native** arrays: a point as ``struct<x, y[, z][, m]>`` or an interleaved
  ``fixed_size_list<double>[2..4]``, nested in lists for line strings, polygons and their
  multi forms; a box as ``struct<xmin, ymin, [zmin,] xmax, ymax[, zmax]>``.

The box of a geometry is the least and greatest x and y over its coordinates (z and m are
not part of it). A geometry without coordinates (``EMPTY``; a WKB point of NaN
coordinates, WKB's way of writing an empty point) has no box: its row is in no leaf and not
among the null rows. :func:`boxes` answers each row's box, or that it has none, is null, or
cannot be read here (then the row is not judged).
"""

from __future__ import annotations

import re
import struct

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

#: what :func:`boxes` says of a row
BOX, EMPTY, NULL, UNREAD = 0, 1, 2, 3

#: nesting bound of WKB collections (a deeper one is not read)
MAX_DEPTH = 32

#: the words a WKT text may hold: type names, dimension tags, EMPTY
_WKT_WORDS = frozenset({"point", "linestring", "polygon", "multipoint", "multilinestring",
                        "multipolygon", "geometrycollection", "triangle", "tin",
                        "polyhedralsurface", "circularstring", "z", "m", "zm", "empty"})
_WKT_TOKEN = re.compile(r"\s*([A-Za-z]+|[-+0-9.eE]+|NaN|nan|[(),])")


def _wkt_box(text: str) -> tuple | None | str:
    """``(xmin, ymin, xmax, ymax)`` of a WKT geometry, None when it has no coordinates,
    or "unread" for text that is not WKT."""
    tokens = _WKT_TOKEN.findall(text)
    if "".join(tokens).replace(" ", "") != re.sub(r"\s+", "", text):
        return "unread"
    if not tokens or tokens[0].lower() not in _WKT_WORDS or tokens[0].lower() in (
            "z", "m", "zm", "empty"):
        return "unread"
    xs, ys, group, depth = [], [], [], 0
    for tok in tokens:
        if tok == "(":
            depth += 1
        elif tok in (",", ")"):
            if group:
                if len(group) < 2:
                    return "unread"
                xs.append(group[0])
                ys.append(group[1])
                group = []
            if tok == ")":
                depth -= 1
        elif tok[0].isalpha() and tok.lower() != "nan":
            if group or tok.lower() not in _WKT_WORDS:
                return "unread"
        else:
            if depth == 0:
                return "unread"
            try:
                group.append(float(tok))
            except ValueError:
                return "unread"
    if depth != 0 or group:
        return "unread"
    return _box_of(xs, ys)


def _box_of(xs, ys):
    pts = [(x, y) for x, y in zip(xs, ys, strict=True) if x == x and y == y]  # NaN != NaN
    if not pts:
        return None
    px = [p[0] for p in pts]
    py = [p[1] for p in pts]
    return (float(min(px)), float(min(py)), float(max(px)), float(max(py)))


class _Wkb:
    """A bounded reader of one WKB value: every count is checked against the bytes left."""

    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0
        self.xs: list[float] = []
        self.ys: list[float] = []

    def _take(self, fmt: str):
        size = struct.calcsize(fmt)
        if self.pos + size > len(self.data):
            raise ValueError("WKB runs past its end")
        out = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += size
        return out

    def geometry(self, depth: int = 0) -> None:
        if depth > MAX_DEPTH:
            raise ValueError("WKB nests too deep")
        (order,) = self._take("B")
        if order not in (0, 1):
            raise ValueError(f"WKB byte order {order}")
        e = "<" if order == 1 else ">"
        (code,) = self._take(e + "I")
        dims = 2 + bool(code & 0x80000000) + bool(code & 0x40000000)
        if code & 0x20000000:
            self._take(e + "I")  # the SRID
        code &= 0x0FFFFFFF
        base, iso = code % 1000, code // 1000
        if iso:
            dims = {1: 3, 2: 3, 3: 4}.get(iso, 0)
            if not dims:
                raise ValueError(f"WKB type {code}")
        if base == 1:
            self._points(e, dims, 1)
        elif base == 2:
            self._points(e, dims, self._count(e, 8 * dims))
        elif base == 3:
            for _ in range(self._count(e, 4)):
                self._points(e, dims, self._count(e, 8 * dims))
        elif base in (4, 5, 6, 7):
            for _ in range(self._count(e, 5)):
                self.geometry(depth + 1)
        else:
            raise ValueError(f"WKB type {code}")

    def _count(self, e: str, least_each: int) -> int:
        (n,) = self._take(e + "I")
        if n * least_each > len(self.data) - self.pos:
            raise ValueError(f"WKB count {n} exceeds the bytes left")
        return n

    def _points(self, e: str, dims: int, n: int) -> None:
        size = 8 * dims * n
        if self.pos + size > len(self.data):
            raise ValueError("WKB coordinates run past its end")
        values = np.frombuffer(self.data, e + "f8", dims * n, self.pos).reshape(n, dims)
        self.pos += size
        self.xs.extend(values[:, 0].tolist())
        self.ys.extend(values[:, 1].tolist())


def _wkb_box(data: bytes) -> tuple | None | str:
    reader = _Wkb(bytes(data))
    try:
        reader.geometry()
    except (ValueError, struct.error):
        return "unread"
    return _box_of(reader.xs, reader.ys)


def _native_points(array: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """``(x, y, row of each point)`` of a geoarrow native array (points nested in lists), or
    None when it is not one."""
    owner = np.arange(len(array), dtype=np.int64)
    while pa.types.is_list(array.type) or pa.types.is_large_list(array.type):
        parents = pc.list_parent_indices(array).to_numpy()
        owner = owner[parents]
        array = pc.list_flatten(array)
    t = array.type
    if pa.types.is_struct(t):
        names = [t.field(i).name for i in range(t.num_fields)]
        if names[:2] != ["x", "y"]:
            return None
        x, y = (pc.struct_field(array, n) for n in ("x", "y"))
    elif pa.types.is_fixed_size_list(t) and 2 <= t.list_size <= 4:
        flat = array.flatten().to_numpy(zero_copy_only=False).reshape(-1, t.list_size)
        x, y = pa.array(flat[:, 0]), pa.array(flat[:, 1])
    else:
        return None
    if not pa.types.is_floating(x.type):
        return None
    return (x.to_numpy(zero_copy_only=False).astype(float),
            y.to_numpy(zero_copy_only=False).astype(float), owner)


#: a WKT point of two plain decimal coordinates, the usual value: read for a whole column at
#: once (:func:`_wkt_points`); any other text goes through :func:`_wkt_box`
_WKT_POINT = (r"^\s*(?i:point)\s*\(\s*(?P<x>-?[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?)"
              r"\s+(?P<y>-?[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?)\s*\)\s*$")


def _wkt_points(array: pa.Array, box: np.ndarray) -> np.ndarray:
    """Fill ``box`` for the rows of ``array`` (WKT text) that are plain 2-D points, all at
    once with Arrow; which rows those are (the same boxes :func:`_wkt_box` gives them)."""
    found = pc.extract_regex(array, _WKT_POINT)
    done = found.is_valid().to_numpy(zero_copy_only=False)
    if done.any():
        for j, name in ((0, "x"), (1, "y")):
            values = pc.struct_field(found, name).cast(pa.float64())
            col = values.to_numpy(zero_copy_only=False)
            box[done, j] = col[done]
            box[done, j + 2] = col[done]
    return done


def boxes(array: pa.Array) -> tuple[np.ndarray, np.ndarray] | None:
    """``(state, box)`` for each row of a geometry column: ``state`` BOX, EMPTY, NULL or
    UNREAD and ``box`` a float64 array of shape ``(rows, 4)`` (xmin, ymin, xmax, ymax; NaN
    where there is none). None for a column type that is not a geometry read here."""
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    if isinstance(array, pa.ExtensionArray):
        array = array.storage
    n = len(array)
    state = np.full(n, BOX, np.int8)
    box = np.full((n, 4), np.nan)
    valid = array.is_valid().to_numpy(zero_copy_only=False)
    state[~valid] = NULL
    t = array.type
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t) \
            or pa.types.is_large_binary(t):
        text = pa.types.is_string(t) or pa.types.is_large_string(t)
        one = _wkt_box if text else _wkb_box
        done = _wkt_points(array, box) if text else np.zeros(n, bool)
        for i, value in enumerate(array.to_pylist()):
            if value is None or done[i]:
                continue
            b = one(value)
            if b == "unread":
                state[i] = UNREAD
            elif b is None:
                state[i] = EMPTY
            else:
                box[i] = b
        return state, box
    if pa.types.is_struct(t) and [t.field(i).name for i in range(t.num_fields)] in (
            ["xmin", "ymin", "xmax", "ymax"], ["xmin", "ymin", "zmin", "xmax", "ymax", "zmax"]):
        for j, name in enumerate(("xmin", "ymin", "xmax", "ymax")):
            box[:, j] = pc.struct_field(array, name).to_numpy(zero_copy_only=False)
        state[valid & np.isnan(box).any(axis=1)] = EMPTY
        return state, box
    points = _native_points(array)
    if points is None:
        return None
    x, y, owner = points
    keep = ~(np.isnan(x) | np.isnan(y))
    x, y, owner = x[keep], y[keep], owner[keep]
    has = np.zeros(n, bool)
    has[owner] = True
    for j, (values, fn) in enumerate(((x, np.minimum), (y, np.minimum), (x, np.maximum),
                                      (y, np.maximum))):
        col = np.full(n, np.inf if fn is np.minimum else -np.inf)
        fn.at(col, owner, values)
        box[has, j] = col[has]
    state[valid & ~has] = EMPTY
    return state, box
