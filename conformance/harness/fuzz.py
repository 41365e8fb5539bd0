"""Property-based testing of an implementation: generated operation scripts, judged by the
model of :mod:`conformance.harness.scenarios`, failures shrunk by hypothesis.

Roles (``lance-conformance fuzz --role``):

A script may hold ``merge_insert`` steps (conditions over ``target.``/``source.`` columns and
``NOT MATCHED BY SOURCE`` filters drawn by :mod:`conformance.strategies.predicates`) and
``read`` steps, filtered reads the adapter judged makes (feature ``filtered-read``): in the
writer role at the latest version while it writes, in the reader role at the version each
step follows; each must return the model's rows for its filter (``HARNESS-011``). A failing
filter shrinks toward the simplest test that still fails.

* **writer** -- the adapter applies a generated script one operation at a time; the
  validator judges every version (no error-severity finding), the reference reader reads
  every version, and rows (and, with stable row ids, ``_rowid``), versions and tags must be
  the model's (checks ``HARNESS-001`` to ``HARNESS-005`` of :mod:`.runner`);
* **reader** -- the reference writer writes the script; the adapter reads every version and
  must return the model's rows (``HARNESS-002``/``HARNESS-003``; row ids when it declares
  ``row_ids`` and the table has stable row ids);

a blob column reads as descriptors, so its bytes are compared through ``take_blobs`` (when
the reader declares the feature ``blobs``) instead of in the rows;
* **both** -- each example is run in both roles.

What is generated follows the adapter's declared capabilities
(:func:`options_for`): only declared operations, column kinds (``Capabilities.types``) and
storage versions (``Capabilities.storage_versions``), V1 manifest names only with the feature
``v1-names``; ``storage:<version>`` features, when an adapter has them, name its storage
versions too. Column kinds with a known problem in the kit itself (:data:`KIT_EXCLUDED_KINDS`)
are left out unless asked for.

A failing example is shrunk by hypothesis to a minimal script and table and can be saved as
a self-contained *case file* (JSON: the script with its rows inline, the seed, the expected
rows of every version as Arrow IPC, the rule ids and messages) that :func:`replay_case`
(``lance-conformance run --case FILE``) runs again and ``lance-conformance fixtures
from-case`` turns into a golden fixture. The same seed gives the same examples.
"""

from __future__ import annotations

import base64
import hashlib
import json
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa

from . import runner
from . import scenarios as sc
from .adapter import Adapter, Unsupported

ROLES = ("writer", "reader", "both")
CASE_FORMAT = "lance-conformance-fuzz-case/1"

# Kinds the kit itself cannot round-trip yet; left out by default (``include_kinds``).
# (``dictionary`` was here until the reference writer wrote Arrow dictionary columns as
# pylance 14.0.2 does; none is left out at present.)
KIT_EXCLUDED_KINDS: dict[str, str] = {}


@dataclass
class Finding:
    """What went wrong with one script."""

    role: str
    rules: list[str]
    messages: list[str]
    kit_bug: bool = False  # the kit (reference writer or reader) disagrees with its model

    def as_dict(self) -> dict:
        return {"role": self.role, "rules": sorted(self.rules), "messages": self.messages,
                "kit_bug": self.kit_bug}

    def summary(self) -> str:
        rules = f"[{', '.join(sorted(self.rules))}] " if self.rules else ""
        kit = "(kit bug) " if self.kit_bug else ""
        return f"{self.role}: {kit}{rules}{'; '.join(self.messages[:3])}"


@dataclass
class FuzzResult:
    impl: str
    role: str
    seed: int
    examples: int = 0
    unsupported: int = 0
    known: int = 0                        # scripts failing only rules of ``known_rules``
    shrink_steps: int = 0
    elapsed_s: float = 0.0
    script: list[dict] | None = None      # the minimal failing script
    finding: Finding | None = None
    model: sc.Model | None = None
    saved: Path | None = None
    options: dict = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.finding is None

    def per_minute(self) -> float:
        return 60.0 * self.examples / self.elapsed_s if self.elapsed_s else 0.0

    def summary(self) -> str:
        head = (f"fuzz {self.impl} ({self.role}, seed {self.seed}): {self.examples} examples, "
                f"{self.unsupported} unsupported, "
                + (f"{self.known} failing known rules only, " if self.known else "")
                + f"{self.elapsed_s:.1f} s "
                f"({self.per_minute():.0f}/min)")
        if self.ok:
            return head + ": no failure\n"
        lines = [head + f": FAILED after shrinking ({self.shrink_steps} steps) to "
                 f"{len(self.script)} operation(s)", f"  {self.finding.summary()}"]
        lines += [f"  {i}: {_short(op)}" for i, op in enumerate(self.script)]
        if self.saved:
            lines.append(f"  saved to {self.saved} (replay: lance-conformance run --case "
                         f"{self.saved})")
        return "\n".join(lines) + "\n"


