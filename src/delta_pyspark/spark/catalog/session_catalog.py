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

from delta_pyspark.core.protocol.schema import StructType
from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.exceptions import DeltaIllegalArgumentException
from delta_pyspark.spark.jvm import catalog_access
from delta_pyspark.spark.types import to_spark_type

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


@dataclass(frozen=True)
class CatalogEntry:
    """What the session catalog knows of a table."""

    database: str
    table: str
    location: str
    provider: str
    managed: bool


def _name_parts(spark: SparkSession, name: str) -> tuple[str, str]:
    """``name`` (``t``, ``db.t``, ``spark_catalog.db.t``, backticks allowed) as (database,
    table) of the session catalog, the current database filled in."""
    try:
        parts = catalog_access.parse_name(spark, name)
    except Exception as e:  # Spark's ParseException
        raise DeltaIllegalArgumentException(f"invalid table name {name!r}: {e}") from None
    if len(parts) == 3 and parts[0].lower() == "spark_catalog":
        parts = parts[1:]
    if not 1 <= len(parts) <= 2:
        raise DeltaIllegalArgumentException(
            f"invalid table name {name!r}: Delta tables live in the session catalog "
            "(table, database.table or spark_catalog.database.table)"
        )
    database = parts[0] if len(parts) == 2 else spark.catalog.currentDatabase()
    return database, parts[-1]


def lookup(spark: SparkSession, name: str) -> CatalogEntry | None:
    """The catalog's entry for table ``name``, or None when it has none."""
    found = catalog_access.lookup(spark, *_name_parts(spark, name))
    if found is None:
        return None
    return CatalogEntry(
        database=found.database,
        table=found.table,
        location=found.location or "",
        provider=found.provider,
        managed=found.managed,
    )


def default_location(spark: SparkSession, name: str) -> str:
    """Where Spark puts the managed table ``name`` (under its database's location)."""
    return catalog_access.default_location(spark, *_name_parts(spark, name))


def table_location(spark: SparkSession, name: str) -> str:
    """Where table ``name`` lives: its catalog entry's location, else where a managed table
    of that name would be created."""
    entry = lookup(spark, name)
    return entry.location if entry is not None else default_location(spark, name)


def _catalog_schema(location: str) -> tuple[str, Any]:
    """The log's schema as Spark's catalog keeps it (partition columns last; reads take the
    log's order), as JSON, and its partition columns as a JVM string array."""
    snapshot = DeltaLog.for_table(location).snapshot()
    parts = list(snapshot.partition_columns)
    schema = snapshot.schema
    ordered = StructType(
        tuple(f for f in schema.fields if f.name not in parts)
        + tuple(schema.field(p) for p in parts)
    )
    return to_spark_type(ordered).json(), parts


def register(spark: SparkSession, name: str, location: str, managed: bool) -> None:
    """Register the Delta table at ``location`` as ``name`` in the session catalog."""
    schema_json, parts = _catalog_schema(location)
    database, table = _name_parts(spark, name)
    catalog_access.register(spark, database, table, location, managed, schema_json, parts)


def refresh(spark: SparkSession, entry: CatalogEntry) -> None:
    """Make ``entry`` show its log's schema and partitioning again, after a change made by
    name (REPLACE, ALTER TABLE, schema evolution): ``DESCRIBE`` and ``spark.catalog`` read
    the entry, not the log."""
    schema_json, parts = _catalog_schema(entry.location)
    catalog_access.refresh(spark, entry.database, entry.table, schema_json, parts)


def refresh_delta_entry(spark: SparkSession, name: str) -> None:
    """``refresh`` the entry of table ``name`` when it is a Delta table's."""
    entry = lookup(spark, name)
    if entry is not None and entry.provider == "delta":
        refresh(spark, entry)
