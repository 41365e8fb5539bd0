"""The history as units (``conformance/engine/history.py``, ``split.py``): a fragment is
checked once however many versions list it, its findings still name every version, and the
fast paths (splitting manifests by their bytes, sharing units, the fragment aggregates the
version rules read) give the readable paths' report."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from conformance.engine import access, local, validate
from conformance.engine.report import Violation
from conformance.engine.split import FastSplitter, ReadableSplitter
from conformance.rules.context import FragmentContext, FragmentManifest, _Spans
from conformance.suite.scenarios import copy_scenario, corrupt_manifest, version_context
from reference_impl.proto import table_pb2
from reference_impl.table import layout

ROOT = Path(__file__).resolve().parents[3]
FIXTURES = sorted([p / "table" for p in (ROOT / "fixtures" / "invalid").iterdir()
                   if (p / "table").is_dir()] +
                  [p / "table" for p in (ROOT / "fixtures" / "golden").iterdir()
                   if (p / "table" / "_versions").is_dir()])
# the fixtures of the rules that moved to the fragment scope or read the fragment
# aggregates, and the golden tables: checked with every option in the default run
AGGREGATE_RULES = ("FRAG-", "DATAFILE-", "DELETION-", "ROWID-", "FLAGS-", "LAYOUT-00",
                   "BASEPATH-002", "INDEX-005", "INDEX-012", "COMMIT-002", "REFS-005")
QUICK = [p for p in FIXTURES if p.parent.parent.name == "golden"
         or p.parent.name.startswith(AGGREGATE_RULES)]


def _same(a, b) -> None:
    da, db = a.as_dict(), b.as_dict()
    for d in (da, db):
        d.pop("elapsed_s")
        d.pop("stats", None)
    assert da == db


def _manifests(table: Path) -> list[bytes]:
    """The Manifest message bytes of every version of ``table``, oldest first."""
    from reference_impl.io.local import LocalStore
    from reference_impl.table.manifest import read_manifest_file

    store = LocalStore(str(table))
    names = {}
    for name in sorted((table / "_versions").iterdir()):
        parsed = layout.parse_manifest_name(name.name)
        if parsed and parsed[1] != layout.SCHEME_DETACHED:
            names.setdefault(parsed[0], name.name)
    out = []
    for v in sorted(names):
        try:
            mf = read_manifest_file(store, f"_versions/{names[v]}")
        except Exception:  # noqa: BLE001 - a broken manifest is another test's
            continue
        data = (table / "_versions" / names[v]).read_bytes()
        out.append(data[mf.manifest_offset + 4: len(data) - 16])
    return out


def _splits(splitter, bodies):
    out = []
    for body in bodies:
        s = splitter.split(body)
        out.append((s.kept, s.dropped, [k for k, _ in s.new],
                    [d().SerializeToString(deterministic=True) for _, d in s.new],
                    s.manifest.SerializeToString(deterministic=True)))
    return out


# -- the splitters -------------------------------------------------------------------------

@pytest.mark.parametrize("table", FIXTURES, ids=lambda p: p.parent.name)
def test_fast_split_equals_readable_split_on_fixtures(table):
    bodies = _manifests(table)
    assert _splits(FastSplitter(), bodies) == _splits(ReadableSplitter(), bodies)


def _fragment(i: int, rows: int = 10, deletion: bool = False) -> table_pb2.DataFragment:
    f = table_pb2.DataFragment(id=i, physical_rows=rows)
    df = f.files.add(path=f"{i:050d}.lance", file_major_version=2, file_minor_version=2)
    df.fields.extend([0, 1])
    df.column_indices.extend([0, 1])
    if deletion:
        f.deletion_file.read_version = i
        f.deletion_file.num_deleted_rows = 1
    return f


def _body(frags, version: int, interleave: bool = False) -> bytes:
    """A Manifest's bytes; ``interleave`` writes field 3 between two fragment entries."""
    m = table_pb2.Manifest(version=version)
    m.fields.add(name="a", id=0, parent_id=-1, logical_type="int64")
    if not interleave or len(frags) < 2:
        m.fragments.extend(frags)
        return m.SerializeToString()
    head = table_pb2.Manifest()
    head.fields.extend(m.fields)
    head.fragments.extend(frags[:1])
    tail = table_pb2.Manifest()
    tail.fragments.extend(frags[1:])
    return head.SerializeToString() + table_pb2.Manifest(version=version).SerializeToString() \
        + tail.SerializeToString()


