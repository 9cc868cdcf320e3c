"""OPTIMIZE: compaction of many small files, and Z-order's effect on data skipping.

Scenario A (compaction): a table of ``DELTA_BENCH_SMALL_FILES`` (default 1,000) small
files, written by one job, is compacted with ``executeCompaction()``. Printed: the
OPTIMIZE wall time, file counts before and after, bytes, and a check that the rows
(count, sum of ids) did not change.

Scenario B (Z-order): ``DELTA_BENCH_ROWS`` rows (default 10,000,000) with two
independent high-cardinality columns ``a`` and ``b`` (uniform over ``[0, 10**9)``) plus
a payload column, written shuffled (random order) into ``DELTA_BENCH_FILES`` files
(default 100). A copy of the same table is Z-ordered by ``(a, b)`` into the same number
of files (``optimize.maxFileSize`` = its bytes / files). For 20 values of each column
drawn from the data, ``a = v`` and ``b = v`` are checked against every file's min/max
stats (the core's data skipping on the snapshot): printed are the fraction of files that
can match, unordered vs Z-ordered, and the ratio unordered / Z-ordered (target >= 4 on
each column), then the time of the 20 filtered counts
``spark.read.format("delta").load(p).where(...).count()`` both ways.
"""

from __future__ import annotations

import math
import os
import random
import shutil
import tempfile
import time
from typing import Any

ROWS = int(os.environ.get("DELTA_BENCH_ROWS", "10000000"))
FILES = int(os.environ.get("DELTA_BENCH_FILES", "100"))
SMALL_FILES = int(os.environ.get("DELTA_BENCH_SMALL_FILES", "1000"))
SMALL_ROWS = int(os.environ.get("DELTA_BENCH_SMALL_ROWS", "1000000"))
POINTS = 20
SEED = 42


def _totals(spark: Any, path: str) -> tuple[int, int]:
    from pyspark.sql import functions as F

    row = spark.read.format("delta").load(path).agg(F.count("*"), F.sum("id")).first()
    return int(row[0]), int(row[1])


def _compaction(spark: Any, work: str) -> None:
    from pyspark.sql import functions as F

    from delta_pyspark.core.snapshot.delta_log import DeltaLog
    from delta_pyspark.tables import DeltaTable

    path = f"{work}/small"
    start = time.perf_counter()
    (
        spark.range(SMALL_ROWS)
        .select(
            "id",
            (F.col("id") * 7919 % 100003).alias("v"),
            F.sha2(F.col("id").cast("string"), 256).alias("s"),
        )
        .repartition(SMALL_FILES)
        .write.format("delta")
        .save(path)
    )
    written = time.perf_counter() - start
    before = DeltaLog(path).snapshot()
    totals = _totals(spark, path)
    start = time.perf_counter()
    metrics = DeltaTable.forPath(spark, path).optimize().executeCompaction().first().metrics
    took = time.perf_counter() - start
    after = DeltaLog(path).snapshot()
    ok = _totals(spark, path) == totals
    print(
        f"-- A: compaction of {before.num_files:,} small files ({SMALL_ROWS:,} rows, "
        f"written in {written:.1f}s)"
    )
    print(
        f"   OPTIMIZE {took:7.2f}s  files {before.num_files:,} -> {after.num_files:,}  "
        f"bytes {before.size_in_bytes:,} -> {after.size_in_bytes:,}  "
        f"(removed {metrics.numFilesRemoved:,}, added {metrics.numFilesAdded:,})"
    )
    print(f"   check    count, sum(id) {totals} -> {'OK' if ok else 'MISMATCH'}")


def _fractions(path: str, column: str, values: list[int]) -> float:
    from delta_pyspark.core.expressions.parser import parse_predicate
    from delta_pyspark.core.skipping.file_pruning import prune_files
    from delta_pyspark.core.snapshot.delta_log import DeltaLog

    snapshot = DeltaLog(path).snapshot()
    hits = sum(prune_files(snapshot, parse_predicate(f"{column} = {v}")).num_rows for v in values)
    return hits / (len(values) * snapshot.num_files)


