"""Time travel: every version of the golden tables, timestamps from file mtimes (made
monotonic) or in-commit timestamps, clear errors outside the log, path suffixes."""

from __future__ import annotations

import json
import os
import shutil
from datetime import UTC, date, datetime, timedelta, timezone
from pathlib import Path
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from data_paths import GOLDEN
from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.core.snapshot.time_travel import parse_timestamp_ms, split_path_suffix
from delta_pyspark.exceptions import DeltaIllegalArgumentException, VersionNotFoundError

T0 = 1_600_000_000  # seconds; whole seconds keep mtimes exact


def _versions(table: Path) -> list[int]:
    return sorted(int(p.name[:20]) for p in (table / "_delta_log").glob("*.json"))


def _multi_version_golden() -> list[str]:
    return sorted(
        d.name
        for d in GOLDEN.iterdir()
        if (d / "expected").is_dir() and len(_versions(d / "delta")) > 1
    )


def copy_table(src: Path, dst: Path) -> Path:
    """A writable copy of a read-only test table."""
    shutil.copytree(src, dst, copy_function=shutil.copyfile)
    for d, _, _ in os.walk(dst):
        os.chmod(d, 0o755)
    return dst


def _set_mtime(table: Path, version: int, seconds: float) -> None:
    os.utime(table / "_delta_log" / f"{version:020d}.json", (seconds, seconds))


# ------------------------------------------------------------------ every version


@pytest.mark.parametrize("name", _multi_version_golden())
def test_every_version_matches_deltalake(name: str) -> None:
    import deltalake

    table = GOLDEN / name / "delta"
    log = DeltaLog(str(table))
    for version in _versions(table):
        snapshot = log.snapshot(version)
        assert snapshot.version == version
        theirs = deltalake.DeltaTable(str(table), version=version)
        paths = pa.table(theirs.get_add_actions()).column("path").to_pylist()
        assert sorted(snapshot.files.column("path").to_pylist()) == sorted(paths), version
        assert snapshot.metadata.schema_string  # schema readable at every version


def test_time_travel_start_row_counts() -> None:
    table = GOLDEN / "time-travel-start-start20-start40" / "delta"
    log = DeltaLog(str(table))
    rows = []
    for version in range(3):
        paths = log.snapshot(version).files.column("path").to_pylist()
        rows.append(sum(pq.read_metadata(table / unquote(p)).num_rows for p in paths))
    assert rows == [10, 20, 30]


# ------------------------------------------------------------------ timestamps


@pytest.fixture
def three_versions(tmp_path: Path) -> Path:
    return copy_table(GOLDEN / "time-travel-start-start20-start40" / "delta", tmp_path / "t")


def test_version_at_timestamp_from_mtimes(three_versions: Path) -> None:
    for v in range(3):
        _set_mtime(three_versions, v, T0 + 60 * v)
    log = DeltaLog(str(three_versions))
    ms = T0 * 1000
    assert log.version_at_timestamp(ms) == 0
    assert log.version_at_timestamp(ms + 59_999) == 0
    assert log.version_at_timestamp(ms + 60_000) == 1
    assert log.version_at_timestamp(ms + 120_000) == 2
    snapshot = log.snapshot_at_timestamp(ms + 90_000)
    assert snapshot.version == 1
    assert snapshot.timestamp == ms + 60_000
    assert [r.timestamp for r in log.commit_records()] == [ms, ms + 60_000, ms + 120_000]
    with pytest.raises(VersionNotFoundError, match="before the earliest available version 0"):
        log.version_at_timestamp(ms - 1)
    with pytest.raises(VersionNotFoundError, match="after the latest version 2"):
        log.version_at_timestamp(ms + 120_001)


def test_non_monotonic_mtimes_are_adjusted(three_versions: Path) -> None:
    _set_mtime(three_versions, 0, T0 + 100)
    _set_mtime(three_versions, 1, T0)  # older than version 0: clock skew
    _set_mtime(three_versions, 2, T0 + 200)
    log = DeltaLog(str(three_versions))
    ms = T0 * 1000
    assert [r.timestamp for r in log.commit_records()] == [ms + 100_000, ms + 100_001, ms + 200_000]
    assert log.version_at_timestamp(ms + 100_000) == 0
    assert log.version_at_timestamp(ms + 100_001) == 1
    assert log.version_at_timestamp(ms + 150_000) == 1
    with pytest.raises(VersionNotFoundError, match="before the earliest"):
        log.version_at_timestamp(ms)
    assert [row["timestamp"] for row in log.history()] == [ms + 200_000, ms + 100_001, ms + 100_000]


