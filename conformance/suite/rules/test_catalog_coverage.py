"""Catalog coverage: every registered rule has a negative fixture, and the fixtures are
reproducible.

* Every rule of ``conformance.rules.all_rules()`` has ``fixtures/invalid/<RULE-ID>/case.json``
  unless it is in :data:`EXEMPT` (no dataset can break it: each entry names the test that
  covers the rule negatively) or in :data:`PENDING` (a fixture is still owed: each entry says
  why and who owes it). Both lists must stay exact: an exempted rule that gains a fixture, or
  a listed rule that no longer exists, fails the test too.
* ``tools/gen_invalid_fixtures.py`` writes the same file names and bytes on every run, and
  the committed ``fixtures/invalid/`` equals a fresh generation (its ``--check`` mode).
"""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

from conformance.rules import all_rules, load_all

ROOT = Path(__file__).resolve().parents[3]
FIXTURES = ROOT / "fixtures" / "invalid"

# Rules no fixture dataset can break, with the test that breaks them instead.
EXEMPT: dict[str, str] = {
    "COMMIT-005": "about a version the caller asks for, not about the dataset's bytes; "
                  "conformance/suite/engine/test_validate.py::test_missing_version_is_commit_005",
    "ENGINE-001": "a rule raising an exception, not a property of the dataset; "
                  "conformance/suite/engine/test_validate.py::test_engine_turns_exceptions_into_engine_001",
    "ENGINE-002": "the time limit of a run, not a property of the dataset; "
                  "conformance/suite/engine/test_validate.py::test_time_limit_is_engine_002",
    "ENGINE-003": "the memory of the machine, not a property of the dataset; "
                  "conformance/suite/engine/test_validate.py::"
                  "test_out_of_memory_is_engine_003_not_a_format_finding",
}
# Vector index content rules (index_vector.py) whose breaking needs a PQ, SQ or HNSW index: the
# fixtures (conformance/fixtures/invalid_index.py) hold an IVF_FLAT only, the one vector index
# pylance 14.0.2 writes as the same bytes on every run (given its centroids); PQ codebooks, SQ
# bounds and HNSW levels differ from run to run. Each is broken by the named test on tables
# pylance 14.0.2 builds.
_VECTOR = ("vector index content of a PQ, SQ or HNSW index; no fixtures/invalid case (no "
           "byte-reproducible such index): conformance/suite/index/test_vector_index.py::")
EXEMPT.update({
    "INDEX-143": _VECTOR + "test_replaced_pq_code_is_an_error",
    "INDEX-144": _VECTOR + "test_swapped_index_files_are_errors",
    "INDEX-146": _VECTOR + "test_hnsw_neighbour_outside_its_partition_is_named",
    "INDEX-147": _VECTOR + "test_hnsw_graph_of_other_distances_is_an_error",
})
# Rules judged on a namespace root, not on a dataset: tested by the namespace engineer's
# conformance/suite/namespace/test_namespace*.py on namespace roots.
EXEMPT_PREFIXES = {"NS-": "namespace rules run on a namespace root, not on a dataset; "
                          "conformance/suite/namespace/test_namespace.py::test_rule_negative (and "
                          "test_ns001_ns002_wrong_schema and the other NS tests there)"}

# Rules that can have a dataset fixture but do not have one yet, with the reason. These
# are the 2.1/2.2 file-format rules of conformance/rules/file.py and encoding.py (owned by
# the 2.1 file-format engineer, still changing): their negative tests today are the unit
# tests on hand-made files in test_file_container.py / test_file_v2_1.py /
# test_file_hostile.py. Encoding-specific ones need a page of that encoding, which the
# tiny fixture tables do not produce.
_FILE_21 = ("2.1 file rule (file.py/encoding.py, another engineer); negative tests on "
            "hand-made files in test_file_container.py / test_file_v2_1.py; no single-byte "
            "change of the tiny fixture files breaks exactly this rule")
PENDING: dict[str, str] = {}

