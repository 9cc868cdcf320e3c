"""Auto compaction: after a write or DML commits, compact the partitions it left fragmented.

Enabled by the session conf ``spark.databricks.delta.autoCompact.enabled`` when set,
else by the table property ``delta.autoOptimize.autoCompact`` (``true``/``auto``). Of
the partitions the write added files to, those holding at least
``spark.databricks.delta.autoCompact.minNumFiles`` (default 50) files smaller than
``autoCompact.minFileSize`` (default half of ``autoCompact.maxFileSize``, which
defaults to 128 MB) are bin-packed towards ``autoCompact.maxFileSize`` in a separate
OPTIMIZE commit with ``auto=true``. It is a best effort: whatever goes wrong (a
conflict with a concurrent writer included) is logged, never raised, because the
user's write has already committed.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import pyarrow.compute as pc

from delta_pyspark.core.commands.optimize_plan import MIB, PartitionKey, parse_bytes, partition_keys
from delta_pyspark.core.protocol.actions import AddFile
from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.spark.commands.optimize import OptimizeResult, OptimizeSpec, run_optimize
from delta_pyspark.spark.conf import (
    AUTO_COMPACT_CONF,
    AUTO_COMPACT_MAX_FILE_SIZE_CONF,
    AUTO_COMPACT_MIN_FILE_SIZE_CONF,
    AUTO_COMPACT_MIN_NUM_FILES_CONF,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from delta_pyspark.core.snapshot.snapshot import Snapshot
    from delta_pyspark.core.transaction.optimistic_transaction import Transaction

log = logging.getLogger(__name__)

ENABLED_PROP = "delta.autoOptimize.autoCompact"
DEFAULT_MAX_FILE_SIZE = 128 * MIB
DEFAULT_MIN_NUM_FILES = 50


def auto_compact_enabled(spark: SparkSession, configuration: Mapping[str, str]) -> bool:
    conf = spark.conf.get(AUTO_COMPACT_CONF, None)
    if conf is not None:
        return str(conf).strip().lower() == "true"
    prop = str(configuration.get(ENABLED_PROP, "false")).strip().lower()
    return prop in ("true", "auto", "legacy")


def commit_and_compact(
    spark: SparkSession,
    txn: Transaction,
    operation: str,
    parameters: Mapping[str, Any],
    metrics: Mapping[str, Any],
    user_metadata: str | None,
) -> Snapshot:
    """Commit ``txn``, then auto-compact the partitions it added files to (as delta-spark's
    post-commit hook does after writes, DELETE, UPDATE and MERGE alike)."""
    committed = txn.commit(operation, parameters, metrics, user_metadata)
    if txn.committed_version is not None:  # not deferred into a multi-table transaction
        auto_compact(spark, txn.log, committed.configuration, txn.added_files)
    return committed


def auto_compact(
    spark: SparkSession,
    delta_log: DeltaLog,
    configuration: Mapping[str, str],
    adds: list[AddFile],
) -> OptimizeResult | None:
    """Compact what the write that added ``adds`` fragmented; None when nothing ran."""
    if not adds or not auto_compact_enabled(spark, configuration):
        return None
    coordinator = delta_log.coordinator
    if coordinator is not None and not coordinator.permits_maintenance:
        return None  # the table's catalog has not permitted OPTIMIZE to this client
    try:
        return _compact(spark, delta_log, adds)
    except Exception as e:  # the write itself committed: never fail it
        log.warning("auto compaction of %s failed: %s", delta_log.table_root, e, exc_info=True)
        return None


def _compact(
    spark: SparkSession, delta_log: DeltaLog, adds: list[AddFile]
) -> OptimizeResult | None:
    max_size = parse_bytes(
        spark.conf.get(AUTO_COMPACT_MAX_FILE_SIZE_CONF, None) or DEFAULT_MAX_FILE_SIZE
    )
    raw_min = spark.conf.get(AUTO_COMPACT_MIN_FILE_SIZE_CONF, None)
    min_size = parse_bytes(raw_min) if raw_min is not None else max(1, max_size // 2)
    min_files = int(spark.conf.get(AUTO_COMPACT_MIN_NUM_FILES_CONF, None) or DEFAULT_MIN_NUM_FILES)
    touched: set[PartitionKey] = {
        tuple(sorted((a.get("partitionValues") or {}).items())) for a in adds
    }
    snapshot = delta_log.snapshot()
    files = snapshot.files
    small = pc.less(files.column("size"), min_size).to_pylist()
    counts = Counter(
        key for key, is_small in zip(partition_keys(files), small, strict=True) if is_small
    )
    chosen = {key for key in touched if counts.get(key, 0) >= max(min_files, 2)}
    if not chosen:
        return None
    spec = OptimizeSpec(
        auto=True, max_file_size=max_size, min_file_size=min_size, partitions=chosen
    )
    return run_optimize(spark, delta_log, spec, snapshot)
