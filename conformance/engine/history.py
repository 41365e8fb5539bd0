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
  its fragment id and the environment, whatever number of versions and fragments list it.

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

Counters (``Plan.stats``): ``versions_checked``, ``manifests_read``, ``manifest_bytes``,
``fragment_entries`` (fragments listed, summed over versions), ``fragment_units`` (checked),
``fragment_lists_decoded`` (versions whose fragments a rule had to decode), ``data_files``
(deep units planned), ``data_files_decoded`` (deep checks run), and the store's requests
(:mod:`.counting`).
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
from reference_impl.errors import FormatError, NotFound
from reference_impl.table.manifest import DEFAULT_MAX_MANIFEST_SIZE, decode_manifest_file

from . import ranges, split
from .checks import run_check
from .report import Violation


class ManifestView:
    """A version's Manifest as the version-scope rules see it: every field of the parsed
    manifest, and ``fragments`` decoded only when a rule reads them (``load``)."""

    __slots__ = ("_manifest", "_load", "_fragments")

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
        return getattr(self._manifest, name)


@dataclass(eq=False)
class Unit:
    """One check unit: its findings (location ``version`` = the first version met) and the
    spans ``[first, last]`` of positions in the ref's checked versions that carry it."""

    kind: str
    findings: list[Violation] = field(default_factory=list)
    summary: object = None
    count: int = 0  # entries of the current version that are this unit
    spans: list[list] = field(default_factory=list)
    data_files: list = field(default_factory=list)  # a fragment's data-file units
    containers: list = field(default_factory=list)  # a data file's fragment units
    item: int | None = None  # a data file's index in Plan.items


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
    file index)`` registers a deep data-file check and returns its item index."""

    def __init__(self, table: TableContext, label: str, rules: dict, *, stats: dict,
                 new_item=None, fast: bool = True, dedupe: bool = True, guards: bool = True):
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

    def _count(self, name: str, n: int = 1) -> None:
        self.stats[name] = self.stats.get(name, 0) + n

    # -- one version ---------------------------------------------------------------------
    def check(self, version: int) -> bool:
        """Check ``version`` (listed, not yet checked; versions come in increasing order);
        False when its manifest cannot be read (the MANIFEST rules report why)."""
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
        except (FormatError, NotFound) as exc:
            table.load_errors[entry.key] = exc
            table.facts[version] = None
            return False
        except Exception as exc:  # noqa: BLE001 - reported by MANIFEST-003
            table.load_errors[entry.key] = FormatError(
                f"manifest cannot be read: {type(exc).__name__}: {exc}",
                rule="MANIFEST-003", path=entry.key)
            table.facts[version] = None
            return False
        del data
        parts: split.Split = box["split"]
        table.facts[version] = version_facts(mf)
        pos = self.sequence.append(version)
        self._count("versions_checked")

        def every_fragment():
            self._count("fragment_lists_decoded")
            return parts.fragments()

        whole = dataclasses.replace(mf, manifest=ManifestView(mf.manifest, every_fragment))
        vctx = VersionContext(table=table, version=version, manifest_key=entry.key, mf=whole,
                              fragment_stats=self.fragment_stats if self.guards else None)
        self._fragments(vctx, parts, pos)
        where = {"ref": self.label, "version": version}
        for r in self.version_rules:
            self.findings.extend(run_check(r, vctx, where))
        if self.manifest_parts:
            hidden = dataclasses.replace(mf, manifest=ManifestView(mf.manifest, tuple))
            hctx = VersionContext(table=table, version=version, manifest_key=entry.key,
                                  mf=hidden)
            for r in self.manifest_parts:
                self.findings.extend(run_check(r, hctx, where))
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
                if environment is None:
                    environment = _Environment(vctx, env)
                u = self.units[ukey] = self._fragment_unit(vctx, decode(), environment)
            if not u.count:
                if u.spans and u.spans[-1][1] == pos - 1:
                    u.spans[-1][1] = None
                else:
                    u.spans.append([pos, None])
            u.count += 1
            self.fragment_stats.add(u.summary)
            self.entries.append(u)
        self._count("fragment_entries", len(self.entries))

    def _fragment_unit(self, vctx: VersionContext, frag, environment) -> Unit:
        self._count("fragment_units")
        fctx = FragmentContext.of(vctx, frag)
        where = {"ref": self.label, "version": vctx.version}
        found = []
        for r in self.fragment_rules:
            found.extend(run_check(r, fctx, where))
        unit = Unit("fragment", findings=found, summary=summarize(fctx))
        if self.new_item is not None:
            for di, df in enumerate(frag.files):
                key = (environment.digest, int(frag.id), df.SerializeToString(deterministic=True),
                       environment.dictionaries)
                if not self.dedupe:
                    key += (vctx.version,)
                du = self.files.get(key)
                if du is None:
                    du = self.files[key] = Unit("data_file")
                    du.item = self.new_item(vctx.version, vctx.manifest_key, vctx.mf.size,
                                            environment.manifest_bytes(), frag, di)
                    self._count("data_files")
                du.containers.append(unit)
        return unit

    # -- the end ---------------------------------------------------------------------------
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
                spans = self.sequence.ranges(u.spans)
                out.extend(with_versions(f, spans) for f in u.findings)
        return out

    def item_versions(self) -> dict[int, tuple]:
        """Item index -> the version ranges of its data file (after :meth:`finish`)."""
        out = {}
        for du in self.files.values():
            out[du.item] = ranges.union(*(self.sequence.ranges(c.spans) for c in du.containers))
        return out


class _Environment:
    """What deep checks of a version's data files share: the environment digest, whether
    legacy dictionaries (kept in the manifest file itself) tie them to this manifest, and
    the manifest without fragments as bytes (made once, when a data file needs it)."""

    def __init__(self, vctx: VersionContext, digest: bytes) -> None:
        self.vctx = vctx
        m = vctx.manifest
        self.dictionaries = vctx.manifest_key if any(
            f.HasField("dictionary") for f in m.fields) else None
        self.digest = digest
        self._bytes = None

    def manifest_bytes(self) -> bytes:
        if self._bytes is None:
            self._bytes = self.vctx.manifest._manifest.SerializeToString()
        return self._bytes


def with_versions(f: Violation, spans: tuple) -> Violation:
    """``f`` naming the versions of ``spans`` (its location's version: the first)."""
    if not spans:
        return f
    loc = dict(f.location)
    loc["version"] = spans[0][0]
    return dataclasses.replace(f, location=loc, versions=spans)


def group(findings) -> list[Violation]:
    """One finding per rule, message and place: the same finding from several versions
    becomes one naming all of them (``versions``); findings on no version are kept once."""
    out: dict = {}
    for f in findings:
        loc = {k: v for k, v in f.location.items() if k != "version"}
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
