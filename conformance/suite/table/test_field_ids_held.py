"""FRAG-013: an id in ``DataFile.fields`` that no schema of the table ever held is an error; the
id of a dropped field (an earlier version's schema held it, pylance leaves it behind) is only
FRAG-010's warning. Tables written by pylance 14.0.2, then edited where the case needs it."""

from __future__ import annotations

import pyarrow as pa
import pytest

from conformance.engine import validate
from conformance.suite.scenarios import corrupt_manifest
from reference_impl.table.versions import list_versions

pytestmark = pytest.mark.interop


def _table(lance, uri: str) -> None:
    lance.write_dataset(pa.table({"a": pa.array([1, 2, 3], pa.int64()),
                                  "b": pa.array(["x", "y", "z"])}), uri)
    lance.write_dataset(pa.table({"a": pa.array([4, 5], pa.int64()),
                                  "b": pa.array(["u", "v"])}), uri, mode="append")


def _rules(report, severity: str) -> set[str]:
    return {f.rule for f in report.findings if f.severity == severity}


def test_a_dropped_fields_id_is_a_warning_not_an_error(tmp_path):
    lance = pytest.importorskip("lance")
    uri = str(tmp_path / "t")
    _table(lance, uri)
    lance.dataset(uri).drop_columns(["b"])  # the data files keep field 1's id and column
    report = validate(uri, versions="all")
    assert "FRAG-010" in _rules(report, "warning")
    assert "FRAG-013" not in _rules(report, "error"), report.rules_violated()
    assert report.conforms


def _relabel(m) -> None:
    m.fragments[1].files[0].fields[1] = 77  # field 1 (b) of fragment 1 now names id 77


def test_an_id_no_schema_ever_held_is_an_error(tmp_path):
    lance = pytest.importorskip("lance")
    uri = str(tmp_path / "t")
    _table(lance, uri)
    corrupt_manifest(uri, _relabel)
    # pylance reads b of fragment 1 as nulls, silently: data lost without an error
    assert lance.dataset(uri).to_table().column("b").to_pylist() == ["x", "y", "z", None, None]
    report = validate(uri, versions="all")
    (f,) = [f for f in report.findings if f.rule == "FRAG-013"]
    assert f.severity == "error" and "id 77" in f.message and "['b']" in f.message
    assert not report.conforms


def test_an_id_a_later_version_dropped_is_held(tmp_path):
    """The id is judged against every manifest: held by version 2's schema only (a column
    added, then dropped), it is a dropped field's."""
    lance = pytest.importorskip("lance")
    uri = str(tmp_path / "t")
    _table(lance, uri)
    ds = lance.dataset(uri)
    ds.add_columns({"c": "a * 2"})
    lance.dataset(uri).drop_columns(["c"])
    report = validate(uri, versions="latest")
    assert "FRAG-013" not in _rules(report, "error")


def test_nothing_is_said_without_the_whole_history(tmp_path):
    """After version 1's manifest is gone (cleanup_old_versions), a dropped field's schema
    may be gone with it: the rule says nothing rather than guess."""
    lance = pytest.importorskip("lance")
    uri = str(tmp_path / "t")
    _table(lance, uri)
    corrupt_manifest(uri, _relabel)
    from reference_impl.io.uri import open_store

    store = open_store(uri)
    first = [e for e in list_versions(store) if e.version == 1]
    assert first
    (tmp_path / "t" / first[0].key).unlink()
    report = validate(uri, versions="all")
    assert "FRAG-013" not in _rules(report, "error")
    assert "FRAG-010" in _rules(report, "warning")
