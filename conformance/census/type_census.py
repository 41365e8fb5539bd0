"""The census of types: every Arrow type, variant and storage version, as releases write them.

:func:`build` runs ``type_program.py`` with a release's Python (its cached virtualenv,
:mod:`conformance.releases.venvs`): one folder per storage version and case (a type in one
variant), holding what the release was given, its table and what it read back, and
``case.json`` with the release's outcome (``identical``, ``other-type``, ``other-values``,
``refused-write``, ``refused-read``, ``crashed`` or ``inexpressible`` in that release's
pyarrow).

:func:`judge` is the kit's side, for each case:

* **read**: our reader and validator on the release's table. Where the release reads its
  table back, ours must read the same rows (as :func:`conformance.releases.corpus
  .table_difference` compares them) and the validator (``--deep``) must report no error;
  where the release cannot read its own table, ours must refuse it with a typed error or
  read exactly what was written.
* **write**: our writer (:func:`reference_impl.write_dataset`) at the same storage version.
  Where the release writes the type, ours must write it too, the validator must keep quiet,
  and both the release and our reader must read ours as the release reads its own table.
  Where the release refuses, ours must refuse with a typed error naming the type.

A cell is ``ok`` when both hold. The census judges our writer at storage versions 2.0 to 2.2;
at legacy and 2.3 its column is ``n/a``. (It writes 2.3 too; with 2.3 added here, 598 of
pylance 14.0.2's 603 cells at 2.3 were as demanded on 2026-12-03, and the five others are
tables our writer refuses and 14.0.2 writes: an empty struct with null rows, four variants,
which 14.0.2 reads back with other values or not at all, and a fixed-size list of
``arrow.variable_shape_tensor``.)
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.ipc as ipc

from conformance.releases.corpus import table_difference
from conformance.releases.venvs import Release, cache_root, ensure_venv

PROGRAM = Path(__file__).with_name("type_program.py")
RELEASE_PROGRAM = Path(__file__).parents[1] / "releases" / "release_program.py"
STORAGES = ("legacy", "2.0", "2.1", "2.2", "2.3")
#: The storage versions our writer writes.
OUR_WRITER_STORAGES = ("2.0", "2.1", "2.2")
#: The releases of the documented census: the newest, and old ones of the cross-release list.
DEFAULT_RELEASES = ("pylance==14.0.2", "pylance==0.20.0", "pylance==1.0.4")
#: The oracle for every release's data: where it refuses an older release's table, so may we.
NEWEST = "pylance==14.0.2"
#: What the release did with its own table, and whether it read it back.
READ_BACK = ("identical", "other-type", "other-values")
REFUSED = ("refused-write", "crashed")


def census_root() -> Path:
    return cache_root() / "census" / "types"


def program_digest() -> str:
    h = hashlib.sha256(PROGRAM.read_bytes())
    h.update(RELEASE_PROGRAM.read_bytes())
    return h.hexdigest()[:16]


# -- the release's side ---------------------------------------------------------------------------


def storages_of(python: str, timeout: float = 300) -> list[str]:
    """The storage versions the release behind ``python`` writes."""
    done = subprocess.run([python, str(PROGRAM), "storages"], capture_output=True, text=True,
                          timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"the census program failed: {_tail(done.stderr)}")
    return [s for s in json.loads(done.stdout.strip().splitlines()[-1]) if s in STORAGES]


def _tail(text: str, n: int = 6) -> str:
    return "\n".join(text.strip().splitlines()[-n:])


def _run_until_done(python: str, args: list[str], folder: Path, timeout: float) -> None:
    """Run the program; when a case kills the release's process (a native crash), run it
    again: the program marks the case it was on as ``crashed`` and goes on with the next."""
    for _ in range(200):
        done = subprocess.run([python, str(PROGRAM), *args], capture_output=True, text=True,
                              timeout=timeout)
        if done.returncode == 0:
            return
        started = [p for p in folder.glob("*/case.json")
                   if json.loads(p.read_text()).get("outcome") == "started"]
        started += list(folder.glob("*/ours-read.started"))
        started += list(folder.glob("*/newest-read.started"))
        if not started:
            raise RuntimeError(f"the census program failed ({' '.join(args[:1])}): "
                               f"{_tail(done.stderr)}")
    raise RuntimeError("the census program kept crashing")


def build(release: str, out: Path | None = None, *, python: str | None = None,
          storages=None, rows=None, force: bool = False, timeout: float = 1800,
          newest_python: str | None = None) -> Path:
    """Write every case with ``release`` (once per program); return the release's folder.

    ``python`` runs the program instead of the release's cached virtualenv (an interpreter
    where that release is installed, as in the test suite); ``rows`` keeps only those types
    of the catalogue.
    """
    rel = Release.parse(release)
    out = Path(out) if out else census_root() / rel.slug
    python = python or str(ensure_venv(rel))
    wanted = [s for s in (storages or STORAGES)]
    accepted = storages_of(python)
    digest = program_digest() + ("" if rows is None else
                                 hashlib.sha256(json.dumps(sorted(rows)).encode()).hexdigest()[:8])
    out.mkdir(parents=True, exist_ok=True)
    for storage in wanted:
        folder = out / storage
        stamp = folder / "release.json"
        if storage not in accepted:
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir(parents=True, exist_ok=True)
            stamp.write_text(json.dumps({"release": release, "program": digest,
                                         "writes": False}))
            continue
        if not force and stamp.is_file() and \
                json.loads(stamp.read_text()).get("program") == digest:
            continue
        shutil.rmtree(folder, ignore_errors=True)
        started = time.monotonic()
        args = ["write", str(out), storage] + ([] if rows is None else [json.dumps(list(rows))])
        _run_until_done(python, args, folder, timeout)
        if release != NEWEST:
            # the newest release reads the older one's tables: where it refuses them (an
            # unstable format of that release), a refusal is what the kit owes too
            newest = python_of(NEWEST, newest_python)
            _run_until_done(newest, ["read-tables", str(out), storage], folder, timeout)
        stamp.write_text(json.dumps({"release": release, "program": digest,
                                     "writes": True,
                                     "seconds": round(time.monotonic() - started, 1)}))
    return out


def python_of(release: str, python: str | None = None) -> str:
    return python or str(ensure_venv(Release.parse(release)))


def unstable_for(folder: Path) -> bool:
    """Whether the newest release refuses this older release's tables of one storage
    version: its reading of the simplest case (an int32 column) fails. That storage version
    was then not yet the stable format, and our writer (which writes the stable one) is not
    compared with it."""
    probe = [c for c in _case_folders(folder)
             if json.loads((c / "case.json").read_text()).get("row") == "int32"
             and json.loads((c / "case.json").read_text()).get("variant") == "values"]
    if not probe or not (probe[0] / "newest-read.json").is_file():
        return False
    return json.loads((probe[0] / "newest-read.json").read_text())["outcome"] != "read"


# -- the kit's side -------------------------------------------------------------------------------


@dataclass
class Cell:
    """One case (a type in one variant) at one storage version, for one release."""

    release: str
    storage: str
    row: str
    family: str
    variant: str
    order: int
    pylance: str              # the release's outcome on its own table (see the module doc)
    pylance_detail: str = ""  # its error, or the type it read back
    read: str = "n/a"         # ours on the release's table: same | refused | false-error | ...
    read_detail: str = ""
    write: str = "n/a"        # our writer: same | refused | writes-refused | ...
    write_detail: str = ""

    @property
    def ok(self) -> bool:
        return self.read in READ_OK and self.write in WRITE_OK

    def as_dict(self) -> dict:
        d = asdict(self)
        d["ok"] = self.ok
        return d


#: Verdicts that meet the census's demands.
READ_OK = ("n/a", "same", "refused", "reads-as-written", "reads-where-release-refuses")
WRITE_OK = ("n/a", "same", "refused", "read-as-written", "written-where-release-crashes",
            "as-newest")
#: What a release's crash while writing says (a bug of its writer, not a refusal).
CRASH_MARKS = ("PanicException", "panicked", "internal error", "not yet implemented",
               "Cannot encode a data block")


def _is_crash(outcome: str, detail: str) -> bool:
    return outcome == "crashed" or any(m in detail for m in CRASH_MARKS)


def _read_stream(path: Path) -> pa.Table:
    with ipc.open_stream(str(path)) as r:
        return r.read_all()


def _names_type(message: str, info: dict) -> bool:
    """Whether a refusal names the type (or the container of its variant) it refuses."""
    text = message.lower()
    row = info["row"].lower()
    tokens = {row, row.split(" (")[0], info.get("input_type", "").lower()}
    head = row.split("<")[0].split("(")[0].split("[")[0].split(" ")[0]
    tokens |= {head, head.removeprefix("arrow."), head.removesuffix("_union")}
    if head.endswith("_union"):
        tokens.add("union")
    if row.startswith("struct<>") or "struct<>" in row:
        tokens.add("struct")
    tokens |= {"in-list": {"list"}, "in-map": {"map"}, "in-struct": {"struct"},
               "in-fixed-size-list": {"fixed_size_list", "fixed-size list"}}.get(
                   info["variant"], set())
    return any(t and t in text for t in tokens)


def _errors(report, info: dict | None = None) -> list[str]:
    """Error findings, less those the release is known to draw by breaking a spec sentence
    (:data:`conformance.releases.corpus.EXPECTED_FINDINGS`, e.g. 0.27 to 7.x's legacy
    ``file_size_bytes``)."""
    expected = {}
    if info is not None:
        from conformance.releases.corpus import expected_findings

        expected = expected_findings(info["release"], f"types-{info['storage']}")
    return [f"{v.rule}: {v.message[:200]}" for v in report.violations if v.rule not in expected]


def _judge_read(folder: Path, info: dict, cell: Cell) -> None:
    import reference_impl as ri
    from conformance.engine import local
    from reference_impl.errors import LanceError

    table = folder / "table"
    newest = folder / "newest-read.json"
    newest_refuses = newest.is_file() and json.loads(newest.read_text())["outcome"] != "read"
    if cell.pylance in READ_BACK:
        want = _read_stream(folder / "read.arrows")
        try:
            got = ri.open_dataset(str(table)).to_table()
        except LanceError as e:
            if newest_refuses:  # an older release's unstable format: refused as the newest
                cell.read = "refused"
                cell.read_detail = (f"{type(e).__name__}: {e}; {NEWEST} refuses it too: "
                                    f"{json.loads(newest.read_text()).get('error', '')}")[:400]
                return
            cell.read, cell.read_detail = "refused-wrongly", f"{type(e).__name__}: {e}"[:400]
            return
        except Exception as e:  # noqa: BLE001 - the verdict records what went wrong
            cell.read, cell.read_detail = "crash", f"{type(e).__name__}: {e}"[:400]
            return
        diff = table_difference(want, got)
        errors = _errors(local.validate(str(table), versions="all", deep=True), info)
        if diff and newest.is_file() and (folder / "newest-read.arrows").is_file() and \
                not table_difference(_read_stream(folder / "newest-read.arrows"), got):
            diff = ""  # as the newest release reads it (where it reads otherwise than the writer)
        if newest_refuses and errors and not diff:
            cell.read, cell.read_detail = "refused", "; ".join(errors)[:400]
        elif diff:
            cell.read, cell.read_detail = "misread", diff
        elif errors:
            cell.read, cell.read_detail = "false-error", "; ".join(errors)[:400]
        else:
            cell.read = "same"
    elif cell.pylance == "refused-read":
        given = _read_stream(folder / "input.arrows")
        try:
            got = ri.open_dataset(str(table)).to_table()
        except LanceError as e:
            cell.read, cell.read_detail = "refused", f"{type(e).__name__}: {e}"[:400]
            return
        except Exception as e:  # noqa: BLE001
            cell.read, cell.read_detail = "crash", f"{type(e).__name__}: {e}"[:400]
            return
        diff = table_difference(given, got)
        errors = _errors(local.validate(str(table), versions="all", deep=True), info)
        if errors:
            cell.read, cell.read_detail = "refused", "; ".join(errors)[:400]
        elif not diff:
            cell.read = "reads-as-written"
        elif given.schema.types == got.schema.types and given.num_rows == got.num_rows:
            # no oracle: the release cannot read its own table. Ours reads it (as the format
            # keeps it: legacy files lose nulls) where it has the type and rows written
            cell.read = "reads-where-release-refuses"
            cell.read_detail = f"the release refuses it; ours reads it, differing from " \
                               f"what was written: {diff}"[:400]
        else:
            cell.read, cell.read_detail = "misread", diff


def _write_ours(folder: Path, info: dict, cell: Cell) -> bool:
    """Write the case's input with our writer under ``ours/``; True when written."""
    import reference_impl as ri
    from reference_impl.errors import LanceError

    shutil.rmtree(folder / "ours", ignore_errors=True)
    for name in ("ours-read.arrows", "ours-read.json", "ours-read.started"):
        (folder / name).unlink(missing_ok=True)
    if cell.storage not in OUR_WRITER_STORAGES or info.get("unstable"):
        cell.write = "n/a"
        return False
    given = _read_stream(folder / "input.arrows")
    try:
        ri.write_dataset(given, str(folder / "ours"), data_storage_version=cell.storage)
    except LanceError as e:
        shutil.rmtree(folder / "ours", ignore_errors=True)
        message = f"{type(e).__name__}: {e}"
        newest = _newest_verdict(folder)
        if cell.pylance in READ_BACK and newest is not None and newest["write"] == "refused":
            # an older release writes what the newest refuses: our refusal follows the newest
            cell.write, cell.write_detail = "refused", f"{message}; as {NEWEST}"[:400]
        elif cell.pylance in READ_BACK:
            cell.write, cell.write_detail = "refuses-what-release-writes", message[:400]
        elif _names_type(message, info):
            cell.write, cell.write_detail = "refused", message[:400]
        else:
            cell.write, cell.write_detail = "refused-unnamed", message[:400]
        return False
    except Exception as e:  # noqa: BLE001
        shutil.rmtree(folder / "ours", ignore_errors=True)
        cell.write, cell.write_detail = "crash", f"{type(e).__name__}: {e}"[:400]
        return False
    return True


