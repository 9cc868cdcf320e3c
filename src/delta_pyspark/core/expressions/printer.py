"""The predicate AST printed as readable Spark SQL (round-trips through ``parse_predicate``)."""

from __future__ import annotations

import datetime as dt
import functools
import re
from decimal import Decimal
from typing import Any

import sqlglot
from sqlglot import exp

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
from delta_pyspark.core.expressions.parser import parse_predicate, parse_sql

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
        node = parse_sql(f"{name} = 1")
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
