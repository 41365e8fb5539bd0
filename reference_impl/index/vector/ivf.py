"""IVF: the inverted-file partitioning every vector index of Lance starts with.

An IVF model is ``P`` centroids of dimension ``D`` and, per partition, where its rows lie
(``offsets``) and how many there are (``lengths``). It is stored as the protobuf message
``lance.index.pb.IVF`` (protos/index.proto)::

    IVF { 1 centroids: repeated float    (old releases: P*D floats, row-major)
          2 offsets: repeated uint64      first row (Lance-file layout) or byte position
                                          (legacy layout) of each partition
          3 lengths: repeated uint32      rows in each partition
          4 centroids_tensor: Tensor      (later releases: the centroids as a Tensor)
          5 loss: double? }               k-means loss of the training
    Tensor { 1 data_type (0 bf16, 1 f16, 2 f32, 3 f64, 4 u8, 5 u16, 6 u32, 7 u64)
             2 shape: repeated uint32     3 data: bytes (little-endian, row-major) }

In the Lance-file layout the message is a global buffer of ``index.idx`` and of
``auxiliary.idx`` (schema metadata ``lance:ivf`` names the buffer). pylance 14.0.2 writes the
centroids in ``index.idx``'s copy (with lengths 0 for the flat, PQ and SQ kinds, and the graph
rows per partition for HNSW) and the storage's partition lengths in ``auxiliary.idx``'s copy
(no centroids there). In the legacy layout the message is a stage of ``VectorIndex``.

Assignment rule: a row belongs to the partition whose centroid is nearest to its vector by the
index's metric (``l2``: squared Euclidean; ``cosine``: 1 - cosine similarity; ``dot``:
negative inner product).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from reference_impl.errors import FormatError
from reference_impl.proto import index_pb2

RULE_LAYOUT = "INDEX-100"  # an index whose bytes do not decode as its layout

#: Tensor.DataType -> numpy dtype (little-endian).
TENSOR_DTYPES = {0: None, 1: np.dtype("<f2"), 2: np.dtype("<f4"), 3: np.dtype("<f8"),
                 4: np.dtype("u1"), 5: np.dtype("<u2"), 6: np.dtype("<u4"), 7: np.dtype("<u8")}

#: Largest number of elements a tensor or centroid list may claim (bounded allocation).
MAX_ELEMENTS = 1 << 28


def parse_message(cls, raw: bytes, *, what: str, path: str | None):
    msg = cls()
    try:
        msg.ParseFromString(bytes(raw))
    except Exception as exc:  # noqa: BLE001 - DecodeError and friends
        raise FormatError(f"{what} does not parse as {cls.DESCRIPTOR.full_name}: {exc}",
                          rule=RULE_LAYOUT, path=path) from None
    return msg


def tensor_array(t, *, what: str, path: str | None) -> np.ndarray:
    """A ``Tensor`` message as a numpy array of its shape (float16 widened to float32)."""
    dtype = TENSOR_DTYPES.get(t.data_type)
    if dtype is None:
        raise FormatError(f"{what}: tensor data type {t.data_type} is not read",
                          rule=RULE_LAYOUT, path=path)
    shape = [int(s) for s in t.shape]
    count = int(np.prod(shape)) if shape else 0
    if count > MAX_ELEMENTS or count * dtype.itemsize != len(t.data):
        raise FormatError(f"{what}: tensor of shape {shape} and type {dtype} does not match its "
                          f"{len(t.data)} bytes", rule=RULE_LAYOUT, path=path)
    arr = np.frombuffer(t.data, dtype=dtype).reshape(shape)
    return arr.astype(np.float32) if dtype == np.dtype("<f2") else arr


@dataclass
class Ivf:
    """Decoded IVF model: ``centroids`` (P, D) or None when this copy has none."""

    centroids: np.ndarray | None
    offsets: np.ndarray
    lengths: np.ndarray
    loss: float | None = None

    @property
    def num_partitions(self) -> int:
        if self.centroids is not None:
            return int(self.centroids.shape[0])
        return len(self.lengths)


def from_message(msg, *, dimension: int | None = None, path: str | None = None,
                 back_to_back: bool = False) -> Ivf:
    """An :class:`Ivf` from a parsed ``lance.index.pb.IVF``. ``back_to_back``: a message with
    lengths and no offsets places the partitions one after the other (pylance 0.10.x's
    Lance 0.1 files, whose record batches are the partitions), so the offsets are the
    lengths' running sum."""
    centroids = None
    if msg.HasField("centroids_tensor") and msg.centroids_tensor.shape:
        centroids = tensor_array(msg.centroids_tensor, what="IVF centroids", path=path)
        if centroids.ndim != 2:
            raise FormatError(f"IVF centroids have shape {list(centroids.shape)}, not (P, D)",
                              rule=RULE_LAYOUT, path=path)
    elif len(msg.centroids):
        flat = np.asarray(msg.centroids, dtype=np.float32)
        dim = dimension or (len(flat) // max(len(msg.lengths), 1))
        if dim <= 0 or len(flat) % dim:
            raise FormatError(f"{len(flat)} IVF centroid values are not a multiple of the "
                              f"dimension {dim}", rule=RULE_LAYOUT, path=path)
        centroids = flat.reshape(-1, dim)
    offsets = np.asarray(msg.offsets, dtype=np.uint64)
    lengths = np.asarray(msg.lengths, dtype=np.uint64)
    if back_to_back and not len(offsets) and len(lengths):
        offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.uint64)
    if len(offsets) != len(lengths):
        raise FormatError(f"IVF has {len(offsets)} offsets and {len(lengths)} lengths",
                          rule=RULE_LAYOUT, path=path)
    if centroids is not None and len(lengths) and len(lengths) != centroids.shape[0]:
        raise FormatError(f"IVF has {centroids.shape[0]} centroids and {len(lengths)} "
                          "partitions", rule=RULE_LAYOUT, path=path)
    loss = msg.loss if msg.HasField("loss") else None
    return Ivf(centroids=centroids, offsets=offsets, lengths=lengths, loss=loss)


