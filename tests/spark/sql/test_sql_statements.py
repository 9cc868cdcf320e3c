"""Delta's SQL statements through ``spark.sql`` (Spark's MERGE, UPDATE and DELETE as Spark
resolves them, Delta's own statements through ``delta_pyspark.sql``'s grammar): on
``delta.`path```, on names (where ``DeltaTable.forName`` looks) and on tables registered in
Spark's catalog; rows, ``_delta_log`` versions, ``DESCRIBE HISTORY``
operations, typed errors, and statements that stay Spark's."""

from __future__ import annotations

import itertools
import os
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from pyspark.errors import AnalysisException, ParseException, UnsupportedOperationException

from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.exceptions import (
    DeltaAnalysisException,
    DeltaParseException,
    DeltaTableNotFoundError,
    DeltaUnsupportedOperationException,
    InvariantViolationError,
    VersionNotFoundError,
)
from delta_pyspark.spark.catalog.session_catalog import table_location
from delta_pyspark.tables import DeltaTable
from spark_versions import BINDS_MARKERS_WHILE_PARSING, v1_dml_refusal

_names = itertools.count()


@dataclass
class Table:
    """A Delta table and how a statement names it."""

    ref: str  # delta.`path` or a name
    path: str


def _new_table(spark: Any, kind: str, tmp_path: Path, df: Any, partition: str | None = None):
    writer = df.write.format("delta")
    if partition:
        writer = writer.partitionBy(partition)
    if kind == "path":
        path = str(tmp_path / f"t{next(_names)}")
        writer.save(path)
        return Table(f"delta.`{path}`", path), None
    name = f"sql_t{next(_names)}"
    if kind == "name":  # where DeltaTable.forName looks; not registered in the catalog
        writer.saveAsTable(name)
        return Table(name, table_location(spark, name)), name
    path = str(tmp_path / name)  # an external table registered in Spark's catalog
    writer.save(path)
    spark.catalog.createTable(name, path=path, source="delta")
    return Table(name, path), name


@pytest.fixture(params=["path", "name", "catalog"])
def table(request: Any, spark: Any, tmp_path: Path) -> Iterator[Table]:
    """ids 0..4, v = id * 10, at version 0."""
    df = spark.range(5).selectExpr("id", "id * 10 AS v").coalesce(1)
    t, name = _new_table(spark, request.param, tmp_path, df)
    yield t
    _drop(spark, name, t.path)


def _drop(spark: Any, name: str | None, path: str) -> None:
    if name is not None:
        spark.sql(f"DROP TABLE IF EXISTS {name}")
        if path.startswith(str(table_location(spark, name))):
            shutil.rmtree(path, ignore_errors=True)


def _rows(spark: Any, path: str, version: int | None = None) -> list[tuple]:
    reader = spark.read.format("delta")
    if version is not None:
        reader = reader.option("versionAsOf", version)
    return sorted(tuple(r) for r in reader.load(path).collect())


def _version(path: str) -> int:
    return DeltaLog(path).snapshot().version


def _operations(spark: Any, ref: str) -> list[str]:
    rows = spark.sql(f"DESCRIBE HISTORY {ref}").collect()
    return [r.operation for r in sorted(rows, key=lambda r: r.version)]


# ---------------------------------------------------------------------- DML


def test_update(spark: Any, table: Table) -> None:
    result = spark.sql(f"UPDATE {table.ref} SET v = v + 1, id = id WHERE id < 2")
    assert result.columns == ["num_affected_rows"]
    assert result.collect()[0].num_affected_rows == 2
    assert _rows(spark, table.path) == [(0, 1), (1, 11), (2, 20), (3, 30), (4, 40)]
    assert _version(table.path) == 1
    assert _operations(spark, table.ref)[-1] == "UPDATE"


def test_update_without_where_sets_every_row(spark: Any, table: Table) -> None:
    assert spark.sql(f"update {table.ref} set v = -1").collect()[0][0] == 5
    assert {v for _, v in _rows(spark, table.path)} == {-1}


def test_delete(spark: Any, table: Table) -> None:
    result = spark.sql(f"DELETE FROM {table.ref} WHERE id IN (1, 3)")
    assert [tuple(r) for r in result.collect()] == [(2,)]
    assert result.count() == 1  # the statement ran once, when spark.sql returned
    assert _version(table.path) == 1
    assert _rows(spark, table.path) == [(0, 0), (2, 20), (4, 40)]
    operations = _operations(spark, table.ref)
    assert len(operations) == 2 and operations[-1] == "DELETE"


def test_merge_with_every_clause(spark: Any, table: Table) -> None:
    source = "(SELECT * FROM VALUES (1, 100), (2, 200), (3, 300), (7, 700) AS src(id, v))"
    result = spark.sql(
        f"""
        MERGE INTO {table.ref} AS t
        USING {source} AS s
        ON t.id = s.id
        WHEN MATCHED AND s.id = 1 THEN DELETE
        WHEN MATCHED THEN UPDATE SET t.v = s.v + 1
        WHEN NOT MATCHED BY TARGET AND s.id > 5 THEN INSERT (id, v) VALUES (s.id, s.v)
        WHEN NOT MATCHED BY SOURCE AND t.id = 0 THEN UPDATE SET v = -1
        WHEN NOT MATCHED BY SOURCE THEN DELETE
        """
    )
    assert result.columns == [
        "num_affected_rows",
        "num_updated_rows",
        "num_deleted_rows",
        "num_inserted_rows",
    ]
    assert tuple(result.collect()[0]) == (6, 3, 2, 1)
    assert _rows(spark, table.path) == [(0, -1), (2, 201), (3, 301), (7, 700)]
    assert _version(table.path) == 1
    history = spark.sql(f"DESCRIBE HISTORY {table.ref} LIMIT 1").collect()[0]
    assert history.operation == "MERGE"
    assert history.operationMetrics["numTargetRowsInserted"] == "1"


def test_merge_expressions_with_case_when(spark: Any, table: Table) -> None:
    spark.sql(
        f"""MERGE INTO {table.ref} t
        USING (SELECT id, id * 100 AS v FROM range(6)) s
        ON t.id = CASE WHEN s.id = 5 THEN -1 ELSE s.id END
        WHEN MATCHED AND CASE WHEN s.id > 2 THEN true ELSE false END THEN
          UPDATE SET v = CASE WHEN s.id = 3 THEN 0 ELSE s.v END
        WHEN NOT MATCHED THEN INSERT (id, v) VALUES (s.id, CASE WHEN true THEN 1 END)"""
    )
    assert _rows(spark, table.path) == [(0, 0), (1, 10), (2, 20), (3, 0), (4, 400), (5, 1)]


