"""OPTIMIZE (bin-packing compaction, Z-ordering) and REORG ... APPLY (PURGE).

Each run plans on one snapshot (``core.optimize_plan``), writes every bin of every
selected partition in a single Spark job, and commits once: the old files removed and
the new ones added with ``dataChange=false``. Nothing changes logically, so the
commit runs at SnapshotIsolation: appends committed meanwhile never conflict with it,
while a concurrent commit that removed one of its input files makes it fail with
``ConcurrentDeleteReadException`` (the rewrite would resurrect deleted rows). With
nothing to rewrite nothing is committed, so a second run is a no-op.

Sizes: the target (``maxFileSize``) is the session's
``spark.databricks.delta.optimize.maxFileSize`` when set, else the table's
``delta.targetFileSize``, else 1 GB. Files below
``spark.databricks.delta.optimize.minFileSize`` (default: the target) are candidates,
and so are files whose deletion vector removes more than
``spark.databricks.delta.optimize.maxDeletedRowsRatio`` (default 0.05) of their rows.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from delta_pyspark.core.commands.clustering import ClusteringColumn
from delta_pyspark.core.commands.optimize_plan import (
    GIB,
    Bin,
    PartitionKey,
    bin_rows,
    compaction_candidates,
    deleted_rows,
    has_deletion_vector,
    pack_bins,
    parse_bytes,
    partition_keys,
    size_percentiles,
    size_summary,
)
from delta_pyspark.core.expressions.nodes import Unknown, and_all, columns_of, walk
from delta_pyspark.core.expressions.parser import parse_predicate
from delta_pyspark.core.protocol.actions import AddFile, remove_actions
from delta_pyspark.core.skipping.file_pruning import prune_files
from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.core.snapshot.snapshot import Snapshot
from delta_pyspark.core.storage.commit_coordinator import check_maintenance
from delta_pyspark.core.transaction.optimistic_transaction import Transaction
from delta_pyspark.exceptions import (
    DeltaAnalysisException,
    DeltaError,
    DeltaIllegalArgumentException,
)
from delta_pyspark.spark import arguments
from delta_pyspark.spark.commands.clustering import (
    optimize_columns,
    plan_clustering,
    write_clustered,
)
from delta_pyspark.spark.commands.rewrite import live_rows, num_records
from delta_pyspark.spark.conf import (
    OPTIMIZE_MAX_DELETED_ROWS_RATIO_CONF,
    OPTIMIZE_MAX_FILE_SIZE_CONF,
    OPTIMIZE_MIN_FILE_SIZE_CONF,
    session_time_zone,
    user_metadata,
)
from delta_pyspark.spark.jvm.bridge import parsed_expression_text

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

TARGET_FILE_SIZE_PROP = "delta.targetFileSize"
DEFAULT_MAX_FILE_SIZE = GIB
DEFAULT_MAX_DELETED_ROWS_RATIO = 0.05

METRICS_DDL = (
    "path string, metrics struct<"
    "numFilesAdded: bigint, numFilesRemoved: bigint, "
    "filesAdded: struct<min: bigint, max: bigint, avg: double, totalFiles: bigint, "
    "totalSize: bigint>, "
    "filesRemoved: struct<min: bigint, max: bigint, avg: double, totalFiles: bigint, "
    "totalSize: bigint>, "
    "partitionsOptimized: bigint, "
    "zOrderStats: struct<strategyName: string, inputCubeFiles: struct<num: bigint, size: bigint>, "
    "inputOtherFiles: struct<num: bigint, size: bigint>, inputNumCubes: bigint, "
    "mergedFiles: struct<num: bigint, size: bigint>, numOutputCubes: bigint, "
    "mergedNumCubes: bigint>, "
    "numBatches: bigint, totalConsideredFiles: bigint, totalFilesSkipped: bigint, "
    "preserveInsertionOrder: boolean, numFilesSkippedToReduceWriteAmplification: bigint, "
    "numBytesSkippedToReduceWriteAmplification: bigint, startTimeMs: bigint, endTimeMs: bigint, "
    "totalClusterParallelism: bigint, totalScheduledTasks: bigint, "
    "deletionVectorStats: struct<numDeletionVectorsRemoved: bigint, "
    "numDeletionVectorRowsRemoved: bigint>, "
    "numTableColumns: bigint, numTableColumnsWithStats: bigint>"
)


class DeltaOptimizeBuilder:
    """``DeltaTable.optimize()``: choose partitions, then compact or Z-order them."""

    def __init__(self, spark: SparkSession, log: DeltaLog) -> None:
        self._spark = spark
        self._log = log
        self._filters: list[str] = []

    def where(self, partitionFilter: str) -> DeltaOptimizeBuilder:
        """Limit the run to partitions matching ``partitionFilter`` (partition columns only;
        several calls are ANDed)."""
        if not isinstance(partitionFilter, str) or not partitionFilter.strip():
            raise DeltaIllegalArgumentException("where() needs a SQL partition predicate string")
        self._filters.append(partitionFilter)
        return self

    def executeCompaction(self) -> DataFrame:
        """Bin-pack small files into files near the target size."""
        result = run_optimize(self._spark, self._log, OptimizeSpec(predicates=self._filters))
        return metrics_frame(self._spark, result)

    def executeZOrderBy(self, *cols: str | list[str] | tuple[str, ...]) -> DataFrame:
        """Rewrite the selected partitions clustered by the Z-order of ``cols``."""
        names = arguments.column_names(cols, "Z-order column")
        spec = OptimizeSpec(predicates=self._filters, zorder_by=names)
        return metrics_frame(self._spark, run_optimize(self._spark, self._log, spec))


def execute_purge(spark: SparkSession, log: DeltaLog, condition: str | None) -> DataFrame:
    """REORG TABLE ... [WHERE condition] APPLY (PURGE): rewrite every file (in the matching
    partitions) that carries a deletion vector, so deleted rows are physically gone."""
    spec = OptimizeSpec(predicates=[condition] if condition else [], purge=True)
    return metrics_frame(spark, run_optimize(spark, log, spec))


@dataclass
class OptimizeSpec:
    """What to optimize and how (the builder's choices, or auto compaction's)."""

    predicates: list[str] = field(default_factory=list)
    zorder_by: list[str] = field(default_factory=list)
    purge: bool = False
    auto: bool = False
    full: bool = False  # OPTIMIZE t FULL: recluster every file of a clustered table
    max_file_size: int | None = None  # overrides the session/table setting
    min_file_size: int | None = None
    partitions: Collection[PartitionKey] | None = None  # only these (auto compaction)
    # REORG of exactly the files this mask of the snapshot's files selects, each rewritten
    # on its own (DROP FEATURE typeWidening: the files holding narrower types)
    rewrite: Callable[[Snapshot, pa.Table], pa.BooleanArray] | None = None


@dataclass
class OptimizeResult:
    """What a run did: delta-spark's ``OptimizeMetrics`` and the committed version."""

    path: str
    metrics: dict[str, Any]
    version: int | None