def _query_time(spark: Any, path: str, column: str, values: list[int]) -> tuple[float, int]:
    start = time.perf_counter()
    found = sum(
        spark.read.format("delta").load(path).where(f"{column} = {v}").count() for v in values
    )
    return time.perf_counter() - start, found


def _zorder(spark: Any, work: str) -> None:
    from pyspark.sql import functions as F

    from delta_pyspark.core.snapshot.delta_log import DeltaLog
    from delta_pyspark.tables import DeltaTable

    unordered, zordered = f"{work}/unordered", f"{work}/zordered"
    start = time.perf_counter()
    (
        spark.range(ROWS)
        .select(
            "id",
            (F.abs(F.xxhash64("id", F.lit(1))) % 1_000_000_000).alias("a"),
            (F.abs(F.xxhash64("id", F.lit(2))) % 1_000_000_000).alias("b"),
            (F.rand(SEED) * 1000).alias("payload"),
        )
        .repartition(FILES, F.rand(SEED + 1))
        .write.format("delta")
        .save(unordered)
    )
    written = time.perf_counter() - start
    shutil.copytree(unordered, zordered)
    snapshot = DeltaLog(zordered).snapshot()
    target = math.ceil(snapshot.size_in_bytes / snapshot.num_files)
    spark.conf.set("spark.databricks.delta.optimize.maxFileSize", str(target))
    start = time.perf_counter()
    DeltaTable.forPath(spark, zordered).optimize().executeZOrderBy("a", "b")
    took = time.perf_counter() - start
    spark.conf.unset("spark.databricks.delta.optimize.maxFileSize")
    files_z = DeltaLog(zordered).snapshot().num_files
    print(
        f"-- B: {ROWS:,} rows, unordered in {snapshot.num_files} files (written in {written:.1f}s)"
    )
    print(f"   ZORDER BY (a, b) {took:7.2f}s -> {files_z} files")

    rng = random.Random(SEED)
    picks = [rng.randrange(ROWS) for _ in range(POINTS)]
    rows = (
        spark.read.format("delta")
        .load(unordered)
        .where(F.col("id").isin(picks))
        .select("a", "b")
        .collect()
    )
    for column in ("a", "b"):
        values = [r[column] for r in rows][:POINTS]
        f_u, f_z = _fractions(unordered, column, values), _fractions(zordered, column, values)
        ratio = f_u / f_z if f_z else math.inf
        print(
            f"   {column} = v  files that can match: unordered {f_u:6.1%}  zordered {f_z:6.1%}  "
            f"ratio {ratio:5.2f}x  (target >= 4x)"
        )
        t_u, n_u = _query_time(spark, unordered, column, values)
        t_z, n_z = _query_time(spark, zordered, column, values)
        print(
            f"   {column} = v  {len(values)} counts: unordered {t_u:6.2f}s  zordered {t_z:6.2f}s  "
            f"(rows found {n_u} / {n_z} -> {'OK' if n_u == n_z else 'MISMATCH'})"
        )
    same = _totals(spark, unordered) == _totals(spark, zordered)
    print(f"   check    count, sum(id) equal in both tables -> {'OK' if same else 'MISMATCH'}")


def _warm_up(spark: Any, work: str) -> None:
    """A tiny OPTIMIZE so JVM class loading and code generation are not timed."""
    from delta_pyspark.tables import DeltaTable

    path = f"{work}/warm"
    spark.range(1000).selectExpr("id", "id % 7 AS a", "id % 11 AS b").repartition(4).write.format(
        "delta"
    ).save(path)
    DeltaTable.forPath(spark, path).optimize().executeCompaction()
    DeltaTable.forPath(spark, path).optimize().executeZOrderBy("a", "b")
    shutil.rmtree(path, ignore_errors=True)


def main() -> None:
    from benchmarks.spark_session import bench_session

    spark = bench_session()
    work = tempfile.mkdtemp(prefix="delta-bench-optimize-")
    try:
        _warm_up(spark, work)
        _compaction(spark, work)
        _zorder(spark, work)
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
