"""Writes Spark plans for V2 catalogs only, on Delta tables: ``df.writeTo(name)``
(append, overwrite by condition, dynamic partition overwrite, replace, createOrReplace),
``CREATE OR REPLACE TABLE`` / ``REPLACE TABLE``, and delta-spark's ``@v`` time-travel
suffix of a table name. Each is one commit on the table's log, keeping its history."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pyspark.errors import AnalysisException

from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.exceptions import (
    DeltaAnalysisException,
    InvariantViolationError,
    VersionNotFoundError,
)


@pytest.fixture
def names(spark: Any) -> Iterator[list[str]]:
    """Table names a test registers; dropped afterwards."""
    created: list[str] = []
    yield created
    for name in created:
        spark.sql(f"DROP TABLE IF EXISTS {name}")


def _location(spark: Any, name: str) -> str:
    return str(spark.sql(f"DESCRIBE DETAIL {name}").first().location).removeprefix("file:")


def _operations(location: str) -> list[str]:
    log = Path(location) / "_delta_log"
    operations = []
    for commit in sorted(log.glob("*.json")):
        for line in commit.read_text().splitlines():
            if "commitInfo" in line:
                operations.append(json.loads(line)["commitInfo"]["operation"])
    return operations


def _rows(df: Any) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in df.collect())


def _described(spark: Any, name: str) -> list[tuple[str, str]]:
    """DESCRIBE's columns (what the catalog entry shows), without the partition section."""
    rows = spark.sql(f"DESCRIBE {name}").collect()
    out = []
    for r in rows:
        if r.col_name.startswith("#"):
            break
        out.append((r.col_name, r.data_type))
    return out


def test_write_to_appends_overwrites_and_overwrites_partitions(
    spark: Any, names: list[str]
) -> None:
    names.append("v2_t")
    spark.sql("CREATE TABLE v2_t USING delta PARTITIONED BY (p) AS SELECT 1L AS id, 0L AS p")
    location = _location(spark, "v2_t")
    spark.createDataFrame([(2, 1), (3, 0)], "id long, p long").writeTo("v2_t").append()
    assert _rows(spark.table("v2_t")) == [(1, 0), (2, 1), (3, 0)]

    new = spark.createDataFrame([(20, 1)], "id long, p long")
    new.writeTo("v2_t").overwrite(new.p == 1)
    assert _rows(spark.table("v2_t")) == [(1, 0), (3, 0), (20, 1)]

    spark.createDataFrame([(30, 0)], "id long, p long").writeTo("v2_t").overwritePartitions()
    assert _rows(spark.table("v2_t")) == [(20, 1), (30, 0)]  # partition p=1 kept

    assert _operations(location) == ["CREATE TABLE AS SELECT", "WRITE", "WRITE", "WRITE"]
    history = spark.sql("DESCRIBE HISTORY v2_t").orderBy("version").collect()
    assert history[2].operationParameters["predicate"] == '["(p = CAST(1 AS BIGINT))"]'
    assert history[3].operationParameters["dynamicPartitionOverwrite"] == "true"


def test_write_to_casts_as_store_assignment_allows(spark: Any, names: list[str]) -> None:
    """Like INSERT, a V2 write takes an int column into a bigint one (ANSI store assignment);
    a narrowing is still a schema mismatch, and the table keeps its types."""
    names.append("v2_cast")
    spark.sql("CREATE TABLE v2_cast (id BIGINT, v DOUBLE) USING delta")
    spark.createDataFrame([(1, 2)], "id int, v int").writeTo("v2_cast").append()
    assert _rows(spark.table("v2_cast")) == [(1, 2.0)]
    assert [f.dataType.simpleString() for f in spark.table("v2_cast").schema] == [
        "bigint",
        "double",
    ]
    with pytest.raises(AnalysisException, match="Failed to merge fields"):
        spark.createDataFrame([("x", 1.0)], "id string, v double").writeTo("v2_cast").append()
    assert _rows(spark.table("v2_cast")) == [(1, 2.0)]


def test_write_to_overwrite_refuses_rows_outside_its_condition(
    spark: Any, names: list[str]
) -> None:
    names.append("v2_guard")
    spark.sql("CREATE TABLE v2_guard USING delta AS SELECT 1L AS id")
    location = _location(spark, "v2_guard")
    new = spark.createDataFrame([(5,)], "id long")
    with pytest.raises(InvariantViolationError, match="replaceWhere"):
        new.writeTo("v2_guard").overwrite(new.id < 3)
    assert _rows(spark.table("v2_guard")) == [(1,)]
    assert _operations(location) == ["CREATE TABLE AS SELECT"]  # nothing committed


