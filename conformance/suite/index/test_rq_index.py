"""IVF_RQ's RaBitQ codes and factors held against the vectors (INDEX-148, INDEX-149).

Readable forms and their speed-ups (the fast rotation as butterflies and as one matrix; the
fast-scan and blocked layouts packed and unpacked), known answers, and pylance 14.0.2's own
indexes of every bit width (1 to 9 bits: every extended-code layout), metric and a
non-power-of-two dimension: the reference encoder gives pylance's own sign codes byte for
byte, and the kit judges them without a finding. Negative: sign codes exchanged between two
rows of a partition, extended codes exchanged, a factor changed, and a metric relabelled;
each is an error naming the row, and pylance answers through each other than its scan does.
pylance 11.0.0's: ``test_vector_index.py`` (compat).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from conformance.engine import validate
from conformance.fixtures.invalid_index import set_columns
from reference_impl.index.vector import rq


def _errors(report) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for f in report.findings:
        if str(getattr(f.severity, "value", f.severity)) == "error":
            out.setdefault(f.rule, []).append(f.message)
    return out


# -- the readable forms, their speed-ups, known answers -------------------------------------

@pytest.mark.parametrize("dim", [8, 16, 40, 64, 72, 128, 136])
def test_the_rotation_matrix_is_the_fast_rotation(dim):
    rng = np.random.default_rng(dim)
    signs = rng.integers(0, 256, rq.fast_rotation_signs_len(dim)).astype(np.uint8).tobytes()
    x = rng.standard_normal((40, dim))
    slow = rq.fast_rotation(x, signs)
    matrix = rq.rotation_matrix(signs, dim)
    assert np.abs(x @ matrix - slow).max() <= 1e-5 * np.abs(slow).max()
    # a rotation: lengths are kept
    assert np.allclose(matrix @ matrix.T, np.eye(dim), atol=1e-9)
    q = rq.RabitQuantizer(dim, 1, "fast", signs, True, "raw_query")
    assert np.abs(q.rotate(x) - slow).max() <= 1e-5 * np.abs(slow).max()


def test_no_sign_flips_is_the_identity_for_a_power_of_two():
    """Four normalised Walsh-Hadamard transforms are the identity (H H = D I): with no sign
    set, the rotation of 8 dimensions leaves every vector as it is."""
    x = np.arange(1, 9, dtype=np.float32)[None, :]
    assert np.allclose(rq.fast_rotation(x, bytes(4)), x, atol=1e-5)
    # one transform of the unit vector: every value 1/sqrt(8), signs by the Hadamard rows
    assert np.allclose(rq.walsh_hadamard(np.eye(8, dtype=np.float32)[:1])[0], np.ones(8))


def test_sign_codes_are_lsb_first_and_zero_is_non_negative():
    rotated = np.array([[1.0, -1.0, 0.0, -0.0, 2.0, -3.0, 0.5, -0.5,
                         -1.0, -1.0, -1.0, -1.0, -1.0, -1.0, -1.0, 1.0]], dtype=np.float32)
    # bits 0, 2, 4, 6 set (0.0 is non-negative; -0.0 is not), then bit 15
    assert rq.sign_codes(rotated).tolist() == [[0b01010101, 0b10000000]]


@pytest.mark.parametrize("ex_bits", range(1, 9))
@pytest.mark.parametrize("dim", [8, 16, 64, 72, 136])
def test_blocked_codes_round_trip(ex_bits, dim):
    values = np.random.default_rng(ex_bits * dim).integers(0, 1 << ex_bits, (7, dim))
    packed = rq.pack_blocked(values.astype(np.uint8), ex_bits)
    assert packed.shape == (7, -(-dim // 64) * 8 * ex_bits)
    assert (rq.unpack_blocked(packed, dim, ex_bits) == values).all()


def test_blocked_layout_known_answers():
    """Two of the layouts by hand: 1 bit is bit i of the block's bytes; 4 bits put dimension
    16j + b in the low nibble and 16j + 8 + b in the high nibble of byte 8j + b."""
    one = np.zeros((1, 64), np.uint8)
    one[0, [0, 9]] = 1
    assert rq.pack_blocked(one, 1)[0].tolist() == [1, 2, 0, 0, 0, 0, 0, 0]
    four = np.zeros((1, 64), np.uint8)
    four[0, 0], four[0, 8], four[0, 17] = 3, 5, 7
    packed = rq.pack_blocked(four, 4)[0]
    assert packed[0] == 3 | (5 << 4) and packed[9] == 7 and packed.sum() == 3 + 80 + 7


@pytest.mark.parametrize("lengths", [[0], [5], [32], [33, 70, 0, 64]])
def test_fast_scan_round_trip(lengths):
    codes = np.random.default_rng(len(lengths)).integers(0, 256, (sum(lengths), 4))
    codes = codes.astype(np.uint8)
    assert (rq.unpack_fast_scan(rq.pack_fast_scan(codes, lengths), lengths) == codes).all()


def test_fast_scan_known_answer():
    """Block of 32 rows, one code byte: byte j of the run holds the low nibbles of rows
    BLOCK_ORDER[j] and BLOCK_ORDER[j] + 16, byte 16 + j their high nibbles."""
    codes = np.zeros((32, 1), np.uint8)
    codes[8, 0] = 0xAB   # row 8 is BLOCK_ORDER[1]
    codes[16, 0] = 0x0C  # row 16 is BLOCK_ORDER[0] + 16
    run = rq.pack_fast_scan(codes, [32]).reshape(-1)
    assert run[1] == 0xB and run[17] == 0xA and run[0] == 0xC0 and run.sum() == 0xB + 0xA + 0xC0


def test_an_extended_code_is_judged_by_one_rescaling():
    """A code is right when one rescaling t gives every magnitude, whichever t the writer
    picked; magnitudes of another vector are not."""
    x = np.array([[0.9, -0.3, 0.1, 0.05, -0.02, 0.2, -0.1, 0.3]], dtype=np.float32)
    best = rq.best_magnitudes(x, 3)
    assert not len(rq.wrong_ex_codes(x, best, 3)[0])
    norm = np.linalg.norm(x)
    other_t = np.clip(np.floor(5.0 * np.abs(x) / norm + 1e-5), 0, 7).astype(np.int64)
    assert not len(rq.wrong_ex_codes(x, other_t, 3)[0])
    reversed_ = best[:, ::-1]
    rows, a, b = rq.wrong_ex_codes(x, reversed_, 3)
    assert rows.tolist() == [0] and a[0] != b[0]


# -- pylance 14.0.2's own indexes -----------------------------------------------------------

def _aux(path: Path):
    """(auxiliary.idx table, decoded content) of the one index of ``path``."""
    from reference_impl.dataset import open_dataset
    from reference_impl.index import of_dataset

    ds = open_dataset(str(path))
    (ix,) = [i for i in of_dataset.decoded(ds) if i.name == "vec_idx"]
    files = of_dataset.index_files(ds, ix)
    return files.lance_file("auxiliary.idx").read_all(), of_dataset.read(ds, ix)


def _build(path: Path, *, dim=16, n=600, bits=1, metric="l2", seed=0):
    import lance

    vec = np.random.default_rng(seed).standard_normal((n, dim)).astype(np.float32)
    vec += (np.arange(n) % 3)[:, None].astype(np.float32)
    t = pa.table({"id": pa.array(np.arange(n)),
                  "vec": pa.FixedSizeListArray.from_arrays(pa.array(vec.ravel()), dim)})
    if path.exists():
        shutil.rmtree(path)
    ds = lance.write_dataset(t, str(path), max_rows_per_file=250)
    ds.create_index("vec", "IVF_RQ", num_partitions=3, num_bits=bits, metric=metric)
    return vec


@pytest.mark.interop
@pytest.mark.parametrize("bits,metric,dim", [
    (1, "l2", 16), (2, "dot", 16), (3, "cosine", 64), (4, "l2", 40), (5, "l2", 64),
    (6, "dot", 72), (7, "cosine", 128), (8, "l2", 16), (9, "l2", 136)])
def test_pylance_own_rq_indexes_are_judged_clean(tmp_path, bits, metric, dim):
    """Every extended-code layout (num_bits 2 to 9 = 1 to 8 extra bits), the three metrics,
    dimensions not a power of two: no finding, nothing left unjudged, and the reference
    encoder gives pylance's own sign codes byte for byte, and its extended codes where the
    search's float ties fall the same way (the factors then agree to float rounding; all of
    them up to 4 bits, 9-90% of them with 5 to 9 bits, where the others' cosines differ by
    less than 1e-4)."""
    path = tmp_path / "t"
    vec = _build(path, dim=dim, bits=bits, metric=metric)
    report = validate(str(path), deep=True)
    assert not _errors(report), _errors(report)
    assert not report.not_judged, report.not_judged
    table, content = _aux(path)
    q, ex = content.extra["rq"], content.extra
    assert q.num_bits == bits and q.code_dim == dim and q.packed
    rows = content.entries.column("row_id").to_numpy().astype(np.int64)
    # rows are addresses: fragments of 250 rows
    ids = (rows >> 32) * 250 + (rows & 0xFFFFFFFF)
    x = vec[ids].astype(np.float64)
    if metric == "cosine":
        x = x / np.linalg.norm(x, axis=1, keepdims=True)
    part = content.entries.column("partition").to_numpy().astype(np.int64)
    made = rq.encode(q, x, part, ex["centroids"], metric, ex["declared_lengths"])
    stored = np.stack(table.column("_rabit_codes").to_numpy(zero_copy_only=False))
    assert (made["_rabit_codes"] == stored).all()
    if bits > 1:
        ex_stored = np.stack(table.column("__blocked_ex_codes").to_numpy(zero_copy_only=False))
        same = (made["__blocked_ex_codes"] == ex_stored).all(1)
        # where the float ties fall otherwise, pylance's code points along the residual as
        # nearly as the reference search's (the search is the same; its sums round apart)
        rotated = q.rotate(x - ex["centroids"][part])
        mags = rq.ex_magnitudes(rotated, rq.unpack_blocked(ex_stored, dim, q.ex_bits), q.ex_bits)
        ours = rq.best_magnitudes(rotated, q.ex_bits)
        gap = rq.code_alignment(rotated, ours) - rq.code_alignment(rotated, mags)
        assert gap.max() < 1e-4 and same.any(), (gap.max(), same.mean())
        for name in ("__add_factors_ex", "__scale_factors_ex"):
            have = table.column(name).to_numpy()[same]
            assert np.allclose(made[name][same], have, rtol=1e-3, atol=1e-3), name
    for name in ("__add_factors", "__scale_factors", "__error_factors"):
        assert np.allclose(made[name], table.column(name).to_numpy(), rtol=1e-3, atol=1e-3)


@pytest.mark.interop
@pytest.mark.parametrize("bits", [1, 4])
def test_the_factors_estimate_a_rows_own_vector_at_zero(tmp_path, bits):
    """Read back (what the index census answers from): the factors' distance estimate of a
    row's own vector is 0 (to float rounding), and with extended codes the vectors the codes
    stand for point along the rows' own (cosine above 0.98)."""
    path = tmp_path / "t"
    vec = _build(path, bits=bits, dim=16)
    _table, content = _aux(path)
    ex = content.extra
    q = ex["rq"]
    rows = content.entries.column("row_id").to_numpy().astype(np.int64)
    ids = (rows >> 32) * 250 + (rows & 0xFFFFFFFF)
    part = content.entries.column("partition").to_numpy().astype(np.int64)
    codes = np.stack(content.entries.column("code").to_numpy(zero_copy_only=False))
    for i in range(0, len(rows), 97):
        d = rq.estimated_distances(q, codes, part, ex["centroids"], ex["rq_factors"],
                                   vec[ids[i]], ex.get("rq_ex"))
        assert abs(d[i]) < 1e-3 * max(1.0, float(np.abs(d).mean()))
    if bits > 1:
        made = rq.reconstruct(q, codes, part, ex["centroids"], "l2", ex["rq_factors"],
                              ex["rq_ex"])
        x = vec[ids].astype(np.float64)
        cos = (made * x).sum(1) / np.linalg.norm(made, axis=1) / np.linalg.norm(x, axis=1)
        assert cos.min() > 0.98 and cos.mean() > 0.99, (cos.min(), cos.mean())


