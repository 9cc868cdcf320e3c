"""Generated columns (PROTOCOL.md "Generated Columns") through the user API: creation by the
builder and by SQL (by path and by name), delta-spark's creation checks, values computed on
every kind of write, mismatches refused with nothing committed, UPDATE and MERGE keeping them
right, partition pruning from source-column filters, time travel, and delta-rs both ways."""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path
from typing import Any

import deltalake
import pyarrow as pa
import pytest
from pyspark.sql import functions as F

from delta_pyspark import scan_report
from delta_pyspark.exceptions import GeneratedColumnError, InvariantViolationError
from delta_pyspark.tables import DeltaTable

TS = dt.datetime


def _commit(path: str, version: int) -> list[dict[str, Any]]:
    with open(os.path.join(path, "_delta_log", f"{version:020d}.json")) as f:
        return [json.loads(line) for line in f if line.strip()]


def _action(path: str, version: int, kind: str) -> dict[str, Any]:
    return next(a[kind] for a in _commit(path, version) if kind in a)


def _version(path: str) -> int:
    return max(
        int(n.split(".")[0])
        for n in os.listdir(os.path.join(path, "_delta_log"))
        if n.endswith(".json")
    )


def _rows(spark: Any, path: str, version: int | None = None) -> list[tuple[Any, ...]]:
    reader = spark.read.format("delta")
    if version is not None:
        reader = reader.option("versionAsOf", version)
    rows = reader.load(path).select("ts", "d", "v").collect()
    return sorted((tuple(r) for r in rows), key=lambda r: r[2])


def _events(spark: Any, path: str, **properties: str) -> DeltaTable:
    builder = (
        DeltaTable.create(spark)
        .location(path)
        .addColumn("ts", "TIMESTAMP")
        .addColumn("d", "DATE", generatedAlwaysAs="CAST(ts AS DATE)")
        .addColumn("v", "INT")
        .partitionedBy("d")
    )
    for k, v in properties.items():
        builder = builder.property(k, v)
    return builder.execute()


def _append(spark: Any, path: str, rows: list[tuple[Any, ...]], ddl: str = "ts timestamp, v int"):
    spark.createDataFrame(rows, ddl).write.format("delta").mode("append").save(path)


FEATURES = ["appendOnly", "generatedColumns", "invariants"]


def _check_created(path: str, column: str, expression: str) -> None:
    protocol = _action(path, 0, "protocol")
    assert protocol["minWriterVersion"] == 7 and sorted(protocol["writerFeatures"]) == FEATURES
    fields = json.loads(_action(path, 0, "metaData")["schemaString"])["fields"]
    found = {f["name"]: f["metadata"] for f in fields}
    assert found[column]["delta.generationExpression"] == expression


