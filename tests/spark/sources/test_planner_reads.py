"""Reads through Spark's planner (the JVM's ``delta`` source, ``spark.planner``): SQL on paths,
skipping in every plan shape, the current snapshot at each action, partition values from the log."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from data_paths import TESTDATA
from delta_pyspark import scan_report
from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.exceptions import (
    DeltaSchemaChangedError,
    DeltaTableNotFoundError,
)
from delta_pyspark.spark.files.scan import DeltaFileNotFoundError
from delta_pyspark.tables import DeltaTable

SPECIAL = TESTDATA / "delta-rs" / "delta-0.8.0-special-partition"


@pytest.fixture(scope="module")
def ranged(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> str:
    """16 files, ids 0..159 sorted: file k holds ids 10k..10k+9."""
    path = str(tmp_path_factory.mktemp("planner") / "ranged")
    df = spark.range(160).selectExpr("id", "id * 2 AS v")
    df.repartitionByRange(16, "id").sortWithinPartitions("id").write.format("delta").save(path)
    assert DeltaLog(path).snapshot().num_files == 16
    return path


@pytest.fixture(scope="module")
def by_part(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> str:
    """Partitioned by ``part`` (0..15), one file each."""
    path = str(tmp_path_factory.mktemp("planner") / "by_part")
    df = spark.range(160).selectExpr("id", "CAST(id % 16 AS INT) AS part")
    df.repartition(16, "part").write.format("delta").partitionBy("part").save(path)
    assert DeltaLog(path).snapshot().num_files == 16
    return path


def _files_read(df: Any) -> int:
    """Files the scans of ``df``'s last execution read (Spark's ``numFiles`` metric, which
    counts what dynamic partition pruning left)."""
    plan = df._jdf.queryExecution().executedPlan()
    if plan.getClass().getSimpleName() == "AdaptiveSparkPlanExec":
        plan = plan.executedPlan()
    total, todo = 0, [plan]
    while todo:
        node = todo.pop()
        if node.getClass().getSimpleName() == "FileSourceScanExec" and "DeltaFileIndex" in str(
            node.relation().location()
        ):
            total += node.metrics().apply("numFiles").value()
        if node.getClass().getSimpleName().endswith("QueryStageExec"):
            todo.append(node.plan())  # adaptive execution's stages are leaves of its plan
        children = node.children()
        todo.extend(children.apply(i) for i in range(children.size()))
    return total


def test_sql_on_a_path_reads_the_tables_rows(spark: Any, ranged: str) -> None:
    rows = spark.sql(f"SELECT id, v FROM delta.`{ranged}`").collect()
    assert sorted((r.id, r.v) for r in rows) == [(i, 2 * i) for i in range(160)]


def test_a_filter_after_a_projection_reads_one_file(spark: Any, ranged: str) -> None:
    df = spark.read.format("delta").load(ranged).select("id", "v").where("id = 5")
    assert [tuple(r) for r in df.collect()] == [(5, 10)]
    assert _files_read(df) == 1
    report = scan_report(df)
    assert report is not None and (report.files_total, report.files_scanned) == (16, 1)


def test_a_temp_view_and_sql_read_one_file(spark: Any, ranged: str) -> None:
    spark.read.format("delta").load(ranged).createOrReplaceTempView("ranged_view")
    for df in (
        spark.sql("SELECT v FROM ranged_view WHERE id = 5"),
        spark.sql(f"SELECT v FROM delta.`{ranged}` WHERE id = 5"),
    ):
        assert [r.v for r in df.collect()] == [10]
        assert _files_read(df) == 1
        assert scan_report(df).files_scanned == 1


def test_a_join_with_a_one_row_dimension_prunes_partitions_dynamically(
    spark: Any, by_part: str, tmp_path: Path, conf: Callable[[str, str], None]
) -> None:
    conf("spark.sql.adaptive.enabled", "false")  # the scan's metrics in the plan that ran
    dim_path = str(tmp_path / "dim")
    spark.createDataFrame([(3, "three"), (4, "four")], "k INT, name STRING").write.parquet(dim_path)
    dim = spark.read.parquet(dim_path).where("name = 'three'")
    fact = spark.read.format("delta").load(by_part)
    df = fact.join(dim, fact.part == dim.k).select("id", "name")
    assert sorted(r.id for r in df.collect()) == list(range(3, 160, 16))
    assert "dynamicpruning" in df._jdf.queryExecution().executedPlan().toString().lower()
    assert _files_read(df) == 1


def test_partition_filters_prune_exactly(spark: Any, by_part: str) -> None:
    df = spark.sql(f"SELECT id FROM delta.`{by_part}` WHERE part IN (2, 7) AND id < 100")
    assert sorted(r.id for r in df.collect()) == [i for i in range(100) if i % 16 in (2, 7)]
    assert _files_read(df) == 2
    # a filter the Python core cannot model (a UDF-free function) still prunes in Spark
    df = spark.sql(f"SELECT count(*) AS n FROM delta.`{by_part}` WHERE pmod(part, 8) = 1")
    assert df.collect()[0].n == 20
    assert _files_read(df) == 2


def test_partition_values_come_from_the_log_not_the_directories(spark: Any, tmp_path: Path) -> None:
    """Files moved out of their Hive directories (as column-mapped or foreign writers lay
    them out) read with their partition values, and prune by them."""
    path = tmp_path / "flat"
    spark.range(6).repartition(1).selectExpr("id", "CAST(id % 3 AS STRING) AS s").write.format(
        "delta"
    ).partitionBy("s").save(str(path))
    (path / "data").mkdir()
    commit = path / "_delta_log" / f"{0:020d}.json"
    lines = []
    for line in commit.read_text().splitlines():
        action = json.loads(line)
        if "add" in action:
            old = path / action["add"]["path"]  # no special characters here: no decoding
            new = f"data/{action['add']['partitionValues']['s']}-{old.name}"
            old.rename(path / new)
            action["add"]["path"] = new
        lines.append(json.dumps(action))
    commit.write_text("\n".join(lines) + "\n")
    for crc in (path / "_delta_log").glob("*.crc"):
        crc.unlink()
    for directory in path.glob("s=*"):
        shutil.rmtree(directory)
    df = spark.sql(f"SELECT id, s FROM delta.`{path}`")
    assert sorted(tuple(r) for r in df.collect()) == [(i, str(i % 3)) for i in range(6)]
    df = spark.sql(f"SELECT id FROM delta.`{path}` WHERE s = '1'")
    assert sorted(r.id for r in df.collect()) == [1, 4]
    assert _files_read(df) == 1


def test_special_characters_in_partition_values(spark: Any) -> None:
    df = spark.sql(f"SELECT x, y FROM delta.`{SPECIAL}`")
    assert sorted(r.x for r in df.collect()) == ["A/A", "B B"]
    assert [
        r.x for r in spark.sql(f"SELECT x FROM delta.`{SPECIAL}` WHERE x = 'B B'").collect()
    ] == ["B B"]


def test_a_dataframe_reads_the_current_snapshot_at_each_action(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    spark.range(5).write.format("delta").save(path)
    df = spark.read.format("delta").load(path)
    pinned = spark.read.format("delta").option("versionAsOf", 0).load(path)
    view = spark.sql(f"SELECT * FROM delta.`{path}`")
    assert df.count() == 5
    spark.range(5, 8).write.format("delta").mode("append").save(path)
    assert df.count() == 8
    assert sorted(r.id for r in df.collect()) == list(range(8))
    assert view.count() == 8
    assert pinned.count() == 5
    assert scan_report(pinned).version == 0


def test_an_old_dataframe_survives_an_overwrite_and_vacuum(
    spark: Any, tmp_path: Path, conf: Callable[[str, str], None]
) -> None:
    conf("spark.databricks.delta.retentionDurationCheck.enabled", "false")
    path = str(tmp_path / "t")
    spark.range(5).write.format("delta").save(path)
    df = spark.read.format("delta").load(path)
    assert df.count() == 5
    spark.range(10, 12).write.format("delta").mode("overwrite").save(path)
    DeltaTable.forPath(spark, path).vacuum(0)
    assert sorted(r.id for r in df.collect()) == [10, 11]


def test_an_incompatible_schema_change_is_a_clear_error(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    spark.range(4).selectExpr("id", "id AS v").write.format("delta").save(path)
    df = spark.read.format("delta").load(path)
    spark.range(2).selectExpr("id", "id AS v", "'x' AS w").write.format("delta").mode(
        "append"
    ).option("mergeSchema", "true").save(path)
    assert df.count() == 6  # an added column is compatible: df reads its own columns
    spark.range(3).selectExpr("id").write.format("delta").mode("overwrite").option(
        "overwriteSchema", "true"
    ).save(path)
    with pytest.raises(DeltaSchemaChangedError, match=r"'v' was dropped"):
        df.collect()


def test_sql_overwrite_of_a_catalog_table_is_a_new_version(spark: Any, tmp_path: Path) -> None:
    """Spark plans it as a Parquet write into the table's directory (which would delete the
    log); it runs as a Delta overwrite, so the old version stays readable."""
    path = str(tmp_path / "t")
    spark.range(3).write.format("delta").save(path)
    spark.sql(f"CREATE TABLE planner_ext USING delta LOCATION '{path}'")
    try:
        spark.sql("INSERT OVERWRITE planner_ext VALUES (7)")
        spark.sql("INSERT INTO planner_ext VALUES (8)")
        assert sorted(r.id for r in spark.sql("SELECT id FROM planner_ext").collect()) == [7, 8]
        assert DeltaLog(path).snapshot().version == 2
        old = spark.read.format("delta").option("versionAsOf", 0).load(path)
        assert sorted(r.id for r in old.collect()) == [0, 1, 2]
    finally:
        spark.sql("DROP TABLE planner_ext")


def test_deletion_vectors_drop_rows_through_the_planner(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    df = spark.range(60).selectExpr("id", "CAST(id % 3 AS INT) AS part").repartition(2)
    df.write.format("delta").partitionBy("part").option("delta.enableDeletionVectors", "true").save(
        path
    )
    loaded = spark.read.format("delta").load(path)
    view = spark.sql(f"SELECT id FROM delta.`{path}` WHERE part = 1")
    assert loaded.count() == 60
    DeltaTable.forPath(spark, path).delete("id % 10 = 1")  # marks rows, rewrites nothing
    assert DeltaLog(path).snapshot().files.column("deletionVector").null_count < 6
    kept = [i for i in range(60) if i % 10 != 1]
    assert sorted(r.id for r in loaded.collect()) == kept
    assert sorted(r.id for r in view.collect()) == [i for i in kept if i % 3 == 1]
    rows = spark.sql(f"SELECT id FROM delta.`{path}` WHERE id < 25 AND part = 0").collect()
    assert sorted(r.id for r in rows) == [i for i in kept if i < 25 and i % 3 == 0]


@pytest.mark.parametrize("mode", ["name", "id"])
def test_column_mapped_tables_read_through_the_planner(
    spark: Any, tmp_path: Path, mode: str
) -> None:
    path = str(tmp_path / "t")
    df = spark.range(40).selectExpr(
        "id", "id % 2 AS `part col`", "named_struct('a', id, 'b', cast(id AS string)) AS s"
    )
    df.repartitionByRange(4, "id").write.format("delta").partitionBy("part col").option(
        "delta.columnMapping.mode", mode
    ).save(path)
    snapshot = DeltaLog(path).snapshot()
    physical = [f.metadata["delta.columnMapping.physicalName"] for f in snapshot.schema.fields]
    assert "id" not in physical  # the files name their columns by physical name
    loaded = spark.read.format("delta").load(path)
    assert sorted(tuple(r) for r in loaded.collect()) == sorted(
        (i, i % 2, (i, str(i))) for i in range(40)
    )
    one = loaded.select("id", "s.b").where("id = 13")
    assert [tuple(r) for r in one.collect()] == [(13, "13")]
    report = scan_report(one)  # one id range, in each of the two partitions
    assert (report.files_total, report.files_scanned) == (8, 2)
    rows = spark.sql(
        f"SELECT s.a, `part col` FROM delta.`{path}` WHERE `part col` = 0 AND id < 6"
    ).collect()
    assert sorted(tuple(r) for r in rows) == [(0, 0), (2, 0), (4, 0)]


def test_column_mapped_table_with_deletion_vectors(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    spark.range(30).selectExpr("id", "id * 10 AS v").coalesce(1).write.format("delta").option(
        "delta.columnMapping.mode", "name"
    ).option("delta.enableDeletionVectors", "true").save(path)
    loaded = spark.read.format("delta").load(path)
    DeltaTable.forPath(spark, path).delete("id % 3 = 0")
    assert DeltaLog(path).snapshot().files.column("deletionVector").null_count == 0
    assert sorted(tuple(r) for r in loaded.collect()) == [(i, i * 10) for i in range(30) if i % 3]
    assert spark.sql(f"SELECT sum(v) FROM delta.`{path}` WHERE id > 20").first()[0] == sum(
        i * 10 for i in range(21, 30) if i % 3
    )


def test_a_missing_table_is_a_clear_error(spark: Any, tmp_path: Path) -> None:
    with pytest.raises(DeltaTableNotFoundError, match="Path does not exist") as e:
        spark.sql(f"SELECT * FROM delta.`{tmp_path}/nothing`").collect()
    assert e.value.getCondition() == "PATH_NOT_FOUND"
    (tmp_path / "empty").mkdir()
    with pytest.raises(DeltaTableNotFoundError, match="not a Delta table"):
        spark.sql(f"SELECT * FROM delta.`{tmp_path}/empty`").collect()


def test_a_data_file_missing_from_storage_is_a_typed_error(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    spark.range(0, 10).repartition(2).write.format("delta").save(path)
    gone = sorted(tmp_path.glob("t/*.parquet"))[0]
    gone.unlink()
    with pytest.raises(DeltaFileNotFoundError, match=gone.name) as caught:
        spark.read.format("delta").load(path).collect()
    assert isinstance(caught.value, FileNotFoundError)
    assert str(tmp_path / "t") in str(caught.value)
    # a plain Parquet directory's missing file stays Spark's own error
    spark.range(0, 4).repartition(2).write.parquet(str(tmp_path / "plain"))
    df = spark.read.parquet(str(tmp_path / "plain"))
    sorted(tmp_path.glob("plain/*.parquet"))[0].unlink()
    with pytest.raises(Exception) as plain:
        df.collect()
    assert not isinstance(plain.value, DeltaFileNotFoundError)
    assert "FILE_NOT_EXIST" in str(plain.value)
