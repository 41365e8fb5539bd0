#!/usr/bin/env node
// The LanceDB Node SDK (npm @lancedb/lancedb, pinned in package.json beside this file) as an
// implementation under test of lance-conformance. It speaks conformance/harness/PROTOCOL.md
// and nothing else: JSON lines on stdin/stdout, tables as Arrow IPC streams made and read
// with the apache-arrow package the SDK itself uses.
//
//   python -m conformance.servers install-node-adapter       # npm install, once
//   lance-conformance run --impl cmd:"node .../lancedb_node/adapter.mjs" --suite all
//
// The npm modules are looked up in --modules DIR, $LANCE_CONFORMANCE_LANCEDB_NODE,
// $LANCE_CONFORMANCE_TOOLS_DIR/lancedb-node (default /tmp/lance-conformance-tools/lancedb-node,
// where install-node-adapter puts them), then beside this file.
//
// LanceDB opens tables of a database: <database>/<name>.lance. A URI named so is opened as
// that; for any other local path the adapter makes a scratch database whose <name>.lance is
// a symbolic link to the path (the dataset itself is read and written in place).
//
// merge_insert is the SDK's mergeInsert(on) with whenMatchedUpdateAll({where}),
// whenNotMatchedInsertAll() and whenNotMatchedBySourceDelete({where}); a filtered read is
// query().where(filter).select(columns).
//
// What the SDK has no API for is answered "unsupported" with the reason: merge (a new column
// joined on a key; the SDK's mergeInsert is an upsert of rows), update_config, an append at
// an older read version, max_rows_per_file, blob bytes (take_blobs), reads with an external
// manifest store, and data the SDK's Arrow library (apache-arrow) cannot decode.

import crypto from "node:crypto";
import fs from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import readline from "node:readline";
import { fileURLToPath } from "node:url";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const INLINE_LIMIT = 1 << 20;
const STORAGE_CANDIDATES = ["legacy", "2.0", "2.1", "2.2", "2.3"];
const OPS = ["create", "append", "overwrite", "delete", "update", "add_columns", "drop_columns",
  "compact", "tag", "restore", "create_index", "merge_insert"];

// -- the SDK, from the folder npm installed it into -------------------------------------------

function modulesDir() {
  const i = process.argv.indexOf("--modules");
  const tools = process.env.LANCE_CONFORMANCE_TOOLS_DIR || "/tmp/lance-conformance-tools";
  const candidates = [i >= 0 ? process.argv[i + 1] : null, process.env.LANCE_CONFORMANCE_LANCEDB_NODE,
    path.join(tools, "lancedb-node"), HERE];
  for (const dir of candidates) {
    if (dir && fs.existsSync(path.join(dir, "node_modules", "@lancedb", "lancedb"))) return dir;
  }
  process.stderr.write("lancedb_node/adapter.mjs: @lancedb/lancedb is not installed in any of "
    + `${candidates.filter(Boolean).join(", ")}; run: python -m conformance.servers install-node-adapter\n`);
  process.exit(3);
}

const MODULES = modulesDir();
const require = createRequire(path.join(MODULES, "package.json"));
const lancedb = require("@lancedb/lancedb");
const arrow = require("apache-arrow"); // the instance the SDK uses (it resolves the same one)
const SDK_VERSION = JSON.parse(fs.readFileSync(
  path.join(path.dirname(require.resolve("@lancedb/lancedb")), "..", "package.json"), "utf8")).version;
const ARROW_VERSION = JSON.parse(fs.readFileSync(
  path.join(MODULES, "node_modules", "apache-arrow", "package.json"), "utf8")).version;

// -- errors ------------------------------------------------------------------------------------

class Unsupported extends Error {}

