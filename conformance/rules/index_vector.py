"""INDEX-140..150: a vector index held against the vectors it indexes (deep, version scope).

A vector index answers a nearest-neighbour query from what it stores: the IVF centroids pick
the partitions to search, the stored vectors (FLAT), codes (PQ) or scaled values (SQ) rank the
rows in them, and the HNSW graph says which rows to visit. An index whose partitions, vectors
or codes are not its rows' returns other rows than the data's nearest, or misses them: it
answers other than its data (spec 004, ``IndexMetadata.fragment_bitmap``: "A bitmap of the
included fragment ids.": the rows of those fragments are what the index answers for).

The decoding is :mod:`reference_impl.index.vector` (every layout pylance 0.8.14 to 14.0.2
writes, the legacy protobuf ``index.idx`` and the Lance-file ``index.idx`` +
``auxiliary.idx``), the comparison :mod:`reference_impl.index.vector.against`; rows outside the
covered fragments and live rows missing are the shared INDEX-103 and INDEX-101 of
:mod:`conformance.rules.index_content`, which runs the machinery once per index.

What each release writes (centroids, residuals, cosine scaling, transposed codes) is a fact of
that release, recorded in the modules' docstrings; the rules judge only what a query reads.
"""

from __future__ import annotations

from .index_content import findings
from .registry import rule

_SEC = "IndexMetadata"
_CLAUSE = "A bitmap of the included fragment ids."
_RELEASES = ("pylance 0.8.14 to 0.20.x write IVF_PQ as the legacy protobuf index.idx; 0.2x to "
             "14.0.2 write IVF_FLAT/PQ/SQ and IVF_HNSW_* as index.idx + auxiliary.idx Lance "
             "files (0.10.x's IVF_HNSW_SQ/PQ in Lance 0.1 files: the IVF messages at byte "
             "positions, the SQ bounds and PQ codebook under lance:sq / lance:pq)")


@rule("INDEX-140", title="a vector index's partition sizes sum to the rows it holds",
      severity="error", spec="004", section=_SEC, deep=True, clause=_CLAUSE,
      pylance="pylance reads a partition as the rows its IVF offset and length name: sizes that "
              "do not add up to the stored rows read another partition's rows, or past them",
      releases=_RELEASES)
def vector_partition_sizes(ctx):
    yield from findings(ctx, "INDEX-140")


@rule("INDEX-141", title="a vector index holds each row once", severity="error", spec="004",
      section=_SEC, deep=True, clause=_CLAUSE,
      pylance="a row held twice is returned twice by a k-nearest query, taking the place of "
              "another row", releases=_RELEASES)
def vector_row_once(ctx):
    yield from findings(ctx, "INDEX-141")


@rule("INDEX-142", title="an IVF_FLAT index stores each row's own vector", severity="error",
      spec="004", section=_SEC, deep=True, clause=_CLAUSE,
      pylance="pylance ranks an IVF_FLAT partition by the stored vectors: a row stored with "
              "another row's vector is returned for that row's neighbours",
      releases="every release stores the vector as the table holds it; cosine indexes of "
               "pylance 0.38.3 and 14.0.2 store it scaled to unit length")
def vector_flat_values(ctx):
    yield from findings(ctx, "INDEX-142")


@rule("INDEX-143", title="each PQ code is the encoding of its row's vector", severity="error",
      spec="004", section=_SEC, deep=True, clause=_CLAUSE,
      pylance="pylance ranks an IVF_PQ partition by the codes' distances: a code other than "
              "the nearest codewords of the row ranks the row as another vector",
      releases="l2 and cosine indexes encode the residual (the vector, unit-scaled for cosine, "
               "minus its partition's centroid) in every release seen; dot indexes encode the "
               "vector itself from 0.20.0 on; 0.10.18 the residual at build, and the codeword "
               "of largest inner product for rows optimize_indices adds (a dot code is "
               "judged wrong only under every reading); 14.0.2 stores each "
               "partition's codes sub-space-major (storage_metadata transposed: true). A code "
               "is wrong only when another codeword is strictly nearer beyond float tolerance")
def vector_pq_codes(ctx):
    yield from findings(ctx, "INDEX-143")


