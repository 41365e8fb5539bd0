"""The validation report: what was checked, what broke, and four ways to print it.

A report is one JSON object (its schema is ``conformance/schemas/report.schema.json``)::

    {"uri": str, "versions_checked": [int], "refs_checked": {ref: [int]}, "conforms": bool,
     "rules_checked": [str], "violations": [Violation], "warnings": [Violation],
     "elapsed_s": float, "provenance": Provenance, "stats": {...}}

    Violation = {"rule": "AREA-NNN", "severity": "error"|"warning",
                 "spec": {"file", "section", "clause"}, "message": str, "location": {...},
                 "versions": [[first, last], ...]}

``versions_checked`` are the versions of the root validated (main, or the branch whose
``tree/NAME`` the URI names); ``refs_checked`` maps every ref whose versions were checked
(``main``, ``branch:NAME``, ``tag:NAME``) to its versions. A finding's ``location["ref"]``
names the ref it belongs to; every format shows it.

A finding that holds in several versions of a ref (the same rule, message and place, the
version apart) is one finding: ``location["version"]`` is the first of them and
``versions`` lists them all as inclusive ``[first, last]`` ranges (present only when the
finding holds in more than one version); text shows ``v1-2000``. ``Violation.covers()``
gives every version a finding names. ``stats`` counts what the run read and checked
(``conformance/engine/history.py`` names the counters). ``not_judged`` (present when not
empty; text shows one ``not judged:`` line each) names what the run met and did not judge, such
as an index whose kind or layout the kit does not read: no finding, but said.
``violations`` hold error-severity findings, ``warnings`` the rest; ``conforms`` is true
exactly when there is no error-severity finding. Findings are sorted by rule id, then by ref
(main first), version, path and message, so two runs over the same bytes print the same
report.

Formats: ``text`` (grouped by rule, for people), ``json``, ``junit`` (one testcase per
rule checked, one ``<failure>`` per violation) and ``github`` (``::error file=…::``
workflow annotations).

``provenance`` (every format shows it: JUnit as ``<properties>``, GitHub as a notice) says
what the dataset was judged against: the kit's version, the digests of its case set and of
the spec texts, and the implementation that wrote the dataset
(:func:`conformance.kit.provenance`); the command line sets it, a report made without it
names no implementation.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from xml.sax.saxutils import escape, quoteattr

FORMATS = ("text", "json", "junit", "github")


@dataclass(frozen=True)
class Violation:
    """One finding of one rule, with the rule's severity and spec reference."""

    rule: str
    severity: str
    spec: dict
    message: str
    location: dict = field(default_factory=dict)
    # the versions it holds in, as inclusive (first, last) ranges; () when only
    # ``location["version"]`` (or none)
    versions: tuple = ()

    def covers(self) -> list[int]:
        """Every version this finding names (empty for a finding on no version)."""
        from .ranges import expand

        if self.versions:
            return list(expand(self.versions))
        return [int(self.location["version"])] if "version" in self.location else []

    def sort_key(self) -> tuple:
        loc = self.location
        version = loc.get("version")
        ref = str(loc.get("ref", ""))
        return (self.rule, ref != "main", ref, -1 if version is None else int(version),
                str(loc.get("path", "")), self.message,
                json.dumps(loc, sort_keys=True, default=str))

    def as_dict(self) -> dict:
        out = {"rule": self.rule, "severity": self.severity, "spec": dict(self.spec),
               "message": self.message, "location": dict(self.location)}
        if self.versions and self.versions != ((self.location.get("version"),) * 2,):
            out["versions"] = [[int(a), int(b)] for a, b in self.versions]
        return out


@dataclass
class Report:
    """The outcome of validating one dataset."""

    uri: str
    versions_checked: list[int] = field(default_factory=list)
    rules_checked: list[str] = field(default_factory=list)
    findings: list[Violation] = field(default_factory=list)
    elapsed_s: float = 0.0
    refs_checked: dict[str, list[int]] = field(default_factory=dict)
    provenance: dict = field(default_factory=dict)  # conformance.kit.provenance()
    # what the run read and checked (counters, see conformance/engine/history.py)
    stats: dict = field(default_factory=dict)
    # what the run met and could not judge (an index kind or layout the kit does not read):
    # no finding, but said, so that a verdict is not taken for more than it covers
    not_judged: list[str] = field(default_factory=list)

    @property
    def violations(self) -> list[Violation]:
        return sorted((f for f in self.findings if f.severity == "error"),
                      key=Violation.sort_key)

    @property
    def warnings(self) -> list[Violation]:
        return sorted((f for f in self.findings if f.severity != "error"),
                      key=Violation.sort_key)

    @property
    def conforms(self) -> bool:
        return not any(f.severity == "error" for f in self.findings)

    def rules_violated(self, severity: str | None = "error") -> set[str]:
        return {f.rule for f in self.findings if severity is None or f.severity == severity}

    def as_dict(self) -> dict:
        return {
            "uri": self.uri,
            "versions_checked": sorted(int(v) for v in self.versions_checked),
            "refs_checked": {str(k): sorted(int(v) for v in vs)
                             for k, vs in sorted(self.refs_checked.items())},
            "conforms": self.conforms,
            "rules_checked": sorted(self.rules_checked),
            "violations": [v.as_dict() for v in self.violations],
            "warnings": [v.as_dict() for v in self.warnings],
            "elapsed_s": round(float(self.elapsed_s), 6),
            "provenance": self.provenance or _kit().provenance(),
            **({"stats": dict(self.stats)} if self.stats else {}),
            **({"not_judged": sorted(self.not_judged)} if self.not_judged else {}),
        }

    # -- formats ---------------------------------------------------------------------------
    def render(self, fmt: str = "text") -> str:
        if fmt == "text":
            return to_text(self)
        if fmt == "json":
            return json.dumps(self.as_dict(), indent=2, default=str)
        if fmt == "junit":
            return to_junit(self)
        if fmt == "github":
            return to_github(self)
        raise ValueError(f"unknown report format {fmt!r}; one of {', '.join(FORMATS)}")


