"""Commits per second with 1, 4 and 8 concurrent blind-append writers of small files:
delta-pyspark's transaction layer vs deltalake (delta-rs), measured in the same run.

Each writer is a separate OS process (multiprocessing, 'spawn'). All writers of a round
are released together; each then makes K commits of one tiny Parquet file (the same
pyarrow table for both systems). Throughput = total commits / wall time from release
to the last writer finishing. Process start-up and imports are not timed.

* delta-pyspark: the writer writes the file with pyarrow, reads its footer for stats,
  loads the latest snapshot (``DeltaLog(path).snapshot()``) and commits one ``add``
  through ``core.transaction.Transaction``, on the process's cached log handle
  (``DeltaLog.for_table``: each snapshot reads only the commits after the cached one, as
  every write path of the package does). Spark is not involved: this measures the
  transaction layer (log replay, put-if-absent, conflict check and retry, post-commit
  checksum and checkpoint).
* deltalake: ``write_deltalake(path, table, mode="append")`` per commit (it too loads
  the table, writes the file with stats, commits and retries on conflict).

Both tables use ``delta.checkpointInterval=10`` and allow up to 1000 commit attempts.
A run is valid when the final version equals the number of commits (one version per
commit: no lost or duplicated commit). K defaults to 20; set DELTA_BENCH_COMMITS.

    python -m benchmarks commit_throughput
    DELTA_BENCH_COMMITS=50 python -m benchmarks.commit_throughput --writers 1 4 8
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import shutil
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

DEFAULT_COMMITS = 20
DEFAULT_WRITERS = (1, 4, 8)
ROWS_PER_FILE = 10
MAX_ATTEMPTS = 1000
CONFIGURATION = {"delta.checkpointInterval": "10"}
IMPLEMENTATIONS = ("delta_pyspark", "deltalake")


def _small_table(writer: int, seq: int) -> Any:
    import pyarrow as pa

    base = writer * 1_000_000 + seq * 1_000
    return pa.table(
        {
            "id": pa.array(range(base, base + ROWS_PER_FILE), pa.int64()),
            "value": pa.array([float(i) for i in range(ROWS_PER_FILE)], pa.float64()),
            "name": pa.array([f"row-{i}" for i in range(ROWS_PER_FILE)], pa.string()),
        }
    )


def create_table(impl: str, root: Path) -> None:
    """Version 0 with the benchmark's schema and no data files."""
    empty = _small_table(0, 0).slice(0, 0)
    if impl == "deltalake":
        from deltalake import write_deltalake

        write_deltalake(str(root), empty, mode="error", configuration=CONFIGURATION)
        return
    from delta_pyspark.core.protocol.schema import schema_to_string
    from delta_pyspark.core.protocol.schema_arrow import from_arrow_schema
    from delta_pyspark.core.snapshot.delta_log import DeltaLog
    from delta_pyspark.core.transaction.table_definition import create_table as create

    create(
        DeltaLog(str(root)), schema_to_string(from_arrow_schema(empty.schema)), [], CONFIGURATION
    )


def _ours(root: str, writer: int, commits: int) -> int:
    """K blind appends through Transaction; returns the number of retried attempts."""
    import pyarrow.parquet as pq

    from delta_pyspark.core.snapshot.delta_log import DeltaLog
    from delta_pyspark.core.stats.collection import collect_parquet_stats
    from delta_pyspark.core.transaction.optimistic_transaction import Transaction

    log = DeltaLog.for_table(root)  # the process's cached handle, as every write path uses
    retries = 0
    for seq in range(commits):
        table = _small_table(writer, seq)
        name = f"part-{writer:05d}-{uuid.uuid4()}-c000.snappy.parquet"
        dest = os.path.join(root, name)
        pq.write_table(table, dest, compression="snappy")
        add = {
            "path": name,
            "partitionValues": {},
            "size": os.path.getsize(dest),
            "modificationTime": int(time.time() * 1000),
            "dataChange": True,
            "stats": collect_parquet_stats(pq.read_metadata(dest), table.schema),
        }
        txn = Transaction(log, log.snapshot(), max_attempts=MAX_ATTEMPTS)
        txn.add_files([add])
        txn.commit("WRITE", {"mode": "Append"}, {"numFiles": 1, "numOutputRows": table.num_rows})
        retries += txn.attempts - 1
    return retries


def _theirs(root: str, writer: int, commits: int) -> int:
    """K ``write_deltalake`` appends; retries are read from the log afterwards."""
    from deltalake import CommitProperties, write_deltalake

    props = CommitProperties(max_commit_retries=MAX_ATTEMPTS)
    for seq in range(commits):
        write_deltalake(root, _small_table(writer, seq), mode="append", commit_properties=props)
    return 0


