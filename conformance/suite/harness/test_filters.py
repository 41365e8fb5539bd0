"""Filters as users write them find the data loss of a writer that drops a filter: a known-bad
writer that deletes every row for a modulo predicate is found by ``fuzz`` from a fixed seed
and shrunk to one ``delete`` with a one-line predicate, which the saved case file holds."""

from __future__ import annotations

import json
import re

import pytest

from conformance.harness import fuzz
from conformance.harness.known_bad import ModuloDeletesAllWriter
from conformance.strategies.scripts import SCRIPT_OPS

# a delete-only search: each example is a create and at most one delete
ONLY_DELETES = tuple(op for op in SCRIPT_OPS if op != "delete")
LEAF = re.compile(r"[^()]+")  # one test: no NOT/AND/OR around it


def deletes(script: list[dict]) -> list[str]:
    return [op["where"] for op in script if op["op"] == "delete"]


@pytest.mark.fuzz
def test_modulo_data_loss_is_found_and_shrunk(tmp_path):
    result = fuzz.fuzz(ModuloDeletesAllWriter(), role="writer", examples=60, seed=2,
                       skip_ops=ONLY_DELETES, max_ops=1, shrink_budget=None)
    assert not result.ok, result.summary()
    assert "HARNESS-003" in result.finding.rules, result.summary()
    [where] = deletes(result.script)  # shrunk to the create and one delete
    assert "%" in where and LEAF.fullmatch(where) and "\n" not in where, where
    saved = fuzz.save_case(result, tmp_path)
    doc = json.loads(saved.read_text())
    assert deletes(doc["script"]) == [where]
    assert fuzz.replay_case(doc, ModuloDeletesAllWriter()) is not None  # it fails again


@pytest.mark.fuzz
def test_the_reference_writer_passes_the_same_search():
    from conformance.harness.reference import ReferenceAdapter

    result = fuzz.fuzz(ReferenceAdapter(), role="writer", examples=16, seed=2,
                       skip_ops=ONLY_DELETES, max_ops=1)
    assert result.ok, result.summary()
