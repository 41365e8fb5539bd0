"""The history of one ref, version by version, as check units keyed by content.

Validating every version of a table of many small commits would check each fragment once
per version that lists it: millions of checks for a few thousand versions. Instead the
engine plans *units*, each with a key that says when two versions share it, and checks
each unit once:

* a **manifest** (every version): the version-scope rules, on the manifest without having
  to look at its fragments (they read the version's :class:`FragmentStats`);
* a **fragment** (``Scope.FRAGMENT``): the fragment's own metadata and what it names (its
  data files' footers, its deletion file, its row id sequences), keyed by the fragment's
  bytes and its environment (``conformance.rules.context.fragment_environment``: the
  schema, base paths, reader flags, whether statistics are recorded);
* a **data file** (``--deep``): one decode per data file, keyed by the ``DataFile`` entry,
  its fragment id, the schema and the base paths (``DATA_FILE_ENVIRONMENT``), whatever
  number of versions and fragments list it. Deletion files and row id sequences are judged
  with their fragment's unit; a deletion file is read once per run however many units name
  it, and an index file's size is asked once.

A finding still names every version it holds in: each unit knows the spans of the ref's
checked versions that carried it (:class:`Unit`), which become version ranges.

Memory is bounded by one manifest, not the history: the manifests are streamed oldest
first (one read each), :mod:`.split` cuts each one into the fragments the previous one had
(recognised by their bytes, not decoded) and the new ones, and only the units, their
findings and small per-version facts are kept.

``fast=False`` splits with the readable parser (every fragment decoded and keyed by its
serialization); ``dedupe=False`` makes every version's fragments units of their own (the
verdicts of checking each version on its own); ``guards=False`` hides the fragment
aggregates from the rules, which then look at the fragments themselves. The suite checks
all of these give the same report.

With a verdict cache (:mod:`.cache`) the versions and units an earlier run judged are
served from it (:meth:`History.plan_cache`, :meth:`History.serve`); the last served version
before one to check is read again, without its rules, to follow its fragments.

Counters (``Plan.stats``): ``versions_checked`` (their rules ran), ``manifests_read``,
``manifest_bytes``, ``fragment_entries`` (fragments listed, summed over versions),
``fragment_units`` (checked), ``fragment_lists_decoded`` (versions whose fragments a rule
had to decode), ``data_files`` (deep units planned), ``data_files_decoded`` (deep checks
run), ``data_file_tails_kept`` (deep checks handed the footer the metadata checks read:
:class:`.access.Tails`), ``versions_from_cache``, ``units_from_cache``, and the store's
requests (:mod:`.counting`; the local engine's deep checks included).
"""

from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass, field

from conformance.rules.context import (
    FragmentContext,
    FragmentStats,
    TableContext,
    VersionContext,
    fragment_environment,
    version_facts,
)
from conformance.rules.summary import summarize
from reference_impl.errors import FormatError, LanceError, NotFound
from reference_impl.proto import table_pb2
from reference_impl.table.manifest import DEFAULT_MAX_MANIFEST_SIZE, decode_manifest_file

from . import ranges, split
from .checks import run_check
from .report import Violation


class ManifestView:
    """A version's Manifest as the version-scope rules see it: every field of the parsed
    manifest, and ``fragments`` decoded only when a rule reads them (``load``)."""

    def __init__(self, manifest, load) -> None:
        self._manifest = manifest
        self._load = load
        self._fragments = None

    @property
    def fragments(self):
        if self._fragments is None:
            self._fragments = self._load()
        return self._fragments

    def __getattr__(self, name: str):
        # kept on the view: the next read of the same field is a plain attribute (the
        # version rules read a few dozen fields of each manifest, several times each)
        value = getattr(self._manifest, name)
        self.__dict__[name] = value
        return value


@dataclass(eq=False)
class Unit:
    """One check unit: its findings (location ``version`` = the first version met), the
    spans ``[first, last]`` of positions in the ref's checked versions that carry it, and
    for a unit from the cache the version ranges it was in then (``cached``)."""

    kind: str
    findings: list[Violation] = field(default_factory=list)
    summary: object = None
    count: int = 0  # entries of the current version that are this unit
    spans: list[list] = field(default_factory=list)
    data_files: list = field(default_factory=list)  # a fragment's data-file units
    containers: list = field(default_factory=list)  # a data file's fragment units
    item: int | None = None  # a data file's index in Plan.items
    key: str = ""  # hex, for the cache
    deps: list | None = None  # objects its verdict read (None: not to be cached)
    cached: tuple = ()


