"""Stress: many writers committing to one dataset at once, and a count of what was lost.

Spec 001, "Committing Datasets": a commit succeeds only by creating the next version's
manifest *if it does not exist yet*; "Conflict resolution": a writer that loses the race
rebases onto the new version when its change is compatible, and otherwise gives up. On a
store whose create-if-absent is not atomic (or is ignored), two writers can both be told
"committed" for the same version and one of them silently disappears. This module makes
that measurable.

How a run works (:func:`run_stress`)
------------------------------------
The dataset at ``uri`` is created (columns ``writer`` string, ``uid`` int64, ``val``
int64) unless it already has those columns. ``writers`` threads (or processes) of our
writer, plus ``pylance_writers`` pylance writers with ``include_pylance``, then each try
``commits`` commits. Every row a writer writes carries its own ``writer`` tag and a
``uid`` no other row has. Our writers pick their operation from ``ops``:

``append``  ``rows_per_commit`` new rows;
``delete``  one of the writer's own live rows (``uid = X``);
``update``  ``val = val + 1`` on one own live row (the row moves to a new fragment);
``compact`` ``compact_files`` (no logical change);
``config``  an ``UpdateConfig`` of a key of the writer's own;
``tag``     a tag on the latest version (no commit; counted as a success);
``add_columns``  an all-null column of the writer's own (appends then fill it with nulls).

A retryable ``CommitConflict`` is redone on the newest version (``commits_retried``); a
non-retryable one, or ``max_redos`` retryable ones in a row, is ``commits_rejected``.
pylance writers only append (``lance.write_dataset(..., mode="append")``).

Lockstep (``lockstep=True``, ``--lockstep``)
--------------------------------------------
Left to the scheduler, writers often commit one after another and never race at all (on
a busy machine 4 writers x 4 commits may serialise completely). In lockstep our writers
go in rounds, one round per commit, through two barriers (:class:`Lockstep`):

1. *read*: every writer has finished its previous round; then each opens the newest
   version, which is therefore the same version ``N`` for all of them;
2. *publish*: held by a hook in the writer's store just before its first
   create-if-absent of a manifest in the round (the commit point), so no writer
   publishes before all have read ``N``, and all of them then publish ``N + 1`` at once;
3. *settle*: held just after that create-if-absent returned (or was refused), so no
   writer reads anything back (a writer reopens the version it made) while another one
   may still be writing the same key -- on a store that lets the key be overwritten,
   such a read could see the size of one writer's manifest and the bytes of another's.

On a safe store exactly one wins each round and the others retry (at least
``writers - 1`` retries a round); on a store that ignores conditional writes all of them
are told "committed" and ``writers - 1`` commits a round are lost, on every run. A writer
whose operation never reaches a commit point (a tag, a no-op compaction, an error) passes
the publish barrier when its operation ends, so the rounds never stall. pylance writers
cannot be held inside pylance's commit and run free.

What is checked afterwards
--------------------------
``lost_commits``: an acknowledged commit is lost when the manifest of the version it was
told it got does not carry its transaction (our writers know their transaction's uuid),
or when rows it acknowledged are missing from the final version (every writer deletes only
its own rows, so each writer's final live set is known exactly).
``invariant_violations``: the version history is not ``1..final`` without gaps, the
validator (:func:`conformance.engine.local.validate`) finds an error in the final or a
sampled version, a ``uid`` appears twice, a deleted row came back, or pylance (when
present) counts a different number of rows than our reader.

The report (:class:`StressReport`) has ``commits_succeeded``, ``commits_retried``,
``commits_rejected``, ``lost_commits``, ``final_version``, ``invariant_violations`` and
``elapsed_s``; ``ok`` is true when nothing was lost and no invariant broke.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import random
import threading
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import asdict, dataclass, field

import numpy as np
import pyarrow as pa

from reference_impl.errors import CommitConflict, LanceError, NotFound

OPS = ("append", "delete", "update", "compact", "config", "tag", "add_columns")
DEFAULT_OPS = ("append",)
BASE_SCHEMA = pa.schema([("writer", pa.string()), ("uid", pa.int64()), ("val", pa.int64())])
UID_STRIDE = 1 << 32  # uid = writer number * stride + counter


@dataclass
class Ack:
    """One acknowledged commit of one writer."""

    writer: str
    op: str
    version: int
    txn_uuid: str | None = None            # our writers' transaction, to find it again
    added: list[int] = field(default_factory=list)
    removed: list[int] = field(default_factory=list)


@dataclass
class WriterResult:
    """What one writer did: its acks and its counters (picklable, for processes)."""

    writer: str
    acks: list[Ack] = field(default_factory=list)
    retried: int = 0
    rejected: int = 0
    errors: list[str] = field(default_factory=list)


@dataclass
class StressReport:
    commits_succeeded: int
    commits_retried: int
    commits_rejected: int
    lost_commits: int
    final_version: int
    invariant_violations: list[str]
    elapsed_s: float
    lost: list[str] = field(default_factory=list)
    writer_errors: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.lost_commits == 0 and not self.invariant_violations

    def summary(self) -> dict:
        """The six numbers (and the list of violations) the CLI prints."""
        d = asdict(self)
        d.pop("lost")
        d.pop("writer_errors")
        d["elapsed_s"] = round(self.elapsed_s, 3)
        return d

    def to_dict(self) -> dict:
        d = asdict(self)
        d["elapsed_s"] = round(self.elapsed_s, 3)
        d["ok"] = self.ok
        return d


# -- our writer ---------------------------------------------------------------------------
def _open_latest(uri, opts):
    from reference_impl.dataset import open_dataset

    return open_dataset(uri, storage_options=opts)


class Lockstep:
    """The two barriers of lockstep rounds (see the module docstring), for ``parties``
    writers. ``barrier_factory(parties)`` makes a barrier: ``threading.Barrier`` for
    threads, a manager's ``Barrier`` for processes. ``timeout_s`` only guards against a
    hang when a writer dies; it decides no outcome."""

    def __init__(self, parties: int, *, timeout_s: float = 600.0, barrier_factory=None) -> None:
        make = barrier_factory or threading.Barrier
        self.read = make(parties)
        self.publish = make(parties)
        self.settle = make(parties)
        self.timeout_s = timeout_s

    def writer(self) -> LockstepWriter:
        return LockstepWriter(self.read, self.publish, self.settle, self.timeout_s)


class LockstepWriter:
    """One writer's side of :class:`Lockstep` (picklable when its barriers are)."""

    def __init__(self, read, publish, settle, timeout_s: float) -> None:
        self.read = read
        self.publish = publish
        self.settle = settle
        self.timeout_s = timeout_s
        self.published = True
        self.settled = True

    def begin_round(self) -> None:
        """Wait until every writer has finished its previous round."""
        self.read.wait(self.timeout_s)
        self.published = self.settled = False

    def before_write(self, step: str, _op: str, _key: str) -> None:
        """Store hook: hold the round's first manifest create-if-absent at the barrier."""
        if step == "manifest_put" and not self.published:
            self.published = True
            self.publish.wait(self.timeout_s)

    def after_write(self, step: str, _op: str, _key: str) -> None:
        """Store hook: after that create-if-absent, wait until every writer's is done."""
        if step == "manifest_put" and self.published and not self.settled:
            self.settled = True
            self.settle.wait(self.timeout_s)

    def end_round(self) -> None:
        """Pass the barriers this round's operation never reached (no commit point)."""
        if not self.published:
            self.published = True
            self.publish.wait(self.timeout_s)
        if not self.settled:
            self.settled = True
            self.settle.wait(self.timeout_s)

    def abort(self) -> None:
        """Break every barrier, so the other writers stop instead of waiting forever."""
        for b in (self.read, self.publish, self.settle):
            try:
                b.abort()
            except Exception:  # noqa: BLE001 - a manager that is already gone
                pass


