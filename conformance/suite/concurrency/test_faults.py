"""Fault injection at every store call of the commit protocol (REFS-NAMESPACE-COMMIT.md 8.1,
spec 001 "Committing Datasets" and "External Manifest Store").

After each fault the dataset must open at the latest successful version -- one more than
before exactly when the commit point (the manifest's create-if-absent, or the external
store's row insert) was reached -- in our reader and in pylance 14.0.2, and nothing an
earlier successful commit wrote may be lost. A later writer must then commit normally.
"""

from __future__ import annotations

import threading

import pyarrow as pa
import pytest

from conformance.concurrency.faults import (
    COMMIT_STEPS,
    EXTERNAL_STEPS,
    Fault,
    FaultPlan,
    FaultyExternalStore,
    FaultyStore,
    WriterStopped,
    classify,
    commit_point_passed,
)
from reference_impl.dataset import open_dataset
from reference_impl.errors import StoreError
from reference_impl.io.uri import open_store
from reference_impl.write import write_dataset


def _rows(tag: str, n: int = 3) -> pa.Table:
    return pa.table({"tag": pa.array([tag] * n), "x": pa.array(range(n), pa.int64())})


def _tags(uri: str) -> dict[str, int]:
    t = open_dataset(uri).to_table(columns=["tag"])
    out: dict[str, int] = {}
    for v in t["tag"].to_pylist():
        out[v] = out.get(v, 0) + 1
    return out


def _faulted_append(uri: str, fault: Fault, external=None):
    plan = FaultPlan([fault])
    store = FaultyStore(open_store(uri), plan)
    kv = FaultyExternalStore(external, plan) if external is not None else None
    outcome = "ok"
    try:
        write_dataset(_rows("faulted"), store, mode="append", external_store=kv)
    except WriterStopped:
        outcome = "stopped"
    except StoreError:
        outcome = "failed"
    return plan, outcome


def test_classify_names_every_step():
    assert classify("put", "data/abc.lance") == "data_put"
    assert classify("put", "_deletions/1-2-3.arrow") == "deletion_put"
    assert classify("put", "_transactions/1-u.txn") == "txn_put"
    assert classify("delete", "_transactions/1-u.txn") == "txn_cleanup"
    assert classify("put_if_not_exists", "_versions/18446744073709551613.manifest") == "manifest_put"
    assert classify("put", "_versions/latest_version_hint.json") == "hint_put"
    assert classify("put", "_versions/18446744073709551613.manifest-1234") == "external_stage"
    assert classify("copy", "_versions/18446744073709551613.manifest-1234") == "external_copy"
    assert classify("delete", "_versions/18446744073709551613.manifest-1234") == "external_cleanup"
    assert classify("put", "_refs/tags/a.json") == "other"
    with pytest.raises(ValueError):
        Fault("nope", "fail")
    with pytest.raises(ValueError):
        Fault("txn_put", "explode")


def test_unfaulted_store_logs_the_protocol_in_order(tmp_path):
    uri = str(tmp_path / "ds")
    write_dataset(_rows("first"), uri, mode="create")
    plan, outcome = _faulted_append(uri, Fault("other", "delay", delay_s=0))
    assert outcome == "ok"
    steps = [s for s, _op, _k in plan.log]
    assert steps == ["data_put", "txn_put", "manifest_put", "hint_put"]
    assert len(plan.txn_puts) == 1
    assert commit_point_passed(plan.log, plan.fired)


