"""A tiny predicate AST for file skipping and conflict detection, plus a SQL parser for it.

The core never evaluates rows; it only needs to know which columns a predicate touches and to
reason about min/max statistics. Anything the parser does not understand becomes ``Unknown``
("may match"), so a misunderstood predicate can cost performance but never correctness.
"""

from __future__ import annotations

import datetime as dt
import functools
import logging
import re
import struct
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation, localcontext
from typing import Any
from zoneinfo import ZoneInfo

import sqlglot
from sqlglot import exp

COMPARISON_OPS = ("=", "!=", "<", "<=", ">", ">=", "<=>")
FLIPPED_OP = {"=": "=", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<=", "<=>": "<=>"}


@dataclass(frozen=True)
class Column:
    """A (possibly nested) column reference: ``("a", "b")`` is ``a.b``."""

    path: tuple[str, ...]


@dataclass(frozen=True)
class Literal:
    """A constant: None, bool, int, float, Decimal, str, bytes, date or datetime.

    Its SQL type is the type of the column it is compared with. A naive datetime is a wall-clock
    time (interpreted in the session time zone against a TIMESTAMP column).
    """

    value: Any


@dataclass(frozen=True)
class Comparison:
    """``left op right`` with op one of ``= != < <= > >= <=>`` (``<=>`` is null-safe equality)."""

    op: str
    left: Expr
    right: Expr

    def __post_init__(self) -> None:
        if self.op not in COMPARISON_OPS:
            raise ValueError(f"unsupported comparison operator {self.op!r}")


@dataclass(frozen=True)
class In:
    """``expr IN (values...)``; values are Python constants (None allowed, as in SQL)."""

    expr: Expr
    values: tuple[Any, ...]


@dataclass(frozen=True)
class IsNull:
    expr: Expr


@dataclass(frozen=True)
class IsNotNull:
    expr: Expr


@dataclass(frozen=True)
class And:
    left: Expr
    right: Expr


@dataclass(frozen=True)
class Or:
    left: Expr
    right: Expr


@dataclass(frozen=True)
class Not:
    expr: Expr


@dataclass(frozen=True)
class StartsWith:
    """``expr LIKE 'prefix%'``."""

    expr: Expr
    prefix: str


@dataclass(frozen=True)
class Unknown:
    """A sub-expression we do not model: always "may match". ``columns`` are those it mentions."""

    sql: str
    columns: frozenset[tuple[str, ...]] = field(default=frozenset())


Expr = (
    Column | Literal | Comparison | In | IsNull | IsNotNull | And | Or | Not | StartsWith | Unknown
)


# ---------------------------------------------------------------------------------------------
# Generic helpers


def children(expr: Expr) -> tuple[Expr, ...]:
    """Direct sub-expressions (literal values of ``In`` are not expressions)."""
    if isinstance(expr, Comparison | And | Or):
        return (expr.left, expr.right)
    if isinstance(expr, In | IsNull | IsNotNull | Not | StartsWith):
        return (expr.expr,)
    return ()


def walk(expr: Expr) -> Iterator[Expr]:
    """Pre-order traversal of ``expr``."""
    yield expr
    for child in children(expr):
        yield from walk(child)


def columns_of(expr: Expr) -> set[tuple[str, ...]]:
    """Every column path the predicate mentions, including inside ``Unknown`` parts."""
    out: set[tuple[str, ...]] = set()
    for node in walk(expr):
        if isinstance(node, Column):
            out.add(node.path)
        elif isinstance(node, Unknown):
            out.update(node.columns)
    return out


def conjuncts(expr: Expr) -> list[Expr]:
    """Flatten a tree of ANDs into its conjuncts, in order."""
    if isinstance(expr, And):
        return conjuncts(expr.left) + conjuncts(expr.right)
    return [expr]


def and_all(exprs: Iterable[Expr]) -> Expr | None:
    """AND the expressions together (left-deep); None for an empty input."""
    result: Expr | None = None
    for e in exprs:
        result = e if result is None else And(result, e)
    return result


def map_columns(expr: Expr, fn: Callable[[tuple[str, ...]], tuple[str, ...]]) -> Expr:
    """Rewrite every column path with ``fn`` (e.g. logical -> physical names under column mapping).

    ``Unknown`` keeps its SQL text but has its column set rewritten too.
    """
    if isinstance(expr, Column):
        return Column(fn(expr.path))
    if isinstance(expr, Unknown):
        return Unknown(expr.sql, frozenset(fn(c) for c in expr.columns))
    if isinstance(expr, Comparison):
        return Comparison(expr.op, map_columns(expr.left, fn), map_columns(expr.right, fn))
    if isinstance(expr, And):
        return And(map_columns(expr.left, fn), map_columns(expr.right, fn))
    if isinstance(expr, Or):
        return Or(map_columns(expr.left, fn), map_columns(expr.right, fn))
    if isinstance(expr, In):
        return In(map_columns(expr.expr, fn), expr.values)
    if isinstance(expr, StartsWith):
        return StartsWith(map_columns(expr.expr, fn), expr.prefix)
    if isinstance(expr, IsNull | IsNotNull | Not):
        return type(expr)(map_columns(expr.expr, fn))
    return expr


def rename_columns(expr: Expr, mapping: Mapping[tuple[str, ...], tuple[str, ...]]) -> Expr:
    """Rename column paths found in ``mapping`` (exact match first, then case-insensitive, as
    Spark resolves names); other paths are kept. E.g. logical -> physical column names."""
    folded: dict[tuple[str, ...], tuple[str, ...] | None] = {}
    for path, target in mapping.items():
        key = tuple(p.lower() for p in path)
        folded[key] = target if key not in folded else None  # ambiguous: leave unmapped

    def rename(path: tuple[str, ...]) -> tuple[str, ...]:
        if path in mapping:
            return mapping[path]
        return folded.get(tuple(p.lower() for p in path)) or path

    return map_columns(expr, rename)


# ---------------------------------------------------------------------------------------------
# SQL -> AST


class _Unsupported(ValueError):
    """Internal: this sub-tree cannot be modelled (it becomes ``Unknown``)."""


def parse_predicate(sql: str, strip_qualifier: str | None = None) -> Expr:
    """Parse a Spark SQL boolean expression into the AST; never raises.

    ``strip_qualifier``: a table alias (e.g. ``"t"`` in a MERGE condition); a leading path
    component equal to it (case-insensitive) is dropped, so ``t.a.b`` becomes ``("a", "b")``.
    Other qualified names are kept as nested paths.
    """
    try:
        tree = _parse(sql)
    except Exception:
        return Unknown(sql)
    if tree is None:
        return Unknown(sql)
    try:
        return _Converter(strip_qualifier).predicate(tree)
    except Exception:  # a gap in the converter must not fail the caller
        return Unknown(sql)


_SQLGLOT_LOG = logging.getLogger("sqlglot")


def _parse(sql: str) -> exp.Expression | None:
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
        except _Unsupported:
            return self.unknown(node)

    def _predicate(self, node: exp.Expression) -> Expr:
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
            raise _Unsupported
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
                raise _Unsupported
            values = tuple(_literal_value(v) for v in node.expressions)
            return In(self.operand(node.this), values)
        if isinstance(node, exp.Like):
            return self.like(node, node, "\\")
        if isinstance(node, exp.Escape) and isinstance(node.this, exp.Like):
            esc = _literal_value(node.expression)
            if not isinstance(esc, str) or len(esc) != 1:
                raise _Unsupported
            return self.like(node.this, node, esc)
        if isinstance(node, exp.Column | exp.Dot):
            return self.column(node)
        if _is_literal_node(node):
            return Literal(_literal_value(node))
        raise _Unsupported

    def like(self, like: exp.Like, whole: exp.Expression, escape: str) -> Expr:
        pattern = _literal_value(like.expression)
        if not isinstance(pattern, str):
            raise _Unsupported
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
            raise _Unsupported
        return Not(result) if like.args.get("negate") else result

    # -- operands ---------------------------------------------------------------------------
    def operand(self, node: exp.Expression) -> Expr:
        node = _unparen(node)
        if isinstance(node, exp.Column | exp.Dot):
            try:
                return self.column(node)
            except _Unsupported:
                return self.unknown(node)
        if _is_literal_node(node):
            try:
                return Literal(_literal_value(node))
            except _Unsupported:
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
            except _Unsupported:
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
            raise _Unsupported
        return tuple(p.this for p in parts)
    if isinstance(node, exp.Dot):
        right = node.expression
        if not isinstance(right, exp.Identifier):
            raise _Unsupported
        return (*_column_path(node.this), right.this)
    raise _Unsupported


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
                raise _Unsupported  # Spark rejects such patterns
            prefix.append(pattern[i + 1])
            i += 2
            continue
        if ch in ("%", "_"):
            return "".join(prefix), pattern[i:]
        prefix.append(ch)
        i += 1
    return "".join(prefix), None


# -- literals -----------------------------------------------------------------------------------

_INT_RE = re.compile(r"^[+-]?\d+$")
_NUM_RE = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")
_DATE_RE = re.compile(r"^\s*([+-]?\d{4,6})(?:-(\d{1,2})(?:-(\d{1,2}))?)?(?:[T ].*)?\s*$")
_TS_RE = re.compile(
    r"^\s*(\d{4})-(\d{1,2})-(\d{1,2})(?:[T ](\d{1,2}):(\d{1,2})(?::(\d{1,2})(?:\.(\d{0,9}))?)?)?"
    r"\s*(Z|UTC|GMT|[+-]\d{1,2}(?::?\d{2})?|[A-Za-z_]+/[A-Za-z_/+-]+)?\s*$"
)
_INT_RANGES = {
    exp.DataType.Type.TINYINT: 8,
    exp.DataType.Type.SMALLINT: 16,
    exp.DataType.Type.INT: 32,
    exp.DataType.Type.BIGINT: 64,
}
_TIMESTAMP_TYPES = {
    exp.DataType.Type.TIMESTAMP,
    exp.DataType.Type.TIMESTAMPTZ,
    exp.DataType.Type.TIMESTAMPLTZ,
    exp.DataType.Type.DATETIME,
}


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
    """The Python value of a constant sub-tree, or raise ``_Unsupported``."""
    node = _unparen(node)
    if isinstance(node, exp.Null):
        return None
    if isinstance(node, exp.Boolean):
        return bool(node.this)
    if isinstance(node, exp.Literal):
        text = node.this
        if node.is_string:
            return text
        return _number(text)
    if isinstance(node, exp.HexString):
        digits = node.this
        try:
            return bytes.fromhex(digits if len(digits) % 2 == 0 else "0" + digits)
        except ValueError:
            raise _Unsupported from None
    if isinstance(node, exp.Neg):
        value = _literal_value(node.this)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float | Decimal):
            raise _Unsupported
        return value.copy_negate() if isinstance(value, Decimal) else -value
    if isinstance(node, exp.Concat):  # adjacent string literals: 'a' 'b'
        parts = [_literal_value(e) for e in node.expressions]
        if any(p is None for p in parts):
            return None
        if not all(isinstance(p, str) for p in parts):
            raise _Unsupported
        return "".join(parts)
    if isinstance(node, exp.Cast):
        return _cast_literal(_literal_value(node.this), node.to)
    raise _Unsupported


