"""2.1 / 2.2 columns of one top-level field: one column per leaf, pages per leaf.

Field ids are handed out to every field in pre-order (parents too), but only leaves
(primitives, strings, fixed-size lists, and packed structs as a whole, see
:mod:`.packed_struct`) get columns; each leaf's ``lance-encoding:*`` field metadata
(:mod:`..hints`) steers its pages. For each flushed run of rows
every leaf is shredded into rep/def levels and visible values (:mod:`.repdef`), a leaf
under a list cut into pages of at most :data:`MAX_LEVELS_PER_PAGE` level slots at row
boundaries, and
each page is encoded with the layout :mod:`reference_impl.file.selection` picks. Page
``length`` is the number of top-level rows and ``priority`` the first row.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pyarrow as pa

from ....errors import UnsupportedFeature
from ....proto import encodings_v2_1_pb2 as pb
from ... import selection
from ...parallel import map_ordered
from ..arrow_data import fixed_bits, is_variable_width, variable_parts
from ..blob import BlobPage, is_blob_field
from ..hints import NO_HINTS, EncodingHints, parse_hints
from ..page import EncodedPage, pack_any
from ..v2_3 import planar
from .bitpacking import InlineBitpackedValues
from .byte_stream_split import ByteStreamSplitValues
from .constant import constant_value, encode_all_null, encode_constant
from .dictionary import arrow_dictionary, build_dictionary, null_items_to_rows
from .fixed_size_list import FixedSizeListValues
from .flat import FlatValues
from .fsst import FsstValues
from .full_zip import encode_full_zip
from .general import LZ4, ZSTD, GeneralValues, compress
from .mini_block import encode_mini_block_fast
from .packed_struct import check_packable, encode_packed_struct_page, leaf_fields
from .repdef import (
    Shredded,
    is_empty_struct,
    is_struct_fsl,
    items_per_row,
    row_starts,
    shred,
    slice_levels,
)
from .rle import RleValues, run_count
from .variable import VariableValues

# Pages carrying repetition levels (a list on the path) are cut at row boundaries to at most
# this many level slots. pylance 14.0.2's write_dataset cuts list pages at about 65,535 levels
# and leaves pages with definition levels only whole (FILE-ENCODINGS §1.2 [E]); that is one
# writer's habit, not a limit of the format: a page's item count is a u64 (mini-block) or u32
# (full-zip) field of its layout, and every chunk inside it keeps its own u16 level count
# (mini_block.plan_chunks plans the chunks separately, so a large page still has small
# chunks). Pages of up to 2^20 levels are read
# identically, scan and take, by every release from 0.38 (2.1) and 2.0.1 (2.2) to 14.0.2
# (checked 2026-11-26 on list, list<string>, list<struct>, list<list> and struct<list>
# columns of 300,000 rows; test_old_readers keeps checking a 150,000-row list column).
# Cutting at 65,536 cost a 1M-row list<int32> write about 58 pages per file and a quarter of
# its time in per-page steps; at 2^20 it is 4 or 5 pages.
MAX_LEVELS_PER_PAGE = 1 << 20

# With lance-encoding:structural-encoding=miniblock, values up to this size stay in
# mini-block chunks (two of them fit a chunk's byte budget); wider ones still go full-zip.
MINIBLOCK_HINT_MAX_VALUE_BYTES = 8 * 1024


def _assign_ids(f: pa.Field, ids: Iterator[int], leaves: list[int]) -> None:
    fid = next(ids)
    t = f.type
    if pa.types.is_struct(t) and parse_hints(f).packed:
        leaves.append(fid)  # one column for the whole packed struct (FILE-ENCODINGS §1.1)
        for i in range(t.num_fields):
            _assign_ids(t.field(i), ids, [])
    elif pa.types.is_struct(t) and t.num_fields:
        for i in range(t.num_fields):
            _assign_ids(t.field(i), ids, leaves)
    elif pa.types.is_list(t) or pa.types.is_large_list(t) or is_struct_fsl(t):
        _assign_ids(t.value_field, ids, leaves)
    elif is_empty_struct(t):
        leaves.append(fid)  # a column of levels only (repdef.is_empty_struct)
    else:
        if pa.types.is_fixed_size_list(t) and not (
            _fixed_width(t.value_type) or pa.types.is_null(t.value_type)
        ):
            raise UnsupportedFeature(
                f"2.1+ writer supports fixed_size_list of fixed-width primitives only, "
                f"not {t}"
            )
        leaves.append(fid)


def _fixed_width(t: pa.DataType) -> bool:
    try:
        fixed_bits(t)
    except UnsupportedFeature:
        return False
    return True


def value_encoder(values: pa.Array, hints: EncodingHints = NO_HINTS):
    """The mini-block value encoder for a page's visible values (selection rule 3/4)."""
    t = values.type
    if hints.compression is not None:
        hinted = hinted_value_encoder(values, hints)
        if hinted is not None:
            return hinted
    if is_variable_width(t):
        if selection.use_fsst(values):
            fsst_values = FsstValues.try_encode(values)
            if fsst_values is not None:
                return fsst_values
        return VariableValues(values)
    if pa.types.is_fixed_size_list(t):
        return FixedSizeListValues(values)
    if RleValues.applicable(values) and run_count(values) < selection.RLE_MAX_RUN_RATIO * len(
        values
    ):
        return RleValues(values)
    if InlineBitpackedValues.applicable(values):
        packed = InlineBitpackedValues(values)
        if packed.saves_space():
            return packed
    return FlatValues(values)


