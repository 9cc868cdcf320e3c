"""OPTIMIZE of a clustered table (liquid clustering): which files, and how they are written.

delta-spark clusters with a Hilbert curve; this package reuses the Z-order (Morton) curve of
``spark/commands/zorder.py`` over the clustering columns: rows are sorted by the interleaved bits of
their range ids on each column and cut into files of about ``maxFileSize``, so every file
covers a compact box of the clustering columns and point filters skip most files.

Incremental by default: only files without a ``clusteringProvider`` (written since the last
OPTIMIZE, or before the table was clustered) are rewritten; files already clustered stay,
whatever columns they were clustered by (``OPTIMIZE t FULL`` rewrites every file, e.g. after
``ALTER TABLE t CLUSTER BY``). The new files carry ``clusteringProvider: "liquid"`` and the
run's ``ZCUBE_ID``/``ZCUBE_ZORDER_BY`` tags, as delta-spark's ``ClusteringStrategy`` writes.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

from delta_pyspark.core.commands.clustering import (
    PROVIDER,
    ClusteringColumn,
    file_tags,
    files_to_cluster,
    is_clustered,
    snapshot_columns,
)
from delta_pyspark.core.commands.optimize_plan import Bin, pack_bins
from delta_pyspark.core.protocol.actions import AddFile
from delta_pyspark.core.snapshot.snapshot import Snapshot
from delta_pyspark.exceptions import DeltaAnalysisException, DeltaUnsupportedOperationException

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def optimize_columns(
    snapshot: Snapshot,
    predicates: Sequence[str],
    zorder_by: Sequence[str],
    full: bool,
    maintenance: bool,
) -> list[ClusteringColumn] | None:
    """The columns an OPTIMIZE clusters by (None: it compacts or Z-orders instead), after
    delta-spark's checks: no partition predicates and no ZORDER BY on a clustered table, and
    FULL only on one with clustering columns. ``maintenance``: auto compaction or REORG,
    which compact whatever the table is."""
    clustered = is_clustered(snapshot.protocol)
    if clustered and not maintenance:
        if predicates:
            raise DeltaUnsupportedOperationException(
                "[DELTA_CLUSTERING_WITH_PARTITION_PREDICATE] OPTIMIZE command for Delta table "
                "with clustering doesn't support partition predicates. Please remove the "
                f"predicates: {', '.join(predicates)}."
            )
        if zorder_by:
            raise DeltaAnalysisException(
                "[DELTA_CLUSTERING_WITH_ZORDER_BY] OPTIMIZE command for Delta table with "
                f"clustering cannot specify ZORDER BY. Please remove ZORDER BY "
                f"({', '.join(zorder_by)})."
            )
    columns = snapshot_columns(snapshot) if clustered and not maintenance else []
    if full and not columns:
        raise DeltaAnalysisException(
            "[DELTA_OPTIMIZE_FULL_NOT_SUPPORTED] OPTIMIZE FULL is only supported for clustered "
            "tables with non-empty clustering columns."
        )
    return columns or None


def plan_clustering(files: pa.Table, full: bool) -> list[Bin]:
    """One bin of the files to recluster (clustered tables have no partitions); none when
    every file is clustered already."""
    candidates = files_to_cluster(files, full)
    if not pc.any(candidates).as_py():
        return []
    keep = pa.array([True] * files.num_rows, pa.bool_())
    return pack_bins(files, candidates, keep_single=keep)


def write_clustered(
    spark: SparkSession,
    snapshot: Snapshot,
    files: pa.Table,
    bins: Sequence[Bin],
    columns: Sequence[ClusteringColumn],
    max_file_size: int,
) -> list[AddFile]:
    """Rewrite the bins' files ordered along the curve of ``columns``; their ``add`` actions,
    marked as clustered by this run."""
    from delta_pyspark.spark.commands.zorder import write_zordered

    adds = write_zordered(spark, snapshot, files, bins, [c.logical for c in columns], max_file_size)
    tags = file_tags(columns, str(uuid.uuid4()))
    for add in adds:
        add["clusteringProvider"] = PROVIDER
        add["tags"] = {**(add.get("tags") or {}), **tags}
    return adds
