"""The compiled kernels (``reference_impl/file/kernels``, issue 37) equal their readable twins.

Each kernel is run against the readable function it replaces, on generated inputs and on
damaged ones: the same output, or the same refusal (error type and rule id). The readable
path is forced with ``LANCE_CONFORMANCE_KERNELS=0`` (:func:`readable`), which is what a kit
without numba runs. Failing examples ever found are kept as ``@example``. Then whole files:
the golden fixtures and a census of Arrow types written by pylance 14.0.2 at every storage
version read identically both ways, and a subprocess runs the file-format tests with the
kernels switched off, so the ordinary test command exercises both paths.
"""

from __future__ import annotations

import contextlib
import os
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from reference_impl.errors import FormatError
from reference_impl.file import kernels
from reference_impl.file.encode.v2_1 import fsst as fsst_enc
from reference_impl.file.encodings.v2_1 import bitpacking, chunks, fsst
from reference_impl.file.encodings.v2_1.values import Spans, Var

REPO = Path(__file__).resolve().parents[3]

needs_kernels = pytest.mark.skipif(not kernels.available(),
                                   reason="numba (the kernels extra) is not installed")


@pytest.fixture(scope="module", autouse=True)
def kernels_on_small_inputs():
    """Every input goes to the kernels here, however small (``kernels.MIN_WORK`` keeps small
    ones on the readable path in ordinary runs)."""
    before = kernels.MIN_WORK
    kernels.MIN_WORK = 0
    yield
    kernels.MIN_WORK = before


@contextlib.contextmanager
def readable():
    """Run the block on the readable path (as a kit without numba does)."""
    before = os.environ.get(kernels.ENV)
    os.environ[kernels.ENV] = "0"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(kernels.ENV, None)
        else:
            os.environ[kernels.ENV] = before


def both(fn):
    """``fn()`` on the kernel path and on the readable path: ``(outcome, outcome)``, each
    ``("ok", value)`` or ``("refused", error type, rule id)``."""
    def run():
        try:
            return ("ok", fn())
        except FormatError as e:
            return ("refused", "FormatError", e.rule)
        except ValueError as e:
            return ("refused", "ValueError", str(e))
    assert kernels.enabled()
    fast = run()
    with readable():
        slow = run()
    return fast, slow


def test_the_switch_turns_kernels_off():
    with readable():
        assert not kernels.enabled()
        assert kernels.kernel("fsst_decode") is None
    if kernels.available():
        assert kernels.enabled() and kernels.kernel("fsst_decode") is not None


# --------------------------------------------------------------------------- FSST decode


def _table(lengths: list[int], seed: int) -> bytes:
    rng = np.random.default_rng(seed)
    n = len(lengths)
    header = n | (1 << 24) | (0x46535354 << 32)
    syms = rng.integers(0, 256, (n, 8), dtype=np.uint8)
    return struct.pack("<Q", header) + syms.tobytes() + bytes(lengths) + bytes(2312 - 8 - 9 * n)


def _same_var(a: Var, b: Var) -> bool:
    return (np.array_equal(np.asarray(a.offsets) - a.offsets[0], np.asarray(b.offsets) - b.offsets[0])
            and bytes(a.data[a.offsets[0]:a.offsets[-1]]) == bytes(b.data[b.offsets[0]:b.offsets[-1]]))


fsst_cases = st.tuples(
    st.lists(st.integers(1, 8), min_size=0, max_size=255),  # symbol lengths
    st.lists(st.binary(max_size=40), max_size=60),  # compressed values (any bytes: damaged too)
    st.integers(0, 2**32 - 1),  # symbol bytes
    st.booleans(),  # as Spans (a full-zip page) rather than Var
)


