"""Zero false alarms: every dataset pylance 14.0.2 writes in the scenario factory conforms.

For each scenario of :mod:`conformance.suite.scenarios` the validator runs over every
version of the dataset (``versions="all"``), over every branch track (``ds/tree/<branch>``,
whose files resolve through the branch's base path) and over the shallow clone, first
without and then with ``deep=True``. An error-severity finding on bytes pylance wrote is a
false alarm of the catalog (or a pylance deviation that a rule must record with
``pylance=``/``enforces=``), so the test fails with the report.

The metadata pass covers every scenario by default; the deep pass (which decodes every
page of every data file) runs on :data:`DEEP_DEFAULT` by default and on all scenarios
under ``-m slow``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.engine import validate

from ..scenarios import SCENARIOS, scenario_info

# One scenario per file format version and per table feature with its own data files:
# enough to exercise every deep rule family in the default run.
DEEP_DEFAULT = ["version_legacy", "version_2_0", "version_2_1", "version_2_2",
                "delete_few", "stable_row_ids", "nested_types", "all_types"]


def tracks(ds_path: str) -> list[str]:
    """The dataset, each of its branch trees, and the shallow clone when there is one."""
    root = Path(ds_path)
    out = [str(root)]
    tree = root / "tree"
    if tree.is_dir():
        out += [str(b) for b in sorted(tree.iterdir()) if (b / "_versions").is_dir()]
    clone = (scenario_info(ds_path).get("extra_paths") or {}).get("clone")
    if clone:
        out.append(str(clone))
    return out


def assert_conforms(ds_path: str, *, deep: bool) -> None:
    for uri in tracks(ds_path):
        report = validate(uri, versions="all", deep=deep)
        assert report.versions_checked, f"{uri}: no version was checked"
        errors = report.rules_violated("error")
        assert not errors, report.render("text")


@pytest.mark.parametrize("name", SCENARIOS)
def test_scenario_conforms(pylance_scenarios, name):
    assert_conforms(pylance_scenarios[name], deep=False)


# False alarms of rules this module's owner does not own, reported to their owner; the
# marks come off when the rule is fixed (strict=False, so a fix shows up as XPASS).
KNOWN_FALSE_ALARMS: dict[str, str] = {}


def _params(names):
    return [pytest.param(n, marks=pytest.mark.xfail(reason=KNOWN_FALSE_ALARMS[n], strict=False))
            if n in KNOWN_FALSE_ALARMS else n for n in names]


@pytest.mark.parametrize("name", _params(DEEP_DEFAULT))
def test_scenario_conforms_deep(pylance_scenarios, name):
    assert_conforms(pylance_scenarios[name], deep=True)


@pytest.mark.slow
@pytest.mark.parametrize("name", _params([s for s in SCENARIOS if s not in DEEP_DEFAULT]))
def test_scenario_conforms_deep_all(pylance_scenarios, name):
    assert_conforms(pylance_scenarios[name], deep=True)


def test_deep_subset_names_real_scenarios():
    assert set(DEEP_DEFAULT) <= set(SCENARIOS)


# Warning rules added with the catalog's second round: besides their negative fixtures,
# they must stay silent on what pylance writes (warnings are not errors, so the tests
# above would not notice them).
NEW_WARNINGS = ["LAYOUT-007", "BASEPATH-005", "STATS-007", "MANIFEST-012", "TXN-007"]


@pytest.mark.parametrize("name", SCENARIOS)
def test_new_warning_rules_are_silent_on_pylance_data(pylance_scenarios, name):
    # STATS-007 is deep and only about legacy files: decode those only where they are
    deep = name == "version_legacy"
    for uri in tracks(pylance_scenarios[name]):
        report = validate(uri, versions="all", deep=deep, rules=NEW_WARNINGS)
        expected = [r for r in NEW_WARNINGS if deep or r != "STATS-007"]
        assert report.rules_checked == sorted(expected)
        assert not report.rules_violated(None), report.render("text")
