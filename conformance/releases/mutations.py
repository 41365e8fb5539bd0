"""Damaged copies of the cross-release corpus, judged against the newest release.

The corpus holds tables every release wrote and read back; this module damages them the way
disks, copies and buggy writers do, and asks what the kit says about the damage compared
with pylance 14.0.2 (``lance-conformance fixtures mutate``). One *mutation* copies one table
root and changes one of its files with one of :data:`KINDS`. Which files may be chosen is
the campaign's *targets* (:data:`TARGETS`): data files by default, or the manifests (all, or
only the ``latest`` one, which the readers open), deletion files, transaction files or index
files, or any file of the table:

* ``flip``: 1-4 random bits anywhere in the file;
* ``tail-flip``: 1-2 random bits in the last 4 KiB (footer, offset tables, column metadata);
* ``zero``: 1-16 bytes set to zero, the first of them not zero before;
* ``truncate``: 1-64 bytes cut off the end;
* ``field`` (only when asked for, see :func:`edit_field`): one field of a protobuf message a
  manifest, transaction file or 2.x Lance file (its column metadata, and the encodings its
  pages pack in an ``Any``) holds gets another value of the same encoded size (a row count, a
  field id, a path, a buffer offset, a bit width...), so the file still parses and only what
  it says changes. A file that holds no such message gets a
  ``flip`` instead.

Both sides then read the copy, each in a process of its own with a time limit: the kit runs
``validate --deep`` and ``open_dataset(...).to_table()`` (with an address-space limit, since
bytes from disk must never make it allocate without bound); pylance reads
``lance.dataset(...).to_table()``. The :func:`verdict` of a mutation:

* ``problem``: the kit crashed, hung, ran out of its memory limit, raised an untyped error,
  or its validator failed internally (an ``ENGINE`` finding) -- always a bug of the kit;
* ``misread``: both read the copy, the kit's validator draws no new error, and the rows differ;
* ``lenient``: pylance refuses the copy, the kit reads it and its validator draws no new error --
  either the kit misses damage or pylance is stricter than the spec; each needs a look;
* ``stricter``: pylance reads the copy, the kit refuses it or reports an error -- usually
  damage pylance does not notice (its rows then differ from the undamaged table's);
* ``agree``: otherwise (both refuse, or both read the same rows, or the kit flags what it
  reads).

Each verdict is taken against the undamaged root (:class:`Baseline`): error findings the
kit already draws there (a release's known deviation) do not count as new, and where
pylance 14.0.2 refuses the undamaged root (data only its writer reads), its refusal of a
copy is no evidence, so only a ``problem`` can come of it.

The same seed gives the same mutations of the same corpus.
"""

from __future__ import annotations

import json
import random
import resource
import shutil
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc

KINDS = ("flip", "tail-flip", "zero", "truncate")
#: every kind a campaign may ask for; :data:`KINDS` are the default ones
ALL_KINDS = KINDS + ("field",)
#: the files of a table root a mutation may damage, by target name (globs under the root)
TARGETS = {
    "data": ("data/*.lance",),
    "manifest": ("_versions/*.manifest", "_latest.manifest"),
    "deletion": ("_deletions/*",),
    "transaction": ("_transactions/*",),
    "index": ("_indices/**/*",),
    "latest": (),  # the manifest of the version a reader opens (found, not globbed)
}
ANY_TARGET = "any"
VERDICTS = ("problem", "misread", "lenient", "stricter", "agree")
#: the verdicts that fail a campaign (``stricter`` is listed for review only)
FAILING = ("problem", "misread", "lenient")
TAIL_BYTES = 4096
MEMORY_LIMIT = 4 << 30  # address space of the kit's judging process
TIMEOUT = 300.0  # seconds per judging process

