"""Page decoding on threads (``reference_impl.file.parallel``) changes speed, never results."""

from __future__ import annotations

import threading

import numpy as np
import pyarrow as pa
import pytest

from reference_impl.errors import FormatError
from reference_impl.file import parallel
from reference_impl.file.reader import LanceFileReader
from reference_impl.file.writer import LanceFileWriter
from reference_impl.io.memory import MemoryStore


def test_map_ordered_keeps_item_order_and_uses_threads(monkeypatch):
    monkeypatch.setenv(parallel.ENV, "2")
    seen = set()
    a_thread_ran = threading.Event()

    def work(x):
        name = threading.current_thread().name
        seen.add(name)
        if name.startswith("lance-decode"):
            a_thread_ran.set()
        elif x == 0:
            # the caller takes item 0 first: hold it until a decode thread has taken another
            # item, so that a loaded machine cannot let the caller claim every item alone
            assert a_thread_ran.wait(timeout=120), "no decode thread ever ran an item"
        return x * x

    assert parallel.map_ordered(work, list(range(50))) == [x * x for x in range(50)]
    assert any(name.startswith("lance-decode") for name in seen)


def test_map_ordered_raises_the_first_error_in_item_order(monkeypatch):
    monkeypatch.setenv(parallel.ENV, "2")

    def work(x):
        if x in (3, 7):
            raise FormatError(f"bad page {x}", rule="FILE-013")
        return x

    with pytest.raises(FormatError, match="bad page 3"):
        parallel.map_ordered(work, list(range(10)))


def test_one_thread_setting_runs_in_the_caller(monkeypatch):
    monkeypatch.setenv(parallel.ENV, "1")
    names = parallel.map_ordered(lambda _: threading.current_thread().name, [0, 1, 2])
    assert names == [threading.current_thread().name] * 3
    monkeypatch.setenv(parallel.ENV, "not-a-number")
    assert parallel.threads() == 1


def _occupy_pool(monkeypatch):
    """Block every thread of the decode pool until the returned event is set."""
    monkeypatch.setenv(parallel.ENV, "2")
    release = threading.Event()
    started = threading.Barrier(3)

    def hold():
        started.wait()
        release.wait()

    pool = parallel._get_pool(2)
    held = [pool.submit(hold) for _ in range(2)]
    started.wait()  # both pool threads are now inside hold()
    return release, held


def test_caller_runs_what_no_thread_started(monkeypatch):
    """With every pool thread busy, a call (nested or not) still completes: the caller runs
    the items itself, so no call ever waits on a queued task."""
    release, held = _occupy_pool(monkeypatch)
    try:
        me = threading.current_thread().name

        def outer(x):
            inner = parallel.map_ordered(lambda y: (y, threading.current_thread().name), [0, 1, 2])
            return x, inner

        got = parallel.map_ordered(outer, [1, 2, 3])
        assert [x for x, _ in got] == [1, 2, 3]
        assert all(inner == [(0, me), (1, me), (2, me)] for _, inner in got)
    finally:
        release.set()
        for f in held:
            f.result()


def test_an_error_ends_the_call_before_later_items_start(monkeypatch):
    release, held = _occupy_pool(monkeypatch)
    ran = []
    try:
        def work(x):
            ran.append(x)
            if x == 2:
                raise FormatError("bad page 2", rule="FILE-013")
            return x

        with pytest.raises(FormatError, match="bad page 2"):
            parallel.map_ordered(work, list(range(6)))
    finally:
        release.set()
        for f in held:
            f.result()
    parallel._get_pool(2).submit(lambda: None).result()  # queued items have been looked at
    assert ran == [0, 1, 2]



