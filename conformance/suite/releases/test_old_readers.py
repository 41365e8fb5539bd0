"""What older releases make of the files our writer writes (``-m compat``; CI runs it).

"What we write, pylance must read identically": the golden fixtures are small, so the compat
matrix never shows an older release a column of our writer that spans several pages, nor a
page of more than 65,536 levels: our writer leaves a nullable column of that many rows as one
page (as pylance 14.0.2's ``write_dataset`` does) and cuts list pages at 2^20 levels, where
14.0.2 cuts them at 65,536 (``column.MAX_LEVELS_PER_PAGE``). Here one table of
150,000 rows is written at 2.0, 2.1 and 2.2 by our writer and by pylance 14.0.2, as a
standalone file and as a dataset, and each release of the CI subset reads both copies in its
own virtualenv. Our copy must read exactly as pylance 14.0.2's copy does in that release:
equal to the table where it reads that one, refused (or crashed) where it refuses that one,
and never a different table.
"""

from __future__ import annotations

import json
import subprocess

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc
import pytest

from conformance.releases import corpus
from conformance.releases.venvs import Release, ReleaseUnavailable, ensure_venv
from conformance.suite.parts import unavailable
from reference_impl.file.reader import LanceFileReader
from reference_impl.file.writer import write_lance_file
from reference_impl.io.local import LocalStore
from reference_impl.write import write_dataset

VERSIONS = ("2.0", "2.1", "2.2")
ROWS = 150_000

#: Run by each release's Python on one copy: print its outcome ("equal", "different" or
#: "refused") as JSON. One copy per process, since an old release may abort the whole
#: process on a file it cannot read.
_READ_ONE = r"""
import json, sys
import pyarrow.ipc as ipc
kind, path, expected = sys.argv[1:4]
want = ipc.open_file(expected).read_all()
try:
    if kind == "file":
        from lance.file import LanceFileReader
        got = LanceFileReader(path).read_all().to_table()
    else:
        import lance
        got = lance.dataset(path).to_table()
    print(json.dumps("equal" if got.equals(want) else "different"))
except Exception as exc:  # the release refuses it: the outcome, not a failure of this script
    print(json.dumps("refused"))
"""


def _table() -> pa.Table:
    rng = np.random.default_rng(11)
    n = ROWS
    ints = rng.integers(0, 1 << 40, n)
    return pa.table({
        "i": pa.array([None if k % 7 == 0 else int(x) for k, x in enumerate(ints)], pa.int64()),
        "s": pa.array([None if k % 5 == 0 else f"value-{k}-{k % 977}" for k in range(n)]),
        "f": pa.array([None if k % 3 == 0 else k / 8 for k in range(n)]),
        "b": pa.array([None if k % 11 == 0 else bool(k % 2) for k in range(n)]),
        "l": pa.array([None if k % 9 == 0 else list(range(k % 4)) for k in range(n)],
                      pa.list_(pa.int32())),
        "st": pa.array([{"a": None if k % 13 == 0 else k, "b": str(k % 100)} for k in range(n)],
                       pa.struct([("a", pa.int32()), ("b", pa.string())])),
    })


@pytest.fixture(scope="module")
def copies(pylance, tmp_path_factory):
    """``{(writer, kind, version): path}`` and the expected table's IPC file."""
    root = tmp_path_factory.mktemp("old-readers")
    table = _table()
    expected = root / "expected.arrow"
    with ipc.new_file(str(expected), table.schema) as w:
        w.write_table(table)
    out = {}
    for v in VERSIONS:
        ours, theirs = root / "ours", root / "pylance"
        ours.mkdir(exist_ok=True)
        theirs.mkdir(exist_ok=True)
        write_lance_file(LocalStore(str(ours)), f"f{v}.lance", table, version=v)
        if v != "2.0":  # the list column is one page of more than 65,536 levels
            pages = LanceFileReader(LocalStore(str(ours)), f"f{v}.lance").container.columns[4].pages
            assert [p.length for p in pages] == [ROWS]
        write_dataset(table, str(ours / f"ds{v}"), data_storage_version=v)
        with pylance.file.LanceFileWriter(str(theirs / f"f{v}.lance"), table.schema,
                                          version=v) as w:
            w.write_batch(table)
        pylance.write_dataset(table, str(theirs / f"ds{v}"), data_storage_version=v)
        for writer, folder in (("ours", ours), ("pylance", theirs)):
            out[(writer, "file", v)] = folder / f"f{v}.lance"
            out[(writer, "dataset", v)] = folder / f"ds{v}"
    return out, expected


def _outcome(python, kind: str, path, expected) -> str:
    done = subprocess.run([str(python), "-c", _READ_ONE, kind, str(path), str(expected)],
                          capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        return "crashed"  # a panic that aborts the process: the release refuses it too
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.compat
@pytest.mark.parametrize("release", corpus.QUICK_WRITERS)
def test_old_releases_read_our_files_as_they_read_pylance_files(copies, release):
    paths, expected = copies
    try:
        python = ensure_venv(Release.parse(release))
    except ReleaseUnavailable as exc:
        unavailable(release, str(exc))
    seen = {}
    for kind in ("file", "dataset"):
        for v in VERSIONS:
            ours = _outcome(python, kind, paths[("ours", kind, v)], expected)
            theirs = _outcome(python, kind, paths[("pylance", kind, v)], expected)
            seen[f"{kind} {v}"] = (ours, theirs)
    refusal = {"refused", "crashed"}
    bad = {k: o for k, o in seen.items()
           if o[0] == "different" or (o[0] == "equal") != (o[1] == "equal")
           or (o[0] in refusal) != (o[1] in refusal)}
    assert not bad, f"{release} (ours, pylance 14.0.2's copy): {bad}"
    # not a vacuous pass: the releases that know 2.0 and 2.1 (stable from 0.38) read both
    # copies; 14.0.2 reads everything. (0.10.18 refuses or aborts on every copy, its own
    # 2.0 reader predating the stable format.)
    if Release.parse(release).version_tuple >= (0, 38):
        for key in ("file 2.0", "file 2.1", "dataset 2.0", "dataset 2.1"):
            assert seen[key] == ("equal", "equal"), (release, key, seen[key])
    if release == "pylance==14.0.2":
        assert all(o == ("equal", "equal") for o in seen.values()), seen