def test_merge_star_from_a_table_named_by_its_name(
    spark: Any, table: Table, tmp_path: Path
) -> None:
    df = spark.createDataFrame([(1, 11), (9, 99)], "id long, v long")
    source, name = _new_table(spark, "name", tmp_path, df)
    # A name qualifies columns by itself (no alias); a path needs an alias.
    if "`" in table.ref:
        target, on = f"{table.ref} t", f"t.id = {source.ref}.id"
    else:
        target, on = table.ref, f"{table.ref}.id = {source.ref}.id"
    try:
        spark.sql(
            f"MERGE INTO {target} USING {source.ref} ON {on} "
            "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
        )
        assert _rows(spark, table.path) == [(0, 0), (1, 11), (2, 20), (3, 30), (4, 40), (9, 99)]
    finally:
        _drop(spark, name, source.path)


def test_merge_from_a_temp_view_with_schema_evolution(spark: Any, table: Table) -> None:
    spark.createDataFrame([(2, 22, "x")], "id long, v long, extra string").createOrReplaceTempView(
        "sql_merge_src"
    )
    try:
        spark.sql(
            f"MERGE WITH SCHEMA EVOLUTION INTO {table.ref} t USING sql_merge_src s "
            "ON t.id = s.id WHEN MATCHED THEN UPDATE SET *"
        )
    finally:
        spark.catalog.dropTempView("sql_merge_src")
    rows = _rows(spark, table.path)
    assert (2, 22, "x") in rows and (3, 30, None) in rows
    assert DeltaLog(table.path).snapshot().schema.field_names == ["id", "v", "extra"]


def test_merge_into_a_table_of_another_format_is_spark_s(spark: Any, tmp_path: Path) -> None:
    """As with delta-spark: Spark plans MERGE for its V2 tables only, and says so."""
    spark.range(3).write.format("parquet").saveAsTable("sql_parquet_target")
    try:
        with pytest.raises(UnsupportedOperationException, match=v1_dml_refusal("MERGE INTO TABLE")):
            spark.sql(
                "MERGE INTO sql_parquet_target t USING (SELECT 1 AS id) s ON t.id = s.id "
                "WHEN MATCHED THEN DELETE"
            )
        assert spark.table("sql_parquet_target").count() == 3
    finally:
        spark.sql("DROP TABLE sql_parquet_target")


def test_unknown_tables_raise_table_not_found(spark: Any, tmp_path: Path) -> None:
    with pytest.raises(AnalysisException, match=r"TABLE_OR_VIEW_NOT_FOUND.*`sql_no_such_table`"):
        spark.sql("UPDATE sql_no_such_table SET v = 1")
    missing = tmp_path / "missing"
    with pytest.raises(DeltaTableNotFoundError, match=f"DESCRIBE HISTORY: table delta.`{missing}`"):
        spark.sql(f"DESCRIBE HISTORY delta.`{missing}`")
    with pytest.raises(AnalysisException, match=r"TABLE_OR_VIEW_NOT_FOUND.*`sql_no_such_source`"):
        path = str(tmp_path / "t")
        spark.range(2).write.format("delta").save(path)
        spark.sql(
            f"MERGE INTO delta.`{path}` t USING sql_no_such_source s ON t.id = s.id "
            "WHEN MATCHED THEN DELETE"
        )
    assert _version(path) == 0


def test_unknown_columns_fail_and_change_nothing(spark: Any, table: Table) -> None:
    with pytest.raises(AnalysisException, match=r"UNRESOLVED_COLUMN.*`nosuch` cannot be resolved"):
        spark.sql(f"UPDATE {table.ref} SET nosuch = 1")
    with pytest.raises(AnalysisException, match="UNRESOLVED_COLUMN"):
        spark.sql(f"UPDATE {table.ref} SET v = nosuch + 1")
    with pytest.raises(AnalysisException, match="UNRESOLVED_COLUMN"):
        spark.sql(f"DELETE FROM {table.ref} WHERE nosuch = 1")
    assert _version(table.path) == 0
    assert _rows(spark, table.path) == [(i, 10 * i) for i in range(5)]


@pytest.mark.parametrize(
    ("statement", "near", "expected"),
    [
        ("VACUUM {t} RETAIN HOURS", "'HOURS'", "a number of hours after RETAIN"),
        ("VACUUM {t} QUICK", "'QUICK'", "LITE, FULL, USING INVENTORY, RETAIN <n> HOURS or DRY RUN"),
        ("DESCRIBE HISTORY {t} LIMIT x", "'x'", "a row count after LIMIT"),
        ("RESTORE TABLE {t} TO VERSION 1", "'VERSION'",
         "VERSION AS OF <version> or TIMESTAMP AS OF '<timestamp>'"),
        ("OPTIMIZE {t} ZORDER BY (id) extra", "'extra'", "the end of the statement"),
        ("OPTIMIZE {t}\n  ZORDER BY", "end of input", "the ZORDER BY columns"),
    ],
)  # fmt: skip
def test_malformed_statements_are_spark_s_syntax_errors_at_their_place(
    spark: Any, tmp_path: Path, statement: str, near: str, expected: str
) -> None:
    path = str(tmp_path / "t")
    spark.range(2).write.format("delta").save(path)
    sql = statement.format(t=f"delta.`{path}`")
    with pytest.raises(DeltaParseException) as caught:
        spark.sql(sql)
    error = caught.value
    assert isinstance(error, ParseException)
    assert error.getCondition() == "PARSE_SYNTAX_ERROR"
    assert f"Syntax error at or near {near}: expected {expected}." in str(error)
    lines = sql.split("\n")
    if near == "end of input":
        line, column = len(lines) - 1, len(lines[-1])
    else:
        line = next(i for i, text in enumerate(lines) if near.strip("'") in text)
        column = lines[line].rindex(near.strip("'"))
    assert f"(line {line + 1}, pos {column})" in str(error)
    assert ("-" * column + "^^^") in str(error)
    assert _version(path) == 0


def test_update_and_delete_with_an_alias(spark: Any, table: Table) -> None:
    # the string 'x.id' is not a column reference: it keeps its qualifier
    spark.sql(f"UPDATE {table.ref} AS x SET x.v = x.v + 1 WHERE x.id = 1 AND 'x.id' <> 'id'")
    spark.sql(f"DELETE FROM {table.ref} x WHERE x.id = 2")
    assert _rows(spark, table.path) == [(0, 0), (1, 11), (3, 30), (4, 40)]