def _short(op: dict) -> str:
    """An operation for a human: inline rows shown by their shape, not their bytes."""
    out = dict(op)
    if isinstance(op.get("data"), dict) and op["data"].get("gen") == "ipc":
        t = sc.table_for(op["data"])
        out["data"] = f"<{t.num_rows} rows: {', '.join(f'{f.name} {f.type}' for f in t.schema)}>"
    return json.dumps(out, ensure_ascii=False)


# -- what to generate ------------------------------------------------------------------------

def options_for(writer: Adapter | None, reader: Adapter | None, *, include_kinds=(),
                max_ops: int = 5, skip_ops=()):
    """The :class:`~conformance.strategies.scripts.ScriptOptions` both adapters can take
    (``writer``/``reader`` None: the reference implementation plays that part)."""
    from conformance.strategies import schemas as S
    from conformance.strategies.scripts import SCRIPT_OPS, ScriptOptions

    ops = [o for o in SCRIPT_OPS if o not in skip_ops]
    kinds = [k for k in S.KINDS if k not in KIT_EXCLUDED_KINDS or k in include_kinds]
    versions = list(S.STORAGE_VERSIONS)
    v1 = True
    from .adapter import FILTERED_READ

    for a in (writer, reader):
        if a is None:
            continue
        caps = a.capabilities
        if a is writer:
            ops = [o for o in ops if o == "read" or caps.supports(o)]
        if FILTERED_READ not in caps.features:  # a read step is made by the adapter judged
            ops = [o for o in ops if o != "read"]
        declared = getattr(caps, "types", None)
        if declared is not None:
            kinds = [k for k in kinds if k in declared]
        declared = getattr(caps, "storage_versions", None)
        if declared is None and any(f.startswith("storage:") for f in caps.features):
            declared = [f.split(":", 1)[1] for f in caps.features if f.startswith("storage:")]
        if declared is not None:
            versions = [v for v in versions if v in declared]
        v1 = v1 and "v1-names" in caps.features
    if not any(k in S.PRIMITIVE_KINDS for k in kinds):
        raise Unsupported("no column kind both sides declare")
    if not versions:
        raise Unsupported("no storage version both sides declare")
    return ScriptOptions(ops=tuple(ops), kinds=tuple(kinds), storage_versions=tuple(versions),
                         v1_names=v1, max_ops=max_ops)


# -- judging one script ----------------------------------------------------------------------

def _fresh(path: Path) -> Path:
    if path.exists():
        shutil.rmtree(path)
    return path


def _blob_columns(t: pa.Table) -> list[str]:
    """The columns of ``t`` marked as blobs (``lance-encoding:blob``)."""
    return [f.name for f in t.schema
            if f.metadata and f.metadata.get(b"lance-encoding:blob") == b"true"]


def rows_problem(reader: Adapter, uri: Path, version: int, want: pa.Table, *,
                 with_row_id: bool) -> str | None:
    """What is wrong with ``reader``'s rows of ``uri`` at ``version`` (None: they are
    ``want``). A blob column reads as descriptors: its bytes are compared through
    ``take_blobs`` when the reader declares the feature ``blobs``, and left out otherwise."""
    got = reader.read(str(uri), version, with_row_id=with_row_id)
    blobs = _blob_columns(want)
    if not blobs:
        return sc.difference(got, want, keep_row_id=with_row_id)
    if [n for n in got.column_names if n != sc.ROW_ID] != \
            [n for n in want.column_names if n != sc.ROW_ID]:
        return f"columns {got.column_names} != expected {want.column_names}"
    diff = sc.difference(got.drop_columns(blobs), want.drop_columns(blobs),
                         keep_row_id=with_row_id)
    if diff or "blobs" not in reader.capabilities.features or not got.num_rows:
        return diff
    ids = got.column("id").to_pylist()
    for name in blobs:
        have = dict(zip(ids, reader.take_blobs(str(uri), version, name, list(range(len(ids)))),
                        strict=True))
        expected = dict(zip(want.column("id").to_pylist(), want.column(name).to_pylist(),
                            strict=True))
        if have != expected:
            bad = sorted(i for i in expected if have.get(i) != expected[i])
            return f"blob column {name!r}: bytes differ at ids {bad[:5]}"
    return None


