"""FM index: a compressed full-text index that answers substring searches (``contains``)
over a string column by backward search on the Burrows-Wheeler transform of its text.

Layout (as Lance 8.0 writes it: the LanceDB Node SDK 0.31.0's ``Index.fm()``; index details
``/lance.index.pb.FMIndexDetails``, empty): one Lance file per partition of the rows,
``part_<k>_fm.lance``. Each partition indexes the concatenation of its documents

    T = doc_0 0xFF doc_1 0xFF ... doc_m 0xFF 0x00

where a document is the UTF-8 bytes of one non-null value (an empty string is an empty
document; a null is no document), ``0xFF`` (a byte UTF-8 never holds) ends each document and
``0x00`` is the sentinel, the one smallest symbol. The schema metadata carries (numbers as
hexadecimal text of little-endian bytes):

    bwt_len              n = len(T)
    c_table              257 u64: C[c] = how many symbols of T are smaller than c
                         (C[256] = n)
    doc_start_positions  one u64 per document: where it starts in T
    row_ids              one u64 per document: its row *address*, whatever the table's
                         flags (under stable row ids too: lancedb 0.38.0 and 0.40.0
                         measured; 0.40.0 answers through it right, 0.38.0's reader takes
                         the addresses for row ids and answers wrong)
    tree_topology        u32 node count, then per internal node two children, left
                         (bit 0) and right (bit 1), each a u8 tag (0: internal node, 1:
                         leaf) and a u32 (node id, or the leaf's symbol)
    huffman_codes        for each byte value 0..255: u32 code, u8 length, u16 count and
                         count u32 node ids: the leaf's path from the root (the code's
                         bits, most significant first) and the internal nodes it passes
    num_bwt_nodes, total_wavelet_rows, alphabet_size (256), sa_sample_rate (r),
    sa_samples_len, num_sa_blocks

The rows of the file (``node_id`` u32, ``block_id`` u32, ``words`` large_binary, ``prefix_rank``
u64, ``bit_len`` u64) are the bit vectors of a Huffman-shaped wavelet tree over the BWT
``L`` (``L[i]`` = the symbol before the i-th smallest suffix of T, cyclically): the root's
bits say, for each position of L, whether its symbol's code goes left (0) or right (1);
each internal node holds the bits of the positions that reach it, in order. A node's bits
may be cut in blocks (``block_id`` 0, 1, ...; ``prefix_rank`` = the 1-bits of the node's
earlier blocks); ``words`` are u64 words, least significant bit first. The row with
``node_id`` 0xFFFFFFFF hold the suffix-array samples: ``SA[k * r]`` for k = 0, 1, ...
(u64 words, in blocks of at most 4,096 by ``block_id``; each row's ``bit_len`` is the count of
all of them, ``sa_samples_len``), which turn a backward-search range into text positions and
so into documents.

Reading it back (this module): the wavelet tree gives ``L``; ``LF(i) = C[L[i]] + rank of
L[i] among L[0..i)`` steps from a suffix to the one starting a byte earlier, so walking LF
from row 0 (the suffix ``0x00`` alone) spells T backwards and gives every ``SA[i]``
(:func:`invert_bwt`; :func:`invert_bwt_fast` is the same by pointer jumping, tested equal).
``entries``: one row per document, ``row_id`` uint64 and ``text`` (its bytes as UTF-8) and
``partition``. Self-consistency (C table, suffix-array samples, document starts, codes
against the topology) is checked by :func:`check`, where a query would go wrong.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Iterator

import numpy as np
import pyarrow as pa

from reference_impl.errors import FormatError, UnsupportedIndex

KIND = "fm"
VERSION = "fm-v1"
FILE_NAME = re.compile(r"part_(\d+)_fm\.lance")
SEPARATOR = 0xFF
SENTINEL = 0x00
SAMPLE_NODE = 0xFFFFFFFF
#: Largest text (bytes) decoded in one partition (the inversion holds a few int64 arrays of
#: its size) and in all of them; a larger index is not judged.
MAX_PARTITION_BYTES = 1 << 24
MAX_TEXT_BYTES = 1 << 28
#: Longest text walked by the plain loop of :func:`invert_bwt` (longer: pointer jumping).
PLAIN_INVERT_BYTES = 1 << 16
META_KEYS = ("bwt_len", "c_table", "doc_start_positions", "row_ids", "tree_topology",
             "huffman_codes", "sa_sample_rate")
RULE_SELF = "INDEX-127"


# ---------------------------------------------------------------------------- metadata

def _hex(meta: dict, key: str, path: str) -> bytes:
    try:
        return bytes.fromhex(meta[key])
    except ValueError:
        raise FormatError(f"FM metadata {key!r} is not hexadecimal", path=path) from None


def _hex_u64(meta: dict, key: str, path: str) -> np.ndarray:
    raw = _hex(meta, key, path)
    if len(raw) % 8:
        raise FormatError(f"FM metadata {key!r} holds {len(raw)} bytes, not u64 values",
                          path=path)
    return np.frombuffer(raw, "<u8")


def parse_topology(raw: bytes, path: str = "") -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """The wavelet tree's internal nodes: ``[((tag, value) left, (tag, value) right), ...]``
    with tag 0 an internal node's id, tag 1 a leaf's symbol."""
    if len(raw) < 4:
        raise FormatError("FM tree_topology is shorter than its count", path=path)
    count = struct.unpack_from("<I", raw, 0)[0]
    if len(raw) != 4 + count * 10:
        raise FormatError(f"FM tree_topology of {count} nodes has {len(raw)} bytes, not "
                          f"{4 + count * 10}", path=path)
    nodes = []
    for k in range(count):
        at = 4 + k * 10
        left = (raw[at], struct.unpack_from("<I", raw, at + 1)[0])
        right = (raw[at + 5], struct.unpack_from("<I", raw, at + 6)[0])
        for tag, value in (left, right):
            if tag not in (0, 1) or (tag == 0 and not 0 < value < count) or (tag == 1 and value > 255):
                raise FormatError(f"FM tree_topology node {k} has child ({tag}, {value}): "
                                  "neither a later node nor a byte", path=path)
        nodes.append((left, right))
    return nodes


def leaf_paths(nodes) -> dict[int, tuple[str, list[int]]]:
    """Each leaf symbol's code (its path's bits as text, root first) and the internal nodes
    on the way; a node reached twice, or a symbol at two leaves, is a FormatError."""
    out: dict[int, tuple[str, list[int]]] = {}
    seen = set()
    stack = [(0, "", [])] if nodes else []
    while stack:
        node, code, passed = stack.pop()
        if node in seen:
            raise FormatError(f"FM tree_topology reaches node {node} twice")
        seen.add(node)
        for bit, (tag, value) in enumerate(nodes[node]):
            if tag == 1:
                if value in out:
                    raise FormatError(f"FM tree_topology holds symbol {value} at two leaves")
                out[value] = (code + str(bit), passed + [node])
            else:
                stack.append((value, code + str(bit), passed + [node]))
    if len(seen) != len(nodes):
        raise FormatError(f"FM tree_topology: {len(nodes) - len(seen)} nodes are unreachable")
    return out


def parse_codes(raw: bytes, path: str = "") -> dict[int, tuple[str, list[int]]]:
    """``huffman_codes``: each present symbol's code (bits as text) and its node ids."""
    out = {}
    at = 0
    for symbol in range(256):
        if at + 7 > len(raw):
            raise FormatError("FM huffman_codes ends inside its entries", path=path)
        code, length, count = struct.unpack_from("<IBH", raw, at)
        at += 7
        if at + 4 * count > len(raw):
            raise FormatError("FM huffman_codes ends inside a code's nodes", path=path)
        nodes = list(struct.unpack_from(f"<{count}I", raw, at))
        at += 4 * count
        if length:
            out[symbol] = (format(code, f"0{length}b") if length <= 32 else "?", nodes)
    if at != len(raw):
        raise FormatError(f"FM huffman_codes holds {len(raw) - at} bytes after its 256 entries",
                          path=path)
    return out


