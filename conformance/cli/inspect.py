"""``lance-conformance inspect URI``: everything the metadata of one dataset version says.

Prints a readable tree (or ``--json``): the version list with each version's manifest naming
(V1/V2), the schema (field ids, types, nullability), fragments with their data files and
deletion files, row-id sequence summaries, the transaction of every version, feature flags
by name, config and table metadata, base paths, tags and branches, every ref of the table
(main, each branch, each tag) with its versions, indices (with their
fragment bitmaps, and each index's decoded content: kind, layout version, rows covered, value
range, pages or postings) and any protobuf field this implementation does not know.

Exit codes: 0 done, 1 the dataset is broken (a format error), 2 usage error or the dataset
cannot be reached.
"""

from __future__ import annotations

import json
import sys
import uuid as _uuid

from reference_impl.errors import (
    FormatError,
    InvalidInput,
    LanceError,
    NotFound,
    StoreError,
    UnsupportedFeature,
)

_BITMAP_LIST_LIMIT = 64


def register(subparsers) -> None:
    p = subparsers.add_parser("inspect", help="show the metadata of a Lance dataset version",
                              description=__doc__.split("\n\n")[0])
    p.add_argument("uri", help="dataset URI or path")
    p.add_argument("--version", default=None,
                   help="version number or tag name (default: latest)")
    p.add_argument("--branch", default=None, help="branch name (default: main)")
    p.add_argument("--json", action="store_true", help="print JSON instead of a tree")
    p.add_argument("-o", "--storage-option", action="append", default=[], metavar="KEY=VALUE",
                   help="storage option passed to the object store (repeatable)")
    p.set_defaults(func=run)


def _parse_options(items: list[str]) -> dict[str, str]:
    opts = {}
    for item in items:
        if "=" not in item:
            raise InvalidInput(f"storage option {item!r} is not KEY=VALUE")
        k, v = item.split("=", 1)
        opts[k] = v
    return opts


def run(args) -> int:
    try:
        opts = _parse_options(args.storage_option)
        version = args.version
        if version is not None and version.isdigit():
            version = int(version)
        report = inspect_dataset(args.uri, version, branch=args.branch, storage_options=opts)
    except (FormatError, UnsupportedFeature) as exc:
        print(f"lance-conformance inspect: broken dataset: {exc}", file=sys.stderr)
        return 1
    except (NotFound, StoreError, InvalidInput) as exc:
        print(f"lance-conformance inspect: cannot open {args.uri}: {exc}", file=sys.stderr)
        return 2
    except LanceError as exc:
        print(f"lance-conformance inspect: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"lance-conformance inspect: cannot open {args.uri}: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(report, indent=2, ensure_ascii=False, default=str))
    else:
        print(render_tree(report))
    return 0


# -- collecting ----------------------------------------------------------------------

def _uuid_text(raw: bytes) -> str:
    return str(_uuid.UUID(bytes=raw)) if len(raw) == 16 else raw.hex()


def _bitmap(raw: bytes):
    if not raw:
        return []
    try:
        from pyroaring import BitMap

        bm = BitMap.deserialize(raw)
    except Exception as exc:  # noqa: BLE001 - shown, not fatal
        return {"error": f"fragment bitmap does not decode: {exc}", "bytes": len(raw)}
    if len(bm) <= _BITMAP_LIST_LIMIT:
        return list(bm)
    return {"count": len(bm), "min": bm.min(), "max": bm.max()}


def _row_id_summary(frag) -> dict | None:
    kind = frag.WhichOneof("row_id_sequence")
    if kind is None:
        return None
    if kind == "external_row_ids":
        e = frag.external_row_ids
        return {"external": {"path": e.path, "offset": e.offset, "size": e.size}}
    from reference_impl.proto import rowids_pb2

    seq = rowids_pb2.RowIdSequence()
    try:
        seq.ParseFromString(frag.inline_row_ids)
    except Exception as exc:  # noqa: BLE001
        return {"error": f"row id sequence does not parse: {exc}"}
    kinds: dict[str, int] = {}
    for seg in seq.segments:
        k = seg.WhichOneof("segment") or "unknown"
        kinds[k] = kinds.get(k, 0) + 1
    out: dict = {"inline_bytes": len(frag.inline_row_ids), "segments": len(seq.segments),
                 "segment_kinds": kinds}
    try:
        from reference_impl.table.rowids import decode_row_id_sequence

        ids = decode_row_id_sequence(frag.inline_row_ids)
        out["count"] = int(len(ids))
        if len(ids):
            out["min"], out["max"] = int(ids.min()), int(ids.max())
    except ImportError:
        pass
    except LanceError as exc:
        out["error"] = str(exc)
    return out


