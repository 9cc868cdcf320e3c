"""OPTIMIZE (compaction, Z-order) and REORG ... APPLY (PURGE) through ``DeltaTable``."""

from __future__ import annotations

import json
import math
import os
import random
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from commit_hooks import before_commit

from delta_pyspark import scan_report
from delta_pyspark.core.commands.optimize_plan import pack_bins
from delta_pyspark.core.expressions.parser import parse_predicate
from delta_pyspark.core.skipping.file_pruning import prune_files
from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.exceptions import (
    ConcurrentDeleteReadException,
    DeltaAnalysisException,
    DeltaConcurrentModificationException,
)
from delta_pyspark.spark.commands.bin_writer import partition_keys as spark_partition_keys
from delta_pyspark.tables import DeltaTable

MAX_FILE = "spark.databricks.delta.optimize.maxFileSize"
MIN_FILE = "spark.databricks.delta.optimize.minFileSize"
SCHEMA = "id long, p int, x long, y long, s string"


# ----------------------------------------------------------------------------- helpers


def _df(spark: Any, ids: range, seed: int = 0) -> Any:
    rng = random.Random(seed)
    rows = [(i, i % 3, rng.randrange(1000), rng.randrange(1000), f"s{i}") for i in ids]
    return spark.createDataFrame(rows, SCHEMA)


def _table(
    spark: Any,
    path: str,
    *,
    partitioned: bool,
    files: int = 6,
    appends: int = 3,
    props: dict[str, str] | None = None,
) -> None:
    """A table of many small files: one write of ``files`` tasks, then small appends."""
    writer = _df(spark, range(0, 600)).repartition(files).write.format("delta")
    if partitioned:
        writer = writer.partitionBy("p")
    for k, v in (props or {}).items():
        writer = writer.option(k, v)
    writer.save(path)
    for a in range(appends):
        ids = range(600 + a * 20, 620 + a * 20)
        _df(spark, ids, seed=a + 1).coalesce(1).write.format("delta").mode("append").save(path)


def _rows(spark: Any, path: str, version: int | None = None) -> list[tuple]:
    reader = spark.read.format("delta")
    if version is not None:
        reader = reader.option("versionAsOf", version)
    return sorted(tuple(r) for r in reader.load(path).collect())


def _actions(path: str, version: int) -> list[dict[str, Any]]:
    text = Path(path, "_delta_log", f"{version:020d}.json").read_text()
    return [json.loads(line) for line in text.splitlines() if line]


def _live(path: str) -> pa.Table:
    return DeltaLog(path).snapshot().files


def _paths_by_partition(files: pa.Table) -> dict[tuple, set[str]]:
    out: dict[tuple, set[str]] = {}
    for path, pv in zip(
        files.column("path").to_pylist(), files.column("partitionValues").to_pylist(), strict=True
    ):
        out.setdefault(tuple(sorted(pv or [])), set()).add(path)
    return out


def _ids(path: str, rel: str) -> list[int]:
    """The ``id`` column of one data file, in file order."""
    return pq.read_table(os.path.join(path, rel), columns=["id"]).column("id").to_pylist()


def _metrics(df: Any) -> Any:
    rows = df.collect()
    assert len(rows) == 1
    return rows[0]


# ----------------------------------------------------------------------------- compaction


