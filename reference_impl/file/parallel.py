"""Decoding pages on a few threads: a speed-up, not part of the format.

The pages of a column are independent of each other (spec: a page holds whole rows and its
own buffers), so they can be decoded in any order and put back in file order. The decoders
spend their time in numpy kernels (``take``, fancy assignment, ``cumsum``, ``astype``), which
release the GIL, so plain threads give real parallelism without copying pages between
processes.

The readable path is unchanged: :func:`map_ordered` returns exactly
``[fn(x) for x in items]`` (the first exception raised in item order propagates, once every
item a thread had started has finished); only the order of evaluation differs. ``LANCE_CONFORMANCE_DECODE_THREADS=1`` turns it off.

Nested use (fragments, then the fields of a file, then the pages of a field) shares one pool
and can never wait on itself: every item is queued on the pool, and the calling thread then
claims and runs, in item order, each item no thread has started yet ("caller runs"). It
only ever waits for items another thread is already running, so no call waits on a queued
task, whatever the nesting depth. A thread declared a worker of *another* pool
(:func:`mark_worker_thread`: the validation engine's item threads, Spark tasks) runs its
items serially, since its own pool already spreads the work over the CPUs.

A decoder may cut one large piece of work into parts only to keep idle threads busy (FSST
pages, :mod:`reference_impl.file.encodings.v2_1.fsst`); joining the parts costs a copy.
:func:`saturated` tells it that the item it runs for belongs to (or is nested in) a map of at
least twice as many items as threads, such as the ten fragments of a 10M-row dataset on two
cores: the threads are kept busy already, and the cut would only add the copy.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")

ENV = "LANCE_CONFORMANCE_DECODE_THREADS"

_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None
_pool_pid: int | None = None
_local = threading.local()


def cgroup_cpus(path: str = "/sys/fs/cgroup/cpu.max") -> float | None:
    """The CPUs a cgroup v2 quota grants this process (``quota / period``), or ``None``
    when there is no quota (``max``) or no such file (not Linux, cgroup v1)."""
    try:
        with open(path) as f:
            quota, period = f.read().split()[:2]
        if quota == "max":
            return None
        return max(int(quota) / int(period), 0.01)
    except (OSError, ValueError):
        return None


#: how long a read of the cgroup quota is reused (``threads`` is asked once a call of
#: :func:`map_ordered`, thousands of times in a large write; a quota rarely changes)
QUOTA_TTL = 1.0
_quota_seen: tuple = (None, 0.0, None)  # (the function read, when, its value)


def _cgroup_quota() -> float | None:
    global _quota_seen
    fn, when, value = _quota_seen
    now = time.monotonic()
    if fn is not cgroup_cpus or now - when > QUOTA_TTL:
        value = cgroup_cpus()
        _quota_seen = (cgroup_cpus, now, value)
    return value


def threads() -> int:
    """How many decode threads to use: ``$LANCE_CONFORMANCE_DECODE_THREADS``, else the CPUs
    this process may run on (its affinity mask, cut to its cgroup's CPU quota where one is
    set), at most 8.

    The load average is deliberately not subtracted: it counts this process's own threads
    and lags by a minute, and the scheduler shares a busy core per runnable thread, so
    giving up threads when other jobs run would only cede CPU to them. What keeps a busy
    machine from being oversubscribed is that this pool is the only one: the compiled
    kernels (:mod:`reference_impl.file.kernels`) are single-threaded (numba's threading
    layer is never started) and the Arrow calls made while decoding (``take``, casts,
    array construction) run on the calling thread, not on Arrow's CPU pool."""
    raw = os.environ.get(ENV, "")
    if raw.strip():
        try:
            return max(1, int(raw))
        except ValueError:
            return 1
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    quota = _cgroup_quota()
    if quota is not None:
        cpus = min(cpus, max(1, int(quota + 0.5)))
    return max(1, min(cpus, 8))


