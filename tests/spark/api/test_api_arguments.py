"""``DeltaTable``'s argument checks are delta-spark's: the same exception kinds (TypeError /
ValueError, here also our typed errors) with messages naming the argument, raised before
anything is written."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import functions as F
from pyspark.sql.types import IntegerType, StructField

from data_paths import TESTDATA
from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.exceptions import (
    DeltaAnalysisException,
    DeltaIllegalArgumentException,
    DeltaTableNotFoundError,
    DeltaTypeError,
)
from delta_pyspark.tables import DeltaTable


@pytest.fixture
def table(spark: Any, tmp_path: Path) -> DeltaTable:
    path = str(tmp_path / "t")
    spark.createDataFrame([("a", 1), ("b", 2)], "key string, value long").write.format(
        "delta"
    ).save(path)
    return DeltaTable.forPath(spark, path)


def _unchanged(table: DeltaTable) -> None:
    assert DeltaLog(table._path).snapshot().version == 0
    assert sorted(tuple(r) for r in table.toDF().collect()) == [("a", 1), ("b", 2)]


def test_update_arguments(table: DeltaTable) -> None:
    with pytest.raises(ValueError, match="'set' cannot be None") as err:
        table.update({"value": "200"})  # a dict where the condition goes: no set given
    assert isinstance(err.value, DeltaIllegalArgumentException)
    with pytest.raises(ValueError, match="cannot be None"):
        table.update(condition="key = 'a'")
    with pytest.raises(TypeError, match="'set' must be a dict") as terr:
        table.update(set=1)  # type: ignore[arg-type]
    assert isinstance(terr.value, DeltaTypeError)
    with pytest.raises(TypeError, match="'condition' must be a Spark SQL Column or a string"):
        table.update(1, {})  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="Values of dict in 'set' must contain only"):
        table.update(set={"value": 1})  # type: ignore[dict-item]
    with pytest.raises(TypeError, match="Keys of dict in 'set' must contain only"):
        table.update(set={1: ""})  # type: ignore[dict-item]
    _unchanged(table)
    table.update(F.col("key") == "a", {"value": F.lit(7)})
    assert sorted(tuple(r) for r in table.toDF().collect()) == [("a", 7), ("b", 2)]


def test_delete_condition_type(table: DeltaTable) -> None:
    with pytest.raises(TypeError, match="must be a Spark SQL Column or a string"):
        table.delete(condition=1)  # type: ignore[arg-type]
    _unchanged(table)


def test_merge_arguments(spark: Any, table: DeltaTable) -> None:
    source = spark.createDataFrame([("a", 5)], "key string, value long")
    with pytest.raises(ValueError, match="'source' in merge cannot be None"):
        table.merge(None, "key = key")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="'source' in merge must be DataFrame"):
        table.merge(1, "key = key")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="'condition' in merge cannot be None"):
        table.merge(source, None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="must be a Spark SQL Column or a string"):
        table.merge(source, 1)  # type: ignore[arg-type]
    builder = table.alias("t").merge(source.alias("s"), "t.key = s.key")
    with pytest.raises(ValueError, match="'set' in whenMatchedUpdate cannot be None"):
        builder.whenMatchedUpdate(set=None)
    with pytest.raises(TypeError, match="must be a Spark SQL Column or a string"):
        builder.whenMatchedUpdate(1, {})  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="Values of dict in 'values' in whenNotMatchedInsert"):
        builder.whenNotMatchedInsert(values={"key": 1})  # type: ignore[dict-item]
    with pytest.raises(TypeError, match="Keys of dict in 'set' in whenNotMatchedBySourceUpdate"):
        builder.whenNotMatchedBySourceUpdate(set={1: "x"})  # type: ignore[dict-item]
    with pytest.raises(TypeError, match="must be a Spark SQL Column or a string"):
        builder.whenMatchedDelete(condition=1)
    with pytest.raises(TypeError, match="must be a Spark SQL Column or a string"):
        builder.whenNotMatchedInsertAll(condition=2)
    _unchanged(table)


def test_restore_arguments(table: DeltaTable) -> None:
    with pytest.raises(ValueError) as err:
        table.restoreToTimestamp(12342323232)  # type: ignore[arg-type]
    assert "timestamp needs to be a string but got '<class 'int'>'" in str(err.value)
    with pytest.raises(ValueError) as err:
        table.restoreToVersion("0")  # type: ignore[arg-type]
    assert "version needs to be an int but got '<class 'str'>'" in str(err.value)
    with pytest.raises(
        DeltaIllegalArgumentException,
        match=r"The provided timestamp \('yesterday'\) cannot be converted",
    ):
        table.restoreToTimestamp("yesterday")
    _unchanged(table)


def test_protocol_and_feature_arguments(table: DeltaTable) -> None:
    for bad in ("1", 1.0, [1], None):
        with pytest.raises(ValueError, match="The readerVersion needs to be an integer"):
            table.upgradeTableProtocol(bad, 3)  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="The writerVersion needs to be an integer"):
            table.upgradeTableProtocol(1, bad)  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="featureName needs to be a string"):
            table.addFeatureSupport(bad if bad != "1" else 1)  # type: ignore[arg-type]
    with pytest.raises(
        DeltaIllegalArgumentException,
        match=r"\[DELTA_UNSUPPORTED_FEATURES_IN_CONFIG\] unknown table feature 'abc'",
    ):
        table.addFeatureSupport("abc")
    _unchanged(table)


def test_clone_vacuum_history_arguments(table: DeltaTable, tmp_path: Path) -> None:
    target = str(tmp_path / "c")
    with pytest.raises(ValueError, match="target needs to be a string"):
        table.clone(1, True)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="isShallow needs to be a boolean"):
        table.clone(target, 1)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="replace needs to be a boolean"):
        table.clone(target, True, 1)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="properties needs to be a dict"):
        table.clone(target, True, False, 1)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="All property values including 1 needs to be a string"):
        table.clone(target, True, False, {"k": 1})  # type: ignore[dict-item]
    with pytest.raises(ValueError, match="version needs to be an int"):
        table.cloneAtVersion("0", target, True)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="timestamp needs to be a string"):
        table.cloneAtTimestamp(0, target, True)  # type: ignore[arg-type]
    assert not Path(target).exists()
    with pytest.raises(ValueError, match="retentionHours needs to be a number"):
        table.vacuum("168")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="limit needs to be an int"):
        table.history("1")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="aliasName needs to be a string"):
        table.alias(1)  # type: ignore[arg-type]
    assert [r.version for r in table.history(1).collect()] == [0]


def test_for_path_arguments(spark: Any, table: DeltaTable, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="path needs to be a string"):
        DeltaTable.forPath(spark, 1)  # type: ignore[arg-type]
    with pytest.raises(DeltaIllegalArgumentException, match=r"hadoopConf \(fs.s3a.key\) is not"):
        DeltaTable.forPath(spark, table._path, {"fs.s3a.key": "x"})
    assert DeltaTable.forPath(spark, table._path, {}).toDF().count() == 2
    with pytest.raises(DeltaTableNotFoundError):
        DeltaTable.forPath(spark, str(tmp_path / "none"), {})
    with pytest.raises(ValueError, match="identifier needs to be a string"):
        DeltaTable.isDeltaTable(spark, 1)  # type: ignore[arg-type]


def test_table_builder_arguments(spark: Any, tmp_path: Path) -> None:
    location = str(tmp_path / "new")
    builder = DeltaTable.create(spark).location(location)
    bad_calls = [
        (lambda: builder.tableName(1), "Identifier must be str. Found 1 with type <class 'int'>"),
        (lambda: builder.location(1), "Location must be str."),
        (lambda: builder.comment(1), "Table comment must be str."),
        (lambda: builder.addColumn(1, "int"), "Column name must be str."),
        (lambda: builder.addColumn("a", 1), "Column data type must be str or DataType."),
        (lambda: builder.addColumn("a", "int", nullable=1), "Column nullable must be bool."),
        (lambda: builder.addColumn("a", "int", comment=1), "Column comment must be str."),
        (lambda: builder.addColumns(1), "Schema must be StructType or a list of StructField."),
        (
            lambda: builder.addColumns([StructField("x", IntegerType()), 1]),
            "Column in existing schema must be StructField.",
        ),
        (lambda: builder.partitionedBy(1), "Partitioning column must be str."),
        (lambda: builder.partitionedBy("a", 1), "Partitioning column must be str."),
        (lambda: builder.partitionedBy([1]), "Partitioning column must be str."),
        (lambda: builder.property(1, "1"), "Key and value of property must be string."),
        (lambda: builder.property("1", 1), "Key and value of property must be string."),
    ]
    for call, message in bad_calls:
        with pytest.raises(TypeError) as err:
            call()
        assert str(err.value).startswith(message)
        assert isinstance(err.value, DeltaTypeError)
    assert not Path(location).exists()
    created = builder.addColumn("a", "int").partitionedBy(["a"]).property("k", "v").execute()
    assert created.detail().first().partitionColumns == ["a"]


def test_table_builder_existence_errors_name_their_condition(spark: Any, tmp_path: Path) -> None:
    """As delta-spark's: create() of an existing table, replace() of a missing one."""
    location = str(tmp_path / "t")
    with pytest.raises(DeltaAnalysisException, match="cannot be replaced") as err:
        DeltaTable.replace(spark).location(location).addColumn("a", "int").execute()
    assert err.value.getCondition() == "DELTA_CANNOT_REPLACE_MISSING_TABLE"
    with pytest.raises(DeltaAnalysisException, match="`builder_nothing` cannot be found") as err:
        DeltaTable.replace(spark).tableName("builder_nothing").addColumn("a", "int").execute()
    assert err.value.getCondition() == "TABLE_OR_VIEW_NOT_FOUND"
    assert not Path(location).exists()
    DeltaTable.create(spark).location(location).addColumn("a", "int").execute()
    with pytest.raises(DeltaAnalysisException, match="because it already exists") as err:
        DeltaTable.create(spark).location(location).addColumn("b", "int").execute()
    assert err.value.getCondition() == "TABLE_OR_VIEW_ALREADY_EXISTS"
    assert DeltaLog(location).snapshot().version == 0


