"""Large values decode in memory proportional to the output (peer corpus family N1).

Upstream's ``test_writer_maintains_order`` leaves 570-670 MB 2.2 files of 1-5 KiB strings:
one full-zip FSST page each. The reader used to gather the page's values through int64
indices of every byte and to decode FSST with int64 arrays of every byte (5 GiB asked for one
file); it now gathers in bounded pieces (:func:`chunks.gather_ranges`), hands full-zip values
on where they lie (:class:`values.Spans`) and decodes FSST piece by piece
(:func:`fsst.decode`). Each fast path is checked equal to its readable definition here, with
the pieces forced small so that a few MB exercise them:

* ``gather_ranges`` against ``gather_ranges_readable`` (slicing), ranges in any order;
* ``Spans.bytes`` against the values laid back to back;
* FSST from ``Spans`` or a ``Var``, in pieces or whole, on valid pages (empty values, escapes,
  runs of escaped 255 bytes) and on arbitrary bytes (the same refusal);
* pylance 14.0.2's files of long strings with nulls, empty and non-ASCII strings: read in
  pieces, on threads or not, as pylance reads them, with the decode's numpy allocations a
  small multiple of the decoded bytes (``tracemalloc``; no GB files in the default run:
  ``tools/bench_big_strings.py`` measures those).
"""

from __future__ import annotations

import tracemalloc

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from reference_impl.errors import FormatError
from reference_impl.file.encodings.v2_1 import chunks, fsst
from reference_impl.file.encodings.v2_1.values import Spans, Var
from reference_impl.file.reader import LanceFileReader
from reference_impl.io.local import LocalStore

# --------------------------------------------------------------------------- gather_ranges


@st.composite
def _ranges(draw):
    n = draw(st.integers(0, 300))
    data = np.frombuffer(draw(st.binary(min_size=n, max_size=n)), np.uint8)
    pairs = draw(st.lists(st.integers(0, n).flatmap(
        lambda s: st.tuples(st.just(s), st.integers(0, n - s))), max_size=40))
    starts = np.array([p[0] for p in pairs], np.int64)
    lens = np.array([p[1] for p in pairs], np.int64)
    return data, starts, lens


@given(_ranges(), st.integers(1, 64))
@example((np.zeros(0, np.uint8), np.zeros(0, np.int64), np.zeros(0, np.int64)), 1)
@example((np.arange(10, dtype=np.uint8), np.array([0, 9, 3]), np.array([10, 1, 0])), 4)
def test_gather_ranges_in_pieces_equals_slicing(case, piece):
    data, starts, lens = case
    got = chunks.gather_ranges(data, starts, lens, piece=piece)
    assert np.array_equal(got, chunks.gather_ranges_readable(data, starts, lens))
    assert got.dtype == np.uint8


@pytest.mark.parametrize("start,length", [(-1, 2), (5, 6), (0, -1), (2**62, 1), (2**62, 2**62),
                                          (2**63 - 1, 1), (1, 2**63 - 1)])
def test_gather_ranges_refuses_a_range_outside_the_data(start, length):
    with pytest.raises(ValueError):
        chunks.gather_ranges(np.zeros(10, np.uint8), np.array([0, start]), np.array([1, length]))


# --------------------------------------------------------------------------- Spans


@st.composite
def _spans(draw):
    """Values laid apart in one buffer (random gaps), as full-zip lays them."""
    vals = draw(st.lists(st.binary(max_size=20), max_size=30))
    buf, starts = bytearray(), []
    for v in vals:
        buf += bytes([0xAB]) * draw(st.integers(0, 5))
        starts.append(len(buf))
        buf += v
    buf += b"\xcd" * draw(st.integers(0, 3))
    off = np.zeros(len(vals) + 1, np.int64)
    np.cumsum([len(v) for v in vals], out=off[1:])
    return vals, Spans(off, np.array(starts, np.int64), np.frombuffer(bytes(buf), np.uint8))


@given(_spans(), st.data())
def test_spans_bytes_are_the_values_laid_back_to_back(case, data):
    vals, spans = case
    joined = b"".join(vals)
    assert bytes(spans.to_var().data) == joined
    assert np.array_equal(spans.to_var().offsets, spans.offsets)
    a = data.draw(st.integers(0, len(joined)))
    b = data.draw(st.integers(a, len(joined)))
    assert bytes(spans.bytes(a, b)) == joined[a:b]
    assert bytes(Var(spans.offsets, np.frombuffer(joined, np.uint8)).bytes(a, b)) == joined[a:b]