def test_in_commit_timestamps_win_over_mtimes(tmp_path: Path) -> None:
    schema = json.dumps(
        {
            "type": "struct",
            "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}}],
        }
    )
    meta = {
        "id": "x",
        "format": {"provider": "parquet", "options": {}},
        "schemaString": schema,
        "partitionColumns": [],
        "configuration": {"delta.enableInCommitTimestamps": "true"},
    }
    protocol = {
        "minReaderVersion": 1,
        "minWriterVersion": 7,
        "writerFeatures": ["inCommitTimestamp"],
    }
    log_dir = tmp_path / "_delta_log"
    log_dir.mkdir()
    ict = [1_700_000_000_000, 1_700_000_005_000, 1_700_000_009_000]
    for v, ts in enumerate(ict):
        lines = [{"commitInfo": {"inCommitTimestamp": ts, "timestamp": ts + 777, "operation": "X"}}]
        if v == 0:
            lines += [{"protocol": protocol}, {"metaData": meta}]
        (log_dir / f"{v:020d}.json").write_text("\n".join(map(json.dumps, lines)) + "\n")
        _set_mtime(tmp_path, v, T0 - 10 * v)  # decreasing and unrelated
    log = DeltaLog(str(tmp_path))
    assert [r.timestamp for r in log.commit_records()] == ict
    assert log.snapshot(1).timestamp == ict[1]
    assert log.version_at_timestamp(ict[2] - 1) == 1
    assert log.version_at_timestamp(ict[2]) == 2


# ------------------------------------------------------------------ errors


def test_versions_outside_the_log(tmp_path: Path) -> None:
    table = copy_table(GOLDEN / "basic-with-inserts-deletes-checkpoint" / "delta", tmp_path / "t")
    for v in range(10):  # cleaned up: the checkpoint at 10 is now the oldest state
        (table / "_delta_log" / f"{v:020d}.json").unlink()
    log = DeltaLog(str(table))
    for v in range(10, 14):
        assert log.snapshot(v).version == v
    with pytest.raises(VersionNotFoundError, match=r"cannot reconstruct version 5.*cleaned up"):
        log.snapshot(5)
    with pytest.raises(VersionNotFoundError, match="earliest commit available is 10"):
        log.snapshot(9)
    with pytest.raises(VersionNotFoundError, match="the latest version is 13"):
        log.snapshot(14)
    with pytest.raises(VersionNotFoundError, match="versions start at 0"):
        log.snapshot(-1)
    first = log.commit_records()[0]
    assert first.version == 10
    with pytest.raises(VersionNotFoundError, match="before the earliest available version 10"):
        log.version_at_timestamp(first.timestamp - 1)


# ------------------------------------------------------------------ path suffixes and parsing


def test_split_path_suffix() -> None:
    assert split_path_suffix("/data/t@v12") == ("/data/t", 12, None)
    assert split_path_suffix("/data/t@v0") == ("/data/t", 0, None)
    expected = int(datetime(2024, 1, 31, 10, 0, 0, 123_000, tzinfo=UTC).timestamp() * 1000)
    assert split_path_suffix("/data/t@20240131100000123") == ("/data/t", None, expected)
    assert split_path_suffix("/data/t") == ("/data/t", None, None)
    assert split_path_suffix("/data/t@vx") == ("/data/t@vx", None, None)
    assert split_path_suffix("/data/t@2024013110000012") == ("/data/t@2024013110000012", None, None)
    plus_two = timezone(timedelta(hours=2))
    assert split_path_suffix("/t@20240131100000000", plus_two)[2] == expected - 123 - 2 * 3_600_000


def test_bad_timestamp_suffix_is_refused() -> None:
    with pytest.raises(DeltaIllegalArgumentException, match="bad timestamp suffix"):
        split_path_suffix("/data/t@20241331100000000")


def test_parse_timestamp_ms() -> None:
    base = int(datetime(2024, 1, 31, tzinfo=UTC).timestamp() * 1000)
    assert parse_timestamp_ms("2024-01-31") == base
    assert parse_timestamp_ms("2024-01-31 10:00:00") == base + 36_000_000
    assert parse_timestamp_ms("2024-01-31T10:00:00.5Z") == base + 36_000_500
    assert parse_timestamp_ms("2024-01-31T10:00:00+01:00") == base + 32_400_000
    assert parse_timestamp_ms(date(2024, 1, 31)) == base
    assert parse_timestamp_ms(datetime(2024, 1, 31, 1)) == base + 3_600_000
    assert parse_timestamp_ms(base) == base
    # Spark's string-to-timestamp cast, which delta-spark applies to the argument: one-digit
    # fields, a region, surrounding blanks (none of them ISO-8601)
    assert parse_timestamp_ms(" 2024-1-31 9:5:7 ") == base + 32_707_000
    assert parse_timestamp_ms("2024-01-31 05:00:00 America/New_York") == base + 36_000_000
    for bad in ("20240131", "2024-01-31 25:00:00"):
        with pytest.raises(DeltaIllegalArgumentException, match="cannot be converted"):
            parse_timestamp_ms(bad)
    with pytest.raises(
        DeltaIllegalArgumentException,
        match=r"The provided timestamp \('yesterday'\) cannot be converted",
    ):
        parse_timestamp_ms("yesterday")
