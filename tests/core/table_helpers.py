"""Small tables with real Parquet files, built without Spark: data files, commits, removes
stamped in the past, aged files and deletion vectors (shared by the VACUUM, RESTORE, CLONE
and untrusted-state tests)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from delta_pyspark.core.protocol.actions import remove_actions
from delta_pyspark.core.protocol.deletion_vectors import DeletionVectorWriter
from delta_pyspark.core.protocol.schema import (
    PrimitiveType,
    StructField,
    StructType,
    schema_to_string,
)
from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.core.snapshot.snapshot import Snapshot
from delta_pyspark.core.storage.log_store import LocalLogStore
from delta_pyspark.core.transaction.optimistic_transaction import Transaction
from delta_pyspark.core.transaction.table_definition import create_table

SCHEMA = StructType(
    (StructField("id", PrimitiveType("long")), StructField("part", PrimitiveType("string")))
)
DAY = 86_400  # seconds
WEEK_MS = 7 * DAY * 1000


# --------------------------------------------------------------------------- helpers


def make_table(root: Path, partitioned: bool = False, config: dict | None = None) -> DeltaLog:
    log = DeltaLog(str(root))
    create_table(log, schema_to_string(SCHEMA), ["part"] if partitioned else [], config or {})
    return log


def write_file(root: Path, ids: list[int], part: str | None = None, name: str = "") -> dict:
    """A Parquet data file under ``root`` and its add action (not committed)."""
    name = name or f"part-{ids[0]:05d}-{time.time_ns()}.parquet"
    rel = f"part={part}/{name}" if part is not None else name
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"id": pa.array(ids, pa.int64())}), path)
    stats = {
        "numRecords": len(ids),
        "minValues": {"id": min(ids)},
        "maxValues": {"id": max(ids)},
        "nullCount": {"id": 0},
    }
    return {
        "path": rel,
        "partitionValues": {"part": part} if part is not None else {},
        "size": path.stat().st_size,
        "modificationTime": int(time.time() * 1000),
        "dataChange": True,
        "stats": json.dumps(stats),
    }


def commit(log: DeltaLog, adds=(), removes=(), op: str = "WRITE") -> Snapshot:
    txn = Transaction(log, log.snapshot())
    txn.add_files(adds)
    txn.remove_files(removes)
    return txn.commit(op, {})


def files_named(snapshot: Snapshot, *paths: str) -> pa.Table:
    files = snapshot.files
    return files.filter(pc.is_in(files.column("path"), value_set=pa.array(list(paths))))


def remove(log: DeltaLog, *paths: str, days_ago: float) -> Snapshot:
    """Commit removes of ``paths`` stamped ``days_ago`` days in the past."""
    when = int((time.time() - days_ago * DAY) * 1000)
    return commit(log, removes=remove_actions(files_named(log.snapshot(), *paths), timestamp=when))


def age(path: Path, days: float) -> None:
    t = time.time() - days * DAY
    os.utime(path, (t, t))


def age_all(root: Path, days: float = 30) -> None:
    """Make every data file under ``root`` (not the log) ``days`` old."""
    for d, _, names in os.walk(root):
        if "_delta_log" in Path(d).parts:
            continue
        for n in names:
            age(Path(d) / n, days)


def history_ops(log: DeltaLog) -> list[str]:
    return [r["operation"] for r in reversed(log.history())]


def add_dv(log: DeltaLog, path: str, rows: list[int], prefix_length: int = 0) -> dict:
    """Commit ``rows`` of ``path`` as deleted through a DV file; returns the DV dict."""
    snap = log.snapshot()
    old = files_named(snap, path)
    with DeletionVectorWriter(str(log.table_root), LocalLogStore(), prefix_length) as w:
        desc = w.add(rows)
    add = old.to_pylist()[0]
    add = {k: v for k, v in add.items() if v is not None}
    add["partitionValues"] = dict(add["partitionValues"])
    add["deletionVector"] = desc.to_dict()
    commit(log, [add], remove_actions(old), op="DELETE")
    return desc.to_dict()
