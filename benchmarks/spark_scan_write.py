"""Spark data path on a 10M-row, 4-column table, each figure against its baseline
measured in the same run:

- full-scan aggregate through ``format("delta")`` vs ``spark.read.parquet`` on the
  same files (target ratio <= 1.0, issue 39);
- append of 10M rows through ``format("delta")`` (a new table) vs plain
  ``df.write.parquet`` (target <= 1.0);
- a selective filter on a sorted column: files the stats-based skipping keeps out
  of the files in the table (through the planner, ``scan_report``).

``DELTA_BENCH_ROWS`` overrides the row count (default 10,000,000); ``DELTA_BENCH_RUNS`` the
rounds each pair takes turns for (``benchmarks.turns``; default 5; the best and the median
of each are printed, with the ratios of both).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable

from benchmarks.turns import best_median, ratio, taking_turns, timed

ROWS = int(os.environ.get("DELTA_BENCH_ROWS", "10000000"))
RUNS = int(os.environ.get("DELTA_BENCH_RUNS", "5"))


def _taking_turns(
    parquet: Callable[[], object], delta: Callable[[], object]
) -> dict[str, list[float]]:
    """The timings of each over ``RUNS`` rounds, taking turns (the Parquet side first)."""
    return taking_turns({"parquet": lambda: timed(parquet), "delta": lambda: timed(delta)}, RUNS)


def _ratios(name: str, times: dict[str, list[float]]) -> str:
    """One line: best and median of each side, and the ratios of both."""
    (best, median), (pq_best, pq_median) = (
        best_median(times["delta"]),
        best_median(times["parquet"]),
    )
    return (
        f"{name} delta {best:6.2f}s (median {median:.2f})  parquet {pq_best:6.2f}s "
        f"(median {pq_median:.2f})  {ratio(times['delta'], times['parquet'])}  (target <= 1.0)"
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

        writes = _taking_turns(write_parquet, write_delta)
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
        reads = _taking_turns(agg_parquet, agg_delta)

        snapshot = DeltaLog(table).snapshot()
        lo = ROWS // 2
        df = spark.read.format("delta").load(table).where(f"id >= {lo} AND id < {lo + 1000}")
        matched = df.count()
        report = scan_report(df)

        print(f"rows: {ROWS:,}; data files: {snapshot.num_files}")
        print(_ratios("append  ", writes))
        print(_ratios("full agg", reads))
        print(
            f"skipping id in [{lo}, {lo + 1000}): files read {report.files_scanned} / "
            f"{report.files_total} (skipped {report.files_skipped}); rows matched {matched}"
        )
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