# ------------------------------------------------------------------------ wavelet tree

def bwt_of_tree(nodes, bits: dict[int, np.ndarray], n: int, path: str = "") -> np.ndarray:
    """``L`` from the wavelet tree: the positions reaching a node split, in order, by its bits
    into its left (0) and right (1) children; a leaf gives its symbol to the positions that
    reach it. A node whose bit count is not the number of positions reaching it is a
    FormatError."""
    L = np.zeros(n, np.uint8)
    stack = [(0, np.arange(n, dtype=np.int64))] if nodes else []
    while stack:
        node, positions = stack.pop()
        b = bits.get(node)
        if b is None or len(b) != len(positions):
            raise FormatError(f"FM wavelet node {node} holds {0 if b is None else len(b)} bits, "
                              f"but {len(positions)} positions reach it", path=path)
        for side in (0, 1):
            tag, value = nodes[node][side]
            sub = positions[b == side]
            if tag == 1:
                L[sub] = value
            else:
                stack.append((value, sub))
    return L


def lf_mapping(L: np.ndarray, C: np.ndarray) -> np.ndarray:
    """``LF[i] = C[L[i]] + (how many of L[0..i) equal L[i])``."""
    order = np.argsort(L, kind="stable")
    rank = np.empty(len(L), np.int64)
    rank[order] = np.arange(len(L), dtype=np.int64) - C[L[order].astype(np.int64)]
    return C[L.astype(np.int64)] + rank