def _recorded(ds, gate: LockstepWriter | None = None):
    """``ds`` with its store wrapped in a fault-free :class:`FaultyStore`, to see the
    ``.txn`` bytes and the manifest create-if-absent calls of the next commit (and, in
    lockstep, to hold the commit point at the publish barrier)."""
    from reference_impl.dataset import Dataset

    from .faults import FaultPlan, FaultyStore

    plan = FaultPlan() if gate is None else FaultPlan(hook=gate.before_write,
                                                      after_hook=gate.after_write)
    rec = FaultyStore(ds.store, plan)
    return Dataset(ds.uri, rec, ds.root_store, ds.branch, ds.manifest_file, ds.storage_options), rec


def _last_txn_uuid(rec) -> str | None:
    from reference_impl.proto import transaction_pb2

    if not rec.txn_puts:
        return None
    t = transaction_pb2.Transaction()
    t.ParseFromString(rec.txn_puts[-1])
    return t.uuid


def _rows(writer: str, uids: np.ndarray, schema: pa.Schema | None = None) -> pa.Table:
    cols = {"writer": pa.array([writer] * len(uids), pa.string()),
            "uid": pa.array(uids, pa.int64()), "val": pa.array(np.zeros(len(uids), np.int64))}
    if schema is not None:
        for f in schema:
            if f.name not in cols:
                cols[f.name] = pa.nulls(len(uids), f.type)
        return pa.table({f.name: cols[f.name] for f in schema}).cast(schema)
    return pa.table(cols, schema=BASE_SCHEMA)


