"""MERGE (upsert) on a 10M-row table: ours vs the ``deltalake`` package, same run.

The target (``id`` long, ``v`` long, ``s`` string, ``d`` double; ids are the even
numbers ``0, 2, ..., 2N-2``) is written once here, range-partitioned and sorted by
``id`` so its files hold disjoint id ranges (a clustered table); each engine merges
into its own copy of that directory. The source holds 1% of the rows with new values
(updates of existing even ids) plus 1% new rows (odd ids, so they fall between the
existing ones), built once per scenario, saved as Parquet and loaded by each engine
(Spark for ours, pyarrow for ``deltalake``).

Scenarios:

- ``uniform``: updated and inserted ids spread over the whole id range (every file
  is touched);
- ``clustered``: updated and inserted ids within the first 5% of the id range, so
  pruning files by the source's key range matters;
- ``uniform-dv``: the uniform source merged into a copy of the target written with
  ``delta.enableDeletionVectors=true``: our merge marks the matched rows in deletion
  vectors and writes only the new and updated rows; ``deltalake`` (which does not
  write deletion vectors) merges into its copy of the same table by rewriting files.
- ``conditional`` and ``conditional-dv``: the uniform source, merged with conditional
  clauses (``WHEN MATCHED AND src.v % 2 = 0 UPDATE *``, ``WHEN MATCHED AND src.v % 2 = 1
  DELETE``, ``WHEN NOT MATCHED AND src.v % 3 != 0 INSERT *``): the shape our one-pass
  upsert does not take.

The other scenarios run ``MERGE ... ON t.id = src.id WHEN MATCHED UPDATE * WHEN NOT
MATCHED INSERT *`` on both engines. Printed per scenario: wall times and their ratio
ours / deltalake (the target with deletion vectors: <= 1.0), files rewritten (removed) and
added vs files in the table for each engine, the scan/rewrite phase split each engine
records in its commit's ``operationMetrics``, and a check that both tables end with the
expected row count and ``sum(v)`` (computed from the source).

The source alias is ``src``; ``DELTA_BENCH_SOURCE_ALIAS=s`` names the source like the
table's column ``s``, which once hid the key equality from our file pruning (now found
whatever the aliases: ``tests/spark/commands/test_merge_one_pass.py`` merges ``AS s``).

Each scenario also times plain Spark on the files ``deltalake``'s merge rewrote (found by
one untimed merge of its own first): a broadcast join of their ``id`` column with the
source's (the least any Spark merge does to find the matched rows) and, for copy-on-write,
a read and write of those files as Parquet (the least it does to rewrite them). Their sum
against ``deltalake``'s merge shows how close to the target a Spark data path can get. For
copy-on-write it also times the least a single Spark pass does (the one-pass floor, the
copy-on-write target's baseline): materialise the source (a local checkpoint, as a merge of
a non-Delta source must) and rewrite the files in one broadcast left-outer join with it,
inserting nothing; a merge does at least that much.

The sides take turns (``benchmarks.turns``): each round runs our merge, ``deltalake``'s and
the floors once each, every merge on a fresh copy of the target and every run after an
``os.sync()``, so a slow spell of the machine falls on all of them alike.
``DELTA_BENCH_WARMUP_RUNS`` rounds (default 3) come first, untimed, so the timed ones
measure a warm process: for Spark, class loading, code generation and the JIT of its
Parquet, join and write loops. (After one merge on a 1M-row table, the earlier warm-up, our
timed clustered runs still fell from 2.5 s to 1.3 s over five runs.)
``DELTA_BENCH_REPEATS`` rounds (default 1) are then timed; printed are each side's best,
median and every run, and the ratios of the bests and of the medians.

``DELTA_BENCH_ROWS`` overrides the row count (default 10,000,000);
``DELTA_BENCH_FILES`` the number of files in the target (default 48);
``DELTA_BENCH_SCENARIOS`` a comma-separated subset of the scenarios.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Callable
from typing import Any

from benchmarks.turns import ratio, spread, taking_turns, timed

ROWS = int(os.environ.get("DELTA_BENCH_ROWS", "10000000"))
FILES = int(os.environ.get("DELTA_BENCH_FILES", "48"))
FRACTION = 0.01  # of ROWS updated, and of ROWS inserted
CLUSTERED_SPAN = 0.05  # clustered scenario: updates among the first 5% of ids
SEED = 42
ALIAS = os.environ.get("DELTA_BENCH_SOURCE_ALIAS", "src")
WARMUP_RUNS = max(0, int(os.environ.get("DELTA_BENCH_WARMUP_RUNS", "3")))
REPEATS = max(1, int(os.environ.get("DELTA_BENCH_REPEATS", "1")))
SCENARIOS = ("uniform", "clustered", "uniform-dv", "conditional", "conditional-dv")


def _v(ids: Any) -> Any:
    """The target's original ``v`` for ``ids`` (so the expected sum is known exactly)."""
    return ids % 1000


