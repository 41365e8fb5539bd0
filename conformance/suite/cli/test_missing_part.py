"""A command that needs an optional part that is not installed says which extra brings it,
in one line, and exits 2 (never a traceback)."""

from __future__ import annotations

import sys

import pytest

from conformance import cli


def _failing(name: str):
    def func(args):
        raise ModuleNotFoundError(f"No module named {name!r}", name=name)
    return func


@pytest.mark.parametrize("module,extra", [("lance", "interop"), ("pyspark.sql", "spark"),
                                          ("moto", "test")])
def test_an_optional_part_names_its_extra(monkeypatch, capsys, module, extra):
    monkeypatch.setattr(cli.argparse.ArgumentParser, "parse_args",
                        lambda self, argv=None: cli.argparse.Namespace(func=_failing(module)))
    assert cli.main(["rules"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert f"pip install 'lance-conformance[{extra}]'" in err
    assert module.split(".")[0] in err


def test_a_module_of_no_extra_is_named(monkeypatch, capsys):
    monkeypatch.setattr(cli.argparse.ArgumentParser, "parse_args",
                        lambda self, argv=None: cli.argparse.Namespace(func=_failing("nope_x")))
    assert cli.main(["rules"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "'nope_x'" in err and "not installed" in err
    assert "Traceback" not in err


def test_run_pylance_without_pylance_names_the_interop_extra(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "lance", None)  # import lance fails
    assert cli.main(["run", "--impl", "pylance"]) == 2
    captured = capsys.readouterr()
    assert captured.err == ("lance-conformance: this needs 'lance', an optional part: "
                            "python -m pip install 'lance-conformance[interop]'\n")
    assert captured.out == ""  # nothing was judged, nothing is listed