@needs_kernels
@given(fsst_cases)
@example(([3, 1], [b"\x00\x01", b"\xff"], 0, False))  # escape ending a value
@example(([3, 1], [b"\x00\x05"], 0, False))  # code outside the table
@example(([2] * 255, [b"\xff\xff\xff\xff\x00", b"", b"\xfe\xff\x41"], 1, True))  # runs of 255
@example(([1], [b"\x00" * 3000] * 3, 2, False))  # beyond one 8-byte tail
def test_fsst_decode_kernel_equals_readable(case):
    lengths, values, seed, spans = case
    table = _table(lengths, seed)
    offs = np.zeros(len(values) + 1, np.int64)
    np.cumsum([len(v) for v in values], out=offs[1:])
    data = np.frombuffer(b"".join(values), np.uint8)
    if spans:  # every value 3 bytes apart in a zipped stream
        starts = offs[:-1] + 3 * np.arange(len(values))
        zipped = np.zeros(int(offs[-1]) + 3 * len(values) + 1, np.uint8)
        for s, v in zip(starts.tolist(), values, strict=True):
            zipped[s:s + len(v)] = np.frombuffer(v, np.uint8)
        comp = Spans(offs, starts, zipped)
    else:
        comp = Var(offs, data)
    for sat in (True, False):
        fast, slow = both(lambda sat=sat: fsst.decode(table, comp, saturated=sat))
        if fast[0] == "ok":
            assert slow[0] == "ok" and _same_var(fast[1], slow[1])
        else:
            assert fast == slow
    # and the definition, value by value
    if fast[0] == "ok":
        got = fast[1]
        for i, v in enumerate(values):
            assert bytes(got.data[got.offsets[i]:got.offsets[i + 1]]) == fsst.decode_value(table, v)
    else:
        with pytest.raises(FormatError) as e:
            for v in values:
                fsst.decode_value(table, v)
        assert e.value.rule == fast[2]


@needs_kernels
def test_fsst_decode_kernel_splits_a_large_page_over_threads(monkeypatch):
    """A page of more than two pieces is expanded in value ranges on the decode threads:
    the same bytes as one expansion and as the readable decoder (whether the bounded output
    is kept or copied to its size), and the same refusal of a bad token in a later piece."""
    from reference_impl.file.kernels import fsst as kfsst

    monkeypatch.setattr(kfsst, "PIECE_BYTES", 64)
    rng = np.random.default_rng(5)
    lengths = rng.integers(1, 9, 200).tolist()
    table = _table(lengths, 5)
    values = [bytes(rng.integers(0, 200, int(rng.integers(0, 30)), dtype=np.uint8)) for _ in range(500)]
    values[:3] = [b"", b"", b""]  # empty values before the first cut (once left unsized)
    values[100:120] = [b""] * 20
    offs = np.zeros(len(values) + 1, np.int64)
    np.cumsum([len(v) for v in values], out=offs[1:])
    comp = Var(offs, np.frombuffer(b"".join(values), np.uint8))
    split = fsst.decode(table, comp, saturated=False)
    whole = fsst.decode(table, comp, saturated=True)
    with readable():
        ref = fsst.decode(table, comp)
    assert _same_var(split, whole) and _same_var(split, ref)
    # one piece whose bound (8 bytes a code) is loose: copied out to its size, the same bytes
    monkeypatch.setattr(kfsst, "SLACK_BYTES", 0)
    copied = fsst.decode(table, comp, saturated=True)
    assert _same_var(copied, ref) and len(copied.data) == int(copied.offsets[-1])
    # a damaged value in a later piece: the same refusal, split or not, as the readable path
    bad = np.frombuffer(b"".join(values), np.uint8).copy()
    bad[int(offs[400])] = 250  # a code outside the 200-symbol table
    comp = Var(offs, bad)
    for sat in (False, True):
        fast, slow = both(lambda sat=sat: fsst.decode(table, comp, saturated=sat))
        assert fast == slow == ("refused", "FormatError", "ENC-030")


# --------------------------------------------------------------------------- bit-unpacking


