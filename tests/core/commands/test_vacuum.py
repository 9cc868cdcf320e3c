"""VACUUM without Spark: what is kept (live files, their DVs, tombstones and files within
retention, hidden names, nested tables, files outside the root), what goes, the
retention check, dry runs, START/END history, and a concurrent writer's files."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from table_helpers import (
    WEEK_MS,
    add_dv,
    age,
    age_all,
    commit,
    history_ops,
    make_table,
    remove,
    write_file,
)

from delta_pyspark.core.commands import vacuum as vacuum_module
from delta_pyspark.core.commands.clone_registry import register_shallow_clone
from delta_pyspark.core.commands.vacuum import vacuum
from delta_pyspark.core.commands.vacuum_plan import (
    inventory_listing,
    is_hidden,
    plan_vacuum,
    retention_ms,
)
from delta_pyspark.core.log.table_paths import dv_file_path
from delta_pyspark.core.protocol.actions import remove_actions
from delta_pyspark.core.protocol.schema import (
    PrimitiveType,
    StructField,
    StructType,
    schema_to_string,
)
from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.core.storage.log_store import log_store_for
from delta_pyspark.core.transaction.table_definition import create_table
from delta_pyspark.exceptions import DeltaError, DeltaIllegalArgumentException

# --------------------------------------------------------------------------- what goes


def test_unreferenced_old_files_go_recent_ones_and_live_files_stay(tmp_path: Path) -> None:
    log = make_table(tmp_path)
    a, b = write_file(tmp_path, [1, 2]), write_file(tmp_path, [3])
    commit(log, [a, b])
    remove(log, a["path"], days_ago=8)  # tombstone past the default week
    orphan_old = write_file(tmp_path, [9], name="failed-write-old.parquet")["path"]
    age_all(tmp_path, days=30)
    orphan_new = write_file(tmp_path, [10], name="failed-write-new.parquet")["path"]

    result = vacuum(log)

    assert sorted(result.plan.paths) == sorted(
        [str(tmp_path / a["path"]), str(tmp_path / orphan_old)]
    )
    assert result.num_deleted_files == 2
    assert not (tmp_path / a["path"]).exists() and not (tmp_path / orphan_old).exists()
    assert (tmp_path / b["path"]).exists() and (tmp_path / orphan_new).exists()
    assert history_ops(log)[-2:] == ["VACUUM START", "VACUUM END"]


def test_tombstones_within_retention_are_kept_until_they_expire(tmp_path: Path) -> None:
    log = make_table(tmp_path)
    a = write_file(tmp_path, [1])
    commit(log, [a])
    remove(log, a["path"], days_ago=1)
    age_all(tmp_path)
    assert vacuum(log).num_deleted_files == 0
    assert (tmp_path / a["path"]).exists()
    # 12 hours is shorter than the tombstone's age: only with the check turned off
    result = vacuum(log, 12, check_enabled=False)
    assert result.plan.paths == [str(tmp_path / a["path"])]
    assert not (tmp_path / a["path"]).exists()


def test_table_retention_property_sets_the_default(tmp_path: Path) -> None:
    log = make_table(tmp_path, config={"delta.deletedFileRetentionDuration": "interval 2 hours"})
    a = write_file(tmp_path, [1])
    commit(log, [a])
    remove(log, a["path"], days_ago=1)
    age_all(tmp_path)
    result = vacuum(log)
    assert result.plan.window.retention_ms == 2 * 3_600_000
    assert not (tmp_path / a["path"]).exists()
    vacuum(log, 3)  # longer than the table's retention: allowed with the check on


def test_partitioned_table_removes_emptied_partition_directories(tmp_path: Path) -> None:
    log = make_table(tmp_path, partitioned=True)
    a, b = write_file(tmp_path, [1], "x"), write_file(tmp_path, [2], "y")
    commit(log, [a, b])
    remove(log, a["path"], days_ago=10)
    (tmp_path / "old-empty").mkdir()
    age_all(tmp_path)
    age(tmp_path / "old-empty", 30)
    (tmp_path / "new-empty").mkdir()  # may be a concurrent writer's: stays

    result = vacuum(log)

    assert not (tmp_path / "part=x").exists()
    assert not (tmp_path / "old-empty").exists()
    assert (tmp_path / "part=y" / b["path"].split("/")[-1]).exists()
    assert (tmp_path / "new-empty").is_dir()
    assert result.num_vacuumed_directories == 2
    end = log.history(1)[0]
    assert end["operationMetrics"] == {"numDeletedFiles": "1", "numVacuumedDirectories": "2"}


# --------------------------------------------------------------------------- deletion vectors


def test_dv_files_of_live_files_stay_those_of_removed_files_go_after_retention(
    tmp_path: Path,
) -> None:
    log = make_table(tmp_path)
    a, b = write_file(tmp_path, [1, 2, 3]), write_file(tmp_path, [4, 5, 6])
    commit(log, [a, b])
    dv_a = add_dv(log, a["path"], [0])  # a keeps this DV: the file must stay
    dv_b1 = add_dv(log, b["path"], [0], prefix_length=2)  # replaced by the next DV
    add_dv(log, b["path"], [0, 1])
    root = str(tmp_path)
    dv_file_a = dv_file_path(root, dv_a)
    dv_file_b1 = dv_file_path(root, dv_b1)
    assert dv_file_b1 is not None and "/" in os.path.relpath(dv_file_b1, root)  # prefix dir
    age_all(tmp_path)

    assert vacuum(log).num_deleted_files == 0  # b's old DV is a recent tombstone: kept
    result = vacuum(log, 0, check_enabled=False)

    assert result.plan.paths == [dv_file_b1]
    assert not os.path.exists(dv_file_b1)
    assert not os.path.exists(os.path.dirname(dv_file_b1))  # its prefix directory too
    assert dv_file_a is not None and os.path.exists(dv_file_a)
    live = log.snapshot()
    for dv in live.files.column("deletionVector").to_pylist():
        assert os.path.exists(dv_file_path(root, dv))


# --------------------------------------------------------------------------- never touched


def test_hidden_names_nested_tables_and_the_log_are_never_touched(tmp_path: Path) -> None:
    log = make_table(tmp_path, partitioned=True)
    commit(log, [write_file(tmp_path, [1], "x")])
    keep = [
        tmp_path / "_hidden" / "f.parquet",
        tmp_path / ".hidden.parquet",
        tmp_path / "part=x" / ".part-0.parquet.crc",
        tmp_path / "_delta_staging" / "job" / "f.parquet",
        tmp_path / "metadata" / "v1.metadata.json",
        tmp_path / "_delta_clones" / "notes.txt",
    ]
    go = [
        tmp_path / "_change_data" / "cdc-0.parquet",
        tmp_path / "_delta_index" / "idx",
        tmp_path / "sub" / "deeper" / "stray.parquet",
    ]
    for p in keep + go:
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(b"x")
    nested = tmp_path / "nested"
    nested_log = make_table(nested)
    commit(nested_log, [write_file(nested, [7])])
    log_files = sorted(p.name for p in (tmp_path / "_delta_log").iterdir())
    age_all(tmp_path)
    for p in (nested / "_delta_log").iterdir():
        age(p, 30)

    result = vacuum(log, 0, check_enabled=False)

    assert sorted(result.plan.paths) == sorted(str(p) for p in go)
    assert all(p.exists() for p in keep)
    assert not any(p.exists() for p in go)
    assert nested_log.snapshot().num_files == 1
    assert all((nested / f["path"]).exists() for f in nested_log.snapshot().files.to_pylist())
    assert set(log_files) <= {p.name for p in (tmp_path / "_delta_log").iterdir()}


def test_underscore_partition_directories_are_vacuumed() -> None:
    assert not is_hidden("_p=1", ["_p"])
    assert is_hidden("_p=1", ["p"])
    assert is_hidden("_tmp", ["_p"])
    assert not is_hidden("_change_data", [])
    assert is_hidden("metadata", [])


def test_underscore_partition_files_are_deleted(tmp_path: Path) -> None:
    log = DeltaLog(str(tmp_path))
    schema = StructType(
        (StructField("id", PrimitiveType("long")), StructField("_p", PrimitiveType("string")))
    )
    create_table(log, schema_to_string(schema), ["_p"])
    (tmp_path / "_p=1").mkdir()
    pq.write_table(pa.table({"id": [1]}), tmp_path / "_p=1" / "a.parquet")
    size = (tmp_path / "_p=1" / "a.parquet").stat().st_size
    add = {
        "path": "_p=1/a.parquet",
        "partitionValues": {"_p": "1"},
        "size": size,
        "modificationTime": 1,
        "dataChange": True,
    }
    commit(log, [add])
    commit(log, removes=remove_actions(log.snapshot().files, timestamp=1))
    age_all(tmp_path)
    assert vacuum(log).plan.paths == [str(tmp_path / "_p=1" / "a.parquet")]
    assert not (tmp_path / "_p=1").exists()


def test_files_outside_the_root_are_never_deleted(tmp_path: Path) -> None:
    root = tmp_path / "t"
    sibling = tmp_path / "t2"  # shares the root's name as a prefix
    outside = tmp_path / "elsewhere"
    log = make_table(root)
    ext = write_file(outside, [1], name="ext.parquet")
    ext["path"] = f"file://{outside}/ext.parquet"
    local = write_file(root, [2])
    commit(log, [ext, local])
    remove(log, ext["path"], local["path"], days_ago=30)
    stray = write_file(sibling, [3], name="s.parquet")
    age_all(tmp_path)

    result = vacuum(log, 0, check_enabled=False)

    assert result.plan.paths == [str(root / local["path"])]
    assert (outside / "ext.parquet").exists()
    assert (sibling / stray["path"]).exists()


# --------------------------------------------------------------------------- dry run, history


def test_dry_run_lists_and_changes_nothing(tmp_path: Path) -> None:
    log = make_table(tmp_path)
    a = write_file(tmp_path, [1])
    commit(log, [a])
    remove(log, a["path"], days_ago=30)
    age_all(tmp_path)
    version = log.snapshot().version

    result = vacuum(log, dry_run=True)

    assert result.plan.paths == [str(tmp_path / a["path"])]
    assert result.plan.size_to_delete == a["size"]
    assert (tmp_path / a["path"]).exists()
    assert log.snapshot().version == version
    assert result.num_deleted_files == 0 and result.versions == []


def test_history_records_start_and_end_with_delta_spark_fields(tmp_path: Path) -> None:
    log = make_table(tmp_path)
    a, b = write_file(tmp_path, [1]), write_file(tmp_path, [2])
    commit(log, [a, b])
    remove(log, a["path"], b["path"], days_ago=30)
    age_all(tmp_path)

    result = vacuum(log, 200)

    end, start = log.history(2)
    assert result.versions == [start["version"], end["version"]]
    assert start["operation"] == "VACUUM START"
    assert start["operationParameters"] == {
        "retentionCheckEnabled": "true",
        "defaultRetentionMillis": str(WEEK_MS),
        "specifiedRetentionMillis": str(200 * 3_600_000),
    }
    assert start["operationMetrics"] == {
        "numFilesToDelete": "2",
        "sizeOfDataToDelete": str(a["size"] + b["size"]),
    }
    assert end["operation"] == "VACUUM END"
    assert end["operationParameters"] == {"status": "COMPLETED"}
    assert end["operationMetrics"] == {"numDeletedFiles": "2", "numVacuumedDirectories": "0"}
    # the commits carry no file actions: the table is unchanged
    for v in result.versions:
        lines = (tmp_path / "_delta_log" / f"{v:020d}.json").read_text().splitlines()
        assert [next(iter(json.loads(line))) for line in lines] == ["commitInfo"]
    assert log.snapshot().num_files == 0


def test_without_explicit_retention_no_specified_parameter(tmp_path: Path) -> None:
    log = make_table(tmp_path)
    vacuum(log)
    start = log.history(2)[1]
    assert "specifiedRetentionMillis" not in start["operationParameters"]
    assert start["operationMetrics"] == {"numFilesToDelete": "0", "sizeOfDataToDelete": "0"}


def test_a_failed_deletion_records_vacuum_end_failed(tmp_path: Path, monkeypatch) -> None:
    log = make_table(tmp_path)
    a = write_file(tmp_path, [1])
    commit(log, [a])
    remove(log, a["path"], days_ago=30)
    age_all(tmp_path)

    def broken(*_args: object) -> int:
        raise PermissionError("read-only storage")

    monkeypatch.setattr(vacuum_module, "_delete_all", broken)
    with pytest.raises(PermissionError):
        vacuum(log)
    end = log.history(1)[0]
    assert end["operation"] == "VACUUM END"
    assert end["operationParameters"] == {"status": "FAILED"}


# --------------------------------------------------------------------------- retention check


def test_retention_shorter_than_the_table_s_is_refused_unless_the_check_is_off(
    tmp_path: Path,
) -> None:
    log = make_table(tmp_path)
    a = write_file(tmp_path, [1])
    commit(log, [a])
    remove(log, a["path"], days_ago=1)
    age_all(tmp_path)
    version = log.snapshot().version
    with pytest.raises(DeltaIllegalArgumentException) as err:
        vacuum(log, 1)
    message = str(err.value)
    assert "spark.databricks.delta.retentionDurationCheck.enabled = false" in message
    assert '"168 hours"' in message
    assert log.snapshot().version == version  # nothing committed
    assert (tmp_path / a["path"]).exists()
    with pytest.raises(DeltaIllegalArgumentException):
        vacuum(log, 1, dry_run=True)  # dry runs are checked too
    assert vacuum(log, 1, check_enabled=False).num_deleted_files == 1


def test_negative_retention_is_always_refused(tmp_path: Path) -> None:
    log = make_table(tmp_path)
    with pytest.raises(DeltaIllegalArgumentException, match="can't be less than 0"):
        vacuum(log, -1, check_enabled=False)


def test_retention_arithmetic() -> None:
    assert retention_ms({}, None) == (WEEK_MS, WEEK_MS)
    assert retention_ms({}, 168) == (WEEK_MS, WEEK_MS)
    assert retention_ms({}, 0.5, check_enabled=False) == (1_800_000, WEEK_MS)
    conf = {"delta.deletedFileRetentionDuration": "interval 30 days"}
    with pytest.raises(DeltaIllegalArgumentException, match='"720 hours"'):
        retention_ms(conf, 200)


# --------------------------------------------------------------------------- concurrency


def test_a_concurrent_writer_s_uncommitted_file_survives_and_commits(tmp_path: Path) -> None:
    log = make_table(tmp_path)
    a = write_file(tmp_path, [1])
    commit(log, [a])
    age_all(tmp_path)
    pending = write_file(tmp_path, [2, 3])  # written, not yet committed: recent mtime

    result = vacuum(log)  # default retention

    assert result.plan.paths == []
    assert (tmp_path / pending["path"]).exists()
    snap = commit(log, [pending])
    assert sorted(snap.files.column("path").to_pylist()) == sorted([a["path"], pending["path"]])
    for f in snap.files.column("path").to_pylist():
        assert pq.read_table(tmp_path / f).num_rows > 0


def test_a_file_committed_again_after_planning_is_spared(tmp_path: Path) -> None:
    """E.g. a RESTORE adds an old file back between VACUUM's listing and its deletes."""
    log = make_table(tmp_path)
    a = write_file(tmp_path, [1])
    commit(log, [a])
    remove(log, a["path"], days_ago=30)
    age_all(tmp_path)

    def restore_concurrently(plan: vacuum_module.VacuumPlan) -> None:
        assert plan.paths == [str(tmp_path / a["path"])]
        commit(log, [a], op="RESTORE")

    result = vacuum(log, before_delete=restore_concurrently)

    assert result.num_deleted_files == 0
    assert (tmp_path / a["path"]).exists()
    assert log.snapshot().num_files == 1


