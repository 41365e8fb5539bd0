"""The filter language (:mod:`reference_impl.predicate`): its meaning under SQL's
three-valued logic, stated by hand, and held to pylance 14.0.2 on generated predicates
(:mod:`conformance.strategies.predicates`) over generated nullable tables."""

from __future__ import annotations

import math

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conformance.strategies import schemas as S
from conformance.strategies.predicates import predicates
from reference_impl.errors import InvalidInput
from reference_impl.predicate import matches, parse_predicate

ROWS = pa.table({
    "id": pa.array(range(8), pa.int64()),
    "n": pa.array([None, -7, 3, 0, None, 14, -1, 5], pa.int64()),
    "s": pa.array(["x1", None, "X10", "", "é✓", "it's", "a_b", None]),
    "f": pa.array([0.5, None, math.nan, -2.25, 100.0, 1.0, None, -0.0]),
    "b": pa.array([True, None, False, True, False, None, True, True]),
    "st": pa.array([{"x": 1}, None, {"x": None}, {"x": 4}] * 2, pa.struct([("x", pa.int64())])),
})


def ids(text: str) -> list[int]:
    return ROWS.filter(matches(ROWS, text)).column("id").to_pylist()


@pytest.mark.parametrize("text, want", [
    ("id % 3 = 0", [0, 3, 6]),
    ("n % 3 = -1", [1, 6]),             # the remainder takes the dividend's sign
    ("n / 2 = -3", [1]),                # integer division truncates
    ("abs(id - 4) < 2", [3, 4, 5]),
    ("id * 2 + 1 > 9", [5, 6, 7]),
    ("-n > 2", [1]),
    ("length(s) = 2", [0, 4]),          # characters, not bytes
    ("lower(s) = 'x10'", [2]),
    ("s LIKE 'x1%'", [0]),
    ("s LIKE 'a\\_b'", [6]),
    ("s NOT LIKE 'x%'", [2, 3, 4, 5, 6]),
    ("s = 'it''s'", [5]),
    ("CAST(id AS STRING) = '3'", [3]),
    ("n IN (3, 5)", [2, 7]),
    ("n NOT IN (3, 5)", [1, 3, 5, 6]),  # a null n is neither in nor not in
    ("n IN (3, NULL)", [2]),
    ("n NOT IN (3, NULL)", []),         # x <> NULL is unknown
    ("n BETWEEN 0 AND 5", [2, 3, 7]),
    ("n NOT BETWEEN 0 AND 5", [1, 5, 6]),
    ("n IS NULL", [0, 4]),
    ("NOT (n > 3)", [1, 2, 3, 6]),      # NOT unknown is unknown
    ("n > 3 OR b", [0, 3, 5, 6, 7]),
    ("n > 3 AND b", [7]),
    ("NOT b", [2, 4]),
    ("f > 1.0", [2, 4]),                # NaN is greater than every number
    ("f = f", [0, 2, 3, 4, 5, 7]),      # and equal to itself
    ("f >= 0.0", [0, 2, 4, 5, 7]),      # -0.0 equals 0.0
    ("st.x > 1", [3, 7]),
    ("st.x IS NULL", [1, 2, 5, 6]),     # a null struct's field is null
])
def test_meaning(text, want):
    assert ids(text) == want


@pytest.mark.parametrize("text", ["nope = 1", "id = ", "frobnicate(id) = 1",
                                  "CAST(id AS VARCHAR) = '1'", "n NOT = 3", "s LIKE n"])
def test_refused(text):
    with pytest.raises(InvalidInput):
        parse_predicate(text, ROWS.schema)


# -- list and substring tests (the filters LABEL_LIST and NGRAM indexes answer) ---------------

LISTS = pa.table({
    "id": pa.array(range(8), pa.int64()),
    "labels": pa.array([["a", "b"], [], None, [None, "a"], [None], ["c"], ["a", "c"], ["b", "b"]],
                       pa.list_(pa.string())),
    "nums": pa.array([[1, 2], [], None, [None, 1], [None], [3], [1, 3], [2]],
                     pa.large_list(pa.int32())),
    "s": pa.array(["hello", "", None, "xhelx", "HEL", "he", "lo", "50%"]),
})

LIST_TESTS = [
    ("array_has_any(labels, ['a'])", [0, 3, 6]),
    ("array_has_any(labels, ['b', 'c'])", [0, 5, 6, 7]),
    ("NOT array_has_any(labels, ['a'])", [1, 4, 5, 7]),      # a null list stays unknown
    ("array_has_any(labels, [])", []),
    ("array_has_all(labels, ['a', 'c'])", [6]),
    ("array_has_all(labels, ['b', 'b'])", [0, 7]),           # a value listed twice counts once
    ("array_has_all(labels, [])", [0, 1, 2, 3, 4, 5, 6, 7]),  # a null list too (pylance 14.0.2)
    ("NOT array_has_all(labels, ['a'])", [1, 4, 5, 7]),
    ("array_has(labels, 'a')", [0, 3, 6]),
    ("array_contains(labels, 'c')", [5, 6]),
    ("array_has_any(labels, ['a']) IS NULL", [2]),
    ("array_has_any(labels, ['a']) = false", [1, 4, 5, 7]),
    ("array_has_any(labels, ['a']) AND id > 2", [3, 6]),
    ("array_has_all(labels, ['a']) OR id = 2", [0, 2, 3, 6]),
    ("array_has_any(nums, [1])", [0, 3, 6]),
    ("array_has_all(nums, [1, 3])", [6]),
    ("array_has_any(nums, [1.5])", []),
    ("contains(s, 'hel')", [0, 3]),
    ("NOT contains(s, 'hel')", [1, 4, 5, 6, 7]),
    ("contains(s, '')", [0, 1, 3, 4, 5, 6, 7]),
    ("contains(s, '0%')", [7]),                               # no wildcards: % is itself
    ("contains(s, 'h%')", []),
    ("starts_with(s, 'he')", [0, 5]),
]