@needs_kernels
@given(st.sampled_from([8, 16, 32, 64]), st.integers(0, 64), st.integers(0, 3), st.integers(0, 2**32 - 1))
@example(64, 64, 1, 0)
@example(8, 3, 2, 1)
def test_unpack_blocks_kernel_equals_readable(T, W, k, seed):
    W = min(W, T)
    dt = bitpacking.UINT[T]
    lanes = 1024 // T
    rng = np.random.default_rng(seed)
    words = rng.integers(0, 256, k * W * lanes * (T // 8), dtype=np.uint8).view(dt).reshape(k, W * lanes)
    fast, slow = both(lambda: bitpacking.unpack_blocks(words, T, W))
    assert fast[0] == slow[0] == "ok"
    assert fast[1].dtype == slow[1].dtype and np.array_equal(fast[1], slow[1])


@needs_kernels
@given(st.integers(0, 2**32 - 1), st.integers(0, 3000), st.sampled_from([8, 16, 32, 64]),
       st.integers(0, 64), st.integers(-40, 40))
@example(0, 1500, 32, 7, -1)  # one word short of the tail block
@example(0, 2048, 64, 64, 0)
def test_out_of_line_decode_equals_readable_on_damaged_buffers(seed, n, T, W, delta):
    """Whole out-of-line buffers, right-sized or cut short or padded by ``delta`` bytes:
    the same values or the same refusal (ENC-010) both ways."""
    W = min(W, T)
    per = 1024 * W // T
    full, r = divmod(n, 1024)
    size = (full * per + (per if r else 0)) * (T // 8)
    rng = np.random.default_rng(seed)
    buf = rng.integers(0, 256, max(0, size + delta), dtype=np.uint8).tobytes()
    fast, slow = both(lambda: bitpacking.decode_out_of_line(buf, n, T, W))
    assert fast[0] == slow[0]
    if fast[0] == "ok":
        assert np.array_equal(fast[1], slow[1])
    else:
        assert fast == slow


@needs_kernels
@given(st.sampled_from([8, 16, 32, 64]), st.integers(0, 64), st.integers(0, 2**32 - 1),
       st.lists(st.tuples(st.integers(0, 2600), st.integers(-3, 3), st.booleans()), max_size=6))
@example(16, 1, 0, [(1500, 0, False), (1024, 0, False), (7, 0, True)])  # block tail, full, raw tail
@example(32, 7, 1, [(1500, -1, False)])  # one word short of the tail block
@example(64, 64, 2, [(2048, 0, False), (0, 0, False)])
def test_out_of_line_chunk_set_kernel_equals_readable(T, W, seed, chunk_specs):
    """The rep/def levels of many mini-block chunks at once (``decode_out_of_line_chunks``),
    each buffer right-sized (its tail a padded block, or raw when ``raw``) or off by
    ``delta`` words: the same values, or ``None`` (refused) both ways."""
    W = min(W, T)
    B = T // 8
    per = 1024 * W // T
    rng = np.random.default_rng(seed)
    parts, starts, sizes, counts, pos = [], [], [], [], 0
    for n, delta, raw in chunk_specs:
        full, r = divmod(n, 1024)
        words = full * per + ((r if raw else per) if r else 0)
        size = max(0, words + delta) * B
        parts.append(rng.integers(0, 256, size, dtype=np.uint8))
        starts.append(pos)
        sizes.append(size)
        counts.append(n)
        pos += size
    data = np.concatenate(parts) if parts else np.zeros(0, np.uint8)
    fast, slow = both(lambda: bitpacking.decode_out_of_line_chunks(
        data, np.array(starts, np.int64), np.array(sizes, np.int64), np.array(counts, np.int64), T, W))
    assert fast[0] == slow[0] == "ok"
    assert (fast[1] is None) == (slow[1] is None)
    if fast[1] is not None:
        assert fast[1].dtype == slow[1].dtype and np.array_equal(fast[1], slow[1])


@needs_kernels
@given(st.sampled_from([8, 16, 32, 64]), st.integers(0, 2**32 - 1),
       st.lists(st.tuples(st.integers(0, 70), st.integers(0, 1030), st.integers(-2, 2)),
                min_size=1, max_size=6))
@example(16, 0, [(3, 1024, 0), (3, 17, 0)])  # one width, the last block short
@example(32, 1, [(3, 1024, 0), (9, 1024, 0), (0, 5, 0)])  # widths differ, width 0
@example(8, 2, [(9, 10, 0)])  # a width above T
@example(16, 3, [(4, 1025, 0)])  # more than a block
@example(64, 4, [(20, 100, -1)])  # one word short of the width's block
def test_inline_chunk_set_kernel_equals_readable(T, seed, chunk_specs):
    """Inline bit-packed chunks (a width word, then a block: ``decode_inline_set``), at one
    width or several, full or short, and damaged (a width above ``T``, a block cut short,
    too many values): the same values or the same refusal (ENC-010) both ways."""
    from reference_impl.file.encodings.v2_1.chunks import ChunkSet

    B = T // 8
    dt = bitpacking.UINT[T]
    rng = np.random.default_rng(seed)
    bufs, counts = [], []
    for width, n, delta in chunk_specs:
        words = 1024 * min(width, T) // T
        body = rng.integers(0, 256, max(0, words + delta) * B, dtype=np.uint8)
        bufs.append([np.concatenate([np.array([width], dt).view(np.uint8), body])])
        counts.append(n)
    cs = ChunkSet.from_lists(bufs)
    fast, slow = both(lambda: bitpacking.decode_inline_set(cs, np.array(counts, np.int64), T))
    assert fast[0] == slow[0]
    if fast[0] == "ok":
        assert fast[1].dtype == slow[1].dtype and np.array_equal(fast[1], slow[1])
    else:
        assert fast == slow


# --------------------------------------------------------------------------- gathering ranges


@needs_kernels
@given(st.integers(0, 300), st.lists(st.tuples(st.integers(-5, 320), st.integers(-2, 40)), max_size=40))
@example(10, [(8, 3)])  # runs past the end
@example(10, [(0, -1)])  # negative length
@example(10, [(11, 0), (2, 3)])  # an empty range out of bounds is ignored
def test_gather_ranges_kernel_equals_readable(size, ranges):
    data = np.arange(size, dtype=np.int64).astype(np.uint8)
    starts = np.array([s for s, _ in ranges], np.int64)
    lengths = np.array([n for _, n in ranges], np.int64)
    fast, slow = both(lambda: chunks.gather_ranges(data, starts, lengths))
    assert fast[0] == slow[0]
    if fast[0] == "ok":
        assert np.array_equal(fast[1], slow[1])
        assert np.array_equal(fast[1], chunks.gather_ranges_readable(data, starts[lengths > 0],
                                                                     lengths[lengths > 0]))
    else:
        assert fast == slow


# --------------------------------------------------------------------------- variable chunks


def _variable_chunks(values_per_chunk, w, pad):
    """A :class:`ChunkSet` of ``variable`` mini-block chunks (offsets of ``w`` bytes from the
    chunk's start, the bytes, ``pad`` filler bytes) and the value counts."""
    from reference_impl.file.encodings.v2_1.chunks import ChunkSet

    bufs = []
    for values in values_per_chunk:
        offs = np.zeros(len(values) + 1, np.int64)
        np.cumsum([len(v) for v in values], out=offs[1:])
        offs += (len(values) + 1) * w
        bufs.append([offs.astype("<u4" if w == 4 else "<u8").tobytes() + b"".join(values) + b"\x48" * pad])
    return ChunkSet.from_lists(bufs), np.array([len(v) for v in values_per_chunk], np.int64)


@needs_kernels
@given(st.lists(st.lists(st.binary(max_size=12), max_size=20), min_size=1, max_size=8),
       st.sampled_from([4, 8]), st.integers(0, 3),
       st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 255)), max_size=3),
       st.integers(-1, 1))
