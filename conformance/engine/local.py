"""The local validation engine: run the rule catalog over one dataset in this process.

The work is split so that a distributed engine (Spark) can reuse it:

* :func:`plan` (the driver) opens the store, lists ``_versions/``, runs every selected
  table- and version-scope rule and returns a :class:`Plan` with those findings and one
  :class:`DataFileItem` per data file of each checked version (only with ``deep``);
* :func:`run_data_file_item` runs the data-file-scope rules on one item. Items hold only
  plain values (URI, options, version, fragment id, file index, rule ids), so they pickle;
* :func:`merge` joins the driver's findings and the items' findings into a :class:`Report`.

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
from collections import deque
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field

from conformance.engine.report import Report, Violation
from conformance.rules import registry
from conformance.rules.context import DataFileContext, TableContext, VersionContext
from reference_impl.errors import FormatError, LanceError, NotFound, StoreError
from reference_impl.file import parallel

from . import access


class DatasetNotFound(LanceError):
    """The store cannot be reached, or the dataset path holds nothing at all."""


class RefNotFound(DatasetNotFound):
    """``refs`` names no branch or tag of the dataset (a usage error, exit 2)."""


ALL_REFS = "all"
MAIN = "main"


@dataclass(frozen=True)
class DataFileItem:
    """One data file to deep-check: plain, picklable values only."""

    uri: str
    storage_options: tuple[tuple[str, str], ...]
    version: int
    manifest_key: str
    fragment_index: int
    file_index: int
    rules: tuple[str, ...]
    # The branch whose root (``tree/{branch}/`` below ``uri``) ``manifest_key`` is relative
    # to, None for main; ``ref`` is the label its findings carry.
    branch: str | None = None
    ref: str = MAIN


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


@dataclass(frozen=True)
class RefTarget:
    """One ref whose versions the plan checks: its label, the branch whose root holds the
    versions (None: main) and which versions (``"latest"``, ``"all"`` or a list)."""

    label: str
    branch: str | None
    versions: object


# -- running checks ------------------------------------------------------------------------

def _violation(rule: registry.Rule, finding, extra_location: dict) -> Violation:
    location = dict(extra_location)
    location.update(getattr(finding, "location", {}) or {})
    return Violation(rule=rule.id, severity=rule.severity.value,
                     spec={"file": rule.spec_file, "section": rule.section,
                           "clause": rule.clause},
                     message=str(getattr(finding, "message", finding)), location=location)


def _engine_violation(rule_id: str, message: str, location: dict) -> Violation:
    r = registry.get_rule(rule_id)
    return _violation(r, registry.Finding(message, dict(location)), {})


def run_check(rule: registry.Rule, ctx, location: dict) -> list[Violation]:
    """Run one check on one context; an exception becomes an ENGINE-001 finding."""
    out = []
    try:
        for finding in rule.check(ctx) or ():
            out.append(_violation(rule, finding, location))
    except FormatError as exc:
        # A reader refused bytes the rule needed: report it against the rule it names
        # when that is this rule, else as the rule's own finding with the reader's reason.
        loc = dict(location)
        if exc.path:
            loc.setdefault("path", exc.path)
        if exc.offset is not None:
            loc["offset"] = exc.offset
        out.append(_violation(rule, registry.Finding(f"{exc}", loc), {}))
    except MemoryError as exc:
        out.append(out_of_memory(exc, location))
    except Exception as exc:  # noqa: BLE001 - the engine never crashes on a check
        out.append(_engine_violation(
            "ENGINE-001", f"rule {rule.id} raised {type(exc).__name__}: {exc}",
            dict(location, rule=rule.id)))
    return out


def out_of_memory(exc: MemoryError, location: dict) -> Violation:
    """ENGINE-003: a check ran out of memory. Not a finding about the bytes: the rules that
    needed what was being read reached no verdict. The message names no rule, so every rule
    that failed on the same file's decode gives the same finding (reported once)."""
    detail = str(exc) or "no detail"
    return _engine_violation(
        "ENGINE-003", f"not checked: the validator ran out of memory reading this "
                      f"({type(exc).__name__}: {detail[:200]}); the rules that needed it "
                      "reached no verdict", dict(location))


def _selected_rules(rules: Iterable[str] | None, skip: Iterable[str] | None, deep: bool):
    skipped = set(skip or ())
    chosen = [r for r in registry.select(rules, deep=deep) if r.id not in skipped]
    return chosen


def open_table(uri: str, storage_options: dict | None = None, *, deep: bool = False) -> TableContext:
    """Open the store and list versions; raises DatasetNotFound when there is nothing."""
    from reference_impl.io.uri import open_store

    try:
        store = open_store(uri, storage_options)
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
    try:
        ctx.version_entries = access.list_versions(store)
    except LanceError:
        ctx.version_entries = []
    except OSError:
        ctx.version_entries = []
    _attach_loader(ctx)
    return ctx