def invert_bwt(L: np.ndarray, C: np.ndarray) -> tuple[bytes, np.ndarray]:
    """``(T, SA)``: row 0 is the suffix holding only the sentinel (it starts at n - 1); each
    LF step goes to the suffix starting one byte earlier, and ``L`` of a row is the byte
    before its suffix (cyclically). A row reached twice (a BWT no text gives) is a
    FormatError."""
    n = len(L)
    LF = lf_mapping(L, C).tolist()
    symbols = L.tolist()
    text = bytearray(n)
    sa = [-1] * n
    sa[0] = n - 1
    row = 0
    for p in range(n - 2, -1, -1):
        text[p] = symbols[row]
        row = LF[row]
        if sa[row] != -1:
            raise FormatError("FM BWT is no text's: its LF mapping is not one cycle")
        sa[row] = p
    text[n - 1] = symbols[row]  # the row of the suffix at 0: its L wraps around to T[n - 1]
    return bytes(text), np.array(sa, np.int64)


def invert_bwt_fast(L: np.ndarray, C: np.ndarray) -> tuple[bytes, np.ndarray]:
    """:func:`invert_bwt` by pointer jumping: the rows form one LF cycle through row 0, and
    a row's distance ``d`` from row 0 along it (``ceil(log2 n)`` rounds of doubling the
    pointers back towards row 0) says its suffix starts at ``n - 1 - d``; then every
    ``T[SA[i] - 1] = L[i]`` (cyclically) at once. Rows that are not on that one cycle (a
    BWT no text gives) are a FormatError, as they are for :func:`invert_bwt`."""
    n = len(L)
    LF = lf_mapping(L, C)
    back = np.zeros(n, np.int64)
    back[LF] = np.arange(n, dtype=np.int64)   # back[j]: the row whose LF is j
    dist = np.ones(n, np.int64)
    dist[0] = 0
    jump = back.copy()
    jump[0] = 0
    for _ in range(int(n).bit_length() + 1):
        moving = jump != 0
        if not moving.any():
            break
        dist[moving] += dist[jump[moving]]
        jump[moving] = jump[jump[moving]]
    sa = (n - 1) - dist
    if (jump != 0).any() or not np.array_equal(np.sort(sa), np.arange(n)):
        raise FormatError("FM BWT is no text's: its LF mapping is not one cycle")
    text = np.empty(n, np.uint8)
    text[(sa - 1) % n] = L
    return text.tobytes(), sa


def invert(L: np.ndarray, C: np.ndarray) -> tuple[bytes, np.ndarray]:
    return invert_bwt(L, C) if len(L) <= PLAIN_INVERT_BYTES else invert_bwt_fast(L, C)


# ------------------------------------------------------------------------------- read

