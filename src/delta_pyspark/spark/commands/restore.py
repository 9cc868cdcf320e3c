"""``DeltaTable.restoreToVersion/restoreToTimestamp``: timestamps are read in the
session time zone; the commit is built in ``core/commands/restore.py``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from delta_pyspark.core.commands.restore import METRIC_COLUMNS, metrics_row, restore
from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.core.snapshot.time_travel import parse_timestamp_ms
from delta_pyspark.spark.conf import IGNORE_MISSING_FILES_CONF, session_time_zone

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


def execute_restore(
    spark: SparkSession,
    log: DeltaLog,
    version: int | None = None,
    timestamp: str | None = None,
) -> DataFrame:
    """RESTORE in one commit; a one-row DataFrame of delta-spark's restore metrics."""
    from zoneinfo import ZoneInfo

    timestamp_ms = None
    if timestamp is not None:
        tz = ZoneInfo(session_time_zone(spark))
        timestamp_ms = parse_timestamp_ms(timestamp, tz)
    ignore_missing = str(spark.conf.get(IGNORE_MISSING_FILES_CONF, "false")).lower() == "true"
    metrics = restore(
        log,
        version,
        timestamp_ms,
        timestamp_text=None if timestamp is None else str(timestamp),
        check_files=not ignore_missing,
    )
    ddl = ", ".join(f"{column} long" for _, column in METRIC_COLUMNS)
    return spark.createDataFrame([metrics_row(metrics)], ddl)
