"""``DeltaTable.clone/cloneAtVersion/cloneAtTimestamp``: resolves the target (a path
or a managed table name) and the timestamp; ``core/commands/clone.py`` does the rest."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

from delta_pyspark.core.commands.clone import CloneResult, clone_table
from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.core.snapshot.time_travel import parse_timestamp_ms
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
