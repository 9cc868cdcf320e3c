"""Bounded stress test: several processes race appends, deletes, updates and merges.

Afterwards the committed operations, replayed in log order against a plain Python
model, must reproduce the table exactly (no lost update, duplicate or phantom), every
failed operation must have raised a typed concurrent-modification error, and no failed
operation may appear in the log. The table is Serializable, so log order is a valid
serial order.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from delta_pyspark.core.snapshot.delta_log import DeltaLog

# a stress run of racing processes: CI's second step
pytestmark = pytest.mark.long

WORKERS = 3
OPS = 4
TYPED = {
    "ConcurrentAppendException",
    "ConcurrentDeleteReadException",
    "ConcurrentDeleteDeleteException",
    "MetadataChangedException",
    "ProtocolChangedException",
    "ConcurrentTransactionException",
}


def _apply(model: dict[int, int], op: dict[str, Any]) -> None:
    lo, hi = op["range"]
    kind = op["kind"]
    if kind == "append":
        for i, v in op["rows"]:
            assert i not in model, f"replay: {op['op']} appends existing id {i}"
            model[i] = v
    elif kind == "delete":
        for i in [i for i in model if lo <= i < hi]:
            del model[i]
    elif kind == "update":
        for i in model:
            if lo <= i < hi:
                model[i] += 1
    else:
        for i, v in op["rows"]:
            model[i] = v


def test_processes_race_dml_and_the_log_replays_exactly(spark: Any, tmp_path: Path):
    path = str(tmp_path / "t")
    initial = [(w * 10_000 + 5_000 + k, k, w) for w in range(WORKERS) for k in range(20)]
    (
        spark.createDataFrame(initial, "id long, value long, b long")
        .write.format("delta")
        .partitionBy("b")
        .option("delta.isolationLevel", "Serializable")
        .save(path)
    )
    worker = Path(__file__).with_name("stress_worker.py")
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable)
    procs = []
    for w in range(WORKERS):
        out = tmp_path / f"out{w}.json"
        args = [path, w, WORKERS, OPS, 1000 + w, out]
        cmd = [sys.executable, str(worker), *map(str, args)]
        procs.append((subprocess.Popen(cmd, env=env, stderr=subprocess.PIPE), out))
    outcomes = []
    for proc, out in procs:
        _, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err.decode()[-2000:]
        outcomes += json.loads(out.read_text())

    assert len(outcomes) == WORKERS * OPS
    errors = [o for o in outcomes if o["result"] != "ok" and o["result"] not in TYPED]
    assert not errors
    log = DeltaLog(path)
    history = sorted(log.history(), key=lambda h: h["version"])
    assert [h["version"] for h in history] == list(range(len(history)))
    committed_ops = [json.loads(h["userMetadata"]) for h in history[1:]]
    assert sorted(o["op"] for o in committed_ops) == sorted(
        o["op"] for o in outcomes if o["result"] == "ok" and o["committed"]
    )
    model = {i: v for i, v, _ in initial}
    for op in committed_ops:
        _apply(model, op)
    rows = spark.read.format("delta").load(path).select("id", "value").collect()
    assert sorted((r.id, r.value) for r in rows) == sorted(model.items())
    # every referenced file exists; nothing failed transactions wrote is referenced
    snapshot = log.snapshot()
    for p in snapshot.files.column("path").to_pylist():
        assert (Path(path) / p).exists(), p
    print(
        "stress:",
        {r: sum(1 for o in outcomes if o["result"] == r) for r in {o["result"] for o in outcomes}},
    )
