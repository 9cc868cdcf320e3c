"""CONVERT TO DELTA: Parquet directories (partitioned or not) become Delta tables in
place; rows read back exactly, stats drive skipping, writes and DML work, delta-rs
reads the result, and bad layouts are refused before anything is committed."""

from __future__ import annotations

import datetime as dt
import json
import os
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from delta_pyspark import scan_report
from delta_pyspark.core.protocol.partition_values import escape_path_name
from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.exceptions import DeltaAnalysisException, DeltaIllegalArgumentException
from delta_pyspark.spark.commands.convert import parse_identifier
from delta_pyspark.tables import DeltaTable

DATA_DDL = (
    "id long, name string, score double, amount decimal(10,2), day date, ts timestamp, "
    "flag boolean, tags array<string>, info struct<k:string,v:int>"
)


def _data(n: int = 60) -> list[tuple]:
    base = dt.datetime(2024, 1, 1, 12, 0, tzinfo=dt.UTC)
    return [
        (
            i,
            f"n{i}" if i % 7 else None,
            i * 1.5,
            Decimal(i) / 4 if i % 5 else None,
            dt.date(2024, 1, 1) + dt.timedelta(days=i),
            base + dt.timedelta(hours=i),
            i % 2 == 0,
            [f"t{i}", "x"],
            {"k": f"k{i}", "v": i},
        )
        for i in range(n)
    ]


def _sorted_rows(df: Any, columns: list[str]) -> list[tuple]:
    return sorted(
        (tuple(r) for r in df.select(*columns).collect()),
        key=lambda r: tuple((v is None, str(v)) for v in r),
    )


def _commit(path: str, version: int) -> list[dict[str, Any]]:
    text = (Path(path) / "_delta_log" / f"{version:020d}.json").read_text()
    return [json.loads(line) for line in text.splitlines()]


@pytest.fixture
def plain_dir(spark: Any, tmp_path: Path) -> str:
    path = str(tmp_path / "plain")
    spark.createDataFrame(_data(), DATA_DDL).repartition(4).write.parquet(path)
    return path


@pytest.fixture
def partitioned_dir(spark: Any, tmp_path: Path) -> str:
    path = str(tmp_path / "parts")
    rows = [
        (i, i * 10, ["a b", "c/d", None, "e"][i % 4], i % 3, dt.date(2024, 5, 1 + i % 2))
        for i in range(48)
    ]
    df = spark.createDataFrame(rows, "id long, v long, s string, i int, d date")
    df.write.partitionBy("s", "i", "d").parquet(path)
    return path


def test_parse_identifier() -> None:
    assert parse_identifier("parquet.`/a/b`") == ("parquet", "/a/b")
    assert parse_identifier("PARQUET.`/a/b c`") == ("parquet", "/a/b c")
    assert parse_identifier("/x/y") == ("parquet", "/x/y")
    assert parse_identifier("file:/x/y") == ("parquet", "file:/x/y")
    assert parse_identifier("db.table") is None  # a catalog table's name
    assert parse_identifier("db.`my table`") is None


def test_convert_unpartitioned(spark: Any, plain_dir: str) -> None:
    columns = [c.split()[0] for c in DATA_DDL.split(", ")]
    expected = _sorted_rows(spark.read.parquet(plain_dir), columns)
    n_files = len([f for f in os.listdir(plain_dir) if f.endswith(".parquet")])
    assert n_files == 4

    dt_ = DeltaTable.convertToDelta(spark, f"parquet.`{plain_dir}`")
    assert isinstance(dt_, DeltaTable)
    got = spark.read.format("delta").load(plain_dir)
    assert _sorted_rows(got, columns) == expected
    assert len(expected) == 60

    snap = DeltaLog(plain_dir).snapshot()
    assert snap.version == 0 and snap.num_files == 4
    assert snap.partition_columns == []
    assert [f.name for f in snap.schema.fields] == columns
    assert all(f.nullable for f in snap.schema.fields)
    assert snap.schema.field("amount").type.__class__.__name__ == "DecimalType"
    actions = _commit(plain_dir, 0)
    info = next(a["commitInfo"] for a in actions if "commitInfo" in a)
    assert info["operation"] == "CONVERT"
    assert info["operationParameters"] == {
        "numFiles": "4",
        "partitionedBy": "[]",
        "collectStats": "true",
        "sourceFormat": "parquet",
    }
    adds = [a["add"] for a in actions if "add" in a]
    assert len(adds) == 4
    for add in adds:
        stats = json.loads(add["stats"])
        assert stats["numRecords"] > 0
        assert {"id", "name", "day", "ts"} <= set(stats["minValues"])
        assert stats["nullCount"]["name"] >= 0
        assert add["partitionValues"] == {}
        assert add["size"] == os.path.getsize(os.path.join(plain_dir, add["path"]))
    assert sum(json.loads(a["stats"])["numRecords"] for a in adds) == 60


