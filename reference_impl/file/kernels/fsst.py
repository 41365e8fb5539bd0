"""Compiled twins of FSST decompression (:mod:`reference_impl.file.encodings.v2_1.fsst`) and
of the writer's tokeniser (:mod:`reference_impl.file.encode.v2_1.fsst`).

Decoding walks each compressed value token by token exactly as
:func:`~reference_impl.file.encodings.v2_1.fsst.decode_value` states it (code ``c < 255``:
the first ``len[c]`` bytes of symbol ``c``; code 255: the next byte literally), in one pass
that writes the bytes and sizes the values together (:func:`_expand_values`). The output is
allocated before anything is known of the decoded size, at a bound: the longest symbol of
the table for every compressed byte (a value's bytes never exceed it). When the bound is
close to the size (the usual page: the table's symbols are about as long as one another)
the output is that array; otherwise the bytes are copied into one of the exact size. A bad
token (a code outside the table, an escape as a value's last byte) stops the pass and is
refused with the readable decoder's :class:`~reference_impl.errors.FormatError` and rule
id (``ENC-030``), the first in the page as the readable decoder finds it.

Encoding emits, value by value and segment by segment, the token
:func:`~reference_impl.file.encode.v2_1.fsst.longest_symbol_at` names, read from the same
look-up tables the vectorised walk uses (``_Matcher``), so the bytes equal the readable
encoder's.
"""

from __future__ import annotations

import numpy as np

from reference_impl.errors import FormatError

from ._jit import jit, store_u64

ESCAPE = 255
RULE = "ENC-030"  # as reference_impl.file.encodings.v2_1.fsst.RULE
#: compressed bytes of one piece run on a decode thread (a page is split when threads are idle)
PIECE_BYTES = 1 << 20
#: a one-piece output is kept in its bounded array when the bound exceeds the size by at most
#: this many bytes or an eighth of the size; otherwise it is copied to an array of its size
SLACK_BYTES = 1 << 16


@jit
def _expand_values(data, offs, v0, v1, sym8, sym64, lens, nsym, out, o_lo, o_hi, out_offs):
    """Values ``v0`` to ``v1`` decoded into ``out[o_lo:o_hi]`` (room enough: the caller's
    bound); ``out_offs[v + 1]`` gets the decoded bytes of values ``v0..v`` counted from
    ``v0``. Returns ``(0, 0, total bytes)``, or ``(1, position, 0)`` for an escape ending a
    value, ``(2, position, 0)`` for a code outside the table (the output is then partial and
    unused). A symbol is stored as its whole 8-byte word (one store; the bytes past its length
    are overwritten by the next token) while that stays below ``o_hi``, where another span's
    stretch begins, and byte by byte after."""
    o = o_lo
    limit = o_hi - 8
    for v in range(v0, v1):
        i = offs[v]
        end = offs[v + 1]
        while i < end:
            c = data[i]
            if c == ESCAPE:
                if i + 1 >= end:
                    return 1, i, 0
                out[o] = data[i + 1]
                o += 1
                i += 2
            else:
                if c >= nsym:
                    return 2, i, 0
                n = lens[c]
                if o <= limit:
                    store_u64(out, o, sym64[c])
                else:
                    for k in range(n):
                        out[o + k] = sym8[c, k]
                o += n
                i += 1
        out_offs[v + 1] = o - o_lo
    return 0, 0, o - o_lo


@jit
def _decoded_size(data, lo, hi, lens, nsym):
    """The bytes tokens ``data[lo:hi]`` decode to, or -1 at a bad token (an escape as the last
    byte, a code outside the table: the expanding pass then refuses it where it stands)."""
    size = 0
    i = lo
    while i < hi:
        c = data[i]
        if c == ESCAPE:
            if i + 1 >= hi:
                return -1
            size += 1
            i += 2
        else:
            if c >= nsym:
                return -1
            size += lens[c]
            i += 1
    return size


def _well_formed(offs: np.ndarray, size: int) -> bool:
    return (len(offs) >= 1 and int(offs[0]) == 0 and int(offs[-1]) == size
            and (len(offs) < 2 or bool((offs[1:] >= offs[:-1]).all())))


