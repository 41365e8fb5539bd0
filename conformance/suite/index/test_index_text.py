"""INDEX-120..139: NGRAM, ZONEMAP, BLOOMFILTER and INVERTED indexes held against their data.

Positive: pylance 14.0.2's own indexes after append + optimize_indices, delete, update,
compaction (with and without deferred remap) and under stable row ids draw no error.
Negative: the "swap" family (two tables hold the same rows, one reversed, each indexed the
same way; the second's index files are copied over the first's, same names and sizes), and
a hand edit of a zone map rewritten with the reference writer. Each negative first shows
that pylance answers wrong through the index (against its scan), then that the kit flags
an error naming the index and a row.
"""

from __future__ import annotations

import os
import shutil

import numpy as np
import pyarrow as pa
import pytest

from conformance.engine import validate
from reference_impl.index import bloomfilter, inverted, ngram, xxhash64

TEXT_RULES = {"INDEX-100", "INDEX-103", "INDEX-120", "INDEX-121", "INDEX-122", "INDEX-123",
              "INDEX-124", "INDEX-125", "INDEX-126", "INDEX-127"}
WORDS = ["Hello", "world", "the", "Quick", "brown", "fox", "jumps", "lance", "runs", "db-42",
         "zebra", "über", "café"]


# ---- units: no pylance ----

def test_xxh64_known_values_and_numpy_form_equal_readable():
    assert xxhash64.xxh64(b"") == 17241709254077376921
    assert xxhash64.xxh64(b"a") == 0xD24EC4F1A98C6E5B
    rng = np.random.default_rng(1)
    values = [rng.bytes(n) for n in (1, 3, 4, 7, 8, 12, 31, 32, 33, 64, 100) for _ in range(3)]
    assert xxhash64.xxh64_many(values).tolist() == [xxhash64.xxh64(v) for v in values]


def test_split_block_filter_holds_what_was_set_and_not_much_else():
    words = np.zeros((4, 8), dtype="<u4")
    hashes = xxhash64.xxh64_many([b"x%d" % i for i in range(50)])
    blocks = (((hashes >> np.uint64(32)) * np.uint64(4)) >> np.uint64(32)).astype(int)
    low = (hashes & np.uint64(0xFFFFFFFF)).astype(np.uint32)
    bits = (low[:, None] * bloomfilter.SALT[None, :]) >> np.uint32(27)
    for b, row in zip(blocks, bits, strict=True):
        words[b] |= (np.uint32(1) << row.astype(np.uint32))
    data = words.tobytes()
    assert bloomfilter.may_contain(data, hashes).all()
    other = xxhash64.xxh64_many([b"y%d" % i for i in range(200)])
    assert bloomfilter.may_contain(data, other).mean() < 0.5


def test_trigram_numbering_and_tokenisation():
    assert ngram.token_of("abc") == 11 * 37 ** 2 + 12 * 37 + 13
    assert ngram.trigram_of(ngram.token_of("z9a")) == "z9a"
    assert ngram.trigram_of(0) is None
    assert ngram.trigrams("A1b2") == ({"a1b", "1b2"}, True)
    assert ngram.trigrams("ab!cd") == (set(), True)
    grams, exact = ngram.trigrams("café olé")
    assert not exact and grams == {"caf"}  # only windows of original ASCII characters


def test_token_count_bounds_follow_the_recorded_settings():
    plain = {"base_tokenizer": "simple", "lower_case": True, "max_token_length": 40}
    assert inverted.count_bounds("The quick, brown fox", plain) == (4, 4)
    stops = dict(plain, remove_stop_words=True, language="English")
    assert inverted.count_bounds("The quick brown fox is here", stops) == (4, 4)
    stemmed = dict(stops, stem=True)
    low, high = inverted.count_bounds("The quick brown fox its", stemmed)
    assert low <= 3 <= high  # "its" may stem to the stop word "it"
    assert inverted.count_bounds("x" * 40 + " ab", plain) == (1, 1)
    assert inverted.count_bounds("a b", {"base_tokenizer": "ngram"}) is None


