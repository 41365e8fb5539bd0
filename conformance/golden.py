"""Golden fixtures: small Lance tables with the logical rows every reader must find in them.

A case lives in ``fixtures/golden/<case-id>/``::

    case.json             what the case is (schema: conformance/schemas/case.schema.json):
                          {"id", "title", "spec": [{"file", "section", "clause"}],
                           "features": [...], "producer": "reference 0.1.0"|"pylance 14.0.2",
                           "table": {"shipped": bool, "reason"?},
                           "expected": {"outcome": "read"} |
                                       {"outcome": "reject", "when": "read"|"commit",
                                        "error": "<reference error class>", "operation"?},
                           "reads": [{"id", "path", "version", "rows", "row_ids",
                                      "external_store"?}],
                           "external_store"?: {"kind": "sqlite", "file",
                                               "latest_with_store", "latest_without_store"}}
    table/                the dataset (relative paths only, so the folder can move)
    expected/v{N}.arrow   Arrow IPC file of the logical rows of one read (``_rowid`` when
                          the case is about row ids); other datasets' reads are ``{label}/v{N}.arrow``
    expected/versions.json  per read: row count, schema and the tags naming that version;
                          the tags of the table
    expected/files.json   sha256 of every file of ``table/`` (shipped cases)

A read is named by its dataset's label: the path under ``table/`` (``.`` for the table
itself), or a stable name where the path is not stable (the object id of a table in a V2
namespace, whose folder name holds a random hash). A read marked ``external_store`` can only
be made by a reader that uses the case's external manifest store (a SQLite file next to
``table/``); ``external_store`` in case.json gives the latest version with and without it.

The case id never changes. A case whose table must hold absolute paths (branches and
shallow clones keep absolute base paths, as the spec and pylance require; so do the
base-path cases; the external store keys its rows by the table's absolute location) is not shipped:
``table.shipped`` is false and the table is generated again wherever it is needed
(verification, the reader suite), from the same script.

Generation runs the case's operation script (:mod:`conformance.harness.scenarios`)
through a producer adapter (``reference`` or ``pylance``), reads the result back with the
reference reader, and checks it against the script's logical model and against pylance
when it is installed, so a shipped expectation is agreed by three parties.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa

from .harness import scenarios as sc

SPEC_000 = "000_3e075592ae1437fa.txt"
SPEC_001 = "001_9e3dafb7e0a07ec4.txt"
SPEC_002 = "002_2d6a3974b922c8e6.txt"
SPEC_003 = "003_005c0fe32539c239.txt"
SPEC_004 = "004_0654a22beabd64cd.txt"
PRODUCERS = {"reference": "reference 0.1.0", "pylance": "pylance 14.0.2"}
DEFAULT_DIR = Path(__file__).resolve().parent.parent / "fixtures" / "golden"
SCHEMA_PATH = Path(__file__).resolve().parent / "schemas" / "case.schema.json"


def ref(file: str, section: str, clause: str) -> dict:
    return {"file": file, "section": section, "clause": clause}


# Spec clauses the cases cite (quoted from ../shared/spec beside the repository).
C_FRAGMENTS = ref(SPEC_001, "Dataset Update and Schema Evolution",
                  "Appending is done by appending new Fragment to the dataset.")
C_ADD_COLS = ref(SPEC_001, "Dataset Update and Schema Evolution",
                 "While adding columns is done by adding new DataFile of the new columns to each Fragment.")
C_OVERWRITE = ref(SPEC_001, "Dataset Update and Schema Evolution",
                  "Overwrite a dataset can be done by resetting the Fragment list of the Manifest.")
C_DELETE = ref(SPEC_001, "Dataset Update and Schema Evolution",
               "Readers should filter out row ids contained in these deletion files during a scan or ANN search.")
C_DEL_ARROW = ref(SPEC_001, "Dataset Update and Schema Evolution",
                  "Arrow files: which store a column with a flat vector of indices")
C_DEL_ROARING = ref(SPEC_001, "Dataset Update and Schema Evolution",
                    "Roaring bitmaps: which store the indices as compressed bitmaps.")
C_FLAGS = ref(SPEC_001, "Feature Flags",
              "Readers should check the reader_feature_flags to see if there are any flag it is not aware of.")
C_COMMIT = ref(SPEC_001, "Committing Datasets",
               "A new version of a dataset is committed by writing a new manifest file to the _versions directory.")
C_CONFLICT_UNKNOWN = ref(SPEC_001, "Conflict resolution",
                         "If the transaction file has an unknown operation, assume it conflicts.")
C_ROWIDS = ref(SPEC_001, "Assigning row ids",
               "Row ids are assigned in a monotonically increasing sequence.")
C_ROWID_SEQ = ref(SPEC_001, "Row ID sequences",
                  "The row id values for a fragment are stored in a RowIdSequence protobuf message.")
C_FILE_VERSION = ref(SPEC_003, "File Version",
                     "The Lance file format has gone through a number of changes including a breaking "
                     "change from version 1 to version 2.")
C_DATA_NAMES = ref(SPEC_000, "Data Files", "Pattern: data/{uuid-based-filename}.lance")
C_PACKED_COLUMN = ref(SPEC_004, "DataFile",
                      "or it could be encoded into a single packed column.")
C_DEL_NAMES = ref(SPEC_000, "Deletion Files",
                  "Pattern: _deletions/{fragment_id}-{read_version}-{id}.{extension}")
C_TXN_NAMES = ref(SPEC_000, "Transaction Files", "Pattern: _transactions/{read_version}-{uuid}.txn")
C_MANIFEST_NAMES = ref(SPEC_000, "Manifest Files",
                       "Manifest files are stored in the _versions/ directory with naming schemes "
                       "that support atomic commits.")
C_PORTABLE = ref(SPEC_000, "Dataset Portability",
                 "To port a dataset to a new location, simply copy all contents from the dataset root directory.")
C_CLONE = ref(SPEC_000, "Shallow Clone",
              "Shallow clones create a new dataset that references data files from a source dataset without copying:")
C_CONFIG = ref(SPEC_004, "Manifest", "map<string, string> config = 16;")
C_TAG = ref(SPEC_004, "Manifest", "string tag = 8;")
C_BRANCH = ref(SPEC_004, "Manifest", "optional string branch = 20;")
C_READER_FLAGS = ref(SPEC_004, "Manifest",
                     "If a reader does not recognize a flag that is set, it")
C_NAMESPACE_V1 = ref(SPEC_002, "V1: Directory Listing",
                     "In V1, a table exists in a Lance directory namespace if a table directory of the "
                     "specific name exists.")
C_INDEX = ref(SPEC_004, "IndexMetadata",
               "Unique ID of an index. It is unique across all the dataset versions.")
C_LEGACY = ref(SPEC_003, "File Version", "0.1 Any Any This is the initial Lance format.")
C_EXTERNAL_STORE = ref(SPEC_001, "External Manifest Store",
                       "A reader unaware of the external manifest store could read a table that uses "
                       "it, but it might be up to one version behind the true latest version of the table.")
C_EXTERNAL_SUPPLEMENT = ref(SPEC_001, "External Manifest Store",
                            "The external manifest store supplements but does not replace the manifests "
                            "in object storage.")
C_PAGE_STATS = ref(SPEC_001, "Page-level statistics format",
                   "Page-level statistics are stored as arrays within the Lance file.")
C_STAT_VALUES = ref(SPEC_001, "Statistic values",
                    "Three types of statistics are stored per column: null count, min value, max value.")
C_HOT_COLD = ref(SPEC_000, "Hot/Cold Tiering",
                 "This allows seamless querying across storage tiers without data movement.")
C_MULTI_REGION = ref(SPEC_000, "Multi-Region Distribution",
                     "Compute jobs can read data from the nearest region without data transfer.")
C_BASE_ROOT = ref(SPEC_000, "Base Path System",
                  "For dataset roots (when is_dataset_root is true), the full path includes standard "
                  "subdirectories: data files are located under data/, deletion files under "
                  "_deletions/, and indices under _indices/.")
C_BASE_NOT_ROOT = ref(SPEC_000, "Base Path System",
                      "For non-root base paths (when is_dataset_root is false), the base path points "
                      "directly to the file directory, and the file path is appended directly without "
                      "subdirectory prefixes.")
C_NAMESPACE_V2 = ref(SPEC_002, "V2: Manifest",
                     "V2 uses a special __manifest table (a Lance table) stored in the namespace "
                     "directory to track all tables")
C_NAMESPACE_NESTED = ref(SPEC_002, "V2: Manifest",
                         "Nested namespaces: Support for hierarchical namespace organization")
C_INDEX_DETAILS = ref(SPEC_004, "IndexMetadata", "google.protobuf.Any index_details = 6;")
C_MEM_WAL = ref(SPEC_004, "MemWAL Index Types",
                "Region manifest containing epoch-based fencing and WAL state.")
C_WRITER_FLAGS = ref(SPEC_001, "Feature Flags", "Writers should check writer_feature_flags.")
C_DATAFILE_VERSION = ref(SPEC_004, "DataFile", "The major file version used to create the file")


@dataclass
class GoldenCase:
    """One golden case: metadata plus how to build its table."""

    id: str
    title: str
    spec: list[dict]
    features: list[str]
    script: list[dict] = field(default_factory=list)
    producer: str = "reference"
    producers: tuple[str, ...] = ("reference", "pylance")
    build: Callable | None = None          # build(table_dir, producer_adapter) -> extra reads
    post: Callable | None = None           # post(table_dir) after the script (corruptions)
    shipped: bool = True
    not_shipped_reason: str = ""
    row_ids: bool = False
    expected: dict = field(default_factory=lambda: {"outcome": "read"})
    extra_paths: tuple[str, ...] = ()      # other dataset paths under table/ to read
    # (label, path) of every dataset to read, found in the built table (paths that are
    # not stable, such as the hashed directories of a V2 namespace); labels name the reads
    read_paths: Callable[[Path], list[tuple[str, str]]] | None = None
    siblings: tuple[str, ...] = ()         # folders built next to table/ (base paths, stores)
    external_store: bool = False           # committed through the SQLite external store
    blob_columns: tuple[str, ...] = ()     # blob v2 columns whose bytes each read also checks


def _d(gen: str, n: int, start: int = 0) -> dict:
    return {"gen": gen, "n": n, "start": start}


# -- special builders ------------------------------------------------------------------------

def _latest_manifest(table: Path) -> Path:
    from conformance.invalid import latest_manifest

    return latest_manifest(table)


def _post_unknown_reader_flag(table: Path) -> None:
    from conformance.invalid import rewrite_manifest

    rewrite_manifest(_latest_manifest(table),
                     lambda m: setattr(m, "reader_feature_flags", m.reader_feature_flags | 1 << 20))


def _post_unknown_encoding(table: Path) -> None:
    """Rename the page layout type of every page of every data file to one no reader knows
    (same length, so no offset moves)."""
    old = b"/lance.encodings21.PageLayout"
    new = b"/lance.encodings21.PageLayouX"
    changed = 0
    for p in sorted((table / "data").glob("*.lance")):
        data = p.read_bytes()
        if old in data:
            p.write_bytes(data.replace(old, new))
            changed += 1
    if not changed:
        raise RuntimeError("no 2.1 page layout found to corrupt")


# Transaction field 999 (length-delimited, empty): an operation no implementation knows.
UNKNOWN_OPERATION_FIELD = b"\xba\x3e\x00"


def _post_unknown_txn_operation(table: Path) -> None:
    from conformance.invalid import edit_transaction_everywhere

    def edit(t):
        op = t.WhichOneof("operation")
        if op:
            t.ClearField(op)
        t.MergeFromString(UNKNOWN_OPERATION_FIELD)

    edit_transaction_everywhere(table, edit)


def _build_legacy(table: Path, producer) -> None:
    import lance

    lance.write_dataset(sc.table_for(_d("mixed", 16)), str(table), data_storage_version="legacy")
    lance.write_dataset(sc.table_for(_d("mixed", 4, 16)), str(table), mode="append")


def _build_scalar_index(table: Path, producer) -> None:
    import lance

    lance.write_dataset(sc.table_for(_d("small", 40)), str(table))
    lance.dataset(str(table)).create_scalar_index("id", "BTREE")
    lance.write_dataset(sc.table_for(_d("small", 5, 40)), str(table), mode="append")


def _build_namespace(table: Path, producer) -> None:
    table.mkdir(parents=True, exist_ok=True)
    producer.apply(str(table / "alpha.lance"), {"op": "create"}, sc.table_for(_d("small", 6)))
    producer.apply(str(table / "beta.lance"), {"op": "create"}, sc.table_for(_d("ids", 3, 100)))


def _build_branch(table: Path, producer) -> None:
    from reference_impl.dataset import open_dataset

    producer.apply(str(table), {"op": "create"}, sc.table_for(_d("small", 10)))
    producer.apply(str(table), {"op": "append"}, sc.table_for(_d("small", 2, 10)))
    if producer.name == "pylance":
        import lance
        ds = lance.dataset(str(table))
        b = ds.create_branch("dev", 1)
        lance.write_dataset(sc.table_for(_d("small", 3, 50)), b.uri, mode="append")
    else:
        b = open_dataset(str(table)).create_branch("dev", 1)
        from reference_impl.write import write_dataset
        write_dataset(sc.table_for(_d("small", 3, 50)), str(table / "tree" / "dev"), mode="append")


def _build_clone(table: Path, producer) -> None:
    src = table.parent / "clone-source"
    producer.apply(str(src), {"op": "create"}, sc.table_for(_d("small", 8)))
    producer.apply(str(src), {"op": "delete", "where": "id < 2"})
    if producer.name == "pylance":
        import lance
        lance.dataset(str(src)).shallow_clone(str(table), 2)
    else:
        from reference_impl.dataset import open_dataset
        open_dataset(str(src)).shallow_clone(str(table), 2)


def _build_bases(names: tuple[str, ...], dataset_root: bool):
    """A pylance table whose writes go to other base paths, one write per base (the
    ``names`` are folders next to ``table/``): ``is_dataset_root`` true puts files under
    ``{base}/data/``, false directly in ``{base}/``. A delete leaves the deletion file in
    the table's own ``_deletions/`` (it carries no base id)."""

    def build(table: Path, producer) -> None:
        import lance
        from lance import DatasetBasePath

        bases = [DatasetBasePath(str(table.parent / n), name=n, is_dataset_root=dataset_root)
                 for n in names]
        start = 0
        for i, name in enumerate(names):
            n = 6 if i == 0 else 3
            data = sc.table_for(_d("small", n, start))
            if i == 0:
                lance.write_dataset(data, str(table), initial_bases=bases, target_bases=[name])
            else:
                lance.write_dataset(data, str(table), mode="append", target_bases=[name])
            start += n
        lance.dataset(str(table)).delete("id = 1")

    return build


