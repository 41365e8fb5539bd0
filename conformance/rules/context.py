"""What a check function receives. The engine (``conformance/engine/``) builds these.

Checks read through these objects only, so every rule sees the same decoded bytes and
the same caches. All attributes are filled by the engine before checks run; lazy
helpers decode on first use and cache the result in ``cache``.

Scopes (see ``registry.Scope``):

* ``TableContext`` for ``Scope.TABLE``: the dataset as a whole (version list, refs), or one
  branch of it (``ref`` = ``"branch:NAME"``, ``store`` rooted at ``tree/NAME/``): the engine
  runs the same table- and version-scope rules on main and on every branch. Rules that look
  across the history read each version's :class:`VersionFacts` (``version_facts``), not
  its manifest, so the engine need not keep the manifests.
* ``VersionContext`` for ``Scope.VERSION``: one manifest and what it references. Rules that
  need an aggregate over the fragments (how many, duplicate ids, the largest id, whether
  any has a deletion file) read ``fragment_stats`` when the engine gives them (a
  :class:`FragmentStats`; None on a hand-built context, where they look at the fragments).
* ``FragmentContext`` for ``Scope.FRAGMENT``: one fragment of a version. It looks like a
  ``VersionContext`` whose manifest lists that fragment alone, and of the rest of the
  manifest shows only the fragment's *environment* (:data:`FRAGMENT_ENVIRONMENT`), which
  the engine folds into the fragment's unit key: the verdict is computed once and holds for
  every version that carries the same fragment in the same environment. A fragment rule
  run on a whole ``VersionContext`` checks every fragment of the version (the readable
  meaning, which tests use).
* ``DataFileContext`` for ``Scope.DATA_FILE``: one data file of one fragment (deep checks).
* ``NamespaceContext`` for ``Scope.NAMESPACE``: a directory namespace root.
"""

from __future__ import annotations

import bisect
import hashlib
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, ClassVar

from reference_impl.io import ObjectStore

#: ``TableContext.cache`` key of what the rules met and could not judge: ``{key: note}``, the
#: note a sentence naming the thing (an index, its kind and layout) and why. The engine puts
#: the notes on the report (``Report.not_judged``); a branch's context shares main's.
NOT_JUDGED = "engine:not_judged"


@dataclass
class TableContext:
    """The dataset: ``store`` is rooted at the dataset root, ``uri`` its URI."""

    uri: str
    store: ObjectStore
    storage_options: dict[str, str] = field(default_factory=dict)
    deep: bool = False
    # Every manifest key in _versions/ that parses as a version, as the engine listed it:
    # list of reference_impl.table.versions.VersionEntry
    version_entries: list[Any] = field(default_factory=list)
    cache: dict[str, Any] = field(default_factory=dict)
    # The versions whose manifests the run checks (the version-scope rules run on these).
    selected_versions: list[int] = field(default_factory=list)
    # manifest key -> the FormatError/NotFound met when reading it (MANIFEST-00x report it)
    load_errors: dict[str, Any] = field(default_factory=dict)
    # Which ref of the table this context judges: "main", or "branch:NAME" when ``store``
    # is rooted at ``tree/NAME/`` of the main root ``main_store`` (findings carry it).
    ref: str = "main"
    # The branch name when ``ref`` is a branch, else None.
    branch: str | None = None
    # The main dataset root (``_refs/`` lives there); ``store`` itself for main.
    main_store: ObjectStore | None = None
    # Sub-directories of this root that belong to nested branches (``b`` in ``tree/a`` for
    # branch ``a/b``): not unknown directories of the root.
    nested_dirs: frozenset[str] = frozenset()
    # version -> VersionFacts | None, filled by the engine as it streams the manifests
    facts: dict[int, Any] = field(default_factory=dict)

    def manifest_file(self, version: int):
        """The decoded ``ManifestFile`` of ``version`` (cached), or None when it cannot be
        read (the reading rule reports that)."""
        return self._loader(version)

    _loader: Any = None  # set by the engine: Callable[[int], ManifestFile | None]

    def version_facts(self, version: int):
        """What the table-scope rules read of ``version``'s manifest (:class:`VersionFacts`),
        or None when it cannot be read (the reading rule reports that). Recorded by the
        engine while it streams the manifests; read through ``manifest_file`` otherwise."""
        if version not in self.facts:
            mf = self.manifest_file(version)
            self.facts[version] = None if mf is None else version_facts(mf)
        return self.facts[version]

    def entry(self, version: int):
        """The ``VersionEntry`` of ``version`` (the first by key when names collide)."""
        index = self.cache.get("entries-by-version")
        if index is None or index[0] is not self.version_entries \
                or index[1] != len(self.version_entries):
            by_version: dict = {}
            for e in self.version_entries:
                by_version.setdefault(e.version, e)
            index = self.cache["entries-by-version"] = (self.version_entries,
                                                       len(self.version_entries), by_version)
        return index[2].get(version)

    def selected_entries(self) -> list[Any]:
        wanted = set(self.selected_versions)
        return [e for e in self.version_entries if e.version in wanted]


