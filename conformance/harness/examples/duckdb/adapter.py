#!/usr/bin/env python3
"""DuckDB and its Lance extension as an implementation under test of lance-conformance.

PyPI ``duckdb`` and ``duckdb-extension-lance`` (the extension binary ships inside that
package and is loaded offline: ``allow_unsigned_extensions`` and ``LOAD '<path>'``; no
network). The program speaks ``conformance/harness/PROTOCOL.md`` and nothing else: JSON
lines on stdin/stdout, tables as Arrow IPC streams. It imports nothing of the kit; every
read and every write is DuckDB SQL:

=================  ===================================================================
request            SQL
=================  ===================================================================
read               ``SELECT * FROM '<folder>/t.lance'``; a filtered read
                   ``SELECT "c", ... FROM '<folder>/t.lance' WHERE <filter>``
query              a filter: ``SELECT * FROM '<folder>/t.lance' WHERE <filter>``; a nearest
                   search: ``SELECT * FROM lance_vector_search('<folder>/t.lance', 'c',
                   [q]::FLOAT[], k := k, use_index := b) [WHERE <filter>]`` (the
                   extension takes its own ``filter`` only for tables of a namespace, so
                   a filter is SQL's WHERE over the k rows found: a post-filter); a
                   full-text match: ``SELECT * FROM lance_fts('<folder>/t.lance', 'c',
                   '<query>', k := <rows>) [WHERE <filter>]`` (``k`` the table's row count:
                   every match)
create/overwrite   ``COPY (SELECT * FROM rows) TO '<uri>' (FORMAT lance, mode 'overwrite',
                   data_storage_version '<v>', max_rows_per_file N)``
append             ``COPY ... (FORMAT lance, mode 'append')``
delete             ``DELETE FROM ns.main.t WHERE <predicate>``
update             ``UPDATE ns.main.t SET "c" = <expression> WHERE <predicate>``
add_columns        ``ALTER TABLE ns.main.t ADD COLUMN "c" <type>`` (one column per request)
drop_columns       ``ALTER TABLE ns.main.t DROP COLUMN "c"`` (one column per request)
compact            ``OPTIMIZE ns.main.t WITH (target_rows_per_fragment = N)``
merge_insert       ``MERGE INTO ns.main.t AS target USING rows AS source ON target."id" =
                   source."id" [WHEN MATCHED [AND <condition>] THEN UPDATE SET *]
                   [WHEN NOT MATCHED THEN INSERT *] [WHEN NOT MATCHED BY SOURCE
                   [AND <where>] THEN DELETE]``
create_index       ``CREATE INDEX i ON '<uri>' ("c") USING BTREE``
=================  ===================================================================

``<folder>`` is a scratch folder made for the request whose ``t.lance`` is a symbolic link
to the table's path (DuckDB scans a path named ``*.lance``), and ``ns`` that folder attached
as a directory namespace (``ATTACH '<folder>' AS ns (TYPE LANCE)``): the SQL statements that
change a table name a table of a namespace. ``rows`` is the Arrow table the request
carries, handed to DuckDB as a relation.

DuckDB reads a table at its latest version only (no time travel): a read at an older
version is answered ``unsupported``. To tell the latest from an older one the program lists
the manifest names in ``_versions/`` (the one thing not asked of DuckDB). What DuckDB has
no SQL for is answered ``unsupported`` with the reason: ``merge`` (a column joined on a key
in one version), ``tag``, ``restore``, ``update_config``, an ``append`` at an older read
version, stable row ids and V1 manifest names at create, ``_rowid``, blob bytes.
A statement DuckDB itself answers "Not implemented" is ``unsupported`` too.

DuckDB runs in a child process of this program (``--worker``): when the Lance extension
panics it aborts the whole process, and the program answers that request with the error
class ``Panic`` (the signal and the child's last stderr lines) and starts a new child.

    lance-conformance run --impl cmd:"python conformance/harness/examples/duckdb/adapter.py"
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import shutil
import sys
import tempfile
import traceback
import uuid

INLINE_LIMIT = 1 << 20
STORAGE_VERSIONS = ("legacy", "2.0", "2.1", "2.2")
OPS = ["create", "append", "overwrite", "delete", "update", "add_columns", "drop_columns",
       "compact", "create_index", "merge_insert"]
# The column kinds whose Arrow type comes back from DuckDB as it went in (large_string,
# large_binary and fixed_size_binary read back as string/binary; float16, decimal256 and
# duration are refused at write; date64, time32 and timestamps with a time zone change unit).
TYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float32",
         "float64", "bool", "date32", "string", "binary", "list", "fixed_size_list", "struct"]
# add_columns: Arrow type alias -> DuckDB type (those that come back as the same Arrow type)
SQL_TYPES = {"int8": "TINYINT", "int16": "SMALLINT", "int32": "INTEGER", "int64": "BIGINT",
             "uint8": "UTINYINT", "uint16": "USMALLINT", "uint32": "UINTEGER",
             "uint64": "UBIGINT", "float32": "FLOAT", "float": "FLOAT", "float64": "DOUBLE",
             "double": "DOUBLE", "string": "VARCHAR", "binary": "BLOB", "bool": "BOOLEAN",
             "date32": "DATE"}


class Unsupported(Exception):
    """What this program (or DuckDB) does not implement."""


# -- DuckDB --------------------------------------------------------------------------------

def extension_path() -> str:
    """The Lance extension binary inside the ``duckdb-extension-lance`` package."""
    import duckdb
    import duckdb_extension_lance

    root = os.path.join(os.path.dirname(duckdb_extension_lance.__file__), "extensions")
    path = os.path.join(root, f"v{duckdb.__version__}", "lance.duckdb_extension")
    if not os.path.exists(path):
        found = sorted(os.listdir(root)) if os.path.isdir(root) else []
        raise SystemExit(f"duckdb/adapter.py: no Lance extension for duckdb {duckdb.__version__} "
                         f"in {root} (found {found})")
    return path


def connect():
    import duckdb

    con = duckdb.connect(config={"allow_unsigned_extensions": "true"})
    con.execute(f"LOAD '{extension_path()}'")
    return con


def sql_string(s: str) -> str:
    return "'" + str(s).replace("'", "''") + "'"


def ident(name: str) -> str:
    return '"' + str(name).replace('"', '""') + '"'


class Engine:
    """One DuckDB connection; each request attaches the table's namespace afresh."""

    def __init__(self) -> None:
        import duckdb

        self.con = connect()
        self.scratch = tempfile.mkdtemp(prefix="lance-conformance-duckdb-")
        self.duckdb_version = duckdb.__version__
        row = self.con.execute("SELECT extension_version FROM duckdb_extensions() "
                               "WHERE extension_name = 'lance'").fetchone()
        self.lance_version = row[0] if row else "?"

    def close(self) -> None:
        shutil.rmtree(self.scratch, ignore_errors=True)

    def sql(self, text: str, params=None):
        return self.con.execute(text, params) if params is not None else self.con.execute(text)

    def link(self, uri: str) -> str:
        """A scratch folder whose ``t.lance`` is a symbolic link to the table at ``uri``."""
        path = os.path.abspath(uri)
        key = hashlib.sha256(f"{path}-{uuid.uuid4()}".encode()).hexdigest()[:16]
        folder = os.path.join(self.scratch, key)
        os.makedirs(folder)
        os.symlink(path, os.path.join(folder, "t.lance"), target_is_directory=True)
        return folder

    def scan(self, uri: str):
        """The rows of the table at ``uri``: ``SELECT * FROM '<folder>/t.lance'``."""
        if not os.path.isdir(uri):
            raise FileNotFoundError(f"no table at {uri}")
        folder = self.link(uri)
        try:
            where = sql_string(os.path.join(folder, "t.lance"))
            return self.sql(f"SELECT * FROM {where}").to_arrow_table()
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    def attach(self, uri: str) -> str:
        """Attach a namespace holding the table at ``uri`` as ``t``; returns its alias."""
        folder = self.link(uri)
        alias = f"ns_{os.path.basename(folder)}"
        self.sql(f"ATTACH {sql_string(folder)} AS {alias} (TYPE LANCE)")
        return alias

    def detach(self, alias: str) -> None:
        self.sql(f"DETACH {alias}")
        shutil.rmtree(os.path.join(self.scratch, alias[3:]), ignore_errors=True)

    def on_table(self, uri: str, statement: str):
        """Run ``statement`` with its first ``{t}`` naming the table at ``uri`` in an attached
        namespace (the table comes before any predicate, so braces in a predicate are left
        as they are)."""
        if not os.path.isdir(uri):
            raise FileNotFoundError(f"no table at {uri}")
        alias = self.attach(uri)
        try:
            return self.sql(statement.replace("{t}", f"{alias}.main.t", 1)).fetchall()
        finally:
            self.detach(alias)

    def scan_where(self, uri: str, where: str | None, columns: list[str] | None):
        """``SELECT <columns> FROM '<folder>/t.lance' WHERE <where>``."""
        if not os.path.isdir(uri):
            raise FileNotFoundError(f"no table at {uri}")
        folder = self.link(uri)
        try:
            source = sql_string(os.path.join(folder, "t.lance"))
            what = ", ".join(ident(c) for c in columns) if columns else "*"
            text = f"SELECT {what} FROM {source}" + (f" WHERE {where}" if where else "")
            return self.sql(text).to_arrow_table()
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    def vector_search(self, uri: str, nearest: dict, use_index: bool, where: str | None):
        """The ``k`` rows nearest to ``q``: the extension's ``lance_vector_search``."""
        if not os.path.isdir(uri):
            raise FileNotFoundError(f"no table at {uri}")
        folder = self.link(uri)
        try:
            source = sql_string(os.path.join(folder, "t.lance"))
            q = "[" + ", ".join(repr(float(x)) for x in nearest["q"]) + "]::FLOAT[]"
            text = (f"SELECT * FROM lance_vector_search({source}, {sql_string(nearest['column'])}, "
                    f"{q}, k := {int(nearest['k'])}, use_index := {'true' if use_index else 'false'})")
            return self.sql(text + (f" WHERE {where}" if where else "")).to_arrow_table()
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    def full_text(self, uri: str, match: dict, where: str | None):
        """Every row whose text holds a term of the match: the extension's ``lance_fts``
        (its ``k`` defaults to 10, so the table's row count is asked first)."""
        if not os.path.isdir(uri):
            raise FileNotFoundError(f"no table at {uri}")
        folder = self.link(uri)
        try:
            source = sql_string(os.path.join(folder, "t.lance"))
            rows = self.sql(f"SELECT count(*) FROM {source}").fetchall()[0][0]
            text = (f"SELECT * FROM lance_fts({source}, {sql_string(match['column'])}, "
                    f"{sql_string(match['query'])}, k := {max(1, int(rows))})")
            return self.sql(text + (f" WHERE {where}" if where else "")).to_arrow_table()
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    def merge(self, uri: str, rows, statement: str) -> None:
        """Run the MERGE ``statement`` with ``rows`` registered as the relation ``rows``."""
        self.con.register("rows", rows)
        try:
            self.on_table(uri, statement)
        finally:
            self.con.unregister("rows")

    def copy(self, uri: str, rows, options: dict) -> None:
        """``COPY`` the Arrow table ``rows`` to ``uri`` with Lance ``options``."""
        self.con.register("rows", rows)
        try:
            opts = ", ".join(["FORMAT lance", *(f"{k} {v}" for k, v in options.items())])
            self.sql(f"COPY (SELECT * FROM rows) TO {sql_string(uri)} ({opts})")
        finally:
            self.con.unregister("rows")


