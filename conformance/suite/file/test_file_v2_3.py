"""Lance file version 2.3 (unstable ``"next"``): our reader against pylance 14.0.2's.

What 14.0.2 writes at 2.3 (probed with ``lance.write_dataset(..., data_storage_version="2.3")``
and ``lance.file.LanceFileWriter(path, schema, version="2.3")``; details in the docstrings of
``reference_impl/file/encodings/v2_3/``):

* footer major/minor ``2/3``; every page a ``/lance.encodings23.PlanarLayout`` (structure x
  values); the column encodings stay ``/lance.encodings.ColumnEncoding``;
* dense structure x chunked values (2.2 mini-block, u32 chunk words) for narrow values;
  dense x zipped (full-zip) for long strings, vectors and blob v2 descriptors; dense all-valid
  x constant for constant columns without nulls; an empty dense layer list for top-level
  leaves of some files (one item layer);
* sparse slot sets x constant/none for all-null and nullable or nested constant pages, and
  x chunked/zipped values for list pages of more than 65,535 levels;
* compression new to 2.3: generic variable offsets (``Delta`` with bit-packed lengths,
  ``Range`` for one length, ``Rle`` of ranges for runs of nulls), ``Range``/``Delta``/
  ``Dictionary``/``Rle`` position and count sequences in sparse pages, u16/u32 RLE run
  lengths, dictionaries of fixed-size lists.

Every test writes with pylance and compares ``reference_impl`` with pylance's own reader.
Releases before 14 wrote "2.3" files of 2.2 pages, which 14.0.2 and we refuse.
"""

from __future__ import annotations

import random
import struct

import numpy as np
import pyarrow as pa
import pytest
from google.protobuf import any_pb2
from google.protobuf.descriptor import FieldDescriptor as FD
from hypothesis import given, settings
from hypothesis import strategies as st

from conformance.suite.file.test_file_hostile import PEAK_LIMIT, mutate, read_hostile, traced_peaks
from conformance.suite.file.test_file_v2_1 import LEAF_TYPES, NESTED_TYPES, make_column
from reference_impl.dataset import open_dataset
from reference_impl.errors import FormatError, UnsupportedFeature
from reference_impl.file.container import read_container
from reference_impl.file.encodings.v2_1 import compressive, mini_block
from reference_impl.file.encodings.v2_3 import planar, sequence, sparse
from reference_impl.file.reader import LanceFileReader
from reference_impl.io.local import LocalStore
from reference_impl.io.memory import MemoryStore
from reference_impl.proto import encodings_v2_1_pb2 as pb21
from reference_impl.proto import encodings_v2_3_pb2 as pb23

pytestmark = pytest.mark.interop

SPECIAL = {
    "lowcard": lambda n: pa.array([None if i % 11 == 0 else ["red", "green", "blue"][i % 3] for i in range(n)]),
    "fsst": lambda n: pa.array([f"https://example.com/path/{i}/resource?id={i * 7}" for i in range(n)]),
    "const_int": lambda n: pa.array([42] * n, pa.int32()),
    "const_nulls": lambda n: pa.array([None if i % 2 else 7 for i in range(n)], pa.int64()),
    "all_null_int": lambda n: pa.nulls(n, pa.int64()),
    "all_null_str": lambda n: pa.nulls(n, pa.string()),
    "all_null_list": lambda n: pa.nulls(n, pa.list_(pa.int32())),
    "all_null_struct": lambda n: pa.array([None] * n, pa.struct([("a", pa.int32())])),
    "struct_null_child": lambda n: pa.array([None if i % 3 == 0 else {"a": None} for i in range(n)],
                                            pa.struct([("a", pa.int32())])),
    "empty_lists": lambda n: pa.array([[] for _ in range(n)], pa.list_(pa.int32())),
    "null_items": lambda n: pa.array([None if i % 4 == 0 else [None] * (i % 3) for i in range(n)],
                                     pa.list_(pa.int32())),
    "const_lists": lambda n: pa.array([[5, 5] for _ in range(n)], pa.list_(pa.int32())),
    "nested_nulls": lambda n: pa.array([None if i % 17 == 0 else {"l": None if i % 3 == 0 else [i, None]}
                                        for i in range(n)], pa.struct([("l", pa.list_(pa.int64()))])),
    "nan": lambda n: pa.array(np.where(np.arange(n) % 5 == 0, np.nan, np.arange(n) / 3.0)),
    "mostly_empty_str": lambda n: pa.array([None if i % 3 == 0 else ("x" * (i % 50) if i % 10 == 0 else "")
                                            for i in range(n)], pa.large_string()),
    "same_length_bin": lambda n: pa.array([f"{i:08d}".encode() for i in range(n)], pa.binary()),
    "fsl_low": lambda n: pa.array([[1.5, 2.5, 3.5]] * n, pa.list_(pa.float64(), 3)),
    "fsl_dict_nulls": lambda n: make_column(pa.list_(pa.float64(), 3), n, 0, "some", "low"),
    "short_runs": lambda n: pa.array(np.repeat(np.arange(n, dtype=np.int64) << 40, 3)[:n],
                                     mask=np.arange(n) % 10 == 0),
    "map": lambda n: pa.array([[(f"k{j}", j) for j in range(i % 3)] for i in range(n)],
                              pa.map_(pa.string(), pa.int32())),
}
PACKED = pa.field("packed", pa.struct([("a", pa.int32()), ("b", pa.float64())]),
                  metadata={"lance-encoding:packed": "true"})