def hinted_value_encoder(values: pa.Array, hints: EncodingHints):
    """Mini-block values under ``lance-encoding:compression`` (see :mod:`..hints`), or None
    to fall back to the usual choice: ``none`` -> flat / variable / fixed-size list as is;
    lz4/zstd -> 32/64-bit values ``general{byte_stream_split}`` (``bss`` not off) or
    ``general{usual choice}``; strings ``general{variable}`` when the scheme shrinks the
    page's bytes (else plain ``variable``); other types the usual choice."""
    t = values.type
    if hints.compression == "none":
        if is_variable_width(t):
            return VariableValues(values)
        if pa.types.is_fixed_size_list(t):
            return FixedSizeListValues(values)
        return FlatValues(values)
    scheme = LZ4 if hints.compression == "lz4" else ZSTD
    if is_variable_width(t):
        plain = VariableValues(values)
        raw = plain.data.tobytes()
        if raw and len(compress(raw, scheme, hints.compression_level)) < len(raw):
            return GeneralValues(plain, scheme, hints.compression_level)
        return plain
    if not ByteStreamSplitValues.applicable(values):
        return None
    inner = ByteStreamSplitValues(values) if hints.use_bss else value_encoder(values)
    return GeneralValues(inner, scheme, hints.compression_level)


def max_value_bytes(values: pa.Array) -> int:
    if is_variable_width(values.type):
        offsets, _ = variable_parts(values)
        return int(np.diff(offsets).max()) if len(values) else 0
    return (fixed_bits(values.type) + 7) // 8


def encode_leaf_page(
    sh: Shredded, version: str, hints: EncodingHints = NO_HINTS, name: str = ""
) -> tuple[list[bytes], object]:
    values = sh.values
    if len(values) == values.null_count or is_empty_struct(values.type):
        if version == "2.3":  # (dense constant pages must be all-valid at 2.3: the sparse form)
            return planar.all_null_items(sh.layers, sh.rep, sh.deff, sh.num_rows)
        return encode_all_null(sh)
    if pa.types.is_struct(values.type):
        return encode_packed_struct_page(sh, version, name)
    if pa.types.is_fixed_size_list(values.type) and pa.types.is_null(values.type.value_type):
        return encode_full_zip(sh)  # items without bytes: full-zip, as pylance 14.0.2
    if pa.types.is_dictionary(values.type):  # an Arrow dictionary field: always a dictionary
        indices, block, enc, n_items = arrow_dictionary(
            values, version, hints.dict_values_compression
        )
        return encode_mini_block_fast(sh, value_encoder(indices, hints), version, (block, enc, n_items))
    all_valid = all(k == pb.REPDEF_ALL_VALID_ITEM for k in sh.layers)
    if version == "2.2" or version == "2.3" and all_valid:  # (2.3: see encode/v2_3/planar.py)
        value = constant_value(values) if selection.maybe_constant(values) else None
        if version == "2.3" and value is not None and (
                is_variable_width(values.type) or not 1 <= len(value) <= planar.MAX_SCALAR_BYTES):
            value = None  # a 2.3 constant is a scalar of 1 to 32 bytes
        if value is not None:
            return encode_constant(sh, value)
    # lance-encoding:structural-encoding (encode/hints.py): "miniblock" keeps values of up
    # to MINIBLOCK_HINT_MAX_VALUE_BYTES in mini-block; "fullzip" applies after the
    # dictionary test, as pylance 14.0.2 still dictionary-encodes such pages
    widest = max_value_bytes(values)
    full_zip = widest >= selection.FULL_ZIP_MIN_VALUE_BYTES and not (
        hints.structural_encoding == "miniblock" and widest <= MINIBLOCK_HINT_MAX_VALUE_BYTES
    )
    if full_zip:
        return encode_full_zip(sh, hints.compression)
    raw = (
        variable_parts(values)[1].nbytes
        if is_variable_width(values.type)
        else len(values) * max_value_bytes(values)
    )
    if selection.use_dictionary_v2_1(values, version, raw, **hints.dictionary_thresholds()):
        indices, block, enc, n_items = build_dictionary(
            values, version, hints.dict_values_compression
        )
        return encode_mini_block_fast(sh, value_encoder(indices, hints), version, (block, enc, n_items))
    if hints.structural_encoding == "fullzip":
        return encode_full_zip(sh, hints.compression)
    return encode_mini_block_fast(sh, value_encoder(values, hints), version)


