"""Write the cross-release scenarios with one release of pylance or lancedb, and read them back.

This program runs inside a release's own virtualenv; it
imports only that release (``lance`` or ``lancedb``) and pyarrow, never the kit, so any
release from 0.10 on can run it. For every scenario it writes a table under
``OUT/<scenario>/table`` and stores, for every version of that table, the rows the release
itself reads back (``OUT/<scenario>/expected/v{N}.arrows``, Arrow IPC stream format, with
``_rowid`` where the release can scan it) and a ``scenario.json``: each step with its outcome
(``done``, ``missing`` when the release lacks the API, ``failed`` with the error), the columns
the release refused, and every version that the release could not read back.

A step a release lacks or that crashes it is recorded and skipped, never fatal.

Usage (with the release's Python)::

    python release_program.py write OUT           # every scenario, under OUT/<scenario>/
    python release_program.py read ROOT OUT       # read every version of ROOT into OUT/
    python release_program.py upgrade ROOT OUT    # modify ROOT as an upgrading user; read back
    python release_program.py read-corpus DIR NAME   # each DIR/<scenario>/table into
                                                     # DIR/<scenario>/read-by/NAME/
    python release_program.py read-many LIST.json    # each table or folder of files it
                                                     # lists into the folder it names
    python release_program.py census OUT [2.1,2.2]   # the census scenarios alone
"""

from __future__ import annotations

import datetime
import decimal
import inspect
import json
import os
import shutil
import sys
import traceback

import pyarrow as pa
import pyarrow.ipc as ipc

try:  # pylance
    import lance
except ImportError:  # lancedb bundles its own Lance core and has no `lance` module
    lance = None
try:
    import lancedb
except ImportError:
    lancedb = None

N_ROWS = 1200

# -- deterministic data -------------------------------------------------------------------------


def _nullify(values, every):
    return [None if (i % every) == every - 1 else v for i, v in enumerate(values)]


def _words(i):
    pool = ["", "a", "lance", "héllo", "日本語", "x" * 40, "Zürich", "emoji-🙂", "tab\tnl\n"]
    return pool[i % len(pool)] + (str(i) if i % 3 else "")


def column_builders():
    """Every column the scenarios try, as ``name -> fn(start, n) -> pa.Array``.

    Nulls at every level, NaN and infinities, empty and non-ASCII strings, empty lists.
    """
    def ints(t, lo, hi):
        span = hi - lo

        def build(s, n):
            return pa.array(_nullify([lo + (i * 7919) % span for i in range(s, s + n)], 7), t)
        return build

    def floats(t):
        special = [float("nan"), float("inf"), float("-inf"), -0.0]

        def build(s, n):
            vals = [special[i % 4] if i % 11 == 5 else i * 0.25 - 3 for i in range(s, s + n)]
            return pa.array(_nullify(vals, 9), t)
        return build

    def strings(t):
        return lambda s, n: pa.array(_nullify([_words(i) for i in range(s, s + n)], 5), t)

    def binaries(t):
        return lambda s, n: pa.array(
            _nullify([bytes([i % 256]) * (i % 5) for i in range(s, s + n)], 6), t)

    def dictionary(index_type):
        def build(s, n):
            vals = _nullify([["red", "green", "blue", "ünï"][i % 4] for i in range(s, s + n)], 8)
            return pa.array(vals, pa.string()).dictionary_encode().cast(
                pa.dictionary(index_type, pa.string()))
        return build

    epoch = datetime.date(1970, 1, 1)
    return {
        "i8": ints(pa.int8(), -100, 100),
        "i16": ints(pa.int16(), -30000, 30000),
        "i32": ints(pa.int32(), -2**31, 2**31 - 1),
        "i64": ints(pa.int64(), -2**62, 2**62),
        "u8": ints(pa.uint8(), 0, 255),
        "u16": ints(pa.uint16(), 0, 65535),
        "u32": ints(pa.uint32(), 0, 2**32 - 1),
        "u64": ints(pa.uint64(), 0, 2**63),
        "f16": lambda s, n: pa.array(_nullify([float(i % 50) / 4 for i in range(s, s + n)], 9),
                                     pa.float32()).cast(pa.float16()),
        "f32": floats(pa.float32()),
        "f64": floats(pa.float64()),
        "b": lambda s, n: pa.array(_nullify([i % 3 == 0 for i in range(s, s + n)], 4), pa.bool_()),
        "s": strings(pa.string()),
        "ls": strings(pa.large_string()),
        "bin": binaries(pa.binary()),
        "lbin": binaries(pa.large_binary()),
        "d32": lambda s, n: pa.array(
            _nullify([epoch + datetime.timedelta(days=i % 20000) for i in range(s, s + n)], 6),
            pa.date32()),
        "ts": lambda s, n: pa.array(_nullify([i * 1_000_003 for i in range(s, s + n)], 6),
                                    pa.timestamp("us")),
        "tstz": lambda s, n: pa.array(_nullify([i * 999_983 for i in range(s, s + n)], 6),
                                      pa.timestamp("us", tz="UTC")),
        "t64": lambda s, n: pa.array(_nullify([(i * 7) % 86_400_000_000 for i in range(s, s + n)],
                                              6), pa.time64("us")),
        "dec": lambda s, n: pa.array(
            _nullify([decimal.Decimal(i * 13 % 100000) / 100 for i in range(s, s + n)], 6),
            pa.decimal128(10, 2)),
        "fsb": lambda s, n: pa.array(_nullify([bytes([i % 256] * 4) for i in range(s, s + n)], 6),
                                     pa.binary(4)),
        "li": lambda s, n: pa.array(
            _nullify([[j if j % 4 else None for j in range(i % 5)] for i in range(s, s + n)], 7),
            pa.list_(pa.int32())),
        "lls": lambda s, n: pa.array(
            _nullify([[_words(i + j) for j in range(i % 3)] for i in range(s, s + n)], 7),
            pa.large_list(pa.string())),
        "fsl": lambda s, n: pa.array(
            [[float(i + k) for k in range(4)] for i in range(s, s + n)],
            pa.list_(pa.float32(), 4)),
        "st": lambda s, n: pa.array(
            _nullify([{"x": None if i % 5 == 0 else i, "y": _words(i)} for i in range(s, s + n)],
                     9),
            pa.struct([("x", pa.int32()), ("y", pa.string())])),
        "dict": dictionary(pa.int32()),
        "dict8": dictionary(pa.int8()),
        "lst": lambda s, n: pa.array(
            [[{"a": i * 10 + j, "b": None if j == 1 else _words(j)} for j in range(i % 4)]
             for i in range(s, s + n)],
            pa.list_(pa.struct([("a", pa.int64()), ("b", pa.string())]))),
        "vec": lambda s, n: pa.array(
            [[float((i * 31 + k * 17) % 97) / 97 for k in range(8)] for i in range(s, s + n)],
            pa.list_(pa.float32(), 8)),
    }