_EDIT = st.tuples(st.sampled_from(["append", "drop", "delete", "move", "interleave"]),
                  st.integers(0, 50))


@given(st.lists(_EDIT, max_size=25))
@example([("append", 0), ("delete", 0), ("append", 1), ("drop", 0), ("interleave", 3)])
@example([("append", 0), ("append", 0), ("move", 1), ("move", 0)])
@example([("append", 0), ("append", 0), ("interleave", 0)])
def test_fast_split_equals_readable_split_on_edits(edits):
    frags, bodies, next_id = [], [], 0
    for v, (edit, n) in enumerate(edits, start=1):
        if edit == "append" or not frags:
            frags.append(_fragment(next_id))
            next_id += 1
        elif edit == "drop":
            frags.pop(n % len(frags))
        elif edit == "delete":
            i = n % len(frags)
            frags[i] = _fragment(frags[i].id, deletion=True)
        elif edit == "move":
            frags.append(frags.pop(n % len(frags)))
        bodies.append(_body(frags, v, interleave=edit == "interleave"))
    fast, readable = _splits(FastSplitter(), bodies), _splits(ReadableSplitter(), bodies)
    assert fast == readable
    keys: list = []
    for (kept, dropped, new, _raw, _m), body in zip(fast, bodies, strict=True):
        now = [f.SerializeToString() for f in table_pb2.Manifest.FromString(body).fragments]
        shared = 0
        while shared < min(len(keys), len(now)) and keys[shared] == now[shared]:
            shared += 1
        assert (kept, len(dropped), len(new)) == (shared, len(keys) - shared, len(now) - shared)
        keys = now


def test_bytes_the_walk_does_not_handle_fall_back_to_the_parser():
    frags = [_fragment(0), _fragment(1)]
    group = bytes([(100 << 3 | 3) & 0x7F | 0x80, (100 << 3 | 3) >> 7, (100 << 3 | 4) & 0x7F | 0x80,
                   (100 << 3 | 4) >> 7])  # an empty group of field 100 (an unknown field)
    bodies = [_body(frags[:1], 1), _body(frags, 2) + group]
    assert _splits(FastSplitter(), bodies) == _splits(ReadableSplitter(), bodies)
    for splitter in (FastSplitter(), ReadableSplitter()):
        with pytest.raises(Exception) as err:
            splitter.split(_body(frags, 3)[:-3])  # cut inside a fragment entry
        assert type(err.value).__name__ == "DecodeError"


# -- units and their versions ----------------------------------------------------------------

def _grow(lance, uri: Path, versions: int) -> str:
    for i in range(versions):
        lance.write_dataset(pa.table({"a": pa.array([2 * i, 2 * i + 1], pa.int64())}), str(uri),
                            mode="create" if i == 0 else "append")
    return str(uri)


@pytest.fixture(scope="module")
def grown(tmp_path_factory, pylance):
    """25 appends by pylance 14.0.2, fragment 0 carrying field id -1 (FRAG-005) in every
    version, so one fragment unit with a finding lives through the whole history."""
    uri = _grow(pylance, tmp_path_factory.mktemp("grown") / "t", 25)
    for v in range(1, 26):
        corrupt_manifest(uri, lambda m: m.fragments[0].files[0].fields.append(-1), v)
    return uri


