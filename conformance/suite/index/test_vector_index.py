"""Vector indexes held against their data (INDEX-140..146, and the shared INDEX-101/103).

Negative: the "swap" family of issue 35 (two tables with the same rows, one in reverse order,
the same index; the second's index files copied over the first's), a PQ code replaced and
centroids exchanged in the bytes, rows moved, doubled, graphs broken in the decoded content,
and upstream's ``test_data/v0.8.14/corrupt_index`` (an IVF_PQ whose fragment bitmap misses a
fragment it holds rows of). Positive: pylance 14.0.2's own indexes of every vector kind and
metric, after append, delete, update, compaction and optimize_indices; older releases under
``compat``.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from conformance.engine import validate
from reference_impl.errors import UnsupportedIndex
from reference_impl.index import IndexedData, IndexFiles
from reference_impl.index.vector import check as vector_check
from reference_impl.index.vector import hnsw, ivf, pq, read, sq
from reference_impl.io.local import LocalStore

DATA = Path(__file__).parent / "data"
UPSTREAM_0_8_14 = DATA / "upstream_v0.8.14_corrupt_index"

N, D = 1000, 8


def _errors(report) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for f in report.findings:
        if str(getattr(f.severity, "value", f.severity)) == "error":
            out.setdefault(f.rule, []).append(f.message)
    return out


def _vectors(seed=0, n=N, d=D) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((n, d)).astype(np.float32)


def _table(vec: np.ndarray, order=None) -> pa.Table:
    order = np.arange(len(vec)) if order is None else order
    return pa.table({"id": pa.array(np.arange(len(vec))[order]),
                     "vec": pa.FixedSizeListArray.from_arrays(pa.array(vec[order].ravel()),
                                                              vec.shape[1])})


def _params(kind: str, metric: str = "l2") -> dict:
    kw = dict(num_partitions=4, metric=metric)
    if "PQ" in kind:
        kw["num_sub_vectors"] = 2
    return kw


def _build(path: Path, kind: str, *, order=None, metric="l2", **write):
    import lance

    ds = lance.write_dataset(_table(_vectors(), order), str(path), **write)
    ds.create_index("vec", kind, **_params(kind, metric))
    return lance.dataset(str(path))


def _index_dir(path: Path) -> Path:
    (d,) = [p for p in (path / "_indices").iterdir() if (p / "index.idx").exists()]
    return d


def _content(path: Path):
    d = _index_dir(path)
    return read(IndexFiles(LocalStore(str(d)), {p.name: p.name for p in d.iterdir()}), None)


# -- the readable paths equal the vectorised ones ----------------------------------------------

@pytest.mark.parametrize("metric", ["l2", "cosine", "dot"])
def test_distances_equal_their_readable_form(metric):
    x, c = _vectors(1, 20, 6), _vectors(2, 5, 6)
    np.testing.assert_allclose(ivf.distances(x, c, metric), ivf.distances_readable(x, c, metric),
                               rtol=1e-9, atol=1e-9)


def test_pq_and_sq_encodings_equal_their_readable_form():
    rng = np.random.default_rng(3)
    q = pq.from_codebook(8, 2, 6, rng.standard_normal(256 * 6))
    x = rng.standard_normal((30, 6))
    assert q.encode(x).tolist() == [q.encode_readable(v) for v in x]
    s = sq.ScalarQuantizer(8, -2.0, 2.5)
    assert s.quantize(x).tolist() == [s.quantize_readable(v) for v in x]
    assert s.quantize(np.array([[-2.0, 2.5, -9.0, 9.0]])).tolist() == [[0, 255, 0, 255]]


def test_pq_and_sq_decodings_stand_for_their_codes():
    """What an IVF_HNSW_SQ/PQ graph's distances are of: an SQ code decodes to the bottom of
    its bucket (within one bucket below the value), a PQ code to its codewords
    concatenated."""
    rng = np.random.default_rng(4)
    q = pq.from_codebook(8, 2, 6, rng.standard_normal(256 * 6))
    x = rng.standard_normal((30, 6))
    codes = q.encode(x)
    dec = q.decode(codes)
    assert dec.shape == x.shape
    assert np.allclose(dec[:, 3:], q.codebook[1][codes[:, 1]])
    assert (q.encode(dec) == codes).all()
    s = sq.ScalarQuantizer(8, -2.0, 2.5)
    inside = np.clip(x, -2.0, 2.5)
    below = inside - s.decode(s.quantize(inside))
    assert below.min() >= -1e-12 and below[inside < 2.5].max() <= 4.5 / 255 + 1e-12
    assert s.decode(np.array([[0, 255]])).tolist() == [[-2.0, 2.5]]


def test_untranspose_restores_row_codes():
    codes = np.arange(2 * 3 + 3 * 3, dtype=np.uint8).reshape(-1, 3)  # partitions of 2 and 3
    stored = np.concatenate([codes[:2].T.reshape(-1), codes[2:].T.reshape(-1)]).reshape(-1, 3)
    assert pq.untranspose(stored, np.array([2, 3]), 3).tolist() == codes.tolist()


def test_unknown_layouts_are_refused_by_name(tmp_path):
    (tmp_path / "graph.bin").write_bytes(b"x" * 32)
    with pytest.raises(UnsupportedIndex, match="graph.bin"):
        read(IndexFiles(LocalStore(str(tmp_path)), {"graph.bin": "graph.bin"}), None)
    (tmp_path / "index.idx").write_bytes(b"\0" * 40)
    with pytest.raises(UnsupportedIndex, match="not a layout"):
        read(IndexFiles(LocalStore(str(tmp_path)), {"index.idx": "index.idx"}), None)


def test_hnsw_problems_name_nodes_outside_the_partition():
    good = hnsw.HnswGraph(0, {}, [(np.arange(3), np.array([0, 1, 2, 3]), np.array([1, 2, 0])),
                                  (np.array([0]), np.array([0, 0]), np.array([], np.int64))])
    assert hnsw.problems(good, 3) == []
    bad = hnsw.HnswGraph(7, {}, [(np.array([0, 1, 1]), np.array([0, 1, 2, 3]),
                                  np.array([1, 9, 0]))])
    found = " | ".join(hnsw.problems(bad, 3))
    assert "neighbour 9" in found and "level 0 holds 2 distinct" in found
    assert "entry point 7" in found


def test_hnsw_distances_of_other_vectors_are_named_and_unreachable_nodes_found():
    """An edge whose recorded distance is not its two stored vectors' is named (node,
    neighbour, recorded, actual); distances that are the vectors' are not; a node no walk
    from the entry point reaches is listed by ``unreachable``."""
    x = np.array([[0.0, 0.0], [3.0, 0.0], [0.0, 4.0]])
    levels = [(np.arange(3), np.array([0, 2, 3, 4]), np.array([1, 2, 0, 0]))]
    right = hnsw.HnswGraph(0, {}, levels, [np.array([9.0, 16.0, 9.0, 16.0])])
    assert hnsw.wrong_distances(right, x) == []
    assert hnsw.unreachable(right, 3).tolist() == []
    wrong = hnsw.HnswGraph(0, {}, levels, [np.array([9.0, 1.0, 9.0, 16.0])])
    assert hnsw.wrong_distances(wrong, x) == [(0, 2, 1.0, 16.0)]
    assert hnsw.wrong_distances(hnsw.HnswGraph(0, {}, levels), x) == []  # no distances kept
    lonely = hnsw.HnswGraph(0, {}, [(np.arange(3), np.array([0, 1, 2, 2]),
                                     np.array([1, 0]))])
    assert hnsw.unreachable(lonely, 3).tolist() == [2]


@pytest.mark.interop
def test_hnsw_graph_of_other_distances_is_an_error(tmp_path):
    """pylance 14.0.2's IVF_HNSW_FLAT records the stored vectors' distances (no INDEX-147);
    the same graph with an edge's distance changed, as pylance 4.0.2's optimize_indices
    leaves it, is INDEX-147 naming the row."""
    path = tmp_path / "t"
    _build(path, "IVF_HNSW_FLAT")
    data = _data_of(path)
    c = _content(path)
    assert c.extra["hnsw"][0].distances is not None
    assert _rules(c, data) == {}
    graph = c.extra["hnsw"][0]
    level0 = graph.distances[0].copy()
    level0[0] += 7.5
    graph.distances[0] = level0
    found = _rules(c, data)
    assert list(found) == ["INDEX-147"]
    node = int(graph.levels[0][0][np.searchsorted(graph.levels[0][1], 0, side="right") - 1])
    row = int(c.entries.column("row_id")[node].as_py())
    assert [d.row_id for d in found["INDEX-147"]] == [row]
    assert "partition 0" in found["INDEX-147"][0].message


# -- pylance 14.0.2's own indexes: no error ----------------------------------------------------

@pytest.mark.interop
@pytest.mark.parametrize("kind", ["IVF_FLAT", "IVF_PQ", "IVF_SQ", "IVF_HNSW_FLAT",
                                  "IVF_HNSW_SQ", "IVF_HNSW_PQ"])
def test_own_index_draws_no_error(tmp_path, kind):
    _build(tmp_path / "t", kind, max_rows_per_file=400)
    content = _content(tmp_path / "t")
    assert content.version == f"{kind}/lance-file" and content.entries.num_rows == N
    report = validate(str(tmp_path / "t"), deep=True)
    assert not _errors(report), _errors(report)
    assert not any("vec_idx" in n for n in report.not_judged), report.not_judged


@pytest.mark.interop
@pytest.mark.parametrize("kind", ["IVF_FLAT", "IVF_PQ", "IVF_SQ"])
@pytest.mark.parametrize("metric", ["cosine", "dot"])
def test_own_index_of_other_metrics_draws_no_error(tmp_path, kind, metric):
    _build(tmp_path / "t", kind, metric=metric)
    assert _content(tmp_path / "t").extra["metric"] == metric
    report = validate(str(tmp_path / "t"), deep=True)
    assert not _errors(report), _errors(report)


def _lifecycle(path: Path, *, stable: bool, update: bool) -> None:
    import lance

    ds = _build(path, "IVF_PQ", max_rows_per_file=300, enable_stable_row_ids=stable)
    ds.delete("id < 300")  # a whole fragment, and
    ds.delete("id % 7 = 0")  # rows of the others
    ds = lance.write_dataset(_table(_vectors(5, 200)), str(path), mode="append")
    ds.optimize.optimize_indices()
    if update:
        ds = lance.dataset(str(path))
        ds.update({"vec": "[0,0,0,0,0,0,0,1]"}, where="id = 400")
    ds = lance.dataset(str(path))
    ds.optimize.compact_files(target_rows_per_fragment=2000)
    ds = lance.dataset(str(path))
    ds.optimize.optimize_indices()


@pytest.mark.interop
@pytest.mark.parametrize("stable,update", [(False, True), (True, False)])
def test_own_index_after_append_delete_update_compaction_optimize(tmp_path, stable, update):
    _lifecycle(tmp_path / "t", stable=stable, update=update)
    report = validate(str(tmp_path / "t"), versions="all", deep=True)
    assert not _errors(report), _errors(report)


@pytest.mark.interop
def test_own_index_after_update_and_compaction_under_stable_row_ids(tmp_path):
    _lifecycle(tmp_path / "t", stable=True, update=True)
    report = validate(str(tmp_path / "t"), versions="all", deep=True)
    assert not _errors(report), _errors(report)


# -- the swap family: another table's index files over this one's ------------------------------

def _swap(tmp_path: Path, kind: str) -> Path:
    a, b = tmp_path / "a", tmp_path / "b"
    _build(a, kind)
    _build(b, kind, order=np.arange(N)[::-1])
    da, db = _index_dir(a), _index_dir(b)
    for f in db.iterdir():
        if (da / f.name).exists() and (da / f.name).stat().st_size != f.stat().st_size:
            pytest.fail(f"{f.name}: the two builds differ in size, the swap is not the case")
        shutil.copyfile(f, da / f.name)
    return a


@pytest.mark.interop
@pytest.mark.parametrize("kind,content_rule", [("IVF_FLAT", "INDEX-142"),
                                               ("IVF_PQ", "INDEX-143"),
                                               ("IVF_SQ", "INDEX-144")])
def test_swapped_index_files_are_errors(tmp_path, kind, content_rule):
    a = _swap(tmp_path, kind)
    errors = _errors(validate(str(a), deep=True))
    # row k of the index is the reverse table's row k: the vector of row N-1-k here
    assert content_rule in errors, errors
    assert "INDEX-145" in errors, errors  # and rows sit under centroids not theirs
    itemised = [m for m in errors[content_rule] if "more disagreements" not in m]
    assert itemised and all("index 'vec_idx'" in m and "row " in m for m in itemised)


# -- edits of the bytes that keep the files valid --------------------------------------------

def _patch(path: Path, old: bytes, new: bytes) -> None:
    raw = path.read_bytes()
    assert raw.count(old) == 1, "the bytes to patch are not unique"
    path.write_bytes(raw.replace(old, new))


@pytest.mark.interop
def test_replaced_pq_code_is_an_error(tmp_path):
    path = tmp_path / "t"
    _build(path, "IVF_PQ")
    content = _content(path)
    e = content.entries
    rows = e.column("row_id").to_numpy()
    parts = e.column("partition").to_numpy().astype(int)
    lengths = content.extra["lengths"]
    q, cents = content.extra["pq"], content.extra["centroids"]
    x = _vectors()  # one fragment: the row address is the row's position
    m = q.num_sub_vectors
    # the column as stored (partition after partition, each sub-space-major)
    codes = np.stack(e.column("code").to_numpy(zero_copy_only=False))
    column = np.concatenate([codes[s:s + n].T.reshape(-1) for s, n in
                             zip(np.concatenate([[0], np.cumsum(lengths)[:-1]]), lengths, strict=False)])
    aux = _index_dir(path) / "auxiliary.idx"
    raw = aux.read_bytes()
    for i in range(len(rows)):
        start = int(np.concatenate([[0], np.cumsum(lengths)])[parts[i]])
        local = i - start
        flat_at = start * m + 0 * int(lengths[parts[i]]) + local  # sub-space 0 of row i
        stored_row = flat_at // m
        chunk = column[stored_row * m:(stored_row + 1) * m].tobytes()
        if raw.count(chunk) != 1:
            continue
        resid = x[int(rows[i])] - cents[parts[i]]
        d = ((q.codebook[0] - resid[:q.sub_dim]) ** 2).sum(1)
        far = int(d.argmax())
        edited = bytearray(chunk)
        edited[flat_at % m] = far
        _patch(aux, chunk, bytes(edited))
        break
    else:
        pytest.fail("no row's stored code bytes are unique in the file")
    errors = _errors(validate(str(path), deep=True))
    assert "INDEX-143" in errors, errors
    assert any(f"row 0:{int(rows[i])} " in msg for msg in errors["INDEX-143"]), errors


@pytest.mark.interop
def test_exchanged_centroids_put_rows_in_other_partitions(tmp_path):
    path = tmp_path / "t"
    _build(path, "IVF_FLAT")
    cents = _content(path).extra["centroids"]
    idx = _index_dir(path) / "index.idx"
    old = cents[0].tobytes() + cents[1].tobytes()
    new = cents[1].tobytes() + cents[0].tobytes()
    _patch(idx, old, new)
    errors = _errors(validate(str(path), deep=True))
    assert set(errors) == {"INDEX-145"}, errors
    assert any("is in partition 0" in m or "is in partition 1" in m for m in errors["INDEX-145"])


# -- edits of the decoded content (what a writer could get wrong) --------------------------------

def _data_of(path: Path) -> IndexedData:
    import lance

    t = lance.dataset(str(path)).to_table(columns=["vec"], with_row_address=True)
    rows = t.column("_rowaddr").to_numpy().astype(np.uint64)
    order = np.argsort(rows)
    return IndexedData(field_id=1, field_name="vec", stable_row_ids=False,
                       fragment_ids=np.array([0], np.uint32), row_ids=rows[order],
                       values=t.column("vec").combine_chunks().take(pa.array(order)))


class _Index:
    name = "vec_idx"


def _rules(content, data) -> dict[str, list]:
    out: dict[str, list] = {}
    for d in vector_check(content, _Index, data):
        out.setdefault(d.rule, []).append(d)
    return out


def _with_column(content, name, values):
    e = content.entries
    content.entries = e.set_column(e.column_names.index(name), name, values)
    return content


@pytest.mark.interop
def test_content_edits_are_named(tmp_path):
    path = tmp_path / "t"
    _build(path, "IVF_SQ")
    data = _data_of(path)
    assert _rules(_content(path), data) == {}
    # a row moved to another partition
    c = _content(path)
    part = c.entries.column("partition").to_numpy().copy()
    moved = int(np.nonzero(part == 0)[0][0])
    part[moved] = 1
    found = _rules(_with_column(c, "partition", pa.array(part, pa.uint32())), data)
    row = int(c.entries.column("row_id")[moved].as_py())
    assert [d.row_id for d in found["INDEX-145"]] == [row]
    # an SQ value replaced
    c = _content(path)
    codes = np.stack(c.entries.column("code").to_numpy(zero_copy_only=False)).copy()
    codes[5, 3] = (int(codes[5, 3]) + 128) % 256
    arr = pa.FixedSizeListArray.from_arrays(pa.array(codes.reshape(-1), pa.uint8()), D)
    found = _rules(_with_column(c, "code", arr), data)
    assert [d.row_id for d in found["INDEX-144"]] == [c.entries.column("row_id")[5].as_py()]
    # a row held twice (and so another row missing), and sizes that do not add up
    c = _content(path)
    rows = c.entries.column("row_id").to_numpy().copy()
    lost = int(rows[7])
    rows[7] = rows[8]
    found = _rules(_with_column(c, "row_id", pa.array(rows, pa.uint64())), data)
    assert [d.row_id for d in found["INDEX-141"]] == [int(rows[8])]
    assert [d.row_id for d in found["INDEX-101"]] == [lost]
    c = _content(path)
    c.extra["declared_lengths"] = c.extra["declared_lengths"] + np.array([1, 0, 0, 0])
    assert "INDEX-140" in _rules(c, data)


@pytest.mark.interop
def test_hnsw_neighbour_outside_its_partition_is_named(tmp_path):
    path = tmp_path / "t"
    _build(path, "IVF_HNSW_SQ")
    data = _data_of(path)
    c = _content(path)
    nodes, offsets, neighbours = c.extra["hnsw"][0].levels[0]
    neighbours = neighbours.copy()
    neighbours[0] = int(c.extra["lengths"][0]) + 5
    c.extra["hnsw"][0].levels[0] = (nodes, offsets, neighbours)
    found = _rules(c, data)
    assert list(found) == ["INDEX-146"] and "partition 0" in found["INDEX-146"][0].message


def _compacted_deferred(path: Path, kind: str, *, delete: str | None):
    """``kind`` over four fragments, rows deleted by ``delete`` (or none), then compacted
    into one fragment with the index remap deferred (a fragment reuse index)."""
    import lance

    _build(path, kind, max_rows_per_file=N // 4)
    ds = lance.dataset(str(path))
    if delete:
        ds.delete(delete)
    ds.optimize.compact_files(target_rows_per_fragment=4 * N, defer_index_remap=True)
    return lance.dataset(str(path))


@pytest.mark.interop
@pytest.mark.parametrize("kind", ["IVF_HNSW_FLAT", "IVF_HNSW_PQ"])
def test_hnsw_under_a_remap_that_dropped_rows_is_an_error(tmp_path, kind):
    """Rows deleted, then compacted with the index remap deferred: the storage of each
    partition, read through the fragment reuse index, keeps fewer vectors than the graph has
    nodes. pylance 14.0.2 refuses a nearest search through it (4.0.2 aborts, 11.0.0 answers
    no row): INDEX-146, a finding per partition that lost rows, naming the counts."""
    ds = _compacted_deferred(tmp_path / "t", kind, delete="id % 10 = 3")
    q = _vectors()[5]
    with pytest.raises(Exception, match="HNSW graph has [0-9]+ nodes"):
        ds.to_table(nearest={"column": "vec", "q": q, "k": 3})
    errors = _errors(validate(str(tmp_path / "t"), deep=True))
    assert set(errors) == {"INDEX-146"}, errors
    partitions = len(_content(tmp_path / "t").extra["hnsw"])
    assert len(errors["INDEX-146"]) == partitions  # every partition lost some of its rows
    assert {f"partition {p} has" for p in range(partitions)} == {
        m.split("graph of ")[1].split(" nodes")[0].rsplit(" ", 1)[0] for m in errors["INDEX-146"]}
    assert all("dropped by a compaction whose index remap was deferred" in m
               and "index 'vec_idx'" in m for m in errors["INDEX-146"])


@pytest.mark.interop
@pytest.mark.parametrize("kind,delete", [("IVF_HNSW_FLAT", None), ("IVF_FLAT", "id % 10 = 3"),
                                         ("IVF_PQ", "id % 10 = 3")])
def test_deferred_remap_that_reads_right_draws_no_error(tmp_path, kind, delete):
    """The same compaction without deletions (the remap keeps every row), and the kinds
    without a graph under the same deletions: pylance 14.0.2 finds the row's own vector
    first through the index, and the kit finds nothing."""
    ds = _compacted_deferred(tmp_path / "t", kind, delete=delete)
    got = ds.to_table(nearest={"column": "vec", "q": _vectors()[5], "k": 3}, columns=["id"])
    assert got.column("id")[0].as_py() == 5
    errors = _errors(validate(str(tmp_path / "t"), deep=True))
    assert not errors, errors


def test_hnsw_graph_columns_of_another_shape_are_a_typed_error():
    """A bit flipped in index.idx's schema renames or retypes a graph column (found by
    flipping bytes of pylance 0.10.18's files): INDEX-100, not a KeyError from every rule."""
    from reference_impl.errors import FormatError

    metas = [{"entry_point": 0, "level_offsets": [0]}]
    good = pa.table({"__vector_id": pa.array([0, 1], pa.uint32()),
                     "__neighbors": pa.array([[1], [0]], pa.list_(pa.uint32()))})
    assert len(hnsw.graphs(good, [0], [2], metas)) == 1
    for bad in (good.rename_columns(["__vector_id", "__neighbours"]),
                good.set_column(1, "__neighbors", pa.array(["1", "0"])),
                good.set_column(0, "__vector_id", pa.array([0.5, 1.5]))):
        with pytest.raises(FormatError, match="HNSW index.idx") as e:
            hnsw.graphs(bad, [0], [2], metas, path="index.idx")
        assert e.value.rule == "INDEX-100"


