"""Our typed errors are also the PySpark exceptions a delta-spark user catches, raised from
real operations; and a builder set up for delta-spark is refused by name."""

from __future__ import annotations

import pickle
import warnings
from pathlib import Path
from typing import Any

import pytest
from commit_hooks import before_commit
from pyspark.errors import (
    AnalysisException,
    IllegalArgumentException,
    ParseException,
    PySparkException,
    PySparkTypeError,
    UnsupportedOperationException,
)
from pyspark.sql import SparkSession

from delta_pyspark import configure_spark_with_delta
from delta_pyspark import exceptions as ex
from delta_pyspark.core.snapshot.delta_log import DeltaLog
from delta_pyspark.spark.jvm.errors import PYSPARK_BASES
from delta_pyspark.tables import DeltaTable

# every class of delta_pyspark.exceptions with the PySpark base it must have
EXPECTED = {
    ex.DeltaAnalysisException: AnalysisException,
    ex.DeltaParseException: ParseException,
    ex.DeltaTableNotFoundError: AnalysisException,
    ex.DeltaPathNotFoundError: AnalysisException,
    ex.VersionNotFoundError: AnalysisException,
    ex.DeltaSchemaChangedError: AnalysisException,
    ex.SchemaMismatchError: AnalysisException,
    ex.GeneratedColumnError: AnalysisException,
    ex.DeltaIllegalArgumentException: IllegalArgumentException,
    ex.UnsupportedStorageError: IllegalArgumentException,
    ex.DeltaTypeError: PySparkTypeError,
    ex.DeltaUnsupportedOperationException: UnsupportedOperationException,
    ex.MergeMultipleMatchesError: UnsupportedOperationException,
    ex.DeltaPlannerUnsupportedError: UnsupportedOperationException,
    ex.IcebergCompatViolationError: UnsupportedOperationException,
    ex.CorruptLogError: PySparkException,
    ex.ChecksumMismatchError: PySparkException,
    ex.UnsupportedTableFeatureError: PySparkException,
    ex.DeltaJvmExtensionError: PySparkException,
    ex.FileAlreadyExistsError: PySparkException,
    ex.StorageAccessError: PySparkException,
    ex.VacuumLiteUnavailableError: PySparkException,
    ex.InvariantViolationError: PySparkException,
    ex.DeltaConcurrentModificationException: PySparkException,
    ex.ConcurrentWriteException: PySparkException,
    ex.ConcurrentAppendException: PySparkException,
    ex.ConcurrentDeleteReadException: PySparkException,
    ex.ConcurrentDeleteDeleteException: PySparkException,
    ex.MetadataChangedException: PySparkException,
    ex.ProtocolChangedException: PySparkException,
    ex.ConcurrentTransactionException: PySparkException,
    ex.ChangeDataNotRecordedError: AnalysisException,
    ex.NoChangeDataStartError: AnalysisException,
    ex.InvalidChangeDataRangeError: IllegalArgumentException,
    ex.ChangeDataStartAfterLatestError: IllegalArgumentException,
    ex.UnsupportedFeaturesInConfigError: IllegalArgumentException,
    ex.CannotDropCheckConstraintFeatureError: AnalysisException,
    ex.DeltaTableFeatureException: PySparkException,
    ex.FeatureDropNotPresentError: PySparkException,
    ex.FeatureDropIsDeltaPropertyError: PySparkException,
    ex.FeatureDropNonRemovableError: PySparkException,
    ex.FeatureDropUnsupportedClientFeatureError: PySparkException,
    ex.FeatureDropDependentFeatureError: PySparkException,
    ex.FeatureDropHistoryTruncationNotAllowedError: PySparkException,
    ex.FeatureDropNeedsHistoryTruncationError: PySparkException,
    ex.FeatureDropWaitForRetentionPeriodError: PySparkException,
    ex.FeatureDropHistoricalVersionsExistError: PySparkException,
    ex.FeatureDropCheckpointProtectionWaitError: PySparkException,
    ex.FeatureDropConflictRevalidationError: PySparkException,
    ex.IdentityColumnExplicitInsertError: AnalysisException,
    ex.IdentityColumnUpdateError: AnalysisException,
    ex.IdentityColumnIllegalStepError: AnalysisException,
    ex.IdentityColumnPartitionError: AnalysisException,
    ex.IdentityColumnWithGenerationError: AnalysisException,
    ex.IdentityColumnDataTypeError: UnsupportedOperationException,
}


def test_every_error_class_is_mapped() -> None:
    ours = {
        v
        for v in vars(ex).values()
        if isinstance(v, type) and issubclass(v, ex.DeltaError) and v is not ex.DeltaError
    }
    assert ours == set(EXPECTED)
    assert all(issubclass(cls, base) for cls, base in PYSPARK_BASES.items())


def _make(cls: type[ex.DeltaError], message: str) -> ex.DeltaError:
    if cls is ex.UnsupportedTableFeatureError:
        return cls(message, ["futureFeature"])  # type: ignore[call-arg]
    return cls(message)