def _one_commit(op: str, name: str, uri, opts, rng, live: list[int], counter: list[int],
                rows_per_commit: int, seq: int,
                gate: LockstepWriter | None = None) -> tuple[Ack | None, int]:
    """Do one operation on the newest version; the Ack (None for a no-op) and the number
    of extra manifest puts (lost races retried inside the commit loop)."""
    from reference_impl import dataset_ops

    ds = _open_latest(uri, opts)
    if op in ("delete", "update") and not live:
        op = "append"
    if op == "append":
        uids = np.arange(counter[0], counter[0] + rows_per_commit, dtype=np.int64)
        ds, rec = _recorded(ds, gate)
        from reference_impl.write import write_dataset

        res = write_dataset(_rows(name, uids, ds.schema), rec, mode="append")
        counter[0] += rows_per_commit
        # write_dataset returns a Dataset or a CommitResult, depending on its version:
        # both have .version; the transaction and the attempts come from the recorder
        return Ack(name, op, res.version, _last_txn_uuid(rec), added=uids.tolist()), _extra_puts(rec)
    if op == "tag":
        tag = f"{name}-{seq}"
        dataset_ops.create_tag(ds, tag)
        return None, 0
    ds, rec = _recorded(ds, gate)
    removed: list[int] = []
    if op == "delete":
        uid = live[int(rng.integers(len(live)))]
        out = dataset_ops.delete(ds, f"uid = {uid}")
        removed = [uid]
    elif op == "update":
        uid = live[int(rng.integers(len(live)))]
        out = dataset_ops.update(ds, {"val": "val + 1"}, where=f"uid = {uid}")
    elif op == "compact":
        out = dataset_ops.compact_files(ds, target_rows_per_fragment=1 << 20)
        if out is ds:
            return None, 0
        return Ack(name, op, out.version, None), _extra_puts(rec)
    elif op == "config":
        out = dataset_ops.update_config(ds, {f"stress.{name}": str(seq)})
    elif op == "add_columns":
        out = dataset_ops.add_columns(ds, pa.schema([(f"c_{name}_{seq}", pa.int32())]))
    else:
        raise ValueError(f"unknown operation {op!r}; one of {OPS}")
    return Ack(name, op, out.version, _last_txn_uuid(rec), removed=removed), _extra_puts(rec)


def _extra_puts(rec) -> int:
    n = sum(1 for step, _op, _k in rec.log if step == "manifest_put")
    return max(0, n - 1)