def read_manifest_bytes(store, entry) -> bytes:
    """The whole manifest file of a listed version, in one request (its listed size bounds
    the read)."""
    if entry.size is not None and entry.size > DEFAULT_MAX_MANIFEST_SIZE:
        raise FormatError(f"manifest is {entry.size} bytes, above the bound of "
                          f"{DEFAULT_MAX_MANIFEST_SIZE}", rule="MANIFEST-002", path=entry.key,
                          offset=0)
    return store.get(entry.key, max_size=DEFAULT_MAX_MANIFEST_SIZE)


def _digest(*parts: bytes) -> bytes:
    h = hashlib.blake2b(digest_size=16)
    for p in parts:
        h.update(len(p).to_bytes(8, "little") + p)
    return h.digest()


class History:
    """Check the versions of one ref (``table``, labelled ``label``) oldest first with
    :meth:`check`, then :meth:`finish` for the unit findings. ``rules`` maps scope names to
    the selected rules; ``new_item(version, manifest_key, size, environment bytes, fragment,
    file index, tail)`` registers a deep data-file check and returns its item index
    (``tail``: the file's tail window the fragment's rules read, or None). ``cache``
    (a :class:`.cache.RefCache`) serves what an earlier run checked: call :meth:`serve`
    before :meth:`check` for each version."""

    def __init__(self, table: TableContext, label: str, rules: dict, *, stats: dict,
                 new_item=None, fast: bool = True, dedupe: bool = True, guards: bool = True,
                 cache=None):
        self.table = table
        self.label = label
        self.version_rules = rules.get("version", [])
        self.fragment_rules = rules.get("fragment", [])
        self.manifest_parts = [r for r in self.fragment_rules if r.manifest_part]
        self.new_item = new_item
        self.dedupe = dedupe
        self.guards = guards
        self.stats = stats
        self.sequence = ranges.Sequence()
        self.splitter = split.splitter(fast)
        self.units: dict = {}
        self.files: dict = {}
        self.entries: list[Unit] = []  # the unit of each fragment entry of the last version
        self.env: bytes | None = None
        self.fragment_stats = FragmentStats()
        self.findings: list[Violation] = []
        self.cache = cache
        self.served: dict[int, dict] = {}  # versions whose cached verdict stands
        self._behind: int | None = None  # last version served after the last one checked
        self._records: dict[int, dict] = {}  # versions checked now -> their cache record
        self.valid_units: dict = {}  # cached units (hex key -> record) whose objects stand
        self.valid_files: dict = {}
        if cache is not None:
            from .cache import Stamps

            self.stamps = Stamps(table.store)

    def _count(self, name: str, n: int = 1) -> None:
        self.stats[name] = self.stats.get(name, 0) + n

    # -- the cache ------------------------------------------------------------------------
    def plan_cache(self, versions: list[int]) -> None:
        """Decide which of ``versions`` the cache serves: the manifest and every object the
        version's rules read are listed as they were, and no unit it carries changed. A
        record that does not read back as what the kit writes makes the whole cache of this
        ref unused (a unit's findings are served only through its record)."""
        if self.cache is None:
            return
        try:
            self._plan_cache(versions)
        except (KeyError, TypeError, ValueError, AttributeError, IndexError):
            self.served, self.valid_units, self.valid_files = {}, {}, {}
            self._count("cache_records_refused")

    def _plan_cache(self, versions: list[int]) -> None:
        from .cache import facts_in, finding_in, ranges_in, summary_in

        def readable(rec: dict, *, summary: bool) -> dict:
            """``rec`` with its parts decoded (raises on anything malformed)."""
            out = {"deps": {str(k): v for k, v in rec["deps"].items()},
                   "ranges": ranges_in(rec["ranges"]),
                   "findings": [finding_in(f) for f in rec["findings"]], "raw": rec}
            if summary:
                out["summary"] = summary_in(rec["summary"])
                out["files"] = [str(f) for f in rec["files"]]
            return out

        changed: set[int] = set()
        files = {str(k): readable(rec, summary=False) for k, rec in self.cache.files.items()}
        units = {str(k): readable(rec, summary=True) for k, rec in self.cache.units.items()}
        for hexkey, rec in files.items():
            if self.stamps.unchanged(rec["deps"]):
                self.valid_files[hexkey] = rec
            else:
                changed.update(ranges.expand(rec["ranges"]))
        for hexkey, rec in units.items():
            if self.stamps.unchanged(rec["deps"]) and all(f in self.valid_files
                                                          for f in rec["files"]):
                self.valid_units[hexkey] = rec
            else:
                changed.update(ranges.expand(rec["ranges"]))
        records = {}
        for key, rec in self.cache.versions.items():
            records[int(key)] = {"stamp": list(rec["stamp"]), "deps": dict(rec["deps"]),
                                 "findings": [finding_in(f) for f in rec["findings"]],
                                 "facts": facts_in(rec["facts"]), "raw": rec}
        for v in versions:
            rec = records.get(v)
            entry = self.table.entry(v)
            if rec is None or entry is None or v in changed:
                continue
            stamp = [entry.key, entry.size, self.stamps.of(entry.key)]
            if rec["stamp"] == stamp and self.stamps.unchanged(rec["deps"]):
                self.served[v] = rec

    def serve(self, version: int) -> bool:
        """True when the cache serves ``version``: its findings and facts are the cached
        ones, and its manifest is not read."""
        rec = self.served.get(version)
        if rec is None:
            return False
        self.table.facts[version] = rec["facts"]
        self.findings.extend(rec["findings"])
        self.cache.out_versions[str(version)] = rec["raw"]
        self._behind = version
        self._count("versions_from_cache")
        return True

    def _cached_unit(self, ukey: tuple, vctx: VersionContext) -> Unit | None:
        if self.cache is None:
            return None
        hexkey = _hex(ukey)
        rec = self.valid_units.get(hexkey)
        if rec is None:
            return None
        unit = Unit("fragment", findings=list(rec["findings"]), summary=rec["summary"],
                    key=hexkey, deps=list(rec["deps"]),
                    cached=self._still_served(rec["ranges"]))
        for fkey in rec["files"]:
            du = self.files.get(fkey)
            if du is None:
                frec = self.valid_files[fkey]
                du = self.files[fkey] = Unit(
                    "data_file", findings=list(frec["findings"]), key=fkey,
                    deps=list(frec["deps"]), cached=self._still_served(frec["ranges"]))
            du.containers.append(unit)
            unit.data_files.append(du)
        self._count("units_from_cache")
        return unit

    def _still_served(self, spans: tuple) -> tuple:
        """The versions of ``spans`` that the cache serves in this run."""
        return ranges.intersect(spans, self._served_ranges())

    def _served_ranges(self) -> tuple:
        if getattr(self, "_served_spans", None) is None:
            self._served_spans = ranges.to_ranges(self.served)
        return self._served_spans

    # -- one version ---------------------------------------------------------------------
    def check(self, version: int) -> bool:
        """Check ``version`` (listed, not yet checked; versions come in increasing order);
        False when its manifest cannot be read (the MANIFEST rules report why)."""
        if self._behind is not None:
            # the cache served the versions before: catch up with the last of them
            behind, self._behind = self._behind, None
            self._read(behind, judge=False)
        return self._read(version, judge=True)

    def _read(self, version: int, *, judge: bool) -> bool:
        table = self.table
        entry = table.entry(version)
        box: dict = {}

        def parse(body: bytes):
            box["split"] = self.splitter.split(body)
            return box["split"].manifest

        try:
            data = read_manifest_bytes(table.store, entry)
            self._count("manifests_read")
            self._count("manifest_bytes", len(data))
            mf = decode_manifest_file(data, entry.key, parse_manifest=parse)
        except Exception as exc:  # noqa: BLE001 - reported by the MANIFEST rules
            if judge:  # (a version the cache served keeps its verdict: only its fragments
                #        were to be followed, and the next version is split against another)
                if not isinstance(exc, (FormatError, NotFound)):
                    exc = FormatError(f"manifest cannot be read: {type(exc).__name__}: {exc}",
                                      rule="MANIFEST-003", path=entry.key)
                table.load_errors[entry.key] = exc
                table.facts[version] = None
            return False
        del data
        parts: split.Split = box["split"]
        pos = self.sequence.append(version)

        def every_fragment():
            self._count("fragment_lists_decoded")
            return parts.fragments()

        sans = mf.manifest
        mf.manifest = ManifestView(sans, every_fragment)  # mf is this call's own
        whole = mf
        vctx = VersionContext(table=table, version=version, manifest_key=entry.key, mf=whole,
                              fragment_stats=self.fragment_stats if self.guards else None)
        self._fragments(vctx, parts, pos)
        if not judge:
            return True  # served by the cache: only the fragments are followed
        table.facts[version] = version_facts(mf)
        self._count("versions_checked")
        where = {"ref": self.label, "version": version}
        found = []
        for r in self.version_rules:
            found.extend(run_check(r, vctx, where))
        if self.manifest_parts:
            hidden = dataclasses.replace(mf, manifest=ManifestView(sans, tuple))
            hctx = VersionContext(table=table, version=version, manifest_key=entry.key,
                                  mf=hidden)
            for r in self.manifest_parts:
                found.extend(run_check(r, hctx, where))
        self.findings.extend(found)
        if self.cache is not None:
            deps = version_objects(vctx)
            if deps is not None:
                from .cache import facts_out, finding_out

                self._records[version] = {
                    "stamp": [entry.key, entry.size, None], "deps": deps,
                    "findings": [finding_out(f) for f in found],
                    "facts": facts_out(table.facts[version])}
        return True

    def _fragments(self, vctx: VersionContext, parts: split.Split, pos: int) -> None:
        """Move the fragment entries from the previous version's to this one's: units that
        left, units that came (checked when new), the aggregates kept in step."""
        env = fragment_environment(vctx.manifest)
        if env != self.env or not self.dedupe:
            # another environment: every fragment is judged again in it
            dropped, self.entries = self.entries, []
            keys = list(self.splitter.keys)
            frags = parts.fragments()
            self._count("fragment_lists_decoded")
            added = [(k, (lambda f=f: f)) for k, f in zip(keys, frags, strict=True)]
            self.env = env
        else:
            dropped = self.entries[parts.kept:]
            del self.entries[parts.kept:]
            added = parts.new
        for u in dropped:
            u.count -= 1
            self.fragment_stats.remove(u.summary)
            if not u.count:
                u.spans[-1][1] = pos - 1
        environment = None
        for key, decode in added:
            ukey = (env, key) if self.dedupe else (env, key, vctx.version)
            u = self.units.get(ukey)
            if u is None:
                u = self._cached_unit(ukey, vctx)
                if u is None:
                    if environment is None and self.new_item is not None:
                        environment = _Environment(vctx)
                    u = self._fragment_unit(vctx, decode(), environment, _hex(ukey))
                self.units[ukey] = u
            if not u.count:
                if u.spans and u.spans[-1][1] == pos - 1:
                    u.spans[-1][1] = None
                else:
                    u.spans.append([pos, None])
            u.count += 1
            self.fragment_stats.add(u.summary)
            self.entries.append(u)
        self._count("fragment_entries", len(self.entries))

    def _fragment_unit(self, vctx: VersionContext, frag, environment, hexkey: str) -> Unit:
        self._count("fragment_units")
        fctx = FragmentContext.of(vctx, frag)
        where = {"ref": self.label, "version": vctx.version}
        found = []
        for r in self.fragment_rules:
            found.extend(run_check(r, fctx, where))
        unit = Unit("fragment", findings=found, summary=summarize(fctx), key=hexkey,
                    deps=fragment_objects(fctx) if self.cache is not None else None)
        if self.new_item is not None:
            for di, df in enumerate(frag.files):
                key = (environment.digest, int(frag.id), df.SerializeToString(deterministic=True),
                       environment.dictionaries)
                if not self.dedupe:
                    key += (vctx.version,)
                fkey = _hex(key)
                du = self.files.get(fkey)
                if du is None:
                    du = self.files[fkey] = Unit("data_file", key=fkey)
                    du.item = self.new_item(vctx.version, vctx.manifest_key, vctx.mf.size,
                                            environment.manifest_bytes(), frag, di,
                                            _tail(fctx, df))
                    if self.cache is not None and not environment.blobs:
                        du.deps = data_file_objects(fctx, df)
                    self._count("data_files")
                du.containers.append(unit)
                unit.data_files.append(du)
        return unit

    # -- the end ---------------------------------------------------------------------------
    def _ranges(self, u: Unit) -> tuple:
        if u.kind == "data_file":
            fresh = ranges.union(*(self.sequence.ranges(c.spans) for c in u.containers))
        else:
            fresh = self.sequence.ranges(u.spans)
        return ranges.union(fresh, u.cached)

    def finish(self) -> list[Violation]:
        """The findings of the ref's versions and units, each unit finding naming every
        version that carried its unit."""
        last = len(self.sequence.versions) - 1
        for u in self.units.values():
            if u.count:
                u.spans[-1][1] = last
        out = list(self.findings)
        for u in self.units.values():
            if u.findings:
                spans = self._ranges(u)
                out.extend(with_versions(f, spans) for f in u.findings)
        for du in self.files.values():
            if du.item is None and du.findings:  # a deep verdict from the cache
                out.extend(with_versions(f, self._ranges(du)) for f in du.findings)
        if self.cache is not None:
            out.extend(self._leftovers())
        return out

    def _leftovers(self) -> list[Violation]:
        """Findings of cached units no version checked now carries, in the versions the
        cache served."""
        seen = {u.key for u in self.units.values()}
        out = []
        for hexkey, rec in self.valid_units.items():
            if hexkey in seen:
                continue
            spans = self._still_served(rec["ranges"])
            if spans:
                out.extend(with_versions(f, spans) for f in rec["findings"])
                self.cache.out_units[hexkey] = dict(rec["raw"], ranges=[list(r) for r in spans])
                for fkey in rec["files"]:
                    if fkey not in self.files:
                        frec = self.valid_files[fkey]
                        fspans = self._still_served(frec["ranges"])
                        out.extend(with_versions(f, fspans) for f in frec["findings"])
                        self.cache.out_files.setdefault(
                            fkey, dict(frec["raw"], ranges=[list(r) for r in fspans]))
        return out

    def item_versions(self) -> dict[int, tuple]:
        """Item index -> the version ranges of its data file (after :meth:`finish`)."""
        return {du.item: self._ranges(du) for du in self.files.values() if du.item is not None}

    def keep(self, item_findings: dict[int, list]) -> None:
        """Put what this run checked into the cache (``item_findings``: item index -> the
        findings of its deep checks)."""
        from .cache import finding_out, summary_out

        if self.cache is None:
            return
        for version, rec in self._records.items():
            rec["stamp"][2] = self.stamps.of(rec["stamp"][0])
            rec["deps"] = self.stamps.all(rec["deps"])
            self.cache.out_versions[str(version)] = rec
        for du in self.files.values():
            if du.deps is None or (du.item is not None and du.item not in item_findings):
                continue
            found = item_findings.get(du.item, ()) if du.item is not None else du.findings
            spans = self._ranges(du)
            self.cache.out_files[du.key] = {
                "deps": self.stamps.all(du.deps),
                "ranges": [list(r) for r in spans],
                "findings": [finding_out(_unversioned(f)) for f in found]}
        for u in self.units.values():
            spans = self._ranges(u)
            if u.deps is None or any(f.key not in self.cache.out_files for f in u.data_files):
                # a unit the cache cannot keep (an object outside the root: a branch's
                # inherited fragments, blob columns): the versions carrying it are not kept
                # either, or serving them would drop its findings there
                for v in ranges.expand(spans):
                    self.cache.out_versions.pop(str(v), None)
                continue
            if not spans:
                continue
            self.cache.out_units[u.key] = {
                "deps": self.stamps.all(u.deps), "summary": summary_out(u.summary),
                "ranges": [list(r) for r in spans], "files": [f.key for f in u.data_files],
                "findings": [finding_out(f) for f in u.findings]}


