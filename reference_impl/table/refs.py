"""Tags and branches (REFS-NAMESPACE-COMMIT §1-3).

Refs live under the **main** dataset root, never under a branch:

* ``_refs/tags/{encoded name}.json``::

      {"branch": str|null, "version": u64, "createdAt": RFC 3339, "updatedAt": RFC 3339,
       "manifestSize": int, "metadata": {str: str}}

  ``version`` and ``manifestSize`` are required (a missing one makes pylance's whole
  ``tags.list()`` fail); ``branch`` null, missing or ``"main"`` means main; unknown keys
  are ignored; strings where numbers belong are refused.

* ``_refs/branches/{encoded name}.json``::

      {"parentBranch": str|null, "identifier": {"version_mapping": [[u64, hex32], ...]},
       "parentVersion": u64, "createAt": unix seconds, "manifestSize": int, "metadata": {}}

  A legacy file without ``identifier`` is read with a stand-in mapping ``[[0, hex]]``, hex
  being two FNV-1a-64 hashes (standard basis, then basis XOR 0x9e3779b97f4a7c15) of
  ``"branch_name={n}\\nparent_branch={p or ''}\\nparent_version={v}\\ncreate_at={t}"``,
  big-endian, as 32 hex digits.

The writers produce serde_json's "pretty" bytes: two-space indent, ``": "`` after keys, one
key per line, ``{}`` for an empty map, no trailing newline, keys in the fixed order above.
Timestamps use the RFC 3339 "AutoSi" form: UTC with ``Z`` and 0, 3, 6 or 9 fraction digits,
the fewest that show the value exactly.
"""

from __future__ import annotations

import datetime as _dt
import json
import re
from dataclasses import dataclass, field

from ..errors import FormatError, NotFound
from ..io.base import ObjectStore
from . import layout

MAX_REF_FILE = 1 << 20


@dataclass
class Tag:
    name: str
    branch: str | None
    version: int
    created_at: str | None
    updated_at: str | None
    manifest_size: int
    metadata: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"branch": self.branch, "version": self.version, "created_at": self.created_at,
                "updated_at": self.updated_at, "manifest_size": self.manifest_size,
                "metadata": dict(self.metadata)}


@dataclass
class Branch:
    name: str
    parent_branch: str | None
    identifier: list[tuple[int, str]]
    parent_version: int
    create_at: int | None
    manifest_size: int | None
    metadata: dict[str, str] = field(default_factory=dict)
    legacy_identifier: bool = False

    def to_dict(self) -> dict:
        return {"parent_branch": self.parent_branch,
                "branch_identifier": [tuple(p) for p in self.identifier],
                "parent_version": self.parent_version, "create_at": self.create_at,
                "manifest_size": self.manifest_size, "metadata": dict(self.metadata)}


# -- timestamps ----------------------------------------------------------------------

_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)
_RFC3339 = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?([Zz]|[+-]\d{2}:\d{2})$")


