"""A finite state transducer (the ``fst`` format of the Rust ``fst`` crate), read as its
sorted list of (key bytes, u64 value).

pylance's INVERTED index (format_version 2, ``token_set_format`` "fst") stores each
partition's token dictionary this way: key = token (UTF-8), value = token id.

Layout (all integers little-endian)::

    u64 version (1..3)   u64 type
    nodes ...            each node is addressed by its LAST byte; it is read backwards
    u64 number of keys   u64 root address
    u32 checksum         (version 3 only; CRC-32C of everything before it — not checked here)

A key's value is the sum of the outputs of the transitions on its path plus the final
output of the node it ends at. Address 0 is the empty final node (no transitions, output 0).
A transition's target is stored as ``(address of the node's first byte) - target address``
(0 means address 0).

The node's last byte (its *state*) has one of three forms, told by its top two bits:

* ``11`` *one transition, next*: the target is the byte just before this node; output 0;
  the low 6 bits index the common-input table (0: the input byte precedes the state byte).
* ``10`` *one transition*: low 6 bits as above; then, reading backwards: [input byte if not
  common], a pack-sizes byte (high nibble: target delta size, low nibble: output size), the
  target delta (that many bytes), the output (that many bytes; absent when the size is 0).
* ``0F`` *any transitions*: F (bit 6) says the node is final; the low 6 bits are the
  number of transitions (0: a byte before the state holds it, where 1 means 256).
  Reading backwards: [that count byte], the pack-sizes byte, a 256-byte input->index table
  when there are more than 32 transitions (version 2 and later), the inputs (one byte each,
  transition 0 nearest the front: stored in reverse), the target deltas (same order), then
  when the output size is not 0 the outputs (same order) and, for a final node, its final
  output.
"""

from __future__ import annotations

from reference_impl.errors import FormatError

#: The inputs a one-transition state can name in its low 6 bits (index - 1 into this text).
COMMON_INPUTS = b"te/oasripcnw.hlm-du012g=:bf3y5&_4v9678k%?xCDASFIBEjPTzRNM+LOqHG"
#: Most keys and nodes decoded from one FST.
MAX_KEYS = 1 << 24
_HEADER = 16
_TRANS_INDEX_THRESHOLD = 32


class _Node:
    """One decoded node: whether it is final, its final output, its transitions
    ``(input byte, output, target address)`` in input order."""

    __slots__ = ("final", "final_output", "transitions")

    def __init__(self, final: bool, final_output: int, transitions: list) -> None:
        self.final = final
        self.final_output = final_output
        self.transitions = transitions


def _uint(data: bytes, at: int, size: int, path: str | None) -> int:
    if size == 0:
        return 0
    if at < 0 or at + size > len(data):
        raise FormatError(f"FST field at {at} ({size} bytes) is outside the FST", path=path)
    return int.from_bytes(data[at:at + size], "little")


def _byte(data: bytes, at: int, path: str | None) -> int:
    if not 0 <= at < len(data):
        raise FormatError(f"FST node byte at {at} is outside the FST", path=path, offset=at)
    return data[at]


def _common_input(idx: int) -> int | None:
    return None if idx == 0 else COMMON_INPUTS[idx - 1]


def _target(first: int, delta: int, path: str | None) -> int:
    """The target address of a transition stored as ``delta`` in the node starting at
    ``first``; targets lie before the node (nodes are written children first)."""
    if delta == 0:
        return 0
    if delta > first:
        raise FormatError(f"FST node at {first} points before the FST start", path=path)
    return first - delta


