"""Acceptance: tables written by delta-spark, delta-kernel-rs and delta-rs load (or are
refused with a typed error saying why), and agree with the reference outputs and with
``deltalake`` (delta-rs) on version, protocol and the list of live files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from data_paths import GOLDEN, TESTDATA
from delta_pyspark.core.protocol.table_features import SUPPORTED_READER_FEATURES
from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.core.snapshot.snapshot import Snapshot
from delta_pyspark.exceptions import (
    ChecksumMismatchError,
    CorruptLogError,
    DeltaError,
    DeltaTableNotFoundError,
    UnsupportedTableFeatureError,
)


def _golden(with_expected: bool) -> list[str]:
    return sorted(
        d.name
        for d in GOLDEN.iterdir()
        if d.is_dir() and (d / "expected").is_dir() == with_expected
    )


def _other_tables() -> list[str]:
    """kernel/ and delta-rs/ tables (some nested one or two levels), relative to TESTDATA."""
    found = []
    for base in ("kernel", "delta-rs"):
        found += [
            str(p.parent.relative_to(TESTDATA)) for p in (TESTDATA / base).rglob("_delta_log")
        ]
    return sorted(found)


# Golden tables without expected/: broken logs a reader must refuse, by type and reason.
REFUSED_GOLDEN: dict[str, tuple[type[DeltaError], str]] = {
    "deltalog-state-reconstruction-without-protocol": (CorruptLogError, "no protocol action"),
    "deltalog-state-reconstruction-from-checkpoint-missing-protocol": (
        CorruptLogError,
        r"checkpoint at version 10 .*protocol",
    ),
    "versions-not-contiguous": (CorruptLogError, r"not contiguous.*missing commit\(s\) \[1\]"),
    "no-delta-log-folder": (DeltaTableNotFoundError, r"not a Delta table.*_delta_log"),
    "deltalog-invalid-protocol-version": (UnsupportedTableFeatureError, "reader version 99"),
    # metaData without schemaString: only its commitInfo is readable (see the history test).
    "deltalog-commit-info": (CorruptLogError, "schemaString"),
}
# Golden tables without expected/ that test metadata only: (version, number of live files).
# canonicalized-paths-*: a remove of ``file:///p`` cancels the add of ``/p`` (delta-spark's
# DeltaLogSuite expects no files; delta-rs and kernel-rs list it as a known bug).
METADATA_ONLY_GOLDEN: dict[str, tuple[int, int]] = {
    "canonicalized-paths-normal-b": (1, 0),
    "canonicalized-paths-special-b": (1, 0),
    "log-replay-special-characters-b": (0, 1),
}
# delta-rs disagrees with delta-spark on these (path canonicalization bug in delta-rs).
DELTALAKE_KNOWN_DIFFERENT = {"canonicalized-paths-normal-b", "canonicalized-paths-special-b"}

REFUSED_OTHER: dict[str, tuple[type[DeltaError], str, list[str] | None]] = {
    "kernel/table-with-geo": (UnsupportedTableFeatureError, "geospatial", ["geospatial"]),
    "delta-rs/simple_table_features": (
        UnsupportedTableFeatureError,
        "requires reader version 5",
        ["readerVersion5"],
    ),
    # Only a malformed 0.crc and no commit: there is no table here.
    "kernel/crc-malformed": (DeltaTableNotFoundError, "no commit or checkpoint", None),
    # Its 0.crc claims 10 files; the commit adds none (a fixture for parsing checksums).
    "kernel/crc-full": (ChecksumMismatchError, "numFiles 10 != 0", None),
}


def _load(path: Path) -> Snapshot:
    return DeltaLog(str(path)).snapshot()


def _deltalake_view(path: Path) -> dict[str, Any] | None:
    """What delta-rs sees: version, live file paths (a multiset), protocol; None if it fails."""
    import deltalake

    try:
        dt = deltalake.DeltaTable(str(path))
        paths = pa.table(dt.get_add_actions(flatten=True)).column("path").to_pylist()
        p = dt.protocol()
    except Exception:  # delta-rs cannot open every table; then there is nothing to compare
        return None
    return {
        "version": dt.version(),
        "paths": sorted(paths),
        "protocol": (
            p.min_reader_version,
            p.min_writer_version,
            sorted(p.reader_features or []),
            sorted(p.writer_features or []),
        ),
    }


def _protocol_tuple(snapshot: Snapshot) -> tuple[int, int, list[str], list[str]]:
    p = snapshot.protocol
    return (
        p.min_reader_version,
        p.min_writer_version,
        sorted(p.reader_features or []),
        sorted(p.writer_features or []),
    )


def _live_paths(snapshot: Snapshot) -> list[str]:
    return sorted(snapshot.files.column("path").to_pylist())


def _latest_version_on_disk(table: Path) -> int:
    return max(
        int(p.name[:20]) for p in (table / "_delta_log").glob("*.json") if p.name[:20].isdigit()
    )


def _assert_matches_deltalake(table: Path, snapshot: Snapshot) -> None:
    theirs = _deltalake_view(table)
    if theirs is None:
        return
    assert snapshot.version == theirs["version"]
    assert _live_paths(snapshot) == theirs["paths"]
    assert _protocol_tuple(snapshot) == theirs["protocol"]


def _live_row_count(table: Path, snapshot: Snapshot) -> int:
    """Rows in the live files: Parquet footers minus each file's deletion-vector cardinality."""
    total = 0
    for row in snapshot.files.select(["path", "deletionVector"]).to_pylist():
        total += pq.read_metadata(table / unquote(row["path"])).num_rows
        total -= (row["deletionVector"] or {}).get("cardinality") or 0
    return total