def test_a_fragment_is_checked_once_and_its_finding_names_every_version(grown):
    report = validate(grown, versions="all")
    (finding,) = [f for f in report.violations if f.rule == "FRAG-005"]
    assert finding.versions == ((1, 25),) and finding.location["version"] == 1
    assert finding.covers() == list(range(1, 26))
    assert report.as_dict()["violations"][0]["versions"] == [[1, 25]]
    assert "v1-25" in report.render("text")
    stats = report.stats
    assert stats["versions_checked"] == 25 and stats["fragment_units"] == 25
    assert stats["fragment_entries"] == 25 * 26 // 2
    # only the first version's fragments were ever decoded as a list
    assert stats["fragment_lists_decoded"] == 1
    assert stats["objects_read_again"] == 0


def test_versions_skip_where_the_history_does(grown, tmp_path):
    """A version whose manifest is gone (cleanup) splits the range; one that no longer
    carries the fragment ends it."""
    copy = tmp_path / "t"
    shutil.copytree(grown, copy)
    version_context(copy, 10)  # it exists
    for name in (copy / "_versions").iterdir():
        if (layout.parse_manifest_name(name.name) or (None,))[0] == 10:
            name.unlink()
    corrupt_manifest(copy, lambda m: m.fragments.__delitem__(0), 25)
    report = validate(str(copy), versions="all")
    (finding,) = [f for f in report.violations if f.rule == "FRAG-005"]
    assert finding.versions == ((1, 9), (11, 24))
    assert "v1-9, v11-24" in report.render("text")


def test_each_version_on_its_own_gives_the_same_report(grown):
    """``dedupe=False`` (a unit per version and fragment: checking each version on its own)
    and the readable splitter give the shared units' report."""
    base = validate(grown, versions="all")
    for options in (local.Options(dedupe=False), local.Options(fast=False),
                    local.Options(guards=False)):
        p = local.plan(grown, versions="all", options=options)
        _same(local.merge(p, []), base)
    alone = local.plan(grown, versions="all", options=local.Options(dedupe=False))
    assert alone.stats["fragment_units"] == 25 * 26 // 2


@pytest.mark.parametrize("deep", [False, True], ids=["metadata", "deep"])
@pytest.mark.parametrize("table", QUICK, ids=lambda p: p.parent.name)
def test_every_path_gives_the_same_report(table, deep):
    _check_options(table, deep)


@pytest.mark.slow
@pytest.mark.parametrize("deep", [False, True], ids=["metadata", "deep"])
@pytest.mark.parametrize("table", [p for p in FIXTURES if p not in QUICK],
                         ids=lambda p: p.parent.name)
def test_every_path_gives_the_same_report_slow(table, deep):
    _check_options(table, deep)


def _check_options(table: Path, deep: bool) -> None:
    reports = []
    for options in (local.Options(), local.Options(fast=False),
                    local.Options(dedupe=False, guards=False)):
        p = local.plan(str(table), versions="all", deep=deep, options=options)
        reports.append(local.merge(p, [local.run_data_file_item(i) for i in p.items]))
    _same(reports[0], reports[1])
    _same(reports[0], reports[2])
    if deep:
        # the deep checks without the tail windows the plan read (each reads its file's
        # footer itself) give the report of those served from the windows
        p = local.plan(str(table), versions="all", deep=True)
        alone = [dataclasses.replace(i, tail=None) for i in p.items]
        _same(reports[0], local.merge(p, [local.run_data_file_item(i) for i in alone]))


def test_deep_decodes_each_data_file_once(grown):
    report = validate(grown, versions="all", deep=True)
    assert report.stats["data_files"] == 25 and report.stats["data_files_decoded"] == 25