def max_file_size(spark: SparkSession, configuration: Any) -> int:
    """Target size of OPTIMIZE's output files (session conf, table property, 1 GB)."""
    conf = spark.conf.get(OPTIMIZE_MAX_FILE_SIZE_CONF, None)
    if conf is not None:
        return parse_bytes(conf)
    prop = configuration.get(TARGET_FILE_SIZE_PROP)
    return parse_bytes(prop) if prop is not None else DEFAULT_MAX_FILE_SIZE


def _min_file_size(spark: SparkSession, target: int) -> int:
    conf = spark.conf.get(OPTIMIZE_MIN_FILE_SIZE_CONF, None)
    return parse_bytes(conf) if conf is not None else target


def _max_deleted_ratio(spark: SparkSession) -> float:
    raw = spark.conf.get(OPTIMIZE_MAX_DELETED_ROWS_RATIO_CONF, None)
    ratio = DEFAULT_MAX_DELETED_ROWS_RATIO if raw is None else float(raw)
    if not 0.0 <= ratio <= 1.0:
        raise DeltaIllegalArgumentException(
            f"{OPTIMIZE_MAX_DELETED_ROWS_RATIO_CONF} must be in [0.0, 1.0], got {raw}"
        )
    return ratio


def select_partitions(spark: SparkSession, snapshot: Snapshot, predicates: list[str]) -> pa.Table:
    """The snapshot's files in partitions matching every predicate (partition columns only)."""
    if not predicates:
        return snapshot.files
    parts = {p.lower(): p for p in snapshot.partition_columns}
    exprs = [parse_predicate(p) for p in predicates]
    for text, expr in zip(predicates, exprs, strict=True):
        for col in sorted(columns_of(expr)):
            if len(col) != 1 or col[0].lower() not in parts:
                allowed = ", ".join(snapshot.partition_columns)
                raise DeltaAnalysisException(
                    f"Predicate references non-partition column '{'.'.join(col)}'. Only the "
                    f"partition columns may be referenced: [{allowed}] (in {text!r})"
                )
    combined = and_all(exprs)
    assert combined is not None
    if any(isinstance(n, Unknown) for n in walk(combined)):
        return _select_with_spark(spark, snapshot, predicates)
    return prune_files(snapshot, combined, session_time_zone(spark))