@pytest.mark.parametrize("cls", list(EXPECTED), ids=lambda c: c.__name__)
def test_error_is_its_pyspark_base_and_keeps_its_message(cls: type[ex.DeltaError]) -> None:
    message = "table /t: something went wrong"
    with pytest.raises(EXPECTED[cls]) as caught:
        raise _make(cls, message)
    err = caught.value
    assert type(err) is cls and isinstance(err, ex.DeltaError)
    assert str(err) == message
    assert repr(err).startswith(f"{cls.__name__}('{message}'")
    assert err.args[0] == message
    condition = cls.error_class
    assert err.getCondition() == condition
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # getErrorClass is deprecated in 4.0
        assert err.getErrorClass() == condition
    assert err.getMessage() == (f"[{condition}] {message}" if condition else message)
    assert err.getMessageParameters() == {}
    assert err.getQueryContext() == []
    again = pickle.loads(pickle.dumps(err))
    assert type(again) is cls and str(again) == message and again.getCondition() == condition
    if cls is ex.UnsupportedTableFeatureError:
        assert again.features == ["futureFeature"]  # type: ignore[attr-defined]


def test_a_message_opening_with_a_condition_carries_it() -> None:
    """Classes whose condition depends on the case open their message with it."""
    text = "[DELTA_UDF_IN_GENERATED_COLUMN] bad expression"
    err = ex.GeneratedColumnError(text)
    assert isinstance(err, AnalysisException) and str(err) == text
    assert err.getCondition() == "DELTA_UDF_IN_GENERATED_COLUMN" == err.condition
    assert err.getMessage() == text
    again = pickle.loads(pickle.dumps(err))
    assert (str(again), again.getCondition()) == (text, err.condition)
    nested = ex.DeltaAnalysisException("[UNRESOLVED_COLUMN.WITH_SUGGESTION] `x` is unknown")
    assert nested.getCondition() == "UNRESOLVED_COLUMN.WITH_SUGGESTION"
    assert ex.DeltaAnalysisException("[1, 2] is a list").getCondition() is None


def test_illegal_argument_is_still_a_value_error() -> None:
    assert issubclass(ex.DeltaIllegalArgumentException, ValueError)


def test_delta_spark_error_classes() -> None:
    assert ex.DeltaTableNotFoundError.error_class == "DELTA_MISSING_DELTA_TABLE"
    assert ex.ConcurrentAppendException.error_class == "DELTA_CONCURRENT_APPEND"
    assert ex.ChecksumMismatchError.error_class == "DELTA_TXN_LOG_FAILED_INTEGRITY"


# ------------------------------------------------------------ raised by real operations


def _table(spark: Any, path: str) -> None:
    spark.createDataFrame([(1, "a"), (2, "b")], "id long, name string").write.format("delta").save(
        path
    )


