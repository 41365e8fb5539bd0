"""Large fixtures: a deterministic table of N rows in F fragments, written in parallel.

The pattern distributed writers use (spec 001 "Dataset Update and Schema Evolution":
*"Appending is done by appending new Fragment to the dataset"*): workers write data files
on their own and hand back the ``DataFile``/``DataFragment`` metadata; one process then
commits a single transaction (``Overwrite`` to create or replace, ``Append`` to add)
naming all the new fragments. Fragment ids are assigned at commit.

Contents. Row ``i`` (0 <= i < N) depends only on ``(seed, i)``, never on the number of
fragments or tasks, so the same seed always gives the same logical rows::

    id        int64    i
    value     float64  top 53 bits of h(i) / 2**53, in [0, 1)
    bucket    int32    (h(i) >> 32) % 1000
    category  string   CATEGORIES[h(i) % len(CATEGORIES)]

with ``h(i) = splitmix64(i + splitmix64(seed))``, computed vectorised in numpy ``uint64``.
Fragment ``f`` holds rows ``[f*N//F, (f+1)*N//F)``, one data file each.

Engines. ``local`` writes the fragments in this process; ``spark`` spreads them over Spark
tasks with ``mapInArrow``: the input is one row per fragment ``(fragment, start, count)``,
each task writes its fragments with :func:`reference_impl.file.writer.write_lance_file`
and yields Arrow rows ``(fragment long, physical_rows long, data_fragment binary)``,
the serialized ``DataFragment``; the driver sorts them by fragment and commits.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

CATEGORIES = ("alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta")
SCHEMA = pa.schema([
    pa.field("id", pa.int64(), nullable=False),
    pa.field("value", pa.float64(), nullable=False),
    pa.field("bucket", pa.int32(), nullable=False),
    pa.field("category", pa.string(), nullable=False),
])
# what a Spark task returns for each fragment it wrote
RESULT_SCHEMA = pa.schema([
    pa.field("fragment", pa.int64()),
    pa.field("physical_rows", pa.int64()),
    pa.field("data_fragment", pa.binary()),
])
RESULT_DDL = "fragment long, physical_rows long, data_fragment binary"
MODES = ("create", "overwrite", "append")
# rows generated and handed to the writer at once; bounds a task's memory
CHUNK_ROWS = 1 << 18

_M64 = np.uint64(0xFFFFFFFFFFFFFFFF)


def _splitmix64(x: np.ndarray) -> np.ndarray:
    """The splitmix64 finaliser on a uint64 array (wrapping arithmetic)."""
    with np.errstate(over="ignore"):
        z = x + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def rows(seed: int, start: int, count: int) -> pa.Table:
    """Rows ``[start, start + count)`` of the table of ``seed``."""
    if start < 0 or count < 0:
        raise ValueError("start and count must not be negative")
    ids = np.arange(start, start + count, dtype=np.int64)
    key = _splitmix64(np.array([seed & 0xFFFFFFFFFFFFFFFF], dtype=np.uint64))[0]
    with np.errstate(over="ignore"):
        h = _splitmix64(ids.astype(np.uint64) + key)
    value = (h >> np.uint64(11)).astype(np.float64) * (1.0 / (1 << 53))
    bucket = ((h >> np.uint64(32)) % np.uint64(1000)).astype(np.int32)
    codes = (h % np.uint64(len(CATEGORIES))).astype(np.int32)
    category = pa.DictionaryArray.from_arrays(
        pa.array(codes), pa.array(CATEGORIES, pa.string())).cast(pa.string())
    return pa.Table.from_arrays([pa.array(ids), pa.array(value), pa.array(bucket), category],
                                schema=SCHEMA)


def expected_table(seed: int, num_rows: int) -> pa.Table:
    """The whole logical table a generation with ``seed`` and ``num_rows`` must hold."""
    return rows(seed, 0, num_rows)


def fragment_bounds(num_rows: int, fragments: int) -> list[tuple[int, int, int]]:
    """``(fragment, start, count)`` for each of ``fragments`` near-equal row ranges."""
    if fragments <= 0:
        raise ValueError("fragments must be positive")
    if num_rows < fragments:
        raise ValueError(f"{num_rows} rows cannot fill {fragments} fragments")
    return [(f, f * num_rows // fragments, (f + 1) * num_rows // fragments - f * num_rows // fragments)
            for f in range(fragments)]


@dataclass(frozen=True)
class WriteJob:
    """Everything a task needs to write fragments: plain, picklable values."""

    uri: str
    storage_options: tuple[tuple[str, str], ...]
    seed: int
    file_version: str
    fields: bytes  # serialized lance.table.Manifest carrying only ``fields``


def _fields_blob(fields) -> bytes:
    from reference_impl.proto import table_pb2

    return table_pb2.Manifest(fields=list(fields)).SerializeToString()


def _fields_of(blob: bytes):
    from reference_impl.proto import table_pb2

    return list(table_pb2.Manifest.FromString(blob).fields)


def write_fragment(job: WriteJob, fragment: int, start: int, count: int, store=None):
    """Write rows ``[start, start+count)`` as one data file; its ``DataFragment`` (id 0)."""
    from reference_impl.file.writer import write_lance_file
    from reference_impl.io.uri import open_store
    from reference_impl.proto import table_pb2
    from reference_impl.write import new_data_file_name

    store = store or open_store(job.uri, dict(job.storage_options))
    name = new_data_file_name()

    def chunks() -> Iterator[pa.RecordBatch]:
        for s in range(start, start + count, CHUNK_ROWS):
            yield from rows(job.seed, s, min(CHUNK_ROWS, start + count - s)).to_batches()

    wf = write_lance_file(store, f"data/{name}", chunks(), version=job.file_version,
                          schema_fields=_fields_of(job.fields), schema=SCHEMA)
    df = table_pb2.DataFile(path=name, fields=wf.fields, column_indices=wf.column_indices,
                            file_major_version=wf.major, file_minor_version=wf.minor,
                            file_size_bytes=wf.size)
    return table_pb2.DataFragment(id=0, files=[df], physical_rows=wf.num_rows)


def write_task(job: WriteJob, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """The ``mapInArrow`` body: write each ``(fragment, start, count)`` row's fragment."""
    from reference_impl.io.uri import open_store

    store = open_store(job.uri, dict(job.storage_options))
    for batch in batches:
        specs = batch.to_pydict()
        for f, s, c in zip(specs["fragment"], specs["start"], specs["count"], strict=True):
            frag = write_fragment(job, int(f), int(s), int(c), store=store)
            yield pa.RecordBatch.from_arrays(
                [pa.array([int(f)], pa.int64()), pa.array([int(frag.physical_rows)], pa.int64()),
                 pa.array([frag.SerializeToString()], pa.binary())], schema=RESULT_SCHEMA)


