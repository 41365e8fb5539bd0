"""Shared machinery of the 2.0 ``ArrayEncoding`` decoders.

A 2.0 page holds one ``ArrayEncoding`` tree; every leaf of the tree names a buffer by
``Buffer{buffer_index, buffer_type}`` where ``page`` (0) indexes the page's
``buffer_offsets/sizes``, ``column`` (1) the column metadata's buffers and ``file`` (2)
the global buffers. :class:`PageContext` resolves those references to bytes and carries
the file path and page offset used in error messages.

Each node module exposes ``decode(node, ctx, num_rows, data_type) -> pyarrow.Array`` and
registers itself in :data:`DECODERS` under the name of the ``array_encoding`` oneof case.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from reference_impl.errors import FormatError, UnsupportedFeature
from reference_impl.proto import encodings_v2_0_pb2 as enc_pb

#: rule ids used by the 2.0 decoders (catalogued in conformance/rules/file_v2_0.py)
RULE_BUFFER = "ENC-050"  # a buffer reference must resolve and hold the bytes it claims
RULE_NODE = "ENC-051"  # the node must fit the field's Arrow type and be known
RULE_OFFSETS = "ENC-052"  # offsets/ends must be monotone and inside the data

DECODERS: dict[str, Callable] = {}


def register(name: str):
    """Register a node decoder under the ``ArrayEncoding`` oneof case ``name``."""

    def wrap(fn):
        DECODERS[name] = fn
        return fn

    return wrap


@dataclass
class PageContext:
    """Where a page's buffers are: page, column and file (global) buffers, as bytes."""

    page_buffers: Sequence[memoryview]
    column_buffers: Sequence[memoryview] = ()
    file_buffers: Sequence[memoryview] = ()
    path: str | None = None
    offset: int | None = None
    read_range: Callable[[int, int], bytes] | None = None  # whole-file reads (blob columns)
    notes: dict = field(default_factory=dict)

    def error(self, message: str, rule: str = RULE_NODE) -> FormatError:
        return FormatError(message, rule=rule, path=self.path, offset=self.offset)

    def buffer(self, ref: enc_pb.Buffer) -> memoryview:
        kinds = {
            enc_pb.Buffer.page: ("page", self.page_buffers),
            enc_pb.Buffer.column: ("column", self.column_buffers),
            enc_pb.Buffer.file: ("file", self.file_buffers),
        }
        if ref.buffer_type not in kinds:
            raise self.error(f"unknown buffer type {ref.buffer_type}", RULE_BUFFER)
        kind, buffers = kinds[ref.buffer_type]
        if ref.buffer_index >= len(buffers):
            raise self.error(
                f"{kind} buffer {ref.buffer_index} referenced but only {len(buffers)} exist",
                RULE_BUFFER,
            )
        return memoryview(buffers[ref.buffer_index])


def decode(
    node: enc_pb.ArrayEncoding, ctx: PageContext, num_rows: int, data_type: pa.DataType
) -> pa.Array:
    """Decode one ``ArrayEncoding`` node into ``num_rows`` values of ``data_type``."""
    case = node.WhichOneof("array_encoding")
    if case is None:
        raise ctx.error("ArrayEncoding with no case set")
    fn = DECODERS.get(case)
    if fn is None:
        raise UnsupportedFeature(
            f"2.0 node {case!r} is not supported", rule=RULE_NODE, path=ctx.path, offset=ctx.offset
        )
    arr = fn(getattr(node, case), ctx, num_rows, data_type)
    if len(arr) != num_rows:
        raise ctx.error(f"node {case} decoded {len(arr)} values, page says {num_rows}")
    return arr


def fixed_width_bits(data_type: pa.DataType) -> int | None:
    """Bits per value of a fixed-width Arrow type (1 for bool), else None."""
    if pa.types.is_boolean(data_type):
        return 1
    if pa.types.is_fixed_size_binary(data_type):
        return data_type.byte_width * 8
    try:
        return data_type.bit_width
    except ValueError:
        return None


def need(buf: memoryview | bytes, nbytes: int, ctx: PageContext, what: str) -> None:
    """Raise unless ``buf`` holds at least ``nbytes`` bytes."""
    if nbytes > len(buf):
        raise ctx.error(f"{what}: needs {nbytes} bytes, buffer holds {len(buf)}", RULE_BUFFER)


def with_validity(arr: pa.Array, bitmap: pa.Buffer | None) -> pa.Array:
    """Return ``arr`` with its validity bitmap replaced by ``bitmap`` (LSB first, 1 = valid)."""
    if bitmap is None:
        return arr
    if arr.offset:
        arr = pa.concat_arrays([arr])  # materialise a zero-offset copy
    if pa.types.is_dictionary(arr.type):
        return pa.DictionaryArray.from_buffers(
            arr.type, len(arr), [bitmap] + arr.indices.buffers()[1:], arr.dictionary
        )
    children = (
        [arr.field(i) for i in range(arr.type.num_fields)] if pa.types.is_struct(arr.type) else None
    )
    if pa.types.is_fixed_size_list(arr.type):
        children = [arr.values]
    bufs = arr.buffers()
    if children is not None:
        return pa.Array.from_buffers(arr.type, len(arr), [bitmap], children=children)
    own = _own_buffer_count(arr.type)
    return pa.Array.from_buffers(arr.type, len(arr), [bitmap] + bufs[1:own])


def _own_buffer_count(data_type: pa.DataType) -> int:
    if (
        pa.types.is_binary(data_type)
        or pa.types.is_string(data_type)
        or pa.types.is_large_binary(data_type)
        or pa.types.is_large_string(data_type)
    ):
        return 3
    return 2


def bitmap_from_bools(valid: np.ndarray) -> pa.Buffer:
    """Pack a boolean numpy array into an Arrow validity bitmap."""
    return pa.py_buffer(np.packbits(valid.astype(bool), bitorder="little").tobytes())


def as_uint(arr: pa.Array, ctx: PageContext) -> np.ndarray:
    """A decoded integer array as a numpy uint64 array (nulls are an error here)."""
    if arr.null_count:
        raise ctx.error("index/offset array carries nulls", RULE_OFFSETS)
    return np.asarray(arr.to_numpy(zero_copy_only=False)).astype(np.uint64, copy=False)
