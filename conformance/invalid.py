"""Corruptions that break exactly one rule each, for the negative fixtures.

``CORRUPTIONS[rule_id]`` is a function taking the path of a fresh copy of a valid base
dataset and changing it in place so that ``validate(path, versions="all", deep=...)``
reports ``rule_id`` and no other error-severity rule (except those of ``ALSO[rule_id]``,
which state the same requirement and so necessarily fire too; each entry says why).
``tools/gen_invalid_fixtures.py`` applies each one to a copy of the base and stores the
result in ``fixtures/invalid/<RULE-ID>/``; cases in ``DEEP`` (and of deep rules) are
validated with ``deep=True``.

The base dataset (:func:`write_base`, pylance 14.0.2, V2 names, file version 2.1):
v1 create 3 rows (fragment 0), v2 append 2 rows (fragment 1), v3 delete one row of
fragment 0 (flags 1), tag ``t1`` -> v1, branch ``dev`` made from v3 (its v4 deletes every
row and its v3 is cleaned up, so it inherits no file through the placeholder base path that
:func:`normalize` writes). :func:`normalize`
then makes it byte-reproducible (seeded UUIDs and ids, fixed clocks, a placeholder for the
absolute path pylance records), so every generation writes the same bytes.

Deep cases (:data:`BYTE_PATCHES`) change bytes of one data file of the base or of a
one-version variant written by :func:`rebuild` ("2.0", "2.0-zstd", "2.2", "legacy",
"2.1-rich").

Other engineers add cases for their rules with :func:`corruption`; the helpers
(:func:`rewrite_manifest`, :func:`latest_manifest`, ...) re-encode a manifest file with its
index and transaction sections intact.
"""

from __future__ import annotations

import json
import shutil
import struct
from collections.abc import Callable
from pathlib import Path

from reference_impl.proto import rowids_pb2, table_pb2, transaction_pb2

CORRUPTIONS: dict[str, Callable[[Path], None]] = {}
DESCRIPTIONS: dict[str, str] = {}
# Rules of other areas that state the same requirement as a case's rule, so the case
# necessarily breaks them too (listed in case.json as "also").
ALSO: dict[str, list[str]] = {}
# Cases that must be validated with deep=True (besides those of deep rules).
DEEP: set[str] = set()
U64_MAX = (1 << 64) - 1
# An absolute base path no file references (so nothing is read from it).
OTHER_BASE = "/lance-conformance/elsewhere/ds"


def corruption(rule_id: str, what: str):
    """Register the decorated function as the corruption that breaks ``rule_id``."""

    def register(fn):
        CORRUPTIONS[rule_id] = fn
        DESCRIPTIONS[rule_id] = what
        return fn

    return register


# -- the base dataset ----------------------------------------------------------------------

def write_base(path: Path) -> Path:
    """Write the small valid base dataset with pylance (imported here only)."""
    import lance
    import pyarrow as pa

    uri = str(Path(path).resolve())
    lance.write_dataset(pa.table({"a": pa.array([1, 2, 3], pa.int64()),
                                  "s": pa.array(["x", "y", "z"])}), uri,
                        data_storage_version="2.1")
    lance.write_dataset(pa.table({"a": pa.array([4, 5], pa.int64()),
                                  "s": pa.array(["u", "v"])}), uri, mode="append")
    ds = lance.dataset(uri)
    ds.delete("a = 2")
    ds = lance.dataset(uri)
    ds.tags.create("t1", 1)
    dev = ds.create_branch("dev")
    # The branch is validated with the table, but the absolute main-root path its base path
    # records becomes a placeholder (normalize): so dev keeps no inherited file. It deletes
    # every row (v4) and cleanup removes its first (Clone) version, as pylance allows.
    dev.delete("true")
    dev = lance.dataset(uri).checkout_version(("dev", None))
    dev.cleanup_old_versions(older_than=__import__("datetime").timedelta(0))
    normalize(Path(uri))
    return Path(uri)


# -- determinism ----------------------------------------------------------------------------

# Where the base dataset "lives" for the references pylance writes as absolute paths (the
# branch's base path and the clone's ref_path): a fixed placeholder instead of the temporary
# directory the generator used, so every run writes the same bytes.
BASE_ROOT = "/lance-conformance/base/ds"
FIXED_SECONDS = 1_700_000_000  # 2023-11-14T22:13:20Z
FIXED_ISO = "2023-11-14T22:13:20Z"
_NS = __import__("uuid").UUID("6f1c2d3e-4b5a-4c6d-8e7f-0a1b2c3d4e5f")


def _seeded_uuid(label: str):
    import uuid

    return uuid.uuid5(_NS, label)