def parse(raw: bytes, *, path: str | None = None, back_to_back: bool = False) -> Ivf:
    return from_message(parse_message(index_pb2.IVF, raw, what="IVF buffer", path=path),
                        path=path, back_to_back=back_to_back)


# ---- the assignment rule ---------------------------------------------------------------------

def normalize(x: np.ndarray) -> np.ndarray:
    """Rows scaled to unit L2 norm (zero rows stay zero)."""
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.where(norms == 0, 1, norms)


def distances(x: np.ndarray, centers: np.ndarray, metric: str) -> np.ndarray:
    """(N, P) distances of each row of ``x`` to each centre under ``metric``.

    l2 is the squared Euclidean distance, cosine ``1 - cos``, dot ``-<x, c>``. Computed in
    float64 so that ties are judged on the values, not on float32 rounding of one formula."""
    x = np.asarray(x, dtype=np.float64)
    c = np.asarray(centers, dtype=np.float64)
    if metric == "l2":
        d = (x * x).sum(1)[:, None] - 2.0 * (x @ c.T) + (c * c).sum(1)[None, :]
        return np.maximum(d, 0.0)
    if metric == "cosine":
        return 1.0 - normalize(x) @ normalize(c).T
    if metric == "dot":
        return -(x @ c.T)
    raise ValueError(f"metric {metric!r} is not known")


def distances_readable(x: np.ndarray, centers: np.ndarray, metric: str) -> np.ndarray:
    """The same as :func:`distances`, one pair at a time (the readable path tests compare)."""
    out = np.empty((len(x), len(centers)))
    for i, v in enumerate(np.asarray(x, dtype=np.float64)):
        for j, c in enumerate(np.asarray(centers, dtype=np.float64)):
            if metric == "l2":
                out[i, j] = float(((v - c) ** 2).sum())
            elif metric == "cosine":
                nv, nc = np.linalg.norm(v), np.linalg.norm(c)
                out[i, j] = 1.0 - float(v @ c) / ((nv or 1.0) * (nc or 1.0))
            else:
                out[i, j] = -float(v @ c)
    return out


