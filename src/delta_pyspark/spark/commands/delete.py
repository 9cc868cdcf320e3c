"""DELETE: remove the rows matching a condition in one atomic commit.

A condition on partition columns only removes whole files without reading them.
Otherwise partition values and stats skip files first, then a scan finds the
matching rows: with deletion vectors enabled they are marked deleted in place,
else the files holding them are rewritten without them.
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

from delta_pyspark.core.changes.change_data import DELETE
from delta_pyspark.core.protocol.actions import remove_actions
from delta_pyspark.core.protocol.schema_arrow import to_arrow_schema
from delta_pyspark.core.skipping.data_skipping import (
    partition_filter_mask,
    split_partition_predicate,
)
from delta_pyspark.core.skipping.file_pruning import prune_files
from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.core.transaction.optimistic_transaction import Transaction
from delta_pyspark.core.transaction.row_deletion import deletion_vectors_enabled, dv_metrics
from delta_pyspark.spark.commands.auto_compact import commit_and_compact
from delta_pyspark.spark.commands.change_data import (
    records_changes,
    with_change_type,
    write_changes,
)
from delta_pyspark.spark.commands.conditions import as_column, condition_sql, table_predicate
from delta_pyspark.spark.commands.rewrite import (
    Rewrite,
    elapsed_ms,
    live_rows,
    matched_rows,
    rewrite_files,
    touched_files,
)
from delta_pyspark.spark.conf import session_time_zone, user_metadata
from delta_pyspark.spark.files.scan import read_files
from delta_pyspark.spark.jvm.bridge import internal_plans

if TYPE_CHECKING:
    from pyspark.sql import Column, SparkSession


@internal_plans()
def execute_delete(
    spark: SparkSession, log: DeltaLog, condition: str | Column | None
) -> dict[str, Any]:
    """Delete rows matching ``condition`` (all rows when None); returns the commit's metrics."""
    from pyspark.sql import functions as F

    start = time.monotonic()
    snapshot = log.snapshot()
    txn = Transaction(log, snapshot)
    txn.check_writable()
    txn.check_data_removable()
    sql = condition_sql(condition)
    files = snapshot.files
    if condition is None:
        txn.read_whole_table()
        metadata_only = True
    else:
        expr = table_predicate(spark, snapshot, condition)
        txn.read_predicate(expr, session_time_zone(spark))
        _, data_part = split_partition_predicate(expr, snapshot.partition_columns)
        metadata_only = data_part is None
        if metadata_only:
            mask = partition_filter_mask(
                expr,
                files,
                to_arrow_schema(snapshot.schema),
                snapshot.partition_columns,
                time_zone=session_time_zone(spark),
            )
            files = files.filter(mask)
        else:
            files = prune_files(snapshot, expr, session_time_zone(spark))
    txn.read_files(files)
    params = {"predicate": json.dumps([sql] if sql else [])}
    # ``condition`` is None only when ``metadata_only``
    if not metadata_only and deletion_vectors_enabled(snapshot):
        assert condition is not None
        # rows a vector already deletes are matched too: mark_rows_deleted drops them,
        # and the scan need not test rows against the old vectors
        touched, rows = matched_rows(
            spark, snapshot, files, as_column(condition), keep_deleted=True
        )
        scan_ms = elapsed_ms(start)
        deletes = txn.delete_rows(touched, rows)
        removed = [d.remove for d in deletes if d.add is None]
        metrics: dict[str, Any] = {
            "numCopiedRows": 0,
            "numDeletedRows": sum(len(d.rows) for d in deletes),
        } | dv_metrics(deletes)
        metrics |= Rewrite(removed, [], 0).metrics(start, scan_ms)
        if deletes:
            commit_and_compact(spark, txn, "DELETE", params, metrics, user_metadata(spark))
        return metrics
    if metadata_only:
        scan_ms = elapsed_ms(start)
        rewrite = Rewrite(remove_actions(files), [], 0)
        deleted = live_rows(files)
    else:
        assert condition is not None
        cond = as_column(condition)
        files, deleted = touched_files(spark, snapshot, files, cond)
        scan_ms = elapsed_ms(start)
        rewrite = rewrite_files(
            spark, snapshot, files, lambda df: df.where(~F.coalesce(cond, F.lit(False)))
        )
    metrics = {"numCopiedRows": rewrite.rows_written}
    if deleted is not None:  # files without stats: unknown without reading them
        metrics["numDeletedRows"] = deleted
    metrics |= rewrite.metrics(start, scan_ms)
    # delta-spark records these on every DELETE (rewritten files drop their vectors)
    metrics |= {
        "numDeletionVectorsAdded": 0,
        "numDeletionVectorsRemoved": sum(1 for r in rewrite.removes if r.get("deletionVector")),
        "numDeletionVectorsUpdated": 0,
    }
    if not metadata_only and rewrite.removes and records_changes(txn):
        gone = read_files(spark, snapshot, files).where(F.coalesce(cond, F.lit(False)))
        metrics["numAddedChangeFiles"] = write_changes(
            txn, snapshot, with_change_type(gone, DELETE)
        )
    if rewrite.removes or rewrite.adds:
        txn.remove_files(rewrite.removes)
        txn.add_files(rewrite.adds)
        commit_and_compact(spark, txn, "DELETE", params, metrics, user_metadata(spark))
    return metrics