def _select_with_spark(spark: SparkSession, snapshot: Snapshot, predicates: list[str]) -> pa.Table:
    """Partition predicates the AST cannot model: Spark evaluates them over the files'
    partition values (one row per file), which also resolves the columns they name."""
    from pyspark.sql import functions as F

    from delta_pyspark.core.protocol.column_mapping import column_mapping_mode, physical_name
    from delta_pyspark.spark.types import to_spark_type

    files = snapshot.files
    mode = column_mapping_mode(snapshot.configuration)
    values = files.column("partitionValues").combine_chunks()
    columns: dict[str, pa.Array] = {"__delta_row": pa.array(range(files.num_rows), pa.int64())}
    for c in snapshot.partition_columns:
        key = physical_name(snapshot.schema.field(c), mode)
        columns[c] = (
            pc.map_lookup(values, key, "first") if files.num_rows else pa.array([], pa.string())
        )
    df = spark.createDataFrame(pa.table(columns))
    df = df.select(
        "__delta_row",
        *[
            F.col(f"`{c}`").cast(to_spark_type(snapshot.schema.field(c).type)).alias(c)
            for c in snapshot.partition_columns
        ],
    )
    try:
        for p in predicates:
            df = df.where(F.expr(p))
        rows = [r[0] for r in df.select("__delta_row").collect()]
    except Exception as e:  # e.g. [UNRESOLVED_COLUMN] for a data column
        raise DeltaAnalysisException(
            f"invalid partition predicate {predicates}: only the partition columns "
            f"{snapshot.partition_columns} may be referenced ({str(e).splitlines()[0]})"
        ) from None
    return files.take(pa.array(sorted(rows), pa.int64()))


def _plan(
    spark: SparkSession, snapshot: Snapshot, files: pa.Table, spec: OptimizeSpec, target: int
) -> list[Bin]:
    if spec.zorder_by:
        return pack_bins(files, keep_single=pa.array([True] * files.num_rows))
    if spec.rewrite is not None:
        chosen = spec.rewrite(snapshot, files)
        return pack_bins(files, chosen, target, keep_single=chosen)
    with_dv = has_deletion_vector(files)
    if spec.purge:
        return pack_bins(files, with_dv, target, keep_single=with_dv)
    min_size = spec.min_file_size or _min_file_size(spark, target)
    candidates = compaction_candidates(files, min_size, _max_deleted_ratio(spark))
    return pack_bins(files, candidates, target, keep_single=with_dv)


def run_optimize(
    spark: SparkSession, log: DeltaLog, spec: OptimizeSpec, snapshot: Snapshot | None = None
) -> OptimizeResult:
    """Plan, rewrite and commit one OPTIMIZE/REORG; commits nothing when there is no work."""
    from delta_pyspark.spark.commands.bin_writer import write_bins
    from delta_pyspark.spark.commands.zorder import resolve_zorder_columns, write_zordered

    check_maintenance(log.coordinator, log.table_root, "REORG" if spec.purge else "OPTIMIZE")
    start_ms = int(time.time() * 1000)
    snapshot = snapshot or log.snapshot()
    liquid = optimize_columns(
        snapshot, spec.predicates, spec.zorder_by, spec.full, spec.purge or spec.auto
    )
    files = select_partitions(spark, snapshot, spec.predicates)
    if spec.partitions is not None:
        wanted = set(spec.partitions)
        mask = pa.array([k in wanted for k in partition_keys(files)], pa.bool_())
        files = files.filter(mask)
    zorder = resolve_zorder_columns(spark, snapshot, spec.zorder_by) if spec.zorder_by else []
    target = spec.max_file_size or max_file_size(spark, snapshot.configuration)
    bins = (
        plan_clustering(files, spec.full) if liquid else _plan(spark, snapshot, files, spec, target)
    )
    chosen = files.take(pa.array(bin_rows(bins), pa.int64()))
    version = None
    adds: list[AddFile] = []
    if bins:
        txn = Transaction(log, snapshot)
        txn.read_files(chosen)
        if liquid:
            adds = write_clustered(spark, snapshot, files, bins, liquid, target)
        elif zorder:
            adds = write_zordered(spark, snapshot, files, bins, zorder, target)
        else:
            adds = write_bins(spark, snapshot, files, bins)
        _check_rows_kept(chosen, adds)
        removes = remove_actions(chosen, data_change=False)
        txn.remove_files(removes)
        txn.add_files(adds)
        committed = txn.commit(
            "REORG" if spec.purge else "OPTIMIZE",
            _parameters(spark, spec, zorder, liquid),
            _operation_metrics(chosen, adds),
            user_metadata(spark),
        )
        version = committed.version
    metrics = _metrics(spark, snapshot, files, chosen, bins, adds, bool(zorder), start_ms)
    if liquid:  # delta-spark reports clusteringStats (not kept here), not zOrderStats
        metrics |= {"preserveInsertionOrder": False, "totalScheduledTasks": len(adds)}
    return OptimizeResult(snapshot.table_root, metrics, version)