def decode(src, offs: np.ndarray, sym: np.ndarray, lens8: np.ndarray, nsym: int,
           saturated: bool | None = None):
    """The decoded values of ``src`` (a ``Var`` or ``Spans`` whose values are cut at
    ``offs``, starting at 0) as ``(offsets int64[n+1], bytes uint8)``: the readable page
    decoder's ``Var``. Offsets that are not a well-formed cut of the bytes are left to the
    readable decoder (``None``)."""
    from reference_impl.file import parallel

    m = int(offs[-1])
    data = np.ascontiguousarray(src.bytes(0, m), np.uint8)
    offs = np.ascontiguousarray(offs, np.int64)
    if not _well_formed(offs, len(data)):
        return None
    lens = np.ascontiguousarray(lens8[:256], np.uint8)
    n = len(offs) - 1
    if saturated is None:
        saturated = parallel.saturated()
    # pieces of whole values, about PIECE_BYTES compressed bytes each, expanded
    # on the decode threads (one piece when the threads are busy with other items)
    if saturated or m < 2 * PIECE_BYTES or n < 2:
        spans = [(0, n)]
    else:
        cuts = np.searchsorted(offs, np.arange(PIECE_BYTES, m, PIECE_BYTES), side="right") - 1
        bounds = [0, *sorted({int(c) for c in cuts} - {0, n}), n]  # every value in one span
        spans = [(a, b) for a, b in zip(bounds[:-1], bounds[1:], strict=True) if b > a]
    out_offs = np.empty(len(offs), np.int64)
    out_offs[0] = 0
    sym8 = np.ascontiguousarray(sym[:256], np.uint8)
    sym64 = sym8.view(np.uint64).reshape(256)  # (native order: stored back as the same bytes)
    # one pass: every span expanded into its own stretch of an output sized for the longest
    # symbol at every compressed byte (a bound, never exceeded: an escape and its literal are
    # two bytes for one), its values sized on the way
    longest = int(lens[:min(int(nsym), ESCAPE)].max(initial=1))
    room = [longest * int(offs[v1] - offs[v0]) for v0, v1 in spans]
    if longest > 2:
        # a loose bound (long symbols: up to 8 bytes a compressed byte) would hold memory
        # far beyond the output: size each span exactly first (one cheap pass)
        exact = [int(_decoded_size(data, int(offs[v0]), int(offs[v1]), lens, int(nsym)))
                 for v0, v1 in spans]
        if min(exact, default=0) >= 0:
            room = exact
    at = np.concatenate([[0], np.cumsum(room)]).astype(np.int64)
    wide = np.empty(int(at[-1]), np.uint8)

    def expand(j):
        v0, v1 = spans[j]
        return _expand_values(data, offs, v0, v1, sym8, sym64, lens, int(nsym), wide,
                              int(at[j]), int(at[j + 1]), out_offs)

    done = [expand(0)] if len(spans) == 1 else parallel.map_ordered(expand, range(len(spans)))
    base = 0
    for (v0, v1), (err, pos, total) in zip(spans, done, strict=True):
        if err == 1:
            raise FormatError("FSST escape code at the end of a value", rule=RULE)
        if err == 2:
            raise FormatError(f"FSST code {int(data[pos])} outside the {nsym}-symbol table", rule=RULE)
        if base:
            out_offs[v0 + 1:v1 + 1] += base
        base += total
    if int(out_offs[-1]) != base:  # (cannot happen: every value lies in one span, sizes >= 0)
        return None
    if len(spans) == 1 and len(wide) - base <= max(base >> 3, SLACK_BYTES):
        return out_offs, wide[:base]  # (the bound was tight: no copy)
    # the spans' stretches joined, into an array of the exact size (the bound is let go)
    lengths = np.array([t for _, _, t in done], np.int64)
    out = np.empty(base, np.uint8)
    o = 0
    for j, t in enumerate(lengths.tolist()):
        out[o:o + t] = wide[int(at[j]):int(at[j]) + t]
        o += t
    return out_offs, out


# --------------------------------------------------------------------------- encoding


@jit
def _tokens(data, offsets, seg, short, single, slots, symbols, masks, lengths, out, out_len):
    """Tokenise every value greedily, segment by segment, into ``out`` (escape + literal for
    a byte no symbol covers); ``out_len[v]`` gets value ``v``'s compressed length. Returns
    the bytes written. ``data`` is padded with 8 zero bytes."""
    o = 0
    nslots = slots.shape[0]
    for v in range(len(offsets) - 1):
        start = offsets[v]
        end = offsets[v + 1]
        o0 = o
        s = start
        while s < end:
            seg_end = min(s + seg, end)
            pos = s
            while pos < seg_end:
                room = seg_end - pos
                b0 = data[pos]
                if room == 1:
                    tok = single[b0]
                else:
                    pair = np.int64(b0) | (np.int64(data[pos + 1]) << 8)
                    tok = short[pair]
                    if nslots:
                        word = np.uint64(0)
                        for k in range(8):
                            word |= np.uint64(data[pos + k]) << np.uint64(8 * k)
                        for k in range(nslots):
                            code = slots[k, pair]
                            if ((word & masks[code]) == symbols[code]
                                    and lengths[code] <= room):
                                tok = np.uint16(code) | (np.uint16(lengths[code]) << np.uint16(8))
                                break
                code = tok & 0xFF
                out[o] = code
                o += 1
                if code == ESCAPE:
                    out[o] = b0
                    o += 1
                pos += tok >> 8
            s = seg_end
        out_len[v] = o - o0
    return o


def encode_block(matcher, offsets: np.ndarray, data: np.ndarray, segment: int):
    """``(compressed length per value, compressed bytes)``: what the readable encoder's
    ``_encode_block`` returns for the same matcher, offsets (from 0) and bytes."""
    offsets = np.ascontiguousarray(offsets, np.int64)
    m = len(data)
    padded = np.zeros(m + 8, np.uint8)
    padded[:m] = data
    out = np.empty(2 * m, np.uint8)
    lengths = np.zeros(len(offsets) - 1, np.int64)
    slots = matcher.slots if len(matcher.slots) else np.zeros((0, 65536), np.uint8)
    size = _tokens(padded, offsets, int(segment), matcher.short, matcher.single,
                   np.ascontiguousarray(slots), matcher.symbols, matcher.masks, matcher.lengths,
                   out, lengths)
    return lengths, out[:size].copy()
