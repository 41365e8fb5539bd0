"""The local validation engine: run the rule catalog over one dataset in this process.

The work is split so that a distributed engine (Spark) can reuse it:

* :func:`plan` (the driver) opens the store, lists ``_versions/``, streams the manifests of
  each ref oldest first through :class:`.history.History` (table-, version- and
  fragment-scope rules; every fragment checked once per *unit*, however many versions list
  it) and returns a :class:`Plan` with those findings and one :class:`DataFileItem` per
  distinct data file of the checked versions (only with ``deep``);
* :func:`run_data_file_item` runs the data-file-scope rules on one item. Items hold only
  plain values (URI, options, version, the fragment and the manifest without fragments as
  bytes, file index, rule ids), so they pickle and need no manifest read;
* :func:`merge` joins the driver's findings and the items' findings into a :class:`Report`,
  each finding naming every version it holds in (``Violation.versions``).

The whole table is judged, not only its main line: every branch under ``tree/{name}/``
(nested names included) runs the same table- and version-scope rules in its own
:class:`TableContext` (rooted at the branch, ``ref="branch:NAME"``), its data files become
items of their own, and the tags and branch files under ``_refs/`` are judged by the REFS
rules. ``refs`` narrows this to ``"main"``, one branch or one tag. Every finding carries the
ref it belongs to in ``location["ref"]`` (``main``, ``branch:dev``, ``tag:v1``).

:func:`validate` does all three in this process, under an optional time limit.

Guarantees: a check that raises becomes an ``ENGINE-001`` finding naming the rule and the
exception, one that runs out of memory an ``ENGINE-003`` finding ("not checked", never a
finding of a format rule); a dataset whose manifests cannot be read is reported through its rules; only an
unreachable store or a dataset path with nothing in it raises :class:`DatasetNotFound`
(the CLI's exit 2). Findings are sorted deterministically by the report.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections import deque
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field

from conformance.engine.report import Report, Violation
from conformance.rules import registry
from conformance.rules.context import (
    NOT_JUDGED,
    DataFileContext,
    DataFileManifest,
    TableContext,
    VersionContext,
)
from reference_impl.errors import FormatError, LanceError, NotFound, StoreError
from reference_impl.file import parallel

from . import access
from .checks import engine_violation as _engine_violation
from .checks import out_of_memory, run_check
from .counting import CountingStore, Counts
from .history import History, group


class DatasetNotFound(LanceError):
    """The store cannot be reached, or the dataset path holds nothing at all."""


class RefNotFound(DatasetNotFound):
    """``refs`` names no branch or tag of the dataset (a usage error, exit 2)."""


ALL_REFS = "all"
MAIN = "main"


@dataclass(frozen=True)
class DataFileItem:
    """One data file to deep-check: plain, picklable values only. ``fragment`` is the
    serialized ``DataFragment`` that lists it (``file_index``-th file) and ``environment`` a
    serialized Manifest holding what data-file rules read of ``version``'s manifest (the
    schema and base paths: ``DATA_FILE_ENVIRONMENT``), so the check reads no manifest;
    ``manifest_key`` and ``manifest_size`` name the manifest file only for legacy
    dictionaries, which live in it. ``tail`` is ``(file size, window start, bytes)`` of the
    data file's tail window when the metadata checks of the same run read it
    (:class:`.access.Tails`): the deep check then fetches neither its size nor its footer
    again."""

    uri: str
    storage_options: tuple[tuple[str, str], ...]
    version: int
    manifest_key: str
    fragment: bytes
    file_index: int
    rules: tuple[str, ...]
    environment: bytes = b""
    manifest_size: int = 0
    # The branch whose root (``tree/{branch}/`` below ``uri``) ``manifest_key`` is relative
    # to, None for main; ``ref`` is the label its findings carry.
    branch: str | None = None
    ref: str = MAIN
    tail: tuple | None = None


@dataclass
class Plan:
    uri: str
    versions_checked: list[int]
    rules_checked: list[str]
    findings: list[Violation] = field(default_factory=list)
    items: list[DataFileItem] = field(default_factory=list)
    started: float = field(default_factory=time.monotonic)
    # ref label -> the versions checked on it (main's are ``versions_checked`` as well)
    refs_checked: dict[str, list[int]] = field(default_factory=dict)
    # item index -> the version ranges its data file holds in (its findings name them all)
    item_versions: dict[int, tuple] = field(default_factory=dict)
    # counters of what the driver read and checked (see .history)
    stats: dict[str, int] = field(default_factory=dict)
    counts: Counts = field(default_factory=Counts)
    # the History of each ref checked (they put their verdicts into the cache)
    histories: list = field(default_factory=list)
    cache: object = None
    tails: access.Tails = field(default_factory=access.Tails)
    # what the rules met and could not judge (key -> note; see Report.not_judged)
    not_judged: dict = field(default_factory=dict)


@dataclass(frozen=True)
class RefTarget:
    """One ref whose versions the plan checks: its label, the branch whose root holds the
    versions (None: main) and which versions (``"latest"``, ``"all"`` or a list)."""

    label: str
    branch: str | None
    versions: object


def _selected_rules(rules: Iterable[str] | None, skip: Iterable[str] | None, deep: bool):
    skipped = set(skip or ())
    chosen = [r for r in registry.select(rules, deep=deep) if r.id not in skipped]
    return chosen


def open_table(uri: str, storage_options: dict | None = None, *, deep: bool = False,
               counts: Counts | None = None) -> TableContext:
    """Open the store and list versions; raises DatasetNotFound when there is nothing.
    Reads through the store are counted in ``counts`` (a new :class:`Counts` by default)."""
    from reference_impl.io.uri import open_store

    try:
        store = CountingStore(open_store(uri, storage_options), counts)
    except LanceError as exc:
        raise DatasetNotFound(f"cannot open {uri}: {exc}") from None
    root = getattr(store, "root", None)
    if root is not None and not __import__("os").path.isdir(str(root)):
        raise DatasetNotFound(f"no dataset at {uri}: {root} is not a directory")
    try:
        top_files, top_dirs = store.list_dir("")
    except Exception as exc:  # noqa: BLE001 - any failure to list is an unreachable store
        raise DatasetNotFound(f"cannot list {uri}: {type(exc).__name__}: {exc}") from None
    if not top_files and not top_dirs:
        raise DatasetNotFound(f"no dataset at {uri}: the path is empty or missing")
    table = TableContext(uri=uri, store=store, storage_options=dict(storage_options or {}),
                         deep=deep, main_store=store)
    try:
        table.version_entries = access.list_versions(store)
    except (StoreError, OSError) as exc:
        raise DatasetNotFound(f"cannot list {uri}/_versions: {exc}") from None
    except LanceError:
        table.version_entries = []
    _attach_loader(table)
    # base paths naming this root (a branch's id 0) reuse its store and client
    table.cache["base-stores"] = {uri.rstrip("/"): store, str(store.uri).rstrip("/"): store}
    table.cache["datafile_info"] = {}
    table.cache[NOT_JUDGED] = {}
    return table


def open_branch(main: TableContext, branch: str, label: str | None = None) -> TableContext:
    """A context rooted at ``tree/{branch}/`` of the main root ``main.store``, listing the
    branch's own ``_versions/`` (an unlistable branch has no versions: REFS-004 says so)."""
    from reference_impl.table import layout

    prefix = layout.branch_prefix(branch)
    store = main.store.child(prefix)
    names = main.cache.get("engine:branch-names", [])
    nested = frozenset(n[len(branch) + 1:].split("/", 1)[0] for n in names
                       if n.startswith(branch + "/"))
    ctx = TableContext(uri=f"{main.uri.rstrip('/')}/{prefix}", store=store,
                       storage_options=dict(main.storage_options), deep=main.deep,
                       ref=label or f"branch:{branch}", branch=branch, main_store=main.store,
                       nested_dirs=nested)
    ctx.cache["base-stores"] = main.cache.setdefault("base-stores", {})
    # a data file's footer is read once per run, whichever ref lists it
    ctx.cache["datafile_info"] = main.cache.setdefault("datafile_info", {})
    ctx.cache[NOT_JUDGED] = main.cache.setdefault(NOT_JUDGED, {})
    ctx.cache["deletion.files"] = main.cache.setdefault("deletion.files",
                                                        {"bytes": 0, "files": {}})
    try:
        ctx.version_entries = access.list_versions(store)
    except LanceError:
        ctx.version_entries = []
    except OSError:
        ctx.version_entries = []
    _attach_loader(ctx)
    return ctx


