"""Liquid clustering: creation through every route, ALTER CLUSTER BY, writes, OPTIMIZE
(incremental and FULL), and what other readers make of a clustered table."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path
from typing import Any

import deltalake
import pytest

from delta_pyspark import scan_report
from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.exceptions import DeltaAnalysisException, DeltaUnsupportedOperationException
from delta_pyspark.tables import DeltaTable

MAX_FILE = "spark.databricks.delta.optimize.maxFileSize"
DOMAIN = "delta.clustering"


def _actions(path: str, version: int) -> list[dict[str, Any]]:
    text = Path(path, "_delta_log", f"{version:020d}.json").read_text()
    return [json.loads(line) for line in text.splitlines() if line]


def _of(actions: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [a[kind] for a in actions if kind in a]


def _domain(path: str, version: int) -> list[list[str]] | None:
    """The clustering columns the commit's ``delta.clustering`` domain names."""
    domains = [d for d in _of(_actions(path, version), "domainMetadata") if d["domain"] == DOMAIN]
    if not domains:
        return None
    assert domains[0]["removed"] is False
    return json.loads(domains[0]["configuration"])["clusteringColumns"]


def _assert_clustered_commit(path: str, version: int, columns: list[list[str]]) -> None:
    actions = _actions(path, version)
    assert _domain(path, version) == columns
    protocol = DeltaLog(path).snapshot(version).protocol
    assert protocol.min_writer_version == 7
    assert {"clustering", "domainMetadata"} <= set(protocol.writer_features or ())
    info = _of(actions, "commitInfo")[0]
    assert json.loads(info["operationParameters"]["clusterBy"]) == [".".join(c) for c in columns]


def _rows(spark: Any, path: str, version: int | None = None) -> list[tuple]:
    reader = spark.read.format("delta")
    if version is not None:
        reader = reader.option("versionAsOf", version)
    return sorted(tuple(r) for r in reader.load(path).collect())


def _df(spark: Any, n: int = 40) -> Any:
    return spark.range(n).selectExpr("id", "id % 7 AS a", "cast(id * 3 AS string) AS s")


# ----------------------------------------------------------------------------- creation


