"""A subprocess-adapter program for one released pylance or lancedb (``PROTOCOL.md``).

It runs with the Python of a release's own virtualenv and imports only that release
(``lance`` or ``lancedb``), ``pyarrow`` and the standard library, never the kit, so every
release from 0.10 on can run it. What a release can do is found by feature detection
(``inspect.signature`` of its functions, attributes that exist or not), never by comparing
version numbers, and declared in the ``hello`` capabilities:

* ``ops`` -- the operations of ``apply`` this release has an API for;
* ``features`` -- ``storage:<v>`` for every data storage version the release agrees to
  write (found once by writing a two-row table, cached in the virtualenv), and
  ``stable-row-ids``, ``v2-manifest-paths``, ``v1-names``, ``tags``, ``index:btree``,
  ``config``, ``stale-append`` when the release has the option or API.

An option the release lacks is answered ``unsupported``; a Rust panic is reported with the
error class ``Panic`` so the kit can tell a crash from a clean refusal.

lancedb keeps a table at ``<database>/<name>.lance``: with lancedb, a dataset URI must end
in ``.lance`` and its parent directory is the database.
"""

from __future__ import annotations

import base64
import inspect
import json
import os
import shutil
import sys
import tempfile
import traceback

import pyarrow as pa
import pyarrow.ipc as ipc

try:
    import lance
except ImportError:  # lancedb bundles its Lance core without a ``lance`` module
    lance = None
try:
    import lancedb
except ImportError:
    lancedb = None

PROTOCOL = 1
INLINE_LIMIT = 1 << 20
STORAGE_CANDIDATES = ("legacy", "2.0", "2.1", "2.2", "2.3")


class Unsupported(Exception):
    """This release has no API for what was asked."""


def _params(fn):
    try:
        return inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return {}


def _accepts(fn, name):
    params = _params(fn)
    return name in params or any(p.kind is p.VAR_KEYWORD for p in params.values())


def _accepts_named(fn, name):
    """Only an explicit parameter counts (``**kwargs`` may swallow it silently)."""
    return name in _params(fn)


def _ipc(table):
    sink = pa.BufferOutputStream()
    with ipc.new_stream(sink, table.schema) as w:
        w.write_table(table)
    return sink.getvalue().to_pybytes()


def _table(params):
    if params.get("data") is not None:
        return ipc.open_stream(pa.py_buffer(base64.b64decode(params["data"]))).read_all()
    if params.get("data_path"):
        with open(params["data_path"], "rb") as fh:
            return ipc.open_stream(pa.py_buffer(fh.read())).read_all()
    return None


def _cached_probe(version, probe):
    """The storage versions ``probe(storage)`` accepts (a refusal or a panic says no),
    cached in the virtualenv (``sys.prefix``) for this release."""
    in_venv = sys.prefix != getattr(sys, "base_prefix", sys.prefix)
    cache = os.path.join(sys.prefix, "lance-conformance-storage.json")
    try:
        with open(cache) as fh:
            found = json.load(fh)
        if found.get("version") == version:
            return found["storage"]
    except (OSError, ValueError, KeyError):
        pass
    accepted = []
    for storage in STORAGE_CANDIDATES:
        try:
            if probe(storage):
                accepted.append(storage)
        except BaseException as exc:  # noqa: BLE001 - a refusal (or a panic) says no
            if isinstance(exc, KeyboardInterrupt):
                raise
    if in_venv:  # never write into an interpreter the kit did not make
        try:
            with open(cache, "w") as fh:
                json.dump({"version": version, "storage": accepted}, fh)
        except OSError:
            pass
    return accepted


# -- pylance ----------------------------------------------------------------------------------