def _tail(fctx: FragmentContext, df):
    """The tail window of data file ``df`` the fragment's rules read (None when they did
    not, or the run keeps no more): the deep check of the file reuses it."""
    tails = fctx.table.cache.get("datafile_tails")
    if tails is None:
        return None
    from conformance.rules.datafile import file_info

    store, key, _info, _err = file_info(fctx, df)
    return tails.get(store.uri, key) if store is not None else None


def _hex(key: tuple) -> str:
    """A unit key as text (the cache's keys)."""
    return _digest(*(k if isinstance(k, bytes) else repr(k).encode() for k in key)).hex()


def _unversioned(f: Violation) -> Violation:
    return dataclasses.replace(f, versions=())


def version_objects(vctx: VersionContext) -> list[str] | None:
    """The objects of the table's root the version-scope rules read besides the manifest
    (its transaction file, its indexes' directories, ``_mem_wal/``); None when they read
    something elsewhere (an index under a base path), which the cache cannot watch."""
    m = vctx.manifest
    deps = []
    if m.transaction_file:
        deps.append("_transactions/" + m.transaction_file)
    index = vctx.mf.index_section
    for im in getattr(index, "indices", ()) or ():
        if im.HasField("base_id"):
            return None
        from reference_impl.table.index import uuid_text

        deps.append(f"_indices/{uuid_text(im.uuid.uuid)}/")
    if index is not None and len(index.indices):
        deps.append("_mem_wal/")
    return deps


