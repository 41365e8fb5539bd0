"""The harness for implementations under test: adapters, runner, skip-file, subprocess
protocol, matrix, CLI and pytest plugin."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import pyarrow as pa
import pytest

from conformance.cli import main
from conformance.harness import matrix, runner
from conformance.harness import scenarios as sc
from conformance.harness.adapter import Capabilities, Unsupported, load_adapter
from conformance.harness.reference import ReferenceAdapter

ROOT = Path(__file__).resolve().parents[3] / "fixtures" / "golden"
EXAMPLE = Path(__file__).resolve().parents[2] / "harness" / "examples" / "subprocess_reader.py"


def _bad(result: runner.RunResult) -> list[str]:
    return [f"{r.outcome} {r.id} {r.rules} {r.message}" for r in result.results
            if r.outcome != runner.PASS]


# -- the model -------------------------------------------------------------------------------

def test_model_follows_a_script():
    m = sc.run_model([
        {"op": "create", "data": {"gen": "small", "n": 10}},
        {"op": "delete", "where": "id < 3"},
        {"op": "update", "set": {"category": "'x'"}, "where": "id = 5"},
        {"op": "tag", "action": "create", "name": "t", "version": 1},
        {"op": "add_columns", "columns": [["e", "int32"]]},
        {"op": "compact"},
        {"op": "restore", "version": 2},
    ])
    assert sorted(m.versions) == [1, 2, 3, 4, 5, 6, 7]
    assert m.versions[2].column("id").to_pylist() == list(range(3, 10))
    assert m.versions[3].filter(pa.compute.equal(m.versions[3]["id"], 5))["category"].to_pylist() == ["x"]
    assert m.versions[4].column("e").null_count == 7
    assert m.versions[7].column_names == ["id", "category"] and m.tags == {"t": 1}


def test_difference_is_order_insensitive_but_value_sensitive():
    a = pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"]})
    assert sc.difference(a.take([2, 0, 1]), a) is None
    assert "values differ" in sc.difference(pa.table({"id": [1, 2, 3], "v": ["a", "b", "x"]}), a)
    assert "rows" in sc.difference(a.slice(1), a)
    assert "columns" in sc.difference(a.select(["v", "id"]), a)
    assert "type" in sc.difference(a.cast(pa.schema([("id", pa.int32()), ("v", pa.string())])), a)


# -- built-in adapters -----------------------------------------------------------------------

def test_reference_passes_every_case():
    result = runner.run(ReferenceAdapter(), suite="all")
    assert _bad(result) == []
    ids = [r.id for r in result.results]
    assert "read.deletion-roaring" in ids and "write.stale-append" in ids
    assert "write.reject-unknown-txn-operation" in ids and "read.reject-unknown-reader-flag" in ids
    assert len(ids) == len(set(ids))


def test_pylance_passes_every_case(pylance):
    result = runner.run(load_adapter("pylance"), suite="all")
    assert _bad(result) == []
    assert result.counts()[runner.PASS] == len(result.results)


def test_case_ids_are_stable():
    result = runner.run(ReferenceAdapter(), suite="write", scenarios=["write.create"])
    assert [r.id for r in result.results] == ["write.create"]
    assert set(sc.WRITER_SCENARIOS) >= {"write.create", "write.append", "write.delete", "write.update",
                                        "write.add-columns", "write.drop-columns", "write.compact",
                                        "write.tag", "write.restore", "write.overwrite"}


# -- outcomes --------------------------------------------------------------------------------

class AppendOnly(ReferenceAdapter):
    name = "append-only"
    capabilities = Capabilities(read=True, write=True, ops=("create", "append"))


class ReadRaisesUnsupported(ReferenceAdapter):
    name = "no-legacy"

    def read(self, uri, version=None, *, with_row_id=False):
        if "legacy" in str(uri):
            raise Unsupported("no legacy files here")
        return super().read(uri, version, with_row_id=with_row_id)


class WrongRows(ReferenceAdapter):
    name = "wrong-rows"

    def read(self, uri, version=None, *, with_row_id=False):
        t = super().read(uri, version, with_row_id=with_row_id)
        return t.slice(1) if t.num_rows else t


def test_operations_outside_the_capabilities_are_unsupported_not_fail():
    result = runner.run(AppendOnly(), suite="write")
    by = result.by_id()
    assert by["write.append"].outcome == runner.PASS
    assert by["write.delete"].outcome == runner.UNSUPPORTED
    assert "delete" in by["write.delete"].message
    assert not [r for r in result.results if r.outcome in (runner.FAIL, runner.ERROR)]


def test_adapter_unsupported_is_unsupported():
    result = runner.run(ReadRaisesUnsupported(), suite="read")
    by = result.by_id()
    assert by["read.legacy-file"].outcome == runner.UNSUPPORTED
    assert by["read.types-2.0"].outcome == runner.PASS


def test_wrong_rows_fail():
    result = runner.run(WrongRows(), suite="read")
    by = result.by_id()
    assert by["read.types-2.1"].outcome == runner.FAIL
    assert by["read.types-2.1"].rules == ["HARNESS-003"]
    assert not result.ok


def test_skip_file(tmp_path):
    text = "# comment\n\nread.legacy-*   # no legacy reader\nwrite.*\n"
    skips = runner.parse_skip_file(text)
    assert skips == {"read.legacy-*": "no legacy reader", "write.*": "listed in the skip-file"}
    result = runner.run(ReferenceAdapter(), suite="all", skips=skips)
    by = result.by_id()
    assert by["read.legacy-file"].outcome == runner.SKIP
    assert by["read.legacy-file"].message == "no legacy reader"
    assert all(r.outcome == runner.SKIP for r in result.results if r.suite == "write")
    assert by["read.types-2.2"].outcome == runner.PASS


def test_load_adapter_forms():
    assert load_adapter("reference").name == "reference"
    assert load_adapter("conformance.harness.reference:ReferenceAdapter").name == "reference"
    assert load_adapter("known-bad:deletion-flag").name == "known-bad:deletion-flag"
    with pytest.raises(ValueError):
        load_adapter("no-such-adapter")
    with pytest.raises(ValueError):
        load_adapter("no.such.module:Thing")


# -- subprocess adapter ----------------------------------------------------------------------

def test_example_subprocess_reader_passes_the_read_suite():
    with load_adapter(f'cmd:"{sys.executable} {EXAMPLE}"') as a:
        assert a.name == "example-subprocess-reader"
        assert a.capabilities.read and not a.capabilities.write
        result = runner.run(a, suite="all")
    reads = [r for r in result.results if r.suite == "read"]
    assert reads and all(r.outcome == runner.PASS for r in reads), _bad(result)
    writes = [r for r in result.results if r.suite == "write"]
    assert writes and all(r.outcome == runner.UNSUPPORTED for r in writes)


def _script(tmp_path, body: str) -> str:
    p = tmp_path / "prog.py"
    p.write_text(textwrap.dedent(body))
    return f'cmd:"{sys.executable} {p}"'


def test_subprocess_that_breaks_the_protocol_is_an_error(tmp_path):
    from conformance.harness.subprocess_adapter import ProtocolError

    with pytest.raises(ProtocolError):
        load_adapter(_script(tmp_path, "print('hello, not json')\n"))
    with pytest.raises(ProtocolError):
        load_adapter(_script(tmp_path, "import sys; sys.exit(3)\n"))


def test_subprocess_that_hangs_is_stopped(tmp_path):
    from conformance.harness.subprocess_adapter import ProtocolError, SubprocessAdapter

    p = tmp_path / "hang.py"
    p.write_text("import time\ntime.sleep(60)\n")
    with pytest.raises(ProtocolError, match="no response"):
        SubprocessAdapter([sys.executable, str(p)], timeout=1.0)


def test_subprocess_errors_carry_their_class(tmp_path):
    from conformance.harness.subprocess_adapter import AdapterError

    with load_adapter(f'cmd:"{sys.executable} {EXAMPLE}"') as a:
        with pytest.raises(AdapterError) as info:
            a.read(str(tmp_path / "missing"), None)
        assert info.value.error_class
        with pytest.raises(Unsupported):
            a.apply(str(tmp_path / "x"), {"op": "create"}, pa.table({"id": [1]}))


def test_subprocess_writer_receives_arrow_data(tmp_path):
    """A writing subprocess gets the rows of create/append as Arrow IPC and can pass."""
    spec = _script(tmp_path, f"""
        import base64, json, sys
        sys.path.insert(0, {str(Path(__file__).resolve().parents[3])!r})
        import pyarrow as pa
        from conformance.harness.reference import ReferenceAdapter
        ref = ReferenceAdapter()
        for line in sys.stdin:
            req = json.loads(line); p = req["params"]
            if req["method"] == "hello":
                res = {{"name": "sub-writer", "capabilities": {{"read": True, "write": True,
                       "ops": ["create", "append"]}}}}
            elif req["method"] == "apply":
                data = pa.ipc.open_stream(base64.b64decode(p["data"])).read_all() if p["data"] else None
                ref.apply(p["uri"], p["op"], data); res = {{}}
            elif req["method"] == "read":
                t = ref.read(p["uri"], p["version"])
                sink = pa.BufferOutputStream()
                with pa.ipc.new_stream(sink, t.schema) as w:
                    w.write_table(t)
                res = {{"arrow": base64.b64encode(sink.getvalue().to_pybytes()).decode()}}
            else:
                res = {{}}
            print(json.dumps({{"id": req["id"], "ok": True, "result": res}}), flush=True)
            if req["method"] == "shutdown":
                break
    """)
    with load_adapter(spec) as a:
        result = runner.run(a, suite="write", scenarios=["write.append", "write.delete"])
    by = result.by_id()
    assert by["write.append"].outcome == runner.PASS, by["write.append"].message
    assert by["write.delete"].outcome == runner.UNSUPPORTED


# -- CLI, reports, matrix --------------------------------------------------------------------

def test_cli_run_reference_writes_reports(tmp_path, capsys):
    junit, html = tmp_path / "r.xml", tmp_path / "r.html"
    skip = tmp_path / "skip.txt"
    skip.write_text("write.compact  # slow here\n")
    code = main(["run", "--impl", "reference", "--suite", "all", "--junit", str(junit),
                 "--html", str(html), "--skip-file", str(skip), "--no-pylance-check"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "PASS        read.deletion-arrow" in out and "SKIP        write.compact" in out
    suite = ET.parse(junit).getroot()
    assert suite.tag == "testsuite" and int(suite.get("failures")) == 0
    case_lines = [line for line in out.splitlines()
                  if re.match(r"^(PASS|FAIL|UNSUPPORTED|ERROR|SKIP) +(read|write)\.", line)]
    assert len(suite.findall("testcase")) == len(case_lines)
    assert "<table>" in html.read_text() and "read.deletion-arrow" in html.read_text()


def test_cli_run_json_and_exit_codes(capsys):
    assert main(["run", "--impl", "known-bad:deletion-flag", "--suite", "write", "--json",
                 "--no-pylance-check"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["ok"] is False and doc["counts"]["FAIL"] >= 1
    assert main(["run", "--impl", "nope"]) == 2
    assert main(["run"]) == 2


def test_matrix_reference_and_pylance(pylance, tmp_path, capsys):
    ref, py = load_adapter("reference"), load_adapter("pylance")
    m = matrix.build_matrix([ref, py], [ref, py],
                            scenarios=["write.delete", "write.add-columns", "write.stale-append",
                                       "write.create-2.0"])
    assert m.ok, matrix.to_text(m)
    assert {(p, c) for p, c in m.cells} == {(a, b) for a in ("reference", "pylance")
                                            for b in ("reference", "pylance")}
    assert all(c.passed == c.total == 4 for c in m.cells.values())
    text = matrix.to_text(m)
    assert text.splitlines()[0].split() == ["producer", "\\", "consumer", "reference", "pylance"]
    page = matrix.render_html(matrix=m)
    assert page.count("<td class='ok'>4/4</td>") == 4


def test_cli_matrix_html(pylance, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(sc, "WRITER_SCENARIOS", {k: sc.WRITER_SCENARIOS[k]
                                                 for k in ("write.create", "write.delete")})
    html = tmp_path / "report.html"
    assert main(["run", "--matrix", "--html", str(html)]) == 0
    out = capsys.readouterr().out
    assert "reference" in out and "2/2" in out
    assert "Producer &times; consumer" in html.read_text()


def test_matrix_shows_a_bad_producer():
    from conformance.harness.known_bad import DeletionFlagUnsetWriter

    ref = ReferenceAdapter()
    m = matrix.build_matrix([DeletionFlagUnsetWriter()], [ref], scenarios=["write.create", "write.delete"])
    assert not m.ok
    assert m.invalid["known-bad:deletion-flag"] == ["write.delete: FLAGS-003"]
    assert m.cells[("known-bad:deletion-flag", "reference")].passed == 1


# -- pytest plugin ---------------------------------------------------------------------------

def _plugin_args() -> list[str]:
    """``-p`` for the plugin unless the installed ``pytest11`` entry point loads it already
    (loading it twice is an error)."""
    from importlib.metadata import entry_points

    installed = any(ep.value == "conformance.harness.pytest_plugin"
                    for ep in entry_points(group="pytest11"))
    return [] if installed else ["-p", "conformance.harness.pytest_plugin"]


def _pytest(tmp_path, *args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pytest", *_plugin_args(),
                           "-q", "-p", "no:cacheprovider", "--rootdir", str(tmp_path), *args],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)


def test_pytest_plugin_runs_the_suite(tmp_path):
    done = _pytest(tmp_path, "--lance-impl=reference", "--lance-suite=read", "-k", "deletion or tags")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "3 passed" in done.stdout  # read.deletion-arrow, read.deletion-roaring, read.tags


def test_pytest_plugin_reports_failures_and_skips(tmp_path):
    skip = tmp_path / "skip.txt"
    skip.write_text("write.update  # not today\n")
    done = _pytest(tmp_path, "--lance-impl=known-bad:deletion-flag", "--lance-suite=write",
                   f"--lance-skip-file={skip}", "-rs", "-k", "delete or update")
    assert done.returncode == 1
    assert "FLAGS-003" in done.stdout and "lance::write.delete" in done.stdout
    assert "skip-file: not today" in done.stdout
    # write.delete fails; write.delete-fragment removes the whole fragment (no deletion
    # file, so the bug cannot show) and passes; write.update is skipped
    assert "1 failed, 1 passed, 1 skipped" in done.stdout


def test_cli_run_subprocess_reader(capsys):
    code = main(["run", "--impl", f'cmd:"{sys.executable} {EXAMPLE}"', "--suite", "read"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "PASS        read.reject-unknown-encoding" in out and "FAIL 0," in out
