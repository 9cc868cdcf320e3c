"""Writing change data: the ``_change_data/`` files and ``cdc`` actions of DML on a table
with ``delta.enableChangeDataFeed = true`` (PROTOCOL.md "Change Data Files").

DELETE, UPDATE and MERGE that rewrite rows hand the changed rows here (the table's columns
plus ``_change_type``); Spark's Parquet writer writes them like data files, partitioned as
the table is, into ``_change_data/``, and the transaction commits their ``cdc`` actions
with the data, as does a ``replaceWhere`` overwrite that rewrites files. Commits that only
add or only remove whole files need none: readers take their rows as inserts and deletes.
A DELETE by deletion vectors writes none either, as delta-spark's does: readers take the
rows the new vectors mark as deleted.

The change rows are computed by their own Spark job: nondeterministic expressions in an
UPDATE or MERGE may then give the change data other values than the data files.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from delta_pyspark.core.changes.change_data import (
    CHANGE_DATA_DIR,
    CHANGE_TYPE,
    DELETE,
    INSERT,
    cdc_actions,
    cdf_enabled,
)
from delta_pyspark.core.protocol.actions import AddFile
from delta_pyspark.core.protocol.column_mapping import PHYSICAL_NAME_KEY, column_mapping_mode
from delta_pyspark.core.protocol.schema import STRING, StructField, StructType
from delta_pyspark.core.snapshot.snapshot import Snapshot
from delta_pyspark.core.transaction.optimistic_transaction import Transaction
from delta_pyspark.spark.files.write import write_files

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession


def records_changes(txn: Transaction) -> bool:
    """Whether the transaction's table records change data."""
    return cdf_enabled(txn.metadata.configuration)


def with_change_type(df: DataFrame, change_type: str | Column) -> DataFrame:
    """``df`` (the table's columns) with a ``_change_type`` column."""
    from pyspark.sql import functions as F

    value = F.lit(change_type) if isinstance(change_type, str) else change_type
    return df.select("*", value.alias(CHANGE_TYPE))


def write_changes(
    txn: Transaction, snapshot: Snapshot, changes: DataFrame, schema: StructType | None = None
) -> int:
    """Write ``changes`` (``schema``'s columns, then ``_change_type``) as change data files
    and stage their ``cdc`` actions in ``txn``; returns how many files were written."""
    schema = schema or snapshot.schema
    metadata = {PHYSICAL_NAME_KEY: CHANGE_TYPE} if _mapped(snapshot) else {}
    field = StructField(CHANGE_TYPE, STRING, True, metadata)
    written = write_files(
        changes,
        f"{snapshot.table_root.rstrip('/')}/{CHANGE_DATA_DIR}",
        StructType((*schema.fields, field)),
        snapshot.partition_columns,
        snapshot.configuration,
        optimize_write=False,
    )
    txn.add_cdc_files(cdc_actions(written))
    return len(written)


def replaced_changes(
    spark: SparkSession,
    txn: Transaction,
    snapshot: Snapshot,
    replaced: DataFrame,
    adds: list[AddFile],
) -> None:
    """The change data of a ``replaceWhere`` overwrite that rewrote files: the ``replaced``
    rows as deletes and the written rows (read back from the new files ``adds``) as inserts."""
    from delta_pyspark.spark.files.scan import adds_table, read_files

    written = read_files(spark, snapshot, adds_table(adds, snapshot))
    changes = with_change_type(replaced, DELETE).unionByName(with_change_type(written, INSERT))
    write_changes(txn, snapshot, changes)


def _mapped(snapshot: Snapshot) -> bool:
    return column_mapping_mode(snapshot.configuration) != "none"