def fragment_objects(fctx: FragmentContext) -> list[str] | None:
    """The objects of the table's root a fragment unit's rules read (its data files'
    footers, its deletion file, external row id sequences); None when one lies elsewhere."""
    from reference_impl.table import deletion as D

    frag = fctx.fragment
    deps = []
    try:
        for df in frag.files:
            key = data_file_objects(fctx, df)
            if key is None:
                return None
            deps.extend(key)
        if frag.HasField("deletion_file"):
            d = frag.deletion_file
            name = D.deletion_file_name(frag.id, d.read_version, d.id, d.file_type)
            store, key = fctx.location("deletion", name,
                                       d.base_id if d.HasField("base_id") else None)
            if store is not fctx.table.store:
                return None
            deps.append(key)
    except (LanceError, ValueError, KeyError):
        return None
    for group in ("row_id_sequence", "created_at_version_sequence",
                  "last_updated_at_version_sequence"):
        kind = frag.WhichOneof(group)
        if kind is not None and not kind.startswith("inline"):
            deps.append(getattr(frag, kind).path)
    return deps


def data_file_objects(fctx, df) -> list[str] | None:
    try:
        store, key = fctx.location("data", df.path, df.base_id if df.HasField("base_id") else None)
    except (LanceError, ValueError):
        return None
    return [key] if store is fctx.table.store else None


