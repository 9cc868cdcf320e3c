"""format("delta") writes: modes, options, schema rules, time travel, interop."""

from __future__ import annotations

import datetime as dt
import json
import os
import threading
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

import deltalake
import pytest

from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.exceptions import (
    DeltaAnalysisException,
    InvariantViolationError,
    SchemaMismatchError,
    VersionNotFoundError,
)
from delta_pyspark.tables import DeltaTable

ALL_TYPES = (
    "b boolean, i8 byte, i16 short, i32 int, i64 long, f32 float, f64 double, "
    "d decimal(12,3), s string, bin binary, day date, ts timestamp"
)


def _all_types_rows() -> list[tuple]:
    return [
        (
            True,
            1,
            2,
            3,
            4,
            1.5,
            2.5,
            Decimal("1.250"),
            "a",
            b"\x00\x01",
            dt.date(2024, 1, 31),
            dt.datetime(2024, 1, 31, 10, 0, 0, 123456, tzinfo=dt.UTC),
        ),
        (
            False,
            -128,
            -32768,
            -(2**31),
            -(2**63),
            -0.0,
            1e300,
            Decimal("-999999999.999"),
            "é ü",
            b"",
            dt.date(1970, 1, 1),
            dt.datetime(1970, 1, 1, tzinfo=dt.UTC),
        ),
        (None, None, None, None, None, None, None, None, None, None, None, None),
    ]


def rows(df: Any, order: str = "id") -> list[tuple]:
    return [tuple(r) for r in df.orderBy(order).collect()]


