"""Reading a snapshot as a native Spark Parquet scan.

Spark reads the snapshot's files with its own Parquet reader (vectorised, with
row-group filter pushdown). Partition columns come from the directory layout
when every file sits under the Hive-style directory that spells its partition
values (what Spark and delta-spark write): then Spark prunes partitions itself
from filters the user adds later. Other layouts (column-mapping prefixes,
foreign writers) get one branch per partition with literal columns, which
Spark's optimizer also prunes. Files with deletion vectors are read through
the JVM helper's Parquet format, whose reader drops the rows the vectors mark.
"""

from __future__ import annotations

import datetime as dt
import heapq
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyroaring import BitMap64

from delta_pyspark.core.log.table_paths import data_file_path
from delta_pyspark.core.protocol.actions import file_actions_to_arrow
from delta_pyspark.core.protocol.column_mapping import (
    column_mapping_mode,
    physical_name,
    to_physical_schema,
)
from delta_pyspark.core.protocol.deletion_vectors import (
    DeletionVectorDescriptor,
    read_deletion_vector,
    to_bitmap64,
)
from delta_pyspark.core.protocol.partition_values import hive_partition_path, parse_partition_value
from delta_pyspark.core.protocol.schema import BINARY, DOUBLE, FLOAT, LONG, StructField, StructType
from delta_pyspark.core.protocol.type_widening import needs_row_reader
from delta_pyspark.core.snapshot.snapshot import Snapshot
from delta_pyspark.core.storage.log_store import log_store_for
from delta_pyspark.exceptions import DeltaError
from delta_pyspark.spark.conf import VECTORIZED_READER_CONF
from delta_pyspark.spark.files.paths import spark_file_uri
from delta_pyspark.spark.jvm.helpers import (
    KeyProbe,
    parquet_scan,
    split_settings,
    with_max_split_bytes,
    with_scan_conf,
    without_deleted_rows,
)
from delta_pyspark.spark.types import to_spark_type

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

ROW_INDEX = "__delta_row_index"
# ``_even_tasks`` simulates Spark's packing of a scan's files up to this many of them.
_MAX_SIMULATED_FILES = 10_000
FILE_PATH = "__delta_file_path"
# Spark's Parquet reader fills a read field of this name with the row's index in its file
_SPARK_ROW_INDEX = "_tmp_metadata_row_index"


class DeltaFileNotFoundError(DeltaError, FileNotFoundError):
    """A file the snapshot references is missing from storage (e.g. vacuumed)."""


@dataclass(frozen=True)
class ScanReport:
    """How many files a scan kept after partition pruning and stats-based skipping."""

    version: int
    files_total: int
    files_scanned: int

    @property
    def files_skipped(self) -> int:
        return self.files_total - self.files_scanned


# Float spellings Spark's partition discovery parses (Java's); delta-rs writes "inf".
_JAVA_FLOAT = re.compile(r"^[+-]?(NaN|Infinity|([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?)$")


def _hive_layout(files: pa.Table, parts: list[str], floats: Sequence[str] = ()) -> bool:
    """Whether every file lives under the Hive directory spelling its partition values
    (and Spark can parse the values of the float/double partition columns ``floats``)."""
    if not parts:
        return True
    from urllib.parse import unquote

    for path, pv in zip(
        files.column("path").to_pylist(), files.column("partitionValues").to_pylist(), strict=True
    ):
        values = dict(pv or [])
        if any(values.get(c) and not _JAVA_FLOAT.match(values[c]) for c in floats):
            return False
        prefix = hive_partition_path({c: values.get(c) for c in parts}, parts)
        if not unquote(path).startswith(prefix):
            return False
    return True


def adds_table(adds: Sequence[Mapping[str, Any]], snapshot: Snapshot) -> pa.Table:
    """Add actions (a commit's, or files just written) as a file list ``read_files`` reads,
    in ``snapshot``'s layout."""
    layout = snapshot.files.schema
    fields = ("path", "size", "modificationTime", "partitionValues", "deletionVector")
    return file_actions_to_arrow(list(adds), pa.schema([layout.field(f) for f in fields]))


