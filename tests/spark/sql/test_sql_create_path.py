"""``CREATE TABLE [IF NOT EXISTS] delta.`path` ...`` through ``spark.sql``: version 0 of the
log holds the columns, partitioning, properties and comment; AS SELECT writes the rows; an
existing table is left alone or refused, never changed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pyspark.errors import AnalysisException, ParseException

from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.exceptions import DeltaError

pytestmark = pytest.mark.spark


def _commit(path: str, version: int) -> dict[str, Any]:
    text = (Path(path) / "_delta_log" / f"{version:020d}.json").read_text()
    return {k: v for line in text.splitlines() for k, v in json.loads(line).items()}


def test_create_with_columns_partitioning_properties_comment(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    spark.sql(
        f"CREATE TABLE delta.`{path}` (id BIGINT NOT NULL, v STRING COMMENT 'value', p INT) "
        "USING delta PARTITIONED BY (p) COMMENT 'made by SQL' "
        "TBLPROPERTIES ('delta.appendOnly' = 'true', 'team' = 'me')"
    )
    snapshot = DeltaLog(path).snapshot()
    assert snapshot.version == 0
    assert snapshot.schema.field_names == ["id", "v", "p"]
    assert not snapshot.schema.field("id").nullable
    assert snapshot.schema.field("v").metadata == {"comment": "value"}
    assert snapshot.metadata.partition_columns == ("p",)
    assert snapshot.metadata.description == "made by SQL"
    assert dict(snapshot.configuration) == {"delta.appendOnly": "true", "team": "me"}
    assert _commit(path, 0)["commitInfo"]["operation"] == "CREATE TABLE"
    assert spark.read.format("delta").load(path).count() == 0
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (1, 'a', 7)")
    assert [tuple(r) for r in spark.sql(f"SELECT * FROM delta.`{path}`").collect()] == [(1, "a", 7)]


def test_create_as_select_and_existing_tables(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "ctas")
    spark.sql(f"CREATE TABLE delta.`{path}` USING delta AS SELECT id, id * 2 AS d FROM range(3)")
    assert _commit(path, 0)["commitInfo"]["operation"] == "CREATE TABLE AS SELECT"
    rows = sorted(tuple(r) for r in spark.read.format("delta").load(path).collect())
    assert rows == [(0, 0), (1, 2), (2, 4)]
    # naming an existing table, or IF NOT EXISTS, changes nothing
    spark.sql(f"CREATE TABLE delta.`{path}` USING delta")
    spark.sql(f"CREATE TABLE IF NOT EXISTS delta.`{path}` (x INT) USING delta")
    spark.sql(f"CREATE TABLE IF NOT EXISTS delta.`{path}` USING delta AS SELECT 1 AS x")
    with pytest.raises(AnalysisException, match="DELTA_TABLE_ALREADY_EXISTS"):
        spark.sql(f"CREATE TABLE delta.`{path}` (x INT) USING delta")
    assert DeltaLog(path).snapshot().version == 0
    with pytest.raises(AnalysisException, match="DELTA_SCHEMA_NOT_PROVIDED"):
        spark.sql(f"CREATE TABLE delta.`{tmp_path / 'none'}` USING delta")
    with pytest.raises(AnalysisException, match="USING delta"):
        spark.sql(f"CREATE TABLE delta.`{tmp_path / 'pq'}` (x INT) USING parquet")
    assert not (tmp_path / "none").exists() and not (tmp_path / "pq").exists()


def test_declared_not_null_and_user_properties_are_kept(spark: Any, tmp_path: Path) -> None:
    """By name and by path, CREATE and REPLACE keep NOT NULL and every TBLPROPERTIES key
    (a write of rows relaxes nullability; a declared schema does not)."""
    name = "create_declared_t"
    spark.sql(
        f"CREATE TABLE {name} (id BIGINT NOT NULL, v INT) USING delta "
        "TBLPROPERTIES ('team' = 'data', 'delta.appendOnly' = 'false')"
    )
    try:
        location = spark.sql(f"DESCRIBE DETAIL {name}").first().location
        snapshot = DeltaLog(location).snapshot()
        assert not snapshot.schema.field("id").nullable
        assert dict(snapshot.configuration) == {"team": "data", "delta.appendOnly": "false"}
        with pytest.raises(Exception, match="NOT_NULL"):
            spark.sql(f"INSERT INTO {name} VALUES (NULL, 1)")
        spark.sql(f"REPLACE TABLE {name} (k STRING NOT NULL) USING delta TBLPROPERTIES ('t' = '1')")
        snapshot = DeltaLog(location).snapshot()
        assert not snapshot.schema.field("k").nullable
        assert dict(snapshot.configuration) == {"t": "1"}
    finally:
        spark.sql(f"DROP TABLE IF EXISTS {name}")
    path = str(tmp_path / "p")
    spark.sql(f"CREATE TABLE delta.`{path}` (id BIGINT NOT NULL) USING delta")
    with pytest.raises(Exception, match="NOT_NULL"):
        spark.sql(f"INSERT INTO delta.`{path}` VALUES (NULL)")
    assert DeltaLog(path).snapshot().version == 0


def test_spark_parses_the_statement(spark: Any, tmp_path: Path) -> None:
    """Spark's own parser reads CREATE TABLE at a path: identity and generated columns as its
    grammar has them, a CTAS query with a CTE and bound parameters (named, and positional in
    a REPLACE), EXPLAIN showing the Delta command, and Spark's own syntax errors."""
    path = str(tmp_path / "t")
    spark.sql(
        f"CREATE TABLE delta.`{path}` (id BIGINT GENERATED ALWAYS AS IDENTITY (START WITH 10 "
        "INCREMENT BY 5), v INT, twice INT GENERATED ALWAYS AS (v * 2)) USING delta"
    )
    fields = {f["name"]: f["metadata"] for f in _schema(path)["fields"]}
    assert (fields["id"]["delta.identity.start"], fields["id"]["delta.identity.step"]) == (10, 5)
    assert fields["id"]["delta.identity.allowExplicitInsert"] is False
    assert fields["twice"]["delta.generationExpression"] == "v * 2"
    spark.sql(f"INSERT INTO delta.`{path}` (v) VALUES (1), (2)")
    rows = spark.read.format("delta").load(path).orderBy("v").collect()
    assert [(r.v, r.twice) for r in rows] == [(1, 2), (2, 4)]
    # ids are generated in Spark's tasks: distinct, from 10 by steps of 5
    assert len({r.id for r in rows}) == 2 and all(r.id >= 10 and r.id % 5 == 0 for r in rows)

    ctas = str(tmp_path / "ctas")
    spark.sql(
        f"CREATE TABLE delta.`{ctas}` AS WITH src AS (SELECT id FROM range(:n)) "
        "SELECT id, id * :k AS v FROM src",
        args={"n": 3, "k": 7},
    )
    got = sorted(tuple(r) for r in spark.read.format("delta").load(ctas).collect())
    assert got == [(0, 0), (1, 7), (2, 14)]
    replace = f"CREATE OR REPLACE TABLE delta.`{ctas}` USING delta AS SELECT ? AS id, ? AS v"
    spark.sql(replace, args=[5, 6])
    assert [tuple(r) for r in spark.read.format("delta").load(ctas).collect()] == [(5, 6)]
    plan = spark.sql(f"EXPLAIN CREATE TABLE delta.`{tmp_path / 'e'}` (a INT) USING delta")
    assert "DefineDeltaTable" in plan.first()[0]
    assert not (tmp_path / "e").exists()  # EXPLAIN creates nothing
    with pytest.raises(ParseException, match="PARSE_SYNTAX_ERROR") as caught:
        spark.sql(f"CREATE TABLE delta.`{tmp_path / 'x'}` (a INT,) USING delta")
    assert not isinstance(caught.value, DeltaError)


def _schema(path: str) -> dict[str, Any]:
    return json.loads(_commit(path, 0)["metaData"]["schemaString"])