def _rewrite(path: Path, change) -> None:
    from conformance.releases.index_mutations import rewrite_index_file

    rewrite_index_file(path, "auxiliary.idx", change)


def _column(t: pa.Table, name: str) -> np.ndarray:
    col = t.column(name)
    if pa.types.is_fixed_size_list(col.type):
        return np.stack(col.to_numpy(zero_copy_only=False))
    return col.to_numpy().copy()


def _lengths(path: Path) -> np.ndarray:
    return _aux(path)[1].extra["declared_lengths"]


def _own_hits(path: Path, vec: np.ndarray, k=1, probes=20) -> float:
    """The share of ``probes`` rows pylance finds first (k=1) through the index for their own
    vector, as its scan does."""
    import lance

    ds = lance.dataset(str(path))
    hits = 0
    for i in range(probes):
        got = ds.to_table(columns=["id"], nearest={"column": "vec", "q": vec[i], "k": k,
                                                   "nprobes": 3, "refine_factor": None})
        hits += int(got.column("id").to_pylist()[:1] == [i])
    return hits / probes


@pytest.mark.interop
def test_sign_codes_exchanged_in_a_partition_are_named(tmp_path):
    path = tmp_path / "t"
    vec = _build(path, bits=1)
    before = _own_hits(path, vec)
    lengths = _lengths(path)

    def change(t):
        codes = rq.unpack_fast_scan(_column(t, "_rabit_codes"), lengths)
        # exchange each row's code with the next row's in every partition
        start = 0
        for n in lengths.tolist():
            idx = np.arange(start, start + n - n % 2)
            codes[idx] = codes[idx.reshape(-1, 2)[:, ::-1].reshape(-1)]
            start += n
        return set_columns(t, {"_rabit_codes": rq.pack_fast_scan(codes, lengths)}), \
            "codes exchanged"

    _rewrite(path, change)
    errors = _errors(validate(str(path), deep=True))
    assert set(errors) == {"INDEX-148"}, errors
    assert any("sign code whose bit" in m and "row" in m for m in errors["INDEX-148"])
    assert _own_hits(path, vec) < before  # pylance's answers through it are worse