def read_files(
    spark: SparkSession,
    snapshot: Snapshot,
    files: pa.Table,
    with_row_ids: bool = False,
    keep_deleted: bool = False,
    drop_rows: Sequence[np.ndarray] | None = None,
    hidden: Sequence[str] = (),
    probe: KeyProbe | None = None,
) -> DataFrame:
    """A DataFrame of the rows of ``files`` (a subset of the snapshot's file list).

    ``with_row_ids`` adds ``FILE_PATH`` (Spark's file URI, see ``file_uris``) and
    ``ROW_INDEX`` (the row's position in its file): DML uses them to find the files
    that hold affected rows and to tell target rows apart. ``keep_deleted`` ignores
    deletion vectors (for DELETE, where marking a deleted row again changes nothing).
    ``drop_rows`` (one array per row of ``files``) leaves out those row positions too,
    as if they were deleted: a copy-on-write rewrite reads the rows it keeps unchanged
    this way instead of joining every row with the changes. ``hidden``: long columns the
    files may hold outside the table's schema (row tracking's materialized columns), read
    after the table's columns (null where a file lacks them). ``probe``: MERGE's key
    probe (``KeyProbeParquetFormat``) to read every file through, ignoring deletion vectors
    (the caller's to account for): each file without the rows whose key is one of the
    source keys and nothing of the files that hold none, or nothing at all.
    """
    schema = snapshot.schema
    mode = column_mapping_mode(snapshot.configuration)
    physical = to_physical_schema(schema, mode)
    part_names = snapshot.partition_columns
    part_physical = [physical_name(schema.field(c), mode) for c in part_names]
    data_fields = [
        f for f, lf in zip(physical.fields, schema.fields, strict=True) if lf.name not in part_names
    ]
    data_fields += [StructField(name, LONG) for name in hidden]
    data_schema = to_spark_type(StructType(tuple(data_fields)))
    extra = [*hidden, FILE_PATH, ROW_INDEX] if with_row_ids else list(hidden)
    if files.num_rows == 0:
        empty_fields = (*physical.fields, *[StructField(name, LONG) for name in hidden])
        empty = spark.createDataFrame([], to_spark_type(StructType(empty_fields)))
        if with_row_ids:
            empty = empty.selectExpr("*", f"'' AS {FILE_PATH}", f"0L AS {ROW_INDEX}").limit(0)
        return _to_logical(empty, schema, physical, extra)

    if keep_deleted:  # read every file as if it had no vector
        column = files.schema.get_field_index("deletionVector")
        files = files.set_column(
            column, "deletionVector", pa.nulls(files.num_rows, files.schema.field(column).type)
        )
    dropped: dict[str, np.ndarray] = {}
    if drop_rows is not None:
        dropped = dict(zip(files.column("path").to_pylist(), drop_rows, strict=True))
    if with_row_ids or dropped:
        # every file through the helper's reader: it drops ``dropped`` and counts row
        # indexes, cheaper than Spark's
        plain, with_dv = files.slice(0, 0), files
    else:
        has_dv = pc.is_valid(files.column("deletionVector"))
        plain, with_dv = files.filter(pc.invert(has_dv)), files.filter(has_dv)
    root = snapshot.table_root
    frames = []
    # Spark's partition discovery leaves binary values escaped ("%01"): literal branches
    binary_part = any(physical.field(p).type == BINARY for p in part_physical)
    floats = [p for p in part_physical if physical.field(p).type in (FLOAT, DOUBLE)]
    hive = mode == "none" and not binary_part and _hive_layout(files, part_physical, floats)
    rows = needs_row_reader(schema)  # integers widened to decimals: see ``_read``
    for subset, dv in ((plain, False), (with_dv, True)):
        if subset.num_rows == 0:
            continue
        args = (spark, root, subset, data_schema, physical, part_physical, dv, with_row_ids, rows)
        frames.extend(
            [_hive_branch(*args, dropped, probe)]
            if hive
            else _literal_branches(*args, dropped, probe)
        )
    df = frames[0]
    for other in frames[1:]:
        df = df.unionByName(other)
    df = df.select(*[f"`{f.name}`" for f in physical.fields], *[f"`{c}`" for c in extra])
    return _to_logical(df, schema, physical, extra)


def file_uris(snapshot: Snapshot, files: pa.Table) -> list[str]:
    """``FILE_PATH`` values of ``files``' rows, in the order of ``files``."""
    root = snapshot.table_root
    return [spark_file_uri(p) for p in _paths(root, files)]


def _paths(root: str, files: pa.Table) -> list[str]:
    return [data_file_path(root, p) for p in files.column("path").to_pylist()]


