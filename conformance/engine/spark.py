"""The Spark validation engine: the driver plans, Spark tasks deep-check the data files.

The work is the local engine's (:mod:`.local`), split across machines:

* the driver runs :func:`.local.plan`, the planner the local engine runs: it streams the
  manifests and runs every table-, version- and fragment-scope rule (each fragment once per
  unit), producing the driver's findings and one :class:`~.local.DataFileItem` per distinct
  data file of the history (only with ``deep``): Spark distributes units, not versions;
* the items are spread over ``partitions`` Spark tasks
  (``sc.parallelize(items, n).mapPartitions(...)``); each task first checks that it can
  read the manifests its items name, then runs :func:`.local.run_data_file_item` on each
  (decode every page, deletion files, row ids, statistics) and returns the findings and
  the requests the checks made (counted as the local engine counts its own);
* the driver gathers them and :func:`.local.merge` builds the report, so the JSON is the
  local engine's apart from ``elapsed_s`` (each data file's findings name every version
  that carries it); with ``cache`` the driver serves and keeps verdicts as locally.

Failure modes, all raised as :class:`SparkEngineError` (the CLI's exit 2), never a stuck
job: the master is unreachable or grants no executor within ``connect_timeout`` seconds;
an executor cannot read the dataset (another machine's local path, a ``memory://`` store
of the driver process, missing credentials); a task dies. ``timeout`` bounds the whole
validation like the local engine does: the Spark job is cancelled and the report carries
``ENGINE-002``.
"""

from __future__ import annotations

import dataclasses
import os
import threading
import time
from collections.abc import Iterable, Iterator
from urllib.parse import urlparse

from conformance.engine.report import Report, Violation
from reference_impl.errors import LanceError

from .counting import Counts
from .local import (
    DataFileItem,
    DatasetNotFound,
    _engine_violation,
    item_store,
    keep,
    merge,
    plan,
    run_data_file_item,
)

EXECUTOR_UNREADABLE = "LANCE-CONFORMANCE-EXECUTOR-UNREADABLE"


class SparkEngineError(LanceError):
    """Spark could not run the data-file checks: master, executors or tasks failed."""


class ExecutorCannotRead(RuntimeError):
    """Raised inside a Spark task whose executor cannot read the dataset."""


def _absolute(uri: str) -> str:
    """A plain local path made absolute, so executors with another working directory
    find it; URIs with a scheme are returned as they are."""
    parsed = urlparse(uri)
    if parsed.scheme in ("", "file") or (len(parsed.scheme) == 1 and os.name == "nt"):
        path = parsed.path if parsed.scheme == "file" else uri
        return os.path.abspath(path)
    return uri


def check_items(items: Iterable[DataFileItem]) -> Iterator[tuple[list[Violation], dict]]:
    """A Spark task's body: prove the dataset is readable here, then check each item;
    ``(its findings, the requests its checks made)`` per item (:meth:`.counting.Counts.take`:
    the driver adds them to the run's counts, as the local engine counts its own).

    ``run_data_file_item`` treats a missing manifest as "reported by the metadata rules"
    and returns nothing; on an executor that would silently skip every deep check, so a
    manifest the driver read but this executor cannot is an error of the whole job."""
    from reference_impl.file import parallel

    # Spark already runs one task per core: decode this task's pages on its own thread
    parallel.mark_worker_thread()
    counts = Counts()  # one per task: its items share one counted root store
    seen: set[tuple] = set()
    for item in items:
        where = (item.uri, item.storage_options, item.branch, item.manifest_key)
        if where not in seen:
            seen.add(where)
            try:
                store = item_store(item)
                readable = store.exists(item.manifest_key)
            except Exception as exc:  # noqa: BLE001 - reported to the driver as one reason
                raise ExecutorCannotRead(
                    f"{EXECUTOR_UNREADABLE}: executor on {os.uname().nodename} (pid "
                    f"{os.getpid()}) cannot open {item.uri}: {type(exc).__name__}: {exc}"
                ) from None
            if not readable:
                raise ExecutorCannotRead(
                    f"{EXECUTOR_UNREADABLE}: executor on {os.uname().nodename} (pid "
                    f"{os.getpid()}) cannot read {item.uri}/{item.manifest_key}")
        found = run_data_file_item(item, counts)
        yield found, counts.take()


def _short_reason(exc: BaseException) -> str:
    """The useful line of a Py4J/Spark exception (they carry whole JVM stack traces)."""
    text = str(exc)
    for line in text.splitlines():
        if EXECUTOR_UNREADABLE in line:
            return line.split(EXECUTOR_UNREADABLE + ": ", 1)[-1].strip()
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith(("at ", "Traceback", "File ", "\t")):
            return line[:500]
    return type(exc).__name__


