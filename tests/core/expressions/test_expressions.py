"""The predicate AST and its Spark SQL parser: what each construct becomes, and that nothing
unsupported ever raises or turns into a wrong (narrower) predicate."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from delta_pyspark.core.expressions.nodes import (
    And,
    Column,
    Comparison,
    In,
    IsNotNull,
    IsNull,
    Literal,
    Not,
    Or,
    StartsWith,
    Unknown,
    and_all,
    columns_of,
    conjuncts,
    map_columns,
    rename_columns,
)
from delta_pyspark.core.expressions.parser import parse_predicate
from delta_pyspark.core.expressions.printer import to_sql

a, b, s = Column(("a",)), Column(("b",)), Column(("s",))


def lit(v: object) -> Literal:
    return Literal(v)


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("a = 1", Comparison("=", a, lit(1))),
        ("a == 1", Comparison("=", a, lit(1))),
        ("a <> 1", Comparison("!=", a, lit(1))),
        ("a != 1", Comparison("!=", a, lit(1))),
        ("a < 1", Comparison("<", a, lit(1))),
        ("a <= 1", Comparison("<=", a, lit(1))),
        ("a > 1", Comparison(">", a, lit(1))),
        ("a >= 1", Comparison(">=", a, lit(1))),
        ("a <=> NULL", Comparison("<=>", a, lit(None))),
        ("1 < a", Comparison("<", lit(1), a)),
        ("a = -5", Comparison("=", a, lit(-5))),
        ("a = 5L", Comparison("=", a, lit(5))),
        ("a = 1.5", Comparison("=", a, lit(Decimal("1.5")))),  # Spark: a DECIMAL literal
        ("a = 1.5D", Comparison("=", a, lit(1.5))),
        ("a = -2.5D", Comparison("=", a, lit(-2.5))),
        ("a = 1e3", Comparison("=", a, lit(1000.0))),
        ("a = 5BD", Comparison("=", a, lit(Decimal(5)))),
        ("a = TRUE", Comparison("=", a, lit(True))),
        ("a = 'x'", Comparison("=", a, lit("x"))),
        ('a = "dq"', Comparison("=", a, lit("dq"))),
        (r"a = 'it\'s'", Comparison("=", a, lit("it's"))),
        ("a = 'a' 'b'", Comparison("=", a, lit("ab"))),
        ("a = X'0aFF'", Comparison("=", a, lit(b"\x0a\xff"))),
        ("a = DATE'2020-01-02'", Comparison("=", a, lit(dt.date(2020, 1, 2)))),
        ("a = CAST('2020-01-02' AS DATE)", Comparison("=", a, lit(dt.date(2020, 1, 2)))),
        (
            "a >= TIMESTAMP '2020-01-02 03:04:05.123456'",
            Comparison(">=", a, lit(dt.datetime(2020, 1, 2, 3, 4, 5, 123456))),
        ),
        (
            "a >= TIMESTAMP_NTZ '2020-01-02 03:04:05'",
            Comparison(">=", a, lit(dt.datetime(2020, 1, 2, 3, 4, 5))),
        ),
        (
            "a > TIMESTAMP'2020-01-02T00:00:00Z'",
            Comparison(">", a, lit(dt.datetime(2020, 1, 2, tzinfo=dt.UTC))),
        ),
        ("a = CAST('7' AS BIGINT)", Comparison("=", a, lit(7))),
        ("a = CAST(1.25 AS DECIMAL(5,1))", Comparison("=", a, lit(Decimal("1.3")))),
        ("a = CAST(NULL AS INT)", Comparison("=", a, lit(None))),
        ("a IS NULL", IsNull(a)),
        ("a IS NOT NULL", IsNotNull(a)),
        ("NOT (a IS NULL)", Not(IsNull(a))),
        ("a IN (1, 2, NULL)", In(a, (1, 2, None))),
        ("a NOT IN (1, 2)", Not(In(a, (1, 2)))),
        ("a BETWEEN 1 AND 5", And(Comparison(">=", a, lit(1)), Comparison("<=", a, lit(5)))),
        (
            "a NOT BETWEEN 1 AND 5",
            Not(And(Comparison(">=", a, lit(1)), Comparison("<=", a, lit(5)))),
        ),
        ("s LIKE 'ab%'", StartsWith(s, "ab")),
        ("s LIKE 'ab%%'", StartsWith(s, "ab")),
        ("s LIKE '%'", StartsWith(s, "")),
        ("s LIKE 'abc'", Comparison("=", s, lit("abc"))),
        (r"s LIKE 'a\_b%'", StartsWith(s, "a_b")),
        (r"s LIKE 'a\%%'", StartsWith(s, "a%")),
        ("s LIKE 'a!%%' ESCAPE '!'", StartsWith(s, "a%")),
        ("s NOT LIKE 'ab%'", Not(StartsWith(s, "ab"))),
        (
            "a = 1 AND (b = 2 OR a < 0)",
            And(
                Comparison("=", a, lit(1)),
                Or(Comparison("=", b, lit(2)), Comparison("<", a, lit(0))),
            ),
        ),
        ("NOT (a = 1 OR b <> 2)", Not(Or(Comparison("=", a, lit(1)), Comparison("!=", b, lit(2))))),
        ("((a = 1))", Comparison("=", a, lit(1))),
        ("a", a),
        ("NOT a", Not(a)),
        ("TRUE", lit(True)),
        ("`we ird`.`x``y` = 1", Comparison("=", Column(("we ird", "x`y")), lit(1))),
        ("a.b.c.d = 1", Comparison("=", Column(("a", "b", "c", "d")), lit(1))),
    ],
)
def test_parse_predicate(sql: str, expected: object) -> None:
    assert parse_predicate(sql) == expected


def test_qualifier_is_stripped_only_when_asked() -> None:
    assert parse_predicate("t.a = s.b") == Comparison("=", Column(("t", "a")), Column(("s", "b")))
    assert parse_predicate("t.a = s.b", strip_qualifier="T") == Comparison(
        "=", a, Column(("s", "b"))
    )
    # a single-part name equal to the alias is a column, not a qualifier
    assert parse_predicate("t = 1", strip_qualifier="t") == Comparison("=", Column(("t",)), lit(1))


@pytest.mark.parametrize(
    "sql",
    [
        "f(a) = 1",
        "a + 1 = 2",
        "a IN (SELECT x FROM y)",
        "a IN (b, 2)",
        "a IS TRUE",
        "s ILIKE 'a%'",
        "s RLIKE 'a.*'",
        "s LIKE '%x'",
        "CAST(a AS INT) = 1",
        "a = CAST('x' AS INT)",
        "a = CAST(300 AS TINYINT)",
        "a = CAST('2020-13-45' AS DATE)",
        "a = current_date()",
        "a = INTERVAL 1 DAY",
        "EXISTS (SELECT 1)",
        "this is not sql ((",
        "",
    ],
)
def test_unsupported_becomes_unknown(sql: str) -> None:
    parsed = parse_predicate(sql)
    assert any(isinstance(n, Unknown) for n in _nodes(parsed)), parsed


def test_unknown_keeps_sql_and_columns() -> None:
    parsed = parse_predicate("f(t.a, b.c) = 1 AND a = 2", strip_qualifier="t")
    assert isinstance(parsed, And)
    left = parsed.left
    assert isinstance(left, Comparison) and isinstance(left.left, Unknown)
    assert left.left.columns == frozenset({("a",), ("b", "c")})
    assert columns_of(parsed) == {("a",), ("b", "c")}


def test_like_with_inner_wildcard_keeps_prefix_and_the_like() -> None:
    parsed = parse_predicate("s LIKE 'ab%c'")
    assert isinstance(parsed, And) and parsed.left == StartsWith(s, "ab")
    assert isinstance(parsed.right, Unknown) and "LIKE" in parsed.right.sql
    negated = parse_predicate("s NOT LIKE 'ab%c'")
    assert negated == Not(parsed)
    assert to_sql(parsed) == "s LIKE 'ab%c'"


def test_helpers() -> None:
    e = parse_predicate("a = 1 AND b = 2 AND s IS NULL")
    assert conjuncts(e) == [Comparison("=", a, lit(1)), Comparison("=", b, lit(2)), IsNull(s)]
    assert and_all(conjuncts(e)) == e
    assert and_all([]) is None
    renamed = map_columns(parse_predicate("a = 1 OR f(b) = 2"), lambda p: ("col-" + p[0],))
    assert columns_of(renamed) == {("col-a",), ("col-b",)}
    mapping = {("a",): ("col-1",), ("n",): ("col-2",), ("n", "x"): ("col-2", "col-3")}
    renamed = rename_columns(parse_predicate("A = 1 AND n.X > 2 AND zz IS NULL"), mapping)
    assert renamed == parse_predicate("`col-1` = 1 AND `col-2`.`col-3` > 2 AND zz IS NULL")


def test_to_sql_is_readable() -> None:
    e = And(Or(Comparison("=", a, lit(1)), IsNull(b)), Not(In(s, ("x", None))))
    assert to_sql(e) == "(a = 1 OR b IS NULL) AND NOT (s IN ('x', NULL))"
    assert to_sql(Comparison("=", Column(("my col",)), lit(dt.date(2020, 1, 2)))) == (
        "`my col` = DATE'2020-01-02'"
    )
    assert to_sql(StartsWith(s, "50%_off")) == r"s LIKE '50\\%\\_off%'"


# -- round trip ---------------------------------------------------------------------------------

_names = st.text(st.characters(codec="utf-8", exclude_characters="\x00"), min_size=1, max_size=6)
_columns = st.lists(_names, min_size=1, max_size=3).map(lambda p: Column(tuple(p)))
_values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.decimals(allow_nan=False, allow_infinity=False, places=3),
    st.text(st.characters(codec="utf-8", exclude_characters="\x00"), max_size=8),
    st.binary(max_size=4),
    st.dates(),
    st.datetimes(),
)
_leaves = st.one_of(
    st.builds(
        Comparison,
        st.sampled_from(["=", "!=", "<", "<=", ">", ">=", "<=>"]),
        _columns,
        _values.map(Literal),
    ),
    st.builds(In, _columns, st.lists(_values, min_size=1, max_size=3).map(tuple)),
    st.builds(IsNull, _columns),
    st.builds(IsNotNull, _columns),
    st.builds(StartsWith, _columns, st.text(max_size=5).filter(lambda p: "\x00" not in p)),
)
_exprs = st.recursive(
    _leaves,
    lambda inner: st.one_of(
        st.builds(And, inner, inner), st.builds(Or, inner, inner), st.builds(Not, inner)
    ),
    max_leaves=6,
)


@settings(max_examples=150, deadline=None)
@given(_exprs)
def test_to_sql_round_trips(expr: object) -> None:
    assert parse_predicate(to_sql(expr)) == expr  # type: ignore[arg-type]


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=40))
def test_parse_never_raises(text: str) -> None:
    parse_predicate(text)


def _nodes(e: object) -> list[object]:
    from delta_pyspark.core.expressions.nodes import walk

    return list(walk(e))  # type: ignore[arg-type]