class _TaskBody:
    """A picklable callable for ``mapInArrow`` binding one :class:`WriteJob`."""

    def __init__(self, job: WriteJob):
        self.job = job

    def __call__(self, batches):
        return write_task(self.job, batches)


def _absolute(uri: str) -> str:
    from .engine.spark import _absolute as absolute

    return absolute(uri)


@dataclass
class Generated:
    """What :func:`generate` committed."""

    uri: str
    version: int
    rows: int
    fragments: int
    seed: int
    elapsed_s: float


def generate(uri: str, *, num_rows: int, fragments: int, seed: int = 0, mode: str = "create",
             engine: str = "local", master: str | None = None, spark=None,
             file_version: str = "2.1", storage_options: dict | None = None,
             partitions: int | None = None) -> Generated:
    """Write the ``seed`` table of ``num_rows`` rows in ``fragments`` fragments to ``uri``
    and commit one transaction (``Overwrite`` for create/overwrite, ``Append`` for append).

    ``engine="spark"`` writes the data files in Spark tasks (``partitions`` of them, one
    per fragment up to the session's parallelism by default)."""
    import time

    from reference_impl.errors import AlreadyExists, InvalidInput
    from reference_impl.io.uri import open_store
    from reference_impl.table import commit as commit_mod
    from reference_impl.table import operations
    from reference_impl.table.schema import arrow_to_fields, fields_to_arrow
    from reference_impl.write import STORAGE_VERSIONS, check_append_schema

    started = time.monotonic()
    if mode not in MODES:
        raise InvalidInput(f"mode must be one of {', '.join(MODES)}, not {mode!r}")
    if engine not in ("local", "spark"):
        raise InvalidInput(f"engine must be local or spark, not {engine!r}")
    if file_version not in STORAGE_VERSIONS:
        raise InvalidInput(f"unsupported data storage version {file_version!r}")
    file_version = STORAGE_VERSIONS[file_version]
    bounds = fragment_bounds(num_rows, fragments)
    target = _absolute(uri)
    store = open_store(target, storage_options)
    latest = commit_mod.latest_version_or_zero(store)
    previous = commit_mod.load_version(store, latest).manifest if latest > 0 else None
    if previous is not None and mode == "create":
        raise AlreadyExists(f"Dataset already exists: {uri}", path=uri)
    if previous is not None and mode == "append":
        check_append_schema(fields_to_arrow(previous.fields), SCHEMA)
        fields = list(previous.fields)
        file_version = previous.data_format.version or file_version
    else:
        fields = arrow_to_fields(SCHEMA)
    job = WriteJob(uri=target, storage_options=tuple(sorted((storage_options or {}).items())),
                   seed=int(seed), file_version=file_version, fields=_fields_blob(fields))

    if engine == "local":
        frags = [write_fragment(job, f, s, c, store=store) for f, s, c in bounds]
    else:
        frags = _write_on_spark(job, bounds, master=master, spark=spark, partitions=partitions)

    if previous is None or mode in ("create", "overwrite"):
        txn = operations.overwrite(latest, frags, fields)
    else:
        txn = operations.append(latest, frags)
    stable = bool(previous is not None
                  and previous.reader_feature_flags & operations.FLAG_STABLE_ROW_IDS)
    result = commit_mod.commit_transaction(store, txn, stable_row_ids=stable,
                                           data_format=("lance", file_version))
    return Generated(uri=uri, version=result.version, rows=num_rows, fragments=fragments,
                     seed=seed, elapsed_s=time.monotonic() - started)