def _field(f) -> dict:
    d = {"id": f.id, "parent_id": f.parent_id, "name": f.name, "logical_type": f.logical_type,
         "nullable": f.nullable}
    if f.encoding:
        d["encoding"] = f.encoding
    if f.extension_name:
        d["extension_name"] = f.extension_name
    if len(f.metadata):
        d["metadata"] = {k: v.decode("utf-8", "replace") for k, v in f.metadata.items()}
    return d


def _maybe(msg, name):
    return getattr(msg, name) if msg.HasField(name) else None


def inspect_dataset(uri: str, version=None, *, branch=None, storage_options=None) -> dict:
    """The inspection report of one version as a JSON-able dict."""
    from reference_impl.dataset import open_dataset
    from reference_impl.table import flags, layout, versions
    from reference_impl.table.fragment import data_file_version
    from reference_impl.table.transaction import commit_message, operation_name

    ds = open_dataset(uri, version, branch=branch, storage_options=storage_options)
    m, mf = ds.manifest, ds.manifest_file
    entries = ds.version_entries()
    report: dict = {
        "uri": ds.uri,
        "branch": ds.branch,
        "version": ds.version,
        "latest_version": entries[-1].version if entries else None,
        "version_hint": versions.read_version_hint(ds.store),
        "versions": [{"version": e.version, "naming": e.scheme.upper(), "key": e.key,
                      "size": e.size} for e in entries],
    }
    detached = [e for e in versions.scan_versions(ds.store) if e.scheme == layout.SCHEME_DETACHED]
    if detached:
        report["detached_versions"] = [{"version": e.version, "key": e.key} for e in detached]
    report["manifest"] = {
        "key": mf.key, "size": mf.size, "tail_version": f"{mf.tail_major}.{mf.tail_minor}",
        "manifest_offset": mf.manifest_offset,
        "index_section_offset": _maybe(m, "index_section"),
        "transaction_field": mf.transaction_field,
        "timestamp": m.timestamp.ToJsonString() if m.HasField("timestamp") else None,
        "writer_version": f"{m.writer_version.library} {m.writer_version.version}".strip(),
        "data_format": f"{m.data_format.file_format} {m.data_format.version}".strip(),
        "data_storage_version": ds.data_storage_version,
        "max_fragment_id": _maybe(m, "max_fragment_id"),
        "next_row_id": m.next_row_id,
        "transaction_file": m.transaction_file,
    }
    report["feature_flags"] = {
        "reader": {"bits": m.reader_feature_flags, "names": flags.flag_names(m.reader_feature_flags)},
        "writer": {"bits": m.writer_feature_flags, "names": flags.flag_names(m.writer_feature_flags)},
    }
    report["config"] = dict(m.config)
    report["table_metadata"] = dict(m.table_metadata)
    report["schema_metadata"] = {k: v.decode("utf-8", "replace") for k, v in m.schema_metadata.items()}
    report["schema"] = [_field(f) for f in m.fields]
    report["base_paths"] = [{"id": bp.id, "name": _maybe(bp, "name"),
                             "is_dataset_root": bp.is_dataset_root, "path": bp.path}
                            for bp in sorted(m.base_paths, key=lambda b: b.id)]
    frags = []
    for frag in m.fragments:
        fd: dict = {"id": frag.id, "physical_rows": frag.physical_rows}
        fd["data_files"] = [{
            "path": df.path, "fields": list(df.fields), "column_indices": list(df.column_indices),
            "file_version": data_file_version(df),
            "file_major_minor": [df.file_major_version, df.file_minor_version],
            "size": df.file_size_bytes, "base_id": _maybe(df, "base_id")} for df in frag.files]
        if frag.HasField("deletion_file"):
            d = frag.deletion_file
            fd["deletion_file"] = {
                "name": layout.deletion_file_name(frag.id, d.read_version, d.id, d.file_type)
                if d.file_type in (0, 1) else None,
                "type": {0: "ARROW_ARRAY", 1: "BITMAP"}.get(d.file_type, f"unknown({d.file_type})"),
                "num_deleted_rows": d.num_deleted_rows, "base_id": _maybe(d, "base_id")}
        rid = _row_id_summary(frag)
        if rid is not None:
            fd["row_ids"] = rid
        frags.append(fd)
    report["fragments"] = frags
    report["count_rows"] = ds.count_rows()

    txns = []
    for e in entries:
        item: dict = {"version": e.version}
        try:
            other = ds if e.version == ds.version else ds.checkout_version(e.version)
            txn = other.transaction()
            if txn is None:
                item["operation"] = None
            else:
                item.update({"operation": operation_name(txn), "read_version": txn.read_version,
                             "uuid": txn.uuid, "commit_message": commit_message(txn),
                             "source": "inline" if other.manifest_file.transaction is not None
                             else "file"})
        except LanceError as exc:
            item["error"] = str(exc)
        txns.append(item)
    report["transactions"] = txns

    report["tags"] = ds.tags.list()
    report["branches"] = ds.branches.list()
    report["refs"] = _refs_with_versions(ds, report["tags"], report["branches"])
    indices = []
    for idx in ds.list_indices():
        indices.append({
            "name": idx.name, "uuid": _uuid_text(idx.uuid.uuid), "fields": list(idx.fields),
            "dataset_version": idx.dataset_version, "fragment_bitmap": _bitmap(idx.fragment_bitmap),
            "index_version": _maybe(idx, "index_version"), "base_id": _maybe(idx, "base_id"),
            "details_type": idx.index_details.type_url if idx.HasField("index_details") else None,
        })
    report["indices"] = indices
    # -- decoded indexes: every IndexMetadata field and its details (reference_impl.table.index)
    from reference_impl.table.index import index_report
    report["index_details"] = index_report(mf.index_section, path=mf.key)
    # -- end decoded indexes
    # -- index content: what each index's files hold (reference_impl.index.of_dataset)
    from reference_impl.index.of_dataset import summaries
    report["index_content"] = summaries(ds)
    report["unknown_fields"] = [
        {"where": where, "field": n, "wire_type": wt, "length": len(raw)}
        for where, items in mf.unknown_fields.items() for n, wt, raw in items]
    return report


