"""Reading the change data feed (``readChangeFeed``): the feed of each DML kind against a
hand-computed one, the range rules and their typed errors, and the same feed as
``deltalake``'s ``load_cdf`` on tables written here and by delta-rs / delta-spark."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from delta_pyspark.core.protocol.table_features import supports
from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.exceptions import (
    ChangeDataNotRecordedError,
    ChangeDataStartAfterLatestError,
    InvalidChangeDataRangeError,
    NoChangeDataStartError,
)
from delta_pyspark.tables import DeltaTable

COLUMNS = ["id", "part", "v", "_change_type", "_commit_version"]


def feed(spark: Any, path: str, **options: Any) -> Any:
    reader = spark.read.format("delta").option("readChangeFeed", "true")
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load(path)


def changes(spark: Any, path: str, start: int = 0, **options: Any) -> list[tuple[Any, ...]]:
    df = feed(spark, path, startingVersion=start, **options)
    return sorted(tuple(r) for r in df.select(*COLUMNS).collect())


def _table(spark: Any, path: str, dv: bool, partitioned: bool) -> None:
    df = spark.createDataFrame(
        [(1, "a", "p"), (2, "a", "q"), (3, "b", "r"), (4, "b", "s")],
        "id long, part string, v string",
    )
    writer = df.write.format("delta").option("delta.enableChangeDataFeed", "true")
    if dv:
        writer = writer.option("delta.enableDeletionVectors", "true")
    if partitioned:
        writer = writer.partitionBy("part")
    writer.save(path)


@pytest.mark.parametrize("partitioned", [True, False])
@pytest.mark.parametrize("dv", [False, True])
def test_feed_of_every_dml_kind(spark: Any, tmp_path: Path, dv: bool, partitioned: bool) -> None:
    path = str(tmp_path / "t")
    _table(spark, path, dv, partitioned)
    table = DeltaTable.forPath(spark, path)
    table.update("id = 1", {"v": "'p2'"})  # v1
    spark.sql(f"DELETE FROM delta.`{path}` WHERE id = 2")  # v2
    source = spark.createDataFrame(
        [(3, "b", "m"), (4, "b", None), (5, "a", "n")], "id long, part string, v string"
    )
    (
        table.alias("t")
        .merge(source.alias("s"), "t.id = s.id")
        .whenMatchedUpdate("s.v IS NOT NULL", {"v": "s.v"})
        .whenMatchedDelete()
        .whenNotMatchedInsertAll()
        .execute()
    )  # v3
    spark.sql(f"DELETE FROM delta.`{path}` WHERE part = 'a'")  # v4
    table.optimize().executeCompaction()  # v5: no data change
    expected = [
        (1, "a", "p", "insert", 0),
        (2, "a", "q", "insert", 0),
        (3, "b", "r", "insert", 0),
        (4, "b", "s", "insert", 0),
        (1, "a", "p", "update_preimage", 1),
        (1, "a", "p2", "update_postimage", 1),
        (2, "a", "q", "delete", 2),
        (3, "b", "r", "update_preimage", 3),
        (3, "b", "m", "update_postimage", 3),
        (4, "b", "s", "delete", 3),
        (5, "a", "n", "insert", 3),
        (1, "a", "p2", "delete", 4),
        (5, "a", "n", "delete", 4),
    ]
    assert changes(spark, path) == sorted(expected)
    assert changes(spark, path, 2, endingVersion=3) == sorted(e for e in expected if e[4] in (2, 3))
    df = feed(spark, path, startingVersion=0)
    types = {f.name: f.dataType.simpleString() for f in df.schema.fields}
    assert list(types) == [
        "id",
        "part",
        "v",
        "_change_type",
        "_commit_version",
        "_commit_timestamp",
    ]
    assert types["_commit_version"] == "bigint" and types["_commit_timestamp"] == "timestamp"
    assert df.where("_change_type = 'delete'").count() == 4
    history = {h["version"]: h["timestamp"] for h in table.history().collect()}
    stamps = {r[0]: r[1] for r in df.select("_commit_version", "_commit_timestamp").collect()}
    assert all(stamps[v] == history[v] for v in stamps)


def test_range_errors_are_typed(spark: Any, tmp_path: Path) -> None:
    from pyspark.errors import AnalysisException, IllegalArgumentException

    path = str(tmp_path / "t")
    spark.range(2).write.format("delta").save(path)  # v0 without the feed
    spark.sql(f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES (delta.enableChangeDataFeed = true)")
    spark.range(2, 3).write.format("delta").mode("append").save(path)  # v2
    assert supports(DeltaLog(path).snapshot().protocol, "changeDataFeed")  # writer version 4
    assert [r.id for r in feed(spark, path, startingVersion=1).collect()] == [2]
    with pytest.raises(ChangeDataNotRecordedError, match=r"not\s+recorded for version \[0\]") as e:
        feed(spark, path, startingVersion=0)
    assert isinstance(e.value, AnalysisException)
    with pytest.raises(NoChangeDataStartError) as e2:
        spark.read.format("delta").option("readChangeFeed", "true").load(path)
    assert isinstance(e2.value, AnalysisException)
    with pytest.raises(ChangeDataStartAfterLatestError, match="exceeds the latest") as e3:
        feed(spark, path, startingVersion=5)
    assert isinstance(e3.value, IllegalArgumentException)
    with pytest.raises(InvalidChangeDataRangeError, match="End cannot be before start"):
        feed(spark, path, startingVersion=2, endingVersion=1)
    assert feed(spark, path, startingVersion=2, endingVersion=9).count() == 1  # clamped


def test_timestamps_select_versions(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    spark.range(1).write.format("delta").option("delta.enableChangeDataFeed", "true").save(path)
    spark.range(1, 2).write.format("delta").mode("append").save(path)
    spark.range(2, 3).write.format("delta").mode("append").save(path)
    stamps = [h["timestamp"] for h in sorted(DeltaTable.forPath(spark, path).history().collect())]
    text = [s.strftime("%Y-%m-%d %H:%M:%S.%f") for s in stamps]
    got = feed(spark, path, startingTimestamp=text[1], endingTimestamp=text[1]).collect()
    assert [r.id for r in got] == [1]


def _differences(
    spark: Any, path: str, start: int, timestamps: bool = False
) -> tuple[list[Any], list[Any]]:
    """Both feeds' rows; commit timestamps only with ``timestamps`` (deltalake takes them
    from commitInfo, delta-spark and this package from the commit file's time)."""
    import deltalake
    import pyarrow as pa

    theirs = pa.table(deltalake.DeltaTable(path).load_cdf(starting_version=start).read_all())
    names = [n for n in theirs.column_names if timestamps or n != "_commit_timestamp"]
    mine = feed(spark, path, startingVersion=start).select(*names).collect()
    expected = sorted(tuple(r.values()) for r in theirs.select(names).to_pylist())
    return sorted(tuple(r) for r in mine), expected