def _column(key: str, n: int, seed: int) -> tuple[pa.Field, pa.Array]:
    if key in SPECIAL:
        arr = SPECIAL[key](n)
        return pa.field("c", arr.type), arr
    if key == "packed":
        return PACKED.with_name("c"), pa.array([{"a": i + seed, "b": i / 2} for i in range(n)], PACKED.type)
    t = LEAF_TYPES[key] if key in LEAF_TYPES else NESTED_TYPES[int(key.split("_")[1])]
    return pa.field("c", t), make_column(t, n, seed, "some")


def _table(keys: list[str], n: int, start: int) -> pa.Table:
    """``id`` and one column per type key (named after the key)."""
    fields, arrays = [pa.field("id", pa.int64())], [pa.array(np.arange(start, start + n, dtype=np.int64))]
    for i, key in enumerate(keys):
        field, arr = _column(key, n, start + i)
        fields.append(field.with_name(key))
        arrays.append(arr)
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


TYPE_KEYS = list(LEAF_TYPES) + [f"nested_{i}" for i in range(len(NESTED_TYPES))] + list(SPECIAL) + ["packed"]
#: the types, a few per dataset (one dataset per type costs a second of pylance each)
TYPE_GROUPS = {f"{g[0]}..{g[-1]}": g for g in (TYPE_KEYS[i:i + 8] for i in range(0, len(TYPE_KEYS), 8))}


def _same(ours: pa.Table, theirs: pa.Table) -> None:
    """Equal tables; NaN equals NaN (pyarrow's ``equals`` says it does not)."""
    assert ours.schema == theirs.schema
    assert ours.equals(theirs) or repr(ours.to_pylist()) == repr(theirs.to_pylist()), \
        (ours.slice(0, 5).to_pylist(), theirs.slice(0, 5).to_pylist())


def _same_scan(path: str, lance) -> pa.Table:
    ours = open_dataset(path).to_table(with_row_id=True)
    _same(ours, lance.dataset(path).to_table(with_row_id=True))
    return ours


@pytest.mark.parametrize("group", list(TYPE_GROUPS))
def test_dataset_reads_as_pylance(pylance, tmp_path, group):
    """Create, append twice (three fragments), delete: the scan equals pylance's, every type
    of the group a column."""
    keys = TYPE_GROUPS[group]
    path = str(tmp_path / "ds")
    # three writes rather than max_rows_per_file: 14.0.2 fails on the slices it cuts of some
    # struct columns ("null_bit_buffer size too small")
    pylance.write_dataset(_table(keys, 200, 0), path, data_storage_version="2.3")
    pylance.write_dataset(_table(keys, 100, 200), path, mode="append")
    pylance.write_dataset(_table(keys, 120, 300), path, mode="append")
    pylance.dataset(path).delete("id % 7 = 3 OR id = 250")
    ds = open_dataset(path)
    assert ds.data_storage_version == "2.3"
    assert len(ds.get_fragments()) == 3
    got = _same_scan(path, pylance)
    assert got.num_rows == 420 - len([i for i in range(420) if i % 7 == 3 or i == 250])