def test_hnsw_distances_of_the_rows_own_vectors_are_no_finding():
    """pylance 0.20.0 builds IVF_HNSW_SQ/PQ graphs over the rows' own vectors and records
    their distances, not the decoded storage's: the edges are judged by whichever of the two
    explains more of them (only the edges whose two rows are known, when it is the rows'),
    and a graph that neither explains is still named."""
    rng = np.random.default_rng(4)
    raw = rng.standard_normal((6, 4))
    coded = np.round(raw * 2) / 2  # a coarse quantisation
    nodes = np.arange(6)
    neighbours = np.array([(i + 1) % 6 for i in range(6)])
    offsets = np.arange(7)
    rec = ((raw[nodes] - raw[neighbours]) ** 2).sum(1)
    graph = hnsw.HnswGraph(0, {}, [(nodes, offsets, neighbours)], [rec])
    assert len(hnsw.wrong_distances(graph, coded, "l2")) >= 3  # not the storage's distances
    assert hnsw.wrong_distances(graph, coded, "l2", [(raw, "l2")]) == []
    unknown = raw.copy()
    unknown[2] = np.nan  # a deleted row: its edges are not judged by the rows' vectors
    assert hnsw.wrong_distances(graph, coded, "l2", [(unknown, "l2")]) == []
    other = hnsw.HnswGraph(0, {}, [(nodes, offsets, neighbours)], [rec + 3.0])
    assert len(hnsw.wrong_distances(other, coded, "l2", [(raw, "l2")])) == 6


