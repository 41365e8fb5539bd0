"""FM indexes (``reference_impl/index/fm.py``) decoded and held against their data.

Positive: the LanceDB Node SDK 0.31.0 (Lance 8.0; ``Index.fm()``, the one writer of the kind)
builds FM indexes over text with nulls, empty strings and non-ASCII characters, in several
partitions, then appends and optimizes: every one is decoded (no "not judged") and draws no
error. The reference writer's FM files read back as the documents they were made from.
Negative: FM files written by the reference writer and then edited (two rows' ids
exchanged, a wavelet bit flipped, a suffix-array sample, a count of the C table, a code)
draw the rule that says where a ``contains`` query through the index would go wrong; and
the issue's swap family with the SDK: another table's FM file over this one's makes the SDK
answer ``contains`` with other rows (through the index, no recheck), and is INDEX-102.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import uuid as uuid_mod
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conformance.engine import validate
from conformance.fixtures.invalid_index import inject, valid_entry
from conformance.suite.parts import unavailable
from reference_impl.index import fm

FM_URL = "/lance.index.pb.FMIndexDetails"
FM_RULES = {"INDEX-100", "INDEX-101", "INDEX-102", "INDEX-103", "INDEX-127"}


def _texts(n: int) -> list[str | None]:
    out = []
    for i in range(n):
        out.append(None if i % 17 == 5 else "" if i % 17 == 9 else
                   f"w{i % 23} é✓ lance{i % 13} Text")
    return out


def write_fm_table(root: Path, texts, *, partitions: int = 2, edit=None) -> Path:
    """A table (reference writer: ``id``, ``text``; two fragments) with an FM index on
    ``text`` written by the reference FM writer in ``partitions`` files; ``edit(k, table)``
    may change partition k's table before it is written."""
    from reference_impl.file.writer import write_lance_file
    from reference_impl.io.local import LocalStore
    from reference_impl.write import write_dataset

    table = pa.table({"id": pa.array(range(len(texts)), pa.int64()), "text": pa.array(texts)})
    half = (len(texts) + 1) // 2
    write_dataset(table, str(root), max_rows_per_file=half)
    rows = [((i // half) << 32) | (i % half) for i, t in enumerate(texts) if t is not None]
    docs = [t.encode() for t in texts if t is not None]
    uid = str(uuid_mod.uuid4())
    folder = root / "_indices" / uid
    folder.mkdir(parents=True)
    files = []
    cut = np.array_split(np.arange(len(docs)), partitions)
    for k, part in enumerate(cut):
        t = fm.encode_partition([docs[i] for i in part], [rows[i] for i in part])
        if edit is not None:
            t = edit(k, t)
        name = f"part_{k}_fm.lance"
        write_lance_file(LocalStore(folder), name, t, version="2.0")
        files.append((name, (folder / name).stat().st_size))
    inject(root, valid_entry("text_idx", uuid=uid, fields=(1,), frags=(0, 1), type_url=FM_URL,
                             dataset_version=1, files=files))
    return root


def _fm_findings(uri):
    report = validate(str(uri), deep=True)
    unjudged = [u for u in report.not_judged if "fm" in u]
    return [f for f in report.findings if f.rule in FM_RULES], report, unjudged


def _errors(findings):
    return [f for f in findings if f.severity == "error"]


# ---- the readable inversion and its speed-up ----

@settings(max_examples=60, deadline=None, derandomize=True, database=None)
@given(st.lists(st.binary(max_size=12).map(lambda b: b.replace(b"\xff", b"a")
                                            .replace(b"\x00", b"b")), max_size=12))
def test_readable_and_fast_inversion_give_the_text_and_its_suffix_array(docs):
    text = b"".join(d + b"\xff" for d in docs) + b"\x00"
    sa = fm.suffix_array(text)
    assert sa.tolist() == sorted(range(len(text)), key=lambda i: text[i:])
    T = np.frombuffer(text, np.uint8)
    L = T[(sa - 1) % len(text)]
    C = np.concatenate([[0], np.cumsum(np.bincount(L, minlength=256))]).astype(np.int64)
    for invert in (fm.invert_bwt, fm.invert_bwt_fast):
        got, got_sa = invert(L, C)
        assert got == text and got_sa.tolist() == sa.tolist()


def test_a_bwt_of_no_text_is_refused_by_both_inversions():
    L = np.frombuffer(b"\x00aa\x00", np.uint8)  # LF falls into a cycle without row 0
    C = np.concatenate([[0], np.cumsum(np.bincount(L, minlength=256))]).astype(np.int64)
    from reference_impl.errors import FormatError

    for invert in (fm.invert_bwt, fm.invert_bwt_fast):
        with pytest.raises(FormatError, match="not one cycle"):
            invert(L, C)


def test_reference_writer_reads_back_and_holds_its_data(tmp_path):
    uri = write_fm_table(tmp_path / "t.lance", _texts(600), partitions=3)
    findings, report, unjudged = _fm_findings(uri)
    assert not _errors(findings) and not unjudged, [f.message for f in findings]
    from reference_impl.dataset import open_dataset
    from reference_impl.index.of_dataset import decoded, read

    ds = open_dataset(str(uri))
    content = read(ds, decoded(ds)[0])
    texts = [t for t in _texts(600) if t is not None]
    assert content.entries.column("text").to_pylist() == texts
    assert content.summary["partitions"] == 3 and content.summary["documents"] == len(texts)


# ---- edits the index's answers would show ----

def _set_meta(t: pa.Table, key: str, value: str) -> pa.Table:
    meta = dict(t.schema.metadata)
    meta[key.encode()] = value.encode()
    return t.replace_schema_metadata(meta)


def _meta(t: pa.Table, key: str) -> str:
    return t.schema.metadata[key.encode()].decode()


def _swap_rows(k, t):
    if k:
        return t
    rows = np.frombuffer(bytes.fromhex(_meta(t, "row_ids")), "<u8").copy()
    rows[[0, 1]] = rows[[1, 0]]
    return _set_meta(t, "row_ids", rows.tobytes().hex())


def _flip_root_bit(k, t):
    if k:
        return t
    words = t.column("words").to_pylist()
    raw = bytearray(words[0])
    raw[3] ^= 0x10
    words[0] = bytes(raw)
    return t.set_column(2, t.schema.field(2), pa.array(words, pa.large_binary()))


def _bad_sample(k, t):
    words = t.column("words").to_pylist()
    last = t.num_rows - 1  # the sample block
    s = np.frombuffer(words[last], "<u8").copy()
    s[1] += 1
    words[last] = s.tobytes()
    return t.set_column(2, t.schema.field(2), pa.array(words, pa.large_binary()))


def _bad_count(k, t):
    C = np.frombuffer(bytes.fromhex(_meta(t, "c_table")), "<u8").copy()
    d = np.diff(C.astype(np.int64))
    at = next(k for k in range(1, 256) if d[k - 1] > 1 and d[k] > 0)
    C[at] += 1  # one more of symbol at - 1, one fewer of symbol at: still non-decreasing
    return _set_meta(t, "c_table", C.tobytes().hex())


def _bad_code(k, t):
    raw = bytearray(bytes.fromhex(_meta(t, "huffman_codes")))
    at = 0
    for _symbol in range(256):
        length, count = raw[at + 4], int.from_bytes(raw[at + 5:at + 7], "little")
        if length:
            raw[at] ^= 1  # the code's last bit: another leaf's path
            break
        at += 7 + 4 * count
    return _set_meta(t, "huffman_codes", bytes(raw).hex())


@pytest.mark.parametrize("edit, rule, said", [
    (_swap_rows, "INDEX-102", "under value"),
    (_flip_root_bit, None, ""),
    (_bad_sample, "INDEX-127", "suffix-array samples"),
    (_bad_count, "INDEX-127", "c_table"),
    (_bad_code, "INDEX-127", "is not the leaf's path"),
])
def test_an_edited_fm_index_is_an_error(tmp_path, edit, rule, said):
    uri = write_fm_table(tmp_path / "t.lance", _texts(400), edit=edit)
    findings, _report, _unjudged = _fm_findings(uri)
    errors = _errors(findings)
    assert errors, f"{edit.__name__} drew no error"
    assert all("text_idx" in f.message for f in errors)
    if rule is not None:
        hit = [f for f in errors if f.rule == rule]
        assert hit and any(said in f.message for f in hit), [(f.rule, f.message) for f in errors]


def test_a_truncated_wavelet_node_does_not_decode(tmp_path):
    def cut(k, t):
        words = t.column("words").to_pylist()
        words[0] = words[0][:8]
        return t.set_column(2, t.schema.field(2), pa.array(words, pa.large_binary()))

    uri = write_fm_table(tmp_path / "t.lance", _texts(300), edit=cut)
    findings, _r, _u = _fm_findings(uri)
    assert [f.rule for f in _errors(findings)] == ["INDEX-100"]
    assert "FM wavelet node 0" in _errors(findings)[0].message


def test_a_null_row_is_no_document_and_a_missing_text_row_is(tmp_path):
    texts = _texts(200)

    def drop_first(k, t):  # the first document's row named as a null row's
        if k:
            return t
        rows = np.frombuffer(bytes.fromhex(_meta(t, "row_ids")), "<u8").copy()
        rows[0] = 5  # row 5 is null
        return _set_meta(t, "row_ids", rows.tobytes().hex())

    uri = write_fm_table(tmp_path / "t.lance", texts, edit=drop_first)
    errors = _errors(_fm_findings(uri)[0])
    rules = {f.rule for f in errors}
    assert "INDEX-101" in rules or "INDEX-102" in rules, [(f.rule, f.message) for f in errors]
    assert any("row 0 " in f.message for f in errors)


# ---- the one writer of the kind: the LanceDB Node SDK ----

NODE_BUILD = r"""
import * as lancedb from "@lancedb/lancedb";
import * as arrow from "apache-arrow";
const [dir, n] = [process.argv[2], Number(process.argv[3])];
const db = await lancedb.connect(dir);
const schema = new arrow.Schema([new arrow.Field("id", new arrow.Int64(), true),
                                 new arrow.Field("text", new arrow.Utf8(), true)]);
const rows = [];
for (let i = 0; i < n; i++) {
  let text = `w${i % 101} é✓ lance${i % 13} Text`;
  if (i % 50 === 7) text = null;
  if (i % 50 === 9) text = "";
  rows.push({ id: i, text });
}
const t = await db.createTable("fm", rows, { mode: "overwrite", schema });
await t.createIndex("text", { config: lancedb.Index.fm() });
await t.add(rows.slice(0, 10).map((r) => ({ id: r.id + n, text: r.text })));
await t.optimize();
await t.delete("id % 97 = 3");
console.log(JSON.stringify({ hits: (await t.query().where("contains(text, 'w17 ')").toArray()).length }));
"""


@pytest.fixture(scope="module")
def node_modules() -> Path:
    from conformance.servers.node_adapter import find_node_adapter

    found = find_node_adapter()
    if found is None or shutil.which("node") is None:
        unavailable("the LanceDB Node SDK", "node or its npm modules are missing: run "
                    "python -m conformance.servers install-node-adapter")
    return Path(found)


def test_the_node_sdks_fm_indexes_are_judged_and_hold(node_modules, tmp_path):
    hits = json.loads(_node(node_modules, NODE_BUILD, str(tmp_path / "db"), "30000"))["hits"]
    uri = tmp_path / "db" / "fm.lance"
    findings, report, unjudged = _fm_findings(uri)
    assert not _errors(findings), [f.message for f in findings][:5]
    assert not unjudged, unjudged
    from reference_impl.dataset import open_dataset
    from reference_impl.index.of_dataset import decoded, read

    ds = open_dataset(str(uri))
    [index] = [i for i in decoded(ds) if i.name == "text_idx"]
    content = read(ds, index)
    assert content.summary["partitions"] >= 2  # several part_<k>_fm.lance
    # the index's documents answer the SDK's contains query as its scan does
    texts = content.entries.column("text").to_pylist()
    rows = set(content.entries.column("row_id").to_pylist())
    live = ds.to_table(with_row_address=True)
    want = sum(1 for t in live.column("text").to_pylist() if t is not None and "w17 " in t)
    assert hits == want
    found = {r for r, t in zip(content.entries.column("row_id").to_pylist(), texts, strict=True)
             if "w17 " in t}
    assert {a for a, t in zip(live.column("_rowaddr").to_pylist(), live.column("text").to_pylist(),
                              strict=True) if t is not None and "w17 " in t} <= found | (
        set(live.column("_rowaddr").to_pylist()) - rows)


# ---- hostile bytes ----

def _hostile(tmp_path, seeds) -> int:
    from conformance.suite.index.test_index_hostile import judge

    base = write_fm_table(tmp_path / "base.lance", _texts(300), partitions=2)
    return sum(any(r.startswith("INDEX-") for r in judge(base, tmp_path / "w", seed))
               for seed in seeds)


def test_damaged_fm_files_end_in_a_report(tmp_path):
    """Damaged FM files (bits, zero runs, Lance file-format mutations) end in INDEX findings
    or none, never an escaping exception (the first campaign found undecodable metadata
    text escaping as UnicodeDecodeError: 7 of 120)."""
    assert _hostile(tmp_path, range(80, 120)) >= 30


@pytest.mark.slow
def test_damaged_fm_files_end_in_a_report_soak(tmp_path):
    assert _hostile(tmp_path, range(1000, 1300)) >= 280


NODE_SWAP = r"""
import * as lancedb from "@lancedb/lancedb";
import * as arrow from "apache-arrow";
const [dir, step] = [process.argv[2], process.argv[3]];
const db = await lancedb.connect(dir);
const schema = new arrow.Schema([new arrow.Field("id", new arrow.Int64(), true),
                                 new arrow.Field("text", new arrow.Utf8(), true)]);
const rows = [];
for (let i = 0; i < 2000; i++) rows.push({ id: i, text: `w${i} lance${i % 13} text` });
if (step === "build") {
  for (const [name, rs] of [["a", rows], ["b", [...rows].reverse()]]) {
    const t = await db.createTable(name, rs, { mode: "overwrite", schema });
    await t.createIndex("text", { config: lancedb.Index.fm() });
  }
} else {
  const t = await db.openTable("a");
  const q = t.query().where("contains(text, 'w5 ')");
  const plan = await q.explainPlan(true);
  console.log(JSON.stringify({ ids: (await q.select(["id"]).toArray()).map((r) => Number(r.id)),
                               fm: plan.includes("(Fm)") }));
}
"""


def _node(node_modules: Path, source: str, *args) -> str:
    script = node_modules / f"fm_{uuid_mod.uuid4().hex}.mjs"
    script.write_text(source)
    try:
        done = subprocess.run(["node", str(script), *args], capture_output=True, text=True,
                              timeout=600, cwd=node_modules)
    finally:
        script.unlink()
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""


def test_a_swapped_fm_index_answers_wrong_in_the_sdk_and_is_an_error(node_modules, tmp_path):
    """The issue's swap family for FM: two tables hold the same 2,000 rows, one reversed,
    each with an FM index (same file names and sizes); the second's file over the first's.
    The SDK answers ``contains`` through the index alone (its plan: ScalarIndexQuery on the
    FM index, no recheck) and returns row 1994 for 'w5 '; the kit names the index and rows."""
    db = tmp_path / "db"
    _node(node_modules, NODE_SWAP, str(db), "build")
    [a] = (db / "a.lance" / "_indices").glob("*/part_0_fm.lance")
    [b] = (db / "b.lance" / "_indices").glob("*/part_0_fm.lance")
    assert a.stat().st_size == b.stat().st_size
    before = json.loads(_node(node_modules, NODE_SWAP, str(db), "query"))
    assert before == {"ids": [5], "fm": True}
    findings, _r, _u = _fm_findings(db / "a.lance")
    assert not _errors(findings)
    shutil.copyfile(b, a)
    after = json.loads(_node(node_modules, NODE_SWAP, str(db), "query"))
    assert after == {"ids": [1994], "fm": True}  # a wrong answer, through the index
    errors = _errors(_fm_findings(db / "a.lance")[0])
    assert {f.rule for f in errors} == {"INDEX-102"}
    assert "index 'text_idx' names row 0 " in errors[0].message
    assert "'w1999 lance10 text', but 'text' holds 'w0 lance0 text'" in errors[0].message


# ---- pylance 14.0.2 reads the reference writer's FM (it builds none itself) ----

SUBSTRINGS = ("w5 ", "w1", "lance12", "é✓", "Text", "", "zz", "5 é")


@pytest.mark.interop
def test_pylance_answers_through_the_reference_writers_fm_as_its_scan(pylance, tmp_path):
    """What the kit writes pylance must read identically: its plan answers ``contains``
    through the FM index (ScalarIndexQuery, no recheck), and every answer equals its scan --
    but the empty substring's: through any FM index (the Node SDK's own too, and the SDK
    itself) pylance 14.0.2 answers no row, where every non-null row contains ''. A bug of
    the FM's reader, not of the index."""
    uri = write_fm_table(tmp_path / "t.lance", _texts(500), partitions=3)
    ds = pylance.dataset(str(uri))
    for sub in SUBSTRINGS:
        flt = f"contains(text, '{sub}')"
        assert "(Fm)" in ds.scanner(filter=flt).explain_plan()
        through = sorted(ds.to_table(filter=flt, columns=["id"])["id"].to_pylist())
        scan = sorted(ds.to_table(filter=flt, columns=["id"], use_scalar_index=False)["id"]
                      .to_pylist())
        if sub == "":
            assert through == [] and len(scan) == sum(t is not None for t in _texts(500))
        else:
            assert through == scan, sub


@pytest.mark.interop
def test_pylance_answers_wrong_through_an_fm_whose_rows_are_exchanged(pylance, tmp_path):
    """Two documents' rows exchanged: pylance answers 'w0 ' with row 1 through the index
    (its scan: row 0), and the kit names the index and both rows (INDEX-102)."""
    uri = write_fm_table(tmp_path / "t.lance", _texts(400), edit=_swap_rows)
    ds = pylance.dataset(str(uri))
    flt = "contains(text, 'w0 ')"
    through = sorted(ds.to_table(filter=flt, columns=["id"])["id"].to_pylist())
    scan = sorted(ds.to_table(filter=flt, columns=["id"], use_scalar_index=False)["id"]
                  .to_pylist())
    assert through != scan and 0 in scan and 0 not in through
    errors = _errors(_fm_findings(uri)[0])
    assert {f.rule for f in errors} == {"INDEX-102"}
    assert any("names row 0 " in f.message for f in errors)
