"""The local validation engine: run the rule catalog over one dataset in this process.

The work is split so that a distributed engine (Spark) can reuse it:

* :func:`plan` (the driver) opens the store, lists ``_versions/``, runs every selected
  table- and version-scope rule and returns a :class:`Plan` with those findings and one
  :class:`DataFileItem` per data file of each checked version (only with ``deep``);
* :func:`run_data_file_item` runs the data-file-scope rules on one item. Items hold only
  plain values (URI, options, version, fragment id, file index, rule ids), so they pickle;
* :func:`merge` joins the driver's findings and the items' findings into a :class:`Report`.

:func:`validate` does all three in this process, under an optional time limit.

Guarantees: a check that raises becomes an ``ENGINE-001`` finding naming the rule and the
exception; a dataset whose manifests cannot be read is reported through its rules; only an
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

from conformance.report import Report, Violation
from conformance.rules import registry
from conformance.rules.context import DataFileContext, TableContext, VersionContext
from reference_impl.errors import FormatError, LanceError, NotFound, StoreError
from reference_impl.file import parallel

from . import access


class DatasetNotFound(LanceError):
    """The store cannot be reached, or the dataset path holds nothing at all."""


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


@dataclass
class Plan:
    uri: str
    versions_checked: list[int]
    rules_checked: list[str]
    findings: list[Violation] = field(default_factory=list)
    items: list[DataFileItem] = field(default_factory=list)
    started: float = field(default_factory=time.monotonic)


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
    except Exception as exc:  # noqa: BLE001 - the engine never crashes on a check
        out.append(_engine_violation(
            "ENGINE-001", f"rule {rule.id} raised {type(exc).__name__}: {exc}",
            dict(location, rule=rule.id)))
    return out


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
                         deep=deep)
    try:
        table.version_entries = access.list_versions(store)
    except (StoreError, OSError) as exc:
        raise DatasetNotFound(f"cannot list {uri}/_versions: {exc}") from None
    except LanceError:
        table.version_entries = []
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
    return table


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


def plan(uri: str, *, versions="latest", deep: bool = False, rules=None, skip=None,
         storage_options: dict | None = None, deadline: float | None = None,
         progress: Callable[[str, int, int], None] | None = None) -> Plan:
    """The driver's part: table- and version-scope rules, plus the data-file work list."""
    chosen = _selected_rules(rules, skip, deep)
    table = open_table(uri, storage_options, deep=deep)
    selected = _pick_versions(table, versions)
    table.selected_versions = selected
    result = Plan(uri=uri, versions_checked=[], rules_checked=[r.id for r in chosen])
    by_scope: dict[str, list[registry.Rule]] = {}
    for r in chosen:
        by_scope.setdefault(r.scope.value, []).append(r)

    def out_of_time() -> bool:
        if deadline is not None and time.monotonic() > deadline:
            result.findings.append(_engine_violation(
                "ENGINE-002", "time limit reached; later checks did not run", {}))
            return True
        return False

    for r in by_scope.get("table", []):
        result.findings.extend(run_check(r, table, {}))
    missing = {v for v in selected if table.entry(v) is None}  # reported by COMMIT-005
    data_rules = tuple(r.id for r in by_scope.get("data_file", []))
    todo = [v for v in selected if v not in missing]
    for i, v in enumerate(todo):
        if out_of_time():
            break
        if progress:
            progress("versions", i, len(todo))
        mf = table.manifest_file(v)
        if mf is None:
            continue  # reported by the MANIFEST framing rules
        result.versions_checked.append(v)
        entry = table.entry(v)
        vctx = VersionContext(table=table, version=v, manifest_key=entry.key, mf=mf)
        for r in by_scope.get("version", []):
            result.findings.extend(run_check(r, vctx, {"version": v}))
        if deep and data_rules:
            opts = tuple(sorted((storage_options or {}).items()))
            for fi, frag in enumerate(mf.manifest.fragments):
                for di, _df in enumerate(frag.files):
                    result.items.append(DataFileItem(uri, opts, v, entry.key, fi, di,
                                                     data_rules))
    if progress:
        progress("versions", len(todo), len(todo))
    return result


