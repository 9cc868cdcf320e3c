"""VACUUM, RESTORE and CLONE through DeltaTable, on partitioned and unpartitioned tables:
rows compared exactly, time travel before and after, files on disk, history entries,
typed errors, and the interplay of the three (vacuumed versions, shallow clones)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from delta_pyspark.core.commands.clone_registry import registered_clones
from delta_pyspark.core.commands.restore import RestoreMissingFilesError, prepare_restore
from delta_pyspark.core.log.table_paths import resolve_path
from delta_pyspark.core.snapshot.delta_log import DeltaLog, clear_log_cache
from delta_pyspark.core.transaction.optimistic_transaction import Transaction
from delta_pyspark.exceptions import (
    ChecksumMismatchError,
    DeltaAnalysisException,
    DeltaIllegalArgumentException,
    VersionNotFoundError,
)
from delta_pyspark.spark.files.scan import DeltaFileNotFoundError
from delta_pyspark.tables import DeltaTable

SCHEMA = "id long, v string, p string"
CHECK = "spark.databricks.delta.retentionDurationCheck.enabled"
TRUST = "spark.databricks.delta.vacuum.trustDamagedLog"


def _rows(spark: Any, path: str, **options: Any) -> list[tuple]:
    reader = spark.read.format("delta")
    for k, v in options.items():
        reader = reader.option(k, v)
    df = reader.load(path)
    return sorted((tuple(r) for r in df.collect()), key=repr)


def _data(lo: int, hi: int) -> list[tuple]:
    return [(i, f"v{i}", "a" if i % 2 else "b") for i in range(lo, hi)]


def _write(spark: Any, path: str, rows: list[tuple], partitioned: bool, mode: str = "append"):
    writer = spark.createDataFrame(rows, SCHEMA).repartition(2).write.format("delta").mode(mode)
    if partitioned:
        writer = writer.partitionBy("p")
    writer.save(path)


def _files(path: str, version: int | None = None) -> set[str]:
    snap = DeltaLog(path).snapshot(version)
    return {resolve_path(path, p) for p in snap.files.column("path").to_pylist()}


def _ts(path: str, version: int) -> str:
    """The commit time of ``version`` as a UTC timestamp string (the session is UTC)."""
    (rec,) = DeltaLog(path).commit_records(version, version)
    return datetime.fromtimestamp(rec.timestamp / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


@contextmanager
def _conf(spark: Any, key: str, value: str) -> Iterator[None]:
    spark.conf.set(key, value)
    try:
        yield
    finally:
        spark.conf.unset(key)


@pytest.fixture(params=[False, True], ids=["unpartitioned", "partitioned"])
def partitioned(request: pytest.FixtureRequest) -> bool:
    return request.param


# ---------------------------------------------------------------------------------- VACUUM


def test_vacuum_deletes_old_versions_files_latest_still_reads(
    spark: Any, tmp_path: Path, partitioned: bool
) -> None:
    path = str(tmp_path / "t")
    _write(spark, path, _data(0, 10), partitioned)
    _write(spark, path, _data(10, 20), partitioned, mode="overwrite")
    old, new = _files(path, 0), _files(path, 1)
    dt = DeltaTable.forPath(spark, path)

    assert dt.vacuum().collect() == []  # default 7 days: everything is recent
    assert all(os.path.exists(f) for f in old)
    assert _rows(spark, path, versionAsOf=0) == sorted(_data(0, 10), key=repr)

    with _conf(spark, CHECK, "false"):
        out = dt.vacuum(0)
    assert out.columns == [] and out.count() == 0  # as delta-spark's Python API
    assert not any(os.path.exists(f) for f in old)
    assert all(os.path.exists(f) for f in new)
    assert _rows(spark, path) == sorted(_data(10, 20), key=repr)
    with pytest.raises(DeltaFileNotFoundError, match="VACUUM"):
        _rows(spark, path, versionAsOf=0)

    hist = dt.history(2).collect()
    assert [h["operation"] for h in hist] == ["VACUUM END", "VACUUM START"]
    assert hist[1]["operationParameters"]["retentionCheckEnabled"] == "false"
    assert hist[1]["operationParameters"]["specifiedRetentionMillis"] == "0"
    assert hist[1]["operationMetrics"]["numFilesToDelete"] == str(len(old))
    assert hist[0]["operationMetrics"]["numDeletedFiles"] == str(len(old))
    assert hist[0]["operationParameters"] == {"status": "COMPLETED"}
    if partitioned:  # partition directories are kept: they still hold the new files
        assert sorted(os.listdir(path)) == ["_delta_log", "p=a", "p=b"]


def test_vacuum_removes_an_emptied_partition_directory(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    _write(spark, path, _data(0, 10), partitioned=True)
    dt = DeltaTable.forPath(spark, path)
    dt.delete("p = 'a'")
    with _conf(spark, CHECK, "false"):
        dt.vacuum(0)
    assert not os.path.exists(os.path.join(path, "p=a"))
    assert dt.history(1).collect()[0]["operationMetrics"]["numVacuumedDirectories"] == "1"
    assert _rows(spark, path) == sorted((r for r in _data(0, 10) if r[2] == "b"), key=repr)


def test_vacuum_retention_check_and_override(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    _write(spark, path, _data(0, 4), False)
    _write(spark, path, _data(4, 8), False, mode="overwrite")
    dt = DeltaTable.forPath(spark, path)
    version = DeltaLog(path).snapshot().version
    with pytest.raises(DeltaIllegalArgumentException, match=f"{CHECK} = false"):
        dt.vacuum(1)
    with pytest.raises(DeltaIllegalArgumentException, match="less than 0"):
        dt.vacuum(-1)
    assert DeltaLog(path).snapshot().version == version
    with _conf(spark, CHECK, "false"):
        dt.vacuum(1)  # allowed now; the files are younger than an hour: nothing goes
    assert _rows(spark, path, versionAsOf=0) == sorted(_data(0, 4), key=repr)


def test_vacuum_refuses_a_disagreeing_checksum_until_it_is_deleted(
    spark: Any, tmp_path: Path
) -> None:
    path = str(tmp_path / "t")
    _write(spark, path, _data(0, 4), False)
    _write(spark, path, _data(4, 8), False, mode="overwrite")
    log = DeltaLog(path)
    crc = Path(log.log_dir) / f"{log.snapshot().version:020d}.crc"
    crc.write_text(crc.read_text().replace('"numFiles":', '"numFiles":1', 1))
    clear_log_cache()  # as a new process would: the cached snapshot predates the damage
    on_disk = sorted(str(p) for p in Path(path).rglob("*") if p.is_file())
    dt = DeltaTable.forPath(spark, path)

    with _conf(spark, CHECK, "false"):
        for trust in ("false", "true"):  # the override is VACUUM's; the reader refuses
            with (
                _conf(spark, TRUST, trust),
                pytest.raises(ChecksumMismatchError, match=r"delete the \.crc file"),
            ):
                dt.vacuum(0)
            assert sorted(str(p) for p in Path(path).rglob("*") if p.is_file()) == on_disk
        crc.unlink()
        dt.vacuum(0)

    assert not any(os.path.exists(f) for f in _files(path, 0))
    assert _rows(spark, path) == sorted(_data(4, 8), key=repr)


def test_vacuum_dry_run_lists_and_deletes_nothing(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    _write(spark, path, _data(0, 6), True)
    _write(spark, path, _data(6, 12), True, mode="overwrite")
    stray = os.path.join(path, "p=a", "failed-task.parquet")
    Path(stray).write_bytes(b"not committed")
    os.utime(stray, (1, 1))  # an old leftover of a failed write
    version = DeltaLog(path).snapshot().version

    with _conf(spark, CHECK, "false"):
        out = DeltaTable.forPath(spark, path).vacuum(0, dryRun=True)

    assert out.columns == ["path"]
    assert {r["path"] for r in out.collect()} == _files(path, 0) | {stray}
    assert all(os.path.exists(f) for f in _files(path, 0))
    assert DeltaLog(path).snapshot().version == version
    with pytest.raises(DeltaIllegalArgumentException):
        DeltaTable.forPath(spark, path).vacuum(0, dryRun=True)  # check is on again


def test_concurrent_writer_file_survives_default_vacuum(spark: Any, tmp_path: Path) -> None:
    from delta_pyspark.spark.commands.rewrite import write_rows

    path = str(tmp_path / "t")
    _write(spark, path, _data(0, 4), True)
    log = DeltaLog(path)
    snap = log.snapshot()
    adds = write_rows(spark.createDataFrame(_data(100, 104), SCHEMA), snap)  # not committed
    written = {resolve_path(path, a["path"]) for a in adds}

    DeltaTable.forPath(spark, path).vacuum()

    assert all(os.path.exists(f) for f in written)
    txn = Transaction(log, snap)
    txn.add_files(adds)
    txn.commit("WRITE", {"mode": "Append"})
    assert _rows(spark, path) == sorted(_data(0, 4) + _data(100, 104), key=repr)


# ---------------------------------------------------------------------------------- RESTORE


def _history_table(spark: Any, path: str, partitioned: bool) -> list[list[tuple]]:
    """v0 write, v1 append, v2 delete, v3 update; the rows of each version."""
    _write(spark, path, _data(0, 10), partitioned)
    _write(spark, path, _data(10, 16), partitioned)
    dt = DeltaTable.forPath(spark, path)
    dt.delete("id % 3 = 0")
    dt.update("id < 5", {"v": "'changed'"})
    return [_rows(spark, path, versionAsOf=v) for v in range(4)]


def test_restore_to_version(spark: Any, tmp_path: Path, partitioned: bool) -> None:
    path = str(tmp_path / "t")
    versions = _history_table(spark, path, partitioned)
    dt = DeltaTable.forPath(spark, path)
    before_files = DeltaLog(path).snapshot().files

    out = dt.restoreToVersion(1)

    assert _rows(spark, path) == versions[1]
    assert [_rows(spark, path, versionAsOf=v) for v in range(4)] == versions  # unchanged
    assert _rows(spark, path, versionAsOf=4) == versions[1]
    assert out.columns == [
        "table_size_after_restore",
        "num_of_files_after_restore",
        "num_removed_files",
        "num_restored_files",
        "removed_files_size",
        "restored_files_size",
    ]
    (row,) = out.collect()
    target = DeltaLog(path).snapshot(1)
    assert row["table_size_after_restore"] == target.size_in_bytes
    assert row["num_of_files_after_restore"] == target.num_files
    assert _files(path) == _files(path, 1)
    removed = set(before_files.column("path").to_pylist()) - {
        p for p in target.files.column("path").to_pylist()
    }
    assert row["num_removed_files"] == len(removed) > 0
    assert row["num_restored_files"] > 0
    (h,) = dt.history(1).collect()
    assert h["operation"] == "RESTORE"
    assert h["operationParameters"] == {"version": "1", "timestamp": None}
    assert {k: int(v) for k, v in h["operationMetrics"].items()} == {
        "tableSizeAfterRestore": row[0],
        "numOfFilesAfterRestore": row[1],
        "numRemovedFiles": row[2],
        "numRestoredFiles": row[3],
        "removedFilesSize": row[4],
        "restoredFilesSize": row[5],
    }
    # and forward again to the version before the restore
    dt.restoreToVersion(3)
    assert _rows(spark, path) == versions[3]


def test_restore_to_timestamp(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    versions = _history_table(spark, path, False)
    dt = DeltaTable.forPath(spark, path)
    ts = _ts(path, 2)
    dt.restoreToTimestamp(ts)
    assert _rows(spark, path) == versions[2]
    assert dt.history(1).collect()[0]["operationParameters"] == {"timestamp": ts}
    with pytest.raises(VersionNotFoundError):
        dt.restoreToTimestamp("2000-01-01 00:00:00")


def test_restore_after_schema_change(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    _write(spark, path, _data(0, 6), True)
    wide = spark.createDataFrame([(50, "x", "a", 1.5)], SCHEMA + ", extra double")
    wide.write.format("delta").mode("append").option("mergeSchema", "true").save(path)
    assert spark.read.format("delta").load(path).columns == ["id", "v", "p", "extra"]

    DeltaTable.forPath(spark, path).restoreToVersion(0)

    df = spark.read.format("delta").load(path)
    assert df.columns == ["id", "v", "p"]
    assert _rows(spark, path) == sorted(_data(0, 6), key=repr)
    assert len(_rows(spark, path, versionAsOf=1)[0]) == 4  # the wide version is still there


def test_restore_errors_are_typed_and_commit_nothing(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    _write(spark, path, _data(0, 4), False)
    _write(spark, path, _data(4, 8), False, mode="overwrite")
    dt = DeltaTable.forPath(spark, path)
    with pytest.raises(VersionNotFoundError):
        dt.restoreToVersion(7)
    with pytest.raises(DeltaIllegalArgumentException, match="should be less than"):
        dt.restoreToVersion(1)
    with _conf(spark, CHECK, "false"):
        dt.vacuum(0)
    version = DeltaLog(path).snapshot().version
    with pytest.raises(RestoreMissingFilesError, match="no longer exist"):
        dt.restoreToVersion(0)
    assert DeltaLog(path).snapshot().version == version
    assert _rows(spark, path) == sorted(_data(4, 8), key=repr)


def test_restore_with_a_concurrent_append(spark: Any, tmp_path: Path) -> None:
    """Under WriteSerializable a blind append committed between RESTORE's read and its
    commit is ordered after the restore: both take effect."""
    path = str(tmp_path / "t")
    _write(spark, path, _data(0, 4), True)
    _write(spark, path, _data(4, 8), True, mode="overwrite")
    prepared = prepare_restore(DeltaLog(path), 0)
    _write(spark, path, _data(100, 102), True)  # the concurrent append wins version 2
    prepared.commit()
    assert DeltaLog(path).snapshot().version == 3
    assert _rows(spark, path) == sorted(_data(0, 4) + _data(100, 102), key=repr)


# ---------------------------------------------------------------------------------- CLONE


@pytest.mark.long  # CI's second step, for the quick run's time
@pytest.mark.parametrize("shallow", [True, False], ids=["shallow", "deep"])
def test_clone_rows_history_and_independence(
    spark: Any, tmp_path: Path, partitioned: bool, shallow: bool
) -> None:
    src, dst = str(tmp_path / "src"), str(tmp_path / "dst")
    versions = _history_table(spark, src, partitioned)
    source = DeltaTable.forPath(spark, src)

    clone = source.clone(
        dst, isShallow=shallow, properties={"delta.logRetentionDuration": "interval 60 days"}
    )

    assert isinstance(clone, DeltaTable)
    assert _rows(spark, dst) == versions[3]
    assert [h["operation"] for h in clone.history().collect()] == ["CLONE"]
    assert clone.detail().collect()[0]["properties"]["delta.logRetentionDuration"] == (
        "interval 60 days"
    )
    assert (clone.detail().collect()[0]["partitionColumns"] == ["p"]) is partitioned
    clone_files = _files(dst)
    if shallow:
        assert clone_files == _files(src)
    else:
        assert not clone_files & _files(src)
        assert all(f.startswith(dst + "/") for f in clone_files)
    # writes to the clone leave the source alone, and the other way round
    _write(spark, dst, _data(200, 203), partitioned)
    clone.delete("id = 1")
    assert _rows(spark, src) == versions[3]
    source.delete("id = 2")
    _write(spark, src, _data(300, 302), partitioned)
    expected = [r for r in versions[3] if r[0] != 1] + _data(200, 203)
    assert _rows(spark, dst) == sorted(expected, key=repr)
    assert _rows(spark, dst, versionAsOf=0) == versions[3]


def test_clone_at_version_and_timestamp(spark: Any, tmp_path: Path) -> None:
    src = str(tmp_path / "src")
    versions = _history_table(spark, src, True)
    source = DeltaTable.forPath(spark, src)
    source.cloneAtVersion(1, str(tmp_path / "v1"), isShallow=True)
    source.cloneAtTimestamp(_ts(src, 2), str(tmp_path / "ts"), isShallow=False)
    assert _rows(spark, str(tmp_path / "v1")) == versions[1]
    assert _rows(spark, str(tmp_path / "ts")) == versions[2]
    info = DeltaLog(str(tmp_path / "ts")).history(1)[0]
    assert info["operationParameters"]["sourceVersion"] == "2"


def test_deep_clone_survives_deleting_the_source(spark: Any, tmp_path: Path) -> None:
    src, dst = str(tmp_path / "src"), str(tmp_path / "dst")
    _write(spark, src, _data(0, 10), True)
    DeltaTable.forPath(spark, src).clone(dst, isShallow=False)
    shutil.rmtree(src)
    assert _rows(spark, dst) == sorted(_data(0, 10), key=repr)


def test_shallow_clone_and_vacuum_on_both_sides(spark: Any, tmp_path: Path) -> None:
    src, dst = str(tmp_path / "src"), str(tmp_path / "dst")
    _write(spark, src, _data(0, 10), True)
    source = DeltaTable.forPath(spark, src)
    clone = source.clone(dst, isShallow=True)
    assert [e.clone_path for e in registered_clones(src)] == [dst]
    shared = _files(src)
    # the source drops every file the clone uses; its VACUUM keeps them for the clone
    _write(spark, src, _data(10, 12), True, mode="overwrite")
    with _conf(spark, CHECK, "false"):
        source.vacuum(0)
        assert all(os.path.exists(f) for f in shared)
        assert _rows(spark, dst) == sorted(_data(0, 10), key=repr)
        # the clone drops them too; its VACUUM never touches the source's directory
        _write(spark, dst, _data(20, 22), True, mode="overwrite")
        clone.vacuum(0)
        assert all(os.path.exists(f) for f in shared)
        assert _rows(spark, src, versionAsOf=0) == sorted(_data(0, 10), key=repr)
        # now that no version within retention needs them, the source's VACUUM goes
        source.vacuum(0)
    assert not any(os.path.exists(f) for f in shared)
    assert _rows(spark, dst) == sorted(_data(20, 22), key=repr)
    assert _rows(spark, src) == sorted(_data(10, 12), key=repr)


def test_clone_replace_semantics(spark: Any, tmp_path: Path) -> None:
    src, dst = str(tmp_path / "src"), str(tmp_path / "dst")
    _write(spark, src, _data(0, 6), True)
    _write(spark, dst, _data(50, 53), False)
    source = DeltaTable.forPath(spark, src)
    with pytest.raises(DeltaAnalysisException, match="already exists"):
        source.clone(dst, isShallow=True)
    assert DeltaLog(dst).snapshot().version == 0
    assert _rows(spark, dst) == sorted(_data(50, 53), key=repr)

    source.clone(dst, isShallow=False, replace=True)

    assert DeltaLog(dst).snapshot().version == 1
    assert _rows(spark, dst) == sorted(_data(0, 6), key=repr)
    assert _rows(spark, dst, versionAsOf=0) == sorted(_data(50, 53), key=repr)
    m = DeltaLog(dst).history(1)[0]["operationMetrics"]
    assert m["numRemovedFiles"] == str(len(_files(dst, 0)))
    assert m["numCopiedFiles"] == str(len(_files(src)))


def test_clone_to_a_table_name(spark: Any, tmp_path: Path) -> None:
    src = str(tmp_path / "src")
    _write(spark, src, _data(0, 5), False)
    clone = DeltaTable.forPath(spark, src).clone("maint_clone_by_name", isShallow=True)
    try:
        rows = sorted((tuple(r) for r in spark.table("maint_clone_by_name").collect()), key=repr)
        assert rows == sorted(_data(0, 5), key=repr)
        assert DeltaTable.forName(spark, "maint_clone_by_name").toDF().count() == 5
        assert clone.detail().collect()[0]["location"].endswith("maint_clone_by_name")
    finally:
        shutil.rmtree(clone.detail().collect()[0]["location"], ignore_errors=True)


@pytest.mark.parametrize("shallow", [True, False], ids=["shallow", "deep"])
@pytest.mark.parametrize(
    "name", ["delta-rs/table-with-dv-small", "golden/dv-with-columnmapping/delta"]
)
def test_clone_of_a_table_with_deletion_vectors(
    spark: Any, tmp_path: Path, testdata: Path, name: str, shallow: bool
) -> None:
    src, dst = tmp_path / "src", str(tmp_path / "dst")
    shutil.copytree(testdata / name, src, copy_function=shutil.copyfile)
    for d, _, _ in os.walk(src):
        os.chmod(d, 0o755)
    expected = _rows(spark, str(src))
    assert expected

    DeltaTable.forPath(spark, str(src)).clone(dst, isShallow=shallow)

    assert _rows(spark, dst) == expected
    if not shallow:
        shutil.rmtree(src)
        assert _rows(spark, dst) == expected


def test_deletion_vectors_written_by_dml_through_vacuum_restore_and_clone(
    spark: Any, tmp_path: Path
) -> None:
    from delta_pyspark.core.log.table_paths import dv_file_path

    path = str(tmp_path / "t")
    df = spark.createDataFrame(_data(0, 20), SCHEMA).repartition(2)
    df.write.format("delta").option("delta.enableDeletionVectors", "true").save(path)
    dt = DeltaTable.forPath(spark, path)
    dt.delete("id % 4 = 0")  # v1: soft-deletes through DV files
    dt.delete("id % 4 = 1")  # v2: replaces those DVs with new ones
    snap = DeltaLog(path).snapshot()
    live_dvs = {dv_file_path(path, dv) for dv in snap.files.column("deletionVector").to_pylist()}
    old_dvs = {
        dv_file_path(path, dv)
        for dv in DeltaLog(path).snapshot(1).files.column("deletionVector").to_pylist()
    }
    assert live_dvs and old_dvs and not live_dvs & old_dvs
    expected = sorted((r for r in _data(0, 20) if r[0] % 4 > 1), key=repr)
    assert _rows(spark, path) == expected

    clone = dt.clone(str(tmp_path / "shallow"), isShallow=True)
    deep = dt.clone(str(tmp_path / "deep"), isShallow=False)
    with _conf(spark, CHECK, "false"):
        dt.vacuum(0)
    assert all(os.path.exists(f) for f in live_dvs)
    assert not any(os.path.exists(f) for f in old_dvs)  # replaced DVs past the retention
    assert _rows(spark, path) == expected
    assert _rows(spark, str(tmp_path / "shallow")) == expected
    assert _rows(spark, str(tmp_path / "deep")) == expected
    with pytest.raises(RestoreMissingFilesError):
        dt.restoreToVersion(1)  # its DV files were vacuumed
    dt.restoreToVersion(0)  # the data files themselves are still live: nothing missing
    assert _rows(spark, path) == sorted(_data(0, 20), key=repr)
    assert clone.toDF().count() == deep.toDF().count() == len(expected)
