"""Tables on S3, ours against deltalake (delta-rs) in the same run, on the local S3 server
the tests use (moto, ``tests/s3_server.py``, serving one request at a time):
``python -m benchmarks object_store``.

* **Commit latency**: one writer appending a one-row Parquet file per commit, K commits in
  a row (ours: the file put through the store, then a transaction commit by conditional
  put; deltalake: ``write_deltalake(mode="append")``). Reported as commits per second;
  the ratio is ours / deltalake (above 1: we commit faster).
* **Cold snapshot load** of a table of F files (C commits of F/C adds each, checkpoints
  every 10 commits as tables written with default settings would have, JSON commits
  after the last one): a fresh process loads the latest snapshot and counts its files
  (ours: ``DeltaLog(url).snapshot()``; deltalake: ``DeltaTable(url).file_uris()``); the time
  is measured inside the process around the load, imports excluded; median of R runs.
  The ratio is ours / deltalake (below 1: we load faster).
"""

from __future__ import annotations

import argparse
import io
import json
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from s3_server import S3Server, running_s3_server

_SCHEMA = json.dumps(
    {
        "type": "struct",
        "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}}],
    }
)

_LOAD_OURS = """
import json, sys, time
from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.core.storage.object_store import configure_storage
url, options = sys.argv[1], json.loads(sys.argv[2])
configure_storage(url, options)
start = time.perf_counter()
files = DeltaLog(url).snapshot().files.num_rows
print(json.dumps({"seconds": time.perf_counter() - start, "files": files}))
"""

_LOAD_DELTALAKE = """
import json, sys, time
import deltalake
url, options = sys.argv[1], json.loads(sys.argv[2])
start = time.perf_counter()
files = len(deltalake.DeltaTable(url, storage_options=options).file_uris())
print(json.dumps({"seconds": time.perf_counter() - start, "files": files}))
"""


def _parquet(value: int) -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq

    sink = io.BytesIO()
    pq.write_table(pa.table({"id": pa.array([value], pa.int64())}), sink)
    return sink.getvalue()


def _commits_ours(server: S3Server, bucket: str, commits: int) -> float:
    from delta_pyspark.core.snapshot.delta_log import DeltaLog
    from delta_pyspark.core.storage.object_store import configure_storage
    from delta_pyspark.core.transaction.optimistic_transaction import Transaction
    from delta_pyspark.core.transaction.table_definition import create_table

    root = f"s3://{bucket}/ours"
    configure_storage(root, server.storage_options())
    log = DeltaLog(root)
    create_table(log, _SCHEMA)
    start = time.perf_counter()
    for i in range(commits):
        data = _parquet(i)
        rel = f"part-{uuid.uuid4().hex}.parquet"
        log.store.write(f"{root}/{rel}", data)
        txn = Transaction(log, log.snapshot())
        add: Any = {
            "path": rel,
            "partitionValues": {},
            "size": len(data),
            "modificationTime": int(time.time() * 1000),
            "dataChange": True,
            "stats": json.dumps({"numRecords": 1, "minValues": {"id": i}, "maxValues": {"id": i}}),
        }
        txn.add_files([add])
        txn.commit("WRITE", {"mode": "Append"})
    return commits / (time.perf_counter() - start)


def _commits_deltalake(server: S3Server, bucket: str, commits: int) -> float:
    import deltalake
    import pyarrow as pa

    root = f"s3://{bucket}/theirs"
    options = server.storage_options()
    deltalake.write_deltalake(
        root, pa.table({"id": pa.array([], pa.int64())}), storage_options=options
    )
    start = time.perf_counter()
    for i in range(commits):
        batch = pa.table({"id": pa.array([i], pa.int64())})
        deltalake.write_deltalake(root, batch, mode="append", storage_options=options)
    return commits / (time.perf_counter() - start)


def _build_table(server: S3Server, bucket: str, files: int, commits: int) -> str:
    """A table of ``files`` add actions over ``commits`` commits (the data files are not
    written: a snapshot load reads only the log)."""
    from delta_pyspark.core.snapshot.delta_log import DeltaLog
    from delta_pyspark.core.storage.object_store import configure_storage
    from delta_pyspark.core.transaction.optimistic_transaction import Transaction
    from delta_pyspark.core.transaction.table_definition import create_table

    root = f"s3://{bucket}/big"
    configure_storage(root, server.storage_options())
    log = DeltaLog(root)
    create_table(log, _SCHEMA, configuration={"delta.checkpointInterval": "10"})
    per_commit = files // commits
    for c in range(commits):
        txn = Transaction(log, log.snapshot())
        adds: Any = [
            {
                "path": f"part-{c:05d}-{i:05d}.parquet",
                "partitionValues": {},
                "size": 1000 + i,
                "modificationTime": 1_700_000_000_000,
                "dataChange": True,
                "stats": json.dumps(
                    {"numRecords": 10, "minValues": {"id": i}, "maxValues": {"id": i + 9}}
                ),
            }
            for i in range(per_commit)
        ]
        txn.add_files(adds)
        txn.commit("WRITE", {"mode": "Append"})
    return root


def _cold_load(code: str, url: str, server: S3Server, repeat: int, files: int) -> float:
    times = []
    for _ in range(repeat):
        run = subprocess.run(
            [sys.executable, "-c", code, url, json.dumps(server.storage_options())],
            capture_output=True,
            text=True,
        )
        if run.returncode != 0:
            raise RuntimeError(f"cold load failed:\n{run.stderr[-3000:]}")
        result = json.loads(run.stdout.strip().splitlines()[-1])
        assert result["files"] == files, result
        times.append(result["seconds"])
    return statistics.median(times)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks object_store", description=__doc__)
    parser.add_argument("--commits", type=int, default=30, help="K: one-writer commits")
    parser.add_argument("--files", type=int, default=10_000, help="F: files of the loaded table")
    parser.add_argument("--table-commits", type=int, default=100, help="C: its commits")
    parser.add_argument("--repeat", type=int, default=3, help="R: cold loads per side")
    args = parser.parse_args([] if argv is None else argv)
    with running_s3_server() as server:
        bucket = server.create_bucket(f"bench-{uuid.uuid4().hex[:8]}")
        ours = _commits_ours(server, bucket, args.commits)
        theirs = _commits_deltalake(server, bucket, args.commits)
        print(
            f"one-writer commits/s   ours {ours:7.2f}  deltalake {theirs:7.2f}"
            f"  ratio {ours / theirs:.2f}x"
        )
        url = _build_table(server, bucket, args.files, args.table_commits)
        ours_load = _cold_load(_LOAD_OURS, url, server, args.repeat, args.files)
        theirs_load = _cold_load(_LOAD_DELTALAKE, url, server, args.repeat, args.files)
        print(
            f"cold load of {args.files} files  ours {ours_load:6.3f} s"
            f"  deltalake {theirs_load:6.3f} s  ratio {ours_load / theirs_load:.2f}x"
        )


if __name__ == "__main__":
    main(sys.argv[1:])
