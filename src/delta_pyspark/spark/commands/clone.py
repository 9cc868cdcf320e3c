"""``DeltaTable.clone/cloneAtVersion/cloneAtTimestamp``: resolves the target (a path
or a managed table name) and the timestamp; ``core/commands/clone.py`` does the rest.
A Parquet source (SQL's ``SHALLOW CLONE parquet.`path``` or a Parquet table's name) is read
as CONVERT TO DELTA reads it, and its files added by absolute path (``clone_parquet``)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

from delta_pyspark.core.commands.clone import (
    CloneResult,
    CloneSource,
    check_clone_target,
    clone_table,
    commit_clone,
    file_uri,
)
from delta_pyspark.core.log.table_paths import resolve_path
from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.core.snapshot.time_travel import parse_timestamp_ms
from delta_pyspark.core.storage.locations import normalise
from delta_pyspark.core.storage.log_store import log_store_for
from delta_pyspark.exceptions import DeltaAnalysisException, DeltaUnsupportedOperationException
from delta_pyspark.spark.catalog.session_catalog import lookup, register, table_location
from delta_pyspark.spark.conf import session_time_zone

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def _is_path(target: str) -> bool:
    return "/" in target or os.path.isabs(target) or target.startswith("file:")


def target_location(spark: SparkSession, target: str) -> str:
    """A path (absolute, or containing ``/``) as is; otherwise a table name's location."""
    return target if _is_path(target) else table_location(spark, target)


def execute_clone(
    spark: SparkSession,
    log: DeltaLog,
    target: str,
    *,
    shallow: bool,
    replace: bool = False,
    properties: Mapping[str, str] | None = None,
    version: int | None = None,
    timestamp: str | None = None,
) -> CloneResult:
    """Clone the table (at ``version``/``timestamp``, else latest): the clone's path, version
    and delta-spark's clone metrics."""
    from zoneinfo import ZoneInfo

    timestamp_ms = None
    if timestamp is not None:
        tz = ZoneInfo(session_time_zone(spark))
        timestamp_ms = parse_timestamp_ms(timestamp, tz)
    result = clone_table(
        log,
        target_location(spark, target),
        shallow=shallow,
        replace=replace,
        properties=properties,
        version=version,
        timestamp_ms=timestamp_ms,
    )
    if not _is_path(target) and lookup(spark, target) is None:
        register(spark, target, result.target_root, managed=True)
    return result


def clone_parquet(
    spark: SparkSession,
    source: str,
    partition_schema: str | None,
    target: str,
    *,
    shallow: bool,
    replace: bool = False,
    properties: Mapping[str, str] | None = None,
) -> CloneResult:
    """A shallow clone of the Parquet directory ``source`` (Hive-partitioned by
    ``partition_schema``, a DDL string, when given): a Delta table at ``target`` whose files
    are the directory's, by absolute path, with their footers' statistics. Deep clones copy
    Delta tables only."""
    from delta_pyspark.spark.commands.convert import parquet_directory

    if not shallow:
        raise DeltaUnsupportedOperationException(
            f"DEEP CLONE of parquet.`{source}` is not supported: clone a Parquet source "
            "SHALLOW (its files stay where they are), or CONVERT it TO DELTA and deep-clone that"
        )
    source_root = normalise(source)
    if DeltaLog.for_table(source_root).is_delta_table():
        raise DeltaAnalysisException(
            f"{source_root} holds a Delta table: clone it as delta.`{source_root}` (read as "
            "Parquet, its files would include the rows its log has removed)"
        )
    target_root = normalise(target_location(spark, target))
    target_log = DeltaLog.for_table(target_root)
    replacing = check_clone_target(source_root, target_root, target_log, replace)
    existing = target_log.snapshot() if replacing else None
    store = log_store_for(source_root)
    files = parquet_directory(spark, store, source_root, partition_schema, True)
    adds = [add | {"path": file_uri(resolve_path(source_root, add["path"]))} for add in files.adds]
    described = CloneSource(
        {"source": f"parquet.`{source_root}`"},
        files.schema,
        files.partition_columns,
        {},
        None,
        None,
        sum(int(add["size"]) for add in adds),
        len(adds),
    )
    result = commit_clone(
        target_log, existing, described, adds, shallow=True, properties=properties
    )
    if not _is_path(target) and lookup(spark, target) is None:
        register(spark, target, result.target_root, managed=True)
    return result
