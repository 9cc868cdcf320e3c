"""UniForm's overhead: what keeping Iceberg metadata adds to a commit (target <= 10%).

Two tables of the same shape (column mapping ``name``, IcebergCompatV2), one of them with
``delta.universalFormat.enabledFormats = iceberg``. Measured on each, in the same run:

- a one-row append (``INSERT INTO ... VALUES``), the median of ``DELTA_BENCH_APPENDS``
  (default 20) after two warm-ups;
- OPTIMIZE of ``DELTA_BENCH_SMALL_FILES`` (default 1,000) small files into one, after
  one such OPTIMIZE on a third table (the JVM's warm-up falls on neither).

Printed: both times and the ratio UniForm / plain, and the time of the Iceberg conversion
alone for the OPTIMIZE's version (``convert(..., rerun=False)`` re-timed from the commit
before), so the ratio's share is visible.
"""

from __future__ import annotations

import os
import shutil
import statistics
import tempfile
import time
from typing import Any

APPENDS = int(os.environ.get("DELTA_BENCH_APPENDS", "20"))
SMALL_FILES = int(os.environ.get("DELTA_BENCH_SMALL_FILES", "1000"))

_COMPAT = "'delta.enableIcebergCompatV2' = 'true'"
_UNIFORM = _COMPAT + ", 'delta.universalFormat.enabledFormats' = 'iceberg'"


def _create(spark: Any, path: str, properties: str) -> None:
    spark.sql(
        f"CREATE TABLE delta.`{path}` (id BIGINT, v BIGINT, s STRING) USING delta "
        f"TBLPROPERTIES ({properties})"
    )


def _append_latencies(spark: Any, paths: list[str]) -> list[float]:
    """Median one-row append per table, the tables taking turns (so warm-up and other load
    fall on both alike)."""
    times: list[list[float]] = [[] for _ in paths]
    for i in range(APPENDS + 2):
        for n, path in enumerate(paths):
            start = time.perf_counter()
            spark.sql(f"INSERT INTO delta.`{path}` VALUES ({i}, {i * 7}, 'row {i}')")
            times[n].append(time.perf_counter() - start)
    return [statistics.median(t[2:]) for t in times]


def _optimize(spark: Any, path: str) -> float:
    from pyspark.sql import functions as F

    from delta_pyspark.tables import DeltaTable

    (
        spark.range(SMALL_FILES * 100)
        .select("id", (F.col("id") * 7).alias("v"), F.col("id").cast("string").alias("s"))
        .repartition(SMALL_FILES)
        .write.format("delta")
        .mode("append")
        .save(path)
    )
    start = time.perf_counter()
    DeltaTable.forPath(spark, path).optimize().executeCompaction().collect()
    return time.perf_counter() - start


def main() -> None:
    from benchmarks.spark_session import bench_session

    spark = bench_session()
    work = tempfile.mkdtemp(prefix="bench-uniform-")
    try:
        kinds = (("plain", _COMPAT), ("uniform", _UNIFORM))
        for name, properties in kinds:
            _create(spark, f"{work}/{name}", properties)
        appends = _append_latencies(spark, [f"{work}/{name}" for name, _ in kinds])
        _create(spark, f"{work}/warm-up", _COMPAT)
        _optimize(spark, f"{work}/warm-up")  # the JVM's first 1,000-file job, on neither
        results = {
            name: {"append": latency, "optimize": _optimize(spark, f"{work}/{name}")}
            for (name, _), latency in zip(kinds, appends, strict=True)
        }
        for what, label in (("append", "one-row append (median)"),
                            ("optimize", f"OPTIMIZE of {SMALL_FILES:,} files")):  # fmt: skip
            plain, uniform = results["plain"][what], results["uniform"][what]
            print(
                f"   {label:28s} plain {plain * 1000:8.1f} ms  UniForm {uniform * 1000:8.1f} ms"
                f"  ratio {uniform / plain:5.2f}  (target <= 1.10)"
            )
        print(
            f"   conversion alone, OPTIMIZE's version: {_conversion_ms(f'{work}/uniform'):.1f} ms"
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _conversion_ms(path: str) -> float:
    """The Iceberg conversion of the table's last version, on its own: the metadata of the
    version before is made current again, then the last version is converted."""
    from delta_pyspark.core.snapshot.delta_log import DeltaLog
    from delta_pyspark.core.uniform.conversion import VERSION_HINT, convert, metadata_dir

    log = DeltaLog.for_table(path)
    directory = metadata_dir(path)
    numbers = sorted(
        int(n[1:].split(".")[0]) for n in os.listdir(directory) if n.endswith(".metadata.json")
    )
    os.remove(f"{directory}/v{numbers[-1]}.metadata.json")
    with open(f"{directory}/{VERSION_HINT}", "w") as hint:
        hint.write(str(numbers[-2]))
    snapshot = log.snapshot()
    start = time.perf_counter()
    convert(log, snapshot)
    return (time.perf_counter() - start) * 1000
