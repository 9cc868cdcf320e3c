"""Reads through Spark's planner (the JVM ``delta`` source asking the Python core for files):

- planning + execution of a full-scan aggregate on a 48-file table through ``delta.`path```
  vs ``spark.read.parquet`` on the same files (target ratio <= 1.05);
- a point query on a 10,000-file table (one row per file, stats on ``id``) with nothing
  changed since the last query: the whole query (against plain Parquet reading the same
  files), and the planner's cost per query: its Python callbacks (snapshot brought up to
  date, stats skipping, encoding the kept files) and the relation's session clone. Target
  < 10 ms.

``DELTA_BENCH_ROWS`` overrides the aggregate's row count (default 10,000,000).
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from pyspark.sql import SparkSession

from benchmarks.spark_session import bench_session
from delta_pyspark.spark.sources import callback_service as planner

ROWS = int(os.environ.get("DELTA_BENCH_ROWS", "10000000"))
MANY_FILES = 10_000
QUERIES = 10


def _timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def _many_file_table(path: Path) -> None:
    """A table of ``MANY_FILES`` one-row files (``id`` = file number), written directly:
    10,000 Spark tasks would take minutes."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path.mkdir()
    schema = {"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True}]}
    actions = [
        {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}},
        {
            "metaData": {
                "id": "planner-bench",
                "format": {"provider": "parquet", "options": {}},
                "schemaString": json.dumps(schema),
                "partitionColumns": [],
                "configuration": {},
                "createdTime": 0,
            }
        },
    ]
    for i in range(MANY_FILES):
        name = f"part-{i:05d}.parquet"
        pq.write_table(pa.table({"id": pa.array([i], pa.int64())}), path / name)
        stats = {"numRecords": 1, "minValues": {"id": i}, "maxValues": {"id": i}}
        stats["nullCount"] = {"id": 0}
        add = {"path": name, "partitionValues": {}, "size": (path / name).stat().st_size}
        add |= {"modificationTime": 0, "dataChange": True, "stats": json.dumps(stats)}
        actions.append({"add": add})
    (path / "_delta_log").mkdir()
    lines = "\n".join(json.dumps(a) for a in actions) + "\n"
    (path / "_delta_log" / f"{0:020d}.json").write_text(lines)


def _point_queries(spark: SparkSession, many: Path) -> None:
    """The point query on the 10,000-file table, its per-query cost in the planner's Python
    callbacks (``open`` and ``listFiles``: the snapshot brought up to date, stats skipping,
    encoding the kept files) and its session clone, and the same query on plain Parquet."""
    point = f"SELECT * FROM delta.`{many}` WHERE id = 4242"
    callbacks: list[float] = []
    originals = {name: getattr(planner.DeltaTables, name) for name in ("open", "listFiles")}

    def timing(name: str) -> Callable[..., object]:
        def timed(self: planner.DeltaTables, *args: str) -> object:
            start = time.perf_counter()
            try:
                return originals[name](self, *args)
            finally:
                callbacks.append(time.perf_counter() - start)

        return timed

    for name in originals:
        setattr(planner.DeltaTables, name, timing(name))
    try:
        first = _timed(lambda: spark.sql(point).collect())
        per_query, runs = [], []
        for _ in range(QUERIES):
            callbacks.clear()
            runs.append(_timed(lambda: spark.sql(point).collect()))
            per_query.append(sum(callbacks))
    finally:
        for name, original in originals.items():
            setattr(planner.DeltaTables, name, original)
    assert [r.id for r in spark.sql(point).collect()] == [4242]
    user = spark._jsparkSession  # type: ignore[attr-defined]
    clones = [_timed(lambda: user.cloneSession().sessionState().conf()) for _ in range(QUERIES)]
    plain = f"SELECT * FROM parquet.`{many}` WHERE id = 4242"
    parquet = [_timed(lambda: spark.sql(plain).collect()) for _ in range(3)]
    cost = min(per_query) + min(clones)
    print(
        f"point query on {MANY_FILES:,} files: first {first:.3f} s (snapshot loaded); "
        f"nothing changed: query {min(runs):.3f} s (best of {QUERIES}); the planner's cost "
        f"per query {cost * 1000:.1f} ms (target < 10 ms): Python callbacks "
        f"{min(per_query) * 1000:.1f} ms (median {statistics.median(per_query) * 1000:.1f}), "
        f"session clone through py4j {min(clones) * 1000:.1f} ms; plain Parquet, the same "
        f"query on the same files: {min(parquet):.3f} s (ratio {min(runs) / min(parquet):.3f})"
    )


def main() -> None:
    from pyspark.sql import functions as F

    spark = bench_session()
    work = Path(tempfile.mkdtemp(prefix="delta-bench-"))
    try:
        table = str(work / "wide")
        (
            spark.range(ROWS)
            .select(
                F.col("id"),
                (F.col("id") % 1000).alias("k"),
                (F.rand(7) * 1000).alias("x"),
                F.concat(F.lit("s"), (F.col("id") % 97).cast("string")).alias("s"),
            )
            .repartition(48)
            .write.format("delta")
            .save(table)
        )
        aggregate = "SELECT k % 10 AS g, sum(x), count(DISTINCT s) FROM {} GROUP BY 1"
        delta_sql = aggregate.format(f"delta.`{table}`")
        spark.read.parquet(table).createOrReplaceTempView("plain_parquet")
        parquet_sql = aggregate.format("plain_parquet")
        delta_times, parquet_times = [], []
        for _ in range(6):  # interleaved: both see the same machine state
            parquet_times.append(_timed(lambda: spark.sql(parquet_sql).collect()))
            delta_times.append(_timed(lambda: spark.sql(delta_sql).collect()))
        delta_best, parquet_best = min(delta_times[1:]), min(parquet_times[1:])
        print(
            f"full-scan aggregate, {ROWS:,} rows in 48 files: delta.`path` {delta_best:.3f} s, "
            f"spark.read.parquet {parquet_best:.3f} s, ratio {delta_best / parquet_best:.3f} "
            "(target <= 1.05)"
        )

        many = work / "many"
        _many_file_table(many)
        _point_queries(spark, many)
    finally:
        shutil.rmtree(work, ignore_errors=True)
