"""Transactions over a catalog's tables from Spark (``delta_pyspark.transaction`` and SQL's
BEGIN / COMMIT / ROLLBACK), on SQLite and PostgreSQL: statements see the transaction's own
earlier writes, every table is read at one catalog state, all tables commit as one or
nothing is left (files included), and only the opening thread takes part."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import delta_pyspark
from delta_pyspark.core.catalog.managed_tables import Catalog
from delta_pyspark.exceptions import (
    DeltaAnalysisException,
    DeltaConcurrentModificationException,
    DeltaUnsupportedOperationException,
)
from delta_pyspark.tables import DeltaTable
from postgres_server import PostgresServer

MANAGED = "TBLPROPERTIES ('delta.feature.catalogManaged' = 'supported')"


@pytest.fixture(params=["sqlite", "postgres"])
def catalog(request: pytest.FixtureRequest, spark: Any, tmp_path: Path) -> Iterator[Catalog]:
    """The session attached to a fresh catalog on each backend, with tables ``ledger (id,
    amount)`` and ``audit (id)``."""
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'catalog.db'}"
    else:
        server: PostgresServer = request.getfixturevalue("postgres_server")
        url = server.new_database()
    attached = delta_pyspark.use_catalog(spark, url, warehouse=str(tmp_path / "warehouse"))
    assert attached is not None
    spark.sql(f"CREATE TABLE ledger (id BIGINT, amount INT) USING delta {MANAGED}")
    spark.sql(f"CREATE TABLE audit (id BIGINT) USING delta {MANAGED}")
    yield attached
    delta_pyspark.use_catalog(spark, None)
    for name in ("ledger", "audit"):
        spark.sql(f"DROP TABLE IF EXISTS {name}")


def _rows(spark: Any, sql: str) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in spark.sql(sql).collect())


def _in_thread(work: Any) -> Any:
    """``work()`` run on another Python thread (so outside the caller's transaction)."""
    out: list[Any] = []
    thread = threading.Thread(target=lambda: out.append(work()))
    thread.start()
    thread.join()
    return out[0]


def _data_files(catalog: Catalog, name: str) -> set[str]:
    return {p.name for p in Path(catalog.table(name).location).glob("*.parquet")}


def _versions(catalog: Catalog) -> dict[str, int | None]:
    return {e.name: e.latest_version for e in catalog.tables()}


def test_statements_see_the_transactions_own_writes(spark: Any, catalog: Catalog) -> None:
    with delta_pyspark.transaction(spark) as tx:
        spark.sql("INSERT INTO ledger VALUES (1, 10), (2, 20)")
        spark.sql("UPDATE ledger SET amount = 21 WHERE id = 2")
        assert _rows(spark, "SELECT * FROM ledger") == [(1, 10), (2, 21)]
        spark.sql("INSERT INTO audit VALUES (2)")
        # another thread reads the catalog's committed state: nothing yet
        assert _in_thread(lambda: _rows(spark, "SELECT * FROM ledger")) == []
    assert _rows(spark, "SELECT * FROM ledger") == [(1, 10), (2, 21)]
    assert _rows(spark, "SELECT * FROM audit") == [(2,)]
    # one commit per table; the ledger's lists both statements
    assert _versions(catalog) == {"ledger": 1, "audit": 1}
    info = catalog.delta_log("ledger").history(1)[0]
    assert info["operation"] == "TRANSACTION"
    assert info["operationParameters"]["statements"] == '["WRITE","UPDATE"]'
    assert info["operationParameters"]["multiTableTransaction"] == tx.id
    assert catalog.delta_log("audit").history(1)[0]["operation"] == "WRITE"
    # the file the INSERT wrote and the UPDATE replaced is gone: no version names it
    snapshot = catalog.snapshot("ledger")
    assert _data_files(catalog, "ledger") == set(snapshot.files.column("path").to_pylist())


def test_sql_begin_commit_and_rollback(spark: Any, catalog: Catalog) -> None:
    spark.sql("INSERT INTO ledger VALUES (1, 10), (2, 20)")
    before, files = _versions(catalog), _data_files(catalog, "ledger")
    spark.sql("BEGIN TRANSACTION")
    spark.sql("DELETE FROM ledger WHERE id = 1")
    DeltaTable.forName(spark, "ledger").update("id = 2", {"amount": "amount + 1"})
    spark.sql("INSERT INTO audit VALUES (1)")
    assert _rows(spark, "SELECT * FROM ledger") == [(2, 21)]
    spark.sql("ROLLBACK")
    # no trace: versions, rows and the table's files as before
    assert _versions(catalog) == before
    assert _rows(spark, "SELECT * FROM ledger") == [(1, 10), (2, 20)]
    assert _rows(spark, "SELECT * FROM audit") == []
    assert _data_files(catalog, "ledger") == files
    assert _data_files(catalog, "audit") == set()

    spark.sql("BEGIN")
    spark.sql("DELETE FROM ledger WHERE id = 1")
    spark.sql("INSERT INTO ledger VALUES (3, 30)")
    spark.sql("INSERT INTO audit VALUES (1), (3)")
    with pytest.raises(DeltaUnsupportedOperationException, match="already open"):
        spark.sql("BEGIN TRANSACTION")
    spark.sql("COMMIT WORK")
    assert _rows(spark, "SELECT * FROM ledger") == [(2, 20), (3, 30)]
    assert _rows(spark, "SELECT * FROM audit") == [(1,), (3,)]
    assert _versions(catalog) == {"ledger": before["ledger"] + 1, "audit": 1}
    with pytest.raises(DeltaAnalysisException, match="COMMIT: no transaction is open"):
        spark.sql("COMMIT")


def test_a_transaction_reads_one_catalog_state(spark: Any, catalog: Catalog) -> None:
    spark.sql("INSERT INTO ledger VALUES (1, 10)")
    with delta_pyspark.transaction(spark):
        assert _rows(spark, "SELECT count(*) FROM ledger") == [(1,)]  # the state is taken
        _in_thread(lambda: spark.sql("INSERT INTO audit VALUES (7)"))
        _in_thread(lambda: spark.sql("INSERT INTO ledger VALUES (2, 20)"))
        # committed since the transaction's first read: not seen inside, in either table
        assert _rows(spark, "SELECT * FROM audit") == []
        assert _rows(spark, "SELECT id FROM ledger") == [(1,)]
    assert _rows(spark, "SELECT id FROM ledger") == [(1,), (2,)]
    assert _rows(spark, "SELECT * FROM audit") == [(7,)]


def test_a_conflict_aborts_every_table(spark: Any, catalog: Catalog) -> None:
    spark.sql("INSERT INTO ledger VALUES (1, 10), (2, 20)")
    before = _versions(catalog)
    files = {n: _data_files(catalog, n) for n in ("ledger", "audit")}
    with pytest.raises(DeltaConcurrentModificationException), delta_pyspark.transaction(spark):
        spark.sql("INSERT INTO audit VALUES (1)")
        spark.sql("UPDATE ledger SET amount = amount + 1")  # rewrites every file
        # meanwhile another writer deletes a row the UPDATE changed
        _in_thread(lambda: spark.sql("DELETE FROM ledger WHERE id = 1"))
    assert _versions(catalog) == {**before, "ledger": before["ledger"] + 1}
    assert _rows(spark, "SELECT * FROM ledger") == [(2, 20)]
    assert _rows(spark, "SELECT * FROM audit") == []
    assert _data_files(catalog, "audit") == files["audit"]  # the staged rows are gone


def test_other_tables_are_refused_unless_allowed_alone(
    spark: Any, catalog: Catalog, tmp_path: Path
) -> None:
    path = str(tmp_path / "plain")
    spark.range(2).write.format("delta").save(path)
    refused = pytest.raises(DeltaUnsupportedOperationException, match="not a catalog-managed")
    with refused, delta_pyspark.transaction(spark):
        spark.sql("INSERT INTO audit VALUES (1)")
        spark.range(2, 4).write.format("delta").mode("append").save(path)
    assert spark.read.format("delta").load(path).count() == 2
    assert _rows(spark, "SELECT * FROM audit") == []
    with delta_pyspark.transaction(spark, others_alone=True):
        spark.sql("INSERT INTO audit VALUES (1)")
        spark.range(2, 4).write.format("delta").mode("append").save(path)
        assert spark.read.format("delta").load(path).count() == 4  # committed at once
    assert _rows(spark, "SELECT * FROM audit") == [(1,)]


def test_a_stream_beside_an_aborted_transaction_loses_nothing(
    spark: Any, catalog: Catalog, tmp_path: Path
) -> None:
    """The stream's micro-batches commit alone while the driver's main thread holds a
    transaction open and then aborts it: every value of the rate source lands once."""
    spark.sql(f"CREATE TABLE events (value BIGINT) USING delta {MANAGED}")
    try:
        query = (
            spark.readStream.format("rate")
            .option("rowsPerSecond", 20)
            .load()
            .select("value")
            .writeStream.format("delta")
            .option("checkpointLocation", str(tmp_path / "checkpoint"))
            .trigger(processingTime="300 milliseconds")
            .toTable("events")
        )
        try:
            with pytest.raises(RuntimeError, match="abort"), delta_pyspark.transaction(spark):
                spark.sql("INSERT INTO ledger VALUES (1, 10)")
                started = _versions(catalog)["events"] or 0
                time.sleep(4)
                assert (_versions(catalog)["events"] or 0) > started  # batches went on
                raise RuntimeError("abort")
            time.sleep(1)
            assert query.exception() is None
        finally:
            query.stop()
        values = [r.value for r in spark.table("events").collect()]
        assert values, "the stream wrote nothing"
        assert sorted(values) == list(range(len(values)))  # no row lost or doubled
        assert _rows(spark, "SELECT * FROM ledger") == []
    finally:
        spark.sql("DROP TABLE IF EXISTS events")
