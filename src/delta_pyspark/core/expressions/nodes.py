"""A tiny predicate AST for file skipping and conflict detection.

The core never evaluates rows; it only needs to know which columns a predicate touches and to
reason about min/max statistics. Anything ``parser.parse_predicate`` does not
understand becomes ``Unknown`` ("may match"), so a misunderstood predicate can cost performance
but never correctness. ``printer.to_sql`` prints the AST back as Spark SQL.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

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
