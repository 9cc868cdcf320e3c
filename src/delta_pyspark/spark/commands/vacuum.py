"""``DeltaTable.vacuum``: session confs in, a DataFrame out; the work is in
``core/commands/vacuum.py`` (file-system I/O only, no rows involved)."""

from __future__ import annotations

from functools import reduce
from operator import and_
from typing import TYPE_CHECKING
from urllib.parse import urlparse

from delta_pyspark.core.commands.vacuum import vacuum
from delta_pyspark.core.commands.vacuum_plan import RETENTION_CHECK_CONF, TRUST_DAMAGED_LOG_CONF
from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.core.storage.commit_coordinator import check_maintenance
from delta_pyspark.exceptions import DeltaAnalysisException
from delta_pyspark.spark.conf import (
    VACUUM_LITE_CONF,
    VACUUM_PARALLEL_DELETE_CONF,
    VACUUM_PARALLELISM_CONF,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


def retention_check_enabled(spark: SparkSession) -> bool:
    return str(spark.conf.get(RETENTION_CHECK_CONF, "true")).strip().lower() != "false"


def vacuum_lite_default(spark: SparkSession) -> bool:
    return str(spark.conf.get(VACUUM_LITE_CONF, "false")).lower() == "true"


def trust_damaged_log(spark: SparkSession) -> bool:
    return str(spark.conf.get(TRUST_DAMAGED_LOG_CONF, "false")).strip().lower() == "true"


def execute_vacuum(
    spark: SparkSession,
    log: DeltaLog,
    retention_hours: float | None = None,
    dry_run: bool = False,
    lite: bool | None = None,
    inventory: DataFrame | None = None,
) -> DataFrame:
    """Run VACUUM. A dry run returns the files it would delete (column ``path``,
    their locations); a real run returns an empty DataFrame, as delta-spark's
    Python API does, and records VACUUM START/END in the table history. ``lite``: plan
    from the log's removes without listing the table (``core.commands.vacuum_lite``);
    None: as ``spark.databricks.delta.vacuum.lite.enabled`` says (default FULL).

    A damaged log (refused by the log reader, or live files missing: ``core/commands/vacuum.py``)
    raises ``CorruptLogError`` and deletes nothing; the session conf
    ``spark.databricks.delta.vacuum.trustDamagedLog=true`` skips the missing-file check.
    ``inventory``: the storage's files as a DataFrame (``VACUUM ... USING INVENTORY``), read
    instead of listing the table (``inventory_rows``).
    """
    from pyspark.sql.types import StringType, StructField, StructType

    check_maintenance(log.coordinator, log.table_root, "VACUUM")
    # Deleting is file-system I/O: threads by default, one at a time if turned off.
    parallel = str(spark.conf.get(VACUUM_PARALLEL_DELETE_CONF, "true")).lower() != "false"
    parallelism = int(str(spark.conf.get(VACUUM_PARALLELISM_CONF, "8"))) if parallel else 1
    result = vacuum(
        log,
        retention_hours,
        dry_run=dry_run,
        check_enabled=retention_check_enabled(spark),
        parallelism=parallelism,
        trust_damaged_log=trust_damaged_log(spark),
        # an inventory is a FULL vacuum's listing, whatever the session's default
        lite=lite if lite is not None else inventory is None and vacuum_lite_default(spark),
        inventory=None if inventory is None else inventory_rows(inventory, log.table_root),
    )
    if dry_run:
        schema = StructType([StructField("path", StringType(), False)])
        return spark.createDataFrame([(p,) for p in result.plan.paths], schema)
    return spark.createDataFrame([], StructType([]))


#: the columns an inventory must have, as delta-spark requires them (others are ignored)
INVENTORY_COLUMNS = (
    ("path", "string"),
    ("length", "bigint"),
    ("isDir", "boolean"),
    ("modificationTime", "bigint"),
)


def inventory_rows(inventory: DataFrame, table_root: str) -> list[tuple[str, int, bool, int]]:
    """An inventory's rows under ``table_root`` (filtered by Spark, the rest collected):
    ``path``, ``length``, ``isDir``, ``modificationTime`` (ms). An inventory without those
    columns and types is refused by delta-spark's name for it."""
    from pyspark.sql import functions as F

    found = {f.name: f.dataType.simpleString() for f in inventory.schema.fields}
    if any(found.get(name) != kind for name, kind in INVENTORY_COLUMNS):
        required = ", ".join(f"{name} {kind}" for name, kind in INVENTORY_COLUMNS)
        raise DeltaAnalysisException(
            "[DELTA_INVALID_INVENTORY_SCHEMA] The schema for the specified INVENTORY does not "
            f"contain all of the required fields. Required fields are: {required} (found: "
            f"{inventory.schema.simpleString()})"
        )
    # A loose filter (any spelling of the root: file:/, file:///, s3a:// for s3://); the
    # core keeps exactly the entries under the root.
    key = urlparse(table_root).path if "://" in table_root else table_root
    under = F.col("path").contains(key.rstrip("/") + "/")
    columns = [name for name, _ in INVENTORY_COLUMNS]
    known = [F.col(name).isNotNull() for name in columns]
    rows = inventory.where(under).where(reduce(and_, known)).select(*columns).collect()
    return [(r.path, int(r.length), bool(r.isDir), int(r.modificationTime)) for r in rows]