# --------------------------------------------------------------------------- FSST in pieces


def _table_bytes(symbols: list) -> bytes:
    header = len(symbols) | (1 << 24) | (0x46535354 << 32)
    return header.to_bytes(8, "little") + b"".join(s.ljust(8, b"\0") for s in symbols) + bytes(
        len(s) for s in symbols)


_symbols = st.lists(st.binary(min_size=1, max_size=8), min_size=1, max_size=12)


@st.composite
def _fsst_values(draw, n_symbols: int):
    """Valid compressed values: codes, escaped literals (255 among them: runs of 255 bytes),
    empty values."""
    token = st.one_of(st.integers(0, n_symbols - 1).map(lambda c: [c]),
                      st.sampled_from([0, 7, 254, 255]).map(lambda b: [255, b]),
                      st.integers(0, 255).map(lambda b: [255, b]))
    return draw(st.lists(st.lists(token, max_size=14).map(lambda ts: bytes(sum(ts, []))),
                         max_size=25))


@st.composite
def _fsst_page(draw):
    symbols = draw(_symbols)
    return _table_bytes(symbols), draw(_fsst_values(len(symbols)))


def _laid_apart(values: list, gap: int) -> Spans:
    buf, starts = bytearray(), []
    for v in values:
        buf += b"\xff" * gap  # 255 bytes between values: must never be read as escapes
        starts.append(len(buf))
        buf += v
    off = np.zeros(len(values) + 1, np.int64)
    np.cumsum([len(v) for v in values], out=off[1:])
    return Spans(off, np.array(starts, np.int64), np.frombuffer(bytes(buf), np.uint8))


@given(_fsst_page(), st.integers(1, 30), st.booleans(), st.integers(0, 3))
@example((_table_bytes([b"ab"]), [b"\xff\xff" * 6, b"", b"\x00\xff\xff\xff\x07\x00"]), 1, False, 1)
@example((_table_bytes([b"ab"]), [b"\xff\xff\xff\xff\xff\x07"]), 2, True, 0)
def test_fsst_from_spans_in_pieces_equals_the_token_decoder(page, piece, saturated, gap):
    table, values = page
    spans = _laid_apart(values, gap)
    whole = fsst.decode(table, spans.to_var(), piece=1 << 40)
    got = fsst.decode(table, spans, piece=piece, saturated=saturated)
    assert np.array_equal(got.offsets, whole.offsets) and bytes(got.data) == bytes(whole.data)
    for i, v in enumerate(values):
        assert bytes(got.data[got.offsets[i]:got.offsets[i + 1]]) == fsst.decode_value(table, v)


@settings(max_examples=max(50, settings.default.max_examples))
@given(_symbols, st.lists(st.binary(max_size=16).map(
    lambda b: bytes(x if x % 3 else 255 for x in b)), max_size=12), st.integers(1, 9),
    st.booleans())
@example([b"a"], [b"\xff"], 1, True)  # an escape at the end of the only value
@example([b"a"], [b"\x00\xff", b"\x00"], 1, False)  # ... of the first value, cut after it
@example([b"a"], [b"\xff\xff\xff\x00\x05"], 2, True)  # a code outside the table after a run
def test_fsst_pieces_refuse_what_the_whole_page_refuses(symbols, values, piece, saturated):
    """On any bytes (hostile pages included), the piecewise decoder refuses exactly the pages
    the whole-page decoder refuses (escape at the end of a value, codes outside the table)
    and otherwise decodes the same values."""
    table = _table_bytes(symbols)
    spans = _laid_apart(values, 1)
    try:
        whole = fsst.decode(table, spans.to_var(), piece=1 << 40)
    except FormatError as exc:
        assert exc.rule == "ENC-030"
        with pytest.raises(FormatError) as err:
            fsst.decode(table, spans, piece=piece, saturated=saturated)
        assert err.value.rule == "ENC-030"
        return
    got = fsst.decode(table, spans, piece=piece, saturated=saturated)
    assert np.array_equal(got.offsets, whole.offsets) and bytes(got.data) == bytes(whole.data)


