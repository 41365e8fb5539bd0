"""The rule catalog, one module per area. ``load_all`` imports every area module so that
their ``@rule`` decorators register; add a new area module to ``AREA_MODULES``."""

from __future__ import annotations

import importlib

from .registry import Finding, Rule, Scope, Severity, all_rules, get_rule, rule, select

AREA_MODULES: list[str] = [
    # one line per area module, e.g. "manifest", "deletion"; each owner adds its own line
    "layout", "manifest", "flags", "schema", "fragment", "datafile", "transaction", "commit",
    "basepath", "refs", "engine",
    "deletion", "rowid",
    "stats", "file_v2_0",
    "index", "mem_wal",
    "file", "encoding", "blob",
    "namespace",
    "datafile_fields",
]

_loaded = False


def load_all() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    for name in AREA_MODULES:
        importlib.import_module(f"{__name__}.{name}")


__all__ = ["Finding", "Rule", "Scope", "Severity", "all_rules", "get_rule", "load_all", "rule", "select"]