#: Run with the reader's Python: read the dataset with pylance, write its rows as an IPC stream.
_PYLANCE_READ = r"""
import json, sys
import pyarrow.ipc as ipc
root, out = sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None
try:
    import lance
    table = lance.dataset(root).to_table()
except Exception as exc:
    print(json.dumps({"read": False, "error": f"{type(exc).__name__}: {str(exc)[:300]}"}))
else:
    if out:  # (a stream: dictionaries may change from batch to batch)
        with ipc.new_stream(out, table.schema) as w:
            w.write_table(table)
    print(json.dumps({"read": True}))
"""


@dataclass
class Mutation:
    """One damaged copy: the root it came from, the file and how it was changed."""

    source: str
    root: str
    file: str  # relative to the root: data/<name>.lance, _versions/<n>.manifest ...
    kind: str
    offsets: list[int] = field(default_factory=list)
    detail: str = ""  # for a ``field`` edit: which field, old -> new value


@dataclass
class Outcome:
    """What one side made of a damaged copy."""

    read: bool = False
    error: str = ""  # the refusal ("RuleError: message") or the crash
    untyped: bool = False  # the kit raised something other than its typed errors
    crashed: bool = False  # non-zero exit, signal, time limit or memory limit
    findings: list[str] = field(default_factory=list)  # error rule ids of validate --deep
    engine: list[str] = field(default_factory=list)  # ENGINE findings: the validator failed


@dataclass
class Baseline:
    """The undamaged root: the error rules the kit already finds there (a release's known
    deviation) and whether pylance reads it (where it does not, its refusal of a damaged copy
    says nothing about the damage)."""

    known: list[str] = field(default_factory=list)
    pylance_reads: bool = True


@dataclass
class Judged:
    mutation: Mutation
    kit: Outcome
    pylance: Outcome
    rows_differ: str
    verdict: str
    baseline: Baseline


def target_files(root: Path, targets=("data",)) -> list[Path]:
    """The files of ``root`` that the ``targets`` (names of :data:`TARGETS`, or ``any`` for
    every file of the table) let a mutation damage, in a fixed order."""
    if ANY_TARGET in targets:
        return sorted(p for p in root.rglob("*") if p.is_file())
    found = {p for t in targets for pattern in TARGETS[t] for p in root.glob(pattern)
             if p.is_file()}
    if "latest" in targets:
        from reference_impl.errors import LanceError
        from reference_impl.io.local import LocalStore
        from reference_impl.table.versions import latest_entry

        try:
            found.add(root / latest_entry(LocalStore(root)).key)
        except LanceError:
            pass  # no readable version: nothing to damage there
    return sorted(found)


def corpus_roots(corpus: Path, releases=None, targets=("data",)) -> list[Path]:
    """The table roots of the corpus that hold data files, a version and at least one file of
    the ``targets``, in a fixed order."""
    roots = []
    for rel in sorted(p for p in corpus.iterdir() if p.is_dir()):
        if releases and rel.name not in releases:
            continue
        for table in sorted(rel.glob("*/table")):
            if (any(table.glob("data/*.lance")) and any(table.glob("_versions/*"))
                    and target_files(table, targets)):
                roots.append(table)
    return roots


def _message_regions(path: Path, data: bytes) -> list:
    """``[(start, end, message class)]`` of the protobuf messages a file holds: the manifest
    of a manifest file, the transaction of a transaction file, the column metadata of a
    2.x Lance file (found through its footer's offset table); empty for other files."""
    import struct

    from reference_impl.file.container import FOOTER, FOOTER_SIZE, MAGIC
    from reference_impl.proto import file2_pb2, table_pb2, transaction_pb2

    if path.suffix == ".txn":
        return [(0, len(data), transaction_pb2.Transaction)]
    if path.suffix == ".manifest" and len(data) >= 16:
        pos = struct.unpack_from("<Q", data, len(data) - 16)[0]
        if pos + 4 <= len(data) - 16:
            (n,) = struct.unpack_from("<I", data, pos)
            if pos + 4 + n <= len(data) - 16:
                return [(pos + 4, pos + 4 + n, table_pb2.Manifest)]
    if path.suffix in (".lance", ".idx") and len(data) >= FOOTER_SIZE and data[-4:] == MAGIC:
        end = len(data) - FOOTER_SIZE
        _cm, cmo, _gbo, _ng, ncols, major, minor, _magic = FOOTER.unpack_from(data, end)
        if (major, minor) == (0, 3) or major >= 2:
            out = []
            for c in range(min(ncols, 4096)):
                at = cmo + 16 * c
                if at + 16 > end:
                    break
                start, size = struct.unpack_from("<QQ", data, at)
                if size and start + size <= end:
                    out.append((start, start + size, file2_pb2.ColumnMetadata))
            return out
    return []


