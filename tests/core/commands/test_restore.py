"""RESTORE without Spark: the file set of the old version comes back in one commit
(keys are path + DV id), metadata comes back, the protocol never goes down, clear
errors for bad versions and vacuumed files, and what concurrent commits do to it."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from table_helpers import DAY, add_dv, age_all, commit, make_table, remove, write_file

from delta_pyspark.core.commands.clustering import alter_clustering, column_names, is_clustered
from delta_pyspark.core.commands.restore import (
    RestoreMissingFilesError,
    add_actions,
    merge_protocols,
    prepare_restore,
    restore,
)
from delta_pyspark.core.commands.vacuum import vacuum
from delta_pyspark.core.log.logical_files import file_keys
from delta_pyspark.core.protocol.actions import Protocol
from delta_pyspark.core.protocol.schema import (
    PrimitiveType,
    StructField,
    StructType,
    schema_to_string,
)
from delta_pyspark.core.protocol.table_features import with_features
from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.core.snapshot.snapshot import Snapshot
from delta_pyspark.core.transaction.optimistic_transaction import Transaction
from delta_pyspark.exceptions import (
    ConcurrentAppendException,
    ConcurrentDeleteReadException,
    DeltaIllegalArgumentException,
    MetadataChangedException,
    VersionNotFoundError,
)


def keys(snapshot: Snapshot) -> set[str]:
    return set(file_keys(snapshot.files).to_pylist())


def commit_lines(log: DeltaLog, version: int) -> list[dict]:
    path = Path(log.log_dir) / f"{version:020d}.json"
    return [json.loads(line) for line in path.read_text().splitlines()]


def three_versions(root: Path, partitioned: bool) -> tuple[DeltaLog, list[dict]]:
    """v1: a, b; v2: + c; v3: - a. Returns the log and the adds [a, b, c]."""
    log = make_table(root, partitioned)
    p = (lambda x: x) if partitioned else (lambda x: None)
    a, b = write_file(root, [1, 2], p("x")), write_file(root, [3], p("y"))
    commit(log, [a, b])
    c = write_file(root, [4, 5, 6], p("x"))
    commit(log, [c])
    remove(log, a["path"], days_ago=0)
    return log, [a, b, c]


@pytest.mark.parametrize("partitioned", [False, True])
def test_restore_brings_back_the_old_file_set_in_one_commit(
    tmp_path: Path, partitioned: bool
) -> None:
    log, (a, b, c) = three_versions(tmp_path, partitioned)
    old = log.snapshot(1)

    metrics = restore(log, 1)

    now = log.snapshot()
    assert now.version == 4
    assert keys(now) == keys(old)
    assert metrics == {
        "tableSizeAfterRestore": a["size"] + b["size"],
        "numOfFilesAfterRestore": 2,
        "numRemovedFiles": 1,
        "numRestoredFiles": 1,
        "removedFilesSize": c["size"],
        "restoredFilesSize": a["size"],
    }
    lines = commit_lines(log, 4)
    info = lines[0]["commitInfo"]
    assert info["operation"] == "RESTORE"
    assert info["operationParameters"] == {"version": "1", "timestamp": None}
    assert info["operationMetrics"] == {k: str(v) for k, v in metrics.items()}
    assert info["readVersion"] == 3 and info["isBlindAppend"] is False
    adds = [x["add"] for x in lines if "add" in x]
    removes = [x["remove"] for x in lines if "remove" in x]
    assert [x["path"] for x in adds] == [a["path"]] and adds[0]["dataChange"] is True
    assert adds[0]["stats"] == a["stats"] and adds[0]["partitionValues"] == a["partitionValues"]
    assert [x["path"] for x in removes] == [c["path"]] and removes[0]["dataChange"] is True
    # metadata and protocol unchanged; an unclustered table gets no clustering domain
    assert not any("metaData" in x or "protocol" in x or "domainMetadata" in x for x in lines)
    # time travel around the restore still sees each version as it was
    assert keys(log.snapshot(3)) == {file_keys_of(b), file_keys_of(c)}
    assert keys(log.snapshot(2)) == {file_keys_of(a), file_keys_of(b), file_keys_of(c)}


def file_keys_of(add: dict) -> str:
    return f"{add['path']}\x00"


def test_restore_to_version_zero_empties_the_table(tmp_path: Path) -> None:
    log, _ = three_versions(tmp_path, False)
    metrics = restore(log, 0)
    assert log.snapshot().num_files == 0
    assert metrics["numOfFilesAfterRestore"] == 0 and metrics["numRemovedFiles"] == 2


def test_restore_compares_deletion_vectors_too(tmp_path: Path) -> None:
    log = make_table(tmp_path)
    a = write_file(tmp_path, [1, 2, 3])
    commit(log, [a])  # v1
    add_dv(log, a["path"], [0])  # v2: same path, new DV
    restore(log, 1)
    files = log.snapshot().files.to_pylist()
    assert len(files) == 1 and files[0]["deletionVector"] is None
    restore(log, 2)  # and forward again: the DV'd logical file comes back
    files = log.snapshot().files.to_pylist()
    assert files[0]["deletionVector"]["cardinality"] == 1
    assert keys(log.snapshot()) == keys(log.snapshot(2))


def test_restore_after_a_schema_change_restores_the_metadata(tmp_path: Path) -> None:
    log, _ = three_versions(tmp_path, False)
    snap = log.snapshot()
    wider = StructType((*snap.schema.fields, StructField("extra", PrimitiveType("string"))))
    txn = Transaction(log, snap)
    txn.update_metadata(snap.metadata.with_changes(schema_string=schema_to_string(wider)))
    txn.commit("ADD COLUMNS", {})
    assert len(log.snapshot().schema.fields) == 3

    restore(log, 2)

    now = log.snapshot()
    assert now.schema == log.snapshot(2).schema
    assert now.metadata == log.snapshot(2).metadata
    assert any("metaData" in x for x in commit_lines(log, now.version))


def test_restore_brings_back_the_clustering_columns(tmp_path: Path) -> None:
    """The version restored decides the clustering columns; restoring one from before the
    table was clustered leaves it clustered by no columns (the feature stays)."""
    log, _ = three_versions(tmp_path, partitioned=False)
    alter_clustering(log, ["id"])  # version 4
    alter_clustering(log, ["part"])  # version 5

    restore(log, 4)
    assert column_names(log.snapshot()) == ["id"]
    domains = [x["domainMetadata"] for x in commit_lines(log, 6) if "domainMetadata" in x]
    assert [(d["domain"], d["removed"]) for d in domains] == [("delta.clustering", False)]
    assert json.loads(domains[0]["configuration"])["clusteringColumns"] == [["id"]]

    restore(log, 3)
    now = log.snapshot()
    assert column_names(now) == [] and is_clustered(now.protocol)
    assert not now.domain_metadata["delta.clustering"].removed
    assert column_names(log.snapshot(5)) == ["part"]  # history unchanged


def test_restore_never_downgrades_the_protocol(tmp_path: Path) -> None:
    log, _ = three_versions(tmp_path, False)
    snap = log.snapshot()
    upgraded = with_features(snap.protocol, {"deletionVectors"})
    assert upgraded.min_reader_version == 3
    txn = Transaction(log, snap)
    txn.update_protocol(upgraded)
    txn.commit("ADD FEATURE", {})
    restore(log, 1)
    assert log.snapshot().protocol == upgraded
    assert not any("protocol" in x for x in commit_lines(log, log.snapshot().version))


def test_merge_protocols() -> None:
    assert merge_protocols(Protocol(1, 2), Protocol(1, 4)) == Protocol(1, 4)
    assert merge_protocols(Protocol(2, 5), Protocol(1, 2)) == Protocol(2, 5)
    dv = Protocol(3, 7, frozenset({"deletionVectors"}), frozenset({"deletionVectors"}))
    assert merge_protocols(Protocol(1, 2), dv) == Protocol(
        3,
        7,
        frozenset({"deletionVectors"}),
        frozenset({"deletionVectors", "appendOnly", "invariants"}),
    )
    assert merge_protocols(dv, dv) is dv
    ict = Protocol(1, 7, None, frozenset({"inCommitTimestamp"}))
    assert merge_protocols(Protocol(1, 2), ict) == Protocol(
        1, 7, None, frozenset({"inCommitTimestamp", "appendOnly", "invariants"})
    )


# --------------------------------------------------------------------------- errors


def test_bad_versions_are_refused_and_commit_nothing(tmp_path: Path) -> None:
    log, _ = three_versions(tmp_path, False)
    with pytest.raises(VersionNotFoundError, match="latest version is 3"):
        restore(log, 4)
    with pytest.raises(VersionNotFoundError):
        restore(log, -1)
    with pytest.raises(DeltaIllegalArgumentException, match=r"Version to restore \(3\)"):
        restore(log, 3)  # as delta-spark: restoring the latest version is refused
    with pytest.raises(DeltaIllegalArgumentException, match="version or timestamp"):
        restore(log)
    assert log.snapshot().version == 3


def test_vacuumed_files_make_restore_fail_before_committing(tmp_path: Path) -> None:
    log, (a, _, _) = three_versions(tmp_path, False)
    remove_ts = log.snapshot().tombstones  # a's tombstone is fresh: make it old
    assert remove_ts.num_rows == 1
    age_all(tmp_path)
    vacuum(log, 0, check_enabled=False)
    assert not (tmp_path / a["path"]).exists()
    version = log.snapshot().version

    with pytest.raises(RestoreMissingFilesError) as err:
        restore(log, 1)

    assert err.value.missing == [str(tmp_path / a["path"])]
    assert a["path"] in str(err.value) and "ignoreMissingFiles" in str(err.value)
    assert isinstance(err.value, DeltaIllegalArgumentException)
    assert log.snapshot().version == version
    restore(log, 1, check_files=False)  # the escape hatch, as Spark's ignoreMissingFiles
    assert log.snapshot().num_files == 2


def test_missing_dv_file_is_reported(tmp_path: Path) -> None:
    log = make_table(tmp_path)
    a = write_file(tmp_path, [1, 2, 3])
    commit(log, [a])
    dv = add_dv(log, a["path"], [0])  # v2
    remove(log, a["path"], days_ago=0)  # v3
    from delta_pyspark.core.log.table_paths import dv_file_path

    dv_path = dv_file_path(str(tmp_path), dv)
    os.unlink(dv_path)
    with pytest.raises(RestoreMissingFilesError) as err:
        restore(log, 2)
    assert err.value.missing == [dv_path]


# --------------------------------------------------------------------------- timestamps


def test_restore_to_timestamp(tmp_path: Path) -> None:
    log, _ = three_versions(tmp_path, False)
    t0 = int(time.time()) - 10 * DAY
    for v in range(4):
        path = Path(log.log_dir) / f"{v:020d}.json"
        os.utime(path, (t0 + v * 100, t0 + v * 100))

    restore(log, timestamp_ms=(t0 + 150) * 1000, timestamp_text="x")

    assert keys(log.snapshot()) == keys(log.snapshot(1))
    info = log.history(1)[0]
    assert info["operationParameters"] == {"timestamp": "x"}
    with pytest.raises(VersionNotFoundError, match="before the earliest"):
        restore(log, timestamp_ms=(t0 - 1) * 1000)
    with pytest.raises(DeltaIllegalArgumentException, match="should be less than"):
        restore(log, timestamp_ms=int(time.time() * 1000) + 10_000)


# --------------------------------------------------------------------------- concurrency


def test_concurrent_blind_append_is_kept_under_write_serializable(tmp_path: Path) -> None:
    log, _ = three_versions(tmp_path, False)
    prepared = prepare_restore(log, 1)
    d = write_file(tmp_path, [7])
    commit(log, [d])  # wins version 4 (a blind append)

    prepared.commit()

    now = log.snapshot()
    assert now.version == 5
    assert keys(now) == keys(log.snapshot(1)) | {file_keys_of(d)}


def test_concurrent_append_conflicts_under_serializable(tmp_path: Path) -> None:
    log = make_table(tmp_path, config={"delta.isolationLevel": "Serializable"})
    a = write_file(tmp_path, [1])
    commit(log, [a])
    commit(log, [write_file(tmp_path, [2])])
    prepared = prepare_restore(log, 1)
    commit(log, [write_file(tmp_path, [3])])
    with pytest.raises(ConcurrentAppendException):
        prepared.commit()
    assert log.snapshot().version == 3  # the restore left no trace
    assert log.history(1)[0]["operation"] == "WRITE"


def test_concurrent_delete_conflicts(tmp_path: Path) -> None:
    log, (_, b, _) = three_versions(tmp_path, False)
    prepared = prepare_restore(log, 1)
    remove(log, b["path"], days_ago=0)
    with pytest.raises(ConcurrentDeleteReadException):
        prepared.commit()
    assert log.snapshot().version == 4


def test_concurrent_metadata_change_conflicts(tmp_path: Path) -> None:
    log, _ = three_versions(tmp_path, False)
    prepared = prepare_restore(log, 1)
    snap = log.snapshot()
    txn = Transaction(log, snap)
    txn.update_metadata(snap.metadata.with_changes(description="changed"))
    txn.commit("SET TBLPROPERTIES", {})
    with pytest.raises(MetadataChangedException):
        prepared.commit()


def test_add_actions_round_trip(tmp_path: Path) -> None:
    log = make_table(tmp_path, partitioned=True)
    a = write_file(tmp_path, [1], "x")
    a["tags"] = {"INSERTION_TIME": "1"}
    commit(log, [a])
    (back,) = add_actions(log.snapshot().files)
    assert back == a | {"dataChange": True}