def _build_page_stats(table: Path, producer) -> None:
    """Legacy files of several pages (groups of 8 rows), so their statistics have one
    entry per page: ints, floats (a zero among them) and strings, with nulls."""
    import lance

    def rows(start: int, n: int) -> pa.Table:
        ids = list(range(start, start + n))
        return pa.table({
            "id": pa.array(ids, pa.int64()),
            "score": pa.array([None if i % 5 == 3 else (i - 4) / 4 for i in ids], pa.float64()),
            "name": pa.array([None if i % 7 == 6 else f"n{i:03d}" for i in ids], pa.string()),
        })

    lance.write_dataset(rows(0, 20), str(table), data_storage_version="legacy", max_rows_per_group=8)
    lance.write_dataset(rows(20, 5), str(table), mode="append", max_rows_per_group=8)


def _index_rows(n: int, start: int = 0) -> pa.Table:
    import numpy as np

    ids = np.arange(start, start + n, dtype=np.int64)
    vec = np.random.default_rng(start + 7).standard_normal(n * 4).astype(np.float32)
    return pa.table({
        "id": ids,
        "category": pa.array([f"c{i % 4}" for i in ids]),
        "labels": pa.array([[f"l{i % 3}", f"l{i % 5}"] for i in ids], pa.list_(pa.string())),
        "text": pa.array([f"word{i % 7} common text{i % 3}" for i in ids]),
        "vec": pa.FixedSizeListArray.from_arrays(pa.array(vec), 4),
    })


