"""``lance-conformance validate FILE.lance``: one Lance file judged on its own.

Positive: files written by pylance 14.0.2's ``LanceFileWriter`` at every stable version, by
the reference writer, and a legacy data file out of a pylance dataset conform, on local disk
and on every store. Negative: a truncated tail, table offsets past the footer, garbage in a
page are each reported under their FILE/ENC rule with the file and offset; no mutation of a
file's bytes makes the validator raise or report ENGINE-001.
"""

from __future__ import annotations

import glob
import random
import subprocess
import sys

import pyarrow as pa
import pytest

from conformance.engine.file import is_lance_file, validate_file
from reference_impl.file.writer import write_lance_file
from reference_impl.io import open_store


def _table(n: int = 300, version: str = "2.1") -> pa.Table:
    """Every family of type, with nulls (2.0 stores no struct validity: none there)."""
    struct_nulls = version != "2.0"
    return pa.table({
        "i64": pa.array([i if i % 7 else None for i in range(n)], pa.int64()),
        "f32": pa.array([i / 3 for i in range(n)], pa.float32()),
        "s": pa.array([None if i % 11 == 0 else f"s{i}é" for i in range(n)]),
        "bin": pa.array([bytes([i % 256]) * (i % 5) for i in range(n)], pa.binary()),
        "lst": pa.array([[j for j in range(i % 4)] if i % 9 else None for i in range(n)],
                        pa.list_(pa.int32())),
        "st": pa.array([{"a": i, "b": str(i)} if i % 13 or not struct_nulls else None
                        for i in range(n)],
                       pa.struct([("a", pa.int64()), ("b", pa.string())])),
        "fsl": pa.FixedSizeListArray.from_arrays(pa.array(range(n * 4), pa.float32()), 4),
        "d": pa.array([["x", "y", "z"][i % 3] for i in range(n)]).dictionary_encode(),
    })


def _report(path) -> list[str]:
    r = validate_file(str(path))
    return [f"{f.rule}: {f.message}" for f in r.findings]


@pytest.mark.parametrize("version", ["2.0", "2.1", "2.2"])
def test_pylance_files_conform(pylance, tmp_path, version):
    from lance.file import LanceFileReader, LanceFileWriter

    path = tmp_path / f"f{version}.lance"
    t = _table(version=version)
    with LanceFileWriter(str(path), version=version, schema=t.schema) as w:
        w.write_batch(t)
    assert pylance.__version__ == "14.0.2"
    assert LanceFileReader(str(path)).read_all().to_table().num_rows == t.num_rows
    assert is_lance_file(str(path))
    assert _report(path) == []


@pytest.mark.parametrize("version", ["2.0", "2.1", "2.2"])
def test_reference_writer_files_conform(tmp_path, version):
    write_lance_file(open_store(str(tmp_path)), "r.lance", _table(version=version),
                     version=version)
    r = validate_file(str(tmp_path / "r.lance"))
    assert r.conforms and not r.findings, [f.message for f in r.findings]
    assert "FILE-001" in r.rules_checked and "ENC-041" in r.rules_checked


def test_a_legacy_data_file_alone_conforms(pylance, tmp_path):
    """A legacy (0.1) data file embeds its own schema: it is judged by that schema."""
    t = _table().drop(["d"])  # legacy dictionaries live in the dataset's manifest file
    pylance.write_dataset(t, str(tmp_path / "ds"), data_storage_version="legacy")
    (path,) = glob.glob(f"{tmp_path}/ds/data/*.lance")
    r = validate_file(path)
    assert r.conforms, [f"{f.rule}: {f.message}" for f in r.violations]
    assert not any(f.rule == "ENGINE-001" for f in r.findings)


def test_a_file_on_every_store(any_store_location):
    loc = any_store_location
    write_lance_file(loc.store, "one.lance", _table(50), version="2.1")
    uri = f"{loc.uri}/one.lance"
    assert is_lance_file(uri, loc.storage_options)
    assert not is_lance_file(f"{loc.uri}/missing.lance", loc.storage_options)
    r = validate_file(uri, storage_options=loc.storage_options)
    assert r.conforms and not r.findings


def test_a_dataset_directory_named_lance_is_not_a_file(pylance, tmp_path):
    pylance.write_dataset(_table(10).drop(["d"]), str(tmp_path / "t.lance"))
    assert not is_lance_file(str(tmp_path / "t.lance"))


@pytest.fixture
def good_file(tmp_path):
    write_lance_file(open_store(str(tmp_path)), "g.lance", _table(), version="2.1")
    return tmp_path / "g.lance"


def test_a_truncated_tail_is_file_001(good_file):
    data = good_file.read_bytes()
    good_file.write_bytes(data[:-1])
    r = validate_file(str(good_file))
    assert [f.rule for f in r.violations] == ["FILE-001"]
    assert r.violations[0].location["offset"] == len(data) - 5
    assert r.violations[0].location["path"] == "g.lance"


