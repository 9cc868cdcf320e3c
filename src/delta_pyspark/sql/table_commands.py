"""The table commands of Delta's SQL: DESCRIBE HISTORY/DETAIL, OPTIMIZE, VACUUM, RESTORE,
CONVERT TO DELTA, CREATE TABLE ... CLONE, GENERATE, REORG and SHOW TBLPROPERTIES."""

from __future__ import annotations

import re

from pyspark.sql import DataFrame, SparkSession

from delta_pyspark.core.commands.restore import METRIC_COLUMNS
from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.exceptions import (
    DeltaAnalysisException,
    DeltaTableNotFoundError,
    DeltaUnsupportedOperationException,
)
from delta_pyspark.spark.catalog.session_catalog import lookup
from delta_pyspark.spark.commands.convert import catalog_partition_ddl, convert_to_delta
from delta_pyspark.spark.commands.optimize import (
    METRICS_DDL,
    OptimizeSpec,
    metrics_frame,
    run_optimize,
)
from delta_pyspark.spark.commands.vacuum import execute_vacuum
from delta_pyspark.sql.resolve import not_a_delta_table, resolve
from delta_pyspark.sql.statement import Statement, as_of, where
from delta_pyspark.sql.text import StatementParser, TableRef
from delta_pyspark.tables import DETAIL_DDL, HISTORY_DDL, DeltaTable

_CLONE_COLUMNS = (
    ("sourceTableSize", "source_table_size"),
    ("sourceNumOfFiles", "source_num_of_files"),
    ("numRemovedFiles", "num_removed_files"),
    ("numCopiedFiles", "num_copied_files"),
    ("removedFilesSize", "removed_files_size"),
    ("copiedFilesSize", "copied_files_size"),
)


_CLONE_DDL = ", ".join(f"{column} long" for _, column in _CLONE_COLUMNS)


def describe(p: StatementParser) -> Statement | None:
    """DESCRIBE HISTORY / DETAIL; None for Spark's DESCRIBE (also of a table named history;
    of a ``delta.`path```, see ``spark_statements``)."""
    if p.peek(1) is None:
        return None
    if p.accept("HISTORY"):
        return history(p)
    if p.accept("DETAIL"):
        return detail(p)
    return None


def history(p: StatementParser) -> Statement:
    table = p.table()
    limit = p.integer("a row count after LIMIT") if p.accept("LIMIT") else None
    p.end()

    def run(spark: SparkSession, path: str) -> DataFrame:
        return DeltaTable(spark, path).history(limit)

    return Statement("DESCRIBE HISTORY", table, HISTORY_DDL, run)


def detail(p: StatementParser) -> Statement:
    table = p.table()
    p.end()

    def run(spark: SparkSession, path: str) -> DataFrame:
        return DeltaTable(spark, path).detail()

    return Statement("DESCRIBE DETAIL", table, DETAIL_DDL, run)


def optimize(p: StatementParser) -> Statement:
    table = p.table()
    full = p.accept("FULL")  # a clustered table: recluster every file
    condition = where(p, "ZORDER")
    zorder: list[str] = []
    if p.accept("ZORDER", "BY"):
        columns = p.group("the ZORDER BY columns") if p.at("(") else p.rest()
        zorder = [column.all_text() for column in columns.items()]
        if not zorder:
            p.fail("the ZORDER BY columns")
    p.end()

    def run(spark: SparkSession, path: str) -> DataFrame:
        if full:
            spec = OptimizeSpec([condition] if condition else [], zorder, full=True)
            return metrics_frame(spark, run_optimize(spark, DeltaLog.for_table(path), spec))
        builder = DeltaTable(spark, path).optimize()
        if condition is not None:
            builder = builder.where(condition)
        return builder.executeZOrderBy(*zorder) if zorder else builder.executeCompaction()

    return Statement("OPTIMIZE", table, METRICS_DDL, run)


