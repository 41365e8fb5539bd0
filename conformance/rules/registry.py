"""The rule catalog: every normative statement of the spec as one :class:`Rule`.

A rule has an id that never changes (``AREA-NNN``), a severity, the spec file and
section it enforces with the quoted clause, and exactly one check function. Check
functions are registered with the :func:`rule` decorator in the module of their
area (``conformance/rules/manifest.py`` holds ``MANIFEST-*``, and so on).

A check receives a context object (see ``context.py``; which one depends on
``scope``) and yields :class:`Finding` objects, one per violation. It yields
nothing when the rule holds. It never raises for bad data: a check that meets
bytes it cannot decode yields a finding instead (the engine also turns an
unexpected exception into an ``ENGINE-001`` finding so a report is always made).

Where the spec and pylance 14.0.2 disagree, ``pylance`` records what pylance does
and ``enforces`` says which side the rule follows.

Every **error** rule states its basis, one of two:

* ``spec``: the clause is a sentence of the spec texts (``000`` to ``004``) that the data
  breaks;
* ``refusal``: the clause comes from a facts sheet, and ``refusal`` says why every reader
  must refuse such bytes (it cannot decode, locate or resolve them), whatever release wrote
  them.

A rule whose only ground is what some release writes (a version number in a tail, a field a
later release always sets, an alignment) is a **warning**, and ``releases`` says which
releases write what. The cross-release corpus (:mod:`conformance.releases`) is where those
notes come from.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from enum import StrEnum

ID_PATTERN = re.compile(r"^[A-Z]+-\d{3}$")

AREAS = (
    "LAYOUT", "MANIFEST", "FLAGS", "SCHEMA", "FRAG", "DATAFILE", "DELETION", "ROWID",
    "TXN", "COMMIT", "BASEPATH", "REFS", "INDEX", "MEMWAL", "STATS", "FILE", "ENC", "BLOB", "NS",
    "ENGINE",
)

#: the spec texts proper; the other keys of :data:`SPEC_FILES` are facts sheets
SPEC_TEXTS = ("000", "001", "002", "003", "004")

SPEC_FILES = {
    "000": "000_3e075592ae1437fa.txt",  # storage layout
    "001": "001_9e3dafb7e0a07ec4.txt",  # table format
    "002": "002_2d6a3974b922c8e6.txt",  # directory namespace
    "003": "003_005c0fe32539c239.txt",  # file format v2
    "004": "004_0654a22beabd64cd.txt",  # table.proto
    "FACTS": "FACTS.md",
    "FILE-ENCODINGS": "FILE-ENCODINGS.md",
    "REFS-NAMESPACE-COMMIT": "REFS-NAMESPACE-COMMIT.md",
}

#: sha256 of each spec text the catalog quotes, as the kit was built against them. The texts
#: do not ship with the kit; a report names them by these digests (``conformance/kit.py``),
#: and ``test_rules_catalog`` checks the digests against the texts where they are present.
SPEC_SHA256 = {
    "000": "a1a0b0b711c0fa3899eb8bee904e49a8d273e2046b226d2284a6130774e80ea5",
    "001": "f780449fd3561d9394e37e693f26797b72732fa82657ec4c3611fa4e9adbba50",
    "002": "c1971516a66ce2f656fdff22d89f085311090f69f392d2b7bbdc000fe31dc9b1",
    "003": "c074cb630a6b3e5f8237feb794a61f48d7390a63b94b89e2c9cf2349f7a11648",
    "004": "e18229ebad1f186cd6b220b3622f576a2cf3a3a46f077666dbe364a5f989b15e",
}


#: the refusal of every rule that reports a decoder failure of a data file's pages
DECODE_REFUSAL = ("a page whose bytes break this cannot be decoded to the values it stands for: "
                  "a reader fails on it or returns other values")


class Severity(StrEnum):
    """``error``: a reader would read wrong data, or the spec says *must*.
    ``warning``: the spec says *should*, or a convention only pylance shows."""

    ERROR = "error"
    WARNING = "warning"


class Scope(StrEnum):
    """What a check looks at, and so which context it receives."""

    TABLE = "table"          # the whole dataset: every version, refs, branches
    VERSION = "version"      # one version's manifest and what it references
    FRAGMENT = "fragment"    # one fragment: its data files' metadata, deletion file, row ids
    DATA_FILE = "data_file"  # one data file (deep checks)
    NAMESPACE = "namespace"  # a directory namespace


@dataclass(frozen=True)
class Finding:
    """One violation found by a check: a message and where (file, offset, version...)."""

    message: str
    location: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Rule:
    id: str
    title: str
    severity: Severity
    scope: Scope
    spec: str           # key of SPEC_FILES
    section: str        # section title as the spec names it
    clause: str         # the quoted normative text
    check: Callable[..., Iterable[Finding]]
    deep: bool = False  # only run under --deep
    pylance: str | None = None   # observed pylance 14.0.2 behaviour, where it differs
    enforces: str | None = None  # "spec" or "pylance" when the two disagree
    releases: str | None = None  # which releases write what, where releases differ
    refusal: str | None = None   # why every reader must refuse (error rules off the spec texts)
    # a fragment-scope rule that also judges a part of the manifest outside the fragments:
    # the engine runs it once more per version with the fragments hidden
    manifest_part: bool = False

    @property
    def spec_file(self) -> str:
        return SPEC_FILES[self.spec]

    @property
    def basis(self) -> str | None:
        """Why an error is an error: ``"spec"`` (a quoted sentence of the spec texts) or
        ``"refusal"`` (bytes every reader must refuse); ``"engine"`` (no verdict could be reached); ``None`` for a warning."""
        if self.severity is not Severity.ERROR:
            return None
        if self.id.startswith("ENGINE-"):
            return "engine"  # the validator could not reach a verdict
        if self.spec in SPEC_TEXTS:
            return "spec"
        return "refusal" if self.refusal else None

    def as_dict(self) -> dict:
        out = {
            "id": self.id,
            "title": self.title,
            "severity": self.severity.value,
            "scope": self.scope.value,
            "deep": self.deep,
            "spec": {"file": self.spec_file, "section": self.section, "clause": self.clause},
        }
        if self.basis:
            out["basis"] = self.basis
        if self.refusal:
            out["refusal"] = self.refusal
        if self.releases:
            out["releases"] = self.releases
        if self.pylance:
            out["pylance"] = self.pylance
        if self.enforces:
            out["enforces"] = self.enforces
        if self.manifest_part:
            out["manifest_part"] = True
        return out


_RULES: dict[str, Rule] = {}


def rule(
    id: str,
    *,
    title: str,
    severity: Severity | str,
    spec: str,
    section: str,
    clause: str,
    scope: Scope | str = Scope.VERSION,
    deep: bool = False,
    pylance: str | None = None,
    enforces: str | None = None,
    releases: str | None = None,
    refusal: str | None = None,
    manifest_part: bool = False,
) -> Callable[[Callable[..., Iterable[Finding]]], Callable[..., Iterable[Finding]]]:
    """Register the decorated generator function as the check of rule ``id``."""
    if not ID_PATTERN.match(id) or id.split("-")[0] not in AREAS:
        raise ValueError(f"bad rule id {id!r}")
    if spec not in SPEC_FILES:
        raise ValueError(f"rule {id}: unknown spec {spec!r}")
    if (pylance is None) != (enforces is None) and enforces is not None:
        raise ValueError(f"rule {id}: 'enforces' needs a 'pylance' note")
    if manifest_part and Scope(scope) is not Scope.FRAGMENT:
        raise ValueError(f"rule {id}: manifest_part is for fragment-scope rules")
    if Severity(severity) is Severity.ERROR and spec not in SPEC_TEXTS and not refusal \
            and not id.startswith("ENGINE"):
        raise ValueError(f"rule {id}: an error rule quoting a facts sheet ({spec}) needs "
                         f"'refusal': why every reader must refuse such bytes")

    def register(fn: Callable[..., Iterable[Finding]]) -> Callable[..., Iterable[Finding]]:
        if id in _RULES:
            raise ValueError(f"rule {id} registered twice")
        _RULES[id] = Rule(
            id=id, title=title, severity=Severity(severity), scope=Scope(scope), spec=spec,
            section=section, clause=clause, check=fn, deep=deep, pylance=pylance,
            enforces=enforces, releases=releases, refusal=refusal,
            manifest_part=manifest_part,
        )
        return fn

    return register


AREA_MODULES: list[str] = [
    # one line per area module, e.g. "manifest", "deletion"; each owner adds its own line
    "layout", "manifest", "flags", "schema", "fragment", "datafile", "transaction", "commit",
    "basepath", "refs", "engine",
    "deletion", "rowid",
    "stats", "file_v2_0",
    "index", "mem_wal",
    "index_content",
    "index_text",
    "index_spatial",
    "index_vector",
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
        importlib.import_module(f"{__package__}.{name}")


def all_rules() -> list[Rule]:
    """Every registered rule, sorted by id (imports every area module first)."""
    load_all()
    return sorted(_RULES.values(), key=lambda r: (r.id.split("-")[0], r.id))


def get_rule(rule_id: str) -> Rule:
    load_all()
    return _RULES[rule_id]


def select(ids: Iterable[str] | None = None, *, deep: bool = True) -> Iterator[Rule]:
    """Rules to run: the given ids (or all), dropping deep ones unless ``deep``."""
    wanted = set(ids) if ids else None
    for r in all_rules():
        if wanted is not None and r.id not in wanted:
            continue
        if r.deep and not deep:
            continue
        yield r