/** The protocol's error class for an error of the SDK (the reference implementation's names). */
function errorClass(e) {
  const m = String((e && e.message) || e);
  if (/panic/i.test(m)) return "Panic"; // a Rust panic: the kit counts it as a crash
  if (/conflict|retryable commit|concurrent/i.test(m)) return "CommitConflict";
  if (/feature flag|reader feature|writer feature|unsupported|not supported|not yet implemented/i.test(m)) {
    return "UnsupportedFeature";
  }
  if (/corrupt|invalid (data|file|page|encoding|footer)|unexpected (eof|end)|decod|format/i.test(m)) {
    return "FormatError";
  }
  if (/not found|does not exist|no such file/i.test(m)) return "NotFound";
  if (/invalid/i.test(m)) return "InvalidInput";
  return "LanceError";
}

/** An error thrown by apache-arrow (not by the SDK's native core): the SDK's Arrow library
 * cannot hold these rows, which says nothing about the Lance format. */
function arrowLimit(e) {
  return e && !e.code && /apache-arrow/.test(String(e.stack || ""));
}

// -- tables of a database ----------------------------------------------------------------------

const SCRATCH = fs.mkdtempSync(path.join(os.tmpdir(), "lance-conformance-node-"));
process.on("exit", () => fs.rmSync(SCRATCH, { recursive: true, force: true }));
const connections = new Map();

/** {db, name} of the table at ``uri``; ``create`` makes the folder a link needs. */
function locate(uri, create = false) {
  let where = String(uri).replace(/\/+$/, "");
  if (where.startsWith("file://")) where = fileURLToPath(where);
  else if (/^[a-z][a-z0-9+.-]*:\/\//i.test(where)) {
    if (!where.endsWith(".lance")) throw new Unsupported("a table URI on a store must end in .lance");
    const cut = where.lastIndexOf("/");
    return { db: where.slice(0, cut), name: where.slice(cut + 1, -".lance".length) };
  }
  where = path.resolve(where);
  if (where.endsWith(".lance")) {
    if (create) fs.mkdirSync(path.dirname(where), { recursive: true });
    return { db: path.dirname(where), name: path.basename(where, ".lance") };
  }
  const db = path.join(SCRATCH, crypto.createHash("sha256").update(where).digest("hex").slice(0, 16));
  const link = path.join(db, "t.lance");
  if (create) fs.mkdirSync(where, { recursive: true });
  if (!fs.existsSync(db)) {
    fs.mkdirSync(db, { recursive: true });
    fs.symlinkSync(where, link, "dir");
  }
  return { db, name: "t" };
}

async function database(db) {
  if (!connections.has(db)) connections.set(db, await lancedb.connect(db));
  return connections.get(db);
}

async function open(uri, version = null) {
  const { db, name } = locate(uri);
  const options = version === null || version === undefined ? {} : { version: Number(version) };
  return (await database(db)).openTable(name, undefined, options);
}

// -- Arrow IPC ---------------------------------------------------------------------------------

function tableIn(params) {
  let raw = null;
  if (params.data) raw = Buffer.from(params.data, "base64");
  else if (params.data_path) raw = fs.readFileSync(params.data_path);
  if (raw === null) return null;
  try {
    return arrow.tableFromIPC(raw);
  } catch (e) {
    throw new Unsupported(`apache-arrow ${ARROW_VERSION} cannot decode the rows: ${e.message}`);
  }
}

function rowsOut(table, dataDir) {
  let raw;
  try {
    raw = Buffer.from(arrow.tableToIPC(table, "stream"));
  } catch (e) {
    throw new Unsupported(`apache-arrow ${ARROW_VERSION} cannot encode the rows: ${e.message}`);
  }
  if (raw.length <= INLINE_LIMIT || !dataDir) return { arrow: raw.toString("base64") };
  const file = path.join(dataDir, `rows-${crypto.randomUUID()}.arrows`);
  fs.writeFileSync(file, raw);
  return { arrow_path: file };
}

// -- what the SDK can write ----------------------------------------------------------------------

