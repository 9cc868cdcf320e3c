"""Catalog-managed tables from Spark: a session attached to a catalog (SQLite here; the core's
tests run both backends) creates them with SQL, resolves their names, and reads, writes and
runs DML on them through the catalog — staged commits ratified by the catalog, then
published — while maintenance waits for the catalog's permission and, detached, path access
is refused by the feature's name."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import delta_pyspark
from delta_pyspark.core.catalog.managed_tables import Catalog
from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.exceptions import (
    DeltaUnsupportedOperationException,
    UnsupportedTableFeatureError,
)
from delta_pyspark.tables import DeltaTable

pytestmark = pytest.mark.spark


@pytest.fixture
def catalog_url(spark: Any, tmp_path: Path) -> Iterator[str]:
    url = f"sqlite:///{tmp_path / 'catalog.db'}"
    yield url
    delta_pyspark.use_catalog(spark, None)
    for row in spark.sql("SHOW TABLES").collect():
        if row.tableName.startswith("cm_"):
            spark.sql(f"DROP TABLE IF EXISTS {row.tableName}")


def _rows(spark: Any, sql: str) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in spark.sql(sql).collect())


def _staged_and_published(location: str) -> tuple[int, list[int]]:
    log_dir = Path(location) / "_delta_log"
    staged = len(list((log_dir / "_staged_commits").glob("*.json")))
    published = sorted(int(p.stem) for p in log_dir.glob("*.json"))
    return staged, published


def test_sql_and_dataframes_through_the_catalog(spark: Any, catalog_url: str) -> None:
    catalog = delta_pyspark.use_catalog(spark, catalog_url)
    spark.sql(
        "CREATE TABLE cm_orders (id BIGINT, amount INT, region STRING) USING delta "
        "PARTITIONED BY (region) "
        "TBLPROPERTIES ('delta.feature.catalogManaged' = 'supported', 'team' = 'sales')"
    )
    location = catalog.table("cm_orders").location
    snapshot = DeltaLog.for_table(location).snapshot()
    assert {"catalogManaged", "inCommitTimestamp"} <= set(snapshot.protocol.writer_features or ())
    assert dict(snapshot.configuration) == {
        "team": "sales",
        "delta.enableInCommitTimestamps": "true",
    }
    spark.sql("INSERT INTO cm_orders VALUES (1, 10, 'eu'), (2, 20, 'us'), (3, 30, 'eu')")
    spark.createDataFrame([(4, 40, "us")], "id long, amount int, region string").write.format(
        "delta"
    ).mode("append").save(location)  # path access goes through the attached catalog too
    spark.sql("UPDATE cm_orders SET amount = amount + 1 WHERE region = 'eu'")
    spark.sql("DELETE FROM cm_orders WHERE id = 2")
    source = spark.createDataFrame(
        [(4, 44, "us"), (5, 50, "eu")], "id long, amount int, region string"
    )
    DeltaTable.forName(spark, "cm_orders").alias("t").merge(
        source.alias("s"), "t.id = s.id"
    ).whenMatchedUpdateAll().whenNotMatchedInsertAll().execute()
    expected = [(1, 11, "eu"), (3, 31, "eu"), (4, 44, "us"), (5, 50, "eu")]
    assert _rows(spark, "SELECT * FROM cm_orders") == expected
    assert sorted(tuple(r) for r in spark.table("cm_orders").collect()) == expected
    # every version was ratified by the catalog and published in order
    version = DeltaLog.for_table(location).snapshot().version
    assert version == 5
    assert catalog.backend.latest_versions([catalog.table("cm_orders").table_id]) == {
        catalog.table("cm_orders").table_id: version
    }
    staged, published = _staged_and_published(location)
    assert staged >= version + 1 and published == list(range(version + 1))
    commit = (Path(location) / "_delta_log" / f"{version:020d}.json").read_text().splitlines()
    assert "inCommitTimestamp" in json.loads(commit[0])["commitInfo"]
    history = [r.operation for r in spark.sql("DESCRIBE HISTORY cm_orders").collect()]
    assert history[0] == "MERGE" and history[-1] == "CREATE TABLE"
    # detached, the table is refused by path, by the feature's name
    delta_pyspark.use_catalog(spark, None)
    with pytest.raises(UnsupportedTableFeatureError, match="catalogManaged"):
        spark.read.format("delta").load(location).collect()


def test_maintenance_needs_the_catalogs_permission(spark: Any, catalog_url: str) -> None:
    delta_pyspark.use_catalog(spark, catalog_url)
    spark.sql(
        "CREATE TABLE cm_m (id BIGINT) USING delta "
        "TBLPROPERTIES ('delta.feature.catalogManaged' = 'supported')"
    )
    for i in range(3):
        spark.sql(f"INSERT INTO cm_m VALUES ({i})")
    location = delta_pyspark.use_catalog(spark, catalog_url).table("cm_m").location
    version = DeltaLog.for_table(location).snapshot().version
    for statement in ("OPTIMIZE cm_m", "VACUUM cm_m", "REORG TABLE cm_m APPLY (PURGE)"):
        with pytest.raises(DeltaUnsupportedOperationException, match="does not permit"):
            spark.sql(statement)
    assert DeltaLog.for_table(location).snapshot().version == version
    delta_pyspark.use_catalog(spark, catalog_url, allow_maintenance=True)
    spark.sql("OPTIMIZE cm_m")
    snapshot = DeltaLog.for_table(location).snapshot()
    assert snapshot.version == version + 1 and snapshot.files.num_rows == 1
    assert _rows(spark, "SELECT * FROM cm_m") == [(0,), (1,), (2,)]


def test_tables_made_elsewhere_and_drop(spark: Any, catalog_url: str, tmp_path: Path) -> None:
    delta_pyspark.use_catalog(spark, catalog_url)
    schema = json.dumps(
        {
            "type": "struct",
            "fields": [{"name": "k", "type": "long", "nullable": True, "metadata": {}}],
        }
    )
    with Catalog.open(catalog_url) as other:  # another client of the same catalog
        other.create_table("cm_elsewhere", schema)
    assert delta_pyspark.sync_catalog(spark) == ["cm_elsewhere"]
    spark.sql("INSERT INTO cm_elsewhere VALUES (7)")
    assert _rows(spark, "SELECT * FROM cm_elsewhere") == [(7,)]
    with Catalog.open(catalog_url) as other:
        assert other.snapshot("cm_elsewhere").version == 1
        location = other.table("cm_elsewhere").location
    spark.sql("DROP TABLE cm_elsewhere")
    assert spark.sql("SHOW TABLES LIKE 'cm_elsewhere'").count() == 0
    with Catalog.open(catalog_url) as other:
        assert "cm_elsewhere" not in {t.name for t in other.tables()}
    assert (Path(location) / "_delta_log").is_dir()  # the files stay
