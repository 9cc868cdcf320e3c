"""Real concurrency on the Spark-free transaction layer: OS processes and threads
committing blind appends to one table at once through ``Transaction``.

The two-user example's version numbers are covered by
``test_conflicts.py::test_two_users_append_from_version_0``; here the commit files
themselves are checked (who wrote what, from which read version), and many writers
race in separate processes. Run as a script, this file is the child writer.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from delta_pyspark.core.protocol.schema import (
    PrimitiveType,
    StructField,
    StructType,
    schema_to_string,
)
from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.core.transaction.optimistic_transaction import Transaction
from delta_pyspark.core.transaction.table_definition import create_table

SCHEMA = StructType(
    (StructField("id", PrimitiveType("long")), StructField("p", PrimitiveType("string")))
)
PARTITIONS = ("a", "b", "c")
WRITERS = 8
COMMITS_PER_WRITER = 8
ROWS_PER_FILE = 3


def _new_table(root: Path, partitioned: bool = True) -> DeltaLog:
    log = DeltaLog(str(root))
    create_table(log, schema_to_string(SCHEMA), ["p"] if partitioned else [])
    return log


def _write_file(root: Path, writer: int, seq: int, partitioned: bool = True) -> dict[str, Any]:
    """A tiny Parquet file with ids unique to (writer, seq), and its ``add`` action."""
    part = PARTITIONS[(writer + seq) % len(PARTITIONS)]
    ids = [writer * 1_000_000 + seq * 1_000 + i for i in range(ROWS_PER_FILE)]
    columns: dict[str, list[Any]] = {"id": ids}
    if not partitioned:
        columns["p"] = [part] * len(ids)
    rel = f"w{writer}-{seq}-{uuid.uuid4().hex}.parquet"
    if partitioned:
        rel = f"p={part}/{rel}"
    dest = root / rel
    dest.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table(columns, schema=_file_schema(partitioned)), dest)
    stats = {
        "numRecords": len(ids),
        "minValues": {"id": min(ids)},
        "maxValues": {"id": max(ids)},
        "nullCount": {"id": 0},
    }
    return {
        "path": rel,
        "partitionValues": {"p": part} if partitioned else {},
        "size": dest.stat().st_size,
        "modificationTime": int(time.time() * 1000),
        "dataChange": True,
        "stats": json.dumps(stats),
    }


def _file_schema(partitioned: bool) -> pa.Schema:
    fields = [pa.field("id", pa.int64())]
    if not partitioned:
        fields.append(pa.field("p", pa.string()))
    return pa.schema(fields)


def _append(log: DeltaLog, add: dict[str, Any], writer: int) -> dict[str, Any]:
    """One blind append from the latest snapshot; returns what the writer observed."""
    txn = Transaction(log, log.snapshot())
    txn.add_files([add])
    snap = txn.commit("WRITE", {"mode": "Append"}, user_metadata=f"writer-{writer}")
    assert snap.version == txn.committed_version
    return {
        "path": add["path"],
        "read_version": txn.read_version,
        "version": txn.committed_version,
        "attempts": txn.attempts,
    }


def _writer_loop(
    root: Path, writer: int, commits: int, partitioned: bool = True
) -> list[dict[str, Any]]:
    log = DeltaLog(str(root))
    return [
        _append(log, _write_file(root, writer, seq, partitioned), writer) for seq in range(commits)
    ]


def _commit_files(root: Path) -> dict[int, list[dict[str, Any]]]:
    """Every ``NNN.json`` in the log, parsed independently of the library."""
    out = {}
    for f in sorted((root / "_delta_log").glob("*.json")):
        out[int(f.stem)] = [json.loads(line) for line in f.read_text().splitlines() if line]
    return out


def _data_files_on_disk(root: Path) -> set[str]:
    return {
        p.relative_to(root).as_posix()
        for p in root.rglob("*.parquet")
        if p.relative_to(root).parts[0] != "_delta_log"
    }


def _assert_log_exact(root: Path, results: list[dict[str, Any]], expected_writes: int) -> None:
    """One commit per write, versions contiguous, each add exactly once, nothing orphaned."""
    assert len(results) == expected_writes
    versions = sorted(r["version"] for r in results)
    assert versions == list(range(1, expected_writes + 1)), "versions not contiguous/unique"
    commits = _commit_files(root)
    assert sorted(commits) == list(range(expected_writes + 1))
    by_path = {r["path"]: r for r in results}
    assert len(by_path) == expected_writes
    logged_adds: list[str] = []
    for version in range(1, expected_writes + 1):
        actions = commits[version]
        info = actions[0]["commitInfo"]
        adds = [a["add"]["path"] for a in actions if "add" in a]
        assert [next(iter(a)) for a in actions] == ["commitInfo", "add"], actions
        assert len(adds) == 1
        mine = by_path[adds[0]]
        assert mine["version"] == version
        assert info["operation"] == "WRITE" and info["isBlindAppend"] is True
        assert info["readVersion"] == mine["read_version"] < version
        logged_adds += adds
    assert Counter(logged_adds) == Counter(by_path.keys())  # no duplicate, no lost add
    snap = DeltaLog(str(root)).snapshot()
    assert snap.version == expected_writes
    in_snapshot = [unquote(p) for p in snap.files.column("path").to_pylist()]
    assert Counter(in_snapshot) == Counter(by_path.keys())
    assert set(in_snapshot) == _data_files_on_disk(root)  # nothing orphaned or lost
    assert sum(json.loads(s)["numRecords"] for s in snap.files.column("stats").to_pylist()) == (
        expected_writes * ROWS_PER_FILE
    )


def test_two_users_commit_files_hold_their_own_add(tmp_path: Path) -> None:
    """Users 1 and 2 both start from version 0: 1 lands as version 1; 2 is retried
    without error and its unchanged actions land as version 2, still marked read at 0."""
    log = _new_table(tmp_path)
    start = log.snapshot()
    assert start.version == 0
    user1, user2 = Transaction(log, start), Transaction(log, start)
    add1, add2 = _write_file(tmp_path, 1, 0), _write_file(tmp_path, 2, 0)
    user1.add_files([add1])
    user2.add_files([add2])
    assert user1.commit("WRITE", {"mode": "Append"}, user_metadata="user 1").version == 1
    assert user2.commit("WRITE", {"mode": "Append"}, user_metadata="user 2").version == 2
    assert (user1.attempts, user2.attempts) == (1, 2)
    log_dir = tmp_path / "_delta_log"
    assert (log_dir / "00000000000000000001.json").is_file()
    assert (log_dir / "00000000000000000002.json").is_file()
    assert not (log_dir / "00000000000000000003.json").exists()
    commits = _commit_files(tmp_path)
    for version, user, add in ((1, "user 1", add1), (2, "user 2", add2)):
        info = commits[version][0]["commitInfo"]
        assert info["readVersion"] == 0
        assert info["userMetadata"] == user
        assert info["isBlindAppend"] is True
        assert [a["add"]["path"] for a in commits[version] if "add" in a] == [add["path"]]
    history = log.history()
    assert [h["version"] for h in history] == [2, 1, 0]
    assert [h.get("readVersion") for h in history[:2]] == [0, 0]
    assert sorted(log.snapshot().files.column("path").to_pylist()) == sorted(
        [add1["path"], add2["path"]]
    )


@pytest.mark.parametrize("partitioned", [True, False], ids=["partitioned", "unpartitioned"])
def test_threads_commit_blind_appends_concurrently(
    tmp_path: Path, partitioned: bool, caplog: pytest.LogCaptureFixture
) -> None:
    _new_table(tmp_path, partitioned)
    results: list[dict[str, Any]] = []
    errors: list[BaseException] = []
    barrier = threading.Barrier(WRITERS)

    def run(writer: int) -> None:
        try:
            barrier.wait(timeout=30)
            results.extend(_writer_loop(tmp_path, writer, COMMITS_PER_WRITER, partitioned))
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=run, args=(w,)) for w in range(WRITERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert errors == []
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
    _assert_log_exact(tmp_path, results, WRITERS * COMMITS_PER_WRITER)


@pytest.mark.long  # processes racing: CI's second step
def test_processes_commit_blind_appends_concurrently(tmp_path: Path) -> None:
    """8 OS processes, released together, each commit N blind appends to one partitioned
    table (crossing several post-commit checkpoints)."""
    partitioned = True
    table = tmp_path / "table"
    _new_table(table, partitioned)
    go = tmp_path / "go"
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                __file__,
                str(table),
                str(w),
                str(COMMITS_PER_WRITER),
                str(go),
                "1" if partitioned else "0",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for w in range(WRITERS)
    ]
    try:
        ready = [tmp_path / f"ready-{w}" for w in range(WRITERS)]
        deadline = time.monotonic() + 60
        while not all(r.exists() for r in ready):
            if any(p.poll() not in (None, 0) for p in procs) or time.monotonic() > deadline:
                break
            time.sleep(0.02)
        go.touch()
        outputs = [p.communicate(timeout=120) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    results: list[dict[str, Any]] = []
    for p, (out, err) in zip(procs, outputs, strict=True):
        assert p.returncode == 0, err
        assert "Traceback" not in err and "post-commit hook failed" not in err, err
        results += json.loads(out.strip().splitlines()[-1])
    _assert_log_exact(table, results, WRITERS * COMMITS_PER_WRITER)
    # The race was real: some writers lost a version and were retried.
    assert sum(r["attempts"] - 1 for r in results) > 0


def _child(argv: list[str]) -> None:
    table, writer, commits, go, partitioned = argv
    root = Path(table)
    DeltaLog(table).snapshot()  # warm imports before the start signal
    (Path(go).parent / f"ready-{writer}").touch()
    while not os.path.exists(go):
        time.sleep(0.005)
    print(json.dumps(_writer_loop(root, int(writer), int(commits), partitioned == "1")))


if __name__ == "__main__":
    _child(sys.argv[1:])
