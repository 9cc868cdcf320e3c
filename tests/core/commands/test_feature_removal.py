"""DROP FEATURE without Spark: which features may go (delta-spark's errors, in its order), the
protocol afterwards, the two journeys of a reader-writer feature (checkpoint protection,
history truncation) and the cleanup rules of ``checkpointProtection``; every commit checked
in the JSON on disk."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from delta_pyspark.core.commands import feature_removal as fr
from delta_pyspark.core.commands.alter_table import set_properties
from delta_pyspark.core.commands.drop_feature import drop_feature
from delta_pyspark.core.log.metadata_cleanup import cleanup_expired_logs
from delta_pyspark.core.protocol.actions import Protocol
from delta_pyspark.core.snapshot.delta_log import DeltaLog, clear_log_cache
from delta_pyspark.core.transaction.optimistic_transaction import Transaction
from delta_pyspark.core.transaction.table_definition import create_table
from delta_pyspark.exceptions import (
    CannotDropCheckConstraintFeatureError,
    DeltaUnsupportedOperationException,
    FeatureDropCheckpointProtectionWaitError,
    FeatureDropDependentFeatureError,
    FeatureDropHistoricalVersionsExistError,
    FeatureDropHistoryTruncationNotAllowedError,
    FeatureDropIsDeltaPropertyError,
    FeatureDropNeedsHistoryTruncationError,
    FeatureDropNonRemovableError,
    FeatureDropNotPresentError,
    FeatureDropUnsupportedClientFeatureError,
    FeatureDropWaitForRetentionPeriodError,
)

SCHEMA = json.dumps(
    {
        "type": "struct",
        "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}}],
    }
)
BASE = frozenset({"appendOnly", "invariants"})


def _p(reader: int, writer: int, r: set[str] | None = None, w: set[str] | None = None) -> Protocol:
    return Protocol(
        reader, writer, None if r is None else frozenset(r), None if w is None else frozenset(w)
    )


@pytest.mark.parametrize(
    ("before", "feature", "protect", "after"),
    [
        (_p(3, 7, {"deletionVectors"}, {"deletionVectors", *BASE}), "deletionVectors", False,
         _p(1, 2)),
        (_p(3, 7, {"deletionVectors"}, {"deletionVectors", *BASE}), "deletionVectors", True,
         _p(1, 7, None, {*BASE, "checkpointProtection"})),
        (_p(1, 7, None, {*BASE, "checkConstraints", "inCommitTimestamp"}), "inCommitTimestamp",
         False, _p(1, 3)),
        (_p(3, 7, {"columnMapping", "deletionVectors"}, {"columnMapping", "deletionVectors"}),
         "deletionVectors", False, _p(2, 7, None, {"columnMapping"})),
        (_p(2, 5), "columnMapping", False, _p(1, 4)),
        (_p(3, 7, {"vacuumProtocolCheck"}, {"vacuumProtocolCheck"}), "vacuumProtocolCheck", False,
         _p(1, 1)),
        (_p(3, 7, {"v2Checkpoint", "timestampNtz"}, {"v2Checkpoint", "timestampNtz", *BASE}),
         "v2Checkpoint", False, _p(3, 7, {"timestampNtz"}, {"timestampNtz", *BASE})),
        (_p(1, 7, None, {*BASE, "checkpointProtection"}), "checkpointProtection", False, _p(1, 2)),
    ],
)  # fmt: skip
def test_protocol_after_drop_is_the_smallest_that_fits(
    before: Protocol, feature: str, protect: bool, after: Protocol
) -> None:
    assert fr.protocol_without(before, feature, protect) == after


DV_TABLE = _p(3, 7, {"deletionVectors"}, {"deletionVectors", *BASE})


@pytest.mark.parametrize(
    ("protocol", "name", "truncate", "error", "message"),
    [
        (DV_TABLE, "fooBar", False, FeatureDropUnsupportedClientFeatureError,
         r"Cannot drop fooBar because it is not supported by this Delta version\.$"),
        (DV_TABLE, "appendOnly", False, FeatureDropNonRemovableError,
         r"Cannot drop appendOnly because dropping this feature is not supported\."),
        (_p(1, 4), "changeDataFeed", False, FeatureDropNonRemovableError, r"changeDataFeed"),
        (DV_TABLE, "typeWidening", False, FeatureDropNotPresentError,
         r"Cannot drop typeWidening from this table because it is not currently present"),
        (DV_TABLE, "delta.enableDeletionVectors", False, FeatureDropIsDeltaPropertyError,
         r"Cannot drop `delta.enableDeletionVectors` from this table because this is a delta "
         r"table property and not a table feature\."),
        (_p(1, 7, None, {"rowTracking", "domainMetadata"}), "rowTracking", False,
         FeatureDropUnsupportedClientFeatureError, r"delta-spark can drop it"),
        (_p(1, 7, None, {"inCommitTimestamp"}), "inCommitTimestamp", True,
         FeatureDropHistoryTruncationNotAllowedError, r"does not require history truncation"),
        (_p(1, 7, None, {"checkpointProtection"}), "checkpointProtection", False,
         FeatureDropNeedsHistoryTruncationError, r"only be dropped with TRUNCATE HISTORY"),
        (_p(3, 7, {"columnMapping"}, {"columnMapping", "icebergCompatV2"}), "columnMapping",
         False, FeatureDropDependentFeatureError,
         r"Cannot drop table feature `columnMapping` because some other features "
         r"\(icebergCompatV2\) in this table depends on `columnMapping`"),
    ],
)  # fmt: skip
def test_refusals_by_delta_spark_error_class(
    protocol: Protocol, name: str, truncate: bool, error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        fr.feature_to_drop(protocol, name, truncate)


def _commit(root: Path, version: int) -> dict[str, Any]:
    lines = (root / "_delta_log" / f"{version:020d}.json").read_text().splitlines()
    out: dict[str, Any] = {}
    for line in lines:
        out.update(json.loads(line))
    return out


def _table(tmp_path: Path, protocol: Protocol, conf: dict[str, str] | None = None) -> DeltaLog:
    log = DeltaLog(str(tmp_path / "t"))
    create_table(log, SCHEMA, [], configuration=conf or {}, protocol=protocol)
    return log


def _age_log(root: Path, days: float = 3) -> None:
    """Make every log file look ``days`` old (the retention rules read modification times)."""
    old = time.time() - days * 86_400
    for f in (root / "_delta_log").rglob("*"):
        if f.is_file():
            os.utime(f, (old, old))
    clear_log_cache()


def _versions(root: Path) -> list[int]:
    return sorted(int(f.name[:20]) for f in (root / "_delta_log").glob("*.json"))


def test_in_commit_timestamps_drop_at_once(tmp_path: Path) -> None:
    log = _table(tmp_path, _p(1, 2))
    set_properties(log, {"delta.enableInCommitTimestamps": "true"})
    assert "delta.inCommitTimestampEnablementVersion" in log.snapshot().configuration
    drop_feature(log, "inCommitTimestamp")
    root = tmp_path / "t"
    assert _versions(root) == [0, 1, 2, 3]
    off = _commit(root, 2)["metaData"]["configuration"]
    assert off == {"delta.enableInCommitTimestamps": "false"}
    last = _commit(root, 3)
    assert last["protocol"] == {"minReaderVersion": 1, "minWriterVersion": 2}
    assert last["commitInfo"]["operation"] == "DROP FEATURE"
    assert last["commitInfo"]["operationParameters"] == {
        "featureName": "inCommitTimestamp",
        "truncateHistory": "false",
    }
    with pytest.raises(FeatureDropNotPresentError):
        drop_feature(log, "inCommitTimestamp")
    assert _versions(root) == [0, 1, 2, 3]


def test_check_constraints_refused_while_constraints_exist(tmp_path: Path) -> None:
    log = _table(tmp_path, _p(1, 3), {"delta.constraints.positive": "id > 0"})
    with pytest.raises(
        CannotDropCheckConstraintFeatureError,
        match=r"Cannot drop the CHECK constraints table feature\. The following constraints "
        r"must be dropped first: positive\.",
    ):
        drop_feature(log, "checkConstraints")
    root = tmp_path / "t"
    assert _versions(root) == [0]
    snapshot = log.snapshot()
    txn = Transaction(log, snapshot)
    txn.update_metadata(snapshot.metadata.with_changes(configuration={}))
    txn.commit("DROP CONSTRAINT", {"name": "positive"})
    drop_feature(log, "checkConstraints")
    assert _commit(root, 2)["protocol"] == {"minReaderVersion": 1, "minWriterVersion": 2}


def test_column_mapping_in_use_needs_the_data_plane(tmp_path: Path) -> None:
    log = _table(tmp_path, _p(2, 5))
    set_properties(log, {"delta.columnMapping.mode": "name"})
    with pytest.raises(
        DeltaUnsupportedOperationException,
        match=r"rewriting data files with logical column names, which only the Spark data plane",
    ):
        drop_feature(log, "columnMapping")
    assert _versions(tmp_path / "t") == [0, 1]
    metadata = fr.without_column_mapping(log.snapshot().metadata)
    assert metadata.configuration == {}
    assert json.loads(metadata.schema_string) == json.loads(SCHEMA)


def test_unused_column_mapping_drops_with_checkpoint_protection(tmp_path: Path) -> None:
    log = _table(tmp_path, _p(2, 5))
    drop_feature(log, "columnMapping")
    root = tmp_path / "t"
    # three empty commits each with a checkpoint, then the downgrade, then its checkpoint
    assert _versions(root) == [0, 1, 2, 3, 4]
    assert [_commit(root, v)["commitInfo"]["operation"] for v in (1, 2, 3)] == ["EMPTY COMMIT"] * 3
    checkpoints = sorted(f.name for f in (root / "_delta_log").glob("*.checkpoint.parquet"))
    assert checkpoints == [f"{v:020d}.checkpoint.parquet" for v in (1, 2, 3, 4)]
    last = _commit(root, 4)
    assert last["protocol"] == {
        "minReaderVersion": 1,
        "minWriterVersion": 7,
        "writerFeatures": sorted(
            ["appendOnly", "invariants", "checkConstraints", "changeDataFeed",
             "generatedColumns", "checkpointProtection"]
        ),
    }  # fmt: skip
    conf = last["metaData"]["configuration"]
    assert conf == {"delta.requireCheckpointProtectionBeforeVersion": "4"}
    assert log.snapshot().version == 4


def _vacuum_check_table(tmp_path: Path) -> DeltaLog:
    return _table(tmp_path, _p(3, 7, {"vacuumProtocolCheck"}, {"vacuumProtocolCheck", *BASE}))


def test_checkpoint_protection_is_dropped_only_with_truncated_history(tmp_path: Path) -> None:
    log = _vacuum_check_table(tmp_path)
    drop_feature(log, "vacuumProtocolCheck")
    root = tmp_path / "t"
    assert _commit(root, 4)["protocol"]["writerFeatures"] == sorted([*BASE, "checkpointProtection"])
    with pytest.raises(FeatureDropNeedsHistoryTruncationError):
        drop_feature(log, "checkpointProtection")
    with pytest.raises(
        FeatureDropCheckpointProtectionWaitError, match=r"configured to interval 24 hours"
    ):
        drop_feature(log, "checkpointProtection", truncate_history=True)
    assert min(_versions(root)) == 0  # nothing truncated: the history is too young
    _age_log(root)
    drop_feature(log, "checkpointProtection", truncate_history=True)
    versions = _versions(root)
    assert min(versions) >= 4  # everything before the protected version went at once
    last = _commit(root, versions[-1])
    assert last["protocol"] == {"minReaderVersion": 1, "minWriterVersion": 2}
    assert "delta.requireCheckpointProtectionBeforeVersion" not in last["metaData"]["configuration"]
    assert log.snapshot().protocol == Protocol(1, 2)


def test_history_truncation_journey(tmp_path: Path) -> None:
    """v2Checkpoint with the fast drop off: the first call cleans the latest version and asks
    to wait; while the history holds the v2 policy the drop is refused; once it is older than
    24 hours TRUNCATE HISTORY removes it and the feature goes."""
    log = _table(
        tmp_path,
        _p(3, 7, {"v2Checkpoint"}, {"v2Checkpoint", *BASE}),
        {"delta.checkpointPolicy": "v2"},
    )
    root = tmp_path / "t"
    with pytest.raises(
        FeatureDropWaitForRetentionPeriodError,
        match=r"Dropping v2Checkpoint was partially successful\..*"
        r"delta\.logRetentionDuration=interval 30 days",
    ):
        drop_feature(log, "v2Checkpoint", fast=False)
    assert _commit(root, 1)["metaData"]["configuration"] == {"delta.checkpointPolicy": "classic"}
    with pytest.raises(FeatureDropHistoricalVersionsExistError, match=r"Cannot drop v2Checkpoint"):
        drop_feature(log, "v2Checkpoint", fast=False)
    with pytest.raises(FeatureDropHistoricalVersionsExistError):
        drop_feature(log, "v2Checkpoint", truncate_history=True)  # history too young
    assert log.snapshot().protocol.reader_features == frozenset({"v2Checkpoint"})
    _age_log(root)
    drop_feature(log, "v2Checkpoint", truncate_history=True)
    versions = _versions(root)
    assert min(versions) > 1  # the versions with the v2 policy are gone
    last = _commit(root, versions[-1])
    assert last["protocol"] == {"minReaderVersion": 1, "minWriterVersion": 2}
    assert last["commitInfo"]["operationParameters"]["truncateHistory"] == "true"
    assert not list((root / "_delta_log").glob("*.checkpoint.*.parquet"))  # no v2 checkpoint


def test_writer_feature_drop_refuses_truncate_history(tmp_path: Path) -> None:
    log = _table(tmp_path, _p(1, 7, None, {*BASE, "inCommitTimestamp"}))
    with pytest.raises(FeatureDropHistoryTruncationNotAllowedError):
        drop_feature(log, "inCommitTimestamp", truncate_history=True)
    assert _versions(tmp_path / "t") == [0]


def test_deletion_vectors_need_the_data_plane_to_purge(tmp_path: Path) -> None:
    log = _table(tmp_path, DV_TABLE)
    snapshot = log.snapshot()
    txn = Transaction(log, snapshot)
    dv = {"storageType": "i", "pathOrInlineDv": "wi5b=000010000siXQKl0rr91000f", "offset": 1,
          "sizeInBytes": 34, "cardinality": 1}  # fmt: skip
    txn.add_files(
        [{"path": "f.parquet", "partitionValues": {}, "size": 1, "modificationTime": 1,
          "dataChange": True, "deletionVector": dv}]
    )  # fmt: skip
    txn.commit("WRITE")
    with pytest.raises(DeltaUnsupportedOperationException, match=r"purging deletion vectors"):
        drop_feature(log, "deletionVectors")
    assert log.snapshot().protocol == DV_TABLE


def test_cleanup_keeps_protected_checkpoints_until_all_history_goes(tmp_path: Path) -> None:
    log = _table(tmp_path, _p(1, 7, None, {*BASE, "checkpointProtection"}),
                 {"delta.requireCheckpointProtectionBeforeVersion": "3"})  # fmt: skip
    root = tmp_path / "t"
    store, log_dir = log.store, str(root / "_delta_log")
    from delta_pyspark.core.log.checkpoint import write_checkpoint

    for _ in range(4):
        snapshot = Transaction(log, log.snapshot()).commit("EMPTY COMMIT")
        if snapshot.version in (2, 4):
            write_checkpoint(store, log_dir, snapshot.state)
    now = time.time() * 1000
    day = 86_400_000
    for v in range(5):  # versions 0-2 expired, 3-4 young
        t = (now - (3 * day if v <= 2 else 0)) / 1000
        for f in (root / "_delta_log").glob(f"{v:020d}.*"):
            os.utime(f, (t, t))
    # the newest expired checkpoint (2) is below the protected version 3: nothing goes
    assert cleanup_expired_logs(store, log_dir, day, protect_before=3) == []
    assert cleanup_expired_logs(store, log_dir, day, protect_before=0) != []  # unprotected
    assert _versions(root) == [2, 3, 4]
    for f in (root / "_delta_log").glob("0000000000000000000[34].*"):
        os.utime(f, (now / 1000 - 3 * 86_400, now / 1000 - 3 * 86_400))
    deleted = cleanup_expired_logs(store, log_dir, day, protect_before=3)
    names = [p.rsplit("/", 1)[-1] for p in deleted]
    assert _versions(root) == [4]
    first_checkpoint = next(i for i, n in enumerate(names) if ".checkpoint." in n)
    assert all(".checkpoint." in n for n in names[first_checkpoint:])  # commits went first
    assert "00000000000000000002.checkpoint.parquet" in names


def test_dv_tombstones_name_each_vector_file_once(tmp_path: Path) -> None:
    import uuid

    from delta_pyspark.core.protocol.deletion_vectors import z85_encode

    log = _table(tmp_path, DV_TABLE)
    file_id = uuid.uuid4()
    dv = {"storageType": "u", "pathOrInlineDv": "ab" + z85_encode(file_id.bytes), "offset": 1,
          "sizeInBytes": 34, "cardinality": 1}  # fmt: skip
    inline = {**dv, "storageType": "i", "pathOrInlineDv": "wi5b=000010000siXQKl0rr91000f"}
    txn = Transaction(log, log.snapshot())
    txn.remove_files(
        [{"path": f"f{i}.parquet", "deletionTimestamp": 1, "dataChange": True,
          "deletionVector": d} for i, d in enumerate([dv, dv, inline, None])]
    )  # fmt: skip
    snapshot = txn.commit("DELETE")
    wanted = f"ab/deletion_vector_{file_id}.bin"
    assert fr.dv_tombstones(snapshot, 5) == [
        {"path": wanted, "deletionTimestamp": 5, "dataChange": False}
    ]
    txn = Transaction(log, snapshot)
    txn.remove_files(fr.dv_tombstones(snapshot, 5))
    assert fr.dv_tombstones(txn.commit("DELETION VECTOR TOMBSTONES"), 6) == []  # not repeated
