"""UPDATE: change the rows matching a condition in one atomic commit.

Partition values and stats skip files first, a scan finds the files that hold
matching rows. Copy-on-write rewrites those files with the new values; with
deletion vectors the old rows are marked deleted and only their new versions
are written.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from delta_pyspark.core.changes.change_data import POSTIMAGE, PREIMAGE
from delta_pyspark.core.protocol.identity_columns import check_update
from delta_pyspark.core.skipping.file_pruning import prune_files
from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.core.transaction.optimistic_transaction import Transaction
from delta_pyspark.core.transaction.row_deletion import deletion_vectors_enabled, dv_metrics
from delta_pyspark.spark.columns.generated_columns import recompute
from delta_pyspark.spark.columns.row_tracking import preserved_columns, read_preserving
from delta_pyspark.spark.commands.auto_compact import commit_and_compact
from delta_pyspark.spark.commands.change_data import (
    records_changes,
    with_change_type,
    write_changes,
)
from delta_pyspark.spark.commands.conditions import (
    as_column,
    assigned_value,
    condition_sql,
    resolve_assignments,
    table_predicate,
)
from delta_pyspark.spark.commands.rewrite import (
    Rewrite,
    elapsed_ms,
    matched_rows,
    rewrite_files,
    touched_files,
    write_rows,
)
from delta_pyspark.spark.conf import session_time_zone, user_metadata
from delta_pyspark.spark.files.scan import read_files
from delta_pyspark.spark.jvm.bridge import internal_plans
from delta_pyspark.spark.types import to_spark_type

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

_UPDATED = "__delta_updated_row"


@internal_plans()
def execute_update(
    spark: SparkSession,
    log: DeltaLog,
    condition: str | Column | None,
    assignments: Mapping[str, str | Column],
) -> dict[str, Any]:
    """Set ``assignments`` on rows matching ``condition`` (all when None); returns metrics."""
    from pyspark.sql import functions as F

    start = time.monotonic()
    snapshot = log.snapshot()
    schema = snapshot.schema
    grouped = resolve_assignments(schema, assignments, "UPDATE")
    check_update(schema, grouped)
    txn = Transaction(log, snapshot)
    txn.check_writable()
    txn.check_data_removable()
    sql = condition_sql(condition)
    cond = F.lit(True) if condition is None else F.coalesce(as_column(condition), F.lit(False))
    if condition is None:
        txn.read_whole_table()
        files = snapshot.files
    else:
        expr = table_predicate(spark, snapshot, condition)
        txn.read_predicate(expr, session_time_zone(spark))
        files = prune_files(snapshot, expr, session_time_zone(spark))
    txn.read_files(files)
    params = {"predicate": json.dumps([sql] if sql else [])}

    def transform(df: DataFrame, carry: bool = True) -> DataFrame:
        """The rows with the new values; ``carry``: with row tracking's columns (ids kept,
        the changed rows' commit versions cleared)."""
        cols = []
        for field in schema.fields:
            current = F.col(f"`{field.name}`")
            if field.name in grouped:
                new = assigned_value(current, grouped[field.name]).cast(to_spark_type(field.type))
                current = F.when(cond, new).otherwise(current)
            cols.append(current.alias(field.name))
        # a generated column the UPDATE does not set follows its sources' new values
        unset = {f.name: [True] for f in schema.fields if f.name not in grouped}
        kept = preserved_columns(snapshot, cond) if carry else []
        updated = df.select(*cols, *kept, cond.alias(_UPDATED))
        return recompute(updated, schema, snapshot.protocol, _UPDATED, unset).drop(_UPDATED)

    def changes(touched: Any) -> int:
        """Write the updated rows' pre- and post-images when the table records changes."""
        if not touched.num_rows or not records_changes(txn):
            return 0
        before = read_files(spark, snapshot, touched).where(cond)
        images = with_change_type(before, PREIMAGE).unionByName(
            with_change_type(transform(before, carry=False), POSTIMAGE)
        )
        return write_changes(txn, snapshot, images)

    if deletion_vectors_enabled(snapshot):
        touched, rows = matched_rows(spark, snapshot, files, cond)
        scan_ms = elapsed_ms(start)
        deletes = txn.delete_rows(touched, rows)
        new_rows = read_preserving(spark, snapshot, touched).where(cond)
        adds = write_rows(transform(new_rows), snapshot)
        txn.add_files(adds)
        removed = [d.remove for d in deletes if d.add is None]
        metrics: dict[str, Any] = {
            "numUpdatedRows": sum(len(d.rows) for d in deletes),
            "numCopiedRows": 0,
        }
        metrics |= dv_metrics(deletes) | Rewrite(removed, adds, 0).metrics(start, scan_ms)
        metrics["numAddedChangeFiles"] = changes(touched)
        if deletes:
            commit_and_compact(spark, txn, "UPDATE", params, metrics, user_metadata(spark))
        return metrics
    files, updated = touched_files(spark, snapshot, files, cond)
    scan_ms = elapsed_ms(start)
    rewrite = rewrite_files(spark, snapshot, files, transform)
    metrics = {
        "numUpdatedRows": updated,
        "numCopiedRows": rewrite.rows_written - updated,
    } | rewrite.metrics(start, scan_ms)
    # delta-spark records these on every UPDATE (rewritten files drop their vectors)
    metrics |= {
        "numDeletionVectorsAdded": 0,
        "numDeletionVectorsRemoved": sum(1 for r in rewrite.removes if r.get("deletionVector")),
        "numDeletionVectorsUpdated": 0,
    }
    metrics["numAddedChangeFiles"] = changes(files)
    if rewrite.removes:
        txn.remove_files(rewrite.removes)
        txn.add_files(rewrite.adds)
        commit_and_compact(spark, txn, "UPDATE", params, metrics, user_metadata(spark))
    return metrics
