"""upgradeTableProtocol / addFeatureSupport in the core: never a downgrade, no commit when
nothing changes, features implied by legacy versions kept as names at writer version 7."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from delta_pyspark.core.commands.protocol_upgrade import add_feature, upgrade_protocol
from delta_pyspark.core.protocol.actions import Protocol
from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.core.transaction.table_definition import create_table
from delta_pyspark.exceptions import UnsupportedFeaturesInConfigError

SCHEMA = json.dumps(
    {"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}}]}
)


def _table(tmp_path: Path, protocol: Protocol) -> DeltaLog:
    log = DeltaLog(str(tmp_path / "t"))
    create_table(log, SCHEMA, protocol=protocol)
    return log


def _commits(log: DeltaLog) -> list[str]:
    return sorted(p.name for p in Path(log.log_dir).glob("*.json"))


def test_lower_or_equal_versions_commit_nothing(tmp_path: Path) -> None:
    log = _table(tmp_path, Protocol(1, 4))
    assert upgrade_protocol(log, 1, 2) is None
    assert upgrade_protocol(log, 1, 4) is None
    assert _commits(log) == ["00000000000000000000.json"]
    assert log.snapshot().protocol == Protocol(1, 4)


def test_upgrade_keeps_the_higher_of_each_version(tmp_path: Path) -> None:
    log = _table(tmp_path, Protocol(1, 4))
    snapshot = upgrade_protocol(log, 2, 3)
    assert snapshot is not None and snapshot.protocol == Protocol(2, 4)
    commit = (Path(log.log_dir) / "00000000000000000001.json").read_text().splitlines()
    actions = [json.loads(line) for line in commit]
    assert {"protocol": {"minReaderVersion": 2, "minWriterVersion": 4}} in actions
    info = next(a["commitInfo"] for a in actions if "commitInfo" in a)
    assert info["operation"] == "UPGRADE PROTOCOL"


def test_writer_seven_names_the_features_legacy_versions_implied(tmp_path: Path) -> None:
    log = _table(tmp_path, Protocol(1, 4))
    snapshot = upgrade_protocol(log, 1, 7)
    assert snapshot is not None
    features = set(snapshot.protocol.writer_features or ())
    assert {"appendOnly", "invariants", "checkConstraints", "changeDataFeed"} <= features
    assert "generatedColumns" in features


def test_add_feature(tmp_path: Path) -> None:
    log = _table(tmp_path, Protocol(1, 4))
    assert add_feature(log, "changeDataFeed") is None  # writer version 4 implies it
    snapshot = add_feature(log, "deletionVectors")
    assert snapshot is not None
    protocol = snapshot.protocol
    assert (protocol.min_reader_version, protocol.min_writer_version) == (3, 7)
    assert "deletionVectors" in (protocol.reader_features or ())
    assert {"deletionVectors", "generatedColumns"} <= set(protocol.writer_features or ())
    with pytest.raises(UnsupportedFeaturesInConfigError, match="DELTA_UNSUPPORTED_FEATURES"):
        add_feature(log, "noSuchFeature")
    assert len(_commits(log)) == 2
