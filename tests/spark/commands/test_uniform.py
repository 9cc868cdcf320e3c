"""UniForm through Spark: a table created with IcebergCompatV2 and ``enabledFormats =
iceberg`` is read by pyiceberg and DuckDB's iceberg extension with the rows Spark reads at
every Delta version, through appends, overwrite, copy-on-write DML, OPTIMIZE, schema
evolution and a partitioned layout; REORG ... UPGRADE UNIFORM makes an existing table so."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pyarrow.parquet as pq
import pytest
from pyiceberg.table import StaticTable

from delta_pyspark.core.protocol.column_mapping import physical_name
from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.exceptions import IcebergCompatViolationError
from iceberg_readers import duckdb_rows

UNIFORM = (
    "TBLPROPERTIES ('delta.enableIcebergCompatV2' = 'true', "
    "'delta.universalFormat.enabledFormats' = 'iceberg')"
)


def _plain(row: dict[str, Any]) -> dict[str, Any]:
    """Timestamps as naive UTC (Iceberg readers return them zoned, Spark in its session zone,
    UTC in these tests)."""
    return {
        k: (v.astimezone(dt.UTC).replace(tzinfo=None) if isinstance(v, dt.datetime) and v.tzinfo
            else v)
        for k, v in row.items()
    }  # fmt: skip


def _spark_rows(spark: Any, path: str, version: int) -> list[dict[str, Any]]:
    df = spark.read.format("delta").option("versionAsOf", version).load(path)
    return sorted((r.asDict(recursive=True) for r in df.collect()), key=lambda r: r["id"])


def _assert_every_version_agrees(spark: Any, path: str) -> list[str]:
    """pyiceberg and DuckDB read each Iceberg snapshot as Spark reads its Delta version;
    returns the snapshots' Iceberg operations."""
    assert spark.conf.get("spark.sql.session.timeZone") == "UTC"
    table = StaticTable.from_metadata(path)
    versions = [int(s.summary["delta-version"]) for s in table.metadata.snapshots]
    latest = spark.sql(f"DESCRIBE HISTORY delta.`{path}` LIMIT 1").collect()[0]["version"]
    assert versions == list(range(latest + 1))  # one snapshot per version, in order
    for snap, version in zip(table.metadata.snapshots, versions, strict=True):
        expected = [_plain(r) for r in _spark_rows(spark, path, version)]
        iceberg = table.scan(snapshot_id=snap.snapshot_id).to_arrow().to_pylist()
        assert sorted(map(_plain, iceberg), key=lambda r: r["id"]) == expected, version
        assert [_plain(r) for r in duckdb_rows(path, snap.snapshot_id)] == expected, version
    return [s.summary.operation.value for s in table.metadata.snapshots]