@example([[b"ab", b""], [b"c"]], 4, 0, [], 0)
@example([[b"ab", b"cd"]], 4, 0, [(4, 0)], 0)  # the second offset below the first
@example([[b"ab", b"cd"]], 4, 0, [(0, 99)], 0)  # offsets that do not start after themselves
@example([[b"ab"], [b"cd"]], 8, 0, [(8, 200)], 0)  # the last offset past the chunk
@example([[b"ab"], [b""]], 4, 0, [], 1)  # a count above what the chunk holds
@example([[b"abcd"], [b"efgh"]], 4, 0, [(12, 0)], 0)  # chunks at multiples of 4: read as words
@example([[b"abc"], [b"efgh"]], 4, 0, [], 0)  # the second chunk at 11: read byte by byte
def test_variable_chunks_kernel_equals_readable(chunks, w, pad, damage, miscount):
    """The offsets and bytes of ``variable`` mini-block chunks (the inner node of every FSST
    page), whole and damaged (bytes overwritten, a chunk's count off by one): the same
    values, or the same refusal, as the readable ``decode_chunk_set``."""
    from reference_impl.file.encodings.v2_1 import variable

    cs, counts = _variable_chunks([list(c) for c in chunks], w, pad)
    for at, byte in damage:
        if len(cs.data):
            cs.data[at % len(cs.data)] = byte
    counts[-1] = max(0, counts[-1] + miscount)
    fast, slow = both(lambda: variable.decode_chunk_set(cs, counts, 8 * w))
    if fast[0] == "ok":
        assert slow[0] == "ok"
        assert np.array_equal(fast[1].offsets, slow[1].offsets)
        assert bytes(fast[1].data) == bytes(slow[1].data)
    else:
        assert fast == slow
    if not damage and not miscount:  # (the kernel decoded it, not the readable fallback)
        assert kernels.kernel("variable_chunks")(cs.data, cs.starts[0], cs.sizes[0], counts, w) is not None
        values = [v for c in chunks for v in c]
        assert fast[0] == "ok" and [bytes(fast[1].data[a:b]) for a, b in zip(
            fast[1].offsets[:-1].tolist(), fast[1].offsets[1:].tolist(), strict=True)] == values