# ---- against pylance 14.0.2 ----

def _rows(n=2000, seed=0):
    rng = np.random.default_rng(seed)
    text = [" ".join(rng.choice(WORDS, 4)) if i % 17 else None for i in range(n)]
    return pa.table({"id": pa.array(np.arange(n), pa.int64()), "text": text,
                     "s": pa.array([f"v{i // 7}" if i % 13 else None for i in range(n)])})


def _index_all(ds):
    ds.create_scalar_index("text", "NGRAM", name="ng")
    ds.create_scalar_index("id", "ZONEMAP", name="zm")
    ds.create_scalar_index("s", "BLOOMFILTER", name="bf")
    ds.create_scalar_index("text", "INVERTED", name="fts", with_position=True)


def _text_findings(uri):
    report = validate(uri, deep=True)
    return [f for f in report.findings if f.rule in TEXT_RULES]


def _errors(findings):
    return [f for f in findings if f.severity == "error"]


@pytest.mark.interop
@pytest.mark.parametrize("stable", [False, True])
def test_pylance_indexes_after_mutations_draw_no_error(tmp_path, stable):
    import lance

    uri = str(tmp_path / "t")
    ds = lance.write_dataset(_rows(), uri, max_rows_per_file=700, enable_stable_row_ids=stable)
    _index_all(ds)
    assert _errors(_text_findings(uri)) == []
    ds = lance.write_dataset(_rows(300, seed=2), uri, mode="append")
    ds.optimize.optimize_indices()
    ds.delete("id % 7 = 3")
    ds.update({"text": "'zebra runs'"}, where="id < 40")
    assert _errors(_text_findings(uri)) == []
    ds = lance.dataset(uri)
    ds.optimize.compact_files(target_rows_per_fragment=5000)
    found = _text_findings(uri)
    assert _errors(found) == [], [f.message for f in _errors(found)][:5]


@pytest.mark.interop
def test_compaction_with_deferred_remap_draws_no_error(tmp_path):
    import lance

    uri = str(tmp_path / "t")
    ds = lance.write_dataset(_rows(), uri, max_rows_per_file=500)
    _index_all(ds)
    ds.delete("id % 5 = 0")
    ds.optimize.compact_files(target_rows_per_fragment=5000, defer_index_remap=True)
    found = _text_findings(uri)
    assert _errors(found) == [], [f.message for f in _errors(found)][:5]
    # then an append and optimize_indices: the bitmaps name the new fragments while the
    # zones (which cannot be remapped) still lie on the old ones; readers translate them
    # through the fragment reuse index, and so does the kit
    ds = lance.write_dataset(_rows(200, seed=4), uri, mode="append")
    ds.optimize.optimize_indices()
    zm = [i for i in lance.dataset(uri).list_indices() if i["name"] == "zm"]
    assert zm and 4 in set(zm[0]["fragment_ids"])
    through, scan = _answers(uri, "id = 1203")
    assert through == scan
    found = _text_findings(uri)
    assert _errors(found) == [], [f.message for f in _errors(found)][:5]


def _swapped(tmp_path, make_index, rows_per_file=None, resize=False):
    """Two tables, the second holding the rows reversed, indexed alike; the second's index
    files are copied over the first's (same names, same sizes; with ``resize`` files whose
    sizes differ are copied too and the manifest's IndexMetadata.files told their sizes, so
    it stays true to the bytes)."""
    import lance

    rows = _rows()
    kw = {"max_rows_per_file": rows_per_file} if rows_per_file else {}
    a = lance.write_dataset(rows, str(tmp_path / "a"), **kw)
    b = lance.write_dataset(rows.take(np.arange(rows.num_rows)[::-1]), str(tmp_path / "b"), **kw)
    make_index(a)
    make_index(b)
    a, b = lance.dataset(str(tmp_path / "a")), lance.dataset(str(tmp_path / "b"))
    ia, ib = a.list_indices()[0], b.list_indices()[0]
    da, db = tmp_path / "a" / "_indices" / ia["uuid"], tmp_path / "b" / "_indices" / ib["uuid"]
    names = sorted(os.listdir(da))
    assert names == sorted(os.listdir(db))
    resized = [n for n in names if os.path.getsize(da / n) != os.path.getsize(db / n)]
    assert resize or not resized, f"the two indexes differ in the sizes of {resized}"
    for n in names:
        shutil.copyfile(db / n, da / n)
    for n in resized:
        _set_index_file_size(str(tmp_path / "a"), n, os.path.getsize(da / n))
    return str(tmp_path / "a"), ia["name"]