class _Environment:
    """What deep checks of a version's data files share: the environment digest, whether
    legacy dictionaries (kept in the manifest file itself) tie them to this manifest,
    whether blob columns send the checks to other objects (not cached), and the manifest
    without fragments as bytes (made once, when a data file needs it)."""

    def __init__(self, vctx: VersionContext) -> None:
        self.vctx = vctx
        m = vctx.manifest
        self.dictionaries = vctx.manifest_key if any(
            f.HasField("dictionary") for f in m.fields) else None
        self.blobs = any("blob" in f.logical_type or "blob" in f.extension_name
                         or any("blob" in k for k in f.metadata) for f in m.fields)
        # deep checks read the schema and the base paths of the manifest, nothing else
        self.digest = _digest(*(f.SerializeToString(deterministic=True) for f in m.fields),
                              b"|", *(b.SerializeToString(deterministic=True)
                                      for b in m.base_paths))
        self._bytes = None

    def manifest_bytes(self) -> bytes:
        """A Manifest holding the data-file environment (schema, base paths), serialized."""
        if self._bytes is None:
            m = self.vctx.manifest
            self._bytes = table_pb2.Manifest(fields=m.fields,
                                             base_paths=m.base_paths).SerializeToString()
        return self._bytes


def with_versions(f: Violation, spans: tuple) -> Violation:
    """``f`` naming the versions of ``spans`` (its location's version: the first)."""
    if not spans:
        return f
    loc = dict(f.location)
    loc["version"] = spans[0][0]
    return dataclasses.replace(f, location=loc, versions=spans)