@pytest.mark.interop
def test_extended_codes_exchanged_are_named(tmp_path):
    path = tmp_path / "t"
    _build(path, bits=5, dim=32)

    def change(t):
        ex = _column(t, "__blocked_ex_codes")
        return set_columns(t, {"__blocked_ex_codes": ex[::-1].copy()}), "extended codes reversed"

    _rewrite(path, change)
    errors = _errors(validate(str(path), deep=True))
    assert "INDEX-148" in errors, errors
    assert any("extended RaBitQ code that no one rescaling" in m for m in errors["INDEX-148"])


@pytest.mark.interop
@pytest.mark.parametrize("name", ["__add_factors", "__scale_factors", "__error_factors",
                                  "__add_factors_ex", "__scale_factors_ex"])
def test_a_factor_of_another_row_is_named(tmp_path, name):
    path = tmp_path / "t"
    _build(path, bits=3, dim=16)

    def change(t):
        values = _column(t, name)
        values[:10] = values[10:20]
        return set_columns(t, {name: values}), f"{name} of rows 10..19 over rows 0..9"

    _rewrite(path, change)
    errors = _errors(validate(str(path), deep=True))
    assert set(errors) == {"INDEX-149"}, errors
    assert any(name in m for m in errors["INDEX-149"])


@pytest.mark.interop
def test_pylance_reads_the_reference_encoding_as_its_own(tmp_path):
    """The storage re-encoded by the reference writer under other rotation signs: pylance
    14.0.2 finds each probed row first for its own vector as it did through its own codes,
    and the kit judges it clean."""
    path = tmp_path / "t"
    vec = _build(path, bits=3, dim=32)
    before = _own_hits(path, vec)
    _table, content = _aux(path)
    ex = content.extra
    rows = content.entries.column("row_id").to_numpy().astype(np.int64)
    ids = (rows >> 32) * 250 + (rows & 0xFFFFFFFF)
    part = content.entries.column("partition").to_numpy().astype(np.int64)
    signs = bytes(range(7, 7 + rq.fast_rotation_signs_len(32)))

    def change(t):
        meta = dict(t.schema.metadata)
        smeta = json.loads(json.loads(meta[b"storage_metadata"])[0])
        smeta["fast_rotation_signs"] = list(signs)
        q = rq.from_metadata(smeta)
        made = rq.encode(q, vec[ids].astype(np.float64), part, ex["centroids"], "l2",
                         ex["declared_lengths"])
        t = set_columns(t, made)
        meta[b"storage_metadata"] = json.dumps([json.dumps(smeta)]).encode()
        return t.replace_schema_metadata(meta), "re-encoded"

    _rewrite(path, change)
    assert not _errors(validate(str(path), deep=True))
    assert _own_hits(path, vec) >= before - 0.1