def _partition(files, name: str, budget: list[int]) -> dict:
    """One ``part_<k>_fm.lance`` decoded: its documents and what :func:`check` holds."""
    reader = files.lance_file(name)
    path = files.key(name)
    try:
        meta = {k.decode() if isinstance(k, bytes) else k: v.decode() if isinstance(v, bytes)
                else v for k, v in (reader.schema.metadata or {}).items()}
    except UnicodeDecodeError as exc:
        raise FormatError(f"FM schema metadata is not UTF-8 text: {exc}", path=path) from None
    missing = [k for k in META_KEYS if k not in meta]
    if missing or not {"node_id", "block_id", "words", "bit_len"} <= set(reader.schema.names):
        raise UnsupportedIndex(f"FM file {name} lacks {missing or 'its wavelet columns'} "
                               f"(metadata {sorted(meta)}, columns {reader.schema.names}): an "
                               "unknown layout", kind=KIND, version=",".join(sorted(meta)))
    try:
        n = int(meta["bwt_len"])
        rate = int(meta["sa_sample_rate"])
    except ValueError:
        raise FormatError("FM bwt_len or sa_sample_rate is not a number", path=path) from None
    if n < 1 or rate < 1:
        raise FormatError(f"FM bwt_len {n} or sa_sample_rate {rate} is below 1", path=path)
    budget[0] -= n
    if budget[0] < 0 or n > MAX_PARTITION_BYTES:
        raise UnsupportedIndex(f"FM index text exceeds {MAX_PARTITION_BYTES} bytes in a "
                               f"partition or {MAX_TEXT_BYTES} in all: too large to judge here",
                               kind=KIND, version=VERSION)
    C = _hex_u64(meta, "c_table", path).astype(np.int64)
    if len(C) != 257 or C[-1] != n:
        raise FormatError(f"FM c_table holds {len(C)} counts ending at {C[-1] if len(C) else None}, "
                          f"not 257 ending at bwt_len {n}", path=path)
    if np.any(np.diff(C) < 0):
        raise FormatError(f"FM c_table decreases at symbol {int(np.flatnonzero(np.diff(C) < 0)[0])}",
                          path=path)
    starts = _hex_u64(meta, "doc_start_positions", path).astype(np.int64)
    rows = _hex_u64(meta, "row_ids", path)
    if len(starts) != len(rows):
        raise FormatError(f"FM names {len(rows)} rows for {len(starts)} documents", path=path)
    nodes = parse_topology(_hex(meta, "tree_topology", path), path)
    codes = parse_codes(_hex(meta, "huffman_codes", path), path)
    table = reader.read_all()
    blocks: dict[int, list] = {}
    samples = []
    for node, block, words, prefix, bit_len in zip(
            table.column("node_id").to_pylist(), table.column("block_id").to_pylist(),
            table.column("words").to_pylist(), table.column("prefix_rank").to_pylist()
            if "prefix_rank" in table.column_names else [0] * table.num_rows,
            table.column("bit_len").to_pylist(), strict=True):
        words = words or b""
        if node == SAMPLE_NODE:  # a block of samples (bit_len: the count of all blocks)
            if len(words) % 8:
                raise FormatError(f"FM suffix-array block {block} holds {len(words)} bytes, "
                                  "not u64 samples", path=path)
            samples.append((block, np.frombuffer(words, "<u8").astype(np.int64)))
            continue
        if bit_len > 8 * len(words) or bit_len > n:
            raise FormatError(f"FM wavelet node {node} block {block}: {bit_len} bits in "
                              f"{len(words)} bytes (bwt_len {n})", path=path)
        bits = np.unpackbits(np.frombuffer(words, np.uint8), bitorder="little")[:bit_len]
        blocks.setdefault(node, []).append((block, prefix, bits))
    bits, prefix_errors = {}, []
    for node, parts in blocks.items():
        parts.sort(key=lambda p: p[0])
        ones = 0
        for block, prefix, b in parts:
            if prefix != ones:
                prefix_errors.append(f"wavelet node {node} block {block} says {prefix} 1-bits "
                                     f"before it, its earlier blocks hold {ones}")
            ones += int(b.sum())
        bits[node] = np.concatenate([b for _, _, b in parts])
    if 0 not in bits or len(bits[0]) != n:
        # (checked before anything of size n is allocated: the bits are bounded by the file)
        raise FormatError(f"FM wavelet root holds {len(bits.get(0, ()))} bits for bwt_len {n}",
                          path=path)
    L = bwt_of_tree(nodes, bits, n, path)
    text, sa = invert(L, C)
    samples.sort(key=lambda s: s[0])
    sampled = np.concatenate([s for _, s in samples]) if samples else np.zeros(0, np.int64)
    # kept: the text, and what the checks need of L and SA (not the arrays of size n)
    return {"name": name, "path": path, "n": n, "C": C, "counts": np.bincount(L, minlength=256),
            "text": text, "sa_at_samples": sa[::rate].copy(), "starts": starts, "rows": rows,
            "nodes": nodes, "codes": codes, "rate": rate, "samples": sampled,
            "prefix_errors": prefix_errors}


