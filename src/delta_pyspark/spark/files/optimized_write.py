"""Optimized writes: each table partition lands in a few files near ``binSize``.

Without it, every Spark task writes one file per table partition it holds rows of
(tasks x partitions small files). With it, the rows are shuffled by the partition
columns before the writer (Spark's ``REBALANCE`` hint), and Spark's adaptive execution
sizes the writer tasks from the shuffle's real map-output sizes: small partitions are
coalesced into one task (one file each), partitions larger than ``binSize`` are split
into several tasks of about ``binSize``. So the size estimate is exact, measured on
the shuffled (serialized, compressed) bytes as delta-spark's optimized writer does,
and Parquet files usually come out somewhat smaller than ``binSize``.

Enabled by the write option ``optimizeWrite``, else the session conf
``spark.databricks.delta.optimizeWrite.enabled``, else the table property
``delta.autoOptimize.optimizeWrite``. ``spark.databricks.delta.optimizeWrite.binSize``
(default 128 MB; a bare number counts MiB, as in delta-spark) is applied for the
duration of the write job through Spark's ``advisoryPartitionSizeInBytes`` (with
``parallelismFirst`` off, so Spark aims at the size rather than at parallelism); the
session's own values are restored afterwards. Concurrent optimized writes in one session
share those settings (the last bin size set wins while they overlap). Without adaptive
execution the rebalance is a plain shuffle by partition: one file per partition.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from delta_pyspark.core.commands.optimize_plan import MIB, parse_bytes
from delta_pyspark.spark.conf import OPTIMIZE_WRITE_BIN_SIZE_CONF, OPTIMIZE_WRITE_CONF

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

OPTIMIZE_WRITE_PROP = "delta.autoOptimize.optimizeWrite"
DEFAULT_BIN_SIZE = 128 * MIB
_ADVISORY = "spark.sql.adaptive.advisoryPartitionSizeInBytes"
_PARALLELISM_FIRST = "spark.sql.adaptive.coalescePartitions.parallelismFirst"

_lock = threading.Lock()
_active: dict[int, tuple[int, dict[str, str | None]]] = {}


def _flag(value: Any) -> bool | None:
    if value is None:
        return None
    text = str(value).strip().lower()
    if text in ("true", "false"):
        return text == "true"
    return None


def optimize_write_enabled(
    spark: SparkSession, configuration: Mapping[str, str], option: str | None = None
) -> bool:
    """Write option, else session conf, else table property, else off."""
    for value in (option, spark.conf.get(OPTIMIZE_WRITE_CONF, None)):
        flag = _flag(value)
        if flag is not None:
            return flag
    return bool(_flag(configuration.get(OPTIMIZE_WRITE_PROP)))


def bin_size(spark: SparkSession) -> int:
    raw = spark.conf.get(OPTIMIZE_WRITE_BIN_SIZE_CONF, None)
    return DEFAULT_BIN_SIZE if raw is None else parse_bytes(raw, MIB)


def rebalanced(df: DataFrame, partition_columns: list[str]) -> DataFrame:
    """``df`` shuffled so each table partition's rows meet in as few tasks as its size needs."""
    return df.hint("rebalance", *partition_columns)


@contextmanager
def bin_size_for_job(spark: SparkSession, size: int) -> Iterator[None]:
    """Make adaptive execution aim at ``size``-byte shuffle partitions while inside."""
    key = id(spark)
    with _lock:
        count, saved = _active.get(key, (0, {}))
        if count == 0:
            saved = {k: spark.conf.get(k, None) for k in (_ADVISORY, _PARALLELISM_FIRST)}
        _active[key] = (count + 1, saved)
        spark.conf.set(_ADVISORY, str(size))
        spark.conf.set(_PARALLELISM_FIRST, "false")
    try:
        yield
    finally:
        with _lock:
            count, saved = _active.pop(key)
            if count > 1:
                _active[key] = (count - 1, saved)
            else:
                for k, v in saved.items():
                    if v is None:
                        spark.conf.unset(k)
                    else:
                        spark.conf.set(k, v)
