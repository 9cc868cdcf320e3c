"""Row tracking's cost on rewrites: OPTIMIZE and a copy-on-write UPDATE of the same table
with and without ``delta.enableRowTracking`` (which makes them read each row's stable id
through a join on the file path and write two more columns).

``DELTA_BENCH_ROWS`` rows (default 1,000,000) of ``(id, v)`` in 20 files; OPTIMIZE
compacts them, then ``UPDATE ... WHERE id % 10 = 0`` rewrites the result. Each variant
runs twice (fresh tables) and the second run is printed with the ratio tracked / plain.
A run is valid when the tracked table's row ids after both rewrites are the ids before.

    python -m benchmarks row_tracking
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from typing import Any

ROWS = int(os.environ.get("DELTA_BENCH_ROWS", "1000000"))


def _run(spark: Any, root: str, tracked: bool) -> tuple[float, float, bool]:
    from delta_pyspark.tables import DeltaTable

    path = tempfile.mkdtemp(dir=root) + "/t"
    writer = spark.range(ROWS).selectExpr("id", "concat('v', id) AS v").repartition(20).write
    if tracked:
        writer = writer.option("delta.enableRowTracking", "true")
    writer.format("delta").save(path)
    table = DeltaTable.forPath(spark, path)

    def ids() -> Any:
        rows = spark.read.format("delta").load(path)
        return rows.selectExpr("sum(id * _metadata.row_id)").first()[0]

    before = ids() if tracked else None
    start = time.monotonic()
    table.optimize().executeCompaction()
    optimize = time.monotonic() - start
    start = time.monotonic()
    table.update("id % 10 = 0", {"v": "'x'"})
    update = time.monotonic() - start
    return optimize, update, (not tracked) or ids() == before


def main(argv: list[str] | None = None) -> None:
    from benchmarks.spark_session import bench_session

    spark = bench_session()
    root = tempfile.mkdtemp(prefix="delta-bench-rt-")
    try:
        results = {}
        for tracked in (False, True, False, True):  # second run of each counts (warm JVM)
            results[tracked] = _run(spark, root, tracked)
        (o0, u0, _), (o1, u1, valid) = results[False], results[True]
        print(f"rows={ROWS} OPTIMIZE plain={o0:.2f}s tracked={o1:.2f}s ratio={o1 / o0:.2f}")
        print(f"rows={ROWS} UPDATE   plain={u0:.2f}s tracked={u1:.2f}s ratio={u1 / u0:.2f}")
        print(f"row ids preserved: {valid}")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
