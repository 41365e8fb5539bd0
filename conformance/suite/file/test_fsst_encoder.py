"""The FSST encoder of the 2.1/2.2 writer (FILE-ENCODINGS §4.6, §5.2 rule 4; spec 003
"Fsst: Used on string pages that are not dictionary encoded").

* The symbol table: exactly 2,312 bytes, header ``n_symbols | bit 24 | "FSST" magic``,
  ``n`` zero-padded u64 symbols then ``n`` lengths 1..8, the rest zero; deterministic.
* Round trips: whatever the input (random bytes, ASCII and multi-byte text, values of 0..300
  bytes, nulls, empty pages) and whatever the table (ours, a random one, pylance's), our
  reader's page decoder ``fsst.decode`` and the token-by-token ``decode_value`` give the
  input back, and every code is below ``n_symbols``.
* Files our writer makes with FSST pages (2.1 and 2.2; mini-block and full-zip; nulls;
  large_utf8; list<utf8>) are read back equal by pylance 14.0.2 and by our reader, and
  their page layouts really hold ``fsst`` nodes.
* The tokeniser: at every position the look-up tables pick the token the plain-Python
  rule ``longest_symbol_at`` names (random tables, symbols crossing a value's end).
* The choice: short strings (< 5 bytes), small pages (< 32 KiB), the binary type,
  dictionary pages and pages FSST would not shrink stay plain ``variable``.
"""

from __future__ import annotations

import struct

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from reference_impl.errors import InvalidInput
from reference_impl.file import selection
from reference_impl.file.container import read_container
from reference_impl.file.encode.arrow_data import variable_parts
from reference_impl.file.encode.v2_1 import fsst
from reference_impl.file.encodings.v2_1 import fsst as reader_fsst
from reference_impl.file.encodings.v2_1.values import Var
from reference_impl.file.page import page_layout
from reference_impl.file.reader import LanceFileReader as OurReader
from reference_impl.file.writer import write_lance_file
from reference_impl.io.local import LocalStore

# ----------------------------------------------------------------------------- helpers


def parts(values, typ=None):
    return variable_parts(pa.array(values, typ or pa.string()))


def check_round_trip(table: bytes, offsets, data) -> tuple[np.ndarray, np.ndarray]:
    """Encode with ``table``; both reader decoders must give the values back."""
    offsets = np.asarray(offsets, np.int64)
    data = np.asarray(data, np.uint8)
    c_off, c_data = fsst.encode(table, offsets, data)
    assert c_off[0] == 0 and c_off[-1] == len(c_data) and len(c_off) == len(offsets)
    assert np.all(np.diff(c_off) >= 0)
    back = reader_fsst.decode(table, Var(c_off, c_data))
    assert np.array_equal(back.offsets, offsets - offsets[0])
    assert back.data.tobytes() == data[offsets[0] : offsets[-1]].tobytes()
    # the readable decoder, value by value (it raises on a code >= n_symbols)
    for i in range(len(offsets) - 1):
        value = reader_fsst.decode_value(table, c_data[c_off[i] : c_off[i + 1]].tobytes())
        assert value == data[offsets[i] : offsets[i + 1]].tobytes()
    assert_codes_below_n(table, c_off, c_data)
    return c_off, c_data


def assert_codes_below_n(table: bytes, c_off, c_data) -> None:
    n = table[0]
    for i in range(len(c_off) - 1):
        value = c_data[c_off[i] : c_off[i + 1]].tobytes()
        j = 0
        while j < len(value):
            if value[j] == fsst.ESCAPE:
                assert j + 1 < len(value), "escape without its literal"
                j += 2
            else:
                assert value[j] < n
                j += 1


def layouts(path) -> list[list]:
    """Page layouts (PageLayout messages) of every column of a local 2.1/2.2 file."""
    store = LocalStore(str(path.parent))
    c = read_container(store, path.name)
    return [[page_layout(p, path=str(path)) for p in col.pages] for col in c.columns]


def value_node(layout):
    kind = layout.WhichOneof("layout")
    return getattr(layout, kind).value_compression, kind


