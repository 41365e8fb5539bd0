"""The writer's fast paths give exactly the bytes of the readable encoders beside them.

Each vectorised encoder keeps its readable counterpart (which restates FILE-ENCODINGS) and is
checked byte for byte against it on generated inputs:

* :func:`bitpacking.fastlanes_pack_fast` against :func:`bitpacking.fastlanes_pack`;
* :func:`bitpacking.out_of_line_pack_many_fast` (rep/def levels of all chunks of a page)
  against :func:`bitpacking.out_of_line_pack_many` and the one-range
  :func:`bitpacking.out_of_line_pack`;
* the value encoders' ``chunk_pieces`` (all chunks at once) against their ``chunk``;
* :func:`repdef.shred` with the fast list expansion against the readable one;
* :func:`mini_block.encode_mini_block_fast` against :func:`mini_block.encode_mini_block`;
* whole files written with every fast path against files written with the readable paths.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conformance.suite.file.test_file_writer import gen_array, tables, types
from reference_impl.file.encode.v2_1 import bitpacking, column, mini_block, packed_struct, repdef
from reference_impl.file.encode.v2_1.flat import FlatValues
from reference_impl.file.encode.v2_1.fsst import FsstValues
from reference_impl.file.encode.v2_1.variable import VariableValues
from reference_impl.file.writer import write_lance_file
from reference_impl.io.memory import MemoryStore

_T = st.sampled_from([8, 16, 32, 64])


@given(_T, st.data(), st.integers(1, 4), st.integers(0, 2**32 - 1))
def test_fastlanes_pack_fast_equals_the_row_loop(T, data, nblocks, seed):
    W = data.draw(st.integers(0, T))
    rng = np.random.default_rng(seed)
    dt = bitpacking.UINT[T]
    blocks = rng.integers(0, 2**T, (nblocks, 1024), dtype=np.uint64).astype(dt)
    if data.draw(st.booleans()) and W < T:
        blocks &= dt((1 << W) - 1)  # in range (as the encoders call it), or not: masked alike
    before = blocks.copy()
    want = bitpacking.fastlanes_pack(blocks, T, W)
    got = bitpacking.fastlanes_pack_fast(blocks, T, W)
    assert got.dtype == want.dtype and np.array_equal(got, want)
    assert np.array_equal(blocks, before)  # the input is never written


@st.composite
def _level_ranges(draw):
    W = draw(st.integers(0, 16))
    lengths = draw(
        st.lists(
            st.sampled_from([0, 1, 7, 100, 900, 1023, 1024, 1025, 2100, 3000]),
            min_size=1,
            max_size=8,
        )
    )
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    total = sum(lengths)
    values = rng.integers(0, 1 << W, total).astype(np.uint16) if W else np.zeros(total, np.uint16)
    ends = np.cumsum(lengths)
    return values, np.stack([ends - lengths, ends], axis=1), W


@given(_level_ranges())
def test_levels_of_all_chunks_packed_fast_equal_the_readable_packing(case):
    values, bounds, W = case
    want = bitpacking.out_of_line_pack_many(values, bounds, 16, W)
    sizes, pieces = bitpacking.out_of_line_pack_many_fast(values, bounds, 16, W)
    assert [b"".join(bytes(p) for p in ps) for ps in pieces] == want
    assert sizes.tolist() == [len(w) for w in want]
    assert want == [bitpacking.out_of_line_pack(values[a:b], 16, W) for a, b in bounds]


def _plan(draw, n: int, max_chunk: int) -> tuple[np.ndarray, np.ndarray]:
    """Chunk starts/counts covering n values: powers of two up to max_chunk, the rest last."""
    counts, start = [], 0
    while start < n:
        c = min(2 ** draw(st.integers(1, max(1, max_chunk.bit_length() - 1))), n - start)
        counts.append(c)
        start += c
    counts = np.array(counts, np.int64)
    return np.cumsum(counts) - counts, counts


def _assert_pieces_equal_chunks(values, starts, counts):
    got = values.chunk_pieces(starts, counts)
    assert len(got) == values.num_buffers
    for k, (sizes, pieces) in enumerate(got):
        for i, (s, c) in enumerate(zip(starts.tolist(), counts.tolist(), strict=True)):
            want = values.chunk(s, c)[k]
            joined = b"".join(bytes(p) for p in pieces[i])
            assert joined == want and int(sizes[i]) == len(want)


_ints = st.sampled_from([pa.int8(), pa.uint16(), pa.int32(), pa.int64(), pa.uint64()])


@settings(max_examples=40, deadline=None)
@given(
    _ints,
    st.sampled_from([1, 5, 1023, 1024, 1025, 3000, 5000]),
    st.integers(0, 2**32 - 1),
    st.sampled_from([0, 3, 20, 64]),
    st.data(),
)
def test_bitpacked_chunk_pieces_equal_chunks(t, n, seed, bits, data):
    rng = np.random.default_rng(seed)
    width = t.bit_width
    top = min(bits, width) if bits else 1
    raw = (
        rng.integers(0, 1 << top, n, dtype=np.uint64)
        if top < 64
        else rng.integers(0, 2**63, n, dtype=np.uint64)
    )
    arr = pa.array(raw.astype(np.dtype(f"u{width // 8}")).view(t.to_pandas_dtype()), t)
    values = bitpacking.InlineBitpackedValues(arr)
    starts, counts = _plan(data.draw, n, 1024)
    _assert_pieces_equal_chunks(values, starts, counts)


@settings(max_examples=40, deadline=None)
@given(
    st.sampled_from([pa.bool_(), pa.int16(), pa.float32(), pa.float64(), pa.decimal128(10, 2)]),
    st.sampled_from([1, 9, 100, 4097]),
    st.integers(0, 2**32 - 1),
    st.data(),
)
def test_flat_chunk_pieces_equal_chunks(t, n, seed, data):
    arr = gen_array(t, n, np.random.default_rng(seed), 0.2, False)
    values = FlatValues(arr)
    starts, counts = _plan(data.draw, n, values.max_chunk_values)
    _assert_pieces_equal_chunks(values, starts, counts)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.one_of(st.none(), st.text(max_size=30)), min_size=1, max_size=400),
    st.sampled_from([pa.string(), pa.large_string(), pa.binary()]),
    st.data(),
)
def test_variable_and_fsst_chunk_pieces_equal_chunks(strings, t, data):
    arr = pa.array(
        [None if s is None else (s.encode() if t == pa.binary() else s) for s in strings], t
    )
    starts, counts = _plan(data.draw, len(arr), 4096)
    _assert_pieces_equal_chunks(VariableValues(arr), starts, counts)
    if pa.types.is_binary(t):
        return
    fsst_values = FsstValues.try_encode(pa.array([s or "" for s in strings] * 50, t))
    if fsst_values is not None:
        starts, counts = _plan(data.draw, len(strings) * 50, 4096)
        _assert_pieces_equal_chunks(fsst_values, starts, counts)


def _same_shredded(a: repdef.Shredded, b: repdef.Shredded) -> None:
    for x, y in ((a.rep, b.rep), (a.deff, b.deff)):
        assert (x is None) == (y is None)
        if x is not None:
            assert x.dtype == y.dtype and np.array_equal(x, y)
    assert a.layers == b.layers and np.array_equal(a.visible, b.visible)
    assert a.values.equals(b.values)
    assert (a.num_rows, a.max_rep, a.max_visible_def) == (b.num_rows, b.max_rep, b.max_visible_def)


@st.composite
def _nested_arrays(draw):
    t = draw(types())
    n = draw(st.sampled_from([0, 1, 5, 60, 300]))
    arr = gen_array(
        t,
        n,
        np.random.default_rng(draw(st.integers(0, 2**32 - 1))),
        draw(st.sampled_from([0.0, 0.2, 0.5, 1.0])),
        draw(st.booleans()),
    )
    if n > 2 and draw(st.booleans()):
        arr = arr.slice(1, n - 2)
    return arr


@settings(max_examples=60, deadline=None)
@given(_nested_arrays())
def test_shred_fast_list_expansion_equals_the_readable_one(arr):
    for path in repdef.leaf_paths(arr.type):
        _same_shredded(repdef.shred(arr, path, fast=True), repdef.shred(arr, path, fast=False))


@pytest.mark.parametrize("version", ["2.1", "2.2"])
@settings(max_examples=60, deadline=None)
@given(arr=_nested_arrays())
def test_mini_block_fast_equals_the_readable_page(version, arr):
    for path in repdef.leaf_paths(arr.type):
        sh = repdef.shred(arr, path)
        if len(sh.values) == 0 or len(sh.values) == sh.values.null_count:
            continue
        if pa.types.is_struct(sh.values.type) or pa.types.is_dictionary(sh.values.type):
            continue
        if column.max_value_bytes(sh.values) >= 256:
            continue
        want = mini_block.encode_mini_block(sh, column.value_encoder(sh.values), version)
        got = mini_block.encode_mini_block_fast(sh, column.value_encoder(sh.values), version)
        assert [bytes(b) for b in got[0]] == [bytes(b) for b in want[0]]
        assert got[1] == want[1]


def _write(table: pa.Table, version: str) -> bytes:
    store = MemoryStore()
    write_lance_file(store, "f.lance", table, version=version)
    return bytes(store.get("f.lance"))


def _readable(mp: pytest.MonkeyPatch) -> None:
    mp.setattr(column, "encode_mini_block_fast", mini_block.encode_mini_block)
    mp.setattr(packed_struct, "encode_mini_block_fast", mini_block.encode_mini_block)
    readable_shred = repdef.shred
    mp.setattr(column, "shred", lambda arr, path: readable_shred(arr, path, fast=False))


@pytest.mark.parametrize("version", ["2.1", "2.2"])
@settings(max_examples=30, deadline=None)
@given(table=tables())
def test_files_written_fast_equal_files_written_readably(version, table):
    fast = _write(table, version)
    with pytest.MonkeyPatch.context() as mp:
        _readable(mp)
        assert _write(table, version) == fast


@pytest.mark.parametrize("version", ["2.1", "2.2"])
@pytest.mark.parametrize("kind", ["lists", "nullable", "mixed"])
def test_large_pages_written_fast_equal_readably(version, kind):
    """Pages of many chunks (and, for lists, several pages of 65,536 levels)."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[3] / "tools" / "bench_dataset.py"
    spec = importlib.util.spec_from_file_location("bench_dataset", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    table = bench.make_table(kind, 70_000 if kind != "mixed" else 9_000)
    fast = _write(table, version)
    with pytest.MonkeyPatch.context() as mp:
        _readable(mp)
        assert _write(table, version) == fast


_dict_types = st.sampled_from(
    [pa.string(), pa.large_binary(), pa.int64(), pa.float64(), pa.int32(), pa.decimal128(20, 3)]
)


@settings(max_examples=80, deadline=None)
@given(
    _dict_types,
    st.sampled_from([100, 150, 1000, 5000]),
    st.sampled_from([1, 3, 40, 300, 10**9]),
    st.sampled_from([0.0, 0.1, 0.9]),
    st.integers(0, 2**32 - 1),
    st.sampled_from(["2.1", "2.2"]),
)
def test_dictionary_test_with_the_distinct_bound_equals_the_exact_count(
    t, n, cardinality, null_p, seed, version
):
    """``distinct_lower_bound`` never exceeds Arrow's count (exact where it says so), the
    structural dictionary test decides the same with it as with ``count_distinct``, and the
    2.2 constant pre-check probes the same values without copying the valid ones out."""
    import pyarrow.compute as pc

    from reference_impl.file import selection

    rng = np.random.default_rng(seed)
    pool = gen_array(t, min(cardinality, n), rng, 0.0, False)
    arr = pool.take(pa.array(rng.integers(0, len(pool), n)))
    mask = rng.random(n) < null_p
    if mask.any():
        arr = pc.if_else(pa.array(mask), pa.scalar(None, t), arr)
    exact = pc.count_distinct(arr, mode="only_valid").as_py()
    for limit in (None, 0, 10, n // 2):
        bound = selection.distinct_lower_bound(arr, limit)
        if bound is not None:
            assert bound[0] <= exact and (not bound[1] or bound[0] == exact)
    assert selection.maybe_constant(arr, fast=True) == selection.maybe_constant(arr, fast=False)
    raw = column.max_value_bytes(arr) * n
    for divisor, ratio in ((2, 0.8), (1, 10.0)):
        kw = dict(divisor=divisor, size_ratio=ratio)
        assert selection.use_dictionary_v2_1(arr, version, raw, fast=True, **kw) == (
            selection.use_dictionary_v2_1(arr, version, raw, fast=False, **kw)
        )


def _generations_run_to_the_end(values) -> bytes:
    """build_symbol_table without the early stop: every one of GENERATIONS generations."""
    from reference_impl.file.encode.v2_1 import fsst

    offsets, data = fsst._as_parts(values)
    s_off, s_data = fsst._sample(offsets, data)
    symbols, lengths = np.zeros(0, np.uint64), np.zeros(0, np.uint8)
    if len(s_data):
        for _ in range(fsst.GENERATIONS):
            tokens = fsst._tokenise(fsst._Matcher(symbols, lengths), s_off, s_data)
            cand = fsst._candidates(symbols, lengths, *tokens, s_data)
            symbols, lengths = fsst._select(*cand, fast=False)
    return fsst.table_bytes(symbols, lengths)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.text(alphabet="0123456789abcdef", max_size=24), min_size=1, max_size=300),
    st.lists(st.text(max_size=40), max_size=300),
    st.integers(1, 40),
)
def test_symbol_table_training_stopped_at_a_fixed_point_equals_all_generations(hexes, texts, k):
    """The training stops when a generation returns its own table (a fixed point), and
    the table of at most 7-byte candidates is merged with a single-key sort: both give the
    table all generations with the two-key lexsort would."""
    from reference_impl.file.encode.v2_1 import fsst

    for values in (hexes * k, texts * k, hexes + texts):
        arr = pa.array(values, pa.string())
        assert fsst.build_symbol_table(arr) == _generations_run_to_the_end(arr)


@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_dictionary_and_constant_tests_tell_floats_apart_by_their_bits(version):
    """Arrow's count_distinct tells 0.0 from -0.0 and NaN payloads apart (their bits); the
    fast tests compare raw words and must agree, with and without nulls."""
    from reference_impl.file import selection

    nans = np.array([0x7FF8000000000000, 0x7FF8000000000001, 0xFFF8000000000000], np.uint64)
    specials = np.concatenate([np.array([0.0, -0.0, 1.5]), nans.view(np.float64)])
    rng = np.random.default_rng(5)
    for pool in (specials, specials[:2], specials[3:], specials[:1], nans[:1].view(np.float64)):
        values = pool[rng.integers(0, len(pool), 1000)]
        for mask in (None, rng.random(1000) < 0.3):
            arr = pa.array(values, pa.float64(), mask=mask)
            raw = 8 * len(arr)
            assert selection.use_dictionary_v2_1(arr, version, raw, fast=True) == (
                selection.use_dictionary_v2_1(arr, version, raw, fast=False)
            )
            assert selection.maybe_constant(arr, fast=True) == selection.maybe_constant(
                arr, fast=False
            )