def test_builder_creates_the_column_and_feature(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    _events(spark, path)
    assert _version(path) == 0
    _check_created(path, "d", "CAST(ts AS DATE)")
    assert _action(path, 0, "metaData")["partitionColumns"] == ["d"]
    # delta-rs reads the protocol and schema as written
    assert deltalake.DeltaTable(path).protocol().writer_features == FEATURES


def test_sql_creates_by_path_and_by_name(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "p")
    spark.sql(
        f"CREATE TABLE delta.`{path}` (ts TIMESTAMP, d DATE GENERATED ALWAYS AS "
        "(CAST(ts AS DATE)) COMMENT 'day', v INT) USING delta PARTITIONED BY (d)"
    )
    _check_created(path, "d", "CAST(ts AS DATE)")
    spark.sql(
        "CREATE TABLE gen_by_name (ts TIMESTAMP, y INT GENERATED ALWAYS AS (year(ts))) "
        "USING delta PARTITIONED BY (y)"
    )
    try:
        location = DeltaTable.forName(spark, "gen_by_name").detail().collect()[0]["location"]
        local = location.removeprefix("file:")
        _check_created(local, "y", "year(ts)")
        spark.sql("INSERT INTO gen_by_name (ts) VALUES (TIMESTAMP '2021-03-04 05:06:07')")
        assert [tuple(r) for r in spark.table("gen_by_name").collect()] == [
            (TS(2021, 3, 4, 5, 6, 7), 2021)
        ]
        spark.sql(
            "CREATE OR REPLACE TABLE gen_by_name (ts TIMESTAMP, m INT GENERATED ALWAYS AS "
            "(month(ts))) USING delta"
        )
        fields = json.loads(_action(local, 2, "metaData")["schemaString"])["fields"]
        assert fields[1]["metadata"] == {"delta.generationExpression": "month(ts)"}
    finally:
        spark.sql("DROP TABLE IF EXISTS gen_by_name")


@pytest.mark.parametrize(
    ("expression", "column_type", "condition", "fragment"),
    [
        ("CAST(x AS DATE)", "DATE", "DELTA_INVALID_GENERATED_COLUMN_REFERENCES", "'x'"),
        ("CAST(g AS DATE)", "DATE", "DELTA_INVALID_GENERATED_COLUMN_REFERENCES", "'g'"),
        ("CAST(ts AS STRING)", "DATE", "DELTA_GENERATED_COLUMNS_EXPR_TYPE_MISMATCH", "string"),
        ("year(ts)", "BIGINT", "DELTA_GENERATED_COLUMNS_EXPR_TYPE_MISMATCH", "int"),
        ("rand() > 0.5", "BOOLEAN", "DELTA_NON_DETERMINISTIC_EXPRESSION_IN_GENERATED_COLUMN", ""),
        ("sum(v)", "BIGINT", "DELTA_AGGREGATE_IN_GENERATED_COLUMN", "SUM(v)"),
        ("current_date()", "DATE", "DELTA_UNSUPPORTED_EXPRESSION_GENERATED_COLUMN", ""),
        ("to_upper_udf(CAST(v AS STRING))", "STRING", "DELTA_UDF_IN_GENERATED_COLUMN", ""),
    ],
)
def test_invalid_generated_columns_are_refused(
    spark: Any, tmp_path: Path, expression: str, column_type: str, condition: str, fragment: str
) -> None:
    spark.udf.register("to_upper_udf", lambda s: s.upper(), "string")
    path = str(tmp_path / "bad")
    builder = (
        DeltaTable.create(spark)
        .location(path)
        .addColumn("ts", "TIMESTAMP")
        .addColumn("v", "INT")
        .addColumn("g", "DATE", generatedAlwaysAs="CAST(ts AS DATE)")
        .addColumn("bad", column_type, generatedAlwaysAs=expression)
    )
    with pytest.raises(GeneratedColumnError) as caught:
        builder.execute()
    assert caught.value.getCondition() == condition
    assert fragment in str(caught.value)
    assert not os.path.exists(os.path.join(path, "_delta_log"))
    # the same definition in SQL
    with pytest.raises(GeneratedColumnError) as caught:
        spark.sql(
            f"CREATE TABLE delta.`{path}` (ts TIMESTAMP, v INT, g DATE GENERATED ALWAYS AS "
            f"(CAST(ts AS DATE)), bad {column_type} GENERATED ALWAYS AS ({expression})) "
            "USING delta"
        )
    assert caught.value.getCondition() == condition
    assert not os.path.exists(os.path.join(path, "_delta_log"))


def test_writes_compute_missing_values(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    _events(spark, path)
    _append(spark, path, [(TS(2020, 1, 1, 10), 1), (None, 2)])
    spark.sql(f"INSERT INTO delta.`{path}` (ts, v) VALUES (TIMESTAMP '2020-01-02 23:59:59', 3)")
    spark.createDataFrame([(TS(2020, 1, 3, 0, 0, 1), 4)], "ts timestamp, v int").writeTo(
        f"delta.`{path}`"
    ).append()
    # a given value equal to the expression is accepted
    _append(
        spark, path, [(TS(2020, 1, 4, 12), dt.date(2020, 1, 4), 5)], "ts timestamp, d date, v int"
    )
    assert _rows(spark, path) == [
        (TS(2020, 1, 1, 10), dt.date(2020, 1, 1), 1),
        (None, None, 2),
        (TS(2020, 1, 2, 23, 59, 59), dt.date(2020, 1, 2), 3),
        (TS(2020, 1, 3, 0, 0, 1), dt.date(2020, 1, 3), 4),
        (TS(2020, 1, 4, 12), dt.date(2020, 1, 4), 5),
    ]
    # the partition values in the log are the computed ones
    adds = [a["add"] for v in range(1, 5) for a in _commit(path, v) if "add" in a]
    assert sorted(str(a["partitionValues"]["d"]) for a in adds) == [
        "2020-01-01",
        "2020-01-02",
        "2020-01-03",
        "2020-01-04",
        "None",
    ]
    # an overwrite computes them too
    spark.createDataFrame([(TS(2022, 2, 2, 2), 9)], "ts timestamp, v int").write.format(
        "delta"
    ).mode("overwrite").save(path)
    assert _rows(spark, path) == [(TS(2022, 2, 2, 2), dt.date(2022, 2, 2), 9)]


def test_mismatching_values_are_refused(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    _events(spark, path)
    _append(spark, path, [(TS(2020, 1, 1, 10), 1)])
    before = _rows(spark, path)
    bad = [(TS(2020, 1, 1, 10), dt.date(2021, 1, 1), 2)]
    with pytest.raises(InvariantViolationError) as caught:
        _append(spark, path, bad, "ts timestamp, d date, v int")
    message = str(caught.value)
    assert message.startswith(
        "CHECK constraint Generated Column (`d` <=> (CAST(ts AS DATE))) violated by row"
    )
    assert " - d : 2021-01-01" in message and " - ts : 2020-01-01 10:00:00" in message
    # an explicit NULL is a value too (only a column left out is computed)
    with pytest.raises(InvariantViolationError, match=" - d : null"):
        spark.sql(f"INSERT INTO delta.`{path}` VALUES (TIMESTAMP '2020-01-05 00:00:00', NULL, 3)")
    # so is a DataFrame's column of bare NULLs (only an INSERT's column list leaves one out)
    explicit = spark.createDataFrame([(TS(2020, 1, 6), 4)], "ts timestamp, v int").select(
        "ts", F.lit(None).alias("d"), "v"
    )
    with pytest.raises(InvariantViolationError, match=" - d : null"):
        explicit.write.format("delta").mode("append").save(path)
    assert _version(path) == 1 and _rows(spark, path) == before


@pytest.mark.parametrize("vectors", [False, True], ids=["copy-on-write", "deletion-vectors"])
def test_update_recomputes_and_checks(spark: Any, tmp_path: Path, vectors: bool) -> None:
    path = str(tmp_path / "t")
    table = _events(spark, path, **{"delta.enableDeletionVectors": str(vectors).lower()})
    _append(spark, path, [(TS(2020, 1, 1, 10), 1), (TS(2020, 1, 2, 10), 2)])
    table.update("v = 1", {"ts": "ts + INTERVAL 10 DAYS"})
    spark.sql(f"UPDATE delta.`{path}` SET ts = TIMESTAMP '2019-05-06 07:08:09' WHERE v = 2")
    after = [
        (TS(2020, 1, 11, 10), dt.date(2020, 1, 11), 1),
        (TS(2019, 5, 6, 7, 8, 9), dt.date(2019, 5, 6), 2),
    ]
    assert _rows(spark, path) == after
    version = _version(path)
    with pytest.raises(InvariantViolationError, match="Generated Column"):
        table.update("v = 1", {"d": "DATE '1999-01-01'"})
    # setting both consistently is fine
    table.update("v = 1", {"ts": "TIMESTAMP '2021-01-01 00:00:00'", "d": "DATE '2021-01-01'"})
    assert _version(path) == version + 1
    assert _rows(spark, path, version) == after  # time travel sees the old values
    assert _rows(spark, path, 1) == [
        (TS(2020, 1, 1, 10), dt.date(2020, 1, 1), 1),
        (TS(2020, 1, 2, 10), dt.date(2020, 1, 2), 2),
    ]


@pytest.mark.parametrize("vectors", [False, True], ids=["copy-on-write", "deletion-vectors"])
def test_merge_computes_and_checks(spark: Any, tmp_path: Path, vectors: bool) -> None:
    path = str(tmp_path / "t")
    table = _events(spark, path, **{"delta.enableDeletionVectors": str(vectors).lower()})
    _append(spark, path, [(TS(2020, 1, 1, 10), 1), (TS(2020, 1, 2, 10), 2)])
    source = spark.createDataFrame(
        [(TS(2021, 7, 7, 7), 1), (TS(2022, 8, 8, 8), 3)], "ts timestamp, v int"
    )
    (
        table.alias("t")
        .merge(source.alias("s"), "t.v = s.v")
        .whenMatchedUpdate(set={"ts": "s.ts"})
        .whenNotMatchedInsertAll()  # the source has no d: it is computed
        .execute()
    )
    assert _rows(spark, path) == [
        (TS(2021, 7, 7, 7), dt.date(2021, 7, 7), 1),
        (TS(2020, 1, 2, 10), dt.date(2020, 1, 2), 2),
        (TS(2022, 8, 8, 8), dt.date(2022, 8, 8), 3),
    ]
    spark.createDataFrame([(2, TS(2023, 3, 3, 3))], "v int, ts timestamp").createOrReplaceTempView(
        "gen_src"
    )
    spark.sql(
        f"MERGE INTO delta.`{path}` t USING gen_src s ON t.v = s.v "
        "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT (ts, v) VALUES (s.ts, s.v)"
    )
    assert (TS(2023, 3, 3, 3), dt.date(2023, 3, 3), 2) in _rows(spark, path)
    version, before = _version(path), _rows(spark, path)
    wrong = spark.createDataFrame(
        [(TS(2024, 4, 4), dt.date(2000, 1, 1), 9)], "ts timestamp, d date, v int"
    )
    with pytest.raises(InvariantViolationError, match="Generated Column"):
        table.alias("t").merge(wrong.alias("s"), "t.v = s.v").whenNotMatchedInsertAll().execute()
    assert _version(path) == version and _rows(spark, path) == before


@pytest.mark.long  # CI's second step, for the quick run's time
def test_filters_on_the_source_prune_generated_partitions(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    # no statistics: only the partition values can skip files
    _events(spark, path, **{"delta.dataSkippingNumIndexedCols": "0"})
    for day in range(1, 6):
        _append(spark, path, [(TS(2020, 1, day, 12), day)])
    assert json.loads(_action(path, 1, "add")["stats"]) == {"numRecords": 1}
    df = spark.read.format("delta").load(path)
    assert scan_report(df).files_scanned == 5
    cases = {
        "ts >= '2020-01-03'": 3,
        "ts < TIMESTAMP '2020-01-02 00:00:00'": 2,  # < becomes <= on the date: day 2 stays
        "ts = TIMESTAMP '2020-01-04 12:00:00'": 1,
        "ts BETWEEN '2020-01-02 06:00:00' AND '2020-01-03 06:00:00'": 2,
        "ts IN (TIMESTAMP '2020-01-01 12:00:00', TIMESTAMP '2020-01-05 12:00:00')": 2,
        "v = 3": 5,  # not a source of a generated partition column
    }
    for condition, scanned in cases.items():
        filtered = df.where(condition)
        expected = sorted(r.v for r in df.collect() if _matches(condition, r))
        assert sorted(r.v for r in filtered.collect()) == expected, condition
        assert scan_report(filtered).files_scanned == scanned, condition


def _matches(condition: str, row: Any) -> bool:
    day = row.ts.day
    return {
        "ts >= '2020-01-03'": day >= 3,
        "ts < TIMESTAMP '2020-01-02 00:00:00'": day < 2,
        "ts = TIMESTAMP '2020-01-04 12:00:00'": day == 4,
        "ts BETWEEN '2020-01-02 06:00:00' AND '2020-01-03 06:00:00'": day == 2,
        "ts IN (TIMESTAMP '2020-01-01 12:00:00', TIMESTAMP '2020-01-05 12:00:00')": day in (1, 5),
        "v = 3": row.v == 3,
    }[condition]


@pytest.mark.long  # slow: CI's second step
def test_pruning_by_year_month_and_prefix(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    spark.sql(
        f"CREATE TABLE delta.`{path}` (ts TIMESTAMP, s STRING, "
        "ym STRING GENERATED ALWAYS AS (date_format(ts, 'yyyy-MM')), "
        "pre STRING GENERATED ALWAYS AS (substring(s, 0, 2))) USING delta "
        "PARTITIONED BY (ym, pre) TBLPROPERTIES ('delta.dataSkippingNumIndexedCols' = '0')"
    )
    rows = [(TS(2020, m, 15), f"{k}{m}") for m in (1, 2, 3) for k in ("aa", "bb")]
    for r in rows:
        spark.createDataFrame([r], "ts timestamp, s string").write.format("delta").mode(
            "append"
        ).save(path)
    df = spark.read.format("delta").load(path)
    assert scan_report(df).files_scanned == 6
    later = df.where("ts > '2020-02-01'")
    assert scan_report(later).files_scanned == 4 and later.count() == 4
    prefix = df.where("s = 'bb2'")
    assert scan_report(prefix).files_scanned == 3
    assert [tuple(r) for r in prefix.select("s", "ym", "pre").collect()] == [
        ("bb2", "2020-02", "bb")
    ]


def test_delta_rs_round_trip(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    _events(spark, path)
    _append(spark, path, [(TS(2020, 1, 1, 10), 1), (TS(2020, 1, 2, 10), 2)])
    theirs = deltalake.DeltaTable(path).to_pyarrow_table().to_pylist()
    utc = dt.UTC
    assert sorted((r["ts"], r["d"], r["v"]) for r in theirs) == [
        (TS(2020, 1, 1, 10, tzinfo=utc), dt.date(2020, 1, 1), 1),
        (TS(2020, 1, 2, 10, tzinfo=utc), dt.date(2020, 1, 2), 2),
    ]
    # delta-rs writes generated columns: it computes d for an append without it
    data = pa.table(
        {
            "ts": pa.array([TS(2021, 5, 5, 1)], pa.timestamp("us", "UTC")),
            "v": pa.array([3], pa.int32()),
        }
    )
    deltalake.write_deltalake(path, data, mode="append")
    assert _rows(spark, path)[-1] == (TS(2021, 5, 5, 1), dt.date(2021, 5, 5), 3)
    # and refuses a mismatching value, as we do
    wrong = data.append_column("d", pa.array([dt.date(1999, 1, 1)], pa.date32()))
    with pytest.raises(deltalake.exceptions.DeltaError, match="rows failed validation check"):
        deltalake.write_deltalake(path, wrong, mode="append")
    assert _version(path) == 2  # create, our append, theirs
    # and we keep writing it after delta-rs did
    _append(spark, path, [(TS(2022, 6, 6, 6), 4)])
    assert _rows(spark, path)[-1] == (TS(2022, 6, 6, 6), dt.date(2022, 6, 6), 4)


def test_schema_evolution_cannot_retype_a_source(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    spark.sql(
        f"CREATE TABLE delta.`{path}` (v INT, w INT GENERATED ALWAYS AS (v + 1)) USING delta "
        "TBLPROPERTIES ('delta.enableTypeWidening' = 'true')"
    )
    spark.createDataFrame([(1,)], "v int").write.format("delta").mode("append").save(path)
    wider = spark.createDataFrame([(2**40,)], "v bigint")
    with pytest.raises(GeneratedColumnError, match="cannot be converted") as caught:
        wider.write.format("delta").mode("append").option("mergeSchema", "true").save(path)
    assert caught.value.getCondition() == "DELTA_GENERATED_COLUMN_UPDATE_TYPE_MISMATCH"
    assert _version(path) == 1
    assert [tuple(r) for r in spark.read.format("delta").load(path).collect()] == [(1, 2)]