#: manifests a table context keeps decoded (the engine streams the history; a rule or the
#: root label that asks for one more reads it)
LOADED_KEPT = 2


def _attach_loader(table: TableContext) -> None:
    """Give ``table`` its manifest loader, which keeps the last :data:`LOADED_KEPT`
    manifests (load errors recorded for MANIFEST-00x)."""
    store = table.store
    cache: dict[int, object] = {}

    def loader(version: int):
        if version in cache:
            return cache[version]
        entry = table.entry(version)
        mf = None
        if entry is not None:
            try:
                mf = access.read_manifest_file(store, entry.key)
            except (FormatError, NotFound) as exc:
                table.load_errors[entry.key] = exc
            except Exception as exc:  # noqa: BLE001 - reported by MANIFEST-003
                table.load_errors[entry.key] = FormatError(
                    f"manifest cannot be read: {type(exc).__name__}: {exc}",
                    rule="MANIFEST-003", path=entry.key)
        while len(cache) >= LOADED_KEPT:
            cache.pop(next(iter(cache)))
        cache[version] = mf
        return mf

    table._loader = loader


def _pick_versions(table: TableContext, versions) -> list[int]:
    attached = [e.version for e in table.version_entries if e.scheme != "detached"]
    every = sorted({e.version for e in table.version_entries})
    if versions in (None, "latest"):
        return [max(attached)] if attached else ([max(every)] if every else [])
    if versions == "all":
        return every
    if isinstance(versions, int):
        versions = [versions]
    return sorted({int(v) for v in versions})