def latest_version(uri: str) -> int | None:
    """The newest version named in ``_versions/`` (V2 names count down from u64::MAX)."""
    found = []
    try:
        names = os.listdir(os.path.join(uri, "_versions"))
    except OSError:
        return None
    for name in names:
        m = re.fullmatch(r"(\d+)\.manifest", name)
        if m:
            n = int(m.group(1))
            found.append((1 << 64) - 1 - n if len(m.group(1)) == 20 and n >= 1 << 63 else n)
    return max(found) if found else None


# -- requests ------------------------------------------------------------------------------

def arrow_in(params: dict):
    import pyarrow as pa

    if params.get("data") is not None:
        raw = base64.b64decode(params["data"])
    elif params.get("data_path"):
        with open(params["data_path"], "rb") as f:
            raw = f.read()
    else:
        return None
    return pa.ipc.open_stream(pa.py_buffer(raw)).read_all()


def arrow_out(table, data_dir: str) -> dict:
    import pyarrow as pa

    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as w:
        w.write_table(table)
    raw = sink.getvalue().to_pybytes()
    if len(raw) <= INLINE_LIMIT or not data_dir:
        return {"arrow": base64.b64encode(raw).decode()}
    path = os.path.join(data_dir, f"duckdb-{uuid.uuid4().hex}.arrows")
    with open(path, "wb") as f:
        f.write(raw)
    return {"arrow_path": path}


