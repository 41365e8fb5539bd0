"""Fault injection at each store call of the commit protocol.

A commit (spec 001, "Committing Datasets"; REFS-NAMESPACE-COMMIT.md 8.1) is a fixed
sequence of store calls, and a writer can die, or the store can fail, between any two:

==================  ==================================================================
step                store call
==================  ==================================================================
``data_put``        ``put("data/{name}.lance")``: a data file
``deletion_put``    ``put("_deletions/...")``: a deletion file
``txn_put``         ``put("_transactions/{read_version}-{uuid}.txn")``
``manifest_put``    ``put_if_not_exists("_versions/{N}.manifest")``: the commit point
``hint_put``        ``put("_versions/latest_version_hint.json")`` (local stores only)
``txn_cleanup``     ``delete("_transactions/...")`` after a refused commit
``external_stage``  ``put("_versions/{final}-{uuid}")``: the staged manifest
``external_commit`` ``put_if_not_exists`` of the KV row: the external store's commit point
``external_copy``   ``copy(staging, final)``
``external_repoint``  ``put`` of the KV row onto the final key
``external_cleanup``  ``delete(staging)``
``other``           anything else (tags, branch files, reads are never faulted)
==================  ==================================================================

:class:`FaultyStore` wraps any :class:`~reference_impl.io.base.ObjectStore` (and
:class:`FaultyExternalStore` an external manifest store) and applies one or more
:class:`Fault` s: on the ``nth`` call of a step it

``fail``
    raises :class:`~reference_impl.errors.StoreError` instead of doing the call (a store
    that answers 500);
``fail_after``
    does the call, then raises ``StoreError`` (the write landed, the answer was lost);
``delay``
    sleeps ``delay_s`` before the call (a slow store, to widen race windows);
``stop``
    raises :class:`WriterStopped` instead of doing the call (the writer process died);
``stop_after``
    does the call, then raises ``WriterStopped``.

``WriterStopped`` derives from ``BaseException``, so no ``except Exception`` in the writer
(the best-effort hint write, for one) can swallow it: like a killed process, the writer
does nothing more. Every call, faulted or not, is appended to :attr:`FaultyStore.log`
as ``(step, op, key)``; :attr:`FaultyStore.txn_puts` keeps the bytes of each ``.txn``
written, so a caller can recover the transaction a refused commit tried.

A :class:`FaultPlan` may also carry a ``hook``: a callable run as ``hook(step, op, key)``
before every write call (before any fault), outside the plan's lock, and an
``after_hook`` run the same way once the call has returned or raised. The stress driver
uses them to hold each writer at a barrier just before its commit point (so that racing
writers are forced to publish the same version instead of relying on the scheduler) and
just after it (so that nobody reads the version back while others still write it).

:func:`commit_point_passed` says, from the log, whether a faulted commit got as far as
its commit point -- which decides whether the dataset must now show one version more.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from reference_impl.errors import StoreError
from reference_impl.io.base import DEFAULT_MAX_READ, ObjectInfo, ObjectStore

STEPS = (
    "data_put", "deletion_put", "txn_put", "manifest_put", "hint_put", "txn_cleanup",
    "external_stage", "external_commit", "external_copy", "external_repoint",
    "external_cleanup", "other",
)
ACTIONS = ("fail", "fail_after", "delay", "stop", "stop_after")

#: The steps of a plain commit (conditional put), in the order they happen.
COMMIT_STEPS = ("data_put", "txn_put", "manifest_put", "hint_put")
#: The steps of a commit through an external manifest store, in order.
EXTERNAL_STEPS = ("data_put", "txn_put", "external_stage", "external_commit", "external_copy",
                  "external_repoint", "external_cleanup")


class WriterStopped(BaseException):  # noqa: N818 - a stop, not an error
    """The writer was stopped at a store call (a crash, as far as the dataset can tell)."""

    def __init__(self, step: str, key: str, done: bool) -> None:
        super().__init__(f"writer stopped {'after' if done else 'before'} {step} ({key})")
        self.step = step
        self.key = key
        self.done = done


@dataclass
class Fault:
    """What to do on the ``nth`` (1-based) call of ``step``; ``times`` calls from there."""

    step: str
    action: str
    nth: int = 1
    times: int = 1
    delay_s: float = 0.05

    def __post_init__(self) -> None:
        if self.step not in STEPS:
            raise ValueError(f"unknown step {self.step!r}; one of {STEPS}")
        if self.action not in ACTIONS:
            raise ValueError(f"unknown action {self.action!r}; one of {ACTIONS}")
        if self.nth < 1 or self.times < 1:
            raise ValueError("nth and times must be >= 1")


def classify(op: str, key: str) -> str:
    """The commit-protocol step a store call belongs to (see the module table)."""
    name = key.rsplit("/", 1)[-1]
    if op == "put" and key.startswith("data/"):
        return "data_put"
    if op == "put" and key.startswith("_deletions/"):
        return "deletion_put"
    if key.startswith("_transactions/"):
        return "txn_put" if op == "put" else "txn_cleanup" if op == "delete" else "other"
    if key.startswith("_versions/"):
        if name == "latest_version_hint.json":
            return "hint_put" if op == "put" else "other"
        if op == "put_if_not_exists" and name.endswith(".manifest"):
            return "manifest_put"
        if ".manifest-" in name:
            return {"put": "external_stage", "delete": "external_cleanup",
                    "put_if_not_exists": "external_stage", "copy": "external_copy"}.get(op, "other")
        if op == "copy":
            return "external_copy"
    return "other"


@dataclass
class FaultPlan:
    """The faults of one run and the shared call log (shared by a store and its children)."""

    faults: list[Fault] = field(default_factory=list)
    log: list[tuple[str, str, str]] = field(default_factory=list)
    txn_puts: list[bytes] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    fired: list[tuple[Fault, str]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    hook: Callable[[str, str, str], None] | None = field(default=None, repr=False)
    after_hook: Callable[[str, str, str], None] | None = field(default=None, repr=False)

    def before(self, step: str, op: str, key: str) -> Fault | None:
        """Count the call, log it, and return the fault to apply, if any."""
        with self.lock:
            n = self.counts.get(step, 0) + 1
            self.counts[step] = n
            self.log.append((step, op, key))
            for f in self.faults:
                if f.step == step and f.nth <= n < f.nth + f.times:
                    self.fired.append((f, key))
                    return f
        return None


def _apply_before(fault: Fault | None, step: str, key: str) -> None:
    if fault is None:
        return
    if fault.action == "fail":
        raise StoreError(f"injected failure at {step} ({key})")
    if fault.action == "stop":
        raise WriterStopped(step, key, done=False)
    if fault.action == "delay":
        time.sleep(fault.delay_s)


def _apply_after(fault: Fault | None, step: str, key: str) -> None:
    if fault is None:
        return
    if fault.action == "fail_after":
        raise StoreError(f"injected failure after {step} ({key}): the call was done")
    if fault.action == "stop_after":
        raise WriterStopped(step, key, done=True)


class FaultyStore(ObjectStore):
    """An ObjectStore that forwards to ``inner`` and applies ``plan`` at each write call.

    Reads (get, get_range, size, exists, list) pass through unlogged: the protocol's
    effects are all in its writes."""

    def __init__(self, inner: ObjectStore, plan: FaultPlan | None = None, *, prefix: str = "") -> None:
        self.inner = inner
        self.plan = plan if plan is not None else FaultPlan()
        self._prefix = prefix  # the key prefix of this child relative to the faulted root
        self.uri = inner.uri

    @property
    def log(self) -> list[tuple[str, str, str]]:
        return self.plan.log

    @property
    def txn_puts(self) -> list[bytes]:
        return self.plan.txn_puts

    def _call(self, op: str, key: str, fn, *args):
        step = classify(op, key)
        if self.plan.hook is not None:
            self.plan.hook(step, op, self._prefix + key)
        fault = self.plan.before(step, op, self._prefix + key)
        _apply_before(fault, step, key)
        try:
            result = fn(*args)
        finally:
            if self.plan.after_hook is not None:
                self.plan.after_hook(step, op, self._prefix + key)
        if step == "txn_put":
            with self.plan.lock:
                self.plan.txn_puts.append(bytes(args[1]))
        _apply_after(fault, step, key)
        return result

    # reads
    def get(self, key: str, *, max_size: int = DEFAULT_MAX_READ) -> bytes:
        return self.inner.get(key, max_size=max_size)

    def get_range(self, key: str, start: int, length: int) -> bytes:
        return self.inner.get_range(key, start, length)

    def size(self, key: str) -> int:
        return self.inner.size(key)

    def exists(self, key: str) -> bool:
        return self.inner.exists(key)

    def list(self, prefix: str = "") -> Iterator[ObjectInfo]:
        return self.inner.list(prefix)

    def list_dir(self, prefix: str):
        return self.inner.list_dir(prefix)

    # writes
    def put(self, key: str, data: bytes) -> None:
        self._call("put", key, self.inner.put, key, data)

    def put_if_not_exists(self, key: str, data: bytes) -> None:
        self._call("put_if_not_exists", key, self.inner.put_if_not_exists, key, data)

    def copy(self, src: str, dst: str) -> None:
        self._call("copy", src, self.inner.copy, src, dst)

    def rename_if_not_exists(self, src: str, dst: str) -> None:
        self._call("put_if_not_exists", dst, self.inner.rename_if_not_exists, src, dst)

    def delete(self, key: str) -> None:
        self._call("delete", key, self.inner.delete, key)

    def child(self, prefix: str) -> FaultyStore:
        return FaultyStore(self.inner.child(prefix), self.plan,
                           prefix=self._prefix + prefix.strip("/") + "/")

    def __repr__(self) -> str:
        return f"FaultyStore({self.inner!r}, faults={self.plan.faults!r})"


class FaultyExternalStore:
    """An external manifest store (``put_if_not_exists``/``put``/``get``/``latest``) whose
    conditional insert is step ``external_commit`` and whose update is
    ``external_repoint``, faulted with the same :class:`FaultPlan` as the object store."""

    def __init__(self, inner, plan: FaultPlan) -> None:
        self.inner = inner
        self.plan = plan

    def _call(self, step: str, key: str, fn, *args, **kw):
        fault = self.plan.before(step, step, key)
        _apply_before(fault, step, key)
        result = fn(*args, **kw)
        _apply_after(fault, step, key)
        return result

    def put_if_not_exists(self, base_uri, version, path, *, size=None):
        return self._call("external_commit", path, self.inner.put_if_not_exists, base_uri, version,
                          path, size=size)

    def put(self, base_uri, version, path, *, size=None):
        return self._call("external_repoint", path, self.inner.put, base_uri, version, path, size=size)

    def get(self, base_uri, version):
        return self.inner.get(base_uri, version)

    def latest(self, base_uri):
        return self.inner.latest(base_uri)


def commit_point_passed(log: list[tuple[str, str, str]], fired: list[tuple[Fault, str]]) -> bool:
    """Whether a single commit whose calls are ``log`` reached its commit point: the
    manifest's create-if-absent (or the external store's row insert) was called and was
    not replaced by a ``fail``/``stop`` fault."""
    prevented = {(f.step, key) for f, key in fired if f.action in ("fail", "stop")}
    for step, _op, key in log:
        if step in ("manifest_put", "external_commit") and (step, key) not in prevented:
            return True
    return False