@rule("INDEX-144", title="each SQ value is the quantisation of its row's vector",
      severity="error", spec="004", section=_SEC, deep=True, clause=_CLAUSE,
      pylance="pylance ranks an IVF_SQ partition by the scaled values: values of another "
              "vector rank the row as that vector",
      releases="0.20.0 to 14.0.2 quantise the vector (unit-scaled for cosine), not a residual, "
               "over the index's bounds, truncating; a value off by one is not judged")
def vector_sq_values(ctx):
    yield from findings(ctx, "INDEX-144")


@rule("INDEX-145", title="each row is in the partition of its nearest centroid",
      severity="error", spec="004", section=_SEC, deep=True, clause=_CLAUSE,
      pylance="pylance searches only the partitions whose centroids are nearest the query: a "
              "row filed under another partition is missed by the queries it answers",
      releases="l2: squared Euclidean; cosine: the unit-scaled vector by L2 to the centroids "
               "(0.2x-0.36, 13.0.0, 14.0.2) or by cosine to them (1.0.4-11.0.0; a row is "
               "misplaced only under both); dot: the inner product (every release seen). Ties "
               "within float tolerance are not judged")
def vector_assignment(ctx):
    yield from findings(ctx, "INDEX-145")


@rule("INDEX-146", title="HNSW graphs name only rows of their partition", severity="error",
      spec="004", section=_SEC, deep=True, clause=_CLAUSE,
      pylance="pylance walks an IVF_HNSW partition from its entry point through the "
              "neighbours: a node or neighbour outside the partition's rows reads another "
              "row or fails, and a node level 0 lacks is never visited. Under a compaction "
              "whose index remap was deferred, the storage is read through the fragment reuse "
              "index, which drops the rows deleted before it: the graph then has more nodes "
              "than vectors (pylance 4.0.2 aborts a nearest search through it, 11.0.0 answers "
              "no row, 14.0.2 refuses the index: 'has to be rebuilt')",
      releases="level 0 holds each node once in every release seen; the upper levels' layout "
               "differs (0.38.3 ends a partition with rows past its last level offset) and "
               "is not judged. pylance 4.0.2, 11.0.0 and 14.0.2 all leave an IVF_HNSW_* index "
               "whose rows a deferred-remap compaction dropped (delete, then "
               "compact_files(defer_index_remap=True)); optimize_indices afterwards rebuilds "
               "it (14.0.2)")
def vector_hnsw_graph(ctx):
    yield from findings(ctx, "INDEX-146")


@rule("INDEX-147", title="an HNSW graph over stored vectors records their distances",
      severity="error", spec="004", section=_SEC, deep=True, clause=_CLAUSE,
      pylance="pylance walks an IVF_HNSW partition greedily by the distances of the stored "
              "vectors or codes: a graph whose edges were made for other vectors (or other nodes) "
              "steers the walk away from a row, so a query for the row's own vector misses "
              "it (pylance 4.0.2's optimize_indices over IVF_HNSW_FLAT, and over IVF_HNSW_SQ/PQ "
              "too: 14.0.2's recall@5 through them falls from 0.97/0.73 to 0.36/0.43)",
      releases="judged on level 0 from the storage: IVF_HNSW_FLAT's stored vectors, "
               "IVF_HNSW_SQ's values decoded (start + code / 255 * span), IVF_HNSW_PQ's "
               "codewords concatenated; the squared L2 under l2 (and cosine for SQ/PQ), one "
               "minus the inner product under dot (and cosine for FLAT), as pylance 0.38.3 "
               "and 14.0.2 record them; pylance 0.20.0 builds IVF_HNSW_SQ/PQ graphs over the rows' "
               "own vectors and records their distances, so an edge is judged by whichever "
               "reading explains more of the index's edges (the rows' own only on edges "
               "between live rows); IVF_HNSW_SQ under dot: 11.0.0 and 14.0.2 record one "
               "minus the inner product of the decoded values, 0.38.3 and 4.0.2 "
               "(1 - codes . codes') / 1024 of the scaled values themselves")
def vector_hnsw_distances(ctx):
    yield from findings(ctx, "INDEX-147")