def mark_worker_thread() -> None:
    """Declare the calling thread a worker of another pool: its own page decodes then run
    serially (use as a thread-pool initializer when that pool already spreads the work over
    the CPUs)."""
    _local.worker = True


def _get_pool(n: int) -> ThreadPoolExecutor:
    global _pool, _pool_pid
    with _lock:
        # a forked child (Spark python workers, multiprocessing) must not reuse the parent's pool
        if _pool is None or _pool_pid != os.getpid() or _pool._max_workers != n:
            if _pool is not None and _pool_pid == os.getpid():
                _pool.shutdown(wait=False)  # its running decodes finish; new work goes to the new pool
            _pool = ThreadPoolExecutor(max_workers=n, thread_name_prefix="lance-decode")
            _pool_pid = os.getpid()
        return _pool


class _Task:
    """One item of a :func:`map_ordered` call: run at most once, by whichever thread claims
    it first (a pool thread or the caller); ``skipped`` when the call ended before it ran."""

    __slots__ = ("fn", "item", "claimed", "skipped", "done", "value", "error", "lock",
                 "saturated")

    def __init__(self, fn, item, saturated: bool = False) -> None:
        self.fn, self.item = fn, item
        self.saturated = saturated
        self.claimed = self.skipped = False
        self.done = threading.Event()
        self.value = self.error = None
        self.lock = threading.Lock()

    def claim(self) -> bool:
        with self.lock:
            if self.claimed:
                return False
            self.claimed = True
            return True

    def skip(self) -> None:
        if self.claim():
            self.skipped = True

    def run_if_unclaimed(self) -> None:
        if not self.claim():
            return
        before = getattr(_local, "saturated", False)
        _local.saturated = self.saturated
        try:
            self.value = self.fn(self.item)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller, in item order
            self.error = exc
        finally:
            _local.saturated = before
            self.done.set()


def saturated() -> bool:
    """Whether splitting the calling item further gains nothing: there is one decode thread,
    the item runs inside a map of at least twice as many items as there are decode threads
    (see the module's docstring), or on a worker of another pool (:func:`mark_worker_thread`);
    in the first and last case every map runs serially."""
    return bool(getattr(_local, "saturated", False) or getattr(_local, "worker", False)
                or threads() < 2)


def map_ordered(fn: Callable[[T], R], items: Sequence[T]) -> list[R]:
    """``[fn(x) for x in items]``, evaluated on the decode threads when that can help."""
    n = threads()
    if n < 2 or len(items) < 2 or getattr(_local, "worker", False):
        return [fn(x) for x in items]
    busy = saturated() or len(items) >= 2 * n
    tasks = [_Task(fn, x, busy) for x in items]
    pool = _get_pool(n)
    for t in tasks[1:]:  # the caller starts on the first item at once
        pool.submit(t.run_if_unclaimed)
    for i, t in enumerate(tasks):
        t.run_if_unclaimed()  # the caller runs what no thread has started yet
        if t.done.is_set() and t.error is not None:
            for rest in tasks[i + 1:]:
                rest.skip()  # an error ends the call: items nobody started never run
            break
    out = []
    for t in tasks:
        if t.skipped:
            break  # only after an error, which was raised below in item order already
        t.done.wait()  # claimed by a thread that is running it: it finishes
        if t.error is not None:
            _settle(tasks)
            raise t.error
        out.append(t.value)
    return out


def _settle(tasks: list[_Task]) -> None:
    """After an error: the items nobody started never run, and those a thread is running
    finish before the error reaches the caller, so that no work of a call that raised goes on
    behind the caller's back (holding its memory, allocating while the caller tears down
    what it set up around the call)."""
    for t in tasks:
        t.skip()
        if not t.skipped:
            t.done.wait()


__all__ = ["ENV", "cgroup_cpus", "map_ordered", "mark_worker_thread", "saturated", "threads"]
