"""MERGE (upsert) on a 10M-row table: ours vs the ``deltalake`` package, same run.

The target (``id`` long, ``v`` long, ``s`` string, ``d`` double; ids are the even
numbers ``0, 2, ..., 2N-2``) is written once here, range-partitioned and sorted by
``id`` so its files hold disjoint id ranges (a clustered table); each engine merges
into its own copy of that directory. The source holds 1% of the rows with new values
(updates of existing even ids) plus 1% new rows (odd ids, so they fall between the
existing ones), built once per scenario, saved as Parquet and loaded by each engine
(Spark for ours, pyarrow for ``deltalake``).

Two scenarios:

- ``uniform``: updated and inserted ids spread over the whole id range (every file
  is touched);
- ``clustered``: updated and inserted ids within the first 5% of the id range, so
  pruning files by the source's key range matters.

Both engines run ``MERGE ... ON t.id = src.id WHEN MATCHED UPDATE * WHEN NOT MATCHED
INSERT *``. Printed per scenario: wall times and their ratio ours / deltalake (target
<= 1.0), files rewritten (removed) and added vs files in the table for each engine, the
scan/rewrite phase split each engine records in its commit's ``operationMetrics``, and
a check that both tables end with the expected row count and ``sum(v)``.

The source alias is ``src``, not ``s``: the table has a column ``s``, and with a source
alias equal to a target column name our merge does not recognise ``t.id = s.id`` as a
key equality, so it prunes no files (and its transaction reads the whole table).
``DELTA_BENCH_SOURCE_ALIAS=s`` measures that case.

``DELTA_BENCH_ROWS`` overrides the row count (default 10,000,000);
``DELTA_BENCH_FILES`` the number of files in the target (default 48).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from typing import Any

ROWS = int(os.environ.get("DELTA_BENCH_ROWS", "10000000"))
FILES = int(os.environ.get("DELTA_BENCH_FILES", "48"))
FRACTION = 0.01  # of ROWS updated, and of ROWS inserted
CLUSTERED_SPAN = 0.05  # clustered scenario: updates among the first 5% of ids
SEED = 42
ALIAS = os.environ.get("DELTA_BENCH_SOURCE_ALIAS", "src")


def _v(ids: Any) -> Any:
    """The target's original ``v`` for ``ids`` (so the expected sum is known exactly)."""
    return ids % 1000