def _branch_names(table: TableContext) -> list[str]:
    """Valid branch names with a branch file under ``_refs/branches`` (cached on ``table``);
    an invalid name (REFS-007) is never turned into a path."""
    from conformance.rules.refs import branch_name_problem
    from reference_impl.table import refs as ref_files

    if "engine:branch-names" not in table.cache:
        try:
            names = ref_files.ref_names(table.store, "branches")
        except (LanceError, OSError):
            names = []
        table.cache["engine:branch-names"] = [n for n in names if not branch_name_problem(n)]
    return table.cache["engine:branch-names"]


def _tag_names(table: TableContext) -> list[str]:
    from reference_impl.table import refs as ref_files

    try:
        return ref_files.ref_names(table.store, "tags")
    except (LanceError, OSError):
        return []


def _targets(table: TableContext, refs, versions) -> tuple[list[RefTarget], set[str]]:
    """The refs to check and the labels whose findings the report keeps.

    ``refs``: ``"all"`` (main, every branch and every tag), ``"main"``, a branch or tag name
    (``branch:NAME`` / ``tag:NAME`` when a name is both), or None: ``"main"`` when
    ``versions`` names versions (they are main's numbers), else ``"all"``."""
    explicit = versions not in (None, "latest", "all")
    if refs is None:
        refs = MAIN if explicit else ALL_REFS
    branches = _branch_names(table)
    root = root_label(table)
    if refs == MAIN:
        return [RefTarget(root, None, versions)], {root}
    if refs == ALL_REFS:
        targets = [RefTarget(root, None, versions)]
        targets += [RefTarget(f"branch:{b}", b, versions) for b in branches]
        labels = {root} | {f"branch:{b}" for b in branches}
        labels |= {f"tag:{t}" for t in _tag_names(table)}
        from reference_impl.table import refs as ref_files

        labels |= {f"branch:{b}" for b in ref_files.ref_names(table.store, "branches")}
        return targets, labels
    name = str(refs)
    kind = None
    if name.startswith("branch:"):
        kind, name = "branch", name[len("branch:"):]
    elif name.startswith("tag:"):
        kind, name = "tag", name[len("tag:"):]
    elif name in branches:
        kind = "branch"
    elif name in _tag_names(table):
        kind = "tag"
    if kind == "branch" and name in branches:
        return [RefTarget(f"branch:{name}", name, versions)], {f"branch:{name}"}
    if kind == "tag" and name in _tag_names(table):
        from reference_impl.table import refs as ref_files

        label = f"tag:{name}"
        try:
            tag = ref_files.resolve_tag(table.store, name)
        except (LanceError, OSError):
            return [], {label}  # REFS-001 says why
        if tag.branch is not None and tag.branch not in branches:
            return [], {label}  # REFS-002
        return [RefTarget(label, tag.branch, [tag.version])], {label}
    raise RefNotFound(f"{refs!r} names no branch or tag of {table.uri}")


