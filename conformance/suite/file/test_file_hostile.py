"""Hostile data files: the reader meets flipped bytes, truncations, offsets past the end and
absurd lengths and must answer with ``FormatError`` / ``UnsupportedFeature`` (or decode
something), with bounded memory and no hang.

Default run: ~100 mutants of pylance 2.1/2.2 files, memory measured with ``tracemalloc``
(peak below 64 MiB per mutant, the files being a few KiB). ``-m slow``: thousands of mutants.
"""

from __future__ import annotations

import contextlib
import random
import struct
import tracemalloc

import numpy as np
import pyarrow as pa
import pytest
from google.protobuf import any_pb2

from reference_impl.errors import FormatError, UnsupportedFeature
from reference_impl.file.container import read_container
from reference_impl.file.reader import LanceFileReader
from reference_impl.io.memory import MemoryStore
from reference_impl.proto import file2_pb2

PEAK_LIMIT = 64 << 20


def _table(n=300):
    rng = np.random.default_rng(5)
    return pa.table({
        "i": pa.array(rng.integers(0, 1000, n)),
        "f": pa.array(rng.random(n)),
        "s": pa.array([None if i % 7 == 0 else f"str{i % 50}-{i}" * 3 for i in range(n)]),
        "low": pa.array([["north", "south", "east-west"][i % 3] for i in range(n)]),
        "l": pa.array([None if i % 5 == 0 else list(range(i % 4)) for i in range(n)], pa.list_(pa.int16())),
        "st": pa.array([None if i % 6 == 0 else {"a": i, "b": bool(i % 2)} for i in range(n)],
                       pa.struct([("a", pa.int32()), ("b", pa.bool_())])),
        "fsl": pa.array([[float(i)] * 4 for i in range(n)], pa.list_(pa.float32(), 4)),
        "big": pa.array(["y" * 260 + str(i) if i % 3 else None for i in range(n)]),
        "k": pa.array([3] * n, pa.int64()),
        "nul": pa.nulls(n, pa.int32()),
    })


@pytest.fixture(scope="module")
def originals(pylance, tmp_path_factory):
    d = tmp_path_factory.mktemp("hostile")
    out = {}
    for v in ("2.1", "2.2"):
        p = d / f"o{v}.lance"
        t = _table()
        with pylance.file.LanceFileWriter(str(p), t.schema, version=v) as w:
            w.write_batch(t)
        out[v] = p.read_bytes()
    # a 2.2 dataset's blob v2 data file: pylance's detached id -1 descriptor fields, a full-zip
    # variable packed struct page, inline blob bytes ahead of it
    from conformance.fixtures.invalid_blob import data_file, write_blob_table

    ds = d / "blob"
    ds.mkdir()
    out["2.2-blob"] = data_file(write_blob_table(ds)).read_bytes()
    return out


def _tail_offsets(raw: bytes):
    """File offsets of interesting integers: footer fields, table entries, page buffer fields."""
    store = MemoryStore()
    store.put("x.lance", raw)
    c = read_container(store, "x.lance")
    pos = [len(raw) - 40 + k for k in (0, 8, 16, 24, 28, 32, 34)]
    pos += [c.cmo_offset + 16 * i + k for i in range(c.num_columns) for k in (0, 8)]
    pos += [c.gbo_offset + k for k in (0, 8)]
    return c, pos