def test_hnsw_sq_distances_under_dot_of_the_scaled_values_are_no_finding():
    """pylance 0.38.3 and 4.0.2 record an IVF_HNSW_SQ graph under dot as
    ``(1 - codes . codes') / 1024`` of the scaled values themselves (11.0.0 and 14.0.2: one
    minus the inner product of the decoded values): that reading is accepted when it explains
    the edges, and a distance no reading explains is still named."""
    rng = np.random.default_rng(5)
    codes = rng.integers(0, 256, (6, 4)).astype(np.float64)
    decoded = codes / 255 * 8 - 4
    nodes, offsets = np.arange(6), np.arange(7)
    neighbours = np.array([(i + 2) % 6 for i in range(6)])
    rec = (1 - (codes[nodes] * codes[neighbours]).sum(1)) / 1024
    graph = hnsw.HnswGraph(0, {}, [(nodes, offsets, neighbours)], [rec])
    assert len(hnsw.wrong_distances(graph, decoded, "dot")) == 6
    assert hnsw.wrong_distances(graph, decoded, "dot", others=[(codes, "dot/1024")]) == []
    rec2 = rec.copy()
    rec2[3] += 1.0
    broken = hnsw.HnswGraph(0, {}, [(nodes, offsets, neighbours)], [rec2])
    found = hnsw.wrong_distances(broken, decoded, "dot", others=[(codes, "dot/1024")])
    assert [(a, b) for a, b, _, _ in found] == [(3, 5)]


