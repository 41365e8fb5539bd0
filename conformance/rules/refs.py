"""REFS-*: tags and branches under ``_refs/`` (spec 000 "Basic Layout",
REFS-NAMESPACE-COMMIT §1-3).

Tag file ``_refs/tags/{name}.json``: ``{"branch": str|null, "version": int,
"createdAt": str, "updatedAt": str, "manifestSize": int, "metadata": {str: str}}``
(``version`` and ``manifestSize`` required). Branch file ``_refs/branches/{name}.json``:
``{"parentBranch": str|null, "identifier": {"version_mapping": [[int, str], ...]},
"parentVersion": int, "createAt": int, "manifestSize": int, "metadata": {...}}``; the
branch's dataset lives in ``tree/{name}/`` and its manifests say ``Manifest.branch = name``.
Names are percent-encoded in file names (``/`` -> ``%2F``). Tag names: Unicode
alphanumerics and ``. - _``, no leading/trailing ``.``, no ``..``, not ending ``.lock``.
Branch names: ``/``-separated segments of the same characters, no empty segment, no
``..`` or ``\\``, not ending ``.lock``, not ``main``.
"""

from __future__ import annotations

import json
from urllib.parse import unquote

from .registry import Finding, rule

_R = "REFS-NAMESPACE-COMMIT"
MAX_REF_BYTES = 1 << 20


def _chars_ok(name: str) -> bool:
    return all(c.isalnum() or c in ".-_" for c in name)


def tag_name_problem(name: str) -> str | None:
    if not name:
        return "Ref cannot be empty"
    if not _chars_ok(name):
        return "Ref characters must be either alphanumeric, '.', '-' or '_'"
    if name.startswith("."):
        return "Ref cannot begin with a dot"
    if name.endswith("."):
        return "Ref cannot end with a dot"
    if ".." in name:
        return "Ref cannot have two consecutive dots"
    if name.endswith(".lock"):
        return "Ref cannot end with .lock"
    return None


def branch_name_problem(name: str) -> str | None:
    if not name:
        return "Ref cannot be empty"
    if name == "main":
        return "\"main\" is reserved for the default branch"
    if name.startswith("/") or name.endswith("/") or "//" in name:
        return "a branch name has no empty segment"
    if ".." in name or "\\" in name:
        return "a branch name has no '..' or '\\'"
    if name.endswith(".lock"):
        return "Ref cannot end with .lock"
    if not all(_chars_ok(seg) for seg in name.split("/")):
        return "Ref characters must be either alphanumeric, '.', '-' or '_'"
    return None


def _refs(ctx, kind: str):
    """[(name, key, doc | None, error | None)] for ``_refs/{kind}/*.json`` (cached)."""
    ck = f"refs:{kind}"
    if ck in ctx.cache:
        return ctx.cache[ck]
    out = []
    try:
        files, _dirs = ctx.store.list_dir(f"_refs/{kind}")
    except Exception:  # noqa: BLE001 - no refs directory
        files = []
    for info in sorted(files, key=lambda i: i.key):
        base = info.key.rsplit("/", 1)[-1]
        if not base.endswith(".json"):
            continue
        name = unquote(base[:-5])
        key = f"_refs/{kind}/{base}"
        try:
            doc = json.loads(ctx.store.get(key, max_size=MAX_REF_BYTES))
            out.append((name, key, doc, None))
        except Exception as exc:  # noqa: BLE001 - reported by REFS-001/003
            out.append((name, key, None, f"{type(exc).__name__}: {exc}"))
    ctx.cache[ck] = out
    return out


def tag_ref(name: str) -> str:
    """The ref label of a tag in findings: ``tag:NAME``."""
    return f"tag:{name}"


def branch_ref(name: str) -> str:
    """The ref label of a branch in findings: ``branch:NAME``."""
    return f"branch:{name}"


def _on_main(ctx) -> bool:
    """True in the main root's context, where ``_refs/`` lives; the engine also runs these
    rules in each branch's context, where only REFS-005 has something to judge."""
    return getattr(ctx, "branch", None) is None


