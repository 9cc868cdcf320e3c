"""Transactions over a catalog's tables from Spark (``delta_pyspark.transaction`` and SQL's
BEGIN / COMMIT / ROLLBACK), on SQLite and PostgreSQL: statements see the transaction's own
earlier writes, every table is read at one catalog state, all tables commit as one or
nothing is left (files included), and only the opening thread takes part."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import transfer_worker

import delta_pyspark
from delta_pyspark.core.catalog.managed_tables import Catalog
from delta_pyspark.core.snapshot.delta_log import DeltaLog
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


@pytest.mark.long  # CI's second step: the quick run keeps the cases above
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


def test_one_query_reads_its_tables_at_one_catalog_state(
    spark: Any, catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Outside a transaction too: a two-table transaction commits between the loads of the
    two tables one query reads, and the query still sees it wholly or not at all."""
    spark.sql("INSERT INTO ledger VALUES (1, 10)")
    spark.sql("INSERT INTO audit VALUES (1)")
    loaded: list[str] = []
    original = DeltaLog._load

    def load_then_commit(log: DeltaLog, version: int | None) -> Any:
        snapshot = original(log, version)
        if not loaded and log.coordinator is not None:
            loaded.append(log.table_root)
            with catalog.transaction() as tx:  # one more row in each table
                for name, row in (("ledger", {"id": 2, "amount": 20}), ("audit", {"id": 2})):
                    root = catalog.table(name).location
                    pq.write_table(pa.Table.from_pylist([row]), f"{root}/late-{name}.parquet")
                    size = Path(root, f"late-{name}.parquet").stat().st_size
                    tx.table(name).add_files([_add(f"late-{name}.parquet", size)])
        return snapshot

    monkeypatch.setattr(DeltaLog, "_load", load_then_commit)
    both = "SELECT (SELECT count(*) FROM ledger) AS l, (SELECT count(*) FROM audit) AS a"
    first = spark.sql(both).first()
    assert loaded, "no table was loaded during the query"
    assert first is not None and (first.l, first.a) == (1, 1)  # the state before the commit
    monkeypatch.undo()
    after = spark.sql(both).first()
    assert after is not None and (after.l, after.a) == (2, 2)


def _add(path: str, size: int) -> Any:
    return {
        "path": path,
        "partitionValues": {},
        "size": size,
        "modificationTime": 1,
        "dataChange": True,
    }


@pytest.mark.long  # CI's second step: the quick run keeps the cases above
def test_deletion_vectors_on_the_transactions_own_files(spark: Any, catalog: Catalog) -> None:
    """A DELETE marks rows of a file the same transaction wrote: the one commit adds that
    file with its vector and removes nothing; a rollback deletes the file and the vector."""
    spark.sql(
        "CREATE TABLE dv (id BIGINT) USING delta TBLPROPERTIES ("
        "'delta.feature.catalogManaged' = 'supported', 'delta.enableDeletionVectors' = 'true')"
    )
    try:
        location = Path(catalog.table("dv").location)
        spark.sql("INSERT INTO dv VALUES (0)")
        with delta_pyspark.transaction(spark):
            spark.range(1, 4).coalesce(1).write.format("delta").mode("append").saveAsTable("dv")
            spark.sql("DELETE FROM dv WHERE id = 2")
            assert _rows(spark, "SELECT id FROM dv") == [(0,), (1,), (3,)]
        assert _rows(spark, "SELECT id FROM dv") == [(0,), (1,), (3,)]
        version = catalog.snapshot("dv").version
        (commit,) = [c for v, c in catalog.delta_log("dv").commits(version) if v == version]
        assert commit.removes == []
        (added,) = commit.adds
        assert added["deletionVector"]["cardinality"] == 1
        # the same statements rolled back: no file of theirs stays
        files = {p.name for p in location.iterdir() if p.is_file()}
        with pytest.raises(RuntimeError), delta_pyspark.transaction(spark):
            spark.range(5, 8).coalesce(1).write.format("delta").mode("append").saveAsTable("dv")
            spark.sql("DELETE FROM dv WHERE id = 6")
            assert _rows(spark, "SELECT id FROM dv") == [(0,), (1,), (3,), (5,), (7,)]
            raise RuntimeError("roll back")
        assert {p.name for p in location.iterdir() if p.is_file()} == files
    finally:
        spark.sql("DROP TABLE IF EXISTS dv")


