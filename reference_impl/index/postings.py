"""The posting lists of the partitioned INVERTED layout (``part_N_invert.lance``).

Each row of ``part_N_invert.lance`` is one token id of partition N (the row number is the
id): ``_posting`` (a list of binaries, the blocks), ``_length`` (documents in the list),
``_max_score``. A posting list names *documents*: positions in ``part_N_docs.lance``, whose
``_rowid`` gives the row. The layout this module reads is the one whose ``metadata.lance``
says ``format_version`` 2, ``posting_block_size`` 128 and ``posting_tail_codec``
``varint_delta_v1`` (pylance 14.0.2's default):

* every full block of 128 documents::

      f32 LE   the block's largest score
      u32 LE   the first document id
      u8       bits per delta
      bytes    128 deltas (document id minus the previous one, the first minus itself),
               bit-packed in the four-lane layout below: bits * 16 bytes
      u8       bits per frequency
      bytes    128 frequencies, bit-packed the same way

* then, when the list's length is not a multiple of 128, the tail block::

      f32 LE   the block's largest score
      varints  the tail's document ids as deltas (the first from 0)
      varints  their frequencies

  (varint: seven bits a byte, least significant first, high bit set on all but the last).

Four-lane bit packing (a block of 128 values, ``b`` bits each): value ``i`` belongs to lane
``i % 4`` as that lane's value ``i // 4``; each lane is a stream of little-endian 32-bit words
holding its 32 values back to back from the low bits (a value may straddle two words), and
the lanes' words are interleaved: word ``w`` of lane ``l`` is the ``(4 w + l)``-th word.

:func:`unpack4x_readable` is the loop as described; :func:`unpack4x` the numpy form
(tested equal).
"""

from __future__ import annotations

import struct

import numpy as np

from reference_impl.errors import FormatError

BLOCK = 128
#: the layout settings (metadata.lance) this module reads
KNOWN = {"format_version": "2", "posting_block_size": "128",
         "posting_tail_codec": "varint_delta_v1"}


def unpack4x_readable(data: bytes, bits: int) -> list[int]:
    """The 128 values of a four-lane bit-packed block, one at a time."""
    words = struct.unpack(f"<{bits * 4}I", data[:bits * 16]) if bits else ()
    out = []
    for i in range(BLOCK):
        lane, k = i % 4, i // 4
        value = 0
        for bit in range(bits):
            pos = k * bits + bit
            word = words[(pos // 32) * 4 + lane]
            value |= ((word >> (pos % 32)) & 1) << bit
        out.append(value)
    return out


def unpack4x(data: bytes, bits: int) -> np.ndarray:
    """The 128 values (uint64) of a four-lane bit-packed block."""
    if bits == 0:
        return np.zeros(BLOCK, np.uint64)
    words = np.frombuffer(data[:bits * 16], "<u4").astype(np.uint64).reshape(bits, 4)
    k = np.arange(BLOCK // 4, dtype=np.uint64)
    pos = k * np.uint64(bits)
    w = (pos // np.uint64(32)).astype(np.int64)
    off = pos % np.uint64(32)
    lo = words[w] >> off[:, None]                       # (32 values, 4 lanes)
    nxt = np.minimum(w + 1, bits - 1)
    hi = np.where((off + np.uint64(bits) > np.uint64(32))[:, None],
                  words[nxt] << (np.uint64(32) - off)[:, None], np.uint64(0))
    vals = (lo | hi) & np.uint64((1 << bits) - 1)
    return vals.reshape(-1)                             # row-major: value 4k + lane


def _varints(data: bytes, pos: int, count: int, path) -> tuple[list[int], int]:
    out = []
    for _ in range(count):
        value = shift = 0
        while True:
            if pos >= len(data) or shift > 35:
                raise FormatError("INVERTED posting tail: a varint runs past its block",
                                  path=path)
            byte = data[pos]
            pos += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                break
        out.append(value)
    return out, pos


def decode(blocks: list[bytes], length: int, *, path=None) -> tuple[np.ndarray, np.ndarray]:
    """``(document ids, frequencies)`` of one posting list of ``length`` documents."""
    full, tail = divmod(int(length), BLOCK)
    if len(blocks) != full + (1 if tail else 0):
        raise FormatError(f"INVERTED posting list of {length} documents has {len(blocks)} "
                          f"blocks, not {full + (1 if tail else 0)}", path=path)
    docs, freqs = [], []
    for b in blocks[:full]:
        if len(b) < 9:
            raise FormatError("INVERTED posting block shorter than its header", path=path)
        first = struct.unpack_from("<I", b, 4)[0]
        bits = b[8]
        end = 9 + bits * 16
        if bits > 32 or len(b) < end + 1:
            raise FormatError(f"INVERTED posting block: {bits} bits a delta do not fit its "
                              f"{len(b)} bytes", path=path)
        fbits = b[end]
        if fbits > 32 or len(b) < end + 1 + fbits * 16:
            raise FormatError(f"INVERTED posting block: {fbits} bits a frequency do not fit "
                              f"its {len(b)} bytes", path=path)
        deltas = unpack4x(b[9:end], bits)
        docs.append(np.uint64(first) + np.cumsum(deltas, dtype=np.uint64))
        freqs.append(unpack4x(b[end + 1:], fbits))
    if tail:
        b = blocks[full]
        deltas, pos = _varints(b, 4, tail, path)
        f, _pos = _varints(b, pos, tail, path)
        docs.append(np.cumsum(np.asarray(deltas, np.uint64), dtype=np.uint64))
        freqs.append(np.asarray(f, np.uint64))
    if not docs:
        return np.zeros(0, np.uint64), np.zeros(0, np.uint64)
    return np.concatenate(docs), np.concatenate(freqs)
