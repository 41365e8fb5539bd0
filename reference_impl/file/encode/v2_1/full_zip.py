"""Full-zip layout (FILE-ENCODINGS §3.3) for values of 256 bytes and more.

Buffer 0 is every level slot in order, each an optional control word followed by the
slot's value bytes:

* control word: absent when the page has neither rep nor def; else
  ``(rep << bits_def) | def`` in 1, 2 or 4 LE bytes (``bits_rep + bits_def`` <= 8, <= 16,
  else 4), ``bits_rep``/``bits_def`` being the bit lengths of the largest levels;
* fixed width (``bits_per_value``): every visible slot carries its bytes, null items too;
* variable width (``bits_per_offset`` 32, or 64 for large_utf8/large_binary): a slot
  with def 0 carries a u32 (u64) length then the (possibly compressed) bytes; any
  other slot carries nothing.

Buffer 1, the repetition index, is present for variable-width pages and for pages with
repetition: ``rows + 1`` u32 (u64 when the data reaches 4 GiB) byte offsets of each
row's first slot in buffer 0, the last one being buffer 0's length.

``num_items`` = level slots when rep exists, else values; ``num_visible_items`` =
visible slots.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from ....proto import encodings_v2_1_pb2 as pb
from ... import selection
from ..arrow_data import (
    fixed_bits,
    fixed_values,
    is_large_variable,
    is_variable_width,
    variable_parts,
)
from .fixed_size_list import FixedSizeListValues
from .fsst import compress_page, fsst_encoding
from .general import ZSTD, compress, general_encoding
from .repdef import Shredded, row_starts
from .variable import variable_encoding


def _ragged_copy(dst: np.ndarray, dst_starts, src: np.ndarray, src_starts, lengths) -> None:
    """``dst[dst_starts[i] : +lengths[i]] = src[src_starts[i] : +lengths[i]]`` for every i, vectorised."""
    lengths = np.asarray(lengths, np.int64)
    total = int(lengths.sum())
    if total == 0:
        return
    segment = np.repeat(np.arange(len(lengths)), lengths)
    within = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    dst[np.asarray(dst_starts, np.int64)[segment] + within] = src[
        np.asarray(src_starts, np.int64)[segment] + within
    ]


def _bits_for(maximum: int) -> int:
    return int(maximum).bit_length()


def encode_full_zip(sh: Shredded, compression: str | None = None) -> tuple[list[bytes], pb.PageLayout]:
    """``compression`` is the field's ``lance-encoding:compression`` hint
    (:mod:`..hints`): ``lz4``/``zstd`` -> variable-width values are framed per value with
    ZSTD (level 0 recorded), as pylance 14.0.2 writes either; ``none`` -> never
    compressed; None -> only pages with a value over GENERAL_MIN_VALUE_BYTES are."""
    values = sh.values
    t = values.type
    n_levels = sh.num_levels
    max_rep = int(sh.rep.max()) if sh.rep is not None and len(sh.rep) else 0
    max_def = int(sh.deff.max()) if sh.deff is not None and len(sh.deff) else 0
    bits_rep, bits_def = _bits_for(max_rep), _bits_for(max_def)
    cw_bits = bits_rep + bits_def
    cw_bytes = 0 if cw_bits == 0 else 1 if cw_bits <= 8 else 2 if cw_bits <= 16 else 4

    # payload per level slot (nothing for slots without a value), as one byte stream
    variable = is_variable_width(t)
    vis_slots = np.flatnonzero(sh.visible)
    layout = pb.PageLayout()
    fz = layout.full_zip_layout
    payload_len = np.zeros(n_levels, np.int64)
    if variable:
        offset_bits = 64 if is_large_variable(t) else 32
        prefix = offset_bits // 8
        offsets, data = variable_parts(values)
        lengths = np.diff(offsets)
        deff = sh.deff[vis_slots] if sh.deff is not None else np.zeros(len(vis_slots), np.uint16)
        has_value = deff == 0
        compressed = bool(len(lengths)) and int(lengths.max()) > selection.GENERAL_MIN_VALUE_BYTES
        if compression is not None:
            compressed = compression != "none"
        fsst_table = None
        if not compressed and compression is None and selection.use_fsst(values):
            fsst_page = compress_page(offsets, data)  # None when FSST would not shrink it
            if fsst_page is not None:
                fsst_table, offsets, data = fsst_page
                lengths = np.diff(offsets)
        if compressed:
            # per-value ZSTD frames (only pages holding values over 32 KiB get here)
            pieces = [
                compress(data[offsets[i] : offsets[i + 1]].tobytes(), ZSTD)
                for i in np.flatnonzero(has_value)
            ]
            offsets = np.concatenate([[0], np.cumsum([len(x) for x in pieces], dtype=np.int64)])
            data = np.frombuffer(b"".join(pieces), np.uint8)
            lengths = np.zeros(len(has_value), np.int64)
            lengths[has_value] = np.diff(offsets)
            starts = np.zeros(len(has_value), np.int64)
            starts[has_value] = offsets[:-1]
        else:
            starts = offsets[:-1]
        value_len = np.where(has_value, prefix + lengths, 0)
        payload_len[vis_slots] = value_len
        payload = np.empty(int(value_len.sum()), np.uint8)
        pstart = np.cumsum(value_len) - value_len
        with_value = np.flatnonzero(has_value)
        prefixes = lengths[with_value].astype(f"<u{prefix}").view(np.uint8).reshape(-1, prefix)
        payload[(pstart[with_value][:, None] + np.arange(prefix)).reshape(-1)] = prefixes.reshape(
            -1
        )
        _ragged_copy(
            payload, pstart[with_value] + prefix, data, starts[with_value], lengths[with_value]
        )
        fz.bits_per_offset = offset_bits
        inner = variable_encoding(offset_bits)
        level = 0 if compression is not None else None
        fz.value_compression.CopyFrom(general_encoding(ZSTD, inner, level) if compressed else inner)
        if fsst_table is not None:
            fz.value_compression.CopyFrom(fsst_encoding(fsst_table, offset_bits))
    else:
        if pa.types.is_fixed_size_list(t):
            fsl = FixedSizeListValues(values)
            rows = fsl.per_value_bytes()
            fz.bits_per_value = fsl.per_value_bits()
            fz.value_compression.CopyFrom(fsl.encoding())
        else:
            bits = fixed_bits(t)
            rows = fixed_values(values).reshape(len(values), bits // 8)
            fz.bits_per_value = bits
            fz.value_compression.flat.bits_per_value = bits
        payload_len[vis_slots] = rows.shape[1]
        payload = np.ascontiguousarray(rows).reshape(-1)

    # slots: [control word][payload]
    slot_size = cw_bytes + payload_len
    slot_offsets = np.concatenate([[0], np.cumsum(slot_size)])
    if cw_bytes == 0:
        zipped_arr = payload  # slots are just the payloads, back to back
    else:
        zipped_arr = np.empty(int(slot_offsets[-1]), np.uint8)
        rep = sh.rep.astype(np.uint32) if sh.rep is not None else np.zeros(n_levels, np.uint32)
        deff = sh.deff.astype(np.uint32) if sh.deff is not None else np.zeros(n_levels, np.uint32)
        words = ((rep << np.uint32(bits_def)) | deff).astype(f"<u{cw_bytes}").view(np.uint8)
        cw_pos = slot_offsets[:-1][:, None] + np.arange(cw_bytes)
        zipped_arr[cw_pos.reshape(-1)] = words
        has_payload = np.flatnonzero(payload_len)
        lens = payload_len[has_payload]
        _ragged_copy(
            zipped_arr, slot_offsets[has_payload] + cw_bytes, payload, np.cumsum(lens) - lens, lens
        )
    zipped = zipped_arr.tobytes()
    buffers = [zipped]
    if variable or sh.rep is not None:
        starts = row_starts(sh)
        index = np.append(slot_offsets[starts], len(zipped))
        dtype = "<u4" if len(zipped) < 2**32 else "<u8"
        buffers.append(index.astype(dtype).tobytes())
    fz.bits_rep = bits_rep
    fz.bits_def = bits_def
    fz.num_items = n_levels if sh.rep is not None else len(values)
    fz.num_visible_items = len(vis_slots)
    fz.layers.extend(sh.layers)
    return buffers, layout