@pytest.mark.parametrize("action", ["fail", "fail_after", "stop", "stop_after"])
@pytest.mark.parametrize("step", COMMIT_STEPS)
def test_fault_at_each_commit_step(tmp_path, step, action, pylance):
    uri = str(tmp_path / "ds")
    write_dataset(_rows("first"), uri, mode="create")
    plan, outcome = _faulted_append(uri, Fault(step, action))
    assert plan.fired, f"the fault at {step} never fired"
    if step == "hint_put" and action in ("fail", "fail_after"):
        assert outcome == "ok"  # the hint is best effort: a failing hint fails nothing
    else:
        assert outcome == ("failed" if action.startswith("fail") else "stopped")
    committed = commit_point_passed(plan.log, plan.fired)
    assert committed == (step == "hint_put" or (step == "manifest_put" and action.endswith("_after")))
    expected_version = 2 if committed else 1
    ours = open_dataset(uri)
    assert ours.version == expected_version
    expected = {"first": 3, **({"faulted": 3} if committed else {})}
    assert _tags(uri) == expected
    theirs = pylance.dataset(uri)
    assert theirs.version == expected_version
    assert theirs.count_rows() == sum(expected.values())
    # the dataset stays writable: the next writer lands right after it, and pylance reads it
    write_dataset(_rows("after"), uri, mode="append")
    assert open_dataset(uri).version == expected_version + 1
    assert pylance.dataset(uri).count_rows() == sum(expected.values()) + 3


@pytest.mark.parametrize("action", ["fail", "stop", "stop_after"])
@pytest.mark.parametrize("step", ["data_put", "txn_put", "manifest_put"])
def test_fault_on_memory_store(step, action):
    import uuid

    uri = f"memory://{uuid.uuid4().hex}/ds"
    write_dataset(_rows("first"), uri, mode="create")
    plan, outcome = _faulted_append(uri, Fault(step, action))
    committed = commit_point_passed(plan.log, plan.fired)
    assert open_dataset(uri).version == (2 if committed else 1)
    assert _tags(uri)["first"] == 3
    assert ("faulted" in _tags(uri)) == committed


def test_stop_before_manifest_leaves_an_orphan_txn_but_no_version(tmp_path):
    """A killed writer cannot clean up: its .txn stays (pylance's own refusals leave none),
    and readers ignore it."""
    uri = str(tmp_path / "ds")
    write_dataset(_rows("first"), uri, mode="create")
    _faulted_append(uri, Fault("manifest_put", "stop"))
    store = open_store(uri)
    txns = [i.key for i in store.list("_transactions/")]
    assert len(txns) == 2  # the create's and the stopped one's
    assert open_dataset(uri).version == 1


def test_delay_at_manifest_put_makes_the_writer_rebase(tmp_path):
    """A writer held at its commit point loses the race to another one and lands on top
    of it: both commits are in the history, nothing is lost. The hold is an event, not a
    sleep: the slow writer goes on only once the fast one has committed."""
    uri = str(tmp_path / "ds")
    write_dataset(_rows("first"), uri, mode="create")
    entered = threading.Event()
    fast_committed = threading.Event()

    def hold(step, _op, _key):
        if step == "manifest_put" and not entered.is_set():
            entered.set()
            assert fast_committed.wait(60), "the fast writer never committed"

    plan = FaultPlan([], hook=hold)
    slow = FaultyStore(open_store(uri), plan)
    done: dict = {}
    th = threading.Thread(target=lambda: done.setdefault(
        "r", write_dataset(_rows("slow"), slow, mode="append")))
    th.start()
    assert entered.wait(60)
    assert write_dataset(_rows("fast"), uri, mode="append").version == 2
    fast_committed.set()
    th.join(60)
    assert not th.is_alive()
    assert done["r"].version == 3
    assert _tags(uri) == {"first": 3, "slow": 3, "fast": 3}
    assert sum(1 for s, _o, _k in plan.log if s == "manifest_put") == 2


@pytest.mark.parametrize("action", ["fail", "stop", "stop_after"])
@pytest.mark.parametrize("step", EXTERNAL_STEPS)
def test_fault_with_external_manifest_store(tmp_path, step, action):
    """External store protocol: after the row insert the commit counts, and a reader that
    knows the external store repairs a commit stopped before its copy or repoint."""
    from reference_impl.table.commit import resolve_latest_with_external_store
    from reference_impl.table.external_store import SQLiteManifestStore

    uri = str(tmp_path / "ds")
    kv = SQLiteManifestStore(str(tmp_path / "kv.sqlite"))
    write_dataset(_rows("first"), uri, mode="create", external_store=kv)
    plan, outcome = _faulted_append(uri, Fault(step, action), external=kv)
    assert plan.fired
    committed = commit_point_passed(plan.log, plan.fired)
    assert committed == (EXTERNAL_STEPS.index(step) > EXTERNAL_STEPS.index("external_commit")
                         or (step == "external_commit" and action == "stop_after"))
    latest = resolve_latest_with_external_store(open_store(uri), kv)
    assert latest[0] == (2 if committed else 1)
    ds = open_dataset(uri)
    assert ds.version == latest[0]
    assert _tags(uri) == {"first": 3, **({"faulted": 3} if committed else {})}
    write_dataset(_rows("after"), uri, mode="append", external_store=kv)
    assert open_dataset(uri).version == latest[0] + 1


