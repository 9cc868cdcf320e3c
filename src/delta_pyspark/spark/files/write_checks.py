"""The rules every write checks inside its own Spark job (PROTOCOL.md "CHECK Constraints",
"Column Invariants"): NOT NULL columns (nested struct fields too, when their parent is not
null), CHECK constraints, ``delta.invariants`` column metadata and generated columns, each
failing on false or NULL, as delta-spark's do.

``guard_rows`` adds the check to the write's plan: a row that breaks a rule makes
``raise_error`` fail the job with a message that names the rule and shows the values of the
columns it references (native Spark expressions, so nothing is collected and valid data is
read once); ``violation_from`` turns that job failure back into an ``InvariantViolationError``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from delta_pyspark.core.protocol.schema import StructField, StructType
from delta_pyspark.exceptions import DeltaAnalysisException, InvariantViolationError

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

INVARIANTS_KEY = "delta.invariants"
_START = "[DELTA_VIOLATION]"
_END = "[/DELTA_VIOLATION]"
_MAX_VALUE_CHARS = 200


def column_invariants(schema: StructType) -> list[tuple[str, str]]:
    """``(dotted column name, SQL expression)`` of every ``delta.invariants`` in the
    schema (fields nested in structs included; the spec's JSON ``{"expression":
    {"expression": ...}}``)."""
    return [(ref.display, expr) for ref, expr in _invariants(schema)]


def _invariants(schema: StructType) -> list[tuple[_FieldRef, str]]:
    out = []
    for ref in _struct_fields(schema):
        raw = ref.field.metadata.get(INVARIANTS_KEY)
        if raw is None:
            continue
        try:
            doc = json.loads(raw) if isinstance(raw, str) else raw
            expression = doc["expression"]["expression"]
        except (ValueError, KeyError, TypeError):
            raise DeltaAnalysisException(
                f"column {ref.display} has a malformed {INVARIANTS_KEY}: {raw!r}"
            ) from None
        out.append((ref, str(expression)))
    return out


class _FieldRef(NamedTuple):
    """A field reachable through structs: its quoted path, its parent's (None at the top),
    the top-level column it lives in and a readable dotted name."""

    path: str
    parent: str | None
    top: str
    display: str
    field: StructField


def _struct_fields(schema: StructType, parent: _FieldRef | None = None) -> Iterator[_FieldRef]:
    for f in schema.fields:
        quoted = "`" + f.name.replace("`", "``") + "`"
        ref = _FieldRef(
            f"{parent.path}.{quoted}" if parent else quoted,
            parent.path if parent else None,
            parent.top if parent else f.name,
            f"{parent.display}.{f.name}" if parent else f.name,
            f,
        )
        yield ref
        if isinstance(f.type, StructType):
            yield from _struct_fields(f.type, ref)


def guard_rows(
    df: DataFrame,
    schema: StructType,
    checks: Mapping[str, str],
    generated: Sequence[tuple[str, str]] = (),
) -> DataFrame:
    """``df`` with a filter that fails the job on the first row breaking a rule.
    ``generated``: ``(column, rule)`` of generated columns (``spark/generated_columns``),
    reported as delta-spark's "Generated Column" CHECK constraint."""
    from pyspark.sql import functions as F

    present = {c.lower() for c in df.columns}
    rules: list[tuple[Column, Column]] = []
    for ref in _struct_fields(schema):
        if ref.field.nullable or ref.top.lower() not in present:
            continue
        broken = F.col(ref.path).isNull()
        if ref.parent is not None:
            broken = F.col(ref.parent).isNotNull() & broken
        text = f"{_START} NOT NULL constraint violated for column: {ref.display}.{_END}"
        rules.append((broken, F.lit(text)))
    for name, expr in checks.items():
        title = f"CHECK constraint {name} ({expr}) violated by row with values:"
        rules.append(_rule(df, expr, title))
    for _column, rule in generated:
        title = f"CHECK constraint Generated Column ({rule}) violated by row with values:"
        rules.append(_rule(df, rule, title))
    for ref, expr in _invariants(schema):
        if ref.top.lower() not in present:
            continue
        title = f"Invariant ({expr}) on column {ref.display} violated by row with values:"
        rules.append(_rule(df, expr, title))
    if not rules:
        return df
    guard = F.lit(True)
    for broken, message in reversed(rules):
        guard = F.when(broken, F.raise_error(message)).otherwise(guard)
    return df.where(guard)


def _rule(df: DataFrame, expr: str, title: str) -> tuple[Column, Column]:
    """A rule failing on false or NULL, its message listing the referenced values."""
    from pyspark.sql import functions as F

    parts: list[Column] = [F.lit(f"{_START} {title}")]
    for c in referenced_columns(expr, df.columns):
        parts += [F.lit(f"\n - {c} : "), _display(quoted_column(c))]
    parts.append(F.lit(_END))
    return ~F.coalesce(F.expr(expr), F.lit(False)), F.concat(*parts)


def quoted_column(name: str) -> Column:
    from pyspark.sql import functions as F

    return F.col(f"`{name.replace('`', '``')}`")


def _display(col: Column) -> Column:
    """A value as text for the error message (null spelled ``null``, long values cut)."""
    from pyspark.sql import functions as F

    text = F.coalesce(col.cast("string"), F.lit("null"))
    return F.when(
        F.length(text) > _MAX_VALUE_CHARS,
        F.concat(F.substring(text, 1, _MAX_VALUE_CHARS), F.lit("...")),
    ).otherwise(text)


def show_value(value: Any) -> str:
    text = "null" if value is None else str(value)
    return text if len(text) <= _MAX_VALUE_CHARS else text[:_MAX_VALUE_CHARS] + "..."


_STRING_LITERAL = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"")
_IDENTIFIER = re.compile(r"`((?:[^`]|``)+)`|([A-Za-z_][A-Za-z0-9_]*)")


def referenced_columns(expr: str, columns: list[str]) -> list[str]:
    """Top-level ``columns`` an SQL expression mentions, in order of appearance.

    A lexical scan (string literals skipped, backticks honoured, case-insensitive):
    good enough to pick the values worth showing in an error message.
    """
    by_lower = {c.lower(): c for c in columns}
    out: list[str] = []
    for m in _IDENTIFIER.finditer(_STRING_LITERAL.sub("''", expr)):
        name = m.group(1).replace("``", "`") if m.group(1) else m.group(2)
        column = by_lower.get(name.lower())
        if column is not None and column not in out:
            out.append(column)
    return out


def violation_from(error: BaseException) -> InvariantViolationError | None:
    """The typed error for a job ``guard_rows`` failed (None for any other failure)."""
    text = str(error)
    start = text.find(_START)
    if start < 0:
        return None
    start += len(_START)
    end = text.find(_END, start)
    if end >= 0:
        detail = text[start:end].strip()
    else:  # a one-line message without the end marker (e.g. the replaceWhere guard)
        detail = text[start:].strip().splitlines()[0].split(". SQLSTATE")[0].rstrip(" .")
    return InvariantViolationError(detail)