def root_label(table: TableContext) -> str:
    """The ref label of the root validated: ``main``, or ``branch:NAME`` when the URI is a
    branch's own directory (``.../tree/NAME``, its latest manifest naming NAME) opened
    directly."""
    from urllib.parse import unquote

    if "engine:root-label" in table.cache:
        return table.cache["engine:root-label"]
    label = MAIN
    attached = [e.version for e in table.version_entries if e.scheme != "detached"]
    # only a root below tree/ can be a branch's: else the label is main without a read
    below_tree = "/tree/" in unquote(str(table.store.uri))
    mf = table.manifest_file(max(attached)) if attached and below_tree else None
    if mf is not None and mf.manifest.HasField("branch") and mf.manifest.branch:
        name = mf.manifest.branch
        if unquote(str(table.store.uri)).rstrip("/").endswith("/tree/" + name):
            label = f"branch:{name}"
            table.nested_dirs = frozenset(_branch_dirs(table.store))
    table.cache["engine:root-label"] = label
    return label


def _branch_dirs(store, depth: int = 4) -> list[str]:
    """Sub-directories of a branch root that hold nested branches (a ``_versions/`` at most
    ``depth`` levels down): seen from a branch opened directly, ``_refs/`` is out of reach."""
    from conformance.rules.layout import KNOWN_DIRS

    def holds_versions(prefix: str, left: int) -> bool:
        try:
            _files, dirs = store.list_dir(prefix)
        except (LanceError, OSError):
            return False
        names = [d.rstrip("/").rsplit("/", 1)[-1] for d in dirs]
        if "_versions" in names:
            return True
        return left > 0 and any(holds_versions(f"{prefix}/{n}", left - 1) for n in names
                                if n not in KNOWN_DIRS)

    try:
        _files, dirs = store.list_dir("")
    except (LanceError, OSError):
        return []
    names = [d.rstrip("/").rsplit("/", 1)[-1] for d in dirs]
    return [n for n in names if n not in KNOWN_DIRS and holds_versions(n, depth - 1)]


@dataclass(frozen=True)
class Options:
    """How the planner walks the history (the defaults are the fast, shared path; the others
    give the same report and exist to test that): ``fast`` splits manifests by their bytes
    (:class:`.split.FastSplitter`), ``dedupe`` checks each unit once for every version that
    carries it, ``guards`` lets version rules read the fragment aggregates."""

    fast: bool = True
    dedupe: bool = True
    guards: bool = True


