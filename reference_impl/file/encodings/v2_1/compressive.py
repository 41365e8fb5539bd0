"""Dispatch over the ``CompressiveEncoding`` tree in its three contexts (FILE-ENCODINGS §4).

* :func:`decode_mini_block` -- per mini-block chunk: value buffers of every chunk plus the
  chunk's visible value count -> one value stream for the page;
* :func:`decode_block` -- a whole buffer (levels, dictionary, constant-page levels), from
  :mod:`.block`, which the 2.3 sequences (:mod:`..v2_3.sequence`) decode through too;
* :func:`decode_per_value` -- the values of a full-zip page: :class:`Fixed` cut out of the
  zipped stream for fixed width, :class:`Spans` (where each value lies in it) for variable
  width, turned into a :class:`Var` by whatever decodes them (FSST piece by piece).

:func:`mini_block_buffers` tells how many value buffers each chunk carries for a node.
"""

from __future__ import annotations

import numpy as np

from reference_impl.errors import FormatError

from ..v2_3 import sequence
from . import (
    bitpacking,
    byte_stream_split,
    fixed_size_list,
    flat,
    fsst,
    general,
    packed_struct,
    rle,
    variable,
)
from .block import decode_block, kind, needs_bytes
from .chunks import ChunkSet, gather_ranges
from .values import Fixed, Spans, Var

RULE = "ENC-001"
MB_CAP = 1 << 26
#: below this many chunks levels are decoded chunk by chunk (grouping does not pay)
GROUPED_MIN_CHUNKS = 8


def mini_block_buffers(node) -> int:
    """Value buffers per mini-block chunk of an encoding. ``general`` compresses only buffer 0
    and leaves the others raw (FILE-ENCODINGS §4.9), so it has as many as what it wraps."""
    k = kind(node)
    if k == "rle":
        return 2
    if k == "general":
        return mini_block_buffers(node.general.values)
    if k == "variable" and variable.generic_offsets(node.variable):
        return 1 + needs_bytes(node.variable.offsets)  # 2.3: (offsets bytes,) value bytes
    if k == "fixed_size_list":
        return fixed_size_list.num_buffers(node)
    return 1


def decode_mini_block(node, chunks: ChunkSet, counts: np.ndarray):
    """Decode every chunk's value buffers (``chunks``) holding ``counts[c]`` values each."""
    k = kind(node)
    counts = np.asarray(counts, np.int64)
    if k == "flat":
        return flat.decode_chunk_set(chunks, counts, int(node.flat.bits_per_value))
    if k == "inline_bitpacking":
        T = int(node.inline_bitpacking.uncompressed_bits_per_value)
        arr = bitpacking.decode_inline_set(chunks, counts, T)
        return Fixed(arr.view(np.uint8), T)
    if k == "variable" and not variable.generic_offsets(node.variable):
        return variable.decode_chunk_set(chunks, counts, variable.offset_bits(node.variable))
    if k == "fsst":
        inner = decode_mini_block(node.fsst.values, chunks, counts)
        if not isinstance(inner, Var):
            raise FormatError("FSST values must be variable", rule=fsst.RULE)
        return fsst.decode(node.fsst.symbol_table, inner)
    lists = [list(x) for x in zip(*[chunks.buffers(b) for b in range(chunks.n_buffers)], strict=False)]
    cl = counts.tolist()
    if k == "variable":  # 2.3 generic offsets: per chunk (offsets bytes if any, value bytes)
        return variable.decode_chunks_generic(node.variable, lists, cl, sequence.decode_tree)
    if k == "rle":
        pairs = [(c[0], c[1]) for c in lists]
        if kind(node.rle.run_lengths) != "flat":  # 2.3: bit-packed run lengths
            return rle.decode_chunks_tree(node.rle, pairs, cl, decode_block)
        return rle.decode_chunks(pairs, cl, rle.widths(node.rle))
    if k == "byte_stream_split":
        v = node.byte_stream_split.values
        if kind(v) != "flat":
            raise FormatError("byte-stream-split values must be flat", rule=byte_stream_split.RULE)
        return byte_stream_split.decode_chunks([c[0] for c in lists], cl, int(v.flat.bits_per_value))
    if k == "general":
        scheme = int(node.general.compression.scheme)
        new = [general.decompress(scheme, c[0], cap=MB_CAP) for c in lists]
        return decode_mini_block(node.general.values, chunks.with_buffer(0, new), counts)
    if k == "fixed_size_list":
        return fixed_size_list.decode_chunks(node, lists, cl)
    if k == "packed_struct":
        _, bits = packed_struct.row_bits(node.packed_struct)
        return flat.decode_chunk_set(chunks, counts, bits)
    raise FormatError(f"{k} is not a mini-block encoding", rule=RULE)


