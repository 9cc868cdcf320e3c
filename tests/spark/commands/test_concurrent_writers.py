"""Real concurrency through Spark: threads in one Spark application and separate OS
processes (each its own SparkSession/JVM) appending to one table at once, partitioned
and not. Every write must commit exactly once, every row must be readable exactly once,
and the log must reference exactly the data files on disk (none orphaned, none lost).

Run as a script, this file is the child writer process.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pyarrow.parquet as pq
import pytest

from delta_pyspark.core.snapshot.delta_log import DeltaLog

ROWS = 12
PARTS = 3
THREAD_WRITERS = 4
PROCESS_WRITERS = 2
THREAD_ROUNDS = 2
MIXED_ROUNDS = 1
SEED = 0  # the writer id of the write that creates each table (version 0)
# Small, so post-commit checkpoints are written while other writers commit.
CHECKPOINT_INTERVAL = 3


def _ids(writer: int, rnd: int) -> list[int]:
    return [writer * 100_000 + rnd * 1_000 + i for i in range(ROWS)]


def _part(row_id: int) -> str:
    return f"p{row_id % 1_000 % PARTS}"


def _label(writer: int, rnd: int) -> str:
    return f"writer-{writer}-round-{rnd}"


def _append(spark: Any, path: str, writer: int, rnd: int, partitioned: bool) -> None:
    df = spark.createDataFrame(
        [(i, _part(i), writer) for i in _ids(writer, rnd)], "id long, p string, writer int"
    )
    w = df.write.format("delta").mode("append").option("userMetadata", _label(writer, rnd))
    if partitioned:
        w = w.partitionBy("p")
    if writer == SEED:
        w = w.option("delta.checkpointInterval", str(CHECKPOINT_INTERVAL))
    w.save(path)


def _commit_files(root: Path) -> dict[int, list[dict[str, Any]]]:
    """Every ``NNN.json`` in the log, parsed without the library."""
    return {
        int(f.stem): [json.loads(line) for line in f.read_text().splitlines() if line]
        for f in sorted((root / "_delta_log").glob("*.json"))
    }


def _parquet_under(root: Path) -> tuple[set[str], set[str]]:
    """(data files, leftovers in _delta_staging), relative to the table root."""
    data, staged = set(), set()
    for p in root.rglob("*.parquet"):
        rel = p.relative_to(root)
        if rel.parts[0] == "_delta_log":
            continue
        (staged if rel.parts[0] == "_delta_staging" else data).add(rel.as_posix())
    return data, staged


def _check_table(spark: Any, path: str, writes: list[tuple[int, int]], partitioned: bool) -> None:
    """``writes``: the (writer, round) of every append after the seed write."""
    root = Path(path)
    n = len(writes)
    expected_labels = Counter(_label(w, r) for w, r in writes)
    assert all(c == 1 for c in expected_labels.values())

    # The log: one WRITE commit per write, versions contiguous 0..n, blind appends.
    commits = _commit_files(root)
    assert sorted(commits) == list(range(n + 1))
    snap = DeltaLog(path).snapshot()
    assert snap.version == n
    assert snap.configuration["delta.checkpointInterval"] == str(CHECKPOINT_INTERVAL)
    checkpoints = sorted(int(f.name[:20]) for f in (root / "_delta_log").glob("*.checkpoint*"))
    assert checkpoints == list(range(CHECKPOINT_INTERVAL, n + 1, CHECKPOINT_INTERVAL))
    history = DeltaLog(path).history()
    assert [h["version"] for h in history] == list(range(n, -1, -1))
    seen_labels: Counter[str] = Counter()
    logged_paths: Counter[str] = Counter()
    retried = 0
    for version in range(1, n + 1):
        actions = commits[version]
        info = actions[0]["commitInfo"]
        assert info["operation"] == "WRITE"
        assert info["operationParameters"]["mode"] == "Append"
        assert info["isBlindAppend"] is True
        assert info["readVersion"] < version
        retried += info["readVersion"] < version - 1
        assert not [a for a in actions if "remove" in a or "metaData" in a or "protocol" in a]
        label = info["userMetadata"]
        seen_labels[label] += 1
        writer, rnd = int(label.split("-")[1]), int(label.split("-")[3])
        adds = [a["add"] for a in actions if "add" in a]
        assert adds, f"version {version} committed no file"
        # The files of this commit hold exactly this write's rows, in the right partition.
        ids: list[int] = []
        for add in adds:
            logged_paths[unquote(add["path"])] += 1
            file_ids = pq.read_table(root / unquote(add["path"])).column("id").to_pylist()
            assert json.loads(add["stats"])["numRecords"] == len(file_ids)
            if partitioned:
                assert {_part(i) for i in file_ids} == {add["partitionValues"]["p"]}
                assert unquote(add["path"]).startswith(f"p={add['partitionValues']['p']}/")
            else:
                assert add["partitionValues"] == {}
            ids += file_ids
        assert sorted(ids) == _ids(writer, rnd), f"version {version} ({label})"
        assert int(info["operationMetrics"]["numOutputRows"]) == ROWS
    assert seen_labels == expected_labels, "a write committed twice or not at all"
    assert all(c == 1 for c in logged_paths.values()), "a file was added twice"

    # The snapshot references exactly the data files on disk; each one exists.
    in_snapshot = [unquote(p) for p in snap.files.column("path").to_pylist()]
    assert len(in_snapshot) == len(set(in_snapshot)) == snap.num_files
    on_disk, staged = _parquet_under(root)
    assert set(in_snapshot) == on_disk, (
        f"orphaned: {sorted(on_disk - set(in_snapshot))}, "
        f"lost: {sorted(set(in_snapshot) - on_disk)}"
    )
    assert set(logged_paths) <= set(in_snapshot)
    assert staged == set(), f"staging leftovers: {sorted(staged)}"

    # The rows, row by row, through Spark.
    expected_rows = Counter((i, _part(i), w) for w, r in [(SEED, 0), *writes] for i in _ids(w, r))
    got = spark.read.format("delta").load(path).select("id", "p", "writer").collect()
    assert len(got) == (n + 1) * ROWS
    assert Counter((r.id, r.p, r.writer) for r in got) == expected_rows
    # Under this many racing writers at least one write was retried past a winner.
    assert retried > 0 or n < 2


def _library_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    """Warnings the library logged (a failed post-commit hook is logged, not raised)."""
    return [
        r.getMessage()
        for r in caplog.records
        if r.name.startswith("delta_pyspark") and r.levelno >= logging.WARNING
    ]


def _run_threads(target: Any, writers: list[int]) -> list[BaseException]:
    errors: list[BaseException] = []
    barrier = threading.Barrier(len(writers))

    def run(writer: int) -> None:
        try:
            barrier.wait(timeout=60)
            target(writer)
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=run, args=(w,), name=f"writer-{w}") for w in writers]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not [t for t in threads if t.is_alive()], "a writer thread hung"
    return errors


@pytest.mark.long  # CI's second step, for the quick run's time
@pytest.mark.parametrize("partitioned", [True, False], ids=["partitioned", "unpartitioned"])
def test_threads_in_one_application_append_concurrently(
    spark: Any, tmp_path: Path, partitioned: bool, caplog: pytest.LogCaptureFixture
) -> None:
    path = str(tmp_path / "table")
    _append(spark, path, SEED, 0, partitioned)
    writers = list(range(1, THREAD_WRITERS + 1))

    def write_rounds(writer: int) -> None:
        for rnd in range(THREAD_ROUNDS):
            _append(spark, path, writer, rnd, partitioned)

    assert _run_threads(write_rounds, writers) == []
    assert _library_warnings(caplog) == []
    _check_table(spark, path, [(w, r) for w in writers for r in range(THREAD_ROUNDS)], partitioned)


@pytest.mark.long  # processes racing: CI's second step
def test_processes_and_threads_append_concurrently(
    spark: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """6 writers at once: 2 OS processes (a SparkSession each) and 4 threads of this
    application, every one appending to a partitioned and an unpartitioned table."""
    tables = {True: str(tmp_path / "partitioned"), False: str(tmp_path / "unpartitioned")}
    for partitioned, path in tables.items():
        _append(spark, path, SEED, 0, partitioned)
    go = tmp_path / "go"
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
    proc_writers = list(range(1, PROCESS_WRITERS + 1))
    thread_writers = list(range(PROCESS_WRITERS + 1, PROCESS_WRITERS + THREAD_WRITERS + 1))
    procs = {
        w: subprocess.Popen(
            [
                sys.executable,
                __file__,
                str(w),
                str(MIXED_ROUNDS),
                str(go),
                tables[True],
                tables[False],
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            cwd=str(tmp_path),
        )
        for w in proc_writers
    }
    try:
        # Release everybody at once, after the child JVMs are up.
        ready = [tmp_path / f"ready-{w}" for w in proc_writers]
        deadline = time.monotonic() + 180
        while not all(r.exists() for r in ready):
            assert all(p.poll() is None for p in procs.values()), "a writer process died"
            assert time.monotonic() < deadline, "writer processes did not start in time"
            time.sleep(0.05)
        go.touch()

        def write_rounds(writer: int) -> None:
            for rnd in range(MIXED_ROUNDS):
                for partitioned, path in tables.items():
                    _append(spark, path, writer, rnd, partitioned)

        thread_errors = _run_threads(write_rounds, thread_writers)
        outputs = {w: p.communicate(timeout=300) for w, p in procs.items()}
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.kill()
                p.wait()
    assert thread_errors == []
    assert _library_warnings(caplog) == []
    for w, p in procs.items():
        out, err = outputs[w]
        assert p.returncode == 0, f"writer process {w} failed:\n{err[-4000:]}"
        assert "post-commit hook failed" not in err, err[-4000:]
        assert out.strip().splitlines()[-1] == f"done {w}"
    writes = [(w, r) for w in proc_writers + thread_writers for r in range(MIXED_ROUNDS)]
    for partitioned, path in tables.items():
        _check_table(spark, path, writes, partitioned)


def test_two_users_append_from_version_0(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Users 1 and 2 append concurrently from version 0 (both are held at the commit
    point until both have read version 0): one writes 00000000000000000001.json, the
    other is retried and writes 00000000000000000002.json, without error."""
    from delta_pyspark.core.snapshot.delta_log import DeltaLog

    path = str(tmp_path / "table")
    _append(spark, path, SEED, 0, True)
    real_write_commit = DeltaLog.write_commit
    both_read_v0 = threading.Barrier(2)
    attempted: list[int] = []

    def write_commit(log: DeltaLog, version: int, data: bytes) -> None:
        attempted.append(version)
        if version == 1:
            both_read_v0.wait(timeout=120)
        real_write_commit(log, version, data)

    monkeypatch.setattr(DeltaLog, "write_commit", write_commit)
    errors = _run_threads(lambda user: _append(spark, path, user, 0, True), [1, 2])
    monkeypatch.undo()
    assert errors == []
    assert sorted(attempted) == [1, 1, 2]  # the loser retried once, at the next version
    log_dir = tmp_path / "table" / "_delta_log"
    assert (log_dir / "00000000000000000001.json").is_file()
    assert (log_dir / "00000000000000000002.json").is_file()
    assert not (log_dir / "00000000000000000003.json").exists()
    commits = _commit_files(tmp_path / "table")
    infos = [commits[v][0]["commitInfo"] for v in (1, 2)]
    assert [i["readVersion"] for i in infos] == [0, 0]
    assert sorted(i["userMetadata"] for i in infos) == [_label(1, 0), _label(2, 0)]
    _check_table(spark, path, [(1, 0), (2, 0)], True)


def _child(argv: list[str]) -> None:
    """A writer process: its own SparkSession; waits for ``go``; appends its rounds."""
    writer, rounds, go, partitioned_path, unpartitioned_path = argv
    from pyspark.sql import SparkSession

    from delta_pyspark import configure_spark_with_delta

    builder = (
        SparkSession.builder.master("local[1]")
        .appName(f"concurrent-writer-{writer}")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "1")
        .config("spark.default.parallelism", "1")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.memory", "512m")
        # A short-lived JVM: skip C2 compilation and parallel GC threads (2-core machines).
        .config("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
    )
    spark = configure_spark_with_delta(builder).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    try:
        spark.createDataFrame([(1, "x")], "id long, p string").collect()  # warm up
        Path(go).with_name(f"ready-{writer}").touch()
        while not os.path.exists(go):
            time.sleep(0.01)
        for rnd in range(int(rounds)):
            _append(spark, partitioned_path, int(writer), rnd, True)
            _append(spark, unpartitioned_path, int(writer), rnd, False)
        print(f"done {writer}", flush=True)
    finally:
        spark.stop()


if __name__ == "__main__":
    _child(sys.argv[1:])