@dataclass
class VersionContext:
    """One version. ``mf`` is a ``reference_impl.table.manifest.ManifestFile``."""

    table: TableContext
    version: int
    manifest_key: str
    mf: Any
    cache: dict[str, Any] = field(default_factory=dict)
    # Aggregates over the version's fragments (FragmentStats), set by the engine; None when
    # the rules are to look at the fragments themselves.
    fragment_stats: Any = None
    # True: the whole manifest is judged here; False in a FragmentContext (one fragment)
    whole_manifest: ClassVar[bool] = True

    @property
    def store(self) -> ObjectStore:
        return self.table.store

    @property
    def manifest(self):
        return self.mf.manifest

    @property
    def deep(self) -> bool:
        return self.table.deep

    def location(self, kind: str, name: str, base_id: int | None):
        """Resolve a file named in the manifest through the base-path rules of spec 000:
        ``kind`` is ``"data"``, ``"deletion"`` or ``"index"``. Returns ``(store, key)``;
        raises ``FormatError`` (rule BASEPATH-*) for an unknown base id or an escaping path."""
        from reference_impl.errors import FormatError
        from reference_impl.table.basepath import find_base_path, resolve

        if base_id is None:
            return resolve(self.table.store, self.manifest, kind, name, None,
                           storage_options=self.table.storage_options)
        try:
            path = find_base_path(self.manifest, base_id).path
        except FormatError:
            path = None  # resolve raises BASEPATH-002 below
        # one store per base path for the whole table (an S3 client is costly to make);
        # the cache is keyed by path, since a base id may name another path in another version
        stores = self.table.cache.setdefault("base-stores", {})
        known = _known_base_store(stores, path)
        per_call = {base_id: known} if known is not None else {}
        found = resolve(self.table.store, self.manifest, kind, name, base_id,
                        storage_options=self.table.storage_options, base_cache=per_call)
        if path is not None and base_id in per_call:
            stores.setdefault(path.rstrip("/"), per_call[base_id])
        return found


def _known_base_store(stores: dict, path: str | None):
    """The store already open for base path ``path``: the same path, or a branch root
    (``{root}/tree/...``) below a root the table opened; None when there is none."""
    if not path:
        return None
    key = path.rstrip("/")
    if key in stores:
        return stores[key]
    if "\x00" in key or ".." in key.replace("\\", "/").split("/"):
        return None  # resolve refuses it (BASEPATH-003)
    for root, store in list(stores.items()):
        rest = key[len(root):]
        if key.startswith(root + "/") and rest.startswith("/tree/"):
            stores[key] = store.child(rest[1:])
            return stores[key]
    return None


# -- what the table-scope rules keep of each version -------------------------------------------

@dataclass(frozen=True)
class VersionFacts:
    """The few things table-scope rules read of one version's manifest across the history
    (COMMIT-002, INDEX-012, REFS-005): the engine keeps these per version, not manifests.

    ``timestamp_ns``: ``Manifest.timestamp`` in ns, None when absent; ``branch``:
    ``Manifest.branch`` when the field is present, else None; ``indices``: one
    ``(uuid text, (name, field ids, dataset_version), position)`` per index entry;
    ``field_ids``: the ids of the version's schema (FRAG-013)."""

    timestamp_ns: int | None
    branch: str | None
    indices: tuple = ()
    field_ids: frozenset = frozenset()