def normalize(root: Path, *, placeholder: str = BASE_ROOT) -> Path:
    """Make a pylance-written dataset byte-reproducible, in place.

    pylance draws a fresh UUID for every data file and transaction, a random u64 for every
    deletion file, stamps manifests and refs with the clock and records the dataset's
    absolute path in a branch's base path. This pass renames every such file to a name
    derived from its place in the history (seeded UUIDs, small deletion ids), rewrites the
    manifests and transactions that name them (decode, edit, encode), fixes every timestamp,
    replaces the dataset's path by ``placeholder`` and recomputes the refs' ``manifestSize``.
    What a validator checks (structure, counts, cross references) is unchanged.
    """
    root = Path(root)
    real = str(root.resolve())
    branches = sorted((root / "tree").iterdir()) if (root / "tree").is_dir() else []
    tracks = [("", "_versions")] + [
        (f"tree/{b.name}/", f"tree/{b.name}/_versions") for b in branches if b.is_dir()]
    data_map: dict[str, str] = {}
    del_map: dict[tuple[int, int, int], int] = {}
    from reference_impl.table.layout import data_file_name

    # 1. name every data file and deletion file in first-seen order over the history
    for _prefix, sub in tracks:
        for _v, p in manifests(root, sub):
            m, _i, _t = split_manifest(p.read_bytes())
            for frag in m.fragments:
                for df in frag.files:
                    if df.path not in data_map and (root / "data" / df.path).exists():
                        data_map[df.path] = data_file_name(
                            _seeded_uuid(f"data-{len(data_map)}").bytes)
                if frag.HasField("deletion_file"):
                    d = frag.deletion_file
                    key = (int(frag.id), int(d.read_version), int(d.id))
                    del_map.setdefault(key, 1000 + len(del_map))
    for old, new in data_map.items():
        (root / "data" / old).rename(root / "data" / new)
        sidecars = root / "data" / old.removesuffix(".lance")  # blob v2 sidecar directory
        if sidecars.is_dir():
            sidecars.rename(root / "data" / new.removesuffix(".lance"))
    for (fid, rv, old), new in del_map.items():
        for ext in ("arrow", "bin"):
            src = root / "_deletions" / f"{fid}-{rv}-{old}.{ext}"
            if src.exists():
                src.rename(root / "_deletions" / f"{fid}-{rv}-{new}.{ext}")

    def fix(msg, frag_id=None):
        """Rewrite names, ids and paths inside any manifest or transaction message."""
        name = msg.DESCRIPTOR.name
        if name == "DataFragment":
            frag_id = int(msg.id)
        if name == "DataFile" and msg.path in data_map:
            msg.path = data_map[msg.path]
        elif name == "DeletionFile" and frag_id is not None:
            key = (frag_id, int(msg.read_version), int(msg.id))
            if key in del_map:
                msg.id = del_map[key]
        for fd, value in msg.ListFields():
            if fd.type == fd.TYPE_MESSAGE:
                if fd.message_type.GetOptions().map_entry:
                    continue
                items = value if fd.is_repeated else [value]
                for sub in items:
                    fix(sub, frag_id)
            elif fd.type == fd.TYPE_STRING and not fd.is_repeated:
                if value == real or value.rstrip("/") == real:
                    setattr(msg, fd.name, placeholder)

    # 2. transactions: seeded uuids, names, contents; then the manifests that name them
    for prefix, sub in tracks:
        txn_dir = root / prefix / "_transactions"
        for v, p in manifests(root, sub):
            m, idx, txn = split_manifest(p.read_bytes())
            fix(m)
            m.timestamp.seconds, m.timestamp.nanos = FIXED_SECONDS + v, 0
            t = transaction_pb2.Transaction.FromString(txn) if txn is not None else None
            if m.transaction_file:
                old_name = m.transaction_file
                label = f"txn-{prefix}{v}"
                new_uuid = str(_seeded_uuid(label))
                file_txn = None
                if (txn_dir / old_name).exists():
                    file_txn = transaction_pb2.Transaction.FromString(
                        (txn_dir / old_name).read_bytes())
                    (txn_dir / old_name).unlink()
                for tx in (t, file_txn):
                    if tx is not None:
                        fix(tx)
                        tx.uuid = new_uuid
                new_name = f"{old_name.split('-', 1)[0]}-{new_uuid}.txn"
                if file_txn is not None:
                    (txn_dir / new_name).write_bytes(file_txn.SerializeToString())
                m.transaction_file = new_name
            elif t is not None:
                fix(t)
            p.write_bytes(encode_manifest(m, index=idx,
                                          txn=t.SerializeToString() if t is not None else None))

    # 3. refs: fixed clocks, seeded identifiers, manifest sizes of the rewritten manifests
    def manifest_size(branch, version):
        sub = "_versions" if not branch else f"tree/{branch}/_versions"
        for v, p in manifests(root, sub):
            if v == version:
                return p.stat().st_size
        return None

    for tag in sorted((root / "_refs" / "tags").glob("*.json")) if (root / "_refs" / "tags").is_dir() else ():
        doc = json.loads(tag.read_text())
        for k in ("createdAt", "updatedAt"):
            if k in doc:
                doc[k] = FIXED_ISO
        size = manifest_size(doc.get("branch"), doc.get("version"))
        if size is not None and "manifestSize" in doc:
            doc["manifestSize"] = size
        tag.write_text(json.dumps(doc, indent=2))
    for br in sorted((root / "_refs" / "branches").glob("*.json")) if (root / "_refs" / "branches").is_dir() else ():
        doc = json.loads(br.read_text())
        if "createAt" in doc:
            doc["createAt"] = FIXED_SECONDS
        ident = doc.get("identifier") or {}
        for i, pair in enumerate(ident.get("version_mapping") or []):
            pair[1] = _seeded_uuid(f"branch-{br.stem}-{i}").hex
        size = manifest_size(doc.get("parentBranch"), doc.get("parentVersion"))
        if size is not None and "manifestSize" in doc:
            doc["manifestSize"] = size
        br.write_text(json.dumps(doc, indent=2))
    return root


# -- manifest helpers ------------------------------------------------------------------------

def v2_name(version: int) -> str:
    return f"{U64_MAX - version:020d}.manifest"


def manifests(root: Path, sub: str = "_versions") -> list[tuple[int, Path]]:
    out = []
    for p in (root / sub).glob("*.manifest"):
        stem = p.name[:-9]
        if stem.isdigit():
            n = int(stem)
            out.append((U64_MAX - n if len(p.name) == 29 else n, p))
    return sorted(out)


def latest_manifest(root: Path, sub: str = "_versions") -> Path:
    return manifests(root, sub)[-1][1]


def split_manifest(data: bytes):
    """``(manifest, index_bytes | None, txn_bytes | None)`` of a manifest file's bytes."""
    pos = struct.unpack_from("<Q", data, len(data) - 16)[0]
    (length,) = struct.unpack_from("<I", data, pos)
    m = table_pb2.Manifest()
    m.ParseFromString(data[pos + 4: pos + 4 + length])

    def section(offset):
        (n,) = struct.unpack_from("<I", data, offset)
        return data[offset + 4: offset + 4 + n]

    idx = section(m.index_section) if m.HasField("index_section") else None
    txn = section(m.transaction_section) if m.HasField("transaction_section") else None
    return m, idx, txn


def encode_manifest(m, *, index: bytes | None = None, txn: bytes | None = None,
                    txn_field: int = 23, tail=(0, 2), deterministic: bool = False) -> bytes:
    """Frame a manifest: [index][transaction][manifest] + 16-byte tail (``deterministic``:
    map entries sorted by key, for writers whose map order varies from run to run)."""
    out = bytearray()
    m = type(m).FromString(m.SerializeToString())
    m.ClearField("index_section")
    m.ClearField("transaction_section")
    m.ClearField("transaction_section_spec")
    if index is not None:
        m.index_section = len(out)
        out += struct.pack("<I", len(index)) + index
    if txn is not None:
        if txn_field == 23:
            m.transaction_section = len(out)
        else:
            m.transaction_section_spec = len(out)
        out += struct.pack("<I", len(txn)) + txn
    pos = len(out)
    body = m.SerializeToString(deterministic=deterministic)
    out += struct.pack("<I", len(body)) + body
    out += struct.pack("<QHH", pos, tail[0], tail[1]) + b"LANC"
    return bytes(out)