def mutate(raw: bytes, rng: random.Random) -> bytes:
    """One random corruption of ``raw``."""
    kind = rng.choice(["flip", "flip", "trunc", "int", "int", "proto", "zero"])
    b = bytearray(raw)
    if kind == "flip":
        for _ in range(rng.randint(1, 8)):
            i = rng.randrange(len(b))
            b[i] ^= 1 << rng.randrange(8)
    elif kind == "zero":
        i = rng.randrange(len(b))
        b[i:i + rng.randint(1, 64)] = b"\0" * len(b[i:i + 64])[:rng.randint(1, 64)] if False else bytes(len(b[i:i + 16]))
    elif kind == "trunc":
        return bytes(b[:rng.randrange(len(b))])
    elif kind == "int":
        _c, pos = _tail_offsets(raw)
        p = rng.choice(pos)
        width = 8 if p + 8 <= len(b) - 8 else 2
        val = rng.choice([0, 1, 63, len(raw), len(raw) + 1, 2**31, 2**32 - 1, 2**63, 2**64 - 1])
        b[p:p + width] = (val % (1 << (8 * width))).to_bytes(width, "little")
    else:  # proto: rewrite one page's buffer offset/size or length with an absurd value
        store = MemoryStore()
        store.put("x.lance", raw)
        c = read_container(store, "x.lance")
        ci = rng.randrange(c.num_columns)
        col = file2_pb2.ColumnMetadata.FromString(c.columns[ci].SerializeToString())
        if not col.pages:
            return bytes(b[:-1])
        pg = col.pages[rng.randrange(len(col.pages))]
        field = rng.choice(["off", "size", "length", "priority", "enc"])
        big = rng.choice([1, 2**20, 2**40, 2**63])
        if field == "off" and len(pg.buffer_offsets):
            pg.buffer_offsets[rng.randrange(len(pg.buffer_offsets))] += big
        elif field == "size" and len(pg.buffer_sizes):
            pg.buffer_sizes[rng.randrange(len(pg.buffer_sizes))] += big
        elif field == "length":
            pg.length = (pg.length + big) % 2**64
        elif field == "priority":
            pg.priority = big
        else:
            a = any_pb2.Any.FromString(pg.encoding.direct.encoding)
            v = bytearray(a.value)
            if v:
                v[rng.randrange(len(v))] ^= 1 << rng.randrange(8)
            a.value = bytes(v)
            pg.encoding.direct.encoding = a.SerializeToString()
        new = col.SerializeToString()
        start = c.column_meta_start
        cols = [m.SerializeToString() for m in c.columns]
        cols[ci] = new
        out = bytearray(raw[:start])
        poss = []
        for m in cols:
            poss.append((len(out), len(m)))
            out += m
        cmo = len(out)
        for p, s in poss:
            out += struct.pack("<QQ", p, s)
        gbo = len(out)
        for p, s in c.global_buffers:
            out += struct.pack("<QQ", p, s)
        out += struct.pack("<QQQIIHH", start, cmo, gbo, len(c.global_buffers), len(cols), *c.version) + b"LANC"
        return bytes(out)
    return bytes(b)


@contextlib.contextmanager
def traced_peaks():
    """``peak_of(fn, *args) -> (fn's result, the peak bytes it allocated)`` for many calls
    under one ``tracemalloc`` session. Tracing is started once and its peak reset per call:
    CPython 3.11's ``tracemalloc.stop()`` frees state that an allocation racing it on another
    thread of the process may still use, a crash of the whole pytest worker (seen once in CI,
    in a test that stopped tracing 400 times)."""

    def peak_of(fn, *args):
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        result = fn(*args)
        return result, tracemalloc.get_traced_memory()[1] - base

    tracemalloc.start()
    try:
        yield peak_of
    finally:
        tracemalloc.stop()


def read_hostile(data: bytes):
    """Read everything; return 'ok', 'format' or 'unsupported'. Any other exception escapes."""
    store = MemoryStore()
    store.put("h.lance", data)
    try:
        r = LanceFileReader(store, "h.lance")
        r.read_all()
        if r.num_rows:
            r.take([0, r.num_rows - 1])
        return "ok"
    except UnsupportedFeature:
        return "unsupported"
    except FormatError as exc:
        assert exc.rule and str(exc.rule).startswith(("FILE-", "ENC-", "SCHEMA-", "BLOB-")), exc
        assert exc.path == "h.lance", f"the refusal does not name the file: {exc}"
        return "format"


def _run(originals, count, seed):
    rng = random.Random(seed)
    outcomes = {"ok": 0, "format": 0, "unsupported": 0}
    with traced_peaks() as peak_of:
        for i in range(count):
            v = rng.choice(sorted(originals))
            data = mutate(originals[v], rng)
            try:
                res, peak = peak_of(read_hostile, data)
            except Exception as exc:  # noqa: BLE001
                raise AssertionError(f"mutant {i} (seed {seed}, {v}) raised {type(exc).__name__}: {exc}") from exc
            assert peak < PEAK_LIMIT, f"mutant {i} peaked at {peak} bytes"
            outcomes[res] += 1
    return outcomes


def test_originals_read(originals):
    for data in originals.values():
        assert read_hostile(data) == "ok"


@pytest.mark.timeout(240)
def test_hostile_default(originals):
    outcomes = _run(originals, 100, seed=1234)
    assert outcomes["format"] > 10  # most mutants are caught


