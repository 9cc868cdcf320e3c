"""Delta tables by name: registered in Spark's session catalog by every way of creating
one, resolved by Spark itself, managed tables' files deleted by DROP TABLE, external ones
kept, and the log the source of truth for the schema."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.exceptions import DeltaAnalysisException
from delta_pyspark.tables import DeltaTable


@pytest.fixture
def names(spark: Any) -> Iterator[list[str]]:
    """Table names a test registers; dropped afterwards."""
    created: list[str] = []
    yield created
    for name in created:
        spark.sql(f"DROP TABLE IF EXISTS {name}")


def _location(spark: Any, name: str) -> Path:
    rows = spark.sql(f"DESCRIBE TABLE EXTENDED {name}").collect()
    found = {r.col_name: r.data_type for r in rows}
    return Path(found["Location"].removeprefix("file:"))


def _table_type(spark: Any, name: str) -> str:
    rows = spark.sql(f"DESCRIBE TABLE EXTENDED {name}").collect()
    return {r.col_name: r.data_type for r in rows}["Type"]


def _commit(path: Path, version: int) -> dict[str, Any]:
    lines = (path / "_delta_log" / f"{version:020d}.json").read_text().splitlines()
    return next(json.loads(x)["commitInfo"] for x in lines if "commitInfo" in x)


def _rows(df: Any) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in df.collect())


def test_create_table_as_select_registers_a_managed_table(spark: Any, names: list[str]) -> None:
    names.append("ctas_t")
    spark.sql(
        "CREATE TABLE ctas_t USING delta PARTITIONED BY (p) "
        "TBLPROPERTIES ('delta.appendOnly' = 'false') COMMENT 'made by a test' "
        "AS SELECT id, id % 3 AS p FROM range(6)"
    )
    location = _location(spark, "ctas_t")
    snapshot = DeltaLog(str(location)).snapshot()
    assert snapshot.partition_columns == ["p"]
    assert snapshot.configuration["delta.appendOnly"] == "false"
    assert snapshot.metadata.description == "made by a test"
    assert _commit(location, 0)["operation"] == "CREATE TABLE AS SELECT"
    assert _table_type(spark, "ctas_t") == "MANAGED"
    assert _rows(spark.table("ctas_t")) == [(i, i % 3) for i in range(6)]
    assert _rows(spark.sql("SELECT * FROM spark_catalog.default.ctas_t WHERE p = 1")) == [
        (1, 1),
        (4, 1),
    ]
    assert [t.name for t in spark.catalog.listTables() if t.name == "ctas_t"] == ["ctas_t"]
    spark.sql("ALTER TABLE ctas_t SET TBLPROPERTIES ('delta.appendOnly' = 'true')")
    spark.sql("INSERT INTO ctas_t VALUES (10, 1)")  # the entry's creation options stay behind
    assert _commit(location, 2)["operation"] == "WRITE"
    assert DeltaLog(str(location)).snapshot().configuration["delta.appendOnly"] == "true"
    spark.sql("DROP TABLE ctas_t")
    assert not location.exists()  # a managed table's files go with it
    assert not spark.catalog.tableExists("ctas_t")


def test_create_table_with_columns_commits_version_zero(spark: Any, names: list[str]) -> None:
    names.append("made_t")
    spark.sql("CREATE TABLE made_t (a INT, b STRING) USING delta PARTITIONED BY (b)")
    location = _location(spark, "made_t")
    snapshot = DeltaLog(str(location)).snapshot()
    assert (snapshot.version, snapshot.num_files, snapshot.partition_columns) == (0, 0, ["b"])
    assert _commit(location, 0)["operation"] == "CREATE TABLE"
    spark.sql("INSERT INTO made_t VALUES (1, 'x'), (2, 'y')")
    spark.sql("INSERT INTO made_t SELECT 3, 'x'")
    assert _rows(spark.table("made_t")) == [(1, "x"), (2, "y"), (3, "x")]
    assert DeltaLog(str(location)).snapshot().version == 2
    spark.sql("CREATE TABLE IF NOT EXISTS made_t (a INT, b STRING) USING delta")
    assert DeltaLog(str(location)).snapshot().version == 2


def test_an_existing_table_is_registered_unchanged_and_kept_on_drop(
    spark: Any, names: list[str], tmp_path: Path
) -> None:
    names.append("ext_t")
    path = tmp_path / "ext"
    spark.range(3).write.format("delta").save(str(path))
    spark.sql(f"CREATE TABLE ext_t USING delta LOCATION '{path}'")
    assert DeltaLog(str(path)).snapshot().version == 0  # registering commits nothing
    assert _table_type(spark, "ext_t") == "EXTERNAL"
    spark.range(3, 5).write.insertInto("ext_t")
    assert sorted(r.id for r in spark.read.table("ext_t").collect()) == list(range(5))
    spark.sql("DROP TABLE ext_t")
    kept = spark.read.format("delta").load(str(path))  # the files stay
    assert sorted(r.id for r in kept.collect()) == list(range(5))


def test_save_as_table_managed_and_external(spark: Any, names: list[str], tmp_path: Path) -> None:
    names.extend(["sat_m", "sat_e"])
    spark.range(3).write.format("delta").saveAsTable("sat_m")
    location = _location(spark, "sat_m")
    spark.range(3, 5).write.format("delta").mode("append").saveAsTable("sat_m")
    spark.range(9, 10).write.format("delta").mode("overwrite").saveAsTable("sat_m")
    assert _rows(spark.table("sat_m")) == [(9,)]
    # an overwrite is a new version of the same log: history and time travel stay
    assert DeltaLog(str(location)).snapshot().version == 2
    assert [r.operation for r in DeltaTable.forName(spark, "sat_m").history().collect()] == [
        "WRITE",
        "WRITE",
        "CREATE TABLE AS SELECT",
    ]
    old = spark.read.format("delta").option("versionAsOf", 1).load(str(location))
    assert sorted(r.id for r in old.collect()) == list(range(5))
    with pytest.raises(DeltaAnalysisException, match="already exists"):
        spark.range(1).write.format("delta").saveAsTable("sat_m")
    external = tmp_path / "external"
    spark.range(2).write.format("delta").option("path", str(external)).saveAsTable("sat_e")
    assert _table_type(spark, "sat_e") == "EXTERNAL"
    assert _location(spark, "sat_e") == external
    spark.sql("DROP TABLE sat_e")
    assert DeltaLog(str(external)).snapshot().num_files > 0


def test_the_log_is_the_source_of_truth_for_the_schema(spark: Any, names: list[str]) -> None:
    names.append("evolving")
    spark.range(2).write.format("delta").saveAsTable("evolving")
    spark.range(2, 3).selectExpr("id", "'new' AS extra").write.format("delta").mode(
        "append"
    ).option("mergeSchema", "true").saveAsTable("evolving")
    assert spark.table("evolving").columns == ["id", "extra"]
    assert _rows(spark.sql("SELECT * FROM evolving WHERE extra IS NOT NULL")) == [(2, "new")]


def test_write_to_creates_a_catalog_table(spark: Any, names: list[str]) -> None:
    names.append("v2_t")
    spark.range(2).writeTo("v2_t").using("delta").create()
    assert _commit(_location(spark, "v2_t"), 0)["operation"] == "CREATE TABLE AS SELECT"
    assert _rows(spark.table("v2_t")) == [(0,), (1,)]
    assert DeltaTable.forName(spark, "v2_t").toDF().count() == 2


def test_truncate_table_removes_every_file_in_a_new_version(spark: Any, names: list[str]) -> None:
    names.extend(["trunc", "trunc_parquet"])
    spark.sql("CREATE TABLE trunc (id INT, p STRING) USING delta PARTITIONED BY (p)")
    spark.sql("INSERT INTO trunc VALUES (1, 'a'), (2, 'b'), (3, 'b')")
    location = _location(spark, "trunc")
    spark.sql("TRUNCATE TABLE trunc")
    assert spark.table("trunc").count() == 0
    assert (location / "_delta_log" / f"{2:020d}.json").is_file()  # the log is kept
    info = _commit(location, 2)
    assert info["operation"] == "TRUNCATE"
    assert info["operationMetrics"]["numRemovedFiles"] == "2"
    before = spark.read.format("delta").option("versionAsOf", 1).load(str(location))
    assert _rows(before) == [(1, "a"), (2, "b"), (3, "b")]
    spark.sql("TRUNCATE TABLE trunc")  # nothing left to remove: no new version
    assert DeltaLog.for_table(str(location)).snapshot().version == 2
    with pytest.raises(
        DeltaAnalysisException, match="DELTA_TRUNCATE_TABLE_PARTITION_NOT_SUPPORTED"
    ):
        spark.sql("TRUNCATE TABLE trunc PARTITION (p = 'a')")
    assert DeltaLog.for_table(str(location)).snapshot().version == 2
    # another format's table is still Spark's to truncate
    spark.sql("CREATE TABLE trunc_parquet USING parquet AS SELECT 1 AS id")
    spark.sql("TRUNCATE TABLE trunc_parquet")
    assert spark.table("trunc_parquet").count() == 0


def test_a_non_delta_table_is_not_written_as_delta(spark: Any, names: list[str]) -> None:
    names.append("plain_t")
    spark.range(2).write.format("parquet").saveAsTable("plain_t")
    with pytest.raises(DeltaAnalysisException, match="not a Delta table"):
        spark.range(1).write.format("delta").mode("append").saveAsTable("plain_t")
    assert spark.table("plain_t").count() == 2


_HIVE_SESSION = """
import sys
from pyspark.sql import SparkSession
from delta_pyspark import configure_spark_with_delta
root, step = sys.argv[1], sys.argv[2]
builder = (
    SparkSession.builder.master("local[1]")
    .config("spark.ui.enabled", "false")
    .config("spark.sql.warehouse.dir", root + "/warehouse")
    # A short-lived JVM: skip C2 compilation and parallel GC threads (2-core machines).
    .config("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
    .config(
        "spark.hadoop.javax.jdo.option.ConnectionURL",
        "jdbc:derby:;databaseName=" + root + "/metastore_db;create=true",
    )
    .enableHiveSupport()
)
spark = configure_spark_with_delta(builder).getOrCreate()
if step == "create":
    spark.sql("CREATE TABLE hv USING delta AS SELECT id FROM range(3)")
    spark.range(2).write.format("delta").saveAsTable("hv2")
    spark.sql("INSERT INTO hv VALUES (10)")
else:
    ids = sorted(r.id for r in spark.table("hv").collect())
    names = sorted(t.name for t in spark.catalog.listTables())
    print("ROWS", ids, spark.table("hv2").count(), names)
spark.stop()
"""


@pytest.mark.long  # a metastore restarted in a new process: CI's second step
def test_tables_survive_a_restart_in_the_hive_metastore(tmp_path: Path) -> None:
    """With Hive support, the session catalog is the Hive metastore (Derby here): tables
    created by name are found by a new process."""
    import subprocess
    import sys

    for step in ("create", "read"):
        run = subprocess.run(
            [sys.executable, "-c", _HIVE_SESSION, str(tmp_path), step],
            capture_output=True,
            text=True,
            timeout=300,
            cwd=tmp_path,
        )
        assert run.returncode == 0, run.stderr[-3000:]
    assert "ROWS [0, 1, 2, 10] 2 ['hv', 'hv2']" in run.stdout