@pytest.mark.interop
def test_hnsw_sq_under_dot_is_judged(tmp_path):
    """pylance 14.0.2's IVF_HNSW_SQ under dot draws no INDEX-147; an edge's distance
    changed draws it, naming the row."""
    path = tmp_path / "t"
    _build(path, "IVF_HNSW_SQ", metric="dot")
    data = _data_of(path)
    c = _content(path)
    assert _rules(c, data) == {}
    level0 = c.extra["hnsw"][0].distances[0].copy()
    level0[0] += 5.0
    c.extra["hnsw"][0].distances[0] = level0
    assert list(_rules(c, data)) == ["INDEX-147"]


def test_dropped_rows_are_counted_per_partition():
    dropped = IndexedData.DROPPED
    rows = np.array([1, dropped, 2, dropped, dropped, 3], np.uint64)
    part = np.array([0, 0, 1, 2, 2, 5])  # the last row lies in no partition (INDEX-140's)
    from reference_impl.index.vector.against import dropped_under_graphs

    assert dropped_under_graphs(rows, part, dropped, 3) == [(1, 2), (0, 1), (2, 2)]


# -- upstream's test_data: an index holding rows of a fragment its bitmap misses ---------------

def test_upstream_v0_8_14_index_missing_a_fragment_in_its_bitmap(tmp_path):
    """upstream lance ``test_data/v0.8.14/corrupt_index`` (see data/.../PROVENANCE.md): the
    IVF_PQ index ``vector_idx`` of version 5 covers fragments {1..10} by its bitmap and holds
    the 100 rows of fragment 0 (deleted at version 3) too."""
    table = tmp_path / "t"
    shutil.copytree(UPSTREAM_0_8_14 / "table", table)
    content = _content(table)
    assert content.version == "IVF_PQ/legacy-pb" and content.entries.num_rows == 2000
    errors = _errors(validate(str(table), deep=True))
    assert set(errors) == {"INDEX-103"}, errors
    assert any("index 'vector_idx'" in m and "of fragment 0" in m and "row 0:" in m
               for m in errors["INDEX-103"]), errors