class FieldEncoder21:
    """Encodes pages for the leaf columns of one top-level field (2.1 / 2.2)."""

    def __init__(self, f: pa.Field, ids: Iterator[int], version: str) -> None:
        self.version = version
        self.column_field_ids: list[int] = []
        _assign_ids(f, ids, self.column_field_ids)
        self.leaves = leaf_fields(f)  # like leaf_paths(f.type), a packed struct being one leaf
        self.paths = [path for path, _ in self.leaves]
        self.hints = [parse_hints(leaf) for _, leaf in self.leaves]
        # lance-encoding:blob (top-level large_binary only): blob v1 pages (encode/blob.py)
        self.is_blob = [is_blob_field(leaf) and len(path) == 1 for path, leaf in self.leaves]
        for (_, leaf), hint in zip(self.leaves, self.hints, strict=True):
            if hint.packed:
                check_packable(leaf, version)
        self.first_column = 0

    # encode() depends only on its arguments: the writer may call it on several runs of rows
    # at once (writer._encode_pending)
    stateless = True

    def encode(self, arr: pa.Array, first_row: int) -> list[tuple[int, EncodedPage]]:
        """The pages of every leaf column for the rows ``arr``. Pages are independent, so
        they are encoded on the threads of :mod:`reference_impl.file.parallel` and kept in
        leaf, then row order (the bytes do not depend on the threads)."""
        arr = null_items_to_rows(arr)  # Arrow dictionaries: null items become null rows
        todo: list[tuple[int, object, int]] = []  # (column, Shredded page | None for blob, row0)
        for col, path in enumerate(self.paths):
            if self.is_blob[col]:
                todo.append((col, None, 0))
                continue
            sh = shred(arr, path)
            for page_sh, row0 in self._pages(sh):
                todo.append((col, page_sh, row0))

        def one(item):
            col, page_sh, row0 = item
            if page_sh is None:
                if self.version == "2.3":
                    raise UnsupportedFeature("2.3: blob columns are not written (blob v1 pages are "
                                             "not part of the 2.3 grammar)")
                return col, BlobPage(arr, self.version, first_row)
            buffers, layout = encode_leaf_page(
                page_sh, self.version, self.hints[col], self.leaves[col][1].name
            )
            if self.version == "2.3" and not isinstance(layout, planar.pb23.PlanarLayout):
                layout = planar.planar_layout(layout)  # the 2.2 page, its layout regrouped
            # under fixed-size lists of structs pages count items (repdef.items_per_row)
            per = items_per_row(self.paths[col])
            return col, EncodedPage(
                buffers, page_sh.num_rows, pack_any(layout), first_row * per + row0, layout
            )

        return map_ordered(one, todo)

    def _pages(self, sh: Shredded):
        """Cut a shredded run of rows with repetition levels into pages of at most
        MAX_LEVELS_PER_PAGE level slots (at least one row each), at row boundaries; a run
        without repetition levels is one page."""
        if sh.rep is None or sh.num_levels <= MAX_LEVELS_PER_PAGE:
            yield sh, 0
            return
        starts = row_starts(sh)
        ends = np.append(starts[1:], sh.num_levels)  # level after each row's last slot
        nrows = len(starts)
        row = 0
        visible_before = 0  # visible slots before level lo
        while row < nrows:
            lo = int(starts[row])
            end_row = int(np.searchsorted(ends, lo + MAX_LEVELS_PER_PAGE, side="right"))
            end_row = min(max(end_row, row + 1), nrows)
            hi = int(ends[end_row - 1])
            yield slice_levels(sh, lo, hi, row, end_row, visible_before), row
            visible_before += int(np.count_nonzero(sh.visible[lo:hi]))
            row = end_row

    def finish(self, num_rows: int) -> list[tuple[int, EncodedPage]]:
        return []