def _newest_verdict(folder: Path) -> dict | None:
    """The newest release's verdict on the same case (an older release's census)."""
    path = folder / "newest-verdict.json"
    return json.loads(path.read_text()) if path.is_file() else None


def _judge_write(folder: Path, info: dict, cell: Cell) -> None:
    """Our written table, once the release has read it (``ours-read.*``)."""
    import reference_impl as ri
    from conformance.engine import local

    ours = folder / "ours"
    record = folder / "ours-read.json"
    theirs = json.loads(record.read_text()) if record.is_file() else \
        {"outcome": "crashed", "error": "not read"}
    newest = _newest_verdict(folder)
    if newest is not None and newest.get("pylance") in READ_BACK + REFUSED and \
            newest.get("write") in ("same", "written-where-release-crashes"):
        if cell.pylance not in READ_BACK or theirs["outcome"] != "read":
            # an older release that cannot write (or read) what the newest writes: our writer
            # writes it as the newest does, which the newest reads back (its own census)
            cell.write = "as-newest"
            cell.write_detail = (f"the release {cell.pylance}; {NEWEST} writes it and reads "
                                 f"ours ({theirs.get('error', '')})")[:400]
            return
        diff = table_difference(_read_stream(folder / "read.arrows"),
                                _read_stream(folder / "ours-read.arrows"))
        if diff:
            # the older release reads ours (written as the newest writes) otherwise than
            # its own: a format the newest changed since (1.x kept nested JSON as text)
            cell.write = "as-newest"
            cell.write_detail = (f"the release reads ours otherwise ({diff}); {NEWEST} "
                                 f"writes it so and reads ours")[:400]
            return
    if cell.pylance in REFUSED and _is_crash(cell.pylance, cell.pylance_detail) \
            and theirs["outcome"] == "read":
        # the release crashed writing it (a bug of its writer, not a refusal): ours may
        # write it when the release reads ours back and our reader reads ours alike
        theirs_rows = _read_stream(folder / "ours-read.arrows")
        try:
            got = ri.open_dataset(str(ours)).to_table()
        except Exception as e:  # noqa: BLE001
            cell.write, cell.write_detail = "unreadable-by-us", f"{type(e).__name__}: {e}"[:400]
            return
        diff = table_difference(theirs_rows, got)
        errors = _errors(local.validate(str(ours), versions="all", deep=True))
        if diff or errors:
            cell.write = "misread-by-us" if diff else "false-error"
            cell.write_detail = (diff or "; ".join(errors))[:400]
        else:
            cell.write = "written-where-release-crashes"
            cell.write_detail = ("the release crashes writing it; it reads ours as "
                                 + _read_stream(folder / "ours-read.arrows").schema.field(0)
                                 .type.__str__())[:400]
        return
    if cell.pylance in REFUSED:
        if theirs["outcome"] == "read":
            diff = table_difference(_read_stream(folder / "input.arrows"),
                                    _read_stream(folder / "ours-read.arrows"))
            cell.write = "writes-refused"
            cell.write_detail = ("the release refuses to write it; it reads ours "
                                 + (f"otherwise: {diff}" if diff else "as written"))[:400]
        else:
            cell.write = "writes-refused"
            cell.write_detail = f"the release refuses to write it and to read ours: " \
                                f"{theirs.get('error', '')}"[:400]
        return
    want_path = folder / "read.arrows" if cell.pylance in READ_BACK else folder / "input.arrows"
    want = _read_stream(want_path)
    if theirs["outcome"] != "read":
        cell.write = "refused-by-release"
        cell.write_detail = theirs.get("error", "")[:400]
        return
    diff = table_difference(want, _read_stream(folder / "ours-read.arrows"))
    if diff:
        cell.write, cell.write_detail = "misread-by-release", diff
        return
    if cell.pylance not in READ_BACK:
        cell.write = "read-as-written"  # the release cannot read its own, but reads ours
        cell.write_detail = "the release reads ours as written"
    try:
        got = ri.open_dataset(str(ours)).to_table()
    except Exception as e:  # noqa: BLE001
        cell.write, cell.write_detail = "unreadable-by-us", f"{type(e).__name__}: {e}"[:400]
        return
    diff = table_difference(want, got)
    if diff:
        cell.write, cell.write_detail = "misread-by-us", diff
        return
    errors = _errors(local.validate(str(ours), versions="all", deep=True))
    if errors:
        cell.write, cell.write_detail = "false-error", "; ".join(errors)[:400]
        return
    if cell.pylance in READ_BACK:
        cell.write = "same"


