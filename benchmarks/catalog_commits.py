"""Commits per second through a catalog vs the filesystem, and multi-table latency.

Three commit paths, each with 1, 4 and 8 writer processes (multiprocessing 'spawn'),
every writer making K blind-append commits of one log-only ``add`` (no data file is
written: this measures the commit path, not Parquet):

* ``filesystem``: put-if-absent of ``<v>.json`` (``Transaction`` on a path table);
* ``sqlite``: a catalog-managed table on the SQLite catalog (stage, ratify, publish);
* ``postgres``: the same on a PostgreSQL catalog: a throwaway server started from
  ``initdb``/``pg_ctl`` on PATH (as the tests do; skipped when they are missing).

Each writer loads the latest snapshot, commits, and retries on a lost version as usual.
Throughput = total commits / wall time from release to the last writer finishing. A
run is valid when the final version equals the number of commits. Then the latency of
a 3-table transaction (one add per table, published) on each catalog, sequentially.
Last, committed multi-statement transactions per second on each catalog with 1 and 8
writer processes: each transaction is three statements (two appends to ``m0``, one to
``m1``) collected and committed as one; the ratio is to the single-table commits/s of
the same catalog and writer count above (the baseline: one commit of one table).

    python -m benchmarks catalog_commits
    DELTA_BENCH_COMMITS=50 python -m benchmarks.catalog_commits --writers 1 4
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

DEFAULT_COMMITS = 20
DEFAULT_WRITERS = (1, 4, 8)
MULTI_TABLE_COMMITS = 30
SCHEMA = json.dumps(
    {"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}}]}
)
CONFIGURATION = {"delta.checkpointInterval": "10"}


def _add(path: str) -> dict[str, Any]:
    return {
        "path": path,
        "partitionValues": {},
        "size": 1,
        "modificationTime": 1,
        "dataChange": True,
    }


def _writer(kind: str, target: str, warehouse: str, writer: int, commits: int, go: Any) -> int:
    """K commits; returns the number of attempts beyond one per commit."""
    from delta_pyspark.core.catalog.managed_tables import Catalog
    from delta_pyspark.core.snapshot.delta_log import DeltaLog
    from delta_pyspark.core.transaction.optimistic_transaction import Transaction

    catalog = None if kind == "filesystem" else Catalog.open(target, warehouse=warehouse)
    go.wait()
    retries = 0
    for i in range(commits):
        if catalog is None:
            log = DeltaLog(target)
            txn = Transaction(log, log.snapshot())
        else:
            txn = catalog.begin("bench")
        txn.add_files([_add(f"w{writer}-{i}.parquet")])
        txn.commit("WRITE")
        retries += txn.attempts - 1
    if catalog is not None:
        catalog.close()
    return retries


def _race(
    writers: int, work: Callable[..., int], arguments: Callable[[int], tuple[Any, ...]]
) -> tuple[int, float]:
    """Run ``work(*arguments(w), go)`` in ``writers`` spawned processes, released together
    once all have started; the sum of their results and the seconds from release to the end."""
    ctx = mp.get_context("spawn")
    go = ctx.Manager().Event()
    with ctx.Pool(writers) as pool:
        pending = [pool.apply_async(work, (*arguments(w), go)) for w in range(writers)]
        time.sleep(1.0)  # let every writer import and connect
        start = time.perf_counter()
        go.set()
        total = sum(p.get() for p in pending)
        return total, time.perf_counter() - start


def _transaction_writer(url: str, warehouse: str, writer: int, n: int, go: Any) -> int:
    """N multi-statement transactions (retried on a conflict); returns the retries."""
    from delta_pyspark.core.catalog.managed_tables import Catalog
    from delta_pyspark.core.transaction.optimistic_transaction import Transaction
    from delta_pyspark.exceptions import DeltaConcurrentModificationException

    retries = 0
    with Catalog.open(url, warehouse=warehouse) as catalog:
        logs = {name: catalog.delta_log(name) for name in ("m0", "m1")}
        go.wait()
        for i in range(n):
            while True:
                try:
                    with catalog.transaction().collecting():
                        for step, name in enumerate(("m0", "m0", "m1")):
                            txn = Transaction(logs[name], logs[name].snapshot())
                            txn.add_files([_add(f"w{writer}-{i}-{step}.parquet")])
                            txn.commit("WRITE")
                    break
                except DeltaConcurrentModificationException:
                    retries += 1
    return retries


def _transactions(kind: str, url: str, warehouse: str, writers: int, n: int) -> dict[str, Any]:
    from delta_pyspark.core.catalog.managed_tables import Catalog

    with Catalog.open(url, warehouse=warehouse) as catalog:
        for name in ("m0", "m1"):
            catalog.create_table(name, SCHEMA, configuration=CONFIGURATION)
    retries, elapsed = _race(writers, _transaction_writer, lambda w: (url, warehouse, w, n))
    with Catalog.open(url, warehouse=warehouse) as catalog:
        files = {n: len(s.files) for n, s in catalog.snapshots(["m0", "m1"]).items()}
    total = writers * n
    return {
        "kind": kind,
        "writers": writers,
        "transactions": total,
        "seconds": round(elapsed, 3),
        "transactions_per_s": round(total / elapsed, 1),
        "retries": retries,
        "valid": files == {"m0": 2 * total, "m1": total},
    }


def _setup(kind: str, target: str, warehouse: str) -> str:
    """Create the table; returns the root whose last version is checked."""
    from delta_pyspark.core.catalog.managed_tables import Catalog
    from delta_pyspark.core.snapshot.delta_log import DeltaLog
    from delta_pyspark.core.transaction.table_definition import create_table

    if kind == "filesystem":
        create_table(DeltaLog(target), SCHEMA, [], CONFIGURATION)
        return target
    with Catalog.open(target, warehouse=warehouse) as catalog:
        catalog.create_table("bench", SCHEMA, configuration=CONFIGURATION)
        return catalog.table("bench").location


def _throughput(
    kind: str, target: str, warehouse: str, writers: int, commits: int
) -> dict[str, Any]:
    root = _setup(kind, target, warehouse)
    retries, elapsed = _race(writers, _writer, lambda w: (kind, target, warehouse, w, commits))
    from delta_pyspark.core.catalog.managed_tables import Catalog
    from delta_pyspark.core.snapshot.delta_log import DeltaLog

    if kind == "filesystem":
        version = DeltaLog(root).snapshot().version
    else:
        with Catalog.open(target, warehouse=warehouse) as catalog:
            version = catalog.snapshot("bench").version
    total = writers * commits
    return {
        "kind": kind,
        "writers": writers,
        "commits": total,
        "seconds": round(elapsed, 3),
        "commits_per_s": round(total / elapsed, 1),
        "retried_attempts": retries,
        "valid": version == total,
    }


def _multi_table_latency(url: str, warehouse: str, n: int) -> dict[str, Any]:
    from delta_pyspark.core.catalog.managed_tables import Catalog

    names = ("m0", "m1", "m2")
    with Catalog.open(url, warehouse=warehouse) as catalog:
        for name in names:
            catalog.create_table(name, SCHEMA, configuration=CONFIGURATION)
        times = []
        for i in range(n):
            start = time.perf_counter()
            with catalog.transaction() as tx:
                for txn in tx.tables(*names):
                    txn.add_files([_add(f"tx{i}.parquet")])
            times.append((time.perf_counter() - start) * 1000)
        versions = {n: s.version for n, s in catalog.snapshots(names).items()}
    return {
        "transactions": n,
        "median_ms": round(statistics.median(times), 1),
        "p90_ms": round(sorted(times)[int(len(times) * 0.9)], 1),
        "valid": set(versions.values()) == {n},
    }


@contextmanager
def _postgres() -> Iterator[Any]:
    """A throwaway server (``new_database()`` gives a fresh database URL), or None."""
    tests = Path(__file__).resolve().parent.parent / "tests"
    sys.path.insert(0, str(tests))  # the test suite's throwaway-server helper
    from postgres_server import pg_binaries, start_postgres

    if pg_binaries() is None:
        yield None
        return
    root = Path(tempfile.mkdtemp(prefix="delta-bench-pg-"))
    try:
        yield from start_postgres(root)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--writers", type=int, nargs="+", default=list(DEFAULT_WRITERS))
    args = parser.parse_args([] if argv is None else argv)
    commits = int(os.environ.get("DELTA_BENCH_COMMITS", DEFAULT_COMMITS))
    scratch = Path(tempfile.mkdtemp(prefix="delta-bench-catalog-"))
    results: list[dict[str, Any]] = []
    latency: dict[str, Any] = {}
    transactions: list[dict[str, Any]] = []
    try:
        with _postgres() as pg:
            for writers in args.writers:
                run = scratch / f"w{writers}"
                targets = {
                    "filesystem": str(run / "fs"),
                    "sqlite": f"sqlite:///{run / 'sqlite' / 'catalog.db'}",
                }
                if pg is not None:
                    targets["postgres"] = pg.new_database()
                for kind, target in targets.items():
                    warehouse = str(run / f"{kind}-warehouse")
                    results.append(_throughput(kind, target, warehouse, writers, commits))
                    print(json.dumps(results[-1]), flush=True)
            catalogs = {"sqlite": f"sqlite:///{scratch / 'multi' / 'catalog.db'}"}
            if pg is not None:
                catalogs["postgres"] = pg.new_database()
            for kind, url in catalogs.items():
                latency[kind] = _multi_table_latency(
                    url, str(scratch / f"multi-{kind}"), MULTI_TABLE_COMMITS
                )
                print(json.dumps({"three_table_transaction": kind, **latency[kind]}), flush=True)
            for kind in catalogs:
                for writers in (1, 8):
                    run = scratch / f"tx-{kind}-{writers}"
                    fresh = pg.new_database() if kind == "postgres" else None
                    url = fresh or f"sqlite:///{run / 'catalog.db'}"
                    transactions.append(
                        _transactions(kind, url, str(run / "warehouse"), writers, commits)
                    )
                    print(json.dumps(transactions[-1]), flush=True)
            if pg is None:
                print("postgres: skipped (no initdb/pg_ctl on PATH)")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    _report(results, latency, transactions)


def _report(
    results: list[dict[str, Any]], latency: dict[str, Any], transactions: list[dict[str, Any]]
) -> None:
    from rich.console import Console
    from rich.table import Table

    t = Table(title="commits/s (blind appends, log-only adds)")
    for col in ("kind", "writers", "commits", "seconds", "commits/s", "retries", "valid"):
        t.add_column(col)
    for r in results:
        t.add_row(
            r["kind"],
            str(r["writers"]),
            str(r["commits"]),
            str(r["seconds"]),
            str(r["commits_per_s"]),
            str(r["retried_attempts"]),
            str(r["valid"]),
        )
    console = Console()
    console.print(t)
    m = Table(title="3-table transaction latency (sequential)")
    for col in ("catalog", "transactions", "median ms", "p90 ms", "valid"):
        m.add_column(col)
    for kind, r in latency.items():
        m.add_row(
            kind, str(r["transactions"]), str(r["median_ms"]), str(r["p90_ms"]), str(r["valid"])
        )
    console.print(m)
    single = {(r["kind"], r["writers"]): r["commits_per_s"] for r in results}
    x = Table(title="committed 3-statement, 2-table transactions/s (vs one-table commits/s)")
    for col in ("catalog", "writers", "transactions", "tx/s", "ratio", "retries", "valid"):
        x.add_column(col)
    for r in transactions:
        base = single.get((r["kind"], r["writers"]))
        ratio = f"{r['transactions_per_s'] / base:.2f}" if base else "-"
        x.add_row(
            r["kind"],
            str(r["writers"]),
            str(r["transactions"]),
            str(r["transactions_per_s"]),
            ratio,
            str(r["retries"]),
            str(r["valid"]),
        )
    console.print(x)


if __name__ == "__main__":
    main(sys.argv[1:])