def judge_reference(uri: Path, model: sc.Model) -> tuple[list[str], list[str]]:
    """Judge a written dataset with the kit: the validator on every version (error-severity
    findings), then versions (``HARNESS-002``) and the data storage version the ``create``
    asked for (``HARNESS-012``), the reference reader's rows and, with stable
    row ids, ``_rowid`` at every version (``HARNESS-003``) and the tags (``HARNESS-005``).
    Returns (rule ids, messages)."""
    from conformance.engine.local import validate

    from .reference import ReferenceAdapter

    found, messages, have = runner.judge_versions(uri, model)
    if have is None:  # nothing written at the uri
        return found, messages
    rules = set(found)
    for v in validate(str(uri), versions="all").violations:
        rules.add(v.rule)
        messages.append(f"{v.rule}: {v.message}")
    ref = ReferenceAdapter()
    row_ids = model.stable_row_ids
    for v in sorted(set(model.versions) & set(have)):
        try:
            diff = rows_problem(ref, uri, v, model.rows(v, with_row_id=row_ids),
                                with_row_id=row_ids)
        except Exception as exc:  # noqa: BLE001
            diff = f"{type(exc).__name__}: {exc}"
        if diff:
            rules.add("HARNESS-003")
            messages.append(f"reference v{v}: {diff}")
    try:
        tags = runner._reference_tags(str(uri))
    except Exception as exc:  # noqa: BLE001
        tags = {"<error>": str(exc)}
    if tags != model.tags:
        rules.add("HARNESS-005")
        messages.append(f"tags {tags} != expected {model.tags}")
    return sorted(rules), messages


def check_writer(adapter: Adapter, script: list[dict], work: Path) -> Finding | None:
    """Judge ``adapter`` writing ``script`` (see the module docstring). Raises Unsupported."""
    from conformance.engine.local import validate

    uri = _fresh(work / "written")
    model, rules, error = runner.run_script(adapter, uri, script)
    if error:
        try:
            rules = sorted(set(rules) | validate(str(uri), versions="all").rules_violated())
        except Exception:  # noqa: BLE001 - nothing readable was left: the error says it all
            pass
        return Finding("writer", list(rules), [error])
    found, messages = judge_reference(uri, model)
    return Finding("writer", found, messages) if found else None


def check_reader(adapter: Adapter, script: list[dict], work: Path) -> Finding | None:
    """Judge ``adapter`` reading what the reference writer makes of ``script``."""
    from .reference import ReferenceAdapter

    uri = _fresh(work / "read")
    ref = ReferenceAdapter()
    model, _, error = runner.run_script(ref, uri, script, reads=False)
    if error:
        return Finding("reader", [], [f"reference writer: {error}"], kit_bug=True)
    messages = []
    rules = set()
    for version, op in model.reads:  # the filtered reads, at the version each was made at
        try:
            problem = runner.filtered_read_problem(adapter, uri, op, model, version)
        except Unsupported:
            raise
        except Exception as exc:  # noqa: BLE001 - the implementation failed this read
            problem = f"read raised {type(exc).__name__}: {exc}"
        if problem:
            rules.add("HARNESS-011")
            messages.append(f"{adapter.name} v{version} filtered read: {problem}")
    try:
        have = adapter.versions(str(uri))
    except Unsupported:
        raise
    except Exception as exc:  # noqa: BLE001
        have = None
        messages.append(f"listing versions raised {type(exc).__name__}: {exc}")
    if have is not None and sorted(have) != sorted(model.versions):
        rules.add("HARNESS-002")
        messages.append(f"versions {sorted(have)} != expected {sorted(model.versions)}")
    row_ids = model.stable_row_ids and adapter.capabilities.row_ids
    for v in sorted(model.versions):
        try:
            diff = rows_problem(adapter, uri, v, model.rows(v, with_row_id=row_ids),
                                with_row_id=row_ids)
        except Unsupported:
            raise
        except Exception as exc:  # noqa: BLE001 - the implementation failed this read
            rules.add("HARNESS-003")
            messages.append(f"{adapter.name} v{v}: read raised {type(exc).__name__}: {exc}")
            continue
        if diff:
            rules.add("HARNESS-003")
            messages.append(f"{adapter.name} v{v}: {diff}")
    if not rules and not messages:
        return None
    # is it the implementation's, or does the kit's own reader disagree with its model too?
    kit = False
    try:
        if judge_reference(uri, model)[0]:
            kit = True
            messages.append("the reference reader or the validator disagrees with the model too")
    except Exception as exc:  # noqa: BLE001
        kit = True
        messages.append(f"judging the reference writer's output failed: {exc}")
    return Finding("reader", sorted(rules), messages, kit_bug=kit)