def _case_folders(folder: Path) -> list[Path]:
    return sorted(p.parent for p in folder.glob("*/case.json"))


def _new_cell(info: dict) -> Cell:
    detail = info.get("error") or (info.get("read_type", "")
                                   if info["outcome"] == "other-type" else "")
    return Cell(release=info["release"], storage=info["storage"], row=info["row"],
                family=info["family"], variant=info["variant"], order=info["order"],
                pylance=info["outcome"], pylance_detail=detail[:400])


#: The kit's stages, each run over every case of a storage version in a child process (our
#: reader or writer may crash in native code; the case is then recorded as a crash).
KIT_STAGES = ("write-ours", "judge")


def _kit_stage(stage: str, folder: Path) -> None:
    """Run ``stage`` on every case of ``folder`` in this process, skipping the cases done.

    A case the previous run died on (its ``kit.started`` names the stage) is recorded as a
    ``crash`` of that stage and skipped.
    """
    unstable = unstable_for(folder)
    for case in _case_folders(folder):
        info = json.loads((case / "case.json").read_text())
        info["unstable"] = unstable
        marker = case / "kit.started"
        out = case / ("ours.json" if stage == "write-ours" else "verdict.json")
        if out.is_file():
            continue
        cell = _new_cell(info)
        if stage == "judge" and (case / "ours.json").is_file():
            prior = json.loads((case / "ours.json").read_text())
            cell.write, cell.write_detail = prior["write"], prior["write_detail"]
        if marker.is_file():
            what = "our writer" if stage == "write-ours" else "our reader or validator"
            if stage == "write-ours":
                cell.write, cell.write_detail = "crash", f"{what} killed the process"
            else:
                cell.read, cell.read_detail = "crash", f"{what} killed the process"
            marker.unlink()
            out.write_text(json.dumps({"written": False, **cell.as_dict()}))
            continue
        marker.write_text(stage)
        if stage == "write-ours":
            written = cell.pylance != "inexpressible" and _write_ours(case, info, cell)
            out.write_text(json.dumps({"written": written, **cell.as_dict()}))
        else:
            if (case / "ours.json").is_file() and \
                    json.loads((case / "ours.json").read_text())["written"]:
                _judge_write(case, info, cell)
            _judge_read(case, info, cell)
            out.write_text(json.dumps(cell.as_dict()))
        marker.unlink()