class PylanceRelease:
    """The operations of an operation script, with the API this pylance release has."""

    def __init__(self):
        self.version = getattr(lance, "__version__", "?")
        self.name = f"pylance=={self.version}"
        wd = lance.write_dataset
        self.row_id_option = next((o for o in ("enable_stable_row_ids", "enable_move_stable_row_ids")
                                   if _accepts_named(wd, o)), None)
        self.v2_paths = _accepts_named(wd, "enable_v2_manifest_paths")
        self.storage_option = ("data_storage_version" if _accepts_named(wd, "data_storage_version")
                               else "use_legacy_format" if _accepts_named(wd, "use_legacy_format")
                               else None)
        cls = lance.LanceDataset
        self.has = {
            "update": hasattr(cls, "update"),
            "add_columns": hasattr(cls, "add_columns"),
            "merge": hasattr(cls, "merge"),
            "drop_columns": hasattr(cls, "drop_columns"),
            "compact": hasattr(cls, "optimize"),
            "tag": hasattr(cls, "tags"),
            "restore": hasattr(cls, "restore"),
            "update_config": hasattr(cls, "update_config"),
            "create_index": hasattr(cls, "create_scalar_index"),
            "stale_append": hasattr(cls, "commit") and hasattr(lance, "LanceOperation")
            and hasattr(getattr(lance, "fragment", None), "write_fragments"),
        }

    def capabilities(self):
        ops = ["create", "append", "overwrite", "delete"]
        ops += [op for op in ("update", "add_columns", "merge", "drop_columns", "compact", "tag",
                              "restore", "update_config", "create_index") if self.has[op]]
        features = ["storage:" + v for v in self.storage_versions()] + ["v1-names"]
        if self.row_id_option:
            features.append("stable-row-ids")
        if self.v2_paths:
            features.append("v2-manifest-paths")
        for key, feature in (("tag", "tags"), ("create_index", "index:btree"),
                             ("update_config", "config"), ("stale_append", "stale-append")):
            if self.has[key]:
                features.append(feature)
        return {"read": True, "write": True, "ops": ops, "row_ids": True, "features": features}

    def storage_kwargs(self, storage):
        if storage is None:
            return {}
        if self.storage_option == "data_storage_version":
            return {"data_storage_version": storage}
        if self.storage_option == "use_legacy_format" and storage in ("legacy", "0.1", "2.0"):
            return {"use_legacy_format": storage != "2.0"}
        raise Unsupported(f"this release cannot choose data storage version {storage}")

    def storage_versions(self):
        """The storage versions this release writes, probed once per virtualenv."""
        if self.storage_option is None:
            return []

        def probe(storage):
            root = tempfile.mkdtemp(prefix="lance-conformance-probe-")
            try:
                lance.write_dataset(pa.table({"x": pa.array([1, 2], pa.int64())}),
                                    os.path.join(root, "t"), **self.storage_kwargs(storage))
                return True
            finally:
                shutil.rmtree(root, ignore_errors=True)
        return _cached_probe(self.version, probe)

    # -- read ---------------------------------------------------------------------------
    def read(self, uri, version, with_row_id):
        ds = lance.dataset(uri, version=version) if version is not None else lance.dataset(uri)
        if with_row_id:
            return ds.to_table(with_row_id=True)
        return ds.to_table()

    def versions(self, uri):
        return sorted(int(v["version"]) for v in lance.dataset(uri).versions())

    # -- write --------------------------------------------------------------------------
    def apply(self, uri, op, data):
        kind = op["op"]
        if kind == "create":
            kw = self.storage_kwargs(op.get("data_storage_version"))
            if op.get("stable_row_ids"):
                if not self.row_id_option:
                    raise Unsupported("this release has no stable row ids")
                kw[self.row_id_option] = True
            if "v2_manifest_paths" in op:
                if self.v2_paths:
                    kw["enable_v2_manifest_paths"] = bool(op["v2_manifest_paths"])
                elif op["v2_manifest_paths"]:
                    raise Unsupported("this release writes V1 manifest names only")
            if "max_rows_per_file" in op:
                kw["max_rows_per_file"] = int(op["max_rows_per_file"])
            lance.write_dataset(data, uri, mode="create", **kw)
            return
        if kind == "append" and op.get("read_version") is not None:
            if not self.has["stale_append"]:
                raise Unsupported("no LanceDataset.commit / write_fragments")
            rv = int(op["read_version"])
            old = lance.dataset(uri, version=rv)
            wf = lance.fragment.write_fragments
            kw = {}
            if _accepts_named(wf, "data_storage_version"):
                kw["data_storage_version"] = getattr(old, "data_storage_version", None)
            frags = wf(data.select(old.schema.names), uri, **{k: v for k, v in kw.items() if v})
            lance.LanceDataset.commit(uri, lance.LanceOperation.Append(frags), read_version=rv)
            return
        if kind in ("append", "overwrite"):
            lance.write_dataset(data, uri, mode=kind)
            return
        ds = lance.dataset(uri)
        if kind == "delete":
            ds.delete(op["where"])
        elif kind == "update":
            ds.update(dict(op["set"]), where=op.get("where"))
        elif kind == "add_columns":
            self._add_columns(ds, op["columns"])
        elif kind == "merge":
            ds.merge(data, op["on"])
        elif kind == "drop_columns":
            ds.drop_columns(list(op["columns"]))
        elif kind == "compact":
            ds.optimize.compact_files(
                target_rows_per_fragment=int(op.get("target_rows_per_fragment", 1024 * 1024)))
        elif kind == "tag":
            action = op.get("action", "create")
            if action == "create":
                ds.tags.create(op["name"], int(op.get("version") or ds.version))
            elif action == "update":
                ds.tags.update(op["name"], int(op["version"]))
            else:
                ds.tags.delete(op["name"])
        elif kind == "restore":
            lance.dataset(uri, version=int(op["version"])).restore()
        elif kind == "update_config":
            ds.update_config(dict(op["values"]))
        elif kind == "create_index":
            kw = {"index_type": op.get("index_type", "BTREE")}
            ds.create_scalar_index(op["column"], **{k: v for k, v in kw.items()
                                                    if _accepts(ds.create_scalar_index, k)})
        else:
            raise Unsupported(f"operation {kind!r}")

    @staticmethod
    def _add_columns(ds, columns):
        fields = [pa.field(n, pa.type_for_alias(t)) for n, t in columns]
        try:
            ds.add_columns(fields)
            return
        except (TypeError, ValueError, NotImplementedError) as exc:
            first = exc  # releases before all-null columns: a SQL expression per column
        sql = {"int32": "INT", "int64": "BIGINT", "string": "STRING", "double": "DOUBLE",
               "float": "FLOAT", "bool": "BOOLEAN"}
        exprs = {}
        for n, t in columns:
            if t not in sql:
                raise Unsupported(f"cannot add an all-null {t} column: {first}")
            exprs[n] = f"CAST(NULL AS {sql[t]})"
        ds.add_columns(exprs)


