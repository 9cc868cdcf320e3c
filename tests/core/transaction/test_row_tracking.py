"""Row tracking in the core (PROTOCOL.md "Row Tracking"): enabling, baseRowId and
defaultRowCommitVersion assignment, the high-water mark domain, re-assignment after a lost
race, backfill when enabled later, and the fields through a checkpoint."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from delta_pyspark.core.commands.alter_table import set_properties
from delta_pyspark.core.log.checkpoint import write_checkpoint
from delta_pyspark.core.protocol.schema import (
    PrimitiveType,
    StructField,
    StructType,
    schema_to_string,
)
from delta_pyspark.core.protocol.table_features import protocol_for
from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.core.transaction.optimistic_transaction import Transaction, row_tracking
from delta_pyspark.core.transaction.table_definition import create_table
from delta_pyspark.exceptions import DeltaAnalysisException

SCHEMA = StructType((StructField("id", PrimitiveType("long")),))
ENABLED = {"delta.enableRowTracking": "true"}


def _add(name: str, rows: int | None) -> dict[str, Any]:
    add: dict[str, Any] = {
        "path": name,
        "partitionValues": {},
        "size": 10,
        "modificationTime": 1,
        "dataChange": True,
    }
    if rows is not None:
        add["stats"] = json.dumps({"numRecords": rows})
    return add


def _table(tmp_path: Path, conf: dict[str, str] | None = ENABLED) -> DeltaLog:
    log = DeltaLog(str(tmp_path))
    conf = dict(conf or {})
    create_table(log, schema_to_string(SCHEMA), [], conf, protocol_for(SCHEMA, conf))
    return log


def _append(log: DeltaLog, *adds: dict[str, Any]) -> None:
    txn = Transaction(log, log.snapshot())
    txn.add_files(adds)
    txn.commit("WRITE", {"mode": "Append"})


def _commit(log: DeltaLog, version: int) -> list[dict[str, Any]]:
    text = (Path(log.log_dir) / f"{version:020d}.json").read_text()
    return [json.loads(line) for line in text.splitlines()]


def _adds(log: DeltaLog, version: int) -> dict[str, tuple[int, int]]:
    return {
        a["add"]["path"]: (a["add"]["baseRowId"], a["add"]["defaultRowCommitVersion"])
        for a in _commit(log, version)
        if "add" in a
    }


def _mark(log: DeltaLog, version: int) -> int | None:
    for a in _commit(log, version):
        if "domainMetadata" in a and a["domainMetadata"]["domain"] == "delta.rowTracking":
            return int(json.loads(a["domainMetadata"]["configuration"])["rowIdHighWaterMark"])
    return None


def test_enabling_at_creation(tmp_path: Path) -> None:
    log = _table(tmp_path)
    snapshot = log.snapshot()
    assert {"rowTracking", "domainMetadata"} <= set(snapshot.protocol.writer_features or ())
    conf = snapshot.configuration
    assert conf["delta.rowTracking.materializedRowIdColumnName"].startswith("_row-id-col-")
    assert conf["delta.rowTracking.materializedRowCommitVersionColumnName"].startswith(
        "_row-commit-version-col-"
    )
    assert row_tracking.is_enabled(snapshot.protocol, snapshot.metadata)


def test_appends_assign_contiguous_ranges_and_raise_the_mark(tmp_path: Path) -> None:
    log = _table(tmp_path)
    _append(log, _add("a", 3), _add("b", 2))
    _append(log, _add("c", 4))
    assert _adds(log, 1) == {"a": (0, 1), "b": (3, 1)}
    assert _mark(log, 1) == 4
    assert _adds(log, 2) == {"c": (5, 2)}
    assert _mark(log, 2) == 8
    assert row_tracking.high_water_mark(log.snapshot().domain_metadata.values()) == 8
    # a property change keeps the materialized column names
    names = dict(log.snapshot().configuration)
    set_properties(log, {"delta.appendOnly": "false"})
    for key in ("materializedRowIdColumnName", "materializedRowCommitVersionColumnName"):
        full = f"delta.rowTracking.{key}"
        assert log.snapshot().configuration[full] == names[full]


def test_no_assignment_without_the_feature(tmp_path: Path) -> None:
    log = _table(tmp_path, None)
    _append(log, _add("a", 3))
    add = next(a["add"] for a in _commit(log, 1) if "add" in a)
    assert "baseRowId" not in add and "defaultRowCommitVersion" not in add
    assert _mark(log, 1) is None


def test_assignment_needs_row_counts(tmp_path: Path) -> None:
    log = _table(tmp_path)
    with pytest.raises(DeltaAnalysisException, match="DELTA_ROW_ID_ASSIGNMENT_WITHOUT_STATS"):
        _append(log, _add("a", None))
    assert log.snapshot().version == 0


def test_retry_after_a_lost_race_reassigns_above_the_winner(tmp_path: Path) -> None:
    log = _table(tmp_path)
    _append(log, _add("a", 2))
    loser = Transaction(log, log.snapshot())  # reads version 1, mark 1
    loser.add_files([_add("late", 5)])
    _append(log, _add("winner", 10))  # version 2: ids 2..11
    loser.commit("WRITE", {"mode": "Append"})
    assert loser.attempts == 2
    assert _adds(log, 2) == {"winner": (2, 2)}
    assert _adds(log, 3) == {"late": (12, 3)}
    assert _mark(log, 3) == 16
    files = log.snapshot().files.sort_by("baseRowId").to_pylist()
    ranges = [(f["baseRowId"], json.loads(f["stats"])["numRecords"]) for f in files]
    assert ranges == [(0, 2), (2, 10), (12, 5)]  # contiguous, never overlapping


def test_re_added_files_keep_their_ids(tmp_path: Path) -> None:
    log = _table(tmp_path)
    _append(log, _add("a", 2))
    kept = {**_add("a", 2), "dataChange": False, "baseRowId": 0, "defaultRowCommitVersion": 1}
    _append(log, kept, _add("b", 1))
    assert _adds(log, 2) == {"a": (0, 1), "b": (2, 2)}


def test_enabling_later_backfills_files_without_ids(tmp_path: Path) -> None:
    log = _table(tmp_path, None)
    _append(log, _add("a", 3), _add("b", 2))
    set_properties(log, ENABLED)
    actions = _commit(log, 2)
    assert (
        "rowTracking" in next(a for a in actions if "protocol" in a)["protocol"]["writerFeatures"]
    )
    readds = [a["add"] for a in actions if "add" in a]
    assert {a["path"] for a in readds} == {"a", "b"}
    assert all(a["dataChange"] is False and a["defaultRowCommitVersion"] == 2 for a in readds)
    assert sorted(a["baseRowId"] for a in readds) in ([0, 3], [0, 2])
    assert _mark(log, 2) == 4
    snapshot = log.snapshot()
    assert snapshot.num_files == 2 and row_tracking.is_enabled(snapshot.protocol, snapshot.metadata)


def test_materialized_names_must_not_clash_with_columns(tmp_path: Path) -> None:
    log = _table(tmp_path)
    name = log.snapshot().configuration["delta.rowTracking.materializedRowIdColumnName"]
    schema = StructType((*SCHEMA.fields, StructField(name, PrimitiveType("long"))))
    txn = Transaction(log, log.snapshot())
    txn.update_metadata(
        log.snapshot().metadata.with_changes(schema_string=schema_to_string(schema))
    )
    with pytest.raises(DeltaAnalysisException, match="DELTA_ADDING_COLUMN_WITH_INTERNAL_NAME"):
        txn.commit("ADD COLUMNS")
    assert log.snapshot().version == 0


def test_checkpoint_round_trip(tmp_path: Path) -> None:
    log = _table(tmp_path)
    _append(log, _add("a", 3))
    _append(log, _add("b", 2))
    expected = log.snapshot()
    write_checkpoint(log.store, log.log_dir, expected.state)
    for version in (1, 2):  # only the checkpoint can answer now
        (Path(log.log_dir) / f"{version:020d}.json").unlink()
    fresh = DeltaLog(str(tmp_path)).snapshot()
    cols = ["path", "baseRowId", "defaultRowCommitVersion"]
    assert fresh.files.select(cols).sort_by("path").to_pylist() == [
        {"path": "a", "baseRowId": 0, "defaultRowCommitVersion": 1},
        {"path": "b", "baseRowId": 3, "defaultRowCommitVersion": 2},
    ]
    assert row_tracking.high_water_mark(fresh.domain_metadata.values()) == 4