def check(adapter: Adapter, role: str, script: list[dict], work: Path) -> Finding | None:
    """Judge one script in ``role`` ("writer", "reader" or "both")."""
    if role in ("writer", "both"):
        f = check_writer(adapter, script, work)
        if f is not None:
            return f
    if role in ("reader", "both"):
        return check_reader(adapter, script, work)
    return None


# -- the search ------------------------------------------------------------------------------

class _Failed(AssertionError):
    """Raised inside the property so that hypothesis shrinks the example."""


def _crash(role: str, exc: BaseException) -> Finding:
    """An exception that escaped the checks: the implementation's when it comes from its
    adapter (a panic of a native library), else the kit's own."""
    import traceback

    frames = traceback.extract_tb(exc.__traceback__)
    where = frames[-1].filename if frames else ""
    ours = "/conformance/" in where or "/reference_impl/" in where
    text = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    if ours and not isinstance(exc, Exception):
        ours = False
    return Finding(role, [], [("the kit raised " if ours else "the implementation crashed: ")
                              + text], kit_bug=ours)


def _scratch() -> str | None:
    """A memory-backed folder for the examples' datasets when there is one (``/dev/shm``:
    no disk syncs), else the default temporary folder."""
    import os

    shm = "/dev/shm"
    return shm if os.path.isdir(shm) and os.access(shm, os.W_OK) else None


def _key(script: list[dict]) -> str:
    return hashlib.sha256(json.dumps(script, sort_keys=True).encode()).hexdigest()


