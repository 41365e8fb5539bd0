"""One encoded page: buffers, length, priority and the encoding message.

A page (spec 003, ``ColumnMetadata.Page``) is a list of buffers stored in the data
region of the file plus metadata: ``length`` (2.0: values in this column's page;
2.1+: top-level rows), ``priority`` (2.0: always 0; 2.1+: first top-level row) and an
``Encoding`` whose ``direct.encoding`` bytes hold a serialized
``google.protobuf.Any``. The Any's ``type_url`` is a leading slash plus the message's
full name, with no host (``/lance.encodings.ArrayEncoding`` for 2.0,
``/lance.encodings21.PageLayout`` for 2.1 and 2.2).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from google.protobuf import any_pb2
from google.protobuf.message import Message


def pack_any(message: Message) -> bytes:
    """Serialize ``message`` inside a ``google.protobuf.Any`` with a host-less type URL."""
    wrapper = any_pb2.Any()
    wrapper.type_url = "/" + message.DESCRIPTOR.full_name
    wrapper.value = message.SerializeToString()
    return wrapper.SerializeToString()


@dataclass
class EncodedPage:
    """A page ready to be written: ``buffers`` in buffer-index order."""

    buffers: list[bytes]
    length: int
    encoding: bytes  # serialized Any
    priority: int = 0
    # the encoding message itself, kept for inspection by tests and tools
    description: Message | None = field(default=None, repr=False)