def test_table_offsets_past_the_footer_are_file_002(good_file):
    data = bytearray(good_file.read_bytes())
    data[-40:-32] = (10 ** 9).to_bytes(8, "little")  # column metadata start
    good_file.write_bytes(bytes(data))
    r = validate_file(str(good_file))
    assert [f.rule for f in r.violations] == ["FILE-002"]
    assert "offset" in r.violations[0].location


def test_garbage_in_a_page_is_reported_under_its_rule(good_file):
    data = bytearray(good_file.read_bytes())
    for i in range(0, 256):
        data[i] ^= 0xFF  # the first pages' bytes; the tail stays intact
    good_file.write_bytes(bytes(data))
    r = validate_file(str(good_file))
    assert not r.conforms
    assert all(f.rule != "ENGINE-001" for f in r.findings), [f.message for f in r.findings]


def test_no_byte_mutation_makes_the_validator_raise(good_file):
    """200 seeded mutations (flip, truncate, zero a run): every one yields a report, never an
    exception or an ENGINE-001 finding."""
    original = good_file.read_bytes()
    rng = random.Random(20261125)
    for _ in range(200):
        data = bytearray(original)
        kind = rng.choice(("flip", "truncate", "zero"))
        at = rng.randrange(len(data))
        if kind == "flip":
            data[at] ^= 1 << rng.randrange(8)
        elif kind == "truncate":
            data = data[:at]
        else:
            n = min(rng.randrange(1, 64), len(data) - at)
            data[at:at + n] = bytes(n)
        good_file.write_bytes(bytes(data))
        r = validate_file(str(good_file))
        engine = [f.message for f in r.findings if f.rule.startswith("ENGINE")]
        assert not engine, (kind, at, engine)


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "conformance", "validate", *args],
                          capture_output=True, text=True, timeout=300)


def test_cli_exit_codes(good_file, tmp_path):
    ok = _cli(str(good_file))
    assert ok.returncode == 0 and "CONFORMS" in ok.stdout
    as_json = _cli(str(good_file), "--format", "json")
    assert as_json.returncode == 0 and '"versions_checked": []' in as_json.stdout
    usage = _cli(str(good_file), "--all-versions")
    assert usage.returncode == 2 and "one Lance file" in usage.stderr
    good_file.write_bytes(good_file.read_bytes()[:-3])
    bad = _cli(str(good_file))
    assert bad.returncode == 1 and "FILE-001" in bad.stdout
    missing = _cli(str(tmp_path / "nothing.lance"))
    assert missing.returncode == 2


def test_out_of_memory_is_not_checked_not_a_finding(good_file, monkeypatch, capsys):
    """A file the validator cannot decode in the memory it has (a MemoryError raised where a
    page's arrays are allocated) gets one ENGINE-003 "not checked" finding, no ENC-046; the
    command says so and exits 1 (no verdict is no pass). The decode is tried once."""
    from conformance.cli import main
    from reference_impl.file import arrow_types
    from reference_impl.file.reader import LanceFileReader

    calls = []
    oom = "Unable to allocate 5.00 GiB for an array with shape (670994332,) and data type int64"
    read_all = LanceFileReader.read_all

    def counted(self):
        calls.append(1)
        return read_all(self)

    def no_memory(*_args, **_kwargs):
        raise MemoryError(oom)

    monkeypatch.setattr(arrow_types, "leaf_array", no_memory)
    monkeypatch.setattr(LanceFileReader, "read_all", counted)
    r = validate_file(str(good_file))
    assert [f.rule for f in r.findings] == ["ENGINE-003"], [f.message for f in r.findings]
    assert r.findings[0].message.startswith("not checked") and oom in r.findings[0].message
    assert r.findings[0].location == {"path": "g.lance"}
    assert len(calls) == 1
    assert main(["validate", str(good_file)]) == 1
    out = capsys.readouterr().out
    assert "ENGINE-003" in out and "not checked" in out and "ENC-046" not in out


def test_a_kept_memory_error_holds_no_frames(good_file, monkeypatch):
    """The one decode every deep rule shares keeps a MemoryError (so no rule decodes again)
    without its traceback, whose frames would keep the failed decode's arrays alive; asking
    for its findings raises it again rather than making it a finding."""
    from reference_impl.file import arrow_types, checks
    from reference_impl.file.reader import LanceFileReader

    def no_memory(*_args, **_kwargs):
        raise MemoryError("no room")

    monkeypatch.setattr(arrow_types, "leaf_array", no_memory)
    reader = LanceFileReader(open_store(str(good_file.parent)), good_file.name)
    rows, exc = checks.decode_outcome(reader)
    assert rows is None and isinstance(exc, MemoryError) and str(exc) == "no room"
    assert exc.__traceback__ is None and exc.__context__ is None
    with pytest.raises(MemoryError):
        checks.outcome_findings((rows, exc), reader.num_rows)