def read(engine: Engine, params: dict) -> dict:
    uri, version = params["uri"], params.get("version")
    if params.get("with_row_id"):
        raise Unsupported("DuckDB's Lance scan has no _rowid column")
    if version is not None:
        latest = latest_version(uri)
        if latest is None:
            raise FileNotFoundError(f"no manifest under {uri}/_versions")
        if int(version) != latest:
            raise Unsupported(f"DuckDB reads the latest version only ({latest}), not {version}")
    if params.get("filter") is not None or params.get("columns"):
        table = engine.scan_where(uri, params.get("filter"), params.get("columns"))
    else:
        table = engine.scan(uri)
    return arrow_out(table, params.get("data_dir", ""))


def query(engine: Engine, params: dict) -> dict:
    """A filter, a nearest search or a full-text match at the latest version (PROTOCOL.md,
    "Queries through an index"); DuckDB picks the table's index on its own."""
    uri, version = params["uri"], params.get("version")
    if version is not None and int(version) != latest_version(uri):
        raise Unsupported(f"DuckDB reads the latest version only ({latest_version(uri)}), "
                          f"not {version}")
    if params.get("nearest"):
        table = engine.vector_search(uri, params["nearest"], params.get("use_index", True),
                                     params.get("filter"))
    elif params.get("match"):
        table = engine.full_text(uri, params["match"], params.get("filter"))
    else:
        table = engine.scan_where(uri, params.get("filter"), None)
    return arrow_out(table, params.get("data_dir", ""))


