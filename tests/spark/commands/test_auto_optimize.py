"""Auto-optimize on the write path: optimized writes, auto compaction, staging clean-up."""

from __future__ import annotations

import json
import logging
import os
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from commit_hooks import before_commit

from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.tables import DeltaTable

OPTIMIZE_WRITE = "spark.databricks.delta.optimizeWrite.enabled"
BIN_SIZE = "spark.databricks.delta.optimizeWrite.binSize"
AUTO_COMPACT = "spark.databricks.delta.autoCompact.enabled"
MIN_NUM_FILES = "spark.databricks.delta.autoCompact.minNumFiles"
ADVISORY = "spark.sql.adaptive.advisoryPartitionSizeInBytes"


def _df(spark: Any, start: int, end: int, tasks: int) -> Any:
    from pyspark.sql import functions as F

    return spark.range(start, end, numPartitions=tasks).select(
        "id",
        (F.col("id") % 3).cast("int").alias("p"),
        F.sha2(F.col("id").cast("string"), 256).alias("s"),
    )


def _per_partition(path: str) -> Counter[str | None]:
    files = DeltaLog(path).snapshot().files
    return Counter(dict(pv or []).get("p") for pv in files.column("partitionValues").to_pylist())


def _rows(spark: Any, path: str) -> list[tuple]:
    return sorted(tuple(r) for r in spark.read.format("delta").load(path).collect())


def _history(spark: Any, path: str) -> list[Any]:
    return DeltaTable.forPath(spark, path).history().collect()


# ----------------------------------------------------------------------------- optimizeWrite


def test_optimized_write_by_table_property_gives_one_file_per_partition(
    spark: Any, tmp_path: Path
) -> None:
    plain, optimized = str(tmp_path / "plain"), str(tmp_path / "opt")
    df = _df(spark, 0, 3000, tasks=8)
    df.write.format("delta").partitionBy("p").save(plain)
    (
        df.write.format("delta")
        .partitionBy("p")
        .option("delta.autoOptimize.optimizeWrite", "true")
        .save(optimized)
    )
    assert _per_partition(plain) == {"0": 8, "1": 8, "2": 8}
    assert _per_partition(optimized) == {"0": 1, "1": 1, "2": 1}
    assert _rows(spark, optimized) == _rows(spark, plain)
    assert DeltaLog(optimized).snapshot().configuration["delta.autoOptimize.optimizeWrite"] == (
        "true"
    )
    # every later write into the table is optimized too
    _df(spark, 3000, 3600, tasks=6).write.format("delta").mode("append").save(optimized)
    assert _per_partition(optimized) == {"0": 2, "1": 2, "2": 2}
    assert len(_rows(spark, optimized)) == 3600


def test_optimized_write_by_session_conf_and_write_option(
    spark: Any, tmp_path: Path, conf: Any
) -> None:
    conf(OPTIMIZE_WRITE, "true")
    on, off = str(tmp_path / "on"), str(tmp_path / "off")
    _df(spark, 0, 2000, tasks=8).write.format("delta").save(on)
    assert DeltaLog(on).snapshot().num_files == 1
    _df(spark, 0, 2000, tasks=8).write.format("delta").option("optimizeWrite", "false").save(off)
    assert DeltaLog(off).snapshot().num_files == 8
    assert _rows(spark, on) == _rows(spark, off)


def test_optimized_write_splits_partitions_larger_than_the_bin_size(
    spark: Any, tmp_path: Path, conf: Any
) -> None:
    path = str(tmp_path / "t")
    advisory = spark.conf.get(ADVISORY)
    conf(OPTIMIZE_WRITE, "true")
    conf(BIN_SIZE, "256k")
    df = _df(spark, 0, 60000, tasks=8)
    df.write.format("delta").partitionBy("p").save(path)
    counts = _per_partition(path)
    assert set(counts) == {"0", "1", "2"}
    # ~1.5 MB of shuffled rows per partition, cut near 256 KB (at most one cut per map task)
    assert all(2 <= n <= 8 for n in counts.values()), counts
    files = DeltaLog(path).snapshot().files
    assert max(files.column("size").to_pylist()) < 1024 * 1024
    assert len(_rows(spark, path)) == 60000
    assert spark.conf.get(ADVISORY) == advisory  # the session's own setting is back