def test_write_to_overwrite_refuses_a_replace_where_option(spark: Any, names: list[str]) -> None:
    """A ``replaceWhere`` option besides ``overwrite``'s own condition is refused, as
    delta-spark refuses it, from PySpark's writer and from the JVM's (the plan Spark builds)."""
    names.append("v2_both")
    spark.sql("CREATE TABLE v2_both USING delta AS SELECT 1L AS id")
    location = _location(spark, "v2_both")
    new = spark.createDataFrame([(2,)], "id long")
    with pytest.raises(DeltaAnalysisException, match="DELTA_REPLACE_WHERE_IN_OVERWRITE"):
        new.writeTo("v2_both").option("replacewhere", "id = 1").overwrite(new.id == 2)
    jvm_writer = new._jdf.writeTo("v2_both").option("replaceWhere", "id = 1")
    with pytest.raises(AnalysisException, match="DELTA_REPLACE_WHERE_IN_OVERWRITE"):
        jvm_writer.overwrite((new.id == 2)._jc)
    assert _rows(spark.table("v2_both")) == [(1,)]
    assert _operations(location) == ["CREATE TABLE AS SELECT"]


def test_write_to_a_path_table(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    spark.range(2).write.format("delta").save(path)
    spark.range(5, 6).writeTo(f"delta.`{path}`").append()
    assert _rows(spark.read.format("delta").load(path)) == [(0,), (1,), (5,)]
    assert _operations(path) == ["WRITE", "WRITE"]


def test_write_to_leaves_other_tables_to_spark(spark: Any, names: list[str]) -> None:
    names.append("v2_parquet")
    spark.sql("CREATE TABLE v2_parquet (id long) USING parquet")
    with pytest.raises(AnalysisException, match="Cannot write into v1 table"):
        spark.range(1).writeTo("v2_parquet").append()
    with pytest.raises(AnalysisException, match="TABLE_OR_VIEW_NOT_FOUND"):
        spark.range(1).writeTo("v2_missing").append()


def test_create_or_replace_keeps_history_and_replaces_the_definition(
    spark: Any, names: list[str]
) -> None:
    names.append("v2_cor")
    df = spark.createDataFrame([(1, "a")], "id long, s string")
    df.writeTo("v2_cor").using("delta").tableProperty("delta.appendOnly", "false").createOrReplace()
    location = _location(spark, "v2_cor")
    first = DeltaLog(location).snapshot()
    assert first.configuration == {"delta.appendOnly": "false"}

    other = spark.createDataFrame([(7, 1)], "n int, p int")
    other.writeTo("v2_cor").using("delta").partitionedBy("p").createOrReplace()
    snapshot = DeltaLog(location).snapshot()
    assert snapshot.metadata.id == first.metadata.id  # the same table, a new definition
    assert snapshot.partition_columns == ["p"]
    assert snapshot.configuration == {}  # the old properties went with the old definition
    assert [f.name for f in snapshot.schema.fields] == ["n", "p"]
    assert _rows(spark.table("v2_cor")) == [(7, 1)]
    assert _described(spark, "v2_cor") == [("n", "int"), ("p", "int")]
    assert _operations(location) == [
        "CREATE OR REPLACE TABLE AS SELECT",
        "CREATE OR REPLACE TABLE AS SELECT",
    ]
    assert _rows(spark.sql("SELECT * FROM v2_cor VERSION AS OF 0")) == [(1, "a")]

    spark.range(3).writeTo("v2_cor").using("delta").replace()
    assert _rows(spark.table("v2_cor")) == [(0,), (1,), (2,)]
    assert _operations(location)[-1] == "REPLACE TABLE AS SELECT"


def test_write_to_replace_needs_an_existing_table(spark: Any) -> None:
    with pytest.raises(DeltaAnalysisException, match="`v2_nothing` cannot be found"):
        spark.range(1).writeTo("v2_nothing").using("delta").replace()
    assert not spark.catalog.tableExists("v2_nothing")


def test_sql_create_or_replace_table(spark: Any, names: list[str]) -> None:
    names.append("rt_sql")
    spark.sql("CREATE OR REPLACE TABLE rt_sql USING delta AS SELECT 1 AS id")
    location = _location(spark, "rt_sql")
    assert spark.sql("DESCRIBE DETAIL rt_sql").first().location.endswith("/rt_sql")
    spark.sql(
        "CREATE OR REPLACE TABLE rt_sql USING delta PARTITIONED BY (p) COMMENT 'second' "
        "TBLPROPERTIES ('delta.logRetentionDuration' = 'interval 2 days') "
        "AS SELECT id, id % 2 AS p FROM range(4)"
    )
    snapshot = DeltaLog(location).snapshot()
    assert snapshot.partition_columns == ["p"]
    assert snapshot.metadata.description == "second"
    assert snapshot.configuration == {"delta.logRetentionDuration": "interval 2 days"}
    assert _rows(spark.table("rt_sql")) == [(0, 0), (1, 1), (2, 0), (3, 1)]

    spark.sql("REPLACE TABLE rt_sql (a INT, b STRING) USING delta")
    assert _rows(spark.table("rt_sql")) == []
    assert _described(spark, "rt_sql") == [("a", "int"), ("b", "string")]
    assert DeltaLog(location).snapshot().partition_columns == []
    assert _operations(location) == [
        "CREATE OR REPLACE TABLE AS SELECT",
        "CREATE OR REPLACE TABLE AS SELECT",
        "REPLACE TABLE",
    ]
    history = spark.sql("DESCRIBE HISTORY rt_sql").orderBy("version").collect()
    assert [h.operation for h in history][-1] == "REPLACE TABLE"
    assert _rows(spark.sql("SELECT * FROM rt_sql VERSION AS OF 1 WHERE p = 1")) == [
        (1, 1),
        (3, 1),
    ]


def test_sql_replace_on_a_path_and_at_a_location(
    spark: Any, names: list[str], tmp_path: Path
) -> None:
    path = str(tmp_path / "by_path")
    spark.sql(f"CREATE OR REPLACE TABLE delta.`{path}` USING delta AS SELECT 5 AS id")
    spark.sql(f"CREATE OR REPLACE TABLE delta.`{path}` USING delta AS SELECT 'x' AS s")
    assert _rows(spark.read.format("delta").load(path)) == [("x",)]
    assert len(_operations(path)) == 2

    names.append("rt_external")
    where = str(tmp_path / "external")
    spark.sql(
        f"CREATE OR REPLACE TABLE rt_external USING delta LOCATION '{where}' AS SELECT 1 AS a"
    )
    rows = spark.sql("DESCRIBE TABLE EXTENDED rt_external").collect()
    assert {r.col_name: r.data_type for r in rows}["Type"] == "EXTERNAL"
    with pytest.raises(DeltaAnalysisException, match="DELTA_CREATE_TABLE_WITH_DIFFERENT_LOCATION"):
        spark.sql(
            f"CREATE OR REPLACE TABLE rt_external USING delta LOCATION '{tmp_path}/elsewhere' "
            "AS SELECT 2 AS a"
        )
    assert _rows(spark.table("rt_external")) == [(1,)]


def test_sql_replace_refusals(spark: Any, names: list[str]) -> None:
    with pytest.raises(DeltaAnalysisException, match="`rt_missing` cannot be found"):
        spark.sql("REPLACE TABLE rt_missing USING delta AS SELECT 1 AS id")
    names.append("rt_parquet")
    spark.sql("CREATE TABLE rt_parquet (id long) USING parquet")
    with pytest.raises(DeltaAnalysisException, match="DELTA_TABLE_NOT_DELTA"):
        spark.sql("CREATE OR REPLACE TABLE rt_parquet USING delta AS SELECT 1 AS id")
    with pytest.raises(AnalysisException, match="partitioned by columns"):
        spark.sql(
            "CREATE OR REPLACE TABLE rt_bucket USING delta PARTITIONED BY (bucket(2, id)) "
            "AS SELECT 1 AS id"
        )


def test_alter_table_by_name_refreshes_the_catalog_entry(spark: Any, names: list[str]) -> None:
    names.append("entry_t")
    spark.sql("CREATE TABLE entry_t USING delta AS SELECT 1L AS id")
    spark.sql("ALTER TABLE entry_t ADD COLUMNS (note string)")
    assert _described(spark, "entry_t") == [("id", "bigint"), ("note", "string")]
    assert [c.name for c in spark.catalog.listColumns("entry_t")] == ["id", "note"]


def test_at_version_and_timestamp_suffix_of_a_table_name(spark: Any, names: list[str]) -> None:
    names.append("at_t")
    spark.sql("CREATE TABLE at_t USING delta AS SELECT 1 AS id")
    spark.sql("INSERT INTO at_t VALUES (2)")
    assert _rows(spark.sql("SELECT * FROM `at_t@v0`")) == [(1,)]
    assert _rows(spark.sql("SELECT x.id FROM default.`at_t@V1` AS x")) == [(1,), (2,)]
    assert _rows(spark.sql("SELECT at_t.id FROM `at_t@v0`")) == [(1,)]  # aliased by its name
    first = spark.sql("DESCRIBE HISTORY at_t").where("version = 0").first().timestamp
    stamp = first.strftime("%Y%m%d%H%M%S") + f"{first.microsecond // 1000:03d}"
    assert _rows(spark.sql(f"SELECT * FROM `at_t@{stamp}`")) == [(1,)]
    location = _location(spark, "at_t")
    assert _rows(spark.sql(f"SELECT * FROM delta.`{location}@v0`")) == [(1,)]
    with pytest.raises(VersionNotFoundError, match="version 9"):
        spark.sql("SELECT * FROM `at_t@v9`").collect()
    with pytest.raises(AnalysisException, match="TABLE_OR_VIEW_NOT_FOUND"):
        spark.sql("SELECT * FROM `at_nothing@v0`").collect()
