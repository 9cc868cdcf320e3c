"""Multi-table transactions on both catalog backends: atomic commit of 3 tables with
failures injected at each step, conflicts and retries, crashes (SIGKILL) between staging
and ratifying and between ratifying and publishing, and processes running random
transactions checked against a serial replay."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import defaultdict
from graphlib import CycleError, TopologicalSorter
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from catalog_helpers import SCHEMA, add
from catalog_worker import COUNTER, TABLES

import delta_pyspark
from delta_pyspark.core.catalog.managed_tables import Catalog
from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.core.transaction.optimistic_transaction import Transaction
from delta_pyspark.core.transaction.table_definition import create_table
from delta_pyspark.exceptions import (
    ConcurrentDeleteDeleteException,
    DeltaError,
    DeltaUnsupportedOperationException,
)

HERE = Path(__file__).parent
SRC = Path(delta_pyspark.__file__).parent.parent
DOMAINS = {"delta.feature.domainMetadata": "supported"}


def open_catalog(url: str, tmp_path: Path, **kw: Any) -> Catalog:
    return Catalog.open(url, warehouse=str(tmp_path / "warehouse"), **kw)


def make_tables(url: str, tmp_path: Path) -> None:
    with open_catalog(url, tmp_path) as catalog:
        for name in TABLES:
            catalog.create_table(name, SCHEMA, configuration=DOMAINS)


def paths(catalog: Catalog) -> dict[str, list[str]]:
    return {
        n: sorted(s.files.column("path").to_pylist()) for n, s in catalog.snapshots(TABLES).items()
    }


def published(catalog: Catalog, name: str) -> list[int]:
    log_dir = Path(catalog.table(name).location, "_delta_log")
    return sorted(int(p.name[:20]) for p in log_dir.glob("*.json"))


def test_three_tables_commit_together(catalog_url: str, tmp_path: Path) -> None:
    make_tables(catalog_url, tmp_path)
    with open_catalog(catalog_url, tmp_path) as catalog:
        with catalog.transaction() as tx:
            for name, txn in zip(TABLES, tx.tables(*TABLES), strict=True):
                txn.add_files([add(f"{name}.parquet")])
        assert tx.committed is not None
        assert {n: s.version for n, s in tx.committed.items()} == dict.fromkeys(TABLES, 1)
        assert paths(catalog) == {n: [f"{n}.parquet"] for n in TABLES}
        infos = [catalog.delta_log(n).history(1)[0] for n in TABLES]
        ids = {i["operationParameters"]["multiTableTransaction"] for i in infos}
        assert ids == {tx.id}
        assert all(published(catalog, n) == [0, 1] for n in TABLES)
        with pytest.raises(DeltaError, match="already committed"):
            tx.commit()


def test_exception_in_the_block_commits_nothing(catalog_url: str, tmp_path: Path) -> None:
    make_tables(catalog_url, tmp_path)
    with open_catalog(catalog_url, tmp_path) as catalog:
        with pytest.raises(RuntimeError, match="user error"), catalog.transaction() as tx:
            tx.table("t0").add_files([add("x.parquet")])
            raise RuntimeError("user error")
        assert tx.committed is None
        assert paths(catalog) == {n: [] for n in TABLES}


def test_collected_commits_join_with_their_own_operations(catalog_url: str, tmp_path: Path) -> None:
    """An engine's commits made inside ``collecting()`` (here: plain ``Transaction.commit``
    calls, as the Spark layer makes) wait for the block's end and then commit together;
    the block's own reads see them, other threads do not; a filesystem table's commit in
    the block is refused unless allowed to commit alone."""
    make_tables(catalog_url, tmp_path)
    plain = DeltaLog(str(tmp_path / "plain"))
    create_table(plain, SCHEMA)
    with open_catalog(catalog_url, tmp_path) as catalog:
        with catalog.transaction().collecting() as tx:
            for i, name in enumerate(TABLES[:2]):
                log = catalog.delta_log(name)
                txn = Transaction(log, log.snapshot())
                txn.add_files([add(f"{name}.parquet")])
                returned = txn.commit(f"OP{i}", {"k": str(i)})
                # the table as the transaction now reads it: its pending next version
                assert returned.version == 1
                assert returned.files.column("path").to_pylist() == [f"{name}.parquet"]
            assert catalog.snapshot(TABLES[0]).files.column("path").to_pylist() == ["t0.parquet"]
            elsewhere: list[dict[str, list[str]]] = []
            reader = threading.Thread(target=lambda: elsewhere.append(paths(catalog)))
            reader.start()
            reader.join()
            assert elsewhere == [{n: [] for n in TABLES}]  # another thread: nothing yet
            alone = Transaction(plain, plain.snapshot())
            alone.add_files([add("p.parquet")])
            with pytest.raises(DeltaUnsupportedOperationException, match="not a catalog-managed"):
                alone.commit("WRITE")
            # a second statement on a table reads the first one's file and replaces it
            log = catalog.delta_log(TABLES[0])
            again = Transaction(log, log.snapshot())
            again.read_whole_table()
            again.remove_files([{"path": "t0.parquet", "deletionTimestamp": 1}])
            again.add_files([add("t0-again.parquet")])
            again.commit("OP2")
        assert paths(catalog) == {
            TABLES[0]: ["t0-again.parquet"],
            TABLES[1]: ["t1.parquet"],
            TABLES[2]: [],
        }
        infos = {n: catalog.delta_log(n).history(1)[0] for n in TABLES[:2]}
        assert [infos[n]["operation"] for n in TABLES[:2]] == ["TRANSACTION", "OP1"]
        assert infos[TABLES[0]]["operationParameters"]["statements"] == '["OP0","OP2"]'
        assert {i["operationParameters"]["multiTableTransaction"] for i in infos.values()} == {
            tx.id
        }
        # one commit per table: t0's first file never appears in its log
        t0 = catalog.delta_log(TABLES[0])
        assert [a["path"] for _, c in t0.commits(1) for a in c.adds] == ["t0-again.parquet"]
        assert [r["path"] for _, c in t0.commits(1) for r in c.removes] == []
        assert plain.snapshot().version == 0
        # allowed explicitly, a filesystem table's commit in the block commits alone, at once
        with catalog.transaction(others_alone=True).collecting():
            alone = Transaction(plain, plain.snapshot())
            alone.add_files([add("p.parquet")])
            assert alone.commit("WRITE").version == 1
        # an exception in the block commits none of the collected commits
        with pytest.raises(RuntimeError), catalog.transaction().collecting():
            log = catalog.delta_log(TABLES[2])
            txn = Transaction(log, log.snapshot())
            txn.add_files([add("late.parquet")])
            txn.commit("WRITE")
            raise RuntimeError("abort")
        assert catalog.snapshot(TABLES[2]).version == 0


STEPS = [("stage", "t0"), ("stage", "t1"), ("stage", "t2"), ("ratify", None)]


@pytest.mark.parametrize(("step", "table"), STEPS)
def test_failure_before_ratification_leaves_nothing(
    catalog_url: str, tmp_path: Path, step: str, table: str | None
) -> None:
    make_tables(catalog_url, tmp_path)

    def fail(name: str, at: str | None) -> None:
        if (name, at) == (step, table):
            raise RuntimeError(f"injected at {step} {table}")

    with open_catalog(catalog_url, tmp_path) as catalog:
        tx = catalog.transaction(fail)
        for name, txn in zip(TABLES, tx.tables(*TABLES), strict=True):
            txn.add_files([add(f"{name}.parquet")])
        with pytest.raises(RuntimeError, match="injected"):
            tx.commit()
        assert {e.name: e.latest_version for e in catalog.tables()} == dict.fromkeys(TABLES, 0)
        assert paths(catalog) == {n: [] for n in TABLES}
        assert all(published(catalog, n) == [0] for n in TABLES)
        # the tables are not blocked: the next transaction takes version 1
        with catalog.transaction() as again:
            for txn in again.tables(*TABLES):
                txn.add_files([add("next.parquet")])
        assert paths(catalog) == {n: ["next.parquet"] for n in TABLES}


@pytest.mark.parametrize("table", TABLES)
def test_failure_while_publishing_keeps_the_commit(
    catalog_url: str, tmp_path: Path, table: str
) -> None:
    make_tables(catalog_url, tmp_path)

    def fail(name: str, at: str | None) -> None:
        if (name, at) == ("publish", table):
            raise OSError("injected publish failure")

    with open_catalog(catalog_url, tmp_path) as catalog:
        tx = catalog.transaction(fail)
        for name, txn in zip(TABLES, tx.tables(*TABLES), strict=True):
            txn.add_files([add(f"{name}.parquet")])
        committed = tx.commit()  # committed: a publish failure is not the commit's
        assert {n: s.version for n, s in committed.items()} == dict.fromkeys(TABLES, 1)
        assert paths(catalog) == {n: [f"{n}.parquet"] for n in TABLES}
        assert published(catalog, table) == [0]
        assert all(published(catalog, n) == [0, 1] for n in TABLES if n != table)
        assert catalog.publish(table) == [1]
        assert published(catalog, table) == [0, 1]
        assert paths(catalog) == {n: [f"{n}.parquet"] for n in TABLES}


def test_conflict_in_one_table_aborts_all(catalog_url: str, tmp_path: Path) -> None:
    make_tables(catalog_url, tmp_path)
    with open_catalog(catalog_url, tmp_path) as catalog:
        with catalog.transaction() as setup:
            for txn in setup.tables(*TABLES):
                txn.add_files([add("base.parquet")])
        tx = catalog.transaction()
        for txn in tx.tables(*TABLES):
            txn.remove_files([{"path": "base.parquet"}])
        other = catalog.begin("t1")
        other.remove_files([{"path": "base.parquet"}])
        other.commit("DELETE")
        with pytest.raises(ConcurrentDeleteDeleteException, match=r"base\.parquet"):
            tx.commit("DELETE")
        assert {e.name: e.latest_version for e in catalog.tables()} == {"t0": 1, "t1": 2, "t2": 1}
        assert paths(catalog) == {"t0": ["base.parquet"], "t1": [], "t2": ["base.parquet"]}


def test_lost_race_in_one_table_is_retried(catalog_url: str, tmp_path: Path) -> None:
    make_tables(catalog_url, tmp_path)
    with open_catalog(catalog_url, tmp_path) as catalog:
        tx = catalog.transaction()
        for name, txn in zip(TABLES, tx.tables(*TABLES), strict=True):
            txn.add_files([add(f"tx-{name}.parquet")])
        other = catalog.begin("t2")
        other.add_files([add("other.parquet")])
        other.commit("WRITE")
        committed = tx.commit()
        assert {n: s.version for n, s in committed.items()} == {"t0": 1, "t1": 1, "t2": 2}
        assert tx.table("t2").attempts == 2 and tx.table("t0").attempts == 1
        assert paths(catalog) == {
            "t0": ["tx-t0.parquet"],
            "t1": ["tx-t1.parquet"],
            "t2": ["other.parquet", "tx-t2.parquet"],
        }


def _child_env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), str(HERE), str(HERE.parent)])}


def _kill_at(url: str, tmp_path: Path, step: str) -> None:
    child = subprocess.Popen(
        [
            sys.executable,
            str(HERE / "catalog_worker.py"),
            "pause",
            url,
            str(tmp_path / "warehouse"),
            step,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_child_env(),
    )
    assert child.stdout is not None
    line = child.stdout.readline()
    if line.strip() != f"AT {step}":
        child.kill()
        raise AssertionError(f"child did not reach {step}: {line!r} {child.stderr.read()}")  # type: ignore[union-attr]
    os.kill(child.pid, signal.SIGKILL)
    assert child.wait(timeout=30) == -signal.SIGKILL


def test_crash_between_staging_and_ratifying(catalog_url: str, tmp_path: Path) -> None:
    make_tables(catalog_url, tmp_path)
    _kill_at(catalog_url, tmp_path, "ratify")
    with open_catalog(catalog_url, tmp_path) as catalog:
        for name in TABLES:
            staged = Path(catalog.table(name).location, "_delta_log", "_staged_commits")
            assert len(list(staged.glob(f"{1:020d}.*.json"))) == 1  # staged, never ratified
        assert {e.name: e.latest_version for e in catalog.tables()} == dict.fromkeys(TABLES, 0)
        assert paths(catalog) == {n: [] for n in TABLES}
        assert all(catalog.publish(n) == [] for n in TABLES)
        assert all(published(catalog, n) == [0] for n in TABLES)


def test_crash_between_ratifying_and_publishing(catalog_url: str, tmp_path: Path) -> None:
    make_tables(catalog_url, tmp_path)
    _kill_at(catalog_url, tmp_path, "publish")
    with open_catalog(catalog_url, tmp_path) as catalog:
        assert {e.name: e.latest_version for e in catalog.tables()} == dict.fromkeys(TABLES, 1)
        expected = {n: [f"crash-{n}.parquet"] for n in TABLES}
        assert paths(catalog) == expected  # visible through the catalog, all three
        assert all(published(catalog, n) == [0] for n in TABLES)
        assert all(catalog.publish(n) == [1] for n in TABLES)
        assert all(published(catalog, n) == [0, 1] for n in TABLES)
        assert paths(catalog) == expected


def _check_atomic_visibility(visible: dict[str, list[str]]) -> None:
    """Every transaction's file is in all of its tables or in none."""
    for name, files in visible.items():
        for f in files:
            tx_id = f.split("@")[0]
            for other in tx_id.split("-")[2].split("+"):
                assert f"{tx_id}@{other}.parquet" in visible[other], (tx_id, name, visible)