def _is_int(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _metadata_ok(doc) -> bool:
    md = doc.get("metadata", {})
    return isinstance(md, dict) and all(isinstance(v, str) for v in md.values())


def _branch_versions(ctx, branch):
    from conformance.engine import access

    if branch in (None, "main"):
        return {e.version for e in ctx.version_entries}
    ck = f"branch-versions:{branch}"
    if ck not in ctx.cache:
        try:
            entries = access.list_versions(ctx.store, f"tree/{branch}/_versions")
        except Exception:  # noqa: BLE001
            entries = []
        ctx.cache[ck] = entries
    return {e.version for e in ctx.cache[ck]}


@rule("REFS-001", title="tag files are JSON with typed fields", severity="error", spec=_R,
      section="2.1 File format",
      clause="`version` and `manifestSize` are required ... A string \"1\" where a number is "
             "expected is rejected.", scope="table",
      refusal='a tag whose fields are missing or mistyped cannot be resolved to a manifest')
def tag_json(ctx):
    if not _on_main(ctx):
        return
    for name, key, doc, err in _refs(ctx, "tags"):
        loc = {"path": key, "ref": tag_ref(name)}
        if err or not isinstance(doc, dict):
            yield Finding(f"tag {name!r} is not a JSON object: {err or type(doc).__name__}", loc)
            continue
        for k in ("version", "manifestSize"):
            if not _is_int(doc.get(k)) or doc.get(k) < 0:
                yield Finding(f"tag {name!r}: {k} must be a non-negative integer, got "
                              f"{doc.get(k)!r}", loc)
        if doc.get("branch") is not None and not isinstance(doc.get("branch"), str):
            yield Finding(f"tag {name!r}: branch must be a string or null", loc)
        for k in ("createdAt", "updatedAt"):
            if k in doc and not isinstance(doc[k], str):
                yield Finding(f"tag {name!r}: {k} must be an RFC 3339 string", loc)
        if not _metadata_ok(doc):
            yield Finding(f"tag {name!r}: metadata must map strings to strings", loc)


@rule("REFS-002", title="tags point at existing versions of their branch", severity="error",
      spec=_R, section="2.1 File format",
      clause="`version` | integer (u64) | Version number **within that branch**.",
      scope="table",
      refusal='a tag naming a version its branch does not have cannot be checked out')
def tag_target(ctx):
    if not _on_main(ctx):
        return
    for name, key, doc, _err in _refs(ctx, "tags"):
        if not isinstance(doc, dict) or not _is_int(doc.get("version")):
            continue
        branch = doc.get("branch")
        if branch is not None and not isinstance(branch, str):
            continue
        if doc["version"] not in _branch_versions(ctx, branch):
            yield Finding(f"tag {name!r} points at version {doc['version']} of "
                          f"{branch or 'main'}, which has no manifest",
                          {"path": key, "ref": tag_ref(name)})


@rule("REFS-003", title="branch files are JSON with typed fields", severity="error",
      spec=_R, section="3.1 File format (`_refs/branches/feature%2Fx%2Fy.json`, branch "
      "`feature/x/y` made from `dev` v3)",
      clause="`parentBranch` | string or `null` | Source branch; `null` means main. ... "
             "`parentVersion` | integer | Version of the parent that the branch starts from.",
      scope="table",
      refusal='a branch whose JSON fields are missing or mistyped cannot be resolved to its parent')
def branch_json(ctx):
    if not _on_main(ctx):
        return
    for name, key, doc, err in _refs(ctx, "branches"):
        loc = {"path": key, "ref": branch_ref(name)}
        if err or not isinstance(doc, dict):
            yield Finding(f"branch {name!r} is not a JSON object: {err or type(doc).__name__}",
                          loc)
            continue
        if doc.get("parentBranch") is not None and not isinstance(doc["parentBranch"], str):
            yield Finding(f"branch {name!r}: parentBranch must be a string or null", loc)
        if not _is_int(doc.get("parentVersion")):
            yield Finding(f"branch {name!r}: parentVersion must be an integer", loc)
        for k in ("createAt", "manifestSize"):
            if k in doc and not _is_int(doc[k]):
                yield Finding(f"branch {name!r}: {k} must be an integer", loc)
        ident = doc.get("identifier")
        if ident is not None:
            vm = ident.get("version_mapping") if isinstance(ident, dict) else None
            if not isinstance(vm, list) or not all(
                    isinstance(p, list) and len(p) == 2 and _is_int(p[0]) and isinstance(p[1], str)
                    for p in vm):
                yield Finding(f"branch {name!r}: identifier.version_mapping must be a list of "
                              f"[integer, string] pairs", loc)
        if not _metadata_ok(doc):
            yield Finding(f"branch {name!r}: metadata must map strings to strings", loc)


@rule("REFS-004", title="each branch has its tree with manifests from the parent version on",
      severity="error", spec=_R,
      section="3.3 Creating a branch: `ds.create_branch(name, ref=None)` [obs]",
      clause="A Clone commit goes into `{root}/tree/{name}/`. ... The first manifest has "
             "**the parent's version number**", scope="table",
      refusal='a branch without its tree of manifests cannot be checked out')
def branch_tree(ctx):
    if not _on_main(ctx):
        return
    for name, key, doc, _err in _refs(ctx, "branches"):
        if branch_name_problem(name):
            continue  # REFS-007
        loc = {"path": key, "ref": branch_ref(name)}
        versions = _branch_versions(ctx, name)
        if not versions:
            yield Finding(f"branch {name!r} has no manifest under tree/{name}/_versions", loc)
            continue
        pv = doc.get("parentVersion") if isinstance(doc, dict) else None
        if _is_int(pv) and min(versions) < pv:
            yield Finding(f"branch {name!r} has version {min(versions)} below its parent "
                          f"version {pv}", loc)


@rule("REFS-005", title="a branch's manifests name the branch", severity="error", spec=_R,
      section="3.4 What a branch manifest contains [obs]",
      clause="`Manifest.branch` (field 20) is the full branch name (`\"feature/x/y\"`). Main "
             "manifests leave it unset.", scope="table",
      refusal='a reader checking out a branch cannot tell whose data a manifest naming another branch describes')
def branch_field(ctx):
    """On main: no manifest names a branch (unless the root validated is itself
    ``tree/{branch}``). On a branch (the engine runs this rule in each branch's context):
    every checked manifest names exactly that branch."""
    branch = getattr(ctx, "branch", None)
    root = unquote(ctx.store.uri).rstrip("/")
    for e in ctx.selected_entries():
        facts = ctx.version_facts(e.version)
        if facts is None:
            continue  # the MANIFEST framing rules report it
        said = facts.branch  # Manifest.branch, None when the field is absent
        loc = {"version": e.version, "path": e.key}
        if branch is not None:
            if said != branch:
                shown = repr(said) if said is not None else "no branch"
                yield Finding(f"manifest of version {e.version} says {shown}, expected "
                              f"{branch!r}", loc)
            continue
        if said is not None and not root.endswith("/tree/" + said):
            yield Finding(f"manifest says branch {said!r} but the dataset root "
                          f"is not tree/{said}", loc)


@rule("REFS-006", title="tag names are valid", severity="error", spec=_R,
      section="2.2 Names [obs]",
      clause="Allowed: every character is Unicode alphanumeric or one of `.` `-` `_`.",
      scope="table",
      refusal='a tag name outside the allowed characters cannot be told apart from a path; pylance 14.0.2 refuses to create it')
def tag_names(ctx):
    if not _on_main(ctx):
        return
    for name, key, _doc, _err in _refs(ctx, "tags"):
        problem = tag_name_problem(name)
        if problem:
            yield Finding(f"tag name {name!r}: {problem}", {"path": key, "ref": tag_ref(name)})


@rule("REFS-007", title="branch names are valid", severity="error", spec=_R,
      section="3.2 Names [obs]",
      clause="A branch name is one or more `/`-separated segments. Each segment uses the tag "
             "character set (alphanumeric, `.`, `-`, `_`).", scope="table",
      refusal='a branch name outside the allowed segments cannot be mapped to its tree/ directory; pylance 14.0.2 refuses to create it')
def branch_names(ctx):
    if not _on_main(ctx):
        return
    for name, key, _doc, _err in _refs(ctx, "branches"):
        problem = branch_name_problem(name)
        if problem:
            yield Finding(f"branch name {name!r}: {problem}",
                          {"path": key, "ref": branch_ref(name)})


@rule("REFS-008", title="a branch's parent branch and parent version exist",
      severity="warning",
      spec=_R, section="5. `cleanup_old_versions`",
      clause="Protected versions: ... every version that a *descendant branch* forks from. "
             "For example, main v2 is kept while `dev` (from main v2) or `dev/sub` (from dev "
             "v4 ...) exists",
      scope="table")
def branch_parent(ctx):
    """Every branch file names a parent that exists (``null`` or ``"main"``: main; else a
    branch with its own file) and a ``parentVersion`` that has a manifest on that parent.

    A warning: the branch's own manifests reach every inherited file through their base
    paths, so a reader still reads the branch; what is lost is the history it forks from,
    which pylance's cleanup keeps while the branch exists."""
    if not _on_main(ctx):
        return
    branches = _refs(ctx, "branches")
    names = {name for name, _key, _doc, _err in branches}
    for name, key, doc, _err in branches:
        if not isinstance(doc, dict) or branch_name_problem(name):
            continue  # REFS-003 / REFS-007
        parent, pv = doc.get("parentBranch"), doc.get("parentVersion")
        if (parent is not None and not isinstance(parent, str)) or not _is_int(pv):
            continue  # REFS-003
        loc = {"path": key, "ref": branch_ref(name)}
        if parent in (None, "main"):
            parent = None
        elif parent not in names or branch_name_problem(parent):
            yield Finding(f"branch {name!r} names parent branch {parent!r}, which has no "
                          f"branch file", loc)
            continue
        if pv not in _branch_versions(ctx, parent):
            yield Finding(f"branch {name!r} starts from version {pv} of {parent or 'main'}, "
                          f"which has no manifest", loc)
