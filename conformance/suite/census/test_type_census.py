"""The census of types (issue 30): every Arrow type, variant and storage version a release
writes, judged as the census demands (``conformance/census/type_census.py``).

* ``interop`` (default run): a few types of the catalogue with the installed pylance
  14.0.2, run through the same machinery as the census (its program, in its own process),
  at legacy and 2.2: the families the issue names (extension types, structs without
  children, a legacy struct's not-null strings, a fixed-size list of structs).
* ``compat``: the whole census of pylance 14.0.2 and 0.20.0 in their cached virtualenvs,
  every cell as the census demands, and ``docs/census-types.md`` generated from it.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pyarrow as pa
import pytest

from conformance.census import report, type_census
from conformance.census.type_census import Cell, _names_type
from conformance.releases.venvs import ReleaseUnavailable
from conformance.suite.parts import unavailable

REPO = Path(__file__).resolve().parents[3]
DOC = REPO / "docs" / "census-types.md"

#: the families the issue names, as rows of the catalogue
FAMILIES = ["arrow.fixed_shape_tensor", "arrow.variable_shape_tensor",
            "struct<e: struct<>, x: int32>", "string", "struct<a: int32, b: string>"]


def _failures(cells) -> list[str]:
    return [f"{c.storage} {c.row} {c.variant}: release {c.pylance}; read {c.read} "
            f"{c.read_detail[:160]}; write {c.write} {c.write_detail[:160]}"
            for c in cells if not c.ok]


@pytest.mark.interop
def test_named_families_read_and_write_as_pylance_does(pylance, tmp_path):
    """Extension columns (over a fixed-size list and over a struct), structs without children,
    a legacy struct's not-null strings and a fixed-size list of structs, in all nine variants, at legacy and 2.2: read as pylance
    14.0.2 reads them with no error finding, written as it writes them (or refused, naming
    the type, where it refuses)."""
    result = type_census.census(["pylance==14.0.2"], storages=["legacy", "2.2"],
                                rows=FAMILIES, out_root=tmp_path,
                                python={"pylance==14.0.2": sys.executable})
    cells = [Cell(**{k: v for k, v in c.items() if k in Cell.__dataclass_fields__})
             for c in result["releases"]["pylance==14.0.2"]["cells"]]
    assert len(cells) == len(FAMILIES) * 2 * 9
    assert not _failures(cells), "\n".join(_failures(cells))
    # the cells exercise what they are meant to: pylance reads them back, ours too
    seen = {(c.storage, c.row, c.variant): c for c in cells}
    assert seen[("2.2", "struct<a: int32, b: string>", "in-fixed-size-list")].write == "same"
    assert seen[("legacy", "string", "in-struct")].read == "same"
    assert seen[("2.2", "arrow.fixed_shape_tensor", "in-list")].write == "same"
    assert seen[("2.2", "struct<e: struct<>, x: int32>", "values")].write == "refused"
    # an extension over a struct: its scan once read every row as null
    assert seen[("2.2", "arrow.variable_shape_tensor", "values")].read == "same"


def test_a_refusal_must_name_the_type():
    info = {"row": "decimal32(7,2)", "variant": "values", "input_type": "decimal32(7, 2)"}
    assert _names_type("UnsupportedFeature: field 'v': decimal32(7, 2) is not written", info)
    assert not _names_type("InvalidInput: unsupported input", info)
    union = {"row": "dense_union<int32, string>", "variant": "in-list",
             "input_type": "list<item: dense_union<i: int32=0, s: string=1>>"}
    assert _names_type("UnsupportedFeature: a union is not supported", union)
    mapped = {"row": "int32", "variant": "in-map", "input_type": "map<string, int32>"}
    assert _names_type("UnsupportedFeature: field 'v': map<string, int32> (a map) needs 2.2",
                       mapped)


def test_a_cell_is_ok_only_when_read_and_write_are():
    base = dict(release="pylance==14.0.2", storage="2.2", row="int32", family="primitive",
                variant="values", order=4, pylance="identical")
    assert Cell(**base, read="same", write="same").ok
    assert Cell(**base, read="same", write="n/a").ok
    assert not Cell(**base, read="misread", write="same").ok
    assert not Cell(**base, read="same", write="refuses-what-release-writes").ok
    assert not Cell(**base, read="false-error", write="same").ok


def test_the_table_sums_up_every_variant():
    cells = [dict(release="r", storage=s, row="int32", family="p", variant=v, order=0,
                  pylance=o, pylance_detail="", read="same", read_detail="",
                  write=w, write_detail="", ok=ok)
             for s, v, o, w, ok in [("2.2", "values", "identical", "same", True),
                                    ("2.2", "in-map", "refused-write", "refused", True),
                                    ("2.0", "values", "identical", "misread-by-release", False)]]
    table = report.release_table("r", cells, ["2.0", "2.2"], ["2.0", "2.2"])
    assert "| `int32` | 1r · ✗1 | 1r 1W · ok |" in table
    md = report.markdown({"storages": ["2.0", "2.2"],
                          "releases": {"r": {"cells": cells, "writes": ["2.0", "2.2"]}}},
                         "lance-conformance census types")
    assert "misread-by-release" in md and "**fails**" in md


@pytest.fixture(scope="module")
def full_census():
    try:
        return type_census.census(list(type_census.DEFAULT_RELEASES))
    except ReleaseUnavailable as e:
        unavailable("a pylance release", str(e))


@pytest.mark.compat
@pytest.mark.timeout(3600)  # the census from scratch: about 7 minutes on 2 busy cores
def test_every_cell_of_the_census_is_as_demanded(full_census):
    for release, data in full_census["releases"].items():
        cells = [Cell(**{k: v for k, v in c.items() if k in Cell.__dataclass_fields__})
                 for c in data["cells"]]
        assert len(cells) > 500, f"{release}: only {len(cells)} cells"
        assert not _failures(cells), f"{release}:\n" + "\n".join(_failures(cells))


def _tables(text: str) -> str:
    """The type x storage version table of pylance 14.0.2 in a census page (the other
    releases' cells and the notes quote errors some old releases raise only now and then:
    a task aborted on a loaded machine)."""
    section = text.split("## pylance==14.0.2", 1)[1].split("###", 1)[0]
    return "\n".join(line for line in section.splitlines() if line.startswith("|"))


@pytest.mark.compat
@pytest.mark.timeout(3600)
def test_the_doc_is_the_census(full_census):
    """``docs/census-types.md`` shows what the census gives today."""
    made = report.markdown(full_census, "lance-conformance census types")
    assert _tables(DOC.read_text()) == _tables(made), \
        "docs/census-types.md is out of date: run lance-conformance census types " \
        "--md docs/census-types.md"


def test_the_doc_exists_and_covers_both_releases():
    text = DOC.read_text()
    for release in type_census.DEFAULT_RELEASES:
        assert f"## {release}" in text
    for row in ("arrow.uuid", "arrow.fixed_shape_tensor", "struct<> (empty)",
                "lance.bfloat16", "run_end_encoded<int32, string>", "dense_union<int32, string>"):
        assert f"`{row}`" in text
    assert pa.__version__  # (the doc names the pyarrow types as this pyarrow prints them)