def test_iceberg_readers_see_every_version_of_a_uniform_table(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    spark.sql(
        f"CREATE TABLE delta.`{path}` (id BIGINT, name STRING, p STRING, ts TIMESTAMP, "
        f"amt DECIMAL(10, 2), st STRUCT<a: INT, b: STRING>) USING delta PARTITIONED BY (p) "
        + UNIFORM
    )
    t = f"delta.`{path}`"
    spark.sql(
        f"INSERT INTO {t} VALUES (1, 'a', 'x', TIMESTAMP'2024-01-01 10:00:00.123456', 1.50, "
        "named_struct('a', 1, 'b', 'q')), (2, 'b', 'y', NULL, 2.25, NULL)"
    )
    for i in range(3, 6):  # small files for OPTIMIZE to compact
        spark.sql(f"INSERT INTO {t} VALUES ({i}, 'n{i}', 'x', NULL, {i}.00, NULL)")
    spark.sql(f"UPDATE {t} SET name = 'bb' WHERE id = 2")
    spark.sql(f"DELETE FROM {t} WHERE id = 1")
    spark.sql(
        f"MERGE INTO {t} AS t USING (SELECT 3L AS id, 'm' AS name UNION ALL "
        "SELECT 9L, 'new') AS s ON t.id = s.id WHEN MATCHED THEN UPDATE SET t.name = s.name "
        "WHEN NOT MATCHED THEN INSERT (id, name, p) VALUES (s.id, s.name, 'z')"
    )
    optimized = spark.sql(f"OPTIMIZE {t}").collect()[0]["metrics"]
    assert optimized["numFilesRemoved"] > optimized["numFilesAdded"] >= 1
    spark.sql(f"ALTER TABLE {t} ADD COLUMNS (extra INT)")
    spark.sql(f"ALTER TABLE {t} RENAME COLUMN name TO label")
    spark.createDataFrame(
        [(7, "g", "y", None, Decimal("7.00"), None, 70, True)],
        "id BIGINT, label STRING, p STRING, ts TIMESTAMP, amt DECIMAL(10, 2), "
        "st STRUCT<a: INT, b: STRING>, extra INT, flag BOOLEAN",
    ).write.format("delta").mode("append").option("mergeSchema", "true").save(path)
    spark.sql(f"INSERT OVERWRITE {t} PARTITION (p = 'z') SELECT 10, 'o', NULL, 1.00, NULL, 1, "
              "false")  # fmt: skip

    operations = _assert_every_version_agrees(spark, path)
    assert {"append", "overwrite", "delete", "replace"} <= set(operations)
    table = StaticTable.from_metadata(path)
    names = ["id", "label", "p", "ts", "amt", "st", "extra", "flag"]
    assert [f.name for f in table.schema().fields] == names
    assert [f.name for f in table.spec().fields] == ["p"]
    assert len(table.metadata.schemas) == 4  # created, ADD COLUMNS, RENAME, mergeSchema
    _assert_iceberg_files(path)


def _assert_iceberg_files(path: str) -> None:
    """Every live data file is as IcebergCompatV2 wants it: each column with its Parquet
    field id (Iceberg readers match columns by id; name mapping is only for files that
    predate the upgrade), the partition column's values in the file too, and delta-spark's
    ``ICEBERG_COMPAT_VERSION`` tag on its add."""
    snapshot = DeltaLog.for_table(path).snapshot()
    part = physical_name(snapshot.schema.field("p"), "name")
    files = snapshot.files.select(["path", "tags"]).to_pylist()
    assert files
    for f in files:
        schema = pq.read_schema(f"{path}/{unquote(f['path'])}")
        assert all(b"PARQUET:field_id" in (c.metadata or {}) for c in schema), f["path"]
        assert part in schema.names, f["path"]
        assert dict(f["tags"] or []) == {"ICEBERG_COMPAT_VERSION": "2"}, f["path"]


def test_a_uniform_table_keeps_the_rules_on_later_commits(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    spark.sql(f"CREATE TABLE delta.`{path}` (id BIGINT, p STRING) USING delta " + UNIFORM)
    before = sorted(p.name for p in (tmp_path / "t" / "_delta_log").glob("*.json"))
    for statement, condition in [
        (f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ('delta.enableDeletionVectors' = "
         "'true')", "DELETION_VECTORS_SHOULD_BE_DISABLED"),
        (f"ALTER TABLE delta.`{path}` ADD COLUMNS (tags ARRAY<STRING>)",
         "UNSUPPORTED_DATA_TYPE"),
        (f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ('delta.enableIcebergCompatV2' = "
         "'false', 'delta.universalFormat.enabledFormats' = 'iceberg')",
         "DELTA_UNIVERSAL_FORMAT_VIOLATION"),
    ]:  # fmt: skip
        with pytest.raises(IcebergCompatViolationError, match=condition) as info:
            spark.sql(statement)
        assert condition in str(info.value.condition)
    after = sorted(p.name for p in (tmp_path / "t" / "_delta_log").glob("*.json"))
    assert after == before
    # turning IcebergCompatV2 off alone turns UniForm's Iceberg off with it, as in delta-spark
    spark.sql(
        f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ('delta.enableIcebergCompatV2' = 'false')"
    )
    properties = spark.sql(f"DESCRIBE DETAIL delta.`{path}`").collect()[0]["properties"]
    assert properties["delta.enableIcebergCompatV2"] == "false"
    assert "delta.universalFormat.enabledFormats" not in properties
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (1, 'x')")  # no Iceberg snapshot for it
    table = StaticTable.from_metadata(path)
    assert table.metadata.properties["delta-version"] == "0"


@pytest.mark.long  # the quick run checks UniForm tables made at creation
def test_reorg_upgrade_uniform_makes_an_existing_table_iceberg_readable(
    spark: Any, tmp_path: Path
) -> None:
    path = str(tmp_path / "t")
    spark.range(0, 12).selectExpr(
        "id", "CAST(id % 3 AS STRING) AS p", "'n' || id AS name"
    ).write.format("delta").partitionBy("p").save(path)
    spark.sql(f"DELETE FROM delta.`{path}` WHERE id = 4")
    upgrade = f"REORG TABLE delta.`{path}` APPLY (UPGRADE UNIFORM(ICEBERG_COMPAT_VERSION = 2))"
    spark.sql(upgrade).collect()
    detail = spark.sql(f"DESCRIBE DETAIL delta.`{path}`").collect()[0]
    assert detail["properties"]["delta.enableIcebergCompatV2"] == "true"
    assert detail["properties"]["delta.columnMapping.mode"] == "name"
    assert "icebergCompatV2" in detail["tableFeatures"]
    history = [r["operation"] for r in spark.sql(f"DESCRIBE HISTORY delta.`{path}`").collect()]
    assert history[:2] == ["REORG", "SET TBLPROPERTIES"]  # files rewritten with field ids
    expected = [_plain(r) for r in _spark_rows(spark, path, len(history) - 1)]
    assert [_plain(r) for r in duckdb_rows(path)] == expected
    assert sorted(r["id"] for r in expected) == [0, 1, 2, 3, 5, 6, 7, 8, 9, 10, 11]
    _assert_iceberg_files(path)

    snapshots = len(StaticTable.from_metadata(path).metadata.snapshots)
    spark.sql(upgrade).collect()  # already upgraded: the current version converted again
    table = StaticTable.from_metadata(path)
    assert len(table.metadata.snapshots) == snapshots + 1
    assert table.current_snapshot().summary["delta-version"] == str(len(history) - 1)
    assert len(history) == len(spark.sql(f"DESCRIBE HISTORY delta.`{path}`").collect())

    with pytest.raises(Exception, match="ICEBERG_COMPAT_VERSION=1"):
        spark.sql(f"REORG TABLE delta.`{path}` APPLY (UPGRADE UNIFORM(ICEBERG_COMPAT_VERSION=1))")
