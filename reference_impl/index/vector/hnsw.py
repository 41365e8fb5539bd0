"""HNSW: the graph an IVF_HNSW_* index keeps per IVF partition, over the partition's rows.

Lance-file layout (pylance 0.1x to 14.0.2): ``index.idx`` holds one row per node per level::

    __vector_id: uint32          the node: the row's position in its partition of the storage
                                 (``auxiliary.idx``), 0 .. L-1
    __neighbors: list<uint32>    its neighbours on that level (positions too)
    _distance:   list<float>     their distances

The IVF copy of ``index.idx`` gives each partition's first graph row and graph row count;
schema metadata ``lance:hnsw`` is a JSON list with one JSON text per partition::

    {"entry_point": node, "params": {"max_level", "m", "ef_construction", ...},
     "level_offsets": [o_0 = 0, o_1, ..., o_{max_level}]}

Level ``i`` of a partition is its graph rows ``o_i .. o_{i+1}`` (the last level ends at the
partition's graph row count). Level 0 holds every node of the partition.

Consistency judged (:func:`problems`): level 0 holds each of the ``L`` nodes once; every node,
neighbour and the entry point is a node of the partition.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np

from reference_impl.errors import FormatError
from reference_impl.index.vector.ivf import RULE_LAYOUT


@dataclass
class HnswGraph:
    """One partition's graph. ``levels[i]`` is ``(nodes, neighbour offsets, neighbours)``."""

    entry_point: int
    params: dict
    levels: list
    #: per level, the ``_distance`` value of each neighbour (aligned with ``levels[i][2]``),
    #: or None where the file has no such column
    distances: list | None = None

    @property
    def max_level(self) -> int:
        return len(self.levels) - 1


def parse_params(raw: bytes | str | None, partitions: int, *, path: str | None = None) -> list:
    """The per-partition dicts of the ``lance:hnsw`` schema metadata."""
    if raw is None:
        raise FormatError("HNSW index.idx has no lance:hnsw metadata", rule=RULE_LAYOUT, path=path)
    try:
        texts = json.loads(raw)
        metas = [json.loads(t) if isinstance(t, str) else t for t in texts]
    except (ValueError, TypeError) as exc:
        raise FormatError(f"lance:hnsw metadata is not JSON: {exc}", rule=RULE_LAYOUT,
                          path=path) from None
    if not isinstance(metas, list) or len(metas) != partitions:
        raise FormatError(f"lance:hnsw describes {len(metas) if isinstance(metas, list) else 0} "
                          f"partitions, the IVF {partitions}", rule=RULE_LAYOUT, path=path)
    return metas


def _list_of(t, item) -> bool:
    """``t`` is a (large) list whose items satisfy ``item`` (a ``pa.types`` predicate)."""
    import pyarrow as pa

    return (pa.types.is_list(t) or pa.types.is_large_list(t)) and item(t.value_type)