def our_writer(name: str, index: int, uri: str, opts: dict | None, commits: int, ops: tuple[str, ...],
               rows_per_commit: int, seed: int, max_redos: int = 10,
               gate: LockstepWriter | None = None) -> WriterResult:
    """One of our writers: ``commits`` operations, each redone on retryable conflicts;
    with ``gate``, one lockstep round per operation."""
    result = WriterResult(name)
    try:
        _our_commits(result, index, uri, opts, commits, ops, rows_per_commit, seed, max_redos, gate)
    except threading.BrokenBarrierError:
        result.errors.append(f"{name}: lockstep stopped (another writer failed or hung)")
    except BaseException:
        if gate is not None:
            gate.abort()
        raise
    return result


def _our_commits(result: WriterResult, index: int, uri: str, opts: dict | None, commits: int,
                 ops: tuple[str, ...], rows_per_commit: int, seed: int, max_redos: int,
                 gate: LockstepWriter | None) -> None:
    name = result.writer
    rng = np.random.default_rng(seed)
    live: list[int] = []
    counter = [index * UID_STRIDE]
    for seq in range(commits):
        op = ops[int(rng.integers(len(ops)))]
        if gate is not None:
            gate.begin_round()
        try:
            _commit_with_redos(result, op, name, uri, opts, rng, live, counter, rows_per_commit,
                               seq, max_redos, gate)
        finally:
            if gate is not None:
                gate.end_round()


def _commit_with_redos(result: WriterResult, op: str, name: str, uri, opts, rng, live: list[int],
                       counter: list[int], rows_per_commit: int, seq: int, max_redos: int,
                       gate: LockstepWriter | None) -> None:
    """One operation of a writer, redone on the newest version after retryable conflicts."""
    for redo in range(max_redos + 1):
        try:
            ack, extra = _one_commit(op, name, uri, opts, rng, live, counter, rows_per_commit,
                                     seq, gate)
        except CommitConflict as exc:
            if exc.retryable and redo < max_redos:
                result.retried += 1
                time.sleep(float(rng.uniform(0, 0.01 * (redo + 1))))
                continue
            result.rejected += 1
            break
        except LanceError as exc:  # AlreadyExists after too many lost races, and friends
            result.rejected += 1
            result.errors.append(f"{name} {op}: {type(exc).__name__}: {exc}")
            break
        result.retried += extra
        if ack is not None:
            result.acks.append(ack)
            live.extend(ack.added)
            for uid in ack.removed:
                live.remove(uid)
        break


def pylance_writer(name: str, index: int, uri: str, opts: dict | None, commits: int,
                   rows_per_commit: int, seed: int, max_redos: int = 10) -> WriterResult:
    """A pylance writer: ``commits`` appends through ``lance.write_dataset``."""
    import lance

    result = WriterResult(name)
    counter = index * UID_STRIDE
    for _seq in range(commits):
        uids = np.arange(counter, counter + rows_per_commit, dtype=np.int64)
        for redo in range(max_redos + 1):
            try:
                schema = lance.dataset(uri, storage_options=opts).schema
                out = lance.write_dataset(_rows(name, uids, schema), uri, mode="append",
                                          storage_options=opts)
            except OSError as exc:  # pylance's commit conflicts and store errors
                if redo < max_redos and ("retry" in str(exc).lower() or "conflict" in str(exc).lower()):
                    result.retried += 1
                    continue
                result.rejected += 1
                result.errors.append(f"{name} append: {exc}")
                break
            except Exception as exc:  # noqa: BLE001 - a schema race, reported not raised
                result.rejected += 1
                result.errors.append(f"{name} append: {type(exc).__name__}: {exc}")
                break
            result.acks.append(Ack(name, "append", out.version, None, added=uids.tolist()))
            counter += rows_per_commit
            break
    return result


# -- the run ------------------------------------------------------------------------------
def _ensure_dataset(uri, opts) -> None:
    from reference_impl.errors import InvalidInput
    from reference_impl.write import write_dataset

    try:
        ds = _open_latest(uri, opts)
    except NotFound:
        write_dataset(_rows("seed", np.array([-1], np.int64)), uri, mode="create",
                      storage_options=opts)
        return
    missing = [n for n in BASE_SCHEMA.names if n not in ds.schema.names]
    if missing:
        raise InvalidInput(f"the dataset at {uri} lacks the stress columns {missing}")


