"""Concurrent writers as a hypothesis state machine, and mixed pylance/our writers.

Spec 001, "Committing Datasets" and "Conflict resolution"; the model and its invariants
are in :mod:`conformance.concurrency.simulation`. The default run takes a few short programs on the
local file system and the memory store; moto, SeaweedFS and the process variant are
behind ``-m slow``.
"""

from __future__ import annotations

import uuid

import pytest
from hypothesis import settings

from conformance.concurrency.simulation import Simulation, machine, process_runner
from conformance.concurrency.stress import run_stress

FEW = settings(max_examples=10, stateful_step_count=12, deadline=None)
MORE = settings(max_examples=15, stateful_step_count=20, deadline=None)


def _run(machine_class, profile) -> None:
    from hypothesis.stateful import run_state_machine_as_test

    run_state_machine_as_test(machine_class, settings=profile)


def test_state_machine_local(tmp_path):
    counter = iter(range(10**6))
    _run(machine(lambda: (str(tmp_path / f"ds{next(counter)}"), {}), writers=3), FEW)


def test_state_machine_memory():
    _run(machine(lambda: (f"memory://{uuid.uuid4().hex}/ds", {}), writers=3), FEW)


# -- scripted interleavings: each invariant's positive and negative side -------------------
def test_scripted_interleaving_follows_the_matrix(tmp_path):
    s = Simulation(str(tmp_path / "ds"), writers=3)
    assert s.step(0, "append", {"n": 3}).kind == "committed"            # v2
    assert s.step(1, "append", {"n": 2}).kind == "committed"            # rebased: v3
    assert s.step(2, "delete", {"lo": 0, "hi": 2}).kind == "committed"  # v4, fragment of v1
    again = s.step(0, "delete", {"lo": 1, "hi": 3})                     # same fragment
    assert again.kind == "rejected" and again.retryable
    s.step(1, "config", {"key": "sim.a", "value": "1"})
    clash = s.step(2, "config", {"key": "sim.a", "value": "2"})
    assert clash.kind == "rejected" and clash.retryable is False
    other_key = s.step(0, "config", {"key": "sim.b", "value": "3"})
    assert other_key.kind == "committed"
    s.refresh(0)
    s.step(0, "add_columns", {"name": "c1"})
    assert s.step(1, "append", {"n": 1}).kind == "rejected"  # Append after Merge: retry
    s.refresh(1)
    assert s.step(1, "append", {"n": 1}).kind == "committed"
    s.step(2, "overwrite", {"n": 2})
    assert s.step(0, "update", {"lo": 0, "hi": 99}).kind == "rejected"  # after Overwrite
    s.check_all()
    assert s.latest == max(s.models)


def test_model_catches_a_lying_writer(tmp_path):
    """The invariants are not vacuous: a runner that reports success for a commit that never
    happened, or a rejection for one that did, fails the checks."""
    from conformance.concurrency.simulation import Outcome, execute

    def lies(uri, opts, rv, op, params):
        out = execute(uri, opts, rv, op, params)
        if op == "config" and out.kind == "rejected":
            return Outcome("committed", version=out.version, txns=out.txns)
        return out

    s = Simulation(str(tmp_path / "ds"), writers=2, runner=lies)
    s.step(0, "config", {"key": "sim.a", "value": "1"})
    with pytest.raises(AssertionError, match="matrix"):
        s.step(1, "config", {"key": "sim.a", "value": "2"})


def test_model_catches_a_version_written_behind_its_back(tmp_path):
    from reference_impl.write import write_dataset

    s = Simulation(str(tmp_path / "ds"), writers=1)
    s.step(0, "append", {"n": 2})
    s.check_all()
    import pyarrow as pa
    write_dataset(pa.table({"uid": pa.array([999], pa.int64()), "val": pa.array([0], pa.int64())}),
                  str(tmp_path / "ds"), mode="append")
    with pytest.raises(AssertionError, match="disk has"):
        s.check_history()