# --------------------------------------------------------------------------- FSST encode


@needs_kernels
@given(st.lists(st.text(alphabet="0123456789abcdefghij \u00e9\u4e2d", max_size=90), min_size=1, max_size=80),
       st.lists(st.binary(max_size=70), max_size=20))
@example(["0000000000000000000123"] * 40, [b"\xff\xff"])
@example(["a" * 200], [])
def test_fsst_encode_kernel_equals_readable(train, other):
    """The tokens of the compiled encoder are byte for byte the readable encoder's, on the
    values the table was trained on and on other bytes (escapes)."""
    values = [t.encode() for t in train] + other
    offs = np.zeros(len(values) + 1, np.int64)
    np.cumsum([len(v) for v in values], out=offs[1:])
    data = np.frombuffer(b"".join(values), np.uint8)
    table = fsst_enc.build_symbol_table((offs, data))
    fast, slow = both(lambda: fsst_enc.encode(table, offs, data))
    assert fast[0] == slow[0] == "ok"
    assert np.array_equal(fast[1][0], slow[1][0]) and bytes(fast[1][1]) == bytes(slow[1][1])
    # and it decodes back
    got = fsst.decode(table, Var(fast[1][0], fast[1][1]))
    assert bytes(got.data) == bytes(data) and np.array_equal(got.offsets, offs)


# --------------------------------------------------------------------------- whole files


@needs_kernels
@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_files_written_with_kernels_are_byte_identical(version, monkeypatch):
    """A file written with the kernels (FSST tokens, FastLanes packing) has the bytes of the
    same file written without them: the README's columns (int64, float64, 20-character hex
    strings) plus nullable strings and a list column."""
    from reference_impl.file.writer import write_lance_file
    from reference_impl.io.memory import MemoryStore

    rng = np.random.default_rng(3)
    n = 20_000
    hexes = np.frombuffer(b"0123456789abcdef", np.uint8)[rng.integers(0, 16, n * 20)]
    strings = pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(np.arange(n + 1, dtype=np.int32) * 20),
                                                     pa.py_buffer(hexes)])
    lens = rng.integers(0, 6, n)
    offsets = np.concatenate([[0], np.cumsum(lens)]).astype(np.int32)
    table = pa.table({
        "i": pa.array(np.arange(n, dtype=np.int64) * 7),
        "f": pa.array(rng.random(n)),
        "s": strings,
        "ns": pa.array([None if k % 9 == 0 else f"v{k % 1000:04d}-{k}" for k in range(n)]),
        "l": pa.ListArray.from_arrays(pa.array(offsets), pa.array(rng.integers(0, 1 << 20, int(offsets[-1]),
                                                                                  dtype=np.int32))),
    })

    def write() -> bytes:
        store = MemoryStore()
        write_lance_file(store, "f.lance", table, version=version)
        return bytes(store.get("f.lance"))

    used = set()
    pick = kernels.kernel

    def spy(name, work=None):
        got = pick(name, work)
        if got is not None:
            used.add(name)
        return got

    monkeypatch.setattr(kernels, "kernel", spy)
    fast = write()
    assert {"fsst_encode_block", "fastlanes_pack"} <= used  # (the kernels did write it)
    with readable():
        slow = write()
    assert fast == slow


def _read_all(uri: Path):
    """A dataset's whole table as our reader scans it, or its refusal (type and rule)."""
    import reference_impl as ri

    try:
        return ("ok", ri.open_dataset(str(uri)).to_table())
    except Exception as e:  # noqa: BLE001 - compared between the two paths, whatever it is
        return ("refused", type(e).__name__, getattr(e, "rule", None))


