"""A model of concurrent writers on one dataset, and the invariants the commit protocol keeps.

Spec 001, "Committing Datasets": versions are numbered ``1, 2, ...`` and each commit
creates the next one; "Conflict resolution": a writer whose read version is behind checks
its transaction against each one committed since, and commits on top of them only when
the compatibility table (:data:`reference_impl.table.conflicts.MATRIX`) allows it.

The simulation
--------------
``writers`` writers each hold their own *read version* (a snapshot they opened earlier).
A step either moves one writer to the newest version (``refresh``) or has it commit one
operation computed against its own, possibly stale, snapshot:

``append``       new rows (new ``uid`` s)            Append
``delete``       ``uid`` in a range of its snapshot   Delete
``update``       ``val = val + 1`` on a range         Update
``add_columns``  an all-null column                   Merge
``overwrite``    a fresh set of rows                  Overwrite
``config``       one config key (few keys: clashes)   UpdateConfig
``compact``      compact_files on its snapshot         ReserveFragments + Rewrite
``tag``          a tag on the writer's version        (no commit)

Interleavings come from the read versions: a writer that opened version 3 and commits
after two others did is exactly the writer that lost a race twice. Because the steps are
sequential, :class:`hypothesis.stateful.RuleBasedStateMachine` shrinks a failure to a
minimal interleaving. Each operation runs through :func:`execute`, a plain function of
plain arguments, so the process variant runs it in another process.

The model
---------
For every version the model keeps the logical rows (``uid -> val``), the column names and
the config, and the transaction that made it (captured from the ``.txn`` bytes the writer
put, through :class:`conformance.concurrency.faults.FaultyStore`). A commit's effect is computed from
the writer's snapshot (the rows its predicate matched there) and applied to the newest
version's model, which is what rebasing means.

Invariants (:meth:`Simulation.check_commit` after every step, :meth:`Simulation.check_all`
at the end): the version history is ``1..latest`` with no gap; every new manifest passes
the validator; a successful commit lands at exactly ``latest + 1`` and that manifest
carries its transaction; the rows and columns our reader returns at each version equal
the model's; a commit is rejected exactly when the matrix says one of the transactions
committed since its read version conflicts with it (and ``retryable`` agrees).

Compaction is two commits (ReserveFragments, then a Rewrite read at the writer's
snapshot): the model checks that no row changes, that a refused Rewrite leaves at most the
reservation behind, and that a Rewrite that landed is compatible, by the matrix, with
everything committed after the version it read.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from reference_impl.errors import CommitConflict

BASE_COLUMNS = ("uid", "val")
CONFIG_KEYS = ("sim.a", "sim.b")


@dataclass
class Outcome:
    """What :func:`execute` saw: ``kind`` is ``committed``, ``rejected`` or ``noop``."""

    kind: str
    version: int | None = None
    txns: list[bytes] = field(default_factory=list)   # every .txn the operation put
    retryable: bool | None = None
    message: str = ""


@dataclass
class ModelVersion:
    rows: dict[int, int]
    columns: tuple[str, ...]
    config: dict[str, str]


def _table(uids, schema: pa.Schema | None) -> pa.Table:
    cols = {"uid": pa.array(uids, pa.int64()), "val": pa.array(np.zeros(len(uids), np.int64))}
    if schema is None:
        return pa.table(cols)
    return pa.table({f.name: cols[f.name] if f.name in cols else pa.nulls(len(uids), f.type)
                     for f in schema}).cast(schema)


def execute(uri: str, opts: dict | None, read_version: int, op: str, params: dict) -> Outcome:
    """Run one operation of a writer whose snapshot is ``read_version``; never raises a
    CommitConflict (it becomes a ``rejected`` outcome)."""
    from reference_impl import dataset_ops
    from reference_impl.dataset import Dataset, open_dataset
    from reference_impl.table import commit as commit_mod
    from reference_impl.table import operations
    from reference_impl.table.schema import arrow_to_fields, schema_metadata_of
    from reference_impl.write import write_fragments

    from .faults import FaultyStore

    ds = open_dataset(uri, version=read_version, storage_options=opts)
    rec = FaultyStore(ds.store)
    ds = Dataset(ds.uri, rec, ds.root_store, ds.branch, ds.manifest_file, ds.storage_options)
    fmt = ("lance", ds.manifest.data_format.version or "2.2")
    try:
        if op == "append":
            frags = write_fragments(rec, _table(params["uids"], ds.schema), list(ds.manifest.fields),
                                    file_version=fmt[1])
            res = commit_mod.commit_transaction(rec, operations.append(read_version, frags),
                                                data_format=fmt)
            version = res.version
        elif op == "overwrite":
            t = _table(params["uids"], None)
            fields = arrow_to_fields(t.schema)
            frags = write_fragments(rec, t, fields, file_version=fmt[1])
            txn = operations.overwrite(read_version, frags, fields,
                                       schema_metadata=schema_metadata_of(t.schema))
            version = commit_mod.commit_transaction(rec, txn, data_format=fmt).version
        elif op == "config":
            txn = operations.update_config(read_version, config={params["key"]: params["value"]})
            version = commit_mod.commit_transaction(rec, txn, data_format=fmt).version
        elif op == "delete":
            version = dataset_ops.delete(ds, f"uid >= {params['lo']} AND uid < {params['hi']}").version
        elif op == "update":
            version = dataset_ops.update(ds, {"val": "val + 1"},
                                         where=f"uid >= {params['lo']} AND uid < {params['hi']}").version
        elif op == "add_columns":
            version = dataset_ops.add_columns(ds, pa.schema([(params["name"], pa.int32())])).version
        elif op == "compact":
            out = dataset_ops.compact_files(ds, target_rows_per_fragment=1 << 20)
            if out is ds:
                return Outcome("noop")
            version = out.version
        elif op == "tag":
            dataset_ops.create_tag(ds, params["name"], read_version)
            return Outcome("noop", version=read_version)
        else:
            raise ValueError(f"unknown operation {op!r}")
    except CommitConflict as exc:
        return Outcome("rejected", txns=list(rec.txn_puts), retryable=exc.retryable, message=str(exc))
    return Outcome("committed", version=version, txns=list(rec.txn_puts))


class Simulation:
    """The model and its checks, independent of how steps are chosen (hypothesis, or a
    scripted list of steps in a test)."""

    def __init__(self, uri: str, opts: dict | None = None, *, writers: int = 3, runner=None,
                 validate: bool = True) -> None:
        from reference_impl.write import write_dataset

        self.uri = uri
        self.opts = dict(opts or {})
        self.runner = runner or execute
        self.validate = validate
        self.next_uid = 0
        self.models: dict[int, ModelVersion] = {}
        self.history: dict[int, object] = {}     # version -> Transaction that made it
        self.tags: dict[str, int] = {}
        self.outcomes: list[tuple[str, Outcome]] = []
        uids = self._new_uids(4)
        write_dataset(_table(uids, None), uri, mode="create", storage_options=self.opts)
        self.models[1] = ModelVersion({int(u): 0 for u in uids}, BASE_COLUMNS, {})
        self.history[1] = self._txn_of(1)
        self.read = [1] * writers

    # -- helpers ----------------------------------------------------------------------
    def _new_uids(self, n: int) -> list[int]:
        out = list(range(self.next_uid, self.next_uid + n))
        self.next_uid += n
        return out

    def _store(self):
        from reference_impl.io.uri import open_store

        return open_store(self.uri, self.opts)

    def _txn_of(self, version: int):
        from reference_impl.table.commit import load_transaction

        return load_transaction(self._store(), version)

    @property
    def latest(self) -> int:
        return max(self.models)

    def refresh(self, w: int) -> None:
        self.read[w] = self.latest

    # -- a step ---------------------------------------------------------------------------
    def step(self, w: int, op: str, params: dict | None = None) -> Outcome:
        """Writer ``w`` does ``op`` against its snapshot; the model follows and the
        invariants are checked."""
        from reference_impl.proto import transaction_pb2
        from reference_impl.table import conflicts

        params = dict(params or {})
        rv = self.read[w]
        before = self.latest
        snap = self.models[rv]
        if op in ("append", "overwrite"):
            params.setdefault("uids", self._new_uids(params.pop("n", 3)))
        out = self.runner(self.uri, self.opts, rv, op, params)
        self.outcomes.append((op, out))
        if op == "tag":
            self.tags[params["name"]] = rv
            from reference_impl.dataset import open_dataset
            assert open_dataset(self.uri, version=params["name"],
                                storage_options=self.opts).version == rv
            return out
        if out.kind == "noop":
            return out
        ours = transaction_pb2.Transaction()
        ours.ParseFromString(out.txns[-1])
        if op != "compact":
            # the matrix decides: our transaction against each one committed since rv
            expected = None
            for v in range(rv + 1, before + 1):
                verdict = conflicts.check(ours, self.history[v], v)
                if not verdict.ok:
                    expected = verdict
                    break
            if expected is None:
                assert out.kind == "committed", (
                    f"{op} at read version {rv} was rejected ({out.message}) but the matrix "
                    f"allows it over versions {rv + 1}..{before}")
            else:
                assert out.kind == "rejected", (
                    f"{op} at read version {rv} committed as {out.version} but the matrix says "
                    f"{expected.cell} against {expected.theirs} at version {expected.version}")
                assert out.retryable == (expected.cell == conflicts.RETRYABLE), out.message
        if op == "compact":
            self._check_compaction(rv, before, out)
            return out
        if out.kind == "rejected":
            assert self._latest_on_disk() == before, "a rejected commit created a version"
            return out
        assert out.version == before + 1, (
            f"{op} committed as {out.version}, the next version was {before + 1}")
        base = self.models[before]
        rows = dict(base.rows)
        columns = base.columns
        config = dict(base.config)
        if op == "append":
            rows.update({int(u): 0 for u in params["uids"]})
        elif op == "overwrite":
            rows = {int(u): 0 for u in params["uids"]}
            columns = BASE_COLUMNS
        elif op == "delete":
            for u in snap.rows:
                if params["lo"] <= u < params["hi"]:
                    rows.pop(u, None)
        elif op == "update":
            for u, val in snap.rows.items():
                if params["lo"] <= u < params["hi"]:
                    rows[u] = val + 1
        elif op == "add_columns":
            columns = columns + (params["name"],)
        elif op == "config":
            config[params["key"]] = params["value"]
        for v in range(before + 1, out.version + 1):
            self.models[v] = ModelVersion(rows, columns, config)
            self.history[v] = self._txn_of(v)
        assert self.history[out.version].uuid == ours.uuid, "the new version holds another transaction"
        self.check_version(out.version)
        return out

    def _check_compaction(self, rv: int, before: int, out: Outcome) -> None:
        """Compaction is two commits: ReserveFragments, then a Rewrite read at ``rv`` (the
        version whose fragments it chose). The Rewrite may be refused after the reservation
        landed; either way no row may change."""
        from reference_impl.proto import transaction_pb2
        from reference_impl.table import conflicts

        disk = self._latest_on_disk()
        if out.kind == "rejected":
            assert disk in (before, before + 1), f"a refused compaction left {disk - before} versions"
            last = disk
        else:
            assert out.version == before + 2, f"compaction committed as {out.version}, not {before + 2}"
            last = out.version
        base = self.models[before]
        for v in range(before + 1, last + 1):
            self.models[v] = ModelVersion(dict(base.rows), base.columns, dict(base.config))
            self.history[v] = self._txn_of(v)
        if last > before:
            reserve = transaction_pb2.Transaction()
            reserve.ParseFromString(out.txns[-1])
            assert self.history[before + 1].uuid == reserve.uuid, "the reservation is not ours"
        if out.kind == "committed":
            rewrite = self.history[out.version]
            assert rewrite.WhichOneof("operation") == "rewrite"
            for v in range(rewrite.read_version + 1, out.version):
                verdict = conflicts.check(rewrite, self.history[v], v)
                assert verdict.ok, f"the Rewrite committed over {verdict.theirs} at {v}: {verdict.cell}"
        for v in range(before + 1, last + 1):
            self.check_version(v)

    # -- invariants -------------------------------------------------------------------
    def _latest_on_disk(self) -> int:
        from reference_impl.table.commit import latest_version_or_zero

        return latest_version_or_zero(self._store())

    def check_history(self) -> None:
        from reference_impl.table.versions import list_versions

        numbers = [e.version for e in list_versions(self._store())]
        assert numbers == list(range(1, len(numbers) + 1)), f"gaps in the history: {numbers}"
        assert numbers[-1] == self.latest, f"disk has {numbers[-1]}, the model {self.latest}"

    def check_version(self, version: int) -> None:
        from reference_impl.dataset import open_dataset

        self.check_history()
        ds = open_dataset(self.uri, version=version, storage_options=self.opts)
        model = self.models[version]
        assert tuple(ds.schema.names) == model.columns, (version, ds.schema.names, model.columns)
        t = ds.to_table(columns=["uid", "val"])
        got = dict(zip(t["uid"].to_pylist(), t["val"].to_pylist(), strict=True))
        assert len(got) == t.num_rows, f"version {version}: a uid appears twice"
        assert got == model.rows, f"version {version}: rows differ from the model"
        for k, v in model.config.items():
            assert ds.config.get(k) == v, f"version {version}: config {k}"
        if self.validate:
            from ..engine.local import validate

            rep = validate(self.uri, versions=[version], storage_options=self.opts)
            assert not rep.violations, [f"{f.rule}: {f.message}" for f in rep.violations]

    def check_all(self) -> None:
        for v in sorted(self.models):
            self.check_version(v)


def machine(make_location, *, writers: int = 3, runner=None, validate: bool = True):
    """A :class:`hypothesis.stateful.RuleBasedStateMachine` class driving a
    :class:`Simulation` on the location ``make_location()`` returns (``(uri, opts)``).
    ``runner`` replaces :func:`execute` (the process variant)."""
    from hypothesis import strategies as st
    from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

    W = st.integers(0, writers - 1)

    class ConcurrentWriters(RuleBasedStateMachine):
        @initialize()
        def start(self):
            uri, opts = make_location()
            self.sim = Simulation(uri, opts, writers=writers, runner=runner, validate=validate)
            self.n = 0

        @rule(w=W)
        def refresh(self, w):
            self.sim.refresh(w)

        @rule(w=W, n=st.integers(1, 4))
        def append(self, w, n):
            self.sim.step(w, "append", {"n": n})

        @rule(w=W, lo=st.integers(0, 30), width=st.integers(1, 6))
        def delete(self, w, lo, width):
            self.sim.step(w, "delete", {"lo": lo, "hi": lo + width})

        @rule(w=W, lo=st.integers(0, 30), width=st.integers(1, 6))
        def update(self, w, lo, width):
            self.sim.step(w, "update", {"lo": lo, "hi": lo + width})

        @rule(w=W)
        def add_columns(self, w):
            self.n += 1
            self.sim.step(w, "add_columns", {"name": f"c{self.n}"})

        @rule(w=W)
        def compact(self, w):
            self.sim.step(w, "compact")

        @rule(w=W, n=st.integers(1, 3))
        def overwrite(self, w, n):
            self.sim.step(w, "overwrite", {"n": n})

        @rule(w=W, key=st.sampled_from(CONFIG_KEYS))
        def config(self, w, key):
            self.n += 1
            self.sim.step(w, "config", {"key": key, "value": str(self.n)})

        @rule(w=W)
        def tag(self, w):
            self.n += 1
            self.sim.step(w, "tag", {"name": f"t{self.n}"})

        @invariant()
        def history_is_contiguous(self):
            if hasattr(self, "sim"):
                self.sim.check_history()

        def teardown(self):
            if hasattr(self, "sim"):
                self.sim.check_all()

    return ConcurrentWriters


def process_runner(pool):
    """A runner that executes each operation in ``pool`` (a ProcessPoolExecutor)."""

    def run(uri, opts, read_version, op, params):
        return pool.submit(execute, uri, opts, read_version, op, params).result(timeout=120)

    return run
