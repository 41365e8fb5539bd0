"""INDEX-125/126/127 on the partitioned INVERTED layout (pylance 0.3x to 14.0.2): the token FST,
the block-compressed postings and the positions decoded into token -> rows, frequencies,
positions, and held against the data.

Units: the 4x bit packing, the varint tail, the FST walk over what pylance wrote, typed errors
on cut bytes. Against pylance 14.0.2: the decoded postings equal the tokens of each row's text
under several tokenizer settings, with and without positions; after appends +
optimize_indices and deletes the table's own index draws no error; the swapped index (two
tables, same rows reversed, index files copied over) answers wrong and draws INDEX-126
naming the index and a row. Compat: 0.38.3 and 4.0.2 (fixed32 tails, per-document
positions) decode the same way.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import numpy as np
import pyarrow as pa
import pytest

from conformance.engine import validate
from reference_impl.errors import FormatError, UnsupportedIndex
from reference_impl.index import IndexFiles, fst, inverted
from reference_impl.index import inverted_postings as ip
from reference_impl.io.local import LocalStore

TEXT_RULES = {"INDEX-100", "INDEX-124", "INDEX-125", "INDEX-126", "INDEX-127"}
WORDS = ["Hello", "world", "quick", "Brown", "fox", "jumps", "lance", "runs", "db-42",
         "zebra", "Zebra", "a", "the", "averyveryverylongword", "x", "y", "running", "its",
         "ponies", "Caresses", "generously", "not", "added", "internal"]


# ---- units: no pylance ----

def _pack_4x(values, bits):
    """Test-side packer: value i to lane i % 4, each lane LSB-first into 32-bit words, word k
    of lane l at byte (4k + l) * 4."""
    out = bytearray(16 * bits)
    for lane in range(4):
        acc = 0
        for j in range(32):
            acc |= int(values[4 * j + lane]) << (bits * j)
        for k in range(bits):
            word = (acc >> (32 * k)) & 0xFFFFFFFF
            out[(4 * k + lane) * 4:(4 * k + lane) * 4 + 4] = word.to_bytes(4, "little")
    return bytes(out)


@pytest.mark.parametrize("bits", [0, 1, 3, 7, 13, 32])
def test_unpack_4x_inverts_the_packing(bits):
    rng = np.random.default_rng(bits)
    values = rng.integers(0, 1 << bits, 128, dtype=np.int64) if bits else np.zeros(128, int)
    assert ip.unpack_4x(_pack_4x(values, bits), bits).tolist() == values.tolist()


def _varint(n):
    out = bytearray()
    while True:
        out.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            return bytes(out)


def test_posting_blocks_full_and_tail_under_both_codecs():
    docs = np.arange(0, 400, 2)[:130]
    freqs = np.arange(130) % 5 + 1
    deltas = np.diff(docs[:128], prepend=docs[0])
    full = (b"\0\0\0\0" + int(docs[0]).to_bytes(4, "little") + bytes([2]) + _pack_4x(deltas, 2)
            + bytes([3]) + _pack_4x(freqs[:128], 3))
    fixed = b"\0\0\0\0" + np.asarray(docs[128:], "<u4").tobytes() + \
        np.asarray(freqs[128:], "<u4").tobytes()
    varint = b"\0\0\0\0" + _varint(int(docs[128])) + _varint(int(docs[129] - docs[128])) + \
        b"".join(_varint(int(f)) for f in freqs[128:])
    for codec, tail in (("fixed32_v1", fixed), ("varint_delta_v1", varint)):
        d, f = ip.posting_list([full, tail], 130, codec, None)
        assert d.tolist() == docs.tolist() and f.tolist() == freqs.tolist()
    with pytest.raises(FormatError):
        ip.posting_list([full[:-1], fixed], 130, "fixed32_v1", None)
    with pytest.raises(FormatError):
        ip.posting_list([full], 130, "fixed32_v1", None)        # a block missing
    with pytest.raises(FormatError):
        ip.tail_block(b"\0\0\0\0\xff\xff\xff\xff\xff\xff", 1, "varint_delta_v1", None)


def test_shared_position_stream_chunks():
    # two postings, 130 positions: one packed chunk of 128 deltas then two varints
    freqs = np.array([100, 30])
    deltas = [0] + [1] * 99 + [5] + [2] * 29
    stream = bytes([3]) + _pack_4x(deltas[:128], 3) + _varint(deltas[128]) + \
        _varint(deltas[129])
    pos = ip.positions_shared(stream, [0], freqs, None)
    assert pos[0] == list(range(100)) and pos[1] == [5 + 2 * i for i in range(30)]
    with pytest.raises(FormatError):
        ip.positions_shared(stream[:-1], [0], freqs, None)


def test_fst_refuses_cut_and_bad_bytes():
    with pytest.raises(FormatError):
        fst.entries(b"\x03" + b"\0" * 10)
    with pytest.raises(FormatError):
        fst.entries((9).to_bytes(8, "little") + b"\0" * 30)


def test_tokenizer_model_positions_case_stop_lists_and_refusals():
    from reference_impl.index import inverted_tokens as tk

    plain = {"base_tokenizer": "simple", "lower_case": True, "max_token_length": 6}
    # a dropped token (too long) leaves a gap in the positions
    assert tk.model(plain).stream("Fox jumped over") == [("fox", 0), ("over", 2)]
    # each character lower-cased alone (pylance 14.0.2 writes these tokens): a final sigma
    # stays sigma; "ΟΔΟΣ" is 8 UTF-8 bytes, too long for a limit of 6
    assert tk.model({}).stream("ΟΔΟΣ İstanbul") == [("οδοσ", 0), ("i̇stanbul", 1)]
    assert tk.model(plain).stream("ΟΔΟΣ") == []
    stops = dict(plain, remove_stop_words=True, max_token_length=40)
    assert [t for t, _ in tk.model(stops, "lucene").stream("its not the fox")] == ["its", "fox"]
    v2 = tk.model(stops, "v2")
    assert v2.stream("its not the fox") == [("not", 1), ("fox", 3)] and "not" in v2.unsure
    assert tk.exact_tokens("its not the fox", stops, "v2") is None   # "not": either way
    custom = dict(stops, custom_stop_words=["fox"])
    assert tk.model(custom, "v2").stream("the fox") == [("the", 0)]
    for bad, setting in (({"base_tokenizer": "ngram"}, "base_tokenizer"),
                         ({"lance_tokenizer": "json"}, "lance_tokenizer"),
                         ({"split_identifiers": True}, "split_identifiers"),
                         ({"stem": True, "language": "French"}, "language")):
        with pytest.raises(UnsupportedIndex, match=setting):
            tk.model(bad)
    # non-ASCII text under ASCII folding: tokens not reproduced, the count still exact
    folded = dict(stops, ascii_folding=True, stem=True)
    assert tk.exact_tokens("Café über its", folded, "v2") is None
    assert inverted.count_bounds("Café über its running", folded, "v2") == (3, 3)
    # Snowball 2 stems (layouts before format_version 2): as for either generation
    assert tk.model(folded, "lucene", tk.SNOWBALL_2).is_unsure("past")
    # format_version 2 is written by both generations: stems where they differ are unsure
    either = tk.model(folded, "v2", tk.SNOWBALL_2_OR_3)
    assert either.stream("added fox") == [("add", 0), ("fox", 1)]
    assert either.is_unsure("add") and either.is_unsure("intern") and not either.is_unsure("fox")
    assert not tk.model(folded, "v2", tk.SNOWBALL_3).is_unsure("add")


# ---- against pylance 14.0.2 ----

def _rows(n=600, seed=0, words=WORDS):
    rng = np.random.default_rng(seed)
    text = [" ".join(rng.choice(words, int(rng.integers(1, 7)))) if i % 23 else None
            for i in range(n)]
    text[5] = "common " * 140           # a posting list of one row with 140 positions
    return pa.table({"id": pa.array(np.arange(n) + seed * 100000, pa.int64()), "text": text})


def _index_dir(uri):
    import lance

    (i,) = [x for x in lance.dataset(uri).list_indices() if x["name"] == "fts"]
    d = os.path.join(uri, "_indices", i["uuid"])
    return IndexFiles(LocalStore(d), {n: n for n in os.listdir(d)}), i


def _decoded(uri):
    files, i = _index_dir(uri)

    class Index:
        name = "fts"

    return inverted.read(files, Index)


def _expected(table, content):
    """token -> {row position: token positions} from the text, under the settings the
    decoded index ``content`` records."""
    tokenizer = inverted.model(content.extra["params"], content.extra["stop_list"],
                               content.extra["stemmer"])
    want: dict[str, dict[int, list[int]]] = {}
    for r, text in enumerate(table.column("text").to_pylist()):
        if text is None:
            continue
        pairs = tokenizer.stream(text)
        assert pairs is not None, (text, content.extra["params"])
        for t, k in pairs:
            want.setdefault(t, {}).setdefault(r, []).append(k)
    # a token some writers of the layout drop as a stop word and others keep is not judged
    return {t: rs for t, rs in want.items() if not tokenizer.is_unsure(t)}


SETTINGS = {
    "simple-pos": dict(with_position=True, base_tokenizer="simple", lower_case=True,
                       stem=False, remove_stop_words=False, ascii_folding=False),
    "whitespace-case-len": dict(with_position=False, base_tokenizer="whitespace",
                                lower_case=False, stem=False, remove_stop_words=False,
                                ascii_folding=False, max_token_length=10),
    "whitespace-len-pos": dict(with_position=True, base_tokenizer="whitespace",
                               lower_case=True, stem=False, remove_stop_words=False,
                               max_token_length=6),
    "stopwords-fold-pos": dict(with_position=True, base_tokenizer="simple", lower_case=True,
                               stem=False, remove_stop_words=True, ascii_folding=True),
    "custom-stopwords": dict(with_position=True, stem=False, remove_stop_words=True,
                             custom_stop_words=["zebra", "fox"]),
    # pylance 14.0.2's defaults: stem, English stop words, ASCII folding, positions off
    "defaults": dict(),
    "stem-pos": dict(with_position=True, stem=True, remove_stop_words=True),
}


@pytest.mark.interop
@pytest.mark.parametrize("settings", list(SETTINGS.values()), ids=list(SETTINGS))
def test_decoded_postings_equal_the_tokens_of_the_text(tmp_path, settings):
    import lance

    uri = str(tmp_path / "t")
    rows = _rows()
    ds = lance.write_dataset(rows, uri)
    ds.create_scalar_index("text", "INVERTED", name="fts", **settings)
    content = _decoded(uri)
    assert content.version == "inverted-partitioned/fst/v2"
    want = _expected(rows, content)
    post = content.extra["postings"]
    freqs: dict[str, dict[int, int]] = {}
    positions: dict[str, dict[int, list[int] | None]] = {}
    tokenizer = inverted.model(content.extra["params"], content.extra["stop_list"],
                               content.extra["stemmer"])
    for t, r, f, p in zip(*(post.column(c).to_pylist() for c in
                            ("token", "row_id", "frequency", "positions")), strict=True):
        if tokenizer.is_unsure(t):
            continue
        freqs.setdefault(t, {})[r] = int(f)
        positions.setdefault(t, {})[r] = p
    assert freqs == {t: {r: len(p) for r, p in rs.items()} for t, rs in want.items()}
    # max_token_length=6 drops "common" (6 bytes): the model and the writer agree
    assert freqs.get("common", {}).get(5) == (None if "common" not in want else 140)
    if not content.extra["params"].get("with_position"):
        assert all(p is None for rs in positions.values() for p in rs.values())
    else:
        assert positions == want


def _text_errors(uri):
    report = validate(uri, deep=True)
    return [f for f in report.findings if f.rule in TEXT_RULES and f.severity == "error"], \
        report


@pytest.mark.interop
@pytest.mark.parametrize("with_position", [True, False])
def test_own_index_after_appends_optimize_and_deletes_draws_no_error(tmp_path, with_position):
    import lance

    uri = str(tmp_path / "t")
    ds = lance.write_dataset(_rows(), uri, max_rows_per_file=250)
    ds.create_scalar_index("text", "INVERTED", name="fts", with_position=with_position,
                           stem=False, remove_stop_words=False, ascii_folding=False)
    for seed in (1, 2):
        ds = lance.write_dataset(_rows(200, seed=seed), uri, mode="append")
        ds.optimize.optimize_indices()
    ds.delete("id % 11 = 3")
    ds = lance.dataset(uri)
    content = _decoded(uri)
    assert content.extra["postings"].num_rows > 0
    assert len(content.summary["partitions"]) > 1   # optimize_indices added a partition
    errs, report = _text_errors(uri)
    assert errs == [], [f.message for f in errs][:5]
    assert "fts" not in " ".join(getattr(report, "not_judged", []) or [])
    # then the one row holding "common" deleted and the table compacted: the remapped index
    # drops the token (0.38.3 and 4.0.2 keep _token_next_id above the tokens left)
    ds.delete("id = 5")
    ds.optimize.compact_files(target_rows_per_fragment=5000)
    ds = lance.dataset(uri)
    errs, report = _text_errors(uri)
    assert errs == [], [f.message for f in errs][:5]
    assert "fts" not in " ".join(getattr(report, "not_judged", []) or [])
    # the postings are judged: the search for a token answers the rows holding it
    hits = ds.to_table(full_text_query="zebra", columns=["text"])["text"].to_pylist()
    assert hits and all("zebra" in t.lower().split() for t in hits)


def _swap(tmp_path, settings):
    import lance

    rows = _rows()
    a = lance.write_dataset(rows, str(tmp_path / "a"))
    b = lance.write_dataset(rows.take(np.arange(rows.num_rows)[::-1]), str(tmp_path / "b"))
    for d in (a, b):
        d.create_scalar_index("text", "INVERTED", name="fts", **settings)
    (_, ia), (_, ib) = _index_dir(str(tmp_path / "a")), _index_dir(str(tmp_path / "b"))
    da = tmp_path / "a" / "_indices" / ia["uuid"]
    db = tmp_path / "b" / "_indices" / ib["uuid"]
    assert sorted(os.listdir(da)) == sorted(os.listdir(db))
    for n in os.listdir(db):
        shutil.copyfile(db / n, da / n)
        from conformance.suite.index.test_index_text import _set_index_file_size

        _set_index_file_size(str(tmp_path / "a"), n, os.path.getsize(da / n))
    return str(tmp_path / "a")


@pytest.mark.interop
@pytest.mark.parametrize("settings", [SETTINGS[k] for k in ("simple-pos", "whitespace-case-len",
                                                           "defaults")],
                         ids=["simple-pos", "whitespace-case-len", "defaults"])
def test_swapped_index_is_an_index_126_error_naming_a_row(tmp_path, settings):
    import lance

    uri = _swap(tmp_path, settings)
    hits = lance.dataset(uri).to_table(full_text_query="zebra", columns=["text"])
    assert any("zebra" not in (t or "").lower() for t in hits["text"].to_pylist()), \
        "the swapped index answers as the data does"
    errs, _ = _text_errors(uri)
    p126 = [f for f in errs if f.rule == "INDEX-126"]
    assert p126 and all(f.location.get("index") == "fts" for f in p126)
    assert all("row" in f.location for f in p126)
    assert any("not listed under its token" in f.message for f in p126)


@pytest.mark.interop
def test_swapped_positions_are_an_index_126_error(tmp_path):
    """Rows "alpha beta" / "beta alpha" alternate, the other table's the other way round:
    the same tokens and counts per row, only the positions differ. The swapped index
    answers the phrase query wrong and draws INDEX-126 (positions), not INDEX-125."""
    import lance
    from lance.query import PhraseQuery

    def table(first):
        text = [first if i % 2 == 0 else " ".join(reversed(first.split())) for i in range(60)]
        return pa.table({"id": pa.array(np.arange(60), pa.int64()), "text": text})

    for name, first in (("a", "alpha beta"), ("b", "beta alpha")):
        lance.write_dataset(table(first), str(tmp_path / name)).create_scalar_index(
            "text", "INVERTED", name="fts", with_position=True, stem=False)
    uri = str(tmp_path / "a")
    assert _errors_of(uri) == []
    (_, ia), (_, ib) = _index_dir(uri), _index_dir(str(tmp_path / "b"))
    da, db = tmp_path / "a" / "_indices" / ia["uuid"], tmp_path / "b" / "_indices" / ib["uuid"]
    for n in os.listdir(db):
        shutil.copyfile(db / n, da / n)
        from conformance.suite.index.test_index_text import _set_index_file_size

        _set_index_file_size(uri, n, os.path.getsize(da / n))
    ds = lance.dataset(uri)
    hits = ds.to_table(full_text_query=PhraseQuery("alpha beta", "text"), columns=["id"])
    assert sorted(hits["id"].to_pylist()) != list(range(0, 60, 2)), \
        "the swapped index answers the phrase as the data does"
    errs = _errors_of(uri)
    assert {f.rule for f in errs} == {"INDEX-126"}
    assert all(f.location.get("index") == "fts" and "row" in f.location for f in errs)
    assert all("positions" in f.message for f in errs)


@pytest.mark.interop
def test_cut_posting_block_is_index_100(tmp_path):
    """A posting block one byte short, the file rewritten with the reference writer: the
    index does not decode (INDEX-100 naming it), no traceback."""
    import lance

    from conformance.suite.index.test_index_text import _rewrite_index_file

    uri = str(tmp_path / "t")
    lance.write_dataset(_rows(), uri).create_scalar_index("text", "INVERTED", name="fts",
                                                          stem=False)
    _, i = _index_dir(uri)

    def edit(table):
        lists = table.column("_posting").to_pylist()
        lists[0] = [lists[0][0][:-1]] + lists[0][1:]
        at = table.schema.get_field_index("_posting")
        return table.set_column(at, table.schema.field(at),
                                pa.array(lists, table.schema.field(at).type))

    _rewrite_index_file(uri, i["uuid"], "part_0_invert.lance", edit)
    with pytest.raises(FormatError):
        _decoded(uri)
    errs, _ = _text_errors(uri)
    assert [f.rule for f in errs] == ["INDEX-100"] and errs[0].location.get("index") == "fts"


def _errors_of(uri):
    return _text_errors(uri)[0]


@pytest.mark.interop
def test_many_tokens_decode_through_wide_fst_nodes(tmp_path):
    """Tokens starting with 36 different characters (a root node of more than 32
    transitions, written with its 256-byte input table) and token ids above 255 (outputs of
    more than one byte)."""
    import lance

    rng = np.random.default_rng(7)
    alphabet = list("abcdefghijklmnopqrstuvwxyz0123456789")
    words = sorted({"".join(rng.choice(alphabet, int(rng.integers(1, 6)))) for _ in range(3000)})
    text = [" ".join(words[i:i + 3]) for i in range(0, len(words), 3)]
    uri = str(tmp_path / "t")
    ds = lance.write_dataset(pa.table({"id": np.arange(len(text)), "text": text}), uri)
    ds.create_scalar_index("text", "INVERTED", name="fts", stem=False, remove_stop_words=False)
    content = _decoded(uri)
    assert set(content.extra["postings"].column("token").to_pylist()) == set(words)
    assert _errors_of(uri) == []


@pytest.mark.interop
def test_unmodelled_tokenizer_setting_is_not_judged_by_name(tmp_path):
    import lance

    uri = str(tmp_path / "t")
    lance.write_dataset(_rows(100), uri).create_scalar_index(
        "text", "INVERTED", name="fts", base_tokenizer="ngram")
    errs, report = _text_errors(uri)
    assert errs == []
    notes = " ".join(getattr(report, "not_judged", []) or [])
    assert "'fts'" in notes and "base_tokenizer='ngram'" in notes


def test_stemming_without_the_stemmer_is_refused_by_name(monkeypatch):
    import sys

    from reference_impl.index import inverted_tokens

    monkeypatch.setitem(sys.modules, "snowballstemmer", None)
    with pytest.raises(UnsupportedIndex, match="stem=true"):
        inverted_tokens.model({"base_tokenizer": "simple", "stem": True})
    assert inverted_tokens.model({"stem": False}).stream("Fox runs") == [("fox", 0),
                                                                         ("runs", 1)]


@pytest.mark.interop
def test_unknown_layout_setting_is_refused_by_name(tmp_path):
    import lance

    uri = str(tmp_path / "t")
    lance.write_dataset(_rows(50), uri).create_scalar_index("text", "INVERTED", name="fts")
    files, _ = _index_dir(uri)
    with pytest.raises(UnsupportedIndex, match="posting_tail_codec"):
        inverted._layout({b"posting_tail_codec": b"pfor_v9"}, files.key("metadata.lance"))


# ---- older releases (0.38.3, 4.0.2): fixed32 tails, per-document positions ----

_BUILD = r"""
import json, sys, lance, pyarrow as pa
out, pos = sys.argv[1], sys.argv[2] == "1"
text = json.loads(sys.argv[3])
ds = lance.write_dataset(pa.table({"id": list(range(len(text))), "text": text}), out)
ds.create_scalar_index("text", "INVERTED", name="fts", with_position=pos, stem=False,
                       remove_stop_words=False, ascii_folding=False)