def _leaves(msg, prefix: str = "", repack: tuple = ()):
    """``(message, field, index, name, repack)`` of every scalar value set in ``msg``, nested
    messages walked (map fields left out).

    A ``google.protobuf.Any`` whose type URL names a message the kit knows (the page and
    column encodings of Lance files) is walked too, as the message it packs; ``repack`` then
    holds the steps that write an edited inner message back into its ``Any`` values, innermost
    first. An ``Any`` whose bytes do not re-encode to themselves is left as bytes."""
    for fd, value in msg.ListFields():
        name = prefix + fd.name
        repeated = fd.is_repeated
        if fd.type == fd.TYPE_MESSAGE:
            if fd.message_type.GetOptions().map_entry:
                continue
            for i, sub in enumerate(value if repeated else [value]):
                at = f"{name}[{i}]" if repeated else name
                yield from _leaves(sub, at + ".", repack)  # an Any's type URL and raw bytes too
                if fd.message_type.full_name == ANY:
                    yield from _packed_leaves(sub, at, repack)
        elif (msg.DESCRIPTOR.full_name, fd.name) in SERIALIZED_ANY and not repeated:
            yield msg, fd, None, name, repack  # the bytes as bytes
            outer = _any_of(value)
            if outer is not None:

                def store(msg=msg, fd=fd, outer=outer):
                    setattr(msg, fd.name, outer.SerializeToString(deterministic=True))

                yield from _packed_leaves(outer, name, (store, *repack))
        else:
            for i in range(len(value)) if repeated else [None]:
                yield msg, fd, i, f"{name}[{i}]" if repeated else name, repack


def _packed_leaves(any_msg, at: str, repack: tuple):
    """The leaves of the message ``any_msg`` packs (none when :func:`_unpacked` gives None),
    each with a first repack step that writes the edited message back into ``any_msg``."""
    inner = _unpacked(any_msg)
    if inner is None:
        return

    def write_back():
        any_msg.value = inner.SerializeToString(deterministic=True)

    yield from _leaves(inner, f"{at}<{inner.DESCRIPTOR.name}>.", (write_back, *repack))


ANY = "google.protobuf.Any"
#: bytes fields that hold a serialized ``Any``: a 2.x file's direct page and column encodings
SERIALIZED_ANY = {("lance.file.v2.DirectEncoding", "encoding")}


def _any_of(raw: bytes):
    """``raw`` parsed as a ``google.protobuf.Any`` that re-encodes to itself, else None."""
    from google.protobuf import any_pb2
    from google.protobuf.message import DecodeError

    try:
        outer = any_pb2.Any.FromString(raw)
    except DecodeError:
        return None
    return outer if outer.type_url and outer.SerializeToString(deterministic=True) == raw else None


def _unpacked(any_msg):
    """The message an ``Any`` packs, when its type URL names one of the kit's protobuf
    messages and its bytes re-encode to themselves; else None."""
    from google.protobuf import descriptor_pool, message_factory
    from google.protobuf.message import DecodeError

    # the modules that register the messages a Lance file packs in an Any
    from reference_impl.proto import (  # noqa: F401
        encodings_v2_0_pb2,
        encodings_v2_1_pb2,
        encodings_v2_3_pb2,
    )

    name = any_msg.type_url.rsplit("/", 1)[-1]
    try:
        cls = message_factory.GetMessageClass(
            descriptor_pool.Default().FindMessageTypeByName(name))
    except KeyError:
        return None
    try:
        inner = cls.FromString(any_msg.value)
    except DecodeError:
        return None
    return inner if inner.SerializeToString(deterministic=True) == any_msg.value else None