def plan(uri: str, *, versions="latest", deep: bool = False, rules=None, skip=None,
         storage_options: dict | None = None, deadline: float | None = None,
         progress: Callable[[str, int, int], None] | None = None, refs=None,
         options: Options | None = None, cache: str | None = None) -> Plan:
    """The driver's part: table-, version- and fragment-scope rules of every ref checked,
    plus the data-file work list. ``refs``: see :func:`_targets`. ``cache``: the path of a
    verdict cache (:mod:`.cache`); :func:`keep` writes it after :func:`merge`."""
    options = options or Options()
    chosen = _selected_rules(rules, skip, deep)
    result = Plan(uri=uri, versions_checked=[], rules_checked=[r.id for r in chosen])
    if cache is not None:
        from .cache import VerdictCache

        result.cache = VerdictCache.open(cache, uri=uri, rules=result.rules_checked,
                                         deep=deep, storage_options=storage_options)
    table = open_table(uri, storage_options, deep=deep, counts=result.counts)
    targets, labels = _targets(table, refs, versions)
    by_scope: dict[str, list[registry.Rule]] = {}
    for r in chosen:
        by_scope.setdefault(r.scope.value, []).append(r)
    refs_rules = [r for r in by_scope.get("table", []) if r.id.startswith("REFS-")]
    found: list[Violation] = []

    def out_of_time(label: str) -> bool:
        if deadline is not None and time.monotonic() > deadline:
            found.append(_engine_violation(
                "ENGINE-002", "time limit reached; later checks did not run", {"ref": label}))
            return True
        return False

    root = root_label(table)
    if not any(t.label == root for t in targets):
        # _refs/ lives under the main root: its rules run there whatever the refs checked
        for r in refs_rules:
            found.extend(run_check(r, table, {"ref": root}))
    stopped = False
    for target in targets:
        if stopped:
            break
        if target.label == root:
            ctx = table
        else:
            ctx = open_branch(table, target.branch, target.label) if target.branch else \
                open_table(uri, storage_options, deep=deep, counts=result.counts)
            if target.label.startswith("branch:") and not ctx.version_entries:
                continue  # REFS-004: the branch file has no tree
        stopped = not _check_target(result, found, ctx, target, by_scope, deep,
                                    storage_options, out_of_time, progress,
                                    is_root=target.label == root, options=options)
    result.findings.extend(f for f in found if f.location.get("ref", root) in labels)
    result.versions_checked = list(result.refs_checked.get(root, []))
    result.stats.update(result.counts.as_stats())
    result.not_judged = table.cache.get(NOT_JUDGED, {})
    return result


def _check_target(result: Plan, found: list, ctx: TableContext, target: RefTarget, by_scope,
                  deep: bool, storage_options, out_of_time, progress, *,
                  is_root: bool = False, options: Options | None = None) -> bool:
    """Stream the versions of one ref through a :class:`.history.History` (version- and
    fragment-scope rules, data-file items), then run its table-scope rules; False when the
    time limit stopped it."""
    label = target.label
    selected = _pick_versions(ctx, target.versions)
    ctx.selected_versions = selected
    ctx.ref = label
    where = {"ref": label}
    checked = result.refs_checked.setdefault(label, [])
    missing = {v for v in selected if ctx.entry(v) is None}  # reported by COMMIT-005
    data_rules = tuple(r.id for r in by_scope.get("data_file", []))
    todo = [v for v in selected if v not in missing]
    opts = tuple(sorted((storage_options or {}).items()))

    def new_item(version, manifest_key, size, environment, fragment, file_index,
                 tail=None) -> int:
        result.items.append(DataFileItem(
            result.uri, opts, version, manifest_key, fragment.SerializeToString(), file_index,
            data_rules, environment, size, ctx.branch, label, tail))
        if tail is not None:
            result.stats["data_file_tails_kept"] = result.stats.get("data_file_tails_kept",
                                                                    0) + 1
        return len(result.items) - 1

    if deep and data_rules:
        # the tail windows the metadata checks read, handed to the deep checks (one fetch)
        ctx.cache["datafile_tails"] = result.tails

    options = options or Options()
    history = History(ctx, label, by_scope, stats=result.stats,
                      new_item=new_item if deep and data_rules else None, fast=options.fast,
                      dedupe=options.dedupe, guards=options.guards,
                      cache=result.cache.ref(label) if result.cache is not None else None)
    result.histories.append(history)
    history.plan_cache(todo)
    finished = True
    for i, v in enumerate(todo):
        if out_of_time(label):
            finished = False
            break
        if progress:
            progress("versions", i, len(todo))
        if history.serve(v) or history.check(v):
            checked.append(v)
    if progress and finished:
        progress("versions", len(todo), len(todo))
    found.extend(history.finish())
    result.item_versions.update(history.item_versions())
    for r in by_scope.get("table", []):
        if r.id.startswith("REFS-") and not is_root and ctx.branch is None:
            continue  # a tag of main: the tag's rules ran in main's context
        found.extend(run_check(r, ctx, where))
    return finished


