"""The compressed postings and positions of pylance's partitioned INVERTED index.

Each row of ``part_N_invert.lance`` is one token id (row i = token i of the partition's
token FST); ``_length`` is how many documents the token is in; ``_posting`` a list of
blocks, each a binary. A posting names a document by its position in ``part_N_docs.lance``
(doc id), not by row id. A list of ``n`` postings has ``n // 128`` full blocks of 128 and,
when ``n % 128`` is not 0, one tail block of the rest.

Full block (every release)::

    f32 block max score | u32 first doc id | u8 b | 16*b bytes: doc id deltas |
    u8 c | 16*c bytes: frequencies

The two 128-value arrays are bit-packed in the "4x" layout: value i goes to lane i % 4;
each lane packs its 32 values LSB-first into b 32-bit words; word k of lane l is the
little-endian u32 at byte ``(4*k + l) * 4``. Doc ids are ``first + cumulative sum`` of the
deltas (the first delta is 0).

Tail block, two codecs (``posting_tail_codec`` in metadata.lance)::

    fixed32_v1 (or no codec named: 0.3x..8.x)   f32 score | n u32 doc ids | n u32 frequencies
    varint_delta_v1 (format_version 2: 9.0.1 on) f32 score | n LEB128 varints: the first doc
                                                id, then deltas | n LEB128 varints: frequencies

Positions (``with_position``), two layouts:

* per document (0.3x..8.x): ``_position`` is a list per token of one list per posting:
  binary 0 = u32 count; then full chunks of 128 positions each as
  ``u32 first | u8 b | 16*b bytes`` (sorted 4x packing: first + cumulative deltas), then
  the remainder as raw u32s (each chunk one binary).
* ``shared_stream_v2`` / ``packed_delta_v1`` (format_version 2, 9.0.1 on): ``_compressed_position``
  is one byte stream per token, ``_position_block_offset`` where each posting block's part
  starts. A block's part is the positions of its postings in order, each document's
  positions as deltas (the first absolute), the whole sequence cut into chunks of 128:
  a full chunk is ``u8 b | 16*b bytes`` (plain 4x packing), the rest LEB128 varints.
"""

from __future__ import annotations

import numpy as np

from reference_impl.errors import FormatError

BLOCK = 128
#: the tail codecs this module decodes
TAIL_CODECS = ("fixed32_v1", "varint_delta_v1")


class _Cursor:
    """A read position in one binary, every read bounds-checked (FormatError past the end)."""

    def __init__(self, data: bytes, path: str | None, what: str) -> None:
        self.data, self.at, self.path, self.what = data, 0, path, what

    def take(self, n: int) -> bytes:
        if n < 0 or self.at + n > len(self.data):
            raise FormatError(f"INVERTED {self.what}: {n} bytes wanted at {self.at} of "
                              f"{len(self.data)}", path=self.path)
        out = self.data[self.at:self.at + n]
        self.at += n
        return out

    def u8(self) -> int:
        return self.take(1)[0]

    def u32s(self, n: int) -> np.ndarray:
        return np.frombuffer(self.take(4 * n), dtype="<u4").astype(np.int64)

    def varints(self, n: int) -> list[int]:
        """``n`` unsigned LEB128 varints (7 bits a byte, low group first, high bit =
        more), each at most 5 bytes."""
        out = []
        for _ in range(n):
            value = shift = 0
            while True:
                b = self.u8()
                value |= (b & 0x7F) << shift
                if not b & 0x80:
                    break
                shift += 7
                if shift > 28:
                    raise FormatError(f"INVERTED {self.what}: varint longer than 5 bytes "
                                      f"at {self.at}", path=self.path)
            out.append(value)
        return out

    def packed(self, bits: int) -> np.ndarray:
        """128 values of ``bits`` bits in the 4x layout (see the module docstring)."""
        if bits > 32:
            raise FormatError(f"INVERTED {self.what}: {bits} bits a value", path=self.path)
        return unpack_4x(self.take(16 * bits), bits)

    def end(self) -> None:
        if self.at != len(self.data):
            raise FormatError(f"INVERTED {self.what}: {len(self.data) - self.at} bytes left "
                              "after its values", path=self.path)


def unpack_4x(raw: bytes, bits: int) -> np.ndarray:
    """The 128 values bit-packed in ``raw`` (``16 * bits`` bytes) in the 4x layout."""
    if bits == 0:
        return np.zeros(BLOCK, dtype=np.int64)
    words = np.frombuffer(raw, dtype="<u4").reshape(bits, 4)     # [word k, lane l]
    lanes = np.ascontiguousarray(words.T).astype("<u4")           # [lane, word]
    stream = np.unpackbits(lanes.view(np.uint8).reshape(4, 4 * bits), axis=1,
                           bitorder="little")                     # [lane, 32*bits bits]
    weights = np.left_shift(np.int64(1), np.arange(bits, dtype=np.int64))
    per_lane = stream.reshape(4, 32, bits).astype(np.int64) @ weights   # [lane, j]
    return per_lane.T.reshape(BLOCK)                              # value 4*j + l