# -- older releases (compat) ----------------------------------------------------------------------

_BUILD = """
import sys, lance, numpy as np, pyarrow as pa
n, d = 1000, 16
vec = np.random.default_rng(0).standard_normal((n, d)).astype(np.float32)
t = pa.table({"id": pa.array(np.arange(n)),
              "vec": pa.FixedSizeListArray.from_arrays(pa.array(vec.ravel()), d)})
kind, metric, path = sys.argv[1], sys.argv[2], sys.argv[3]
ds = lance.write_dataset(t, path, max_rows_per_file=300)
kw = dict(num_partitions=4, metric=metric)
if "PQ" in kind:
    kw["num_sub_vectors"] = 4
ds.create_index("vec", kind, **kw)
ds.delete("id < 50")
ds = lance.write_dataset(t.slice(0, 100), path, mode="append")
if sys.argv[4:] != ["no-optimize"]:
    ds.optimize.optimize_indices()
"""


@pytest.mark.compat
@pytest.mark.parametrize("release,kind,metric", [
    ("pylance==0.10.18", "IVF_PQ", "l2"), ("pylance==0.10.18", "IVF_PQ", "dot"),
    ("pylance==0.38.3", "IVF_PQ", "cosine"), ("pylance==0.38.3", "IVF_SQ", "l2"),
    ("pylance==0.38.3", "IVF_HNSW_SQ", "l2"),
    # 0.26.1 keeps the PQ codebook in storage_metadata; 9.0.1 assigns cosine rows by cosine
    ("pylance==0.26.1", "IVF_PQ", "l2"), ("pylance==9.0.1", "IVF_FLAT", "cosine"),
    # 0.10.x writes its IVF_HNSW_* as index.idx + auxiliary.idx in Lance 0.1 files
    ("pylance==0.10.18", "IVF_HNSW_SQ", "l2"), ("pylance==0.10.18", "IVF_HNSW_PQ", "l2"),
    # IVF_HNSW_SQ under dot: each release records its graph's distances its own way
    ("pylance==0.38.3", "IVF_HNSW_SQ", "dot"), ("pylance==4.0.2", "IVF_HNSW_SQ", "dot"),
    ("pylance==0.20.0", "IVF_HNSW_SQ", "dot"),
    # IVF_RQ: 11.0.0's RaBitQ codes and factors (14.0.2's are in test_rq_index.py)
    ("pylance==11.0.0", "IVF_RQ", "l2"), ("pylance==11.0.0", "IVF_RQ", "cosine")])