@pytest.mark.long  # CI's second step: the quick run keeps the cases above
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


@pytest.mark.long  # CI's second step: the quick run keeps the cases above
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


@pytest.mark.long  # CI's second step: the quick run keeps the cases above
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


ACCOUNTS, OPENING = 4, 100


def _balances(catalog: Catalog, snapshots: dict[str, Any]) -> dict[tuple[str, int], int]:
    out = {}
    for name, snapshot in snapshots.items():
        for path in snapshot.files.column("path").to_pylist():
            row = pq.read_table(f"{snapshot.table_root}/{path}").to_pylist()[0]
            out[(name, row["account"])] = row["balance"]
    return out


def _start_worker(catalog_url: str, tmp_path: Path, seed: int) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [
            sys.executable,
            str(Path(__file__).parent / "transfer_worker.py"),
            catalog_url,
            str(tmp_path / "warehouse"),
            str(seed),
            str(tmp_path / "intents.jsonl"),
        ],
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(Path(delta_pyspark.__file__).parent.parent)},
    )


@pytest.mark.long  # a stress run with kills, on both catalogs: CI's second step
def test_transfers_keep_the_sum_in_every_read(spark: Any, catalog: Catalog, tmp_path: Path) -> None:
    """Worker processes move amounts between accounts of two tables in multi-statement
    transactions and are SIGKILLed at random; every read through the catalog and every
    Spark query over both tables sees the opening total, and replaying the committed
    transactions serially gives the final balances."""
    for name in ("checking", "savings"):
        spark.sql(f"CREATE TABLE {name} (account BIGINT, balance BIGINT) USING delta {MANAGED}")
    try:
        with catalog.transaction() as opening:
            for name in ("checking", "savings"):
                root = catalog.table(name).location
                files = [transfer_worker.account_file(root, a, OPENING) for a in range(ACCOUNTS)]
                opening.table(name).add_files(files)  # type: ignore[arg-type]
        total = 2 * ACCOUNTS * OPENING
        rng = random.Random(7)
        workers = [_start_worker(catalog.backend.url, tmp_path, seed) for seed in range(3)]
        killed = 0
        try:
            for round_ in range(16):
                snapshots = catalog.snapshots(["checking", "savings"])
                assert sum(_balances(catalog, snapshots).values()) == total
                both = spark.sql(
                    "SELECT (SELECT sum(balance) FROM checking) + (SELECT sum(balance) FROM "
                    "savings) AS total"
                ).first()
                assert both is not None and both.total == total
                if round_ % 4 == 3:  # a worker dies mid-flight; another takes its place
                    victim = workers.pop(rng.randrange(len(workers)))
                    time.sleep(rng.random())
                    victim.send_signal(signal.SIGKILL)
                    assert victim.wait() == -signal.SIGKILL, victim.stderr.read()  # type: ignore[union-attr]
                    killed += 1
                    workers.append(_start_worker(catalog.backend.url, tmp_path, 100 + killed))
        finally:
            for w in workers:
                w.kill()
                w.wait()
        for w in workers:
            assert w.returncode == -signal.SIGKILL, w.stderr.read()  # type: ignore[union-attr]
        # the log's order of the committed transactions, per table; one serial order for both
        order = {
            name: [
                r.commit_info["operationParameters"]["multiTableTransaction"]
                for r in catalog.delta_log(name).commit_records(2)
            ]
            for name in ("checking", "savings")
        }
        assert order["checking"] == order["savings"]  # every transaction wrote both
        assert len(order["checking"]) > 10, "too few transactions committed to test anything"
        intents = {}
        for line in (tmp_path / "intents.jsonl").read_text().splitlines():
            if line.endswith("}"):  # a killed worker may leave half a line
                intent = json.loads(line)
                intents[intent["tx"]] = intent["moves"]
        replay = {(n, a): OPENING for n in ("checking", "savings") for a in range(ACCOUNTS)}
        for tx_id in order["checking"]:
            for name, account, delta in intents[tx_id]:
                replay[(name, account)] += delta
        final = catalog.snapshots(["checking", "savings"])
        assert _balances(catalog, final) == replay
        rows = spark.sql("SELECT account, balance FROM checking").collect()
        assert {("checking", r.account): r.balance for r in rows} == {
            k: v for k, v in replay.items() if k[0] == "checking"
        }
    finally:
        for name in ("checking", "savings"):
            spark.sql(f"DROP TABLE IF EXISTS {name}")