def test_an_error_reaches_the_caller_after_the_items_threads_were_running(monkeypatch):
    """Item 0 (run by the caller) fails while a decode thread runs item 1: the error is raised
    only once item 1 has finished, so no work of the failed call goes on behind the caller
    (a caller that then tears down what it set up, such as ``tracemalloc``, races nothing)."""
    monkeypatch.setenv(parallel.ENV, "2")
    one_started, go, never = threading.Event(), threading.Event(), threading.Event()
    finished = []

    def work(x):
        if x == 0:
            assert one_started.wait(timeout=120), "no decode thread took item 1"
            go.set()
            raise FormatError("bad page 0", rule="FILE-013")
        one_started.set()
        go.wait(timeout=120)
        never.wait(timeout=0.3)  # still running when item 0 raises
        finished.append(x)
        return x

    with pytest.raises(FormatError, match="bad page 0"):
        parallel.map_ordered(work, [0, 1])
    assert finished == [1]

def test_nested_calls_keep_order_on_threads(monkeypatch):
    monkeypatch.setenv(parallel.ENV, "2")

    def outer(x):
        return sum(parallel.map_ordered(lambda y: y * x, list(range(20))))

    assert parallel.map_ordered(outer, list(range(30))) == [190 * x for x in range(30)]


def test_saturated_inside_a_map_of_at_least_twice_the_threads(monkeypatch):
    """Items of a map of >= 2 x threads items (and every map nested in one) are saturated,
    on whichever thread runs them; items of a smaller map are not; outside a map, never."""
    monkeypatch.setenv(parallel.ENV, "2")
    assert not parallel.saturated()

    def inner(_):
        return parallel.saturated()

    def outer(size):
        return parallel.saturated(), parallel.map_ordered(inner, [0, 1])

    small = parallel.map_ordered(outer, [3] * 3)  # 3 items < 4: not saturated, nor below it
    assert small == [(False, [False, False])] * 3
    large = parallel.map_ordered(outer, [3] * 4)  # 4 items: saturated, and below it too
    assert large == [(True, [True, True])] * 4
    assert parallel.map_ordered(inner, list(range(3))) == [False] * 3
    assert not parallel.saturated()  # restored after the call
    monkeypatch.setenv(parallel.ENV, "1")
    assert parallel.saturated()  # one decode thread: every map runs serially


def test_a_worker_of_another_pool_runs_serially(monkeypatch):
    monkeypatch.setenv(parallel.ENV, "2")
    names = []

    def body():
        parallel.mark_worker_thread()
        names.extend(parallel.map_ordered(lambda _: threading.current_thread().name, [0, 1, 2]))

    t = threading.Thread(target=body, name="engine-item")
    t.start()
    t.join()
    assert names == ["engine-item"] * 3


def test_a_worker_of_another_pool_is_saturated(monkeypatch):
    """Its maps run serially, so a decoder there must not cut its work into pieces."""
    monkeypatch.setenv(parallel.ENV, "2")
    seen = []

    def body():
        seen.append(parallel.saturated())
        parallel.mark_worker_thread()
        seen.append(parallel.saturated())

    t = threading.Thread(target=body)
    t.start()
    t.join()
    assert seen == [False, True]
    assert not parallel.saturated()  # the calling thread is no worker


@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_threaded_and_serial_reads_are_equal(monkeypatch, version):
    rng = np.random.default_rng(5)
    n = 30_000
    table = pa.table({
        "i": pa.array(rng.integers(0, 1000, n)),
        "s": pa.array([None if k % 7 == 0 else "v" * int(k % 13) for k in range(n)]),
        "l": pa.array([[int(k), None] if k % 3 else None for k in range(n)], pa.list_(pa.int32())),
    })
    store = MemoryStore()
    writer = LanceFileWriter(store, "t.lance", table.schema, version=version, max_rows_per_page=1_000)
    writer.write_batch(table)
    writer.finish()
    reader = LanceFileReader(store, "t.lance")
    assert max(len(c.pages) for c in reader.container.columns) > 4
    monkeypatch.setenv(parallel.ENV, "1")
    serial = LanceFileReader(store, "t.lance").read_all()
    monkeypatch.setenv(parallel.ENV, "2")
    threaded = LanceFileReader(store, "t.lance").read_all()
    assert serial.equals(table) and threaded.equals(serial)