def run_stress(uri: str, *, storage_options: dict | None = None, writers: int = 8, commits: int = 25,
               ops=DEFAULT_OPS, include_pylance: bool = False, pylance_writers: int | None = None,
               rows_per_commit: int = 4, seed: int | None = None, processes: bool = False,
               validate_versions: int = 3, lockstep: bool = False) -> StressReport:
    """Run the writers against ``uri`` and check what they left; see the module docstring.

    ``lockstep`` forces every round of our writers to race for the same version."""
    ops = tuple(ops)
    unknown = [o for o in ops if o not in OPS]
    if unknown or not ops:
        from reference_impl.errors import InvalidInput
        raise InvalidInput(f"unknown operations {unknown}; choose from {', '.join(OPS)}")
    opts = dict(storage_options or {})
    seed = random.randrange(1 << 30) if seed is None else seed
    started = time.monotonic()
    _ensure_dataset(uri, opts)
    n_pl = (pylance_writers if pylance_writers is not None else max(1, writers // 2)) if include_pylance else 0
    ctx = multiprocessing.get_context("spawn")
    with contextlib.ExitStack() as stack:
        gates: list[LockstepWriter | None] = [None] * writers
        if lockstep and writers > 1:
            factory = None
            if processes:
                factory = stack.enter_context(ctx.Manager()).Barrier
            steps = Lockstep(writers, barrier_factory=factory)
            gates = [steps.writer() for _ in range(writers)]
        jobs = [(our_writer, (f"w{i}", i + 1, uri, opts, commits, ops, rows_per_commit, seed + i,
                              10, gates[i]))
                for i in range(writers)]
        jobs += [(pylance_writer, (f"p{i}", 1000 + i, uri, opts, commits, rows_per_commit,
                                   seed + 500 + i))
                 for i in range(n_pl)]
        results = _run_jobs(jobs, processes, ctx)
    report = check_outcome(uri, opts, results, validate_versions=validate_versions)
    report.elapsed_s = time.monotonic() - started
    return report


def _run_jobs(jobs, processes: bool, ctx) -> list[WriterResult]:
    """Run every writer at once (threads released together, or a process each)."""
    if processes:
        with ProcessPoolExecutor(max_workers=len(jobs), mp_context=ctx) as pool:
            futures = [pool.submit(fn, *args) for fn, args in jobs]
            results = [f.result() for f in futures]
    else:
        barrier = threading.Barrier(len(jobs))

        def go(fn, args):
            barrier.wait()
            return fn(*args)

        with ThreadPoolExecutor(max_workers=len(jobs)) as pool:
            futures = [pool.submit(go, fn, args) for fn, args in jobs]
            results = [f.result() for f in futures]
    return results


def check_outcome(uri: str, opts: dict, results: list[WriterResult], *,
                  validate_versions: int = 3) -> StressReport:
    """Compare what the writers were told with what the dataset holds."""
    from reference_impl.io.uri import open_store
    from reference_impl.table.commit import load_transaction
    from reference_impl.table.versions import list_versions

    from ..engine.local import validate

    violations: list[str] = []
    lost: list[str] = []
    acks = [a for r in results for a in r.acks]
    try:
        ds = _open_latest(uri, opts)
        store = ds.store
    except LanceError as exc:  # a torn manifest (a store that interleaves racing PUTs)
        ds = None
        store = open_store(uri, opts)
        violations.append(f"the latest version cannot be opened: {type(exc).__name__}: {exc}")
    entries = list_versions(store)
    numbers = [e.version for e in entries]
    final = numbers[-1] if numbers else 0
    if numbers != list(range(1, final + 1)):
        violations.append(f"version history is not contiguous: {numbers}")

    # 1. each acknowledged commit of ours must own the version it was told it got
    lost_ids: set[int] = set()
    for i, a in enumerate(acks):
        if a.txn_uuid is None:
            continue
        try:
            txn = load_transaction(store, a.version)
        except (NotFound, LanceError):
            txn = None
        if txn is None or txn.uuid != a.txn_uuid:
            lost_ids.add(i)
            lost.append(f"{a.writer} {a.op} acknowledged as version {a.version}, but that "
                        f"version holds transaction {getattr(txn, 'uuid', None)}")

    # 2. every writer's live rows: exactly what it acknowledged
    t = None
    if ds is not None:
        try:
            t = ds.to_table(columns=["writer", "uid"])
        except LanceError as exc:
            violations.append(f"the latest version cannot be read: {type(exc).__name__}: {exc}")
    if t is None:  # nothing more to compare rows against; what is known is reported
        return StressReport(
            commits_succeeded=len(acks), commits_retried=sum(r.retried for r in results),
            commits_rejected=sum(r.rejected for r in results), lost_commits=len(lost_ids),
            final_version=final, invariant_violations=violations, elapsed_s=0.0, lost=lost,
            writer_errors=[e for r in results for e in r.errors])
    uids = t["uid"].to_numpy()
    counts = Counter(uids.tolist())
    dup = [u for u, c in counts.items() if c > 1]
    if dup:
        violations.append(f"{len(dup)} uid(s) appear more than once, e.g. {dup[:5]}")
    present = set(counts)
    overwrites = any(a.op in ("overwrite", "restore") for a in acks)
    if not overwrites:
        for i, a in enumerate(acks):
            missing = [u for u in a.added if u not in present]
            if missing and i not in lost_ids:
                still_live = [u for u in missing if not _removed_later(acks, a.writer, u)]
                if still_live:
                    lost_ids.add(i)
                    lost.append(f"{a.writer} {a.op} acknowledged as version {a.version}: "
                                f"{len(still_live)} of its rows are missing at version {final}")
        removed = {u for a in acks for u in a.removed}
        back = sorted(present & removed)
        if back:
            violations.append(f"{len(back)} deleted row(s) are back at version {final}, "
                              f"e.g. uids {back[:5]}")
        writers_tags = Counter(t["writer"].to_pylist())
        for r in results:
            expect = sum(len(a.added) for a in r.acks) - sum(len(a.removed) for a in r.acks)
            got = writers_tags.get(r.writer, 0)
            if got > expect:  # fewer rows than acknowledged is counted as lost above
                violations.append(f"writer {r.writer}: {got} rows present, {expect} acknowledged")

    # 3. the validator on the final version and a sample of others
    sample = sorted({final} | set(random.Random(final).sample(numbers, min(validate_versions, len(numbers)))))
    try:
        rep = validate(uri, versions=sample, storage_options=opts)
        for f in rep.violations:
            violations.append(f"validator: {f.rule} at {f.location}: {f.message}")
    except LanceError as exc:
        violations.append(f"validator could not run: {exc}")

    # 4. pylance agrees on the row count, when it is installed
    try:
        import lance
    except ImportError:
        lance = None
    if lance is not None and not uri.startswith("memory://"):  # pylance's memory is its own
        try:
            n = lance.dataset(uri, storage_options=opts or None).count_rows()
            if n != t.num_rows:
                violations.append(f"pylance counts {n} rows at the latest version, we count {t.num_rows}")
        except Exception as exc:  # noqa: BLE001 - pylance's refusal is a finding
            violations.append(f"pylance cannot open the result: {type(exc).__name__}: {exc}")

    return StressReport(
        commits_succeeded=len(acks),
        commits_retried=sum(r.retried for r in results),
        commits_rejected=sum(r.rejected for r in results),
        lost_commits=len(lost_ids), final_version=final, invariant_violations=violations,
        elapsed_s=0.0, lost=lost, writer_errors=[e for r in results for e in r.errors])


def _removed_later(acks: list[Ack], writer: str, uid: int) -> bool:
    return any(a.writer == writer and uid in a.removed for a in acks)
