"""Getting the raw bytes out of Arrow arrays, vectorised and slice-aware.

Every encoder starts from the same few views of an Arrow array: its validity as a
boolean mask, the packed bytes of a fixed-width array (booleans as an LSB-first
bitmap, everything else as ``width`` little-endian bytes per slot), and the
``(offsets, data)`` pair of a variable-width array rebased to start at 0. Slots under
nulls keep whatever bytes Arrow holds there; Lance treats them as placeholders.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from ...errors import UnsupportedFeature


def is_variable_width(t: pa.DataType) -> bool:
    return (
        pa.types.is_string(t)
        or pa.types.is_large_string(t)
        or pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
    )


def is_large_variable(t: pa.DataType) -> bool:
    return pa.types.is_large_string(t) or pa.types.is_large_binary(t)


def fixed_bits(t: pa.DataType) -> int:
    """Bits per value of a fixed-width Arrow type (1 for booleans)."""
    if pa.types.is_boolean(t):
        return 1
    if pa.types.is_fixed_size_binary(t):
        return t.byte_width * 8
    if pa.types.is_fixed_size_list(t):
        return fixed_bits(t.value_type) * t.list_size
    try:
        return t.bit_width
    except ValueError:
        raise UnsupportedFeature(f"{t} is not a fixed-width type") from None


def valid_mask(arr: pa.Array) -> np.ndarray | None:
    """Boolean validity per slot, or None when the array has no nulls."""
    if arr.null_count == 0:
        return None
    return arr.is_valid().to_numpy(zero_copy_only=False)


def bitmap(mask: np.ndarray) -> bytes:
    """LSB-first bitmap of a boolean mask (1 = set), ``ceil(n/8)`` bytes."""
    return np.packbits(mask.astype(np.bool_, copy=False), bitorder="little").tobytes()


def fixed_values(arr: pa.Array) -> np.ndarray:
    """The slot bytes of a fixed-width array as a uint8 array (booleans bit-packed)."""
    t = arr.type
    n = len(arr)
    if pa.types.is_boolean(t):
        bits = (
            arr.fill_null(False).to_numpy(zero_copy_only=False)
            if arr.null_count
            else arr.to_numpy(zero_copy_only=False)
        )
        return np.packbits(bits, bitorder="little")
    if pa.types.is_fixed_size_list(t):
        return fixed_values(arr.flatten()) if n else np.zeros(0, np.uint8)
    width = fixed_bits(t) // 8
    buf = arr.buffers()[1]
    if buf is None or n == 0:
        return np.zeros(n * width, np.uint8)
    raw = np.frombuffer(buf, dtype=np.uint8)
    return raw[arr.offset * width : (arr.offset + n) * width]


def variable_parts(arr: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """``(offsets, data)`` of a string/binary array: n+1 int64 offsets starting at 0, uint8 data."""
    n = len(arr)
    bufs = arr.buffers()
    dtype = np.int64 if is_large_variable(arr.type) else np.int32
    if n == 0 or bufs[1] is None:
        return np.zeros(n + 1, np.int64), np.zeros(0, np.uint8)
    offsets = np.frombuffer(bufs[1], dtype=dtype)[arr.offset : arr.offset + n + 1].astype(np.int64)
    data = np.frombuffer(bufs[2], dtype=np.uint8) if bufs[2] is not None else np.zeros(0, np.uint8)
    data = data[offsets[0] : offsets[-1]]
    return offsets - offsets[0], data


def list_offsets(arr: pa.Array) -> np.ndarray:
    """n+1 int64 offsets of a (large) list array into ``arr.values`` (not rebased)."""
    return arr.offsets.to_numpy().astype(np.int64)


def check_writable(t: pa.DataType, path: str = "") -> None:
    """Raise UnsupportedFeature unless ``t`` is made of types this writer encodes:
    booleans, numbers, decimals, temporal types, (large) binary/strings, fixed-size
    binary, fixed-size lists, (large) lists, structs and dictionaries of these."""
    if pa.types.is_struct(t):
        for i in range(t.num_fields):
            check_writable(t.field(i).type, f"{path}.{t.field(i).name}")
        return
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        check_writable(t.value_type, f"{path}.item")
        return
    if pa.types.is_dictionary(t) and pa.types.is_integer(t.index_type):
        check_writable(t.value_type, path)  # written as a dictionary when the values are bytes
        return
    if (
        is_variable_width(t)
        or pa.types.is_null(t)  # an all-null column: pages without values
        or pa.types.is_boolean(t)
        or pa.types.is_integer(t)
        or pa.types.is_floating(t)
        or pa.types.is_decimal(t)
        or pa.types.is_temporal(t)
        or pa.types.is_fixed_size_binary(t)
    ):
        if pa.types.is_interval(t):
            raise UnsupportedFeature(
                f"field {path.lstrip('.')!r}: {t} is not written by this writer"
            )
        return
    raise UnsupportedFeature(f"field {path.lstrip('.')!r}: {t} is not written by this writer")


def check_version_types(t: pa.DataType, version: str, path: str = "",
                        in_list: bool = False) -> None:
    """Raise UnsupportedFeature, naming the type, for what the file ``version`` cannot hold
    and pylance 14.0.2 refuses to write there: a map before 2.2 ("Map data type is not
    enabled by the selected file format"), a fixed-size list of structs before 2.2
    ("FixedSizeList<Struct> is not enabled")."""
    name = path.lstrip(".")
    if isinstance(t, pa.BaseExtensionType):
        t = t.storage_type
    if pa.types.is_map(t):
        if version in ("2.0", "2.1"):
            raise UnsupportedFeature(f"field {name!r}: {t} (a map) needs file version 2.2 or "
                                     f"later, not {version}")
        check_version_types(t.key_type, version, f"{path}.key", True)
        check_version_types(t.item_type, version, f"{path}.value", True)
    elif pa.types.is_fixed_size_list(t):
        item = t.value_type
        inner = item.storage_type if isinstance(item, pa.BaseExtensionType) else item
        if pa.types.is_struct(inner) and version in ("2.0", "2.1"):
            raise UnsupportedFeature(f"field {name!r}: {t} (a fixed_size_list of structs) needs "
                                     f"file version 2.2 or later, not {version}")
        if pa.types.is_struct(inner) and in_list:
            raise UnsupportedFeature(f"field {name!r}: {t} (a fixed_size_list of structs) inside "
                                     f"a list is not written by this writer")
        if (pa.types.is_list(inner) or pa.types.is_large_list(inner) or pa.types.is_map(inner)
                or pa.types.is_dictionary(inner)):
            # pylance 14.0.2: "no field encoding for ... FixedSizeList(2 x Dictionary...)",
            # "Unsupported data type: FixedSizeList(... List ...)"
            raise UnsupportedFeature(f"field {name!r}: {t} (a fixed_size_list of "
                                     f"{_kind(inner)}) is not supported by Lance files")
        if isinstance(item, pa.BaseExtensionType) and item.extension_name != "lance.bfloat16":
            # pylance 14.0.2: "field `v.item` does not match the file schema: expected
            # FixedSizeBinary(16) (no extension), got FixedSizeBinary(16) (extension ...)"
            raise UnsupportedFeature(f"field {name!r}: {t} (a fixed_size_list of the extension "
                                     f"type {item.extension_name}) is not supported by Lance "
                                     f"files")
        check_version_types(t.value_type, version, f"{path}.item", in_list)
    elif pa.types.is_list(t) or pa.types.is_large_list(t):
        check_version_types(t.value_type, version, f"{path}.item", True)
    elif pa.types.is_struct(t):
        for i in range(t.num_fields):
            check_version_types(t.field(i).type, version, f"{path}.{t.field(i).name}", in_list)


def _kind(t: pa.DataType) -> str:
    if pa.types.is_map(t):
        return "maps"
    if pa.types.is_dictionary(t):
        return "dictionaries"
    return "lists"


def check_empty_structs(arr: pa.Array, path: str, in_list: bool = False) -> None:
    """Raise UnsupportedFeature where a 2.1+ file cannot hold a struct without children, as
    pylance 14.0.2 refuses it ("Empty structs with rep/def information are not yet
    supported"): inside a list or map, or with some (not all) of its rows null."""
    t = arr.type
    if isinstance(arr, pa.ExtensionArray):
        check_empty_structs(arr.storage, path, in_list)
        return
    name = path.lstrip(".")
    if pa.types.is_struct(t):
        if t.num_fields == 0:
            if in_list or 0 < arr.null_count < len(arr):
                raise UnsupportedFeature(
                    f"field {name!r}: an empty struct ({t}) "
                    + ("inside a list" if in_list else f"with {arr.null_count} null rows")
                    + " is not supported by Lance files (pylance 14.0.2: empty structs with "
                      "rep/def information are not yet supported)")
            return
        for i in range(t.num_fields):
            check_empty_structs(arr.field(i), f"{path}.{t.field(i).name}", in_list)
    elif pa.types.is_map(t):
        check_empty_structs(arr.items, f"{path}.value", True)
    elif pa.types.is_list(t) or pa.types.is_large_list(t):
        check_empty_structs(arr.values, f"{path}.item", True)
    elif pa.types.is_fixed_size_list(t):
        check_empty_structs(arr.values, f"{path}.item", in_list)


def holds_empty_struct(t: pa.DataType) -> bool:
    if isinstance(t, pa.BaseExtensionType):
        return holds_empty_struct(t.storage_type)
    if pa.types.is_struct(t) and t.num_fields == 0:
        return True
    if pa.types.is_dictionary(t):
        return False
    return any(holds_empty_struct(t.field(i).type) for i in range(t.num_fields))


def check_struct_nulls_2_0(arr: pa.Array, path: str) -> None:
    """Raise UnsupportedFeature, naming the field's own type (an extension's, not only its
    storage's), for a null struct row in a 2.0 file, which cannot store struct validity
    (pylance 14.0.2: "... does not encode struct validity; use file version 2.1 or later")."""
    t = arr.type
    storage = arr.storage if isinstance(arr, pa.ExtensionArray) else arr
    st = storage.type
    name = path.lstrip(".")
    if pa.types.is_struct(st):
        if storage.null_count:
            raise UnsupportedFeature(f"field {name!r}: {t} has {storage.null_count} null rows; "
                                     f"file version 2.0 cannot store null structs")
        for i in range(st.num_fields):
            check_struct_nulls_2_0(storage.field(i), f"{path}.{st.field(i).name}")
    elif pa.types.is_list(st) or pa.types.is_large_list(st) or pa.types.is_fixed_size_list(st):
        check_struct_nulls_2_0(storage.values, f"{path}.item")