@pytest.mark.parametrize("partitioned", [False, True])
def test_compaction_rewrites_small_files_into_one_per_partition(
    spark: Any, tmp_path: Path, partitioned: bool
) -> None:
    path = str(tmp_path / "t")
    _table(spark, path, partitioned=partitioned)
    before_version = DeltaLog(path).snapshot().version
    before_files = _live(path)
    before = _rows(spark, path)

    result = _metrics(DeltaTable.forPath(spark, path).optimize().executeCompaction())

    snapshot = DeltaLog(path).snapshot()
    assert snapshot.version == before_version + 1
    parts = 3 if partitioned else 1
    assert snapshot.num_files == parts
    assert _rows(spark, path) == before
    # the new files are on disk with the sizes the log records; the old ones stay (VACUUM's job)
    for rel, size in zip(
        snapshot.files.column("path").to_pylist(),
        snapshot.files.column("size").to_pylist(),
        strict=True,
    ):
        assert os.path.getsize(os.path.join(path, rel)) == size
    for rel in before_files.column("path").to_pylist():
        assert os.path.exists(os.path.join(path, rel))
    assert not os.path.exists(os.path.join(path, "_delta_staging"))

    m = result.metrics
    assert result.path == snapshot.table_root
    assert m.numFilesRemoved == before_files.num_rows
    assert m.numFilesAdded == parts
    assert m.filesRemoved.totalFiles == before_files.num_rows
    assert m.filesRemoved.totalSize == sum(before_files.column("size").to_pylist())
    assert m.filesAdded.totalSize == sum(snapshot.files.column("size").to_pylist())
    assert m.filesAdded.min == min(snapshot.files.column("size").to_pylist())
    assert m.partitionsOptimized == parts
    assert m.zOrderStats is None
    assert m.numBatches == 1
    assert m.totalConsideredFiles == before_files.num_rows
    assert m.totalFilesSkipped == 0
    assert m.deletionVectorStats.numDeletionVectorsRemoved == 0
    assert m.startTimeMs <= m.endTimeMs

    actions = _actions(path, snapshot.version)
    info = next(a["commitInfo"] for a in actions if "commitInfo" in a)
    assert info["operation"] == "OPTIMIZE"
    assert info["operationParameters"] == {
        "predicate": "[]",
        "zOrderBy": "[]",
        "clusterBy": "[]",
        "auto": "false",
    }
    assert info["isBlindAppend"] is False
    assert info["isolationLevel"] == "SnapshotIsolation"
    adds = [a["add"] for a in actions if "add" in a]
    removes = [a["remove"] for a in actions if "remove" in a]
    assert len(adds) == parts and len(removes) == before_files.num_rows
    assert all(a["dataChange"] is False for a in adds + removes)
    assert all(json.loads(a["stats"])["numRecords"] > 0 for a in adds)
    om = info["operationMetrics"]
    assert om["numRemovedFiles"] == str(before_files.num_rows)
    assert om["numAddedFiles"] == str(parts)
    assert om["numAddedBytes"] == str(m.filesAdded.totalSize)
    assert om["numRemovedBytes"] == str(m.filesRemoved.totalSize)
    assert om["minFileSize"] == str(m.filesAdded.min)
    assert om["maxFileSize"] == str(m.filesAdded.max)
    assert {"p25FileSize", "p50FileSize", "p75FileSize", "numDeletionVectorsRemoved"} <= set(om)

    # time travel on both sides of the OPTIMIZE sees the same rows
    assert _rows(spark, path, before_version) == before
    assert _rows(spark, path, snapshot.version) == before

    history = DeltaTable.forPath(spark, path).history(1).collect()[0]
    assert history.operation == "OPTIMIZE"
    assert history.operationMetrics["numRemovedFiles"] == str(before_files.num_rows)


