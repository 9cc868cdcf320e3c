"""``DESCRIBE [TABLE] [EXTENDED] delta.`path``` and ``SHOW COLUMNS IN delta.`path```: what
Spark answers for a catalog table, for a table that is only a path (Spark would look
``delta`` up as a database). Names stay Spark's: their catalog entries answer these."""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession

from delta_pyspark.core.protocol.schema import StructField
from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.spark.types import to_spark_type
from delta_pyspark.sql.statement import Statement
from delta_pyspark.sql.text import StatementParser

_DESCRIBE_DDL = "col_name string, data_type string, comment string"


def describe_table(p: StatementParser) -> Statement | None:
    """``[TABLE] [EXTENDED|FORMATTED] delta.`path``` after DESCRIBE; None for anything else."""
    p.accept("TABLE")
    extended = p.accept("EXTENDED") or p.accept("FORMATTED")
    first = p.peek()
    if first is None or not (first.is_name or first.kind == "string"):
        return None  # DESCRIBE (query), ...: Spark's
    target = p.table()
    if target.delta_path is None or not p.done():
        return None  # a name, or a column/partition spec: Spark's
    p.end()

    def run(spark: SparkSession, path: str) -> DataFrame:
        snapshot = DeltaLog.for_table(path).snapshot()
        rows = [_row(f) for f in snapshot.schema.fields]
        partitions = list(snapshot.metadata.partition_columns)
        if partitions:
            by_name = {f.name: f for f in snapshot.schema.fields}
            rows += [("# Partition Information", "", ""), ("# col_name", "data_type", "comment")]
            rows += [_row(by_name[c]) for c in partitions]
        if extended:
            properties = ",".join(f"{k}={v}" for k, v in sorted(snapshot.configuration.items()))
            rows += [
                ("", "", ""),
                ("# Detailed Table Information", "", ""),
                ("Name", f"delta.`{snapshot.table_root}`", ""),
                ("Location", snapshot.table_root, ""),
                ("Provider", "delta", ""),
                ("Table Properties", f"[{properties}]", ""),
            ]
        return spark.createDataFrame(rows, _DESCRIBE_DDL)

    return Statement("DESCRIBE TABLE", target, _DESCRIBE_DDL, run)


def show_columns(p: StatementParser) -> Statement | None:
    """``(IN|FROM) delta.`path``` after SHOW COLUMNS; None for a name (Spark's)."""
    if not (p.accept("IN") or p.accept("FROM")):
        p.fail("IN or FROM after SHOW COLUMNS")
    target = p.table()
    if target.delta_path is None:
        return None
    p.end()

    def run(spark: SparkSession, path: str) -> DataFrame:
        names = DeltaLog.for_table(path).snapshot().schema.field_names
        return spark.createDataFrame([(n,) for n in names], "col_name string")

    return Statement("SHOW COLUMNS", target, "col_name string", run)


def _row(field: StructField) -> tuple[str, str, str]:
    comment = str(field.metadata.get("comment") or "")
    return field.name, to_spark_type(field.type).simpleString(), comment