def _conditional(scenario: str) -> bool:
    return scenario.startswith("conditional")


def _source(path: str, scenario: str) -> tuple[int, tuple[int, int]]:
    """Write the source Parquet for the ``ROWS``-row target; (rows, expected count(*) and
    sum(v) of the merged table)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = ROWS
    rng = np.random.default_rng(SEED)
    n = max(1, int(rows * FRACTION))
    span = rows if not scenario.startswith("clustered") else max(n, int(rows * CLUSTERED_SPAN))
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
    before = int(_v(2 * np.arange(rows, dtype=np.int64)).sum())
    if not _conditional(scenario):
        return ids.size, (rows + n, before - int(_v(updated).sum()) + int(v.sum()))
    # CONDITIONAL_CLAUSES: matched rows with an even new v are updated, the others deleted;
    # new rows are inserted unless their v is a multiple of 3
    new_v = dict(zip(ids.tolist(), v.tolist(), strict=True))
    upd_v = np.array([new_v[i] for i in updated.tolist()], dtype=np.int64)
    ins_v = np.array([new_v[i] for i in inserted.tolist()], dtype=np.int64)
    kept = upd_v % 2 == 0
    inserts = ins_v % 3 != 0
    count = rows - int((~kept).sum()) + int(inserts.sum())
    total = before - int(_v(updated).sum()) + int(upd_v[kept].sum()) + int(ins_v[inserts].sum())
    return ids.size, (count, total)


def _theirs_totals(path: str) -> tuple[int, int]:
    """count(*), sum(v) as ``deltalake``'s query engine reads the table (its pyarrow
    reader refuses tables with the deletion-vector reader feature)."""
    import deltalake
    import pyarrow as pa

    query = deltalake.QueryBuilder().register("t", deltalake.DeltaTable(path))
    result = pa.table(query.execute("SELECT count(*) AS n, sum(v) AS v FROM t").read_all())
    row = result.to_pylist()[0]
    return int(row["n"]), int(row["v"])


def _ours_totals(spark: Any, path: str) -> tuple[int, int]:
    from pyspark.sql import functions as F

    row = spark.read.format("delta").load(path).agg(F.count("*"), F.sum("v")).first()
    return int(row[0]), int(row[1])


def _merge_ours(spark: Any, path: str, src_path: str, conditional: bool) -> float:
    from delta_pyspark.tables import DeltaTable

    start = time.perf_counter()
    source = spark.read.parquet(src_path)  # loaded by Spark, as a user would
    merge = (
        DeltaTable.forPath(spark, path).alias("t").merge(source.alias(ALIAS), f"t.id = {ALIAS}.id")
    )
    if conditional:
        update, delete, insert = _conditions()
        merge = (
            merge.whenMatchedUpdateAll(update)
            .whenMatchedDelete(delete)
            .whenNotMatchedInsertAll(insert)
        )
    else:
        merge = merge.whenMatchedUpdateAll().whenNotMatchedInsertAll()
    merge.execute()
    return time.perf_counter() - start


def _conditions() -> tuple[str, str, str]:
    """The conditional scenarios' clauses: update, delete, insert."""
    return f"{ALIAS}.v % 2 = 0", f"{ALIAS}.v % 2 = 1", f"{ALIAS}.v % 3 != 0"


def _merge_theirs(path: str, src_path: str, conditional: bool) -> float:
    import deltalake
    import pyarrow.parquet as pq

    start = time.perf_counter()
    arrow_source = pq.read_table(src_path)  # the same file, loaded by pyarrow
    merge = deltalake.DeltaTable(path).merge(
        arrow_source, f"t.id = {ALIAS}.id", source_alias=ALIAS, target_alias="t"
    )
    if conditional:
        update, delete, insert = _conditions()
        merge = (
            merge.when_matched_update_all(predicate=update)
            .when_matched_delete(predicate=delete)
            .when_not_matched_insert_all(predicate=insert)
        )
    else:
        merge = merge.when_matched_update_all().when_not_matched_insert_all()
    merge.execute()
    return time.perf_counter() - start


def _on_copy(merge: Callable[[str], float], base: str, path: str) -> Callable[[], float]:
    """``merge(path)`` on a fresh copy of ``base`` (the copy not timed); the last copy is
    left in place."""

    def run() -> float:
        shutil.rmtree(path, ignore_errors=True)
        shutil.copytree(base, path)
        return merge(path)

    return run