def vacuum(p: StatementParser) -> Statement:
    table = p.table()
    hours: float | None = None
    dry_run = False
    lite: bool | None = None
    inventory: str | None = None  # a query, or a table's name
    inventory_is_query = False
    while not p.done():
        if p.accept("USING", "INVENTORY"):
            inventory_is_query = p.at("(")
            inventory = (
                p.group("the inventory query").all_text() if inventory_is_query else p.table().text
            )
        elif p.accept("LITE"):
            lite = True
        elif p.accept("FULL"):
            lite = False
        elif p.accept("RETAIN"):
            hours = p.number("a number of hours after RETAIN")
            p.expect("HOURS", what="HOURS after the retention")
        elif p.accept("DRY", "RUN"):
            dry_run = True
        else:
            p.fail("LITE, FULL, USING INVENTORY, RETAIN <n> HOURS or DRY RUN")
    p.end()

    def run(spark: SparkSession, path: str) -> DataFrame:
        files = None
        if inventory is not None:
            files = spark.sql(inventory) if inventory_is_query else spark.table(inventory)
        log = DeltaLog.for_table(path)
        result = execute_vacuum(spark, log, hours, dry_run, lite, inventory=files)
        if dry_run:
            return result
        # delta-spark's SQL VACUUM answers the table's path once the files are deleted.
        return spark.createDataFrame([(DeltaLog.for_table(path).table_root,)], "path string")

    return Statement("VACUUM", table, "path string", run)


def restore(p: StatementParser) -> Statement:
    p.accept("TABLE")
    table = p.table()
    p.accept("TO")
    version, timestamp = as_of(p, required=True)
    p.end()

    def run(spark: SparkSession, path: str) -> DataFrame:
        dt = DeltaTable(spark, path)
        if version is not None:
            return dt.restoreToVersion(version)
        assert timestamp is not None
        return dt.restoreToTimestamp(timestamp)

    columns = ", ".join(f"{column} long" for _, column in METRIC_COLUMNS)
    return Statement("RESTORE", table, columns, run, changes_schema=True)


def convert(p: StatementParser) -> Statement:
    p.expect("DELTA", what="DELTA after CONVERT TO")
    source = p.table()
    statistics = not p.accept("NO", "STATISTICS")
    partitions = (
        p.group("the PARTITIONED BY columns").all_text() if p.accept("PARTITIONED", "BY") else None
    )
    p.end()
    if len(source.parts) == 2:  # format.`path` or database.table, as convert_to_delta reads it
        identifier = f"{source.parts[0]}.`{source.parts[1].replace('`', '``')}`"
    else:
        identifier = source.text

    def run(spark: SparkSession, path: str) -> None:
        convert_to_delta(spark, identifier, partitions, statistics=statistics)

    return Statement("CONVERT TO DELTA", None, "", run)


def create(p: StatementParser) -> Statement | None:
    """``CREATE [OR REPLACE] TABLE ... [SHALLOW|DEEP] CLONE``, and ``CREATE TABLE`` at a
    ``delta.`path```; None for any other CREATE (Spark's, or the session parser's REPLACE)."""
    replace = p.accept("OR", "REPLACE")
    if not p.accept("TABLE"):
        return None  # CREATE VIEW, CREATE FUNCTION, ...
    if_not_exists = p.accept("IF", "NOT", "EXISTS")
    target = p.table()
    shallow = True
    if p.accept("SHALLOW"):
        shallow = True
    elif p.accept("DEEP"):
        shallow = False
    if not p.accept("CLONE"):
        return None  # Spark's parse (TableDefinitions.isDeltaCreate: the ones it cannot make)
    source = p.table()
    version, timestamp = as_of(p, required=False)
    properties: dict[str, str] = {}
    location: str | None = None
    while not p.done():
        if p.accept("TBLPROPERTIES"):
            properties.update(p.group("the TBLPROPERTIES list").properties())
        elif p.accept("LOCATION"):
            location = p.literal("a path after LOCATION")
        else:
            p.fail("TBLPROPERTIES (...) or LOCATION '<path>'")
    p.end()
    if location is not None and target.delta_path is None:
        raise DeltaUnsupportedOperationException(
            f"CREATE TABLE {target.text} ... CLONE with LOCATION is not supported: tables "
            "are not registered in the catalog here; clone to delta.`<path>` instead"
        )
    destination = location or target.delta_path or target.text

    def run(spark: SparkSession, _path: str) -> DataFrame:
        from delta_pyspark.spark.commands.clone import (
            clone_parquet,
            execute_clone,
            target_location,
        )

        if if_not_exists and DeltaLog(target_location(spark, destination)).is_delta_table():
            return spark.createDataFrame([(0,) * len(_CLONE_COLUMNS)], _CLONE_DDL)
        parquet = _parquet_source(spark, source)
        if parquet is not None:
            if version is not None or timestamp is not None:
                raise DeltaAnalysisException(
                    f"CLONE {source.text} VERSION/TIMESTAMP AS OF: a Parquet source has no versions"
                )
            result = clone_parquet(
                spark,
                *parquet,
                destination,
                shallow=shallow,
                replace=replace,
                properties=properties,
            )
        else:
            result = execute_clone(
                spark,
                DeltaLog.for_table(_delta_source(spark, source)),
                destination,
                shallow=shallow,
                replace=replace,
                properties=properties,
                version=version,
                timestamp=timestamp,
            )
        result_row = tuple(int(result.metrics.get(k, 0)) for k, _ in _CLONE_COLUMNS)
        return spark.createDataFrame([result_row], _CLONE_DDL)

    return Statement("CLONE", None, _CLONE_DDL, run)