def only_in_2_3(msg) -> tuple[str, str] | None:
    """``(what, rule id)`` of the first 2.3-only construct in the tree under ``msg`` (any
    message), or ``None``.

    Only 2.3 pages hold them (14.0.2 refuses generic variable offsets in 2.1/2.2; the others
    were never seen outside 2.3): non-flat variable offsets (ENC-003), u16/u32 or bit-packed
    RLE run lengths (ENC-012), ``Range``/``Delta`` and dictionaries of fixed-size lists
    (ENC-001) -- the ids the 2.1/2.2 decoders gave these before 2.3 was read."""
    name = msg.DESCRIPTOR.name
    if name in ("Range", "Delta"):
        return name, RULE
    if name == "Variable" and variable.generic_offsets(msg):
        return "non-flat variable offsets", variable.RULE
    if name == "Rle" and (msg.run_lengths.WhichOneof("compression") != "flat"
                          or msg.run_lengths.flat.bits_per_value in (16, 32)):
        return "wide or bit-packed RLE run lengths", rle.RULE
    if name == "MiniBlockLayout" and msg.HasField("dictionary") and _holds(msg.dictionary, "FixedSizeList"):
        return "a dictionary of fixed-size lists", RULE
    for fd, val in msg.ListFields():
        if fd.message_type is None:
            continue
        for v in ([val] if hasattr(val, "DESCRIPTOR") else val):
            found = only_in_2_3(v)
            if found:
                return found
    return None


def _holds(msg, name: str) -> bool:
    if msg.DESCRIPTOR.name == name:
        return True
    return any(_holds(v, name) for fd, val in msg.ListFields() if fd.message_type is not None
               for v in ([val] if hasattr(val, "DESCRIPTOR") else val))


def check_version(layout, version: str, *, path=None) -> None:
    """Refuse 2.3-only compression in a 2.1/2.2 page layout (see :func:`only_in_2_3`)."""
    if version in ("2.1", "2.2"):
        found = only_in_2_3(layout)
        if found:
            raise FormatError(f"{found[0]} requires Lance file version 2.3, the file is {version}",
                              rule=found[1], path=path)


def decode_per_value(node, raw):
    """Decode full-zip values (``raw``: :class:`Fixed`, or :class:`Spans` / :class:`Var` of
    the stored per-value bytes)."""
    from . import variable_packed_struct

    k = kind(node)
    if isinstance(raw, Spans) and k not in ("variable", "fsst"):
        raw = raw.to_var()
    if k == "flat":
        bits = int(node.flat.bits_per_value)
        if not isinstance(raw, Fixed) or raw.bits != bits:
            raise FormatError("full-zip flat value width disagrees with bits_per_value", rule=RULE)
        return raw
    if k == "fixed_size_list":
        return fixed_size_list.decode_pv(node, raw)
    if k == "variable":
        return raw.to_var() if isinstance(raw, Spans) else raw
    if k == "fsst":
        # FSST over plain variable values reads them where they lie (Spans), piece by piece
        inner = raw if kind(node.fsst.values) == "variable" else decode_per_value(node.fsst.values, raw)
        if not isinstance(inner, (Var, Spans)):
            raise FormatError("FSST values must be variable", rule=fsst.RULE)
        return fsst.decode(node.fsst.symbol_table, inner)
    if k == "general":
        scheme = int(node.general.compression.scheme)
        lens, parts = [], []
        for i in range(raw.n):
            out = general.decompress(scheme, raw.data[raw.offsets[i]:raw.offsets[i + 1]])
            parts.append(out)
            lens.append(len(out))
        off = np.zeros(raw.n + 1, np.int64)
        np.cumsum(np.array(lens, np.int64), out=off[1:])
        data = np.frombuffer(b"".join(parts), np.uint8)
        return decode_per_value(node.general.values, Var(off, data))
    if k == "variable_packed_struct":
        return variable_packed_struct.decode_pv(node.variable_packed_struct, raw)
    raise FormatError(f"{k} is not a per-value encoding", rule=RULE)


