"""Spark SQL predicates parsed into the AST of ``expressions`` (with sqlglot's Spark dialect).

``parse_predicate`` never raises: a sub-tree it does not model becomes ``Unknown`` with the
columns it mentions. Constants, casts included, are folded with Spark's rules
(``casts``).
"""

from __future__ import annotations

import logging
from decimal import Decimal
from typing import Any

import sqlglot
from sqlglot import exp

from delta_pyspark.core.expressions.casts import Unsupported, cast_literal, number_literal
from delta_pyspark.core.expressions.nodes import (
    And,
    Column,
    Comparison,
    Expr,
    In,
    IsNotNull,
    IsNull,
    Literal,
    Not,
    Or,
    StartsWith,
    Unknown,
)


def parse_predicate(sql: str, strip_qualifier: str | None = None) -> Expr:
    """Parse a Spark SQL boolean expression into the AST; never raises.

    ``strip_qualifier``: a table alias (e.g. ``"t"`` in a MERGE condition); a leading path
    component equal to it (case-insensitive) is dropped, so ``t.a.b`` becomes ``("a", "b")``.
    Other qualified names are kept as nested paths.
    """
    try:
        tree = parse_sql(sql)
    except Exception:
        return Unknown(sql)
    if tree is None:
        return Unknown(sql)
    try:
        return _Converter(strip_qualifier).predicate(tree)
    except Exception:  # a gap in the converter must not fail the caller
        return Unknown(sql)


_SQLGLOT_LOG = logging.getLogger("sqlglot")


def parse_sql(sql: str) -> exp.Expression | None:
    """sqlglot's Spark parser, without its warnings about SQL it falls back on."""
    level = _SQLGLOT_LOG.level
    _SQLGLOT_LOG.setLevel(logging.ERROR)
    try:
        return sqlglot.parse_one(sql, read="spark")  # type: ignore[return-value]
    finally:
        _SQLGLOT_LOG.setLevel(level)


class _Converter:
    def __init__(self, strip_qualifier: str | None) -> None:
        self.strip = strip_qualifier.lower() if strip_qualifier else None

    # -- predicates -------------------------------------------------------------------------
    def predicate(self, node: exp.Expression) -> Expr:
        try:
            return self._predicate(node)
        except Unsupported:
            return self.unknown(node)

    def _predicate(self, node: exp.Expression) -> Expr:
        connective = self._connective(node)
        if connective is not None:
            return connective
        op = _COMPARISONS.get(type(node))
        if op is not None:
            return Comparison(op, self.operand(node.this), self.operand(node.expression))
        if isinstance(node, exp.NullSafeNEQ):
            return Not(Comparison("<=>", self.operand(node.this), self.operand(node.expression)))
        if isinstance(node, exp.Between):
            target = self.operand(node.this)
            low, high = self.operand(node.args["low"]), self.operand(node.args["high"])
            return And(Comparison(">=", target, low), Comparison("<=", target, high))
        if isinstance(node, exp.In):
            if node.args.get("query") or node.args.get("unnest") or node.args.get("field"):
                raise Unsupported
            values = tuple(_literal_value(v) for v in node.expressions)
            return In(self.operand(node.this), values)
        if isinstance(node, exp.Like):
            return self.like(node, node, "\\")
        if isinstance(node, exp.Escape) and isinstance(node.this, exp.Like):
            esc = _literal_value(node.expression)
            if not isinstance(esc, str) or len(esc) != 1:
                raise Unsupported
            return self.like(node.this, node, esc)
        if isinstance(node, exp.Column | exp.Dot):
            return self.column(node)
        if _is_literal_node(node):
            return Literal(_literal_value(node))
        raise Unsupported

    def _connective(self, node: exp.Expression) -> Expr | None:
        """Parentheses, AND, OR, NOT and IS [NOT] NULL; None for any other node."""
        if isinstance(node, exp.Paren):
            return self.predicate(node.this)
        if isinstance(node, exp.And):
            return And(self.predicate(node.this), self.predicate(node.expression))
        if isinstance(node, exp.Or):
            return Or(self.predicate(node.this), self.predicate(node.expression))
        if isinstance(node, exp.Not):
            inner = node.this  # "x IS NOT NULL" arrives as Not(Is(x, NULL)), without a Paren
            if isinstance(inner, exp.Is) and isinstance(inner.expression, exp.Null):
                return IsNotNull(self.operand(inner.this))
            return Not(self.predicate(inner))
        if isinstance(node, exp.Is):
            if isinstance(node.expression, exp.Null):
                return IsNull(self.operand(node.this))
            raise Unsupported
        return None

    def like(self, like: exp.Like, whole: exp.Expression, escape: str) -> Expr:
        pattern = _literal_value(like.expression)
        if not isinstance(pattern, str):
            raise Unsupported
        target = self.operand(like.this)
        prefix, rest = _split_like_pattern(pattern, escape)
        if rest is None:
            result: Expr = Comparison("=", target, Literal(prefix))
        elif rest and all(ch == "%" for ch in rest):
            result = StartsWith(target, prefix)
        elif prefix:
            # LIKE implies its literal prefix, so AND-ing the prefix test with the LIKE itself
            # (unknown to us) is equivalent, and stays sound under NOT.
            result = And(StartsWith(target, prefix), self.unknown(_without_negation(like, whole)))
        else:
            raise Unsupported
        return Not(result) if like.args.get("negate") else result

    # -- operands ---------------------------------------------------------------------------
    def operand(self, node: exp.Expression) -> Expr:
        node = _unparen(node)
        if isinstance(node, exp.Column | exp.Dot):
            try:
                return self.column(node)
            except Unsupported:
                return self.unknown(node)
        if _is_literal_node(node):
            try:
                return Literal(_literal_value(node))
            except Unsupported:
                return self.unknown(node)
        return self.unknown(node)

    def column(self, node: exp.Expression) -> Column:
        path = _column_path(node)
        if self.strip and len(path) > 1 and path[0].lower() == self.strip:
            path = path[1:]
        return Column(path)

    def unknown(self, node: exp.Expression) -> Unknown:
        cols: set[tuple[str, ...]] = set()
        for col in node.find_all(exp.Column):
            try:
                cols.add(self.column(col).path)
            except Unsupported:
                continue
        try:
            sql = node.sql(dialect="spark")
        except Exception:
            sql = str(node)
        return Unknown(sql, frozenset(cols))


