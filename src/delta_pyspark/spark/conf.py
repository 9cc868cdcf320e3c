"""Every Spark session setting delta-pyspark reads or sets, in one place.

Most are delta-spark's own names (``spark.databricks.delta.*``), so a session tuned for
delta-spark behaves the same here; ``spark.delta_pyspark.*`` are ours. ``SESSION_DEFAULTS`` are
set on the builder by ``configure_spark_with_delta``. The two VACUUM safety settings are read by
the Spark-free core (``core.commands.vacuum_plan``), which names them itself.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

SESSION_DEFAULTS = {
    # Spark writes INT96 timestamps by default: no Parquet statistics, poor interop.
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
    # Scans name the snapshot's files explicitly; above this many paths Spark "lists" them
    # with a distributed job (one task per file): 1,000 files took 9-13 s vs 1.7-2.6 s.
    "spark.sql.sources.parallelPartitionDiscovery.threshold": "100000",
    # Spark 4.1 shreds VARIANT columns on write by default: files a table may hold only with
    # the variantShredding table feature, which we do not write (a no-op on 4.0).
    "spark.sql.variant.writeShredding.enabled": "false",
}

SESSION_TIME_ZONE_CONF = "spark.sql.session.timeZone"
VECTORIZED_READER_CONF = "spark.sql.parquet.enableVectorizedReader"
IGNORE_MISSING_FILES_CONF = "spark.sql.files.ignoreMissingFiles"

# writes
AUTO_MERGE_CONF = "spark.databricks.delta.schema.autoMerge.enabled"
USER_METADATA_CONF = "spark.databricks.delta.commitInfo.userMetadata"
# ``...defaults.appendOnly`` sets ``delta.appendOnly`` on tables this session creates
PROPERTY_DEFAULTS_PREFIX = "spark.databricks.delta.properties.defaults."
OPTIMIZE_WRITE_CONF = "spark.databricks.delta.optimizeWrite.enabled"
OPTIMIZE_WRITE_BIN_SIZE_CONF = "spark.databricks.delta.optimizeWrite.binSize"

# OPTIMIZE, Z-order and auto compaction
OPTIMIZE_MAX_FILE_SIZE_CONF = "spark.databricks.delta.optimize.maxFileSize"
OPTIMIZE_MIN_FILE_SIZE_CONF = "spark.databricks.delta.optimize.minFileSize"
OPTIMIZE_MAX_DELETED_ROWS_RATIO_CONF = "spark.databricks.delta.optimize.maxDeletedRowsRatio"
ZORDER_NUM_RANGES_CONF = "spark.databricks.io.skipping.mdc.rangeId.max"
ZORDER_CHECK_STATS_CONF = "spark.databricks.delta.optimize.zorder.checkStatsCollection.enabled"
AUTO_COMPACT_CONF = "spark.databricks.delta.autoCompact.enabled"
AUTO_COMPACT_MAX_FILE_SIZE_CONF = "spark.databricks.delta.autoCompact.maxFileSize"
AUTO_COMPACT_MIN_FILE_SIZE_CONF = "spark.databricks.delta.autoCompact.minFileSize"
AUTO_COMPACT_MIN_NUM_FILES_CONF = "spark.databricks.delta.autoCompact.minNumFiles"

# VACUUM and DROP FEATURE
VACUUM_PARALLEL_DELETE_CONF = "spark.databricks.delta.vacuum.parallelDelete.enabled"
VACUUM_PARALLELISM_CONF = "spark.databricks.delta.vacuum.parallelDelete.parallelism"
#: VACUUM without LITE or FULL runs LITE when true (delta-spark's default: false)
VACUUM_LITE_CONF = "spark.databricks.delta.vacuum.lite.enabled"
FAST_DROP_FEATURE_CONF = "spark.databricks.delta.tableFeatures.fastDropFeature.enabled"

# catalog-managed tables (``delta_pyspark.use_catalog``)
CATALOG_URL_CONF = "spark.delta_pyspark.catalog.url"
CATALOG_WAREHOUSE_CONF = "spark.delta_pyspark.catalog.warehouse"
CATALOG_MAINTENANCE_CONF = "spark.delta_pyspark.catalog.allowMaintenance"


def session_time_zone(spark: SparkSession) -> str:
    """The zone Spark reads timestamps without one in (filters, time travel, partitions)."""
    return str(spark.conf.get(SESSION_TIME_ZONE_CONF, "UTC"))


def auto_merge(spark: SparkSession) -> bool:
    """Whether writes and merges may add columns without being asked (``autoMerge``)."""
    return str(spark.conf.get(AUTO_MERGE_CONF, "false")).strip().lower() == "true"


def user_metadata(spark: SparkSession, option: str | None = None) -> str | None:
    """``commitInfo.userMetadata``: the write option if given, else the session conf."""
    return option if option is not None else spark.conf.get(USER_METADATA_CONF, None)