@pytest.mark.parametrize("table", ["name", "catalog"], indirect=True)
def test_update_and_delete_qualified_by_the_table_name(spark: Any, table: Table) -> None:
    spark.sql(f"UPDATE {table.ref} SET {table.ref}.v = 7 WHERE {table.ref}.id = 0")
    spark.sql(f"DELETE FROM {table.ref} WHERE {table.ref}.id = 4")
    assert _rows(spark, table.path) == [(0, 7), (1, 10), (2, 20), (3, 30)]


# ---------------------------------------------------------------------- utilities


def test_describe_history_and_detail(spark: Any, table: Table) -> None:
    spark.sql(f"DELETE FROM {table.ref} WHERE id = 0")
    history = spark.sql(f"DESCRIBE HISTORY {table.ref}")
    assert history.columns == DeltaTable.forPath(spark, table.path).history().columns
    assert [r.version for r in history.collect()] == [1, 0]
    limited = spark.sql(f"DESC HISTORY {table.ref} LIMIT 1").collect()
    assert [(r.version, r.operation) for r in limited] == [(1, "DELETE")]
    detail = spark.sql(f"DESCRIBE DETAIL {table.ref}").collect()[0]
    assert detail.format == "delta"
    assert detail.location == DeltaLog(table.path).table_root
    assert detail.numFiles == DeltaLog(table.path).snapshot().num_files


def test_optimize_with_where_and_zorder(spark: Any, tmp_path: Path) -> None:
    df = spark.range(40).selectExpr("id", "CAST(id % 2 AS INT) AS p").repartition(4)
    t, _ = _new_table(spark, "path", tmp_path, df, partition="p")
    before = DeltaLog(t.path).snapshot()
    result = spark.sql(f"OPTIMIZE {t.ref} WHERE p = 0").collect()[0]
    assert result.path == before.table_root
    assert result.metrics.numFilesAdded == 1
    after = DeltaLog(t.path).snapshot()
    by_part = after.files.column("partitionValues").to_pylist()
    assert sorted(dict(v)["p"] for v in by_part).count("0") == 1
    assert sorted(dict(v)["p"] for v in by_part).count("1") > 1
    assert _rows(spark, t.path) == _rows(spark, t.path, 0)
    spark.sql(f"OPTIMIZE {t.ref} ZORDER BY (id)")
    history = spark.sql(f"DESCRIBE HISTORY {t.ref}").collect()
    assert [r.operation for r in history[:2]] == ["OPTIMIZE", "OPTIMIZE"]
    assert history[0].operationParameters["zOrderBy"] == '["id"]'
    assert history[1].operationParameters["predicate"] == '["(\'p = 0)"]'  # Spark's printing


def test_vacuum_dry_run_then_vacuum(spark: Any, table: Table, conf: Any) -> None:
    conf("spark.databricks.delta.retentionDurationCheck.enabled", "false")
    old_files = {
        os.path.join(DeltaLog(table.path).table_root, p)
        for p in DeltaLog(table.path).snapshot().files.column("path").to_pylist()
    }
    spark.sql(f"DELETE FROM {table.ref}")
    dry = spark.sql(f"VACUUM {table.ref} RETAIN 0 HOURS DRY RUN")
    assert dry.columns == ["path"]
    assert {r.path for r in dry.collect()} == old_files
    assert all(os.path.exists(f) for f in old_files)
    result = spark.sql(f"VACUUM {table.ref} RETAIN 0 HOURS").collect()
    assert [r.path for r in result] == [DeltaLog(table.path).table_root]
    assert not any(os.path.exists(f) for f in old_files)
    assert _operations(spark, table.ref)[-2:] == ["VACUUM START", "VACUUM END"]


def test_vacuum_lite_and_full(spark: Any, table: Table, conf: Any) -> None:
    conf("spark.databricks.delta.retentionDurationCheck.enabled", "false")
    root = DeltaLog(table.path).table_root
    old_files = {
        os.path.join(root, p)
        for p in DeltaLog(table.path).snapshot().files.column("path").to_pylist()
    }
    orphan = os.path.join(root, "failed-write.parquet")
    with open(orphan, "wb") as f:
        f.write(b"no commit names me")
    os.utime(orphan, (0, 0))
    spark.sql(f"DELETE FROM {table.ref}")
    lite = spark.sql(f"VACUUM {table.ref} LITE RETAIN 0 HOURS DRY RUN").collect()
    assert {r.path for r in lite} == old_files  # what the log removed, not the orphan
    spark.sql(f"VACUUM {table.ref} RETAIN 0 HOURS LITE").collect()  # modifiers in any order
    assert not any(os.path.exists(f) for f in old_files) and os.path.exists(orphan)
    spark.sql(f"VACUUM {table.ref} FULL RETAIN 0 HOURS").collect()
    assert not os.path.exists(orphan)


def _inventory(spark: Any, root: str, leave_out: set[str]) -> Any:
    """The files and directories under ``root`` as a bucket inventory lists them."""
    rows = []
    for directory, dirs, files in os.walk(root):
        for name in dirs + files:
            path = os.path.join(directory, name)
            if path in leave_out:
                continue
            stat = os.stat(path)
            is_dir = os.path.isdir(path)
            rows.append((f"file:{path}", 0 if is_dir else stat.st_size, is_dir, 0))
    rows.append(("file:/elsewhere/part-0.parquet", 1, False, 0))  # another table's
    schema = "path string, length bigint, isDir boolean, modificationTime bigint, extra int"
    return spark.createDataFrame([(*r, 1) for r in rows], schema)


def test_vacuum_using_an_inventory_instead_of_a_listing(
    spark: Any, table: Table, conf: Any
) -> None:
    conf("spark.databricks.delta.retentionDurationCheck.enabled", "false")
    root = DeltaLog(table.path).table_root
    listed, unlisted = (os.path.join(root, f"orphan-{n}.parquet") for n in ("a", "b"))
    for orphan in (listed, unlisted):
        with open(orphan, "wb") as f:
            f.write(b"no commit names me")
    nested = os.path.join(root, "nested")  # another Delta table inside this one's directory
    spark.range(1).write.format("delta").save(nested)
    nested_files = [str(p) for p in Path(nested).glob("*.parquet")]
    _inventory(spark, root, {unlisted}).createOrReplaceTempView("sql_inventory")
    try:
        dry = spark.sql(
            f"VACUUM {table.ref} USING INVENTORY sql_inventory RETAIN 0 HOURS DRY RUN"
        ).collect()
        assert [r.path for r in dry] == [listed]
        spark.sql(
            f"VACUUM {table.ref} USING INVENTORY (SELECT * FROM sql_inventory WHERE extra = :e) "
            "RETAIN 0 HOURS",
            args={"e": 1},
        ).collect()
        assert not os.path.exists(listed) and os.path.exists(unlisted)
        assert nested_files and all(os.path.exists(f) for f in nested_files)
        assert _rows(spark, table.path) == [(i, 10 * i) for i in range(5)]
        assert _operations(spark, table.ref)[-2:] == ["VACUUM START", "VACUUM END"]
    finally:
        spark.catalog.dropTempView("sql_inventory")