def _run_kit_stage(stage: str, folder: Path, timeout: float) -> None:
    import sys

    for _ in range(500):
        done = subprocess.run([sys.executable, "-m", "conformance.census.type_census", stage,
                               str(folder)], capture_output=True, text=True, timeout=timeout)
        if done.returncode == 0:
            return
        if not list(folder.glob("*/kit.started")):
            raise RuntimeError(f"the census's {stage} failed: {_tail(done.stderr)}")
    raise RuntimeError(f"the census's {stage} kept crashing")


def judge_storage(folder: Path, python: str, timeout: float = 3600,
                  newest: Path | None = None) -> list[Cell]:
    """Every case of one storage version: ours written, read by the release, then judged.
    ``newest``: the newest release's folder of the same storage version, already judged
    (an older release's census holds our writer to what the newest writes)."""
    for case in _case_folders(folder):
        for name in ("ours.json", "verdict.json", "kit.started", "newest-verdict.json"):
            (case / name).unlink(missing_ok=True)
        if newest is not None and (newest / case.name / "verdict.json").is_file():
            (case / "newest-verdict.json").write_bytes(
                (newest / case.name / "verdict.json").read_bytes())
    _run_kit_stage("write-ours", folder, timeout)
    if list(folder.glob("*/ours")):
        _run_until_done(python, ["read-ours", str(folder.parent), folder.name], folder, timeout)
    _run_kit_stage("judge", folder, timeout)
    cells = []
    for case in _case_folders(folder):
        d = json.loads((case / "verdict.json").read_text())
        cells.append(Cell(**{k: v for k, v in d.items() if k in Cell.__dataclass_fields__}))
    return cells


