"""A child process of the transfer test: moves amounts between accounts of two catalog
tables, ``checking`` and ``savings`` (columns ``account``, ``balance``; one Parquet file
per account), in multi-statement transactions, until killed.

Run as ``python transfer_worker.py URL WAREHOUSE SEED INTENTS``. Each transaction is three
statements, each reading what it changes from the table as the transaction sees it: take
``x`` from a checking account, add ``x`` to a savings account, then move ``y`` between two
checking accounts (the third statement reads the first one's pending write when it picks
the same account). Before committing, the worker appends the transaction's id and moves to
``INTENTS``; the catalog's log says which ones committed. Only the core is used (pyarrow
writes the files): no Spark, so several workers fit on a small machine.
"""

from __future__ import annotations

import json
import random
import sys
import uuid
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from delta_pyspark.core.catalog.managed_tables import Catalog
from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.core.transaction.optimistic_transaction import Transaction
from delta_pyspark.exceptions import DeltaConcurrentModificationException

SCHEMA = pa.schema([("account", pa.int64()), ("balance", pa.int64())])


def account_file(root: str, account: int, balance: int) -> dict[str, object]:
    """Write the account's one-row file; its add action."""
    name = f"a{account}-{uuid.uuid4().hex}.parquet"
    pq.write_table(pa.table({"account": [account], "balance": [balance]}, SCHEMA), f"{root}/{name}")
    stats = {
        "numRecords": 1,
        "minValues": {"account": account, "balance": balance},
        "maxValues": {"account": account, "balance": balance},
        "nullCount": {"account": 0, "balance": 0},
    }
    return {
        "path": name,
        "partitionValues": {},
        "size": Path(root, name).stat().st_size,
        "modificationTime": 1,
        "dataChange": True,
        "stats": json.dumps(stats),
    }


def move(log: DeltaLog, changes: dict[int, int], operation: str) -> None:
    """One statement: add ``changes[account]`` to each account's balance, read from the
    table as the running transaction sees it."""
    txn = Transaction(log, log.snapshot())
    assert txn.snapshot is not None
    files = txn.snapshot.files
    paths = files.column("path").to_pylist()
    rows = []
    for account, delta in changes.items():
        (index,) = [i for i, p in enumerate(paths) if p.startswith(f"a{account}-")]
        rows.append(index)
        balance = pq.read_table(f"{log.table_root}/{paths[index]}").column("balance")[0].as_py()
        txn.remove_files([{"path": paths[index], "deletionTimestamp": 1}])
        txn.add_files([account_file(log.table_root, account, balance + delta)])  # type: ignore[list-item]
    txn.read_files(files.take(rows))
    txn.commit(operation)


def run(url: str, warehouse: str, seed: int, intents: str) -> None:
    rng = random.Random(seed)
    with Catalog.open(url, warehouse=warehouse) as catalog, open(intents, "a") as out:
        checking, savings = catalog.delta_log("checking"), catalog.delta_log("savings")
        accounts = len(catalog.snapshot("checking").files)
        while True:
            x, y = rng.randint(1, 9), rng.randint(1, 9)
            a, b = rng.randrange(accounts), rng.randrange(accounts)
            c, d = rng.sample(range(accounts), 2)
            tx = catalog.transaction()
            moves = [
                ["checking", a, -x],
                ["savings", b, x],
                ["checking", c, -y],
                ["checking", d, y],
            ]
            out.write(json.dumps({"tx": tx.id, "moves": moves}) + "\n")
            out.flush()
            try:
                with tx.collecting():
                    move(checking, {a: -x}, "TRANSFER OUT")
                    move(savings, {b: x}, "TRANSFER IN")
                    move(checking, {c: -y, d: y}, "REBALANCE")
            except DeltaConcurrentModificationException:
                pass


if __name__ == "__main__":
    run(sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4])