def _worker(impl: str, root: str, writer: int, commits: int, ready: Any, go: Any, out: Any) -> None:
    try:
        fn = _ours if impl == "delta_pyspark" else _theirs
        # Warm every code path (imports, file write, stats, commit, post-commit hooks) on a
        # scratch table first, outside the timed section.
        scratch = Path(f"{root}-warmup-{writer}")
        create_table(impl, scratch)
        fn(str(scratch), writer, 2)
        shutil.rmtree(scratch, ignore_errors=True)
        ready.put(writer)
        go.wait()
        retries = fn(root, writer, commits)
        out.put((writer, time.time(), retries, None))
    except BaseException as e:  # reported to the parent
        out.put((writer, time.time(), 0, f"{type(e).__name__}: {e}"))


def logged_retries(root: Path) -> int:
    """delta-rs records ``operationMetrics.num_retries`` in each commitInfo."""
    total = 0
    for f in (root / "_delta_log").glob("*.json"):
        first = json.loads(f.read_text().splitlines()[0])
        metrics = first.get("commitInfo", {}).get("operationMetrics") or {}
        total += int(metrics.get("num_retries", 0))
    return total


def final_version_and_files(impl: str, root: Path) -> tuple[int, int]:
    if impl == "deltalake":
        from deltalake import DeltaTable

        dt = DeltaTable(str(root))
        return dt.version(), len(dt.file_uris())
    from delta_pyspark.core.snapshot.delta_log import DeltaLog

    snap = DeltaLog(str(root)).snapshot()
    return snap.version, snap.num_files


def measure(impl: str, root: Path, writers: int, commits: int) -> dict[str, Any]:
    """Release ``writers`` processes at once; each makes ``commits`` commits."""
    create_table(impl, root)
    ctx = mp.get_context("spawn")
    ready, out, go = ctx.Queue(), ctx.Queue(), ctx.Event()
    procs = [
        ctx.Process(target=_worker, args=(impl, str(root), w, commits, ready, go, out))
        for w in range(1, writers + 1)
    ]
    for p in procs:
        p.start()
    try:
        for _ in procs:
            ready.get(timeout=120)
        start = time.time()
        go.set()
        results = [out.get(timeout=600) for _ in procs]
    finally:
        for p in procs:
            p.join(timeout=60)
            if p.is_alive():
                p.kill()
    errors = [r[3] for r in results if r[3]]
    if errors:
        raise RuntimeError(f"{impl} with {writers} writers failed: {errors[0]}")
    elapsed = max(r[1] for r in results) - start
    total = writers * commits
    version, files = final_version_and_files(impl, root)
    retries = sum(r[2] for r in results) if impl == "delta_pyspark" else logged_retries(root)
    return {
        "writers": writers,
        "commits": total,
        "seconds": elapsed,
        "per_second": total / elapsed,
        "retries": retries,
        "final_version": version,
        "files": files,
        "valid": version == total and files == total,
    }


def run(
    commits: int = DEFAULT_COMMITS, writer_counts: tuple[int, ...] = DEFAULT_WRITERS
) -> list[dict[str, Any]]:
    tmp = Path(tempfile.mkdtemp(prefix="delta-bench-commits-"))
    rows = []
    print(
        f"blind appends of one {ROWS_PER_FILE}-row Parquet file per commit, {commits} commits per "
        f"writer, each writer a separate process ({os.cpu_count()} CPUs)"
    )
    print(
        "delta_pyspark = core.transaction.Transaction (pyarrow writes the file; Spark is NOT "
        "involved); deltalake = write_deltalake(mode='append')"
    )
    try:
        for writers in writer_counts:
            row: dict[str, Any] = {"writers": writers}
            for impl in IMPLEMENTATIONS:
                root = tmp / f"{impl}-{writers}"
                row[impl] = measure(impl, root, writers, commits)
                shutil.rmtree(root, ignore_errors=True)
            rows.append(row)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(
        f"{'writers':>7}{'commits':>9}  {'delta_pyspark c/s':>17}{'retries':>9}"
        f"  {'deltalake c/s':>13}{'retries':>9}  {'ours/deltalake':>14}  final versions"
    )
    for row in rows:
        ours, theirs = row["delta_pyspark"], row["deltalake"]
        check = "ok" if ours["valid"] and theirs["valid"] else "MISMATCH"
        print(
            f"{row['writers']:>7}{ours['commits']:>9}  {ours['per_second']:>17.1f}"
            f"{ours['retries']:>9}  {theirs['per_second']:>13.1f}{theirs['retries']:>9}"
            f"  {ours['per_second'] / theirs['per_second']:>13.2f}x"
            f"  {ours['final_version']}, {theirs['final_version']} ({check})"
        )
    print(
        "retries = commit attempts that lost the race to another writer and were retried at "
        "a later version (ours: Transaction.attempts - 1; deltalake: operationMetrics."
        "num_retries in its log); ok = final version and file count equal the commit count"
    )
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.commit_throughput",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--commits",
        type=int,
        default=int(os.environ.get("DELTA_BENCH_COMMITS", DEFAULT_COMMITS)),
        help="commits per writer (default: $DELTA_BENCH_COMMITS or %(default)s)",
    )
    parser.add_argument("--writers", type=int, nargs="+", default=list(DEFAULT_WRITERS))
    args = parser.parse_args([] if argv is None else argv)
    run(args.commits, tuple(args.writers))


if __name__ == "__main__":
    main(sys.argv[1:])
