"""Generated columns in the data plane (PROTOCOL.md "Generated Columns").

- ``validate``: delta-spark's creation checks that need Spark's analyzer (after the core's
  Spark-free ones): the expression resolves against the table's non-generated columns, is
  deterministic, calls no user-defined function, and its type is the column's type.
- ``fill_missing``: a write that leaves a generated column out gets the expression's value.
- ``checks``: the rule every write enforces (``spark/files/write_checks.guard_rows``): a given value
  must equal the expression, null-safe (delta-spark's "Generated Column" constraint).
- ``recompute``: UPDATE and MERGE recompute a generated column their clause does not set,
  from the row's new values.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from delta_pyspark.core.protocol.actions import Protocol
from delta_pyspark.core.protocol.generated_columns import (
    check_generation_expressions,
    generation_expressions,
)
from delta_pyspark.core.protocol.schema import StructType
from delta_pyspark.exceptions import GeneratedColumnError
from delta_pyspark.spark.jvm.plans import first_disallowed_expression
from delta_pyspark.spark.types import relaxed, to_spark_type

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

# deterministic for Spark, but a different value each query: delta-spark does not allow them
_PER_QUERY = frozenset(
    {
        "CurrentDate",
        "CurrentTimestamp",
        "Now",
        "LocalTimestamp",
        "CurrentTimeZone",
        "CurrentUser",
        "CurrentDatabase",
        "CurrentCatalog",
        "CurrentBatchTimestamp",
    }
)


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def validate(spark: SparkSession, schema: StructType) -> None:
    """Refuse a schema whose generated columns delta-spark would refuse at creation."""
    from pyspark.errors import AnalysisException
    from pyspark.sql import functions as F

    generated = generation_expressions(schema)
    if not generated:
        return
    check_generation_expressions(schema)
    base = StructType(tuple(f for f in schema.fields if f.name not in generated))
    empty = spark.createDataFrame([], to_spark_type(base)) if base.fields else spark.range(0)
    for name, text in generated.items():
        try:
            analysed = empty.select(F.expr(text).alias(name))
            dtype = analysed.schema[name].dataType
        except AnalysisException as e:
            if "UNRESOLVED_COLUMN" in str(e) or "cannot be resolved" in str(e):
                raise GeneratedColumnError(
                    "[DELTA_INVALID_GENERATED_COLUMN_REFERENCES] "
                    "A generated column cannot use a non-existent column or another generated "
                    f"column: {name} GENERATED ALWAYS AS ({text}): {str(e).splitlines()[0]}",
                ) from None
            raise
        _check_expression(analysed, name, text)
        expected = relaxed(to_spark_type(schema.field(name).type))
        if relaxed(dtype) != expected:
            raise GeneratedColumnError(
                "[DELTA_GENERATED_COLUMNS_EXPR_TYPE_MISMATCH] "
                f"The expression type of the generated column {name} is "
                f"{dtype.simpleString()}, but the column type is {expected.simpleString()}",
            )


def _check_expression(analysed: DataFrame, name: str, text: str) -> None:
    """Refuse what a generated column may not use, found as delta-spark finds it: walking the
    analysed expression top-down."""
    found = first_disallowed_expression(analysed, _PER_QUERY)
    if found is None:
        return
    kind, sql = found
    if kind in ("not_a_projection", "per_query"):
        raise GeneratedColumnError(
            "[DELTA_UNSUPPORTED_EXPRESSION_GENERATED_COLUMN] "
            f"{sql or text} cannot be used in a generated column ({name})",
        )
    what, condition = {
        "udf": ("a user-defined function", "DELTA_UDF_IN_GENERATED_COLUMN"),
        "aggregate": ("an aggregate expression", "DELTA_AGGREGATE_IN_GENERATED_COLUMN"),
        "nondeterministic": (
            "a non deterministic expression",
            "DELTA_NON_DETERMINISTIC_EXPRESSION_IN_GENERATED_COLUMN",
        ),
    }[kind]
    raise GeneratedColumnError(
        f"[{condition}] Found {sql}. A generated column cannot use {what} ({name})"
    )


def checks(schema: StructType, protocol: Protocol | None) -> list[tuple[str, str]]:
    """``(column, rule)``: the null-safe equality each written row must satisfy."""
    return [
        (name, f"{_quoted(name)} <=> ({text})")
        for name, text in generation_expressions(schema, protocol).items()
    ]


def missing(
    schema: StructType, protocol: Protocol | None, df: DataFrame, omitted: set[str]
) -> list[str]:
    """The generated columns of the table that ``df`` (a write's data) leaves out: absent, or
    in ``omitted`` (lower case: left out of an INSERT's column list, where Spark puts a NULL).
    An explicit NULL is a value, which the write's check then refuses."""
    generated = generation_expressions(schema, protocol)
    if not generated:
        return []
    given = {c.lower() for c in df.columns} - omitted
    return [n for n in generated if n.lower() not in given]


def fill_missing(df: DataFrame, schema: StructType, names: Sequence[str]) -> DataFrame:
    """``df`` (the table's columns, in order) with ``names`` computed by their expressions."""
    from pyspark.sql import functions as F

    if not names:
        return df
    exprs = generation_expressions(schema)
    cols = [
        F.expr(exprs[f.name]).cast(relaxed(to_spark_type(f.type))).alias(f.name)
        if f.name in names
        else F.col(_quoted(f.name))
        for f in schema.fields
    ]
    return df.select(*cols)


def recompute(
    df: DataFrame, schema: StructType, protocol: Protocol | None, flag: str, codes: dict[str, Any]
) -> DataFrame:
    """``df`` (table columns plus the ``flag`` column) with each generated column recomputed
    from the row's values where ``flag`` is one of ``codes[column]`` (the clauses, or the
    UPDATE, that leave it unset)."""
    from pyspark.sql import functions as F

    exprs = generation_expressions(schema, protocol)
    todo = {n: c for n, c in codes.items() if n in exprs and c}
    if not todo:
        return df
    cols: list[Column] = []
    for c in df.columns:
        if c not in todo:
            cols.append(F.col(_quoted(c)))
            continue
        value = F.expr(exprs[c]).cast(relaxed(to_spark_type(schema.field(c).type)))
        cols.append(F.when(F.col(flag).isin(todo[c]), value).otherwise(F.col(_quoted(c))).alias(c))
    return df.select(*cols)