def _other_values(fd, old, rng: random.Random) -> list:
    """Values to try in place of ``old``, nearest first: a change by one, zero, a
    doubling, then random values."""
    if fd.type == fd.TYPE_BOOL:
        return [not old]
    if fd.type == fd.TYPE_ENUM:
        return [v.number for v in fd.enum_type.values if v.number != old]
    if fd.type in (fd.TYPE_STRING, fd.TYPE_BYTES):
        raw = bytearray(old.encode() if isinstance(old, str) else old)
        if not raw:
            return []
        out = []
        for _ in range(4):
            edited = bytearray(raw)
            at = rng.randrange(len(edited))
            if isinstance(old, str):
                edited[at] = ord(rng.choice("abcdefghijklmnopqrstuvwxyz0123456789-_/."))
            else:
                edited[at] ^= 1 << rng.randrange(8)
            if edited != raw:
                out.append(edited.decode(errors="replace") if isinstance(old, str) else bytes(edited))
        return out
    if fd.type in (fd.TYPE_FLOAT, fd.TYPE_DOUBLE):
        return [old + 1.0, 0.0, -old, float("nan")]
    unsigned = fd.type in (fd.TYPE_UINT32, fd.TYPE_UINT64, fd.TYPE_FIXED32, fd.TYPE_FIXED64)
    bits = 32 if fd.type in (fd.TYPE_INT32, fd.TYPE_UINT32, fd.TYPE_SINT32, fd.TYPE_FIXED32,
                             fd.TYPE_SFIXED32) else 64
    lo, hi = (0, (1 << bits) - 1) if unsigned else (-(1 << (bits - 1)), (1 << (bits - 1)) - 1)
    cands = [old + 1, old - 1, 0, old * 2, -1] + [rng.randint(lo, hi) for _ in range(4)]
    return [v for v in dict.fromkeys(cands) if lo <= v <= hi and v != old]


def edit_field(path: Path, data: bytes, rng: random.Random) -> tuple[bytes, int, str] | None:
    """``(new bytes, offset of the message, "field: old -> new")``: one scalar field of a
    message the file holds (:func:`_message_regions`) set to another value whose encoding has
    the same size, so the message is spliced back in place and every other byte stays. None
    when the file holds no such message, the message does not parse, or re-encoding it does
    not give back its bytes (another writer's field order, or map entries in an order other
    than by key: messages are encoded deterministically, so a seed always picks the same
    edits)."""
    from google.protobuf.message import DecodeError

    regions = _message_regions(path, data)
    if not regions:
        return None
    start, end, cls = rng.choice(regions)
    raw = bytes(data[start:end])
    try:
        msg = cls.FromString(raw)
    except DecodeError:
        return None
    if msg.SerializeToString(deterministic=True) != raw:
        return None
    leaves = list(_leaves(msg))
    rng.shuffle(leaves)
    for owner, fd, i, name, repack in leaves:
        old = getattr(owner, fd.name)[i] if i is not None else getattr(owner, fd.name)
        for new in _other_values(fd, old, rng):
            _set(owner, fd, i, new)
            for step in repack:
                step()
            edited = msg.SerializeToString(deterministic=True)
            if len(edited) == len(raw):
                return (bytes(data[:start]) + edited + bytes(data[end:]), start,
                        f"{name}: {_shown(old)} -> {_shown(new)}")
            _set(owner, fd, i, old)
            for step in repack:
                step()
    return None


def _set(owner, fd, i, value) -> None:
    """Set field ``fd`` of ``owner`` (element ``i`` of it when repeated) to ``value``."""
    if i is not None:
        getattr(owner, fd.name)[i] = value
    else:
        setattr(owner, fd.name, value)


