"""Child processes of the multi-table tests (run as ``python catalog_worker.py MODE ...``).

``pause URL WAREHOUSE STEP``: a 3-table transaction that stops at ``STEP`` (printing
``AT STEP``) so the parent can SIGKILL it there.
``random URL WAREHOUSE SEED COUNT OUT``: random read-modify-write multi-table
transactions; each outcome is appended to ``OUT`` as a JSON line.
"""

from __future__ import annotations

import json
import random
import sys
import time
from typing import Any

from catalog_helpers import add

from delta_pyspark.core.catalog.managed_tables import Catalog
from delta_pyspark.core.protocol.actions import DomainMetadata
from delta_pyspark.exceptions import DeltaConcurrentModificationException

TABLES = ("t0", "t1", "t2")
COUNTER = "oracle.counter"


def counter_of(txn: Any) -> int:
    domain = txn.snapshot.domain_metadata.get(COUNTER)
    return int(json.loads(domain.configuration)["value"]) if domain else 0


def pause(url: str, warehouse: str, step: str) -> None:
    def on_step(name: str, table: str | None) -> None:
        if name == step:
            print(f"AT {step}", flush=True)
            time.sleep(120)

    with Catalog.open(url, warehouse=warehouse) as catalog:
        tx = catalog.transaction(on_step)
        for txn in tx.tables(*TABLES):
            txn.add_files([add(f"crash-{txn.log.table_root.rsplit('/', 1)[-1]}.parquet")])
        tx.commit("WRITE")


def run_random(url: str, warehouse: str, seed: int, count: int, out: str) -> None:
    rng = random.Random(seed)
    with Catalog.open(url, warehouse=warehouse) as catalog, open(out, "a") as results:
        for i in range(count):
            chosen = sorted(rng.sample(TABLES, rng.randint(1, len(TABLES))))
            tx_id = f"w{seed}-{i}-{'+'.join(chosen)}"
            tx = catalog.transaction()
            for name, txn in zip(chosen, tx.tables(*chosen), strict=True):
                value = counter_of(txn) + 1
                txn.set_domain_metadata(
                    DomainMetadata(COUNTER, json.dumps({"value": value, "tx": tx_id}))
                )
                txn.add_files([add(f"{tx_id}@{name}.parquet")])
            try:
                committed = tx.commit("WRITE", {"oracleTx": tx_id})
            except DeltaConcurrentModificationException as e:
                outcome = {"tx": tx_id, "tables": chosen, "committed": False, "why": str(e)}
            else:
                versions = {n: s.version for n, s in committed.items()}
                outcome = {"tx": tx_id, "tables": chosen, "committed": True, "versions": versions}
            results.write(json.dumps(outcome) + "\n")
            results.flush()


if __name__ == "__main__":
    mode, *args = sys.argv[1:]
    if mode == "pause":
        pause(*args)
    else:
        run_random(args[0], args[1], int(args[2]), int(args[3]), args[4])