@pytest.mark.long  # random transactions on both catalogs: CI's second step
def test_random_transactions_match_a_serial_replay(catalog_url: str, tmp_path: Path) -> None:
    make_tables(catalog_url, tmp_path)
    out = tmp_path / "outcomes.jsonl"
    workers = [
        subprocess.Popen(
            [
                sys.executable,
                str(HERE / "catalog_worker.py"),
                "random",
                catalog_url,
                str(tmp_path / "warehouse"),
                str(seed),
                "5",
                str(out),
            ],
            stderr=subprocess.PIPE,
            env=_child_env(),
        )
        for seed in range(8)
    ]
    reads = 0
    with open_catalog(catalog_url, tmp_path) as catalog:
        while any(w.poll() is None for w in workers):
            _check_atomic_visibility(paths(catalog))  # readers while writers run
            reads += 1
            time.sleep(0.05)
        for w in workers:
            assert w.wait() == 0, w.stderr.read()  # type: ignore[union-attr]
        outcomes = [json.loads(line) for line in out.read_text().splitlines()]
        assert len(outcomes) == 40 and reads > 0
        done = [o for o in outcomes if o["committed"]]
        assert done, "no transaction committed"
        final = paths(catalog)
        _check_atomic_visibility(final)
        # per table, its commits in version order; each committed transaction is one of them
        order: dict[str, list[str]] = {}
        for name in TABLES:
            log = catalog.delta_log(name)
            records = log.commit_records(1)
            order[name] = [r.commit_info["operationParameters"]["oracleTx"] for r in records]
            # no lost update: the counter at version v was read at v - 1 and incremented
            for r in records:
                snap = log.snapshot(r.version)
                value = json.loads(snap.domain_metadata[COUNTER].configuration)["value"]
                assert value == r.version, (name, r.version, value)
        by_tx = {o["tx"]: o for o in done}
        for name, txs in order.items():
            assert sorted(txs) == sorted(t for t, o in by_tx.items() if name in o["tables"])
            assert [by_tx[t]["versions"][name] for t in txs] == list(range(1, len(txs) + 1))
        assert not {o["tx"] for o in outcomes if not o["committed"]} & {
            t for txs in order.values() for t in txs
        }
        # the per-table orders must agree on one serial order, which replays to the state
        graph: dict[str, set[str]] = defaultdict(set)
        for txs in order.values():
            for before, after in pairwise(txs):
                graph[after].add(before)
        try:
            serial = list(TopologicalSorter({t: graph[t] for t in by_tx}).static_order())
        except CycleError as e:
            raise AssertionError(f"no serial order exists: {e}") from None
        replay: dict[str, list[str]] = {n: [] for n in TABLES}
        counters = dict.fromkeys(TABLES, 0)
        for t in serial:
            for name in by_tx[t]["tables"]:
                replay[name].append(f"{t}@{name}.parquet")
                counters[name] += 1
        assert final == {n: sorted(files) for n, files in replay.items()}
        assert {e.name: e.latest_version for e in catalog.tables()} == counters


def test_only_catalog_managed_tables_take_part(catalog_url: str, tmp_path: Path) -> None:
    make_tables(catalog_url, tmp_path)
    with open_catalog(catalog_url, tmp_path) as catalog:
        catalog.create_table("plain", SCHEMA, catalog_managed=False)
        tx = catalog.transaction()
        with pytest.raises(DeltaUnsupportedOperationException, match="'plain' is not catalog"):
            tx.tables("t0", "plain")
        assert catalog.transaction().commit() == {}  # nothing to commit
        assert {e.name: e.latest_version for e in catalog.tables()} == {
            "plain": None,
            **dict.fromkeys(TABLES, 0),
        }
