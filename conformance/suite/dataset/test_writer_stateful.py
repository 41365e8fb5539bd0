"""Random operation sequences on our writer against an in-memory model of the rows.

A hypothesis ``RuleBasedStateMachine`` applies append / overwrite / delete / update /
restore / update_config / compact to a dataset through ``reference_impl`` and the same
change to a model (one list of rows per version). After every step the latest version,
and one earlier version, read by pylance 14.0.2 (the oracle) hold exactly the model's rows,
and ``validate()`` passes. Steps that read rows (delete, update, compact) run only when
our scan (``reference_impl.scan``) is present. Few steps by default; the ``slow``
hypothesis profile runs many more.
"""

from __future__ import annotations

import os
import shutil
import tempfile

import pyarrow as pa
import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from reference_impl import dataset_ops as ops
from reference_impl.write import write_dataset

from ..table.test_commit import FV

try:
    import reference_impl.scan  # noqa: F401
    HAVE_SCAN = True
except ImportError:
    HAVE_SCAN = False

try:
    import lance
except ImportError:  # pragma: no cover - the pylance fixture reports it
    lance = None


def rows_table(rows: list[tuple[int, int]]) -> pa.Table:
    return pa.table({"id": pa.array([r[0] for r in rows], pa.int64()),
                     "v": pa.array([r[1] for r in rows], pa.int64())})


class WriterMachine(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.dir = tempfile.mkdtemp(prefix="lc-stateful-")
        self.uri = f"{self.dir}/ds"
        self.next_id = 0
        self.versions: list[list[tuple[int, int]]] = []  # index v-1 -> rows

    def teardown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def _new_rows(self, n, v):
        out = [(self.next_id + i, v) for i in range(n)]
        self.next_id += n
        return out

    def _open(self):
        from reference_impl.dataset import open_dataset

        return open_dataset(self.uri)

    @initialize(n=st.integers(0, 6), stable=st.booleans(), per_file=st.integers(1, 4))
    def create(self, n, stable, per_file):
        rows = self._new_rows(n, 0)
        self.per_file = per_file
        write_dataset(rows_table(rows), self.uri, max_rows_per_file=per_file,
                      enable_stable_row_ids=stable, data_storage_version=FV)
        self.versions.append(rows)

    @rule(n=st.integers(1, 5), v=st.integers(-3, 3))
    def append(self, n, v):
        rows = self._new_rows(n, v)
        write_dataset(rows_table(rows), self.uri, mode="append", max_rows_per_file=self.per_file)
        self.versions.append(self.versions[-1] + rows)

    @rule(n=st.integers(0, 4))
    def overwrite(self, n):
        rows = self._new_rows(n, 9)
        write_dataset(rows_table(rows), self.uri, mode="overwrite", max_rows_per_file=self.per_file)
        self.versions.append(rows)

    @rule(data=st.data())
    def restore(self, data):
        v = data.draw(st.integers(1, len(self.versions)))
        ops.restore(self._open(), v)
        self.versions.append(list(self.versions[v - 1]))

    @rule(key=st.sampled_from(["a", "b"]), value=st.sampled_from(["1", "2", None]))
    def config(self, key, value):
        ops.update_config(self._open(), {key: value})
        self.versions.append(list(self.versions[-1]))

    @precondition(lambda self: HAVE_SCAN)
    @rule(v=st.integers(-3, 3))
    def delete(self, v):
        ops.delete(self._open(), f"v = {v}")
        self.versions.append([r for r in self.versions[-1] if r[1] != v])

    @precondition(lambda self: HAVE_SCAN)
    @rule(v=st.integers(-3, 3))
    def update(self, v):
        ops.update(self._open(), {"v": "v + 10"}, where=f"v = {v}")
        self.versions.append([(i, x + 10) if x == v else (i, x) for i, x in self.versions[-1]])

    @precondition(lambda self: HAVE_SCAN)
    @rule(rows=st.integers(2, 8))
    def compact(self, rows):
        before = self._open().version
        after = ops.compact_files(self._open(), rows).version
        for _ in range(after - before):  # ReserveFragments and Rewrite change no row
            self.versions.append(list(self.versions[-1]))

    @invariant()
    def matches_model(self):
        if not self.versions:
            return
        ds = lance.dataset(self.uri)
        assert ds.version == len(self.versions)
        ds.validate()
        got = sorted(zip(*ds.to_table().to_pydict().values(), strict=True))
        assert got == sorted(self.versions[-1])
        first = lance.dataset(self.uri, version=1)
        assert sorted(zip(*first.to_table().to_pydict().values(), strict=True)) == sorted(self.versions[0])


WriterMachine.TestCase.settings = settings(
    settings.default, max_examples=min(settings.default.max_examples, 5), stateful_step_count=6)


@pytest.mark.usefixtures("pylance")
class TestWriterStateful(WriterMachine.TestCase):
    pass


@pytest.mark.slow
@pytest.mark.skipif(os.environ.get("HYPOTHESIS_PROFILE") != "slow",
                    reason="long run: set HYPOTHESIS_PROFILE=slow (tox -e slow)")
def test_writer_stateful_long(pylance):
    """Many more and longer sequences (run with ``-m slow``)."""
    from hypothesis.stateful import run_state_machine_as_test

    run_state_machine_as_test(WriterMachine, settings=settings(max_examples=200, stateful_step_count=30,
                                                               deadline=None))