# -- mixed writers: pylance and ours on one dataset -----------------------------------------
@pytest.mark.interop
def test_mixed_writers_local(tmp_path, pylance):
    r = run_stress(str(tmp_path / "ds"), writers=3, commits=4, include_pylance=True,
                   pylance_writers=3, seed=31)
    assert r.lost_commits == 0 and r.invariant_violations == [], r.to_dict()
    assert r.commits_succeeded == 24


# SeaweedFS, not moto: moto's create-if-absent is checked without a lock (ENVIRONMENT.md),
# so "nothing lost" on moto would hold only as long as the scheduler is kind.
@pytest.mark.s3
@pytest.mark.interop
@pytest.mark.parametrize("s3_bucket", ["seaweedfs"], indirect=True)
def test_mixed_writers_s3(s3_bucket, pylance):
    r = run_stress(f"{s3_bucket.uri}/ds", storage_options=s3_bucket.storage_options, writers=3,
                   commits=4, include_pylance=True, pylance_writers=3, seed=32)
    assert r.lost_commits == 0 and r.invariant_violations == [], r.to_dict()
    assert r.commits_succeeded == 24


@pytest.mark.slow
@pytest.mark.timeout(1800)
@pytest.mark.interop
@pytest.mark.parametrize("kind", ["local", "seaweedfs"])  # not moto: see test_mixed_writers_s3
def test_mixed_writers_processes(kind, tmp_path, request, pylance):
    if kind == "local":
        uri, opts = str(tmp_path / "ds"), {}
    else:
        from conformance.suite.servers import _new_bucket

        b = _new_bucket(request, kind)
        uri, opts = f"{b.uri}/ds", b.storage_options
    r = run_stress(uri, storage_options=opts, writers=4, commits=10, include_pylance=True,
                   pylance_writers=4, processes=True, seed=33)
    assert r.lost_commits == 0 and r.invariant_violations == [], r.to_dict()
    assert r.commits_succeeded == 80


# -- the long runs -------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.timeout(1800)
@pytest.mark.s3
@pytest.mark.parametrize("server", ["moto", "seaweedfs"])
def test_state_machine_s3(server, request):
    from conformance.suite.servers import _new_bucket

    b = _new_bucket(request, server)
    _run(machine(lambda: (f"{b.uri}/{uuid.uuid4().hex}", b.storage_options), writers=3), MORE)


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_state_machine_local_long(tmp_path):
    counter = iter(range(10**6))
    _run(machine(lambda: (str(tmp_path / f"ds{next(counter)}"), {}), writers=4), MORE)


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_state_machine_processes(tmp_path):
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    counter = iter(range(10**6))
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
        _run(machine(lambda: (str(tmp_path / f"ds{next(counter)}"), {}), writers=3,
                     runner=process_runner(pool)), FEW)


def test_a_broken_writer_is_found_and_shrunk_to_a_minimal_interleaving(tmp_path):
    """A writer that claims a stale delete committed without doing it: hypothesis finds the
    lie and shrinks the program to the two steps that matter (someone commits, then the
    stale writer deletes)."""
    from hypothesis.errors import Flaky

    from conformance.concurrency.simulation import Outcome, execute

    runs: list[list[str]] = []

    def lying_runner(uri, opts, rv, op, params):
        runs[-1].append(op)
        from reference_impl.io.uri import open_store
        from reference_impl.table.commit import latest_version_or_zero

        latest = latest_version_or_zero(open_store(uri, opts))
        if op == "delete" and rv < latest:
            ours = execute(uri, opts, latest, "config", {"key": "lie", "value": "1"})
            return Outcome("committed", version=ours.version, txns=ours.txns)
        return execute(uri, opts, rv, op, params)

    counter = iter(range(10**6))

    def location():
        runs.append([])
        return str(tmp_path / f"ds{next(counter)}"), {}

    # derandomize: the search must find and shrink the lie on every run, not on most runs
    profile = settings(max_examples=100, stateful_step_count=4, deadline=None, database=None,
                       report_multiple_bugs=False, derandomize=True)
    with pytest.raises((AssertionError, Flaky)):
        _run(machine(location, writers=2, runner=lying_runner, validate=False), profile)
    last = runs[-1]
    assert last[-1] == "delete"
    assert len(last) == 2, last