def test_optimize_zorder_columns(table: DeltaTable) -> None:
    with pytest.raises(TypeError, match=r"Z-order column must be str\. Found 1 with type"):
        table.optimize().executeZOrderBy(1)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"Z-order column must be str\."):
        table.optimize().executeZOrderBy(["key", 2])  # type: ignore[list-item]
    _unchanged(table)


def test_generated_and_identity_columns_checked_then_refused(spark: Any, tmp_path: Path) -> None:
    class Identity:  # what delta-spark's IdentityGenerator carries
        def __init__(self, start: int = 1, step: int = 1) -> None:
            self.start, self.step = start, step

    builder = DeltaTable.create(spark).location(str(tmp_path / "g"))
    with pytest.raises(TypeError, match="Generated always as expression must be str"):
        builder.addColumn("a", "int", generatedAlwaysAs=1)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="Generated by default expression must be Identity"):
        builder.addColumn("a", "bigint", generatedByDefaultAs="")
    with pytest.raises(ValueError, match="cannot both be set"):
        builder.addColumn("a", "bigint", generatedAlwaysAs="", generatedByDefaultAs=Identity())
    with pytest.raises(ValueError, match="step to be non-zero"):
        builder.addColumn("a", "bigint", generatedAlwaysAs=Identity(step=0))  # type: ignore[arg-type]
    # an IdentityGenerator-like spec passes (identity columns: test_identity_columns.py)
    builder.addColumn("a", "bigint", generatedByDefaultAs=Identity())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="Clustering column must be str"):
        builder.clusterBy(["a", 1])
    assert not (tmp_path / "g").exists()


