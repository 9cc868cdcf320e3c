"""How a statement's table reference finds its Delta table, as delta-spark resolves it."""

from __future__ import annotations

from pyspark.sql import SparkSession

from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.core.storage.log_store import to_local_path
from delta_pyspark.exceptions import (
    DeltaTableNotFoundError,
)
from delta_pyspark.spark.catalog.session_catalog import table_location
from delta_pyspark.spark.jvm.bridge import (
    classic_session,
    jvm,
)
from delta_pyspark.sql.text import (
    TableRef,
)


def resolve(spark: SparkSession, ref: TableRef) -> tuple[str, str | None]:
    """``("delta", path)`` for a Delta table, ``("other", None)`` for a table or view of
    another kind in the session catalog, ``("foreign", None)`` for a table of another catalog
    (Spark's to resolve), ``("missing", looked-in)`` for a name nothing answers to."""
    path = ref.delta_path
    if path is not None:
        return ("delta", path) if DeltaLog(path).is_delta_table() else ("missing", path)
    parts = list(ref.parts)
    if len(parts) == 3 and parts[0].lower() == "spark_catalog":
        parts = parts[1:]
    if len(parts) > 2:
        return "foreign", None
    java = jvm(spark)
    catalog = classic_session(spark).sessionState().catalog()
    database = java.scala.Option.apply(parts[0] if len(parts) == 2 else None)
    ident = java.org.apache.spark.sql.catalyst.TableIdentifier(parts[-1], database)
    if catalog.isTempView(ident):
        return "other", None
    if catalog.tableExists(ident):
        meta = catalog.getTableMetadata(ident)
        if meta.tableType().name() != "VIEW" and meta.storage().locationUri().isDefined():
            location = to_local_path(str(meta.storage().locationUri().get().toString()))
            if DeltaLog(location).is_delta_table():
                return "delta", location
        return "other", None
    location = table_location(spark, ".".join(parts))
    if DeltaLog(location).is_delta_table():
        return "delta", location
    return "missing", location


def existing(path: str, ref: TableRef) -> str:
    if not DeltaLog(path).is_delta_table():
        raise DeltaTableNotFoundError(f"{ref.text}: {path} is not a Delta table")
    return path