_ROOTS: dict = {}
_ROOTS_KEPT = 4
_ROOTS_LOCK = threading.Lock()


def _item_root(item: DataFileItem, counts: Counts | None = None) -> tuple:
    """``(root store, base-path store cache)`` of the item's dataset, made once per process
    and dataset: every item of a run shares one client (an S3 client is costly to make and
    safe to share between threads) and the stores of the base paths its manifests name.
    With ``counts`` (the run's), the root store counts its reads there, as the plan's does
    (one such wrapper per run and dataset)."""
    from reference_impl.io.uri import open_store

    key = (item.uri, item.storage_options)
    with _ROOTS_LOCK:
        hit = _ROOTS.get(key)
    if hit is None:
        root = open_store(item.uri, dict(item.storage_options))
        made = (root, {item.uri.rstrip("/"): root, str(root.uri).rstrip("/"): root})
        with _ROOTS_LOCK:
            while len(_ROOTS) >= _ROOTS_KEPT:
                _ROOTS.pop(next(iter(_ROOTS)))
            hit = _ROOTS.setdefault(key, made)
    if counts is None:
        return hit
    with _ROOTS_LOCK:
        runs = _COUNTED.setdefault(counts, {})
        if key not in runs:
            root, bases = hit
            counted = CountingStore(root, counts)
            runs[key] = (counted, {k: counted if v is root else v for k, v in bases.items()})
        return runs[key]


#: per run (its Counts) and dataset: the counted root store and base-path stores of its items
_COUNTED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def item_store(item: DataFileItem, counts: Counts | None = None):
    """The store ``item.manifest_key`` is relative to: the dataset root, or its branch's
    ``tree/{branch}/`` directory (counting into ``counts`` when given)."""
    from reference_impl.table import layout

    store = _item_root(item, counts)[0]
    prefix = layout.branch_prefix(item.branch)
    return store.child(prefix) if prefix else store


def _item_manifest(item: DataFileItem):
    """The ``ManifestFile`` a data-file check sees: the item's manifest without fragments."""
    from reference_impl.proto import table_pb2
    from reference_impl.table.manifest import ManifestFile

    manifest = DataFileManifest(table_pb2.Manifest.FromString(item.environment))
    return ManifestFile(key=item.manifest_key, size=item.manifest_size, manifest=manifest,
                        index_section=None, transaction=None, transaction_field=None,
                        transaction_bytes=None, manifest_offset=0, tail_major=0, tail_minor=2)


def _deep_store(store, key: str, tail: tuple | None, counts: Counts | None):
    """The store the deep check of the item's data file ``key`` reads: with the file's size
    and tail window in hand when the plan read them (:class:`.access.PrimedStore`: no
    request for either again). A local file larger than its window (or whose window the plan
    did not keep) is read from the plain ``LocalStore``, whose pages a memory map gives:
    outside the request counts, which note it (:meth:`.counting.Counts.direct`)."""
    from reference_impl.io.local import LocalStore

    plain = store.inner if isinstance(store, CountingStore) else store
    if type(plain) is LocalStore and (not tail or tail[1] > 0):
        if counts is not None:
            counts.direct()
        return plain
    return access.PrimedStore(store, key, *tail) if tail else store