def test_convert_partitioned(spark: Any, partitioned_dir: str) -> None:
    columns = ["id", "v", "s", "i", "d"]
    expected = _sorted_rows(spark.read.parquet(partitioned_dir), columns)
    DeltaTable.convertToDelta(spark, f"parquet.`{partitioned_dir}`", "s STRING, i INT, d DATE")
    got = spark.read.format("delta").load(partitioned_dir)
    assert _sorted_rows(got, columns) == expected
    assert len(expected) == 48
    assert any(r[2] is None for r in expected)  # the null partition came through

    snap = DeltaLog(partitioned_dir).snapshot()
    assert snap.partition_columns == ["s", "i", "d"]
    assert [f.name for f in snap.schema.fields] == ["id", "v", "s", "i", "d"]
    assert [str(snap.schema.field(c).type.name) for c in ("s", "i", "d")] == [
        "string",
        "integer",
        "date",
    ]
    values = {
        json.dumps(dict(v), sort_keys=True) for v in snap.files["partitionValues"].to_pylist()
    }
    assert json.dumps({"d": "2024-05-01", "i": "0", "s": "a b"}, sort_keys=True) in values
    assert json.dumps({"d": "2024-05-02", "i": "1", "s": "c/d"}, sort_keys=True) in values
    assert json.dumps({"d": "2024-05-01", "i": "2", "s": None}, sort_keys=True) in values
    info = _commit(partitioned_dir, 0)[0]["commitInfo"]
    assert info["operationParameters"]["partitionedBy"] == '["s","i","d"]'
    # partition pruning works on the converted table
    one = got.where("s = 'a b' AND i = 0")
    report = scan_report(one)
    assert report.files_scanned < report.files_total
    assert sorted(r.id for r in one.collect()) == [
        i for i in range(48) if i % 4 == 0 and i % 3 == 0
    ]
    nulls = spark.read.format("delta").load(partitioned_dir).where("s IS NULL")
    assert sorted(r.id for r in nulls.collect()) == [i for i in range(48) if i % 4 == 2]


def test_partition_schema_as_struct_type(spark: Any, partitioned_dir: str) -> None:
    from pyspark.sql.types import DateType, IntegerType, StringType, StructField, StructType

    schema = StructType(
        [
            StructField("S", StringType()),
            StructField("i", IntegerType()),
            StructField("d", DateType()),
        ]
    )
    DeltaTable.convertToDelta(spark, partitioned_dir, schema)
    snap = DeltaLog(partitioned_dir).snapshot()
    assert snap.partition_columns == ["S", "i", "d"]  # the schema's spelling is kept
    assert spark.read.format("delta").load(partitioned_dir).count() == 48


def test_stats_drive_data_skipping(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "ranged")
    df = spark.range(0, 400).selectExpr("id", "id * 2 AS v").repartitionByRange(8, "id")
    df.sortWithinPartitions("id").write.parquet(path)
    DeltaTable.convertToDelta(spark, f"parquet.`{path}`")
    table = spark.read.format("delta").load(path)
    assert scan_report(table).files_total == 8
    one = table.where("id = 123")
    assert scan_report(one).files_scanned == 1
    assert [(r.id, r.v) for r in one.collect()] == [(123, 246)]


def test_writes_and_dml_after_convert(spark: Any, partitioned_dir: str) -> None:
    DeltaTable.convertToDelta(spark, f"parquet.`{partitioned_dir}`", "s STRING, i INT, d DATE")
    new = spark.createDataFrame(
        [(100, 1, "zz", 7, dt.date(2024, 6, 1))], "id long, v long, s string, i int, d date"
    )
    new.write.format("delta").mode("append").save(partitioned_dir)
    table = DeltaTable.forPath(spark, partitioned_dir)
    table.update("id < 4", {"v": "v + 1000"})
    table.delete("s IS NULL")
    got = {r.id: r.v for r in spark.read.format("delta").load(partitioned_dir).collect()}
    expected = {i: i * 10 + (1000 if i < 4 else 0) for i in range(48) if i % 4 != 2} | {100: 1}
    assert got == expected
    assert DeltaLog(partitioned_dir).snapshot().version == 3
    # time travel to the converted version still sees the Parquet rows
    v0 = spark.read.format("delta").option("versionAsOf", 0).load(partitioned_dir)
    assert v0.count() == 48


