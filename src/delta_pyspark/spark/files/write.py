"""Writing DataFrames into a table with Spark's native Parquet writer.

Each write gets its own staging directory (Spark's output committer shares a
``_temporary`` folder per output path, so concurrent jobs must not share one).
After the job, files move into the table's Hive-style partition directories
under their Spark-unique names, per-file stats come from the Parquet footers,
and the add actions are committed through the optimistic transaction. Until
that commit nothing is visible; on failure the files stay unreferenced.
"""

from __future__ import annotations

import time
import uuid
from typing import TYPE_CHECKING, Any

from delta_pyspark.core.protocol.actions import AddFile
from delta_pyspark.core.protocol.column_mapping import (
    column_mapping_mode,
    physical_name,
)
from delta_pyspark.core.protocol.partition_values import (
    escape_path_name,
    parse_hive_partition_path,
)
from delta_pyspark.core.protocol.schema import BINARY, StructType
from delta_pyspark.core.protocol.schema_arrow import to_arrow_schema
from delta_pyspark.core.stats.collection import collect_parquet_stats
from delta_pyspark.core.stats.indexed_columns import stats_settings
from delta_pyspark.core.storage.locations import (
    is_local,
    join,
    normalise,
    parent,
    relative_to,
)
from delta_pyspark.core.storage.log_store import log_store_for
from delta_pyspark.core.uniform.compat import ICEBERG_COMPAT_TAG, compat_v2_enabled
from delta_pyspark.spark.files.paths import to_log_path
from delta_pyspark.spark.files.write_checks import violation_from

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from delta_pyspark.core.snapshot.snapshot import Snapshot

STAGING_DIR = "_delta_staging"
#: the name of a partition column's copy that Spark partitions by when the files keep the
#: column too (IcebergCompatV2)
_PARTITION_COPY = "__delta_partition_"


#: Hadoop options of a write to the local disk: its raw file system, which writes no ``.crc``
#: file beside each one. Spark's default local file system computes a CRC of every byte it
#: writes (6% of a 10M-row write, measured); the checksums were discarded with the staging
#: directory anyway, a table's files carry none. Uncached, so the session's shared file
#: system instance keeps its checksums for every other write.
_RAW_LOCAL_WRITES = {
    "fs.file.impl": "org.apache.hadoop.fs.RawLocalFileSystem",
    "fs.file.impl.disable.cache": "true",
}

#: Spark's Parquet writer writes this field metadata as the Parquet field id
_SPARK_FIELD_ID = "parquet.field.id"


def _field_id_metadata(metadata: Any) -> dict[str, Any]:
    """A column's Parquet field id under id column mapping, from its column mapping id."""
    field_id = metadata.get("delta.columnMapping.id")
    return {_SPARK_FIELD_ID: field_id} if isinstance(field_id, int) else {}


def _parquet_field_ids(spark_type: Any) -> Any:
    """``spark_type`` with each nested field's column mapping id also as its Parquet field id.

    Under ``id`` column mapping readers (delta-spark among them) find a file's columns by
    Parquet field id (PROTOCOL.md "Reader Requirements for Column Mapping"), so the data
    files must carry them, nested fields included.
    """
    from pyspark.sql.types import ArrayType, MapType
    from pyspark.sql.types import StructField as SparkField
    from pyspark.sql.types import StructType as SparkStruct

    if isinstance(spark_type, SparkStruct):
        return SparkStruct(
            [
                SparkField(
                    f.name,
                    _parquet_field_ids(f.dataType),
                    f.nullable,
                    {**f.metadata, **_field_id_metadata(f.metadata)},
                )
                for f in spark_type.fields
            ]
        )
    if isinstance(spark_type, ArrayType):
        return ArrayType(_parquet_field_ids(spark_type.elementType), spark_type.containsNull)
    if isinstance(spark_type, MapType):
        return MapType(
            _parquet_field_ids(spark_type.keyType),
            _parquet_field_ids(spark_type.valueType),
            spark_type.valueContainsNull,
        )
    return spark_type


def _empty_binary_partitions_to_null(
    df: DataFrame, schema: StructType, partition_columns: list[str], mode: str
) -> DataFrame:
    """Empty binary partition values become null, as Spark does for strings: Delta spells
    both as null, and Spark's writer fails when both reach one task (same directory)."""
    from pyspark.sql import functions as F

    for c in partition_columns:
        if schema.field(c).type == BINARY:
            name = physical_name(schema.field(c), mode)
            col = F.col(f"`{name}`")
            df = df.withColumn(name, F.when(F.length(col) > 0, col))
    return df


