"""The data pipeline on Spark: distributed validation and large-fixture generation.

One ``local[2]`` session serves the whole module (a cold start costs 5-16 s). The Spark
engine must give the local engine's report (JSON equal apart from ``elapsed_s``) on every
negative fixture and on pylance scenario datasets; ``fixtures generate-large`` on Spark must
write the deterministic rows pylance reads back and our validator passes; an unreachable
master or a dataset the executors cannot read ends in a clear error (exit 2), quickly. The
standalone-cluster test (a real master and worker from the installed pyspark) is ``slow``.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pytest

from conformance.engine import validate as local_validate
from conformance.fixtures import large as lf
from conformance.suite.parts import unavailable

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[3]
INVALID = ROOT / "fixtures" / "invalid"
SCENARIOS = ["version_legacy", "version_2_0", "delete_few", "stable_row_ids", "nested_types",
             "all_types", "compaction"]


def _same(a, b) -> None:
    da, db = a.as_dict(), b.as_dict()
    da.pop("elapsed_s")
    db.pop("elapsed_s")
    assert da == db


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "conformance", *args], capture_output=True,
                          text=True, timeout=timeout, cwd=str(ROOT))


@pytest.fixture(scope="module")
def spark():
    from conformance.engine.spark_session import SparkUnavailable, get_session, stop_session

    try:
        session = get_session("local[2]", app_name="lance-conformance-tests")
    except SparkUnavailable as exc:
        unavailable("pyspark", str(exc))
    yield session
    stop_session()


# -- without a session ---------------------------------------------------------------------

def test_rows_do_not_depend_on_fragmentation():
    whole = lf.expected_table(5, 1000)
    parts = [lf.rows(5, s, c) for _, s, c in lf.fragment_bounds(1000, 7)]
    assert pa.concat_tables(parts).equals(whole)
    assert not lf.expected_table(6, 1000).equals(whole)
    assert whole.column("id").to_pylist() == list(range(1000))
    values = whole.column("value").to_numpy()
    assert ((values >= 0) & (values < 1)).all()
    assert [c for _, _, c in lf.fragment_bounds(10, 3)] == [3, 3, 4]
    with pytest.raises(ValueError):
        lf.fragment_bounds(2, 3)


def test_malformed_master_is_refused():
    from conformance.engine.spark_session import SparkUnavailable, check_master

    check_master("local[2]")
    check_master("local[*]")
    with pytest.raises(SparkUnavailable, match="unsupported Spark master"):
        check_master("yarn")
    with pytest.raises(SparkUnavailable, match="unreachable"):
        check_master(f"spark://127.0.0.1:{_closed_port()}", connect_timeout=5)


def test_cli_unreachable_master_exits_2_quickly(tmp_path):
    lf.generate(str(tmp_path / "ds"), num_rows=100, fragments=2, seed=1)
    master = f"spark://127.0.0.1:{_closed_port()}"
    r = _cli("validate", "--engine", "spark", "--master", master, "--deep", str(tmp_path / "ds"))
    assert r.returncode == 2, r.stderr
    assert "unreachable" in r.stderr and master in r.stderr
    assert "Traceback" not in r.stderr
    g = _cli("fixtures", "generate-large", "--rows", "10", "--fragments", "1", "--engine",
             "spark", "--master", master, str(tmp_path / "other"))
    assert g.returncode == 2, g.stderr
    assert "unreachable" in g.stderr
    assert not (tmp_path / "other" / "_versions").exists()


# -- local[2] ------------------------------------------------------------------------------

def test_same_report_on_every_invalid_fixture(spark):
    from conformance.engine.spark import validate_many

    cases = sorted(p.name for p in INVALID.iterdir() if (p / "table").is_dir())
    if not cases:
        unavailable("fixtures/invalid", "no negative fixtures in this checkout")
    uris = [str(INVALID / c / "table") for c in cases]
    reports = validate_many(uris, spark=spark, versions="all", deep=True)
    for uri, report in zip(uris, reports, strict=True):
        local = local_validate(uri, versions="all", deep=True)
        _same(local, report)
    # whether each fixture breaks exactly its rule is test_invalid_fixtures' business; here
    # the distributed reports must be the local ones, and most of them are failures
    assert sum(not r.conforms for r in reports) > len(reports) // 2
    assert sum(bool(r.rules_violated(None)) for r in reports) == len(reports)


def test_same_report_on_pylance_scenarios(spark, pylance_scenarios):
    from conformance.engine.spark import validate

    for name in SCENARIOS:
        path = pylance_scenarios[name]
        local = local_validate(path, versions="all", deep=True)
        dist = validate(path, spark=spark, versions="all", deep=True)
        _same(local, dist)
        assert dist.versions_checked, name


def test_a_history_is_distributed_as_units(spark, pylance, tmp_path):
    """Spark runs one task per data file, not per version and data file: a damaged data file
    eight more appends carry is decoded once, and its finding names every version."""
    import shutil

    from conformance.engine.spark import validate

    uri = tmp_path / "t"
    shutil.copytree(INVALID / "ENC-001" / "table", uri)
    for i in range(8):
        pylance.write_dataset(pa.table({"a": pa.array([10 + i], pa.int64()),
                                        "s": pa.array([f"n{i}"])}), str(uri), mode="append")
    local = local_validate(str(uri), versions="all", deep=True)
    dist = validate(str(uri), spark=spark, versions="all", deep=True)
    _same(local, dist)
    (f,) = [f for f in dist.violations if f.rule == "ENC-001"]
    assert len(f.covers()) > 8 and f.versions
    stats = dist.stats
    assert stats["data_files_decoded"] == stats["data_files"] < stats["fragment_entries"]


def test_single_validate_matches_and_cli_json(spark, tmp_path):
    """``validate()`` with a given session matches; rules the data files break appear."""
    from conformance.engine.spark import validate

    uri = INVALID / "DATAFILE-003" / "table"
    if not uri.is_dir():
        unavailable("fixtures/invalid/DATAFILE-003", "fixture missing")
    local = local_validate(str(uri), versions="all", deep=True)
    dist = validate(str(uri), spark=spark, versions="all", deep=True, partitions=3)
    _same(local, dist)
    assert not dist.conforms


def test_generate_large_on_spark_reads_back_in_pylance(spark, pylance, tmp_path):
    from conformance.engine.spark import validate

    uri = str(tmp_path / "large")
    g = lf.generate(uri, num_rows=30_000, fragments=6, seed=11, engine="spark", spark=spark)
    assert g.version == 1
    ds = pylance.dataset(uri)
    assert len(ds.get_fragments()) == 6
    got = ds.to_table().sort_by("id")
    assert got.equals(lf.expected_table(11, 30_000))
    report = local_validate(uri, deep=True)
    assert report.conforms, report.render("text")
    _same(report, validate(uri, spark=spark, deep=True))
    # same seed, another split and engine: the same logical rows
    other = str(tmp_path / "local")
    lf.generate(other, num_rows=30_000, fragments=2, seed=11, engine="local")
    assert pylance.dataset(other).to_table().sort_by("id").equals(got)
    # append on Spark commits one Append transaction with fresh fragment ids
    lf.generate(uri, num_rows=1_000, fragments=2, seed=12, engine="spark", spark=spark,
                mode="append")
    ds = pylance.dataset(uri)
    assert ds.version == 2 and ds.count_rows() == 31_000
    assert sorted(f.fragment_id for f in ds.get_fragments()) == list(range(8))
    assert local_validate(uri, deep=True, versions="all").conforms


def test_executors_that_cannot_read_fail_the_job(spark):
    """A ``memory://`` store lives in the driver process: its executors see nothing."""
    from conformance.engine.spark import SparkEngineError, validate
    from reference_impl.write import write_dataset

    uri = f"memory://spark-test-{os.getpid()}/ds"
    write_dataset(pa.table({"a": list(range(50))}), uri, mode="create")
    assert local_validate(uri, deep=True).conforms
    with pytest.raises(SparkEngineError, match="cannot read"):
        validate(uri, spark=spark, deep=True)


