"""delta-spark's session configurations that change how writes and DML behave."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

AUTO_MERGE_CONF = "spark.databricks.delta.schema.autoMerge.enabled"
USER_METADATA_CONF = "spark.databricks.delta.commitInfo.userMetadata"


def auto_merge(spark: SparkSession) -> bool:
    """Whether writes and merges may add columns without being asked (``autoMerge``)."""
    return str(spark.conf.get(AUTO_MERGE_CONF, "false")).strip().lower() == "true"


def user_metadata(spark: SparkSession, option: str | None = None) -> str | None:
    """``commitInfo.userMetadata``: the write option if given, else the session conf."""
    return option if option is not None else spark.conf.get(USER_METADATA_CONF, None)
