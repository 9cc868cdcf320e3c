"""Spark's session catalog, read and written through the JVM.

The engine keeps Delta tables by name as entries of Spark's own session catalog; this module is
the only one that talks to that catalog's JVM objects (``SessionCatalog``, ``TableIdentifier``,
``CatalogTable``). Everything it returns is plain Python.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pyspark.sql import SparkSession

from delta_pyspark.core.storage.locations import to_local_path
from delta_pyspark.spark.jvm.bridge import classic_session, helper_class, jvm, new_array


@dataclass(frozen=True)
class CatalogTable:
    """What the session catalog holds for one name."""

    database: str
    table: str
    location: str | None  # None: a view, or an entry without a location
    provider: str
    managed: bool
    view: bool


def parse_name(spark: SparkSession, name: str) -> list[str]:
    """``name``'s parts as Spark's parser splits a multi-part identifier (backticks allowed);
    Spark's ``ParseException`` for a malformed one."""
    seq = classic_session(spark).sessionState().sqlParser().parseMultipartIdentifier(name)
    return [str(seq.apply(i)) for i in range(seq.size())]


def _identifier(spark: SparkSession, database: str | None, table: str) -> Any:
    """``TableIdentifier``; without a database, Spark's catalog resolves the current one
    (an identifier naming a catalog must name its database too)."""
    java = jvm(spark)
    identifier = java.org.apache.spark.sql.catalyst.TableIdentifier
    if database is None:
        return identifier(table, java.scala.Option.apply(None))
    return identifier(
        table, java.scala.Option.apply(database), java.scala.Option.apply("spark_catalog")
    )


def _catalog(spark: SparkSession) -> Any:
    return classic_session(spark).sessionState().catalog()


def is_temp_view(spark: SparkSession, database: str | None, table: str) -> bool:
    java = jvm(spark)
    ident = java.org.apache.spark.sql.catalyst.TableIdentifier(
        table, java.scala.Option.apply(database)
    )
    return bool(_catalog(spark).isTempView(ident))


def lookup(spark: SparkSession, database: str | None, table: str) -> CatalogTable | None:
    """The entry for ``database.table`` (the current database when None), or None."""
    ident = _identifier(spark, database, table)
    catalog = _catalog(spark)
    if not catalog.tableExists(ident):
        return None
    meta = catalog.getTableMetadata(ident)
    provider = meta.provider()
    view = str(meta.tableType().name()) == "VIEW"
    uri = meta.storage().locationUri()
    return CatalogTable(
        database=str(meta.identifier().database().get()),
        table=str(meta.identifier().table()),
        location=None if view or not uri.isDefined() else to_local_path(str(uri.get().toString())),
        provider=str(provider.get()).lower() if provider.isDefined() else "hive",
        managed=str(meta.tableType().name()) == "MANAGED",
        view=view,
    )


def default_location(spark: SparkSession, database: str | None, table: str) -> str:
    """Where Spark puts a managed table of that name (under its database's location)."""
    uri = _catalog(spark).defaultTablePath(_identifier(spark, database, table))
    return to_local_path(str(uri)).rstrip("/")


def database_exists(spark: SparkSession, database: str) -> bool:
    return bool(_catalog(spark).databaseExists(database))


def _string_array(spark: SparkSession, values: list[str]) -> Any:
    array = new_array(spark, jvm(spark).java.lang.String, len(values))
    for i, value in enumerate(values):
        array[i] = value
    return array


def _writes_helper(spark: SparkSession) -> Any:
    writes = helper_class(spark, "deltapyspark.DeltaWrites")
    assert writes is not None  # a session reading Delta tables has the helper
    return writes


def register(
    spark: SparkSession,
    database: str,
    table: str,
    location: str,
    managed: bool,
    schema_json: str,
    partition_columns: list[str],
) -> None:
    """A ``delta`` entry for the table at ``location`` (the JVM helper's ``DeltaWrites``)."""
    _writes_helper(spark).register(
        classic_session(spark),
        database,
        table,
        location,
        managed,
        schema_json,
        _string_array(spark, partition_columns),
    )


def refresh(
    spark: SparkSession, database: str, table: str, schema_json: str, partition_columns: list[str]
) -> None:
    """The entry shows this schema and partitioning again."""
    _writes_helper(spark).refresh(
        classic_session(spark),
        database,
        table,
        schema_json,
        _string_array(spark, partition_columns),
    )


def make_delta(spark: SparkSession, database: str, table: str) -> None:
    """The entry's provider becomes ``delta`` (its files were converted in place)."""
    _writes_helper(spark).makeDelta(classic_session(spark), database, table)