def test_dml_rewrites_are_optimized_writes_too(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    _df(spark, 0, 2000, tasks=8).write.format("delta").save(path)
    assert DeltaLog(path).snapshot().num_files == 8
    dt = DeltaTable.forPath(spark, path)
    dt.setProperties({"delta.autoOptimize.optimizeWrite": "true"})
    dt.delete("id % 2 = 0")
    assert DeltaLog(path).snapshot().num_files == 1
    assert [r[0] for r in _rows(spark, path)] == list(range(1, 2000, 2))


# ----------------------------------------------------------------------------- autoCompact


def test_auto_compaction_runs_once_enough_small_files_pile_up(
    spark: Any, tmp_path: Path, conf: Any
) -> None:
    path = str(tmp_path / "t")
    conf(MIN_NUM_FILES, "5")
    (
        _df(spark, 0, 600, tasks=2)
        .write.format("delta")
        .partitionBy("p")
        .option("delta.autoOptimize.autoCompact", "true")
        .save(path)
    )
    assert _per_partition(path) == {"0": 2, "1": 2, "2": 2}  # below the threshold
    assert [h.operation for h in _history(spark, path)] == ["WRITE"]

    _df(spark, 600, 1200, tasks=3).write.format("delta").mode("append").save(path)

    history = _history(spark, path)
    assert [h.operation for h in history] == ["OPTIMIZE", "WRITE", "WRITE"]
    assert history[0].operationParameters["auto"] == "true"
    assert history[0].operationMetrics["numRemovedFiles"] == "15"
    assert history[0].operationMetrics["numAddedFiles"] == "3"
    assert _per_partition(path) == {"0": 1, "1": 1, "2": 1}
    assert [r[0] for r in _rows(spark, path)] == list(range(1200))
    log = Path(path, "_delta_log", f"{history[0].version:020d}.json").read_text()
    adds = [json.loads(line)["add"] for line in log.splitlines() if '"add"' in line[:8]]
    assert adds and all(a["dataChange"] is False for a in adds)


@pytest.mark.parametrize("operation", ["DELETE", "UPDATE", "MERGE"])
def test_auto_compaction_runs_after_dml(
    spark: Any, tmp_path: Path, conf: Any, operation: str
) -> None:
    path = str(tmp_path / "t")
    conf(MIN_NUM_FILES, "5")
    writer = _df(spark, 0, 400, tasks=4).write.format("delta")
    writer.option("delta.autoOptimize.autoCompact", "true").save(path)
    assert DeltaLog(path).snapshot().num_files == 4  # below the threshold: no compaction
    expected = {r[0]: (r[1], r[2]) for r in _rows(spark, path)}
    conf(MIN_NUM_FILES, "2")
    dt = DeltaTable.forPath(spark, path)
    if operation == "DELETE":
        dt.delete("id % 7 = 0")
        expected = {k: v for k, v in expected.items() if k % 7}
    elif operation == "UPDATE":
        dt.update("id % 7 = 0", {"p": "p + 10"})
        expected = {k: (v[0] + 10 if k % 7 == 0 else v[0], v[1]) for k, v in expected.items()}
    else:
        source = _df(spark, 350, 450, tasks=2).selectExpr("id", "p + 20 AS p", "s")
        (
            dt.alias("t")
            .merge(source.alias("u"), "t.id = u.id")
            .whenMatchedUpdateAll()
            .whenNotMatchedInsertAll()
            .execute()
        )
        expected |= {i: (i % 3 + 20, v[1]) for i, v in expected.items() if i >= 350}
        expected |= {r[0]: (r[1], r[2]) for r in source.where("id >= 400").collect()}
    history = _history(spark, path)
    assert [h.operation for h in history] == ["OPTIMIZE", operation, "WRITE"]
    assert history[0].operationParameters["auto"] == "true"
    assert DeltaLog(path).snapshot().num_files == 1
    assert _rows(spark, path) == sorted((k, *v) for k, v in expected.items())


def test_auto_compaction_waits_for_min_num_files(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    writer = _df(spark, 0, 300, tasks=4).write.format("delta")
    writer.option("delta.autoOptimize.autoCompact", "true").save(path)
    for i in range(3):
        _df(spark, 300 + i * 100, 400 + i * 100, tasks=4).write.format("delta").mode("append").save(
            path
        )
    assert DeltaLog(path).snapshot().num_files == 16  # default minNumFiles is 50
    assert {h.operation for h in _history(spark, path)} == {"WRITE"}


def test_auto_compaction_only_touches_written_partitions(
    spark: Any, tmp_path: Path, conf: Any
) -> None:
    path = str(tmp_path / "t")
    conf(MIN_NUM_FILES, "4")
    _df(spark, 0, 900, tasks=5).write.format("delta").partitionBy("p").save(path)
    DeltaTable.forPath(spark, path).setProperties({"delta.autoOptimize.autoCompact": "true"})
    rows = _rows(spark, path)
    extra = _df(spark, 900, 960, tasks=1).where("p = 0")
    extra.write.format("delta").mode("append").save(path)
    assert _per_partition(path) == {"0": 1, "1": 5, "2": 5}
    assert _rows(spark, path) == sorted(rows + [tuple(r) for r in extra.collect()])


def test_session_conf_overrides_the_table_property(spark: Any, tmp_path: Path, conf: Any) -> None:
    on_prop, on_conf = str(tmp_path / "prop"), str(tmp_path / "conf")
    conf(MIN_NUM_FILES, "3")
    conf(AUTO_COMPACT, "false")
    writer = _df(spark, 0, 300, tasks=4).write.format("delta")
    writer.option("delta.autoOptimize.autoCompact", "true").save(on_prop)
    assert DeltaLog(on_prop).snapshot().num_files == 4  # conf false beats property true
    conf(AUTO_COMPACT, "true")
    _df(spark, 0, 300, tasks=4).write.format("delta").save(on_conf)
    assert DeltaLog(on_conf).snapshot().num_files == 1
    assert _history(spark, on_conf)[0].operation == "OPTIMIZE"


def test_auto_compaction_conflict_never_fails_the_write(
    spark: Any, tmp_path: Path, conf: Any, caplog: Any
) -> None:
    path = str(tmp_path / "t")
    conf(MIN_NUM_FILES, "3")
    _df(spark, 0, 600, tasks=2).write.format("delta").partitionBy("p").save(path)
    DeltaTable.forPath(spark, path).setProperties({"delta.autoOptimize.autoCompact": "true"})

    def concurrent_delete() -> None:  # removes files the compaction is about to replace
        DeltaTable.forPath(spark, path).delete("p = 1")

    with (
        caplog.at_level(logging.WARNING, logger="delta_pyspark.spark.commands.auto_compact"),
        before_commit(concurrent_delete, "OPTIMIZE"),
    ):
        _df(spark, 600, 900, tasks=2).write.format("delta").mode("append").save(path)

    ops = [h.operation for h in _history(spark, path)]
    assert ops[:2] == ["DELETE", "WRITE"] and "OPTIMIZE" not in ops
    assert any("auto compaction" in r.getMessage() for r in caplog.records)
    ids = [r[0] for r in _rows(spark, path)]
    assert ids == [i for i in range(900) if i % 3 != 1]


# ----------------------------------------------------------------------------- staging


def test_writes_leave_no_staging_directory(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    _df(spark, 0, 100, tasks=2).write.format("delta").partitionBy("p").save(path)
    assert not os.path.exists(os.path.join(path, "_delta_staging"))
    # a concurrent writer's staging directory is left alone (only an empty one goes)
    other = Path(path, "_delta_staging", "other-writer")
    other.mkdir(parents=True)
    (other / "part-0.parquet").write_bytes(b"in progress")
    _df(spark, 100, 200, tasks=2).write.format("delta").mode("append").save(path)
    assert sorted(os.listdir(os.path.join(path, "_delta_staging"))) == ["other-writer"]
    (other / "part-0.parquet").unlink()
    other.rmdir()
    DeltaTable.forPath(spark, path).delete("id < 10")
    assert not os.path.exists(os.path.join(path, "_delta_staging"))
    assert len(_rows(spark, path)) == 190