def test_older_releases_own_indexes_draw_no_error(tmp_path, release, kind, metric):
    from conformance.releases.venvs import Release, ensure_venv

    python = ensure_venv(Release.parse(release))
    path = tmp_path / "t"
    # (0.10.x and 0.20.0 cannot optimize an IVF_HNSW index; 4.0.2's optimize_indices breaks
    # its graph, INDEX-147, a finding of its own test)
    extra = ["no-optimize"] if "HNSW" in kind and release in (
        "pylance==0.10.18", "pylance==0.20.0", "pylance==4.0.2") else []
    subprocess.run([str(python), "-c", _BUILD, kind, metric, str(path), *extra], check=True,
                   capture_output=True, timeout=600)
    report = validate(str(path), versions="all", deep=True)
    assert not _errors(report), _errors(report)
    assert not any("vec_idx" in n for n in report.not_judged), report.not_judged
    if release == "pylance==0.10.18" and extra:
        content = _content(path)
        assert content.version == f"{kind}/lance-file-0.1", content.version
        assert len(content.extra["hnsw"]) == 4 and content.entries.num_rows > 0
        # a code changed in the decoded content is named (the storage is read, not skipped)
        codes = content.entries.column("code").combine_chunks()
        flat = codes.flatten().to_numpy().copy()
        flat[:codes.type.list_size] = 255 - flat[:codes.type.list_size]
        edited = _with_column(content, "code", pa.FixedSizeListArray.from_arrays(
            pa.array(flat), codes.type.list_size))
        found = _rules(edited, _data_after(path))
        assert {"INDEX-143", "INDEX-144"} & set(found), found