def test_delta_rs_reads_the_converted_table(
    spark: Any, partitioned_dir: str, plain_dir: str
) -> None:
    import deltalake

    DeltaTable.convertToDelta(spark, f"parquet.`{partitioned_dir}`", "s STRING, i INT, d DATE")
    arrow = deltalake.DeltaTable(partitioned_dir).to_pyarrow_table()
    theirs = sorted((r["id"], r["v"], r["s"], r["i"], r["d"]) for r in arrow.to_pylist())
    ours = sorted(
        tuple(r)
        for r in spark.read.format("delta")
        .load(partitioned_dir)
        .select("id", "v", "s", "i", "d")
        .collect()
    )
    assert theirs == ours and len(ours) == 48

    DeltaTable.convertToDelta(spark, f"parquet.`{plain_dir}`")
    arrow = deltalake.DeltaTable(plain_dir).to_pyarrow_table(columns=["id", "name", "score", "day"])
    theirs = sorted((r["id"], r["name"], r["score"], r["day"]) for r in arrow.to_pylist())
    ours = sorted(
        tuple(r)
        for r in spark.read.format("delta")
        .load(plain_dir)
        .select("id", "name", "score", "day")
        .collect()
    )
    assert theirs == ours


def test_second_convert_is_a_no_op(spark: Any, plain_dir: str) -> None:
    first = DeltaTable.convertToDelta(spark, f"parquet.`{plain_dir}`")
    commits = sorted(os.listdir(Path(plain_dir) / "_delta_log"))
    second = DeltaTable.convertToDelta(spark, f"parquet.`{plain_dir}`")
    assert second._path == first._path == plain_dir
    assert sorted(os.listdir(Path(plain_dir) / "_delta_log")) == commits
    assert DeltaLog(plain_dir).snapshot().version == 0
    # also when asked as a delta table
    DeltaTable.convertToDelta(spark, f"delta.`{plain_dir}`")
    assert DeltaLog(plain_dir).snapshot().version == 0


def test_partition_schema_must_match_the_layout(spark: Any, partitioned_dir: str) -> None:
    with pytest.raises(DeltaAnalysisException, match="expected partition column\\(s\\) s, i") as e:
        DeltaTable.convertToDelta(spark, f"parquet.`{partitioned_dir}`", "s STRING, i INT")
    assert "found d, i, s" in str(e.value)
    with pytest.raises(DeltaAnalysisException, match="expected partition column\\(s\\) none"):
        DeltaTable.convertToDelta(spark, f"parquet.`{partitioned_dir}`")
    with pytest.raises(DeltaAnalysisException, match=r"'2024-05-0[12]' of column d .* integer"):
        DeltaTable.convertToDelta(spark, f"parquet.`{partitioned_dir}`", "s STRING, i INT, d INT")
    assert not DeltaLog(partitioned_dir).is_delta_table()  # nothing committed


def test_partitioned_schema_on_unpartitioned_dir(spark: Any, plain_dir: str) -> None:
    with pytest.raises(DeltaAnalysisException, match="found none"):
        DeltaTable.convertToDelta(spark, f"parquet.`{plain_dir}`", "p STRING")
    assert not DeltaLog(plain_dir).is_delta_table()


def test_bad_partition_value(spark: Any, tmp_path: Path) -> None:
    root = tmp_path / "bad"
    (root / "n=abc").mkdir(parents=True)
    pq.write_table(pa.table({"x": [1]}), root / "n=abc" / "f.parquet")
    with pytest.raises(DeltaAnalysisException, match=r"'abc' of column n .* not a valid integer"):
        DeltaTable.convertToDelta(spark, str(root), "n INT")


def test_timestamp_partition_values_are_stored_in_utc(spark: Any, tmp_path: Path) -> None:
    root = tmp_path / "ts"
    (root / "t=2024-01-02 03%3A04%3A05").mkdir(parents=True)
    pq.write_table(pa.table({"x": [1]}), root / "t=2024-01-02 03%3A04%3A05" / "f.parquet")
    DeltaTable.convertToDelta(spark, str(root), "t TIMESTAMP")
    snap = DeltaLog(str(root)).snapshot()
    assert dict(snap.files["partitionValues"][0].as_py()) == {"t": "2024-01-02T03:04:05.000000Z"}
    row = spark.read.format("delta").load(str(root)).collect()[0]
    assert (row.x, row.t) == (1, dt.datetime(2024, 1, 2, 3, 4, 5))  # session zone is UTC


def test_missing_directory_and_empty_directory(spark: Any, tmp_path: Path) -> None:
    with pytest.raises(DeltaAnalysisException, match="no such directory"):
        DeltaTable.convertToDelta(spark, f"parquet.`{tmp_path / 'nope'}`")
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "_SUCCESS").write_text("")
    with pytest.raises(DeltaAnalysisException, match="no Parquet data files"):
        DeltaTable.convertToDelta(spark, f"parquet.`{tmp_path / 'empty'}`")
    with pytest.raises(DeltaAnalysisException, match="only supports parquet"):
        DeltaTable.convertToDelta(spark, f"iceberg.`{tmp_path / 'empty'}`")
    with pytest.raises(DeltaIllegalArgumentException, match="invalid partition schema"):
        DeltaTable.convertToDelta(spark, f"parquet.`{tmp_path / 'empty'}`", "a NOTATYPE")