def _parquet_source(spark: SparkSession, source: TableRef) -> tuple[str, str | None] | None:
    """A clone source of Parquet files: ``parquet.`path``` or a Parquet table of the session
    catalog, as (directory, its partition columns' DDL); None for any other source."""
    if len(source.parts) == 2 and source.parts[0].lower() == "parquet":
        return source.parts[1], None
    if source.delta_path is not None or len(source.parts) > 2:
        return None
    entry = lookup(spark, ".".join(source.parts))
    if entry is None or entry.provider != "parquet" or entry.location is None:
        return None
    return entry.location, catalog_partition_ddl(spark, ".".join(source.parts))


def _delta_source(spark: SparkSession, source: TableRef) -> str:
    """The path of the Delta table a CLONE copies (refusing any other source by name)."""
    kind, location = resolve(spark, source)
    if kind == "delta" and location is not None:
        return location
    if kind == "other":
        raise not_a_delta_table(source, location, "CLONE (of a table other than Parquet)")
    where = f" (looked in {location})" if location else ""
    raise DeltaTableNotFoundError(f"CLONE: table {source.text} not found{where}")


def generate(p: StatementParser) -> Statement:
    mode = p.identifier("a manifest mode (symlink_format_manifest)")
    p.expect("FOR", "TABLE", what="FOR TABLE")
    table = p.table()
    p.end()

    def run(spark: SparkSession, path: str) -> None:
        DeltaTable(spark, path).generate(mode)

    return Statement("GENERATE", table, "", run)


_UPGRADE_UNIFORM = re.compile(r"UPGRADE\s+UNIFORM\s*\(\s*ICEBERG_COMPAT_VERSION\s*=\s*(\d+)\s*\)")


def reorg(p: StatementParser) -> Statement:
    p.expect("TABLE", what="TABLE after REORG")
    table = p.table()
    condition = where(p, "APPLY")
    p.expect("APPLY", what="APPLY (PURGE)")
    action = p.group("APPLY's (PURGE)").all_text().upper()
    upgrade = _UPGRADE_UNIFORM.fullmatch(action)
    if action != "PURGE" and upgrade is None:
        raise DeltaUnsupportedOperationException(
            f"REORG TABLE ... APPLY ({action}) is not supported: only APPLY (PURGE) and "
            "APPLY (UPGRADE UNIFORM(ICEBERG_COMPAT_VERSION = 2)) are"
        )
    if upgrade is not None and condition is not None:
        raise DeltaUnsupportedOperationException(
            "REORG TABLE ... WHERE ... APPLY (UPGRADE UNIFORM(...)) is not supported: the "
            "upgrade covers the whole table"
        )
    p.end()

    def run(spark: SparkSession, path: str) -> DataFrame:
        if upgrade is not None:
            from delta_pyspark.spark.commands.uniform import upgrade_uniform

            return upgrade_uniform(spark, DeltaLog.for_table(path), int(upgrade.group(1)))
        return DeltaTable(spark, path).reorgPurge(condition)

    return Statement("REORG", table, METRICS_DDL, run)
