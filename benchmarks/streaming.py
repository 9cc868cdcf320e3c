"""Structured Streaming through the ``delta`` source and sink:

- throughput: a stream reading a 48-file table of ``DELTA_BENCH_ROWS`` rows (default
  10,000,000) from version 0 with Trigger.AvailableNow (default rate limit: one batch of
  up to 1,000 files) into a ``noop`` sink, vs a batch
  read of the same table into the same sink (target: stream >= 0.8x the batch's rows/s);
- latency: one-row appends to a source table flowing through a running
  source -> sink pipeline (processing-time trigger 0) until they are readable in the sink
  table: median and p95 over ``LATENCY_SAMPLES`` appends.
"""

from __future__ import annotations

import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.spark_session import bench_session

ROWS = int(os.environ.get("DELTA_BENCH_ROWS", "10000000"))
FILES = 48
LATENCY_SAMPLES = 20


def _throughput(spark: Any, path: str, checkpoint: str) -> tuple[float, float]:
    batch_start = time.perf_counter()
    spark.read.format("delta").load(path).write.format("noop").mode("overwrite").save()
    batch = time.perf_counter() - batch_start

    stream_start = time.perf_counter()
    query = (
        spark.readStream.format("delta")
        .load(path)
        .writeStream.format("noop")
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    stream = time.perf_counter() - stream_start
    rows = sum(p["numInputRows"] for p in query.recentProgress)
    if rows != ROWS:
        raise AssertionError(f"the stream read {rows} rows, the table has {ROWS}")
    return batch, stream


def _latencies(spark: Any, root: Path) -> list[float]:
    source, sink = str(root / "src"), str(root / "dst")
    spark.range(1).write.format("delta").save(source)
    query = (
        spark.readStream.format("delta")
        .load(source)
        .writeStream.format("delta")
        .option("checkpointLocation", str(root / "cp_latency"))
        .trigger(processingTime="0 seconds")
        .start(sink)
    )
    reader = spark.read.format("delta")
    latencies = []
    try:
        query.processAllAvailable()
        for i in range(LATENCY_SAMPLES):
            marker = 1_000_000 + i
            start = time.perf_counter()
            spark.range(marker, marker + 1).write.format("delta").mode("append").save(source)
            while reader.load(sink).where(f"id = {marker}").count() == 0:
                time.sleep(0.005)
            latencies.append(time.perf_counter() - start)
    finally:
        query.stop()
    return latencies


def main() -> None:
    spark = bench_session()
    root = Path(tempfile.mkdtemp(prefix="bench-stream-"))
    try:
        path = str(root / "table")
        spark.range(ROWS, numPartitions=FILES).selectExpr(
            "id", "id % 97 AS k", "cast(id AS string) AS s"
        ).write.format("delta").save(path)
        _throughput(spark, path, str(root / "cp_warm"))  # JIT and caches warm
        batch, stream = _throughput(spark, path, str(root / "cp"))
        print(
            f"throughput, {ROWS:,} rows in {FILES} files: batch read {batch:.2f} s "
            f"({ROWS / batch / 1e6:.2f} M rows/s), AvailableNow stream {stream:.2f} s "
            f"({ROWS / stream / 1e6:.2f} M rows/s): stream/batch throughput "
            f"{batch / stream:.2f}x (target >= 0.8x)"
        )
        latencies = sorted(_latencies(spark, root))
        p95 = latencies[min(len(latencies) - 1, round(0.95 * (len(latencies) - 1)))]
        print(
            f"latency of a one-row append through source -> sink ({len(latencies)} appends, "
            f"trigger 0): median {statistics.median(latencies) * 1000:.0f} ms, "
            f"p95 {p95 * 1000:.0f} ms"
        )
    finally:
        spark.stop()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