def _attach_loader(table: TableContext) -> None:
    """Give ``table`` its cached manifest loader (load errors recorded for MANIFEST-00x)."""
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
    mf = table.manifest_file(max(attached)) if attached else None
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


def plan(uri: str, *, versions="latest", deep: bool = False, rules=None, skip=None,
         storage_options: dict | None = None, deadline: float | None = None,
         progress: Callable[[str, int, int], None] | None = None, refs=None) -> Plan:
    """The driver's part: table- and version-scope rules of every ref checked, plus the
    data-file work list. ``refs``: see :func:`_targets`."""
    chosen = _selected_rules(rules, skip, deep)
    table = open_table(uri, storage_options, deep=deep)
    targets, labels = _targets(table, refs, versions)
    result = Plan(uri=uri, versions_checked=[], rules_checked=[r.id for r in chosen])
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
                open_table(uri, storage_options, deep=deep)
            if target.label.startswith("branch:") and not ctx.version_entries:
                continue  # REFS-004: the branch file has no tree
        stopped = not _check_target(result, found, ctx, target, by_scope, deep,
                                    storage_options, out_of_time, progress,
                                    is_root=target.label == root)
    result.findings.extend(f for f in found if f.location.get("ref", root) in labels)
    result.versions_checked = list(result.refs_checked.get(root, []))
    return result


def _check_target(result: Plan, found: list, ctx: TableContext, target: RefTarget, by_scope,
                  deep: bool, storage_options, out_of_time, progress, *,
                  is_root: bool = False) -> bool:
    """Run the table- and version-scope rules of one ref and list its data-file items;
    False when the time limit stopped it."""
    label = target.label
    selected = _pick_versions(ctx, target.versions)
    ctx.selected_versions = selected
    ctx.ref = label
    where = {"ref": label}
    checked = result.refs_checked.setdefault(label, [])
    for r in by_scope.get("table", []):
        if r.id.startswith("REFS-") and not is_root and ctx.branch is None:
            continue  # a tag of main: the tag's rules ran in main's context
        found.extend(run_check(r, ctx, where))
    missing = {v for v in selected if ctx.entry(v) is None}  # reported by COMMIT-005
    data_rules = tuple(r.id for r in by_scope.get("data_file", []))
    todo = [v for v in selected if v not in missing]
    opts = tuple(sorted((storage_options or {}).items()))
    for i, v in enumerate(todo):
        if out_of_time(label):
            return False
        if progress:
            progress("versions", i, len(todo))
        mf = ctx.manifest_file(v)
        if mf is None:
            continue  # reported by the MANIFEST framing rules
        checked.append(v)
        entry = ctx.entry(v)
        vctx = VersionContext(table=ctx, version=v, manifest_key=entry.key, mf=mf)
        for r in by_scope.get("version", []):
            found.extend(run_check(r, vctx, dict(where, version=v)))
        if deep and data_rules:
            for fi, frag in enumerate(mf.manifest.fragments):
                for di, _df in enumerate(frag.files):
                    result.items.append(DataFileItem(result.uri, opts, v, entry.key, fi, di,
                                                     data_rules, ctx.branch, label))
    if progress:
        progress("versions", len(todo), len(todo))
    return True


_MANIFESTS: dict = {}
_MANIFESTS_LOCK = threading.Lock()
_MANIFESTS_KEPT = 4


def _item_manifest(item: DataFileItem, store):
    """The item's decoded manifest, decoded once per process for all items of a version.

    Manifests are written once and never changed (put-if-not-exists), so a manifest seen
    before under the same dataset, options, key and size is the same manifest; the size is
    checked on every use so that a file replaced in place (a test, a repair) is read again.
    """
    key = (item.uri, item.storage_options, item.branch, item.manifest_key)
    size = store.size(item.manifest_key)
    with _MANIFESTS_LOCK:
        hit = _MANIFESTS.get(key)
    if hit is not None and hit[0] == size:
        return hit[1]
    mf = access.read_manifest_file(store, item.manifest_key)
    with _MANIFESTS_LOCK:
        while len(_MANIFESTS) >= _MANIFESTS_KEPT:
            _MANIFESTS.pop(next(iter(_MANIFESTS)))
        _MANIFESTS[key] = (size, mf)
    return mf


_ROOTS: dict = {}
_ROOTS_KEPT = 4


def _item_root(item: DataFileItem) -> tuple:
    """``(root store, base-path store cache)`` of the item's dataset, made once per process
    and dataset: every item of a run shares one client (an S3 client is costly to make and
    safe to share between threads) and the stores of the base paths its manifests name."""
    from reference_impl.io.uri import open_store

    key = (item.uri, item.storage_options)
    with _MANIFESTS_LOCK:
        hit = _ROOTS.get(key)
    if hit is not None:
        return hit
    root = open_store(item.uri, dict(item.storage_options))
    made = (root, {item.uri.rstrip("/"): root, str(root.uri).rstrip("/"): root})
    with _MANIFESTS_LOCK:
        while len(_ROOTS) >= _ROOTS_KEPT:
            _ROOTS.pop(next(iter(_ROOTS)))
        return _ROOTS.setdefault(key, made)


