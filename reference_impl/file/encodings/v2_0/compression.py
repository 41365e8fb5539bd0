"""Buffer compression used by the 2.0 ``Flat.compression`` field (and 2.1 ``general``).

Framing, per FILE-ENCODINGS §4.9::

    lz4  : u32 LE uncompressed length | one LZ4 *block* (not the frame format)
    zstd : u64 LE uncompressed length | a zstd frame (a bare frame, starting with the
           magic 28 B5 2F FD, is also accepted)

The uncompressed length is checked against a caller-supplied bound before any
allocation, so a lying header cannot make the reader allocate without limit.
"""

from __future__ import annotations

import struct

from reference_impl.errors import FormatError, UnsupportedFeature

ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


def decompress(
    scheme: str,
    data: bytes | memoryview,
    *,
    limit: int,
    path: str | None = None,
    offset: int | None = None,
    rule: str = "ENC-053",
) -> bytes:
    """Decompress ``data`` framed for ``scheme`` (``lz4``/``zstd``); refuse outputs above ``limit``."""
    data = bytes(data)
    scheme = scheme.lower()
    if scheme in ("", "none"):
        return data
    if scheme == "lz4":
        if len(data) < 4:
            raise FormatError(
                "lz4 buffer shorter than its 4-byte length prefix",
                rule=rule,
                path=path,
                offset=offset,
            )
        (size,) = struct.unpack_from("<I", data)
        if size > limit:
            raise FormatError(
                f"lz4 buffer claims {size} bytes, more than {limit} allowed",
                rule=rule,
                path=path,
                offset=offset,
            )
        import lz4.block

        try:
            out = lz4.block.decompress(data[4:], uncompressed_size=size)
        except MemoryError:
            raise  # the machine's memory, not the bytes (the size is bounded above)
        except Exception as exc:  # lz4 raises LZ4BlockError
            raise FormatError(
                f"lz4 block does not decode: {exc}", rule=rule, path=path, offset=offset
            ) from None
        if len(out) != size:
            raise FormatError(
                "lz4 block decoded to the wrong size", rule=rule, path=path, offset=offset
            )
        return out
    if scheme == "zstd":
        import zstandard

        body, size = data, None
        if not data.startswith(ZSTD_MAGIC):
            if len(data) < 8:
                raise FormatError(
                    "zstd buffer shorter than its 8-byte length prefix",
                    rule=rule,
                    path=path,
                    offset=offset,
                )
            (size,) = struct.unpack_from("<Q", data)
            body = data[8:]
        if size is not None and size > limit:
            raise FormatError(
                f"zstd buffer claims {size} bytes, more than {limit} allowed",
                rule=rule,
                path=path,
                offset=offset,
            )
        try:
            out = zstandard.ZstdDecompressor().decompress(
                body, max_output_size=limit if size is None else max(size, 1)
            )
        except MemoryError:
            raise  # the machine's memory, not the bytes (the size is bounded above)
        except Exception as exc:
            raise FormatError(
                f"zstd frame does not decode: {exc}", rule=rule, path=path, offset=offset
            ) from None
        if size is not None and len(out) != size:
            raise FormatError(
                "zstd frame decoded to the wrong size", rule=rule, path=path, offset=offset
            )
        return out
    raise UnsupportedFeature(
        f"unknown compression scheme {scheme!r}", rule=rule, path=path, offset=offset
    )