def _build_index_types(table: Path, producer) -> None:
    """BITMAP, LABEL_LIST and INVERTED scalar indices and a small IVF_PQ vector index,
    then an append the indices do not cover."""
    import lance

    ds = lance.write_dataset(_index_rows(256), str(table))
    ds.create_scalar_index("category", "BITMAP")
    ds.create_scalar_index("labels", "LABEL_LIST")
    ds.create_scalar_index("text", "INVERTED")
    ds.create_index("vec", "IVF_PQ", num_partitions=1, num_sub_vectors=2)
    lance.write_dataset(_index_rows(4, 256), str(table), mode="append")


def _build_mem_wal(table: Path, producer) -> None:
    """A BTREE index, MemWAL initialised with two hash buckets, and one shard written once
    (its WAL is not merged, so the table rows are those of the base table)."""
    import uuid as uuid_mod

    import lance

    ds = lance.write_dataset(sc.table_for(_d("ids", 20)), str(table))
    ds.create_scalar_index("id", "BTREE")
    lance.dataset(str(table)).initialize_mem_wal(bucket_column="id", num_buckets=2)
    with lance.dataset(str(table)).mem_wal_writer(str(uuid_mod.UUID(int=1))) as w:
        w.put(sc.table_for(_d("ids", 3, 100)))


NAMESPACE_V2_TABLES = (["t0"], ["ns1", "t1"], ["ns1", "ns2", "t2"])


def _build_namespace_v2(table: Path, producer) -> None:
    """A directory namespace with a ``__manifest`` table: nested namespaces ``ns1`` and
    ``ns1$ns2``, a root table (compatibility mode: ``t0.lance``) and a table in each child
    namespace (V2: ``<hash>_<object_id>`` directories)."""
    from reference_impl.namespace.directory import DirectoryNamespace

    table.mkdir(parents=True, exist_ok=True)
    ns = DirectoryNamespace(str(table))
    ns.create_namespace(["ns1"])
    ns.create_namespace(["ns1", "ns2"])
    for i, tid in enumerate(NAMESPACE_V2_TABLES):
        ns.create_table(tid, sc.table_for(_d("small", 3 + i, 10 * i)))


def _namespace_v2_paths(table: Path) -> list[tuple[str, str]]:
    """(object id, location) of every table the namespace's ``__manifest`` lists."""
    from reference_impl.namespace.directory import DirectoryNamespace

    ns = DirectoryNamespace(str(table))
    out = []
    for tid in NAMESPACE_V2_TABLES:
        out.append(("$".join(tid), ns.describe_table(tid).location))
    return out


EXTERNAL_STORE_FILE = "external-store.sqlite"


def _build_external_store(table: Path, producer) -> None:
    """Three commits through the SQLite external manifest store; the third stops right
    after its commit point (the KV row names the staged ``{final}-{uuid}`` manifest, the
    final manifest was never copied), so only a reader with the store sees version 3."""
    from reference_impl.dataset import open_dataset
    from reference_impl.table import commit as commit_mod
    from reference_impl.table import operations
    from reference_impl.table.external_store import SQLiteManifestStore
    from reference_impl.write import write_dataset, write_fragments

    kv = SQLiteManifestStore(str(table.parent / EXTERNAL_STORE_FILE))
    try:
        write_dataset(sc.table_for(_d("small", 5)), str(table), external_store=kv)
        write_dataset(sc.table_for(_d("small", 3, 5)), str(table), mode="append", external_store=kv)
        ds = open_dataset(str(table))
        version = ds.manifest.data_format.version
        frags = write_fragments(ds.store, sc.table_for(_d("small", 2, 8)), list(ds.manifest.fields),
                                file_version=version)

        class _Stop(Exception):
            pass

        def stop_after_commit_point(step: str) -> None:
            if step == "commit":
                raise _Stop

        try:
            commit_mod.commit_transaction(ds.store, operations.append(ds.version, frags),
                                          data_format=("lance", version), external_store=kv,
                                          crash_after=stop_after_commit_point)
        except _Stop:
            pass
        else:
            raise RuntimeError("the staged commit did not stop after its commit point")
    finally:
        kv.close()


def external_store_read(adapter, table: Path, version: int, *, with_row_id: bool = False) -> pa.Table:
    """Read ``version`` of ``table`` with its external manifest store (the file next to it),
    on a copy: a reader with the store finishes a staged commit, which changes the table."""
    from .harness.adapter import Unsupported

    fn = getattr(adapter, "read_with_external_store", None)
    if fn is None:
        raise Unsupported(f"{adapter.name} has no SQLite external manifest store reader")
    with tempfile.TemporaryDirectory(prefix="lance-golden-ext-") as tmp:
        copy = Path(tmp) / "table"
        shutil.copytree(table, copy)
        store_file = Path(tmp) / EXTERNAL_STORE_FILE
        shutil.copyfile(table.parent / EXTERNAL_STORE_FILE, store_file)
        t = fn(str(copy), version, str(store_file), with_row_id=with_row_id)
        return pa.table({n: c.combine_chunks() for n, c in zip(t.column_names, t.columns, strict=True)},
                        schema=t.schema) if t.num_rows else t