def fuzz(adapter: Adapter, *, role: str = "writer", examples: int | None = 100,
         time_budget: float | None = None, seed: int = 0, impl: str | None = None,
         include_kinds=(), skip_ops=(), max_ops: int = 5, known_rules=(),
         shrink_budget: float | None = 120.0,
         progress: Callable[[FuzzResult], None] | None = None,
         work: Path | None = None) -> FuzzResult:
    """Search for a script ``adapter`` gets wrong in ``role``; ``examples`` scripts, or as
    many as fit in ``time_budget`` seconds (then in batches of fixed seeds, so a run is
    still a function of ``seed`` and the number of batches). The first failure is shrunk
    (for at most ``shrink_budget`` seconds; None: as long as hypothesis shrinks, so the
    result does not depend on the machine's speed) and reported in the result.
    ``known_rules``: rule ids of failures already known; a script whose finding names only
    those is counted (``FuzzResult.known``) and the search goes on past it."""
    from hypothesis import HealthCheck, Phase, Verbosity, given, settings
    from hypothesis import seed as hseed

    from conformance.strategies.scripts import scripts

    if role not in ROLES:
        raise ValueError(f"role must be one of {ROLES}")
    writer = adapter if role in ("writer", "both") else None
    reader = adapter if role in ("reader", "both") else None
    if writer is not None and not adapter.capabilities.supports("create"):
        raise Unsupported(f"{adapter.name} does not declare write with the create operation")
    if reader is not None and not adapter.capabilities.read:
        raise Unsupported(f"{adapter.name} does not declare read")
    opts = options_for(writer, reader, include_kinds=include_kinds, max_ops=max_ops,
                       skip_ops=skip_ops)
    result = FuzzResult(impl or adapter.name, role, seed,
                        options={"ops": list(opts.ops), "kinds": list(opts.kinds),
                                 "storage_versions": list(opts.storage_versions)})
    failing: dict[str, tuple[list[dict], Finding, sc.Model | None]] = {}
    state = {"shrinking_since": None, "last": None}
    started = time.monotonic()
    tmp = (tempfile.TemporaryDirectory(prefix="lance-conformance-fuzz-", dir=_scratch())
           if work is None else None)
    root = Path(tmp.name) if tmp else Path(work)

    def prop(script):
        key = _key(script)
        finding = None
        if state["shrinking_since"] is not None:
            result.shrink_steps += 1
            if key in failing:
                finding = failing[key][1]
            elif (shrink_budget is not None
                  and time.monotonic() - state["shrinking_since"] > shrink_budget):
                return  # out of shrinking time: only known failures fail from now on
        elif (time_budget is not None and result.examples
              and time.monotonic() - started > time_budget):
            return  # the time is up (one example at least ran): the rest of the batch passes
        else:
            result.examples += 1
        if finding is None:
            try:
                finding = check(adapter, role, script, root)
            except Unsupported:
                result.unsupported += 1
            except (KeyboardInterrupt, SystemExit):
                raise
            except BaseException as exc:  # noqa: BLE001 - a crash: a Rust panic is no Exception
                finding = _crash(role, exc)
            else:
                if (finding is not None and known_rules and finding.rules
                        and set(finding.rules) <= set(known_rules)):
                    if state["shrinking_since"] is None:
                        result.known += 1
                    finding = None
            finally:
                result.elapsed_s = time.monotonic() - started
                if progress and state["shrinking_since"] is None:
                    progress(result)
        if finding is None:
            return
        failing[key] = (script, finding, None)
        state["last"] = failing[key]
        if state["shrinking_since"] is None:
            state["shrinking_since"] = time.monotonic()
        raise _Failed(finding.summary())  # the one place a failure is raised (hypothesis
        # tells failures apart by where they are raised)

    def run_batch(n: int, batch_seed: int) -> bool:
        test = settings(max_examples=n, database=None, deadline=None, derandomize=False,
                        suppress_health_check=list(HealthCheck), report_multiple_bugs=False,
                        phases=[Phase.generate, Phase.shrink], verbosity=Verbosity.quiet,
                        print_blob=False)(hseed(batch_seed)(given(scripts(opts))(prop)))
        try:
            test()
        except _Failed:
            return True
        except Exception:  # noqa: BLE001 - e.g. hypothesis' Flaky: keep the last failure
            if state["last"] is None:
                raise
            return True
        return False

    try:
        if time_budget is None:
            found = run_batch(int(examples or 100), seed)
        else:
            found, batch = False, 0
            while not found and time.monotonic() - started < time_budget:
                found = run_batch(20, seed * 100_003 + batch)
                batch += 1
        if found and state["last"] is not None:
            result.script, result.finding, _ = state["last"]
            result.model = sc.run_model(result.script)
    finally:
        result.elapsed_s = time.monotonic() - started
        if tmp is not None:
            tmp.cleanup()
    return result


# -- case files ------------------------------------------------------------------------------

def _ipc_b64(t: pa.Table) -> str:
    return sc.inline_data(t)["b64"]


def case_document(result: FuzzResult) -> dict:
    """The self-contained case file of a failed run."""
    script, model = result.script, result.model or sc.run_model(result.script)
    cid = f"fuzz-{result.role}-{_key([result.impl, *script])[:12]}"
    expected = {str(v): {"rows": _ipc_b64(model.rows(v, with_row_id=model.stable_row_ids)),
                         "num_rows": model.versions[v].num_rows}
                for v in sorted(model.versions)}
    return {
        "format": CASE_FORMAT, "id": cid, "impl": result.impl, "role": result.role,
        "seed": result.seed, "script": script,
        "expected": {"versions": expected, "tags": dict(model.tags),
                     "stable_row_ids": model.stable_row_ids},
        "failure": result.finding.as_dict(),
        "replay": "lance-conformance run --case FILE [--impl IMPL]",
    }


def save_case(result: FuzzResult, directory: Path) -> Path:
    doc = case_document(result)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{doc['id']}.json"
    path.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
    result.saved = path
    return path


def load_case(path: Path) -> dict:
    """A case file's document; ValueError when it is not one."""
    try:
        doc = json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise ValueError(f"cannot read case file {path}: {exc}") from None
    if not isinstance(doc, dict) or doc.get("format") != CASE_FORMAT or "script" not in doc:
        raise ValueError(f"{path} is not a {CASE_FORMAT} case file")
    return doc


def expected_rows(doc: dict) -> dict[int, pa.Table]:
    """The expected rows of every version recorded in a case file."""
    return {int(v): pa.ipc.open_stream(pa.py_buffer(base64.b64decode(e["rows"]))).read_all()
            for v, e in doc["expected"]["versions"].items()}