# -- older releases' layouts (compat) ---------------------------------------------------------

_OLDER = """
import sys, lance, numpy as np, pyarrow as pa
path, bits, metric, compact = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4] == "compact"
vec = np.random.default_rng(3).standard_normal((2000, 16)).astype(np.float32)
t = pa.table({"id": pa.array(np.arange(2000)),
              "vec": pa.FixedSizeListArray.from_arrays(pa.array(vec.ravel()), 16)})
ds = lance.write_dataset(t, path, max_rows_per_file=500)
ds.create_index("vec", "IVF_RQ", num_partitions=4, num_bits=bits, metric=metric)
ds.delete("id % 10 = 3")
if compact:
    lance.dataset(path).optimize.compact_files(target_rows_per_fragment=5000)
ds = lance.dataset(path)
found = 0
for i in range(0, 2000, 50):
    got = ds.to_table(columns=["id"], nearest={"column": "vec", "q": vec[i], "k": 3,
                                               "nprobes": 4}).column("id").to_pylist()
    found += i in got
print(found)
"""


def _older(tmp_path, release, bits, metric, compact=False) -> tuple[Path, int]:
    import subprocess

    from conformance.releases.venvs import Release, ensure_venv

    python = ensure_venv(Release.parse(release))
    path = tmp_path / "t"
    done = subprocess.run([str(python), "-c", _OLDER, str(path), str(bits), metric,
                           "compact" if compact else "-"], check=True, capture_output=True,
                          text=True, timeout=600)
    return path, int(done.stdout.split()[-1])


