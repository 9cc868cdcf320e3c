"""One parsed Delta statement, and the small grammar pieces several statements share."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from pyspark.sql import DataFrame, SparkSession

from delta_pyspark.sql.text import (
    StatementParser,
    TableRef,
)


@dataclass
class Statement:
    """One parsed Delta statement: what it acts on and how to run it."""

    kind: str  # for messages: "MERGE", "DESCRIBE HISTORY", ...
    table: TableRef | None  # the Delta table it needs (None: it finds or makes its own)
    columns: str  # DDL of its result's columns ("" for none)
    execute: Callable[[SparkSession, str], DataFrame | None]  # (session, table path)
    # Spark has its own meaning for the statement on a table of another format.
    spark_knows: bool = False
    # Why it cannot run on a Delta table (a clause not supported yet), or None.
    refusal: str | None = None
    # It may change the table's schema or partitioning, which a catalog entry shows.
    changes_schema: bool = False
    # Its parameter markers, as the session parser declares them to Spark's analyzer.
    markers: list[str] = field(default_factory=list)


def where(p: StatementParser, *stops: str) -> str | None:
    if p.accept("WHERE"):
        return p.text_until(*stops, what="a condition after WHERE")
    return None


def as_of(p: StatementParser, required: bool) -> tuple[int | None, str | None]:
    """delta-spark's temporal clause: ``[FOR] {VERSION | SYSTEM_VERSION} AS OF v`` (a number,
    or a string holding one) or ``[FOR] {TIMESTAMP | SYSTEM_TIME} AS OF 'ts'``."""
    synonym = p.accept("FOR")
    if p.accept("VERSION", "AS", "OF") or p.accept("SYSTEM_VERSION", "AS", "OF"):
        token = p.peek()
        if token is None or token.kind != "string":
            return p.integer("a version number after VERSION AS OF"), None
        text = p.literal("a version number after VERSION AS OF")
        if not text.strip().isdigit():
            p.pos -= 1
            p.fail("a version number after VERSION AS OF")
        return int(text), None
    if p.accept("TIMESTAMP", "AS", "OF") or p.accept("SYSTEM_TIME", "AS", "OF"):
        return None, p.literal("a timestamp string after TIMESTAMP AS OF")
    if required or synonym:
        p.fail("VERSION AS OF <version> or TIMESTAMP AS OF '<timestamp>'")
    return None, None


def nothing(spark: SparkSession, path: str) -> None:
    """The run of a statement refused before it runs."""
