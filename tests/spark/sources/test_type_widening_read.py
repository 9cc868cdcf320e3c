"""Reading widened columns (PROTOCOL.md "Type Widening"): the kernel's table written by
delta-spark with files of the narrower types reads with the final types, and a ``mergeSchema``
append widens a column when the table enables type widening, as delta-spark does."""

from __future__ import annotations

import datetime
import json
import shutil
import struct
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from pyspark.errors import AnalysisException

from data_paths import TESTDATA
from delta_pyspark.core.protocol.schema import DecimalType, PrimitiveType
from delta_pyspark.core.snapshot.delta_log import DeltaLog

TABLE = TESTDATA / "kernel" / "type-widening"


def _log_actions(root: Path) -> list[dict[str, Any]]:
    out = []
    for commit in sorted((root / "_delta_log").glob("*.json")):
        out += [json.loads(line) for line in commit.read_text().splitlines() if line]
    return out


def _expected(value: Any, type_name: str) -> Any:
    """A one-row file's stats value as Spark returns it in the column's final type."""
    if type_name.startswith("decimal"):
        scale = int(type_name.rstrip(")").split(",")[1])
        return Decimal(str(value)).quantize(Decimal(1).scaleb(-scale))
    if type_name == "double":
        return float(value)
    if type_name == "timestamp_ntz":
        text = str(value)
        return datetime.datetime.fromisoformat(text if "T" in text else text + "T00:00:00")
    return int(value)


def test_kernel_type_widening_table_reads_widened(spark: Any, tmp_path: Path) -> None:
    root = tmp_path / "t"
    shutil.copytree(TABLE, root)
    actions = _log_actions(root)
    schema = json.loads([a for a in actions if "metaData" in a][-1]["metaData"]["schemaString"])
    final = {f["name"]: f["type"] for f in schema["fields"]}
    changes = {f["name"]: f["metadata"]["delta.typeChanges"] for f in schema["fields"]}
    assert all(len(c) == 1 and c[0]["toType"] == final[n] for n, c in changes.items())
    # stats parsed exactly (decimals beyond a double's precision)
    stats = [json.loads(a["add"]["stats"], parse_float=Decimal) for a in actions if "add" in a]
    assert [s["numRecords"] for s in stats] == [1, 1]
    expected = []
    for s in stats:
        row = {}
        for name, type_name in final.items():
            value = s["minValues"][name]
            assert value == s["maxValues"][name]
            if name == "float_double" and s is stats[0]:  # a float file read as double
                value = struct.unpack("f", struct.pack("f", float(value)))[0]
            row[name] = _expected(value, type_name)
        expected.append(row)

    spark_before = spark.conf.get("spark.sql.parquet.enableVectorizedReader")
    df = spark.read.format("delta").load(str(root))
    spark_types = {f.name: f.dataType.simpleString() for f in df.schema.fields}
    snapshot_types = {f.name: f.type for f in DeltaLog(str(root)).snapshot().schema.fields}
    for name, type_name in final.items():
        t = snapshot_types[name]
        assert isinstance(t, DecimalType if type_name.startswith("decimal") else PrimitiveType)
        spark_name = {"long": "bigint", "timestamp_ntz": "timestamp_ntz"}.get(type_name)
        assert spark_types[name] == (spark_name or type_name)
    rows = sorted((r.asDict() for r in df.collect()), key=lambda r: r["byte_long"])
    assert len(rows) == 2
    for got, want in zip(rows, sorted(expected, key=lambda r: r["byte_long"]), strict=True):
        for name in final:
            if name == "date_timestamp_ntz":  # stats keep milliseconds
                assert (
                    got[name].replace(microsecond=got[name].microsecond // 1000 * 1000)
                    == (want[name])
                ), name
            else:
                assert got[name] == want[name], name
    # the row-based reader is the relation's own setting: the user's session keeps its conf
    assert spark.conf.get("spark.sql.parquet.enableVectorizedReader") == spark_before
    assert df.where("byte_decimal = 1.0").count() == 1


def _int_table(spark: Any, path: str, widening: bool) -> None:
    writer = spark.createDataFrame([(1, "a"), (2, "b")], "id int, s string").coalesce(1).write
    if widening:
        writer = writer.option("delta.enableTypeWidening", "true")
    writer.format("delta").save(path)


def test_merge_schema_widens_int_to_long_when_enabled(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "w")
    _int_table(spark, path, widening=True)
    big = spark.createDataFrame([(2**40, "c")], "id long, s string")
    big.write.format("delta").option("mergeSchema", "true").mode("append").save(path)
    commit = [
        json.loads(line)
        for line in (tmp_path / "w" / "_delta_log" / f"{1:020d}.json").read_text().splitlines()
    ]
    metadata = next(a["metaData"] for a in commit if "metaData" in a)
    field = json.loads(metadata["schemaString"])["fields"][0]
    assert field["type"] == "long"
    assert field["metadata"]["delta.typeChanges"] == [{"fromType": "integer", "toType": "long"}]
    df = spark.read.format("delta").load(path)
    assert df.schema["id"].dataType.simpleString() == "bigint"
    assert sorted(tuple(r) for r in df.collect()) == [(1, "a"), (2, "b"), (2**40, "c")]


def test_merge_schema_without_type_widening_refuses(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "n")
    _int_table(spark, path, widening=False)
    big = spark.createDataFrame([(2**40, "c")], "id long, s string")
    with pytest.raises(AnalysisException, match=r"id"):
        big.write.format("delta").option("mergeSchema", "true").mode("append").save(path)
    assert DeltaLog(path).snapshot().version == 0
    assert not (tmp_path / "n" / "_delta_log" / f"{1:020d}.json").exists()


def test_dml_rewrites_files_of_integers_widened_to_decimals(spark: Any, tmp_path: Path) -> None:
    """UPDATE reads the narrower file through the same conversion as a query does."""
    from delta_pyspark.tables import DeltaTable

    root = tmp_path / "t"
    shutil.copytree(TABLE, root)
    DeltaTable.forPath(spark, str(root)).update("byte_long = 1", {"int_decimal": "int_decimal + 1"})
    rows = {r.byte_long: r for r in spark.read.format("delta").load(str(root)).collect()}
    assert rows[1].int_decimal == Decimal("4.0") and rows[1].byte_decimal == Decimal("1.0")
    assert rows[2**63 - 1].int_decimal == Decimal("1234567890.1")
    assert spark.conf.get("spark.sql.parquet.enableVectorizedReader") == "true"