def full_block(raw: bytes, path: str | None) -> tuple[np.ndarray, np.ndarray]:
    """(doc ids, frequencies) of one full posting block."""
    c = _Cursor(raw, path, "posting block")
    c.take(4)                                   # the block's max score
    first = int(c.u32s(1)[0])
    deltas = c.packed(c.u8())
    freqs = c.packed(c.u8())
    c.end()
    return first + np.cumsum(deltas), freqs


def tail_block(raw: bytes, n: int, codec: str, path: str | None) -> tuple[np.ndarray,
                                                                            np.ndarray]:
    """(doc ids, frequencies) of the tail block of ``n`` postings under ``codec``."""
    c = _Cursor(raw, path, "posting tail block")
    c.take(4)
    if codec == "fixed32_v1":
        docs, freqs = c.u32s(n), c.u32s(n)
    elif codec == "varint_delta_v1":
        docs = np.cumsum(np.array(c.varints(n), dtype=np.int64))
        freqs = np.array(c.varints(n), dtype=np.int64)
    else:
        raise FormatError(f"INVERTED posting tail codec {codec!r}", path=path)
    c.end()
    return docs, freqs


def posting_list(blocks: list[bytes], length: int, codec: str,
                 path: str | None) -> tuple[np.ndarray, np.ndarray]:
    """(doc ids, frequencies) of one token: its ``length`` postings across ``blocks``."""
    full, rest = divmod(length, BLOCK)
    if len(blocks) != full + (1 if rest else 0):
        raise FormatError(f"INVERTED posting list of {length} postings has {len(blocks)} "
                          f"blocks, not {full + (1 if rest else 0)}", path=path)
    parts = [full_block(b, path) for b in blocks[:full]]
    if rest:
        parts.append(tail_block(blocks[full], rest, codec, path))
    if not parts:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    docs = np.concatenate([p[0] for p in parts])
    freqs = np.concatenate([p[1] for p in parts])
    if len(docs) > 1 and not (np.diff(docs) > 0).all():
        raise FormatError("INVERTED posting list doc ids are not strictly ascending",
                          path=path)
    return docs, freqs


def positions_per_doc(chunks: list[bytes], path: str | None) -> list[int]:
    """The positions of one posting in the per-document layout (0.3x..4.x)."""
    if not chunks:
        raise FormatError("INVERTED positions of a posting have no count", path=path)
    head = _Cursor(chunks[0], path, "position count")
    count = int(head.u32s(1)[0])
    head.end()
    full, rest = divmod(count, BLOCK)
    if len(chunks) != 1 + full + (1 if rest else 0):
        raise FormatError(f"INVERTED {count} positions in {len(chunks) - 1} chunks", path=path)
    out: list[int] = []
    for raw in chunks[1:1 + full]:
        c = _Cursor(raw, path, "position chunk")
        first = int(c.u32s(1)[0])
        out.extend((first + np.cumsum(c.packed(c.u8()))).tolist())
        c.end()
    if rest:
        c = _Cursor(chunks[1 + full], path, "position chunk")
        out.extend(c.u32s(rest).tolist())
        c.end()
    return out


def positions_shared(stream: bytes, offsets: list[int], freqs: np.ndarray,
                     path: str | None) -> list[list[int]]:
    """The positions of each posting of one token in the ``shared_stream_v2`` layout:
    ``freqs`` (one per posting) says how many each has; ``offsets`` where each posting
    block's part of ``stream`` starts."""
    nblocks = -(-len(freqs) // BLOCK)
    if len(offsets) != nblocks:
        raise FormatError(f"INVERTED {len(offsets)} position block offsets for {nblocks} "
                          "posting blocks", path=path)
    bounds = list(offsets) + [len(stream)]
    if any(not 0 <= a <= b <= len(stream) for a, b in zip(bounds[:-1], bounds[1:], strict=True)):
        raise FormatError("INVERTED position block offsets are not ascending within the "
                          "stream", path=path)
    out: list[list[int]] = []
    for k in range(nblocks):
        counts = freqs[k * BLOCK:(k + 1) * BLOCK].tolist()
        total = int(sum(counts))
        c = _Cursor(stream[bounds[k]:bounds[k + 1]], path, "position block")
        values: list[int] = []
        for _ in range(total // BLOCK):
            values.extend(c.packed(c.u8()).tolist())
        values.extend(c.varints(total % BLOCK))
        c.end()
        at = 0
        for n in counts:
            out.append(np.cumsum(values[at:at + n]).tolist())
            at += n
    return out