def test_non_parquet_file_is_refused(spark: Any, tmp_path: Path) -> None:
    root = tmp_path / "mixed"
    root.mkdir()
    pq.write_table(pa.table({"x": [1]}), root / "a.parquet")
    (root / "notes.txt").write_text("hello")
    with pytest.raises(DeltaAnalysisException, match=r"notes\.txt is not a readable Parquet file"):
        DeltaTable.convertToDelta(spark, str(root))
    assert not DeltaLog(str(root)).is_delta_table()


def test_files_with_different_columns_merge(spark: Any, tmp_path: Path) -> None:
    root = tmp_path / "evolved"
    root.mkdir()
    pq.write_table(pa.table({"a": pa.array([1, 2], pa.int64())}), root / "f1.parquet")
    pq.write_table(
        pa.table({"a": pa.array([3], pa.int64()), "b": pa.array(["x"])}), root / "f2.parquet"
    )
    (root / "_SUCCESS").write_text("")
    (root / ".f3.parquet").write_text("junk")  # hidden: not read, or conversion would fail
    DeltaTable.convertToDelta(spark, str(root))
    rows = sorted(tuple(r) for r in spark.read.format("delta").load(str(root)).collect())
    assert rows == [(1, None), (2, None), (3, "x")]
    stats = {
        a["add"]["path"]: json.loads(a["add"]["stats"]) for a in _commit(str(root), 0) if "add" in a
    }
    assert set(stats) == {"f1.parquet", "f2.parquet"}  # hidden files skipped
    assert stats["f1.parquet"]["nullCount"]["b"] == 2  # column absent from the file: all null


def test_files_with_conflicting_types_are_refused(spark: Any, tmp_path: Path) -> None:
    root = tmp_path / "conflict"
    root.mkdir()
    pq.write_table(pa.table({"a": pa.array([1], pa.int64())}), root / "f1.parquet")
    pq.write_table(pa.table({"a": pa.array(["x"])}), root / "f2.parquet")
    with pytest.raises(DeltaAnalysisException, match="disagree on the type of column a"):
        DeltaTable.convertToDelta(spark, str(root))
    assert not DeltaLog(str(root)).is_delta_table()


def test_manifest_of_a_converted_table(spark: Any, partitioned_dir: str) -> None:
    """``generate`` lists exactly the table's files: reading the manifests' files as plain
    Parquet gives the Delta table's rows."""
    table = DeltaTable.convertToDelta(
        spark, f"parquet.`{partitioned_dir}`", "s STRING, i INT, d DATE"
    )
    table.delete("i = 1")
    table.generate("symlink_format_manifest")
    manifests = sorted((Path(partitioned_dir) / "_symlink_format_manifest").rglob("manifest"))
    lines = [line for m in manifests for line in m.read_text().splitlines()]
    assert len(lines) == DeltaLog(partitioned_dir).snapshot().num_files
    assert all(line.startswith("file:/") and os.path.exists(line[5:]) for line in lines)
    assert {
        str(m.parent.relative_to(Path(partitioned_dir) / "_symlink_format_manifest"))
        for m in manifests
    } == {
        f"s={s}/i={i}/d={d}"
        for s, i, d in {
            (escape_path_name(r.s) if r.s else "__HIVE_DEFAULT_PARTITION__", r.i, r.d)
            for r in spark.read.format("delta").load(partitioned_dir).collect()
        }
    }
    from_manifest = spark.read.option("basePath", partitioned_dir).parquet(*lines)
    columns = ["id", "v", "s", "i", "d"]
    expected = _sorted_rows(spark.read.format("delta").load(partitioned_dir), columns)
    assert _sorted_rows(from_manifest, columns) == expected
    assert len(expected) == 32


def test_convert_a_catalog_table_by_name(spark: Any) -> None:
    """As delta-spark's ``convertToDelta``: an identifier that is no ``parquet.`path``` names
    a Parquet table of the session catalog, whose entry then names the Delta table."""
    spark.range(4).selectExpr("id", "id % 2 AS p").write.partitionBy("p").format(
        "parquet"
    ).saveAsTable("convert_by_name")
    try:
        converted = DeltaTable.convertToDelta(spark, "default.convert_by_name")
        assert converted.detail().collect()[0].partitionColumns == ["p"]
        assert spark.sql("DESCRIBE DETAIL convert_by_name").collect()[0].format == "delta"
        rows = DeltaTable.forName(spark, "convert_by_name").toDF().collect()
        assert sorted((r.id, r.p) for r in rows) == [(i, i % 2) for i in range(4)]
    finally:
        spark.sql("DROP TABLE IF EXISTS convert_by_name")