async function storageVersions() {
  const out = [];
  for (const v of STORAGE_CANDIDATES) {
    const db = await lancedb.connect(fs.mkdtempSync(path.join(SCRATCH, "probe-")));
    try {
      await db.createTable("t", [{ x: 1 }], { storageOptions: { new_table_data_storage_version: v } });
      out.push(v);
    } catch {
      // this SDK refuses the version: not declared
    }
  }
  return out;
}

const ALIASES = {
  int8: "Int8", int16: "Int16", int32: "Int32", int64: "Int64", uint8: "Uint8", uint16: "Uint16",
  uint32: "Uint32", uint64: "Uint64", float16: "Float16", halffloat: "Float16", float32: "Float32",
  float: "Float32", float64: "Float64", double: "Float64", string: "Utf8", str: "Utf8",
  utf8: "Utf8", large_string: "LargeUtf8", large_str: "LargeUtf8", large_utf8: "LargeUtf8",
  binary: "Binary", large_binary: "LargeBinary", bool: "Bool", boolean: "Bool",
  date32: "DateDay", date64: "DateMillisecond",
};

function arrowType(alias) {
  const cls = ALIASES[alias];
  if (!cls) throw new Unsupported(`no apache-arrow type for the alias ${alias}`);
  return new arrow[cls]();
}

async function apply(params) {
  const op = params.op;
  const data = tableIn(params);
  if (op.op === "create") {
    const { db, name } = locate(params.uri, true);
    const storageOptions = {};
    if (op.data_storage_version) storageOptions.new_table_data_storage_version = op.data_storage_version;
    if (op.stable_row_ids) storageOptions.new_table_enable_stable_row_ids = "true";
    if ("v2_manifest_paths" in op) {
      storageOptions.new_table_enable_v2_manifest_paths = String(Boolean(op.v2_manifest_paths));
    }
    if ("max_rows_per_file" in op) throw new Unsupported("createTable has no max_rows_per_file");
    await (await database(db)).createTable(name, data, { mode: "create", storageOptions });
    return {};
  }
  if (op.op === "append" && op.read_version !== undefined && op.read_version !== null) {
    throw new Unsupported("the SDK has no commit at an older read version");
  }
  const t = await open(params.uri);
  switch (op.op) {
    case "append":
    case "overwrite":
      await t.add(data, { mode: op.op });
      break;
    case "delete":
      await t.delete(op.where);
      break;
    case "update":
      await t.update(op.where ? { where: op.where, valuesSql: op.set } : { valuesSql: op.set });
      break;
    case "add_columns":
      await t.addColumns(op.columns.map(([n, alias]) => new arrow.Field(n, arrowType(alias), true)));
      break;
    case "drop_columns":
      await t.dropColumns(op.columns);
      break;
    case "compact":
      await t.optimize();
      break;
    case "tag": {
      const tags = await t.tags();
      const action = op.action || "create";
      if (action === "create") await tags.create(op.name, Number(op.version || (await t.version())));
      else if (action === "update") await tags.update(op.name, Number(op.version));
      else await tags.delete(op.name);
      break;
    }
    case "restore":
      await t.checkout(Number(op.version));
      await t.restore();
      break;
    case "merge_insert": {
      let b = t.mergeInsert(op.on); // a column name or a list of them
      const matched = op.when_matched_update_all;
      if (matched !== undefined && matched !== null && matched !== false) {
        const cond = typeof matched === "object" ? matched.condition : null;
        b = cond ? b.whenMatchedUpdateAll({ where: cond }) : b.whenMatchedUpdateAll();
      }
      if (op.when_not_matched_insert_all) b = b.whenNotMatchedInsertAll();
      const bySource = op.when_not_matched_by_source_delete;
      if (bySource !== undefined && bySource !== null && bySource !== false) {
        const where = typeof bySource === "object" ? bySource.where : null;
        b = where ? b.whenNotMatchedBySourceDelete({ where }) : b.whenNotMatchedBySourceDelete();
      }
      await b.execute(data);
      break;
    }
    case "create_index":
      if ((op.index_type || "BTREE").toUpperCase() !== "BTREE") {
        throw new Unsupported(`index type ${op.index_type}`);
      }
      await t.createIndex(op.column, { config: lancedb.Index.btree() });
      break;
    default:
      throw new Unsupported(`operation ${op.op}`);
  }
  return {};
}