def _set_index_file_size(uri, name, size):
    """Make the latest manifest's IndexMetadata.files tell the rewritten file's size."""
    from pathlib import Path

    from conformance.fixtures.corruption import encode_manifest, latest_manifest, split_manifest
    from reference_impl.proto import table_pb2

    mpath = latest_manifest(Path(uri))
    m, idx, txn = split_manifest(mpath.read_bytes())
    sec = table_pb2.IndexSection.FromString(idx)
    for im in sec.indices:
        for f in im.files:
            if f.path == name:
                f.size_bytes = size
    mpath.write_bytes(encode_manifest(m, index=sec.SerializeToString(), txn=txn))


def _answers(uri, flt):
    import lance

    ds = lance.dataset(uri)
    through = sorted(ds.to_table(filter=flt, columns=["id"])["id"].to_pylist())
    scan = sorted(ds.to_table(filter=flt, columns=["id"], use_scalar_index=False)["id"]
                  .to_pylist())
    return through, scan


def _flagged(uri, rule, name):
    errs = [f for f in _errors(_text_findings(uri)) if f.rule == rule]
    assert errs, f"{rule} not reported"
    assert all(f.location.get("index") == name for f in errs)
    assert any("row" in f.location for f in errs)
    return errs


@pytest.mark.interop
def test_swapped_zonemap_is_an_error(tmp_path):
    # a zone per fragment: the reversed table's zone 0 holds ids 1999..1900
    uri, name = _swapped(tmp_path, lambda d: d.create_scalar_index("id", "ZONEMAP", name="zm"),
                         rows_per_file=100)
    through, scan = _answers(uri, "id = 5")
    assert scan == [5] and through != scan, "the swapped index answers as the data does"
    errs = _flagged(uri, "INDEX-120", name)
    assert any(f.location.get("row") == 5 for f in errs)


@pytest.mark.interop
def test_swapped_bloomfilter_is_an_error(tmp_path):
    uri, name = _swapped(tmp_path, lambda d: d.create_scalar_index("s", "BLOOMFILTER",
                                                                    name="bf"),
                         rows_per_file=100)
    through, scan = _answers(uri, "s = 'v5'")
    assert scan == [35, 36, 37, 38, 40, 41]
    assert through != scan, "the swapped index answers as the data does"
    _flagged(uri, "INDEX-121", name)


@pytest.mark.interop
def test_swapped_ngram_is_an_error(tmp_path):
    uri, name = _swapped(tmp_path, lambda d: d.create_scalar_index("text", "NGRAM", name="ng"))
    through, scan = _answers(uri, "contains(text, 'zebra')")
    assert through != scan, "the swapped index answers as the data does"
    errs = _flagged(uri, "INDEX-122", name)
    assert any("not listed under its trigram" in f.message for f in errs)


@pytest.mark.interop
def test_swapped_inverted_is_an_error(tmp_path):
    import lance

    uri, name = _swapped(tmp_path, lambda d: d.create_scalar_index(
        "text", "INVERTED", name="fts", with_position=True), resize=True)
    ds = lance.dataset(uri)
    hits = ds.to_table(full_text_query="zebra", columns=["id", "text"])
    assert any("zebra" not in (t or "").lower() for t in hits["text"].to_pylist()), \
        "the swapped index answers as the data does"
    _flagged(uri, "INDEX-125", name)


