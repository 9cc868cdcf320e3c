"""REORG TABLE ... APPLY (UPGRADE UNIFORM(ICEBERG_COMPAT_VERSION=2)): make an existing table
readable as Iceberg, or convert its current version again.

Steps, each its own commit so each is checked as any commit is: files with deletion vectors
are purged (IcebergCompatV2 is only enabled on a table without any); column mapping
(``name`` when off), IcebergCompatV2 and ``enabledFormats = iceberg`` are set; the files
not written under IcebergCompatV2 (no ``ICEBERG_COMPAT_VERSION`` tag, as delta-spark
decides) are rewritten, with Parquet field ids and their partition values, so Iceberg
readers match their columns by id. The properties commit converts the table whole; when the
table was already upgraded, nothing is committed and the current version is converted again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

from delta_pyspark.core.commands.alter_table import set_properties
from delta_pyspark.core.protocol import table_properties as props
from delta_pyspark.core.protocol.column_mapping import column_mapping_mode
from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.core.snapshot.snapshot import Snapshot
from delta_pyspark.core.uniform.compat import ICEBERG_COMPAT_TAG
from delta_pyspark.core.uniform.conversion import convert
from delta_pyspark.exceptions import (
    DeltaUnsupportedOperationException,
    IcebergCompatViolationError,
)
from delta_pyspark.spark.commands.optimize import (
    OptimizeResult,
    OptimizeSpec,
    metrics_frame,
    run_optimize,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

SUPPORTED_COMPAT_VERSION = 2


def upgrade_uniform(spark: SparkSession, log: DeltaLog, compat_version: int) -> DataFrame:
    """Upgrade the table to UniForm with IcebergCompat ``compat_version``; REORG's metrics."""
    if compat_version != SUPPORTED_COMPAT_VERSION:
        raise DeltaUnsupportedOperationException(
            f"REORG ... UPGRADE UNIFORM(ICEBERG_COMPAT_VERSION={compat_version}) is not "
            f"supported: delta-pyspark writes IcebergCompatV{SUPPORTED_COMPAT_VERSION} tables"
        )
    snapshot = log.snapshot()
    if props.deletion_vectors_enabled(snapshot.configuration):  # refused before any commit
        raise IcebergCompatViolationError(
            "[DELTA_ICEBERG_COMPAT_VIOLATION.DELETION_VECTORS_SHOULD_BE_DISABLED] "
            f"IcebergCompatV2 needs {props.ENABLE_DELETION_VECTORS} = false: set it to false first"
        )
    if pc.sum(pc.is_valid(snapshot.files.column("deletionVector"))).as_py():
        run_optimize(spark, log, OptimizeSpec(purge=True))
    wanted = {props.ICEBERG_COMPAT_V2: "true", props.ENABLED_FORMATS: "iceberg"}
    if column_mapping_mode(snapshot.configuration) == "none":
        wanted[props.COLUMN_MAPPING_MODE] = "name"
    conf = log.snapshot().configuration
    changed = any(conf.get(k) != v for k, v in wanted.items())
    if changed:
        set_properties(log, wanted)
    result = run_optimize(spark, log, OptimizeSpec(purge=True, rewrite=files_not_iceberg_compat))
    latest = log.snapshot()
    # the commits above converted as they went (a failure there surfaces now); an upgraded
    # table with nothing to commit has its current version converted again
    convert(log, latest, rerun=not changed and result.version is None)
    return metrics_frame(spark, OptimizeResult(result.path, result.metrics, latest.version))


def files_not_iceberg_compat(snapshot: Snapshot, files: pa.Table) -> pa.BooleanArray:
    """Which files were not written under IcebergCompatV2 (no ``ICEBERG_COMPAT_VERSION = 2``
    tag, as delta-spark tags them): they may lack field ids and partition values."""
    if not files.num_rows:
        return pa.array([], pa.bool_())
    tags = pc.map_lookup(files.column("tags").combine_chunks(), ICEBERG_COMPAT_TAG, "first")
    return pc.fill_null(pc.not_equal(tags, "2"), True)