def levels_chunk_set(node, data: np.ndarray, starts: np.ndarray, sizes: np.ndarray,
                     counts: np.ndarray) -> np.ndarray:
    """Block-decode the levels of every mini-block chunk (chunk ``c``: ``counts[c]`` levels in
    ``data[starts[c]:starts[c]+sizes[c]]``) and concatenate them, as :func:`levels` chunk by
    chunk would. Flat 16-bit and out-of-line bit-packed levels, the encodings 14.0.2 writes,
    are decoded for all chunks of one (count, size) group at once; others chunk by chunk."""
    starts, sizes, counts = (np.asarray(x, np.int64) for x in (starts, sizes, counts))
    k = kind(node)
    grouped = False
    if k == "flat" and int(node.flat.bits_per_value) == 16:
        grouped = True
    elif k == "out_of_line_bitpacking":
        o = node.out_of_line_bitpacking
        grouped = int(o.uncompressed_bits_per_value) == 16 and kind(o.values) == "flat"
    if grouped and k == "out_of_line_bitpacking" and len(counts) >= GROUPED_MIN_CHUNKS:
        # every chunk at once, whatever its count (None: a chunk the per-chunk path refuses)
        o = node.out_of_line_bitpacking
        got = bitpacking.decode_out_of_line_chunks(data, starts, sizes, counts, 16,
                                                   int(o.values.flat.bits_per_value))
        if got is not None:
            return got
        grouped = False
    if not grouped or len(counts) < GROUPED_MIN_CHUNKS:
        parts = [levels(node, data[s:s + z], n)
                 for s, z, n in zip(starts.tolist(), sizes.tolist(), counts.tolist(), strict=True)]
        return np.concatenate(parts) if parts else np.zeros(0, np.uint16)
    first = np.zeros(len(counts) + 1, np.int64)
    np.cumsum(counts, out=first[1:])
    out = np.empty(int(first[-1]), np.uint16)
    keys = np.stack([counts, sizes], axis=1)
    groups, inverse = np.unique(keys, axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    for gi, (n, size) in enumerate(groups.tolist()):
        idx = np.flatnonzero(inverse == gi)
        if n == 0:
            continue
        raw = gather_ranges(data, starts[idx], np.full(len(idx), size)).reshape(len(idx), size)
        if k == "flat":
            if size < 2 * n:
                raise FormatError(f"{n} flat values of 16 bits need {2 * n} bytes, has {size}", rule=flat.RULE)
            vals = np.ascontiguousarray(raw[:, :2 * n]).view("<u2")
        else:
            o = node.out_of_line_bitpacking
            vals = bitpacking.decode_out_of_line_many(raw, n, 16, int(o.values.flat.bits_per_value))
        dest = (first[idx][:, None] + np.arange(n)).reshape(-1)
        out[dest] = vals.reshape(-1)
    return out


def levels(node, buf, n: int) -> np.ndarray:
    """Block-decode ``n`` rep/def levels as ``uint16``."""
    v = decode_block(node, buf, n)
    if not isinstance(v, Fixed) or v.bits != 16:
        raise FormatError("rep/def levels must decode to 16-bit values", rule="ENC-040")
    return v.data.view("<u2")[:n] if len(v.data) else np.zeros(0, np.uint16)
