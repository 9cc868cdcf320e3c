"""Z-ordering: cluster rows on several columns at once so stats skip files on each.

Each Z-order column is mapped to a range id, its rank bucket among
``spark.databricks.io.skipping.mdc.rangeId.max`` (default 1000) equal-frequency
buckets. Bucket bounds are quantiles of a sample of the column (read once, to the
driver, sorted with pyarrow); the id of each row is a branch-free binary search over
the bounds array, written as ~10 chained native Spark projections (no Python UDF).
The Z-value interleaves the bits of the range ids (Morton order, a long), so rows
close in the Z-value are close on every column. The data is then range-partitioned
on (partition columns, Z-value) into as many files as the input bytes divided by the
target file size, and sorted by the Z-value within each file.

File count: ``ceil(input bytes of the partition / maxFileSize)`` per partition, at
least one. ``maxFileSize`` is ``spark.databricks.delta.optimize.maxFileSize``, else the
table's ``delta.targetFileSize``, else 1 GB, so small tables give one file per
partition (nothing left to skip): lower ``optimize.maxFileSize`` to get more, smaller
files. Range partitioning splits on sampled keys, so a file may straddle two table
partitions and then be written as two files.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from delta_pyspark.core.column_mapping import (
    column_mapping_mode,
    physical_name,
    to_physical_schema,
)
from delta_pyspark.core.optimize_plan import Bin, bin_rows, num_records
from delta_pyspark.core.schema import (
    BYTE,
    DATE,
    DOUBLE,
    FLOAT,
    INTEGER,
    LONG,
    SHORT,
    TIMESTAMP,
    TIMESTAMP_NTZ,
    DataType,
    DecimalType,
    StructType,
    to_arrow_schema,
    to_arrow_type,
)
from delta_pyspark.core.snapshot import Snapshot
from delta_pyspark.core.stats import has_min_max, split_column_name, stats_leaves
from delta_pyspark.exceptions import DeltaAnalysisException
from delta_pyspark.spark.scan import read_files
from delta_pyspark.spark.write import stats_settings, write_files

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

NUM_RANGES_CONF = "spark.databricks.io.skipping.mdc.rangeId.max"
CHECK_STATS_CONF = "spark.databricks.delta.optimize.zorder.checkStatsCollection.enabled"
DEFAULT_NUM_RANGES = 1000
SAMPLE_ROWS_PER_RANGE = 100
MAX_SAMPLE_ROWS = 1_000_000
_Z = "__delta_zvalue"
_ID = "__delta_range_id_{}"


def resolve_zorder_columns(
    spark: SparkSession, snapshot: Snapshot, columns: Sequence[str]
) -> list[tuple[str, ...]]:
    """The logical paths of ``columns``; refuses partition columns, unknown columns and
    columns without min/max stats (Z-ordering them could not help skipping)."""
    schema = snapshot.schema
    mode = column_mapping_mode(snapshot.configuration)
    parts = {p.lower() for p in snapshot.partition_columns}
    check_stats = str(spark.conf.get(CHECK_STATS_CONF, "true")).strip().lower() != "false"
    indexed = _indexed_paths(snapshot) if check_stats else set()
    resolved: list[tuple[str, ...]] = []
    without_stats: list[str] = []
    for name in columns:
        path = split_column_name(name)
        if len(path) == 1 and path[0].lower() in parts:
            raise DeltaAnalysisException(
                f"{name} is a partition column. Z-Ordering can only be performed on data columns"
            )
        found = _resolve(schema, path, mode)
        if found is None:
            raise DeltaAnalysisException(
                f"Z-Ordering column {name} does not exist in data schema {schema.field_names}"
            )
        logical, physical, dtype = found
        has_stats = tuple(p.lower() for p in physical) in indexed and has_min_max(
            to_arrow_type(dtype)
        )
        if check_stats and not has_stats:
            without_stats.append(name)
        if logical not in resolved:
            resolved.append(logical)
    if without_stats:
        raise DeltaAnalysisException(
            f"Z-Ordering on [{', '.join(without_stats)}] will be ineffective, because we "
            "currently do not collect min/max stats for these columns (see "
            "delta.dataSkippingNumIndexedCols / delta.dataSkippingStatsColumns). You can "
            f"disable this check by setting {CHECK_STATS_CONF} = false"
        )
    return resolved


def _resolve(
    schema: StructType, path: tuple[str, ...], mode: str = "none"
) -> tuple[tuple[str, ...], tuple[str, ...], DataType] | None:
    """(logical path as the schema spells it, physical path, leaf type); None if absent."""
    struct: DataType = schema
    logical: list[str] = []
    physical: list[str] = []
    for part in path:
        if not isinstance(struct, StructType):
            return None
        field = struct.find_field(part, case_sensitive=False)
        if field is None:
            return None
        logical.append(field.name)
        physical.append(physical_name(field, mode))
        struct = field.type
    if isinstance(struct, StructType):
        return None  # a struct is not a leaf: nothing to order by
    return tuple(logical), tuple(physical), struct


def _indexed_paths(snapshot: Snapshot) -> set[tuple[str, ...]]:
    """Physical leaf paths (lower case) the writer collects stats for, as ``write_files``."""
    mode = column_mapping_mode(snapshot.configuration)
    physical = to_physical_schema(snapshot.schema, mode)
    part_physical = {
        physical_name(snapshot.schema.field(c), mode) for c in snapshot.partition_columns
    }
    data = StructType(tuple(f for f in physical.fields if f.name not in part_physical))
    num, cols = stats_settings(snapshot.configuration)
    return {
        tuple(p.lower() for p in path) for path, _ in stats_leaves(to_arrow_schema(data), num, cols)
    }


def indexed_column_count(snapshot: Snapshot) -> int:
    """How many leaf columns get min/max/null-count stats (``numTableColumnsWithStats``)."""
    return len(_indexed_paths(snapshot))


def _column(path: tuple[str, ...]) -> Column:
    from pyspark.sql import functions as F

    return F.col(".".join(f"`{p}`" for p in path))


def _sort_key(col: Column, dtype: DataType) -> tuple[Column, str]:
    """A value ordered like ``col`` (and its Spark type) that pyarrow sorts and Spark
    literals spell exactly: longs, doubles or strings."""
    from pyspark.sql import functions as F

    if dtype in (BYTE, SHORT, INTEGER, LONG):
        return col.cast("bigint"), "bigint"
    if dtype in (FLOAT, DOUBLE) or isinstance(dtype, DecimalType):
        return col.cast("double"), "double"
    if dtype == DATE:
        return F.unix_date(col).cast("bigint"), "bigint"
    if dtype == TIMESTAMP:
        return F.unix_micros(col), "bigint"
    if dtype == TIMESTAMP_NTZ:
        return F.unix_micros(col.cast("timestamp")), "bigint"
    return col.cast("string"), "string"  # strings; others only with the stats check off


def _bounds(values: pa.ChunkedArray | pa.Array, num_ranges: int) -> list[Any]:
    """Lower bounds of ``num_ranges`` equal-frequency buckets of the sampled ``values``."""
    values = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
    values = values.filter(pc.is_valid(values))
    n = len(values)
    if n == 0:
        return []
    ordered = values.take(pc.sort_indices(values))
    positions = sorted({(i * n) // num_ranges for i in range(1, num_ranges)} - {0})
    if not positions:
        return []
    picked = ordered.take(pa.array(positions, pa.int64()))
    return pc.unique(picked).to_pylist()


def _range_ids(
    spark: SparkSession,
    df: DataFrame,
    keys: list[Column],
    kinds: list[str],
    bounds: list[list[Any]],
) -> tuple[DataFrame, list[str], int]:
    """``df`` plus one range-id column per key: how many of its bounds are <= the value.

    The bounds arrive as array columns of a one-row broadcast side (a plan with
    thousands of literals would be slow to analyse); the search takes power-of-two
    steps, each its own projection, so no expression grows beyond one step.
    """
    from pyspark.sql import functions as F

    names = [_ID.format(i) for i in range(len(keys))]
    key_names = [f"{n}_key" for n in names]
    arr_names = [f"{n}_bounds" for n in names]
    ddl = ", ".join(f"{a} array<{k}>" for a, k in zip(arr_names, kinds, strict=True))
    arrays = spark.createDataFrame([tuple(bounds)], ddl)
    df = df.select(
        "*",
        *[k.alias(kn) for k, kn in zip(keys, key_names, strict=True)],
        *[F.lit(0).cast("bigint").alias(n) for n in names],
    ).crossJoin(F.broadcast(arrays))
    longest = max((len(b) for b in bounds), default=0)
    step = 1 << (longest.bit_length() - 1) if longest else 0
    while step >= 1:
        updates = {}
        for name, key, arr, b in zip(names, key_names, arr_names, bounds, strict=True):
            if step > len(b):
                continue
            candidate = F.col(name) + step
            probe = F.try_element_at(F.col(arr), candidate.cast("int"))
            updates[name] = F.when(probe <= F.col(key), candidate).otherwise(F.col(name))
        if updates:
            df = df.withColumns(updates)
        step >>= 1
    return df.drop(*key_names, *arr_names), names, max(1, longest.bit_length())


def _interleave(names: list[str], bits: int) -> Column:
    """Morton code of the range ids: bit ``b`` of id ``j`` goes to ``b * k + (k - 1 - j)``."""
    from pyspark.sql import functions as F

    k = len(names)
    per_column = min(bits, 62 // k)
    drop = bits - per_column  # keep the high bits when ids do not all fit in a long
    z = F.lit(0).cast("bigint")
    for j, name in enumerate(names):
        rid = F.shiftright(F.col(name), drop) if drop else F.col(name)
        for b in range(per_column):
            bit = F.shiftright(rid, b).bitwiseAND(F.lit(1).cast("bigint"))
            z = z + F.shiftleft(bit, b * k + (k - 1 - j))
    return z


def zorder_frame(
    spark: SparkSession,
    snapshot: Snapshot,
    files: pa.Table,
    columns: list[tuple[str, ...]],
    num_files: int,
) -> DataFrame:
    """The rows of ``files`` clustered by the Z-value of ``columns`` into ``num_files``
    Spark partitions (table columns only)."""
    num_ranges = max(2, int(spark.conf.get(NUM_RANGES_CONF, str(DEFAULT_NUM_RANGES))))
    df = read_files(spark, snapshot, files)
    keyed = [_sort_key(_column(path), _leaf_type(snapshot.schema, path)) for path in columns]
    keys, kinds = [k for k, _ in keyed], [kind for _, kind in keyed]
    bounds = _sample_bounds(df, keys, files, num_ranges)
    with_ids, names, bits = _range_ids(spark, df, keys, kinds, bounds)
    parts = [f"`{c}`" for c in snapshot.partition_columns]
    clustered = (
        with_ids.withColumn(_Z, _interleave(names, bits))
        .repartitionByRange(max(1, num_files), *parts, _Z)
        .sortWithinPartitions(*parts, _Z)
    )
    return clustered.select(*[f"`{f.name}`" for f in snapshot.schema.fields])


def _leaf_type(schema: StructType, path: tuple[str, ...]) -> DataType:
    found = _resolve(schema, path)
    assert found is not None, path
    return found[2]


def _sample_bounds(
    df: DataFrame, keys: list[Column], files: pa.Table, num_ranges: int
) -> list[list[Any]]:
    """Bucket bounds per key from one sample of the rows (about 100 rows per bucket)."""
    rows = num_records(files)
    known = pc.sum(rows).as_py() or 0
    total = known if rows.null_count == 0 else max(known, 1) * 2
    wanted = min(MAX_SAMPLE_ROWS, SAMPLE_ROWS_PER_RANGE * num_ranges)
    sample = df.select(*[k.alias(f"k{i}") for i, k in enumerate(keys)])
    if total > wanted:
        sample = sample.sample(withReplacement=False, fraction=wanted / total, seed=17)
    table = sample.toArrow()
    return [_bounds(table.column(i), num_ranges) for i in range(len(keys))]


def write_zordered(
    spark: SparkSession,
    snapshot: Snapshot,
    files: pa.Table,
    bins: Sequence[Bin],
    columns: list[tuple[str, ...]],
    max_file_size: int,
) -> list[dict[str, Any]]:
    """Rewrite the files of ``bins`` (one per partition) Z-ordered; their ``add`` actions."""
    if not bins:
        return []
    chosen = files.take(pa.array(bin_rows(bins), pa.int64()))
    num_files = sum(max(1, math.ceil(b.size / max_file_size)) for b in bins)
    df = zorder_frame(spark, snapshot, chosen, columns, num_files)
    return write_files(
        df,
        snapshot.table_root,
        snapshot.schema,
        snapshot.partition_columns,
        snapshot.configuration,
        data_change=False,
        optimize_write=False,
    )
