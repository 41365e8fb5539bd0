"""A local wheelhouse made from the distributions installed in this interpreter, so that the
kit's wheel can be installed *with its declared dependencies* into an isolated virtualenv
offline and fast (no index, no download, no ``--system-site-packages``).

A wheel is a zip of the files a distribution installs under ``site-packages`` plus its
``.dist-info`` (``METADATA``, ``WHEEL`` with its tags, ``entry_points.txt``, ``RECORD``).
An installed distribution still has all of that: its ``RECORD`` lists its files, its
``WHEEL`` the tags it was built for. :func:`repack` zips them back (files outside
``site-packages``, such as the console scripts in ``bin/``, are left out: pip writes the
console scripts again from ``entry_points.txt``; compiled ``__pycache__`` files too), with a
``RECORD`` of their sha256 digests. :func:`closure` follows ``Requires-Dist`` (markers
evaluated for this interpreter, extras as asked) from a set of requirements.
"""

from __future__ import annotations

import base64
import hashlib
import re
import zipfile
from importlib import metadata
from pathlib import Path

from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name


def _wanted(req: Requirement, extras: set[str]) -> bool:
    if req.marker is None:
        return True
    envs = [{"extra": e} for e in (extras or {""})]
    return any(Marker(str(req.marker)).evaluate(env) for env in envs)


def closure(requirements: list[str]) -> dict[str, metadata.Distribution]:
    """The installed distributions ``requirements`` need, transitively (canonical name ->
    distribution). A requirement that is not installed raises ``LookupError``."""
    out: dict[str, metadata.Distribution] = {}
    todo = [(Requirement(r), set()) for r in requirements]
    seen: set[tuple[str, frozenset]] = set()
    while todo:
        req, _ = todo.pop()
        key = (canonicalize_name(req.name), frozenset(req.extras))
        if key in seen:
            continue
        seen.add(key)
        try:
            dist = metadata.distribution(req.name)
        except metadata.PackageNotFoundError as exc:
            raise LookupError(f"{req.name} is not installed here: no wheel can be made of it") from exc
        if not req.specifier.contains(dist.version, prereleases=True):
            raise LookupError(f"{req} is not satisfied by the installed {dist.version}")
        out[canonicalize_name(req.name)] = dist
        for line in dist.requires or []:
            sub = Requirement(line)
            if _wanted(sub, set(req.extras)):
                todo.append((sub, set()))
    return out


def _tag(dist: metadata.Distribution) -> str:
    text = dist.read_text("WHEEL") or ""
    tags = [m.group(1).strip() for m in re.finditer(r"^Tag:\s*(\S+)", text, re.M)]
    if not tags:
        return "py3-none-any"
    py = sorted({t.split("-")[0] for t in tags})
    abi = sorted({t.split("-")[1] for t in tags})
    plat = sorted({t.split("-", 2)[2] for t in tags})
    return f"{'.'.join(py)}-{'.'.join(abi)}-{'.'.join(plat)}"


def _digest(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def repack(dist: metadata.Distribution, into: Path) -> Path:
    """Write ``dist`` (installed) as a wheel into ``into``; returns its path. Files are
    stored, not compressed: the wheel is unpacked again right away."""
    name = re.sub(r"[-_.]+", "_", dist.metadata["Name"])
    version = dist.version
    path = into / f"{name}-{version}-{_tag(dist)}.whl"
    if path.exists():
        return path
    info = None
    records = []
    tmp = path.with_suffix(".partial")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_STORED) as zf:
        for f in dist.files or []:
            rel = f.as_posix()
            if rel.startswith("../") or rel.startswith("/") or "__pycache__" in f.parts:
                continue
            top = f.parts[0]
            if top.endswith(".dist-info"):
                info = top
                if f.name in ("RECORD", "INSTALLER", "REQUESTED", "direct_url.json"):
                    continue
            src = Path(dist.locate_file(f))
            if not src.is_file():
                continue
            data = src.read_bytes()
            zf.writestr(rel, data)
            records.append(f"{rel},{_digest(data)},{len(data)}")
        if info is None:
            raise LookupError(f"{dist.metadata['Name']}: no .dist-info among its files")
        records.append(f"{info}/RECORD,,")
        zf.writestr(f"{info}/RECORD", "\n".join(records) + "\n")
    tmp.rename(path)
    return path


def build(requirements: list[str], into: Path) -> list[Path]:
    """A wheelhouse in ``into`` for ``requirements`` and everything they need."""
    into.mkdir(parents=True, exist_ok=True)
    return [repack(d, into) for d in closure(requirements).values()]
