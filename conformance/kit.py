"""The kit itself: its version, where its fixtures are, and what a result was judged against.

**Fixtures.** The golden and invalid fixtures have one source, the checkout's ``fixtures/``
(in git). A wheel carries a copy of it as ``conformance/_fixtures/``, made at build time
(``setup.py``), so an installed kit runs its cases from any folder, offline. Every command
and the pytest plugin find them through :func:`fixtures_root`: the checkout's ``fixtures/``
when this package lies in a checkout, else the wheel's copy. Where neither is,
:func:`golden_dir` and :func:`invalid_dir` still name the place looked at first, so a
command can say what is missing.

**Provenance.** Every report says what it was judged against (:func:`provenance`):

* ``kit`` -- ``lance-conformance`` and its version (the package metadata);
* ``cases`` -- a sha256 of the case set: every file of the golden and invalid fixtures as
  the kit sees them (relative path and content) and the writer scenarios, with the counts;
* ``spec`` -- a sha256 of the spec texts the rule catalog quotes (the kit does not ship the
  texts: their digests are pinned in ``rules/registry.py`` and checked by a test);
* ``implementation`` -- the name and version of what was judged (an adapter, or the writer
  a dataset's latest manifest names).
"""

from __future__ import annotations

import functools
import hashlib
import json
from pathlib import Path

from . import __version__

DIST = "lance-conformance"
_PACKAGE = Path(__file__).resolve().parent
#: the checkout this package lies in (a folder with ``pyproject.toml``), if any
CHECKOUT = _PACKAGE.parent if (_PACKAGE.parent / "pyproject.toml").is_file() else None
#: where a wheel keeps its copy of the checkout's ``fixtures/``
PACKAGED_FIXTURES = _PACKAGE / "_fixtures"
KINDS = ("golden", "invalid")