def _read(
    spark: SparkSession,
    files: pa.Table,
    paths: list[str],
    schema: Any,
    base: str | None,
    row_index: bool,
    row_reader: bool = False,
) -> DataFrame:
    """Spark's Parquet scan of ``paths`` (of ``files``), listed as the log lists them (the
    JVM helper's ``FileScans.parquet``: no glob patterns, no listing of storage) and packed
    into even tasks (``_even_tasks``); ``row_index`` adds each row's position in its file.

    The position is Spark's reserved ``_tmp_metadata_row_index`` read field (what
    ``_metadata.row_index`` is built on): reading it directly avoids building the
    ``_metadata`` struct for every row, which made scans up to 2x slower. Spark's Parquet
    reader fills it, or the JVM helper's format counts it (``_apply_dvs``).
    """
    if row_index:
        from pyspark.sql.types import LongType
        from pyspark.sql.types import StructField as SparkField
        from pyspark.sql.types import StructType as SparkStruct

        schema = SparkStruct([*schema.fields, SparkField(_SPARK_ROW_INDEX, LongType())])
    store = log_store_for(paths[0])
    missing = next((p for p in paths if not store.exists(p)), None)
    if missing is not None:
        raise DeltaFileNotFoundError(
            f"{missing}, a data file of the table, is missing from storage. It was probably "
            "deleted by VACUUM or by hand; restore it or time travel to a version that does "
            "not reference it."
        )
    listing = np.column_stack(
        [
            files.column("size").to_numpy().astype("<i8"),
            files.column("modificationTime").to_numpy().astype("<i8"),
        ]
    )
    df = parquet_scan(spark, paths, listing, schema.json(), base)
    if row_reader:  # Spark's vectorized reader refuses integers read as decimals
        df = with_scan_conf(df, VECTORIZED_READER_CONF, "false")
    return _even_tasks(spark, df, files.column("size"))


def _even_tasks(spark: SparkSession, df: DataFrame, file_sizes: pa.ChunkedArray) -> DataFrame:
    """``df`` (a plain scan of files of ``file_sizes`` bytes) with its files packed into a whole
    number of waves of the cluster's task slots (``even_split_bytes``). Stays out of the way
    when ``spark.sql.files.minPartitionNum`` is set.
    """
    settings = split_settings(spark)
    if settings.min_partition_num_set:
        return df  # the user chose how many tasks Spark aims for
    split = even_split_bytes(
        file_sizes,
        settings.max_partition_bytes,
        settings.open_cost_in_bytes,
        settings.task_slots,
    )
    if split is None:
        return df
    return with_max_split_bytes(df, split)