def version_facts(mf) -> VersionFacts:
    """The :class:`VersionFacts` of a decoded ``ManifestFile``."""
    from reference_impl.table.index import uuid_text

    m = mf.manifest
    ts = m.timestamp.seconds * 10**9 + m.timestamp.nanos if m.HasField("timestamp") else None
    branch = m.branch if m.HasField("branch") else None
    indices = ()
    if mf.index_section is not None:
        indices = tuple((uuid_text(im.uuid.uuid), (im.name, tuple(im.fields),
                                                   int(im.dataset_version)), pos)
                        for pos, im in enumerate(mf.index_section.indices))
    return VersionFacts(ts, branch, indices, frozenset(int(f.id) for f in m.fields))


# -- one fragment ------------------------------------------------------------------------------

#: What a fragment-scope rule may read of its version's manifest besides the fragment: the
#: schema (``fields``), ``base_paths`` (where its files resolve), ``reader_feature_flags``
#: and whether ``writer_version`` is present (releases before 0.8 recorded no statistics).
#: :func:`fragment_environment` digests exactly these, and :class:`FragmentManifest` refuses
#: to show anything else, so a verdict shared by two versions never depends on what differs.
FRAGMENT_ENVIRONMENT = ("fields", "base_paths", "reader_feature_flags",
                        "HasField('writer_version')")


def fragment_environment(manifest) -> bytes:
    """A digest of the parts of ``manifest`` named by :data:`FRAGMENT_ENVIRONMENT`."""
    h = hashlib.blake2b(digest_size=16)
    for f in manifest.fields:
        raw = f.SerializeToString(deterministic=True)
        h.update(len(raw).to_bytes(4, "little") + raw)
    h.update(b"|")
    for b in manifest.base_paths:
        raw = b.SerializeToString(deterministic=True)
        h.update(len(raw).to_bytes(4, "little") + raw)
    h.update(b"|%d|%d" % (int(manifest.reader_feature_flags),
                          int(manifest.HasField("writer_version"))))
    return h.digest()


class FragmentManifest:
    """The manifest as a fragment-scope rule sees it: ``fragments`` is the one fragment, and
    of the rest only :data:`FRAGMENT_ENVIRONMENT`; reading anything else is an error (the
    engine reports it as ENGINE-001), because the verdict would then depend on a part of
    the manifest that is not in the fragment's unit key."""

    __slots__ = ("_manifest", "fragments")

    def __init__(self, manifest, fragment) -> None:
        self._manifest = manifest
        self.fragments = (fragment,)

    @property
    def fields(self):
        return self._manifest.fields

    @property
    def base_paths(self):
        return self._manifest.base_paths

    @property
    def reader_feature_flags(self) -> int:
        return self._manifest.reader_feature_flags

    def HasField(self, name: str) -> bool:  # noqa: N802 - the protobuf method's name
        if name != "writer_version":
            raise AttributeError(f"a fragment-scope rule asked whether Manifest.{name} is set, "
                                 f"which is not part of a fragment's environment")
        return self._manifest.HasField(name)

    def __getattr__(self, name: str):
        raise AttributeError(f"a fragment-scope rule read Manifest.{name}, which is not part "
                             f"of a fragment's environment ({', '.join(FRAGMENT_ENVIRONMENT)})")


#: What a data-file (deep) rule may read of its version's manifest: the schema and the base
#: paths (external blobs resolve through them). The engine keys a data file's deep verdict by
#: these, and :class:`DataFileManifest` refuses to show anything else.
DATA_FILE_ENVIRONMENT = ("fields", "base_paths")


class DataFileManifest:
    """The manifest as a data-file rule sees it: :data:`DATA_FILE_ENVIRONMENT` only."""

    __slots__ = ("_manifest",)

    def __init__(self, manifest) -> None:
        self._manifest = manifest

    @property
    def fields(self):
        return self._manifest.fields

    @property
    def base_paths(self):
        return self._manifest.base_paths

    def __getattr__(self, name: str):
        raise AttributeError(f"a data-file rule read Manifest.{name}, which is not part of a "
                             f"data file's environment ({', '.join(DATA_FILE_ENVIRONMENT)})")