def _build_blob_v2(table: Path, producer) -> None:
    """Blob v2 (2.2): every kind a dataset keeps to itself, then an append and a delete."""
    import lance
    from lance.blob import BlobType, blob_array

    from .invalid_blob import THRESHOLDS, blob_values

    def rows(start, values):
        field = pa.field("blob", BlobType(), metadata=THRESHOLDS)
        return pa.Table.from_arrays(
            [pa.array(range(start, start + len(values)), pa.int64()), blob_array(values)],
            schema=pa.schema([pa.field("id", pa.int64()), field]))

    lance.write_dataset(rows(0, blob_values()), str(table), data_storage_version="2.2",
                        max_rows_per_file=4)
    lance.write_dataset(rows(7, [b"appended-" * 3, None, b"x" * 2000]), str(table), mode="append")
    lance.dataset(str(table)).delete("id = 3")


def blob_digests(blobs: list) -> list:
    """The language-neutral form of expected blob bytes: per row ``null`` or
    ``{"size": n, "sha256": hex}``."""
    import hashlib

    return [None if b is None else {"size": len(b), "sha256": hashlib.sha256(b).hexdigest()}
            for b in blobs]


def blob_reads(adapter, uri: str, version: int, columns: tuple[str, ...], num_rows: int) -> dict:
    """``{column: blob_digests(every row in scan order)}`` as ``adapter`` reads them."""
    return {c: blob_digests(adapter.take_blobs(uri, version, c, list(range(num_rows))))
            for c in columns}


def _blobs_name(path: str, version: int) -> str:
    return f"blobs-v{version}.json" if path == "." else f"{path}/blobs-v{version}.json"


def _post_unknown_writer_flag(table: Path) -> None:
    from conformance.invalid import rewrite_manifest

    rewrite_manifest(_latest_manifest(table),
                     lambda m: setattr(m, "writer_feature_flags", m.writer_feature_flags | 1 << 20))


def _post_datafile_version(table: Path) -> None:
    """Every DataFile of the (2.1) table claims file version 2.0; the footers say 2.1."""
    from conformance.invalid import rewrite_manifest

    def edit(m):
        for frag in m.fragments:
            for df in frag.files:
                df.file_major_version, df.file_minor_version = 2, 0

    rewrite_manifest(_latest_manifest(table), edit)


_NOT_SHIPPED = ("its manifests hold absolute base paths (branch and clone references are "
                "absolute per spec 000 and pylance), so the table is generated where it is used")

CASES: dict[str, GoldenCase] = {}


def _case(c: GoldenCase) -> GoldenCase:
    CASES[c.id] = c
    return c


_case(GoldenCase("types-2.0", "every column kind stored with file version 2.0",
                 [C_FILE_VERSION, C_DATA_NAMES], ["data_storage_version=2.0", "types"],
                 [{"op": "create", "data": _d("mixed", 24), "data_storage_version": "2.0"},
                  {"op": "append", "data": _d("mixed", 8, 24)}]))
_case(GoldenCase("types-2.1", "every column kind, nested ones included, with file version 2.1",
                 [C_FILE_VERSION], ["data_storage_version=2.1", "types", "nested"],
                 [{"op": "create", "data": _d("mixed", 24), "data_storage_version": "2.1"}]))
_case(GoldenCase("nested-2.1", "structs, lists, large lists and fixed-size lists in 2.1",
                 [C_FILE_VERSION], ["data_storage_version=2.1", "nested"],
                 [{"op": "create", "data": _d("nested", 24), "data_storage_version": "2.1"}]))
_case(GoldenCase("types-2.2", "every Arrow type (decimals, dates, times, maps, dictionaries, "
                 "extension types, nulls) with file version 2.2",
                 [C_FILE_VERSION], ["data_storage_version=2.2", "types", "all-types"],
                 [{"op": "create", "data": _d("all_types", 30),
                   "data_storage_version": "2.2"}],
                 producer="pylance", producers=("pylance",)))
_case(GoldenCase("types-2.3", "every Arrow type with file version 2.3 (unstable planar pages: dense "
                 "and sparse structure, chunked, zipped and constant values), appended and deleted",
                 [C_FILE_VERSION], ["data_storage_version=2.3", "types", "all-types", "delete"],
                 [{"op": "create", "data": _d("all_types", 30), "data_storage_version": "2.3"},
                  {"op": "append", "data": _d("all_types", 12)},
                  {"op": "delete", "where": "id < 4 OR id = 20"}],
                 producer="pylance", producers=("pylance",)))
_case(GoldenCase("legacy-file", "a table of legacy (0.1) data files",
                 [C_LEGACY, C_FILE_VERSION], ["data_storage_version=legacy", "legacy"],
                 producer="pylance", producers=("pylance",), build=_build_legacy))
_case(GoldenCase("append-fragments", "appends add fragments; several data files per write",
                 [C_FRAGMENTS, C_DATA_NAMES, C_TXN_NAMES], ["append", "fragments"],
                 [{"op": "create", "data": _d("small", 25), "max_rows_per_file": 10},
                  {"op": "append", "data": _d("small", 5, 25)}]))
_case(GoldenCase("deletion-arrow", "a few rows deleted: Arrow deletion files",
                 [C_DELETE, C_DEL_ARROW, C_DEL_NAMES], ["delete", "deletion-arrow"],
                 [{"op": "create", "data": _d("small", 20)}, {"op": "delete", "where": "id < 3"},
                  {"op": "delete", "where": "category = 'c7'"}]))
_case(GoldenCase("deletion-roaring", "many rows deleted: a Roaring bitmap deletion file",
                 [C_DELETE, C_DEL_ROARING, C_DEL_NAMES], ["delete", "deletion-roaring"],
                 [{"op": "create", "data": _d("ids", 6000)}, {"op": "delete", "where": "id >= 50"}]))
_case(GoldenCase("stable-row-ids", "stable row ids kept through delete, update and compaction",
                 [C_ROWIDS, C_ROWID_SEQ], ["stable_row_ids", "delete", "update", "compact"],
                 [{"op": "create", "data": _d("small", 12), "stable_row_ids": True,
                   "max_rows_per_file": 6},
                  {"op": "delete", "where": "id = 1"},
                  {"op": "update", "set": {"category": "'u'"}, "where": "id = 4"},
                  {"op": "compact", "target_rows_per_fragment": 100}],
                 row_ids=True))
_case(GoldenCase("schema-evolution", "add (all-null and merged) columns, then drop one",
                 [C_ADD_COLS], ["add_columns", "merge", "drop_columns"],
                 [{"op": "create", "data": _d("small", 10)},
                  {"op": "add_columns", "columns": [["extra", "int32"]]},
                  {"op": "merge", "data": _d("keyed", 10), "on": "id"},
                  {"op": "drop_columns", "columns": ["category"]}]))
