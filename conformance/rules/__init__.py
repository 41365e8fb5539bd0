"""The rule catalog, one module per area. ``load_all`` (:mod:`.registry`) imports every area
module by name so that their ``@rule`` decorators register; add a new area module to
``registry.AREA_MODULES``."""

from __future__ import annotations

from .registry import (
    AREA_MODULES,
    Finding,
    Rule,
    Scope,
    Severity,
    all_rules,
    get_rule,
    load_all,
    rule,
    select,
)

__all__ = ["AREA_MODULES", "Finding", "Rule", "Scope", "Severity", "all_rules", "get_rule", "load_all", "rule", "select"]