def write_and_read(pylance, tmp_path, table: pa.Table, version: str, name="t.lance"):
    """Write with our writer; pylance and our reader must both read it back equal."""
    write_lance_file(LocalStore(str(tmp_path)), name, table, version=version)
    path = tmp_path / name
    theirs = pylance.file.LanceFileReader(str(path)).read_all().to_table()
    assert theirs.equals(table), f"pylance read back a different table ({version})"
    ours = OurReader(LocalStore(str(tmp_path)), name).read_all()
    assert ours.equals(table), f"our reader read back a different table ({version})"
    # random access into the FSST pages, both readers
    n = table.num_rows
    idx = sorted({0, n - 1, n // 2, n // 3, (7 * n) // 9})
    expected = table.take(idx)
    assert pylance.file.LanceFileReader(str(path)).take_rows(idx).to_table().equals(expected)
    assert OurReader(LocalStore(str(tmp_path)), name).take(idx).equals(expected)
    return layouts(path)


def words_text(rng, n, alphabet):
    """n strings of 1..12 words drawn from ``alphabet`` (compressible, all distinct)."""
    words = np.array(alphabet, dtype=object)
    out = []
    for i in range(n):
        k = int(rng.integers(1, 12))
        out.append(" ".join(words[rng.integers(0, len(words), k)]) + f" #{i}")
    return out


WORDS = [
    "the",
    "quick",
    "brown",
    "fox",
    "jumps",
    "over",
    "lazy",
    "dog",
    "lance",
    "format",
    "conformance",
    "http://www.example.com/",
    "zürich",
    "σίγμα",
    "東京都",
    "🙂",
]


# ----------------------------------------------------------------------------- the table


def test_symbol_table_layout():
    rng = np.random.default_rng(3)
    offsets, data = parts(words_text(rng, 2000, WORDS))
    table = fsst.build_symbol_table((offsets, data))
    assert len(table) == fsst.TABLE_SIZE == 2312
    (header,) = struct.unpack_from("<Q", table)
    n = header & 0xFF
    assert 0 < n <= 255
    assert (header >> 8) & 0xFFFF == 0  # terminator, suffix_lim
    assert (header >> 24) & 0xFF == 1  # bit 24: FSST-coded, bits 25-31 zero
    assert header >> 32 == 0x46535354 and table[4:8] == b"TSSF"
    symbols = np.frombuffer(table, "<u8", n, 8)
    lengths = np.frombuffer(table, np.uint8, n, 8 + 8 * n)
    assert lengths.min() >= 1 and lengths.max() <= 8
    assert lengths.max() > 2, "text should yield some symbols longer than 2 bytes"
    # zero-padded symbols, distinct, and zero after the lengths
    for s, length in zip(symbols, lengths, strict=True):
        assert int(s) >> (8 * int(length)) == 0
    assert len({(int(s), int(length)) for s, length in zip(symbols, lengths, strict=True)}) == n
    assert not any(table[8 + 9 * n :])
    # our reader parses it
    coded, _, _, n_parsed = reader_fsst.parse_symbol_table(table)
    assert coded and n_parsed == n


def test_symbol_table_is_deterministic():
    rng = np.random.default_rng(4)
    values = words_text(rng, 3000, WORDS)
    assert fsst.build_symbol_table(pa.array(values)) == fsst.build_symbol_table(pa.array(values))
    offsets, data = parts(values)
    assert fsst.build_symbol_table((offsets, data)) == fsst.build_symbol_table(Var(offsets, data))


def test_empty_inputs_give_an_empty_table():
    for values in ([], [""], ["", None, ""]):
        table = fsst.build_symbol_table(pa.array(values, pa.string()))
        assert len(table) == 2312 and table[0] == 0 and table[3] == 1 and table[4:8] == b"TSSF"
        offsets, data = parts(values)
        c_off, c_data = check_round_trip(table, offsets, data)
        assert len(c_data) == 0 and np.all(c_off == 0)


def test_malformed_tables_are_refused():
    with pytest.raises(InvalidInput):
        fsst.table_bytes(np.zeros(256, np.uint64), np.ones(256, np.uint8))
    good = fsst.table_bytes(np.array([0x61, 0x6262], np.uint64), np.array([1, 2], np.uint8))
    offsets, data = parts(["abba"])
    check_round_trip(good, offsets, data)
    for bad in (
        good[:5],
        good[:20],
        good[: 8 + 16] + bytes([0, 2]) + good[8 + 18 :],
        good[: 8 + 16] + bytes([9, 2]) + good[8 + 18 :],
    ):
        with pytest.raises(InvalidInput):
            fsst.encode(bad, offsets, data)


def test_text_compresses_well():
    rng = np.random.default_rng(5)
    offsets, data = parts(words_text(rng, 5000, WORDS))
    table = fsst.build_symbol_table((offsets, data))
    _, c_data = check_round_trip(table, offsets, data)
    assert len(c_data) < 0.6 * len(data)


# ----------------------------------------------------------------------------- round trips

values_strategy = st.lists(
    st.one_of(
        st.binary(max_size=300),
        st.text(max_size=120).map(lambda s: s.encode()),
        st.text(alphabet="abcde fgh", max_size=300).map(lambda s: s.encode()),
        st.sampled_from(WORDS).map(lambda s: (s * 7).encode()),
    ),
    max_size=60,
)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(values=values_strategy)
def test_round_trip_own_table(values):
    offsets, data = parts(values, pa.binary())
    table = fsst.build_symbol_table((offsets, data))
    check_round_trip(table, offsets, data)


@settings(max_examples=80, deadline=None)
@given(
    values=values_strategy,
    symbols=st.lists(st.binary(min_size=1, max_size=8), max_size=255),
)
def test_round_trip_any_table(values, symbols):
    """Any well-formed table (duplicates, many long symbols sharing a prefix, ...)."""
    syms = np.array([int.from_bytes(s, "little") for s in symbols], np.uint64)
    lens = np.array([len(s) for s in symbols], np.uint8)
    table = fsst.table_bytes(syms, lens)
    offsets, data = parts(values, pa.binary())
    check_round_trip(table, offsets, data)


@settings(max_examples=30, deadline=None)
@given(
    values=st.lists(st.one_of(st.none(), st.text(max_size=40)), max_size=80),
    start=st.integers(0, 10),
)
def test_round_trip_utf8_with_nulls_and_slices(values, start):
    arr = pa.array(values, pa.string()).slice(min(start, len(values)))
    offsets, data = variable_parts(arr)
    table = fsst.build_symbol_table(arr)
    check_round_trip(table, offsets, data)


def readable_tokens(table: bytes, offsets, data) -> list[tuple[int, int, int]]:
    """``(position, code, length)`` of every token, segment by segment, by the plain
    Python rule :func:`fsst.longest_symbol_at`."""
    symbols, lengths = fsst.parse_table(table)
    raw = bytes(np.asarray(data, np.uint8))
    out = []
    for i in range(len(offsets) - 1):
        for start in range(int(offsets[i]), int(offsets[i + 1]), fsst.SEGMENT_BYTES):
            end = min(start + fsst.SEGMENT_BYTES, int(offsets[i + 1]))
            pos = start
            while pos < end:
                code, length = fsst.longest_symbol_at(symbols, lengths, raw, pos, end)
                out.append((pos, code, length))
                pos += length
    return out


symbol_strategy = st.one_of(
    st.binary(min_size=1, max_size=8),
    # symbols over a two-letter alphabet: many long ones share their first two bytes
    st.text(alphabet="ab", min_size=1, max_size=8).map(str.encode),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    values=st.lists(
        st.one_of(st.binary(max_size=150), st.text(alphabet="ab", max_size=150).map(str.encode)),
        max_size=30,
    ),
    symbols=st.lists(symbol_strategy, min_size=1, max_size=255),
)
# the second-longest symbol of a prefix matches across the end of a value ("ab" | "ax")
@example(values=[b"ab", b"ax"], symbols=[b"abab", b"aba"])
# a fifth long symbol of prefix "ab" would match where the four tried do not
@example(values=[b"abaaa"], symbols=[b"abbbbbbb", b"abbbbbb", b"abbbbb", b"abbbb", b"abaa"])
def test_fast_tokeniser_equals_the_readable_rule(values, symbols):
    """The look-up tables of ``_Matcher`` (both walks: with and without long symbols)
    pick at every position the token ``longest_symbol_at`` names: tables with duplicates,
    more long symbols per prefix than are tried, symbols that would cross a value's end
    or a segment's end."""
    syms = np.array([int.from_bytes(s, "little") for s in symbols], np.uint64)
    table = fsst.table_bytes(syms, np.array([len(s) for s in symbols], np.uint8))
    offsets, data = parts(values, pa.binary())
    symbols_, lengths_ = fsst.parse_table(table)
    positions, codes, _ = fsst._tokenise(fsst._Matcher(symbols_, lengths_), offsets, data)
    got_lengths = [1 if c == fsst.ESCAPE else int(lengths_[c]) for c in codes.tolist()]
    got = list(zip(positions.tolist(), codes.tolist(), got_lengths, strict=True))
    assert got == readable_tokens(table, offsets, data)


def test_longest_symbol_wins_and_segment_ends_are_respected():
    """Greedy longest match, many long symbols sharing a prefix, no token past a value."""
    words = [b"a", b"b", b"ab"] + [b"abcdefgh"[:k] for k in range(3, 9)]
    words += [b"abX" + bytes([48 + i]) for i in range(10)]  # 10 more with prefix "ab"
    syms = np.array([int.from_bytes(w, "little") for w in words], np.uint64)
    table = fsst.table_bytes(syms, np.array([len(w) for w in words], np.uint8))
    values = [b"abcdefgh" * 5, b"abcdefg", b"abX7abX7", b"ab", b"abcdefghab"]
    offsets, data = parts(values, pa.binary())
    c_off, c_data = check_round_trip(table, offsets, data)
    code_of = {w: i for i, w in enumerate(words)}
    got = [c_data[c_off[i] : c_off[i + 1]].tobytes() for i in range(len(values))]
    assert got[0] == bytes([code_of[b"abcdefgh"]]) * 5
    assert got[1] == bytes([code_of[b"abcdefg"]])  # "abcdefgh" would run past the value
    assert got[3] == bytes([code_of[b"ab"]])
    assert got[4] == bytes([code_of[b"abcdefgh"], code_of[b"ab"]])
    # "abX7" is a symbol but may not be among the long symbols tried for prefix "ab";
    # then it is "ab" + escaped "X" + escaped "7"
    assert len(got[2]) in (2, 10)


def test_round_trip_long_values_and_many_blocks(monkeypatch):
    """Values longer than a segment, and pages cut into many blocks (some threaded)."""
    monkeypatch.setattr(fsst, "BLOCK_BYTES", 1000)
    rng = np.random.default_rng(6)
    values = [" ".join(words_text(rng, int(rng.integers(1, 40)), WORDS)) for _ in range(150)]
    values += ["", "x" * 5000, "abc" * 700]
    offsets, data = parts(values)
    assert np.diff(offsets).max() > fsst.SEGMENT_BYTES
    table = fsst.build_symbol_table((offsets, data))
    check_round_trip(table, offsets, data)


def test_round_trip_offsets_not_starting_at_zero():
    rng = np.random.default_rng(7)
    offsets, data = parts(words_text(rng, 300, WORDS))
    table = fsst.build_symbol_table((offsets, data))
    check_round_trip(table, offsets[10:200], data)


def test_round_trip_with_pylance_table(pylance, tmp_path):
    """A table pylance 14.0.2 made (its own symbol order and suffix rules) encodes our data."""
    rng = np.random.default_rng(8)
    values = words_text(rng, 4000, WORDS)
    t = pa.table({"s": pa.array(values)})
    path = tmp_path / "p.lance"
    with pylance.file.LanceFileWriter(str(path), t.schema, version="2.1") as w:
        w.write_batch(t)
    ((layout,),) = layouts(path)
    node, kind = value_node(layout)
    assert kind == "mini_block_layout" and node.WhichOneof("compression") == "fsst"
    table = node.fsst.symbol_table
    assert len(table) == 2312
    offsets, data = parts(words_text(rng, 500, WORDS))
    check_round_trip(table, offsets, data)


# ----------------------------------------------------------------------------- files


def fsst_node(layout, offset_bits):
    node, kind = value_node(layout)
    assert node.WhichOneof("compression") == "fsst", node
    assert len(node.fsst.symbol_table) == 2312
    assert node.fsst.values.variable.offsets.flat.bits_per_value == offset_bits
    return kind


@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_mini_block_fsst_files_read_back(pylance, tmp_path, version):
    rng = np.random.default_rng(9)
    values = words_text(rng, 6000, WORDS)
    values[::7] = [None] * len(values[::7])
    values[3] = ""
    table = pa.table(
        {
            "s": pa.array(values, pa.string()),
            "ls": pa.array(values, pa.large_string()),
            "i": pa.array(np.arange(len(values)), pa.int64()),
        }
    )
    cols = write_and_read(pylance, tmp_path, table, version)
    for pages, bits in ((cols[0], 32), (cols[1], 64)):
        for layout in pages:
            assert fsst_node(layout, bits) == "mini_block_layout"
            assert layout.mini_block_layout.has_large_chunk == (version == "2.2")


@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_full_zip_fsst_files_read_back(pylance, tmp_path, version):
    rng = np.random.default_rng(10)
    values = [
        " ".join(words_text(rng, 30, WORDS))[: int(rng.integers(256, 3000))] for _ in range(120)
    ]
    values[5] = None
    values[6] = "é" * 300
    table = pa.table(
        {"s": pa.array(values, pa.string()), "ls": pa.array(values, pa.large_string())}
    )
    cols = write_and_read(pylance, tmp_path, table, version)
    for pages, bits in ((cols[0], 32), (cols[1], 64)):
        for layout in pages:
            assert fsst_node(layout, bits) == "full_zip_layout"
            assert layout.full_zip_layout.bits_per_offset == bits


@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_list_of_strings_with_fsst(pylance, tmp_path, version):
    rng = np.random.default_rng(11)
    items = words_text(rng, 3000, WORDS)
    lists, pos = [], 0
    while pos < len(items):
        k = int(rng.integers(0, 6))
        lists.append(items[pos : pos + k] if k != 5 else None)
        pos += max(k, 1)
    table = pa.table({"l": pa.array(lists, pa.list_(pa.string()))})
    cols = write_and_read(pylance, tmp_path, table, version)
    assert any(value_node(layout)[0].WhichOneof("compression") == "fsst" for layout in cols[0])


def test_multi_page_fsst_file(pylance, tmp_path):
    rng = np.random.default_rng(12)
    values = words_text(rng, 20000, WORDS)
    table = pa.table({"s": pa.array(values)})
    store = LocalStore(str(tmp_path))
    write_lance_file(store, "m.lance", table, version="2.2", max_page_bytes=200_000)
    pages = layouts(tmp_path / "m.lance")[0]
    assert len(pages) > 2 and all(fsst_node(p, 32) for p in pages)
    theirs = pylance.file.LanceFileReader(str(tmp_path / "m.lance")).read_all().to_table()
    assert theirs.equals(table)
    assert OurReader(store, "m.lance").read_all().equals(table)


# ----------------------------------------------------------------------------- the choice


def single_value_kind(tmp_path, table, version="2.2"):
    write_lance_file(LocalStore(str(tmp_path)), "c.lance", table, version=version)
    ((layout,),) = layouts(tmp_path / "c.lance")
    return layout, value_node(layout)[0].WhichOneof("compression")


def distinct_strings(n, width):
    return [f"{i:0{width}d}"[-width:] for i in range(n)]


@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_qualifying_page_uses_fsst(tmp_path, version):
    values = [f"item-{i:07d}-abc" for i in range(4000)]  # 16 bytes each, 64 KB
    layout, kind = single_value_kind(tmp_path, pa.table({"s": pa.array(values)}), version)
    assert kind == "fsst" and not layout.mini_block_layout.HasField("dictionary")


def test_short_strings_get_no_fsst(tmp_path):
    values = distinct_strings(20000, 4)  # max length 4 < 5, 80 KB
    table = pa.table({"s": pa.array(values)})
    assert not selection.use_fsst(table.column(0).combine_chunks())
    _, kind = single_value_kind(tmp_path, table)
    assert kind == "variable"


def test_small_pages_get_no_fsst(tmp_path):
    values = [f"item-{i:07d}-abc" for i in range(2047)]  # 16 bytes each: 32,752 < 32 KiB
    table = pa.table({"s": pa.array(values)})
    assert not selection.use_fsst(table.column(0).combine_chunks())
    _, kind = single_value_kind(tmp_path, table)
    assert kind == "variable"
    values = [f"item-{i:07d}-abc" for i in range(2048)]  # 32,768 bytes = 32 KiB
    assert selection.use_fsst(pa.array(values))


def test_binary_type_gets_no_fsst(tmp_path):
    values = [f"item-{i:07d}-abc".encode() for i in range(4000)]
    table = pa.table({"b": pa.array(values, pa.binary())})
    assert not selection.use_fsst(table.column(0).combine_chunks())
    _, kind = single_value_kind(tmp_path, table)
    assert kind == "variable"
    table = pa.table({"b": pa.array(values, pa.large_binary())})
    _, kind = single_value_kind(tmp_path, table)
    assert kind == "variable"


def test_dictionary_pages_get_no_fsst(tmp_path):
    values = [f"a fairly long category name {i % 20}" for i in range(5000)]
    layout, kind = single_value_kind(tmp_path, pa.table({"s": pa.array(values)}))
    mb = layout.mini_block_layout
    assert mb.HasField("dictionary") and kind != "fsst"
    assert mb.dictionary.WhichOneof("compression") != "fsst"


def test_incompressible_page_stays_variable(tmp_path, monkeypatch):
    # every byte value equally likely: no symbol saves anything
    rng = np.random.default_rng(13)
    raw = rng.integers(0, 256, 200_000).astype(np.uint8)
    offsets = np.arange(0, len(raw) + 1, 40)
    assert fsst.compress_page(offsets, raw) is None
    # with a table that cannot shrink anything (no symbols: every byte escaped), the
    # writer keeps qualifying mini-block and full-zip pages plain
    empty = fsst.table_bytes(np.zeros(0, np.uint64), np.zeros(0, np.uint8))
    monkeypatch.setattr(fsst, "build_symbol_table", lambda values: empty)
    values = [f"item-{i:07d}-abc" for i in range(4000)]
    assert selection.use_fsst(pa.array(values))
    _, kind = single_value_kind(tmp_path, pa.table({"s": pa.array(values)}))
    assert kind == "variable"
    wide = [v * 20 for v in values[:200]]  # 320 bytes each: full-zip
    layout, kind = single_value_kind(tmp_path, pa.table({"s": pa.array(wide)}))
    assert layout.WhichOneof("layout") == "full_zip_layout" and kind == "variable"


def test_full_zip_below_threshold_gets_no_fsst(tmp_path):
    table = pa.table({"s": pa.array(["w" * 300, None, "v" * 256])})  # 556 bytes
    layout, kind = single_value_kind(tmp_path, table, "2.1")
    assert layout.WhichOneof("layout") == "full_zip_layout" and kind == "variable"


def test_huge_values_keep_per_value_zstd(tmp_path):
    table = pa.table({"s": pa.array(["q" * 50_000, "r" * 10])})
    layout, kind = single_value_kind(tmp_path, table)
    assert layout.WhichOneof("layout") == "full_zip_layout" and kind == "general"


# ----------------------------------------------------------------------------- long run


@pytest.mark.slow
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**32 - 1),
    alphabet=st.sampled_from(["ascii", "words", "mixed", "wide"]),
    rows=st.integers(2000, 12000),
    null_every=st.integers(0, 9),
    large=st.booleans(),
)
def test_random_fsst_pages_read_back_by_pylance_long(
    pylance, tmp_path_factory, seed, alphabet, rows, null_every, large
):
    rng = np.random.default_rng(seed)
    if alphabet == "words":
        values = words_text(rng, rows, WORDS)
    else:
        pool = {
            "ascii": [chr(c) for c in range(32, 127)],
            "mixed": list("abcdefghij ") + ["é", "ß", "ω", "中", "🙂"],
            "wide": [chr(c) for c in range(0x400, 0x4FF)],
        }[alphabet]
        lengths = rng.integers(0, 40 if alphabet != "wide" else 400, rows)
        picks = rng.integers(0, len(pool), int(lengths.sum()))
        text = "".join(pool[i] for i in picks)
        cut = np.concatenate([[0], np.cumsum(lengths)])
        values = [text[cut[i] : cut[i + 1]] for i in range(rows)]
    if null_every:
        values[::null_every] = [None] * len(values[::null_every])
    table = pa.table({"s": pa.array(values, pa.large_string() if large else pa.string())})
    for version in ("2.1", "2.2"):
        write_and_read(pylance, tmp_path_factory.mktemp("f"), table, version)