def make_table(columns, start, n):
    builders = column_builders()
    arrays = {"id": pa.array(range(start, start + n), pa.int64())}
    for name in columns:
        arrays[name] = builders[name](start, n)
    return pa.table(arrays)


# -- recording ----------------------------------------------------------------------------------


class Recorder:
    """What happened to one scenario: steps, refused columns, read-back problems."""

    def __init__(self, out_dir, name, release):
        self.dir = os.path.join(out_dir, name)
        if os.path.exists(self.dir):
            shutil.rmtree(self.dir)
        os.makedirs(os.path.join(self.dir, "expected"))
        self.uri = os.path.join(self.dir, "table")
        self.info = {"scenario": name, "writer": release, "steps": [], "refused_columns": {},
                     "unreadable_versions": {}, "versions": []}

    def step(self, name, fn, *args, **kwargs):
        """Run one step; record ``done``, ``missing`` (no such API) or ``failed``."""
        try:
            fn(*args, **kwargs)
        except (AttributeError, TypeError, NotImplementedError, ImportError) as e:
            # (ImportError: lancedb's operations that need pylance beside it)
            outcome = {"step": name, "outcome": "missing", "error": _short(e)}
        except BaseException as e:  # noqa: BLE001 - a release's panic must not end the run
            if isinstance(e, KeyboardInterrupt):
                raise
            outcome = {"step": name, "outcome": "failed", "error": _short(e)}
        else:
            outcome = {"step": name, "outcome": "done"}
        self.info["steps"].append(outcome)
        return outcome["outcome"] == "done"

    def save(self):
        with open(os.path.join(self.dir, "scenario.json"), "w") as f:
            json.dump(self.info, f, indent=1, sort_keys=True)


def _short(e):
    text = f"{type(e).__name__}: {e}"
    return text if len(text) < 600 else text[:600] + "..."


