"""Decoded value streams shared by the 2.1/2.2 ``CompressiveEncoding`` decoders.

A decoder turns compressed buffers into one of three plain forms (FILE-ENCODINGS §4):

* :class:`Fixed` -- ``n`` values of ``bits`` bits each. Byte-aligned widths are kept as a flat
  ``uint8`` array of ``n * bits/8`` bytes (little-endian values back to back); a width of 1
  (booleans, Flat-1) is kept unpacked as a ``bool`` array of ``n`` entries.
* :class:`Var` -- ``n`` variable-length values: ``int64`` offsets (``n+1``, starting at 0) into a
  ``uint8`` data array.
* :class:`Fsl` -- ``n`` fixed-size-list rows of ``dim`` items: item validity bitmaps (one ``bool``
  array per nested FSL layer with ``has_validity``, outermost first) and the items as a
  :class:`Fixed` of ``n * dim`` entries.

Each form can be concatenated (chunks, pages) without Python loops over values.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from reference_impl.errors import FormatError

from .chunks import gather_ranges


@dataclass
class Fixed:
    data: np.ndarray  # uint8 bytes, or bool when bits == 1
    bits: int

    @property
    def n(self) -> int:
        return len(self.data) if self.bits == 1 else len(self.data) // (self.bits // 8)

    def take(self, idx: np.ndarray) -> Fixed:
        if self.bits == 1:
            return Fixed(self.data[idx], 1)
        w = self.bits // 8
        return Fixed(self.data.reshape(-1, w)[idx].reshape(-1), self.bits)


@dataclass
class Var:
    offsets: np.ndarray  # int64, n+1
    data: np.ndarray  # uint8

    @property
    def n(self) -> int:
        return len(self.offsets) - 1

    def take(self, idx: np.ndarray) -> Var:
        starts = self.offsets[:-1][idx]
        lens = self.offsets[1:][idx] - starts
        new_off = np.zeros(len(idx) + 1, np.int64)
        np.cumsum(lens, out=new_off[1:])
        return Var(new_off, gather_ranges(self.data, starts, lens))

    def bytes(self, a: int, b: int) -> np.ndarray:
        """Bytes ``a`` to ``b`` of the values, counted from the first value's start."""
        base = int(self.offsets[0])
        return self.data[base + a:base + b]

    def to_var(self) -> Var:
        return self


@dataclass
class Spans:
    """``n`` variable-length values lying apart in ``data``, as in a full-zip page's zipped
    stream (FILE-ENCODINGS §3.3): value ``i`` is ``data[starts[i]:starts[i] + len_i]`` with
    ``len_i = offsets[i+1] - offsets[i]``. ``offsets`` (``int64``, ``n+1``, from 0) are those
    of the values laid back to back, which :meth:`to_var` does. A decoder that reads the
    values in pieces (FSST) takes the bytes of each piece with :meth:`bytes`, as from a
    :class:`Var`, and the whole stream is never copied at once."""

    offsets: np.ndarray  # int64, n+1, from 0
    starts: np.ndarray  # int64, n
    data: np.ndarray  # uint8

    @property
    def n(self) -> int:
        return len(self.offsets) - 1

    def bytes(self, a: int, b: int) -> np.ndarray:
        """Bytes ``a`` to ``b`` of the values laid back to back."""
        off = self.offsets
        j0 = max(int(np.searchsorted(off, a, side="right")) - 1, 0)
        j1 = int(np.searchsorted(off, b, side="left"))
        lo = np.maximum(off[j0:j1], a)
        hi = np.minimum(off[j0 + 1:j1 + 1], b)
        return gather_ranges(self.data, self.starts[j0:j1] + (lo - off[j0:j1]), hi - lo)

    def to_var(self) -> Var:
        return Var(self.offsets, self.bytes(0, int(self.offsets[-1])))


