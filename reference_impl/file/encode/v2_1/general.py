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


def compress(data: bytes, scheme: int) -> bytes:
    if scheme == LZ4:
        return struct.pack("<I", len(data)) + lz4.block.compress(data, store_size=False)
    if scheme == ZSTD:
        return struct.pack("<Q", len(data)) + zstandard.ZstdCompressor(level=ZSTD_LEVEL).compress(
            data
        )
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
