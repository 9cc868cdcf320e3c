"""Copy-on-write: replace files by copies without the rows a predicate matches.

Shared by DELETE, ``replaceWhere`` on data columns and anything else that must
drop rows from existing files; files the predicate cannot touch are never read.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pyarrow as pa

from delta_pyspark.core.actions import remove_actions
from delta_pyspark.core.snapshot import Snapshot
from delta_pyspark.spark.scan import read_files
from delta_pyspark.spark.write import write_files

if TYPE_CHECKING:
    from pyspark.sql import Column, SparkSession


def rewrite_without(
    spark: SparkSession, snapshot: Snapshot, files: pa.Table, condition: Column
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], int]:
    """Remove ``files`` and add copies holding only rows where ``condition`` is not true.

    Returns ``(removes, adds, rows_kept)``; ``rows_kept`` counts copied rows.
    """
    from pyspark.sql import functions as F

    if files.num_rows == 0:
        return [], [], 0
    kept = read_files(spark, snapshot, files).where(~F.coalesce(condition, F.lit(False)))
    adds = write_files(
        kept,
        snapshot.table_root,
        snapshot.schema,
        snapshot.partition_columns,
        snapshot.configuration,
    )
    rows = sum(_num_records(a) for a in adds)
    return remove_actions(files), adds, rows


def _num_records(add: dict[str, Any]) -> int:
    import json

    return int(json.loads(add["stats"]).get("numRecords", 0)) if add.get("stats") else 0