def test_schema_mismatch_on_append_is_an_analysis_exception(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    _table(spark, path)
    extra = spark.createDataFrame([(3, "c", 7)], "id long, name string, age int")
    with pytest.raises(AnalysisException, match="age") as caught:
        extra.write.format("delta").mode("append").save(path)
    assert type(caught.value) is ex.SchemaMismatchError
    assert caught.value.getCondition() == "_LEGACY_ERROR_TEMP_DELTA_0007"
    assert DeltaLog(path).snapshot().version == 0


def test_for_path_on_a_non_table_is_an_analysis_exception(spark: Any, tmp_path: Path) -> None:
    (tmp_path / "plain").mkdir()
    with pytest.raises(AnalysisException, match="is not a Delta table") as caught:
        DeltaTable.forPath(spark, str(tmp_path / "plain"))
    assert type(caught.value) is ex.DeltaTableNotFoundError
    assert caught.value.getMessage().startswith("[DELTA_MISSING_DELTA_TABLE] ")


def test_reading_a_missing_path_is_path_not_found(spark: Any, tmp_path: Path) -> None:
    """As delta-spark (and Spark for any source): nothing there is PATH_NOT_FOUND; a
    directory without a log is DELTA_MISSING_DELTA_TABLE."""
    with pytest.raises(AnalysisException, match="Path does not exist") as caught:
        spark.read.format("delta").load(str(tmp_path / "nothing")).collect()
    assert type(caught.value) is ex.DeltaPathNotFoundError
    assert caught.value.getCondition() == "PATH_NOT_FOUND"
    (tmp_path / "plain").mkdir()
    with pytest.raises(AnalysisException, match="is not a Delta table") as caught:
        spark.read.format("delta").load(str(tmp_path / "plain")).collect()
    assert caught.value.getCondition() == "DELTA_MISSING_DELTA_TABLE"


def test_time_travel_past_the_log_through_the_planner(spark: Any, tmp_path: Path) -> None:
    """Raised in a planner callback, across the JVM, and still an AnalysisException."""
    path = str(tmp_path / "t")
    _table(spark, path)
    with pytest.raises(AnalysisException) as caught:
        spark.read.format("delta").option("versionAsOf", 5).load(path).collect()
    assert type(caught.value) is ex.VersionNotFoundError


def test_save_without_path_is_an_illegal_argument(spark: Any) -> None:
    df = spark.createDataFrame([(1,)], "id long")
    with pytest.raises(IllegalArgumentException, match="needs a path") as caught:
        df.write.format("delta").save()
    assert isinstance(caught.value, ValueError)


def test_ambiguous_merge_is_an_unsupported_operation(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    _table(spark, path)
    source = spark.createDataFrame([(1, "x"), (1, "y")], "id long, name string")
    with pytest.raises(UnsupportedOperationException) as caught:
        (
            DeltaTable.forPath(spark, path)
            .alias("t")
            .merge(source.alias("s"), "t.id = s.id")
            .whenMatchedUpdateAll()
            .execute()
        )
    assert type(caught.value) is ex.MergeMultipleMatchesError
    assert caught.value.getCondition() == ("DELTA_MULTIPLE_SOURCE_ROW_MATCHING_TARGET_ROW_IN_MERGE")
    assert DeltaLog(path).snapshot().version == 0


def test_concurrent_append_is_a_pyspark_exception(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    spark.createDataFrame([(1, 0), (2, 0)], "id long, b long").write.format("delta").option(
        "delta.isolationLevel", "Serializable"
    ).save(path)
    insert = spark.createDataFrame([(5, 0)], "id long, b long")
    upsert = spark.createDataFrame([(5, 1)], "id long, b long")
    with (
        pytest.raises(PySparkException) as caught,
        before_commit(lambda: insert.write.format("delta").mode("append").save(path)),
    ):
        (
            DeltaTable.forPath(spark, path)
            .alias("t")
            .merge(upsert.alias("s"), "t.id = s.id")
            .whenNotMatchedInsertAll()
            .execute()
        )
    assert type(caught.value) is ex.ConcurrentAppendException
    assert caught.value.getCondition() == "DELTA_CONCURRENT_APPEND"
    assert DeltaLog(path).snapshot().version == 1  # the insert only


# ------------------------------------------------------------ delta-spark's session settings


EXTENSION = "io.delta.sql.DeltaSparkSessionExtension"
CATALOG = "org.apache.spark.sql.delta.catalog.DeltaCatalog"


@pytest.mark.parametrize(
    "confs",
    [
        {"spark.sql.extensions": EXTENSION},
        {"spark.sql.extensions": f"my.Ext, {EXTENSION}"},
        {"spark.sql.catalog.spark_catalog": CATALOG},
        {"spark.sql.extensions": EXTENSION, "spark.sql.catalog.spark_catalog": CATALOG},
    ],
)
def test_delta_spark_session_settings_are_names_for_ours(confs: dict[str, str]) -> None:
    """A builder ported from delta-spark keeps its settings; ours take their place."""
    builder = SparkSession.Builder()
    for key, value in confs.items():
        builder = builder.config(key, value)
    configure_spark_with_delta(builder)
    extensions = builder._options["spark.sql.extensions"].split(",")
    assert EXTENSION not in extensions and "deltapyspark.DeltaSparkExtensions" in extensions
    assert ("my.Ext" in extensions) == ("my.Ext" in confs.get("spark.sql.extensions", ""))
    assert "spark.sql.catalog.spark_catalog" not in builder._options


@pytest.mark.parametrize(
    "jars",
    [
        {"spark.jars.packages": "io.delta:delta-spark_2.13:4.0.1"},
        {"spark.jars": "/opt/jars/delta-spark_2.13-4.0.1.jar,/opt/jars/delta-storage-4.0.1.jar"},
    ],
)
def test_delta_spark_settings_with_its_jar_are_refused_by_name(jars: dict[str, str]) -> None:
    builder = SparkSession.Builder().config("spark.sql.extensions", EXTENSION)
    builder = builder.config("spark.sql.catalog.spark_catalog", CATALOG)
    for key, value in jars.items():
        builder = builder.config(key, value)
    with pytest.raises(IllegalArgumentException, match="both register Spark's delta source") as e:
        configure_spark_with_delta(builder)
    assert type(e.value) is ex.DeltaIllegalArgumentException
    assert f"spark.sql.extensions={EXTENSION}" in str(e.value)
    assert f"spark.sql.catalog.spark_catalog={CATALOG}" in str(e.value)
    assert builder._options["spark.sql.extensions"] == EXTENSION  # refused before any change


def test_other_extensions_are_kept() -> None:
    builder = SparkSession.Builder().config("spark.sql.extensions", "my.Extension")
    configure_spark_with_delta(builder)
    assert builder._options["spark.sql.extensions"].split(",")[0] == "my.Extension"


def test_delta_spark_public_names_are_importable_from_ours() -> None:
    """Code ported from delta-spark imports the same classes from ``delta_pyspark``
    (delta-spark's own Python package is in the test extra: its names are read, not copied)."""
    import delta.exceptions
    import delta.tables

    import delta_pyspark.tables

    for theirs, ours in ((delta.tables, delta_pyspark.tables), (delta.exceptions, ex)):
        names = {
            name
            for name, value in vars(theirs).items()
            if isinstance(value, type) and value.__module__.startswith("delta.")
        }
        assert len(names) >= 5, theirs
        assert names <= set(vars(ours)), sorted(names - set(vars(ours)))