def rewrite_manifest(path: Path, edit: Callable | None = None, *, edit_txn: Callable | None = None,
                     **encode_kw) -> None:
    """Decode the manifest file at ``path``, apply ``edit(manifest)`` (and
    ``edit_txn(transaction)`` to the inline transaction), encode it back in place."""
    m, idx, txn = split_manifest(path.read_bytes())
    if edit:
        edit(m)
    if edit_txn and txn is not None:
        t = transaction_pb2.Transaction.FromString(txn)
        edit_txn(t)
        txn = t.SerializeToString()
    encode_kw.setdefault("index", idx)
    encode_kw.setdefault("txn", txn)
    path.write_bytes(encode_manifest(m, **encode_kw))


def edit_transaction_everywhere(root: Path, edit: Callable, rename: Callable | None = None):
    """Apply ``edit`` to the latest version's transaction, inline and in its .txn file
    (optionally renaming the .txn file with ``rename(old_name, txn) -> new_name``)."""
    mpath = latest_manifest(root)
    m, idx, txn_bytes = split_manifest(mpath.read_bytes())
    t = transaction_pb2.Transaction.FromString(txn_bytes)
    edit(t)
    raw = t.SerializeToString()
    old = m.transaction_file
    new = rename(old, t) if rename else old
    (root / "_transactions" / old).unlink()
    (root / "_transactions" / new).write_bytes(raw)
    m.transaction_file = new
    mpath.write_bytes(encode_manifest(m, index=idx, txn=raw))


def data_path(root: Path, m, frag_index: int = 1) -> Path:
    return root / "data" / m.fragments[frag_index].files[0].path


def _latest(root):
    return latest_manifest(root)


def _edit(root, fn, **kw):
    rewrite_manifest(_latest(root), fn, **kw)


# -- LAYOUT ---------------------------------------------------------------------------------

@corruption("LAYOUT-001", "every manifest in _versions/ removed (and the refs that name them)")
def _layout_001(root: Path):
    for _v, p in manifests(root):
        p.unlink()
    shutil.rmtree(root / "_refs")
    shutil.rmtree(root / "tree")


@corruption("LAYOUT-002", "a data file renamed to frag.lance (and its DataFile.path)")
def _layout_002(root: Path):
    m, _, _ = split_manifest(_latest(root).read_bytes())
    old = m.fragments[1].files[0].path
    shutil.copy(root / "data" / old, root / "data" / "frag.lance")
    _edit(root, lambda m: setattr(m.fragments[1].files[0], "path", "frag.lance"))


@corruption("LAYOUT-003", "an unknown directory junk/ added at the root")
def _layout_003(root: Path):
    (root / "junk").mkdir()
    (root / "junk" / "x.bin").write_bytes(b"x")


@corruption("LAYOUT-005", "DataFile.path set to ../escape.lance")
def _layout_005(root: Path):
    _edit(root, lambda m: setattr(m.fragments[1].files[0], "path", "../escape.lance"))


@corruption("LAYOUT-007", "a stray _deletions/garbage.arrow added")
def _layout_007(root: Path):
    shutil.copy(_deletion_key(root), root / "_deletions" / "garbage.arrow")


@corruption("LAYOUT-006", "a stray _transactions/garbage.txn added")
def _layout_006(root: Path):
    (root / "_transactions" / "garbage.txn").write_bytes(b"")


# -- MANIFEST -------------------------------------------------------------------------------

@corruption("MANIFEST-001", "the magic of the latest manifest overwritten with XXXX")
def _manifest_001(root: Path):
    p = _latest(root)
    data = bytearray(p.read_bytes())
    data[-4:] = b"XXXX"
    p.write_bytes(bytes(data))


@corruption("MANIFEST-002", "the manifest length prefix increased by one")
def _manifest_002(root: Path):
    p = _latest(root)
    data = bytearray(p.read_bytes())
    pos = struct.unpack_from("<Q", data, len(data) - 16)[0]
    (n,) = struct.unpack_from("<I", data, pos)
    struct.pack_into("<I", data, pos, n - 1)
    p.write_bytes(bytes(data))


@corruption("MANIFEST-003", "the Manifest protobuf bytes replaced by 0xff")
def _manifest_003(root: Path):
    p = _latest(root)
    data = bytearray(p.read_bytes())
    pos = struct.unpack_from("<Q", data, len(data) - 16)[0]
    (n,) = struct.unpack_from("<I", data, pos)
    data[pos + 4: pos + 4 + n] = b"\xff" * n
    p.write_bytes(bytes(data))


@corruption("MANIFEST-004", "Manifest.index_section points past the end of the file")
def _manifest_004(root: Path):
    p = _latest(root)
    m, idx, txn = split_manifest(p.read_bytes())
    data = bytearray(encode_manifest(m, txn=txn))
    pos = struct.unpack_from("<Q", data, len(data) - 16)[0]
    m.index_section = 1 << 40
    m.transaction_section = 0
    body = m.SerializeToString()
    data = data[:pos] + struct.pack("<I", len(body)) + body + struct.pack("<QHH", pos, 0, 2) + b"LANC"
    p.write_bytes(bytes(data))


@corruption("MANIFEST-005", "the transaction section's length prefix runs past the tail")
def _manifest_005(root: Path):
    p = _latest(root)
    data = bytearray(p.read_bytes())
    m, _idx, _txn = split_manifest(bytes(data))
    struct.pack_into("<I", data, m.transaction_section, 1 << 30)
    p.write_bytes(bytes(data))


@corruption("MANIFEST-006", "version 1 renamed to the V1 name 1.manifest next to V2 names")
def _manifest_006(root: Path):
    (root / "_versions" / v2_name(1)).rename(root / "_versions" / "1.manifest")


@corruption("MANIFEST-007", "the latest manifest renamed to the V2 name of version 9")
def _manifest_007(root: Path):
    _latest(root).rename(root / "_versions" / v2_name(9))


@corruption("MANIFEST-008", "the manifest tail version set to 0.3")
def _manifest_008(root: Path):
    p = _latest(root)
    data = bytearray(p.read_bytes())
    struct.pack_into("<HH", data, len(data) - 8, 0, 3)
    p.write_bytes(bytes(data))


@corruption("MANIFEST-009", "the transaction offset moved from field 23 to field 21")
def _manifest_009(root: Path):
    _edit(root, None, txn_field=21)


@corruption("MANIFEST-010", "an attached version (1) stored under the detached name d1.manifest")
def _manifest_010(root: Path):
    (root / "_versions" / v2_name(1)).rename(root / "_versions" / "d1.manifest")
    # the tag on v1 would now point at nothing: move it to v2
    tag = root / "_refs" / "tags" / "t1.json"
    doc = json.loads(tag.read_text())
    doc["version"] = 2
    tag.write_text(json.dumps(doc, indent=2))


@corruption("MANIFEST-011", "writer_version.version given a 'v' prefix (v14.0.2)")
def _manifest_011(root: Path):
    _edit(root, lambda m: setattr(m.writer_version, "version", "v" + m.writer_version.version))