def test_protocol_request_below_the_table_is_a_no_op(table: DeltaTable) -> None:
    table.upgradeTableProtocol(1, 3)
    table.upgradeTableProtocol(1, 2)  # delta-spark: no downgrade, no error
    detail = table.detail().first()
    assert (detail.minReaderVersion, detail.minWriterVersion) == (1, 3)
    assert DeltaLog(table._path).snapshot().version == 1  # the second call committed nothing


def test_merge_assignments_may_name_target_columns_with_its_alias(
    spark: Any, table: DeltaTable
) -> None:
    source = spark.createDataFrame([("a", 10), ("e", 5)], "k string, v long").alias("s")
    (
        table.alias("t")
        .merge(source, "t.key = s.k")
        .whenMatchedUpdate(set={"t.value": "s.v"})
        .whenNotMatchedInsert(values={"T.key": "s.k", "t.value": "s.v + 1"})
        .execute()
    )
    assert sorted(tuple(r) for r in table.toDF().collect()) == [("a", 10), ("b", 2), ("e", 6)]


def test_detail_lists_clustering_columns(spark: Any, tmp_path: Path) -> None:
    """DESCRIBE DETAIL's ``clusteringColumns``: from a clustered table's ``delta.clustering``
    domain (written by delta-rs here), empty for others."""
    clustered = DeltaTable.forPath(
        spark, str(TESTDATA / "delta-rs" / "table-with-domain-metadata")
    ).detail()
    assert clustered.first().clusteringColumns == ["department"]
    path = str(tmp_path / "plain")
    spark.range(1).coalesce(1).write.format("delta").save(path)
    assert DeltaTable.forPath(spark, path).detail().first().clusteringColumns == []
    row = spark.sql(f"DESCRIBE DETAIL delta.`{path}`").first()
    assert row.clusteringColumns == [] and row.numFiles == 1


def test_adding_a_feature_the_protocol_implies_is_a_no_op(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    spark.range(1).write.format("delta").save(path)
    table = DeltaTable.forPath(spark, path)
    table.addFeatureSupport("appendOnly")  # writer version 2 implies it
    assert DeltaLog(path).snapshot().version == 0
    table.addFeatureSupport("deletionVectors")
    detail = table.detail().first()
    assert (detail.minReaderVersion, detail.minWriterVersion) == (3, 7)
    assert sorted(detail.tableFeatures) == ["appendOnly", "deletionVectors", "invariants"]