@pytest.mark.long  # CI's second step, for the quick run's time
def test_second_compaction_commits_nothing(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    _table(spark, path, partitioned=True)
    DeltaTable.forPath(spark, path).optimize().executeCompaction()
    version = DeltaLog(path).snapshot().version
    m = _metrics(DeltaTable.forPath(spark, path).optimize().executeCompaction()).metrics
    assert DeltaLog(path).snapshot().version == version
    assert (m.numFilesAdded, m.numFilesRemoved, m.numBatches, m.partitionsOptimized) == (0, 0, 0, 0)
    assert m.totalConsideredFiles == 3 and m.totalFilesSkipped == 3
    assert m.filesAdded.min is None and m.filesAdded.totalFiles == 0


@pytest.mark.long  # CI's second step, for the quick run's time
def test_where_limits_compaction_to_matching_partitions(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    _table(spark, path, partitioned=True)
    before = _paths_by_partition(_live(path))
    rows = _rows(spark, path)

    m = _metrics(DeltaTable.forPath(spark, path).optimize().where("p = 1").executeCompaction())

    after = _paths_by_partition(_live(path))
    assert after[(("p", "0"),)] == before[(("p", "0"),)]
    assert after[(("p", "2"),)] == before[(("p", "2"),)]
    assert len(after[(("p", "1"),)]) == 1
    assert not after[(("p", "1"),)] & before[(("p", "1"),)]
    assert m.metrics.numFilesRemoved == len(before[(("p", "1"),)])
    assert m.metrics.totalConsideredFiles == len(before[(("p", "1"),)])
    assert _rows(spark, path) == rows
    info = DeltaTable.forPath(spark, path).history(1).collect()[0]
    # as delta-spark records it: Spark's unresolved expression
    assert info.operationParameters["predicate"] == '["(\'p = 1)"]'


def test_where_calls_are_anded_and_spark_evaluates_what_the_ast_cannot(
    spark: Any, tmp_path: Path
) -> None:
    path = str(tmp_path / "t")
    _table(spark, path, partitioned=True)
    before = _paths_by_partition(_live(path))
    # abs() is not modelled by the pruning AST: Spark evaluates it over partition values
    DeltaTable.forPath(spark, path).optimize().where("abs(p) >= 1").where(
        "p < 2"
    ).executeCompaction()
    after = _paths_by_partition(_live(path))
    assert after[(("p", "0"),)] == before[(("p", "0"),)]
    assert after[(("p", "2"),)] == before[(("p", "2"),)]
    assert len(after[(("p", "1"),)]) == 1


@pytest.mark.parametrize(
    ("partitioned", "predicate", "column"),
    [
        (True, "x > 3", "x"),
        (True, "p = 1 AND id < 10", "id"),
        (True, "abs(y) = 1", "y"),
        (False, "id = 1", "id"),
    ],
)
def test_where_on_a_data_column_is_refused(
    spark: Any, tmp_path: Path, partitioned: bool, predicate: str, column: str
) -> None:
    path = str(tmp_path / "t")
    _table(spark, path, partitioned=partitioned, appends=0, files=2)
    version = DeltaLog(path).snapshot().version
    with pytest.raises(DeltaAnalysisException, match=f"non-partition column '{column}'"):
        DeltaTable.forPath(spark, path).optimize().where(predicate).executeCompaction()
    assert DeltaLog(path).snapshot().version == version


@pytest.mark.long  # slow: CI's second step
@pytest.mark.parametrize("job_per_bin", [True, False], ids=["job-per-bin", "shuffled"])
def test_each_bin_becomes_its_own_file(
    spark: Any, tmp_path: Path, conf: Any, monkeypatch: Any, job_per_bin: bool
) -> None:
    """Several bins per partition: no two bins share a file, with a job per bin or (past
    ``JOB_PER_BIN``) one job whose rows are shuffled to their bins."""
    from delta_pyspark.spark.commands import bin_writer

    monkeypatch.setattr(bin_writer, "JOB_PER_BIN", 64 if job_per_bin else 0)
    path = str(tmp_path / "t")
    _df(spark, range(0, 3000)).repartition(24).write.format("delta").partitionBy("p").save(path)
    snapshot = DeltaLog(path).snapshot()
    sizes = snapshot.files.column("size").to_pylist()
    target = int(max(sizes) * 3.5)  # bins of about three files
    conf(MAX_FILE, str(target))
    bins = pack_bins(snapshot.files, max_bin_size=target)
    assert len(bins) >= 6
    old_paths = snapshot.files.column("path").to_pylist()
    ids_of = {rel: set(_ids(path, rel)) for rel in old_paths}
    expected = sorted(sorted(set().union(*(ids_of[old_paths[i]] for i in b.rows))) for b in bins)

    m = _metrics(DeltaTable.forPath(spark, path).optimize().executeCompaction()).metrics

    assert m.numFilesAdded == len(bins)
    assert m.numFilesRemoved == sum(len(b.rows) for b in bins)
    new = DeltaLog(path).snapshot().files
    added = set(new.column("path").to_pylist()) - set(old_paths)
    assert len(added) == len(bins)
    got = sorted(sorted(_ids(path, rel)) for rel in added)
    assert got == expected


def test_spark_partition_keys_route_exactly(spark: Any) -> None:
    from pyspark.sql import functions as F

    for n in (1, 7, 50):
        keys = spark_partition_keys(spark, n)
        df = spark.createDataFrame([(k, i) for i, k in enumerate(keys)], "k int, i int")
        placed = df.repartition(n, "k").select("i", F.spark_partition_id().alias("part")).collect()
        assert sorted((r.i, r.part) for r in placed) == [(i, i) for i in range(n)]


def test_min_file_size_and_table_target_size(spark: Any, tmp_path: Path, conf: Any) -> None:
    path = str(tmp_path / "t")
    _table(spark, path, partitioned=False, files=2, appends=3)
    files = _live(path)
    sizes = sorted(files.column("size").to_pylist())
    big = [
        p
        for p, s in zip(
            files.column("path").to_pylist(), files.column("size").to_pylist(), strict=True
        )
        if s > sizes[2]
    ]
    # only the three small appended files are below minFileSize
    conf(MIN_FILE, str(sizes[2] + 1))
    m = _metrics(DeltaTable.forPath(spark, path).optimize().executeCompaction()).metrics
    assert m.numFilesRemoved == 3 and m.numFilesAdded == 1
    assert set(big) <= set(_live(path).column("path").to_pylist())


def test_table_target_file_size(spark: Any, tmp_path: Path) -> None:
    """delta.targetFileSize caps the bins when the session does not set maxFileSize."""
    path2 = str(tmp_path / "t2")
    _table(spark, path2, partitioned=False, files=8, appends=0)
    one = max(_live(path2).column("size").to_pylist())
    DeltaTable.forPath(spark, path2).setProperties({"delta.targetFileSize": str(2 * one + 1)})
    m2 = _metrics(DeltaTable.forPath(spark, path2).optimize().executeCompaction()).metrics
    assert m2.numFilesRemoved == 8 and m2.numFilesAdded == 4


def test_metrics_frame_shape(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    _table(spark, path, partitioned=False, files=2, appends=0)
    df = DeltaTable.forPath(spark, path).optimize().executeCompaction()
    assert df.columns == ["path", "metrics"]
    fields = {f.name: f for f in df.schema["metrics"].dataType.fields}
    for name in (
        "numFilesAdded",
        "numFilesRemoved",
        "filesAdded",
        "filesRemoved",
        "partitionsOptimized",
        "zOrderStats",
        "numBatches",
        "totalConsideredFiles",
        "totalFilesSkipped",
        "preserveInsertionOrder",
        "startTimeMs",
        "endTimeMs",
        "deletionVectorStats",
    ):
        assert name in fields
    assert [f.name for f in fields["filesAdded"].dataType.fields] == [
        "min",
        "max",
        "avg",
        "totalFiles",
        "totalSize",
    ]
    assert [f.name for f in fields["deletionVectorStats"].dataType.fields] == [
        "numDeletionVectorsRemoved",
        "numDeletionVectorRowsRemoved",
    ]


def test_a_rewrite_that_loses_rows_is_never_committed(
    spark: Any, tmp_path: Path, monkeypatch: Any
) -> None:
    from delta_pyspark.exceptions import DeltaError
    from delta_pyspark.spark.commands import bin_writer

    path = str(tmp_path / "t")
    _table(spark, path, partitioned=False, files=3, appends=0)
    version = DeltaLog(path).snapshot().version
    original = bin_writer.bin_frame
    monkeypatch.setattr(bin_writer, "bin_frame", lambda *a: original(*a).where("id % 2 = 0"))
    with pytest.raises(DeltaError, match="nothing was committed"):
        DeltaTable.forPath(spark, path).optimize().executeCompaction()
    assert DeltaLog(path).snapshot().version == version


# ----------------------------------------------------------------------------- concurrency


@pytest.mark.long  # CI's second step, for the quick run's time
def test_blind_append_between_read_and_commit_does_not_conflict(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    _table(spark, path, partitioned=True)
    rows = _rows(spark, path)
    extra = _df(spark, range(5000, 5030), seed=9)

    def append() -> None:
        extra.write.format("delta").mode("append").save(path)

    with before_commit(append):
        DeltaTable.forPath(spark, path).optimize().executeCompaction()

    snapshot = DeltaLog(path).snapshot()
    history = DeltaTable.forPath(spark, path).history(2).collect()
    assert [h.operation for h in history] == ["OPTIMIZE", "WRITE"]
    assert history[0].readVersion == history[1].version - 1  # read before the append won
    assert _rows(spark, path) == sorted(rows + [tuple(r) for r in extra.collect()])
    appended = {a["add"]["path"] for a in _actions(path, history[1].version) if "add" in a}
    assert appended <= set(snapshot.files.column("path").to_pylist())


@pytest.mark.long  # CI's second step, for the quick run's time
def test_concurrent_delete_of_an_input_file_fails_and_commits_nothing(
    spark: Any, tmp_path: Path
) -> None:
    path = str(tmp_path / "t")
    _table(spark, path, partitioned=True)

    def delete() -> None:
        DeltaTable.forPath(spark, path).delete("p = 1")

    with (
        pytest.raises(ConcurrentDeleteReadException, match="removed by concurrent commit") as err,
        before_commit(delete),
    ):
        DeltaTable.forPath(spark, path).optimize().executeCompaction()
    assert isinstance(err.value, DeltaConcurrentModificationException)
    history = DeltaTable.forPath(spark, path).history(1).collect()
    assert history[0].operation == "DELETE"
    assert all(r[1] != 1 for r in _rows(spark, path))


# ----------------------------------------------------------------------------- Z-order


def _zorder_table(
    spark: Any, path: str, n: int = 20000, files: int = 16, partitioned: bool = False
) -> None:
    from pyspark.sql import functions as F

    df = (
        spark.range(n)
        .select(
            "id",
            (F.col("id") % 2).cast("int").alias("p"),
            (F.xxhash64("id") % 100000).alias("x"),
            (F.xxhash64(F.col("id") + 7) % 100000).alias("y"),
            F.lit("v").alias("s"),
        )
        .repartition(files, F.rand(3))
    )
    writer = df.write.format("delta")
    if partitioned:
        writer = writer.partitionBy("p")
    writer.save(path)


def _fraction_matching(path: str, column: str, values: list[int]) -> float:
    snapshot = DeltaLog(path).snapshot()
    hits = [prune_files(snapshot, parse_predicate(f"{column} = {v}")).num_rows for v in values]
    return sum(hits) / (len(values) * snapshot.num_files)


@pytest.mark.long  # slow: CI's second step
def test_zorder_makes_point_filters_on_each_column_skip_files(
    spark: Any, tmp_path: Path, conf: Any
) -> None:
    path = str(tmp_path / "t")
    _zorder_table(spark, path)
    before = _rows(spark, path)
    files = _live(path)
    sample = spark.read.format("delta").load(path).select("x", "y").limit(20).collect()
    xs, ys = [r.x for r in sample], [r.y for r in sample]
    assert _fraction_matching(path, "x", xs) > 0.9  # shuffled: every file spans everything
    assert _fraction_matching(path, "y", ys) > 0.9
    conf(MAX_FILE, str(math.ceil(sum(files.column("size").to_pylist()) / 16)))

    result = _metrics(DeltaTable.forPath(spark, path).optimize().executeZOrderBy("x", "y"))

    snapshot = DeltaLog(path).snapshot()
    assert snapshot.num_files == result.metrics.numFilesAdded == 16
    assert result.metrics.numFilesRemoved == 16
    assert result.metrics.zOrderStats.strategyName == "all"
    assert result.metrics.zOrderStats.mergedFiles.num == 16
    assert result.metrics.preserveInsertionOrder is False
    assert _rows(spark, path) == before
    fx, fy = _fraction_matching(path, "x", xs), _fraction_matching(path, "y", ys)
    # 16 files in Morton order: 4 x 4 cells, so a point on either column hits ~4 files
    assert fx <= 0.3 and fy <= 0.3, (fx, fy)
    # the Spark read path skips the same files
    report = scan_report(spark.read.format("delta").load(path).where(f"x = {xs[0]}"))
    assert report is not None and report.files_scanned <= 8
    assert spark.read.format("delta").load(path).where(f"x = {xs[0]}").count() == sum(
        1 for r in before if r[2] == xs[0]
    )
    info = DeltaTable.forPath(spark, path).history(1).collect()[0]
    assert info.operation == "OPTIMIZE"
    assert info.operationParameters["zOrderBy"] == '["x","y"]'
    assert _rows(spark, path, snapshot.version - 1) == before


def test_zorder_partitioned_with_where_and_list_argument(
    spark: Any, tmp_path: Path, conf: Any
) -> None:
    path = str(tmp_path / "t")
    _zorder_table(spark, path, n=12000, files=8, partitioned=True)
    before = _rows(spark, path)
    files_before = _paths_by_partition(_live(path))
    part1 = DeltaLog(path).snapshot().files
    size1 = sum(
        s
        for s, pv in zip(
            part1.column("size").to_pylist(),
            part1.column("partitionValues").to_pylist(),
            strict=True,
        )
        if dict(pv)["p"] == "1"
    )
    conf(MAX_FILE, str(math.ceil(size1 / 8)))

    DeltaTable.forPath(spark, path).optimize().where("p = 1").executeZOrderBy(["x", "y"])

    after = _paths_by_partition(_live(path))
    assert after[(("p", "0"),)] == files_before[(("p", "0"),)]
    assert not after[(("p", "1"),)] & files_before[(("p", "1"),)]
    assert 6 <= len(after[(("p", "1"),)]) <= 10
    assert _rows(spark, path) == before
    snapshot = DeltaLog(path).snapshot()
    p1 = prune_files(snapshot, parse_predicate("p = 1")).num_rows
    hit = prune_files(snapshot, parse_predicate(f"p = 1 AND x = {before[0][2]}")).num_rows
    assert hit <= p1 / 2


@pytest.mark.parametrize(
    ("columns", "message"),
    [
        (["p"], "p is a partition column. Z-Ordering can only be performed on data columns"),
        (["x", "nope"], "Z-Ordering column nope does not exist in data schema"),
        (["y"], r"Z-Ordering on \[y\] will be ineffective"),
    ],
)
def test_zorder_refuses_bad_columns(
    spark: Any, tmp_path: Path, columns: list[str], message: str
) -> None:
    path = str(tmp_path / "t")
    # stats only on the first two data columns (id, x): y has none
    _table(
        spark,
        path,
        partitioned=True,
        files=2,
        appends=0,
        props={"delta.dataSkippingNumIndexedCols": "2"},
    )
    version = DeltaLog(path).snapshot().version
    with pytest.raises(DeltaAnalysisException, match=message):
        DeltaTable.forPath(spark, path).optimize().executeZOrderBy(*columns)
    assert DeltaLog(path).snapshot().version == version


def test_zorder_stats_check_can_be_disabled(spark: Any, tmp_path: Path, conf: Any) -> None:
    path = str(tmp_path / "t")
    _table(
        spark,
        path,
        partitioned=False,
        files=3,
        appends=0,
        props={"delta.dataSkippingStatsColumns": "id"},
    )
    before = _rows(spark, path)
    with pytest.raises(DeltaAnalysisException, match=r"\[s\] will be ineffective"):
        DeltaTable.forPath(spark, path).optimize().executeZOrderBy("s")
    conf("spark.databricks.delta.optimize.zorder.checkStatsCollection.enabled", "false")
    m = _metrics(DeltaTable.forPath(spark, path).optimize().executeZOrderBy("s")).metrics
    assert m.numFilesRemoved == 3 and m.numFilesAdded == 1
    assert _rows(spark, path) == before
    # within the single output file, rows follow the Z-value (one column: its order)
    rel = _live(path).column("path").to_pylist()[0]
    values = [r.s for r in spark.read.parquet(os.path.join(path, rel)).select("s").collect()]
    assert values == sorted(values)


def test_zorder_on_dates_timestamps_strings_and_nulls(
    spark: Any, tmp_path: Path, conf: Any
) -> None:
    from pyspark.sql import functions as F

    path = str(tmp_path / "t")
    df = (
        spark.range(4000)
        .select(
            "id",
            F.when(F.col("id") % 10 == 0, None)
            .otherwise(
                F.date_add(F.lit("2020-01-01").cast("date"), (F.xxhash64("id") % 900).cast("int"))
            )
            .alias("d"),
            F.timestamp_micros(F.abs(F.xxhash64(F.col("id") + 1)) % 10**15).alias("ts"),
            F.concat(F.lit("k"), (F.xxhash64(F.col("id") + 2) % 5000).cast("string")).alias("k"),
            (F.xxhash64(F.col("id") + 3) % 1000 / 7).cast("decimal(10,3)").alias("dec"),
        )
        .repartition(4, F.rand(1))
    )
    df.write.format("delta").save(path)
    before = _rows(spark, path)
    conf(MAX_FILE, str(math.ceil(sum(_live(path).column("size").to_pylist()) / 8)))
    m = _metrics(DeltaTable.forPath(spark, path).optimize().executeZOrderBy("d", "ts", "k", "dec"))
    assert m.metrics.numFilesAdded >= 6
    assert _rows(spark, path) == before


# ----------------------------------------------------------------------------- purge


def _copy(testdata: Path, rel: str, tmp_path: Path) -> str:
    path = str(tmp_path / "t")
    shutil.copytree(testdata / rel, path)
    return path


def test_purge_rewrites_files_with_deletion_vectors(
    spark: Any, testdata: Path, tmp_path: Path
) -> None:
    path = _copy(testdata, "golden/dv-with-columnmapping/delta", tmp_path)
    before = _rows(spark, path)
    old = DeltaLog(path).snapshot()
    dv_paths = {
        p
        for p, dv in zip(
            old.files.column("path").to_pylist(),
            old.files.column("deletionVector").to_pylist(),
            strict=True,
        )
        if dv is not None
    }
    plain = set(old.files.column("path").to_pylist()) - dv_paths
    assert dv_paths and plain

    result = _metrics(DeltaTable.forPath(spark, path).reorgPurge())

    new = DeltaLog(path).snapshot()
    assert new.version == old.version + 1
    assert _rows(spark, path) == before
    assert new.files.column("deletionVector").null_count == new.num_files
    live = set(new.files.column("path").to_pylist())
    assert plain <= live and not (dv_paths & live)
    assert result.metrics.numFilesRemoved == len(dv_paths)
    dv_rows = sum(
        dv["cardinality"] for dv in old.files.column("deletionVector").to_pylist() if dv is not None
    )
    assert result.metrics.deletionVectorStats.numDeletionVectorsRemoved == len(dv_paths)
    assert result.metrics.deletionVectorStats.numDeletionVectorRowsRemoved == dv_rows
    actions = _actions(path, new.version)
    info = next(a["commitInfo"] for a in actions if "commitInfo" in a)
    assert info["operation"] == "REORG"
    assert info["operationParameters"] == {"predicate": "[]", "applyPurge": "true"}
    assert info["operationMetrics"]["numDeletionVectorsRemoved"] == str(len(dv_paths))
    assert all(a[k]["dataChange"] is False for a in actions for k in ("add", "remove") if k in a)
    # partition values stay keyed by physical name under column mapping
    keys = {k for pv in new.files.column("partitionValues").to_pylist() for k, _ in pv}
    assert keys == {"col-60c949ca-b8bc-4330-b931-b73fb4c60037"}
    assert _rows(spark, path, old.version) == before

    # idempotent: nothing left to purge, nothing committed
    again = _metrics(DeltaTable.forPath(spark, path).reorgPurge()).metrics
    assert again.numFilesRemoved == 0
    assert DeltaLog(path).snapshot().version == new.version


def test_purge_with_partition_condition(spark: Any, testdata: Path, tmp_path: Path) -> None:
    path = _copy(testdata, "golden/dv-with-columnmapping/delta", tmp_path)
    before = _rows(spark, path)
    old = DeltaLog(path).snapshot()
    DeltaTable.forPath(spark, path).reorgPurge("part = 6")
    new = DeltaLog(path).snapshot()
    assert _rows(spark, path) == before

    def dvs(snapshot: Any) -> dict[str, bool]:
        out: dict[str, bool] = {}
        for pv, dv in zip(
            snapshot.files.column("partitionValues").to_pylist(),
            snapshot.files.column("deletionVector").to_pylist(),
            strict=True,
        ):
            value = dict(pv)["col-60c949ca-b8bc-4330-b931-b73fb4c60037"]
            out[value] = out.get(value, False) or dv is not None
        return out

    before_dvs, after_dvs = dvs(old), dvs(new)
    assert before_dvs["6"] and before_dvs["8"] and not after_dvs["6"]
    assert {k: v for k, v in after_dvs.items() if k != "6"} == {
        k: v for k, v in before_dvs.items() if k != "6"
    }
    with pytest.raises(DeltaAnalysisException, match="non-partition column 'col1'"):
        DeltaTable.forPath(spark, path).reorgPurge("col1 = 3")


@pytest.mark.parametrize(
    "table", ["delta-rs/table-with-dv-small", "delta-rs/table_with_deletion_logs"]
)
def test_purge_unpartitioned_tables(spark: Any, testdata: Path, tmp_path: Path, table: str) -> None:
    path = _copy(testdata, table, tmp_path)
    before = _rows(spark, path)
    old = DeltaLog(path).snapshot()
    assert old.files.column("deletionVector").null_count < old.num_files
    DeltaTable.forPath(spark, path).reorgPurge()
    new = DeltaLog(path).snapshot()
    assert _rows(spark, path) == before
    assert new.files.column("deletionVector").null_count == new.num_files
    # the rewritten file physically holds only the live rows
    stats_rows = sum(json.loads(s)["numRecords"] for s in new.files.column("stats").to_pylist())
    assert stats_rows == len(before)


def test_compaction_purges_files_with_many_deleted_rows(
    spark: Any, testdata: Path, tmp_path: Path, conf: Any
) -> None:
    path = _copy(testdata, "delta-rs/table-with-dv-small", tmp_path)
    before = _rows(spark, path)
    conf(MIN_FILE, "1")  # by size nothing qualifies: the 20% deleted rows make the file a candidate
    m = _metrics(DeltaTable.forPath(spark, path).optimize().executeCompaction()).metrics
    assert m.numFilesRemoved == 1 and m.numFilesAdded == 1
    assert m.deletionVectorStats.numDeletionVectorRowsRemoved == 2
    new = DeltaLog(path).snapshot()
    assert new.files.column("deletionVector").null_count == 1
    assert _rows(spark, path) == before
    version = new.version
    DeltaTable.forPath(spark, path).optimize().executeCompaction()
    assert DeltaLog(path).snapshot().version == version
