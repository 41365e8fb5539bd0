"""Page and buffer access for 2.x files, with read counting.

A ``ColumnMetadata.Page`` (spec 003) lists ``buffer_offsets``/``buffer_sizes`` (same length),
``length`` (2.1+: top-level rows; 2.0: values in the page), ``encoding`` (a ``direct``
encoding holding a serialized ``google.protobuf.Any``) and ``priority`` (2.1+: the first row;
2.0: 0). :func:`read_page_buffers` fetches all of a page's buffers with **one** ranged read of
the span that covers them (so a point lookup costs at most one read per column page) and hands
back one ``memoryview`` per buffer; size-0 buffers are never read.
"""

from __future__ import annotations

from google.protobuf import any_pb2
from google.protobuf.message import DecodeError

from reference_impl.errors import FormatError, UnsupportedFeature
from reference_impl.proto import encodings_v2_0_pb2, encodings_v2_1_pb2

PAGE_LAYOUT_URL = "/lance.encodings21.PageLayout"
#: every 2.x version keeps the 2.0 package at column level (FILE-ENCODINGS §0)
COLUMN_ENCODING_URL = "/lance.encodings.ColumnEncoding"
RULE_ENCODING = "FILE-015"  # page encodings are direct Anys of the layout type
RULE_BUFFERS = "FILE-011"  # page buffers pair up and lie inside the file
MAX_SPAN = 1 << 31


def unpack_any(encoding, expected_url: str, message, *, path: str, offset=None):
    """Parse a ``direct`` encoding's Any into ``message`` (FormatError on mismatch)."""
    loc = encoding.WhichOneof("location")
    if loc != "direct":
        raise UnsupportedFeature(f"{loc or 'missing'} encodings are not supported (only direct)")
    wrapper = any_pb2.Any()
    try:
        wrapper.ParseFromString(encoding.direct.encoding)
        if wrapper.type_url != expected_url:
            raise FormatError(f"encoding type {wrapper.type_url!r}, expected {expected_url!r}",
                              rule=RULE_ENCODING, path=path, offset=offset)
        message.ParseFromString(wrapper.value)
    except (DecodeError, RuntimeError, ValueError) as exc:
        raise FormatError(f"encoding does not parse: {exc}", rule=RULE_ENCODING, path=path,
                          offset=offset) from None
    return message


def column_encoding(meta, *, path: str, column: int):
    """The ``ColumnEncoding`` of a ``ColumnMetadata``: a ``direct`` Any of
    ``/lance.encodings.ColumnEncoding`` in every 2.x version (FILE-ENCODINGS §0). pylance
    refuses a file whose column encoding is missing, empty, of another type or does not parse
    ("Error reading file metadata"), so the reader does too (FILE-015)."""
    try:
        return unpack_any(meta.encoding, COLUMN_ENCODING_URL, encodings_v2_0_pb2.ColumnEncoding(),
                          path=path)
    except (FormatError, UnsupportedFeature) as exc:
        detail = exc.message if isinstance(exc, FormatError) else str(exc)
        raise FormatError(f"column {column}: column encoding: {detail}", rule=RULE_ENCODING,
                          path=path) from None


def page_layout(page, *, path: str):
    first = page.buffer_offsets[0] if len(page.buffer_offsets) else None
    return unpack_any(page.encoding, PAGE_LAYOUT_URL, encodings_v2_1_pb2.PageLayout(), path=path, offset=first)


def read_page_buffers(container, page) -> list:
    """One memoryview per page buffer, from a single ranged read."""
    offs, sizes = list(page.buffer_offsets), list(page.buffer_sizes)
    path = container.path
    if len(offs) != len(sizes):
        raise FormatError("page buffer_offsets and buffer_sizes differ in length", rule=RULE_BUFFERS,
                          path=path)
    spans = [(o, s) for o, s in zip(offs, sizes, strict=False) if s]
    for o, s in spans:
        if o + s > container.size:
            raise FormatError(f"page buffer {o}+{s} lies outside the file ({container.size} bytes)",
                              rule=RULE_BUFFERS, path=path, offset=o)
    if not spans:
        return [memoryview(b"") for _ in offs]
    lo = min(o for o, _ in spans)
    hi = max(o + s for o, s in spans)
    if hi - lo > MAX_SPAN:
        raise FormatError("page buffers span more than 2 GiB", rule=RULE_BUFFERS, path=path, offset=lo)
    block = memoryview(container.read_buffer(lo, hi - lo))
    return [block[o - lo: o - lo + s] if s else memoryview(b"") for o, s in zip(offs, sizes, strict=False)]