def run_items(spark, items: list[DataFileItem], *, partitions: int | None = None,
              deadline: float | None = None,
              counts: list | None = None) -> tuple[list[list[Violation]], bool]:
    """Run the items as Spark tasks; ``(findings per item, finished)``.

    ``finished`` is False when ``deadline`` passed and the job was cancelled. ``counts``,
    when given, receives the requests of each item's checks, in item order."""
    if not items:
        return [], True
    sc = spark.sparkContext
    n = partitions or min(len(items), max(1, sc.defaultParallelism) * 2)
    n = max(1, min(int(n), len(items)))
    group = f"lance-conformance-validate-{os.getpid()}-{time.monotonic_ns()}"
    box: dict = {}

    def job():
        try:
            sc.setJobGroup(group, "lance-conformance deep checks", interruptOnCancel=True)
            box["result"] = sc.parallelize(items, n).mapPartitions(check_items).collect()
        except BaseException as exc:  # noqa: BLE001 - handed to the caller below
            box["error"] = exc

    worker = threading.Thread(target=job, name="lance-conformance-spark-job", daemon=True)
    worker.start()
    wait = None if deadline is None else max(deadline - time.monotonic(), 0.0)
    worker.join(wait)
    if worker.is_alive():
        sc.cancelJobGroup(group)
        worker.join(30.0)
        return [], False
    if "error" in box:
        raise SparkEngineError(f"Spark job failed: {_short_reason(box['error'])}") from None
    if len(box["result"]) != len(items):
        raise SparkEngineError(f"Spark returned results for {len(box['result'])} of "
                               f"{len(items)} data files")
    if counts is not None:
        counts.extend(c for _found, c in box["result"])
    return [found for found, _c in box["result"]], True


def validate(uri: str, *, master: str | None = None, spark=None, versions="latest",
             deep: bool = False, rules=None, skip=None, storage_options: dict | None = None,
             progress=None, timeout: float | None = None, partitions: int | None = None,
             connect_timeout: float | None = None, refs=None, cache: str | None = None) -> Report:
    """Validate the dataset at ``uri`` with the deep checks on Spark; a :class:`Report`
    equal to the local engine's apart from ``elapsed_s``.

    ``spark``: an existing SparkSession (else one on ``master`` is started, ``local[*]``
    by default, once the driver has planned data-file work; a ``spark://`` master is
    probed before anything is read). ``refs``: as for the local engine (every branch and
    tag by default; branch data files are Spark tasks like main's). Raises :class:`SparkEngineError` when Spark cannot run the checks and
    :class:`~.local.DatasetNotFound` when the driver finds no dataset."""
    from conformance.engine.spark_session import (
        DEFAULT_CONNECT_TIMEOUT,
        SparkUnavailable,
        check_master,
        get_session,
    )

    started = time.monotonic()
    deadline = None if timeout is None else started + float(timeout)
    wait = connect_timeout or DEFAULT_CONNECT_TIMEOUT
    if spark is None:
        # a master that does not answer fails before any manifest is read
        try:
            check_master(master or "local[*]", wait)
        except SparkUnavailable as exc:
            raise SparkEngineError(str(exc)) from None
    p = plan(uri, versions=versions, deep=deep, rules=rules, skip=skip,
             storage_options=storage_options, deadline=deadline, progress=progress, refs=refs,
             cache=cache)
    p.started = started
    target = _absolute(uri)
    items = [dataclasses.replace(i, uri=target) for i in p.items]
    if spark is None and items:
        # the session starts only when there is data-file work to hand out
        try:
            spark = get_session(master, connect_timeout=wait)
        except SparkUnavailable as exc:
            raise SparkEngineError(str(exc)) from None
    if progress and items:
        progress("data files", 0, len(items))
    taken: list = []
    results, finished = run_items(spark, items, partitions=partitions, deadline=deadline,
                                  counts=taken)
    for c in taken:
        p.counts.add(c)
    if not finished:
        results = [[_engine_violation(
            "ENGINE-002", f"time limit reached; {len(items)} data files not checked",
            {"ref": "all"})]]
    if progress and items:
        progress("data files", len(items), len(items))
    report = merge(p, results)
    if finished:
        keep(p, results)
    return report


def validate_many(uris: Iterable[str], *, spark, versions="latest", deep: bool = False,
                  rules=None, skip=None, storage_options: dict | None = None,
                  partitions: int | None = None, refs=None) -> list[Report]:
    """Validate several datasets with one Spark job for all their data files; one report
    per URI, in order, each equal to what :func:`validate` gives for it alone."""
    plans, items, owner = [], [], []
    for uri in uris:
        started = time.monotonic()
        p = plan(uri, versions=versions, deep=deep, rules=rules, skip=skip,
                 storage_options=storage_options, refs=refs)
        p.started = started
        target = _absolute(uri)
        for i in p.items:
            items.append(dataclasses.replace(i, uri=target))
            owner.append(len(plans))
        plans.append(p)
    taken: list = []
    results, _ = run_items(spark, items, partitions=partitions, counts=taken)
    per_plan: list[list[list[Violation]]] = [[] for _ in plans]
    for k, found, c in zip(owner, results, taken, strict=True):
        per_plan[k].append(found)
        plans[k].counts.add(c)
    return [merge(p, found) for p, found in zip(plans, per_plan, strict=True)]


__all__ = ["DatasetNotFound", "ExecutorCannotRead", "SparkEngineError", "check_items",
           "run_items", "validate", "validate_many"]