def _number(text: str) -> int | float | Decimal:
    if _INT_RE.match(text):
        return int(text)
    if not _NUM_RE.match(text):
        raise _Unsupported
    if "e" in text or "E" in text:
        return float(text)
    return Decimal(text)  # Spark reads 1.5 as a DECIMAL literal


def _cast_literal(value: Any, to: exp.DataType) -> Any:
    if value is None:
        return None
    t = to.this
    if t in _INT_RANGES:
        return _cast_int(value, _INT_RANGES[t])
    if t in (exp.DataType.Type.DOUBLE, exp.DataType.Type.FLOAT):
        result = _cast_float(value)
        if t == exp.DataType.Type.FLOAT:
            result = struct.unpack("<f", struct.pack("<f", result))[0]
        return result
    if t == exp.DataType.Type.DECIMAL:
        return _cast_decimal(value, to)
    if t in (exp.DataType.Type.VARCHAR, exp.DataType.Type.CHAR, exp.DataType.Type.TEXT):
        return _cast_string(value)
    if t == exp.DataType.Type.BOOLEAN:
        return _cast_bool(value)
    if t == exp.DataType.Type.DATE:
        return _cast_date(value)
    if t in _TIMESTAMP_TYPES:
        return _cast_timestamp(value, ntz=False)
    if t == exp.DataType.Type.TIMESTAMPNTZ:
        return _cast_timestamp(value, ntz=True)
    if t in (exp.DataType.Type.BINARY, exp.DataType.Type.VARBINARY):
        if isinstance(value, bytes):
            return value
        if isinstance(value, str):
            return value.encode("utf-8")
    raise _Unsupported


