"""Z-ordering: cluster rows on several columns at once so stats skip files on each.

Each Z-order column is mapped to a range id, its rank bucket among equal-frequency
buckets whose bounds are quantiles of a sample of the column (read once to the driver,
sorted with pyarrow). The id of each row is a branch-free binary search over the bounds,
one array literal, as chained native Spark projections (no Python UDF). The Z-value
interleaves the bits of the range ids (Morton order, a long), so rows close in Z-value
are close on every column. Bits per column (``range_bits``): enough for about 64 Z-value
cells per output file, at most ``log2(spark.databricks.io.skipping.mdc.rangeId.max)``
(default 1000) and 16 over all columns (more search steps make Spark's generated code
too big for the JVM to compile well, and every row several times slower).

Files: each partition (one bin) gets ``ceil(its input bytes / maxFileSize)`` files.
``maxFileSize`` is ``spark.databricks.delta.optimize.maxFileSize``, else the table's
``delta.targetFileSize``, else 1 GB, so a small table gets one file per partition and
nothing to skip: lower ``optimize.maxFileSize`` for more, smaller files. Files are cut
from the partition's Z-ordered rows at near-equal row counts (exact counts per block of
leading Z-value bits, one aggregation), each cut nudged within a quarter of a file to the
most aligned block boundary (``split_blocks``): a file then covers whole aligned Z-order
cells and its min/max box stays tight on every column, where a cut inside a cell would
leave a sliver stretching it. A dense lookup (block -> file) sends every row to its file's
own Spark partition (``bin_writer.partition_keys``), sorted by Z-value (ties by the
columns themselves): one write job.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from delta_pyspark.core.commands.optimize_plan import (
    Bin,
    bin_rows,
    lookup_block_bits,
    num_records,
    range_bits,
    split_blocks,
)
from delta_pyspark.core.protocol.actions import AddFile
from delta_pyspark.core.protocol.column_mapping import (
    column_mapping_mode,
)
from delta_pyspark.core.protocol.schema import (
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
)
from delta_pyspark.core.protocol.schema_arrow import to_arrow_type
from delta_pyspark.core.snapshot.snapshot import Snapshot
from delta_pyspark.core.stats.indexed_columns import indexed_paths, resolve_leaf
from delta_pyspark.core.stats.layout import has_min_max, split_column_name
from delta_pyspark.exceptions import DeltaAnalysisException
from delta_pyspark.spark.columns.row_tracking import preserved_columns, read_preserving
from delta_pyspark.spark.conf import ZORDER_CHECK_STATS_CONF, ZORDER_NUM_RANGES_CONF
from delta_pyspark.spark.files.scan import FILE_PATH, ROW_INDEX, file_uris
from delta_pyspark.spark.files.write import write_compacted
from delta_pyspark.spark.jvm.helpers import array_literal

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

DEFAULT_NUM_RANGES = 1000
SAMPLE_ROWS_PER_RANGE = 100
MAX_SAMPLE_ROWS = 1_000_000
_Z = "__delta_zvalue"
_ID = "__delta_range_id_{}"
_BIN = "__delta_bin"
_SHIFT = "__delta_block_shift"
_BLOCK = "__delta_zblock"
_KEY = "__delta_file_key"
_NO_COUNTS = pa.table(
    {
        _BIN: pa.array([], pa.int32()),
        _BLOCK: pa.array([], pa.int64()),
        "n": pa.array([], pa.int64()),
    }
)


def resolve_zorder_columns(
    spark: SparkSession, snapshot: Snapshot, columns: Sequence[str]
) -> list[tuple[str, ...]]:
    """The logical paths of ``columns``; refuses partition columns, unknown columns and
    columns without min/max stats (Z-ordering them could not help skipping)."""
    schema = snapshot.schema
    mode = column_mapping_mode(snapshot.configuration)
    parts = {p.lower() for p in snapshot.partition_columns}
    check_stats = str(spark.conf.get(ZORDER_CHECK_STATS_CONF, "true")).strip().lower() != "false"
    indexed = _indexed_paths(snapshot) if check_stats else set()
    resolved: list[tuple[str, ...]] = []
    without_stats: list[str] = []
    for name in columns:
        path = split_column_name(name)
        if len(path) == 1 and path[0].lower() in parts:
            raise DeltaAnalysisException(
                f"{name} is a partition column. Z-Ordering can only be performed on data columns"
            )
        found = resolve_leaf(schema, path, mode)
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
            f"disable this check by setting {ZORDER_CHECK_STATS_CONF} = false"
        )
    return resolved


def _indexed_paths(snapshot: Snapshot) -> set[tuple[str, ...]]:
    return indexed_paths(snapshot.schema, snapshot.partition_columns, snapshot.configuration)


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
    """``df`` plus one range-id column per key: how many of its bounds are <= the value
    (and the bits the largest id needs). A binary search with power-of-two steps over
    each bounds array, each step its own projection, so no expression grows beyond one
    step (``CollapseProject`` keeps them apart: every step reads the last one twice)."""
    from pyspark.sql import functions as F

    names = [_ID.format(i) for i in range(len(keys))]
    key_names = [f"{n}_key" for n in names]
    arrays = [
        array_literal(spark, b, kind) if b else None for b, kind in zip(bounds, kinds, strict=True)
    ]
    df = df.select(
        "*",
        *[k.alias(kn) for k, kn in zip(keys, key_names, strict=True)],
        *[F.lit(0).cast("bigint").alias(n) for n in names],
    )
    longest = max((len(b) for b in bounds), default=0)
    step = 1 << (longest.bit_length() - 1) if longest else 0
    while step >= 1:
        updates = {}
        for name, key, arr, b in zip(names, key_names, arrays, bounds, strict=True):
            if arr is None or step > len(b):
                continue
            candidate = F.col(name) + step
            probe = F.try_element_at(arr, candidate.cast("int"))
            updates[name] = F.when(probe <= F.col(key), candidate).otherwise(F.col(name))
        if updates:
            df = df.withColumns(updates)
        step >>= 1
    return df.drop(*key_names), names, max(1, longest.bit_length())


def _interleave(names: list[str], bits: int) -> tuple[Column, int]:
    """Morton code of the range ids (bit ``b`` of id ``j`` goes to ``b * k + (k - 1 - j)``)
    and its width in bits; ids keep their high bits when they do not all fit in a long."""
    from pyspark.sql import functions as F

    k = len(names)
    per_column = min(bits, 62 // k)
    drop = bits - per_column
    z = F.lit(0).cast("bigint")
    for j, name in enumerate(names):
        rid = F.shiftright(F.col(name), drop) if drop else F.col(name)
        for b in range(per_column):
            bit = F.shiftright(rid, b).bitwiseAND(F.lit(1).cast("bigint"))
            z = z + F.shiftleft(bit, b * k + (k - 1 - j))
    return z, per_column * k


def _leaf_type(schema: StructType, path: tuple[str, ...]) -> DataType:
    found = resolve_leaf(schema, path)
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


def _block_counts(with_block: DataFrame, multi: list[int]) -> pa.Table:
    """Rows per (bin, Z-value block) of the bins cut into several files (one aggregation)."""
    from pyspark.sql import functions as F

    return (
        with_block.where(F.col(_BIN).isin(multi))
        .groupBy(_BIN, _BLOCK)
        .agg(F.count(F.lit(1)).alias("n"))
        .toArrow()
        .sort_by([(_BIN, "ascending"), (_BLOCK, "ascending")])
    )


def _routes(
    spark: SparkSession, counts: pa.Table, file_counts: list[int], block_sizes: list[int]
) -> tuple[list[int], list[int], list[int], int]:
    """Where every row goes: per bin, the start of its block lookup in one flat table
    (-1: one file, no lookup) and its single file's Spark key; the flat lookup (block ->
    Spark key of its file) and the number of files in all."""
    import numpy as np

    from delta_pyspark.spark.commands.bin_writer import partition_keys

    bins = counts.column(_BIN).to_numpy().astype(np.int64)
    blocks = counts.column(_BLOCK).to_numpy().astype(np.int64)
    rows = counts.column("n").to_numpy().astype(np.int64)
    bounds = np.searchsorted(bins, np.arange(len(file_counts) + 1), "left")
    cuts: dict[int, np.ndarray] = {}
    for i, n in enumerate(file_counts):
        lo, hi = int(bounds[i]), int(bounds[i + 1])
        if n > 1 and hi > lo:
            cuts[i] = np.asarray(split_blocks(blocks[lo:hi], rows[lo:hi], n), dtype=np.int64)
    sizes = [len(cuts[i]) + 1 if i in cuts else 1 for i in range(len(file_counts))]
    total = int(sum(sizes))
    keys = np.asarray(partition_keys(spark, total), dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    starts, direct, lookup = [], [], []
    position = 0
    for i in range(len(file_counts)):
        direct.append(int(keys[offsets[i]]))
        if i not in cuts:
            starts.append(-1)
            continue
        every_block = np.arange(1 << block_sizes[i], dtype=np.int64)
        local = np.searchsorted(cuts[i], every_block, "right")
        lookup.append(keys[offsets[i] + local])
        starts.append(position)
        position += len(every_block)
    flat = np.concatenate(lookup).tolist() if lookup else []
    return starts, direct, flat, total


def _per_bin(spark: SparkSession, values: list[int]) -> Column:
    """``values[bin]`` for each row (a literal when all bins agree)."""
    from pyspark.sql import functions as F

    if len(set(values)) == 1:
        return F.lit(values[0]).cast("bigint")
    return F.element_at(array_literal(spark, values, "bigint"), F.col(_BIN) + 1)


def zorder_frame(
    spark: SparkSession,
    snapshot: Snapshot,
    files: pa.Table,
    bins: Sequence[Bin],
    columns: list[tuple[str, ...]],
    max_file_size: int,
) -> tuple[DataFrame, int]:
    """The rows of ``bins`` (one per partition) clustered by the Z-value of ``columns``:
    one Spark partition per output file, rows sorted by Z-value; and the file count.

    A row's file comes from a dense lookup (literal array) indexed by the leading bits
    of its Z-value: a single ``element_at``, cheaper than any join or search.
    """
    from pyspark.sql import functions as F

    num_ranges = max(2, int(str(spark.conf.get(ZORDER_NUM_RANGES_CONF, str(DEFAULT_NUM_RANGES)))))
    chosen = files.take(pa.array(bin_rows(bins), pa.int64()))
    file_counts = [max(1, math.ceil(b.size / max_file_size)) for b in bins]
    if len(bins) == 1:
        df = read_preserving(spark, snapshot, chosen).withColumn(_BIN, F.lit(0))
    else:
        mapping = spark.createDataFrame(
            pa.table(
                {
                    FILE_PATH: pa.array(file_uris(snapshot, chosen), pa.string()),
                    _BIN: pa.array([i for i, b in enumerate(bins) for _ in b.rows], pa.int32()),
                }
            )
        )
        df = (
            read_preserving(spark, snapshot, chosen, with_row_ids=True)
            .join(F.broadcast(mapping), FILE_PATH)
            .drop(FILE_PATH, ROW_INDEX)
        )
    keyed = [_sort_key(_column(path), _leaf_type(snapshot.schema, path)) for path in columns]
    keys, kinds = [k for k, _ in keyed], [kind for _, kind in keyed]
    bits = range_bits(len(columns), max(file_counts), num_ranges)
    bounds = _sample_bounds(df, keys, chosen, 1 << bits)
    with_ids, names, id_bits = _range_ids(spark, df, keys, kinds, bounds)
    z, z_bits = _interleave(names, id_bits)
    block_sizes = lookup_block_bits(file_counts, z_bits)
    shift = _per_bin(spark, [z_bits - b for b in block_sizes])
    columns_out = [f"`{f.name}`" for f in snapshot.schema.fields] + preserved_columns(snapshot)
    with_block = (
        with_ids.withColumn(_Z, z)
        .select(*columns_out, _BIN, _Z)
        .withColumn(_SHIFT, shift.cast("int"))
        .withColumn(_BLOCK, F.expr(f"shiftright({_Z}, {_SHIFT})"))  # Python's takes an int
        .drop(_SHIFT)
    )
    multi = [i for i, n in enumerate(file_counts) if n > 1]
    counts = _block_counts(with_block, multi) if multi else _NO_COUNTS
    starts, direct, flat, total = _routes(spark, counts, file_counts, block_sizes)
    start = _per_bin(spark, starts)
    key = _per_bin(spark, direct)
    if flat:
        lookup = array_literal(spark, flat, "bigint")
        routed = F.element_at(lookup, (start + F.col(_BLOCK) + 1).cast("int"))
        key = F.when(start < 0, key).otherwise(routed)
    parts = [f"`{c}`" for c in snapshot.partition_columns]
    clustered = (
        with_block.select(*columns_out, _Z, key.cast("int").alias(_KEY))
        .repartition(total, _KEY)
        .sortWithinPartitions(*parts, _Z, *[_column(path) for path in columns])
    )
    return clustered.select(*columns_out), total


def write_zordered(
    spark: SparkSession,
    snapshot: Snapshot,
    files: pa.Table,
    bins: Sequence[Bin],
    columns: list[tuple[str, ...]],
    max_file_size: int,
) -> list[AddFile]:
    """Rewrite the files of ``bins`` (one per partition) Z-ordered; their ``add`` actions."""
    if not bins:
        return []
    df, _ = zorder_frame(spark, snapshot, files, bins, columns, max_file_size)
    return write_compacted(df, snapshot)
