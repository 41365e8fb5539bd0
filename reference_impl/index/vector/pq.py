"""PQ: product quantisation of the vectors of an IVF partition.

A vector of dimension ``D`` is cut into ``m`` sub-vectors of ``D/m`` values; each is replaced
by the number (``nbits`` bits, 8 in every release seen) of the nearest of ``2**nbits``
codewords of its sub-space. The code of a row is ``m`` such numbers.

What is encoded. Releases that store the IVF_PQ of L2 and cosine indexes encode the
*residual*: the row's vector minus its partition's centroid (cosine first scales the vector
to unit length); dot-product indexes encode the vector itself. pylance 14.0.2 and 0.38.3 were
seen doing so (each stored code is the nearest codeword of the residual).

Codebook. ``(m, 2**nbits, D/m)`` floats: sub-space ``j``'s codeword ``k`` is
``codebook[j, k]``. Lance-file layout: a global buffer of ``auxiliary.idx`` holding a
``Tensor`` of shape ``[2**nbits, D]`` whose bytes are laid out sub-space by sub-space
(``storage_metadata`` ``codebook_position`` names the buffer). Legacy layout: the ``PQ``
stage's ``codebook`` floats (or ``codebook_tensor``), in the same order.

Codes on disk. Lance-file layout: column ``__pq_code`` (fixed_size_list<uint8>[m]) of
``auxiliary.idx``; with ``"transposed": true`` (pylance 14.0.2) each partition's ``L x m``
bytes are stored sub-space-major (``m`` runs of ``L`` bytes), so the value in the column's row
``r`` of a partition is not row ``r``'s code until transposed back. Legacy layout: at the
partition's byte offset, ``L x m`` code bytes row-major then ``L`` u64 row ids.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from reference_impl.errors import FormatError
from reference_impl.index.vector.ivf import RULE_LAYOUT


@dataclass
class ProductQuantizer:
    num_bits: int
    num_sub_vectors: int
    dimension: int
    codebook: np.ndarray  # (m, 2**nbits, D/m) float32

    @property
    def sub_dim(self) -> int:
        return self.dimension // self.num_sub_vectors

    def decode(self, codes: np.ndarray) -> np.ndarray:
        """(N, D) float64: each row's codewords concatenated (the vector, or residual, the
        code stands for)."""
        codes = np.asarray(codes, dtype=np.int64)
        return np.concatenate([self.codebook[j][codes[:, j]].astype(np.float64)
                               for j in range(self.num_sub_vectors)], axis=1)

    def encode(self, x: np.ndarray, *, chunk: int = 65536) -> np.ndarray:
        """(N, m) uint codes: the nearest codeword of each sub-vector (first on ties)."""
        return np.stack([self._sub_distances(x, j, chunk).argmin(1)
                         for j in range(self.num_sub_vectors)], 1)

    def _sub_distances(self, x: np.ndarray, j: int, chunk: int) -> np.ndarray:
        s = self.sub_dim
        cb = self.codebook[j].astype(np.float64)
        sub = np.asarray(x[:, j * s:(j + 1) * s], dtype=np.float64)
        out = np.empty((len(x), cb.shape[0]))
        for a in range(0, len(x), chunk):
            v = sub[a:a + chunk]
            out[a:a + chunk] = np.maximum(
                (v * v).sum(1)[:, None] - 2.0 * v @ cb.T + (cb * cb).sum(1)[None, :], 0.0)
        return out

    def wrong_codes(self, x: np.ndarray, codes: np.ndarray, *, rtol: float = 1e-4,
                    atol: float = 1e-5, chunk: int = 8192) -> np.ndarray:
        """Positions of rows with a sub-space whose stored codeword is strictly farther from
        the sub-vector than the nearest one beyond the tolerance of :meth:`wrong_codes_exact`
        (ties are no finding), or whose code is out of the codebook's range.

        Speed-up beside the exact path: a float32 screen of ``|c|^2 - 2<v, c>`` keeps the rows
        whose stored codeword is worse than the best by more than 0.8 of the tolerance's
        magnitude term; only those are judged in float64 (tested equal)."""
        codes = np.asarray(codes, dtype=np.int64)
        k = self.codebook.shape[1]
        out_of_range = ((codes < 0) | (codes >= k)).any(1)
        safe = np.clip(codes, 0, k - 1)
        s = self.sub_dim
        cb_n2 = (self.codebook.astype(np.float64) ** 2).sum(2)          # (m, k)
        cb_max2 = cb_n2.max(1)
        # one product per sub-space: [v, 1] @ [[-2 c^T], [|c|^2]] = |c|^2 - 2<v, c>
        weights = [np.vstack([-2.0 * self.codebook[j].T, cb_n2[j][None, :]]).astype(np.float32)
                   for j in range(self.num_sub_vectors)]
        cand = np.zeros(len(x), dtype=bool)
        for a in range(0, len(x), chunk):
            xs = np.asarray(x[a:a + chunk], dtype=np.float32)
            rows = np.arange(len(xs))
            ones = np.ones((len(xs), 1), dtype=np.float32)
            for j in range(self.num_sub_vectors):
                sub = xs[:, j * s:(j + 1) * s]
                score = np.hstack([sub, ones]) @ weights[j]
                mine = score[rows, safe[a:a + chunk, j]].astype(np.float64)
                best = score.min(1).astype(np.float64)
                v2 = (sub.astype(np.float64) ** 2).sum(1)
                cand[a:a + chunk] |= mine - best > 0.8 * rtol / 10 * (v2 + cb_max2[j])
        idx = np.nonzero(cand & ~out_of_range)[0]
        bad = idx[self.wrong_codes_exact(np.asarray(x)[idx], codes[idx], rtol=rtol, atol=atol)] \
            if len(idx) else idx
        return np.union1d(bad, np.nonzero(out_of_range)[0]).astype(np.int64)

    def wrong_codes_exact(self, x: np.ndarray, codes: np.ndarray, *, rtol: float = 1e-4,
                          atol: float = 1e-5, chunk: int = 16384) -> np.ndarray:
        """The float64 judgement of :meth:`wrong_codes` on every row: the tolerance is
        ``atol + rtol * max(best, mine)`` plus ``rtol/10`` of ``|v|^2 + max |c|^2`` (what a
        float32 writer cancels)."""
        bad = np.zeros(len(x), dtype=bool)
        codes = np.asarray(codes, dtype=np.int64)
        k = self.codebook.shape[1]
        bad |= ((codes < 0) | (codes >= k)).any(1)
        safe = np.clip(codes, 0, k - 1)
        s = self.sub_dim
        cb_norm2 = (self.codebook.astype(np.float64) ** 2).sum(2).max(1)  # per sub-space
        for a in range(0, len(x), chunk):
            xs = x[a:a + chunk]
            for j in range(self.num_sub_vectors):
                d = self._sub_distances(xs, j, chunk)
                mine = d[np.arange(len(xs)), safe[a:a + chunk, j]]
                best = d.min(1)
                sub = np.asarray(xs[:, j * s:(j + 1) * s], dtype=np.float64)
                tol = (atol + rtol * np.maximum(best, mine)
                       + rtol / 10 * ((sub * sub).sum(1) + cb_norm2[j]))
                bad[a:a + chunk] |= mine - best > tol
        return np.nonzero(bad)[0]

    def wrong_codes_by_inner_product(self, x: np.ndarray, codes: np.ndarray, *,
                                     rtol: float = 1e-4, atol: float = 1e-5) -> np.ndarray:
        """Positions of rows with a sub-space whose stored codeword has a strictly smaller
        inner product with the sub-vector than the largest one, beyond the float tolerance
        (the rule pylance 0.10.18 used for the rows optimize_indices adds to a dot index)."""
        codes = np.asarray(codes, dtype=np.int64)
        k = self.codebook.shape[1]
        bad = ((codes < 0) | (codes >= k)).any(1)
        safe = np.clip(codes, 0, k - 1)
        s = self.sub_dim
        for j in range(self.num_sub_vectors):
            sub = np.asarray(x[:, j * s:(j + 1) * s], dtype=np.float64)
            cb = self.codebook[j].astype(np.float64)
            ip = sub @ cb.T
            mine = ip[np.arange(len(sub)), safe[:, j]]
            best = ip.max(1)
            scale = np.linalg.norm(sub, axis=1) * np.sqrt((cb * cb).sum(1).max())
            bad |= best - mine > atol + rtol * scale
        return np.nonzero(bad)[0]

    def encode_readable(self, v: np.ndarray) -> list[int]:
        """One vector's code, sub-space by sub-space and codeword by codeword."""
        s = self.sub_dim
        out = []
        for j in range(self.num_sub_vectors):
            sub = np.asarray(v[j * s:(j + 1) * s], dtype=np.float64)
            dists = [float(((sub - c) ** 2).sum()) for c in self.codebook[j].astype(np.float64)]
            out.append(int(np.argmin(dists)))
        return out