@pytest.mark.interop
def test_zonemap_edited_with_the_reference_writer_is_an_error(tmp_path):
    import lance

    from reference_impl.file.writer import write_lance_file

    uri = str(tmp_path / "t")
    ds = lance.write_dataset(_rows(), uri, max_rows_per_file=700)
    ds.create_scalar_index("id", "ZONEMAP", name="zm")
    uuid = lance.dataset(uri).list_indices()[0]["uuid"]
    path = tmp_path / "t" / "_indices" / uuid / "zonemap.lance"
    from reference_impl.file.reader import LanceFileReader
    from reference_impl.io.local import LocalStore

    store = LocalStore(str(path.parent))
    reader = LanceFileReader(store, "zonemap.lance", size=store.size("zonemap.lance"))
    table = reader.read_all()
    mins = table.column("min").to_pylist()
    mins[0] = 10  # zone 0 now claims its values start at 10: ids 0..9 fall outside
    table = table.set_column(0, table.schema.field(0), pa.array(mins, table.column("min").type))
    # (pylance's writer keeps a null bitmap in a second global buffer, named by the metadata
    # key "null_bitmap"; the reference writer writes none, so the key goes)
    meta = {k: v for k, v in (reader.schema.metadata or {}).items() if k != b"null_bitmap"}
    table = table.replace_schema_metadata(meta)
    write_lance_file(store, "zonemap.lance", table, version=reader.version)
    _set_index_file_size(uri, "zonemap.lance", path.stat().st_size)
    through, scan = _answers(uri, "id = 5")
    assert scan == [5] and through == [], "the edited zone map still answers right"
    errs = _flagged(uri, "INDEX-120", "zm")
    assert any(f.location.get("row") == 5 for f in errs)


def _rewrite_index_file(uri, uuid, name, edit):
    """Read an index file, ``edit(table) -> table``, write it back with the reference writer
    (dropping pylance's "null_bitmap" global buffer key) and tell the manifest its size."""
    from reference_impl.file.reader import LanceFileReader
    from reference_impl.file.writer import write_lance_file
    from reference_impl.io.local import LocalStore

    folder = os.path.join(uri, "_indices", uuid)
    store = LocalStore(folder)
    reader = LanceFileReader(store, name, size=store.size(name))
    table = edit(reader.read_all())
    meta = {k: v for k, v in (reader.schema.metadata or {}).items() if k != b"null_bitmap"}
    write_lance_file(store, name, table.replace_schema_metadata(meta), version=reader.version)
    _set_index_file_size(uri, name, os.path.getsize(os.path.join(folder, name)))


@pytest.mark.interop
def test_ngram_row_under_a_trigram_it_lacks_is_a_warning_and_changes_no_answer(tmp_path):
    import lance
    from pyroaring import BitMap64

    uri = str(tmp_path / "t")
    ds = lance.write_dataset(_rows(), uri)
    ds.create_scalar_index("text", "NGRAM", name="ng")
    uuid = lance.dataset(uri).list_indices()[0]["uuid"]
    zeb = ngram.token_of("zeb")
    row = next(i for i, t in enumerate(_rows()["text"].to_pylist())
               if t and "zebra" not in t.lower() and t.isascii())

    def edit(table):
        lists = table.column("posting_list").to_pylist()
        at = table.column("tokens").to_pylist().index(zeb)
        bm = BitMap64.deserialize(lists[at])
        bm.add(row)
        lists[at] = bm.serialize()
        return table.set_column(1, table.schema.field(1), pa.array(lists, pa.binary()))

    _rewrite_index_file(uri, uuid, "ngram_postings.lance", edit)
    through, scan = _answers(uri, "contains(text, 'zebra')")
    assert through == scan  # the reader rechecks the rows the index gives
    found = _text_findings(uri)
    assert _errors(found) == []
    warned = [f for f in found if f.rule == "INDEX-123"]
    assert [f.location.get("row") for f in warned] == [row]
    assert warned[0].location["index"] == "ng"


