"""The manifest file: framing, reading and writing (spec 001 "Manifest", FACTS §A).

A manifest file in ``_versions/`` is laid out as (offsets from the start, little-endian)::

    [IndexSection  u32 len | protobuf]   optional; its offset is Manifest.index_section (6)
    [Transaction   u32 len | protobuf]   optional; offset in Manifest field 23 (pylance 14)
                                         or field 21 (the Nov-2025 proto's name)
    [Manifest      u32 len | protobuf]   at offset P; must end exactly at size - 16
    u64 P | u16 major (0) | u16 minor (2) | b"LANC"          16-byte tail

pylance writes the sections back to back without padding, index section first; the offsets
point at the u32 length prefixes. The inline transaction is byte-identical to the ``.txn``
file of the same commit.

Every framing failure is a :class:`~reference_impl.errors.FormatError` naming its rule:

* ``MANIFEST-001``: the 16-byte tail is missing or its magic is not ``LANC``;
* ``MANIFEST-002``: the Manifest length prefix is out of bounds or the message does not
  end exactly at ``size - 16``;
* ``MANIFEST-003``: the Manifest protobuf does not parse;
* ``MANIFEST-004``: the index section is out of bounds or does not parse;
* ``MANIFEST-005``: the transaction section is out of bounds or does not parse.

Reading costs one size request and, for manifests under 64 KiB, one ranged read; a larger
manifest needs one more ranged read for the bytes before the last 64 KiB.
:func:`decode_manifest_file` decodes bytes already read whole (the validator reads each
manifest with one request of the size its listing gave).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from google.protobuf.message import DecodeError, Message

from ..errors import FormatError
from ..io.base import ObjectStore
from ..proto import table_pb2, transaction_pb2

MAGIC = b"LANC"
TAIL_SIZE = 16
TAIL_MAJOR = 0
TAIL_MINOR = 2
TAIL_READ = 64 * 1024
DEFAULT_MAX_MANIFEST_SIZE = 1 << 30

# Field numbers of Manifest that hold the offset of the inline transaction.
TRANSACTION_FIELD_PYLANCE = 23
TRANSACTION_FIELD_SPEC = 21
_TXN_ATTR = {23: "transaction_section", 21: "transaction_section_spec"}


@dataclass
class ManifestFile:
    """A decoded manifest file with everything its framing carried."""

    key: str
    size: int
    manifest: table_pb2.Manifest
    index_section: table_pb2.IndexSection | None
    transaction: transaction_pb2.Transaction | None
    transaction_field: int | None
    transaction_bytes: bytes | None
    manifest_offset: int
    tail_major: int
    tail_minor: int
    _unknown: dict | None = field(default=None, repr=False, compare=False)

    @property
    def version(self) -> int:
        return self.manifest.version

    @property
    def unknown_fields(self) -> dict[str, list[tuple[int, int, bytes]]]:
        """Fields the schema lacks, wherever they sit: ``{path: [(number, wire type, raw
        bytes)]}`` with paths such as ``manifest.fragments[3]``, ``index_section.indices[0]``,
        ``transaction``. Computed on first use (opening stays cheap) and cached."""
        if self._unknown is None:
            found: dict[str, list[tuple[int, int, bytes]]] = {}
            for message, label in ((self.manifest, "manifest"),
                                   (self.index_section, "index_section"),
                                   (self.transaction, "transaction")):
                if message is not None:
                    collect_unknown_fields(message, label, found)
            self._unknown = found
        return self._unknown


class _Window:
    """The bytes of one object loaded so far: a suffix ``[start, size)``; a read before
    ``start`` fetches the whole missing prefix once (bounded by ``size``, already checked
    against ``max_size``)."""

    def __init__(self, store: ObjectStore, key: str, size: int, start: int, data: bytes):
        self.store, self.key, self.size = store, key, size
        self.start, self.data = start, data

    def read(self, offset: int, length: int) -> bytes:
        if offset < 0 or length < 0 or offset + length > self.size:
            raise ValueError("range out of bounds")  # callers check first
        if offset < self.start:
            # The sections before the manifest (index, transaction) are read with it anyway:
            # fetch everything before the window at once so a file costs at most two reads.
            head = self.store.get_range(self.key, 0, self.start)
            self.data = head + self.data
            self.start = 0
        rel = offset - self.start
        return self.data[rel: rel + length]


def _parse(message: Message, data: bytes, rule: str, key: str, offset: int, what: str) -> None:
    try:
        message.ParseFromString(data)
    except (DecodeError, RuntimeError, ValueError, RecursionError) as exc:
        raise FormatError(f"{what} protobuf does not parse: {exc}", rule=rule, path=key,
                          offset=offset) from None


def _section(win: _Window, offset: int, limit: int, rule: str, what: str) -> tuple[int, bytes]:
    """The ``(length, payload)`` of a u32-prefixed section at ``offset`` ending by ``limit``."""
    if offset + 4 > limit:
        raise FormatError(f"{what} offset {offset} leaves no room for its length prefix "
                          f"before byte {limit}", rule=rule, path=win.key, offset=offset)
    (length,) = struct.unpack("<I", win.read(offset, 4))
    if offset + 4 + length > limit:
        raise FormatError(f"{what} length prefix {length} runs past byte {limit}",
                          rule=rule, path=win.key, offset=offset)
    return length, win.read(offset + 4, length)


def read_manifest_file(store: ObjectStore, key: str, *, max_size: int = DEFAULT_MAX_MANIFEST_SIZE,
                       size: int | None = None) -> ManifestFile:
    """Read and decode the manifest file ``key`` of ``store``.

    ``size`` may be passed when a listing already gave it (saves one request).
    Raises NotFound when the file is missing and FormatError when its bytes are wrong.
    """
    if size is None:
        size = store.size(key)
    _check_size(size, max_size, key)
    start = max(0, size - TAIL_READ)
    data = store.get_range(key, start, size - start)
    if len(data) != size - start:
        raise FormatError("manifest changed size while being read", rule="MANIFEST-001",
                          path=key, offset=start)
    return _decode(_Window(store, key, size, start, data), key, size, None)


def decode_manifest_file(data: bytes, key: str, *, max_size: int = DEFAULT_MAX_MANIFEST_SIZE,
                         parse_manifest=None) -> ManifestFile:
    """Decode the whole bytes of a manifest file already read (``key`` names it in errors).

    ``parse_manifest(body) -> Manifest`` replaces the plain protobuf parse of the Manifest
    message (a caller that splits the fragments off first passes one; it raises
    ``DecodeError`` for bytes that do not parse). Raises FormatError like
    :func:`read_manifest_file`."""
    size = len(data)
    _check_size(size, max_size, key)
    return _decode(_Window(None, key, size, 0, data), key, size, parse_manifest)


def _check_size(size: int, max_size: int, key: str) -> None:
    if size > max_size:
        raise FormatError(f"manifest is {size} bytes, above the bound of {max_size}",
                          rule="MANIFEST-002", path=key, offset=0)
    if size < TAIL_SIZE:
        raise FormatError(f"manifest is {size} bytes, shorter than its 16-byte tail",
                          rule="MANIFEST-001", path=key, offset=0)


def _decode(win: _Window, key: str, size: int, parse_manifest) -> ManifestFile:
    """Tail, Manifest, index section and inline transaction of the file ``win`` holds."""
    tail = win.read(size - TAIL_SIZE, TAIL_SIZE)
    if tail[12:] != MAGIC:
        raise FormatError(f"bad magic {tail[12:]!r} (expected b'LANC')", rule="MANIFEST-001",
                          path=key, offset=size - 4)
    position, major, minor = struct.unpack("<QHH", tail[:12])
    end = size - TAIL_SIZE
    if position + 4 > end:
        raise FormatError(f"manifest position {position} is past the tail at {end}",
                          rule="MANIFEST-002", path=key, offset=end)
    (length,) = struct.unpack("<I", win.read(position, 4))
    if position + 4 + length != end:
        raise FormatError(
            f"manifest length prefix {length} at {position} ends at {position + 4 + length}, "
            f"not at the tail ({end})", rule="MANIFEST-002", path=key, offset=position)
    body = win.read(position + 4, length)
    if parse_manifest is None:
        manifest = table_pb2.Manifest()
        _parse(manifest, body, "MANIFEST-003", key, position + 4, "Manifest")
    else:
        try:
            manifest = parse_manifest(body)
        except (DecodeError, RuntimeError, ValueError, RecursionError) as exc:
            raise FormatError(f"Manifest protobuf does not parse: {exc}", rule="MANIFEST-003",
                              path=key, offset=position + 4) from None

    index_section = None
    if manifest.HasField("index_section"):
        off = manifest.index_section
        _, payload = _section(win, off, end, "MANIFEST-004", "index section")
        index_section = table_pb2.IndexSection()
        _parse(index_section, payload, "MANIFEST-004", key, off + 4, "IndexSection")

    transaction = transaction_field = transaction_bytes = None
    for number in (TRANSACTION_FIELD_PYLANCE, TRANSACTION_FIELD_SPEC):
        if manifest.HasField(_TXN_ATTR[number]):
            off = getattr(manifest, _TXN_ATTR[number])
            _, transaction_bytes = _section(win, off, end, "MANIFEST-005", "transaction section")
            transaction = transaction_pb2.Transaction()
            _parse(transaction, transaction_bytes, "MANIFEST-005", key, off + 4, "Transaction")
            transaction_field = number
            break

    return ManifestFile(
        key=key, size=size, manifest=manifest, index_section=index_section,
        transaction=transaction, transaction_field=transaction_field,
        transaction_bytes=transaction_bytes, manifest_offset=position,
        tail_major=major, tail_minor=minor,
    )


# -- unknown fields ----------------------------------------------------------------

def _varint(n: int) -> bytes:
    out = bytearray()
    n &= (1 << 64) - 1
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _unknown_of(message: Message) -> list[tuple[int, int, bytes]]:
    from google.protobuf.unknown_fields import UnknownFieldSet

    found = []
    try:
        fields = UnknownFieldSet(message)
    except Exception:  # noqa: BLE001 - an implementation without the API: report nothing
        return found
    for uf in fields:
        wt, data = uf.wire_type, uf.data
        if wt == 0:
            raw = _varint(data)
        elif wt == 1:
            raw = struct.pack("<Q", data & ((1 << 64) - 1))
        elif wt == 5:
            raw = struct.pack("<I", data & 0xFFFFFFFF)
        elif wt == 2:
            raw = bytes(data)
        else:  # a group: its contents are not kept byte for byte
            raw = b""
        found.append((uf.field_number, wt, raw))
    return found


def has_unknown_fields(message: Message) -> bool:
    """True when ``message`` or any message inside it holds a field its schema lacks.

    Cheap (runs in the protobuf runtime): a copy without unknown fields is smaller exactly
    when there were some. The recursive walk of :func:`collect_unknown_fields` then only
    runs for messages that need it.
    """
    stripped = type(message)()
    stripped.CopyFrom(message)
    stripped.DiscardUnknownFields()
    return stripped.ByteSize() != message.ByteSize()


def collect_unknown_fields(message: Message, path: str,
                           out: dict[str, list[tuple[int, int, bytes]]]) -> dict:
    """Add to ``out`` every field of ``message`` (recursively) that its schema lacks,
    keyed by a readable path such as ``manifest.fragments[3].files[0]``."""
    own = _unknown_of(message)
    if own:
        out[path] = own
    for fd, value in message.ListFields():
        if fd.message_type is None:
            continue
        if fd.message_type.GetOptions().map_entry:
            value_fd = fd.message_type.fields_by_name["value"]
            if value_fd.message_type is not None:
                for k in value:
                    collect_unknown_fields(value[k], f"{path}.{fd.name}[{k!r}]", out)
        elif fd.is_repeated:
            for i, item in enumerate(value):
                collect_unknown_fields(item, f"{path}.{fd.name}[{i}]", out)
        else:
            collect_unknown_fields(value, f"{path}.{fd.name}", out)
    return out


# -- writing -----------------------------------------------------------------------

def encode_manifest_file(manifest: table_pb2.Manifest, *, transaction=None, index_section=None,
                         transaction_field: int = TRANSACTION_FIELD_PYLANCE) -> bytes:
    """The bytes of a manifest file, framed as pylance 14 frames them.

    ``transaction`` is a Transaction message or its serialized bytes (pass the ``.txn``
    bytes to keep both copies identical); ``index_section`` an IndexSection or None.
    The offset fields (6 and ``transaction_field``) are set here; ``manifest`` is not changed.
    """
    if transaction_field not in _TXN_ATTR:
        raise ValueError("transaction_field must be 21 or 23")
    out = bytearray()
    m = table_pb2.Manifest()
    m.CopyFrom(manifest)
    m.ClearField("index_section")
    m.ClearField("transaction_section")
    m.ClearField("transaction_section_spec")
    if index_section is not None:
        payload = index_section if isinstance(index_section, (bytes, bytearray)) \
            else index_section.SerializeToString()
        m.index_section = len(out)
        out += struct.pack("<I", len(payload)) + payload
    if transaction is not None:
        payload = transaction if isinstance(transaction, (bytes, bytearray)) \
            else transaction.SerializeToString()
        setattr(m, _TXN_ATTR[transaction_field], len(out))
        out += struct.pack("<I", len(payload)) + payload
    position = len(out)
    body = m.SerializeToString()
    out += struct.pack("<I", len(body)) + body
    out += struct.pack("<QHH", position, TAIL_MAJOR, TAIL_MINOR) + MAGIC
    return bytes(out)


def reencode(mf: ManifestFile) -> bytes:
    """Encode a decoded manifest file again from its parts (same framing choices)."""
    return encode_manifest_file(
        mf.manifest,
        transaction=mf.transaction_bytes,
        index_section=mf.index_section,
        transaction_field=mf.transaction_field or TRANSACTION_FIELD_PYLANCE,
    )


__all__ = [
    "DEFAULT_MAX_MANIFEST_SIZE", "MAGIC", "ManifestFile", "collect_unknown_fields",
    "decode_manifest_file", "encode_manifest_file", "has_unknown_fields", "read_manifest_file", "reencode",
]