def _cast_int(value: Any, bits: int) -> int:
    if isinstance(value, bool):
        raise _Unsupported
    if isinstance(value, str):
        if not _INT_RE.match(value.strip()):
            raise _Unsupported
        value = int(value.strip())
    elif isinstance(value, float | Decimal):
        if not Decimal(value).is_finite():
            raise _Unsupported
        value = int(value)  # Spark truncates toward zero
    if not isinstance(value, int):
        raise _Unsupported
    if not -(1 << (bits - 1)) <= value < (1 << (bits - 1)):
        raise _Unsupported
    return value


def _cast_float(value: Any) -> float:
    if isinstance(value, bool):
        raise _Unsupported
    if isinstance(value, int | float | Decimal):
        return float(value)
    if isinstance(value, str):
        text = value.strip()
        if _NUM_RE.match(text) or text in ("NaN", "Infinity", "-Infinity", "+Infinity"):
            return float(text.replace("Infinity", "inf"))
    raise _Unsupported


def _cast_decimal(value: Any, to: exp.DataType) -> Decimal:
    params = [p.this for p in to.expressions]
    try:
        precision = int(params[0].this) if params else 10
        scale = int(params[1].this) if len(params) > 1 else 0
    except (AttributeError, ValueError, TypeError):
        raise _Unsupported from None
    if isinstance(value, bool):
        raise _Unsupported
    if isinstance(value, str):
        value = value.strip()
        if not _NUM_RE.match(value):
            raise _Unsupported
    try:
        dec = Decimal(value) if not isinstance(value, float) else Decimal(repr(value))
        with localcontext(prec=100):
            dec = dec.quantize(Decimal(1).scaleb(-scale), rounding=ROUND_HALF_UP)
    except (InvalidOperation, ValueError, TypeError):
        raise _Unsupported from None
    if not dec.is_finite() or len(dec.as_tuple().digits) > precision:
        raise _Unsupported
    return dec