def _kwargs_for(fn, **wanted):
    """Keep the keyword arguments ``fn`` accepts (releases add parameters over time)."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return wanted
    if any(p.kind is p.VAR_KEYWORD for p in params.values()):
        return wanted
    return {k: v for k, v in wanted.items() if k in params}


def _accepts(fn, name):
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return name in params


# -- pylance ------------------------------------------------------------------------------------


def write_kwargs(storage, extra=None):
    """Keyword arguments selecting a storage version in any release."""
    kw = dict(extra or {})
    if storage is None:
        return kw
    if _accepts(lance.write_dataset, "data_storage_version"):
        kw["data_storage_version"] = storage
    elif storage in ("legacy", "0.1"):
        if _accepts(lance.write_dataset, "use_legacy_format"):
            kw["use_legacy_format"] = True
        elif _accepts(lance.write_dataset, "use_experimental_writer"):
            kw["use_experimental_writer"] = False
    elif storage == "2.0" and _accepts(lance.write_dataset, "use_legacy_format"):
        kw["use_legacy_format"] = False
    elif storage == "2.0" and _accepts(lance.write_dataset, "use_experimental_writer"):
        kw["use_experimental_writer"] = True  # pylance 0.11: the first 2.0 ("v2") writer
    else:
        raise TypeError(f"this release cannot choose storage version {storage}")
    return kw


def write(data, uri, storage, mode="create", **extra):
    kw = write_kwargs(storage, extra)
    kw = _kwargs_for(lance.write_dataset, **kw)
    if mode != "create":
        kw.pop("data_storage_version", None)
        kw.pop("use_legacy_format", None)
        # (pylance 0.11 keeps use_experimental_writer: its appends choose the writer anew)
    return lance.write_dataset(data, uri, mode=mode, **kw)


def accepted_columns(rec, storage, columns):
    """The columns this release writes at ``storage``; the others are recorded as refused."""
    probe = os.path.join(rec.dir, "_probe")
    ok = []
    for col in columns:
        shutil.rmtree(probe, ignore_errors=True)
        try:
            write(make_table([col], 0, 40), probe, storage)
            back = lance.dataset(probe).to_table()
            if back.num_rows != 40:
                raise RuntimeError(f"read back {back.num_rows} rows of 40")
        except BaseException as e:  # noqa: BLE001
            if isinstance(e, KeyboardInterrupt):
                raise
            rec.info["refused_columns"][col] = _short(e)
        else:
            ok.append(col)
    shutil.rmtree(probe, ignore_errors=True)
    return ok


def storage_versions():
    """The storage versions this release accepts, found by writing a one-column table."""
    if _accepts(lance.write_dataset, "data_storage_version"):
        candidates = ["legacy", "2.0", "2.1", "2.2", "2.3"]
    elif (_accepts(lance.write_dataset, "use_legacy_format")
          or _accepts(lance.write_dataset, "use_experimental_writer")):
        candidates = ["legacy", "2.0"]
    else:
        return [None]
    import tempfile

    accepted = []
    for storage in candidates:
        probe = tempfile.mkdtemp(prefix="lance-conformance-probe-")
        try:
            write(pa.table({"x": pa.array([1, 2], pa.int64())}), os.path.join(probe, "t"),
                  storage)
            accepted.append(storage)
        except BaseException as e:  # noqa: BLE001
            if isinstance(e, KeyboardInterrupt):
                raise
        finally:
            shutil.rmtree(probe, ignore_errors=True)
    return accepted or [None]


def read_back(rec):
    """Store the rows the release reads back at every version of the table."""
    try:
        versions = [v["version"] for v in lance.dataset(rec.uri).versions()]
    except BaseException as e:  # noqa: BLE001
        if isinstance(e, KeyboardInterrupt):
            raise
        # the latest version may carry what this release refuses (a feature flag it wrote
        # but cannot read: pylance 14.0.2's data overlays); the others are listed through
        # the first version and read one by one ("latest" still says the table does not
        # open)
        rec.info["unreadable_versions"]["latest"] = _short(e)
        try:
            versions = [v["version"] for v in lance.dataset(rec.uri, version=1).versions()]
        except BaseException:  # noqa: BLE001
            return
    rec.info["versions"] = versions
    for v in versions:
        # a read is tried three times: some releases' runtimes abort a task now and then on
        # a loaded machine ("Task was aborted"), which says nothing about the data
        errors = []
        while len(errors) < 3:
            try:
                table = _read_version(rec.uri, v, plain=getattr(rec, "plain", False))
            except BaseException as e:  # noqa: BLE001
                if isinstance(e, KeyboardInterrupt):
                    raise
                errors.append(_short(e))
                continue
            break
        if len(errors) == 3:
            rec.info["unreadable_versions"][str(v)] = errors[-1]
            continue
        if errors:
            rec.info.setdefault("retried_reads", {})[str(v)] = errors[-1]
        save_table(os.path.join(rec.dir, "expected", f"v{v}.arrows"), table)


def _read_version(uri, v, plain=False):
    """Version ``v`` with ``_rowid`` where the release gives it; ``plain``: as a user reads it
    by default (``to_table()``, no row ids)."""
    ds = lance.dataset(uri, version=v)
    if plain:
        table = ds.to_table()
    else:
        try:
            table = ds.scanner(with_row_id=True).to_table()
        except BaseException:  # noqa: BLE001 - releases without _rowid on this table
            table = ds.to_table()
    count = ds.count_rows()
    if count != table.num_rows:
        raise RuntimeError(f"count_rows {count} but the scan gave {table.num_rows}")
    return table


def save_table(path, table):
    """Arrow IPC *stream* format: chunks may carry dictionaries of their own."""
    with ipc.new_stream(path, table.schema) as w:
        w.write_table(table)


def read_root(root, out, plain=False):
    """Read every version of the table at ``root`` with this release into ``out``.

    ``out/read.json`` lists the versions and, for each one this release cannot read, the
    error; ``out/expected/v{N}.arrows`` holds the rows (with ``_rowid`` where possible;
    ``plain``: as a user reads them by default, pylance ``to_table()``, lancedb
    ``to_arrow()``, without row ids; the census's branches are read with them still).
    """
    os.makedirs(out, exist_ok=True)
    rec = type("R", (), {})()
    rec.uri, rec.dir, rec.plain = root, out, plain
    rec.info = {"versions": [], "unreadable_versions": {}}
    if plain:
        rec.info["reading"] = "plain"
    os.makedirs(os.path.join(out, "expected"), exist_ok=True)
    if lance is not None and lancedb is None:
        read_back(rec)
        if os.path.isdir(os.path.join(root, "tree")):  # the census's branches
            census().read_back_branches(rec)
    else:
        _read_root_lancedb(rec, root)
    with open(os.path.join(out, "read.json"), "w") as f:
        json.dump(rec.info, f, indent=1, sort_keys=True)


def _read_root_lancedb(rec, root):
    """lancedb opens tables of a database only: ``<db>/<name>.lance`` is table ``name`` of the
    database ``<db>``; a root named otherwise is linked as ``t.lance`` into a scratch one."""
    import tempfile

    root = os.path.abspath(root.rstrip("/"))
    parent, base = os.path.split(root)
    if base.endswith(".lance") and len(base) > len(".lance"):
        _read_back_lancedb(rec, parent, base[:-len(".lance")])
        return
    scratch = tempfile.mkdtemp(prefix="lancedb-read-")
    try:
        os.symlink(root, os.path.join(scratch, "t.lance"))
        _read_back_lancedb(rec, scratch, "t")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def scenario_types(out, release, storage, rows=N_ROWS):
    """Every type the release accepts at ``storage``, in several fragments and row groups."""
    rec = Recorder(out, f"types-{storage or 'default'}", release)
    cols = accepted_columns(rec, storage, list(column_builders()))
    rec.info["columns"] = cols
    data = make_table(cols, 0, rows)
    if not rec.step("create", write, data, rec.uri, storage, max_rows_per_file=rows // 3,
                    max_rows_per_group=128):
        rec.save()
        return
    rec.step("append", write, make_table(cols, rows, 200), rec.uri, storage, mode="append",
             max_rows_per_group=64)
    read_back(rec)
    rec.save()


def scenario_operations(out, release, storage, stable_row_ids=False):
    """Every table operation, one version each, on a small mixed table."""
    suffix = "-stable-row-ids" if stable_row_ids else ""
    rec = Recorder(out, f"ops-{storage or 'default'}{suffix}", release)
    cols = accepted_columns(rec, storage, ["i32", "s", "f64", "dict", "li", "st", "vec"])
    rec.info["columns"] = cols
    extra = {}
    if stable_row_ids:
        fn = lance.write_dataset
        if _accepts(fn, "enable_stable_row_ids"):
            extra["enable_stable_row_ids"] = True
        elif _accepts(fn, "enable_move_stable_row_ids"):
            extra["enable_move_stable_row_ids"] = True
        else:
            rec.info["steps"].append({"step": "create", "outcome": "missing",
                                      "error": "no stable row ids in this release"})
            rec.save()
            shutil.rmtree(rec.uri, ignore_errors=True)
            return
    if not rec.step("create", write, make_table(cols, 0, 600), rec.uri, storage,
                    max_rows_per_file=200, **extra):
        read_back(rec)
        rec.save()
        return

    def ds():
        return lance.dataset(rec.uri)

    rec.step("append", write, make_table(cols, 600, 300), rec.uri, storage, mode="append",
             max_rows_per_file=200)
    rec.step("delete", lambda: ds().delete("id % 7 = 3"))
    rec.step("delete_many", lambda: ds().delete("id >= 100 AND id < 160"))
    rec.step("update", lambda: ds().update({"i32": "i32 + 1"} if "i32" in cols
                                            else {"id": "id"}, where="id < 50"))
    rec.step("tag", lambda: ds().tags.create("first", 1))
    rec.step("merge", lambda: ds().merge(
        pa.table({"id": pa.array(range(0, 900, 2), pa.int64()),
                  "m": pa.array([f"m{i}" for i in range(0, 900, 2)])}), "id"))
    rec.step("add_columns", lambda: ds().add_columns({"doubled": "id * 2"}))
    rec.step("drop_columns", lambda: ds().drop_columns(["f64"] if "f64" in cols else ["m"]))
    rec.step("alter_columns", lambda: ds().alter_columns({"path": "m", "name": "m2"}))
    if "st" in cols:  # a nested rename: data files keep the old name, readers go by field id
        rec.step("alter_nested", lambda: ds().alter_columns({"path": "st.y", "name": "y2"}))
    rec.step("compact", lambda: ds().optimize.compact_files(target_rows_per_fragment=400))
    if "vec" in cols:
        rec.step("vector_index", lambda: ds().create_index(
            "vec", "IVF_PQ", num_partitions=2, num_sub_vectors=2))
    rec.step("scalar_index", lambda: ds().create_scalar_index("id", "BTREE"))
    rec.step("append_after_index", lambda: write(ds().to_table(limit=50), rec.uri, storage,
                                                  mode="append"))
    rec.step("tag_update", lambda: ds().tags.update("first", 2))
    rec.step("restore", lambda: lance.dataset(rec.uri, version=3).restore())
    rec.step("config", lambda: ds().update_config({"conformance.key": "v"}))
    read_back(rec)
    rec.save()


def scenario_overwrite_cleanup(out, release, storage):
    """Overwrite, then cleanup of old versions (which removes their manifests)."""
    rec = Recorder(out, f"overwrite-cleanup-{storage or 'default'}", release)
    if not rec.step("create", write, make_table(["s"], 0, 100), rec.uri, storage):
        rec.save()
        return
    rec.step("append", write, make_table(["s"], 100, 100), rec.uri, storage, mode="append")
    rec.step("delete", lambda: lance.dataset(rec.uri).delete("id < 10"))
    rec.step("overwrite", write, make_table(["s", "i64"], 0, 50), rec.uri, storage,
             mode="overwrite")
    rec.step("cleanup", lambda: lance.dataset(rec.uri).cleanup_old_versions(
        **_kwargs_for(lance.dataset(rec.uri).cleanup_old_versions,
                      older_than=datetime.timedelta(0), delete_unverified=True)))
    read_back(rec)
    rec.save()


def scenario_many_deletions(out, release, storage):
    """Deletion files of both kinds (Arrow for few rows, Roaring bitmaps for many)."""
    rec = Recorder(out, f"deletions-{storage or 'default'}", release)
    if not rec.step("create", write, make_table(["i64"], 0, 20000), rec.uri, storage,
                    max_rows_per_file=10000):
        rec.save()
        return
    rec.step("delete_few", lambda: lance.dataset(rec.uri).delete("id % 1000 = 1"))
    rec.step("delete_many", lambda: lance.dataset(rec.uri).delete("id % 3 = 0"))
    read_back(rec)
    rec.save()


def scenario_v2_manifest_paths(out, release, storage):
    rec = Recorder(out, f"v2-manifest-paths-{storage or 'default'}", release)
    if not _accepts(lance.write_dataset, "enable_v2_manifest_paths"):
        rec.info["steps"].append({"step": "create", "outcome": "missing",
                                  "error": "no enable_v2_manifest_paths in this release"})
        rec.save()
        return
    if not rec.step("create", write, make_table(["s"], 0, 100), rec.uri, storage,
                    enable_v2_manifest_paths=True):
        rec.save()
        return
    rec.step("append", write, make_table(["s"], 100, 10), rec.uri, storage, mode="append")
    rec.step("delete", lambda: lance.dataset(rec.uri).delete("id = 3"))
    read_back(rec)
    rec.save()


def basic_types_table():
    """A small table of the common types (ints, floats, strings, lists, struct, dictionaries)."""
    n = 1000
    return pa.table({
        "int": pa.array(range(n), pa.int64()),
        "float": pa.array(range(n), pa.float32()),
        "str": pa.array([str(i) for i in range(n)]),
        "list_int": pa.array([list(range(i % 50)) for i in range(n)], pa.list_(pa.int64())),
        "list_str": pa.array([[str(i)] for i in range(n)]),
        "struct": pa.array([{"a": i} for i in range(n)],
                           pa.struct([pa.field("a", pa.int64())])),
        "dict": pa.array([str(i % 10) for i in range(n)],
                         pa.dictionary(pa.int16(), pa.string())),
        "str_as_dict": pa.array(["a"] * (n // 2) + ["b"] * (n - n // 2)),
    })


def large_table(rows=2000):
    """Wide vectors and 4 KiB binary values: pages of several megabytes."""
    fsl = pa.FixedSizeListArray.from_arrays(pa.array(range(1024 * rows), pa.float32()), 1024)
    data = pa.py_buffer(bytes(range(256)) * (16 * rows))
    offsets = pa.array(range(0, 4096 * rows + 1, 4096), pa.int32()).buffers()[1]
    bins = pa.BinaryArray.from_buffers(pa.binary(), rows, [None, offsets, data])
    return pa.table({"int": pa.array(range(rows), pa.int32()), "fsl": fsl, "bin": bins})


def scenario_table(out, release, name, table, storage, **extra):
    rec = Recorder(out, name, release)
    if not rec.step("create", write, table, rec.uri, storage, **extra):
        rec.save()
        return
    rec.step("append", write, table.slice(0, 100), rec.uri, storage, mode="append")
    read_back(rec)
    rec.save()


#: Index kinds tried on every release: (name, column kind, how to create it).
INDEX_KINDS = (
    ("btree", "int", lambda ds: ds.create_scalar_index("v", "BTREE")),
    ("bitmap", "int", lambda ds: ds.create_scalar_index("v", "BITMAP")),
    ("label-list", "labels", lambda ds: ds.create_scalar_index("v", "LABEL_LIST")),
    ("ngram", "text", lambda ds: ds.create_scalar_index("v", "NGRAM")),
    ("zonemap", "int", lambda ds: ds.create_scalar_index("v", "ZONEMAP")),
    ("bloomfilter", "int", lambda ds: ds.create_scalar_index("v", "BLOOMFILTER")),
    ("inverted", "text", lambda ds: ds.create_scalar_index("v", "INVERTED",
                                                           **_kwargs_for(ds.create_scalar_index,
                                                                         with_position=True))),
    ("ivf-pq", "vec", lambda ds: ds.create_index("v", "IVF_PQ", num_partitions=1,
                                                 num_sub_vectors=4)),
    ("ivf-flat", "vec", lambda ds: ds.create_index("v", "IVF_FLAT", num_partitions=2)),
    ("ivf-sq", "vec", lambda ds: ds.create_index("v", "IVF_SQ", num_partitions=2)),
    ("ivf-hnsw-pq", "vec", lambda ds: ds.create_index("v", "IVF_HNSW_PQ", num_partitions=2,
                                                      num_sub_vectors=4)),
    ("ivf-hnsw-sq", "vec", lambda ds: ds.create_index("v", "IVF_HNSW_SQ", num_partitions=2)),
    ("ivf-rq", "vec", lambda ds: ds.create_index("v", "IVF_RQ", num_partitions=2, num_bits=1)),
)


def _index_column(kind, start, n):
    if kind == "int":
        return pa.array(range(start, start + n), pa.int64())
    if kind == "text":
        return pa.array([f"document with words {i} and word{i % 17}" for i in range(start,
                                                                                     start + n)])
    if kind == "labels":
        return pa.array([[f"label{i % 13}", f"label{i % 7}"] for i in range(start, start + n)])
    return pa.FixedSizeListArray.from_arrays(
        pa.array([float((i * 37 + k * 11) % 101) / 101 for i in range(start, start + n)
                  for k in range(32)], pa.float32()), 32)


def scenario_indices(out, release, storage):
    """One table per index kind: create, index, insert, optimize the indices, compact."""
    for name, kind, create in INDEX_KINDS:
        rec = Recorder(out, f"index-{name}", release)

        def table(start, n, kind=kind):
            return pa.table({"idx": pa.array(range(start, start + n), pa.int64()),
                             "v": _index_column(kind, start, n)})

        if not rec.step("create", write, table(0, 600), rec.uri, storage,
                        max_rows_per_file=100):
            rec.save()
            continue
        uri = rec.uri
        if not rec.step("index", lambda create=create, uri=uri: create(lance.dataset(uri))):
            shutil.rmtree(rec.dir)  # the release has no such index: nothing to judge
            continue
        rec.step("insert", write, table(600, 20), rec.uri, storage, mode="append")
        rec.step("delete", lambda uri=uri: lance.dataset(uri).delete("idx % 50 = 7"))
        rec.step("optimize_indices",
                 lambda uri=uri: lance.dataset(uri).optimize.optimize_indices())
        rec.step("compact", lambda uri=uri: lance.dataset(uri).optimize.compact_files())
        read_back(rec)
        rec.save()


def upgrade_root(root, out):
    """The newest release modifies an older release's table, as a user upgrading would:
    insert, optimize indices, compact, delete; then reads every version back."""
    rec = type("R", (), {})()
    rec.uri, rec.dir = root, out
    rec.info = {"versions": [], "unreadable_versions": {}, "steps": []}
    os.makedirs(os.path.join(out, "expected"), exist_ok=True)

    def ds():
        return lance.dataset(root)

    def insert():
        d = ds()
        write(d.to_table(limit=10), root, None, mode="append")

    for name, fn in (("insert", insert),
                     ("optimize_indices", lambda: ds().optimize.optimize_indices()),
                     ("compact", lambda: ds().optimize.compact_files()),
                     ("delete", lambda: ds().delete(f"{ds().schema.names[0]} IS NULL"))):
        try:
            fn()
            rec.info["steps"].append({"step": name, "outcome": "done"})
        except BaseException as e:  # noqa: BLE001
            if isinstance(e, KeyboardInterrupt):
                raise
            rec.info["steps"].append({"step": name, "outcome": "failed", "error": _short(e)})
    read_back(rec)
    with open(os.path.join(out, "scenario.json"), "w") as f:
        json.dump(rec.info, f, indent=1, sort_keys=True)


def encodings_table(start, n):
    """Columns that steer a writer into its other encodings: bit-packing, dictionaries, FSST,
    constants, all-null pages, general compression, blobs, packed structs, byte stream split."""
    def meta(field, **kv):
        # lance_encoding_compression -> lance-encoding:compression (the keys pylance reads)
        return field.with_metadata({k.replace("lance_encoding_", "lance-encoding:")
                                    .replace("_", "-"): v for k, v in kv.items()})

    rng = range(start, start + n)
    cols = {
        "id": (pa.field("id", pa.int64()), pa.array(rng, pa.int64())),
        "bp": (pa.field("bp", pa.int32()), pa.array([i % 100 for i in rng], pa.int32())),
        "bpn": (pa.field("bpn", pa.int64()), pa.array([(i % 40) - 20 for i in rng], pa.int64())),
        "lowcard": (pa.field("lowcard", pa.string()),
                    pa.array([["alpha", "beta", "gamma"][i % 3] for i in rng])),
        "fsst": (pa.field("fsst", pa.string()),
                 pa.array([f"https://example.org/path/to/resource/{i % 977}/item" for i in rng])),
        "const": (pa.field("const", pa.int64()), pa.array([42] * n, pa.int64())),
        "allnull": (pa.field("allnull", pa.int64()), pa.array([None] * n, pa.int64())),
        "fsb16": (pa.field("fsb16", pa.binary(16)),
                  pa.array([(i % 251).to_bytes(1, "little") * 16 for i in rng], pa.binary(16))),
        "zstd": (meta(pa.field("zstd", pa.string()), lance_encoding_compression="zstd"),
                 pa.array([f"compressible value {i % 50}" for i in rng])),
        "lz4": (meta(pa.field("lz4", pa.int64()), lance_encoding_compression="lz4"),
                pa.array([i // 7 for i in rng], pa.int64())),
        "blob": (meta(pa.field("blob", pa.large_binary()), lance_encoding_blob="true"),
                 pa.array([bytes([i % 256]) * (i % 300) for i in rng], pa.large_binary())),
        "packed": (meta(pa.field("packed", pa.struct([("a", pa.int32()), ("b", pa.float64())])),
                        packed="true"),
                   pa.array([{"a": i, "b": i / 2} for i in rng],
                            pa.struct([("a", pa.int32()), ("b", pa.float64())]))),
        "bss": (meta(pa.field("bss", pa.float64()), lance_encoding_bss="on"),
                pa.array([i * 0.001 for i in rng], pa.float64())),
        "sorted": (pa.field("sorted", pa.int64()), pa.array([i * 3 for i in rng], pa.int64())),
        "nullfsl": (pa.field("nullfsl", pa.list_(pa.float32(), 2)),
                    pa.array([None if i % 5 == 0 else [1.0, float(i)] for i in rng],
                             pa.list_(pa.float32(), 2))),
    }
    return cols


def scenario_encodings(out, release, storage):
    """Every column of :func:`encodings_table` the release accepts at ``storage``."""
    rec = Recorder(out, f"encodings-{storage or 'default'}", release)
    probe = os.path.join(rec.dir, "_probe")
    keep = []
    for name, (fld, _arr) in encodings_table(0, 40).items():
        if name == "id":
            continue
        shutil.rmtree(probe, ignore_errors=True)
        cols = encodings_table(0, 40)
        t = pa.Table.from_arrays([cols["id"][1], cols[name][1]],
                                 schema=pa.schema([cols["id"][0], fld]))
        try:
            write(t, probe, storage)
            if lance.dataset(probe).to_table().num_rows != 40:
                raise RuntimeError("wrong row count")
        except BaseException as e:  # noqa: BLE001
            if isinstance(e, KeyboardInterrupt):
                raise
            rec.info["refused_columns"][name] = _short(e)
        else:
            keep.append(name)
    shutil.rmtree(probe, ignore_errors=True)
    rec.info["columns"] = keep

    def table(start, n):
        cols = encodings_table(start, n)
        names = ["id"] + keep
        return pa.Table.from_arrays([cols[c][1] for c in names],
                                    schema=pa.schema([cols[c][0] for c in names]))

    if not rec.step("create", write, table(0, 6000), rec.uri, storage, max_rows_per_file=4000):
        rec.save()
        return
    rec.step("append", write, table(6000, 500), rec.uri, storage, mode="append")
    rec.step("delete", lambda: lance.dataset(rec.uri).delete("id % 9 = 4"))
    read_back(rec)
    rec.save()


def scenario_table_features(out, release, storage):
    """merge_insert, schema metadata, manifest-path migration, branches and shallow clones,
    detached commits: each where the release has it."""
    rec = Recorder(out, f"features-{storage or 'default'}", release)
    cols = ["i64", "s", "li"]
    if not rec.step("create", write, make_table(cols, 0, 300), rec.uri, storage,
                    max_rows_per_file=100):
        rec.save()
        return

    def ds():
        return lance.dataset(rec.uri)

    rec.step("merge_insert", lambda: ds().merge_insert("id").when_matched_update_all()
             .when_not_matched_insert_all().execute(make_table(cols, 250, 100)))
    rec.step("schema_metadata", lambda: ds().replace_schema_metadata({"owner": "conformance"}))
    rec.step("field_metadata", lambda: ds().replace_field_metadata("s", {"unit": "words"}))
    rec.step("table_metadata", lambda: ds().update_metadata({"k": "v"}))
    rec.step("migrate_manifest_paths_v2", lambda: ds().migrate_manifest_paths_v2())
    rec.step("delete", lambda: ds().delete("id % 4 = 1"))
    rec.step("update_where", lambda: ds().update({"s": "'changed'"}, where="id > 280"))
    rec.step("branch", lambda: ds().create_branch("dev"))
    rec.step("compact", lambda: ds().optimize.compact_files(target_rows_per_fragment=1000))
    rec.step("append", write, make_table(cols, 400, 10), rec.uri, storage, mode="append")
    read_back(rec)
    rec.save()


def scenario_json(out, release, storage):
    """A JSON column (``pa.json_()``, stored as binary JSON), a JSON index on one of its paths,
    an insert and a delete: where the release has them."""
    rec = Recorder(out, f"json-{storage or 'default'}", release)
    if not hasattr(pa, "json_"):
        rec.info["steps"].append({"step": "create", "outcome": "missing",
                                  "error": "this pyarrow has no json_ type"})
        rec.save()
        return

    def table(start, n):
        docs = []
        for i in range(start, start + n):
            doc = {"val": i, "name": _words(i), "tags": [i % 3, None, i * 0.5],
                   "nested": {"ok": i % 2 == 0, "none": None}}
            docs.append(None if i % 13 == 12 else json.dumps(doc, ensure_ascii=i % 2 == 0))
        return pa.table({"idx": pa.array(range(start, start + n), pa.int64()),
                         "j": pa.array(docs, pa.json_())})

    if not rec.step("create", write, table(0, 400), rec.uri, storage, max_rows_per_file=150):
        rec.save()
        return

    def json_index():
        from lance.indices import IndexConfig

        lance.dataset(rec.uri).create_scalar_index("j", IndexConfig(
            index_type="json", parameters={"target_index_type": "btree", "path": "val"}))

    rec.step("json_index", json_index)
    rec.step("append", write, table(400, 50), rec.uri, storage, mode="append")
    rec.step("delete", lambda: lance.dataset(rec.uri).delete("idx % 7 = 3"))
    read_back(rec)
    rec.save()


def run_pylance(out, release):
    storages = storage_versions()
    for storage in storages:
        scenario_types(out, release, storage)
    for storage in storages:
        scenario_operations(out, release, storage)
    scenario_operations(out, release, storages[-1], stable_row_ids=True)
    for storage in storages[:2]:
        scenario_overwrite_cleanup(out, release, storage)
        scenario_many_deletions(out, release, storage)
    scenario_v2_manifest_paths(out, release, storages[-2] if len(storages) > 1 else None)
    stable = "2.0" if "2.0" in storages and "2.2" not in storages else None
    for storage in dict.fromkeys([stable, storages[0]]):
        label = storage or "default"
        scenario_table(out, release, f"basic-types-{label}", basic_types_table(), storage)
    scenario_table(out, release, "large", large_table(), stable)
    scenario_indices(out, release, stable)
    for storage in dict.fromkeys([storages[0], stable, storages[-1]]):
        scenario_table_features(out, release, storage)
    for storage in storages:
        scenario_encodings(out, release, storage)
    for storage in dict.fromkeys([storages[0], storages[-1]]):
        scenario_json(out, release, storage)
    scenario_files(out, release, storages)
    census().run_census(out, release, storages)


def census():
    """The census of operations (``release_census.py`` beside this program)."""
    sys.modules.setdefault("release_program", sys.modules[__name__])
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    try:
        import release_census
    finally:
        sys.path.pop(0)
    return release_census


def scenario_files(out, release, storages):
    """Standalone Lance files, as a vendor's file writer would make them: ``lance.file``'s
    ``LanceFileWriter`` at every 2.x version the release writes, read back with its
    ``LanceFileReader``. Stored under ``files/`` (no table), rows under ``expected/``."""
    rec = Recorder(out, "files", release)
    rec.info["files"] = []
    try:
        from lance.file import LanceFileReader, LanceFileWriter
    except ImportError as e:
        rec.info["steps"].append({"step": "lance.file", "outcome": "missing", "error": _short(e)})
        rec.save()
        return
    os.makedirs(os.path.join(rec.dir, "files"))
    versions = [s for s in storages if s not in (None, "legacy")]
    for version in versions:
        takes_version = _accepts(LanceFileWriter.__init__, "version")
        if version != "2.0" and not takes_version:
            continue  # this release's file writer writes 2.0 only
        kw = {"version": version} if takes_version else {}
        for name, table in (("basic-types", basic_types_table()), ("large", large_table(400))):
            stem = f"{name}-{version}"
            path = os.path.join(rec.dir, "files", stem + ".lance")

            def write_file(path=path, table=table, kw=kw):
                with LanceFileWriter(path, schema=table.schema, **kw) as w:
                    w.write_batch(table)

            def read_file(path=path, stem=stem):
                got = LanceFileReader(path).read_all().to_table()
                save_table(os.path.join(rec.dir, "expected", stem + ".arrows"), got)

            if not rec.step(f"write {stem}", write_file):
                if os.path.exists(path):
                    os.remove(path)
                continue
            if rec.step(f"read {stem}", read_file):
                rec.info["files"].append(stem)
            else:
                rec.info["unreadable_versions"][stem] = rec.info["steps"][-1].get("error", "")
    rec.save()


def read_files(folder, out):
    """The newest release's reading of another release's standalone files."""
    read_file_dir(os.path.join(folder, "files"), out)


def read_file_dir(directory, out):
    """Read every standalone ``*.lance`` file of ``directory`` into ``out/expected/``."""
    from lance.file import LanceFileReader

    os.makedirs(os.path.join(out, "expected"), exist_ok=True)
    unreadable = {}
    for name in sorted(os.listdir(directory)):
        if not name.endswith(".lance") or not os.path.isfile(os.path.join(directory, name)):
            continue
        stem = name[:-len(".lance")]
        try:
            got = LanceFileReader(os.path.join(directory, name)).read_all().to_table()
        except BaseException as e:  # noqa: BLE001 - a refusal is a finding, not a crash
            if isinstance(e, KeyboardInterrupt):
                raise
            unreadable[stem] = _short(e)
            continue
        save_table(os.path.join(out, "expected", stem + ".arrows"), got)
    with open(os.path.join(out, "read.json"), "w") as f:
        json.dump({"unreadable_versions": unreadable}, f, indent=1, sort_keys=True)


# -- lancedb ------------------------------------------------------------------------------------


def run_lancedb(out, release):
    """lancedb tables: the operations a lancedb user runs, with lancedb's own defaults and
    with the storage options it passes down to its Lance core."""
    variants = [("lancedb-table", {}),
                ("lancedb-stable-row-ids", {"new_table_enable_stable_row_ids": True}),
                ("lancedb-legacy", {"new_table_data_storage_version": "legacy"}),
                ("lancedb-v2-manifest-paths", {"new_table_enable_v2_manifest_paths": True})]
    for name, options in variants:
        _lancedb_scenario(out, release, name, options)
    census().run_lancedb_census(out, release)


def _lancedb_scenario(out, release, name, options):
    rec = Recorder(out, name, release)
    db_dir = os.path.join(rec.dir, "db")
    cols = ["i32", "s", "f64", "li", "st", "vec", "dict", "tstz"]
    state = {}

    def create():
        db = lancedb.connect(db_dir)
        kw = {}
        if options:
            kw["storage_options"] = {k: str(v).lower() if isinstance(v, bool) else v
                                     for k, v in options.items()}
        state["t"] = db.create_table("t", make_table(cols, 0, 500), **kw)

    if not rec.step("create", create) and options:
        rec.save()
        shutil.rmtree(rec.dir, ignore_errors=True)  # this lancedb has no such option
        return
    if "t" in state:
        t = state["t"]
        rec.step("add", lambda: t.add(make_table(cols, 500, 300)))
        rec.step("delete", lambda: t.delete("id % 5 = 2"))
        rec.step("update", lambda: t.update(where="id < 20", values={"i32": 7}))
        rec.step("merge_insert", lambda: t.merge_insert("id").when_matched_update_all()
                 .when_not_matched_insert_all().execute(make_table(cols, 790, 20)))
        rec.step("add_columns", lambda: t.add_columns({"doubled": "id * 2"}))
        rec.step("alter_columns", lambda: t.alter_columns({"path": "doubled", "rename": "dbl"}))
        rec.step("alter_nested", lambda: t.alter_columns({"path": "st.y", "rename": "y2"}))
        rec.step("drop_columns", lambda: t.drop_columns(["f64"]))
        rec.step("scalar_index", lambda: t.create_scalar_index("id"))
        rec.step("fts_index", lambda: t.create_fts_index("s", **_kwargs_for(
            t.create_fts_index, use_tantivy=False)))
        rec.step("vector_index", lambda: t.create_index(
            **_kwargs_for(t.create_index, metric="l2", vector_column_name="vec",
                          num_partitions=2, num_sub_vectors=2)))
        rec.step("tag", lambda: t.tags.create("first", 1))
        rec.step("optimize", lambda: t.optimize())
        rec.step("restore", lambda: (t.checkout(2), t.restore()))
    _read_back_lancedb(rec, db_dir)
    # lancedb keeps the table at <db>/<name>.lance; the corpus names it table/
    src = os.path.join(db_dir, "t.lance")
    if os.path.isdir(src):
        shutil.move(src, rec.uri)
    shutil.rmtree(db_dir, ignore_errors=True)
    rec.save()


def _read_back_lancedb(rec, db_dir, name="t"):
    if not os.path.isdir(os.path.join(db_dir, f"{name}.lance")):
        return
    db = lancedb.connect(db_dir)
    try:
        t = db.open_table(name)
        versions = [v["version"] if isinstance(v, dict) else v.version for v in t.list_versions()]
    except BaseException as e:  # noqa: BLE001
        if isinstance(e, KeyboardInterrupt):
            raise
        rec.info["unreadable_versions"]["latest"] = _short(e)
        return
    rec.info["versions"] = versions
    for v in versions:
        try:
            t.checkout(v)
            if getattr(rec, "plain", False):
                table = _read_lancedb_otherwise(rec, t, v, None)
            else:
                try:
                    table = t.search().with_row_id(True).limit(None).to_arrow()
                except BaseException as e:  # noqa: BLE001 - releases without with_row_id
                    if isinstance(e, KeyboardInterrupt):
                        raise
                    table = _read_lancedb_otherwise(rec, t, v, e)
        except BaseException as e:  # noqa: BLE001
            if isinstance(e, KeyboardInterrupt):
                raise
            rec.info["unreadable_versions"][str(v)] = _short(e)
            continue
        save_table(os.path.join(rec.dir, "expected", f"v{v}.arrows"), table)
    if os.path.isdir(os.path.join(db_dir, f"{name}.lance", "tree")):
        _read_back_lancedb_branches(rec, t)


def _read_back_lancedb_branches(rec, t):
    """Every version of every branch, as lancedb reads it (``Table.branches``), where the
    census keeps pylance's readings of them: ``expected/branch-<name>/v{N}.arrows``,
    ``branches`` and ``unreadable_branch_versions`` in ``read.json``."""
    unreadable = rec.info.setdefault("unreadable_branch_versions", {})
    try:
        names = sorted(t.branches.list())
    except BaseException as e:  # noqa: BLE001 - a release without branches ("*": none read)
        if isinstance(e, KeyboardInterrupt):
            raise
        unreadable["*"] = _short(e)
        return
    rec.info["branches"] = {}
    for bname in names:
        folder = os.path.join(rec.dir, "expected", f"branch-{bname}")
        os.makedirs(folder, exist_ok=True)
        try:
            listed = [v["version"] if isinstance(v, dict) else v.version
                      for v in t.branches.checkout(bname).list_versions()]
        except BaseException as e:  # noqa: BLE001
            if isinstance(e, KeyboardInterrupt):
                raise
            unreadable[bname] = _short(e)
            continue
        versions = []
        for v in listed:
            try:
                at = t.branches.checkout(bname, v)
                try:
                    got = at.search().with_row_id(True).limit(None).to_arrow()
                except BaseException as e:  # noqa: BLE001 - as main's versions
                    if isinstance(e, KeyboardInterrupt):
                        raise
                    got = at.to_arrow()
            except BaseException as e:  # noqa: BLE001
                if isinstance(e, KeyboardInterrupt):
                    raise
                unreadable[f"{bname}:{v}"] = _short(e)
                continue
            save_table(os.path.join(folder, f"v{v}.arrows"), got)
            versions.append(v)
        rec.info["branches"][bname] = versions


def _read_lancedb_otherwise(rec, t, v, first):
    """The rows of version ``v`` when lancedb's default query fails: without ``_rowid`` (old
    releases), or from the base table alone (``use_lsm(False)``): lancedb 0.38's MemWAL LSM
    scanner refuses every version but the latest of a table with an LSM write spec, though
    the base table reads at every version. A plain reading (``rec.plain``: no row ids, as a
    user reads by default) starts here, with no ``first`` error."""
    plain = getattr(rec, "plain", False)
    try:
        return t.to_arrow()
    except BaseException as e:  # noqa: BLE001
        if isinstance(e, KeyboardInterrupt) or "use_lsm" not in str(e):
            raise
        first = first or e
    query = t.search()
    if not hasattr(query, "use_lsm"):
        raise first
    query = query.use_lsm(False).limit(None)
    table = (query if plain else query.with_row_id(True)).to_arrow()
    rec.info.setdefault("base_table_reads", {})[str(v)] = _short(first)
    return table


def read_many(listing):
    """Read each item of the JSON list ``listing`` (``{"kind": "table" | "files", "path",
    "out"}``, a table's optionally ``"plain": true``: :func:`read_root`) into its ``out``
    folder, in order; an item whose ``out/read.json`` exists is done (``read.json`` is written
    last, so a crashed run shows where it stopped)."""
    with open(listing) as f:
        items = json.load(f)
    for item in items:
        if os.path.exists(os.path.join(item["out"], "read.json")):
            continue
        if item["kind"] == "table":
            read_root(item["path"], item["out"], plain=bool(item.get("plain")))
        elif lance is None:
            os.makedirs(item["out"], exist_ok=True)
            with open(os.path.join(item["out"], "read.json"), "w") as f:
                json.dump({"unsupported": "this release has no Lance file reader"}, f)
        else:
            read_file_dir(item["path"], item["out"])


def main(argv):
    if len(argv) >= 2 and argv[1] == "read":
        read_root(argv[2], argv[3])
        return 0
    if len(argv) >= 2 and argv[1] == "read-many":
        read_many(argv[2])
        return 0
    if len(argv) >= 2 and argv[1] == "upgrade":
        upgrade_root(argv[2], argv[3])
        return 0
    if len(argv) >= 2 and argv[1] == "read-corpus":
        corpus, name = argv[2], argv[3]
        for scenario in sorted(os.listdir(corpus)):
            table = os.path.join(corpus, scenario, "table")
            out = os.path.join(corpus, scenario, "read-by", name)
            if os.path.isdir(table):
                shutil.rmtree(out, ignore_errors=True)
                read_root(table, out)
            elif os.path.isdir(os.path.join(corpus, scenario, "files")):
                shutil.rmtree(out, ignore_errors=True)
                read_files(os.path.join(corpus, scenario), out)
        return 0
    if len(argv) >= 3 and argv[1] == "census":  # the census scenarios alone (pylance)
        os.makedirs(argv[2], exist_ok=True)
        release = f"pylance=={getattr(lance, '__version__', '?')}"
        storages = storage_versions()
        if len(argv) >= 4:
            storages = [s for s in storages if s in argv[3].split(",")]
        census().run_census(argv[2], release, storages)
        return 0
    out = argv[2] if len(argv) >= 3 and argv[1] == "write" else argv[1]
    os.makedirs(out, exist_ok=True)
    if lance is not None and lancedb is None:
        release = f"pylance=={getattr(lance, '__version__', '?')}"
        run_pylance(out, release)
    else:
        release = f"lancedb=={lancedb.__version__}"
        run_lancedb(out, release)
    with open(os.path.join(out, "writer.json"), "w") as f:
        json.dump({"writer": release, "pyarrow": pa.__version__}, f, indent=1)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv))
    except Exception:
        traceback.print_exc()
        sys.exit(3)