def _run(spark: Any, work: str, base: str, scenario: str) -> None:
    import deltalake

    from delta_pyspark.core.snapshot.delta_log import DeltaLog

    src_path = f"{work}/source_{scenario}.parquet"
    n_source, expected = _source(src_path, scenario)
    conditional = _conditional(scenario)
    cow = not scenario.endswith("-dv")
    ours, theirs = f"{work}/ours_{scenario}", f"{work}/theirs_{scenario}"
    files_in_table = DeltaLog(base).snapshot().num_files
    merge_theirs = _on_copy(lambda p: _merge_theirs(p, src_path, conditional), base, theirs)
    merge_theirs()  # untimed: which files its merge rewrites, for the floors
    rewritten = _rewritten_by_theirs(base, theirs)
    cow = cow and bool(rewritten)  # the copy-on-write floors rewrite these files
    sides: dict[str, Callable[[], float]] = {
        "ours": _on_copy(lambda p: _merge_ours(spark, p, src_path, conditional), base, ours),
        "deltalake": merge_theirs,
        "match": lambda: timed(lambda: _spark_match(spark, rewritten, src_path)),
    }
    materialised: list[float] = []
    if cow:
        sides["copy"] = lambda: timed(lambda: _spark_copy(spark, rewritten, work))
        sides["one pass"] = lambda: _one_pass(spark, rewritten, src_path, work, materialised)
    times = taking_turns(sides, REPEATS, WARMUP_RUNS)
    m_ours = DeltaLog(ours).history(1)[0]["operationMetrics"]
    m_rs = deltalake.DeltaTable(theirs).history(1)[0]["operationMetrics"]
    t_ours, t_rs = times["ours"], times["deltalake"]

    got_ours, got_rs = _ours_totals(spark, ours), _theirs_totals(theirs)
    ours_by_rs = _theirs_totals(ours)  # deltalake reads our result (vectors included)
    ok = got_ours == got_rs == ours_by_rs == expected
    best_rs = min(t_rs)

    print(
        f"-- {scenario}: source {n_source:,} rows ({n_source // 2:,} matching + "
        f"{n_source // 2:,} new), alias {ALIAS!r}"
        + (
            ", clauses: update when {}, delete when {}, insert when {}".format(*_conditions())
            if conditional
            else ""
        )
    )
    print(
        f"   merge    ours {min(t_ours):7.2f}s{spread(t_ours)}  deltalake {best_rs:7.2f}s"
        f"{spread(t_rs)}  {ratio(t_ours, t_rs)}  (target <= 1.0)"
    )
    print(
        f"   files    ours rewrote {m_ours['numTargetFilesRemoved']} / {files_in_table} "
        f"(added {m_ours['numTargetFilesAdded']}"
        + (
            f", deletion vectors added {m_ours['numTargetDeletionVectorsAdded']}"
            if "numTargetDeletionVectorsAdded" in m_ours
            else ""
        )
        + f"); deltalake rewrote {m_rs.get('num_target_files_removed')} / {files_in_table} "
        f"(added {m_rs.get('num_target_files_added')}; its metrics say scanned "
        f"{m_rs.get('num_target_files_scanned')}, skipped "
        f"{m_rs.get('num_target_files_skipped_during_scan')})"
    )
    print(
        f"   phases   ours scan {m_ours['scanTimeMs']} ms, rewrite {m_ours['rewriteTimeMs']} ms; "
        f"deltalake scan {m_rs.get('scan_time_ms')} ms, rewrite {m_rs.get('rewrite_time_ms')} ms"
        " (last run of each)"
    )
    match = min(times["match"])
    floor = f"joining their ids with the source's {match:.2f}s"
    if cow:
        copy = min(times["copy"])
        floor += (
            f", copying them (read + write Parquet) {copy:.2f}s; their sum "
            f"{match + copy:.2f}s is {(match + copy) / best_rs:.2f}x deltalake's whole merge"
        )
    print(f"   floor    plain Spark on the {len(rewritten)} files deltalake rewrote: {floor}")
    if cow:
        whole, source_s = times["one pass"], min(materialised[-REPEATS:])  # the timed rounds
        print(
            f"   one pass plain Spark materialising the source ({source_s:.2f}s at best) and"
            f" rewriting the {len(rewritten)} files in one broadcast left-outer join "
            f"with it, inserting nothing: {min(whole):.2f}s{spread(whole)}, "
            f"{min(whole) / best_rs:.2f}x deltalake's whole merge; ours / one pass: "
            f"{ratio(t_ours, whole)} (target <= 1.1)"
        )
    print(
        f"   rows     ours updated {m_ours['numTargetRowsUpdated']} inserted "
        f"{m_ours['numTargetRowsInserted']} copied {m_ours['numTargetRowsCopied']}; deltalake "
        f"updated {m_rs.get('num_target_rows_updated')} inserted "
        f"{m_rs.get('num_target_rows_inserted')} copied {m_rs.get('num_target_rows_copied')}"
    )
    print(
        f"   check    count, sum(v): ours {got_ours} (read by deltalake {ours_by_rs}), "
        f"deltalake {got_rs}, expected {expected} -> {'OK' if ok else 'MISMATCH'}"
    )
    shutil.rmtree(ours, ignore_errors=True)
    shutil.rmtree(theirs, ignore_errors=True)


