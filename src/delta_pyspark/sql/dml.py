"""MERGE INTO, UPDATE and DELETE FROM: parsed here, run through ``DeltaTable``'s builders
with the user's expression texts."""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame, SparkSession

from delta_pyspark.exceptions import (
    DeltaParseException,
    DeltaTableNotFoundError,
)
from delta_pyspark.sql.resolve import existing, resolve
from delta_pyspark.sql.statement import Statement, own_name, where
from delta_pyspark.sql.text import (
    StatementParser,
    TableRef,
    parse_assignments,
    split_top,
    unqualified,
    without_qualifier,
)
from delta_pyspark.tables import DeltaTable

_AFFECTED = "num_affected_rows long"


_MERGE_COLUMNS = (
    "num_affected_rows long, num_updated_rows long, num_deleted_rows long, num_inserted_rows long"
)


def merge(p: StatementParser) -> Statement:
    evolve = p.accept("WITH", "SCHEMA", "EVOLUTION")
    p.expect("INTO", what="INTO after MERGE")
    target = p.table()
    target_alias = p.alias("USING")
    p.expect("USING", what="USING <source> in MERGE")
    if p.at("("):
        source_query: str | None = p.group("the source query")
        source: TableRef | None = None
    else:
        source_query, source = None, p.table()
    source_alias = p.alias("ON")
    p.expect("ON", what="ON <merge condition>")
    condition = p.text_until("WHEN", what="a merge condition after ON")
    clauses: list[tuple[str, str, str | None, Any]] = []
    while p.accept("WHEN"):
        clauses.append(_merge_clause(p))
    if not clauses:
        p.fail("at least one WHEN [NOT] MATCHED clause")
    p.end()

    def run(spark: SparkSession, path: str) -> DataFrame:
        if source_query is not None:
            src = spark.sql(source_query)
        else:
            assert source is not None
            src = _read(spark, source)
        alias = source_alias or (source.parts[-1] if source and not source.delta_path else None)
        if alias:
            src = src.alias(alias)
        t_alias = target_alias or own_name(target)
        builder = DeltaTable(spark, path, t_alias).merge(src, condition)
        if evolve:
            builder = builder.withSchemaEvolution()
        for when, action, cond, payload in clauses:
            columns = unqualified(payload, t_alias) if payload else payload
            builder = _add_clause(builder, when, action, cond, columns)
        return builder.execute()

    return Statement("MERGE", target, _MERGE_COLUMNS, run, changes_schema=True)


def _merge_clause(p: StatementParser) -> tuple[str, str, str | None, Any]:
    if p.accept("MATCHED"):
        when = "matched"
    elif p.accept("NOT", "MATCHED"):
        when = "notMatchedBySource" if p.accept("BY", "SOURCE") else "notMatched"
        if when == "notMatched":
            p.accept("BY", "TARGET")
    else:
        p.fail("MATCHED or NOT MATCHED after WHEN")
    cond = p.text_until("THEN", what="a clause condition after AND") if p.accept("AND") else None
    p.expect("THEN", what="THEN in a WHEN clause")
    if when == "notMatched":
        p.expect("INSERT", what="INSERT in a WHEN NOT MATCHED clause")
        if p.accept("*"):
            return when, "insertAll", cond, None
        columns = [c.strip().strip("`") for c in split_top(p.group("the INSERT column list"))]
        p.expect("VALUES", what="VALUES after the INSERT column list")
        values = split_top(p.group("the INSERT values"))
        if len(columns) != len(values) or not columns:
            raise DeltaParseException(
                f"INSERT in MERGE names {len(columns)} columns but gives {len(values)} values"
            )
        return when, "insert", cond, dict(zip(columns, values, strict=True))
    if p.accept("DELETE"):
        return when, "delete", cond, None
    p.expect("UPDATE", "SET", what="UPDATE SET or DELETE")
    if p.accept("*"):
        if when != "matched":
            p.fail("column = expression (UPDATE SET * needs a source row)")
        return when, "updateAll", cond, None
    return (
        when,
        "update",
        cond,
        parse_assignments(p.text_until("WHEN", what="assignments"), "MERGE"),
    )


def _add_clause(builder: Any, when: str, action: str, cond: str | None, payload: Any) -> Any:
    if when == "matched":
        if action == "delete":
            return builder.whenMatchedDelete(cond)
        if action == "updateAll":
            return builder.whenMatchedUpdateAll(cond)
        return builder.whenMatchedUpdate(cond, payload)
    if when == "notMatched":
        if action == "insertAll":
            return builder.whenNotMatchedInsertAll(cond)
        return builder.whenNotMatchedInsert(cond, payload)
    if action == "delete":
        return builder.whenNotMatchedBySourceDelete(cond)
    return builder.whenNotMatchedBySourceUpdate(cond, payload)


def update(p: StatementParser) -> Statement:
    table = p.table()
    qualifier = p.alias("SET") or own_name(table)
    p.expect("SET", what="SET in UPDATE")
    assignments = parse_assignments(p.text_until("WHERE", what="assignments after SET"), "UPDATE")
    condition = without_qualifier(where(p), qualifier)
    p.end()
    values = {
        key: without_qualifier(value, qualifier) or value
        for key, value in unqualified(assignments, qualifier).items()
    }

    def run(spark: SparkSession, path: str) -> DataFrame:
        return DeltaTable(spark, path).update(condition, values)

    return Statement("UPDATE", table, _AFFECTED, run, spark_knows=True)


def delete(p: StatementParser) -> Statement:
    table = p.table()
    qualifier = p.alias("WHERE") or own_name(table)
    condition = without_qualifier(where(p), qualifier)
    p.end()

    def run(spark: SparkSession, path: str) -> DataFrame:
        return DeltaTable(spark, path).delete(condition)

    return Statement("DELETE", table, _AFFECTED, run, spark_knows=True)


def _read(spark: SparkSession, ref: TableRef) -> DataFrame:
    """A MERGE source named as a table: a Delta table (path or name) or anything Spark reads."""
    path = ref.delta_path
    if path is not None:
        return DeltaTable(spark, existing(path, ref)).toDF()
    kind, location = resolve(spark, ref)
    if kind == "delta":
        assert location is not None
        return DeltaTable(spark, location).toDF()
    if kind == "missing":
        raise DeltaTableNotFoundError(f"MERGE source: table {ref.text} not found")
    return spark.table(ref.text)
