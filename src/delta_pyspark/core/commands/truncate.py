"""TRUNCATE TABLE: every file of the table removed in one new version, as delta-spark's
``TruncateDeltaTableCommand`` does. History and time travel stay: the files are only
tombstoned, and VACUUM deletes them once no retained version needs them."""

from __future__ import annotations

import time

import pyarrow.compute as pc

from delta_pyspark.core.protocol.actions import remove_actions
from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.core.snapshot.snapshot import Snapshot
from delta_pyspark.core.transaction.optimistic_transaction import Transaction


def truncate_table(log: DeltaLog) -> Snapshot | None:
    """Remove every file in a ``TRUNCATE`` commit (metrics ``numRemovedFiles``,
    ``numRemovedBytes``, ``executionTimeMs``); None when the table holds no file (nothing is
    committed, as in delta-spark). An append-only table refuses."""
    started = time.monotonic()
    snapshot = log.snapshot()
    txn = Transaction(log, snapshot)
    txn.check_writable()
    txn.read_whole_table()
    files = snapshot.files
    if files.num_rows == 0:
        return None
    txn.check_data_removable()
    txn.remove_files(remove_actions(files))
    metrics = {
        "numRemovedFiles": files.num_rows,
        "numRemovedBytes": pc.sum(files.column("size")).as_py() or 0,
        "executionTimeMs": int((time.monotonic() - started) * 1000),
    }
    return txn.commit("TRUNCATE", {}, metrics)
