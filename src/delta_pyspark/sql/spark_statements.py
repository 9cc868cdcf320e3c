"""Statements Spark's own parser reads whose answer on a Delta table is Delta's: SHOW
TBLPROPERTIES (the log's properties and protocol, not a catalog entry's), DESCRIBE TABLE and
SHOW COLUMNS of a ``delta.`path``` (Spark would look ``delta`` up as a database; a name's
catalog entry answers these), DROP TABLE of the attached catalog's tables, TRUNCATE TABLE of
a Delta table (as a new version: Spark's own command would delete the log), and the ALTER
TABLE forms Spark's grammar has (``alter.spark_parsed``).

The session extension's rule (``SparkParsedStatements.java``) finds them in Spark's parsed
plan (TRUNCATE: ``DeltaWrites.java`` in the resolved one) and asks here by kind, the table's
name parts and one argument: the property key, ``extended``, ``partition`` or an ALTER
TABLE's change as JSON."""

from __future__ import annotations

import json

from pyspark.sql import DataFrame, SparkSession

from delta_pyspark.core.commands.truncate import truncate_table
from delta_pyspark.core.protocol.schema import StructField
from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.exceptions import DeltaAnalysisException
from delta_pyspark.spark.catalog.managed_tables import catalog_table_name, drop_catalog_table
from delta_pyspark.spark.types import to_spark_type
from delta_pyspark.sql import alter
from delta_pyspark.sql.statement import Statement
from delta_pyspark.sql.text import TableRef

_DESCRIBE_DDL = "col_name string, data_type string, comment string"
_PROPERTIES_DDL = "key string, value string"


def statement(kind: str, parts: tuple[str, ...], argument: str) -> Statement | None:
    """The Delta statement Spark parsed as ``kind`` on the table ``parts``; None when it is
    Spark's to run (a name's DESCRIBE, a DROP of a table the attached catalog lacks)."""
    path_text = f"delta.`{parts[1]}`" if len(parts) == 2 and parts[0].lower() == "delta" else ""
    ref = TableRef(parts, path_text or ".".join(parts))
    if kind == "SHOW TBLPROPERTIES":
        return _show_properties(ref, argument or None)
    if kind == "DESCRIBE TABLE":
        return _describe_path(ref, argument == "extended") if ref.delta_path else None
    if kind == "SHOW COLUMNS":
        return _show_columns(ref) if ref.delta_path else None
    if kind == "DROP TABLE":
        return _drop(parts)
    if kind == "TRUNCATE TABLE":
        return _truncate(ref, argument == "partition")
    if kind == "ALTER TABLE":
        return alter.spark_parsed(ref, json.loads(argument))
    raise ValueError(f"not a statement Spark hands over: {kind}")


def _show_properties(table: TableRef, key: str | None) -> Statement:
    def run(spark: SparkSession, path: str) -> DataFrame:
        snapshot = DeltaLog.for_table(path).snapshot()
        protocol = snapshot.protocol
        shown = dict(snapshot.configuration)
        shown["delta.minReaderVersion"] = str(protocol.min_reader_version)
        shown["delta.minWriterVersion"] = str(protocol.min_writer_version)
        features = set(protocol.reader_features or ()) | set(protocol.writer_features or ())
        shown.update({f"delta.feature.{f}": "supported" for f in sorted(features)})
        if key is not None:
            value = shown.get(key, f"Table {table.text} does not have property: {key}")
            return spark.createDataFrame([(key, value)], _PROPERTIES_DDL)
        return spark.createDataFrame(sorted(shown.items()), _PROPERTIES_DDL)

    return Statement("SHOW TBLPROPERTIES", table, _PROPERTIES_DDL, run, spark_knows=True)


def _describe_path(table: TableRef, extended: bool) -> Statement:
    """What Spark's DESCRIBE [EXTENDED] answers for a catalog table, for a path."""

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

    return Statement("DESCRIBE TABLE", table, _DESCRIBE_DDL, run)


def _show_columns(table: TableRef) -> Statement:
    def run(spark: SparkSession, path: str) -> DataFrame:
        names = DeltaLog.for_table(path).snapshot().schema.field_names
        return spark.createDataFrame([(n,) for n in names], "col_name string")

    return Statement("SHOW COLUMNS", table, "col_name string", run)


def _drop(parts: tuple[str, ...]) -> Statement | None:
    """A table of the attached catalog goes out of both catalogs (IF EXISTS and PURGE are
    moot: the catalog has the table); any other table is Spark's to drop."""
    name = catalog_table_name(parts)
    if name is None:
        return None

    def run(spark: SparkSession, _path: str) -> None:
        drop_catalog_table(spark, name)

    return Statement("DROP TABLE", None, "", run)


def _truncate(table: TableRef, partition: bool) -> Statement:
    """TRUNCATE TABLE of a Delta table (Spark's V1 command would delete the log)."""
    if partition:
        raise DeltaAnalysisException(
            "[DELTA_TRUNCATE_TABLE_PARTITION_NOT_SUPPORTED] Operation not allowed: TRUNCATE "
            "TABLE on Delta tables does not support partition predicates; use DELETE to "
            "delete specific partitions or rows."
        )

    def run(_spark: SparkSession, path: str) -> None:
        truncate_table(DeltaLog.for_table(path))

    return Statement("TRUNCATE TABLE", table, "", run)


def _row(field: StructField) -> tuple[str, str, str]:
    comment = str(field.metadata.get("comment") or "")
    return field.name, to_spark_type(field.type).simpleString(), comment