@pytest.fixture
def small_pieces(monkeypatch):
    """The large-value paths cut small: FSST decoded in pieces of 251 bytes, values gathered
    509 bytes at a time (a few KiB of page exercise the paths 600 MB pages take)."""
    from reference_impl.file.encodings.v2_1 import chunks, fsst

    monkeypatch.setattr(fsst, "PIECE_TOKENS", 251)
    monkeypatch.setattr(chunks, "GATHER_PIECE", 509)


@pytest.mark.timeout(240)
def test_hostile_in_small_pieces(originals, small_pieces):
    outcomes = _run(originals, 50, seed=4321)
    assert outcomes["format"] > 5


def _full_zip_fsst_page(raw: bytes):
    """(offset, size) of the data buffer of the full-zip FSST page of column ``big``."""
    from reference_impl.file.page import page_layout

    store = MemoryStore()
    store.put("x.lance", raw)
    c = read_container(store, "x.lance")
    for col in c.columns:
        for page in col.pages:
            lay = page_layout(page, path="x.lance")
            if lay.WhichOneof("layout") == "full_zip_layout" and \
                    lay.full_zip_layout.value_compression.WhichOneof("compression") == "fsst":
                return int(page.buffer_offsets[0]), int(page.buffer_sizes[0])
    raise AssertionError("no full-zip FSST page")


def _outcome(data: bytes):
    store = MemoryStore()
    store.put("h.lance", data)
    try:
        return LanceFileReader(store, "h.lance").read_all()
    except FormatError as exc:
        assert exc.path == "h.lance" and str(exc.rule).startswith(("ENC-", "FILE-")), exc
        return exc.rule


@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_damaged_fsst_values_read_alike_in_pieces_and_whole(originals, monkeypatch, version):
    """Bytes flipped or set to 255 inside a full-zip FSST page (the values, their lengths,
    escapes): decoded in pieces of 97 bytes it gives what the whole-page decode gives, the
    same table or a refusal under the same rule."""
    from reference_impl.file.encodings.v2_1 import chunks, fsst

    raw = originals[version]
    start, size = _full_zip_fsst_page(raw)
    rng = random.Random(7)
    refused = 0
    for _ in range(30):
        b = bytearray(raw)
        for _ in range(rng.randint(1, 6)):
            i = start + rng.randrange(size)
            b[i] = 255 if rng.random() < 0.5 else b[i] ^ (1 << rng.randrange(8))
        whole = _outcome(bytes(b))
        with monkeypatch.context() as m:
            m.setattr(fsst, "PIECE_TOKENS", 97)
            m.setattr(chunks, "GATHER_PIECE", 61)
            pieces = _outcome(bytes(b))
        if isinstance(whole, str):
            refused += 1
            assert pieces == whole
        else:
            assert isinstance(pieces, pa.Table) and pieces.equals(whole)
    assert refused > 5


@pytest.mark.parametrize("cut", [0, 3, 15, 16, 39, 40, 41])
def test_truncated_tails(originals, cut):
    data = originals["2.2"]
    with pytest.raises(FormatError):
        store = MemoryStore()
        store.put("t.lance", data[:cut] if cut < 41 else data[:-cut])
        LanceFileReader(store, "t.lance").read_all()


@pytest.mark.slow
@pytest.mark.timeout(3600)
@pytest.mark.parametrize("seed", range(10))
def test_hostile_slow(originals, seed):
    _run(originals, 400, seed=seed)


@pytest.mark.parametrize("seed", range(3))
def test_hostile_blob_descriptors(pylance, tmp_path, seed):
    """Random kinds, positions, sizes and ids written over the stored blob v2 descriptors:
    ``take_blobs`` returns bytes or a typed error for every row, reading nothing it has not
    bounds-checked (memory stays small even for sizes near 2**64)."""
    from conformance.fixtures.invalid_blob import (
        DEDICATED,
        PACKED,
        data_file,
        descriptor_bytes,
        inline_descriptor,
        patch_descriptor,
        write_blob_table,
    )
    from reference_impl.dataset import open_dataset
    from reference_impl.errors import InvalidInput

    root = tmp_path / "ds"
    root.mkdir()
    write_blob_table(root)
    p = data_file(root)
    rng = random.Random(seed)
    stored = [inline_descriptor(p), descriptor_bytes(1, 0, len(PACKED[0]), 1),
              descriptor_bytes(2, 0, len(DEDICATED[1]), 3)]
    for old in stored:
        new = descriptor_bytes(rng.choice([0, 1, 2, 3, 9]), rng.choice([0, 64, 2**32, 2**63, 2**64 - 1]),
                               rng.choice([0, 5, 2**40, 2**64 - 1]), rng.choice([0, 1, 3, 2**32 - 1]))
        patch_descriptor(p, old, new)
    ds = open_dataset(str(root))
    tracemalloc.start()
    try:
        for i in range(ds.count_rows()):
            try:
                ds.take_blobs("blob", indices=[i])
            except (FormatError, InvalidInput):
                pass
        _cur, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < PEAK_LIMIT


