"""MERGE INTO, UPDATE and DELETE FROM on a Delta table, as Spark parsed and resolved them
(``DeltaDml.java``): run through ``DeltaTable``'s builders with Spark's resolved expressions
as ``Column``s, so SQL and the Python API share one command each."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, SparkSession

from delta_pyspark.spark.catalog.session_catalog import refresh_delta_entry
from delta_pyspark.spark.commands.merge.builder import DeltaMergeBuilder
from delta_pyspark.tables import DeltaTable


@dataclass(frozen=True)
class Clause:
    """One WHEN clause of a resolved MERGE."""

    when: str  # matched | notMatched | notMatchedBySource
    action: str  # update | insert | delete
    condition: Column | None
    star: bool  # UPDATE SET * / INSERT *
    assignments: Mapping[str, Column] | None  # target column -> value


def merge(
    spark: SparkSession,
    table: str,
    name: str | None,
    target_alias: str,
    source: DataFrame,
    source_alias: str,
    condition: Column,
    clauses: Iterable[Clause],
    evolve: bool,
) -> DataFrame:
    """The MERGE ``DeltaDml`` resolved, into the Delta table at ``table`` (``name``: its
    catalog name, whose entry is refreshed after schema evolution)."""
    builder = DeltaTable(spark, table, target_alias).merge(source.alias(source_alias), condition)
    if evolve:
        builder = builder.withSchemaEvolution()
    for clause in clauses:
        builder = _with_clause(builder, clause)
    result = builder.execute()
    if name is not None:
        refresh_delta_entry(spark, name)
    return result


def _with_clause(builder: DeltaMergeBuilder, clause: Clause) -> DeltaMergeBuilder:
    condition, columns = clause.condition, clause.assignments
    if clause.action == "delete":
        if clause.when == "matched":
            return builder.whenMatchedDelete(condition)
        return builder.whenNotMatchedBySourceDelete(condition)
    if clause.action == "insert":
        if clause.star:
            return builder.whenNotMatchedInsertAll(condition)
        return builder.whenNotMatchedInsert(condition, columns)
    if clause.when == "matched":
        if clause.star:
            return builder.whenMatchedUpdateAll(condition)
        return builder.whenMatchedUpdate(condition, columns)
    return builder.whenNotMatchedBySourceUpdate(condition, columns)


def update(
    spark: SparkSession,
    table: str,
    condition: Column | None,
    assignments: Mapping[str, Column],
) -> DataFrame:
    return DeltaTable(spark, table).update(condition, assignments)


def delete(spark: SparkSession, table: str, condition: Column | None) -> DataFrame:
    return DeltaTable(spark, table).delete(condition)