def run_data_file_item(item: DataFileItem, counts: Counts | None = None) -> list[Violation]:
    """Run the data-file-scope rules of one item (a Spark task, or a local loop step);
    ``counts``: the run's request counts, where its reads are counted."""
    from reference_impl.proto import table_pb2

    loc = {"ref": item.ref, "version": item.version}
    try:
        store = item_store(item, counts)
        table = TableContext(uri=item.uri, store=store, storage_options=dict(item.storage_options),
                             deep=True, ref=item.ref, branch=item.branch,
                             cache={"base-stores": _item_root(item, counts)[1]})
        mf = _item_manifest(item)
        fragment = table_pb2.DataFragment.FromString(item.fragment)
        data_file = fragment.files[item.file_index]
        loc.update(fragment=int(fragment.id), path=data_file.path)
        vctx = VersionContext(table=table, version=item.version, manifest_key=item.manifest_key,
                              mf=mf)
        base_id = data_file.base_id if data_file.HasField("base_id") else None
        file_store, file_key = vctx.location("data", data_file.path, base_id)
        loc["path"] = file_key
        file_store = _deep_store(file_store, file_key, item.tail, counts)
        ctx = DataFileContext(version=vctx, fragment=fragment, data_file=data_file,
                              file_store=file_store, file_key=file_key)
    except (FormatError, NotFound, IndexError) as exc:
        # The metadata rules report why this file cannot be reached; nothing to deep-check.
        return [] if not isinstance(exc, IndexError) else [_engine_violation(
            "ENGINE-001", f"data-file item no longer matches its manifest: {exc}", loc)]
    except MemoryError as exc:
        return [out_of_memory(exc, loc)]
    except Exception as exc:  # noqa: BLE001
        return [_engine_violation("ENGINE-001",
                                  f"cannot prepare data-file checks: {type(exc).__name__}: {exc}",
                                  loc)]
    out = []
    for rule_id in item.rules:
        out.extend(run_check(registry.get_rule(rule_id), ctx, loc))
    return out


def unique_findings(findings: Iterable[Violation]) -> list[Violation]:
    """The findings in report order, identical ones (same rule, message and place) once, and
    the same finding from several versions once, naming them all (``versions``)."""
    return group(findings)


def merge(p: Plan, item_findings: Iterable[Iterable[Violation]], *, elapsed_s: float | None = None) -> Report:
    """Join the driver's findings and every item's findings into one report; the findings
    of item ``i`` name every version its data file holds in (``p.item_versions[i]``)."""
    from .history import with_versions

    findings = list(p.findings)
    decoded = 0
    for i, chunk in enumerate(item_findings):
        spans = p.item_versions.get(i, ())
        decoded += i < len(p.items)
        findings.extend(with_versions(f, spans) if "version" in f.location else f
                        for f in chunk)
    ordered = group(findings)
    elapsed = time.monotonic() - p.started if elapsed_s is None else elapsed_s
    # the request counts again: the local engine's deep checks read through them too
    stats = dict(p.stats, **p.counts.as_stats(), data_files_decoded=decoded) if p.stats else {}
    return Report(uri=p.uri, versions_checked=sorted(p.versions_checked),
                  rules_checked=sorted(p.rules_checked), findings=ordered, elapsed_s=elapsed,
                  refs_checked={k: sorted(v) for k, v in sorted(p.refs_checked.items())},
                  stats=stats, not_judged=sorted(set(p.not_judged.values())))


def keep(p: Plan, item_findings: list[list[Violation]]) -> None:
    """Write the verdicts of this run into ``p``'s cache (when it has one and the run
    finished: a run stopped by its time limit keeps the cache it found)."""
    if p.cache is None or any(f.rule == "ENGINE-002" for f in p.findings):
        return
    if len(item_findings) != len(p.items) or any(
            f.rule == "ENGINE-002" for chunk in item_findings for f in chunk):
        return
    done = dict(enumerate(item_findings))
    for h in p.histories:
        h.keep(done)
    try:
        p.cache.save()
    except (LanceError, OSError) as exc:
        import sys

        print(f"lance-conformance: cannot write the cache: {exc}", file=sys.stderr)


def _validate(uri, versions, deep, rules, skip, storage_options, deadline, progress,
              refs=None, cache=None) -> Report:
    p = plan(uri, versions=versions, deep=deep, rules=rules, skip=skip,
             storage_options=storage_options, deadline=deadline, progress=progress, refs=refs,
             cache=cache)
    results = _run_items(p.items, deadline, progress, p.counts)
    if progress and p.items:
        progress("data files", len(p.items), len(p.items))
    report = merge(p, results)
    keep(p, results)
    return report


