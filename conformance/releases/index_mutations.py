"""Semantic mutations of index content: edits that keep every file valid and change what an
index says (``lance-conformance fixtures mutate --targets index-content``).

The byte mutations of :mod:`conformance.releases.mutations` damage files; a reader notices
most of them. An index can be wrong without one damaged byte: a key under another row, the
postings of two values swapped, a row in another IVF partition, a PQ or RaBitQ code replaced, an index
that claims fragments it never indexed. This campaign makes such indexes from the tables of
the index corpus (:mod:`conformance.census.indexes`, built by pylance 14.0.2), one edit per
copy (:data:`EDITS`):

* the index file is read with the kit's reader (:class:`reference_impl.file.reader
  .LanceFileReader`), one or two values of one column are changed, and the file is written
  again with the reference writer (:func:`reference_impl.file.writer.write_lance_file`, same
  file version, schema metadata and global buffers), then put in place with
  :func:`conformance.census.index_files.replace_index_file`, which keeps the manifest's
  recorded size true;
* ``stale-coverage`` edits the manifest instead: the index's ``fragment_bitmap`` is made to
  claim every fragment of the version, as an index left stale after an update that moved
  rows to a fragment the index never saw.

Each copy is then answered by pylance 14.0.2 with and without the index (the index program's
``ask``) and judged by the kit (:func:`conformance.census.index_census.judge_case`:
``validate --deep`` and the decoded index's answers). The verdict of a mutation:

* ``problem``: pylance answers wrong through the index and the kit says nothing, or the kit
  crashed (an untyped error) -- a failure of the campaign;
* ``caught``: pylance answers wrong and the kit flags the index;
* ``stricter``: pylance's answers to the census's queries stay right and the kit flags the
  index (the edit is real; the queries did not reach it);
* ``unseen``: pylance answers right and the kit says nothing (the edit changed nothing the
  queries or the kit's checks reach, or the kit cannot decode this kind yet: ``detail``);
* ``not applied``: the edit does not apply to the copy (the value it edits is absent).
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa

VERDICTS = ("problem", "caught", "stricter", "unseen", "not applied")
FAILING = ("problem",)


@dataclass
class Edited:
    """What one edit did: the file (relative to the table) and a sentence saying how."""

    file: str
    detail: str


class NotApplicable(Exception):
    """The edit does not apply to this table."""


# -- rewriting one index file --------------------------------------------------------------------


def _index_file(table: Path, name: str) -> tuple[str, Path]:
    from conformance.census.index_files import indexes

    user = [e for e in indexes(table) if not e.name.startswith("__")]
    for e in user:
        p = e.directory / name
        if p.is_file():
            return e.uuid, p
    raise NotApplicable(f"no index file {name}")


def rewrite_index_file(table: Path, name: str, change) -> str:
    """Read the index file ``name`` of ``table``, apply ``change(pa.Table) -> (pa.Table,
    detail)`` and write it back with the reference writer (same version, schema metadata and
    global buffers), keeping the manifest's recorded size true. Returns the detail."""
    from conformance.census.index_files import replace_index_file
    from reference_impl.file.reader import LanceFileReader
    from reference_impl.file.writer import write_lance_file
    from reference_impl.io.local import LocalStore
    from reference_impl.io.memory import MemoryStore

    index_uuid, path = _index_file(table, name)
    store = LocalStore(table)
    key = path.relative_to(table).as_posix()
    reader = LanceFileReader(store, key, size=path.stat().st_size)
    before = reader.read_all()
    schema = pa.schema([f.remove_metadata() for f in reader.schema],
                       metadata=reader.schema.metadata)
    before = pa.Table.from_arrays(before.columns, schema=schema)
    after, detail = change(before)
    gbs = [reader.container.read_global_buffer(i)
           for i in range(1, len(reader.container.global_buffers))]
    mem = MemoryStore()
    version = reader.version if reader.version in ("2.0", "2.1", "2.2") else "2.1"
    write_lance_file(mem, "f.lance", after, version=version, global_buffers=gbs)
    replace_index_file(table, index_uuid, path.relative_to(table / "_indices" / index_uuid)
                       .as_posix(), mem.get("f.lance"))
    return detail