def graphs(table, starts, counts, metas, *, path: str | None = None) -> list[HnswGraph]:
    """Split the graph rows of ``index.idx`` into one :class:`HnswGraph` per partition."""
    import pyarrow as pa

    names = table.column_names
    if "__vector_id" not in names or "__neighbors" not in names:
        raise FormatError(f"HNSW index.idx has columns {names[:6]}, not __vector_id and "
                          "__neighbors", rule=RULE_LAYOUT, path=path)
    ids = table.column("__vector_id").combine_chunks()
    nbrs = table.column("__neighbors").combine_chunks()
    if not pa.types.is_integer(ids.type) or not _list_of(nbrs.type, pa.types.is_integer):
        raise FormatError(f"HNSW index.idx columns are {ids.type} and {nbrs.type}, not an "
                          "integer node and a list of integer neighbours", rule=RULE_LAYOUT,
                          path=path)
    node = ids.to_numpy(zero_copy_only=False).astype(np.int64)
    offs = np.asarray(nbrs.offsets.to_numpy(), dtype=np.int64)
    vals = np.asarray(nbrs.values.to_numpy(zero_copy_only=False), dtype=np.int64)
    dist = None
    if "_distance" in table.column_names:
        col = table.column("_distance").combine_chunks()
        if _list_of(col.type, pa.types.is_floating) and np.array_equal(
                np.asarray(col.offsets.to_numpy(), dtype=np.int64), offs):
            dist = np.asarray(col.values.to_numpy(zero_copy_only=False), dtype=np.float64)
    out = []
    for start, count, meta in zip(starts, counts, metas, strict=False):
        start, count = int(start), int(count)
        if start + count > len(node):
            raise FormatError(f"HNSW partition rows {start}+{count} lie outside the {len(node)} "
                              "graph rows", rule=RULE_LAYOUT, path=path)
        lo = [int(x) for x in meta.get("level_offsets", [0])] + [count]
        if any(b < a for a, b in zip(lo, lo[1:], strict=False)) or lo[0] != 0:
            raise FormatError(f"HNSW level offsets {lo[:-1]} are not ascending within "
                              f"{count} rows", rule=RULE_LAYOUT, path=path)
        levels, distances = [], []
        for a, b in zip(lo, lo[1:], strict=False):
            a, b = start + a, start + b
            levels.append((node[a:b], offs[a:b + 1] - offs[a], vals[offs[a]:offs[b]]))
            distances.append(None if dist is None else dist[offs[a]:offs[b]])
        out.append(HnswGraph(entry_point=int(meta.get("entry_point", 0)),
                             params=dict(meta.get("params") or {}), levels=levels,
                             distances=distances if dist is not None else None))
    return out


def problems(graph: HnswGraph, num_nodes: int) -> list[str]:
    """What is inconsistent in one partition's graph over ``num_nodes`` storage rows.

    Judged: level 0 holds each of the partition's nodes once; every node and neighbour named
    on any level is a node of the partition (``0 .. L-1``); the entry point is one. The upper
    levels' own layout differs between releases (pylance 0.38.3 ends a partition's graph with
    rows past its last level offset that repeat nodes; 14.0.2 does not) and is not judged."""
    found = []
    for level, (nodes, _offsets, neighbours) in enumerate(graph.levels):
        if len(nodes) and ((nodes < 0) | (nodes >= num_nodes)).any():
            bad = nodes[(nodes < 0) | (nodes >= num_nodes)]
            found.append(f"level {level} names node {int(bad[0])}, outside the partition's "
                         f"{num_nodes} rows")
        if len(neighbours) and ((neighbours < 0) | (neighbours >= num_nodes)).any():
            bad = neighbours[(neighbours < 0) | (neighbours >= num_nodes)]
            found.append(f"level {level} names neighbour {int(bad[0])}, outside the "
                         f"partition's {num_nodes} rows")
        if level == 0:
            distinct = len(np.unique(nodes))
            if len(nodes) != num_nodes or distinct != num_nodes:
                found.append(f"level 0 holds {distinct} distinct nodes in {len(nodes)} rows, "
                             f"not each of the partition's {num_nodes} rows once")
    if num_nodes and not 0 <= graph.entry_point < num_nodes:
        found.append(f"entry point {graph.entry_point} is outside the partition's {num_nodes} "
                     "rows")
    return found


def unreachable(graph: HnswGraph, num_nodes: int) -> np.ndarray:
    """The nodes (``0 .. num_nodes-1``) that no walk from the entry point reaches along the
    neighbour lists of any level: a search through the graph never visits them, so their
    rows are never an answer, not even to their own vector. Neighbours outside the partition
    are left to :func:`problems`. An empty partition has none."""
    if num_nodes <= 0 or not 0 <= graph.entry_point < num_nodes:
        return np.zeros(0, dtype=np.int64)
    adjacency: list[list[int]] = [[] for _ in range(num_nodes)]
    for nodes, offsets, neighbours in graph.levels:
        for j, node in enumerate(nodes.tolist()):
            if not 0 <= node < num_nodes:
                continue
            for n in neighbours[offsets[j]:offsets[j + 1]].tolist():
                if 0 <= n < num_nodes:
                    adjacency[node].append(n)
    seen = np.zeros(num_nodes, dtype=bool)
    seen[graph.entry_point] = True
    todo = [graph.entry_point]
    while todo:
        node = todo.pop()
        for n in adjacency[node]:
            if not seen[n]:
                seen[n] = True
                todo.append(n)
    return np.flatnonzero(~seen)