def judge(out: Path, release: str, *, python: str | None = None,
          storages=None, newest: Path | None = None) -> list[Cell]:
    python = python or str(ensure_venv(Release.parse(release)))
    cells = []
    for storage in storages or STORAGES:
        folder = out / storage
        if folder.is_dir():
            cells += judge_storage(folder, python,
                                   newest=newest / storage if newest is not None else None)
    return cells


def census(releases=DEFAULT_RELEASES, *, storages=None, rows=None, force: bool = False,
           python: dict[str, str] | None = None, out_root: Path | None = None,
           progress=None) -> dict:
    """Build and judge the census of every release; the result is what ``--json`` writes."""
    result = {"releases": {}, "storages": list(storages or STORAGES)}
    # the newest release first: an older one's cells are judged beside its verdicts
    ordered = sorted(releases, key=lambda r: r != NEWEST)
    newest_folder = None
    for release in ordered:
        started = time.monotonic()
        py = (python or {}).get(release)
        out = (Path(out_root) / Release.parse(release).slug) if out_root else None
        folder = build(release, out, python=py, storages=storages, rows=rows, force=force,
                       newest_python=(python or {}).get(NEWEST))
        built = time.monotonic() - started
        cells = judge(folder, release, python=py, storages=storages, newest=newest_folder)
        if release == NEWEST:
            newest_folder = folder
        seconds = time.monotonic() - started
        result["releases"][release] = {
            "cells": [c.as_dict() for c in cells],
            "seconds": round(seconds, 1), "build_seconds": round(built, 1),
            "writes": [s for s in (storages or STORAGES)
                       if json.loads((folder / s / "release.json").read_text()).get("writes")],
            "unstable": [s for s in (storages or STORAGES)
                         if (folder / s).is_dir() and unstable_for(folder / s)],
        }
        if progress:
            progress(release, cells, seconds)
    return result


def os_cpu_note() -> str:
    """The machine's load, for the record of how long the census took."""
    try:
        one, five, _ = os.getloadavg()
        return f"{os.cpu_count()} cores, load {one:.1f} (1 min) {five:.1f} (5 min)"
    except OSError:  # pragma: no cover
        return f"{os.cpu_count()} cores"


def main(argv: list[str]) -> int:
    """``python -m conformance.census.type_census STAGE FOLDER``: one kit stage over a storage
    version's cases (run by :func:`judge_storage` in a child process)."""
    if len(argv) == 3 and argv[1] in KIT_STAGES:
        _kit_stage(argv[1], Path(argv[2]))
        return 0
    return 2


if __name__ == "__main__":
    import sys

    sys.exit(main(sys.argv))
