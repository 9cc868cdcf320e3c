"""BEGIN [TRANSACTION | WORK], COMMIT and ROLLBACK: a transaction over the attached
catalog's tables spelled in SQL (Spark has no such statements; a ``BEGIN`` that opens a
SQL script block stays Spark's)."""

from __future__ import annotations

from pyspark.sql import SparkSession

from delta_pyspark.spark.catalog.managed_tables import begin as begin_transaction
from delta_pyspark.spark.catalog.managed_tables import finish
from delta_pyspark.sql.statement import Statement
from delta_pyspark.sql.text import StatementParser


def begin(p: StatementParser) -> Statement | None:
    _optional_noise(p)
    if not p.done():
        return None  # BEGIN ... END: a SQL script, Spark's

    def run(spark: SparkSession, _path: str) -> None:
        begin_transaction(spark)

    return Statement("BEGIN TRANSACTION", None, "", run)


def commit(p: StatementParser) -> Statement:
    return _end(p, "COMMIT", commit=True)


def rollback(p: StatementParser) -> Statement:
    return _end(p, "ROLLBACK", commit=False)


def _end(p: StatementParser, kind: str, commit: bool) -> Statement:
    _optional_noise(p)
    p.end()

    def run(spark: SparkSession, _path: str) -> None:
        finish(spark, commit)

    return Statement(kind, None, "", run)


def _optional_noise(p: StatementParser) -> None:
    if not p.accept("TRANSACTION"):
        p.accept("WORK")