def _shown(value) -> str:
    return repr(value)[:60] if isinstance(value, bytes | str) else str(value)


def mutate(source: Path, dest: Path, rng: random.Random, targets=("data",),
           kinds=KINDS) -> Mutation:
    """Copy ``source`` to ``dest`` and damage one of its files of the ``targets`` in one of
    the ``kinds``."""
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(source, dest)
    files = target_files(dest, targets)
    target = rng.choice(files)
    data = bytearray(target.read_bytes())
    kind = rng.choice(kinds)
    offsets: list[int] = []
    if kind == "field":
        edited = edit_field(target, bytes(data), rng)
        if edited is not None:
            new, at, detail = edited
            target.write_bytes(new)
            return Mutation(str(source), str(dest), target.relative_to(dest).as_posix(), kind,
                            [at], detail)
        kind = "flip"
    if not data:
        kind = "truncate"
    elif kind in ("flip", "tail-flip"):
        lo = max(0, len(data) - TAIL_BYTES) if kind == "tail-flip" else 0
        for _ in range(rng.randint(1, 2 if kind == "tail-flip" else 4)):
            at = rng.randrange(lo, len(data))
            data[at] ^= 1 << rng.randrange(8)
            offsets.append(at)
    elif kind == "zero":  # a run that starts on a byte that is not zero already
        nonzero = np.flatnonzero(np.frombuffer(bytes(data), np.uint8))
        at = int(nonzero[rng.randrange(len(nonzero))]) if len(nonzero) else 0
        end = min(len(data), at + rng.randint(1, 16))
        data[at:end] = bytes(end - at)
        offsets.append(at)
    if kind == "truncate":
        cut = min(len(data), rng.randint(1, 64))
        offsets.append(len(data) - cut)
        del data[len(data) - cut:]
    target.write_bytes(bytes(data))
    return Mutation(str(source), str(dest), target.relative_to(dest).as_posix(), kind, offsets)


def verdict(kit: Outcome, theirs: Outcome, rows_differ: str, base: Baseline | None = None) -> str:
    """The verdict of one mutation (module docstring), given the undamaged root's
    :class:`Baseline`."""
    base = base or Baseline()
    if kit.crashed or kit.untyped or kit.engine:
        return "problem"
    if not base.pylance_reads:
        return "agree"  # pylance refuses the root undamaged: no oracle for its copies
    new = [f for f in kit.findings if f not in base.known]
    flagged = bool(new) or not kit.read
    if kit.read and theirs.read and rows_differ and not new:
        return "misread"
    if not theirs.read and kit.read and not new:
        return "lenient"
    if theirs.read and flagged:
        return "stricter"
    return "agree"


def judge_with_kit(root: str, rows_out: str | None = None) -> Outcome:
    """The kit's side, in this process: ``validate --deep`` and a full read, whose rows go to
    the IPC stream file ``rows_out`` when given."""
    from conformance.engine import local
    from reference_impl import open_dataset
    from reference_impl.errors import LanceError

    out = Outcome()
    try:
        report = local.validate(root, deep=True, timeout=TIMEOUT / 2)
        out.findings = sorted({v.rule for v in report.violations if v.severity == "error"})
        out.engine = [f"{v.rule}: {v.message[:200]}" for v in report.violations
                      if v.rule.startswith("ENGINE")]
    except LanceError as exc:
        out.findings = [getattr(exc, "rule", None) or type(exc).__name__]
    except Exception as exc:  # noqa: BLE001 - an untyped error is the finding
        out.untyped, out.error = True, f"validate: {type(exc).__name__}: {exc}"[:400]
        return out
    try:
        table = open_dataset(root).to_table()
    except LanceError as exc:
        out.error = f"{type(exc).__name__}: {exc}"[:400]
    except Exception as exc:  # noqa: BLE001 - an untyped error is the finding
        out.untyped, out.error = True, f"read: {type(exc).__name__}: {exc}"[:400]
    else:
        out.read = True
        if rows_out:  # an IPC stream: dictionaries may change from batch to batch
            with ipc.new_stream(rows_out, table.schema) as w:
                w.write_table(table)
    return out