def format_timestamp(value) -> str:
    """RFC 3339 "AutoSi" text of ``value``: integer nanoseconds since the epoch, or a
    timezone-aware datetime (naive means UTC)."""
    if isinstance(value, _dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=_dt.UTC)
        delta = value - _EPOCH
        ns = (delta.days * 86400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1000
    else:
        ns = int(value)
    secs, frac = divmod(ns, 1_000_000_000)
    base = (_EPOCH + _dt.timedelta(seconds=secs)).strftime("%Y-%m-%dT%H:%M:%S")
    if frac == 0:
        return base + "Z"
    if frac % 1_000_000 == 0:
        return f"{base}.{frac // 1_000_000:03d}Z"
    if frac % 1000 == 0:
        return f"{base}.{frac // 1000:06d}Z"
    return f"{base}.{frac:09d}Z"


def parse_timestamp(text: str) -> int:
    """Nanoseconds since the epoch of an RFC 3339 string. Raises ValueError."""
    m = _RFC3339.match(text) if isinstance(text, str) else None
    if not m:
        raise ValueError(f"not an RFC 3339 timestamp: {text!r}")
    y, mo, d, h, mi, s = (int(g) for g in m.groups()[:6])
    frac = int((m.group(7) or "").ljust(9, "0") or 0)
    tz = m.group(8)
    offset = 0 if tz in ("Z", "z") else (1 if tz[0] == "+" else -1) * (int(tz[1:3]) * 60 + int(tz[4:6]))
    moment = _dt.datetime(y, mo, d, h, mi, s, tzinfo=_dt.UTC) - _dt.timedelta(minutes=offset)
    delta = moment - _EPOCH
    return (delta.days * 86400 + delta.seconds) * 1_000_000_000 + frac


def normalize_timestamp(text: str) -> str:
    """``text`` as pylance writes it back (UTC, AutoSi)."""
    return format_timestamp(parse_timestamp(text))


# -- JSON writers --------------------------------------------------------------------

def _pretty(doc: dict) -> bytes:
    return json.dumps(doc, indent=2, ensure_ascii=False).encode("utf-8")


def tag_json(*, version: int, manifest_size: int, branch: str | None = None,
             created_at=None, updated_at=None, metadata: dict[str, str] | None = None) -> bytes:
    """The bytes of a tag file. ``created_at``/``updated_at``: RFC 3339 text, nanoseconds or
    datetime; None leaves the key out."""
    doc: dict = {"branch": branch, "version": int(version)}
    if created_at is not None:
        doc["createdAt"] = created_at if isinstance(created_at, str) else format_timestamp(created_at)
    if updated_at is not None:
        doc["updatedAt"] = updated_at if isinstance(updated_at, str) else format_timestamp(updated_at)
    doc["manifestSize"] = int(manifest_size)
    doc["metadata"] = dict(metadata or {})
    return _pretty(doc)


def branch_json(*, parent_version: int, manifest_size: int, create_at: int,
                parent_branch: str | None = None, identifier: list | None = None,
                metadata: dict[str, str] | None = None) -> bytes:
    """The bytes of a branch file; ``identifier`` is the ``version_mapping`` pair list."""
    doc: dict = {"parentBranch": parent_branch}
    if identifier is not None:
        doc["identifier"] = {"version_mapping": [[int(v), str(u)] for v, u in identifier]}
    doc["parentVersion"] = int(parent_version)
    doc["createAt"] = int(create_at)
    doc["manifestSize"] = int(manifest_size)
    doc["metadata"] = dict(metadata or {})
    return _pretty(doc)


# -- legacy branch identifier ------------------------------------------------------------

_FNV_PRIME = 0x100000001B3
_FNV_BASIS = 0xCBF29CE484222325
_GOLDEN = 0x9E3779B97F4A7C15
_M64 = (1 << 64) - 1


def _fnv1a(data: bytes, basis: int) -> int:
    h = basis
    for b in data:
        h = ((h ^ b) * _FNV_PRIME) & _M64
    return h


def legacy_branch_identifier(name: str, parent_branch: str | None, parent_version: int,
                             create_at) -> str:
    """The stand-in identifier pylance computes for a branch file without ``identifier``."""
    text = (f"branch_name={name}\nparent_branch={parent_branch or ''}\n"
            f"parent_version={parent_version}\ncreate_at={create_at}").encode()
    a = _fnv1a(text, _FNV_BASIS)
    b = _fnv1a(text, _FNV_BASIS ^ _GOLDEN)
    return (a.to_bytes(8, "big") + b.to_bytes(8, "big")).hex()


# -- readers ---------------------------------------------------------------------------

def _is_u64(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= layout.U64_MAX


def _load(store: ObjectStore, key: str, rule: str) -> dict:
    raw = store.get(key, max_size=MAX_REF_FILE)
    try:
        doc = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise FormatError(f"ref file is not JSON: {exc}", rule=rule, path=key) from None
    if not isinstance(doc, dict):
        raise FormatError("ref file is not a JSON object", rule=rule, path=key)
    return doc


def _metadata(doc: dict, key: str, rule: str) -> dict[str, str]:
    md = doc.get("metadata")
    if md is None:
        return {}
    if not isinstance(md, dict) or not all(isinstance(v, str) for v in md.values()):
        raise FormatError("metadata must be an object of strings", rule=rule, path=key)
    return md


def _opt_str(doc: dict, name: str, key: str, rule: str) -> str | None:
    v = doc.get(name)
    if v is not None and not isinstance(v, str):
        raise FormatError(f"{name} must be a string or null", rule=rule, path=key)
    return v


def parse_tag(name: str, raw_doc: dict, key: str) -> Tag:
    rule = "REFS-001"
    version, size = raw_doc.get("version"), raw_doc.get("manifestSize")
    if not _is_u64(version):
        raise FormatError(f"tag {name!r}: 'version' missing or not an integer", rule=rule, path=key)
    if not _is_u64(size):
        raise FormatError(f"tag {name!r}: 'manifestSize' missing or not an integer", rule=rule,
                          path=key)
    branch = _opt_str(raw_doc, "branch", key, rule)
    return Tag(name=name, branch=None if branch in (None, "main") else branch, version=version,
               created_at=_opt_str(raw_doc, "createdAt", key, rule),
               updated_at=_opt_str(raw_doc, "updatedAt", key, rule),
               manifest_size=size, metadata=_metadata(raw_doc, key, rule))


def parse_branch(name: str, doc: dict, key: str) -> Branch:
    rule = "REFS-002"
    pv = doc.get("parentVersion")
    if not _is_u64(pv):
        raise FormatError(f"branch {name!r}: 'parentVersion' missing or not an integer",
                          rule=rule, path=key)
    size = doc.get("manifestSize")
    if size is not None and not _is_u64(size):
        raise FormatError(f"branch {name!r}: 'manifestSize' is not an integer", rule=rule, path=key)
    create_at = doc.get("createAt")
    if create_at is not None and not (isinstance(create_at, int) and not isinstance(create_at, bool)):
        raise FormatError(f"branch {name!r}: 'createAt' is not an integer", rule=rule, path=key)
    parent = _opt_str(doc, "parentBranch", key, rule)
    ident = doc.get("identifier")
    legacy = ident is None
    if legacy:
        mapping = [(0, legacy_branch_identifier(name, parent, pv, create_at if create_at is not None else 0))]
    else:
        vm = ident.get("version_mapping") if isinstance(ident, dict) else None
        if not isinstance(vm, list) or not all(
                isinstance(p, list) and len(p) == 2 and _is_u64(p[0]) and isinstance(p[1], str)
                for p in vm):
            raise FormatError(f"branch {name!r}: identifier.version_mapping is not a list of "
                              "[version, uuid] pairs", rule=rule, path=key)
        mapping = [(p[0], p[1]) for p in vm]
    return Branch(name=name, parent_branch=parent, identifier=mapping, parent_version=pv,
                  create_at=create_at, manifest_size=size, metadata=_metadata(doc, key, rule),
                  legacy_identifier=legacy)


def _ref_files(store: ObjectStore, directory: str) -> list[tuple[str, str]]:
    files, _ = store.list_dir(directory)
    out = []
    for info in files:
        fname = info.key.rsplit("/", 1)[-1]
        if not fname.endswith(".json") or fname.startswith(".tmp"):
            continue
        try:
            out.append((layout.decode_ref_name(fname[:-5]), info.key))
        except Exception:  # noqa: BLE001 - a name that is no encoded ref: ignored like pylance
            continue
    return sorted(out)


def ref_names(store: ObjectStore, kind: str) -> list[str]:
    """The names of the refs of ``kind`` (``"tags"`` or ``"branches"``) under the main root
    ``store``, decoded and sorted, without reading the files (a missing directory: none)."""
    directory = {"tags": layout.TAGS_DIR, "branches": layout.BRANCHES_DIR}[kind]
    try:
        return [name for name, _key in _ref_files(store, directory)]
    except NotFound:
        return []


def list_tags(store: ObjectStore) -> dict[str, Tag]:
    """Every tag of the dataset whose **main** root is ``store``, by name."""
    return {name: parse_tag(name, _load(store, key, "REFS-001"), key)
            for name, key in _ref_files(store, layout.TAGS_DIR)}


def list_branches(store: ObjectStore) -> dict[str, Branch]:
    """Every branch of the dataset whose main root is ``store``, by name."""
    return {name: parse_branch(name, _load(store, key, "REFS-002"), key)
            for name, key in _ref_files(store, layout.BRANCHES_DIR)}


def resolve_tag(store: ObjectStore, name: str) -> Tag:
    """The tag ``name``. Raises NotFound."""
    key = layout.tag_key(name)
    try:
        doc = _load(store, key, "REFS-001")
    except NotFound:
        raise NotFound(f"Ref not found error: tag {name} does not exist", path=key) from None
    return parse_tag(name, doc, key)


def get_branch(store: ObjectStore, name: str) -> Branch:
    key = layout.branch_key(name)
    try:
        doc = _load(store, key, "REFS-002")
    except NotFound:
        raise NotFound(f"Ref not found error: Branch {name} does not exist", path=key) from None
    return parse_branch(name, doc, key)
