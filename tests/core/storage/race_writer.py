"""One writer process of the commit race (``test_commit_race.py``): appends one row
``(worker, seq)`` per commit to an S3 table, ours through the core's transaction or
deltalake's ``write_deltalake``, and prints ``ack WORKER SEQ`` (flushed) once a commit has
returned: an acknowledged commit, which must never be lost.

Usage: ``python race_writer.py ours|deltalake TABLE_URL WORKER COMMITS OPTIONS_JSON``.
"""

from __future__ import annotations

import io
import json
import sys
import uuid

import pyarrow as pa
import pyarrow.parquet as pq


def _ours(root: str, worker: int, commits: int, options: dict[str, str]) -> None:
    from delta_pyspark.core.snapshot.delta_log import DeltaLog
    from delta_pyspark.core.storage.object_store import configure_storage
    from delta_pyspark.core.transaction.optimistic_transaction import Transaction

    configure_storage(root, options)
    log = DeltaLog(root)
    for seq in range(commits):
        sink = io.BytesIO()
        pq.write_table(pa.table({"worker": [worker], "seq": [seq]}), sink)
        rel = f"ours-{worker}-{seq}-{uuid.uuid4().hex}.parquet"
        log.store.write(f"{root}/{rel}", sink.getvalue())
        add = {
            "path": rel,
            "partitionValues": {},
            "size": len(sink.getvalue()),
            "modificationTime": 1_700_000_000_000,
            "dataChange": True,
        }
        txn = Transaction(log, log.snapshot())
        txn.add_files([add])  # type: ignore[list-item]
        txn.commit("WRITE", {"mode": "Append"})
        print(f"ack {worker} {seq}", flush=True)


def _deltalake(root: str, worker: int, commits: int, options: dict[str, str]) -> None:
    import deltalake

    for seq in range(commits):
        batch = pa.table(
            {"worker": pa.array([worker], pa.int64()), "seq": pa.array([seq], pa.int64())}
        )
        try:
            deltalake.write_deltalake(root, batch, mode="append", storage_options=options)
        except Exception as e:  # gave up after its retries: not acknowledged
            print(f"fail {worker} {seq} {type(e).__name__}", flush=True)
            continue
        print(f"ack {worker} {seq}", flush=True)


if __name__ == "__main__":
    kind, root, worker, commits, options = sys.argv[1:]
    run = _ours if kind == "ours" else _deltalake
    run(root, int(worker), int(commits), json.loads(options))
