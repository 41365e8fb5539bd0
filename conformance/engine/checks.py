"""Running one check on one context: its findings as report :class:`Violation` objects.

A check that raises becomes an ``ENGINE-001`` finding naming the rule and the exception; a
``FormatError`` a reader raised for bytes the rule needed is the rule's own finding with the
reader's reason (and offset). The local, Spark, file and namespace engines all run checks
through :func:`run_check`.
"""

from __future__ import annotations

from conformance.engine.report import Violation
from conformance.rules import registry
from reference_impl.errors import FormatError


def violation(rule: registry.Rule, finding, extra_location: dict) -> Violation:
    """The report entry of one finding of ``rule``; the finding's location wins."""
    location = dict(extra_location)
    location.update(getattr(finding, "location", {}) or {})
    return Violation(rule=rule.id, severity=rule.severity.value,
                     spec={"file": rule.spec_file, "section": rule.section,
                           "clause": rule.clause},
                     message=str(getattr(finding, "message", finding)), location=location)


def engine_violation(rule_id: str, message: str, location: dict) -> Violation:
    """A finding the engine itself makes (ENGINE-001, ENGINE-002)."""
    r = registry.get_rule(rule_id)
    return violation(r, registry.Finding(message, dict(location)), {})


def run_check(rule: registry.Rule, ctx, location: dict) -> list[Violation]:
    """Run one check on one context; an exception becomes an ENGINE-001 finding."""
    out = []
    try:
        for finding in rule.check(ctx) or ():
            out.append(violation(rule, finding, location))
    except FormatError as exc:
        # A reader refused bytes the rule needed: report it against the rule it names
        # when that is this rule, else as the rule's own finding with the reader's reason.
        loc = dict(location)
        if exc.path:
            loc.setdefault("path", exc.path)
        if exc.offset is not None:
            loc["offset"] = exc.offset
        out.append(violation(rule, registry.Finding(f"{exc}", loc), {}))
    except MemoryError as exc:
        out.append(out_of_memory(exc, location))
    except Exception as exc:  # noqa: BLE001 - the engine never crashes on a check
        out.append(engine_violation(
            "ENGINE-001", f"rule {rule.id} raised {type(exc).__name__}: {exc}",
            dict(location, rule=rule.id)))
    return out


def out_of_memory(exc: MemoryError, location: dict) -> Violation:
    """ENGINE-003: a check ran out of memory. Not a finding about the bytes: the rules that
    needed what was being read reached no verdict. The message names no rule, so every rule
    that failed on the same file's decode gives the same finding (reported once)."""
    detail = str(exc) or "no detail"
    return engine_violation(
        "ENGINE-003", f"not checked: the validator ran out of memory reading this "
                      f"({type(exc).__name__}: {detail[:200]}); the rules that needed it "
                      "reached no verdict", dict(location))


__all__ = ["engine_violation", "out_of_memory", "run_check", "violation"]