@pytest.mark.compat
@pytest.mark.parametrize("release,bits,metric", [
    # 1.0.4: a dense rotation matrix of D x num_bits dimensions, residual_query factors
    ("pylance==1.0.4", 1, "l2"), ("pylance==1.0.4", 2, "dot"),
    # 4.0.2: the fast rotation over D x num_bits dimensions, residual_query factors
    ("pylance==4.0.2", 1, "cosine"), ("pylance==4.0.2", 4, "l2"),
    # 9.0.1: the raw_query layout of 11.0.0 and 14.0.2
    ("pylance==9.0.1", 3, "l2")])
def test_older_layouts_are_judged_clean(tmp_path, release, bits, metric):
    """Each release's own IVF_RQ after a delete: judged whole (codes and factors), no error;
    a multi-bit index of 1.0.4 or 4.0.2 draws the INDEX-150 warning (9.0.1 on refuse to
    search it), a one-bit one does not."""
    path, _found = _older(tmp_path, release, bits, metric)
    report = validate(str(path), versions="all", deep=True)
    assert not _errors(report), _errors(report)
    assert not report.not_judged, report.not_judged
    wide = [f for f in report.findings if f.rule == "INDEX-150"]
    assert bool(wide) == (bits > 1 and release in ("pylance==1.0.4", "pylance==4.0.2")), wide
    content = _aux(path)[1]
    q = content.extra["rq"]
    expected = "residual_query" if release != "pylance==9.0.1" else "raw_query"
    assert q.query_estimator == expected and q.judges_factors
    if release == "pylance==1.0.4":
        assert q.rotation_type == "matrix" and q.code_dim == 16 * bits


