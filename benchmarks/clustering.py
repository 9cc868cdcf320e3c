"""Liquid clustering: files a point filter reads, unclustered vs Z-ordered vs clustered.

The same data, ``DELTA_BENCH_CLUSTER_ROWS`` rows (default 2,000,000) with two independent
high-cardinality columns ``a`` and ``b`` (uniform over ``[0, 10**9)``) and a payload, is
written shuffled into ``DELTA_BENCH_CLUSTER_FILES`` files (default 64) three times:

- unclustered: as written;
- Z-ordered: a copy, ``OPTIMIZE ... ZORDER BY (a, b)``;
- liquid: written with ``clusterBy("a", "b")``, then ``OPTIMIZE`` (incremental clustering).

OPTIMIZE writes ``optimize.maxFileSize`` = bytes / files, so each layout keeps about N
files. For 20 values of each column drawn from the data, ``a = v`` and ``b = v`` are run
through Spark and the files its scan reads are counted (``delta_pyspark.scan_report``);
printed is the mean of files read / N, next to 1.5 / sqrt(N), the fraction a 2-D clustering
of N files should reach (a point on one column crosses about sqrt(N) of the N cells), and
the OPTIMIZE times. The rows each filter finds must be equal in the three tables.
"""

from __future__ import annotations

import math
import os
import random
import shutil
import tempfile
import time
from typing import Any

ROWS = int(os.environ.get("DELTA_BENCH_CLUSTER_ROWS", "2000000"))
FILES = int(os.environ.get("DELTA_BENCH_CLUSTER_FILES", "64"))
POINTS = 20
SEED = 7
MAX_FILE = "spark.databricks.delta.optimize.maxFileSize"


def _data(spark: Any) -> Any:
    from pyspark.sql import functions as F

    return (
        spark.range(ROWS)
        .select(
            "id",
            (F.abs(F.xxhash64("id", F.lit(1))) % 1_000_000_000).alias("a"),
            (F.abs(F.xxhash64("id", F.lit(2))) % 1_000_000_000).alias("b"),
            (F.rand(SEED) * 1000).alias("payload"),
        )
        .repartition(FILES, F.rand(SEED + 1))
    )


def _optimize(spark: Any, path: str, zorder: bool) -> float:
    from delta_pyspark.core.snapshot.delta_log import DeltaLog
    from delta_pyspark.tables import DeltaTable

    snapshot = DeltaLog(path).snapshot()
    spark.conf.set(MAX_FILE, str(math.ceil(snapshot.size_in_bytes / snapshot.num_files)))
    start = time.perf_counter()
    builder = DeltaTable.forPath(spark, path).optimize()
    if zorder:
        builder.executeZOrderBy("a", "b")
    else:
        builder.executeCompaction()
    took = time.perf_counter() - start
    spark.conf.unset(MAX_FILE)
    return took


def _files_read(spark: Any, path: str, column: str, values: list[int]) -> tuple[float, int]:
    """Mean fraction of the table's files Spark reads for ``column = v``, and rows found."""
    from delta_pyspark import scan_report
    from delta_pyspark.core.snapshot.delta_log import DeltaLog

    total = DeltaLog(path).snapshot().num_files
    read, found = 0, 0
    for v in values:
        df = spark.read.format("delta").load(path).where(f"{column} = {v}")
        found += df.count()
        report = scan_report(df)
        read += int(report.files_scanned)
    return read / (len(values) * total), found


def main() -> None:
    from pyspark.sql import functions as F

    from benchmarks.spark_session import bench_session
    from delta_pyspark.core.snapshot.delta_log import DeltaLog

    spark = bench_session()
    work = tempfile.mkdtemp(prefix="delta-bench-clustering-")
    try:
        plain, zordered, liquid = f"{work}/plain", f"{work}/zordered", f"{work}/liquid"
        start = time.perf_counter()
        _data(spark).write.format("delta").save(plain)
        written = time.perf_counter() - start
        shutil.copytree(plain, zordered)
        _data(spark).write.format("delta").clusterBy("a", "b").save(liquid)
        print(f"-- {ROWS:,} rows in {FILES} files (written in {written:.1f}s)")
        t_z = _optimize(spark, zordered, zorder=True)
        t_l = _optimize(spark, liquid, zorder=False)
        tables = {"unclustered": plain, "zordered": zordered, "liquid": liquid}
        counts = {name: DeltaLog(p).snapshot().num_files for name, p in tables.items()}
        print(f"   OPTIMIZE ZORDER BY (a, b) {t_z:6.1f}s -> {counts['zordered']} files")
        print(f"   OPTIMIZE (liquid, a, b)   {t_l:6.1f}s -> {counts['liquid']} files")
        picks = random.Random(SEED).sample(range(ROWS), POINTS)
        rows = spark.read.format("delta").load(plain).where(F.col("id").isin(picks)).collect()
        for column in ("a", "b"):
            values = [int(r[column]) for r in rows]
            found: set[int] = set()
            for name, path in tables.items():
                fraction, hits = _files_read(spark, path, column, values)
                found.add(hits)
                target = 1.5 / math.sqrt(counts[name])
                print(
                    f"   {column} = v  {name:<11}  files read / N {fraction:6.1%}  "
                    f"(N = {counts[name]}, target 1.5/sqrt(N) = {target:5.1%})"
                )
            same = "OK" if len(found) == 1 else "MISMATCH"
            print(f"   {column} = v  rows found equal in all three -> {same}")
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
