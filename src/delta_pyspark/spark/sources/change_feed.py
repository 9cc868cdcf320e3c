"""Reading the change data feed: ``spark.read.format("delta").option("readChangeFeed",
"true")``, ``table_changes(...)`` in SQL, and the micro-batches of a change feed stream.

The core lists the files holding the changes (``core/changes/change_data.py``); Spark reads them
as two native Parquet relations of the ``delta`` source over fixed file lists
(``changes_frame`` registers them, ``callback_service.DeltaTables`` opens them, their files
reach Spark as file statuses): the
``cdc`` files, whose rows carry ``_change_type``, and the added/removed data files. The
literal columns (``_change_type`` of data files, ``_commit_version``, ``_commit_timestamp``)
are partition values of those relations, one set per file, so one scan covers every
version; rows a file's deletion vector (or a vector difference) leaves out are dropped by
the helper's Parquet reader, as in any read.
"""

from __future__ import annotations

import secrets
import threading
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

import pyarrow as pa

from delta_pyspark.core.changes.change_data import (
    CDF_COLUMNS,
    CHANGE_TYPE,
    COMMIT_TIMESTAMP,
    COMMIT_VERSION,
    ChangeFile,
    change_files,
    resolve_range,
)
from delta_pyspark.core.protocol.column_mapping import column_mapping_mode, to_physical_schema
from delta_pyspark.core.protocol.schema import LONG, STRING, TIMESTAMP, StructField, StructType
from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.core.snapshot.snapshot import Snapshot
from delta_pyspark.core.storage.log_store import log_store_for
from delta_pyspark.spark.jvm.bridge import read_through_jvm

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

# The option naming a registered list of change files (``callback_service.DeltaTables``).
CHANGES_OPTION = "__delta_change_files"
# The extra columns: partition values of the relations (``_change_type`` of data files).
EXTRA_FIELDS = (
    StructField(CHANGE_TYPE, STRING, True),
    StructField(COMMIT_VERSION, LONG, True),
    StructField(COMMIT_TIMESTAMP, TIMESTAMP, True),
)


_PENDING_LOCK = threading.Lock()
# token -> change files waiting for the ``delta`` source to open them as a relation
_PENDING: dict[str, tuple[Snapshot, pa.Table, bool]] = {}


def take_registered(token: str) -> tuple[Snapshot, pa.Table, bool]:
    """The change files ``changes_frame`` registered under ``token`` (once): their table's
    snapshot, their listing, and whether their rows carry ``_change_type``."""
    with _PENDING_LOCK:
        return _PENDING.pop(token)


def read_change_feed(
    spark: SparkSession, path: str, options: dict[str, str], time_zone: str
) -> DataFrame:
    """The changes of the versions ``options`` name (see ``change_data.resolve_range``): the
    table's columns (as of the last version read), then ``_change_type``,
    ``_commit_version`` and ``_commit_timestamp``."""
    log = DeltaLog.for_table(path)
    versions = resolve_range(log, options, ZoneInfo(time_zone))
    files = change_files(log, versions)
    snapshot = log.snapshot(max(versions.end, versions.start - 1))
    return changes_frame(spark, snapshot, files)


def changes_frame(spark: SparkSession, snapshot: Snapshot, files: list[ChangeFile]) -> DataFrame:
    """The rows of ``files`` as changes of ``snapshot``'s table."""
    from delta_pyspark.spark.types import to_spark_type

    columns = [f"`{f.name}`" for f in snapshot.schema.fields] + list(CDF_COLUMNS)
    frames = []
    for in_files in (True, False):
        chosen = [f for f in files if (f.change_type is None) == in_files]
        if chosen:
            table = change_files_table(snapshot, chosen)
            token = secrets.token_hex(8)
            with _PENDING_LOCK:
                _PENDING[token] = (snapshot, table, in_files)
            options = {CHANGES_OPTION: token}
            frames.append(
                read_through_jvm(spark, "delta", snapshot.table_root, options).select(*columns)
            )
    if not frames:
        schema = StructType((*snapshot.schema.fields, *EXTRA_FIELDS))
        return spark.createDataFrame([], to_spark_type(schema))
    df = frames[0]
    for other in frames[1:]:
        df = df.unionByName(other)
    return df


def change_files_table(snapshot: Snapshot, files: list[ChangeFile]) -> pa.Table:
    """``files`` in the layout a fixed relation lists (``callback_service``): partition values hold
    the extra columns' values too, ``deletedRows`` the rows to leave out (serialized)."""
    store_root = snapshot.table_root
    store = log_store_for(store_root)
    rows = []
    for f in files:
        values: dict[str, str | None] = dict(f.partition_values)
        if f.change_type is not None:
            values[CHANGE_TYPE] = f.change_type
        values[COMMIT_VERSION] = str(f.version)
        values[COMMIT_TIMESTAMP] = _timestamp_text(f.timestamp)
        dropped = f.dropped_rows(store_root, store)
        rows.append(
            {
                "path": f.path,
                "size": f.size,
                "modificationTime": f.modification_time,
                "partitionValues": list(values.items()),
                "deletedRows": dropped.serialize() if dropped else None,
            }
        )
    schema = pa.schema(
        [
            ("path", pa.string()),
            ("size", pa.int64()),
            ("modificationTime", pa.int64()),
            ("partitionValues", pa.map_(pa.string(), pa.string())),
            ("deletedRows", pa.binary()),
        ]
    )
    return pa.Table.from_pylist(rows, schema=schema)


def _timestamp_text(ms: int) -> str:
    """A timestamp partition value Spark casts exactly, whatever the session's zone."""
    text = datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S.%f")
    return text + "Z"


def relation_schemas(
    snapshot: Snapshot, in_files: bool
) -> tuple[StructType, StructType, dict[str, Any] | None]:
    """A change files relation's data schema (the table's, and ``_change_type`` when the
    files hold it), partition schema (the table's partition columns and the extra ones)
    and, under column mapping, the physical data schema as a JSON object (else None)."""
    schema = snapshot.schema
    data = StructType((*schema.fields, EXTRA_FIELDS[0])) if in_files else schema
    parts = (*(schema.field(c) for c in snapshot.partition_columns), *extra_fields(in_files))
    mode = column_mapping_mode(snapshot.configuration)
    physical = None
    if mode != "none":
        mapped = to_physical_schema(schema, mode)
        physical = StructType(mapped.fields + data.fields[len(schema.fields) :]).to_json()
    return data, StructType(parts), physical


def extra_fields(in_files: bool) -> tuple[StructField, ...]:
    """The extra partition columns of a relation over cdc files (``in_files``) or data files."""
    return EXTRA_FIELDS[1:] if in_files else EXTRA_FIELDS