@dataclass
class Fsl:
    dim: int
    items: Fixed
    validity: list = field(default_factory=list)  # bool arrays, one per flagged layer
    dims: list = field(default_factory=list)  # dim of each nested layer, outermost first
    vlayers: list = field(default_factory=list)  # layer index of each validity array
    const_items: bytes | None = None  # items are this constant (b"": a constant of no value,
    # the items are null); ``items`` then only carries the item count (as 1-bit placeholders)

    @property
    def n(self) -> int:
        return self.items.n // self.dim if self.dim else 0

    def with_layers(self, layers: list) -> Fsl:
        """The same rows with a validity array for each of ``layers`` (missing = all valid)."""
        have = dict(zip(self.vlayers, self.validity, strict=False))
        val = [have.get(li, np.ones(self.n * int(np.prod(self.dims[:li + 1])), bool)) for li in layers]
        return Fsl(self.dim, self.items, val, self.dims, list(layers), self.const_items)

    def with_dims(self, dims: list) -> Fsl:
        """Constant items whose node elided inner all-null FSL layers, re-shaped to ``dims``."""
        if self.const_items is None or list(dims[:len(self.dims)]) != list(self.dims) or len(dims) == len(self.dims):
            return self
        full = int(np.prod(dims))
        return Fsl(full, Fixed(np.zeros(self.n * full, bool), 1), self.validity, list(dims), self.vlayers,
                   self.const_items)

    def with_null_items(self) -> Fsl:
        """The same rows with every item of the innermost layer null.

        A constant node of no value (``constant {}``) stores no item at all: the writer
        had only nulls to store (Rust lance 6.0.0, DuckDB's Lance extension 1.5.5, writes
        ``fixed_size_list<fixed_size_list<int8>[1]>[1]`` rows of ``[[null]]`` as a
        ``fixed_size_list`` node with validity around ``constant {}``), and pylance 14.0.2
        reads those items as nulls, not zeros."""
        inner = len(self.dims) - 1
        if self.const_items != b"" or inner < 0:
            return self
        have = dict(zip(self.vlayers, self.validity, strict=False))
        have[inner] = np.zeros(self.items.n, bool)
        layers = sorted(have)
        return Fsl(self.dim, self.items, [have[li] for li in layers], self.dims, layers,
                   self.const_items)

    def materialise(self, bits: int) -> Fsl:
        """Constant items turned into real ``bits``-wide items (nulls if of no value)."""
        k = self.items.n
        if bits == 1:
            items = Fixed(np.full(k, bool(self.const_items[:1] and self.const_items[0] & 1)), 1)
        else:
            const = self.const_items or bytes(bits // 8)
            if len(const) != bits // 8:
                raise FormatError("constant fixed-size list item of the wrong width", rule="ENC-014")
            items = Fixed(np.tile(np.frombuffer(const, np.uint8), k), bits)
        rows = self.with_null_items()
        return Fsl(self.dim, items, rows.validity, self.dims, rows.vlayers)

    @staticmethod
    def placeholder(proto: Fsl, n: int) -> Fsl:
        """``n`` all-zero rows shaped like ``proto`` (for pages without values)."""
        k = n * proto.dim
        bits = proto.items.bits
        items = Fixed(np.zeros(k, bool) if bits == 1 else np.zeros(k * (bits // 8), np.uint8), bits)
        return Fsl(proto.dim, items, [], proto.dims, [])

    def take(self, idx: np.ndarray) -> Fsl:
        idx = np.asarray(idx, np.int64)
        item_idx = (idx[:, None] * self.dim + np.arange(self.dim)).reshape(-1)
        val = []
        for v, li in zip(self.validity, self.vlayers, strict=False):
            c = int(np.prod(self.dims[:li + 1]))
            val.append(v[(idx[:, None] * c + np.arange(c)).reshape(-1)])
        return Fsl(self.dim, self.items.take(item_idx), val, self.dims, self.vlayers, self.const_items)


def _concat_per_field(parts: list) -> list:
    """Variable packed struct streams (one per field); an all-null page contributes an empty
    ``Var`` placeholder of its rows, which becomes zero / empty values of every field."""
    proto = next(p for p in parts if isinstance(p, list))
    out = []
    for k, field_proto in enumerate(proto):
        pieces = []
        for p in parts:
            if isinstance(p, list):
                pieces.append(p[k])
            elif not isinstance(p, Var) or len(p.data):
                raise FormatError("variable packed struct pages of different kinds", rule="ENC-001")
            elif isinstance(field_proto, Fixed):
                pieces.append(Fixed(np.zeros(p.n * (field_proto.bits // 8), np.uint8), field_proto.bits))
            else:
                pieces.append(Var(np.zeros(p.n + 1, np.int64), np.zeros(0, np.uint8)))
        out.append(concat(pieces))
    return out


def concat(parts: list):
    """Concatenate value streams of one kind."""
    if not parts:
        return None
    first = parts[0]
    if len(parts) == 1:
        return first
    if any(isinstance(p, list) for p in parts):
        return _concat_per_field(parts)
    if isinstance(first, Fixed):
        if any(not isinstance(p, Fixed) or p.bits != first.bits for p in parts):
            raise FormatError("value streams of different widths cannot be joined", rule="ENC-001")
        return Fixed(np.concatenate([p.data for p in parts]), first.bits)
    if isinstance(first, Var):
        if any(not isinstance(p, Var) for p in parts):
            raise FormatError("value streams of different kinds cannot be joined", rule="ENC-001")
        lens = [p.offsets[1:] - p.offsets[:-1] for p in parts]
        off = np.zeros(sum(len(x) for x in lens) + 1, np.int64)
        np.cumsum(np.concatenate(lens), out=off[1:])
        data = np.concatenate([p.data[p.offsets[0]:p.offsets[-1]] for p in parts])
        return Var(off, data)
    if isinstance(first, Fsl):
        real = [p for p in parts if p.const_items is None]
        deepest = max((p.dims for p in parts), key=len)
        parts = [p.with_dims(deepest) for p in parts]
        first = parts[0]
        if real and len(real) != len(parts):
            bits = real[0].items.bits
            parts = [p if p.const_items is None else p.materialise(bits) for p in parts]
        layers = sorted({li for p in parts for li in p.vlayers})
        parts = [p.with_layers(layers) for p in parts]
        items = concat([p.items for p in parts])
        val = [np.concatenate([p.validity[i] for p in parts]) for i in range(len(layers))]
        return Fsl(first.dim, items, val, first.dims, layers)
    raise FormatError(f"unknown value stream {type(first).__name__}", rule="ENC-001")


def empty_like(kind):
    if isinstance(kind, Fixed):
        return Fixed(np.zeros(0, bool if kind.bits == 1 else np.uint8), kind.bits)
    return Var(np.zeros(1, np.int64), np.zeros(0, np.uint8))
