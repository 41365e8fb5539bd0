"""RQ: RaBitQ, the quantiser of IVF_RQ (pylance 0.38.3 to 14.0.2, lancedb, DuckDB's Lance).

A row is stored as the *residual* of its vector (unit-scaled first under ``cosine``) from its
partition's centroid, turned by one rotation shared by the index, and then described by a few
numbers per row:

sign code (``_rabit_codes``, ``code_dim / 8`` bytes)
    bit ``i`` (LSB first) is 1 when dimension ``i`` of the rotated residual is non-negative.
extended code (``__blocked_ex_codes``, ``num_bits > 1``; 9.0.1 on)
    ``ex_bits = num_bits - 1`` more bits per dimension: the magnitude ``m`` of
    ``floor(t * |x_i| / |x| + 1e-5)`` clamped to ``2**ex_bits - 1``, stored as ``m`` for a
    non-negative value and as its bitwise complement (within ``ex_bits``) for a negative one.
    ``t`` is one rescaling for all the row's dimensions; pylance 11.0.0 and 14.0.2 pick the
    one whose code vector ``sign_i * (m_i + 1/2)`` has the largest cosine with the rotated
    residual, searching ``[t_end * TIGHT_START[ex_bits], t_end)`` with ``t_end = (2**ex_bits
    + 9) / max|x_i / |x||`` (:func:`best_magnitudes`). A code is judged by whether one ``t``
    gives it (:func:`wrong_ex_codes`), not by which: the factors are computed from the
    stored code.
factors (float32 each; ``query_estimator`` ``raw_query``, 9.0.1 on)
    With ``n = |r|^2`` the residual's squared norm, ``x`` the rotated residual, ``c`` the
    rotated centroid, ``b_i = +-1/2`` the sign code as values and ``e_i = sign_i * (m_i +
    1/2)`` the extended code as values::

        l2 / cosine   __add_factors    = n + 2 n <c,b> / <x,b>
                      __scale_factors  = -2 n / <x,b>
                      __add_factors_ex = n + 2 n <c,e> / <x,e>
                      __scale_factors_ex = -2 n / <x,e>
        dot           __add_factors    = 1 - <x,c> + n <c,b> / <x,b>
                      __scale_factors  = -n / <x,b>        (and the same with e)
        both          __error_factors  = k * 1.9 * sqrt(n) * sqrt(max(0, a - 1) / (D - 1)),
                      a = n * D / 4 / <x,b>^2, k = 2 for l2 / cosine and 1 for dot

    (a ratio whose denominator is 0 is 0). A reader estimates a query's distance to the row
    as ``add + scale * <query, code>`` and prunes by the error factor: a factor that is not
    its row's ranks the row as another vector. Without ``query_estimator`` (``residual_query``:
    0.38.3 to 4.0.2, DuckDB's extension) there are no extended codes and no error factors;
    ``num_bits`` above 1 widens the rotation to ``D * num_bits`` dimensions (the vector
    zero-padded), one sign bit each; see :func:`factors`.

Rotation. ``storage_metadata`` ``rotation_type`` ``"fast"`` (4.0.2 on): four rounds, each
flipping the signs of the dimensions whose bit is set in that round's ``ceil(D / 8)`` bytes
of ``fast_rotation_signs`` and then taking the normalised Walsh-Hadamard transform
(:func:`fast_rotation`; for ``D`` not a power of two the rounds alternate between the
leading and trailing ``2**floor(log2 D)`` dimensions, each followed by a butterfly of the two
halves, and the result is scaled by 1/4). ``"matrix"`` (a dense random orthogonal matrix in a
global buffer ``rotate_mat_position``, a Tensor ``P``; a vector turns into ``P v``) is what
pylance 0.38.3 and 1.0.4 write, with neither ``code_dim`` nor ``rotation_type`` in the
metadata. :meth:`RabitQuantizer.rotate` turns a fast rotation into its matrix once
(:func:`rotation_matrix`, equal within float rounding) and rotates by one product.

Layout on disk (``auxiliary.idx``). With ``packed: true`` (every release seen) each
partition's sign codes are stored for fast scanning (:func:`unpack_fast_scan`); the
extended codes are blocked by 64 dimensions (:func:`unpack_blocked`); the factors are one
value per row in row order. :func:`encode` writes them (the reference writer), and
:func:`reconstruct` / :func:`estimated_distances` read back what a reader ranks by.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

#: rounds of sign flips and Hadamard transforms of the fast rotation
FAST_ROTATION_ROUNDS = 4
#: the writer's search for the rescaling ``t`` starts at ``t_end * TIGHT_START[ex_bits]``
TIGHT_START = (0.0, 0.15, 0.20, 0.52, 0.59, 0.71, 0.75, 0.77, 0.81)
#: added before the floor of ``t * |x_i|``
EX_EPSILON = 1.0e-5
#: the error factor's confidence multiplier
ERROR_EPSILON = 1.9
#: rows of one fast-scan block, and the order of the 16 vectors of each half in a block
BLOCK_ROWS = 32
BLOCK_ORDER = (0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15)
#: dimensions of one block of the extended codes
EX_BLOCK_DIMS = 64
#: the widest fast rotation turned into a matrix (its code_dim**2 float64s, 32 MiB); wider
#: ones are rotated by :func:`fast_rotation` itself
MATRIX_LIMIT = 2048
#: the query estimators whose factors are recomputed (see the module text)
ESTIMATORS = ("raw_query", "residual_query")
#: the factor columns of the storage, in the order the writer adds them
FACTOR_COLUMNS = ("__add_factors", "__scale_factors", "__error_factors", "__add_factors_ex",
                  "__scale_factors_ex")


@dataclass
class RabitQuantizer:
    """The quantiser of one IVF_RQ index, as its ``storage_metadata`` describes it."""

    code_dim: int
    num_bits: int
    rotation_type: str
    fast_rotation_signs: bytes | None
    packed: bool
    query_estimator: str
    unjudged: list[str] = field(default_factory=list)
    _matrix: np.ndarray | None = field(default=None, repr=False, compare=False)

    @property
    def ex_bits(self) -> int:
        """Extra bits per dimension in extended codes: ``num_bits - 1`` (11.0.0 on); none in
        the ``residual_query`` layout of pylance 4.0.2, which instead rotates the vector
        zero-padded to ``D * num_bits`` dimensions and keeps one sign bit of each."""
        return 0 if self.query_estimator == "residual_query" else self.num_bits - 1

    @property
    def judges_codes(self) -> bool:
        """Whether this implementation can recompute the codes: a fast rotation with its
        signs, or a dense rotation matrix read from its global buffer."""
        if self.rotation_type == "matrix":
            return self._matrix is not None and self._matrix.shape == (self.code_dim,) * 2
        return (self.rotation_type == "fast" and self.fast_rotation_signs is not None
                and len(self.fast_rotation_signs) == fast_rotation_signs_len(self.code_dim))

    def set_rotation_matrix(self, matrix: np.ndarray) -> None:
        """Take the dense rotation of ``rotation_type`` ``"matrix"`` (pylance 1.0.4: a Tensor
        ``P`` of ``code_dim x code_dim`` in the global buffer ``rotate_mat_position``; a vector
        ``v`` zero-padded to ``code_dim`` turns into ``P v``)."""
        matrix = np.asarray(matrix, dtype=np.float64)
        if self.code_dim <= 0:
            self.code_dim = int(matrix.shape[0])
        if matrix.shape == (self.code_dim,) * 2:
            self._matrix = matrix.T
            self.unjudged = [u for u in self.unjudged if "under rotation" not in u]

    @property
    def judges_factors(self) -> bool:
        return self.judges_codes and self.query_estimator in ESTIMATORS

    def pad(self, x: np.ndarray) -> np.ndarray:
        """Rows of ``x`` widened with zeros to ``code_dim`` (pylance 4.0.2 rotates a vector
        of ``D`` values in ``D * num_bits`` dimensions)."""
        x = np.asarray(x, dtype=np.float64)
        if x.shape[1] >= self.code_dim:
            return x
        return np.concatenate([x, np.zeros((len(x), self.code_dim - x.shape[1]))], axis=1)

    def matrix(self) -> np.ndarray | None:
        """``M`` with ``rotate(x) == x @ M``: the dense rotation read from the file, or the
        fast rotation's (:func:`rotation_matrix`, built once); None for a fast rotation wider
        than ``MATRIX_LIMIT`` (its matrix would take code_dim**2 floats)."""
        if self._matrix is None and self.code_dim <= MATRIX_LIMIT:
            self._matrix = rotation_matrix(self.fast_rotation_signs, self.code_dim)
        return self._matrix

    def rotate(self, x: np.ndarray) -> np.ndarray:
        """The rotation of each row of ``x``: as one matrix product with :meth:`matrix`
        (equal to :func:`fast_rotation` within float rounding, which the sign slack
        allows), or by the butterflies themselves where there is no matrix."""
        matrix = self.matrix()
        if matrix is None:
            return fast_rotation(self.pad(x), self.fast_rotation_signs)
        return (self.pad(x) @ matrix).astype(np.float32)


def _int(value) -> int:
    """A metadata number, or -1 where it is not one (refused by the layout check)."""
    try:
        return int(value)
    except (TypeError, ValueError):
        return -1


def from_metadata(smeta: dict) -> RabitQuantizer:
    """The quantiser of a ``storage_metadata`` entry; what cannot be judged is listed in
    ``unjudged``."""
    signs = smeta.get("fast_rotation_signs")
    try:
        signs = bytes(int(s) & 0xFF for s in signs) if signs is not None else None
    except (TypeError, ValueError):
        signs = None
    q = RabitQuantizer(code_dim=_int(smeta.get("code_dim") or 0),
                       num_bits=_int(smeta.get("num_bits", 1)),
                       rotation_type=str(smeta.get("rotation_type") or "matrix"),
                       fast_rotation_signs=signs, packed=bool(smeta.get("packed", False)),
                       query_estimator=str(smeta.get("query_estimator") or "residual_query"))
    if q.rotation_type == "matrix" or not q.judges_codes:
        # (a matrix rotation is judged once its global buffer is read: set_rotation_matrix)
        q.unjudged.append(f"its RaBitQ codes under rotation {q.rotation_type!r} are not "
                          "recomputed (its rows, partitions and centroid assignment are)")
    elif not q.judges_factors:
        q.unjudged.append(f"its RaBitQ factors of query estimator {q.query_estimator!r} are "
                          "not recomputed (its codes are)")
    return q


# ----------------------------------------------------------------------------- rotation

def fast_rotation_signs_len(dim: int) -> int:
    return FAST_ROTATION_ROUNDS * ((dim + 7) // 8)


def walsh_hadamard(x: np.ndarray, dtype=np.float32) -> np.ndarray:
    """The (unnormalised) Walsh-Hadamard transform of each row of ``x`` (width a power of
    two): butterflies of span 1, 2, 4, ... replacing ``(a, b)`` by ``(a + b, a - b)``, in
    ``dtype`` arithmetic."""
    x = np.array(x, dtype=dtype)
    n, width = x.shape
    span = 1
    while span < width:
        pairs = x.reshape(n, width // (2 * span), 2, span)
        a, b = pairs[:, :, 0, :].copy(), pairs[:, :, 1, :].copy()
        pairs[:, :, 0, :] = a + b
        pairs[:, :, 1, :] = a - b
        span *= 2
    return x


def fast_rotation(x: np.ndarray, signs: bytes, dtype=np.float32) -> np.ndarray:
    """Rotate each row of ``x`` by the fast rotation of ``signs`` (see the module text), in
    ``dtype`` arithmetic (float32, as the writer does)."""
    v = np.array(x, dtype=dtype)
    n, dim = v.shape
    if dim == 0:
        return v
    per_round = (dim + 7) // 8
    flips = np.unpackbits(np.frombuffer(signs, dtype=np.uint8), bitorder="little")
    flips = flips.reshape(FAST_ROTATION_ROUNDS, per_round * 8)[:, :dim].astype(bool)
    trunc = 1 << (dim.bit_length() - 1)
    scale = dtype(1.0 / np.sqrt(dtype(trunc)))
    if trunc == dim:
        for r in range(FAST_ROTATION_ROUNDS):
            v[:, flips[r]] *= -1
            v = walsh_hadamard(v, dtype) * scale
        return v
    start, half = dim - trunc, dim // 2
    for r in range(FAST_ROTATION_ROUNDS):
        v[:, flips[r]] *= -1
        part = slice(0, trunc) if r % 2 == 0 else slice(start, dim)
        v[:, part] = walsh_hadamard(v[:, part], dtype) * scale
        a, b = v[:, :half].copy(), v[:, half:2 * half].copy()
        v[:, :half], v[:, half:2 * half] = a + b, a - b
    return v * dtype(0.25)


def rotation_matrix(signs: bytes, dim: int) -> np.ndarray:
    """``(dim, dim)`` float64 ``M`` with ``fast_rotation(x) == x @ M`` within float rounding:
    the rotation is linear, so row ``i`` of ``M`` is the rotation of the ``i``-th unit vector
    (taken in float64)."""
    return fast_rotation(np.eye(dim), signs, dtype=np.float64)


# ----------------------------------------------------------------------------- codes

def sign_codes(rotated: np.ndarray) -> np.ndarray:
    """``(N, D/8)`` uint8: bit ``i`` (LSB first) set where dimension ``i`` is non-negative."""
    return np.packbits(~np.signbit(rotated), axis=1, bitorder="little")


def unpack_fast_scan(stored: np.ndarray, lengths) -> np.ndarray:
    """Row-major sign codes from a column whose partitions are stored for fast scanning.

    Within a partition of ``L`` rows and ``W`` code bytes, each whole block of 32 rows is
    ``W`` runs of 32 bytes; run ``i`` holds byte ``i`` of the 32 rows' codes as nibbles: its
    byte ``j`` (0-15) is the low nibbles of rows ``BLOCK_ORDER[j]`` (low half) and
    ``BLOCK_ORDER[j] + 16`` (high half), its byte ``16 + j`` their high nibbles. The rows after
    the last whole block are stored byte-major (``W`` runs of one byte per row)."""
    stored = np.asarray(stored, dtype=np.uint8)
    out = np.empty_like(stored)
    width = stored.shape[1] if stored.ndim == 2 else 0
    order = np.asarray(BLOCK_ORDER)
    start = 0
    for length in (int(x) for x in lengths):
        part = stored[start:start + length].reshape(-1)
        blocks = length // BLOCK_ROWS
        if blocks:
            runs = part[:blocks * BLOCK_ROWS * width].reshape(blocks, width, BLOCK_ROWS)
            low, high = runs[:, :, :16], runs[:, :, 16:]
            codes = np.empty((blocks, BLOCK_ROWS, width), dtype=np.uint8)
            # byte j of a run: rows order[j] (low nibble) and order[j] + 16 (high nibble)
            codes[:, order, :] = ((low & 0xF) | ((high & 0xF) << 4)).transpose(0, 2, 1)
            codes[:, order + 16, :] = ((low >> 4) | ((high >> 4) << 4)).transpose(0, 2, 1)
            out[start:start + blocks * BLOCK_ROWS] = codes.reshape(-1, width)
        rest = length - blocks * BLOCK_ROWS
        if rest:
            tail = part[blocks * BLOCK_ROWS * width:].reshape(width, rest)
            out[start + blocks * BLOCK_ROWS:start + length] = tail.T
        start += length
    return out


def pack_fast_scan(codes: np.ndarray, lengths) -> np.ndarray:
    """The inverse of :func:`unpack_fast_scan`: row-major sign codes laid out for fast
    scanning, partition by partition."""
    codes = np.asarray(codes, dtype=np.uint8)
    out = np.empty_like(codes)
    width = codes.shape[1] if codes.ndim == 2 else 0
    order = np.asarray(BLOCK_ORDER)
    start = 0
    for length in (int(x) for x in lengths):
        part = codes[start:start + length]
        flat = out[start:start + length].reshape(-1)
        blocks = length // BLOCK_ROWS
        if blocks:
            rows = part[:blocks * BLOCK_ROWS].reshape(blocks, BLOCK_ROWS, width)
            rows = rows.transpose(0, 2, 1)                 # (block, code byte, row)
            lo_rows, hi_rows = rows[:, :, order], rows[:, :, order + 16]
            runs = np.empty((blocks, width, BLOCK_ROWS), dtype=np.uint8)
            runs[:, :, :16] = (lo_rows & 0xF) | ((hi_rows & 0xF) << 4)
            runs[:, :, 16:] = (lo_rows >> 4) | ((hi_rows >> 4) << 4)
            flat[:blocks * BLOCK_ROWS * width] = runs.reshape(-1)
        rest = length - blocks * BLOCK_ROWS
        if rest:
            flat[blocks * BLOCK_ROWS * width:] = part[blocks * BLOCK_ROWS:].T.reshape(-1)
        start += length
    return out


def _top_plane_bit(k: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Bit of the top-bit plane (a little-endian u64) that holds dimension ``16k + b``."""
    return 8 * (b % 8) + 2 * k + b // 8