def merge_statement(op: dict) -> str:
    """The ``MERGE INTO`` statement of a ``merge_insert`` operation (``{t}``: the table)."""
    on = [op["on"]] if isinstance(op["on"], str) else list(op["on"])
    text = ("MERGE INTO {t} AS target USING rows AS source ON "
            + " AND ".join(f"target.{ident(k)} = source.{ident(k)}" for k in on))
    matched = op.get("when_matched_update_all")
    if matched is not None and matched is not False:
        cond = matched.get("condition") if isinstance(matched, dict) else None
        text += " WHEN MATCHED" + (f" AND ({cond})" if cond else "") + " THEN UPDATE SET *"
    if op.get("when_not_matched_insert_all"):
        text += " WHEN NOT MATCHED THEN INSERT *"
    by_source = op.get("when_not_matched_by_source_delete")
    if by_source is not None and by_source is not False:
        where = by_source.get("where") if isinstance(by_source, dict) else None
        text += " WHEN NOT MATCHED BY SOURCE" + (f" AND ({where})" if where else "") + " THEN DELETE"
    return text


def apply(engine: Engine, params: dict) -> dict:
    uri, op = params["uri"], params["op"]
    kind = op["op"]
    if kind in ("create", "overwrite"):
        if op.get("stable_row_ids"):
            raise Unsupported("COPY ... (FORMAT lance) has no stable row ids option")
        if op.get("v2_manifest_paths") is False:
            raise Unsupported("COPY ... (FORMAT lance) has no V1 manifest names option")
        rows = arrow_in(params)
        options = {"mode": "'overwrite'"}
        if op.get("data_storage_version"):
            if op["data_storage_version"] not in STORAGE_VERSIONS:
                raise Unsupported(f"data storage version {op['data_storage_version']}")
            options["data_storage_version"] = sql_string(op["data_storage_version"])
        if op.get("max_rows_per_file"):
            options["max_rows_per_file"] = int(op["max_rows_per_file"])
        if rows.num_rows == 0:
            options["write_empty_file"] = "true"
        engine.copy(uri, rows, options)
    elif kind == "append":
        if op.get("read_version") is not None:
            raise Unsupported("DuckDB commits at the latest version only (no read_version)")
        engine.copy(uri, arrow_in(params), {"mode": "'append'"})
    elif kind == "delete":
        engine.on_table(uri, "DELETE FROM {t} WHERE " + op["where"])
    elif kind == "update":
        sets = ", ".join(f"{ident(c)} = {v}" for c, v in op["set"].items())
        where = f" WHERE {op['where']}" if op.get("where") else ""
        engine.on_table(uri, "UPDATE {t} SET " + sets + where)
    elif kind == "add_columns":
        if len(op["columns"]) != 1:
            raise Unsupported("ALTER TABLE adds one column per version")
        name, alias = op["columns"][0]
        if alias not in SQL_TYPES:
            raise Unsupported(f"no DuckDB type reads back as Arrow {alias}")
        engine.on_table(uri, f"ALTER TABLE {{t}} ADD COLUMN {ident(name)} {SQL_TYPES[alias]}")
    elif kind == "drop_columns":
        if len(op["columns"]) != 1:
            raise Unsupported("ALTER TABLE drops one column per version")
        engine.on_table(uri, f"ALTER TABLE {{t}} DROP COLUMN {ident(op['columns'][0])}")
    elif kind == "compact":
        n = int(op.get("target_rows_per_fragment") or 1024 * 1024)
        engine.on_table(uri, f"OPTIMIZE {{t}} WITH (target_rows_per_fragment = {n})")
    elif kind == "merge_insert":
        engine.merge(uri, arrow_in(params), merge_statement(op))
    elif kind == "create_index":
        if str(op.get("index_type", "BTREE")).upper() != "BTREE":
            raise Unsupported(f"index type {op.get('index_type')}")
        column = str(op["column"])
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", column):
            raise Unsupported("CREATE INDEX takes unquoted names only (the extension's parser)")
        engine.sql(f"CREATE INDEX idx_{column} ON {sql_string(os.path.abspath(uri))} "
                   f"({column}) USING BTREE")
    else:
        raise Unsupported(f"DuckDB has no SQL for the operation {kind!r}")
    return {}