@pytest.mark.interop
def test_zone_on_a_fragment_outside_the_bitmap_is_an_error(tmp_path):
    import lance

    uri = str(tmp_path / "t")
    ds = lance.write_dataset(_rows(), uri, max_rows_per_file=1000)
    ds.create_scalar_index("id", "ZONEMAP", name="zm")
    uuid = lance.dataset(uri).list_indices()[0]["uuid"]

    def edit(table):
        frags = table.column("fragment_id").to_pylist()
        frags[-1] = 7  # fragment 1's zone now claims fragment 7, which the index does not cover
        i = table.schema.get_field_index("fragment_id")
        return table.set_column(i, table.schema.field(i), pa.array(frags, pa.uint64()))

    _rewrite_index_file(uri, uuid, "zonemap.lance", edit)
    through, scan = _answers(uri, "id = 1500")
    assert scan == [1500] and through == [], "the edited zone map still answers right"
    found = _errors(_text_findings(uri))
    assert {f.rule for f in found} == {"INDEX-120", "INDEX-124"}
    outside = [f for f in found if f.rule == "INDEX-124"]
    assert outside[0].location["index"] == "zm" and outside[0].location["fragment"] == 7


def test_inverted_postings_that_disagree_with_documents_are_index_127():
    """The single-file-set layout's postings are decoded: a posting naming no document and a
    document whose count is not its postings' sum break INDEX-127."""
    from reference_impl.index import IndexContent, IndexedData

    docs = pa.table({"row_id": pa.array([0, 1], pa.uint64()),
                     "num_tokens": pa.array([2, 1], pa.uint32()),
                     "partition": pa.array([0, 0], pa.int32())})
    postings = pa.table({"token": ["a", "b", "a"], "row_id": pa.array([0, 1, 9], pa.uint64()),
                         "frequency": pa.array([1.0, 1.0, 1.0], pa.float32())})
    content = IndexContent(kind="inverted", version="inverted-legacy", entries=docs,
                           extra={"postings": postings, "params": None})
    data = IndexedData(field_id=0, field_name="text", stable_row_ids=False,
                       fragment_ids=np.array([0], np.uint32),
                       row_ids=np.array([0, 1], np.uint64), values=pa.array(["a a", "b"]))

    class Index:
        name = "fts"

    found = list(inverted.check(content, Index, data))
    assert {d.rule for d in found} == {"INDEX-127"}
    messages = " | ".join(d.message for d in found if d.rule == "INDEX-127")
    assert "not documents" in messages and "sum to 1" in messages


# ---- older releases (compat) ----

_BUILD = r"""
import os, shutil, sys
import numpy as np, pyarrow as pa, lance
out, kinds, reverse = sys.argv[1], sys.argv[2].split(","), sys.argv[3] == "1"
rng = np.random.default_rng(0)
words = WORDS_HERE
n = 1200
text = [" ".join(rng.choice(words, 4)) if i % 17 else None for i in range(n)]
rows = pa.table({"id": pa.array(np.arange(n), pa.int64()), "text": text,
                 "s": pa.array([f"v{i // 7}" if i % 13 else None for i in range(n)])})
if reverse:
    rows = rows.take(np.arange(n)[::-1])
ds = lance.write_dataset(rows, out, max_rows_per_file=300)
for kind in kinds:
    col = {"NGRAM": "text", "INVERTED": "text", "ZONEMAP": "id", "BLOOMFILTER": "s"}[kind]
    ds.create_scalar_index(col, kind, name=kind.lower())
if not reverse:
    ds.delete("id % 9 = 4")
os._exit(0)
""".replace("WORDS_HERE", repr(WORDS))

#: kinds each release writes (NGRAM from the 0.2x releases; ZONEMAP and BLOOMFILTER later;
#: INVERTED in the tokens/invert/docs layout up to the 0.2x releases, partitioned after)
_OLDER = {"pylance==0.26.1": ("NGRAM", "INVERTED"),
          "pylance==0.38.3": ("NGRAM", "ZONEMAP", "BLOOMFILTER", "INVERTED"),
          "pylance==9.0.1": ("NGRAM", "ZONEMAP", "BLOOMFILTER", "INVERTED")}


