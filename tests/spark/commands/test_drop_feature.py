"""DROP FEATURE through ``DeltaTable.dropFeatureSupport`` and ``ALTER TABLE ... DROP
FEATURE``: each droppable feature dropped with its data rewritten where needed, the protocol and
metadata checked in the JSON commits, the rows unchanged and read back by delta-rs; the
refusals by type and message with no new commit. Also ``upgradeTableProtocol`` (never a
downgrade) and ``addFeatureSupport``'s error class."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import deltalake
import pyarrow.parquet as pq
import pytest
from pyspark.errors import AnalysisException

from delta_pyspark import exceptions as ex
from delta_pyspark.core.snapshot.delta_log import clear_log_cache
from delta_pyspark.tables import DeltaTable

ROWS = [(i, f"v{i}", i % 3) for i in range(12)]


def _commit(root: Path, version: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for line in (root / "_delta_log" / f"{version:020d}.json").read_text().splitlines():
        out.update(json.loads(line))
    return out


def _latest(root: Path) -> int:
    return max(int(f.name[:20]) for f in (root / "_delta_log").glob("*.json"))


def _rows(spark: Any, path: str) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in spark.read.format("delta").load(path).collect())


def _rs_rows(path: str) -> list[tuple[Any, ...]]:
    """The table as delta-rs (the ``deltalake`` package) reads it."""
    table = deltalake.DeltaTable(path).to_pyarrow_table()
    return sorted(tuple(r.values()) for r in table.to_pylist())


def _table(spark: Any, tmp_path: Path, **props: str) -> tuple[Path, str]:
    root = tmp_path / "t"
    writer = spark.createDataFrame(ROWS, "id long, s string, p int").repartition(2).write
    for key, value in props.items():
        writer = writer.option(key, value)
    writer.format("delta").save(str(root))
    return root, str(root)


def _age_log(root: Path) -> None:
    old = time.time() - 3 * 86_400
    for f in (root / "_delta_log").rglob("*"):
        if f.is_file():
            os.utime(f, (old, old))
    clear_log_cache()


def _sql_drop(spark: Any, path: str, feature: str, truncate: bool = False) -> None:
    suffix = " TRUNCATE HISTORY" if truncate else ""
    spark.sql(f"ALTER TABLE delta.`{path}` DROP FEATURE {feature}{suffix}")


def _api_drop(spark: Any, path: str, feature: str, truncate: bool = False) -> None:
    DeltaTable.forPath(spark, path).dropFeatureSupport(feature, truncate)


DROPS: dict[str, Callable[[Any, str, str, bool], None]] = {"api": _api_drop, "sql": _sql_drop}


@pytest.mark.parametrize("how", list(DROPS))
def test_deletion_vectors_purged_then_dropped_with_checkpoint_protection(
    spark: Any, tmp_path: Path, how: str
) -> None:
    root, path = _table(spark, tmp_path, **{"delta.enableDeletionVectors": "true"})
    DeltaTable.forPath(spark, path).delete("id % 4 = 0")
    assert any("deletionVector" in a for a in [_commit(root, 1).get("add", {})])
    expected = [r for r in ROWS if r[0] % 4]
    DROPS[how](spark, path, "deletionVectors", False)
    unset, reorg = _commit(root, 2), _commit(root, 3)
    assert "delta.enableDeletionVectors" not in unset["metaData"]["configuration"]
    assert reorg["commitInfo"]["operation"] == "REORG"
    # the vector files older versions read stay protected from DV-unaware VACUUMs
    lines = (root / "_delta_log" / f"{4:020d}.json").read_text().splitlines()
    tombstones = [json.loads(x)["remove"] for x in lines if '"remove"' in x]
    assert tombstones and all(t["path"].startswith("deletion_vector_") for t in tombstones)
    assert all((root / t["path"]).exists() and t["dataChange"] is False for t in tombstones)
    versions = range(5, 8)
    assert [_commit(root, v)["commitInfo"]["operation"] for v in versions] == ["EMPTY COMMIT"] * 3
    for v in versions:
        assert (root / "_delta_log" / f"{v:020d}.checkpoint.parquet").exists()
    drop = _commit(root, 8)
    assert drop["protocol"] == {
        "minReaderVersion": 1,
        "minWriterVersion": 7,
        "writerFeatures": ["appendOnly", "checkpointProtection", "invariants"],
    }
    assert drop["metaData"]["configuration"] == {
        "delta.requireCheckpointProtectionBeforeVersion": "8"
    }
    assert drop["commitInfo"]["operationParameters"]["featureName"] == "deletionVectors"
    assert (root / "_delta_log" / f"{8:020d}.checkpoint.parquet").exists()
    assert _rows(spark, path) == expected
    assert _rs_rows(path) == expected
    detail = DeltaTable.forPath(spark, path).detail().first()
    assert "deletionVectors" not in detail.tableFeatures
    # the table stays writable (checkpointProtection is one of our writer features)
    spark.createDataFrame([(100, "x", 1)], "id long, s string, p int").write.format("delta").mode(
        "append"
    ).save(path)
    assert len(_rows(spark, path)) == len(expected) + 1


def test_history_truncation_journey_for_deletion_vectors(spark: Any, tmp_path: Path) -> None:
    root, path = _table(spark, tmp_path, **{"delta.enableDeletionVectors": "true"})
    DeltaTable.forPath(spark, path).delete("id < 3")
    expected = [r for r in ROWS if r[0] >= 3]
    with pytest.raises(
        ex.FeatureDropWaitForRetentionPeriodError,
        match=r"Dropping deletionVectors was partially successful",
    ) as caught:
        _sql_drop(spark, path, "deletionVectors", truncate=True)
    assert caught.value.getCondition() == "DELTA_FEATURE_DROP_WAIT_FOR_RETENTION_PERIOD"
    assert _rows(spark, path) == expected  # purged, still deletion vectors in the protocol
    with pytest.raises(ex.FeatureDropHistoricalVersionsExistError):
        _api_drop(spark, path, "deletionVectors", True)
    _age_log(root)
    _api_drop(spark, path, "deletionVectors", True)
    last = _commit(root, _latest(root))
    assert last["protocol"] == {"minReaderVersion": 1, "minWriterVersion": 2}
    assert last["commitInfo"]["operationParameters"]["truncateHistory"] == "true"
    assert not (root / "_delta_log" / f"{1:020d}.json").exists()  # the history is truncated
    assert _rows(spark, path) == expected
    assert _rs_rows(path) == expected


def test_fast_drop_off_needs_the_retention_period(spark: Any, tmp_path: Path, conf: Any) -> None:
    conf("spark.databricks.delta.tableFeatures.fastDropFeature.enabled", "false")
    root, path = _table(spark, tmp_path, **{"delta.enableDeletionVectors": "true"})
    with pytest.raises(ex.FeatureDropWaitForRetentionPeriodError):
        _api_drop(spark, path, "deletionVectors")
    assert "deletionVectors" in json.dumps(
        _commit(root, _latest(root) - 1).get("protocol", {})
    ) or (DeltaTable.forPath(spark, path).detail().first().minReaderVersion == 3)


@pytest.mark.parametrize("how", list(DROPS))
def test_type_widening_rewrites_narrow_files(spark: Any, tmp_path: Path, how: str) -> None:
    root = tmp_path / "t"
    path = str(root)
    spark.createDataFrame([(1, "a"), (2, "b")], "x int, s string").coalesce(1).write.format(
        "delta"
    ).option("delta.enableTypeWidening", "true").save(path)
    spark.createDataFrame([(2**40, "c")], "x long, s string").write.format("delta").option(
        "mergeSchema", "true"
    ).mode("append").save(path)
    widened = json.loads(_commit(root, 1)["metaData"]["schemaString"])["fields"][0]
    assert widened["metadata"]["delta.typeChanges"] == [{"fromType": "integer", "toType": "long"}]
    expected = [(1, "a"), (2, "b"), (2**40, "c")]
    DROPS[how](spark, path, "typeWidening", False)
    v = _latest(root)
    drop = _commit(root, v)
    assert drop["commitInfo"]["operation"] == "DROP FEATURE"
    assert "typeWidening" not in json.dumps(drop["protocol"])
    assert "checkpointProtection" in drop["protocol"]["writerFeatures"]
    schema = json.loads(
        next(
            _commit(root, u)["metaData"]["schemaString"]
            for u in range(v, 0, -1)
            if "metaData" in _commit(root, u)
        )
    )
    assert schema["fields"][0] == {"name": "x", "type": "long", "nullable": True, "metadata": {}}
    reorg = next(
        _commit(root, u)
        for u in range(2, v)
        if _commit(root, u)["commitInfo"]["operation"] == "REORG"
    )
    assert len(reorg["remove"]["path"]) > 0 and "add" in reorg
    for f in DeltaTable.forPath(spark, path).toDF().inputFiles():
        assert str(pq.read_schema(f.removeprefix("file:")).field("x").type) == "int64"
    assert _rows(spark, path) == expected
    assert _rs_rows(path) == expected


@pytest.mark.parametrize(
    ("feature", "props", "how"),
    [
        ("v2Checkpoint", {"delta.checkpointPolicy": "v2"}, "api"),
        ("inCommitTimestamp", {"delta.enableInCommitTimestamps": "true"}, "sql"),
        ("vacuumProtocolCheck", {"delta.feature.vacuumProtocolCheck": "supported"}, "sql"),
    ],
)
def test_metadata_only_features_drop(
    spark: Any, tmp_path: Path, feature: str, props: dict[str, str], how: str
) -> None:
    root, path = _table(spark, tmp_path, **props)
    assert feature in json.dumps(_commit(root, 0)["protocol"])
    DROPS[how](spark, path, feature, False)
    drop = _commit(root, _latest(root))
    assert drop["commitInfo"]["operation"] == "DROP FEATURE"
    assert feature not in json.dumps(drop["protocol"])
    conf = DeltaTable.forPath(spark, path).detail().first().properties
    assert conf.get("delta.checkpointPolicy", "classic") == "classic"
    assert conf.get("delta.enableInCommitTimestamps", "false") == "false"
    assert "delta.inCommitTimestampEnablementVersion" not in conf
    assert _rows(spark, path) == sorted(ROWS)
    assert _rs_rows(path) == sorted(ROWS)


@pytest.mark.parametrize("how", list(DROPS))
def test_column_mapping_rewrites_files_with_logical_names(
    spark: Any, tmp_path: Path, how: str
) -> None:
    root = tmp_path / "t"
    path = str(root)
    spark.createDataFrame(ROWS, "id long, s string, p int").write.format("delta").option(
        "delta.columnMapping.mode", "name"
    ).partitionBy("p").save(path)
    spark.sql(f"ALTER TABLE delta.`{path}` RENAME COLUMN s TO `the text`")
    DeltaTable.forPath(spark, path).delete("id = 5")
    expected = sorted(r for r in ROWS if r[0] != 5)
    DROPS[how](spark, path, "columnMapping", False)
    operations = {
        v: _commit(root, v)["commitInfo"]["operation"] for v in range(3, _latest(root) + 1)
    }
    rewrite_version = next(v for v, op in operations.items() if op == "REMOVE COLUMN MAPPING")
    rewrite = _commit(root, rewrite_version)
    assert "delta.columnMapping.mode" not in rewrite["metaData"]["configuration"]
    assert "columnMapping" not in rewrite["metaData"]["schemaString"]
    assert rewrite["add"]["partitionValues"].keys() == {"p"}
    drop = _commit(root, _latest(root))
    assert drop["commitInfo"]["operation"] == "DROP FEATURE"
    assert "columnMapping" not in json.dumps(drop["protocol"])
    for f in DeltaTable.forPath(spark, path).toDF().inputFiles():
        assert pq.read_schema(f.removeprefix("file:")).names == ["id", "the text"]
    df = spark.read.format("delta").load(path)
    assert df.columns == ["id", "the text", "p"]
    assert _rows(spark, path) == expected
    rs = deltalake.DeltaTable(path).to_pyarrow_table()
    assert sorted(zip(*(rs.column(c).to_pylist() for c in df.columns), strict=True)) == expected


def test_check_constraints_refused_then_dropped(spark: Any, tmp_path: Path) -> None:
    root, path = _table(spark, tmp_path)
    spark.sql(f"ALTER TABLE delta.`{path}` ADD CONSTRAINT positive CHECK (id >= 0)")
    before = _latest(root)
    with pytest.raises(
        AnalysisException,
        match=r"Cannot drop the CHECK constraints table feature\. The following constraints "
        r"must be dropped first: positive\.",
    ) as caught:
        _sql_drop(spark, path, "checkConstraints")
    assert type(caught.value) is ex.CannotDropCheckConstraintFeatureError
    assert _latest(root) == before
    spark.sql(f"ALTER TABLE delta.`{path}` DROP CONSTRAINT positive")
    _api_drop(spark, path, "checkConstraints")
    assert _commit(root, _latest(root))["protocol"] == {
        "minReaderVersion": 1,
        "minWriterVersion": 2,
    }
    assert _rows(spark, path) == sorted(ROWS)


@pytest.mark.parametrize(
    ("feature", "props", "error", "message"),
    [
        ("appendOnly", {}, ex.FeatureDropNonRemovableError,
         r"Cannot drop appendOnly because dropping this feature is not supported\."),
        ("changeDataFeed", {"delta.enableChangeDataFeed": "true"},
         ex.FeatureDropNonRemovableError, r"Cannot drop changeDataFeed because"),
        ("deletionVectors", {}, ex.FeatureDropNotPresentError,
         r"Cannot drop deletionVectors from this table because it is not currently present"),
        ("`delta.appendOnly`", {}, ex.FeatureDropIsDeltaPropertyError,
         r"this is a delta table property and not a table feature"),
        ("'noSuchFeature'", {}, ex.FeatureDropUnsupportedClientFeatureError,
         r"Cannot drop noSuchFeature because it is not supported by this Delta version"),
    ],
)  # fmt: skip
def test_refusals_commit_nothing(
    spark: Any, tmp_path: Path, feature: str, props: dict[str, str], error: type, message: str
) -> None:
    root, path = _table(spark, tmp_path, **props)
    with pytest.raises(error, match=message) as caught:
        _sql_drop(spark, path, feature)
    assert type(caught.value) is error
    assert caught.value.getCondition() == error.error_class
    assert _latest(root) == 0


def test_truncate_history_on_a_writer_feature_is_refused(spark: Any, tmp_path: Path) -> None:
    root, path = _table(spark, tmp_path, **{"delta.enableInCommitTimestamps": "true"})
    with pytest.raises(ex.FeatureDropHistoryTruncationNotAllowedError):
        _sql_drop(spark, path, "inCommitTimestamp", truncate=True)
    with pytest.raises(ValueError, match="truncateHistory needs to be a boolean"):
        DeltaTable.forPath(spark, path).dropFeatureSupport("inCommitTimestamp", "yes")  # type: ignore[arg-type]
    assert _latest(root) == 0


def test_upgrade_protocol_never_downgrades(spark: Any, tmp_path: Path) -> None:
    root, path = _table(spark, tmp_path)
    table = DeltaTable.forPath(spark, path)
    table.upgradeTableProtocol(2, 5)
    assert _commit(root, 1)["protocol"] == {"minReaderVersion": 2, "minWriterVersion": 5}
    table.upgradeTableProtocol(1, 3)
    table.upgradeTableProtocol(2, 5)
    assert _latest(root) == 1  # lower or equal versions: nothing committed
    table.upgradeTableProtocol(3, 7)
    upgraded = _commit(root, 2)["protocol"]
    assert (upgraded["minReaderVersion"], upgraded["minWriterVersion"]) == (3, 7)
    assert upgraded["readerFeatures"] == ["columnMapping"]
    table.upgradeTableProtocol(1, 2)
    assert _latest(root) == 2


def test_add_feature_errors_and_legacy_writer_four(spark: Any, tmp_path: Path) -> None:
    root, path = _table(spark, tmp_path)
    table = DeltaTable.forPath(spark, path)
    with pytest.raises(ex.UnsupportedFeaturesInConfigError, match="unknown table feature") as c:
        table.addFeatureSupport("noSuchFeature")
    assert c.value.getCondition() == "DELTA_UNSUPPORTED_FEATURES_IN_CONFIG"
    assert isinstance(c.value, ValueError)
    table.upgradeTableProtocol(1, 4)
    table.addFeatureSupport("deletionVectors")
    protocol = _commit(root, 2)["protocol"]
    assert protocol["readerFeatures"] == ["deletionVectors"]
    assert {"generatedColumns", "changeDataFeed", "deletionVectors"} <= set(
        protocol["writerFeatures"]
    )
    _api_drop(spark, path, "deletionVectors")
    final = _commit(root, _latest(root))["protocol"]
    assert final["minReaderVersion"] == 1 and "deletionVectors" not in final["writerFeatures"]
    assert "generatedColumns" in final["writerFeatures"]


def test_type_widening_preview_dropped_from_the_kernel_table(spark: Any, tmp_path: Path) -> None:
    """delta-spark's table with integers widened to decimals (tests/data/kernel/type-widening):
    the narrower file is rewritten, the preview feature dropped, the values unchanged."""
    import shutil

    from tests.data_paths import TESTDATA

    root = tmp_path / "t"
    shutil.copytree(TESTDATA / "kernel" / "type-widening", root)
    path = str(root)
    expected = _rows(spark, path)
    _sql_drop(spark, path, "`typeWidening-preview`")
    drop = _commit(root, _latest(root))
    assert "typeWidening-preview" not in json.dumps(drop["protocol"])
    assert "timestampNtz" in drop["protocol"]["readerFeatures"]
    assert "delta.typeChanges" not in json.dumps(
        DeltaTable.forPath(spark, path).toDF().schema.json()
    )
    files = DeltaTable.forPath(spark, path).toDF().inputFiles()
    assert len(files) == 2
    for f in files:
        assert str(pq.read_schema(f.removeprefix("file:")).field("byte_decimal").type) == (
            "decimal128(4, 1)"
        )
    assert _rows(spark, path) == expected