_COMPARISONS: dict[type, str] = {
    exp.EQ: "=",
    exp.NEQ: "!=",
    exp.LT: "<",
    exp.LTE: "<=",
    exp.GT: ">",
    exp.GTE: ">=",
    exp.NullSafeEQ: "<=>",
}


def _unparen(node: exp.Expression) -> exp.Expression:
    while isinstance(node, exp.Paren):
        node = node.this
    return node


def _without_negation(like: exp.Like, whole: exp.Expression) -> exp.Expression:
    if not like.args.get("negate"):
        return whole
    copy = whole.copy()
    target = copy if isinstance(copy, exp.Like) else copy.this
    target.set("negate", None)
    return copy


def _column_path(node: exp.Expression) -> tuple[str, ...]:
    if isinstance(node, exp.Column):
        parts = node.parts
        if not parts or not all(isinstance(p, exp.Identifier) for p in parts):
            raise Unsupported
        return tuple(p.this for p in parts)
    if isinstance(node, exp.Dot):
        right = node.expression
        if not isinstance(right, exp.Identifier):
            raise Unsupported
        return (*_column_path(node.this), right.this)
    raise Unsupported


def _split_like_pattern(pattern: str, escape: str) -> tuple[str, str | None]:
    """Split a LIKE pattern into (literal prefix, rest starting at the first wildcard).

    ``rest`` is None when the pattern has no wildcard at all.
    """
    prefix: list[str] = []
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == escape:
            if i + 1 >= len(pattern) or pattern[i + 1] not in ("%", "_", escape):
                raise Unsupported  # Spark rejects such patterns
            prefix.append(pattern[i + 1])
            i += 2
            continue
        if ch in ("%", "_"):
            return "".join(prefix), pattern[i:]
        prefix.append(ch)
        i += 1
    return "".join(prefix), None


# -- literals -----------------------------------------------------------------------------------


def _is_literal_node(node: exp.Expression) -> bool:
    node = _unparen(node)
    if isinstance(node, exp.Literal | exp.Null | exp.Boolean | exp.HexString):
        return True
    if isinstance(node, exp.Neg):
        return _is_literal_node(node.this)
    if isinstance(node, exp.Cast):  # includes TryCast
        return _is_literal_node(node.this)
    if isinstance(node, exp.Concat):
        return all(_is_literal_node(e) for e in node.expressions)
    return False


def _literal_value(node: exp.Expression) -> Any:
    """The Python value of a constant sub-tree, or raise ``Unsupported``."""
    node = _unparen(node)
    if isinstance(node, exp.Null):
        return None
    if isinstance(node, exp.Boolean):
        return bool(node.this)
    if isinstance(node, exp.Literal):
        text = node.this
        if node.is_string:
            return text
        return number_literal(text)
    if isinstance(node, exp.HexString):
        digits = node.this
        try:
            return bytes.fromhex(digits if len(digits) % 2 == 0 else "0" + digits)
        except ValueError:
            raise Unsupported from None
    if isinstance(node, exp.Neg):
        value = _literal_value(node.this)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float | Decimal):
            raise Unsupported
        return value.copy_negate() if isinstance(value, Decimal) else -value
    if isinstance(node, exp.Concat):  # adjacent string literals: 'a' 'b'
        parts = [_literal_value(e) for e in node.expressions]
        if any(p is None for p in parts):
            return None
        if not all(isinstance(p, str) for p in parts):
            raise Unsupported
        return "".join(parts)
    if isinstance(node, exp.Cast):
        return cast_literal(_literal_value(node.this), node.to)
    raise Unsupported