def _content_line(c: dict) -> str:
    """One line of an index's decoded content summary."""
    head = (f"{c['name']} {c.get('kind') or 'unknown kind'} {c.get('version', '')}".rstrip()
            + f": covers {c['rows_covered']} rows of fragments {c['fragments_covered']}")
    if "not_read" in c:
        return f"{head}; not read: {c['not_read']}"
    if "error" in c:
        return f"{head}; does not decode: {c['error']}"
    parts = [f"{c['entries']} entries"]
    if c.get("min") is not None or c.get("max") is not None:
        parts.append(f"values {c.get('min')!r}..{c.get('max')!r}")
    for k in ("pages", "postings", "partitions", "nulls"):
        if c.get(k) is not None:
            parts.append(f"{k} {c[k]}")
    return f"{head}; " + ", ".join(parts)


def _refs_with_versions(ds, tags: dict, branches: dict) -> list[dict]:
    """Every ref of the table with its versions: main and each branch (the versions its
    own ``_versions/`` holds, with its parent), and each tag with the version it names."""
    from reference_impl.table import versions

    def listed(branch):
        try:
            return [e.version for e in versions.list_versions(ds.root_store, branch=branch)]
        except LanceError as exc:
            return {"error": str(exc)}

    out = [{"ref": "main", "versions": listed(None)}]
    for name, b in sorted(branches.items()):
        out.append({"ref": f"branch:{name}", "versions": listed(name),
                    "parent": f"{b['parent_branch'] or 'main'}:{b['parent_version']}"})
    for name, t in sorted(tags.items()):
        out.append({"ref": f"tag:{name}", "target": f"{t['branch'] or 'main'}:{t['version']}"})
    return out


# -- rendering -----------------------------------------------------------------------

def _kv(d: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in d.items()) if d else "(none)"


