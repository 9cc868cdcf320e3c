"""Delta through Spark Connect: a local Connect session (``remote("local[1]")`` with
``configure_spark_with_delta``) and ``delta-pyspark connect-server`` with a remote client.

Each runs in a worker process (``connect_worker.py``): this process's classic SparkContext
would stop a local Connect server from starting. The worker reports what it observed per
scenario; the assertions, and the files on disk, are checked here.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from delta_pyspark.core.snapshot.delta_log import DeltaLog

# a worker JVM per module: CI's second step, and its run on the newest Spark (.ci/run)
pytestmark = [pytest.mark.long, pytest.mark.connect]

WORKER = Path(__file__).with_name("connect_worker.py")
ALL = [
    "dataframes",
    "sql",
    "table_writes",
    "streaming",
    "delta_table",
    "delta_spark_client",
    "errors",
]
REMOTE = ["dataframes", "sql", "table_writes", "streaming", "delta_spark_client", "errors"]


def _run_worker(target: str, root: Path, scenarios: list[str]) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, str(WORKER), target, str(root), ",".join(scenarios)],
        env=dict(os.environ, PYSPARK_PYTHON=sys.executable),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    results: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    for name in scenarios:
        assert "failed" not in results[name], results[name]["failed"]
    return results


@pytest.fixture(scope="module")
def local(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Path]:
    root = tmp_path_factory.mktemp("connect_local")
    return _run_worker("local", root, ALL), root


def _check_dataframes(seen: dict[str, Any], root: Path) -> None:
    assert seen["filtered"] == [8, 9, 10, 11]
    assert seen["overwritten"] == [100, 101]
    assert seen["version_1"] == list(range(12))
    assert seen["history"] == [[2, "WRITE"], [1, "WRITE"], [0, "WRITE"]]
    snapshot = DeltaLog(str(root / "dataframes" / "df")).snapshot()
    assert snapshot.version == 2 and snapshot.num_files >= 1


def _check_sql(seen: dict[str, Any]) -> None:
    assert seen["rows"] == [[1, "u"], [3, "m"], [4, "n"]]
    assert seen["version_1"] == [1, 2, 3]
    assert [op for _, op in seen["history"]] == [
        "MERGE",
        "DELETE",
        "UPDATE",
        "WRITE",
        "CREATE TABLE",
    ]
    assert seen["limited"] == [4]  # a parameter marker in a Delta statement


def _check_table_writes(seen: dict[str, Any]) -> None:
    # an overwriting saveAsTable keeps the table's history (Spark's own would drop the table)
    assert seen["saved"] == [7, 8]
    assert [v for v, _ in seen["saved_history"]] == [2, 1, 0]
    assert seen["saved_first"] == [0, 1, 2]
    assert seen["v2"] == [1, 2, 3, 4]  # create, append, overwrite(id < 3)
    assert [v for v, _ in seen["v2_history"]] == [2, 1, 0]


def _check_streaming(seen: dict[str, Any]) -> None:
    assert seen["first"] == [0, 1, 2, 10, 11, 12]
    assert seen["second"] == [0, 1, 2, 10, 11, 12, 20, 21]


def _check_errors(seen: dict[str, Any]) -> None:
    kind, condition, message = seen["history_of_parquet"]
    assert kind == "AnalysisException"  # PySpark's, which a delta-spark user catches
    assert condition == "DELTA_TABLE_ONLY_OPERATION"
    assert "connect_parquet is not a Delta table: it is a parquet table" in message
    kind, message = seen["missing_table"]
    assert kind == "AnalysisException" and "Path does not exist" in message


def _check_delta_spark_client(seen: dict[str, Any], root: Path) -> None:
    assert seen["to_df"] == [0, 1, 2, 3, 4]
    assert seen["delete"] == [[1]] and seen["update"] == [[1]]  # rows affected
    assert seen["merge"] == [[4, 2, 0, 2]]  # affected, updated, deleted, inserted
    assert seen["rows"] == [[1, "u"], [2, "a"], [3, "x"], [4, "x"], [5, "new"], [6, "new"]]
    assert seen["history"] == ["MERGE", "UPDATE", "DELETE", "WRITE"]
    assert seen["detail_format"] == "delta" and seen["is_delta"] == [True, False]
    assert seen["optimize"] == 1
    assert seen["restored"] == [1, 2, 3, 4]  # version 1: after the DELETE
    assert seen["made"] == [3]
    snapshot = DeltaLog(str(root / "delta_spark_client" / "client")).snapshot()
    assert "deletionVectors" in (snapshot.protocol.writer_features or [])  # addFeatureSupport
    operations = [c["operation"] for c in _operations(root)]
    assert operations[-4:] == ["RESTORE", "ADD FEATURE", "VACUUM START", "VACUUM END"]


def _operations(root: Path) -> list[dict[str, Any]]:
    log = root / "delta_spark_client" / "client" / "_delta_log"
    infos = []
    for commit in sorted(log.glob("*.json")):
        for line in commit.read_text().splitlines():
            action = json.loads(line)
            if "commitInfo" in action:
                infos.append(action["commitInfo"])
    return infos


def test_a_local_connect_session_reads_and_writes_delta(
    local: tuple[dict[str, Any], Path],
) -> None:
    results, root = local
    assert results["session"] == "pyspark.sql.connect.session"
    _check_dataframes(results["dataframes"], root)


def test_a_local_connect_session_runs_delta_sql(local: tuple[dict[str, Any], Path]) -> None:
    _check_sql(local[0]["sql"])


def test_a_local_connect_session_keeps_history_through_table_writes(
    local: tuple[dict[str, Any], Path],
) -> None:
    _check_table_writes(local[0]["table_writes"])


def test_a_local_connect_session_streams_delta(local: tuple[dict[str, Any], Path]) -> None:
    _check_streaming(local[0]["streaming"])


def test_delta_table_on_a_local_connect_session(local: tuple[dict[str, Any], Path]) -> None:
    seen = local[0]["delta_table"]
    assert seen["to_df_type"] == "pyspark.sql.connect.dataframe"
    assert seen["merge_metrics"] == [[4, 2, 0, 2]]  # affected, updated, deleted, inserted
    assert seen["rows"] == [[1, "u"], [2, "a"], [3, "x"], [4, "x"], [5, "x"], [6, "x"]]
    assert seen["compacted"] == 1
    assert [op for _, op in seen["history"]] == [
        "RESTORE",
        "OPTIMIZE",
        "UPDATE",
        "DELETE",
        "MERGE",
        "WRITE",
    ]
    assert seen["restored"] == [[0, "a"], [1, "a"], [2, "a"]] + [[i, "x"] for i in range(3, 7)]
    assert seen["made"] == [7] and seen["by_name"] == 1
    assert seen["is_delta"] == [True, False]


def test_delta_spark_s_own_connect_client_on_a_local_session(
    local: tuple[dict[str, Any], Path],
) -> None:
    _check_delta_spark_client(local[0]["delta_spark_client"], local[1])


def test_delta_errors_reach_a_local_connect_client_with_their_condition(
    local: tuple[dict[str, Any], Path],
) -> None:
    _check_errors(local[0]["errors"])


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_connect_server_serves_a_remote_client(tmp_path: Path) -> None:
    port = _free_port()
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "delta_pyspark.cli",
            "connect-server",
            "--port",
            str(port),
            "--host",
            "127.0.0.1",
            "--master",
            "local[1]",
        ],
        env=dict(os.environ, PYSPARK_PYTHON=sys.executable),
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    try:
        assert server.stdout is not None
        assert server.stdout.readline().strip() == (
            f"delta-pyspark: Spark Connect server on sc://127.0.0.1:{port}"
        )
        results = _run_worker(f"sc://127.0.0.1:{port}", tmp_path, REMOTE)
        _check_dataframes(results["dataframes"], tmp_path)
        _check_sql(results["sql"])
        _check_table_writes(results["table_writes"])
        _check_streaming(results["streaming"])
        _check_delta_spark_client(results["delta_spark_client"], tmp_path)
        _check_errors(results["errors"])
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=60) == 0
        with pytest.raises(OSError), socket.create_connection(("127.0.0.1", port), timeout=2):
            pass  # nothing listens any more
    finally:
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGKILL)
            time.sleep(1)
