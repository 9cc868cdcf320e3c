"""How a statement's table reference finds its Delta table, as delta-spark resolves it."""

from __future__ import annotations

from pyspark.sql import SparkSession

from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.exceptions import (
    DeltaAnalysisException,
    DeltaTableNotFoundError,
)
from delta_pyspark.spark.catalog.session_catalog import table_location
from delta_pyspark.spark.jvm import catalog_access
from delta_pyspark.sql.text import (
    TableRef,
)


def resolve(spark: SparkSession, ref: TableRef) -> tuple[str, str | None]:
    """``("delta", path)`` for a Delta table, ``("other", what it is)`` for a table or view of
    another kind in the session catalog (``"a parquet table"``), ``("foreign", None)`` for a
    table of another catalog (Spark's to resolve), ``("missing", looked-in)`` for a name
    nothing answers to."""
    path = ref.delta_path
    if path is not None:
        return ("delta", path) if DeltaLog(path).is_delta_table() else ("missing", path)
    parts = list(ref.parts)
    if len(parts) == 3 and parts[0].lower() == "spark_catalog":
        parts = parts[1:]
    if len(parts) > 2:
        return "foreign", None
    database = parts[0] if len(parts) == 2 else None
    if catalog_access.is_temp_view(spark, database, parts[-1]):
        return "other", "a temporary view"
    entry = catalog_access.lookup(spark, database, parts[-1])
    if entry is not None:
        if entry.location is not None and DeltaLog(entry.location).is_delta_table():
            return "delta", entry.location
        if entry.view:
            return "other", "a view"
        if entry.provider == "delta":
            return "other", f"a delta table whose location {entry.location} holds no log"
        return "other", f"a {entry.provider} table"
    location = table_location(spark, ".".join(parts))
    if DeltaLog(location).is_delta_table():
        return "delta", location
    return "missing", location


def existing(path: str, ref: TableRef) -> str:
    if not DeltaLog(path).is_delta_table():
        raise DeltaTableNotFoundError(f"{ref.text}: {path} is not a Delta table")
    return path


def not_a_delta_table(ref: TableRef, what: str | None, operation: str) -> DeltaAnalysisException:
    """delta-spark's refusal of a Delta-only ``operation`` on ``ref``, naming ``what`` it is
    (``resolve``'s description)."""
    return DeltaAnalysisException(
        f"[DELTA_TABLE_ONLY_OPERATION] {ref.text} is not a Delta table: it is {what}. "
        f"{operation} is only supported for Delta tables."
    )