@dataclass
class _FragmentManifestFile:
    """``ctx.mf`` of a :class:`FragmentContext`: the manifest file holds no index section
    or transaction for a fragment-scope rule."""

    key: str
    manifest: FragmentManifest
    index_section: Any = None
    transaction: Any = None
    transaction_bytes: Any = None


@dataclass
class FragmentContext(VersionContext):
    """One fragment (``fragment``, a ``DataFragment``) of the version ``version`` (the first
    version the engine met it in): ``manifest.fragments`` is ``(fragment,)``."""

    fragment: Any = None
    whole_manifest: ClassVar[bool] = False

    @classmethod
    def of(cls, vctx: VersionContext, fragment) -> FragmentContext:
        """The context of ``fragment`` in the environment of ``vctx``'s manifest."""
        view = FragmentManifest(vctx.manifest, fragment)
        return cls(table=vctx.table, version=vctx.version, manifest_key=vctx.manifest_key,
                   mf=_FragmentManifestFile(vctx.manifest_key, view), fragment=fragment)


# -- aggregates over a version's fragments -------------------------------------------------------

@dataclass(frozen=True)
class FragmentSummary:
    """What the version-scope rules need to know of one fragment, computed once per fragment
    unit (``conformance.rules.summary.summarize``): its id, its deletion file's
    ``read_version`` (None without one), whether it carries a row id sequence, the largest
    row id and the largest row version of its sequences (None when absent or unreadable),
    the normalized versions of its data files, the row ids of its live rows as
    ``(lowest, highest, distinct)`` (None when it has no live row with a readable row id:
    ROWID-003 leaves such a fragment out), and the field ids its data files name that its
    version's schema does not hold (``unheld_field_ids``, ascending: FRAG-013 asks whether
    any schema of the table ever held them)."""

    id: int
    deletion_read_version: int | None
    has_row_ids: bool
    row_id_max: int | None
    row_version_max: int | None
    file_versions: tuple = ()
    live_row_ids: tuple | None = None
    unheld_field_ids: tuple = ()


class _Tally:
    """A multiset of integers that knows its maximum (recomputed only after the maximum
    itself was removed)."""

    __slots__ = ("counts", "_max", "_stale")

    def __init__(self) -> None:
        self.counts: dict = {}
        self._max = None
        self._stale = False

    def add(self, v) -> None:
        self.counts[v] = self.counts.get(v, 0) + 1
        if not self._stale and (self._max is None or v > self._max):
            self._max = v

    def remove(self, v) -> None:
        n = self.counts[v] - 1
        if n:
            self.counts[v] = n
        else:
            del self.counts[v]
            if v == self._max:
                self._stale = True

    def max(self):
        if self._stale:
            self._max = max(self.counts) if self.counts else None
            self._stale = False
        return self._max


class _Spans:
    """The spans ``(lowest, highest, fragment id)`` of the live row ids of a version's
    fragments, sorted, and how many neighbours overlap.

    Sorted by their start, two spans overlap only if some neighbouring pair does (if span
    *i* overlaps a later span *j*, span *i + 1* starts between them, inside span *i*), so
    counting the neighbouring pairs that overlap, kept in step as spans come and go, tells
    whether any two fragments may share a row id."""

    __slots__ = ("items", "overlaps")

    def __init__(self) -> None:
        self.items: list[tuple] = []
        self.overlaps = 0

    def _pair(self, i: int) -> int:
        """1 when the spans at ``i`` and ``i + 1`` overlap (0 when either is missing)."""
        items = self.items
        return int(0 <= i and i + 1 < len(items) and items[i + 1][0] <= items[i][1])

    def add(self, span: tuple) -> None:
        i = bisect.bisect_left(self.items, span)
        self.overlaps -= self._pair(i - 1)
        self.items.insert(i, span)
        self.overlaps += self._pair(i - 1) + self._pair(i)

    def remove(self, span: tuple) -> None:
        i = bisect.bisect_left(self.items, span)
        self.overlaps -= self._pair(i - 1) + self._pair(i)
        del self.items[i]
        self.overlaps += self._pair(i - 1)

    def overlapping(self) -> set[int]:
        """The fragment ids of every span that overlaps a neighbour."""
        out = set()
        for i in range(len(self.items) - 1):
            if self._pair(i):
                out.update((self.items[i][2], self.items[i + 1][2]))
        return out