def _set(table: pa.Table, column: str, rows: dict) -> pa.Table:
    """``table`` with ``column``'s values at the given positions replaced."""
    i = table.schema.get_field_index(column)
    values = table.column(column).to_pylist()
    for at, v in rows.items():
        values[at] = v
    return table.set_column(i, table.schema.field(i), pa.array(values, table.schema.field(i).type))


# -- the edits --------------------------------------------------------------------------------------


def btree_key(case: dict, table: Path) -> Edited:
    """BTREE / JSON: the key of one row of a value the census asks for becomes the next
    key (the order stays sorted): the row is indexed under another value."""
    target = {"id": 5, "num": 5, "meta": 3}[case["column"]]

    def change(t):
        values = t.column("values").to_pylist()
        hits = [i for i, v in enumerate(values) if v == target]
        if not hits:
            raise NotApplicable(f"no key {target}")
        at = hits[-1]
        bigger = [v for v in values[at + 1:] if v is not None and v > target]
        new = bigger[0] if bigger else target + 1
        row = t.column("ids")[at].as_py()
        return _set(t, "values", {at: new}), (f"page_data.lance row {at} (row id {row}): key "
                                             f"{target} -> {new}")

    return Edited("page_data.lance", rewrite_index_file(table, "page_data.lance", change))


def postings_swap(case: dict, table: Path) -> Edited:
    """BITMAP / LABEL_LIST: the postings (row bitmaps) of two values swapped."""
    a, b = {"cat": ("c3", "c4"), "tags": ("t1", "t2")}[case["column"]]

    def change(t):
        keys = t.column("keys").to_pylist()
        if a not in keys or b not in keys:
            raise NotApplicable(f"keys {a!r} and {b!r} not both present")
        i, j = keys.index(a), keys.index(b)
        bm = t.column("bitmaps").to_pylist()
        return _set(t, "bitmaps", {i: bm[j], j: bm[i]}), f"postings of {a!r} and {b!r} swapped"

    name = "bitmap_page_lookup.lance"
    return Edited(name, rewrite_index_file(table, name, change))


def ngram_postings_swap(case: dict, table: Path) -> Edited:
    """NGRAM: the posting lists of the most and the least frequent n-gram swapped."""

    def change(t):
        posts = t.column("posting_list").to_pylist()
        sizes = [len(p or b"") for p in posts]
        i, j = int(np.argmax(sizes)), int(np.argmin(sizes))
        if i == j:
            raise NotApplicable("one posting list")
        tok = t.column("tokens").to_pylist()
        return _set(t, "posting_list", {i: posts[j], j: posts[i]}), \
            f"posting lists of n-gram tokens {tok[i]} and {tok[j]} swapped"

    name = "ngram_postings.lance"
    return Edited(name, rewrite_index_file(table, name, change))


def zone_narrow(case: dict, table: Path) -> Edited:
    """ZONEMAP: zone 0's maximum narrowed to its minimum, and its null count set to 0."""

    def change(t):
        lo = t.column("min")[0].as_py()
        hi = t.column("max")[0].as_py()
        nulls = t.column("null_count")[0].as_py()
        t = _set(t, "max", {0: lo})
        t = _set(t, "null_count", {0: 0})
        return t, f"zone 0: max {hi} -> {lo}, null_count {nulls} -> 0"

    return Edited("zonemap.lance", rewrite_index_file(table, "zonemap.lance", change))


def bloom_clear(case: dict, table: Path) -> Edited:
    """BLOOMFILTER: zone 0's filter bits all cleared (same length): it says no value is there."""

    def change(t):
        data = t.column("bloom_filter_data")[0].as_py()
        return _set(t, "bloom_filter_data", {0: bytes(len(data))}), \
            f"zone 0: {len(data)} filter bytes set to zero"

    return Edited("bloomfilter.lance", rewrite_index_file(table, "bloomfilter.lance", change))


def fts_docs_swap(case: dict, table: Path) -> Edited:
    """INVERTED: the row ids of two documents swapped (their postings now name each other's
    row)."""

    def change(t):
        rows = t.column("_rowid").to_pylist()
        i, j = 3, len(rows) // 2 + 1
        return _set(t, "_rowid", {i: rows[j], j: rows[i]}), \
            f"documents {i} and {j}: row ids {rows[i]} and {rows[j]} swapped"

    name = "part_0_docs.lance"
    return Edited(name, rewrite_index_file(table, name, change))