def _fixture_ids() -> set[str]:
    return {p.name for p in FIXTURES.iterdir() if (p / "case.json").exists()} \
        if FIXTURES.exists() else set()


def _exempt(rule_id: str) -> bool:
    return rule_id in EXEMPT or any(rule_id.startswith(p) for p in EXEMPT_PREFIXES)


def test_every_rule_has_a_negative_fixture():
    load_all()
    have = _fixture_ids()
    missing = sorted(r.id for r in all_rules()
                     if r.id not in have and not _exempt(r.id) and r.id not in PENDING)
    assert not missing, f"rules without fixtures/invalid/<RULE-ID>/case.json: {missing}"


def test_exemption_lists_are_exact():
    load_all()
    ids = {r.id for r in all_rules()}
    have = _fixture_ids()
    for rule_id in list(EXEMPT) + list(PENDING):
        assert rule_id in ids, f"{rule_id} is listed but not registered"
        assert rule_id not in have, f"{rule_id} has a fixture now: take it off the list"
    for rule_id, why in {**EXEMPT, **PENDING}.items():
        assert why.strip(), rule_id
    for why in list(EXEMPT.values()) + list(EXEMPT_PREFIXES.values()):
        assert re.search(r"test_\w+\.py::test_\w+", why), why


def test_every_fixture_names_a_registered_rule():
    load_all()
    ids = {r.id for r in all_rules()}
    for rule_id in sorted(_fixture_ids()):
        case = json.loads((FIXTURES / rule_id / "case.json").read_text())
        assert case["rule"] == rule_id in ids
        assert set(case.get("also", [])) <= ids
        # a deep rule's case is validated with deep=True
        from conformance.rules import get_rule
        if get_rule(rule_id).deep:
            assert case["validate"].get("deep") is True, rule_id


def _generator():
    spec = importlib.util.spec_from_file_location("gen_invalid_fixtures",
                                                  ROOT / "tools" / "gen_invalid_fixtures.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_generation_is_deterministic_and_committed_fixtures_are_current(pylance, tmp_path):
    """Two generations give the same names and bytes, and equal the committed folder
    (what ``tools/gen_invalid_fixtures.py --check`` tells CI)."""
    gen = _generator()
    gen.build(tmp_path / "one")
    gen.build(tmp_path / "two")
    assert gen.tree(tmp_path / "one"), "nothing was generated"
    assert gen.compare(tmp_path / "one", tmp_path / "two") == []
    diffs = gen.compare(tmp_path / "one", FIXTURES)
    assert diffs == [], "fixtures/invalid is stale: run python tools/gen_invalid_fixtures.py " \
                        f"({len(diffs)} differences, first: {diffs[:5]})"


def test_check_mode_reports_a_stale_folder(pylance, tmp_path):
    gen = _generator()
    stale = tmp_path / "stale"
    gen.build(stale, ["LAYOUT-003"])
    assert gen.main(["--check", "--out", str(stale)]) == 1


def test_compare_sees_a_changed_byte(tmp_path):
    gen = _generator()
    for side in ("a", "b"):
        (tmp_path / side / "X").mkdir(parents=True)
        (tmp_path / side / "X" / "f.bin").write_bytes(b"abc")
    assert gen.compare(tmp_path / "a", tmp_path / "b") == []
    (tmp_path / "b" / "X" / "f.bin").write_bytes(b"abd")
    (tmp_path / "b" / "X" / "g.bin").write_bytes(b"")
    diffs = gen.compare(tmp_path / "a", tmp_path / "b")
    assert any("bytes differ: X/f.bin" in d for d in diffs)
    assert any("X/g.bin" in d for d in diffs)


def test_pending_rules_are_deep_file_rules():
    """Only deep file-format rules may wait for a fixture (the list is empty today)."""
    from conformance.rules import get_rule

    load_all()
    for rule_id in sorted(PENDING):
        r = get_rule(rule_id)
        assert r.deep and r.id.split("-")[0] in ("FILE", "ENC"), rule_id