// -- the protocol loop ---------------------------------------------------------------------------

async function handle(method, params) {
  switch (method) {
    case "hello":
      return {
        name: "@lancedb/lancedb",
        version: SDK_VERSION,
        capabilities: {
          read: true, write: true, ops: OPS, row_ids: true,
          features: [...(await storageVersions()).map((v) => `storage:${v}`), "stable-row-ids",
            "v2-manifest-paths", "v1-names", "tags", "index:btree", "query", "full-text", "filtered-read"],
        },
      };
    case "read": {
      const t = await open(params.uri, params.version);
      const q = t.query();
      if (params.with_row_id) q.withRowId();
      // a filtered read (feature filtered-read): the filter and the columns, in their order
      if (params.filter !== undefined && params.filter !== null) q.where(params.filter);
      if (params.columns) q.select(params.columns);
      let rows;
      try {
        rows = await q.toArrow();
      } catch (e) {
        if (arrowLimit(e)) {
          throw new Unsupported(`apache-arrow ${ARROW_VERSION} cannot decode the rows the SDK read: ${e.message}`);
        }
        throw e;
      }
      if (rows.numRows === 0 && rows.schema.fields.length === 0) {
        // no row matched: the SDK answers a table without a schema; the table's own, projected
        const schema = await t.schema();
        const fields = params.columns ? params.columns.map((c) => schema.fields.find((f) => f.name === c))
          : schema.fields;
        rows = new arrow.Table(new arrow.Schema(fields));
      }
      return rowsOut(rows, params.data_dir);
    }
    case "query": {
      // a filter (query().where), a nearest search (vectorSearch) or a full-text match
      // (fullTextSearch), through the table's indexes unless use_index is false
      const t = await open(params.uri, params.version);
      let q;
      if (params.nearest) {
        q = t.vectorSearch(params.nearest.q).column(params.nearest.column).distanceType("l2")
          .limit(Number(params.nearest.k));
        if (params.use_index === false) q.bypassVectorIndex();
      } else if (params.match) {
        // a full-text match through the INVERTED index on its column; every matching row
        q = t.query().fullTextSearch(params.match.query, { columns: [params.match.column] })
          .limit(await t.countRows());
      } else {
        q = t.query(); // a filter goes through a scalar index on its column when there is one
      }
      if (params.filter) q.where(params.filter);
      let rows;
      try {
        rows = await q.toArrow();
      } catch (e) {
        if (arrowLimit(e)) {
          throw new Unsupported(`apache-arrow ${ARROW_VERSION} cannot decode the rows the SDK read: ${e.message}`);
        }
        throw e;
      }
      return rowsOut(rows, params.data_dir);
    }
    case "versions":
      return { versions: (await (await open(params.uri)).listVersions()).map((v) => Number(v.version)) };
    case "apply":
      return apply(params);
    case "shutdown":
      return {};
    default:
      throw new Unsupported(`method ${method}`);
  }
}

async function main() {
  const out = process.stdout;
  console.log = console.error; // the protocol owns stdout
  const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
  for await (const line of lines) {
    if (!line.trim()) continue;
    const req = JSON.parse(line);
    let resp;
    try {
      resp = { id: req.id, ok: true, result: await handle(req.method, req.params || {}) };
    } catch (e) {
      const unsupported = e instanceof Unsupported;
      if (process.env.LANCE_CONFORMANCE_DEBUG) process.stderr.write(`${e.stack}\n`);
      resp = {
        id: req.id, ok: false,
        error: { class: unsupported ? "Unsupported" : errorClass(e), message: String(e.message || e).slice(0, 2000), unsupported },
      };
    }
    out.write(`${JSON.stringify(resp)}\n`);
    if (req.method === "shutdown") break;
  }
  process.exit(0);
}

main();
