"""``delta-pyspark describe|files|history``: the --json contract and one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from data_paths import GOLDEN, TESTDATA
from delta_pyspark.cli import main

DESCRIBE_KEYS = {
    "version",
    "numFiles",
    "sizeInBytes",
    "partitionColumns",
    "properties",
    "minReaderVersion",
    "minWriterVersion",
    "readerFeatures",
    "writerFeatures",
    "schema",
}
FILE_KEYS = {"path", "partitionValues", "size", "modificationTime", "stats", "deletionVector"}


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    assert main([*argv, "--json"]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    return json.loads(out)


def _log_adds(table: Path) -> list[dict[str, Any]]:
    return [
        json.loads(line)["add"]
        for f in sorted((table / "_delta_log").glob("*.json"))
        for line in f.read_text().splitlines()
        if line.strip() and "add" in json.loads(line)
    ]


def test_describe_json(capsys: pytest.CaptureFixture[str]) -> None:
    table = GOLDEN / "basic-decimal-table" / "delta"
    info = run_json(capsys, "describe", str(table))
    assert set(info) >= DESCRIBE_KEYS
    adds = _log_adds(table)
    assert info["version"] == 0
    assert info["numFiles"] == len(adds) == 4
    assert info["sizeInBytes"] == sum(a["size"] for a in adds)
    assert info["partitionColumns"] == ["part"]
    assert info["properties"] == {}
    assert (info["minReaderVersion"], info["minWriterVersion"]) == (1, 2)
    assert (info["readerFeatures"], info["writerFeatures"]) == ([], [])
    assert info["schema"]["type"] == "struct"
    assert [f["name"] for f in info["schema"]["fields"]] == ["part", "col1", "col2", "col3"]


def test_describe_json_table_features(capsys: pytest.CaptureFixture[str]) -> None:
    info = run_json(capsys, "describe", str(GOLDEN / "v2-checkpoint-json" / "delta"))
    assert (info["minReaderVersion"], info["minWriterVersion"]) == (3, 7)
    assert "v2Checkpoint" in info["readerFeatures"]
    assert "v2Checkpoint" in info["writerFeatures"]
    assert info["properties"].get("delta.checkpointPolicy") == "v2"


def test_describe_json_at_version(capsys: pytest.CaptureFixture[str]) -> None:
    table = str(GOLDEN / "time-travel-start-start20-start40" / "delta")
    assert [
        run_json(capsys, "describe", table, "--version", str(v))["version"] for v in range(3)
    ] == [0, 1, 2]


def test_files_json(capsys: pytest.CaptureFixture[str]) -> None:
    table = GOLDEN / "basic-decimal-table" / "delta"
    files = run_json(capsys, "files", str(table))
    assert len(files) == 4
    by_path = {a["path"]: a for a in _log_adds(table)}
    for f in files:
        assert set(f) == FILE_KEYS
        logged = by_path[f["path"]]
        assert f["partitionValues"] == logged["partitionValues"]
        assert (f["size"], f["modificationTime"]) == (logged["size"], logged["modificationTime"])
        assert f["stats"] == json.loads(logged["stats"])
        assert f["deletionVector"] is None


def test_files_json_deletion_vectors_and_missing_stats(capsys: pytest.CaptureFixture[str]) -> None:
    files = run_json(capsys, "files", str(TESTDATA / "kernel" / "table-with-dv-small"))
    (f,) = files
    assert f["deletionVector"]["storageType"] in ("u", "i", "p")
    assert f["deletionVector"]["cardinality"] == 2
    no_stats = run_json(capsys, "files", str(GOLDEN / "data-reader-primitives" / "delta"))
    assert no_stats and all(f["stats"] is None for f in no_stats)


def test_history_json(capsys: pytest.CaptureFixture[str]) -> None:
    table = str(GOLDEN / "time-travel-start-start20-start40" / "delta")
    rows = run_json(capsys, "history", table)
    assert [r["version"] for r in rows] == [2, 1, 0]
    assert all(r["operation"] == "WRITE" and isinstance(r["timestamp"], int) for r in rows)
    assert rows[1]["readVersion"] == 0
    assert [r["version"] for r in run_json(capsys, "history", table, "--limit", "1")] == [2]


@pytest.mark.parametrize(
    ("argv", "error"),
    [
        (["describe", str(GOLDEN / "no-delta-log-folder" / "delta")], "DeltaTableNotFoundError"),
        (["files", str(GOLDEN / "versions-not-contiguous" / "delta")], "CorruptLogError"),
        (
            ["describe", str(GOLDEN / "time-travel-start" / "delta"), "--version", "7"],
            "VersionNotFoundError",
        ),
        (
            ["describe", str(GOLDEN / "deltalog-invalid-protocol-version" / "delta")],
            "UnsupportedTableFeatureError",
        ),
        (
            ["describe", str(GOLDEN / "time-travel-start" / "delta"), "--timestamp", "soon"],
            "DeltaIllegalArgumentException",
        ),
    ],
)
def test_errors_are_one_line(
    capsys: pytest.CaptureFixture[str], argv: list[str], error: str
) -> None:
    assert main([*argv, "--json"]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1
    assert err.startswith(f"delta-pyspark: error: {error}: ")
    assert "Traceback" not in err


def test_human_output(capsys: pytest.CaptureFixture[str]) -> None:
    table = str(GOLDEN / "basic-decimal-table" / "delta")
    for command in ("describe", "files", "history"):
        assert main([command, table]) == 0
        out, _ = capsys.readouterr()
        assert out.strip()
    assert main(["describe", table]) == 0
    assert "col1" in capsys.readouterr().out


def test_module_entry_point() -> None:
    table = str(GOLDEN / "time-travel-start" / "delta")
    done = subprocess.run(
        [sys.executable, "-m", "delta_pyspark.cli", "describe", table, "--json"],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["numFiles"] == 2
    bad = subprocess.run(
        [sys.executable, "-m", "delta_pyspark.cli", "describe", str(GOLDEN / "no-such-table")],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert bad.returncode == 1
    assert bad.stderr.startswith("delta-pyspark: error: DeltaTableNotFoundError")


def test_cold_inspection_imports_only_the_log_readers() -> None:
    """A cold ``describe``/``files``/``history`` loads the log's readers and nothing else:
    no numpy (pyarrow would load it on start), pandas, Spark, rich for ``--json``, the
    catalogs or the SQL front end. numpy stays importable for code that needs it."""
    table = str(TESTDATA / "kernel" / "table-with-dv-small")
    code = (
        "import json, sys\n"
        "from delta_pyspark.cli import main\n"
        "for command in ('describe', 'files', 'history'):\n"
        f"    assert main([command, {table!r}, '--json']) == 0\n"
        "loaded = sorted(sys.modules)\n"
        "import numpy, pyarrow.lib\n"
        "assert pyarrow.lib.np is None, 'pyarrow was imported with numpy'\n"
        "print(json.dumps(loaded))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=120
    )
    assert done.returncode == 0, done.stderr
    loaded = json.loads(done.stdout.strip().splitlines()[-1])
    assert "delta_pyspark.core.snapshot.delta_log" in loaded
    unwanted = ("numpy", "pandas", "pyspark", "py4j", "rich", "sqlglot", "pyiceberg", "psycopg")
    assert [m for m in loaded if m.split(".")[0] in unwanted] == []
    ours = ("delta_pyspark.spark", "delta_pyspark.sql", "delta_pyspark.core.catalog")
    assert [m for m in loaded if m.startswith(ours)] == []