def test_blob_v2_dataset_reads_as_pylance(pylance, tmp_path):
    """Blob v2 at 2.3: a dense zipped page whose layer list is empty (one nullable item)."""
    from lance.blob import blob_array

    path = str(tmp_path / "ds")
    vals = [b"x" * 10, None, b"", b"y" * 100_000, b"z" * 70_000]
    pylance.write_dataset(pa.Table.from_arrays([blob_array(vals)], names=["blob"]), path,
                          data_storage_version="2.3")
    _same_scan(path, pylance)
    assert open_dataset(path).take_blobs("blob", indices=list(range(len(vals)))) == vals


def _planes(path: str) -> tuple[tuple, set]:
    import os

    c = read_container(LocalStore(os.path.dirname(path)), os.path.basename(path))
    kinds = set()
    for col in c.columns:
        for page in col.pages:
            a = any_pb2.Any.FromString(page.encoding.direct.encoding)
            assert a.type_url == planar.PLANAR_URL
            p = pb23.PlanarLayout.FromString(a.value)
            kinds.add((p.structure.WhichOneof("codec"), p.values.WhichOneof("codec")))
    return c.version, kinds


def test_what_pylance_writes_at_2_3(pylance, tmp_path):
    """Footer 2/3 and the four structure x value cells the docstrings describe."""
    n = 700
    cols = {"i": pa.array(np.arange(n)), "big": pa.array(["w" * 300 + str(i) for i in range(n)]),
            "k": pa.array([3] * n, pa.int32()), "nul": pa.nulls(n, pa.int32()),
            "bin": pa.array([b"ab" * (i % 5) for i in range(n)], pa.binary())}
    t = pa.table(cols)
    path = str(tmp_path / "t.lance")
    with pylance.file.LanceFileWriter(path, t.schema, version="2.3") as w:
        w.write_batch(t)
    version, kinds = _planes(path)
    assert version == (2, 3)
    assert kinds == {("dense", "chunked"), ("dense", "zipped"), ("dense", "constant"), ("sparse", "none")}
    got = LanceFileReader(LocalStore(str(tmp_path)), "t.lance").read_all()
    assert got.equals(pylance.file.LanceFileReader(path).read_all().to_table())


def test_large_list_pages_use_a_sparse_structure_with_values(pylance, tmp_path):
    """List pages whose dense form needs more than 65,535 levels come as sparse structure x
    chunked values (narrow items) or x zipped values (vectors); a dataset of them with deletions
    scans as pylance's."""
    n = 40_000
    t = pa.table({
        "id": pa.array(np.arange(n)),
        "l9": pa.array([None if i % 9 == 0 else [i, i + 1] for i in range(n)], pa.list_(pa.int64())),
        "sl": pa.array([None if i % 5 == 0 else {"l": [i % 100, None][: i % 3]} for i in range(n)],
                       pa.struct([("l", pa.list_(pa.int32()))])),
        "lvec": pa.array([None if i % 9 == 0 else [[float(i)] * 64] * (i % 3) for i in range(n)],
                         pa.list_(pa.list_(pa.float32(), 64))),
    })
    path = str(tmp_path / "big.lance")
    with pylance.file.LanceFileWriter(path, t.schema, version="2.3") as w:
        w.write_batch(t)
    _version, kinds = _planes(path)
    assert {("sparse", "chunked"), ("sparse", "zipped")} <= kinds
    _same(LanceFileReader(LocalStore(str(tmp_path)), "big.lance").read_all(),
          pylance.file.LanceFileReader(path).read_all().to_table())
    ds = str(tmp_path / "ds")
    pylance.write_dataset(t.select(["id", "l9"]), ds, data_storage_version="2.3")
    pylance.dataset(ds).delete("id < 10 OR id = 30000")
    _same_scan(ds, pylance)


_SIMPLE = [pa.int8(), pa.int64(), pa.uint16(), pa.float32(), pa.bool_(), pa.string(), pa.binary(),
           pa.large_string(), pa.list_(pa.int32()), pa.struct([("a", pa.int16()), ("b", pa.string())]),
           pa.list_(pa.float64(), 3), pa.list_(pa.list_(pa.int8()))]


_WORDS = st.one_of(st.none(), st.just(""), st.sampled_from(["a", "bb", "same"]), st.text(max_size=12))