def read(files, index):
    """Decode every ``part_<k>_fm.lance`` of ``index`` into an :class:`IndexContent`."""
    from reference_impl.index import IndexContent

    parts = sorted((int(m.group(1)), name) for name in files.names()
                   if (m := FILE_NAME.fullmatch(name)))
    if not parts:
        raise UnsupportedIndex(f"FM index {index.name!r} has no part_<k>_fm.lance (files: "
                               f"{files.names()}); no other layout is known", kind=KIND)
    budget = [MAX_TEXT_BYTES]
    decoded = [_partition(files, name, budget) for _, name in parts]
    row_out, text_out, part_out = [], [], []
    for k, part in enumerate(decoded):
        text, starts = part["text"], part["starts"].tolist()
        ends = starts[1:] + [part["n"] - 1]
        for s, e in zip(starts, ends, strict=True):
            doc = text[s:e] if 0 <= s <= e <= part["n"] else b""
            text_out.append(doc[:-1].decode("utf-8", "replace") if doc.endswith(b"\xff")
                            else doc.decode("utf-8", "replace"))
        row_out.append(part["rows"])
        part_out.append(np.full(len(starts), k, np.int32))
    entries = pa.table({
        "row_id": pa.array(np.concatenate(row_out) if row_out else np.zeros(0, np.uint64),
                           pa.uint64()),
        "text": pa.array(text_out, pa.string()),
        "partition": pa.array(np.concatenate(part_out) if part_out else np.zeros(0, np.int32)),
    })
    summary = {"partitions": len(decoded), "documents": entries.num_rows,
               "text_bytes": int(sum(p["n"] for p in decoded)),
               "sa_sample_rate": decoded[0]["rate"]}
    return IndexContent(kind=KIND, version=VERSION, entries=entries, summary=summary,
                        extra={"partitions": decoded, "row_addresses": True})


# ------------------------------------------------------------------------------ check

def self_consistency(part: dict) -> Iterator[str]:
    """What in one partition would make a backward search answer other than its text:
    counts, suffix-array samples, document bounds, codes."""
    n, C, counts, text = part["n"], part["C"], part["counts"], part["text"]
    if not np.array_equal(C, np.concatenate([[0], np.cumsum(counts)])):
        bad = int(np.flatnonzero(C[1:] != np.cumsum(counts))[0])
        yield (f"its c_table says {int(C[bad + 1] - C[bad])} of symbol {bad}, the BWT holds "
               f"{int(counts[bad])}: a search's ranges are off")
    if counts[SENTINEL] != 1 or text[-1] != SENTINEL:
        yield f"its text holds the sentinel {int(counts[SENTINEL])} times, not once at its end"
    want = part["sa_at_samples"]
    got = part["samples"]
    if len(got) != len(want) or not np.array_equal(got, want):
        k = next((i for i in range(min(len(got), len(want))) if got[i] != want[i]), None)
        yield (f"its suffix-array samples are not SA[k x {part['rate']}] ({len(got)} for "
               f"{len(want)}" + ("" if k is None else f"; sample {k} says {int(got[k])}, the "
                                 f"text gives {int(want[k])}") + "): a match is placed in "
               "the wrong document")
    starts = part["starts"].tolist()
    seps = [i for i, b in enumerate(text) if b == SEPARATOR] if n <= PLAIN_INVERT_BYTES else \
        np.flatnonzero(np.frombuffer(text, np.uint8) == SEPARATOR).tolist()
    expect = [0] + [s + 1 for s in seps[:-1]]
    if starts != expect[: len(starts)] or len(seps) != len(starts):
        yield (f"its {len(starts)} document starts are not where its {len(seps)} separators "
               "put them: a match is given to another row")
    paths = leaf_paths(part["nodes"])
    for symbol, (code, passed) in sorted(part["codes"].items()):
        if paths.get(symbol) != (code, passed):
            yield (f"its code for byte {symbol} ({code}, nodes {passed}) is not the leaf's path "
                   f"{paths.get(symbol)}: a search for it walks to another symbol")
            break
    absent = sorted(set(paths) - set(part["codes"]))
    if absent:
        yield f"bytes {absent[:5]} sit at leaves but have no code: a search for them finds nothing"
    yield from part["prefix_errors"]


