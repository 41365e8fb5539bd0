"""Decoding pages on a few threads: a speed-up, not part of the format.

The pages of a column are independent of each other (spec: a page holds whole rows and its
own buffers), so they can be decoded in any order and put back in file order. The decoders
spend their time in numpy kernels (``take``, fancy assignment, ``cumsum``, ``astype``), which
release the GIL, so plain threads give real parallelism without copying pages between
processes.

The readable path is unchanged: :func:`map_ordered` returns exactly
``[fn(x) for x in items]`` (the first exception raised in item order propagates); only the
order of evaluation differs. ``LANCE_CONFORMANCE_DECODE_THREADS=1`` turns it off.

A call made from one of the pool's own threads runs serially, so nested use can never wait
on itself.
"""

from __future__ import annotations

import os
import threading
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


def threads() -> int:
    """How many decode threads to use: ``$LANCE_CONFORMANCE_DECODE_THREADS`` or the CPUs (<= 8)."""
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
    return max(1, min(cpus, 8))


def mark_worker_thread() -> None:
    """Declare the calling thread a worker: its own page decodes then run serially (use as a
    thread-pool initializer when the pool already spreads the work over the CPUs)."""
    _local.worker = True


def _get_pool(n: int) -> ThreadPoolExecutor:
    global _pool, _pool_pid
    with _lock:
        # a forked child (Spark python workers, multiprocessing) must not reuse the parent's pool
        if _pool is None or _pool_pid != os.getpid() or _pool._max_workers != n:
            if _pool is not None and _pool_pid == os.getpid():
                _pool.shutdown(wait=False)  # its running decodes finish; new work goes to the new pool
            _pool = ThreadPoolExecutor(max_workers=n, thread_name_prefix="lance-decode",
                                       initializer=mark_worker_thread)
            _pool_pid = os.getpid()
        return _pool


def map_ordered(fn: Callable[[T], R], items: Sequence[T]) -> list[R]:
    """``[fn(x) for x in items]``, evaluated on the decode threads when that can help."""
    n = threads()
    if n < 2 or len(items) < 2 or getattr(_local, "worker", False):
        return [fn(x) for x in items]
    futures = [_get_pool(n).submit(fn, x) for x in items]
    try:
        return [f.result() for f in futures]
    finally:
        for f in futures:
            f.cancel()


__all__ = ["ENV", "map_ordered", "mark_worker_thread", "threads"]