@corruption("MANIFEST-012", "writer_version.version given a prerelease part (14.0.2-rc.1)")
def _manifest_012(root: Path):
    _edit(root, lambda m: setattr(m.writer_version, "version", m.writer_version.version + "-rc.1"))


# -- FLAGS ----------------------------------------------------------------------------------

@corruption("FLAGS-001", "reader_feature_flags |= 128 (unknown)")
def _flags_001(root: Path):
    _edit(root, lambda m: setattr(m, "reader_feature_flags", m.reader_feature_flags | 128))


@corruption("FLAGS-002", "writer_feature_flags |= 256 (unknown)")
def _flags_002(root: Path):
    _edit(root, lambda m: setattr(m, "writer_feature_flags", m.writer_feature_flags | 256))


@corruption("FLAGS-003", "flag 1 cleared although a fragment has a deletion file")
def _flags_003(root: Path):
    def edit(m):
        m.reader_feature_flags &= ~1
        m.writer_feature_flags &= ~1
    _edit(root, edit)


@corruption("FLAGS-004", "an inline row id sequence added to fragment 1 without flag 2")
def _flags_004(root: Path):
    def edit(m):
        seq = rowids_pb2.RowIdSequence()
        seg = seq.segments.add()
        seg.range.start = 0
        seg.range.end = m.fragments[1].physical_rows
        m.fragments[1].inline_row_ids = seq.SerializeToString()
        m.next_row_id = seg.range.end
    _edit(root, edit)


@corruption("FLAGS-005", "Manifest.config set without writer flag 8")
def _flags_005(root: Path):
    _edit(root, lambda m: m.config.__setitem__("k", "v"))


@corruption("FLAGS-006", "a base path added without flag 16")
def _flags_006(root: Path):
    def edit(m):
        bp = m.base_paths.add()
        bp.id, bp.is_dataset_root, bp.path = 0, True, OTHER_BASE
    _edit(root, edit)


@corruption("FLAGS-007", "writer flag 8 set although Manifest.config is empty")
def _flags_007(root: Path):
    _edit(root, lambda m: setattr(m, "writer_feature_flags", m.writer_feature_flags | 8))


# -- SCHEMA ---------------------------------------------------------------------------------

def _add_field(m, name, fid, parent=-1, logical_type="int64"):
    f = m.fields.add()
    f.name, f.id, f.parent_id, f.logical_type, f.nullable = name, fid, parent, logical_type, True
    return f


@corruption("SCHEMA-001", "a new top-level field reuses id 0")
def _schema_001(root):
    _edit(root, lambda m: _add_field(m, "dup", 0))


@corruption("SCHEMA-002", "a field whose parent_id (50) names no field")
def _schema_002(root):
    _edit(root, lambda m: _add_field(m, "orphan", 100, parent=50))


@corruption("SCHEMA-003", "a child listed before its struct parent")
def _schema_003(root):
    def edit(m):
        _add_field(m, "c", 101, parent=102)
        _add_field(m, "p", 102, logical_type="struct")
    _edit(root, edit)


@corruption("SCHEMA-004", "a field with logical type int128")
def _schema_004(root):
    _edit(root, lambda m: _add_field(m, "weird", 103, logical_type="int128"))


@corruption("SCHEMA-005", "a list field without its item child")
def _schema_005(root):
    _edit(root, lambda m: _add_field(m, "l", 104, logical_type="list"))


@corruption("SCHEMA-006", "an int64 field with a child")
def _schema_006(root):
    def edit(m):
        _add_field(m, "x", 105)
        _add_field(m, "y", 106, parent=105)
    _edit(root, edit)


@corruption("SCHEMA-007", "a second top-level field named 'a'")
def _schema_007(root):
    _edit(root, lambda m: _add_field(m, "a", 107))


@corruption("SCHEMA-008", "a field with id -5")
def _schema_008(root):
    _edit(root, lambda m: _add_field(m, "neg", -5))


# -- FRAG -----------------------------------------------------------------------------------

@corruption("FRAG-001", "fragment 1 renumbered to 0")
def _frag_001(root):
    _edit(root, lambda m: setattr(m.fragments[1], "id", 0))


@corruption("FRAG-002", "max_fragment_id set to 0 below fragment 1")
def _frag_002(root):
    _edit(root, lambda m: setattr(m, "max_fragment_id", 0))


@corruption("FRAG-003", "max_fragment_id cleared")
def _frag_003(root):
    _edit(root, lambda m: m.ClearField("max_fragment_id"))


@corruption("FRAG-004", "physical_rows of fragment 1 increased by one")
def _frag_004(root):
    _edit(root, lambda m: setattr(m.fragments[1], "physical_rows", m.fragments[1].physical_rows + 1))


@corruption("FRAG-005", "DataFile.fields gains an unassigned id -1 (column index -1)")
def _frag_005(root):
    def edit(m):
        df = m.fragments[1].files[0]
        df.fields.append(-1)
        df.column_indices.append(-1)
    _edit(root, edit)


@corruption("FRAG-010", "DataFile.fields names field 999 (column index -1)")
def _frag_010(root):
    def edit(m):
        df = m.fragments[1].files[0]
        df.fields.append(999)
        df.column_indices.append(-1)
    _edit(root, edit)


@corruption("FRAG-006", "one column index dropped")
def _frag_006(root):
    _edit(root, lambda m: m.fragments[1].files[0].column_indices.pop())


@corruption("FRAG-007", "column indices [0, 0]")
def _frag_007(root):
    def edit(m):
        ci = m.fragments[1].files[0].column_indices
        ci[1] = ci[0]
    _edit(root, edit)


@corruption("FRAG-008", "a copy of fragment 1's data file added with the same fields")
def _frag_008(root):
    m, _, _ = split_manifest(_latest(root).read_bytes())
    src = m.fragments[1].files[0].path
    name = "1" * 24 + "0" * 26 + ".lance"
    shutil.copy(root / "data" / src, root / "data" / name)

    def edit(m):
        df = m.fragments[1].files.add()
        df.CopyFrom(m.fragments[1].files[0])
        df.path = name
    _edit(root, edit)


@corruption("FRAG-009", "a fragment with no data file added")
def _frag_009(root):
    def edit(m):
        f = m.fragments.add()
        f.id = m.max_fragment_id + 1
        m.max_fragment_id = f.id
    _edit(root, edit)