# ------------------------------------------------------------------ golden, with expected/


@pytest.mark.parametrize("name", _golden(with_expected=True))
def test_golden_table_matches_reference_output(name: str) -> None:
    table = GOLDEN / name / "delta"
    expected = sorted((GOLDEN / name / "expected").rglob("*.parquet"))
    snapshot = _load(table)  # a checksum disagreeing with the log would raise

    assert snapshot.version == _latest_version_on_disk(table)
    top_level = snapshot.schema.field_names
    assert expected, f"{name}: no expected Parquet files"
    for part in expected:
        assert pq.read_schema(part).names == top_level, part.name
    assert set(snapshot.partition_columns) <= set(top_level)
    # The live files hold exactly the rows the reference reader returned.
    expected_rows = sum(pq.read_metadata(p).num_rows for p in expected)
    assert _live_row_count(table, snapshot) == expected_rows
    assert snapshot.num_files == len(set(snapshot.files_with_keys.column("_key").to_pylist()))
    _assert_matches_deltalake(table, snapshot)


# ------------------------------------------------------------------ golden, without expected/


def test_every_golden_table_without_expected_is_classified() -> None:
    without = set(_golden(with_expected=False))
    assert without, "no golden tables found"
    assert without == set(REFUSED_GOLDEN) | set(METADATA_ONLY_GOLDEN)


@pytest.mark.parametrize("name", sorted(REFUSED_GOLDEN))
def test_broken_golden_table_is_refused(name: str) -> None:
    error, message = REFUSED_GOLDEN[name]
    with pytest.raises(error, match=message):
        DeltaLog(str(GOLDEN / name / "delta")).snapshot()


def test_invalid_protocol_version_names_the_version() -> None:
    with pytest.raises(UnsupportedTableFeatureError) as info:
        DeltaLog(str(GOLDEN / "deltalog-invalid-protocol-version" / "delta")).snapshot()
    assert info.value.features == ["readerVersion99"]


def test_no_delta_log_folder_is_not_a_delta_table() -> None:
    assert DeltaLog(str(GOLDEN / "no-delta-log-folder" / "delta")).is_delta_table() is False
    assert DeltaLog(str(GOLDEN / "basic-decimal-table" / "delta")).is_delta_table() is True


@pytest.mark.parametrize("name", sorted(METADATA_ONLY_GOLDEN))
def test_metadata_only_golden_table(name: str) -> None:
    version, num_files = METADATA_ONLY_GOLDEN[name]
    table = GOLDEN / name / "delta"
    snapshot = _load(table)
    assert (snapshot.version, snapshot.num_files) == (version, num_files)
    if name not in DELTALAKE_KNOWN_DIFFERENT:
        _assert_matches_deltalake(table, snapshot)


def test_special_characters_path_is_kept_as_written() -> None:
    snapshot = _load(GOLDEN / "log-replay-special-characters-b" / "delta")
    (path,) = _live_paths(snapshot)
    assert unquote(path) == "special p@#h"