def _manifest_path(path) -> bool:
    """Whether a location's ``path`` is a version's manifest (each version has its own)."""
    return isinstance(path, str) and path.endswith(".manifest") and "_versions/" in path


def group(findings) -> list[Violation]:
    """One finding per rule, message and place: the same finding from several versions
    becomes one naming all of them (``versions``); findings on no version are kept once.
    The place leaves out what each version has of its own: its number and its manifest's
    path (the finding keeps the first version's, as ``location["version"]``)."""
    out: dict = {}
    for f in findings:
        loc = {k: v for k, v in f.location.items()
               if k != "version" and not (k == "path" and _manifest_path(v))}
        key = (f.rule, f.severity, f.message, repr(sorted(loc.items())), "version" in f.location)
        if f.versions:
            spans = f.versions
        elif "version" in f.location:
            spans = ((int(f.location["version"]), int(f.location["version"])),)
        else:
            spans = ()
        if key not in out:
            out[key] = (f, [spans])
        else:
            out[key][1].append(spans)
    grouped = []
    for f, many in out.values():
        if "version" not in f.location:
            grouped.append(f)
            continue
        spans = ranges.union(*many)
        if spans == ((spans[0][0],) * 2,):
            loc = dict(f.location, version=spans[0][0])
            grouped.append(dataclasses.replace(f, location=loc, versions=()))
        else:
            grouped.append(with_versions(f, spans))
    return sorted(grouped, key=Violation.sort_key)


__all__ = ["History", "ManifestView", "Unit", "group", "read_manifest_bytes",
           "with_versions"]