def _source(path: str, scenario: str) -> tuple[int, int]:
    """Write the source Parquet; (rows, expected sum(v) of the merged table)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(SEED)
    n = max(1, int(ROWS * FRACTION))
    span = ROWS if scenario == "uniform" else max(n, int(ROWS * CLUSTERED_SPAN))
    updated = 2 * rng.choice(span, size=n, replace=False).astype(np.int64)
    inserted = 2 * rng.choice(span, size=n, replace=False).astype(np.int64) + 1
    ids = np.concatenate([updated, inserted])
    rng.shuffle(ids)
    v = rng.integers(1_000_000, 2_000_000, size=ids.size, dtype=np.int64)
    table = pa.table(
        {
            "id": ids,
            "v": v,
            "s": pa.array([f"new{i % 97}" for i in ids.tolist()], pa.string()),
            "d": rng.random(ids.size),
        }
    )
    pq.write_table(table, path)
    before = int(_v(2 * np.arange(ROWS, dtype=np.int64)).sum())
    expected = before - int(_v(updated).sum()) + int(v.sum())
    return ids.size, expected


def _theirs_totals(path: str) -> tuple[int, int]:
    import deltalake
    import pyarrow.compute as pc

    v = deltalake.DeltaTable(path).to_pyarrow_table(columns=["v"]).column("v")
    return len(v), int(pc.sum(v).as_py())


def _ours_totals(spark: Any, path: str) -> tuple[int, int]:
    from pyspark.sql import functions as F

    row = spark.read.format("delta").load(path).agg(F.count("*"), F.sum("v")).first()
    return int(row[0]), int(row[1])


def _run(spark: Any, work: str, base: str, scenario: str) -> None:
    import deltalake
    import pyarrow.parquet as pq

    from delta_pyspark.core.delta_log import DeltaLog
    from delta_pyspark.tables import DeltaTable

    src_path = f"{work}/source_{scenario}.parquet"
    n_source, expected_sum = _source(src_path, scenario)
    ours, theirs = f"{work}/ours_{scenario}", f"{work}/theirs_{scenario}"
    shutil.copytree(base, ours)
    shutil.copytree(base, theirs)
    files_in_table = DeltaLog(ours).snapshot().num_files

    # ours: the source loaded by Spark from the Parquet file, as a user would
    start = time.perf_counter()
    source = spark.read.parquet(src_path)
    (
        DeltaTable.forPath(spark, ours)
        .alias("t")
        .merge(source.alias(ALIAS), f"t.id = {ALIAS}.id")
        .whenMatchedUpdateAll()
        .whenNotMatchedInsertAll()
        .execute()
    )
    t_ours = time.perf_counter() - start
    m_ours = DeltaLog(ours).history(1)[0]["operationMetrics"]

    # deltalake: the source loaded by pyarrow from the same file
    start = time.perf_counter()
    arrow_source = pq.read_table(src_path)
    (
        deltalake.DeltaTable(theirs)
        .merge(arrow_source, f"t.id = {ALIAS}.id", source_alias=ALIAS, target_alias="t")
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .execute()
    )
    t_rs = time.perf_counter() - start
    m_rs = deltalake.DeltaTable(theirs).history(1)[0]["operationMetrics"]

    expected = (ROWS + n_source // 2, expected_sum)
    got_ours, got_rs = _ours_totals(spark, ours), _theirs_totals(theirs)
    ok = got_ours == got_rs == expected

    print(
        f"-- {scenario}: source {n_source:,} rows ({n_source // 2:,} updates + "
        f"{n_source // 2:,} inserts), alias {ALIAS!r}"
    )
    print(
        f"   merge    ours {t_ours:7.2f}s  deltalake {t_rs:7.2f}s  "
        f"ratio {t_ours / t_rs:.3f}  (target <= 1.0)"
    )
    print(
        f"   files    ours rewrote {m_ours['numTargetFilesRemoved']} / {files_in_table} "
        f"(added {m_ours['numTargetFilesAdded']}); deltalake rewrote "
        f"{m_rs.get('num_target_files_removed')} / {files_in_table} "
        f"(added {m_rs.get('num_target_files_added')}; its metrics say scanned "
        f"{m_rs.get('num_target_files_scanned')}, skipped "
        f"{m_rs.get('num_target_files_skipped_during_scan')})"
    )
    print(
        f"   phases   ours scan {m_ours['scanTimeMs']} ms, rewrite {m_ours['rewriteTimeMs']} ms; "
        f"deltalake scan {m_rs.get('scan_time_ms')} ms, rewrite {m_rs.get('rewrite_time_ms')} ms"
    )
    print(
        f"   rows     ours updated {m_ours['numTargetRowsUpdated']} inserted "
        f"{m_ours['numTargetRowsInserted']} copied {m_ours['numTargetRowsCopied']}; deltalake "
        f"updated {m_rs.get('num_target_rows_updated')} inserted "
        f"{m_rs.get('num_target_rows_inserted')} copied {m_rs.get('num_target_rows_copied')}"
    )
    print(
        f"   check    count, sum(v): ours {got_ours}, deltalake {got_rs}, expected {expected}"
        f" -> {'OK' if ok else 'MISMATCH'}"
    )
    shutil.rmtree(ours, ignore_errors=True)
    shutil.rmtree(theirs, ignore_errors=True)


def _warm_up(spark: Any, work: str) -> None:
    """One small merge so JVM class loading and code generation are not timed."""
    from delta_pyspark.tables import DeltaTable

    path = f"{work}/warm"
    spark.range(1000).selectExpr("id", "id AS v").write.format("delta").save(path)
    source = spark.range(990, 1010).selectExpr("id", "id * 2 AS v")
    (
        DeltaTable.forPath(spark, path)
        .alias("t")
        .merge(source.alias("s"), "t.id = s.id")
        .whenMatchedUpdateAll()
        .whenNotMatchedInsertAll()
        .execute()
    )
    shutil.rmtree(path, ignore_errors=True)


def main() -> None:
    from pyspark.sql import functions as F

    from benchmarks.spark_session import bench_session
    from delta_pyspark.core.delta_log import DeltaLog

    spark = bench_session()
    work = tempfile.mkdtemp(prefix="delta-bench-merge-")
    try:
        base = f"{work}/base"
        start = time.perf_counter()
        (
            spark.range(0, 2 * ROWS, 2)
            .select(
                F.col("id"),
                (F.col("id") % 1000).alias("v"),
                F.concat(F.lit("s"), (F.col("id") % 97).cast("string")).alias("s"),
                (F.rand(7) * 1000).alias("d"),
            )
            .repartitionByRange(FILES, "id")
            .sortWithinPartitions("id")
            .write.format("delta")
            .save(base)
        )
        written = time.perf_counter() - start
        files = DeltaLog(base).snapshot().num_files
        print(f"target: {ROWS:,} rows in {files} files sorted by id (written in {written:.1f}s)")
        _warm_up(spark, work)
        for scenario in ("uniform", "clustered"):
            _run(spark, work, base, scenario)
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
