"""CREATE TABLE statements Spark's own command cannot run: a table at ``delta.`path``` (Spark
would look ``delta`` up as a database; delta-spark's catalog reads the name as a path, and so
does this), and a catalog-managed table by name (``TBLPROPERTIES
('delta.feature.catalogManaged' = 'supported')``: made by the attached catalog,
``spark/catalog/managed_tables.py``), and a table by name declaring generated columns (Spark's
own command refuses them). ``CREATE OR REPLACE`` is the session parser's REPLACE
(``table_writes.replace_table``); every other CREATE TABLE is Spark's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from delta_pyspark.core.protocol.generated_columns import has_generation_clause
from delta_pyspark.core.protocol.identity_columns import IDENTITY_CLAUSE
from delta_pyspark.exceptions import DeltaAnalysisException, DeltaUnsupportedOperationException
from delta_pyspark.spark.catalog.managed_tables import create_catalog_table
from delta_pyspark.spark.catalog.session_catalog import lookup, register, table_location
from delta_pyspark.spark.commands.table_writes import TableDefinition, create_at_path
from delta_pyspark.spark.types import from_spark_schema, spark_schema_from_ddl
from delta_pyspark.sql.statement import Statement
from delta_pyspark.sql.text import StatementParser, TableRef


def asks_catalog_managed(p: StatementParser) -> bool:
    """Whether the statement's text requests the ``catalogManaged`` feature."""
    return "catalogmanaged" in p.sql.lower()


def declares_generated_columns(p: StatementParser) -> bool:
    """Whether the statement declares a generated column (Spark's own CREATE TABLE refuses
    them for a session catalog table)."""
    return has_generation_clause(p.sql)


@dataclass
class _Definition:
    """The clauses after the table name, as written."""

    columns: str | None = None
    partitioning: list[str] = field(default_factory=list)
    clustering: list[str] = field(default_factory=list)
    properties: dict[str, str] = field(default_factory=dict)
    comment: str | None = None
    location: str | None = None
    query: str | None = None


def declares_identity(p: StatementParser) -> bool:
    """Whether the statement declares an identity column: Spark's CREATE TABLE refuses them
    (its session catalog supports no identity columns), so this one makes the table."""
    return IDENTITY_CLAUSE.search(p.sql) is not None


def create_table(p: StatementParser, target: TableRef, if_not_exists: bool) -> Statement:
    """The rest of the statement: ``[(columns)] [USING delta] [PARTITIONED BY (cols)]
    [CLUSTER BY (cols)] [LOCATION 'p'] [COMMENT 'c'] [TBLPROPERTIES (...)] [[AS] query]``."""
    definition = _clauses(p, target)
    path = target.delta_path

    def run(spark: SparkSession, _path: str) -> None:
        schema = (
            None if definition.columns is None else spark_schema_from_ddl(spark, definition.columns)
        )
        name = ".".join(target.parts)
        if path is None and asks_catalog_managed(p):
            _create_in_catalog(spark, target, definition, schema, if_not_exists)
            return
        if path is None and lookup(spark, name) is not None:
            if if_not_exists:
                return
            raise DeltaAnalysisException(
                f"[TABLE_OR_VIEW_ALREADY_EXISTS] Table {target.text} already exists"
            )
        location = path or definition.location or table_location(spark, name)
        table = TableDefinition(
            name=("delta", location),
            provider="delta",
            location=location,
            comment=definition.comment,
            properties=definition.properties,
            options={},
            partitioning=tuple(definition.partitioning),
            clustering=tuple(definition.clustering),
            schema=schema,
            or_create=False,
        )
        data: DataFrame | None = None if definition.query is None else spark.sql(definition.query)
        create_at_path(spark, table, data, if_not_exists)
        if path is None:
            register(spark, name, location, managed=definition.location is None)

    return Statement("CREATE TABLE", None, "", run)


def _clauses(p: StatementParser, target: TableRef) -> _Definition:
    out = _Definition()
    if p.at("(") and not _query_follows(p):
        out.columns = p.group("the column list").all_text()
    while not p.done():
        if p.accept("USING"):
            provider = p.identifier("a table provider after USING")
            if provider.lower() != "delta":
                raise DeltaAnalysisException(
                    f"CREATE TABLE {target.text} USING {provider}: this statement makes a Delta "
                    "table (USING delta)"
                )
        elif p.accept("PARTITIONED", "BY"):
            out.partitioning = p.group("the PARTITIONED BY columns").names()
        elif p.accept("COMMENT"):
            out.comment = p.literal("a comment string")
        elif p.accept("TBLPROPERTIES"):
            out.properties.update(p.group("the TBLPROPERTIES list").properties())
        elif p.accept("LOCATION"):
            if target.delta_path is not None:
                raise DeltaUnsupportedOperationException(
                    f"CREATE TABLE {target.text} ... LOCATION: a delta.`path` name is its "
                    "location already"
                )
            out.location = p.literal("a path after LOCATION")
        elif p.accept("CLUSTER", "BY"):
            out.clustering = p.group("the CLUSTER BY columns").names()
        elif p.at("OPTIONS"):
            raise DeltaUnsupportedOperationException(
                f"CREATE TABLE {target.text} ... OPTIONS: not supported here; use TBLPROPERTIES"
            )
        else:
            p.accept("AS")
            out.query = p.rest().all_text()
    p.end()
    return out


def _create_in_catalog(
    spark: SparkSession,
    target: TableRef,
    definition: _Definition,
    schema: Any,
    if_not_exists: bool,
) -> None:
    if definition.query is not None or schema is None:
        raise DeltaUnsupportedOperationException(
            f"CREATE TABLE {target.text}: a catalog-managed table is created from its columns "
            "(CREATE TABLE name (columns) ...), then written with INSERT or a DataFrame write"
        )
    parts = target.parts[1:] if target.parts[0].lower() == "spark_catalog" else target.parts
    create_catalog_table(
        spark,
        ".".join(parts),
        from_spark_schema(schema),
        definition.partitioning,
        definition.properties,
        definition.location,
        definition.comment,
        if_not_exists,
    )


def _query_follows(p: StatementParser) -> bool:
    """``CREATE TABLE t (SELECT ...)``: the parentheses hold a query, not columns."""
    token = p.peek(1)
    return token is not None and (token.is_word("SELECT") or token.is_word("WITH"))
