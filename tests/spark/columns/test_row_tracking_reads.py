"""Row tracking on reads: ``_metadata.row_id`` and ``_metadata.row_commit_version`` in any
read of a table with row tracking, as delta-spark gives them (the materialized value where a
file holds one, else the file's ``baseRowId`` + row index and ``defaultRowCommitVersion``):
SQL on paths and names, filters and subqueries on them, time travel, and tables with
partitions, column mapping and deletion vectors. The expected values come from the
``add`` actions of the JSON commits."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pyarrow.parquet as pq
import pytest

from delta_pyspark.tables import DeltaTable


def _adds(path: str, version: int) -> list[dict[str, Any]]:
    text = (Path(path) / "_delta_log" / f"{version:020d}.json").read_text()
    return [a["add"] for a in map(json.loads, text.splitlines()) if "add" in a]


def _expected(path: str, version: int) -> dict[int, tuple[int, int]]:
    """id -> (row id, commit version) from version ``version``'s adds and each file's rows
    in file order (``id``, the first column whatever its physical name; no file of these
    tables holds materialized values)."""
    out = {}
    for add in _adds(path, version):
        ids = pq.read_table(f"{path}/{unquote(add['path'])}").column(0).to_pylist()
        for index, key in enumerate(ids):
            out[key] = (add["baseRowId"] + index, add["defaultRowCommitVersion"])
    return out


def _read(df: Any) -> dict[int, tuple[int, int]]:
    rows = df.select("id", "_metadata.row_id", "_metadata.row_commit_version").collect()
    return {r["id"]: (r["row_id"], r["row_commit_version"]) for r in rows}


@pytest.mark.parametrize(
    "layout",
    ["plain", "partitioned", "column mapping", "deletion vectors"],
)
def test_metadata_fields_on_every_layout(spark: Any, tmp_path: Path, layout: str) -> None:
    path = str(tmp_path / "t")
    writer = (
        spark.range(30)
        .selectExpr("id", "id % 3 AS p", "concat('v', id) AS v")
        .repartition(3, "id")
        .write.format("delta")
        .option("delta.enableRowTracking", "true")
    )
    if layout == "partitioned":
        writer = writer.partitionBy("p")
    if layout == "column mapping":
        writer = writer.option("delta.columnMapping.mode", "name")
    if layout == "deletion vectors":
        writer = writer.option("delta.enableDeletionVectors", "true")
    writer.save(path)
    expected = _expected(path, 0)
    assert sorted(r for r, _ in expected.values()) == list(range(30))
    assert _read(spark.read.format("delta").load(path)) == expected
    # a second commit: its rows take new ids and its version
    spark.range(30, 35).selectExpr("id", "id % 3 AS p", "'w' AS v").write.format("delta").mode(
        "append"
    ).save(path)
    expected |= _expected(path, 1)
    assert {expected[i][1] for i in range(30, 35)} == {1}
    assert _read(spark.read.format("delta").load(path)) == expected
    # a filter and a subquery on the fields, and time travel to before the append
    rows = spark.sql(
        f"SELECT id FROM delta.`{path}` WHERE _metadata.row_commit_version = 1 AND id IN "
        f"(SELECT _metadata.row_id FROM delta.`{path}` WHERE _metadata.row_id >= 32)"
    ).collect()
    high_ids = {row_id for row_id, _ in expected.values() if row_id >= 32}
    assert sorted(r["id"] for r in rows) == sorted(
        k for k, (_, version) in expected.items() if version == 1 and k in high_ids
    )
    old = spark.read.format("delta").option("versionAsOf", 0).load(path)
    assert _read(old) == {i: expected[i] for i in range(30)}
    if layout == "deletion vectors":  # rows a vector drops leave the others' ids alone
        DeltaTable.forPath(spark, path).delete("id % 4 = 0")
        assert any(a.get("deletionVector") for a in _adds(path, 2))
        left = {k: v for k, v in expected.items() if k % 4}
        assert _read(spark.read.format("delta").load(path)) == left


def test_catalog_table_and_rewritten_rows(spark: Any, tmp_path: Path) -> None:
    """On a name: an UPDATE's rows keep their ids and take its version, and the explained
    plan computes the ids from the materialized column, the base row id and the row index."""
    name = "row_tracking_reads"
    spark.sql(f"DROP TABLE IF EXISTS {name}")
    spark.sql(
        f"CREATE TABLE {name} (id BIGINT, v STRING) USING delta "
        f"LOCATION '{tmp_path / 't'}' TBLPROPERTIES (delta.enableRowTracking = true)"
    )
    try:
        spark.sql(f"INSERT INTO {name} SELECT id, 'a' FROM range(10)")
        before = _read(spark.table(name))
        assert sorted(r for r, _ in before.values()) == list(range(10))
        spark.sql(f"UPDATE {name} SET v = 'b' WHERE id < 3")
        after = _read(spark.table(name))
        assert {k: v[0] for k, v in after.items()} == {k: v[0] for k, v in before.items()}
        assert {k: v[1] for k, v in after.items()} == {k: 2 if k < 3 else 1 for k in range(10)}
        plan = spark.sql(f"EXPLAIN SELECT _metadata.row_id FROM {name}").first()[0]
        assert "coalesce(_metadata" in plan and ".base_row_id + _metadata" in plan
        assert "Parquet with row tracking" in plan
    finally:
        spark.sql(f"DROP TABLE IF EXISTS {name}")