def _partition_of(table: Path, n: int) -> np.ndarray:
    """The IVF partition of each row position of ``auxiliary.idx`` (from its IVF lengths)."""
    from reference_impl.file.reader import LanceFileReader
    from reference_impl.io.local import LocalStore
    from reference_impl.proto import index_pb2

    _u, path = _index_file(table, "auxiliary.idx")
    reader = LanceFileReader(LocalStore(table), path.relative_to(table).as_posix(),
                             size=path.stat().st_size)
    meta = {k.decode() if isinstance(k, bytes) else k: v.decode() if isinstance(v, bytes) else v
            for k, v in (reader.schema.metadata or {}).items()}
    ivf = index_pb2.IVF()
    ivf.ParseFromString(reader.container.read_global_buffer(int(meta["lance:ivf"])))
    lengths = list(ivf.lengths)
    if sum(lengths) != n:
        raise NotApplicable(f"IVF lengths sum to {sum(lengths)}, not {n}")
    return np.repeat(np.arange(len(lengths)), lengths)


def ivf_move(case: dict, table: Path) -> Edited:
    """IVF_*: the row of id 5 and a row of another partition trade places (their row ids are
    swapped in the storage file), so each row sits in a partition its vector does not select
    and carries the other's vector or code."""

    def change(t):
        rows = t.column("_rowid").to_pylist()
        part = _partition_of(table, len(rows))
        if 5 not in rows:
            raise NotApplicable("row 5 is not in the storage file")
        i = rows.index(5)
        others = [j for j in range(len(rows)) if part[j] != part[i]]
        if not others:
            raise NotApplicable("one partition")
        j = others[len(others) // 2]
        return _set(t, "_rowid", {i: rows[j], j: rows[i]}), \
            (f"row ids {rows[i]} (partition {part[i]}) and {rows[j]} (partition {part[j]}) "
             "swapped")

    return Edited("auxiliary.idx", rewrite_index_file(table, "auxiliary.idx", change))


def code_replace(case: dict, table: Path) -> Edited:
    """IVF_PQ / IVF_SQ (and HNSW over them): the code of the row of id 5 replaced by the code
    of a far row of the same partition."""

    def change(t):
        col = "__pq_code" if "__pq_code" in t.column_names else "__sq_code"
        if col not in t.column_names:
            raise NotApplicable("no PQ or SQ codes")
        rows = t.column("_rowid").to_pylist()
        if 5 not in rows:
            raise NotApplicable("row 5 is not in the storage file")
        part = _partition_of(table, len(rows))
        i = rows.index(5)
        same = [j for j in range(len(rows)) if part[j] == part[i] and j != i]
        codes = t.column(col).to_pylist()
        j = max(same, key=lambda k: sum(abs(int(x) - int(y)) for x, y in
                                        zip(codes[k], codes[i], strict=True)))
        meta = {k.decode() if isinstance(k, bytes) else k: v
                for k, v in (t.schema.metadata or {}).items()}
        transposed = b'"transposed":true' in bytes(meta.get("storage_metadata", b"")).replace(
            b" ", b"")
        note = (" (this layout stores each partition's codes transposed, so the bytes changed "
                "belong to several rows' codes)" if transposed else "")
        return _set(t, col, {i: codes[j]}), \
            (f"{col} value at the position of row id 5 replaced by the value at row id "
             f"{rows[j]}'s ({codes[i]} -> {codes[j]}){note}")

    return Edited("auxiliary.idx", rewrite_index_file(table, "auxiliary.idx", change))


def rq_code_replace(case: dict, table: Path) -> Edited:
    """IVF_RQ: the RaBitQ sign code of the row of id 5 replaced by the code of the row of its
    partition whose code differs most (the fast-scan layout unpacked, edited and packed
    again; the factors and extended codes stay the row's)."""
    from reference_impl.index.vector import rq

    def change(t):
        if "_rabit_codes" not in t.column_names:
            raise NotApplicable("no RaBitQ codes")
        rows = t.column("_rowid").to_pylist()
        if 5 not in rows:
            raise NotApplicable("row 5 is not in the storage file")
        part = _partition_of(table, len(rows))
        lengths = np.bincount(part, minlength=int(part.max()) + 1)
        meta = json.loads(json.loads((t.schema.metadata or {})[b"storage_metadata"])[0])
        stored = np.stack(t.column("_rabit_codes").to_numpy(zero_copy_only=False))
        codes = rq.unpack_fast_scan(stored, lengths) if meta.get("packed") else stored.copy()
        i = rows.index(5)
        same = [j for j in range(len(rows)) if part[j] == part[i] and j != i]
        if not same:
            raise NotApplicable("row 5 is alone in its partition")
        bits = np.unpackbits(codes, axis=1)
        j = max(same, key=lambda k: int((bits[k] != bits[i]).sum()))
        before = codes[i].tolist()
        codes[i] = codes[j]
        out = rq.pack_fast_scan(codes, lengths) if meta.get("packed") else codes
        col = t.schema.get_field_index("_rabit_codes")
        return t.set_column(col, t.schema.field(col), pa.FixedSizeListArray.from_arrays(
            pa.array(out.reshape(-1), pa.uint8()), out.shape[1])), \
            (f"_rabit_codes of row id 5 replaced by row id {rows[j]}'s ({before} -> "
             f"{codes[j].tolist()}, unpacked)")

    return Edited("auxiliary.idx", rewrite_index_file(table, "auxiliary.idx", change))


def stale_coverage(case: dict, table: Path) -> Edited:
    """Any kind, on a table whose update moved rows to a new fragment: the index's
    ``fragment_bitmap`` made to claim every fragment of the version (an index left stale
    after the update: it says it covers rows it never saw)."""
    from reference_impl.io.local import LocalStore
    from reference_impl.table.fragment_bitmap import decode_fragment_bitmap, encode_fragment_bitmap
    from reference_impl.table.manifest import decode_manifest_file, reencode
    from reference_impl.table.versions import latest_entry

    key = latest_entry(LocalStore(table)).key
    path = table / key
    mf = decode_manifest_file(path.read_bytes(), key)
    frags = sorted(int(f.id) for f in mf.manifest.fragments)
    done = None
    for meta in (mf.index_section.indices if mf.index_section is not None else []):
        if meta.name.startswith("__"):
            continue
        had = sorted(int(x) for x in decode_fragment_bitmap(bytes(meta.fragment_bitmap)))
        if set(frags) <= set(had):
            continue
        meta.fragment_bitmap = encode_fragment_bitmap(frags)
        done = f"index {meta.name!r}: fragment_bitmap {had} -> {frags}"
    if done is None:
        raise NotApplicable("the index already covers every fragment")
    old = path.read_bytes()
    path.write_bytes(reencode(mf))
    latest = table / "_latest.manifest"
    if latest.is_file() and latest != path and latest.read_bytes() == old:
        latest.write_bytes(path.read_bytes())
    return Edited(key, done)


#: edit name -> (function, the index kinds of the corpus it applies to, the scenario it edits)
EDITS = {
    "btree-key": (btree_key, ("BTREE", "BTREE-nulls", "JSON"), "plain"),
    "postings-swap": (postings_swap, ("BITMAP", "LABEL_LIST"), "plain"),
    "ngram-postings-swap": (ngram_postings_swap, ("NGRAM",), "plain"),
    "zone-narrow": (zone_narrow, ("ZONEMAP",), "plain"),
    "bloom-clear": (bloom_clear, ("BLOOMFILTER",), "plain"),
    "fts-docs-swap": (fts_docs_swap, ("INVERTED", "INVERTED-positions"), "plain"),
    "ivf-move": (ivf_move, ("IVF_FLAT", "IVF_PQ", "IVF_SQ", "IVF_HNSW_FLAT", "IVF_HNSW_SQ",
                            "IVF_HNSW_PQ", "IVF_RQ"), "plain"),
    "code-replace": (code_replace, ("IVF_PQ", "IVF_SQ", "IVF_HNSW_SQ", "IVF_HNSW_PQ"), "plain"),
    "rq-code-replace": (rq_code_replace, ("IVF_RQ",), "plain"),
    "stale-coverage": (stale_coverage, ("BTREE", "BTREE-nulls", "BITMAP", "LABEL_LIST", "NGRAM",
                                        "ZONEMAP", "BLOOMFILTER", "INVERTED", "IVF_FLAT",
                                        "IVF_PQ"), "update"),
}


# -- the campaign -----------------------------------------------------------------------------------


@dataclass
class Judged:
    edit: str
    kind: str
    source: str
    copy: str
    file: str = ""
    detail: str = ""
    verdict: str = ""
    release: str = ""  # what pylance's answers show
    kit: str = ""  # what the kit says


def plan(corpus: Path, count: int, seed: int, edits=None) -> list[tuple[str, str, Path]]:
    """The (edit, kind, case folder) of a campaign: every applicable pair once, in an order
    the seed shuffles, at most ``count``."""
    pairs = []
    for name, (_fn, kinds, scenario) in EDITS.items():
        if edits and name not in edits:
            continue
        for kind in kinds:
            case = corpus / kind / scenario
            if (case / "case.json").is_file():
                pairs.append((name, kind, case))
    random.Random(seed).shuffle(pairs)
    return pairs[:count]


def apply_edit(name: str, source: Path, dest: Path) -> tuple[dict, Edited]:
    """Copy the case folder ``source`` to ``dest`` and apply the edit ``name`` to its table."""
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(source, dest)
    case = json.loads((dest / "case.json").read_text())
    if case.get("status") != "built":
        raise NotApplicable(f"the source case is {case.get('status')}")
    fn = EDITS[name][0]
    return case, fn(case, dest / "table")


def judge_one(name: str, kind: str, source: Path, work: Path, reader_python: str) -> Judged:
    from conformance.census.index_census import judge_case
    from conformance.census.indexes import PROGRAM, Case, disagreement_text

    dest = work / f"{name}-{kind}"
    j = Judged(name, kind, str(source), str(dest))
    try:
        case, edited = apply_edit(name, source, dest)
    except NotApplicable as e:
        j.verdict, j.detail = "not applied", str(e)
        return j
    j.file, j.detail = edited.file, edited.detail
    case["operations"] = list(case.get("operations", [])) + [f"mutation {name}: {edited.detail}"]
    case["expected"] = "mutated"
    (dest / "case.json").write_text(json.dumps(case, indent=1))
    done = subprocess.run([reader_python, str(PROGRAM), "ask", str(dest)], capture_output=True,
                          text=True, timeout=600)
    data = json.loads((dest / "case.json").read_text())
    if done.returncode != 0 or data.get("status") != "built":
        # pylance refuses the copy: it cannot answer wrong through the index
        j.release = f"pylance cannot answer: {data.get('why') or done.stderr.strip()[-200:]}"
    c = Case(dest, data)
    try:
        cell = judge_case(c)
    except Exception as e:  # noqa: BLE001 - an untyped failure of the kit is the verdict
        j.verdict, j.kit = "problem", f"the kit crashed: {type(e).__name__}: {e}"
        return j
    wrong = data.get("status") == "built" and not c.release_agrees
    flagged = bool(cell.errors) or bool(cell.differing)
    if wrong:
        bad = c.release_disagreements()
        j.release = "pylance answers wrong through the index: " + "; ".join(
            disagreement_text(q) for q in bad[:3])
    elif not j.release:
        j.release = "pylance answers the census's queries right"
    j.kit = ("flags it: " + "; ".join(cell.errors[:2] + [
        f"decoded index answers {d['query']} other than the scan" for d in cell.differing[:2]])
             if flagged else f"says nothing (decoded: {cell.decoded})")
    if any(e.startswith("ENGINE") for e in cell.errors):
        j.verdict = "problem"
    elif wrong:
        j.verdict = "caught" if flagged else "problem"
    else:
        j.verdict = "stricter" if flagged else "unseen"
    return j


def campaign(corpus: Path, count: int, seed: int, work: Path, reader_python: str,
             edits=None, progress=None) -> list[Judged]:
    out = []
    work.mkdir(parents=True, exist_ok=True)
    for name, kind, source in plan(corpus, count, seed, edits):
        j = judge_one(name, kind, source, work, reader_python)
        out.append(j)
        if progress:
            progress(j)
    return out


def as_json(j: Judged) -> dict:
    return asdict(j)