def _datasets(root: Path) -> list[Path]:
    return sorted(p.parent for p in root.rglob("_versions") if p.is_dir())


def _same_both_ways(uri: Path) -> bool:
    fast = _read_all(uri)
    with readable():
        slow = _read_all(uri)
    assert fast[0] == slow[0], (uri, fast, slow)
    if fast[0] == "ok":  # (NaN is not equal to itself for ``equals``: compare reprs then)
        a, b = fast[1], slow[1]
        assert a.schema == b.schema and (a.equals(b) or repr(a.to_pylist()) == repr(b.to_pylist())), uri
    else:
        assert fast == slow, uri
    return fast[0] == "ok"


@needs_kernels
def test_golden_fixtures_read_identically_without_kernels():
    tables = _datasets(REPO / "fixtures" / "golden")
    assert len(tables) > 30
    read = sum(_same_both_ways(uri) for uri in tables)
    assert read > 30


@needs_kernels
@pytest.mark.interop
@pytest.mark.parametrize("storage", [pytest.param("2.0", marks=pytest.mark.slow),
                                     pytest.param("2.1", marks=pytest.mark.slow), "2.2",
                                     pytest.param("2.3", marks=pytest.mark.slow)])
@pytest.mark.timeout(1800)
def test_type_census_reads_identically_without_kernels(tmp_path, pylance, storage):
    """Every type of the census catalogue in every variant (``conformance/census/type_program.py``:
    ~460 tables a storage version), written by pylance 14.0.2: our reader gives the same
    table, or the same refusal, with and without the kernels. 2.2 in the default run (about
    a minute), the other storage versions in the slow profile."""
    from conformance.census import type_census

    out = tmp_path / "census"
    type_census._run_until_done(sys.executable, ["write", str(out), storage], out / storage, 900)
    tables = _datasets(out / storage)
    assert len(tables) > 300, storage
    read = sum(_same_both_ways(uri) for uri in tables)
    assert read > 200, storage  # (and every refusal was the same both ways)


def _pytest_without_kernels(tests: list[str]) -> None:
    # the default hypothesis profile whatever this run's (the slow profile's 1,000 examples a
    # test would make the child run for an hour)
    env = dict(os.environ, **{kernels.ENV: "0", "HYPOTHESIS_PROFILE": "default"})
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-n", "0",
                           "-x", "-m", "not slow and not compat", *tests], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=3500)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert " passed" in proc.stdout and " failed" not in proc.stdout


@pytest.mark.timeout(1200)
def test_file_format_tests_pass_without_kernels():
    """The 2.1/2.2 decoder tests in a subprocess with the kernels switched off: the readable
    path, as a kit without numba runs it (the ordinary test command runs both paths)."""
    _pytest_without_kernels(["conformance/suite/file/test_file_v2_1.py"])


@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_more_file_tests_pass_without_kernels():
    """The FSST encoder, hostile-file and fast-path tests, the same way (slow profile)."""
    _pytest_without_kernels(["conformance/suite/file/test_fsst_encoder.py",
                             "conformance/suite/file/test_file_hostile.py",
                             "conformance/suite/file/test_file_fast_paths.py",
                             "conformance/suite/file/test_writer_fast_paths.py"])


# --------------------------------------------------------------------------- threads


def test_decode_threads_follow_the_cgroup_quota(tmp_path, monkeypatch):
    from reference_impl.file import parallel

    quota = tmp_path / "cpu.max"
    quota.write_text("max 100000\n")
    assert parallel.cgroup_cpus(str(quota)) is None
    quota.write_text("150000 100000\n")
    assert parallel.cgroup_cpus(str(quota)) == 1.5
    assert parallel.cgroup_cpus(str(tmp_path / "absent")) is None
    monkeypatch.delenv(parallel.ENV, raising=False)
    monkeypatch.setattr(parallel, "cgroup_cpus", lambda: 1.0)
    assert parallel.threads() == 1
    monkeypatch.setattr(parallel, "cgroup_cpus", lambda: None)
    assert parallel.threads() == max(1, min(len(os.sched_getaffinity(0)), 8))