def item_store(item: DataFileItem):
    """The store ``item.manifest_key`` is relative to: the dataset root, or its branch's
    ``tree/{branch}/`` directory."""
    from reference_impl.table import layout

    store = _item_root(item)[0]
    prefix = layout.branch_prefix(item.branch)
    return store.child(prefix) if prefix else store


def run_data_file_item(item: DataFileItem) -> list[Violation]:
    """Run the data-file-scope rules of one item (a Spark task, or a local loop step)."""
    loc = {"ref": item.ref, "version": item.version}
    try:
        store = item_store(item)
        table = TableContext(uri=item.uri, store=store, storage_options=dict(item.storage_options),
                             deep=True, ref=item.ref, branch=item.branch,
                             cache={"base-stores": _item_root(item)[1]})
        mf = _item_manifest(item, store)
        fragment = mf.manifest.fragments[item.fragment_index]
        data_file = fragment.files[item.file_index]
        loc.update(fragment=int(fragment.id), path=data_file.path)
        vctx = VersionContext(table=table, version=item.version, manifest_key=item.manifest_key,
                              mf=mf)
        base_id = data_file.base_id if data_file.HasField("base_id") else None
        file_store, file_key = vctx.location("data", data_file.path, base_id)
        loc["path"] = file_key
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
    """The findings in report order, identical ones (same rule, message and place) once."""
    unique = {}
    for f in findings:
        unique.setdefault((f.rule, f.message, repr(sorted(f.location.items()))), f)
    return sorted(unique.values(), key=Violation.sort_key)


def merge(p: Plan, item_findings: Iterable[Iterable[Violation]], *, elapsed_s: float | None = None) -> Report:
    """Join the driver's findings and every item's findings into one report."""
    findings = list(p.findings)
    for chunk in item_findings:
        findings.extend(chunk)
    ordered = unique_findings(findings)
    elapsed = time.monotonic() - p.started if elapsed_s is None else elapsed_s
    return Report(uri=p.uri, versions_checked=sorted(p.versions_checked),
                  rules_checked=sorted(p.rules_checked), findings=ordered, elapsed_s=elapsed,
                  refs_checked={k: sorted(v) for k, v in sorted(p.refs_checked.items())})


def _validate(uri, versions, deep, rules, skip, storage_options, deadline, progress,
              refs=None) -> Report:
    p = plan(uri, versions=versions, deep=deep, rules=rules, skip=skip,
             storage_options=storage_options, deadline=deadline, progress=progress, refs=refs)
    results = _run_items(p.items, deadline, progress)
    if progress and p.items:
        progress("data files", len(p.items), len(p.items))
    return merge(p, results)


def _not_checked(left: int) -> list[Violation]:
    return [_engine_violation("ENGINE-002", f"time limit reached; {left} data files not checked",
                              {"ref": ALL_REFS})]


def _run_items(items: list[DataFileItem], deadline, progress) -> list[list[Violation]]:
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
            results.append(run_data_file_item(item))
        return results
    pool = ThreadPoolExecutor(max_workers=n, thread_name_prefix="lance-conformance-item",
                              initializer=parallel.mark_worker_thread)
    results = []
    pending = deque()
    nxt = 0
    try:
        while len(results) < len(items):
            while nxt < len(items) and len(pending) < 2 * n:
                pending.append(pool.submit(run_data_file_item, items[nxt]))
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
             timeout: float | None = None, refs=None) -> Report:
    """Validate the dataset at ``uri`` and return a :class:`Report`.

    ``versions``: ``"latest"`` (the highest attached version), ``"all"`` (every manifest,
    detached ones included) or a list of version numbers. ``rules``/``skip``: rule ids to
    run / to leave out. ``timeout``: seconds for the whole dataset; when it runs out the
    report so far is returned with an ``ENGINE-002`` error. ``refs``: ``"all"`` (main, every
    branch with the same ``versions`` choice, every tag), ``"main"``, or one branch or tag
    name; None means ``"all"``, or ``"main"`` when ``versions`` lists numbers. Raises
    :class:`DatasetNotFound` for an unreachable store or an empty dataset path, and
    :class:`RefNotFound` for a ref the dataset does not have."""
    started = time.monotonic()
    if timeout is None:
        return _validate(uri, versions, deep, rules, skip, storage_options, None, progress,
                         refs)
    deadline = started + float(timeout)
    box: dict = {}

    def work():
        try:
            box["report"] = _validate(uri, versions, deep, rules, skip, storage_options,
                                      deadline, progress, refs)
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
