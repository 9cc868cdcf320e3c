"""Row tracking in the data plane (PROTOCOL.md "Reader/Writer Requirements for Row
Tracking"): each row's stable id and commit version, read and preserved.

A row's stable id is its materialized row id when the file holds one, else the file's
``baseRowId`` plus the row's index in the file; its stable commit version is the
materialized one, else the file's ``defaultRowCommitVersion``. Rewrites on a table with
row tracking enabled (OPTIMIZE, copy-on-write UPDATE and DELETE) read the rows through
``read_preserving``, which fills the materialized columns with those stable values, and
write the columns back: moved rows keep their ids and versions. UPDATE then clears the
version of the rows it changes (``preserved_columns``), so they take the new commit's.
Users read the same stable values as delta-spark's ``_metadata.row_id`` and
``_metadata.row_commit_version`` (the JVM helper's ``RowTrackingIds``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pyarrow as pa

from delta_pyspark.core.snapshot.snapshot import Snapshot
from delta_pyspark.core.transaction.row_tracking import is_enabled, materialized_column_names
from delta_pyspark.spark.files.scan import FILE_PATH, ROW_INDEX, file_uris, read_files

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

_BASE_ROW_ID = "__delta_base_row_id"
_DEFAULT_VERSION = "__delta_default_row_commit_version"


def preserves(snapshot: Snapshot) -> bool:
    """Whether writers must preserve row ids (row tracking enabled on the table)."""
    return is_enabled(snapshot.protocol, snapshot.metadata)


def read_preserving(
    spark: SparkSession,
    snapshot: Snapshot,
    files: pa.Table,
    with_row_ids: bool = False,
    **options: Any,
) -> DataFrame:
    """``read_files`` (same arguments); on a table with row tracking enabled, followed by
    the two materialized columns holding every row's stable id and commit version."""
    if not preserves(snapshot):
        return read_files(spark, snapshot, files, with_row_ids=with_row_ids, **options)
    from pyspark.sql import functions as F

    id_col, version_col = materialized_column_names(snapshot.metadata, snapshot.table_root)
    df = read_files(
        spark, snapshot, files, with_row_ids=True, hidden=(id_col, version_col), **options
    )
    per_file = spark.createDataFrame(
        pa.table(
            {
                FILE_PATH: pa.array(file_uris(snapshot, files), pa.string()),
                _BASE_ROW_ID: files.column("baseRowId"),
                _DEFAULT_VERSION: files.column("defaultRowCommitVersion"),
            }
        )
    )
    stable = df.join(F.broadcast(per_file), FILE_PATH).select(
        *[F.col(f"`{c}`") for c in df.columns if c not in (id_col, version_col)],
        F.coalesce(F.col(f"`{id_col}`"), F.col(_BASE_ROW_ID) + F.col(ROW_INDEX)).alias(id_col),
        F.coalesce(F.col(f"`{version_col}`"), F.col(_DEFAULT_VERSION)).alias(version_col),
    )
    order = [c for c in df.columns if c not in (FILE_PATH, ROW_INDEX)]
    return stable.select(*[f"`{c}`" for c in order], *([FILE_PATH, ROW_INDEX] * with_row_ids))


def preserved_names(snapshot: Snapshot) -> tuple[str, str] | None:
    """The materialized row id and commit version columns a rewrite of this table writes
    (None: row tracking is not enabled)."""
    if not preserves(snapshot):
        return None
    return materialized_column_names(snapshot.metadata, snapshot.table_root)


def preserved_columns(snapshot: Snapshot, changed: Column | None = None) -> list[Column]:
    """The materialized columns a rewrite carries after the table's columns ([] without
    row tracking). ``changed``: rows an UPDATE modifies, whose commit version is cleared
    so that they take the committing version (their id is kept)."""
    if not preserves(snapshot):
        return []
    from pyspark.sql import functions as F

    id_col, version_col = materialized_column_names(snapshot.metadata, snapshot.table_root)
    version = F.col(f"`{version_col}`")
    if changed is not None:
        version = F.when(changed, F.lit(None).cast("long")).otherwise(version)
    return [F.col(f"`{id_col}`"), version.alias(version_col)]