def _kit():
    from conformance import kit

    return kit


def _where(loc: dict, versions: tuple = ()) -> str:
    from .ranges import text

    parts = []
    if loc.get("ref"):
        parts.append(f"[{loc['ref']}]")
    if versions:
        parts.append(text(versions))
    elif "version" in loc:
        parts.append(f"v{loc['version']}")
    if "path" in loc:
        parts.append(str(loc["path"]))
    if loc.get("offset") is not None:
        parts.append(f"@{loc['offset']}")
    for k in sorted(loc):
        if k not in ("ref", "version", "path", "offset"):
            parts.append(f"{k}={loc[k]}")
    return " ".join(parts)


def to_text(report: Report) -> str:
    """Readable text: a verdict line, then each broken rule with its findings."""
    d = report.as_dict()
    verdict = "CONFORMS" if d["conforms"] else "DOES NOT CONFORM"
    from .ranges import text as ranges_text
    from .ranges import to_ranges

    lines = [
        f"{report.uri}: {verdict}",
        f"  versions checked: {ranges_text(to_ranges(d['versions_checked']), '') or 'none'}; "
        f"rules checked: {len(d['rules_checked'])}; errors: {len(d['violations'])}; "
        f"warnings: {len(d['warnings'])}; {d['elapsed_s']:.3f} s",
        f"  judged against {_kit().summary(d['provenance'])}",
    ]
    for note in d.get("not_judged", []):
        lines.append(f"  not judged: {note}")
    other = {k: v for k, v in d["refs_checked"].items() if k != "main"}
    if other:
        lines.append("  refs checked: " + "; ".join(
            f"{k} ({ranges_text(to_ranges(v), '') or 'no version'})" for k, v in other.items()))
    for title, items in (("errors", report.violations), ("warnings", report.warnings)):
        if not items:
            continue
        lines.append("")
        lines.append(f"{title}:")
        current = None
        for v in items:
            if v.rule != current:
                current = v.rule
                spec = v.spec
                lines.append(f"  {v.rule} [{v.severity}] {spec.get('file', '')} "
                             f"§ {spec.get('section', '')}")
            where = _where(v.location, v.versions)
            lines.append(f"    - {v.message}" + (f"  ({where})" if where else ""))
    return "\n".join(lines) + "\n"


def to_junit(report: Report) -> str:
    """JUnit XML: one testcase per rule checked, one failure per violation of it."""
    by_rule: dict[str, list[Violation]] = {}
    for v in report.violations:
        by_rule.setdefault(v.rule, []).append(v)
    failures = sum(1 for r in report.rules_checked if r in by_rule)
    out = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        f"<testsuites><testsuite name={quoteattr('lance-conformance ' + report.uri)} "
        f'tests="{len(report.rules_checked)}" failures="{failures}" errors="0" '
        f'time="{report.elapsed_s:.3f}">',
        _kit().junit_properties(report.as_dict()["provenance"]),
    ]
    for rule_id in sorted(set(report.rules_checked) | set(by_rule)):
        found = by_rule.get(rule_id, [])
        if not found:
            out.append(f'<testcase classname="lance-conformance" name="{escape(rule_id)}"/>')
            continue
        out.append(f'<testcase classname="lance-conformance" name="{escape(rule_id)}">')
        for v in found:
            body = f"{v.message}\n{_where(v.location, v.versions)}\n{v.spec.get('clause', '')}"
            out.append(f"<failure message={quoteattr(v.message)} type={quoteattr(v.rule)}>"
                       f"{escape(body)}</failure>")
        out.append("</testcase>")
    out.append("</testsuite></testsuites>")
    return "\n".join(out) + "\n"


def _gh_escape(text: str, prop: bool = False) -> str:
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    if prop:
        text = text.replace(":", "%3A").replace(",", "%2C")
    return text


def to_github(report: Report) -> str:
    """GitHub Actions workflow commands: ``::error file=…,title=RULE::message``."""
    lines = []
    for v in report.violations + report.warnings:
        level = "error" if v.severity == "error" else "warning"
        path = v.location.get("path") or report.uri
        ref = v.location.get("ref")
        title = f"{v.rule} ({ref})" if ref else v.rule
        props = f"file={_gh_escape(str(path), True)},title={_gh_escape(title, True)}"
        head = f"{v.rule} [{ref}]" if ref else v.rule
        lines.append(f"::{level} {props}::{_gh_escape(head + ': ' + v.message)}")
    verdict = "conforms" if report.conforms else "does not conform"
    lines.append(f"::notice title=lance-conformance::{_gh_escape(report.uri + ' ' + verdict)}")
    judged = _kit().summary(report.as_dict()["provenance"])
    lines.append(f"::notice title=lance-conformance judged against::{_gh_escape(judged)}")
    return "\n".join(lines) + "\n"


def schema() -> dict:
    """The JSON Schema of ``Report.as_dict()``."""
    from importlib import resources

    text = resources.files("conformance").joinpath("schemas/report.schema.json").read_text()
    return json.loads(text)
