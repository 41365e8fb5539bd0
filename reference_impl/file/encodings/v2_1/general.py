"""General compression ``General{compression: {scheme, level?}, values}`` (FILE-ENCODINGS §4.9).

Framing of one compressed unit::

    LZ4  (scheme 1): u32 LE uncompressed length | LZ4 *block* bytes
    ZSTD (scheme 2): u64 LE uncompressed length | zstd frame (28 B5 2F FD ...)
                     a bare zstd frame (starting with the magic) is accepted too

Contexts: mini-block (only value buffer 0 of each chunk is compressed), block (the whole
buffer is one unit) and per value (each full-zip value is one unit). The declared length is
bounded before any allocation: LZ4 cannot expand more than 255x, and callers pass a cap.
"""

from __future__ import annotations

import struct

import lz4.block
import zstandard

from reference_impl.errors import FormatError

RULE = "ENC-020"
LZ4, ZSTD = 1, 2
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
DEFAULT_CAP = 1 << 30


def decompress(scheme: int, data, *, cap: int = DEFAULT_CAP) -> bytes:
    """Decompress one framed unit; FormatError on bad framing or a length beyond ``cap``."""
    data = bytes(data)
    if scheme == LZ4:
        if len(data) < 4:
            raise FormatError("LZ4 unit shorter than its u32 length prefix", rule=RULE)
        (n,) = struct.unpack_from("<I", data)
        if n > cap or n > 255 * (len(data) - 4) + 64:
            raise FormatError(f"LZ4 unit declares {n} bytes from {len(data) - 4}", rule=RULE)
        if n == 0:
            return b""
        try:
            out = lz4.block.decompress(data[4:], uncompressed_size=n)
        except (lz4.block.LZ4BlockError, ValueError) as exc:
            raise FormatError(f"LZ4 block does not decompress: {exc}", rule=RULE) from None
        if len(out) != n:
            raise FormatError(f"LZ4 block gave {len(out)} bytes, {n} declared", rule=RULE)
        return out
    if scheme == ZSTD:
        if data[:4] == ZSTD_MAGIC:
            frame, n = data, None
        else:
            if len(data) < 8:
                raise FormatError("ZSTD unit shorter than its u64 length prefix", rule=RULE)
            (n,) = struct.unpack_from("<Q", data)
            frame = data[8:]
            if n > cap:
                raise FormatError(f"ZSTD unit declares {n} bytes, more than allowed", rule=RULE)
        try:
            out = zstandard.ZstdDecompressor().decompress(frame, max_output_size=n if n is not None else cap)
        except zstandard.ZstdError as exc:
            raise FormatError(f"ZSTD frame does not decompress: {exc}", rule=RULE) from None
        if n is not None and len(out) != n:
            raise FormatError(f"ZSTD frame gave {len(out)} bytes, {n} declared", rule=RULE)
        return out
    raise FormatError(f"unknown compression scheme {scheme}", rule=RULE)