def even_split_bytes(
    file_sizes: pa.ChunkedArray | pa.Array, limit: int, open_cost: int, slots: int
) -> int | None:
    """The split size (at most ``limit``, Spark's ``spark.sql.files.maxPartitionBytes``) that
    packs files of ``file_sizes`` bytes into a whole number of waves of ``slots`` tasks, or
    None when Spark's own packing already does (or more than ``_MAX_SIMULATED_FILES`` files).

    Spark packs files into tasks of at most ``limit``: 307 MB of files on 2 cores made 3
    tasks, the second wave half idle; as 4 even tasks a copy of them took 1.9 s instead of
    2.6 s. When the files need more than one wave, the scan gets the fewest tasks that fill
    whole waves, with the split size whose packing, simulated as Spark does it, is the most
    even.
    """
    if len(file_sizes) > _MAX_SIMULATED_FILES or len(file_sizes) == 0:
        return None
    total = (pc.sum(file_sizes).as_py() or 0) + open_cost * len(file_sizes)
    if total <= limit * slots:
        return None  # one wave: Spark already spreads the bytes over the slots
    tasks = -(-total // (limit * slots)) * slots
    sizes = file_sizes.to_pylist()
    if _packing(sizes, limit, open_cost, slots)[0] % slots == 0:
        return None
    step = max(1, max(sizes) // 8)
    fitting = [
        (busiest, -split)
        for split in {min(limit, -(-total // tasks) + i * step) for i in range(9)}
        for count, busiest in [_packing(sizes, split, open_cost, slots)]
        if count == tasks
    ]
    return -min(fitting)[1] if fitting else None


def _packing(sizes: list[int], split: int, open_cost: int, slots: int) -> tuple[int, int]:
    """How Spark packs files of ``sizes`` bytes into tasks of at most ``split`` bytes:
    files cut into ``split``-sized pieces, largest first, each added to the current task
    unless it would overflow it ("next fit"). Returns the number of tasks and the bytes
    (with Spark's open cost per piece) the busiest of ``slots`` slots reads when each
    task goes to the first free slot."""
    pieces: list[int] = []
    for size in sizes:
        whole, rest = divmod(size, split)
        pieces += [split] * whole + ([rest] if rest else [])
    pieces.sort(reverse=True)
    tasks: list[int] = []
    current = 0
    for piece in pieces:
        if current and current + piece > split:
            tasks.append(current)
            current = 0
        current += piece + open_cost
    tasks.append(current)
    busy = [0] * slots
    for task in tasks:
        heapq.heapreplace(busy, busy[0] + task)
    return len(tasks), max(busy)


def _hive_branch(
    spark: SparkSession,
    root: str,
    files: pa.Table,
    data_schema: Any,
    physical: StructType,
    parts: list[str],
    dv: bool,
    with_row_ids: bool,
    row_reader: bool,
    dropped: dict[str, np.ndarray],
    probe: KeyProbe | None,
) -> DataFrame:
    from pyspark.sql.types import StructType as SparkStruct

    part_fields = [to_spark_type(StructType((physical.field(p),))).fields[0] for p in parts]
    full = SparkStruct(list(data_schema.fields) + part_fields)
    base = root if parts else None
    df = _read(spark, files, _paths(root, files), full, base, with_row_ids, row_reader)
    if probe is not None:
        return probe.scan(df)
    if dv:
        return _apply_dvs(spark, root, files, df, with_row_ids, dropped)
    return _with_row_ids(df) if with_row_ids else df


def _literal_branches(
    spark: SparkSession,
    root: str,
    files: pa.Table,
    data_schema: Any,
    physical: StructType,
    parts: list[str],
    dv: bool,
    with_row_ids: bool,
    row_reader: bool,
    dropped: dict[str, np.ndarray],
    probe: KeyProbe | None,
) -> list[DataFrame]:
    from pyspark.sql import functions as F

    def read(subset: pa.Table) -> DataFrame:
        df = _read(spark, subset, _paths(root, subset), data_schema, None, with_row_ids, row_reader)
        if probe is not None:
            return probe.scan(df)
        if dv:
            return _apply_dvs(spark, root, subset, df, with_row_ids, dropped)
        return _with_row_ids(df) if with_row_ids else df

    if not parts:
        return [read(files)]
    groups: dict[tuple[str | None, ...], list[int]] = {}
    for i, pv in enumerate(files.column("partitionValues").to_pylist()):
        values = dict(pv or [])
        groups.setdefault(tuple(values.get(p) for p in parts), []).append(i)
    frames = []
    for key, idx in groups.items():
        df = read(files.take(pa.array(idx)))
        for p, raw in zip(parts, key, strict=True):
            field: StructField = physical.field(p)
            value = parse_partition_value(raw, field.type)
            if isinstance(value, dt.date):
                # PySpark passes date/datetime literals as java.sql.Date/Timestamp (hybrid
                # Julian calendar; years < 1000 fail): the ISO string casts exactly
                value = value.isoformat()
            df = df.withColumn(p, F.lit(value).cast(to_spark_type(field.type)))
        frames.append(df)
    return frames


def _with_row_ids(df: DataFrame) -> DataFrame:
    """``df`` (read with ``row_index``) with ``FILE_PATH`` and ``ROW_INDEX`` columns."""
    from pyspark.sql import functions as F

    return df.withColumnRenamed(_SPARK_ROW_INDEX, ROW_INDEX).select(
        "*", F.col("_metadata.file_path").alias(FILE_PATH)
    )


def _apply_dvs(
    spark: SparkSession,
    root: str,
    files: pa.Table,
    df: DataFrame,
    keep_row_ids: bool,
    dropped: dict[str, np.ndarray],
) -> DataFrame:
    """``df`` (a plain Parquet scan of ``files``) without the rows their vectors mark
    or ``dropped`` names (files with neither are read whole).

    The scan is swapped to the JVM helper's ``DeletionVectorParquetFormat``, whose reader
    drops the marked rows batch by batch inside the scan (``jvm.helpers.without_deleted_rows``). A
    broadcast anti-join against the deleted positions, the only way in plain Spark
    expressions, made reads 2-2.5x slower than reads of the same rows without vectors.
    """

    store = log_store_for(root)
    paths = files.column("path").to_pylist()
    vectors = files.column("deletionVector").to_pylist()

    def rows(path: str, dv: dict[str, Any] | None) -> BitMap64:
        marked = (
            BitMap64()
            if dv is None
            else read_deletion_vector(DeletionVectorDescriptor.from_dict(dv), root, store)
        )
        extra = dropped.get(path)
        if extra is not None and len(extra):
            marked |= to_bitmap64(extra)
        return marked

    kept = without_deleted_rows(
        df,
        (
            (spark_file_uri(data_file_path(root, path)), rows(path, dv))
            for path, dv in zip(paths, vectors, strict=True)
        ),
    )
    return _with_row_ids(kept) if keep_row_ids else kept


def _to_logical(
    df: DataFrame, logical: StructType, physical: StructType, extra: list[str]
) -> DataFrame:
    """Rename physical columns to logical names (nested structs by positional cast)."""
    if logical == physical:
        return df
    from pyspark.sql import functions as F

    cols = []
    for lf, pf in zip(logical.fields, physical.fields, strict=True):
        col = F.col(f"`{pf.name}`")
        if lf.type != pf.type:
            col = col.cast(to_spark_type(lf.type))
        cols.append(col.alias(lf.name))
    return df.select(*cols, *[f"`{c}`" for c in extra])