@corruption("FRAG-011", "a legacy dataset whose data file lists field ids [1, 0]")
def _frag_011(root):
    # rebuild the table as a legacy (0.1) dataset: the rule is about v1 data files only
    import lance
    import pyarrow as pa

    for child in list(root.iterdir()):
        shutil.rmtree(child) if child.is_dir() else child.unlink()
    lance.write_dataset(pa.table({"a": pa.array([1, 2], pa.int64()), "s": pa.array(["x", "y"])}),
                        str(root), data_storage_version="legacy")
    normalize(root)

    def edit(m):
        df = m.fragments[0].files[0]
        df.fields[0], df.fields[1] = df.fields[1], df.fields[0]
    _edit(root, edit)


# -- DATAFILE -------------------------------------------------------------------------------

def _latest_m(root):
    return split_manifest(_latest(root).read_bytes())[0]


@corruption("DATAFILE-001", "fragment 1's data file deleted")
def _datafile_001(root):
    data_path(root, _latest_m(root)).unlink()


@corruption("DATAFILE-002", "file_size_bytes increased by one")
def _datafile_002(root):
    _edit(root, lambda m: setattr(m.fragments[1].files[0], "file_size_bytes",
                                  m.fragments[1].files[0].file_size_bytes + 1))


@corruption("DATAFILE-003", "the data file's magic overwritten with XXXX")
def _datafile_003(root):
    p = data_path(root, _latest_m(root))
    data = bytearray(p.read_bytes())
    data[-4:] = b"XXXX"
    p.write_bytes(bytes(data))


@corruption("DATAFILE-004", "the data file's footer version changed from 2.1 to 2.2")
def _datafile_004(root):
    p = data_path(root, _latest_m(root))
    data = bytearray(p.read_bytes())
    struct.pack_into("<HH", data, len(data) - 8, 2, 2)
    p.write_bytes(bytes(data))


@corruption("DATAFILE-005", "Manifest.data_format.version set to 2.2 over 2.1 files")
def _datafile_005(root):
    _edit(root, lambda m: setattr(m.data_format, "version", "2.2"))


@corruption("DATAFILE-009", "Manifest.data_format.version set to 0.1 over 2.1 files")
def _datafile_009(root):
    _edit(root, lambda m: setattr(m.data_format, "version", "0.1"))


@corruption("DATAFILE-006", "a column index beyond the file's columns")
def _datafile_006(root):
    def edit(m):
        m.fragments[1].files[0].column_indices[1] = 7
    _edit(root, edit)


@corruption("DATAFILE-007", "Manifest.data_format.version set to 9.9")
def _datafile_007(root):
    _edit(root, lambda m: setattr(m.data_format, "version", "9.9"))


# -- TXN ------------------------------------------------------------------------------------

def _txn_path(root):
    return root / "_transactions" / _latest_m(root).transaction_file


@corruption("TXN-001", "the latest version's .txn file deleted")
def _txn_001(root):
    _txn_path(root).unlink()


@corruption("TXN-002", "the latest .txn file replaced by bytes that do not parse")
def _txn_002(root):
    _txn_path(root).write_bytes(b"\xff\xff\xff")


@corruption("TXN-003", "the .txn file gains a property the inline copy lacks")
def _txn_003(root):
    p = _txn_path(root)
    t = transaction_pb2.Transaction.FromString(p.read_bytes())
    t.transaction_properties["x"] = "y"
    p.write_bytes(t.SerializeToString())


@corruption("TXN-004", "read_version set to the version itself (inline, file and name)")
def _txn_004(root):
    version = _latest_m(root).version

    def edit(t):
        t.read_version = version
    edit_transaction_everywhere(root, edit, lambda old, t: f"{t.read_version}-{t.uuid}.txn")


@corruption("TXN-005", "the .txn file renamed to another uuid")
def _txn_005(root):
    edit_transaction_everywhere(
        root, lambda t: None,
        lambda old, t: f"{t.read_version}-00000000-0000-4000-8000-000000000000.txn")


@corruption("TXN-006", "the operation removed from the transaction (inline and file)")
def _txn_006(root):
    def edit(t):
        op = t.WhichOneof("operation")
        t.ClearField(op)
    edit_transaction_everywhere(root, edit)


@corruption("TXN-007", "the latest .txn file renamed with a zero-padded read_version (02-...)")
def _txn_007(root):
    edit_transaction_everywhere(root, lambda t: None,
                                lambda old, t: f"{t.read_version:02d}-{t.uuid}.txn")


# -- COMMIT ---------------------------------------------------------------------------------

@corruption("COMMIT-001", "manifests renamed to V1 names and version 1 also stored as 01.manifest")
def _commit_001(root):
    for v, p in manifests(root):
        p.rename(root / "_versions" / f"{v}.manifest")
    shutil.copy(root / "_versions" / "1.manifest", root / "_versions" / "01.manifest")


@corruption("COMMIT-002", "the latest manifest's timestamp set to 1970")
def _commit_002(root):
    def edit(m):
        m.timestamp.seconds, m.timestamp.nanos = 1, 0
    _edit(root, edit)


@corruption("COMMIT-003", "a manifest of version 0 added (no transaction)")
def _commit_003(root):
    m, _idx, _txn = split_manifest((root / "_versions" / v2_name(1)).read_bytes())
    m.version = 0
    m.transaction_file = ""
    (root / "_versions" / v2_name(0)).write_bytes(encode_manifest(m))


@corruption("COMMIT-004", "latest_version_hint.json replaced by garbage")
def _commit_004(root):
    (root / "_versions" / "latest_version_hint.json").write_bytes(b"not json")


# -- BASEPATH -------------------------------------------------------------------------------

def _with_bases(root, *paths, ids=None):
    def edit(m):
        for i, p in enumerate(paths):
            bp = m.base_paths.add()
            bp.id = (ids or list(range(len(paths))))[i]
            bp.is_dataset_root, bp.path = True, p
        m.reader_feature_flags |= 16
        m.writer_feature_flags |= 16
    _edit(root, edit)


@corruption("BASEPATH-001", "two base paths with id 0")
def _basepath_001(root):
    _with_bases(root, OTHER_BASE, OTHER_BASE + "-2", ids=[0, 0])


@corruption("BASEPATH-005", "one base path with id 5 (ids count from 0)")
def _basepath_005(root):
    _with_bases(root, OTHER_BASE, ids=[5])


@corruption("BASEPATH-002", "a data file with base_id 7 and no base paths")
def _basepath_002(root):
    _edit(root, lambda m: setattr(m.fragments[1].files[0], "base_id", 7))


@corruption("BASEPATH-003", "a base path climbing with '..'")
def _basepath_003(root):
    _with_bases(root, OTHER_BASE + "/../elsewhere")


@corruption("BASEPATH-004", "a relative base path")
def _basepath_004(root):
    _with_bases(root, "relative/ds")


# -- REFS -----------------------------------------------------------------------------------

def _tag(root):
    return root / "_refs" / "tags" / "t1.json"