def render_tree(r: dict) -> str:
    out: list[str] = []
    add = out.append
    where = f" (branch {r['branch']})" if r["branch"] else ""
    add(f"Dataset {r['uri']}{where}: version {r['version']} of {len(r['versions'])} "
        f"(latest {r['latest_version']}, hint {r['version_hint']})")
    add("├─ versions")
    for v in r["versions"]:
        mark = " *" if v["version"] == r["version"] else ""
        add(f"│   {v['version']:>6}  {v['naming']}  {v['key']}  {v['size']} B{mark}")
    for v in r.get("detached_versions", []):
        add(f"│   detached {v['version']}  {v['key']}")
    m = r["manifest"]
    add(f"├─ manifest {m['key']} ({m['size']} B, tail {m['tail_version']}, manifest at "
        f"{m['manifest_offset']}, transaction field {m['transaction_field']})")
    add(f"│   writer {m['writer_version']}; data format {m['data_format']} -> "
        f"{m['data_storage_version']}; timestamp {m['timestamp']}")
    add(f"│   max_fragment_id {m['max_fragment_id']}; next_row_id {m['next_row_id']}; "
        f"transaction file {m['transaction_file'] or '(none)'}")
    ff = r["feature_flags"]
    add(f"├─ feature flags: reader {ff['reader']['bits']} {ff['reader']['names']}, "
        f"writer {ff['writer']['bits']} {ff['writer']['names']}")
    add(f"├─ config: {_kv(r['config'])}")
    add(f"├─ table metadata: {_kv(r['table_metadata'])}")
    add(f"├─ schema metadata: {_kv(r['schema_metadata'])}")
    add(f"├─ schema ({len(r['schema'])} fields)")
    for f in r["schema"]:
        null = "nullable" if f["nullable"] else "not null"
        add(f"│   id {f['id']:>3} parent {f['parent_id']:>3}  {f['name']}: {f['logical_type']} ({null})")
    add(f"├─ base paths: {'(none)' if not r['base_paths'] else ''}")
    for bp in r["base_paths"]:
        add(f"│   id {bp['id']} name={bp['name']} dataset_root={bp['is_dataset_root']} {bp['path']}")
    add(f"├─ fragments ({len(r['fragments'])}, {r['count_rows']} rows)")
    for fr in r["fragments"]:
        add(f"│   fragment {fr['id']}: {fr['physical_rows']} physical rows")
        for df in fr["data_files"]:
            base = f" base_id={df['base_id']}" if df["base_id"] is not None else ""
            add(f"│     data {df['path']} v{df['file_version']} fields={df['fields']} "
                f"columns={df['column_indices']} {df['size']} B{base}")
        if "deletion_file" in fr:
            d = fr["deletion_file"]
            base = f" base_id={d['base_id']}" if d["base_id"] is not None else ""
            add(f"│     deletions {d['name']} {d['type']} {d['num_deleted_rows']} rows{base}")
        if "row_ids" in fr:
            add(f"│     row ids {fr['row_ids']}")
    add("├─ transactions")
    for t in r["transactions"]:
        if "error" in t:
            add(f"│   v{t['version']}: error {t['error']}")
        elif t.get("operation") is None:
            add(f"│   v{t['version']}: (no transaction)")
        else:
            msg = f" message={t['commit_message']!r}" if t.get("commit_message") else ""
            add(f"│   v{t['version']}: {t['operation']} read_version={t['read_version']} "
                f"uuid={t['uuid']} ({t['source']}){msg}")
    add(f"├─ tags: {'(none)' if not r['tags'] else ''}")
    for name, t in r["tags"].items():
        add(f"│   {name} -> {t['branch'] or 'main'}:{t['version']}")
    add(f"├─ branches: {'(none)' if not r['branches'] else ''}")
    for name, b in r["branches"].items():
        add(f"│   {name} from {b['parent_branch'] or 'main'}:{b['parent_version']}")
    add("├─ refs")
    for ref in r.get("refs", []):
        if "target" in ref:
            add(f"│   {ref['ref']} -> {ref['target']}")
            continue
        vs = ref["versions"]
        shown = ", ".join(map(str, vs)) if isinstance(vs, list) else vs.get("error", "")
        parent = f" (from {ref['parent']})" if ref.get("parent") else ""
        add(f"│   {ref['ref']}{parent}: versions {shown or '(none)'}")
    add(f"├─ indices: {'(none)' if not r['indices'] else ''}")
    for i in r["indices"]:
        add(f"│   {i['name']} {i['uuid']} fields={i['fields']} version={i['dataset_version']} "
            f"fragments={i['fragment_bitmap']}")
    # -- decoded indexes (reference_impl.table.index.render_report)
    if r.get("index_details"):
        from reference_impl.table.index import render_report
        add("├─ index details")
        for line in render_report(r["index_details"]):
            add(f"│   {line}")
    # -- end decoded indexes
    if r.get("index_content"):
        add("├─ index content")
        for c in r["index_content"]:
            add(f"│   {_content_line(c)}")
    add(f"└─ unknown protobuf fields: {'(none)' if not r['unknown_fields'] else ''}")
    for u in r["unknown_fields"]:
        add(f"    {u['where']}: field {u['field']} wire type {u['wire_type']} {u['length']} B")
    return "\n".join(out)