"""


@pytest.mark.compat
@pytest.mark.parametrize("release", ["pylance==0.38.3", "pylance==4.0.2"])
def test_older_partitioned_releases_decode_to_the_text(tmp_path, release):
    from conformance.releases.venvs import Release, ReleaseUnavailable, ensure_venv

    try:
        python = ensure_venv(Release.parse(release))
    except ReleaseUnavailable as exc:
        pytest.skip(f"{release} cannot be installed here: {exc}")
    rows = _rows(400)
    for pos in (True, False):
        uri = str(tmp_path / f"t{int(pos)}")
        done = subprocess.run([str(python), "-c", _BUILD, uri, "1" if pos else "0",
                               json.dumps(rows.column("text").to_pylist())],
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-2000:]
        content = _decoded(uri)
        assert content.version == "inverted-partitioned/fst/v1"
        want = _expected(rows, content)
        post = content.extra["postings"]
        have: dict = {}
        for t, r, f, p in zip(*(post.column(c).to_pylist() for c in
                                ("token", "row_id", "frequency", "positions")), strict=True):
            have.setdefault(t, {})[r] = p if pos else int(f)
        assert have == (want if pos else {t: {r: len(p) for r, p in rs.items()}
                                          for t, rs in want.items()})
        errs, _ = _text_errors(uri)
        assert errs == [], [f.message for f in errs][:5]


# ---- the index census answers full-text queries from the decoded postings ----

@pytest.mark.interop
@pytest.mark.slow
def test_census_cells_of_inverted_are_decoded_and_the_swap_caught(tmp_path):
    import sys

    from conformance.census import index_census, indexes

    out = tmp_path / "pylance-14.0.2"
    indexes.build("pylance==14.0.2", out, kinds=["INVERTED", "INVERTED-positions"],
                  scenarios=["plain", "delete", "optimize", "swap"], python=sys.executable)
    cells = index_census.judge([out])
    assert len(cells) == 8
    for c in cells:
        assert c.decoded == "yes", (c.kind, c.scenario, c.detail)
        assert c.verdict == ("caught" if c.scenario == "swap" else "agree"), \
            (c.kind, c.scenario, c.verdict, c.detail)
