"""DML conditions and assignments given as SQL strings or PySpark ``Column``s.

Spark evaluates them as given; the Spark-free AST (``core.expressions``) is
parsed from their SQL text only to prune files and to record the transaction's
read predicate. What the parser cannot model becomes ``Unknown`` ("may match"),
so a condition we do not understand prunes nothing but is still applied.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from delta_pyspark.core.expressions.nodes import Expr, Unknown
from delta_pyspark.core.expressions.parser import parse_predicate
from delta_pyspark.core.protocol.schema import StructType
from delta_pyspark.exceptions import DeltaAnalysisException
from delta_pyspark.spark.jvm.plans import filter_condition_sql

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

    from delta_pyspark.core.snapshot.snapshot import Snapshot


def condition_sql(condition: str | Column | None) -> str | None:
    """The SQL text of a condition (a ``Column`` prints as ``Column<'...'>``)."""
    if condition is None or isinstance(condition, str):
        return condition
    text = str(condition)
    if text.startswith("Column<'") and text.endswith("'>"):
        return text[8:-2]
    return text


def as_column(value: str | Column) -> Column:
    """A Spark ``Column`` for a SQL expression string or a ``Column``."""
    from pyspark.sql import Column as SparkColumn
    from pyspark.sql import functions as F

    if isinstance(value, SparkColumn):
        return value
    if isinstance(value, str):
        return F.expr(value)
    raise DeltaAnalysisException(
        f"expected a SQL expression string or a Column, got {type(value).__name__}"
    )


def as_predicate(condition: str | Column, over: DataFrame | None = None, where: Any = None) -> Expr:
    """The condition as the Spark-free AST (``Unknown`` parts where it cannot be modelled).

    A ``Column`` prints as Spark's internal notation, not SQL; given the DataFrame it
    filters (``over``), Spark resolves it and prints its SQL instead. ``where`` is the
    filter function to use (the unpatched one when called from the filter hook).
    """
    from pyspark.sql import Column as SparkColumn

    if isinstance(condition, SparkColumn) and over is not None:
        try:
            filtered = (where or type(over).where)(over, condition)
            sql = filter_condition_sql(filtered)
        except Exception:  # not a plain filter plan: model nothing
            sql = None
        return parse_predicate(sql) if sql else Unknown(condition_sql(condition) or "")
    return parse_predicate(condition_sql(condition) or "true")


def table_predicate(spark: SparkSession, snapshot: Snapshot, condition: str | Column) -> Expr:
    """``as_predicate`` of a DML condition on the table of ``snapshot``: a ``Column`` is
    resolved against an empty scan of the table; a SQL string needs no Spark call."""
    if isinstance(condition, str):
        return as_predicate(condition)
    from delta_pyspark.spark.files.scan import read_files

    return as_predicate(condition, read_files(spark, snapshot, snapshot.files.slice(0, 0)))


def resolve_assignments(
    schema: StructType, assignments: Mapping[str, Any], what: str
) -> dict[str, list[tuple[str | None, Column]]]:
    """Group ``{"col" or "col.nested.field": value}`` by the target's top-level column.

    Names resolve case-insensitively; the result maps each top-level column (as the
    table spells it) to ``(nested path or None, value)`` pairs in the given order.
    """
    if not assignments:
        raise DeltaAnalysisException(f"{what} needs at least one column assignment")
    grouped: dict[str, list[tuple[str | None, Column]]] = {}
    for key, value in assignments.items():
        top, _, rest = key.strip("`").partition(".")
        field = schema.find_field(top, case_sensitive=False)
        if field is None:
            names = ", ".join(f"`{n}`" for n in schema.field_names)
            raise DeltaAnalysisException(
                f"[UNRESOLVED_COLUMN.WITH_SUGGESTION] {what}: a column with name `{key}` "
                f"cannot be resolved. Did you mean one of the following? [{names}]"
            )
        grouped.setdefault(field.name, []).append((rest or None, as_column(value)))
    return grouped


def assigned_value(current: Column, assignments: list[tuple[str | None, Column]]) -> Column:
    """``current`` with the assignments applied (whole column, or nested fields)."""
    result = current
    for path, value in assignments:
        result = value if path is None else result.withField(path, value)
    return result