def _rewritten_by_theirs(base: str, theirs: str) -> list[str]:
    """Absolute paths (in ``base``) of the data files ``deltalake``'s merge replaced."""
    from delta_pyspark.core.snapshot.delta_log import DeltaLog

    def paths(table: str) -> set[str]:
        return set(DeltaLog(table).snapshot().files.column("path").to_pylist())

    return sorted(f"{base}/{p}" for p in paths(base) - paths(theirs))


def _spark_match(spark: Any, files: list[str], src_path: str) -> None:
    """The least a Spark merge does to find the matched rows: a broadcast join of the
    files' ids with the source's."""
    from pyspark.sql import functions as F

    if files:
        source = F.broadcast(spark.read.parquet(src_path).select("id"))
        spark.read.parquet(*files).select("id").join(source, "id").count()


def _spark_copy(spark: Any, files: list[str], work: str) -> None:
    """The least a copy-on-write merge does to rewrite ``files``: read and write them."""
    out = f"{work}/floor_copy"
    shutil.rmtree(out, ignore_errors=True)
    if files:
        spark.read.parquet(*files).write.parquet(out)
    shutil.rmtree(out, ignore_errors=True)


def _one_pass(
    spark: Any, files: list[str], src_path: str, work: str, materialised: list[float]
) -> float:
    """The seconds of the least one Spark pass over ``files`` does for a copy-on-write
    merge; the seconds it spent materialising the source are appended to ``materialised``."""
    from pyspark.sql import functions as F

    out = f"{work}/floor_one_pass"
    shutil.rmtree(out, ignore_errors=True)
    start = time.perf_counter()
    marked = spark.read.parquet(src_path).withColumn("mark", F.monotonically_increasing_id())
    source = marked.localCheckpoint()
    materialised.append(time.perf_counter() - start)
    target = spark.read.parquet(*files)
    joined = target.alias("t").join(
        F.broadcast(source.alias("s")), F.col("t.id") == F.col("s.id"), "left_outer"
    )
    matched = F.col("s.mark").isNotNull()
    values = [
        F.when(matched, F.col(f"s.{c}")).otherwise(F.col(f"t.{c}")).alias(c) for c in target.columns
    ]
    joined.select(*values).write.parquet(out)
    elapsed = time.perf_counter() - start
    shutil.rmtree(out, ignore_errors=True)
    return elapsed


def _write_target(spark: Any, path: str, rows: int, files: int, dv: bool) -> None:
    from pyspark.sql import functions as F

    writer = (
        spark.range(0, 2 * rows, 2)
        .select(
            F.col("id"),
            _v(F.col("id")).alias("v"),
            F.concat(F.lit("s"), (F.col("id") % 97).cast("string")).alias("s"),
            (F.rand(7) * 1000).alias("d"),
        )
        .repartitionByRange(files, "id")
        .sortWithinPartitions("id")
        .write.format("delta")
    )
    if dv:
        writer = writer.option("delta.enableDeletionVectors", "true")
    writer.save(path)


def main() -> None:
    from benchmarks.spark_session import bench_session
    from delta_pyspark.core.snapshot.delta_log import DeltaLog

    chosen = os.environ.get("DELTA_BENCH_SCENARIOS")
    scenarios = [s.strip() for s in chosen.split(",")] if chosen else list(SCENARIOS)
    unknown = sorted(set(scenarios) - set(SCENARIOS))
    if unknown:
        raise SystemExit(f"unknown scenario(s) {unknown}; known: {', '.join(SCENARIOS)}")
    spark = bench_session()
    work = tempfile.mkdtemp(prefix="delta-bench-merge-")
    try:
        bases: dict[bool, str] = {}
        for dv in sorted({s.endswith("-dv") for s in scenarios}):
            bases[dv] = f"{work}/base{'_dv' if dv else ''}"
            start = time.perf_counter()
            _write_target(spark, bases[dv], ROWS, FILES, dv)
            written = time.perf_counter() - start
            files = DeltaLog(bases[dv]).snapshot().num_files
            print(
                f"target{' (deletion vectors enabled)' if dv else ''}: {ROWS:,} rows in "
                f"{files} files sorted by id (written in {written:.1f}s)"
            )
        print(f"each merge: {WARMUP_RUNS} untimed warm-up run(s), then {REPEATS} timed")
        for scenario in scenarios:
            _run(spark, work, bases[scenario.endswith("-dv")], scenario)
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