def test_commit_info_of_metadata_only_table_is_in_history() -> None:
    (row,) = DeltaLog(str(GOLDEN / "deltalog-commit-info" / "delta")).history()
    assert row["version"] == 0
    assert row["operation"] == "WRITE"
    assert row["userId"] == "user_0"
    assert row["operationParameters"] == {"test": "test"}
    assert row["job"]["jobName"] == "job_name_0"
    assert row["notebook"] == {"notebookId": "notebook_id_0"}
    assert row["userMetadata"] == "foo"
    assert row["isBlindAppend"] is True


def test_corrupt_last_checkpoint_falls_back_to_listing() -> None:
    snapshot = _load(GOLDEN / "corrupted-last-checkpoint-kernel" / "delta")
    assert snapshot.version == 11
    assert snapshot.segment.checkpoint is not None


# ------------------------------------------------------------------ kernel/ and delta-rs/


@pytest.mark.parametrize("rel", _other_tables())
def test_other_implementation_table_loads_or_is_refused(rel: str) -> None:
    table = TESTDATA / rel
    if rel in REFUSED_OTHER:
        error, message, features = REFUSED_OTHER[rel]
        with pytest.raises(error, match=message) as info:
            DeltaLog(str(table)).snapshot()
        if features is not None:
            assert getattr(info.value, "features", None) == features
        return
    try:
        snapshot = _load(table)
    except UnsupportedTableFeatureError as e:
        # A refusal must name features this implementation really lacks.
        assert e.features, str(e)
        for feature in e.features:
            assert feature in str(e)
            assert feature not in SUPPORTED_READER_FEATURES
        return
    assert snapshot.num_files == len(set(snapshot.files_with_keys.column("_key").to_pylist()))
    _assert_matches_deltalake(table, snapshot)


def test_kernel_app_transactions() -> None:
    snapshot = _load(TESTDATA / "kernel" / "app-txn-with-last-updated")
    txns = {app: t.version for app, t in snapshot.set_transactions.items()}
    assert txns
    raw = [
        json.loads(line)["txn"]
        for f in sorted(
            (TESTDATA / "kernel" / "app-txn-with-last-updated" / "_delta_log").glob("*.json")
        )
        for line in f.read_text().splitlines()
        if line.strip() and "txn" in json.loads(line)
    ]
    latest = {t["appId"]: t["version"] for t in raw}
    assert txns == latest


def test_delta_rs_domain_metadata() -> None:
    snapshot = _load(TESTDATA / "delta-rs" / "table-with-domain-metadata")
    assert snapshot.domain_metadata
    for name, domain in snapshot.domain_metadata.items():
        assert domain.domain == name
        assert domain.removed is False


def _struct_stats_tables() -> list[str]:
    rels = [r for r in _other_tables() if r.endswith("struct-stats-only")]
    return [*rels, "delta-rs/delta-1.2.1-only-struct-stats"]


def _num_records(row: dict[str, Any]) -> int | None:
    if row.get("stats"):
        return json.loads(row["stats"]).get("numRecords")
    parsed = row.get("stats_parsed")
    return parsed.get("numRecords") if parsed else None


@pytest.mark.parametrize("rel", _struct_stats_tables())
def test_struct_only_checkpoint_stats_are_kept(rel: str) -> None:
    """Checkpoints written with writeStatsAsStruct only carry ``add.stats_parsed``; the
    snapshot must keep those stats (as JSON or a ``stats_parsed`` column) or data skipping
    and ``files --json`` lose them. delta-rs reads numRecords for every file."""
    table = TESTDATA / rel
    snapshot = _load(table)
    ours = {r["path"]: _num_records(r) for r in snapshot.files.to_pylist()}
    import deltalake

    actions = pa.table(deltalake.DeltaTable(str(table)).get_add_actions(flatten=True))
    paths, records = actions.column("path").to_pylist(), actions.column("num_records").to_pylist()
    theirs = dict(zip(paths, records, strict=True))
    assert set(ours) == set(theirs)
    assert None not in ours.values()
    # delta-rs drops some struct-only stats (None); wherever it has them we agree.
    assert {p: ours[p] for p, n in theirs.items() if n is not None} == {
        p: n for p, n in theirs.items() if n is not None
    }