def read_node(data: bytes, addr: int, version: int, path: str | None = None) -> _Node:
    """Decode the node whose last byte is at ``addr`` (see the module docstring)."""
    if addr == 0:
        return _Node(True, 0, [])
    state = _byte(data, addr, path)
    kind = state >> 6
    if kind in (0b11, 0b10):
        common = _common_input(state & 0x3F)
        at = addr - 1
        if common is None:
            inp = _byte(data, at, path)
            at -= 1
        else:
            inp = common
        if kind == 0b11:
            return _Node(False, 0, [(inp, 0, at)])   # the target is the next byte back
        sizes = _byte(data, at, path)
        tsize, osize = sizes >> 4, sizes & 0x0F
        if tsize > 8 or osize > 8:
            raise FormatError(f"FST node at {addr} has pack sizes {tsize}/{osize}", path=path)
        at -= tsize
        delta = _uint(data, at, tsize, path)
        at -= osize
        out = _uint(data, at, osize, path)
        return _Node(False, 0, [(inp, out, _target(at, delta, path))])
    final = bool(state & 0x40)
    at = addr - 1
    ntrans = state & 0x3F
    if ntrans == 0:
        ntrans = _byte(data, at, path)
        ntrans = 256 if ntrans == 1 else ntrans
        at -= 1
    sizes = _byte(data, at, path)
    tsize, osize = sizes >> 4, sizes & 0x0F
    if tsize > 8 or osize > 8:
        raise FormatError(f"FST node at {addr} has pack sizes {tsize}/{osize}", path=path)
    if version >= 2 and ntrans > _TRANS_INDEX_THRESHOLD:
        at -= 256
    inputs_end = at                     # inputs occupy [at - ntrans, at)
    deltas_end = inputs_end - ntrans    # deltas occupy [deltas_end - ntrans*tsize, deltas_end)
    outputs_end = deltas_end - ntrans * tsize
    first = outputs_end - ntrans * osize - (osize if final else 0)   # the node's first byte
    transitions = []
    for i in range(ntrans):
        inp = _byte(data, inputs_end - 1 - i, path)
        delta = _uint(data, deltas_end - (i + 1) * tsize, tsize, path)
        out = _uint(data, outputs_end - (i + 1) * osize, osize, path)
        transitions.append((inp, out, _target(first, delta, path)))
    final_output = 0
    if final and osize:
        final_output = _uint(data, first, osize, path)
    return _Node(final, final_output, transitions)


def entries(data: bytes, path: str | None = None) -> list[tuple[bytes, int]]:
    """Every (key, value) the FST holds, in key order."""
    if len(data) < 32:
        raise FormatError(f"FST of {len(data)} bytes is shorter than its header and footer",
                          path=path)
    version = int.from_bytes(data[0:8], "little")
    if not 1 <= version <= 3:
        raise FormatError(f"FST version {version} is not 1..3", path=path)
    end = len(data) - 4 if version >= 3 else len(data)
    count = int.from_bytes(data[end - 16:end - 8], "little")
    root = int.from_bytes(data[end - 8:end], "little")
    if count > MAX_KEYS:
        raise FormatError(f"FST says it holds {count} keys, above {MAX_KEYS}", path=path)
    if root != 0 and not _HEADER <= root < end - 16:
        raise FormatError(f"FST root address {root} is outside its nodes", path=path)
    body = data[:end - 16]
    found: list[tuple[bytes, int]] = []
    # depth-first, inputs in ascending order; a stack of (node address, key so far, sum)
    stack = [(root, b"", 0)]
    steps = 0
    while stack:
        addr, key, total = stack.pop()
        steps += 1
        if steps > 4 * MAX_KEYS or len(key) > 1 << 16:
            raise FormatError("FST walk does not end (a cycle or an oversized key)", path=path)
        node = read_node(body, addr, version, path)
        if node.final:
            found.append((key, total + node.final_output))
            if len(found) > count:
                raise FormatError(f"FST holds more keys than its footer's {count}", path=path)
        for inp, out, target in sorted(node.transitions, reverse=True):
            stack.append((target, key + bytes([inp]), total + out))
    if len(found) != count:
        raise FormatError(f"FST holds {len(found)} keys, its footer says {count}", path=path)
    return found