def test_deep_reads_no_footer_again(grown, monkeypatch):
    """The deep checks read through the run's counting store, and take each data file's
    footer from the tail window the metadata checks read: no request for it again (these
    small files are whole in their windows: the deep checks make no request at all)."""
    metadata = validate(grown, versions="all").stats
    deep = validate(grown, versions="all", deep=True).stats
    assert deep["data_file_tails_kept"] == deep["data_files_decoded"] == 25
    assert deep["objects_read_again"] == 0 and "data_files_read_directly" not in deep
    for k in ("store_gets", "store_heads", "store_bytes_read", "objects_read"):
        assert deep[k] == metadata[k], k
    # without the windows, each deep check reads its local file itself, outside the counts
    monkeypatch.setattr(access.Tails, "keep", lambda *a, **k: None)
    again = validate(grown, versions="all", deep=True)
    assert again.stats["data_files_read_directly"] == 25
    assert "data_file_tails_kept" not in again.stats


# -- the fragment's environment ----------------------------------------------------------------

def test_a_fragment_rule_sees_only_the_fragment_and_its_environment(grown):
    vctx = version_context(grown, 3)
    fctx = FragmentContext.of(vctx, vctx.manifest.fragments[1])
    m = fctx.manifest
    assert isinstance(m, FragmentManifest) and list(m.fragments) == [vctx.manifest.fragments[1]]
    assert m.fields == vctx.manifest.fields and m.HasField("writer_version")
    for name in ("version", "max_fragment_id", "next_row_id", "transaction_file"):
        with pytest.raises(AttributeError, match="environment"):
            getattr(m, name)
    with pytest.raises(AttributeError):
        m.HasField("max_fragment_id")
    assert fctx.mf.index_section is None and not fctx.whole_manifest


def test_schema_change_judges_every_fragment_again(pylance, tmp_path):
    uri = _grow(pylance, tmp_path / "t", 4)
    pylance.dataset(uri).add_columns({"b": "a * 2"})
    p = local.plan(uri, versions="all")
    # versions 1-4 share their fragments; version 5 (a new schema) judges its 4 again
    assert p.stats["fragment_units"] == 4 + 4
    assert p.stats["fragment_lists_decoded"] == 2


def test_grouping_keeps_findings_on_no_version_once():
    spec = {"file": "f", "section": "s", "clause": "c"}
    a = Violation("LAYOUT-003", "warning", spec, "m", {"ref": "main", "path": "x"})
    b = Violation("FRAG-001", "error", spec, "m", {"ref": "main", "version": 3})
    c = Violation("FRAG-001", "error", spec, "m", {"ref": "main", "version": 4})
    d = Violation("FRAG-001", "error", spec, "m", {"ref": "branch:x", "version": 5})
    out = local.unique_findings([a, a, b, c, d])
    assert [(f.rule, f.location.get("version"), f.versions) for f in out] == [
        ("FRAG-001", 3, ((3, 4),)), ("FRAG-001", 5, ()), ("LAYOUT-003", None, ())]
    assert json.loads(json.dumps(out[0].as_dict()))["versions"] == [[3, 4]]
    assert "versions" not in out[1].as_dict()





# -- the row id spans (ROWID-003 on the fragment aggregates) ------------------------------------

_SPAN_STEPS = st.lists(st.tuples(st.booleans(), st.integers(0, 30), st.integers(0, 6),
                                 st.integers(0, 3)), max_size=40)


@given(_SPAN_STEPS)
@example([(True, 0, 5, 0), (True, 6, 2, 1), (True, 3, 0, 2), (False, 0, 5, 0)])
def test_row_id_spans_count_the_overlaps_of_every_pair(steps):
    """Kept in step through adds and removes, the spans say what comparing every pair says:
    whether two overlap, and which fragments' spans overlap another's."""
    spans, live = _Spans(), []
    for add, lo, width, fid in steps:
        span = (lo, lo + width, fid)
        if add:
            spans.add(span)
            live.append(span)
        elif span in live:
            spans.remove(span)
            live.remove(span)
    pairs = [(a, b) for i, a in enumerate(live) for b in live[i + 1:]
             if a[0] <= b[1] and b[0] <= a[1]]
    assert bool(spans.overlaps) == bool(pairs)
    assert spans.overlapping() == {f for a, b in pairs for f in (a[2], b[2])}
    assert spans.items == sorted(live)


