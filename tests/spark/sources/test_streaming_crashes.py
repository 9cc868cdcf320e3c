"""Exactly-once through crashes: a streaming query killed with SIGKILL at random points,
then restarted from its checkpoint, writes every source row once."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from delta_pyspark.core.snapshot.delta_log import DeltaLog

# crash runs (kills and restarts of stream processes): CI's second step
pytestmark = pytest.mark.long

KILLS = 4
FILES = 40


def test_killed_and_restarted_stream_writes_every_row_once(spark: Any, tmp_path: Path) -> None:
    source, sink, checkpoint = (str(tmp_path / n) for n in ("src", "dst", "cp"))
    for i in range(FILES):  # one file per commit, one file per micro-batch
        spark.range(i * 10, i * 10 + 10, numPartitions=1).write.format("delta").mode("append").save(
            source
        )
    worker = Path(__file__).with_name("stream_worker.py")
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable)
    rng = random.Random(20261124)
    kills = 0
    while kills < KILLS:
        proc = subprocess.Popen(
            [sys.executable, str(worker), source, sink, checkpoint, "run"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # the worker and its JVM die together
        )
        assert proc.stdout is not None
        proc.stdout.readline()  # "started": Spark is up, the query starts now
        time.sleep(rng.uniform(0.2, 2.5))  # mid-batch, mid-commit or between batches
        if proc.poll() is not None:
            raise AssertionError(f"the stream worker exited by itself ({proc.returncode})")
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        kills += 1
    done = subprocess.run(
        [sys.executable, str(worker), source, sink, checkpoint, "drain"],
        env=env,
        capture_output=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    ids = sorted(r.id for r in spark.read.format("delta").load(sink).collect())
    assert ids == list(range(FILES * 10))  # every row, once
    txns = DeltaLog(sink).snapshot().set_transactions  # one query, batch ids as versions
    assert len(txns) == 1
    assert next(iter(txns.values())).version == FILES - 1
