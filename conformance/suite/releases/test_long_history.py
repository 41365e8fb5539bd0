"""Long, mixed histories written by several releases, judged whole
(``conformance/releases/long_history.py``, ``tools/long_history.py``).

The ``slow`` test runs a small seeded campaign: three writers (a legacy-era pylance, the
newest pylance and lancedb) and an upgrade (0.20.0, then 14.0.2), each history grown in two
halves, and every path of the history
engine must give one report (readable split, units per version, no aggregates, the verdict
cache grown with the history, ``--deep``, Spark), with no false error finding and a sample
of versions read as the writer read them. The other tests check the campaign's machinery and
run by default.
"""

from __future__ import annotations

import dataclasses

import pytest

from conformance.engine.report import Report, Violation
from conformance.releases import long_history as lh
from conformance.releases.venvs import ReleaseUnavailable
from conformance.suite.parts import unavailable

SPEC = {"file": "004", "section": "DataFile", "clause": "c"}


def _finding(rule, version, versions=(), severity="error", ref="main"):
    return Violation(rule=rule, severity=severity, spec=SPEC, message="m",
                     location={"ref": ref, "version": version}, versions=versions)


def test_the_plan_is_seeded_and_names_each_history():
    storages = {"pylance==0.10.18": ["legacy", "2.0"], "pylance==14.0.2": ["2.1", "2.2"]}
    a = lh.plan(list(storages), seed=3, steps=50, storages=storages)
    assert a == lh.plan(list(storages), seed=3, steps=50, storages=storages)
    assert [s.storage for s in a] == ["legacy", "2.0", "2.1", "2.2"]
    assert len({s.seed for s in a}) == 4 and all(s.steps == 50 for s in a)
    assert [s.deep for s in a] == [True, False, False, True]
    # Spark judges one deep history, of the newest writer
    assert [s.spark for s in a] == [False, False, False, True]
    assert a[0].name.startswith("longhist-legacy") and a[0].name.endswith(f"-s{a[0].seed}")


def test_upgrades_name_both_writers():
    specs = lh.upgrades([("pylance==0.20.0", "pylance==14.0.2"),
                         ("pylance==1.0.4", "pylance==14.0.2")], seed=2, steps=40)
    assert [s.storage for s in specs] == ["legacy", "2.0", "legacy", "2.0", "2.1"]
    first = specs[0]
    assert first.writers == "pylance==0.20.0 then pylance==14.0.2"
    assert first.last.name == "pylance==14.0.2" and first.release.name == "pylance==0.20.0"
    assert first.name.endswith("-then-pylance-14.0.2") and first.name.startswith("longhist-")
    # a known breach of either writer is expected of the history
    spec = lh.HistorySpec("pylance==0.27.2", "legacy", 1, 10, then="pylance==14.0.2")
    report = Report(uri="t", findings=[_finding("DATAFILE-002", 2)])
    oracles = lh.Oracles(info={"versions": [1, 2]}, newest=None, refused=set(),
                         table_refused=False, branch_refused=set())
    assert lh.false_errors(report, spec, oracles) == ([], ["DATAFILE-002"])


def test_report_difference_names_what_only_one_report_holds():
    one = Report(uri="t", findings=[_finding("FRAG-010", 30, ((30, 34),), "warning")])
    other = Report(uri="t", findings=[_finding("FRAG-010", 31, ((31, 34),), "warning")])
    assert lh.report_difference(one, dataclasses.replace(one, elapsed_s=3.0)) == ""
    diff = lh.report_difference(one, other)
    assert "only in the first" in diff and "only in the second" in diff and "[30, 34]" in diff


