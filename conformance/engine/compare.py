"""Arrow data as a reader sees it, for comparing two readings of the same Lance data.

Two readers may hand back the same values in different Arrow shapes: a dictionary column
with another dictionary (an extra null entry, another order), at any depth of nesting. And
Python's ``date``/``datetime`` cover years 1 to 9999 only, while a ``date32`` or a
``timestamp`` stores any 32/64-bit count: turning such values into Python objects raises
``OverflowError``. The *plain* view removes both: dictionaries become their values, temporal
types their integer storage (days, units since the epoch, units of a duration), through every
list, fixed-size list, struct and map. Values equal in the plain view are the same values.
"""

from __future__ import annotations

import pyarrow as pa

_INT32_STORED = (pa.types.is_date32, pa.types.is_time32)
_INT64_STORED = (pa.types.is_date64, pa.types.is_time64, pa.types.is_timestamp,
                 pa.types.is_duration)


def plain_type(t: pa.DataType) -> pa.DataType:
    """``t`` with every dictionary replaced by its value type and every temporal type by its
    integer storage, at any depth."""
    if pa.types.is_dictionary(t):
        return plain_type(t.value_type)
    if any(is_(t) for is_ in _INT32_STORED):
        return pa.int32()
    if any(is_(t) for is_ in _INT64_STORED):
        return pa.int64()
    if pa.types.is_map(t):
        return pa.map_(plain_type(t.key_type), t.item_field.with_type(plain_type(t.item_type)))
    if pa.types.is_list(t):
        return pa.list_(t.value_field.with_type(plain_type(t.value_type)))
    if pa.types.is_large_list(t):
        return pa.large_list(t.value_field.with_type(plain_type(t.value_type)))
    if pa.types.is_fixed_size_list(t):
        return pa.list_(t.value_field.with_type(plain_type(t.value_type)), t.list_size)
    if pa.types.is_struct(t):
        return pa.struct([f.with_type(plain_type(f.type)) for f in t])
    return t


def plain(arr: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """``arr`` in its plain view (itself when there is nothing to change)."""
    target = plain_type(arr.type)
    return arr if target == arr.type else arr.cast(target)


__all__ = ["plain", "plain_type"]
