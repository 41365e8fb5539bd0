"""Filters: the SQL predicates and value expressions a Lance dataset's ``delete``, ``update``
and filtered scans take, parsed into ``pyarrow.compute`` expressions.

The language is the part of SQL that Lance's filters accept and writers' users write::

    expr    := and ("OR" and)*
    and     := not ("AND" not)*
    not     := "NOT" not | test
    test    := value ( cmp value
                     | [NOT] IN "(" value ("," value)* ")"
                     | [NOT] BETWEEN value AND value
                     | [NOT] LIKE 'pattern'
                     | IS [NOT] NULL )?
    cmp     := "=" | "==" | "!=" | "<>" | "<" | "<=" | ">" | ">="
    value   := term (("+" | "-") term)*
    term    := unary (("*" | "/" | "%") unary)*
    unary   := "-" unary | atom
    atom    := number | 'string' | TRUE | FALSE | NULL
             | column ("." field)*                      -- a nested field: point.x
             | CAST "(" expr AS type ")"
             | function "(" expr ")"                    -- abs, length, lower, upper, ...
             | CONTAINS "(" value "," 'string' ")"      -- a substring (NGRAM indexes)
             | STARTS_WITH "(" value "," 'string' ")"
             | ARRAY_HAS_ANY "(" column "," list ")"    -- list columns (LABEL_LIST indexes)
             | ARRAY_HAS_ALL "(" column "," list ")"
             | (ARRAY_HAS | ARRAY_CONTAINS) "(" column "," literal ")"
             | "(" expr ")"
    list    := "[" [literal ("," literal)*] "]"       -- literals, none of them NULL

Its meaning is SQL's, as pylance 14.0.2 evaluates it (the kit's interop test holds the two
to the same answers on generated predicates over nullable data):

* three-valued logic: a comparison, ``LIKE``, ``IN`` or ``BETWEEN`` with a null operand is
  null (unknown); ``NOT`` of null is null; ``AND`` is false when either side is false and
  ``OR`` true when either side is true, null otherwise (Kleene). A row is deleted, updated
  or kept by a filter only when the predicate is *true*: null counts as false;
* ``x IN (a, b)`` is ``x = a OR x = b`` (so ``NULL IN (1)`` and ``1 IN (2, NULL)`` are
  null and ``NOT IN`` of them too); ``x BETWEEN a AND b`` is ``a <= x AND x <= b``;
* ``%`` is the remainder of truncating division (its sign is the dividend's: ``-7 % 3`` is
  ``-1``); ``/`` of two integers truncates toward zero; a zero divisor is an error;
* ``LIKE`` matches the whole value, ``%`` any run of characters, ``_`` one character,
  ``\\`` escaping either; ``length`` counts characters (not bytes) of a string;
* ``IS NULL`` is true of a null only (a float NaN is not null);
* a number meeting a column takes the column's type (``u > 3`` on a ``uint64`` column
  compares ``uint64`` values; ``f > 1 / 2`` on a float column is ``f > 0.5`` in Lance, whose
  literals are each cast before the division: the model divides the integers, so the kit's
  generated filters never do arithmetic between two literals);
* floating values compare in Lance's order: NaN equals NaN and is greater than every
  other number; ``-0.0`` equals ``0.0``;
* ``contains(s, 'x')`` is true when ``x`` occurs in ``s`` (no wildcards: ``%`` is itself),
  ``starts_with(s, 'x')`` when ``s`` begins with it; null of a null ``s``;
* ``array_has_any(l, [a, b])`` is true when an element of list ``l`` equals one of the
  values, ``array_has_all(l, [a, b])`` when every value is an element (a value listed twice
  counts once), ``array_has(l, a)`` and ``array_contains(l, a)`` are ``array_has_any(l,
  [a])``; a null element equals no value; a null list gives null, except that
  ``array_has_all(l, [])`` is true of every row, a null list too (so pylance 14.0.2 answers).
  The values are literals of the elements' kind (numbers for numbers, strings for
  strings) and never NULL: engines differ on a NULL among them (pylance 14.0.2's
  ``array_has_any(l, ['a', NULL])`` matches a list holding a null, its ``array_has(l, NULL)``
  matches nothing), so the language refuses it. These calls need the table's schema
  (:func:`parse_predicate` given a ``pyarrow.Schema``).

A name that is no column of the dataset raises :class:`~reference_impl.errors.InvalidInput`
before anything is evaluated, as does text outside the language.
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from .errors import InvalidInput

_TOKEN = re.compile(r"""\s*(?:
    (?P<num>\d+\.\d*(?:[eE][-+]?\d+)?|\d+(?:[eE][-+]?\d+)?)
  | (?P<str>'(?:[^']|'')*')
  | (?P<qid>"(?:[^"]|"")*"|`[^`]*`)
  | (?P<op><=|>=|!=|<>|==|=|<|>|\(|\)|\[|\]|,|\+|-|\*|/|%|\.)
  | (?P<id>[A-Za-z_][A-Za-z0-9_]*)
)""", re.VERBOSE)

#: SQL type names of ``CAST(x AS type)`` and the Arrow type each names.
#: (Lance refuses ``VARCHAR``, ``TEXT`` and ``REAL``: "Unsupported data type".)
CAST_TYPES: dict[str, pa.DataType] = {
    "TINYINT": pa.int8(), "SMALLINT": pa.int16(), "INT": pa.int32(), "INTEGER": pa.int32(),
    "BIGINT": pa.int64(), "FLOAT": pa.float32(), "DOUBLE": pa.float64(),
    "STRING": pa.string(), "BOOLEAN": pa.bool_(),
}

#: Scalar functions of one argument: SQL name -> the Arrow compute function.
FUNCTIONS: dict[str, str] = {
    "ABS": "abs_checked",
    "LENGTH": "utf8_length", "CHAR_LENGTH": "utf8_length", "CHARACTER_LENGTH": "utf8_length",
    "LOWER": "utf8_lower", "UPPER": "utf8_upper",
    "TRIM": "utf8_trim_whitespace",
}

#: The list tests (module docstring): SQL name -> whether it takes a list of values.
LIST_FUNCTIONS = {"ARRAY_HAS_ANY": True, "ARRAY_HAS_ALL": True, "ARRAY_HAS": False,
                  "ARRAY_CONTAINS": False}

_KEYWORDS = {"AND", "OR", "NOT", "IN", "IS", "NULL", "BETWEEN", "LIKE", "TRUE", "FALSE",
             "CAST", "AS"}


def _tokenize(text: str) -> list[tuple[str, str]]:
    pos, out = 0, []
    text = text.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            raise InvalidInput(f"cannot parse predicate {text!r} at position {pos}")
        kind = m.lastgroup
        out.append((kind, m.group(kind)))
        pos = m.end()
    return out


_NO_LITERAL = object()


@dataclass(frozen=True)
class _Value:
    """A value expression, its Arrow type when known (from the schema), and the Python
    value when it is a literal."""

    expr: pc.Expression
    type: pa.DataType | None = None
    literal: object = _NO_LITERAL

    @property
    def floating(self) -> bool:
        return self.type is not None and pa.types.is_floating(self.type)

    @classmethod
    def of(cls, value) -> _Value:
        t = None if value is None else pa.scalar(value).type
        return cls(pc.scalar(value), t, value)


def _expr(e) -> pc.Expression:
    return e.expr if isinstance(e, _Value) else e


def _coerce(a: _Value, b: _Value) -> tuple[_Value, _Value]:
    """Lance's coercion of a literal to the type of the column it meets: ``u > 3`` on a
    ``uint64`` column compares ``uint64`` values (a literal that does not fit stays)."""
    def to(lit: _Value, t: pa.DataType | None) -> _Value:
        if lit.literal is _NO_LITERAL or lit.literal is None or t is None or lit.type == t:
            return lit
        if not ((pa.types.is_integer(t) or pa.types.is_floating(t))
                and isinstance(lit.literal, int | float) and not isinstance(lit.literal, bool)):
            return lit
        if pa.types.is_integer(t) and isinstance(lit.literal, float):
            return lit
        try:
            return _Value(pc.scalar(pa.scalar(lit.literal).cast(t)), t, lit.literal)
        except (pa.ArrowInvalid, OverflowError):
            return lit
    return to(a, b.type), to(b, a.type)


def _arith(fn, a: _Value, b: _Value) -> _Value:
    a, b = _coerce(a, b)
    if a.type is not None and a.type == b.type:
        t = a.type
    elif a.floating or b.floating:
        t = pa.float64()
    else:
        t = None
    return _Value(fn(a.expr, b.expr), t)


def _compare(op: str, left: _Value, right: _Value) -> pc.Expression:
    """``left op right`` as Lance compares: null when either side is null; floating values
    in Lance's order, where NaN equals NaN and is greater than every other number (``0.0``
    and ``-0.0`` are equal)."""
    if op in ("!=", "<>"):
        return ~_compare("=", left, right)
    if op == "<=":
        return ~_compare(">", left, right)
    if op == ">=":
        return ~_compare("<", left, right)
    left, right = _coerce(left, right)
    a, b = left.expr, right.expr
    plain = {"=": a == b, "==": a == b, "<": a < b, ">": a > b}[op]
    if not (left.floating or right.floating):
        return plain
    nan_a = pc.is_nan(a) if left.floating else pc.scalar(False)
    nan_b = pc.is_nan(b) if right.floating else pc.scalar(False)
    with_nan = {"=": nan_a & nan_b, "==": nan_a & nan_b,
                "<": ~nan_a & nan_b, ">": nan_a & ~nan_b}[op]
    return pc.if_else(nan_a | nan_b, with_nan, plain)


def _list_udf(mode: str, list_type: pa.DataType) -> str:
    """The name of the scalar function (registered with Arrow on first use, once per list
    type) that answers ``array_has_<mode>`` for lists of ``list_type``; its second argument
    is the values, a JSON text."""
    name = f"lance_conformance_array_has_{mode}<{list_type}>"
    with _UDF_LOCK:
        if name not in _UDFS:
            def kernel(ctx, lists, values, mode=mode):
                want = json.loads(values.as_py())
                out = []
                for items in lists.to_pylist():
                    if mode == "all" and not want:
                        out.append(True)   # pylance 14.0.2: true of a null list too
                    elif items is None:
                        out.append(None)
                    else:
                        held = {v for v in items if v is not None}
                        out.append(any(v in held for v in want) if mode == "any"
                                   else all(v in held for v in want))
                return pa.array(out, pa.bool_())

            pc.register_scalar_function(
                kernel, name,
                {"summary": f"array_has_{mode} over {list_type}",
                 "description": "The filter language's list test (reference_impl.predicate)."},
                {"lists": list_type, "values": pa.string()}, pa.bool_())
            _UDFS.add(name)
    return name


_UDFS: set[str] = set()
_UDF_LOCK = threading.Lock()


def _any_of(exprs: list[pc.Expression]) -> pc.Expression:
    out = exprs[0]
    for e in exprs[1:]:
        out = out | e  # Kleene OR
    return out


class _Parser:
    """Recursive descent over the grammar of the module docstring."""

    def __init__(self, text: str, columns) -> None:
        self.toks = _tokenize(text)
        self.i = 0
        self.text = text
        self.schema = columns if isinstance(columns, pa.Schema) else None
        self.columns = set(columns.names if self.schema is not None else columns) \
            if columns is not None else None

    # -- tokens --------------------------------------------------------------------------
    def peek(self, *words, ahead: int = 0) -> bool:
        j = self.i + ahead
        if j >= len(self.toks):
            return False
        kind, val = self.toks[j]
        return (val.upper() if kind == "id" else val) in words

    def take(self, *words) -> str:
        if not self.peek(*words):
            got = self.toks[self.i][1] if self.i < len(self.toks) else "end of input"
            raise InvalidInput(f"predicate {self.text!r}: expected {'/'.join(words)}, got {got!r}")
        self.i += 1
        return self.toks[self.i - 1][1]

    def fail(self, what: str):
        raise InvalidInput(f"predicate {self.text!r}: {what}")

    # -- boolean structure ---------------------------------------------------------------
    def parse(self) -> pc.Expression:
        e = self.expr()
        if self.i != len(self.toks):
            self.fail(f"unexpected {self.toks[self.i][1]!r}")
        return _expr(e)

    def expr(self):
        """An expression: a boolean ``pc.Expression``, or the :class:`_Value` of a test
        that was a plain value (``abs(x)``, a column)."""
        e = self.and_()
        while self.peek("OR"):
            self.take("OR")
            e = _expr(e) | _expr(self.and_())
        return e

    def and_(self):
        e = self.not_()
        while self.peek("AND"):
            self.take("AND")
            e = _expr(e) & _expr(self.not_())
        return e

    def not_(self):
        if self.peek("NOT"):
            self.take("NOT")
            return ~_expr(self.not_())
        return self.test()

    def test(self):
        left = self.value()
        if self.peek("IS"):
            self.take("IS")
            neg = bool(self.peek("NOT") and self.take("NOT"))
            self.take("NULL")
            e = pc.is_null(left.expr)
            return ~e if neg else e
        neg = bool(self.peek("NOT") and self.take("NOT"))
        if self.peek("IN"):
            self.take("IN")
            self.take("(")
            items = [self.value()]
            while self.peek(","):
                self.take(",")
                items.append(self.value())
            self.take(")")
            e = _any_of([_compare("=", left, item) for item in items])
        elif self.peek("BETWEEN"):
            self.take("BETWEEN")
            low = self.value()
            self.take("AND")
            high = self.value()
            e = _compare("<=", low, left) & _compare("<=", left, high)
        elif self.peek("LIKE"):
            self.take("LIKE")
            kind, pattern = self.toks[self.i] if self.i < len(self.toks) else ("", "")
            if kind != "str":
                self.fail("LIKE takes a 'string' pattern")
            self.i += 1
            e = pc.match_like(left.expr, pattern=pattern[1:-1].replace("''", "'"))
        elif neg:
            self.fail("NOT must be followed by IN, BETWEEN or LIKE here")
        else:
            for op in ("=", "==", "!=", "<>", "<", ">", "<=", ">="):
                if self.peek(op):
                    self.take(op)
                    return _compare(op, left, self.value())
            return left
        return ~e if neg else e

    # -- values --------------------------------------------------------------------------
    def value(self) -> _Value:
        e = self.term()
        while self.peek("+", "-"):
            op = self.take("+", "-")
            r = self.term()
            e = _arith(pc.add if op == "+" else pc.subtract, e, r)
        return e

    def term(self) -> _Value:
        e = self.unary()
        while self.peek("*", "/", "%"):
            op = self.take("*", "/", "%")
            r = self.unary()
            fn = {"*": pc.multiply, "/": pc.divide_checked, "%": pc.remainder_checked}[op]
            e = _arith(fn, e, r)
        return e

    def unary(self) -> _Value:
        if self.peek("-"):
            self.take("-")
            if self.i < len(self.toks) and self.toks[self.i][0] == "num":
                return _Value.of(-self.number())
            inner = self.unary()
            return _Value(pc.negate_checked(inner.expr), inner.type)
        return self.atom()

    def number(self):
        _, val = self.toks[self.i]
        self.i += 1
        return float(val) if any(c in val for c in ".eE") else int(val)

    def literal_value(self):
        """A literal (a number with its sign, a string, TRUE or FALSE) as a Python value."""
        sign = -1 if self.peek("-") and self.take("-") else 1
        if self.i >= len(self.toks):
            self.fail("ends early")
        kind, val = self.toks[self.i]
        if kind == "num":
            return sign * self.number()
        if sign == 1 and kind == "str":
            self.i += 1
            return val[1:-1].replace("''", "'")
        if sign == 1 and kind == "id" and val.upper() in ("TRUE", "FALSE"):
            self.i += 1
            return val.upper() == "TRUE"
        self.fail(f"{val!r} is not a literal")

    def atom(self) -> _Value:
        if self.i >= len(self.toks):
            self.fail("ends early")
        kind, val = self.toks[self.i]
        word = val.upper() if kind == "id" else None
        if val == "(":
            self.i += 1
            e = self.expr()
            self.take(")")
            return e if isinstance(e, _Value) else _Value(e)
        if kind in ("num", "str") or word in ("TRUE", "FALSE"):
            return _Value.of(self.literal_value())
        if word == "NULL":
            self.i += 1
            return _Value.of(None)
        if word == "CAST" and self.peek("(", ahead=1):
            self.i += 2
            inner = self.expr()
            self.take("AS")
            type_name = self.take(*CAST_TYPES).upper()
            self.take(")")
            to = CAST_TYPES[type_name]
            return _Value(_expr(inner).cast(to), to)
        if word in LIST_FUNCTIONS and self.peek("(", ahead=1):
            return self.list_test(word)
        if word in ("CONTAINS", "STARTS_WITH") and self.peek("(", ahead=1):
            self.i += 2
            text = self.value()
            self.take(",")
            kind, pattern = self.toks[self.i] if self.i < len(self.toks) else ("", "")
            if kind != "str":
                self.fail(f"{val} takes a 'string' as its second argument")
            self.i += 1
            self.take(")")
            pattern = pattern[1:-1].replace("''", "'")
            fn = pc.match_substring if word == "CONTAINS" else pc.starts_with
            return _Value(fn(text.expr, pattern=pattern), pa.bool_())
        if kind == "id" and self.peek("(", ahead=1):
            if word not in FUNCTIONS:
                self.fail(f"unknown function {val!r} (known: {', '.join(sorted(FUNCTIONS))})")
            self.i += 2
            arg = self.expr()
            self.take(")")
            t = arg.type if isinstance(arg, _Value) and word in ("ABS", "LOWER", "UPPER",
                                                                  "TRIM") else None
            return _Value(getattr(pc, FUNCTIONS[word])(_expr(arg)), t)
        if kind == "qid" or (kind == "id" and word not in _KEYWORDS):
            return self.column()
        self.fail(f"unexpected {val!r}")

    def list_test(self, word: str) -> _Value:
        """``array_has_any(l, [..])``, ``array_has_all(l, [..])``, ``array_has(l, v)`` or
        ``array_contains(l, v)`` (module docstring)."""
        self.i += 2
        lists = self.column()
        if lists.type is None:
            self.fail(f"{word.lower()} needs the table's schema to know the type of its list")
        if not (pa.types.is_list(lists.type) or pa.types.is_large_list(lists.type)
                or pa.types.is_fixed_size_list(lists.type)):
            self.fail(f"{word.lower()} takes a list column, not {lists.type}")
        self.take(",")
        if word in ("ARRAY_HAS_ANY", "ARRAY_HAS_ALL"):
            self.take("[")
            values = []
            while not self.peek("]"):
                if values:
                    self.take(",")
                values.append(self.list_value(word, lists.type.value_type))
            self.take("]")
        else:
            values = [self.list_value(word, lists.type.value_type)]
        self.take(")")
        mode = "all" if word == "ARRAY_HAS_ALL" else "any"
        return _Value(pc.Expression._call(_list_udf(mode, lists.type),
                                          [lists.expr, pc.scalar(json.dumps(values))]),
                      pa.bool_())

    def list_value(self, word: str, element: pa.DataType):
        """One value of a list test: a literal of the elements' kind, never NULL."""
        if self.peek("NULL"):
            self.fail(f"{word.lower()} with a NULL value: engines differ on its meaning")
        v = self.literal_value()
        number = isinstance(v, int | float) and not isinstance(v, bool)
        fits = ((pa.types.is_string(element) or pa.types.is_large_string(element))
                and isinstance(v, str)) \
            or ((pa.types.is_integer(element) or pa.types.is_floating(element)) and number) \
            or (pa.types.is_boolean(element) and isinstance(v, bool))
        if not fits:
            self.fail(f"{word.lower()}: {v!r} is not a value of the list's {element} elements")
        return v

    def column(self) -> _Value:
        """A column, or a field of a struct column: ``point.x``, ``"a b".c``."""
        path = [self.name()]
        if self.columns is not None and path[0] not in self.columns:
            self.fail(f"names column {path[0]!r}, which the dataset does not have "
                      f"(columns: {sorted(self.columns)})")
        t = self.schema.field(path[0]).type if self.schema is not None else None
        while self.peek("."):
            self.take(".")
            path.append(self.name())
            if t is not None and pa.types.is_struct(t) and t.get_field_index(path[-1]) >= 0:
                t = t.field(path[-1]).type
            else:
                t = None
        return _Value(pc.field(*path), t)

    def name(self) -> str:
        if self.i >= len(self.toks) or self.toks[self.i][0] not in ("id", "qid"):
            self.fail("expected a column name")
        kind, val = self.toks[self.i]
        self.i += 1
        if kind == "id":
            return val
        return val[1:-1].replace('""', '"') if val[0] == '"' else val[1:-1]


def parse_predicate(text: str, columns=None) -> pc.Expression:
    """A ``pyarrow.compute.Expression`` for a predicate or value expression of the filter
    language (module docstring). ``columns``, when given, are the names it may use: a
    ``pyarrow.Schema`` (then comparisons of floating values follow Lance's NaN order) or
    any collection of names."""
    return _Parser(text, columns).parse()


def evaluate(table: pa.Table, text: str) -> pa.ChunkedArray:
    """The value of expression ``text`` at every row of ``table`` (nulls kept)."""
    import pyarrow.dataset as pds

    expr = parse_predicate(text, table.schema)
    return pds.dataset(table).to_table(columns={"v": expr}).column("v")


def matches(table: pa.Table, text: str) -> pa.Array:
    """Which rows of ``table`` predicate ``text`` holds for: true only where it is true
    (a null answer is no match)."""
    if not table.num_rows:
        return pa.array([], pa.bool_())
    return pc.fill_null(evaluate(table, text).combine_chunks(), False)
