"""Verdicts kept between runs: ``lance-conformance validate --cache PATH``.

A table that grows by small commits is validated again and again; what was checked before
need not be checked again. The cache keeps, per ref, the verdict of every unit the last run
checked (:mod:`.history`): each version's manifest (its version-scope findings and the
facts the table-scope rules read), each fragment unit (findings, summary, the versions it
was in) and each data-file unit of a deep run. The next run checks only what is new or
changed, and reports exactly what a run without the cache reports.

What makes an entry valid:

* the whole cache: the same dataset URI, kit version, rule catalog (ids, severities,
  scopes, clauses), source code of the kit and reference implementation (a digest of their
  files), rules selected and ``deep``; anything else and the cache is ignored (and rewritten);
* a version: the store still lists its manifest with the same size and stamp (ETag, or a
  local file's modification time), and every other object its rules read (its transaction
  file, its indexes' directories, ``_mem_wal/``) is listed as before;
* a unit: the objects it read (data files' footers, its deletion file, external row id
  sequences; a deep unit's data file) are listed as before. A unit whose objects changed
  is checked again, and so is every version that carries it.

So a unit whose key matches but whose bytes changed is still caught: the key includes what
the store says of the object. Units that read objects outside the table's own root (base
paths of other roots) and deep checks of blob columns (which follow descriptors to other
objects) are never cached.

``PATH`` is a file (``.json``) or a folder (local or a store URI such as
``s3://bucket/cache/``), where the file is named after the dataset URI. The file is JSON
read with a size bound and checked field by field: a damaged cache is ignored, never
trusted.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field

from conformance.rules.context import FragmentSummary, VersionFacts
from reference_impl.errors import LanceError, NotFound

from .report import Violation

FORMAT = 1
MAX_CACHE_BYTES = 1 << 30


# -- what a cache is valid for ----------------------------------------------------------------

_CODE_DIGEST: str | None = None


def code_digest() -> str:
    """A digest of the source files of ``conformance/`` and ``reference_impl/`` (the
    checks, the readers they call and the engine): a changed check changes verdicts."""
    global _CODE_DIGEST
    if _CODE_DIGEST is None:
        import conformance
        import reference_impl

        h = hashlib.sha256()
        for pkg in (conformance, reference_impl):
            root = os.path.dirname(os.path.abspath(pkg.__file__))
            for dirpath, dirnames, filenames in sorted(os.walk(root)):
                dirnames[:] = sorted(d for d in dirnames if d not in ("suite", "__pycache__"))
                for name in sorted(filenames):
                    if name.endswith(".py"):
                        path = os.path.join(dirpath, name)
                        h.update(os.path.relpath(path, root).encode() + b"\0")
                        with open(path, "rb") as fh:
                            h.update(hashlib.sha256(fh.read()).digest())
        _CODE_DIGEST = h.hexdigest()
    return _CODE_DIGEST


def catalog_digest() -> str:
    """A digest of the rule catalog: every rule's id, severity, scope, spec and clause."""
    from conformance.rules import all_rules

    h = hashlib.sha256()
    for r in all_rules():
        h.update(json.dumps(r.as_dict(), sort_keys=True).encode() + b"\n")
    return h.hexdigest()


def header(uri: str, rules, deep: bool) -> dict:
    """What a cache file must match to be used."""
    import conformance

    return {"format": FORMAT, "kit": conformance.__version__, "catalog": catalog_digest(),
            "code": code_digest(), "uri": uri, "deep": bool(deep), "rules": sorted(rules)}


# -- what the store says of objects ------------------------------------------------------------

class Stamps:
    """Size and stamp of the objects of one store, from one listing per directory."""

    def __init__(self, store) -> None:
        self.store = store
        self._dirs: dict[str, dict[str, list]] = {}
        self._trees: dict[str, str] = {}

    def _listed(self, folder: str) -> dict[str, list]:
        if folder not in self._dirs:
            try:
                files, _dirs = self.store.list_dir(folder)
            except (LanceError, OSError):
                files = []
            self._dirs[folder] = {f.key.rsplit("/", 1)[-1]: [f.size, f.stamp] for f in files}
        return self._dirs[folder]

    def of(self, dep: str):
        """``[size, stamp]`` of the object ``dep`` (None when it is not listed); for a
        ``dep`` ending in ``/``, a digest of everything listed below it."""
        if dep.endswith("/"):
            if dep not in self._trees:
                try:
                    items = sorted((o.key, o.size, o.stamp) for o in self.store.list(dep))
                except (LanceError, OSError):
                    items = []
                self._trees[dep] = hashlib.sha256(json.dumps(items).encode()).hexdigest()
            return self._trees[dep]
        folder, _, name = dep.rpartition("/")
        return self._listed(folder).get(name)

    def all(self, deps) -> dict:
        return {d: self.of(d) for d in deps}

    def unchanged(self, recorded: dict) -> bool:
        """Whether every object of ``recorded`` (object -> what :meth:`of` said) is listed
        as it was. A store that gives no stamp (``memory://``) never counts as unchanged:
        its size alone would miss bytes rewritten in place."""
        for d, s in recorded.items():
            now = self.of(d)
            if now != s or now is None or (isinstance(now, list) and now[1] is None):
                return False
        return True


# -- (de)serialising -----------------------------------------------------------------------------

def finding_out(f: Violation) -> dict:
    return {"rule": f.rule, "severity": f.severity, "spec": f.spec, "message": f.message,
            "location": f.location}