def test_a_long_run_of_escaped_255_bytes_is_cut_between_tokens():
    """One value of 100,000 escaped 255 bytes (two bytes each), cut every 7 bytes: every cut
    must fall between an escape and the next escape, never between an escape and its literal."""
    table = _table_bytes([b"x"])
    comp = Var(np.array([0, 200_000], np.int64), np.full(200_000, 255, np.uint8))
    got = fsst.decode(table, comp, piece=7, saturated=True)
    assert got.offsets.tolist() == [0, 100_000] and bytes(got.data) == b"\xff" * 100_000
    cuts = fsst._piece_cuts(comp, comp.offsets, 7)
    assert all(c % 2 == 0 for c in cuts)


# --------------------------------------------------------------------------- whole files


def _long_strings(n: int) -> pa.Table:
    """Long strings as upstream's test writes them (digits repeated), with nulls, empty and
    non-ASCII strings between them: a full-zip FSST page of a few MB in 2.1 and 2.2."""
    vals = []
    for i in range(n):
        r = i % 10
        vals.append(None if r == 0 else "" if r == 1 else ("é" + str(i)) * (50 + i % 300)
                    if r == 2 else f"{i}" * (300 + (i * 7) % 700))
    return pa.table({"s": pa.array(vals), "i": pa.array(range(n), pa.int64())})


@pytest.fixture(scope="module")
def long_string_files(pylance, tmp_path_factory):
    from lance.file import LanceFileReader as PyReader
    from lance.file import LanceFileWriter

    from reference_impl.file.container import read_container
    from reference_impl.file.page import page_layout

    d = tmp_path_factory.mktemp("long_strings")
    table = _long_strings(3000)
    out = {}
    for version in ("2.1", "2.2"):
        path = d / f"s{version}.lance"
        with LanceFileWriter(str(path), version=version) as w:
            w.write_batch(table)
        c = read_container(LocalStore(str(d)), path.name)
        lay = page_layout(c.columns[0].pages[0], path=path.name)
        assert lay.WhichOneof("layout") == "full_zip_layout"  # what this test is about
        assert lay.full_zip_layout.value_compression.WhichOneof("compression") == "fsst"
        out[version] = (path, PyReader(str(path)).read_all().to_table())
    return out


def _read(path) -> pa.Table:
    return LanceFileReader(LocalStore(str(path.parent)), path.name).read_all()


@pytest.mark.parametrize("version", ["2.1", "2.2"])
@pytest.mark.parametrize("threads", ["1", "2"])
def test_long_strings_read_in_pieces_as_pylance_reads_them(long_string_files, monkeypatch,
                                                          version, threads):
    path, theirs = long_string_files[version]
    whole = _read(path)
    assert whole.equals(theirs)
    monkeypatch.setenv("LANCE_CONFORMANCE_DECODE_THREADS", threads)
    monkeypatch.setattr(fsst, "PIECE_TOKENS", 4096)  # ~1,500 pieces of the page
    monkeypatch.setattr(chunks, "GATHER_PIECE", 1000)
    assert _read(path).equals(theirs)


@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_long_strings_decode_in_memory_proportional_to_the_output(long_string_files,
                                                                  monkeypatch, version):
    """The decode's numpy allocations (``tracemalloc`` sees numpy's, not Arrow's pool) stay
    within twice the decoded bytes plus a few pieces' worth (6.5-7.2 MB for 5.3 MB decoded);
    the int64 indices of every byte it used to build peaked at 250 MB on the 2.1 file."""
    path, theirs = long_string_files[version]
    decoded = theirs.column("s").combine_chunks().buffers()[2].size
    page = path.stat().st_size
    monkeypatch.setenv("LANCE_CONFORMANCE_DECODE_THREADS", "1")
    monkeypatch.setattr(fsst, "PIECE_TOKENS", 1 << 16)
    monkeypatch.setattr(chunks, "GATHER_PIECE", 1 << 16)
    _read(path)  # whatever the first read imports is not the decode's
    tracemalloc.start()
    try:
        got = _read(path)
        _current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert got.equals(theirs)
    assert peak < 2 * decoded + 4 * (1 << 20), (peak, decoded, page)