def _not_utf8_table() -> pa.Table:
    """A utf8 column whose bytes are not UTF-8 (pyarrow builds it unchecked) beside valid
    multi-byte text."""
    words = ["d\u00e9f", "\u6f22\u5b57", None, "\U0001f600", "abc"]
    good = pa.array([None if w is None else f"r{i}-{w}" for i, w in enumerate(words * 6)])
    offsets, data = good.buffers()[1], bytearray(good.buffers()[2].to_pybytes())
    data[4] = 0xFF  # row 0 is "r0-d\u00e9f": the first byte of its two-byte "\u00e9"
    bad = pa.Array.from_buffers(pa.string(), len(good), [good.buffers()[0], offsets, pa.py_buffer(bytes(data))])
    return pa.table({"ok": good, "s": bad})


@pytest.mark.parametrize("version,rule", [("legacy", "FILE-063"), ("2.0", "ENC-052"), ("2.1", "ENC-045"),
                                          ("2.2", "ENC-045")])
def test_string_values_that_are_not_utf8_are_refused(pylance, tmp_path, version, rule):
    """Arrow requires utf8 values to be UTF-8, and pylance 14.0.2 refuses to read such a page
    at every storage version ("invalid utf-8 sequence"), though it writes one unchecked at
    legacy and 2.0 (at 2.1+ our writer makes it, since pylance's checks the batch). The
    reference reader refuses it too, naming the rule and the file, for a scan and for a take,
    and ``validate --deep`` reports that rule; the valid multi-byte column next to it reads
    as pylance reads it."""
    from conformance.engine import local
    from reference_impl import open_dataset, write_dataset

    root = tmp_path / version
    if version in ("legacy", "2.0"):
        pylance.write_dataset(_not_utf8_table(), str(root), data_storage_version=version)
    else:  # pylance 14.0.2's 2.1+ encoder checks the bytes of a multi-column batch; ours does not
        write_dataset(_not_utf8_table(), str(root), data_storage_version=version)
    with pytest.raises(Exception, match="(?i)utf-?8"):
        pylance.dataset(str(root)).to_table()
    ds = open_dataset(str(root))
    for read in (lambda: ds.to_table(), lambda: ds.take([0, 2])):
        with pytest.raises(FormatError) as err:
            read()
        assert err.value.rule == rule and err.value.path and "data/" in err.value.path
    assert ds.to_table(columns=["ok"]).equals(pylance.dataset(str(root)).to_table(columns=["ok"]))
    report = local.validate(str(root), deep=True)
    assert {v.rule for v in report.violations} == {rule}, report.violations


@pytest.mark.parametrize("length", [2**64 - 1, 2**63 + 5, 2**63, 10**6])
def test_a_full_zip_length_past_the_row_is_refused(length):
    """A full-zip value's u64 length prefix of 2^63 or more reads as a negative int64; the
    walk must refuse it (ENC-043) like any length past its row, not step backwards (numpy
    indexes from the end) and fail with an IndexError or read other bytes. Found by the
    mutation campaign on a pylance 6.1.0 table."""
    from reference_impl.file.page import page_layout
    from reference_impl.file.writer import write_lance_file

    store = MemoryStore()
    table = pa.table({"s": pa.array(["x" * 300 + str(i) for i in range(50)], pa.large_string())})
    write_lance_file(store, "f.lance", table, version="2.1")
    c = read_container(store, "f.lance")
    page = c.columns[0].pages[0]
    lay = page_layout(page, path="f.lance").full_zip_layout
    assert (lay.bits_per_offset, lay.bits_rep, lay.bits_def) == (64, 0, 0)  # no control word
    data = bytearray(store.get("f.lance"))
    row = 7 * (8 + 301)  # row 7: an 8-byte length, then its 301 bytes
    struct.pack_into("<Q", data, int(page.buffer_offsets[0]) + row, length)
    store.put("h.lance", bytes(data))
    with pytest.raises(FormatError) as err:
        LanceFileReader(store, "h.lance").read_all()
    assert err.value.rule == "ENC-043" and err.value.path == "h.lance"
    assert read_hostile(bytes(data)) == "format"