def test_errors_on_versions_a_reader_refuses_are_demanded_not_false():
    spec = lh.HistorySpec("pylance==0.10.18", "2.0", 1, 10)
    report = Report(uri="t", findings=[
        _finding("DATAFILE-003", 2, ((2, 3),)),  # versions the newest release refuses
        _finding("FRAG-005", 4),  # a version both read
        _finding("FRAG-010", 4, severity="warning"),  # warnings are never false errors
        _finding("DATAFILE-003", 1, ref="branch:dev"),  # a branch version the writer refused
    ])
    oracles = lh.Oracles(info={"versions": [1, 2, 3, 4]}, newest=None, refused={2, 3},
                         table_refused=False, branch_refused={"dev:1"})
    false, seen = lh.false_errors(report, spec, oracles)
    assert [f.split(" ")[0] for f in false] == ["FRAG-005"] and seen == []


def test_a_table_no_release_opens_demands_every_error():
    """0.10.18's experimental 2.0 writer mixes legacy and 2.0 files; 0.20.0 (its upgrade)
    and 14.0.2 then open no version: every error finding is demanded."""
    spec = lh.HistorySpec("pylance==0.10.18", "2.0", 1, 10, then="pylance==0.20.0")
    report = Report(uri="t", findings=[_finding("DATAFILE-005", 2, ((2, 9),))])
    why = {"latest": "All data files must have the same version"}
    oracles = lh.Oracles(info={"versions": [], "unreadable_versions": why},
                         newest={"unreadable_versions": why}, refused=set(),
                         table_refused=True, branch_refused=set())
    assert oracles.nothing_read and lh.false_errors(report, spec, oracles) == ([], [])
    oracles.info["versions"] = [1, 2]  # a writer that reads it: its versions are judged
    assert not oracles.nothing_read


def test_known_breaches_of_the_writer_are_expected_findings():
    spec = lh.HistorySpec("pylance==0.27.2", "legacy", 1, 10)
    report = Report(uri="t", findings=[_finding("DATAFILE-002", 2)])
    oracles = lh.Oracles(info={"versions": [1, 2]}, newest=None, refused=set(),
                         table_refused=False, branch_refused=set())
    assert lh.false_errors(report, spec, oracles) == ([], ["DATAFILE-002"])


# -- the campaign (slow: three writers in their own virtualenvs) ------------------------------


@pytest.mark.slow
def test_a_small_campaign_finds_no_discrepancy(tmp_path):
    from conformance.engine.spark_session import SparkUnavailable, get_session

    storages = {"pylance==0.10.18": ["legacy"], "pylance==14.0.2": ["2.1", "2.2"],
                "lancedb==0.38.0": [None]}
    specs = lh.plan(list(storages), seed=7, steps=60, deep_every=2, spark=1,
                    storages=storages)
    # and a history begun by 0.20.0, grown to its end by 14.0.2
    specs += lh.upgrades([("pylance==0.20.0", "pylance==14.0.2")], seed=7, steps=60)[1:2]
    assert sum(s.spark for s in specs) == 1
    try:
        get_session("local[2]", app_name="lance-conformance-tests")
    except SparkUnavailable as exc:
        unavailable("pyspark", str(exc))
    try:
        verdicts = lh.campaign(specs, tmp_path, sample=12, progress=None)
    except ReleaseUnavailable as exc:
        unavailable("a release of the campaign", str(exc))
    for v in verdicts:
        if v.note.startswith("not judged") and "pip install" in v.note:
            unavailable(v.writer, v.note)
    bad = [lh.describe(v) for v in verdicts if not v.ok]
    assert not bad, "\n".join(bad)
    assert all(v.versions >= 30 for v in verdicts), [(v.history, v.versions) for v in verdicts]
    # the cached run served the first half and checked the rest
    assert all(0 < v.stats["versions_from_cache"] < v.versions for v in verdicts)
    done = {op for v in verdicts for op, c in v.steps.items() if c.get("done")}
    assert {"append", "delete", "update", "merge_insert", "compact", "restore", "tag_create",
            "add_column", "drop_column", "scalar_index"} <= done, done
    assert "spark" not in {d.kind for v in verdicts for d in v.discrepancies}
    assert any("validate_spark" in v.seconds for v in verdicts)
