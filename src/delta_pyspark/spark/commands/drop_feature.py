"""DROP FEATURE's data rewrites, done with Spark: purge the files with deletion vectors,
rewrite the files holding a widened column in its narrower type (delta-spark's REORG ...
APPLY (PURGE) and REWRITE_TYPE_WIDENING), and rewrite all files with logical column names
(its RemoveColumnMappingCommand); ``core/commands/drop_feature.py`` runs the rest."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa

from delta_pyspark.core.commands.drop_feature import DataRewrites, drop_feature
from delta_pyspark.core.commands.feature_removal import without_column_mapping
from delta_pyspark.core.log.table_paths import data_file_path
from delta_pyspark.core.protocol.actions import remove_actions
from delta_pyspark.core.protocol.column_mapping import column_mapping_mode, physical_name
from delta_pyspark.core.protocol.schema import StructType, parse_schema_string
from delta_pyspark.core.protocol.schema_arrow import to_arrow_type
from delta_pyspark.core.protocol.type_widening import has_type_changes
from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.core.snapshot.snapshot import Snapshot
from delta_pyspark.core.storage.log_store import log_store_for
from delta_pyspark.core.transaction.optimistic_transaction import Transaction
from delta_pyspark.spark.commands.optimize import OptimizeSpec, run_optimize
from delta_pyspark.spark.conf import FAST_DROP_FEATURE_CONF
from delta_pyspark.spark.files.scan import read_files
from delta_pyspark.spark.files.write import write_files

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def drop_table_feature(
    spark: SparkSession, log: DeltaLog, name: str, truncate_history: bool
) -> None:
    """DeltaTable.dropFeatureSupport / ALTER TABLE ... DROP FEATURE."""
    fast = str(spark.conf.get(FAST_DROP_FEATURE_CONF, "true")).strip().lower() == "true"
    rewrites = DataRewrites(
        purge=lambda target: _reorg(spark, target, OptimizeSpec(purge=True)),
        narrow_types=lambda target: _reorg(
            spark, target, OptimizeSpec(purge=True, rewrite=narrower_files)
        ),
        logical_names=lambda target: _logical_names(spark, target),
    )
    drop_feature(log, name, truncate_history, fast, rewrites)


def _reorg(spark: SparkSession, log: DeltaLog, spec: OptimizeSpec) -> None:
    run_optimize(spark, log, spec)


def _logical_names(spark: SparkSession, log: DeltaLog) -> None:
    """Rewrite every file with the logical column names, in the commit whose metadata turns
    column mapping off (delta-spark's RemoveColumnMappingCommand)."""
    snapshot = log.snapshot()
    metadata = without_column_mapping(snapshot.metadata)
    schema = parse_schema_string(metadata.schema_string)
    files = snapshot.files
    adds = write_files(
        read_files(spark, snapshot, files),
        snapshot.table_root,
        schema,
        snapshot.partition_columns,
        metadata.configuration,
        data_change=False,
    )
    txn = Transaction(log, snapshot)
    txn.read_whole_table()
    txn.update_metadata(metadata)
    txn.remove_files(remove_actions(files, data_change=False))
    txn.add_files(adds)
    txn.commit("REMOVE COLUMN MAPPING", {"featureName": "columnMapping"})


def narrower_files(snapshot: Snapshot, files: pa.Table) -> pa.BooleanArray:
    """Which files hold a widened column in another type than the table's (their footers
    say). Only top-level columns are compared; a change nested in a column rewrites every
    file holding that column."""
    mode = column_mapping_mode(snapshot.configuration)
    widened = [f for f in snapshot.schema.fields if has_type_changes(StructType((f,)))]
    expected = {physical_name(f, mode): to_arrow_type(f.type) for f in widened}
    out = []
    store = log_store_for(snapshot.table_root)
    for path in files.column("path").to_pylist():
        footer = store.read_footer(data_file_path(snapshot.table_root, path))
        schema = footer.schema.to_arrow_schema()
        out.append(
            any(
                name in schema.names and schema.field(name).type != arrow_type
                for name, arrow_type in expected.items()
            )
        )
    return pa.array(out, pa.bool_())