def _branch(root):
    return root / "_refs" / "branches" / "dev.json"


@corruption("REFS-001", "tag t1 loses its manifestSize")
def _refs_001(root):
    doc = json.loads(_tag(root).read_text())
    del doc["manifestSize"]
    _tag(root).write_text(json.dumps(doc, indent=2))


@corruption("REFS-002", "tag t1 points at version 99")
def _refs_002(root):
    doc = json.loads(_tag(root).read_text())
    doc["version"] = 99
    _tag(root).write_text(json.dumps(doc, indent=2))


@corruption("REFS-003", "branch dev's parentVersion written as a string")
def _refs_003(root):
    doc = json.loads(_branch(root).read_text())
    doc["parentVersion"] = str(doc["parentVersion"])
    _branch(root).write_text(json.dumps(doc, indent=2))


@corruption("REFS-004", "branch dev's manifests removed from tree/dev/_versions")
def _refs_004(root):
    for _v, p in manifests(root, "tree/dev/_versions"):
        p.unlink()


@corruption("REFS-005", "branch dev's manifest says branch 'other'")
def _refs_005(root):
    rewrite_manifest(latest_manifest(root, "tree/dev/_versions"),
                     lambda m: setattr(m, "branch", "other"))


@corruption("REFS-006", "a tag file named 'bad name' (space)")
def _refs_006(root):
    shutil.copy(_tag(root), root / "_refs" / "tags" / "bad%20name.json")


@corruption("REFS-007", "a branch file named 'main' (reserved)")
def _refs_007(root):
    shutil.copy(_branch(root), root / "_refs" / "branches" / "main.json")


@corruption("REFS-008", "main's version 3, the version branch dev starts from, removed "
                        "(manifest and transaction file)")
def _refs_008(root):
    for v, p in manifests(root):
        if v == 3:
            m, _i, _t = split_manifest(p.read_bytes())
            p.unlink()
            if m.transaction_file:
                (root / "_transactions" / m.transaction_file).unlink(missing_ok=True)


# -- DATAFILE.fields against the data file (deep) ------------------------------------------

@corruption("DATAFILE-008", "fragment 0's data file entry names field id 7 for column 's' "
                            "(the file stores ids 0 and 1) in the latest manifest")
def _datafile_008(root):
    def edit(m):
        df = m.fragments[0].files[0]
        df.fields[1] = 7

    _edit(root, edit)


# Byte patches of other areas that land inside a 2.0 file's FileDescriptor (global buffer 0,
# bytes 192-252 of the "2.0" variant): the file's own schema loses fields, so the field ids
# DataFile.fields names are no longer in the file, which DATAFILE-008 reports as well.
ALSO.update({
    # the schema decodes without field `a` (id 0); column 0 is then read as the string `s`
    "ENC-051": ["DATAFILE-008"],
    # the schema decodes with no field at all: no column is mapped to a field
    "FILE-051": ["DATAFILE-008"],
})


# -- DELETION -------------------------------------------------------------------------------
# The base's version 3 deletes offset 1 of fragment 0 (3 rows) with the Arrow file
# _deletions/0-2-1000.arrow (read_version 2, id 1000, num_deleted_rows 1).

def _deletion_key(root: Path) -> Path:
    d = _latest_m(root).fragments[0].deletion_file
    ext = "bin" if d.file_type == 1 else "arrow"
    return root / "_deletions" / f"0-{d.read_version}-{d.id}.{ext}"


def _arrow_ipc(columns: dict, batches: int = 1, type_=None) -> bytes:
    """An Arrow IPC file of ``columns`` (name -> values), repeated over ``batches`` batches."""
    import io

    import pyarrow as pa

    arrays = {k: pa.array(v, type_) for k, v in columns.items()}
    batch = pa.record_batch(list(arrays.values()), names=list(arrays))
    sink = io.BytesIO()
    with pa.ipc.new_file(sink, batch.schema) as w:
        for _ in range(batches):
            w.write_batch(batch)
    return sink.getvalue()


def _set_deletion(root: Path, **fields):
    def edit(m):
        for k, v in fields.items():
            setattr(m.fragments[0].deletion_file, k, v)
    _edit(root, edit)


@corruption("DELETION-001", "fragment 0's deletion file removed")
def _deletion_001(root):
    _deletion_key(root).unlink()


@corruption("DELETION-002", "DeletionFile.file_type set to 5 (neither ARROW_ARRAY nor BITMAP)")
def _deletion_002(root):
    _set_deletion(root, file_type=5)


@corruption("DELETION-003", "the Arrow deletion file replaced by bytes that are not Arrow IPC")
def _deletion_003(root):
    _deletion_key(root).write_bytes(b"not an arrow file at all")


@corruption("DELETION-004", "the deletion file lists offset 7 of a 3-row fragment")
def _deletion_004(root):
    _deletion_key(root).write_bytes(_arrow_ipc({"row_id": [7]}, type_=__import__("pyarrow").uint32()))


@corruption("DELETION-005", "num_deleted_rows set to 2 (the file holds one offset)")
def _deletion_005(root):
    _set_deletion(root, num_deleted_rows=2)


@corruption("DELETION-006", "deletion file read_version set to 3, the manifest's own version "
                            "(file renamed to 0-3-1000.arrow)")
def _deletion_006(root):
    old = _deletion_key(root)
    _set_deletion(root, read_version=3)
    old.rename(_deletion_key(root))


@corruption("DELETION-007", "the Arrow deletion file's column is int64")
def _deletion_007(root):
    _deletion_key(root).write_bytes(_arrow_ipc({"row_id": [1]}, type_=__import__("pyarrow").int64()))


@corruption("DELETION-008", "the Arrow deletion file holds its offsets in two batches ([1], [])")
def _deletion_008(root):
    import io

    import pyarrow as pa

    schema = pa.schema([pa.field("row_id", pa.uint32(), nullable=False)])
    sink = io.BytesIO()
    with pa.ipc.new_file(sink, schema) as w:
        w.write_batch(pa.record_batch([pa.array([1], pa.uint32())], schema=schema))
        w.write_batch(pa.record_batch([pa.array([], pa.uint32())], schema=schema))
    _deletion_key(root).write_bytes(sink.getvalue())


@corruption("DELETION-009", "an empty deletion file (no offsets, num_deleted_rows 0)")
def _deletion_009(root):
    _deletion_key(root).write_bytes(_arrow_ipc({"row_id": []}, type_=__import__("pyarrow").uint32()))
    _set_deletion(root, num_deleted_rows=0)


@corruption("DELETION-010", "the Arrow deletion file lists offset 1 twice")
def _deletion_010(root):
    _deletion_key(root).write_bytes(_arrow_ipc({"row_id": [1, 1]}, type_=__import__("pyarrow").uint32()))