@needs_kernels
def test_kernels_start_no_threads_of_their_own():
    """A decode and an encode through the kernels leave numba's threading layer unstarted
    (the kit's decode pool is the only pool: no oversubscription)."""
    import threading

    import numba.np.ufunc.parallel as numba_parallel

    before = threading.active_count()
    table = _table([2] * 100, 3)
    values = np.random.default_rng(3).integers(0, 100, 5000).astype(np.uint8)
    offs = np.arange(0, 5001, 50, dtype=np.int64)
    fsst.decode(table, Var(offs, values), saturated=True)
    fsst_enc.encode(fsst_enc.build_symbol_table((offs, values)), offs, values)
    assert not numba_parallel._is_initialized
    assert threading.active_count() == before


# --------------------------------------------------------------------------- bit-packing


@needs_kernels
@given(st.sampled_from([8, 16, 32, 64]), st.integers(0, 64), st.integers(0, 3), st.integers(0, 2**32 - 1))
@example(64, 64, 2, 0)
@example(16, 5, 1, 7)
def test_fastlanes_pack_kernel_equals_readable(T, W, k, seed):
    """The writer's packing, kernel against the readable ``fastlanes_pack`` (values wider
    than ``W`` bits too: only their low bits are kept), and unpacked back."""
    from reference_impl.file.encode.v2_1 import bitpacking as enc_bits

    W = min(W, T)
    dt = bitpacking.UINT[T]
    rng = np.random.default_rng(seed)
    blocks = rng.integers(0, 256, k * 1024 * (T // 8), dtype=np.uint8).view(dt).reshape(k, 1024)
    fast, slow = both(lambda: enc_bits.fastlanes_pack_fast(blocks, T, W))
    ref = enc_bits.fastlanes_pack(blocks, T, W)
    assert fast[0] == slow[0] == "ok"
    assert fast[1].dtype == ref.dtype and np.array_equal(fast[1], ref) and np.array_equal(slow[1], ref)
    if W:
        low = blocks & dt((1 << W) - 1) if W < T else blocks
        assert np.array_equal(bitpacking.unpack_blocks(fast[1], T, W), low)


@needs_kernels
def test_every_word_type_and_width_packs_and_unpacks_as_the_readable_functions():
    """All 124 pairs of word type ``T`` and width ``W <= T``, two blocks of random bits each:
    the kernels (which specialise their loops on whether a row straddles two words) give
    the readable functions' words and values, and unpack what they pack."""
    from reference_impl.file.encode.v2_1 import bitpacking as enc_bits

    rng = np.random.default_rng(37)
    pairs = [(T, W) for T in (8, 16, 32, 64) for W in range(T + 1)]
    assert len(pairs) == 124
    for T, W in pairs:
        dt = bitpacking.UINT[T]
        words = rng.integers(0, 256, 2 * W * (1024 // T) * (T // 8), dtype=np.uint8).view(dt)
        words = words.reshape(2, W * (1024 // T))
        fast, slow = both(lambda words=words, T=T, W=W: bitpacking.unpack_blocks(words, T, W))
        assert fast[0] == slow[0] == "ok" and np.array_equal(fast[1], slow[1]), (T, W)
        fast_p, slow_p = both(lambda v=slow[1], T=T, W=W: enc_bits.fastlanes_pack_fast(v, T, W))
        assert np.array_equal(fast_p[1], words) and np.array_equal(slow_p[1], words), (T, W)


@needs_kernels
def test_bit_kernels_leave_shapes_they_do_not_expect_to_the_readable_functions():
    """Words or blocks of the wrong shape, or a width above ``T``: the kernels decline
    (no read or write outside the arrays) and the readable function's refusal stands."""
    from reference_impl.file.encode.v2_1 import bitpacking as enc_bits

    words = np.zeros((2, 3 * 32 - 1), np.uint32)  # one word short of width 3
    fast, slow = both(lambda: bitpacking.unpack_blocks(words, 32, 3))
    assert fast == slow and fast[0] == "refused"
    blocks = np.zeros((2, 1000), np.uint16)
    fast, slow = both(lambda: enc_bits.fastlanes_pack_fast(blocks, 16, 4))
    assert fast[0] == slow[0] == "refused"


def test_small_inputs_stay_on_the_readable_path(monkeypatch):
    monkeypatch.setattr(kernels, "MIN_WORK", 1 << 16)
    assert kernels.kernel("fsst_decode", 100) is None
    if kernels.available():
        assert kernels.kernel("fsst_decode", 1 << 16) is not None