def _data_after(path: Path) -> IndexedData:
    """The live rows of every fragment, as :func:`_data_of` for one, read by our reader."""
    from reference_impl.dataset import open_dataset

    ds = open_dataset(str(path))
    t = ds.to_table(columns=["vec"], with_row_address=True)
    rows = t.column("_rowaddr").to_numpy().astype(np.uint64)
    order = np.argsort(rows)
    frags = np.unique((rows >> np.uint64(32)).astype(np.uint32))
    return IndexedData(field_id=1, field_name="vec", stable_row_ids=False,
                       fragment_ids=frags, row_ids=rows[order],
                       values=t.column("vec").combine_chunks().take(pa.array(order)))


def test_a_legacy_message_outside_its_file_is_a_typed_error():
    """The IVF message or PQ codebook of a Lance 0.1 index file sits at a byte position the
    metadata names, after a u32 length: a position or a length past the file's end is
    INDEX-100 with the offset, never a read out of bounds."""
    from reference_impl.errors import FormatError
    from reference_impl.index.vector.lance_file import _length_prefixed

    class _Store:
        data = (5).to_bytes(4, "little") + b"hello" + (99).to_bytes(4, "little") + b"x"

        def get_range(self, key, off, n):
            return self.data[off:off + n]

    store, size = _Store(), len(_Store.data)
    assert _length_prefixed(store, "f", size, 0, "the IVF message") == b"hello"
    for pos, where in [(9, "claims 99 bytes"), (size - 2, "outside"), (-1, "outside"),
                       ("x", "not a number")]:
        with pytest.raises(FormatError, match=where) as e:
            _length_prefixed(store, "f", size, pos, "the IVF message")
        assert e.value.rule == "INDEX-100"


