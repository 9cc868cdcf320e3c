"""Building small logs through the core Transaction API: a two-column partitioned schema,
add/remove actions and appends (shared by the log, change data and stream source tests)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.core.snapshot.snapshot import Snapshot
from delta_pyspark.core.transaction.optimistic_transaction import Transaction

SCHEMA = json.dumps(
    {
        "type": "struct",
        "fields": [
            {"name": "id", "type": "long", "nullable": True, "metadata": {}},
            {"name": "part", "type": "string", "nullable": True, "metadata": {}},
        ],
    }
)


def add(name: str, part: str = "a", size: int = 100) -> dict[str, Any]:
    return {
        "path": f"part={part}/{name}.parquet",
        "partitionValues": {"part": part},
        "size": size,
        "modificationTime": 1_700_000_000_000,
        "dataChange": True,
        "stats": json.dumps(
            {
                "numRecords": 3,
                "minValues": {"id": 1},
                "maxValues": {"id": 3},
                "nullCount": {"id": 0},
            }
        ),
    }


def remove(a: dict[str, Any]) -> dict[str, Any]:
    return {
        "path": a["path"],
        "deletionTimestamp": 1_700_000_001_000,
        "dataChange": True,
        "extendedFileMetadata": True,
        "partitionValues": a["partitionValues"],
        "size": a["size"],
    }


def commit_lines(root: Path, version: int) -> list[dict[str, Any]]:
    text = (root / "_delta_log" / f"{version:020d}.json").read_text()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def append(log: DeltaLog, *files: dict[str, Any], snapshot: Snapshot | None = None) -> Snapshot:
    txn = Transaction(log, snapshot or log.snapshot())
    txn.add_files(files)
    return txn.commit("WRITE", {"mode": "Append"})