def _check_rows_kept(removed: pa.Table, adds: list[AddFile]) -> None:
    """Refuse to commit a rewrite whose files do not hold exactly the rows it replaces
    (from the stats: rows of the old files net of deletion vectors, rows written)."""
    before = live_rows(removed)
    if before is None:
        return  # an old file without row count: nothing to compare with
    after = num_records(adds)
    if after != before:
        raise DeltaError(
            f"OPTIMIZE wrote {after} rows in place of {before}; nothing was committed "
            "(this is a bug: please report it)"
        )


def _parameters(
    spark: SparkSession,
    spec: OptimizeSpec,
    zorder: list[tuple[str, ...]],
    liquid: list[ClusteringColumn] | None,
) -> dict[str, Any]:
    compact = (",", ":")  # delta-spark's (Jackson's) JSON spelling
    # each predicate as delta-spark records it: Spark's parsed, unresolved expression
    predicates = [parsed_expression_text(spark, p) for p in spec.predicates]
    params: dict[str, Any] = {"predicate": json.dumps(predicates, separators=compact)}
    if spec.purge:
        params["applyPurge"] = True
        return params
    params["zOrderBy"] = json.dumps([".".join(p) for p in zorder], separators=compact)
    params["clusterBy"] = json.dumps([c.name for c in liquid or []], separators=compact)
    params["auto"] = spec.auto
    if liquid:
        params["isFull"] = spec.full
    return params


def _dv_stats(removed: pa.Table) -> dict[str, int]:
    return {
        "numDeletionVectorsRemoved": int(pc.sum(has_deletion_vector(removed)).as_py() or 0),
        "numDeletionVectorRowsRemoved": int(pc.sum(deleted_rows(removed)).as_py() or 0),
    }


def _operation_metrics(removed: pa.Table, adds: list[AddFile]) -> dict[str, Any]:
    """``commitInfo.operationMetrics`` as delta-spark records them for OPTIMIZE."""
    added = [int(a["size"]) for a in adds]
    out: dict[str, Any] = {
        "numAddedFiles": len(adds),
        "numRemovedFiles": removed.num_rows,
        "numAddedBytes": sum(added),
        "numRemovedBytes": int(pc.sum(removed.column("size")).as_py() or 0),
    }
    out |= size_percentiles(added)
    out["numDeletionVectorsRemoved"] = _dv_stats(removed)["numDeletionVectorsRemoved"]
    return out


def _metrics(
    spark: SparkSession,
    snapshot: Snapshot,
    considered: pa.Table,
    removed: pa.Table,
    bins: list[Bin],
    adds: list[AddFile],
    zorder: bool,
    start_ms: int,
) -> dict[str, Any]:
    removed_sizes = removed.column("size").to_pylist()
    added_sizes = [int(a["size"]) for a in adds]
    from delta_pyspark.spark.commands.zorder import indexed_column_count

    z_stats = None
    if zorder:
        merged = {"num": removed.num_rows, "size": int(sum(removed_sizes))}
        z_stats = {
            "strategyName": "all",
            "inputCubeFiles": {"num": 0, "size": 0},
            "inputOtherFiles": merged,
            "inputNumCubes": 0,
            "mergedFiles": merged,
            "numOutputCubes": len(bins),
            "mergedNumCubes": None,
        }
    return {
        "numFilesAdded": len(adds),
        "numFilesRemoved": removed.num_rows,
        "filesAdded": size_summary(added_sizes),
        "filesRemoved": size_summary(removed_sizes),
        "partitionsOptimized": len({b.partition for b in bins}),
        "zOrderStats": z_stats,
        "numBatches": 1 if bins else 0,
        "totalConsideredFiles": considered.num_rows,
        "totalFilesSkipped": considered.num_rows - removed.num_rows,
        "preserveInsertionOrder": not zorder,
        "numFilesSkippedToReduceWriteAmplification": 0,
        "numBytesSkippedToReduceWriteAmplification": 0,
        "startTimeMs": start_ms,
        "endTimeMs": int(time.time() * 1000),
        "totalClusterParallelism": int(spark.sparkContext.defaultParallelism),
        "totalScheduledTasks": len(bins) if not zorder else len(adds),
        "deletionVectorStats": _dv_stats(removed),
        "numTableColumns": len(snapshot.schema.fields),
        "numTableColumnsWithStats": indexed_column_count(snapshot),
    }


def metrics_frame(spark: SparkSession, result: OptimizeResult) -> DataFrame:
    """delta-spark's result of OPTIMIZE: one row ``(path, metrics)``."""
    return spark.createDataFrame([(result.path, result.metrics)], METRICS_DDL)
