"""Hypothesis strategies for filters as users write them, over the columns of a table: the
``where`` of deletes and updates, the conditions of ``merge_insert`` (qualified:
``target.x < source.x``) and the filters of filtered reads in generated operation scripts
(:mod:`conformance.strategies.scripts`), judged by the filter language of
:mod:`reference_impl.predicate`.

A predicate is drawn as a tree: a leaf *test* on one column, or ``NOT``/``AND``/``OR`` of
smaller predicates (at most ``depth`` levels). The leaf forms are listed simplest first, and
hypothesis shrinks a choice toward the front of its list and a tree toward a leaf, so a
failing predicate shrinks to the simplest test that still fails (``id % 2 = 0`` rather than
``NOT (id % 7 = 3 OR c0 IS NULL)``). Every test is one that Lance (pylance 14.0.2) and a
SQL engine such as DuckDB read the same way:

=================  ===========================================  ============================
form               example                                      columns
=================  ===========================================  ============================
comparison         ``id < 4``, ``c0 >= -3``, ``c1 > 0.5``       id, integers, float32/64
``IN``             ``id IN (1, 5)``, ``c0 NOT IN (2, 3)``       id, integers
``BETWEEN``        ``id BETWEEN 2 AND 5``                       id, integers
modulo             ``id % 7 = 0``, ``c0 % 3 <> 1``              id, integers
arithmetic         ``abs(id - 5) < 2``, ``id * 2 + 1 > 9``      id
``IS [NOT] NULL``  ``c0 IS NULL``                               any primitive, struct fields
``LIKE``           ``c2 LIKE 'a%'``, ``c2 NOT LIKE '%b'``        strings
functions          ``length(c2) = 2``, ``lower(c2) = 'ab'``     strings
substring          ``contains(c2, 'b')``, ``starts_with(c2, 'a')``  strings
list               ``array_has_any(c5, [1, 4])``,               lists of integers or
                   ``array_has_all(c5, ['a'])``,                strings
                   ``array_contains(c5, 3)``
cast               ``CAST(id AS STRING) = '3'``                 id
boolean            ``c3``, ``NOT c3``, ``c3 = false``           bool
nested field       ``c4.x > 1``, ``c4.x IS NULL``               integer fields of structs
=================  ===========================================  ============================

Literals are chosen inside the column's type (never a negative one for an unsigned column),
arithmetic only on ``id`` (no overflow), ``LIKE`` patterns without ``\\``, ``_`` or a
``%`` of the value itself (engines differ in their default escape), and never arithmetic
between two literals (Lance folds it in the column's type: ``f > 1 / 2`` is ``f > 0.5``).
"""

from __future__ import annotations

import pyarrow as pa
from hypothesis import strategies as st

from . import schemas as S

LEAF_FORMS = ("compare", "in", "between", "modulo", "arithmetic", "null", "like", "length",
              "lower", "cast", "bool", "nested", "substring", "list")
FLOAT_LITERALS = ("0.5", "-2.25", "1.5", "100.0")


