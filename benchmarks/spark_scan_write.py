"""Spark data path on a 10M-row, 4-column table, each figure against its baseline
measured in the same run:

- full-scan aggregate through ``format("delta")`` vs ``spark.read.parquet`` on the
  same files (target ratio <= 1.0, issue 39);
- append of 10M rows through ``format("delta")`` (a new table) vs plain
  ``df.write.parquet`` (target <= 1.0);
- a selective filter on a sorted column: files the stats-based skipping keeps out
  of the files in the table (through the planner, ``scan_report``).

``DELTA_BENCH_ROWS`` overrides the row count (default 10,000,000); ``DELTA_BENCH_RUNS`` the
rounds each pair takes turns for (default 5; the best and the median of each are printed,
with the ratios of both).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Callable

ROWS = int(os.environ.get("DELTA_BENCH_ROWS", "10000000"))
RUNS = int(os.environ.get("DELTA_BENCH_RUNS", "5"))


def _taking_turns(
    first: Callable[[], object], second: Callable[[], object], runs: int = RUNS
) -> tuple[tuple[float, float], tuple[float, float]]:
    """(best, median) times of ``first`` and of ``second`` over ``runs`` rounds, taking
    turns, so that warm-up and load on the machine fall on both alike. The median too: one
    lucky run of either side moves the best by as much as 15% on this machine."""
    times: tuple[list[float], list[float]] = ([], [])
    for _ in range(runs):
        for fn, out in zip((first, second), times, strict=True):
            start = time.perf_counter()
            fn()
            out.append(time.perf_counter() - start)
    first_times, second_times = (sorted(t) for t in times)
    return (
        (first_times[0], first_times[runs // 2]),
        (second_times[0], second_times[runs // 2]),
    )


def _ratios(name: str, delta: tuple[float, float], parquet: tuple[float, float]) -> str:
    """One line: best and median of each side, and the ratios of both."""
    return (
        f"{name} delta {delta[0]:6.2f}s (median {delta[1]:.2f})  parquet {parquet[0]:6.2f}s "
        f"(median {parquet[1]:.2f})  ratio of best {delta[0] / parquet[0]:.3f}, of medians "
        f"{delta[1] / parquet[1]:.3f}  (target <= 1.0)"
    )


def main() -> None:
    from pyspark.sql import functions as F

    from benchmarks.spark_session import bench_session
    from delta_pyspark import scan_report
    from delta_pyspark.core.snapshot.delta_log import DeltaLog

    spark = bench_session()
    work = tempfile.mkdtemp(prefix="delta-bench-")
    try:
        source = (
            spark.range(ROWS)
            .select(
                F.col("id"),
                (F.col("id") % 1000).alias("k"),
                (F.rand(7) * 1000).alias("x"),
                F.concat(F.lit("s"), (F.col("id") % 97).cast("string")).alias("s"),
            )
            .repartitionByRange(16, "id")
            .sortWithinPartitions("id")
            .cache()
        )
        source.count()

        n = [0]

        def write_parquet() -> None:
            n[0] += 1
            source.write.parquet(f"{work}/pq{n[0]}")

        def write_delta() -> None:
            n[0] += 1
            source.write.format("delta").save(f"{work}/delta{n[0]}")

        t_pq_write, t_delta_write = _taking_turns(write_parquet, write_delta)
        table = f"{work}/delta{n[0]}"
        files = [
            os.path.join(d, f) for d, _, fs in os.walk(table) for f in fs if f.endswith(".parquet")
        ]

        def agg_parquet() -> None:
            spark.read.parquet(*files).agg(F.sum("x"), F.count("*"), F.max("s")).collect()

        def agg_delta() -> None:
            spark.read.format("delta").load(table).agg(
                F.sum("x"), F.count("*"), F.max("s")
            ).collect()

        agg_parquet()
        agg_delta()  # warm both
        t_pq_read, t_delta_read = _taking_turns(agg_parquet, agg_delta)

        snapshot = DeltaLog(table).snapshot()
        lo = ROWS // 2
        df = spark.read.format("delta").load(table).where(f"id >= {lo} AND id < {lo + 1000}")
        matched = df.count()
        report = scan_report(df)

        print(f"rows: {ROWS:,}; data files: {snapshot.num_files}")
        print(_ratios("append  ", t_delta_write, t_pq_write))
        print(_ratios("full agg", t_delta_read, t_pq_read))
        print(
            f"skipping id in [{lo}, {lo + 1000}): files read {report.files_scanned} / "
            f"{report.files_total} (skipped {report.files_skipped}); rows matched {matched}"
        )
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