_case(GoldenCase("update", "update rewrites rows", [C_FRAGMENTS], ["update"],
                 [{"op": "create", "data": _d("small", 10)},
                  {"op": "update", "set": {"category": "'new'"}, "where": "id >= 5"}]))
_case(GoldenCase("overwrite", "overwrite resets the fragment list", [C_OVERWRITE], ["overwrite"],
                 [{"op": "create", "data": _d("small", 10)},
                  {"op": "overwrite", "data": _d("mixed", 4, 100)}]))
_case(GoldenCase("restore", "restore makes an old version the latest again", [C_COMMIT],
                 ["restore"],
                 [{"op": "create", "data": _d("small", 10)}, {"op": "delete", "where": "id < 5"},
                  {"op": "restore", "version": 1}]))
_case(GoldenCase("compaction", "compaction rewrites small fragments", [C_FRAGMENTS],
                 ["compact"],
                 [{"op": "create", "data": _d("small", 4)}, {"op": "append", "data": _d("small", 4, 4)},
                  {"op": "delete", "where": "id = 2"},
                  {"op": "compact", "target_rows_per_fragment": 100}]))
_case(GoldenCase("config", "table config set (writer flag 8)", [C_CONFIG], ["config"],
                 [{"op": "create", "data": _d("small", 5)},
                  {"op": "update_config", "values": {"lance.conformance.k": "v"}}]))
_case(GoldenCase("tags", "tags name versions", [C_TAG], ["tags"],
                 [{"op": "create", "data": _d("small", 5)}, {"op": "append", "data": _d("small", 5, 5)},
                  {"op": "tag", "action": "create", "name": "v-one", "version": 1},
                  {"op": "tag", "action": "create", "name": "two", "version": 2}]))
_case(GoldenCase("v1-manifest-names", "V1 manifest names ({version}.manifest)",
                 [C_MANIFEST_NAMES], ["v1-names"],
                 [{"op": "create", "data": _d("small", 6), "v2_manifest_paths": False},
                  {"op": "append", "data": _d("small", 3, 6)}]))
_case(GoldenCase("portable-copy", "a table read after being moved (relative paths only)",
                 [C_PORTABLE], ["portability"],
                 [{"op": "create", "data": _d("small", 6)}, {"op": "delete", "where": "id = 0"}]))
_case(GoldenCase("index-scalar", "a BTREE index over part of the fragments; readers ignore "
                 "what they do not use", [C_INDEX], ["indices"], producer="pylance",
                 producers=("pylance",), build=_build_scalar_index))
_case(GoldenCase("namespace-dir-v1", "a V1 directory namespace of two tables",
                 [C_NAMESPACE_V1], ["namespace"], build=_build_namespace,
                 extra_paths=("alpha.lance", "beta.lance")))
_case(GoldenCase("branches", "a branch made from version 1 with its own append",
                 [C_BRANCH], ["branches"], build=_build_branch, shipped=False,
                 not_shipped_reason=_NOT_SHIPPED, extra_paths=(".", "tree/dev")))
_case(GoldenCase("shallow-clone", "a shallow clone of version 2 of another table",
                 [C_CLONE], ["shallow_clone", "base_paths"], build=_build_clone, shipped=False,
                 not_shipped_reason=_NOT_SHIPPED))
_case(GoldenCase("reject-unknown-reader-flag", "a reader must refuse an unknown reader flag",
                 [C_FLAGS, C_READER_FLAGS], ["feature_flags", "must-reject"],
                 [{"op": "create", "data": _d("small", 5)}], post=_post_unknown_reader_flag,
                 expected={"outcome": "reject", "when": "read", "error": "UnsupportedFeature"}))
_case(GoldenCase("reject-unknown-encoding", "a reader must refuse a page layout it does not know",
                 [C_FILE_VERSION], ["encodings", "must-reject"],
                 [{"op": "create", "data": _d("ids", 64), "data_storage_version": "2.1"}],
                 post=_post_unknown_encoding,
                 expected={"outcome": "reject", "when": "read", "error": "FormatError"}))
_case(GoldenCase("reject-unknown-txn-operation",
                 "a writer must treat a transaction of unknown operation as a conflict",
                 [C_CONFLICT_UNKNOWN], ["conflicts", "must-reject"],
                 [{"op": "create", "data": _d("small", 5)}, {"op": "append", "data": _d("small", 2, 5)}],
                 post=_post_unknown_txn_operation,
                 expected={"outcome": "reject", "when": "commit", "error": "CommitConflict",
                           "operation": {"op": "append", "data": _d("small", 1, 90),
                                         "read_version": 1}}))

_NOT_SHIPPED_BASES = ("its manifests hold the absolute paths of its base paths (spec 000: \"The "
                      "path field specifies an absolute path interpretable by the object store.\"), "
                      "so the table and its base folders are generated where they are used")
_NOT_SHIPPED_STORE = ("the external store keys its rows by the dataset's absolute location "
                      "(base_uri), so the table and its SQLite store are generated where they are used")
_case(GoldenCase("base-paths-hot-cold", "hot/cold tiering: two base paths, both dataset roots, "
                 "one write in each, a delete in the table itself",
                 [C_HOT_COLD, C_BASE_ROOT], ["base_paths", "is_dataset_root=true", "hot-cold"],
                 producer="pylance", producers=("pylance",), build=_build_bases(("hot", "cold"), True),
                 shipped=False, not_shipped_reason=_NOT_SHIPPED_BASES, siblings=("hot", "cold")))
_case(GoldenCase("base-paths-multi-region", "multi-region distribution: three dataset-root base "
                 "paths, one fragment in each",
                 [C_MULTI_REGION, C_BASE_ROOT], ["base_paths", "is_dataset_root=true", "multi-region"],
                 producer="pylance", producers=("pylance",),
                 build=_build_bases(("us-east", "eu-west", "ap-south"), True),
                 shipped=False, not_shipped_reason=_NOT_SHIPPED_BASES,
                 siblings=("us-east", "eu-west", "ap-south")))
_case(GoldenCase("base-paths-not-root", "base paths that are not dataset roots: data files "
                 "directly in the base folders",
                 [C_BASE_NOT_ROOT], ["base_paths", "is_dataset_root=false"],
                 producer="pylance", producers=("pylance",), build=_build_bases(("files-a", "files-b"), False),
                 shipped=False, not_shipped_reason=_NOT_SHIPPED_BASES, siblings=("files-a", "files-b")))
_case(GoldenCase("external-manifest-store", "commits through the SQLite external manifest store; "
                 "the last one staged (in the store, not yet copied to its final name)",
                 [C_EXTERNAL_STORE, C_EXTERNAL_SUPPLEMENT], ["external_manifest_store", "staged-commit"],
                 producers=("reference",), build=_build_external_store, shipped=False,
                 not_shipped_reason=_NOT_SHIPPED_STORE, siblings=(EXTERNAL_STORE_FILE,),
                 external_store=True))
_case(GoldenCase("page-statistics", "legacy files with page statistics (several pages per file, "
                 "nulls, a zero float)",
                 [C_PAGE_STATS, C_STAT_VALUES, C_LEGACY], ["data_storage_version=legacy", "statistics"],
                 producer="pylance", producers=("pylance",), build=_build_page_stats))
