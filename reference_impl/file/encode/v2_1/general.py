"""``General{compression{scheme, level?}, values}``: LZ4 or ZSTD framing (FILE-ENCODINGS §4.9).

Framing of one compressed unit:

* LZ4 (scheme 1): ``u32 LE uncompressed length | LZ4 block`` (block format, not frame).
* ZSTD (scheme 2): ``u64 LE uncompressed length | zstd frame``.

Used per value in full-zip (each value framed on its own; the zipped length is the
framed size) and as a block wrapper for 2.2 dictionaries.
"""

from __future__ import annotations

import struct

import lz4.block
import zstandard

from ....proto import encodings_v2_1_pb2 as pb

LZ4 = pb.COMPRESSION_ALGORITHM_LZ4
ZSTD = pb.COMPRESSION_ALGORITHM_ZSTD
ZSTD_LEVEL = 3


def compress(data: bytes, scheme: int, level: int | None = None) -> bytes:
    """Frame ``data`` for ``scheme``; ``level`` is the zstd level (None or 0: the default)."""
    if scheme == LZ4:
        return struct.pack("<I", len(data)) + lz4.block.compress(data, store_size=False)
    if scheme == ZSTD:
        return struct.pack("<Q", len(data)) + zstandard.ZstdCompressor(
            level=level or ZSTD_LEVEL
        ).compress(data)
    raise ValueError(f"unknown compression scheme {scheme}")


def general_encoding(
    scheme: int, inner: pb.CompressiveEncoding, level: int | None = None
) -> pb.CompressiveEncoding:
    enc = pb.CompressiveEncoding()
    enc.general.compression.scheme = scheme
    if level is not None:
        enc.general.compression.level = level
    enc.general.values.CopyFrom(inner)
    return enc


class GeneralValues:
    """Mini-block values wrapped in ``general`` (FILE-ENCODINGS §4.9, MB context): the inner
    encoder's chunks with only value buffer 0 compressed, chunk by chunk; the chunk header
    records the framed size, the other buffers stay raw."""

    def __init__(self, inner, scheme: int, level: int | None = None) -> None:
        self.inner = inner
        self.scheme = scheme
        self.level = level
        self.num_buffers = inner.num_buffers
        self.max_chunk_values = inner.max_chunk_values

    def encoding(self) -> pb.CompressiveEncoding:
        return general_encoding(self.scheme, self.inner.encoding(), self.level)

    def cost(self, start: int, count: int) -> int:
        raw = self.inner.cost(start, count)
        return raw + raw // 255 + 32  # LZ4/zstd worst-case growth plus the length prefix

    def chunk(self, start: int, count: int) -> list[bytes]:
        bufs = list(self.inner.chunk(start, count))
        bufs[0] = compress(bufs[0], self.scheme, self.level)
        return bufs
