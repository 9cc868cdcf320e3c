"""ALTER TABLE RENAME COLUMN, DROP COLUMN(S) and ALTER/CHANGE COLUMN through ``spark.sql``: the
rows read back afterwards (old files under new names, dropped values gone), the log each
statement leaves, what is refused with which error, and that the same statements on a table
of another format stay Spark's."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import deltalake
import pyarrow as pa
import pytest
from pyspark.errors import AnalysisException

from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.exceptions import DeltaAnalysisException, DeltaUnsupportedOperationException

pytestmark = pytest.mark.spark

_names = itertools.count()


def _table(spark: Any, tmp_path: Path, mapping: bool = True, **conf: str) -> str:
    """A partitioned table of two commits (so columns are read from more than one file)."""
    path = str(tmp_path / f"t{next(_names)}")
    rows = [(1, 10, (1, "a"), "x"), (2, 20, (2, "b"), "y")]
    ddl = "id long, v int, s struct<x:int,y:string>, p string"
    spark.createDataFrame(rows, ddl).write.format("delta").partitionBy("p").save(path)
    spark.createDataFrame([(3, 30, (3, "c"), "x")], ddl).write.format("delta").mode("append").save(
        path
    )
    props = dict(conf)
    if mapping:
        props["delta.columnMapping.mode"] = "name"
    if props:
        listed = ", ".join(f"'{k}' = '{v}'" for k, v in props.items())
        spark.sql(f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ({listed})")
    return path


def _rows(spark: Any, path: str, *columns: str) -> list[tuple[Any, ...]]:
    df = spark.read.format("delta").load(path)
    return sorted(tuple(r) for r in df.select(*columns).collect())


def _last_operation(path: str) -> tuple[str, dict[str, Any]]:
    log = DeltaLog(path)
    version = log.snapshot().version
    text = (Path(path) / "_delta_log" / f"{version:020d}.json").read_text()
    for line in text.splitlines():
        action = json.loads(line)
        if "commitInfo" in action:
            info = action["commitInfo"]
            return info["operation"], info["operationParameters"]
    raise AssertionError("no commitInfo")


def test_rename_column_reads_old_files_under_the_new_name(spark: Any, tmp_path: Path) -> None:
    path = _table(spark, tmp_path)
    files_before = sorted(p.name for p in Path(path).rglob("*.parquet"))
    spark.sql(f"ALTER TABLE delta.`{path}` RENAME COLUMN v TO amount")
    spark.sql(f"ALTER TABLE delta.`{path}` RENAME COLUMN s.y TO label")
    spark.sql(f"ALTER TABLE delta.`{path}` RENAME COLUMN p TO part")
    df = spark.read.format("delta").load(path)
    assert df.columns == ["id", "amount", "s", "part"]
    assert _rows(spark, path, "id", "amount", "s.label", "part") == [
        (1, 10, "a", "x"),
        (2, 20, "b", "y"),
        (3, 30, "c", "x"),
    ]
    assert _last_operation(path) == (
        "RENAME COLUMN",
        {"oldColumnPath": "p", "newColumnPath": "part"},
    )
    assert sorted(p.name for p in Path(path).rglob("*.parquet")) == files_before  # no rewrite
    # new data under the new names, and a filter on the renamed partition column
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (4, 40, named_struct('x', 4, 'label', 'd'), 'y')")
    got = spark.sql(f"SELECT id, amount FROM delta.`{path}` WHERE part = 'y' ORDER BY id")
    assert [tuple(r) for r in got.collect()] == [(2, 20), (4, 40)]
    # another implementation reads the same names and values (delta-rs's SQL engine: its
    # pyarrow dataset path does not apply column mapping)
    engine = deltalake.QueryBuilder().register("t", deltalake.DeltaTable(path))
    other = pa.table(engine.execute("SELECT id, amount, part FROM t ORDER BY id").read_all())
    assert other.to_pylist() == [
        {"id": i, "amount": 10 * i, "part": part}
        for i, part in ((1, "x"), (2, "y"), (3, "x"), (4, "y"))
    ]


def test_drop_columns_hides_values_and_a_readded_name_starts_empty(
    spark: Any, tmp_path: Path
) -> None:
    path = _table(spark, tmp_path)
    spark.sql(f"ALTER TABLE delta.`{path}` DROP COLUMNS (v, s.x)")
    df = spark.read.format("delta").load(path)
    assert df.columns == ["id", "s", "p"]
    assert _rows(spark, path, "id", "s.y") == [(1, "a"), (2, "b"), (3, "c")]
    operation, parameters = _last_operation(path)
    assert operation == "DROP COLUMNS"
    assert json.loads(parameters["columns"]) == ["v", "s.x"]
    # the dropped values stay in the files but a new column of the same name is a new column
    spark.sql(f"ALTER TABLE delta.`{path}` ADD COLUMNS (v int)")
    assert _rows(spark, path, "id", "v") == [(1, None), (2, None), (3, None)]
    spark.sql(f"ALTER TABLE delta.`{path}` DROP COLUMN IF EXISTS nothing_here")
    assert DeltaLog(path).snapshot().schema.field_names == ["id", "s", "p", "v"]


def test_rename_and_drop_need_column_mapping(spark: Any, tmp_path: Path) -> None:
    path = _table(spark, tmp_path, mapping=False)
    version = DeltaLog(path).snapshot().version
    with pytest.raises(AnalysisException, match=r"DELTA_UNSUPPORTED_RENAME_COLUMN") as caught:
        spark.sql(f"ALTER TABLE delta.`{path}` RENAME COLUMN v TO w")
    assert isinstance(caught.value, DeltaAnalysisException)
    assert "delta.columnMapping.mode" in str(caught.value)
    with pytest.raises(AnalysisException, match=r"DELTA_UNSUPPORTED_DROP_COLUMN"):
        spark.sql(f"ALTER TABLE delta.`{path}` DROP COLUMN v")
    with pytest.raises(AnalysisException, match=r"DELTA_UNSUPPORTED_DROP_PARTITION_COLUMN"):
        spark.sql(f"ALTER TABLE delta.`{_table(spark, tmp_path)}` DROP COLUMN p")
    assert DeltaLog(path).snapshot().version == version
    assert _rows(spark, path, "v") == [(10,), (20,), (30,)]


def test_alter_column_comment_position_and_not_null(spark: Any, tmp_path: Path) -> None:
    path = _table(spark, tmp_path, mapping=False)
    spark.sql(f"ALTER TABLE delta.`{path}` ALTER COLUMN v COMMENT 'the value'")
    spark.sql(f"ALTER TABLE delta.`{path}` ALTER COLUMN p FIRST")
    spark.sql(f"ALTER TABLE delta.`{path}` CHANGE COLUMN s.y AFTER y, id AFTER v")
    df = spark.read.format("delta").load(path)
    assert df.columns == ["p", "v", "id", "s"]
    assert df.schema["v"].metadata["comment"] == "the value"
    assert df.schema["s"].dataType.names == ["x", "y"]
    assert _rows(spark, path, "p", "v", "id") == [("x", 10, 1), ("x", 30, 3), ("y", 20, 2)]
    assert _last_operation(path)[0] == "CHANGE COLUMNS"
    # Hive-style CHANGE COLUMN: same name and type, a new comment
    spark.sql(f"ALTER TABLE delta.`{path}` CHANGE COLUMN id id BIGINT COMMENT 'key'")
    assert spark.read.format("delta").load(path).schema["id"].metadata["comment"] == "key"
    with pytest.raises(AnalysisException, match="RENAME COLUMN instead"):
        spark.sql(f"ALTER TABLE delta.`{path}` CHANGE COLUMN id key BIGINT")
    with pytest.raises(AnalysisException, match="DELTA_UNSUPPORTED_ALTER_TABLE_CHANGE_COL_OP"):
        spark.sql(f"ALTER TABLE delta.`{path}` ALTER COLUMN v SET NOT NULL")
    with pytest.raises(DeltaUnsupportedOperationException, match="allowColumnDefaults"):
        spark.sql(f"ALTER TABLE delta.`{path}` ALTER COLUMN v SET DEFAULT 1")


def test_drop_not_null_lets_nulls_in(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "nn")
    spark.sql(f"CREATE TABLE delta.`{path}` (id BIGINT NOT NULL, v INT) USING delta")
    with pytest.raises(Exception, match=r"(?i)null"):
        spark.sql(f"INSERT INTO delta.`{path}` VALUES (NULL, 1)")
    spark.sql(f"ALTER TABLE delta.`{path}` ALTER COLUMN id DROP NOT NULL")
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (NULL, 1)")
    assert _rows(spark, path, "v") == [(1,)]
    assert spark.read.format("delta").load(path).schema["id"].nullable


def test_type_widening_reads_old_files_as_the_wider_type(spark: Any, tmp_path: Path) -> None:
    path = _table(spark, tmp_path, mapping=False)
    with pytest.raises(AnalysisException, match=r"delta\.enableTypeWidening"):
        spark.sql(f"ALTER TABLE delta.`{path}` ALTER COLUMN v TYPE BIGINT")
    spark.sql(f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ('delta.enableTypeWidening' = 'true')")
    spark.sql(f"ALTER TABLE delta.`{path}` ALTER COLUMN v TYPE BIGINT")
    spark.sql(
        f"INSERT INTO delta.`{path}` VALUES (4, 5000000000, named_struct('x', 4, 'y', 'd'), 'y')"
    )
    df = spark.read.format("delta").load(path)
    assert df.schema["v"].dataType.simpleString() == "bigint"
    assert _rows(spark, path, "id", "v") == [(1, 10), (2, 20), (3, 30), (4, 5000000000)]
    field = DeltaLog(path).snapshot().schema.field("v")
    assert field.metadata["delta.typeChanges"] == [{"fromType": "integer", "toType": "long"}]


def test_catalog_table_shows_column_changes(spark: Any, tmp_path: Path) -> None:
    name = f"alter_cols_{next(_names)}"
    spark.sql(
        f"CREATE TABLE {name} (id BIGINT, v INT) USING delta "
        "TBLPROPERTIES ('delta.columnMapping.mode' = 'name')"
    )
    try:
        spark.sql(f"INSERT INTO {name} VALUES (1, 10)")
        spark.sql(f"ALTER TABLE {name} RENAME COLUMN v TO amount")
        assert spark.table(name).columns == ["id", "amount"]
        described = {r.col_name for r in spark.sql(f"DESCRIBE TABLE {name}").collect()}
        assert "amount" in described and "v" not in described
        assert [tuple(r) for r in spark.sql(f"SELECT amount FROM {name}").collect()] == [(10,)]
    finally:
        spark.sql(f"DROP TABLE IF EXISTS {name}")


def test_statements_on_other_formats_stay_sparks(spark: Any, tmp_path: Path) -> None:
    name = f"parquet_cols_{next(_names)}"
    spark.sql(f"CREATE TABLE {name} (id BIGINT, v INT) USING parquet LOCATION '{tmp_path / name}'")
    try:
        spark.sql(f"ALTER TABLE {name} ALTER COLUMN v COMMENT 'from spark'")
        assert spark.table(name).schema["v"].metadata["comment"] == "from spark"
        with pytest.raises(AnalysisException) as caught:
            spark.sql(f"ALTER TABLE {name} RENAME COLUMN v TO w")
        assert not isinstance(caught.value, DeltaAnalysisException)  # Spark's own refusal
    finally:
        spark.sql(f"DROP TABLE IF EXISTS {name}")