_case(GoldenCase("namespace-dir-v2", "a V2 directory namespace: __manifest table, nested "
                 "namespaces, a root table and tables in child namespaces",
                 [C_NAMESPACE_V2, C_NAMESPACE_NESTED], ["namespace", "namespace-v2", "nested-namespaces"],
                 producers=("reference",), build=_build_namespace_v2, read_paths=_namespace_v2_paths))
_case(GoldenCase("index-types", "BITMAP, LABEL_LIST, INVERTED and IVF_PQ indices; readers "
                 "ignore what they do not use",
                 [C_INDEX, C_INDEX_DETAILS], ["indices", "bitmap", "label_list", "inverted", "ivf_pq"],
                 producer="pylance", producers=("pylance",), build=_build_index_types))
_case(GoldenCase("mem-wal", "a MemWAL index with one written shard next to a BTREE index",
                 [C_MEM_WAL, C_INDEX_DETAILS], ["indices", "mem_wal"],
                 producer="pylance", producers=("pylance",), build=_build_mem_wal))
_case(GoldenCase("blob-v2", "blob v2 columns (2.2): inline, packed and dedicated blobs, an empty "
                 "and a null one, over an append and a delete; rows read as descriptors, bytes "
                 "checked by size and sha256",
                 [C_PACKED_COLUMN, C_FILE_VERSION], ["data_storage_version=2.2", "blob-v2"],
                 producer="pylance", producers=("pylance",), build=_build_blob_v2,
                 blob_columns=("blob",)))
_case(GoldenCase("reject-unknown-writer-flag", "a writer must refuse to append to a table with "
                 "an unknown writer flag",
                 [C_FLAGS, C_WRITER_FLAGS], ["feature_flags", "must-reject"],
                 [{"op": "create", "data": _d("small", 5)}], post=_post_unknown_writer_flag,
                 expected={"outcome": "reject", "when": "commit", "error": "UnsupportedFeature",
                           "operation": {"op": "append", "data": _d("small", 1, 90)}}))
_case(GoldenCase("reject-datafile-version", "a DataFile whose version (2.0) disagrees with its "
                 "file's footer (2.1)",
                 [C_DATAFILE_VERSION, C_FILE_VERSION], ["encodings", "must-reject"],
                 [{"op": "create", "data": _d("ids", 64), "data_storage_version": "2.1"}],
                 post=_post_datafile_version,
                 expected={"outcome": "reject", "when": "read", "error": "FormatError"}))


# -- generation ------------------------------------------------------------------------------

def _adapter(producer: str):
    from .harness.adapter import load_adapter

    return load_adapter(producer)


def _read_paths(case: GoldenCase, table: Path) -> list[tuple[str, str]]:
    """(label, path) of every dataset of the case's table; the label names its reads."""
    if case.read_paths is not None:
        return case.read_paths(table)
    return [(p, p) for p in (list(case.extra_paths) or ["."])]


def external_store_latest(table: Path) -> int | None:
    """The newest version the case's SQLite external manifest store knows."""
    import sqlite3

    con = sqlite3.connect(str(table.parent / EXTERNAL_STORE_FILE))
    try:
        row = con.execute("SELECT MAX(version) FROM manifests").fetchone()
    finally:
        con.close()
    return None if row is None or row[0] is None else int(row[0])


def _reference_read(table: Path, path: str, version: int, row_ids: bool) -> pa.Table:
    from .harness.reference import ReferenceAdapter

    return ReferenceAdapter().read(str(table / path), version, with_row_id=row_ids)


def _reference_versions(uri: str) -> list[int]:
    from reference_impl.dataset import open_dataset

    return list(open_dataset(uri).versions())


def _tags(table: Path) -> dict:
    out = {}
    tdir = table / "_refs" / "tags"
    if tdir.is_dir():
        for p in sorted(tdir.glob("*.json")):
            out[p.stem] = int(json.loads(p.read_text())["version"])
    return out


def build_table(case: GoldenCase, table: Path, producer: str | None = None) -> str:
    """Build the case's table at ``table``; returns the producer name used."""
    name = producer if producer in case.producers else case.producer
    adapter = _adapter(name)
    if case.build is not None:
        case.build(table, adapter)
    else:
        for op in case.script:
            data = sc.table_for(op["data"]) if "data" in op else None
            adapter.apply(str(table), op, data)
    if case.post is not None:
        case.post(table)
    return name


def _write_arrow(path: Path, t: pa.Table) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with pa.OSFile(str(path), "wb") as f, pa.ipc.new_file(f, t.schema) as w:
        w.write_table(t)


def read_arrow(path: Path) -> pa.Table:
    with pa.memory_map(str(path)) as f:
        return pa.ipc.open_file(f).read_all()


def _rows_name(path: str, version: int) -> str:
    return f"v{version}.arrow" if path == "." else f"{path}/v{version}.arrow"


def _schema_strings(t: pa.Table) -> list[str]:
    return [f"{f.name}: {f.type}" for f in t.schema if f.name != sc.ROW_ID]


def file_hashes(table: Path) -> dict[str, str]:
    out = {}
    for p in sorted(table.rglob("*")):
        if p.is_file():
            out[p.relative_to(table).as_posix()] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def absolute_paths_in(table: Path, needles: list[str]) -> list[str]:
    """Files under ``table`` whose bytes contain one of ``needles`` (absolute paths)."""
    hits = []
    encoded = [n.encode() for n in needles if n]
    for p in sorted(table.rglob("*")):
        if p.is_file():
            data = p.read_bytes()
            if any(n in data for n in encoded):
                hits.append(p.relative_to(table).as_posix())
    return hits


def _cross_check_pylance(table: Path, path: str, version: int, expected: pa.Table, row_ids: bool):
    try:
        from .harness.pylance_adapter import PylanceAdapter
        adapter = PylanceAdapter()
        if not adapter.capabilities.read:
            return
        got = adapter.read(str(table / path), version, with_row_id=row_ids)
    except Exception as exc:  # noqa: BLE001
        raise RuntimeError(f"pylance cannot read {path}@v{version}: {exc!r}") from exc
    diff = sc.difference(got, expected, keep_row_id=row_ids)
    if diff:
        raise RuntimeError(f"pylance disagrees with the reference reader at {path}@v{version}: {diff}")


