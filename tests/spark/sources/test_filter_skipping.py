"""Stats-based whole-file skipping for ``where``/``filter`` on a Delta DataFrame."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest

from delta_pyspark import scan_report


@pytest.fixture(scope="module")
def ranged(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> str:
    path = str(tmp_path_factory.mktemp("ranged") / "t")
    df = spark.range(0, 800).selectExpr("id", "id % 7 AS v", "CAST(id DIV 400 AS STRING) AS p")
    # one sorted task, 100 rows per file: files hold exactly ids 0-99, 100-199, ...
    df.coalesce(1).sortWithinPartitions("id").write.format("delta").partitionBy("p").option(
        "maxRecordsPerFile", 100
    ).save(path)
    return path


def _ids(df: Any) -> list[int]:
    return sorted(r.id for r in df.select("id").collect())


def test_where_skips_files_by_stats(spark: Any, ranged: str):
    from pyspark.sql import functions as F

    df = spark.read.format("delta").load(ranged)
    assert (scan_report(df).files_total, scan_report(df).files_scanned) == (8, 8)
    one = df.where("id = 5")
    assert scan_report(one).files_scanned == 1 and scan_report(one).files_skipped == 7
    assert _ids(one) == [5]
    col = df.filter(F.col("id").between(390, 410))
    assert scan_report(col).files_scanned == 2
    assert _ids(col) == list(range(390, 411))


def test_chained_filters_combine(spark: Any, ranged: str):
    df = spark.read.format("delta").load(ranged).where("id > 610").where("id < 620")
    assert scan_report(df).files_scanned == 1
    assert _ids(df) == list(range(611, 620))


def test_partition_predicate_and_unmodelled_filters(spark: Any, ranged: str):
    df = spark.read.format("delta").load(ranged)
    part = df.where("p = '1'")
    assert scan_report(part).files_scanned == 4 and len(_ids(part)) == 400
    opaque = df.where("abs(id) = 5")  # not modelled: nothing skipped, rows still exact
    assert scan_report(opaque).files_scanned == 8 and _ids(opaque) == [5]


def test_bound_columns_and_filters_after_projections_skip(spark: Any, ranged: str):
    df = spark.read.format("delta").load(ranged)
    out = df.where(df.id == 7)
    assert _ids(out) == [7]
    assert scan_report(out).files_scanned == 1
    assert scan_report(df.select("id").where("id = 1")).files_scanned == 1


def test_skipping_uses_the_session_time_zone(spark: Any, tmp_path: Path):
    path = str(tmp_path / "ts")
    rows = [(i, dt.datetime(2024, 1, 1, i, 0, tzinfo=dt.UTC)) for i in range(0, 24)]
    spark.createDataFrame(rows, "id long, ts timestamp").repartitionByRange(6, "id").write.format(
        "delta"
    ).save(path)
    spark.conf.set("spark.sql.session.timeZone", "America/Los_Angeles")
    try:
        df = spark.read.format("delta").load(path)
        cond = "ts = '2023-12-31 20:00:00'"  # 04:00 UTC in Los Angeles time
        pruned = df.where(cond)
        assert _ids(pruned) == [4]
        assert scan_report(pruned).files_scanned == 1
    finally:
        spark.conf.set("spark.sql.session.timeZone", "UTC")


def test_time_travel_scan_keeps_its_version_when_filtered(spark: Any, tmp_path: Path):
    path = str(tmp_path / "tt")
    spark.range(0, 10).write.format("delta").save(path)
    spark.range(10, 20).write.format("delta").mode("append").save(path)
    old = spark.read.format("delta").option("versionAsOf", 0).load(path).where("id >= 5")
    assert scan_report(old).version == 0
    assert _ids(old) == list(range(5, 10))