@pytest.mark.parametrize("text, want", LIST_TESTS)
def test_list_and_substring_meaning(text, want):
    assert LISTS.filter(matches(LISTS, text)).column("id").to_pylist() == want


@pytest.mark.parametrize("text", [
    "array_has_any(labels, [1])",          # a number among strings
    "array_has_any(nums, ['a'])",
    "array_has(labels, NULL)",             # engines differ on NULL among the values
    "array_has_any(labels, ['a', NULL])",
    "array_has_any(s, ['a'])",             # not a list column
    "array_has_any(labels, 'a')",          # the values of _any and _all are a list
    "contains(s, id)",                     # the substring is a string literal
    "array_has_any(nope, ['a'])",
])
def test_list_and_substring_refused(text):
    with pytest.raises(InvalidInput):
        parse_predicate(text, LISTS.schema)


def test_list_test_needs_the_schema():
    """Given only the column names, the language cannot tell a list's element type."""
    with pytest.raises(InvalidInput, match="schema"):
        parse_predicate("array_has_any(labels, ['a'])", LISTS.column_names)


@pytest.mark.interop
def test_list_and_substring_tests_agree_with_pylance(pylance, tmp_path):
    """Each list and substring test selects the same rows in the model, in pylance 14.0.2's
    scan, in pylance's answer through a LABEL_LIST and an NGRAM index, and in the reference
    reader's filtered scan; the reference writer's delete with each removes those rows."""
    from reference_impl.dataset import open_dataset
    from reference_impl.write import write_dataset

    uri = tmp_path / "t.lance"
    ds = pylance.write_dataset(LISTS, str(uri))
    scans = {text: sorted(ds.to_table(filter=text, columns=["id"]).column("id").to_pylist())
             for text, _ in LIST_TESTS}
    ds.create_scalar_index("labels", "LABEL_LIST")
    ds.create_scalar_index("s", "NGRAM")
    ds = pylance.dataset(str(uri))
    ref = open_dataset(str(uri))
    for text, want in LIST_TESTS:
        assert scans[text] == want, f"pylance's scan of {text!r}"
        indexed = sorted(ds.to_table(filter=text, columns=["id"]).column("id").to_pylist())
        assert indexed == want, f"pylance through its index, {text!r}"
        read = ref.to_table(filter=text, columns=["id"]).column("id").to_pylist()
        assert sorted(read) == want, f"reference scan, {text!r}"
    for n, (text, want) in enumerate(LIST_TESTS[:4] + LIST_TESTS[17:19]):
        target = tmp_path / f"del-{n}.lance"
        write_dataset(LISTS, str(target))
        left = open_dataset(str(target)).delete(text).to_table().column("id").to_pylist()
        assert sorted(set(range(8)) - set(left)) == want, f"reference delete, {text!r}"
        assert sorted(pylance.dataset(str(target)).to_table().column("id").to_pylist()) == left


# -- against pylance 14.0.2 -------------------------------------------------------------------

KINDS = ("int8", "int32", "int64", "uint16", "uint64", "float32", "float64", "string",
         "large_string", "bool", "struct", "list", "large_list")


@st.composite
def tables_and_predicates(draw):
    schema = draw(S.schemas(KINDS, max_columns=4))
    table = draw(S.tables(schema, ids=list(range(draw(st.integers(0, 12))))))
    return table, [draw(predicates(table)) for _ in range(8)]


@pytest.mark.interop
@settings(max_examples=25, derandomize=True, database=None)
@given(tables_and_predicates())
def test_model_agrees_with_pylance(pylance, tmp_path_factory, case):
    """Each generated predicate selects the same rows of a generated nullable table in the
    model, in pylance 14.0.2's filtered scan and in the reference reader's filtered scan of
    the table pylance wrote."""
    from reference_impl.dataset import open_dataset

    table, texts = case
    uri = tmp_path_factory.mktemp("pred") / "t.lance"
    ds = pylance.write_dataset(table, str(uri))
    ref = open_dataset(str(uri))
    for text in texts:
        theirs = sorted(ds.to_table(filter=text, columns=["id"]).column("id").to_pylist())
        ours = sorted(table.filter(matches(table, text)).column("id").to_pylist())
        assert ours == theirs, f"{text!r} over {table.schema}"
        read = ref.to_table(filter=text, columns=["id"]).column("id").to_pylist()
        assert sorted(read) == theirs, f"reference scan, {text!r} over {table.schema}"