def generate_case(case: GoldenCase, out: Path, producer: str | None = None, *,
                  cross_check: bool = True) -> Path:
    """Generate ``case`` into ``out/<id>/`` (replacing it) and return that directory."""
    cdir = out / case.id
    if cdir.exists():
        shutil.rmtree(cdir)
    (cdir / "expected").mkdir(parents=True)
    table = cdir / "table"
    used = build_table(case, table, producer)
    reads, versions = [], {"reads": [], "tags": {}}
    if case.expected["outcome"] == "read":
        model = sc.run_model(case.script) if case.build is None and case.script else None
        for label, path in _read_paths(case, table):
            for v in _reference_versions(str(table / path)):
                rows = _reference_read(table, path, v, case.row_ids)
                if model is not None and path == "." and v in model.versions:
                    diff = sc.difference(rows, model.versions[v])
                    if diff:
                        raise RuntimeError(f"{case.id} v{v}: reference read differs from the model: {diff}")
                if cross_check:
                    _cross_check_pylance(table, path, v, rows, case.row_ids)
                name = _rows_name(label, v)
                _write_arrow(cdir / "expected" / name, rows)
                rid = f"{label}@v{v}" if label != "." else f"v{v}"
                reads.append({"id": rid, "path": path, "version": v, "rows": name,
                              "row_ids": case.row_ids})
                if case.blob_columns:
                    from .harness.reference import ReferenceAdapter

                    digests = blob_reads(ReferenceAdapter(), str(table / path), v,
                                         case.blob_columns, rows.num_rows)
                    if cross_check:
                        from .harness.pylance_adapter import PylanceAdapter

                        theirs = blob_reads(PylanceAdapter(), str(table / path), v,
                                            case.blob_columns, rows.num_rows)
                        if theirs != digests:
                            raise RuntimeError(f"pylance's blob bytes differ at {path}@v{v}")
                    blobs_name = _blobs_name(label, v)
                    (cdir / "expected" / blobs_name).write_text(
                        json.dumps(digests, indent=1, sort_keys=True) + "\n")
                    reads[-1]["blobs"] = blobs_name
                versions["reads"].append({"id": rid, "num_rows": rows.num_rows,
                                          "schema": _schema_strings(rows),
                                          "tags": sorted(n for n, tv in _tags(table / path).items()
                                                         if tv == v)})
        versions["tags"] = _tags(table)
        if case.external_store:
            store_doc = _external_store_reads(case, table, cdir, reads, versions)
    else:
        versions["versions"] = [v for v in _reference_versions_or_listing(table) if v is not None]
    doc = {
        "id": case.id, "title": case.title, "spec": case.spec, "features": case.features,
        "producer": PRODUCERS[used],
        "table": {"shipped": case.shipped} | ({} if case.shipped else {"reason": case.not_shipped_reason}),
        "expected": dict(case.expected) | ({"error": _observed_error(case, table)}
                                           if case.expected["outcome"] == "reject" else {}),
        "reads": reads,
    }
    if case.script:
        doc["script"] = case.script
    if case.external_store:
        doc["external_store"] = store_doc
    (cdir / "expected" / "versions.json").write_text(json.dumps(versions, indent=1, sort_keys=True) + "\n")
    if case.shipped:
        hits = absolute_paths_in(table, [str(table.resolve()), str(out.resolve())])
        if hits:
            raise RuntimeError(f"{case.id}: absolute paths stored in {hits}")
        (cdir / "expected" / "files.json").write_text(
            json.dumps(file_hashes(table), indent=1, sort_keys=True) + "\n")
    else:
        shutil.rmtree(table)
        for name in ("clone-source", *case.siblings):
            extra = table.parent / name
            if extra.is_dir():
                shutil.rmtree(extra)
            elif extra.exists():
                extra.unlink()
    (cdir / "case.json").write_text(json.dumps(doc, indent=1) + "\n")
    return cdir


def _external_store_reads(case: GoldenCase, table: Path, cdir: Path, reads: list,
                          versions: dict) -> dict:
    """The reads only a reader with the external manifest store can make (versions the
    store knows past the newest manifest in ``_versions/``), added to ``reads``."""
    from .harness.reference import ReferenceAdapter

    without = max(_reference_versions(str(table)))
    latest = external_store_latest(table)
    if latest is None or latest <= without:
        raise RuntimeError(f"{case.id}: the external store knows no version past {without}")
    for v in range(without + 1, latest + 1):
        rows = external_store_read(ReferenceAdapter(), table, v, with_row_id=case.row_ids)
        name = _rows_name(".", v)
        _write_arrow(cdir / "expected" / name, rows)
        rid = f"v{v}+store"
        reads.append({"id": rid, "path": ".", "version": v, "rows": name,
                      "row_ids": case.row_ids, "external_store": True})
        versions["reads"].append({"id": rid, "num_rows": rows.num_rows,
                                  "schema": _schema_strings(rows), "tags": []})
    return {"kind": "sqlite", "file": EXTERNAL_STORE_FILE, "latest_with_store": latest,
            "latest_without_store": without}


def _observed_error(case: GoldenCase, table: Path) -> str:
    """Run the must-reject action with the reference implementation on a copy; the error
    class it raises must be the one the case expects."""
    err = reject_error(case.expected, table, _adapter("reference"))
    if err != case.expected["error"]:
        raise RuntimeError(f"{case.id}: the reference raised {err}, expected {case.expected['error']}")
    return err


def reject_error(expected: dict, table: Path, adapter) -> str | None:
    """The class name of the error ``adapter`` raises for the must-reject action of a case
    (None when it does not refuse). A commit is tried on a temporary copy."""
    if expected["when"] == "read":
        try:
            for v in _reference_versions_or_listing(table):
                adapter.read(str(table), v)
        except Exception as exc:  # noqa: BLE001 - the class is the answer
            return _error_name(exc)
        return None
    with tempfile.TemporaryDirectory(prefix="lance-golden-") as tmp:
        copy = Path(tmp) / "t"
        shutil.copytree(table, copy)
        op = expected["operation"]
        try:
            adapter.apply(str(copy), op, sc.table_for(op["data"]) if "data" in op else None)
        except Exception as exc:  # noqa: BLE001
            return _error_name(exc)
    return None


def _error_name(exc: BaseException) -> str:
    names = {"CommitConflict", "UnsupportedFeature", "FormatError", "NotFound", "InvalidInput"}
    if getattr(exc, "error_class", None):  # an error reported by a subprocess adapter
        return str(exc.error_class)
    for cls in type(exc).__mro__:
        if cls.__name__ in names:
            return cls.__name__
    text = str(exc)
    if "conflict" in text.lower():
        return "CommitConflict"
    return type(exc).__name__


def _reference_versions_or_listing(table: Path) -> list[int | None]:
    """Versions to read for a must-reject read: the manifest numbers in ``_versions``."""
    from conformance.invalid import manifests

    found = [v for v, _ in manifests(table)]
    return found or [None]


def generate_all(out: Path, producer: str | None = None, *, cross_check: bool = True,
                 ids: list[str] | None = None) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    return [generate_case(CASES[i], out, producer, cross_check=cross_check) for i in (ids or CASES)]


SPEC_NAMES = {SPEC_000: "000", SPEC_001: "001", SPEC_002: "002", SPEC_003: "003", SPEC_004: "004"}


def cases_table_markdown() -> str:
    """The README's table of cases: id, spec sections, features, producer, shipped or
    generated (kept in sync with :data:`CASES` by a test)."""
    lines = ["| id | spec section(s) | features | producer | table |",
             "|---|---|---|---|---|"]
    for case in CASES.values():
        sections = []
        for r in case.spec:
            label = f"{SPEC_NAMES[r['file']]} {r['section']}"
            if label not in sections:
                sections.append(label)
        table = "shipped" if case.shipped else "generated"
        if case.expected["outcome"] == "reject":
            table += f"; must reject ({case.expected['when']}: {case.expected['error']})"
        lines.append(f"| `{case.id}` | {'; '.join(sections)} | {', '.join(case.features)} | "
                     f"{case.producer} | {table} |")
    return "\n".join(lines) + "\n"