def _run(cmd: list[str], limit_memory: bool) -> tuple[dict | None, str]:
    def limits():
        if limit_memory:
            resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))

    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT,
                              preexec_fn=limits)
    except subprocess.TimeoutExpired:
        return None, f"no answer within {TIMEOUT:.0f} s"
    if done.returncode != 0:
        tail = (done.stderr or "").strip().splitlines()[-3:]
        return None, f"exit {done.returncode}: {' | '.join(tail)}"[:400]
    return json.loads(done.stdout.strip().splitlines()[-1]), ""


def _kit(root: str, rows_out: str | None = None) -> Outcome:
    cmd = [sys.executable, "-m", "conformance.releases.mutations", "kit", root]
    doc, crash = _run(cmd + ([rows_out] if rows_out else []), True)
    return Outcome(**doc) if doc else Outcome(crashed=True, error=crash)


def _pylance(reader_python: str, root: str, rows_out: str | None = None) -> Outcome:
    cmd = [reader_python, "-c", _PYLANCE_READ, root]
    doc, crash = _run(cmd + ([rows_out] if rows_out else []), False)
    return Outcome(read=doc["read"], error=doc.get("error", "")) if doc else \
        Outcome(crashed=True, error=crash)


def baseline(source: Path, reader_python: str) -> Baseline:
    """The :class:`Baseline` of an undamaged root."""
    return Baseline(_kit(str(source)).findings, _pylance(reader_python, str(source)).read)


def judge(mutation: Mutation, reader_python: str, base: Baseline | None = None) -> Judged:
    """Both sides read the damaged copy, each in a process of its own."""
    root = mutation.root
    base = base or Baseline()
    kit = _kit(root, root + ".kit.arrows")
    theirs = _pylance(reader_python, root, root + ".pylance.arrows")
    differ = ""
    if kit.read and theirs.read:
        from .corpus import table_difference

        differ = table_difference(_load(root + ".pylance.arrows"), _load(root + ".kit.arrows"))
    for suffix in (".kit.arrows", ".pylance.arrows"):
        Path(root + suffix).unlink(missing_ok=True)
    return Judged(mutation, kit, theirs, differ, verdict(kit, theirs, differ, base), base)


def _load(path: str) -> pa.Table:
    with pa.memory_map(path) as source:
        return ipc.open_stream(source).read_all()


def campaign(roots: list[Path], count: int, seed: int, work: Path, reader_python: str,
             progress=None, targets=("data",), kinds=KINDS):
    """Yield ``count`` judged mutations of randomly chosen ``roots``, each damaging one file of
    the ``targets``; the copies of those whose verdict is ``agree`` are removed, the others
    kept under ``work`` for a look."""
    rng = random.Random(seed)
    work.mkdir(parents=True, exist_ok=True)
    bases: dict[Path, Baseline] = {}  # each undamaged root's, found once
    for i in range(count):
        source = rng.choice(roots)
        m = mutate(source, work / f"m{i:05d}", rng, targets, kinds)
        if source not in bases:
            bases[source] = baseline(source, reader_python)
        j = judge(m, reader_python, bases[source])
        if j.verdict == "agree":
            shutil.rmtree(m.root, ignore_errors=True)
        if progress:
            progress(i, j)
        yield j


def as_json(j: Judged) -> dict:
    return asdict(j)


def main(argv: list[str]) -> int:
    """``python -m conformance.releases.mutations kit ROOT [ROWS_OUT]``: the kit's side of one
    copy, printed as JSON."""
    if len(argv) not in (2, 3) or argv[0] != "kit":
        print("usage: python -m conformance.releases.mutations kit ROOT [ROWS_OUT]", file=sys.stderr)
        return 2
    print(json.dumps(asdict(judge_with_kit(*argv[1:]))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
