"""Reading tables with deletion vectors: the JVM helper's Parquet format drops marked rows.

Every column type Spark's Parquet reader fills, with nulls, through each way the reader
hands rows on (vectorised batches, vectorised rows, the row-based reader), with row
indexes counted (whole files, no filter) or read from Spark (filters, split files).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from delta_pyspark.tables import DeltaTable

N = 3_000
DELETE = "id % 7 = 3 OR id BETWEEN 1000 AND 1199"  # scattered rows and whole small batches

_COLUMNS = [
    "id",
    "CAST(id % 2 = 0 AS BOOLEAN) AS b",
    "CAST(id % 100 AS TINYINT) AS i8",
    "CAST(id AS SMALLINT) AS i16",
    "CAST(id AS INT) AS i32",
    "id * 3 AS i64",
    "CAST(id / 4 AS FLOAT) AS f32",
    "id / 8 AS f64",
    "CAST(id / 100 AS DECIMAL(7, 2)) AS d7",
    "CAST(id / 100 AS DECIMAL(15, 2)) AS d15",
    "CAST(id / 100 AS DECIMAL(30, 2)) AS d30",
    "CONCAT('s', id) AS s_plain",
    "CONCAT('k', id % 5) AS s_dict",
    "CAST(CONCAT('b', id) AS BINARY) AS bin",
    "DATE_ADD(DATE'2020-01-01', CAST(id AS INT)) AS day",
    "TIMESTAMP_SECONDS(id * 3600) AS ts",
    "CAST(TIMESTAMP_SECONDS(id) AS TIMESTAMP_NTZ) AS ts_ntz",
    "SEQUENCE(0, CAST(id % 4 AS INT)) AS arr",
    "MAP(CONCAT('m', id % 3), id) AS kv",
    "NAMED_STRUCT('x', id, 'y', CONCAT('y', id), 'z', ARRAY(id)) AS st",
    "ARRAY(NAMED_STRUCT('q', id)) AS arr_st",
    "CAST(id % 3 AS STRING) AS part",
]


def _source(spark: Any) -> Any:
    """``_COLUMNS`` of ``N`` rows; every column but ``id`` and ``part`` null on every 11th."""
    df = spark.range(N).selectExpr(*_COLUMNS)
    keep = {"id", "part"}
    return df.selectExpr(
        *[c if c in keep else f"IF(id % 11 = 5, NULL, {c}) AS {c}" for c in df.columns]
    )


def _collect(df: Any) -> list[tuple]:
    return sorted((tuple(r) for r in df.collect()), key=lambda r: r[0])


@pytest.fixture(scope="module", params=[False, True], ids=["unpartitioned", "partitioned"])
def table(
    request: pytest.FixtureRequest, spark: Any, tmp_path_factory: pytest.TempPathFactory
) -> tuple[str, list[tuple]]:
    """A table whose 3 files each hold several row groups and vectors; its expected rows."""
    path = str(tmp_path_factory.mktemp("dv_scan") / "t")
    hadoop = spark.sparkContext._jsc.hadoopConfiguration()
    hadoop.set("parquet.block.size", "16384")
    try:
        writer = _source(spark).repartitionByRange(3, "id").write.format("delta")
        if request.param:
            writer = writer.partitionBy("part")
        writer.option("delta.enableDeletionVectors", "true").save(path)
    finally:
        hadoop.unset("parquet.block.size")
    files_before = sorted(p.name for p in Path(path).rglob("*.parquet"))
    DeltaTable.forPath(spark, path).delete(DELETE)
    assert sorted(p.name for p in Path(path).rglob("*.parquet")) == files_before  # vectors only
    expected = _collect(_source(spark).where(f"NOT ({DELETE})").select(*_order(path, spark)))
    return path, expected


def _order(path: str, spark: Any) -> list[str]:
    return spark.read.format("delta").load(path).columns


READERS = {
    "vectorized batches": {},
    "vectorized rows": {"spark.sql.codegen.wholeStage": "false"},
    "row-based reader": {"spark.sql.parquet.enableVectorizedReader": "false"},
    "small batches": {"spark.sql.parquet.columnarReaderBatchSize": "64"},
    "off-heap vectors": {"spark.sql.columnVector.offheap.enabled": "true"},
}


@pytest.mark.parametrize("reader", list(READERS))
def test_every_type_reads_exactly_through_every_reader(
    spark: Any, table: tuple[str, list[tuple]], conf: Any, reader: str
) -> None:
    path, expected = table
    for key, value in READERS[reader].items():
        conf(key, value)
    df = spark.read.format("delta").load(path)
    assert len(expected) == N - len([i for i in range(N) if i % 7 == 3 or 1000 <= i <= 1199])
    assert _collect(df) == expected  # whole files, no filter: row indexes counted
    filtered = df.where("id >= 500")  # pushed to Parquet: row indexes read from Spark
    assert _collect(filtered) == [r for r in expected if r[0] >= 500]
    conf("spark.sql.files.maxPartitionBytes", "8k")  # files split by row groups
    conf("spark.sql.files.openCostInBytes", "0")
    split = spark.read.format("delta").load(path)
    assert split.rdd.getNumPartitions() > 3
    assert _collect(split) == expected


def test_the_scan_is_plain_parquet_with_the_vectors_in_its_format(
    spark: Any, table: tuple[str, list[tuple]]
) -> None:
    path, expected = table
    df = spark.read.format("delta").load(path).where("id > 2900").select("id", "s_dict")
    plan = df._jdf.queryExecution().executedPlan().toString()
    assert "Parquet with deletion vectors" in plan  # each listed file carries its rows
    assert "Join" not in plan and "Filter" in plan  # the user's filter, nothing else
    assert "GreaterThan(id,2900)" in plan  # pushed to Parquet
    s_dict = _order(path, spark).index("s_dict")
    assert _collect(df) == [(r[0], r[s_dict]) for r in expected if r[0] > 2900]


def test_a_cached_read_does_not_answer_for_another_version_or_a_plain_read(
    spark: Any, tmp_path: Path
) -> None:
    path = str(tmp_path / "t")
    spark.range(100).coalesce(1).write.format("delta").option(
        "delta.enableDeletionVectors", "true"
    ).save(path)
    dt = DeltaTable.forPath(spark, path)
    dt.delete("id < 10")
    before = spark.read.format("delta").load(path).cache()
    try:
        assert before.count() == 90
        dt.delete("id >= 90")  # the same file, a larger vector
        after = spark.read.format("delta").load(path)
        assert sorted(r.id for r in after.collect()) == list(range(10, 90))
        (data_file,) = Path(path).glob("*.parquet")
        assert spark.read.parquet(str(data_file)).count() == 100  # the file itself is intact
    finally:
        before.unpersist()