# -- verification ----------------------------------------------------------------------------

def load_case(cdir: Path) -> dict:
    return json.loads((cdir / "case.json").read_text())


def check_case_json(doc: dict) -> list[str]:
    import jsonschema

    schema = json.loads(SCHEMA_PATH.read_text())
    v = jsonschema.Draft202012Validator(schema)
    return [f"case.json: {e.message} at {list(e.path)}" for e in v.iter_errors(doc)]


def materialize(cdir: Path, into: Path) -> Path:
    """The table of the case in ``cdir``: its shipped ``table/``, or one generated into
    ``into`` for a case that is not shipped."""
    doc = load_case(cdir)
    if doc["table"]["shipped"]:
        return cdir / "table"
    case = CASES[doc["id"]]
    table = into / doc["id"] / "table"
    if not table.exists():
        table.parent.mkdir(parents=True, exist_ok=True)
        build_table(case, table)
    return table


def compare_expected(a: Path, b: Path) -> list[str]:
    """Logical differences between two ``expected/`` folders."""
    problems = []
    va, vb = (json.loads((d / "versions.json").read_text()) for d in (a, b))
    if va != vb:
        problems.append(f"versions.json differs: {va} != {vb}")
    names_a = sorted(p.relative_to(a).as_posix() for p in a.rglob("*.arrow"))
    names_b = sorted(p.relative_to(b).as_posix() for p in b.rglob("*.arrow"))
    if names_a != names_b:
        problems.append(f"expected row files differ: {names_a} != {names_b}")
    for name in set(names_a) & set(names_b):
        diff = sc.difference(read_arrow(a / name), read_arrow(b / name), keep_row_id=True)
        if diff:
            problems.append(f"{name}: {diff}")
    blobs_a = {p.relative_to(a).as_posix(): json.loads(p.read_text()) for p in a.rglob("blobs-v*.json")}
    blobs_b = {p.relative_to(b).as_posix(): json.loads(p.read_text()) for p in b.rglob("blobs-v*.json")}
    if blobs_a != blobs_b:
        problems.append(f"expected blob bytes differ: {sorted(blobs_a)} vs {sorted(blobs_b)}")
    return problems


def verify_case(cdir: Path, *, regenerate: bool = True, validate_table: bool = True) -> list[str]:
    """Every problem found with the case in ``cdir`` (empty when it verifies)."""
    problems = []
    try:
        doc = load_case(cdir)
    except (OSError, ValueError) as exc:
        return [f"case.json unreadable: {exc}"]
    problems += check_case_json(doc)
    if doc.get("id") != cdir.name or doc.get("id") not in CASES:
        return problems + [f"case id {doc.get('id')!r} does not name a known case in its folder"]
    case = CASES[doc["id"]]
    exp = cdir / "expected"
    with tempfile.TemporaryDirectory(prefix="lance-golden-verify-") as tmp:
        tmp = Path(tmp)
        if doc["table"]["shipped"]:
            try:
                want = json.loads((exp / "files.json").read_text())
            except (OSError, ValueError) as exc:
                return problems + [f"expected/files.json unreadable: {exc}"]
            have = file_hashes(cdir / "table")
            for name in sorted(set(want) | set(have)):
                if want.get(name) != have.get(name):
                    problems.append(f"table/{name}: content differs from expected/files.json")
            # read a moved copy: a shipped table must not depend on where it lies
            table = tmp / "moved" / doc["id"]
            shutil.copytree(cdir / "table", table)
        else:
            table = materialize(cdir, tmp)
        problems += _check_reads(doc, table, exp, validate_table=validate_table)
        if regenerate:
            try:
                producer = "pylance" if doc["producer"].startswith("pylance") else "reference"
                regen = generate_case(case, tmp / "regen", producer, cross_check=False)
                problems += [f"regenerated: {p}" for p in compare_expected(exp, regen / "expected")]
            except Exception as exc:  # noqa: BLE001 - reported, not raised
                problems.append(f"regeneration failed: {type(exc).__name__}: {exc}")
    return problems


def _check_reads(doc: dict, table: Path, exp: Path, *, validate_table: bool) -> list[str]:
    from .harness.reference import ReferenceAdapter

    problems = []
    adapter = ReferenceAdapter()
    if doc["expected"]["outcome"] == "reject":
        err = reject_error(doc["expected"], table, adapter)
        if err != doc["expected"]["error"]:
            problems.append(f"must-reject: the reference raised {err}, expected {doc['expected']['error']}")
        return problems
    store_doc = doc.get("external_store")
    if store_doc:
        have = max(adapter.versions(str(table)))
        if have != store_doc["latest_without_store"]:
            problems.append(f"without the external store the latest version is {have}, "
                            f"expected {store_doc['latest_without_store']}")
    for r in doc["reads"]:
        try:
            want = read_arrow(exp / r["rows"])
            if r.get("external_store"):
                got = external_store_read(adapter, table, r["version"], with_row_id=r["row_ids"])
            else:
                got = adapter.read(str(table / r["path"]), r["version"], with_row_id=r["row_ids"])
        except Exception as exc:  # noqa: BLE001
            problems.append(f"{r['id']}: {type(exc).__name__}: {exc}")
            continue
        diff = sc.difference(got, want, keep_row_id=r["row_ids"])
        if diff:
            problems.append(f"{r['id']}: {diff}")
        if r.get("blobs"):
            problems += check_blob_read(adapter, table, exp, r)
    if validate_table:
        from .engine.local import validate

        for path in sorted({r["path"] for r in doc["reads"]}):
            report = validate(str(table / path), versions="all")
            if not report.conforms:
                problems.append(f"{path}: validator: {sorted(report.rules_violated())}")
    return problems


def check_blob_read(adapter, table: Path, exp: Path, r: dict) -> list[str]:
    """Problems with the blob bytes ``adapter`` reads for read ``r`` of a case."""
    want = json.loads((exp / r["blobs"]).read_text())
    got = blob_reads(adapter, str(table / r["path"]), r["version"], tuple(want),
                     len(next(iter(want.values()), [])))
    problems = []
    for column, rows in want.items():
        bad = [i for i, (g, w) in enumerate(zip(got[column], rows, strict=True)) if g != w]
        if bad:
            problems.append(f"{r['id']}: blob column {column!r}: rows {bad[:10]} differ "
                            f"(first: {got[column][bad[0]]} != {rows[bad[0]]})")
    return problems


def verify_all(root: Path = DEFAULT_DIR, *, regenerate: bool = True) -> dict[str, list[str]]:
    """Problems per case folder under ``root``; also every known case must be present."""
    out = {}
    present = {p.name for p in root.iterdir() if (p / "case.json").exists()} if root.is_dir() else set()
    for cid in sorted(present):
        out[cid] = verify_case(root / cid, regenerate=regenerate)
    for cid in CASES:
        if cid not in present:
            out[cid] = ["case missing from the fixtures folder"]
    return out