def _distances(x: np.ndarray, src: np.ndarray, dst: np.ndarray, distance: str) -> np.ndarray:
    """The distance of each edge ``src[i] -> dst[i]`` between rows of ``x``: squared L2, one
    minus the inner product (``"dot"``), or that over 1024 (``"dot/1024"``)."""
    if distance == "dot":
        return 1.0 - (x[src] * x[dst]).sum(axis=1)
    if distance == "dot/1024":
        return (1.0 - (x[src] * x[dst]).sum(axis=1)) / 1024.0
    return ((x[src] - x[dst]) ** 2).sum(axis=1)


#: how far a recorded edge distance may lie from the one of the stored vectors (float32
#: arithmetic in another order): relative, and absolute near zero
DISTANCE_RTOL = 1e-3
DISTANCE_ATOL = 1e-4


def wrong_distances(graph: HnswGraph, vectors: np.ndarray, distance: str = "l2",
                    others=()) -> list[tuple[int, int, float, float]]:
    """The level-0 edges whose recorded ``_distance`` is not the distance of the two nodes'
    vectors in ``vectors`` (the partition's stored vectors, or its codes decoded, row ``i``
    for node ``i``): ``(node, neighbour, recorded, actual)`` each. ``distance`` is ``"l2"``
    (squared Euclidean), ``"dot"`` (one minus the inner product) or ``"dot/1024"`` (one minus
    the inner product, over 1024). A graph whose distances are not its vectors' was built
    over other vectors (or other nodes), and a walk through it is steered away from the rows
    it should find. Nodes or neighbours outside ``vectors`` are left to :func:`problems`; a
    graph without distances yields none.

    ``others``: the other readings releases record of the same graph, each a ``(vectors,
    distance)`` pair (NaN rows where a row's vector is not known, such as a deleted row):
    the rows' own vectors prepared by the metric (pylance 0.20.0 builds IVF_HNSW_SQ/PQ
    graphs over them), the scaled values themselves under ``"dot/1024"`` (0.38.3 and 4.0.2's
    IVF_HNSW_SQ under dot). When the
    storage's reading leaves edges unexplained, the reading that explains the largest share
    of the edges whose two ends it knows judges the graph, on those edges only."""
    if graph.distances is None or not graph.levels or graph.distances[0] is None:
        return []
    nodes, offsets, neighbours = graph.levels[0]
    recorded = graph.distances[0]
    n = len(vectors)
    counts = np.diff(offsets)
    source = np.repeat(nodes, counts)
    ok = (source >= 0) & (source < n) & (neighbours >= 0) & (neighbours < n)
    src, dst, rec = source[ok], neighbours[ok], recorded[ok]
    if not len(src):
        return []
    actual = _distances(np.asarray(vectors, dtype=np.float64), src, dst, distance)
    bad = np.abs(actual - rec) > DISTANCE_RTOL * np.abs(actual) + DISTANCE_ATOL
    if bad.any():
        share, best = bad.mean(), None
        for vecs, dist in others:
            x = np.asarray(vecs, dtype=np.float64)
            if x.ndim != 2 or len(x) < n:
                continue
            known = np.isfinite(x).all(axis=1)
            both = known[src] & known[dst]
            if not both.any():
                continue
            other = _distances(x, src[both], dst[both], dist)
            wrong = np.abs(other - rec[both]) > DISTANCE_RTOL * np.abs(other) + DISTANCE_ATOL
            if wrong.mean() < share:
                share, best = wrong.mean(), (both, other, wrong)
        if best is not None:
            both, actual, bad = best
            src, dst, rec = src[both], dst[both], rec[both]
    return [(int(a), int(b), float(r), float(d))
            for a, b, r, d in zip(src[bad], dst[bad], rec[bad], actual[bad], strict=True)]
