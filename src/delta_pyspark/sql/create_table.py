"""CREATE TABLE statements Spark's own command cannot run, as Spark's parser read them
(``TableDefinitions.isDeltaCreate``): a table at ``delta.`path``` (Spark would look ``delta``
up as a database; delta-spark's catalog reads the name as a path, and so does this), a
catalog-managed table by name (``TBLPROPERTIES ('delta.feature.catalogManaged' =
'supported')``: made by the attached catalog, ``spark/catalog/managed_tables.py``), and a table
by name declaring identity or generated columns (Spark's session catalog refuses them).
Every other CREATE TABLE is Spark's.
"""

from __future__ import annotations

from dataclasses import replace

from pyspark.sql import DataFrame, SparkSession

from delta_pyspark.exceptions import DeltaAnalysisException, DeltaUnsupportedOperationException
from delta_pyspark.spark.catalog.managed_tables import create_catalog_table
from delta_pyspark.spark.catalog.session_catalog import lookup, register, table_location
from delta_pyspark.spark.commands.table_writes import TableDefinition, create_at_path
from delta_pyspark.spark.types import from_spark_schema

_CATALOG_MANAGED = "delta.feature.catalogmanaged"


def create_table(spark: SparkSession, table: TableDefinition, data: DataFrame | None) -> None:
    """``CREATE TABLE [IF NOT EXISTS] name [(columns)] [USING delta] ... [AS query]``."""
    path = table.delta_path
    if not table.is_delta and table.provider is not None:
        raise DeltaAnalysisException(
            f"CREATE TABLE {table.text} USING {table.provider}: this statement makes a Delta "
            "table (USING delta)"
        )
    if table.options:
        raise DeltaUnsupportedOperationException(
            f"CREATE TABLE {table.text} ... OPTIONS: not supported here; use TBLPROPERTIES"
        )
    if path is not None and table.location is not None:
        raise DeltaUnsupportedOperationException(
            f"CREATE TABLE {table.text} ... LOCATION: a delta.`path` name is its location already"
        )
    if table.schema is not None and not table.schema.fields:
        table = replace(table, schema=None)  # no column list (Spark's parse has no None)
    name = ".".join(table.name)
    if path is None and any(k.lower() == _CATALOG_MANAGED for k in table.properties):
        _create_in_catalog(spark, table, data)
        return
    if path is None and lookup(spark, name) is not None:
        if table.if_not_exists:
            return
        raise DeltaAnalysisException(
            f"[TABLE_OR_VIEW_ALREADY_EXISTS] Table {table.text} already exists"
        )
    location = path or table.location or table_location(spark, name)
    at_path = replace(table, name=("delta", location), provider="delta", location=location)
    create_at_path(spark, at_path, data, table.if_not_exists)
    if path is None:
        register(spark, name, location, managed=table.location is None)


def _create_in_catalog(spark: SparkSession, table: TableDefinition, data: DataFrame | None) -> None:
    if data is not None or table.schema is None:
        raise DeltaUnsupportedOperationException(
            f"CREATE TABLE {table.text}: a catalog-managed table is created from its columns "
            "(CREATE TABLE name (columns) ...), then written with INSERT or a DataFrame write"
        )
    parts = table.name[1:] if table.name[0].lower() == "spark_catalog" else table.name
    create_catalog_table(
        spark,
        ".".join(parts),
        from_spark_schema(table.schema),
        list(table.partitioning),
        dict(table.properties),
        table.location,
        table.comment,
        table.if_not_exists,
    )