def _write_on_spark(job: WriteJob, bounds, *, master=None, spark=None, partitions=None):
    """Spark tasks write the fragments; the DataFragments come back sorted by fragment."""
    from reference_impl.proto import table_pb2

    from .engine.spark import SparkEngineError, _short_reason
    from .spark_session import SparkUnavailable, get_session

    if spark is None:
        try:
            spark = get_session(master)
        except SparkUnavailable as exc:
            raise SparkEngineError(str(exc)) from None
    sc = spark.sparkContext
    n = partitions or min(len(bounds), max(1, sc.defaultParallelism) * 4)
    n = max(1, min(int(n), len(bounds)))
    specs = sc.parallelize([(f, s, c) for f, s, c in bounds], n).toDF(
        "fragment long, start long, count long")
    try:
        out = specs.mapInArrow(_TaskBody(job), RESULT_DDL).collect()
    except Exception as exc:  # noqa: BLE001 - Py4J / Spark job failures
        raise SparkEngineError(f"Spark write job failed: {_short_reason(exc)}") from None
    got = sorted((int(r["fragment"]), bytes(r["data_fragment"])) for r in out)
    if [f for f, _ in got] != [f for f, _, _ in bounds]:
        raise SparkEngineError(f"Spark tasks returned fragments {[f for f, _ in got][:10]}..., "
                               f"expected 0..{len(bounds) - 1}")
    return [table_pb2.DataFragment.FromString(b) for _, b in got]

