"""INDEX-128, INDEX-129: MINHASHLSH indexes held against the text they sign.

Units: the signing procedure reproduces the known-answer vectors of signature_version 0
(coefficients, shingle hashes, signatures, band keys), and the band table check names a
missing pair, a pair out of order and a wrong page table entry.
Positive: pylance 14.0.2's own indexes (default and other parameters, the whitespace
tokenizer, stemming; row addresses and stable row ids) after append + optimize_indices,
delete, update and compaction draw no error. Negative: the swapped family (the index of the
same rows reversed) makes pylance answer a near-duplicate search wrong and is an INDEX-128
error naming a row; a bands table without one document's keys hides the document from
pylance's search and is INDEX-129.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from conformance.engine import validate
from reference_impl.index import minhash_lsh
from reference_impl.index.xxhash64 import xxh64
from reference_impl.proto import index_details_pb2, index_pb2

RULES = {"INDEX-100", "INDEX-101", "INDEX-103", "INDEX-128", "INDEX-129"}
WORDS = ["the", "quick", "brown", "fox", "jumps", "over", "lazy", "dog", "Lance", "runs",
         "zebra", "over-the-top", "x" * 45]


def _details(**kw):
    tok = index_details_pb2.InvertedIndexDetails(
        base_tokenizer="simple", language='"English"', max_token_length=40, lower_case=True,
        ascii_folding=True)
    base = dict(num_hashes=4, num_bands=2, shingle_size=2, tokenizer=tok)
    return index_pb2.MinHashLshIndexDetails(**{**base, **kw})


# ---- units: no pylance ----

def test_known_answer_vectors_of_signature_version_0():
    a, b, c = minhash_lsh.coefficients(4)
    assert [hex(int(v)) for v in a] == ["0xbdd732262feb6e95", "0x47526757130f9f53",
                                         "0x9bc585a244823f3", "0x37e9671c45376d5d"]
    assert [hex(int(v)) for v in b] == ["0x28efe333b266f103", "0x581ce1ff0e4ae394",
                                         "0xde4431fa3c80db06", "0xccf635ee9e9e2fa4"]
    assert [hex(int(v)) for v in c] == ["0x5705b8770b3d7dd5", "0x9e54d738297f77af",
                                         "0x3474724a775b19bf", "0x7e348a0e451650bf"]
    shingles = minhash_lsh.shingles(["the", "quick", "brown", "fox"], 2)
    assert shingles[0] == b"the\x1fquick"
    assert [xxh64(s, 42) for s in shingles] == [0x4C0B0D36203CE55F, 0x09C7AE895D82B184,
                                               0x68E7F4B1BE7B4C1F]
    params = minhash_lsh.params_of(_details())
    state, sigs = minhash_lsh.text_signatures(
        pa.array(["The quick brown fox", "Fox", "", "  \n", None, "café"]), params)
    assert state.tolist() == [1, 1, 0, 0, 0, -1]  # non-ASCII under ASCII folding: not judged
    assert sigs.tolist() == [[0xB00F, 0x59D6, 0x511A, 0xCD2C], [0x2970, 0xD6DB, 0x65F8, 0xADFC]]
    keys = minhash_lsh.band_keys(sigs, 2)
    assert keys.tolist() == [[0x00F30F3501D458EA, 0x01AEC5DF28D04915],
                             [0x003CF6E803312ECA, 0x017C5504FBC83F36]]


def test_block_signing_equals_the_readable_form(monkeypatch):
    rng = np.random.default_rng(3)
    sizes = rng.integers(1, 40, 300)
    hashes = rng.integers(0, 2 ** 63, int(sizes.sum()), dtype=np.uint64) * np.uint64(2)
    groups = np.split(hashes, np.cumsum(sizes)[:-1])
    want = minhash_lsh.sign_hashes(groups, 32)
    assert np.array_equal(minhash_lsh.sign_hash_groups(hashes, sizes, 32), want)
    monkeypatch.setattr(minhash_lsh, "BLOCK_BYTES", 8 * 32 * 50)  # many small blocks
    assert np.array_equal(minhash_lsh.sign_hash_groups(hashes, sizes, 32), want)
    assert minhash_lsh.sign_hash_groups(np.zeros(0, np.uint64), np.zeros(0, np.int64),
                                        8).shape == (0, 8)


@pytest.mark.parametrize("settings", [
    {"base_tokenizer": "simple", "max_token_length": 40, "lower_case": True},
    {"base_tokenizer": "simple", "max_token_length": None, "lower_case": False},
    {"base_tokenizer": "whitespace", "max_token_length": 5, "lower_case": True}])
def test_ascii_tokens_equal_the_model_stream(settings):
    from reference_impl.index.inverted_tokens import model

    m = model(dict(settings, language="English", stem=False, remove_stop_words=False,
                   ascii_folding=True))
    quick = minhash_lsh.ascii_tokens(m)
    rng = np.random.default_rng(2)
    alphabet = list("aZ09 _-.,\t\nxyQ'")
    for _ in range(500):
        text = "".join(rng.choice(alphabet, int(rng.integers(0, 60))))
        assert quick(text) == [t for t, _ in m.stream(text)], text
    stems = model(dict(settings, language="English", stem=False, remove_stop_words=True))
    assert minhash_lsh.ascii_tokens(stems) is None


def test_details_out_of_range_are_format_errors_and_later_procedures_refused():
    from reference_impl.errors import FormatError, UnsupportedIndex

    for bad in (dict(num_hashes=6, num_bands=4), dict(num_bands=0), dict(num_hashes=8192,
                                                                          num_bands=8),
                dict(shingle_size=0)):
        with pytest.raises(FormatError):
            minhash_lsh.params_of(_details(**bad))
    with pytest.raises(UnsupportedIndex, match="signature_version 1"):
        minhash_lsh.params_of(_details(signature_version=1))


def _content(sigs, pairs, page_rows=4096, table=None):
    from reference_impl.index import IndexContent

    params = minhash_lsh.params_of(_details())
    k = params.num_hashes
    entries = pa.table({"row_id": pa.array(range(len(sigs)), pa.uint64()),
                        "signature": pa.FixedSizeListArray.from_arrays(
                            pa.array(np.asarray(sigs, np.uint16).ravel()), k)})
    bands = pa.table({"band_key": pa.array([p[0] for p in pairs], pa.uint64()),
                      "doc_id": pa.array([p[1] for p in pairs], pa.uint32())})
    if table is None:
        table = [pairs[min((p + 1) * page_rows, len(pairs)) - 1][0]
                 for p in range(-(-len(pairs) // page_rows))]
    return IndexContent(kind="minhash_lsh", version="minhash_lsh-v0", entries=entries,
                        extra={"bands": bands, "page_rows": page_rows, "params": params,
                               "page_table": np.asarray(table, np.uint64)})


def test_bands_check_names_a_missing_pair_an_unsorted_pair_and_a_wrong_page_table():
    sigs = np.arange(12, dtype=np.uint16).reshape(3, 4)
    keys = minhash_lsh.band_keys(sigs, 2)
    pairs = sorted((int(keys[d, b]), d) for d in range(3) for b in range(2))
    assert list(minhash_lsh.bands_disagreements(_content(sigs, pairs), "m")) == []
    missing = [p for p in pairs if p != (int(keys[1, 1]), 1)]
    found = list(minhash_lsh.bands_disagreements(_content(sigs, missing), "m"))
    assert [d.where.get("document") for d in found] == [1]
    assert "band 1" in found[0].message
    swapped = [pairs[1], pairs[0], *pairs[2:]]
    found = list(minhash_lsh.bands_disagreements(_content(sigs, swapped), "m"))
    assert any("sorts before" in d.message for d in found)
    found = list(minhash_lsh.bands_disagreements(
        _content(sigs, pairs, page_rows=4, table=[pairs[2][0], pairs[-1][0]]), "m"))
    assert [d.where.get("page") for d in found] == [0]


# ---- against pylance 14.0.2 ----

def _texts(n, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        if i % 19 == 0:
            out.append(None)
        elif i % 23 == 0:
            out.append("  ")
        else:
            out.append(" ".join(rng.choice(WORDS, int(rng.integers(1, 12)))))
    return out


def _rows(n=1500, start=0, seed=0):
    return pa.table({"id": pa.array(np.arange(start, start + n), pa.int64()),
                     "s": pa.array(_texts(n, seed))})


def _findings(uri):
    return [f for f in validate(uri, deep=True).findings if f.rule in RULES]


def _errors(found):
    return [f for f in found if f.severity == "error"]


def _not_judged(uri):
    return list(validate(uri, deep=True).not_judged or [])


PARAMS = {
    "default": None,
    "small-bands": {"num_hashes": 64, "num_bands": 8, "shingle_size": 2},
    "whitespace": {"num_hashes": 96, "num_bands": 16, "shingle_size": 5,
                   "tokenizer": {"base_tokenizer": "whitespace", "max_token_length": 8}},
    "no-lower-case": {"tokenizer": {"lower_case": False, "ascii_folding": False}},
}


@pytest.mark.interop
@pytest.mark.parametrize("stable", [False, True], ids=["addr", "stable"])
@pytest.mark.parametrize("params", list(PARAMS), ids=list(PARAMS))
def test_pylance_minhash_after_mutations_draws_no_error(tmp_path, params, stable):
    import lance
    from lance.indices import IndexConfig

    uri = str(tmp_path / "t")
    ds = lance.write_dataset(_rows(), uri, max_rows_per_file=600, enable_stable_row_ids=stable)
    p = PARAMS[params]
    ds.create_scalar_index("s", IndexConfig(index_type="minhashlsh", parameters=p) if p
                           else "MINHASHLSH", name="mh")
    content = _read(uri, "mh")
    assert content.summary["documents"] > 1000
    assert _errors(_findings(uri)) == []
    ds = lance.write_dataset(_rows(300, 1500, seed=1), uri, mode="append")
    ds.optimize.optimize_indices()
    ds.delete("id % 7 = 3")
    ds.update({"s": "'the quick brown fox jumps'"}, where="id < 40")
    ds = lance.dataset(uri)
    ds.optimize.compact_files(target_rows_per_fragment=5000)
    found = _findings(uri)
    assert _errors(found) == [], [f.message for f in _errors(found)][:5]
    assert not any("mh" in n for n in _not_judged(uri))


def _read(uri, name):
    from reference_impl.dataset import open_dataset
    from reference_impl.index import of_dataset

    ds = open_dataset(uri)
    (index,) = [i for i in of_dataset.decoded(ds) if i.name == name][:1]
    return of_dataset.read(ds, index)


def _nearest(uri, text, k=5):
    import lance
    from lance.query import MinHashQuery

    t = lance.dataset(uri).to_table(nearest=MinHashQuery(text, "s"), limit=k,
                                    columns=["id", "s"])
    return list(zip(t["id"].to_pylist(), t["_distance"].to_pylist(), strict=True))


@pytest.mark.interop
def test_swapped_minhash_answers_wrong_and_is_an_error(tmp_path):
    from conformance.suite.index.test_index_text import _swapped

    uri, name = _swapped(tmp_path, lambda d: d.create_scalar_index("text", "MINHASHLSH",
                                                                    name="mh"), resize=True)
    import lance

    ds = lance.dataset(uri)
    texts = ds.to_table(columns=["id", "text"])
    row = next(i for i, t in enumerate(texts["text"].to_pylist())
               if t and texts["text"].to_pylist().count(t) == 1)
    from lance.query import MinHashQuery

    got = ds.to_table(nearest=MinHashQuery(texts["text"][row].as_py(), "text"), limit=3,
                      columns=["id"])
    exact = [(i, d) for i, d in zip(got["id"].to_pylist(), got["_distance"].to_pylist(),
                                    strict=True) if d == 0.0]
    assert (row, 0.0) not in exact, "the swapped index still finds the row itself"
    errs = [f for f in _errors(_findings(uri)) if f.rule == "INDEX-128"]
    assert errs and all(f.location.get("index") == name for f in errs)
    assert any("row" in f.location for f in errs)


@pytest.mark.interop
def test_bands_without_a_documents_keys_hide_it_and_are_an_error(tmp_path):
    import lance

    from conformance.suite.index.test_index_text import _set_index_file_size

    uri = str(tmp_path / "t")
    rows = _rows(400)
    lance.write_dataset(rows, uri)
    ds = lance.dataset(uri)
    ds.create_scalar_index("s", "MINHASHLSH", name="mh")
    text = rows["s"].to_pylist()
    doc = next(i for i, t in enumerate(text) if t and text.count(t) == 1 and len(t.split()) > 3)
    assert (doc, 0.0) in _nearest(uri, text[doc])
    uuid = ds.list_indices()[0]["uuid"]
    from reference_impl.file.reader import LanceFileReader
    from reference_impl.file.writer import write_lance_file
    from reference_impl.io.local import LocalStore

    store = LocalStore(f"{uri}/_indices/{uuid}")
    reader = LanceFileReader(store, "bands.lance", size=store.size("bands.lance"))
    table = reader.read_all()
    ids = _read(uri, "mh").entries.column("row_id").to_pylist()
    keep = pa.compute.not_equal(table.column("doc_id"), pa.scalar(ids.index(doc), pa.uint32()))
    table = table.filter(keep)
    keys = table.column("band_key").to_numpy()
    rows_per_page = 4096
    page_table = np.asarray([keys[min((p + 1) * rows_per_page, len(keys)) - 1]
                             for p in range(-(-len(keys) // rows_per_page))], "<u8")
    meta = dict(reader.schema.metadata)
    meta[b"minhash_lsh_page_table_buffer"] = b"1"
    write_lance_file(store, "bands.lance", table.replace_schema_metadata(meta),
                     version=reader.version, global_buffers=[page_table.tobytes()])
    _set_index_file_size(uri, "bands.lance", store.size("bands.lance"))
    assert doc not in [i for i, _d in _nearest(uri, text[doc])], "the document is still found"
    errs = [f for f in _errors(_findings(uri)) if f.rule == "INDEX-129"]
    assert errs and all(f.location.get("index") == "mh" for f in errs)
    assert any(f"document {ids.index(doc)} is not under" in f.message for f in errs)
