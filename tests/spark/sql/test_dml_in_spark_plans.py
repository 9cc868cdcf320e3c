"""MERGE, UPDATE and DELETE on Delta tables as Spark parses and resolves them (``DeltaDml``):
query parameters, CTEs, views, ``DataFrame.mergeInto``, ``EXPLAIN``, schema evolution with
``*``, Spark's own errors, and tables of other formats left to Spark; on paths and names."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from pyspark.errors import AnalysisException, ParseException, UnsupportedOperationException
from pyspark.sql import functions as F

from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.exceptions import DeltaAnalysisException, DeltaError, DeltaParseException
from spark_versions import BINDS_MARKERS_WHILE_PARSING, v1_dml_refusal

_names = itertools.count()


@dataclass
class Table:
    ref: str  # how statements name it: delta.`path` or a catalog name
    path: str


@pytest.fixture(params=["name", "path"])
def table(request: Any, spark: Any, tmp_path: Path) -> Iterator[Table]:
    """ids 0..4, v = id * 10, at version 0."""
    path = str(tmp_path / f"dml{next(_names)}")
    spark.range(5).selectExpr("id", "id * 10 AS v").coalesce(1).write.format("delta").save(path)
    if request.param == "path":
        yield Table(f"delta.`{path}`", path)
        return
    name = f"dml_plans_{next(_names)}"
    spark.catalog.createTable(name, path=path, source="delta")
    yield Table(name, path)
    spark.sql(f"DROP TABLE IF EXISTS {name}")


def _rows(spark: Any, path: str) -> list[tuple]:
    return sorted(tuple(r) for r in spark.read.format("delta").load(path).collect())


def _version(path: str) -> int:
    return DeltaLog(path).snapshot().version


def test_named_and_positional_parameters(spark: Any, table: Table) -> None:
    updated = spark.sql(
        f"UPDATE {table.ref} SET v = v + :add WHERE id = :id", args={"add": 1, "id": 2}
    )
    assert updated.collect()[0].num_affected_rows == 1
    deleted = spark.sql(f"DELETE FROM {table.ref} WHERE id IN (?, ?)", args=[0, 4])
    assert deleted.collect()[0].num_affected_rows == 2
    merged = spark.sql(
        f"MERGE INTO {table.ref} t USING (SELECT :id AS id, :v AS v) s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT *",
        args={"id": 9, "v": 90},
    )
    assert tuple(merged.collect()[0]) == (1, 0, 0, 1)
    assert _rows(spark, table.path) == [(1, 10), (2, 21), (3, 30), (9, 90)]
    assert _version(table.path) == 3


def test_merge_from_a_cte_and_a_subquery_source(spark: Any, table: Table) -> None:
    spark.sql(
        f"""
        WITH changes AS (SELECT id, v * 100 AS v FROM VALUES (1, 1), (7, 7) AS c(id, v))
        MERGE INTO {table.ref} AS t
        USING (SELECT * FROM changes WHERE id > 0) AS s ON t.id = s.id
        WHEN MATCHED THEN UPDATE SET t.v = s.v
        WHEN NOT MATCHED THEN INSERT (id, v) VALUES (s.id, s.v)
        """
    )
    assert _rows(spark, table.path) == [(0, 0), (1, 100), (2, 20), (3, 30), (4, 40), (7, 700)]


def test_dml_through_a_view_of_the_table(spark: Any, table: Table) -> None:
    spark.sql(f"CREATE OR REPLACE TEMP VIEW dml_view AS SELECT * FROM {table.ref}")
    spark.sql("UPDATE dml_view SET v = -1 WHERE id = 1")
    spark.sql("DELETE FROM dml_view WHERE id = 2")
    spark.sql(
        "MERGE INTO dml_view USING (SELECT 3 AS id, 33 AS v) s ON dml_view.id = s.id "
        "WHEN MATCHED THEN UPDATE SET *"
    )
    assert _rows(spark, table.path) == [(0, 0), (1, -1), (3, 33), (4, 40)]
    assert _version(table.path) == 3


def test_dataframe_merge_into_a_delta_table(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "into")
    spark.range(3).selectExpr("id", "id * 10 AS v").write.format("delta").save(path)
    spark.catalog.createTable("dml_into", path=path, source="delta")
    try:
        source = spark.createDataFrame([(1, 111, "x"), (8, 888, "y")], "id long, v long, t string")
        (
            source.alias("src")
            .mergeInto("dml_into", F.expr("dml_into.id = src.id"))
            .whenMatched()
            .updateAll()
            .whenNotMatched()
            .insertAll()
            .withSchemaEvolution()
            .merge()
        )
        assert _rows(spark, path) == [(0, 0, None), (1, 111, "x"), (2, 20, None), (8, 888, "y")]
        assert [f.name for f in spark.table("dml_into").schema.fields] == ["id", "v", "t"]
    finally:
        spark.sql("DROP TABLE dml_into")


def test_star_actions_with_schema_evolution(spark: Any, table: Table) -> None:
    """``*`` is expanded by the Delta command, not by Spark: a source column the table
    lacks is added, a table column the source lacks keeps its value (UPDATE) or is null
    (INSERT)."""
    spark.sql(
        f"""
        MERGE WITH SCHEMA EVOLUTION INTO {table.ref} t
        USING (SELECT * FROM VALUES (1, 'one'), (6, 'six') AS s(id, label)) s
        ON t.id = s.id
        WHEN MATCHED THEN UPDATE SET *
        WHEN NOT MATCHED THEN INSERT *
        """
    )
    assert _rows(spark, table.path) == [
        (0, 0, None),
        (1, 10, "one"),
        (2, 20, None),
        (3, 30, None),
        (4, 40, None),
        (6, None, "six"),
    ]


def test_star_actions_without_schema_evolution_keep_the_schema(spark: Any, table: Table) -> None:
    spark.sql(
        f"MERGE INTO {table.ref} t USING (SELECT 1 AS id, 5 AS v, 'extra' AS label) s "
        "ON t.id = s.id WHEN MATCHED THEN UPDATE SET *"
    )
    assert _rows(spark, table.path) == [(0, 0), (1, 5), (2, 20), (3, 30), (4, 40)]


def test_explain_shows_the_delta_command_and_runs_nothing(spark: Any, table: Table) -> None:
    statements = {
        "MERGE INTO": f"MERGE INTO {table.ref} t USING (SELECT 1 AS id) s ON t.id = s.id "
        "WHEN MATCHED THEN DELETE",
        "UPDATE": f"UPDATE {table.ref} SET v = 0 WHERE id = 1",
        "DELETE FROM": f"DELETE FROM {table.ref} WHERE id = 1",
    }
    for kind, statement in statements.items():
        plan = spark.sql(f"EXPLAIN {statement}").collect()[0][0]
        assert f"DeltaDmlCommand {kind} " in plan, plan
    assert _version(table.path) == 0


def test_paths_in_plans_the_parser_does_not_see_whole(spark: Any, tmp_path: Path) -> None:
    """``EXPLAIN``'s statement and ``spark.table``'s name reach the analyzer, not the parser."""
    path = str(tmp_path / "seen")
    spark.range(3).write.format("delta").save(path)
    plan = spark.sql(f"EXPLAIN SELECT * FROM delta.`{path}`").collect()[0][0]
    assert "DeltaFileIndex" in plan, plan
    assert sorted(r.id for r in spark.table(f"delta.`{path}`").collect()) == [0, 1, 2]


def test_quoted_names_and_keywords_inside_strings(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "quoted")
    spark.sql(f"CREATE TABLE delta.`{path}` (k INT, `a b` STRING, s STRUCT<x: INT>) USING delta")
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (1, 'old', named_struct('x', 1))")
    spark.sql(
        f"MERGE INTO delta.`{path}` AS t USING (SELECT 1 AS k, 'WHEN' AS note) AS s "
        "ON t.k = s.k AND s.note <> 'THEN' "
        "WHEN MATCHED AND s.note IN ('WHEN', 'x') THEN UPDATE SET t.`a b` = concat(s.note, ', ')"
    )
    spark.sql(f"UPDATE delta.`{path}` SET s.x = 7 WHERE `a b` = 'WHEN, '")
    rows = spark.read.format("delta").load(path).collect()
    assert [(r.k, r["a b"], r.s.x) for r in rows] == [(1, "WHEN, ", 7)]


def test_subqueries_in_conditions_are_refused_and_change_nothing(spark: Any, table: Table) -> None:
    with pytest.raises(DeltaAnalysisException, match=r"DELTA_UNSUPPORTED_SUBQUERY.*DELETE") as e:
        spark.sql(f"DELETE FROM {table.ref} WHERE id IN (SELECT 1)")
    assert isinstance(e.value, AnalysisException) and isinstance(e.value, DeltaError)
    assert e.value.getCondition() == "DELTA_UNSUPPORTED_SUBQUERY"
    with pytest.raises(DeltaAnalysisException, match=r"DELTA_UNSUPPORTED_SUBQUERY.*UPDATE"):
        spark.sql(f"UPDATE {table.ref} SET v = 0 WHERE id = (SELECT max(1))")
    with pytest.raises(DeltaAnalysisException, match="search condition of MERGE"):
        spark.sql(
            f"MERGE INTO {table.ref} t USING (SELECT 1 AS id) s "
            "ON t.id = s.id AND s.id IN (SELECT 1) WHEN MATCHED THEN DELETE"
        )
    assert _version(table.path) == 0


def test_spark_s_analysis_errors_change_nothing(spark: Any, table: Table) -> None:
    with pytest.raises(AnalysisException, match=r"UNRESOLVED_COLUMN.*`nosuch`"):
        spark.sql(
            f"MERGE INTO {table.ref} t USING (SELECT 1 AS id) s ON t.id = s.id "
            "WHEN MATCHED THEN UPDATE SET v = s.nosuch"
        )
    with pytest.raises(AnalysisException, match="UNBOUND_SQL_PARAMETER"):
        spark.sql(f"DELETE FROM {table.ref} WHERE id = :missing")
    assert _version(table.path) == 0


@pytest.mark.parametrize(
    ("statement", "condition"),
    [
        ("UPDATE {t} SET v", "PARSE_SYNTAX_ERROR"),
        (
            "MERGE INTO {t} x USING {t} s ON x.id = s.id WHEN MATCHED THEN INSERT *",
            "PARSE_SYNTAX_ERROR",
        ),
        ("MERGE INTO {t} USING {t} s ON s.id = 1", "MERGE_WITHOUT_WHEN"),
    ],
)
def test_malformed_statements_get_spark_s_parse_errors(
    spark: Any, tmp_path: Path, statement: str, condition: str
) -> None:
    path = str(tmp_path / "t")
    spark.range(2).write.format("delta").save(path)
    with pytest.raises(ParseException, match=r"line 1, pos") as e:
        spark.sql(statement.format(t=f"delta.`{path}`"))
    assert e.value.getCondition() == condition
    assert _version(path) == 0


def test_other_formats_get_spark_s_own_merge(spark: Any) -> None:
    """A star on a table of another format is put back for Spark, which expands it and
    refuses the MERGE as it does without Delta (not an unresolved plan)."""
    spark.range(3).write.format("parquet").saveAsTable("dml_parquet")
    try:
        with pytest.raises(UnsupportedOperationException, match=v1_dml_refusal("MERGE INTO TABLE")):
            spark.sql(
                "MERGE INTO dml_parquet t USING (SELECT 1L AS id) s ON t.id = s.id "
                "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
            )
        with pytest.raises(AnalysisException, match=r"UNRESOLVED_COLUMN.*`id`"):
            spark.sql(
                "MERGE INTO dml_parquet t USING (SELECT 1L AS other) s ON true "
                "WHEN MATCHED THEN UPDATE SET *"
            )
        assert spark.table("dml_parquet").count() == 3
    finally:
        spark.sql("DROP TABLE dml_parquet")


# ---------------------------------------------------------------------- REPLACE WHERE


def test_insert_replace_where_overwrites_the_matching_rows(spark: Any, table: Table) -> None:
    spark.sql(
        f"""
        WITH fresh AS (SELECT * FROM VALUES (3, 33), (4, 44), (5, 55) AS f(id, v))
        INSERT INTO {table.ref} REPLACE WHERE id >= 3 SELECT * FROM fresh
        """
    )
    assert _rows(spark, table.path) == [(0, 0), (1, 10), (2, 20), (3, 33), (4, 44), (5, 55)]
    history = DeltaLog(table.path).history()
    assert history[0]["operation"] == "WRITE"
    assert history[0]["operationParameters"]["mode"] == "Overwrite"
    assert "id >= 3" in history[0]["operationParameters"]["predicate"]
    with pytest.raises(DeltaError, match="does not conform to replaceWhere"):
        spark.sql(f"INSERT INTO {table.ref} REPLACE WHERE id >= 3 SELECT 1 AS id, 1 AS v")
    assert _version(table.path) == 1


def test_dataframe_write_to_overwrite_with_a_condition(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    spark.range(5).selectExpr("id", "id * 10 AS v").write.format("delta").save(path)
    spark.catalog.createTable("dml_write_to", path=path, source="delta")
    try:
        fresh = spark.createDataFrame([(0, 1), (1, 2)], "id long, v long")
        fresh.writeTo("dml_write_to").overwrite(F.col("id") < 2)
        assert _rows(spark, path) == [(0, 1), (1, 2), (2, 20), (3, 30), (4, 40)]
    finally:
        spark.sql("DROP TABLE dml_write_to")


def test_replace_where_elsewhere_and_with_markers(spark: Any, table: Table) -> None:
    statement = f"INSERT INTO {table.ref} REPLACE WHERE id = :id SELECT 1 AS id, 1 AS v"
    if BINDS_MARKERS_WHILE_PARSING:  # the condition holds a literal when we see it
        spark.sql(statement, args={"id": 1})
        assert _rows(spark, table.path) == [(0, 0), (1, 1), (2, 20), (3, 30), (4, 40)]
    else:
        with pytest.raises(
            AnalysisException, match="PARAMETER_MARKER_IN_UNEXPECTED_STATEMENT"
        ) as e:
            spark.sql(statement, args={"id": 1})
        assert isinstance(e.value, DeltaAnalysisException)
        assert _version(table.path) == 0
    spark.range(2).selectExpr("id", "id AS v").write.format("parquet").saveAsTable("dml_pq")
    try:
        with pytest.raises(
            AnalysisException,
            # Spark 4.3 words it as its other refusals of V1 tables
            match=r"Cannot write into v1 table|does not support INSERT INTO \.\.\. REPLACE WHERE",
        ) as refused:
            spark.sql("INSERT INTO dml_pq REPLACE WHERE id = 1 SELECT 1 AS id, 5 AS v")
        assert not isinstance(refused.value, DeltaError)
        assert sorted(tuple(r) for r in spark.table("dml_pq").collect()) == [(0, 0), (1, 1)]
    finally:
        spark.sql("DROP TABLE dml_pq")


def test_time_travel_to_a_bound_timestamp(spark: Any, table: Table) -> None:
    spark.sql(f"DELETE FROM {table.ref} WHERE id = 0")
    first = DeltaLog(table.path).snapshot(0).timestamp
    when = f"{first // 1000}.{first % 1000:03d}"
    literal = f"SELECT count(*) AS n FROM {table.ref} TIMESTAMP AS OF :ts"
    query = f"SELECT count(*) AS n FROM {table.ref} TIMESTAMP AS OF timestamp_seconds(:ts)"
    spark.conf.set("spark.sql.session.timeZone", "UTC")
    try:
        assert spark.sql(query, args={"ts": float(when)}).first().n == 5
        moment = datetime.fromtimestamp(first / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S.%f")
        assert spark.sql(literal, args={"ts": moment}).first().n == 5
        positional = literal.replace(":ts", "?")
        assert spark.sql(positional, args=[moment]).first().n == 5
        with pytest.raises(AnalysisException, match="UNBOUND_SQL_PARAMETER") as unbound:
            spark.sql(literal, args={"other": moment}).collect()
        assert unbound.value.getCondition() == "UNBOUND_SQL_PARAMETER"
    finally:
        spark.conf.unset("spark.sql.session.timeZone")


def test_time_travel_synonyms(spark: Any, table: Table) -> None:
    """delta-spark's spellings of time travel, in queries (Spark's grammar) and RESTORE."""
    spark.sql(f"DELETE FROM {table.ref} WHERE id = 0")
    first = DeltaLog(table.path).snapshot(0).timestamp
    moment = datetime.fromtimestamp(first / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S.%f")
    spark.conf.set("spark.sql.session.timeZone", "UTC")
    try:
        for clause in (
            "VERSION AS OF '0'",
            "FOR SYSTEM_VERSION AS OF 0",
            f"FOR SYSTEM_TIME AS OF '{moment}'",
        ):
            query = f"SELECT count(*) AS n FROM {table.ref} {clause}"
            assert spark.sql(query).first().n == 5, clause
        spark.sql(f"RESTORE TABLE {table.ref} TO SYSTEM_VERSION AS OF '0'")
        assert _rows(spark, table.path) == [(i, 10 * i) for i in range(5)]
        with pytest.raises(DeltaParseException, match="a version number after VERSION AS OF"):
            spark.sql(f"RESTORE TABLE {table.ref} TO VERSION AS OF 'zero'")
    finally:
        spark.conf.unset("spark.sql.session.timeZone")


def test_insert_by_name_and_overwrite_by_name(spark: Any, table: Table) -> None:
    spark.sql(f"INSERT INTO {table.ref} BY NAME SELECT 50 AS v, 5 AS id")
    assert _rows(spark, table.path)[-1] == (5, 50)
    spark.sql(f"INSERT OVERWRITE {table.ref} BY NAME SELECT 7 AS v, 6 AS id")
    assert _rows(spark, table.path) == [(6, 7)]
    assert _version(table.path) == 2