def test_plan_lists_before_reading_references(tmp_path: Path) -> None:
    """A file committed after VACUUM took its first snapshot, but before it listed, is
    referenced by the refreshed snapshot the plan uses."""
    log = make_table(tmp_path)
    stale = log.snapshot()
    a = write_file(tmp_path, [1])
    commit(log, [a])
    age_all(tmp_path)
    plan = plan_vacuum(log, 0, check_enabled=False, snapshot=stale)
    assert plan.paths == []


def test_unreadable_registered_clone_stops_vacuum(tmp_path: Path) -> None:
    log = make_table(tmp_path / "src")
    clone = tmp_path / "clone"
    (clone / "_delta_log").mkdir(parents=True)
    (clone / "_delta_log" / f"{0:020d}.json").write_text('{"commitInfo":{}}\n')
    register_shallow_clone(str(tmp_path / "src"), str(clone), 0)
    with pytest.raises(DeltaError, match="refuses to run"):
        vacuum(log, dry_run=True)


def test_an_inventory_lists_the_table_s_files_and_directories_only(tmp_path: Path) -> None:
    root = str(tmp_path / "t")
    (tmp_path / "t" / "inner" / "_delta_log").mkdir(parents=True)  # a nested table in storage
    listing = inventory_listing(
        log_store_for(root),
        root,
        [
            (f"file:{root}/part-0.parquet", 10, False, 5),
            (f"{root}/p=1", 0, True, 6),
            (f"file://{root}/p=1/part-1.parquet", 20, False, 7),
            (f"{root}/_delta_log/00000000000000000000.json", 30, False, 8),
            (f"{root}/_tmp/part-2.parquet", 40, False, 9),
            (f"{root}/_change_data/cdc-0.parquet", 50, False, 10),
            (f"{root}2/part-3.parquet", 60, False, 11),
            (root, 0, True, 12),
            (f"{root}/sub/_delta_log/00000000000000000000.json", 1, False, 13),  # a nested
            (f"{root}/sub/part-4.parquet", 70, False, 14),  # table's files
            (f"{root}/inner", 0, True, 15),
            (f"{root}/inner/part-5.parquet", 80, False, 16),
        ],
        ["p"],
    )
    assert sorted((f.path, f.size, f.modification_time) for f in listing.files) == [
        (f"{root}/_change_data/cdc-0.parquet", 50, 10),
        (f"{root}/p=1/part-1.parquet", 20, 7),
        (f"{root}/part-0.parquet", 10, 5),
    ]
    assert listing.dirs == {f"{root}/p=1": 6}