# -- ROWID ----------------------------------------------------------------------------------
# Each case first turns the base's latest version into a stable-row-id version (flag 2 in
# both flag fields, fragment 0 ids [0, 3), fragment 1 ids [3, 5), next_row_id 5), as
# pylance writes with enable_stable_row_ids, then breaks one thing.

def _range_seq(start: int, end: int) -> bytes:
    seq = rowids_pb2.RowIdSequence()
    seg = seq.segments.add()
    seg.range.start, seg.range.end = start, end
    return seq.SerializeToString()


def _stable(root: Path, edit: Callable | None = None):
    def full(m):
        m.reader_feature_flags |= 2
        m.writer_feature_flags |= 2
        m.fragments[0].inline_row_ids = _range_seq(0, 3)
        m.fragments[1].inline_row_ids = _range_seq(3, 5)
        m.next_row_id = 5
        if edit:
            edit(m)
    _edit(root, full)


def _versions_seq(versions) -> bytes:
    from reference_impl.table.rowids import encode_version_sequence

    return encode_version_sequence(versions)


@corruption("ROWID-001", "fragment 1's inline row id sequence replaced by undecodable bytes")
def _rowid_001(root):
    _stable(root, lambda m: setattr(m.fragments[1], "inline_row_ids", b"\xff\xff\xff"))


@corruption("ROWID-002", "fragment 1 (2 rows) carries the one-id sequence [3, 4)")
def _rowid_002(root):
    _stable(root, lambda m: setattr(m.fragments[1], "inline_row_ids", _range_seq(3, 4)))


@corruption("ROWID-003", "fragment 1's row ids [0, 2) repeat live ids of fragment 0")
def _rowid_003(root):
    _stable(root, lambda m: setattr(m.fragments[1], "inline_row_ids", _range_seq(0, 2)))


@corruption("ROWID-004", "next_row_id set to 4 although fragment 1 holds row id 4")
def _rowid_004(root):
    _stable(root, lambda m: setattr(m, "next_row_id", 4))


@corruption("ROWID-005", "fragment 1 (2 rows) has a created-at version sequence of 1 entry")
def _rowid_005(root):
    _stable(root, lambda m: setattr(m.fragments[1], "inline_created_at_versions",
                                    _versions_seq([2])))


@corruption("ROWID-006", "fragment 1's rows created at version 9 in version 3")
def _rowid_006(root):
    _stable(root, lambda m: setattr(m.fragments[1], "inline_created_at_versions",
                                    _versions_seq([9, 9])))


@corruption("ROWID-007", "fragment 1's rows created at version 2 but last updated at 1")
def _rowid_007(root):
    def edit(m):
        m.fragments[1].inline_created_at_versions = _versions_seq([2, 2])
        m.fragments[1].inline_last_updated_at_versions = _versions_seq([1, 1])
    _stable(root, edit)


@corruption("ROWID-008", "flag 2 set but fragment 0 carries no row id sequence")
def _rowid_008(root):
    _stable(root, lambda m: m.fragments[0].ClearField("inline_row_ids"))


@corruption("ROWID-009", "fragment 1's row ids point at an external range past the end of "
                         "an existing file (its data file)")
def _rowid_009(root):
    def edit(m):
        ext = m.fragments[1].external_row_ids
        ext.path = "data/" + m.fragments[1].files[0].path
        ext.offset, ext.size = m.fragments[1].files[0].file_size_bytes + 64, 16
    _stable(root, edit)


@corruption("ROWID-010", "created-at versions on fragment 1 of a table without row ids")
def _rowid_010(root):
    _edit(root, lambda m: setattr(m.fragments[1], "inline_created_at_versions",
                                  _versions_seq([2, 2])))


# -- deep cases: one byte of a data file changed ------------------------------------------
# The deep rules judge the bytes of data files. Each case below takes one small dataset
# (the base's 2.1 files, or a one-version 2.0 / legacy dataset written by pylance 14.0.2 and
# normalized like the base) and overwrites bytes at a fixed offset of one data file. The
# offsets were found by trying single-byte changes on these deterministic files and keeping
# one that breaks exactly the rule (the files are byte-identical on every run, so the
# offsets hold; the fixture test re-validates every case).

def _legacy_table():
    import pyarrow as pa

    return pa.table({"a": pa.array([1, 2], pa.int64()), "s": pa.array(["x", "y"]),
                     "f": pa.array([-1.0, 0.0], pa.float64()),
                     "n": pa.array([None, None], pa.float64())})


def _small_table():
    import pyarrow as pa

    return pa.table({"a": pa.array([1, 2], pa.int64()), "s": pa.array(["x", "y"])})


def rebuild(root: Path, variant: str) -> Path:
    """Replace the dataset at ``root`` by the one-version dataset of ``variant``: "2.1"
    keeps the base; "2.0", "2.2", "legacy" and "2.0-zstd" (2.0 with the string column
    zstd-compressed) are written afresh with pylance and normalized."""
    if variant == "2.1":
        return root
    import lance

    for child in list(root.iterdir()):
        shutil.rmtree(child) if child.is_dir() else child.unlink()
    table = _legacy_table() if variant == "legacy" else _small_table()
    version = variant
    if variant == "2.0-zstd":
        # the string column's bytes zstd-compressed inside a 2.0 Flat buffer
        import pyarrow as pa

        field = pa.field("s", pa.string(), metadata={"lance-encoding:compression": "zstd"})
        table = pa.Table.from_arrays([table.column("a"), table.column("s")],
                                     schema=pa.schema([table.schema.field("a"), field]))
        version = "2.0"
    if variant == "2.1-rich":
        table, version = _rich_table(), "2.1"
    lance.write_dataset(table, str(root), data_storage_version=version)
    return normalize(root)


