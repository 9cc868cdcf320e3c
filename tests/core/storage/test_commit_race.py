"""Writer processes racing to commit to one S3 table (the local S3 server): ours through
conditional puts, and deltalake's beside ours. Every acknowledged commit is in the table
exactly once, the versions are contiguous, and killing writers (SIGKILL) mid-run loses
nothing they acknowledged. ``DELTA_PYSPARK_RACE_COMMITS`` sets the commits per writer
(default 8; the closing note of issue 36 reports a run with 100)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from pathlib import Path

import deltalake
import pytest

from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.core.storage.object_store import configure_storage
from delta_pyspark.core.transaction.table_definition import create_table
from s3_server import S3Server

WRITER = Path(__file__).with_name("race_writer.py")
COMMITS = int(os.environ.get("DELTA_PYSPARK_RACE_COMMITS", "8"))
SCHEMA = json.dumps(
    {
        "type": "struct",
        "fields": [
            {"name": "worker", "type": "long", "nullable": True, "metadata": {}},
            {"name": "seq", "type": "long", "nullable": True, "metadata": {}},
        ],
    }
)


def _table(s3_server: S3Server) -> str:
    bucket = s3_server.create_bucket(f"race-{uuid.uuid4().hex[:12]}")
    root = f"s3://{bucket}/t"
    configure_storage(root, s3_server.storage_options())
    create_table(DeltaLog(root), SCHEMA)
    return root


def _start(
    kind: str, root: str, worker: int, commits: int, s3_server: S3Server
) -> subprocess.Popen[str]:
    options = json.dumps(s3_server.storage_options())
    return subprocess.Popen(
        [sys.executable, str(WRITER), kind, root, str(worker), str(commits), options],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _acks(output: str) -> list[tuple[int, int]]:
    return [(int(w), int(s)) for line in output.splitlines() if line.startswith("ack ")
            for w, s in [line.split()[1:3]]]  # fmt: skip


def _check_table(root: str, s3_server: S3Server, acknowledged: list[tuple[int, int]]) -> None:
    """Versions contiguous from 0, one row per commit, every acknowledged row exactly once."""
    log = DeltaLog(root)
    snapshot = log.snapshot()
    versions = sorted(
        int(s.name.split(".")[0])
        for s in log.store.list_from(f"{root}/_delta_log")
        if s.name.endswith(".json")
    )
    assert versions == list(range(snapshot.version + 1))
    assert snapshot.files.num_rows == snapshot.version  # version 0 created the table
    theirs = deltalake.DeltaTable(root, storage_options=s3_server.storage_options())
    assert theirs.version() == snapshot.version
    rows = theirs.to_pyarrow_table()
    counts = Counter(
        zip(rows.column("worker").to_pylist(), rows.column("seq").to_pylist(), strict=True)
    )
    assert all(counts[a] == 1 for a in acknowledged), "an acknowledged commit is missing or doubled"
    assert max(counts.values()) == 1


@pytest.mark.long  # processes racing: CI's second step
def test_eight_writers_ours_and_deltalakes_race_without_losing_a_commit(
    s3_server: S3Server,
) -> None:
    root = _table(s3_server)
    kinds = ["ours"] * 6 + ["deltalake"] * 2
    writers = [_start(kind, root, w, COMMITS, s3_server) for w, kind in enumerate(kinds)]
    acknowledged: list[tuple[int, int]] = []
    for w, proc in enumerate(writers):
        out, err = proc.communicate(timeout=900)
        assert proc.returncode == 0, err[-2000:]
        acks = _acks(out)
        if kinds[w] == "ours":
            assert len(acks) == COMMITS  # ours retry every conflict of an append
        acknowledged += acks
    _check_table(root, s3_server, acknowledged)
    assert DeltaLog(root).snapshot().version == len(acknowledged)


def test_writers_killed_mid_run_lose_nothing_they_acknowledged(s3_server: S3Server) -> None:
    root = _table(s3_server)
    writers = [_start("ours", root, w, 1000, s3_server) for w in range(4)]
    time.sleep(3)
    for proc in writers[:2]:
        proc.send_signal(signal.SIGKILL)
    time.sleep(2)
    for proc in writers[2:]:
        proc.send_signal(signal.SIGKILL)
    acknowledged: list[tuple[int, int]] = []
    for proc in writers:
        out, _ = proc.communicate(timeout=60)
        assert proc.returncode == -signal.SIGKILL
        acknowledged += _acks(out)
    assert len(acknowledged) > 4, "the writers committed before they were killed"
    _check_table(root, s3_server, acknowledged)