@pytest.fixture
def stable_history(pylance_scenarios, tmp_path):
    """stable_row_ids (pylance 14.0.2): two appends, a delete, an update that keeps the
    updated rows' ids in a new fragment (so live id spans overlap), a compaction."""
    return copy_scenario(pylance_scenarios, "stable_row_ids", tmp_path / "ds")


def test_rowid_003_on_the_aggregates_reads_only_the_fragments_that_may_share_an_id(
        stable_history):
    """A duplicated live row id in one version of a history with overlapping spans (the
    update) is found with the aggregates as without them, in that version only; a history
    of appends reads no fragment list for it."""
    corrupt_manifest(stable_history,
                     lambda m: setattr(m.fragments[1], "inline_row_ids",
                                       _row_id_range(100, 150)), 4)
    base = validate(stable_history, versions="all")
    (finding,) = [f for f in base.violations if f.rule == "ROWID-003"]
    assert finding.location == {"ref": "main", "version": 4, "row_id": 100}
    for options in (local.Options(guards=False), local.Options(dedupe=False, guards=False)):
        _same(local.merge(local.plan(stable_history, versions="all", options=options), []),
              base)


def test_rowid_003_reads_no_fragment_list_on_appends(pylance, tmp_path):
    uri = str(tmp_path / "t")
    for i in range(12):
        pylance.write_dataset(pa.table({"a": pa.array([2 * i, 2 * i + 1], pa.int64())}), uri,
                              mode="create" if i == 0 else "append",
                              **({"enable_stable_row_ids": True} if i == 0 else {}))
    report = validate(uri, versions="all")
    assert report.conforms and report.stats["versions_checked"] == 12
    assert report.stats["fragment_lists_decoded"] == 1


def _row_id_range(start: int, end: int) -> bytes:
    from reference_impl.table import rowids as R

    return R.encode_row_id_sequence(list(range(start, end)))


def test_a_version_finding_on_many_versions_is_one_finding_naming_them(pylance, tmp_path):
    """Version-scope findings carry their manifest's path, which every version has of its
    own: the same finding on consecutive versions is still one, naming them as a range (an
    index file gone under an index listed by four versions)."""
    uri = str(tmp_path / "t")
    pylance.write_dataset(pa.table({"id": pa.array(range(100), pa.int64())}), uri)
    pylance.dataset(uri).create_scalar_index("id", "BTREE")
    for i in range(3):
        pylance.write_dataset(pa.table({"id": pa.array([100 + i], pa.int64())}), uri,
                              mode="append")
    (index,) = (tmp_path / "t" / "_indices").iterdir()
    (index / "page_data.lance").unlink()
    report = validate(uri, versions="all")
    (finding,) = [f for f in report.violations if f.rule == "INDEX-008"]
    assert finding.versions == ((2, 5),) and finding.location["version"] == 2
    assert finding.location["path"].startswith("_versions/")
    assert "v2-5" in report.render("text")


def test_grouping_keeps_apart_what_differs_beyond_the_version():
    from conformance.engine.history import group

    def f(version, path):
        return Violation(rule="X-001", severity="error", spec={}, message="m",
                         location={"ref": "main", "version": version, "path": path})

    merged = group([f(1, "_versions/1.manifest"), f(2, "_versions/2.manifest"),
                    f(3, "tree/dev/_versions/3.manifest")])
    assert [(g.versions, g.location["path"]) for g in merged] == [
        (((1, 3),), "_versions/1.manifest")]
    apart = group([f(1, "data/a.lance"), f(2, "data/b.lance")])
    assert sorted(g.location["path"] for g in apart) == ["data/a.lance", "data/b.lance"]