def replay_case(doc: dict, adapter: Adapter, *, role: str | None = None,
                work: Path | None = None) -> Finding | None:
    """Run a case file's script again against ``adapter`` (in the role it was found in,
    unless ``role`` says otherwise)."""
    role = role or doc["role"]
    model = sc.run_model(doc["script"])
    for v, want in expected_rows(doc).items():  # the recorded rows are still the model's
        diff = sc.difference(model.rows(v, with_row_id=model.stable_row_ids), want,
                             keep_row_id=model.stable_row_ids)
        if diff:
            raise ValueError(f"the case's expected rows at v{v} are not the model's: {diff}")
    with tempfile.TemporaryDirectory(prefix="lance-conformance-case-") as tmp:
        return check(adapter, role, doc["script"], Path(work or tmp))


# -- golden fixtures from case files ---------------------------------------------------------

def fixture_from_case(doc: dict, out: Path) -> tuple[Path, list[str]]:
    """Write the case's script with the reference writer as a golden fixture
    ``out/<case id>/`` (the format of ``fixtures/golden/``, see its README): ``table/``,
    ``expected/v{N}.arrow`` (the model's rows, ``_rowid`` included with stable row ids),
    ``expected/versions.json``, ``expected/files.json`` and ``case.json``. Returns the folder
    and warnings (versions where the reference reader disagrees with the model)."""
    from conformance.fixtures import golden

    from .reference import ReferenceAdapter

    if any(_blob_columns(t) for t in expected_rows(doc).values()):
        raise ValueError("a case with blob columns cannot be a golden fixture yet (its reads "
                         "would need descriptors and blobs-v{N}.json)")
    cdir = Path(out) / doc["id"]
    if cdir.exists():
        shutil.rmtree(cdir)
    (cdir / "expected").mkdir(parents=True)
    table = cdir / "table"
    ref = ReferenceAdapter()
    model, _, error = runner.run_script(ref, table, doc["script"])
    if error:
        shutil.rmtree(cdir)
        raise ValueError(f"the reference writer cannot write this case: {error}")
    row_ids = model.stable_row_ids
    reads, versions, warnings = [], {"reads": [], "tags": {}}, []
    tags = golden._tags(table)
    for v in sorted(model.versions):
        want = model.rows(v, with_row_id=row_ids)
        try:
            diff = sc.difference(ref.read(str(table), v, with_row_id=row_ids), want,
                                 keep_row_id=row_ids)
        except Exception as exc:  # noqa: BLE001 - reported, the fixture keeps the model's rows
            diff = f"{type(exc).__name__}: {exc}"
        if diff:
            warnings.append(f"v{v}: the reference reader differs from the model: {diff}")
        name = f"v{v}.arrow"
        golden._write_arrow(cdir / "expected" / name, want)
        reads.append({"id": f"v{v}", "path": ".", "version": v, "rows": name,
                      "row_ids": row_ids})
        versions["reads"].append({"id": f"v{v}", "num_rows": want.num_rows,
                                  "schema": golden._schema_strings(want),
                                  "tags": sorted(n for n, tv in tags.items() if tv == v)})
    versions["tags"] = tags
    spec = [golden.C_FRAGMENTS] + ([golden.C_ROWIDS] if row_ids else [])
    ops = sorted({op["op"] for op in doc["script"]})
    case = {
        "id": doc["id"],
        "title": f"generated by lance-conformance fuzz (seed {doc.get('seed')}, a "
                 f"{doc.get('role')} failure of {doc.get('impl')})",
        "spec": spec, "features": ["fuzz", *ops],
        "producer": golden.PRODUCERS["reference"],
        "table": {"shipped": True}, "expected": {"outcome": "read"}, "reads": reads,
        "script": doc["script"],
    }
    problems = golden.check_case_json(case)
    if problems:
        raise ValueError(f"case.json would not validate: {problems}")
    hits = golden.absolute_paths_in(table, [str(table.resolve())])
    if hits:
        raise ValueError(f"absolute paths stored in {hits}")
    (cdir / "expected" / "versions.json").write_text(
        json.dumps(versions, indent=1, sort_keys=True) + "\n")
    (cdir / "expected" / "files.json").write_text(
        json.dumps(golden.file_hashes(table), indent=1, sort_keys=True) + "\n")
    (cdir / "case.json").write_text(json.dumps(case, indent=1, ensure_ascii=False) + "\n")
    return cdir, warnings