def _not_checked(left: int) -> list[Violation]:
    return [_engine_violation("ENGINE-002", f"time limit reached; {left} data files not checked",
                              {"ref": ALL_REFS})]


def _run_items(items: list[DataFileItem], deadline, progress,
               counts: Counts | None = None) -> list[list[Violation]]:
    """Run the data-file items in order, on a few threads when there are several.

    Items are independent (each opens its own file); their decoders spend their time in
    numpy, which releases the GIL. At most ``2 x threads`` items are in flight, so memory
    stays bounded; pages inside an item are then decoded on the item's own thread. The result
    is the same list, in item order, as the one-thread loop.
    """
    n = parallel.threads()
    if n < 2 or len(items) < 2:
        results = []
        for i, item in enumerate(items):
            if deadline is not None and time.monotonic() > deadline:
                results.append(_not_checked(len(items) - i))
                break
            if progress:
                progress("data files", i, len(items))
            results.append(run_data_file_item(item, counts))
        return results
    pool = ThreadPoolExecutor(max_workers=n, thread_name_prefix="lance-conformance-item",
                              initializer=parallel.mark_worker_thread)
    results = []
    pending = deque()
    nxt = 0
    try:
        while len(results) < len(items):
            while nxt < len(items) and len(pending) < 2 * n:
                pending.append(pool.submit(run_data_file_item, items[nxt], counts))
                nxt += 1
            if progress:
                progress("data files", len(results), len(items))
            fut = pending.popleft()
            wait = None if deadline is None else max(deadline - time.monotonic(), 0.0)
            try:
                results.append(fut.result(timeout=wait))
            except FutureTimeout:
                results.append(_not_checked(len(items) - len(results)))
                break
    finally:
        for fut in pending:
            fut.cancel()
        pool.shutdown(wait=False, cancel_futures=True)
    return results


def validate(uri: str, *, versions="latest", deep: bool = False, rules=None, skip=None,
             storage_options: dict | None = None, progress=None,
             timeout: float | None = None, refs=None, cache: str | None = None) -> Report:
    """Validate the dataset at ``uri`` and return a :class:`Report`.

    ``versions``: ``"latest"`` (the highest attached version), ``"all"`` (every manifest,
    detached ones included) or a list of version numbers. ``rules``/``skip``: rule ids to
    run / to leave out. ``timeout``: seconds for the whole dataset; when it runs out the
    report so far is returned with an ``ENGINE-002`` error. ``refs``: ``"all"`` (main, every
    branch with the same ``versions`` choice, every tag), ``"main"``, or one branch or tag
    name; None means ``"all"``, or ``"main"`` when ``versions`` lists numbers. Raises
    :class:`DatasetNotFound` for an unreachable store or an empty dataset path, and
    :class:`RefNotFound` for a ref the dataset does not have. ``cache``: a verdict cache
    path (file or folder, local or a store URI): versions and units it holds verdicts for
    are not checked again (:mod:`.cache`), and it is updated with this run's."""
    started = time.monotonic()
    if timeout is None:
        return _validate(uri, versions, deep, rules, skip, storage_options, None, progress,
                         refs, cache)
    deadline = started + float(timeout)
    box: dict = {}

    def work():
        try:
            box["report"] = _validate(uri, versions, deep, rules, skip, storage_options,
                                      deadline, progress, refs, cache)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller below
            box["error"] = exc

    worker = threading.Thread(target=work, name="lance-conformance-validate", daemon=True)
    worker.start()
    worker.join(max(float(timeout), 0) + 1.0)
    if "error" in box:
        raise box["error"]
    if "report" in box:
        return box["report"]
    return Report(uri=uri, findings=[_engine_violation(
        "ENGINE-002", f"validation did not finish within {timeout} s", {"ref": ALL_REFS})],
        elapsed_s=time.monotonic() - started)