def from_codebook(num_bits: int, num_sub_vectors: int, dimension: int, values: np.ndarray,
                  *, path: str | None = None) -> ProductQuantizer:
    """Check the sizes and shape ``values`` (any shape, sub-space-major order) as
    ``(m, 2**nbits, D/m)``."""
    if not (1 <= num_bits <= 16) or num_sub_vectors <= 0 or dimension <= 0 \
            or dimension % num_sub_vectors:
        raise FormatError(f"PQ with {num_bits} bits, {num_sub_vectors} sub-vectors and "
                          f"dimension {dimension} is not a quantizer", rule=RULE_LAYOUT, path=path)
    k = 1 << num_bits
    flat = np.asarray(values, dtype=np.float32).reshape(-1)
    if flat.size != k * dimension:
        raise FormatError(f"PQ codebook has {flat.size} values, not 2**{num_bits} x {dimension}",
                          rule=RULE_LAYOUT, path=path)
    cb = flat.reshape(num_sub_vectors, k, dimension // num_sub_vectors)
    return ProductQuantizer(num_bits, num_sub_vectors, dimension, cb)


def untranspose(codes: np.ndarray, lengths: np.ndarray, m: int) -> np.ndarray:
    """Row-major ``(N, m)`` codes from a column whose partitions are stored sub-space-major."""
    flat = np.asarray(codes).reshape(-1)
    out = np.empty((len(flat) // m, m), dtype=flat.dtype)
    start = 0
    for length in (int(x) for x in lengths):
        out[start:start + length] = flat[start * m:(start + length) * m].reshape(m, length).T
        start += length
    return out
