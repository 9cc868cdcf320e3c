"""SET / UNSET TBLPROPERTIES and ADD COLUMNS (Spark-free): validation against the property
registry, protocol upgrades in the same commit, and exactly what lands in the log."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from delta_pyspark.core.commands.alter_table import add_columns, set_properties, unset_properties
from delta_pyspark.core.protocol.actions import Protocol
from delta_pyspark.core.protocol.column_mapping import PHYSICAL_NAME_KEY
from delta_pyspark.core.protocol.schema import PrimitiveType, StructField
from delta_pyspark.core.protocol.table_features import with_features
from delta_pyspark.core.protocol.table_properties import validate_property
from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.core.snapshot.snapshot import Snapshot
from delta_pyspark.core.transaction.optimistic_transaction import Transaction
from delta_pyspark.core.transaction.table_definition import create_table
from delta_pyspark.exceptions import (
    DeltaAnalysisException,
    DeltaIllegalArgumentException,
    DeltaUnsupportedOperationException,
    UnsupportedTableFeatureError,
)

SCHEMA = json.dumps(
    {
        "type": "struct",
        "fields": [
            {"name": "id", "type": "long", "nullable": True, "metadata": {}},
            {
                "name": "s",
                "type": {
                    "type": "struct",
                    "fields": [{"name": "x", "type": "integer", "nullable": True, "metadata": {}}],
                },
                "nullable": True,
                "metadata": {},
            },
            {"name": "p", "type": "string", "nullable": True, "metadata": {}},
        ],
    }
)


@pytest.fixture
def log(tmp_path: Path) -> DeltaLog:
    log = DeltaLog(str(tmp_path / "t"))
    create_table(log, SCHEMA, ["p"], configuration={"user.owner": "me"})
    _append(log, "a")
    return log


def _append(log: DeltaLog, partition: str) -> Snapshot:
    """Commit one (fake) data file in partition ``p=<partition>``."""
    txn = Transaction(log, log.snapshot())
    path = f"p={partition}/f.parquet"
    add = {"path": path, "partitionValues": {"p": partition}, "size": 1, "modificationTime": 1}
    txn.add_files([add | {"dataChange": True}])
    return txn.commit("WRITE", {})


def _commit(log: DeltaLog, version: int) -> dict[str, Any]:
    """The actions of one commit file by kind."""
    path = Path(log.table_root) / "_delta_log" / f"{version:020d}.json"
    out: dict[str, Any] = {}
    for line in path.read_text().splitlines():
        ((kind, body),) = json.loads(line).items()
        out[kind] = body
    return out


def test_set_stores_and_commits_once(log: DeltaLog) -> None:
    snap = set_properties(log, {"delta.appendOnly": "true", "team": "x"})
    assert snap.version == 2 == log.snapshot().version
    assert dict(log.snapshot().configuration) == {
        "user.owner": "me",
        "delta.appendOnly": "true",
        "team": "x",
    }
    c = _commit(log, 2)
    assert set(c) == {"commitInfo", "metaData"}  # (1, 2) already implies appendOnly
    assert c["commitInfo"]["operation"] == "SET TBLPROPERTIES"
    assert json.loads(c["commitInfo"]["operationParameters"]["properties"]) == {
        "delta.appendOnly": "true",
        "team": "x",
    }
    assert c["metaData"]["configuration"]["delta.appendOnly"] == "true"
    assert c["metaData"]["id"] == log.snapshot(1).metadata.id  # same table
    # the property is now obeyed: removing data is refused
    snap = log.snapshot()
    from delta_pyspark.core.protocol.actions import remove_actions

    txn = Transaction(log, snap)
    txn.remove_files(remove_actions(snap.files))
    with pytest.raises(DeltaAnalysisException, match="append-only"):
        txn.commit("DELETE", {})


def test_delta_keys_are_case_insensitive_and_canonical(log: DeltaLog) -> None:
    set_properties(log, {"DELTA.LOGRETENTIONDURATION": "interval 2 days"})
    set_properties(log, {"delta.logretentionduration": "interval 3 days"})
    conf = dict(log.snapshot().configuration)
    assert conf["delta.logRetentionDuration"] == "interval 3 days"
    assert [k for k in conf if k.lower() == "delta.logretentionduration"] == [
        "delta.logRetentionDuration"
    ]
    # user keys are case-sensitive, free-form
    set_properties(log, {"Owner": "A", "owner": "b"})
    assert log.snapshot().configuration["Owner"] == "A"
    assert log.snapshot().configuration["owner"] == "b"


def test_booleans_are_normalised(log: DeltaLog) -> None:
    set_properties(log, {"delta.enableChangeDataFeed": "TRUE"})
    assert log.snapshot().configuration["delta.enableChangeDataFeed"] == "true"


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("delta.appendOnly", "yes", "boolean"),
        ("delta.checkpointInterval", "0", "integer"),
        ("delta.checkpointInterval", "ten", "integer"),
        ("delta.logRetentionDuration", "forever", "interval"),
        ("delta.deletedFileRetentionDuration", "interval 1 month", "interval"),
        ("delta.isolationLevel", "SnapshotIsolation", "Serializable, WriteSerializable"),
        ("delta.columnMapping.mode", "physical", "none, name, id"),
        ("delta.checkpointPolicy", "v3", "classic, v2"),
        ("delta.targetFileSize", "big", "size"),
        ("delta.dataSkippingNumIndexedCols", "-2", ">= -1"),
        ("delta.parquet.compression.codec", "brotli2", "zstd"),
        ("delta.autoOptimize.autoCompact", "sometimes", "auto"),
        ("delta.minWriterVersion", "8", "between 1 and 7"),
        ("delta.feature.deletionVectors", "on", "supported"),
    ],
)
def test_bad_values_are_refused_naming_the_key(
    log: DeltaLog, key: str, value: str, message: str
) -> None:
    with pytest.raises(DeltaIllegalArgumentException) as e:
        set_properties(log, {key: value})
    assert key in str(e.value) and message in str(e.value)
    assert log.snapshot().version == 1  # nothing committed


def test_unknown_and_managed_keys_are_refused(log: DeltaLog) -> None:
    with pytest.raises(DeltaIllegalArgumentException, match=r"delta\.appendOnlyy"):
        set_properties(log, {"delta.appendOnlyy": "true"})
    with pytest.raises(DeltaIllegalArgumentException, match="unknown table feature 'bogus'"):
        set_properties(log, {"delta.feature.bogus": "supported"})
    with pytest.raises(DeltaIllegalArgumentException, match="maxColumnId"):
        set_properties(log, {"delta.columnMapping.maxColumnId": "5"})
    with pytest.raises(DeltaIllegalArgumentException, match="suspend row tracking"):
        set_properties(log, {"delta.rowTrackingSuspended": "true"})
    assert log.snapshot().version == 1


def test_constraints_need_their_own_api(log: DeltaLog) -> None:
    with pytest.raises(DeltaAnalysisException, match="addConstraint"):
        set_properties(log, {"delta.constraints.c1": "id > 0"})
    with pytest.raises(DeltaAnalysisException, match="dropConstraint"):
        unset_properties(log, ["delta.constraints.c1"], if_exists=True)


def test_good_values_of_each_kind(log: DeltaLog) -> None:
    props = {
        "delta.checkpointInterval": "5",
        "delta.logRetentionDuration": "interval 30 days",
        "delta.deletedFileRetentionDuration": "interval 1 week",
        "delta.isolationLevel": "serializable",
        "delta.targetFileSize": "128mb",
        "delta.dataSkippingNumIndexedCols": "-1",
        "delta.dataSkippingStatsColumns": "id, `s`.x",
        "delta.autoOptimize.optimizeWrite": "true",
        "delta.autoOptimize.autoCompact": "auto",
        "delta.compatibility.symlinkFormatManifest.enabled": "false",
        "delta.checkpoint.writeStatsAsStruct": "true",
        "delta.parquet.compression.codec": "ZSTD",
    }
    set_properties(log, props)
    conf = log.snapshot().configuration
    assert conf["delta.isolationLevel"] == "Serializable"
    assert conf["delta.parquet.compression.codec"] == "zstd"
    assert conf["delta.dataSkippingStatsColumns"] == "id, `s`.x"
    assert conf["delta.checkpointInterval"] == "5"
    assert log.snapshot().protocol == Protocol(1, 2)  # none of these needs a feature


def test_stats_columns_must_exist(log: DeltaLog) -> None:
    with pytest.raises(DeltaAnalysisException, match=r"'s\.nope'"):
        set_properties(log, {"delta.dataSkippingStatsColumns": "id, s.nope"})


def test_deletion_vectors_upgrade_the_protocol_and_stay(log: DeltaLog) -> None:
    set_properties(log, {"delta.enableDeletionVectors": "true"})
    p = log.snapshot().protocol
    assert (p.min_reader_version, p.min_writer_version) == (3, 7)
    assert "deletionVectors" in p.reader_features and "deletionVectors" in p.writer_features
    assert {"appendOnly", "invariants"} <= p.writer_features  # legacy (1, 2) features kept
    c = _commit(log, 2)
    assert c["protocol"]["readerFeatures"] == ["deletionVectors"]
    # turning it off keeps the feature: existing vectors stay readable
    set_properties(log, {"delta.enableDeletionVectors": "false"})
    assert log.snapshot().protocol == p
    assert "protocol" not in _commit(log, 3)
    unset_properties(log, ["delta.enableDeletionVectors"])
    assert log.snapshot().protocol == p
    assert "delta.enableDeletionVectors" not in log.snapshot().configuration


def test_legacy_upgrades(log: DeltaLog) -> None:
    set_properties(log, {"delta.enableChangeDataFeed": "true"})
    cdf = frozenset({"appendOnly", "invariants", "changeDataFeed"})
    assert log.snapshot().protocol == Protocol(1, 7, None, cdf)
    # versions asked of it add the features they imply; (2, 5) is then exactly those
    set_properties(log, {"delta.minWriterVersion": "5", "delta.minReaderVersion": "2"})
    assert log.snapshot().protocol == Protocol(2, 5)
    assert "delta.minWriterVersion" not in log.snapshot().configuration  # protocol only
    with pytest.raises(DeltaIllegalArgumentException, match="never downgraded"):
        set_properties(log, {"delta.minWriterVersion": "3"})


def test_v2_checkpoint_policy(log: DeltaLog) -> None:
    set_properties(log, {"delta.checkpointPolicy": "v2"})
    p = log.snapshot().protocol
    assert "v2Checkpoint" in p.reader_features and "v2Checkpoint" in p.writer_features


def test_explicit_feature_support(log: DeltaLog) -> None:
    set_properties(log, {"delta.feature.timestampntz": "enabled"})  # any case, legacy value
    p = log.snapshot().protocol
    assert "timestampNtz" in p.reader_features and "timestampNtz" in p.writer_features
    assert not any(k.startswith("delta.feature.") for k in log.snapshot().configuration)
    with pytest.raises(DeltaUnsupportedOperationException, match="DROP FEATURE"):
        unset_properties(log, ["delta.feature.timestampNtz"])
    # a feature the spec knows but this implementation cannot write
    with pytest.raises(UnsupportedTableFeatureError, match="allowColumnDefaults"):
        set_properties(log, {"delta.feature.allowColumnDefaults": "supported"})
    assert "allowColumnDefaults" not in (log.snapshot().protocol.writer_features or set())


def test_column_mapping_none_to_name(log: DeltaLog) -> None:
    set_properties(log, {"delta.columnMapping.mode": "name"})
    snap = log.snapshot()
    assert snap.protocol == Protocol(
        2, 7, None, frozenset({"appendOnly", "invariants", "columnMapping"})
    )
    assert snap.configuration["delta.columnMapping.mode"] == "name"
    assert snap.configuration["delta.columnMapping.maxColumnId"] == "4"
    fields = {f.name: f for f in snap.schema.fields}
    # existing files use the logical names, so they become the physical names
    assert fields["id"].metadata["delta.columnMapping.physicalName"] == "id"
    assert fields["p"].metadata["delta.columnMapping.physicalName"] == "p"
    nested = fields["s"].type.fields[0]
    assert nested.metadata["delta.columnMapping.physicalName"] == "x"
    ids = sorted(
        [f.metadata["delta.columnMapping.id"] for f in snap.schema.fields]
        + [nested.metadata["delta.columnMapping.id"]]
    )
    assert ids == [1, 2, 3, 4]
    # partition values in the log keep working (physical name == logical name)
    assert snap.files.num_rows == 1
    with pytest.raises(DeltaUnsupportedOperationException, match="'name' to 'none'"):
        set_properties(log, {"delta.columnMapping.mode": "none"})
    with pytest.raises(DeltaUnsupportedOperationException, match="physical column names"):
        unset_properties(log, ["delta.columnMapping.mode"])
    with pytest.raises(DeltaAnalysisException, match="column mapping"):
        set_properties(log, {"delta.compatibility.symlinkFormatManifest.enabled": "true"})


def test_column_mapping_none_to_id_is_refused(log: DeltaLog) -> None:
    with pytest.raises(DeltaUnsupportedOperationException, match="'none' to 'id'"):
        set_properties(log, {"delta.columnMapping.mode": "id"})


def test_manifest_and_deletion_vectors_are_exclusive(log: DeltaLog) -> None:
    set_properties(log, {"delta.enableDeletionVectors": "true"})
    with pytest.raises(DeltaAnalysisException, match="cannot both be"):
        set_properties(log, {"delta.compatibility.symlinkFormatManifest.enabled": "true"})
    set_properties(log, {"delta.enableDeletionVectors": "false"})
    set_properties(log, {"delta.compatibility.symlinkFormatManifest.enabled": "true"})
    with pytest.raises(DeltaAnalysisException, match="cannot both be"):
        set_properties(log, {"delta.enableDeletionVectors": "true"})


def test_enabling_in_commit_timestamps_on_an_existing_table_records_where_they_start(
    log: DeltaLog,
) -> None:
    import os

    import deltalake

    log_dir = Path(log.table_root) / "_delta_log"
    for v, seconds in ((0, 1_600_000_000), (1, 1_600_000_100)):  # old, distinct file times
        os.utime(log_dir / f"{v:020d}.json", (seconds, seconds))
    snap = set_properties(log, {"delta.enableInCommitTimestamps": "true"})
    assert snap.version == 2
    enabling = _commit(log, 2)
    ict = enabling["commitInfo"]["inCommitTimestamp"]
    assert ict > 1_600_000_100_000  # after the previous commit's file time
    conf = enabling["metaData"]["configuration"]
    assert conf["delta.enableInCommitTimestamps"] == "true"
    assert conf["delta.inCommitTimestampEnablementVersion"] == "2"
    assert conf["delta.inCommitTimestampEnablementTimestamp"] == str(ict)
    assert "inCommitTimestamp" in enabling["protocol"]["writerFeatures"]
    assert snap.timestamp == ict

    later = _append(log, "b")
    assert _commit(log, 3)["commitInfo"]["inCommitTimestamp"] > ict
    assert "delta.inCommitTimestampEnablementVersion" not in _commit(log, 3).get("metaData", {})
    assert dict(later.configuration)["delta.inCommitTimestampEnablementVersion"] == "2"
    # file times before the enablement, in-commit timestamps from it on
    assert [r.timestamp for r in log.commit_records()][:3] == [
        1_600_000_000_000,
        1_600_000_100_000,
        ict,
    ]
    assert log.version_at_timestamp(1_600_000_100_000) == 1
    assert log.version_at_timestamp(ict) == 2
    assert deltalake.DeltaTable(log.table_root).version() == 3


def test_enablement_is_stamped_with_the_version_that_commits(log: DeltaLog) -> None:
    """A concurrent append wins version 2: the enabling commit retries as version 3 and
    records 3, not the version it first tried."""
    snap = log.snapshot()
    txn = Transaction(log, snap)
    conf = dict(snap.configuration) | {"delta.enableInCommitTimestamps": "true"}
    txn.update_metadata(snap.metadata.with_changes(configuration=conf))
    txn.update_protocol(with_features(snap.protocol, {"inCommitTimestamp"}))
    _append(log, "c")  # the concurrent winner
    committed = txn.commit("SET TBLPROPERTIES", {})
    assert committed.version == 3
    conf3 = _commit(log, 3)["metaData"]["configuration"]
    assert conf3["delta.inCommitTimestampEnablementVersion"] == "3"
    assert conf3["delta.inCommitTimestampEnablementTimestamp"] == str(
        _commit(log, 3)["commitInfo"]["inCommitTimestamp"]
    )


def test_unset(log: DeltaLog) -> None:
    set_properties(log, {"delta.appendOnly": "true", "k": "v"})
    snap = unset_properties(log, ["DELTA.appendonly", "k"])
    assert dict(snap.configuration) == {"user.owner": "me"}
    c = _commit(log, snap.version)
    assert c["commitInfo"]["operation"] == "UNSET TBLPROPERTIES"
    params = c["commitInfo"]["operationParameters"]
    assert json.loads(params["properties"]) == ["delta.appendOnly", "k"]
    assert params["ifExists"] == "false"
    assert "protocol" not in c


def test_unset_missing_key(log: DeltaLog) -> None:
    with pytest.raises(DeltaAnalysisException, match=r"cannot unset nope: .*ifExists=True"):
        unset_properties(log, ["nope"])
    assert log.snapshot().version == 1
    snap = unset_properties(log, ["nope", "user.owner"], if_exists=True)
    assert dict(snap.configuration) == {}
    c = _commit(log, snap.version)
    assert json.loads(c["commitInfo"]["operationParameters"]["properties"]) == ["user.owner"]
    assert c["commitInfo"]["operationParameters"]["ifExists"] == "true"


def test_time_travel_sees_old_properties(log: DeltaLog) -> None:
    set_properties(log, {"delta.checkpointInterval": "3"})
    set_properties(log, {"delta.checkpointInterval": "4"})
    assert "delta.checkpointInterval" not in log.snapshot(1).configuration
    assert log.snapshot(2).configuration["delta.checkpointInterval"] == "3"
    assert log.snapshot(3).configuration["delta.checkpointInterval"] == "4"


def test_validate_property_directly() -> None:
    assert validate_property("Delta.AppendOnly", "False") == ("delta.appendOnly", "false")
    assert validate_property("my.key", "Anything") == ("my.key", "Anything")
    assert validate_property("delta.feature.DeletionVectors", "supported") == (
        "delta.feature.deletionVectors",
        "supported",
    )


def test_add_columns_appends_nullable_columns_in_one_commit(log: DeltaLog) -> None:
    note = StructField("note", PrimitiveType("string"), True, {"comment": "free text"})
    snapshot = add_columns(log, [note, StructField("n", PrimitiveType("integer"), True, {})])
    assert snapshot.version == 2
    assert snapshot.schema.field_names == ["id", "s", "p", "note", "n"]
    assert snapshot.partition_columns == ["p"]
    commit = _commit(log, 2)
    assert set(commit) == {"commitInfo", "metaData"}
    assert commit["commitInfo"]["operation"] == "ADD COLUMNS"
    columns = json.loads(commit["commitInfo"]["operationParameters"]["columns"])
    assert [c["column"]["name"] for c in columns] == ["note", "n"]
    assert columns[0]["column"]["metadata"] == {"comment": "free text"}


def test_add_columns_refuses_existing_names_and_not_null(log: DeltaLog) -> None:
    with pytest.raises(DeltaAnalysisException, match="cannot add column 'ID': it already exists"):
        add_columns(log, [StructField("ID", PrimitiveType("long"), True, {})])
    twice = [StructField(n, PrimitiveType("long"), True, {}) for n in ("a", "A")]
    with pytest.raises(DeltaAnalysisException, match="cannot add column 'A'"):
        add_columns(log, twice)
    with pytest.raises(DeltaAnalysisException, match="as NOT NULL"):
        add_columns(log, [StructField("m", PrimitiveType("long"), False, {})])
    with pytest.raises(DeltaIllegalArgumentException, match="at least one column"):
        add_columns(log, [])
    assert log.snapshot().version == 1


def test_add_columns_on_a_column_mapped_table_assigns_ids(log: DeltaLog) -> None:
    set_properties(log, {"delta.columnMapping.mode": "name"})
    before = int(log.snapshot().configuration["delta.columnMapping.maxColumnId"])
    snapshot = add_columns(log, [StructField("extra", PrimitiveType("long"), True, {})])
    extra = snapshot.schema.field("extra")
    assert extra.metadata["delta.columnMapping.id"] == before + 1
    assert extra.metadata[PHYSICAL_NAME_KEY].startswith("col-")
    assert snapshot.configuration["delta.columnMapping.maxColumnId"] == str(before + 1)
