"""CHECK constraints, NOT NULL and column invariants: adding and dropping through the
API, refusal when existing rows violate, and writes / DML that break a rule failing
with a typed error that names the rule and the offending values, committing nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from delta_pyspark.core.protocol.actions import Protocol
from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.core.transaction.table_definition import create_table
from delta_pyspark.exceptions import (
    DeltaAnalysisException,
    DeltaIllegalArgumentException,
    InvariantViolationError,
)
from delta_pyspark.spark.files.write_checks import referenced_columns
from delta_pyspark.tables import DeltaTable

SCHEMA = "id long, v long, p string"


def _rows(spark: Any, path: str) -> list[tuple]:
    return sorted(
        tuple(r) for r in spark.read.format("delta").load(path).select("id", "v", "p").collect()
    )


@pytest.fixture(params=[False, True], ids=["unpartitioned", "partitioned"])
def table(request: Any, spark: Any, tmp_path: Path) -> str:
    path = str(tmp_path / "t")
    rows = [(i, i * 10, "a" if i < 5 else "b") for i in range(10)]
    writer = spark.createDataFrame(rows, SCHEMA).repartition(2).write.format("delta")
    if request.param:
        writer = writer.partitionBy("p")
    writer.save(path)
    return path


def _version(path: str) -> int:
    return DeltaLog(path).snapshot().version


def _files(path: str) -> set[str]:
    return set(DeltaLog(path).snapshot().files.column("path").to_pylist())


def test_add_and_drop(spark: Any, table: str) -> None:
    dt = DeltaTable.forPath(spark, table)
    assert DeltaLog(table).snapshot().protocol == Protocol(1, 2)
    dt.addConstraint("ValidV", "v >= 0 AND v < 1000")
    snap = DeltaLog(table).snapshot()
    assert snap.version == 1
    assert snap.configuration["delta.constraints.validv"] == "v >= 0 AND v < 1000"
    assert snap.protocol == Protocol(1, 3)  # checkConstraints
    detail = dt.detail().collect()[0]
    assert (detail.minReaderVersion, detail.minWriterVersion) == (1, 3)
    assert "checkConstraints" in detail.tableFeatures
    assert detail.properties["delta.constraints.validv"] == "v >= 0 AND v < 1000"
    history = dt.history(1).collect()[0]
    assert history.operation == "ADD CONSTRAINT"
    assert history.operationParameters == {"name": "ValidV", "expr": "v >= 0 AND v < 1000"}

    with pytest.raises(DeltaAnalysisException, match="already exists"):
        dt.addConstraint("validv", "id > 0")
    assert _version(table) == 1

    dt.dropConstraint("VALIDV")
    snap = DeltaLog(table).snapshot()
    assert snap.version == 2
    assert not any(k.startswith("delta.constraints.") for k in snap.configuration)
    assert snap.protocol == Protocol(1, 3)  # no downgrade
    h = dt.history(1).collect()[0]
    assert (h.operation, h.operationParameters) == (
        "DROP CONSTRAINT",
        {"name": "VALIDV", "expr": "v >= 0 AND v < 1000", "existed": "true"},
    )
    # once dropped, rows it forbade are accepted
    spark.createDataFrame([(50, 5000, "a")], SCHEMA).write.format("delta").mode("append").save(
        table
    )
    assert (50, 5000, "a") in _rows(spark, table)


def test_drop_missing(spark: Any, table: str) -> None:
    dt = DeltaTable.forPath(spark, table)
    with pytest.raises(DeltaAnalysisException, match="nonexistent constraint nope"):
        dt.dropConstraint("nope", ifExists=False)
    dt.dropConstraint("nope")  # ifExists defaults to True: nothing to do, nothing committed
    assert _version(table) == 0


def test_bad_expressions(spark: Any, table: str) -> None:
    dt = DeltaTable.forPath(spark, table)
    with pytest.raises(
        DeltaAnalysisException, match="cannot add CHECK constraint c1 \\(nope > 1\\)"
    ):
        dt.addConstraint("c1", "nope > 1")
    with pytest.raises(DeltaAnalysisException, match="should be a boolean expression"):
        dt.addConstraint("c2", "id + 1")
    with pytest.raises(DeltaAnalysisException, match="c3"):
        dt.addConstraint("c3", "id >>> (")
    with pytest.raises(DeltaIllegalArgumentException):
        dt.addConstraint("", "id > 0")
    assert _version(table) == 0


def test_existing_violations_refuse_the_constraint(spark: Any, table: str) -> None:
    spark.createDataFrame([(-1, None, "a"), (-2, 7, "b")], SCHEMA).write.format("delta").mode(
        "append"
    ).save(table)
    dt = DeltaTable.forPath(spark, table)
    # v IS NULL counts as a violation, as in delta-spark (NOT expr OR expr IS UNKNOWN)
    with pytest.raises(DeltaAnalysisException) as e:
        dt.addConstraint("small", "v < 50")
    assert e.value.getCondition() == "DELTA_NEW_CHECK_CONSTRAINT_VIOLATION"
    msg = str(e.value)
    assert "6 rows" in msg  # 50, 60, 70, 80, 90 and the NULL
    assert "CHECK constraint small (v < 50)" in msg
    assert " - v : " in msg
    assert _version(table) == 1
    assert not any(
        k.startswith("delta.constraints") for k in DeltaLog(table).snapshot().configuration
    )


def test_append_violating_fails_and_commits_nothing(spark: Any, table: str) -> None:
    dt = DeltaTable.forPath(spark, table)
    dt.addConstraint("positive", "id >= 0 OR p = 'zero'")
    before, files = _rows(spark, table), _files(table)
    bad = spark.createDataFrame([(7, 1, "a"), (-5, 123, "b")], SCHEMA)
    with pytest.raises(InvariantViolationError) as e:
        bad.write.format("delta").mode("append").save(table)
    msg = str(e.value)
    assert msg.startswith("CHECK constraint positive (id >= 0 OR p = 'zero') violated by row")
    assert " - id : -5" in msg and " - p : b" in msg
    assert " - v :" not in msg  # only the columns the constraint mentions
    assert _version(table) == 1 and _files(table) == files and _rows(spark, table) == before
    # NULL is not true either
    nulls = spark.createDataFrame([(None, 1, "a")], SCHEMA)
    with pytest.raises(InvariantViolationError, match=" - id : null"):
        nulls.write.format("delta").mode("append").save(table)
    # good rows go in
    spark.createDataFrame([(11, 1, "a"), (-1, 2, "zero")], SCHEMA).write.format("delta").mode(
        "append"
    ).save(table)
    assert _version(table) == 2


def test_overwrite_violating_fails(spark: Any, table: str) -> None:
    DeltaTable.forPath(spark, table).addConstraint("c", "v < 1000")
    with pytest.raises(InvariantViolationError, match=" - v : 5000"):
        spark.createDataFrame([(1, 5000, "a")], SCHEMA).write.format("delta").mode(
            "overwrite"
        ).save(table)
    assert len(_rows(spark, table)) == 10 and _version(table) == 1


def test_update_violating_fails(spark: Any, table: str) -> None:
    dt = DeltaTable.forPath(spark, table)
    dt.addConstraint("vcap", "v <= 100")
    before, files = _rows(spark, table), _files(table)
    with pytest.raises(InvariantViolationError) as e:
        dt.update("id = 3", {"v": "v * 100"})
    assert "CHECK constraint vcap (v <= 100)" in str(e.value)
    assert " - v : 3000" in str(e.value)
    assert _version(table) == 1 and _files(table) == files and _rows(spark, table) == before
    dt.update("id = 3", {"v": "99"})
    assert (3, 99, "a") in _rows(spark, table)


def test_merge_violating_fails(spark: Any, table: str) -> None:
    dt = DeltaTable.forPath(spark, table)
    dt.addConstraint("vcap", "v <= 100")
    before = _rows(spark, table)
    source = spark.createDataFrame([(1, 5, "a"), (42, 777, "b")], SCHEMA)
    with pytest.raises(InvariantViolationError) as e:
        (
            dt.alias("t")
            .merge(source.alias("s"), "t.id = s.id")
            .whenMatchedUpdateAll()
            .whenNotMatchedInsertAll()
            .execute()
        )
    assert " - v : 777" in str(e.value)
    assert _version(table) == 1 and _rows(spark, table) == before


def test_constraint_on_partition_column(spark: Any, table: str) -> None:
    DeltaTable.forPath(spark, table).addConstraint("known_p", "p IN ('a', 'b', 'c')")
    with pytest.raises(InvariantViolationError, match=" - p : zzz"):
        spark.createDataFrame([(1, 1, "zzz")], SCHEMA).write.format("delta").mode("append").save(
            table
        )
    spark.createDataFrame([(1, 1, "c")], SCHEMA).write.format("delta").mode("append").save(table)
    assert _version(table) == 2


def test_time_travel_around_constraints(spark: Any, table: str) -> None:
    dt = DeltaTable.forPath(spark, table)
    dt.addConstraint("c", "id < 100")
    dt.dropConstraint("c")
    assert "delta.constraints.c" not in DeltaLog(table).snapshot(0).configuration
    assert DeltaLog(table).snapshot(1).configuration["delta.constraints.c"] == "id < 100"
    assert spark.read.format("delta").option("versionAsOf", 1).load(table).count() == 10


def test_not_null_columns(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "nn")
    (
        DeltaTable.create(spark)
        .location(path)
        .addColumn("id", "LONG", nullable=False)
        .addColumn("s", "STRING")
        .execute()
    )
    schema = "id long, s string"
    with pytest.raises(
        InvariantViolationError, match="NOT NULL constraint violated for column: id"
    ):
        spark.createDataFrame([(1, "x"), (None, "y")], schema).write.format("delta").mode(
            "append"
        ).save(path)
    assert _version(path) == 0
    spark.createDataFrame([(1, None), (2, "b")], schema).write.format("delta").mode("append").save(
        path
    )
    assert sorted(r.id for r in spark.read.format("delta").load(path).collect()) == [1, 2]
    dt = DeltaTable.forPath(spark, path)
    with pytest.raises(
        InvariantViolationError, match="NOT NULL constraint violated for column: id"
    ):
        dt.update("id = 2", {"id": "NULL"})
    assert _version(path) == 1


def test_nested_not_null_guard(spark: Any) -> None:
    """Non-nullable struct fields are checked when their parent is not null (the write
    path itself cannot yet cast data into such a struct, so the guard is tested alone)."""
    from delta_pyspark.core.protocol.schema import INTEGER, STRING, StructField, StructType
    from delta_pyspark.spark.files.write_checks import guard_rows, violation_from

    table = StructType(
        (
            StructField("id", INTEGER),
            StructField(
                "s", StructType((StructField("a", INTEGER, False), StructField("b", STRING)))
            ),
        )
    )
    ddl = "id int, s struct<a:int,b:string>"
    ok = spark.createDataFrame([(1, None), (2, (3, None))], ddl)
    assert guard_rows(ok, table, {}).count() == 2
    bad = spark.createDataFrame([(1, (None, "x"))], ddl)
    with pytest.raises(Exception) as e:
        guard_rows(bad, table, {}).collect()
    violation = violation_from(e.value)
    assert isinstance(violation, InvariantViolationError)
    assert str(violation) == "NOT NULL constraint violated for column: s.a."


def _invariant(expr: str) -> str:
    return json.dumps({"expression": {"expression": expr}})


def test_column_invariants(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "inv")
    schema = {
        "type": "struct",
        "fields": [
            {
                "name": "x",
                "type": "integer",
                "nullable": True,
                "metadata": {"delta.invariants": _invariant("x > 3")},
            },
            {
                "name": "st",
                "type": {
                    "type": "struct",
                    "fields": [
                        {
                            "name": "y",
                            "type": "string",
                            "nullable": True,
                            "metadata": {"delta.invariants": _invariant("length(st.y) < 4")},
                        }
                    ],
                },
                "nullable": True,
                "metadata": {},
            },
        ],
    }
    create_table(DeltaLog(path), json.dumps(schema), protocol=Protocol(1, 2))
    ddl = "x int, st struct<y:string>"

    def append(rows: list[tuple]) -> None:
        spark.createDataFrame(rows, ddl).write.format("delta").mode("append").save(path)

    with pytest.raises(InvariantViolationError) as e:
        append([(5, ("ok",)), (1, ("ok",))])
    assert str(e.value).startswith("Invariant (x > 3) on column x violated by row with values:")
    assert " - x : 1" in str(e.value)
    with pytest.raises(InvariantViolationError, match=r"Invariant \(x > 3\)(.|\n)* - x : null"):
        append([(None, ("ok",))])  # NULL violates an invariant too (PROTOCOL.md)
    with pytest.raises(InvariantViolationError, match=r"on column st\.y (.|\n)* - st : "):
        append([(9, ("toolong",))])
    assert _version(path) == 0
    with pytest.raises(InvariantViolationError, match=" - st : null"):
        append([(7, None)])  # the invariant is NULL when the struct is: a violation too
    append([(4, ("abc",)), (5, ("",))])
    assert _version(path) == 1
    assert sorted(r.x for r in spark.read.format("delta").load(path).collect()) == [4, 5]


def test_referenced_columns() -> None:
    cols = ["id", "Name", "weird col", "v"]
    assert referenced_columns("id > 0 AND name <> 'id v'", cols) == ["id", "Name"]
    assert referenced_columns('`weird col` IS NOT NULL OR v = "id"', cols) == ["weird col", "v"]
    assert referenced_columns("true", cols) == []


def test_table_properties_through_the_api(spark: Any, table: str) -> None:
    """setProperties / unsetProperties (core/commands/alter_table.py) as DeltaTable exposes them."""
    dt = DeltaTable.forPath(spark, table)
    dt.setProperties({"delta.enableDeletionVectors": True, "owner": "team-a"})
    detail = dt.detail().collect()[0]
    assert detail.properties == {"delta.enableDeletionVectors": "true", "owner": "team-a"}
    assert (detail.minReaderVersion, detail.minWriterVersion) == (3, 7)
    assert "deletionVectors" in detail.tableFeatures
    with pytest.raises(DeltaIllegalArgumentException, match=r"delta\.nonsense"):
        dt.setProperties({"delta.nonsense": "1"})
    dt.unsetProperties(["owner"])
    with pytest.raises(DeltaAnalysisException, match="no such property"):
        dt.unsetProperties(["owner"])
    dt.unsetProperties(["owner"], ifExists=True)
    assert dt.detail().collect()[0].properties == {"delta.enableDeletionVectors": "true"}
    assert [r.operation for r in dt.history(3).collect()] == [
        "UNSET TBLPROPERTIES",
        "UNSET TBLPROPERTIES",
        "SET TBLPROPERTIES",
    ]
    assert len(_rows(spark, table)) == 10