def check(content, index, data) -> Iterator:
    """Hold the documents against the rows they name (INDEX-101/102/103: each live covered
    row with a value is one document holding its text; a null is none) and each partition
    against itself (INDEX-127)."""
    from reference_impl.index import Disagreement
    from reference_impl.index.against import hold_pairs

    name = index.name
    for part in content.extra["partitions"]:
        for problem in self_consistency(part):
            yield Disagreement(RULE_SELF, f"FM index {name!r} {part['name']}: {problem}")
    rows = content.entries.column("row_id").to_numpy()
    uniq, counts = np.unique(rows, return_counts=True)
    for r in uniq[counts > 1][:10]:
        yield Disagreement(RULE_SELF, f"FM index {name!r}: row {int(r)} is {int(counts[uniq == r][0])} "
                           "documents: a match in it is answered twice", int(r))
    valid = data.values.is_valid().to_numpy(zero_copy_only=False)
    part = content.entries.column("partition").to_numpy()
    yield from hold_pairs(name, data, rows, content.entries.column("text"),
                          data_rows=data.row_ids[valid],
                          data_values=data.values.filter(pa.array(valid)), must_name=valid,
                          where=lambda i: {"partition": int(part[i])})


# ------------------------------------------------------------------------------ write

def suffix_array(text: bytes) -> np.ndarray:
    """The suffix array of ``text`` (which ends with its one smallest byte) by prefix
    doubling: sort by the first 2^k bytes, ranks from the previous round, until every
    rank is distinct."""
    n = len(text)
    rank = np.frombuffer(text, np.uint8).astype(np.int64)
    sa = np.argsort(rank, kind="stable")
    k = 1
    while k < n:
        second = np.full(n, -1, np.int64)
        second[: n - k] = rank[k:]
        sa = np.lexsort((second, rank))
        key_a, key_b = rank[sa], second[sa]
        new = np.concatenate([[0], np.cumsum((key_a[1:] != key_a[:-1]) | (key_b[1:] != key_b[:-1]))])
        rank = np.empty(n, np.int64)
        rank[sa] = new
        if new[-1] == n - 1:
            break
        k *= 2
    return sa.astype(np.int64)


def huffman_tree(counts: np.ndarray) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """A Huffman tree over the symbols that occur (the two least frequent joined first,
    ties by the smaller symbol or node), as ``tree_topology`` lists it: node 0 the root, a
    node's children after it."""
    import heapq

    heap = [(int(c), 0, s, (1, s)) for s, c in enumerate(counts.tolist()) if c]
    heapq.heapify(heap)
    joined = []   # (left, right) children of each join, by join order
    order = 256
    while len(heap) > 1:
        c1, _, k1, a = heapq.heappop(heap)
        c2, _, k2, b = heapq.heappop(heap)
        joined.append((a, b))
        heapq.heappush(heap, (c1 + c2, 1, order, (0, len(joined) - 1)))
        order += 1
    if not joined:  # one symbol only: a root whose two leaves are it
        s = heap[0][3][1]
        return [((1, s), (1, s))]
    # number the joins root first, breadth first
    ids = {len(joined) - 1: 0}
    queue = [len(joined) - 1]
    nodes = []
    while queue:
        j = queue.pop(0)
        pair = []
        for tag, value in joined[j]:
            if tag == 0:
                ids[value] = len(ids)
                queue.append(value)
                pair.append((0, ids[value]))
            else:
                pair.append((1, value))
        nodes.append(tuple(pair))
    return nodes