def test_vacuum_with_a_stale_or_malformed_inventory(spark: Any, table: Table, conf: Any) -> None:
    conf("spark.databricks.delta.retentionDurationCheck.enabled", "false")
    root = DeltaLog(table.path).table_root
    paths = DeltaLog(table.path).snapshot().files.column("path").to_pylist()
    live = {os.path.join(root, p) for p in paths}
    orphan = os.path.join(root, "orphan.parquet")
    Path(orphan).write_bytes(b"no commit names me")
    stale = _inventory(spark, root, live)
    stale.createOrReplaceTempView("sql_stale_inventory")
    conf("spark.databricks.delta.vacuum.lite.enabled", "true")  # an inventory means FULL
    try:
        # an inventory without the live files: it is used (the orphan goes), and a live file
        # missing from it is found in storage, so the state is trusted
        spark.sql(f"VACUUM {table.ref} USING INVENTORY sql_stale_inventory RETAIN 0 HOURS")
        assert not os.path.exists(orphan)
        assert all(os.path.exists(p) for p in live)
        assert _rows(spark, table.path) == [(i, 10 * i) for i in range(5)]
        with pytest.raises(AnalysisException) as caught:
            spark.sql(
                f"VACUUM {table.ref} USING INVENTORY (SELECT path, length FROM sql_stale_inventory)"
            )
        assert caught.value.getCondition() == "DELTA_INVALID_INVENTORY_SCHEMA"
        with pytest.raises(DeltaAnalysisException, match=r"LITE .* takes no inventory"):
            spark.sql(f"VACUUM {table.ref} LITE USING INVENTORY sql_stale_inventory")
    finally:
        spark.catalog.dropTempView("sql_stale_inventory")
    assert all(os.path.exists(p) for p in live)
    assert _version(table.path) == 2  # the VACUUM START and END of the stale inventory's run


def test_restore_to_version_and_timestamp(spark: Any, table: Table) -> None:
    spark.sql(f"DELETE FROM {table.ref} WHERE id > 0")
    result = spark.sql(f"RESTORE TABLE {table.ref} TO VERSION AS OF 0")
    assert result.columns[:2] == ["table_size_after_restore", "num_of_files_after_restore"]
    assert _rows(spark, table.path) == [(i, 10 * i) for i in range(5)]
    assert _operations(spark, table.ref)[-1] == "RESTORE"
    ts = datetime.fromtimestamp(DeltaLog(table.path).snapshot(1).timestamp / 1000, UTC)
    spark.sql(f"RESTORE {table.ref} TO TIMESTAMP AS OF '{ts:%Y-%m-%d %H:%M:%S.%f}'")
    assert _rows(spark, table.path) == [(0, 0)]
    assert _version(table.path) == 3


def test_convert_to_delta(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "pq")
    spark.range(6).selectExpr("id", "CAST(id % 2 AS INT) AS part").write.partitionBy(
        "part"
    ).parquet(path)
    assert spark.sql(f"CONVERT TO DELTA parquet.`{path}` PARTITIONED BY (part INT)").collect() == []
    snapshot = DeltaLog(path).snapshot()
    assert snapshot.partition_columns == ["part"]
    assert sorted(
        tuple(r) for r in spark.sql(f"SELECT id, part FROM delta.`{path}`").collect()
    ) == [(i, i % 2) for i in range(6)]
    assert _operations(spark, f"delta.`{path}`") == ["CONVERT"]


def test_convert_with_no_statistics_writes_adds_without_stats(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "pq")
    spark.range(4).write.parquet(path)
    spark.sql(f"CONVERT TO DELTA parquet.`{path}` NO STATISTICS")
    snapshot = DeltaLog(path).snapshot()
    adds = snapshot.files.to_pylist()
    assert adds and all(add.get("stats") is None for add in adds)
    history = spark.sql(f"DESCRIBE HISTORY delta.`{path}`").collect()
    assert history[0].operationParameters["collectStats"] == "false"
    assert sorted(r.id for r in spark.read.format("delta").load(path).collect()) == [0, 1, 2, 3]


def test_convert_a_catalog_parquet_table_by_name(spark: Any) -> None:
    spark.range(6).selectExpr("id", "CAST(id % 2 AS INT) AS part").write.partitionBy("part").format(
        "parquet"
    ).saveAsTable("sql_convert_me")
    try:
        spark.sql("CONVERT TO DELTA sql_convert_me NO STATISTICS")
        location = table_location(spark, "sql_convert_me")
        assert DeltaLog(location).snapshot().partition_columns == ["part"]
        detail = spark.sql("DESCRIBE DETAIL sql_convert_me").collect()[0]
        assert detail.format == "delta"
        spark.sql("DELETE FROM sql_convert_me WHERE id = 0")  # Spark's DML: a Delta table now
        assert sorted(tuple(r) for r in spark.table("sql_convert_me").collect()) == [
            (i, i % 2) for i in range(1, 6)
        ]
        assert spark.sql("CONVERT TO DELTA sql_convert_me").collect() == []  # a no-op now
        assert _operations(spark, "sql_convert_me") == ["CONVERT", "DELETE"]
    finally:
        spark.sql("DROP TABLE IF EXISTS sql_convert_me")


def test_convert_refuses_tables_it_cannot_convert(spark: Any) -> None:
    with pytest.raises(DeltaTableNotFoundError, match="sql_no_such_parquet"):
        spark.sql("CONVERT TO DELTA sql_no_such_parquet")
    spark.range(2).write.format("json").saveAsTable("sql_json_table")
    try:
        with pytest.raises(DeltaAnalysisException, match="sql_json_table is a json table"):
            spark.sql("CONVERT TO DELTA sql_json_table")
    finally:
        spark.sql("DROP TABLE sql_json_table")