def _rich_table():
    """64 rows whose columns make pylance 14.0.2 pick the 2.1 compressive encodings: small
    integers (bit-packing), long runs (RLE), many distinct similar strings (FSST), an
    all-null column (constant layout) and a zstd-compressed string column (General)."""
    import pyarrow as pa

    n = 64
    z = pa.field("z", pa.string(), metadata={"lance-encoding:compression": "zstd"})
    cols = {
        "b": pa.array([i % 8 for i in range(n)], pa.int32()),
        "r": pa.array([i // 32 for i in range(n)], pa.int64()),
        "t": pa.array([f"lance-conformance-fixture-{i:04d}" for i in range(n)]),
        "n": pa.array([None] * n, pa.int32()),
        "z": pa.array([f"zz-{i % 5}" for i in range(n)]),
    }
    schema = pa.schema([pa.field(k, v.type) for k, v in cols.items() if k != "z"] + [z])
    return pa.Table.from_arrays(list(cols.values()), schema=schema)


def variant_data_file(root: Path, variant: str) -> Path:
    """The data file a deep case patches: fragment 1's of the base, the only one else."""
    m = _latest_m(root)
    return root / "data" / m.fragments[1 if variant == "2.1" else 0].files[0].path


def _patch(variant: str, offset: int, value: bytes):
    def apply(root: Path):
        rebuild(root, variant)
        p = variant_data_file(root, variant)
        data = bytearray(p.read_bytes())
        pos = offset if offset >= 0 else len(data) + offset
        data[pos: pos + len(value)] = value
        p.write_bytes(bytes(data))
    return apply


# rule id -> (variant, offset from the start (or from the end when negative), new bytes).
# 2.1 file: 629 bytes (fragment 1 of the base); 2.0: 570; 2.0-zstd: 614; legacy: 1149;
# 2.1-rich: 4332.
BYTE_PATCHES: dict[str, tuple[str, int, bytes]] = {
    # 2.1 container (file.py) and 2.1 encodings (encoding.py)
    "FILE-001": ("2.1", 625, b"\x00"),     # first byte of the LANC magic
    "FILE-002": ("2.1", 590, b"\x11"),     # CMO table offset in the footer
    "FILE-003": ("2.1", 621, b"\x03"),     # footer major version 2 -> 3
    "FILE-004": ("2.1", 574, b"\x11"),     # global buffer 0 position (GBO table)
    "FILE-005": ("2.1", 256, b"\x00"),     # inside the FileDescriptor (global buffer 0)
    "FILE-006": ("2.1", 317, b"\x00"),     # inside column 0's ColumnMetadata
    "FILE-011": ("2.1", 590, b"\x00"),     # CMO table offset moved into the data region
    "FILE-013": ("2.1", 371, b"\x00"),     # a page length
    "FILE-015": ("2.1", 372, b"\x32"),     # Page.encoding's tag: field 4 -> unknown field 6
    "ENC-001": ("2.1", 414, b"\x00"),
    "ENC-003": ("2.1", 194, b"\x00"),      # a variable-width offset
    "ENC-040": ("2.1", 411, b"\x1a"),
    "ENC-041": ("2.1", 0, b"\x00"),        # first mini-block chunk header
    "ENC-046": ("2.1", 425, b"\x00"),     # found by search: decodes fewer values than slots
    "ENC-042": ("2.2", 427, b"\x00"),
    "ENC-012": ("2.1-rich", 450, b"\x00"),   # inside the RLE page of column `r`
    "ENC-044": ("2.1-rich", 4076, b"\x00"),  # the constant layout of the all-null column
    # 2.0 (file_v2_0.py)
    "FILE-012": ("2.0", 300, b"\x01"),     # a page buffer offset made unaligned
    "FILE-050": ("2.0", 258, b"\x00"),     # the page encoding's Any type_url
    "FILE-051": ("2.0", 192, b"\x1a"),
    "FILE-052": ("2.0", 253, b"\x00"),     # a ColumnMetadata
    "ENC-050": ("2.0", 303, b"\x00"),      # a page buffer size
    "ENC-051": ("2.0", 194, b"\x1a"),      # an ArrayEncoding node
    "ENC-052": ("2.0", 64, b"\x11"),       # a Binary offset
    "ENC-053": ("2.0-zstd", 128, b"\x00"),  # the u64 length before the zstd frame: 2 -> 0
    # legacy (file_v2_0.py, stats.py)
    "FILE-060": ("legacy", 508, b"\x16"),  # inside the Metadata block
    "FILE-061": ("legacy", 75, b"\x10"),
    "FILE-062": ("legacy", 671, b"\x01"),  # batch_offsets[0] 0 -> 1
    "FILE-063": ("legacy", 18, b"\x7f"),   # a var-binary offset
    "STATS-001": ("legacy", 678, b"\x1a"),
    "STATS-002": ("legacy", 138, b"\x10"),  # a null_count
    "STATS-003": ("legacy", 0, b"\x00"),    # the first value of `a` below its min
    "STATS-004": ("legacy", 236, b"\x01"),  # the min of the all-null float column
    "STATS-005": ("legacy", 227, b"\x80"),  # sign bit of the zero max of `f`
    "STATS-006": ("legacy", 783, b"\x30"),  # the statistics schema's logical type
}


def _register_patches() -> None:
    for rule_id, (variant, offset, value) in sorted(BYTE_PATCHES.items()):
        where = f"offset {offset}" if offset >= 0 else f"offset {offset} from the end"
        corruption(rule_id, f"{variant} data file: bytes at {where} set to {value.hex()}")(
            _patch(variant, offset, value))
        DEEP.add(rule_id)


_register_patches()

# Cases whose single change necessarily breaks a second rule, and why.
ALSO.update({
    # DATAFILE-003 reads the footer, offset tables and FileDescriptor without --deep; the
    # deep FILE rules judge the same bytes in more detail, so both see the damage.
    **{r: ["DATAFILE-003"] for r in ("FILE-001", "FILE-002", "FILE-003", "FILE-004",
                                     "FILE-005", "FILE-006")},
    # FILE-052 (2.0) and FILE-006 (every 2.x file) both parse the column metadata.
    "FILE-052": ["DATAFILE-003", "FILE-006"],
    # a page whose declared length is wrong also decodes to a different value count
    "FILE-013": ["ENC-046"],
    # a page without its encoding cannot be decoded, which ENC-046 reports for the page
    "FILE-015": ["ENC-046"],
    "ENC-042": ["ENC-046"],
})


@corruption("STATS-007", "legacy data file: the statistics child 'min_value' of the first "
                         "field renamed 'min_valux' (same length)")
def _stats_007(root: Path):
    rebuild(root, "legacy")
    p = variant_data_file(root, "legacy")
    data = p.read_bytes()
    # pylance writes the statistics schema before any other name "min_value" in the file
    # (the statistics pages hold values only), so the first occurrence is field 0's child
    at = data.find(b"min_value")
    p.write_bytes(data[:at] + b"min_valux" + data[at + len(b"min_value"):])


# -- INDEX, MEMWAL: cases live in conformance/invalid_index.py (index engineer) -----------------
# -- FILE, ENC (2.1/2.2 decoding): cases live in conformance/invalid_file.py -------------------
# -- BLOB (blob v2 columns): cases live in conformance/invalid_blob.py --------------------------
from . import invalid_blob as _invalid_blob  # noqa: E402,F401  (registers its cases)
from . import invalid_file as _invalid_file  # noqa: E402,F401  (registers its cases)
from . import invalid_index as _invalid_index  # noqa: E402,F401  (registers its cases)