def _quote(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


def _int_range(t: pa.DataType) -> tuple[int, int]:
    return (0, 100) if pa.types.is_unsigned_integer(t) else (-100, 100)


def _columns(schema: pa.Schema) -> dict[str, list]:
    """The columns (and struct fields, as paths) each leaf form may use."""
    out = {"int": [], "float": [], "string": [], "bool": [], "nullable": [], "nested": [],
           "list": []}
    for f in schema:
        if f.name == S.ID:
            continue
        kind = S.kind_of(f.type, f)
        if kind in S.INTS:
            out["int"].append((f.name, f.type))
        elif kind in ("float32", "float64"):
            out["float"].append((f.name, f.type))
        elif kind in ("string", "large_string"):
            out["string"].append((f.name, f.type))
        elif kind == "bool":
            out["bool"].append((f.name, f.type))
        elif kind in ("list", "large_list") and (
                S.kind_of(f.type.value_type) in S.INTS
                or S.kind_of(f.type.value_type) in ("string", "large_string")):
            out["list"].append((f.name, f.type))
        elif kind == "struct":
            out["nested"] += [(f"{f.name}.{c.name}", c.type) for c in f.type
                              if S.kind_of(c.type) in S.INTS and c.name.isidentifier()]
        if kind in S.PRIMITIVE_KINDS and kind not in ("float16",):
            out["nullable"].append((f.name, f.type))
    return out


def _legal_forms(cols: dict[str, list]) -> list[str]:
    need = {"null": "nullable", "like": "string", "length": "string", "lower": "string",
            "bool": "bool", "nested": "nested", "substring": "string", "list": "list"}
    return [f for f in LEAF_FORMS if f not in need or cols[need[f]]]


def _int_literal(draw, t: pa.DataType, ids: list[int]) -> int:
    lo, hi = _int_range(t)
    return draw(st.integers(lo, hi))


def _pivot(draw, ids: list[int]) -> int:
    """A value of ``id`` near the rows: one the table holds when it holds any."""
    return draw(st.sampled_from(ids)) if ids else draw(st.integers(0, 5))


def _numeric(draw, ids: list[int], cols: dict) -> tuple[str, pa.DataType]:
    """``id`` or an integer column (``id`` first: a failure shrinks toward it)."""
    return draw(st.sampled_from([(S.ID, pa.int64()), *cols["int"]]))


#: leaf forms that call a function on the column (``length``, ``lower``, ``CAST``, ...)
FUNCTION_FORMS = ("length", "lower", "cast", "substring", "list")


def _leaf(draw, table: pa.Table, cols: dict, qualifiers: tuple[str, ...] = ()) -> str:
    # a column reference: qualified by a drawn side (``target.x``) in a merge condition
    q = (draw(st.sampled_from(qualifiers)) + ".") if qualifiers else ""
    ids = table.column(S.ID).to_pylist() if table.num_rows else []
    forms = _legal_forms(cols)
    if qualifiers:
        # pylance 14.0.2 refuses a qualified column inside a function call in a merge_insert
        # condition ("abs(target.id - 0) < 1": "Error parsing function: ... No field named
        # target.id"): conditions use operators only (a finding about pylance, not drawn)
        forms = [f for f in forms if f not in FUNCTION_FORMS]
    if len(qualifiers) > 1:
        forms.append("cross")
    form = draw(st.sampled_from(forms))
    if form == "compare":
        name, t = draw(st.sampled_from([(S.ID, pa.int64()), *cols["int"], *cols["float"]]))
        op = draw(st.sampled_from(["<", "=", ">=", ">", "<=", "<>"]))
        if pa.types.is_floating(t):
            return f"{q}{name} {op} {draw(st.sampled_from(FLOAT_LITERALS))}"
        value = _pivot(draw, ids) if name == S.ID else _int_literal(draw, t, ids)
        return f"{q}{name} {op} {value}"
    if form in ("in", "between"):
        name, t = _numeric(draw, ids, cols)
        pick = (lambda: _pivot(draw, ids)) if name == S.ID else (lambda: _int_literal(draw, t, ids))
        neg = "NOT " if draw(st.booleans()) else ""
        if form == "between":
            low, high = sorted([pick(), pick()])
            return f"{q}{name} {neg}BETWEEN {low} AND {high}"
        items = [pick() for _ in range(draw(st.integers(1, 3)))]
        return f"{q}{name} {neg}IN ({', '.join(str(i) for i in items)})"
    if form == "modulo":
        name, _ = _numeric(draw, ids, cols)
        k = draw(st.integers(2, 7))
        op = draw(st.sampled_from(["=", "<>"]))
        return f"{q}{name} % {k} {op} {draw(st.integers(0, k - 1))}"
    if form == "arithmetic":
        p, d = _pivot(draw, ids), draw(st.integers(1, 3))
        shape = draw(st.sampled_from(["linear"] if qualifiers else ["abs", "linear"]))
        if shape == "abs":
            return f"abs({q}{S.ID} - {p}) < {d}"
        return f"{q}{S.ID} * {d} + 1 > {p}"
    if form == "null":
        name, _ = draw(st.sampled_from(cols["nullable"] + cols["nested"]))
        return f"{q}{name} IS {'NOT ' if draw(st.booleans()) else ''}NULL"
    if form in ("like", "length", "lower"):
        name, _ = draw(st.sampled_from(cols["string"]))
        present = [v for v in table.column(name.split(".")[0]).to_pylist() if v] \
            if table.num_rows else []
        sample = draw(st.sampled_from(present)) if present else "ab"
        if form == "length":
            return f"length({q}{name}) = {len(sample)}"
        if form == "lower":
            return f"lower({q}{name}) = {_quote(sample.lower())}"
        sample = "".join(c for c in sample if c not in "\\%_\x00") or "a"
        neg = "NOT " if draw(st.booleans()) else ""
        pattern = draw(st.sampled_from([sample[:1] + "%", "%" + sample[-1:], sample]))
        return f"{q}{name} {neg}LIKE {_quote(pattern)}"
    if form == "substring":
        name, _ = draw(st.sampled_from(cols["string"]))
        present = [v for v in table.column(name).to_pylist() if v] if table.num_rows else []
        sample = draw(st.sampled_from(present)) if present else "ab"
        start = draw(st.integers(0, max(0, len(sample) - 1)))
        part = sample[start:start + draw(st.integers(1, 3))]
        if draw(st.booleans()):
            return f"starts_with({q}{name}, {_quote(sample[:len(part)])})"
        return f"{'NOT ' if draw(st.booleans()) else ''}contains({q}{name}, {_quote(part)})"
    if form == "list":
        name, t = draw(st.sampled_from(cols["list"]))
        element = t.value_type
        present = sorted({v for items in table.column(name).to_pylist() if items
                          for v in items if v is not None}, key=str) if table.num_rows else []
        if pa.types.is_integer(element):
            lo, hi = _int_range(element)
            pick = (lambda: draw(st.sampled_from(present))) if present and draw(st.booleans()) \
                else (lambda: draw(st.integers(max(lo, -5), min(hi, 5))))
            lit = str
        else:
            pick = (lambda: draw(st.sampled_from(present))) if present and draw(st.booleans()) \
                else (lambda: draw(st.sampled_from(["a", "b", "ab"])))
            lit = _quote
        fn = draw(st.sampled_from(["array_has_any", "array_has_all", "array_contains"]))
        neg = "NOT " if draw(st.booleans()) else ""
        if fn == "array_contains":
            return f"{neg}array_contains({q}{name}, {lit(pick())})"
        values = [lit(pick()) for _ in range(draw(st.integers(1, 2)))]
        return f"{neg}{fn}({q}{name}, [{', '.join(values)}])"
    if form == "cast":
        return f"CAST({q}{S.ID} AS STRING) = {_quote(str(_pivot(draw, ids)))}"
    if form == "bool":
        name, _ = draw(st.sampled_from(cols["bool"]))
        return draw(st.sampled_from([q + name, f"NOT {q}{name}", f"{q}{name} = false"]))
    if form == "cross":  # the same column on both sides: target.x < source.x
        name, _ = draw(st.sampled_from([(S.ID, pa.int64()), *cols["int"], *cols["float"],
                                        *cols["string"]]))
        op = draw(st.sampled_from(["<", "=", "<>", ">"]))
        return f"{qualifiers[0]}.{name} {op} {qualifiers[1]}.{name}"
    name, t = draw(st.sampled_from(cols["nested"]))
    return f"{q}{name} > {_int_literal(draw, t, ids)}"


@st.composite
def predicates(draw, table: pa.Table, *, depth: int = 2, qualifiers: tuple[str, ...] = ()):
    """A predicate over the columns of ``table`` (module docstring); shrinks toward a
    single simple test. With ``qualifiers`` (``("target", "source")``: a merge_insert
    condition) every column is named with one of them (``source.c0 > 3``), and a test may
    compare a column of one side with the same column of the other (``target.x < source.x``)."""
    cols = _columns(table.schema)
    shape = draw(st.sampled_from(["leaf", "not", "and", "or"] if depth > 0 else ["leaf"]))
    if shape == "leaf":
        return _leaf(draw, table, cols, qualifiers)
    if shape == "not":
        return f"NOT ({draw(predicates(table, depth=depth - 1, qualifiers=qualifiers))})"
    left = draw(predicates(table, depth=depth - 1, qualifiers=qualifiers))
    right = draw(predicates(table, depth=depth - 1, qualifiers=qualifiers))
    return f"({left}) {shape.upper()} ({right})"