def write_files(
    df: DataFrame,
    table_root: str,
    schema: StructType,
    partition_columns: list[str],
    configuration: Any,
    max_records_per_file: int | None = None,
    data_change: bool = True,
    optimize_write: bool | None = None,
) -> list[AddFile]:
    """Write ``df`` (already in table column order, logical names; any columns after the
    table's are written unrenamed) as data files.

    Returns their ``add`` actions (paths relative to the root, URI-encoded).
    ``optimize_write``: shuffle into few files per partition first (see
    ``optimized_write``); None decides from the session conf and table property.
    """
    from contextlib import AbstractContextManager, nullcontext

    from delta_pyspark.spark.files import optimized_write as ow

    mode = column_mapping_mode(configuration)
    renamed = df
    if mode != "none":
        from delta_pyspark.core.protocol.column_mapping import to_physical_schema
        from delta_pyspark.spark.types import relaxed, to_spark_type

        # Nested fields are renamed too: a cast between structs matches fields by position
        # (to nullable ones: Spark refuses casts to NOT NULL fields; the write's constraint
        # check has enforced them). Columns after the schema's (row tracking's materialized
        # columns) are written as they are.
        physical = to_physical_schema(schema, mode)
        # IcebergCompatV2 needs field ids in name mode too: Iceberg readers match by id
        with_ids = mode == "id" or compat_v2_enabled(configuration)
        ids = _parquet_field_ids if with_ids else (lambda t: t)
        renamed = df.select(
            *[
                df[f"`{f.name}`"]
                .cast(ids(relaxed(to_spark_type(pf.type))))
                .alias(pf.name, metadata=_field_id_metadata(pf.metadata) if with_ids else {})
                for f, pf in zip(schema.fields, physical.fields, strict=True)
            ],
            *[df[f"`{c}`"] for c in df.columns[len(schema.fields) :]],
        )
    part_physical = [physical_name(schema.field(c), mode) for c in partition_columns]
    renamed = _empty_binary_partitions_to_null(renamed, schema, partition_columns, mode)
    directories = part_physical
    if compat_v2_enabled(configuration) and part_physical:
        # IcebergCompatV2 keeps partition values in the files too: Spark's writer drops the
        # columns it partitions by, so it partitions by copies, whose directories
        # ``_adopt_files`` names after the columns again
        from pyspark.sql import functions as F

        directories = [f"{_PARTITION_COPY}{i}" for i in range(len(part_physical))]
        copies = [F.col(f"`{p}`").alias(d) for p, d in zip(part_physical, directories, strict=True)]
        renamed = renamed.select("*", *copies)
    if optimize_write is None:
        optimize_write = ow.optimize_write_enabled(df.sparkSession, configuration)
    job: AbstractContextManager[None] = nullcontext()
    if optimize_write:
        renamed = ow.rebalanced(renamed, directories)
        job = ow.bin_size_for_job(df.sparkSession, ow.bin_size(df.sparkSession))
    staging = f"{table_root.rstrip('/')}/{STAGING_DIR}/{uuid.uuid4()}"
    writer = renamed.write.mode("errorifexists")
    if directories:
        writer = writer.partitionBy(*directories)
    if max_records_per_file:
        writer = writer.option("maxRecordsPerFile", int(max_records_per_file))
    if is_local(table_root):
        writer = writer.options(**_RAW_LOCAL_WRITES)
    try:
        with job:
            writer.parquet(staging)
    except Exception as e:
        _remove_staging(staging)
        violation = violation_from(e)
        if violation is not None:
            raise violation from None
        raise
    try:
        return _adopt_files(
            staging,
            table_root,
            schema,
            dict(zip(directories, part_physical, strict=True)),
            configuration,
            data_change,
            mode,
        )
    finally:
        _remove_staging(staging)


def write_compacted(df: DataFrame, snapshot: Snapshot) -> list[AddFile]:
    """Write ``df`` (rows of ``snapshot``'s files, rearranged) as OPTIMIZE does: files the
    caller has already sized, no data change (``dataChange=false``)."""
    return write_files(
        df,
        snapshot.table_root,
        snapshot.schema,
        snapshot.partition_columns,
        snapshot.configuration,
        data_change=False,
        optimize_write=False,
    )


def _remove_staging(staging: str) -> None:
    """Delete this write's staging directory, and ``_delta_staging`` itself once empty:
    a concurrent writer's staging directory keeps it alive, and losing that race is
    harmless."""
    store = log_store_for(staging)
    store.delete_tree(staging)
    store.remove_empty_dir(parent(staging))


def _adopt_files(
    staging: str,
    table_root: str,
    schema: StructType,
    directories: dict[str, str],
    configuration: Any,
    data_change: bool,
    mode: str,
) -> list[AddFile]:
    """Move the staged files into the table; their adds. ``directories``: the partition
    directory names Spark wrote, to the partition columns' physical names (copies of the
    columns when the files keep them too, else the columns)."""
    from delta_pyspark.core.protocol.column_mapping import to_physical_schema

    physical = to_physical_schema(schema, mode)
    part_physical = list(directories.values())
    materialized = any(d != p for d, p in directories.items())
    data_fields = StructType(
        tuple(f for f in physical.fields if materialized or f.name not in part_physical)
    )
    tags = {ICEBERG_COMPAT_TAG: "2"} if compat_v2_enabled(configuration) else None
    arrow_schema = to_arrow_schema(data_fields)
    num_indexed, stats_cols = stats_settings(configuration, schema)
    adds: list[AddFile] = []
    now = int(time.time() * 1000)
    store = log_store_for(table_root)
    staging = normalise(staging)
    staged = sorted(store.walk_files(staging), key=lambda e: e.path)
    for entry in staged:
        if not entry.name.endswith(".parquet") or entry.name.startswith((".", "_")):
            continue
        relative = _renamed_directories(relative_to(entry.path, staging), directories)
        dest = join(table_root, relative)
        store.move(entry.path, dest)  # Spark's file names carry the job's UUID: no clash
        meta = store.read_footer(dest)
        values = parse_hive_partition_path(relative) if part_physical else {}
        add: AddFile = {
            "path": to_log_path(relative),
            "partitionValues": {c: values.get(c) for c in part_physical},
            "size": entry.size,
            "modificationTime": now,
            "dataChange": data_change,
            "stats": collect_parquet_stats(meta, arrow_schema, num_indexed, stats_cols),
        }
        if tags:
            add["tags"] = dict(tags)
        adds.append(add)
    return adds


def _renamed_directories(relative: str, directories: dict[str, str]) -> str:
    """``relative`` with each ``<copy>=value`` directory named after its column."""
    segments = relative.split("/")
    for i, segment in enumerate(segments[:-1]):
        name, eq, value = segment.partition("=")
        if eq and name in directories:
            segments[i] = f"{escape_path_name(directories[name])}={value}"
    return "/".join(segments)