def test_deadline_cancels_the_job_and_the_session_survives(spark, tmp_path):
    from conformance.engine import plan
    from conformance.engine.spark import run_items

    uri = str(tmp_path / "ds")
    lf.generate(uri, num_rows=4_000, fragments=4, seed=2)
    items = plan(uri, deep=True).items
    assert len(items) == 4
    results, finished = run_items(spark, items, deadline=time.monotonic())
    assert (results, finished) == ([], False)
    results, finished = run_items(spark, items, partitions=2)
    assert finished and len(results) == 4 and all(r == [] for r in results)


def test_cli_missing_dataset_exits_2(tmp_path):
    r = _cli("validate", "--engine", "spark", "--master", "local[1]",
             str(tmp_path / "nothing-here"))
    assert r.returncode == 2, r.stderr
    assert "no dataset" in r.stderr


# -- a real standalone cluster -------------------------------------------------------------

@pytest.mark.slow
def test_standalone_cluster_validates_like_local(tmp_path):
    from conformance.servers import ServerUnavailable
    from conformance.servers.spark_cluster import SparkStandaloneCluster

    uri = str(tmp_path / "ds")
    lf.generate(uri, num_rows=20_000, fragments=4, seed=3)
    fixture = str(INVALID / "DATAFILE-003" / "table")
    cluster = SparkStandaloneCluster(cores=2, memory="2g")
    try:
        cluster.start()
    except ServerUnavailable as exc:
        unavailable("spark standalone cluster", str(exc))
    try:
        pids = list(cluster.pids().values())
        assert len(pids) == 2
        for target, code in ((uri, 0), (fixture, 1)):
            r = _cli("validate", "--engine", "spark", "--master", cluster.master_url, "--deep",
                     "--all-versions", "--format", "json", target, timeout=240)
            assert r.returncode == code, r.stderr[-3000:]
            dist = json.loads(r.stdout)
            # the command line's local run: the same provenance (the writer named from the
            # table's manifest), so the whole report must be equal
            lr = _cli("validate", "--deep", "--all-versions", "--format", "json", target,
                      timeout=240)
            assert lr.returncode == code, lr.stderr[-3000:]
            local = json.loads(lr.stdout)
            dist.pop("elapsed_s")
            local.pop("elapsed_s")
            assert dist == local
    finally:
        cluster.stop()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(_running(p) for p in pids):
        time.sleep(0.2)
    assert not any(_running(p) for p in pids)


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False
