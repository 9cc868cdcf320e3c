"""Table properties given when a table is created (write options, session defaults) go
through the same checks and protocol upgrade as SET TBLPROPERTIES: a misspelled or
unsupported ``delta.*`` key is refused with nothing written, a property that needs a feature
declares it in version 0, and protocol requests change the protocol and are not stored."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from delta_pyspark.core.protocol.actions import Protocol
from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.exceptions import (
    DeltaIllegalArgumentException,
)
from delta_pyspark.tables import DeltaTable

pytestmark = pytest.mark.spark


def _df(spark: Any) -> Any:
    return spark.createDataFrame([(1, "a"), (2, "b")], "id int, c string")


@pytest.mark.parametrize(
    ("key", "message"),
    [
        ("delta.enableDeletionVector", "unknown configuration 'delta.enableDeletionVector'"),
        ("delta.rowTrackingSuspended", "cannot set delta.rowTrackingSuspended"),
        ("delta.appendOnly", "delta.appendOnly"),  # a known key with a bad value
    ],
)
def test_bad_properties_at_creation_are_refused(
    spark: Any, tmp_path: Path, key: str, message: str
) -> None:
    value = "maybe" if key == "delta.appendOnly" else "true"
    with pytest.raises(DeltaIllegalArgumentException, match=message):
        _df(spark).write.format("delta").option(key, value).save(str(tmp_path / "t"))
    assert not (tmp_path / "t" / "_delta_log").exists()


def test_feature_property_at_creation_declares_the_feature(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "w")
    _df(spark).write.format("delta").option("delta.enableTypeWidening", "true").save(path)
    snapshot = DeltaLog(path).snapshot()
    assert snapshot.version == 0
    assert "typeWidening" in (snapshot.protocol.writer_features or ())
    assert "typeWidening" in (snapshot.protocol.reader_features or ())
    # a widening write records its type change on a table that declares the feature
    wider = spark.createDataFrame([(3, "c")], "id long, c string")
    wider.write.format("delta").mode("append").option("mergeSchema", "true").save(path)
    field = DeltaLog(path).snapshot().schema.field("id")
    assert field.metadata["delta.typeChanges"] == [{"fromType": "integer", "toType": "long"}]
    rows = sorted(tuple(r) for r in spark.read.format("delta").load(path).collect())
    assert rows == [(1, "a"), (2, "b"), (3, "c")]


def test_protocol_requests_change_the_protocol_and_are_not_stored(
    spark: Any, tmp_path: Path
) -> None:
    path = str(tmp_path / "p")
    _df(spark).write.format("delta").option("delta.minWriterVersion", "4").option(
        "delta.feature.deletionVectors", "supported"
    ).save(path)
    snapshot = DeltaLog(path).snapshot()
    assert "deletionVectors" in (snapshot.protocol.writer_features or ())
    assert "changeDataFeed" in (snapshot.protocol.writer_features or ())  # implied by v4
    assert dict(snapshot.configuration) == {}


def test_session_defaults_are_delta_properties(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "d")
    spark.conf.set("spark.databricks.delta.properties.defaults.appendOnly", "true")
    try:
        _df(spark).write.format("delta").save(path)
    finally:
        spark.conf.unset("spark.databricks.delta.properties.defaults.appendOnly")
    snapshot = DeltaLog(path).snapshot()
    assert dict(snapshot.configuration) == {"delta.appendOnly": "true"}
    with pytest.raises(Exception, match=r"(?i)append"):
        DeltaTable.forPath(spark, path).delete("id = 1")
    assert DeltaLog(path).snapshot().version == 0


def test_add_feature_to_a_legacy_table_implying_generated_columns(
    spark: Any, tmp_path: Path
) -> None:
    path = str(tmp_path / "legacy")
    _df(spark).write.format("delta").save(path)
    table = DeltaTable.forPath(spark, path)
    table.upgradeTableProtocol(1, 4)
    table.upgradeTableProtocol(1, 2)  # never a downgrade: a no-op
    assert DeltaLog(path).snapshot().protocol == Protocol(1, 4)
    table.addFeatureSupport("deletionVectors")
    protocol = DeltaLog(path).snapshot().protocol
    assert {"deletionVectors", "generatedColumns"} <= set(protocol.writer_features or ())
    _df(spark).write.format("delta").mode("append").save(path)  # still writable
    assert spark.read.format("delta").load(path).count() == 4
