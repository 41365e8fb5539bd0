"""Validating a directory namespace (spec 002): ``validate --namespace ROOT``.

:func:`validate_namespace` runs

1. every selected ``Scope.NAMESPACE`` rule (``NS-*``, :mod:`conformance.rules.namespace`)
   on the root;
2. the table engine (:func:`conformance.engine.local.validate`) on ``__manifest`` itself,
   on every table row whose location is a Lance table, and on every root ``<name>.lance``
   directory found by listing (the compatibility mode's V1 tables);

and merges everything into one :class:`~conformance.engine.report.Report`. Findings from a table
carry ``location["table"]`` (the object id, or ``__manifest``). Declared tables (no
version yet) are not validated as tables. A root that holds nothing raises
:class:`~conformance.engine.local.DatasetNotFound` (the CLI's exit 2).
"""

from __future__ import annotations

import time

from conformance.engine.report import Report, Violation
from conformance.rules import namespace as ns_rules
from conformance.rules import registry
from conformance.rules.context import NamespaceContext

from .local import DatasetNotFound, _engine_violation, _selected_rules, run_check
from .local import validate as validate_table


def _table_targets(ctx: NamespaceContext) -> list[tuple[str, str]]:
    """``(label, location)`` of every Lance table to validate, ``__manifest`` first."""
    from reference_impl.namespace import ids

    out: list[tuple[str, str]] = []
    m = ns_rules.manifest(ctx)
    if m["exists"]:
        out.append((ns_rules.MANIFEST, ns_rules.MANIFEST))
    seen = set()
    for row in ns_rules._rows(ctx):
        loc = row.get("location")
        if row.get("object_type") != "table" or not isinstance(loc, str):
            continue
        if ns_rules._location_problem(loc) is not None:
            continue
        loc = loc.rstrip("/")
        if loc in seen:
            continue
        seen.add(loc)
        out.append((str(row.get("object_id")), loc))
    if ctx.config.get("dir_listing_enabled", "true") == "true":
        from reference_impl.namespace import v1

        for name in v1.list_tables(ctx.store):
            loc = ids.v1_directory(name)
            if loc not in seen:
                seen.add(loc)
                out.append((name, loc))
    return out


def _has_versions(store, location: str) -> bool:
    return any(True for _ in store.list(f"{location}/_versions/"))


def validate_namespace(root: str, storage_options: dict | None = None, deep: bool = False,
                       *, rules=None, skip=None, dir_listing_enabled: bool = True) -> Report:
    """Validate the namespace at ``root`` and every table in it; see the module docstring."""
    from reference_impl.errors import LanceError
    from reference_impl.io.uri import open_store

    started = time.monotonic()
    try:
        store = open_store(root, storage_options)
        from reference_impl.namespace.v1 import _list_all

        empty = not any(True for _ in _list_all(store))
    except LanceError as exc:
        raise DatasetNotFound(f"cannot open namespace root {root}: {exc}") from None
    if empty:
        raise DatasetNotFound(f"namespace root {root} holds nothing")
    chosen = _selected_rules(rules, skip, deep)
    ctx = NamespaceContext(uri=root, store=store,
                           config={"dir_listing_enabled": "true" if dir_listing_enabled else "false"})
    findings: list[Violation] = []
    checked = set()
    for r in chosen:
        if r.scope == registry.Scope.NAMESPACE:
            checked.add(r.id)
            findings.extend(run_check(r, ctx, {}))
    for label, location in _table_targets(ctx):
        if not _has_versions(store, location):
            continue  # a declared table, or a location NS-005 reports
        uri = f"{root.rstrip('/')}/{location}"
        try:
            report = validate_table(uri, deep=deep, rules=rules, skip=skip,
                                    storage_options=storage_options)
        except DatasetNotFound as exc:
            findings.append(_engine_violation("ENGINE-001", f"table {label!r}: {exc}",
                                              {"table": label}))
            continue
        checked.update(report.rules_checked)
        for f in report.findings:
            findings.append(Violation(f.rule, f.severity, f.spec, f.message,
                                      dict(f.location, table=label)))
    return Report(uri=root, versions_checked=[], rules_checked=sorted(checked),
                  findings=sorted(findings, key=Violation.sort_key),
                  elapsed_s=time.monotonic() - started)