def _cast_string(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | Decimal):
        return format(value, "f") if isinstance(value, Decimal) else str(value)
    if isinstance(value, dt.date) and not isinstance(value, dt.datetime):
        return value.isoformat()
    raise _Unsupported


def _cast_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return value != 0
    if isinstance(value, str):
        text = value.strip().lower()
        if text in ("t", "true", "y", "yes", "1"):
            return True
        if text in ("f", "false", "n", "no", "0"):
            return False
    raise _Unsupported


def _cast_date(value: Any) -> dt.date:
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            raise _Unsupported  # would depend on the session time zone
        return value.date()
    if isinstance(value, dt.date):
        return value
    if isinstance(value, str):
        return parse_date(value)
    raise _Unsupported


def _cast_timestamp(value: Any, ntz: bool) -> dt.datetime:
    if isinstance(value, dt.datetime):
        if ntz and value.tzinfo is not None:
            raise _Unsupported
        return value
    if isinstance(value, dt.date):
        return dt.datetime(value.year, value.month, value.day)
    if isinstance(value, str):
        result = parse_timestamp(value)
        if ntz and result.tzinfo is not None:
            raise _Unsupported
        return result
    raise _Unsupported


def parse_date(text: str) -> dt.date:
    """Parse a date as Spark casts a string to DATE; ValueError if it is not one."""
    m = _DATE_RE.match(text)
    if not m:
        raise _Unsupported
    try:
        return dt.date(int(m.group(1)), int(m.group(2) or 1), int(m.group(3) or 1))
    except ValueError:
        raise _Unsupported from None


def parse_timestamp(text: str) -> dt.datetime:
    """Parse a timestamp string; naive unless it has a zone (Z, offset, region); else ValueError."""
    m = _TS_RE.match(text)
    if not m:
        raise _Unsupported
    year, month, day, hour, minute, sec, frac, zone = m.groups()
    micro = int((frac or "").ljust(6, "0")[:6] or 0)
    try:
        result = dt.datetime(
            int(year), int(month), int(day), int(hour or 0), int(minute or 0), int(sec or 0), micro
        )
    except ValueError:
        raise _Unsupported from None
    if zone is None:
        return result
    if zone in ("Z", "UTC", "GMT"):
        return result.replace(tzinfo=dt.UTC)
    if zone[0] in "+-":
        digits = zone[1:].replace(":", "")
        hours, minutes = (
            (int(digits[:-2] or 0), int(digits[-2:]))
            if len(digits) > 2
            else (
                int(digits),
                0,
            )
        )
        offset = dt.timedelta(hours=hours, minutes=minutes)
        return result.replace(tzinfo=dt.timezone(offset if zone[0] == "+" else -offset))
    try:
        return result.replace(tzinfo=ZoneInfo(zone))
    except Exception:
        raise _Unsupported from None


# ---------------------------------------------------------------------------------------------
# AST -> SQL