@pytest.mark.compat
@pytest.mark.parametrize("release", ["pylance==1.0.4", "pylance==4.0.2", "pylance==9.0.1"])
def test_compaction_of_older_releases(tmp_path, release):
    """pylance 1.0.4's and 4.0.2's compact_files leaves RaBitQ codes under other rows: the
    release then misses rows searching for their own vectors, and the kit names INDEX-148
    (an expected finding of those releases); 9.0.1's compaction keeps them (no error)."""
    path, found = _older(tmp_path, release, 1, "l2", compact=True)
    errors = _errors(validate(str(path), deep=True))
    if release == "pylance==9.0.1":
        assert not errors and found >= 38, (errors, found)
    else:
        assert set(errors) == {"INDEX-148"} and found < 30, (errors, found)


# -- another engine's IVF_RQ ------------------------------------------------------------------

@pytest.mark.interop
def test_duckdb_builds_the_layout_pylance_refuses(tmp_path, pylance):
    """DuckDB's Lance extension (1.5.5, Lance 6.0.0) builds IVF_RQ in the layout of pylance
    1.0.4 and 4.0.2 (D x num_bits rotated dimensions, no query estimator), more than one bit
    by default: the kit judges it whole with no error and warns (INDEX-150); pylance 14.0.2
    refuses a search through it."""
    from conformance.suite.parts import unavailable

    try:
        from conformance.harness.examples.duckdb.adapter import connect, sql_string
        con = connect()
    except (ImportError, SystemExit) as exc:
        unavailable("duckdb and its Lance extension", f"{exc!r}: pip install -e '.[duckdb]'")
    vec = np.random.default_rng(4).standard_normal((800, 16)).astype(np.float32)
    path = tmp_path / "t"
    pylance.write_dataset(pa.table({
        "id": pa.array(np.arange(800)),
        "vec": pa.FixedSizeListArray.from_arrays(pa.array(vec.ravel()), 16)}), str(path),
        max_rows_per_file=300)
    con.execute(f"CREATE INDEX idx_vec ON {sql_string(str(path))} (vec) USING IVF_RQ")
    report = validate(str(path), deep=True)
    assert not _errors(report), _errors(report)
    assert not report.not_judged, report.not_judged
    assert any(f.rule == "INDEX-150" for f in report.findings)
    q = _aux_named(path, "idx_vec").extra["rq"]
    assert q.query_estimator == "residual_query" and q.num_bits > 1 and q.code_dim > 16
    with pytest.raises(Exception, match="blocked_ex_codes"):
        pylance.dataset(str(path)).to_table(nearest={"column": "vec", "q": vec[0], "k": 3})


def _aux_named(path: Path, name: str):
    from reference_impl.dataset import open_dataset
    from reference_impl.index import of_dataset

    ds = open_dataset(str(path))
    (ix,) = [i for i in of_dataset.decoded(ds) if i.name == name]
    return of_dataset.read(ds, ix)


@pytest.mark.interop
@pytest.mark.parametrize("edit", [{"code_dim": 24}, {"num_bits": 0}, {"fast_rotation_signs": [1]},
                                  {"rotation_type": "matrix", "rotate_mat_position": 9},
                                  {"code_dim": "wide"}, {"fast_rotation_signs": {"a": 1}}])
def test_storage_metadata_out_of_shape_is_a_typed_finding(tmp_path, edit):
    """storage_metadata that does not fit the storage (a code width other than the codes',
    no bits, rotation signs of another length, a rotation matrix in a buffer that is not
    there): an INDEX-100 finding or a "not judged" note naming it, never a crash and never a
    silent pass of the codes."""
    path = tmp_path / "t"
    _build(path, bits=1)

    def change(t):
        meta = dict(t.schema.metadata)
        smeta = json.loads(json.loads(meta[b"storage_metadata"])[0])
        smeta.update(edit)
        meta[b"storage_metadata"] = json.dumps([json.dumps(smeta)]).encode()
        return t.replace_schema_metadata(meta), f"storage_metadata {edit}"

    _rewrite(path, change)
    report = validate(str(path), deep=True)
    assert not [f for f in report.findings if f.rule.startswith("ENGINE")]
    assert "INDEX-100" in _errors(report) or any("vec_idx" in n for n in report.not_judged), (
        _errors(report), report.not_judged)
