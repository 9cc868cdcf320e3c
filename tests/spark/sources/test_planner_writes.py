"""Writes from Spark's own entry points go through the Python write command and one
transaction: ``save`` (Spark resolves the ``delta`` source), SQL inserts on paths and
catalog tables, ``insertInto``, and static-partition overwrites."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pyspark.errors import AnalysisException

from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.exceptions import DeltaAnalysisException, SchemaMismatchError


def _operations(path: str | Path) -> list[str]:
    """``commitInfo.operation`` of each version of the table at ``path``, in order."""
    log = Path(path) / "_delta_log"
    operations = []
    for commit in sorted(log.glob("*.json")):
        for line in commit.read_text().splitlines():
            action = json.loads(line)
            if "commitInfo" in action:
                operations.append(action["commitInfo"]["operation"])
    return operations


def _rows(spark: Any, path: str | Path) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in spark.read.format("delta").load(str(path)).collect())


def test_save_goes_through_the_source_with_every_mode(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    df = spark.range(4).selectExpr("id", "id % 2 AS p")
    df.write.format("delta").partitionBy("p").save(path)
    assert DeltaLog(path).snapshot().partition_columns == ["p"]
    with pytest.raises(DeltaAnalysisException, match="already exists"):
        df.write.format("delta").save(path)  # mode error: nothing written
    df.write.format("delta").mode("ignore").save(path)
    assert DeltaLog(path).snapshot().version == 0
    df.write.format("delta").mode("append").save(path)
    assert len(_rows(spark, path)) == 8
    spark.range(1).selectExpr("id", "id AS p").write.format("delta").mode("overwrite").save(path)
    assert _rows(spark, path) == [(0, 0)]
    assert _operations(path) == ["WRITE", "WRITE", "WRITE"]


def test_save_keeps_the_spelling_of_table_properties(spark: Any, tmp_path: Path) -> None:
    """Spark lower-cases the option keys it hands a source; the log keeps the properties'
    own spelling, which other readers match exactly."""
    path = str(tmp_path / "t")
    spark.range(3).write.format("delta").option("delta.enableDeletionVectors", "true").option(
        "delta.appendOnly", "false"
    ).save(path)
    configuration = DeltaLog(path).snapshot().configuration
    assert configuration["delta.enableDeletionVectors"] == "true"
    assert configuration["delta.appendOnly"] == "false"
    assert "delta.enabledeletionvectors" not in configuration


def test_sql_inserts_on_a_path_commit_versions(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    spark.range(4).selectExpr("id", "CAST(id % 2 AS INT) AS p").write.format("delta").partitionBy(
        "p"
    ).save(path)
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (10, 0), (11, 1)")
    assert _rows(spark, path) == [(0, 0), (1, 1), (2, 0), (3, 1), (10, 0), (11, 1)]
    # a static partition: only that partition is replaced
    spark.sql(f"INSERT OVERWRITE delta.`{path}` PARTITION (p = 0) SELECT 20")
    assert _rows(spark, path) == [(1, 1), (3, 1), (11, 1), (20, 0)]
    spark.sql(f"INSERT OVERWRITE delta.`{path}` SELECT 30, 1")
    assert _rows(spark, path) == [(30, 1)]
    assert DeltaLog(path).snapshot().version == 3
    assert _operations(path) == ["WRITE"] * 4
    files = {p.name for p in Path(path).rglob("*.parquet")}
    live = {Path(a).name for a in DeltaLog(path).snapshot().files.column("path").to_pylist()}
    assert live < files  # old files stay for time travel; nothing unlogged was added
    old = spark.read.format("delta").option("versionAsOf", 1).load(path)
    assert sorted(r.id for r in old.collect()) == [0, 1, 2, 3, 10, 11]


def test_an_insert_with_a_wrong_schema_writes_nothing(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    spark.range(2).write.format("delta").save(path)
    with pytest.raises(AnalysisException):  # Spark's own check: one column too many
        spark.sql(f"INSERT INTO delta.`{path}` VALUES (1, 'x')")
    with pytest.raises(SchemaMismatchError):
        spark.range(1).selectExpr("CAST(id AS STRING) AS other").write.format("delta").mode(
            "append"
        ).save(path)
    assert DeltaLog(path).snapshot().version == 0
    assert len(list(Path(path).glob("*.parquet"))) == len(
        DeltaLog(path).snapshot().files.column("path")
    )


def test_insert_overwrite_if_not_exists_is_refused(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    spark.range(2).selectExpr("id", "CAST(id AS INT) AS p").write.format("delta").partitionBy(
        "p"
    ).save(path)
    with pytest.raises(AnalysisException, match="IF NOT EXISTS is not supported"):
        spark.sql(f"INSERT OVERWRITE delta.`{path}` PARTITION (p = 1) IF NOT EXISTS SELECT 5")
    assert DeltaLog(path).snapshot().version == 0


def test_a_schema_given_at_read_time_is_refused(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    spark.range(2).write.format("delta").save(path)
    with pytest.raises(AnalysisException, match="user-specified schema is not supported"):
        spark.read.format("delta").schema("id long").load(path).collect()
