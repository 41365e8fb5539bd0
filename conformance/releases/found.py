"""Tables found on disk (a user's, a test suite's): find them, have a release read them back,
judge them as the cross-release corpus is judged.

:func:`find` walks a folder for every Lance table (a directory whose ``_versions/`` holds a
manifest; lancedb keeps its tables as such directories named ``<name>.lance``) and every
standalone Lance file (a ``*.lance`` file outside any table), grouped by the folder holding
them. :func:`read_back` has one release read every version of every table, and every
standalone file, in the release's own virtualenv (``release_program.py read-many``); its
readings are stored as the corpus stores a writer's (``<work>/<name>/expected/``,
``scenario.json``). :func:`judge` then judges each one with :func:`corpus.judge_scenario` or
:func:`corpus.judge_files`, that release's reading standing for the writer's.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from .corpus import (
    NEWEST_READER,
    PROGRAM,
    RootVerdict,
    VersionVerdict,
    judge_files,
    judge_scenario,
)
from .venvs import Release, ensure_venv


@dataclass(frozen=True)
class Found:
    """A table (``kind="table"``, ``path`` its root) or a folder of standalone Lance files
    (``kind="files"``); ``name`` names the folder of its readings."""

    kind: str
    path: Path
    name: str


def is_table(d: Path) -> bool:
    versions = d / "_versions"
    return versions.is_dir() and any(p.name.endswith(".manifest") for p in versions.iterdir())


def find(root: Path) -> list[Found]:
    """Every table and every folder of standalone Lance files under ``root`` (symbolic links
    are not followed; what lies inside a table, its branches included, belongs to it)."""
    root = Path(root)
    found: list[tuple[str, Path]] = []
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        dirnames.sort()
        if is_table(here):
            found.append(("table", here))
            dirnames[:] = []
            continue
        if any(f.endswith(".lance") and (here / f).is_file() and not (here / f).is_symlink()
               for f in filenames):
            found.append(("files", here))
    out = []
    for i, (kind, path) in enumerate(found):
        rel = path.relative_to(root).as_posix()
        slug = re.sub(r"[^A-Za-z0-9._-]+", "-", rel if rel != "." else path.name).strip("-")
        out.append(Found(kind, path, f"{i:04d}-{slug[-100:] or kind}"))
    return out


def read_back(release: Release, items: list[Found], work: Path, *, python: Path | None = None,
              stall: float = 600, plain: bool = False) -> None:
    """Have ``release`` read every item into ``work/<name>/`` and write its ``scenario.json``:
    every version with ``_rowid``, or (``plain``) as a user reads it by default, without row
    ids (pylance ``to_table()``, lancedb ``to_arrow()``).

    One process reads them in turn; when it dies (a release's abort) or reads nothing for
    ``stall`` seconds, the item it was reading is recorded as one the release cannot read and
    a new process goes on with the rest.
    """
    _read_many(str(python or ensure_venv(release)), items, work, "", stall=stall, plain=plain)
    _write_scenarios(release, items, work)


def read_back_newest(items: list[Found], work: Path, *, python: Path | None = None,
                     stall: float = 600, plain: bool = False) -> None:
    """Have the newest release (:data:`corpus.NEWEST_READER`) read every item too, into
    ``work/<name>/read-by/<its slug>/``, where the corpus keeps the newest release's reading
    of an older writer's root: :func:`corpus.judge_scenario` and :func:`corpus.judge_files`
    then judge as the corpus does, the kit may read a version as either release reads it and
    may refuse (with an error finding) what the newest release refuses. Two releases read
    some bytes differently (pylance 0.20.0 marks a blob v1 description's children
    non-nullable, 1.0 and later do not; 0.20.0 to 0.31 leave a ``storage-class: blob`` column
    out of a scan, later releases read it) and a writer's unstable format revision (a 2.1
    file of 0.20.0) is one the newest release refuses."""
    newest = Release.parse(NEWEST_READER)
    _read_many(str(python or ensure_venv(newest)), items, work, f"read-by/{newest.slug}",
               stall=stall, plain=plain)


def _read_many(py: str, items: list[Found], work: Path, sub: str, *, stall: float,
               plain: bool) -> None:
    """``release_program.py read-many`` with ``py``: each item into ``work/<name>/<sub>``."""
    work.mkdir(parents=True, exist_ok=True)
    listing = [{"kind": it.kind, "path": str(Path(it.path).absolute()),
                "out": str((work / it.name / sub).absolute()),
                **({"plain": True} if plain else {})}
               for it in items]
    stem = "read-many" + (f"-{sub.replace('/', '-')}" if sub else "")
    (work / f"{stem}.json").write_text(json.dumps(listing, indent=1))

    def pending():
        return [it for it in listing if not (Path(it["out"]) / "read.json").exists()]

    log = work / f"{stem}.log"
    while pending():
        with open(log, "w") as err:
            proc = subprocess.Popen([py, str(PROGRAM), "read-many",
                                     str(work / f"{stem}.json")],
                                    stdout=subprocess.DEVNULL, stderr=err)
            left, last, stalled = len(pending()), time.monotonic(), False
            while proc.poll() is None:
                time.sleep(0.2)
                now_left = len(pending())
                if now_left != left:
                    left, last = now_left, time.monotonic()
                elif time.monotonic() - last > stall:
                    proc.kill()
                    stalled = True
            proc.wait()
        rest = pending()
        if not rest:
            break
        tail = (log.read_text(errors="replace").strip().splitlines() or [""])[-1]
        why = (f"the reader read nothing for {stall:.0f} s" if stalled else
               f"the reader died on it (exit code {proc.returncode}): {tail[:300]}")
        out = Path(rest[0]["out"])
        out.mkdir(parents=True, exist_ok=True)
        (out / "read.json").write_text(json.dumps({"versions": [], "crashed": why,
                                                   "unreadable_versions": {"latest": why}}))


def _write_scenarios(release: Release, items: list[Found], work: Path) -> None:
    for it in items:
        folder = work / it.name
        read = json.loads((folder / "read.json").read_text())
        info = {"scenario": it.name, "writer": release.name, "origin": "found",
                "path": str(it.path), "steps": [], "refused_columns": {},
                "versions": read.get("versions", []),
                "unreadable_versions": read.get("unreadable_versions", {})}
        if "unsupported" in read:
            info["unsupported"] = read["unsupported"]
        if "reading" in read:
            info["reading"] = read["reading"]
        for key in ("branches", "unreadable_branch_versions"):  # a table's branches, read
            if key in read:  # by the release as the census reads them
                info[key] = read[key]
        info["table_path" if it.kind == "table" else "files_dir"] = str(Path(it.path).absolute())
        (folder / "scenario.json").write_text(json.dumps(info, indent=1, sort_keys=True))


def judge(items: list[Found], work: Path, *, deep: bool = True,
          limit: float | None = None) -> list[RootVerdict]:
    """Each item read by :func:`read_back`, judged; an item its reader cannot read at all
    (standalone files for lancedb, which has no file reader) is left out. ``limit``: seconds
    one item may take; each item is then judged in a process of its own (forked from a
    clean server process), stopped when it runs out, and judged ``judge-timed-out``."""
    verdicts = []
    pool = _Judges(deep, limit) if limit else None
    for it in items:
        folder = work / it.name
        info = json.loads((folder / "scenario.json").read_text())
        if "unsupported" in info:
            continue
        v = pool.judge(it, folder) if pool else _judge_item(it, folder, deep)
        if v is None:
            v = _failed(folder, it, "judge-timed-out",
                        f"no verdict within {limit:g} s: the kit must never hang")
        v.scenario = str(it.path)
        verdicts.append(v)
    return verdicts


def _failed(folder: Path, it: Found, outcome: str, detail: str) -> RootVerdict:
    """The verdict on an item the kit could not judge (``outcome``: judge-crashed or
    judge-timed-out)."""
    info = json.loads((folder / "scenario.json").read_text())
    v = RootVerdict(writer=info["writer"], scenario=it.name)
    v.versions.append(VersionVerdict("latest", outcome, detail))
    return v


def _judge_item(it: Found, folder: Path, deep: bool) -> RootVerdict:
    try:
        return judge_scenario(folder, deep=deep) if it.kind == "table" else judge_files(folder)
    except Exception as e:  # noqa: BLE001 - the kit failing on a table is a verdict too
        return _failed(folder, it, "judge-crashed", f"{type(e).__name__}: {e}"[:400])


def _judge_in_child(conn, it: Found, folder: Path, deep: bool) -> None:
    conn.send(_judge_item(it, folder, deep))
    conn.close()


def _preload() -> list[str]:
    """The modules a judge imports, imported once by the fork server rather than by every
    judging process (pandas alone takes half a second): the judge, the rule catalog, the
    whole reference implementation, and what pyarrow loads for the comparisons."""
    import pkgutil

    import reference_impl
    from conformance.rules.registry import AREA_MODULES

    return (["pandas", "pyroaring", "zoneinfo", "pyarrow.compute",
             "conformance.releases.corpus", "conformance.engine.local",
             "conformance.engine.compare", "conformance.engine.file"]
            + [f"conformance.rules.{name}" for name in AREA_MODULES]
            + [m.name for m in pkgutil.walk_packages(reference_impl.__path__,
                                                     "reference_impl.")])


class _Judges:
    """Judge one item per process with a wall-clock limit. The processes fork from a
    ``forkserver`` (a fresh single-threaded process with the kit imported), so a fork never
    copies a lock another thread of this process held."""

    def __init__(self, deep: bool, limit: float, target=_judge_in_child) -> None:
        import multiprocessing

        self.deep, self.limit, self.target = deep, limit, target
        self.ctx = multiprocessing.get_context("forkserver")
        self.ctx.set_forkserver_preload(_preload())

    def judge(self, it: Found, folder: Path) -> RootVerdict | None:
        """The item's verdict, or None when it took longer than the limit."""
        parent, child = self.ctx.Pipe(duplex=False)
        proc = self.ctx.Process(target=self.target, args=(child, it, folder, self.deep),
                                daemon=True)
        proc.start()
        child.close()
        try:
            if parent.poll(self.limit):
                try:
                    return parent.recv()
                except EOFError:  # the process died without a verdict (killed, out of memory)
                    proc.join(30)
                    return _failed(folder, it, "judge-crashed", f"the judging process ended "
                                                                f"with exit code {proc.exitcode}")
            return None
        finally:
            parent.close()
            if proc.is_alive():
                proc.kill()
            proc.join()