@rule("INDEX-148", title="each RaBitQ code is the quantisation of its row's residual",
      severity="error", spec="004", section=_SEC, deep=True, clause=_CLAUSE,
      pylance="pylance ranks an IVF_RQ partition by the codes' estimated distances: a sign "
              "code or extended code of another vector ranks the row as that vector (a swapped "
              "IVF_RQ no longer finds a row's own vector first; pylance 1.0.4 and 4.0.2's own "
              "compaction leaves codes under other rows, and through it 4.0.2 and 14.0.2 find "
              "18 of 40 rows for their own vectors)",
      releases="the residual (vector, unit-scaled under cosine, minus its partition's "
               "centroid) turned by the index's rotation, one sign bit per rotated dimension. "
               "pylance 1.0.4: a dense rotation matrix (global buffer rotate_mat_position) of "
               "D x num_bits dimensions, the vector zero-padded to them, no code_dim in the "
               "metadata; 4.0.2: the same over the fast rotation (fast_rotation_signs); 11.0.0 "
               "and 14.0.2: the fast rotation in D dimensions plus extended codes of num_bits "
               "- 1 bits blocked by 64 dimensions. Sign codes stored for fast scanning (packed: "
               "true) in all four. A sign is judged only beyond float rounding; an extended "
               "code is wrong when no one rescaling of the residual gives it (which rescaling "
               "the writer picks is its own: 11.0.0 and 14.0.2 pick the one of largest "
               "cosine). Under cosine, 11.0.0's optimize_indices files a row by the cosine to "
               "the centroids and encodes its residual from the L2-nearest one: either reading "
               "is accepted (codes and factors alike). pylance 1.0.4 and 4.0.2's "
               "compact_files (with its index remap) leaves the codes of the compacted rows "
               "under other rows: an expected finding of those releases (not seen in 9.0.1, "
               "11.0.0 or 14.0.2)")
def vector_rq_codes(ctx):
    yield from findings(ctx, "INDEX-148")


@rule("INDEX-149", title="each RaBitQ factor is its row's", severity="error", spec="004",
      section=_SEC, deep=True, clause=_CLAUSE,
      pylance="pylance estimates a row's distance to the query as add + scale * <query, code> "
              "and prunes by the error factor: a factor of another row, or of another metric, "
              "ranks the row as a vector it is not",
      releases="query_estimator raw_query (11.0.0, 14.0.2): __add_factors, __scale_factors, "
               "__error_factors (and __add_factors_ex, __scale_factors_ex with extended codes) "
               "from the residual's squared norm, the rotated centroid and the codes; no "
               "query_estimator (1.0.4, 4.0.2: residual_query): __add_factors (the squared "
               "residual, or one minus the residual's inner product with the centroid under "
               "dot) and __scale_factors only; under l2 and cosine one formula, under dot "
               "another (see reference_impl.index.vector.rq); judged within 1e-3 of the "
               "terms' size. Another query estimator is not judged and the report says so")
def vector_rq_factors(ctx):
    yield from findings(ctx, "INDEX-149")


@rule("INDEX-150", title="an IVF_RQ of more than one bit is in the layout readers search",
      severity="warning", spec="004", section=_SEC, deep=True, clause=_CLAUSE,
      pylance="pylance 9.0.1, 11.0.0 and 14.0.2 refuse a vector search through an IVF_RQ of "
              "num_bits above 1 written by 1.0.4 or 4.0.2, or by DuckDB's Lance extension "
              "1.5.5 ('RabitQ num_bits=4 requires __blocked_ex_codes column'); the one-bit "
              "index of those releases they search",
      releases="pylance 1.0.4 and 4.0.2, and DuckDB's Lance extension 1.5.5 (Lance 6.0.0; "
               "more than one bit by default), write num_bits above 1 as more rotated "
               "dimensions (D x num_bits sign bits, no query_estimator); 9.0.1 on as extended "
               "codes (__blocked_ex_codes). The index is true to its data (INDEX-148, "
               "INDEX-149 judge it); the warning says that readers of today cannot use it")
def vector_rq_layout(ctx):
    yield from findings(ctx, "INDEX-150")