@pytest.mark.s3
@pytest.mark.parametrize("action", ["fail", "stop_after"])
@pytest.mark.parametrize("step", ["data_put", "txn_put", "manifest_put"])
def test_fault_on_s3(s3_bucket, step, action, pylance):
    """The same on S3 (moto): no hint is written there, and pylance, reading over S3, sees
    exactly the versions that reached their commit point."""
    uri = f"{s3_bucket.uri}/ds-{step}-{action}"
    opts = s3_bucket.storage_options
    write_dataset(_rows("first"), uri, mode="create", storage_options=opts)
    plan = FaultPlan([Fault(step, action)])
    store = FaultyStore(open_store(uri, opts), plan)
    with pytest.raises((StoreError, WriterStopped)):
        write_dataset(_rows("faulted"), store, mode="append")
    assert "hint_put" not in [s for s, _o, _k in plan.log]
    committed = commit_point_passed(plan.log, plan.fired)
    assert committed == (step == "manifest_put" and action == "stop_after")
    expected = 2 if committed else 1
    assert open_dataset(uri, storage_options=opts).version == expected
    theirs = pylance.dataset(uri, storage_options=opts)
    assert theirs.version == expected
    assert theirs.count_rows() == (6 if committed else 3)
    pylance.write_dataset(_rows("pylance-after"), uri, mode="append", storage_options=opts)
    assert open_dataset(uri, storage_options=opts).version == expected + 1


@pytest.mark.s3
@pytest.mark.parametrize("step,action", [
    ("external_stage", "stop_after"), ("external_commit", "stop_after"), ("external_copy", "stop"),
])
def test_external_store_fault_on_dynamodb(moto_server, step, action, pylance):
    """``s3+ddb://`` on moto (S3 + DynamoDB): a writer stopped after the row insert has
    committed; pylance's ``s3+ddb`` reader (which repairs a staged row) and ours agree."""
    import uuid

    from reference_impl.table.commit import resolve_latest_with_external_store
    from reference_impl.table.external_store import DynamoDBManifestStore

    table = moto_server.create_dynamodb_table(f"t{uuid.uuid4().hex[:10]}")
    bucket = moto_server.create_bucket(f"lc-ddb-{uuid.uuid4().hex[:12]}")
    opts = moto_server.storage_options()
    uri = f"s3+ddb://{bucket}/ds?ddbTableName={table}"
    write_dataset(_rows("first"), uri, mode="create", storage_options=opts)
    kv = DynamoDBManifestStore(table, endpoint_url=moto_server.endpoint,
                               aws_access_key_id=opts["aws_access_key_id"],
                               aws_secret_access_key=opts["aws_secret_access_key"])
    plan = FaultPlan([Fault(step, action)])
    store = FaultyStore(open_store(f"s3://{bucket}/ds", opts), plan)
    with pytest.raises(WriterStopped):
        write_dataset(_rows("faulted"), store, mode="append",
                      external_store=FaultyExternalStore(kv, plan))
    committed = commit_point_passed(plan.log, plan.fired)
    assert committed == (EXTERNAL_STEPS.index(step) > EXTERNAL_STEPS.index("external_commit")
                         or (step == "external_commit" and action == "stop_after"))
    expected = 2 if committed else 1
    theirs = pylance.dataset(uri, storage_options=opts)
    assert theirs.version == expected
    assert theirs.count_rows() == (6 if committed else 3)
    latest = resolve_latest_with_external_store(open_store(f"s3://{bucket}/ds", opts), kv)
    assert latest[0] == expected
    assert open_dataset(f"s3://{bucket}/ds", storage_options=opts).version == expected