# -- the float32 screens equal the float64 judgements -------------------------------------------

@pytest.mark.parametrize("metric", ["l2", "dot"])
def test_assignment_screen_equals_the_exact_judgement(metric):
    rng = np.random.default_rng(7)
    c = rng.standard_normal((16, 12)).astype(np.float32)
    x = rng.standard_normal((5000, 12)).astype(np.float32)
    x[:50] = (c[0] + c[1]) / 2  # exact ties between two centres
    p = ivf.distances(x, c, metric).argmin(1)
    p[100:400] = rng.integers(0, 16, 300)  # some rows moved
    p[:25] = 1
    fast = ivf.misassigned(x, p, c, metric)
    assert fast.tolist() == ivf.misassigned_exact(x, p, c, metric).tolist()
    assert 200 < len(fast) < 300 and not (fast < 50).any()


def test_pq_screen_equals_the_exact_judgement():
    rng = np.random.default_rng(8)
    q = pq.from_codebook(8, 4, 16, rng.standard_normal(256 * 16))
    x = rng.standard_normal((4000, 16))
    codes = q.encode(x)
    codes[10:300, 2] = rng.integers(0, 256, 290)
    codes[5, 0] = 300  # out of range
    fast = q.wrong_codes(x, codes)
    assert fast.tolist() == q.wrong_codes_exact(x, codes).tolist()
    assert 5 in fast and 250 < len(fast) <= 291


@pytest.mark.interop
def test_own_index_after_compaction_with_deferred_remap(tmp_path):
    import lance

    path = tmp_path / "t"
    ds = _build(path, "IVF_PQ", max_rows_per_file=200)
    ds.delete("id % 5 = 0")
    lance.dataset(str(path)).optimize.compact_files(target_rows_per_fragment=5000,
                                                    defer_index_remap=True)
    names = {i["name"] for i in lance.dataset(str(path)).list_indices()}
    assert "__lance_frag_reuse" in names  # the index still names the rows before compaction
    report = validate(str(path), versions="all", deep=True)
    assert not _errors(report), _errors(report)


@pytest.mark.interop
def test_ivf_rq_is_judged_whole(tmp_path):
    """IVF_RQ (RaBitQ, pylance 11.0.0 on): its rows, partitions, centroid assignment, codes
    and factors are judged (no "not judged" note); two partitions' rows exchanged is an error
    naming a row (the codes themselves: test_rq_index.py)."""
    from conformance.releases import wrong_indexes as w

    built = w.own(tmp_path / "own", "IVF_RQ")
    report = validate(built.uri, deep=True)
    assert not [f for f in report.findings if f.severity == "error"]
    assert not [n for n in report.not_judged if "'idx'" in n], report.not_judged
    wrong = w.partitions_exchanged(tmp_path / "wrong", "IVF_RQ")
    errors = [f for f in validate(wrong.uri, deep=True).findings if f.severity == "error"]
    assert any(f.rule == "INDEX-145" and "row" in f.location for f in errors), errors[:3]