# -- lancedb ----------------------------------------------------------------------------------

class LancedbRelease:
    """The operations a lancedb user has: a table of a database, ``<db>/<name>.lance``."""

    def __init__(self):
        self.version = getattr(lancedb, "__version__", "?")
        self.name = f"lancedb=={self.version}"

    @staticmethod
    def _split(uri):
        uri = uri.rstrip("/")
        base = os.path.basename(uri)
        if not base.endswith(".lance"):
            raise Unsupported("lancedb opens tables of a database: the URI must end in .lance")
        return os.path.dirname(uri), base[: -len(".lance")]

    def _open(self, uri):
        parent, name = self._split(uri)
        return lancedb.connect(parent).open_table(name)

    def capabilities(self):
        ops = ["create", "append", "overwrite", "delete", "update", "add_columns",
               "drop_columns", "compact", "restore"]
        features = []
        cls = getattr(getattr(lancedb, "table", None), "LanceTable", None)
        if cls is not None and hasattr(cls, "tags"):
            ops.append("tag")
            features.append("tags")
        if cls is not None and hasattr(cls, "create_scalar_index"):
            ops.append("create_index")
            features.append("index:btree")
        features += ["storage:" + v for v in self.storage_versions()]
        features += ["stable-row-ids", "v2-manifest-paths", "v1-names"]
        return {"read": True, "write": True, "ops": ops, "row_ids": False, "features": features}

    def storage_versions(self):
        """The storage versions a new table accepts, probed once per virtualenv."""
        def probe(storage):
            root = tempfile.mkdtemp(prefix="lance-conformance-probe-")
            try:
                db = lancedb.connect(root)
                db.create_table("t", pa.table({"x": pa.array([1, 2], pa.int64())}),
                                storage_options={"new_table_data_storage_version": storage})
                return True
            finally:
                shutil.rmtree(root, ignore_errors=True)
        return _cached_probe(self.version, probe)

    def read(self, uri, version, with_row_id):
        t = self._open(uri)
        if version is not None:
            t.checkout(int(version))
        return t.to_arrow()

    def versions(self, uri):
        out = []
        for v in self._open(uri).list_versions():
            out.append(int(v["version"] if isinstance(v, dict) else v.version))
        return sorted(out)

    def apply(self, uri, op, data):
        kind = op["op"]
        if kind == "create":
            parent, name = self._split(uri)
            db = lancedb.connect(parent)
            options = {}
            if op.get("data_storage_version"):
                options["new_table_data_storage_version"] = op["data_storage_version"]
            if op.get("stable_row_ids"):
                options["new_table_enable_stable_row_ids"] = "true"
            if "v2_manifest_paths" in op:
                options["new_table_enable_v2_manifest_paths"] = str(
                    bool(op["v2_manifest_paths"])).lower()
            kw = {"storage_options": options} if options else {}
            db.create_table(name, data, **kw)
            return
        if kind == "append" and op.get("read_version") is not None:
            raise Unsupported("lancedb has no commit at an older read version")
        t = self._open(uri)
        if kind == "append":
            t.add(data)
        elif kind == "overwrite":
            t.add(data, mode="overwrite")
        elif kind == "delete":
            t.delete(op["where"])
        elif kind == "update":
            t.update(where=op.get("where"), values_sql=dict(op["set"]))
        elif kind == "add_columns":
            try:
                t.add_columns([pa.field(n, pa.type_for_alias(ty)) for n, ty in op["columns"]])
            except (TypeError, ValueError, AttributeError, NotImplementedError):
                t.add_columns({n: f"CAST(NULL AS {'INT' if ty == 'int32' else 'BIGINT'})"
                               for n, ty in op["columns"]})
        elif kind == "drop_columns":
            t.drop_columns(list(op["columns"]))
        elif kind == "compact":
            try:
                t.compact_files(target_rows_per_fragment=int(
                    op.get("target_rows_per_fragment", 1024 * 1024)))
            except ImportError:  # compact_files needs pylance; optimize is lancedb's own
                t.optimize()
        elif kind == "tag":
            action = op.get("action", "create")
            if action == "create":
                t.tags.create(op["name"], int(op.get("version") or t.version))
            elif action == "update":
                t.tags.update(op["name"], int(op["version"]))
            else:
                t.tags.delete(op["name"])
        elif kind == "restore":
            t.restore(int(op["version"]))
        elif kind == "create_index":
            t.create_scalar_index(op["column"])
        else:
            raise Unsupported(f"operation {kind!r}")


