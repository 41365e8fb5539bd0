"""Packed struct (spec 003: "Encodes a struct with fixed-width fields in a row-major format
making random access more efficient", >= 2.0, "Only used on struct types if the field
metadata attribute "packed" is set to "true"").

A packed struct is **one column** (FILE-ENCODINGS §1.1), not a header column plus one
column per child. Its page buffer holds the rows back to back; each row is the
concatenation of the children's little-endian values in field order, every child taking
its full byte width (an (int32, float64) struct has 12-byte rows: bytes 0..3 the int32,
4..11 the float64)::

    row i = child_0[i] (w_0 bytes) | child_1[i] (w_1 bytes) | ... ;  row size = Σ w_k

The 2.0 page is (FILE-ENCODINGS §2.2, as pylance 14.0.2 writes it)::

    packed_struct {
      inner { nullable { no_nulls { values { flat { bits_per_value: 8*w_k  buffer {} } } } } }  per child
      buffer {}                 # page buffer 0: the rows
    }

What can be packed (pylance 14.0.2's limits, observed): children must be fixed width and
whole bytes (integers, floats, decimals, dates, times, timestamps, durations, fixed-size
binary; not booleans, which pylance refuses, and not nested structs or lists) and must not
hold nulls of their own ("Packed struct encoder currently only implemented for fixed-width
data blocks"). 2.0 cannot store null structs at all ("does not encode struct validity").
2.1/2.2 store struct nulls as a def layer (:mod:`..v2_1.packed_struct`) and 2.2 also takes
variable-width children. Refusals are :class:`~reference_impl.errors.InvalidInput` naming
the field.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from ....errors import InvalidInput
from ....proto import encodings_v2_0_pb2 as pb
from ..arrow_data import fixed_values, is_variable_width


def _fixed_child_bits(t: pa.DataType) -> int | None:
    """Byte-aligned bit width of a packable fixed-width child type, else None."""
    if pa.types.is_boolean(t) or pa.types.is_interval(t):
        return None
    if pa.types.is_fixed_size_binary(t) and not pa.types.is_decimal(t):
        return t.byte_width * 8
    if (
        pa.types.is_integer(t)
        or pa.types.is_floating(t)
        or pa.types.is_decimal(t)
        or pa.types.is_temporal(t)
    ):
        bits = t.bit_width
        return bits if bits % 8 == 0 else None
    return None


def child_layout(struct_type: pa.DataType, name: str, *, allow_variable: bool) -> list[int | None]:
    """Per child: its bit width, or None for a variable-width child (only if allowed).

    Raises InvalidInput for a child that cannot be packed.
    """
    if struct_type.num_fields == 0:
        raise InvalidInput(f"packed struct {name!r} has no children")
    out: list[int | None] = []
    for i in range(struct_type.num_fields):
        child = struct_type.field(i)
        bits = _fixed_child_bits(child.type)
        if bits is None and allow_variable and is_variable_width(child.type):
            out.append(None)
            continue
        if bits is None:
            what = "fixed-width, whole-byte" + (" or string/binary" if allow_variable else "")
            raise InvalidInput(
                f"packed struct {name!r}: child {child.name!r} of type {child.type} cannot be "
                f"packed (children must be {what} types)"
            )
        out.append(bits)
    return out


def check_children_valid(arr: pa.StructArray, name: str) -> None:
    """Children of a packed struct carry no nulls of their own (pylance refuses them)."""
    for i in range(arr.type.num_fields):
        if arr.field(i).null_count:
            raise InvalidInput(
                f"packed struct {name!r}: child {arr.type.field(i).name!r} has "
                f"{arr.field(i).null_count} null value(s); a packed struct cannot store child nulls"
            )


def packed_rows(arr: pa.StructArray, widths: list[int]) -> np.ndarray:
    """The rows of ``arr`` as a ``(n, Σ w/8)`` uint8 matrix, children in field order."""
    n = len(arr)
    parts = [
        fixed_values(arr.field(i)).reshape(n, bits // 8) for i, bits in enumerate(widths)
    ]
    if not parts:
        return np.zeros((n, 0), np.uint8)
    return np.ascontiguousarray(np.concatenate(parts, axis=1))


def packed_struct_node(arr: pa.StructArray, buffers: list[bytes], name: str) -> pb.ArrayEncoding:
    """The 2.0 ``packed_struct`` tree for a page of ``arr``; appends its one buffer."""
    if arr.null_count:
        raise InvalidInput(
            f"the struct field {name!r} contains {arr.null_count} null value(s), but file "
            "version 2.0 does not encode struct validity; use file version 2.1 or later"
        )
    widths = [int(b) for b in child_layout(arr.type, name, allow_variable=False)]
    check_children_valid(arr, name)
    rows = packed_rows(arr, widths)
    node = pb.ArrayEncoding()
    ps = node.packed_struct
    for bits in widths:
        inner = ps.inner.add()
        flat = inner.nullable.no_nulls.values.flat
        flat.bits_per_value = bits
        flat.buffer.SetInParent()
    ps.buffer.SetInParent()
    ps.buffer.buffer_index = len(buffers)
    ps.buffer.buffer_type = pb.Buffer.page
    buffers.append(rows.tobytes())
    return node
