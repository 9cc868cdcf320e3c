"""Delta tables by name: entries of Spark's session catalog.

A table created by name (``saveAsTable``, ``CREATE TABLE``, CTAS) is registered in the
session catalog with provider ``delta`` and its location: managed tables under the
warehouse (DROP TABLE deletes their files), external ones at their path. Spark resolves
the names itself (SQL, ``spark.table``, ``spark.catalog``); the log stays the source of
truth for schema and properties (the ``delta`` source reads them from it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from delta_pyspark.core.delta_log import DeltaLog
from delta_pyspark.core.log_store import to_local_path
from delta_pyspark.core.schema import StructType
from delta_pyspark.exceptions import DeltaAnalysisException, DeltaIllegalArgumentException
from delta_pyspark.spark.integration import classic_session, helper_class, jvm, new_array
from delta_pyspark.spark.types import to_spark_type
from delta_pyspark.spark.write_command import OPERATION_OPTION, WriteRequest, write_delta

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


@dataclass(frozen=True)
class CatalogEntry:
    """What the session catalog knows of a table."""

    database: str
    table: str
    location: str
    provider: str
    managed: bool


def _identifier(spark: SparkSession, name: str) -> Any:
    """``name`` (``t``, ``db.t``, ``spark_catalog.db.t``, backticks allowed) as the JVM's
    ``TableIdentifier`` in the session catalog, the current database filled in."""
    session = classic_session(spark)
    try:
        seq = session.sessionState().sqlParser().parseMultipartIdentifier(name)
    except Exception as e:  # Spark's ParseException, through py4j
        raise DeltaIllegalArgumentException(f"invalid table name {name!r}: {e}") from None
    parts = [str(seq.apply(i)) for i in range(seq.size())]
    if len(parts) == 3 and parts[0].lower() == "spark_catalog":
        parts = parts[1:]
    if not 1 <= len(parts) <= 2:
        raise DeltaIllegalArgumentException(
            f"invalid table name {name!r}: Delta tables live in the session catalog "
            "(table, database.table or spark_catalog.database.table)"
        )
    database = parts[0] if len(parts) == 2 else spark.catalog.currentDatabase()
    java = jvm(spark)
    return java.org.apache.spark.sql.catalyst.TableIdentifier(
        parts[-1], java.scala.Option.apply(database), java.scala.Option.apply("spark_catalog")
    )


def lookup(spark: SparkSession, name: str) -> CatalogEntry | None:
    """The catalog's entry for table ``name``, or None when it has none."""
    ident = _identifier(spark, name)
    catalog = classic_session(spark).sessionState().catalog()
    if not catalog.tableExists(ident):
        return None
    table = catalog.getTableMetadata(ident)
    provider = table.provider()
    return CatalogEntry(
        database=str(table.identifier().database().get()),
        table=str(table.identifier().table()),
        location=to_local_path(str(table.location())),
        provider=str(provider.get()).lower() if provider.isDefined() else "hive",
        managed=str(table.tableType().name()) == "MANAGED",
    )


def default_location(spark: SparkSession, name: str) -> str:
    """Where Spark puts the managed table ``name`` (under its database's location)."""
    ident = _identifier(spark, name)
    uri = classic_session(spark).sessionState().catalog().defaultTablePath(ident)
    return to_local_path(str(uri)).rstrip("/")


def table_location(spark: SparkSession, name: str) -> str:
    """Where table ``name`` lives: its catalog entry's location, else where a managed table
    of that name would be created."""
    entry = lookup(spark, name)
    return entry.location if entry is not None else default_location(spark, name)


def register(spark: SparkSession, name: str, location: str, managed: bool) -> None:
    """Register the Delta table at ``location`` as ``name`` in the session catalog."""
    snapshot = DeltaLog.for_table(location).snapshot()
    parts = list(snapshot.partition_columns)
    schema = snapshot.schema
    # Spark's catalog keeps partition columns last; reads take the log's order
    ordered = StructType(
        tuple(f for f in schema.fields if f.name not in parts)
        + tuple(schema.field(p) for p in parts)
    )
    columns = new_array(spark, jvm(spark).java.lang.String, len(parts))
    for i, p in enumerate(parts):
        columns[i] = p
    ident = _identifier(spark, name)
    writes = helper_class(spark, "deltapyspark.DeltaWrites")
    assert writes is not None  # a session reading Delta tables has the helper
    writes.register(
        classic_session(spark),
        ident.database().get(),
        ident.table(),
        location,
        managed,
        to_spark_type(ordered).json(),
        columns,
    )


def save_as_table(
    spark: SparkSession,
    df: DataFrame,
    name: str,
    mode: str,
    partition_by: list[str] | None,
    options: dict[str, str],
) -> None:
    """``df.write.format("delta").saveAsTable(name)``: a table the catalog knows is written
    as a new version (an overwrite keeps its history, where Spark's own ``saveAsTable`` would
    drop and recreate it); a new one is written, then registered: at ``options["path"]`` as
    an external table, else as a managed table under the warehouse."""
    options = dict(options)
    path = next((options.pop(k) for k in list(options) if k.lower() == "path"), None)
    entry = lookup(spark, name)
    lowered = mode.lower()
    if entry is not None:
        if entry.provider != "delta":
            raise DeltaAnalysisException(
                f"[DELTA_TABLE_NOT_DELTA] {name} is a {entry.provider} table, not a Delta table"
            )
        if lowered in ("error", "errorifexists", "default"):
            raise DeltaAnalysisException(
                f"[TABLE_OR_VIEW_ALREADY_EXISTS] table {name} already exists (mode {mode}): "
                "use mode('append') or mode('overwrite')"
            )
        if lowered == "ignore":
            return
        if path is not None and to_local_path(path).rstrip("/") != entry.location.rstrip("/"):
            raise DeltaAnalysisException(
                f"table {name} is at {entry.location}, not at the path given ({path})"
            )
        write_delta(spark, df, entry.location, WriteRequest(mode, partition_by, options))
        return
    location = path or default_location(spark, name)
    options[OPERATION_OPTION] = "CREATE TABLE AS SELECT"
    write_delta(spark, df, location, WriteRequest(mode, partition_by, options))
    register(spark, name, location, managed=path is None)