# -- the protocol loop ------------------------------------------------------------------------

def _error(exc):
    name = type(exc).__name__
    if isinstance(exc, Unsupported):
        return {"class": "Unsupported", "message": str(exc), "unsupported": True}
    if "Panic" in name:
        name = "Panic"
    message = f"{exc}"
    if len(message) > 2000:
        message = message[:2000] + "..."
    return {"class": name, "message": message, "unsupported": False}


def handle(impl, method, params):
    if method == "hello":
        return {"name": impl.name, "version": impl.version, "capabilities": impl.capabilities()}
    if method == "read":
        table = impl.read(params["uri"], params.get("version"), bool(params.get("with_row_id")))
        raw = _ipc(table)
        if len(raw) <= INLINE_LIMIT or not params.get("data_dir"):
            return {"arrow": base64.b64encode(raw).decode()}
        fd, path = tempfile.mkstemp(suffix=".arrows", dir=params["data_dir"])
        with os.fdopen(fd, "wb") as fh:
            fh.write(raw)
        return {"arrow_path": path}
    if method == "apply":
        impl.apply(params["uri"], params["op"], _table(params))
        return {}
    if method == "versions":
        return {"versions": impl.versions(params["uri"])}
    if method == "shutdown":
        return {}
    raise Unsupported(f"method {method!r}")


def main():
    if lance is None and lancedb is None:
        print("release_adapter: neither lance nor lancedb can be imported", file=sys.stderr)
        return 3
    impl = PylanceRelease() if lance is not None else LancedbRelease()
    out = sys.stdout
    sys.stdout = sys.stderr  # a release that prints must not break the protocol
    for line in sys.stdin:
        if not line.strip():
            continue
        req = json.loads(line)
        try:
            resp = {"id": req.get("id"), "ok": True,
                    "result": handle(impl, req.get("method"), req.get("params") or {})}
        except BaseException as exc:  # noqa: BLE001 - every failure is an answer
            if isinstance(exc, KeyboardInterrupt):
                raise
            if os.environ.get("LANCE_CONFORMANCE_DEBUG"):
                traceback.print_exc()
            resp = {"id": req.get("id"), "ok": False, "error": _error(exc)}
        out.write(json.dumps(resp) + "\n")
        out.flush()
        if req.get("method") == "shutdown":
            break
    return 0


if __name__ == "__main__":
    sys.exit(main())