def _random_table(data, max_rows: int) -> pa.Table:
    n = data.draw(st.integers(1, max_rows))
    k = data.draw(st.integers(1, 4))
    cols = {}
    if data.draw(st.booleans()):  # drawn strings: runs of nulls/empties give RLE/Range offsets
        words = data.draw(st.lists(_WORDS, min_size=1, max_size=8))
        rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
        run = data.draw(st.sampled_from([1, 1, 3, 50]))  # runs of one word: RLE offsets
        picks = np.repeat(rng.integers(0, len(words), n // run + 1), run)[:n]
        vals = [words[i] for i in picks.tolist()]
        if data.draw(st.booleans()):
            cols["w"] = pa.array(vals, pa.string())
        else:
            cols["w"] = pa.array([None if v is None else v.encode() for v in vals], pa.large_binary())
    if data.draw(st.booleans()):  # runs of distinct wide values: RLE with bit-packed run lengths
        rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
        longest = data.draw(st.sampled_from([2, 3, 8, 300]))
        runs = np.repeat(rng.integers(0, 1 << 60, n), rng.integers(1, longest, n))[:n]
        cols["r"] = pa.array(runs, mask=rng.random(n) < data.draw(st.sampled_from([0.0, 0.2])))
    for j in range(k):
        t = data.draw(st.sampled_from(_SIMPLE))
        null_mode = data.draw(st.sampled_from(["none", "some", "all"]))
        mode = data.draw(st.sampled_from(["random", "low", "const"]))
        cols[f"c{j}"] = make_column(t, n, data.draw(st.integers(0, 10**6)), null_mode, mode)
    return pa.table(cols)


def _roundtrip(lance, tmp_path, table: pa.Table, batch: int) -> None:
    path = str(tmp_path / "h.lance")
    with lance.file.LanceFileWriter(path, table.schema, version="2.3", data_cache_bytes=1024) as w:
        for b in table.to_batches(max_chunksize=batch):
            w.write_batch(b.take(pa.array(np.arange(b.num_rows))))
    theirs = lance.file.LanceFileReader(path).read_all().to_table()
    _same(LanceFileReader(LocalStore(str(tmp_path)), "h.lance").read_all(), theirs)


@settings(max_examples=12)
@given(data=st.data())
def test_random_tables_read_as_pylance(pylance, tmp_path_factory, data):
    table = _random_table(data, 300)
    _roundtrip(pylance, tmp_path_factory.mktemp("h"), table, data.draw(st.integers(50, 400)))


@pytest.mark.slow
@pytest.mark.timeout(3600)
@settings(max_examples=1000)
@given(data=st.data())
def test_random_tables_read_as_pylance_slow(pylance, tmp_path_factory, data):
    table = _random_table(data, 3000)
    _roundtrip(pylance, tmp_path_factory.mktemp("h"), table, data.draw(st.integers(50, 4000)))


def test_validate_deep_conforms(pylance, tmp_path):
    from conformance.engine.local import validate

    path = str(tmp_path / "ds")
    t = pa.table({"id": pa.array(np.arange(400)), **{k: SPECIAL[k](400) for k in SPECIAL},
                  "s": make_column(pa.string(), 400, 1, "some"), "b": make_column(pa.binary(), 400, 2, "some")})
    pylance.write_dataset(t, path, data_storage_version="2.3", max_rows_per_file=150)
    pylance.write_dataset(t, path, mode="append")
    pylance.dataset(path).delete("id % 5 = 0")
    report = validate(path, versions="all", deep=True)
    errors = [f for f in report.findings if str(getattr(f.severity, "value", f.severity)) == "error"]
    assert not errors, [(f.rule, f.message) for f in errors]


# --- hostile bytes --------------------------------------------------------------------------

@pytest.fixture(scope="module")
def original_2_3(pylance, tmp_path_factory) -> bytes:
    n = 300
    t = pa.table({"i": pa.array(np.arange(n)), "s": make_column(pa.string(), n, 3, "some"),
                  "bin": make_column(pa.binary(), n, 4, "some"), **{k: SPECIAL[k](n) for k in
                  ("const_nulls", "null_items", "const_lists", "struct_null_child", "all_null_str")},
                  "big": pa.array(["y" * 260 + str(i) if i % 3 else None for i in range(n)])})
    p = tmp_path_factory.mktemp("hostile23") / "o.lance"
    with pylance.file.LanceFileWriter(str(p), t.schema, version="2.3") as w:
        w.write_batch(t)
    return p.read_bytes()


def test_take_and_ranges_match_the_full_read(pylance, tmp_path, original_2_3):
    """Random access over 2.3 pages (mini-block chunk runs through the page index, other
    layouts page by page) gives the rows of the full read, which equals pylance's."""
    (tmp_path / "o.lance").write_bytes(original_2_3)
    r = LanceFileReader(LocalStore(str(tmp_path)), "o.lance")
    full = r.read_all()
    _same(full, pylance.file.LanceFileReader(str(tmp_path / "o.lance")).read_all().to_table())
    idx = np.array([0, 299, 150, 151, 7, 7, 64])
    _same(r.take(idx), full.take(pa.array(idx)))
    _same(r.read_range(100, 130), full.slice(100, 30))


def _mutants(original: bytes, count: int, seed: int) -> dict:
    rng = random.Random(seed)
    outcomes = {"ok": 0, "format": 0, "unsupported": 0}
    with traced_peaks() as peak_of:  # (one start and stop for the run: see traced_peaks)
        for i in range(count):
            data = mutate(original, rng)
            try:
                res, peak = peak_of(read_hostile, data)
            except Exception as exc:  # noqa: BLE001
                raise AssertionError(f"mutant {i} raised {type(exc).__name__}: {exc}") from exc
            assert peak < PEAK_LIMIT, f"mutant {i} peaked at {peak} bytes"
            outcomes[res] += 1
    return outcomes


def test_hostile_2_3_mutants_fail_typed(original_2_3):
    """Flipped bytes, truncations, absurd offsets and page fields: a typed error (or a decode),
    never a traceback, and bounded memory."""
    assert read_hostile(original_2_3) == "ok"
    assert _mutants(original_2_3, 40, seed=23)["format"] > 5


@pytest.mark.slow
@pytest.mark.timeout(3600)
@pytest.mark.parametrize("seed", range(5))
def test_hostile_2_3_mutants_slow(original_2_3, seed):
    assert _mutants(original_2_3, 400, seed=100 + seed)["format"] > 50


def _int_fields(msg, out: list) -> list:
    """Every (message, field) of an integer or enum scalar in the tree under ``msg``."""
    for fd in msg.DESCRIPTOR.fields:
        if fd.message_type is not None:
            if fd.is_repeated:
                for v in getattr(msg, fd.name):
                    _int_fields(v, out)
            elif msg.HasField(fd.name):
                _int_fields(getattr(msg, fd.name), out)
        elif fd.type in _LIMITS and not fd.is_repeated:
            out.append((msg, fd))
    return out


_LIMITS = {FD.TYPE_UINT64: 2**64 - 1, FD.TYPE_UINT32: 2**32 - 1, FD.TYPE_INT32: 2**31 - 1,
           FD.TYPE_ENUM: 2**31 - 1}


def _planar_mutants(original: bytes, count: int, seed: int) -> dict:
    """Absurd counts, positions, steps, widths and kinds written into the planar layouts of
    random pages (sparse slot sets, list layers, chunk and zip counts), each read as hostile."""
    from conformance.fixtures.invalid_file import read_columns, rewrite_tail

    rng = random.Random(seed)
    outcomes = {"ok": 0, "format": 0, "unsupported": 0}
    cols = read_columns(original)
    pages = [(ci, pi) for ci, c in enumerate(cols) for pi in range(len(c.pages))]
    with traced_peaks() as peak_of:  # (one start and stop for the run: see traced_peaks)
        for _ in range(count):
            cols = read_columns(original)
            ci, pi = rng.choice(pages)
            page = cols[ci].pages[pi]
            a = any_pb2.Any.FromString(page.encoding.direct.encoding)
            planar_msg = pb23.PlanarLayout.FromString(a.value)
            fields = _int_fields(planar_msg, [])
            if not fields:
                continue
            msg, fd = rng.choice(fields)
            value = min(rng.choice([0, 1, 2, 3, 7, 64, 65535, 2**31 - 1, 2**32 - 1, 2**63, 2**64 - 1]),
                        _LIMITS[fd.type])
            setattr(msg, fd.name, value)
            a.value = planar_msg.SerializeToString()
            page.encoding.direct.encoding = a.SerializeToString()
            data = rewrite_tail(original, cols)
            try:
                res, peak = peak_of(read_hostile, data)
            except Exception as exc:  # noqa: BLE001
                raise AssertionError(f"{fd.full_name} = {value} (column {ci} page {pi}) raised "
                                     f"{type(exc).__name__}: {exc}") from exc
            assert peak < PEAK_LIMIT, f"{fd.full_name} = {value} peaked at {peak} bytes"
            outcomes[res] += 1
    return outcomes


def test_hostile_planar_fields_fail_typed(original_2_3):
    outcomes = _planar_mutants(original_2_3, 25, seed=2303)
    assert outcomes["format"] > 8, outcomes


@pytest.mark.slow
@pytest.mark.timeout(3600)
@pytest.mark.parametrize("seed", range(4))
def test_hostile_planar_fields_slow(original_2_3, seed):
    _planar_mutants(original_2_3, 300, seed=seed)


@pytest.mark.parametrize("cut", [0, 16, 40, 41, 500])
def test_truncated_2_3_files_fail_typed(original_2_3, cut):
    store = MemoryStore()
    store.put("t.lance", original_2_3[:cut] if cut <= 41 else original_2_3[:-cut])
    with pytest.raises(FormatError):
        LanceFileReader(store, "t.lance").read_all()


def test_pages_of_old_unstable_2_3_writers_are_refused(pylance, tmp_path):
    """Releases before 14 (seen: 9.0.1, 12.0.0, 13.0.0) wrote "2.3" files whose pages are 2.2
    ``PageLayout``s; 14.0.2 refuses them ("unexpected type URL") and so do we (FILE-015). Such a
    file is a 2.2 file with footer 2/3."""
    t = pa.table({"i": pa.array(np.arange(50)), "s": pa.array([f"v{i % 4}" for i in range(50)])})
    path = tmp_path / "old.lance"
    with pylance.file.LanceFileWriter(str(path), t.schema, version="2.2") as w:
        w.write_batch(t)
    data = bytearray(path.read_bytes())
    struct.pack_into("<HH", data, len(data) - 8, 2, 3)
    path.write_bytes(bytes(data))
    with pytest.raises(Exception, match="type URL"):
        pylance.file.LanceFileReader(str(path)).read_all().to_table()
    with pytest.raises(FormatError) as err:
        LanceFileReader(LocalStore(str(tmp_path)), "old.lance").read_all()
    assert err.value.rule == "FILE-015"


def test_storage_version_2_4_stays_unsupported(original_2_3):
    data = bytearray(original_2_3)
    struct.pack_into("<HH", data, len(data) - 8, 2, 4)
    store = MemoryStore()
    store.put("t.lance", bytes(data))
    with pytest.raises(UnsupportedFeature):
        LanceFileReader(store, "t.lance")


# --- the 2.3 grammar, by hand --------------------------------------------------------------

def _ce(**kw) -> pb21.CompressiveEncoding:
    return pb21.CompressiveEncoding(**kw)


def test_sequences():
    rng = _ce(range=pb21.Range(uncompressed_bits_per_value=64, start=3, step=4))
    assert sequence.decode(rng, sequence.Buffers([]), 4).tolist() == [3, 7, 11, 15]
    # offsets [0, 7, 7] as 14.0.2 writes them: values 0, 7, ... repeated 1, 2, ... times
    rle = _ce(rle=pb21.Rle(values=_ce(range=pb21.Range(uncompressed_bits_per_value=64, step=7)),
                           run_lengths=_ce(range=pb21.Range(uncompressed_bits_per_value=32, start=1, step=1))))
    assert sequence.decode(rle, sequence.Buffers([]), 3).tolist() == [0, 7, 7]
    assert sequence.decode(rle, sequence.Buffers([]), 5).tolist() == [0, 7, 7, 14, 14]
    deltas = np.array([2, 1, 5], "<u4").tobytes()
    delta = _ce(delta=pb21.Delta(uncompressed_bits_per_value=32, base=10,
                                 deltas=_ce(flat=pb21.Flat(bits_per_value=32))))
    assert sequence.decode(delta, sequence.Buffers([deltas]), 4).tolist() == [10, 12, 13, 18]
    idx = np.array([1, 0, 1], "<u1").tobytes()
    dic = _ce(dictionary=pb21.Dictionary(indices=_ce(flat=pb21.Flat(bits_per_value=8)), items=rng,
                                         num_dictionary_items=2))
    framed = struct.pack("<QQ", len(idx), 0) + idx
    assert sequence.decode(dic, sequence.Buffers([framed]), 3).tolist() == [7, 3, 7]
    with pytest.raises(FormatError) as err:
        sequence.decode(dic, sequence.Buffers([framed[:-1]]), 3)
    assert err.value.rule == "ENC-001"
    with pytest.raises(FormatError):
        sequence.decode(dic, sequence.Buffers([]), 3)  # its buffer is missing


def _slot_set(kind, positions, count):
    return pb23.SparseSlotSet(kind=kind, positions=positions, count=count)


def test_sparse_structure_checks():
    empty = _ce(constant=pb21.Constant())
    every_other = _ce(range=pb21.Range(uncompressed_bits_per_value=64, step=2))
    leaf = pb23.SparseLayer(item=_slot_set(2, every_other, 3))
    ok = pb23.SparseStructure(layers=[leaf])
    layers = sparse.decode(ok, [], 6)
    assert layers[0].validity.tolist() == [True, False, True, False, True, False]
    too_many = pb23.SparseStructure(layers=[pb23.SparseLayer(item=_slot_set(2, every_other, 4))])
    with pytest.raises(FormatError) as err:
        sparse.decode(too_many, [], 6)  # position 6 lies outside 6 slots
    assert err.value.rule == "ENC-040"
    lst = pb23.SparseListLayer(num_child_slots=5, non_empty_positions=every_other, num_non_empty=2,
                               counts=_ce(constant=pb21.Constant(value=struct.pack("<Q", 2))),
                               validity=_slot_set(1, empty, 0))
    with pytest.raises(FormatError, match="sum to 4"):
        sparse.decode(pb23.SparseStructure(layers=[pb23.SparseLayer(list=lst), leaf]), [], 4)
    with pytest.raises(FormatError, match="leaf"):
        sparse.decode(pb23.SparseStructure(layers=[]), [], 4)
    with pytest.raises(FormatError, match="buffers"):
        sparse.decode(ok, [memoryview(b"x")], 6)  # a buffer nobody uses


def test_2_3_only_compression_is_refused_in_2_2_pages():
    """14.0.2 refuses generic variable offsets before 2.3; so do we (ENC-003), before reading."""
    mb = pb21.MiniBlockLayout(num_buffers=2, has_large_chunk=True, layers=[1], value_compression=_ce(
        variable=pb21.Variable(offsets=_ce(delta=pb21.Delta(uncompressed_bits_per_value=32, deltas=_ce(
            flat=pb21.Flat(bits_per_value=32)))))))
    for version in ("2.1", "2.2"):
        with pytest.raises(FormatError) as err:
            mini_block.decode(mb, [memoryview(b""), memoryview(b"")], version, 1)
        assert err.value.rule == "ENC-003" and "2.3" in str(err.value)
    assert compressive.only_in_2_3(mb) == ("non-flat variable offsets", "ENC-003")
    rle = pb21.Rle(values=_ce(flat=pb21.Flat(bits_per_value=64)), run_lengths=_ce(flat=pb21.Flat(bits_per_value=16)))
    assert compressive.only_in_2_3(rle)[1] == "ENC-012"


def test_planar_page_without_a_plane_is_refused():
    from reference_impl.proto import file2_pb2

    page = file2_pb2.ColumnMetadata.Page(length=1)
    a = any_pb2.Any(type_url=planar.PLANAR_URL, value=pb23.PlanarLayout(
        structure=pb23.StructuralPlane(dense=pb23.DenseStructure(layers=[1]))).SerializeToString())
    page.encoding.direct.encoding = a.SerializeToString()
    with pytest.raises(FormatError) as err:
        planar.page_layout(page, path="x")
    assert err.value.rule == "FILE-015"
    a.type_url = "/lance.encodings21.PageLayout"  # a 2.2 page in a 2.3 file
    page.encoding.direct.encoding = a.SerializeToString()
    with pytest.raises(FormatError) as err:
        planar.page_layout(page, path="x")
    assert err.value.rule == "FILE-015"