_IDENT_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_KEYWORDS = {k.upper() for k in sqlglot.Dialect.get_or_raise("spark").tokenizer_class.KEYWORDS}
_PRECEDENCE = {Or: 1, And: 2, Not: 3}


def to_sql(expr: Expr) -> str:
    """Readable Spark SQL for the predicate (round-trips through ``parse_predicate``)."""
    if isinstance(expr, Column):
        return ".".join(_quote_ident(p) for p in expr.path)
    if isinstance(expr, Literal):
        return sql_literal(expr.value)
    if isinstance(expr, Unknown):
        return expr.sql
    if isinstance(expr, Comparison):
        return f"{_operand_sql(expr.left)} {expr.op} {_operand_sql(expr.right)}"
    if isinstance(expr, In):
        values = ", ".join(sql_literal(v) for v in expr.values)
        return f"{_operand_sql(expr.expr)} IN ({values})"
    if isinstance(expr, IsNull):
        return f"{_operand_sql(expr.expr)} IS NULL"
    if isinstance(expr, IsNotNull):
        return f"{_operand_sql(expr.expr)} IS NOT NULL"
    if isinstance(expr, StartsWith):
        pattern = "".join("\\" + ch if ch in "\\%_" else ch for ch in expr.prefix) + "%"
        return f"{_operand_sql(expr.expr)} LIKE {sql_literal(pattern)}"
    if isinstance(expr, Not):
        inner = to_sql(expr.expr)
        return f"NOT {inner}" if isinstance(expr.expr, Column | Literal) else f"NOT ({inner})"
    if isinstance(expr, And):
        if _is_split_like(expr):
            return expr.right.sql  # type: ignore[union-attr]
        return f"{_child_sql(expr.left, 2)} AND {_child_sql(expr.right, 3)}"
    if isinstance(expr, Or):
        return f"{_child_sql(expr.left, 1)} OR {_child_sql(expr.right, 2)}"
    raise TypeError(f"not a predicate expression: {expr!r}")


def _is_split_like(expr: And) -> bool:
    """True for the ``And(StartsWith, Unknown(LIKE))`` pair that the parser makes of one LIKE."""
    return (
        isinstance(expr.left, StartsWith)
        and isinstance(expr.right, Unknown)
        and " LIKE " in expr.right.sql.upper()
        and parse_predicate(expr.right.sql) == expr
    )


def _child_sql(expr: Expr, min_level: int) -> str:
    level = _PRECEDENCE.get(type(expr), 5 if not isinstance(expr, Unknown) else 0)
    text = to_sql(expr)
    return text if level >= min_level else f"({text})"


def _operand_sql(expr: Expr) -> str:
    if isinstance(expr, Column | Literal):
        return to_sql(expr)
    return f"({to_sql(expr)})"


@functools.lru_cache(maxsize=4096)
def _quote_ident(name: str) -> str:
    if _IDENT_RE.match(name) and name.upper() not in _KEYWORDS and _reads_as_column(name):
        return name
    return "`" + name.replace("`", "``") + "`"


def _reads_as_column(name: str) -> bool:
    try:
        node = _parse(f"{name} = 1")
    except Exception:
        return False
    return isinstance(node, exp.EQ) and node.this == exp.column(name)


def sql_literal(value: Any) -> str:
    """A Spark SQL literal for a Python constant."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            name = "NaN" if value != value else ("Infinity" if value > 0 else "-Infinity")
            return f"CAST('{name}' AS DOUBLE)"
        text = repr(value)
        if "e" in text:
            mantissa, exponent = text.split("e")
            if "." not in mantissa:
                mantissa += ".0"
            text = f"{mantissa}E{int(exponent)}"
        return text + "D" if "E" not in text else text
    if isinstance(value, Decimal):
        text = format(value, "f")
        return text if "." in text else f"{text}BD"
    if isinstance(value, str):
        escaped = value.replace("\\", "\\\\").replace("'", "\\'").replace("\n", "\\n")
        return "'" + escaped.replace("\r", "\\r").replace("\t", "\\t") + "'"
    if isinstance(value, bytes):
        return "X'" + value.hex().upper() + "'"
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            offset = value.utcoffset() or dt.timedelta(0)
            value = value.replace(tzinfo=None) - offset
            return f"TIMESTAMP'{value.isoformat(sep=' ')}Z'"
        return f"TIMESTAMP'{value.isoformat(sep=' ')}'"
    if isinstance(value, dt.date):
        return f"DATE'{value.isoformat()}'"
    raise TypeError(f"cannot render {value!r} as a SQL literal")