def test_round_trip_every_primitive_type_and_delta_rs_reads_it(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    df = spark.createDataFrame(_all_types_rows(), ALL_TYPES)
    df.write.format("delta").save(path)
    back = spark.read.format("delta").load(path)
    assert back.schema.simpleString() == df.schema.simpleString()
    assert sorted(map(repr, back.collect())) == sorted(map(repr, df.collect()))
    theirs = deltalake.DeltaTable(path).to_pyarrow_table()
    assert theirs.num_rows == 3
    assert sorted(x for x in theirs.column("i64").to_pylist() if x is not None) == [-(2**63), 4]
    assert sorted(x for x in theirs.column("s").to_pylist() if x is not None) == ["a", "é ü"]
    ts = [x for x in theirs.column("ts").to_pylist() if x is not None]
    assert min(ts).replace(tzinfo=dt.UTC) == dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def test_partitioned_nulls_and_special_characters(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "p")
    data = [(1, "a b/c=d%", 1), (2, None, 2), (3, "ü#?", None), (4, "", 4)]
    df = spark.createDataFrame(data, "id long, p string, q int")
    df.write.format("delta").partitionBy("p", "q").save(path)
    back = spark.read.format("delta").load(path)
    assert rows(back.select("id", "p", "q")) == [
        (1, "a b/c=d%", 1),
        (2, None, 2),
        (3, "ü#?", None),
        (4, None, 4),
    ]
    assert rows(back.where("p = 'a b/c=d%'").select("id")) == [(1,)]
    plan = back.where("p = 'ü#?'")._jdf.queryExecution().executedPlan().toString()
    assert "PartitionFilters: [isnotnull(p" in plan
    files = DeltaLog(path).snapshot().files.column("partitionValues").to_pylist()
    assert {dict(pv)["p"] for pv in files} == {"a b/c=d%", None, "ü#?"}
    theirs = deltalake.DeltaTable(path).to_pyarrow_table().sort_by("id")
    assert theirs.column("p").to_pylist() == ["a b/c=d%", None, "ü#?", None]


def test_delta_rs_written_table_reads_identically(spark: Any, tmp_path: Path) -> None:
    import pyarrow as pa

    path = str(tmp_path / "rs")
    data = pa.table(
        {
            "id": pa.array([1, 2, 3], pa.int64()),
            "part": ["x", None, "y"],
            "v": pa.array([1.5, None, 3.0]),
        }
    )
    deltalake.write_deltalake(path, data, partition_by=["part"])
    deltalake.write_deltalake(path, data.slice(0, 1), mode="append", partition_by=["part"])
    back = spark.read.format("delta").load(path)
    assert rows(back.select("id", "part", "v"), "id") == [
        (1, "x", 1.5),
        (1, "x", 1.5),
        (2, None, None),
        (3, "y", 3.0),
    ]
    assert spark.read.format("delta").option("versionAsOf", 0).load(path).count() == 3


def test_modes_error_ignore_overwrite(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "m")
    spark.range(3).write.format("delta").save(path)
    with pytest.raises(DeltaAnalysisException, match="already exists"):
        spark.range(3).write.format("delta").save(path)
    spark.range(10).write.format("delta").mode("ignore").save(path)
    assert DeltaLog(path).snapshot().version == 0
    spark.range(5, 7).write.format("delta").mode("overwrite").save(path)
    assert rows(spark.read.format("delta").load(path)) == [(5,), (6,)]
    assert spark.read.format("delta").option("versionAsOf", 0).load(path).count() == 3


def test_schema_enforcement_names_the_option(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "s")
    spark.createDataFrame([(1, "a")], "id long, name string").write.format("delta").save(path)
    extra = spark.createDataFrame([(2, "b", 3)], "id long, name string, age int")
    with pytest.raises(SchemaMismatchError, match="mergeSchema") as err:
        extra.write.format("delta").mode("append").save(path)
    assert "age" in str(err.value)
    wrong_type = spark.createDataFrame([("x", "b")], "id string, name string")
    with pytest.raises(SchemaMismatchError):
        wrong_type.write.format("delta").mode("append").save(path)
    case = spark.createDataFrame([(2, "b")], "ID long, name string")
    with pytest.raises(SchemaMismatchError):
        case.write.format("delta").mode("append").save(path)
    assert DeltaLog(path).snapshot().version == 0
    extra.write.format("delta").mode("append").option("mergeSchema", "true").save(path)
    back = spark.read.format("delta").load(path)
    assert back.columns == ["id", "name", "age"]
    assert rows(back) == [(1, "a", None), (2, "b", 3)]


def test_auto_merge_conf_and_overwrite_schema(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "o")
    spark.createDataFrame([(1, "a")], "id long, name string").write.format("delta").save(path)
    spark.conf.set("spark.databricks.delta.schema.autoMerge.enabled", "true")
    try:
        spark.createDataFrame([(2, "b", 1.0)], "id long, name string, x double").write.format(
            "delta"
        ).mode("append").save(path)
    finally:
        spark.conf.unset("spark.databricks.delta.schema.autoMerge.enabled")
    assert spark.read.format("delta").load(path).columns == ["id", "name", "x"]
    new = spark.createDataFrame([("k", 7)], "key string, n int")
    with pytest.raises(SchemaMismatchError):
        new.write.format("delta").mode("overwrite").save(path)
    new.write.format("delta").mode("overwrite").option("overwriteSchema", "true").partitionBy(
        "key"
    ).save(path)
    snap = DeltaLog(path).snapshot()
    assert snap.schema.field_names == ["key", "n"] and snap.partition_columns == ["key"]
    assert rows(spark.read.format("delta").load(path), "key") == [("k", 7)]


def test_replace_where_partition_and_data_predicates(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "rw")
    data = [(i, "a" if i < 5 else "b") for i in range(10)]
    spark.createDataFrame(data, "id long, p string").write.format("delta").partitionBy("p").save(
        path
    )
    spark.createDataFrame([(100, "a")], "id long, p string").write.format("delta").mode(
        "overwrite"
    ).option("replaceWhere", "p = 'a'").save(path)
    assert rows(spark.read.format("delta").load(path).select("id")) == [
        (5,),
        (6,),
        (7,),
        (8,),
        (9,),
        (100,),
    ]
    with pytest.raises(InvariantViolationError, match="replaceWhere"):
        spark.createDataFrame([(200, "b")], "id long, p string").write.format("delta").mode(
            "overwrite"
        ).option("replaceWhere", "p = 'a'").save(path)
    spark.createDataFrame([(7, "b")], "id long, p string").write.format("delta").mode(
        "overwrite"
    ).option("replaceWhere", "id >= 7 AND id < 50").save(path)
    assert rows(spark.read.format("delta").load(path).select("id")) == [(5,), (6,), (7,), (100,)]
    assert DeltaLog(path).snapshot().version == 2


def test_dynamic_partition_overwrite(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "dpo")
    spark.createDataFrame([(1, "a"), (2, "b"), (3, "c")], "id long, p string").write.format(
        "delta"
    ).partitionBy("p").save(path)
    spark.createDataFrame([(10, "b"), (11, "d")], "id long, p string").write.format("delta").mode(
        "overwrite"
    ).option("partitionOverwriteMode", "dynamic").save(path)
    assert rows(spark.read.format("delta").load(path)) == [(1, "a"), (3, "c"), (10, "b"), (11, "d")]


def test_idempotent_writes_with_txn_app_id(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "txn")
    df = spark.range(3)
    for version in (1, 1, 2, 1):
        df.write.format("delta").mode("append").option("txnAppId", "job").option(
            "txnVersion", version
        ).save(path)
    snap = DeltaLog(path).snapshot()
    assert snap.version == 1 and snap.app_transaction_version("job") == 2
    assert spark.read.format("delta").load(path).count() == 6


def test_not_null_violation_commits_nothing(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "nn")
    DeltaTable.create(spark).location(path).addColumn("id", "long", nullable=False).addColumn(
        "v", "string"
    ).execute()
    with pytest.raises(
        InvariantViolationError, match="NOT NULL constraint violated for column: id"
    ):
        spark.createDataFrame([(None, "x")], "id long, v string").write.format("delta").mode(
            "append"
        ).save(path)
    assert DeltaLog(path).snapshot().version == 0
    assert spark.read.format("delta").load(path).count() == 0


def test_time_travel_version_timestamp_and_suffixes(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "tt")
    spark.range(1).write.format("delta").save(path)
    time.sleep(1.2)
    middle = time.time()
    time.sleep(1.2)
    spark.range(1, 3).write.format("delta").mode("append").save(path)
    stamp = dt.datetime.fromtimestamp(middle, dt.UTC)
    by_ts = (
        spark.read.format("delta")
        .option("timestampAsOf", stamp.strftime("%Y-%m-%d %H:%M:%S"))
        .load(path)
    )
    assert by_ts.count() == 1
    assert spark.read.format("delta").load(f"{path}@v1").count() == 3
    suffix = stamp.strftime("%Y%m%d%H%M%S") + f"{stamp.microsecond // 1000:03d}"
    assert spark.read.format("delta").load(f"{path}@{suffix}").count() == 1
    with pytest.raises(VersionNotFoundError, match="latest version is 1"):
        spark.read.format("delta").option("versionAsOf", 5).load(path)


def test_save_as_table_and_read_table(spark: Any) -> None:
    spark.createDataFrame([(1, "a")], "id long, v string").write.format("delta").saveAsTable(
        "managed_t"
    )
    spark.createDataFrame([(2, "b")], "id long, v string").write.format("delta").mode(
        "append"
    ).saveAsTable("managed_t")
    assert rows(spark.read.table("managed_t")) == [(1, "a"), (2, "b")]
    assert rows(spark.table("managed_t")) == [(1, "a"), (2, "b")]
    assert DeltaTable.forName(spark, "managed_t").toDF().count() == 2
    warehouse = spark.conf.get("spark.sql.warehouse.dir").replace("file:", "")
    assert os.path.isdir(os.path.join(warehouse, "managed_t", "_delta_log"))


def test_table_properties_from_options_and_session_defaults(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "props")
    spark.conf.set("spark.databricks.delta.properties.defaults.appendOnly", "false")
    try:
        spark.range(2).write.format("delta").option("delta.isolationLevel", "Serializable").option(
            "userMetadata", "first load"
        ).save(path)
    finally:
        spark.conf.unset("spark.databricks.delta.properties.defaults.appendOnly")
    snap = DeltaLog(path).snapshot()
    assert snap.configuration["delta.isolationLevel"] == "Serializable"
    assert snap.commit_info["userMetadata"] == "first load"
    assert snap.commit_info["isolationLevel"] == "Serializable"


@pytest.mark.long  # slow: CI's second step
def test_concurrent_appends_threads_all_commit(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "conc")
    spark.createDataFrame([(0, "p0")], "id long, p string").write.format("delta").partitionBy(
        "p"
    ).save(path)
    errors: list[BaseException] = []

    def writer(n: int) -> None:
        try:
            df = spark.createDataFrame(
                [(n * 100 + i, f"p{i % 3}") for i in range(50)], "id long, p string"
            )
            df.write.format("delta").mode("append").save(path)
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(1, 9)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    snap = DeltaLog(path).snapshot()
    assert snap.version == 8
    assert spark.read.format("delta").load(path).count() == 1 + 8 * 50
    on_disk = {str(p.relative_to(path)) for p in Path(path).rglob("*.parquet")}
    from urllib.parse import unquote

    in_log = {unquote(p) for p in snap.files.column("path").to_pylist()}
    assert in_log == on_disk


def test_detail_and_history(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "dh")
    spark.range(4).write.format("delta").save(path)
    DeltaTable.forPath(spark, path).delete("id < 2")
    table = DeltaTable.forPath(spark, path)
    detail = table.detail().collect()[0]
    assert detail.format == "delta" and detail.numFiles >= 1 and detail.minReaderVersion == 1
    hist = table.history().collect()
    assert [h.operation for h in hist] == ["DELETE", "WRITE"]
    metrics = hist[0].operationMetrics
    assert int(metrics["numDeletedRows"]) == 2
    assert json.loads(hist[0].operationParameters["predicate"]) == ["id < 2"]
    assert rows(table.toDF()) == [(2,), (3,)]


def test_struct_with_a_not_null_field_accepts_valid_rows_and_rejects_nulls(
    spark: Any, tmp_path: Path
) -> None:
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    path = str(tmp_path / "t")
    inner = StructType([StructField("a", LongType(), False), StructField("b", StringType())])
    DeltaTable.create(spark).location(path).addColumn("id", "long").addColumn("s", inner).execute()
    ddl = "id long, s struct<a:long,b:string>"
    spark.createDataFrame([(1, (2, "x"))], ddl).write.format("delta").mode("append").save(path)
    with pytest.raises(InvariantViolationError, match=r"NOT NULL .* s\.a"):
        spark.createDataFrame([(3, (None, "y"))], ddl).write.format("delta").mode("append").save(
            path
        )
    rows = spark.read.format("delta").load(path).collect()
    assert [(r.id, r.s.a, r.s.b) for r in rows] == [(1, 2, "x")]


@pytest.mark.parametrize("mode", ["none", "name"])
def test_stats_columns_property_names_logical_columns(
    spark: Any, tmp_path: Path, mode: str
) -> None:
    """delta.dataSkippingStatsColumns names logical columns; under column mapping the
    stats are keyed by physical names, and only the named columns get them."""
    path = str(tmp_path / "t")
    df = spark.createDataFrame([(1, 10, "a"), (5, 50, "b")], "a long, b long, c string")
    (
        df.coalesce(1)
        .write.format("delta")
        .option("delta.columnMapping.mode", mode)
        .option("delta.dataSkippingStatsColumns", "B, c")
        .save(path)
    )
    snapshot = DeltaLog(path).snapshot()
    physical = {
        f.name: f.metadata.get("delta.columnMapping.physicalName", f.name)
        for f in snapshot.schema.fields
    }
    (text,) = snapshot.files.column("stats").to_pylist()
    stats = json.loads(text)
    assert stats["minValues"] == {physical["b"]: 10, physical["c"]: "a"}
    assert stats["maxValues"] == {physical["b"]: 50, physical["c"]: "b"}
    assert set(stats["nullCount"]) == {physical["b"], physical["c"]}
    rows = spark.read.format("delta").load(path).where("b = 50").collect()
    assert [tuple(r) for r in rows] == [(5, 50, "b")]


def test_local_writes_compute_no_checksums_and_leave_the_sessions_file_system_alone(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Delta write on the local disk goes through Hadoop's raw local file system: no
    ``.crc`` file is computed beside the staged files (a table's files carry none), while
    the session's own Parquet writes keep theirs."""
    import delta_pyspark.spark.files.write as write

    staged: list[str] = []
    adopt = write._adopt_files

    def listing_staging(staging: str, *args: Any, **kwargs: Any) -> Any:
        staged.extend(p.name for p in Path(staging).rglob("*") if p.is_file())
        return adopt(staging, *args, **kwargs)

    monkeypatch.setattr(write, "_adopt_files", listing_staging)
    table = str(tmp_path / "t")
    spark.range(100).selectExpr("id", "id % 2 AS p").write.format("delta").partitionBy("p").save(
        table
    )
    assert len([n for n in staged if n.endswith(".parquet")]) >= 2
    assert [n for n in staged if n.endswith(".crc")] == []
    data = [p.name for p in Path(table).rglob("*") if p.is_file() and "_delta_log" not in p.parts]
    assert data and all(n.endswith(".parquet") and not n.startswith(".") for n in data)
    assert rows(spark.read.format("delta").load(table)) == [(i, i % 2) for i in range(100)]
    spark.range(10).write.parquet(str(tmp_path / "plain"))
    assert any(n.endswith(".crc") for n in os.listdir(tmp_path / "plain"))