_MANIFESTS: dict = {}
_MANIFESTS_LOCK = threading.Lock()
_MANIFESTS_KEPT = 4


def _item_manifest(item: DataFileItem, store):
    """The item's decoded manifest, decoded once per process for all items of a version.

    Manifests are written once and never changed (put-if-not-exists), so a manifest seen
    before under the same dataset, options, key and size is the same manifest; the size is
    checked on every use so that a file replaced in place (a test, a repair) is read again.
    """
    key = (item.uri, item.storage_options, item.manifest_key)
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


def run_data_file_item(item: DataFileItem) -> list[Violation]:
    """Run the data-file-scope rules of one item (a Spark task, or a local loop step)."""
    from reference_impl.io.uri import open_store

    loc = {"version": item.version}
    try:
        store = open_store(item.uri, dict(item.storage_options))
        table = TableContext(uri=item.uri, store=store, storage_options=dict(item.storage_options),
                             deep=True)
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
    except Exception as exc:  # noqa: BLE001
        return [_engine_violation("ENGINE-001",
                                  f"cannot prepare data-file checks: {type(exc).__name__}: {exc}",
                                  loc)]
    out = []
    for rule_id in item.rules:
        out.extend(run_check(registry.get_rule(rule_id), ctx, loc))
    return out


def merge(p: Plan, item_findings: Iterable[Iterable[Violation]], *, elapsed_s: float | None = None) -> Report:
    """Join the driver's findings and every item's findings into one report."""
    findings = list(p.findings)
    for chunk in item_findings:
        findings.extend(chunk)
    # identical findings (same rule, message and place) are reported once
    unique = {}
    for f in findings:
        unique.setdefault((f.rule, f.message, repr(sorted(f.location.items()))), f)
    ordered = sorted(unique.values(), key=Violation.sort_key)
    elapsed = time.monotonic() - p.started if elapsed_s is None else elapsed_s
    return Report(uri=p.uri, versions_checked=sorted(p.versions_checked),
                  rules_checked=sorted(p.rules_checked), findings=ordered, elapsed_s=elapsed)


def _validate(uri, versions, deep, rules, skip, storage_options, deadline, progress) -> Report:
    p = plan(uri, versions=versions, deep=deep, rules=rules, skip=skip,
             storage_options=storage_options, deadline=deadline, progress=progress)
    results = _run_items(p.items, deadline, progress)
    if progress and p.items:
        progress("data files", len(p.items), len(p.items))
    return merge(p, results)


def _not_checked(left: int) -> list[Violation]:
    return [_engine_violation("ENGINE-002", f"time limit reached; {left} data files not checked", {})]


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
             timeout: float | None = None) -> Report:
    """Validate the dataset at ``uri`` and return a :class:`Report`.

    ``versions``: ``"latest"`` (the highest attached version), ``"all"`` (every manifest,
    detached ones included) or a list of version numbers. ``rules``/``skip``: rule ids to
    run / to leave out. ``timeout``: seconds for the whole dataset; when it runs out the
    report so far is returned with an ``ENGINE-002`` error. Raises :class:`DatasetNotFound`
    for an unreachable store or an empty dataset path."""
    started = time.monotonic()
    if timeout is None:
        return _validate(uri, versions, deep, rules, skip, storage_options, None, progress)
    deadline = started + float(timeout)
    box: dict = {}

    def work():
        try:
            box["report"] = _validate(uri, versions, deep, rules, skip, storage_options,
                                      deadline, progress)
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
        "ENGINE-002", f"validation did not finish within {timeout} s", {})],
        elapsed_s=time.monotonic() - started)