def unpack_blocked(stored: np.ndarray, dim: int, ex_bits: int) -> np.ndarray:
    """``(N, dim)`` extended code values from the blocked layout: dimensions in blocks of 64
    (the last zero-padded), ``64 * ex_bits / 8`` bytes per block; with run ``k`` the
    dimensions ``16k .. 16k + 15`` of a block and ``b`` in 0..15:

    * 1 bit: bit ``i`` (LSB first) of the block's 8 bytes is dimension ``i``;
    * 2, 3 bits: byte ``b`` holds run ``k``'s dimension ``b`` at bits ``2k, 2k + 1``; 3 bits
      add a 64-bit top-bit plane;
    * 4 bits: byte ``8j + b`` (``b`` < 8) is dimension ``16j + b`` (low nibble) and ``16j + 8
      + b`` (high nibble);
    * 5 bits: byte ``b`` is dimensions ``b`` | ``16 + b``, byte ``16 + b`` dimensions ``32 +
      b`` | ``48 + b`` (nibbles), then a top-bit plane;
    * 6, 7 bits: byte ``16k + b`` (k < 3) is dimension ``16k + b``'s 6 low bits and, in its
      top 2 bits, bits ``2k, 2k + 1`` of dimension ``48 + b``; 7 bits add a top-bit plane;
    * 8 bits: one byte per dimension.

    The top-bit plane keeps the top bit of dimension ``16k + b`` at bit ``8 (b mod 8) + 2k +
    b / 8``."""
    stored = np.asarray(stored, dtype=np.uint8)
    n = stored.shape[0]
    blocks = -(-dim // EX_BLOCK_DIMS)
    per_block = EX_BLOCK_DIMS * ex_bits // 8
    raw = stored.reshape(n, -1)[:, :blocks * per_block].reshape(n, blocks, per_block)
    raw = raw.astype(np.uint16)
    v = np.zeros((n, blocks, EX_BLOCK_DIMS), dtype=np.uint16)
    k = np.repeat(np.arange(4), 16)       # run of each dimension of a block
    b = np.tile(np.arange(16), 4)         # place within the run

    def top_plane(at: int) -> np.ndarray:
        word = raw[:, :, at:at + 8].astype(np.uint64)
        plane = np.zeros((n, blocks), dtype=np.uint64)
        for i in range(8):
            plane |= word[:, :, i] << np.uint64(8 * i)
        return ((plane[:, :, None] >> _top_plane_bit(k, b).astype(np.uint64)[None, None, :])
                & np.uint64(1)).astype(np.uint16)

    if ex_bits == 1:
        bits = np.unpackbits(raw.astype(np.uint8), axis=2, bitorder="little")
        v[:] = bits[:, :, :EX_BLOCK_DIMS]
    elif ex_bits in (2, 3):
        v[:] = (raw[:, :, b] >> (2 * k)) & 0b11
        if ex_bits == 3:
            v |= top_plane(16) << 2
    elif ex_bits == 4:
        dims = np.arange(EX_BLOCK_DIMS)
        byte = 8 * (dims // 16) + dims % 8
        high = (dims % 16) >= 8
        v[:] = np.where(high, raw[:, :, byte] >> 4, raw[:, :, byte] & 0xF)
    elif ex_bits == 5:
        v[:] = (raw[:, :, 16 * (k // 2) + b] >> (4 * (k % 2))) & 0xF
        v |= top_plane(32) << 4
    elif ex_bits in (6, 7):
        low_runs = k < 3
        v[:, :, low_runs] = raw[:, :, (16 * k + b)[low_runs]] & 0x3F
        last = (raw[:, :, 0:16] >> 6) | ((raw[:, :, 16:32] >> 6) << 2) \
            | ((raw[:, :, 32:48] >> 6) << 4)
        v[:, :, 48:] = last
        if ex_bits == 7:
            v |= top_plane(48) << 6
    elif ex_bits == 8:
        v[:] = raw
    else:
        raise ValueError(f"ex_bits {ex_bits} is not 1 to 8")
    return v.reshape(n, blocks * EX_BLOCK_DIMS)[:, :dim].astype(np.uint8)


def pack_blocked(values: np.ndarray, ex_bits: int) -> np.ndarray:
    """The inverse of :func:`unpack_blocked`: ``(N, dim)`` extended code values in the
    blocked layout (``ceil(dim / 64) * 8 * ex_bits`` bytes per row)."""
    values = np.asarray(values, dtype=np.uint16)
    n, dim = values.shape
    blocks = -(-dim // EX_BLOCK_DIMS)
    v = np.zeros((n, blocks, EX_BLOCK_DIMS), dtype=np.uint16)
    v.reshape(n, -1)[:, :dim] = values
    per_block = EX_BLOCK_DIMS * ex_bits // 8
    out = np.zeros((n, blocks, per_block), dtype=np.uint16)
    k = np.repeat(np.arange(4), 16)
    b = np.tile(np.arange(16), 4)

    def put_top_plane(at: int, bit: int) -> None:
        plane = np.zeros((n, blocks), dtype=np.uint64)
        tops = ((v >> bit) & 1).astype(np.uint64)
        for d, shift in enumerate(_top_plane_bit(k, b).tolist()):
            plane |= tops[:, :, d] << np.uint64(shift)
        for i in range(8):
            out[:, :, at + i] = ((plane >> np.uint64(8 * i)) & np.uint64(0xFF)).astype(np.uint16)

    if ex_bits == 1:
        out[:] = np.packbits(v.astype(np.uint8) & 1, axis=2, bitorder="little")
    elif ex_bits in (2, 3):
        for run in range(4):
            out[:, :, :16] |= (v[:, :, 16 * run:16 * run + 16] & 0b11) << (2 * run)
        if ex_bits == 3:
            put_top_plane(16, 2)
    elif ex_bits == 4:
        for unit in range(4):
            lo = v[:, :, 16 * unit:16 * unit + 8] & 0xF
            hi = v[:, :, 16 * unit + 8:16 * unit + 16] & 0xF
            out[:, :, 8 * unit:8 * unit + 8] = lo | (hi << 4)
    elif ex_bits == 5:
        out[:, :, :16] = (v[:, :, :16] & 0xF) | ((v[:, :, 16:32] & 0xF) << 4)
        out[:, :, 16:32] = (v[:, :, 32:48] & 0xF) | ((v[:, :, 48:] & 0xF) << 4)
        put_top_plane(32, 4)
    elif ex_bits in (6, 7):
        for run in range(3):
            out[:, :, 16 * run:16 * run + 16] = ((v[:, :, 16 * run:16 * run + 16] & 0x3F)
                                                 | (((v[:, :, 48:] >> (2 * run)) & 0b11) << 6))
        if ex_bits == 7:
            put_top_plane(48, 6)
    elif ex_bits == 8:
        out[:] = v
    else:
        raise ValueError(f"ex_bits {ex_bits} is not 1 to 8")
    return out.reshape(n, blocks * per_block).astype(np.uint8)


def ex_magnitudes(rotated: np.ndarray, ex_values: np.ndarray, ex_bits: int,
                  positive: np.ndarray | None = None) -> np.ndarray:
    """The magnitudes ``m_i`` of stored extended codes: the value itself for a non-negative
    dimension, its complement within ``ex_bits`` for a negative one (the signs of
    ``rotated``, or, where given, the stored sign bits ``positive``)."""
    mask = (1 << ex_bits) - 1
    ex_values = np.asarray(ex_values, dtype=np.int64)
    negative = np.signbit(rotated) if positive is None else ~np.asarray(positive, bool)
    return np.where(negative, (~ex_values) & mask, ex_values)


def code_alignment(rotated: np.ndarray, magnitudes: np.ndarray) -> np.ndarray:
    """The cosine between each row's rotated residual and its code vector
    ``sign_i * (m_i + 1/2)`` (what the writer's search for ``t`` maximises)."""
    a = np.abs(np.asarray(rotated, dtype=np.float64))
    m = np.asarray(magnitudes, dtype=np.float64) + 0.5
    norm = np.sqrt((a * a).sum(1)) * np.sqrt((m * m).sum(1))
    return np.divide((a * m).sum(1), norm, out=np.ones(len(a)), where=norm > 0)


#: elements of the step table searched at once (rows are taken in chunks below it)
SEARCH_CHUNK = 1 << 21


def best_magnitudes(rotated: np.ndarray, ex_bits: int) -> np.ndarray:
    """``(N, D)`` the magnitudes the writer's search gives each row: for each rescaling ``t``
    at which some ``floor(t |x_i| / |x|)`` steps up, the cosine of the code vector with the
    residual; the first ``t`` of the largest cosine wins."""
    rotated = np.asarray(rotated)
    n, dim = rotated.shape
    rows = max(1, SEARCH_CHUNK // max(1, dim * ((1 << ex_bits) - 1)))
    if n <= rows:
        return _best_magnitudes(rotated, ex_bits)
    return np.concatenate([_best_magnitudes(rotated[i:i + rows], ex_bits)
                           for i in range(0, n, rows)])


def _best_magnitudes(rotated: np.ndarray, ex_bits: int) -> np.ndarray:
    x = np.abs(np.asarray(rotated, dtype=np.float64))
    n, dim = x.shape
    top = (1 << ex_bits) - 1
    norm = np.sqrt((x * x).sum(1, keepdims=True))
    a = np.divide(x, norm, out=np.zeros_like(x), where=norm > 0)
    amax = a.max(1, initial=0.0)
    t_end = np.divide(top + 10, amax, out=np.zeros(n), where=amax > 0)
    t_start = t_end * TIGHT_START[ex_bits]
    current = np.clip(np.floor(t_start[:, None] * a + EX_EPSILON), 0, top)
    current[a <= 0] = 0
    # every step k of every dimension, at threshold k / a_i, within (start, t_end)
    steps = np.arange(1, top + 1)
    thresholds = np.divide(steps[None, None, :], a[:, :, None],
                           out=np.full((n, dim, top), np.inf), where=a[:, :, None] > 0)
    live = (steps[None, None, :] > current[:, :, None]) & (thresholds < t_end[:, None, None])
    thresholds = np.where(live, thresholds, np.inf).reshape(n, -1)
    order = np.argsort(thresholds, axis=1, kind="stable")
    sorted_t = np.take_along_axis(thresholds, order, 1)
    dims = order // top
    levels = (order % top + 1).astype(np.float64)
    finite = np.isfinite(sorted_t)
    numerator0 = ((current + 0.5) * a).sum(1)
    denominator0 = ((current + 0.5) ** 2).sum(1)
    numerator = numerator0[:, None] + np.cumsum(np.where(finite, np.take_along_axis(a, dims, 1),
                                                         0.0), 1)
    denominator = denominator0[:, None] + np.cumsum(np.where(finite, 2 * levels, 0.0), 1)
    score = np.concatenate([(numerator0 / np.sqrt(denominator0))[:, None],
                            np.where(finite, numerator / np.sqrt(denominator), -np.inf)], 1)
    best = score.argmax(1)
    t = np.where(best == 0, t_start,
                 np.take_along_axis(sorted_t, np.maximum(best - 1, 0)[:, None], 1)[:, 0])
    return np.clip(np.floor(t[:, None] * a + EX_EPSILON), 0, top).astype(np.int64)


# ----------------------------------------------------------------------------- factors

def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    return np.divide(num, den, out=np.zeros_like(num, dtype=np.float64), where=den != 0)


def factors(rotated: np.ndarray, rotated_centroids: np.ndarray, norm_square: np.ndarray,
            metric: str, magnitudes: np.ndarray | None = None,
            estimator: str = "raw_query", positive: np.ndarray | None = None
            ) -> dict[str, np.ndarray]:
    """The factor columns (see the module text) of rows with rotated residuals ``rotated``,
    their partitions' rotated centroids and residual squared norms, under ``metric``;
    ``magnitudes`` (the stored extended codes' magnitudes) add the ``_ex`` factors. The
    ``residual_query`` estimator (pylance 4.0.2: no error factors, no extended codes) has
    ``__add_factors = n`` (l2, cosine) or ``1 - <x,c>`` (dot, the vector's dot distance to
    its centroid plus ``|c|^2``) and ``__scale_factors = -k n / (sum|x_i| / sqrt(D))``, k = 2
    (l2, cosine) or 1 (dot). ``positive``: the stored sign bits, which the factors are
    then of (where a value near 0 rounds to the other sign in the writer's arithmetic)."""
    x = np.asarray(rotated, dtype=np.float64)
    c = np.asarray(rotated_centroids, dtype=np.float64)
    ns = np.asarray(norm_square, dtype=np.float64)
    dim = x.shape[1]
    positive = ~np.signbit(rotated) if positive is None else np.asarray(positive, bool)
    sign = np.where(positive, 1.0, -1.0)
    bits = 0.5 * sign
    x_b, c_b = (x * bits).sum(1), (c * bits).sum(1)
    l2 = metric != "dot"
    out = {}
    if estimator == "residual_query":
        ip = np.abs(x).sum(1) / np.sqrt(dim)
        out["__add_factors"] = ns if l2 else 1 - (x * c).sum(1)
        out["__scale_factors"] = _ratio(-(2 if l2 else 1) * ns, ip)
        return out
    if l2:
        out["__add_factors"] = ns + 2 * _ratio(ns * c_b, x_b)
        out["__scale_factors"] = _ratio(-2 * ns, x_b)
    else:
        base = 1 - (x * c).sum(1)
        out["__add_factors"] = base + _ratio(ns * c_b, x_b)
        out["__scale_factors"] = _ratio(-ns, x_b)
    alignment = _ratio(ns * dim * 0.25, x_b ** 2)
    err = np.sqrt(ns) * ERROR_EPSILON * np.sqrt(np.maximum(alignment - 1, 0) / max(dim - 1, 1))
    err = np.where((ns > 0) & (x_b != 0) & (dim > 1), err, 0.0)
    out["__error_factors"] = err * (2 if l2 else 1)
    if magnitudes is not None:
        e = sign * (np.asarray(magnitudes, dtype=np.float64) + 0.5)
        x_e, c_e = (x * e).sum(1), (c * e).sum(1)
        if l2:
            out["__add_factors_ex"] = ns + 2 * _ratio(ns * c_e, x_e)
            out["__scale_factors_ex"] = _ratio(-2 * ns, x_e)
        else:
            out["__add_factors_ex"] = 1 - (x * c).sum(1) + _ratio(ns * c_e, x_e)
            out["__scale_factors_ex"] = _ratio(-ns, x_e)
    return out


def factor_tolerance(name: str, rotated: np.ndarray, rotated_centroids: np.ndarray,
                     norm_square: np.ndarray, metric: str,
                     want: np.ndarray | None = None) -> np.ndarray:
    """How far a stored factor may lie from the recomputed one (``want``): the float32
    rounding of the writer's sums, bounded by the size of the terms it adds (1e-3 of them)."""
    x = np.abs(np.asarray(rotated, dtype=np.float64))
    c = np.abs(np.asarray(rotated_centroids, dtype=np.float64))
    ns = np.asarray(norm_square, dtype=np.float64)
    dim = x.shape[1]
    size = ns + np.sqrt(ns) * np.sqrt((c * c).sum(1)) * np.sqrt(dim) + 1e-6
    if name.startswith("__scale"):
        size = ns / np.maximum(x.sum(1) * 0.5, 1e-30) + 1e-6
    if name == "__error_factors":
        size = np.sqrt(ns) * 2 * ERROR_EPSILON * np.sqrt(1e-2 / max(dim - 1, 1)) + 1e-6
    if metric == "dot" and name.startswith("__add"):
        size = size + 1 + (x * c).sum(1)
    if want is not None:
        size = np.maximum(size, np.abs(want))
    return 1e-3 * size


# ----------------------------------------------------------------------------- judging

#: a sign bit is judged only where the rotated value is beyond this share of the residual's
#: norm (float32 rounding of the rotation flips nothing larger)
SIGN_SLACK = 1e-4
#: relative widening of the rescaling interval a stored extended code allows (float rounding)
RESCALING_SLACK = 1e-5


def wrong_sign_bits(rotated: np.ndarray, codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(rows, first dimension)`` of rows whose sign code disagrees with the sign of a
    rotated value that float rounding cannot flip."""
    stored = stored_signs(codes, rotated.shape[1])
    norm = np.sqrt((np.asarray(rotated, dtype=np.float64) ** 2).sum(1, keepdims=True))
    clear = np.abs(rotated) > SIGN_SLACK * norm
    bad = (stored != ~np.signbit(rotated)) & clear
    rows = np.nonzero(bad.any(1))[0]
    return rows, bad[rows].argmax(1) if len(rows) else np.zeros(0, dtype=np.int64)


def rescaling_bounds(rotated: np.ndarray, magnitudes: np.ndarray, ex_bits: int
                     ) -> tuple[np.ndarray, np.ndarray]:
    """Per row and dimension, the rescalings ``t`` for which ``floor(t |x_i| / |x| + 1e-5)``
    (clamped to the code range) is the stored magnitude: ``[low, high)``, widened by the
    float rounding of ``|x_i| / |x|``."""
    x = np.abs(np.asarray(rotated, dtype=np.float64))
    m = np.asarray(magnitudes, dtype=np.float64)
    top = (1 << ex_bits) - 1
    norm = np.sqrt((x * x).sum(1, keepdims=True))
    a = np.divide(x, norm, out=np.zeros_like(x), where=norm > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        low = np.where(a > 0, (m - EX_EPSILON) / a, np.where(m == 0, -np.inf, np.inf))
        high = np.where(a > 0, np.where(m >= top, np.inf, (m + 1 - EX_EPSILON) / a),
                        np.where(m == 0, np.inf, -np.inf))
    return low * (1 - RESCALING_SLACK), high * (1 + RESCALING_SLACK)


def wrong_ex_codes(rotated: np.ndarray, magnitudes: np.ndarray, ex_bits: int
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(rows, dimension a, dimension b)`` of rows whose extended code is not
    ``floor(t |x_i| / |x| + 1e-5)`` of one rescaling ``t`` shared by all its dimensions:
    dimension ``a`` needs a larger ``t`` than dimension ``b`` allows. (Which ``t`` the writer
    picks is its own affair: the factors are computed from the stored code; pylance 11.0.0 and
    14.0.2 pick the one of largest cosine with the residual, :func:`best_magnitudes`.)"""
    if not len(rotated):
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty
    low, high = rescaling_bounds(rotated, magnitudes, ex_bits)
    a, b = low.argmax(1), high.argmin(1)
    idx = np.arange(len(low))
    rows = np.nonzero(low[idx, a] > high[idx, b])[0]
    return rows, a[rows], b[rows]


def wrong_factors(stored: dict[str, np.ndarray], rotated: np.ndarray,
                  rotated_centroids: np.ndarray, norm_square: np.ndarray, metric: str,
                  magnitudes: np.ndarray | None = None, estimator: str = "raw_query",
                  positive: np.ndarray | None = None) -> list[tuple[int, str, float, float]]:
    """``(row, column, stored, recomputed)`` of every stored factor that is not its row's,
    row by row (first column of a row only), given the stored sign bits ``positive``."""
    want = factors(rotated, rotated_centroids, norm_square, metric, magnitudes, estimator,
                   positive)
    found: dict[int, tuple[int, str, float, float]] = {}
    for name in FACTOR_COLUMNS:
        if name not in stored or name not in want:
            continue
        have = np.asarray(stored[name], dtype=np.float64)
        tol = factor_tolerance(name, rotated, rotated_centroids, norm_square, metric,
                               want[name])
        bad = ~(np.abs(have - want[name]) <= tol)
        for i in np.nonzero(bad)[0].tolist():
            found.setdefault(i, (i, name, float(have[i]), float(want[name][i])))
    return [found[i] for i in sorted(found)]


# ----------------------------------------------------------------------------- writing

def encode(q: RabitQuantizer, vectors: np.ndarray, partitions: np.ndarray,
           centroids: np.ndarray, metric: str, lengths) -> dict[str, np.ndarray]:
    """The storage columns of rows in storage order (``vectors`` prepared by the metric,
    ``partitions`` their partitions, ``lengths`` the partition sizes): ``_rabit_codes`` laid
    out as ``q.packed`` says, ``__blocked_ex_codes`` (more than one bit) and the factors as
    float32 (the reference writer of an IVF_RQ storage)."""
    cent = np.asarray(centroids, dtype=np.float64)
    residual = np.asarray(vectors, dtype=np.float64) - cent[partitions]
    rotated = q.rotate(residual)
    codes = sign_codes(rotated)
    out = {"_rabit_codes": pack_fast_scan(codes, lengths) if q.packed else codes}
    magnitudes = None
    if q.ex_bits:
        magnitudes = best_magnitudes(rotated, q.ex_bits)
        mask = (1 << q.ex_bits) - 1
        values = np.where(np.signbit(rotated), (~magnitudes) & mask, magnitudes)
        out["__blocked_ex_codes"] = pack_blocked(values, q.ex_bits)
    made = factors(rotated, q.rotate(cent)[partitions], (residual * residual).sum(1), metric,
                   magnitudes, q.query_estimator)
    out.update({k: v.astype(np.float32) for k, v in made.items()})
    return out


# ----------------------------------------------------------------------------- reading back

def code_vectors(q: RabitQuantizer, codes: np.ndarray, stored: dict[str, np.ndarray],
                 ex_values: np.ndarray | None = None) -> tuple[np.ndarray, str]:
    """``(v, suffix)``: each row's code vector as values, ``e = sign * (m + 1/2)`` from the
    extended codes where they and their factors are stored (``suffix`` ``"_ex"``: the factor
    columns that go with it), else ``b = sign / 2`` from the sign code (``suffix`` ``""``)."""
    positive = stored_signs(codes, q.code_dim)
    sign = np.where(positive, 1.0, -1.0)
    if ex_values is not None and "__scale_factors_ex" in stored:
        return sign * (ex_magnitudes(None, ex_values, q.ex_bits, positive) + 0.5), "_ex"
    return 0.5 * sign, ""


def reconstruct(q: RabitQuantizer, codes: np.ndarray, partitions: np.ndarray,
                centroids: np.ndarray, metric: str, stored: dict[str, np.ndarray],
                ex_values: np.ndarray | None = None) -> np.ndarray:
    """``(N, D)`` the vectors the rows' codes stand for, as a reader's distance estimate sees
    them: the code vector ``v`` (:func:`code_vectors`) scaled to ``v * |x|^2 / <x, v>`` (read
    from the scale factor: ``-scale / 2`` under l2 and cosine, ``-scale`` under dot), turned
    back by the inverse rotation and added to the partition's centroid (for cosine: of the
    unit-scaled vector)."""
    matrix = q.matrix()
    if matrix is None:
        raise ValueError(f"a rotation of {q.code_dim} dimensions is not turned back (the "
                         f"limit is {MATRIX_LIMIT})")
    v, suffix = code_vectors(q, codes, stored, ex_values)
    length = -np.asarray(stored["__scale_factors" + suffix], np.float64) / (
        2.0 if metric != "dot" else 1.0)
    if q.query_estimator == "residual_query":
        # scale = -k n / (2 <x,b> / sqrt(D))
        length = length * 2 / np.sqrt(q.code_dim)
    rotated = v * length[:, None]
    cent = np.asarray(centroids, np.float64)
    return cent[partitions] + (rotated @ matrix.T)[:, :cent.shape[1]]


def estimated_distances(q: RabitQuantizer, codes: np.ndarray, partitions: np.ndarray,
                        centroids: np.ndarray, stored: dict[str, np.ndarray],
                        target: np.ndarray, ex_values: np.ndarray | None = None) -> np.ndarray:
    """The squared L2 distance of ``target`` to each row as the factors estimate it (l2 and
    cosine indexes; ``target`` prepared as the rows are)::

        |t - c|^2 + n - 2 <r^, t - c>

    with ``r^`` the residual the code stands for (:func:`reconstruct` minus the centroid) and
    ``n`` the residual's squared norm, read from the factors: ``__add_factors`` itself
    (``residual_query``), ``add + scale <c, v>`` (``raw_query``, with the code vector ``v``
    and its factors). A row's own vector is estimated at distance 0."""
    cent = np.asarray(centroids, np.float64)
    rebuilt = reconstruct(q, codes, partitions, cent, "l2", stored, ex_values)
    c = cent[partitions]
    r_hat = rebuilt - c
    if q.query_estimator == "residual_query":
        n = np.asarray(stored["__add_factors"], np.float64)
    else:
        v, suffix = code_vectors(q, codes, stored, ex_values)
        rotated_c = q.rotate(cent)[partitions].astype(np.float64)
        n = (np.asarray(stored["__add_factors" + suffix], np.float64)
             + np.asarray(stored["__scale_factors" + suffix], np.float64)
             * (rotated_c * v).sum(1))
    t = np.asarray(target, np.float64)[None, :] - c
    return (t * t).sum(1) + n - 2 * (r_hat * t).sum(1)


def stored_signs(codes: np.ndarray, code_dim: int) -> np.ndarray:
    """``(N, code_dim)`` bool: the sign bits of the (unpacked) sign codes, True = non-negative."""
    return np.unpackbits(np.asarray(codes, np.uint8), axis=1,
                         bitorder="little")[:, :code_dim].astype(bool)
