"""DELETE with deletion vectors vs copy-on-write on a 10M-row table, and reads afterwards.

One table (``id`` long, ``v`` long, ``s`` string, ``d`` double) is written once,
range-partitioned by ``id`` into ``DELTA_BENCH_FILES`` files, then copied twice: one
copy gets ``delta.enableDeletionVectors=true`` (a metadata-only commit), the other
stays copy-on-write. Both run the same ``DELETE`` of 0.1% of the rows, scattered over
every file (``id % 1000 = 7``). A third table holds the same surviving rows written
directly, in the same number of files, without vectors. Printed:

- DELETE wall time for each (best of ``REPEATS``, each on a fresh copy, the two modes
  alternating) and the ratio copy-on-write / deletion vectors (target >= 5x), with files
  rewritten and vectors written;
- read time (a full ``count`` and ``sum(v)`` aggregate, best of ``READ_REPEATS``, the
  two tables alternating so both see the same JVM warm-up) of the table with vectors vs
  the table of the same rows without vectors (target <= 1.2x), and a check that all
  three hold the same count and sum.

``DELTA_BENCH_ROWS`` overrides the row count (default 10,000,000);
``DELTA_BENCH_FILES`` the number of files (default 48); ``DELTA_BENCH_REPEATS`` the
DELETE repeats (default 3).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from typing import Any

ROWS = int(os.environ.get("DELTA_BENCH_ROWS", "10000000"))
FILES = int(os.environ.get("DELTA_BENCH_FILES", "48"))
REPEATS = int(os.environ.get("DELTA_BENCH_REPEATS", "3"))
READ_REPEATS = 7
CONDITION = "id % 1000 = 7"  # 0.1% of the rows, in every file


def _enable_vectors(path: str) -> None:
    from delta_pyspark.core.protocol.table_features import with_features
    from delta_pyspark.core.snapshot.delta_log import DeltaLog
    from delta_pyspark.core.transaction.optimistic_transaction import Transaction

    log = DeltaLog(path)
    snap = log.snapshot()
    txn = Transaction(log, snap)
    conf = dict(snap.configuration) | {"delta.enableDeletionVectors": "true"}
    txn.update_metadata(snap.metadata.with_changes(configuration=conf))
    txn.update_protocol(with_features(snap.protocol, {"deletionVectors"}))
    txn.commit("SET TBLPROPERTIES", {"properties": conf})


def _timed(fn: Any) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def _read(spark: Any, path: str) -> tuple[float, tuple[int, int]]:
    from pyspark.sql import functions as F

    start = time.perf_counter()
    row = spark.read.format("delta").load(path).agg(F.count("*"), F.sum("v")).first()
    return time.perf_counter() - start, (int(row[0]), int(row[1]))


def main() -> None:
    from benchmarks.spark_session import bench_session
    from delta_pyspark.core.snapshot.delta_log import DeltaLog
    from delta_pyspark.tables import DeltaTable

    spark = bench_session()
    root = tempfile.mkdtemp(prefix="bench-dv-")
    try:
        base = f"{root}/base"
        df = spark.range(ROWS).selectExpr(
            "id", "id % 1000003 AS v", "CONCAT('s', CAST(id % 97 AS STRING)) AS s", "rand(7) AS d"
        )
        df.repartitionByRange(FILES, "id").write.format("delta").save(base)
        clean = f"{root}/clean"
        survivors = spark.read.format("delta").load(base).where(f"NOT ({CONDITION})")
        survivors.repartitionByRange(FILES, "id").write.format("delta").save(clean)
        cow, dv = f"{root}/cow", f"{root}/dv"
        print(f"rows={ROWS:,} files={FILES} delete: {CONDITION}")

        best = {"copy-on-write": float("inf"), "deletion vectors": float("inf")}
        for _ in range(REPEATS):
            for name, path in (("copy-on-write", cow), ("deletion vectors", dv)):
                shutil.rmtree(path, ignore_errors=True)
                shutil.copytree(base, path)
                if path == dv:
                    _enable_vectors(path)
                seconds = _timed(lambda p=path: DeltaTable.forPath(spark, p).delete(CONDITION))
                best[name] = min(best[name], seconds)
        for name, path in (("copy-on-write", cow), ("deletion vectors", dv)):
            m = DeltaLog(path).history(1)[0]["operationMetrics"]
            print(
                f"  DELETE {name:>16}: {best[name]:6.2f}s  deleted={m.get('numDeletedRows')} "
                f"files removed={m.get('numRemovedFiles')} added={m.get('numAddedFiles')} "
                f"vectors added={m.get('numDeletionVectorsAdded', 0)}"
            )
        speedup = best["copy-on-write"] / best["deletion vectors"]
        print(f"  speed-up copy-on-write / deletion vectors: {speedup:.1f}x (target >= 5x)")

        _, cow_result = _read(spark, cow)
        clean_time = dv_time = float("inf")
        for _ in range(READ_REPEATS):
            seconds, clean_result = _read(spark, clean)
            clean_time = min(clean_time, seconds)
            seconds, dv_result = _read(spark, dv)
            dv_time = min(dv_time, seconds)
        assert cow_result == dv_result == clean_result, (cow_result, dv_result, clean_result)
        print(
            f"  read count+sum: with vectors {dv_time:.2f}s, same rows in {FILES} files without "
            f"vectors {clean_time:.2f}s, ratio {dv_time / clean_time:.2f}x (target <= 1.2x)"
        )
        print(f"  both hold count={dv_result[0]:,} sum(v)={dv_result[1]:,}")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