def test_write_cluster_by_save(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    _df(spark).write.format("delta").clusterBy("a", "id").save(path)
    _assert_clustered_commit(path, 0, [["a"], ["id"]])
    assert _rows(spark, path) == sorted(tuple(r) for r in _df(spark).collect())
    detail = DeltaTable.forPath(spark, path).detail().collect()[0]
    assert detail.clusteringColumns == ["a", "id"]
    # the writer's features are listed, nothing is stored as a property
    assert "clusteringColumns" not in DeltaLog(path).snapshot().configuration


def test_save_as_table_and_write_to_create(spark: Any, tmp_path: Path) -> None:
    _df(spark).write.format("delta").clusterBy("a").saveAsTable("clu_sat")
    _df(spark).writeTo("clu_wt").using("delta").clusterBy("s").create()
    try:
        for name, column in (("clu_sat", "a"), ("clu_wt", "s")):
            path = DeltaTable.forName(spark, name).detail().collect()[0].location
            _assert_clustered_commit(path, 0, [[column]])
            snapshot = DeltaLog(path).snapshot()
            assert "clusteringColumns" not in snapshot.configuration
            assert spark.table(name).count() == 40
    finally:
        spark.sql("DROP TABLE IF EXISTS clu_sat")
        spark.sql("DROP TABLE IF EXISTS clu_wt")


def test_sql_create_by_name_path_and_ctas(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "p")
    spark.sql(f"CREATE TABLE delta.`{path}` (x BIGINT, y STRING) USING delta CLUSTER BY (y, x)")
    _assert_clustered_commit(path, 0, [["y"], ["x"]])
    spark.sql("CREATE TABLE clu_sql (x BIGINT, y STRING) USING delta CLUSTER BY (x)")
    spark.sql(
        "CREATE TABLE clu_ctas USING delta CLUSTER BY (a) AS SELECT id, id % 3 AS a FROM range(9)"
    )
    ctas_path = str(tmp_path / "ctas")
    spark.sql(
        f"CREATE TABLE delta.`{ctas_path}` USING delta CLUSTER BY (a) "
        "AS SELECT id, id % 3 AS a FROM range(9)"
    )
    try:
        by_name = DeltaTable.forName(spark, "clu_sql").detail().collect()[0].location
        _assert_clustered_commit(by_name, 0, [["x"]])
        ctas = DeltaTable.forName(spark, "clu_ctas").detail().collect()[0].location
        _assert_clustered_commit(ctas, 0, [["a"]])
        assert _of(_actions(ctas, 0), "commitInfo")[0]["operation"] == "CREATE TABLE AS SELECT"
        assert spark.table("clu_ctas").count() == 9
        _assert_clustered_commit(ctas_path, 0, [["a"]])
        assert _rows(spark, ctas_path) == [(i, i % 3) for i in range(9)]
    finally:
        spark.sql("DROP TABLE IF EXISTS clu_sql")
        spark.sql("DROP TABLE IF EXISTS clu_ctas")


def test_builder_cluster_by_and_replace(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "b")
    (
        DeltaTable.create(spark)
        .location(path)
        .addColumn("id", "bigint")
        .addColumn("n", "struct<x: int, y: string>")
        .clusterBy("id", "n.x")
        .execute()
    )
    _assert_clustered_commit(path, 0, [["id"], ["n", "x"]])
    assert DeltaTable.forPath(spark, path).detail().collect()[0].clusteringColumns == ["id", "n.x"]
    # replaced without clusterBy: still a clustered table, with no clustering columns
    DeltaTable.replace(spark).location(path).addColumn("id", "bigint").execute()
    assert _domain(path, 1) == []
    assert DeltaTable.forPath(spark, path).detail().collect()[0].clusteringColumns == []


def test_replace_table_and_write_to_create_or_replace(spark: Any, tmp_path: Path) -> None:
    _df(spark).writeTo("clu_rep").using("delta").createOrReplace()
    try:
        path = DeltaTable.forName(spark, "clu_rep").detail().collect()[0].location
        assert _domain(path, 0) is None
        _df(spark).writeTo("clu_rep").using("delta").clusterBy("a").createOrReplace()
        _assert_clustered_commit(path, 1, [["a"]])
        spark.sql(
            "CREATE OR REPLACE TABLE clu_rep (id BIGINT, s STRING) USING delta CLUSTER BY (s)"
        )
        _assert_clustered_commit(path, 2, [["s"]])
        assert spark.table("clu_rep").count() == 0
    finally:
        spark.sql("DROP TABLE IF EXISTS clu_rep")


# ----------------------------------------------------------------------------- refusals


@pytest.mark.parametrize(
    ("columns", "props", "message"),
    [
        (
            ["a", "id", "s", "b", "c"],
            {},
            "[DELTA_CLUSTER_BY_INVALID_NUM_COLUMNS] CLUSTER BY "
            "supports up to 4 clustering columns, but the table has 5",
        ),
        (["nope"], {}, "[DELTA_COLUMN_NOT_FOUND_IN_SCHEMA] Couldn't find column nope"),
        (
            ["flag"],
            {},
            "[DELTA_CLUSTERING_COLUMNS_DATATYPE_NOT_SUPPORTED] CLUSTER BY is not "
            "supported because the following column(s): flag : BOOLEAN",
        ),
        (
            ["s"],
            {"delta.dataSkippingNumIndexedCols": "2"},
            "[DELTA_CLUSTERING_COLUMN_MISSING_STATS] Clustering requires clustering columns to "
            "have stats. Couldn't find clustering column(s) 's'",
        ),
        (
            ["id"],
            {"delta.dataSkippingStatsColumns": "a"},
            "[DELTA_CLUSTERING_COLUMN_MISSING_STATS]",
        ),
    ],
)
def test_bad_clustering_columns_are_refused(
    spark: Any, tmp_path: Path, columns: list[str], props: dict[str, str], message: str
) -> None:
    path = tmp_path / "t"
    df = spark.range(3).selectExpr(
        "id", "id AS a", "'x' AS s", "id AS b", "id AS c", "true AS flag"
    )
    writer = df.write.format("delta").clusterBy(*columns)
    for k, v in props.items():
        writer = writer.option(k, v)
    with pytest.raises(DeltaAnalysisException) as e:
        writer.save(str(path))
    assert message in str(e.value)
    assert not path.exists() or not any(path.rglob("*.parquet"))  # nothing written


def test_cluster_by_with_partition_by_is_refused(spark: Any, tmp_path: Path) -> None:
    from pyspark.errors import AnalysisException

    path = tmp_path / "t"
    with pytest.raises(AnalysisException, match="SPECIFY_CLUSTER_BY_WITH_PARTITIONED_BY"):
        _df(spark).write.format("delta").partitionBy("a").clusterBy("id").save(str(path))  # Spark's
    # Spark's own parser refuses the statement, as for delta-spark
    with pytest.raises(AnalysisException, match="SPECIFY_CLUSTER_BY_WITH_PARTITIONED_BY"):
        spark.sql(
            f"CREATE TABLE delta.`{path}` (id BIGINT, a BIGINT) USING delta "
            "PARTITIONED BY (a) CLUSTER BY (id)"
        )
    with pytest.raises(DeltaAnalysisException, match="Clustering and partitioning cannot both"):
        (
            DeltaTable.create(spark)
            .location(str(path))
            .addColumn("id", "bigint")
            .partitionedBy("id")
            .clusterBy("id")
            .execute()
        )
    assert not (path / "_delta_log").exists()


def test_the_clustering_feature_as_a_table_property_is_refused(spark: Any, tmp_path: Path) -> None:
    """``delta.feature.clustering`` without CLUSTER BY would make a clustered table with no
    ``delta.clustering`` domain: refused on every creation route and by SET TBLPROPERTIES,
    with delta-spark's error classes, committing nothing. With CLUSTER BY it is redundant."""
    path = tmp_path / "t"
    prop = "'delta.feature.clustering' = 'supported'"
    create = r"\[DELTA_CREATE_TABLE_SET_CLUSTERING_TABLE_FEATURE_NOT_ALLOWED\]"
    with pytest.raises(DeltaAnalysisException, match=create):
        spark.sql(f"CREATE TABLE delta.`{path}` (id BIGINT) USING delta TBLPROPERTIES ({prop})")
    with pytest.raises(DeltaAnalysisException, match=create):
        (
            DeltaTable.create(spark)
            .location(str(path))
            .addColumn("id", "bigint")
            .property("delta.feature.clustering", "supported")
            .execute()
        )
    with pytest.raises(DeltaAnalysisException, match=create):
        _df(spark).write.format("delta").option("delta.feature.clustering", "supported").save(
            str(path)
        )
    assert not (path / "_delta_log").exists()

    _df(spark).write.format("delta").save(str(path))
    alter = r"\[DELTA_ALTER_TABLE_SET_CLUSTERING_TABLE_FEATURE_NOT_ALLOWED\]"
    with pytest.raises(DeltaAnalysisException, match=alter):
        spark.sql(f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ({prop})")
    assert DeltaLog(str(path)).snapshot().version == 0
    assert "clustering" not in (DeltaLog(str(path)).snapshot().protocol.writer_features or ())

    clustered = str(tmp_path / "c")
    spark.sql(
        f"CREATE TABLE delta.`{clustered}` (id BIGINT) USING delta CLUSTER BY (id) "
        f"TBLPROPERTIES ({prop})"
    )
    _assert_clustered_commit(clustered, 0, [["id"]])


def test_append_must_name_the_tables_clustering_columns(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    _df(spark).write.format("delta").clusterBy("a").save(path)
    _df(spark).write.format("delta").mode("append").clusterBy("a").save(path)
    with pytest.raises(DeltaAnalysisException, match=r"\[DELTA_CLUSTERING_COLUMNS_MISMATCH\]"):
        _df(spark).write.format("delta").mode("append").clusterBy("id").save(path)
    assert DeltaLog(path).snapshot().version == 1
    # an overwrite may change them (delta-spark's WriteIntoDelta)
    _df(spark).write.format("delta").mode("overwrite").clusterBy("id").save(path)
    _assert_clustered_commit(path, 2, [["id"]])


# ----------------------------------------------------------------------------- ALTER


def test_alter_cluster_by_and_none(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    _df(spark).write.format("delta").save(path)  # not clustered yet
    spark.sql(f"ALTER TABLE delta.`{path}` CLUSTER BY (a, s)")
    _assert_commit_cluster_by(path, 1, "", "a,s")
    assert _domain(path, 1) == [["a"], ["s"]]
    protocol = DeltaLog(path).snapshot().protocol
    assert {"clustering", "domainMetadata"} <= set(protocol.writer_features or ())
    spark.sql(f"ALTER TABLE delta.`{path}` CLUSTER BY NONE")
    _assert_commit_cluster_by(path, 2, "a,s", "")
    assert _domain(path, 2) == []
    assert DeltaTable.forPath(spark, path).detail().collect()[0].clusteringColumns == []
    assert _rows(spark, path) == _rows(spark, path, 0)
    with pytest.raises(DeltaAnalysisException, match=r"\[DELTA_COLUMN_NOT_FOUND_IN_SCHEMA\]"):
        spark.sql(f"ALTER TABLE delta.`{path}` CLUSTER BY (missing)")
    assert DeltaLog(path).snapshot().version == 2


def _assert_commit_cluster_by(path: str, version: int, old: str, new: str) -> None:
    info = _of(_actions(path, version), "commitInfo")[0]
    assert info["operation"] == "CLUSTER BY"
    assert info["operationParameters"] == {"oldClusteringColumns": old, "newClusteringColumns": new}
    assert not _of(_actions(path, version), "add")


def test_alter_cluster_by_on_partitioned_table_is_refused(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    _df(spark).write.format("delta").partitionBy("a").save(path)
    with pytest.raises(
        DeltaAnalysisException,
        match=r"\[DELTA_ALTER_TABLE_CLUSTER_BY_ON_PARTITIONED_TABLE_NOT_ALLOWED\] ALTER TABLE "
        "CLUSTER BY cannot be applied to a partitioned table",
    ):
        spark.sql(f"ALTER TABLE delta.`{path}` CLUSTER BY (id)")
    # CLUSTER BY NONE on a table that is not clustered: nothing to do, nothing committed
    spark.sql(f"ALTER TABLE delta.`{path}` CLUSTER BY NONE")
    assert DeltaLog(path).snapshot().version == 0


# ----------------------------------------------------------------------------- OPTIMIZE


def _scattered(spark: Any, path: str, start: int, n: int, files: int, mode: str) -> None:
    from pyspark.sql import functions as F

    df = (
        spark.range(start, start + n)
        .select(
            "id",
            (F.xxhash64("id") % 1000).alias("x"),
            (F.xxhash64(F.col("id") + 7) % 1000).alias("y"),
        )
        .repartition(files, F.rand(5))
    )
    writer = df.write.format("delta").mode(mode)
    if mode == "errorifexists":
        writer = writer.clusterBy("x", "y")
    writer.save(path)


def _files_hit(path: str, spark: Any, predicate: str) -> int:
    report = scan_report(spark.read.format("delta").load(path).where(predicate))
    assert report is not None
    return int(report.files_scanned)


@pytest.mark.long  # slow: CI's second step
def test_optimize_clusters_incrementally_then_full(spark: Any, tmp_path: Path, conf: Any) -> None:
    path = str(tmp_path / "t")
    _scattered(spark, path, 0, 20000, 16, "errorifexists")
    before = _rows(spark, path)
    size = sum(DeltaLog(path).snapshot().files.column("size").to_pylist())
    conf(MAX_FILE, str(math.ceil(size / 16)))
    xs = [r.x for r in spark.read.format("delta").load(path).limit(10).collect()]
    hits_before = sum(_files_hit(path, spark, f"x = {x}") for x in xs)

    result = DeltaTable.forPath(spark, path).optimize().executeCompaction().collect()[0]

    v1 = DeltaLog(path).snapshot()
    assert v1.version == 1 and result.metrics.numFilesRemoved == 16
    actions = _actions(path, 1)
    adds = _of(actions, "add")
    assert len(adds) == result.metrics.numFilesAdded >= 12
    assert all(a["clusteringProvider"] == "liquid" and not a["dataChange"] for a in adds)
    assert {a["tags"]["ZCUBE_ZORDER_BY"] for a in adds} == {'["x","y"]'}
    assert len({a["tags"]["ZCUBE_ID"] for a in adds}) == 1
    info = _of(actions, "commitInfo")[0]
    assert info["operation"] == "OPTIMIZE"
    assert info["operationParameters"] == {
        "predicate": "[]",
        "zOrderBy": "[]",
        "clusterBy": '["x","y"]',
        "auto": "false",
        "isFull": "false",
    }
    assert _rows(spark, path) == before
    assert _rows(spark, path, 0) == before
    hits_after = sum(_files_hit(path, spark, f"x = {x}") for x in xs)
    assert hits_after * 3 < hits_before, (hits_after, hits_before)

    # an append is not clustered; the next OPTIMIZE rewrites only the appended files
    clustered = set(v1.files.column("path").to_pylist())
    _scattered(spark, path, 20000, 2000, 3, "append")
    appended = set(DeltaLog(path).snapshot().files.column("path").to_pylist()) - clustered
    assert len(appended) == 3
    assert not any(a.get("clusteringProvider") for a in _of(_actions(path, 2), "add"))
    DeltaTable.forPath(spark, path).optimize().executeCompaction()
    removed = {r["path"] for r in _of(_actions(path, 3), "remove")}
    assert removed == appended
    new_adds = _of(_actions(path, 3), "add")
    assert all(a["clusteringProvider"] == "liquid" for a in new_adds)
    after_append = _rows(spark, path, 2)
    assert _rows(spark, path) == after_append
    # nothing left to cluster: no commit
    DeltaTable.forPath(spark, path).optimize().executeCompaction()
    assert DeltaLog(path).snapshot().version == 3

    # FULL reclusters every file
    spark.sql(f"OPTIMIZE delta.`{path}` FULL")
    full = _actions(path, 4)
    live = set(DeltaLog(path).snapshot(3).files.column("path").to_pylist())
    assert {r["path"] for r in _of(full, "remove")} == live
    assert _of(full, "commitInfo")[0]["operationParameters"]["isFull"] == "true"
    assert _rows(spark, path) == after_append


def test_optimize_after_alter_keeps_files_clustered_by_old_columns(
    spark: Any, tmp_path: Path
) -> None:
    path = str(tmp_path / "t")
    _scattered(spark, path, 0, 3000, 4, "errorifexists")
    spark.sql(f"OPTIMIZE delta.`{path}`")
    spark.sql(f"ALTER TABLE delta.`{path}` CLUSTER BY (y)")
    _scattered(spark, path, 3000, 500, 2, "append")
    spark.sql(f"OPTIMIZE delta.`{path}`")
    adds = _of(_actions(path, 4), "add")
    assert len(_of(_actions(path, 4), "remove")) == 2  # only the appended files
    assert {a["tags"]["ZCUBE_ZORDER_BY"] for a in adds} == {'["y"]'}


def test_optimize_refusals_on_clustered_tables(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    _df(spark).write.format("delta").clusterBy("a").save(path)
    table = DeltaTable.forPath(spark, path)
    with pytest.raises(
        DeltaAnalysisException,
        match=r"\[DELTA_CLUSTERING_WITH_ZORDER_BY\].*"
        r"Please remove ZORDER BY \(id\)",
    ):
        table.optimize().executeZOrderBy("id")
    with pytest.raises(
        DeltaUnsupportedOperationException, match=r"\[DELTA_CLUSTERING_WITH_PARTITION_PREDICATE\]"
    ):
        table.optimize().where("a = 1").executeCompaction()
    with pytest.raises(DeltaAnalysisException, match=r"\[DELTA_CLUSTERING_WITH_ZORDER_BY\]"):
        spark.sql(f"OPTIMIZE delta.`{path}` ZORDER BY (id)")
    plain = str(tmp_path / "plain")
    _df(spark).write.format("delta").save(plain)
    with pytest.raises(DeltaAnalysisException, match=r"\[DELTA_OPTIMIZE_FULL_NOT_SUPPORTED\]"):
        spark.sql(f"OPTIMIZE delta.`{plain}` FULL")
    assert DeltaLog(path).snapshot().version == 0
    assert DeltaLog(plain).snapshot().version == 0


def test_writes_keep_the_clustering_domain(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    _df(spark).write.format("delta").clusterBy("a").save(path)
    _df(spark).write.format("delta").mode("append").save(path)
    spark.sql(f"DELETE FROM delta.`{path}` WHERE id < 5")
    _df(spark).write.format("delta").mode("overwrite").save(path)
    snapshot = DeltaLog(path).snapshot()
    assert snapshot.version == 3
    assert DeltaTable.forPath(spark, path).detail().collect()[0].clusteringColumns == ["a"]
    for version in (1, 2, 3):
        assert _domain(path, version) is None  # not rewritten: the domain stays as committed


# ----------------------------------------------------------------------------- other readers


def test_deltalake_reads_a_clustered_table_we_wrote(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    _scattered(spark, path, 0, 2000, 4, "errorifexists")
    spark.sql(f"OPTIMIZE delta.`{path}`")
    table = deltalake.DeltaTable(path)
    assert table.version() == 1
    assert "clustering" in (table.protocol().writer_features or [])
    got = sorted(tuple(r.values()) for r in table.to_pyarrow_table().to_pylist())
    assert got == _rows(spark, path)


def test_delta_rs_liquid_table_reads(spark: Any, testdata: Path, tmp_path: Path) -> None:
    source = testdata / "delta-rs" / "table_with_liquid_clustering"
    path = tmp_path / "t"
    shutil.copytree(source, path)
    assert _rows(spark, str(path)) == [(i,) for i in range(10)]
    detail = DeltaTable.forPath(spark, str(path)).detail().collect()[0]
    assert detail.clusteringColumns == ["id"]