def hello(engine: Engine) -> dict:
    features = [f"storage:{v}" for v in STORAGE_VERSIONS] + ["index:btree", "v2-manifest-paths",
                                                             "filtered-read", "query", "full-text"]
    return {"name": "duckdb-lance",
            "version": f"duckdb {engine.duckdb_version}, lance extension {engine.lance_version}",
            "capabilities": {"read": True, "write": True, "ops": OPS, "row_ids": False,
                             "features": features, "types": TYPES,
                             "storage_versions": ["2.0", "2.1", "2.2"],
                             "time_travel": False}}


def error_class(exc: BaseException) -> str:
    """The protocol's error class for an error of DuckDB or its extension."""
    text = str(exc)
    if "panicked" in text or "panic" in text.lower():
        return "Panic"
    if isinstance(exc, FileNotFoundError) or re.search(r"not found|does not exist|No such file",
                                                       text, re.I):
        return "NotFound"
    if re.search(r"conflict", text, re.I):
        return "CommitConflict"
    if re.search(r"feature flag|unsupported|not supported", text, re.I):
        return "UnsupportedFeature"
    if re.search(r"corrupt|invalid (data|file|page|encoding)|decod|unexpected end", text, re.I):
        return "FormatError"
    if re.search(r"invalid", text, re.I):
        return "InvalidInput"
    return type(exc).__name__