def misassigned(x: np.ndarray, partition: np.ndarray, centers: np.ndarray, metric: str,
                *, rtol: float = 1e-4, atol: float = 1e-5, chunk: int = 16384) -> np.ndarray:
    """Positions of rows whose partition's centre is *strictly* farther than another centre
    by more than the float tolerance of :func:`misassigned_exact` (a tie is never a finding).

    Speed-up beside the exact path: a float32 screen keeps the rows whose own centre is worse
    than the best by more than 0.8 of the tolerance's magnitude term (float32's rounding of
    these sums is below 0.1 of it), and only those are judged by :func:`misassigned_exact`
    in float64; the result is the exact path's (tested equal)."""
    if metric not in ("l2", "dot"):
        return misassigned_exact(x, partition, centers, metric, rtol=rtol, atol=atol)
    partition = np.asarray(partition).astype(np.int64)
    c64 = np.asarray(centers, np.float64)
    c_norm2 = (c64 ** 2).sum(1)
    c_max = float(np.sqrt(c_norm2.max())) if len(c_norm2) else 0.0
    # one product: [x, 1] @ W, W = [[-c^T], [0]] (dot: -<x, c>) or [[-2 c^T], [|c|^2]]
    # (l2 without |x|^2: |c|^2 - 2<x, c>)
    if metric == "dot":
        weights = np.vstack([-c64.T, np.zeros((1, len(c64)))]).astype(np.float32)
    else:
        weights = np.vstack([-2.0 * c64.T, c_norm2[None, :]]).astype(np.float32)
    candidates = []
    for start in range(0, len(x), chunk):
        xs = np.asarray(x[start:start + chunk], dtype=np.float32)
        p = partition[start:start + chunk]
        score = np.hstack([xs, np.ones((len(xs), 1), np.float32)]) @ weights
        mine = score[np.arange(len(p)), p].astype(np.float64)
        best = score.min(1).astype(np.float64)
        x_norm = np.sqrt((xs.astype(np.float64) ** 2).sum(1))
        scale = x_norm ** 2 + c_max ** 2 if metric == "l2" else x_norm * c_max
        candidates.append(np.nonzero(mine - best > 0.8 * rtol / 10 * scale)[0] + start)
    cand = np.concatenate(candidates) if candidates else np.zeros(0, np.int64)
    if not len(cand):
        return np.zeros(0, dtype=np.int64)
    exact = misassigned_exact(np.asarray(x)[cand], partition[cand], centers, metric,
                              rtol=rtol, atol=atol)
    return cand[exact]


def misassigned_exact(x: np.ndarray, partition: np.ndarray, centers: np.ndarray, metric: str,
                      *, rtol: float = 1e-4, atol: float = 1e-5, chunk: int = 65536) -> np.ndarray:
    """The float64 judgement of :func:`misassigned` on every row (``cosine`` rows must be
    unit-scaled already when ``metric`` is ``l2``). The tolerance is ``atol + rtol *
    max(|best|, |mine|)`` plus ``rtol/10`` of the magnitudes a float32 writer cancels
    (``|x|^2 + max |c|^2`` for l2, ``|x| * max |c|`` for dot), so that a writer that computed
    in float32 with another formula is not judged on its rounding."""
    bad = []
    c_norm = float(np.sqrt((np.asarray(centers, np.float64) ** 2).sum(1).max())) if len(centers) else 0.0
    for start in range(0, len(x), chunk):
        xs = np.asarray(x[start:start + chunk], dtype=np.float64)
        d = distances(xs, centers, metric)
        p = partition[start:start + chunk].astype(np.int64)
        mine = d[np.arange(len(p)), p]
        best = d.min(1)
        x_norm = np.sqrt((xs * xs).sum(1))
        scale = x_norm ** 2 + c_norm ** 2 if metric == "l2" else x_norm * c_norm
        if metric == "cosine":
            scale = np.ones_like(x_norm)
        tol = atol + rtol * np.maximum(np.abs(best), np.abs(mine)) + rtol / 10 * scale
        bad.append(np.nonzero(mine - best > tol)[0] + start)
    return np.concatenate(bad) if bad else np.zeros(0, dtype=np.int64)