def encode_partition(docs: list[bytes], rows: list[int], *, rate: int = 32) -> pa.Table:
    """One ``part_<k>_fm.lance``'s table (schema metadata included) for ``docs`` (the UTF-8
    bytes of each non-null value, at least one) naming ``rows``: the reference writer of the
    layout above."""
    if not docs:
        from reference_impl.errors import InvalidInput

        raise InvalidInput("an FM partition holds at least one document")
    text = b"".join(d + bytes([SEPARATOR]) for d in docs) + bytes([SENTINEL])
    n = len(text)
    sa = suffix_array(text)
    T = np.frombuffer(text, np.uint8)
    L = T[(sa - 1) % n]
    counts = np.bincount(L, minlength=256)
    nodes = huffman_tree(counts)
    paths = leaf_paths(nodes)
    # each node's bits: the positions of L reaching it, in order, and the side each goes
    side_of = np.zeros((len(nodes), 256), np.uint8)
    for symbol, (code, passed) in paths.items():
        for depth, node in enumerate(passed):
            side_of[node, symbol] = int(code[depth])
    bits: dict[int, np.ndarray] = {}
    stack = [(0, np.arange(n, dtype=np.int64))]
    while stack:
        node, positions = stack.pop()
        side = side_of[node, L[positions]]
        bits[node] = side
        for bit in (0, 1):
            tag, value = nodes[node][bit]
            if tag == 0:
                stack.append((value, positions[side == bit]))
    node_ids, block_ids, words_out, ranks, lens = [], [], [], [], []
    for node in range(len(nodes)):
        b = bits[node]
        packed = np.packbits(np.concatenate([b, np.zeros((-len(b)) % 64, np.uint8)]),
                             bitorder="little")
        node_ids.append(node)
        block_ids.append(0)
        words_out.append(packed.tobytes())
        ranks.append(0)
        lens.append(len(b))
    samples = sa[::rate].astype("<u8")
    for block in range((len(samples) + 4095) // 4096 or 1):
        node_ids.append(SAMPLE_NODE)
        block_ids.append(block)
        words_out.append(samples[block * 4096:(block + 1) * 4096].tobytes())
        ranks.append(0)
        lens.append(len(samples))
    starts = np.concatenate([[0], np.cumsum([len(d) + 1 for d in docs])[:-1]]).astype("<u8") \
        if docs else np.zeros(0, "<u8")
    C = np.concatenate([[0], np.cumsum(counts)]).astype("<u8")
    topo = struct.pack("<I", len(nodes)) + b"".join(
        struct.pack("<BI", *left) + struct.pack("<BI", *right) for left, right in nodes)
    codes = b""
    for symbol in range(256):
        if symbol in paths:
            code, passed = paths[symbol]
            codes += struct.pack("<IBH", int(code, 2), len(code), len(passed))
            codes += struct.pack(f"<{len(passed)}I", *passed)
        else:
            codes += struct.pack("<IBH", 0, 0, 0)
    meta = {"alphabet_size": "256", "bwt_len": str(n), "c_table": C.tobytes().hex(),
            "doc_start_positions": starts.tobytes().hex(),
            "row_ids": np.asarray(rows, "<u8").tobytes().hex(),
            "tree_topology": topo.hex(), "huffman_codes": codes.hex(),
            "num_bwt_nodes": str(len(nodes)), "total_wavelet_rows": str(len(nodes)),
            "sa_sample_rate": str(rate), "sa_samples_len": str(len(samples)),
            "num_sa_blocks": str((len(samples) + 4095) // 4096 or 1)}
    schema = pa.schema([pa.field("node_id", pa.uint32(), False),
                        pa.field("block_id", pa.uint32(), False),
                        pa.field("words", pa.large_binary(), False),
                        pa.field("prefix_rank", pa.uint64(), False),
                        pa.field("bit_len", pa.uint64(), False)], metadata=meta)
    return pa.table([pa.array(node_ids, pa.uint32()), pa.array(block_ids, pa.uint32()),
                     pa.array(words_out, pa.large_binary()), pa.array(ranks, pa.uint64()),
                     pa.array(lens, pa.uint64())], schema=schema)