def test_a_string_names_a_path(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    spark.range(3).write.format("delta").save(path)
    history = spark.sql(f"DESCRIBE HISTORY '{path}'").collect()
    assert [r.operation for r in history] == ["WRITE"]
    assert spark.sql(f"VACUUM '{path}' DRY RUN").collect() == []


def test_clone(spark: Any, table: Table, tmp_path: Path) -> None:
    spark.sql(f"DELETE FROM {table.ref} WHERE id = 4")
    shallow = str(tmp_path / "shallow")
    result = spark.sql(f"CREATE TABLE delta.`{shallow}` SHALLOW CLONE {table.ref} VERSION AS OF 0")
    assert result.columns[:2] == ["source_table_size", "source_num_of_files"]
    assert result.collect()[0].num_copied_files == 0
    assert _rows(spark, shallow) == [(i, 10 * i) for i in range(5)]
    assert _operations(spark, f"delta.`{shallow}`") == ["CLONE"]
    again = spark.sql(f"CREATE TABLE IF NOT EXISTS delta.`{shallow}` CLONE {table.ref}")
    assert again.collect()[0].source_num_of_files == 0
    assert _version(shallow) == 0
    spark.sql(f"CREATE OR REPLACE TABLE delta.`{shallow}` SHALLOW CLONE {table.ref}")
    assert _version(shallow) == 1
    assert _rows(spark, shallow) == [(i, 10 * i) for i in range(4)]
    name = f"sql_clone{next(_names)}"
    try:
        spark.sql(f"CREATE TABLE {name} DEEP CLONE {table.ref}")
        assert _rows(spark, table_location(spark, name)) == [(i, 10 * i) for i in range(4)]
        assert spark.sql(f"SELECT count(*) FROM {name} VERSION AS OF 0").collect()[0][0] == 4
    finally:
        shutil.rmtree(table_location(spark, name), ignore_errors=True)


def test_shallow_clone_of_a_parquet_directory(spark: Any, tmp_path: Path) -> None:
    source = str(tmp_path / "pq")
    spark.range(6).selectExpr("id", "id * 10 AS v").repartition(2).write.parquet(source)
    parquet_files = sorted(str(p) for p in Path(source).glob("*.parquet"))
    clone = str(tmp_path / "clone")
    result = spark.sql(f"CREATE TABLE delta.`{clone}` SHALLOW CLONE parquet.`{source}`").first()
    assert (result.source_num_of_files, result.num_copied_files) == (2, 0)
    assert _rows(spark, clone) == [(i, 10 * i) for i in range(6)]
    snapshot = DeltaLog(clone).snapshot()
    assert sorted(snapshot.files.column("path").to_pylist()) == [
        f"file://{f}" for f in parquet_files
    ]
    assert all(stats for stats in snapshot.files.column("stats").to_pylist())
    assert not list(Path(clone).glob("*.parquet"))  # no data copied
    history = DeltaLog(clone).history()
    assert history[0]["operation"] == "CLONE"
    assert history[0]["operationParameters"]["source"] == f"parquet.`{source}`"
    # replacing the clone by a clone of the same files keeps them, adds none
    spark.sql(f"CREATE OR REPLACE TABLE delta.`{clone}` SHALLOW CLONE parquet.`{source}`")
    assert _version(clone) == 1
    assert _rows(spark, clone) == [(i, 10 * i) for i in range(6)]
    with pytest.raises(DeltaUnsupportedOperationException, match="DEEP CLONE of parquet"):
        spark.sql(f"CREATE TABLE delta.`{tmp_path / 'deep'}` DEEP CLONE parquet.`{source}`")
    with pytest.raises(DeltaAnalysisException, match="a Parquet source has no versions"):
        spark.sql(
            f"CREATE TABLE delta.`{tmp_path / 'v'}` SHALLOW CLONE parquet.`{source}` "
            "VERSION AS OF 0"
        )
    assert not (tmp_path / "deep").exists() and not (tmp_path / "v").exists()
    delta = str(tmp_path / "delta")
    spark.range(3).write.format("delta").save(delta)
    with pytest.raises(DeltaAnalysisException, match="holds a Delta table: clone it as delta"):
        spark.sql(f"CREATE TABLE delta.`{tmp_path / 'p'}` SHALLOW CLONE parquet.`{delta}`")
    assert not (tmp_path / "p").exists()


def test_shallow_clone_of_a_partitioned_parquet_table_by_name(spark: Any) -> None:
    df = spark.range(6).selectExpr("id", "id % 2 AS part")
    df.write.format("parquet").partitionBy("part").saveAsTable("sql_pq_source")
    try:
        spark.sql("CREATE TABLE sql_pq_clone SHALLOW CLONE sql_pq_source")
        clone = table_location(spark, "sql_pq_clone")
        assert DeltaLog(clone).snapshot().partition_columns == ["part"]
        assert sorted(tuple(r) for r in spark.table("sql_pq_clone").collect()) == sorted(
            (i, i % 2) for i in range(6)
        )
        spark.sql("INSERT INTO sql_pq_clone VALUES (9, 1)")  # the clone is its own table
        assert spark.table("sql_pq_source").count() == 6
        spark.sql("CREATE TEMP VIEW sql_pq_view AS SELECT * FROM sql_pq_source")
        with pytest.raises(DeltaAnalysisException) as refused:
            spark.sql("CREATE TABLE sql_view_clone SHALLOW CLONE sql_pq_view")
        assert refused.value.getCondition() == "DELTA_TABLE_ONLY_OPERATION"
        assert "sql_pq_view is not a Delta table: it is a temporary view" in str(refused.value)
        with pytest.raises(DeltaTableNotFoundError, match="CLONE: table sql_no_such not found"):
            spark.sql("CREATE TABLE sql_view_clone SHALLOW CLONE sql_no_such")
    finally:
        spark.catalog.dropTempView("sql_pq_view")
        spark.sql("DROP TABLE IF EXISTS sql_pq_clone")
        spark.sql("DROP TABLE sql_pq_source")


def test_generate_manifest(spark: Any, table: Table) -> None:
    spark.sql(f"GENERATE symlink_format_manifest FOR TABLE {table.ref}")
    manifest = Path(table.path) / "_symlink_format_manifest" / "manifest"
    files = DeltaLog(table.path).snapshot().files.column("path").to_pylist()
    assert len(manifest.read_text().splitlines()) == len(files)


def test_reorg_purge(spark: Any, table: Table) -> None:
    spark.sql(f"ALTER TABLE {table.ref} SET TBLPROPERTIES ('delta.enableDeletionVectors' = true)")
    spark.sql(f"DELETE FROM {table.ref} WHERE id = 1")
    has_dv = DeltaLog(table.path).snapshot().files.column("deletionVector").to_pylist()
    assert any(dv is not None for dv in has_dv)
    result = spark.sql(f"REORG TABLE {table.ref} APPLY (PURGE)").collect()[0]
    assert result.metrics.numFilesRemoved == 1
    files = DeltaLog(table.path).snapshot().files.column("deletionVector").to_pylist()
    assert files and all(dv is None for dv in files)
    assert _rows(spark, table.path) == [(0, 0), (2, 20), (3, 30), (4, 40)]
    assert _operations(spark, table.ref)[-1] == "REORG"


# ---------------------------------------------------------------------- ALTER, SHOW


def test_set_unset_and_show_properties(spark: Any, table: Table) -> None:
    spark.sql(f"ALTER TABLE {table.ref} SET TBLPROPERTIES ('owner.team' = 'data', 'x' = '1')")
    assert DeltaLog(table.path).snapshot().configuration["owner.team"] == "data"
    shown = dict(tuple(r) for r in spark.sql(f"SHOW TBLPROPERTIES {table.ref}").collect())
    assert shown["owner.team"] == "data" and shown["delta.minReaderVersion"] == "1"
    one = spark.sql(f"SHOW TBLPROPERTIES {table.ref} ('x')").collect()
    assert [tuple(r) for r in one] == [("x", "1")]
    spark.sql(f"ALTER TABLE {table.ref} UNSET TBLPROPERTIES IF EXISTS ('x', 'nope')")
    assert "x" not in DeltaLog(table.path).snapshot().configuration
    with pytest.raises(DeltaAnalysisException, match="cannot unset nope"):
        spark.sql(f"ALTER TABLE {table.ref} UNSET TBLPROPERTIES ('nope')")
    assert _operations(spark, table.ref)[1:] == ["SET TBLPROPERTIES", "UNSET TBLPROPERTIES"]


def test_constraints(spark: Any, table: Table) -> None:
    with pytest.raises(DeltaAnalysisException, match="violate the new CHECK constraint") as e:
        spark.sql(f"ALTER TABLE {table.ref} ADD CONSTRAINT small CHECK (v < 10)")
    assert e.value.getCondition() == "DELTA_NEW_CHECK_CONSTRAINT_VIOLATION"
    assert _version(table.path) == 0
    spark.sql(f"ALTER TABLE {table.ref} ADD CONSTRAINT positive CHECK (v >= 0)")
    assert DeltaLog(table.path).snapshot().configuration["delta.constraints.positive"] == "v >= 0"
    with pytest.raises(InvariantViolationError):
        spark.sql(f"UPDATE {table.ref} SET v = -1 WHERE id = 2")
    spark.sql(f"ALTER TABLE {table.ref} DROP CONSTRAINT positive")
    spark.sql(f"ALTER TABLE {table.ref} DROP CONSTRAINT IF EXISTS positive")
    assert "delta.constraints.positive" not in DeltaLog(table.path).snapshot().configuration
    assert _operations(spark, table.ref)[1:] == ["ADD CONSTRAINT", "DROP CONSTRAINT"]


def test_add_columns(spark: Any, table: Table) -> None:
    spark.sql(f"ALTER TABLE {table.ref} ADD COLUMNS (note STRING COMMENT 'free text', n INT)")
    schema = DeltaLog(table.path).snapshot().schema
    assert schema.field_names == ["id", "v", "note", "n"]
    assert schema.field("note").metadata.get("comment") == "free text"
    assert _rows(spark, table.path)[0] == (0, 0, None, None)
    spark.sql(f"UPDATE {table.ref} SET note = 'x' WHERE id = 0")
    assert _rows(spark, table.path)[0] == (0, 0, "x", None)
    with pytest.raises(DeltaAnalysisException, match="cannot add column 'N': it already exists"):
        spark.sql(f"ALTER TABLE {table.ref} ADD COLUMN N BIGINT")
    with pytest.raises(DeltaAnalysisException, match="as NOT NULL"):
        spark.sql(f"ALTER TABLE {table.ref} ADD COLUMNS (m INT NOT NULL)")
    with pytest.raises(DeltaUnsupportedOperationException, match="FIRST/AFTER is not supported"):
        spark.sql(f"ALTER TABLE {table.ref} ADD COLUMNS (first INT AFTER id)")
    assert _operations(spark, table.ref)[1:] == ["ADD COLUMNS", "UPDATE"]


@pytest.mark.parametrize(
    "clause",
    ["REPLACE COLUMNS (x INT)", "RENAME TO other", "SET LOCATION '/tmp/elsewhere'"],
)
def test_unsupported_alter_clauses_are_refused_by_name(
    spark: Any, table: Table, clause: str
) -> None:
    if table.ref != f"delta.`{table.path}`" and "REPLACE" not in clause:
        return  # on a name, Spark's own command (test_rename_and_set_location_by_name)
    words = " ".join(clause.split()[:2])
    with pytest.raises(DeltaUnsupportedOperationException, match=f"ALTER TABLE ... {words} is"):
        spark.sql(f"ALTER TABLE {table.ref} {clause}")
    assert _version(table.path) == 0


def test_rename_and_set_location_by_name(spark: Any, tmp_path: Path) -> None:
    """Spark's own commands, as with delta-spark: a managed table's directory (log and
    history included) moves with its name; SET LOCATION points the entry at another table."""
    spark.range(3).write.format("delta").saveAsTable("sql_before")
    spark.sql("DELETE FROM sql_before WHERE id = 0")
    try:
        spark.sql("ALTER TABLE sql_before RENAME TO sql_after")
        assert not spark.catalog.tableExists("sql_before")
        assert sorted(r.id for r in spark.table("sql_after").collect()) == [1, 2]
        history = spark.sql("DESCRIBE HISTORY sql_after").collect()
        assert [r.operation for r in history] == ["DELETE", "CREATE TABLE AS SELECT"]
        other = str(tmp_path / "other")
        spark.range(7, 9).write.format("delta").save(other)
        spark.sql(f"ALTER TABLE sql_after SET LOCATION '{other}'")
        assert sorted(r.id for r in spark.table("sql_after").collect()) == [7, 8]
    finally:
        spark.sql("DROP TABLE IF EXISTS sql_after")
        spark.sql("DROP TABLE IF EXISTS sql_before")


# ---------------------------------------------------------------------- time travel


def test_time_travel_in_queries(spark: Any, table: Table) -> None:
    spark.sql(f"DELETE FROM {table.ref} WHERE id < 3")
    assert _rows(spark, table.path) == [(3, 30), (4, 40)]
    old = spark.sql(f"SELECT id FROM {table.ref} VERSION AS OF 0").collect()
    assert sorted(r.id for r in old) == [0, 1, 2, 3, 4]
    ts = datetime.fromtimestamp(DeltaLog(table.path).snapshot(0).timestamp / 1000, UTC)
    at_ts = spark.sql(
        f"SELECT count(*) FROM {table.ref} TIMESTAMP AS OF '{ts:%Y-%m-%d %H:%M:%S.%f}'"
    )
    assert at_ts.collect()[0][0] == 5
    joined = spark.sql(
        f"SELECT a.id FROM {table.ref} VERSION AS OF 0 a JOIN {table.ref} VERSION AS OF 1 b "
        "ON a.id = b.id"
    )
    assert sorted(r.id for r in joined.collect()) == [3, 4]
    with pytest.raises(VersionNotFoundError):
        spark.sql(f"SELECT * FROM {table.ref} VERSION AS OF 9").collect()


def test_time_travel_on_a_path_without_a_table(spark: Any, tmp_path: Path) -> None:
    with pytest.raises(DeltaTableNotFoundError, match="missing"):
        spark.sql(f"SELECT * FROM delta.`{tmp_path / 'missing'}` VERSION AS OF 0").collect()


@pytest.mark.parametrize("table", ["name", "catalog"], indirect=True)
def test_time_travel_qualifies_columns_by_the_table_name(spark: Any, table: Table) -> None:
    rows = spark.sql(f"SELECT {table.ref}.v FROM {table.ref} VERSION AS OF 0 WHERE id = 2")
    assert [r.v for r in rows.collect()] == [20]


@pytest.mark.parametrize("table", ["name", "catalog"], indirect=True)
def test_time_travel_by_reader_options_on_a_name(spark: Any, table: Table) -> None:
    """``spark.read.option("versionAsOf", v).table(name)``, as delta-spark reads it; the
    options reach the analyzer without SQL text (``DeltaTableReferences``)."""
    spark.sql(f"DELETE FROM {table.ref} WHERE id < 3")
    old = spark.read.option("versionAsOf", 0).table(table.ref)
    assert sorted(r.id for r in old.collect()) == [0, 1, 2, 3, 4]
    ts = datetime.fromtimestamp(DeltaLog(table.path).snapshot(0).timestamp / 1000, UTC)
    at_ts = spark.read.option("timestampAsOf", f"{ts:%Y-%m-%d %H:%M:%S.%f}").table(table.ref)
    assert at_ts.count() == 5
    assert spark.read.table(table.ref).count() == 2
    with pytest.raises(VersionNotFoundError):
        spark.read.option("versionAsOf", 9).table(table.ref).collect()


def test_time_travel_options_on_another_format_are_spark_s(spark: Any) -> None:
    spark.range(3).write.format("parquet").saveAsTable("sql_parquet_travel")
    try:
        with pytest.raises(AnalysisException, match=r"UNSUPPORTED_FEATURE\.TIME_TRAVEL"):
            spark.read.option("versionAsOf", 0).table("sql_parquet_travel").collect()
    finally:
        spark.sql("DROP TABLE sql_parquet_travel")


# ---------------------------------------------------------------------- Spark's statements


def test_other_statements_stay_sparks(spark: Any, tmp_path: Path) -> None:
    assert spark.sql("SELECT 1 AS one").collect()[0].one == 1
    # another catalog's table is Spark's to resolve, even in MERGE
    with pytest.raises(AnalysisException, match="sql_other_catalog") as caught:
        spark.sql(
            "MERGE INTO sql_other_catalog.db.t USING (SELECT 1 AS id) s ON t.id = s.id "
            "WHEN MATCHED THEN DELETE"
        )
    assert not isinstance(caught.value, DeltaAnalysisException)
    spark.sql("CREATE TEMP VIEW sql_clone_view AS SELECT 'CLONE' AS c")
    try:
        assert spark.sql("SELECT c FROM sql_clone_view").collect()[0].c == "CLONE"
        described = spark.sql("DESCRIBE sql_clone_view").collect()
        assert [r.col_name for r in described] == ["c"]
    finally:
        spark.catalog.dropTempView("sql_clone_view")
    spark.range(3).write.format("parquet").saveAsTable("sql_parquet_table")
    try:
        with pytest.raises(DeltaAnalysisException) as refused:
            spark.sql("DESCRIBE HISTORY sql_parquet_table")
        assert refused.value.getCondition() == "DELTA_TABLE_ONLY_OPERATION"
        assert (
            "sql_parquet_table is not a Delta table: it is a parquet table. DESCRIBE HISTORY is "
            "only supported for Delta tables."
        ) in str(refused.value)
        spark.sql("CREATE TEMP VIEW sql_view_of_parquet AS SELECT * FROM sql_parquet_table")
        with pytest.raises(DeltaAnalysisException, match=r"it is a temporary view\. VACUUM is"):
            spark.sql("VACUUM sql_view_of_parquet")
        spark.catalog.dropTempView("sql_view_of_parquet")
        with pytest.raises(Exception, match=v1_dml_refusal("UPDATE TABLE")) as err:
            spark.sql("UPDATE sql_parquet_table SET id = 1")
        assert not isinstance(err.value, DeltaAnalysisException)
        with pytest.raises(AnalysisException, match="does not support DELETE"):
            spark.sql("DELETE FROM sql_parquet_table WHERE id = 1")
        spark.sql("ALTER TABLE sql_parquet_table SET TBLPROPERTIES ('k' = 'v')")
        shown = spark.sql("SHOW TBLPROPERTIES sql_parquet_table ('k')").collect()
        assert [tuple(r) for r in shown] == [("k", "v")]
        assert spark.table("sql_parquet_table").count() == 3
    finally:
        spark.sql("DROP TABLE sql_parquet_table")


def test_statements_run_in_the_session_that_issued_them(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    spark.range(3).selectExpr("id", "id AS v").write.format("delta").save(path)
    other = spark.newSession()
    other.createDataFrame([(1, 100)], "id long, v long").createOrReplaceTempView("sql_only_there")
    other.sql(
        f"MERGE INTO delta.`{path}` t USING sql_only_there s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET v = s.v"
    )
    assert _rows(spark, path) == [(0, 0), (1, 100), (2, 2)]
    with pytest.raises(AnalysisException, match=r"TABLE_OR_VIEW_NOT_FOUND.*`sql_only_there`"):
        spark.sql(
            f"MERGE INTO delta.`{path}` t USING sql_only_there s ON t.id = s.id "
            "WHEN MATCHED THEN DELETE"
        )
    assert _version(path) == 1


def test_delta_statements_take_parameters_where_a_literal_goes(spark: Any, table: Table) -> None:
    spark.sql(f"INSERT INTO {table.ref} VALUES (5, 50)")
    limited = spark.sql(f"DESCRIBE HISTORY {table.ref} LIMIT :n", args={"n": 1}).collect()
    assert [r.version for r in limited] == [1]
    by_position = spark.sql(f"DESCRIBE HISTORY {table.ref} LIMIT ?", args=[2]).collect()
    assert [r.version for r in by_position] == [1, 0]
    spark.sql(f"ALTER TABLE {table.ref} SET TBLPROPERTIES ('k' = 'v', 'note' = ':x ?')")
    shown = spark.sql(f"SHOW TBLPROPERTIES {table.ref} ('note')").collect()
    assert [tuple(r) for r in shown] == [("note", ":x ?")]  # a quoted marker is text
    # SET TBLPROPERTIES is Spark's grammar, which takes literals there (as with delta-spark):
    # a marker is one only where Spark binds them while parsing
    marked = f"ALTER TABLE {table.ref} SET TBLPROPERTIES ('k' = :v)"
    if BINDS_MARKERS_WHILE_PARSING:
        spark.sql(marked, args={"v": "x"})
        assert DeltaLog.for_table(table.path).snapshot().configuration["k"] == "x"
    else:
        with pytest.raises(ParseException, match="PARSE_SYNTAX_ERROR"):
            spark.sql(marked, args={"v": "x"})
        assert DeltaLog.for_table(table.path).snapshot().configuration["k"] == "v"
    spark.sql(f"RESTORE TABLE {table.ref} TO VERSION AS OF :v", args={"v": 0})
    assert _rows(spark, table.path) == [(i, 10 * i) for i in range(5)]


def test_a_bound_timestamp_and_a_condition_with_parameters(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    df = spark.range(6).selectExpr("id", "id % 3 AS part")
    df.repartition(3).write.format("delta").partitionBy("part").save(path)
    df.repartition(3).write.format("delta").mode("append").save(path)
    first = DeltaLog.for_table(path).snapshot(0).timestamp
    optimized = spark.sql(
        f"OPTIMIZE delta.`{path}` WHERE part = ? OR part = ?", args=[1, 2]
    ).first()
    assert (optimized.metrics.numFilesRemoved, optimized.metrics.numFilesAdded) == (4, 2)
    when = datetime.fromtimestamp(first / 1000, UTC).replace(tzinfo=None)
    spark.conf.set("spark.sql.session.timeZone", "UTC")
    try:
        spark.sql(f"RESTORE TABLE delta.`{path}` TO TIMESTAMP AS OF :ts", args={"ts": when})
    finally:
        spark.conf.unset("spark.sql.session.timeZone")
    assert spark.read.format("delta").load(path).count() == 6


def test_bound_values_read_as_one_term_and_strings_as_spark_reads_them(
    spark: Any, tmp_path: Path
) -> None:
    path = str(tmp_path / "t")
    df = spark.range(6).selectExpr("id", "id % 3 AS part")
    df.repartition(3).write.format("delta").partitionBy("part").save(path)
    df.repartition(3).write.format("delta").mode("append").save(path)
    # ``1 -:v`` with v = -1 is 2, not ``1 --1`` (a comment after 1)
    spark.sql(f"OPTIMIZE delta.`{path}` WHERE part = 1 -:v", args={"v": -1})
    counts = DeltaLog(path).snapshot().files.column("partitionValues").to_pylist()
    per_part = sorted(dict(v)["part"] for v in counts)
    assert per_part == ["0", "0", "1", "1", "2"]
    clone = f"{path}_clone"  # Delta's own grammar reads strings as Spark's lexer does
    spark.sql(
        f"CREATE TABLE delta.`{clone}` SHALLOW CLONE delta.`{path}` "
        "TBLPROPERTIES ('raw' = r'a\\b', 'joined' = 'x' 'y')"
    )
    configuration = DeltaLog(clone).snapshot().configuration
    assert (configuration["raw"], configuration["joined"]) == ("a\\b", "xy")
    with pytest.raises(DeltaParseException, match=re.escape("Syntax error at or near '1e400'")):
        spark.sql(f"VACUUM delta.`{path}` RETAIN 1e400 HOURS")
    # a statement Spark's own grammar reads gets Spark's own syntax error
    for bad in (
        f"SHOW TBLPROPERTIES delta.`{path}` ()",
        f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ('a' = 'b',)",
    ):
        with pytest.raises(ParseException, match=re.escape("Syntax error at or near ')'")):
            spark.sql(bad)
    assert spark.sql("DESCRIBE (SELECT 1 AS one)").first().col_name == "one"  # Spark's


def test_a_table_named_like_a_keyword(spark: Any) -> None:
    spark.range(2).write.format("delta").saveAsTable("temp")
    try:
        assert [r.version for r in spark.sql("DESCRIBE HISTORY temp").collect()] == [0]
    finally:
        spark.sql("DROP TABLE temp")


def test_an_unbound_marker_is_sparks_error_and_changes_nothing(spark: Any, table: Table) -> None:
    with pytest.raises(AnalysisException, match=r"UNBOUND_SQL_PARAMETER.*: h\b") as caught:
        spark.sql(f"VACUUM {table.ref} RETAIN :h HOURS")
    assert caught.value.getCondition() == "UNBOUND_SQL_PARAMETER"
    with pytest.raises(DeltaParseException, match="expected a number of hours after RETAIN"):
        spark.sql(f"VACUUM {table.ref} RETAIN :h HOURS", args={"h": "soon"})
    assert _version(table.path) == 0


# ---------------------------------------------------------------------- the grammar alone


def _tokens(spark: Any, sql: str) -> str:
    from delta_pyspark.spark.jvm.helpers import helper_class

    return str(helper_class(spark, "deltapyspark.SqlTokens").encode(sql))


def test_parameter_markers_as_spark_s_lexer_reads_them(spark: Any) -> None:
    from delta_pyspark.sql.text import markers, tokens_of

    def found(sql: str) -> list[str]:
        return [m.name for m in markers(tokens_of(sql, _tokens(spark, sql)))]

    assert found("OPTIMIZE t WHERE id = :x") == ["x"]
    in_list = "OPTIMIZE t WHERE id IN (:a, ?)"
    assert found(in_list) == ["a", f"?{in_list.index('?')}"]
    assert found("OPTIMIZE t WHERE a AND :flag") == ["flag"]
    assert found("VACUUM t RETAIN :h HOURS") == ["h"]
    assert found("OPTIMIZE t WHERE v:a.b = 1 AND x::int = 2 AND `v`:c = 3") == []
    assert found("ALTER TABLE t ADD COLUMNS (s struct<comment:string, m:map<string,int>>)") == []
    assert found("CREATE TABLE delta.`/p` AS SELECT :x AS c, CASE :y WHEN 1 THEN 2 END") == [
        "x",
        "y",
    ]
    assert found("OPTIMIZE t WHERE note = ':x ?' -- :y ?\n") == []


def test_statements_that_are_not_deltas_parse_to_none(spark: Any) -> None:
    from delta_pyspark.sql import parse

    for sql in (
        "DESCRIBE history",
        "DESCRIBE TABLE t",
        "CREATE TABLE t (a INT) USING delta COMMENT 'no CLONE here'",
        "CREATE VIEW v AS SELECT 'CLONE'",
        "DELETE t",
        "SHOW TABLES",
    ):
        assert parse(sql, _tokens(spark, sql)) is None, sql