def _build_with(release, out, kinds, reverse=False):
    import subprocess
    import sys

    from conformance.releases.venvs import Release, ReleaseUnavailable, ensure_venv

    try:
        python = ensure_venv(Release.parse(release))
    except ReleaseUnavailable as exc:
        pytest.skip(f"{release} cannot be installed here: {exc}")
    done = subprocess.run([str(python), "-c", _BUILD, str(out), ",".join(kinds),
                           "1" if reverse else "0"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert sys.executable  # the kit judges in its own interpreter


@pytest.mark.compat
@pytest.mark.parametrize("release", sorted(_OLDER))
def test_older_releases_indexes_draw_no_error(tmp_path, release):
    _build_with(release, tmp_path / "t", _OLDER[release])
    report = validate(str(tmp_path / "t"), deep=True)
    found = [f for f in report.findings if f.rule in TEXT_RULES]
    assert _errors(found) == [], [f.message for f in found][:5]
    judged_not = " ".join(getattr(report, "not_judged", []) or [])
    for kind in _OLDER[release]:
        assert f"'{kind.lower()}'" not in judged_not, judged_not


@pytest.mark.compat
def test_legacy_inverted_layout_swapped_is_an_error(tmp_path):
    """pylance 0.26.1's tokens/invert/docs layout, whose postings the kit decodes: the
    reversed table's index copied over draws INDEX-126 (postings) and INDEX-125."""
    _build_with("pylance==0.26.1", tmp_path / "a", ("INVERTED",))
    _build_with("pylance==0.26.1", tmp_path / "b", ("INVERTED",), reverse=True)
    (ua,) = os.listdir(tmp_path / "a" / "_indices")
    (ub,) = os.listdir(tmp_path / "b" / "_indices")
    for n in os.listdir(tmp_path / "b" / "_indices" / ub):
        shutil.copyfile(tmp_path / "b" / "_indices" / ub / n, tmp_path / "a" / "_indices" / ua / n)
    report = validate(str(tmp_path / "a"), deep=True)
    rules = {f.rule for f in report.findings if f.severity == "error"}
    assert {"INDEX-125", "INDEX-126"} <= rules, rules
    assert all(f.location.get("index") == "inverted" for f in report.findings
               if f.rule in ("INDEX-125", "INDEX-126"))


@pytest.mark.interop
def test_zone_indexes_of_every_value_type_draw_no_error(tmp_path):
    """The filters' hashing (XXH64 over each type's bytes) and the zones' order, over the
    types pylance 14.0.2 builds BLOOMFILTER and ZONEMAP on."""
    import datetime

    import lance

    n = 1500
    rng = np.random.default_rng(3)
    cols = {
        "i8": pa.array(rng.integers(-100, 100, n), pa.int8()),
        "i32": pa.array(rng.integers(-10**6, 10**6, n), pa.int32()),
        "u64": pa.array(rng.integers(0, 10**12, n), pa.uint64()),
        "f32": pa.array(rng.random(n).astype(np.float32)),
        "f64": pa.array([None if i % 11 == 0 else float(x) for i, x in enumerate(rng.random(n))]),
        "d": pa.array([datetime.date(2020, 1, 1) + datetime.timedelta(days=int(x))
                       for x in rng.integers(0, 1000, n)]),
        "ts": pa.array(rng.integers(0, 10**15, n).astype("datetime64[us]")),
        "b": pa.array([bytes([i % 256, (i * 7) % 256]) for i in range(n)]),
        "ls": pa.array([f"s{i}" for i in range(n)], pa.large_string()),
    }
    uri = str(tmp_path / "t")
    ds = lance.write_dataset(pa.table(cols), uri, max_rows_per_file=500)
    for c in cols:
        ds.create_scalar_index(c, "BLOOMFILTER", name=f"bf_{c}")
        ds.create_scalar_index(c, "ZONEMAP", name=f"zm_{c}")
    report = validate(uri, deep=True)
    assert [f.message for f in report.findings if f.rule in TEXT_RULES] == []
    assert not getattr(report, "not_judged", None)


def test_ngram_expected_postings_numpy_form_equals_readable():
    rng = np.random.default_rng(5)
    alphabet = list("abcXYZ019 -_!é") + ["ß", "Ünï"]
    texts = ["".join(rng.choice(alphabet, rng.integers(0, 12))) for _ in range(300)] + [None, ""]
    values = pa.array(texts)

    def pairs(out):
        pos, tok, exact = out
        return sorted(zip(pos.tolist(), tok.tolist(), strict=True)), exact.tolist()

    assert pairs(ngram.expected_postings(values)) == \
        pairs(ngram.expected_postings_readable(values))


# ---- the partitioned layout's posting blocks (reference_impl.index.inverted_postings) ----

def _pack4x(values, bits):
    """Pack 128 values in the four-lane layout, written from its description (test helper)."""
    words = [0] * (bits * 4)
    for i, v in enumerate(values):
        lane, k = i % 4, i // 4
        for bit in range(bits):
            if (v >> bit) & 1:
                pos = k * bits + bit
                words[(pos // 32) * 4 + lane] |= 1 << (pos % 32)
    return b"".join(w.to_bytes(4, "little") for w in words)


def test_four_lane_unpacking_reverses_the_described_packing():
    from reference_impl.index.inverted_postings import unpack_4x

    rng = np.random.default_rng(7)
    for bits in (0, 1, 3, 7, 13, 31, 32):
        values = rng.integers(0, 1 << bits, 128, dtype=np.int64) if bits else np.zeros(128, int)
        assert unpack_4x(_pack4x(values.tolist(), bits), bits).tolist() == values.tolist()


def test_posting_list_of_a_full_block_and_a_tail_decodes():
    import struct

    from reference_impl.errors import FormatError
    from reference_impl.index.inverted_postings import posting_list

    docs = np.cumsum(np.arange(1, 140)) + 3  # 139 documents: one block of 128, a tail of 11
    freqs = (np.arange(139) % 3) + 1
    deltas = np.diff(np.concatenate([[docs[0]], docs[:128]]))
    block = struct.pack("<fIB", 1.5, int(docs[0]), 8) + _pack4x(deltas.tolist(), 8) + \
        bytes([2]) + _pack4x(freqs[:128].tolist(), 2)

    def varints(vals):
        out = bytearray()
        for v in vals:
            while True:
                out.append((v & 0x7F) | (0x80 if v > 0x7F else 0))
                v >>= 7
                if not v:
                    break
        return bytes(out)

    tail_docs = docs[128:]
    tail = struct.pack("<f", 0.5) + varints(np.diff(np.concatenate([[0], tail_docs])).tolist()) \
        + varints(freqs[128:].tolist())
    got_docs, got_freqs = posting_list([block, tail], 139, "varint_delta_v1", None)
    assert got_docs.tolist() == docs.tolist() and got_freqs.tolist() == freqs.tolist()
    with pytest.raises(FormatError):
        posting_list([block], 139, "varint_delta_v1", None)


@pytest.mark.interop
def test_swapped_inverted_of_same_token_counts_is_an_error(tmp_path):
    """Every row holds four tokens, so the documents agree with any row; the postings of
    pylance 14.0.2's partitioned layout are decoded and the rows of one word are not under
    one token's rows: INDEX-126 naming rows, while pylance's search answers rows without the
    word."""
    import lance

    from conformance.releases import wrong_indexes

    built = wrong_indexes.swap_same_counts(tmp_path, "INVERTED")
    hits = lance.dataset(built.uri).to_table(full_text_query="zebra", columns=["text"])
    assert any("zebra" not in t for t in hits["text"].to_pylist())
    errs = _flagged(built.uri, "INDEX-126", "idx")
    assert errs and all("row" in f.location for f in errs)