def respond(rid, result=None, exc: BaseException | None = None) -> None:
    if exc is None:
        msg = {"id": rid, "ok": True, "result": result or {}}
    else:
        unsupported = isinstance(exc, Unsupported) or type(exc).__name__ == "NotImplementedException"
        msg = {"id": rid, "ok": False,
               "error": {"class": "Unsupported" if isinstance(exc, Unsupported) else error_class(exc),
                         "message": str(exc).splitlines()[0][:2000] if str(exc) else "",
                         "unsupported": unsupported}}
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


def serve(lines) -> int:
    """Answer the requests of ``lines`` with one Engine (the worker's loop)."""
    engine = Engine()
    try:
        for line in lines:
            if not line.strip():
                continue
            req = json.loads(line)
            rid, method, params = req.get("id"), req.get("method"), req.get("params") or {}
            try:
                if method == "hello":
                    result = hello(engine)
                elif method == "read":
                    result = read(engine, params)
                elif method == "query":
                    result = query(engine, params)
                elif method == "apply":
                    result = apply(engine, params)
                elif method == "shutdown":
                    respond(rid, {})
                    return 0
                else:
                    raise Unsupported(f"no method {method!r}")
            except Exception as exc:  # noqa: BLE001 - every error is an answer
                if not isinstance(exc, Unsupported):
                    traceback.print_exc(file=sys.stderr)
                respond(rid, exc=exc)
                continue
            respond(rid, result)
    finally:
        engine.close()
    return 0


class Worker:
    """DuckDB in a child process (this program with ``--worker``): a panic of the Lance
    extension aborts the process that loaded it (SIGABRT), and the request that did so is
    answered with the error class ``Panic`` (a crash: the kit never counts it as a clean
    refusal), its signal and the last lines the child wrote to stderr; the next request
    starts a new child."""

    def __init__(self) -> None:
        self.proc = None
        self.log = None

    def start(self) -> None:
        import subprocess

        self.log = tempfile.TemporaryFile()
        self.proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--worker"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.log)

    def ask(self, line: str) -> str:
        if self.proc is None or self.proc.poll() is not None:
            self.start()
        try:
            self.proc.stdin.write(line.encode() if line.endswith("\n") else (line + "\n").encode())
            self.proc.stdin.flush()
            answer = self.proc.stdout.readline()
        except OSError:
            answer = b""
        self.copy_log()
        if answer:
            return answer.decode()
        return self.died(json.loads(line).get("id"))

    def copy_log(self) -> None:
        """Pass what the child wrote to stderr on to this program's stderr."""
        self.log.seek(0)
        data = self.log.read()
        if data:
            sys.stderr.write(data.decode(errors="replace"))
            sys.stderr.flush()
        self.log.seek(0)
        self.log.truncate()
        self.last = data.decode(errors="replace")

    def died(self, rid) -> str:
        import signal

        code = self.proc.wait()
        name = signal.Signals(-code).name if code < 0 else f"exit code {code}"
        tail = " | ".join(self.last.strip().splitlines()[-3:])[-1500:]
        self.proc = None
        return json.dumps({"id": rid, "ok": False, "error": {
            "class": "Panic", "unsupported": False,
            "message": f"DuckDB's process died ({name}) on this request: {tail}"}}) + "\n"

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.stdin.close()
            self.proc.wait(timeout=30)


def main() -> int:
    if "--worker" in sys.argv[1:]:
        return serve(sys.stdin)
    worker = Worker()
    try:
        for line in sys.stdin:
            if not line.strip():
                continue
            sys.stdout.write(worker.ask(line))
            sys.stdout.flush()
            if json.loads(line).get("method") == "shutdown":
                return 0
    finally:
        worker.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