@pytest.mark.long  # CI's second step, for the quick run's time
@pytest.mark.parametrize("dv", [False, True])
def test_same_feed_as_deltalake_on_tables_written_here(
    spark: Any, tmp_path: Path, dv: bool
) -> None:
    path = str(tmp_path / "t")
    _table(spark, path, dv, partitioned=True)
    table = DeltaTable.forPath(spark, path)
    table.update("id = 1", {"v": "'x'"})
    spark.sql(f"DELETE FROM delta.`{path}` WHERE id = 3")
    source = spark.createDataFrame([(2, "a", "y"), (9, "b", "z")], "id long, part string, v string")
    (
        table.alias("t")
        .merge(source.alias("s"), "t.id = s.id")
        .whenMatchedUpdateAll()
        .whenNotMatchedInsertAll()
        .execute()
    )
    mine, theirs = _differences(spark, path, 0)
    assert mine == theirs and len(mine) == 10


@pytest.mark.parametrize(
    ("name", "start"),
    [
        ("cdf-table", 0),
        ("cdf-table-non-partitioned", 0),
        ("cdf-table-with-cdc-and-dvs", 0),
        ("simple_table_with_cdc", 0),
        ("checkpoint-cdf-table", 3),
        ("cdc_ict_table", 0),
    ],
)
def test_delta_rs_tables_read_as_deltalake_reads_them(
    spark: Any, testdata: Path, tmp_path: Path, name: str, start: int
) -> None:
    path = tmp_path / name
    shutil.copytree(testdata / "delta-rs" / name, path)
    mine, theirs = _differences(spark, str(path), start, timestamps=name == "cdc_ict_table")
    assert mine == theirs and mine


def test_table_changes_in_sql(spark: Any, tmp_path: Path) -> None:
    from pyspark.errors import AnalysisException

    path = str(tmp_path / "t")
    _table(spark, path, dv=False, partitioned=True)
    DeltaTable.forPath(spark, path).update("id = 1", {"v": "'x'"})
    spark.sql("DROP TABLE IF EXISTS cdf_sql")
    spark.sql(f"CREATE TABLE cdf_sql USING delta LOCATION '{path}'")
    try:
        by_path = spark.sql(f"SELECT * FROM table_changes_by_path('{path}', 1)")
        assert sorted(tuple(r) for r in by_path.select(*COLUMNS).collect()) == [
            (1, "a", "p", "update_preimage", 1),
            (1, "a", "x", "update_postimage", 1),
        ]
        by_name = spark.sql(
            "SELECT c.id, _change_type FROM table_changes('cdf_sql', 0, 0) AS c WHERE c.id > 2"
        )
        assert sorted(tuple(r) for r in by_name.collect()) == [(3, "insert"), (4, "insert")]
        stamp = DeltaTable.forPath(spark, path).history().collect()[0].timestamp
        since = spark.sql(f"SELECT count(*) FROM table_changes('default.cdf_sql', '{stamp}')")
        assert since.first()[0] == 2
        with pytest.raises(AnalysisException, match="not a Delta table"):
            spark.sql("SELECT * FROM table_changes('no_such_table', 0)")
        reader = spark.read.option("readChangeFeed", "true").option("startingVersion", 1)
        assert reader.table("cdf_sql").count() == 2  # by name through the catalog
    finally:
        spark.sql("DROP TABLE IF EXISTS cdf_sql")


def test_replace_where_on_data_columns_records_its_changes(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    _table(spark, path, dv=False, partitioned=False)
    new = spark.createDataFrame([(2, "a", "q2")], "id long, part string, v string")
    new.write.format("delta").mode("overwrite").option("replaceWhere", "id = 2").save(path)
    assert changes(spark, path, 1) == [(2, "a", "q", "delete", 1), (2, "a", "q2", "insert", 1)]
    assert sorted(tuple(r) for r in spark.read.format("delta").load(path).collect()) == [
        (1, "a", "p"),
        (2, "a", "q2"),
        (3, "b", "r"),
        (4, "b", "s"),
    ]
