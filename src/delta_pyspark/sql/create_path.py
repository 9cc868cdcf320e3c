"""``CREATE TABLE [IF NOT EXISTS] delta.`path` ...``: a table at a path, in no catalog.

Spark's own CREATE TABLE looks ``delta`` up as a database; delta-spark's catalog reads the
name as a path instead, and so does this statement. (``CREATE OR REPLACE`` at a path is the
session parser's REPLACE, ``table_writes.replace_table``.)
"""

from __future__ import annotations

import json
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from delta_pyspark.exceptions import DeltaAnalysisException, DeltaUnsupportedOperationException
from delta_pyspark.spark.integration import jvm
from delta_pyspark.spark.table_writes import TableDefinition, create_at_path
from delta_pyspark.sql.statement import Statement
from delta_pyspark.sql.text import StatementParser, TableRef, parse_properties, split_top


def create_table(p: StatementParser, target: TableRef, if_not_exists: bool) -> Statement:
    """The rest of ``CREATE TABLE delta.`path```: ``[(columns)] [USING delta]
    [PARTITIONED BY (cols)] [COMMENT 'c'] [TBLPROPERTIES (...)] [[AS] query]``."""
    columns = p.group("the column list") if p.at("(") and not _query_follows(p) else None
    partitioning: list[str] = []
    properties: dict[str, str] = {}
    comment: str | None = None
    query: str | None = None
    while not p.done() and not p.at(";"):
        if p.accept("USING"):
            provider = p.identifier("a table provider after USING")
            if provider.lower() != "delta":
                raise DeltaAnalysisException(
                    f"CREATE TABLE {target.text} USING {provider}: a delta.`path` name makes "
                    "a Delta table (USING delta)"
                )
        elif p.accept("PARTITIONED", "BY"):
            text = p.group("the PARTITIONED BY columns")
            partitioning = [c.strip().strip("`") for c in split_top(text)]
        elif p.accept("COMMENT"):
            comment = p.literal("a comment string")
        elif p.accept("TBLPROPERTIES"):
            properties.update(parse_properties(p.group("the TBLPROPERTIES list")))
        elif p.at("CLUSTER", "BY"):
            raise DeltaUnsupportedOperationException(
                f"CREATE TABLE {target.text} ... CLUSTER BY: liquid clustering is not "
                "supported yet; use PARTITIONED BY"
            )
        elif p.at("LOCATION") or p.at("OPTIONS"):
            clause = p.tokens[p.pos].text.upper()
            raise DeltaUnsupportedOperationException(
                f"CREATE TABLE {target.text} ... {clause}: not supported with a delta.`path` "
                "name (the path is the location)"
            )
        else:
            p.accept("AS")
            query = p.sql[p.tokens[p.pos].start :].strip().rstrip(";")
            p.pos = len(p.tokens)
    p.end()
    path = target.delta_path
    assert path is not None

    def run(spark: SparkSession, _path: str) -> None:
        schema = None if columns is None else _schema(spark, columns)
        definition = TableDefinition(
            name=target.parts,
            provider="delta",
            location=path,
            comment=comment,
            properties=properties,
            options={},
            partitioning=tuple(partitioning),
            clustering=(),
            schema=schema,
            or_create=False,
        )
        data: DataFrame | None = spark.sql(query) if query is not None else None
        create_at_path(spark, definition, data, if_not_exists)

    return Statement("CREATE TABLE", None, "", run)


def _query_follows(p: StatementParser) -> bool:
    """``CREATE TABLE t (SELECT ...)``: the parentheses hold a query, not columns."""
    token = p.peek(1)
    return token is not None and (token.is_word("SELECT") or token.is_word("WITH"))


def _schema(spark: SparkSession, columns: str) -> Any:
    from pyspark.sql.types import StructType

    parsed = jvm(spark).org.apache.spark.sql.types.StructType.fromDDL(columns).json()
    return StructType.fromJson(json.loads(parsed))