class FragmentStats:
    """Aggregates over the fragments of one version, kept up to date as the engine moves from
    one version to the next (``add``/``remove`` of :class:`FragmentSummary`), so a rule asks
    "is any fragment id duplicated?" without looking at thousands of fragments again."""

    def __init__(self) -> None:
        self.count = 0
        self.ids = _Tally()
        self.deletion_read_versions = _Tally()
        self.row_id_max = _Tally()
        self.row_version_max = _Tally()
        self.with_row_ids = 0
        self.deletions = 0  # fragments that carry a deletion file
        self.file_versions: Counter = Counter()
        self.duplicate_ids: set[int] = set()
        self.row_id_spans = _Spans()
        self.row_ids_repeated: Counter = Counter()  # fragment id -> entries repeating an id
        self.unheld_field_ids: Counter = Counter()  # id -> fragments whose files name it

    def _apply(self, s: FragmentSummary, step: int) -> None:
        self.count += step
        self.with_row_ids += step * s.has_row_ids
        self.deletions += step * (s.deletion_read_version is not None)
        for tally, v in ((self.deletion_read_versions, s.deletion_read_version),
                         (self.row_id_max, s.row_id_max),
                         (self.row_version_max, s.row_version_max)):
            if v is not None:
                (tally.add if step > 0 else tally.remove)(v)
        for fv in s.file_versions:
            self.file_versions[fv] += step
            if not self.file_versions[fv]:
                del self.file_versions[fv]
        for fid in s.unheld_field_ids:
            self.unheld_field_ids[fid] += step
            if not self.unheld_field_ids[fid]:
                del self.unheld_field_ids[fid]
        if s.live_row_ids is not None:
            lo, hi, distinct = s.live_row_ids
            (self.row_id_spans.add if step > 0 else self.row_id_spans.remove)((lo, hi, s.id))
            if not distinct:
                self.row_ids_repeated[s.id] += step
                if not self.row_ids_repeated[s.id]:
                    del self.row_ids_repeated[s.id]

    def add(self, s: FragmentSummary) -> None:
        self._apply(s, 1)
        self.ids.add(s.id)
        if self.ids.counts[s.id] > 1:
            self.duplicate_ids.add(s.id)

    def remove(self, s: FragmentSummary) -> None:
        self._apply(s, -1)
        self.ids.remove(s.id)
        if self.ids.counts.get(s.id, 0) < 2:
            self.duplicate_ids.discard(s.id)

    @property
    def max_id(self) -> int | None:
        return self.ids.max()

    def row_id_suspects(self) -> set[int]:
        """The ids of the fragments that may hold a live row id another live row holds:
        those whose span of live row ids overlaps another's, or that repeat an id
        themselves. Empty: every live row id of the version is distinct."""
        if not self.row_id_spans.overlaps and not self.row_ids_repeated:
            return set()
        return self.row_id_spans.overlapping() | set(self.row_ids_repeated)


def fragment_count(ctx) -> int:
    """How many fragments ``ctx``'s version lists."""
    stats = ctx.fragment_stats
    return stats.count if stats is not None else len(ctx.manifest.fragments)


@dataclass
class DataFileContext:
    """One data file of one fragment: ``fragment`` and ``data_file`` are protobuf messages."""

    version: VersionContext
    fragment: Any
    data_file: Any
    file_store: ObjectStore
    file_key: str
    cache: dict[str, Any] = field(default_factory=dict)


@dataclass
class NamespaceContext:
    """A directory namespace: ``store`` is rooted at the namespace root."""

    uri: str
    store: ObjectStore
    config: dict[str, str] = field(default_factory=dict)
    cache: dict[str, Any] = field(default_factory=dict)