def version() -> str:
    """The kit's version, from the installed distribution's metadata (``conformance.__version__``,
    which the metadata is built from, when the package runs from a checkout not installed)."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as dist_version

    try:
        return dist_version(DIST)
    except PackageNotFoundError:
        return __version__


# -- fixtures ---------------------------------------------------------------------------------

def fixtures_searched() -> list[Path]:
    """The folders that may hold the fixtures, in the order they are tried."""
    out = [CHECKOUT / "fixtures"] if CHECKOUT is not None else []
    return out + [PACKAGED_FIXTURES]


def fixtures_root() -> Path | None:
    """The folder holding ``golden/`` and ``invalid/``: the checkout's ``fixtures/``, else
    the copy the wheel carries; None when neither exists."""
    for root in fixtures_searched():
        if (root / "golden").is_dir():
            return root
    return None


def fixtures_dir(kind: str) -> Path:
    """``golden`` or ``invalid`` under :func:`fixtures_root` (the first place searched when
    there is none, so that a message can name it)."""
    if kind not in KINDS:
        raise ValueError(f"unknown fixtures kind {kind!r}; one of {', '.join(KINDS)}")
    return (fixtures_root() or fixtures_searched()[0]) / kind


def golden_dir() -> Path:
    return fixtures_dir("golden")


def invalid_dir() -> Path:
    return fixtures_dir("invalid")


def describe_missing(path: Path) -> str:
    """Why ``path`` (a fixtures folder) holds no case, in a few words."""
    if not path.exists():
        return f"{path} does not exist"
    if not path.is_dir():
        return f"{path} is not a folder"
    return f"{path} holds no case"


# -- digests ----------------------------------------------------------------------------------

def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _files(root: Path) -> list[Path]:
    if not root.is_dir():
        return []
    return sorted((p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts),
                  key=lambda p: p.relative_to(root).as_posix())


@functools.lru_cache(maxsize=8)
def _case_set(golden: str, invalid: str) -> dict:
    from conformance.harness.scenarios import WRITER_SCENARIOS

    h = hashlib.sha256()
    counts = {}
    for kind, root in (("golden", Path(golden)), ("invalid", Path(invalid))):
        files = _files(root)
        for p in files:
            h.update(f"{kind}/{p.relative_to(root).as_posix()}\0{_sha256_file(p)}\n".encode())
        counts[kind] = sum(1 for p in root.iterdir() if (p / "case.json").is_file()) \
            if root.is_dir() else 0
    scripts = json.dumps(WRITER_SCENARIOS, sort_keys=True, separators=(",", ":")).encode()
    h.update(f"scenarios\0{hashlib.sha256(scripts).hexdigest()}\n".encode())
    return {"sha256": h.hexdigest(), **counts, "scenarios": len(WRITER_SCENARIOS)}


def case_set(golden: Path | None = None) -> dict:
    """``{"sha256", "golden", "invalid", "scenarios"}``: the digest of the case set (the
    golden cases of ``golden``, by default the kit's own, the kit's invalid fixtures and the
    writer scenarios) and how many cases of each it holds."""
    g = Path(golden) if golden is not None else golden_dir()
    return dict(_case_set(str(g.resolve()), str(invalid_dir().resolve())))


def spec_texts() -> dict:
    """``{"sha256", "texts": {file name: sha256}}`` of the spec texts the catalog quotes."""
    from conformance.rules.registry import SPEC_FILES, SPEC_SHA256, SPEC_TEXTS

    texts = {SPEC_FILES[k]: SPEC_SHA256[k] for k in SPEC_TEXTS}
    h = hashlib.sha256("".join(f"{n}\0{d}\n" for n, d in sorted(texts.items())).encode())
    return {"sha256": h.hexdigest(), "texts": texts}


def provenance(implementation: dict | None = None, *, golden: Path | None = None) -> dict:
    """What a result was judged against: ``{"kit", "cases", "spec", "implementation"}``.
    ``implementation`` is ``{"name", "version"}`` (empty strings when unknown)."""
    impl = {"name": "", "version": ""}
    impl.update({k: str(v or "") for k, v in (implementation or {}).items()
                 if k in ("name", "version")})
    return {"kit": {"name": DIST, "version": version()},
            "cases": case_set(golden), "spec": spec_texts(), "implementation": impl}


def summary(p: dict) -> str:
    """One line of a provenance block, for text reports."""
    impl = p["implementation"]
    who = " ".join(x for x in (impl["name"], impl["version"]) if x) or "unknown"
    c = p["cases"]
    return (f"{p['kit']['name']} {p['kit']['version']}; cases sha256:{c['sha256'][:16]} "
            f"({c['golden']} golden, {c['invalid']} invalid, {c['scenarios']} scenarios); "
            f"spec sha256:{p['spec']['sha256'][:16]}; implementation {who}")


def junit_properties(p: dict, indent: str = "", extra: tuple = ()) -> str:
    """A JUnit ``<properties>`` element holding a provenance block (then the ``(name,
    value)`` rows of ``extra``)."""
    from xml.sax.saxutils import quoteattr

    rows = [("lance-conformance.version", p["kit"]["version"]),
            ("cases.sha256", p["cases"]["sha256"]),
            ("cases.golden", p["cases"]["golden"]), ("cases.invalid", p["cases"]["invalid"]),
            ("cases.scenarios", p["cases"]["scenarios"]),
            ("spec.sha256", p["spec"]["sha256"]),
            ("implementation.name", p["implementation"]["name"]),
            ("implementation.version", p["implementation"]["version"]), *extra]
    inner = "".join(f"{indent}  <property name={quoteattr(k)} value={quoteattr(str(v))}/>\n"
                    for k, v in rows)
    return f"{indent}<properties>\n{inner}{indent}</properties>"


def html_block(p: dict) -> str:
    """A provenance block as an HTML paragraph, for the HTML reports."""
    from html import escape

    return f"<p class='provenance'>Judged against: {escape(summary(p))}</p>"


def schema(name: str) -> dict:
    """The JSON Schema ``conformance/schemas/<name>.schema.json``: ``case`` (a golden case's
    ``case.json``), ``report`` (``validate --format json``), ``run-report`` (``run --json``)
    or ``compat`` (``compat --json``)."""
    from importlib import resources

    return json.loads(resources.files("conformance").joinpath(
        f"schemas/{name}.schema.json").read_text(encoding="utf-8"))