def finding_in(d: dict) -> Violation:
    if not isinstance(d, dict) or not isinstance(d.get("location"), dict):
        raise ValueError("not a finding")
    return Violation(rule=str(d["rule"]), severity=str(d["severity"]), spec=dict(d["spec"]),
                     message=str(d["message"]), location=dict(d["location"]))


def summary_out(s: FragmentSummary) -> list:
    return [s.id, s.deletion_read_version, s.has_row_ids, s.row_id_max, s.row_version_max,
            [list(v) if isinstance(v, tuple) else v for v in s.file_versions],
            None if s.live_row_ids is None else list(s.live_row_ids),
            list(s.unheld_field_ids)]


def summary_in(d: list) -> FragmentSummary:
    fid, deletion, has_ids, rmax, vmax, versions, live, unheld = d
    if live is not None:
        lo, hi, distinct = live
        live = (int(lo), int(hi), bool(distinct))
    return FragmentSummary(int(fid), None if deletion is None else int(deletion), bool(has_ids),
                           None if rmax is None else int(rmax),
                           None if vmax is None else int(vmax),
                           tuple(tuple(v) if isinstance(v, list) else v for v in versions),
                           live, tuple(int(i) for i in unheld))


def facts_out(f: VersionFacts | None):
    if f is None:
        return None
    return [f.timestamp_ns, f.branch, [[u, [k[0], list(k[1]), k[2]], p] for u, k, p in f.indices],
            sorted(f.field_ids)]


def facts_in(d) -> VersionFacts | None:
    if d is None:
        return None
    ts, branch, indices, field_ids = d
    return VersionFacts(None if ts is None else int(ts), None if branch is None else str(branch),
                        tuple((str(u), (str(k[0]), tuple(int(x) for x in k[1]), int(k[2])),
                               int(p)) for u, k, p in indices),
                        frozenset(int(i) for i in field_ids))


def ranges_in(d) -> tuple:
    return tuple((int(a), int(b)) for a, b in d)


# -- the cache -------------------------------------------------------------------------------------

@dataclass
class RefCache:
    """The cached verdicts of one ref: ``versions`` (version -> record), ``units`` and
    ``files`` (hex key -> record), as read; ``out_*`` collect what this run keeps."""

    versions: dict = field(default_factory=dict)
    units: dict = field(default_factory=dict)
    files: dict = field(default_factory=dict)
    out_versions: dict = field(default_factory=dict)
    out_units: dict = field(default_factory=dict)
    out_files: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {"versions": self.out_versions, "units": self.out_units, "files": self.out_files}


class VerdictCache:
    """The cache file of one dataset: load it (:meth:`open`), hand each ref its
    :class:`RefCache`, write what the run found (:meth:`save`)."""

    def __init__(self, store, key: str, head: dict, refs: dict, note: str) -> None:
        self.store, self.key, self.head = store, key, head
        self._loaded = refs
        self.refs: dict[str, RefCache] = {}
        self.note = note  # why the cached verdicts were (not) used

    @classmethod
    def open(cls, path: str, *, uri: str, rules, deep: bool,
             storage_options: dict | None = None) -> VerdictCache:
        """The cache at ``path`` for this run (empty when missing, stale or damaged)."""
        store, key = _location(path, uri, storage_options)
        head = header(uri, rules, deep)
        try:
            raw = store.get(key, max_size=MAX_CACHE_BYTES)
        except NotFound:
            return cls(store, key, head, {}, "no cache yet")
        except LanceError as exc:
            return cls(store, key, head, {}, f"cannot read the cache ({exc}): ignored")
        try:
            doc = json.loads(raw)
        except (ValueError, UnicodeDecodeError):
            return cls(store, key, head, {}, "the cache file is not JSON: ignored")
        if not isinstance(doc, dict) or doc.get("header") != head:
            return cls(store, key, head, {}, "the cache was made by another kit, rule catalog "
                                            "or selection: ignored")
        refs = doc.get("refs")
        return cls(store, key, head, refs if isinstance(refs, dict) else {}, "used")

    def ref(self, label: str) -> RefCache:
        if label not in self.refs:
            d = self._loaded.get(label)
            rc = RefCache()
            if isinstance(d, dict):
                for name in ("versions", "units", "files"):
                    if isinstance(d.get(name), dict):
                        setattr(rc, name, d[name])
            self.refs[label] = rc
        return self.refs[label]

    def save(self) -> None:
        doc = {"header": self.head, "refs": {k: v.as_dict() for k, v in self.refs.items()}}
        self.store.put(self.key, json.dumps(doc, separators=(",", ":")).encode())


def _location(path: str, uri: str, storage_options: dict | None):
    """``(store, key)`` of the cache file: ``path`` itself when it names a ``.json`` file,
    else a file in the folder ``path`` named after the dataset URI."""
    from reference_impl.io.uri import open_store

    name = "lance-conformance-" + hashlib.sha256(uri.encode()).hexdigest()[:16] + ".json"
    local = "://" not in path or path.startswith("file://")
    if local:
        p = path[len("file://"):] if path.startswith("file://") else path
        p = os.path.abspath(p)
        if p.endswith(".json") and not os.path.isdir(p):
            folder, name = os.path.split(p)
        else:
            folder = p
        os.makedirs(folder, exist_ok=True)
        return open_store(folder), name
    if path.endswith(".json"):
        folder, _, name = path.rpartition("/")
    else:
        folder = path.rstrip("/")
    return open_store(folder, storage_options or {}), name


__all__ = ["RefCache", "Stamps", "VerdictCache", "catalog_digest", "code_digest", "header"]
